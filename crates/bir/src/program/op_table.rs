//! The machinery behind [`Op`](super::Op)'s table of kinds: the `declare_ops!` macro that
//! derives the mechanical functions from one declaration per kind, how each field type
//! reads and prints in the text format (`fields.rs`), and the typed error of [`Op::from_parts`](super::Op::from_parts).

use penguin::{EngineAccumulationType, PerfMode, ScalarOperand, TilePosition, TileSize};

use super::ap::HwAp;

/// What an access pattern of an op does with its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ApRole {
    /// Read.
    Read,
    /// Written (replaced).
    Write,
    /// Read, then written (an addend that receives the sum).
    Update,
    /// int32 row indices into a table (read).
    Index,
    /// A table read one row per index entry.
    TableRead,
    /// A table added into one row per index entry.
    TableUpdate,
    /// A table written one row per index entry (the other rows kept).
    TableWrite,
}

impl ApRole {
    /// Whether the op writes the pattern's bytes (a read-modify-write counts as written).
    pub fn writes(self) -> bool {
        match self {
            ApRole::Write | ApRole::Update | ApRole::TableUpdate | ApRole::TableWrite => true,
            ApRole::Read | ApRole::Index | ApRole::TableRead => false,
        }
    }

    /// Whether the op reads the bytes it writes.
    pub fn is_update(self) -> bool {
        match self {
            ApRole::Update | ApRole::TableUpdate => true,
            ApRole::Read | ApRole::Write | ApRole::Index | ApRole::TableRead | ApRole::TableWrite => false,
        }
    }

    /// Whether only the rows named by the op's index are touched.
    pub fn is_indexed(self) -> bool {
        match self {
            ApRole::TableRead | ApRole::TableUpdate | ApRole::TableWrite => true,
            ApRole::Read | ApRole::Write | ApRole::Update | ApRole::Index => false,
        }
    }
}

/// The part of an instruction's text an error of [`Op::from_parts`](super::Op::from_parts)
/// is about.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum OpPart {
    /// The opcode.
    Opcode,
    /// The attribute with this key (given or missing).
    Attribute(String),
    /// The access pattern with this name (given or missing).
    AccessPattern(String),
}

/// Why text-format parts do not make an op: the part concerned and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FromPartsError {
    /// The part the message is about.
    pub part: OpPart,
    /// What is wrong.
    pub message: String,
}

impl FromPartsError {
    pub(super) fn opcode(message: String) -> Self {
        FromPartsError { part: OpPart::Opcode, message }
    }

    pub(super) fn attribute(key: &str, message: String) -> Self {
        FromPartsError { part: OpPart::Attribute(key.to_string()), message }
    }

    pub(super) fn access_pattern(name: &str, message: String) -> Self {
        FromPartsError { part: OpPart::AccessPattern(name.to_string()), message }
    }
}

/// The PE attributes every op shares in the text format (`perf`, `pos`, `size`, `acc`),
/// read once before the op's own fields.
struct PeAttrs {
    perf_mode: PerfMode,
    tile_position: TilePosition,
    tile_size: TileSize,
    acc: Option<EngineAccumulationType>,
}

/// Read the PE attributes with penguin's parser (the one place that calls it), whose typed
/// error names the key it is about.
fn pe_attributes<'a>(attr: &impl Fn(&str) -> Option<&'a str>) -> Result<PeAttrs, FromPartsError> {
    match penguin::parse_pe_attributes(attr) {
        Ok((perf_mode, tile_position, tile_size, acc)) => Ok(PeAttrs { perf_mode, tile_position, tile_size, acc }),
        Err(penguin::AttrError { key: Some(key), message }) => Err(FromPartsError::attribute(&key, message)),
        Err(penguin::AttrError { key: None, message }) => Err(FromPartsError::opcode(message)),
    }
}

/// The text-format parts of one instruction, consumed field by field while building its op.
pub(super) struct Parts<'a> {
    /// The opcode.
    name: &'a str,
    attrs: &'a [(String, String)],
    /// The access patterns not taken yet.
    aps: Vec<(String, Option<HwAp>)>,
    pe: PeAttrs,
}

