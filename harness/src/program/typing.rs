//! Static types of slots and the typing rule of every op, shared by `fixup` and the interpreter.
//!
//! `fixup` repairs operands until [`op_output`] accepts them; the interpreter calls the same rule
//! on the tensors a step really finds (a step that panicked leaves its slot empty, a replay may
//! produce fewer outputs than declared) and skips a step the rule rejects. One rule, two users,
//! so a program that fixup accepted never reaches Burn with operands it would reject for shape.

use super::dtype::Dtype;
use super::step::{Kind, Op, Slot, UnaryOp};

/// Kind and shape of a tensor.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ty {
    /// Element kind.
    pub kind: Kind,
    /// Dimensions, outermost first.
    pub shape: Vec<usize>,
}

impl Ty {
    /// Number of dimensions.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
}

/// Whether `rhs` broadcasts to `lhs` without changing `lhs`'s shape (Burn broadcasts size-1
/// dims of equal-rank operands).
pub fn broadcasts_to(rhs: &[usize], lhs: &[usize]) -> bool {
    rhs.len() == lhs.len() && rhs.iter().zip(lhs).all(|(r, l)| r == l || *r == 1)
}

/// Whether the numeric ops (`add`, `sum_dim`, `clamp`, ...) accept this kind.
pub fn is_numeric(kind: Kind) -> bool {
    matches!(kind, Kind::Float | Kind::Int)
}

/// Whether `op` accepts operands of kind `kind` (its table entry says).
pub fn unary_accepts(op: UnaryOp, kind: Kind) -> bool {
    op.spec().accepts(kind)
}

/// Shape of `lhs.matmul(rhs)` (after the optional transpose of `rhs`), if Burn accepts it:
/// equal ranks of at least 2, equal batch dims, and matching inner dims.
pub fn matmul_shape(lhs: &[usize], rhs: &[usize], transpose_rhs: bool) -> Option<Vec<usize>> {
    let rank = lhs.len();
    if rank < 2 || rhs.len() != rank {
        return None;
    }
    let mut rhs = rhs.to_vec();
    if transpose_rhs {
        rhs.swap(rank - 1, rank - 2);
    }
    if lhs[..rank - 2] != rhs[..rank - 2] || lhs[rank - 1] != rhs[rank - 2] {
        return None;
    }
    let mut out = lhs.to_vec();
    out[rank - 1] = rhs[rank - 1];
    Some(out)
}

/// The type of `op`'s result when its operands have the types `slot` gives, or `None` when the
/// operands are missing or do not fit the op.
pub fn op_output(op: &Op, slot: impl Fn(Slot) -> Option<Ty>) -> Option<Ty> {
    match op {
        Op::Unary { op, src } => slot(*src)
            .filter(|t| unary_accepts(*op, t.kind))
            .map(|t| Ty {
                kind: op.spec().result_kind(t.kind),
                shape: t.shape,
            }),
        Op::Quantized { op, src, .. } => slot(*src).filter(|t| op.spec().accepts(t.kind)),
        Op::Binary { op, lhs, rhs } => {
            let (l, r) = (slot(*lhs)?, slot(*rhs)?);
            (op.spec().accepts(l.kind) && r.kind == l.kind && broadcasts_to(&r.shape, &l.shape))
                .then(|| Ty {
                    kind: op.spec().result_kind(l.kind),
                    shape: l.shape,
                })
        }
        Op::Scalar { op, src, .. } => {
            slot(*src)
                .filter(|t| op.spec().accepts(t.kind))
                .map(|t| Ty {
                    kind: op.spec().result_kind(t.kind),
                    shape: t.shape,
                })
        }
        Op::Clamp { src, .. } => slot(*src).filter(|t| is_numeric(t.kind)),
        Op::Matmul {
            lhs,
            rhs,
            transpose_rhs,
        } => matmul_output((*lhs, *rhs, *transpose_rhs), &slot),
        Op::AlongDim { op, src, dim } => {
            let t = slot(*src).filter(|t| op.spec().accepts(t.kind))?;
            let dim = usize::from(*dim);
            (dim < t.rank()).then(|| Ty {
                kind: op.spec().result_kind(t.kind),
                shape: op.spec().result_shape(&t.shape, dim),
            })
        }
        Op::Module { op, src, .. } => {
            let t = slot(*src).filter(|t| op.spec().accepts(t.kind, t.rank()))?;
            Some(Ty {
                kind: op.spec().result_kind(),
                shape: t.shape,
            })
        }
        Op::SumDim { src, dim } => reduced(slot(*src)?, *dim),
        Op::ArgMax { src, dim } => reduced(slot(*src)?, *dim).map(|t| Ty {
            kind: Kind::Int,
            ..t
        }),
        Op::Reshape { src, dims } => reshape_output(*src, dims, &slot),
        Op::SwapDims { src, dim0, dim1 } => {
            let mut t = slot(*src)?;
            let (a, b) = (usize::from(*dim0), usize::from(*dim1));
            (a < t.rank() && b < t.rank()).then(|| {
                t.shape.swap(a, b);
                t
            })
        }
        Op::Slice {
            src,
            dim,
            start,
            len,
        } => slice_output(*src, (*dim, *start, *len), &slot),
        Op::Cat { first, rest, dim } => cat_output(*first, rest, *dim, &slot),
        Op::Cast { src, to, dtype } => cast_output(slot(*src)?, *to, *dtype),
        Op::Compare { op, lhs, rhs } => {
            let (l, r) = (slot(*lhs)?, slot(*rhs)?);
            (op.spec().accepts(l.kind) && l == r).then(|| Ty {
                kind: op.spec().result_kind(l.kind),
                shape: l.shape,
            })
        }
        Op::MaskWhere { src, mask, value } => {
            let (s, m, v) = (slot(*src)?, slot(*mask)?, slot(*value)?);
            (m.kind == Kind::Bool && m.shape == s.shape && v == s).then_some(s)
        }
        Op::MaskFill { src, mask, .. } => {
            let (s, m) = (slot(*src)?, slot(*mask)?);
            (m.kind == Kind::Bool && m.shape == s.shape).then_some(s)
        }
        Op::Logic { lhs, rhs, .. } => {
            let (l, r) = (slot(*lhs)?, slot(*rhs)?);
            (l.kind == Kind::Bool && l == r).then_some(l)
        }
        Op::Not { src } => slot(*src).filter(|t| t.kind == Kind::Bool),
    }
}

