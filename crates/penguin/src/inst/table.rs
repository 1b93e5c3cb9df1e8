//! The machinery behind Penguin's instruction table (`inst_kinds!`, invoked once in
//! `kinds.rs`): from each kind's row it derives [`InstData`](super::InstData),
//! [`InstKind`](super::InstKind) and every mechanical function over them (opcode, operands
//! with their access, operand names, attributes, accumulation, building from text parts).
//!
//! A row is `Kind(Payload) = "opcode" { field: operand(Role), field: attr("key"), ... }`, the
//! fields in the order the text parser reads them (the struct literal's order). An operand's
//! text name is its field name; its role is `Read`, `Write`, `ReadWrite` or `Accumulate`
//! (written when the payload's `flags()` has START, read and written otherwise), and its type
//! `InstTile` (always present) or `Option<InstTile>` (optional; see `attr::OperandField`). A
//! `field: scalar()` / `field: scalar(DEFAULT)` is a [`ScalarOperand`](super::ScalarOperand):
//! a read operand when it is a tile, an attribute keyed by its field name when it is an
//! immediate (not printed when it is the default; without a default it must be written). An
//! attribute's type says how it prints and parses (its `AttrValue` impl). A row written
//! `Kind(Payload) in Box = ...` stores its payload boxed (`InstData::Kind(Box<Payload>)`):
//! every instruction is as large as the largest unboxed payload, and the instruction arena
//! of a large kernel is most of the memory planning touches.

/// Split a row's fields into operands `(field Role [default])`, attributes `(field "key")`
/// and scalar operands `(field [default])`, in order, and hand the three lists to
/// `$cb!($args... [operands] [attributes] [scalars])`. A scalar operand (`scalar()` or
/// `scalar(DEFAULT)`) is a read operand when it is a tile and an attribute (keyed by its
/// field name) when it is an immediate, so it is in both the operand and the scalar list.
macro_rules! select_fields {
    ($cb:ident!($($args:tt)*) [$($ops:tt)*] [$($attrs:tt)*] [$($sc:tt)*]) => {
        $cb!($($args)* [$($ops)*] [$($attrs)*] [$($sc)*])
    };
    ($cb:ident!($($args:tt)*) [$($ops:tt)*] [$($attrs:tt)*] [$($sc:tt)*] $f:ident: operand($r:ident), $($rest:tt)*) => {
        select_fields!($cb!($($args)*) [$($ops)* ($f $r [])] [$($attrs)*] [$($sc)*] $($rest)*)
    };
    ($cb:ident!($($args:tt)*) [$($ops:tt)*] [$($attrs:tt)*] [$($sc:tt)*] $f:ident: scalar($($d:literal)?), $($rest:tt)*) => {
        select_fields!($cb!($($args)*) [$($ops)* ($f Scalar [$($d)?])] [$($attrs)*] [$($sc)* ($f [$($d)?])] $($rest)*)
    };
    ($cb:ident!($($args:tt)*) [$($ops:tt)*] [$($attrs:tt)*] [$($sc:tt)*] $f:ident: attr($k:literal), $($rest:tt)*) => {
        select_fields!($cb!($($args)*) [$($ops)*] [$($attrs)* ($f $k)] [$($sc)*] $($rest)*)
    };
}

/// `Some(default)` of a scalar operand, or `None` when it has none (it must be written).
macro_rules! default_of {
    () => {
        None
    };
    ($d:literal) => {
        Some($d)
    };
}

/// The operand names of a row (every operand that may be present, in order).
macro_rules! operand_names_of {
    ([$(($f:ident $r:ident [$($d:tt)*]))*] [$($attrs:tt)*] [$($sc:tt)*]) => {
        &[$(stringify!($f)),*]
    };
}

/// The attribute keys of a row, the scalar operands' (written as immediates) last.
macro_rules! attribute_keys_of {
    ([$($ops:tt)*] [$(($f:ident $k:literal))*] [$(($s:ident [$($d:tt)*]))*]) => {
        &[$($k,)* $(stringify!($s),)*]
    };
}

/// What an operand of role `$r` does to its tile, for payload `$p`.
macro_rules! role_access {
    (Read $p:ident) => {
        $crate::inst::Access::Read
    };
    (Scalar $p:ident) => {
        $crate::inst::Access::Read
    };
    (Write $p:ident) => {
        $crate::inst::Access::Write
    };
    (ReadWrite $p:ident) => {
        $crate::inst::Access::ReadWrite
    };
    (Accumulate $p:ident) => {
        $crate::inst::acc_access($p.flags())
    };
}

/// The present operands of payload `$p` with their access.
macro_rules! operands_of {
    ($p:ident [$(($f:ident $r:ident [$($d:tt)*]))*] [$($attrs:tt)*] [$($sc:tt)*]) => {{
        let mut v: Vec<(&$crate::tile::InstTile, $crate::inst::Access)> = Vec::new();
        $( if let Some(t) = $crate::inst::attr::OperandField::tile(&$p.$f) { v.push((t, role_access!($r $p))); } )*
        v
    }};
}

