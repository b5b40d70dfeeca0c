//! The references of the ops outside the tables: matmul, `sum_dim`, `argmax`, the layout moves
//! (reshape, swap_dims, slice, cat), casts, clamp, masks and bool logic.

use super::host::{lanes, ravel, sum_fits, unravel, Data, Host};
use crate::program::{Kind, LogicOp};

/// `lhs.matmul(rhs)` (`rhs` with its last two dims swapped first when `transpose_rhs`), over
/// equal batch dims.
pub fn matmul(lhs: &Host, rhs: &Host, transpose_rhs: bool) -> Option<Host> {
    let (a, b) = (lhs.floats()?, rhs.floats()?);
    let rank = lhs.shape.len();
    // Burn's matmul of rank-1 tensors, or of unequal ranks: no definition written here.
    if rank < 2 || rhs.shape.len() != rank {
        return None;
    }
    let (m, k) = (lhs.shape[rank - 2], lhs.shape[rank - 1]);
    let (rk, rn) = (rhs.shape[rank - 2], rhs.shape[rank - 1]);
    let n = if transpose_rhs { rk } else { rn };
    // Operands Burn broadcasts or rejects: not written here.
    if (if transpose_rhs { rn } else { rk }) != k || lhs.shape[..rank - 2] != rhs.shape[..rank - 2]
    {
        return None;
    }
    let batch: usize = lhs.shape[..rank - 2].iter().product();
    let mut shape = lhs.shape.clone();
    shape[rank - 1] = n;
    let mut out = Vec::with_capacity(batch * m * n);
    for bi in 0..batch {
        for i in 0..m {
            for j in 0..n {
                let mut sum = Some(0.0);
                let mut bound = 0.0;
                for t in 0..k {
                    let x = a[(bi * m + i) * k + t];
                    let y = if transpose_rhs {
                        b[(bi * rk + j) * rn + t]
                    } else {
                        b[(bi * rk + t) * rn + j]
                    };
                    sum = sum.and_then(|s| Some(s + x? * y?));
                    bound += x.map_or(0.0, f64::abs) * y.map_or(0.0, f64::abs);
                }
                // A dot product that may overflow f32 on its way is not pinned down.
                out.push(sum.filter(|_| bound <= super::host::F32_MAX));
            }
        }
    }
    Some(Host::float(shape, out))
}

/// `sum_dim(dim)`: floats in f64, ints exact.
pub fn sum_dim(x: &Host, dim: usize) -> Option<Host> {
    if dim >= x.shape.len() {
        return None;
    }
    let mut shape = x.shape.clone();
    shape[dim] = 1;
    let ln = lanes(&x.shape, dim);
    match &x.data {
        Data::Float(v) => Some(Host::float(
            shape,
            ln.iter()
                .map(|l| {
                    let lane: Vec<f64> = l.iter().map(|&i| v[i]).collect::<Option<_>>()?;
                    sum_fits(&lane).then(|| lane.iter().sum())
                })
                .collect(),
        )),
        Data::Int(v) => Some(Host::int(
            shape,
            ln.iter().map(|l| l.iter().map(|&i| v[i]).sum()).collect(),
        )),
        Data::Bool(_) => None,
    }
}

/// `argmax(dim)`: the index of each lane's maximum, open at a tie or a NaN (Burn documents
/// neither).
pub fn argmax(x: &Host, dim: usize) -> Option<Host> {
    if dim >= x.shape.len() {
        return None;
    }
    let mut shape = x.shape.clone();
    shape[dim] = 1;
    let all = x.as_f64();
    Some(Host::int(
        shape,
        lanes(&x.shape, dim)
            .iter()
            .map(|l| {
                let v: Vec<f64> = l.iter().map(|&i| all[i]).collect::<Option<_>>()?;
                if v.iter().any(|e| e.is_nan()) {
                    return None;
                }
                let best = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let at: Vec<usize> = (0..v.len()).filter(|&i| v[i] == best).collect();
                (at.len() == 1).then(|| at[0] as i128)
            })
            .collect(),
    ))
}

