//! The eight-value searches of VectorE (`nki.isa.max8`, `nc_find_index8`,
//! `nc_match_replace8`): see `penguin::Top8Data`.

use bir::HwAp;
use penguin::Top8Mode;

use super::{Cx, Machine};
use crate::error::SimError;

/// Values found or taken per partition.
const EIGHT: usize = penguin::TOP8_VALUES as usize;

impl Machine {
    /// One `top8` instruction: each partition's source elements read as fp32 in their
    /// row-major order, then searched as `mode` says.
    pub(super) fn top8(
        &mut self,
        cx: &mut Cx<'_>,
        (mode, value): (Top8Mode, f64),
        dst: &HwAp,
        src: &HwAp,
        vals: Option<&HwAp>,
        idx: Option<&HwAp>,
    ) -> Result<(), SimError> {
        let at = cx.at;
        let parts = src.num_partitions.max(1) as usize;
        let (_, x) = self.read_f32(cx, src)?;
        let per = x.len() / parts;
        let wanted = match vals {
            Some(v) => Some(self.read_f32(cx, v)?.1),
            None => None,
        };
        let bad = |what: &str| SimError::BadOperand { at, detail: format!("{mode}: {what}") };
        match mode {
            Top8Mode::Max8 => {
                let mut out = Vec::with_capacity(parts * EIGHT);
                for row in x.chunks(per) {
                    out.extend(largest8(row));
                }
                let dw = self.walk(at, dst)?;
                if dw.elems as usize != out.len() {
                    return Err(bad("the destination is not 8 values per partition"));
                }
                self.write_f32(cx, &dw, &out);
            }
            Top8Mode::FindIndex8 | Top8Mode::MatchReplace8 => {
                let wanted = wanted.ok_or_else(|| bad("no values to find"))?;
                if wanted.len() != parts * EIGHT {
                    return Err(bad("the values are not 8 per partition"));
                }
                let replace = mode == Top8Mode::MatchReplace8;
                let (mut out, mut positions) = (x.clone(), Vec::with_capacity(parts * EIGHT));
                for (p, row) in x.chunks(per).enumerate() {
                    let found = find8(row, &wanted[p * EIGHT..(p + 1) * EIGHT], replace);
                    for &j in found.iter().flatten() {
                        out[p * per + j] = value as f32;
                    }
                    positions.extend(found.iter().map(|j| j.map_or(u32::MAX, |j| j as u32)));
                }
                let (index_dst, data_dst) = if replace { (idx, Some(dst)) } else { (Some(dst), None) };
                if let Some(d) = data_dst {
                    let dw = self.walk(at, d)?;
                    if dw.elems as usize != out.len() {
                        return Err(bad("the destination is not the source's shape"));
                    }
                    self.write_f32(cx, &dw, &out);
                }
                if let Some(i) = index_dst {
                    let iw = self.walk(at, i)?;
                    if iw.elems as usize != positions.len() {
                        return Err(bad("the indices are not 8 per partition"));
                    }
                    self.write_bits(cx, &iw, &positions);
                }
            }
        }
        Ok(())
    }
}

/// The 8 largest of `row` in descending order (NaN, compared as the largest, first; fewer
/// than 8 elements cannot occur: the verifiers require at least 8).
fn largest8(row: &[f32]) -> [f32; EIGHT] {
    let mut top = [f32::NEG_INFINITY; EIGHT];
    // Values compare as numbers (a stable sort: equal ones, -0 and +0 among them, keep their
    // order of appearance); NaN of either sign counts as the largest.
    let (nan, mut rest): (Vec<f32>, Vec<f32>) = row.iter().partition(|v| v.is_nan());
    rest.sort_by(|a, b| b.partial_cmp(a).unwrap_or(std::cmp::Ordering::Equal));
    for (t, v) in top.iter_mut().zip(nan.into_iter().chain(rest)) {
        *t = v;
    }
    top
}

/// The positions in `row` of `vals`' values: each the first element equal to it not taken by
/// an earlier value, taking the values in order (find_index8) or from the last (`reverse`,
/// match_replace8), as the ISA pairs a repeated value with successive occurrences.
fn find8(row: &[f32], vals: &[f32], reverse: bool) -> [Option<usize>; EIGHT] {
    let mut found = [None; EIGHT];
    let mut taken = vec![false; row.len()];
    let order: Vec<usize> = if reverse { (0..EIGHT).rev().collect() } else { (0..EIGHT).collect() };
    for i in order {
        let j = row.iter().enumerate().position(|(j, &v)| !taken[j] && v == vals[i]);
        if let Some(j) = j {
            taken[j] = true;
        }
        found[i] = j;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_values_pair_with_successive_occurrences_in_each_modes_order() {
        // The ISA's example: data [1, 2, 3, 4, 8 x 7], vals [3, 8 x 7].
        let row: Vec<f32> = [1.0, 2.0, 3.0, 4.0].into_iter().chain([8.0; 7]).collect();
        let vals = [3.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0];
        let got = |reverse| find8(&row, &vals, reverse).map(|j| j.unwrap());
        assert_eq!(got(true), [2, 10, 9, 8, 7, 6, 5, 4]);
        assert_eq!(got(false), [2, 4, 5, 6, 7, 8, 9, 10]);
        assert_eq!(find8(&row, &[5.0; 8], false), [None; 8]);
    }

    #[test]
    fn the_largest_come_first_and_nan_counts_as_largest() {
        let row = [0.5, -1.0, f32::NAN, 7.0, 2.0, -0.0, 0.0, 3.0, 9.0, 1.0];
        let top = largest8(&row);
        assert!(top[0].is_nan());
        assert_eq!(&top[1..], &[9.0, 7.0, 3.0, 2.0, 1.0, 0.5, 0.0]);
    }
}
