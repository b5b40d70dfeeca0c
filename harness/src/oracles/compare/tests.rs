//! Tests of `compare`.

use super::*;

#[test]
fn float_values_within_balanced_tolerance_are_equal() {
    let a = TensorData::new(vec![1.0f32, 2.0, f32::NAN, f32::INFINITY], [4]);
    let b = TensorData::new(vec![1.000_001f32, 2.0, f32::NAN, f32::INFINITY], [4]);
    assert_eq!(compare(&a, &b, None), DiffEq::Equal);
}

#[test]
fn nan_against_a_number_and_opposite_infinities_differ() {
    let a = TensorData::new(vec![f32::NAN, f32::INFINITY], [2]);
    let b = TensorData::new(vec![0.0f32, f32::NEG_INFINITY], [2]);
    assert!(matches!(compare(&a, &b, None), DiffEq::Differ(d) if d.text.starts_with("2 value(s)")));
}

#[test]
fn half_precision_values_are_compared_on_their_own_grid_not_on_f32s() {
    use burn_backend::{bf16, f16};
    let f16s =
        |v: &[f32]| TensorData::new(v.iter().map(|x| f16::from_f32(*x)).collect(), [v.len()]);
    let bf16s =
        |v: &[f32]| TensorData::new(v.iter().map(|x| bf16::from_f32(*x)).collect(), [v.len()]);
    // One BF16 step at 1.0 (0.78%) is past f32's balanced 0.5%, but it is BF16's rounding.
    assert_eq!(
        compare(&bf16s(&[1.0]), &bf16s(&[1.0078125]), None),
        DiffEq::Equal
    );
    assert!(matches!(
        compare(&bf16s(&[1.0]), &bf16s(&[1.03125]), None),
        DiffEq::Differ(_)
    ));
    // Near zero F16's grid is 9.8e-4 wide at 1.0: a cancellation error of a few of its steps
    // is within its bound, while the same values in F32 differ.
    let (a, b) = ([0.001f32], [0.0025f32]);
    assert_eq!(compare(&f16s(&a), &f16s(&b), None), DiffEq::Equal);
    let f32s = |v: &[f32]| TensorData::new(v.to_vec(), [v.len()]);
    assert!(matches!(
        compare(&f32s(&a), &f32s(&b), None),
        DiffEq::Differ(_)
    ));
    // F16 against F32 is judged on the coarser grid; F64 keeps f32's bounds.
    assert_eq!(compare(&f16s(&a), &f32s(&b), None), DiffEq::Equal);
    let f64s = |v: &[f64]| TensorData::new(v.to_vec(), [v.len()]);
    assert!(matches!(
        compare(&f64s(&[1.0]), &f64s(&[1.0078125]), None),
        DiffEq::Differ(_)
    ));
    // An op that adds no error of its own stays exact whatever the grid.
    let exact = tolerance_of((&f16s(&a), &f16s(&b)), OpTolerance::Exact, true, None);
    assert!(exact.is_none());
}

#[test]
fn a_subnormal_equals_a_zero_across_backends_but_not_between_two_flex_values() {
    let tiny = TensorData::new(vec![1e-40f32, -1e-44], [2]);
    let zeros = TensorData::new(vec![0.0f32, 0.0], [2]);
    // Exactly, as an exact op's result is compared: the wgpu device may flush subnormals.
    assert_eq!(compare_within(&tiny, &zeros, None, None), DiffEq::Equal);
    let normal = TensorData::new(vec![f32::MIN_POSITIVE, 0.0], [2]);
    assert!(matches!(
        compare_within(&normal, &zeros, None, None),
        DiffEq::Differ(_)
    ));
    // Flex against Flex (a replay against the eager run) flushes nothing.
    assert!(difference_with(&tiny, &zeros, None, ("replayed", "eager")).is_some());
    let at = |e: Option<Elements>| match e {
        Some(Elements::At(m)) => m.bits.clone(),
        other => panic!("{other:?}"),
    };
    let mixed = TensorData::new(vec![1e-40f32, 0.0, 1.0, -1e-45], [4]);
    assert_eq!(at(subnormal_elements(&mixed)), [true, false, false, true]);
}

#[test]
fn ints_must_match_exactly_whatever_their_width() {
    let a = TensorData::new(vec![1i32, 2], [2]);
    let b = TensorData::new(vec![1i64, 2], [2]);
    assert_eq!(compare(&a, &b, None), DiffEq::Equal);
    let c = TensorData::new(vec![1i64, 3], [2]);
    assert!(matches!(compare(&a, &c, None), DiffEq::Differ(_)));
}

#[test]
fn a_poisoned_value_is_never_compared() {
    let a = TensorData::new(vec![0i64], [1]);
    let b = TensorData::new(vec![1i64], [1]);
    let poisoned = Taint::whole(Poison::ArgmaxTie);
    assert_eq!(
        compare(&a, &b, Some(&poisoned)),
        DiffEq::Poisoned(Poison::ArgmaxTie)
    );
}

#[test]
fn every_reason_has_a_unique_name_and_says_why_where_it_is_not_per_element() {
    let mut names: Vec<&str> = Poison::ALL.iter().map(|p| p.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), Poison::ALL.len());
    for p in Poison::ALL {
        assert_eq!(Poison::named(p.name()), Some(p));
        let (grain, why) = p.grain();
        assert!(grain == Grain::Element || !why.is_empty(), "{}", p.name());
    }
}

#[test]
fn a_nan_or_a_tie_is_found_at_its_elements_and_lanes() {
    let data = TensorData::new(vec![1.0f32, f32::NAN, 2.0, 3.0, 3.0, 0.0], [2, 3]);
    let bits = |e: Option<Elements>| -> Vec<u8> {
        match e {
            Some(Elements::At(m)) => m.bits.iter().map(|b| u8::from(*b)).collect(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(bits(elements_where(&data, f64::is_nan)), [0, 1, 0, 0, 0, 0]);
    // The first row holds a NaN, the second ties at 3.
    assert_eq!(bits(lanes_where(&data, 1, argmax_tie)), [1, 1, 1, 1, 1, 1]);
    let no_nan = TensorData::new(vec![1.0f32, 0.0, 2.0, 3.0, 3.0, 2.0], [2, 3]);
    assert_eq!(
        bits(lanes_where(&no_nan, 1, argmax_tie)),
        [0, 0, 0, 1, 1, 1]
    );
    assert_eq!(bits(lanes_where(&no_nan, 0, has_ties)), [0, 0, 1, 0, 0, 1]);
}

#[test]
fn float_to_int_casts_out_of_i32_range_are_found() {
    let inside = TensorData::new(vec![2_147_483_520.0f32, -5.0], [2]);
    let outside = TensorData::new(vec![1.0f32, 8.66e16], [2]);
    let nan = TensorData::new(vec![f32::NAN], [1]);
    let cast_out_of_range = |d: &TensorData| elements_where(d, out_of_i32).is_some();
    assert!(!cast_out_of_range(&inside));
    assert!(cast_out_of_range(&outside) && cast_out_of_range(&nan));
}

#[test]
fn ties_are_found_per_lane() {
    let data = TensorData::new(vec![1.0f32, 2.0, 3.0, 3.0], [2, 2]);
    let argmax_has_tie = |d: &TensorData, dim| lanes_where(d, dim, argmax_tie).is_some();
    assert!(!argmax_has_tie(&data, 0));
    assert!(argmax_has_tie(&data, 1));
}
