//! [`Dims`]: the free dimensions of a hardware access pattern, inline when there is one.
//!
//! A GEMM's access patterns have one free dimension each (a tile row is contiguous), and a
//! large program has hundreds of thousands of them: keeping that one [`Dim`] inside the
//! [`HwAp`](super::HwAp) instead of in a heap block of its own saves an allocation per
//! operand and the fresh memory they fill. Two or more dimensions (and none) live in a
//! `Vec`. Either way a `Dims` reads as a `[Dim]` slice: it compares, hashes, prints
//! (`Debug`) and serializes as one, so only the construction sites see the type.

use std::fmt;
use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use penguin::Dim;

/// The free dimensions of an access pattern, outermost first (a `[Dim]` through `Deref`).
#[derive(Clone, Default)]
pub struct Dims(Repr);

#[derive(Clone)]
enum Repr {
    One(Dim),
    Many(Vec<Dim>),
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Many(Vec::new())
    }
}

impl Dims {
    /// No dimensions.
    pub const fn new() -> Self {
        Dims(Repr::Many(Vec::new()))
    }

    /// One dimension, inline.
    pub const fn one(d: Dim) -> Self {
        Dims(Repr::One(d))
    }

    /// The canonical form of a Penguin access pattern's free dimensions, as
    /// [`penguin::AccessPattern::canonical_free_indices`] gives it (unit dimensions dropped,
    /// contiguous neighbours merged unless the merged count would overflow; `[1, 1]` when
    /// nothing is left), built in place: lowering makes one per operand.
    pub fn canonical(free: &[Dim]) -> Self {
        let mut out = Dims::new();
        for d in free.iter().filter(|d| d.num != 1) {
            let merged = out.as_mut_slice().last_mut().and_then(|outer| {
                let contiguous = d.stride.checked_mul(i64::from(d.num)) == Some(outer.stride);
                let num = if contiguous { outer.num.checked_mul(d.num) } else { None };
                num.map(|num| (outer, num))
            });
            match merged {
                Some((outer, num)) => *outer = Dim::new(d.stride, num),
                None => out.push(*d),
            }
        }
        if out.is_empty() {
            out.push(Dim::new(1, 1));
        }
        out
    }

    /// Append an innermost dimension.
    pub fn push(&mut self, d: Dim) {
        match &mut self.0 {
            Repr::Many(v) if v.is_empty() => self.0 = Repr::One(d),
            Repr::Many(v) => v.push(d),
            Repr::One(first) => self.0 = Repr::Many(vec![*first, d]),
        }
    }

    /// The dimensions as a slice.
    pub fn as_slice(&self) -> &[Dim] {
        match &self.0 {
            Repr::One(d) => std::slice::from_ref(d),
            Repr::Many(v) => v,
        }
    }

    /// The dimensions as a mutable slice (their count cannot change through it).
    pub fn as_mut_slice(&mut self) -> &mut [Dim] {
        match &mut self.0 {
            Repr::One(d) => std::slice::from_mut(d),
            Repr::Many(v) => v,
        }
    }
}

impl Deref for Dims {
    type Target = [Dim];
    fn deref(&self) -> &[Dim] {
        self.as_slice()
    }
}

impl DerefMut for Dims {
    fn deref_mut(&mut self) -> &mut [Dim] {
        self.as_mut_slice()
    }
}

impl From<Vec<Dim>> for Dims {
    fn from(v: Vec<Dim>) -> Self {
        match v.as_slice() {
            [d] => Dims::one(*d),
            _ => Dims(Repr::Many(v)),
        }
    }
}

impl From<&[Dim]> for Dims {
    fn from(v: &[Dim]) -> Self {
        match v {
            [d] => Dims::one(*d),
            _ => Dims(Repr::Many(v.to_vec())),
        }
    }
}

impl From<Dims> for Vec<Dim> {
    fn from(d: Dims) -> Self {
        match d.0 {
            Repr::One(d) => vec![d],
            Repr::Many(v) => v,
        }
    }
}