/// The names of the present operands of payload `$p`, in the order of [`operands_of`].
macro_rules! present_names_of {
    ($p:ident [$(($f:ident $r:ident [$($d:tt)*]))*] [$($attrs:tt)*] [$($sc:tt)*]) => {{
        let mut v: Vec<&'static str> = Vec::new();
        $( if $crate::inst::attr::OperandField::tile(&$p.$f).is_some() { v.push(stringify!($f)); } )*
        v
    }};
}

/// Call `$g` with each present operand of payload `$p` and its access.
macro_rules! for_each_operand_of {
    ($p:ident $g:ident [$(($f:ident $r:ident [$($d:tt)*]))*] [$($attrs:tt)*] [$($sc:tt)*]) => {{
        $( if let Some(t) = $crate::inst::attr::OperandField::tile(&$p.$f) { $g(t, role_access!($r $p)); } )*
    }};
}

/// The present operands of payload `$p`, mutably.
macro_rules! operands_mut_of {
    ($p:ident [$(($f:ident $r:ident [$($d:tt)*]))*] [$($attrs:tt)*] [$($sc:tt)*]) => {{
        let mut v: Vec<&mut $crate::tile::InstTile> = Vec::new();
        $( if let Some(t) = $crate::inst::attr::OperandField::tile_mut(&mut $p.$f) { v.push(t); } )*
        v
    }};
}

