//! Tests of `module`.

use super::*;

fn ramp(shape: Vec<usize>) -> Host {
    let n: usize = shape.iter().product();
    Host::float(shape, (0..n).map(|i| Some(i as f64)).collect())
}

fn values(h: &Host) -> Vec<f64> {
    h.floats().unwrap().iter().map(|e| e.unwrap()).collect()
}

#[test]
fn a_quarter_pixel_grid_sample_mixes_each_pixel_with_its_right_neighbour_and_zero_past_the_edge() {
    let x = Host::float(vec![1, 1, 2, 2], [4.0, 8.0, 0.0, 2.0].map(Some).to_vec());
    let got = quarter_pixel_right(&x, 1).unwrap();
    assert_eq!(values(&got), [5.0, 6.0, 0.5, 1.5]);
}

#[test]
fn an_average_pooling_backward_spreads_each_gradient_over_its_window_divided_by_its_size() {
    // 1 x 3 of gradients [1, 2, 3], windows of 3 x 3 (one row): each input gathers the
    // windows around it, / 9.
    let x = Host::float(vec![1, 1, 1, 3], [1.0, 2.0, 3.0].map(Some).to_vec());
    let got = avg_pool_backward(&x, 3).unwrap();
    assert_eq!(values(&got), [3.0 / 9.0, 6.0 / 9.0, 5.0 / 9.0]);
    assert_eq!(values(&avg_pool_backward(&x, 1).unwrap()), [1.0, 2.0, 3.0]);
}

#[test]
fn a_same_padded_average_counts_the_padding_and_a_maximum_ignores_it() {
    let x = ramp(vec![1, 1, 3]);
    assert_eq!(
        values(&avg_pool(&x, 3).unwrap()),
        [1.0 / 3.0, 1.0, 3.0 / 3.0 * 1.0]
    );
    assert_eq!(values(&max_pool(&x, 3).unwrap()), [1.0, 2.0, 2.0]);
    let idx = max_pool_indices(&ramp(vec![1, 1, 2, 2]), 3).unwrap();
    assert_eq!(idx.ints().unwrap(), [Some(3), Some(3), Some(3), Some(3)]);
}

#[test]
fn a_one_channel_convolution_of_kernel_one_scales_by_its_weight() {
    // c = 1, k = 1: weight 0, bias 0, so conv2d gives zeros; the transposed one too.
    let x = ramp(vec![1, 1, 2, 2]);
    assert_eq!(
        values(&conv(&x, 1, 1, |_, _, _, _| 2.0, |_| 1.0).unwrap()),
        [1.0, 3.0, 5.0, 7.0]
    );
    assert_eq!(
        values(&unfold_fold(&ramp(vec![1, 1, 1, 3]), 3).unwrap()),
        [0.0, 3.0, 4.0]
    );
}
