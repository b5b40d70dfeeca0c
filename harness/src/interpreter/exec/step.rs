//! One step of a run on the real crates: the Burn calls each step kind makes, caught and
//! recorded as its outcome.

use anyhow::{anyhow, Result};
use burn::tensor::{TensorData, Transaction};

use super::{call_device, data_info, empty, on_plain_device, value_info, Mode, Run};
use crate::interpreter::catch::{at_site, catch};
use crate::interpreter::mirror::{kind_of, read_data};
use crate::interpreter::ops::{exec_op, gradient};
use crate::interpreter::pool;
use crate::interpreter::replay::{replay_on_flex, takes_feed};
use crate::interpreter::trace::{Outcome, EXECUTION_ERROR};
use crate::interpreter::value::{map_any, on_any, AnyTensor, Held};
use crate::program::{
    fill_data, op_output, AutodiffMode, DeviceCall, DeviceRef, Dtype, Op, Slot, Step,
};

/// A step's outcome: `Ok(Err(outcome))` ends it early with a non-`Ok` outcome; `Err` only for
/// the harness's own failures.
type Stepped = Result<Result<Outcome, Outcome>>;

/// `$e`'s value, or the step ends with its panic.
macro_rules! caught {
    ($e:expr) => {
        match catch(|| $e) {
            Ok(v) => v,
            Err(panic) => return Ok(Err(Outcome::Panic(panic))),
        }
    };
}

/// The Burn device `$d` names in `$run`'s session, or the step is skipped with why.
macro_rules! device {
    ($run:ident, $d:expr) => {
        match pool::device($d, $run.backends) {
            Ok(d) => d,
            Err(reason) => return Ok(Err(Outcome::skipped(reason))),
        }
    };
}

/// The tensor slot `$s` holds, or the step ends on the empty slot.
macro_rules! operand {
    ($run:ident, $s:expr) => {
        match $run.slot($s) {
            Some(t) => t,
            None => return Ok(Err(empty($s))),
        }
    };
}

impl Run<'_, '_> {
    /// Runs `step` (not a scope's): its outcome; `Err` only for the harness's own failures.
    pub(super) fn step(&mut self, step: &Step) -> Result<Outcome> {
        Ok(match self.step_inner(step)? {
            Ok(outcome) | Err(outcome) => outcome,
        })
    }

    fn step_inner(&mut self, step: &Step) -> Stepped {
        match step {
            Step::Create {
                out,
                kind,
                shape,
                fill,
                device,
                dtype,
            } => {
                let data = fill_data(*kind, *dtype, shape, *fill);
                let device = device!(self, *device);
                let dtype = dtype.map(Dtype::burn);
                let t = caught!(AnyTensor::from_data(*kind, data, &device, dtype));
                Ok(Ok(self.produce(*out, t)))
            }
            Step::EnterScope { .. } | Step::ExitScope { .. } => {
                Err(anyhow!("scope steps are run by `scope`, not `step`"))
            }
            // The switch itself calls nothing: the steps after it run on its thread.
            Step::Thread { .. } => Ok(Ok(Outcome::ok())),
            Step::Op { out, op } => self.op(*out, op),
            Step::ToDevice { out, src, device } => {
                let t = operand!(self, *src);
                let device = device!(self, *device);
                let moved = caught!(map_any!(t, x => x.to_device(&device)));
                Ok(Ok(self.produce(*out, moved)))
            }
            Step::Replay {
                graph,
                feed,
                outputs,
            } => self.replay(*graph, feed, outputs),
            Step::Read { src, fallible } => self.read(*src, *fallible),
            Step::Transaction { srcs, fallible } => self.transaction(srcs, *fallible),
            Step::Clone { out, src } => {
                let t = operand!(self, *src);
                let cloned = caught!(t.clone());
                Ok(Ok(self.produce(*out, cloned)))
            }
            Step::Drop { slot } => {
                let Some(t) = self.slots[usize::from(*slot)].take() else {
                    return Ok(Err(empty(*slot)));
                };
                // The last handle is dropped here, under `catch` (a mirror may share a Flex
                // value, and lets go of it when it follows this step).
                caught!(drop(t));
                Ok(Ok(Outcome::ok()))
            }
            Step::Autodiff { out, src, mode } => {
                let t = operand!(self, *src);
                let converted = caught!(match (mode, t) {
                    (AutodiffMode::RequireGrad, AnyTensor::Float(r)) => AnyTensor::Float(
                        crate::interpreter::value::map_rank!(r, x => x.require_grad())
                    ),
                    (AutodiffMode::Disable, t) => map_any!(t, x => x.without_autodiff()),
                    (_, t) => map_any!(t, x => x.autodiff()),
                });
                Ok(Ok(self.produce(*out, converted)))
            }
            Step::Backward { out, loss, param } => {
                let (loss, param) = (operand!(self, *loss), operand!(self, *param));
                Ok(Ok(match caught!(gradient(loss, &param)) {
                    Ok(Some(grad)) => self.produce(*out, grad),
                    Ok(None) => {
                        self.slots[usize::from(*out)] = None;
                        Outcome::ok()
                    }
                    Err(reason) => return Ok(Err(Outcome::skipped(reason.to_string()))),
                }))
            }
            Step::Device { device, call } => {
                let device = device!(self, *device);
                Ok(Ok(match caught!(call_device(&device, *call)) {
                    Ok(()) => Outcome::ok(),
                    Err(message) => Outcome::Error {
                        error: match call {
                            DeviceCall::IdRoundTrip => "IdRoundTrip".into(),
                            _ => EXECUTION_ERROR.into(),
                        },
                        message,
                    },
                }))
            }
        }
    }

