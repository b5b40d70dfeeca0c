//! The reference oracle: every value a step hands back is judged against the op's definition,
//! computed on host arrays (f64 floats, exact ints, bools) by code that shares nothing with
//! Burn, so a bug on a path every backend shares (dispatch's forwarding, a composite op, a Flex
//! kernel in a CPU-only run) shows too.
//!
//! Each step is judged on the operands Burn itself holds for it (its eager Flex values, read
//! back as host arrays), so the first wrong value is found at the step that made it and no
//! rounding compounds along a chain. The references are tables, one row per op-table entry
//! ([`elementwise`], [`along_dim`], [`module`]) plus the ops outside the tables ([`fixed`]); an
//! entry without one says why, and a value it cannot pin down (a NaN's order, a tie, an
//! overflow of the value's dtype, a random draw) is counted, not compared.

pub mod along_dim;
pub mod bound;
pub mod documented;
pub mod elementwise;
pub mod fixed;
pub mod gradient;
pub mod host;
pub mod module;

use burn::tensor::{BoolStore, DType, TensorData};

use self::host::{Data, Host};
use super::compare::Poison;
use super::naming::{gradient_role, producer_step, writer_step};
use super::taint::Elements;
pub use super::ReferenceCounts;
use super::{
    Backend, BoundTally, Context, Deviation, Facts, Judgement, Oracle, OracleId, Shared, StepFacts,
    Violation,
};
use crate::interpreter::{kind_of, AnyTensor, Outcome, World};
use crate::program::limits::MAX_SLOTS;
use crate::program::{fill_data, Dtype, Kind, Op, Scheme, Step, Tolerance};
use std::collections::BTreeMap;

/// Class of a value Burn computed that its op's definition does not give.
pub const REFERENCE_MISMATCH: &str = "reference-mismatch";

/// Whether op-table entry `name` of `family` (`unary`, `along-dim`, `binary`, `compare`,
/// `scalar`, `module`, as `ops` names them) has a reference (`Err`: why not), as `ops --json`
/// shows it. The ops outside the tables (matmul, sum_dim, argmax, layout, cast, clamp, masks,
/// logic) all have one ([`fixed`]).
pub fn status(family: &str, name: &str) -> Result<(), &'static str> {
    use elementwise::{row, Binary, Unary};
    let none = "no row in the reference table";
    let binary = |table| match row(table, name) {
        Some(Binary::Missing(why)) => Err(why),
        Some(_) => Ok(()),
        None => Err(none),
    };
    match family {
        "unary" => match row(elementwise::UNARY, name) {
            Some(Unary::Missing(why)) => Err(why),
            Some(_) => Ok(()),
            None => Err(none),
        },
        "binary" => binary(elementwise::BINARY),
        "compare" => binary(elementwise::COMPARE),
        "scalar" => binary(elementwise::SCALAR),
        "quantized" => row(elementwise::QUANTIZED, name).map(|_| ()).ok_or(none),
        "along-dim" => match row(along_dim::ALONG_DIM, name) {
            Some(along_dim::Along::Missing(why)) => Err(why),
            Some(_) => Ok(()),
            None => Err(none),
        },
        "module" => match row(module::MODULE, name) {
            Some(module::Module::Missing(why)) => Err(why),
            Some(_) => Ok(()),
            None => Err(none),
        },
        _ => Err("no such op family"),
    }
}

/// The scheme `op`'s reference round-trips its operand through, if it is a quantized round
/// trip (see [`host::quantized`]): its value is judged within one step of the operand's scale.
/// The plain tables' entries quantize with Burn's default scheme.
pub fn quantized_scheme(op: &Op) -> Option<Scheme> {
    use elementwise::row;
    let default = match op {
        Op::Quantized { scheme, .. } => return Some(*scheme),
        Op::Unary { op, .. } => matches!(
            row(elementwise::UNARY, op.name()),
            Some(elementwise::Unary::Quantized(_))
        ),
        Op::AlongDim { op, .. } => matches!(
            row(along_dim::ALONG_DIM, op.name()),
            Some(along_dim::Along::Quantized(_))
        ),
        Op::Module { op, .. } => matches!(
            row(module::MODULE, op.name()),
            Some(module::Module::Quantized)
        ),
        _ => false,
    };
    default.then_some(Scheme::DEFAULT)
}

/// Whether `step` moves a value to the device it is already on (Burn hands the tensor back).
fn moved_within_its_device(world: &World<'_>, step: &Step, facts: &StepFacts<'_>) -> bool {
    let Step::ToDevice { src, .. } = step else {
        return false;
    };
    fn device(outcome: Option<&Outcome>) -> Option<&str> {
        match outcome {
            Some(Outcome::Ok { value: Some(v), .. }) => Some(v.device.as_ref()),
            _ => None,
        }
    }
    let was = writer_step(world, *src, facts.index).and_then(|i| device(world.outcome(i)));
    was.is_some() && was == device(Some(facts.outcome))
}

/// The reference value of `op` over `operands` (host arrays in operand order).
pub fn of_op(op: &Op, operands: &[&Host]) -> Result<Host, &'static str> {
    use elementwise::row;
    let missing = "no row in the reference table";
    let x = operands.first().copied().ok_or("no operand")?;
    let none = "the op takes no operands of these kinds";
    // Every quantized round trip, the plain tables' entries as the quantized op family's: a
    // tensor whose scale no stored scale holds (an F64 past f32::MAX) has no quantization.
    if let Some(scheme) = quantized_scheme(op) {
        host::quantization_step(x, scheme)
            .ok_or("a scale past what the scheme's scale storage holds: the codes clamp")?;
    }
    match op {
        Op::Unary { op, .. } => {
            elementwise::unary(row(elementwise::UNARY, op.name()).ok_or(missing)?, x)
        }
        Op::Binary { op, .. } => elementwise::binary(
            row(elementwise::BINARY, op.name()).ok_or(missing)?,
            x,
            operands.get(1).ok_or("no operand")?,
        ),
        Op::Compare { op, .. } => elementwise::binary(
            row(elementwise::COMPARE, op.name()).ok_or(missing)?,
            x,
            operands.get(1).ok_or("no operand")?,
        ),
        Op::Scalar { op, value, .. } => {
            // The scalar as the executor passes it: an f32 for floats, an i64 for ints, and for
            // a bool comparison true when odd.
            let scalar = match &x.data {
                Data::Float(_) => {
                    Host::float(vec![1; x.shape.len()], vec![Some(f64::from(*value))])
                }
                Data::Int(_) => Host::int(vec![1; x.shape.len()], vec![Some(i128::from(*value))]),
                Data::Bool(_) => Host::bool(vec![1; x.shape.len()], vec![Some(*value % 2 != 0)]),
            };
            elementwise::binary(
                row(elementwise::SCALAR, op.name()).ok_or(missing)?,
                x,
                &scalar,
            )
        }
        Op::Quantized { op, .. } => {
            let layout = row(elementwise::QUANTIZED, op.name()).ok_or(missing)?;
            host::quantized(x, &layout(&x.shape))
        }
        Op::AlongDim { op, dim, .. } => along_dim::along(
            row(along_dim::ALONG_DIM, op.name()).ok_or(missing)?,
            x,
            usize::from(*dim),
        ),
        Op::Module { op, kernel, .. } => module::module(
            row(module::MODULE, op.name()).ok_or(missing)?,
            x,
            crate::program::kernel_size(*kernel),
        ),
        Op::Matmul { transpose_rhs, .. } => {
            fixed::matmul(x, operands.get(1).ok_or("no operand")?, *transpose_rhs).ok_or(none)
        }
        Op::SumDim { dim, .. } => fixed::sum_dim(x, usize::from(*dim)).ok_or(none),
        Op::ArgMax { dim, .. } => fixed::argmax(x, usize::from(*dim)).ok_or(none),
        Op::Reshape { dims, .. } => x
            .reshaped(dims.iter().map(|d| usize::from(*d)).collect())
            .ok_or("the shape holds another number of elements"),
        Op::SwapDims { dim0, dim1, .. } => {
            Ok(fixed::swap_dims(x, usize::from(*dim0), usize::from(*dim1)))
        }
        Op::Slice {
            dim, start, len, ..
        } => Ok(fixed::slice(
            x,
            usize::from(*dim),
            usize::from(*start),
            usize::from(*len),
        )),
        Op::Cat { dim, .. } => fixed::cat(operands, usize::from(*dim)).ok_or(none),
        Op::Cast { to, .. } => fixed::cast(x, *to).ok_or(none),
        Op::Clamp { min, max, .. } => fixed::clamp(x, *min, *max).ok_or(none),
        Op::MaskWhere { .. } => fixed::mask_where(
            x,
            operands.get(1).ok_or("no operand")?,
            operands.get(2).ok_or("no operand")?,
        )
        .ok_or(none),
        Op::MaskFill { value, .. } => {
            fixed::mask_fill(x, operands.get(1).ok_or("no operand")?, *value).ok_or(none)
        }
        Op::Logic { op, .. } => {
            fixed::logic(*op, x, operands.get(1).ok_or("no operand")?).ok_or(none)
        }
        Op::Not { .. } => fixed::not(x).ok_or(none),
    }
}

