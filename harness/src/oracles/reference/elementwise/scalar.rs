//! The scalar functions the element-wise definitions are written in, in f64: erf, the
//! logistic family, selu's constants, the whole-tensor extremes.

use crate::oracles::reference::host::{prod_fits, sum_fits, Data, Host};

pub(in crate::oracles::reference) fn erf(x: f64) -> f64 {
    // Abramowitz-Stegun would be 1e-7; this series and continued fraction reach f64 precision,
    // far below any float tolerance family.
    if x.is_nan() {
        return f64::NAN;
    }
    let a = x.abs();
    let value = if a < 2.5 {
        // Maclaurin series: 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1)).
        let (mut term, mut sum) = (a, a);
        // At most 80 terms: at 2.5 the terms fall below 1e-17 of the sum after about 60.
        for n in 1..80 {
            let n = f64::from(n);
            term *= -a * a / n;
            let add = term / (2.0 * n + 1.0);
            sum += add;
            if add.abs() <= 1e-17 * sum.abs() {
                break;
            }
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else if a < 6.0 {
        // erfc by its continued fraction (Lentz), for the tail where the series cancels.
        let mut f = a;
        let (mut c, mut d) = (a, 0.0);
        for k in 1..200 {
            let k = f64::from(k) / 2.0;
            d = a + k * d;
            d = 1.0 / d;
            c = a + k / c;
            let delta = c * d;
            f *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        1.0 - (-a * a).exp() / (f * std::f64::consts::PI.sqrt())
    } else {
        1.0
    };
    value.copysign(x)
}

pub(super) fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// `log(1 + e^x)` without overflow.
pub(super) fn softplus(x: f64) -> f64 {
    if x > 30.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

pub(super) fn clamp_f(x: f64, lo: f64, hi: f64) -> f64 {
    x.max(lo).min(hi)
}

/// SELU's constants (Klambauer et al., as Burn's `selu` doc comment gives them).
pub(super) const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
pub(super) const SELU_SCALE: f64 = 1.050_700_987_355_480_5;

/// `x - reduce(x)` for a whole-tensor reduction, int or float; the float reduction in f64.
pub(super) fn minus_whole(
    x: &Host,
    reduce: fn(&[f64]) -> f64,
    int: fn(&[i128]) -> Option<i128>,
) -> Option<Host> {
    match &x.data {
        Data::Float(v) => {
            let known: Vec<f64> = v.iter().copied().collect::<Option<_>>()?;
            // An accumulation that may overflow f32 on its way: not pinned down.
            if !(sum_fits(&known) && prod_fits(&known)) {
                return None;
            }
            let r = reduce(&known);
            Some(Host::float(
                x.shape.clone(),
                v.iter().map(|e| e.map(|e| e - r)).collect(),
            ))
        }
        Data::Int(v) => {
            let known: Option<Vec<i128>> = v.iter().copied().collect();
            // A reduction outside the dtype: what Burn's overflow leaves is not pinned down.
            let r = int(&known?).filter(|r| x.range.is_none_or(|(lo, hi)| *r >= lo && *r <= hi));
            Some(Host::int(
                x.shape.clone(),
                v.iter().map(|e| Some((*e)? - r?)).collect(),
            ))
        }
        Data::Bool(_) => None,
    }
}

pub(super) fn max_of(v: &[f64]) -> f64 {
    if v.iter().any(|x| x.is_nan()) {
        f64::NAN
    } else {
        v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    }
}

pub(super) fn min_of(v: &[f64]) -> f64 {
    if v.iter().any(|x| x.is_nan()) {
        f64::NAN
    } else {
        v.iter().copied().fold(f64::INFINITY, f64::min)
    }
}