    fn op(&mut self, out: Slot, op: &Op) -> Stepped {
        let types = |s: Slot| self.slot_ref(s).map(AnyTensor::ty);
        if op_output(op, types).is_none() {
            return Ok(Err(Outcome::skipped(
                "operands are missing or do not fit the op",
            )));
        }
        let t = caught!(exec_op(op, |s| self.slot(s)))?;
        let mut value = self.describe(&t);
        // Only a capture tensor can be an operand handed back; asking every result costs a
        // clone of it and of each operand.
        if let Some(v) = value.as_mut().filter(|v| !on_plain_device(v)) {
            v.same_as = self.same_capture_tensor(&t, &op.operands());
        }
        Ok(Ok(self.store(out, t, value)))
    }

    /// Replays graph `graph` on Flex, fed from the slots `feed`, into the slots `outputs`.
    fn replay(&mut self, graph: u8, feed: &[Slot], outputs: &[Slot]) -> Stepped {
        let Some(Some(captured)) = self.graphs.get(usize::from(graph)) else {
            return Ok(Err(Outcome::skipped(format!(
                "graph{graph} was not captured"
            ))));
        };
        let captured = captured.clone();
        // Feeding is best effort: a slot that cannot be read leaves the input at its recorded
        // value. Reads are tested by `Read` steps, not here.
        let feed: Vec<Option<TensorData>> = feed
            .iter()
            .map(|s| at_site("replay feed", || self.slot(*s).and_then(read_data)))
            .collect();
        // What the graph took: data of another shape or dtype leaves the input at its recorded
        // value, and the mirrors must do the same.
        self.fed[self.current] = feed
            .iter()
            .enumerate()
            .map(|(k, d)| d.as_ref().is_some_and(|d| takes_feed(&captured, k, d)))
            .collect();
        let datas = match caught!(replay_on_flex(&captured, &feed)) {
            Ok(datas) => datas,
            Err(e) => {
                return Ok(Err(Outcome::Error {
                    error: e.name().into(),
                    message: e.to_string(),
                }))
            }
        };
        let flex = device!(self, DeviceRef::Flex);
        let mut infos = Vec::new();
        // Every output is loaded before any slot is written: a load that panics (an output
        // Flex's default dtype cannot hold) fails the step, and a failed step writes nothing,
        // as the oracles' models of the run take it.
        let mut loaded = Vec::with_capacity(outputs.len());
        for (i, slot) in outputs.iter().enumerate() {
            let data = datas
                .get(i)
                .filter(|d| (1..=4).contains(&d.shape().num_dims()));
            let Some(data) = data else {
                loaded.push((*slot, None));
                continue;
            };
            let t = caught!(AnyTensor::from_data(
                kind_of(data),
                data.clone(),
                &flex,
                None
            ));
            if self.mode == Mode::Full {
                infos.push(value_info(&t, Some(data)));
            }
            loaded.push((*slot, Some(Held::new(t))));
        }
        for (slot, held) in loaded {
            self.slots[usize::from(slot)] = held;
        }
        Ok(Ok(Outcome::Ok {
            value: None,
            graph: None,
            outputs: infos,
        }))
    }

    fn read(&mut self, src: Slot, fallible: bool) -> Stepped {
        let t = operand!(self, src);
        let read = if fallible {
            caught!(on_any!(t.clone(), x => x.try_into_data()))
        } else {
            Ok(caught!(on_any!(t.clone(), x => x.into_data())))
        };
        Ok(Ok(match read {
            Ok(data) => Outcome::Ok {
                value: (self.mode == Mode::Full).then(|| value_info(&t, Some(&data))),
                graph: None,
                outputs: Vec::new(),
            },
            Err(e) => Outcome::Error {
                error: EXECUTION_ERROR.into(),
                message: e.to_string(),
            },
        }))
    }

    fn transaction(&mut self, srcs: &[Slot], fallible: bool) -> Stepped {
        let mut tensors = Vec::with_capacity(srcs.len());
        for s in srcs {
            tensors.push(operand!(self, *s));
        }
        // Registering hands Burn the tensors, so clones go in and the slots keep theirs.
        let transaction = caught!(tensors
            .iter()
            .cloned()
            .fold(Transaction::default(), |tr, t| t.register_in(tr)));
        let read = if fallible {
            caught!(transaction.try_execute())
        } else {
            Ok(caught!(transaction.execute()))
        };
        Ok(Ok(match read {
            Ok(datas) => Outcome::Ok {
                value: None,
                graph: None,
                // Every answer is recorded, any past the tensors included (described with the
                // last tensor), so the oracles can count them; an empty transaction has no
                // tensor to describe an answer with.
                outputs: match (self.mode, tensors.last()) {
                    (Mode::Full, Some(last)) => datas
                        .iter()
                        .enumerate()
                        .map(|(k, data)| data_info(tensors.get(k).unwrap_or(last), data))
                        .collect(),
                    _ => Vec::new(),
                },
            },
            Err(e) => Outcome::Error {
                error: EXECUTION_ERROR.into(),
                message: e.to_string(),
            },
        }))
    }
}
