//! Error bounds derived from the arithmetic, per output element: Higham's forward error bound
//! for the ops that add up terms, its composition for the two-pass variance and the softmax,
//! and the measured units in the last place of the functions Flex takes from a math library.
//!
//! A sum of `n` terms computed in any order (recursive, pairwise, blocked, with or without a
//! fused multiply-add) satisfies `|fl(Σ tᵢ) − Σ tᵢ| ≤ γₙ Σ|tᵢ|`, `γₙ = nu / (1 − nu)` with `u`
//! the dtype's unit roundoff (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd
//! ed., §3.1 and §4.2). For an op linear in its operands with nonnegative coefficients (a sum,
//! a mean, a cumulative sum, a matmul or convolution with the reference's nonnegative ramp
//! weights, an average pooling), `Σ|tᵢ|` of each output element is the op itself over the
//! operands' magnitudes, which the reference computes with the same loops: no op needs a second
//! description of which taps an element reads.

mod composite;
mod product;

use super::along_dim::ALONG_DIM_ERROR;
use super::elementwise::{BINARY_ERROR, SCALAR_ERROR, UNARY, UNARY_ERROR};
pub use super::error::{gamma, Arithmetic, Composite, Model, Product, Terms, Ulps};
use super::host::{Data, Host};
use super::module::MODULE_ERROR;
use crate::oracles::Backend;
use crate::program::{Dtype, FixedOp, Kind, Op, Tolerance};

/// The unary entries with a library bound, in table order, and the bounds.
pub fn library_bounds() -> impl Iterator<Item = (&'static str, Ulps)> {
    (UNARY.iter().zip(UNARY_ERROR)).filter_map(|((name, _), error)| match error.model {
        Some(Model::Library(ulps)) => Some((*name, ulps)),
        _ => None,
    })
}

/// The library bound of the unary entry `name`, if it has one.
pub fn library_bound(name: &str) -> Option<Ulps> {
    library_bounds().find(|(n, _)| *n == name).map(|(_, u)| u)
}

/// The op's error model on `backend`, if its bound is derived.
pub fn model(op: &Op, backend: Backend) -> Option<Model> {
    // A round trip the reference models element by element, on Flex (whose scale and codes are
    // f32 arithmetic; wgpu's keep the step's bound).
    if super::quantization::exact_scheme(op).is_some() {
        return (backend == Backend::Flex).then_some(Model::Quantized);
    }
    let model = match op.fixed() {
        Some(fixed) => fixed_model(fixed),
        None => arithmetic(op).and_then(|a| a.model),
    };
    match model {
        // Measured on Flex, or composed from Flex's kernel (a power by squaring, where a WGSL
        // backend may take pow; a mean's division, which WGSL allows 2.5 units): on wgpu such
        // an entry keeps its family's preset (WGSL's accuracy table is not composed here).
        Some(
            Model::Library(_)
            | Model::Attention { .. }
            | Model::LogSoftmax
            | Model::Composite(_)
            | Model::Product(_)
            | Model::MinusSum { .. },
        ) if backend != Backend::Flex => None,
        model => model,
    }
}

/// A fixed op's error model: Higham's over the dim a matmul or a sum adds along; `None` for
/// the others, which move, pick or convert elements without arithmetic of their own and keep
/// their family's bound.
fn fixed_model(op: FixedOp) -> Option<Model> {
    match op {
        FixedOp::Matmul | FixedOp::SumDim => Some(Model::Linear(Terms::Dim)),
        FixedOp::ArgMax
        | FixedOp::Clamp
        | FixedOp::Reshape
        | FixedOp::SwapDims
        | FixedOp::Slice
        | FixedOp::Cat
        | FixedOp::MaskWhere
        | FixedOp::MaskFill
        | FixedOp::CastToFloat
        | FixedOp::CastToInt
        | FixedOp::CastToBool
        | FixedOp::And
        | FixedOp::Or
        | FixedOp::Not => None,
    }
}

/// `op`'s table row's `error` column, if it is a table entry.
pub fn arithmetic(op: &Op) -> Option<Arithmetic> {
    Some(match op {
        Op::Unary { op, .. } => UNARY_ERROR[op.index()],
        Op::Binary { op, .. } => BINARY_ERROR[op.index()],
        Op::Scalar { op, .. } => SCALAR_ERROR[op.index()],
        Op::AlongDim { op, .. } => ALONG_DIM_ERROR[op.index()],
        Op::Module { op, .. } => MODULE_ERROR[op.index()],
        _ => return None,
    })
}

