//! The interpreter's fault points in a build without `test-hooks`: each leaves its value as it
//! is and compiles to nothing, so no test switch is read on a user's hot path.

use super::value::AnyTensor;
use crate::program::{Op, Slot};

/// No fault is ever planted.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ThreadFaults;

impl ThreadFaults {
    /// Nothing is planted on any thread.
    #[inline(always)]
    pub(super) fn here() -> Self {
        ThreadFaults
    }

    /// Nothing to plant.
    #[inline(always)]
    pub(super) fn plant(self) {}

    /// No race is planted.
    #[inline(always)]
    pub(super) fn racy_scope(self) -> bool {
        false
    }
}

/// Never raised: no race is planted.
pub(super) fn race() -> std::convert::Infallible {
    unreachable!("no race is planted without the test-hooks feature")
}

/// A gradient, as it is.
#[inline(always)]
pub(crate) fn after_gradient(grad: AnyTensor) -> AnyTensor {
    grad
}

/// An op run over the operands a function gives (the interpreter's `exec_op`).
pub(crate) type Exec = fn(&Op, &dyn Fn(Slot) -> Option<AnyTensor>) -> anyhow::Result<AnyTensor>;

/// An op's result, as it is.
#[inline(always)]
pub(crate) fn after_op(
    _op: &Op,
    out: AnyTensor,
    _get: &dyn Fn(Slot) -> Option<AnyTensor>,
    _exec: Exec,
) -> AnyTensor {
    out
}
