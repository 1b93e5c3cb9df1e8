//! Unit tests of `neuron.rs`.

use penguin::{DType, DataTile, Dim, GeneratedBuilder, MemrefTile};

use super::*;

fn cg() -> NeuronCodegen<GeneratedBuilder> {
    NeuronCodegen::new(GeneratedBuilder::new("k"), Target::Trn2, "k")
}

#[test]
fn sbuf_capacity_error_names_bytes_needed_and_available() {
    let mut c = cg();
    let half = NDTile { partitions: 128, free: vec![30_000], dtype: DType::Fp32 };
    c.alloc_sbuf("a", &half).unwrap();
    let err = c.alloc_sbuf("b", &half).unwrap_err();
    assert_eq!(
        err,
        CodegenError::SbufCapacity {
            tensor: "b".into(),
            needed: 120_000,
            available: 229_376,
            used: 120_000,
            target: Target::Trn2
        }
    );
    assert_eq!(
        err.to_string(),
        "SBUF capacity exceeded allocating `b`: it needs 120000 bytes per partition, 120000 are already in use, and trn2 has 229376"
    );
    let huge = NDTile { partitions: 128, free: vec![60_000], dtype: DType::Fp32 };
    assert!(matches!(
        c.alloc_sbuf("h", &huge),
        Err(CodegenError::SbufCapacity { ref tensor, needed: 240_000, used: 120_000, .. }) if tensor == "h"
    ));
}

#[test]
fn geometry_checks_partitions_and_psum_bank() {
    let c = cg();
    let t = NDTile { partitions: 128, free: vec![512], dtype: DType::Fp32 };
    let (sb, ps) = c.get_sb_and_psum_shape(&t, ShapeOptions { psum: true }).unwrap();
    assert_eq!(sb, vec![128, 512]);
    assert_eq!(ps, Some(vec![128, 512]));
    let wide = NDTile { free: vec![513], ..t };
    assert_eq!(
        c.get_sb_and_psum_shape(&wide, ShapeOptions { psum: true }),
        Err(CodegenError::PsumBankOverflow { bytes: 2052, psum_par_size_in_bytes: 2048 })
    );
    let tall = NDTile { partitions: 129, ..t };
    assert!(matches!(
        c.get_sb_and_psum_shape(&tall, ShapeOptions::default()),
        Err(CodegenError::TooManyPartitions { .. })
    ));
}

#[test]
fn combine_tiles_canonicalizes_and_checks_shapes() {
    let mut c = cg();
    let a = c.add_input("a", vec![64, 64], DType::Fp32).unwrap();
    let s = c.alloc_sbuf("s", &NDTile { partitions: 64, free: vec![64], dtype: DType::Bf16 }).unwrap();
    let view = Tile::Data(DataTile {
        tensor: s,
        ap: AccessPattern {
            start_partition: 0,
            partitions: Dim::new(1, 64),
            offset: 0,
            free: vec![Dim::new(8, 8), Dim::new(1, 8)].into(),
        },
    });
    let hbm = Tile::Memref(MemrefTile { tensor: a, offset: 0, rows: Dim::new(64, 64), cols: Dim::new(1, 64) });
    let out = c.combine_tiles(&[view, hbm.clone()]).unwrap();
    assert_eq!(out[0].canonical_free_indices(), vec![Dim::new(1, 64)]);
    assert_eq!(out[1].memory, Memory::Hbm);
    let narrow = Tile::Memref(MemrefTile { tensor: a, offset: 0, rows: Dim::new(64, 32), cols: Dim::new(1, 64) });
    assert_eq!(
        c.combine_tiles(&[hbm, narrow]).unwrap_err().to_string(),
        "incompatible operand shapes: [64, 64] vs [32, 64]"
    );
    let not_data = Tile::Data(DataTile { tensor: a, ap: AccessPattern::on_chip(0, 1, 0, 1) });
    assert_eq!(c.combine_tiles(&[not_data]).unwrap_err().to_string(), "value must be a DataTile");
}

#[test]
fn a_broadcast_operand_becomes_a_memset_broadcast_tile() {
    let mut c = cg();
    let x = c.alloc_sbuf("x", &NDTile { partitions: 64, free: vec![32], dtype: DType::Fp32 }).unwrap();
    let shape = NDTile { partitions: 64, free: vec![32], dtype: DType::Fp32 };
    let tiles = c
        .combine_tiles(&[
            Tile::Data(DataTile { tensor: x, ap: AccessPattern::on_chip(0, 64, 0, 32) }),
            Tile::Broadcast { value: 2.5, shape },
        ])
        .unwrap();
    assert_eq!(tiles[1].ap.free, vec![Dim::new(0, 32)]);
    let f = c.function();
    assert!(
        matches!(f.layout().first().and_then(|&i| f.inst(i)), Some(InstData::Memset(m)) if m.value == 2.5 && m.dst.tensor == tiles[1].tensor)
    );
    // The broadcast view takes part in the shape check like any operand.
    let narrow = NDTile { partitions: 64, free: vec![16], dtype: DType::Fp32 };
    let err =
        c.combine_tiles(&[Tile::Inst(tiles[0].clone()), Tile::Broadcast { value: 1.0, shape: narrow }]).unwrap_err();
    assert_eq!(err.to_string(), "incompatible operand shapes: [64, 32] vs [64, 16]");
}

