//! Op entries as keys: which table entry (or op outside the tables) an op step runs, every entry
//! with the operand kinds it takes, and an op of a chosen entry over given operands, for
//! counting what the oracles judged per entry and steering a session toward what they have not.

use serde::Serialize;

use super::fixed_ops::FixedOp;
use super::step::{
    AlongDimOp, BinaryOp, CompareOp, Kind, LogicOp, ModuleOp, Op, QuantizedOp, ScalarOp, Scheme,
    Slot, UnaryOp,
};
use super::table::{ResultDtype, Unspecified};
use super::{ALONG_DIM, BINARY, COMPARE, MODULE, QUANTIZED, SCALAR, UNARY};

/// An op family: the table an entry is a row of, or [`Family::Fixed`] for an op outside the
/// tables. Its text (`unary`, `along-dim`, ...) is the one `dispatch-fuzz ops`, `fuzz --aim` and
/// the session's counts use; the variants go in the order of their texts, so entries sort as
/// their texts do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// [`ALONG_DIM`]'s rows.
    AlongDim,
    /// [`BINARY`]'s rows.
    Binary,
    /// [`COMPARE`]'s rows.
    Compare,
    /// The ops outside the tables ([`FixedOp`]).
    Fixed,
    /// [`MODULE`]'s rows.
    Module,
    /// [`QUANTIZED`]'s rows.
    Quantized,
    /// [`SCALAR`]'s rows.
    Scalar,
    /// [`UNARY`]'s rows.
    Unary,
}

impl Family {
    /// Every family.
    pub const ALL: [Family; 8] = [
        Family::AlongDim,
        Family::Binary,
        Family::Compare,
        Family::Fixed,
        Family::Module,
        Family::Quantized,
        Family::Scalar,
        Family::Unary,
    ];

    /// Its text.
    pub fn name(self) -> &'static str {
        match self {
            Family::AlongDim => "along-dim",
            Family::Binary => "binary",
            Family::Compare => "compare",
            Family::Fixed => "fixed",
            Family::Module => "module",
            Family::Quantized => "quantized",
            Family::Scalar => "scalar",
            Family::Unary => "unary",
        }
    }

    /// The family whose text is `name`.
    pub fn named(name: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.name() == name)
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `pad`, so that a width (`{family:<10}`) lines a listing up as its text did.
        f.pad(self.name())
    }
}

/// One op entry: its family and its name in that family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Entry {
    /// The family.
    pub family: Family,
    /// The entry's name in its family.
    pub name: &'static str,
}

impl Entry {
    /// The fixed op this entry is, if it is one.
    pub fn fixed(&self) -> Option<FixedOp> {
        (self.family == Family::Fixed)
            .then(|| FixedOp::named(self.name))
            .flatten()
    }
}

impl std::fmt::Display for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.family, self.name)
    }
}

const FLOAT: &[Kind] = &[Kind::Float];
fn fixed(op: FixedOp) -> Entry {
    Entry {
        family: Family::Fixed,
        name: op.name(),
    }
}

