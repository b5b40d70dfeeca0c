//! Rank- and kind-erased Burn tensors, so a program can hold tensors of any rank in one slot
//! table while every call still goes through Burn's typed public `Tensor<D, K>` API.

use burn::tensor::kind::Basic;
use burn::tensor::{
    Bool, DType, Device, Float, Int, Tensor, TensorCreationOptions, TensorData, Transaction,
};
use burn_backend::ExecutionError;

use crate::program::{Kind, Slot, Ty};

/// A tensor of kind `K` and rank 1 to 4 (`program::limits::MAX_RANK`).
#[derive(Clone, Debug)]
pub enum Ranked<K: Basic> {
    /// Rank 1.
    R1(Tensor<1, K>),
    /// Rank 2.
    R2(Tensor<2, K>),
    /// Rank 3.
    R3(Tensor<3, K>),
    /// Rank 4.
    R4(Tensor<4, K>),
}

/// Applies `$body` to the tensor inside a [`Ranked`], giving a `Ranked` of the same rank.
macro_rules! map_rank {
    ($r:expr, $t:ident => $body:expr) => {
        match $r {
            $crate::interpreter::value::Ranked::R1($t) => {
                $crate::interpreter::value::Ranked::R1($body)
            }
            $crate::interpreter::value::Ranked::R2($t) => {
                $crate::interpreter::value::Ranked::R2($body)
            }
            $crate::interpreter::value::Ranked::R3($t) => {
                $crate::interpreter::value::Ranked::R3($body)
            }
            $crate::interpreter::value::Ranked::R4($t) => {
                $crate::interpreter::value::Ranked::R4($body)
            }
        }
    };
}

/// Evaluates `$body` with the tensor inside a [`Ranked`], whatever its rank.
macro_rules! on_rank {
    ($r:expr, $t:ident => $body:expr) => {
        match $r {
            $crate::interpreter::value::Ranked::R1($t) => $body,
            $crate::interpreter::value::Ranked::R2($t) => $body,
            $crate::interpreter::value::Ranked::R3($t) => $body,
            $crate::interpreter::value::Ranked::R4($t) => $body,
        }
    };
}

/// Applies `$body` to two same-rank tensors; `None` when the ranks differ (the typing rule
/// rules that out before a step reaches Burn).
macro_rules! zip_rank {
    ($a:expr, $b:expr, $x:ident, $y:ident => $body:expr) => {
        match ($a, $b) {
            (
                $crate::interpreter::value::Ranked::R1($x),
                $crate::interpreter::value::Ranked::R1($y),
            ) => Some($crate::interpreter::value::Ranked::R1($body)),
            (
                $crate::interpreter::value::Ranked::R2($x),
                $crate::interpreter::value::Ranked::R2($y),
            ) => Some($crate::interpreter::value::Ranked::R2($body)),
            (
                $crate::interpreter::value::Ranked::R3($x),
                $crate::interpreter::value::Ranked::R3($y),
            ) => Some($crate::interpreter::value::Ranked::R3($body)),
            (
                $crate::interpreter::value::Ranked::R4($x),
                $crate::interpreter::value::Ranked::R4($y),
            ) => Some($crate::interpreter::value::Ranked::R4($body)),
            _ => None,
        }
    };
}

pub(crate) use {map_rank, on_rank, zip_rank};

impl<K: Basic> Ranked<K> {
    /// `Tensor::from_data` with the rank of `data`'s shape: `(&device, dtype)` when a dtype is
    /// named, `&device` (the device's default dtype) otherwise.
    pub fn from_data(data: TensorData, device: &Device, dtype: Option<DType>) -> Self {
        let options = TensorCreationOptions {
            device: device.clone(),
            dtype,
        };
        match data.shape().num_dims() {
            1 => Ranked::R1(Tensor::from_data(data, options)),
            2 => Ranked::R2(Tensor::from_data(data, options)),
            3 => Ranked::R3(Tensor::from_data(data, options)),
            _ => Ranked::R4(Tensor::from_data(data, options)),
        }
    }

    /// `reshape` to `dims`, whose length becomes the new rank.
    pub fn reshape(self, dims: &[usize]) -> Self {
        on_rank!(self, t => reshape_to(t, dims))
    }
}

fn reshape_to<const D: usize, K: Basic>(t: Tensor<D, K>, dims: &[usize]) -> Ranked<K> {
    let d = |i: usize| dims[i] as i64;
    match dims.len() {
        1 => Ranked::R1(t.reshape([d(0)])),
        2 => Ranked::R2(t.reshape([d(0), d(1)])),
        3 => Ranked::R3(t.reshape([d(0), d(1), d(2)])),
        _ => Ranked::R4(t.reshape([d(0), d(1), d(2), d(3)])),
    }
}

