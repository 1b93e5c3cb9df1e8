//! JSON as ntile reads it (programs, looped or not, and hardware profiles): an object naming a
//! key twice is refused, nesting is bounded by [`MAX_DEPTH`] (not by serde_json's 128, which
//! a legal looped program of the text format's 64 loop levels exceeds), and a value of the
//! wrong type or range names the field it is in (`body[0].Loop.trips`).
//!
//! The nesting is measured on the text before anything is parsed, and deep texts are parsed
//! on a thread with a stack sized for [`MAX_DEPTH`], so no input overflows a stack.

use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeOwned, DeserializeSeed, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// The deepest nesting of arrays and objects read: a looped program nests about three levels
/// per loop, so this is room for well over the text format's 64 loop levels.
pub const MAX_DEPTH: usize = 1024;

/// Nesting up to which a text is parsed on the caller's thread.
const SHALLOW: usize = 64;

/// Stack of the thread that parses deeper texts (reserved, touched only as deep as needed).
const DEEP_STACK_BYTES: usize = 256 << 20;

/// Why a JSON text was refused: where, and what (with the field's path when it is known).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonError {
    /// Line (1-based).
    pub line: usize,
    /// Column (1-based).
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl JsonError {
    fn of(e: &serde_json::Error) -> Self {
        JsonError { line: e.line(), column: e.column().max(1), message: strip_position(&e.to_string()) }
    }
}

/// serde_json's message without the ` at line L column C` it appends (the error carries both).
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// The deepest nesting of arrays and objects in `text` (strings skipped), and where it first
/// passes [`MAX_DEPTH`].
fn depth(text: &str) -> (usize, Option<(usize, usize)>) {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    let (mut line, mut column) = (1usize, 0usize);
    for b in text.bytes() {
        if b == b'\n' {
            (line, column) = (line + 1, 0);
        } else {
            column += 1;
        }
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
                if depth > MAX_DEPTH {
                    return (deepest, Some((line, column)));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    (deepest, None)
}

/// Refuses an object that names a key twice, anywhere in the document.
struct NoDuplicates;

impl<'de> DeserializeSeed<'de> for NoDuplicates {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NoDuplicates {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(NoDuplicates)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(A::Error::custom(format!("the key `{key}` is given twice in one object")));
            }
            map.next_value_seed(NoDuplicates)?;
        }
        Ok(())
    }
}

/// Check, then parse on this thread (the text is known to nest at most [`MAX_DEPTH`] deep).
fn parse_here<T: DeserializeOwned>(text: &str) -> Result<T, JsonError> {
    let mut d = serde_json::Deserializer::from_str(text);
    d.disable_recursion_limit();
    NoDuplicates.deserialize(&mut d).map_err(|e| JsonError::of(&e))?;
    d.end().map_err(|e| JsonError::of(&e))?;
    let mut d = serde_json::Deserializer::from_str(text);
    d.disable_recursion_limit();
    let value: T = serde_path_to_error::deserialize(&mut d).map_err(|e| {
        let mut err = JsonError::of(e.inner());
        let path = e.path().to_string();
        if path != "." {
            err.message = format!("at `{path}`: {}", err.message);
        }
        err
    })?;
    d.end().map_err(|e| JsonError::of(&e))?;
    Ok(value)
}

/// Parse `text` as a `T`: duplicate keys refused, nesting bounded by [`MAX_DEPTH`], a bad
/// value naming its field (see the module doc).
pub fn from_str<T: DeserializeOwned + Send>(text: &str) -> Result<T, JsonError> {
    let (deepest, too_deep) = depth(text);
    if let Some((line, column)) = too_deep {
        return Err(JsonError {
            line,
            column,
            message: format!("arrays and objects nest more than {MAX_DEPTH} levels deep"),
        });
    }
    if deepest <= SHALLOW {
        return parse_here(text);
    }
    std::thread::scope(|s| {
        let worker = std::thread::Builder::new()
            .name("ntile-json".into())
            .stack_size(DEEP_STACK_BYTES)
            .spawn_scoped(s, || parse_here(text));
        match worker {
            Ok(w) => w.join().unwrap_or_else(|_| {
                Err(JsonError { line: 1, column: 1, message: "the JSON reader failed (a bug)".into() })
            }),
            Err(e) => Err(JsonError { line: 1, column: 1, message: format!("cannot start the JSON reader: {e}") }),
        }
    })
}

/// Which top-level keys an object has (others ignored): tells a program's JSON forms apart
/// without reading them.
#[derive(serde::Deserialize, Default)]
pub(crate) struct TopKeys {
    /// A BIR program's (looped or not).
    pub(crate) streams: Option<IgnoredAny>,
    /// A looped program's or function's.
    pub(crate) header: Option<IgnoredAny>,
}

/// The top-level keys of `text`, when it is a JSON object at all.
pub(crate) fn top_keys(text: &str) -> Option<TopKeys> {
    if depth(text).1.is_some() {
        return None;
    }
    let read = |text: &str| {
        let mut d = serde_json::Deserializer::from_str(text);
        d.disable_recursion_limit();
        serde::Deserialize::deserialize(&mut d).ok()
    };
    if depth(text).0 <= SHALLOW {
        return read(text);
    }
    std::thread::scope(|s| {
        let worker = std::thread::Builder::new().stack_size(DEEP_STACK_BYTES).spawn_scoped(s, || read(text));
        worker.ok().and_then(|w| w.join().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Loop {
        trips: u32,
        body: Vec<Loop>,
    }

    fn nested(levels: usize) -> String {
        let mut s = String::new();
        for _ in 0..levels {
            s += r#"{"trips": 2, "body": ["#;
        }
        s += &"]}".repeat(levels);
        s
    }

    #[test]
    fn deep_nesting_reads_up_to_the_limit_and_is_refused_past_it() {
        // 200 loops nest 400 levels: past serde_json's default limit of 128.
        let l: Loop = from_str(&nested(200)).unwrap();
        let mut depth_seen = 0;
        let mut at = &l;
        while let Some(inner) = at.body.first() {
            depth_seen += 1;
            at = inner;
        }
        assert_eq!(depth_seen, 199);
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        let e = from_str::<serde_json::Value>(&deep).unwrap_err();
        assert_eq!((e.line, e.column), (1, MAX_DEPTH + 1));
        assert_eq!(e.message, "arrays and objects nest more than 1024 levels deep");
        // Brackets inside strings do not count.
        let text = format!("{{\"s\": \"{}\"}}", "[".repeat(5000));
        assert!(from_str::<serde_json::Value>(&text).is_ok());
    }

    #[test]
    fn duplicate_keys_are_refused_where_they_are() {
        let e = from_str::<serde_json::Value>("{\"a\": 1,\n \"b\": {\"c\": 1, \"c\": 2}}").unwrap_err();
        assert_eq!(e.message, "the key `c` is given twice in one object");
        assert_eq!(e.line, 2);
        assert!(from_str::<serde_json::Value>(r#"[{"c": 1}, {"c": 2}]"#).is_ok());
    }

    #[test]
    fn a_bad_value_names_its_field() {
        let e = from_str::<Loop>(r#"{"trips": 2, "body": [{"trips": 4294967296, "body": []}]}"#).unwrap_err();
        assert!(e.message.starts_with("at `body[0].trips`: invalid value: integer `4294967296`"), "{}", e.message);
        let e = from_str::<Loop>(r#"{"trips": 2}"#).unwrap_err();
        assert_eq!(e.message, "missing field `body`");
    }
}
