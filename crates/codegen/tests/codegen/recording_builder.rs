//! A second `IrBuilder`, used only here, keeps the builder seam honest: the GEMM planner runs
//! over a builder that records every call (tensors, instructions with their kind, operands and
//! dependency edges, inputs, outputs, names, finalize) and plans exactly what it plans over
//! the default `GeneratedBuilder`.

use std::sync::{Arc, Mutex};

use codegen::{
    default_builder, plan, AutoCost, AutoLimits, AutoSearch, BlockSizes, CodegenError, GemmConfig, GemmPlan,
    PlanRequest, Planning, Schedule,
};
use penguin::{
    DType, Dep, Function, FunctionView, GeneratedBuilder, InstData, InstId, IrBuilder, Memory, PenguinError, Target,
    TensorData, TensorId, VerifierErrors,
};

/// One call the planner made on its base builder.
#[derive(Clone, Debug, PartialEq)]
enum Call {
    /// A kernel opened (the factory's argument).
    Open(String),
    AddTensor(String),
    Insert {
        id: InstId,
        opcode: &'static str,
        inst: Box<InstData>,
        deps: Vec<Dep>,
    },
    SetInputs(Vec<TensorId>),
    SetOutputs(Vec<TensorId>),
    SetKernelName(String),
    SetDebugName(String),
    Finalize,
}

/// The calls of every builder a factory opened (the auto search opens them on several
/// threads).
#[derive(Default)]
struct Log(Arc<Mutex<Vec<Call>>>);

impl Log {
    fn push(&self, call: Call) {
        self.0.lock().unwrap().push(call);
    }

    fn take(&self) -> Vec<Call> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// Plan `request` over the default builder.
fn plan_default(request: &PlanRequest<'_>) -> GemmPlan {
    plan(request, &default_builder).unwrap().plan
}

/// Wraps the default builder and appends each call to a log shared with the test (the
/// builder itself is consumed by `finalize`).
struct RecordingBuilder {
    inner: GeneratedBuilder,
    log: Log,
}

impl RecordingBuilder {
    fn opener(log: &Log) -> impl Fn(&str) -> RecordingBuilder + Sync + '_ {
        move |name| {
            log.push(Call::Open(name.to_string()));
            RecordingBuilder { inner: GeneratedBuilder::new(name), log: Log(Arc::clone(&log.0)) }
        }
    }

    fn record(&self, call: Call) {
        self.log.push(call);
    }
}

impl IrBuilder for RecordingBuilder {
    fn function(&self) -> &Function {
        self.inner.function()
    }

    fn add_tensor(&mut self, data: TensorData) -> Result<TensorId, PenguinError> {
        self.record(Call::AddTensor(data.name.clone()));
        self.inner.add_tensor(data)
    }

    fn insert(&mut self, inst: InstData, deps: Vec<Dep>) -> InstId {
        let (opcode, recorded, recorded_deps) = (inst.opcode(), inst.clone(), deps.clone());
        let id = self.inner.insert(inst, deps);
        self.record(Call::Insert { id, opcode, inst: Box::new(recorded), deps: recorded_deps });
        id
    }

    fn set_inputs(&mut self, inputs: Vec<TensorId>) {
        self.record(Call::SetInputs(inputs.clone()));
        self.inner.set_inputs(inputs);
    }

    fn set_outputs(&mut self, outputs: Vec<TensorId>) {
        self.record(Call::SetOutputs(outputs.clone()));
        self.inner.set_outputs(outputs);
    }

    fn set_kernel_name(&mut self, name: String) {
        self.record(Call::SetKernelName(name.clone()));
        self.inner.set_kernel_name(name);
    }

    fn set_debug_kernel_function_name(&mut self, name: String) {
        self.record(Call::SetDebugName(name.clone()));
        self.inner.set_debug_kernel_function_name(name);
    }

    fn finalize(self) -> Result<Function, VerifierErrors> {
        self.record(Call::Finalize);
        self.inner.finalize()
    }
}

/// Plan through a recording builder: the plan and the calls.
fn recorded(cfg: &GemmConfig) -> (GemmPlan, Vec<Call>) {
    let log = Log::default();
    let plan = plan(&PlanRequest::new(cfg), &RecordingBuilder::opener(&log)).unwrap().plan;
    let calls = log.take();
    (plan, calls)
}

fn inserts(calls: &[Call]) -> Vec<(InstId, &'static str, &InstData, &[Dep])> {
    calls
        .iter()
        .filter_map(|c| match c {
            Call::Insert { id, opcode, inst, deps } => Some((*id, *opcode, &**inst, deps.as_slice())),
            _ => None,
        })
        .collect()
}

