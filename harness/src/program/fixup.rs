//! The one idempotent repair pass that turns any decoded or edited step list into a runnable
//! program: references resolve modulo what exists, limits are applied, scopes are balanced.
//!
//! wasmtime's `gc_ops` is the model: derive freely, then fix up. The minimizer relies on it too:
//! removing any step and fixing up again yields a program that still runs.

mod op;

use super::limits::{
    CAPTURE_POOL_SIZE, MAX_DIM, MAX_ELEMENTS, MAX_LIST, MAX_RANK, MAX_SCOPE_DEPTH,
};
use super::limits::{MAX_SLOTS, MAX_STEPS, MAX_THREADS};
use super::step::{AutodiffMode, DeviceRef, Dtype, ExitForm, Fill, Kind, Op, Slot, Step};
use super::typing::{op_output, Ty};
use op::fix_op;

/// What `fixup` knows about the program so far: the static type of each slot and the output
/// types of each graph a scope exit declares.
#[derive(Default)]
struct Env {
    slots: [Option<Ty>; MAX_SLOTS as usize],
    graphs: Vec<Vec<Ty>>,
    /// The devices of the open scopes, outermost first.
    scopes: Vec<DeviceRef>,
    /// What autodiff makes of each slot's value, as far as the steps tell statically.
    grads: [Grad; MAX_SLOTS as usize],
    /// The program thread the next step runs on.
    thread: u8,
}

/// A slot's value as autodiff sees it, statically: decoding reads it to give a backward a loss
/// it can differentiate. A step that panics at run time may leave a slot otherwise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Grad {
    /// Not on an autodiff device.
    #[default]
    Plain,
    /// On an autodiff device, computed from no `require_grad` leaf.
    Autodiff,
    /// A `require_grad` leaf.
    Leaf,
    /// Computed from a leaf: a backward of it has gradients.
    Tracked,
}

impl Grad {
    /// A leaf, or computed from one.
    pub(super) fn tracked(self) -> bool {
        matches!(self, Grad::Leaf | Grad::Tracked)
    }
}

impl Env {
    fn ty(&self, slot: Slot) -> Option<Ty> {
        self.slots.get(usize::from(slot)).cloned().flatten()
    }

    /// Resolves `wanted` to a slot whose type satisfies `accept`: `wanted` itself when it does
    /// (so a fixed-up program is a fixed point), else the `wanted`-th such slot modulo their
    /// number. `None` when no slot qualifies.
    fn pick(&self, wanted: Slot, accept: impl Fn(&Ty) -> bool) -> Option<Slot> {
        self.pick_slot(wanted, |_, t| accept(t))
    }

    /// [`Env::pick`] among float slots whose autodiff state `accept` takes.
    fn pick_float(&self, wanted: Slot, accept: impl Fn(Grad) -> bool) -> Option<Slot> {
        self.pick_slot(wanted, |s, t| {
            t.kind == Kind::Float && accept(self.grads[usize::from(s)])
        })
    }

    /// [`Env::pick`] with a test that also sees the slot.
    fn pick_slot(&self, wanted: Slot, accept: impl Fn(Slot, &Ty) -> bool) -> Option<Slot> {
        let fits = |s: Slot| self.ty(s).is_some_and(|t| accept(s, &t));
        let wanted = wanted % MAX_SLOTS;
        if fits(wanted) {
            return Some(wanted);
        }
        let candidates: Vec<Slot> = (0..MAX_SLOTS).filter(|s| fits(*s)).collect();
        (!candidates.is_empty()).then(|| candidates[usize::from(wanted) % candidates.len()])
    }

    fn pick_any(&self, wanted: Slot) -> Option<Slot> {
        self.pick(wanted, |_| true)
    }

    fn define(&mut self, slot: Slot, ty: Ty) {
        self.slots[usize::from(slot)] = Some(ty);
    }
}

/// Repairs `steps` in place so that every step can run, and returns nothing: a step that cannot
/// be repaired (an op with no operand of a suitable kind, a scope exit with no open scope) is
/// removed. Applying `fixup` twice gives the same program as applying it once.
pub fn fixup(steps: &mut Vec<Step>) {
    let mut fixer = Fixer::default();
    for step in steps.drain(..) {
        fixer.push(step);
    }
    *steps = fixer.finish();
}

