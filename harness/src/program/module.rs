//! The module op table: convolutions (plain, transposed, deformable), poolings and their
//! public backward functions, interpolation, normalization, attention, embedding, unfold/fold
//! and `linear` from `burn::tensor::module`, and the quantized matmul (over the operand's last
//! dim), one entry each, read like the other tables by the generator, the typing rule, the
//! printers, the interpreter, the differential and the reference.
//!
//! An entry is `name: rank -> result, tolerance, unspecified, [x, d, c, k, p, s] => call, reference
//! def, error model;` (the reference a `Module` of the reference oracle and the error model
//! `higham(terms)` (Higham's bound, the terms an element adds up counted as `Terms` says: a
//! convolution's channels times taps, a window's taps, ...) or `PRESET`, as in `along_dim.rs`,
//! compiled only there: an entry without them does not compile). The operand is a float tensor of exactly `rank` dims read as `[batch, channels,
//! spatial..]` (3: one spatial dim, 4: two); every entry keeps its spatial size (stride 1, "same"
//! padding), so the result has the operand's shape. 3-D entries insert a depth of 1 (`[n, c, 1, h,
//! w]`) and take it out again, so programs stay within `limits::MAX_RANK`. The call names its
//! variables, always these six: `x` (the operand), `d` (its device), `c` (its channel count), `k`
//! (the kernel size, 1 or 3), `p` (the padding, `(k - 1) / 2`) and `s` (the spatial size: a `usize`
//! for rank 3, `[usize; 2]` for rank 4). Weights are `arange` ramps, not constants, so an entry
//! that reads them transposed or from the wrong channel gives other values.

use super::kind::Kind;
use super::table::{
    mentions_ident, op_dtype, op_result, op_tolerance, op_unspecified, render, table_index,
    ResultDtype, Tolerance, Unspecified,
};

