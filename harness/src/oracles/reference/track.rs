//! What one mirror holds, as the reference oracle knows it: the value Burn holds per slot,
//! read only when a later step takes it as an operand.

use std::collections::BTreeMap;

use burn::tensor::TensorData;

use super::definition::of_op;
use super::host::Host;
use super::judge::{
    bound_family, bounds, judge_tallied, rounded_ulps, Allowance, Expected, Judged, Value, Why,
};
use super::{bound, documented, host, quantized_scheme};
use crate::oracles::{Backend, BoundTally};
use crate::program::limits::MAX_SLOTS;
use crate::program::{fill_data, Dtype, Kind, Step, Tolerance};

/// A completed scope's graph on the tape: the nodes of its inputs, then of its outputs.
pub(super) type GraphNodes = (Vec<Option<usize>>, Vec<Option<usize>>);

/// What one mirror holds, as the reference oracle knows it: per slot, the value Burn holds
/// there, the operands of the later steps judged over it.
pub(super) struct Track {
    pub(super) held: Vec<Option<std::rc::Rc<Value>>>,
    /// Per slot, whether Burn's value there is not read yet: a value the oracle leaves open is
    /// read only when a later step takes it as an operand (reading is most of the oracle's
    /// cost, and most open values are never an operand), from the mirror before it follows
    /// that step (which may write the slot it reads).
    pub(super) unread: [bool; MAX_SLOTS as usize],
}

impl Default for Track {
    fn default() -> Self {
        Track {
            held: vec![None; usize::from(MAX_SLOTS)],
            unread: [false; MAX_SLOTS as usize],
        }
    }
}

impl Track {
    /// Holds `data` (of kind `kind`), read already, as slot `o`'s value.
    pub(super) fn hold(&mut self, o: usize, kind: Kind, data: TensorData) {
        self.held[o] = Some(std::rc::Rc::new(Value::of(kind, data)));
        self.unread[o] = false;
    }

    /// Reads the operands `slots` left unread, from `mirror` as it holds them.
    pub(super) fn read_operands(
        &mut self,
        mirror: Option<&crate::interpreter::Mirror>,
        slots: &[u8],
    ) {
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
    pub(super) fn expected(&self, step: &Step) -> Result<Expected, Why> {
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
    pub(super) fn allowance(&self, step: &Step, family: Tolerance) -> f64 {
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

    pub(super) fn scale(&self, step: &Step) -> f64 {
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

/// [`judge`] of Burn's value `actual` against `expected`, where equal bytes (created data, a
/// value handed on unchanged) agree without a host array.
pub(super) fn judge_value(
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
        Step::Op { op, .. } => bound::headroom(op),
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
