//! The oracles' fault points in a build without `test-hooks`: each hands its data back as it
//! is and compiles to nothing.

use burn::tensor::TensorData;

/// A tensor's own read, as it is.
#[inline(always)]
pub(crate) fn own_read(data: TensorData) -> TensorData {
    data
}

/// The replay feed, as it is.
#[inline(always)]
pub(crate) fn replay_feed(data: TensorData) -> TensorData {
    data
}

/// Step `index`'s wgpu value, as it is.
#[inline(always)]
pub(crate) fn wgpu_value(_index: usize, data: TensorData) -> TensorData {
    data
}
