//! Exact multilinear fitting of JSON values: given the same document at the `2^d` corners of a
//! box of integer points, predict it at any other point, or refuse.
//!
//! Every corner must have the same *shape*: the same keys, the same array lengths, the same
//! strings, booleans and nulls. Only numbers may differ, and each is fitted on its own by the
//! multilinear polynomial through the corners (degree at most 1 in each coordinate):
//! `v(p) = sum_c v_c * prod_i (p_i if c_i = 1 else 1 - p_i)`, where corner `c` has coordinate
//! `c_i in {0, 1}`. With integer corner values and integer points the arithmetic stays in
//! integers (`i128`), so the prediction is exact. Floating-point numbers must be equal at
//! every corner (they are copied); one that differs is refused.
//!
//! The fit is checked: each validation point (a document at another point, e.g. `x = 2`)
//! must equal the prediction exactly, so a number that is not multilinear (a quadratic count,
//! a rotation whose phase changes) is refused rather than guessed.

use std::fmt;

use serde_json::{Map, Number, Value};

/// Why a fit was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FitError {
    /// Limit: the documents differ in something other than a number (user-visible as "the
    /// program's structure changes with the shape").
    #[error("the structure differs at `{path}` between documents 0 and {index}: {what}")]
    Shape {
        /// Where, as a JSON path.
        path: String,
        /// The first document that differs from document 0 there.
        index: usize,
        /// What differs ("here": in document 0, "there": in document `index`).
        what: String,
    },
    /// Limit: a number is not multilinear in the coordinates (a validation point disagrees).
    #[error("`{path}` is not multilinear: at {point:?} it is {actual}, the fit of the corners predicts {predicted}")]
    NotMultilinear {
        /// Where, as a JSON path.
        path: String,
        /// The validation point.
        point: Vec<i64>,
        /// The value found there.
        actual: String,
        /// The value the corners predict.
        predicted: String,
    },
    /// Limit: the predicted number is outside the 64-bit integers.
    #[error("`{path}` would be {value}, outside the 64-bit integers")]
    Overflow {
        /// Where, as a JSON path.
        path: String,
        /// The predicted value.
        value: i128,
    },
    /// Bug: the caller gave a number of corners that is not `2^d` for its points' `d`.
    #[error("a fit over {dims} coordinates needs {} corners, not {corners}", 1usize << dims)]
    Corners {
        /// Coordinates of the points.
        dims: usize,
        /// Corners given.
        corners: usize,
    },
}

/// One step of a JSON path.
enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

/// A JSON path for messages (`streams[3][0].Loop.trips`).
struct Path<'a>(Vec<Seg<'a>>);

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            match s {
                Seg::Key(k) if i == 0 => write!(f, "{k}")?,
                Seg::Key(k) => write!(f, ".{k}")?,
                Seg::Index(j) => write!(f, "[{j}]")?,
            }
        }
        Ok(())
    }
}

/// A document at a point other than a corner, to check the fit against.
pub struct Check<'a> {
    /// The point (one coordinate per fitted dimension).
    pub point: &'a [i64],
    /// The document there.
    pub value: &'a Value,
}

/// Fit `corners` (corner `c` at the point whose coordinate `i` is bit `i` of `c`), check the
/// fit at every `checks` point, and predict the document at `at`.
pub fn fit(corners: &[&Value], checks: &[Check<'_>], at: &[i64]) -> Result<Value, FitError> {
    let dims = at.len();
    if dims >= usize::BITS as usize || corners.len() != 1usize << dims || checks.iter().any(|c| c.point.len() != dims) {
        return Err(FitError::Corners { dims, corners: corners.len() });
    }
    let mut points: Vec<&[i64]> = checks.iter().map(|c| c.point).collect();
    points.push(at);
    let weights: Vec<Vec<i128>> = points.iter().map(|p| weights(p)).collect();
    let mut f = Fitter { weights, path: Path(Vec::new()) };
    let mut docs: Vec<&Value> = corners.to_vec();
    docs.extend(checks.iter().map(|c| c.value));
    f.value(&docs, corners.len(), checks)
}

/// The weight of each corner at point `p`: `prod_i (p_i if c_i else 1 - p_i)`.
fn weights(p: &[i64]) -> Vec<i128> {
    (0..1usize << p.len())
        .map(|c| {
            p.iter()
                .enumerate()
                .map(|(i, &x)| if c >> i & 1 == 1 { i128::from(x) } else { 1 - i128::from(x) })
                .product()
        })
        .collect()
}

struct Fitter<'a> {
    /// Corner weights of each check point, then of the target point.
    weights: Vec<Vec<i128>>,
    path: Path<'a>,
}

impl<'a> Fitter<'a> {
    fn shape(&self, index: usize, what: impl Into<String>) -> FitError {
        FitError::Shape { path: self.path.to_string(), index, what: what.into() }
    }

