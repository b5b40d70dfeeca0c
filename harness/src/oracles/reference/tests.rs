//! Tests of `reference`.

use super::host::Host;
use super::judge::{judge, Allowance};
use super::*;
use crate::program::Tolerance;

const PLAIN: Allowance<'static> = Allowance {
    elements: None,
    absolute: 0.0,
    headroom: 1.0,
    terms: 0.0,
    backend: Backend::Flex,
};

fn floats(v: &[f64]) -> Host {
    Host::float(vec![v.len()], v.iter().copied().map(Some).collect())
}

#[test]
fn every_op_table_entry_has_a_reference_row_and_at_least_90_percent_have_a_reference() {
    use crate::program::{Family, ALONG_DIM, BINARY, COMPARE, MODULE, SCALAR, UNARY};
    let mut entries: Vec<(Family, &str)> = Vec::new();
    entries.extend(UNARY.iter().map(|s| (Family::Unary, s.name)));
    entries.extend(ALONG_DIM.iter().map(|s| (Family::AlongDim, s.name)));
    entries.extend(BINARY.iter().map(|s| (Family::Binary, s.name)));
    entries.extend(COMPARE.iter().map(|s| (Family::Compare, s.name)));
    entries.extend(SCALAR.iter().map(|s| (Family::Scalar, s.name)));
    entries.extend(MODULE.iter().map(|s| (Family::Module, s.name)));
    let mut missing = Vec::new();
    for (family, name) in &entries {
        match status(*family, name) {
            Ok(()) => {}
            Err("no row in the reference table") => panic!("{family} {name} has no row"),
            Err(why) => missing.push(format!("{family} {name}: {why}")),
        }
    }
    let share = 1.0 - missing.len() as f64 / entries.len() as f64;
    eprintln!(
        "{} of {} entries have a reference",
        entries.len() - missing.len(),
        entries.len()
    );
    assert!(share >= 0.9, "{share:.3}: {missing:#?}");
}

