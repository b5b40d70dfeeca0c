//! A mirror runs each step of a program again on another device, slot for slot: the eager Flex
//! run that replays are judged against and the wgpu run the differential compares are mirrors.

use burn::tensor::{Device, TensorData};
use burn_backend::{BoolStore, DType};

use super::catch::{attempt, catch, note, note_error};
use super::lockstep::World;
use super::ops::{exec_op, gradient};
use super::pool;
use super::replay::{holds_named_unsupported, recorded_input, replay_on_device, ReplayError};
use super::trace::{Outcome, PanicInfo, EXECUTION_ERROR};
use super::value::{held_in, map_any, map_rank, on_any, AnyTensor, Held};
use crate::program::limits::MAX_SLOTS;
use crate::program::{fill_data, AutodiffMode, Dtype, Kind, Slot, Step};

/// One slot's value as the mirror computed it itself (not copied or adopted): the value, or the
/// panic Burn raised computing it on the mirror's device.
pub struct Computed {
    /// The slot.
    pub slot: Slot,
    /// The value (the mirror's own handle, shared) or the panic.
    pub value: Result<Held, PanicInfo>,
}

/// Per-slot tensors on one device, following a run.
pub struct Mirror {
    device: Device,
    /// Whether a real value already on the mirror's own device (Flex, autodiff or not) is taken
    /// as it is rather than computed again (the eager run: such a value already holds its data).
    /// Values on capture devices and on wgpu are always computed again, so a comparison with
    /// the mirror is always across backends.
    adopt_own: bool,
    /// An adopted value is the real run's own handle, shared.
    slots: Vec<Option<Held>>,
}

impl Mirror {
    /// The eager run on Flex: values already on Flex taken as they are, capture and wgpu steps
    /// computed again on Flex.
    pub fn eager_flex() -> Mirror {
        Mirror {
            device: Device::flex(),
            adopt_own: true,
            slots: vec![None; usize::from(MAX_SLOTS)],
        }
    }

    /// Every value-producing step computed again on `device`.
    pub fn on(device: Device) -> Mirror {
        Mirror {
            device,
            adopt_own: false,
            slots: vec![None; usize::from(MAX_SLOTS)],
        }
    }

    /// The mirror's device.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Whether the mirror holds a tensor in slot `s`.
    pub fn has(&self, s: Slot) -> bool {
        held_in(&self.slots, s).is_some()
    }

    /// The mirror's tensor in slot `s`, if it has one.
    pub fn get(&self, s: Slot) -> Option<AnyTensor> {
        held_in(&self.slots, s).cloned()
    }

    /// The dtype of the mirror's tensor in slot `s`, if it has one.
    pub fn dtype(&self, s: Slot) -> Option<DType> {
        held_in(&self.slots, s).map(AnyTensor::dtype)
    }

    /// The data of the mirror's tensor in slot `s`, when it has one and reading it neither
    /// panics nor errs (see [`read_data`]).
    pub fn data(&self, s: Slot) -> Option<TensorData> {
        held_in(&self.slots, s).and_then(read_copy)
    }

    /// The kind and data of the mirror's tensor in slot `s` ([`Mirror::data`] with its kind).
    pub fn read(&self, s: Slot) -> Option<(Kind, TensorData)> {
        let t = held_in(&self.slots, s)?;
        Some((t.kind(), read_copy(t)?))
    }

