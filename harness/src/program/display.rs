//! Prints a program as Rust-like code against Burn's public API, one line per step.

use std::fmt::{self, Display, Formatter, Write};

use super::step::{
    queried_dtype, AutodiffMode, DeviceCall, DeviceRef, ExitForm, Fill, Kind, Op, Slot, Step,
};
use super::Program;

impl Display for DeviceRef {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            DeviceRef::Flex => f.write_str("flex"),
            DeviceRef::FlexAutodiff => f.write_str("flex_ad"),
            DeviceRef::Capture(k) => write!(f, "capture{k}"),
            DeviceRef::Wgpu => f.write_str("wgpu"),
        }
    }
}

fn kind_ty(kind: Kind) -> &'static str {
    match kind {
        Kind::Float => "Float",
        Kind::Int => "Int",
        Kind::Bool => "Bool",
    }
}

fn list(slots: &[u8]) -> String {
    let items: Vec<String> = slots.iter().map(|s| format!("id(&t{s})")).collect();
    format!("[{}]", items.join(", "))
}

/// The right-hand side of an op step, as Rust.
pub fn op_expr(op: &Op) -> String {
    match op {
        Op::Unary { op, src } => op.spec().call_on(&[&format!("t{src}.clone()")]),
        Op::Binary { op, lhs, rhs } => op
            .spec()
            .call_on(&[&format!("t{lhs}.clone()"), &format!("t{rhs}.clone()")]),
        Op::Scalar { op, src, value } => op
            .spec()
            .call_on(&[&format!("t{src}.clone()"), &value.to_string()]),
        Op::Matmul {
            lhs,
            rhs,
            transpose_rhs,
        } => {
            let rhs = if *transpose_rhs {
                format!("t{rhs}.clone().transpose()")
            } else {
                format!("t{rhs}.clone()")
            };
            format!("t{lhs}.clone().matmul({rhs})")
        }
        Op::AlongDim { op, src, dim } => op
            .spec()
            .call_on(&format!("t{src}.clone()"), &dim.to_string()),
        Op::Quantized { op, src, scheme } => op.call_on(&format!("t{src}.clone()"), *scheme),
        Op::Module { op, src, kernel } => op.spec().call_on(
            &format!("t{src}.clone()"),
            super::module::kernel_size(*kernel),
        ),
        Op::SumDim { src, dim } => format!("t{src}.clone().sum_dim({dim})"),
        Op::ArgMax { src, dim } => format!("t{src}.clone().argmax({dim})"),
        Op::Reshape { src, dims } => format!("t{src}.clone().reshape({dims:?})"),
        Op::SwapDims { src, dim0, dim1 } => format!("t{src}.clone().swap_dims({dim0}, {dim1})"),
        Op::Slice {
            src,
            dim,
            start,
            len,
        } => format!(
            "t{src}.clone().slice_dim({dim}, {start}..{})",
            u16::from(*start) + u16::from(*len)
        ),
        Op::Cat { first, rest, dim } => {
            let mut all = vec![format!("t{first}.clone()")];
            all.extend(rest.iter().map(|s| format!("t{s}.clone()")));
            format!("Tensor::cat(vec![{}], {dim})", all.join(", "))
        }
        Op::Cast {
            src,
            to,
            dtype: None,
        } => format!("t{src}.clone().{}()", kind_ty(*to).to_lowercase()),
        Op::Cast {
            src,
            dtype: Some(d),
            ..
        } => format!("t{src}.clone().cast({})", d.cast_path()),
        Op::Compare { op, lhs, rhs } => op
            .spec()
            .call_on(&[&format!("t{lhs}.clone()"), &format!("t{rhs}.clone()")]),
        Op::Clamp { src, min, max } => format!("t{src}.clone().clamp({min}, {max})"),
        Op::MaskWhere { src, mask, value } => {
            format!("t{src}.clone().mask_where(t{mask}.clone(), t{value}.clone())")
        }
        Op::MaskFill { src, mask, value } => {
            format!("t{src}.clone().mask_fill(t{mask}.clone(), {value})")
        }
        Op::Logic { op, lhs, rhs } => format!(
            "t{lhs}.clone().bool_{}(t{rhs}.clone())",
            format!("{op:?}").to_lowercase()
        ),
        Op::Not { src } => format!("t{src}.clone().bool_not()"),
    }
}

