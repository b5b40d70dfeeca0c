//! An op's error model as the op tables' `error` column states it: how its rounding error is
//! bounded, and the words the column is written in (compiled here, in the reference's terms,
//! as the `reference` column is). [`super::bound`] derives each element's bound from it.

use super::host::{broadcast_positions, Host};
use crate::program::Dtype;

/// How an op's rounding error is bounded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Model {
    /// A sum of products with nonnegative coefficients: `γ_{n+1} · op(|x|)` per element, `n`
    /// the terms it adds up as [`Terms`] counts them (at most every element of the largest
    /// operand), one more for a mean's or a window's rounded reciprocal, plus the reference's
    /// rounding.
    Linear(Terms),
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
    /// `bound::per_element`).
    Softmax {
        /// Whether it is the softmax of the negated operand (softmin).
        negated: bool,
        /// Whether its denominator has one more term, `exp(−max)` (Burn's quiet_softmax,
        /// composed of tensor ops that each round: burn-tensor activation/base.rs:327-339).
        quiet: bool,
    },
    /// Burn's log_softmax, the default body Flex keeps (burn-backend ops/activation.rs:256-261:
    /// the maximum subtracted, the log of the sum of the exps, subtracted): an absolute error,
    /// as a difference of two values near each other may cancel.
    LogSoftmax,
    /// Flex's scaled dot-product attention (burn-flex ops/attention.rs: the scores a gemm in
    /// the compute dtype, f32 for the half dtypes, times the scale; a softmax, online over tiles
    /// of 64 keys past 512; a second gemm with the values, divided by the row's sum): its error
    /// composed per output element from its steps' (see `module::attention_bounds`).
    Attention {
        /// Whether a query sees no later key.
        causal: bool,
    },
    /// A function Flex computes with one call of Rust's math library per element (through f32
    /// for the half dtypes: `burn-flex` ops/unary.rs:66-67): within [`Ulps`] of the reference
    /// rounded to the dtype, as `dispatch-fuzz accuracy` measured it.
    Library(Ulps),
    /// An activation Burn composes of a few roundings and library calls, bounded per element
    /// from its operand (see `composite::bounds`).
    Composite(Composite),
    /// A quantization round trip of integer or minifloat codes with f32 scales, judged against
    /// the interval the scheme's definition allows each element (see
    /// `quantization::round_trip`).
    Quantized,
    /// A product of `n` factors in any order: `γₙ · |Π x|` (Higham §3.1), where no partial
    /// product in any order leaves the dtype's normal range (see `product::bounds`).
    Product(Product),
    /// `x − Σx` or `x − mean(x)` over the whole operand, the reduction broadcast back: the
    /// reduction's Higham bound, then the subtraction's rounding (see `product::minus_sum`).
    MinusSum {
        /// Whether it subtracts the mean (one more rounding: the division).
        mean: bool,
    },
}

/// How many terms an element of a [`Model::Linear`] entry's result adds up at most.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Terms {
    /// The length of the op's dim (a reduction or a scan along it); every element where the op
    /// has none.
    Dim,
    /// This many, whatever the shape (an element plus one other: a scatter or a select that
    /// adds).
    Fixed(usize),
    /// A convolution's input channels times its kernel's taps, plus its bias.
    ChannelTaps,
    /// A window's taps (a row of k over a rank-3 operand, k² otherwise), plus a bias where
    /// `bias` (a depthwise convolution).
    Taps {
        /// Whether a bias adds one more.
        bias: bool,
    },
    /// The operand's last dim plus a bias (`linear`).
    Last,
    /// Every element of the largest operand (where an element's taps are not counted).
    Whole,
}

/// Which product an entry takes (see [`Model::Product`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Product {
    /// Each lane along the dim multiplied to one value (`prod_dim`).
    Lane,
    /// Each lane's running products (`cumprod`).
    Running,
    /// Each element minus the product of the whole operand (`x − x.prod()`).
    MinusWhole,
    /// Each element to the scalar's integer power `n`: a product of `|n|` factors, inverted
    /// for a negative `n` (Flex powers by squaring, and for a negative power squares the
    /// reciprocal of the half power and divides by x once more where `n` is odd: burn-flex
    /// ops/float.rs:30-46, 1250-1272).
    Power,
}

