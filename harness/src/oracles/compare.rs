//! How two values of one tensor are compared: per-dtype tolerance from Burn's own `Tolerance`,
//! bools read whatever their storage width, NaN and infinities explicit, and values whose
//! computation Burn does not pin down poisoned and never compared, like wasmtime's
//! `DiffEqResult::Poisoned`.

use burn::tensor::{TensorData, Tolerance};
use burn_backend::{BoolStore, DType};

use super::taint::{Elements, Taint};
pub use super::taint::{Grain, Poison};
use crate::interpreter::{non_native_bools, Mirror};
use crate::program::{Dtype, Kind, Op, Step, Tolerance as OpTolerance, Unspecified};

/// The comparison of one value on both backends.
#[derive(Clone, Debug, PartialEq)]
pub enum DiffEq {
    /// Equal within the dtype's tolerance.
    Equal,
    /// Not comparable: the value depends on behaviour Burn leaves unspecified or on a catalogued
    /// bug (see [`Poison`]); the comparison stops there, and nothing is reported.
    Poisoned(Poison),
    /// A real difference, described with both values.
    Differ(Difference),
}

/// Where two values differ: the text a finding's message gives, and the first differing
/// element's two values (in the order the comparison names them) for its deviation.
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    /// How many elements differ and the first of them (or the two shapes).
    pub text: String,
    /// The first differing element's two values; none where the shapes differ.
    pub first: Option<(f64, f64)>,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// The tolerance for one value held by both backends, from Burn's own `Tolerance` presets on
/// the grid of its dtype ([`on_grid`]): floats use `Tolerance::balanced()` (Burn's default: 0.5%
/// relative, 1e-5 absolute on f32's grid), which absorbs the few-ulp differences between Flex's
/// and a GPU's `exp`/`tanh` and summation order; ints and bools must be exact.
pub fn tolerance_for(a: &TensorData, b: &TensorData) -> Option<Tolerance<f64>> {
    let grid = grid(a.dtype(), b.dtype())?;
    Some(on_grid(Tolerance::balanced(), grid))
}

/// The tolerance for a value an op of family `family` computed, held as `a` on one backend and
/// `b` on the other, when its operands were bit-identical on both backends (`exact_operands`) or
/// not: `Exact` and `Step` ops add no error of their own, so they must agree bit for bit on
/// identical operands; a `Step` op over inexact ones is poisoned before it gets here
/// ([`Poison::InexactOperand`]). Ints and bools are always exact. `floor` (see
/// [`absolute_floor`]) raises the absolute part where it is wider.
pub fn tolerance_of(
    (a, b): (&TensorData, &TensorData),
    family: OpTolerance,
    exact_operands: bool,
    floor: Option<f64>,
) -> Option<Tolerance<f64>> {
    let grid = grid(a.dtype(), b.dtype())?;
    let preset = match family {
        OpTolerance::Exact | OpTolerance::Step if exact_operands => return None,
        OpTolerance::Transcendental => Tolerance::permissive(),
        _ => Tolerance::balanced(),
    };
    let tolerance = on_grid(preset, grid);
    Some(match floor {
        Some(floor) if floor > tolerance.get_absolute() => tolerance.set_absolute(floor),
        _ => tolerance,
    })
}

/// The grid two values are compared on: the coarser of their float dtypes (F16 on one backend
/// against F32 on the other is judged on F16's); `None` unless both are floats.
fn grid(a: DType, b: DType) -> Option<Dtype> {
    if !(a.is_float() && b.is_float()) {
        return None;
    }
    // A float Burn names that programs do not make (Flex32, a quantized read) is on f32's grid.
    let on = |d| Dtype::from_burn(d).unwrap_or(Dtype::F32);
    let (a, b) = (on(a), on(b));
    Some(if a.epsilon() >= b.epsilon() { a } else { b })
}

