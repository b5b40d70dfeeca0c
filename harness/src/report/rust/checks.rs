//! The checks a reproducer ends with, one per oracle: the replay against the eager run, the
//! differential across backends, the reference value, the outcome the contract expects.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::expr::{device, expr, kind_path};
use super::{FLEX_REPLAY, WGPU_REPLAY};
use crate::interpreter::ValueInfo;
use crate::oracles::catalogue::catalogue;
use crate::oracles::{Backend, Finding, Mismatch, Payload};
use crate::program::{replace_ident, DeviceRef, Kind, Program, Slot, Step};
use crate::report::simplify::Literals;

/// The `DType` patterns of `kind`'s tensors, as the dtype-contract oracle accepts them.
/// The assertion a reference finding ends on: the element the oracle judged, read back and
/// compared with the definition's value (a float within a thousandth, or half Burn's error
/// where that is smaller ([`Mismatch::reproducer_tolerance`]), or NaN where it is NaN; an int or
/// a bool exactly), failing with the oracle's own words.
pub(super) fn reference_check(m: &Mismatch, kind: Kind, pad: &str, name: &str) -> String {
    let (t, e) = (m.slot, m.element);
    let mut out = String::new();
    let _ = writeln!(out, "{pad}// {m}");
    let (ty, want) = match kind {
        Kind::Float => (
            "f64",
            match m.expected.as_str() {
                "NaN" => "f64::NAN".to_string(),
                "inf" => "f64::INFINITY".to_string(),
                "-inf" => "f64::NEG_INFINITY".to_string(),
                v => v.to_string(),
            },
        ),
        Kind::Int => ("i64", m.expected.clone()),
        Kind::Bool => ("bool", m.expected.clone()),
    };
    let _ = writeln!(
        out,
        "{pad}let got = {name}.to_data().iter::<{ty}>().nth({e}).expect(\"element {e}\");"
    );
    let _ = writeln!(out, "{pad}let want: {ty} = {want};");
    let same = match (kind, m.reproducer_tolerance()) {
        (Kind::Float, Some(t)) => {
            format!("(got.is_nan() && want.is_nan()) || (got - want).abs() <= {t:e}")
        }
        (Kind::Float, None) => {
            "(got.is_nan() && want.is_nan()) || (got - want).abs() <= 1e-3 * want.abs().max(1.0)"
                .to_string()
        }
        _ => "got == want".to_string(),
    };
    let _ = writeln!(
        out,
        "{pad}assert!({same}, \"t{t} element {e}: the definition gives {{want:?}}, Burn computed {{got:?}}\");"
    );
    out
}

pub(super) fn dtypes_of(kind: Kind) -> String {
    crate::oracles::dtype_contract::dtypes(kind)
        .iter()
        .map(|d| format!("burn::tensor::DType::{d}"))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// A message without the `step N `call` ` it opens with (the call is on the line it stands
/// over, and step numbers are this project's).
pub(in crate::report) fn without_step(message: &str) -> &str {
    match message.strip_prefix("step ") {
        Some(rest) => rest.split_once("` ").map_or(message, |(_, tail)| tail),
        None => message,
    }
}

/// A model mismatch in the words of the call's contract: `expected X, Burn gave Y`, with the
/// outcomes in the panics' own words (the rule's name and the step number are this project's;
/// the call is on the line the comment stands over). Any other finding: its message.
pub(in crate::report) fn contract_words(finding: &Finding) -> String {
    match &finding.payload {
        Payload::Outcome { expected, actual } => format!(
            "expected {}, Burn gave {}",
            outcome_words(expected),
            outcome_words(actual)
        ),
        _ => finding.message.clone(),
    }
}

/// An outcome as the model names it (`ok`, `panic <class>`, `error <Variant>`), with a
/// catalogued class given as the panic's own words (`panic "capture scope is already
/// complete"`): the class names are this project's.
pub(in crate::report) fn outcome_words(outcome: &str) -> String {
    match outcome.strip_prefix("panic ") {
        Some(class) => match catalogue().iter().find(|r| r.background_tag == class) {
            Some(record) => format!("a panic \"{}\"", record.message_pattern),
            None => format!("a panic ({class})"),
        },
        None => outcome.to_string(),
    }
}

/// What a model mismatch says the contract expects (`ok`, `panic <class>`, `error <Variant>`).
pub(in crate::report) fn expected_outcome(finding: &Finding) -> &str {
    match &finding.payload {
        Payload::Outcome { expected, .. } => expected,
        _ => "another outcome",
    }
}

/// The call an eager-replay finding replays its graph with (up to its graph and feed): on wgpu
/// when the finding says so.
pub(super) fn replayed_on(finding: &Finding) -> &'static str {
    if finding.payload.backend() == Some(Backend::Wgpu) {
        WGPU_REPLAY
    } else {
        FLEX_REPLAY
    }
}