    /// Fit one value: `docs` holds the corners, then the checks.
    fn value(&mut self, docs: &[&'a Value], corners: usize, checks: &[Check<'_>]) -> Result<Value, FitError> {
        let first = docs[0];
        match first {
            Value::Null | Value::Bool(_) | Value::String(_) => {
                if let Some((i, other)) = docs.iter().enumerate().find(|(_, d)| **d != first) {
                    return Err(self.shape(i, format!("{first} here, {other} there")));
                }
                Ok(first.clone())
            }
            Value::Number(_) => self.number(docs, corners, checks),
            Value::Array(items) => {
                let mut lists = Vec::with_capacity(docs.len());
                for (i, d) in docs.iter().enumerate() {
                    match d {
                        Value::Array(a) if a.len() == items.len() => lists.push(a),
                        Value::Array(a) => {
                            return Err(self.shape(i, format!("{} items here, {} there", items.len(), a.len())))
                        }
                        other => return Err(self.shape(i, format!("an array here, {} there", kind(other)))),
                    }
                }
                let mut out = Vec::with_capacity(items.len());
                let mut column = Vec::with_capacity(docs.len());
                for j in 0..items.len() {
                    column.clear();
                    column.extend(lists.iter().map(|l| &l[j]));
                    self.path.0.push(Seg::Index(j));
                    out.push(self.value(&column, corners, checks)?);
                    self.path.0.pop();
                }
                Ok(Value::Array(out))
            }
            Value::Object(map) => {
                let mut maps = Vec::with_capacity(docs.len());
                for (i, d) in docs.iter().enumerate() {
                    match d {
                        Value::Object(m) if m.len() == map.len() && m.keys().eq(map.keys()) => maps.push(m),
                        Value::Object(m) => {
                            let keys = |m: &Map<String, Value>| m.keys().cloned().collect::<Vec<_>>().join(", ");
                            return Err(self.shape(i, format!("keys {{{}}} here, {{{}}} there", keys(map), keys(m))));
                        }
                        other => return Err(self.shape(i, format!("an object here, {} there", kind(other)))),
                    }
                }
                let mut out = Map::new();
                let mut column = Vec::with_capacity(docs.len());
                for key in map.keys() {
                    column.clear();
                    column.extend(maps.iter().filter_map(|m| m.get(key)));
                    self.path.0.push(Seg::Key(key));
                    out.insert(key.clone(), self.value(&column, corners, checks)?);
                    self.path.0.pop();
                }
                Ok(Value::Object(out))
            }
        }
    }

    fn number(&mut self, docs: &[&'a Value], corners: usize, checks: &[Check<'_>]) -> Result<Value, FitError> {
        let mut ints = Vec::with_capacity(docs.len());
        for (i, d) in docs.iter().enumerate() {
            match d {
                Value::Number(n) => match n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from)) {
                    Some(v) => ints.push(v),
                    None => match docs.iter().position(|o| o != d) {
                        None => return Ok((*d).clone()),
                        Some(j) => return Err(self.shape(j, format!("the non-integer {n} differs between documents"))),
                    },
                },
                other => return Err(self.shape(i, format!("a number here, {} there", kind(other)))),
            }
        }
        let (at_corners, at_checks) = ints.split_at(corners);
        let predict = |w: &[i128]| -> Option<i128> {
            w.iter().zip(at_corners).try_fold(0i128, |acc, (w, v)| acc.checked_add(w.checked_mul(*v)?))
        };
        let overflow = |path: &Path<'_>| FitError::Overflow { path: path.to_string(), value: i128::MAX };
        for (j, check) in checks.iter().enumerate() {
            let predicted = predict(&self.weights[j]).ok_or_else(|| overflow(&self.path))?;
            if predicted != at_checks[j] {
                return Err(FitError::NotMultilinear {
                    path: self.path.to_string(),
                    point: check.point.to_vec(),
                    actual: at_checks[j].to_string(),
                    predicted: predicted.to_string(),
                });
            }
        }
        let target = self.weights.last().map(|w| predict(w)).unwrap_or(Some(at_corners[0]));
        let v = target.ok_or_else(|| overflow(&self.path))?;
        if let Ok(u) = u64::try_from(v) {
            Ok(Value::Number(u.into()))
        } else if let Ok(i) = i64::try_from(v) {
            Ok(Value::Number(Number::from(i)))
        } else {
            Err(FitError::Overflow { path: self.path.to_string(), value: v })
        }
    }
}

