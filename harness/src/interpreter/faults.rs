//! Wrong Burn results, injected by tests at the op call every path shares.
//!
//! The real run, its capture recording (so the graph and its replay) and every mirror compute an
//! op through the same call, so a result made wrong there is wrong on every path alike: what a
//! bug in dispatch's forwarding or a shared default body looks like. Tests use it to show which
//! oracle sees such a bug (the reference oracle) and which cannot (every comparison of Burn
//! with Burn).

use std::cell::Cell;

use burn::tensor::TensorData;

use super::value::{map_rank, AnyTensor};
use crate::program::{Op, Slot};

thread_local! {
    static WRONG_UNARY: Cell<Option<&'static str>> = const { Cell::new(None) };
    static WRONG_RESULT: Cell<Option<WrongResult>> = const { Cell::new(None) };
    static WRONG_GRADIENT: Cell<bool> = const { Cell::new(false) };
    static RACY_SCOPE: Cell<bool> = const { Cell::new(false) };
}

/// The faults planted on a thread, which a threaded program's threads take on from the thread
/// that runs it, so every step of the program meets them.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ThreadFaults {
    unary: Option<&'static str>,
    result: Option<WrongResult>,
    gradient: bool,
    racy_scope: bool,
}

impl ThreadFaults {
    /// The faults planted on this thread.
    pub(super) fn here() -> Self {
        ThreadFaults {
            unary: WRONG_UNARY.with(Cell::get),
            result: WRONG_RESULT.with(Cell::get),
            gradient: WRONG_GRADIENT.with(Cell::get),
            racy_scope: RACY_SCOPE.with(Cell::get),
        }
    }

    /// Plants them on this thread.
    pub(super) fn plant(self) {
        WRONG_UNARY.with(|c| c.set(self.unary));
        WRONG_RESULT.with(|c| c.set(self.result));
        WRONG_GRADIENT.with(|c| c.set(self.gradient));
        RACY_SCOPE.with(|c| c.set(self.racy_scope));
    }

    /// Whether a race is planted between a scope's start and the steps of other threads.
    pub(super) fn racy_scope(self) -> bool {
        self.racy_scope
    }
}

/// Plants a race on this thread: a capture scope waits a moment between its start and its
/// registration, and a step that runs meanwhile (on another program thread, which only collide
/// allows) panics, as a registry that a second thread reached half-built would; `false` ends it.
#[doc(hidden)]
pub fn racy_scope_for_tests(on: bool) {
    RACY_SCOPE.with(|c| c.set(on));
}

/// The planted race's panic.
pub(super) fn race() -> std::convert::Infallible {
    panic!("planted race: a step ran while another thread was entering a capture scope")
}

/// Makes every gradient one too large on every device on this thread (a wrong backward
/// formula, which Flex and wgpu share through burn-autodiff); `false` ends it.
#[doc(hidden)]
pub fn wrong_gradient_for_tests(on: bool) {
    WRONG_GRADIENT.with(|c| c.set(on));
}

/// A gradient as the injected fault leaves it.
pub(crate) fn after_gradient(grad: AnyTensor) -> AnyTensor {
    match grad {
        AnyTensor::Float(r) if WRONG_GRADIENT.with(Cell::get) => {
            AnyTensor::Float(map_rank!(r, t => t.add_scalar(1)))
        }
        other => other,
    }
}

/// Makes unary op `op`'s float and int results one too large on every device, capture
/// included, on this thread; `None` ends it.
#[doc(hidden)]
pub fn wrong_unary_for_tests(op: Option<&'static str>) {
    WRONG_UNARY.with(|c| c.set(op));
}

