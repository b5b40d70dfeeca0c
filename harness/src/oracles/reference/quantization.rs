//! The values a quantization round trip may give back, element by element: an acceptance
//! interval from the scheme's definition (codes `round(x / scale)`, to an integer or to a
//! minifloat's nearest value, clamped to the value's range, the scale `2 max|x| / (max − min)`
//! stored as an f32), as the WebGPU CTS accepts a result within the interval its inputs'
//! roundings allow.
//!
//! Burn pins down neither how a code's tie rounds nor the order of the scale's arithmetic: the
//! scale is known within its f32 roundings, the quotient within one more, and an element whose
//! quotient lies that close to a half-integer may take either code. Every other element has one
//! code, and its value is that code times the scale, within the scale's and the product's
//! roundings: a round trip judged to a few units rather than to a whole quantization step.

use super::along_dim::{Along, ALONG_DIM};
use super::elementwise::{Positions, Unary, QUANTIZED, QUANTIZED_TRIPS, UNARY};
use super::host::{self, Host};
use crate::program::{Dtype, Grid, Op, Scheme};

/// The unit roundoff of f32, the dtype every scale and product of the round trip is in.
const U32: f64 = f32::EPSILON as f64 / 2.0;

/// Whether the round trip through `scheme` is modeled here: integer or minifloat codes with
/// f32 scales, one per tensor or one per element (f16 scales and two-level scales keep the
/// bound of one quantization step).
pub fn modeled(scheme: Scheme) -> bool {
    let spec = scheme.spec();
    spec.largest_scale == f64::MAX
        && spec.smallest_scale == 0.0
        && scheme
            .burn()
            .block_size()
            .is_none_or(|block| block.as_slice().iter().all(|d| *d == 1))
}

/// How a table entry that quantizes once moves its operand's codes: its `reference` column's
/// layout (for each output position of a shape, the operand position it takes), over the whole
/// tensor or along the step's dim.
enum Layout {
    Whole(Positions),
    AlongDim(fn(&[usize], usize) -> Vec<usize>, usize),
}

impl Layout {
    /// The layout of `op`, where it is a table entry that moves a quantized tensor's codes and
    /// dequantizes them once: not a module entry (a matmul of quantized operands) nor an op Burn
    /// runs on the dequantized values and quantizes again (`round_trips` 2).
    fn of(op: &Op) -> Option<Layout> {
        match op {
            Op::Quantized { op, .. } if QUANTIZED_TRIPS[op.index()] == 1 => {
                Some(Layout::Whole(QUANTIZED[op.index()].1))
            }
            Op::Unary { op, .. } => match UNARY[op.index()].1 {
                Unary::Quantized(layout) => Some(Layout::Whole(layout)),
                _ => None,
            },
            Op::AlongDim { op, dim, .. } => match ALONG_DIM[op.index()].1 {
                Along::Quantized(layout) => Some(Layout::AlongDim(layout, usize::from(*dim))),
                _ => None,
            },
            _ => None,
        }
    }

    /// Its positions over `shape`.
    fn positions(&self, shape: &[usize]) -> Vec<usize> {
        match self {
            Layout::Whole(layout) => layout(shape),
            Layout::AlongDim(layout, dim) => layout(shape, *dim),
        }
    }
}

/// The scheme and the layout (for each output position of `shape`, the operand position it
/// takes) of `op`'s round trip, where it is [`modeled`] and quantizes once (see `Layout::of`).
pub fn exact(op: &Op, shape: &[usize]) -> Option<(Scheme, Vec<usize>)> {
    let scheme = exact_scheme(op)?;
    Layout::of(op).map(|layout| (scheme, layout.positions(shape)))
}

/// The scheme of `op`'s round trip where it is [`exact`].
pub fn exact_scheme(op: &Op) -> Option<Scheme> {
    Layout::of(op)?;
    super::quantized_scheme(op).filter(|s| modeled(*s))
}

