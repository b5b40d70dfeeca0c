//! The references of the along-a-dim table: reductions, scans, sorts, softmaxes and the layout
//! and indexing entries, each over the lanes of the operand along its dim.

mod lane;

use lane::{
    arg_by, arg_sort, max_lane, mean_f, min_lane, softmax_lane, sorted_f, sorted_i, var_fits,
    var_with,
};

use super::host::{floor_mod_i, int_div};
use super::host::{int_product, lanes, prod_fits, ravel, strides, sum_fits, unravel, Data, Host};

/// How the reference computes one along-dim entry over lane values (floats in f64, ints exact);
/// a lane holding an unknown element gives unknown results.
#[derive(Clone, Copy)]
pub enum Along {
    /// A reduction of each lane to one value (the dim becomes 1); `None` where not pinned down.
    Reduce(fn(&[f64]) -> Option<f64>, fn(&[i128]) -> Option<i128>),
    /// A scan: a lane in, a lane out.
    Scan(
        fn(&[f64]) -> Vec<Option<f64>>,
        fn(&[i128]) -> Vec<Option<i128>>,
    ),
    /// An index into each lane (an int, the dim becomes 1); `None` at a tie or a NaN.
    Arg(fn(&[f64]) -> Option<usize>),
    /// A permutation of each lane's indices (an int lane out); `None` where ties leave it open.
    ArgScan(fn(&[f64]) -> Vec<Option<usize>>),
    /// A bool reduction of each lane (the dim becomes 1): any kind, a float's NaN lane open.
    Test(fn(&[bool]) -> bool),
    /// The bool test over the whole tensor, broadcast back over its shape.
    TestWhole(fn(&[bool]) -> bool),
    /// A layout move, any kind: for each output position, the input position it takes.
    Layout(fn(&[usize], usize) -> Vec<usize>),
    /// An element-wise map, float (`None` open) and int; bools as given.
    Map(
        fn(f64) -> Option<f64>,
        fn(i128) -> Option<i128>,
        fn(bool) -> bool,
    ),
    /// A function of the operand and the dim as a whole.
    Whole(fn(&Host, usize) -> Option<Host>),
    /// A quantized round trip through a layout move over the dim, judged within one
    /// quantization step (see [`super::host::quantized`]).
    Quantized(fn(&[usize], usize) -> Vec<usize>),
    /// No reference, and why.
    Missing(&'static str),
}

/// Positions that reverse each lane along `d`.
pub(super) fn flip_positions(shape: &[usize], d: usize) -> Vec<usize> {
    let n: usize = shape.iter().product();
    (0..n)
        .map(|i| {
            let mut index = unravel(i, shape);
            index[d] = shape[d] - 1 - index[d];
            ravel(&index, shape)
        })
        .collect()
}

/// Each lane's first element, repeated along `d`.
pub(super) fn first_positions(shape: &[usize], d: usize) -> Vec<usize> {
    let n: usize = shape.iter().product();
    (0..n)
        .map(|i| {
            let mut index = unravel(i, shape);
            index[d] = 0;
            ravel(&index, shape)
        })
        .collect()
}

/// The gather of `gather_rotated`: the index tensor is `(flat position + 1) mod shape[d]`, and
/// each output takes the lane element it names.
fn gather_rotated_positions(shape: &[usize], d: usize) -> Vec<usize> {
    let n: usize = shape.iter().product();
    (0..n)
        .map(|i| {
            let mut index = unravel(i, shape);
            index[d] = (i + 1) % shape[d];
            ravel(&index, shape)
        })
        .collect()
}

/// `scatter_assign_rotated`: element `c` goes to `(c + 1) mod n` along `d`, so each output
/// takes the lane element before it.
fn roll_positions(shape: &[usize], d: usize) -> Vec<usize> {
    let n: usize = shape.iter().product();
    (0..n)
        .map(|i| {
            let mut index = unravel(i, shape);
            index[d] = (index[d] + shape[d] - 1) % shape[d];
            ravel(&index, shape)
        })
        .collect()
}

/// `slice_assign_half`: the first half of dim 0 (rounded up) from the operand reversed along it.
fn slice_assign_half_positions(shape: &[usize], _d: usize) -> Vec<usize> {
    let n: usize = shape.iter().product();
    let half = shape[0].div_ceil(2);
    (0..n)
        .map(|i| {
            let mut index = unravel(i, shape);
            if index[0] < half {
                index[0] = shape[0] - 1 - index[0];
            }
            ravel(&index, shape)
        })
        .collect()
}

/// `x + x reversed along d` (select_add: each index added once, reversed).
fn plus_flipped(x: &Host, d: usize) -> Option<Host> {
    let at = flip_positions(&x.shape, d);
    match &x.data {
        Data::Float(v) => Some(Host::float(
            x.shape.clone(),
            at.iter()
                .enumerate()
                .map(|(i, &j)| Some(v[i]? + v[j]?))
                .collect(),
        )),
        Data::Int(v) => Some(Host::int(
            x.shape.clone(),
            at.iter()
                .enumerate()
                .map(|(i, &j)| Some(v[i]? + v[j]?))
                .collect(),
        )),
        Data::Bool(_) => None,
    }
}

/// `scatter_add` of the operand into itself through the rotated index of `gather_rotated`.
fn scatter_add_rotated(x: &Host, d: usize) -> Option<Host> {
    let targets = gather_rotated_positions(&x.shape, d);
    match &x.data {
        Data::Float(v) => {
            let mut out: Vec<Option<f64>> = v.clone();
            for (i, &t) in targets.iter().enumerate() {
                out[t] = Some(out[t]? + v[i]?);
            }
            Some(Host::float(x.shape.clone(), out))
        }
        Data::Int(v) => {
            let mut out: Vec<Option<i128>> = v.clone();
            for (i, &t) in targets.iter().enumerate() {
                out[t] = Some(out[t]? + v[i]?);
            }
            Some(Host::int(x.shape.clone(), out))
        }
        Data::Bool(_) => None,
    }
}

/// `prelu` with the slope `(c + 1) / 8` of channel `c` (dim 1; one channel below rank 2).
fn prelu(x: &Host, _d: usize) -> Option<Host> {
    let v = x.floats()?;
    let channel_stride = if x.shape.len() > 1 {
        strides(&x.shape)[1]
    } else {
        usize::MAX
    };
    let channels = x.shape.get(1).copied().unwrap_or(1);
    Some(Host::float(
        x.shape.clone(),
        v.iter()
            .enumerate()
            .map(|(i, e)| {
                let e = (*e)?;
                let c = if channels > 1 {
                    (i / channel_stride) % channels
                } else {
                    0
                };
                let slope = (c as f64 + 1.0) / 8.0;
                (!e.is_nan()).then_some(if e >= 0.0 { e } else { slope * e })
            })
            .collect(),
    ))
}

/// A running extreme of a float lane from `start` (`pick`: max or min): from a NaN on, the
/// running value is the implementation's accident, so open.
fn running_f(v: &[f64], start: f64, pick: fn(f64, f64) -> f64) -> Vec<Option<f64>> {
    v.iter()
        .scan(start, |s, x| {
            if x.is_nan() || s.is_nan() {
                *s = f64::NAN;
                return Some(None);
            }
            *s = pick(*s, *x);
            Some(Some(*s))
        })
        .collect()
}

/// A running extreme of an int lane from `start`.
fn running_i(v: &[i128], start: i128, pick: fn(i128, i128) -> i128) -> Vec<Option<i128>> {
    v.iter()
        .scan(start, |s, x| {
            *s = pick(*s, *x);
            Some(Some(*s))
        })
        .collect()
}

/// Every along-dim entry's reference, by table name.
pub const ALONG_DIM: &[(&str, Along)] = &[
    (
        "mean_dim",
        Along::Reduce(
            |v| sum_fits(v).then(|| mean_f(v)),
            |v| int_div(v.iter().sum(), v.len() as i128),
        ),
    ),
    (
        "prod_dim",
        Along::Reduce(|v| prod_fits(v).then(|| v.iter().product()), int_product),
    ),
    (
        "max_dim",
        Along::Reduce(max_lane, |v| v.iter().copied().max()),
    ),
    (
        "min_dim",
        Along::Reduce(min_lane, |v| v.iter().copied().min()),
    ),
    (
        "max_abs_dim",
        Along::Reduce(
            |v| max_lane(&v.iter().map(|x| x.abs()).collect::<Vec<_>>()),
            |v| v.iter().map(|x| x.abs()).max(),
        ),
    ),
    ("argmin", Along::Arg(|v| arg_by(v, |a, b| a < b))),
    (
        "cumsum",
        Along::Scan(
            |v| {
                let fits = sum_fits(v);
                v.iter()
                    .scan(0.0, |s, x| {
                        *s += x;
                        Some(fits.then_some(*s))
                    })
                    .collect()
            },
            |v| {
                v.iter()
                    .scan(0, |s, x| {
                        *s += x;
                        Some(Some(*s))
                    })
                    .collect()
            },
        ),
    ),
    (
        "cumprod",
        Along::Scan(
            |v| {
                let fits = prod_fits(v);
                v.iter()
                    .scan(1.0, |s, x| {
                        *s *= x;
                        Some(fits.then_some(*s))
                    })
                    .collect()
            },
            |v| {
                v.iter()
                    .scan(1, |s: &mut i128, x| {
                        *s = s.checked_mul(*x)?;
                        Some(Some(*s))
                    })
                    .collect()
            },
        ),
    ),
    (
        "cummax",
        Along::Scan(
            |v| running_f(v, f64::NEG_INFINITY, f64::max),
            |v| running_i(v, i128::MIN, std::cmp::max),
        ),
    ),
    (
        "cummin",
        Along::Scan(
            |v| running_f(v, f64::INFINITY, f64::min),
            |v| running_i(v, i128::MAX, std::cmp::min),
        ),
    ),
    (
        "sort",
        Along::Scan(|v| sorted_f(v, false), |v| sorted_i(v, false)),
    ),
    (
        "sort_descending",
        Along::Scan(|v| sorted_f(v, true), |v| sorted_i(v, true)),
    ),
    ("argsort", Along::ArgScan(|v| arg_sort(v, false))),
    ("argsort_descending", Along::ArgScan(|v| arg_sort(v, true))),
    // `var` is the unbiased estimate (n - 1), `var_bias` the biased one (n).
    (
        "var",
        Along::Reduce(|v| var_fits(v).then(|| var_with(v, 1.0)), |_| None),
    ),
    (
        "var_bias",
        Along::Reduce(|v| var_fits(v).then(|| var_with(v, 0.0)), |_| None),
    ),
    // The lower median for an even count (Burn's doc comment: [1, 2, 3, 5] gives 2).
    (
        "median",
        Along::Reduce(
            |v| {
                let s = sorted_f(v, false);
                s[(s.len() - 1) / 2]
            },
            |_| None,
        ),
    ),
    (
        "softmax",
        Along::Scan(|v| softmax_lane(v, 1.0, false), |_| Vec::new()),
    ),
    // x - max - log(sum exp(x - max)): the logarithm taken of the sum, not of an
    // underflowed probability.
    (
        "log_softmax",
        Along::Scan(
            |v| {
                let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                if !m.is_finite() {
                    return vec![None; v.len()];
                }
                let log_sum = v.iter().map(|e| (e - m).exp()).sum::<f64>().ln();
                v.iter().map(|e| Some(e - m - log_sum)).collect()
            },
            |_| Vec::new(),
        ),
    ),
    (
        "softmin",
        Along::Scan(|v| softmax_lane(v, -1.0, false), |_| Vec::new()),
    ),
    // Burn's doc comment: exp(x_i) / (1 + sum_j exp(x_j)).
    (
        "quiet_softmax",
        Along::Scan(|v| softmax_lane(v, 1.0, true), |_| Vec::new()),
    ),
    ("any_dim", Along::Test(|v| v.iter().any(|b| *b))),
    ("all_dim", Along::Test(|v| v.iter().all(|b| *b))),
    ("flip", Along::Layout(flip_positions)),
    ("select_reversed", Along::Layout(flip_positions)),
    ("gather_rotated", Along::Layout(gather_rotated_positions)),
    ("scatter_add", Along::Whole(scatter_add_rotated)),
    (
        "permute_roll",
        Along::Layout(|s, _| (0..s.iter().product()).collect()),
    ),
    ("expand_first", Along::Layout(first_positions)),
    ("repeat_first", Along::Layout(first_positions)),
    (
        "topk1",
        Along::Reduce(max_lane, |v| v.iter().copied().max()),
    ),
    ("argtopk1", Along::Arg(|v| arg_by(v, |a, b| a > b))),
    ("topk1_indices", Along::Arg(|v| arg_by(v, |a, b| a > b))),
    ("max_dim_indices", Along::Arg(|v| arg_by(v, |a, b| a > b))),
    ("min_dim_indices", Along::Arg(|v| arg_by(v, |a, b| a < b))),
    ("sort_indices", Along::ArgScan(|v| arg_sort(v, false))),
    (
        "sum_dims",
        Along::Reduce(
            |v| sum_fits(v).then(|| v.iter().sum()),
            |v| Some(v.iter().sum()),
        ),
    ),
    ("all_whole", Along::TestWhole(|v| v.iter().all(|b| *b))),
    ("any_whole", Along::TestWhole(|v| v.iter().any(|b| *b))),
    (
        "pad_crop",
        Along::Layout(|s, _| (0..s.iter().product()).collect()),
    ),
    // x * 0 + c: a NaN or infinity times zero is NaN (IEEE), and so is the sum.
    (
        "zeros_like",
        Along::Map(|x| Some(x * 0.0 + 0.0), |_| Some(0), |b| b),
    ),
    (
        "ones_like",
        Along::Map(|x| Some(x * 0.0 + 1.0), |_| Some(1), |b| b),
    ),
    (
        "full_like",
        Along::Map(|x| Some(x * 0.0 - 3.0), |_| Some(-3), |b| b),
    ),
    ("bool_zeros_like", Along::Map(|_| None, |_| None, |_| false)),
    ("bool_ones_like", Along::Map(|_| None, |_| None, |_| true)),
    ("empty_times_zero", Along::Map(|_| None, |_| Some(0), |b| b)),
    (
        "powi_by_two",
        Along::Map(|x| (!x.is_nan()).then_some(x * x), |_| None, |b| b),
    ),
    // Burn's default scheme round-tripped through the select and gather of the plain entries.
    ("quantized_select", Along::Quantized(flip_positions)),
    (
        "quantized_gather",
        Along::Quantized(gather_rotated_positions),
    ),
    ("select_assign_reversed", Along::Layout(flip_positions)),
    ("scatter_assign_rotated", Along::Layout(roll_positions)),
    ("prelu", Along::Whole(prelu)),
    ("select_add", Along::Whole(plus_flipped)),
    (
        "gather_nd_flat_rows",
        Along::Layout(|s, _| flip_positions(s, 0)),
    ),
    (
        "scatter_nd_flat_rows",
        Along::Layout(|s, _| flip_positions(s, 0)),
    ),
    (
        "unfold_rows",
        Along::Layout(|s, _| (0..s.iter().product()).collect()),
    ),
    (
        "slice_assign_half",
        Along::Layout(slice_assign_half_positions),
    ),
    // The middle component of [x, 2x, 3x] x [3x, 2x, x]: a3 b1 - a1 b3 = 3x * 3x - x * x (as
    // written: an infinite x gives inf - inf).
    (
        "cross_middle",
        Along::Map(|x| Some((3.0 * x) * (3.0 * x) - x * x), |_| None, |b| b),
    ),
    ("matmul_ones", Along::Map(|_| None, Some, |b| b)),
    (
        "powi_two_int",
        Along::Map(|_| None, |x| floor_mod_i(x, 1000).map(|r| r * r), |b| b),
    ),
    // Off capture, the fusion entries are plain ops: the alias is the operand, the cached graph
    // (x * 0.5 + x) * 2 + that.
    ("fusion_alias", Along::Map(Some, Some, |b| b)),
    (
        "fusion_cached_graph",
        Along::Map(|x| Some(4.5 * x), |_| None, |b| b),
    ),
    // x * 0 + 0 over the masked empty tensor.
    (
        "empty_masked",
        Along::Map(|x| Some(x * 0.0 + 0.0), |_| None, |b| b),
    ),
    ("random_uniform_like", Along::Missing(RANDOM)),
    ("random_normal_like", Along::Missing(RANDOM)),
    ("random_bernoulli_like", Along::Missing(RANDOM)),
    ("random_default_like", Along::Missing(RANDOM)),
];

const RANDOM: &str = "random draws: no definition pins a drawn value down (the differential \
                      and eager-replay leave them out too); not judged, not even their support";

/// An along-dim entry applied to `x` over `dim`.
pub fn along(reference: Along, x: &Host, dim: usize) -> Result<Host, &'static str> {
    if dim >= x.shape.len() || x.shape[dim] == 0 {
        return Err("the dim is out of the operand's shape");
    }
    let mut reduced = x.shape.clone();
    reduced[dim] = 1;
    let ln = lanes(&x.shape, dim);
    let floats = x.floats();
    let ints = x.ints();
    let lane_f = |lane: &[usize]| -> Option<Vec<f64>> {
        let v = floats.or(None)?;
        lane.iter().map(|&i| v[i]).collect()
    };
    let lane_i = |lane: &[usize]| -> Option<Vec<i128>> {
        let v = ints?;
        lane.iter().map(|&i| v[i]).collect()
    };
    // The bools a test reads: a float's NaN is left open (is NaN "true"?).
    let truth = |i: usize| -> Option<bool> {
        match &x.data {
            Data::Float(v) => v[i].and_then(|e| (!e.is_nan()).then_some(e != 0.0)),
            Data::Int(v) => v[i].map(|e| e != 0),
            Data::Bool(v) => v[i],
        }
    };
    let n = x.numel();
    match reference {
        Along::Missing(why) => Err(why),
        Along::Quantized(layout) => super::host::quantized(x, &layout(&x.shape, dim)),
        Along::Reduce(f, g) => match &x.data {
            Data::Float(_) => Ok(Host::float(
                reduced,
                ln.iter().map(|l| f(&lane_f(l)?)).collect(),
            )),
            Data::Int(_) => Ok(Host::int(
                reduced,
                ln.iter().map(|l| g(&lane_i(l)?)).collect(),
            )),
            Data::Bool(_) => Err("no bool reduction"),
        },
        Along::Scan(f, g) => scan((f, g), x, &ln),
        Along::Arg(f) => Ok(Host::int(
            reduced,
            ln.iter()
                .map(|l| {
                    let v: Vec<f64> = l.iter().map(|&i| x.as_f64()[i]).collect::<Option<_>>()?;
                    f(&v).map(|k| k as i128)
                })
                .collect(),
        )),
        Along::ArgScan(f) => Ok(arg_scan(f, x, &ln)),
        Along::Test(f) => Ok(Host::bool(
            reduced,
            ln.iter()
                .map(|l| {
                    Some(f(&l
                        .iter()
                        .map(|&i| truth(i))
                        .collect::<Option<Vec<_>>>()?))
                })
                .collect(),
        )),
        Along::TestWhole(f) => {
            let all: Option<Vec<bool>> = (0..n).map(truth).collect();
            let value = all.map(|v| f(&v));
            Ok(Host::bool(x.shape.clone(), vec![value; n]))
        }
        Along::Layout(positions) => Ok(x.gathered(x.shape.clone(), &positions(&x.shape, dim))),
        Along::Map(f, g, b) => Ok(match &x.data {
            Data::Float(v) => {
                Host::float(x.shape.clone(), v.iter().map(|e| e.and_then(f)).collect())
            }
            Data::Int(v) => Host::int(x.shape.clone(), v.iter().map(|e| e.and_then(g)).collect()),
            Data::Bool(v) => Host::bool(x.shape.clone(), v.iter().map(|e| e.map(b)).collect()),
        }),
        Along::Whole(f) => f(x, dim).ok_or("the entry takes no operand of this kind"),
    }
}

