//! Error bounds derived from the arithmetic, per output element: Higham's forward error bound
//! for the ops that add up terms, and its composition for the two-pass variance.
//!
//! A sum of `n` terms computed in any order (recursive, pairwise, blocked, with or without a
//! fused multiply-add) satisfies `|fl(Σ tᵢ) − Σ tᵢ| ≤ γₙ Σ|tᵢ|`, `γₙ = nu / (1 − nu)` with `u`
//! the dtype's unit roundoff (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd
//! ed., §3.1 and §4.2). For an op linear in its operands with nonnegative coefficients (a sum,
//! a mean, a cumulative sum, a matmul or convolution with the reference's nonnegative ramp
//! weights, an average pooling), `Σ|tᵢ|` of each output element is the op itself over the
//! operands' magnitudes, which the reference computes with the same loops: no op needs a second
//! description of which taps an element reads.

use super::host::{Data, Host};
use crate::program::{Dtype, Op};

/// How an op's rounding error is bounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
}

/// The entries of the tables that have a derived bound, by table name. Every other entry keeps
/// its tolerance family's preset: products (a partial product may underflow or overflow in an
/// order Burn does not pin down, so no relative bound holds), normalizations, attention and the
/// softmaxes (composites whose exponentials are library functions), resamplings whose weights
/// are themselves rounded (bicubic, Lanczos, grid sampling) and the ops the reference has no
/// loops for.
const MODELS: &[(&str, Model)] = &[
    ("mean_dim", Model::Linear),
    ("cumsum", Model::Linear),
    ("sum_dims", Model::Linear),
    ("scatter_add", Model::Linear),
    ("var", Model::Variance { biased: false }),
    ("var_bias", Model::Variance { biased: true }),
    ("avg_pool1d", Model::Linear),
    ("avg_pool2d", Model::Linear),
    ("avg_pool3d", Model::Linear),
    ("adaptive_avg_pool1d", Model::Linear),
    ("adaptive_avg_pool2d", Model::Linear),
    ("adaptive_avg_pool3d", Model::Linear),
    ("avg_pool2d_backward", Model::Linear),
    ("avg_pool3d_backward", Model::Linear),
    ("conv1d", Model::Linear),
    ("conv2d", Model::Linear),
    ("conv3d", Model::Linear),
    ("conv2d_depthwise", Model::Linear),
    ("conv_transpose1d", Model::Linear),
    ("conv_transpose2d", Model::Linear),
    ("conv_transpose3d", Model::Linear),
    ("linear", Model::Linear),
    ("unfold_fold", Model::Linear),
    // Same-size bilinear resampling: weights 1 and 0 at every output, as the reference has it.
    ("interpolate_bilinear", Model::Linear),
];

/// The op's error model, if its bound is derived.
pub fn model(op: &Op) -> Option<Model> {
    let name = match op {
        Op::Matmul { .. } | Op::SumDim { .. } => return Some(Model::Linear),
        Op::AlongDim { op, .. } => op.name(),
        Op::Module { op, .. } => op.name(),
        _ => return None,
    };
    MODELS.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
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

/// How large the absolute error of each element of `op`'s result may be, over its `operands`
/// as Burn held them, in the result's `dtype`; `floor` is the absolute error each rounding near
/// zero may add (a subnormal's spacing, or a device's flush to zero). `None` where the op has
/// no derived bound or its reference over the magnitudes has none; an element without a bound
/// (an unknown magnitude) is infinite: left open.
pub fn per_element(op: &Op, operands: &[&Host], dtype: Dtype, floor: f64) -> Option<Vec<f64>> {
    let model = model(op)?;
    let u = dtype.epsilon() / 2.0;
    let n = operands.iter().map(|h| h.numel()).max().unwrap_or(1);
    let owned: Vec<Host> = operands.iter().map(|h| magnitudes(h)).collect();
    let abs: Vec<&Host> = owned.iter().collect();
    match model {
        Model::Linear => {
            let m = super::of_op(op, &abs).ok()?;
            let k = n + 2;
            let spread = |m: &Option<f64>| match m {
                Some(m) => gamma(k, u) * m + k as f64 * floor,
                None => f64::INFINITY,
            };
            Some(m.floats()?.iter().map(spread).collect())
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
            let var = super::of_op(op, operands).ok()?;
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
                        g * var.abs()
                            + (1.0 + g) * len as f64 * delta * delta / divisor as f64
                            + (len + 4) as f64 * floor
                    }
                    _ => f64::INFINITY,
                }
            };
            Some(var.floats()?.iter().zip(&lanes).map(bound).collect())
        }
    }
}