/// The kind of a JSON value, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The first number of `doc` above `limit` whose path ends in one of `keys`, with its path:
/// to name the field when a fitted document does not deserialize (a count past `u32`).
pub fn first_above(doc: &Value, limit: u64, keys: &[&str]) -> Option<(String, u64)> {
    fn walk<'a>(v: &'a Value, path: &mut Path<'a>, limit: u64, keys: &[&str]) -> Option<(String, u64)> {
        match v {
            Value::Number(n) => {
                let last = match path.0.last() {
                    Some(Seg::Key(k)) => Some(*k),
                    _ => None,
                };
                let big = n.as_u64().filter(|&u| u > limit)?;
                last.filter(|k| keys.contains(k)).map(|_| (path.to_string(), big))
            }
            Value::Array(items) => items.iter().enumerate().find_map(|(j, item)| {
                path.0.push(Seg::Index(j));
                let found = walk(item, path, limit, keys);
                path.0.pop();
                found
            }),
            Value::Object(map) => map.iter().find_map(|(k, item)| {
                path.0.push(Seg::Key(k));
                let found = walk(item, path, limit, keys);
                path.0.pop();
                found
            }),
            Value::Null | Value::Bool(_) | Value::String(_) => None,
        }
    }
    walk(doc, &mut Path(Vec::new()), limit, keys)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `f(x, y)` evaluated into a document with a fixed structure.
    fn doc(x: i64, y: i64, f: impl Fn(i64, i64) -> i64) -> Value {
        json!({"name": "gemm", "loops": [{"trips": f(x, y), "step": [4096, x - 3]}], "flag": true, "scale": 0.5})
    }

    #[test]
    fn multilinear_numbers_are_predicted_exactly() {
        let f = |x: i64, y: i64| 7 * x * y - 3 * x + 11 * y + 5;
        let corners = [doc(0, 0, f), doc(1, 0, f), doc(0, 1, f), doc(1, 1, f)];
        let refs: Vec<&Value> = corners.iter().collect();
        let check = doc(2, 3, f);
        let got = fit(&refs, &[Check { point: &[2, 3], value: &check }], &[1000, 31]).unwrap();
        assert_eq!(got, doc(1000, 31, f));
        // Negative results and results past i64 but within u64 keep their value.
        let corners = [json!(0), json!(4_000_000_000_000_000_000u64)];
        let refs: Vec<&Value> = corners.iter().collect();
        assert_eq!(fit(&refs, &[], &[4]).unwrap(), json!(16_000_000_000_000_000_000u64));
        assert_eq!(fit(&[&json!(5), &json!(3)], &[], &[10]).unwrap(), json!(-15));
    }

    #[test]
    fn a_quadratic_number_is_refused_naming_it() {
        let f = |x: i64, y: i64| x * x + y;
        let corners = [doc(0, 0, f), doc(1, 0, f), doc(0, 1, f), doc(1, 1, f)];
        let refs: Vec<&Value> = corners.iter().collect();
        let check = doc(2, 0, f);
        let e = fit(&refs, &[Check { point: &[2, 0], value: &check }], &[9, 9]).unwrap_err();
        assert_eq!(
            e,
            FitError::NotMultilinear {
                path: "loops[0].trips".into(),
                point: vec![2, 0],
                actual: "4".into(),
                predicted: "2".into()
            }
        );
    }

    #[test]
    fn a_shape_mismatch_is_refused_naming_it() {
        let a = json!({"streams": [[1, 2], [3]], "kind": "pe"});
        let b = json!({"streams": [[1, 2, 4], [3]], "kind": "pe"});
        let e = fit(&[&a, &b], &[], &[5]).unwrap_err();
        assert_eq!(e, FitError::Shape { path: "streams[0]".into(), index: 1, what: "2 items here, 3 there".into() });
        let c = json!({"streams": [[1, 2], [3]], "kind": "act"});
        let e = fit(&[&a, &c], &[], &[5]).unwrap_err();
        assert_eq!(e, FitError::Shape { path: "kind".into(), index: 1, what: "\"pe\" here, \"act\" there".into() });
        let d = json!({"streams": [[1, 2], [3]], "other": "pe"});
        assert!(matches!(fit(&[&a, &d], &[], &[5]), Err(FitError::Shape { .. })));
        let e = fit(&[&json!({"s": 0.5}), &json!({"s": 0.25})], &[], &[5]).unwrap_err();
        assert_eq!(
            e,
            FitError::Shape {
                path: "s".into(),
                index: 1,
                what: "the non-integer 0.5 differs between documents".into()
            }
        );
        assert_eq!(fit(&[&a], &[], &[5]), Err(FitError::Corners { dims: 1, corners: 1 }));
    }

    #[test]
    fn a_result_outside_64_bits_is_refused() {
        let e = fit(&[&json!(0), &json!(u64::MAX)], &[], &[2]).unwrap_err();
        assert_eq!(e, FitError::Overflow { path: String::new(), value: 2 * i128::from(u64::MAX) });
    }

    #[test]
    fn the_first_big_number_is_found_by_key() {
        let d = json!({"a": [{"value": 3}, {"value": 5_000_000_000u64}], "trips": 6_000_000_000u64});
        assert_eq!(first_above(&d, u64::from(u32::MAX), &["value"]), Some(("a[1].value".into(), 5_000_000_000)));
        assert_eq!(first_above(&d, u64::from(u32::MAX), &["nothing"]), None);
    }
}
