//! Unit tests of `lower.rs`.

use penguin::{verify, CastMode, DType, Function, OffloadedMemCastData, TensorData};

use super::*;

#[test]
fn addresses_that_would_overflow_are_an_error() {
    for memory in [Memory::Hbm, Memory::Psum] {
        let mut f = Function::new("huge");
        for i in 0..3 {
            // 2^63 - 4 bytes each: every tensor is valid, their sum is not addressable.
            let shape = if memory == Memory::Hbm { vec![(1 << 61) - 1] } else { vec![1, (1 << 61) - 1] };
            let t = TensorData { name: format!("t{i}"), shape, dtype: DType::Fp32, memory, address: None };
            f.add_tensor(t).unwrap();
        }
        let err = lower(verify(&f).unwrap(), Target::Trn2).unwrap_err();
        assert!(matches!(&err, BirError::Unsupported(m) if m.contains("exceed 2^64 bytes")), "{err}");
    }
}

/// Plain copies into HBM land on the store queues, every other plain copy on the others.
#[test]
fn stores_and_loads_take_separate_queues() {
    let f = penguin::parse::parse(include_str!("../../../../examples/gemm_4x16x8.pir")).unwrap();
    let p = lower(verify(&f).unwrap(), Target::Trn2).unwrap();
    let loads = penguin::target::NUM_DMA_QUEUES as u8 - STORE_QUEUES;
    let (mut stores, mut others) = (Vec::new(), Vec::new());
    for q in 0..penguin::target::NUM_DMA_QUEUES as u8 {
        for inst in p.stream(Engine::Dma(q)) {
            if let Op::DmaCopy { dst, .. } = &inst.op {
                if dst.memory == Memory::Hbm {
                    stores.push(q);
                } else {
                    others.push(q);
                }
            }
        }
    }
    assert_eq!(stores, vec![loads], "the one store of the example");
    assert_eq!(others, vec![0, 1, 2, 3], "the four loads of the example, in turn");
}

/// A queue hint places a copy on the queue of its class it names (modulo the class), and
/// an offloaded cast's pieces on the run of queues from `hint * pieces`; unhinted copies
/// keep taking the queues in turn.
#[test]
fn queue_hints_choose_the_queue() {
    let mut f = penguin::parse::parse(include_str!("../../../../examples/gemm_4x16x8.pir")).unwrap();
    let copies: Vec<InstId> =
        f.layout.iter().copied().filter(|&i| matches!(f.insts[i.index()], InstData::DmaCopy(_))).collect();
    // Hints on the first load (13: load queue 1) and the store (6: store queue 2).
    for (&i, hint) in copies.iter().zip([Some(13), None, None, None, Some(6)]) {
        if let InstData::DmaCopy(d) = &mut f.insts[i.index()] {
            d.queue = hint.map(DmaQueueHint);
        }
    }
    let p = lower(verify(&f).unwrap(), Target::Trn2).unwrap();
    let loads = penguin::target::DMA_LOAD_QUEUES as u8;
    let queue_of = |id: InstId| {
        (0..penguin::target::NUM_DMA_QUEUES as u8)
            .find(|&q| p.stream(Engine::Dma(q)).iter().any(|b| b.origin == Some(id)))
    };
    let got: Vec<Option<u8>> = copies.iter().map(|&i| queue_of(i)).collect();
    assert_eq!(got, vec![Some(1), Some(0), Some(1), Some(2), Some(loads + 2)]);

    // A cast of 256 KiB: 4 pieces, hint 3 starts at queue 12 and wraps to 13, 14, 15.
    let mut f = Function::new("cast");
    let t = |name: &str, dtype| TensorData {
        name: name.into(),
        shape: vec![128, 1024],
        dtype,
        memory: Memory::Hbm,
        address: None,
    };
    let x = f.add_tensor(t("x", DType::Fp32)).unwrap();
    let y = f.add_tensor(t("y", DType::Bf16)).unwrap();
    let whole = |id: TensorId, dtype| penguin::InstTile {
        tensor: id,
        memory: Memory::Hbm,
        dtype,
        ap: penguin::AccessPattern::hbm_rows(1024, 0, 128, 0, 512),
    };
    f.push_inst(
        InstData::OffloadedMemCast(OffloadedMemCastData {
            dst: whole(y, DType::Bf16),
            src: whole(x, DType::Fp32),
            cast: CastMode::Rne,
            queue: Some(DmaQueueHint(3)),
        }),
        vec![],
    );
    let p = lower(verify(&f).unwrap(), Target::Trn2).unwrap();
    let used: Vec<u8> =
        (0..penguin::target::NUM_DMA_QUEUES as u8).filter(|&q| !p.stream(Engine::Dma(q)).is_empty()).collect();
    assert_eq!(used, vec![12, 13, 14, 15]);
}

/// Routing sizes every stream before anything is built: each is allocated once, at its final
/// length, and the unrolled lowering agrees with lowering one instruction at a time
/// (`lower_inst`, which the looped lowerings use) op for op and queue for queue.
#[test]
fn streams_are_allocated_at_their_final_length() {
    let f = penguin::parse::parse(include_str!("../../../../examples/gemm_4x16x8.pir")).unwrap();
    let p = lower(verify(&f).unwrap(), Target::Trn2).unwrap();
    for (e, s) in p.streams.iter().enumerate() {
        assert_eq!(s.capacity(), s.len(), "stream {e}");
    }
    let mut cx = LowerCx::new(&f, Target::Trn2);
    cx.assign_addresses().unwrap();
    let mut one_by_one: Vec<Vec<Op>> = vec![Vec::new(); p.streams.len()];
    for &id in &f.layout {
        for (engine, ops) in cx.lower_inst(id, &f.insts[id.index()]).unwrap() {
            one_by_one[engine.index()].extend(ops);
        }
    }
    let ops: Vec<Vec<Op>> = p.streams.iter().map(|s| s.iter().map(|i| i.op.clone()).collect()).collect();
    assert_eq!(ops, one_by_one);
    assert!(ops.iter().map(Vec::len).sum::<usize>() > 0);
}
