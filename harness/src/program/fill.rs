//! The host data a `Create` step's fill stands for.

use burn::tensor::TensorData;

use super::step::{Fill, Kind};

/// The host data of a deterministic fill of a `Create` step's `shape`.
pub fn fill_data(kind: Kind, shape: &[u8], fill: Fill) -> TensorData {
    let shape: Vec<usize> = shape.iter().map(|d| usize::from(*d)).collect();
    let n: usize = shape.iter().product();
    let value = |i: usize| -> i64 {
        match fill {
            Fill::Zeros => 0,
            Fill::Ones => 1,
            Fill::Arange => i as i64,
            Fill::Value(v) => i64::from(v),
        }
    };
    match kind {
        Kind::Float => TensorData::new((0..n).map(|i| value(i) as f32).collect(), shape),
        Kind::Int => TensorData::new((0..n).map(value).collect::<Vec<i64>>(), shape),
        Kind::Bool => TensorData::new(
            (0..n).map(|i| value(i) % 2 != 0).collect::<Vec<bool>>(),
            shape,
        ),
    }
}
