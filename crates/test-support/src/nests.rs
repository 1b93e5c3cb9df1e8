//! Penguin loop nests over two SBUF tiles, for the tests of bir's native looped lowering and
//! of the cycle model on what it lowers to.

use penguin::looped::{Item, Loop, PirInst};
use penguin::{
    whole_tile, ComputeEngine, DType, Dep, DepKind, Function, InstData, InstId, LoopedFunction, Memory, MemsetData,
    TensorCopyData, TensorData,
};

/// A function with two `[128, 64]` fp32 SBUF tiles `s` and `s2`, and the two instructions
/// the nests repeat: a DVE memset of `s` and an ACT copy of `s` into `s2`.
pub fn memset_copy() -> (Function, InstData, InstData) {
    let mut f = Function::new("nest");
    let t = |name: &str| TensorData {
        name: name.into(),
        shape: vec![128, 64],
        dtype: DType::Fp32,
        memory: Memory::Sbuf,
        address: None,
    };
    let s = f.add_tensor(t("s")).unwrap();
    let s2 = f.add_tensor(t("s2")).unwrap();
    let (ts, ts2) = (whole_tile(s, &t("s")), whole_tile(s2, &t("s2")));
    let memset = InstData::Memset(MemsetData { engine: ComputeEngine::Dve, dst: ts.clone(), value: 1.0 });
    let copy = InstData::TensorCopy(TensorCopyData { engine: ComputeEngine::Act, dst: ts2, src: ts });
    (f, memset, copy)
}

/// An edge of `kind` from the instruction at (unrolled) place `from`.
pub fn dep(from: u32, kind: DepKind) -> Dep {
    Dep { from: InstId(from), kind }
}

/// `memset(dve); copy(act) after(raw)`, then `a x b` iterations of
/// `memset after(war on the previous copy); copy after(raw on it, waw on the previous copy)`.
pub fn ping_pong(a: u32, b: u32) -> LoopedFunction {
    let (f, memset, copy) = memset_copy();
    let mut lf = LoopedFunction::from_function(&f);
    let body = vec![
        Item::Inst(PirInst { data: memset.clone(), deps: vec![dep(1, DepKind::War)], loc: None }),
        Item::Inst(PirInst { data: copy.clone(), deps: vec![dep(2, DepKind::Raw), dep(1, DepKind::Waw)], loc: None }),
    ];
    let inner = Item::Loop(Loop { trips: b, body, step: vec![0, 0, 2, 0, 0, 0, 0, 2, 2] });
    let bb = 2 * i64::from(b);
    lf.body = vec![
        Item::Inst(PirInst { data: memset, deps: vec![], loc: None }),
        Item::Inst(PirInst { data: copy, deps: vec![dep(0, DepKind::Raw)], loc: None }),
        Item::Loop(Loop { trips: a, body: vec![inner], step: vec![0, 0, bb, 0, 0, 0, 0, bb, bb] }),
    ];
    lf
}
