//! How far one operand element reaches in an op's result: the table the differential's
//! per-element poison spreads by, so a NaN lane poisons only what is computed from it.

use super::step::Op;

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

/// Unary entries whose every result element reads the whole operand: a whole-tensor reduction
/// broadcast back, or a quantization, whose scale comes from the tensor's largest magnitude.
/// Every other unary entry is element-wise.
pub const UNARY_WHOLE: &[&str] = &[
    "minus_sum",
    "minus_mean",
    "minus_prod",
    "minus_max",
    "minus_min",
    "minus_max_abs",
    "quantize_roundtrip",
    "quantized_read",
    "quantized_reshape",
    "quantized_flip",
    "quantized_permute",
    "quantized_expand",
];

/// Along-dim entries whose result lane along `dim` reads only the same lane of the operand.
/// Every other along-dim entry reaches the whole result.
pub const ALONG_DIM_LANES: &[&str] = &[
    "mean_dim",
    "prod_dim",
    "max_dim",
    "min_dim",
    "max_abs_dim",
    "argmin",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "sort",
    "sort_descending",
    "argsort",
    "argsort_descending",
    "var",
    "var_bias",
    "median",
    "softmax",
    "log_softmax",
    "softmin",
    "quiet_softmax",
    "any_dim",
    "all_dim",
    "flip",
    "topk1",
    "argtopk1",
    "topk1_indices",
    "max_dim_indices",
    "min_dim_indices",
    "sort_indices",
    "sum_dims",
];

impl Op {
    /// How far one operand element reaches in the result (see [`Reach`]).
    pub fn reach(&self) -> Reach {
        match self {
            Op::Unary { op, .. } if UNARY_WHOLE.contains(&op.name()) => Reach::Whole,
            Op::Unary { .. }
            | Op::Binary { .. }
            | Op::Scalar { .. }
            | Op::Compare { .. }
            | Op::Cast { .. }
            | Op::Clamp { .. }
            | Op::MaskWhere { .. }
            | Op::MaskFill { .. }
            | Op::Logic { .. }
            | Op::Not { .. } => Reach::Elementwise,
            Op::AlongDim { op, dim, .. } if ALONG_DIM_LANES.contains(&op.name()) => {
                Reach::Lane(usize::from(*dim))
            }
            Op::SumDim { dim, .. } | Op::ArgMax { dim, .. } => Reach::Lane(usize::from(*dim)),
            Op::Reshape { .. } => Reach::RowMajor,
            _ => Reach::Whole,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{AlongDimOp, UnaryOp, ALONG_DIM, UNARY};

    #[test]
    fn every_name_in_the_reach_tables_is_an_entry() {
        for name in UNARY_WHOLE {
            assert!(UnaryOp::named(name).is_some(), "{name}");
        }
        for name in ALONG_DIM_LANES {
            assert!(AlongDimOp::named(name).is_some(), "{name}");
        }
    }

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
            assert_eq!(
                whole,
                UNARY_WHOLE.contains(&spec.name),
                "{}: {}",
                spec.name,
                spec.call
            );
        }
    }

    #[test]
    fn a_lane_wise_entry_keeps_or_reduces_its_dim_and_names_it() {
        for spec in ALONG_DIM
            .iter()
            .filter(|s| ALONG_DIM_LANES.contains(&s.name))
        {
            // Each reads the operand along `d` only: its call names the dim.
            assert!(
                crate::program::mentions_ident(spec.call, "d"),
                "{}",
                spec.name
            );
        }
    }
}
