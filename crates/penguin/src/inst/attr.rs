//! Attribute values in the text format: how each attribute type prints and parses, the
//! typed [`AttrError`], and the [`Parts`] an instruction is built from.

use std::fmt;

use crate::dtype::CastMode;
use crate::tile::InstTile;

use super::alu::{ActFunc, AffinePattern, AluOp, BadPattern, ScalarOperand};
use super::payload::{ComputeEngine, DmaQueueHint, SparsityPattern, UnknownSparsity};
use super::pe::{parse_pe_attributes, EngineAccumulationType, PerfMode, TilePosition, TileSize};

/// A malformed, missing or unknown attribute or operand of an instruction in text form.
///
/// `key` names the `key=` (attribute or operand) the error is about, so that a parser can
/// point at it; `None` when it is about the instruction as a whole (an unknown opcode).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct AttrError {
    /// The attribute or operand name the error is about.
    pub key: Option<String>,
    /// What is wrong (the user-visible message).
    pub message: String,
}

impl AttrError {
    /// An error about the attribute or operand `key`.
    pub fn at(key: &str, message: impl fmt::Display) -> Self {
        AttrError { key: Some(key.to_string()), message: message.to_string() }
    }

    /// An error about the instruction as a whole.
    pub fn general(message: impl fmt::Display) -> Self {
        AttrError { key: None, message: message.to_string() }
    }
}

/// The message alone, for callers whose errors are plain strings.
impl From<AttrError> for String {
    fn from(e: AttrError) -> String {
        e.message
    }
}

/// The text-format parts of one instruction, consumed while its payload is built.
pub(crate) struct Parts<'a> {
    /// The opcode as written.
    pub(crate) opcode: &'a str,
    attrs: &'a [(String, String)],
    operands: Vec<(String, Option<InstTile>)>,
    /// The PE attributes, parsed once for every opcode (by [`parse_pe_attributes`]).
    pe: (PerfMode, TilePosition, TileSize, Option<EngineAccumulationType>),
}

impl<'a> Parts<'a> {
    /// Start from the written parts; the PE attributes are checked here, before the opcode.
    pub(crate) fn new(
        opcode: &'a str,
        attrs: &'a [(String, String)],
        operands: Vec<(String, InstTile)>,
    ) -> Result<Self, AttrError> {
        let pe = parse_pe_attributes(|key| attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str()))?;
        let operands = operands.into_iter().map(|(n, t)| (n, Some(t))).collect();
        Ok(Parts { opcode, attrs, operands, pe })
    }

    /// The value of attribute `key`, if written.
    pub(crate) fn attr(&self, key: &str) -> Option<&'a str> {
        self.attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The value of attribute `key`, which the opcode requires.
    fn need(&self, key: &str) -> Result<&'a str, AttrError> {
        self.attr(key).ok_or_else(|| AttrError::at(key, format!("{} needs `{key}=`", self.opcode)))
    }

    /// Take the operand `name` (each written operand is taken at most once).
    pub(crate) fn take(&mut self, name: &str) -> Result<InstTile, AttrError> {
        self.take_opt(name).ok_or_else(|| AttrError::at(name, format!("{} needs operand `{name}=`", self.opcode)))
    }

    /// Take the operand `name` if it is written.
    pub(crate) fn take_opt(&mut self, name: &str) -> Option<InstTile> {
        self.operands.iter_mut().find(|(n, t)| n == name && t.is_some()).and_then(|(_, t)| t.take())
    }

    /// After the payload is built: no operand may be left over, and every attribute must be
    /// one of `keys`.
    pub(crate) fn finish(self, keys: &[&str]) -> Result<(), AttrError> {
        if let Some((n, _)) = self.operands.iter().find(|(_, t)| t.is_some()) {
            return Err(AttrError::at(n, format!("{} has no operand `{n}`", self.opcode)));
        }
        if let Some((k, _)) = self.attrs.iter().find(|(k, _)| !keys.contains(&k.as_str())) {
            return Err(AttrError::at(k, format!("{} has no attribute `{k}`", self.opcode)));
        }
        Ok(())
    }
}

/// The type of an operand field: a tile that is always there, or an optional one.
pub(crate) trait OperandField: Sized {
    /// The tile, if present.
    fn tile(&self) -> Option<&InstTile>;

    /// The tile, mutably, if present.
    fn tile_mut(&mut self) -> Option<&mut InstTile>;

    /// The operand `name` from the text parts.
    fn take(parts: &mut Parts<'_>, name: &str) -> Result<Self, AttrError>;
}

impl OperandField for InstTile {
    fn tile(&self) -> Option<&InstTile> {
        Some(self)
    }

    fn tile_mut(&mut self) -> Option<&mut InstTile> {
        Some(self)
    }