/// How far each element of `op`'s round trip of `x` (of dtype `dtype`) may be from the middle
/// [`dequantized`] gives (the interval's with f32's roundings alone) once rounded to the
/// result's dtype (Burn's value and the reference's middle each round once more; `floor`: what
/// a rounding near zero adds), where it is [`exact`].
pub fn bounds(op: &Op, x: &Host, dtype: Dtype, floor: f64) -> Option<Vec<f64>> {
    let (scheme, layout) = exact(op, &x.shape)?;
    // The result is in the operand's dtype or the device's default float, F32: an f32 product
    // (in the interval) that a half dtype rounds once more, and the reference's middle rounded
    // to the result's dtype.
    let u = if dtype.epsilon() > f64::from(f32::EPSILON) {
        dtype.epsilon()
    } else {
        U32
    };
    let intervals = round_trip(x, &layout, scheme, dtype)?;
    // The middles are f32's intervals' (those of an F32 operand itself).
    let f32_intervals;
    let middles = if dtype == Dtype::F32 {
        &intervals
    } else {
        f32_intervals = round_trip(x, &layout, scheme, Dtype::F32)?;
        &f32_intervals
    };
    // An element without an interval keeps the step's bound about its own value, but where the
    // scale is below what an f32 scale holds (an F64 tensor of values below 1e-36, which Flex
    // reads as f32 zeros): Burn pins nothing down there, as past the largest scale.
    let step = host::quantization_step(x, scheme)
        .filter(|step| *step >= f64::from(f32::MIN_POSITIVE))
        .unwrap_or(f64::INFINITY);
    Some(
        (intervals.iter().zip(middles))
            .map(|pair| match pair {
                (Some((lo, hi)), Some((m_lo, m_hi))) => {
                    let middle = (m_lo + m_hi) / 2.0;
                    (middle - lo).max(hi - middle) + u * lo.abs().max(hi.abs()) + 2.0 * floor
                }
                _ => step,
            })
            .collect(),
    )
}

/// `op`'s round trip of `x` where it is [`exact`]: the middle of each element's interval
/// (`None` where it is not, and the operand moved by the layout is judged within a step).
pub fn dequantized(op: &Op, x: &Host) -> Option<Result<Host, &'static str>> {
    let (scheme, layout) = exact(op, &x.shape)?;
    let Some(intervals) = round_trip(x, &layout, scheme, Dtype::F32) else {
        return Some(host::quantized(x, &layout));
    };
    // An element without an interval is judged as before, within a step of its value.
    let moved = host::quantized(x, &layout).ok()?;
    let moved = moved.floats()?;
    Some(Ok(Host::float(
        x.shape.clone(),
        (intervals.iter().zip(moved))
            .map(|(interval, value)| match interval {
                Some((lo, hi)) => Some((lo + hi) / 2.0),
                None => *value,
            })
            .collect(),
    )))
}

