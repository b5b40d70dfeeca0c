//! Fuzzer bytes to a [`Program`]: a swarm mask first, then steps, then `fixup`.
//!
//! Swarm testing (wasmtime's API fuzzer): each input first draws which step kinds it may use and
//! generates only those, so inputs differ in their whole mix of features, not only in detail.

use arbitrary::{Arbitrary, Result, Unstructured};

use super::fixup::fixup;
use super::limits::MAX_STEPS;
use super::step::{DeviceRef, Step};
use super::Program;

/// The step kinds, in the bit order of a swarm mask.
pub const STEP_KINDS: [&str; 12] = [
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
    "device",
    "backward",
];

fn enabled(mask: u16, step: &Step) -> bool {
    let bit = STEP_KINDS
        .iter()
        .position(|k| *k == step.name())
        .unwrap_or(0);
    mask & (1 << bit) != 0
}

/// The backends a session fuzzes, which decoding needs: the same bytes decode to wgpu steps
/// only where wgpu is on. Flex and capture are always on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backends {
    /// wgpu is one of the session's devices.
    pub wgpu: bool,
}

impl Backends {
    /// Flex and capture: the default session.
    pub const FLEX_CAPTURE: Backends = Backends { wgpu: false };
    /// Flex, capture and wgpu.
    pub const WITH_WGPU: Backends = Backends { wgpu: true };
    /// Every backend name a session may list.
    pub const NAMES: [&'static str; 3] = ["flex", "capture", "wgpu"];

    /// Parses a comma-separated list of [`Backends::NAMES`]; the unknown name on failure.
    pub fn parse(list: &str) -> std::result::Result<Backends, String> {
        let mut backends = Backends::FLEX_CAPTURE;
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "flex" | "capture" => {}
                "wgpu" => backends.wgpu = true,
                other => return Err(other.to_string()),
            }
        }
        Ok(backends)
    }
}

impl<'a> Arbitrary<'a> for Program {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Program::arbitrary_on(u, Backends::FLEX_CAPTURE)
    }
}

impl Program {
    /// Decodes a program from `u` for a session on `backends`.
    pub fn arbitrary_on(u: &mut Unstructured<'_>, backends: Backends) -> Result<Self> {
        // Creation and scope entry/exit are always on: without them no other step has anything
        // to act on, and every capture-lifecycle bug needs a scope.
        let always = 0b111;
        let mask = u16::arbitrary(u)? | always;
        // Steps are read until the bytes run out (not behind a continue-flag per element,
        // which would make the expected length 2), so a longer input is a longer program.
        let mut steps = Vec::new();
        let mut last_written = None;
        while !u.is_empty() && steps.len() < MAX_STEPS {
            let step = bias(Step::arbitrary(u)?, backends, last_written, u)?;
            if enabled(mask, &step) {
                last_written = step.writes().last().copied().or(last_written);
                steps.push(step);
            }
        }
        fixup(&mut steps);
        Ok(Program { steps })
    }
}

/// Nudges a decoded step toward the cases that exercise capture, spending one byte to decide.
/// Derived decoding picks enum variants uniformly, so two scopes in three would open on a
/// non-capture device (`InvalidDevice`, closure never runs) and most scope exits would declare
/// no output, leaving almost no graph to replay. One in eight keeps the raw draw, so both
/// rejected paths stay covered.
fn bias(
    step: Step,
    backends: Backends,
    last_written: Option<u8>,
    u: &mut Unstructured<'_>,
) -> Result<Step> {
    let step = without_disabled_backends(step, backends);
    Ok(match step {
        Step::EnterScope {
            device: DeviceRef::Flex | DeviceRef::FlexAutodiff,
        } => {
            let b = u8::arbitrary(u)?;
            if b % 8 == 0 {
                step
            } else {
                Step::EnterScope {
                    device: DeviceRef::Capture(b / 8),
                }
            }
        }
        Step::ExitScope {
            inputs,
            outputs,
            form,
        } if outputs.is_empty() => {
            let b = u8::arbitrary(u)?;
            let outputs = match last_written {
                Some(slot) if b % 8 != 0 => vec![slot],
                _ => outputs,
            };
            Step::ExitScope {
                inputs,
                outputs,
                form,
            }
        }
        step => step,
    })
}

/// A session that did not opt into wgpu generates Flex where the bytes say wgpu; stored
/// programs keep their wgpu steps, which then run only where wgpu is enabled.
fn without_disabled_backends(mut step: Step, backends: Backends) -> Step {
    if backends.wgpu {
        return step;
    }
    if let Some(device) = step.device_mut().filter(|d| **d == DeviceRef::Wgpu) {
        *device = DeviceRef::Flex;
    }
    step
}

impl Program {
    /// Decodes fuzzer input bytes the way the fuzz target and `dispatch-fuzz fmt` do, for a
    /// session on `backends`. Any byte string decodes; running out of bytes just ends the
    /// program early.
    pub fn from_fuzz_bytes(data: &[u8], backends: Backends) -> Program {
        let mut u = Unstructured::new(data);
        Program::arbitrary_on(&mut u, backends).unwrap_or_default()
    }
}
