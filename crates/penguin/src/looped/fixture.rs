//! Shared test fixtures of the looped modules: memsets into one SBUF tensor.

use super::{Item, Loop, PirInst};
use crate::TensorData;
use crate::{whole_tile, ComputeEngine, DType, Dep, DepKind, Dim, Function, InstData, InstId, Memory, MemsetData};

/// Elements per partition of the fixture's tensor.
pub const COLS: u32 = 4096;

/// A function with one SBUF tensor `x: [128, COLS]` fp32 and no instructions.
pub fn header() -> Function {
    let mut f = Function::new("fill");
    let t = TensorData {
        name: "x".into(),
        shape: vec![128, u64::from(COLS)],
        dtype: DType::Fp32,
        memory: Memory::Sbuf,
        address: Some(0),
    };
    let _ = f.add_tensor(t);
    f
}

/// A memset of `value` into 64 elements at `offset` of every partition of `x`.
pub fn memset(offset: i64, value: f64) -> InstData {
    let t = TensorData {
        name: "x".into(),
        shape: vec![128, u64::from(COLS)],
        dtype: DType::Fp32,
        memory: Memory::Sbuf,
        address: Some(0),
    };
    let mut dst = whole_tile(crate::TensorId(0), &t);
    dst.ap.offset = offset;
    dst.ap.free = vec![Dim::new(1, 64)].into();
    InstData::Memset(MemsetData { engine: ComputeEngine::Pool, dst, value })
}

/// WAW edges from each of `from`.
pub fn waw(from: &[u32]) -> Vec<Dep> {
    from.iter().map(|&f| Dep { from: InstId(f), kind: DepKind::Waw }).collect()
}

/// `header()` with these instructions, in order.
pub fn function(insts: Vec<(InstData, Vec<Dep>)>) -> Function {
    let mut f = header();
    for (data, deps) in insts {
        f.push_inst(data, deps);
    }
    f
}

/// An instruction item.
pub fn inst(data: InstData, deps: Vec<Dep>) -> Item<PirInst> {
    Item::Inst(PirInst { data, deps, loc: None })
}

/// A loop item.
pub fn looped(trips: u32, body: Vec<Item<PirInst>>, step: Vec<i64>) -> Item<PirInst> {
    Item::Loop(Loop { trips, body, step })
}
