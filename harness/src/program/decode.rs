//! Fuzzer bytes to a [`Program`]: a swarm mask first, then steps, then `fixup`.
//!
//! Swarm testing (wasmtime's API fuzzer): each input first draws which step kinds it may use and
//! generates only those, so inputs differ in their whole mix of features, not only in detail.

use arbitrary::{Arbitrary, Result, Unstructured};

use super::adapter::AdapterChoice;
use super::fixup::{fix_device, Fixer, Grad};
use super::limits::{CAPTURE_POOL_SIZE, MAX_SCOPE_DEPTH, MAX_STEPS};
use super::step::{AutodiffMode, DeviceCall, DeviceRef, Step};
use super::Program;

/// The step kinds, in the bit order of a swarm mask.
pub const STEP_KINDS: [&str; 14] = [
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
    "transaction",
    "thread",
];

/// The mask bits that must all be set for `thread` steps to decode: its own bit and the two
/// unused above it, so one input in eight may run on several threads, and [`bias`] keeps one
/// switch in 32 of those. A switch costs a sleeping thread's wake-up (about 16 us on a 2-core
/// VM, where a step is 1-2 us): with one input in eight and every switch kept, `bench`'s
/// all-oracle execs/s fell to 65% of the same binary's without threads; keeping one in eight,
/// to 87%.
const THREAD_BITS: u16 = 0b111 << 13;

fn enabled(mask: u16, step: &Step) -> bool {
    if matches!(step, Step::Thread { .. }) {
        return mask & THREAD_BITS == THREAD_BITS;
    }
    let bit = STEP_KINDS
        .iter()
        .position(|k| *k == step.name())
        .unwrap_or(0);
    mask & (1 << bit) != 0
}

/// The backends a session fuzzes, which decoding needs (the same bytes decode to wgpu steps
/// only where wgpu is on), and the adapter the wgpu device comes up on. Flex and capture are
/// always on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backends {
    /// wgpu is one of the session's devices.
    pub wgpu: bool,
    /// The adapter wgpu comes up on, where a step first needs it.
    pub adapter: AdapterChoice,
}

impl Backends {
    /// Flex and capture: the default session.
    pub const FLEX_CAPTURE: Backends = Backends {
        wgpu: false,
        adapter: AdapterChoice::AUTO,
    };
    /// Flex, capture and wgpu, on wgpu's own choice of adapter.
    pub const WITH_WGPU: Backends = Backends {
        wgpu: true,
        adapter: AdapterChoice::AUTO,
    };
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

    /// These backends with wgpu on `adapter`.
    pub fn with_adapter(self, adapter: AdapterChoice) -> Backends {
        Backends { adapter, ..self }
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
        // which would make the expected length 2), so a longer input is a longer program. Each
        // is fixed up as it comes, so `bias` can read the types of the steps before it.
        let mut fixer = Fixer::default();
        let mut state = BiasState::default();
        while !u.is_empty() && fixer.pushed() < MAX_STEPS {
            let step = Step::arbitrary(u)?;
            let Some(step) = bias(step, backends, &state, &fixer, u)? else {
                continue;
            };
            if enabled(mask, &step) {
                state.saw(&step);
                fixer.push(step);
            }
        }
        Ok(Program {
            steps: fixer.finish(),
        })
    }
}

/// What [`bias`] knows of the steps decoded so far.
#[derive(Default)]
struct BiasState {
    /// The slot the latest step wrote.
    last_written: Option<u8>,
    /// The devices of the scopes open at this point, outermost first (fixup may still drop a
    /// step, so this is what the bytes ask for, close to what runs).
    open: Vec<DeviceRef>,
}

impl BiasState {
    fn saw(&mut self, step: &Step) {
        self.last_written = step.writes().last().copied().or(self.last_written);
        match step {
            Step::EnterScope { device } => self.open.push(fix_device(*device)),
            Step::ExitScope { .. } => {
                self.open.pop();
            }
            _ => {}
        }
    }
}