/// A scan of a float lane.
type FloatScan = fn(&[f64]) -> Vec<Option<f64>>;
/// A scan of an int lane.
type IntScan = fn(&[i128]) -> Vec<Option<i128>>;

/// A scan of each of `x`'s `lanes`, by `f` over floats and `g` over ints.
fn scan(
    (f, g): (FloatScan, IntScan),
    x: &Host,
    lanes: &[Vec<usize>],
) -> Result<Host, &'static str> {
    let n = x.numel();
    let lane_f = |lane: &[usize]| -> Option<Vec<f64>> {
        let v = x.floats()?;
        lane.iter().map(|&i| v[i]).collect()
    };
    let lane_i = |lane: &[usize]| -> Option<Vec<i128>> {
        let v = x.ints()?;
        lane.iter().map(|&i| v[i]).collect()
    };
    let mut out_f = vec![None; n];
    let mut out_i = vec![None; n];
    for l in lanes {
        let values = match &x.data {
            Data::Float(_) => lane_f(l)
                .map(|v| f(&v))
                .map(|r| r.into_iter().map(|e| e.map(Ok)).collect::<Vec<_>>()),
            Data::Int(_) => lane_i(l)
                .map(|v| g(&v))
                .map(|r| r.into_iter().map(|e| e.map(Err)).collect::<Vec<_>>()),
            Data::Bool(_) => return Err("no bool scan"),
        };
        let Some(values) = values else { continue };
        if values.len() != l.len() {
            return Err("the entry takes no operand of this kind");
        }
        for (&i, e) in l.iter().zip(values) {
            match e {
                Some(Ok(f)) => out_f[i] = Some(f),
                Some(Err(k)) => out_i[i] = Some(k),
                None => {}
            }
        }
    }
    Ok(match &x.data {
        Data::Float(_) => Host::float(x.shape.clone(), out_f),
        _ => Host::int(x.shape.clone(), out_i),
    })
}

/// Each of `x`'s `lanes` as the permutation of its indices `f` gives (an int lane out).
fn arg_scan(f: fn(&[f64]) -> Vec<Option<usize>>, x: &Host, lanes: &[Vec<usize>]) -> Host {
    let n = x.numel();
    let all = x.as_f64();
    let mut out = vec![None; n];
    for l in lanes {
        let Some(v) = l.iter().map(|&i| all[i]).collect::<Option<Vec<f64>>>() else {
            continue;
        };
        for (&i, k) in l.iter().zip(f(&v)) {
            out[i] = k.map(|k| k as i128);
        }
    }
    Host::int(x.shape.clone(), out)
}

#[cfg(test)]
mod tests;