/// How far past its result `op`'s formula goes before it comes back to it (its row's
/// [`Arithmetic::headroom`]; 1 for an op outside the tables).
pub fn headroom(op: &Op) -> f64 {
    arithmetic(op).map_or(1.0, |a| a.headroom)
}

/// The spacing of `dtype`'s values at `x` (a unit in the last place): the subnormals' spacing
/// below the smallest normal value.
pub fn ulp(dtype: Dtype, x: f64) -> f64 {
    let x = x.abs();
    if x < dtype.smallest_normal() {
        dtype.tiniest()
    } else {
        // 2^floor(log2 x), from the exponent bits (x is a normal f64 here).
        f64::from_bits(x.to_bits() & 0x7ff0_0000_0000_0000) * dtype.epsilon()
    }
}

/// How many terms an element of `op`'s result adds up at most, as its row's [`Terms`] count
/// them (a matmul: its inner dim); at most every element of the largest operand, plus one.
fn terms(op: &Op, counted: Terms, operands: &[&Host]) -> usize {
    let whole = operands.iter().map(|h| h.numel()).max().unwrap_or(1);
    let Some(x) = operands.first() else {
        return whole;
    };
    let shape = &x.shape;
    // The kernel's taps: a row of k for a rank-3 (1-D) operand, k² otherwise (the 3-D entries
    // have a depth of one).
    let taps = |kernel: u8| {
        let k = crate::program::kernel_size(kernel);
        if shape.len() == 3 {
            k
        } else {
            k * k
        }
    };
    let channels = shape.get(1).copied().unwrap_or(1);
    let n = match (counted, op) {
        (_, Op::Matmul { transpose_rhs, .. }) => {
            let rhs = operands.get(1).map(|h| &h.shape);
            match (transpose_rhs, rhs) {
                (false, Some(r)) => r.len().checked_sub(2).and_then(|i| r.get(i)).copied(),
                (true, Some(r)) => r.last().copied(),
                _ => None,
            }
        }
        (Terms::Dim, Op::SumDim { dim, .. } | Op::AlongDim { dim, .. }) => {
            shape.get(usize::from(*dim)).copied()
        }
        (Terms::Fixed(n), _) => Some(n),
        (Terms::ChannelTaps, Op::Module { kernel, .. }) => Some(channels * taps(*kernel) + 1),
        (Terms::Taps { bias }, Op::Module { kernel, .. }) => {
            Some(taps(*kernel) + usize::from(bias))
        }
        (Terms::Last, _) => shape.last().map(|s| s + 1),
        _ => None,
    };
    n.unwrap_or(whole).clamp(1, whole + 1)
}

/// The operand with every float element replaced by its magnitude.
fn magnitudes(x: &Host) -> Host {
    let mut out = x.clone();
    if let Data::Float(v) = &mut out.data {
        for e in v.iter_mut().flatten() {
            *e = e.abs();
        }
    }
    out
}

