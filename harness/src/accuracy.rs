//! The accuracy table: every float unary entry run by Burn over a sweep of inputs (every bit
//! pattern of F16 and BF16, a stratified sample of F32 and F64) and its error measured in units
//! in the last place against the reference oracle's definition rounded to the dtype.
//!
//! It sits above the interpreter (which runs the entry) and the oracles (whose reference it
//! measures against), and decides nothing: the bounds the reference judges with are data in
//! `oracles/reference/bound.rs`, written from this table, and a test holds them to it.

use burn::tensor::TensorData;
use serde::Serialize;

use crate::interpreter::{exec_op, AnyTensor};
use crate::oracles::reference::bound;
use crate::oracles::reference::host::{as_stored, Host};
use crate::oracles::reference::{host_of, of_op, rounded_ulps};
use crate::oracles::Backend;
use crate::program::{Dtype, Kind, Op, UnaryOp};
use crate::rng::SplitMix64;

/// One entry's error over one dtype's sweep on one backend.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Row {
    /// The table entry.
    pub entry: &'static str,
    /// The operand's (and result's) dtype.
    pub dtype: Dtype,
    /// The backend that computed Burn's values.
    pub backend: &'static str,
    /// Inputs run.
    pub inputs: usize,
    /// Inputs whose reference is pinned down (a NaN's lane an entry leaves open is not).
    pub judged: usize,
    /// The largest distance in ULPs between Burn's value and the reference rounded to the
    /// dtype; infinite where one is NaN or infinite and the other is not.
    pub max_ulps: f64,
    /// The median distance.
    pub median_ulps: f64,
    /// The input with the largest distance, Burn's value there and the reference's.
    pub worst: Option<(f64, f64, f64)>,
    /// The largest distance over the inputs past half the dtype's range, apart: a bug met only
    /// there is another root cause (the reference's signatures name that regime), so it
    /// neither sets nor breaks a bound over the ordinary values.
    pub max_ulps_past_half_range: f64,
}

/// The float unary entries the table measures: those whose reference is element by element
/// (not a whole-tensor reduction, not a quantized round trip).
pub fn entries() -> Vec<UnaryOp> {
    UnaryOp::all()
        .filter(|u| u.spec().kinds.contains(&Kind::Float))
        .filter(|u| {
            let op = Op::Unary { op: *u, src: 0 };
            !op.accumulates() && crate::oracles::reference::quantized_scheme(&op).is_none()
        })
        .collect()
}

/// The inputs of a sweep over `dtype`: every bit pattern of a 16-bit float; for F32 and F64,
/// every exponent with both signs and a spread of mantissas (subnormals included), the values
/// where functions turn (zeros, ±1 and their neighbours, halves that tie, multiples of π/2
/// near poles), and `random` uniformly drawn bit patterns.
pub fn inputs(dtype: Dtype, random: usize, seed: u64) -> Vec<f64> {
    match dtype {
        Dtype::F16 => (0..=u16::MAX)
            .map(|b| f64::from(burn_backend::f16::from_bits(b)))
            .collect(),
        Dtype::Bf16 => (0..=u16::MAX)
            .map(|b| f64::from(burn_backend::bf16::from_bits(b)))
            .collect(),
        Dtype::F32 => stratified(8, 23, random, seed, |b| f64::from(f32::from_bits(b as u32))),
        Dtype::F64 => stratified(11, 52, random, seed, f64::from_bits),
        _ => Vec::new(),
    }
}

