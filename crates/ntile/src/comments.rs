//! Keeping a file's comments through `ntile fmt`: each comment is attached to a line of code
//! of the source (a comment on its own line to the next line of code, a comment after code to
//! that line) and printed back beside the canonical text of the same entity.
//!
//! The canonical printers know nothing of comments; the parsers' source maps say which source
//! line each printed line came from. A comment whose line has no printed counterpart (a
//! comment after the last line of code, or one on a line the printer does not reproduce) is
//! printed at the end, so no comment is ever dropped.

use std::collections::HashMap;

use penguin::text::lexer::{numbered_lines, split_comment};

/// The comments attached to one source line of code.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Attached {
    /// Whole-line comments just above it, each as written after its `;`.
    above: Vec<String>,
    /// The comment after its code.
    after: Option<String>,
}

/// A source's comments by the line of code they belong to, the first word of every line of
/// code, and the comments after the last line of code.
struct Comments {
    by_line: HashMap<usize, Attached>,
    first_words: Vec<(usize, String)>,
    tail: Vec<String>,
}

fn first_word(code: &str) -> String {
    code.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
}

fn collect(source: &str) -> Comments {
    let mut by_line: HashMap<usize, Attached> = HashMap::new();
    let mut first_words = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    for (n, raw) in numbered_lines(source) {
        let (code, comment) = split_comment(raw);
        if code.trim().is_empty() {
            pending.extend(comment.map(str::to_string));
            continue;
        }
        first_words.push((n, first_word(code)));
        if !pending.is_empty() || comment.is_some() {
            let a = by_line.entry(n).or_default();
            a.above.append(&mut pending);
            a.after = comment.map(str::to_string);
        }
    }
    Comments { by_line, first_words, tail: pending }
}

/// The printed lines, each with the source line it came from when the source map knows it,
/// with the source's comments put back. A printed line with no known source line is matched
/// to an unused source line of code that starts with the same word (the header lines of a
/// `.pir`: `kernel`, `inputs`, ...).
pub fn with_comments(source: &str, printed: Vec<(Option<usize>, String)>) -> String {
    let mut c = collect(source);
    let mut used: Vec<bool> = vec![false; c.first_words.len()];
    let index: HashMap<usize, usize> = c.first_words.iter().enumerate().map(|(i, (n, _))| (*n, i)).collect();
    for (line, _) in &printed {
        if let Some(i) = line.and_then(|l| index.get(&l)) {
            used[*i] = true;
        }
    }
    let mut out = String::new();
    for (line, text) in printed {
        let line = line.or_else(|| {
            let word = first_word(&text);
            let i = (0..c.first_words.len()).find(|&i| !used[i] && c.first_words[i].1 == word)?;
            used[i] = true;
            Some(c.first_words[i].0)
        });
        let attached = line.and_then(|l| c.by_line.remove(&l)).unwrap_or_default();
        for a in &attached.above {
            out += &format!(";{a}\n");
        }
        match attached.after {
            Some(after) => out += &format!("{text} ;{after}\n"),
            None => out += &format!("{text}\n"),
        }
    }
    // Whatever found no printed line, in source order, then the comments after the code.
    let mut left: Vec<(usize, Attached)> = c.by_line.into_iter().collect();
    left.sort_by_key(|(n, _)| *n);
    for (_, a) in left {
        for s in a.above.iter().chain(a.after.iter()) {
            out += &format!(";{s}\n");
        }
    }
    for s in &c.tail {
        out += &format!(";{s}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_attach_to_the_next_line_of_code_or_their_own() {
        let src = "; head\nkernel k ; name\n\n; about t0\n;   indented\ntensor t0 x\n; tail\n";
        let printed = vec![(None, "kernel k".to_string()), (Some(6), "tensor t0 y".to_string())];
        assert_eq!(
            with_comments(src, printed),
            "; head\nkernel k ; name\n; about t0\n;   indented\ntensor t0 y\n; tail\n"
        );
    }

    #[test]
    fn a_comment_without_a_printed_line_is_kept_at_the_end() {
        let src = "kernel k\n; lost\ngone line ; here\n";
        let printed = vec![(None, "kernel k".to_string())];
        assert_eq!(with_comments(src, printed), "kernel k\n; lost\n; here\n");
    }
}
