//! The repair of one op: operand slots of the kinds it takes, parameters in range.

use super::Env;
use crate::program::limits::{MAX_LIST, MAX_RANK, MAX_SLOTS};
use crate::program::module::kernel_size;
use crate::program::typing::{broadcasts_to, is_numeric, matmul_shape, unary_accepts, Ty};
use crate::program::{Kind, Op};

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
        } => {
            let lhs = env.pick(lhs, |t| t.kind == Kind::Float && t.rank() >= 2)?;
            let l = env.ty(lhs)?;
            let fits = |t: &Ty, tr: bool| {
                t.kind == Kind::Float && matmul_shape(&l.shape, &t.shape, tr).is_some()
            };
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
            Op::Matmul {
                lhs,
                rhs,
                transpose_rhs,
            }
        }
        Op::AlongDim { op, src, dim } => {
            let src = env.pick(src, |t| op.spec().accepts(t.kind))?;
            Op::AlongDim {
                op,
                src,
                dim: dim % env.ty(src)?.rank() as u8,
            }
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
            let src = env.pick(src, numeric)?;
            Op::SumDim {
                src,
                dim: dim % env.ty(src)?.rank() as u8,
            }
        }
        Op::ArgMax { src, dim } => {
            let src = env.pick(src, numeric)?;
            Op::ArgMax {
                src,
                dim: dim % env.ty(src)?.rank() as u8,
            }
        }
        Op::Reshape { src, dims } => {
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
            Op::Reshape { src, dims }
        }
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
        } => {
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
            Op::Slice {
                src,
                dim,
                start,
                len,
            }
        }
        Op::Cat { first, rest, dim } => {
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
            Op::Cat { first, rest, dim }
        }
        Op::Cast { src, to, dtype } => {
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
            Op::Cast {
                src,
                to,
                dtype: None,
            }
        }
        Op::Compare { op, lhs, rhs } => {
            let lhs = env.pick(lhs, |t| op.spec().accepts(t.kind))?;
            let l = env.ty(lhs)?;
            Op::Compare {
                op,
                lhs,
                rhs: env.pick(rhs, |t| *t == l)?,
            }
        }
        Op::Clamp { src, min, max } => Op::Clamp {
            src: env.pick(src, numeric)?,
            min: min.min(max),
            max: min.max(max),
        },
        Op::MaskWhere { src, mask, value } => {
            let src = env.pick_any(src)?;
            let s = env.ty(src)?;
            Op::MaskWhere {
                src,
                mask: env.pick(mask, |t| t.kind == Kind::Bool && t.shape == s.shape)?,
                value: env.pick(value, |t| *t == s)?,
            }
        }
        Op::MaskFill { src, mask, value } => {
            let src = env.pick_any(src)?;
            let s = env.ty(src)?;
            Op::MaskFill {
                src,
                mask: env.pick(mask, |t| t.kind == Kind::Bool && t.shape == s.shape)?,
                value,
            }
        }
        Op::Logic { op, lhs, rhs } => {
            let lhs = env.pick(lhs, |t| t.kind == Kind::Bool)?;
            let l = env.ty(lhs)?;
            Op::Logic {
                op,
                lhs,
                rhs: env.pick(rhs, |t| *t == l)?,
            }
        }
        Op::Not { src } => Op::Not {
            src: env.pick(src, |t| t.kind == Kind::Bool)?,
        },
    })
}
