//! Executes one `Op` on real tensors through Burn's public `Tensor` API.

use anyhow::{anyhow, Result};
use burn::tensor::kind::Basic;
use burn::tensor::{Bool, Int, Tensor};

use super::value::{map_rank, on_rank, zip_rank, AnyTensor, Ranked};
use crate::program::{
    along_dim_ops, binary_ops, compare_ops, module_ops, quantized_ops, scalar_ops, unary_ops, Kind,
    LogicOp, Op, Slot,
};

/// The result variant of a table entry: the operand's kind (`same`, or a dtype of it: `I64`)
/// or the one it names.
macro_rules! result_variant {
    (same, $kind:ident, $value:expr) => {
        AnyTensor::$kind($value)
    };
    (I64, $kind:ident, $value:expr) => {
        AnyTensor::$kind($value)
    };
    (I32, $kind:ident, $value:expr) => {
        AnyTensor::$kind($value)
    };
    ($result:ident, $kind:ident, $value:expr) => {
        AnyTensor::$result($value)
    };
}

/// The body every one-tensor call shares: the first of the entry's kinds that `$t` holds goes
/// to `$arm!($kind, tensor, $args)`; a kind the entry does not take gives `None` (the typing
/// rule already refused it).
macro_rules! first_kind {
    ($t:ident, [$($kind:ident),+], $arm:ident $args:tt) => {{
        $(
            let $t = match $t {
                AnyTensor::$kind(r) => return Some($arm!($kind, r, $args)),
                other => other,
            };
        )+
        drop($t);
        None
    }};
}

/// An entry's call mapped over the operand's rank, in its result's kind.
macro_rules! mapped {
    ($kind:ident, $r:ident, ($result:ident, $x:ident => $call:expr)) => {
        result_variant!($result, $kind, map_rank!($r, $x => $call))
    };
}

/// [`mapped`] with the scalar operand `$y` first made the element type of the kind.
macro_rules! mapped_with_scalar {
    ($kind:ident, $r:ident, ($result:ident, $y:ident = $value:ident, $x:ident => $call:expr)) => {{
        let $y = scalar_as!($kind, $value);
        result_variant!($result, $kind, map_rank!($r, $x => $call))
    }};
}

/// One call per entry of `program::unary_ops!`, in table order.
macro_rules! unary_calls {
    ($($name:ident : [$($kind:ident),+] -> $result:ident, $tol:ident, $un:ident,
        $reach:ident, $x:ident => $call:expr, reference $reference:expr, error $error:expr;)+) => {
        const UNARY_CALLS: &[fn(AnyTensor) -> Option<AnyTensor>] = &[$(
            |t: AnyTensor| -> Option<AnyTensor> {
                first_kind!(t, [$($kind),+], mapped ($result, $x => $call))
            }
        ),+];
    };
}
unary_ops!(unary_calls);

/// One call per entry of `program::along_dim_ops!`, in table order, like [`UNARY_CALLS`].
macro_rules! along_dim_calls {
    ($($name:ident : [$($kind:ident),+] -> $result:ident, $shape:ident, $tol:ident, $un:ident,
        $reach:ident, $x:ident, $d:ident => $call:expr, reference $reference:expr,
        error $error:expr;)+) => {
        const ALONG_DIM_CALLS: &[fn(AnyTensor, usize) -> Option<AnyTensor>] = &[$(
            |t: AnyTensor, $d: usize| -> Option<AnyTensor> {
                first_kind!(t, [$($kind),+], mapped ($result, $x => $call))
            }
        ),+];
    };
}
along_dim_ops!(along_dim_calls);

/// One call per entry of `program::quantized_ops!`, in table order: a float operand and the
/// step's scheme.
macro_rules! quantized_calls {
    ($($name:ident : $tol:ident, $x:ident, $s:ident => $call:expr,
        reference $reference:expr, round_trips $trips:literal;)+) => {
        const QUANTIZED_CALLS: &[fn(AnyTensor, burn::tensor::quantization::QuantScheme)
            -> Option<AnyTensor>] = &[$(
            |t: AnyTensor, $s: burn::tensor::quantization::QuantScheme| -> Option<AnyTensor> {
                first_kind!(t, [Float], mapped (same, $x => $call))
            }
        ),+];
    };
}
quantized_ops!(quantized_calls);

