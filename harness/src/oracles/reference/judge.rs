//! Judging one value against its reference: the value Burn holds as read, what its definition
//! gives, and the bound it is held to (a derived model's, or a tolerance family's).

use burn::tensor::{DType, TensorData};

use super::definition::{host_of, int_range};
use super::host::{Data, Host};
use super::{bound, host};
use crate::interpreter::AnyTensor;
use crate::oracles::{Backend, BoundTally, Shared};
use crate::program::{Dtype, Kind, Step, Tolerance};

/// A tensor's value as a host array, and its dtype.
pub(super) fn value_of(tensor: &AnyTensor) -> Option<(Host, DType)> {
    let data = crate::interpreter::read_copy(tensor)?;
    Some((host_of(tensor.kind(), &data), data.dtype()))
}

/// Why a value is left open: most reasons are fixed text.
pub(super) type Why = std::borrow::Cow<'static, str>;

/// A value Burn holds, as read: its data, and its host array, made the first time an op takes
/// it as an operand (most values read are created data and moves, judged by their bytes).
pub(super) struct Value {
    pub(super) kind: Kind,
    pub(super) data: TensorData,
    pub(super) host: std::cell::OnceCell<Host>,
}

impl Value {
    /// Reads slot `s` of the eager mirror (`None`: no value, or reading it panicked or
    /// erred, which the journal keeps).
    pub(super) fn read(shared: &Shared, s: u8) -> Option<Value> {
        let (kind, data) = shared.flex.as_ref()?.read(s)?;
        Some(Value::of(kind, data))
    }

    pub(super) fn of(kind: Kind, data: TensorData) -> Value {
        Value {
            kind,
            data,
            host: std::cell::OnceCell::new(),
        }
    }

    /// Its host array.
    pub(super) fn host(&self) -> &Host {
        self.host.get_or_init(|| host_of(self.kind, &self.data))
    }
}

/// A value's reference: created data is known as Burn data (equal bytes agree at once;
/// anything else is judged element by element), an op's as a host array.
pub(super) enum Expected {
    /// Data the program created, of its kind.
    Data(Value),
    /// An op's result, computed on host arrays.
    Host(Host),
}

impl Expected {
    pub(super) fn host(&self) -> &Host {
        match self {
            Expected::Data(v) => v.host(),
            Expected::Host(h) => h,
        }
    }

    /// The bytes of the data it was given as, if it was.
    pub(super) fn data(&self) -> Option<&TensorData> {
        match self {
            Expected::Data(v) => Some(&v.data),
            Expected::Host(_) => None,
        }
    }
}

/// A float tolerance family's relative and absolute bounds: Burn's `Tolerance` presets, as the
/// differential uses them (an exact or step op must match once both are rounded to f32).
pub(super) fn bounds(family: Tolerance) -> (f64, f64) {
    match family {
        Tolerance::Exact | Tolerance::Step => (0.0, 0.0),
        Tolerance::Balanced => (5e-3, 1e-5),
        // Counted in units in the last place of the value's dtype instead (`rounded_ulps`).
        Tolerance::Rounded => (0.0, 0.0),
        Tolerance::Transcendental => (1e-2, 1e-2),
    }
}

/// What judging one value found.
pub(super) enum Judged {
    /// Every known element agrees (how many were known, and how many compared in all).
    Agree(usize),
    /// An element differs: its position, the reference's value and Burn's.
    Differ(usize, String, String),
}

/// [`judge_tallied`] with no tally.
#[cfg(test)]
pub(super) fn judge(
    expected: &Host,
    actual: &Host,
    dtype: DType,
    family: Tolerance,
    allow: Allowance,
) -> Judged {
    judge_tallied(expected, actual, dtype, family, allow, None)
}

