//! The steps of a program: what each one asks the real Burn crates to do.

use arbitrary::Arbitrary;
use serde::{Deserialize, Serialize};

pub use super::along_dim::AlongDimOp;
pub use super::binary::{BinaryOp, CompareOp, ScalarOp};
pub use super::dtype::Dtype;
pub use super::edge::Edge;
pub use super::kind::Kind;
pub use super::module::ModuleOp;
pub use super::quantized::{QuantizedOp, Scheme};
pub use super::table::{Tolerance, Unspecified};
pub use super::unary::UnaryOp;

/// Index of a tensor slot, in `0..limits::MAX_SLOTS` once fixed up.
pub type Slot = u8;

/// The slots a step names: one to three for nearly every step, so they stay off the heap (the
/// interpreter and the oracles ask for them at every step).
pub type Slots = smallvec::SmallVec<[Slot; 6]>;

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
}

/// Bool-only binary logic.
#[derive(Arbitrary, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum LogicOp {
    /// `bool_and`.
    And,
    /// `bool_or`.
    Or,
}

/// A tensor operation. Operand slots are repaired by `fixup` so that kinds and shapes agree;
/// see `program::fixup` for each rule.
#[derive(Arbitrary, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Element-wise unary op.
    Unary {
        /// Which op.
        op: UnaryOp,
        /// Operand.
        src: Slot,
    },
    /// Element-wise binary op; `rhs` broadcasts to `lhs`.
    Binary {
        /// Which op.
        op: BinaryOp,
        /// Left operand: the result has its shape.
        lhs: Slot,
        /// Right operand.
        rhs: Slot,
    },
    /// Op with a scalar right operand.
    Scalar {
        /// Which op.
        op: ScalarOp,
        /// Tensor operand.
        src: Slot,
        /// Scalar operand.
        value: i8,
    },
    /// `lhs.matmul(rhs)`, or `lhs.matmul(rhs.swap_dims(-1, -2))` when `transpose_rhs`.
    Matmul {
        /// Left operand.
        lhs: Slot,
        /// Right operand.
        rhs: Slot,
        /// Transpose the last two dims of `rhs` first.
        transpose_rhs: bool,
    },
    /// `sum_dim(dim)` (float, int): a reduction that keeps the rank.
    SumDim {
        /// Operand.
        src: Slot,
        /// Reduced dim.
        dim: u8,
    },
    /// `argmax(dim)` (float, int): a reduction with an int result.
    ArgMax {
        /// Operand.
        src: Slot,
        /// Reduced dim.
        dim: u8,
    },
    /// `reshape(dims)`; `fixup` replaces dims whose product is wrong by a rank-preserving
    /// `[1, .., n]`.
    Reshape {
        /// Operand.
        src: Slot,
        /// New shape.
        dims: Vec<u8>,
    },
    /// `swap_dims(dim0, dim1)`.
    SwapDims {
        /// Operand.
        src: Slot,
        /// First dim.
        dim0: u8,
        /// Second dim.
        dim1: u8,
    },
    /// `slice` along one dim: `start..start + len`.
    Slice {
        /// Operand.
        src: Slot,
        /// Sliced dim.
        dim: u8,
        /// First index.
        start: u8,
        /// Number of indices (at least 1).
        len: u8,
    },
    /// `Tensor::cat([first, rest..], dim)`.
    Cat {
        /// First tensor: the others must match its kind and every dim but `dim`.
        first: Slot,
        /// Other tensors.
        rest: Vec<Slot>,
        /// Concatenated dim.
        dim: u8,
    },
    /// Kind conversion: `int()`, `float()`, `bool()` or Bool's `int()`/`float()`; with a
    /// dtype, `cast(FloatDType::..)` or `cast(IntDType::..)`, which may keep the kind.
    Cast {
        /// Operand.
        src: Slot,
        /// Target kind.
        to: Kind,
        /// Target dtype, of kind `to` (float or int: a bool tensor has no `cast`); none: the
        /// kind's plain conversion.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dtype: Option<Dtype>,
    },
    /// Comparison to a bool tensor; `rhs` has the same shape as `lhs`.
    Compare {
        /// Which comparison.
        op: CompareOp,
        /// Left operand.
        lhs: Slot,
        /// Right operand.
        rhs: Slot,
    },
    /// `clamp(min, max)` (float, int); `fixup` orders the bounds.
    Clamp {
        /// Operand.
        src: Slot,
        /// Lower bound.
        min: i8,
        /// Upper bound.
        max: i8,
    },
    /// `src.mask_where(mask, value)`: mask and value have `src`'s shape.
    MaskWhere {
        /// Tensor written into.
        src: Slot,
        /// Bool mask.
        mask: Slot,
        /// Values taken where the mask is true.
        value: Slot,
    },
    /// `src.mask_fill(mask, value)`.
    MaskFill {
        /// Tensor written into.
        src: Slot,
        /// Bool mask with `src`'s shape.
        mask: Slot,
        /// Fill value.
        value: i8,
    },
    /// `bool_and` / `bool_or` on same-shaped bool tensors.
    Logic {
        /// Which op.
        op: LogicOp,
        /// Left operand.
        lhs: Slot,
        /// Right operand.
        rhs: Slot,
    },
    /// `bool_not`.
    Not {
        /// Operand.
        src: Slot,
    },
    /// An op of the along-dim table (a reduction, scan, sort or softmax over `dim`).
    AlongDim {
        /// Which op.
        op: AlongDimOp,
        /// Operand.
        src: Slot,
        /// The dim; `fixup` keeps it below the operand's rank.
        dim: u8,
    },
    /// An op of the quantized table: the float operand quantized with `scheme`, run through
    /// one of Burn's quantized paths and dequantized.
    Quantized {
        /// Which op.
        op: QuantizedOp,
        /// Operand.
        src: Slot,
        /// The quantization scheme.
        scheme: Scheme,
    },
    /// An op of the module table (a convolution, pooling, interpolation or `linear`) over a
    /// float tensor of the entry's rank.
    Module {
        /// Which op.
        op: ModuleOp,
        /// Operand.
        src: Slot,
        /// The kernel: 1 or 3 (`fixup` maps any other value to one of them).
        kernel: u8,
    },
}

