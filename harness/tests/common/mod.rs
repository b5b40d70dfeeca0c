//! Helpers shared by the integration tests: paths into the repository, program loading, and
//! the trials that need wgpu (each holds on adapter classes, and runs where one is found).

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use dispatch_fuzz::interpreter::wgpu::{self, Api, Placement};
use dispatch_fuzz::program::{AdapterChoice, AdapterClass, Backends, Program, ProgramFile};
use dispatch_fuzz::Session;
use libtest_mimic::{Arguments, Completion, Failed, Trial};

/// The session the CPU tests check in: Flex and capture, every oracle, the default policy,
/// whatever this process's switches say.
pub fn cpu() -> Session {
    Session::new(Backends::FLEX_CAPTURE)
}

/// [`cpu`] with wgpu too, on the adapter this process's switches choose: the session of the
/// tests that run on wgpu.
pub fn on_wgpu() -> Session {
    Session::new(Backends::WITH_WGPU.with_adapter(adapter_choice()))
}

/// The adapter this process's switches choose (`DISPATCH_FUZZ_WGPU`; a child pinned to an API
/// gets it there).
pub fn adapter_choice() -> AdapterChoice {
    dispatch_fuzz::config::get().backends.adapter
}

/// The wgpu adapter on [`adapter_choice`], or why there is none: brings the device up.
pub fn adapter() -> Result<wgpu::AdapterInfo, String> {
    wgpu::adapter(adapter_choice())
}

/// The adapter classes a wgpu trial holds on; none: any adapter will do.
pub type Classes = fn() -> Vec<AdapterClass>;

/// A trial of the harness's own mechanics: any adapter.
pub const ANY: Classes = Vec::new;

/// A trial checked on both of Mesa's llvmpipe classes (Vulkan, which CI installs, and GL, what a
/// machine without a Vulkan driver has): it rests on their numerics or on a bug they show.
pub const LLVMPIPE: Classes = || vec![AdapterClass::vulkan_llvmpipe(), AdapterClass::gl_llvmpipe()];

/// A trial that holds on Vulkan/llvmpipe only (it needs I64 kernels, which GL lacks).
pub const VULKAN_LLVMPIPE: Classes = || vec![AdapterClass::vulkan_llvmpipe()];

/// A trial that holds on GL/llvmpipe only (it needs an adapter without SHADER_INT64).
pub const GL_LLVMPIPE: Classes = || vec![AdapterClass::gl_llvmpipe()];

/// A trial that needs wgpu and holds on `classes` (any adapter when empty): run in this process
/// when its adapter fits, in a child of this test binary pinned to the graphics API of a class
/// it holds on when that is another API (Mesa serves Vulkan and GL on one machine), else
/// ignored with why ([`elsewhere`]).
pub fn wgpu_trial(
    name: &str,
    classes: Vec<AdapterClass>,
    test: impl FnOnce() -> Result<(), Failed> + Send + 'static,
) -> Trial {
    // `stringify!` of a path spaces it out.
    let name = name.replace(' ', "");
    Trial::ignorable_test(name.clone(), move || match placement(&classes) {
        Placement::Here => test().map(|()| Completion::Completed),
        Placement::Pinned(api, why) => pinned_trial(&name, api, why),
        Placement::Nowhere(reason) => elsewhere(reason),
    })
}

/// Where a trial holding on `classes` runs, on the switches' adapter choice (which may pin the
/// API).
pub fn placement(classes: &[AdapterClass]) -> Placement {
    wgpu::placement(adapter_choice(), classes)
}

/// Runs trial `name` alone in a child of this test binary whose wgpu is pinned to `api` (this
/// process's adapter does not fit, for `why`), and reads its outcome from the child's listing
/// (`test NAME ... ok`, `... ignored (reason)`).
pub fn pinned_trial(name: &str, api: Api, why: String) -> Result<Completion, Failed> {
    let exe = std::env::current_exe().map_err(|e| format!("no test binary: {e}"))?;
    let required = dispatch_fuzz::config::get().wgpu_required;
    let output = wgpu::pinned_command(&exe, adapter_choice().pinned_to(api), required)
        .args([name, "--exact", "--test-threads", "1", "--color", "never"])
        .output()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let shown = format!(
        "in a process with wgpu pinned to {}:\n{stdout}{}",
        api.name(),
        String::from_utf8_lossy(&output.stderr)
    );
    if !output.status.success() {
        return Err(shown.into());
    }
    let outcome = stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("test {name} ")))
        .map(|rest| rest.trim_start_matches(['.', ' ']).to_string());
    match outcome.as_deref() {
        Some("ok") => Ok(Completion::Completed),
        // The child found no adapter of the API either (under `required` it failed instead).
        Some(ignored) if ignored.starts_with("ignored") => Ok(Completion::ignored_with(format!(
            "{why}, and no {} adapter",
            api.name()
        ))),
        _ => Err(format!("no outcome for {name} {shown}").into()),
    }
}

