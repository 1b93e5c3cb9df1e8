//! Unit tests of `gemm.rs`.

use penguin::{EngineAccumulationType as Acc, FunctionView, InstData, TensorId};

use super::*;
use crate::{default_builder, plan, PlanRequest};

/// Plan `cfg` with its blocks as given.
fn plan_gemm(cfg: &GemmConfig) -> Result<GemmPlan, CodegenError> {
    plan(&PlanRequest::new(cfg), &default_builder).map(|p| p.plan)
}

#[test]
fn ragged_tiles_cover_the_range() {
    let t: Vec<_> = tiles(300, 128).collect();
    assert_eq!(t, vec![(0, 128), (128, 128), (256, 44)]);
    assert_eq!(tiles(1, 128).collect::<Vec<_>>(), vec![(0, 1)]);
}

#[test]
fn naive_plan_counts() {
    let plan = plan_gemm(&GemmConfig::new(300, 1000, 777, DType::Bf16, Target::Trn2)).unwrap();
    // 3 m tiles x 2 n tiles x 8 k tiles.
    assert_eq!(plan.stats.matmuls, 48);
    assert_eq!(plan.stats.psum_groups, 6);
    assert_eq!(plan.stats.max_live_psum_groups, 1);
    let f = &plan.function;
    let starts =
        f.layout().iter().filter_map(|&i| f.inst(i)?.accumulation()).filter(|(_, fl)| fl.contains(Acc::START)).count();
    assert_eq!(starts, 6);
    assert_eq!(f.outputs(), [TensorId(2)]);
}

#[test]
fn fp8e4m3fn_is_refused_before_trn3() {
    let mut cfg = GemmConfig::new(4, 4, 4, DType::Fp8e4m3fn, Target::Trn2);
    assert!(matches!(plan_gemm(&cfg), Err(CodegenError::BadGemm(m)) if m.contains("only supported on trn3")));
    cfg.target = Target::Trn3;
    assert!(plan_gemm(&cfg).is_ok());
}

#[test]
fn zero_sized_gemm_is_refused() {
    let cfg = GemmConfig::new(0, 4, 4, DType::Bf16, Target::Trn2);
    assert_eq!(plan_gemm(&cfg).unwrap_err().to_string(), "m = 0 is out of range (1..=1048576)");
}

#[test]
fn double_row_halves_the_matmuls_and_is_refused_on_trn1() {
    let mut cfg = GemmConfig::new(128, 1000, 512, DType::Fp8e4m3, Target::Trn2);
    cfg.perf_mode = PerfMode::DoubleRow;
    let plan = plan_gemm(&cfg).unwrap();
    assert_eq!(plan.stats.matmuls, 4);
    let (chunks, total) = k_chunks(&cfg);
    assert_eq!(total, 1000);
    assert_eq!(chunks.last(), Some(&KChunk { k0: 768, len: 232, parts: 116, real: 232 }));
    cfg.k = 7;
    assert_eq!(k_chunks(&cfg), (vec![KChunk { k0: 0, len: 8, parts: 4, real: 7 }], 8));
    plan_gemm(&cfg).unwrap();
    cfg.target = Target::Trn1;
    assert_eq!(plan_gemm(&cfg).unwrap_err().to_string(), "perf_mode=`double_row` is not supported on trn1");
    cfg.target = Target::Trn2;
    cfg.perf_mode = PerfMode::DoubleRowGen3;
    assert_eq!(plan_gemm(&cfg).unwrap_err().to_string(), "perf_mode=`double_row_gen3` is not supported on trn2");
    cfg.perf_mode = PerfMode::DoubleRow;
    cfg.lhs_dtype = DType::Bf16;
    assert_eq!(plan_gemm(&cfg).unwrap_err().to_string(), crate::combine::DOUBLE_ROW_FP8_ONLY);
}

#[test]
fn double_row_positions_pair_k_and_k_plus_p() {
    assert_eq!(double_row_position(0, 256), (0, 0));
    assert_eq!(double_row_position(128, 256), (0, 1));
    assert_eq!(double_row_position(255, 256), (127, 1));
    assert_eq!(double_row_position(5, 8), (1, 1));
}

