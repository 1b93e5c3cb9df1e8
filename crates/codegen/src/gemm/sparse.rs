//! A structured-sparse A compressed for the PE's sparse matmul: kept values by hardware
//! group and their packed 4-bit tags (the host side of the sparse path).

use penguin::{SparsityPattern, SPARSE_GROUP_KEPT, SPARSE_TAGS_PER_WORD};

use crate::error::CodegenError;

/// A compressed `N:M`-sparse A in the PE's sparse layout (see `MatMultSparseData`):
/// per row, the kept values of every hardware group of `G = 4 x CR` dense columns along K,
/// and their positions inside the group.
///
/// Layout: `values` and `tags` are row-major `[M, K' = 4 ceil(K / G)]`. Group `g` of row `i`
/// (dense columns `g*G .. g*G + G`) owns compressed columns `4g .. 4g + 4`; column `4g + j`
/// holds the `j`-th kept value (in increasing column order) and its tag is its column inside
/// the group (`0 .. G`, 4 bits). Groups with fewer than 4 non-zeros are filled with zeros
/// tagged with the first unused positions, so every tag in a group is distinct. The kernel's
/// `a` is [`SparseA::stationary_values`], the values transposed to the stationary layout
/// `[K', M]` (the host lays the compressed A out as the PE reads it, so each partition of a
/// stationary load is one contiguous run); its `a_tags` is [`SparseA::packed_tags`], the tags
/// in the same layout, `[K', ceil(M / 4)]`, packed four to a 16-bit word.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseA {
    /// Rows of A.
    pub rows: u64,
    /// Dense K.
    pub k: u64,
    /// The pattern.
    pub pattern: SparsityPattern,
    /// Kept values, `[rows, K']`.
    pub values: Vec<f32>,
    /// Positions inside the hardware group, `[rows, K']`.
    pub tags: Vec<u8>,
}

impl SparseA {
    /// Compressed columns per row (`K'`): 4 per hardware group of `4 x CR` dense columns.
    pub fn cols(k: u64, pattern: SparsityPattern) -> u64 {
        k.div_ceil(u64::from(pattern.group_rows())) * u64::from(SPARSE_GROUP_KEPT)
    }

    /// The shape of the packed tag tensor `a_tags`: `[K', ceil(rows / 4)]` 16-bit words.
    pub fn tags_shape(rows: u64, k: u64, pattern: SparsityPattern) -> [u64; 2] {
        [Self::cols(k, pattern), rows.div_ceil(u64::from(SPARSE_TAGS_PER_WORD))]
    }

    /// Compress a row-major `[rows, k]` A, refusing one that breaks the pattern with the first
    /// offending row and K group (a group of the user's pattern, `pattern.m` columns).
    pub fn compress(a: &[f32], rows: u64, k: u64, pattern: SparsityPattern) -> Result<SparseA, CodegenError> {
        let (n, m) = (pattern.n as usize, pattern.m as usize);
        let (group, kept_per) = (pattern.group_rows() as usize, SPARSE_GROUP_KEPT as usize);
        let cols = Self::cols(k, pattern) as usize;
        let mut values = vec![0.0f32; rows as usize * cols];
        let mut tags = vec![0u8; rows as usize * cols];
        for i in 0..rows as usize {
            let row = &a[i * k as usize..(i + 1) * k as usize];
            for (g, part) in row.chunks(m).enumerate() {
                let nonzeros = part.iter().filter(|&&v| v != 0.0).count();
                if nonzeros > n {
                    let first = (g * m) as u64;
                    return Err(CodegenError::NotSparse {
                        pattern,
                        row: i as u64,
                        group: g as u64,
                        first,
                        end: first + part.len() as u64,
                        nonzeros: nonzeros as u32,
                    });
                }
            }
            // Every supported pattern keeps at most 4 of each hardware group once its own
            // groups hold (1:2 and 2:4 tile the group of 8 in 4 and 2 of their groups).
            for (g, part) in row.chunks(group).enumerate() {
                let kept: Vec<usize> = (0..part.len()).filter(|&j| part[j] != 0.0).collect();
                let mut positions = kept.clone();
                positions.extend((0..group).filter(|j| !kept.contains(j)).take(kept_per.saturating_sub(kept.len())));
                positions.truncate(kept_per);
                positions.sort_unstable();
                for (j, &pos) in positions.iter().enumerate() {
                    let at = i * cols + g * kept_per + j;
                    values[at] = part.get(pos).copied().unwrap_or(0.0);
                    tags[at] = pos as u8;
                }
            }
        }
        Ok(SparseA { rows, k, pattern, values, tags })
    }

    /// The shape of the kernel's value tensor `a`: `[K', rows]`.
    pub fn values_shape(rows: u64, k: u64, pattern: SparsityPattern) -> [u64; 2] {
        [Self::cols(k, pattern), rows]
    }

    /// The kept values as the kernel reads them: `[K', rows]` row-major, compressed row `c`
    /// holding column `c` of every row of A.
    pub fn stationary_values(&self) -> Vec<f32> {
        let (rows, cols) = (self.rows as usize, Self::cols(self.k, self.pattern) as usize);
        let mut out = vec![0.0f32; rows * cols];
        for i in 0..rows {
            for c in 0..cols {
                out[c * rows + i] = self.values[i * cols + c];
            }
        }
        out
    }

    /// The tag tensor as the kernel reads it: `[K', ceil(rows / 4)]` row-major 16-bit words,
    /// the tag of A's row `i` at compressed column `c` in nibble `i % 4` (least significant
    /// first) of word `[c, i / 4]`: the tags of one compressed stationary row `c` side by
    /// side, four columns of the stationary tile to a word.
    pub fn packed_tags(&self) -> Vec<u16> {
        let cols = Self::cols(self.k, self.pattern) as usize;
        let per = SPARSE_TAGS_PER_WORD as usize;
        let words = (self.rows as usize).div_ceil(per);
        let mut packed = vec![0u16; cols * words];
        for i in 0..self.rows as usize {
            for c in 0..cols {
                packed[c * words + i / per] |= u16::from(self.tags[i * cols + c] & 0xf) << (4 * (i % per));
            }
        }
        packed
    }

    /// The dense `[rows, k]` matrix this represents.
    pub fn decompress(&self) -> Vec<f32> {
        let (group, kept_per) = (self.pattern.group_rows() as usize, SPARSE_GROUP_KEPT as usize);
        let cols = Self::cols(self.k, self.pattern) as usize;
        let k = self.k as usize;
        let mut dense = vec![0.0f32; self.rows as usize * k];
        for i in 0..self.rows as usize {
            for c in 0..cols {
                let col = c / kept_per * group + usize::from(self.tags[i * cols + c]);
                if col < k {
                    dense[i * k + col] += self.values[i * cols + c];
                }
            }
        }
        dense
    }
}
