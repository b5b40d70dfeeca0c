//! The body of a reproducer's `main`, step by step: scopes as `capture_scope` closures, each step
//! that ran as its call, steps of other program threads lent to lanes, and the check a finding
//! asks for where it happened.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::checks::{
    contract_words, count_exits_before, differential_check, dtypes_of, eager_replay_check,
    expected_outcome, outcome_words, reference_check, replay_differential_check, replayed_on,
    rerun, without_step,
};
use super::expr::{device, expr, kind_path};
use crate::interpreter::{Outcome, Trace};
use crate::oracles::{
    Backend, Class, Finding, Mismatch, Payload, DIVERGENCE, DTYPE_CONTRACT, MODEL_MISMATCH,
    REFERENCE_MISMATCH, REPLAY_MISMATCH,
};
use crate::program::{exit_statements, DeviceRef, ExitForm, Program, Slot, Step};
use crate::report::simplify::{literals, Literals};

/// The checks a finding asks the reproducer for, read from it once.
struct Asked<'a> {
    /// The finding's step.
    at: Option<usize>,
    /// A model mismatch: the outcome the contract expects is asserted.
    model: Option<&'a Finding>,
    /// An eager-replay finding: a mismatch, or a replay that fails with a known bug's class.
    replay: Option<&'a Finding>,
    /// A Flex/wgpu divergence: the steps run again on the other backend and compared.
    differential: Option<&'a Finding>,
    /// A dtype-contract finding: the stored dtype is asserted.
    dtype: Option<&'a Finding>,
    /// A reference mismatch: its element is compared with the reference's value.
    reference: Option<Mismatch>,
    /// The reference mismatch is a wgpu mirror's value: the steps are run again on wgpu.
    reference_on_wgpu: bool,
}

impl<'a> Asked<'a> {
    fn of(finding: Option<&'a Finding>) -> Asked<'a> {
        let class = |class: Class| finding.filter(|f| f.class == class);
        Asked {
            at: finding.and_then(|f| f.step),
            model: class(MODEL_MISMATCH),
            replay: finding.filter(|f| matches!(f.payload, Payload::Replay { .. })),
            differential: class(DIVERGENCE),
            dtype: class(DTYPE_CONTRACT),
            reference: class(REFERENCE_MISMATCH).and_then(|f| f.payload.mismatch().cloned()),
            reference_on_wgpu: class(REFERENCE_MISMATCH)
                .is_some_and(|f| f.payload.backend() == Some(Backend::Wgpu)),
        }
    }
}

/// The body being written, and where the walk over the steps stands.
struct Body<'a> {
    program: &'a Program,
    trace: &'a Trace,
    asked: Asked<'a>,
    /// The simplifier's literals: a step it leaves out is written as if it never ran.
    lits: Literals,
    /// The last step that ran: printed bare (not caught) where the finding names no step.
    last_run: Option<usize>,
    /// Each scope entry's exit.
    ends: Vec<Option<usize>>,
    /// Each step's program thread.
    threads: Vec<u8>,
    threaded: bool,
    text: String,
    /// The program thread each open scope's closure runs on (`None`: `main`, which runs no step
    /// of a threaded program itself), and whether its `capture_scope` was handed to a lane.
    context: Vec<(Option<u8>, bool)>,
    /// The step whose lines go to a lane once they are all written: where they start in
    /// `text`, its thread and its indentation.
    lent: Option<(usize, u8, String)>,
    depth: usize,
    /// The slots each open scope hands out to the steps after it.
    exports: Vec<Vec<Slot>>,
}

/// The statements of `main` for `program`, as `trace` ran it, with the check `finding` asks for.
pub(super) fn main_body(program: &Program, trace: &Trace, finding: Option<&Finding>) -> String {
    let asked = Asked::of(finding);
    let lits = literals(program, trace, asked.at);
    let mut body = Body {
        program,
        trace,
        asked,
        lits,
        last_run: None,
        ends: program.scope_ends(),
        threads: program.step_threads(),
        threaded: program.thread_count() > 1,
        text: String::new(),
        context: vec![(None, false)],
        lent: None,
        depth: 1,
        exports: Vec::new(),
    };
    body.last_run = (0..program.steps.len()).rev().find(|&i| body.ran(i));
    body.devices();
    for (i, step) in program.steps.iter().enumerate() {
        body.lend_pending();
        body.step(i, step);
    }
    body.lend_pending();
    body.ending();
    body.text
}

