//! Tests of `along_dim`.

use super::*;
use crate::oracles::reference::elementwise::row;

fn floats(shape: Vec<usize>, v: &[f64]) -> Host {
    Host::float(shape, v.iter().map(|x| Some(*x)).collect())
}

#[test]
fn a_tie_leaves_an_index_open_and_a_unique_extremum_pins_it() {
    let x = floats(vec![2, 3], &[1.0, 5.0, 2.0, 4.0, 4.0, 0.0]);
    let arg = along(row(ALONG_DIM, "max_dim_indices").unwrap(), &x, 1).unwrap();
    assert_eq!(arg.ints().unwrap(), [Some(1), None]);
    let sorted = along(row(ALONG_DIM, "argsort").unwrap(), &x, 1).unwrap();
    assert_eq!(
        sorted.ints().unwrap(),
        [Some(0), Some(2), Some(1), Some(2), None, None]
    );
}

#[test]
fn the_layout_entries_move_what_their_calls_move() {
    let x = floats(vec![2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let at = |name: &str, d: usize| -> Vec<f64> {
        along(row(ALONG_DIM, name).unwrap(), &x, d)
            .unwrap()
            .floats()
            .unwrap()
            .iter()
            .map(|e| e.unwrap())
            .collect()
    };
    assert_eq!(at("flip", 1), [2.0, 1.0, 0.0, 5.0, 4.0, 3.0]);
    // idx = (p + 1) % 3 for p = 0..6: [1, 2, 0, 1, 2, 0].
    assert_eq!(at("gather_rotated", 1), [1.0, 2.0, 0.0, 4.0, 5.0, 3.0]);
    assert_eq!(
        at("scatter_assign_rotated", 1),
        [2.0, 0.0, 1.0, 5.0, 3.0, 4.0]
    );
    assert_eq!(at("expand_first", 0), [0.0, 1.0, 2.0, 0.0, 1.0, 2.0]);
    assert_eq!(at("slice_assign_half", 0), [3.0, 4.0, 5.0, 3.0, 4.0, 5.0]);
    // scatter_add: x plus each element added at its rotated index.
    assert_eq!(at("scatter_add", 1), [2.0, 1.0, 3.0, 8.0, 7.0, 9.0]);
    let median = along(
        row(ALONG_DIM, "median").unwrap(),
        &floats(vec![4], &[5.0, 1.0, 3.0, 2.0]),
        0,
    )
    .unwrap();
    assert_eq!(median.floats().unwrap(), [Some(2.0)]);
}
