//! The repair of one op: operand slots of the kinds it takes, parameters in range.

use super::Env;
use crate::program::limits::{MAX_LIST, MAX_RANK, MAX_SLOTS};
use crate::program::module::kernel_size;
use crate::program::typing::{broadcasts_to, is_numeric, matmul_shape, unary_accepts, Ty};
use crate::program::{Dtype, Kind, Op, Slot};

/// Picks operands the op accepts; see each arm for the repair when the named ones do not fit.
pub(super) fn fix_op(op: Op, env: &Env) -> Option<Op> {
    let numeric = |t: &Ty| is_numeric(t.kind);
    Some(match op {
        Op::Unary { op, src } => Op::Unary {
            op,
            src: env.pick(src, |t| unary_accepts(op, t.kind))?,
        },
        Op::Binary { op, lhs, rhs } => {
            let lhs = env.pick(lhs, |t| op.spec().accepts(t.kind))?;
            let l = env.ty(lhs)?;
            // `lhs` itself always fits, so a binary op never has to be dropped for its rhs.
            let rhs = env.pick(rhs, |t| {
                t.kind == l.kind && broadcasts_to(&t.shape, &l.shape)
            })?;
            Op::Binary { op, lhs, rhs }
        }
        Op::Scalar { op, src, value } => Op::Scalar {
            op,
            src: env.pick(src, |t| op.spec().accepts(t.kind))?,
            value,
        },
        Op::Matmul {
            lhs,
            rhs,
            transpose_rhs,
        } => fix_matmul(lhs, rhs, transpose_rhs, env)?,
        Op::AlongDim { op, src, dim } => {
            let (src, dim) = along(env, src, dim, |t| op.spec().accepts(t.kind))?;
            Op::AlongDim { op, src, dim }
        }
        Op::Quantized { op, src, scheme } => Op::Quantized {
            op,
            src: env.pick(src, |t| op.spec().accepts(t.kind))?,
            scheme,
        },
        Op::Module { op, src, kernel } => Op::Module {
            op,
            src: env.pick(src, |t| op.spec().accepts(t.kind, t.rank()))?,
            kernel: kernel_size(kernel) as u8,
        },
        Op::SumDim { src, dim } => {
            let (src, dim) = along(env, src, dim, numeric)?;
            Op::SumDim { src, dim }
        }
        Op::ArgMax { src, dim } => {
            let (src, dim) = along(env, src, dim, numeric)?;
            Op::ArgMax { src, dim }
        }
        Op::Reshape { src, dims } => fix_reshape(src, dims, env)?,
        Op::SwapDims { src, dim0, dim1 } => {
            let src = env.pick_any(src)?;
            let rank = env.ty(src)?.rank() as u8;
            Op::SwapDims {
                src,
                dim0: dim0 % rank,
                dim1: dim1 % rank,
            }
        }
        Op::Slice {
            src,
            dim,
            start,
            len,
        } => fix_slice(src, (dim, start, len), env)?,
        Op::Cat { first, rest, dim } => fix_cat(first, rest, dim, env)?,
        Op::Cast { src, to, dtype } => fix_cast(src, to, dtype, env)?,
        Op::Compare { op, lhs, rhs } => {
            let (lhs, rhs) = same_typed(env, lhs, rhs, |t| op.spec().accepts(t.kind))?;
            Op::Compare { op, lhs, rhs }
        }
        Op::Clamp { src, min, max } => Op::Clamp {
            src: env.pick(src, numeric)?,
            min: min.min(max),
            max: min.max(max),
        },
        Op::MaskWhere { src, mask, value } => {
            let (src, mask) = masked(env, src, mask)?;
            let s = env.ty(src)?;
            let value = env.pick(value, |t| *t == s)?;
            Op::MaskWhere { src, mask, value }
        }
        Op::MaskFill { src, mask, value } => {
            let (src, mask) = masked(env, src, mask)?;
            Op::MaskFill { src, mask, value }
        }
        Op::Logic { op, lhs, rhs } => {
            let (lhs, rhs) = same_typed(env, lhs, rhs, |t| t.kind == Kind::Bool)?;
            Op::Logic { op, lhs, rhs }
        }
        Op::Not { src } => Op::Not {
            src: env.pick(src, |t| t.kind == Kind::Bool)?,
        },
    })
}