impl<'a> Parts<'a> {
    /// The parts of an instruction; the PE attributes are read (and checked) here.
    pub(super) fn new(
        name: &'a str,
        attrs: &'a [(String, String)],
        aps: Vec<(String, HwAp)>,
    ) -> Result<Self, FromPartsError> {
        let pe = pe_attributes(&|key: &str| attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str()))?;
        Ok(Parts { name, attrs, aps: aps.into_iter().map(|(n, a)| (n, Some(a))).collect(), pe })
    }

    /// The opcode.
    pub(super) fn name(&self) -> &'a str {
        self.name
    }

    fn attr(&self, key: &str) -> Option<&'a str> {
        self.attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// An attribute that must be given.
    fn required(&self, key: &str) -> Result<&'a str, FromPartsError> {
        self.attr(key).ok_or_else(|| self.missing(key))
    }

    /// The error for a required attribute that is not given.
    fn missing(&self, key: &str) -> FromPartsError {
        FromPartsError::attribute(key, format!("{} needs `{key}=`", self.name))
    }

    /// After the op is built: no access pattern or attribute may be left over.
    pub(super) fn finish(self, known_attrs: &[&str]) -> Result<(), FromPartsError> {
        if let Some((n, _)) = self.aps.iter().find(|(_, a)| a.is_some()) {
            return Err(FromPartsError::access_pattern(n, format!("{} has no access pattern `{n}`", self.name)));
        }
        if let Some((k, _)) = self.attrs.iter().find(|(k, _)| !known_attrs.contains(&k.as_str())) {
            return Err(FromPartsError::attribute(k, format!("{} has no attribute `{k}`", self.name)));
        }
        Ok(())
    }
}

/// A field of an op as the text format sees it: an access pattern (named like the field)
/// or an attribute (named by its type's [`Attr::KEY`]).
pub(super) trait Field: Sized {
    /// Whether the field is an attribute with a default: such fields are read (and their
    /// values checked) before the others, which are read in declaration order.
    const OPTIONAL: bool = false;

    /// Read the field from the parts.
    fn take(parts: &mut Parts<'_>, field: &'static str) -> Result<Self, FromPartsError>;

    /// A value for tests, different from the text format's default.
    #[cfg(test)]
    fn example() -> Self;
}

/// An attribute field: printed as `KEY=VALUE`.
pub(super) trait Attr {
    /// The text-format key; empty for a type whose fields are keyed by their field name.
    const KEY: &'static str = "";

