//! The machinery behind [`Op`](super::Op)'s table of kinds: the `declare_ops!` macro that
//! derives the mechanical functions from one declaration per kind, how each field type
//! reads and prints in the text format, and the typed error of [`Op::from_parts`](super::Op::from_parts).

use penguin::{
    ActFunc, AffinePattern, AluOp, CastMode, EngineAccumulationType, PerfMode, ScalarOperand, SparsityPattern,
    TilePosition, TileSize,
};

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
}

impl ApRole {
    /// Whether the op writes the pattern's bytes (a read-modify-write counts as written).
    pub fn writes(self) -> bool {
        match self {
            ApRole::Write | ApRole::Update | ApRole::TableUpdate => true,
            ApRole::Read | ApRole::Index | ApRole::TableRead => false,
        }
    }

    /// Whether the op reads the bytes it writes.
    pub fn is_update(self) -> bool {
        match self {
            ApRole::Update | ApRole::TableUpdate => true,
            ApRole::Read | ApRole::Write | ApRole::Index | ApRole::TableRead => false,
        }
    }

    /// Whether only the rows named by the op's index are touched.
    pub fn is_indexed(self) -> bool {
        match self {
            ApRole::TableRead | ApRole::TableUpdate => true,
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

impl Field for HwAp {
    fn take(parts: &mut Parts<'_>, field: &'static str) -> Result<Self, FromPartsError> {
        let name = parts.name;
        parts
            .take_ap(field)
            .ok_or_else(|| FromPartsError::access_pattern(field, format!("{name} needs access pattern `{field}=`")))
    }

    #[cfg(test)]
    fn example() -> Self {
        super::test_ap(penguin::Memory::Sbuf, 0, 4, 1, 0, vec![penguin::Dim::new(1, 8)])
    }
}

impl<'a> Parts<'a> {
    /// Take the access pattern `field`, if given.
    fn take_ap(&mut self, field: &str) -> Option<HwAp> {
        self.aps.iter_mut().find(|(n, a)| n == field && a.is_some()).and_then(|(_, a)| a.take())
    }
}

/// Optional: `None` when not given.
impl Field for Option<HwAp> {
    fn take(parts: &mut Parts<'_>, field: &'static str) -> Result<Self, FromPartsError> {
        Ok(parts.take_ap(field))
    }

    #[cfg(test)]
    fn example() -> Self {
        Some(super::test_ap(penguin::Memory::Sbuf, 0, 4, 1, 96, vec![penguin::Dim::new(1, 1)]))
    }
}

/// A scalar operand: an access pattern when one is given under the field's name, else the
/// number of the attribute of that name (printed only as an immediate).
impl Field for ScalarOperand<HwAp> {
    fn take(parts: &mut Parts<'_>, field: &'static str) -> Result<Self, FromPartsError> {
        let name = parts.name;
        match (parts.take_ap(field), parts.attr(field)) {
            (Some(_), Some(_)) => Err(FromPartsError::attribute(field, format!("{name} `{field}=` is given twice"))),
            (Some(ap), None) => Ok(ScalarOperand::Tile(ap)),
            (None, Some(v)) => v.parse().map(ScalarOperand::Imm).map_err(|_| {
                FromPartsError::attribute(
                    field,
                    format!("{name} {field} `{v}` is neither a number nor an access pattern"),
                )
            }),
            (None, None) => Err(parts.missing(field)),
        }
    }

    #[cfg(test)]
    fn example() -> Self {
        ScalarOperand::Tile(super::test_ap(penguin::Memory::Sbuf, 0, 4, 1, 64, vec![penguin::Dim::new(1, 1)]))
    }
}

impl Attr for ScalarOperand<HwAp> {
    fn value(&self) -> Option<String> {
        match self {
            ScalarOperand::Imm(v) => Some(v.to_string()),
            ScalarOperand::Tile(_) => None,
        }
    }
}

impl Field for PerfMode {
    const OPTIONAL: bool = true;

    fn take(parts: &mut Parts<'_>, _: &'static str) -> Result<Self, FromPartsError> {
        Ok(parts.pe.perf_mode)
    }

    #[cfg(test)]
    fn example() -> Self {
        PerfMode::DoubleRow
    }
}

impl Attr for PerfMode {
    const KEY: &'static str = "perf";

    fn value(&self) -> Option<String> {
        Some(self.to_string())
    }
}

impl Field for TilePosition {
    const OPTIONAL: bool = true;

    fn take(parts: &mut Parts<'_>, _: &'static str) -> Result<Self, FromPartsError> {
        Ok(parts.pe.tile_position)
    }

    #[cfg(test)]
    fn example() -> Self {
        TilePosition { row: 32, col: 64 }
    }
}

impl Attr for TilePosition {
    const KEY: &'static str = "pos";

    fn value(&self) -> Option<String> {
        Some(format!("{},{}", self.row, self.col))
    }
}

impl Field for TileSize {
    const OPTIONAL: bool = true;

    fn take(parts: &mut Parts<'_>, _: &'static str) -> Result<Self, FromPartsError> {
        Ok(parts.pe.tile_size)
    }

    #[cfg(test)]
    fn example() -> Self {
        TileSize { rows: 64, cols: 32 }
    }
}

impl Attr for TileSize {
    const KEY: &'static str = "size";

    fn value(&self) -> Option<String> {
        Some(format!("{},{}", self.rows, self.cols))
    }
}

impl Field for EngineAccumulationType {
    fn take(parts: &mut Parts<'_>, _: &'static str) -> Result<Self, FromPartsError> {
        parts.pe.acc.ok_or_else(|| parts.missing(Self::KEY))
    }

    #[cfg(test)]
    fn example() -> Self {
        EngineAccumulationType::START | EngineAccumulationType::STOP
    }
}

impl Attr for EngineAccumulationType {
    const KEY: &'static str = "acc";

    fn value(&self) -> Option<String> {
        Some(self.to_string())
    }
}

impl Field for SparsityPattern {
    fn take(parts: &mut Parts<'_>, _: &'static str) -> Result<Self, FromPartsError> {
        parts
            .required(Self::KEY)?
            .parse()
            .map_err(|e: penguin::UnknownSparsity| FromPartsError::attribute(Self::KEY, e.to_string()))
    }

    #[cfg(test)]
    fn example() -> Self {
        SparsityPattern { n: 2, m: 4 }
    }
}

impl Attr for SparsityPattern {
    const KEY: &'static str = "pattern";

    fn value(&self) -> Option<String> {
        Some(self.to_string())
    }
}

impl Field for CastMode {
    const OPTIONAL: bool = true;

    fn take(parts: &mut Parts<'_>, _: &'static str) -> Result<Self, FromPartsError> {
        match parts.attr(Self::KEY) {
            None | Some("rne") => Ok(CastMode::Rne),
            Some("saturate") => Ok(CastMode::Saturate),
            Some(other) => Err(FromPartsError::attribute(
                Self::KEY,
                format!("unknown cast mode `{other}` (expected rne or saturate)"),
            )),
        }
    }

    #[cfg(test)]
    fn example() -> Self {
        CastMode::Saturate
    }
}

impl Attr for CastMode {
    const KEY: &'static str = "cast";

    fn value(&self) -> Option<String> {
        Some(self.name().to_string())
    }
}

impl Field for AluOp {
    fn take(parts: &mut Parts<'_>, field: &'static str) -> Result<Self, FromPartsError> {
        let name = parts.name;
        let v = parts.required(field)?;
        AluOp::from_name(v).ok_or_else(|| {
            FromPartsError::attribute(
                field,
                format!("unknown {name} {field} `{v}` (expected one of {})", AluOp::names()),
            )
        })
    }

    #[cfg(test)]
    fn example() -> Self {
        AluOp::Max
    }
}

impl Attr for AluOp {
    fn value(&self) -> Option<String> {
        Some(self.name().to_string())
    }
}

/// Optional: not printed when absent.
impl Field for Option<AluOp> {
    const OPTIONAL: bool = true;

    fn take(parts: &mut Parts<'_>, field: &'static str) -> Result<Self, FromPartsError> {
        if parts.attr(field).is_none() {
            return Ok(None);
        }
        AluOp::take(parts, field).map(Some)
    }

    #[cfg(test)]
    fn example() -> Self {
        Some(AluOp::Subtract)
    }
}

impl Attr for Option<AluOp> {
    fn value(&self) -> Option<String> {
        self.map(|op| op.name().to_string())
    }
}

impl Field for ActFunc {
    fn take(parts: &mut Parts<'_>, field: &'static str) -> Result<Self, FromPartsError> {
        let v = parts.required(field)?;
        ActFunc::from_name(v).ok_or_else(|| {
            FromPartsError::attribute(
                field,
                format!("unknown activation {field} `{v}` (expected one of {})", ActFunc::names()),
            )
        })
    }

    #[cfg(test)]
    fn example() -> Self {
        ActFunc::Silu
    }
}

impl Attr for ActFunc {
    fn value(&self) -> Option<String> {
        Some(self.name().to_string())
    }
}

/// A flag: printed as `KEY=true` when set, false when not given.
impl Field for bool {
    const OPTIONAL: bool = true;

    fn take(parts: &mut Parts<'_>, field: &'static str) -> Result<Self, FromPartsError> {
        match parts.attr(field) {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(v) => {
                Err(FromPartsError::attribute(field, format!("{} {field} `{v}` is not true or false", parts.name)))
            }
        }
    }

    #[cfg(test)]
    fn example() -> Self {
        true
    }
}

impl Attr for bool {
    fn value(&self) -> Option<String> {
        self.then(|| "true".to_string())
    }
}

/// An int32 (an affine offset or multiplier), 0 when not given.
impl Field for i32 {
    const OPTIONAL: bool = true;

    fn take(parts: &mut Parts<'_>, field: &'static str) -> Result<Self, FromPartsError> {
        let Some(v) = parts.attr(field) else { return Ok(0) };
        v.parse().map_err(|_| FromPartsError::attribute(field, format!("{} {field} `{v}` is not an int32", parts.name)))
    }

    #[cfg(test)]
    fn example() -> Self {
        -7
    }
}

impl Attr for i32 {
    fn value(&self) -> Option<String> {
        Some(self.to_string())
    }
}

impl Field for AffinePattern {
    fn take(parts: &mut Parts<'_>, field: &'static str) -> Result<Self, FromPartsError> {
        parts.required(field)?.parse().map_err(|e: penguin::BadPattern| FromPartsError::attribute(field, e.to_string()))
    }

    #[cfg(test)]
    fn example() -> Self {
        AffinePattern(vec![penguin::AffineDim { step: -1, num: 4 }, penguin::AffineDim { step: 1, num: 8 }])
    }
}

impl Attr for AffinePattern {
    fn value(&self) -> Option<String> {
        Some(self.to_string())
    }
}

/// A fill value (memset, affine_select).
impl Field for f64 {
    fn take(parts: &mut Parts<'_>, _: &'static str) -> Result<Self, FromPartsError> {
        let v = parts.required(Self::KEY)?;
        v.parse()
            .map_err(|_| FromPartsError::attribute(Self::KEY, format!("{} value `{v}` is not a number", parts.name)))
    }

    #[cfg(test)]
    fn example() -> Self {
        -1.25
    }
}

impl Attr for f64 {
    const KEY: &'static str = "value";

    fn value(&self) -> Option<String> {
        Some(self.to_string())
    }
}

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
