//! Wrong Burn results, injected by tests at the op call every path shares.
//!
//! The real run, its capture recording (so the graph and its replay) and every mirror compute an
//! op through the same call, so a result made wrong there is wrong on every path alike: what a
//! bug in dispatch's forwarding or a shared default body looks like. Tests use it to show which
//! oracle sees such a bug (the reference oracle) and which cannot (every comparison of Burn
//! with Burn).

use std::cell::Cell;

use super::value::{map_rank, AnyTensor};
use crate::program::Op;

thread_local! {
    static WRONG_UNARY: Cell<Option<&'static str>> = const { Cell::new(None) };
    static WRONG_GRADIENT: Cell<bool> = const { Cell::new(false) };
    static RACY_SCOPE: Cell<bool> = const { Cell::new(false) };
}

/// The faults planted on a thread, which a threaded program's threads take on from the thread
/// that runs it, so every step of the program meets them.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Planted {
    unary: Option<&'static str>,
    gradient: bool,
    racy_scope: bool,
}

impl Planted {
    /// The faults planted on this thread.
    pub(super) fn here() -> Self {
        Planted {
            unary: WRONG_UNARY.with(Cell::get),
            gradient: WRONG_GRADIENT.with(Cell::get),
            racy_scope: RACY_SCOPE.with(Cell::get),
        }
    }

    /// Plants them on this thread.
    pub(super) fn plant(self) {
        WRONG_UNARY.with(|c| c.set(self.unary));
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

/// `out`, the result of `op`, as the injected fault leaves it.
pub(crate) fn after_op(op: &Op, out: AnyTensor) -> AnyTensor {
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