/// The table; see the module doc for the entry syntax.
macro_rules! module_ops {
    ($then:ident) => {
        $then! {
            // The plainest op first (the minimizer's replacement for every other).
            avg_pool2d: 4 -> same, balanced, none, [x, d, c, k, p, s] => burn::tensor::module::avg_pool2d(x,
                burn::tensor::ops::AvgPoolOptions::new([k, k]).with_stride([1, 1]).with_padding([p, p])),
                reference Module::Loops(avg_pool), error higham(Terms::Taps { bias: false });
            avg_pool1d: 3 -> same, balanced, none, [x, d, c, k, p, s] => burn::tensor::module::avg_pool1d(x,
                burn::tensor::ops::AvgPoolOptions::new([k]).with_stride([1]).with_padding([p])),
                reference Module::Loops(avg_pool), error higham(Terms::Taps { bias: false });
            max_pool2d: 4 -> same, exact, nan, [x, d, c, k, p, s] => burn::tensor::module::max_pool2d(x,
                burn::tensor::ops::MaxPoolOptions::new([k, k]).with_stride([1, 1]).with_padding([p, p])),
                reference Module::Loops(max_pool), error PRESET;
            max_pool1d: 3 -> same, exact, nan, [x, d, c, k, p, s] => burn::tensor::module::max_pool1d(x,
                burn::tensor::ops::MaxPoolOptions::new([k]).with_stride([1]).with_padding([p])),
                reference Module::Loops(max_pool), error PRESET;
            max_pool2d_indices: 4 -> Int, step, ties, [x, d, c, k, p, s] => burn::tensor::module::max_pool2d_with_indices(x,
                burn::tensor::ops::MaxPoolOptions::new([k, k]).with_stride([1, 1]).with_padding([p, p])).1,
                reference Module::Loops(max_pool_indices), error PRESET;
            adaptive_avg_pool2d: 4 -> same, balanced, none, [x, d, c, k, p, s] =>
                burn::tensor::module::adaptive_avg_pool2d(x, s),
                reference Module::Loops(identity), error higham(Terms::Whole);
            adaptive_avg_pool1d: 3 -> same, balanced, none, [x, d, c, k, p, s] =>
                burn::tensor::module::adaptive_avg_pool1d(x, s),
                reference Module::Loops(identity), error higham(Terms::Whole);
            conv2d: 4 -> same, balanced, none, [x, d, c, k, p, s] => burn::tensor::module::conv2d(x,
                Tensor::<1, Int>::arange(0..(c * c * k * k) as i64, &d).float().reshape([c, c, k, k]),
                Some(Tensor::<1, Int>::arange(0..c as i64, &d).float()),
                burn::tensor::ops::ConvOptions::new([1, 1], [p, p], [1, 1], 1)),
                reference Module::Loops(|x, k| {
                    let c = x.shape[1];
                    conv(
                        x,
                        k,
                        1,
                        |co, ci, ky, kx| (((co * c + ci) * k + ky) * k + kx) as f64,
                        |co| co as f64,
                    )
                }), error higham(Terms::ChannelTaps);
            conv2d_depthwise: 4 -> same, balanced, none, [x, d, c, k, p, s] => burn::tensor::module::conv2d(x,
                Tensor::<1, Int>::arange(0..(c * k * k) as i64, &d).float().reshape([c, 1, k, k]),
                None,
                burn::tensor::ops::ConvOptions::new([1, 1], [p, p], [1, 1], c)),
                reference Module::Loops(|x, k| {
                    let c = x.shape[1];
                    conv(
                        x,
                        k,
                        c,
                        |co, _, ky, kx| ((co * k + ky) * k + kx) as f64,
                        |_| 0.0,
                    )
                }), error higham(Terms::Taps { bias: true });
            conv1d: 3 -> same, balanced, none, [x, d, c, k, p, s] => burn::tensor::module::conv1d(x,
                Tensor::<1, Int>::arange(0..(c * c * k) as i64, &d).float().reshape([c, c, k]),
                Some(Tensor::<1, Int>::arange(0..c as i64, &d).float()),
                burn::tensor::ops::ConvOptions::new([1], [p], [1], 1)),
                reference Module::Loops(|x, k| {
                    let c = x.shape[1];
                    conv(
                        x,
                        k,
                        1,
                        |co, ci, _, kx| ((co * c + ci) * k + kx) as f64,
                        |co| co as f64,
                    )
                }), error higham(Terms::ChannelTaps);
            conv_transpose2d: 4 -> same, balanced, none, [x, d, c, k, p, s] => burn::tensor::module::conv_transpose2d(x,
                Tensor::<1, Int>::arange(0..(c * c * k * k) as i64, &d).float().reshape([c, c, k, k]),
                Some(Tensor::<1, Int>::arange(0..c as i64, &d).float()),
                burn::tensor::ops::ConvTransposeOptions::new([1, 1], [p, p], [0, 0], [1, 1], 1)),
                reference Module::Loops(conv_transpose), error higham(Terms::ChannelTaps);
            conv_transpose1d: 3 -> same, balanced, none, [x, d, c, k, p, s] => burn::tensor::module::conv_transpose1d(x,
                Tensor::<1, Int>::arange(0..(c * c * k) as i64, &d).float().reshape([c, c, k]),
                Some(Tensor::<1, Int>::arange(0..c as i64, &d).float()),
                burn::tensor::ops::ConvTransposeOptions::new([1], [p], [0], [1], 1)),
                reference Module::Loops(conv_transpose), error higham(Terms::ChannelTaps);
            interpolate_nearest: 4 -> same, exact, none, [x, d, c, k, p, s] => burn::tensor::module::interpolate(x,
                burn::tensor::module::InterpolateOptions { output_size: Some(s),
                    ..burn::tensor::module::InterpolateOptions::new(
                        burn::tensor::module::InterpolateMode::Nearest) }),
                reference Module::Loops(same_size), error PRESET;
            interpolate_bilinear: 4 -> same, balanced, none, [x, d, c, k, p, s] => burn::tensor::module::interpolate(x,
                burn::tensor::module::InterpolateOptions { output_size: Some(s),
                    ..burn::tensor::module::InterpolateOptions::new(
                        burn::tensor::module::InterpolateMode::Bilinear) }),
                reference Module::Loops(same_size), error higham(Terms::Whole);
            interpolate_bicubic: 4 -> same, balanced, none, [x, d, c, k, p, s] => burn::tensor::module::interpolate(x,
                burn::tensor::module::InterpolateOptions { output_size: Some(s),
                    ..burn::tensor::module::InterpolateOptions::new(
                        burn::tensor::module::InterpolateMode::Bicubic) }),
                reference Module::Loops(same_size), error PRESET;
            linear: 3 -> same, balanced, none, [x, d, c, k, p, s] => burn::tensor::module::linear(x,
                Tensor::<1, Int>::arange(0..(s * s) as i64, &d).float().reshape([s, s]),
                Some(Tensor::<1, Int>::arange(0..s as i64, &d).float())),
                reference Module::Loops(linear), error higham(Terms::Last);
            // 3-D ops on the operand with a depth of 1 inserted (`[n, c, 1, h, w]`), so programs
            // stay at rank 4 and the result comes back to the operand's shape.
            // Weights are made before the operand is touched, as in the 2-D entries: the model
            // expects a call that creates on a stale device to fail at the creation.
            conv3d: 4 -> same, balanced, none, [x, d, c, k, p, s] => {
                let w = Tensor::<1, Int>::arange(0..(c * c * k * k) as i64, &d).float().reshape([c, c, 1, k, k]);
                let b = Tensor::<1, Int>::arange(0..c as i64, &d).float();
                burn::tensor::module::conv3d(x.unsqueeze_dim::<5>(2), w, Some(b),
                    burn::tensor::ops::ConvOptions::new([1, 1, 1], [0, p, p], [1, 1, 1], 1)).squeeze_dim::<4>(2)
            },
                reference Module::Loops(|x, k| {
                    let c = x.shape[1];
                    conv(
                        x,
                        k,
                        1,
                        |co, ci, ky, kx| (((co * c + ci) * k + ky) * k + kx) as f64,
                        |co| co as f64,
                    )
                }), error higham(Terms::ChannelTaps);
            conv_transpose3d: 4 -> same, balanced, none, [x, d, c, k, p, s] => {
                let w = Tensor::<1, Int>::arange(0..(c * c * k * k) as i64, &d).float().reshape([c, c, 1, k, k]);
                let b = Tensor::<1, Int>::arange(0..c as i64, &d).float();
                burn::tensor::module::conv_transpose3d(x.unsqueeze_dim::<5>(2), w, Some(b),
                    burn::tensor::ops::ConvTransposeOptions::new([1, 1, 1], [0, p, p], [0, 0, 0], [1, 1, 1], 1))
                    .squeeze_dim::<4>(2)
            },
                reference Module::Loops(conv_transpose), error higham(Terms::ChannelTaps);
            avg_pool3d: 4 -> same, balanced, none, [x, d, c, k, p, s] => burn::tensor::module::avg_pool3d(
                x.unsqueeze_dim::<5>(2),
                burn::tensor::ops::AvgPoolOptions::new([1, k, k]).with_stride([1, 1, 1]).with_padding([0, p, p]))
                .squeeze_dim::<4>(2),
                reference Module::Loops(avg_pool), error higham(Terms::Taps { bias: false });
            max_pool3d: 4 -> same, exact, nan, [x, d, c, k, p, s] => burn::tensor::module::max_pool3d(
                x.unsqueeze_dim::<5>(2),
                burn::tensor::ops::MaxPoolOptions::new([1, k, k]).with_stride([1, 1, 1]).with_padding([0, p, p]))
                .squeeze_dim::<4>(2),
                reference Module::Loops(max_pool), error PRESET;
            max_pool3d_indices: 4 -> Int, step, ties, [x, d, c, k, p, s] => burn::tensor::module::max_pool3d_with_indices(
                x.unsqueeze_dim::<5>(2),
                burn::tensor::ops::MaxPoolOptions::new([1, k, k]).with_stride([1, 1, 1]).with_padding([0, p, p]))
                .1.squeeze_dim::<4>(2),
                reference Module::Loops(max_pool_indices), error PRESET;
            adaptive_avg_pool3d: 4 -> same, balanced, none, [x, d, c, k, p, s] =>
                burn::tensor::module::adaptive_avg_pool3d(x.unsqueeze_dim::<5>(2), [1, s[0], s[1]]).squeeze_dim::<4>(2),
                reference Module::Loops(identity), error higham(Terms::Whole);
            max_pool1d_indices: 3 -> Int, step, ties, [x, d, c, k, p, s] => burn::tensor::module::max_pool1d_with_indices(x,
                burn::tensor::ops::MaxPoolOptions::new([k]).with_stride([1]).with_padding([p])).1,
                reference Module::Loops(max_pool_indices), error PRESET;
            // Offsets of -0.5, 0 and 0.5 make the kernel sample between elements (bilinear), a 0/1
            // mask drops some taps: neither reduces to a plain convolution.
            deform_conv2d: 4 -> same, balanced, none, [x, d, c, k, p, s] => {
                let n = x.dims()[0];
                burn::tensor::module::deform_conv2d(x,
                    Tensor::<1, Int>::arange(0..(n * 2 * k * k * s[0] * s[1]) as i64, &d)
                        .remainder_scalar(3).sub_scalar(1).float().mul_scalar(0.5)
                        .reshape([n, 2 * k * k, s[0], s[1]]),
                    Tensor::<1, Int>::arange(0..(c * c * k * k) as i64, &d).float().reshape([c, c, k, k]),
                    Some(Tensor::<1, Int>::arange(0..(n * k * k * s[0] * s[1]) as i64, &d)
                        .remainder_scalar(2).float().reshape([n, k * k, s[0], s[1]])),
                    Some(Tensor::<1, Int>::arange(0..c as i64, &d).float()),
                    burn::tensor::ops::DeformConvOptions::new([1, 1], [p, p], [1, 1], 1, 1))
            },
                reference Module::Missing(
                    "deformable convolution: bilinear sampling at offset taps and a mask; not written yet",
                ), error PRESET;
            // Unfold to columns and fold them back: each element summed over the windows that
            // hold it.
            unfold_fold: 4 -> same, balanced, none, [x, d, c, k, p, s] => burn::tensor::module::fold4d(
                burn::tensor::module::unfold4d(x, [k, k], burn::tensor::ops::UnfoldOptions::new([1, 1], [p, p], [1, 1])),
                s, [k, k], burn::tensor::ops::UnfoldOptions::new([1, 1], [p, p], [1, 1])),
                reference Module::Loops(unfold_fold), error higham(Terms::Taps { bias: false });
            // The operand's rows as the embedding table, looked up in reverse order.
            embedding: 3 -> same, exact, none, [x, d, c, k, p, s] => {
                let [a, b, e] = x.dims();
                let indices = Tensor::<1, Int>::arange(0..(a * b) as i64, &d).flip([0]).reshape([a, b]);
                burn::tensor::module::embedding(x.reshape([a * b, e]), indices)
            },
                reference Module::Loops(embedding), error PRESET;
            // `[time, batch, classes]`: the operand's log-softmax over classes as log-probs, one
            // label per sequence (1 + its index modulo the non-blank classes; blank 0), over
            // every time step; a single class leaves only the blank, so the targets are empty.
            // The per-sequence loss is expanded back to the operand's shape.
            ctc_loss: 3 -> same, transcendental, none, [x, d, c, k, p, s] => {
                let [t, n, e] = x.dims();
                let labels = Tensor::<1, Int>::arange(0..n as i64, &d)
                    .remainder_scalar((e as i64 - 1).max(1)).add_scalar((e > 1) as i64).reshape([n, 1]);
                let input_lengths = Tensor::<1, Int>::arange(0..n as i64, &d).mul_scalar(0).add_scalar(t as i64);
                let target_lengths = Tensor::<1, Int>::arange(0..n as i64, &d).mul_scalar(0).add_scalar((e > 1) as i64);
                burn::tensor::module::ctc_loss(burn::tensor::activation::log_softmax(x, 2),
                    labels, input_lengths, target_lengths, 0).reshape([1, n, 1]).expand([t, n, e])
            },
                reference Module::Missing(
                    "CTC loss: the forward algorithm over label paths; not written yet",
                ), error PRESET;
            // `[batch, heads, seq, head_dim]`: the operand attends to itself reversed along seq.
            attention: 4 -> same, transcendental, none, [x, d, c, k, p, s] => burn::tensor::module::attention(
                x.clone(), x.clone().flip([2]), x, None, None, burn::tensor::ops::AttentionModuleOptions::default()),
                reference Module::Loops(|x, _| attention(x, false)), error ATTENTION;
            attention_causal: 4 -> same, transcendental, none, [x, d, c, k, p, s] => burn::tensor::module::attention(
                x.clone(), x.clone(), x, None, None,
                burn::tensor::ops::AttentionModuleOptions { is_causal: true, ..Default::default() }),
                reference Module::Loops(|x, _| attention(x, true)), error ATTENTION_CAUSAL;
            layer_norm: 3 -> same, transcendental, none, [x, d, c, k, p, s] => burn::tensor::module::layer_norm(x,
                Tensor::<1, Int>::arange(0..s as i64, &d).float(),
                Some(Tensor::<1, Int>::arange(0..s as i64, &d).float().neg()), 1e-5),
                reference Module::Loops(layer_norm), error PRESET;
            batch_norm: 4 -> same, transcendental, none, [x, d, c, k, p, s] => burn::tensor::module::batch_norm(x,
                Tensor::<1, Int>::arange(0..c as i64, &d).float(),
                Tensor::<1, Int>::arange(0..c as i64, &d).float().neg(),
                Tensor::<1, Int>::arange(0..c as i64, &d).float(),
                Tensor::<1, Int>::arange(1..(c + 1) as i64, &d).float(), 1e-5),
                reference Module::Loops(batch_norm), error PRESET;
            // The backward passes Burn exposes as functions, with the operand as its own gradient.
            avg_pool2d_backward: 4 -> same, balanced, none, [x, d, c, k, p, s] =>
                burn::tensor::module::avg_pool2d_backward(x.clone(), x, [k, k], [1, 1], [p, p], [1, 1], true, false),
                reference Module::Loops(avg_pool_backward), error higham(Terms::Taps { bias: false });
            avg_pool3d_backward: 4 -> same, balanced, none, [x, d, c, k, p, s] =>
                burn::tensor::module::avg_pool3d_backward(x.clone().unsqueeze_dim::<5>(2), x.unsqueeze_dim::<5>(2),
                    [1, k, k], [1, 1, 1], [0, p, p], [1, 1, 1], true, false).squeeze_dim::<4>(2),
                // A depth of 1 with no depth padding: the 2-D backward over each slice.
                reference Module::Loops(avg_pool_backward), error higham(Terms::Taps { bias: false });
            max_pool2d_backward: 4 -> same, balanced, ties, [x, d, c, k, p, s] => {
                let (y, i) = burn::tensor::module::max_pool2d_with_indices(x.clone(),
                    burn::tensor::ops::MaxPoolOptions::new([k, k]).with_stride([1, 1]).with_padding([p, p]));
                burn::tensor::module::max_pool2d_with_indices_backward(x, [k, k], [1, 1], [p, p], [1, 1], false, y, i)
            },
                reference Module::Missing(BACKWARD), error PRESET;
            max_pool3d_backward: 4 -> same, balanced, ties, [x, d, c, k, p, s] => {
                let x = x.unsqueeze_dim::<5>(2);
                let (y, i) = burn::tensor::module::max_pool3d_with_indices(x.clone(),
                    burn::tensor::ops::MaxPoolOptions::new([1, k, k]).with_stride([1, 1, 1]).with_padding([0, p, p]));
                burn::tensor::module::max_pool3d_with_indices_backward(
                    x, [1, k, k], [1, 1, 1], [0, p, p], [1, 1, 1], false, y, i).squeeze_dim::<4>(2)
            },
                reference Module::Missing(BACKWARD), error PRESET;
            // The weight gradient of a same-padded convolution with the operand as input and as
            // output gradient, added up onto the operand so the result keeps its shape.
            conv2d_weight_backward: 4 -> same, balanced, none, [x, d, c, k, p, s] => {
                let w = Tensor::<1, Int>::arange(0..(c * c * k * k) as i64, &d).float().reshape([c, c, k, k]);
                let g = burn::tensor::module::conv2d_weight_backward(x.clone(), w, x.clone(),
                    burn::tensor::ops::ConvOptions::new([1, 1], [p, p], [1, 1], 1));
                x.add(g.sum().reshape([1, 1, 1, 1]))
            },
                reference Module::Missing(BACKWARD), error PRESET;
            // The first dim's rows in reverse through gather_nd, and written back the same way
            // by scatter_nd (indices `[n, 1]`, one per row: each row written once).
            gather_nd_rows: 4 -> same, exact, none, [x, d, c, k, p, s] => {
                let n = x.dims()[0];
                let idx = Tensor::<1, Int>::arange(0..n as i64, &d).flip([0]).reshape([n, 1]);
                x.gather_nd::<2, 4>(idx)
            },
                reference Module::Loops(rows_reversed), error PRESET;
            scatter_nd_rows: 4 -> same, exact, none, [x, d, c, k, p, s] => {
                let n = x.dims()[0];
                let idx = Tensor::<1, Int>::arange(0..n as i64, &d).flip([0]).reshape([n, 1]);
                x.clone().scatter_nd::<2, 4>(idx, x, burn::tensor::ops::IndexingUpdateOp::Assign)
            },
                reference Module::Loops(rows_reversed), error PRESET;
            interpolate_nearest_exact: 4 -> same, exact, none, [x, d, c, k, p, s] => burn::tensor::module::interpolate(x,
                burn::tensor::module::InterpolateOptions { output_size: Some(s),
                    ..burn::tensor::module::InterpolateOptions::new(
                        burn::tensor::module::InterpolateMode::NearestExact) }),
                reference Module::Loops(same_size), error PRESET;
            interpolate_lanczos3: 4 -> same, balanced, infinite, [x, d, c, k, p, s] => burn::tensor::module::interpolate(x,
                burn::tensor::module::InterpolateOptions { output_size: Some(s),
                    ..burn::tensor::module::InterpolateOptions::new(
                        burn::tensor::module::InterpolateMode::Lanczos3) }),
                reference Module::Loops(same_size), error PRESET;
            // Bilinear sampling a quarter pixel right of each pixel centre (zeros padding past
            // the last column), through a grid made before the operand is touched.
            grid_sample_2d: 4 -> same, balanced, none, [x, d, c, k, p, s] => {
                let n = x.dims()[0]; let [h, w] = s;
                let gx = Tensor::<1, Int>::arange(0..w as i64, &d).float().add_scalar(0.75)
                    .mul_scalar(2.0 / w as f64).sub_scalar(1.0).reshape([1, 1, w, 1]).expand([n, h, w, 1]);
                let gy = Tensor::<1, Int>::arange(0..h as i64, &d).float().add_scalar(0.5)
                    .mul_scalar(2.0 / h as f64).sub_scalar(1.0).reshape([1, h, 1, 1]).expand([n, h, w, 1]);
                x.grid_sample_2d(Tensor::cat(vec![gx, gy], 3), burn::tensor::ops::GridSampleOptions::default())
            },
                reference Module::Loops(quarter_pixel_right), error PRESET;
            // A matmul by the identity keeps the shape. Quantized weights times float
            // activations and both quantized: Burn's two q_matmul paths (its Tensor API's only
            // route to the quantized matmul). The weight is made first, as every entry's extra
            // tensors are: the model expects a creation on `d` to fail before the operand is used.
            quantized_weight_matmul: 3 -> Float, balanced, quantized, [x, d, c, k, p, s] => {
                let w = Tensor::<2>::eye(s, &d).unsqueeze::<3>()
                    .quantize_dynamic(&burn::tensor::quantization::QuantScheme::default());
                x.matmul(w).dequantize() },
                // A matmul by the quantized identity: Q8F's full range maps its ones to 127.5
                // steps, which clamp to 127, so the product is the operand times 254/255 (one
                // rounding; the result is F32 whatever the operand's dtype), and with the operand
                // quantized too, its round trip times that.
                reference Module::Loops(times_identity), error higham(Terms::Last);
            quantized_matmul: 3 -> Float, balanced, quantized, [x, d, c, k, p, s] => {
                let w = Tensor::<2>::eye(s, &d).unsqueeze::<3>()
                    .quantize_dynamic(&burn::tensor::quantization::QuantScheme::default());
                x.quantize_dynamic(&burn::tensor::quantization::QuantScheme::default())
                    .matmul(w).dequantize() },
                reference Module::Quantized, error PRESET;
        }
    };
}
pub(crate) use module_ops;

