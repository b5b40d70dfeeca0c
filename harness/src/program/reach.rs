//! How far one operand element reaches in an op's result, which the differential's per-element
//! poison spreads by, so a NaN lane poisons only what is computed from it: a table op's reach is
//! a column of its row ([`Spread`], read here), a fixed op's is stated here.

use super::step::Op;
use super::table::Spread;

/// What one element of an operand reaches in the op's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// The result element at the same position, the operand broadcast to the result's shape
    /// (Burn broadcasts size-1 dims).
    Elementwise,
    /// Every result element of the same lane along the dim: the result keeps the operand's
    /// shape (a scan, a sort, a softmax) or reduces the dim to 1 (a reduction with `keepdim`).
    Lane(usize),
    /// The element at the same row-major position (a reshape keeps the order).
    RowMajor,
    /// Every element of the result: whole-tensor reductions, matmul, the layout ops not mapped
    /// element by element (swap_dims, slice, cat, gathers and scatters), convolutions and
    /// poolings, quantization (one scale for the whole tensor).
    Whole,
}

impl Spread {
    /// The reach of a step over `dim` (read only for a lane).
    fn at(self, dim: usize) -> Reach {
        match self {
            Spread::Element => Reach::Elementwise,
            Spread::Lane => Reach::Lane(dim),
            Spread::Whole => Reach::Whole,
        }
    }
}

impl Op {
    /// How far one operand element reaches in the result (see [`Reach`]).
    pub fn reach(&self) -> Reach {
        match self {
            Op::Unary { op, .. } => op.spec().spread.at(0),
            Op::Binary { op, .. } => op.spec().spread.at(0),
            Op::Scalar { op, .. } => op.spec().spread.at(0),
            Op::Compare { op, .. } => op.spec().spread.at(0),
            Op::AlongDim { op, dim, .. } => op.spec().spread.at(usize::from(*dim)),
            Op::Cast { .. }
            | Op::Clamp { .. }
            | Op::MaskWhere { .. }
            | Op::MaskFill { .. }
            | Op::Logic { .. }
            | Op::Not { .. } => Reach::Elementwise,
            Op::SumDim { dim, .. } | Op::ArgMax { dim, .. } => Reach::Lane(usize::from(*dim)),
            Op::Reshape { .. } => Reach::RowMajor,
            Op::Matmul { .. }
            | Op::SwapDims { .. }
            | Op::Slice { .. }
            | Op::Cat { .. }
            | Op::Quantized { .. }
            | Op::Module { .. } => Reach::Whole,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{ALONG_DIM, UNARY};

    #[test]
    fn a_unary_entry_that_reduces_or_quantizes_is_not_element_wise() {
        for spec in UNARY {
            let whole = [
                "sum()",
                "mean()",
                "prod()",
                "max()",
                "min()",
                "max_abs()",
                "quantize",
            ]
            .iter()
            .any(|call| spec.call.contains(call));
            let spread = if whole {
                Spread::Whole
            } else {
                Spread::Element
            };
            assert_eq!(spread, spec.spread, "{}: {}", spec.name, spec.call);
        }
    }

    #[test]
    fn a_lane_wise_entry_keeps_or_reduces_its_dim_and_names_it() {
        for spec in ALONG_DIM {
            assert_ne!(spec.spread, Spread::Element, "{}", spec.name);
            if spec.spread == Spread::Lane {
                // Each reads the operand along `d` only: its call names the dim.
                assert!(
                    crate::program::mentions_ident(spec.call, "d"),
                    "{}",
                    spec.name
                );
            }
        }
    }
}
