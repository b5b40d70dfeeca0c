//! The tensor operations a step can run, each a variant naming its operand slots.

use arbitrary::Arbitrary;
use serde::{Deserialize, Serialize};

use super::along_dim::AlongDimOp;
use super::binary::{BinaryOp, CompareOp, ScalarOp};
use super::dtype::Dtype;
use super::kind::Kind;
use super::module::ModuleOp;
use super::quantized::{QuantizedOp, Scheme};
use super::slot::{Slot, Slots};
use super::table::{Tolerance, Unspecified};
use super::unary::UnaryOp;

/// Bool-only binary logic.
#[derive(Arbitrary, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum LogicOp {
    /// `bool_and`.
    And,
    /// `bool_or`.
    Or,
}

/// A tensor operation. Operand slots are repaired by `fixup` so that kinds and shapes agree;
/// see `program::fixup` for each rule.
#[derive(Arbitrary, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Element-wise unary op.
    Unary {
        /// Which op.
        op: UnaryOp,
        /// Operand.
        src: Slot,
    },
    /// Element-wise binary op; `rhs` broadcasts to `lhs`.
    Binary {
        /// Which op.
        op: BinaryOp,
        /// Left operand: the result has its shape.
        lhs: Slot,
        /// Right operand.
        rhs: Slot,
    },
    /// Op with a scalar right operand.
    Scalar {
        /// Which op.
        op: ScalarOp,
        /// Tensor operand.
        src: Slot,
        /// Scalar operand.
        value: i8,
    },
    /// `lhs.matmul(rhs)`, or `lhs.matmul(rhs.swap_dims(-1, -2))` when `transpose_rhs`.
    Matmul {
        /// Left operand.
        lhs: Slot,
        /// Right operand.
        rhs: Slot,
        /// Transpose the last two dims of `rhs` first.
        transpose_rhs: bool,
    },
    /// `sum_dim(dim)` (float, int): a reduction that keeps the rank.
    SumDim {
        /// Operand.
        src: Slot,
        /// Reduced dim.
        dim: u8,
    },
    /// `argmax(dim)` (float, int): a reduction with an int result.
    ArgMax {
        /// Operand.
        src: Slot,
        /// Reduced dim.
        dim: u8,
    },
    /// `reshape(dims)`; `fixup` replaces dims whose product is wrong by a rank-preserving
    /// `[1, .., n]`.
    Reshape {
        /// Operand.
        src: Slot,
        /// New shape.
        dims: Vec<u8>,
    },
    /// `swap_dims(dim0, dim1)`.
    SwapDims {
        /// Operand.
        src: Slot,
        /// First dim.
        dim0: u8,
        /// Second dim.
        dim1: u8,
    },
    /// `slice` along one dim: `start..start + len`.
    Slice {
        /// Operand.
        src: Slot,
        /// Sliced dim.
        dim: u8,
        /// First index.
        start: u8,
        /// Number of indices (at least 1).
        len: u8,
    },
    /// `Tensor::cat([first, rest..], dim)`.
    Cat {
        /// First tensor: the others must match its kind and every dim but `dim`.
        first: Slot,
        /// Other tensors.
        rest: Vec<Slot>,
        /// Concatenated dim.
        dim: u8,
    },
    /// Kind conversion: `int()`, `float()`, `bool()` or Bool's `int()`/`float()`; with a
    /// dtype, `cast(FloatDType::..)` or `cast(IntDType::..)`, which may keep the kind.
    Cast {
        /// Operand.
        src: Slot,
        /// Target kind.
        to: Kind,
        /// Target dtype, of kind `to` (float or int: a bool tensor has no `cast`); none: the
        /// kind's plain conversion.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dtype: Option<Dtype>,
    },
    /// Comparison to a bool tensor; `rhs` has the same shape as `lhs`.
    Compare {
        /// Which comparison.
        op: CompareOp,
        /// Left operand.
        lhs: Slot,
        /// Right operand.
        rhs: Slot,
    },
    /// `clamp(min, max)` (float, int); `fixup` orders the bounds.
    Clamp {
        /// Operand.
        src: Slot,
        /// Lower bound.
        min: i8,
        /// Upper bound.
        max: i8,
    },
    /// `src.mask_where(mask, value)`: mask and value have `src`'s shape.
    MaskWhere {
        /// Tensor written into.
        src: Slot,
        /// Bool mask.
        mask: Slot,
        /// Values taken where the mask is true.
        value: Slot,
    },
    /// `src.mask_fill(mask, value)`.
    MaskFill {
        /// Tensor written into.
        src: Slot,
        /// Bool mask with `src`'s shape.
        mask: Slot,
        /// Fill value.
        value: i8,
    },
    /// `bool_and` / `bool_or` on same-shaped bool tensors.
    Logic {
        /// Which op.
        op: LogicOp,
        /// Left operand.
        lhs: Slot,
        /// Right operand.
        rhs: Slot,
    },
    /// `bool_not`.
    Not {
        /// Operand.
        src: Slot,
    },
    /// An op of the along-dim table (a reduction, scan, sort or softmax over `dim`).
    AlongDim {
        /// Which op.
        op: AlongDimOp,
        /// Operand.
        src: Slot,
        /// The dim; `fixup` keeps it below the operand's rank.
        dim: u8,
    },
    /// An op of the quantized table: the float operand quantized with `scheme`, run through
    /// one of Burn's quantized paths and dequantized.
    Quantized {
        /// Which op.
        op: QuantizedOp,
        /// Operand.
        src: Slot,
        /// The quantization scheme.
        scheme: Scheme,
    },
    /// An op of the module table (a convolution, pooling, interpolation or `linear`) over a
    /// float tensor of the entry's rank.
    Module {
        /// Which op.
        op: ModuleOp,
        /// Operand.
        src: Slot,
        /// The kernel: 1 or 3 (`fixup` maps any other value to one of them).
        kernel: u8,
    },
}

