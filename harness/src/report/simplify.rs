//! The reproducer's simplifier: an operand of the finding's step that a chain of element-wise
//! steps computes is written as a literal of its value (`f32::INFINITY`, not `0^-110`), and the
//! chain, which nothing else reads, is left out. Only where the host computes every element.

use std::collections::{BTreeMap, BTreeSet};

use crate::interpreter::{Outcome, Trace};
use crate::oracles::reference::host::{as_stored, Data, Host};
use crate::oracles::reference::{host_of, of_op};
use crate::program::display::creation_options;
use crate::program::{fill_data, DeviceRef, Dtype, Kind, Op, Program, Reach, Step};

/// A `vec!` of `values` (Rust literals): `vec![x; n]` where every element is the same.
pub(super) fn vec_literal(values: &[String]) -> String {
    match values {
        [first, rest @ ..] if !rest.is_empty() && rest.iter().all(|v| v == first) => {
            format!("vec![{first}; {}]", values.len())
        }
        _ => format!("vec![{}]", values.join(", ")),
    }
}

/// The most elements a literal may hold: past that a chain is the shorter text.
const MOST_ELEMENTS: usize = 16;

/// What the simplifier changes in a reproducer: the steps written as a literal of their value
/// (step -> the expression), and the steps left out (what only they read).
#[derive(Default, Debug)]
pub struct Literals {
    /// The expression each replaced step is written as, and the device it creates on.
    pub replaced: BTreeMap<usize, (String, DeviceRef)>,
    /// The steps nothing reads any more.
    pub dropped: BTreeSet<usize>,
}

/// Whether `op` computes each element from the same element of its operands (its
/// [reach](Op::reach)): its result is a fresh, contiguous tensor whatever its operands' layout,
/// so a literal of its value stands for it exactly.
fn elementwise(op: &Op) -> bool {
    op.reach() == Reach::Elementwise
}

/// For each step, the steps whose values it reads (the last writer of each slot it reads).
fn producers(program: &Program) -> Vec<Vec<usize>> {
    let mut last: BTreeMap<u8, usize> = BTreeMap::new();
    let mut out = Vec::with_capacity(program.steps.len());
    for (i, step) in program.steps.iter().enumerate() {
        out.push(
            step.reads()
                .iter()
                .filter_map(|s| last.get(s).copied())
                .collect(),
        );
        for w in step.writes() {
            last.insert(w, i);
        }
    }
    out
}

/// The literals of a plain eager program (creates, element-wise and other ops, clones: no
/// scope, move, read or autodiff step) whose finding is at step `at`, as `trace` ran it.
pub fn literals(program: &Program, trace: &Trace, at: Option<usize>) -> Literals {
    let mut out = Literals::default();
    let Some(at) = at else { return out };
    let plain = program.steps[..=at.min(program.steps.len().saturating_sub(1))]
        .iter()
        .all(|s| {
            matches!(
                s,
                Step::Create { .. } | Step::Op { .. } | Step::Clone { .. }
            )
        });
    if !plain || at >= program.steps.len() {
        return out;
    }
    let producers = producers(program);
    let mut readers: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); program.steps.len()];
    for (j, from) in producers.iter().enumerate() {
        for &k in from {
            readers[k].insert(j);
        }
    }
    for &p in &producers[at] {
        if out.replaced.contains_key(&p) {
            continue;
        }
        let op = match &program.steps[p] {
            Step::Op { op, .. } => Some(op),
            Step::Clone { .. } => None,
            _ => continue,
        };
        // The chain: every step `p` depends on.
        let mut chain = BTreeSet::new();
        let mut todo = producers[p].clone();
        while let Some(k) = todo.pop() {
            if chain.insert(k) {
                todo.extend(producers[k].iter().copied());
            }
        }
        let element_wise = op.is_none_or(elementwise)
            && chain.iter().all(|&k| match &program.steps[k] {
                Step::Op { op, .. } => elementwise(op),
                _ => true,
            });
        if !element_wise || out.dropped.contains(&p) {
            continue;
        }
        let Some(text) = literal_of(program, trace, p, &chain) else {
            continue;
        };
        // Left out: the chain's steps that only the chain (or the replaced step) reads.
        let mut gone = chain.clone();
        loop {
            let keep: Vec<usize> = gone
                .iter()
                .copied()
                .filter(|k| readers[*k].iter().any(|r| *r != p && !gone.contains(r)))
                .collect();
            if keep.is_empty() {
                break;
            }
            for k in keep {
                gone.remove(&k);
            }
        }
        // A chain of one create is already a literal.
        if chain.len() == 1 && op.is_none() {
            continue;
        }
        out.replaced.insert(p, text);
        out.dropped.extend(gone);
    }
    out
}