/// A numeric operand reduced along `dim` to size 1, where it has that dimension.
fn reduced(mut t: Ty, dim: u8) -> Option<Ty> {
    let dim = usize::from(dim);
    (is_numeric(t.kind) && dim < t.rank()).then(|| {
        t.shape[dim] = 1;
        t
    })
}

/// A cast's result type, where it converts.
fn cast_output(t: Ty, to: Kind, dtype: Option<Dtype>) -> Option<Ty> {
    // `Tensor<D, Bool>` has no `bool()`, and a same-kind cast is not a conversion
    // unless it names a dtype (`cast(FloatDType::F16)`); a dtype names its own kind,
    // and bool tensors have no `cast`.
    let fits = match dtype {
        Some(d) => d.kind() == to && to != Kind::Bool,
        None => t.kind != to,
    };
    fits.then_some(Ty {
        kind: to,
        shape: t.shape,
    })
}

/// A float matmul's result type, where the operands' shapes multiply.
fn matmul_output(
    (lhs, rhs, transpose_rhs): (Slot, Slot, bool),
    slot: &dyn Fn(Slot) -> Option<Ty>,
) -> Option<Ty> {
    let (l, r) = (slot(lhs)?, slot(rhs)?);
    if l.kind != Kind::Float || r.kind != Kind::Float {
        return None;
    }
    let shape = matmul_shape(&l.shape, &r.shape, transpose_rhs)?;
    Some(Ty {
        kind: l.kind,
        shape,
    })
}

/// A reshape's result type, where the dims keep the element count and a rank programs hold.
fn reshape_output(src: Slot, dims: &[u8], slot: &dyn Fn(Slot) -> Option<Ty>) -> Option<Ty> {
    let t = slot(src)?;
    let shape: Vec<usize> = dims.iter().map(|d| usize::from(*d)).collect();
    let rank_ok = (super::limits::MIN_RANK..=super::limits::MAX_RANK).contains(&dims.len());
    (rank_ok && shape.iter().product::<usize>() == t.numel()).then_some(Ty {
        kind: t.kind,
        shape,
    })
}

/// A slice's result type, where the range lies within the dimension.
fn slice_output(
    src: Slot,
    (dim, start, len): (u8, u8, u8),
    slot: &dyn Fn(Slot) -> Option<Ty>,
) -> Option<Ty> {
    let mut t = slot(src)?;
    let (dim, start, len) = (usize::from(dim), usize::from(start), usize::from(len));
    (dim < t.rank() && len >= 1 && start + len <= t.shape[dim]).then(|| {
        t.shape[dim] = len;
        t
    })
}

/// A concatenation's result type, where every operand matches the first but along `dim`.
fn cat_output(
    first: Slot,
    rest: &[Slot],
    dim: u8,
    slot: &dyn Fn(Slot) -> Option<Ty>,
) -> Option<Ty> {
    let mut t = slot(first)?;
    let dim = usize::from(dim);
    if dim >= t.rank() {
        return None;
    }
    for other in rest {
        let o = slot(*other)?;
        let fits = o.kind == t.kind
            && o.rank() == t.rank()
            && (0..t.rank()).all(|d| d == dim || o.shape[d] == t.shape[d]);
        if !fits {
            return None;
        }
        t.shape[dim] += o.shape[dim];
    }
    // Repeated cats would otherwise grow a tensor without bound (and past the `u8` dims
    // programs store): the result obeys the same element limit as a created tensor.
    (t.shape.iter().product::<usize>() <= crate::program::limits::MAX_ELEMENTS).then_some(t)
}
