//! Reading traces: round trips, and errors that name the field and the record.

use nki::{NkiError, Trace};
use penguin::{DType, Target};

use crate::tb::{tiled_matmul, AccStyle};

fn trace_error(json: &str) -> (String, String) {
    match Trace::from_json(json) {
        Err(NkiError::Trace { path, message }) => (path, message),
        other => panic!("expected a trace error, got {other:?}"),
    }
}

#[test]
fn a_trace_round_trips_through_json() {
    for style in [AccStyle::Infer, AccStyle::Explicit, AccStyle::ZeroFillAdd] {
        let t = tiled_matmul(128, 256, 512, DType::Bf16, Target::Trn1, style);
        assert_eq!(Trace::from_json(&t.to_json()).unwrap(), t);
    }
}

#[test]
fn errors_name_the_field_and_the_record() {
    let t = tiled_matmul(128, 256, 512, DType::Bf16, Target::Trn1, AccStyle::Infer);
    let mut v: serde_json::Value = serde_json::from_str(&t.to_json()).unwrap();
    let ops = v["ops"].as_array().unwrap().clone();
    let first_dma = ops.iter().position(|o| o["op"] == "dma_copy").unwrap();
    let set = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut w = v.clone();
        f(&mut w);
        trace_error(&w.to_string())
    };
    let (path, message) = set(&|w| w["ops"][first_dma]["dst"]["ap"][0][0] = "x".into());
    assert_eq!(path, format!("ops[{first_dma}].dst.ap[0][0]"));
    assert!(message.starts_with("invalid type: string \"x\", expected i64"), "{message}");
    let (path, message) = set(&|w| {
        w["ops"][first_dma].as_object_mut().unwrap().remove("src");
    });
    assert_eq!(path, format!("ops[{first_dma}]"));
    assert!(message.starts_with("dma_copy record: missing field `src` at line 1 column "), "{message}");
    let (path, message) = set(&|w| w["ops"][first_dma]["op"] = "dma_transpose".into());
    assert_eq!(path, format!("ops[{first_dma}]"));
    assert!(message.starts_with("unknown record kind `dma_transpose`"), "{message}");
    let (path, message) = set(&|w| w["ops"][first_dma]["accumulate"] = true.into());
    assert_eq!(path, format!("ops[{first_dma}]"));
    assert!(message.starts_with("dma_copy record: unknown field `accumulate`"), "{message}");
    let (path, message) = set(&|w| w["tensors"][1]["buffer"] = "dram".into());
    assert_eq!(path, "tensors[1].buffer");
    assert!(message.starts_with("unknown variant `dram`"), "{message}");
    let (path, message) = set(&|w| w["version"] = 2.into());
    assert_eq!(
        (path.as_str(), message.as_str()),
        ("version", "trace version 2 is not supported (this ntile reads version 1)")
    );
    let (path, _) = set(&|w| w["format"] = "other".into());
    assert_eq!(path, "format");
    let e = Trace::from_json("{").unwrap_err();
    assert!(e.to_string().starts_with("trace: EOF while parsing"), "{e}");
    // Immediates may be NaN and infinities, as strings.
    let mut w = v.clone();
    w["ops"].as_array_mut().unwrap().push(serde_json::json!({"op": "memset", "loc": [0, 3], "value": "-inf",
        "dst": {"t": 3, "ap": [[128, 128], [1, 128]]}, "engine": null}));
    let t2 = Trace::from_json(&w.to_string()).unwrap();
    assert!(matches!(t2.ops.last(), Some(nki::trace::Record::Memset { value, .. }) if value.0 == f64::NEG_INFINITY));
    v["ops"] = serde_json::Value::Array(ops);
}