/// After the scope that ends at `exit` (graph `graph`): the same steps run eagerly on Flex
/// (slots renamed `eN`), the graph replayed with `replay` ([`FLEX_REPLAY`], [`WGPU_REPLAY`])
/// with the eager inputs, and every output compared with its eager value, printing both;
/// with `dtype_lost`, each output's dtype with the one the graph recorded first. Where the
/// replay itself fails (not a `mismatch`) and takes no inputs, only the replay is written.
pub(super) fn eager_replay_check(
    program: &Program,
    (exit, graph): (usize, usize),
    (replay, dtype_lost, mismatch): (&str, bool, bool),
    ran: &dyn Fn(usize) -> bool,
    pad: &str,
) -> String {
    let Some(enter) = program.scope_ends().iter().position(|e| *e == Some(exit)) else {
        return String::new();
    };
    let Step::EnterScope {
        device: scope_device,
    } = program.steps[enter]
    else {
        return String::new();
    };
    let Step::ExitScope {
        inputs, outputs, ..
    } = &program.steps[exit]
    else {
        return String::new();
    };
    let mut out = String::new();
    if !mismatch && !dtype_lost && inputs.is_empty() {
        let _ = writeln!(
            out,
            "{pad}let replayed = {replay}graph{graph}.as_ref().expect(\"graph{graph} was captured\"), vec![]);"
        );
        return out;
    }
    let _ = writeln!(
        out,
        "{pad}// The graph replayed vs the same steps run eagerly on Flex:"
    );
    let mut renamed: BTreeSet<Slot> = BTreeSet::new();
    let rename = |text: String, renamed: &BTreeSet<Slot>| -> String {
        let mut text = replace_ident(&text, &device(scope_device), "flex");
        for s in renamed {
            text = replace_ident(&text, &format!("t{s}"), &format!("e{s}"));
        }
        text
    };
    for i in enter + 1..exit {
        let step = &program.steps[i];
        if matches!(step, Step::EnterScope { .. } | Step::ExitScope { .. }) {
            let _ = writeln!(out, "{pad}// (a nested scope: its eager run is not shown)");
            return out;
        }
        if !ran(i) {
            continue;
        }
        let Some(expr) = expr(step) else { continue };
        let expr = rename(expr, &renamed);
        match step.writes().first() {
            Some(w) => {
                renamed.insert(*w);
                let _ = writeln!(out, "{pad}let e{w} = {expr};");
            }
            None => {
                let _ = writeln!(out, "{pad}let _ = {expr};");
            }
        }
    }
    let eager = |slots: &[Slot]| -> Vec<String> {
        slots
            .iter()
            .map(|s| rename(format!("t{s}.clone().into_data()"), &renamed))
            .collect()
    };
    let _ = writeln!(
        out,
        "{pad}let replayed = {replay}graph{graph}.as_ref().expect(\"graph{graph} was captured\"), vec![{}]);",
        eager(inputs).join(", ")
    );
    if dtype_lost {
        for (k, slot) in outputs.iter().enumerate() {
            let _ = writeln!(
                out,
                "{pad}assert_recorded_dtype(\"output {k} (t{slot})\", graph{graph}.as_ref().unwrap(), {k}, &replayed[{k}]);"
            );
        }
    }
    for (k, expr) in eager(outputs).iter().enumerate() {
        let _ = writeln!(
            out,
            "{}",
            assert_same(
                pad,
                &format!("output {k} (t{}): replayed vs eager", outputs[k]),
                (&format!("replayed[{k}]"), expr),
                None
            )
            .trim_end()
        );
    }
    out
}

