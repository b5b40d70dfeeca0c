//! Test-only faults that make an oracle see wrong data, so tests can show it fires. They are
//! per thread and off unless a test turns them on; never set them in a fuzz or regression run.
//! The oracles of a threaded program's steps run on its program threads, where these are off:
//! a test plants them for single-threaded programs (the interpreter's own faults, in
//! `interpreter/faults.rs`, follow a program onto its threads).

use std::cell::Cell;

use burn::tensor::TensorData;

thread_local! {
    static CORRUPT_REPLAY_FEED: Cell<bool> = const { Cell::new(false) };
    static PERTURB_WGPU: Cell<Option<usize>> = const { Cell::new(None) };
    static NUDGE_WGPU: Cell<Option<usize>> = const { Cell::new(None) };
    static CORRUPT_OWN_READ: Cell<bool> = const { Cell::new(false) };
}

/// Makes the transaction oracle see each tensor's own read plus one (bools flipped) on this
/// thread, as if a transaction had answered other data than the tensor holds.
#[doc(hidden)]
pub fn corrupt_own_reads_for_tests(on: bool) {
    CORRUPT_OWN_READ.with(|c| c.set(on));
}

/// A tensor's own read as the transaction oracle sees it.
pub(crate) fn own_read(data: TensorData) -> TensorData {
    if CORRUPT_OWN_READ.with(Cell::get) {
        plus_one(&data)
    } else {
        data
    }
}

/// Makes the eager-replay oracle feed every replayed graph input with wrong data (each value
/// plus one, bools flipped) on this thread.
#[doc(hidden)]
pub fn corrupt_replay_feed_for_tests(on: bool) {
    CORRUPT_REPLAY_FEED.with(|c| c.set(on));
}

/// Makes the differential and the reference oracle see the wgpu values of step `step` plus one
/// (bools flipped) on this thread.
#[doc(hidden)]
pub fn perturb_wgpu_values_for_tests(step: Option<usize>) {
    PERTURB_WGPU.with(|c| c.set(step));
}

/// Makes the differential oracle see the float wgpu values of step `step` a hair lower
/// (relative 1e-6, well inside every tolerance) on this thread: an inexact operand.
#[doc(hidden)]
pub fn nudge_wgpu_values_for_tests(step: Option<usize>) {
    NUDGE_WGPU.with(|c| c.set(step));
}

/// The replay feed as the eager-replay oracle sees it.
pub(crate) fn replay_feed(data: TensorData) -> TensorData {
    if CORRUPT_REPLAY_FEED.with(Cell::get) {
        plus_one(&data)
    } else {
        data
    }
}

/// Step `index`'s wgpu value as the differential oracle sees it.
pub(crate) fn wgpu_value(index: usize, data: TensorData) -> TensorData {
    if PERTURB_WGPU.with(Cell::get) == Some(index) {
        plus_one(&data)
    } else if NUDGE_WGPU.with(Cell::get) == Some(index) && data.dtype().is_float() {
        let shape = data.shape().clone();
        let values: Vec<f64> = data
            .iter::<f64>()
            .map(|v| v - v.abs().max(1.0) * 1e-6)
            .collect();
        TensorData::new(values, shape).convert_dtype(data.dtype())
    } else {
        data
    }
}

/// `data` with one added to every element (bools flipped; an int at its dtype's largest value,
/// which an edge fill makes, takes one away instead).
fn plus_one(data: &TensorData) -> TensorData {
    let shape = data.shape().clone();
    if data.dtype().is_bool() {
        let values: Vec<bool> = data.iter::<bool>().map(|b| !b).collect();
        return TensorData::new(values, shape);
    }
    let range = crate::program::Dtype::from_burn(data.dtype()).and_then(|d| d.int_range());
    if let Some((_, largest)) = range {
        let values: Vec<i128> = if data.dtype() == burn::tensor::DType::U64 {
            data.iter::<u64>().map(i128::from).collect()
        } else {
            data.iter::<i64>().map(i128::from).collect()
        };
        let moved = values
            .iter()
            .map(|v| if *v < largest { v + 1 } else { v - 1 });
        return match data.dtype() {
            burn::tensor::DType::U64 => {
                let values: Vec<u64> = moved.map(|v| v as u64).collect();
                TensorData::new(values, shape)
            }
            dtype => {
                let values: Vec<i64> = moved.map(|v| v as i64).collect();
                TensorData::new(values, shape).convert_dtype(dtype)
            }
        };
    }
    let values: Vec<f64> = data.iter::<f64>().map(|v| v + 1.0).collect();
    TensorData::new(values, shape).convert_dtype(data.dtype())
}