/// The activations whose error the reference composes from Burn's formula for them, step by
/// step (burn-tensor activation/base.rs, burn-flex ops/activation.rs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Composite {
    /// `negative · (exp(x) − 1)` over `x ≤ 0` and `positive · x` past it, as tensor ops that
    /// each round to the dtype (elu and celu with α = 1, selu: activation/base.rs:493-564).
    ExpMinusOne {
        /// The factor of `exp(x) − 1`.
        negative: f64,
        /// The factor of `x` past zero.
        positive: f64,
    },
    /// `x − tanh(x)`, two tensor ops (activation/base.rs:29-31).
    TanhShrink,
    /// Flex's fused `0.5 · x · (1 + erf(x / √2))` (burn-flex ops/activation.rs:69-79).
    Gelu,
    /// Burn's tanh approximation of gelu, as tensor ops (activation/base.rs:112-122).
    GeluTanh,
    /// Flex's fused `(α · x + β)` clamped to [0, 1] (burn-flex ops/activation.rs:120-130).
    HardSigmoid {
        /// The slope.
        alpha: f64,
        /// The offset.
        beta: f64,
    },
    /// `x` times Flex's hard_sigmoid(x, 1/6, 1/2) (activation/base.rs:445-447).
    HardSwish,
    /// The middle component of `[x, 2x, 3x] × [3x, 2x, x]`, `3x · 3x − x · x`, as tensor ops
    /// that each round to the dtype (the along-dim table's cross_middle).
    CrossMiddle,
}

/// A library function's bound on Flex in units in the last place of the result's dtype, per
/// dtype: F16 and BF16 measured over every input (so exact for this build), F32 over the
/// stratified sample plus one unit for what a sample misses and for another platform's libm,
/// F64 the same (the reference's own f64 function errs too: two more units), or none (F64 keeps
/// its family's preset).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ulps {
    /// Over F16 and BF16.
    pub half: f64,
    /// Over F32.
    pub single: f64,
    /// Over F64, where measured.
    pub double: Option<f64>,
}

impl Ulps {
    /// The bound for `dtype`, if it has one.
    pub fn of(self, dtype: Dtype) -> Option<f64> {
        match dtype {
            Dtype::F16 | Dtype::Bf16 => Some(self.half),
            Dtype::F32 => Some(self.single),
            _ => self.double,
        }
    }
}

/// How an entry's arithmetic errs, as its table row's `error` column states it: the model of
/// its rounding error, and its headroom.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Arithmetic {
    /// How its rounding error is bounded; `None`: not derived (the family's preset).
    pub model: Option<Model>,
    /// How far past its result its formula goes before it comes back to it: an element whose
    /// result times this passes the dtype's largest value overflowed on the way in Burn's own
    /// dtype, and is open as a result past the range is. 1 for most entries.
    pub headroom: f64,
    /// Where the op has no derivative at some operands (a gradient through it there is a
    /// convention, not the slope finite differences see), the test and why; `None` for most.
    pub no_derivative: Option<NoDerivative>,
}