    fn take(parts: &mut Parts<'_>, name: &str) -> Result<Self, AttrError> {
        parts.take(name)
    }
}

/// An optional operand: absent when not written.
impl OperandField for Option<InstTile> {
    fn tile(&self) -> Option<&InstTile> {
        self.as_ref()
    }

    fn tile_mut(&mut self) -> Option<&mut InstTile> {
        self.as_mut()
    }

    fn take(parts: &mut Parts<'_>, name: &str) -> Result<Self, AttrError> {
        Ok(parts.take_opt(name))
    }
}

/// A scalar operand is an operand when it is a column.
impl OperandField for ScalarOperand {
    fn tile(&self) -> Option<&InstTile> {
        ScalarOperand::tile(self)
    }

    fn tile_mut(&mut self) -> Option<&mut InstTile> {
        ScalarOperand::tile_mut(self)
    }

    fn take(parts: &mut Parts<'_>, name: &str) -> Result<Self, AttrError> {
        take_scalar(parts, name, None)
    }
}

/// The scalar operand `name`: a column when a tile is written, an immediate when a number is,
/// `default` when neither is (an error naming it when it has no default).
pub(crate) fn take_scalar(parts: &mut Parts<'_>, name: &str, default: Option<f64>) -> Result<ScalarOperand, AttrError> {
    let attr = parts.attr(name);
    match (parts.take_opt(name), attr) {
        (Some(_), Some(_)) => Err(AttrError::at(name, format!("{} `{name}=` is given twice", parts.opcode))),
        (Some(t), None) => Ok(ScalarOperand::Tile(t)),
        (None, Some(v)) => v.parse().map(ScalarOperand::Imm).map_err(|_| {
            AttrError::at(name, format!("{} {name} `{v}` is neither a number nor a tile `tN{{...}}`", parts.opcode))
        }),
        (None, None) => default.map(ScalarOperand::Imm).ok_or_else(|| {
            AttrError::at(name, format!("{} needs `{name}=` (a number or a [P, 1] tile)", parts.opcode))
        }),
    }
}

/// The text of a scalar operand written as an attribute: an immediate other than `default`.
pub(crate) fn imm_text(s: &ScalarOperand, default: Option<f64>) -> Option<String> {
    match s {
        ScalarOperand::Imm(v) if default.is_none_or(|d| !s.is_imm(d)) => Some(v.to_string()),
        ScalarOperand::Imm(_) | ScalarOperand::Tile(_) => None,
    }
}

/// A type that an instruction attribute holds: how it prints and parses in the text format.
pub(crate) trait AttrValue: Sized {
    /// The text of the value, or `None` when it is not printed.
    fn print(&self) -> Option<String>;

    /// The value of attribute `key` in `parts` (missing ones take the default, if any).
    fn parse(key: &str, parts: &Parts<'_>) -> Result<Self, AttrError>;
}

impl AttrValue for PerfMode {
    fn print(&self) -> Option<String> {
        Some(self.to_string())
    }

    fn parse(_: &str, parts: &Parts<'_>) -> Result<Self, AttrError> {
        Ok(parts.pe.0)
    }
}

impl AttrValue for TilePosition {
    fn print(&self) -> Option<String> {
        Some(format!("{},{}", self.row, self.col))
    }

    fn parse(_: &str, parts: &Parts<'_>) -> Result<Self, AttrError> {
        Ok(parts.pe.1)
    }
}

impl AttrValue for TileSize {
    fn print(&self) -> Option<String> {
        Some(format!("{},{}", self.rows, self.cols))
    }

    fn parse(_: &str, parts: &Parts<'_>) -> Result<Self, AttrError> {
        Ok(parts.pe.2)
    }
}

impl AttrValue for Option<EngineAccumulationType> {
    fn print(&self) -> Option<String> {
        self.map(|a| a.to_string())
    }

    fn parse(_: &str, parts: &Parts<'_>) -> Result<Self, AttrError> {
        Ok(parts.pe.3)
    }
}

impl AttrValue for SparsityPattern {
    fn print(&self) -> Option<String> {
        Some(self.to_string())
    }

    fn parse(key: &str, parts: &Parts<'_>) -> Result<Self, AttrError> {
        parts.need(key)?.parse().map_err(|e: UnknownSparsity| AttrError::at(key, e))
    }
}

impl AttrValue for CastMode {
    fn print(&self) -> Option<String> {
        Some(self.name().to_string())
    }

    /// Optional: `rne` when missing.
    fn parse(key: &str, parts: &Parts<'_>) -> Result<Self, AttrError> {
        match parts.attr(key) {
            None | Some("rne") => Ok(CastMode::Rne),
            Some("saturate") => Ok(CastMode::Saturate),
            Some(other) => Err(AttrError::at(key, format!("unknown cast mode `{other}` (expected rne or saturate)"))),
        }
    }
}

/// Optional: not printed, and `None` when missing (lowering chooses the queue).
impl AttrValue for Option<DmaQueueHint> {
    fn print(&self) -> Option<String> {
        self.map(|q| q.to_string())
    }

