//! The library bounds the reference judges Flex's math functions with are the accuracy
//! table's: every F16 and BF16 input, and the F32 sample, is within its entry's bound.

use dispatch_fuzz::accuracy::{bound_ratio, inputs, measure, ulp_distance};
use dispatch_fuzz::oracles::reference::bound::library_bounds;
use dispatch_fuzz::program::{Dtype, UnaryOp};

#[test]
fn every_library_entry_is_within_its_bound_over_every_half_input_and_the_f32_sample() {
    for dtype in [Dtype::F16, Dtype::Bf16, Dtype::F32] {
        let xs = inputs(dtype, 4096, 0);
        for (name, ulps) in library_bounds() {
            let entry = UnaryOp::named(name).expect("a table entry");
            let row = measure(entry, dtype, &xs).expect("Flex runs the entry");
            let bound = ulps
                .of(dtype)
                .expect("every library bound covers F16, BF16 and F32");
            assert!(
                row.max_ulps <= bound,
                "{name} over {dtype:?}: {} units, its bound {bound} (worst {:?})",
                row.max_ulps,
                row.worst
            );
        }
    }
}

#[test]
fn rust_f32_atanh_and_acosh_are_far_off_next_to_minus_one_and_one_so_they_have_no_library_bound() {
    assert!(library_bounds().all(|(n, _)| n != "atanh" && n != "acosh"));
    let entry = UnaryOp::named("atanh").unwrap();
    let row = measure(entry, Dtype::F32, &[-0.99999994, 0.5]).unwrap();
    let (x, burn, reference) = row.worst.unwrap();
    assert_eq!(x, f64::from(-0.99999994f32));
    assert!(((burn - reference) / reference).abs() > 0.03, "{row:?}");
    let entry = UnaryOp::named("acosh").unwrap();
    let row = measure(entry, Dtype::F32, &[1.0000003576278687, 2.0]).unwrap();
    assert!(row.max_ulps > 100.0, "{row:?}");
}

#[test]
fn units_in_the_last_place_count_the_values_between_two_floats_across_zero_and_binades() {
    assert_eq!(
        ulp_distance(Dtype::F32, 1.0, f64::from(1.0f32 + f32::EPSILON)),
        1.0
    );
    let below_one = f64::from(f32::from_bits(1.0f32.to_bits() - 1));
    assert_eq!(
        ulp_distance(Dtype::F32, below_one, f64::from(1.0f32 + f32::EPSILON)),
        2.0
    );
    let tiniest = f64::from(f32::from_bits(1));
    assert_eq!(ulp_distance(Dtype::F32, -tiniest, tiniest), 2.0);
    assert_eq!(ulp_distance(Dtype::F16, f64::NAN, 1.0), f64::INFINITY);
    assert_eq!(ulp_distance(Dtype::Bf16, f64::NAN, f64::NAN), 0.0);
}

#[test]
fn powi_by_two_over_the_f32_sweep_is_within_the_library_bound_its_row_states() {
    use dispatch_fuzz::accuracy::measure_op;
    use dispatch_fuzz::oracles::reference::along_dim::ALONG_DIM_ERROR;
    use dispatch_fuzz::oracles::reference::bound::Model;
    use dispatch_fuzz::program::{AlongDimOp, Op};
    let entry = AlongDimOp::named("powi_by_two").expect("a table entry");
    let Some(Model::Library(ulps)) = ALONG_DIM_ERROR[entry.index()].model else {
        panic!("powi_by_two's row states a library bound");
    };
    let op = Op::AlongDim {
        op: entry,
        src: 0,
        dim: 0,
    };
    // Over F32 alone: over any other float dtype its operands mix dtypes (see its row).
    let row = measure_op(&op, Dtype::F32, &inputs(Dtype::F32, 4096, 0)).expect("Flex runs it");
    let bound = ulps.of(Dtype::F32).expect("a bound over F32");
    assert!(
        row.max_ulps <= bound,
        "{} units, its bound {bound} (worst {:?})",
        row.max_ulps,
        row.worst
    );
}

