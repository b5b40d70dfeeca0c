//! The two-operand op tables: element-wise arithmetic between tensors ([`BINARY`], the right
//! operand broadcast to the left), comparisons of equal-shaped tensors ([`COMPARE`]), and ops
//! with a scalar right operand ([`SCALAR`]); one entry each, built like `unary.rs`'s table.
//!
//! An entry is `name: [kinds it takes] -> result, tolerance, unspecified, x, y => call,
//! reference def, error model;` where `y` is the right tensor, or for [`SCALAR`] the scalar (an
//! `f32` for floats, an `i64` for ints), and the reference is a `Binary` of the reference
//! oracle, as is the error model on Flex (`library(half, single, double)` or `PRESET`, as
//! `unary.rs`'s; a comparison's, whose result is a bool, is `PRESET` throughout), both compiled
//! only there (an entry without them does not compile). Names are what program files store.

use super::kind::Kind;
use super::table::{
    op_dtype, op_result, op_tolerance, op_unspecified, table_index, OpSpec, ResultDtype, Spread,
    Tolerance, Unspecified,
};

/// Tensor-tensor arithmetic. Int `div` and `remainder` are left out: Flex divides an int by
/// zero with a Rust panic, which is not a dispatch-layer question.
macro_rules! binary_ops {
    ($then:ident, $($arg:tt)*) => {
        $then! {
            $($arg)*;
            add: [Float, Int] -> same, rounded, none, x, y => x.add(y),
                reference Binary::Both(|x, y| x + y, i128::checked_add), error PRESET;
            sub: [Float, Int] -> same, rounded, none, x, y => x.sub(y),
                reference Binary::Both(|x, y| x - y, i128::checked_sub), error PRESET;
            mul: [Float, Int] -> same, rounded, none, x, y => x.mul(y),
                reference Binary::Both(|x, y| x * y, i128::checked_mul), error PRESET;
            div: [Float] -> same, rounded, pole, x, y => x.div(y),
                reference Binary::Ieee(|x, y| x / y), error PRESET;
            // Flex takes Rust's `%` (C's fmod, exact) and adds y where the signs differ (one
            // rounding; in f32 for the half dtypes, then stored: burn-flex ops/float.rs:21-28).
            remainder: [Float] -> same, balanced, jumps, x, y => x.remainder(y),
                reference Binary::Ieee(floor_mod_f),
                error library(1.0, 1.0, 1.0).no_derivative(REMAINDER_JUMPS);
            // A base at zero is a pole for a negative exponent and a jump for a tiny positive
            // one (0^y is 0 where a subnormal's power is near 1), and the gradient's x^(y - 1)
            // has it for every y < 1: a subnormal base wgpu may flush leaves them open (fuzz
            // --backends flex,capture,wgpu --seed 2: the base gradient at a subnormal is inf on
            // Flex, 2.4e-7 on llvmpipe).
            powf: [Float] -> same, transcendental, pole, x, y => x.powf(y),
                reference Binary::Ieee(f64::powf), error library(1.0, 2.0, 2.0);
            // As atan's: llvmpipe's atan2 of two NaNs is 0 (fuzz --backends flex,capture,wgpu
            // --seed 3), and WGSL may assume no NaN.
            atan2: [Float] -> same, transcendental, nan, x, y => x.atan2(y),
                reference Binary::Ieee(f64::atan2), error library(2.0, 2.0, 2.0);
            max_pair: [Float, Int] -> same, exact, nan, x, y => x.max_pair(y),
                reference Binary::BothNanOpen(f64::max, |x, y| Some(x.max(y))), error PRESET;
            min_pair: [Float, Int] -> same, exact, nan, x, y => x.min_pair(y),
                reference Binary::BothNanOpen(f64::min, |x, y| Some(x.min(y))), error PRESET;
            bitwise_and: [Int] -> same, exact, none, x, y => x.bitwise_and(y),
                reference Binary::Int(|x, y| Some(x & y)), error PRESET;
            bitwise_or: [Int] -> same, exact, none, x, y => x.bitwise_or(y),
                reference Binary::Int(|x, y| Some(x | y)), error PRESET;
            bitwise_xor: [Int] -> same, exact, none, x, y => x.bitwise_xor(y),
                reference Binary::Int(|x, y| Some(x ^ y)), error PRESET;
            hypot: [Float] -> same, transcendental, none, x, y => x.hypot(y),
                reference Binary::Ieee(f64::hypot),
                error library(1.0, 1.0, 2.0).no_derivative(HYPOT_AT_ORIGIN);
            fmod: [Float] -> same, balanced, jumps, x, y => x.fmod(y),
                // C's fmod: the remainder with the sign of the dividend (Rust's `%` on floats),
                // exact in every dtype (burn-flex ops/float.rs:203-210).
                reference Binary::Ieee(|x, y| x % y),
                error library(0.0, 0.0, 0.0).no_derivative(FMOD_JUMPS);
            bool_xor: [Bool] -> same, exact, none, x, y => x.bool_xor(y),
                reference Binary::Bool(|x, y| x ^ y), error PRESET;
        }
    };
}
pub(crate) use binary_ops;

