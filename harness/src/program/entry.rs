//! Op entries as keys: which table entry (or op outside the tables) an op step runs, every entry
//! with the operand kinds it takes, and an op of a chosen entry over given operands, for
//! counting what the oracles judged per entry and steering a session toward what they have not.

use serde::Serialize;

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
    /// The ops outside the tables ([`FIXED`]).
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

impl std::fmt::Display for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.family, self.name)
    }
}

const FLOAT: &[Kind] = &[Kind::Float];
const NUMERIC: &[Kind] = &[Kind::Float, Kind::Int];
const ANY: &[Kind] = &[Kind::Float, Kind::Int, Kind::Bool];
const BOOL: &[Kind] = &[Kind::Bool];

/// The ops outside the tables, with the operand kinds `typing::op_output` lets them take and
/// the dtype their result is stored in (a plain kind conversion's is the device's default; one
/// with a dtype, [`Op::result_dtype`], names it).
const FIXED: &[(&str, &[Kind], ResultDtype)] = &[
    ("matmul", FLOAT, ResultDtype::Operand),
    ("sum_dim", NUMERIC, ResultDtype::Operand),
    ("argmax", NUMERIC, ResultDtype::Default),
    ("clamp", NUMERIC, ResultDtype::Operand),
    ("reshape", ANY, ResultDtype::Operand),
    ("swap_dims", ANY, ResultDtype::Operand),
    ("slice", ANY, ResultDtype::Operand),
    ("cat", ANY, ResultDtype::Operand),
    ("mask_where", ANY, ResultDtype::Operand),
    ("mask_fill", ANY, ResultDtype::Operand),
    (
        "cast to float",
        &[Kind::Int, Kind::Bool],
        ResultDtype::Default,
    ),
    (
        "cast to int",
        &[Kind::Float, Kind::Bool],
        ResultDtype::Default,
    ),
    (
        "cast to bool",
        &[Kind::Float, Kind::Int],
        ResultDtype::Default,
    ),
    ("and", BOOL, ResultDtype::Operand),
    ("or", BOOL, ResultDtype::Operand),
    ("not", BOOL, ResultDtype::Operand),
];

/// Whether `name` is an op outside the tables ([`FIXED`]).
pub fn is_fixed(name: &str) -> bool {
    FIXED.iter().any(|(n, _, _)| *n == name)
}

fn fixed(name: &'static str) -> Entry {
    Entry {
        family: Family::Fixed,
        name,
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
    out.extend(FIXED.iter().map(|(name, kinds, _)| (fixed(name), *kinds)));
    out
}

impl Op {
    /// The entry this op runs.
    pub fn entry(&self) -> Entry {
        let entry = |family, name| Entry { family, name };
        match self {
            Op::Unary { op, .. } => entry(Family::Unary, op.name()),
            Op::AlongDim { op, .. } => entry(Family::AlongDim, op.name()),
            Op::Quantized { op, .. } => entry(Family::Quantized, op.name()),
            Op::Binary { op, .. } => entry(Family::Binary, op.name()),
            Op::Compare { op, .. } => entry(Family::Compare, op.name()),
            Op::Scalar { op, .. } => entry(Family::Scalar, op.name()),
            Op::Module { op, .. } => entry(Family::Module, op.name()),
            Op::Matmul { .. } => fixed("matmul"),
            Op::SumDim { .. } => fixed("sum_dim"),
            Op::ArgMax { .. } => fixed("argmax"),
            Op::Clamp { .. } => fixed("clamp"),
            Op::Reshape { .. } => fixed("reshape"),
            Op::SwapDims { .. } => fixed("swap_dims"),
            Op::Slice { .. } => fixed("slice"),
            Op::Cat { .. } => fixed("cat"),
            Op::MaskWhere { .. } => fixed("mask_where"),
            Op::MaskFill { .. } => fixed("mask_fill"),
            Op::Cast { to, .. } => fixed(match to {
                Kind::Float => "cast to float",
                Kind::Int => "cast to int",
                Kind::Bool => "cast to bool",
            }),
            Op::Logic {
                op: LogicOp::And, ..
            } => fixed("and"),
            Op::Logic {
                op: LogicOp::Or, ..
            } => fixed("or"),
            Op::Not { .. } => fixed("not"),
        }
    }

    /// The dtype its result is stored in, as its table row (or [`FIXED`]'s) states it: a cast
    /// to a named dtype has that one.
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
            _ => {
                let name = self.entry().name;
                FIXED
                    .iter()
                    .find(|(n, _, _)| *n == name)
                    .map_or(ResultDtype::Default, |(_, _, d)| *d)
            }
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
        Family::Fixed => Some(match entry.name {
            "argmax" => Kind::Int,
            "cast to float" => Kind::Float,
            "cast to int" => Kind::Int,
            "cast to bool" => Kind::Bool,
            _ => kind,
        }),
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
        (Family::Fixed, name) => fixed_op(name, (x, y), bytes)?,
    })
}

/// An op of the fixed entry `name` over `x` and `y`, its other fields taken from `bytes`.
fn fixed_op(name: &str, (x, y): (Slot, Slot), bytes: [u8; 4]) -> Option<Op> {
    let [a, b, c, d] = bytes;
    let small = |v: u8| v % 4;
    Some(match name {
        "matmul" => Op::Matmul {
            lhs: x,
            rhs: y,
            transpose_rhs: a.is_multiple_of(2),
        },
        "sum_dim" => Op::SumDim {
            src: x,
            dim: small(a),
        },
        "argmax" => Op::ArgMax {
            src: x,
            dim: small(a),
        },
        "clamp" => Op::Clamp {
            src: x,
            min: (a as i8).min(b as i8),
            max: (a as i8).max(b as i8),
        },
        "reshape" => Op::Reshape {
            src: x,
            dims: vec![1 + small(a), 1 + small(b)],
        },
        "swap_dims" => Op::SwapDims {
            src: x,
            dim0: small(a),
            dim1: small(b),
        },
        "slice" => Op::Slice {
            src: x,
            dim: small(a),
            start: small(b),
            len: 1 + small(c),
        },
        "cat" => Op::Cat {
            first: x,
            rest: vec![y],
            dim: small(a),
        },
        "mask_where" => Op::MaskWhere {
            src: x,
            mask: y,
            value: x,
        },
        "mask_fill" => Op::MaskFill {
            src: x,
            mask: y,
            value: d as i8,
        },
        "cast to float" => Op::Cast {
            src: x,
            to: Kind::Float,
            dtype: None,
        },
        "cast to int" => Op::Cast {
            src: x,
            to: Kind::Int,
            dtype: None,
        },
        "cast to bool" => Op::Cast {
            src: x,
            to: Kind::Bool,
            dtype: None,
        },
        "and" => Op::Logic {
            op: LogicOp::And,
            lhs: x,
            rhs: y,
        },
        "or" => Op::Logic {
            op: LogicOp::Or,
            lhs: x,
            rhs: y,
        },
        "not" => Op::Not { src: x },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
