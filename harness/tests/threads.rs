//! What Burn does when a capture device is used from two threads, on its public API: the facts
//! a threaded program's model (issue 30 §3) starts from. burn-router finds a creation op's client
//! in one process-wide registry keyed by device (`client/base.rs`, `CLIENTS`; `float_from_data`
//! calls `get_client`, `ops/tensor.rs:41-42`), and `capture_scope` promises only that one scope
//! is active on a device at a time (burn-capture `capture.rs:44`), nothing per thread.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::Barrier;

use burn::backend::Capture;
use burn::tensor::{Device, Tensor, TensorData};
use burn_ir::TensorId;

/// `exp` of a fresh two-element tensor on `device`, made on this thread: its capture id, or the
/// panic it raised.
fn exp_of_fresh(device: &Device) -> Result<(TensorId, Vec<Tensor<1>>), String> {
    catch_unwind(AssertUnwindSafe(|| {
        let x = Tensor::<1>::from_data(TensorData::new(vec![0.0f32, 1.0], [2]), device);
        let y = x.clone().exp();
        let id = y.clone().try_into_primitive::<Capture>().unwrap().id();
        (id, vec![x, y])
    }))
    .map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default()
    })
}

#[test]
fn a_tensor_made_on_another_thread_while_a_scope_is_open_on_its_device_is_recorded_into_that_scope()
{
    let device = Device::capture();
    // With no scope open anywhere, the seed guard stops the creation.
    let alone = std::thread::scope(|s| s.spawn(|| exp_of_fresh(&device).map(|_| ())).join());
    let guard = alone
        .unwrap()
        .expect_err("no scope is open, so the creation panics");
    assert!(
        guard.contains("must run inside CaptureDevice::capture_scope"),
        "{guard}"
    );

    // With this thread's scope open on the device, the other thread's creation finds the scope's
    // client, and its op lands in this thread's graph.
    let opened = Barrier::new(2);
    let closed = Barrier::new(2);
    let (sent, made) = mpsc::channel();
    let graph = std::thread::scope(|s| {
        s.spawn(|| {
            opened.wait();
            let result = exp_of_fresh(&device);
            sent.send(result.as_ref().map(|(id, _)| *id).map_err(Clone::clone))
                .unwrap();
            closed.wait();
            // Its tensors are dropped after the scope completed, as a stale handle is.
            drop(result);
        });
        let graph = device.capture_scope(|scope| {
            opened.wait();
            let id = made.recv().unwrap();
            let id = id.expect("the other thread's creation does not meet the guard");
            scope.complete([], [id])
        });
        closed.wait();
        graph
    });
    let graph = graph.expect("the scope completes with the other thread's output");
    let exps = graph
        .graph
        .operations
        .iter()
        .filter(|op| format!("{op:?}").contains("Exp"))
        .count();
    assert_eq!(exps, 1, "{:#?}", graph.graph.operations);
}
