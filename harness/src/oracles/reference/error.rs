//! An op's error model as the op tables' `error` column states it: how its rounding error is
//! bounded, and the words the column is written in (compiled here, in the reference's terms,
//! as the `reference` column is). [`super::bound`] derives each element's bound from it.

use crate::program::Dtype;

/// How an op's rounding error is bounded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Model {
    /// A sum of products with nonnegative coefficients: `γ_{n+2} · op(|x|)` per element, `n`
    /// the terms of the largest operand (an upper bound on any element's taps; two more for a
    /// bias and a mean's division).
    Linear,
    /// Burn's two-pass variance (`burn-tensor` stats/mod.rs:3-33: the mean, the centered
    /// squares summed, divided by `n − correction`).
    Variance {
        /// Whether it divides by `n` (`var_bias`) rather than `n − 1`.
        biased: bool,
    },
    /// Flex's fused softmax along a dim (burn-flex ops/activation.rs:199-403: the row's
    /// maximum subtracted, one library exp per element, their sum, and a multiply by its
    /// inverse; softmin is the softmax of the negation, burn-backend ops/activation.rs:275):
    /// every term positive, so the error is relative, composed from its steps' (see
    /// [`per_element`]).
    Softmax,
    /// A function Flex computes with one call of Rust's math library per element (through f32
    /// for the half dtypes: `burn-flex` ops/unary.rs:66-67): within [`Ulps`] of the reference
    /// rounded to the dtype, as `dispatch-fuzz accuracy` measured it.
    Library(Ulps),
}

/// A library function's bound on Flex in units in the last place of the result's dtype, per
/// dtype: F16 and BF16 measured over every input (so exact for this build), F32 over the
/// stratified sample plus one unit for what a sample misses and for another platform's libm,
/// F64 the same (the reference's own f64 function errs too: two more units).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ulps {
    /// Over F16 and BF16.
    pub half: f64,
    /// Over F32.
    pub single: f64,
    /// Over F64.
    pub double: f64,
}

impl Ulps {
    /// The bound for `dtype`.
    pub fn of(self, dtype: Dtype) -> f64 {
        match dtype {
            Dtype::F16 | Dtype::Bf16 => self.half,
            Dtype::F32 => self.single,
            _ => self.double,
        }
    }
}

/// The words of the op tables' `error` column (see `program::unary`), each an entry's error
/// model in the reference's terms.
///
/// An entry without a derived bound is [`PRESET`]: it keeps its tolerance family's preset.
/// Such are products (a partial product may underflow or overflow in an order Burn does not pin
/// down, so no relative bound holds), normalizations, attention, resamplings whose weights are
/// themselves rounded (bicubic, Lanczos, grid sampling) and the ops the reference has no loops
/// for. Same-size bilinear resampling is [`LINEAR`]: weights 1 and 0 at every output, as the
/// reference has it.
pub const PRESET: Option<Model> = None;
/// [`Model::Linear`].
pub const LINEAR: Option<Model> = Some(Model::Linear);
/// [`Model::Softmax`].
pub const SOFTMAX: Option<Model> = Some(Model::Softmax);

/// [`Model::Variance`].
pub const fn variance(biased: bool) -> Option<Model> {
    Some(Model::Variance { biased })
}

/// [`Model::Library`]: a unary entry Flex computes with one math-library call, and its measured
/// bounds (`dispatch-fuzz accuracy`; `tests/accuracy.rs` holds the half dtypes to them). On wgpu
/// they keep their family's preset: WGSL's accuracy table is not composed here.
///
/// Measured on Flex with glibc's libm (x86-64), over the inputs within half the dtype's range
/// (past it, asinh overflows: a stored finding): over F16 and BF16 every entry is within one
/// unit, over F32 too but tanh (two); the bound adds one unit for another platform's libm.
/// F64 runs the same libm functions the reference calls (two units for the reference's own
/// error) but erf, whose reference is the harness's own series (24 units). Left out: acosh and
/// atanh, which Rust's std computes with its own formulas (rust-lang/rust#104548): acosh as
/// `ln(x + sqrt(x² − 1))`, 16 units off at x = 1.0017 and more closer to 1 (fuzz --seed 5),
/// atanh as `0.5 · ln_1p(2x / (1 − x))`, 4% off at x = −0.99999994 where `1 − x` rounds to 2;
/// they keep the transcendental preset, and `dispatch-fuzz accuracy` reports them.
pub const fn library(half: f64, single: f64, double: f64) -> Option<Model> {
    Some(Model::Library(Ulps {
        half,
        single,
        double,
    }))
}
