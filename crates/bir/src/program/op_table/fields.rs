//! How each field type of an op reads from and prints into the text format: the `Field` and
//! `Attr` implementations behind `declare_ops!`.

use penguin::{
    ActFunc, AffinePattern, AluOp, CastMode, EngineAccumulationType, PerfMode, ScalarOperand, SparsityPattern,
    TilePosition, TileSize,
};

use super::super::ap::HwAp;
use super::{Attr, Field, FromPartsError, Parts};

impl Field for HwAp {
    fn take(parts: &mut Parts<'_>, field: &'static str) -> Result<Self, FromPartsError> {
        let name = parts.name;
        parts
            .take_ap(field)
            .ok_or_else(|| FromPartsError::access_pattern(field, format!("{name} needs access pattern `{field}=`")))
    }

    #[cfg(test)]
    fn example() -> Self {
        crate::program::test_ap(penguin::Memory::Sbuf, 0, 4, 1, 0, vec![penguin::Dim::new(1, 8)])
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
        Some(crate::program::test_ap(penguin::Memory::Sbuf, 0, 4, 1, 96, vec![penguin::Dim::new(1, 1)]))
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
        ScalarOperand::Tile(crate::program::test_ap(penguin::Memory::Sbuf, 0, 4, 1, 64, vec![penguin::Dim::new(1, 1)]))
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

impl Field for penguin::Top8Mode {
    fn take(parts: &mut Parts<'_>, field: &'static str) -> Result<Self, FromPartsError> {
        parts
            .required(field)?
            .parse()
            .map_err(|e: penguin::UnknownTop8Mode| FromPartsError::attribute(field, e.to_string()))
    }

    #[cfg(test)]
    fn example() -> Self {
        penguin::Top8Mode::MatchReplace8
    }
}

impl Attr for penguin::Top8Mode {
    fn value(&self) -> Option<String> {
        Some(self.to_string())
    }
}

impl Field for penguin::ShuffleMask {
    fn take(parts: &mut Parts<'_>, field: &'static str) -> Result<Self, FromPartsError> {
        parts
            .required(field)?
            .parse()
            .map_err(|e: penguin::BadShuffleMask| FromPartsError::attribute(field, e.to_string()))
    }

    #[cfg(test)]
    fn example() -> Self {
        let mut m = [0u8; 32];
        m[5] = 255;
        penguin::ShuffleMask(m)
    }
}

impl Attr for penguin::ShuffleMask {
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
