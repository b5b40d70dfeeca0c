//! How two values of one tensor are compared: per-dtype tolerance from Burn's own `Tolerance`,
//! bools read whatever their storage width, NaN and infinities explicit, and values whose
//! computation Burn does not pin down poisoned and never compared, like wasmtime's
//! `DiffEqResult::Poisoned`.

use burn::tensor::{TensorData, Tolerance};
use burn_backend::{BoolStore, DType};

use crate::interpreter::{non_native_bools, Mirror};
use crate::program::{Kind, Op, Step, Tolerance as OpTolerance, Unspecified};

/// The comparison of one value on both backends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiffEq {
    /// Equal within the dtype's tolerance.
    Equal,
    /// Not comparable: the value depends on behaviour Burn leaves unspecified or on a catalogued
    /// bug (see [`Poison`]); the comparison stops there, and nothing is reported.
    Poisoned(Poison),
    /// A real difference, described with both values.
    Differ(String),
}

/// Why a value is not compared: results Burn does not pin down (so backends may legitimately
/// disagree), or results of a bug that is already catalogued and stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Poison {
    /// `argmax` over a lane holding equal maxima (or a NaN): which index wins is a kernel detail
    /// (Flex takes the first, a parallel GPU reduction may not).
    ArgmaxTie,
    /// A float cast to int where a value is NaN or outside the `i32` range: Burn does not say
    /// what it becomes (Flex saturates to `i32::MAX`, WGSL clamps to the largest `f32` below
    /// 2^31, 2147483520). Also a quantization of a tensor holding a NaN or an infinity, which
    /// casts `x / scale` to int with a non-finite scale.
    OutOfRangeCast,
    /// A Flex value holding wgpu's `Bool(U32)` storage: the catalogued `bool-storage-transfer`
    /// bug, which makes Flex misread it (a wgpu `[true, true]` casts to `[1.0, 0.0]` on Flex).
    BoolU32OnFlex,
    /// The value was computed from a poisoned or already diverged value.
    FromPoisoned,
    /// An index result (argmin, argsort) over a lane holding equal values or a NaN: which of
    /// the equal values it points to is a kernel detail.
    IndexTie,
    /// A cast to bool or a comparison over a NaN: WGSL leaves comparisons with NaN
    /// indeterminate (an implementation may assume NaNs absent), so `NaN.bool()` is `true` on
    /// Flex (IEEE `NaN != 0`) and may be `false` on wgpu.
    NanCompared,
    /// A discontinuous op (floor, sign, a comparison, a cast to int) over an operand Flex and
    /// wgpu computed slightly differently (within tolerance, not bit for bit): its result
    /// legitimately differs at the discontinuity.
    InexactOperand,
    /// A periodic function (sin, cos, tan) of an operand far from zero (see
    /// `Unspecified::Large`): WGSL does not bound its error there.
    LargeArgument,
    /// A hyperbolic function past `exp`'s range (see `Unspecified::Overflow`): WGSL allows it
    /// to overflow to infinity.
    ExpOverflow,
    /// wgpu could not compute or read the value because of a catalogued Burn bug (a kernel
    /// whose shader does not compile): what later ops make of its buffer is that bug again, not
    /// a new divergence (fuzz --backends flex,capture,wgpu --seed 45: a failed fmod's
    /// never-written output concatenated as zeros).
    KnownBug,
    /// Computed from a value whose zeros Flex and wgpu signed differently: Burn does not pin
    /// down the sign of a zero result (Flex's remainder(-13, -13) is -0, as NumPy's; WGSL's
    /// floor-mod formula gives +0), and an op with a pole or a branch cut at zero maps the two
    /// apart (a negative power: -inf on Flex, +inf on wgpu; fuzz --backends flex,capture,wgpu
    /// --seed 105).
    SignedZero,
    /// An op with a pole at zero (see `Unspecified::Pole`) over an operand near zero, or at -1
    /// and 1 (`Unspecified::UnitEdge`) over one near them, where the operands were not
    /// bit-identical on both backends.
    NearPole,
    /// An inverse hyperbolic past its square's range (see `Unspecified::SquareOverflow`).
    SquareOverflow,
    /// A float remainder or fmod of an operand past
    /// [`INEXACT_QUOTIENT`](crate::program::limits::INEXACT_QUOTIENT), where WGSL's formula
    /// rounds the quotient.
    InexactQuotient,
    /// A draw of a device's random generator (see `Unspecified::Random`), or a value computed
    /// from one.
    RandomDraw,
}