/// Points where an op has no derivative: whether its operands sit at one at some element, and
/// why the gradient through it there is left open.
pub type NoDerivative = (fn(&[&Host]) -> bool, &'static str);

impl Arithmetic {
    const fn of(model: Option<Model>) -> Arithmetic {
        Arithmetic {
            model,
            headroom: 1.0,
            no_derivative: None,
        }
    }

    /// This, with no derivative where `at` says (see [`Arithmetic::no_derivative`]).
    pub const fn no_derivative(self, at: NoDerivative) -> Arithmetic {
        Arithmetic {
            no_derivative: Some(at),
            ..self
        }
    }

    /// This, with a formula that goes `headroom` times past its result (cross_middle is
    /// 9x² − x²: over F16, x = −86 gives 8x² = 59168 from 66564, past 65504, so inf; fuzz
    /// --seed 0. Burn's tanh-approximated gelu computes `(x * (tanh(..) + 1)) * 0.5`,
    /// burn-tensor activation/base.rs:120: x doubled before it is halved, inf past
    /// f32::MAX / 2 where the definition gives x).
    pub const fn headroom(self, headroom: f64) -> Arithmetic {
        Arithmetic { headroom, ..self }
    }
}

/// The words of the op tables' `error` column (see `program::unary`), each an entry's error
/// model in the reference's terms.
///
/// An entry without a derived bound is [`PRESET`]: it keeps its tolerance family's preset.
/// Such are normalizations, resamplings whose weights are
/// themselves rounded (bicubic, Lanczos, grid sampling) and the ops the reference has no loops
/// for. Same-size bilinear resampling is [`higham`] over every element: weights 1 and 0 at
/// every output, as the reference has it.
pub const PRESET: Arithmetic = Arithmetic::of(None);
/// [`Model::Linear`] over the op's dim ([`Terms::Dim`]).
pub const LINEAR: Arithmetic = higham(Terms::Dim);

/// [`Model::Linear`] over `terms`: Higham's bound of a sum of that many terms.
pub const fn higham(terms: Terms) -> Arithmetic {
    Arithmetic::of(Some(Model::Linear(terms)))
}
/// [`Model::Softmax`].
pub const SOFTMAX: Arithmetic = Arithmetic::of(Some(Model::Softmax {
    negated: false,
    quiet: false,
}));
/// [`Model::Softmax`] of the negated operand.
pub const SOFTMIN: Arithmetic = Arithmetic::of(Some(Model::Softmax {
    negated: true,
    quiet: false,
}));
/// [`Model::Softmax`] with a 1 in its denominator (`exp(x) / (1 + Σ exp)`).
pub const QUIET_SOFTMAX: Arithmetic = Arithmetic::of(Some(Model::Softmax {
    negated: false,
    quiet: true,
}));

/// [`Model::LogSoftmax`].
pub const LOG_SOFTMAX: Arithmetic = Arithmetic::of(Some(Model::LogSoftmax));
/// [`Model::Attention`].
pub const ATTENTION: Arithmetic = Arithmetic::of(Some(Model::Attention { causal: false }));
/// [`Model::Attention`] with a causal mask.
pub const ATTENTION_CAUSAL: Arithmetic = Arithmetic::of(Some(Model::Attention { causal: true }));

/// [`Model::Product`].
pub const fn product(product: Product) -> Arithmetic {
    Arithmetic::of(Some(Model::Product(product)))
}

/// [`Model::MinusSum`].
pub const fn minus_sum(mean: bool) -> Arithmetic {
    Arithmetic::of(Some(Model::MinusSum { mean }))
}

/// [`Model::Variance`].
pub const fn variance(biased: bool) -> Arithmetic {
    Arithmetic::of(Some(Model::Variance { biased }))
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
pub const fn library(half: f64, single: f64, double: f64) -> Arithmetic {
    Arithmetic::of(Some(Model::Library(Ulps {
        half,
        single,
        double: Some(double),
    })))
}

/// [`library`] over the half dtypes and F32 only: an entry whose F64 is not held to units in
/// the last place (sigmoid's and silu's F64 give 0 where the reference's exp(-710) is a
/// subnormal; softplus returns x past its threshold of 20, 570,137 units off in F64 and within
/// one in F32; leaky_relu's F64 slope is 0.01 in f64, the reference's f32's 0.01, which the
/// other dtypes multiply by), so F64 keeps its family's preset.
///
/// Over F16, BF16 and F32 these compose one or two library calls with products and sums of
/// positive terms (burn-flex ops/activation.rs:105-190, burn-tensor activation/base.rs:256-470),
/// so their error stays relative, but where an intermediate underflows: silu is x · sigmoid(x)
/// and mish x · tanh(softplus(x)), whose second factor below the smallest normal value is
/// e^x within a subnormal spacing (half of one where exp rounds correctly), so their results
/// are off by |x| such spacings at most: up to 104 of F32's at x = −104, where e^x is half of
/// one (52 measured with glibc), and 41 of BF16's at x = −82 (rounded from f32, so half a
/// spacing: measured over every input).
pub const fn library_f32(half: f64, single: f64) -> Arithmetic {
    Arithmetic::of(Some(Model::Library(Ulps {
        half,
        single,
        double: None,
    })))
}

/// [`Model::Composite`]: an activation whose bound is composed from Burn's formula for it. On
/// wgpu it keeps its family's preset (WGSL's accuracy table is not composed here); over F64
/// the bounds of the library calls it makes are those `dispatch-fuzz accuracy` measured.
pub const fn composite(composite: Composite) -> Arithmetic {
    Arithmetic::of(Some(Model::Composite(composite)))
}

/// `γₖ = ku / (1 − ku)` for the unit roundoff `u`; infinite where `ku ≥ 1` (no bound: a
/// BF16 sum of 256 terms may have lost every bit).
pub fn gamma(k: usize, u: f64) -> f64 {
    let ku = k as f64 * u;
    if ku < 1.0 {
        ku / (1.0 - ku)
    } else {
        f64::INFINITY
    }
}

/// hypot at the origin has no derivative: Burn's backward there is the chain rule's 0 · 0/0
/// (NaN), the convention PyTorch shares (its hypot backward is `grad * self / result`), while a
/// zero factor after it makes the loss flat.
pub const HYPOT_AT_ORIGIN: NoDerivative = (
    |operands| pairs(operands, |x, y| x == 0.0 && y == 0.0),
    "an op on the path has no derivative at its operands (hypot at the origin)",
);

/// Where an op's value is finite and its slope infinite, it has no derivative Burn's chain rule
/// can carry: a zero factor after it makes the loss flat, so the differences give 0 where
/// Burn's backward gives 0 · inf, NaN (fuzz --seed 7: `|x|^0.5` at 0, then times 0). sqrt and
/// `|x|^0.5` at 0.
pub const INFINITE_SLOPE_AT_ZERO: NoDerivative = (
    |operands| singles(operands, |x| x == 0.0),
    "an op on the path has an infinite slope at its operand (a square root at 0)",
);

/// As [`INFINITE_SLOPE_AT_ZERO`], asin and acos at -1 and 1.
pub const INFINITE_SLOPE_AT_UNIT: NoDerivative = (
    |operands| singles(operands, |x| x.abs() == 1.0),
    "an op on the path has an infinite slope at its operand (asin or acos at -1 or 1)",
);

/// As [`INFINITE_SLOPE_AT_ZERO`], acosh at 1.
pub const INFINITE_SLOPE_AT_ONE: NoDerivative = (
    |operands| singles(operands, |x| x == 1.0),
    "an op on the path has an infinite slope at its operand (acosh at 1)",
);

/// A truncated remainder (fmod) jumps by its divisor at each multiple of the divisor but 0
/// (between -|y| and |y| it is x itself): at one, or with one within the step the finite
/// differences take (a divisor of 1e-8 where the step is 1e-6 crosses a hundred), the
/// differences average the jumps into a slope nobody computes (fuzz --seed 5: 0.0728 where
/// Burn's backward gives 1, over tiny values).
pub const FMOD_JUMPS: NoDerivative = (
    |operands| pairs(operands, |x, y| jump_within_step(x, y, false)),
    "an op on the path jumps within the differences' step (a remainder near a multiple of \
     its divisor)",
);

/// As [`FMOD_JUMPS`] for a floored remainder, which jumps at 0 too (for a small negative x it
/// is x + y).
pub const REMAINDER_JUMPS: NoDerivative = (
    |operands| pairs(operands, |x, y| jump_within_step(x, y, true)),
    "an op on the path jumps within the differences' step (a remainder near a multiple of \
     its divisor)",
);

/// Whether a remainder of `x` by `y` jumps within the finite differences' step at `x` (see
/// [`step_size`]): a multiple of `y` (0 too where `at_zero`) lies within it.
fn jump_within_step(x: f64, y: f64, at_zero: bool) -> bool {
    if y == 0.0 || !x.is_finite() || !y.is_finite() {
        return false;
    }
    let step = step_size(x);
    let k = (x / y).round();
    let nearest = k * y;
    let reachable = at_zero || k != 0.0;
    (reachable && (x - nearest).abs() <= step) || y.abs() <= 2.0 * step
}

/// The finite differences' step size for element `x` and why: the reference is f64, so a
/// difference of width h has a rounding error near 1e-16 / h relative to the loss and a
/// central difference a truncation error near h² times the third derivative. h = 1e-6 (relative to |x| past 1)
/// keeps both near 1e-10, far inside the f32 tolerance Burn's gradient is judged with, and the
/// one-sided differences of a smooth loss within h times its curvature of each other, so a
/// kink (where they differ by the jump in slope) stands out.
///
/// It stops growing at 1e-3: a step of 1 or more at |x| past 1e6 crosses whole periods of a sin
/// and integer edges of a floor, whose slopes the differences then average away (fuzz --seed 0
/// with edge fills: floor's gradient 1 and sin's 1e-33 at f32::MAX). Past |x| ~ 1e12 a step of
/// 1e-3 is below what f64 resolves there, and the element is left open as unresolved.
pub(super) fn step_size(x: f64) -> f64 {
    (1e-6 * x.abs().max(1.0)).min(1e-3)
}

/// Whether some element of a one-operand op's operand makes `at` hold.
fn singles(operands: &[&Host], at: fn(f64) -> bool) -> bool {
    let Some(xs) = operands.first().and_then(|x| x.floats()) else {
        return false;
    };
    xs.iter().flatten().any(|x| at(*x))
}

/// Whether some element of a two-operand op's operands (the second broadcast to the first)
/// makes `at` hold.
fn pairs(operands: &[&Host], at: fn(f64, f64) -> bool) -> bool {
    let (Some(x), Some(y)) = (operands.first(), operands.get(1)) else {
        return false;
    };
    let Some(positions) = broadcast_positions(&y.shape, &x.shape) else {
        return false;
    };
    let (Some(xs), Some(ys)) = (x.floats(), y.floats()) else {
        return false;
    };
    xs.iter()
        .zip(&positions)
        .any(|(a, &j)| matches!((a, ys[j]), (Some(a), Some(b)) if at(*a, b)))
}