/// Every binary and scalar entry with a library bound, over pairs of the sweep (the second
/// operand the sweep rotated by a prime stride, so every exponent meets many others) and every
/// scalar of the step's range.
#[test]
fn every_two_operand_library_entry_is_within_its_bound_over_pairs_of_the_sweep() {
    use dispatch_fuzz::accuracy::measure_over;
    use dispatch_fuzz::oracles::reference::bound::{model, Model};
    use dispatch_fuzz::oracles::Backend;
    use dispatch_fuzz::program::{BinaryOp, Op, ScalarOp, BINARY, SCALAR};
    for dtype in [Dtype::F16, Dtype::Bf16, Dtype::F32, Dtype::F64] {
        let xs = inputs(dtype, 4096, 0);
        let mut ops: Vec<Op> = Vec::new();
        for spec in BINARY {
            let op = BinaryOp::named(spec.name).unwrap();
            ops.push(Op::Binary { op, lhs: 0, rhs: 1 });
        }
        for spec in SCALAR {
            let op = ScalarOp::named(spec.name).unwrap();
            ops.extend((-8..=8).map(|value| Op::Scalar { op, src: 0, value }));
        }
        for op in ops {
            let Some(Model::Library(ulps)) = model(&op, Backend::Flex) else {
                continue;
            };
            let Some(bound) = ulps.of(dtype) else {
                continue;
            };
            for stride in [1, 7919] {
                let ys: Vec<f64> = (0..xs.len())
                    .map(|i| xs[(i * stride + 1) % xs.len()])
                    .collect();
                let row = measure_over(&op, dtype, &[&xs, &ys]).expect("Flex runs it");
                assert!(
                    row.max_ulps <= bound,
                    "{} over {dtype:?}: {} units, its bound {bound} (worst {:?})",
                    op.name(),
                    row.max_ulps,
                    row.worst
                );
            }
        }
    }
}

#[test]
fn every_composed_activation_is_within_its_bound_over_every_half_input_and_the_f32_and_f64_samples()
{
    let composed = [
        "elu",
        "celu",
        "selu",
        "tanhshrink",
        "gelu",
        "gelu_approximate",
        "hard_sigmoid",
        "hard_swish",
    ];
    for dtype in [Dtype::F16, Dtype::Bf16, Dtype::F32, Dtype::F64] {
        let xs = inputs(dtype, 4096, 0);
        for name in composed {
            let entry = UnaryOp::named(name).expect("a table entry");
            let (ratio, worst) = bound_ratio(entry, dtype, &xs).expect("a derived bound");
            assert!(
                ratio <= 1.0,
                "{name} over {dtype:?}: {ratio} of its bound at (x, Burn, reference) {worst:?}"
            );
        }
    }
}

#[test]
fn every_modeled_quantization_round_trip_is_within_its_intervals_over_chunks_of_each_sweep() {
    use dispatch_fuzz::accuracy::bound_ratio_of;
    use dispatch_fuzz::oracles::reference::quantization::modeled;
    use dispatch_fuzz::program::{Grid, Op, QuantizedOp, Scheme};
    let entries = ["roundtrip", "add_zero"].map(|e| QuantizedOp::named(e).expect("a table entry"));
    for dtype in [Dtype::F16, Dtype::Bf16, Dtype::F32, Dtype::F64] {
        // Finite values well inside the range (twice the largest is the scale's numerator),
        // in chunks of 16 that mix magnitudes (a stride through the sorted sweep) and chunks of
        // neighbours (ties and equal magnitudes).
        let xs: Vec<f64> = inputs(dtype, 1024, 1)
            .into_iter()
            .filter(|x| x.is_finite() && x.abs() < dtype.largest() / 4.0)
            .collect();
        let n = xs.len();
        let strided: Vec<f64> = (0..n).map(|i| xs[(i * 7919) % n]).collect();
        let chunks = strided.chunks(16).chain(xs.chunks(16)).step_by(7).take(400);
        for (scheme, entry) in Scheme::all()
            .filter(|s| modeled(*s))
            .flat_map(|s| entries.map(|e| (s, e)))
        {
            // A range past the dtype (e5m2's over F16) divides to a zero scale in it: modeled
            // nowhere (the stored quantizing-an-f16-tensor-computes-its-scale-in-f16).
            if matches!(scheme.spec().grid, Grid::Float { max, .. } if 2.0 * max > dtype.largest())
            {
                continue;
            }
            let op = Op::Quantized {
                op: entry,
                src: 0,
                scheme,
            };
            let mut held = 0;
            for chunk in chunks.clone() {
                // A chunk whose scale no f32 holds (an F64 past f32::MAX) has no definition.
                let Ok((ratio, worst)) = bound_ratio_of(&op, dtype, chunk) else {
                    continue;
                };
                held += 1;
                assert!(
                    ratio <= 1.0,
                    "{} {} over {dtype:?}: {ratio} of its interval at (x, Burn, middle) {worst:?} in {chunk:?}",
                    entry.name(),
                    scheme.name()
                );
            }
            assert!(
                held >= 50,
                "{} {} over {dtype:?}: {held} chunks",
                entry.name(),
                scheme.name()
            );
        }
    }
}
