//! The README and the pages under `docs/` are tested: every `console` block in them runs and
//! its output must match what the block shows.
//!
//! `trycmd` reads the Markdown: a line `$ CMD` runs a command, `> ARGS` continues it, `? N`
//! states its exit code (0 when absent), and the lines after it are its expected output
//! (stdout and stderr together). Parts that vary from run to run are masked where the page
//! shows them: `[..]` matches anything within a line, a line `...` any run of lines. Every
//! other character must be what the program prints today, so a changed figure fails this test
//! until the page is blessed (`cargo xtask bless`, or `TRYCMD=overwrite` on this test), which
//! rewrites the blocks with today's output and keeps the masks.
//!
//! The commands run in a scratch directory that holds links to the repository's `examples/`,
//! `tests/` and `docs/`, so files a page's commands write (`a.npy`, `trace.json`, ...) never
//! land in the repository. `ntile` is this build's binary; `python3` and `cat` come from
//! `PATH`. Blocks whose commands need the Python module (`>>>` examples) are tested by
//! `python/tests/test_readme.py` instead.

use std::path::{Path, PathBuf};

/// The pages whose console blocks are tested, relative to the repository root.
const PAGES: &[&str] = &["README.md", "docs/nki-tracer.md"];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repository root")
}

/// The first `name` on `PATH`, as a shell would find it.
fn on_path(name: &str) -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|dir| dir.join(name)).find(|p| p.is_file()))
        .unwrap_or_else(|| panic!("`{name}` is not on PATH; the README's commands need it"))
}

#[cfg(unix)]
fn link(target: &Path, at: &Path) {
    std::os::unix::fs::symlink(target, at).expect("link into the scratch directory");
}

#[test]
fn every_console_block_prints_what_the_page_shows() {
    let root = repo_root();
    // `cargo xtask bless` sets TRYCMD=overwrite: trycmd then rewrites the copies, and they
    // go back over the pages.
    let bless = std::env::var_os("TRYCMD").is_some_and(|v| v == "overwrite");
    let scratch = std::env::temp_dir().join(format!("ntile-readme-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let mut copies = Vec::new();
    for page in PAGES {
        let source = root.join(page);
        if !source.exists() {
            continue;
        }
        // Each page runs in its own directory `<stem>.in/` (trycmd's working directory for a
        // `<stem>.md` case), beside a copy of the page.
        let name = page.replace('/', "-");
        let copy = scratch.join(&name);
        let work = copy.with_extension("in");
        std::fs::create_dir_all(&work).expect("scratch directory");
        std::fs::copy(&source, &copy).expect("copy the page");
        for dir in ["examples", "tests", "docs"] {
            link(&root.join(dir), &work.join(dir));
        }
        copies.push((source, copy));
    }

    let cases = trycmd::TestCases::new();
    cases
        .register_bin("ntile", PathBuf::from(env!("CARGO_BIN_EXE_ntile")))
        .register_bin("python3", on_path("python3"))
        .register_bin("cat", on_path("cat"))
        .env("NTILE_THREADS", "2")
        .env("NO_COLOR", "1");
    for (_, copy) in &copies {
        cases.case(copy);
    }
    cases.run();
    if bless {
        for (source, copy) in &copies {
            std::fs::copy(copy, source).expect("write the blessed page back");
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