/// Step `p`'s value (over the steps of `chain` before it) as a `Tensor::from_data` expression
/// on the chain's device, in the dtype the run gave it; `None` where the host leaves an element
/// open, the value is large, its dtype has no plain literal (F16, BF16) or the chain creates on
/// two devices.
fn literal_of(
    program: &Program,
    trace: &Trace,
    p: usize,
    chain: &BTreeSet<usize>,
) -> Option<(String, DeviceRef)> {
    let devices: BTreeSet<DeviceRef> = chain
        .iter()
        .filter_map(|k| match &program.steps[*k] {
            Step::Create { device, .. } => Some(*device),
            _ => None,
        })
        .collect();
    let [device] = devices.into_iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    let Outcome::Ok { value: Some(v), .. } = &trace.steps.get(p)?.outcome else {
        return None;
    };
    let dtype = Dtype::from_burn(v.dtype)?;
    if matches!(dtype, Dtype::F16 | Dtype::Bf16) {
        return None;
    }
    let steps: Vec<usize> = chain.iter().copied().chain([p]).collect();
    let value: Host = evaluate(program, &steps)?;
    if value.numel() > MOST_ELEMENTS || value.shape != v.shape {
        return None;
    }
    let data = literal(&value, dtype)?;
    // The device's default float and bool need no dtype; an int names its own.
    let named = match v.kind {
        Kind::Int => Some(dtype),
        Kind::Float if dtype != Dtype::F32 => Some(dtype),
        _ => None,
    };
    let kind = match v.kind {
        Kind::Float => "Float",
        Kind::Int => "Int",
        Kind::Bool => "Bool",
    };
    let text = format!(
        "Tensor::<{}, {kind}>::from_data({data}, {})",
        v.shape.len(),
        creation_options(&device.to_string(), named)
    );
    Some((text, device))
}

/// The definition's value of the last of `steps` (creates, ops and clones, in order, each
/// reading only earlier ones), computed on the host: `None` where an op has no reference.
pub(super) fn evaluate(program: &Program, steps: &[usize]) -> Option<Host> {
    let mut held: Vec<Option<Host>> = vec![None; 256];
    let mut last = None;
    for &i in steps {
        let step = &program.steps[i];
        let value = match step {
            Step::Create {
                kind,
                shape,
                fill,
                dtype,
                ..
            } => host_of(*kind, &fill_data(*kind, *dtype, shape, *fill)),
            Step::Op { op, .. } => {
                let operands: Vec<&Host> = op
                    .operands()
                    .iter()
                    .map(|s| held[usize::from(*s)].as_ref())
                    .collect::<Option<_>>()?;
                of_op(op, &operands).ok()?
            }
            Step::Clone { src, .. } => held[usize::from(*src)].clone()?,
            _ => return None,
        };
        let out = *step.writes().first()?;
        held[usize::from(out)] = Some(value.clone());
        last = Some(value);
    }
    last
}

