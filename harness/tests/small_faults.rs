//! Faults at the size of real numerical bugs, planted where every path computes the op: one ULP
//! off, a kernel that skips a channel or a term, a divisor that counts the wrong taps. Each is
//! clean without the fault and a reference mismatch naming the op with it.

use crate::common;

use burn::tensor::{DType, TensorData};
use dispatch_fuzz::check;
use dispatch_fuzz::interpreter::faults::{wrong_result_for_tests, WrongResult};
use dispatch_fuzz::oracles::REFERENCE_MISMATCH;

/// Checks that `steps` (a program's JSON steps) gives no finding, and with `fault` planted a
/// reference mismatch whose summary names `entry`.
fn caught(steps: &str, fault: WrongResult, entry: &str) {
    let program = common::program(steps);
    let clean = check(&common::cpu(), &program).expect("the harness runs the program");
    assert!(clean.finding.is_none(), "{:?}", clean.finding);
    wrong_result_for_tests(Some(fault));
    let wrong = check(&common::cpu(), &program);
    wrong_result_for_tests(None);
    let finding = wrong
        .expect("the harness runs the program")
        .finding
        .expect("the reference oracle sees the fault");
    assert_eq!(finding.class, REFERENCE_MISMATCH, "{finding:?}");
    assert!(
        finding.signature.summary.contains(&format!("{entry} over")),
        "{finding:?}"
    );
}

/// The steps of a program that runs module entry `op` with `kernel` over an arange of `shape`.
fn module_op(op: &str, shape: &str, kernel: u8) -> String {
    format!(
        r#"[{{"create": {{"out": 0, "kind": "float", "shape": {shape}, "fill": "arange", "device": "flex"}}}},
            {{"op": {{"out": 1, "op": {{"module": {{"op": "{op}", "src": 0, "kernel": {kernel}}}}}}}}}]"#
    )
}

/// `data` as f64 values with its shape.
fn values(data: &TensorData) -> (Vec<usize>, Vec<f64>) {
    let v = data.clone().convert::<f64>().try_to_vec::<f64>().unwrap();
    (data.shape().to_vec(), v)
}

/// `values` back in `like`'s dtype.
fn rebuilt(shape: Vec<usize>, v: Vec<f64>, like: &TensorData) -> TensorData {
    TensorData::new(v, shape).convert_dtype(like.dtype())
}

/// `data` with every element times `k`.
fn times(data: TensorData, k: f64) -> TensorData {
    let (shape, v) = values(&data);
    rebuilt(shape, v.iter().map(|x| x * k).collect(), &data)
}

/// `data` with `d` added to every element.
fn plus(data: TensorData, d: f64) -> TensorData {
    let (shape, v) = values(&data);
    rebuilt(shape, v.iter().map(|x| x + d).collect(), &data)
}

/// `data` with every element whose index along the last dim is `last - from_end` zeroed.
fn zero_last(data: TensorData, dim_from_end: usize) -> TensorData {
    let (shape, mut v) = values(&data);
    let inner: usize = shape[shape.len() - dim_from_end..].iter().product();
    let len = shape[shape.len() - dim_from_end];
    let block = inner / len;
    for (i, x) in v.iter_mut().enumerate() {
        if (i % inner) / block == len - 1 {
            *x = 0.0;
        }
    }
    rebuilt(shape, v, &data)
}

/// `data` (F16) with every element one unit in the last place larger in magnitude.
fn one_ulp_up_f16(data: TensorData) -> TensorData {
    let v: Vec<burn::tensor::f16> = data.try_to_vec().unwrap();
    let up = v
        .iter()
        .map(|x| burn::tensor::f16::from_bits(x.to_bits() + 1))
        .collect::<Vec<_>>();
    TensorData::new(up, data.shape().to_vec())
}

