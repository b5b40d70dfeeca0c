//! The steps of a program: what each one asks the real Burn crates to do.

use arbitrary::Arbitrary;
use serde::{Deserialize, Serialize};

pub use super::along_dim::AlongDimOp;
pub use super::binary::{BinaryOp, CompareOp, ScalarOp};
pub use super::dtype::Dtype;
pub use super::edge::Edge;
pub use super::kind::Kind;
pub use super::module::ModuleOp;
pub use super::op::{LogicOp, Op};
pub use super::quantized::{QuantizedOp, Scheme};
pub use super::slot::{Slot, Slots};
pub use super::table::Unspecified;
pub use super::unary::UnaryOp;

/// A device a step can name.
#[derive(
    Arbitrary, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord,
)]
#[serde(rename_all = "snake_case")]
pub enum DeviceRef {
    /// `Device::flex()`.
    Flex,
    /// `Device::flex().autodiff()`.
    FlexAutodiff,
    /// Capture device `k` of the per-thread pool (`Device::capture()`, created once).
    Capture(u8),
    /// The wgpu device (`Device::wgpu(..)`, opt-in per session: see `interpreter::wgpu`).
    Wgpu,
}

/// How a created tensor is filled. Every fill is deterministic, so a trace's digests are
/// reproducible across runs and machines.
#[derive(Arbitrary, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Fill {
    /// All zeros (false).
    Zeros,
    /// All ones (true).
    Ones,
    /// 0, 1, 2, ... in row-major order (bool: alternating).
    Arange,
    /// Every element equals the value (bool: value is odd).
    Value(i8),
    /// Values at an edge of the created dtype (its largest and smallest, -0, the smallest
    /// subnormal, NaN, the infinities), made in that dtype itself, so nothing rounds them on
    /// the way in (see [`Edge`]).
    Edge(Edge),
    /// Ties for rounding, centred on zero: float element `i` is `i - n/2 + 0.5` (four elements:
    /// -1.5, -0.5, 0.5, 1.5); int element `i` is `i - n/2`; bool: whether that is odd.
    Halves,
    /// Small values of either sign: float element `i` is `±(i + 1) * 2^-12 / 3` (+ at even
    /// `i`; see `fill::TINY`); int element `i` is `±(i + 1)`; bool: whether that is odd.
    Tiny,
}

/// What an `Autodiff` step does to a tensor's autodiff association.
#[derive(Arbitrary, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum AutodiffMode {
    /// `tensor.autodiff()`.
    Enable,
    /// `tensor.without_autodiff()`.
    Disable,
    /// `tensor.require_grad()` (float only; other kinds get `autodiff()`).
    RequireGrad,
}

/// How a scope's closure ends, each a way Burn's `CaptureScope` API offers (`capture.rs`).
#[derive(Arbitrary, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum ExitForm {
    /// `scope.complete(input_ids, output_ids)`.
    #[default]
    Complete,
    /// `scope.input(&t)` for each input, then `scope.complete_with(..)` with the outputs as
    /// `()`, `[&a]`, `(&a, &b)`, `(&a, &b, &c)` or `(&a, &b, &c, &d)`. `input` registers an
    /// id once, so an input named twice is no duplicate here.
    With,
    /// As [`ExitForm::With`], the outputs as a slice `&[&a, ..]`.
    WithSlice,
    /// The closure unwinds (a panic that escapes it) instead of completing: the scope must
    /// close and free its device all the same (`CaptureScopeGuard`'s drop), with no graph.
    Unwind,
}

impl ExitForm {
    /// Whether this is the plain form, which program files leave unwritten.
    pub fn is_complete(&self) -> bool {
        *self == ExitForm::Complete
    }

    /// Whether the inputs go through `scope.input`, which registers an id once (so an input
    /// named twice is no duplicate) and needs the scope as `mut`.
    pub fn registers_inputs(self) -> bool {
        matches!(self, ExitForm::With | ExitForm::WithSlice)
    }
}