/// A float matmul whose rhs fits the lhs, transposed where only that fits, else `lhs x lhs^T`.
fn fix_matmul(lhs: Slot, rhs: Slot, transpose_rhs: bool, env: &Env) -> Option<Op> {
    let lhs = env.pick(lhs, |t| t.kind == Kind::Float && t.rank() >= 2)?;
    let l = env.ty(lhs)?;
    let fits =
        |t: &Ty, tr: bool| t.kind == Kind::Float && matmul_shape(&l.shape, &t.shape, tr).is_some();
    let named = env.ty(rhs % MAX_SLOTS);
    let (rhs, transpose_rhs) = match named {
        Some(t) if fits(&t, transpose_rhs) => (rhs % MAX_SLOTS, transpose_rhs),
        Some(t) if fits(&t, !transpose_rhs) => (rhs % MAX_SLOTS, !transpose_rhs),
        // `lhs x lhs^T` always fits: [.., m, k] x [.., k, m].
        _ => env
            .pick(rhs, |t| fits(t, transpose_rhs))
            .map(|r| (r, transpose_rhs))
            .unwrap_or((lhs, true)),
    };
    Some(Op::Matmul {
        lhs,
        rhs,
        transpose_rhs,
    })
}

/// A reshape to dims of the operand's element count, else the rank-preserving `[1, .., 1, n]`.
fn fix_reshape(src: Slot, dims: Vec<u8>, env: &Env) -> Option<Op> {
    let src = env.pick_any(src)?;
    let numel = env.ty(src)?.numel();
    let rank = dims.len().clamp(1, MAX_RANK);
    let product = || dims.iter().map(|&d| usize::from(d)).product::<usize>();
    let dims = if dims.len() == rank && product() == numel {
        dims
    } else {
        // Rank-preserving repair: `[1, .., 1, n]`.
        let mut repaired = vec![1u8; rank];
        repaired[rank - 1] = numel as u8;
        repaired
    };
    Some(Op::Reshape { src, dims })
}

/// A slice within the operand's dimension: start and length wrapped into it.
fn fix_slice(src: Slot, (dim, start, len): (u8, u8, u8), env: &Env) -> Option<Op> {
    let src = env.pick_any(src)?;
    let t = env.ty(src)?;
    let dim = dim % t.rank() as u8;
    let size = t.shape[usize::from(dim)] as u8;
    let start = start % size;
    let room = size - start;
    let len = if (1..=room).contains(&len) {
        len
    } else {
        1 + len % room
    };
    Some(Op::Slice {
        src,
        dim,
        start,
        len,
    })
}

/// A concatenation of the operands that match the first in kind, rank and every other
/// dimension.
fn fix_cat(first: Slot, rest: Vec<Slot>, dim: u8, env: &Env) -> Option<Op> {
    let first = env.pick_any(first)?;
    let f = env.ty(first)?;
    let dim = dim % f.rank() as u8;
    let d = usize::from(dim);
    let fits = |t: &Ty| {
        t.kind == f.kind
            && t.rank() == f.rank()
            && (0..f.rank()).all(|i| i == d || t.shape[i] == f.shape[i])
    };
    let rest = rest
        .into_iter()
        .filter_map(|s| env.pick(s, fits))
        .take(MAX_LIST)
        .collect();
    Some(Op::Cat { first, rest, dim })
}

/// A cast to a named non-bool dtype, else to another kind than the operand's.
fn fix_cast(src: Slot, to: Kind, dtype: Option<Dtype>, env: &Env) -> Option<Op> {
    let src = env.pick_any(src)?;
    // A bool tensor has no `cast`: a bool target dtype falls back to `bool()`.
    if let Some(dtype) = dtype.filter(|d| d.kind() != Kind::Bool) {
        return Some(Op::Cast {
            src,
            to: dtype.kind(),
            dtype: Some(dtype),
        });
    }
    let from = env.ty(src)?.kind;
    let to = if to != from {
        to
    } else {
        match from {
            Kind::Float => Kind::Int,
            Kind::Int | Kind::Bool => Kind::Float,
        }
    };
    Some(Op::Cast {
        src,
        to,
        dtype: None,
    })
}

/// An lhs `accepts` takes and an rhs of its very type (kind and shape).
fn same_typed(
    env: &Env,
    lhs: Slot,
    rhs: Slot,
    accepts: impl Fn(&Ty) -> bool,
) -> Option<(Slot, Slot)> {
    let lhs = env.pick(lhs, accepts)?;
    let l = env.ty(lhs)?;
    Some((lhs, env.pick(rhs, |t| *t == l)?))
}

/// Any operand, and a bool mask of its shape.
fn masked(env: &Env, src: Slot, mask: Slot) -> Option<(Slot, Slot)> {
    let src = env.pick_any(src)?;
    let s = env.ty(src)?;
    Some((
        src,
        env.pick(mask, |t| t.kind == Kind::Bool && t.shape == s.shape)?,
    ))
}

/// An operand `accepts` takes, and `dim` wrapped into its rank.
fn along(env: &Env, src: Slot, dim: u8, accepts: impl Fn(&Ty) -> bool) -> Option<(Slot, u8)> {
    let src = env.pick(src, accepts)?;
    Some((src, dim % env.ty(src)?.rank() as u8))
}