#[test]
fn a_matmul_that_drops_its_last_inner_term_is_a_reference_mismatch() {
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [2, 3], "fill": "arange", "device": "flex"}},
            {"create": {"out": 1, "kind": "float", "shape": [3, 2], "fill": "arange", "device": "flex"}},
            {"op": {"out": 2, "op": {"matmul": {"lhs": 0, "rhs": 1, "transpose_rhs": false}}}}]"#,
        WrongResult::over("matmul", |i, x| if i == 0 { zero_last(x, 1) } else { x }),
        "matmul",
    );
}

#[test]
fn a_conv2d_that_skips_its_last_input_channel_is_a_reference_mismatch() {
    caught(
        &module_op("conv2d", "[1, 2, 4, 4]", 3),
        WrongResult::over("module conv2d", |_, x| zero_last(x, 3)),
        "conv2d",
    );
}

#[test]
fn a_conv_transpose2d_that_drops_its_last_output_column_is_a_reference_mismatch() {
    caught(
        &module_op("conv_transpose2d", "[1, 2, 4, 4]", 3),
        WrongResult::of("module conv_transpose2d", |_, r| zero_last(r, 1)),
        "conv_transpose2d",
    );
}

#[test]
fn an_avg_pool2d_whose_divisor_leaves_out_the_padding_it_was_told_to_count_is_a_reference_mismatch()
{
    // A 3 x 3 window, same padding, counting the padding in: an edge window holds 6 (a corner
    // 4) of its 9 taps, and the wrong divisor is what it holds.
    caught(
        &module_op("avg_pool2d", "[1, 1, 4, 4]", 3),
        WrongResult::of("module avg_pool2d", |_, r| {
            let (shape, mut v) = values(&r);
            let (h, w) = (shape[2], shape[3]);
            for (i, x) in v.iter_mut().enumerate() {
                let (y, xx) = ((i / w) % h, i % w);
                let rows = 3 - usize::from(y == 0) - usize::from(y == h - 1);
                let cols = 3 - usize::from(xx == 0) - usize::from(xx == w - 1);
                *x *= 9.0 / (rows * cols) as f64;
            }
            rebuilt(shape, v, &r)
        }),
        "avg_pool2d",
    );
}

#[test]
fn a_var_that_divides_by_n_instead_of_n_minus_one_is_a_reference_mismatch() {
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [4, 4], "fill": "arange", "device": "flex"}},
            {"op": {"out": 1, "op": {"along_dim": {"op": "var", "src": 0, "dim": 1}}}}]"#,
        WrongResult::of("along_dim var", |_, r| {
            let (shape, v) = values(&r);
            rebuilt(shape, v.iter().map(|x| x * 3.0 / 4.0).collect(), &r)
        }),
        "var",
    );
}

#[test]
fn an_f16_add_one_unit_in_the_last_place_off_is_a_reference_mismatch() {
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [4], "fill": "arange", "device": "flex", "dtype": "f16"}},
            {"create": {"out": 1, "kind": "float", "shape": [4], "fill": "arange", "device": "flex", "dtype": "f16"}},
            {"op": {"out": 2, "op": {"binary": {"op": "add", "lhs": 0, "rhs": 1}}}}]"#,
        WrongResult::of("binary add", |_, r| {
            assert_eq!(r.dtype(), DType::F16);
            one_ulp_up_f16(r)
        }),
        "add",
    );
}

#[test]
fn a_bf16_floor_that_returns_its_operand_is_a_reference_mismatch() {
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [4], "fill": "arange", "device": "flex", "dtype": "bf16"}},
            {"op": {"out": 1, "op": {"scalar": {"op": "div", "src": 0, "value": 2}}}},
            {"op": {"out": 2, "op": {"unary": {"op": "floor", "src": 1}}}}]"#,
        WrongResult::of("unary floor", |operands, _| operands[0].clone()),
        "floor",
    );
}