/// Runs `$body` with `$s` bound to each operand slot of the op `$op`, in operand order: by
/// reference or by mutable reference, as `$op` is. The one list of which fields are operands,
/// for [`Op::operands`] and [`Op::map_slots`].
macro_rules! for_each_operand {
    ($op:expr, |$s:ident| $body:expr) => {
        match $op {
            Op::Unary { src, .. }
            | Op::AlongDim { src, .. }
            | Op::Quantized { src, .. }
            | Op::Module { src, .. }
            | Op::Scalar { src, .. }
            | Op::SumDim { src, .. }
            | Op::ArgMax { src, .. }
            | Op::Reshape { src, .. }
            | Op::SwapDims { src, .. }
            | Op::Slice { src, .. }
            | Op::Cast { src, .. }
            | Op::Clamp { src, .. }
            | Op::Not { src } => {
                let $s = src;
                $body;
            }
            Op::Binary { lhs, rhs, .. }
            | Op::Matmul { lhs, rhs, .. }
            | Op::Compare { lhs, rhs, .. }
            | Op::Logic { lhs, rhs, .. } => {
                for $s in [lhs, rhs] {
                    $body;
                }
            }
            Op::MaskWhere { src, mask, value } => {
                for $s in [src, mask, value] {
                    $body;
                }
            }
            Op::MaskFill { src, mask, .. } => {
                for $s in [src, mask] {
                    $body;
                }
            }
            Op::Cat { first, rest, .. } => {
                {
                    let $s = first;
                    $body;
                }
                for $s in rest {
                    $body;
                }
            }
        }
    };
}

impl Op {
    /// Renames every operand slot through `f`.
    pub fn map_slots(&mut self, mut f: impl FnMut(Slot) -> Slot) {
        for_each_operand!(self, |s| *s = f(*s));
    }

    /// A short stable name, e.g. `unary exp` or `cast`: the variant and its `op` field, if any.
    pub fn name(&self) -> String {
        let value = serde_json::to_value(self).unwrap_or_default();
        let Some((variant, fields)) = value.as_object().and_then(|o| o.iter().next()) else {
            return value.as_str().unwrap_or("op").to_string();
        };
        match fields.get("op").and_then(|o| o.as_str()) {
            Some(inner) => format!("{variant} {inner}"),
            None => variant.clone(),
        }
    }