/// Steps of a coarse dtype's grid at 1.0 (its epsilon) two correct backends' values may differ
/// by near zero, where a relative bound says nothing: 2 steps are 2.0e-3 for F16 (the absolute
/// bound Burn's own half-precision tests use most after 5e-2 and 5e-3:
/// `set_half_precision_absolute(2e-3)`) and 1.6e-2 for BF16. No more: the absolute bound rules
/// up to magnitudes where the relative one takes over, about 1 for both.
const ABSOLUTE_STEPS: f64 = 2.0;

/// `preset`, whose bounds Burn states for f32, on `dtype`'s grid. A dtype coarser than f32 (F16,
/// BF16) rounds each of an op's steps on its own grid, and one backend may compute in it where
/// another computes in f32 and rounds once: the relative bound widens to one step beyond the
/// preset or the dtype's epsilon, whichever is wider (as the reference oracle widens its own),
/// and the absolute bound to `ABSOLUTE_STEPS` steps. F32 and F64 keep the preset, so a wrong
/// F64 value is still judged at least as closely as an F32 one.
pub fn on_grid(preset: Tolerance<f64>, dtype: Dtype) -> Tolerance<f64> {
    let eps = dtype.epsilon();
    if eps <= Dtype::F32.epsilon() {
        return preset;
    }
    let relative = preset.get_relative().max(eps) + eps;
    let absolute = preset.get_absolute().max(ABSOLUTE_STEPS * eps);
    Tolerance::rel_abs(relative, absolute)
}

/// Where two float values of one shape hold zeros of opposite signs (they compare equal, but
/// not everything computed from them does), if anywhere.
pub fn zero_signs_differ(a: &TensorData, b: &TensorData) -> Option<Elements> {
    if !(a.dtype().is_float() && b.dtype().is_float()) || a.shape() != b.shape() {
        return None;
    }
    let bits = values(a)
        .into_iter()
        .zip(values(b))
        .map(|(x, y)| x == 0.0 && y == 0.0 && x.is_sign_negative() != y.is_sign_negative())
        .collect();
    Elements::of(a.shape(), bits)
}

/// Where a float value holds subnormals of its dtype (nonzero values below its smallest
/// normal), if anywhere. A wgpu device may flush each to zero, as Mesa's llvmpipe does (log of
/// the smallest f32 subnormal is -inf there, -103.3 on Flex: fuzz --backends flex,capture,wgpu
/// --seed 12): Vulkan keeps them only where a shader asks to (VK_KHR_shader_float_controls'
/// denorm-preserve modes), which cubecl's WGSL does not.
pub fn subnormal_elements(data: &TensorData) -> Option<Elements> {
    let normal = Dtype::from_burn(data.dtype())?.smallest_normal();
    elements_where(data, |v| v != 0.0 && v.abs() < normal)
}

/// Where `a` and `b` are not bit for bit the same (NaN equal to NaN), if anywhere: every
/// element, when their shapes differ.
pub fn differing(a: &TensorData, b: &TensorData) -> Option<Elements> {
    if a.shape() != b.shape() {
        return Some(Elements::All);
    }
    let bits = values(a)
        .into_iter()
        .zip(values(b))
        .map(|(x, y)| !(x == y || (x.is_nan() && y.is_nan())))
        .collect();
    Elements::of(a.shape(), bits)
}

/// Compares `wgpu` with `flex`, unless the value is `poisoned`. Shapes must match; dtypes may
/// differ (each backend has its own default int and bool storage), values may not. NaN equals NaN
/// and same-signed infinities are equal, explicitly: anything else against a NaN or an infinity
/// is a difference.
pub fn compare(flex: &TensorData, wgpu: &TensorData, poisoned: Option<&Taint>) -> DiffEq {
    compare_within(flex, wgpu, poisoned, tolerance_for(flex, wgpu))
}