/// The operand of a module entry of rank `$rank`, as a typed tensor (`None`: another kind or
/// rank, which the typing rule already refused).
macro_rules! module_operand {
    (3, $t:expr) => {
        match $t {
            AnyTensor::Float(Ranked::R3(x)) => x,
            _ => return None,
        }
    };
    (4, $t:expr) => {
        match $t {
            AnyTensor::Float(Ranked::R4(x)) => x,
            _ => return None,
        }
    };
}

/// A module entry's spatial size variable `s` for an operand of rank `$rank`.
macro_rules! module_spatial {
    (3, $x:expr) => {
        $x.dims()[2]
    };
    (4, $x:expr) => {
        [$x.dims()[2], $x.dims()[3]]
    };
}

/// A module entry's result, of the operand's rank, in the entry's result kind.
macro_rules! module_result {
    (3, $result:ident, $v:expr) => {
        module_result!(@kind $result, Ranked::R3($v))
    };
    (4, $result:ident, $v:expr) => {
        module_result!(@kind $result, Ranked::R4($v))
    };
    (@kind same, $v:expr) => {
        AnyTensor::Float($v)
    };
    (@kind $result:ident, $v:expr) => {
        AnyTensor::$result($v)
    };
}

/// One call per entry of `program::module_ops!`, in table order: the variables the module doc
/// of `program::module` promises (`x`, `d`, `c`, `k`, `p`, `s`), then the entry's call, the
/// same text `ModuleSpec::call_on` prints.
macro_rules! module_calls {
    ($($name:ident : $rank:tt -> $result:ident, $tol:ident, $un:ident,
        [$x:ident, $d:ident, $c:ident, $k:ident, $p:ident, $s:ident] => $call:expr,
        reference $reference:expr, error $error:expr;)+) => {
        #[allow(unused_variables)]
        const MODULE_CALLS: &[fn(AnyTensor, usize) -> Option<AnyTensor>] = &[$(
            |t: AnyTensor, $k: usize| -> Option<AnyTensor> {
                let $x = module_operand!($rank, t);
                let $d = $x.device();
                let $c = $x.dims()[1];
                let $p = ($k - 1) / 2;
                let $s = module_spatial!($rank, $x);
                Some(module_result!($rank, $result, $call))
            }
        ),+];
    };
}
module_ops!(module_calls);

/// One call per entry of a tensor-tensor table (`program::binary_ops!`, `compare_ops!`), in
/// table order: `None` for operands of a kind the entry does not take or of different ranks.
macro_rules! tensor_tensor_calls {
    ($calls:ident; $($name:ident : [$($kind:ident),+] -> $result:ident, $tol:ident, $un:ident,
        $x:ident, $y:ident => $call:expr, reference $reference:expr,
        error $error:expr;)+) => {
        const $calls: &[fn(AnyTensor, AnyTensor) -> Option<AnyTensor>] = &[$(
            |a: AnyTensor, b: AnyTensor| -> Option<AnyTensor> {
                $(
                    let (a, b) = match (a, b) {
                        (AnyTensor::$kind(l), AnyTensor::$kind(r)) => {
                            return zip_rank!(l, r, $x, $y => $call)
                                .map(|v| result_variant!($result, $kind, v));
                        }
                        other => other,
                    };
                )+
                drop((a, b));
                None
            }
        ),+];
    };
}
binary_ops!(tensor_tensor_calls, BINARY_CALLS);
compare_ops!(tensor_tensor_calls, COMPARE_CALLS);

/// A scalar operand as the element type of kind `$kind`.
macro_rules! scalar_as {
    (Float, $v:expr) => {
        f32::from($v)
    };
    (Int, $v:expr) => {
        i64::from($v)
    };
    // Bool entries read the scalar as an integer and make their own bool of it.
    (Bool, $v:expr) => {
        i64::from($v)
    };
}

/// One call per entry of `program::scalar_ops!`, in table order.
macro_rules! scalar_calls {
    ($calls:ident; $($name:ident : [$($kind:ident),+] -> $result:ident, $tol:ident, $un:ident,
        $x:ident, $y:ident => $call:expr, reference $reference:expr,
        error $error:expr;)+) => {
        const $calls: &[fn(AnyTensor, i8) -> Option<AnyTensor>] = &[$(
            |t: AnyTensor, value: i8| -> Option<AnyTensor> {
                first_kind!(t, [$($kind),+], mapped_with_scalar ($result, $y = value, $x => $call))
            }
        ),+];
    };
}
scalar_ops!(scalar_calls, SCALAR_CALLS);