/// The interval each element of a round trip of `x` (of float dtype `dtype`) through `scheme`
/// may come back in, moved by `layout` (for each output position, the input position it takes),
/// before the rounding to the result's dtype: `None` where the scheme is not [`modeled`], an
/// element is unknown or not finite (one scale for the whole tensor), or twice the largest
/// magnitude is past the dtype; an element is `None` where its scale may round to zero.
///
/// The scale is allowed the rounding of `dtype` as well as f32's: Dispatch quantizes through
/// burn-backend's default `quantize_dynamic`, which computes it with float ops in the tensor's
/// own dtype (the stored `quantizing-an-f16-tensor-computes-its-scale-in-f16`, whose gross
/// cases, a scale that overflows the dtype or rounds to zero, are left to the step's bound), so
/// a half dtype's round trip is held only as tightly as its scale.
pub fn round_trip(
    x: &Host,
    layout: &[usize],
    scheme: Scheme,
    dtype: Dtype,
) -> Option<Vec<Option<(f64, f64)>>> {
    if !modeled(scheme) {
        return None;
    }
    let grid = scheme.spec().grid;
    let values: Vec<f64> = x.floats()?.iter().copied().collect::<Option<_>>()?;
    let whole = values.iter().fold(0f64, |m, v| m.max(v.abs()));
    if values.iter().any(|v| !v.is_finite()) || 2.0 * whole > dtype.largest() {
        return None;
    }
    let span = grid.span();
    // Dispatch computes the scale in the tensor's dtype (the stored
    // quantizing-an-f16-tensor-computes-its-scale-in-f16): a range past the dtype, e5m2's 114688
    // over F16, divides to a zero scale, which no interval holds.
    if span > dtype.largest() {
        return None;
    }
    let per_element = scheme.burn().block_size().is_some();
    // The scale's roundings: its division by the span, in the coarser of the dtype and f32, and
    // its conversion to an f32 scale (exact but from F64); below the normal range of either, a
    // rounding is to a spacing, not relative.
    let scale_error = (dtype.epsilon() / 2.0).max(U32) + U32;
    let normal = dtype.smallest_normal().max(f64::from(f32::MIN_POSITIVE));
    let spacing = dtype.tiniest().max(f64::from(f32::from_bits(1)));
    let interval = |v: f64| {
        let alpha = if per_element { v.abs() } else { whole };
        let scale = 2.0 * alpha / span;
        if scale == 0.0 {
            // Every element is 0 (Flex stores the smallest normal f32 for the scale).
            return Some((0.0, 0.0));
        }
        let error = scale * scale_error + if scale < normal { spacing } else { 0.0 };
        let (scale_lo, scale_hi) = (scale - error, scale + error);
        // A scale that may round to zero is replaced by Flex (the stored bug's values), and one
        // past f32 is no f32: no interval.
        if scale_lo <= 0.0 || scale_hi > f64::from(f32::MAX) {
            return None;
        }
        // The quotient over the scale's interval, within the element's and the division's
        // roundings.
        let (a, b) = (v / scale_hi, v / scale_lo);
        let (t_lo, t_hi) = (a.min(b), a.max(b));
        let (code_lo, code_hi) = codes(
            grid,
            t_lo - t_lo.abs() * 2.0 * U32,
            t_hi + t_hi.abs() * 2.0 * U32,
        );
        // Each code times the scale, rounded once more.
        let ends = [
            code_lo * scale_lo,
            code_lo * scale_hi,
            code_hi * scale_lo,
            code_hi * scale_hi,
        ];
        let lo = ends.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ends.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some((lo - lo.abs() * U32, hi + hi.abs() * U32))
    };
    Some(
        (layout.iter())
            .map(|&i| values.get(i).and_then(|v| interval(*v)))
            .collect(),
    )
}

/// What `scheme` gives back for the largest magnitude of a tensor whose largest magnitude is 1
/// (an identity's ones): the code the quotient `1 / scale` rounds and clamps to, times the
/// scale, in f32 as Flex computes it. Q8F's full range maps the largest magnitude to 127.5,
/// which clamps to 127: 254/255 of it (burn-flex ops/qtensor.rs:64-122).
pub fn largest_dequantized(scheme: Scheme) -> f64 {
    let grid = scheme.spec().grid;
    let span = grid.span();
    let scale = 2.0f32 / span as f32;
    let t = f64::from(1.0 / scale);
    let (lo, hi) = codes(grid, t, t);
    f64::from(((lo + hi) / 2.0) as f32 * scale)
}