impl<'a> Body<'a> {
    fn outcome(&self, i: usize) -> Option<&'a Outcome> {
        self.trace.steps.get(i).map(|r| &r.outcome)
    }

    /// Whether step `i` is written: it ran, and the simplifier did not leave it out.
    fn ran(&self, i: usize) -> bool {
        !self.lits.dropped.contains(&i)
            && !matches!(self.outcome(i), Some(Outcome::Skipped { .. }) | None)
    }

    fn pad(&self) -> String {
        "    ".repeat(self.depth)
    }

    /// The devices the steps name, and those the finding's check runs on.
    fn devices(&mut self) {
        let devices: BTreeSet<DeviceRef> =
            self.program.steps.iter().filter_map(Step::device).collect();
        for d in &devices {
            let init = match d {
                DeviceRef::Flex => "Device::flex()",
                DeviceRef::FlexAutodiff => "Device::flex().autodiff()",
                DeviceRef::Capture(_) => "Device::capture()",
                DeviceRef::Wgpu => "Device::wgpu(burn::tensor::DeviceKind::DefaultDevice)",
            };
            let _ = writeln!(self.text, "    let {} = {init};", device(*d));
        }
        let replays = (self.program.steps.iter()).any(|s| matches!(s, Step::Replay { .. }));
        let asked = &self.asked;
        if (asked.differential.is_some() || asked.reference_on_wgpu)
            && !devices.contains(&DeviceRef::Wgpu)
        {
            let _ = writeln!(
                self.text,
                "    let wgpu = Device::wgpu(burn::tensor::DeviceKind::DefaultDevice);"
            );
        }
        if asked.differential.is_some() && !devices.contains(&DeviceRef::Flex) {
            let _ = writeln!(self.text, "    let flex = Device::flex();");
        }
        if !devices.contains(&DeviceRef::Flex) && (replays || asked.replay.is_some()) {
            let _ = writeln!(self.text, "    let flex = Device::flex();");
        }
        if self.threaded {
            let _ = writeln!(
                self.text,
                "    let lanes = Lanes::new({});",
                self.program.thread_count()
            );
        }
    }

    /// Hands the lines of the step lent to a lane, if any, to it.
    fn lend_pending(&mut self) {
        if let Some((start, thread, pad)) = self.lent.take() {
            lend(&mut self.text, start, thread, &pad);
        }
    }

    fn step(&mut self, i: usize, step: &Step) {
        let here = self.context.last().and_then(|c| c.0);
        let elsewhere = self.threaded && here != Some(self.threads[i]);
        match step {
            Step::EnterScope { device: d } => self.enter_scope(i, *d, elsewhere),
            Step::ExitScope {
                inputs,
                outputs,
                form,
            } => self.exit_scope(i, (inputs, outputs), *form),
            _ if self.ran(i) => self.call(i, step, elsewhere),
            _ => {}
        }
    }

    /// Opens the scope entered at step `i` as a `capture_scope` closure (on a lane when its
    /// thread is not the enclosing one's), declaring the slots it hands out.
    fn enter_scope(&mut self, i: usize, d: DeviceRef, elsewhere: bool) {
        let (program, pad) = (self.program, self.pad());
        let exit = self.ends[i].unwrap_or(i);
        let out = if self.ran(i + 1) || matches!(self.outcome(i), Some(Outcome::Ok { .. })) {
            exported(program, i + 1, exit, &|k| self.ran(k))
        } else {
            Vec::new()
        };
        for s in &out {
            let _ = writeln!(self.text, "{pad}let mut t{s}_out = None;");
        }
        let graph = count_exits_before(program, exit);
        let form = match program.steps.get(exit) {
            Some(Step::ExitScope { form, .. }) => *form,
            _ => ExitForm::Complete,
        };
        let open = format!(
            "{}.capture_scope(|{}scope| {{",
            device(d),
            if form.registers_inputs() { "mut " } else { "" }
        );
        let open = match form {
            // The closure's unwind is caught, as a caller that survives it would.
            ExitForm::Unwind => {
                format!("std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {open}")
            }
            _ => open,
        };
        let open = if elsewhere {
            format!("lanes.on({}, || {open}", self.threads[i])
        } else {
            open
        };
        let _ = writeln!(self.text, "{pad}let graph{graph} = {open}");
        self.exports.push(out);
        self.context.push((Some(self.threads[i]), elsewhere));
        self.depth += 1;
    }

    /// Closes the scope step `i` exits: its exit statements, the closure, Burn's error, the
    /// check a finding at the exit asks for, and the slots it hands out.
    fn exit_scope(&mut self, i: usize, (inputs, outputs): (&[Slot], &[Slot]), form: ExitForm) {
        let pad = self.pad();
        let out = self.exports.pop().unwrap_or_default();
        for s in &out {
            let _ = writeln!(self.text, "{pad}t{s}_out = Some(t{s}.clone());");
        }
        let ids = |slots: &[Slot]| -> String {
            let ids: Vec<String> = slots
                .iter()
                .map(|s| format!("t{s}.clone().try_into_primitive::<Capture>().unwrap().id()"))
                .collect();
            format!("[{}]", ids.join(", "))
        };
        let statements = match form {
            ExitForm::Complete => {
                vec![format!("scope.complete({}, {})", ids(inputs), ids(outputs))]
            }
            _ => exit_statements(inputs, outputs, form),
        };
        // The last one is the closure's value.
        let last = statements.len() - 1;
        for (k, statement) in statements.iter().enumerate() {
            let end = if k == last { "" } else { ";" };
            let _ = writeln!(self.text, "{pad}{statement}{end}");
        }
        self.depth -= 1;
        let pad = self.pad();
        let graph = count_exits_before(self.program, i);
        let lane = if self.context.pop().is_some_and(|c| c.1) {
            ")"
        } else {
            ""
        };
        if form == ExitForm::Unwind {
            let _ = writeln!(self.text, "{pad}}}))){lane});");
            let _ = writeln!(
                self.text,
                "{pad}assert!(graph{graph}.is_err(), \"the closure unwinds\");"
            );
        } else {
            let _ = writeln!(self.text, "{pad}}}){lane};");
        }
        // Normalized as in snapshots: tensor ids count up with the process's history, so the raw
        // text would change with what ran before the case.
        if let Some(Outcome::Error { message, .. }) = self.outcome(i) {
            let message = crate::oracles::normalize_message(message);
            let _ = writeln!(self.text, "{pad}// -> Err({message})");
        }
        self.exit_checks(i, graph, &pad);
        for s in &out {
            let _ = writeln!(
                self.text,
                "{pad}let t{s} = t{s}_out.expect(\"the scope ran\");"
            );
        }
    }

    /// The model's or eager replay's check of a finding at the scope exit `i` (graph `graph`).
    fn exit_checks(&mut self, i: usize, graph: usize, pad: &str) {
        let at = self.asked.at;
        if let Some(f) = self.asked.model.filter(|_| at == Some(i)) {
            let expected = expected_outcome(f);
            let ok = expected == "ok";
            let expected = outcome_words(expected).replace('"', "'");
            let _ = writeln!(self.text, "{pad}// {}", contract_words(f));
            let _ = writeln!(
                self.text,
                "{pad}assert!(graph{graph}.{}(), \"the contract expects {expected} here: {{:?}}\", graph{graph}.as_ref().map(|_| \"a graph\"));",
                if ok { "is_ok" } else { "is_err" }
            );
        }
        if let Some(f) = self.asked.replay.filter(|_| at == Some(i)) {
            let dtype_lost = f.payload.lost_dtype();
            let mismatch = f.class == REPLAY_MISMATCH;
            let check = eager_replay_check(
                self.program,
                (i, graph),
                (replayed_on(f), dtype_lost, mismatch),
                &|k| self.ran(k),
                pad,
            );
            self.text.push_str(&check);
        }
    }

    /// Step `i`, which ran and is neither a scope's entry nor its exit, as its call: caught
    /// where it panicked short of the finding, then the check a finding there asks for.
    fn call(&mut self, i: usize, step: &Step, elsewhere: bool) {
        let pad = self.pad();
        if elsewhere {
            self.lent = Some((self.text.len(), self.threads[i], pad.clone()));
        }
        let replay_outputs = match self.outcome(i) {
            Some(Outcome::Ok { outputs, .. }) => outputs.as_slice(),
            _ => &[],
        };
        let Some(expr) = (self.lits.replaced.get(&i).map(|r| r.0.clone())).or_else(|| expr(step))
        else {
            return;
        };
        let at = self.asked.at;
        let panicked = matches!(self.outcome(i), Some(Outcome::Panic(_)));
        let read_expected_ok = self
            .asked
            .model
            .is_some_and(|f| expected_outcome(f) == "ok")
            && at == Some(i)
            && matches!(self.outcome(i), Some(Outcome::Error { .. }));
        let text = &mut self.text;
        if let Some(Outcome::Panic(p)) = self.trace.steps.get(i).map(|r| &r.outcome) {
            let _ = writeln!(
                text,
                "{pad}// panics: {}",
                p.message.lines().next().unwrap_or_default()
            );
        }
        if panicked && Some(i) != at.or(self.last_run) {
            let _ = writeln!(
                text,
                "{pad}let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {{ let _ = {expr}; }}));"
            );
            return;
        }
        match step {
            Step::Replay { outputs, .. } => {
                let _ = writeln!(text, "{pad}let outputs = {expr};");
                for (k, (slot, info)) in outputs.iter().zip(replay_outputs).enumerate() {
                    let _ = writeln!(
                        text,
                        "{pad}let t{slot} = Tensor::<{}, {}>::from_data(outputs[{k}].clone(), &flex);",
                        info.shape.len(),
                        kind_path(info.kind)
                    );
                }
            }
            Step::Drop { .. } => {
                let _ = writeln!(text, "{pad}{expr};");
            }
            // A fallible read the model expected to succeed hands its error back: the reproducer
            // fails on it.
            Step::Read { .. } | Step::Transaction { .. } if read_expected_ok => {
                let _ = writeln!(text, "{pad}let result = {expr};");
                let _ = writeln!(
                    text,
                    "{pad}assert!(result.is_ok(), \"the contract expects ok here; Burn gave {{result:?}}\");"
                );
            }
            Step::Read { .. } | Step::Transaction { .. } | Step::Device { .. } => {
                let _ = writeln!(text, "{pad}let _ = {expr};");
            }
            Step::Backward { out, .. } => match self.trace.steps.get(i).map(|r| &r.outcome) {
                Some(Outcome::Ok { value: Some(_), .. }) => {
                    let _ = writeln!(text, "{pad}let t{out} = {expr}.expect(\"a gradient\");");
                }
                _ => {
                    let _ = writeln!(text, "{pad}let _ = {expr}; // no gradient");
                }
            },
            _ => {
                let out = step.writes().first().copied().unwrap_or_default();
                let _ = writeln!(text, "{pad}let t{out} = {expr};");
            }
        }
        self.call_checks(i, step, (&expr, panicked), &pad);
    }

    /// The check a dtype-contract, reference or model finding at step `i` (written as `expr`)
    /// asks for.
    fn call_checks(&mut self, i: usize, step: &Step, (expr, panicked): (&str, bool), pad: &str) {
        let at = self.asked.at;
        let value = match self.outcome(i) {
            Some(Outcome::Ok { value: Some(v), .. }) => Some(v),
            _ => None,
        };
        if let (Some(f), Some(v)) = (self.asked.dtype.filter(|_| at == Some(i)), value) {
            let out = step.writes().first().copied().unwrap_or_default();
            let _ = writeln!(self.text, "{pad}// {}", without_step(&f.message));
            let _ = writeln!(
                self.text,
                "{pad}assert!(matches!(t{out}.dtype(), {}), \"a {:?} tensor stored as {{:?}}\", t{out}.dtype());",
                dtypes_of(v.kind),
                v.kind
            );
        }
        if let (Some(m), Some(v)) = (
            self.asked.reference.as_ref().filter(|_| at == Some(i)),
            value,
        ) {
            if !self.asked.reference_on_wgpu {
                let check = reference_check(m, v.kind, pad, &format!("t{}", m.slot));
                self.text.push_str(&check);
            }
        }
        if let Some(f) = self.asked.model.filter(|_| at == Some(i)) {
            let expected = expected_outcome(f);
            let _ = writeln!(self.text, "{pad}// {}", contract_words(f));
            if expected.starts_with("panic") && !panicked {
                let expected = outcome_words(expected).replace('"', "'");
                let _ = writeln!(
                    self.text,
                    "{pad}let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {{ let _ = {expr}; }}));"
                );
                let _ = writeln!(
                    self.text,
                    "{pad}assert!(caught.is_err(), \"the contract expects {expected} here; Burn accepted the call\");"
                );
            }
        }
    }

    /// The checks that follow the whole program: a wgpu mirror's reference mismatch runs the
    /// steps again on wgpu, a divergence compares the two backends.
    fn ending(&mut self) {
        let (program, at) = (self.program, self.asked.at);
        if let (Some(m), true, Some(at)) = (&self.asked.reference, self.asked.reference_on_wgpu, at)
        {
            let pad = "    ";
            let mut text = format!("{pad}// The same steps on wgpu:\n");
            if rerun(
                program,
                (at, &self.lits),
                &|k| self.ran(k),
                ("w", "wgpu"),
                &mut text,
            ) {
                if let Some(Outcome::Ok { value: Some(v), .. }) = self.outcome(at) {
                    text.push_str(&reference_check(m, v.kind, pad, &format!("w{}", m.slot)));
                }
            }
            self.text.push_str(&text);
        }
        if let (Some(_), Some(at)) = (self.asked.differential, at) {
            let ran = |k| self.ran(k);
            let check = match (&program.steps[at], self.outcome(at)) {
                (Step::Replay { .. }, Some(Outcome::Ok { outputs, .. })) => {
                    replay_differential_check(program, at, outputs)
                }
                (_, Some(Outcome::Ok { value, .. })) => differential_check(
                    program,
                    (at, &self.lits),
                    &ran,
                    value.as_ref().map(|v| v.kind),
                ),
                _ => differential_check(program, (at, &self.lits), &ran, None),
            };
            self.text.push_str(&check);
        }
    }
}

