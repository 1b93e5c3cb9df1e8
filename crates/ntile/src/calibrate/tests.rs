//! Tests of `ntile calibrate`: rows too large to unroll are modeled looped within the memory
//! budget, a run is stopped by its flag, and the fit says what it cannot vouch for.

use super::*;

const HEADER: &str = "m,k,n,dtype,schedule,block_m,block_n,block_k,lhs_transposed,target,measured_us";

fn rows(lines: &[&str]) -> Vec<Row> {
    parse_csv(&format!("{HEADER}\n{}\n", lines.join("\n")), Target::Trn2).unwrap()
}

#[test]
fn a_row_too_large_to_unroll_within_the_budget_is_modeled_looped() {
    let rows = rows(&["8192,4096,4096,bf16,naive,,,,false,trn2,20000"]);
    let budget = Budget { total: 200 << 20, used: 0 };
    let hw = Target::Trn2.profile();
    assert!(matches!(kernel_of(&rows[0], &hw, &budget, None).unwrap(), Kernel::Looped(_)));
    // Its modeled time before the fit is what `ntile gemm --no-sim` extrapolates for it.
    let fit = calibrate(&rows, &hw, &["dma_fixed_ns".to_string()], 200 << 20, None).unwrap();
    let mut req = request(&rows[0], &hw);
    req.options.max_memory = Some(200 << 20);
    let alone = driver::gemm(&req, None).unwrap();
    assert!(alone.extrapolated.is_some());
    assert_eq!(fit.before_us, vec![alone.report.modeled_time_us]);
    // Within the default budget a small row is planned whole, as gemm plans it.
    let small = self::rows(&["128,128,128,bf16,naive,,,,false,trn2,5"]);
    assert!(matches!(kernel_of(&small[0], &hw, &Budget::default(), None).unwrap(), Kernel::Unrolled(_)));
}

#[test]
fn a_set_flag_stops_the_calibration() {
    let rows = rows(&["128,128,128,bf16,naive,,,,false,trn2,5", "256,256,256,bf16,naive,,,,false,trn2,9"]);
    let hw = Target::Trn2.profile();
    let keys = ["dma_fixed_ns".to_string()];
    for polls in [0, 1, 5, 40] {
        let e = calibrate(&rows, &hw, &keys, 1 << 30, Some(&Cancel::after(polls))).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (crate::error::EXIT_INTERRUPTED, "interrupted"), "{polls}");
    }
}

#[test]
fn the_fit_warns_of_keys_at_a_bound_and_keys_it_cannot_tell_apart() {
    let p = |key: &'static str| {
        let info = KEYS.iter().find(|k| k.name == key).unwrap();
        Param { key, lo: info.min.max(1e-3).ln(), hi: info.max.ln() }
    };
    let params = [p("pe_ghz"), p("dma_fixed_ns"), p("dma_descriptor_ns")];
    let x = [params[0].hi, 1300f64.ln(), 2f64.ln()];
    // Two rows: pe_ghz moves nothing, the DMA keys move both rows in one proportion.
    let jac = vec![vec![0.0, 0.5, 1.0], vec![0.0, 0.25, 0.5]];
    let w = identifiability(&params, &x, &jac, 2);
    assert_eq!(
        w,
        vec![
            "`pe_ghz` ended at the upper bound of its range (100 GHz): the rows do not pin it down; fit fewer keys or \
             add rows that depend on it"
                .to_string(),
            "no row's modeled time depends on `pe_ghz`: the data cannot fit it".to_string(),
            "`dma_fixed_ns` and `dma_descriptor_ns` change every row's modeled time in the same proportion: the data \
             cannot tell them apart (fit one of them, or add rows where they differ)"
                .to_string(),
            "3 keys fitted to 2 row(s): the data cannot determine them all".to_string(),
        ]
    );
    let independent = vec![vec![0.3, 1.0, 0.0], vec![0.1, 0.0, 1.0], vec![1.0, 0.2, 0.1]];
    let x = [1f64.ln(), 1300f64.ln(), 2f64.ln()];
    assert_eq!(identifiability(&params, &x, &independent, 3), Vec::<String>::new());
}