/// One entry of the table.
#[derive(Debug)]
pub struct ModuleSpec {
    /// The name program files store.
    pub name: &'static str,
    /// The operand's rank: 3 (`[batch, channels, length]`) or 4 (`[batch, channels, h, w]`).
    pub rank: usize,
    /// The result's kind, when it is not float.
    pub result: Option<Kind>,
    /// The dtype the result is stored in.
    pub dtype: ResultDtype,
    /// How closely Flex and wgpu must agree.
    pub tolerance: Tolerance,
    /// What Burn leaves open.
    pub unspecified: Unspecified,
    /// The call on Burn's public API (see the module doc for its variables).
    pub call: &'static str,
}

impl ModuleSpec {
    /// Whether the op takes an operand of `kind` and `rank` dims.
    pub fn accepts(&self, kind: Kind, rank: usize) -> bool {
        kind == Kind::Float && rank == self.rank
    }

    /// The result's kind.
    pub fn result_kind(&self) -> Kind {
        self.result.unwrap_or(Kind::Float)
    }

    /// Whether the call makes tensors on the operand's device `d` (weights) before the op.
    pub fn creates_on_device(&self) -> bool {
        mentions_ident(self.call, "d")
    }

    /// The call as one Rust block over the operand expression `x` and a kernel size: the
    /// variables the call reads, then the call.
    pub fn call_on(&self, x: &str, kernel: usize) -> String {
        let spatial = if self.rank == 3 {
            "x.dims()[2]"
        } else {
            "[x.dims()[2], x.dims()[3]]"
        };
        format!(
            "{{ let x = {x}; let d = x.device(); let c = x.dims()[1]; let k: usize = {kernel}; \
             let p = (k - 1) / 2; let s = {spatial}; {} }}",
            render(self.call, &[])
        )
    }
}

