//! The ops outside the tables as a typed table of their own: one [`FixedOp`] per op, its row
//! ([`FixedOp::row`]: name, operand kinds, result dtype and kind) and the op a row makes, each an
//! exhaustive match, so a new fixed op is a compile error wherever it needs a column (which op
//! is which fixed op: `Op::fixed`, in `entry.rs`).

use super::kind::Kind;
use super::op::{LogicOp, Op};
use super::step::Slot;
use super::table::ResultDtype;

/// An op outside the tables: its own `Op` variant (a cast per kind it casts to, a logic op per
/// operator), with fields no table's rows share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FixedOp {
    /// `lhs.matmul(rhs)`.
    Matmul,
    /// `sum_dim(dim)`.
    SumDim,
    /// `argmax(dim)`.
    ArgMax,
    /// `clamp(min, max)`.
    Clamp,
    /// `reshape(dims)`.
    Reshape,
    /// `swap_dims(dim0, dim1)`.
    SwapDims,
    /// `slice` along one dim.
    Slice,
    /// `Tensor::cat`.
    Cat,
    /// `mask_where(mask, value)`.
    MaskWhere,
    /// `mask_fill(mask, value)`.
    MaskFill,
    /// `float()`.
    CastToFloat,
    /// `int()`.
    CastToInt,
    /// `bool()`.
    CastToBool,
    /// `bool_and`.
    And,
    /// `bool_or`.
    Or,
    /// `bool_not`.
    Not,
}

/// A fixed op's row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedRow {
    /// Its entry's name (`dispatch-fuzz ops`, the session's counts).
    pub name: &'static str,
    /// The operand kinds `typing::op_output` lets it take.
    pub kinds: &'static [Kind],
    /// The dtype its result is stored in (a plain kind conversion's is the device's default;
    /// one with a dtype, [`Op::result_dtype`], names it).
    pub dtype: ResultDtype,
    /// Its result's kind, `None` where it is its first operand's.
    pub result: Option<Kind>,
}

const FLOAT: &[Kind] = &[Kind::Float];
const NUMERIC: &[Kind] = &[Kind::Float, Kind::Int];
const ANY: &[Kind] = &[Kind::Float, Kind::Int, Kind::Bool];
const BOOL: &[Kind] = &[Kind::Bool];

impl FixedOp {
    /// Every fixed op, in the order `dispatch-fuzz ops` lists them.
    pub const ALL: [FixedOp; 16] = [
        FixedOp::Matmul,
        FixedOp::SumDim,
        FixedOp::ArgMax,
        FixedOp::Clamp,
        FixedOp::Reshape,
        FixedOp::SwapDims,
        FixedOp::Slice,
        FixedOp::Cat,
        FixedOp::MaskWhere,
        FixedOp::MaskFill,
        FixedOp::CastToFloat,
        FixedOp::CastToInt,
        FixedOp::CastToBool,
        FixedOp::And,
        FixedOp::Or,
        FixedOp::Not,
    ];

    /// Its row.
    pub fn row(self) -> FixedRow {
        use ResultDtype::{Default, Operand};
        let row = |name, kinds, dtype, result| FixedRow {
            name,
            kinds,
            dtype,
            result,
        };
        match self {
            FixedOp::Matmul => row("matmul", FLOAT, Operand, None),
            FixedOp::SumDim => row("sum_dim", NUMERIC, Operand, None),
            FixedOp::ArgMax => row("argmax", NUMERIC, Default, Some(Kind::Int)),
            FixedOp::Clamp => row("clamp", NUMERIC, Operand, None),
            FixedOp::Reshape => row("reshape", ANY, Operand, None),
            FixedOp::SwapDims => row("swap_dims", ANY, Operand, None),
            FixedOp::Slice => row("slice", ANY, Operand, None),
            FixedOp::Cat => row("cat", ANY, Operand, None),
            FixedOp::MaskWhere => row("mask_where", ANY, Operand, None),
            FixedOp::MaskFill => row("mask_fill", ANY, Operand, None),
            FixedOp::CastToFloat => row(
                "cast to float",
                &[Kind::Int, Kind::Bool],
                Default,
                Some(Kind::Float),
            ),
            FixedOp::CastToInt => row(
                "cast to int",
                &[Kind::Float, Kind::Bool],
                Default,
                Some(Kind::Int),
            ),
            FixedOp::CastToBool => row(
                "cast to bool",
                &[Kind::Float, Kind::Int],
                Default,
                Some(Kind::Bool),
            ),
            FixedOp::And => row("and", BOOL, Operand, None),
            FixedOp::Or => row("or", BOOL, Operand, None),
            FixedOp::Not => row("not", BOOL, Operand, None),
        }
    }

    /// Its entry's name.
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// The fixed op whose entry is named `name`.
    pub fn named(name: &str) -> Option<FixedOp> {
        FixedOp::ALL.into_iter().find(|f| f.name() == name)
    }

    /// This op over `x` and `y` (a second operand where it takes one), its other fields taken
    /// from `bytes`: `fixup` then repairs whatever does not fit.
    pub fn op(self, (x, y): (Slot, Slot), bytes: [u8; 4]) -> Op {
        let [a, b, c, d] = bytes;
        let small = |v: u8| v % 4;
        let cast = |to| Op::Cast {
            src: x,
            to,
            dtype: None,
        };
        match self {
            FixedOp::Matmul => Op::Matmul {
                lhs: x,
                rhs: y,
                transpose_rhs: a.is_multiple_of(2),
            },
            FixedOp::SumDim => Op::SumDim {
                src: x,
                dim: small(a),
            },
            FixedOp::ArgMax => Op::ArgMax {
                src: x,
                dim: small(a),
            },
            FixedOp::Clamp => Op::Clamp {
                src: x,
                min: (a as i8).min(b as i8),
                max: (a as i8).max(b as i8),
            },
            FixedOp::Reshape => Op::Reshape {
                src: x,
                dims: vec![1 + small(a), 1 + small(b)],
            },
            FixedOp::SwapDims => Op::SwapDims {
                src: x,
                dim0: small(a),
                dim1: small(b),
            },
            FixedOp::Slice => Op::Slice {
                src: x,
                dim: small(a),
                start: small(b),
                len: 1 + small(c),
            },
            FixedOp::Cat => Op::Cat {
                first: x,
                rest: vec![y],
                dim: small(a),
            },
            FixedOp::MaskWhere => Op::MaskWhere {
                src: x,
                mask: y,
                value: x,
            },
            FixedOp::MaskFill => Op::MaskFill {
                src: x,
                mask: y,
                value: d as i8,
            },
            FixedOp::CastToFloat => cast(Kind::Float),
            FixedOp::CastToInt => cast(Kind::Int),
            FixedOp::CastToBool => cast(Kind::Bool),
            FixedOp::And => Op::Logic {
                op: LogicOp::And,
                lhs: x,
                rhs: y,
            },
            FixedOp::Or => Op::Logic {
                op: LogicOp::Or,
                lhs: x,
                rhs: y,
            },
            FixedOp::Not => Op::Not { src: x },
        }
    }
}