/// A result made wrong by as much as a real bug makes it: for every op named `op`, the value
/// `result` makes of its operands' values and its true result's, on the host (so only an op
/// whose operands and result can be read, outside a capture scope, meets it).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct WrongResult {
    /// The op's name, as [`Op::name`] gives it.
    pub op: &'static str,
    /// The wrong value from the operands' values and the true result.
    pub result: fn(&[TensorData], TensorData) -> TensorData,
    /// Where set, the op runs again (as Burn) over its operands as this makes them from their
    /// position and value (a kernel that skips a channel is the kernel over a zeroed one),
    /// and that is the true result `result` gets.
    pub operands: Option<fn(usize, TensorData) -> TensorData>,
}

impl WrongResult {
    /// The result `result` makes of the true one.
    pub fn of(op: &'static str, result: fn(&[TensorData], TensorData) -> TensorData) -> Self {
        WrongResult {
            op,
            result,
            operands: None,
        }
    }

    /// The op over its operands as `operands` makes them.
    pub fn over(op: &'static str, operands: fn(usize, TensorData) -> TensorData) -> Self {
        WrongResult {
            op,
            result: |_, r| r,
            operands: Some(operands),
        }
    }
}

/// An op run over the operands a function gives (the interpreter's `exec_op`).
pub(crate) type Exec = fn(&Op, &dyn Fn(Slot) -> Option<AnyTensor>) -> anyhow::Result<AnyTensor>;

/// Makes every result of an op wrong as `wrong` says, on every device on this thread; `None`
/// ends it.
#[doc(hidden)]
pub fn wrong_result_for_tests(wrong: Option<WrongResult>) {
    WRONG_RESULT.with(|c| c.set(wrong));
}

/// `out`, the result of `op` over the operands `get` gives, as the injected faults leave it;
/// `exec` runs an op again (the interpreter's own call, handed in so this module imports
/// nothing of it).
pub(crate) fn after_op(
    op: &Op,
    out: AnyTensor,
    get: &dyn Fn(Slot) -> Option<AnyTensor>,
    exec: Exec,
) -> AnyTensor {
    let out = match WRONG_RESULT.with(Cell::get) {
        Some(wrong) if op.name() == wrong.op => {
            let slots = op.operands();
            let operands: Option<Vec<TensorData>> = (slots.iter())
                .map(|s| get(*s).and_then(|t| t.try_into_data().ok()))
                .collect();
            let (kind, device, dtype) = (out.kind(), out.device(), out.dtype());
            let out = match (wrong.operands, &operands) {
                (Some(change), Some(values)) => {
                    // Once, over the changed operands, with the fault lifted meanwhile.
                    let changed: Vec<AnyTensor> = (slots.iter().zip(values).enumerate())
                        .filter_map(|(i, (s, v))| {
                            let t = get(*s)?;
                            let data = change(i, v.clone());
                            Some(AnyTensor::from_data(
                                t.kind(),
                                data,
                                &t.device(),
                                Some(t.dtype()),
                            ))
                        })
                        .collect();
                    let at = |s: Slot| {
                        slots
                            .iter()
                            .position(|o| *o == s)
                            .map(|i| changed[i].clone())
                    };
                    WRONG_RESULT.with(|c| c.set(None));
                    let again = exec(op, &at);
                    WRONG_RESULT.with(|c| c.set(Some(wrong)));
                    again.unwrap_or(out)
                }
                _ => out,
            };
            match (operands, out.clone().try_into_data().ok()) {
                (Some(operands), Some(data)) => {
                    let data = (wrong.result)(&operands, data);
                    AnyTensor::from_data(kind, data, &device, Some(dtype))
                }
                _ => out,
            }
        }
        _ => out,
    };
    let Some(wrong) = WRONG_UNARY.with(Cell::get) else {
        return out;
    };
    match (op, out) {
        (Op::Unary { op, .. }, AnyTensor::Float(r)) if op.name() == wrong => {
            AnyTensor::Float(map_rank!(r, t => t.add_scalar(1)))
        }
        (Op::Unary { op, .. }, AnyTensor::Int(r)) if op.name() == wrong => {
            AnyTensor::Int(map_rank!(r, t => t.add_scalar(1)))
        }
        (_, out) => out,
    }
}