#[test]
fn a_round_that_breaks_ties_away_from_zero_is_a_reference_mismatch() {
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [6], "fill": "arange", "device": "flex"}},
            {"op": {"out": 1, "op": {"scalar": {"op": "div", "src": 0, "value": 2}}}},
            {"op": {"out": 2, "op": {"unary": {"op": "round", "src": 1}}}}]"#,
        round_away_from_zero(),
        "round",
    );
}

#[test]
fn a_round_that_breaks_ties_away_from_zero_over_the_halves_fill_is_a_reference_mismatch() {
    // -1.5, -0.5, 0.5, 1.5: every element a tie, of either sign.
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [4], "fill": "halves", "device": "flex"}},
            {"op": {"out": 1, "op": {"unary": {"op": "round", "src": 0}}}}]"#,
        round_away_from_zero(),
        "round",
    );
}

/// A round that breaks ties away from zero (Rust's `f64::round`), where Burn's is half to even.
fn round_away_from_zero() -> WrongResult {
    WrongResult::of("unary round", |operands, r| {
        let (shape, v) = values(&operands[0]);
        rebuilt(shape, v.iter().map(|x| x.round()).collect(), &r)
    })
}

#[test]
fn a_log1p_computed_as_the_log_of_one_plus_x_over_tiny_values_is_a_reference_mismatch() {
    // Near zero 1 + x rounds in f32 and takes x's low bits with it: ln(1 + x) is thousands of
    // units off where ln_1p is within two.
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [4], "fill": "tiny", "device": "flex"}},
            {"op": {"out": 1, "op": {"unary": {"op": "log1p", "src": 0}}}}]"#,
        WrongResult::of("unary log1p", |operands, r| {
            let v: Vec<f32> = operands[0].clone().try_to_vec().unwrap();
            let cancelled = v.iter().map(|x| (1.0 + x).ln()).collect::<Vec<_>>();
            TensorData::new(cancelled, r.shape().to_vec())
        }),
        "log1p",
    );
}

#[test]
fn a_matmul_off_by_one_everywhere_is_a_reference_mismatch() {
    // [[10, 13], [28, 40]]: Burn's presets scaled by the terms allowed 8.1 here.
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [2, 3], "fill": "arange", "device": "flex"}},
            {"create": {"out": 1, "kind": "float", "shape": [3, 2], "fill": "arange", "device": "flex"}},
            {"op": {"out": 2, "op": {"matmul": {"lhs": 0, "rhs": 1, "transpose_rhs": false}}}}]"#,
        WrongResult::of("matmul", |_, r| plus(r, 1.0)),
        "matmul",
    );
}

#[test]
fn a_conv2d_of_kernel_one_that_returns_zeros_is_a_reference_mismatch() {
    caught(
        &module_op("conv2d", "[1, 2, 4, 4]", 1),
        WrongResult::of("module conv2d", |_, r| {
            let (shape, v) = values(&r);
            rebuilt(shape, vec![0.0; v.len()], &r)
        }),
        "conv2d",
    );
}

#[test]
fn an_exp_four_units_in_the_last_place_off_is_a_reference_mismatch() {
    // Flex's exp is within one unit of the reference (`dispatch-fuzz accuracy`), its bound
    // two: four units are outside it, where the transcendental preset (1% and 0.01) hid them.
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [4], "fill": "arange", "device": "flex"}},
            {"op": {"out": 1, "op": {"unary": {"op": "exp", "src": 0}}}}]"#,
        WrongResult::of("unary exp", |_, r| {
            let v: Vec<f32> = r.try_to_vec().unwrap();
            let off = v
                .iter()
                .map(|x| f32::from_bits(x.to_bits() + 4))
                .collect::<Vec<_>>();
            TensorData::new(off, r.shape().to_vec())
        }),
        "exp",
    );
}