/// The lowest and the highest code `grid` rounds a quotient in `[lo, hi]` to (clamped to its
/// range first, as Flex clamps; a tie either way, Burn pinning no tie rule down).
fn codes(grid: Grid, lo: f64, hi: f64) -> (f64, f64) {
    match grid {
        Grid::Int { span } => {
            // An odd span is a full range (-2^(b-1)..=2^(b-1) - 1), an even one symmetric.
            let (low, high) = if span % 2.0 == 1.0 {
                (-(span + 1.0) / 2.0, (span - 1.0) / 2.0)
            } else {
                (-span / 2.0, span / 2.0)
            };
            (
                (lo - 0.5).ceil().clamp(low, high),
                (hi + 0.5).floor().clamp(low, high),
            )
        }
        Grid::Float {
            mantissa,
            max,
            smallest_normal,
        } => {
            let nearest = |t: f64, up: bool| {
                let a = t.abs().min(max);
                // The grid's spacing at a: a binade's 2^-mantissa, the subnormals' below.
                let spacing = smallest_normal
                    .max(f64::from_bits(a.to_bits() & 0x7ff0_0000_0000_0000))
                    * (-f64::from(mantissa)).exp2();
                let below = (a / spacing).floor() * spacing;
                let above = if below == a { a } else { below + spacing };
                // The magnitude rounds up where the value does and t is positive, or down and
                // t is negative; at a tie, either way.
                let toward_above = (up == (t >= 0.0)) && above - a <= a - below;
                let magnitude = if toward_above || above - a < a - below {
                    above
                } else {
                    below
                };
                magnitude.min(max).copysign(t)
            };
            (nearest(lo, false), nearest(hi, true))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(v: &[f64]) -> Host {
        Host::float(vec![v.len()], v.iter().map(|x| Some(*x)).collect())
    }

    #[test]
    fn an_element_far_from_a_tie_has_one_code_and_a_tie_has_two() {
        // Default scheme (Q8F, span 255): scale 2 * 127.5 / 255 = 1, so codes are x rounded.
        let x = host(&[127.5, 3.2, 2.5, -127.5]);
        let got: Vec<(f64, f64)> = round_trip(&x, &[0, 1, 2, 3], Scheme::DEFAULT, Dtype::F32)
            .unwrap()
            .into_iter()
            .flatten()
            .collect();
        // 127.5 clamps to 127; 3.2 is 3; 2.5 is 2 or 3; -128 is the range's low end.
        assert!(got[0].0 >= 126.99 && got[0].1 <= 127.01, "{:?}", got[0]);
        assert!(got[1].0 >= 2.99 && got[1].1 <= 3.01, "{:?}", got[1]);
        assert!(got[2].0 <= 2.0 && got[2].1 >= 3.0, "{:?}", got[2]);
        assert!(got[3].0 <= -128.0 && got[3].1 >= -127.0, "{:?}", got[3]);
    }

    #[test]
    fn the_default_schemes_largest_magnitude_comes_back_254_255ths_of_itself() {
        // 1 / (2/255) is 127.5 steps, past Q8F's largest code, 127 (Burn gives 0.9960785).
        let one = largest_dequantized(Scheme::DEFAULT);
        assert_eq!(one, f64::from(127f32 * (2f32 / 255f32)));
        assert!((one - 254.0 / 255.0).abs() < 1e-7, "{one}");
    }

    #[test]
    fn a_minifloat_quotient_takes_its_nearest_code_and_a_tie_either() {
        let e2m1 = Scheme::named("e2m1_packed_native").unwrap().spec().grid;
        // e2m1's values: 0, 0.5, 1, 1.5, 2, 3, 4, 6.
        assert_eq!(codes(e2m1, 2.4, 2.4), (2.0, 2.0));
        assert_eq!(codes(e2m1, 2.5, 2.5), (2.0, 3.0));
        assert_eq!(codes(e2m1, -5.0, -5.0), (-6.0, -4.0));
        assert_eq!(codes(e2m1, 0.2, 7.0), (0.0, 6.0));
        let e4m3 = Scheme::named("e4m3_native").unwrap().spec().grid;
        // Below 2^-6 the spacing is 2^-9: 0.003 is 1.536 spacings, nearest 2; in [256, 512) it is
        // 32.
        assert_eq!(codes(e4m3, 0.003, 0.003), (0.00390625, 0.00390625));
        assert_eq!(codes(e4m3, 300.0, 300.0), (288.0, 288.0));
    }
}
