//! The references of the module table, as plain loops: every entry keeps the operand's spatial
//! size (stride 1, "same" padding), its weights are `arange` ramps, and 1-D and 3-D entries are
//! the 2-D loops over a height (1-D) or a depth (3-D) of one, as the calls insert it.

use super::error::{gamma, higham, Arithmetic, Terms, ATTENTION, ATTENTION_CAUSAL, PRESET};
use super::host::{Host, F32_MAX};

/// How the reference computes one module entry on the operand (`[n, c, l]` or `[n, c, h, w]`)
/// and the kernel size `k` (1 or 3).
#[derive(Clone, Copy)]
pub enum Module {
    /// A function of the operand and the kernel.
    Loops(fn(&Host, usize) -> Option<Host>),
    /// The operand round-tripped through Burn's default quantization, judged within one step of
    /// its scale (see [`super::host::quantized`]), times the default quantization's identity
    /// (the quantized matmul entry's weight).
    Quantized,
    /// No reference, and why.
    Missing(&'static str),
}

/// The operand as `[n, c, h, w]` (a rank-3 operand has `h = 1`) and its known values.
fn nchw(x: &Host) -> Option<([usize; 4], Vec<f64>)> {
    let v: Vec<f64> = x.floats()?.iter().copied().collect::<Option<_>>()?;
    let s = &x.shape;
    let dims = match s.len() {
        3 => [s[0], s[1], 1, s[2]],
        4 => [s[0], s[1], s[2], s[3]],
        _ => return None,
    };
    Some((dims, v))
}

/// The kernel's height and width, and their padding, for the operand's rank: 1-D entries have
/// a kernel of one row.
fn window(x: &Host, k: usize) -> (usize, usize, usize, usize) {
    let p = (k - 1) / 2;
    if x.shape.len() == 3 {
        (1, k, 0, p)
    } else {
        (k, k, p, p)
    }
}

fn at(d: [usize; 4], n: usize, c: usize, y: usize, x: usize) -> usize {
    ((n * d[1] + c) * d[2] + y) * d[3] + x
}

fn out_of(x: &Host, values: Vec<Option<f64>>) -> Host {
    Host::float(x.shape.clone(), values)
}

/// Cross-correlation with `groups` groups, weight `w(co, ci_in_group, ky, kx)`, bias `b(co)`.
fn conv(
    x: &Host,
    k: usize,
    groups: usize,
    weight: impl Fn(usize, usize, usize, usize) -> f64,
    bias: impl Fn(usize) -> f64,
) -> Option<Host> {
    let (d, v) = nchw(x)?;
    let (kh, kw, ph, pw) = window(x, k);
    let per_group = d[1] / groups;
    let mut out = vec![None; v.len()];
    for n in 0..d[0] {
        for co in 0..d[1] {
            let g = co / per_group;
            for oy in 0..d[2] {
                for ox in 0..d[3] {
                    let mut sum = bias(co);
                    for ci in 0..per_group {
                        for ky in 0..kh {
                            for kx in 0..kw {
                                let (iy, ix) = (
                                    (oy + ky) as isize - ph as isize,
                                    (ox + kx) as isize - pw as isize,
                                );
                                if iy < 0 || ix < 0 || iy >= d[2] as isize || ix >= d[3] as isize {
                                    continue;
                                }
                                let input =
                                    v[at(d, n, g * per_group + ci, iy as usize, ix as usize)];
                                sum += input * weight(co, ci, ky, kx);
                            }
                        }
                    }
                    out[at(d, n, co, oy, ox)] = Some(sum);
                }
            }
        }
    }
    Some(out_of(x, out))
}

/// The transposed convolution at stride 1: each input scattered through the kernel, weight
/// `w(ci, co, ky, kx)` (Burn's `[c_in, c_out, k..]` layout), padding cropped off.
fn conv_transpose(x: &Host, k: usize) -> Option<Host> {
    let (d, v) = nchw(x)?;
    let (kh, kw, ph, pw) = window(x, k);
    let c = d[1];
    let weight =
        |ci: usize, co: usize, ky: usize, kx: usize| (((ci * c + co) * kh + ky) * kw + kx) as f64;
    let mut out = vec![None; v.len()];
    for n in 0..d[0] {
        for co in 0..c {
            for oy in 0..d[2] {
                for ox in 0..d[3] {
                    let mut sum = co as f64;
                    for ci in 0..c {
                        for ky in 0..kh {
                            for kx in 0..kw {
                                // oy = iy - ph + ky.
                                let (iy, ix) = (
                                    (oy + ph) as isize - ky as isize,
                                    (ox + pw) as isize - kx as isize,
                                );
                                if iy < 0 || ix < 0 || iy >= d[2] as isize || ix >= d[3] as isize {
                                    continue;
                                }
                                sum += v[at(d, n, ci, iy as usize, ix as usize)]
                                    * weight(ci, co, ky, kx);
                            }
                        }
                    }
                    out[at(d, n, co, oy, ox)] = Some(sum);
                }
            }
        }
    }
    Some(out_of(x, out))
}

/// The values of the window at `(oy, ox)` (padding left out) and their input positions.
fn taps(
    d: [usize; 4],
    v: &[f64],
    n: usize,
    c: usize,
    oy: usize,
    ox: usize,
    win: (usize, usize, usize, usize),
) -> Vec<(f64, usize)> {
    let (kh, kw, ph, pw) = win;
    let mut out = Vec::new();
    for ky in 0..kh {
        for kx in 0..kw {
            let (iy, ix) = (
                (oy + ky) as isize - ph as isize,
                (ox + kx) as isize - pw as isize,
            );
            if iy >= 0 && ix >= 0 && iy < d[2] as isize && ix < d[3] as isize {
                let (iy, ix) = (iy as usize, ix as usize);
                out.push((v[at(d, n, c, iy, ix)], iy * d[3] + ix));
            }
        }
    }
    out
}

/// A pooling over each window: `reduce(taps, window size)`.
fn pool(
    x: &Host,
    k: usize,
    reduce: impl Fn(&[(f64, usize)], usize) -> Option<f64>,
) -> Option<Host> {
    let (d, v) = nchw(x)?;
    let win = window(x, k);
    let mut out = vec![None; v.len()];
    for n in 0..d[0] {
        for c in 0..d[1] {
            for oy in 0..d[2] {
                for ox in 0..d[3] {
                    out[at(d, n, c, oy, ox)] =
                        reduce(&taps(d, &v, n, c, oy, ox, win), win.0 * win.1);
                }
            }
        }
    }
    Some(out_of(x, out))
}

fn avg_pool(x: &Host, k: usize) -> Option<Host> {
    // AvgPoolOptions::new counts the padding in (count_include_pad: true).
    pool(x, k, |t, size| {
        Some(t.iter().map(|(v, _)| v).sum::<f64>() / size as f64)
    })
}

/// The backward of a same-padded, stride-1 average pooling of `k × k` (the padding counted in,
/// so every window divides by `k²`), seeded with the operand itself as the output gradient:
/// each input gathers `g / k²` from every window holding it, the outputs `o` with
/// `i + p - k + 1 <= o <= i + p` in each spatial dim. Where the terms' magnitudes add up past
/// f32's range, Burn's f32 sum overflows in an order the reference does not know: left open.
fn avg_pool_backward(x: &Host, k: usize) -> Option<Host> {
    let (d, g) = nchw(x)?;
    let (kh, kw, ph, pw) = window(x, k);
    let span = |i: usize, len: usize, k: usize, p: usize| {
        (i + p + 1).saturating_sub(k)..(i + p + 1).min(len)
    };
    let mut out = vec![None; g.len()];
    for n in 0..d[0] {
        for c in 0..d[1] {
            for iy in 0..d[2] {
                for ix in 0..d[3] {
                    let (mut sum, mut magnitude) = (0.0, 0.0);
                    for oy in span(iy, d[2], kh, ph) {
                        for ox in span(ix, d[3], kw, pw) {
                            let term = g[at(d, n, c, oy, ox)];
                            sum += term;
                            magnitude += term.abs();
                        }
                    }
                    out[at(d, n, c, iy, ix)] =
                        (magnitude <= F32_MAX).then(|| sum / (kh * kw) as f64);
                }
            }
        }
    }
    Some(out_of(x, out))
}

fn max_pool(x: &Host, k: usize) -> Option<Host> {
    pool(x, k, |t, _| {
        (!t.iter().any(|(v, _)| v.is_nan()))
            .then(|| t.iter().map(|(v, _)| *v).fold(f64::NEG_INFINITY, f64::max))
    })
}

/// The flat spatial index (`y * w + x`) of each window's maximum; a tie or a NaN leaves it open.
fn max_pool_indices(x: &Host, k: usize) -> Option<Host> {
    let values = pool(x, k, |t, _| {
        if t.iter().any(|(v, _)| v.is_nan()) {
            return None;
        }
        let best = t.iter().map(|(v, _)| *v).fold(f64::NEG_INFINITY, f64::max);
        let at: Vec<usize> = t
            .iter()
            .filter(|(v, _)| *v == best)
            .map(|(_, i)| *i)
            .collect();
        (at.len() == 1).then(|| at[0] as f64)
    })?;
    Some(Host::int(
        x.shape.clone(),
        values
            .floats()?
            .iter()
            .map(|e| e.map(|i| i as i128))
            .collect(),
    ))
}

/// `fold(unfold(x))`: each element times the number of windows that hold it.
fn unfold_fold(x: &Host, k: usize) -> Option<Host> {
    let (d, v) = nchw(x)?;
    let (kh, kw, ph, pw) = window(x, k);
    let covered = |i: usize, len: usize, kk: usize, pp: usize| {
        (0..kk)
            .filter(|&o| (i + pp).checked_sub(o).is_some_and(|s| s < len))
            .count()
    };
    let mut out = vec![None; v.len()];
    for n in 0..d[0] {
        for c in 0..d[1] {
            for y in 0..d[2] {
                for xx in 0..d[3] {
                    let times = covered(y, d[2], kh, ph) * covered(xx, d[3], kw, pw);
                    out[at(d, n, c, y, xx)] = Some(v[at(d, n, c, y, xx)] * times as f64);
                }
            }
        }
    }
    Some(out_of(x, out))
}

/// `linear` over the last dim `s` with the weight `[s, s]` ramp (`W[i][j] = i * s + j`, Burn's
/// `[d_in, d_out]` layout) and the bias ramp.
fn linear(x: &Host, _k: usize) -> Option<Host> {
    let v: Vec<f64> = x.floats()?.iter().copied().collect::<Option<_>>()?;
    let s = *x.shape.last()?;
    let rows = v.len() / s;
    let mut out = Vec::with_capacity(v.len());
    for r in 0..rows {
        for j in 0..s {
            let dot: f64 = (0..s).map(|i| v[r * s + i] * (i * s + j) as f64).sum();
            out.push(Some(dot + j as f64));
        }
    }
    Some(out_of(x, out))
}

/// `layer_norm` over the last dim with gamma `0..s`, beta `-(0..s)`, epsilon 1e-5 (Burn's doc
/// comment: the biased variance).
fn layer_norm(x: &Host, _k: usize) -> Option<Host> {
    let v: Vec<f64> = x.floats()?.iter().copied().collect::<Option<_>>()?;
    let s = *x.shape.last()?;
    let mut out = Vec::with_capacity(v.len());
    for row in v.chunks(s) {
        let mean = row.iter().sum::<f64>() / s as f64;
        let var = row.iter().map(|e| (e - mean) * (e - mean)).sum::<f64>() / s as f64;
        for (j, e) in row.iter().enumerate() {
            out.push(Some((e - mean) / (var + 1e-5).sqrt() * j as f64 - j as f64));
        }
    }
    Some(out_of(x, out))
}

/// `batch_norm` in inference form with gamma `0..c`, beta `-(0..c)`, mean `0..c`, variance
/// `1..=c`, epsilon 1e-5 (Burn's argument order: input, gamma, beta, mean, variance).
fn batch_norm(x: &Host, _k: usize) -> Option<Host> {
    let (d, v) = nchw(x)?;
    let plane = d[2] * d[3];
    Some(out_of(
        x,
        v.iter()
            .enumerate()
            .map(|(i, e)| {
                let c = (i / plane) % d[1];
                let (g, b, m, var) = (c as f64, -(c as f64), c as f64, c as f64 + 1.0);
                Some((e - m) / (var + 1e-5).sqrt() * g + b)
            })
            .collect(),
    ))
}

/// An attention operand's values and its `[batch, heads, seq, head_dim]`: `None` for a
/// non-finite query, key or value, for which Burn documents no result (its kernels compute an
/// online softmax), so it is left open.
fn attention_operand(x: &Host) -> Option<(Vec<f64>, [usize; 4])> {
    let v: Vec<f64> = x.floats()?.iter().copied().collect::<Option<_>>()?;
    if v.iter().any(|e| !e.is_finite()) {
        return None;
    }
    Some((v, <[usize; 4]>::try_from(x.shape.as_slice()).ok()?))
}

/// Scaled dot-product attention over `[batch, heads, seq, head_dim]`: queries and values the
/// operand, keys the operand reversed along seq (`causal`: the operand, and a query sees no
/// later key).
fn attention(x: &Host, causal: bool) -> Option<Host> {
    let (v, [b, h, s, e]) = attention_operand(x)?;
    let idx = |bh: usize, i: usize, j: usize| (bh * s + i) * e + j;
    let scale = 1.0 / (e as f64).sqrt();
    let mut out = vec![None; v.len()];
    for bh in 0..b * h {
        for i in 0..s {
            let scores: Vec<f64> = (0..s)
                .map(|j| {
                    if causal && j > i {
                        return f64::NEG_INFINITY;
                    }
                    let key = if causal { j } else { s - 1 - j };
                    (0..e)
                        .map(|t| v[idx(bh, i, t)] * v[idx(bh, key, t)])
                        .map(|p| if p.abs() > F32_MAX { f64::NAN } else { p })
                        .sum::<f64>()
                        * scale
                })
                .collect();
            // A product or a score past f32's range overflows in Burn's f32 arithmetic (to an
            // infinity, and a softmax of infinities to NaN: fuzz --seed 5, queries near 1e20):
            // not pinned down, so that row is left open.
            if scores
                .iter()
                .any(|sc| sc.is_nan() || sc.abs() > F32_MAX && sc.is_finite())
            {
                continue;
            }
            let m = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let weights: Vec<f64> = scores.iter().map(|sc| (sc - m).exp()).collect();
            let total: f64 = weights.iter().sum();
            for t in 0..e {
                let value: f64 = (0..s).map(|j| weights[j] * v[idx(bh, j, t)]).sum::<f64>() / total;
                out[idx(bh, i, t)] = Some(value);
            }
        }
    }
    Some(out_of(x, out))
}

/// Per element of [`attention`]'s result, how far Burn's may be from it: `u` the dtype's unit
/// roundoff (every step of Flex's kernel, or of the tensor ops autodiff decomposes it into,
/// rounds to it or finer), `floor` the error of a rounding near zero, `exp` the library exp's
/// units.
///
/// Per query row: score `j` is a dot product of `e` terms times the scale (itself rounded), so
/// it errs by `δⱼ`, `|δⱼ| ≤ Δⱼ = γ(e+2) · scale · Σ|q||kⱼ|`. A softmax is invariant to a shift
/// of its scores, so probability `j` moves by the factor `e^{δⱼ − L}`, `L = ln Σ pₖ e^{δₖ}`,
/// and `|δⱼ − L| ≤ (1 − pⱼ)(e^{Δⱼ + Δ*} − 1)` (Δ* the largest other `Δₖ`: L averages `δⱼ`
/// with weight `pⱼ`), so a probability near 1 hardly moves; and it errs by
/// `ρⱼ = (tiles + 1)(E + 2 + |sⱼ − max|) · u` from
/// the subtraction of the maximum, the exp and, per tile of the online softmax, a rescale,
/// plus `ρ̄ = Σ pₖ ρₖ` for the denominator's. The weighted sum then adds `γ(n+1)` of `A = Σ
/// pⱼ |vⱼ|` (the same weights over the values' magnitudes, which bounds the result too) and
/// its division `u · A`; the total is doubled for the first-order terms dropped. A weight far
/// below the maximum contributes its error in proportion to itself: an attention whose
/// scores are far apart is nearly a selection, and is held nearly exactly. Then the roundings
/// to the dtype (Burn's and the reference's), and near zero a subnormal spacing per product
/// and sum, and per underflowed weight one spacing times its value.
pub(super) fn attention_bounds(
    x: &Host,
    causal: bool,
    (u, floor, exp): (f64, f64, f64),
) -> Option<Vec<f64>> {
    let (v, [b, h, s, e]) = attention_operand(x)?;
    let idx = |bh: usize, i: usize, j: usize| (bh * s + i) * e + j;
    let scale = 1.0 / (e as f64).sqrt();
    let tiles = s.div_ceil(64) as f64;
    let mut bounds = vec![f64::INFINITY; v.len()];
    for bh in 0..b * h {
        for i in 0..s {
            let keys: Vec<usize> = (0..s).filter(|&j| !(causal && j > i)).collect();
            let key = |j: usize| if causal { j } else { s - 1 - j };
            let dot = |j: usize, f: fn(f64) -> f64| -> f64 {
                (0..e)
                    .map(|t| f(v[idx(bh, i, t)]) * f(v[idx(bh, key(j), t)]))
                    .sum::<f64>()
                    * scale
            };
            let scores: Vec<f64> = keys.iter().map(|&j| dot(j, |x| x)).collect();
            let deltas: Vec<f64> = (keys.iter())
                .map(|&j| gamma(e + 2, u) * dot(j, f64::abs))
                .collect();
            if deltas.iter().any(|d| !d.is_finite() || *d > F32_MAX) {
                continue;
            }
            let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let weights: Vec<f64> = scores.iter().map(|sc| (sc - max).exp()).collect();
            let total: f64 = weights.iter().sum();
            let p: Vec<f64> = weights.iter().map(|w| w / total).collect();
            let rho: Vec<f64> = (scores.iter())
                .map(|sc| (tiles + 1.0) * (exp + 2.0 + (sc - max).abs()) * u)
                .collect();
            let rho_bar: f64 = p.iter().zip(&rho).map(|(p, r)| p * r).sum();
            let n = keys.len();
            // The largest error of another score than j's: the largest, or the second where j
            // holds the largest.
            let first = (0..n).max_by(|a, b| deltas[*a].total_cmp(&deltas[*b]));
            let second = (0..n)
                .filter(|k| Some(*k) != first)
                .map(|k| deltas[k])
                .fold(0f64, f64::max);
            let other = |j: usize| {
                if Some(j) == first {
                    second
                } else {
                    deltas[first.unwrap_or(0)]
                }
            };
            let relative: Vec<f64> = (0..n)
                .map(|j| {
                    let shift = (1.0 - p[j]) * (deltas[j] + other(j)).exp_m1();
                    shift.exp_m1() + rho[j] + rho_bar
                })
                .collect();
            for t in 0..e {
                let values: Vec<f64> = keys.iter().map(|&j| v[idx(bh, j, t)].abs()).collect();
                let spread: f64 = p.iter().zip(&values).map(|(p, a)| p * a).sum();
                let weighed: f64 = (p.iter().zip(&values).zip(&relative))
                    .map(|((p, a), r)| p * a * r)
                    .sum();
                let largest = values.iter().copied().fold(0f64, f64::max);
                let bound = 2.0 * (weighed + (gamma(n + 1, u) + u) * spread)
                    + 2.0 * u * spread
                    + 2.0 * (n + 2) as f64 * floor
                    + n as f64 * floor * largest;
                bounds[idx(bh, i, t)] = if bound.is_finite() {
                    bound
                } else {
                    f64::INFINITY
                };
            }
        }
    }
    Some(bounds)
}

/// The rows of dim 0 in reverse (gather_nd and scatter_nd over `[n, 1]` reversed indices).
fn rows_reversed(x: &Host, _k: usize) -> Option<Host> {
    let n = x.shape[0];
    let row = x.numel() / n;
    let order: Vec<usize> = (0..x.numel())
        .map(|i| (n - 1 - i / row) * row + i % row)
        .collect();
    Some(x.gathered(x.shape.clone(), &order))
}

/// The `[a * b, e]` table looked up in reverse: the rows over the first two dims reversed.
fn embedding(x: &Host, _k: usize) -> Option<Host> {
    let rows = x.shape[0] * x.shape[1];
    let e = x.shape[2];
    let order: Vec<usize> = (0..x.numel())
        .map(|i| (rows - 1 - i / e) * e + i % e)
        .collect();
    Some(x.gathered(x.shape.clone(), &order))
}

/// Resampling (or an adaptive pooling) to the operand's own size: every mode's sample points
/// are the pixel centres, so each output is its input (nearest picks it, the linear, cubic and
/// Lanczos kernels weigh it 1 and every other tap 0).
/// A non-finite operand leaves every output open: the kernels weigh the neighbours 0, and
/// what an implementation makes of 0 times an infinity or a NaN (IEEE: NaN) is its own.
fn same_size(x: &Host, _k: usize) -> Option<Host> {
    let v = x.floats()?;
    if v.iter().any(|e| e.is_some_and(|e| !e.is_finite())) {
        return None;
    }
    Some(x.clone())
}

/// Bilinear grid sampling at a quarter pixel right of each pixel centre, zeros past the last
/// column: the entry's grid, `gx = (x + 0.75) * 2 / w - 1` and `gy = (y + 0.5) * 2 / h - 1`,
/// under `GridSampleOptions::default()` (bilinear, zeros padding, `align_corners: false`,
/// burn-std `ops.rs:645-650`), whose doc maps -1 and 1 to the outer edges of the corner pixels
/// (`ops.rs:639-641`): pixel `((g + 1) * size - 1) / 2`, here `(y, x + 0.25)`, so each output
/// is `0.75 * x[y][x] + 0.25 * x[y][x + 1]`. A non-finite operand is left open (where a zero
/// weight meets an infinity is the kernel's accident).
fn quarter_pixel_right(x: &Host, _k: usize) -> Option<Host> {
    if x.shape.len() != 4 {
        return None;
    }
    let w = x.shape[3];
    let v: Vec<f64> = x.floats()?.iter().copied().collect::<Option<_>>()?;
    if v.iter().any(|e| !e.is_finite()) {
        return None;
    }
    let out = (0..v.len())
        .map(|i| {
            let right = if i % w + 1 < w { v[i + 1] } else { 0.0 };
            Some(0.75 * v[i] + 0.25 * right)
        })
        .collect();
    Some(Host::float(x.shape.clone(), out))
}

/// `x` (of shape `[.., s]`) times the `s × s` identity quantized by Burn's default scheme, by
/// IEEE products: the operand times what the identity's ones come back as (254/255 of 1: see
/// `quantization::largest_dequantized`) where it is finite, and NaN across a row holding an
/// infinity or a NaN (`inf * 0`).
fn times_identity(x: &Host, _k: usize) -> Option<Host> {
    let v: Vec<f64> = x.floats()?.iter().copied().collect::<Option<_>>()?;
    let s = *x.shape.last()?;
    let one = super::quantization::largest_dequantized(crate::program::Scheme::DEFAULT);
    let out = (0..v.len())
        .map(|i| {
            let (row, j) = (i - i % s, i % s);
            Some(
                (0..s)
                    .map(|k| v[row + k] * if k == j { one } else { 0.0 })
                    .sum(),
            )
        })
        .collect();
    Some(Host::float(x.shape.clone(), out))
}

/// An adaptive average pooling to the operand's own size: each output pools one input.
fn identity(x: &Host, _k: usize) -> Option<Host> {
    Some(x.clone())
}

/// The `reference` column of `program::module_ops!` as a table by name, as the element-wise
/// tables are built: an entry without one does not compile.
macro_rules! module_references {
    ($($name:ident : $rank:literal -> $result:ident, $tol:ident, $un:ident,
        [$x:ident, $d:ident, $c:ident, $k:ident, $p:ident, $s:ident] => $call:expr,
        reference $reference:expr, error $error:expr;)+) => {
        /// Every module entry's reference, by table name.
        pub const MODULE: &[(&str, Module)] = &[$((stringify!($name), $reference)),+];
        /// Every module entry's error model, in table order (`error` column).
        pub const MODULE_ERROR: &[Arithmetic] = &[$($error),+];
    };
}
crate::program::module_ops!(module_references);

const BACKWARD: &str =
    "a pooling or convolution backward function: not written yet (the forward's \
                        adjoint over the ramp it is seeded with)";

/// A module entry applied to `x` with kernel `k`.
pub fn module(reference: Module, x: &Host, k: usize) -> Result<Host, &'static str> {
    match reference {
        Module::Missing(why) => Err(why),
        Module::Loops(f) => f(x, k).ok_or("the operand holds an unknown element"),
        Module::Quantized => {
            let moved = super::host::quantized(x, &super::host::identity_positions(&x.shape))?;
            times_identity(&moved, k).ok_or("the operand holds an unknown element")
        }
    }
}

#[cfg(test)]
mod tests;