#[test]
fn a_softmax_over_the_other_dim_is_a_reference_mismatch() {
    // Over a [4, 4] arange the rows are equal, so a softmax along dim 0 gives each column a
    // constant where along dim 1 it gives each row the same four values: the wrong dim's
    // result, where the preset's 1% of the terms' scale (2.4 here) let any value in [0, 1] by.
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [4, 4], "fill": "arange", "device": "flex"}},
            {"op": {"out": 1, "op": {"scalar": {"op": "div", "src": 0, "value": 8}}}},
            {"op": {"out": 2, "op": {"along_dim": {"op": "softmax", "src": 1, "dim": 1}}}}]"#,
        WrongResult::of("along_dim softmax", |operands, r| {
            let (shape, x) = values(&operands[0]);
            let (rows, cols) = (shape[0], shape[1]);
            let mut out = vec![0.0; x.len()];
            for c in 0..cols {
                let column: Vec<f64> = (0..rows).map(|r| x[r * cols + c]).collect();
                let max = column.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = column.iter().map(|v| (v - max).exp()).sum();
                for r in 0..rows {
                    out[r * cols + c] = (column[r] - max).exp() / sum;
                }
            }
            rebuilt(shape, out, &r)
        }),
        "softmax",
    );
}

#[test]
fn an_attention_over_far_apart_scores_a_hundredth_of_a_percent_off_is_a_reference_mismatch() {
    // Over a [1, 1, 4, 4] ramp the scores are hundreds apart: each probability is near 0 or 1,
    // so score errors hardly move the result, which is nearly a value row (the preset allowed
    // 1% there).
    caught(
        &module_op("attention", "[1, 1, 4, 4]", 3),
        WrongResult::of("module attention", |_, r| times(r, 1.0001)),
        "attention",
    );
}

#[test]
fn an_attention_a_tenth_of_a_percent_off_is_a_reference_mismatch() {
    // Scores near 1 over a [1, 1, 4, 4] ramp: the composed bound is near 1e-5 relative, where
    // the transcendental preset allowed 1% and 0.01.
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [1, 1, 4, 4], "fill": "arange", "device": "flex"}},
            {"op": {"out": 1, "op": {"scalar": {"op": "div", "src": 0, "value": 16}}}},
            {"op": {"out": 2, "op": {"module": {"op": "attention", "src": 1, "kernel": 3}}}}]"#,
        WrongResult::of("module attention", |_, r| times(r, 1.001)),
        "attention",
    );
}

#[test]
fn a_quiet_softmax_a_tenth_of_a_percent_off_is_a_reference_mismatch() {
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [4, 4], "fill": "arange", "device": "flex"}},
            {"op": {"out": 1, "op": {"scalar": {"op": "div", "src": 0, "value": 4}}}},
            {"op": {"out": 2, "op": {"along_dim": {"op": "quiet_softmax", "src": 1, "dim": 1}}}}]"#,
        WrongResult::of("along_dim quiet_softmax", |_, r| times(r, 1.001)),
        "quiet_softmax",
    );
}

#[test]
fn a_log_softmax_off_by_a_thousandth_is_a_reference_mismatch() {
    // Over a lane of 0..4: results near -3.4 to -0.4, held to a few units absolute.
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [4, 4], "fill": "arange", "device": "flex"}},
            {"op": {"out": 1, "op": {"along_dim": {"op": "log_softmax", "src": 0, "dim": 1}}}}]"#,
        WrongResult::of("along_dim log_softmax", |_, r| plus(r, 1e-3)),
        "log_softmax",
    );
}

/// The steps of a program that runs unary entry `op` over a [4, 4] arange scaled to
/// -2..1.75 (steps of a quarter).
fn unary_over_quarters(op: &str) -> String {
    format!(
        r#"[{{"create": {{"out": 0, "kind": "float", "shape": [4, 4], "fill": "arange", "device": "flex"}}}},
            {{"op": {{"out": 1, "op": {{"scalar": {{"op": "div", "src": 0, "value": 4}}}}}}}},
            {{"op": {{"out": 2, "op": {{"scalar": {{"op": "sub", "src": 1, "value": 2}}}}}}}},
            {{"op": {{"out": 3, "op": {{"unary": {{"op": "{op}", "src": 2}}}}}}}}]"#
    )
}