/// [`inputs`] of a binary format with `exponent` and `mantissa` bits, `from_bits` decoding one.
fn stratified(
    exponent: u32,
    mantissa: u32,
    random: usize,
    seed: u64,
    from_bits: impl Fn(u64) -> f64,
) -> Vec<f64> {
    let top = (1u64 << mantissa) - 1;
    let mantissas = [0, 1, 2, top / 3, top / 2, top / 2 + 1, top - 1, top];
    let mut out = Vec::new();
    for sign in [0u64, 1] {
        for e in 0..(1u64 << exponent) {
            for m in mantissas {
                out.push(from_bits(
                    (sign << (exponent + mantissa)) | (e << mantissa) | m,
                ));
            }
        }
    }
    let round = |x: f64| from_bits(to_bits_of(x, mantissa));
    let mut turns = vec![
        0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 1e-3, -1e-3, 1e-7,
    ];
    for k in 1..=8 {
        turns.push(f64::from(k) * std::f64::consts::FRAC_PI_2);
        turns.push(-f64::from(k) * std::f64::consts::FRAC_PI_2);
    }
    for x in [88.0, -87.0, 709.0, 11.0, -10.0] {
        turns.push(x);
    }
    // Next to ±1 and 0, where an inverse hyperbolic or a log cancels: every power of two away.
    for k in 1..=mantissa + 1 {
        let d = (-f64::from(k)).exp2();
        turns.extend([1.0 + d, 1.0 - d, -1.0 + d, -1.0 - d, d, -d]);
    }
    for t in turns {
        let t = round(t);
        out.push(t);
        out.push(next_after(t, mantissa, 1, &from_bits));
        out.push(next_after(t, mantissa, -1, &from_bits));
    }
    let mut rng = SplitMix64::new(seed);
    let width = 1 + exponent + mantissa;
    for _ in 0..random {
        let bits = rng.next_u64() & (u64::MAX >> (64 - width));
        out.push(from_bits(bits));
    }
    out
}

/// The bit pattern of `x` in the format of `mantissa` bits (F32 or F64).
fn to_bits_of(x: f64, mantissa: u32) -> u64 {
    if mantissa == 23 {
        u64::from((x as f32).to_bits())
    } else {
        x.to_bits()
    }
}

/// The neighbour of `x` one unit away in direction `dir` (ordered by value).
fn next_after(x: f64, mantissa: u32, dir: i64, from_bits: &impl Fn(u64) -> f64) -> f64 {
    let bits = to_bits_of(x, mantissa);
    let width = if mantissa == 23 { 32 } else { 64 };
    let sign = bits >> (width - 1) == 1;
    let magnitude = bits & !(1u64 << (width - 1));
    let away = (dir > 0) != sign;
    let next = match (away, magnitude) {
        (true, m) => (bits & (1u64 << (width - 1))) | (m + 1),
        (false, 0) => (1u64 << (width - 1)) ^ (bits & (1u64 << (width - 1))) | 1,
        (false, m) => (bits & (1u64 << (width - 1))) | (m - 1),
    };
    from_bits(next)
}

/// The position of `x` among the values of `dtype` in order (so two positions' difference is
/// their distance in units in the last place), from the value's bits: `None` for NaN.
fn ordinal(dtype: Dtype, x: f64) -> Option<i128> {
    if x.is_nan() {
        return None;
    }
    let (bits, width) = match dtype {
        Dtype::F16 => (u64::from(burn_backend::f16::from_f64(x).to_bits()), 16),
        Dtype::Bf16 => (u64::from(burn_backend::bf16::from_f64(x).to_bits()), 16),
        Dtype::F32 => (u64::from((x as f32).to_bits()), 32),
        _ => (x.to_bits(), 64),
    };
    let sign = 1u64 << (width - 1);
    let magnitude = i128::from(bits & !sign);
    Some(if bits & sign != 0 {
        -magnitude
    } else {
        magnitude
    })
}

/// The distance in units in the last place of `dtype` between two of its values: 0 for two
/// NaNs or two equal infinities, infinite where exactly one is NaN.
pub fn ulp_distance(dtype: Dtype, a: f64, b: f64) -> f64 {
    match (ordinal(dtype, a), ordinal(dtype, b)) {
        (Some(x), Some(y)) => (x - y).unsigned_abs() as f64,
        (None, None) => 0.0,
        _ => f64::INFINITY,
    }
}