#[test]
fn pe_tiles_are_legal_per_target() {
    use penguin::{TilePosition as P, TileSize as S};
    let c = cg();
    assert!(c.check_pe_tile(P { row: 96, col: 0 }, S { rows: 32, cols: 128 }).is_ok());
    assert!(c.check_pe_tile(P { row: 64, col: 64 }, S { rows: 64, cols: 64 }).is_ok());
    assert!(c.check_pe_tile(P { row: 32, col: 0 }, S { rows: 64, cols: 128 }).is_err());
    let trn1 = NeuronCodegen::new(GeneratedBuilder::new("k"), Target::Trn1, "k");
    let err = trn1.check_pe_tile(P { row: 0, col: 0 }, S { rows: 32, cols: 128 }).unwrap_err();
    assert_eq!(
        err.to_string(),
        "PE tile row position 0 with size 32 is not legal on trn1 (sizes 128, 64; positions multiples of the size)"
    );
}

#[test]
fn finalize_kernel_checks_the_name() {
    let mut c = cg();
    c.set_kernel_name("other");
    assert!(matches!(c.finalize_kernel(), Err(CodegenError::KernelNameMismatch { .. })));
    c.set_kernel_name("9bad");
    assert_eq!(c.finalize_kernel().unwrap_err().to_string(), "Unsupported kernel name 9bad");
    c.set_kernel_name("k");
    let f = c.finalize_kernel().unwrap();
    assert_eq!(f.debug_kernel_function_name.as_deref(), Some("k.trn2"));
}

fn sbuf_at(name: &str, dtype: DType, free: u64, address: u64) -> TensorData {
    TensorData { name: name.into(), shape: vec![128, free], dtype, memory: Memory::Sbuf, address: Some(address) }
}

#[test]
fn tensors_placed_over_each_others_bytes_get_edges_by_storage() {
    let mut c = cg();
    // `a` (fp32, bytes 0..1024) and `b` (bf16, bytes 512..1536) share 512 bytes; `c` does not.
    let a = c.add_tensor_at(sbuf_at("a", DType::Fp32, 256, 0)).unwrap();
    let b = c.add_tensor_at(sbuf_at("b", DType::Bf16, 512, 512)).unwrap();
    let d = c.add_tensor_at(sbuf_at("c", DType::Bf16, 512, 4096)).unwrap();
    let tile = |t: TensorId, dtype: DType, offset: i64, n: u32| InstTile {
        tensor: t,
        memory: Memory::Sbuf,
        dtype,
        ap: AccessPattern::on_chip(0, 128, offset, n),
    };
    let copy = |dst: InstTile, src: InstTile| {
        InstData::TensorCopy(penguin::TensorCopyData { engine: penguin::ComputeEngine::Dve, dst, src })
    };
    // i0 writes a[128..256] (bytes 512..1024), i1 copies it into c; i2 writes b[0..256]
    // (bytes 512..1024): WAW with i0 and WAR with i1 although the tensors differ. i3 writes
    // b[256..512] (bytes 1024..1536), which a does not reach: no edge.
    let i0 = c.process_new_neuroninst(copy(tile(a, DType::Fp32, 128, 128), tile(d, DType::Bf16, 0, 128))).unwrap();
    let i1 = c.process_new_neuroninst(copy(tile(d, DType::Bf16, 256, 128), tile(a, DType::Fp32, 128, 128))).unwrap();
    let i2 = c.process_new_neuroninst(copy(tile(b, DType::Bf16, 0, 256), tile(d, DType::Bf16, 0, 256))).unwrap();
    let i3 = c.process_new_neuroninst(copy(tile(b, DType::Bf16, 256, 256), tile(d, DType::Bf16, 0, 256))).unwrap();
    let f = c.function();
    let from = |i: InstId| f.deps[i.index()].iter().map(|d| (d.from, d.kind)).collect::<Vec<_>>();
    use penguin::DepKind::{Raw, War, Waw};
    assert_eq!(from(i1), vec![(i0, Raw)]);
    let mut got = from(i2);
    got.sort_by_key(|e| e.0);
    assert_eq!(got, vec![(i0, Waw), (i1, War)]);
    // c (not aliased) is only read here: i3's edges are none.
    assert_eq!(from(i3), vec![]);
    assert_eq!(c.stats().sbuf_peak_bytes_per_partition, 4096 + 1024);
}

#[test]
fn tensors_at_addresses_must_fit_and_carry_the_current_source_location() {
    let mut c = cg();
    let err = c.add_tensor_at(sbuf_at("big", DType::Fp32, 1024, 229_376 - 1024)).unwrap_err();
    assert!(matches!(err, CodegenError::SbufCapacity { needed: 4096, available: 229_376, .. }), "{err}");
    let psum = TensorData {
        name: "p".into(),
        shape: vec![128, 512],
        dtype: DType::Fp32,
        memory: Memory::Psum,
        address: Some(7 * 2048),
    };
    let p = c.add_tensor_at(psum.clone()).unwrap();
    let over = TensorData { name: "q".into(), address: Some(7 * 2048 + 4), ..psum };
    assert!(matches!(c.add_tensor_at(over), Err(CodegenError::PsumBankOverflow { .. })));
    let dst =
        InstTile { tensor: p, memory: Memory::Psum, dtype: DType::Fp32, ap: AccessPattern::on_chip(0, 128, 0, 512) };
    c.set_srcloc(Some("k.py:9".into()));
    let id = c
        .process_new_neuroninst(InstData::Memset(penguin::MemsetData {
            engine: penguin::ComputeEngine::Dve,
            dst,
            value: 0.0,
        }))
        .unwrap();
    assert_eq!(c.function().srclocs.get(id), Some("k.py:9"));
}