#[test]
fn a_gelu_forwarded_to_its_tanh_approximation_is_a_reference_mismatch() {
    // The two differ by 1e-4 to 1e-3 over -2..1.75, inside the transcendental preset (1% and
    // 0.01); gelu's composed bound is a few units.
    caught(
        &unary_over_quarters("gelu"),
        WrongResult::of("unary gelu", |operands, r| {
            let (shape, x) = values(&operands[0]);
            let c = (2.0 / std::f64::consts::PI).sqrt();
            let approximate = x
                .iter()
                .map(|x| 0.5 * x * (1.0 + (c * (x + 0.044715 * x * x * x)).tanh()))
                .collect();
            rebuilt(shape, approximate, &r)
        }),
        "gelu",
    );
}

#[test]
fn a_selu_with_its_constants_cut_to_four_decimals_is_a_reference_mismatch() {
    // 1.6733 and 1.0507 for 1.6732632 and 1.0507010: 2e-5 relative on the negative side.
    caught(
        &unary_over_quarters("selu"),
        WrongResult::of("unary selu", |operands, r| {
            let (_, x) = values(&operands[0]);
            let (shape, v) = values(&r);
            let cut = (1.6733 * 1.0507) / (1.673_263_242_354_377_3 * 1.050_700_987_355_480_5);
            let v = (x.iter().zip(v))
                .map(|(x, v)| if *x <= 0.0 { v * cut } else { v })
                .collect();
            rebuilt(shape, v, &r)
        }),
        "selu",
    );
}

#[test]
fn a_hard_swish_whose_slope_is_rounded_to_a_sixth_of_four_decimals_is_a_reference_mismatch() {
    // x · clamp(0.1667·x + 0.5) for x · clamp(x/6 + 0.5): 4e-5 of x² off in the ramp.
    caught(
        &unary_over_quarters("hard_swish"),
        WrongResult::of("unary hard_swish", |operands, r| {
            let (shape, x) = values(&operands[0]);
            let v = x
                .iter()
                .map(|x| x * (0.1667 * x + 0.5).clamp(0.0, 1.0))
                .collect();
            rebuilt(shape, v, &r)
        }),
        "hard_swish",
    );
}

#[test]
fn an_elu_a_thousandth_of_a_percent_off_below_zero_is_a_reference_mismatch() {
    caught(
        &unary_over_quarters("elu"),
        WrongResult::of("unary elu", |_, r| times(r, 1.00001)),
        "elu",
    );
}

#[test]
fn a_quantization_round_trip_whose_scale_divides_by_256_for_255_is_a_reference_mismatch() {
    // Every value 0.4% small: within the one quantization step a round trip was judged by,
    // outside the interval each element's code allows.
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [4, 4], "fill": "arange", "device": "flex"}},
            {"op": {"out": 1, "op": {"unary": {"op": "quantize_roundtrip", "src": 0}}}}]"#,
        WrongResult::of("unary quantize_roundtrip", |_, r| times(r, 255.0 / 256.0)),
        "quantize_roundtrip",
    );
}

#[test]
fn a_cumprod_a_thousandth_of_a_percent_off_is_a_reference_mismatch() {
    // Running products of 4..8 reach 840: the preset allowed 4.2 of it, a product's rounding
    // allows 3e-4.
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [2, 4], "fill": "arange", "device": "flex"}},
            {"op": {"out": 1, "op": {"along_dim": {"op": "cumprod", "src": 0, "dim": 1}}}}]"#,
        WrongResult::of("along_dim cumprod", |_, r| times(r, 1.00001)),
        "cumprod",
    );
}

