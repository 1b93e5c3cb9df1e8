//! The text `ntile gemm` prints of its report: the short human summary, or the `--json`
//! report.

use driver::Report;
use penguin::Target;

use crate::error::CliError;

/// The report as one pretty-printed JSON object.
pub fn json(report: &Report) -> Result<String, CliError> {
    serde_json::to_string_pretty(report)
        .map(|s| s + "\n")
        .map_err(|e| CliError::internal(format!("cannot encode the report: {e}")))
}

fn kib(bytes: u64) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// The lines of a GEMM divided between cores: the split, each core's share and figures,
/// and the shared HBM budget.
fn cores_lines(l: &driver::gemm::LncReport) -> String {
    let weighed = if l.searched && l.weighed.len() > 1 {
        let each: Vec<String> = l.weighed.iter().map(|(k, v)| format!("{k} {v:.1} us")).collect();
        format!(" (faster of {})", each.join(", "))
    } else if l.searched {
        " (the only split with a share for every core)".to_string()
    } else {
        " (--split)".to_string()
    };
    let split = match l.split.as_str() {
        "k" => "K split: each core an fp32 partial sum of C, the two added after a shared semaphore".to_string(),
        dim => format!("C split by {dim} into bands of {}", if dim == "m" { "rows" } else { "columns" }),
    };
    let mut s = format!("  cores   {} cores (LNC={}), {split}{weighed}\n", l.cores, l.cores);
    for (i, c) in l.per_core.iter().enumerate() {
        let sh = &c.share;
        let window = if l.split == "k" {
            format!("K[{}..{}]", sh.k0, sh.k0 + sh.k)
        } else {
            format!("C[{}..{}, {}..{}]", sh.m0, sh.m0 + sh.m, sh.n0, sh.n0 + sh.n)
        };
        s += &format!(
            "          core {i}  {window}: {:.1} us, {} matmuls, pe {:.0}%, dma {:.0}%, HBM {}, {}\n",
            c.modeled_time_us,
            c.matmuls,
            c.engine_busy.pe * 100.0,
            c.engine_busy.dma * 100.0,
            mib(c.hbm_bytes),
            c.schedule
        );
    }
    if l.modeled_apart {
        s +=
            "          modeled apart (extrapolated): each share modeled alone; the chip takes the slower core's time, \
              or the shared budget's for both cores' HBM bytes\n";
    }
    s += &format!(
        "          shared HBM budget ({:.0} GB/s for both cores) busy {:.0}% of the modeled time\n",
        l.hbm_shared_gb_per_s,
        l.hbm_shared_busy * 100.0
    );
    s
}