fn mismatch(op: &Op) -> anyhow::Error {
    anyhow!("operands passed the typing rule but do not fit the executor: {op:?}")
}

/// `t.swap_dims(rank - 1, rank - 2)` with the rank read at run time, so the rank-1 arm of the
/// rank macros (never taken: matmul needs rank 2) still compiles.
fn transpose_last<const D: usize, K: Basic>(t: Tensor<D, K>) -> Tensor<D, K> {
    let rank = t.dims().len();
    t.swap_dims(rank.saturating_sub(1), rank.saturating_sub(2))
}

fn mask_where<K: Basic>(s: Ranked<K>, m: Ranked<Bool>, v: Ranked<K>) -> Option<Ranked<K>> {
    use Ranked::*;
    Some(match (s, m, v) {
        (R1(s), R1(m), R1(v)) => R1(s.mask_where(m, v)),
        (R2(s), R2(m), R2(v)) => R2(s.mask_where(m, v)),
        (R3(s), R3(m), R3(v)) => R3(s.mask_where(m, v)),
        (R4(s), R4(m), R4(v)) => R4(s.mask_where(m, v)),
        _ => return None,
    })
}

fn mask_fill<K: Basic, E: burn::tensor::ElementConversion + Copy>(
    s: Ranked<K>,
    m: Ranked<Bool>,
    value: E,
) -> Option<Ranked<K>> {
    zip_rank!(s, m, s, m => s.mask_fill(m, value))
}