/// Comparisons: a bool tensor of the operands' shape.
macro_rules! compare_ops {
    ($then:ident, $($arg:tt)*) => {
        $then! {
            $($arg)*;
            equal: [Float, Int, Bool] -> Bool, step, nan, x, y => x.equal(y),
                reference Binary::Compare(|x, y| x == y), error PRESET;
            not_equal: [Float, Int, Bool] -> Bool, step, nan, x, y => x.not_equal(y),
                reference Binary::Compare(|x, y| x != y), error PRESET;
            greater: [Float, Int] -> Bool, step, nan, x, y => x.greater(y),
                reference Binary::Compare(|x, y| x > y), error PRESET;
            greater_equal: [Float, Int] -> Bool, step, nan, x, y => x.greater_equal(y),
                reference Binary::Compare(|x, y| x >= y), error PRESET;
            lower: [Float, Int] -> Bool, step, nan, x, y => x.lower(y),
                reference Binary::Compare(|x, y| x < y), error PRESET;
            lower_equal: [Float, Int] -> Bool, step, nan, x, y => x.lower_equal(y),
                reference Binary::Compare(|x, y| x <= y), error PRESET;
        }
    };
}
pub(crate) use compare_ops;

/// Ops with a scalar right operand `y`. Int `div`/`remainder` are left out as in [`BINARY`].
macro_rules! scalar_ops {
    ($then:ident, $($arg:tt)*) => {
        $then! {
            $($arg)*;
            add: [Float, Int] -> same, rounded, none, x, y => x.add_scalar(y),
                reference Binary::Both(|x, y| x + y, i128::checked_add), error PRESET;
            mul: [Float, Int] -> same, rounded, none, x, y => x.mul_scalar(y),
                reference Binary::Both(|x, y| x * y, i128::checked_mul), error PRESET;
            sub: [Float, Int] -> same, rounded, none, x, y => x.sub_scalar(y),
                reference Binary::Both(|x, y| x - y, i128::checked_sub), error PRESET;
            div: [Float] -> same, rounded, none, x, y => x.div_scalar(y),
                reference Binary::Ieee(|x, y| x / y), error PRESET;
            remainder: [Float] -> same, balanced, jumps, x, y => x.remainder_scalar(y),
                reference Binary::Ieee(floor_mod_f), error library(1.0, 1.0, 1.0);
            powf: [Float] -> same, transcendental, none, x, y => x.powf_scalar(y),
                reference Binary::Ieee(f64::powf), error PRESET;
            powi: [Float] -> same, balanced, none, x, y => x.powi_scalar(y),
                reference Binary::Ieee(|x, y| x.powi(y as i32)), error product(Product::Power);
            clamp_min: [Float, Int] -> same, exact, nan, x, y => x.clamp_min(y),
                reference Binary::BothNanOpen(f64::max, |x, y| Some(x.max(y))), error PRESET;
            clamp_max: [Float, Int] -> same, exact, nan, x, y => x.clamp_max(y),
                reference Binary::BothNanOpen(f64::min, |x, y| Some(x.min(y))), error PRESET;
            equal_elem: [Float, Int] -> Bool, step, nan, x, y => x.equal_elem(y),
                reference Binary::Compare(|x, y| x == y), error PRESET;
            not_equal_elem: [Float, Int] -> Bool, step, nan, x, y => x.not_equal_elem(y),
                reference Binary::Compare(|x, y| x != y), error PRESET;
            greater_elem: [Float, Int] -> Bool, step, nan, x, y => x.greater_elem(y),
                reference Binary::Compare(|x, y| x > y), error PRESET;
            greater_equal_elem: [Float, Int] -> Bool, step, nan, x, y => x.greater_equal_elem(y),
                reference Binary::Compare(|x, y| x >= y), error PRESET;
            lower_elem: [Float, Int] -> Bool, step, nan, x, y => x.lower_elem(y),
                reference Binary::Compare(|x, y| x < y), error PRESET;
            lower_equal_elem: [Float, Int] -> Bool, step, nan, x, y => x.lower_equal_elem(y),
                reference Binary::Compare(|x, y| x <= y), error PRESET;
            fmod: [Float] -> same, balanced, jumps, x, y => x.fmod_scalar(y as f32),
                reference Binary::Ieee(|x, y| x % y), error library(0.0, 0.0, 0.0);
            bitwise_and: [Int] -> same, exact, none, x, y => x.bitwise_and_scalar(y),
                reference Binary::Int(|x, y| Some(x & y)), error PRESET;
            bitwise_or: [Int] -> same, exact, none, x, y => x.bitwise_or_scalar(y),
                reference Binary::Int(|x, y| Some(x | y)), error PRESET;
            bitwise_xor: [Int] -> same, exact, none, x, y => x.bitwise_xor_scalar(y),
                reference Binary::Int(|x, y| Some(x ^ y)), error PRESET;
            div_nonzero: [Int] -> same, exact, none, x, y => x.div_scalar(i64::abs(y) + 1),
                reference Binary::Int(|x, y| int_div(x, y.abs() + 1)), error PRESET;
            remainder_nonzero: [Int] -> same, exact, none,
                x, y => x.remainder_scalar(i64::abs(y) + 1),
                reference Binary::Int(|x, y| floor_mod_i(x, y.abs() + 1)), error PRESET;
            // A bool's element comparisons: the scalar is true when odd.
            bool_equal_elem: [Bool] -> same, exact, none, x, y => x.equal_elem(y % 2 != 0),
                // The scalar of a bool comparison is true when odd.
                reference Binary::Bool(|x, y| x == y), error PRESET;
            bool_not_equal_elem: [Bool] -> same, exact, none, x, y => x.not_equal_elem(y % 2 != 0),
                reference Binary::Bool(|x, y| x != y), error PRESET;
        }
    };
}
pub(crate) use scalar_ops;

