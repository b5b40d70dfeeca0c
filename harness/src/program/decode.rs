//! Fuzzer bytes to a [`Program`]: a swarm mask first, then steps, then `fixup`.
//!
//! Swarm testing (wasmtime's API fuzzer): each input first draws which step kinds it may use and
//! generates only those, so inputs differ in their whole mix of features, not only in detail.

use arbitrary::{Arbitrary, Result, Unstructured};

use super::fixup::fixup;
use super::limits::MAX_STEPS;
use super::step::Step;
use super::Program;

/// The step kinds, in the bit order of a swarm mask.
pub const STEP_KINDS: [&str; 10] = [
    "create",
    "enter_scope",
    "exit_scope",
    "op",
    "to_device",
    "replay",
    "read",
    "clone",
    "drop",
    "autodiff",
];

fn enabled(mask: u16, step: &Step) -> bool {
    let bit = STEP_KINDS
        .iter()
        .position(|k| *k == step.name())
        .unwrap_or(0);
    mask & (1 << bit) != 0
}

impl<'a> Arbitrary<'a> for Program {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        // Creation and scope entry/exit are always on: without them no other step has anything
        // to act on, and every capture-lifecycle bug needs a scope.
        let always = 0b111;
        let mask = u16::arbitrary(u)? | always;
        // Steps are read until the bytes run out (not behind a continue-flag per element,
        // which would make the expected length 2), so a longer input is a longer program.
        let mut steps = Vec::new();
        while !u.is_empty() && steps.len() < MAX_STEPS {
            let step = Step::arbitrary(u)?;
            if enabled(mask, &step) {
                steps.push(step);
            }
        }
        fixup(&mut steps);
        Ok(Program { steps })
    }
}

impl Program {
    /// Decodes fuzzer input bytes the way the fuzz target and `dispatch-fuzz fmt` do. Any byte
    /// string decodes; running out of bytes just ends the program early.
    pub fn from_fuzz_bytes(data: &[u8]) -> Program {
        let mut u = Unstructured::new(data);
        Program::arbitrary(&mut u).unwrap_or_default()
    }
}
