//! The along-a-dim op table: reductions, scans, sorts and softmaxes over one dim of one tensor,
//! one entry each, read by the generator, the typing rule, the printers, the interpreter, the
//! differential and the reference (see `unary.rs` for how a table macro feeds each of them).
//!
//! An entry is `name: [kinds it takes] -> result, shape, tolerance, unspecified, reach, x, d =>
//! call, reference def, error model;`: the result is `same` or a kind; the shape is `same` or
//! `reduce` (the dim becomes 1); the tolerance one of [`Tolerance`]'s families; `unspecified` names
//! what Burn leaves open (`none`, `nan`: NaN ordering, or a test of NaN against zero as `any`/`all`
//! make, `ties`: which of equal values an index points to, `random`: a draw of the device's
//! generator); the reach is `lane` (a result lane along `d` reads only the same lane of the
//! operand) or `whole`; `x` is the operand and `d` the dim (a `usize`); the reference is an `Along`
//! of the reference oracle, and the error model how its rounding error is bounded (`LINEAR`:
//! Higham's bound for a sum along the dim, `higham(terms)` over other terms, `SOFTMAX`,
//! `variance(biased)`, `product(..)`, or `PRESET`: none derived), both
//! compiled only there (an entry without one does not compile).

use super::kind::Kind;
use super::table::{
    mentions_ident, op_dtype, op_result, op_spread, op_tolerance, op_unspecified, render,
    table_index, ResultDtype, Spread, Tolerance, Unspecified,
};