/// [`compare`] within `tolerance` (exactly, when `None`). A value poisoned at some elements is
/// compared at the others; one poisoned at every element is not compared.
pub fn compare_within(
    flex: &TensorData,
    wgpu: &TensorData,
    poisoned: Option<&Taint>,
    tolerance: Option<Tolerance<f64>>,
) -> DiffEq {
    let skip = match poisoned {
        Some(t) if t.covers(flex.shape()) => return DiffEq::Poisoned(t.why),
        Some(t) => t.at.skips(flex.shape()),
        None => None,
    };
    // A subnormal equals a zero: the wgpu device may flush it ([`subnormal_elements`]).
    let flush = grid(flex.dtype(), wgpu.dtype()).map_or(0.0, Dtype::smallest_normal);
    let names = ("wgpu", "flex");
    match difference_flushing(wgpu, flex, tolerance, names, skip, flush) {
        None => DiffEq::Equal,
        Some(d) => DiffEq::Differ(d),
    }
}

/// Where `a` and `b` differ beyond `tolerance` (exactly, when `None`), naming them `names`.
pub fn difference_with(
    a: &TensorData,
    b: &TensorData,
    tolerance: Option<Tolerance<f64>>,
    names: (&str, &str),
) -> Option<String> {
    difference_skipping(a, b, tolerance, names, None)
}

/// [`difference_with`], leaving out the elements whose bit is set in `skip` (poisoned ones).
pub fn difference_skipping(
    a: &TensorData,
    b: &TensorData,
    tolerance: Option<Tolerance<f64>>,
    names: (&str, &str),
    skip: Option<&[bool]>,
) -> Option<String> {
    difference_flushing(a, b, tolerance, names, skip, 0.0).map(|d| d.text)
}

/// [`difference_skipping`] where a value of magnitude below `flush` counts as a zero.
fn difference_flushing(
    a: &TensorData,
    b: &TensorData,
    tolerance: Option<Tolerance<f64>>,
    names: (&str, &str),
    skip: Option<&[bool]>,
    flush: f64,
) -> Option<Difference> {
    if a.shape() != b.shape() {
        let text = format!(
            "shape {:?} on {}, {:?} on {}",
            a.shape(),
            names.0,
            b.shape(),
            names.1
        );
        return Some(Difference { text, first: None });
    }
    let (xs, ys) = (values(a), values(b));
    let mut first = None;
    let mut count = 0;
    for (i, (x, y)) in xs.iter().zip(&ys).enumerate() {
        if skip.is_some_and(|skip| skip.get(i).copied().unwrap_or(false)) {
            continue;
        }
        let zero = |v: f64| if v.abs() < flush { 0.0 } else { v };
        let (x, y) = (zero(*x), zero(*y));
        let both_nan = x.is_nan() && y.is_nan();
        let same_inf = x.is_infinite() && y.is_infinite() && (x > 0.0) == (y > 0.0);
        let close = match &tolerance {
            Some(t) => x.is_finite() && y.is_finite() && t.approx_eq(x, y),
            None => x == y,
        };
        if both_nan || same_inf || close {
            continue;
        }
        count += 1;
        first.get_or_insert((i, x, y));
    }
    first.map(|(i, x, y)| Difference {
        text: format!(
            "{count} value(s) differ, first at position {i}: {x} on {}, {y} on {}",
            names.0, names.1
        ),
        first: Some((x, y)),
    })
}

/// Every element as `f64`; bools read from their storage whatever its width (Flex stores bools
/// as bytes, wgpu as `u32`), so both backends' bools compare as 0 and 1.
pub fn values(data: &TensorData) -> Vec<f64> {
    if data.dtype().is_bool() {
        let n = data.num_elements().max(1);
        let bytes = data.as_bytes();
        let width = (bytes.len() / n).max(1);
        return bytes
            .chunks(width)
            .map(|c| f64::from(u8::from(c.iter().any(|b| *b != 0))))
            .collect();
    }
    data.iter::<f64>().collect()
}

/// Whether a float cast to int of `v` meets a NaN or a value outside `i32`.
fn out_of_i32(v: f64) -> bool {
    v.is_nan() || !(-2_147_483_648.0..2_147_483_648.0).contains(&v)
}

/// Whether `argmax` over this lane meets a tie for the maximum (or a NaN).
fn argmax_tie(lane: &[f64]) -> bool {
    let max = lane.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    lane.iter()
        .filter(|v| **v == max || (v.is_nan() && max.is_nan()))
        .count()
        > 1
        || lane.iter().any(|v| v.is_nan())
}