    fn parse(key: &str, parts: &Parts<'_>) -> Result<Self, AttrError> {
        let Some(v) = parts.attr(key) else { return Ok(None) };
        v.parse().map(|q| Some(DmaQueueHint(q))).map_err(|_| {
            AttrError::at(key, format!("{} {key} `{v}` is not a queue number (0 to 2^32 - 1)", parts.opcode))
        })
    }
}

impl AttrValue for ComputeEngine {
    fn print(&self) -> Option<String> {
        Some(self.to_string())
    }

    fn parse(key: &str, parts: &Parts<'_>) -> Result<Self, AttrError> {
        let v = parts.need(key)?;
        [ComputeEngine::Act, ComputeEngine::Dve, ComputeEngine::Pool]
            .into_iter()
            .find(|e| e.name() == v)
            .ok_or_else(|| AttrError::at(key, format!("unknown engine `{v}` (expected act, dve or pool)")))
    }
}

impl AttrValue for AluOp {
    fn print(&self) -> Option<String> {
        Some(self.name().to_string())
    }

    fn parse(key: &str, parts: &Parts<'_>) -> Result<Self, AttrError> {
        let v = parts.need(key)?;
        AluOp::from_name(v).ok_or_else(|| {
            AttrError::at(key, format!("unknown {} {key} `{v}` (expected one of {})", parts.opcode, AluOp::names()))
        })
    }
}

/// Optional: not printed, and `None` when missing.
impl AttrValue for Option<AluOp> {
    fn print(&self) -> Option<String> {
        self.map(|op| op.name().to_string())
    }

    fn parse(key: &str, parts: &Parts<'_>) -> Result<Self, AttrError> {
        if parts.attr(key).is_none() {
            return Ok(None);
        }
        AluOp::parse(key, parts).map(Some)
    }
}

impl AttrValue for ActFunc {
    fn print(&self) -> Option<String> {
        Some(self.name().to_string())
    }

    fn parse(key: &str, parts: &Parts<'_>) -> Result<Self, AttrError> {
        let v = parts.need(key)?;
        ActFunc::from_name(v).ok_or_else(|| {
            AttrError::at(key, format!("unknown activation {key} `{v}` (expected one of {})", ActFunc::names()))
        })
    }
}

/// A flag: printed as `key=true` when set, false when missing.
impl AttrValue for bool {
    fn print(&self) -> Option<String> {
        self.then(|| "true".to_string())
    }

    fn parse(key: &str, parts: &Parts<'_>) -> Result<Self, AttrError> {
        match parts.attr(key) {
            None | Some("false") => Ok(false),
            Some("true") => Ok(true),
            Some(v) => Err(AttrError::at(key, format!("{} {key} `{v}` is not true or false", parts.opcode))),
        }
    }
}

/// An int32 (an affine offset or multiplier): not printed when 0, 0 when missing.
impl AttrValue for i32 {
    fn print(&self) -> Option<String> {
        (*self != 0).then(|| self.to_string())
    }

    fn parse(key: &str, parts: &Parts<'_>) -> Result<Self, AttrError> {
        let Some(v) = parts.attr(key) else { return Ok(0) };
        v.parse().map_err(|_| AttrError::at(key, format!("{} {key} `{v}` is not an int32", parts.opcode)))
    }
}

impl AttrValue for super::top8::Top8Mode {
    fn print(&self) -> Option<String> {
        Some(self.to_string())
    }

    fn parse(key: &str, parts: &Parts<'_>) -> Result<Self, AttrError> {
        parts.need(key)?.parse().map_err(|e: super::top8::UnknownTop8Mode| AttrError::at(key, e))
    }
}

impl AttrValue for super::shuffle::ShuffleMask {
    fn print(&self) -> Option<String> {
        Some(self.to_string())
    }

    fn parse(key: &str, parts: &Parts<'_>) -> Result<Self, AttrError> {
        parts.need(key)?.parse().map_err(|e: super::shuffle::BadShuffleMask| AttrError::at(key, e))
    }
}

impl AttrValue for AffinePattern {
    fn print(&self) -> Option<String> {
        Some(self.to_string())
    }

    fn parse(key: &str, parts: &Parts<'_>) -> Result<Self, AttrError> {
        parts.need(key)?.parse().map_err(|e: BadPattern| AttrError::at(key, e))
    }
}

/// A number, such as a memset's value.
impl AttrValue for f64 {
    fn print(&self) -> Option<String> {
        Some(self.to_string())
    }

    fn parse(key: &str, parts: &Parts<'_>) -> Result<Self, AttrError> {
        let v = parts.need(key)?;
        v.parse().map_err(|_| AttrError::at(key, format!("{} {key} `{v}` is not a number", parts.opcode)))
    }
}