/// Measures `entry` over `xs` in `dtype` on Flex: `Err` where Burn's call does not run (a
/// harness fault: every float entry takes a float tensor).
pub fn measure(entry: UnaryOp, dtype: Dtype, xs: &[f64]) -> anyhow::Result<Row> {
    measure_op(&Op::Unary { op: entry, src: 0 }, dtype, xs)
}

/// [`measure`] for any entry of one float operand whose reference is element by element
/// (`op` reads slot 0; an along-dim entry runs along dim 0 of the one-dimensional sweep).
pub fn measure_op(op: &Op, dtype: Dtype, xs: &[f64]) -> anyhow::Result<Row> {
    measure_over(op, dtype, &[xs])
}

/// [`measure_op`] for an entry of one or two float operands, element by element: `operands[k]`
/// is slot k's sweep (a binary entry reads slots 0 and 1, of one length). The worst input it
/// reports is the first operand's.
pub fn measure_over(op: &Op, dtype: Dtype, operands: &[&[f64]]) -> anyhow::Result<Row> {
    let entry = match op {
        Op::Unary { op, .. } => op.name(),
        Op::AlongDim { op, .. } => op.name(),
        Op::Binary { op, .. } => op.name(),
        Op::Scalar { op, .. } => op.name(),
        other => anyhow::bail!("{} is not an entry the table measures", other.name()),
    };
    let xs = operands.first().copied().unwrap_or_default();
    let (hosts, got, want) = run_flex(op, entry, dtype, operands)?;
    let want = want.floats().unwrap_or_default().to_vec();
    let operands = hosts[0].floats().unwrap_or_default().to_vec();
    let mut distances = Vec::with_capacity(xs.len());
    let mut worst: Option<(f64, f64, f64, f64)> = None;
    let mut past = 0f64;
    for ((x, w), g) in operands.iter().zip(&want).zip(&got) {
        let (Some(x), Some(w)) = (x, w) else {
            continue;
        };
        let w = crate::oracles::reference::host::as_stored(dtype, *w);
        let d = ulp_distance(dtype, *g, w);
        if x.is_finite() && x.abs() > dtype.largest() / 2.0 {
            past = past.max(d);
            continue;
        }
        if worst.is_none_or(|(best, ..)| d > best) {
            worst = Some((d, *x, *g, w));
        }
        distances.push(d);
    }
    distances.sort_by(f64::total_cmp);
    Ok(Row {
        entry,
        dtype,
        backend: "flex",
        inputs: xs.len(),
        judged: distances.len(),
        max_ulps: distances.last().copied().unwrap_or(0.0),
        median_ulps: distances.get(distances.len() / 2).copied().unwrap_or(0.0),
        worst: worst.map(|(_, x, g, w)| (x, g, w)),
        max_ulps_past_half_range: past,
    })
}

/// `op` run on Flex over `operands` in `dtype`: the operands as host arrays, Burn's values
/// and the reference's.
fn run_flex(
    op: &Op,
    entry: &str,
    dtype: Dtype,
    operands: &[&[f64]],
) -> anyhow::Result<(Vec<Host>, Vec<f64>, Host)> {
    let storage = dtype.burn();
    let device = burn::tensor::Device::flex();
    let datas: Vec<TensorData> = (operands.iter())
        .map(|v| TensorData::new(v.to_vec(), [v.len()]).convert_dtype(storage))
        .collect();
    let tensors: Vec<AnyTensor> = (datas.iter())
        .map(|d| AnyTensor::from_data(Kind::Float, d.clone(), &device, Some(storage)))
        .collect();
    let out = exec_op(op, |s| tensors.get(usize::from(s)).cloned())?;
    let got = out
        .try_into_data()
        .map_err(|e| anyhow::anyhow!("reading {entry} over {dtype:?}: {e}"))?;
    let got: Vec<f64> = got
        .convert::<f64>()
        .try_to_vec()
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let hosts: Vec<Host> = datas.iter().map(|d| host_of(Kind::Float, d)).collect();
    let host_refs: Vec<&Host> = hosts.iter().collect();
    let want = of_op(op, &host_refs).map_err(|why| anyhow::anyhow!("{why}"))?;
    Ok((hosts, got, want))
}

