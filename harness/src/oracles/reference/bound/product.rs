//! Error bounds of products and of a whole-operand reduction subtracted back: Higham's bound
//! for a product of `n` factors in any order, `|fl(Π xᵢ) − Π xᵢ| ≤ γₙ |Π xᵢ|` (§3.1), and the
//! sum's `γₙ Σ|xᵢ|` carried through one subtraction.
//!
//! A product's relative bound holds only while no partial product leaves the normal range:
//! one that underflows loses its relative accuracy (`1e-30 · 1e-30 · 1e30 · 1e30` is 1 in one
//! order and 0 in another) and one that overflows is infinite. Burn pins no order down, so the
//! bound is given where every order is safe: every partial product lies between the product
//! of the factors below 1 in magnitude and that of the factors above it, so both within the
//! range (with a factor of two for the roundings on the way) make every order safe. Elsewhere
//! the element is open.

use super::super::host::{lanes, Host};
use super::{gamma, Product};
use crate::program::{Dtype, Op};

/// The error bound of the product of `factors` over `dtype` (`u` its unit roundoff, `floor`
/// what a rounding near zero may add), the reference's own f64 rounding of each factor's
/// product included; 0 where it is exact or a NaN (which every order gives); infinite where
/// some order may leave the range, or a factor is infinite (an order that underflows first
/// meets `0 · ∞`).
fn product_bound(factors: &[f64], dtype: Dtype, floor: f64) -> f64 {
    if factors.iter().any(|x| x.is_nan()) {
        return 0.0;
    }
    if factors.iter().any(|x| x.is_infinite()) {
        return f64::INFINITY;
    }
    let (mut small, mut big, mut zero) = (1.0f64, 1.0f64, false);
    for x in factors.iter().map(|x| x.abs()) {
        if x == 0.0 {
            zero = true;
        } else if x < 1.0 {
            small *= x;
        } else {
            big *= x;
        }
    }
    if 2.0 * big > dtype.largest() {
        return f64::INFINITY;
    }
    // A zero factor: ±0 in every order that does not overflow (the sign is the factors').
    if zero {
        return 0.0;
    }
    if small < 2.0 * dtype.smallest_normal() {
        return f64::INFINITY;
    }
    let n = factors.len();
    let u = dtype.epsilon() / 2.0;
    // One rounding per product, one more where a half dtype is computed in f32 and stored; the
    // reference's f64 product errs by its own γₙ.
    let p = factors.iter().product::<f64>().abs();
    (gamma(n + 1, u) + gamma(n, f64::EPSILON / 2.0) + u) * p + floor
}

/// The error bound of `x` to the integer power `n` over `dtype` (see [`Product::Power`]): its
/// roundings (a multiply per factor past the first; the reciprocal, the square and the odd
/// division of a negative power; one more where a half dtype is computed in f32 and stored)
/// relative to the result, where every power of `|x|` between `x^-|n|` and `x^|n|` is normal,
/// so that no intermediate under- or overflows; exact for a zero, infinite or NaN `x`.
fn power_bound(x: f64, n: i32, dtype: Dtype, floor: f64) -> f64 {
    if x == 0.0 || !x.is_finite() || (0..=1).contains(&n) {
        return 0.0;
    }
    let m = n.unsigned_abs();
    let (lo, hi) = (2.0 * dtype.smallest_normal(), dtype.largest() / 2.0);
    let normal = |p: f64| (lo..=hi).contains(&p);
    let a = x.abs();
    if !(normal(a.powi(m as i32)) && normal(a.powi(-(m as i32))) && normal(a)) {
        return f64::INFINITY;
    }
    let roundings = if n > 0 {
        m as usize - 1
    } else {
        m as usize + 2
    } + 1;
    let u = dtype.epsilon() / 2.0;
    let r = x.powi(n).abs();
    (gamma(roundings, u) + gamma(m as usize, f64::EPSILON / 2.0) + u) * r + floor
}

/// The bound of each element of `op`'s result under [`Product`] `product`, over operand `x`
/// in `dtype`: `expected` is the reference's result (its shape and order of elements).
pub fn bounds(
    product: Product,
    op: &Op,
    x: &Host,
    expected: &Host,
    (dtype, floor): (Dtype, f64),
) -> Option<Vec<f64>> {
    let v = x.floats()?;
    let want = expected.floats()?;
    let lane_of = |dim: u8| lanes(&x.shape, usize::from(dim));
    let known = |lane: &[usize]| -> Option<Vec<f64>> { lane.iter().map(|&i| v[i]).collect() };
    let mut out = vec![f64::INFINITY; want.len()];
    match (product, op) {
        (Product::Lane, Op::AlongDim { dim, .. }) => {
            // The reduced result holds one element per lane, in the order of the lanes' first
            // elements.
            for (o, lane) in out.iter_mut().zip(lane_of(*dim)) {
                if let Some(f) = known(&lane) {
                    *o = product_bound(&f, dtype, floor);
                }
            }
        }
        (Product::Running, Op::AlongDim { dim, .. }) => {
            for lane in lane_of(*dim) {
                let Some(f) = known(&lane) else { continue };
                for (k, &i) in lane.iter().enumerate() {
                    out[i] = product_bound(&f[..=k], dtype, floor);
                }
            }
        }
        (Product::Power, Op::Scalar { value, .. }) => {
            for (o, x) in out.iter_mut().zip(v) {
                if let Some(x) = x {
                    *o = power_bound(*x, i32::from(*value), dtype, floor);
                }
            }
        }
        (Product::MinusWhole, _) => {
            let f: Vec<f64> = v.iter().copied().collect::<Option<_>>()?;
            let p = product_bound(&f, dtype, floor);
            subtracted(&mut out, want, p, dtype, floor);
        }
        _ => return None,
    }
    Some(out)
}

