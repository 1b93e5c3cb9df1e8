//! [`FreeDims`]: the free dimensions of an access pattern, a list of [`Dim`] that keeps a
//! single dimension inline.
//!
//! Almost every pattern a planner builds has one free dimension (a contiguous run per
//! partition, or a row window of an HBM matrix), and a large kernel holds a few hundred
//! thousand of them. As a `Vec<Dim>` each was a 16-byte heap allocation, made again by every
//! clone of an operand. `FreeDims` has the size of a `Vec<Dim>` (24 bytes): one dimension is
//! stored inline, none or several in a vector (which for none does not allocate), so a
//! one-dimension pattern never allocates. Keeping more dimensions inline would make every
//! operand, and so every instruction, larger, which costs more than the rare spill saves.
//!
//! It dereferences to `[Dim]` and compares, hashes, prints (`Debug`) and serializes as that
//! slice, so it reads like the vector it replaces; the representation is not observable.

use std::fmt;
use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Dim;

/// The free dimensions of an access pattern, outermost first (see the module
/// documentation): a list of [`Dim`] that stores a single dimension inline.
#[derive(Clone)]
pub struct FreeDims(Repr);

#[derive(Clone)]
enum Repr {
    /// Exactly one dimension.
    One(Dim),
    /// Any other number (an empty vector does not allocate).
    Many(Vec<Dim>),
}

impl FreeDims {
    /// No free dimensions.
    pub const fn new() -> Self {
        FreeDims(Repr::Many(Vec::new()))
    }

    /// One free dimension (no allocation).
    pub const fn one(d: Dim) -> Self {
        FreeDims(Repr::One(d))
    }

    /// The canonical form of free dimensions (what
    /// [`AccessPattern::canonical_free_indices`](super::AccessPattern::canonical_free_indices)
    /// returns): unit dimensions dropped, contiguous neighbours merged unless the merged count
    /// would overflow, `[1, 1]` when nothing is left. Built in place: BIR's lowering makes one
    /// per operand.
    pub fn canonical(free: &[Dim]) -> Self {
        let mut out = FreeDims::new();
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

    /// The dimensions as a slice.
    pub fn as_slice(&self) -> &[Dim] {
        match &self.0 {
            Repr::One(d) => std::slice::from_ref(d),
            Repr::Many(v) => v,
        }
    }

    /// The dimensions as a mutable slice.
    pub fn as_mut_slice(&mut self) -> &mut [Dim] {
        match &mut self.0 {
            Repr::One(d) => std::slice::from_mut(d),
            Repr::Many(v) => v,
        }
    }

    /// The dimensions in a vector.
    pub fn into_vec(self) -> Vec<Dim> {
        match self.0 {
            Repr::One(d) => vec![d],
            Repr::Many(v) => v,
        }
    }

    /// The representation for `v`: inline when it has one dimension.
    fn from_vec(v: Vec<Dim>) -> Self {
        match v.as_slice() {
            [d] => FreeDims::one(*d),
            _ => FreeDims(Repr::Many(v)),
        }
    }

    /// Take the dimensions out as a vector (spilling an inline one), leaving none.
    fn take_vec(&mut self) -> Vec<Dim> {
        match std::mem::replace(&mut self.0, Repr::Many(Vec::new())) {
            Repr::One(d) => vec![d],
            Repr::Many(v) => v,
        }
    }

    /// Append a dimension (innermost).
    pub fn push(&mut self, d: Dim) {
        if self.is_empty() {
            self.0 = Repr::One(d);
        } else {
            let mut v = self.take_vec();
            v.push(d);
            self.0 = Repr::Many(v);
        }
    }

    /// Insert a dimension at `index`; panics when `index > len`, as [`Vec::insert`] does.
    pub fn insert(&mut self, index: usize, d: Dim) {
        if self.is_empty() && index == 0 {
            self.0 = Repr::One(d);
        } else {
            let mut v = self.take_vec();
            v.insert(index, d);
            self.0 = Repr::Many(v);
        }
    }

    /// Remove and return the innermost dimension.
    pub fn pop(&mut self) -> Option<Dim> {
        match &mut self.0 {
            Repr::One(d) => {
                let d = *d;
                self.0 = Repr::Many(Vec::new());
                Some(d)
            }
            Repr::Many(v) => v.pop(),
        }
    }

    /// Keep the first `len` dimensions.
    pub fn truncate(&mut self, len: usize) {
        match &mut self.0 {
            Repr::One(_) if len == 0 => self.0 = Repr::Many(Vec::new()),
            Repr::One(_) => {}
            Repr::Many(v) => v.truncate(len),
        }
    }
}

impl Default for FreeDims {
    fn default() -> Self {
        FreeDims::new()
    }
}

impl Deref for FreeDims {
    type Target = [Dim];