/// Runs `$body` with `$s` bound to each operand slot of the op `$op`, in operand order: by
/// reference or by mutable reference, as `$op` is. The one list of which fields are operands,
/// for [`Op::operands`] and [`Op::map_slots`].
macro_rules! for_each_operand {
    ($op:expr, |$s:ident| $body:expr) => {
        match $op {
            Op::Unary { src, .. }
            | Op::AlongDim { src, .. }
            | Op::Quantized { src, .. }
            | Op::Module { src, .. }
            | Op::Scalar { src, .. }
            | Op::SumDim { src, .. }
            | Op::ArgMax { src, .. }
            | Op::Reshape { src, .. }
            | Op::SwapDims { src, .. }
            | Op::Slice { src, .. }
            | Op::Cast { src, .. }
            | Op::Clamp { src, .. }
            | Op::Not { src } => {
                let $s = src;
                $body;
            }
            Op::Binary { lhs, rhs, .. }
            | Op::Matmul { lhs, rhs, .. }
            | Op::Compare { lhs, rhs, .. }
            | Op::Logic { lhs, rhs, .. } => {
                for $s in [lhs, rhs] {
                    $body;
                }
            }
            Op::MaskWhere { src, mask, value } => {
                for $s in [src, mask, value] {
                    $body;
                }
            }
            Op::MaskFill { src, mask, .. } => {
                for $s in [src, mask] {
                    $body;
                }
            }
            Op::Cat { first, rest, .. } => {
                {
                    let $s = first;
                    $body;
                }
                for $s in rest {
                    $body;
                }
            }
        }
    };
}

impl Op {
    /// Renames every operand slot through `f`.
    pub fn map_slots(&mut self, mut f: impl FnMut(Slot) -> Slot) {
        for_each_operand!(self, |s| *s = f(*s));
    }

    /// A short stable name, e.g. `unary exp` or `cast`: the variant and its `op` field, if any.
    pub fn name(&self) -> String {
        let value = serde_json::to_value(self).unwrap_or_default();
        let Some((variant, fields)) = value.as_object().and_then(|o| o.iter().next()) else {
            return value.as_str().unwrap_or("op").to_string();
        };
        match fields.get("op").and_then(|o| o.as_str()) {
            Some(inner) => format!("{variant} {inner}"),
            None => variant.clone(),
        }
    }

