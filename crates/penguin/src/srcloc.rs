//! Source locations: the side table that says which line of a producer's own source each
//! instruction came from (Cranelift's `srclocs`), such as `kernel.py:41` for an instruction
//! that an NKI kernel's line 41 asked for.
//!
//! A location is an opaque string the producer chooses; instructions without one have none.
//! The table is a side table of the [`Function`](crate::Function) (absent from the text and
//! the JSON when empty, so functions without locations read and print as before), printed
//! as `loc("kernel.py:41")` at the end of an instruction line, carried by the roll and
//! expansion of looped functions ([`crate::PirInst::loc`]) and by lowering into the BIR
//! program, so that errors and the timeline can name the line.
//!
//! Locations are shared strings (`Arc<str>`): a traced kernel's hundred thousand
//! instructions come from a few dozen lines, and each distinct line is stored once.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde::de::{Deserialize, Deserializer};
use serde::ser::{Serialize, SerializeSeq, Serializer};

use crate::entity::InstId;

/// A source location: an opaque, shared string such as `kernel.py:41`.
pub type SourceLoc = Arc<str>;

/// The source location of each instruction that has one, by instruction id.
///
/// Two tables are equal when they give every instruction the same location (how the
/// strings are shared, and trailing instructions without one, do not matter).
#[derive(Clone, Default)]
pub struct SourceLocs {
    locs: Vec<Option<SourceLoc>>,
}

impl SourceLocs {
    /// An empty table.
    pub fn new() -> Self {
        SourceLocs::default()
    }

    /// The location of an instruction, if it has one.
    pub fn get(&self, id: InstId) -> Option<&str> {
        self.locs.get(id.index()).and_then(|l| l.as_deref())
    }

    /// The shared location of an instruction, if it has one.
    pub fn get_shared(&self, id: InstId) -> Option<&SourceLoc> {
        self.locs.get(id.index()).and_then(Option::as_ref)
    }

    /// Give an instruction a location (`None` removes it).
    pub fn set(&mut self, id: InstId, loc: Option<SourceLoc>) {
        match loc {
            Some(loc) => {
                if self.locs.len() <= id.index() {
                    self.locs.resize(id.index() + 1, None);
                }
                self.locs[id.index()] = Some(loc);
            }
            None => {
                if let Some(slot) = self.locs.get_mut(id.index()) {
                    *slot = None;
                }
            }
        }
    }

    /// Whether no instruction has a location.
    pub fn is_empty(&self) -> bool {
        self.locs.iter().all(Option::is_none)
    }

    /// Every instruction with a location, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (InstId, &SourceLoc)> + '_ {
        self.locs.iter().enumerate().filter_map(|(i, l)| Some((InstId::from_index(i)?, l.as_ref()?)))
    }

    /// Remove every location.
    pub fn clear(&mut self) {
        self.locs.clear();
    }
}

impl PartialEq for SourceLocs {
    fn eq(&self, other: &Self) -> bool {
        let n = self.locs.len().max(other.locs.len());
        (0..n).all(|i| {
            let id = InstId(i as u32);
            self.get(id) == other.get(id)
        })
    }
}

impl fmt::Debug for SourceLocs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter().map(|(id, l)| (id, &**l))).finish()
    }
}

/// Interns location strings, so that equal locations share one allocation.
#[derive(Clone, Debug, Default)]
pub struct LocInterner {
    seen: HashMap<Box<str>, SourceLoc>,
}

impl LocInterner {
    /// The shared string equal to `loc`.
    pub fn intern(&mut self, loc: &str) -> SourceLoc {
        if let Some(l) = self.seen.get(loc) {
            return l.clone();
        }
        let l: SourceLoc = Arc::from(loc);
        self.seen.insert(loc.into(), l.clone());
        l
    }
}

/// JSON: a list of `[instruction index, "location"]` pairs in id order.
impl Serialize for SourceLocs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        for (id, loc) in self.iter() {
            seq.serialize_element(&(id.0, &**loc))?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for SourceLocs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let pairs = Vec::<(u32, String)>::deserialize(d)?;
        let mut interner = LocInterner::default();
        let mut out = SourceLocs::new();
        for (id, loc) in pairs {
            out.set(InstId(id), Some(interner.intern(&loc)));
        }
        Ok(out)
    }
}

/// Serde for an optional location (`PirInst::loc`): a string or absent.
pub(crate) mod optional {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::SourceLoc;