/// A tensor's data as a host array of the tensor's own kind `kind`: a bool tensor whose data is
/// stored as ints (Flex's U8 from a bool select, a catalogued bug the dtype contract judges) is
/// read by truth, as every op on it reads it.
pub fn host_of(kind: Kind, data: &TensorData) -> Host {
    let shape = data.shape().to_vec();
    match (kind, kind_of(data)) {
        (Kind::Bool, Kind::Bool) => Host::bool(shape, data.iter::<bool>().map(Some).collect()),
        (Kind::Bool, _) => Host::bool(shape, data.iter::<f64>().map(|v| Some(v != 0.0)).collect()),
        // F32, most values: read as a slice, not converted element by element.
        (_, Kind::Float) => match data.as_slice::<f32>() {
            Ok(v) => Host::float(shape, v.iter().map(|x| Some(f64::from(*x))).collect()),
            Err(_) => Host::float(shape, data.iter::<f64>().map(Some).collect()),
        },
        (_, Kind::Int) => Host {
            range: int_range(data.dtype()),
            // A U64 beyond i64's range is no i64: read unsigned as unsigned.
            ..Host::int(
                shape,
                if data.dtype() == DType::U64 {
                    data.iter::<u64>().map(|v| Some(i128::from(v))).collect()
                } else {
                    data.iter::<i64>().map(|v| Some(i128::from(v))).collect()
                },
            )
        },
        (_, Kind::Bool) => Host::bool(shape, data.iter::<bool>().map(Some).collect()),
    }
}

/// One value that differs from its definition: the slot, the element (row-major), the
/// definition's value and Burn's, as [`judge`] prints them (`{:?}` of an f64, an int's digits, a
/// bool). It is the violation's message, and the reproducer asserts it back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The slot the step wrote.
    pub slot: u8,
    /// The element's row-major index.
    pub element: usize,
    /// The definition's value.
    pub expected: String,
    /// Burn's value.
    pub actual: String,
}

impl Mismatch {
    /// The mismatch a violation message of this oracle states (`None` for any other text).
    pub fn parse(message: &str) -> Option<Mismatch> {
        let rest = message.strip_prefix('t')?;
        let (slot, rest) = rest.split_once(" element ")?;
        let (element, rest) = rest.split_once(": the definition gives ")?;
        let (expected, actual) = rest.split_once(", Burn computed ")?;
        Some(Mismatch {
            slot: slot.parse().ok()?,
            element: element.parse().ok()?,
            expected: expected.to_string(),
            actual: actual.to_string(),
        })
    }
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "t{} element {}: the definition gives {}, Burn computed {}",
            self.slot, self.element, self.expected, self.actual
        )
    }
}

/// A tensor's value as a host array, and its dtype.
fn value_of(tensor: &AnyTensor) -> Option<(Host, DType)> {
    let data = crate::interpreter::read_copy(tensor)?;
    Some((host_of(tensor.kind(), &data), data.dtype()))
}

/// Why a value is left open: most reasons are fixed text.
type Why = std::borrow::Cow<'static, str>;

/// A value Burn holds, as read: its data, and its host array, made the first time an op takes
/// it as an operand (most values read are created data and moves, judged by their bytes).
struct Value {
    kind: Kind,
    data: TensorData,
    host: std::cell::OnceCell<Host>,
}

impl Value {
    /// Reads slot `s` of the eager mirror (`None`: no value, or reading it panicked or
    /// erred, which the journal keeps).
    fn read(shared: &Shared, s: u8) -> Option<Value> {
        let (kind, data) = shared.flex.as_ref()?.read(s)?;
        Some(Value::of(kind, data))
    }

    fn of(kind: Kind, data: TensorData) -> Value {
        Value {
            kind,
            data,
            host: std::cell::OnceCell::new(),
        }
    }

    /// Its host array.
    fn host(&self) -> &Host {
        self.host.get_or_init(|| host_of(self.kind, &self.data))
    }
}

/// A value's reference: created data is known as Burn data (equal bytes agree at once;
/// anything else is judged element by element), an op's as a host array.
enum Expected {
    /// Data the program created, of its kind.
    Data(Value),
    /// An op's result, computed on host arrays.
    Host(Host),
}

impl Expected {
    fn host(&self) -> &Host {
        match self {
            Expected::Data(v) => v.host(),
            Expected::Host(h) => h,
        }
    }

    /// The bytes of the data it was given as, if it was.
    fn data(&self) -> Option<&TensorData> {
        match self {
            Expected::Data(v) => Some(&v.data),
            Expected::Host(_) => None,
        }
    }
}

/// The range of an int dtype.
fn int_range(dtype: DType) -> Option<(i128, i128)> {
    Dtype::from_burn(dtype).and_then(Dtype::int_range)
}

/// A float tolerance family's relative and absolute bounds: Burn's `Tolerance` presets, as the
/// differential uses them (an exact or step op must match once both are rounded to f32).
fn bounds(family: Tolerance) -> (f64, f64) {
    match family {
        Tolerance::Exact | Tolerance::Step => (0.0, 0.0),
        Tolerance::Balanced => (5e-3, 1e-5),
        // Counted in units in the last place of the value's dtype instead (`rounded_ulps`).
        Tolerance::Rounded => (0.0, 0.0),
        Tolerance::Transcendental => (1e-2, 1e-2),
    }
}

