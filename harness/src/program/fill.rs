//! The host data a `Create` step's fill stands for.

use burn::tensor::TensorData;

use super::step::{Fill, Kind};

/// The host data of a deterministic fill.
pub fn fill_data(kind: Kind, shape: &[usize], fill: Fill) -> TensorData {
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
        Kind::Float => TensorData::new((0..n).map(|i| value(i) as f32).collect(), shape.to_vec()),
        Kind::Int => TensorData::new((0..n).map(value).collect::<Vec<i64>>(), shape.to_vec()),
        Kind::Bool => TensorData::new(
            (0..n).map(|i| value(i) % 2 != 0).collect::<Vec<bool>>(),
            shape.to_vec(),
        ),
    }
}