/// The table; see the module doc for the entry syntax.
macro_rules! along_dim_ops {
    ($then:ident) => {
        $then! {
            // The plainest op first (the minimizer's replacement for every other).
            mean_dim: [Float, Int] -> same, reduce, balanced, none, lane, x, d => x.mean_dim(d),
                reference Along::Reduce(
                    |v| sum_fits(v).then(|| mean_f(v)),
                    |v| int_div(v.iter().sum(), v.len() as i128),
                ), error LINEAR;
            prod_dim: [Float, Int] -> same, reduce, balanced, none, lane, x, d => x.prod_dim(d),
                reference Along::Reduce(|v| prod_fits(v).then(|| v.iter().product()), int_product),
                error product(Product::Lane);
            max_dim: [Float, Int] -> same, reduce, exact, nan, lane, x, d => x.max_dim(d),
                reference Along::Reduce(max_lane, |v| v.iter().copied().max()), error PRESET;
            min_dim: [Float, Int] -> same, reduce, exact, nan, lane, x, d => x.min_dim(d),
                reference Along::Reduce(min_lane, |v| v.iter().copied().min()), error PRESET;
            max_abs_dim: [Float, Int] -> same, reduce, exact, nan, lane, x, d => x.max_abs_dim(d),
                reference Along::Reduce(
                    |v| max_lane(&v.iter().map(|x| x.abs()).collect::<Vec<_>>()),
                    |v| v.iter().map(|x| x.abs()).max(),
                ), error PRESET;
            argmin: [Float, Int] -> Int, reduce, step, ties, lane, x, d => x.argmin(d),
                reference Along::Arg(|v| arg_by(v, |a, b| a < b)), error PRESET;
            cumsum: [Float, Int] -> same, same, balanced, none, lane, x, d => x.cumsum(d),
                reference Along::Scan(
                    |v| {
                        let fits = sum_fits(v);
                        v.iter()
                            .scan(0.0, |s, x| {
                                *s += x;
                                Some(fits.then_some(*s))
                            })
                            .collect()
                    },
                    |v| {
                        v.iter()
                            .scan(0, |s, x| {
                                *s += x;
                                Some(Some(*s))
                            })
                            .collect()
                    },
                ), error LINEAR;
            cumprod: [Float, Int] -> same, same, balanced, none, lane, x, d => x.cumprod(d),
                reference Along::Scan(
                    |v| {
                        let fits = prod_fits(v);
                        v.iter()
                            .scan(1.0, |s, x| {
                                *s *= x;
                                Some(fits.then_some(*s))
                            })
                            .collect()
                    },
                    |v| {
                        v.iter()
                            .scan(1, |s: &mut i128, x| {
                                *s = s.checked_mul(*x)?;
                                Some(Some(*s))
                            })
                            .collect()
                    },
                ), error product(Product::Running);
            cummax: [Float, Int] -> same, same, exact, nan, lane, x, d => x.cummax(d),
                reference Along::Scan(
                    |v| running_f(v, f64::NEG_INFINITY, f64::max),
                    |v| running_i(v, i128::MIN, std::cmp::max),
                ), error PRESET;
            cummin: [Float, Int] -> same, same, exact, nan, lane, x, d => x.cummin(d),
                reference Along::Scan(
                    |v| running_f(v, f64::INFINITY, f64::min),
                    |v| running_i(v, i128::MAX, std::cmp::min),
                ), error PRESET;
            sort: [Float, Int] -> same, same, exact, nan, lane, x, d => x.sort(d),
                reference Along::Scan(|v| sorted_f(v, false), |v| sorted_i(v, false)), error PRESET;
            sort_descending: [Float, Int] -> same, same, exact, nan, lane,
                x, d => x.sort_descending(d),
                reference Along::Scan(|v| sorted_f(v, true), |v| sorted_i(v, true)), error PRESET;
            argsort: [Float, Int] -> Int, same, step, ties, lane, x, d => x.argsort(d),
                reference Along::ArgScan(|v| arg_sort(v, false)), error PRESET;
            argsort_descending: [Float, Int] -> Int, same, step, ties, lane,
                x, d => x.argsort_descending(d),
                reference Along::ArgScan(|v| arg_sort(v, true)), error PRESET;
            var: [Float] -> same, reduce, balanced, none, lane, x, d => x.var(d),
                // `var` is the unbiased estimate (n - 1), `var_bias` the biased one (n).
                reference Along::Reduce(|v| var_fits(v).then(|| var_with(v, 1.0)), |_| None),
                error variance(false);
            var_bias: [Float] -> same, reduce, balanced, none, lane, x, d => x.var_bias(d),
                reference Along::Reduce(|v| var_fits(v).then(|| var_with(v, 0.0)), |_| None),
                error variance(true);
            median: [Float] -> same, reduce, exact, nan, lane, x, d => x.median(d),
                // The lower median for an even count (Burn's doc comment: [1, 2, 3, 5] gives 2).
                reference Along::Reduce(
                    |v| {
                        let s = sorted_f(v, false);
                        s[(s.len() - 1) / 2]
                    },
                    |_| None,
                ), error PRESET;
            softmax: [Float] -> same, same, transcendental, none, lane,
                x, d => burn::tensor::activation::softmax(x, d),
                reference Along::Scan(|v| softmax_lane(v, 1.0, false), |_| Vec::new()),
                error SOFTMAX;
            log_softmax: [Float] -> same, same, transcendental, none, lane,
                x, d => burn::tensor::activation::log_softmax(x, d),
                // x - max - log(sum exp(x - max)): the logarithm taken of the sum, not of an
                // underflowed probability.
                reference Along::Scan(
                    |v| {
                        let m = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                        if !m.is_finite() {
                            return vec![None; v.len()];
                        }
                        let log_sum = v.iter().map(|e| (e - m).exp()).sum::<f64>().ln();
                        v.iter().map(|e| Some(e - m - log_sum)).collect()
                    },
                    |_| Vec::new(),
                ), error LOG_SOFTMAX;
            softmin: [Float] -> same, same, transcendental, none, lane,
                x, d => burn::tensor::activation::softmin(x, d),
                reference Along::Scan(|v| softmax_lane(v, -1.0, false), |_| Vec::new()),
                error SOFTMIN;
            quiet_softmax: [Float] -> same, same, transcendental, none, lane,
                x, d => burn::tensor::activation::quiet_softmax(x, d),
                // Burn's doc comment: exp(x_i) / (1 + sum_j exp(x_j)).
                reference Along::Scan(|v| softmax_lane(v, 1.0, true), |_| Vec::new()),
                error QUIET_SOFTMAX;
            any_dim: [Float, Int, Bool] -> Bool, reduce, step, nan, lane, x, d => x.any_dim(d),
                reference Along::Test(|v| v.iter().any(|b| *b)), error PRESET;
            all_dim: [Float, Int, Bool] -> Bool, reduce, step, nan, lane, x, d => x.all_dim(d),
                reference Along::Test(|v| v.iter().all(|b| *b)), error PRESET;
            flip: [Float, Int, Bool] -> same, same, exact, none, lane, x, d => x.flip([d as isize]),
                reference Along::Layout(flip_positions), error PRESET;
            // The upper triangle of the last two dims from diagonal d - 1 up, zeros below: Burn
            // makes the mask on the operand's device first (`triu_mask`, from int arange and
            // comparisons) and applies it with `mask_fill`; the call names the device so that the
            // model knows. A rank-1 operand is one row, all of it on or above diagonal -1: the
            // operand itself (Burn's triu takes rank 2 and up).
            triu: [Float, Int] -> same, same, exact, none, lane, x, d => {
                if x.dims().len() < 2 { x } else { let _ = x.device(); x.triu(d as i64 - 1) } },
                reference Along::Whole(|x, d| {
                    let (n, cols) = (x.shape.len(), *x.shape.last()?);
                    let rows = if n < 2 { 1 } else { x.shape[n - 2] };
                    let kept = |i: usize| {
                        (i % cols) as i64 - ((i / cols) % rows) as i64 >= d as i64 - 1
                    };
                    let shape = x.shape.clone();
                    Some(match &x.data {
                        Data::Float(v) => Host::float(
                            shape,
                            (0..v.len()).map(|i| if kept(i) { v[i] } else { Some(0.0) }).collect(),
                        ),
                        Data::Int(v) => Host::int(
                            shape,
                            (0..v.len()).map(|i| if kept(i) { v[i] } else { Some(0) }).collect(),
                        ),
                        Data::Bool(_) => return None,
                    })
                }), error PRESET;
            // Indexing with index tensors made on the operand's device (in range by
            // construction): each gives back the operand's shape.
            select_reversed: [Float, Int, Bool] -> same, same, exact, none, whole, x, d => {
                let n = x.dims()[d]; let dev = x.device();
                x.select(d, Tensor::<1, Int>::arange(0..n as i64, &dev).flip([0])) },
                reference Along::Layout(flip_positions), error PRESET;
            gather_rotated: [Float, Int, Bool] -> same, same, exact, none, whole, x, d => {
                let dims = x.dims(); let dev = x.device();
                let idx = Tensor::<1, Int>::arange(1..(x.shape().num_elements() as i64 + 1), &dev)
                    .reshape(dims).remainder_scalar(dims[d] as i64);
                x.gather(d, idx) },
                reference Along::Layout(gather_rotated_positions), error PRESET;
            scatter_add: [Float, Int] -> same, same, balanced, none, whole, x, d => {
                let dims = x.dims(); let dev = x.device();
                let idx = Tensor::<1, Int>::arange(1..(x.shape().num_elements() as i64 + 1), &dev)
                    .reshape(dims).remainder_scalar(dims[d] as i64);
                x.clone().scatter(d, idx, x, burn::tensor::ops::IndexingUpdateOp::Add) },
                reference Along::Whole(scatter_add_rotated), error higham(Terms::Fixed(2));
            // Layout moves that give the operand's shape back.
            permute_roll: [Float, Int, Bool] -> same, same, exact, none, whole, x, d => {
                let _ = d; let n = x.dims().len();
                x.permute(core::array::from_fn(|i| (i + 1) % n))
                    .permute(core::array::from_fn(|i| (i + n - 1) % n)) },
                reference Along::Layout(|s, _| (0..s.iter().product()).collect()), error PRESET;
            expand_first: [Float, Int, Bool] -> same, same, exact, none, whole, x, d => {
                let dims = x.dims(); x.narrow(d, 0, 1).expand(dims) },
                reference Along::Layout(first_positions), error PRESET;
            repeat_first: [Float, Int, Bool] -> same, same, exact, none, whole, x, d => {
                let n = x.dims()[d]; x.narrow(d, 0, 1).repeat_dim(d, n) },
                reference Along::Layout(first_positions), error PRESET;
            // Top-k and the index forms of the extrema and sorts.
            topk1: [Float, Int] -> same, reduce, exact, nan, lane, x, d => x.topk(1, d),
                reference Along::Reduce(max_lane, |v| v.iter().copied().max()), error PRESET;
            argtopk1: [Float, Int] -> Int, reduce, step, ties, lane, x, d => x.argtopk(1, d),
                reference Along::Arg(|v| arg_by(v, |a, b| a > b)), error PRESET;
            topk1_indices: [Float, Int] -> Int, reduce, step, ties, lane,
                x, d => x.topk_with_indices(1, d).1,
                reference Along::Arg(|v| arg_by(v, |a, b| a > b)), error PRESET;
            max_dim_indices: [Float, Int] -> Int, reduce, step, ties, lane,
                x, d => x.max_dim_with_indices(d).1,
                reference Along::Arg(|v| arg_by(v, |a, b| a > b)), error PRESET;
            min_dim_indices: [Float, Int] -> Int, reduce, step, ties, lane,
                x, d => x.min_dim_with_indices(d).1,
                reference Along::Arg(|v| arg_by(v, |a, b| a < b)), error PRESET;
            sort_indices: [Float, Int] -> Int, same, step, ties, lane,
                x, d => x.sort_with_indices(d).1,
                reference Along::ArgScan(|v| arg_sort(v, false)), error PRESET;
            // Whole-tensor reductions, broadcast back over the operand.
            sum_dims: [Float, Int] -> same, reduce, balanced, none, lane, x, d => x.sum_dims(&[d]),
                reference Along::Reduce(
                    |v| sum_fits(v).then(|| v.iter().sum()),
                    |v| Some(v.iter().sum()),
                ), error LINEAR;
            all_whole: [Float, Int, Bool] -> Bool, same, step, nan, whole, x, d => {
                let _ = d; let s = x.shape(); x.all().expand(s) },
                reference Along::TestWhole(|v| v.iter().all(|b| *b)), error PRESET;
            any_whole: [Float, Int, Bool] -> Bool, same, step, nan, whole, x, d => {
                let _ = d; let s = x.shape(); x.any().expand(s) },
                reference Along::TestWhole(|v| v.iter().any(|b| *b)), error PRESET;
            // Padding the last dim with a constant, cropped back off.
            pad_crop: [Float, Int] -> same, same, exact, none, whole, x, d => {
                let _ = d; let n = x.dims().len(); let len = x.dims()[n - 1];
                x.pad([(1, 2)], 7).narrow(n - 1, 1, len) },
                reference Along::Layout(|s, _| (0..s.iter().product()).collect()), error PRESET;
            // Creation on the operand's device in its shape and dtype, then combined with the
            // operand as the left operand (a NaN or infinity times zero stays NaN), so the entry
            // is an op on the operand as the model has it: the creation first, then the
            // operand's own op, whose session is the one checked.
            zeros_like: [Float, Int] -> same, same, exact, none, whole, x, d => {
                let _ = d; let z = Tensor::zeros(x.shape(), (&x.device(), x.dtype()));
                x.mul_scalar(0).add(z) },
                // x * 0 + c: a NaN or infinity times zero is NaN (IEEE), and so is the sum.
                reference Along::Map(|x| Some(x * 0.0 + 0.0), |_| Some(0), |b| b), error PRESET;
            ones_like: [Float, Int] -> same, same, exact, none, whole, x, d => {
                let _ = d; let o = Tensor::ones(x.shape(), (&x.device(), x.dtype()));
                x.mul_scalar(0).add(o) },
                reference Along::Map(|x| Some(x * 0.0 + 1.0), |_| Some(1), |b| b), error PRESET;
            full_like: [Float, Int] -> same, same, exact, none, whole, x, d => {
                let _ = d; let f = Tensor::full(x.shape(), -3, (&x.device(), x.dtype()));
                x.mul_scalar(0).add(f) },
                reference Along::Map(|x| Some(x * 0.0 - 3.0), |_| Some(-3), |b| b), error PRESET;
            bool_zeros_like: [Bool] -> same, same, exact, none, whole, x, d => {
                let _ = d; let z = Tensor::zeros(x.shape(), (&x.device(), x.dtype())); x.bool_and(z) },
                reference Along::Map(|_| None, |_| None, |_| false), error PRESET;
            bool_ones_like: [Bool] -> same, same, exact, none, whole, x, d => {
                let _ = d; let o = Tensor::ones(x.shape(), (&x.device(), x.dtype())); x.bool_or(o) },
                reference Along::Map(|_| None, |_| None, |_| true), error PRESET;
            // An empty int tensor's values are whatever memory held: times zero, they are not.
            empty_times_zero: [Int] -> same, same, exact, none, whole, x, d => {
                let _ = d; let e = Tensor::empty(x.shape(), (&x.device(), x.dtype()));
                x.mul_scalar(0).add(e.mul_scalar(0)) },
                reference Along::Map(|_| None, |_| Some(0), |b| b), error PRESET;
            // A tensor of twos made on the device: `powi` takes one of the operand's kind, so a
            // float in the device's default dtype, and over an F16, BF16 or F64 operand the
            // operands mix dtypes (a panic the program chose). Over F32 the bridge's powi is
            // float_powf (burn-tensor bridge/ops/float.rs:638-640), which Flex computes with
            // f32::powf (burn-flex ops/float.rs:1022-1024): within 1 ULP of x² over the F32
            // sweep of `dispatch-fuzz accuracy`, 2 with another platform's libm. A NaN base is
            // left open: WGSL may assume no NaN reaches it (llvmpipe gives NaN^2 = 0, fuzz
            // --seed 46 with wgpu).
            powi_by_two: [Float] -> same, same, balanced, nan, whole, x, d => {
                let _ = d; let two = Tensor::full(x.shape(), 2, &x.device()); x.powi(two) },
                reference Along::Map(|x| (!x.is_nan()).then_some(x * x), |_| None, |b| b),
                error library(1.0, 2.0, 2.0);
            // The index tensor is made before the operand is touched (the model's
            // create-outside-scope rule).
            quantized_select: [Float] -> Float, same, balanced, quantized, whole, x, d => {
                let n = x.dims()[d]; let dev = x.device();
                let idx = Tensor::<1, Int>::arange(0..n as i64, &dev).flip([0]);
                x.quantize_dynamic(&burn::tensor::quantization::QuantScheme::default())
                    .select(d, idx).dequantize() },
                // Burn's default scheme round-tripped through the select and gather of the plain
                // entries.
                reference Along::Quantized(flip_positions), error PRESET;
            quantized_gather: [Float] -> Float, same, balanced, quantized, whole, x, d => {
                let dims = x.dims(); let dev = x.device();
                let idx = Tensor::<1, Int>::arange(1..(x.shape().num_elements() as i64 + 1), &dev)
                    .reshape(dims).remainder_scalar(dims[d] as i64);
                x.quantize_dynamic(&burn::tensor::quantization::QuantScheme::default())
                    .gather(d, idx).dequantize() },
                reference Along::Quantized(gather_rotated_positions), error PRESET;
            // Assigning (not adding) through index tensors: the only form a bool tensor has.
            select_assign_reversed: [Float, Int, Bool] -> same, same, exact, none, whole, x, d => {
                let n = x.dims()[d]; let dev = x.device();
                let idx = Tensor::<1, Int>::arange(0..n as i64, &dev).flip([0]);
                x.clone().select_assign(d, idx, x, burn::tensor::ops::IndexingUpdateOp::Assign) },
                reference Along::Layout(flip_positions), error PRESET;
            // Each index along `d` is written once (a rotation), so the result is determined.
            scatter_assign_rotated: [Float, Int, Bool] -> same, same, exact, none, whole, x, d => {
                let dims = x.dims(); let dev = x.device(); let n = dims[d] as i64;
                let stride: usize = dims[d + 1..].iter().product();
                let idx = Tensor::<1, Int>::arange(0..x.shape().num_elements() as i64, &dev)
                    .reshape(dims).div_scalar(stride as i64).remainder_scalar(n)
                    .add_scalar(1).remainder_scalar(n);
                x.clone().scatter(d, idx, x, burn::tensor::ops::IndexingUpdateOp::Assign) },
                reference Along::Layout(roll_positions), error PRESET;
            // A channel-wise slope in the operand's dtype (a weight of the device's default
            // float dtype beside an F64 operand is the caller's mix), made before the operand
            // is touched: (c + 1) / 8, exact, so the result is x or one product, correctly
            // rounded (Flex: `a * x`, burn-flex ops/activation.rs:58-66; a half dtype's product
            // is exact in f32 and rounded once).
            prelu: [Float] -> same, same, rounded, none, whole, x, d => {
                let _ = d; let c = x.dims().get(1).copied().unwrap_or(1);
                let alpha = Tensor::<1, Int>::arange(1..(c as i64 + 1), &x.device()).float()
                    .cast(burn::tensor::FloatDType::from(x.dtype())).div_scalar(8);
                burn::tensor::activation::prelu(x, alpha) },
                reference Along::Whole(prelu), error PRESET;
            select_add: [Float, Int] -> same, same, balanced, none, whole, x, d => {
                let n = x.dims()[d]; let dev = x.device();
                x.clone().select_assign(d, Tensor::<1, Int>::arange(0..n as i64, &dev).flip([0]), x,
                    burn::tensor::ops::IndexingUpdateOp::Add) },
                reference Along::Whole(plus_flipped), error higham(Terms::Fixed(2));
            // Multi-index gather and scatter of whole rows over the operand flattened to
            // `[rows, rest]` (indices `[rows, 1]`, reversed, each row once): the int and bool
            // forms, which the float-only rank-4 module entries leave out.
            gather_nd_flat_rows: [Int, Bool] -> same, same, exact, none, whole, x, d => {
                let _ = d; let dims = x.dims(); let n = dims[0]; let m = x.shape().num_elements() / n;
                let idx = Tensor::<1, Int>::arange(0..n as i64, &x.device()).flip([0]).reshape([n, 1]);
                x.reshape([n, m]).gather_nd::<2, 2>(idx).reshape(dims) },
                reference Along::Layout(|s, _| flip_positions(s, 0)), error PRESET;
            scatter_nd_flat_rows: [Int, Bool] -> same, same, exact, none, whole, x, d => {
                let _ = d; let dims = x.dims(); let n = dims[0]; let m = x.shape().num_elements() / n;
                let idx = Tensor::<1, Int>::arange(0..n as i64, &x.device()).flip([0]).reshape([n, 1]);
                let flat = x.reshape([n, m]);
                flat.clone().scatter_nd::<2, 2>(idx, flat, burn::tensor::ops::IndexingUpdateOp::Assign)
                    .reshape(dims) },
                reference Along::Layout(|s, _| flip_positions(s, 0)), error PRESET;
            // Windows of the last dim's length, stepping by it, over the flattened operand:
            // one window per row, in order.
            unfold_rows: [Float, Int, Bool] -> same, same, exact, none, whole, x, d => {
                let _ = d; let dims = x.dims(); let l = dims[dims.len() - 1];
                let t = x.shape().num_elements();
                x.reshape([t]).unfold::<2, usize>(0, l, l).reshape(dims) },
                reference Along::Layout(|s, _| (0..s.iter().product()).collect()), error PRESET;
            // The first half of the first dim overwritten by the reversed operand's.
            slice_assign_half: [Float, Int, Bool] -> same, same, exact, none, whole, x, d => {
                let _ = d; let h = x.dims()[0].div_ceil(2);
                let src = x.clone().flip([0]).slice(0..h); x.slice_assign(0..h, src) },
                reference Along::Layout(slice_assign_half_positions), error PRESET;
            // Each element times the row [1, 2, 3], crossed with the same rows reversed: the
            // middle component is 3x·3x - x·x = 8x² (the row is made before the operand is touched).
            cross_middle: [Float] -> same, same, balanced, none, whole, x, d => {
                let _ = d; let dims = x.dims(); let t = x.shape().num_elements();
                let w = Tensor::<2>::from_data([[1.0, 2.0, 3.0]], (&x.device(), x.dtype()));
                let a = x.reshape([t, 1]).mul(w);
                a.clone().cross(a.flip([1]), 1).narrow(1, 1, 1).reshape(dims) },
                // The middle component of [x, 2x, 3x] x [3x, 2x, x]: a3 b1 - a1 b3 = 3x * 3x - x *
                // x (as written: an infinite x gives inf - inf).
                reference Along::Map(|x| Some((3.0 * x) * (3.0 * x) - x * x), |_| None, |b| b),
                error composite(Composite::CrossMiddle).headroom(9.0 / 8.0);
            // An int matmul by a row of ones, whose second column is the operand again.
            matmul_ones: [Int] -> same, same, exact, none, whole, x, d => {
                let _ = d; let dims = x.dims(); let t = x.shape().num_elements();
                let e = Tensor::<2, Int>::ones([1, 2], (&x.device(), x.dtype()));
                x.reshape([t, 1]).matmul(e).narrow(1, 1, 1).reshape(dims) },
                reference Along::Map(|_| None, Some, |b| b), error PRESET;
            // Int powi by a tensor of twos, the base kept below 1000 in magnitude (an i32
            // overflow is a debug-build panic in Flex, not a finding).
            powi_two_int: [Int] -> same, same, exact, none, whole, x, d => {
                let _ = d; let two = Tensor::full(x.shape(), 2, (&x.device(), x.dtype()));
                x.remainder_scalar(1000).powi(two) },
                reference Along::Map(|_| None, |x| floor_mod_i(x, 1000).map(|r| r * r), |b| b),
                error PRESET;
            // A capture tensor's client called as burn-router's fusion calls it (see
            // `program::fusion`): an alias under a fresh id, and a cached relative graph
            // registered and invoked again; the plain ops on any other device.
            fusion_alias: [Float] -> same, same, exact, none, whole, x, d => {
                let _ = d; dispatch_fuzz::program::fusion::alias(x) },
                // Off capture, the fusion entries are plain ops: the alias is the operand, the
                // cached graph (x * 0.5 + x) * 2 + that.
                reference Along::Map(Some, Some, |b| b), error PRESET;
            fusion_cached_graph: [Float] -> same, same, balanced, none, whole, x, d => {
                let _ = d; dispatch_fuzz::program::fusion::cached_graph_twice(x) },
                reference Along::Map(|x| Some(4.5 * x), |_| None, |b| b), error higham(Terms::Fixed(2));
            // An uninitialized float tensor, every element masked to zero (by a mask true for
            // NaN and non-NaN alike), added to the operand times zero.
            empty_masked: [Float] -> same, same, exact, none, whole, x, d => {
                let _ = d; let e = Tensor::empty(x.shape(), (&x.device(), x.dtype()));
                let all = e.clone().is_nan().bool_or(e.clone().is_nan().bool_not());
                x.mul_scalar(0).add(e.mask_fill(all, 0)) },
                // x * 0 + 0 over the masked empty tensor.
                reference Along::Map(|x| Some(x * 0.0 + 0.0), |_| None, |b| b), error PRESET;
            // Values drawn from the operand's device's generator in its shape and dtype
            // (`float_random`, `int_random`), combined with the operand as `zeros_like` is.
            // No two backends and no replay draw alike (`random`): only kind, dtype, shape
            // and device are judged.
            random_uniform_like: [Float, Int] -> same, same, exact, random, whole, x, d => {
                let _ = d; let r = Tensor::random(x.shape(),
                    burn::tensor::Distribution::Uniform(-4.0, 4.0), (&x.device(), x.dtype()));
                x.mul_scalar(0).add(r) },
                reference Along::Missing(RANDOM), error PRESET;
            random_normal_like: [Float] -> same, same, exact, random, whole, x, d => {
                let _ = d; let r = Tensor::random(x.shape(),
                    burn::tensor::Distribution::Normal(0.0, 2.0), (&x.device(), x.dtype()));
                x.mul_scalar(0).add(r) },
                reference Along::Missing(RANDOM), error PRESET;
            random_bernoulli_like: [Float] -> same, same, exact, random, whole, x, d => {
                let _ = d; let r = Tensor::random(x.shape(),
                    burn::tensor::Distribution::Bernoulli(0.5), (&x.device(), x.dtype()));
                x.mul_scalar(0).add(r) },
                reference Along::Missing(RANDOM), error PRESET;
            random_default_like: [Float] -> same, same, exact, random, whole, x, d => {
                let _ = d; let r = Tensor::random(x.shape(),
                    burn::tensor::Distribution::Default, (&x.device(), x.dtype()));
                x.mul_scalar(0).add(r) },
                reference Along::Missing(RANDOM), error PRESET;
        }
    };
}
pub(crate) use along_dim_ops;