impl Poison {
    /// A stable name, for counts in verdicts and reports.
    pub fn name(self) -> &'static str {
        match self {
            Poison::ArgmaxTie => "argmax-tie",
            Poison::OutOfRangeCast => "out-of-range-cast",
            Poison::BoolU32OnFlex => "bool-u32-on-flex",
            Poison::FromPoisoned => "from-poisoned",
            Poison::InexactOperand => "inexact-operand",
            Poison::NanCompared => "nan-compared",
            Poison::IndexTie => "index-tie",
            Poison::LargeArgument => "large-argument",
            Poison::ExpOverflow => "exp-overflow",
            Poison::KnownBug => "known-bug",
            Poison::SignedZero => "signed-zero",
            Poison::NearPole => "near-pole",
            Poison::RandomDraw => "random-draw",
            Poison::SquareOverflow => "square-overflow",
            Poison::InexactQuotient => "inexact-quotient",
        }
    }
}

/// The tolerance for one dtype, from Burn's own `Tolerance` presets: floats use
/// `Tolerance::balanced()` (Burn's default: 0.5% relative, 1e-5 absolute), which absorbs the
/// few-ulp differences between Flex's and a GPU's `exp`/`tanh` and summation order; ints and bools
/// must be exact.
pub fn tolerance_for(data: &TensorData) -> Option<Tolerance<f64>> {
    data.dtype().is_float().then(Tolerance::<f64>::balanced)
}

/// The tolerance for a value an op of family `family` computed, when its operands were
/// bit-identical on both backends (`exact_operands`) or not: `Exact` and `Step` ops add no
/// error of their own, so they must agree bit for bit on identical operands; a `Step` op over
/// inexact ones is poisoned before it gets here ([`Poison::InexactOperand`]). Ints and bools are
/// always exact. `floor` (see [`absolute_floor`]) raises the preset's absolute part (1e-5 for
/// `balanced()`, 0.01 for `permissive()`) where it is wider.
pub fn tolerance_of(
    data: &TensorData,
    family: OpTolerance,
    exact_operands: bool,
    floor: Option<f64>,
) -> Option<Tolerance<f64>> {
    if !data.dtype().is_float() {
        return None;
    }
    let (preset, absolute) = match family {
        OpTolerance::Exact | OpTolerance::Step if exact_operands => return None,
        OpTolerance::Transcendental => (Tolerance::permissive(), 0.01),
        _ => (Tolerance::balanced(), 1e-5),
    };
    Some(match floor {
        Some(floor) if floor > absolute => preset.set_absolute(floor),
        _ => preset,
    })
}

/// Whether two float values of one shape hold, at some position, zeros of opposite signs (they
/// compare equal, but not everything computed from them does).
pub fn zero_signs_differ(a: &TensorData, b: &TensorData) -> bool {
    if !(a.dtype().is_float() && b.dtype().is_float()) || a.shape() != b.shape() {
        return false;
    }
    values(a)
        .into_iter()
        .zip(values(b))
        .any(|(x, y)| x == 0.0 && y == 0.0 && x.is_sign_negative() != y.is_sign_negative())
}

/// Whether `a` and `b` hold the same values bit for bit (NaN equal to NaN), whatever their
/// storage dtypes.
pub fn identical(a: &TensorData, b: &TensorData) -> bool {
    a.shape() == b.shape() && difference_with(a, b, None, ("", "")).is_none()
}

/// Compares `wgpu` with `flex`, unless the value is `poisoned`. Shapes must match; dtypes may
/// differ (each backend has its own default int and bool storage), values may not. NaN equals NaN
/// and same-signed infinities are equal, explicitly: anything else against a NaN or an infinity
/// is a difference.
pub fn compare(flex: &TensorData, wgpu: &TensorData, poisoned: Option<Poison>) -> DiffEq {
    compare_within(flex, wgpu, poisoned, tolerance_for(flex))
}

