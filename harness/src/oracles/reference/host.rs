//! Host arrays: the reference's tensors, row-major, each element a value or unknown (a lane the
//! reference cannot pin down: a NaN's order, a tie, an overflow of the dtype).

use crate::program::{Dtype, Scheme};

/// The element of a host array: a float (in f64), an exact int, or a bool; `None` where the
/// reference does not know it.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    /// Float elements.
    Float(Vec<Option<f64>>),
    /// Int elements, exact.
    Int(Vec<Option<i128>>),
    /// Bool elements.
    Bool(Vec<Option<bool>>),
}

/// A tensor on the host.
#[derive(Clone, Debug, PartialEq)]
pub struct Host {
    /// Dimensions, outermost first.
    pub shape: Vec<usize>,
    /// The elements, row-major.
    pub data: Data,
    /// For ints read from Burn, the range of their dtype: a value outside it is not pinned down
    /// (Burn documents no overflow), and neither is what `abs` or `neg` makes of its minimum.
    pub range: Option<(i128, i128)>,
}

impl Host {
    /// This array with the elements where `skip` is set unknown (left open when judged).
    pub fn without(&self, skip: &[bool]) -> Host {
        fn clear<T: Clone>(v: &[Option<T>], skip: &[bool]) -> Vec<Option<T>> {
            let keep = |(i, e): (usize, &Option<T>)| {
                e.clone().filter(|_| !skip.get(i).copied().unwrap_or(false))
            };
            v.iter().enumerate().map(keep).collect()
        }
        let data = match &self.data {
            Data::Float(v) => Data::Float(clear(v, skip)),
            Data::Int(v) => Data::Int(clear(v, skip)),
            Data::Bool(v) => Data::Bool(clear(v, skip)),
        };
        Host {
            shape: self.shape.clone(),
            data,
            range: self.range,
        }
    }

    /// A float array.
    pub fn float(shape: Vec<usize>, values: Vec<Option<f64>>) -> Host {
        Host {
            shape,
            data: Data::Float(values),
            range: None,
        }
    }

    /// An int array.
    pub fn int(shape: Vec<usize>, values: Vec<Option<i128>>) -> Host {
        Host {
            shape,
            data: Data::Int(values),
            range: None,
        }
    }

    /// A bool array.
    pub fn bool(shape: Vec<usize>, values: Vec<Option<bool>>) -> Host {
        Host {
            shape,
            data: Data::Bool(values),
            range: None,
        }
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// The float elements, if a float array.
    pub fn floats(&self) -> Option<&[Option<f64>]> {
        match &self.data {
            Data::Float(v) => Some(v),
            _ => None,
        }
    }

    /// The int elements, if an int array.
    pub fn ints(&self) -> Option<&[Option<i128>]> {
        match &self.data {
            Data::Int(v) => Some(v),
            _ => None,
        }
    }

    /// The bool elements, if a bool array.
    pub fn bools(&self) -> Option<&[Option<bool>]> {
        match &self.data {
            Data::Bool(v) => Some(v),
            _ => None,
        }
    }

    /// Every element as an f64 (ints converted, bools 0 or 1).
    pub fn as_f64(&self) -> Vec<Option<f64>> {
        match &self.data {
            Data::Float(v) => v.clone(),
            Data::Int(v) => v.iter().map(|x| x.map(|x| x as f64)).collect(),
            Data::Bool(v) => v
                .iter()
                .map(|x| x.map(|b| f64::from(u8::from(b))))
                .collect(),
        }
    }

    /// How many elements are known.
    pub fn known(&self) -> usize {
        match &self.data {
            Data::Float(v) => v.iter().filter(|x| x.is_some()).count(),
            Data::Int(v) => v.iter().filter(|x| x.is_some()).count(),
            Data::Bool(v) => v.iter().filter(|x| x.is_some()).count(),
        }
    }

    /// The same elements under another shape of as many elements.
    pub fn reshaped(&self, shape: Vec<usize>) -> Option<Host> {
        (shape.iter().product::<usize>() == self.numel()).then(|| Host {
            shape,
            data: self.data.clone(),
            range: self.range,
        })
    }

    /// The array with its elements reordered by `order` (a list of source positions).
    pub fn gathered(&self, shape: Vec<usize>, order: &[usize]) -> Host {
        let data = match &self.data {
            Data::Float(v) => Data::Float(order.iter().map(|&i| v[i]).collect()),
            Data::Int(v) => Data::Int(order.iter().map(|&i| v[i]).collect()),
            Data::Bool(v) => Data::Bool(order.iter().map(|&i| v[i]).collect()),
        };
        Host {
            shape,
            data,
            range: self.range,
        }
    }
}

/// Row-major strides of `shape`.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// The multi-index of flat position `i` in `shape`.
pub fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        if shape[d] > 0 {
            index[d] = i % shape[d];
            i /= shape[d];
        }
    }
    index
}

/// The flat position of `index` in `shape`.
pub fn ravel(index: &[usize], shape: &[usize]) -> usize {
    index.iter().zip(strides(shape)).map(|(i, s)| i * s).sum()
}

/// For each flat position of `out` (a shape `src` broadcasts to: equal rank, size-1 dims
/// stretched), the flat position in `src` it reads.
pub fn broadcast_positions(src: &[usize], out: &[usize]) -> Option<Vec<usize>> {
    if src.len() != out.len() || src.iter().zip(out).any(|(s, o)| *s != *o && *s != 1) {
        return None;
    }
    let n: usize = out.iter().product();
    Some(
        (0..n)
            .map(|i| {
                let index: Vec<usize> = unravel(i, out)
                    .into_iter()
                    .zip(src)
                    .map(|(x, s)| if *s == 1 { 0 } else { x })
                    .collect();
                ravel(&index, src)
            })
            .collect(),
    )
}