/// What judging one value found.
enum Judged {
    /// Every known element agrees (how many were known, and how many compared in all).
    Agree(usize),
    /// An element differs: its position, the reference's value and Burn's.
    Differ(usize, String, String),
}

/// [`judge_tallied`] with no tally.
#[cfg(test)]
fn judge(
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
fn judge_tallied(
    expected: &Host,
    actual: &Host,
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
    if expected.shape != actual.shape {
        return Judged::Differ(
            0,
            format!("shape {:?}", expected.shape),
            format!("shape {:?}", actual.shape),
        );
    }
    match (&expected.data, &actual.data) {
        (Data::Float(e), Data::Float(a)) => {
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
        }
        (Data::Int(e), Data::Int(a)) => {
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
        }
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

/// [`judge`] of Burn's value `actual` against `expected`, where equal bytes (created data, a
/// value handed on unchanged) agree without a host array.
fn judge_value(
    expected: &Expected,
    actual: &Value,
    family: Tolerance,
    (absolute, terms, track): (f64, f64, &Track),
    (step, backend, bounds): (&Step, Backend, &mut BTreeMap<String, BoundTally>),
) -> Judged {
    if expected.data() == Some(&actual.data) {
        return Judged::Agree(actual.data.num_elements());
    }
    let derived = track.element_bounds(step, backend, expected.host());
    let (model, elements) = derived.unzip();
    let headroom = match step {
        Step::Op { op, .. } => headroom(op),
        _ => 1.0,
    };
    let name = bound_family(step, model, family);
    if !bounds.contains_key(name) {
        bounds.insert(name.to_string(), BoundTally::default());
    }
    judge_tallied(
        expected.host(),
        actual.host(),
        actual.data.dtype(),
        family,
        Allowance {
            elements: elements.as_deref(),
            absolute,
            headroom,
            terms,
            backend,
        },
        bounds.get_mut(name),
    )
}

/// The name the summary tallies a value's bounds under: its derived `model`'s, else its
/// tolerance family's (a preset), gradients apart.
fn bound_family(step: &Step, model: Option<bound::Model>, family: Tolerance) -> &'static str {
    match (step, model, family) {
        (Step::Backward { .. }, ..) => "gradient (finite differences, preset)",
        (_, Some(bound::Model::Linear), _) => "accumulation (Higham)",
        (_, Some(bound::Model::Variance { .. }), _) => "variance (two-pass, Higham)",
        (_, Some(bound::Model::Library(_)), _) => "math library (measured)",
        (_, Some(bound::Model::Softmax), _) => "softmax (composed)",
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
fn rounded_ulps(backend: Backend, dtype: Dtype) -> (f64, f64) {
    match backend {
        // Half of F64's subnormal spacing is no f64 (it rounds to zero): a whole one there.
        Backend::Flex if dtype == Dtype::F64 => (dtype.epsilon() / 2.0, dtype.tiniest()),
        Backend::Flex => (dtype.epsilon() / 2.0, dtype.tiniest() / 2.0),
        Backend::Wgpu => (3.0 * dtype.epsilon(), dtype.smallest_normal()),
    }
}

/// What an op's value may carry beyond its family's bounds.
#[derive(Clone, Copy)]
struct Allowance<'a> {
    /// Per element, the absolute error the op's arithmetic may make ([`bound::per_element`]),
    /// where its bound is derived: it replaces the family's bounds and `absolute`.
    elements: Option<&'a [f64]>,
    /// The absolute error its accumulation or quantization may add (see
    /// [`Reference::allowance`]).
    absolute: f64,
    /// Its [`headroom`].
    headroom: f64,
    /// For an accumulating op, the magnitude its partial sums may reach ([`Track::scale`]); 0
    /// for the others. Past the dtype's largest value a partial sum may overflow in an order
    /// Burn does not pin down (an average pool's window sum of f32::MAX values is inf before it
    /// is divided): the value is open. And where the definition itself is not finite (an inf
    /// in a window, or inf - inf), which infinity or NaN comes out depends on that order too.
    terms: f64,
    /// The backend that computed the value: a correctly rounded op's bound is its own
    /// ([`rounded_ulps`]).
    backend: Backend,
}

/// How far past its result an entry's formula goes before it comes back to it: an element whose
/// result times this passes the dtype's largest value overflowed on the way in Burn's own
/// dtype (cross_middle is 9x² - x²: over F16, x = -86 gives 8x² = 59168 from 66564, past
/// 65504, so inf; fuzz --seed 0), and is open as a result past the range is.
/// Burn's tanh-approximated gelu computes `(x * (tanh(..) + 1)) * 0.5` (burn-tensor
/// activation/base.rs:120): x doubled before it is halved, inf past f32::MAX / 2 where the
/// definition gives x.
fn headroom(op: &Op) -> f64 {
    match op {
        Op::AlongDim { op, .. } if op.name() == "cross_middle" => 9.0 / 8.0,
        Op::Unary { op, .. } if op.name() == "gelu_approximate" => 2.0,
        _ => 1.0,
    }
}

/// A completed scope's graph on the tape: the nodes of its inputs, then of its outputs.
type GraphNodes = (Vec<Option<usize>>, Vec<Option<usize>>);

/// What one mirror holds, as the reference oracle knows it: per slot, the value Burn holds
/// there, the operands of the later steps judged over it.
struct Track {
    held: Vec<Option<std::rc::Rc<Value>>>,
    /// Per slot, whether Burn's value there is not read yet: a value the oracle leaves open is
    /// read only when a later step takes it as an operand (reading is most of the oracle's
    /// cost, and most open values are never an operand), from the mirror before it follows
    /// that step (which may write the slot it reads).
    unread: [bool; MAX_SLOTS as usize],
}

impl Default for Track {
    fn default() -> Self {
        Track {
            held: vec![None; usize::from(MAX_SLOTS)],
            unread: [false; MAX_SLOTS as usize],
        }
    }
}

/// The reference oracle's state over one run: what the eager Flex mirror holds, and the wgpu
/// mirror where the differential runs (each value judged over its own backend's operands).
pub struct Reference {
    flex: Track,
    /// The wgpu mirror's values.
    on_wgpu: Track,
    /// Where the current step's definition does not pin wgpu's result down, over wgpu's
    /// operands (what the differential leaves open, WGSL's unspecified NaN and overflow cases
    /// included), at which operand elements.
    unpinned_on_wgpu: Option<super::compare::Unpinned>,
    /// Per slot, the known bug that makes what Flex computes from its value garbage, if one
    /// does: a wgpu bool moved to Flex keeps its `Bool(U32)` storage, which Flex misreads (the
    /// catalogued bool-storage-transfer bug), and so does every value computed from it.
    known_bug: Vec<Option<&'static str>>,
    /// Every value the run made, for the gradients' finite differences ([`gradient`]); kept
    /// only in a program with a `backward` step (decided at its first step).
    tape: Option<Vec<gradient::Node>>,
    /// Whether the tape was decided on.
    taped: bool,
    /// Per slot, its current value's node on the tape.
    node: Vec<Option<usize>>,
    /// Per completed scope, by its graph number: the tape nodes of its graph's inputs and
    /// outputs (the declared ones that were capture tensors, in order).
    graphs: std::collections::HashMap<usize, GraphNodes>,
}

impl Default for Reference {
    fn default() -> Self {
        Reference {
            flex: Track::default(),
            on_wgpu: Track::default(),
            unpinned_on_wgpu: None,
            known_bug: vec![None; usize::from(MAX_SLOTS)],
            tape: None,
            taped: false,
            node: vec![None; usize::from(MAX_SLOTS)],
            graphs: std::collections::HashMap::new(),
        }
    }
}

impl Track {
    /// Holds `data` (of kind `kind`), read already, as slot `o`'s value.
    fn hold(&mut self, o: usize, kind: Kind, data: TensorData) {
        self.held[o] = Some(std::rc::Rc::new(Value::of(kind, data)));
        self.unread[o] = false;
    }

    /// Reads the operands `slots` left unread, from `mirror` as it holds them.
    fn read_operands(&mut self, mirror: Option<&crate::interpreter::Mirror>, slots: &[u8]) {
        for &s in slots {
            let i = usize::from(s);
            if std::mem::take(&mut self.unread[i]) {
                self.held[i] = mirror
                    .and_then(|m| m.read(s))
                    .map(|(kind, data)| std::rc::Rc::new(Value::of(kind, data)));
            }
        }
    }

    /// The reference of step `step`'s value for slot `out` over the held operands.
    fn expected(&self, step: &Step) -> Result<Expected, Why> {
        let held = |s: u8| -> Result<&std::rc::Rc<Value>, Why> {
            self.held[usize::from(s)]
                .as_ref()
                .ok_or(Why::Borrowed("an operand Burn holds no readable value for"))
        };
        match step {
            Step::Create {
                kind,
                shape,
                fill,
                dtype,
                ..
            } => Ok(Expected::Data(Value::of(
                *kind,
                fill_data(*kind, *dtype, shape, *fill),
            ))),
            // The mirrors move a value by copying their own handle: comparing the copy with its
            // source would count bytes compared with themselves as judged. Where it lands, the
            // differential and eager-replay compare it.
            Step::ToDevice { .. } | Step::Clone { .. } | Step::Autodiff { .. } => Err(
                "a value moved to another device (the mirror holds a copy of its own operand)"
                    .into(),
            ),
            Step::Op { op, .. } => {
                let operands: Vec<&std::rc::Rc<Value>> = op
                    .operands()
                    .iter()
                    .map(|s| held(*s))
                    .collect::<Result<_, _>>()?;
                if let Some(why) =
                    (operands.first()).and_then(|v| documented::open(op, v.data.dtype()))
                {
                    return Err(Why::Borrowed(why));
                }
                let operands: Vec<&Host> = operands.iter().map(|v| v.host()).collect();
                of_op(op, &operands)
                    .map(Expected::Host)
                    .map_err(Why::Borrowed)
            }
            Step::Replay { .. } => {
                Err("a replayed graph's output (in a run without a tape)".into())
            }
            Step::Backward { .. } => Err("a gradient (in a run without a tape)".into()),
            _ => Err("the step makes no value".into()),
        }
    }

    /// The magnitude of the terms an accumulating step adds up: the largest operand element,
    /// squared for products of two operand values (matmul, convolution, normalization), times
    /// the number of terms an output can sum.
    /// The absolute error step `step`'s float result may carry beyond its family's bounds: for
    /// an accumulating op, the family's relative bound at the scale of its terms (see
    /// [`Track::scale`]); for a quantized round trip, one quantization step of its operand.
    fn allowance(&self, step: &Step, family: Tolerance) -> f64 {
        if let Step::Op { op, .. } = step {
            let operand = op
                .operands()
                .first()
                .and_then(|s| self.held[usize::from(*s)].as_ref());
            if let Some(scheme) = quantized_scheme(op) {
                return operand
                    .and_then(|v| host::quantization_step(v.host(), scheme))
                    .unwrap_or(0.0);
            }
        }
        bounds(family).0 * self.scale(step)
    }

    /// Per element of step `step`'s float result, the absolute error its arithmetic may make
    /// on `backend`, where the op's bound is derived ([`bound::per_element`]), and its model:
    /// `expected` is the reference's value.
    fn element_bounds(
        &self,
        step: &Step,
        backend: Backend,
        expected: &Host,
    ) -> Option<(bound::Model, Vec<f64>)> {
        let Step::Op { op, .. } = step else {
            return None;
        };
        let model = bound::model(op, backend)?;
        let operands: Vec<&Value> = (op.operands().iter())
            .map(|s| self.held[usize::from(*s)].as_deref())
            .collect::<Option<_>>()?;
        let dtype = Dtype::from_burn(operands.first()?.data.dtype())?;
        if dtype.kind() != Kind::Float {
            return None;
        }
        let floor = rounded_ulps(backend, dtype).1;
        let hosts: Vec<&Host> = operands.iter().map(|v| v.host()).collect();
        let bounds = bound::per_element(model, op, &hosts, expected, (dtype, floor))?;
        Some((model, bounds))
    }

    fn scale(&self, step: &Step) -> f64 {
        let Step::Op { op, .. } = step else {
            return 0.0;
        };
        // An op that adds up many terms rounds at the scale of its terms, not of its result,
        // so where they cancel it is judged at that scale (`Op::accumulates`).
        if !op.accumulates() {
            return 0.0;
        }
        let operands: Vec<&Host> = op
            .operands()
            .iter()
            .filter_map(|s| self.held[usize::from(*s)].as_deref().map(Value::host))
            .collect();
        let largest = operands
            .iter()
            .flat_map(|h| h.as_f64())
            .flatten()
            .filter(|v| v.is_finite())
            .fold(0.0f64, |m, v| m.max(v.abs()));
        let terms = operands.iter().map(|h| h.numel()).max().unwrap_or(1);
        op.partial_sum_scale(largest.max(1.0), terms)
    }
}

/// Where a mismatch's float operands lie, as its signature names it: ` holding NaN or inf`,
/// ` holding a value past half its range` (where doubling overflows: a quantization scale, an
/// asinh), or nothing. A bug met only at the range's edge or at a non-finite value is another
/// root cause than one met at ordinary values, so a case stored for one (a quantized flip of
/// f32::MAX) does not make the other known.
/// The edge comes first: an edge fill of `mixed` holds both, and its finite extremes are what
/// overflows.
fn regime<'a>(operands: impl Iterator<Item = &'a Value>) -> &'static str {
    let mut non_finite = false;
    for v in operands {
        let Some(largest) = Dtype::from_burn(v.data.dtype())
            .filter(|d| d.kind() == Kind::Float)
            .map(Dtype::largest)
        else {
            continue;
        };
        for x in v.host().floats().into_iter().flatten().flatten() {
            if x.is_finite() && x.abs() > largest / 2.0 {
                return " holding a value past half its range";
            }
            non_finite |= !x.is_finite();
        }
    }
    if non_finite {
        " holding NaN or inf"
    } else {
        ""
    }
}

/// Whether a value Burn holds is wgpu's bool storage on Flex, which Flex misreads (see
/// [`Reference::known_bug`]).
fn misread_bools(dtype: DType) -> Option<&'static str> {
    (dtype == DType::Bool(BoolStore::U32)).then(|| Poison::BoolU32OnFlex.name())
}