/// How far Flex's values of unary entry `entry` over `xs` in `dtype` come to the bound its
/// derived error model gives each element, as the reference judges them: the largest ratio
/// of an error to its element's bound (past 1, a value the reference would report) and the
/// input, Burn's value and the reference's there. `Err` where the entry has no derived model
/// on Flex or Burn's call does not run.
pub fn bound_ratio(
    entry: UnaryOp,
    dtype: Dtype,
    xs: &[f64],
) -> anyhow::Result<(f64, (f64, f64, f64))> {
    bound_ratio_of(&Op::Unary { op: entry, src: 0 }, dtype, xs)
}

/// [`bound_ratio`] for any entry of one float operand in slot 0 whose bound is derived on Flex
/// (a quantized round trip, `Op::Quantized` with its scheme).
pub fn bound_ratio_of(op: &Op, dtype: Dtype, xs: &[f64]) -> anyhow::Result<(f64, (f64, f64, f64))> {
    let name = op.name();
    let model = bound::model(op, Backend::Flex)
        .ok_or_else(|| anyhow::anyhow!("{name} has no derived bound on Flex"))?;
    let (hosts, got, want) = run_flex(op, &name, dtype, &[xs])?;
    // What a rounding near zero may add on Flex, as the reference judges with.
    let floor = rounded_ulps(Backend::Flex, dtype).1;
    let bounds = bound::per_element(model, op, &[&hosts[0]], &want, (dtype, floor))
        .ok_or_else(|| anyhow::anyhow!("{name}'s model gives no bounds over {dtype:?}"))?;
    let largest = dtype.largest();
    let headroom = bound::headroom(op);
    let mut worst = (0.0, (f64::NAN, f64::NAN, f64::NAN));
    let operands = hosts[0].floats().unwrap_or_default();
    let want = want.floats().unwrap_or_default();
    for (((x, w), g), b) in operands.iter().zip(want).zip(&got).zip(&bounds) {
        let (Some(x), Some(w)) = (x, w) else {
            continue;
        };
        // As the reference judges: past the range, and where the bound is not finite, open.
        if !b.is_finite() || (w.is_finite() && w.abs() * headroom > largest) {
            continue;
        }
        let w = as_stored(dtype, *w);
        let allowed = if dtype == Dtype::F64 { 2.0 * b } else { *b };
        let ratio = if (w.is_nan() && g.is_nan()) || w == *g {
            0.0
        } else if w.is_finite() && g.is_finite() {
            (w - g).abs() / allowed
        } else {
            f64::INFINITY
        };
        if ratio > worst.0 {
            worst = (ratio, (*x, *g, w));
        }
    }
    Ok(worst)
}

/// The rows as a Markdown table, the worst entries first within each dtype.
pub fn markdown(rows: &[Row]) -> String {
    let mut out = String::from(
        "| entry | dtype | backend | inputs | judged | max ULP | median ULP | worst input: Burn vs reference | max ULP past half the range |\n\
         |---|---|---|---:|---:|---:|---:|---|---:|\n",
    );
    for r in rows {
        let worst = r
            .worst
            .map(|(x, g, w)| format!("{x:e}: {g:e} vs {w:e}"))
            .unwrap_or_default();
        out.push_str(&format!(
            "| {} | {:?} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.entry,
            r.dtype,
            r.backend,
            r.inputs,
            r.judged,
            r.max_ulps,
            r.median_ulps,
            worst,
            r.max_ulps_past_half_range
        ));
    }
    out
}

/// Every float storage dtype the table sweeps, coarsest first.
pub const DTYPES: [Dtype; 4] = [Dtype::Bf16, Dtype::F16, Dtype::F32, Dtype::F64];