    fn deref(&self) -> &[Dim] {
        self.as_slice()
    }
}

impl DerefMut for FreeDims {
    fn deref_mut(&mut self) -> &mut [Dim] {
        self.as_mut_slice()
    }
}

impl From<Vec<Dim>> for FreeDims {
    fn from(v: Vec<Dim>) -> Self {
        FreeDims::from_vec(v)
    }
}

impl From<&[Dim]> for FreeDims {
    fn from(dims: &[Dim]) -> Self {
        match dims {
            [d] => FreeDims::one(*d),
            _ => FreeDims(Repr::Many(dims.to_vec())),
        }
    }
}

impl<const N: usize> From<[Dim; N]> for FreeDims {
    fn from(dims: [Dim; N]) -> Self {
        FreeDims::from(&dims[..])
    }
}

impl From<FreeDims> for Vec<Dim> {
    fn from(f: FreeDims) -> Self {
        f.into_vec()
    }
}

impl FromIterator<Dim> for FreeDims {
    fn from_iter<I: IntoIterator<Item = Dim>>(iter: I) -> Self {
        let mut it = iter.into_iter();
        match (it.next(), it.next()) {
            (None, _) => FreeDims::new(),
            (Some(d), None) => FreeDims::one(d),
            (Some(a), Some(b)) => FreeDims(Repr::Many([a, b].into_iter().chain(it).collect())),
        }
    }
}

impl<'a> IntoIterator for &'a FreeDims {
    type Item = &'a Dim;
    type IntoIter = std::slice::Iter<'a, Dim>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl PartialEq for FreeDims {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for FreeDims {}

impl PartialEq<Vec<Dim>> for FreeDims {
    fn eq(&self, other: &Vec<Dim>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl PartialEq<[Dim]> for FreeDims {
    fn eq(&self, other: &[Dim]) -> bool {
        self.as_slice() == other
    }
}

impl PartialEq<FreeDims> for Vec<Dim> {
    fn eq(&self, other: &FreeDims) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl std::hash::Hash for FreeDims {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl fmt::Debug for FreeDims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl Serialize for FreeDims {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize(s)
    }
}

impl<'de> Deserialize<'de> for FreeDims {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<Dim>::deserialize(d).map(FreeDims::from_vec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(n: usize) -> Vec<Dim> {
        (0..n).map(|i| Dim::new(i as i64 + 1, i as u32 + 2)).collect()
    }

    /// Every operation agrees with the same operation on a `Vec<Dim>`, across the inline and
    /// spilled forms, including past the four free dimensions BIR allows.
    #[test]
    fn behaves_as_a_vector() {
        for n in 0..7 {
            let v = dims(n);
            let f = FreeDims::from(v.clone());
            assert_eq!(f, v);
            assert_eq!(f.len(), n);
            assert_eq!(f.iter().copied().collect::<FreeDims>(), f);
            assert_eq!(FreeDims::from(v.as_slice()), f);
            assert_eq!(f.clone().into_vec(), v);
            assert_eq!(format!("{f:?}"), format!("{v:?}"));
            let mut pushed = FreeDims::new();
            v.iter().for_each(|d| pushed.push(*d));
            assert_eq!(pushed, v);
            let mut inserted = FreeDims::new();
            v.iter().rev().for_each(|d| inserted.insert(0, *d));
            assert_eq!(inserted, v);
            for len in 0..=n + 1 {
                let (mut a, mut b) = (f.clone(), v.clone());
                a.truncate(len);
                b.truncate(len);
                assert_eq!(a, b);
                assert_eq!((a.pop(), a.clone()), (b.pop(), FreeDims::from(b)));
            }
            let mut m = f.clone();
            if let Some(d) = m.first_mut() {
                d.num = 99;
            }
            assert_eq!(m.first().map(|d| d.num), (n > 0).then_some(99));
        }
    }

    fn dim() -> impl proptest::strategy::Strategy<Value = Dim> {
        use proptest::prelude::*;
        let stride = prop_oneof![-3i64..70, Just(i64::MAX), Just(i64::MIN), Just(1 << 40)];
        let num = prop_oneof![0u32..9, Just(16), Just(64), Just(u32::MAX), Just(1 << 20)];
        (stride, num).prop_map(|(s, n)| Dim::new(s, n))
    }

    /// A dimension short enough to walk.
    fn small_dim() -> impl proptest::strategy::Strategy<Value = Dim> {
        use proptest::strategy::Strategy;
        (-3i64..70, 0u32..5).prop_map(|(s, n)| Dim::new(s, n))
    }

    /// The element offsets `dims` walks, outermost dimension first.
    fn walk(dims: &[Dim]) -> Vec<i64> {
        dims.iter().fold(vec![0], |outer, d| {
            outer.iter().flat_map(|&o| (0..i64::from(d.num)).map(move |k| o + k * d.stride)).collect()
        })
    }

    proptest::proptest! {
        /// The canonical form walks the same elements in the same order, has no unit
        /// dimension (unless it is the lone `[1, 1]`), and is what the access pattern's
        /// `canonical_free_indices` returns.
        #[test]
        fn canonical_walks_the_same_elements(
            free in proptest::collection::vec(small_dim(), 0..5),
        ) {
            let canon = FreeDims::canonical(&free);
            proptest::prop_assert_eq!(walk(&canon), walk(&free));
            proptest::prop_assert!(canon.len() == 1 || canon.iter().all(|d| d.num != 1), "{canon:?}");
            let free = FreeDims::from(free);
            let ap = super::super::AccessPattern { start_partition: 0, partitions: Dim::new(1, 1), offset: 0, free };
            proptest::prop_assert_eq!(canon, ap.canonical_free_indices());
        }

        /// Counts and strides at the ends of their ranges never overflow a merge.
        #[test]
        fn canonical_of_extreme_dimensions_merges_only_what_fits(free in proptest::collection::vec(dim(), 0..6)) {
            let canon = FreeDims::canonical(&free);
            let total = |d: &[Dim]| d.iter().try_fold(1u64, |n, d| n.checked_mul(u64::from(d.num)));
            proptest::prop_assert_eq!(total(&canon), total(&free));
        }
    }

    #[test]
    fn canonical_merges_contiguous_dimensions() {
        // [8 x 4 contiguous] merges; a unit dim is dropped; a strided outer one stays.
        assert_eq!(FreeDims::canonical(&[Dim::new(4, 8), Dim::new(1, 4)]), vec![Dim::new(1, 32)]);
        assert_eq!(
            FreeDims::canonical(&[Dim::new(64, 2), Dim::new(9, 1), Dim::new(1, 4)]),
            vec![Dim::new(64, 2), Dim::new(1, 4)]
        );
        assert_eq!(FreeDims::canonical(&[Dim::new(5, 1)]), vec![Dim::new(1, 1)]);
    }

    /// One dimension is stored inline, and the type is no larger than the vector it replaces.
    #[test]
    fn one_dimension_is_inline() {
        assert!(matches!(FreeDims::from(dims(1)).0, Repr::One(_)));
        let mut f = FreeDims::from(dims(2));
        f.truncate(1);
        assert_eq!(f, dims(1));
        assert_eq!(std::mem::size_of::<FreeDims>(), std::mem::size_of::<Vec<Dim>>());
    }
}
