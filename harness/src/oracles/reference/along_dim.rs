//! The references of the along-a-dim table: reductions, scans, sorts, softmaxes and the layout
//! and indexing entries, each over the lanes of the operand along its dim.

mod lane;

use lane::{
    arg_by, arg_sort, max_lane, mean_f, min_lane, softmax_lane, sorted_f, sorted_i, var_fits,
    var_with,
};

use super::error::{
    composite, higham, library, product, variance, Arithmetic, Composite, Product, Terms, LINEAR,
    LOG_SOFTMAX, PRESET, QUIET_SOFTMAX, SOFTMAX, SOFTMIN,
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

/// The `reference` column of `program::along_dim_ops!` as a table by name, as the element-wise
/// tables are built: an entry without one does not compile.
macro_rules! along_dim_references {
    ($($name:ident : [$($kind:ident),+] -> $result:ident, $shape:ident, $tol:ident, $un:ident,
        $reach:ident, $x:ident, $d:ident => $call:expr, reference $reference:expr,
        error $error:expr;)+) => {
        /// Every along-dim entry's reference, by table name.
        pub const ALONG_DIM: &[(&str, Along)] = &[$((stringify!($name), $reference)),+];
        /// Every along-dim entry's error model, in table order (`error` column).
        pub const ALONG_DIM_ERROR: &[Arithmetic] = &[$($error),+];
    };
}
crate::program::along_dim_ops!(along_dim_references);

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