/// A call on a device itself rather than on a tensor (`burn::tensor::Device`'s methods, and the
/// `Backend`/`Device` trait calls a backend-generic caller makes with the dispatch device).
#[derive(Arbitrary, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum DeviceCall {
    /// `device.sync()`.
    Sync,
    /// `device.flush()`.
    Flush,
    /// `device.seed(n)`.
    Seed(u8),
    /// `device.supports_dtype(dtype)` for entry `k` of [`QUERIED_DTYPES`] (modulo its length).
    SupportsDtype(u8),
    /// `<Dispatch as Backend>::name(device)`.
    Name,
    /// `DispatchDevice::from_id(device.to_id())`, which must give the device back.
    IdRoundTrip,
}

/// Makes one dtype (a `QFloat`'s scheme is not a constant).
pub type MakeDType = fn() -> burn_backend::DType;

/// The dtypes a `SupportsDtype` call asks about, each with its Rust path under `burn::tensor`:
/// every float, int, bool and quantized storage Burn names (capture answers for all but the
/// quantized one).
pub const QUERIED_DTYPES: [(&str, MakeDType); 11] = {
    use burn_backend::{BoolStore, DType};
    [
        ("DType::F32", || DType::F32),
        ("DType::F16", || DType::F16),
        ("DType::BF16", || DType::BF16),
        ("DType::F64", || DType::F64),
        ("DType::I64", || DType::I64),
        ("DType::I32", || DType::I32),
        ("DType::I8", || DType::I8),
        ("DType::U8", || DType::U8),
        ("DType::Bool(BoolStore::Native)", || {
            DType::Bool(BoolStore::Native)
        }),
        ("DType::Bool(BoolStore::U8)", || DType::Bool(BoolStore::U8)),
        ("DType::QFloat(Default::default())", || {
            DType::QFloat(Default::default())
        }),
    ]
};

/// Entry `k` of [`QUERIED_DTYPES`], modulo its length.
pub fn queried_dtype(k: u8) -> (&'static str, burn_backend::DType) {
    let (path, dtype) = QUERIED_DTYPES[usize::from(k) % QUERIED_DTYPES.len()];
    (path, dtype())
}