/// The kind of each op step's first operand in a fixed-up program, as `fixup` types it (`None`
/// for other steps and for an operand it has no type for).
pub fn operand_kinds(steps: &[Step]) -> Vec<Option<Kind>> {
    let mut fixer = Fixer::default();
    steps
        .iter()
        .map(|step| {
            let kind = match step {
                Step::Op { op, .. } => op
                    .operands()
                    .first()
                    .and_then(|s| fixer.env.ty(*s))
                    .map(|t| t.kind),
                _ => None,
            };
            // A fixed-up program is fixup's fixed point: fixing each step again types it as
            // the first fixup did.
            fixer.fix(step.clone());
            kind
        })
        .collect()
}

/// [`fixup`] one step at a time, so decoding can read the types and autodiff states of what it
/// decoded so far: pushing every step of a list and finishing is `fixup` of the list.
#[derive(Default)]
pub(super) struct Fixer {
    env: Env,
    fixed: Vec<Step>,
    pushed: usize,
}

impl Fixer {
    /// Repairs `step` against the steps before it and appends it (after the operand it lacks,
    /// for a module op), or drops it.
    pub(super) fn push(&mut self, step: Step) {
        if self.pushed >= MAX_STEPS {
            return;
        }
        self.pushed += 1;
        if let Some(create) = missing_module_operand(&step, &self.env) {
            self.fix(create);
        }
        self.fix(step);
    }

    fn fix(&mut self, step: Step) {
        let grads = self.env.grads;
        if let Some(step) = fix_step(step, &mut self.env) {
            let grad = grad_after(&step, &grads, &self.env);
            for slot in step.writes() {
                self.env.grads[usize::from(slot)] = grad;
            }
            self.fixed.push(step);
        }
    }

    /// Steps pushed so far, counting dropped ones (decoding stops at [`MAX_STEPS`]).
    pub(super) fn pushed(&self) -> usize {
        self.pushed
    }

    /// The slot [`Env::pick`] resolves `wanted` to among float slots whose autodiff state
    /// `accept` takes.
    pub(super) fn pick_float(&self, wanted: Slot, accept: impl Fn(Grad) -> bool) -> Option<Slot> {
        self.env.pick_float(wanted, accept)
    }

    /// The repaired program: unclosed scopes get an implicit exit with no boundaries,
    /// innermost first.
    pub(super) fn finish(mut self) -> Vec<Step> {
        for _ in 0..self.env.scopes.len() {
            self.env.graphs.push(Vec::new());
            self.fixed.push(Step::ExitScope {
                inputs: Vec::new(),
                outputs: Vec::new(),
                form: ExitForm::Complete,
            });
        }
        self.fixed
    }
}

/// The autodiff state a fixed step gives the slots it writes, from the states before it (`env`
/// already types what it wrote).
fn grad_after(step: &Step, before: &[Grad], env: &Env) -> Grad {
    let of = |s: &Slot| before[usize::from(*s)];
    match step {
        Step::Create { device, .. } | Step::ToDevice { device, .. } => {
            if *device == DeviceRef::FlexAutodiff {
                Grad::Autodiff
            } else {
                Grad::Plain
            }
        }
        Step::Autodiff { src, mode, .. } => match (mode, of(src)) {
            (AutodiffMode::Disable, _) => Grad::Plain,
            // Only a float becomes a leaf; other kinds get `autodiff()`.
            (AutodiffMode::RequireGrad, Grad::Autodiff | Grad::Leaf)
                if step
                    .writes()
                    .iter()
                    .all(|s| env.ty(*s).is_some_and(|t| t.kind == Kind::Float)) =>
            {
                Grad::Leaf
            }
            (_, Grad::Plain) => Grad::Autodiff,
            (_, grad) => grad,
        },
        Step::Clone { src, .. } => of(src),
        Step::Op { op, .. } => {
            let operands = op.operands();
            if operands.iter().any(|s| of(s).tracked()) {
                Grad::Tracked
            } else if operands.iter().any(|s| of(s) == Grad::Autodiff) {
                Grad::Autodiff
            } else {
                Grad::Plain
            }
        }
        _ => Grad::Plain,
    }
}