/// What must hold of any recorded plan: the recorded instructions and edges are the
/// function's, in program order; tensors were added in id order, each before its first use;
/// the kernel is opened once, named, given inputs and outputs, then finalized last; and the
/// plan is the default builder's.
fn check_recording(cfg: &GemmConfig, plan: &GemmPlan, calls: &[Call]) {
    let f = &plan.function;
    assert_eq!(calls.first(), Some(&Call::Open("gemm".into())));
    assert_eq!(calls.iter().filter(|c| matches!(c, Call::Open(_))).count(), 1);
    assert_eq!(calls.last(), Some(&Call::Finalize));

    let ins = inserts(calls);
    assert_eq!(ins.len(), f.layout().len());
    for (k, ((id, opcode, inst, deps), &at)) in ins.iter().zip(f.layout()).enumerate() {
        assert_eq!((*id, at), (InstId(k as u32), InstId(k as u32)), "instruction {k} out of order");
        assert_eq!(f.inst(at), Some(*inst));
        assert_eq!(*opcode, inst.opcode());
        assert_eq!(f.deps(at), *deps);
        assert!(deps.iter().all(|d| d.from < at), "i{k} depends on a later instruction: {deps:?}");
    }

    let added: Vec<&String> =
        calls.iter().filter_map(|c| if let Call::AddTensor(n) = c { Some(n) } else { None }).collect();
    assert_eq!(added.len(), f.num_tensors());
    for (i, name) in added.iter().enumerate() {
        assert_eq!(&f.tensor(TensorId::from_index(i).unwrap()).unwrap().name, *name);
    }
    // Every operand's tensor had been added when its instruction was inserted.
    let mut tensors_so_far = 0;
    for c in calls {
        match c {
            Call::AddTensor(_) => tensors_so_far += 1,
            Call::Insert { inst, .. } => {
                assert!(inst.operands().iter().all(|(t, _)| t.tensor.index() < tensors_so_far), "{inst:?}");
            }
            _ => {}
        }
    }

    let last_inputs = calls.iter().rev().find_map(|c| if let Call::SetInputs(v) = c { Some(v) } else { None });
    assert_eq!(last_inputs.map(Vec::as_slice), Some(f.inputs()));
    let outputs: Vec<&Vec<TensorId>> =
        calls.iter().filter_map(|c| if let Call::SetOutputs(v) = c { Some(v) } else { None }).collect();
    assert_eq!(outputs, [&f.outputs().to_vec()]);
    let debug: Vec<&String> =
        calls.iter().filter_map(|c| if let Call::SetDebugName(v) = c { Some(v) } else { None }).collect();
    assert_eq!(debug, [&format!("gemm.{}", cfg.target)]);

    let default = plan_default(&PlanRequest::new(cfg));
    assert_eq!(f, &default.function);
    assert_eq!(plan.stats, default.stats);
    assert_eq!((&plan.tiling, plan.tensors), (&default.tiling, default.tensors));
}

/// 300 x 1000 x 777, bf16 inputs on trn2, naive: 3 m tiles x 2 n tiles x 8 K tiles. Each
/// (m, n, k) step loads its A^T tile (a transposing DMA) and its B tile and runs one matmul;
/// each (m, n) tile is evacuated by one copy out of PSUM and one store.
#[test]
fn a_naive_gemm_planned_through_a_recording_builder() {
    let mut cfg = GemmConfig::new(300, 1000, 777, DType::Bf16, Target::Trn2);
    cfg.input_dtype = DType::Bf16;
    let (plan, calls) = recorded(&cfg);
    check_recording(&cfg, &plan, &calls);
    let ins = inserts(&calls);
    let count = |opcode: &str| ins.iter().filter(|(_, o, ..)| *o == opcode).count();
    let (tiles, steps) = (3 * 2, 3 * 2 * 8);
    assert_eq!(count("matmult"), steps);
    assert_eq!(count("tensor_copy"), tiles);
    assert_eq!(count("dma_copy"), 2 * steps + tiles);
    assert_eq!(ins.len(), steps + tiles + 2 * steps + tiles);
    assert_eq!(plan.stats.matmuls, steps as u64);

    let hbm = |inst: &InstData, dst: bool| match inst {
        InstData::DmaCopy(d) => (if dst { &d.dst } else { &d.src }).memory == Memory::Hbm,
        _ => false,
    };
    let (a, b, c) = (TensorId(0), TensorId(1), TensorId(2));
    let loads_of = |t: TensorId| {
        ins.iter()
            .filter(|(_, _, i, _)| hbm(i, false) && matches!(i, InstData::DmaCopy(d) if d.src.tensor == t))
            .count()
    };
    assert_eq!((loads_of(a), loads_of(b)), (steps, steps));
    assert_eq!(ins.iter().filter(|(_, _, i, _)| hbm(i, true)).count(), tiles);
    // Every store writes c, after the copy out of PSUM it depends on.
    for (id, _, inst, deps) in &ins {
        if let InstData::DmaCopy(d) = inst {
            if d.dst.memory == Memory::Hbm {
                assert_eq!(d.dst.tensor, c);
                let copy =
                    deps.iter().find(|dep| matches!(plan.function.inst(dep.from), Some(InstData::TensorCopy(_))));
                assert!(copy.is_some(), "store {id} does not wait for its evacuation: {deps:?}");
            }
        }
    }
    // Every operand went through process_new_neuroninst: its access pattern is canonical.
    for (_, _, inst, _) in &ins {
        for (tile, _) in inst.operands() {
            assert_eq!(tile.ap, tile.ap.canonicalize(), "{inst:?}");
        }
    }
    // Inputs a, b; output c, as the plan names them by role; then verification.
    assert_eq!((plan.tensors.a, plan.tensors.b, plan.tensors.c, plan.tensors.a_tags), (a, b, c, None));
    assert_eq!(plan.function.inputs(), [a, b]);
    assert_eq!(plan.function.outputs(), [c]);
}