impl FromIterator<Dim> for Dims {
    fn from_iter<I: IntoIterator<Item = Dim>>(iter: I) -> Self {
        let mut out = Dims::new();
        for d in iter {
            out.push(d);
        }
        out
    }
}

impl<'a> IntoIterator for &'a Dims {
    type Item = &'a Dim;
    type IntoIter = std::slice::Iter<'a, Dim>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl PartialEq for Dims {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Dims {}

impl PartialEq<Vec<Dim>> for Dims {
    fn eq(&self, other: &Vec<Dim>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl PartialEq<[Dim]> for Dims {
    fn eq(&self, other: &[Dim]) -> bool {
        self.as_slice() == other
    }
}

impl std::hash::Hash for Dims {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl fmt::Debug for Dims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl Serialize for Dims {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Dims {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<Dim>::deserialize(d).map(Dims::from)
    }
}

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasher, RandomState};

    use proptest::prelude::*;

    use super::*;

    fn dim() -> impl Strategy<Value = Dim> {
        let stride = prop_oneof![-3i64..70, Just(i64::MAX), Just(i64::MIN), Just(1 << 40)];
        let num = prop_oneof![0u32..9, Just(16), Just(64), Just(u32::MAX), Just(1 << 20)];
        (stride, num).prop_map(|(s, n)| Dim::new(s, n))
    }

    proptest! {
        /// `Dims::canonical` is Penguin's canonical form, dimension for dimension.
        #[test]
        fn canonical_matches_penguin(free in proptest::collection::vec(dim(), 0..6)) {
            let ap = penguin::AccessPattern { start_partition: 0, partitions: Dim::new(1, 1), offset: 0, free };
            prop_assert_eq!(Dims::canonical(&ap.free), ap.canonical_free_indices());
        }
    }

    #[test]
    fn canonical_merges_contiguous_dimensions() {
        // [8 x 4 contiguous] merges; a unit dim is dropped; a strided outer one stays.
        assert_eq!(Dims::canonical(&[Dim::new(4, 8), Dim::new(1, 4)]), vec![Dim::new(1, 32)]);
        assert_eq!(
            Dims::canonical(&[Dim::new(64, 2), Dim::new(9, 1), Dim::new(1, 4)]),
            vec![Dim::new(64, 2), Dim::new(1, 4)]
        );
        assert_eq!(Dims::canonical(&[Dim::new(5, 1)]), vec![Dim::new(1, 1)]);
    }

    #[test]
    fn one_dimension_is_inline_and_reads_as_a_slice() {
        assert_eq!(std::mem::size_of::<Dims>(), std::mem::size_of::<Vec<Dim>>());
        let (a, b) = (Dim::new(1, 8), Dim::new(8, 4));
        let one = Dims::from(vec![a]);
        assert!(matches!(one.0, Repr::One(d) if d == a));
        assert_eq!(one, vec![a]);
        let mut grown = Dims::new();
        grown.push(a);
        assert!(matches!(grown.0, Repr::One(_)));
        grown.push(b);
        assert_eq!(grown, vec![a, b]);
        assert_eq!(grown.len(), 2);
        assert_eq!([b, a].into_iter().collect::<Dims>().as_slice(), &[b, a]);
        assert_eq!(Vec::from(one.clone()), vec![a]);
        // Equal dims hash and print alike whichever way they are stored.
        let many = Dims(Repr::Many(vec![a]));
        assert_eq!(one, many);
        let h = RandomState::new();
        assert_eq!(h.hash_one(&one), h.hash_one(&many));
        assert_eq!(format!("{one:?}"), format!("{:?}", vec![a]));
        assert_eq!(serde_json::to_string(&one).unwrap(), serde_json::to_string(&vec![a]).unwrap());
        let back: Dims = serde_json::from_str(&serde_json::to_string(&grown).unwrap()).unwrap();
        assert_eq!(back, grown);
        let mut m = one;
        m[0].num = 3;
        assert_eq!(m.first().map(|d| d.num), Some(3));
    }
}