/// Nudges a decoded step toward the cases that exercise capture, spending one byte to decide;
/// `None` drops the step. Derived decoding picks enum variants uniformly, so:
/// - two scopes in three would open on a non-capture device (`InvalidDevice`, closure never
///   runs): a scope opens on a capture device;
/// - a nested scope would often open on a device whose scope is already open (`AlreadyActive`,
///   its steps never run): it opens on one that is not;
/// - a scope would close after about one step (exits are as frequent as ops), leaving its graph
///   almost empty for the replay: three exits in four are dropped, so a scope holds several ops;
/// - most scope exits would declare no output, leaving nothing to replay: an exit declares the
///   slot last written;
/// - a backward would almost never differentiate anything: its loss must be computed from a
///   `require_grad` leaf, which uniform picks rarely give (of 16,555 decoded backwards 96 ran
///   and 36 gave a gradient). Where the steps so far hold a float leaf, the backward takes it as
///   its parameter and a float computed from a leaf (or the leaf) as its loss, and where they
///   hold none it is dropped; a `require_grad` takes an autodiff float that is no leaf's
///   result, the only kind it makes a leaf of; and an op in four takes a float computed from a
///   leaf as its first operand, where there is one;
/// - most creates, moves and syncs naming a capture device would meet no open scope on it: see
///   [`placement_bias`];
/// - a thread switch would come every 14 steps where the mask lets it in, and each costs a
///   sleeping thread's wake-up: 31 in 32 are dropped (see [`THREAD_BITS`]).
///
/// One draw in eight (a scope entry: one in 32) keeps the raw step, so every rejected path stays
/// covered.
fn bias(
    step: Step,
    backends: Backends,
    state: &BiasState,
    fixer: &Fixer,
    u: &mut Unstructured<'_>,
) -> Result<Option<Step>> {
    if matches!(step, Step::Thread { .. }) {
        return Ok((u8::arbitrary(u)? % 32 == 0).then_some(step));
    }
    let Some(step) = gradient_bias(without_disabled_backends(step, backends), fixer, u)? else {
        return Ok(None);
    };
    let step = placement_bias(step, state, u)?;
    if !scoping(&step) {
        return Ok(Some(step));
    }
    let entering = matches!(step, Step::EnterScope { .. });
    // `fixup` drops it: the decoding state must not count it as open.
    if entering && state.open.len() >= MAX_SCOPE_DEPTH {
        return Ok(None);
    }
    let b = u8::arbitrary(u)?;
    // A scope that fails to open skips everything inside it, now several steps: one in 32.
    let raw = if entering { 32 } else { 8 };
    if b % raw == 0 {
        return Ok(Some(step));
    }
    Ok(match step {
        Step::EnterScope { device } => {
            let open = |d: &DeviceRef| state.open.contains(d);
            let device = match fix_device(device) {
                capture @ DeviceRef::Capture(_) if !open(&capture) => capture,
                _ => (0..CAPTURE_POOL_SIZE)
                    .map(|k| DeviceRef::Capture((k + b / 8) % CAPTURE_POOL_SIZE))
                    .find(|d| !open(d))
                    .unwrap_or(DeviceRef::Capture((b / 8) % CAPTURE_POOL_SIZE)),
            };
            Some(Step::EnterScope { device })
        }
        Step::ExitScope { .. } if b % 4 != 1 && !state.open.is_empty() => None,
        Step::ExitScope {
            inputs,
            mut outputs,
            form,
        } => {
            if outputs.is_empty() {
                outputs.extend(state.last_written);
            }
            Some(Step::ExitScope {
                inputs,
                outputs,
                form,
            })
        }
        step => Some(step),
    })
}

/// Whether [`bias`] reads a byte for `step` (one at most: the three nudges and the thread
/// switch's keep-or-drop take disjoint step kinds). The encoder writes 0 for each, which keeps
/// the step as it is.
pub(super) fn reads_bias_byte(step: &Step) -> bool {
    scoping(step) || autodiff_nudged(step) || placed(step) || matches!(step, Step::Thread { .. })
}

