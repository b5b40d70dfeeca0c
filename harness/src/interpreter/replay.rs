//! Executes a `CapturedGraph` on Flex or wgpu through `burn_router::TensorInterpreter`, the way
//! a graph consumer (an exporter, a remote server) would. Burn has no helper for this.

use burn::tensor::{CapturedGraph, Device, TensorData};
use burn_backend::ExecutionError;
use burn_dispatch::backends::Flex;
use burn_dispatch::devices::FlexDevice;
use burn_dispatch::DispatchDevice;
use burn_ir::BackendIr;
use burn_ir::{TensorId, TensorIr, TensorStatus};
use burn_router::TensorInterpreter;

use crate::program::{Dtype, Step};

/// The recorded shape and dtype of tensor `id` in `graph`: from the operations that mention it,
/// or from its recorded value.
pub fn recorded_tensor(graph: &CapturedGraph, id: TensorId) -> Option<TensorIr> {
    let from_ops = graph
        .graph
        .operations
        .iter()
        .flat_map(|op| op.nodes())
        .find(|node| node.id == id)
        .cloned();
    from_ops.or_else(|| {
        graph.values.get(&id).map(|data| TensorIr {
            id,
            shape: data.shape().clone(),
            status: TensorStatus::ReadWrite,
            dtype: data.dtype(),
        })
    })
}

/// Why a graph did not replay, short of a panic.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// A declared input has no data: nothing was fed for it and the graph recorded no value
    /// (a runtime input whose data lives elsewhere, e.g. a tensor of an earlier scope).
    #[error("graph input {0} has neither fed data nor a recorded value")]
    MissingInput(TensorId),
    /// Burn's interpreter returned an error reading an output.
    #[error(transparent)]
    Execution(#[from] ExecutionError),
}

impl ReplayError {
    /// The variant name, as traces show it.
    pub fn name(&self) -> &'static str {
        match self {
            ReplayError::MissingInput(_) => "MissingInput",
            ReplayError::Execution(_) => super::trace::EXECUTION_ERROR,
        }
    }
}

/// Replays `graph` on Flex. Input `i` takes `feed[i]` when it is given and has the recorded
/// shape and dtype, and its recorded value otherwise. Returns the outputs' data in order.
///
/// A panic inside Burn's interpreter propagates: the caller runs this under `catch`.
pub fn replay_on_flex(
    graph: &CapturedGraph,
    feed: &[Option<TensorData>],
) -> Result<Vec<TensorData>, ReplayError> {
    replay_on::<Flex>(graph, feed, FlexDevice)
}

/// [`replay_on_flex`] on a Flex or CubeCL (wgpu) device.
pub fn replay_on_device(
    graph: &CapturedGraph,
    feed: &[Option<TensorData>],
    device: &Device,
) -> Result<Vec<TensorData>, ReplayError> {
    match device.as_dispatch() {
        #[cfg(feature = "wgpu")]
        DispatchDevice::Cube(cube) => {
            replay_on::<burn_dispatch::backends::Cube>(graph, feed, cube.clone())
        }
        DispatchDevice::Flex(_) => replay_on_flex(graph, feed),
        other => Err(ReplayError::Execution(ExecutionError::WithContext {
            reason: format!("no graph interpreter for device {other:?}"),
        })),
    }
}

/// The recorded shape and dtype of graph input `k`, if the graph has one.
pub fn recorded_input(graph: &CapturedGraph, k: usize) -> Option<TensorIr> {
    recorded_tensor(graph, *graph.graph.inputs.get(k)?)
}

/// Whether graph input `k` takes `data`: it has the recorded shape and dtype (otherwise the
/// input keeps its recorded value).
pub fn takes_feed(graph: &CapturedGraph, k: usize, data: &TensorData) -> bool {
    recorded_input(graph, k).is_some_and(|ir| ir.shape == *data.shape() && ir.dtype == data.dtype())
}

fn replay_on<B: BackendIr>(
    graph: &CapturedGraph,
    feed: &[Option<TensorData>],
    device: B::Device,
) -> Result<Vec<TensorData>, ReplayError> {
    let mut interpreter = TensorInterpreter::<B>::new(device);
    for (id, data) in &graph.values {
        interpreter.register_tensor_data_id(*id, data.clone());
    }
    for (i, id) in graph.graph.inputs.iter().enumerate() {
        let fed = feed
            .get(i)
            .and_then(Option::as_ref)
            .filter(|data| takes_feed(graph, i, data));
        match fed {
            Some(data) => interpreter.register_tensor_data_id(*id, data.clone()),
            // Handing Burn's interpreter an op over a tensor it never saw panics inside it; that
            // would be the caller's mistake, not a Burn bug, so it is reported here instead.
            None if !graph.values.contains_key(id) => return Err(ReplayError::MissingInput(*id)),
            None => {}
        }
    }
    for operation in &graph.graph.operations {
        interpreter.register_op(operation.clone());
    }
    graph
        .graph
        .outputs
        .iter()
        .map(|id| -> Result<TensorData, ReplayError> {
            let mut ir =
                recorded_tensor(graph, *id).ok_or_else(|| ExecutionError::WithContext {
                    reason: format!("graph output {id} appears in no operation and has no value"),
                })?;
            // The interpreter hands out an output only to a reader that may consume it.
            ir.status = TensorStatus::ReadWrite;
            Ok(burn_backend::read_sync(interpreter.read_tensor_async(ir))?)
        })
        .collect()
}

/// Whether `graph` holds a tensor (a value or an op's node) of a dtype a step of `steps` names
/// and the wgpu device says it does not support: Burn promises nothing for it there
/// (the oracles' `UNSUPPORTED_DTYPE`). One Burn chose (capture's `Bool(U8)`) does not count: its
/// replay on wgpu is judged.
pub fn holds_named_unsupported(graph: &CapturedGraph, steps: &[Step]) -> bool {
    let named: Vec<burn::tensor::DType> = super::wgpu::named_unsupported(steps)
        .into_iter()
        .map(Dtype::burn)
        .collect();
    !named.is_empty()
        && (graph.values.values().any(|v| named.contains(&v.dtype()))
            || graph
                .graph
                .operations
                .iter()
                .flat_map(|op| op.nodes())
                .any(|n| named.contains(&n.dtype)))
}
