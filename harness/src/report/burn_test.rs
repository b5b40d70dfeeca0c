//! A report's regression test in the form of Burn's backend tests (`TestTensor`, the default
//! device, `assert_eq` / `assert_approx_eq` on `TensorData`), ready to paste into Burn's suite:
//! the chain that reaches the finding's step, and the value its definition gives.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::interpreter::{Outcome, Trace, ValueInfo};
use crate::oracles::reference::host::{Data, Host};
use crate::oracles::reference::REFERENCE_MISMATCH;
use crate::oracles::{Backend, Finding, DIVERGENCE, DTYPE_CONTRACT};
use crate::program::{replace_ident, DeviceRef, Dtype, Program, Slot, Step};

use super::rust::step_expr;
use super::simplify::{evaluate, literal, literals};

/// The steps up to `at` that step `at` depends on, in order: `None` where one of them is not a
/// plain eager step (a scope, a move, a read, an autodiff step) or did not run, or the steps
/// create tensors on more than one device.
fn chain(program: &Program, trace: &Trace, at: usize) -> Option<(Vec<usize>, DeviceRef)> {
    let mut needed: BTreeSet<Slot> = program.steps.get(at)?.reads().into_iter().collect();
    let mut steps = vec![at];
    for i in (0..at).rev() {
        let step = &program.steps[i];
        let writes = step.writes();
        if !writes.iter().any(|w| needed.contains(w)) {
            continue;
        }
        for w in &writes {
            needed.remove(w);
        }
        needed.extend(step.reads());
        steps.push(i);
    }
    steps.reverse();
    let mut device = None;
    for &i in &steps {
        if matches!(trace.steps.get(i)?.outcome, Outcome::Skipped { .. }) {
            return None;
        }
        match &program.steps[i] {
            Step::Create { device: d, .. } => {
                if device.is_some_and(|seen| seen != *d) {
                    return None;
                }
                device = Some(*d);
            }
            Step::Op { .. } | Step::Clone { .. } | Step::Autodiff { .. } => {}
            // A gradient only as the finding's own step.
            Step::Backward { .. } if i == at => {}
            _ => return None,
        }
    }
    let device = device?;
    matches!(
        device,
        DeviceRef::Flex | DeviceRef::FlexAutodiff | DeviceRef::Wgpu
    )
    .then_some((steps, device))
}

/// The backend it fails on today and the body of the regression test of a finding at step `at` of `program` (as `trace` ran it):
/// the chain that reaches `at` on Burn's test device, ending in the definition's value
/// of its result where the host computes all of it (an op whose definition leaves an element
/// open, an overflow or a NaN's order, asserts only that the call completes, which is what a
/// panic finding fails). `None` where the chain is not plain eager steps on one device, or a
/// non-panic finding has no definite value to assert.
pub fn regression_body(
    program: &Program,
    trace: &Trace,
    finding: &Finding,
) -> Option<(&'static str, String)> {
    let at = finding.step?;
    let (steps, device) = chain(program, trace, at)?;
    let panicked = matches!(trace.steps.get(at)?.outcome, Outcome::Panic(_));
    let value = match &trace.steps.get(at)?.outcome {
        Outcome::Ok { value: Some(v), .. } => Some(v.clone()),
        _ => None,
    };
    let dtype = value
        .as_ref()
        .and_then(|v| Dtype::from_burn(v.dtype))
        .or_else(|| match &program.steps[at] {
            Step::Create { dtype, .. } => *dtype,
            _ => None,
        });
    let expected = expected_value(program, (&steps, at), finding, value.as_ref());
    let check = match (expected.as_ref(), dtype) {
        (Some(host), Some(dtype)) => literal(host, dtype).map(|data| (host, data)),
        (Some(host), None) if panicked => {
            // The op's dtype is the first operand's, as Burn's defaults give it.
            let dtype = match host.data {
                Data::Float(_) => Dtype::F32,
                Data::Int(_) => Dtype::I64,
                Data::Bool(_) => Dtype::BoolNative,
            };
            literal(host, dtype).map(|data| (host, data))
        }
        _ => None,
    };
    if check.is_none() && !panicked {
        return None;
    }
    let mut body = String::new();
    // Burn's autodiff tests make their tensors on the test backend's autodiff device.
    let make = if device == DeviceRef::FlexAutodiff {
        "AutodiffDevice::new()"
    } else {
        "Default::default()"
    };
    let _ = writeln!(body, "    let device = {make};");
    let here = device.to_string();
    // Written as the reproducer is: the simplifier's literals for the chains they stand for.
    let lits = literals(program, trace, Some(at));
    for &i in steps.iter().filter(|i| !lits.dropped.contains(i)) {
        let step = &program.steps[i];
        let text = match lits.replaced.get(&i) {
            Some((literal, _)) => literal.clone(),
            None => step_expr(step)?,
        };
        let text = in_test_terms(&text, &here);
        let name = if i == at {
            "output".to_string()
        } else {
            format!("t{}", step.writes().first()?)
        };
        let unwrap = if matches!(step, Step::Backward { .. }) {
            ".unwrap()"
        } else {
            ""
        };
        let _ = writeln!(body, "    let {name} = {text}{unwrap};");
    }
    // A value of the wrong kind's dtype equals its definition in value: the dtype is the bug.
    if finding.class == DTYPE_CONTRACT {
        let _ = writeln!(
            body,
            "    assert!(output.dtype().is_bool(), \"a Bool tensor stored as {{:?}}\", output.dtype());"
        );
    }
    match check {
        Some((host, data)) => {
            let _ = writeln!(body, "    let expected = {data};");
            let (elem, tolerance) = float_comparison(finding, dtype);
            let _ = match host.data {
                Data::Float(_) => writeln!(
                    body,
                    "    output\n        .into_data()\n        .assert_approx_eq::<{elem}>(&expected, {tolerance});"
                ),
                _ => writeln!(body, "    output.into_data().assert_eq(&expected, false);"),
            };
        }
        None => {
            let _ = writeln!(body, "    output.into_data();");
        }
    }
    Some((backend_of(finding, device), body))
}