#[test]
fn a_minus_mean_whose_mean_is_a_thousandth_of_a_percent_off_is_a_reference_mismatch() {
    // x − 1.00001 · mean(x) over 0..8: 3.5e-5 off, where the preset allowed 0.28.
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [2, 4], "fill": "arange", "device": "flex"}},
            {"op": {"out": 1, "op": {"unary": {"op": "minus_mean", "src": 0}}}}]"#,
        WrongResult::of("unary minus_mean", |operands, r| {
            let (_, x) = values(&operands[0]);
            let mean = x.iter().sum::<f64>() / x.len() as f64;
            plus(r, -1e-5 * mean)
        }),
        "minus_mean",
    );
}

#[test]
fn a_cross_product_a_thousandth_of_a_percent_off_is_a_reference_mismatch() {
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [4], "fill": "arange", "device": "flex"}},
            {"op": {"out": 1, "op": {"along_dim": {"op": "cross_middle", "src": 0, "dim": 0}}}}]"#,
        WrongResult::of("along_dim cross_middle", |_, r| times(r, 1.00001)),
        "cross_middle",
    );
}

#[test]
fn an_fmod_one_unit_in_the_last_place_off_is_a_reference_mismatch() {
    // fmod is exact in every dtype: 0..8 modulo 3 one unit up is 2e-7 off, where the preset
    // allowed 0.5%.
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [2, 4], "fill": "arange", "device": "flex"}},
            {"op": {"out": 1, "op": {"scalar": {"op": "fmod", "src": 0, "value": 3}}}}]"#,
        WrongResult::of("scalar fmod", |_, r| {
            let v: Vec<f32> = r.try_to_vec().unwrap();
            let up = v.iter().map(|x| f32::from_bits(x.to_bits() + 1)).collect();
            TensorData::new::<f32, _>(up, r.shape().to_vec())
        }),
        "fmod",
    );
}

#[test]
fn a_powi_a_thousandth_of_a_percent_off_is_a_reference_mismatch() {
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [2, 4], "fill": "arange", "device": "flex"}},
            {"op": {"out": 1, "op": {"scalar": {"op": "powi", "src": 0, "value": 3}}}}]"#,
        WrongResult::of("scalar powi", |_, r| times(r, 1.00001)),
        "powi",
    );
}

#[test]
fn an_e4m3_round_trip_a_percent_off_is_a_reference_mismatch() {
    // 0..16 through e4m3 codes: every value 1% large, within the quantization step (an e4m3
    // unit is 12.5% at the largest code), outside the interval each element's code allows.
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [4, 4], "fill": "arange", "device": "flex"}},
            {"op": {"out": 1, "op": {"quantized": {"op": "roundtrip", "src": 0, "scheme": "e4m3_native"}}}}]"#,
        WrongResult::of("quantized roundtrip", |_, r| times(r, 1.01)),
        "roundtrip",
    );
}

#[test]
fn a_float_op_on_a_quantized_tensor_a_third_of_a_percent_off_is_a_reference_mismatch() {
    // add_scalar(0) on a quantized tensor dequantizes it once (the device's default quantization
    // propagation hands the float back): its interval, not the balanced preset, holds it.
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [4, 4], "fill": "arange", "device": "flex"}},
            {"op": {"out": 1, "op": {"quantized": {"op": "add_zero", "src": 0, "scheme": "q8f_packed"}}}}]"#,
        WrongResult::of("quantized add_zero", |_, r| times(r, 255.0 / 256.0)),
        "add_zero",
    );
}

#[test]
fn a_matmul_by_a_quantized_weight_a_tenth_of_a_percent_off_is_a_reference_mismatch() {
    // x times the quantized identity is x · 254/255 (Q8F clamps the ones' 127.5 steps to 127):
    // the preset allowed 0.5%, which a reference of x itself needed.
    caught(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [1, 2, 4], "fill": "arange", "device": "flex"}},
            {"op": {"out": 1, "op": {"module": {"op": "quantized_weight_matmul", "src": 0, "kernel": 1}}}}]"#,
        WrongResult::of("module quantized_weight_matmul", |_, r| times(r, 1.001)),
        "quantized_weight_matmul",
    );
}