/// `swap_dims(a, b)`.
pub fn swap_dims(x: &Host, a: usize, b: usize) -> Host {
    let mut shape = x.shape.clone();
    shape.swap(a, b);
    let order: Vec<usize> = (0..x.numel())
        .map(|i| {
            let mut index = unravel(i, &shape);
            index.swap(a, b);
            ravel(&index, &x.shape)
        })
        .collect();
    x.gathered(shape, &order)
}

/// `slice_dim(dim, start..start + len)`.
pub fn slice(x: &Host, dim: usize, start: usize, len: usize) -> Host {
    let mut shape = x.shape.clone();
    shape[dim] = len;
    let n: usize = shape.iter().product();
    let order: Vec<usize> = (0..n)
        .map(|i| {
            let mut index = unravel(i, &shape);
            index[dim] += start;
            ravel(&index, &x.shape)
        })
        .collect();
    x.gathered(shape, &order)
}

/// `Tensor::cat(items, dim)`: every item of one kind.
pub fn cat(items: &[&Host], dim: usize) -> Option<Host> {
    let first = items.first()?;
    let mut shape = first.shape.clone();
    shape[dim] = items.iter().map(|h| h.shape[dim]).sum();
    let n: usize = shape.iter().product();
    // For each output position: which item, and the position in it.
    let mut source = Vec::with_capacity(n);
    for i in 0..n {
        let mut index = unravel(i, &shape);
        let mut item = 0;
        while index[dim] >= items[item].shape[dim] {
            index[dim] -= items[item].shape[dim];
            item += 1;
        }
        source.push((item, ravel(&index, &items[item].shape)));
    }
    let data = match &first.data {
        Data::Float(_) => Data::Float(
            source
                .iter()
                .map(|&(it, j)| items[it].floats().and_then(|v| v[j]))
                .collect(),
        ),
        Data::Int(_) => Data::Int(
            source
                .iter()
                .map(|&(it, j)| items[it].ints().and_then(|v| v[j]))
                .collect(),
        ),
        Data::Bool(_) => Data::Bool(
            source
                .iter()
                .map(|&(it, j)| items[it].bools().and_then(|v| v[j]))
                .collect(),
        ),
    };
    Some(Host {
        shape,
        data,
        range: None,
    })
}

/// A kind conversion. Float to int truncates toward zero (PyTorch's documented cast; Burn's
/// `int()` documents none), open where the value is not finite; to bool, nonzero is true;
/// bools are 0 or 1.
pub fn cast(x: &Host, to: Kind) -> Option<Host> {
    let shape = x.shape.clone();
    Some(match (&x.data, to) {
        (Data::Float(v), Kind::Float) => Host::float(shape, v.clone()),
        (Data::Float(v), Kind::Int) => Host::int(
            shape,
            v.iter()
                .map(|e| e.and_then(|e| e.is_finite().then(|| e.trunc() as i128)))
                .collect(),
        ),
        (Data::Float(v), Kind::Bool) => {
            Host::bool(shape, v.iter().map(|e| e.map(|e| e != 0.0)).collect())
        }
        (Data::Int(v), Kind::Float) => {
            Host::float(shape, v.iter().map(|e| e.map(|e| e as f64)).collect())
        }
        (Data::Int(v), Kind::Int) => Host::int(shape, v.clone()),
        (Data::Int(v), Kind::Bool) => {
            Host::bool(shape, v.iter().map(|e| e.map(|e| e != 0)).collect())
        }
        (Data::Bool(v), Kind::Float) => Host::float(
            shape,
            v.iter()
                .map(|e| e.map(|b| f64::from(u8::from(b))))
                .collect(),
        ),
        (Data::Bool(v), Kind::Int) => {
            Host::int(shape, v.iter().map(|e| e.map(i128::from)).collect())
        }
        (Data::Bool(v), Kind::Bool) => Host::bool(shape, v.clone()),
    })
}

/// `clamp(min, max)`: a NaN lane is left open (Burn documents no NaN order).
pub fn clamp(x: &Host, min: i8, max: i8) -> Option<Host> {
    let shape = x.shape.clone();
    Some(match &x.data {
        Data::Float(v) => Host::float(
            shape,
            v.iter()
                .map(|e| {
                    e.and_then(|e| (!e.is_nan()).then(|| e.max(f64::from(min)).min(f64::from(max))))
                })
                .collect(),
        ),
        Data::Int(v) => Host::int(
            shape,
            v.iter()
                .map(|e| e.map(|e| e.clamp(i128::from(min), i128::from(max))))
                .collect(),
        ),
        Data::Bool(_) => return None,
    })
}