/// Runs `trials` as the test binary's `main` (libtest-mimic: cargo test's own arguments work).
pub fn run_trials(trials: Vec<Trial>) -> std::process::ExitCode {
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}

/// The outcome of a wgpu trial this machine cannot judge (`reason` says why: no adapter, or
/// another adapter class than the trial holds on): ignored with the reason, or a failure under
/// `DISPATCH_FUZZ_WGPU=required`, which a machine set up for the whole suite (CI) sets.
pub fn elsewhere(reason: String) -> Result<Completion, Failed> {
    if dispatch_fuzz::config::get().wgpu_required {
        Err(format!("{reason} (DISPATCH_FUZZ_WGPU=required)").into())
    } else {
        Ok(Completion::ignored_with(reason))
    }
}

/// The repository root (the workspace above `harness/`).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A program from `corpus/dispatch_ops/programs/NAME.json`.
pub fn corpus_program(name: &str) -> Program {
    let path = repo().join(format!("corpus/dispatch_ops/programs/{name}.json"));
    ProgramFile::load(&path)
        .unwrap_or_else(|e| panic!("corpus program {name} does not load: {e}"))
        .program()
}

/// A program from inline JSON steps.
pub fn program(json: &str) -> Program {
    ProgramFile::parse(&format!("{{\"steps\": {json}}}"), "<inline>")
        .expect("inline program parses")
        .program()
}

/// What [`record`] saw, with the thread that ran the program (a threaded program's steps panic
/// on its program threads).
static SEEN: std::sync::Mutex<
    Vec<(
        std::thread::ThreadId,
        dispatch_fuzz::libfuzzer::HookDecision,
    )>,
> = std::sync::Mutex::new(Vec::new());

/// [`SEEN`]'s decisions for programs `runner` ran, taken out.
fn take_seen(runner: std::thread::ThreadId) -> Vec<dispatch_fuzz::libfuzzer::HookDecision> {
    let mut seen = SEEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (mine, others) = std::mem::take(&mut *seen)
        .into_iter()
        .partition(|(r, _)| *r == runner);
    *seen = others;
    mine.into_iter().map(|(_, d)| d).collect::<Vec<_>>()
}

/// A panic-hook policy that records what the fuzz target would decide for each caught panic
/// (install it with `interpreter::install_panic_hook(Some(record))`).
pub fn record(panic: &dispatch_fuzz::interpreter::PanicInfo) {
    let policy = dispatch_fuzz::oracles::Policy::default();
    let decision = dispatch_fuzz::libfuzzer::hook_decision(panic, &policy);
    let runner = dispatch_fuzz::interpreter::program_runner();
    SEEN.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push((runner, decision));
}

/// The fuzz target's decisions (from [`record`]) and `check`'s verdict for one program.
pub fn both(
    program: &Program,
) -> (
    Vec<dispatch_fuzz::libfuzzer::HookDecision>,
    anyhow::Result<dispatch_fuzz::Verdict>,
) {
    let me = std::thread::current().id();
    take_seen(me);
    let verdict = dispatch_fuzz::check(&cpu(), program);
    (take_seen(me), verdict)
}

/// The panics `check` recorded: in the trace (steps and side panics), or as an oracle's
/// violation carrying the panic's location (a captured graph whose replay panicked).
pub fn recorded_panics(verdict: &dispatch_fuzz::Verdict) -> usize {
    let as_violations = verdict
        .oracles
        .violations
        .iter()
        .filter(|v| v.location.is_some())
        .count();
    verdict.trace.panics().count() + as_violations
}

/// Every Rust source file under `dir`, at any depth.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    files
}

/// The source of module `path` (`src/oracles/model`, from the harness's folder): its file and
/// every file under its folder, test modules (`tests.rs`) and the files named in `except` aside.
pub fn module_source(path: &str, except: &[&str]) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join(format!("{path}.rs"))];
    let dir = root.join(path);
    if dir.is_dir() {
        files.extend(rust_files(&dir));
    }
    files
        .iter()
        .filter(|f| !f.ends_with("tests.rs") && !except.iter().any(|e| f.ends_with(e)))
        .map(|f| std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display())))
        .collect()
}