/// Tensor-tensor ops whose Tensor API method calls no `TensorCheck::binary_ops_ew` (burn-tensor
/// 0.23.0-pre.1 `api/numeric.rs` `max_pair`, `min_pair`; `api/int.rs` `bitwise_*`): their
/// operands' devices are checked by dispatch only. Found by the reference model (fuzz seed 71).
const API_UNCHECKED: &[&str] = &[
    "max_pair",
    "min_pair",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    // burn-tensor api/bool.rs: bool_xor calls no check either.
    "bool_xor",
];

/// One entry of a two-operand table.
pub type TwoOperandSpec = OpSpec;

impl TwoOperandSpec {
    /// Whether the Tensor API checks that both operands are on one device before dispatch
    /// (`TensorCheck::binary_ops_ew`); without it, operands of two backends meet dispatch's own
    /// guard instead.
    pub fn api_checks_devices(&self) -> bool {
        !API_UNCHECKED.contains(&self.name)
    }
}

macro_rules! two_operand_specs {
    ($table:ident, $doc:literal; $($name:ident : [$($kind:ident),+] -> $result:ident, $tol:ident,
        $un:ident, $x:ident, $y:ident => $call:expr, reference $reference:expr,
        error $error:expr;)+) => {
        #[doc = $doc]
        pub const $table: &[TwoOperandSpec] = &[$(OpSpec {
            name: stringify!($name),
            kinds: &[$(Kind::$kind),+],
            result: op_result!($result),
            dtype: op_dtype!($result),
            tolerance: op_tolerance!($tol),
            unspecified: op_unspecified!($un),
            // The table's ops are element-wise, the second operand broadcast to the first.
            spread: Spread::Element,
            call: stringify!($call),
        }),+];
    };
}
binary_ops!(
    two_operand_specs,
    BINARY,
    "Tensor-tensor arithmetic, in table order."
);
compare_ops!(two_operand_specs, COMPARE, "Comparisons, in table order.");
scalar_ops!(two_operand_specs, SCALAR, "Scalar ops, in table order.");

table_index! {
    /// A tensor-tensor arithmetic op: an index into [`BINARY`], stored by name.
    BinaryOp, BINARY, "binary"
}

table_index! {
    /// A comparison: an index into [`COMPARE`], stored by name.
    CompareOp, COMPARE, "compare"
}

table_index! {
    /// A scalar op: an index into [`SCALAR`], stored by name.
    ScalarOp, SCALAR, "scalar"
}

impl BinaryOp {
    /// Its entry.
    pub fn spec(self) -> &'static TwoOperandSpec {
        &BINARY[self.index()]
    }
}

impl CompareOp {
    /// Its entry.
    pub fn spec(self) -> &'static TwoOperandSpec {
        &COMPARE[self.index()]
    }
}

impl ScalarOp {
    /// Its entry.
    pub fn spec(self) -> &'static TwoOperandSpec {
        &SCALAR[self.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_per_table_and_the_old_names_still_load() {
        for table in [BINARY, COMPARE, SCALAR] {
            let mut names: Vec<&str> = table.iter().map(|s| s.name).collect();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), table.len());
        }
        // Stored cases name these; they keep their meaning.
        for name in ["add", "sub", "mul", "div"] {
            assert!(BinaryOp::named(name).is_some(), "{name}");
        }
        for name in ["equal", "greater", "lower"] {
            assert!(CompareOp::named(name).is_some(), "{name}");
        }
        for name in ["add", "mul"] {
            assert!(ScalarOp::named(name).is_some(), "{name}");
        }
        assert_eq!(
            ScalarOp::named("powf")
                .unwrap()
                .spec()
                .call_on(&["t0", "2"]),
            "t0.powf_scalar(2)"
        );
    }
}
