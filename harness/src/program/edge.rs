//! The edge values of a dtype a `Create` step's fill may name, and their Rust constants.

use arbitrary::Arbitrary;
use serde::{Deserialize, Serialize};

use super::dtype::Dtype;
use super::kind::Kind;

/// A value at an edge of a dtype, where rounding, overflow, casts and the backends part ways.
/// An int dtype has no -0, subnormal, NaN or infinity: there `NegZero` is 0, `Subnormal` 1,
/// `Nan` and `Inf` its largest value and `NegInf` its smallest, so each edge means something
/// in every dtype. A bool is true for the positive edges and NaN, false for the others.
#[derive(
    Arbitrary, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord,
)]
#[serde(rename_all = "snake_case")]
pub enum Edge {
    /// The largest finite value (`f16::MAX` is 65504, `i8::MAX` 127).
    Max,
    /// The most negative finite value (`f16::MIN`, `i8::MIN`; 0 unsigned).
    Min,
    /// -0.0.
    NegZero,
    /// The smallest positive subnormal (`f16::from_bits(1)`, about 6e-8).
    Subnormal,
    /// A quiet NaN.
    Nan,
    /// +infinity.
    Inf,
    /// -infinity.
    NegInf,
    /// Each of the edges above in turn, element by element.
    Mixed,
    /// The largest value below 1 (`1 - EPSILON / 2`: f32 0.99999994, f16 0.9995117), the edge of
    /// the domains of `atanh`, `asin` and `acos`, where a formula that subtracts from 1 cancels.
    /// 0 in an int dtype.
    BelowOne,
    /// The smallest value above -1 (`-(1 - EPSILON / 2)`): the other side of those domains.
    /// 0 in an int dtype.
    AboveMinusOne,
}

impl Edge {
    /// The edges `Mixed` cycles through, in order: the four a one-dimensional tensor holds (a
    /// dimension has at most four elements) are the largest value, NaN, -0 and -inf.
    pub const CYCLE: [Edge; 7] = [
        Edge::Max,
        Edge::Nan,
        Edge::NegZero,
        Edge::NegInf,
        Edge::Min,
        Edge::Inf,
        Edge::Subnormal,
    ];

    /// The two edges next to ±1, which `Mixed` leaves out so that the fills of older programs
    /// stay what they were: with [`Edge::CYCLE`], every single edge.
    pub const NEXT_TO_ONE: [Edge; 2] = [Edge::BelowOne, Edge::AboveMinusOne];

    /// The edge of element `i`.
    pub fn at(self, i: usize) -> Edge {
        match self {
            Edge::Mixed => Edge::CYCLE[i % Edge::CYCLE.len()],
            edge => edge,
        }
    }

    /// The name the listing gives it (`fill::edge_max`).
    pub fn name(self) -> &'static str {
        match self {
            Edge::Max => "max",
            Edge::Min => "min",
            Edge::NegZero => "neg_zero",
            Edge::Subnormal => "subnormal",
            Edge::Nan => "nan",
            Edge::Inf => "inf",
            Edge::NegInf => "neg_inf",
            Edge::Mixed => "mixed",
            Edge::BelowOne => "below_one",
            Edge::AboveMinusOne => "above_minus_one",
        }
    }

    /// Whether a bool at this edge is true.
    pub fn truth(self) -> bool {
        matches!(
            self,
            Edge::Max | Edge::Subnormal | Edge::Nan | Edge::Inf | Edge::BelowOne
        )
    }

    /// A Rust expression of this (single) edge's value in `dtype`, as reproducers print it.
    pub fn literal(self, dtype: Dtype) -> String {
        let ty = dtype.rust_type();
        if dtype.kind() == Kind::Bool {
            return self.truth().to_string();
        }
        let float = dtype.kind() == Kind::Float;
        let half = matches!(dtype, Dtype::F16 | Dtype::Bf16);
        match self {
            Edge::Max => format!("{ty}::MAX"),
            Edge::Min => format!("{ty}::MIN"),
            Edge::NegZero if half => format!("{ty}::NEG_ZERO"),
            Edge::NegZero if float => format!("-0.0{ty}"),
            Edge::NegZero => format!("0{ty}"),
            Edge::Subnormal if float => format!("{ty}::from_bits(1)"),
            Edge::Subnormal => format!("1{ty}"),
            Edge::Nan if float => format!("{ty}::NAN"),
            Edge::Inf if float => format!("{ty}::INFINITY"),
            Edge::NegInf if float => format!("{ty}::NEG_INFINITY"),
            Edge::Nan | Edge::Inf => format!("{ty}::MAX"),
            Edge::NegInf => format!("{ty}::MIN"),
            Edge::BelowOne | Edge::AboveMinusOne if !float => format!("0{ty}"),
            Edge::BelowOne if half => format!("{ty}::ONE - {ty}::EPSILON / {ty}::from_f32(2.0)"),
            Edge::BelowOne => format!("1.0 - {ty}::EPSILON / 2.0"),
            Edge::AboveMinusOne if half => {
                format!("{ty}::EPSILON / {ty}::from_f32(2.0) - {ty}::ONE")
            }
            Edge::AboveMinusOne => format!("{ty}::EPSILON / 2.0 - 1.0"),
            Edge::Mixed => Edge::Max.literal(dtype),
        }
    }
}