impl Oracle for Reference {
    /// Reads the operands of step `index` left unread, from the mirrors as they held them.
    fn before_mirrors(&mut self, shared: &Shared, world: &World<'_>, index: usize) {
        let reads = world.program().steps[index].reads();
        let fresh: smallvec::SmallVec<[u8; 4]> = (reads.iter().copied())
            .filter(|s| self.flex.unread[usize::from(*s)])
            .collect();
        self.flex.read_operands(shared.flex.as_ref(), &fresh);
        for s in fresh {
            let i = usize::from(s);
            let dtype = self.flex.held[i].as_ref().map(|v| v.data.dtype());
            self.known_bug[i] = self.known_bug[i].or(dtype.and_then(misread_bools));
        }
        if let Some(wgpu) = shared.wgpu.as_ref().filter(|_| !shared.wgpu_failed) {
            self.on_wgpu.read_operands(Some(wgpu), &reads);
            // Over wgpu's own operands, which may hold a NaN or a pole where Flex's hold none
            // (or where Flex holds nothing at all).
            self.unpinned_on_wgpu =
                super::compare::unspecified(&world.program().steps[index], wgpu);
        }
    }

    /// Keeps the tape nodes of the graph's inputs and outputs, for its replays.
    fn scope_completed(
        &mut self,
        _shared: &mut Shared,
        _world: &World<'_>,
        scope: &crate::interpreter::CompletedScope<'_>,
    ) {
        let nodes = |slots: &[(u8, _)]| {
            (slots.iter())
                .map(|(s, _)| self.node[usize::from(*s)])
                .collect()
        };
        let graph = (nodes(scope.inputs), nodes(scope.outputs));
        self.graphs.insert(scope.ordinal, graph);
    }

