//! Tests of the SVG timeline and tile grid.

use super::*;

use bir::{BirInst, HwAp};
use penguin::{CastMode, DType, Dim, EngineAccumulationType, Memory, PerfMode, Target, TilePosition, TileSize};

fn small_program() -> Program {
    let f = penguin::parse::parse(include_str!("../../../../examples/gemm_4x16x8.pir")).unwrap();
    let verified = penguin::verify(&f).unwrap();
    bir::lower(verified, Target::Trn2).unwrap()
}

/// The timeline part of a document (before the occupancy panel).
fn timeline_part(svg: &str) -> &str {
    svg.split("<g class=\"sbuf-occupancy\">").next().unwrap()
}

/// Engines whose row the document has.
fn rows_of(svg: &str) -> Vec<Engine> {
    Engine::all().filter(|e| svg.contains(&format!("<g class=\"row\" id=\"row-{}\"", e.name()))).collect()
}

#[test]
fn small_program_has_a_row_per_busy_engine_and_a_rect_per_matmul() {
    let program = small_program();
    let report = crate::model(&program).unwrap();
    let full = timeline_svg(&program, &report);
    let svg = timeline_part(&full);
    assert!(full.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""), "{full}");
    assert!(full.trim_end().ends_with("</svg>"), "{full}");
    for (open, close) in [("<g", "</g>"), ("<text", "</text>"), ("<title>", "</title>")] {
        assert_eq!(full.matches(open).count(), full.matches(close).count(), "{open}: {full}");
    }
    assert!(full.contains("<g class=\"sbuf-occupancy\">"), "{full}");
    assert!(!full.contains("<script") && !full.contains("href"), "{full}");

    let ran: Vec<Engine> = Engine::all().filter(|&e| report.slices.iter().any(|s| s.engine == e)).collect();
    assert!(ran.contains(&Engine::Pe) && ran.contains(&Engine::Act) && ran.len() >= 3, "{ran:?}");
    assert_eq!(rows_of(svg), ran);
    // The PE's weight loads have a row of their own.
    assert!(svg.contains("<g class=\"row\" id=\"row-pe.weights\""), "{svg}");
    assert_eq!(svg.matches("<g class=\"row\"").count(), ran.len() + 1);
    assert_eq!(svg.matches("<tspan").count(), ran.len() + 1, "one busy label per row");
    assert!(svg.contains("load_stationary (pe.weights row)"), "{svg}");

    let matmuls = report
        .slices
        .iter()
        .filter(|s| matches!(program.stream(s.engine)[s.index].op, Op::MultiplyMoving { .. }))
        .count();
    assert_eq!(matmuls, 2);
    assert_eq!(svg.matches("<rect class=\"multiply_moving\"").count(), matmuls, "{svg}");
    // Nothing merged: every instruction has its tooltip.
    assert_eq!(svg.matches("us</title></rect>").count() - svg.matches("<title>wait").count(), report.slices.len());
    assert!(svg.contains("<title>multiply_moving, pe, "), "{svg}");
}

fn ap(memory: Memory, dtype: DType) -> HwAp {
    HwAp::on_chip(memory, dtype, 0, 128, 0, vec![Dim::new(1, 512)])
}

fn inst(op: Op) -> BirInst {
    BirInst { op, waits: vec![], signal: None, origin: None }
}

fn matmul() -> Op {
    Op::MultiplyMoving {
        dst: ap(Memory::Psum, DType::Fp32),
        src: ap(Memory::Sbuf, DType::Bf16),
        acc: EngineAccumulationType::START | EngineAccumulationType::STOP,
        perf_mode: PerfMode::None,
        tile_position: TilePosition { row: 0, col: 0 },
        tile_size: TileSize { rows: 128, cols: 128 },
    }
}

fn copy() -> Op {
    Op::TensorCopy { dst: ap(Memory::Sbuf, DType::Bf16), src: ap(Memory::Psum, DType::Fp32) }
}

fn memset() -> Op {
    Op::Memset { dst: ap(Memory::Sbuf, DType::Fp32), value: 0.0 }
}

fn dma() -> Op {
    Op::DmaCopy { dst: ap(Memory::Sbuf, DType::Bf16), src: ap(Memory::Hbm, DType::Fp32), cast: CastMode::Rne }
}

/// An op with its start, end and wait times (ns).
type Timed = (Op, f64, f64, f64);

/// A program of the ops per engine, in stream order, and a report placing them at their
/// times.
fn synthetic(total_ns: f64, per_engine: Vec<(Engine, Vec<Timed>)>) -> (Program, CycleReport) {
    let mut program = Program::new("synthetic<&>", Target::Trn2);
    let mut slices = Vec::new();
    let mut busy = vec![0.0; bir::NUM_ENGINES];
    for (engine, ops) in per_engine {
        for (op, start_ns, end_ns, wait_ns) in ops {
            let stream = &mut program.streams[engine.index()];
            slices.push(Slice { engine, index: stream.len(), start_ns, end_ns, wait_ns });
            stream.push(inst(op));
            busy[engine.index()] += end_ns - start_ns;
        }
    }
    slices.sort_by(|a, b| a.start_ns.total_cmp(&b.start_ns));
    let report =
        CycleReport { total_ns, engine_busy_ns: busy, hbm_bytes: 0, matmul_flops: 0.0, peak_flops_per_ns: 1.0, slices };
    (program, report)
}