/// What an along-dim op does to its operand's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DimShape {
    /// Unchanged.
    Same,
    /// The dim becomes 1 (the rank is kept).
    Reduce,
}

/// One entry of the table.
#[derive(Debug)]
pub struct AlongDimSpec {
    /// The name program files store.
    pub name: &'static str,
    /// The operand kinds the op takes.
    pub kinds: &'static [Kind],
    /// The result's kind, when it is not the operand's.
    pub result: Option<Kind>,
    /// The dtype the result is stored in.
    pub dtype: ResultDtype,
    /// What it does to the shape.
    pub shape: DimShape,
    /// How closely Flex and wgpu must agree.
    pub tolerance: Tolerance,
    /// What Burn leaves open.
    pub unspecified: Unspecified,
    /// How far one operand element reaches in the result: its lane along `d`, or the whole
    /// result.
    pub spread: Spread,
    /// The call on Burn's public API, over an operand `x` and a dim `d`.
    pub call: &'static str,
}

impl AlongDimSpec {
    /// Whether the op takes an operand of kind `kind`.
    pub fn accepts(&self, kind: Kind) -> bool {
        self.kinds.contains(&kind)
    }

    /// The result's kind for an operand of kind `kind`.
    pub fn result_kind(&self, kind: Kind) -> Kind {
        self.result.unwrap_or(kind)
    }

