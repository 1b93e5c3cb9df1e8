//! `ntile gemm` flags given as words on top of flags set in memory: what the Python module's
//! `flags=` adds to the keywords it sets itself, with the CLI's own parser and messages.

use clap::parser::ValueSource;
use clap::{Args as _, FromArgMatches as _};

use super::GemmArgs;
use crate::error::CliError;

/// Put the flags `words` gives onto `args`, whose flags named in `set` (clap ids: the field
/// names, such as `schedule` or `block_m`) the caller set already: one of those given again
/// is refused as a repeated flag, as on the command line.
pub fn apply(args: &mut GemmArgs, set: &[&str], words: &[String]) -> Result<(), CliError> {
    if words.is_empty() {
        return Ok(());
    }
    let mut cmd = GemmArgs::augment_args(clap::Command::new("gemm").no_binary_name(true));
    let matches = cmd.clone().try_get_matches_from(words).map_err(crate::error::clap_error)?;
    // An argument prints as on the command line (`--schedule <SCHEDULE>`) once it is built.
    cmd.build();
    let given = |id: &str| matches!(matches.value_source(id), Some(ValueSource::CommandLine));
    if let Some(id) = set.iter().find(|id| given(id)) {
        let shown = cmd.get_arguments().find(|a| a.get_id() == *id).map_or_else(|| id.to_string(), ToString::to_string);
        return Err(CliError::usage(format!("the argument '{shown}' cannot be used multiple times")));
    }
    let from = GemmArgs::from_arg_matches(&matches).map_err(crate::error::clap_error)?;
    // Only the flags the words give: the defaults of the others leave `args` as it is.
    macro_rules! take {
        ($($field:ident),* $(,)?) => {
            $(if given(stringify!($field)) {
                args.$field = from.$field.clone();
            })*
        };
    }
    take!(
        m,
        k,
        n,
        dtype,
        lhs_dtype,
        rhs_dtype,
        hbm_dtype,
        out_dtype,
        target,
        perf_mode,
        sparsity,
        schedule,
        block_m,
        block_n,
        block_k,
        order,
        transpose,
        trace,
        svg,
        svg_grid,
        lhs,
        rhs,
        lhs_transposed,
        output,
        json,
        no_sim,
        extrapolate,
        no_check,
        quiet,
        emit,
        seed,
        max_memory,
        hw,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_add_flags_and_refuse_the_ones_set_already() {
        let mut args = GemmArgs { schedule: Some(codegen::Schedule::Naive), ..GemmArgs::default() };
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        apply(&mut args, &["schedule"], &words(&["--hbm-dtype", "bf16", "--block-m", "256"])).unwrap();
        assert_eq!((args.hbm_dtype, args.block_m), (Some(penguin::DType::Bf16), Some(256)));
        // The defaults of flags not given leave the fields set in memory alone.
        assert_eq!(args.schedule, Some(codegen::Schedule::Naive));
        let e = apply(&mut args, &["schedule"], &words(&["--schedule", "auto"])).unwrap_err();
        assert_eq!(e.message, "the argument '--schedule <SCHEDULE>' cannot be used multiple times");
        let e = apply(&mut args, &[], &words(&["--m", "x"])).unwrap_err();
        assert!(e.message.starts_with("invalid value 'x' for '--m <M>'"), "{}", e.message);
    }
}