#[test]
fn sparse_compression_layout_and_errors() {
    let p = SparsityPattern { n: 2, m: 4 };
    let a = [0.0, 3.0, 0.0, 5.0, 7.0, 0.0, 0.0, 0.0, 1.0, 2.0];
    let s = SparseA::compress(&a, 1, 10, p).unwrap();
    // 2:4 runs as 4:8: four kept values per group of 8 columns, padded with zeros at the
    // first unused positions (column 0 of the first group, 2 and 3 of the second).
    assert_eq!(SparseA::cols(10, p), 8);
    assert_eq!(s.values, vec![0.0, 3.0, 5.0, 7.0, 1.0, 2.0, 0.0, 0.0]);
    assert_eq!(s.tags, vec![0, 1, 3, 4, 0, 1, 2, 3]);
    assert_eq!(s.decompress(), a.to_vec());
    assert_eq!(SparseA::tags_shape(1, 10, p), [8, 1]);
    assert_eq!(s.packed_tags(), vec![0, 1, 3, 4, 0, 1, 2, 3]);
    let bad = [1.0, 1.0, 1.0, 0.0];
    assert_eq!(
        SparseA::compress(&bad, 1, 4, p).unwrap_err().to_string(),
        "A does not satisfy 2:4 sparsity: row 0, K group 0 (columns 0..4) has 3 non-zeros"
    );
}

#[test]
fn sparse_tags_pack_four_rows_of_a_per_word() {
    // 4:16 (CR 4): row i of A keeps column i + 12 of its group of 16 (and pads with 0, 1, 2).
    let p = SparsityPattern { n: 4, m: 16 };
    let mut a = vec![0.0f32; 5 * 16];
    for i in 0..5 {
        a[i * 16 + 11 + i] = 1.0 + i as f32;
    }
    let s = SparseA::compress(&a, 5, 16, p).unwrap();
    assert_eq!(SparseA::tags_shape(5, 16, p), [4, 2]);
    assert_eq!(&s.tags[..4], &[0, 1, 2, 11]);
    assert_eq!(&s.tags[16..20], &[0, 1, 2, 15]);
    // Word [c, w] holds rows 4w .. 4w + 4 at compressed column c, row 4w in the low nibble.
    let packed = s.packed_tags();
    assert_eq!(packed, vec![0x0000, 0, 0x1111, 1, 0x2222, 2, 0xedcb, 15]);
    assert_eq!(s.decompress(), a);
}

#[test]
fn sparse_chunks_cover_128_cr_dense_rows() {
    for (pattern, cr) in [("1:2", 2), ("2:4", 2), ("4:8", 2), ("4:12", 3), ("4:16", 4)] {
        let mut cfg = GemmConfig::new(128, 4096, 512, DType::Bf16, Target::Trn2);
        cfg.sparsity = Some(pattern.parse().unwrap());
        let (chunks, total) = k_chunks(&cfg);
        let group = 4 * cr;
        assert_eq!(total, 4096u64.div_ceil(group) * group, "{pattern}");
        assert_eq!(chunks[0].len, 128 * cr as u32, "{pattern}");
        assert!(chunks.iter().all(|c| c.parts * cr as u32 == c.len && c.parts % 4 == 0), "{pattern}");
        assert_eq!(chunks.len() as u64, 4096u64.div_ceil(128 * cr), "{pattern}");
    }
}

#[test]
fn sparsity_is_refused_on_trn1_and_with_pe_transposes() {
    let mut cfg = GemmConfig::new(128, 256, 512, DType::Bf16, Target::Trn1);
    cfg.sparsity = Some(SparsityPattern { n: 2, m: 4 });
    let err = cfg.validate().unwrap_err().to_string();
    assert!(err.contains("needs the PE's sparse matmul") && err.contains("trn1 has none"), "{err}");
    cfg.target = Target::Trn2;
    cfg.pe_transpose = Some(true);
    let err = cfg.validate().unwrap_err().to_string();
    assert!(err.contains("`--transpose pe`") && err.contains("structured sparsity 2:4"), "{err}");
    cfg.pe_transpose = Some(false);
    assert!(cfg.validate().is_ok());
}

#[test]
fn small_k_uses_pe_row_tiling() {
    let plan = plan_gemm(&GemmConfig::new(256, 20, 1024, DType::Bf16, Target::Trn2)).unwrap();
    let f = &plan.function;
    let positions: Vec<(u32, u32)> = f
        .layout()
        .iter()
        .filter_map(|&i| {
            if let Some(InstData::MatMult(m)) = f.inst(i) {
                Some((m.tile_position.row, m.tile_size.rows))
            } else {
                None
            }
        })
        .collect();
    assert_eq!(positions, vec![(0, 32), (32, 32), (64, 32), (96, 32)]);
    let mut cfg = GemmConfig::new(256, 20, 1024, DType::Bf16, Target::Trn1);
    cfg.lhs_transposed = true;
    let plan = plan_gemm(&cfg).unwrap();
    let f = &plan.function;
    assert!(f.layout().iter().any(|&i| matches!(f.inst(i), Some(InstData::MatMult(m)) if m.tile_position.row == 64)));
}
