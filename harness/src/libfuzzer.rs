//! The glue the libFuzzer target calls: decode, [`crate::check`], and abort with a
//! `DEDUP_TOKEN` line on a finding, so libFuzzer's crash buckets are the harness's signatures.

use std::sync::OnceLock;

use crate::oracles::{self, Policy};
use crate::program::{Backends, Program, RunLimits};
use crate::{check, config, interpreter, Session, Verdict};

/// One libFuzzer target of `fuzz/`: what its inputs decode for. The one place that says it, read
/// by the targets' `init`, by triage (an artifact is decoded and run with its own target's
/// backends) and by the repro commands the reports print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// Its name: the binary in `fuzz/fuzz_targets/`, the artifact folder's name.
    pub name: &'static str,
    /// The backends its inputs decode and run on.
    pub backends: Backends,
}

/// Every fuzz target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "dispatch_ops",
        backends: Backends::FLEX_CAPTURE,
    },
    Target {
        name: "dispatch_ops_wgpu",
        backends: Backends::WITH_WGPU,
    },
];

/// The target named `name`, or the error naming every target.
pub fn target(name: &str) -> anyhow::Result<Target> {
    TARGETS
        .iter()
        .copied()
        .find(|t| t.name == name)
        .ok_or_else(|| {
            let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
            anyhow::anyhow!(
                "unknown fuzz target `{name}` (targets: {})",
                names.join(", ")
            )
        })
}

impl Target {
    /// The environment a command needs to decode and run this target's artifacts as it does
    /// (`DISPATCH_FUZZ_BACKENDS=flex,capture,wgpu` for the wgpu target), as shell words; empty
    /// for the plain target.
    pub fn repro_env(&self) -> &'static str {
        if self.backends.wgpu {
            "DISPATCH_FUZZ_BACKENDS=flex,capture,wgpu "
        } else {
            ""
        }
    }

    /// Turns on what the target's inputs run on in this process (wgpu for the wgpu target, on
    /// `session`'s adapter): `Err` says why it cannot be had here.
    pub fn start(&self, session: &Session) -> Result<(), String> {
        if self.backends.wgpu {
            interpreter::wgpu::adapter(session.backends.adapter)?;
        }
        Ok(())
    }
}

/// A target's libFuzzer settings, as `fuzz/<target>.options` keeps them once for every runner
/// (the nightly job, ClusterFuzzLite, the smoke run, triage): the dictionary and the limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibFuzzerOptions {
    /// `dict`: the dictionary's file name, beside the options file.
    pub dict: Option<String>,
    /// `timeout` and `rss_limit_mb`.
    pub limits: RunLimits,
}

impl LibFuzzerOptions {
    /// Parses an options file (`[libfuzzer]`, then `key = value` lines; `#` starts a comment).
    /// `timeout` and `rss_limit_mb` are required: a runner must not fall back to libFuzzer's
    /// own defaults (1,200 s, 2,048 MB) by a typo.
    pub fn parse(text: &str) -> anyhow::Result<LibFuzzerOptions> {
        let (mut dict, mut timeout, mut rss) = (None, None, None);
        let mut in_section = false;
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if line.starts_with('[') {
                in_section = line == "[libfuzzer]";
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                anyhow::bail!("not a `key = value` line: {line}");
            };
            if !in_section {
                continue;
            }
            let (key, value) = (key.trim(), value.trim());
            let number = || {
                value
                    .parse::<u64>()
                    .map_err(|_| anyhow::anyhow!("`{key}` is not a whole number: {value}"))
            };
            match key {
                "dict" => dict = Some(value.to_string()),
                "timeout" => timeout = Some(number()?),
                "rss_limit_mb" => rss = Some(number()?),
                _ => {}
            }
        }
        match (timeout, rss) {
            (Some(timeout_s), Some(rss_limit_mb)) => Ok(LibFuzzerOptions {
                dict,
                limits: RunLimits {
                    timeout_s,
                    rss_limit_mb,
                },
            }),
            _ => anyhow::bail!("the [libfuzzer] section needs both `timeout` and `rss_limit_mb`"),
        }
    }

    /// Reads and parses an options file.
    pub fn load(path: &std::path::Path) -> anyhow::Result<LibFuzzerOptions> {
        use anyhow::Context as _;
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("{}", path.display()))
    }
}

