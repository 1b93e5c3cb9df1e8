//! Unit tests of `lower.rs`.

use penguin::{verify, DType, Function, TensorData};

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
