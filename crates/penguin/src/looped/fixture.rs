//! Shared test fixtures of the looped modules: a synthetic instruction for the generic
//! machinery ([`T`]), and memsets into one SBUF tensor for Penguin's looped functions.

use super::roll::Rolled;
use super::{Item, Loop, PirInst, Stepped};
use crate::TensorData;
use crate::{whole_tile, ComputeEngine, DType, Dep, DepKind, Dim, Function, InstData, InstId, Memory, MemsetData};

/// A synthetic instruction: a name and its parameters, which stay at 0 or above (advancing
/// one below 0 fails). Its shape is its name and parameter count.
#[derive(Clone, Debug, PartialEq)]
pub struct T(pub &'static str, pub Vec<i64>);

impl Stepped for T {
    fn param_count(&self) -> usize {
        self.1.len()
    }

    fn push_params(&self, out: &mut Vec<i64>) {
        out.extend_from_slice(&self.1);
    }

    fn advance(&self, delta: &[i64]) -> Option<Self> {
        let params = self.1.iter().zip(delta).map(|(v, d)| v.checked_add(*d).filter(|v| *v >= 0));
        Some(T(self.0, params.collect::<Option<_>>()?))
    }
}

impl Rolled for T {
    type Shape = (&'static str, usize);

    fn shape(&self) -> Option<Self::Shape> {
        Some((self.0, self.1.len()))
    }
}

/// A [`T`] item.
pub fn t(name: &'static str, params: &[i64]) -> Item<T> {
    Item::Inst(T(name, params.to_vec()))
}

/// A loop item.
pub fn looped<I>(trips: u32, body: Vec<Item<I>>, step: Vec<i64>) -> Item<I> {
    Item::Loop(Loop { trips, body, step })
}

/// Elements per partition of the fixture's tensor.
pub const COLS: u32 = 4096;

/// The fixture's tensor `x: [128, COLS]` fp32 in SBUF.
fn tensor() -> TensorData {
    TensorData {
        name: "x".into(),
        shape: vec![128, u64::from(COLS)],
        dtype: DType::Fp32,
        memory: Memory::Sbuf,
        address: Some(0),
    }
}

/// A function with the fixture's tensor and no instructions.
pub fn header() -> Function {
    let mut f = Function::new("fill");
    let _ = f.add_tensor(tensor());
    f
}

/// A memset of `value` into 64 elements at `offset` of every partition of `x`.
pub fn memset(offset: i64, value: f64) -> InstData {
    let mut dst = whole_tile(crate::TensorId(0), &tensor());
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
