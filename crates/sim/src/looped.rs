//! Looped programs in the simulator.
//!
//! A [`bir::LoopedProgram`] means its expansion ([`bir::LoopedProgram::expand`]), and the
//! functional simulator runs it that way: [`Simulator::new_looped`] expands it once and
//! simulates the unrolled program, so a looped program and its unrolled twin give the same
//! bytes, statistics, races and errors (with positions in the unrolled streams). The
//! expansion holds every instruction, which a simulation of the program's data needs time
//! for anyway.

use bir::{BirError, LoopedProgram};

use crate::simulator::Simulator;

impl Simulator {
    /// A simulator of the expansion of `lp`; fails when a loop moves a parameter out of its
    /// range or a step does not match its body.
    pub fn new_looped(lp: &LoopedProgram) -> Result<Simulator, BirError> {
        Ok(Simulator::new(&lp.expand()?))
    }
}

#[cfg(test)]
mod tests {
    use bir::{BirInst, Engine, HbmRole, HbmTensor, HwAp, Item, Loop, Op, Program, SemId, Wait};
    use penguin::{CastMode, DType, Dim, Memory, Target};

    use crate::Simulator;

    fn ap(memory: Memory, rows: u32, pstride: i64, offset: u64) -> HwAp {
        HwAp { partition_stride: pstride, ..HwAp::on_chip(memory, DType::Fp32, 0, rows, offset, vec![Dim::new(1, 4)]) }
    }

    #[test]
    fn a_looped_copy_runs_as_its_expansion() {
        // x [2, 16] -> SBUF -> y [2, 16] in 4 column tiles, each stream one loop.
        let mut p = Program::new("tiles", Target::Trn2);
        for (name, address, role) in [("x", 0, HbmRole::Input), ("y", 128, HbmRole::Output)] {
            p.hbm.push(HbmTensor { name: name.into(), shape: vec![2, 16], dtype: DType::Fp32, address, role });
        }
        p.hbm_size = 256;
        p.semaphores = vec!["in".into()];
        let load = BirInst {
            op: Op::DmaCopy { dst: ap(Memory::Sbuf, 2, 1, 0), src: ap(Memory::Hbm, 2, 16, 0), cast: CastMode::Rne },
            waits: Vec::new(),
            signal: Some(SemId(0)),
            origin: None,
        };
        let store = BirInst {
            op: Op::DmaCopy { dst: ap(Memory::Hbm, 2, 16, 128), src: ap(Memory::Sbuf, 2, 1, 0), cast: CastMode::Rne },
            waits: vec![Wait { sem: SemId(0), value: 1 }],
            signal: None,
            origin: None,
        };
        let mut lp = bir::LoopedProgram::from_program(&p);
        lp.streams[Engine::Dma(0).index()] =
            vec![Item::Loop(Loop { trips: 4, body: vec![Item::Inst(load)], step: vec![16, 0, 16, 0] })];
        lp.streams[Engine::Dma(1).index()] =
            vec![Item::Loop(Loop { trips: 4, body: vec![Item::Inst(store)], step: vec![16, 0, 16, 0, 1] })];
        let x: Vec<f32> = (0..32).map(|i| i as f32 * 1.5).collect();
        let mut looped = Simulator::new_looped(&lp).unwrap();
        looped.write_hbm_f32("x", &x).unwrap();
        let stats = looped.run().unwrap();
        assert_eq!(stats.instructions, 8);
        assert!(stats.races.is_empty());
        assert_eq!(looped.read_hbm_f32("y").unwrap(), x);
        // A loop whose last trip leaves the parameter range is refused.
        lp.streams[Engine::Dma(0).index()] =
            vec![Item::Loop(Loop { trips: 4, body: lp.streams[5].clone(), step: vec![-16, 0, 0, 0] })];
        assert!(Simulator::new_looped(&lp).is_err());
    }
}