/// One step of a program.
#[derive(Arbitrary, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// `Tensor::from_data(fill, &device)` into `out`.
    Create {
        /// Destination slot.
        out: Slot,
        /// Element kind.
        kind: Kind,
        /// Shape; `fixup` bounds its rank, dims and element count.
        shape: Vec<u8>,
        /// Deterministic fill.
        fill: Fill,
        /// Device the tensor is created on.
        device: DeviceRef,
        /// Storage dtype, `Tensor::from_data(fill, (&device, dtype))`; none: the device's
        /// default dtype of the kind (`fixup` makes a named dtype's kind the step's kind).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dtype: Option<Dtype>,
    },
    /// Opens `device.capture_scope(|scope| ...)`: the steps up to the matching `ExitScope` run
    /// inside its closure. A non-capture device gets `CaptureError::InvalidDevice`, an already
    /// open one `CaptureError::AlreadyActive`; either way the closure, and so the steps inside,
    /// never run.
    EnterScope {
        /// Device whose scope opens.
        device: DeviceRef,
    },
    /// Ends the innermost scope's closure with `scope.complete(inputs, outputs)`, naming each
    /// boundary by the capture tensor id of a slot. The scope's `CapturedGraph`, if any, becomes
    /// replayable graph number *n*, counting exits from the start of the program.
    ExitScope {
        /// Declared runtime inputs.
        inputs: Vec<Slot>,
        /// Declared outputs.
        outputs: Vec<Slot>,
        /// How the closure ends; program files write it only when it is not `complete`.
        #[serde(default, skip_serializing_if = "ExitForm::is_complete")]
        form: ExitForm,
    },
    /// `out = op(..)`.
    Op {
        /// Destination slot.
        out: Slot,
        /// The operation.
        op: Op,
    },
    /// `out = src.clone().to_device(&device)`.
    ToDevice {
        /// Destination slot.
        out: Slot,
        /// Moved tensor.
        src: Slot,
        /// Target device.
        device: DeviceRef,
    },
    /// Executes captured graph `graph` on Flex through `burn_router::TensorInterpreter` and
    /// writes its outputs, in order, into `outputs` as Flex tensors. Each graph input takes the
    /// data of the matching `feed` slot when that slot holds a readable tensor of the recorded
    /// shape and dtype, and its recorded value otherwise.
    Replay {
        /// Graph number (order of completed `ExitScope`s).
        graph: u8,
        /// Slots whose data feeds the graph's inputs, in order.
        feed: Vec<Slot>,
        /// Destination slots for the graph's outputs, in order.
        outputs: Vec<Slot>,
    },
    /// Reads `src` back to host data: `into_data()` (panics on failure) or `try_into_data()`.
    Read {
        /// Read tensor.
        src: Slot,
        /// Use `try_into_data()` rather than `into_data()`.
        fallible: bool,
    },
    /// `out = src.clone()`.
    Clone {
        /// Destination slot.
        out: Slot,
        /// Cloned tensor.
        src: Slot,
    },
    /// `drop(slot)`.
    Drop {
        /// Emptied slot.
        slot: Slot,
    },
    /// Moves a tensor into or out of autodiff: `out = src.clone().autodiff()` and friends.
    Autodiff {
        /// Destination slot.
        out: Slot,
        /// Source tensor.
        src: Slot,
        /// What to do.
        mode: AutodiffMode,
    },
    /// A call on a device: `device.sync()` and friends, inside or outside its capture scope.
    Device {
        /// The device called.
        device: DeviceRef,
        /// The call.
        call: DeviceCall,
    },
    /// `out = param.grad(&loss.clone().sum().backward())`: the gradient of `loss`'s sum with
    /// respect to `param` (float tensors), or an emptied `out` where `param` has none (outside
    /// the graph, or not tracked).
    Backward {
        /// Destination slot.
        out: Slot,
        /// The tensor whose sum is differentiated.
        loss: Slot,
        /// The tensor whose gradient is read.
        param: Slot,
    },
    /// Reads every `srcs` tensor back in one `Transaction`: `register`ed in order, then
    /// `execute()` (panics on failure) or `try_execute()`. Burn batches the reads per backend
    /// (burn-dispatch's `tr_execute`, burn-router's per-device `TransactionReads`), a path of
    /// its own apart from each tensor's `into_data`.
    Transaction {
        /// Read tensors, in registration order (a slot may appear twice).
        srcs: Vec<Slot>,
        /// Use `try_execute()` rather than `execute()`.
        fallible: bool,
    },
    /// A context switch of the program's explicit schedule: the steps after it, up to the next
    /// `Thread`, run on program thread `thread` (one of [`MAX_THREADS`], thread 0 the one the
    /// program starts on), each only once the step before it has finished on whichever thread
    /// that ran. An `ExitScope` always runs on the thread that opened its scope, the closure's
    /// own thread, whatever thread the steps inside ran on.
    ///
    /// [`MAX_THREADS`]: super::limits::MAX_THREADS
    Thread {
        /// The program thread the following steps run on.
        thread: u8,
    },
}

impl Step {
    /// The dtype the step names: a `Create`'s storage or a `Cast`'s target, if it names one.
    pub fn named_dtype(&self) -> Option<Dtype> {
        match self {
            Step::Create { dtype, .. }
            | Step::Op {
                op: Op::Cast { dtype, .. },
                ..
            } => *dtype,
            _ => None,
        }
    }

    /// The storage the step names, as Burn's dtype: a dtype it names, or the `QFloat` of a
    /// quantized op's scheme.
    pub fn named_storage(&self) -> Option<burn_backend::DType> {
        match self {
            Step::Op {
                op: Op::Quantized { scheme, .. },
                ..
            } => Some(burn_backend::DType::QFloat(scheme.burn())),
            _ => self.named_dtype().map(Dtype::burn),
        }
    }

    /// The device the step names (a creation's, a move's target, a scope's), if any.
    pub fn device(&self) -> Option<DeviceRef> {
        match self {
            Step::Create { device, .. }
            | Step::ToDevice { device, .. }
            | Step::EnterScope { device }
            | Step::Device { device, .. } => Some(*device),
            _ => None,
        }
    }

