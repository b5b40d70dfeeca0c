//! Tests of `elementwise`.

use super::*;

#[test]
fn the_remainders_follow_their_definitions() {
    assert_eq!(floor_mod_f(5.5, 2.0), 1.5);
    assert_eq!(floor_mod_f(-5.5, 2.0), 0.5);
    assert_eq!(floor_mod_f(5.5, -2.0), -0.5);
    assert_eq!(floor_mod_f(0.0, f64::INFINITY), 0.0);
    assert_eq!(floor_mod_i(-7, 3), Some(2));
    assert_eq!(floor_mod_i(7, -3), Some(-2));
    assert_eq!(floor_mod_i(-7, -3), Some(-1));
    assert_eq!(floor_mod_i(6, -3), Some(0));
    assert_eq!(floor_mod_i(1, 0), None);
    assert_eq!(int_div(-7, 2), None);
    assert_eq!(int_div(-8, 2), Some(-4));
}

#[test]
fn erf_reaches_double_precision_across_its_range() {
    // Values from the definition (Wolfram Alpha, 17 digits).
    for (x, want) in [
        (0.5, 0.520_499_877_813_046_5),
        (1.0, 0.842_700_792_949_714_9),
        (2.0, 0.995_322_265_018_952_7),
        (3.0, 0.999_977_909_503_001_4),
        (-1.5, -0.966_105_146_475_310_7),
    ] {
        assert!((erf(x) - want).abs() < 1e-14, "erf({x}) = {}", erf(x));
    }
}

#[test]
fn a_nan_lane_of_an_activation_is_left_open_and_of_an_ieee_function_is_nan() {
    let x = Host::float(vec![2], vec![Some(f64::NAN), Some(-1.0)]);
    let relu = unary(row(UNARY, "relu").unwrap(), &x).unwrap();
    assert_eq!(relu.floats().unwrap(), [None, Some(0.0)]);
    let exp = unary(row(UNARY, "exp").unwrap(), &x).unwrap();
    assert!(exp.floats().unwrap()[0].unwrap().is_nan());
}