/// A scope entry or exit, which [`bias`] itself nudges.
fn scoping(step: &Step) -> bool {
    matches!(step, Step::EnterScope { .. } | Step::ExitScope { .. })
}

/// The steps [`gradient_bias`] reads a byte for: ops, backwards and `require_grad`s.
fn autodiff_nudged(step: &Step) -> bool {
    matches!(
        step,
        Step::Backward { .. }
            | Step::Op { .. }
            | Step::Autodiff {
                mode: AutodiffMode::RequireGrad,
                ..
            }
    )
}

/// Whether [`placement_bias`] reads a byte for `step`: every create and move, and the device
/// calls a capture device refuses outside its scope (`sync`, `flush`).
fn placed(step: &Step) -> bool {
    matches!(
        step,
        Step::Create { .. }
            | Step::ToDevice { .. }
            | Step::Device {
                call: DeviceCall::Sync | DeviceCall::Flush,
                ..
            }
    )
}

/// [`bias`] for where values are made (one byte decides, for the steps [`placed`] names). A
/// capture device takes tensors only while a scope is open on it, and uniform picks name one
/// with no open scope most of the time: in the bench's programs such creates, moves and syncs
/// were 0.88 of 1.8 panics per program (`operation-outside-capture-scope`), each about 9 us of
/// unwinding for a guard the first few thousand already cover. Such a step goes to an open
/// scope's device, or off capture (Flex, or Flex with autodiff for a create) outside scopes.
fn placement_bias(mut step: Step, state: &BiasState, u: &mut Unstructured<'_>) -> Result<Step> {
    if !placed(&step) {
        return Ok(step);
    }
    let b = u8::arbitrary(u)?;
    if b % 8 == 0 {
        return Ok(step);
    }
    let creating = matches!(step, Step::Create { .. });
    if let Some(device) = step.device_mut() {
        let closed = match fix_device(*device) {
            capture @ DeviceRef::Capture(_) => !state.open.contains(&capture),
            _ => false,
        };
        if closed {
            *device = match state.open.len() {
                0 if creating && b % 2 == 1 => DeviceRef::FlexAutodiff,
                0 => DeviceRef::Flex,
                n => state.open[usize::from(b / 8) % n],
            };
        }
    }
    Ok(step)
}

/// [`bias`] for the steps autodiff needs (one byte decides); any other step as it is.
fn gradient_bias(step: Step, fixer: &Fixer, u: &mut Unstructured<'_>) -> Result<Option<Step>> {
    if !autodiff_nudged(&step) {
        return Ok(Some(step));
    }
    let b = u8::arbitrary(u)?;
    Ok(Some(match step {
        // One op in four whose program holds a tracked float takes it as its first operand
        // (fixup picks another where it does not fit), so losses are computed through ops.
        Step::Op { out, mut op } if b % 4 == 1 => {
            if let Some(tracked) = fixer.pick_float(b / 4, Grad::tracked) {
                let mut first = true;
                op.map_slots(|s| {
                    if std::mem::take(&mut first) {
                        tracked
                    } else {
                        s
                    }
                });
            }
            Step::Op { out, op }
        }
        step @ Step::Op { .. } => step,
        step if b % 8 == 0 => step,
        Step::Backward { out, loss, param } => match fixer.pick_float(param, |g| g == Grad::Leaf) {
            Some(param) => Step::Backward {
                out,
                loss: fixer
                    .pick_float(loss, |g| g == Grad::Tracked)
                    .unwrap_or(param),
                param,
            },
            // No float leaf yet: the backward could only meet the `backward-untracked` guard
            // (0.42 panics per program in the bench's programs, each about 9 us of unwinding).
            None => return Ok(None),
        },
        Step::Autodiff { out, src, mode } => Step::Autodiff {
            out,
            src: fixer
                .pick_float(src, |g| matches!(g, Grad::Autodiff | Grad::Leaf))
                .unwrap_or(src),
            mode,
        },
        step => step,
    }))
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
