//! The unary op table: every element-wise op of one tensor, one entry each, read by the
//! generator, the typing rule, the printers, the interpreter, the differential and the reference.
//!
//! [`unary_ops!`] is the table. It hands its entries to a macro of the caller's, so the spec
//! ([`UNARY`], built here), the calls on Burn's public API (built by `interpreter::ops`, the only
//! room that may touch tensors) and the reference's definitions (built by
//! `oracles::reference::elementwise`, in its own terms) come from one text: adding an op is one
//! entry below, and an entry missing a column does not compile. Each entry is `name: [kinds it
//! takes] -> result, tolerance, unspecified, reach, x => call on x, reference def, error model;`,
//! where the result is `same` (the operand's kind) or a kind, the tolerance is one of
//! [`Tolerance`]'s variants, `unspecified` names what Burn leaves open (`none`, `large`: the
//! periodic functions' accuracy far from zero, or `overflow`: the hyperbolic ones' past `exp`'s
//! range), the reach is `element` or `whole` (every result element reads the whole operand: a
//! whole-tensor reduction broadcast back, a quantization, whose scale comes from the largest
//! magnitude), and the reference is a `Unary` of the reference oracle (host math on f64 and exact
//! ints, sharing no code with Burn; compiled only there), as is the error model on Flex:
//! `library(half, single, double)`, the measured bound in units in the last place of the
//! math-library function Flex calls (`library_f32(half, single)`: F64 keeps its preset), or
//! `PRESET` (none derived: the tolerance family's preset).
//! Names are what program files store, so entries may be reordered freely; the first entry is the
//! plainest op, which the minimizer rewrites others to.

use super::kind::Kind;
use super::table::{
    op_dtype, op_result, op_spread, op_tolerance, op_unspecified, table_index, OpSpec, ResultDtype,
    Spread, Tolerance, Unspecified,
};