    /// Follows step `index`, which just ran with `outcome`, and returns the values the mirror
    /// computed itself. A step that did not succeed changes nothing, except a `Drop` that ran.
    pub fn follow(&mut self, world: &World<'_>, index: usize, outcome: &Outcome) -> Vec<Computed> {
        let step = &world.program().steps[index];
        match (step, outcome) {
            (_, Outcome::Skipped { .. }) => return Vec::new(),
            (Step::Drop { slot }, _) => {
                self.slots[usize::from(*slot)] = None;
                return Vec::new();
            }
            (_, Outcome::Ok { .. }) => {}
            _ => return Vec::new(),
        }
        if self.holds_nothing_new(world, step) {
            return Vec::new();
        }
        let mut computed = Vec::new();
        match step {
            Step::Create {
                out,
                kind,
                shape,
                fill,
                dtype,
                ..
            } => {
                let data = fill_data(*kind, *dtype, shape, *fill);
                let dtype = dtype.map(Dtype::burn);
                computed.push((*out, catch(|| Held::new(self.upload(*kind, data, dtype)))));
            }
            // The operands are taken before the output slot is cleared: a step may write the
            // slot it reads (an argmax into its own operand's slot), as the real run does.
            Step::Op { out, op } => {
                let ready = op.operands().iter().all(|s| self.has(*s));
                let result = ready.then(|| catch(|| exec_op(op, |s| self.get(s))));
                self.slots[usize::from(*out)] = None;
                match result {
                    Some(Ok(Ok(t))) => computed.push((*out, Ok(Held::new(t)))),
                    // The mirror's device may reject what the real one took (Flex refuses
                    // mixed int dtypes that capture records): no value there, not judged.
                    Some(Ok(Err(_))) | None => {}
                    Some(Err(panic)) => computed.push((*out, Err(panic))),
                }
            }
            Step::Backward { out, loss, param } => {
                let operands = self.get(*loss).zip(self.get(*param));
                self.slots[usize::from(*out)] = None;
                if let Some((loss, param)) = operands {
                    match catch(|| gradient(loss, &param)) {
                        Ok(Ok(Some(grad))) => computed.push((*out, Ok(Held::new(grad)))),
                        // No gradient there, or no float operands: nothing to compare.
                        Ok(_) => {}
                        Err(panic) => computed.push((*out, Err(panic))),
                    }
                }
            }
            Step::ToDevice { out, src, .. } | Step::Clone { out, src } => {
                self.slots[usize::from(*out)] = self.slots[usize::from(*src)].clone();
                self.follow_autodiff(world, *out, false);
            }
            Step::Autodiff { out, src, mode } => {
                self.slots[usize::from(*out)] = self.slots[usize::from(*src)].clone();
                self.follow_autodiff(world, *out, *mode == AutodiffMode::RequireGrad);
            }
            Step::Replay {
                graph,
                feed,
                outputs,
            } => self.follow_replay(world, (index, *graph), (feed, outputs), &mut computed),
            Step::Read { .. }
            | Step::Transaction { .. }
            | Step::Drop { .. }
            | Step::EnterScope { .. }
            | Step::ExitScope { .. }
            | Step::Device { .. }
            | Step::Thread { .. } => {}
        }
        // A replay may name one slot for several outputs: the real run keeps the last, so an
        // earlier one is no value of that slot (comparing it gave a false divergence, fuzz
        // --seed 101 with wgpu).
        let last = |k: usize, slot: Slot| !computed[k + 1..].iter().any(|(s, _)| *s == slot);
        let keep: Vec<bool> = computed
            .iter()
            .enumerate()
            .map(|(k, (s, _))| last(k, *s))
            .collect();
        computed
            .into_iter()
            .zip(keep)
            .filter_map(|(c, keep)| keep.then_some(c))
            .map(|(slot, value)| {
                self.slots[usize::from(slot)] = value.as_ref().ok().cloned();
                self.follow_autodiff(world, slot, false);
                Computed { slot, value }
            })
            .collect()
    }

    /// Where the mirror holds nothing new after `step`: every value it wrote adopted from the
    /// real run (a mirror on the real run's own device), or a dtype the mirror's device does not
    /// support (its slots emptied).
    fn holds_nothing_new(&mut self, world: &World<'_>, step: &Step) -> bool {
        let mut adopted_all = true;
        for out in step.writes() {
            match world.held(out).filter(|_| self.adopt_own) {
                Some(real) if on_flex(real) => self.slots[usize::from(out)] = Some(real.clone()),
                None if self.adopt_own => self.slots[usize::from(out)] = None,
                _ => adopted_all = false,
            }
        }
        if adopted_all {
            return true;
        }
        // A dtype the mirror's device says it does not support (wgpu's WGSL path has no 8- or
        // 16-bit ints, so no natively stored 8-bit quantization either): Burn promises nothing
        // for it there, so the mirror holds no value of it and compares none, rather than fail
        // its device's stream on the first kernel.
        // Likewise a replay, on the other backend's mirror, of a graph holding such a dtype
        // that the program named.
        if let Step::Replay { graph, .. } = step {
            let graph = world.graph(*graph);
            if !self.adopt_own
                && graph.is_some_and(|g| holds_named_unsupported(g, &world.program().steps))
            {
                for out in step.writes() {
                    self.slots[usize::from(out)] = None;
                }
                return true;
            }
        }
        if let Some(dtype) = step.named_storage() {
            let supported = match catch(|| self.device.supports_dtype(dtype)) {
                Ok(supported) => supported,
                // Burn's panic answering goes to the run's journal, classified with the rest.
                Err(panic) => {
                    note(panic);
                    false
                }
            };
            if !supported {
                for out in step.writes() {
                    self.slots[usize::from(out)] = None;
                }
                return true;
            }
        }
        false
    }