    pub(crate) fn serialize<S: Serializer>(v: &Option<SourceLoc>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(l) => s.serialize_some(&**l),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SourceLoc>, D::Error> {
        Ok(Option::<String>::deserialize(d)?.map(SourceLoc::from))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::looped::{Item, LoopedFunction, NestMark};
    use crate::text::{parse::parse, parse_looped, print::print_with_errors, print_looped};
    use crate::{verify, Entity, VerifierError, VerifierErrors};

    /// A fill of four 64-element slices, the two middle ones from line 7 of `k.py`.
    const TEXT: &str = "kernel fill\n\
        tensor t0 \"x\" sbuf fp32 [128, 256] @0\n\
        i0 = memset engine=pool value=0 dst=t0{p0[1, 128] +0 [1, 64]} loc(\"k.py:3\")\n\
        i1 = memset engine=pool value=0 dst=t0{p0[1, 128] +64 [1, 64]} loc(\"k.py:7\")\n\
        i2 = memset engine=pool value=0 dst=t0{p0[1, 128] +128 [1, 64]} loc(\"k.py:7\")\n\
        i3 = memset engine=pool value=0 dst=t0{p0[1, 128] +192 [1, 64]}\n";

    #[test]
    fn locations_print_parse_and_travel_through_json() {
        let f = parse(TEXT).unwrap();
        assert_eq!(f.srclocs.get(InstId(1)), Some("k.py:7"));
        assert_eq!(f.srclocs.get(InstId(3)), None);
        assert!(Arc::ptr_eq(f.srclocs.get_shared(InstId(1)).unwrap(), f.srclocs.get_shared(InstId(2)).unwrap()));
        let printed = f.to_string();
        assert!(printed.contains("+64 [1, 64]} loc(\"k.py:7\")\n"), "{printed}");
        assert_eq!(parse(&printed).unwrap(), f);
        let json = serde_json::to_string(&f).unwrap();
        assert!(json.contains(r#""srclocs":[[0,"k.py:3"],[1,"k.py:7"],[2,"k.py:7"]]"#), "{json}");
        assert_eq!(serde_json::from_str::<crate::Function>(&json).unwrap(), f);
        // A function without locations has no `srclocs` key, and reads as before.
        let mut bare = f;
        bare.srclocs.clear();
        let json = serde_json::to_string(&bare).unwrap();
        assert!(!json.contains("srclocs"));
        assert_eq!(serde_json::from_str::<crate::Function>(&json).unwrap(), bare);
    }

    #[test]
    fn rolling_keeps_locations_and_never_merges_different_ones() {
        let f = parse(TEXT).unwrap();
        let lf = LoopedFunction::roll(&f);
        // The two slices of line 7 roll into a loop; lines 3 and the last stay apart.
        assert_eq!(lf.body.len(), 3, "{}", print_looped(&lf));
        let Item::Loop(l) = &lf.body[1] else { panic!("{}", print_looped(&lf)) };
        assert_eq!(l.trips, 2);
        let text = print_looped(&lf);
        assert!(text.contains("loc(\"k.py:7\")"), "{text}");
        assert_eq!(parse_looped(&text).unwrap(), lf);
        assert_eq!(lf.expand().unwrap(), f);
        let marks = [NestMark { at: 1, level: 0 }, NestMark { at: 2, level: 0 }];
        assert_eq!(LoopedFunction::roll_nest(&f, &marks).unwrap().expand().unwrap(), f);
    }

    #[test]
    fn verifier_errors_print_beside_the_located_line() {
        let f = parse(TEXT).unwrap();
        assert!(verify(&f).is_ok());
        let errors = VerifierErrors(vec![VerifierError { entity: Entity::Inst(InstId(1)), message: "bad".into() }]);
        let text = print_with_errors(&f, &errors);
        assert!(text.contains("loc(\"k.py:7\")\n; error: bad\n"), "{text}");
    }

    #[test]
    fn equality_ignores_sharing_and_trailing_gaps() {
        let mut a = SourceLocs::new();
        let mut b = SourceLocs::new();
        a.set(InstId(2), Some("k.py:4".into()));
        b.set(InstId(2), Some("k.py:4".into()));
        b.set(InstId(7), Some("x".into()));
        b.set(InstId(7), None);
        assert_eq!(a, b);
        assert_eq!(a.get(InstId(2)), Some("k.py:4"));
        assert_eq!(a.get(InstId(0)), None);
        assert!(!a.is_empty() && SourceLocs::new().is_empty());
        let mut i = LocInterner::default();
        let (x, y) = (i.intern("k.py:4"), i.intern("k.py:4"));
        assert!(Arc::ptr_eq(&x, &y));
    }
}