/// [`compare`] within `tolerance` (exactly, when `None`).
pub fn compare_within(
    flex: &TensorData,
    wgpu: &TensorData,
    poisoned: Option<Poison>,
    tolerance: Option<Tolerance<f64>>,
) -> DiffEq {
    if let Some(why) = poisoned {
        return DiffEq::Poisoned(why);
    }
    match difference_with(wgpu, flex, tolerance, ("wgpu", "flex")) {
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
    if a.shape() != b.shape() {
        return Some(format!(
            "shape {:?} on {}, {:?} on {}",
            a.shape(),
            names.0,
            b.shape(),
            names.1
        ));
    }
    let (xs, ys) = (values(a), values(b));
    let mut first = None;
    let mut count = 0;
    for (i, (x, y)) in xs.iter().zip(&ys).enumerate() {
        let (x, y) = (*x, *y);
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
        first.get_or_insert(format!(
            "position {i}: {x} on {}, {y} on {}",
            names.0, names.1
        ));
    }
    first.map(|first| format!("{count} value(s) differ, first at {first}"))
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

/// Whether casting `data` (a float tensor) to int meets a NaN or a value outside `i32`.
pub fn cast_out_of_range(data: &TensorData) -> bool {
    data.dtype().is_float()
        && values(data)
            .iter()
            .any(|v| v.is_nan() || *v >= 2_147_483_648.0 || *v < -2_147_483_648.0)
}

/// Whether `argmax` over `dim` of `data` meets a tie for the maximum in some lane.
pub fn argmax_has_tie(data: &TensorData, dim: usize) -> bool {
    any_lane(data, dim, |lane| {
        let max = lane.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        lane.iter()
            .filter(|v| **v == max || (v.is_nan() && max.is_nan()))
            .count()
            > 1
            || lane.iter().any(|v| v.is_nan())
    })
}

/// Whether some lane of `data` along `dim` holds two equal values or a NaN: where an index
/// result (argmin, argsort) is not pinned down.
pub fn lane_has_ties(data: &TensorData, dim: usize) -> bool {
    any_lane(data, dim, |lane| {
        let mut sorted = lane.to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted.windows(2).any(|w| w[0] == w[1]) || lane.iter().any(|v| v.is_nan())
    })
}

/// Whether `test` holds for some lane of `data` along `dim`.
fn any_lane(data: &TensorData, dim: usize, test: impl Fn(&[f64]) -> bool) -> bool {
    let shape = data.shape().to_vec();
    let Some(&len) = shape.get(dim) else {
        return false;
    };
    let stride: usize = shape[dim + 1..].iter().product();
    let xs = values(data);
    let lanes = xs.len() / len.max(1);
    (0..lanes).any(|lane| {
        let base = (lane / stride) * stride * len + lane % stride;
        let lane: Vec<f64> = (0..len).map(|k| xs[base + k * stride]).collect();
        test(&lane)
    })
}

/// Why the result of `step` is not pinned down by Burn on its eager operands (read from the
/// eager `flex` mirror before it follows the step), if it is not.
pub fn unspecified(step: &Step, flex: &Mirror) -> Option<Poison> {
    let Step::Op { op, .. } = step else {
        return None;
    };
    let poison = match op {
        Op::ArgMax { .. } => Poison::ArgmaxTie,
        Op::Cast { to: Kind::Int, .. } => Poison::OutOfRangeCast,
        Op::Cast { to: Kind::Bool, .. } => Poison::NanCompared,
        _ => match op.unspecified() {
            Unspecified::None => return None,
            Unspecified::Nan => Poison::NanCompared,
            Unspecified::Pole | Unspecified::UnitEdge => Poison::NearPole,
            // Past an inexact quotient the result is open whatever the operands; short of it,
            // the differential decides, knowing whether the operands were identical.
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
                return Some(if huge {
                    Poison::InexactQuotient
                } else {
                    Poison::InexactOperand
                });
            }
            Unspecified::Ties => Poison::IndexTie,
            Unspecified::Large => Poison::LargeArgument,
            Unspecified::Overflow => Poison::ExpOverflow,
            Unspecified::SquareOverflow => Poison::SquareOverflow,
            // Judged within a wider tolerance instead (`absolute_floor`).
            Unspecified::CancelledSum | Unspecified::CancelledProduct => return None,
            // Likewise, but for a non-finite operand: quantizing casts x / scale to int, and a
            // NaN or infinite value makes the scale and every cast unspecified (an all-NaN
            // tensor dequantizes to 0 on Flex, NaN on wgpu: fuzz --seed 105 with wgpu).
            Unspecified::Quantized => Poison::OutOfRangeCast,
            // Whatever the operands: the values are a draw.
            Unspecified::Random => return Some(Poison::RandomDraw),
        },
    };
    for src in op.operands() {
        let Some(data) = flex.data(src) else {
            return Some(poison);
        };
        let unspecified = match (op, poison) {
            (Op::ArgMax { dim, .. }, _) => argmax_has_tie(&data, usize::from(*dim)),
            (Op::AlongDim { dim, .. }, Poison::IndexTie) => lane_has_ties(&data, usize::from(*dim)),
            // A pooling window's argmax: any two equal values (or a NaN) may share a window.
            (Op::Module { .. }, Poison::IndexTie) => {
                let mut xs = values(&data);
                xs.sort_by(f64::total_cmp);
                xs.iter().any(|v| v.is_nan()) || xs.windows(2).any(|w| w[0] == w[1])
            }
            (_, Poison::NanCompared) => values(&data).iter().any(|v| v.is_nan()),
            (_, Poison::NearPole) if op.unspecified() == Unspecified::UnitEdge => values(&data)
                .iter()
                .any(|v| (v.abs() - 1.0).abs() <= crate::program::limits::POLE_NEIGHBOURHOOD),
            (_, Poison::NearPole) => values(&data)
                .iter()
                .any(|v| v.abs() <= crate::program::limits::POLE_NEIGHBOURHOOD),
            (_, Poison::OutOfRangeCast) if op.unspecified() == Unspecified::Quantized => {
                values(&data).iter().any(|v| !v.is_finite())
            }
            (_, Poison::LargeArgument) => values(&data)
                .iter()
                .any(|v| v.abs() > crate::program::limits::LARGE_ARGUMENT),
            (_, Poison::ExpOverflow) => values(&data)
                .iter()
                .any(|v| v.abs() > crate::program::limits::EXP_OVERFLOW),
            (_, Poison::SquareOverflow) => values(&data)
                .iter()
                .any(|v| v.abs() > crate::program::limits::SQUARE_OVERFLOW),
            _ => cast_out_of_range(&data),
        };
        if unspecified {
            return Some(poison);
        }
    }
    None
}

/// The absolute tolerance a step's float result needs beyond its family's, from its eager
/// operand, where its entry says so: a cancelled reduction ([`Unspecified::CancelledSum`],
/// [`Unspecified::CancelledProduct`]), whose float summation of `n` values errs by at most about
/// `n * eps * sum(|x|)` and a product by `n * eps * prod(|x|)`, whatever the order, so twice that
/// bound (f32's `eps`, 2^-23) is what two correct backends may differ by; or a quantized round
/// trip ([`Unspecified::Quantized`]), one step of the symmetric 8-bit scale with a margin for the
/// scale's own rounding. `None` for other steps (whose operand is not read) and for int
/// operands, which are exact.
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
    let rounding = 2.0 * xs.len() as f64 * f64::from(f32::EPSILON);
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
mod tests {
    use super::*;

    #[test]
    fn float_values_within_balanced_tolerance_are_equal() {
        let a = TensorData::new(vec![1.0f32, 2.0, f32::NAN, f32::INFINITY], [4]);
        let b = TensorData::new(vec![1.000_001f32, 2.0, f32::NAN, f32::INFINITY], [4]);
        assert_eq!(compare(&a, &b, None), DiffEq::Equal);
    }

    #[test]
    fn nan_against_a_number_and_opposite_infinities_differ() {
        let a = TensorData::new(vec![f32::NAN, f32::INFINITY], [2]);
        let b = TensorData::new(vec![0.0f32, f32::NEG_INFINITY], [2]);
        assert!(matches!(compare(&a, &b, None), DiffEq::Differ(d) if d.starts_with("2 value(s)")));
    }

    #[test]
    fn ints_must_match_exactly_whatever_their_width() {
        let a = TensorData::new(vec![1i32, 2], [2]);
        let b = TensorData::new(vec![1i64, 2], [2]);
        assert_eq!(compare(&a, &b, None), DiffEq::Equal);
        let c = TensorData::new(vec![1i64, 3], [2]);
        assert!(matches!(compare(&a, &c, None), DiffEq::Differ(_)));
    }

    #[test]
    fn a_poisoned_value_is_never_compared() {
        let a = TensorData::new(vec![0i64], [1]);
        let b = TensorData::new(vec![1i64], [1]);
        let poisoned = Some(Poison::ArgmaxTie);
        assert_eq!(
            compare(&a, &b, poisoned),
            DiffEq::Poisoned(Poison::ArgmaxTie)
        );
    }

    #[test]
    fn float_to_int_casts_out_of_i32_range_are_found() {
        let inside = TensorData::new(vec![2_147_483_520.0f32, -5.0], [2]);
        let outside = TensorData::new(vec![1.0f32, 8.66e16], [2]);
        let nan = TensorData::new(vec![f32::NAN], [1]);
        assert!(!cast_out_of_range(&inside));
        assert!(cast_out_of_range(&outside) && cast_out_of_range(&nan));
    }

    #[test]
    fn ties_are_found_per_lane() {
        let data = TensorData::new(vec![1.0f32, 2.0, 3.0, 3.0], [2, 2]);
        assert!(!argmax_has_tie(&data, 0));
        assert!(argmax_has_tie(&data, 1));
    }
}