/// The table; see the module doc for the entry syntax.
macro_rules! unary_ops {
    ($then:ident) => {
        $then! {
            // The plainest op first (the minimizer's replacement for every other).
            neg: [Float, Int] -> same, exact, int_minimum, element, x => x.neg(),
                reference Unary::Both(|x| -x, |x| Some(-x)), error PRESET;
            abs: [Float, Int] -> same, exact, int_minimum, element, x => x.abs(),
                reference Unary::Both(f64::abs, |x| Some(x.abs())), error PRESET;
            sign: [Float, Int] -> same, step, none, element, x => x.sign(),
                // sign(0) is 0; Burn's doc gives no result for NaN, so its lane is left open.
                reference Unary::BothNanOpen(
                    |x| if x == 0.0 { 0.0 } else { x.signum() },
                    |x| Some(x.signum()),
                ), error PRESET;
            exp: [Float] -> same, transcendental, none, element, x => x.exp(),
                reference Unary::Ieee(f64::exp), error library(2.0, 2.0, 2.0);
            tanh: [Float] -> same, transcendental, overflow, element, x => x.tanh(),
                reference Unary::Ieee(f64::tanh), error library(1.0, 3.0, 2.0);
            log: [Float] -> same, transcendental, pole, element, x => x.log(),
                reference Unary::Ieee(f64::ln), error library(2.0, 2.0, 2.0);
            log1p: [Float] -> same, transcendental, none, element, x => x.log1p(),
                reference Unary::Ieee(f64::ln_1p), error library(1.0, 2.0, 2.0);
            // A domain edge at zero: NaN below it (a pole for the differential's purposes).
            sqrt: [Float] -> same, transcendental, pole, element, x => x.sqrt(),
                reference Unary::Ieee(f64::sqrt),
                error library(1.0, 1.0, 2.0).no_derivative(INFINITE_SLOPE_AT_ZERO);
            square: [Float] -> same, balanced, none, element, x => x.square(),
                reference Unary::Ieee(|x| x * x), error library(1.0, 1.0, 2.0);
            recip: [Float] -> same, balanced, pole, element, x => x.recip(),
                reference Unary::Ieee(|x| 1.0 / x), error library(1.0, 1.0, 2.0);
            sin: [Float] -> same, transcendental, large, element, x => x.sin(),
                reference Unary::Ieee(f64::sin), error library(2.0, 2.0, 2.0);
            cos: [Float] -> same, transcendental, large, element, x => x.cos(),
                reference Unary::Ieee(f64::cos), error library(2.0, 2.0, 2.0);
            tan: [Float] -> same, transcendental, large, element, x => x.tan(),
                reference Unary::Ieee(f64::tan), error library(2.0, 2.0, 2.0);
            sinh: [Float] -> same, transcendental, overflow, element, x => x.sinh(),
                reference Unary::Ieee(f64::sinh), error library(1.0, 2.0, 2.0);
            cosh: [Float] -> same, transcendental, overflow, element, x => x.cosh(),
                reference Unary::Ieee(f64::cosh), error library(1.0, 2.0, 2.0);
            asin: [Float] -> same, transcendental, unit_edge, element, x => x.asin(),
                reference Unary::Ieee(f64::asin),
                error library(1.0, 2.0, 2.0).no_derivative(INFINITE_SLOPE_AT_UNIT);
            acos: [Float] -> same, transcendental, unit_edge, element, x => x.acos(),
                reference Unary::Ieee(f64::acos),
                error library(1.0, 2.0, 2.0).no_derivative(INFINITE_SLOPE_AT_UNIT);
            // WGSL may assume no NaN reaches it: llvmpipe's atan(NaN) is 0 (fuzz --seed 104
            // with wgpu).
            atan: [Float] -> same, transcendental, nan, element, x => x.atan(),
                reference Unary::Ieee(f64::atan), error library(1.0, 2.0, 2.0);
            asinh: [Float] -> same, transcendental, square_overflow, element, x => x.asinh(),
                reference Unary::Ieee(f64::asinh), error library(2.0, 2.0, 2.0);
            acosh: [Float] -> same, transcendental, square_overflow, element, x => x.acosh(),
                reference Unary::Ieee(f64::acosh),
                error PRESET.no_derivative(INFINITE_SLOPE_AT_ONE);
            atanh: [Float] -> same, transcendental, unit_edge, element, x => x.atanh(),
                reference Unary::Ieee(f64::atanh), error PRESET;
            erf: [Float] -> same, transcendental, none, element, x => x.erf(),
                reference Unary::Ieee(erf), error library(1.0, 2.0, 26.0);
            deg2rad: [Float] -> same, balanced, none, element, x => x.deg2rad(),
                reference Unary::Ieee(f64::to_radians), error library(2.0, 2.0, 2.0);
            rad2deg: [Float] -> same, balanced, none, element, x => x.rad2deg(),
                reference Unary::Ieee(f64::to_degrees), error library(2.0, 2.0, 2.0);
            round: [Float] -> same, step, none, element, x => x.round(),
                // Round half to even: Burn's doc comment of `round`.
                reference Unary::Ieee(f64::round_ties_even), error PRESET;
            floor: [Float] -> same, step, none, element, x => x.floor(),
                reference Unary::Ieee(f64::floor), error PRESET;
            ceil: [Float] -> same, step, none, element, x => x.ceil(),
                reference Unary::Ieee(f64::ceil), error PRESET;
            is_nan: [Float] -> Bool, step, none, element, x => x.is_nan(),
                reference Unary::Test(f64::is_nan), error PRESET;
            is_inf: [Float] -> Bool, step, none, element, x => x.is_inf(),
                reference Unary::Test(f64::is_infinite), error PRESET;
            is_finite: [Float] -> Bool, step, none, element, x => x.is_finite(),
                reference Unary::Test(f64::is_finite), error PRESET;
            relu: [Float] -> same, exact, none, element, x => burn::tensor::activation::relu(x),
                reference Unary::Float(|x| x.max(0.0)), error PRESET;
            relu6: [Float] -> same, exact, none, element, x => burn::tensor::activation::relu6(x),
                reference Unary::Float(|x| clamp_f(x, 0.0, 6.0)), error PRESET;
            leaky_relu: [Float] -> same, balanced, none, element,
                x => burn::tensor::activation::leaky_relu(x, 0.01),
                reference Unary::Float(|x| if x >= 0.0 { x } else { x * f64::from(0.01f32) }),
                error library_f32(1.0, 1.0);
            gelu: [Float] -> same, transcendental, none, element,
                x => burn::tensor::activation::gelu(x),
                reference Unary::Float(|x| 0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2))),
                error composite(Composite::Gelu);
            gelu_approximate: [Float] -> same, transcendental, none, element,
                x => burn::tensor::activation::gelu_approximate(x),
                reference Unary::Float(|x| {
                    let c = (2.0 / std::f64::consts::PI).sqrt();
                    0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh())
                }), error composite(Composite::GeluTanh).headroom(2.0);
            sigmoid: [Float] -> same, transcendental, none, element,
                x => burn::tensor::activation::sigmoid(x),
                reference Unary::Float(sigmoid), error library_f32(2.0, 3.0);
            hard_sigmoid: [Float] -> same, balanced, none, element,
                x => burn::tensor::activation::hard_sigmoid(x, 0.2, 0.5),
                reference Unary::Float(|x| clamp_f(0.2 * x + 0.5, 0.0, 1.0)),
                error composite(Composite::HardSigmoid { alpha: 0.2, beta: 0.5 });
            log_sigmoid: [Float] -> same, transcendental, none, element,
                x => burn::tensor::activation::log_sigmoid(x),
                reference Unary::Float(|x| -softplus(-x)), error library(2.0, 2.0, 4.0);
            silu: [Float] -> same, transcendental, none, element,
                x => burn::tensor::activation::silu(x),
                reference Unary::Float(|x| x * sigmoid(x)), error library_f32(42.0, 105.0);
            mish: [Float] -> same, transcendental, none, element,
                x => burn::tensor::activation::mish(x),
                reference Unary::Float(|x| x * softplus(x).tanh()), error library_f32(42.0, 105.0);
            softplus: [Float] -> same, transcendental, none, element,
                x => burn::tensor::activation::softplus(x, 1.0),
                reference Unary::Float(softplus), error library_f32(2.0, 2.0);
            softsign: [Float] -> same, balanced, none, element,
                x => burn::tensor::activation::softsign(x),
                reference Unary::Float(|x| x / (1.0 + x.abs())), error library(2.0, 2.0, 2.0);
            selu: [Float] -> same, transcendental, none, element,
                x => burn::tensor::activation::selu(x),
                reference Unary::Float(|x| {
                    SELU_SCALE * if x > 0.0 { x } else { SELU_ALPHA * x.exp_m1() }
                }), error composite(Composite::ExpMinusOne {
                    negative: SELU_ALPHA * SELU_SCALE,
                    positive: SELU_SCALE,
                });
            elu: [Float] -> same, transcendental, none, element,
                x => burn::tensor::activation::elu(x, 1.0),
                reference Unary::Float(|x| if x > 0.0 { x } else { x.exp_m1() }),
                error composite(Composite::ExpMinusOne { negative: 1.0, positive: 1.0 });
            celu: [Float] -> same, transcendental, none, element,
                x => burn::tensor::activation::celu(x, 1.0),
                reference Unary::Float(|x| x.max(0.0) + x.exp_m1().min(0.0)),
                error composite(Composite::ExpMinusOne { negative: 1.0, positive: 1.0 });
            hard_swish: [Float] -> same, balanced, none, element,
                x => burn::tensor::activation::hard_swish(x),
                // x times hard_sigmoid(x, 1/6, 1/2), as Burn composes it (activation/base.rs:446):
                // x * (x + 3) / 6 overflows past f64::MAX / 6 where the definition does not.
                reference Unary::Float(|x| x * clamp_f(x / 6.0 + 0.5, 0.0, 1.0)),
                error composite(Composite::HardSwish);
            hardtanh: [Float] -> same, exact, none, element,
                x => burn::tensor::activation::hardtanh(x, -1.0, 1.0),
                reference Unary::Float(|x| clamp_f(x, -1.0, 1.0)), error PRESET;
            tanhshrink: [Float] -> same, transcendental, none, element,
                x => burn::tensor::activation::tanhshrink(x),
                reference Unary::Float(|x| x - x.tanh()), error composite(Composite::TanhShrink);
            hard_shrink: [Float] -> same, step, none, element,
                x => burn::tensor::activation::hard_shrink(x, 0.5),
                reference Unary::Float(|x| if x.abs() > 0.5 { x } else { 0.0 }), error PRESET;
            soft_shrink: [Float] -> same, balanced, none, element,
                x => burn::tensor::activation::soft_shrink(x, 0.5),
                reference Unary::Float(|x| {
                    if x > 0.5 {
                        x - 0.5
                    } else if x < -0.5 {
                        x + 0.5
                    } else {
                        0.0
                    }
                }), error library(1.0, 1.0, 2.0);
            thresholded_relu: [Float] -> same, step, none, element,
                x => burn::tensor::activation::thresholded_relu(x, 1.0),
                reference Unary::Float(|x| if x > 1.0 { x } else { 0.0 }), error PRESET;
            threshold: [Float] -> same, step, none, element,
                x => burn::tensor::activation::threshold(x, 1.0, -1.0),
                // activation::threshold(x, 1.0, -1.0): x above the threshold, the value elsewhere.
                reference Unary::Float(|x| if x > 1.0 { x } else { -1.0 }), error PRESET;
            trunc: [Float] -> same, step, none, element, x => x.trunc(),
                reference Unary::Ieee(f64::trunc), error PRESET;
            bitwise_not: [Int] -> same, exact, none, element, x => x.bitwise_not(),
                reference Unary::Int(|x| Some(!x)), error PRESET;
            // Float only, as `square`: an int chain of powers overflows, a debug-build panic.
            powi_square: [Float] -> same, balanced, none, element, x => x.powi_scalar(2),
                reference Unary::Ieee(|x| x * x), error library(1.0, 1.0, 2.0);
            // Exponents Burn's default bodies send to the backend's `*_impl` helpers: a
            // non-integer float power (of |x|, so no negative base), an int cube (base under
            // 100). A NaN operand stays open: WGSL may assume none reaches pow, and llvmpipe's
            // pow(NaN, 0.5) is 0 (fuzz --backends flex,capture,wgpu --seed 104).
            powf_half: [Float] -> same, transcendental, nan, element, x => x.abs().powf_scalar(0.5),
                reference Unary::Ieee(|x| x.abs().powf(0.5)),
                error library(1.0, 2.0, 3.0).no_derivative(INFINITE_SLOPE_AT_ZERO);
            powi_cube_int: [Int] -> same, exact, none, element,
                x => x.remainder_scalar(100).powi_scalar(3),
                reference Unary::Int(|x| floor_mod_i(x, 100).map(|r| r * r * r)), error PRESET;
            shift_left: [Int] -> same, exact, none, element, x => x.bitwise_left_shift_scalar(1),
                reference Unary::Int(|x| Some(x << 1)), error PRESET;
            // Int dtype casts: a program's ints may be I64 as well as I32. (The float ones, to
            // F16, BF16 and F64, wait for catalogue records of Flex's mixed-dtype guards.)
            cast_i64: [Int] -> I64, exact, none, element, x => x.cast(burn::tensor::IntDType::I64),
                reference Unary::Int(Some), error PRESET;
            cast_i32: [Int] -> I32, exact, none, element, x => x.cast(burn::tensor::IntDType::I32),
                reference Unary::Int(Some), error PRESET;
            shift_right: [Int] -> same, exact, none, element, x => x.bitwise_right_shift_scalar(1),
                reference Unary::Int(|x| Some(x >> 1)), error PRESET;
            // Whole-tensor reductions, broadcast back over the operand so the shape stays.
            minus_sum: [Float, Int] -> same, balanced, cancels_sum, whole,
                x => x.clone().sub(x.sum().unsqueeze()),
                reference Unary::Whole(|x| {
                    minus_whole(x, |v| v.iter().sum(), |v| Some(v.iter().sum()))
                }), error minus_sum(false);
            minus_mean: [Float, Int] -> same, balanced, cancels_sum, whole,
                x => x.clone().sub(x.mean().unsqueeze()),
                reference Unary::Whole(|x| {
                    let n = x.numel();
                    match &x.data {
                        Data::Float(_) => {
                            minus_whole(x, |v| v.iter().sum::<f64>() / v.len() as f64, |_| None)
                        }
                        // An int mean rounds, and Burn documents no rounding: exact quotients only.
                        _ => minus_whole(x, |_| 0.0, |v| int_div(v.iter().sum(), v.len() as i128))
                            .filter(|_| n > 0),
                    }
                }), error minus_sum(true);
            minus_prod: [Float, Int] -> same, balanced, cancels_product, whole,
                x => x.clone().sub(x.prod().unsqueeze()),
                reference Unary::Whole(|x| minus_whole(x, |v| v.iter().product(), int_product)),
                error product(Product::MinusWhole);
            minus_max: [Float, Int] -> same, exact, none, whole,
                x => x.clone().sub(x.max().unsqueeze()),
                reference Unary::Whole(|x| minus_whole(x, max_of, |v| v.iter().copied().max())),
                error PRESET;
            // Int division, remainder and shifts by a tensor (the operand's own magnitude, kept
            // away from zero and below 8) rather than by another slot: an entry that worked on
            // its right operand before the op would fail there first, where the model expects
            // the op's own checks. Flex divides an int by zero with a Rust panic, so the divisor
            // is |x| mod 7, plus 1: `|x| + 1` wraps to 0 in a U8 holding 255 (fuzz --seed 7).
            div_by_magnitude: [Int] -> same, exact, int_minimum, element,
                x => x.clone().div(x.abs().remainder_scalar(7).add_scalar(1)),
                reference Unary::IntThrough(
                    |x| int_div(x, floor_mod_i(x.abs(), 7)? + 1),
                    |x| x.abs(),
                ), error PRESET;
            remainder_by_magnitude: [Int] -> same, exact, int_minimum, element,
                x => x.clone().remainder(x.abs().remainder_scalar(7).add_scalar(1)),
                reference Unary::IntThrough(
                    |x| floor_mod_i(x, floor_mod_i(x.abs(), 7)? + 1),
                    |x| x.abs(),
                ), error PRESET;
            shift_left_by_tensor: [Int] -> same, exact, none, element,
                x => x.clone().bitwise_left_shift(x.abs().remainder_scalar(8)),
                reference Unary::Int(|x| floor_mod_i(x.abs(), 8).map(|s| x << s)), error PRESET;
            shift_right_by_tensor: [Int] -> same, exact, none, element,
                x => x.clone().bitwise_right_shift(x.abs().remainder_scalar(8)),
                reference Unary::Int(|x| floor_mod_i(x.abs(), 8).map(|s| x >> s)), error PRESET;
            // Quantized tensors (Burn's default scheme) and the layout ops Burn runs on them
            // without dequantizing, each dequantized back to a float of the operand's shape, in
            // the device's default float dtype (`Float`): a scheme keeps no source dtype, and an
            // F16 operand comes back F32 on Flex.
            quantize_roundtrip: [Float] -> Float, balanced, quantized, whole,
                x => x.quantize_dynamic(&burn::tensor::quantization::QuantScheme::default()).dequantize(),
                // Burn's default scheme round-tripped, through the layout ops Burn runs on
                // quantized data: read back as quantized data and loaded again, flattened and
                // reshaped back, permuted and permuted back, flipped along dim 0, the first row
                // along dim 0 expanded over it.
                reference Unary::Quantized(identity_positions), error PRESET;
            // Read back as quantized data (q_into_data) and loaded again from it (q_from_data),
            // then moved to its own device (q_to_device), before it is dequantized. In a capture
            // scope the read meets a computed tensor, as the model expects of an entry that
            // reads (`Op::reads_data`).
            quantized_read: [Float] -> Float, balanced, quantized, whole, x => {
                let q = x.quantize_dynamic(&burn::tensor::quantization::QuantScheme::default());
                let d = q.device(); let data = q.clone().into_data();
                let [_, loaded] = [q, Tensor::from_data(data, &d)]; loaded.to_device(&d).dequantize() },
                reference Unary::Quantized(identity_positions), error PRESET;
            quantized_reshape: [Float] -> Float, balanced, quantized, whole, x => {
                let s = x.shape();
                x.quantize_dynamic(&burn::tensor::quantization::QuantScheme::default())
                    .flatten::<1>(0, s.num_dims() - 1).reshape(s).dequantize() },
                reference Unary::Quantized(identity_positions), error PRESET;
            quantized_flip: [Float] -> Float, balanced, quantized, whole,
                x => x.quantize_dynamic(&burn::tensor::quantization::QuantScheme::default()).flip([0]).dequantize(),
                reference Unary::Quantized(|s| flip_positions(s, 0)), error PRESET;
            // Permuted and swapped, then swapped and permuted back: the shape stays (the other
            // order, swap after each permute, ends as [d2, d0, d1] for rank 3).
            quantized_permute: [Float] -> Float, balanced, quantized, whole, x => {
                let n = x.dims().len();
                x.quantize_dynamic(&burn::tensor::quantization::QuantScheme::default())
                    .permute(core::array::from_fn(|i| (i + 1) % n))
                    .swap_dims(0, n - 1)
                    .swap_dims(0, n - 1)
                    .permute(core::array::from_fn(|i| (i + n - 1) % n))
                    .dequantize() },
                reference Unary::Quantized(identity_positions), error PRESET;
            quantized_expand: [Float] -> Float, balanced, quantized, whole, x => {
                let s = x.shape();
                x.quantize_dynamic(&burn::tensor::quantization::QuantScheme::default())
                    .narrow(0, 0, 1).expand(s).dequantize() },
                reference Unary::Quantized(|s| first_positions(s, 0)), error PRESET;
            minus_min: [Float, Int] -> same, exact, none, whole,
                x => x.clone().sub(x.min().unsqueeze()),
                reference Unary::Whole(|x| minus_whole(x, min_of, |v| v.iter().copied().min())),
                error PRESET;
            minus_max_abs: [Float, Int] -> same, exact, int_minimum, whole,
                x => x.clone().sub(x.max_abs().unsqueeze()),
                reference Unary::Whole(|x| {
                    minus_whole(
                        x,
                        |v| max_of(&v.iter().map(|e| e.abs()).collect::<Vec<_>>()),
                        |v| v.iter().map(|e| e.abs()).max(),
                    )
                }), error PRESET;
        }
    };
}
pub(crate) use unary_ops;