    fn after_step(&mut self, shared: &mut Shared, world: &World<'_>, facts: &StepFacts<'_>) {
        let step = &world.program().steps[facts.index];
        let writes = step.writes();
        if !std::mem::replace(&mut self.taped, true) {
            let steps = &world.program().steps;
            // The tape also gives a replay's reference: its graph's outputs over the fed data.
            let taped = steps
                .iter()
                .any(|s| matches!(s, Step::Backward { .. } | Step::Replay { .. }));
            self.tape = taped.then(Vec::new);
        }
        let reads = step.reads();
        let ok = matches!(facts.outcome, Outcome::Ok { .. });
        // A replay's outputs: the reference over the data the replay was fed, where it was fed.
        let replayed = match (step, &self.tape) {
            (
                Step::Replay {
                    graph,
                    feed,
                    outputs,
                },
                Some(tape),
            ) if ok => Some(self.replayed(tape, world, facts.index, (*graph, feed, outputs.len()))),
            _ => None,
        };
        // A drop empties its slot, and a clone, an autodiff step or a move within one device
        // hands the same buffer on under another handle: no value Burn computed, so none to
        // judge or count open (the mirror copies its own handle: comparing the copy with its
        // source would count bytes compared with themselves as judged).
        let makes_value = !writes.is_empty()
            && !matches!(
                step,
                Step::Drop { .. } | Step::Clone { .. } | Step::Autodiff { .. }
            )
            && !moved_within_its_device(world, step, facts);
        let expected = (ok && makes_value).then(|| match (step, &self.tape) {
            // A gradient against finite differences over the reference forward of the loss.
            (Step::Backward { loss, param, .. }, Some(tape)) => {
                let at = |s: &u8| self.node[usize::from(*s)].ok_or("an operand not on the tape");
                let grads = at(param)
                    .and_then(|p| Ok((p, at(loss)?)))
                    .and_then(|(p, l)| gradient::gradient(tape, p, l))
                    .map_err(|why| Why::Owned(format!("a gradient: {why}")))?;
                let shape = tape[self.node[usize::from(*param)].unwrap_or_default()]
                    .value()
                    .map(|v| v.shape.clone())
                    .unwrap_or_default();
                Ok(Expected::Host(Host::float(shape, grads)))
            }
            _ => self.flex.expected(step),
        });
        let family = match step {
            Step::Op { op, .. } => bound::family(op),
            // A replayed chain of ops rounds at every op: the transcendental preset, and the
            // balanced one's share of its accumulations' scale.
            Step::Replay { .. } => Tolerance::Transcendental,
            // Burn's f32 chain rule against f64 differences.
            Step::Backward { .. } => Tolerance::Transcendental,
            _ => Tolerance::Exact,
        };
        let (absolute, terms) = if ok {
            (self.flex.allowance(step, family), self.flex.scale(step))
        } else {
            (0.0, 0.0)
        };
        let random = step.draws();
        // A value computed from a known bug's garbage is that bug's, not a new one.
        let inherited = reads
            .iter()
            .find_map(|s| self.known_bug[usize::from(*s)])
            .map(|_| Poison::FromPoisoned.name());
        // A gradient is counted for the op that made the loss: its backward is what it judges.
        let judgement = match step {
            Step::Backward { loss, .. } => {
                producer_step(world, *loss, facts.index).map(|step| Judgement {
                    step,
                    oracle: OracleId::Reference,
                    context: Context::Gradient,
                })
            }
            _ => Some(Judgement {
                step: facts.index,
                oracle: OracleId::Reference,
                context: Context::Eager,
            }),
        };
        let mut now: smallvec::SmallVec<[_; 2]> = smallvec::SmallVec::new();
        let mut differed: smallvec::SmallVec<[u8; 2]> = smallvec::SmallVec::new();
        for &out in writes.iter() {
            // A replay's outputs each have their own reference, with their path's scale; a slot
            // named twice holds the last output written to it.
            let here;
            let last = match step {
                Step::Replay { outputs, .. } => outputs.iter().rposition(|o| *o == out),
                _ => None,
            };
            let mine = replayed.as_ref().zip(last).and_then(|(r, j)| r.get(j));
            let (expected, absolute, terms) = match mine {
                Some(Ok((host, scale))) => {
                    here = Some(Ok(Expected::Host(host.clone())));
                    (&here, bounds(family).0 * scale, *scale)
                }
                Some(Err(why)) => {
                    here = Some(Err(Why::Borrowed(why)));
                    (&here, absolute, terms)
                }
                None => (&expected, absolute, terms),
            };
            // Only a value to judge is read now; the others when an operand (see `unread`).
            let open = match &expected {
                None => None,
                Some(_) if inherited.is_some() => Some(Poison::FromPoisoned.name()),
                Some(Err(why)) => Some(why.as_ref()),
                Some(Ok(_)) if random => Some("random draw"),
                Some(Ok(_)) => None,
            };
            let counts = &mut shared.report.reference;
            if let Some(why) = open {
                counts.count_open(why);
            }
            let judged = matches!(expected, Some(Ok(_))) && inherited.is_none() && !random;
            if !judged {
                now.push((out, None, inherited, true));
                continue;
            }
            let actual = Value::read(shared, out);
            let bug = inherited.or(actual.as_ref().and_then(|v| misread_bools(v.data.dtype())));
            let counts = &mut shared.report.reference;
            match (&expected, &actual) {
                (_, None) => counts.count_open("value not readable"),
                (Some(Ok(e)), Some(a)) => {
                    let allow = (absolute, terms, &self.flex);
                    let at = (step, Backend::Flex, &mut counts.bounds);
                    match judge_value(e, a, family, allow, at) {
                        Judged::Agree(known) if known == 0 && e.host().numel() > 0 => {
                            counts.count_open("every element open")
                        }
                        Judged::Agree(_) => {
                            counts.judged += 1;
                            counts.gradients += usize::from(matches!(step, Step::Backward { .. }));
                            shared.report.judgements.extend(judgement);
                        }
                        Judged::Differ(at, want, got) => {
                            differed.push(out);
                            shared.report.judgements.extend(judgement);
                            let what = match step {
                                Step::Op { op, .. } => op.name(),
                                // A gradient is signed with the op that made the loss.
                                Step::Backward { loss, .. } => {
                                    let op = self.tape.as_ref().zip(self.node[usize::from(*loss)]);
                                    let op = op.and_then(|(t, i)| gradient::op_name(t, i));
                                    format!("backward of {}", op.as_deref().unwrap_or("a non-op"))
                                }
                                other => other.name().to_string(),
                            };
                            // The operands as the step read them: a slot it also wrote (`out`
                            // equal to `src`) holds its result in the mirror by now.
                            let operands: Vec<DType> = reads
                                .iter()
                                .filter_map(|s| match &self.flex.held[usize::from(*s)] {
                                    Some(v) => Some(v.data.dtype()),
                                    None if writes.contains(s) => None,
                                    None => Some(shared.flex.as_ref()?.data(*s)?.dtype()),
                                })
                                .collect();
                            let dtypes = (operands.iter())
                                .map(|d| format!("{d:?}"))
                                .collect::<Vec<_>>()
                                .join(", ");
                            let role = match step {
                                Step::Backward { loss, param, .. } => {
                                    Some(gradient_role(world, *loss, *param, facts.index))
                                }
                                _ => None,
                            };
                            shared.report.violations.push(Violation {
                                role,
                                step: facts.index,
                                class: REFERENCE_MISMATCH.to_string(),
                                summary: format!(
                                    "{what} over ({dtypes}){} differs from its definition",
                                    regime(reads.iter().filter_map(|s| {
                                        self.flex.held[usize::from(*s)].as_deref()
                                    }))
                                ),
                                facts: Facts {
                                    deviation: Deviation::between(
                                        &want,
                                        &got,
                                        Some(a.data.dtype()),
                                    ),
                                    entry: Some(what.clone()),
                                    dtype: operands.first().copied().and_then(Dtype::from_burn),
                                    backend: Some(Backend::Flex),
                                },
                                message: Mismatch {
                                    slot: out,
                                    element: at,
                                    expected: want,
                                    actual: got,
                                }
                                .to_string(),
                                ..Violation::default()
                            });
                        }
                    }
                }
                (_, Some(_)) => {}
            }
            now.push((out, actual.map(std::rc::Rc::new), bug, false));
        }
        let inputs: Vec<Option<usize>> = match &self.tape {
            Some(_) => reads.iter().map(|s| self.node[usize::from(*s)]).collect(),
            None => Vec::new(),
        };
        // The operands of later steps: what Burn holds now in every slot the step wrote.
        for (out, value, bug, unread) in now {
            let o = usize::from(out);
            // A step that failed wrote nothing: the slot still holds its earlier value, and its
            // node (a panicked `require_grad` made no leaf: fuzz --seed 5).
            let kept = !ok && self.node[o].is_some();
            if let Some(tape) = self.tape.as_mut().filter(|_| !kept) {
                // The tape keeps every value's tensor, read again only where a gradient's path
                // needs it (a handle costs less than a copy of the host array): the finite
                // differences take each value off the parameter's path as Burn held it.
                let complete = inputs.iter().all(Option::is_some);
                let inputs = inputs.iter().flatten().copied().collect();
                let handle = shared.flex.as_ref().and_then(|f| f.get(out));
                let node = gradient::Node::new(step, inputs, None, handle, tape);
                // A node with an operand off the tape cannot be evaluated again: an `Other`.
                let node = if complete {
                    node
                } else {
                    gradient::Node::other(node)
                };
                self.node[o] = Some(tape.len());
                tape.push(node);
            }
            self.flex.held[o] = value;
            self.known_bug[o] = bug;
            self.flex.unread[o] = unread;
        }
        if shared.wgpu.is_some() {
            let on = Judging {
                index: facts.index,
                ok,
                random,
                family,
                differed: &differed,
            };
            self.judge_on_wgpu(shared, step, facts, &on);
        }
    }
}