/// The argument `complete_with` takes for `outputs` in `form`: the tuple (or one-element array,
/// or unit) `With` passes, or the slice `WithSlice` passes.
pub fn with_outputs(outputs: &[Slot], form: ExitForm) -> String {
    let refs: Vec<String> = outputs.iter().map(|s| format!("&t{s}")).collect();
    match (form, refs.len()) {
        (ExitForm::WithSlice, _) => {
            let refs: Vec<String> = refs
                .iter()
                .map(|r| format!("{r} as &dyn burn::tensor::CaptureTensor"))
                .collect();
            format!("&[{}][..]", refs.join(", "))
        }
        (_, 0) => "()".to_string(),
        (_, 1) => format!("[{}]", refs[0]),
        _ => format!("({})", refs.join(", ")),
    }
}

/// What ends a scope's closure in a form other than `complete` (whose ids each printer names
/// its own way), one statement each: the `scope.input` calls and `complete_with`, or the unwind.
pub fn exit_statements(inputs: &[Slot], outputs: &[Slot], form: ExitForm) -> Vec<String> {
    if form == ExitForm::Unwind {
        return vec!["std::panic::resume_unwind(Box::new(\"unwind\"))".to_string()];
    }
    let mut statements: Vec<String> = inputs
        .iter()
        .map(|s| format!("scope.input(&t{s})"))
        .collect();
    statements.push(format!(
        "scope.complete_with({})",
        with_outputs(outputs, form)
    ));
    statements
}

/// `param`'s gradient after `loss`'s backward pass, as the `Backward` step computes it.
pub fn backward_expr(loss: Slot, param: Slot) -> String {
    format!("t{param}.grad(&t{loss}.clone().sum().backward())")
}

/// The `Transaction` step's call: each of `srcs` registered in order, then run.
pub fn transaction_expr(srcs: &[Slot], fallible: bool) -> String {
    let registered: String = srcs
        .iter()
        .map(|s| format!(".register(t{s}.clone())"))
        .collect();
    let run = if fallible { "try_execute" } else { "execute" };
    format!("Transaction::default(){registered}.{run}()")
}

/// A device call as Rust, on the device named `device`.
pub fn device_call(device: &str, call: DeviceCall) -> String {
    match call {
        DeviceCall::Sync => format!("{device}.sync()"),
        DeviceCall::Flush => format!("{device}.flush()"),
        DeviceCall::Seed(n) => format!("{device}.seed({n})"),
        DeviceCall::SupportsDtype(k) => {
            let dtype = queried_dtype(k)
                .0
                .replace("DType::", "burn::tensor::DType::")
                .replace("BoolStore::", "burn::tensor::BoolStore::");
            format!("{device}.supports_dtype({dtype})")
        }
        DeviceCall::Name => format!(
            "<burn::backend::Dispatch as burn::backend::Backend>::name({device}.as_dispatch())"
        ),
        DeviceCall::IdRoundTrip => format!(
            "assert!(<burn::backend::DispatchDevice as burn::backend::Device>::from_id(burn::backend::Device::to_id({device}.as_dispatch())) == *{device}.as_dispatch())"
        ),
    }
}

/// What `Tensor::from_data` takes after its data for `device` (a Rust expression of a device):
/// `&device`, or `(&device, DType::F16)` when the step names a dtype.
pub fn creation_options(device: &str, dtype: Option<super::Dtype>) -> String {
    match dtype {
        Some(d) => format!("(&{device}, {})", d.spec().path),
        None => format!("&{device}"),
    }
}