/// Judges Burn's value `actual` (dtype `dtype`) against `expected` under `family`; `absolute` is
/// what the op may carry beyond its family's bounds. Each float element judged counts its bound
/// in units in the last place into `tally`.
pub(super) fn judge_tallied(
    expected: &Host,
    actual: &Host,
    dtype: DType,
    family: Tolerance,
    allow: Allowance,
    tally: Option<&mut BoundTally>,
) -> Judged {
    let mut known = 0;
    if expected.shape != actual.shape {
        return Judged::Differ(
            0,
            format!("shape {:?}", expected.shape),
            format!("shape {:?}", actual.shape),
        );
    }
    match (&expected.data, &actual.data) {
        (Data::Float(e), Data::Float(a)) => {
            return judge_floats((e, a), dtype, family, allow, tally)
        }
        (Data::Int(e), Data::Int(a)) => return judge_ints((e, a), dtype),
        // Bools stored as ints (Flex's U8 from a bool select, a catalogued bug the dtype contract
        // judges) are judged by their truth.
        (Data::Bool(e), Data::Int(a)) => {
            for (i, (e, a)) in e.iter().zip(a).enumerate() {
                let (Some(e), Some(a)) = (*e, *a) else {
                    continue;
                };
                known += 1;
                if e != (a != 0) {
                    return Judged::Differ(i, e.to_string(), a.to_string());
                }
            }
        }
        (Data::Bool(e), Data::Bool(a)) => {
            for (i, (e, a)) in e.iter().zip(a).enumerate() {
                let (Some(e), Some(a)) = (*e, *a) else {
                    continue;
                };
                known += 1;
                if e != a {
                    return Judged::Differ(i, e.to_string(), a.to_string());
                }
            }
        }
        _ => {
            return Judged::Differ(0, "another kind".into(), "this kind".into());
        }
    }
    Judged::Agree(known)
}

/// [`judge_tallied`] over float elements.
fn judge_floats(
    (e, a): (&[Option<f64>], &[Option<f64>]),
    dtype: DType,
    family: Tolerance,
    allow: Allowance,
    mut tally: Option<&mut BoundTally>,
) -> Judged {
    let Allowance {
        elements,
        absolute,
        headroom,
        terms,
        backend,
    } = allow;
    let (rel, abs) = bounds(family);
    let mut known = 0;
    // The reference rounds as Burn stores the value's dtype (F32 unless the program
    // names another). A dtype coarser than f32 rounds each of the op's steps on its own
    // grid: its bounds widen to one step of that grid (its epsilon, and its tiniest gap
    // near zero), and so does the accumulation allowance, in proportion.
    let dtype = Dtype::from_burn(dtype).unwrap_or(Dtype::F32);
    let coarse = dtype.epsilon() > Dtype::F32.epsilon();
    let (rel, abs, absolute) = if family == Tolerance::Rounded {
        let (rel, floor) = rounded_ulps(backend, dtype);
        (rel, floor, absolute)
    } else if coarse && rel > 0.0 {
        // An exact or step op's result is a value of the dtype whatever grid it was
        // computed on (a BF16 floor of 64.5 is 64): it stays exact.
        let widened = rel.max(dtype.epsilon()) + dtype.epsilon();
        (widened, abs.max(dtype.tiniest()), absolute * widened / rel)
    } else {
        (rel, abs, absolute)
    };
    let largest = dtype.largest();
    if terms > largest {
        return Judged::Agree(0);
    }
    for (i, (e, a)) in e.iter().zip(a).enumerate() {
        let (Some(e), Some(a)) = (*e, *a) else {
            continue;
        };
        if terms > 0.0 && !e.is_finite() && !a.is_finite() {
            continue;
        }
        // Beyond the dtype's range Burn's arithmetic overflows somewhere along the op's
        // formula, to an infinity or, where two overflows meet, a NaN: not pinned down.
        // (An F64 result is the reference's own f64, never past the range; its way
        // there, the headroom, may be.)
        if e.is_finite() && e.abs() * headroom > largest {
            continue;
        }
        // A derived bound (the roundings to the dtype included); the reference's own
        // f64 arithmetic errs as much as an F64 result may, so that bound counts twice.
        let (abs, absolute, rel) = match elements.map(|b| b[i]) {
            Some(b) if !b.is_finite() => continue,
            Some(b) if dtype == Dtype::F64 => (0.0, 2.0 * b, 0.0),
            Some(b) => (0.0, b, 0.0),
            None => (abs, absolute, rel),
        };
        known += 1;
        let e = host::as_stored(dtype, e);
        let allowed = abs.max(absolute) + rel * e.abs().max(a.abs());
        // F32 elements only (the dtype the bounds are measured for); a zero has no
        // magnitude to count units of.
        let counted = dtype == Dtype::F32 && e.is_finite() && e != 0.0;
        if let Some(tally) = tally.as_deref_mut().filter(|_| counted) {
            tally.add(allowed / bound::ulp(dtype, e));
        }
        let same = (e.is_nan() && a.is_nan())
            || e == a
            || (e.is_finite() && a.is_finite() && (e - a).abs() <= allowed);
        if !same {
            return Judged::Differ(i, format!("{e:?}"), format!("{a:?}"));
        }
    }
    Judged::Agree(known)
}

