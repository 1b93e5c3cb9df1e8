//! Unit tests of `neuron.rs`.

use penguin::{DataTile, Dim, GeneratedBuilder, MemrefTile};

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