/// How large the absolute error of each element of `op`'s result may be under `model`, over
/// its `operands` as Burn held them, in the result's `dtype`: `expected` is the reference's
/// value (before its rounding to the dtype), `floor` the absolute error each rounding near zero
/// may add (a subnormal's spacing, or a device's flush to zero). `None` where the model does
/// not fit the op or the operands; an element without a bound (an unknown magnitude) is
/// infinite: left open.
pub fn per_element(
    model: Model,
    op: &Op,
    operands: &[&Host],
    expected: &Host,
    (dtype, floor): (Dtype, f64),
) -> Option<Vec<f64>> {
    let u = dtype.epsilon() / 2.0;
    match model {
        Model::Linear(counted) => {
            let n = terms(op, counted, operands);
            let owned: Vec<Host> = operands.iter().map(|h| magnitudes(h)).collect();
            let abs: Vec<&Host> = owned.iter().collect();
            let m = super::of_op(op, &abs).ok()?;
            // A term passes through at most n roundings (its product, and the additions after
            // it, a bias's included, in whatever order), one more where a mean or a window
            // multiplies by a rounded reciprocal of its count; then the reference's own rounding
            // to the dtype: |result| ≤ m.
            let k = n + 1;
            let spread = |m: &Option<f64>| match m {
                Some(m) => (gamma(k, u) + u) * m + k as f64 * floor,
                None => f64::INFINITY,
            };
            Some(m.floats()?.iter().map(spread).collect())
        }
        // k units of the reference rounded to the dtype, whose own rounding the measurement
        // included; a value past the dtype's range or a NaN must match as it is.
        Model::Library(ulps) => {
            let k = ulps.of(dtype)?;
            // The spacing where the allowed interval ends: from just below a power of two,
            // k units reach into the binade above, whose units are twice as large.
            let bound = |e: &Option<f64>| match e.map(|e| super::host::as_stored(dtype, e)) {
                Some(e) if e.is_finite() => k * ulp(dtype, e.abs() + k * ulp(dtype, e)),
                Some(_) => 0.0,
                None => f64::INFINITY,
            };
            Some(expected.floats()?.iter().map(bound).collect())
        }
        // With z = x − max (rounded: u·|z| relative after the exp) and exp within E units, each
        // term carries u·(|z| + E + 1); the sum of positive terms γₙ beyond its terms' worst;
        // the inverse and the multiply 2u. First order, so twice that; an exp that underflows
        // errs by a subnormal's spacing at most, divided by a sum of at least 1.
        Model::Softmax { negated, quiet } => {
            softmax_bounds(op, operands, expected, (dtype, floor), (negated, quiet))
        }
        Model::LogSoftmax => log_softmax_bounds(op, operands, expected, (dtype, floor)),
        Model::Quantized => super::quantization::bounds(op, operands.first()?, dtype, floor),
        Model::Composite(composite) => {
            composite::bounds(composite, operands.first()?, expected, (dtype, floor))
        }
        Model::Product(product) => {
            product::bounds(product, op, operands.first()?, expected, (dtype, floor))
        }
        Model::MinusSum { mean } => {
            product::minus_sum(mean, operands.first()?, expected, (dtype, floor))
        }
        // Flex's own kernel computes the half dtypes in f32 (burn-flex ops/attention.rs,
        // cast_to_f32), but on an autodiff device Burn decomposes it into tensor ops that each
        // round to the dtype (burn-autodiff ops/module.rs:2267-2280, attention_fallback): the
        // dtype's own unit roundoff bounds both.
        Model::Attention { causal } => {
            let exp = library_bound("exp").map_or(2.0, |ulps| ulps.single);
            super::module::attention_bounds(operands.first()?, causal, (u, floor, exp))
        }
        // With the computed mean m̂ = m + δ, Σ(xᵢ − m̂)² = Σ(xᵢ − m)² + nδ² exactly (the
        // centered values sum to zero); each term then rounds in the subtraction, the square
        // and the sum, all of nonnegative terms, and once more in the division:
        // |err| ≤ γ_{n+4} · var + (1 + γ_{n+4}) · nδ² / divisor, |δ| ≤ γ_{n+1} · mean|x|.
        Model::Variance { biased } => {
            let Op::AlongDim { dim, .. } = op else {
                return None;
            };
            let x = operands.first()?;
            let v = x.floats()?;
            let lanes = super::host::lanes(&x.shape, usize::from(*dim));
            let len = lanes.first().map_or(0, Vec::len);
            let divisor = if biased { len } else { len.saturating_sub(1) };
            let g = gamma(len + 4, u);
            let bound = |(var, lane): (&Option<f64>, &Vec<usize>)| {
                let mean_abs = lane
                    .iter()
                    .map(|&i| v[i].map(f64::abs))
                    .sum::<Option<f64>>();
                match (var, mean_abs) {
                    (Some(var), Some(total)) if divisor > 0 => {
                        let delta = gamma(len + 1, u) * total / len as f64;
                        let bound = g * var.abs()
                            + (1.0 + g) * len as f64 * delta * delta / divisor as f64
                            + (len + 4) as f64 * floor;
                        bound + 2.0 * u * (var.abs() + bound)
                    }
                    _ => f64::INFINITY,
                }
            };
            Some(expected.floats()?.iter().zip(&lanes).map(bound).collect())
        }
    }
}

/// A lane of `v` times `sign`, shifted by its maximum: the maximum, the shifted values and the
/// largest finite magnitude among them (`None` where an element is unknown).
fn shifted_lane(v: &[Option<f64>], lane: &[usize], sign: f64) -> Option<(f64, Vec<f64>, f64)> {
    let zs: Vec<f64> = lane
        .iter()
        .map(|&i| v[i].map(|e| sign * e))
        .collect::<Option<_>>()?;
    let max = zs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let shifted: Vec<f64> = zs.iter().map(|z| z - max).collect();
    let far = (shifted.iter())
        .filter(|z| z.is_finite())
        .fold(0f64, |m, z| m.max(z.abs()));
    Some((max, shifted, far))
}