/// Every entry, table order within each family, with the operand kinds it takes.
pub fn entries() -> Vec<(Entry, &'static [Kind])> {
    let entry = |family, name| Entry { family, name };
    let mut out: Vec<(Entry, &'static [Kind])> = Vec::new();
    out.extend(
        UNARY
            .iter()
            .map(|s| (entry(Family::Unary, s.name), s.kinds)),
    );
    out.extend(
        ALONG_DIM
            .iter()
            .map(|s| (entry(Family::AlongDim, s.name), s.kinds)),
    );
    out.extend(
        QUANTIZED
            .iter()
            .map(|s| (entry(Family::Quantized, s.name), s.kinds)),
    );
    for (family, table) in [
        (Family::Binary, BINARY),
        (Family::Compare, COMPARE),
        (Family::Scalar, SCALAR),
    ] {
        out.extend(table.iter().map(|s| (entry(family, s.name), s.kinds)));
    }
    out.extend(
        MODULE
            .iter()
            .map(|s| (entry(Family::Module, s.name), FLOAT)),
    );
    out.extend(FixedOp::ALL.map(|f| (fixed(f), f.row().kinds)));
    out
}

impl Op {
    /// The entry this op runs.
    pub fn entry(&self) -> Entry {
        match self.row_of() {
            RowOf::Table(family, name) => Entry { family, name },
            RowOf::Fixed(f) => fixed(f),
        }
    }

    /// The dtype its result is stored in, as its table row (or its [`FixedOp`]'s) states it: a
    /// cast to a named dtype has that one.
    pub fn result_dtype(&self) -> ResultDtype {
        match self {
            Op::Unary { op, .. } => op.spec().dtype,
            Op::AlongDim { op, .. } => op.spec().dtype,
            Op::Quantized { op, .. } => op.spec().dtype,
            Op::Binary { op, .. } => op.spec().dtype,
            Op::Compare { op, .. } => op.spec().dtype,
            Op::Scalar { op, .. } => op.spec().dtype,
            Op::Module { op, .. } => op.spec().dtype,
            Op::Cast {
                dtype: Some(dtype), ..
            } => ResultDtype::Named(*dtype),
            op => op.fixed().map_or(ResultDtype::Default, |f| f.row().dtype),
        }
    }
}

/// The kind of `entry`'s result over a first operand of kind `kind`, or `None` for an entry no
/// op has.
pub fn result_kind(entry: Entry, kind: Kind) -> Option<Kind> {
    let spec = |table: &'static [super::table::OpSpec]| {
        table
            .iter()
            .find(|s| s.name == entry.name)
            .map(|s| s.result_kind(kind))
    };
    match entry.family {
        Family::Unary => spec(UNARY),
        Family::Binary => spec(BINARY),
        Family::Compare => spec(COMPARE),
        Family::Scalar => spec(SCALAR),
        Family::Quantized => spec(QUANTIZED),
        Family::AlongDim => AlongDimOp::named(entry.name).map(|o| o.spec().result_kind(kind)),
        Family::Module => ModuleOp::named(entry.name).map(|o| o.spec().result_kind()),
        Family::Fixed => entry.fixed().map(|f| f.row().result.unwrap_or(kind)),
    }
}

/// Why no value of `entry` can be recorded in a scope, replayed and compared with its eager
/// value, if none can: a random draw is drawn again by every replay (so eager-replay leaves it
/// open), and an entry that reads data mid-call meets a placeholder with no data in a scope.
pub fn why_not_replayed(entry: Entry) -> Option<&'static str> {
    let (unspecified, call) = match entry.family {
        Family::Unary => UnaryOp::named(entry.name).map(|o| (o.spec().unspecified, o.spec().call)),
        Family::AlongDim => {
            AlongDimOp::named(entry.name).map(|o| (o.spec().unspecified, o.spec().call))
        }
        Family::Quantized => {
            QuantizedOp::named(entry.name).map(|o| (o.spec().unspecified, o.spec().call))
        }
        Family::Module => {
            ModuleOp::named(entry.name).map(|o| (o.spec().unspecified, o.spec().call))
        }
        Family::Binary | Family::Compare | Family::Scalar | Family::Fixed => None,
    }?;
    if unspecified == Unspecified::Random {
        Some("draws random values: every replay draws again, so eager-replay leaves it open")
    } else if super::table::reads_data(call) {
        Some("reads data mid-call: in a scope that meets a placeholder with no data")
    } else {
        None
    }
}

/// An op of `entry` over `operands` (its first operand first; a second one defaults to the
/// first), its other fields taken from `bytes`: `fixup` then repairs whatever does not fit.
/// `None` for an entry no op has.
pub fn op_of(entry: Entry, operands: &[Slot], bytes: [u8; 4]) -> Option<Op> {
    let x = *operands.first()?;
    let y = operands.get(1).copied().unwrap_or(x);
    let a = bytes[0];
    let small = |v: u8| v % 4;
    Some(match (entry.family, entry.name) {
        (Family::Unary, name) => Op::Unary {
            op: UnaryOp::named(name)?,
            src: x,
        },
        (Family::AlongDim, name) => Op::AlongDim {
            op: AlongDimOp::named(name)?,
            src: x,
            dim: small(a),
        },
        (Family::Quantized, name) => Op::Quantized {
            op: QuantizedOp::named(name)?,
            src: x,
            scheme: Scheme::all().nth(usize::from(a) % super::SCHEMES.len())?,
        },
        (Family::Binary, name) => Op::Binary {
            op: BinaryOp::named(name)?,
            lhs: x,
            rhs: y,
        },
        (Family::Compare, name) => Op::Compare {
            op: CompareOp::named(name)?,
            lhs: x,
            rhs: y,
        },
        (Family::Scalar, name) => Op::Scalar {
            op: ScalarOp::named(name)?,
            src: x,
            value: a as i8,
        },
        (Family::Module, name) => Op::Module {
            op: ModuleOp::named(name)?,
            src: x,
            kernel: if a.is_multiple_of(2) { 1 } else { 3 },
        },
        (Family::Fixed, name) => FixedOp::named(name)?.op((x, y), bytes),
    })
}