/// The operand a module op lacks: a float of the entry's rank is rare among decoded tensors (one
/// create in eight has rank 3, one in eight rank 4, and a scope holds few), so without it nine
/// module ops in ten found no operand and were dropped, and some entries never ran in a capture
/// scope in 20,000 programs. Outside scopes, a float computed from a `require_grad` leaf is
/// reshaped to the rank (leading dims of 1 added, or the leading dims merged), so a backward can
/// reach the module op's own backward. Otherwise the op's operand byte gives the shape (two bits
/// a dim) of a tensor created on the innermost open scope's device (Flex outside scopes). Either
/// goes into a free slot or else the op's own. `None` when the op has an operand or is no module
/// op; the new step then satisfies the op, so a second `fixup` adds nothing.
fn missing_module_operand(step: &Step, env: &Env) -> Option<Step> {
    let Step::Op {
        out,
        op: Op::Module { op, src, .. },
    } = step
    else {
        return None;
    };
    let spec = op.spec();
    if env.pick(*src, |t| spec.accepts(t.kind, t.rank())).is_some() {
        return None;
    }
    let out = (0..MAX_SLOTS)
        .find(|s| env.ty(*s).is_none())
        .unwrap_or(out % MAX_SLOTS);
    let tracked = env
        .scopes
        .is_empty()
        .then(|| env.pick_float(*src, Grad::tracked))
        .flatten();
    if let Some(tracked) = tracked {
        let mut dims: Vec<usize> = env.ty(tracked)?.shape;
        while dims.len() > spec.rank {
            let merged = dims.remove(0);
            dims[0] *= merged;
        }
        while dims.len() < spec.rank {
            dims.insert(0, 1);
        }
        return Some(Step::Op {
            out,
            op: Op::Reshape {
                src: tracked,
                dims: dims.into_iter().map(|d| d as u8).collect(),
            },
        });
    }
    let shape = (0..spec.rank)
        .map(|i| 1 + (src >> (2 * i)) % MAX_DIM as u8)
        .collect();
    Some(Step::Create {
        out,
        kind: Kind::Float,
        shape,
        fill: Fill::Arange,
        device: env.scopes.last().copied().unwrap_or(DeviceRef::Flex),
        dtype: None,
    })
}

/// The device a step names once fixed: a capture device's index taken modulo the pool.
pub(super) fn fix_device(device: DeviceRef) -> DeviceRef {
    match device {
        DeviceRef::Capture(k) => DeviceRef::Capture(k % CAPTURE_POOL_SIZE),
        other => other,
    }
}

/// Bounds rank, dims and element count; a value already in range is kept as is.
fn fix_shape(shape: &[u8]) -> Vec<u8> {
    let max_dim = MAX_DIM as u8;
    let mut dims: Vec<u8> = shape
        .iter()
        .take(MAX_RANK)
        .map(|&d| {
            if (1..=max_dim).contains(&d) {
                d
            } else {
                1 + d % max_dim
            }
        })
        .collect();
    if dims.is_empty() {
        dims.push(1);
    }
    while dims.iter().map(|&d| usize::from(d)).product::<usize>() > MAX_ELEMENTS {
        let largest = (0..dims.len())
            .max_by_key(|&i| (dims[i], usize::MAX - i))
            .unwrap_or(0);
        dims[largest] -= 1;
    }
    dims
}

fn shape_of(dims: &[u8]) -> Vec<usize> {
    dims.iter().map(|&d| usize::from(d)).collect()
}

fn fix_list(list: Vec<Slot>, env: &Env) -> Vec<Slot> {
    list.into_iter()
        .filter_map(|s| env.pick_any(s))
        .take(MAX_LIST)
        .collect()
}