/// The short human summary.
pub fn summary(r: &Report) -> String {
    let target: Target = r.target.parse().unwrap_or(Target::Trn2);
    let cap = u64::from(target.info().statebuf_par_size_in_bytes);
    let [mt, nt] = r.output_tiles;
    let cores = crate::run::cores_note(r.lnc.as_ref().map_or(1, |l| l.cores as usize));
    let mut s = format!(
        "ntile gemm {}x{}x{}  {} x {} -> {}  on {}{cores}  (schedule {})\n",
        r.m, r.k, r.n, r.lhs_dtype, r.rhs_dtype, r.out_dtype, r.target, r.schedule
    );
    let [tm, tn] = r.tile_shape;
    let edges = if r.edge_tile_shape == r.tile_shape {
        String::new()
    } else {
        format!(" (edge {}x{})", r.edge_tile_shape[0], r.edge_tile_shape[1])
    };
    s += &format!(
        "  plan    {mt}x{nt} output tiles of {tm}x{tn}{edges}, {} K steps of {} rows: {} matmuls in {} PSUM groups (max {} live)\n",
        r.k_steps, r.k_step_rows, r.matmuls, r.psum_groups, r.max_live_psum_banks
    );
    if let Some(x) = r.extrapolated.as_ref().filter(|x| x.planned_in_loops) {
        s += &if x.reduced_instructions < r.penguin_instructions {
            format!(
                "          planned in loops ({} of {} Penguin instructions emitted, the rest repeat them), not unrolled\n",
                x.reduced_instructions, r.penguin_instructions
            )
        } else {
            format!(
                "          planned in loops (all {} Penguin instructions emitted: no loop is long enough to skip), not unrolled\n",
                r.penguin_instructions
            )
        };
    } else if let Some(x) = &r.extrapolated {
        let [bm, bk, bn] = x.base;
        s += &format!(
            "          extrapolated from {} reduced plans ({} BIR instructions; base {bm}x{bk}x{bn}){}, not unrolled\n",
            x.reduced_plans,
            x.reduced_instructions,
            if x.along_nest { " along the schedule's loop nest" } else { "" }
        );
    }
    let blocks = match (&r.blocks, &r.loop_order) {
        (Some(b), Some(order)) => format!("blocks m {} n {} k {}, {order}", b.m, b.n, b.k),
        _ => "no blocks".to_string(),
    };
    s += &format!(
        "  loop    {} ({blocks}); A transposed by {}; A and B {} in HBM\n",
        r.schedule, r.lhs_transpose, r.hbm_dtype
    );
    s += &format!(
        "  ir      {} penguin / {} BIR instructions; SBUF {} allocated of {} per partition; HBM traffic {}\n",
        r.penguin_instructions,
        r.bir_instructions,
        kib(r.sbuf_peak_bytes_per_partition),
        kib(cap),
        mib(r.hbm_bytes)
    );
    if !r.single_buffered.is_empty() {
        s += &format!(
            "  buffers {} single-buffered: two slots do not fit SBUF, so each refill waits for the last reads\n",
            r.single_buffered.join(", ")
        );
    }
    s += &format!(
        "  model   {:.1} us modeled (ideal PE time {:.1} us), HFU {:.2}; HBM {:.2}x the read-once minimum ({}), {:.2}x the I/O lower bound\n",
        r.modeled_time_us,
        r.tile_quantized_ideal_us,
        r.hfu,
        r.hbm_bytes as f64 / (r.hbm_read_once_bytes as f64).max(1.0),
        mib(r.hbm_read_once_bytes),
        r.hbm_bytes as f64 / r.io_lower_bound_bytes.max(1.0)
    );
    let b = &r.engine_busy;
    for (name, frac) in [("pe", b.pe), ("act", b.act), ("dve", b.dve), ("pool", b.pool), ("dma", b.dma)] {
        let filled = (frac.clamp(0.0, 1.0) * 20.0).round() as usize;
        s += &format!(
            "          {name:<4} [{}{}] {:>3.0}%\n",
            "#".repeat(filled),
            ".".repeat(20 - filled),
            frac * 100.0
        );
    }
    if let Some(l) = &r.lnc {
        s += &cores_lines(l);
    }
    if let Some(bn) = &r.bottleneck {
        let others: Vec<String> = bn
            .critical_path
            .iter()
            .filter(|(c, _)| **c != bn.engine)
            .map(|(c, v)| format!("{c} {:.0}%", v * 100.0))
            .collect();
        let others = if others.is_empty() { String::new() } else { format!(" ({})", others.join(", ")) };
        s += &format!(
            "  bottleneck {}: {:.0}% of the modeled time on the critical path{others}\n",
            bn.engine,
            bn.share * 100.0
        );
    }
    if let Some(a) = &r.auto {
        let skipped = if a.skipped > 0 { format!(", {} not weighed", a.skipped) } else { String::new() };
        let on = a.weighed_on.map_or(String::new(), |[m, k, n]| format!(", weighed on {m}x{k}x{n}"));
        if a.searched == driver::gemm::Searched::Blocks {
            s += &format!(
                "  blocks  chose {}x{}{} {} of {} modeled {} candidates ({} did not fit SBUF{skipped}){on}\n",
                a.block_m,
                a.block_n,
                if r.schedule == "blocked-mnk" { format!("x{}", a.block_k) } else { String::new() },
                a.order,
                a.evaluated,
                r.schedule,
                a.rejected
            );
        } else {
            s += &format!(
                "  auto    chose {} of {} modeled candidates ({} did not fit SBUF{skipped}){on}\n",
                r.schedule, a.evaluated, a.rejected
            );
        }
    }
    match &r.check {
        Some(c) => {
            let verdict =
                if c.passed { "PASS".to_string() } else { format!("FAIL ({} elements outside the bound)", c.failures) };
            s += &format!(
                "  check   {verdict}: max |err| {:.3e}, max |err|/(|A|@|B|) {:.3e}, max |err|/bound {:.2e} vs fp64 of the rounded inputs\n          {}\n",
                c.max_abs_err,
                c.max_rel_err,
                c.max_err_over_bound,
                c.describe()
            );
        }
        // Only a simulated run spends time simulating.
        None if r.wall_ms.simulate > 0.0 => s += "  check   skipped (--no-check)\n",
        None => s += "  check   skipped (--no-sim)\n",
    }
    s += &format!(
        "  time    plan {:.1} ms, lower {:.1} ms, simulate {:.1} ms, reference {:.1} ms\n",
        r.wall_ms.plan, r.wall_ms.lower, r.wall_ms.simulate, r.wall_ms.reference
    );
    s
}
