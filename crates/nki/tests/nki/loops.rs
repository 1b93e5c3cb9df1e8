//! Loops rolled back and source locations through the function, its text, BIR and the
//! timeline.

use penguin::looped::loop_nest;
use penguin::{DType, Target};

use crate::tb::{tiled_matmul, AccStyle};

fn built() -> nki::NkiKernel {
    let trace = tiled_matmul(256, 1024, 1024, DType::Bf16, Target::Trn2, AccStyle::Infer);
    nki::KernelBuilder::new(Target::Trn2).build(&trace).unwrap()
}

#[test]
fn the_looped_function_has_the_kernels_loops_and_expands_to_the_function() {
    let k = built();
    // 2 m tiles x 2 n tiles x 8 k tiles; a mark per iteration of each loop.
    assert_eq!(k.function.insts.len(), 2 * 2 * (8 * 3 + 2));
    let nest = loop_nest(&k.looped.body);
    assert!(!nest.is_empty(), "{}", penguin::text::print_looped(&k.looped));
    let deepest = |n: &[penguin::looped::LoopShape]| n.iter().map(|l| l.trips).max();
    assert!(deepest(&nest).is_some());
    assert!(penguin::looped::printed_lines(&k.looped.body) < k.function.insts.len());
    assert_eq!(k.looped.expand().unwrap(), k.function);
    let text = penguin::text::print_looped(&k.looped);
    assert!(text.contains("loop i0"), "{text}");
    assert!(text.contains("loc(\"kernel.py:16\")"), "{text}");
    assert_eq!(penguin::text::parse_looped(&text).unwrap(), k.looped);
    assert!(penguin::verify_looped(&k.looped).is_ok());
}

#[test]
fn every_instruction_names_its_line_in_the_text_bir_and_the_trace() {
    let k = built();
    let f = &k.function;
    for &id in &f.layout {
        let want = match f.insts[id.index()].opcode() {
            "matmult" => "kernel.py:16",
            "tensor_copy" => "kernel.py:18",
            "dma_copy" => continue,
            other => panic!("unexpected {other}"),
        };
        assert_eq!(f.srclocs.get(id), Some(want));
    }
    assert!(f.to_string().contains("loc(\"kernel.py:13\")"));
    let program = bir::lower(penguin::verify(f).unwrap(), k.target).unwrap();
    let report = sim::model(&program).unwrap();
    let trace = sim::chrome_trace(&program, &report);
    let json: serde_json::Value = serde_json::from_str(&trace).unwrap();
    let sources: std::collections::BTreeSet<&str> =
        json["traceEvents"].as_array().unwrap().iter().filter_map(|e| e["args"]["source"].as_str()).collect();
    let want: std::collections::BTreeSet<&str> =
        ["kernel.py:13", "kernel.py:15", "kernel.py:16", "kernel.py:18", "kernel.py:19"].into_iter().collect();
    assert_eq!(sources, want);
}