/// [`per_element`]'s log_softmax bounds over `dtype`, absolute: with `z = x − max` rounded
/// (`u|z|`), the sum of the exps `S ≥ 1` errs relatively by `σ = γ(n) + u(max|z| + E + 1)` (each
/// exp's units and its argument's rounding), so its log by `σ` absolutely plus the log's own
/// units at `ln S`; the subtraction and the reference round the result, `u|r|` each; doubled
/// for the first-order terms dropped. An element whose `z` is not finite is open.
fn log_softmax_bounds(
    op: &Op,
    operands: &[&Host],
    expected: &Host,
    (dtype, floor): (Dtype, f64),
) -> Option<Vec<f64>> {
    let Op::AlongDim { dim, .. } = op else {
        return None;
    };
    let u = dtype.epsilon() / 2.0;
    let x = operands.first()?;
    let v = x.floats()?;
    let want = expected.floats()?;
    let exp = library_bound("exp").map_or(2.0, |ulps| ulps.single);
    let log = library_bound("log").map_or(2.0, |ulps| ulps.single);
    let mut out = vec![f64::INFINITY; want.len()];
    for lane in super::host::lanes(&x.shape, usize::from(*dim)) {
        let Some((max, shifted, far)) = shifted_lane(v, &lane, 1.0) else {
            continue;
        };
        if !max.is_finite() {
            continue;
        }
        let sum: f64 = shifted.iter().map(|z| z.exp()).sum();
        let sigma = gamma(lane.len(), u) + u * (far + exp + 1.0);
        let log_error = sigma + (log + 1.0) * u * sum.ln().abs();
        for (&i, z) in lane.iter().zip(&shifted) {
            out[i] = match want[i] {
                Some(r) if z.is_finite() => {
                    2.0 * (u * z.abs() + log_error + 2.0 * u * r.abs()) + 2.0 * floor
                }
                _ => f64::INFINITY,
            };
        }
    }
    Some(out)
}

/// [`per_element`]'s softmax bounds over `dtype` (`u` its unit roundoff); `quiet`: one more
/// term, `exp(−max)`, in the denominator.
fn softmax_bounds(
    op: &Op,
    operands: &[&Host],
    expected: &Host,
    (dtype, floor): (Dtype, f64),
    (negated, quiet): (bool, bool),
) -> Option<Vec<f64>> {
    let u = dtype.epsilon() / 2.0;
    let Op::AlongDim { dim, .. } = op else {
        return None;
    };
    let x = operands.first()?;
    let v = x.floats()?;
    let want = expected.floats()?;
    let sign = if negated { -1.0 } else { 1.0 };
    let exp = library_bound("exp").map_or(2.0, |ulps| ulps.single);
    let mut out = vec![f64::INFINITY; want.len()];
    for lane in super::host::lanes(&x.shape, usize::from(*dim)) {
        let Some((max, shifted, mut far)) = shifted_lane(v, &lane, sign) else {
            continue;
        };
        // The quiet softmax's extra term is exp(−max), one more of the sum; where it passes
        // the dtype's range the denominator is infinite and every result 0, where the
        // definition's may be a tiny number: left open.
        let terms = lane.len() + usize::from(quiet);
        if quiet {
            if -max > dtype.largest().ln() {
                continue;
            }
            far = far.max(max.abs());
        }
        let sum = gamma(terms, u) + u * (far + exp + 1.0);
        for (&i, z) in lane.iter().zip(&shifted) {
            let own = if z.is_finite() {
                u * (z.abs() + exp + 1.0)
            } else {
                0.0
            };
            let rel = 2.0 * (own + sum + 2.0 * u);
            out[i] = match want[i] {
                Some(w) if max.is_finite() => rel * w.abs() + 2.0 * floor,
                _ => f64::INFINITY,
            };
        }
    }
    Some(out)
}

/// The tolerance family the reference judges `op` with: its table entry's, but moves and
/// selections of values are exact, and a conversion to a float dtype is rounded once (the
/// differential keeps the looser family for them: a device may canonicalize a NaN's payload).
pub fn family(op: &Op) -> Tolerance {
    match op {
        Op::Reshape { .. }
        | Op::SwapDims { .. }
        | Op::Slice { .. }
        | Op::Cat { .. }
        | Op::Clamp { .. }
        | Op::MaskWhere { .. }
        | Op::MaskFill { .. } => Tolerance::Exact,
        Op::Cast {
            to: Kind::Float, ..
        } => Tolerance::Rounded,
        op => op.tolerance(),
    }
}