/// `src.mask_where(mask, value)`: `value` where the mask is true.
pub fn mask_where(src: &Host, mask: &Host, value: &Host) -> Option<Host> {
    let m = mask.bools()?;
    let pick = |i: usize| m[i];
    Some(match (&src.data, &value.data) {
        (Data::Float(s), Data::Float(v)) => Host::float(
            src.shape.clone(),
            (0..s.len())
                .map(|i| if pick(i)? { v[i] } else { s[i] })
                .collect(),
        ),
        (Data::Int(s), Data::Int(v)) => Host::int(
            src.shape.clone(),
            (0..s.len())
                .map(|i| if pick(i)? { v[i] } else { s[i] })
                .collect(),
        ),
        (Data::Bool(s), Data::Bool(v)) => Host::bool(
            src.shape.clone(),
            (0..s.len())
                .map(|i| if pick(i)? { v[i] } else { s[i] })
                .collect(),
        ),
        _ => return None,
    })
}

/// `src.mask_fill(mask, value)`.
pub fn mask_fill(src: &Host, mask: &Host, value: i8) -> Option<Host> {
    let m = mask.bools()?;
    Some(match &src.data {
        Data::Float(s) => Host::float(
            src.shape.clone(),
            (0..s.len())
                .map(|i| if m[i]? { Some(f64::from(value)) } else { s[i] })
                .collect(),
        ),
        Data::Int(s) => Host::int(
            src.shape.clone(),
            (0..s.len())
                .map(|i| if m[i]? { Some(i128::from(value)) } else { s[i] })
                .collect(),
        ),
        // A bool fill is true when odd, as the executor passes it.
        Data::Bool(s) => Host::bool(
            src.shape.clone(),
            (0..s.len())
                .map(|i| if m[i]? { Some(value % 2 != 0) } else { s[i] })
                .collect(),
        ),
    })
}

/// `bool_and` / `bool_or`.
pub fn logic(op: LogicOp, a: &Host, b: &Host) -> Option<Host> {
    let (x, y) = (a.bools()?, b.bools()?);
    Some(Host::bool(
        a.shape.clone(),
        x.iter()
            .zip(y)
            .map(|(p, q)| {
                let (p, q) = ((*p)?, (*q)?);
                Some(match op {
                    LogicOp::And => p && q,
                    LogicOp::Or => p || q,
                })
            })
            .collect(),
    ))
}

/// `bool_not`.
pub fn not(a: &Host) -> Option<Host> {
    Some(Host::bool(
        a.shape.clone(),
        a.bools()?.iter().map(|p| p.map(|p| !p)).collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(shape: Vec<usize>) -> Host {
        let n: usize = shape.iter().product();
        Host::float(shape, (0..n).map(|i| Some(i as f64)).collect())
    }

    #[test]
    fn layout_moves_keep_each_element_where_its_definition_puts_it() {
        let x = ramp(vec![2, 3]);
        let t = swap_dims(&x, 0, 1);
        assert_eq!(t.shape, [3, 2]);
        assert_eq!(t.as_f64(), [0.0, 3.0, 1.0, 4.0, 2.0, 5.0].map(Some));
        assert_eq!(slice(&x, 1, 1, 2).as_f64(), [1.0, 2.0, 4.0, 5.0].map(Some));
        let c = cat(&[&x, &slice(&x, 1, 0, 1)], 1).unwrap();
        assert_eq!(
            c.as_f64(),
            [0.0, 1.0, 2.0, 0.0, 3.0, 4.0, 5.0, 3.0].map(Some)
        );
        let m = matmul(&x, &x, true).unwrap();
        assert_eq!(m.as_f64(), [5.0, 14.0, 14.0, 50.0].map(Some));
    }

    #[test]
    fn a_cast_to_int_truncates_and_leaves_a_non_finite_value_open() {
        let x = Host::float(vec![3], vec![Some(-2.7), Some(2.7), Some(f64::NAN)]);
        assert_eq!(
            cast(&x, Kind::Int).unwrap().ints().unwrap(),
            [Some(-2), Some(2), None]
        );
    }
}