/// The printed attributes of payload `$p`: its attributes, then its scalar operands that are
/// immediates other than their default.
macro_rules! attributes_of {
    ($p:ident [$($ops:tt)*] [$(($f:ident $k:literal))*] [$(($s:ident [$($d:tt)*]))*]) => {{
        #[allow(unused_mut, reason = "a kind without attributes pushes nothing")]
        let mut v: Vec<(&'static str, String)> = Vec::new();
        $( if let Some(x) = $crate::inst::attr::AttrValue::print(&$p.$f) { v.push(($k, x)); } )*
        $( if let Some(x) = $crate::inst::attr::imm_text(&$p.$s, default_of!($($d)*)) { v.push((stringify!($s), x)); } )*
        let _ = &$p;
        v
    }};
}

/// The accumulating operand of payload `$p` (its first `Accumulate` operand) and its flags.
macro_rules! accumulation_of {
    ($p:ident [] [$($attrs:tt)*] [$($sc:tt)*]) => {{
        let _ = $p;
        None
    }};
    ($p:ident [($f:ident Accumulate [$($d:tt)*]) $($rest:tt)*] [$($attrs:tt)*] [$($sc:tt)*]) => {
        Some((&$p.$f, $p.flags()))
    };
    ($p:ident [($f:ident $r:ident [$($d:tt)*]) $($rest:tt)*] [$($attrs:tt)*] [$($sc:tt)*]) => {
        accumulation_of!($p [$($rest)*] [$($attrs)*] [$($sc)*])
    };
}

/// One field's value, read from the text parts.
macro_rules! parse_field {
    ($parts:ident, $f:ident, operand($r:ident)) => {
        <_ as $crate::inst::attr::OperandField>::take(&mut $parts, stringify!($f))
    };
    ($parts:ident, $f:ident, scalar($($d:literal)?)) => {
        $crate::inst::attr::take_scalar(&mut $parts, stringify!($f), default_of!($($d)?))
    };
    ($parts:ident, $f:ident, attr($k:literal)) => {
        $crate::inst::attr::AttrValue::parse($k, &$parts)
    };
}

/// A row's payload type: the payload struct, or a box of it (`Kind(Payload) in Box`).
macro_rules! payload_type {
    ($payload:ident) => {
        $payload
    };
    ($payload:ident Box) => {
        Box<$payload>
    };
}

/// A row's payload value from the struct: boxed when the row boxes it.
macro_rules! payload_value {
    ($e:expr) => {
        $e
    };
    ($e:expr, Box) => {
        Box::new($e)
    };
}

/// Declare Penguin's instruction kinds: one row per kind (see the module documentation). A
/// row whose payload is much larger than the others boxes it (`Kind(Payload) in Box = ...`),
/// so that it does not set the size of every instruction.
macro_rules! inst_kinds {
    ($(
        $(#[doc = $doc:literal])*
        $kind:ident($payload:ident) $(in $boxed:ident)? = $name:literal {
            $($field:ident: $what:ident($($arg:tt)*)),* $(,)?
        }
    ),* $(,)?) => {
        /// A Penguin instruction.
        #[derive(Clone, Debug, PartialEq, ::serde::Serialize, ::serde::Deserialize)]
        pub enum InstData {
            $($(#[doc = $doc])* $kind(payload_type!($payload $($boxed)?)),)*
        }

        /// The kind of a Penguin instruction: its opcode, without operands or attributes.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum InstKind {
            $($(#[doc = $doc])* $kind,)*
        }

        impl InstKind {
            /// Every kind, in the order of the table.
            pub const ALL: &'static [InstKind] = &[$(InstKind::$kind),*];

            /// The opcode name in the text format.
            pub fn name(self) -> &'static str {
                match self {
                    $(InstKind::$kind => $name,)*
                }
            }

            /// The kind whose opcode name is `name`.
            pub fn from_name(name: &str) -> Option<InstKind> {
                Self::ALL.iter().copied().find(|k| k.name() == name)
            }

            /// The text-format names of every operand the kind may have (an optional operand,
            /// or a scalar operand written as an immediate, is absent from an instruction's
            /// [`InstData::operands`]; [`InstData::operand_names`] names those present).
            pub fn operand_names(self) -> &'static [&'static str] {
                match self {
                    $(InstKind::$kind => select_fields!(operand_names_of!() [] [] [] $($field: $what($($arg)*),)*),)*
                }
            }

            /// The text-format keys of the attributes, in the order they are printed.
            pub fn attribute_keys(self) -> &'static [&'static str] {
                match self {
                    $(InstKind::$kind => select_fields!(attribute_keys_of!() [] [] [] $($field: $what($($arg)*),)*),)*
                }
            }
        }

        impl InstData {
            /// The instruction's kind.
            pub fn kind(&self) -> InstKind {
                match self {
                    $(InstData::$kind(_) => InstKind::$kind,)*
                }
            }

            /// The text-format names of the operands present, in the order of [`Self::operands`].
            pub fn operand_names(&self) -> Vec<&'static str> {
                match self {
                    $(InstData::$kind(p) => select_fields!(present_names_of!(p) [] [] [] $($field: $what($($arg)*),)*),)*
                }
            }

            /// Every operand present with what the instruction does to it, destination first.
            pub fn operands(&self) -> Vec<(&$crate::tile::InstTile, $crate::inst::Access)> {
                match self {
                    $(InstData::$kind(p) => select_fields!(operands_of!(p) [] [] [] $($field: $what($($arg)*),)*),)*
                }
            }

            /// Call `f` with every operand and what the instruction does to it, in the order
            /// of [`Self::operands`] (without collecting them).
            pub fn for_each_operand<'a>(&'a self, mut f: impl FnMut(&'a $crate::tile::InstTile, $crate::inst::Access)) {
                match self {
                    $(InstData::$kind(p) => select_fields!(for_each_operand_of!(p f) [] [] [] $($field: $what($($arg)*),)*),)*
                }
            }

            /// How many operands [`Self::operands`] gives, without collecting them (the loop
            /// roll asks for every instruction it rolls).
            pub fn operand_count(&self) -> usize {
                let mut n = 0;
                self.for_each_operand(|_, _| n += 1);
                n
            }

            /// Mutable access to every operand, in the order of [`Self::operands`].
            pub fn operands_mut(&mut self) -> Vec<&mut $crate::tile::InstTile> {
                match self {
                    $(InstData::$kind(p) => select_fields!(operands_mut_of!(p) [] [] [] $($field: $what($($arg)*),)*),)*
                }
            }

            /// The instruction's attributes (everything but operands) as text-format `key=value`s.
            pub fn attributes(&self) -> Vec<(&'static str, String)> {
                match self {
                    $(InstData::$kind(p) => select_fields!(attributes_of!(p) [] [] [] $($field: $what($($arg)*),)*),)*
                }
            }

            /// The PSUM tile a matmul accumulates into, with its effective flags; `None` for an
            /// instruction that does not accumulate.
            pub fn accumulation(&self) -> Option<(&$crate::tile::InstTile, $crate::inst::EngineAccumulationType)> {
                match self {
                    $(InstData::$kind(p) => select_fields!(accumulation_of!(p) [] [] [] $($field: $what($($arg)*),)*),)*
                }
            }

            /// Build an instruction from its text-format parts: the opcode, its `key=value`
            /// attributes (as [`Self::attributes`] prints them) and its named operands (as
            /// [`Self::operand_names`] names them). The error says what is missing or
            /// malformed and names the attribute or operand it is about.
            pub fn from_parts(
                opcode: &str,
                attrs: &[(String, String)],
                operands: Vec<(String, $crate::tile::InstTile)>,
            ) -> Result<InstData, $crate::inst::AttrError> {
                let mut parts = $crate::inst::attr::Parts::new(opcode, attrs, operands)?;
                let kind = InstKind::from_name(opcode).ok_or_else(|| {
                    $crate::inst::AttrError::general(format!("unknown instruction `{opcode}`"))
                })?;
                let inst = match kind {
                    $(InstKind::$kind => InstData::$kind(payload_value!($payload {
                        $($field: parse_field!(parts, $field, $what($($arg)*))?,)*
                    } $(, $boxed)?)),)*
                };
                parts.finish(kind.attribute_keys())?;
                Ok(inst)
            }
        }
    };
}
