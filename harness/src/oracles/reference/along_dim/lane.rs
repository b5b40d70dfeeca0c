//! The functions one lane of an along-dim op is defined by: extremes, arg extremes, sorts,
//! moments, softmax.

use crate::oracles::reference::host::{sum_fits, F32_MAX};

pub(super) fn no_nan(v: &[f64]) -> Option<&[f64]> {
    (!v.iter().any(|x| x.is_nan())).then_some(v)
}

pub(super) fn max_lane(v: &[f64]) -> Option<f64> {
    no_nan(v).map(|v| v.iter().copied().fold(f64::NEG_INFINITY, f64::max))
}

pub(super) fn min_lane(v: &[f64]) -> Option<f64> {
    no_nan(v).map(|v| v.iter().copied().fold(f64::INFINITY, f64::min))
}

/// The index of the lane's single extremum by `better`; `None` at a tie or a NaN.
pub(super) fn arg_by(v: &[f64], better: fn(f64, f64) -> bool) -> Option<usize> {
    let v = no_nan(v)?;
    let mut best = 0;
    for i in 1..v.len() {
        if better(v[i], v[best]) {
            best = i;
        }
    }
    (v.iter().filter(|x| **x == v[best]).count() == 1).then_some(best)
}

/// The sorting permutation (`descending` or not), each position known where its value is
/// unique in the lane (equal values may come in any order: Burn documents no stability).
pub(super) fn arg_sort(v: &[f64], descending: bool) -> Vec<Option<usize>> {
    if v.iter().any(|x| x.is_nan()) {
        return vec![None; v.len()];
    }
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| {
        let o = v[a].total_cmp(&v[b]);
        if descending {
            o.reverse()
        } else {
            o
        }
    });
    order
        .into_iter()
        .map(|i| (v.iter().filter(|x| **x == v[i]).count() == 1).then_some(i))
        .collect()
}

pub(super) fn sorted_f(v: &[f64], descending: bool) -> Vec<Option<f64>> {
    if v.iter().any(|x| x.is_nan()) {
        return vec![None; v.len()];
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    if descending {
        s.reverse();
    }
    // -0 and 0 sort apart in a total order but are equal: the comparison treats them alike.
    s.into_iter().map(Some).collect()
}

pub(super) fn sorted_i(v: &[i128], descending: bool) -> Vec<Option<i128>> {
    let mut s = v.to_vec();
    s.sort_unstable();
    if descending {
        s.reverse();
    }
    s.into_iter().map(Some).collect()
}

pub(super) fn mean_f(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

pub(super) fn var_with(v: &[f64], correction: f64) -> f64 {
    let m = mean_f(v);
    v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() as f64 - correction)
}

/// Whether a variance's squares and their sum stay within f32's range.
pub(super) fn var_fits(v: &[f64]) -> bool {
    let m = v.iter().map(|x| x.abs()).fold(0.0, f64::max);
    sum_fits(v) && 4.0 * m * m * v.len() as f64 <= F32_MAX
}

pub(super) fn softmax_lane(v: &[f64], sign: f64, quiet: bool) -> Vec<Option<f64>> {
    let x: Vec<f64> = v.iter().map(|e| sign * e).collect();
    let m = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return vec![None; v.len()];
    }
    // quiet_softmax's 1 in the denominator is exp(0), so shifting by m scales it by exp(-m).
    let sum: f64 =
        x.iter().map(|e| (e - m).exp()).sum::<f64>() + if quiet { (-m).exp() } else { 0.0 };
    x.iter().map(|e| Some((e - m).exp() / sum)).collect()
}
