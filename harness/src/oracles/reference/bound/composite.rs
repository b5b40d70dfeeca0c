//! Error bounds of the activations Burn composes of a few roundings and library calls, per
//! element from the operand: each step's rounding and each library call's measured units,
//! carried through the steps after it as the WebGPU CTS composes inherited accuracy.
//!
//! Each bound is absolute and first order in the unit roundoff `u`, with the products of the
//! roundings gathered into `γₖ`; a difference of two values near each other (`exp(x) − 1` near
//! 0, `1 + erf` near −1, `x − tanh x` near 0) keeps the absolute error of its terms, which is
//! what Burn's formula loses there and what the bound allows.

use super::super::elementwise::erf;
use super::super::host::Host;
use super::{gamma, library_bound, Composite};
use crate::program::Dtype;

/// The absolute error `units` of a library function's unit in the last place may make at a
/// result near `y`, over a dtype of unit roundoff `u` and smallest spacing `tiny` (one more unit
/// than measured: the measurement is against the reference rounded to the dtype).
fn units(k: f64, y: f64, (u, tiny): (f64, f64)) -> f64 {
    (k + 1.0) * (2.0 * u * y.abs() + tiny)
}

/// The error `error` of a value `p` about to be clamped to [0, 1] has past the clamp: none
/// where `p` is that far past a bound (the clamp gives the bound itself), else at most 1.
fn clamped(p: f64, error: f64) -> f64 {
    if p - error >= 1.0 || p + error <= 0.0 {
        0.0
    } else {
        error.min(1.0)
    }
}

/// The units in the last place of library function `name` over `dtype` (measured by
/// `dispatch-fuzz accuracy`), or `None` where it has no bound there.
fn library(name: &str, dtype: Dtype) -> Option<f64> {
    library_bound(name)?.of(dtype)
}

/// The bound of each element of `composite` over operand `x` in `dtype` (`expected`: the
/// reference's values; `floor`: what a rounding near zero may add), or `None` where a library
/// bound it needs is not measured for `dtype`.
pub fn bounds(
    composite: Composite,
    x: &Host,
    expected: &Host,
    (dtype, floor): (Dtype, f64),
) -> Option<Vec<f64>> {
    let u = dtype.epsilon() / 2.0;
    let tiny = dtype.tiniest();
    // Flex's fused kernels (gelu, hard_sigmoid) compute a half dtype in f32 and round once.
    let (uc, tc, compute) = match dtype {
        Dtype::F16 | Dtype::Bf16 => (Dtype::F32.epsilon() / 2.0, Dtype::F32.tiniest(), Dtype::F32),
        _ => (u, tiny, dtype),
    };
    let store = if compute == dtype { 0.0 } else { u };
    let bound: Box<dyn Fn(f64) -> f64> = match composite {
        // c·(exp(x) − 1) over x ≤ 0: exp within E units, then a subtraction, the constant
        // rounded to the dtype and a multiply; p·x past 0 (exact where p is 1).
        Composite::ExpMinusOne { negative, positive } => {
            let e = library("exp", dtype)?;
            let g = gamma(3, u);
            Box::new(move |x: f64| {
                if x > 0.0 {
                    if positive == 1.0 {
                        0.0
                    } else {
                        gamma(2, u) * positive * x
                    }
                } else {
                    let ex = x.exp();
                    negative * (units(e, ex, (u, tiny)) * (1.0 + g) + (ex - 1.0).abs() * g)
                }
            })
        }
        // x − tanh(x): tanh within T units, then a subtraction.
        Composite::TanhShrink => {
            let t = library("tanh", dtype)?;
            Box::new(move |x: f64| {
                let e = units(t, x.tanh(), (u, tiny));
                e + u * ((x - x.tanh()).abs() + e)
            })
        }
        // Flex's kernel 0.5·x·(1 + erf(x/√2)) in the compute dtype: the quotient rounds twice
        // (√2 itself and the division), which erf carries by its slope; erf within its units;
        // the sum with 1 and the product round once each.
        Composite::Gelu => {
            let erf_units = library("erf", compute)?;
            Box::new(move |x: f64| gelu(x, erf_units, (uc, tc), store))
        }
        // Burn's tensor ops, each rounding to the dtype: inner = x + 0.044715·x³ (x³ two
        // products, the constant rounded, a product and a sum), z = inner·√(2/π) (the
        // constant rounded and a product), tanh within T units and moved by its slope at z's
        // error, 1 + tanh, times x, halved.
        Composite::GeluTanh => {
            let t = library("tanh", dtype)?;
            Box::new(move |x: f64| gelu_tanh(x, t, (u, tiny)))
        }
        // Flex's kernel (α·x + β) clamped to [0, 1] in the compute dtype, its constants
        // rounded to it; the clamp moves no error outward.
        Composite::HardSigmoid { alpha, beta } => {
            Box::new(move |x: f64| hard_sigmoid(x, (alpha, beta), (uc, store)).1)
        }
        // x times Flex's hard_sigmoid(x, 1/6, 1/2), the product rounding to the dtype.
        Composite::HardSwish => Box::new(move |x: f64| {
            let (h, h_error) = hard_sigmoid(x, (1.0 / 6.0, 0.5), (uc, store));
            x.abs() * h_error * (1.0 + u) + u * (x * h).abs()
        }),
        // 3x rounds, its square once more, x · x once, then the subtraction.
        Composite::CrossMiddle => Box::new(move |x: f64| {
            let (nine, one) = (gamma(3, u) * 9.0 * x * x, gamma(1, u) * x * x);
            nine + one + u * (8.0 * x * x + nine + one)
        }),
    };
    // The reference's own rounding to the dtype, and the roundings near zero; a result past
    // the range or a NaN must match as it is.
    let with_rounding = |x: f64, r: f64| {
        if r.is_finite() {
            bound(x) * (1.0 + 4.0 * u) + u * r.abs() + 4.0 * floor
        } else {
            0.0
        }
    };
    Some(
        (x.floats()?.iter().zip(expected.floats()?))
            .map(|(x, r)| match (x, r) {
                (Some(x), Some(r)) => with_rounding(*x, *r),
                _ => f64::INFINITY,
            })
            .collect(),
    )
}