/// The session the target's `init` built: libFuzzer's callback takes the input alone, so the
/// glue keeps the one session its process runs, as the CLI keeps one in its loop.
static SESSION: OnceLock<Session> = OnceLock::new();

/// The session this process's inputs run in: the one `init` built (the wgpu target's own
/// backends, over `DISPATCH_FUZZ_BACKENDS`), or the switches' when `init` has not run.
fn session() -> &'static Session {
    SESSION.get_or_init(Session::from_config)
}

/// The backends this process's inputs decode for.
fn target_backends() -> Backends {
    session().backends
}

/// One fuzz input as the typed targets take it: the program the bytes decode to for the
/// target's backends (exactly what `Program::from_fuzz_bytes` decodes), whose `Debug` is the
/// program's listing, so `cargo fuzz fmt` and libFuzzer's `RUST_LIBFUZZER_DEBUG_PATH` print a
/// program a person reads.
pub struct FuzzInput(pub Program);

impl<'a> arbitrary::Arbitrary<'a> for FuzzInput {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Program::arbitrary_on(u, target_backends()).map(FuzzInput)
    }

    fn arbitrary_take_rest(mut u: arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Self::arbitrary(&mut u)
    }
}

impl std::fmt::Debug for FuzzInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "// {} steps\n{}", self.0.steps.len(), self.0)
    }
}

/// What the fuzz targets run for each input: checks the decoded program and aborts with a
/// `DEDUP_TOKEN` line on a finding (or a harness error), as libFuzzer expects of a crash. Call
/// [`init`] (or [`init_wgpu`]) once first.
pub fn run(program: &Program) {
    match check(session(), program) {
        Ok(Verdict {
            finding: Some(finding),
            ..
        }) => {
            report(&finding.signature.to_string(), &finding.message, program);
            if !config::get().no_abort {
                std::process::abort();
            }
        }
        Ok(_) => {}
        // The harness's own failure always stops the run, whatever DISPATCH_FUZZ_NO_ABORT says.
        Err(error) => {
            report("harness-error", &format!("{error:#}"), program);
            std::process::abort();
        }
    }
}

fn report(signature: &str, message: &str, program: &Program) {
    eprintln!("==dispatch-fuzz== finding: {message}");
    eprintln!("==dispatch-fuzz== program:\n{program}");
    eprintln!("DEDUP_TOKEN: {signature}");
}

/// Installs the panic hook the fuzz target needs: catalogued panics inside a step unwind into
/// the interpreter; a panic that is a finding under the policy aborts at once with its
/// `DEDUP_TOKEN`, so libFuzzer records the crash with the panic's own stack. A malformed
/// `DISPATCH_FUZZ_*` switch stops the process here, before any input runs.
pub fn init() {
    init_with(None);
}

/// [`init`] for the target named `name` in [`TARGETS`].
#[cfg(feature = "wgpu")]
fn init_target(name: &str) {
    let backends = target(name)
        .map(|t| t.backends)
        .unwrap_or_else(|e| panic!("{e}"));
    init_with(backends.wgpu.then_some(backends));
}

/// [`init`] for the wgpu target: its inputs decode and run wgpu steps too, whatever
/// `DISPATCH_FUZZ_BACKENDS` says (ClusterFuzzLite cannot set environment variables per target).
#[cfg(feature = "wgpu")]
pub fn init_wgpu() {
    init_target("dispatch_ops_wgpu");
}

fn init_with(backends: Option<Backends>) {
    if let Err(error) = config::try_get() {
        eprintln!("==dispatch-fuzz== {error}");
        std::process::exit(2);
    }
    let from_switches = Session::from_config();
    let _ = SESSION.set(match backends {
        Some(backends) => from_switches.on(backends),
        None => from_switches,
    });
    fn policy(panic: &interpreter::PanicInfo) {
        let decision = hook_decision(panic, &session().policy);
        if let HookDecision::Finding(signature) | HookDecision::HarnessError(signature) = &decision
        {
            eprintln!(
                "==dispatch-fuzz== panic at {}: {}",
                panic.location.as_deref().unwrap_or("?"),
                panic.message
            );
            eprintln!("DEDUP_TOKEN: {signature}");
            if matches!(decision, HookDecision::HarnessError(_)) || !config::get().no_abort {
                std::process::abort();
            }
        }
    }
    interpreter::install_panic_hook(Some(policy));
}