/// One step as a line of Rust-like code (without indentation).
pub fn step_line(step: &Step) -> String {
    match step {
        Step::Create {
            out,
            kind,
            shape,
            fill,
            device,
            dtype,
        } => {
            let fill = match fill {
                Fill::Zeros => "zeros".to_string(),
                Fill::Ones => "ones".to_string(),
                Fill::Arange => "arange".to_string(),
                Fill::Value(v) => format!("full({v})"),
                Fill::Edge(edge) => format!("edge_{}", edge.name()),
                Fill::Halves => "halves".to_string(),
                Fill::Tiny => "tiny".to_string(),
            };
            format!(
                "let t{out} = Tensor::<{}, {}>::from_data(fill::{fill}({shape:?}), {});",
                shape.len(),
                kind_ty(*kind),
                creation_options(&device.to_string(), *dtype)
            )
        }
        Step::EnterScope { device } => format!("let _ = {device}.capture_scope(|scope| {{"),
        Step::ExitScope {
            inputs,
            outputs,
            form,
        } => match form {
            ExitForm::Complete => format!("scope.complete({}, {})", list(inputs), list(outputs)),
            _ => exit_statements(inputs, outputs, *form).join("; "),
        },
        Step::Backward { out, loss, param } => {
            format!("let t{out} = {};", backward_expr(*loss, *param))
        }
        Step::Device { device, call } => format!("{};", device_call(&device.to_string(), *call)),
        Step::Op { out, op } => format!("let t{out} = {};", op_expr(op)),
        Step::ToDevice { out, src, device } => {
            format!("let t{out} = t{src}.clone().to_device(&{device});")
        }
        Step::Replay {
            graph,
            feed,
            outputs,
        } => {
            let outs: Vec<String> = outputs.iter().map(|s| format!("t{s}")).collect();
            let feed: Vec<String> = feed.iter().map(|s| format!("t{s}")).collect();
            format!(
                "let [{}] = replay_on_flex(&graph{graph}, [{}]);",
                outs.join(", "),
                feed.join(", ")
            )
        }
        Step::Read { src, fallible } => {
            if *fallible {
                format!("let _ = t{src}.clone().try_into_data();")
            } else {
                format!("let _ = t{src}.clone().into_data();")
            }
        }
        Step::Transaction { srcs, fallible } => {
            format!("let _ = {};", transaction_expr(srcs, *fallible))
        }
        Step::Clone { out, src } => format!("let t{out} = t{src}.clone();"),
        Step::Drop { slot } => format!("drop(t{slot});"),
        Step::Thread { thread } => format!("// the steps below run on thread {thread}"),
        Step::Autodiff { out, src, mode } => {
            let call = match mode {
                AutodiffMode::Enable => "autodiff()",
                AutodiffMode::Disable => "without_autodiff()",
                AutodiffMode::RequireGrad => "require_grad()",
            };
            format!("let t{out} = t{src}.clone().{call};")
        }
    }
}

impl Display for Program {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        let mut depth = 0usize;
        let mut graphs = 0usize;
        for (i, step) in self.steps.iter().enumerate() {
            if matches!(step, Step::ExitScope { .. }) {
                depth = depth.saturating_sub(1);
            }
            let indent = "    ".repeat(depth + 1);
            let line = step_line(step);
            let _ = writeln!(out, "/* {i:>2} */{indent}{line}");
            match step {
                Step::EnterScope { .. } => depth += 1,
                Step::ExitScope { form, .. } => {
                    let result = match form {
                        ExitForm::Unwind => "unwinds, no",
                        _ => "->",
                    };
                    let _ = writeln!(out, "/*    */{indent}}}); // {result} graph{graphs}");
                    graphs += 1;
                }
                _ => {}
            }
        }
        f.write_str(&out)
    }
}
