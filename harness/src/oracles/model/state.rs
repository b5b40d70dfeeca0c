//! The model's abstract state: where each slot's tensor lives, which scope session holds it,
//! and the moves a step's real outcome makes on it (which step makes which: `predict.rs`).

use super::{produced_autodiff, produced_kind, produced_storage, same_as};
use crate::interpreter::Outcome;
use crate::program::{DeviceRef, Kind, Op, Slot};

/// Where a tensor lives, as far as the lifecycle is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// Flex or wgpu: concrete data, outside the model's subject.
    Plain,
    /// Capture device `device`, handle `id` of session `session`; `value` when it is an
    /// initialized value rather than a computed placeholder.
    Capture {
        device: u8,
        session: usize,
        id: u32,
        value: bool,
    },
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Val {
    pub(super) place: Place,
    pub(super) kind: Option<Kind>,
    /// The storage dtype the run reported (`F16`, `I32`, `I64`, `Bool(Native)`, `Bool(U8)`),
    /// if it did.
    pub(super) storage: Option<&'static str>,
    pub(super) autodiff: bool,
    /// The program left the contract producing it: steps using it are not judged.
    pub(super) unknown: bool,
    /// A fusion alias's own handle id, where the slot holds an alias: capture resolves the
    /// alias to the tensor it names (`place`'s id) in the graph, but `CaptureScope::input`
    /// registers the handle's own id, so an alias and its target are two inputs there that
    /// `complete` then finds duplicated.
    pub(super) alias: Option<u32>,
}

#[derive(Debug, Default)]
pub(super) struct Session {
    pub(super) device: u8,
    pub(super) open: bool,
    pub(super) values: IdSet,
    /// Values that came from another capture device through the bridge.
    pub(super) bridged: IdSet,
    pub(super) produced: IdSet,
    pub(super) referenced: IdSet,
    /// A divergence touched this session: its exit is not judged.
    pub(super) tainted: bool,
}

/// A session's handle ids: a few dozen at most, so a list beats hashing.
#[derive(Debug, Default)]
pub(super) struct IdSet(Vec<u32>);

impl IdSet {
    /// Adds `id`; whether it was new.
    pub(super) fn insert(&mut self, id: u32) -> bool {
        let new = !self.contains(&id);
        if new {
            self.0.push(id);
        }
        new
    }

    pub(super) fn contains(&self, id: &u32) -> bool {
        self.0.contains(id)
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &u32> {
        self.0.iter()
    }
}

#[derive(Default)]
pub(super) struct State {
    pub(super) slots: Vec<Option<Val>>,
    pub(super) sessions: Vec<Session>,
    /// The open sessions' stack, innermost last, one per `EnterScope` (`None` when it failed).
    pub(super) stack: Vec<Option<usize>>,
    pub(super) next_id: u32,
    pub(super) lost: bool,
}

impl State {
    pub(super) fn slot(&self, s: Slot) -> Option<Val> {
        self.slots.get(usize::from(s)).copied().flatten()
    }

    pub(super) fn open_session(&self, device: u8) -> Option<usize> {
        self.stack
            .iter()
            .flatten()
            .copied()
            .find(|k| self.sessions[*k].device == device)
    }

    pub(super) fn fresh(&mut self) -> u32 {
        self.next_id += 1;
        self.next_id
    }
}

impl State {
    /// Puts `val` in slot `out`, unknown where the step was not followed.
    pub(super) fn put(&mut self, unfollowed: bool, out: Slot, mut val: Val) {
        val.unknown |= unfollowed;
        self.slots[usize::from(out)] = Some(val);
    }

    /// A created tensor: a fresh value on a capture device, else plain.
    pub(super) fn apply_create(
        &mut self,
        out: Slot,
        (kind, device): (Kind, DeviceRef),
        outcome: &Outcome,
        unfollowed: bool,
    ) {
        let place = match device {
            DeviceRef::Capture(d) => self.new_value(d),
            _ => Place::Plain,
        };
        let autodiff = produced_autodiff(outcome);
        self.put(
            unfollowed,
            out,
            Val {
                place,
                kind: Some(kind),
                storage: produced_storage(outcome),
                autodiff,
                unknown: false,
                alias: None,
            },
        );
    }