/// After the program: the value step `at` produced, compared between Flex and wgpu (as Burn's
/// tests compare). The steps up to `at` run again with every tensor on each backend (slots
/// renamed `eN` on Flex, `wN` on wgpu), moves between devices becoming clones as in the
/// differential's two runs, except on a backend the program already ran them all on, whose
/// values (`tN`) are compared as they are: each chain runs once per backend.
pub(super) fn differential_check(
    program: &Program,
    (at, lits): (usize, &Literals),
    ran: &dyn Fn(usize) -> bool,
    kind: Option<Kind>,
) -> String {
    let pad = "    ";
    let mut out = String::new();
    let Some(o) = program.steps[at].writes().first().copied() else {
        return out;
    };
    let all_on = |device: DeviceRef| {
        (0..=at).filter(|i| ran(*i)).all(|i| {
            let step = &program.steps[i];
            let made_on = lits.replaced.get(&i).map(|r| r.1).or(step.device());
            !matches!(step, Step::EnterScope { .. } | Step::Replay { .. })
                && made_on.is_none_or(|d| d == device)
        })
    };
    let _ = writeln!(out, "{pad}// The same steps on Flex and on wgpu:");
    let mut names = Vec::new();
    for (prefix, device, here) in [
        ("e", "flex", DeviceRef::Flex),
        ("w", "wgpu", DeviceRef::Wgpu),
    ] {
        if all_on(here) {
            names.push(format!("t{o}"));
        } else if rerun(program, (at, lits), ran, (prefix, device), &mut out) {
            names.push(format!("{prefix}{o}"));
        } else {
            return out;
        }
    }
    let _ = writeln!(
        out,
        "{}",
        assert_same(
            pad,
            &format!("t{o}: wgpu vs flex"),
            (
                &format!("{}.into_data()", names[1]),
                &format!("{}.into_data()", names[0])
            ),
            kind
        )
        .trim_end()
    );
    out
}

/// Every step up to `at` that ran, again with every tensor on `device` (slots renamed
/// `{prefix}N`), moves between devices becoming clones, a step of `lits` written as its
/// literal, written to `out`; `false` where a scope or replay step stops it (said in a comment).
pub(super) fn rerun(
    program: &Program,
    (at, lits): (usize, &Literals),
    ran: &dyn Fn(usize) -> bool,
    (prefix, device): (&str, &str),
    out: &mut String,
) -> bool {
    let pad = "    ";
    {
        let mut written: BTreeSet<Slot> = BTreeSet::new();
        for i in 0..=at {
            if !ran(i) {
                continue;
            }
            let step = &program.steps[i];
            let line = match step {
                // A step the simplifier wrote as a literal is made again on this device.
                _ if lits.replaced.contains_key(&i) => {
                    let (text, _) = &lits.replaced[&i];
                    let o = step.writes().first().copied().unwrap_or_default();
                    let mut text = text.clone();
                    for d in ["flex", "flex_ad", "wgpu"] {
                        text = replace_ident(&text, d, device);
                    }
                    Some((o, text))
                }
                Step::Create { out: o, .. }
                | Step::Op { out: o, .. }
                | Step::Autodiff { out: o, .. }
                | Step::Backward { out: o, .. } => {
                    let Some(mut text) = expr(step) else { continue };
                    for d in ["flex", "flex_ad", "wgpu"] {
                        text = replace_ident(&text, d, device);
                    }
                    for s in &written {
                        text = replace_ident(&text, &format!("t{s}"), &format!("{prefix}{s}"));
                    }
                    // A gradient step reached here had a gradient in the program's run.
                    if matches!(step, Step::Backward { .. }) {
                        text.push_str(".expect(\"a gradient\")");
                    }
                    Some((*o, text))
                }
                Step::ToDevice { out: o, src, .. } | Step::Clone { out: o, src } => {
                    Some((*o, format!("{prefix}{src}.clone()")))
                }
                Step::Read { .. } | Step::Transaction { .. } | Step::Drop { .. } => None,
                _ => {
                    let _ = writeln!(
                        out,
                        "{pad}// (step {i} is not run again here: a scope or replay step)"
                    );
                    return false;
                }
            };
            if let Some((o, text)) = line {
                written.insert(o);
                let _ = writeln!(out, "{pad}let {prefix}{o} = {text};");
            }
        }
    }
    true
}