    /// How closely Flex's and wgpu's values of its result must agree: the table's entry for a
    /// unary op; comparisons, argmax and casts to int or bool are discontinuous; the rest is
    /// float arithmetic or moves values without computing.
    pub fn tolerance(&self) -> Tolerance {
        match self {
            Op::Unary { op, .. } => op.spec().tolerance,
            Op::AlongDim { op, .. } => op.spec().tolerance,
            Op::Quantized { op, .. } => op.spec().tolerance,
            Op::Module { op, .. } => op.spec().tolerance,
            Op::Binary { op, .. } => op.spec().tolerance,
            Op::Scalar { op, .. } => op.spec().tolerance,
            Op::Compare { op, .. } => op.spec().tolerance,
            Op::ArgMax { .. } => Tolerance::Step,
            Op::Cast { to, .. } if *to != Kind::Float => Tolerance::Step,
            _ => Tolerance::Balanced,
        }
    }

    /// Whether its result adds terms up (a matmul, a reduction, a module op, an along-dim
    /// entry that is not exact, `x` minus a reduction): it rounds at the scale of its terms,
    /// not of its result, and a partial sum may overflow in an order Burn does not pin down. A
    /// quantized select or gather moves elements and sums none.
    pub fn accumulates(&self) -> bool {
        match self {
            Op::Matmul { .. } | Op::SumDim { .. } | Op::Module { .. } => true,
            Op::AlongDim { op, .. } => {
                let spec = op.spec();
                spec.tolerance != Tolerance::Exact && spec.unspecified != Unspecified::Quantized
            }
            Op::Unary { op, .. } => op.name().starts_with("minus_"),
            _ => false,
        }
    }

    /// How large an accumulating op's partial sums may grow ([`Op::accumulates`]), over
    /// operands whose largest finite magnitude is `largest` and whose largest holds `terms`
    /// elements: that magnitude times the terms, and for the products of a matmul or a module
    /// op nine times the terms again (their weight ramps reach the channel count squared times
    /// the kernel area).
    pub fn partial_sum_scale(&self, largest: f64, terms: usize) -> f64 {
        let terms = terms as f64;
        let weight = if matches!(self, Op::Matmul { .. } | Op::Module { .. }) {
            (terms * 9.0).max(1.0)
        } else {
            1.0
        };
        largest * terms * weight
    }

    /// What Burn leaves unspecified about its result, as its table entry says (ops outside the
    /// tables are handled where they are judged).
    pub fn unspecified(&self) -> Unspecified {
        match self {
            Op::Unary { op, .. } => op.spec().unspecified,
            Op::AlongDim { op, .. } => op.spec().unspecified,
            Op::Quantized { op, .. } => op.spec().unspecified,
            Op::Module { op, .. } => op.spec().unspecified,
            Op::Binary { op, .. } => op.spec().unspecified,
            Op::Scalar { op, .. } => op.spec().unspecified,
            Op::Compare { op, .. } => op.spec().unspecified,
            _ => Unspecified::None,
        }
    }

    /// Whether the op makes tensors on its operand's device before it runs (a module entry's
    /// weights), as its table entry's call says.
    pub fn creates_on_operand_device(&self) -> bool {
        match self {
            Op::Module { op, .. } => op.spec().creates_on_device(),
            Op::AlongDim { op, .. } => op.spec().creates_on_device(),
            // A quantized entry quantizes its operand first: what it makes on the device (an
            // index, data read back) comes after.
            _ => false,
        }
    }

    /// Whether the op's entry reads a tensor's data back mid-call (`into_data`, or a
    /// `Transaction`'s `execute`), which inside a capture scope meets a computed tensor, a
    /// placeholder with no data.
    pub fn reads_data(&self) -> bool {
        let call = match self {
            Op::Unary { op, .. } => op.spec().call,
            Op::AlongDim { op, .. } => op.spec().call,
            Op::Quantized { op, .. } => op.spec().call,
            Op::Module { op, .. } => op.spec().call,
            _ => return false,
        };
        super::table::reads_data(call)
    }

    /// The slots the op reads, in operand order. Every step of every run asks (the model, the
    /// mirrors), so it reads the op in place rather than cloning it through `map_slots`.
    pub fn operands(&self) -> Slots {
        let mut operands = Slots::new();
        for_each_operand!(self, |s| operands.push(*s));
        operands
    }
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