/// `Tensor::cat` over same-rank tensors; `None` if a rank differs.
fn cat<K: Basic>(items: Vec<Ranked<K>>, dim: usize) -> Option<Ranked<K>> {
    macro_rules! cat_as {
        ($variant:ident) => {{
            let tensors = items
                .into_iter()
                .map(|r| match r {
                    Ranked::$variant(t) => Some(t),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            Some(Ranked::$variant(Tensor::cat(tensors, dim)))
        }};
    }
    match items.first()? {
        Ranked::R1(_) => cat_as!(R1),
        Ranked::R2(_) => cat_as!(R2),
        Ranked::R3(_) => cat_as!(R3),
        Ranked::R4(_) => cat_as!(R4),
    }
}

macro_rules! cat_kind {
    ($variant:ident, $items:expr, $dim:expr) => {{
        let typed = $items
            .into_iter()
            .map(|t| match t {
                AnyTensor::$variant(r) => Some(r),
                _ => None,
            })
            .collect::<Option<Vec<_>>>();
        typed
            .and_then(|typed| cat(typed, $dim))
            .map(AnyTensor::$variant)
    }};
}

/// Runs `op` with operands from `get`. The caller has checked the operands with
/// `program::op_output`; an error here means the typing rule and this executor disagree, a
/// harness bug, never a Burn one.
pub fn exec_op(op: &Op, get: impl Fn(Slot) -> Option<AnyTensor>) -> Result<AnyTensor> {
    use AnyTensor::{Bool as B, Float as F, Int as I};
    let arg = |s: Slot| get(s).ok_or_else(|| mismatch(op));
    let out = match op {
        Op::Unary { op: u, src } => UNARY_CALLS[u.index()](arg(*src)?),
        Op::Binary { op, lhs, rhs } => BINARY_CALLS[op.index()](arg(*lhs)?, arg(*rhs)?),
        Op::Scalar { op, src, value } => SCALAR_CALLS[op.index()](arg(*src)?, *value),
        Op::Matmul {
            lhs,
            rhs,
            transpose_rhs,
        } => match (arg(*lhs)?, arg(*rhs)?) {
            (F(x), F(y)) => zip_rank!(x, y, x, y => {
                let y = if *transpose_rhs { transpose_last(y) } else { y };
                x.matmul(y)
            })
            .map(F),
            _ => None,
        },
        Op::AlongDim { op: a, src, dim } => {
            ALONG_DIM_CALLS[a.index()](arg(*src)?, usize::from(*dim))
        }
        Op::Quantized { op, src, scheme } => QUANTIZED_CALLS[op.index()](arg(*src)?, scheme.burn()),
        Op::Module { op, src, kernel } => {
            MODULE_CALLS[op.index()](arg(*src)?, crate::program::kernel_size(*kernel))
        }
        Op::SumDim { src, dim } => {
            let dim = usize::from(*dim);
            match arg(*src)? {
                F(r) => Some(F(map_rank!(r, t => t.sum_dim(dim)))),
                I(r) => Some(I(map_rank!(r, t => t.sum_dim(dim)))),
                B(_) => None,
            }
        }
        Op::ArgMax { src, dim } => {
            let dim = usize::from(*dim);
            match arg(*src)? {
                F(r) => Some(I(map_rank!(r, t => t.argmax(dim)))),
                I(r) => Some(I(map_rank!(r, t => t.argmax(dim)))),
                B(_) => None,
            }
        }
        Op::Reshape { src, dims } => {
            let dims: Vec<usize> = dims.iter().map(|d| usize::from(*d)).collect();
            Some(arg(*src)?.reshape(&dims))
        }
        Op::SwapDims { src, dim0, dim1 } => {
            let (a, b) = (usize::from(*dim0), usize::from(*dim1));
            Some(super::value::map_any!(arg(*src)?, t => t.swap_dims(a, b)))
        }
        Op::Slice {
            src,
            dim,
            start,
            len,
        } => {
            let (dim, start) = (usize::from(*dim), usize::from(*start));
            let end = start + usize::from(*len);
            Some(super::value::map_any!(arg(*src)?, t => t.slice_dim(dim, start..end)))
        }
        Op::Cat { first, rest, dim } => {
            let dim = usize::from(*dim);
            let mut items = vec![arg(*first)?];
            for slot in rest {
                items.push(arg(*slot)?);
            }
            match items[0].kind() {
                Kind::Float => cat_kind!(Float, items, dim),
                Kind::Int => cat_kind!(Int, items, dim),
                Kind::Bool => cat_kind!(Bool, items, dim),
            }
        }
        Op::Cast { src, to, dtype } => cast(arg(*src)?, *to, *dtype),
        Op::Compare { op, lhs, rhs } => COMPARE_CALLS[op.index()](arg(*lhs)?, arg(*rhs)?),
        Op::Clamp { src, min, max } => clamp(arg(*src)?, *min, *max),
        Op::MaskWhere { src, mask, value } => masked_where(arg(*src)?, arg(*mask)?, arg(*value)?),
        Op::MaskFill { src, mask, value } => masked_fill(arg(*src)?, arg(*mask)?, *value),
        Op::Logic { op: l, lhs, rhs } => match (arg(*lhs)?, arg(*rhs)?) {
            (B(x), B(y)) => zip_rank!(x, y, x, y => match l {
                LogicOp::And => x.bool_and(y),
                LogicOp::Or => x.bool_or(y),
            })
            .map(B),
            _ => None,
        },
        Op::Not { src } => match arg(*src)? {
            B(r) => Some(B(map_rank!(r, t => t.bool_not()))),
            _ => None,
        },
    };
    // Tests inject a wrong result here, where every path computes the op.
    let rerun: super::faults::Exec = |op, get| exec_op(op, get);
    let out = out.map(|t| super::faults::after_op(op, t, &get, rerun));
    // The nightly job's end-to-end check plants its Burn bugs here (never in a real build).
    #[cfg(feature = "planted-faults")]
    let out = out.map(|t| super::planted::after_op(op, t));
    out.ok_or_else(|| mismatch(op))
}

/// A cast to `dtype`, or without one to kind `to` (`int()`, `float()`, `bool()`).
fn cast(t: AnyTensor, to: Kind, dtype: Option<crate::program::Dtype>) -> Option<AnyTensor> {
    use AnyTensor::{Bool as B, Float as F, Int as I};
    if let Some(dtype) = dtype {
        return match (t, dtype.float(), dtype.int()) {
            (F(r), Some(d), _) => Some(F(map_rank!(r, t => t.cast(d)))),
            (F(r), _, Some(d)) => Some(I(map_rank!(r, t => t.cast(d)))),
            (I(r), Some(d), _) => Some(F(map_rank!(r, t => t.cast(d)))),
            (I(r), _, Some(d)) => Some(I(map_rank!(r, t => t.cast(d)))),
            (B(r), Some(d), _) => Some(F(map_rank!(r, t => t.cast(d)))),
            (B(r), _, Some(d)) => Some(I(map_rank!(r, t => t.cast(d)))),
            _ => None,
        };
    }
    match (t, to) {
        (F(r), Kind::Int) => Some(I(map_rank!(r, t => t.int()))),
        (F(r), Kind::Bool) => Some(B(map_rank!(r, t => t.bool()))),
        (I(r), Kind::Float) => Some(F(map_rank!(r, t => t.float()))),
        (I(r), Kind::Bool) => Some(B(map_rank!(r, t => t.bool()))),
        (B(r), Kind::Int) => Some(I(map_rank!(r, t => t.int()))),
        (B(r), Kind::Float) => Some(F(map_rank!(r, t => t.float()))),
        _ => None,
    }
}

/// A clamp to `[min, max]`: as the reproducer's literals are, an f32 for floats and an i32 for
/// ints, whose conversion to the tensor's element type a panic names.
fn clamp(t: AnyTensor, min: i8, max: i8) -> Option<AnyTensor> {
    use AnyTensor::{Float as F, Int as I};
    match t {
        F(r) => Some(F(
            map_rank!(r, t => t.clamp(f32::from(min), f32::from(max))),
        )),
        I(r) => Some(I(
            map_rank!(r, t => t.clamp(i32::from(min), i32::from(max))),
        )),
        AnyTensor::Bool(_) => None,
    }
}

/// `mask_where` of `s` by bool mask `m` from `v`, of `s`'s kind.
fn masked_where(s: AnyTensor, m: AnyTensor, v: AnyTensor) -> Option<AnyTensor> {
    use AnyTensor::{Bool as B, Float as F, Int as I};
    match (s, m, v) {
        (F(s), B(m), F(v)) => mask_where(s, m, v).map(F),
        (I(s), B(m), I(v)) => mask_where(s, m, v).map(I),
        (B(s), B(m), B(v)) => mask_where(s, m, v).map(B),
        _ => None,
    }
}

/// `mask_fill` of `s` by bool mask `m` with `value`: a bool tensor is filled with a bool (Burn
/// converts the fill value to the tensor's storage type, and a negative integer has no bool
/// storage), true when odd.
fn masked_fill(s: AnyTensor, m: AnyTensor, value: i8) -> Option<AnyTensor> {
    use AnyTensor::{Bool as B, Float as F, Int as I};
    let value = i64::from(value);
    match (s, m) {
        (F(s), B(m)) => mask_fill(s, m, value).map(F),
        (I(s), B(m)) => mask_fill(s, m, value).map(I),
        (B(s), B(m)) => mask_fill(s, m, value % 2 != 0).map(B),
        _ => None,
    }
}

/// Why a `Backward` step cannot run. A plain value, not an `anyhow::Error`: programs meet it
/// often, and under `RUST_BACKTRACE=1` every `anyhow!` captures a backtrace (2% of a bench run).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("a gradient needs two float tensors")]
pub struct NotFloat;

/// `param.grad(&loss.clone().sum().backward())`: `Ok(None)` where `param` has no gradient in
/// that graph, `Err` where an operand is not a float tensor (the step cannot run).
pub fn gradient(loss: AnyTensor, param: &AnyTensor) -> Result<Option<AnyTensor>, NotFloat> {
    let (AnyTensor::Float(loss), AnyTensor::Float(param)) = (loss, param) else {
        return Err(NotFloat);
    };
    let grads = on_rank!(loss, t => t.sum().backward());
    // Tests inject a wrong backward formula here, where every path takes its gradient.
    Ok(match param {
        Ranked::R1(p) => p.grad(&grads).map(Ranked::R1),
        Ranked::R2(p) => p.grad(&grads).map(Ranked::R2),
        Ranked::R3(p) => p.grad(&grads).map(Ranked::R3),
        Ranked::R4(p) => p.grad(&grads).map(Ranked::R4),
    }
    .map(AnyTensor::Float)
    .map(super::faults::after_gradient))
}