    /// The result's shape for an operand of shape `shape`, along `dim`.
    pub fn result_shape(&self, shape: &[usize], dim: usize) -> Vec<usize> {
        let mut out = shape.to_vec();
        if self.shape == DimShape::Reduce {
            out[dim] = 1;
        }
        out
    }

    /// Whether the call makes tensors on the operand's device (index tensors) before the op.
    pub fn creates_on_device(&self) -> bool {
        mentions_ident(self.call, "device")
    }

    /// Whether the result is the operand under another id, a fusion alias: capture resolves
    /// it to the operand, in recorded ops, reads and scope boundaries alike.
    pub fn aliases_operand(&self) -> bool {
        mentions_ident(self.call, "alias")
    }

    /// The call with the operand `x` and the dim `d` replaced by Rust expressions.
    pub fn call_on(&self, x: &str, d: &str) -> String {
        render(self.call, &[("x", x), ("d", d)])
    }
}

macro_rules! dim_shape {
    (same) => {
        DimShape::Same
    };
    (reduce) => {
        DimShape::Reduce
    };
}

macro_rules! along_dim_specs {
    ($($name:ident : [$($kind:ident),+] -> $result:ident, $shape:ident, $tol:ident, $un:ident,
        $reach:ident, $x:ident, $d:ident => $call:expr, reference $reference:expr,
        error $error:expr;)+) => {
        /// The along-dim ops, in table order.
        pub const ALONG_DIM: &[AlongDimSpec] = &[$(AlongDimSpec {
            name: stringify!($name),
            kinds: &[$(Kind::$kind),+],
            result: op_result!($result),
            dtype: op_dtype!($result),
            shape: dim_shape!($shape),
            tolerance: op_tolerance!($tol),
            unspecified: op_unspecified!($un),
            spread: op_spread!($reach),
            call: stringify!($call),
        }),+];
    };
}
along_dim_ops!(along_dim_specs);