    /// Replays graph `graph` for step `index` on the mirror's device, fed from the mirror's
    /// values of `feed` as the real run fed them, into `computed`.
    fn follow_replay(
        &mut self,
        world: &World<'_>,
        (index, graph): (usize, u8),
        (feed, outputs): (&[Slot], &[Slot]),
        computed: &mut Vec<(Slot, Result<Held, PanicInfo>)>,
    ) {
        // The feed is read before the outputs are cleared: a replay may write its
        // result into the slot that fed it, as the real run does. An input the real
        // run could not feed (a computed capture tensor has no data) takes its recorded
        // value here too, whatever the mirror computed for that slot.
        let fed = world.fed(index);
        let captured = world.graph(graph);
        // The real run's feed has the recorded dtype (it read the capture tensor, or
        // data loaded to match); the mirror's value of the same slot has its device's
        // default (wgpu's I32 where capture records I64), so it is converted to the
        // recorded dtype, or the replay would drop it and use the recorded value.
        // A slot the real run fed from but the mirror holds no value for (its step did
        // not run there) cannot be fed the same: replaying with the recorded value
        // instead would be another computation, so the mirror computes nothing here.
        let unmirrored = feed
            .iter()
            .enumerate()
            .any(|(k, s)| fed.get(k) == Some(&true) && !self.has(*s));
        let feed: Vec<Option<TensorData>> = feed
            .iter()
            .enumerate()
            .map(|(k, s)| {
                if fed.get(k) != Some(&true) {
                    return None;
                }
                let data = self.data(*s)?;
                let recorded = captured.and_then(|g| Some(recorded_input(g, k)?.dtype));
                Some(match recorded {
                    // Copied only when it changes: the cast consumes the data, and a
                    // cast Burn refuses leaves the data as it was.
                    Some(dtype) if dtype != data.dtype() && same_kind(dtype, data.dtype()) => {
                        data.clone().try_cast(dtype).unwrap_or(data)
                    }
                    _ => data,
                })
            })
            .collect();
        for out in outputs {
            self.slots[usize::from(*out)] = None;
        }
        let Some(captured) = captured.filter(|_| !unmirrored) else {
            return;
        };
        match catch(|| replay_on_device(captured, &feed, &self.device)) {
            Ok(Ok(datas)) => {
                for (slot, data) in outputs.iter().zip(datas) {
                    if (1..=4).contains(&data.shape().num_dims()) {
                        let kind = kind_of(&data);
                        let value = catch(|| Held::new(self.upload(kind, data, None)));
                        computed.push((*slot, value));
                    }
                }
            }
            // A feed value the mirror could not compute (its step failed there): the
            // harness has nothing to replay with, Burn did nothing wrong.
            Ok(Err(ReplayError::MissingInput(_))) => {}
            Ok(Err(e @ ReplayError::Execution(_))) => note_error(e.name(), e.to_string()),
            Err(panic) => {
                if let Some(out) = outputs.first() {
                    computed.push((*out, Err(panic)));
                }
            }
        }
    }