/// What judging one step's wgpu values needs from its eager judging.
struct Judging<'a> {
    index: usize,
    /// Whether the step succeeded.
    ok: bool,
    /// Whether it draws random values.
    random: bool,
    family: Tolerance,
    /// The slots whose eager Flex value differed from its definition.
    differed: &'a [u8],
}

impl Reference {
    /// Per output of the replay at step `index` of graph `graph` fed from `feed`: the
    /// reference over the fed data (each input the real run fed takes the fed slot's value as
    /// Burn held it; one it could not feed keeps its recorded value), and its path's scale.
    fn replayed(
        &self,
        tape: &[gradient::Node],
        world: &World<'_>,
        index: usize,
        (graph, feed, outputs): (u8, &[u8], usize),
    ) -> Vec<Result<(Host, f64), &'static str>> {
        let Some((inputs, outs)) = self.graphs.get(&usize::from(graph)) else {
            return vec![Err("a graph the reference did not see complete"); outputs];
        };
        let fed = world.fed(index);
        let mut given: Vec<(usize, &Host)> = Vec::new();
        for (i, (node, slot)) in inputs.iter().zip(feed).enumerate() {
            let value = self.flex.held[usize::from(*slot)]
                .as_deref()
                .map(Value::host);
            match (node, value) {
                (Some(n), Some(v)) if fed.get(i).copied().unwrap_or(false) => given.push((*n, v)),
                (Some(_), _) if fed.get(i).copied().unwrap_or(false) => {
                    return vec![Err("a fed value Burn holds no readable value for"); outputs];
                }
                _ => {}
            }
        }
        if given.is_empty() {
            return vec![Err("a replay fed nothing (eager-replay compares it)"); outputs];
        }
        let nodes: Option<Vec<usize>> = outs.iter().copied().collect();
        match nodes {
            Some(nodes) if nodes.len() == outputs => gradient::evaluate(tape, &nodes, &given),
            _ => vec![Err("a graph output not on the tape"); outputs],
        }
    }

    /// Judges the values the wgpu mirror computed at a step over the wgpu mirror's own
    /// operands, as the eager Flex ones are judged over Flex's. A value the differential found
    /// diverging, or whose Flex value already differed from its definition, is that finding's
    /// and is not judged again; so what this adds is mostly the wgpu values the differential
    /// could not compare (Flex computed nothing comparable there: a known Flex bug's operand,
    /// a Flex failure).
    fn judge_on_wgpu(
        &mut self,
        shared: &mut Shared,
        step: &Step,
        facts: &StepFacts<'_>,
        on: &Judging<'_>,
    ) {
        let mut read = std::mem::take(&mut shared.wgpu_read);
        // Whatever a step writes, the slot holds what the wgpu mirror holds now.
        for out in step.writes() {
            let o = usize::from(out);
            self.on_wgpu.held[o] = None;
            self.on_wgpu.unread[o] = true;
        }
        if !on.ok || shared.wgpu_failed {
            return;
        }
        if on.random {
            for _ in facts.on_wgpu {
                shared.report.reference.count_open_on_wgpu("random draw");
            }
            return;
        }
        for computed in facts.on_wgpu {
            let (out, o) = (computed.slot, usize::from(computed.slot));
            let Ok(tensor) = &computed.value else {
                continue;
            };
            let stashed = read.iter().position(|(s, _)| *s == out);
            let stashed = stashed.map(|i| read.swap_remove(i).1);
            let diverged = shared.report.violations.iter().any(|v| {
                v.step == on.index
                    && v.class == super::DIVERGENCE
                    && v.message.starts_with(&format!("t{out}:"))
            });
            let expected = match step {
                Step::Backward { .. } => Err(Why::Borrowed(
                    "a gradient on wgpu (the differential compares it with Flex's)",
                )),
                _ if diverged || on.differed.contains(&out) => {
                    Err(Why::Borrowed("a value another finding is about"))
                }
                _ => self.on_wgpu.expected(step),
            };
            let counts = &mut shared.report.reference;
            let expected = match expected {
                Ok(e) => e,
                Err(why) => {
                    counts.count_open_on_wgpu(&why);
                    if let Some(data) = stashed {
                        self.on_wgpu.hold(o, tensor.kind(), data);
                    }
                    continue;
                }
            };
            let data = stashed.or_else(|| {
                crate::interpreter::read_copy(tensor)
                    .map(|d| super::faults::wgpu_value(on.index, d))
            });
            let Some(data) = data else {
                counts.count_open_on_wgpu("value not readable");
                continue;
            };
            let actual = Value::of(tensor.kind(), data);
            let absolute = self.on_wgpu.allowance(step, on.family);
            let terms = self.on_wgpu.scale(step);
            // Left open where the definition does not pin the result down on wgpu.
            let unpinned = self.unpinned_on_wgpu.as_ref().and_then(|u| {
                let shape = actual.data.shape().to_vec();
                let reach = match step {
                    Step::Op { op, .. } => op.reach(),
                    _ => crate::program::Reach::Whole,
                };
                let at = (u.operands.iter().flatten())
                    .map(|at| at.reach(reach, &shape))
                    .reduce(Elements::union)?;
                Some((u.why, at.skips(&shape).map(<[bool]>::to_vec)))
            });
            let expected = match unpinned {
                None => expected,
                Some((why, None)) => {
                    counts.count_open_on_wgpu(why.name());
                    self.on_wgpu.held[o] = Some(std::rc::Rc::new(actual));
                    self.on_wgpu.unread[o] = false;
                    continue;
                }
                Some((_, Some(skip))) => Expected::Host(expected.host().without(&skip)),
            };
            let judged = (step, Backend::Wgpu, &mut counts.bounds);
            let allow = (absolute, terms, &self.on_wgpu);
            match judge_value(&expected, &actual, on.family, allow, judged) {
                Judged::Agree(known) if known == 0 && expected.host().numel() > 0 => {
                    counts.count_open_on_wgpu("every element open")
                }
                Judged::Agree(_) => {
                    counts.on_wgpu += 1;
                    shared.report.judgements.push(Judgement {
                        step: on.index,
                        oracle: OracleId::Reference,
                        context: Context::Wgpu,
                    });
                }
                Judged::Differ(at, want, got) => {
                    shared.report.judgements.push(Judgement {
                        step: on.index,
                        oracle: OracleId::Reference,
                        context: Context::Wgpu,
                    });
                    let operands: Vec<DType> = (step.reads().iter())
                        .filter_map(|s| self.on_wgpu.held[usize::from(*s)].as_ref())
                        .map(|v| v.data.dtype())
                        .collect();
                    let dtypes = (operands.iter())
                        .map(|d| format!("{d:?}"))
                        .collect::<Vec<_>>()
                        .join(", ");
                    let what = match step {
                        Step::Op { op, .. } => op.name(),
                        other => other.name().to_string(),
                    };
                    shared.report.violations.push(Violation {
                        step: on.index,
                        class: REFERENCE_MISMATCH.to_string(),
                        summary: format!(
                            "{what} over ({dtypes}){} on wgpu differs from its definition",
                            regime(
                                step.reads().iter().filter_map(|s| {
                                    self.on_wgpu.held[usize::from(*s)].as_deref()
                                })
                            )
                        ),
                        facts: Facts {
                            deviation: Deviation::between(&want, &got, Some(actual.data.dtype())),
                            entry: Some(what.clone()),
                            dtype: operands.first().copied().and_then(Dtype::from_burn),
                            backend: Some(Backend::Wgpu),
                        },
                        message: Mismatch {
                            slot: out,
                            element: at,
                            expected: want,
                            actual: got,
                        }
                        .to_string(),
                        ..Violation::default()
                    });
                }
            }
            self.on_wgpu.held[o] = Some(std::rc::Rc::new(actual));
            self.on_wgpu.unread[o] = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: Allowance<'static> = Allowance {
        elements: None,
        absolute: 0.0,
        headroom: 1.0,
        terms: 0.0,
        backend: Backend::Flex,
    };

    fn floats(v: &[f64]) -> Host {
        Host::float(vec![v.len()], v.iter().copied().map(Some).collect())
    }

    #[test]
    fn every_op_table_entry_has_a_reference_row_and_at_least_90_percent_have_a_reference() {
        use crate::program::{ALONG_DIM, BINARY, COMPARE, MODULE, SCALAR, UNARY};
        let mut entries: Vec<(&str, &str)> = Vec::new();
        entries.extend(UNARY.iter().map(|s| ("unary", s.name)));
        entries.extend(ALONG_DIM.iter().map(|s| ("along-dim", s.name)));
        entries.extend(BINARY.iter().map(|s| ("binary", s.name)));
        entries.extend(COMPARE.iter().map(|s| ("compare", s.name)));
        entries.extend(SCALAR.iter().map(|s| ("scalar", s.name)));
        entries.extend(MODULE.iter().map(|s| ("module", s.name)));
        let mut missing = Vec::new();
        for (family, name) in &entries {
            match status(family, name) {
                Ok(()) => {}
                Err("no row in the reference table") => panic!("{family} {name} has no row"),
                Err(why) => missing.push(format!("{family} {name}: {why}")),
            }
        }
        let share = 1.0 - missing.len() as f64 / entries.len() as f64;
        eprintln!(
            "{} of {} entries have a reference",
            entries.len() - missing.len(),
            entries.len()
        );
        assert!(share >= 0.9, "{share:.3}: {missing:#?}");
    }

    #[test]
    fn a_mismatch_message_parses_back_to_the_mismatch() {
        let m = Mismatch {
            slot: 2,
            element: 1,
            expected: "6.0".into(),
            actual: "NaN".into(),
        };
        let text = m.to_string();
        assert_eq!(
            text,
            "t2 element 1: the definition gives 6.0, Burn computed NaN"
        );
        assert_eq!(Mismatch::parse(&text), Some(m));
        assert_eq!(Mismatch::parse("the values differ"), None);
    }

    #[test]
    fn partial_sums_past_the_range_are_open_and_a_non_finite_sum_may_be_any_non_finite() {
        // An average pool of two f32::MAX: the window's sum is inf before it is halved.
        let sum = Allowance {
            terms: 2.0 * f64::from(f32::MAX),
            ..PLAIN
        };
        let past = judge(
            &floats(&[3.0e38]),
            &floats(&[f64::INFINITY]),
            DType::F32,
            Tolerance::Balanced,
            sum,
        );
        assert!(matches!(past, Judged::Agree(0)));
        // An inf in a window: inf or NaN, as the order of the sum has it; a finite element is
        // still judged (a NaN spread into a window that holds none differs).
        let window = Allowance {
            terms: 8.0,
            ..PLAIN
        };
        let open = judge(
            &floats(&[f64::INFINITY, 1.0]),
            &floats(&[f64::NAN, 1.0]),
            DType::F32,
            Tolerance::Balanced,
            window,
        );
        assert!(matches!(open, Judged::Agree(1)));
        let spread = judge(
            &floats(&[1.0]),
            &floats(&[f64::NAN]),
            DType::F32,
            Tolerance::Balanced,
            window,
        );
        assert!(matches!(spread, Judged::Differ(0, _, _)));
        // An op that does not accumulate still judges its infinities.
        let plain = judge(
            &floats(&[f64::INFINITY]),
            &floats(&[f64::NAN]),
            DType::F32,
            Tolerance::Balanced,
            PLAIN,
        );
        assert!(matches!(plain, Judged::Differ(0, _, _)));
    }

    #[test]
    fn a_nan_where_the_definition_gives_a_number_differs() {
        let judged = judge(
            &floats(&[1.0, 6.0]),
            &floats(&[1.0, f64::NAN]),
            DType::F32,
            Tolerance::Balanced,
            PLAIN,
        );
        assert!(matches!(judged, Judged::Differ(1, ref e, ref a) if e == "6.0" && a == "NaN"));
    }

    #[test]
    fn a_correctly_rounded_op_is_held_to_half_a_unit_on_flex_and_three_units_on_wgpu() {
        let f32s = |v: f32| floats(&[f64::from(v)]);
        let up = |v: f32, n: u32| f32::from_bits(v.to_bits() + n);
        let on = |backend, want: f32, got: f32, dtype| {
            let allow = Allowance { backend, ..PLAIN };
            matches!(
                judge(&f32s(want), &f32s(got), dtype, Tolerance::Rounded, allow),
                Judged::Agree(1)
            )
        };
        // 10 + 3: the rounded value itself passes on Flex, one unit off does not; nor does a
        // matmul-sized error (1e-4 relative), which the balanced preset's 0.5% lets through.
        assert!(on(Backend::Flex, 13.0, 13.0, DType::F32));
        assert!(!on(Backend::Flex, 13.0, up(13.0, 1), DType::F32));
        assert!(!on(Backend::Flex, 13.0, 13.0013, DType::F32));
        let balanced = judge(
            &f32s(13.0),
            &f32s(13.0013),
            DType::F32,
            Tolerance::Balanced,
            PLAIN,
        );
        assert!(matches!(balanced, Judged::Agree(1)));
        // wgpu: a division within 2.5 units (at 8, where a unit is epsilon times the value),
        // and a flushed subnormal.
        assert!(on(Backend::Wgpu, 8.0, up(8.0, 3), DType::F32));
        assert!(!on(Backend::Wgpu, 8.0, up(8.0, 4), DType::F32));
        assert!(on(Backend::Wgpu, f32::from_bits(5), 0.0, DType::F32));
        assert!(!on(Backend::Flex, f32::from_bits(5), 0.0, DType::F32));
        // A BF16 result one unit (2^-7 at 1) off does not pass on Flex.
        let bf16 = |v: f64| floats(&[v]);
        let flex = Allowance {
            backend: Backend::Flex,
            ..PLAIN
        };
        let same = judge(
            &bf16(1.5),
            &bf16(1.5),
            DType::BF16,
            Tolerance::Rounded,
            flex,
        );
        let one = judge(
            &bf16(1.5),
            &bf16(1.5 + 1.0 / 128.0),
            DType::BF16,
            Tolerance::Rounded,
            flex,
        );
        assert!(matches!(same, Judged::Agree(1)));
        assert!(matches!(one, Judged::Differ(0, _, _)));
    }

    #[test]
    fn an_exact_or_step_op_over_a_coarse_dtype_stays_exact() {
        // A BF16 floor of 64.5 that hands back its operand; the preset widened to two BF16
        // steps (1.0 at 64) let it through.
        let floor = judge(
            &floats(&[64.0]),
            &floats(&[64.5]),
            DType::BF16,
            Tolerance::Step,
            PLAIN,
        );
        assert!(matches!(floor, Judged::Differ(0, _, _)));
        let right = judge(
            &floats(&[64.0]),
            &floats(&[64.0]),
            DType::BF16,
            Tolerance::Step,
            PLAIN,
        );
        assert!(matches!(right, Judged::Agree(1)));
        let f16 = judge(
            &floats(&[3.0]),
            &floats(&[3.0 + 1.0 / 512.0]),
            DType::F16,
            Tolerance::Exact,
            PLAIN,
        );
        assert!(matches!(f16, Judged::Differ(0, _, _)));
    }

    #[test]
    fn values_within_the_family_bounds_agree_and_nans_agree_with_nans() {
        let judged = judge(
            &floats(&[1.0, f64::NAN, f64::INFINITY]),
            &floats(&[1.001, f64::NAN, f64::INFINITY]),
            DType::F32,
            Tolerance::Balanced,
            PLAIN,
        );
        assert!(matches!(judged, Judged::Agree(3)));
        let exact = judge(
            &floats(&[1.0]),
            &floats(&[1.001]),
            DType::F32,
            Tolerance::Exact,
            PLAIN,
        );
        assert!(matches!(exact, Judged::Differ(0, _, _)));
    }

    #[test]
    fn an_int_beyond_its_dtype_and_a_float_beyond_its_dtype_or_its_formulas_headroom_are_left_open()
    {
        let ints = |v: i128| Host::int(vec![1], vec![Some(v)]);
        let over = judge(
            &ints(1 << 40),
            &ints(7),
            DType::I32,
            Tolerance::Exact,
            PLAIN,
        );
        assert!(matches!(over, Judged::Agree(0)));
        let big = judge(
            &floats(&[1e300]),
            &floats(&[f64::INFINITY]),
            DType::F32,
            Tolerance::Exact,
            PLAIN,
        );
        assert!(matches!(big, Judged::Agree(0)));
        // Within F16's range, but not its formula's way there (cross_middle's 9x² for 8x²).
        let f16 = |v: f64| floats(&[v]);
        let on_the_way = Allowance {
            headroom: 9.0 / 8.0,
            ..PLAIN
        };
        let past = judge(
            &f16(59168.0),
            &f16(f64::INFINITY),
            DType::F16,
            Tolerance::Balanced,
            on_the_way,
        );
        assert!(matches!(past, Judged::Agree(0)));
        let within = judge(
            &f16(8.0),
            &f16(f64::INFINITY),
            DType::F16,
            Tolerance::Balanced,
            on_the_way,
        );
        assert!(matches!(within, Judged::Differ(0, _, _)));
    }
}