/// After the program, for a divergence at replay step `at`: the graph replayed on wgpu (as the
/// differential's wgpu run does, fed the program's values) and each output loaded onto wgpu and
/// compared with the program's Flex replay, printing both. `outputs` describes the Flex
/// replay's outputs, which the program loaded onto Flex.
pub(super) fn replay_differential_check(
    program: &Program,
    at: usize,
    outputs: &[ValueInfo],
) -> String {
    let pad = "    ";
    let step = &program.steps[at];
    let (Step::Replay { outputs: slots, .. }, Some(replay)) = (step, expr(step)) else {
        return String::new();
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{pad}// The graph replayed on wgpu vs replayed on Flex:"
    );
    let on_wgpu = replay.replace(FLEX_REPLAY, WGPU_REPLAY);
    let _ = writeln!(out, "{pad}let on_wgpu = {on_wgpu};");
    for (k, (slot, info)) in slots.iter().zip(outputs).enumerate() {
        let _ = writeln!(
            out,
            "{pad}let w{slot} = Tensor::<{}, {}>::from_data(on_wgpu[{k}].clone(), &wgpu);",
            info.shape.len(),
            kind_path(info.kind)
        );
        let _ = writeln!(
            out,
            "{}",
            assert_same(
                pad,
                &format!("t{slot}: wgpu vs flex"),
                (
                    &format!("w{slot}.into_data()"),
                    &format!("t{slot}.into_data()")
                ),
                Some(info.kind)
            )
            .trim_end()
        );
    }
    out
}

/// The line that fails unless `got` equals `want` (two `TensorData` expressions) as Burn's own
/// tests compare: within `Tolerance::default()` (balanced: 0.5% relative, 1e-5 absolute) for a
/// float `kind` (or one the trace does not know), exactly for ints and bools; the dtypes may
/// differ. Its panic, "Tensors are not (approx) eq", lists the positions that differ.
fn assert_same(pad: &str, what: &str, (got, want): (&str, &str), kind: Option<Kind>) -> String {
    match kind {
        Some(Kind::Int | Kind::Bool) => {
            format!("{pad}{got}.assert_eq(&{want}, false); // {what}\n")
        }
        _ => format!(
            "{pad}{got}.assert_approx_eq::<f64>(&{want}, Tolerance::default()); // {what}\n"
        ),
    }
}

pub(super) const RECORDED_DTYPE_HELPER: &str = r#"
/// Fails unless replayed output `k` has the dtype its graph recorded for it.
fn assert_recorded_dtype(what: &str, graph: &burn::tensor::CapturedGraph, k: usize, got: &TensorData) {
    let id = graph.graph.outputs[k];
    let recorded = graph.graph.operations.iter().flat_map(|op| op.nodes()).find(|n| n.id == id)
        .map(|n| n.dtype)
        .unwrap_or_else(|| graph.values[&id].dtype());
    println!("{what}: replayed as {:?}, recorded as {recorded:?}", got.dtype());
    assert_eq!(got.dtype(), recorded, "{what}: the replayed dtype is not the recorded one");
}
"#;

pub(super) fn count_exits_before(program: &Program, exit: usize) -> usize {
    program.steps[..exit]
        .iter()
        .filter(|s| matches!(s, Step::ExitScope { .. }))
        .count()
}