/// The bound of each element of `x − Σx` (`mean`: `x − mean(x)`) over the whole operand `x` in
/// `dtype`: the sum's `γₙ Σ|x|` (the mean's one rounding more, over `n`), then the
/// subtraction's; open where a partial sum may leave the range.
pub fn minus_sum(
    mean: bool,
    x: &Host,
    expected: &Host,
    (dtype, floor): (Dtype, f64),
) -> Option<Vec<f64>> {
    let v: Vec<f64> = x.floats()?.iter().copied().collect::<Option<_>>()?;
    let want = expected.floats()?;
    let n = v.len().max(1);
    let total: f64 = v.iter().map(|x| x.abs()).sum();
    let u = dtype.epsilon() / 2.0;
    // A NaN or infinite element fails the comparison too: open, as the reference leaves it.
    let fits = 2.0 * total <= dtype.largest();
    let reduced = if mean && fits {
        gamma(n + 1, u) * total / n as f64 + (n + 1) as f64 * floor
    } else if fits {
        gamma(n, u) * total + n as f64 * floor
    } else {
        f64::INFINITY
    };
    let mut out = vec![f64::INFINITY; want.len()];
    subtracted(&mut out, want, reduced, dtype, floor);
    Some(out)
}

/// Into `out`, the bound of each element of `x − r` (`want`: the reference's results) where the
/// reduction `r` errs by `reduced`: the subtraction's rounding and the reference's own.
fn subtracted(out: &mut [f64], want: &[Option<f64>], reduced: f64, dtype: Dtype, floor: f64) {
    let u = dtype.epsilon() / 2.0;
    for (o, r) in out.iter_mut().zip(want) {
        *o = match r {
            Some(r) if r.is_finite() && reduced.is_finite() => {
                reduced + u * (r.abs() + reduced) + u * r.abs() + 2.0 * floor
            }
            // A NaN or an infinity every order gives must match as it is.
            Some(r) if !r.is_finite() && reduced == 0.0 => 0.0,
            _ => f64::INFINITY,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_product_whose_partial_products_may_underflow_in_some_order_has_no_bound() {
        // 1e-30 · 1e-30 underflows f32 before 1e30 · 1e30 brings it back.
        let f = [1e-30, 1e-30, 1e30, 1e30];
        assert_eq!(product_bound(&f, Dtype::F32, 0.0), f64::INFINITY);
        // And one whose factors above 1 may overflow first.
        assert_eq!(
            product_bound(&[1e30, 1e30, 1e-30], Dtype::F32, 0.0),
            f64::INFINITY
        );
    }

    #[test]
    fn a_product_in_range_is_bounded_relative_to_itself_and_a_zero_or_nan_exactly() {
        let u = Dtype::F32.epsilon() / 2.0;
        let b = product_bound(&[4.0, 5.0, 6.0, 7.0], Dtype::F32, 0.0);
        assert!(b > 4.0 * u * 840.0 && b < 8.0 * u * 840.0, "{b}");
        assert_eq!(product_bound(&[0.0, 1e-30, 1e-30], Dtype::F32, 0.0), 0.0);
        assert_eq!(product_bound(&[f64::NAN, 1e30, 1e30], Dtype::F32, 0.0), 0.0);
        // An infinite factor meets 0 · ∞ in an order whose small factors underflow first.
        assert_eq!(
            product_bound(&[f64::INFINITY, 0.5], Dtype::F32, 0.0),
            f64::INFINITY
        );
    }

    #[test]
    fn a_power_is_bounded_where_every_power_of_its_base_up_to_its_exponent_is_normal() {
        let u = Dtype::F32.epsilon() / 2.0;
        let b = power_bound(3.0, 5, Dtype::F32, 0.0);
        assert!(b >= 5.0 * u * 243.0 && b < 8.0 * u * 243.0, "{b}");
        // 1e-5^8 is below f32's normal range on the way to 1e-5^-8's inverse.
        assert_eq!(power_bound(1e-5, -8, Dtype::F32, 0.0), f64::INFINITY);
        assert_eq!(power_bound(1e-5, 8, Dtype::F32, 0.0), f64::INFINITY);
        assert_eq!(power_bound(0.0, -3, Dtype::F32, 0.0), 0.0);
        assert_eq!(power_bound(7.0, 1, Dtype::F32, 0.0), 0.0);
    }
}
