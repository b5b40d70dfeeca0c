//! A step as the Rust expression that makes it: devices, data literals, ops.

use super::FLEX_REPLAY;
use crate::program::display::{creation_options, op_expr};
use crate::program::{
    backward_expr, device_call, edge_dtype, fill_data, transaction_expr, AutodiffMode, DeviceRef,
    Dtype, Fill, Kind, Op, Step,
};
use crate::report::simplify::vec_literal;

pub(super) fn device(d: DeviceRef) -> String {
    d.to_string()
}

fn data_literal(kind: Kind, dtype: Option<Dtype>, shape: &[u8], fill: Fill) -> String {
    // An edge fill names each value by its constant (`f16::MAX`, `f32::NAN`), in its dtype.
    if let Fill::Edge(edge) = fill {
        let dtype = edge_dtype(kind, dtype);
        let n: usize = shape.iter().map(|d| usize::from(*d)).product();
        let values: Vec<String> = (0..n).map(|i| edge.at(i).literal(dtype)).collect();
        return format!("TensorData::new({}, {shape:?})", vec_literal(&values));
    }
    let data = fill_data(kind, None, shape, fill);
    let values: Vec<String> = match kind {
        Kind::Float => data
            .as_slice::<f32>()
            .map(|v| v.iter().map(|x| format!("{x:?}f32")).collect())
            .unwrap_or_default(),
        Kind::Int => data
            .as_slice::<i64>()
            .map(|v| v.iter().map(|x| format!("{x}i64")).collect())
            .unwrap_or_default(),
        Kind::Bool => data
            .as_slice::<bool>()
            .map(|v| v.iter().map(|x| x.to_string()).collect())
            .unwrap_or_default(),
    };
    format!("TensorData::new({}, {shape:?})", vec_literal(&values))
}

pub(super) fn kind_path(kind: Kind) -> &'static str {
    match kind {
        Kind::Float => "Float",
        Kind::Int => "Int",
        Kind::Bool => "Bool",
    }
}

/// The Rust expression a step evaluates (without `let`), or `None` for scope steps.
pub(in crate::report) fn step_expr(step: &Step) -> Option<String> {
    expr(step)
}

pub(super) fn expr(step: &Step) -> Option<String> {
    Some(match step {
        Step::Create {
            kind,
            shape,
            fill,
            device: d,
            dtype,
            ..
        } => format!(
            "Tensor::<{}, {}>::from_data({}, {})",
            shape.len(),
            kind_path(*kind),
            data_literal(*kind, *dtype, shape, *fill),
            creation_options(&device(*d), *dtype)
        ),
        Step::Op { op, .. } => rust_op(op),
        Step::ToDevice { src, device: d, .. } => {
            format!("t{src}.clone().to_device(&{})", device(*d))
        }
        Step::Read { src, fallible } => {
            if *fallible {
                format!("t{src}.clone().try_into_data()")
            } else {
                format!("t{src}.clone().into_data()")
            }
        }
        Step::Transaction { srcs, fallible } => transaction_expr(srcs, *fallible),
        Step::Clone { src, .. } => format!("t{src}.clone()"),
        Step::Drop { slot } => format!("drop(t{slot})"),
        Step::Autodiff { src, mode, .. } => match mode {
            AutodiffMode::Enable => format!("t{src}.clone().autodiff()"),
            AutodiffMode::Disable => format!("t{src}.clone().without_autodiff()"),
            AutodiffMode::RequireGrad => format!("t{src}.clone().require_grad()"),
        },
        Step::Replay { graph, feed, .. } => {
            let feed: Vec<String> = feed
                .iter()
                .map(|s| format!("t{s}.clone().into_data()"))
                .collect();
            format!(
                "{FLEX_REPLAY}graph{graph}.as_ref().expect(\"graph{graph} was captured\"), vec![{}])",
                feed.join(", ")
            )
        }
        Step::Device { device: d, call } => device_call(&device(*d), *call),
        Step::Backward { loss, param, .. } => backward_expr(*loss, *param),
        Step::EnterScope { .. } | Step::ExitScope { .. } | Step::Thread { .. } => return None,
    })
}

/// `op_expr` with the two forms that need real Rust here: a transposed matmul operand and
/// integer literals whose type the compiler must be told.
fn rust_op(op: &Op) -> String {
    match op {
        Op::Matmul {
            lhs,
            rhs,
            transpose_rhs: true,
        } => format!("t{lhs}.clone().matmul(t{rhs}.clone().transpose())"),
        Op::Reshape { src, dims } => {
            let dims: Vec<String> = dims.iter().map(|d| format!("{d}i64")).collect();
            format!("t{src}.clone().reshape([{}])", dims.join(", "))
        }
        other => op_expr(other),
    }
}
