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
        let text = std::fs::read_to_string(&source).expect("read the page");
        std::fs::write(&copy, pad(&text)).expect("copy the page");
        for dir in ["examples", "tests", "docs"] {
            link(&root.join(dir), &work.join(dir));
        }
        copies.push((source, copy, text));
    }

    let cases = trycmd::TestCases::new();
    cases
        .register_bin("ntile", PathBuf::from(env!("CARGO_BIN_EXE_ntile")))
        .register_bin("python3", on_path("python3"))
        .register_bin("cat", on_path("cat"))
        .env("NTILE_THREADS", "2")
        .env("NO_COLOR", "1");
    for (_, copy, _) in &copies {
        cases.case(copy);
    }
    cases.run();
    if bless {
        for (source, copy, old) in &copies {
            let new = std::fs::read_to_string(copy).expect("read the blessed copy");
            std::fs::write(source, keep_masks(old, &unpad(&new))).expect("write the blessed page back");
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// The lines of each console block of `md`, with the index of each block's opening fence.
fn console_blocks(lines: &[&str]) -> Vec<(usize, usize)> {
    let mut blocks = Vec::new();
    let mut open = None;
    for (i, line) in lines.iter().enumerate() {
        match open {
            None if line.starts_with("```console") || line.starts_with("```trycmd") => open = Some(i),
            Some(start) if line.starts_with("```") => {
                blocks.push((start, i));
                open = None;
            }
            _ => {}
        }
    }
    blocks
}

/// trycmd drops the last newline of a command's expected output; the program's output ends
/// with one. The copy it runs gets a blank line after each command's output (before the next
/// `$ ` and before the closing fence) so the page itself needs none.
fn pad(md: &str) -> String {
    let lines: Vec<&str> = md.lines().collect();
    let blocks = console_blocks(&lines);
    let mut out = String::with_capacity(md.len() + 1024);
    for (i, line) in lines.iter().enumerate() {
        let in_block = blocks.iter().any(|&(start, end)| i > start + 1 && i <= end);
        if in_block && (line.starts_with("$ ") || line.starts_with("```")) {
            out.push('\n');
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The inverse of [`pad`] on a copy trycmd rewrote: one blank line less before each `$ `
/// and closing fence of a console block.
fn unpad(md: &str) -> String {
    let lines: Vec<&str> = md.lines().collect();
    let blocks = console_blocks(&lines);
    let mut out = String::with_capacity(md.len());
    for (i, line) in lines.iter().enumerate() {
        let next = lines.get(i + 1).copied().unwrap_or("");
        let in_block = blocks.iter().any(|&(start, end)| i > start && i < end);
        if in_block && line.is_empty() && (next.starts_with("$ ") || next.starts_with("```")) {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Whether `line` matches `pattern`, where each `[..]` in the pattern matches any run of
/// characters.
fn matches_mask(pattern: &str, line: &str) -> bool {
    let mut parts = pattern.split("[..]");
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = line.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.len() >= part.len() && rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// A blessed page keeps the masks of the page it replaces: a new line that an old masked line
/// (one with `[..]`) of the same console block matches is written as the old line.
fn keep_masks(old: &str, new: &str) -> String {
    let old_lines: Vec<&str> = old.lines().collect();
    let new_lines: Vec<&str> = new.lines().collect();
    let (old_blocks, new_blocks) = (console_blocks(&old_lines), console_blocks(&new_lines));
    let mut out: Vec<&str> = new_lines.clone();
    for (&(os, oe), &(ns, ne)) in old_blocks.iter().zip(&new_blocks) {
        let masked: Vec<&str> = old_lines[os..oe].iter().copied().filter(|l| l.contains("[..]")).collect();
        for line in &mut out[ns..ne] {
            if let Some(m) = masked.iter().find(|m| matches_mask(m, line)) {
                *line = m;
            }
        }
    }
    let mut s = out.join("\n");
    s.push('\n');
    s
}

#[test]
fn masks_match_any_run_and_pad_round_trips() {
    assert!(matches_mask("  time    plan [..] ms, lower [..] ms", "  time    plan 29.4 ms, lower 0.3 ms"));
    assert!(!matches_mask("  time    plan [..] ms, lower [..] ms", "  time    plan 29.4 ms, lower 0.3 s"));
    assert!(!matches_mask("abc", "abcd"));
    let page = "text\n```console\n$ ntile a\nout\n$ ntile b\n```\n";
    let padded = pad(page);
    assert_eq!(padded, "text\n```console\n$ ntile a\nout\n\n$ ntile b\n\n```\n");
    assert_eq!(unpad(&padded), page);
    let old = "```console\n$ x\ntime [..] ms\n```\n";
    assert_eq!(keep_masks(old, "```console\n$ x\ntime 3.2 ms\n```\n"), old);
}