/// The slots each step of `range` writes that a step after the range reads before writing.
fn exported(program: &Program, start: usize, end: usize, ran: &dyn Fn(usize) -> bool) -> Vec<Slot> {
    let written: BTreeSet<Slot> = (start..end)
        .filter(|i| ran(*i))
        .flat_map(|i| program.steps[i].writes())
        .collect();
    let mut needed = BTreeSet::new();
    let mut rewritten = BTreeSet::new();
    for (i, step) in program.steps.iter().enumerate().skip(end + 1) {
        if !ran(i) {
            continue;
        }
        for s in step.reads() {
            if written.contains(&s) && !rewritten.contains(&s) {
                needed.insert(s);
            }
        }
        rewritten.extend(step.writes());
    }
    needed.into_iter().collect()
}

/// Hands the lines `body` holds from `start` on (one step's) to program thread `thread`: they
/// run in `lanes.on(thread, || { ... })`, which hands back the tensors they define.
fn lend(body: &mut String, start: usize, thread: u8, pad: &str) {
    let lines = body.split_off(start);
    if lines.is_empty() {
        return;
    }
    let defined: Vec<&str> = lines
        .lines()
        .filter_map(|l| l.strip_prefix(pad))
        .filter_map(|l| l.strip_prefix("let "))
        .flat_map(|l| {
            let names = match l.strip_prefix('[') {
                Some(list) => list.split(']').next().unwrap_or_default(),
                None => l.split([' ', ':']).next().unwrap_or_default(),
            };
            names.split(", ").map(str::trim)
        })
        .filter(|n| {
            n.strip_prefix('t')
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    let tuple = match defined.as_slice() {
        [] => String::new(),
        names => format!("({},)", names.join(", ")),
    };
    let head = if tuple.is_empty() {
        String::new()
    } else {
        format!("let {tuple} = ")
    };
    let _ = writeln!(body, "{pad}{head}lanes.on({thread}, || {{");
    for line in lines.lines() {
        let _ = writeln!(body, "    {line}");
    }
    if !tuple.is_empty() {
        let _ = writeln!(body, "{pad}    {tuple}");
    }
    let _ = writeln!(body, "{pad}}});");
}
