//! The one CSV reader of `ntile sweep` and `ntile calibrate`: a header line naming the
//! columns, then rows of as many cells.
//!
//! What it accepts: a UTF-8 byte-order mark before the header; blank lines and lines starting
//! with `#` anywhere (skipped); cells separated by commas, with the spaces around them trimmed;
//! a cell in double quotes holding commas, spaces or quotes (`""` for a quote), as RFC 4180
//! writes it, on one line; trailing empty cells past the header's count (SCALE-Sim writes a
//! comma after the last column). What it refuses, naming the line: a column named twice
//! (case-insensitively), a row whose cell count is not the header's, an unclosed quote, text
//! after a closing quote.

use crate::error::CliError;

/// A CSV file read: its header and its rows, each with its line number (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    /// The header's line.
    pub header_line: usize,
    /// The column names, as written (trimmed).
    pub names: Vec<String>,
    /// Every row: its line and its cells, one per column.
    pub rows: Vec<(usize, Vec<String>)>,
}

impl Table {
    /// The index of the column named `name` (case-insensitively).
    pub fn column(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n.eq_ignore_ascii_case(name))
    }
}

/// Split one line into cells (see the module doc).
fn cells(line: &str, line_no: usize) -> Result<Vec<String>, CliError> {
    let bad = |why: &str| CliError::usage(format!("line {line_no}: {why}"));
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
            chars.next();
        }
        let mut cell = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        cell.push('"');
                    }
                    Some('"') => break,
                    Some(c) => cell.push(c),
                    None => return Err(bad("a quoted cell is not closed (a `\"` is missing)")),
                }
            }
            while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
                chars.next();
            }
            match chars.next() {
                None => {
                    out.push(cell);
                    return Ok(out);
                }
                Some(',') => out.push(cell),
                Some(c) => return Err(bad(&format!("`{c}` after a closing quote (expected `,`)"))),
            }
        } else {
            let mut ended = true;
            for c in chars.by_ref() {
                if c == ',' {
                    ended = false;
                    break;
                }
                if c == '"' {
                    return Err(bad("a `\"` inside an unquoted cell (quote the whole cell, doubling its quotes)"));
                }
                cell.push(c);
            }
            out.push(cell.trim().to_string());
            if ended {
                return Ok(out);
            }
        }
    }
}

/// Read a CSV text (see the module doc). `Ok(None)` when it has no header at all.
pub fn read(text: &str) -> Result<Option<Table>, CliError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut table: Option<Table> = None;
    for (idx, raw) in text.lines().enumerate() {
        let line_no = idx + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let mut row = cells(trimmed, line_no)?;
        let Some(t) = &mut table else {
            while row.len() > 1 && row.last().is_some_and(String::is_empty) {
                row.pop();
            }
            for (i, name) in row.iter().enumerate() {
                if name.is_empty() {
                    return Err(CliError::usage(format!("line {line_no}: column {} of the header has no name", i + 1)));
                }
                if row[..i].iter().any(|n| n.eq_ignore_ascii_case(name)) {
                    return Err(CliError::usage(format!("line {line_no}: column `{name}` appears twice")));
                }
            }
            table = Some(Table { header_line: line_no, names: row, rows: Vec::new() });
            continue;
        };
        while row.len() > t.names.len() && row.last().is_some_and(String::is_empty) {
            row.pop();
        }
        if row.len() != t.names.len() {
            return Err(CliError::usage(format!(
                "line {line_no}: {} cells, but the header has {} columns",
                row.len(),
                t.names.len()
            )));
        }
        t.rows.push((line_no, row));
    }
    Ok(table)
}

/// A cell as the reader reads it back: quoted when it holds a comma, a quote, a `#` or
/// surrounding spaces; `None` for a cell no line can hold (a line break).
pub fn escape(cell: &str) -> Option<String> {
    if cell.contains(['\n', '\r']) {
        return None;
    }
    if cell.contains([',', '"', '#']) || cell.trim() != cell {
        return Some(format!("\"{}\"", cell.replace('"', "\"\"")));
    }
    Some(cell.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_rows_quotes_and_a_bom() {
        let t = read("\u{feff}# c\nname, M ,k\n\n\"a, b\",1, 2\n\"say \"\"hi\"\"\" ,3,\n").unwrap().unwrap();
        assert_eq!(t.header_line, 2);
        assert_eq!(t.names, ["name", "M", "k"]);
        assert_eq!(t.column("m"), Some(1));
        assert_eq!(
            t.rows,
            vec![
                (4, vec!["a, b".to_string(), "1".into(), "2".into()]),
                (5, vec!["say \"hi\"".to_string(), "3".into(), String::new()]),
            ]
        );
        // Trailing empty cells past the header's count are dropped (SCALE-Sim's comma).
        let t = read("Layer, M, N, K,\nx, 1, 2, 3,\n").unwrap().unwrap();
        assert_eq!((t.names.len(), t.rows[0].1.len()), (4, 4));
        assert_eq!(read("# only\n\n").unwrap(), None);
    }

    #[test]
    fn bad_lines_are_named() {
        for (text, want) in [
            ("m,k,M\n", "line 1: column `M` appears twice"),
            ("m,,k\n", "line 1: column 2 of the header has no name"),
            ("m,k\n1,2,3\n", "line 2: 3 cells, but the header has 2 columns"),
            ("m,k\n\"1,2\n", "line 2: a quoted cell is not closed"),
            ("m,k\n\"1\"x,2\n", "line 2: `x` after a closing quote"),
            ("m,k\n1\"2,3\n", "line 2: a `\"` inside an unquoted cell"),
        ] {
            let e = read(text).unwrap_err();
            assert_eq!(e.code, crate::error::EXIT_USAGE);
            assert!(e.message.contains(want), "{text:?}: {}", e.message);
        }
    }

    #[test]
    fn escaped_cells_read_back() {
        for cell in ["plain", "a, b", "say \"hi\"", " padded ", "#not a comment", ""] {
            let line = format!("{},x", escape(cell).unwrap());
            let t = read(&format!("c,d\n{line}\n")).unwrap().unwrap();
            assert_eq!(t.rows[0].1[0], cell, "{line}");
        }
        assert_eq!(escape("two\nlines"), None);
    }
}