#[test]
fn each_reference_table_is_indexed_as_its_op_table() {
    use crate::program::{ALONG_DIM, BINARY, COMPARE, MODULE, QUANTIZED, SCALAR, UNARY};
    fn names<T>(table: &[(&'static str, T)]) -> Vec<&'static str> {
        table.iter().map(|(n, _)| *n).collect()
    }
    // `of_op` reads a reference at its op's table index.
    let pairs = [
        (
            names(elementwise::UNARY),
            UNARY.iter().map(|s| s.name).collect(),
        ),
        (
            names(elementwise::BINARY),
            BINARY.iter().map(|s| s.name).collect(),
        ),
        (
            names(elementwise::COMPARE),
            COMPARE.iter().map(|s| s.name).collect(),
        ),
        (
            names(elementwise::SCALAR),
            SCALAR.iter().map(|s| s.name).collect(),
        ),
        (
            names(elementwise::QUANTIZED),
            QUANTIZED.iter().map(|s| s.name).collect(),
        ),
        (
            names(along_dim::ALONG_DIM),
            ALONG_DIM.iter().map(|s| s.name).collect(),
        ),
        (
            names(module::MODULE),
            MODULE.iter().map(|s| s.name).collect::<Vec<_>>(),
        ),
    ];
    for (references, entries) in pairs {
        assert_eq!(references, entries);
    }
}

#[test]
fn partial_sums_past_the_range_are_open_and_a_non_finite_sum_may_be_any_non_finite() {
    // An average pool of two f32::MAX: the window's sum is inf before it is halved.
    let sum = Allowance {
        terms: 2.0 * f64::from(f32::MAX),
        ..PLAIN
    };
    let past = judge(
        &floats(&[3.0e38]),
        &floats(&[f64::INFINITY]),
        DType::F32,
        Tolerance::Balanced,
        sum,
    );
    assert!(matches!(past, Judged::Agree(0)));
    // An inf in a window: inf or NaN, as the order of the sum has it; a finite element is
    // still judged (a NaN spread into a window that holds none differs).
    let window = Allowance {
        terms: 8.0,
        ..PLAIN
    };
    let open = judge(
        &floats(&[f64::INFINITY, 1.0]),
        &floats(&[f64::NAN, 1.0]),
        DType::F32,
        Tolerance::Balanced,
        window,
    );
    assert!(matches!(open, Judged::Agree(1)));
    let spread = judge(
        &floats(&[1.0]),
        &floats(&[f64::NAN]),
        DType::F32,
        Tolerance::Balanced,
        window,
    );
    assert!(matches!(spread, Judged::Differ(0, _, _)));
    // An op that does not accumulate still judges its infinities.
    let plain = judge(
        &floats(&[f64::INFINITY]),
        &floats(&[f64::NAN]),
        DType::F32,
        Tolerance::Balanced,
        PLAIN,
    );
    assert!(matches!(plain, Judged::Differ(0, _, _)));
}

#[test]
fn a_nan_where_the_definition_gives_a_number_differs() {
    let judged = judge(
        &floats(&[1.0, 6.0]),
        &floats(&[1.0, f64::NAN]),
        DType::F32,
        Tolerance::Balanced,
        PLAIN,
    );
    assert!(matches!(judged, Judged::Differ(1, ref e, ref a) if e == "6.0" && a == "NaN"));
}

#[test]
fn a_correctly_rounded_op_is_held_to_half_a_unit_on_flex_and_three_units_on_wgpu() {
    let f32s = |v: f32| floats(&[f64::from(v)]);
    let up = |v: f32, n: u32| f32::from_bits(v.to_bits() + n);
    let on = |backend, want: f32, got: f32, dtype| {
        let allow = Allowance { backend, ..PLAIN };
        matches!(
            judge(&f32s(want), &f32s(got), dtype, Tolerance::Rounded, allow),
            Judged::Agree(1)
        )
    };
    // 10 + 3: the rounded value itself passes on Flex, one unit off does not; nor does a
    // matmul-sized error (1e-4 relative), which the balanced preset's 0.5% lets through.
    assert!(on(Backend::Flex, 13.0, 13.0, DType::F32));
    assert!(!on(Backend::Flex, 13.0, up(13.0, 1), DType::F32));
    assert!(!on(Backend::Flex, 13.0, 13.0013, DType::F32));
    let balanced = judge(
        &f32s(13.0),
        &f32s(13.0013),
        DType::F32,
        Tolerance::Balanced,
        PLAIN,
    );
    assert!(matches!(balanced, Judged::Agree(1)));
    // wgpu: a division within 2.5 units (at 8, where a unit is epsilon times the value),
    // and a flushed subnormal.
    assert!(on(Backend::Wgpu, 8.0, up(8.0, 3), DType::F32));
    assert!(!on(Backend::Wgpu, 8.0, up(8.0, 4), DType::F32));
    assert!(on(Backend::Wgpu, f32::from_bits(5), 0.0, DType::F32));
    assert!(!on(Backend::Flex, f32::from_bits(5), 0.0, DType::F32));
    // A BF16 result one unit (2^-7 at 1) off does not pass on Flex.
    let bf16 = |v: f64| floats(&[v]);
    let flex = Allowance {
        backend: Backend::Flex,
        ..PLAIN
    };
    let same = judge(
        &bf16(1.5),
        &bf16(1.5),
        DType::BF16,
        Tolerance::Rounded,
        flex,
    );
    let one = judge(
        &bf16(1.5),
        &bf16(1.5 + 1.0 / 128.0),
        DType::BF16,
        Tolerance::Rounded,
        flex,
    );
    assert!(matches!(same, Judged::Agree(1)));
    assert!(matches!(one, Judged::Differ(0, _, _)));
}

#[test]
fn an_exact_or_step_op_over_a_coarse_dtype_stays_exact() {
    // A BF16 floor of 64.5 that hands back its operand; the preset widened to two BF16
    // steps (1.0 at 64) let it through.
    let floor = judge(
        &floats(&[64.0]),
        &floats(&[64.5]),
        DType::BF16,
        Tolerance::Step,
        PLAIN,
    );
    assert!(matches!(floor, Judged::Differ(0, _, _)));
    let right = judge(
        &floats(&[64.0]),
        &floats(&[64.0]),
        DType::BF16,
        Tolerance::Step,
        PLAIN,
    );
    assert!(matches!(right, Judged::Agree(1)));
    let f16 = judge(
        &floats(&[3.0]),
        &floats(&[3.0 + 1.0 / 512.0]),
        DType::F16,
        Tolerance::Exact,
        PLAIN,
    );
    assert!(matches!(f16, Judged::Differ(0, _, _)));
}

#[test]
fn values_within_the_family_bounds_agree_and_nans_agree_with_nans() {
    let judged = judge(
        &floats(&[1.0, f64::NAN, f64::INFINITY]),
        &floats(&[1.001, f64::NAN, f64::INFINITY]),
        DType::F32,
        Tolerance::Balanced,
        PLAIN,
    );
    assert!(matches!(judged, Judged::Agree(3)));
    let exact = judge(
        &floats(&[1.0]),
        &floats(&[1.001]),
        DType::F32,
        Tolerance::Exact,
        PLAIN,
    );
    assert!(matches!(exact, Judged::Differ(0, _, _)));
}

#[test]
fn an_int_beyond_its_dtype_and_a_float_beyond_its_dtype_or_its_formulas_headroom_are_left_open() {
    let ints = |v: i128| Host::int(vec![1], vec![Some(v)]);
    let over = judge(
        &ints(1 << 40),
        &ints(7),
        DType::I32,
        Tolerance::Exact,
        PLAIN,
    );
    assert!(matches!(over, Judged::Agree(0)));
    let big = judge(
        &floats(&[1e300]),
        &floats(&[f64::INFINITY]),
        DType::F32,
        Tolerance::Exact,
        PLAIN,
    );
    assert!(matches!(big, Judged::Agree(0)));
    // Within F16's range, but not its formula's way there (cross_middle's 9x² for 8x²).
    let f16 = |v: f64| floats(&[v]);
    let on_the_way = Allowance {
        headroom: 9.0 / 8.0,
        ..PLAIN
    };
    let past = judge(
        &f16(59168.0),
        &f16(f64::INFINITY),
        DType::F16,
        Tolerance::Balanced,
        on_the_way,
    );
    assert!(matches!(past, Judged::Agree(0)));
    let within = judge(
        &f16(8.0),
        &f16(f64::INFINITY),
        DType::F16,
        Tolerance::Balanced,
        on_the_way,
    );
    assert!(matches!(within, Judged::Differ(0, _, _)));
}