/// Every schedule, with A transposed by DMA (trn2) or on the PE (trn1), plans through the
/// recording builder exactly what it plans over the default one.
#[test]
fn every_schedule_records_the_function_it_builds() {
    for target in [Target::Trn1, Target::Trn2] {
        for schedule in [Schedule::Naive, Schedule::Hoisted, Schedule::BlockedMn, Schedule::BlockedMnk] {
            let mut cfg = GemmConfig::new(384, 1024, 1100, DType::Bf16, target);
            cfg.schedule = schedule;
            let (plan, calls) = recorded(&cfg);
            check_recording(&cfg, &plan, &calls);
            let matmuls = inserts(&calls).iter().filter(|(_, o, ..)| *o == "matmult").count();
            assert_eq!(matmuls as u64, plan.stats.matmuls, "{target} {schedule}");
            // 3 m tiles x 3 n tiles x 8 K tiles.
            assert_eq!(matmuls, 3 * 3 * 8, "{target} {schedule}");
        }
    }
}

/// Blocks too large for SBUF: the fitting planner opens a fresh builder for each attempt and
/// ends with the default builder's plan.
#[test]
fn fitting_opens_a_builder_per_attempt() {
    let mut cfg = GemmConfig::new(1024, 8192, 4096, DType::Bf16, Target::Trn2);
    cfg.schedule = Schedule::BlockedMn;
    cfg.blocks = BlockSizes { m: 1024, n: 4096, k: 8192 };
    let log = Log::default();
    let fitting = PlanRequest::new(&cfg).with_planning(Planning::Fitting);
    let plan = plan(&fitting, &RecordingBuilder::opener(&log)).unwrap().plan;
    let calls = log.take();
    let opened = calls.iter().filter(|c| matches!(c, Call::Open(_))).count();
    let finalized = calls.iter().filter(|c| matches!(c, Call::Finalize)).count();
    assert!(opened > 1, "the first blocks fit: {:?}", plan.config.blocks);
    // Only the attempt that fit was finalized.
    assert_eq!(finalized, 1);
    let default = plan_default(&fitting);
    assert_eq!((&plan.function, plan.config.blocks), (&default.function, default.config.blocks));
}

/// The auto search over the recording builder chooses and plans what it does over the
/// default one, with a builder per candidate planned.
#[test]
fn auto_plans_each_candidate_in_its_own_builder() {
    let mut cfg = GemmConfig::new(512, 2048, 1024, DType::Bf16, Target::Trn2);
    cfg.schedule = Schedule::Auto;
    let hw = cfg.target.profile();
    // A deterministic cost: fewer matmul instructions and HBM-facing DMAs are cheaper.
    let cost = |plan: &GemmPlan| -> Result<(AutoCost, ()), CodegenError> {
        let f = &plan.function;
        let dmas = f.layout().iter().filter(|&&i| matches!(f.inst(i), Some(InstData::DmaCopy(_)))).count();
        Ok((AutoCost { time: dmas as f64, hbm_bytes: plan.stats.matmuls }, ()))
    };
    let search = || AutoSearch { limits: AutoLimits::default(), hw: &hw, shortlist: 4, threads: 1, cost: &cost };
    let log = Log::default();
    let planned = plan(&PlanRequest::new(&cfg).with_search(search()), &RecordingBuilder::opener(&log)).unwrap();
    let calls = log.take();
    let default = plan(&PlanRequest::new(&cfg).with_search(search()), &default_builder).unwrap();
    let ((choice, ()), (default_choice, ())) = (planned.auto.unwrap(), default.auto.unwrap());
    let (plan, default) = (planned.plan, default.plan);
    assert_eq!(plan.function, default.function);
    assert_eq!(choice, default_choice);
    let opened = calls.iter().filter(|c| matches!(c, Call::Open(_))).count();
    let finalized = calls.iter().filter(|c| matches!(c, Call::Finalize)).count();
    assert_eq!(finalized, choice.evaluated);
    assert!(opened >= choice.evaluated + choice.rejected, "{opened} builders for {choice:?}");
}
