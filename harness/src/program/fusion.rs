//! A capture device's router client called the way burn-router's `fusion` wrapper calls it: the op
//! table's helpers for two entries, on the ground floor (they import Burn alone) so the table
//! names nothing above `program`.
//!
//! `Fusion<BackendRouter<C>>` (burn-router's `fusion.rs`) aliases a tensor that crosses fusion
//! streams (`alias_handle`: `create_empty_handle` + `register_alias`) and sends a recurring block
//! of ops once as a relative graph (`register_and_execute_graph`), then only its bindings
//! (`execute_graph`). burn-dispatch never wraps capture in fusion, so no `Tensor` call reaches
//! these `CaptureClient` methods; the table entries that name these functions make the same
//! calls on a capture tensor's own client, and the plain `Tensor` ops with the same values on any
//! other device, so the eager mirror and the replay have the same result to agree on.

use std::sync::atomic::{AtomicU64, Ordering};

use burn::tensor::Tensor;
use burn_backend::TensorMetadata;
use burn_dispatch::backends::Capture;
use burn_ir::{
    BinaryOpIr, GraphBindings, GraphId, NumericOperationIr, OperationIr, ScalarIr, ScalarOpIr,
    TensorId, TensorIr, TensorStatus,
};
use burn_router::{RouterClient, RouterTensor};

/// Graph ids this process registered: a client caches graphs by id, so each is fresh.
static GRAPH_IDS: AtomicU64 = AtomicU64::new(0);

/// `x` under a new id that its capture client registers as an alias of x's own, as
/// `RouterFusionRuntime::alias_handle` does for a tensor shared across streams; `x` itself on
/// any other device.
pub fn alias<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    let Ok(source) = x.clone().try_into_primitive::<Capture>() else {
        return x;
    };
    let client = source.client.clone();
    let id = client.create_empty_handle();
    client.register_alias(id, source.id());
    let aliased = RouterTensor::new(id, source.shape(), source.dtype(), client);
    Tensor::from_primitive::<Capture>(aliased)
}

/// `y = x * s + x` sent as one cached relative graph and invoked twice, `s = 0.5` then `s = 2`
/// on the first result (so `4.5 x`), as `RouterGraphExecution::execute` registers a block on
/// its first run and replays it by id after; the same ops through `Tensor` on any other device.
pub fn cached_graph_twice<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    let Ok(input) = x.clone().try_into_primitive::<Capture>() else {
        let once = |x: Tensor<D>, s: f64| x.clone().mul_scalar(s).add(x);
        return once(once(x, 0.5), 2.0);
    };
    let client = input.client.clone();
    let (shape, dtype) = (input.shape(), input.dtype());
    // Relative form: positional ids, dim k of every tensor is shape entry k, the scalar a
    // placeholder; `bind` gives the intermediate a fresh id.
    let relative = |id: u64, status: TensorStatus| TensorIr {
        id: TensorId::new(id),
        shape: (0..shape.num_dims()).collect::<Vec<usize>>().into(),
        status,
        dtype,
    };
    let graph = vec![
        OperationIr::NumericFloat(
            dtype,
            NumericOperationIr::MulScalar(ScalarOpIr {
                lhs: relative(0, TensorStatus::ReadOnly),
                rhs: ScalarIr::UInt(0),
                out: relative(1, TensorStatus::NotInit),
            }),
        ),
        OperationIr::NumericFloat(
            dtype,
            NumericOperationIr::Add(BinaryOpIr {
                lhs: relative(1, TensorStatus::ReadWrite),
                rhs: relative(0, TensorStatus::ReadOnly),
                out: relative(2, TensorStatus::NotInit),
            }),
        ),
    ];
    let bindings = |input: TensorId, output: TensorId, s: f64| GraphBindings {
        tensors: vec![(TensorId::new(0), input), (TensorId::new(2), output)],
        shapes: shape.iter().copied().collect(),
        scalars: vec![ScalarIr::Float(s)],
        ranges: Vec::new(),
    };
    let graph_id = GraphId(GRAPH_IDS.fetch_add(1, Ordering::Relaxed));
    let first = client.create_empty_handle();
    client.register_and_execute_graph(graph_id, graph, bindings(input.id(), first, 0.5));
    let first = RouterTensor::new(first, shape.clone(), dtype, client.clone());
    let second = client.create_empty_handle();
    client.execute_graph(graph_id, bindings(first.id(), second, 2.0));
    Tensor::from_primitive::<Capture>(RouterTensor::new(second, shape, dtype, client))
}