/// The kernel size a `kernel` attribute stands for: 1 or 3, each its own size, so `fixup`
/// storing the size is idempotent. Every entry keeps the spatial size with an odd kernel and
/// padding `(k - 1) / 2`.
pub fn kernel_size(kernel: u8) -> usize {
    if kernel % 4 < 2 {
        1
    } else {
        3
    }
}

macro_rules! module_specs {
    ($($name:ident : $rank:literal -> $result:ident, $tol:ident, $un:ident,
        [$x:ident, $d:ident, $c:ident, $k:ident, $p:ident, $s:ident] => $call:expr,
        reference $reference:expr, error $error:expr;)+) => {
        /// The module ops, in table order.
        pub const MODULE: &[ModuleSpec] = &[$(ModuleSpec {
            name: stringify!($name),
            rank: $rank,
            result: op_result!($result),
            dtype: op_dtype!($result),
            tolerance: op_tolerance!($tol),
            unspecified: op_unspecified!($un),
            call: stringify!($call),
        }),+];
    };
}
module_ops!(module_specs);

table_index! {
    /// A module op: an index into [`MODULE`], stored by name.
    ModuleOp, MODULE, "module"
}

impl ModuleOp {
    /// Its entry.
    pub fn spec(self) -> &'static ModuleSpec {
        &MODULE[self.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_entry_takes_rank_three_or_four() {
        let mut names: Vec<&str> = MODULE.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), MODULE.len());
        assert!(MODULE.iter().all(|s| s.rank == 3 || s.rank == 4));
        let conv = ModuleOp::named("conv1d").unwrap().spec();
        assert!(conv.accepts(Kind::Float, 3) && !conv.accepts(Kind::Float, 4));
        assert!(!conv.accepts(Kind::Int, 3));
        let printed = conv.call_on("t2.clone()", 3);
        assert!(
            printed.starts_with("{ let x = t2.clone(); let d = x.device();"),
            "{printed}"
        );
        assert!(printed.contains("let k: usize = 3;") && printed.contains("let s = x.dims()[2];"));
        assert!(conv.creates_on_device());
        assert!(!ModuleOp::named("max_pool1d")
            .unwrap()
            .spec()
            .creates_on_device());
        assert_eq!(
            (kernel_size(1), kernel_size(3)),
            (1, 3),
            "a size stands for itself"
        );
        assert_eq!(
            (kernel_size(0), kernel_size(2), kernel_size(255)),
            (1, 3, 3)
        );
    }
}