    /// How closely Flex's and wgpu's values of its result must agree: the table's entry for a
    /// unary op; comparisons, argmax and casts to int or bool are discontinuous; the rest is
    /// float arithmetic or moves values without computing.
    pub fn tolerance(&self) -> Tolerance {
        match self {
            Op::Unary { op, .. } => op.spec().tolerance,
            Op::AlongDim { op, .. } => op.spec().tolerance,
            Op::Quantized { op, .. } => op.spec().tolerance,
            Op::Module { op, .. } => op.spec().tolerance,
            Op::Binary { op, .. } => op.spec().tolerance,
            Op::Scalar { op, .. } => op.spec().tolerance,
            Op::Compare { op, .. } => op.spec().tolerance,
            Op::ArgMax { .. } => Tolerance::Step,
            Op::Cast { to, .. } if *to != Kind::Float => Tolerance::Step,
            _ => Tolerance::Balanced,
        }
    }

    /// Whether its result adds terms up (a matmul, a reduction, a module op, an along-dim
    /// entry that is not exact, `x` minus a reduction): it rounds at the scale of its terms,
    /// not of its result, and a partial sum may overflow in an order Burn does not pin down. A
    /// quantized select or gather moves elements and sums none.
    pub fn accumulates(&self) -> bool {
        match self {
            Op::Matmul { .. } | Op::SumDim { .. } | Op::Module { .. } => true,
            Op::AlongDim { op, .. } => {
                let spec = op.spec();
                spec.tolerance != Tolerance::Exact && spec.unspecified != Unspecified::Quantized
            }
            Op::Unary { op, .. } => op.name().starts_with("minus_"),
            _ => false,
        }
    }

    /// How large an accumulating op's partial sums may grow ([`Op::accumulates`]), over
    /// operands whose largest finite magnitude is `largest` and whose largest holds `terms`
    /// elements: that magnitude times the terms, and for the products of a matmul or a module
    /// op nine times the terms again (their weight ramps reach the channel count squared times
    /// the kernel area).
    pub fn partial_sum_scale(&self, largest: f64, terms: usize) -> f64 {
        let terms = terms as f64;
        let weight = if matches!(self, Op::Matmul { .. } | Op::Module { .. }) {
            (terms * 9.0).max(1.0)
        } else {
            1.0
        };
        largest * terms * weight
    }

    /// What Burn leaves unspecified about its result, as its table entry says (ops outside the
    /// tables are handled where they are judged).
    pub fn unspecified(&self) -> Unspecified {
        match self {
            Op::Unary { op, .. } => op.spec().unspecified,
            Op::AlongDim { op, .. } => op.spec().unspecified,
            Op::Quantized { op, .. } => op.spec().unspecified,
            Op::Module { op, .. } => op.spec().unspecified,
            Op::Binary { op, .. } => op.spec().unspecified,
            Op::Scalar { op, .. } => op.spec().unspecified,
            Op::Compare { op, .. } => op.spec().unspecified,
            _ => Unspecified::None,
        }
    }

    /// Whether the op makes tensors on its operand's device before it runs (a module entry's
    /// weights), as its table entry's call says.
    pub fn creates_on_operand_device(&self) -> bool {
        match self {
            Op::Module { op, .. } => op.spec().creates_on_device(),
            Op::AlongDim { op, .. } => op.spec().creates_on_device(),
            // A quantized entry quantizes its operand first: what it makes on the device (an
            // index, data read back) comes after.
            _ => false,
        }
    }

    /// Whether the op's entry reads a tensor's data back mid-call (`into_data`, or a
    /// `Transaction`'s `execute`), which inside a capture scope meets a computed tensor, a
    /// placeholder with no data.
    pub fn reads_data(&self) -> bool {
        let call = match self {
            Op::Unary { op, .. } => op.spec().call,
            Op::AlongDim { op, .. } => op.spec().call,
            Op::Quantized { op, .. } => op.spec().call,
            Op::Module { op, .. } => op.spec().call,
            _ => return false,
        };
        super::table::reads_data(call)
    }

    /// The slots the op reads, in operand order. Every step of every run asks (the model, the
    /// mirrors), so it reads the op in place rather than cloning it through `map_slots`.
    pub fn operands(&self) -> Slots {
        let mut operands = Slots::new();
        for_each_operand!(self, |s| operands.push(*s));
        operands
    }
}