/// Whether this lane holds two equal values or a NaN: where an index result (argmin, argsort)
/// is not pinned down.
fn has_ties(lane: &[f64]) -> bool {
    let mut sorted = lane.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.windows(2).any(|w| w[0] == w[1]) || lane.iter().any(|v| v.is_nan())
}

/// Every element of the lanes of `data` along `dim` for which `test` holds, if any.
fn lanes_where(data: &TensorData, dim: usize, test: impl Fn(&[f64]) -> bool) -> Option<Elements> {
    let shape = data.shape().to_vec();
    let &len = shape.get(dim)?;
    let stride: usize = shape[dim + 1..].iter().product();
    let xs = values(data);
    let mut bits = vec![false; xs.len()];
    for lane in 0..xs.len() / len.max(1) {
        let base = (lane / stride) * stride * len + lane % stride;
        let at = |k: usize| base + k * stride;
        let values: Vec<f64> = (0..len).map(|k| xs[at(k)]).collect();
        if test(&values) {
            for k in 0..len {
                bits[at(k)] = true;
            }
        }
    }
    Elements::of(&shape, bits)
}

/// The elements of `data` for which `test` holds, if any.
fn elements_where(data: &TensorData, test: impl Fn(f64) -> bool) -> Option<Elements> {
    Elements::of(data.shape(), values(data).into_iter().map(test).collect())
}

/// Why an op's result is not pinned down by Burn on its eager operands, and at which operand
/// elements: `operands[k]` is where operand `k` meets the reason (every element, where the
/// reason is not per element), `None` where it does not.
#[derive(Clone, Debug, PartialEq)]
pub struct Unpinned {
    /// The reason.
    pub why: Poison,
    /// Per operand, in operand order.
    pub operands: Vec<Option<Elements>>,
}

impl Unpinned {
    /// The reason at every element, whatever the operands.
    fn whole(why: Poison) -> Unpinned {
        Unpinned {
            why,
            operands: vec![Some(Elements::All)],
        }
    }
}