/// One entry of the table.
pub type UnarySpec = OpSpec;

macro_rules! unary_specs {
    ($($name:ident : [$($kind:ident),+] -> $result:ident, $tol:ident, $un:ident,
        $reach:ident, $x:ident => $call:expr, reference $reference:expr, error $error:expr;)+) => {
        /// The unary ops, in table order.
        pub const UNARY: &[UnarySpec] = &[$(OpSpec {
            name: stringify!($name),
            kinds: &[$(Kind::$kind),+],
            result: op_result!($result),
            dtype: op_dtype!($result),
            tolerance: op_tolerance!($tol),
            unspecified: op_unspecified!($un),
            spread: op_spread!($reach),
            call: stringify!($call),
        }),+];
    };
}
unary_ops!(unary_specs);

table_index! {
    /// A unary op: an index into [`UNARY`]. Stored by name; decoded from fuzzer bytes the way
    /// `arbitrary` decodes an enum of `UNARY.len()` variants.
    UnaryOp, UNARY, "unary"
}

impl UnaryOp {
    /// The plainest op (the table's first): what the minimizer rewrites others to.
    pub const PLAINEST: UnaryOp = UnaryOp::FIRST;

    /// Its entry.
    pub fn spec(self) -> &'static UnarySpec {
        &UNARY[self.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_the_plainest_op_is_neg() {
        let mut names: Vec<&str> = UNARY.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), UNARY.len());
        assert_eq!(UnaryOp::PLAINEST.name(), "neg");
        assert!(UNARY.len() <= usize::from(u8::MAX));
    }

    #[test]
    fn a_call_prints_with_its_operand_in_place_of_x() {
        let exp = UnaryOp::named("exp").unwrap().spec();
        assert_eq!(exp.call_on(&["t3.clone()"]), "t3.clone().exp()");
        let relu = UnaryOp::named("leaky_relu").unwrap().spec();
        assert_eq!(
            relu.call_on(&["t0"]),
            "burn::tensor::activation::leaky_relu(t0, 0.01)"
        );
    }

    #[test]
    fn an_unknown_name_is_an_error_naming_the_nearest_ops() {
        let e = serde_json::from_str::<UnaryOp>("\"sqr\"").unwrap_err();
        assert!(e.to_string().contains("sqrt"), "{e}");
        let op: UnaryOp = serde_json::from_str("\"erf\"").unwrap();
        assert_eq!(serde_json::to_string(&op).unwrap(), "\"erf\"");
    }
}