/// The element type and tolerance a float check compares with: Burn's default tolerance (0.5%
/// relative) does not see a value a few units in the last place off, so the test compares
/// within half Burn's error there; an F64 value is compared as f64, since the suite's FloatElem
/// (f32) would round away an error below f32's precision.
fn float_comparison(finding: &Finding, dtype: Option<Dtype>) -> (&'static str, String) {
    let tolerance = (finding.payload.mismatch())
        .and_then(|m| m.reproducer_tolerance())
        .filter(|t| *t < 1e-5)
        .map_or("Tolerance::default()".to_string(), |t| {
            format!("Tolerance::absolute({t:e})")
        });
    let elem = if dtype == Some(Dtype::F64) {
        "f64"
    } else {
        "FloatElem"
    };
    (elem, tolerance)
}

/// The definition's value of the chain `steps` reaching step `at`: for a gradient, the finite
/// difference the finding quotes, known in full for a one-element gradient.
fn expected_value(
    program: &Program,
    (steps, at): (&[usize], usize),
    finding: &Finding,
    value: Option<&ValueInfo>,
) -> Option<Host> {
    if !matches!(program.steps[at], Step::Backward { .. }) {
        return evaluate(program, steps);
    }
    (finding.payload.mismatch())
        .filter(|_| value.is_some_and(|v| v.shape.iter().product::<usize>() == 1))
        .and_then(|m| m.expected.parse::<f64>().ok())
        .map(|x| Host::float(value.map_or(vec![1], |v| v.shape.clone()), vec![Some(x)]))
}

/// A reproducer's expression in a Burn backend test's terms: the test's device, and its tensor
/// aliases.
fn in_test_terms(text: &str, here: &str) -> String {
    let mut text = replace_ident(text, here, "device");
    for (kind, alias) in [
        ("Float", "TestTensor"),
        ("Int", "TestTensorInt"),
        ("Bool", "TestTensorBool"),
    ] {
        for rank in 1..=6 {
            text = text.replace(
                &format!("Tensor::<{rank}, {kind}>::"),
                &format!("{alias}::<{rank}>::"),
            );
        }
    }
    text
}

/// A regression test named after `id` (a report's file stem) with `body`, as a file of Burn's
/// backend tests holds it: the suite's prelude (`TestTensor`, `FloatElem`) through `super`, and
/// the `burn_tensor` names the body uses.
pub fn regression_test(id: &str, body: &str) -> String {
    let names: Vec<&str> = [
        "Bool",
        "BoolStore",
        "DType",
        "Float",
        "FloatDType",
        "Int",
        "IntDType",
        "TensorData",
        "Tolerance",
        "bf16",
        "f16",
    ]
    .into_iter()
    .filter(|n| crate::program::mentions_ident(body, n))
    .collect();
    let uses = match names.as_slice() {
        [] => String::new(),
        [one] => format!("use burn_tensor::{one};\n"),
        many => format!("use burn_tensor::{{{}}};\n", many.join(", ")),
    };
    // Inside Burn's workspace the tensor crate is `burn_tensor`, not the `burn` facade.
    let body = body.replace("burn::tensor::", "burn_tensor::");
    format!(
        "use super::*;\n{uses}\n#[test]\nfn {}() {{\n{body}}}\n",
        id.replace('-', "_")
    )
}

/// The regression test of a finding that has no form in Burn's backend tests (a capture
/// scope, a replay, a transaction, a gradient of many elements): the reproducer `rust` itself
/// as a `#[test]` named after `id`, for the `burn` crate's integration tests, its `use` lines
/// and helpers kept and its dependency header dropped (the report lists the features).
pub fn integration_test(id: &str, rust: &str) -> String {
    let mut out = String::new();
    for line in rust.lines().filter(|l| !l.starts_with("//")) {
        if line == "fn main() {" {
            out.push_str("#[test]\n");
            let _ = writeln!(out, "fn {}() {{", id.replace('-', "_"));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The backend a regression test fails on today, as its report names it: wgpu for a finding
/// that compares Flex with wgpu (the program ran on Flex; the bug is wgpu's), else the backend
/// the chain ran on (`device`), `Flex` or `wgpu`.
fn backend_of(finding: &Finding, device: DeviceRef) -> &'static str {
    let on_wgpu = finding.class == DIVERGENCE
        || (finding.class == REFERENCE_MISMATCH
            && finding.payload.backend() == Some(Backend::Wgpu));
    if on_wgpu || device == DeviceRef::Wgpu {
        "wgpu"
    } else {
        "Flex"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reproducer_becomes_a_test_named_after_its_report_without_its_header() {
        let rust = "// Cargo.toml [dependencies], all the reproducer needs:\n// burn = \"x\"\n\
                    use burn::tensor::Device;\n\nfn main() {\n    let flex = Device::flex();\n}\n";
        let test = integration_test("flex-sum-dim-bug", rust);
        assert_eq!(
            test,
            "use burn::tensor::Device;\n\n#[test]\nfn flex_sum_dim_bug() {\n    let flex = \
             Device::flex();\n}\n"
        );
        let backend = regression_test("x-y", "    let output = 1;\n");
        assert!(backend.starts_with("use super::*;\n"), "{backend}");
        assert!(backend.contains("#[test]\nfn x_y() {"), "{backend}");
    }
}