/// `value` as a `TensorData` literal of `dtype` (Burn's name: `F32`, `I64`), or `None` where
/// the definition leaves an element open.
pub(super) fn literal(value: &Host, dtype: Dtype) -> Option<String> {
    let elements: Vec<String> = match &value.data {
        Data::Float(v) => {
            let wide = dtype == Dtype::F64;
            v.iter()
                .map(|x| {
                    let x = as_stored(dtype, (*x)?);
                    let ty = if wide { "f64" } else { "f32" };
                    Some(if x.is_nan() {
                        format!("{ty}::NAN")
                    } else if x.is_infinite() {
                        format!("{ty}::{}INFINITY", if x < 0.0 { "NEG_" } else { "" })
                    } else if wide {
                        format!("{x:?}")
                    } else {
                        format!("{:?}", x as f32)
                    })
                })
                .collect::<Option<_>>()?
        }
        // An int past the dtype's range wraps (two's complement), as Flex means its ints to
        // (burn-flex ops/reduce.rs: "wrapping, matches PyTorch").
        Data::Int(v) => {
            let wrap = |x: i128| match dtype.int_range() {
                Some((lo, hi)) => lo + (x - lo).rem_euclid(hi - lo + 1),
                None => x,
            };
            v.iter()
                .map(|x| x.map(|x| wrap(x).to_string()))
                .collect::<Option<_>>()?
        }
        Data::Bool(v) => v
            .iter()
            .map(|x| x.map(|x| x.to_string()))
            .collect::<Option<_>>()?,
    };
    let suffix = match value.data {
        Data::Float(_) if dtype == Dtype::F64 => "f64",
        Data::Float(_) => "f32",
        Data::Int(_) if dtype.int_range().is_some() => dtype.rust_type(),
        Data::Int(_) => "i64",
        Data::Bool(_) => "",
    };
    let elements: Vec<String> = elements
        .into_iter()
        .map(|e| {
            if e.contains("::") || suffix.is_empty() {
                e
            } else {
                format!("{e}{suffix}")
            }
        })
        .collect();
    Some(format!(
        "TensorData::new({}, {:?})",
        vec_literal(&elements),
        value.shape
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::Backends;
    use crate::program::ProgramFile;
    use crate::session::Session;

    fn run(steps: &str) -> (Program, Trace) {
        let file = ProgramFile::parse(&format!("{{\"steps\": [{steps}]}}"), "test").unwrap();
        let program = file.program();
        let verdict = crate::check(&Session::new(Backends::FLEX_CAPTURE), &program).unwrap();
        (program, verdict.trace)
    }

    #[test]
    fn an_element_wise_chain_feeding_the_last_step_becomes_a_literal_of_its_value() {
        // t1 = 0^-110 = inf, read by the remainder alone: written as the literal inf.
        let (program, trace) = run(
            r#"{"create":{"out":0,"kind":"float","shape":[1],"fill":"zeros","device":"flex"}},
               {"op":{"out":1,"op":{"scalar":{"op":"powi","src":0,"value":-110}}}},
               {"op":{"out":2,"op":{"binary":{"op":"remainder","lhs":0,"rhs":1}}}}"#,
        );
        let lits = literals(&program, &trace, Some(2));
        let (text, device) = &lits.replaced[&1];
        assert!(text.contains("f32::INFINITY"), "{text}");
        assert_eq!(*device, DeviceRef::Flex);
        // The create is read by the remainder too: it stays.
        assert!(lits.dropped.is_empty(), "{lits:?}");
    }

    #[test]
    fn a_chain_through_a_layout_op_is_not_replaced() {
        // A swap_dims makes a strided view, which a literal (contiguous) would not reproduce.
        let (program, trace) = run(
            r#"{"create":{"out":0,"kind":"float","shape":[1,2],"fill":"arange","device":"flex"}},
               {"op":{"out":1,"op":{"swap_dims":{"src":0,"dim0":0,"dim1":1}}}},
               {"op":{"out":2,"op":{"unary":{"op":"exp","src":1}}}}"#,
        );
        let lits = literals(&program, &trace, Some(2));
        assert!(lits.replaced.is_empty(), "{lits:?}");
    }

    #[test]
    fn a_chain_only_the_replaced_step_reads_is_left_out() {
        // t1 = -t0 is replaced; t0 has no other reader, so its create goes too.
        let (program, trace) = run(
            r#"{"create":{"out":0,"kind":"float","shape":[2],"fill":"arange","device":"flex"}},
               {"op":{"out":1,"op":{"unary":{"op":"neg","src":0}}}},
               {"op":{"out":2,"op":{"unary":{"op":"exp","src":1}}}}"#,
        );
        let lits = literals(&program, &trace, Some(2));
        assert!(lits.replaced[&1].0.contains("-1.0f32"), "{lits:?}");
        assert_eq!(lits.dropped, BTreeSet::from([0]));
    }
}