/// How the reference bounds `op`'s float error on Flex, in words: its derived model, or its
/// family's preset and that it is not derived (for `ops --json`).
pub fn describe(op: &Op) -> String {
    match model(op, Backend::Flex) {
        Some(Model::Linear(_)) => "Higham: γ(n+1)·Σ|terms| per element (n: the terms it adds up), \
             plus the roundings to the dtype"
            .into(),
        Some(Model::Variance { .. }) => "two-pass variance: γ(n+4)·var + (1+γ)·nδ²/divisor, \
             |δ| ≤ γ(n+1)·mean|x|, plus the roundings"
            .into(),
        Some(Model::Softmax { .. }) => {
            "softmax composed: 2·(u·(|z|+E+1) + u·(max|z|+E+1) + γ(n) + 2u) \
             relative, z = x − max, E the library exp's units (quiet: one more term, \
             exp(−max), open where it overflows)"
                .into()
        }
        Some(Model::LogSoftmax) => "log_softmax composed, absolute: 2·(u|z| + σ + (L+1)u·ln S \
             + 2u|r|), σ = γ(n) + u(max|z| + E + 1), z = x − max, S = Σ exp z, E and L the \
             library exp's and log's units"
            .into(),
        Some(Model::Attention { .. }) => "attention composed: 2·(Σ pⱼ|vⱼ|·(e^{(1−pⱼ)(e^{Δⱼ+Δ*} \
             − 1)} − 1 + ρⱼ + ρ̄) + (γ(n+1) + u)·Σ p|v|) + 2u·Σ p|v| per element, \
             Δⱼ = γ(e+2)·scale·Σ|q||kⱼ|, Δ* the largest other, \
             ρⱼ = (tiles + 1)(E + 2 + |sⱼ − max|)u, u the dtype's"
            .into(),
        Some(Model::Quantized) => {
            "quantization round trip (integer or minifloat codes, f32 scales): the \
             interval of values the scheme's codes allow each element, the scale and the \
             quotient within their f32 roundings (an element near a tie may take either code)"
                .into()
        }
        Some(Model::Product(p)) => format!(
            "product ({p:?}): γ(n+1)·|Π x| per element (n: its factors), open where a partial \
             product in some order may leave the normal range, plus the roundings to the dtype"
        ),
        Some(Model::MinusSum { mean }) => format!(
            "whole-operand {} subtracted: γ(n{})·Σ|x|{} from the reduction, then the \
             subtraction's and the reference's roundings",
            if mean { "mean" } else { "sum" },
            if mean { "+1" } else { "" },
            if mean { "/n" } else { "" }
        ),
        Some(Model::Composite(c)) => format!(
            "composed from Burn's formula ({c:?}): each rounding u and each library call's \
             measured units carried through the steps after it, per element, absolute"
        ),
        Some(Model::Library(u)) => format!(
            "math library (measured by `accuracy`): {} ULP over F16 and BF16, {} over F32, {}",
            u.half,
            u.single,
            match u.double {
                Some(d) => format!("{d} over F64"),
                None => "F64 its family's preset".into(),
            }
        ),
        None => match family(op) {
            Tolerance::Exact | Tolerance::Step => "exact".into(),
            Tolerance::Rounded => "correctly rounded: half a ULP (3 ULP on wgpu)".into(),
            Tolerance::Balanced => {
                "not derived (a quantization, a resampling or a normalization): \
                 Burn's balanced preset, 0.5% relative"
                    .into()
            }
            Tolerance::Transcendental => "not derived (a composite of library functions, or \
                 one Rust's std computes with its own formula): Burn's permissive preset, 1% \
                 relative and 0.01 absolute"
                .into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_in_the_last_place_is_the_spacing_of_the_values_at_that_magnitude() {
        assert_eq!(ulp(Dtype::F32, 1.0), f64::from(f32::EPSILON));
        assert_eq!(ulp(Dtype::F32, 1.999), f64::from(f32::EPSILON));
        assert_eq!(ulp(Dtype::F32, -8.5), 8.0 * f64::from(f32::EPSILON));
        assert_eq!(ulp(Dtype::F16, 1e-7), Dtype::F16.tiniest());
        assert_eq!(ulp(Dtype::Bf16, 3.0), 2.0 / 128.0);
    }

    #[test]
    fn gamma_grows_as_n_times_the_unit_roundoff_and_has_no_bound_past_one() {
        let u = Dtype::F32.epsilon() / 2.0;
        assert!((gamma(10, u) - 10.0 * u).abs() < 1e-12);
        assert_eq!(gamma(256, Dtype::Bf16.epsilon() / 2.0), f64::INFINITY);
    }
}