/// Why the result of `step` is not pinned down by Burn on its eager operands (read from the
/// eager `flex` mirror before it follows the step), and at which operand elements, if it is
/// not. Per element where the reason is (a NaN, a near-pole value, an out-of-range cast), per
/// lane for the index results' ties, and every element for the rest: a pooling window's tie
/// (windows overlap), a quantization (one scale for the tensor), a random draw, an inexact
/// quotient.
pub fn unspecified(step: &Step, flex: &Mirror) -> Option<Unpinned> {
    let Step::Op { op, .. } = step else {
        return None;
    };
    if partial_sums_may_overflow(op, flex) {
        return Some(Unpinned::whole(Poison::PartialSumOverflow));
    }
    let poison = match op {
        Op::ArgMax { .. } => Poison::ArgmaxTie,
        Op::Cast { to: Kind::Int, .. } => Poison::OutOfRangeCast,
        Op::Cast { to: Kind::Bool, .. } => Poison::NanCompared,
        _ => match op.unspecified() {
            Unspecified::None => return None,
            Unspecified::Nan => Poison::NanCompared,
            Unspecified::Pole | Unspecified::UnitEdge => Poison::NearPole,
            // Past an inexact quotient the result is open whatever the operands; short of it,
            // the differential decides, knowing which operand elements were identical.
            Unspecified::Jumps => {
                // The dividend: a huge divisor (an infinity) makes the quotient exact, and an
                // infinite dividend gives NaN on every backend.
                let huge = op.operands().first().is_some_and(|s| {
                    flex.data(*s).is_none_or(|d| {
                        values(&d).iter().any(|v| {
                            v.is_finite() && v.abs() > crate::program::limits::INEXACT_QUOTIENT
                        })
                    })
                });
                return Some(Unpinned::whole(if huge {
                    Poison::InexactQuotient
                } else {
                    Poison::InexactOperand
                }));
            }
            Unspecified::Ties => Poison::IndexTie,
            Unspecified::Large => Poison::LargeArgument,
            Unspecified::Infinite => Poison::InfiniteSample,
            Unspecified::Overflow => Poison::ExpOverflow,
            Unspecified::SquareOverflow => Poison::SquareOverflow,
            // Judged within a wider tolerance instead (`absolute_floor`).
            Unspecified::CancelledSum | Unspecified::CancelledProduct => return None,
            // Likewise, but for a non-finite operand: quantizing casts x / scale to int, and a
            // NaN or infinite value makes the scale and every cast unspecified (an all-NaN
            // tensor dequantizes to 0 on Flex, NaN on wgpu: fuzz --seed 105 with wgpu).
            Unspecified::Quantized => Poison::OutOfRangeCast,
            // Whatever the operands: the values are a draw.
            Unspecified::Random => return Some(Unpinned::whole(Poison::RandomDraw)),
            Unspecified::IntMinimum => Poison::IntMinimum,
        },
    };
    use crate::program::limits::{
        EXP_OVERFLOW, LARGE_ARGUMENT, POLE_NEIGHBOURHOOD, SQUARE_OVERFLOW,
    };
    let mut operands = Vec::new();
    for src in op.operands() {
        let Some(data) = flex.data(src) else {
            return Some(Unpinned::whole(poison));
        };
        let at = match (op, poison) {
            (Op::ArgMax { dim, .. }, _) => lanes_where(&data, usize::from(*dim), argmax_tie),
            (Op::AlongDim { dim, .. }, Poison::IndexTie) => {
                lanes_where(&data, usize::from(*dim), has_ties)
            }
            // A pooling window's argmax: any two equal values (or a NaN) may share a window.
            (Op::Module { .. }, Poison::IndexTie) => {
                let mut xs = values(&data);
                xs.sort_by(f64::total_cmp);
                (xs.iter().any(|v| v.is_nan()) || xs.windows(2).any(|w| w[0] == w[1]))
                    .then_some(Elements::All)
            }
            (_, Poison::NanCompared) => elements_where(&data, f64::is_nan),
            (_, Poison::NearPole) if op.unspecified() == Unspecified::UnitEdge => {
                elements_where(&data, |v| (v.abs() - 1.0).abs() <= POLE_NEIGHBOURHOOD)
            }
            (_, Poison::NearPole) => elements_where(&data, |v| v.abs() <= POLE_NEIGHBOURHOOD),
            // One scale for the whole tensor: a non-finite value anywhere reaches every element.
            (_, Poison::OutOfRangeCast) if op.unspecified() == Unspecified::Quantized => {
                values(&data)
                    .iter()
                    .any(|v| !v.is_finite())
                    .then_some(Elements::All)
            }
            (_, Poison::LargeArgument) => elements_where(&data, |v| v.abs() > LARGE_ARGUMENT),
            (_, Poison::InfiniteSample) => elements_where(&data, f64::is_infinite),
            (_, Poison::ExpOverflow) => elements_where(&data, |v| v.abs() > EXP_OVERFLOW),
            (_, Poison::SquareOverflow) => elements_where(&data, |v| v.abs() > SQUARE_OVERFLOW),
            // Only an int dtype has a minimum without a magnitude.
            (_, Poison::IntMinimum) => at_int_minimum(&data),
            _ if data.dtype().is_float() => elements_where(&data, out_of_i32),
            _ => None,
        };
        operands.push(at);
    }
    operands.iter().any(Option::is_some).then_some(Unpinned {
        why: poison,
        operands,
    })
}

/// The elements of an int tensor at its dtype's minimum, which has no magnitude in the dtype
/// (see [`Unspecified::IntMinimum`]); none for a float or an unsigned int.
fn at_int_minimum(data: &TensorData) -> Option<Elements> {
    match Dtype::from_burn(data.dtype()).and_then(Dtype::int_range) {
        Some((min, _)) if min < 0 => elements_where(data, |v| v == min as f64),
        _ => None,
    }
}