    /// Makes the mirror's value in `slot` autodiff, or not, as the real one is, and tracked
    /// where the step was a `require_grad`, so ops on it record the same autodiff graph and a
    /// `Backward` step has gradients to compare. Values the eager mirror adopts from the real
    /// Flex run already are. A panic doing it goes to the run's journal and leaves the value as
    /// it was.
    fn follow_autodiff(&mut self, world: &World<'_>, slot: Slot, require_grad: bool) {
        let s = usize::from(slot);
        let (Some(real), Some(mine)) = (world.slot_ref(slot), self.slots[s].as_deref()) else {
            return;
        };
        // An adopted value is the real one, autodiff and tracking included.
        if self.adopt_own && on_flex(real) {
            return;
        }
        let (want, have) = (
            on_any!(real, x => x.is_autodiff()),
            on_any!(mine, x => x.is_autodiff()),
        );
        // Most values need nothing: no handle is cloned for them, and nothing runs under catch.
        if want == have && !require_grad {
            return;
        }
        let mine = mine.clone();
        let matched = attempt(|| {
            let mine = match (want, have) {
                (true, false) => map_any!(mine, x => x.autodiff()),
                (false, true) => map_any!(mine, x => x.without_autodiff()),
                _ => mine,
            };
            match mine {
                AnyTensor::Float(r) if require_grad => {
                    AnyTensor::Float(map_rank!(r, x => x.require_grad()))
                }
                other => other,
            }
        });
        if let Some(t) = matched {
            self.slots[s] = Some(Held::new(t));
        }
    }

    /// Drops every tensor the mirror holds; a panic doing it goes to the run's journal.
    pub fn clear(&mut self) {
        let slots = std::mem::take(&mut self.slots);
        attempt(move || drop(slots));
        self.slots.resize(usize::from(MAX_SLOTS), None);
    }

    /// `Tensor::from_data` on the mirror's device. Off Flex, bools go through an int tensor:
    /// wgpu's own `bool_from_data` rejects Flex's native bool storage (the catalogued
    /// `bool-storage-transfer` bug), and a mirror must not stop at a bug that is already known.
    fn upload(&self, kind: Kind, data: TensorData, dtype: Option<DType>) -> AnyTensor {
        if kind != Kind::Bool || pool::placed(&self.device).base == super::Base::Flex {
            return AnyTensor::from_data(kind, data, &self.device, dtype);
        }
        let shape = data.shape().clone();
        let ints: Vec<i32> = data.iter::<bool>().map(i32::from).collect();
        match AnyTensor::from_data(Kind::Int, TensorData::new(ints, shape), &self.device, None) {
            AnyTensor::Int(r) => AnyTensor::Bool(map_rank!(r, x => x.bool())),
            other => other,
        }
    }
}

/// Whether `t` lives on Flex, autodiff or not.
pub fn on_flex(t: &AnyTensor) -> bool {
    pool::is_flex(&t.device())
}

/// The data of `t`, or `None` when reading it panics or errs (either goes to the run's
/// journal, to be judged with the trace).
#[inline(never)]
pub fn read_data(t: AnyTensor) -> Option<TensorData> {
    read_owned(t)
}

/// [`read_data`] of a copy of `t` (a handle's clone is part of reading it): apart from
/// `read_data`, so `ci/bench-ir.sh` counts every read of Burn's values an oracle makes.
#[inline(never)]
pub fn read_copy(t: &AnyTensor) -> Option<TensorData> {
    read_owned(t.clone())
}

#[inline(always)]
fn read_owned(t: AnyTensor) -> Option<TensorData> {
    match attempt(|| t.try_into_data())? {
        Ok(data) => Some(data),
        Err(e) => {
            note_error(EXECUTION_ERROR, e.to_string());
            None
        }
    }
}

/// Whether two dtypes are both floats, both ints or both bools, so converting one to the other
/// keeps the values: a bool in wgpu's `Bool(U32)` or Flex's native storage feeds a graph that
/// recorded `Bool(U8)` as the real run fed it (fuzz --backends flex,capture,wgpu --seed 109:
/// left as it was, the wgpu mirror's feed was refused and its replay used the recorded value).
fn same_kind(a: DType, b: DType) -> bool {
    let int = |d: DType| d.is_int() || d.is_uint();
    (a.is_float() && b.is_float()) || (int(a) && int(b)) || (a.is_bool() && b.is_bool())
}

/// The element kind of `data`.
pub fn kind_of(data: &TensorData) -> Kind {
    let dtype = data.dtype();
    if dtype.is_float() {
        Kind::Float
    } else if dtype.is_bool() {
        Kind::Bool
    } else {
        Kind::Int
    }
}

/// Whether `data` holds bools in a storage other than Flex's native one.
pub fn non_native_bools(data: &TensorData) -> bool {
    data.dtype().is_bool() && data.dtype() != DType::Bool(BoolStore::Native)
}