    /// A move: the same value within one capture device, a bridged one between two, a fresh
    /// one onto a capture device, else plain.
    pub(super) fn apply_move(
        &mut self,
        out: Slot,
        device: DeviceRef,
        reads: &[Option<Val>],
        outcome: &Outcome,
        unfollowed: bool,
    ) {
        let Some(src) = reads[0] else { return };
        let place = match (src.place, device) {
            (Place::Capture { device: from, .. }, DeviceRef::Capture(d)) if from == d => src.place,
            (Place::Capture { .. }, DeviceRef::Capture(d)) => self.bridged_value(d),
            (_, DeviceRef::Capture(d)) => self.new_value(d),
            _ => Place::Plain,
        };
        let autodiff = produced_autodiff(outcome);
        // A move onto the same device hands the same handle back; any other makes a
        // new tensor, no alias.
        let alias = src.alias.filter(|_| place == src.place);
        self.put(
            unfollowed,
            out,
            Val {
                place,
                autodiff,
                storage: produced_storage(outcome).or(src.storage),
                alias,
                ..src
            },
        );
    }

    /// An op's result: its operand's own handle for a no-op, an alias for a fusion alias, a
    /// value recorded in the open scope of a capture operand's device, else plain.
    pub(super) fn apply_op(
        &mut self,
        out: Slot,
        op: &Op,
        reads: &[Option<Val>],
        outcome: &Outcome,
        unfollowed: bool,
    ) {
        let kind = produced_kind(outcome);
        // A no-op (`swap_dims(0, 0)`, a same-shape reshape) records nothing and hands
        // the operand back: the slot then holds the operand's own handle.
        if let Some(src) = same_as(outcome).and_then(|s| self.slot(s)) {
            self.put(unfollowed, out, src);
            return;
        }
        // A fusion alias is its operand to capture (an initialized value stays one).
        if let (Op::AlongDim { op, .. }, Some(src)) = (op, reads[0]) {
            if op.spec().aliases_operand() && matches!(outcome, Outcome::Ok { .. }) {
                let alias = Some(self.fresh());
                self.put(unfollowed, out, Val { alias, ..src });
                return;
            }
        }
        let operands: smallvec::SmallVec<[Val; 6]> = reads.iter().flatten().copied().collect();
        let recorder = captures(&operands)
            .find(|c| self.sessions[c.1].open)
            .map(|c| (c.0, c.1))
            // An op the model does not follow that succeeded over stale operands alone
            // recorded in the device's open scope, if any: a composite makes a fresh
            // tensor there first (pad's `full`, then a slice assign of the stale
            // operand into it: fuzz --seed 3).
            .or_else(|| {
                captures(&operands)
                    .filter(|_| unfollowed)
                    .find_map(|c| Some((c.0, self.open_session(c.0)?)))
            });
        let place = match recorder {
            Some((device, session)) => {
                let id = self.fresh();
                let s = &mut self.sessions[session];
                // An op the model did not judge, over a value it no longer follows,
                // may record anything: the session's exit is not judged either.
                s.tainted |= unfollowed;
                s.produced.insert(id);
                s.referenced.insert(id);
                for (_, _, read, _) in captures(&operands) {
                    s.referenced.insert(read);
                }
                Place::Capture {
                    device,
                    session,
                    id,
                    value: false,
                }
            }
            None => Place::Plain,
        };
        let autodiff = produced_autodiff(outcome);
        self.put(
            unfollowed,
            out,
            Val {
                place,
                kind,
                storage: produced_storage(outcome),
                autodiff,
                unknown: false,
                alias: None,
            },
        );
    }

    /// A fresh initialized value in the session open on capture device `d` (the step succeeded,
    /// so one is open unless the model already disagrees with Burn).
    fn new_value(&mut self, d: u8) -> Place {
        self.value(d, false)
    }

    /// A value bridged from another capture device into the session open on `d`.
    fn bridged_value(&mut self, d: u8) -> Place {
        self.value(d, true)
    }

    pub(super) fn value(&mut self, d: u8, bridged: bool) -> Place {
        let id = self.fresh();
        let Some(session) = self.open_session(d) else {
            return Place::Plain;
        };
        let s = &mut self.sessions[session];
        s.values.insert(id);
        if bridged {
            // CaptureBridge stores the data without an `Init` operation.
            s.bridged.insert(id);
        } else {
            // A value enters the graph as an `Init` operation that mentions it, so it is
            // referenced and never produced: a graph input by `GraphIr::classify`.
            s.referenced.insert(id);
        }
        Place::Capture {
            device: d,
            session,
            id,
            value: true,
        }
    }
}

/// The capture-kind operands of a step, with their places.
pub(super) fn captures(vals: &[Val]) -> impl Iterator<Item = (u8, usize, u32, bool)> + '_ {
    vals.iter().filter_map(|v| match v.place {
        Place::Capture {
            device,
            session,
            id,
            value,
        } => Some((device, session, id, value)),
        Place::Plain => None,
    })
}
