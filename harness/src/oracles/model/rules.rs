//! The model's rules: each contract Burn states about the capture lifecycle, with the source
//! line that implements it. The whole model's vocabulary, in one table.

/// One rule of the model: the contract it states and the Burn source it encodes.
#[derive(Debug, PartialEq, Eq)]
pub struct Rule {
    /// Stable name, used by `known-divergences.json` and the test-only inversion.
    pub id: &'static str,
    /// What Burn promises.
    pub contract: &'static str,
    /// Where Burn 0.23.0-pre.1 implements it.
    pub source: &'static str,
}

macro_rules! rules {
    ($($name:ident = $id:literal, $contract:literal, $source:literal;)*) => {
        $(
            #[doc = $contract]
            pub const $name: Rule = Rule { id: $id, contract: $contract, source: $source };
        )*
        /// Every rule of the model.
        pub const RULES: &[Rule] = &[$($name),*];
    };
}

// The whole model, in one place. `source` is the line that makes Burn behave as `contract` says.
rules! {
    SCOPE_OPENS = "scope-opens",
        "capture_scope on an idle capture device runs the closure",
        "burn-capture/src/capture.rs:56 (register_scoped_client)";
    SCOPE_ALREADY_ACTIVE = "scope-already-active",
        "a second scope on a device whose scope is open returns CaptureError::AlreadyActive",
        "burn-capture/src/capture.rs:57 (.ok_or(CaptureError::AlreadyActive))";
    SCOPE_NEEDS_CAPTURE_DEVICE = "scope-needs-capture-device",
        "capture_scope on a non-capture device returns CaptureError::InvalidDevice",
        "burn-dispatch/src/device.rs (Device::capture_scope)";
    CREATE_OUTSIDE_SCOPE = "create-outside-scope",
        "creating a tensor on a capture device with no open scope panics",
        "burn-capture/src/capture.rs:442 (CaptureChannel::init_client)";
    CREATE_IN_SCOPE = "create-in-scope",
        "creating a tensor inside an open scope records an initialized value",
        "burn-capture/src/capture.rs:596 (register_tensor_data)";
    MOVE_OFF_CAPTURE = "move-off-capture",
        "a capture tensor cannot be moved to a non-capture device, autodiff or not",
        "burn-dispatch/src/ops/tensor.rs:46 (float_to_device), macros.rs:240 and :349";
    MOVE_ONTO_CAPTURE = "move-onto-capture",
        "an initialized non-autodiff value moves onto a capture device with an open scope",
        "burn-capture/src/capture.rs:451 (register_tensor) via burn-dispatch ops/transfer.rs";
    MOVE_ONTO_IDLE_CAPTURE = "move-onto-idle-capture",
        "moving onto a capture device with no open scope panics",
        "burn-capture/src/capture.rs:442 (CaptureChannel::init_client)";
    MOVE_AUTODIFF_ONTO_CAPTURE = "move-autodiff-onto-capture",
        "an autodiff tensor cannot move onto a capture device",
        "burn-dispatch/src/macros.rs:230";
    BRIDGE_VALUE = "bridge-value",
        "an initialized capture value moves to another capture device's open scope",
        "burn-capture/src/capture.rs:468 (CaptureBridge)";
    BRIDGE_PLACEHOLDER = "bridge-placeholder",
        "a computed capture tensor has no value to move to another capture device",
        "burn-capture/src/capture.rs:450 (get_tensor_handle)";
    SAME_DEVICE_MOVE = "same-device-move",
        "to_device onto the device a capture tensor is already on is a no-op",
        "burn-tensor/src/tensor/api/base.rs (to_device)";
    NO_OP = "no-op",
        "an op Burn answers with its operand (swap_dims(d, d), a same-shape reshape) records nothing and cannot fail",
        "burn-tensor/src/tensor/api/base.rs (early returns before dispatch)";
    OP_IN_SCOPE = "op-in-scope",
        "an op over capture tensors of the one open scope is recorded",
        "burn-capture/src/capture.rs:583 (CaptureClient::register_op)";
    OP_STALE_OPERAND = "op-stale-operand",
        "an op over a capture tensor whose scope has completed panics",
        "burn-capture/src/capture.rs:520 (CaptureState::assert_open)";
    OP_MIXES_CAPTURE_DEVICES = "op-mixes-capture-devices",
        "an op over tensors of two capture devices is rejected as a device mismatch",
        "burn-tensor/src/tensor/api/check.rs:1354 (the documented same-device rule)";
    OP_MIXES_BACKENDS = "op-mixes-backends",
        "an op over a capture tensor and a non-capture tensor is rejected as a device mismatch (or, below the Tensor API checks, as an operand on the wrong backend)",
        "burn-tensor/src/tensor/api/check.rs:1354, burn-dispatch/src/ops/tensor.rs";
    OP_READS_IN_SCOPE = "op-reads-in-scope",
        "an op that reads a tensor it computed back to data (a quantized tensor's into_data) inside a scope reads a placeholder and panics",
        "burn-capture/src/capture.rs:592 (no concrete value) and burn-tensor api/base.rs:2105";
    READ_VALUE = "read-value",
        "reading an initialized capture value returns its data, even after the scope",
        "burn-capture/src/capture.rs:590 (read_tensor_async: state.value)";
    READ_PLACEHOLDER = "read-placeholder",
        "reading a computed capture tensor fails: try_into_data errs, into_data panics",
        "burn-capture/src/capture.rs:592 (no concrete value) and burn-tensor api/base.rs:2105";
    TRANSACTION_OF_VALUES = "transaction-of-values",
        "a transaction of capture tensors that all hold values returns their data, each read as its own read would be",
        "burn-router/src/ops/transaction.rs:13 (tr_execute: read_tensors_async) and burn-capture/src/capture.rs:588";
    TRANSACTION_WITH_PLACEHOLDER = "transaction-with-placeholder",
        "a transaction of capture tensors one of which is computed fails: try_execute errs, execute panics",
        "burn-capture/src/capture.rs:592 (no concrete value) and burn-tensor api/transaction.rs:66 (execute's expect)";
    REQUIRE_GRAD_WITHOUT_AUTODIFF = "require-grad-without-autodiff",
        "require_grad on a float tensor without autodiff panics before any backend sees it",
        "burn-tensor/src/tensor/api/float.rs:1230";
    AUTODIFF_ON_CAPTURE = "autodiff-on-capture",
        "capture tensors do not support autodiff, whatever their kind",
        "burn-dispatch/src/backend.rs:357 (Capture tensors do not support autodiff)";
    WITHOUT_AUTODIFF = "without-autodiff",
        "without_autodiff on a capture tensor leaves it as it is",
        "burn-dispatch/src/backend.rs:313 (disable_autodiff_context)";
    CLONE_OR_DROP = "clone-or-drop",
        "cloning or dropping a handle never fails (capture does not record Drop)",
        "burn-capture/src/capture.rs:531 (register_op skips Drop)";
    EXIT_DUPLICATE = "exit-duplicate-boundary",
        "a tensor declared twice at one boundary is CaptureError::DuplicateBoundary",
        "burn-capture/src/capture.rs:294";
    EXIT_UNKNOWN = "exit-unknown-boundary",
        "a boundary tensor the scope never initialized or referenced is UnknownBoundary",
        "burn-capture/src/capture.rs:300";
    EXIT_INVALID_INPUT = "exit-invalid-input",
        "a declared input computed inside the graph is InvalidInput",
        "burn-capture/src/capture.rs:310";
    EXIT_UNDECLARED_INPUT = "exit-undeclared-input",
        "a tensor the graph reads with no source is UndeclaredInput",
        "burn-capture/src/capture.rs:315";
    EXIT_BRIDGED_OUTPUT = "exit-bridged-value-output",
        "a value moved in from another capture device is a graph output like any other value",
        "burn-capture/src/capture.rs:468 (CaptureBridge registers no Init op, unlike register_tensor)";
    EXIT_UNWINDS = "exit-unwinds",
        "a closure that unwinds instead of completing leaves no graph, and its scope closes and frees the device all the same",
        "burn-capture/src/capture.rs:350 (CaptureScopeGuard's drop closes the session), burn-router/src/client/base.rs:174 (the registration's drop frees the device)";
    DEVICE_CALL = "device-call",
        "sync, flush, seed and supports_dtype on an execution device (Flex, wgpu, autodiff or not) succeed, and so do the backend's name and the device id round trip on any device",
        "burn-tensor/src/device.rs (Device::sync, flush, seed, supports_dtype), burn-dispatch/src/device.rs:616 (DispatchDevice::from_id, to_id)";
    DEVICE_CALL_IN_SCOPE = "device-call-in-scope",
        "sync, flush and supports_dtype on a capture device inside its open scope succeed",
        "burn-capture/src/capture.rs:597, :600, :626 (CaptureClient::sync, flush, dtype_usage)";
    SEED_IN_SCOPE = "seed-in-scope",
        "seeding a capture device inside its open scope panics: a graph cannot record randomness",
        "burn-capture/src/capture.rs:623 (CaptureClient::seed)";
    DEVICE_CALL_OUTSIDE_SCOPE = "device-call-outside-scope",
        "any call on a capture device with no open scope panics: no client answers for it",
        "burn-capture/src/capture.rs:442 (CaptureChannel::init_client)";
    EXIT_COMPLETES = "exit-completes",
        "a scope whose boundary passes every check returns its CapturedGraph",
        "burn-capture/src/capture.rs:272 (CaptureScopeGuard::complete)";
}