/// The lanes of `shape` along `dim`: for each position of the other dims (row-major), the flat
/// positions of its `shape[dim]` elements, in order.
pub fn lanes(shape: &[usize], dim: usize) -> Vec<Vec<usize>> {
    let n: usize = shape.iter().product();
    let len = shape[dim];
    let stride = strides(shape)[dim];
    let mut out = Vec::new();
    for i in 0..n {
        if unravel(i, shape)[dim] == 0 {
            out.push((0..len).map(|k| i + k * stride).collect());
        }
    }
    out
}

/// The largest finite f32.
pub const F32_MAX: f64 = f32::MAX as f64;

/// Whether every partial sum of `v`, in any order, stays within f32's range: else Burn's f32
/// accumulation may overflow to an infinity (and then a NaN) where the exact sum is finite.
pub fn sum_fits(v: &[f64]) -> bool {
    v.iter().map(|x| x.abs()).sum::<f64>() <= F32_MAX
}

/// As [`sum_fits`] for partial products (a zero ends no earlier partial product's overflow).
pub fn prod_fits(v: &[f64]) -> bool {
    v.iter()
        .filter(|x| **x != 0.0)
        .map(|x| x.abs().max(1.0))
        .product::<f64>()
        <= F32_MAX
}

/// The exact product of int elements, or `None` past i128 (which no int dtype holds, so the
/// value is open): a U64 or I64 operand's few largest elements multiply past it.
pub fn int_product(v: &[i128]) -> Option<i128> {
    v.iter().try_fold(1i128, |p, x| p.checked_mul(*x))
}

/// `x` rounded to the nearest f32, as Burn's F32 tensors hold it.
pub fn to_f32(x: f64) -> f64 {
    f64::from(x as f32)
}

/// `x` as Burn stores a value of float `dtype` it computed: an F64 as it is, any other dtype
/// computed in f32 and rounded once more to its own grid.
pub fn as_stored(dtype: Dtype, x: f64) -> f64 {
    match dtype {
        Dtype::F64 => x,
        _ => dtype.round(to_f32(x)),
    }
}

/// A quantization round trip (Burn's default scheme, cubecl-common `quant/scheme.rs:50-59`:
/// 8-bit values, symmetric, one scale for the whole tensor, or a scheme of
/// [`SCHEMES`](crate::program::SCHEMES)): each element comes back within one step of its
/// value. The reference is `x` moved by `layout` (for each output position, the input position
/// it takes; the shape stays), judged within that step (see [`quantization_step`]). A NaN or an infinity anywhere makes the scale, and so every
/// element, unspecified, as does an element the reference does not know.
pub fn quantized(x: &Host, layout: &[usize]) -> Result<Host, &'static str> {
    let values = x.floats().ok_or("only a float is quantized")?;
    let known: Option<Vec<f64>> = values.iter().copied().collect();
    let known = known
        .filter(|v| v.iter().all(|e| e.is_finite()))
        .ok_or("a quantization of an unknown or non-finite element: one scale for the tensor")?;
    Ok(Host::float(
        x.shape.clone(),
        layout.iter().map(|&i| known.get(i).copied()).collect(),
    ))
}

/// Every position of `shape` in place: the layout of a move that moves nothing.
pub fn identity_positions(shape: &[usize]) -> Vec<usize> {
    (0..shape.iter().product()).collect()
}

/// How far a round trip of `x` through `scheme` may move an element (see
/// [`SchemeSpec::step`](crate::program::SchemeSpec::step)): `None` where its scale overflows
/// the scheme's scale storage.
pub fn quantization_step(x: &Host, scheme: Scheme) -> Option<f64> {
    let largest = x
        .as_f64()
        .into_iter()
        .flatten()
        .filter(|v| v.is_finite())
        .fold(0.0f64, |m, v| m.max(v.abs()));
    scheme.spec().step(largest)
}

/// Int floored modulo; `None` for a zero divisor (excluded by Burn's doc comment).
pub fn floor_mod_i(x: i128, y: i128) -> Option<i128> {
    (y != 0).then(|| {
        let r = x % y;
        if r != 0 && (r < 0) != (y < 0) {
            r + y
        } else {
            r
        }
    })
}

/// Int division: Burn documents no rounding, so a quotient that truncation and flooring would
/// round apart is left open; `None` for a zero divisor too.
pub fn int_div(x: i128, y: i128) -> Option<i128> {
    (y != 0 && x % y == 0).then(|| x / y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_ravel_and_unravel_row_major() {
        assert_eq!(strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(unravel(7, &[2, 3, 4]), vec![0, 1, 3]);
        assert_eq!(ravel(&[1, 2, 3], &[2, 3, 4]), 23);
        assert_eq!(lanes(&[2, 3], 1), vec![vec![0, 1, 2], vec![3, 4, 5]]);
        assert_eq!(lanes(&[2, 3], 0), vec![vec![0, 3], vec![1, 4], vec![2, 5]]);
        assert_eq!(
            broadcast_positions(&[1, 3], &[2, 3]),
            Some(vec![0, 1, 2, 0, 1, 2])
        );
        assert_eq!(
            broadcast_positions(&[2, 1], &[2, 3]),
            Some(vec![0, 0, 0, 1, 1, 1])
        );
        assert_eq!(broadcast_positions(&[3], &[2, 3]), None);
    }
}