/// A slot's tensor as the interpreter and its mirrors hold it: shared, so a mirror that takes
/// the real run's Flex value as it is (the eager run) holds the same handle instead of a copy
/// of its ~640 bytes, and slots move a pointer.
pub type Held = std::rc::Rc<AnyTensor>;

/// The tensor in slot `s` of a slot table, borrowed, if the slot holds one.
pub fn held_in(slots: &[Option<Held>], s: Slot) -> Option<&AnyTensor> {
    slots.get(usize::from(s)).and_then(Option::as_deref)
}

/// A tensor of any kind and rank.
#[derive(Clone, Debug)]
pub enum AnyTensor {
    /// Float tensor.
    Float(Ranked<Float>),
    /// Int tensor.
    Int(Ranked<Int>),
    /// Bool tensor.
    Bool(Ranked<Bool>),
}

/// Applies `$body` to the typed tensor inside an [`AnyTensor`], keeping kind and rank.
macro_rules! map_any {
    ($v:expr, $t:ident => $body:expr) => {
        match $v {
            $crate::interpreter::value::AnyTensor::Float(r) => {
                $crate::interpreter::value::AnyTensor::Float($crate::interpreter::value::map_rank!(r, $t => $body))
            }
            $crate::interpreter::value::AnyTensor::Int(r) => {
                $crate::interpreter::value::AnyTensor::Int($crate::interpreter::value::map_rank!(r, $t => $body))
            }
            $crate::interpreter::value::AnyTensor::Bool(r) => {
                $crate::interpreter::value::AnyTensor::Bool($crate::interpreter::value::map_rank!(r, $t => $body))
            }
        }
    };
}

/// Evaluates `$body` with the typed tensor inside an [`AnyTensor`].
macro_rules! on_any {
    ($v:expr, $t:ident => $body:expr) => {
        match $v {
            $crate::interpreter::value::AnyTensor::Float(r) => $crate::interpreter::value::on_rank!(r, $t => $body),
            $crate::interpreter::value::AnyTensor::Int(r) => $crate::interpreter::value::on_rank!(r, $t => $body),
            $crate::interpreter::value::AnyTensor::Bool(r) => $crate::interpreter::value::on_rank!(r, $t => $body),
        }
    };
}

pub(crate) use {map_any, on_any};

impl AnyTensor {
    /// The element kind.
    pub fn kind(&self) -> Kind {
        match self {
            AnyTensor::Float(_) => Kind::Float,
            AnyTensor::Int(_) => Kind::Int,
            AnyTensor::Bool(_) => Kind::Bool,
        }
    }

    /// The storage dtype.
    pub fn dtype(&self) -> DType {
        on_any!(self, x => x.dtype())
    }

    /// `Tensor::from_data` of the right kind and rank, in `dtype` or the device's default.
    pub fn from_data(kind: Kind, data: TensorData, device: &Device, dtype: Option<DType>) -> Self {
        match kind {
            Kind::Float => AnyTensor::Float(Ranked::from_data(data, device, dtype)),
            Kind::Int => AnyTensor::Int(Ranked::from_data(data, device, dtype)),
            Kind::Bool => AnyTensor::Bool(Ranked::from_data(data, device, dtype)),
        }
    }

    /// Kind and shape, read from the tensor's metadata (no data access).
    pub fn ty(&self) -> Ty {
        let dims = on_any!(self, t => t.shape().to_vec());
        Ty {
            kind: self.kind(),
            shape: dims,
        }
    }

    /// The tensor's device.
    pub fn device(&self) -> Device {
        on_any!(self, t => t.device())
    }

    /// `Tensor::try_into_data`, any kind and rank.
    pub fn try_into_data(self) -> Result<TensorData, ExecutionError> {
        on_any!(self, t => t.try_into_data())
    }

    /// `Transaction::register`, any kind and rank.
    pub fn register_in(self, transaction: Transaction) -> Transaction {
        on_any!(self, t => transaction.register(t))
    }

    /// `reshape`, any kind.
    pub fn reshape(self, dims: &[usize]) -> Self {
        match self {
            AnyTensor::Float(r) => AnyTensor::Float(r.reshape(dims)),
            AnyTensor::Int(r) => AnyTensor::Int(r.reshape(dims)),
            AnyTensor::Bool(r) => AnyTensor::Bool(r.reshape(dims)),
        }
    }
}