/// Flex's hard_sigmoid kernel at `x` with slope and offset `(alpha, beta)`, and its error: the
/// compute dtype's unit roundoff `uc` and the storage's `store` (see [`Composite::HardSigmoid`]).
fn hard_sigmoid(x: f64, (alpha, beta): (f64, f64), (uc, store): (f64, f64)) -> (f64, f64) {
    let p = alpha * x + beta;
    let h = p.clamp(0.0, 1.0);
    let error = clamped(
        p,
        gamma(3, uc) * (alpha * x).abs() + gamma(2, uc) * beta.abs(),
    );
    (h, error + store * (h + error))
}

/// Flex's gelu kernel's error at `x` (see [`Composite::Gelu`]): erf's units `erf_units`, the
/// compute dtype's unit roundoff and smallest spacing, and the storage's unit roundoff (0 where
/// the kernel computes in the dtype itself).
fn gelu(x: f64, erf_units: f64, (uc, tc): (f64, f64), store: f64) -> f64 {
    let d = x.abs() / std::f64::consts::SQRT_2;
    let moved = gamma(2, uc) * d;
    let slope = std::f64::consts::FRAC_2_SQRT_PI * (-(d - moved).max(0.0).powi(2)).exp();
    let erf = erf(x / std::f64::consts::SQRT_2);
    let s_error = slope * moved + units(erf_units, erf, (uc, tc));
    let s = 1.0 + erf;
    let r = 0.5 * x * s;
    let error = 0.5 * x.abs() * (s_error + uc * (s.abs() + s_error)) * (1.0 + uc) + uc * r.abs();
    error + store * (r.abs() + error)
}

/// The tanh approximation's error at `x` (see [`Composite::GeluTanh`]): tanh's units `t` and the
/// dtype's unit roundoff and smallest spacing.
fn gelu_tanh(x: f64, t: f64, (u, tiny): (f64, f64)) -> f64 {
    let c = (2.0 / std::f64::consts::PI).sqrt();
    let cube = 0.044715 * x * x * x;
    let inner = x + cube;
    let inner_error = gamma(5, u) * cube.abs() + u * (inner.abs() + gamma(5, u) * cube.abs());
    let z = c * inner;
    let z_error = c * inner_error * (1.0 + gamma(2, u)) + gamma(2, u) * z.abs();
    let slope = 1.0 - ((z.abs() - z_error).max(0.0)).tanh().powi(2);
    let tanh = z.tanh();
    let t_error = slope * z_error + units(t, tanh.abs() + slope * z_error, (u, tiny));
    let s = 1.0 + tanh;
    let s_error = t_error + u * (s.abs() + t_error);
    let r = 0.5 * x * s;
    0.5 * x.abs() * s_error * (1.0 + u) + u * r.abs()
}