    /// The key of field `field` of this type.
    fn key(field: &'static str) -> &'static str {
        if Self::KEY.is_empty() {
            field
        } else {
            Self::KEY
        }
    }

    /// The text-format value, or `None` when it is not printed (an optional attribute at its
    /// default, a scalar operand that is an access pattern).
    fn value(&self) -> Option<String>;
}

/// An attribute of field `field` as its text-format `(key, value)`, if printed.
pub(super) fn attr_pair<A: Attr>(a: &A, field: &'static str) -> Option<(&'static str, String)> {
    a.value().map(|v| (A::key(field), v))
}

/// The key of attribute field `field` (whatever its value).
pub(super) fn attr_key<A: Attr>(_: &A, field: &'static str) -> &'static str {
    A::key(field)
}

/// The type of an access-pattern field: an access pattern, an optional one, or a scalar
/// operand (an access pattern when it is not an immediate).
pub(super) trait ApField {
    /// The access pattern, if present.
    fn ap(&self) -> Option<&HwAp>;

    /// The access pattern, mutably, if present.
    fn ap_mut(&mut self) -> Option<&mut HwAp>;
}

impl ApField for HwAp {
    fn ap(&self) -> Option<&HwAp> {
        Some(self)
    }

    fn ap_mut(&mut self) -> Option<&mut HwAp> {
        Some(self)
    }
}

impl ApField for Option<HwAp> {
    fn ap(&self) -> Option<&HwAp> {
        self.as_ref()
    }

    fn ap_mut(&mut self) -> Option<&mut HwAp> {
        self.as_mut()
    }
}

impl ApField for ScalarOperand<HwAp> {
    fn ap(&self) -> Option<&HwAp> {
        self.tile()
    }

    fn ap_mut(&mut self) -> Option<&mut HwAp> {
        self.tile_mut()
    }
}

mod fields;

/// Declare every op kind once: its variant with documented fields (access patterns are the
/// `HwAp` fields), text name, engine class, access-pattern roles and printed attribute
/// order. Derives the enum, `name`, `engine_class`, `aps`, `aps_mut`, `ap_roles`,
/// `attributes`, `from_parts` (optional attributes first, then the fields in declaration
/// order) and (in tests) one example op per kind.
macro_rules! declare_ops {
    (
        $(
            $(#[$vmeta:meta])*
            $V:ident = $name:literal, $class:ident, aps [$($ap:ident: $role:ident),*], attrs [$($attr:ident),*] {
                $( $(#[$fmeta:meta])* $f:ident : $ty:ty ),* $(,)?
            }
        )*
    ) => {
        /// A BIR operation.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        pub enum Op {
            $( $(#[$vmeta])* $V { $( $(#[$fmeta])* $f: $ty ),* }, )*
        }

        impl Op {
            /// The text name.
            pub fn name(&self) -> &'static str {
                match self {
                    $( Op::$V { .. } => $name, )*
                }
            }

            /// The engines that can run this op.
            pub fn engine_class(&self) -> EngineClass {
                match self {
                    $( Op::$V { .. } => EngineClass::$class, )*
                }
            }

            /// The named access patterns present, destination first (the text format's
            /// `name=ap` list; an optional pattern not given and a scalar operand that is an
            /// immediate are absent).
            pub fn aps(&self) -> Vec<(&'static str, &HwAp)> {
                let mut v = Vec::new();
                match self {
                    $( Op::$V { $($ap,)* .. } => { $( if let Some(a) = ApField::ap($ap) { v.push((stringify!($ap), a)); } )* } )*
                }
                v
            }

            /// [`Self::aps`], mutable, in the same order.
            pub fn aps_mut(&mut self) -> Vec<(&'static str, &mut HwAp)> {
                let mut v = Vec::new();
                match self {
                    $( Op::$V { $($ap,)* .. } => { $( if let Some(a) = ApField::ap_mut($ap) { v.push((stringify!($ap), a)); } )* } )*
                }
                v
            }

            /// How many [`Self::aps`] there are, without collecting them (the looped model
            /// asks for every instruction it replays).
            pub fn ap_count(&self) -> usize {
                let mut n = 0;
                match self {
                    $( Op::$V { $($ap,)* .. } => { $( if ApField::ap($ap).is_some() { n += 1; } )* } )*
                }
                n
            }

            /// Call `f` on each of [`Self::aps_mut`], in order, without collecting them.
            pub fn for_each_ap_mut(&mut self, mut f: impl FnMut(&'static str, &mut HwAp)) {
                match self {
                    $( Op::$V { $($ap,)* .. } => { $( if let Some(a) = ApField::ap_mut($ap) { f(stringify!($ap), a); } )* } )*
                }
            }

            /// [`Self::aps`] with what the op does with each.
            pub fn ap_roles(&self) -> Vec<(&'static str, &HwAp, ApRole)> {
                let mut v = Vec::new();
                self.for_each_ap_role(|n, a, r| v.push((n, a, r)));
                v
            }

            /// Call `f` on each of [`Self::ap_roles`], in order, without collecting them (for
            /// the passes that visit every instruction of a large program).
            pub fn for_each_ap_role<'a>(&'a self, mut f: impl FnMut(&'static str, &'a HwAp, ApRole)) {
                match self {
                    $( Op::$V { $($ap,)* .. } => { $( if let Some(a) = ApField::ap($ap) { f(stringify!($ap), a, ApRole::$role); } )* } )*
                }
            }

            /// The attributes other than access patterns, as text-format `key=value`s (an
            /// optional attribute at its default is not printed).
            pub fn attributes(&self) -> Vec<(&'static str, String)> {
                match self {
                    $( Op::$V { $($attr,)* .. } => {
                        let pairs: [Option<(&'static str, String)>; 0 $(+ { let _ = stringify!($attr); 1 })*] = [$(attr_pair($attr, stringify!($attr))),*];
                        pairs.into_iter().flatten().collect()
                    } )*
                }
            }

            /// The keys of every attribute field of the op (printed or not).
            fn attribute_keys(&self) -> Vec<&'static str> {
                match self {
                    $( Op::$V { $($attr,)* .. } => vec![$(attr_key($attr, stringify!($attr))),*], )*
                }
            }

            /// Build an op from its text-format parts (the inverse of [`Self::name`],
            /// [`Self::attributes`] and [`Self::aps`]); the error names the part that is
            /// missing, unknown or malformed.
            pub fn from_parts(
                name: &str,
                attrs: &[(String, String)],
                aps: Vec<(String, HwAp)>,
            ) -> Result<Op, FromPartsError> {
                let mut parts = Parts::new(name, attrs, aps)?;
                let p = &mut parts;
                let op = match p.name() {
                    $( $name => {
                        $( let $f = if <$ty as Field>::OPTIONAL {
                            Some(<$ty as Field>::take(p, stringify!($f))?)
                        } else {
                            None
                        }; )*
                        Op::$V { $( $f: match $f {
                            Some(v) => v,
                            None => <$ty as Field>::take(p, stringify!($f))?,
                        } ),* }
                    } )*
                    other => return Err(FromPartsError::opcode(format!("unknown BIR op `{other}`"))),
                };
                let known = op.attribute_keys();
                parts.finish(&known)?;
                Ok(op)
            }

            /// One op of every kind, each field a non-default value.
            #[cfg(test)]
            pub(crate) fn examples() -> Vec<Op> {
                vec![$( Op::$V { $( $f: <$ty as Field>::example() ),* } ),*]
            }
        }
    };
}

pub(super) use declare_ops;
