//! A small roller for tests: a program's streams rolled greedily into loops, so that the
//! looped cycle model can be checked on real programs (bir's own roll pass is the one the
//! pipeline uses).

use bir::looped::{advance_inst, push_inst_params};
use bir::{BirInst, Item, Loop, LoopedProgram, Program};

/// Roll each stream greedily: at each position, the block of at most `max_period`
/// instructions that repeats most often (at least 3 times) with a constant parameter step.
pub fn roll(p: &Program, max_period: usize) -> LoopedProgram {
    // Origins name the source of each instruction: not a parameter, so drop them.
    let mut p = p.clone();
    for i in p.streams.iter_mut().flatten() {
        i.origin = None;
    }
    let p = &p;
    let mut lp = LoopedProgram::from_program(p);
    for (e, insts) in p.streams.iter().enumerate() {
        let params: Vec<Vec<i64>> = insts
            .iter()
            .map(|i| {
                let mut v = Vec::new();
                push_inst_params(i, &mut v);
                v
            })
            .collect();
        let shapes: Vec<BirInst> = insts
            .iter()
            .zip(&params)
            .map(|(i, v)| advance_inst(i, &v.iter().map(|x| -x).collect::<Vec<_>>()).unwrap())
            .collect();
        let block_params = |at: usize, len: usize| -> Vec<i64> { params[at..at + len].concat() };
        let mut out = Vec::new();
        let mut i = 0;
        while i < insts.len() {
            let mut best: Option<(usize, usize, Vec<i64>)> = None;
            for per in 1..=max_period {
                if i + 2 * per > insts.len() {
                    break;
                }
                let same = |j: usize| shapes[i..i + per] == shapes[i + j * per..i + (j + 1) * per];
                if !same(1) {
                    continue;
                }
                let p0 = block_params(i, per);
                let step: Vec<i64> = block_params(i + per, per).iter().zip(&p0).map(|(b, a)| b - a).collect();
                let mut trips = 2;
                while i + (trips + 1) * per <= insts.len() && same(trips) {
                    let prev = block_params(i + (trips - 1) * per, per);
                    let next = block_params(i + trips * per, per);
                    if next.iter().zip(&prev).zip(&step).any(|((n, p), s)| n - p != *s) {
                        break;
                    }
                    trips += 1;
                }
                if trips >= 3 && best.as_ref().is_none_or(|(bp, bt, _)| per * trips > bp * bt) {
                    best = Some((per, trips, step));
                }
            }
            match best {
                Some((per, trips, step)) => {
                    let body = insts[i..i + per].iter().cloned().map(Item::Inst).collect();
                    out.push(Item::Loop(Loop { trips: trips as u32, body, step }));
                    i += per * trips;
                }
                None => {
                    out.push(Item::Inst(insts[i].clone()));
                    i += 1;
                }
            }
        }
        lp.streams[e] = out;
    }
    assert_eq!(&lp.expand().unwrap(), p);
    lp
}