/// What the fuzz target's panic hook decides about one caught panic, before it unwinds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookDecision {
    /// A catalogued panic: it unwinds into the interpreter.
    Go,
    /// A finding under the policy, with its signature: abort.
    Finding(String),
    /// The harness's own panic: always abort.
    HarnessError(String),
}

/// The hook's decision for `panic` under `policy`; [`crate::check`] must reach a
/// finding (or a harness error) whenever this says so, and a test holds it to that.
pub fn hook_decision(panic: &interpreter::PanicInfo, policy: &Policy) -> HookDecision {
    let mut panic = panic.clone();
    // The harness's own panic keeps its class: it is a harness error, never Burn's.
    if panic.class.is_empty() {
        panic.class = oracles::class_of(&panic);
    }
    if panic.class == interpreter::HARNESS_ERROR {
        HookDecision::HarnessError(oracles::signature(&panic).to_string())
    } else if oracles::may_be_chosen_dtype_mix(&panic.message) {
        // Whether the program chose the dtypes that differ is `check`'s to say.
        HookDecision::Go
    } else if policy.is_finding(&panic.class) {
        let signature = oracles::signature(&panic);
        // A panic a reviewed case stores is a known finding: check counts it, the run goes on.
        // One of a class a root-cause predicate names is check's to judge, where the policy
        // lets it be known at all: the predicate reads the step's facts (its entry and operand
        // dtype), which a hook does not have.
        let known = policy.known(&panic.class, &signature, &oracles::Facts::default());
        if known.is_some()
            || (policy.may_know(&panic.class)
                && oracles::known::predicate_names_class(&panic.class))
        {
            HookDecision::Go
        } else {
            HookDecision::Finding(signature.to_string())
        }
    } else {
        HookDecision::Go
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_of_a_class_a_predicate_names_goes_on_to_check_unless_the_policy_names_its_class() {
        // The I64 sum overflow, as core reports it: its case's predicate needs the step's
        // facts, so the hook leaves it to check; naming the class makes it a finding at once.
        let panic = interpreter::PanicInfo {
            message: "attempt to add with overflow".into(),
            location: Some("/rustc/x/library/core/src/iter/traits/accum.rs:149:1".into()),
            thread: None,
            class: "flex-int-sum-overflow".into(),
        };
        assert_eq!(hook_decision(&panic, &Policy::default()), HookDecision::Go);
        let named = Policy::parse("flex-int-sum-overflow");
        assert!(matches!(
            hook_decision(&panic, &named),
            HookDecision::Finding(_)
        ));
        let known = Policy::parse("known,flex-int-sum-overflow");
        assert!(matches!(
            hook_decision(&panic, &known),
            HookDecision::Finding(_)
        ));
    }

    #[test]
    fn an_options_file_gives_its_dictionary_and_limits_and_a_missing_limit_is_an_error() {
        let text = "# comment\n[libfuzzer]\ndict = d.dict\ntimeout = 10\nrss_limit_mb = 2560\n";
        let options = LibFuzzerOptions::parse(text).unwrap();
        assert_eq!(options.dict.as_deref(), Some("d.dict"));
        assert_eq!(
            options.limits,
            RunLimits {
                timeout_s: 10,
                rss_limit_mb: 2560
            }
        );
        assert!(LibFuzzerOptions::parse("[libfuzzer]\ntimeout = 10\n").is_err());
        assert!(LibFuzzerOptions::parse("[libfuzzer]\ntimeout = ten\nrss_limit_mb = 1\n").is_err());
    }

    #[test]
    fn every_target_has_an_options_file_with_its_limits() {
        for target in TARGETS {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join(format!("../fuzz/{}.options", target.name));
            LibFuzzerOptions::load(&path).unwrap();
        }
    }
}
