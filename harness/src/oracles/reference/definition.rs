//! The reference value of an op: its table row's definition over host arrays, and Burn's data
//! read as a host array.

use burn::tensor::{DType, TensorData};

use super::host::{Data, Host};
use super::{along_dim, elementwise, fixed, host, module, quantized_scheme};
use crate::interpreter::kind_of;
use crate::program::{Dtype, Kind, Op};

/// The reference value of `op` over `operands` (host arrays in operand order).
pub fn of_op(op: &Op, operands: &[&Host]) -> Result<Host, &'static str> {
    let x = operands.first().copied().ok_or("no operand")?;
    let none = "the op takes no operands of these kinds";
    // Every quantized round trip, the plain tables' entries as the quantized op family's: a
    // tensor whose scale no stored scale holds (an F64 past f32::MAX) has no quantization.
    if let Some(scheme) = quantized_scheme(op) {
        host::quantization_step(x, scheme)
            .ok_or("a scale past what the scheme's scale storage holds: the codes clamp")?;
    }
    // A round trip the reference models element by element: each element's interval's middle.
    if let Some(value) = super::quantization::dequantized(op, x) {
        return value;
    }
    match op {
        Op::Unary { op, .. } => elementwise::unary(elementwise::UNARY[op.index()].1, x),
        Op::Binary { op, .. } => elementwise::binary(
            elementwise::BINARY[op.index()].1,
            x,
            operands.get(1).ok_or("no operand")?,
        ),
        Op::Compare { op, .. } => elementwise::binary(
            elementwise::COMPARE[op.index()].1,
            x,
            operands.get(1).ok_or("no operand")?,
        ),
        Op::Scalar { op, value, .. } => {
            // The scalar as the executor passes it: an f32 for floats, an i64 for ints, and for
            // a bool comparison true when odd.
            let scalar = match &x.data {
                Data::Float(_) => {
                    Host::float(vec![1; x.shape.len()], vec![Some(f64::from(*value))])
                }
                Data::Int(_) => Host::int(vec![1; x.shape.len()], vec![Some(i128::from(*value))]),
                Data::Bool(_) => Host::bool(vec![1; x.shape.len()], vec![Some(*value % 2 != 0)]),
            };
            elementwise::binary(elementwise::SCALAR[op.index()].1, x, &scalar)
        }
        Op::Quantized { op, .. } => {
            let layout = elementwise::QUANTIZED[op.index()].1;
            host::quantized(x, &layout(&x.shape))
        }
        Op::AlongDim { op, dim, .. } => {
            along_dim::along(along_dim::ALONG_DIM[op.index()].1, x, usize::from(*dim))
        }
        Op::Module { op, kernel, .. } => module::module(
            module::MODULE[op.index()].1,
            x,
            crate::program::kernel_size(*kernel),
        ),
        Op::Matmul { transpose_rhs, .. } => {
            fixed::matmul(x, operands.get(1).ok_or("no operand")?, *transpose_rhs).ok_or(none)
        }
        Op::SumDim { dim, .. } => fixed::sum_dim(x, usize::from(*dim)).ok_or(none),
        Op::ArgMax { dim, .. } => fixed::argmax(x, usize::from(*dim)).ok_or(none),
        Op::Reshape { dims, .. } => x
            .reshaped(dims.iter().map(|d| usize::from(*d)).collect())
            .ok_or("the shape holds another number of elements"),
        Op::SwapDims { dim0, dim1, .. } => {
            Ok(fixed::swap_dims(x, usize::from(*dim0), usize::from(*dim1)))
        }
        Op::Slice {
            dim, start, len, ..
        } => Ok(fixed::slice(
            x,
            usize::from(*dim),
            usize::from(*start),
            usize::from(*len),
        )),
        Op::Cat { dim, .. } => fixed::cat(operands, usize::from(*dim)).ok_or(none),
        Op::Cast { to, .. } => fixed::cast(x, *to).ok_or(none),
        Op::Clamp { min, max, .. } => fixed::clamp(x, *min, *max).ok_or(none),
        Op::MaskWhere { .. } => fixed::mask_where(
            x,
            operands.get(1).ok_or("no operand")?,
            operands.get(2).ok_or("no operand")?,
        )
        .ok_or(none),
        Op::MaskFill { value, .. } => {
            fixed::mask_fill(x, operands.get(1).ok_or("no operand")?, *value).ok_or(none)
        }
        Op::Logic { op, .. } => {
            fixed::logic(*op, x, operands.get(1).ok_or("no operand")?).ok_or(none)
        }
        Op::Not { .. } => fixed::not(x).ok_or(none),
    }
}

/// A tensor's data as a host array of the tensor's own kind `kind`: a bool tensor whose data is
/// stored as ints (Flex's U8 from a bool select, a catalogued bug the dtype contract judges) is
/// read by truth, as every op on it reads it.
pub fn host_of(kind: Kind, data: &TensorData) -> Host {
    let shape = data.shape().to_vec();
    match (kind, kind_of(data)) {
        (Kind::Bool, Kind::Bool) => Host::bool(shape, data.iter::<bool>().map(Some).collect()),
        (Kind::Bool, _) => Host::bool(shape, data.iter::<f64>().map(|v| Some(v != 0.0)).collect()),
        // F32, most values: read as a slice, not converted element by element.
        (_, Kind::Float) => match data.as_slice::<f32>() {
            Ok(v) => Host::float(shape, v.iter().map(|x| Some(f64::from(*x))).collect()),
            Err(_) => Host::float(shape, data.iter::<f64>().map(Some).collect()),
        },
        (_, Kind::Int) => Host {
            range: int_range(data.dtype()),
            // A U64 beyond i64's range is no i64: read unsigned as unsigned.
            ..Host::int(
                shape,
                if data.dtype() == DType::U64 {
                    data.iter::<u64>().map(|v| Some(i128::from(v))).collect()
                } else {
                    data.iter::<i64>().map(|v| Some(i128::from(v))).collect()
                },
            )
        },
        (_, Kind::Bool) => Host::bool(shape, data.iter::<bool>().map(Some).collect()),
    }
}

/// The range of an int dtype.
pub(super) fn int_range(dtype: DType) -> Option<(i128, i128)> {
    Dtype::from_burn(dtype).and_then(Dtype::int_range)
}