#[test]
fn narrow_slices_sharing_a_column_merge_into_the_dominant_kind() {
    // 1 ns per pixel column.
    let total = PLOT_W as f64;
    let (program, report) = synthetic(
        total,
        vec![
            (
                Engine::Act,
                vec![
                    // Column 10: two memsets and a longer copy share it.
                    (memset(), 10.0, 10.2, 0.0),
                    (copy(), 10.2, 10.8, 0.0),
                    (memset(), 10.8, 10.9, 0.0),
                    // Column 20: a narrow copy alone.
                    (copy(), 20.3, 20.6, 0.0),
                    // Columns 30..40: a wide copy, drawn as itself.
                    (copy(), 30.0, 40.0, 5.0),
                ],
            ),
            (Engine::Dma(3), vec![(dma(), 0.0, total, 0.0)]),
        ],
    );
    let full = timeline_svg(&program, &report);
    let svg = timeline_part(&full);
    assert_eq!(rows_of(svg), vec![Engine::Act, Engine::Dma(3)]);
    let x = |c: usize| PLOT_X + c;
    assert!(
        svg.contains(&format!(r#"<rect class="tensor_copy" x="{}" y="{OP_Y}" width="1" height="{OP_H}"/>"#, x(10))),
        "{svg}"
    );
    assert_eq!(svg.matches("<rect class=\"memset\"").count(), 0, "{svg}");
    assert!(svg.contains(&format!(r#"<rect class="tensor_copy" x="{}.3" "#, x(20))), "{svg}");
    assert!(svg.contains("<title>tensor_copy, act, 0.020-0.021 us</title>"), "{svg}");
    assert!(svg.contains("<title>tensor_copy, act, 0.030-0.040 us</title>"), "{svg}");
    assert!(svg.contains("<title>wait before tensor_copy, act, 0.025-0.030 us</title>"), "{svg}");
    assert!(svg.contains("<title>dma_copy, dma3, "), "{svg}");
    assert!(svg.contains("<rect class=\"cast\""), "an f32 -> bf16 load is a cast: {svg}");
    // Titles for the lone copy, the wide copy, its wait and the DMA; none for the merge.
    assert_eq!(svg.matches("<title>").count(), 5, "{svg}");
    assert!(svg.contains("<title>synthetic&lt;&amp;&gt; (trn2)"), "{svg}");
}

#[test]
fn a_hundred_thousand_slices_stay_within_rows_times_width() {
    const N: usize = 100_000;
    // Sub-pixel instructions back to back, every other one held by a wait.
    let dur = 3.0;
    let ops = |op: fn() -> Op, phase: f64| -> Vec<Timed> {
        (0..N / 4)
            .map(|i| {
                let start = phase + 4.0 * dur * i as f64;
                let wait = if i % 2 == 0 { 0.5 } else { 0.0 };
                (op(), start, start + dur, wait)
            })
            .collect()
    };
    let engines = [Engine::Pe, Engine::Dve, Engine::Dma(0), Engine::Dma(15)];
    let total = 4.0 * dur * (N / 4) as f64 + 10.0;
    let (program, report) = synthetic(
        total,
        vec![
            (engines[0], ops(matmul, 1.0)),
            (engines[1], ops(copy, 2.0)),
            (engines[2], ops(dma, 0.0)),
            (engines[3], ops(dma, 3.0)),
        ],
    );
    assert_eq!(report.slices.len(), N);
    let full = timeline_svg(&program, &report);
    let svg = timeline_part(&full);
    assert_eq!(rows_of(svg), engines);
    // The occupancy panel: at most four path points per pixel column and buffer.
    let panel = full.len() - svg.len();
    assert!(panel <= 4 * PLOT_W * 16 + 4096, "{panel} bytes of occupancy panel");

    // Per row: at most one merged rect, one lone slice and one wait strip per pixel column,
    // plus one rect of a slice a pixel or more wide per pixel column; each element at most
    // 160 bytes (a rect with its tooltip); the head, axis and legend take well under 16 KiB.
    let per_row = (3 * PLOT_W + 2) * 160;
    let bound = engines.len() * per_row + 16 * 1024;
    assert!(svg.len() <= bound, "{} bytes > {bound}", svg.len());
    // One element per instruction would not fit.
    assert!(N * 60 > bound);
    assert!(svg.matches("<rect").count() <= engines.len() * (3 * PLOT_W + 3) + 10);
    assert!(svg.contains("<rect class=\"multiply_moving\""));
    assert!(svg.contains("<rect class=\"tensor_copy\""));
    assert_eq!(svg.matches("<title>").count(), 1, "only the document title");
}

#[test]
fn escapes_xml_text() {
    assert_eq!(Escaped("a<b>&\"c'd").to_string(), "a&lt;b&gt;&amp;&quot;c&apos;d");
    assert_eq!(Escaped("plain dma3").to_string(), "plain dma3");
    assert_eq!(Escaped("x\u{1}y\tz").to_string(), "x\u{FFFD}y\tz");
}

#[test]
fn ticks_are_round_numbers() {
    assert_eq!(nice_step(0.7), 1.0);
    assert_eq!(nice_step(240.0), 500.0);
    assert_eq!(nice_step(1.5e-3), 2e-3);
    assert_eq!(nice_step(0.0), 1.0);
}