fn fix_step(step: Step, env: &mut Env) -> Option<Step> {
    Some(match step {
        Step::Create {
            out,
            kind,
            shape,
            fill,
            device,
            dtype,
        } => fix_create(out, (kind, dtype), (shape, fill, device), env),
        // A switch to the thread already running is no switch.
        Step::Thread { thread } => {
            let thread = thread % MAX_THREADS;
            if thread == env.thread {
                return None;
            }
            env.thread = thread;
            Step::Thread { thread }
        }
        Step::EnterScope { device } => {
            if env.scopes.len() >= MAX_SCOPE_DEPTH {
                return None;
            }
            let device = fix_device(device);
            env.scopes.push(device);
            Step::EnterScope { device }
        }
        Step::ExitScope {
            inputs,
            outputs,
            form,
        } => fix_exit(inputs, outputs, form, env)?,
        Step::Backward { out, loss, param } => {
            let float = |t: &Ty| t.kind == Kind::Float;
            let (out, loss, param) = (
                out % MAX_SLOTS,
                env.pick(loss, float)?,
                env.pick(param, float)?,
            );
            env.define(out, env.ty(param)?);
            Step::Backward { out, loss, param }
        }
        Step::Device { device, call } => Step::Device {
            device: fix_device(device),
            call,
        },
        Step::Op { out, op } => {
            let out = out % MAX_SLOTS;
            let op = fix_op(op, env)?;
            let ty = op_output(&op, |s| env.ty(s))?;
            env.define(out, ty);
            Step::Op { out, op }
        }
        Step::ToDevice { out, src, device } => {
            let (out, src) = (out % MAX_SLOTS, env.pick_any(src)?);
            env.define(out, env.ty(src)?);
            Step::ToDevice {
                out,
                src,
                device: fix_device(device),
            }
        }
        Step::Replay {
            graph,
            feed,
            outputs,
        } => fix_replay(graph, feed, outputs, env)?,
        Step::Read { src, fallible } => Step::Read {
            src: env.pick_any(src)?,
            fallible,
        },
        // An empty transaction stays: Burn answers it without asking any backend.
        Step::Transaction { srcs, fallible } => Step::Transaction {
            srcs: fix_list(srcs, env),
            fallible,
        },
        Step::Clone { out, src } => {
            let (out, src) = (out % MAX_SLOTS, env.pick_any(src)?);
            env.define(out, env.ty(src)?);
            Step::Clone { out, src }
        }
        Step::Drop { slot } => {
            let slot = env.pick_any(slot)?;
            env.slots[usize::from(slot)] = None;
            Step::Drop { slot }
        }
        Step::Autodiff { out, src, mode } => {
            let (out, src) = (out % MAX_SLOTS, env.pick_any(src)?);
            env.define(out, env.ty(src)?);
            Step::Autodiff { out, src, mode }
        }
    })
}

/// A create into a slot in range, of its dtype's kind (where it names one), of a shape in the
/// limits, on a device programs have.
fn fix_create(
    out: Slot,
    (kind, dtype): (Kind, Option<Dtype>),
    (shape, fill, device): (Vec<u8>, Fill, DeviceRef),
    env: &mut Env,
) -> Step {
    let out = out % MAX_SLOTS;
    let kind = dtype.map_or(kind, Dtype::kind);
    let shape = fix_shape(&shape);
    env.define(
        out,
        Ty {
            kind,
            shape: shape_of(&shape),
        },
    );
    Step::Create {
        out,
        kind,
        shape,
        fill,
        device: fix_device(device),
        dtype,
    }
}

/// A scope exit of an open scope, declaring slots that hold values; its graph's outputs typed
/// for the replays after it.
fn fix_exit(inputs: Vec<Slot>, outputs: Vec<Slot>, form: ExitForm, env: &mut Env) -> Option<Step> {
    env.scopes.pop()?;
    let inputs = fix_list(inputs, env);
    let outputs = fix_list(outputs, env);
    // An unwound scope has no graph: a replay of its number has no outputs to type.
    env.graphs.push(match form {
        ExitForm::Unwind => Vec::new(),
        _ => outputs.iter().filter_map(|s| env.ty(*s)).collect(),
    });
    Some(Step::ExitScope {
        inputs,
        outputs,
        form,
    })
}

/// A replay of a graph some scope completed, fed from slots that hold values, its outputs typed
/// as the graph's.
fn fix_replay(graph: u8, feed: Vec<Slot>, outputs: Vec<Slot>, env: &mut Env) -> Option<Step> {
    if env.graphs.is_empty() {
        return None;
    }
    let graph = (usize::from(graph) % env.graphs.len()) as u8;
    let types = env.graphs[usize::from(graph)].clone();
    let outputs: Vec<Slot> = outputs
        .into_iter()
        .take(types.len())
        .map(|s| s % MAX_SLOTS)
        .collect();
    for (slot, ty) in outputs.iter().zip(types) {
        env.define(*slot, ty);
    }
    Some(Step::Replay {
        graph,
        feed: fix_list(feed, env),
        outputs,
    })
}