/// [`judge_tallied`] over int elements: exact, where the definition's value is in the dtype.
fn judge_ints((e, a): (&[Option<i128>], &[Option<i128>]), dtype: DType) -> Judged {
    let mut known = 0;
    let range = int_range(dtype);
    for (i, (e, a)) in e.iter().zip(a).enumerate() {
        let (Some(e), Some(a)) = (*e, *a) else {
            continue;
        };
        // A result outside the dtype: Burn pins no overflow down.
        if range.is_some_and(|(lo, hi)| e < lo || e > hi) {
            continue;
        }
        known += 1;
        if e != a {
            return Judged::Differ(i, e.to_string(), a.to_string());
        }
    }
    Judged::Agree(known)
}

/// The name the summary tallies a value's bounds under: its derived `model`'s, else its
/// tolerance family's (a preset), gradients apart.
pub(super) fn bound_family(
    step: &Step,
    model: Option<bound::Model>,
    family: Tolerance,
) -> &'static str {
    match (step, model, family) {
        (Step::Backward { .. }, ..) => crate::oracles::GRADIENT_BOUNDS,
        (_, Some(bound::Model::Linear(_)), _) => "accumulation (Higham)",
        (_, Some(bound::Model::Variance { .. }), _) => "variance (two-pass, Higham)",
        (_, Some(bound::Model::Library(_)), _) => "math library (measured)",
        (_, Some(bound::Model::Softmax { .. }), _) => "softmax (composed)",
        (_, Some(bound::Model::Attention { .. }), _) => "attention (composed)",
        (_, Some(bound::Model::LogSoftmax), _) => "log_softmax (composed)",
        (_, Some(bound::Model::Composite(_)), _) => "composed (activations, a cross product)",
        (_, Some(bound::Model::Quantized), _) => "quantization (interval)",
        (_, Some(bound::Model::Product(_)), _) => "product (Higham)",
        (_, Some(bound::Model::MinusSum { .. }), _) => "accumulation (Higham)",
        (.., Tolerance::Rounded) => "correctly rounded",
        (.., Tolerance::Exact) => "exact",
        (.., Tolerance::Step) => "step",
        (.., Tolerance::Balanced) => "balanced (preset)",
        (.., Tolerance::Transcendental) => "transcendental (preset)",
    }
}

/// How far from the exact result rounded to `dtype` a correctly rounded op's value may be, as
/// a relative bound (units in the last place times the dtype's epsilon, which bounds a unit at
/// the value's magnitude from above) and an absolute floor near zero. On Flex half a unit, so
/// the values must be equal: Rust's IEEE 754 arithmetic rounds once, and where Burn computes a
/// half type in f32 and rounds again, or the reference divides in f64 before its rounding to
/// the dtype, the double rounding is innocuous (the wider format has at least 2p + 2 bits for
/// a p-bit result: Figueroa, "When is double rounding innocuous?", 1995). On wgpu three units:
/// WGSL rounds add, sub and mul correctly and divides within 2.5 units; the device may flush a
/// subnormal result to zero, so the floor is the smallest normal value.
pub fn rounded_ulps(backend: Backend, dtype: Dtype) -> (f64, f64) {
    match backend {
        // Half of F64's subnormal spacing is no f64 (it rounds to zero): a whole one there.
        Backend::Flex if dtype == Dtype::F64 => (dtype.epsilon() / 2.0, dtype.tiniest()),
        Backend::Flex => (dtype.epsilon() / 2.0, dtype.tiniest() / 2.0),
        Backend::Wgpu => (3.0 * dtype.epsilon(), dtype.smallest_normal()),
    }
}

/// What an op's value may carry beyond its family's bounds.
#[derive(Clone, Copy)]
pub(super) struct Allowance<'a> {
    /// Per element, the absolute error the op's arithmetic may make ([`bound::per_element`]),
    /// where its bound is derived: it replaces the family's bounds and `absolute`.
    pub(super) elements: Option<&'a [f64]>,
    /// The absolute error its accumulation or quantization may add (see
    /// [`Reference::allowance`]).
    pub(super) absolute: f64,
    /// Its headroom ([`bound::headroom`]).
    pub(super) headroom: f64,
    /// For an accumulating op, the magnitude its partial sums may reach ([`Track::scale`]); 0
    /// for the others. Past the dtype's largest value a partial sum may overflow in an order
    /// Burn does not pin down (an average pool's window sum of f32::MAX values is inf before it
    /// is divided): the value is open. And where the definition itself is not finite (an inf
    /// in a window, or inf - inf), which infinity or NaN comes out depends on that order too.
    pub(super) terms: f64,
    /// The backend that computed the value: a correctly rounded op's bound is its own
    /// ([`rounded_ulps`]).
    pub(super) backend: Backend,
}