table_index! {
    /// An along-dim op: an index into [`ALONG_DIM`], stored by name.
    AlongDimOp, ALONG_DIM, "along-dim"
}

impl AlongDimOp {
    /// Its entry.
    pub fn spec(self) -> &'static AlongDimSpec {
        &ALONG_DIM[self.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_calls_print_with_their_operands() {
        let mut names: Vec<&str> = ALONG_DIM.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALONG_DIM.len());
        let softmax = AlongDimOp::named("softmax").unwrap().spec();
        assert_eq!(
            softmax.call_on("t1.clone()", "2"),
            "burn::tensor::activation::softmax(t1.clone(), 2)"
        );
        let flip = AlongDimOp::named("flip").unwrap().spec();
        assert_eq!(flip.call_on("t0", "1"), "t0.flip([1 as isize])");
        assert_eq!(flip.result_shape(&[2, 3], 1), vec![2, 3]);
        let argmin = AlongDimOp::named("argmin").unwrap().spec();
        assert_eq!(argmin.result_shape(&[2, 3], 1), vec![2, 1]);
        assert_eq!(argmin.result_kind(Kind::Float), Kind::Int);
        assert!(AlongDimOp::named("select_reversed")
            .unwrap()
            .spec()
            .creates_on_device());
        assert!(!flip.creates_on_device());
    }
}