/// Which table's row an op is, or which fixed op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RowOf {
    /// A row of a table: its family and name.
    Table(super::Family, &'static str),
    /// A fixed op.
    Fixed(FixedOp),
}

impl Op {
    /// The row this op is (one exhaustive match: a new `Op` variant is a table's or a fixed
    /// op's here).
    fn row_of(&self) -> RowOf {
        let table = |family, name| RowOf::Table(family, name);
        RowOf::Fixed(match self {
            Op::Unary { op, .. } => return table(Family::Unary, op.name()),
            Op::AlongDim { op, .. } => return table(Family::AlongDim, op.name()),
            Op::Quantized { op, .. } => return table(Family::Quantized, op.name()),
            Op::Binary { op, .. } => return table(Family::Binary, op.name()),
            Op::Compare { op, .. } => return table(Family::Compare, op.name()),
            Op::Scalar { op, .. } => return table(Family::Scalar, op.name()),
            Op::Module { op, .. } => return table(Family::Module, op.name()),
            Op::Matmul { .. } => FixedOp::Matmul,
            Op::SumDim { .. } => FixedOp::SumDim,
            Op::ArgMax { .. } => FixedOp::ArgMax,
            Op::Clamp { .. } => FixedOp::Clamp,
            Op::Reshape { .. } => FixedOp::Reshape,
            Op::SwapDims { .. } => FixedOp::SwapDims,
            Op::Slice { .. } => FixedOp::Slice,
            Op::Cat { .. } => FixedOp::Cat,
            Op::MaskWhere { .. } => FixedOp::MaskWhere,
            Op::MaskFill { .. } => FixedOp::MaskFill,
            Op::Cast {
                to: Kind::Float, ..
            } => FixedOp::CastToFloat,
            Op::Cast { to: Kind::Int, .. } => FixedOp::CastToInt,
            Op::Cast { to: Kind::Bool, .. } => FixedOp::CastToBool,
            Op::Logic {
                op: LogicOp::And, ..
            } => FixedOp::And,
            Op::Logic {
                op: LogicOp::Or, ..
            } => FixedOp::Or,
            Op::Not { .. } => FixedOp::Not,
        })
    }

    /// The fixed op this op is, if it is one (`None`: a table's row).
    pub fn fixed(&self) -> Option<FixedOp> {
        match self.row_of() {
            RowOf::Fixed(f) => Some(f),
            RowOf::Table(..) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fixed_op_makes_an_op_that_is_that_fixed_op() {
        for f in FixedOp::ALL {
            assert_eq!(f.op((0, 1), [1, 2, 3, 4]).fixed(), Some(f), "{f:?}");
            assert_eq!(FixedOp::named(f.name()), Some(f));
        }
    }

    #[test]
    fn every_entry_has_an_op_and_the_op_names_its_entry_back() {
        for (entry, kinds) in entries() {
            assert!(!kinds.is_empty(), "{entry}");
            let op =
                op_of(entry, &[0, 1], [1, 2, 3, 4]).unwrap_or_else(|| panic!("no op for {entry}"));
            assert_eq!(op.entry(), entry);
        }
    }

    #[test]
    fn entries_are_distinct() {
        let all = entries();
        let distinct: std::collections::BTreeSet<_> = all.iter().map(|(e, _)| *e).collect();
        assert_eq!(distinct.len(), all.len());
    }
}
