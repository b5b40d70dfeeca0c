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
        }
    }

    /// Whether a bool at this edge is true.
    pub fn truth(self) -> bool {
        matches!(self, Edge::Max | Edge::Subnormal | Edge::Nan | Edge::Inf)
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
            Edge::Mixed => Edge::Max.literal(dtype),
        }
    }
}