    /// Mutable access to the device the step names, if any.
    pub fn device_mut(&mut self) -> Option<&mut DeviceRef> {
        match self {
            Step::Create { device, .. }
            | Step::ToDevice { device, .. }
            | Step::EnterScope { device }
            | Step::Device { device, .. } => Some(device),
            _ => None,
        }
    }

    /// The slots the step reads.
    pub fn reads(&self) -> Slots {
        match self {
            Step::Op { op, .. } => op.operands(),
            Step::ToDevice { src, .. }
            | Step::Clone { src, .. }
            | Step::Autodiff { src, .. }
            | Step::Read { src, .. } => smallvec::smallvec![*src],
            Step::Drop { slot } => smallvec::smallvec![*slot],
            Step::Backward { loss, param, .. } => smallvec::smallvec![*loss, *param],
            Step::ExitScope {
                inputs, outputs, ..
            } => inputs.iter().chain(outputs).copied().collect(),
            Step::Replay { feed, .. } => feed.iter().copied().collect(),
            Step::Transaction { srcs, .. } => srcs.iter().copied().collect(),
            Step::Create { .. }
            | Step::EnterScope { .. }
            | Step::Device { .. }
            | Step::Thread { .. } => Slots::new(),
        }
    }

    /// Whether the step draws random values itself (an op whose entry is `random`).
    pub fn draws(&self) -> bool {
        matches!(self, Step::Op { op, .. } if op.unspecified() == Unspecified::Random)
    }

    /// The slots the step writes (or empties).
    pub fn writes(&self) -> Slots {
        match self {
            Step::Create { out, .. }
            | Step::Op { out, .. }
            | Step::ToDevice { out, .. }
            | Step::Clone { out, .. }
            | Step::Autodiff { out, .. }
            | Step::Backward { out, .. } => smallvec::smallvec![*out],
            Step::Drop { slot } => smallvec::smallvec![*slot],
            Step::Replay { outputs, .. } => outputs.iter().copied().collect(),
            _ => Slots::new(),
        }
    }

    /// Renames every slot the step names through `f`.
    pub fn map_slots(&mut self, mut f: impl FnMut(Slot) -> Slot) {
        let mut list = |v: &mut Vec<Slot>| v.iter_mut().for_each(|s| *s = f(*s));
        match self {
            Step::Create { out, .. } => *out = f(*out),
            Step::EnterScope { .. } | Step::Device { .. } | Step::Thread { .. } => {}
            Step::ExitScope {
                inputs, outputs, ..
            } => {
                list(inputs);
                list(outputs);
            }
            Step::Op { out, op } => {
                *out = f(*out);
                op.map_slots(&mut f);
            }
            Step::ToDevice { out, src, .. }
            | Step::Clone { out, src }
            | Step::Autodiff { out, src, .. } => {
                *out = f(*out);
                *src = f(*src);
            }
            Step::Replay { feed, outputs, .. } => {
                list(feed);
                list(outputs);
            }
            Step::Read { src, .. } => *src = f(*src),
            Step::Transaction { srcs, .. } => list(srcs),
            Step::Drop { slot } => *slot = f(*slot),
            Step::Backward { out, loss, param } => {
                *out = f(*out);
                *loss = f(*loss);
                *param = f(*param);
            }
        }
    }

    /// A short name for the step's variant, used by swarm masks and progress counters.
    pub fn name(&self) -> &'static str {
        match self {
            Step::Create { .. } => "create",
            Step::EnterScope { .. } => "enter_scope",
            Step::ExitScope { .. } => "exit_scope",
            Step::Op { .. } => "op",
            Step::ToDevice { .. } => "to_device",
            Step::Replay { .. } => "replay",
            Step::Read { .. } => "read",
            Step::Clone { .. } => "clone",
            Step::Drop { .. } => "drop",
            Step::Autodiff { .. } => "autodiff",
            Step::Device { .. } => "device",
            Step::Backward { .. } => "backward",
            Step::Transaction { .. } => "transaction",
            Step::Thread { .. } => "thread",
        }
    }
}