/// Whether an op that adds terms up ([`Op::accumulates`]) may meet a partial sum past its
/// float dtype's largest value ([`Op::partial_sum_scale`], as the reference oracle bounds
/// them). Which partial sums a backend forms is its own choice (a layer norm of f32::MAX values
/// is its bias on Flex, NaN on wgpu, whose two-pass sum overflows: fuzz --backends
/// flex,capture,wgpu --seed 2), so past that the value is not pinned down.
fn partial_sums_may_overflow(op: &Op, flex: &Mirror) -> bool {
    if !op.accumulates() {
        return false;
    }
    let mut largest = 0.0f64;
    let mut terms = 1usize;
    let mut limit = f64::INFINITY;
    for src in op.operands() {
        let Some(data) = flex.data(src) else {
            continue;
        };
        let Some(dtype) = Dtype::from_burn(data.dtype()).filter(|d| d.kind() == Kind::Float) else {
            continue;
        };
        limit = limit.min(dtype.largest());
        terms = terms.max(data.num_elements());
        let finite = values(&data).into_iter().filter(|v| v.is_finite());
        largest = finite.fold(largest, |m, v| m.max(v.abs()));
    }
    op.partial_sum_scale(largest, terms) > limit
}

/// The absolute tolerance a step's float result needs beyond its family's, from its eager
/// operand, where its entry says so: a cancelled reduction ([`Unspecified::CancelledSum`],
/// [`Unspecified::CancelledProduct`]), whose float summation of `n` values errs by at most about
/// `n * eps * sum(|x|)` and a product by `n * eps * prod(|x|)`, whatever the order, so twice that
/// bound (`eps` of the operand's dtype: 2^-23 for F32, 2^-10 for F16) is what two correct
/// backends may differ by; or a quantized round trip ([`Unspecified::Quantized`]), one step of
/// the symmetric 8-bit scale with a margin for the scale's own rounding. `None` for other steps
/// (whose operand is not read) and for int operands, which are exact.
pub fn absolute_floor(step: &Step, flex: &Mirror) -> Option<f64> {
    let Step::Op { op, .. } = step else {
        return None;
    };
    let unspecified = op.unspecified();
    if !matches!(
        unspecified,
        Unspecified::CancelledSum | Unspecified::CancelledProduct | Unspecified::Quantized
    ) {
        return None;
    }
    let data = flex.data(*op.operands().first()?)?;
    if !data.dtype().is_float() {
        return None;
    }
    let xs = values(&data);
    let magnitudes = xs.iter().map(|v| v.abs());
    // Each backend rounds every partial result on the operand's own grid (f32's for a dtype
    // programs do not make).
    let eps = Dtype::from_burn(data.dtype()).map_or(f64::from(f32::EPSILON), Dtype::epsilon);
    let rounding = 2.0 * xs.len() as f64 * eps;
    Some(match unspecified {
        Unspecified::CancelledSum => rounding * magnitudes.sum::<f64>(),
        Unspecified::CancelledProduct => rounding * magnitudes.product::<f64>(),
        _ => 1.01 * magnitudes.fold(0.0, f64::max) / 127.0,
    })
}

/// `data` with bools in Flex's native storage: a value that lived on wgpu holds `Bool(U32)`,
/// which Flex's interpreter cannot take (the catalogued `bool-storage-transfer` bug), and an
/// oracle must judge the graph, not meet that bug again.
pub fn native_bools(data: TensorData) -> TensorData {
    if !non_native_bools(&data) {
        return data;
    }
    let bools: Vec<bool> = values(&data).iter().map(|v| *v != 0.0).collect();
    TensorData::new(bools, data.shape().clone())
}

/// Whether a Flex value holds wgpu's `Bool(U32)` storage (see [`Poison::BoolU32OnFlex`]).
pub fn bool_u32(data: &TensorData) -> bool {
    data.dtype() == DType::Bool(BoolStore::U32)
}

/// Whether `graph` recorded a wgpu bool's `Bool(U32)` bytes as a value, which Flex misreads
/// when it replays the graph (the catalogued bool-storage-transfer bug, met through capture).
pub fn holds_u32_bools(graph: &burn::tensor::CapturedGraph) -> bool {
    graph.values.values().any(bool_u32)
}

#[cfg(test)]
mod tests;
