//! Runs Burn calls under `catch_unwind`, records where each panic came from, and keeps every
//! panic and error value that nobody else records in a per-run journal, so none is dropped.
//!
//! The payload alone has the message but not the location, so a process-wide panic hook stores
//! the location and thread of a panic raised while a Burn call runs on this thread. Inside a
//! Burn call the harness may run its own code again (a capture scope's closure walks the scope's
//! steps): [`harness_code`] marks it, and a panic there is the harness's, class
//! [`HARNESS_ERROR`], never Burn's. Panics outside any call (a test's assertion) go to the hook
//! that was installed before, which under libFuzzer aborts, and under `cargo test` prints.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe, PanicHookInfo};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Once, OnceLock};

use super::trace::{PanicInfo, SideError, SidePanic};

/// Class of a panic raised by the harness's own code while it ran inside a Burn call.
pub const HARNESS_ERROR: &str = "harness-error";

thread_local! {
    /// A Burn call is running on this thread (not harness code inside it).
    static IN_BURN: Cell<bool> = const { Cell::new(false) };
    /// Calls to `catch` in progress on this thread.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    static LAST: RefCell<Option<PanicInfo>> = const { RefCell::new(None) };
    static JOURNAL: RefCell<Vec<SidePanic>> = const { RefCell::new(Vec::new()) };
    static ERRORS: RefCell<Vec<SideError>> = const { RefCell::new(Vec::new()) };
    static SITE: Cell<&'static str> = const { Cell::new("program") };
    static STEP: Cell<Option<usize>> = const { Cell::new(None) };
    /// This thread runs the harness (it has made a Burn call through [`catch`]).
    static HARNESS_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Burn calls under [`catch`] in progress on any thread: a panic on a thread of Burn's own (a
/// cubecl device thread) while one runs belongs to that call. Each harness thread counts its
/// calls in a slot of its own cache line: every Burn call counts itself in and out, and one
/// counter that every worker of `fuzz --jobs` shared moved its line between cores twice a call
/// (perf: the code that inlines it took half as many samples again with 2 workers as with 1).
/// Only a foreign thread's panic reads them all.
static BURN_CALLS: [CallSlot; CALL_SLOTS] = [const { CallSlot(AtomicUsize::new(0)) }; CALL_SLOTS];

/// How many slots [`BURN_CALLS`] has: threads past that share them, which stays correct.
const CALL_SLOTS: usize = 64;

/// One [`BURN_CALLS`] slot, alone on its cache line (128 bytes: a pair of lines that the
/// adjacent-line prefetcher fetches together).
#[repr(align(128))]
struct CallSlot(AtomicUsize);

/// The next thread's slot in [`BURN_CALLS`].
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's slot in [`BURN_CALLS`].
    static CALL_SLOT: usize = NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % CALL_SLOTS;
}

/// Whether a Burn call under [`catch`] is in progress on any thread.
fn burn_call_running() -> bool {
    BURN_CALLS.iter().any(|s| s.0.load(Ordering::SeqCst) > 0)
}

/// Called by the hook for every panic raised inside a Burn call (class still empty) or by the
/// harness inside one (class [`HARNESS_ERROR`]), before it unwinds; the fuzz target uses it to
/// abort on findings with a `DEDUP_TOKEN` line.
pub type StepPanicPolicy = fn(&PanicInfo);

static POLICY: OnceLock<StepPanicPolicy> = OnceLock::new();

/// Called with each step's index as the run starts it: what a parent process watching a run
/// that may hang reads (`dispatch-fuzz run --progress`), to name the step that never finished.
pub type StepProgress = fn(usize);

static PROGRESS: OnceLock<StepProgress> = OnceLock::new();

/// Installs the progress callback (once per process).
pub fn install_progress(progress: StepProgress) {
    let _ = PROGRESS.set(progress);
}
static INSTALL: Once = Once::new();

/// Installs the hook (once per process), chaining to whatever hook was set before. A policy,
/// if given the first time, sees every caught panic before it unwinds.
pub fn install(policy: Option<StepPanicPolicy>) {
    if let Some(policy) = policy {
        let _ = POLICY.set(policy);
    }
    INSTALL.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let in_catch = DEPTH.with(Cell::get) > 0;
            // A thread of Burn's own panicking while a Burn call runs (cubecl's device thread
            // raising the stored attention-backward bug): cubecl catches it there and hands it
            // to the caller, whose `catch` records it. The hook before ours (libFuzzer's, which
            // aborts) must not see it, or a fuzz target dies where `check` goes on.
            let foreign = !HARNESS_THREAD.with(Cell::get) && burn_call_running();
            if !in_catch && foreign {
                let at = info.location().map(|l| l.to_string()).unwrap_or_default();
                let name = std::thread::current()
                    .name()
                    .unwrap_or("<unnamed>")
                    .to_string();
                eprintln!(
                    "thread '{name}' panicked at {at} during a Burn call: {}",
                    payload_message(info.payload())
                );
                return;
            }
            if !in_catch {
                return previous(info);
            }
            let mut record = record(info);
            if !IN_BURN.with(Cell::get) {
                record.class = HARNESS_ERROR.to_string();
            }
            if let Some(policy) = POLICY.get() {
                policy(&record);
            }
            LAST.with(|last| *last.borrow_mut() = Some(record));
        }));
    });
}

fn payload_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic payload>".to_string()
    }
}

fn record(info: &PanicHookInfo<'_>) -> PanicInfo {
    PanicInfo {
        message: payload_message(info.payload()),
        location: info
            .location()
            .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column())),
        thread: std::thread::current().name().map(str::to_string),
        class: String::new(),
    }
}

/// Sets a thread-local flag for as long as it lives, restoring the old value on drop (an unwind
/// included).
struct Flag<T: Copy + 'static> {
    key: &'static std::thread::LocalKey<Cell<T>>,
    old: T,
}

impl<T: Copy + 'static> Flag<T> {
    fn set(key: &'static std::thread::LocalKey<Cell<T>>, value: T) -> Self {
        Flag {
            key,
            old: key.with(|c| c.replace(value)),
        }
    }
}

impl<T: Copy + 'static> Drop for Flag<T> {
    fn drop(&mut self) {
        self.key.with(|c| c.set(self.old));
    }
}

/// One Burn call in progress, counted in this thread's slot of [`BURN_CALLS`] until dropped
/// (an unwind included).
struct BurnCall(&'static AtomicUsize);

impl BurnCall {
    fn start() -> BurnCall {
        let slot = &BURN_CALLS[CALL_SLOT.with(|k| *k)].0;
        slot.fetch_add(1, Ordering::SeqCst);
        BurnCall(slot)
    }
}

impl Drop for BurnCall {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs the Burn call `f`, returning its value or the panic it raised, which the caller must
/// record (a step's outcome, a violation) or hand to [`note`]. The class is left empty for
/// `oracles::classify`, except for the harness's own panics ([`HARNESS_ERROR`]).
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, PanicInfo> {
    install(None);
    HARNESS_THREAD.with(|h| h.set(true));
    let _calls = BurnCall::start();
    let _depth = Flag::set(&DEPTH, DEPTH.with(Cell::get) + 1);
    let _burn = Flag::set(&IN_BURN, true);
    LAST.with(|last| last.borrow_mut().take());
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    result.map_err(|payload| {
        // A panic on another thread (a Flex worker) reaches us through its payload only.
        LAST.with(|last| last.borrow_mut().take())
            .unwrap_or_else(|| PanicInfo {
                message: payload_message(payload.as_ref()),
                location: None,
                thread: None,
                class: String::new(),
            })
    })
}

/// Runs harness code inside a Burn call (a capture scope's closure): a panic in it is the
/// harness's, not Burn's, wherever it is caught.
pub fn harness_code<T>(f: impl FnOnce() -> T) -> T {
    let _harness = Flag::set(&IN_BURN, false);
    f()
}

/// [`catch`] for a call whose panic nobody else records: the panic goes to the journal.
pub fn attempt<T>(f: impl FnOnce() -> T) -> Option<T> {
    catch(f).map_err(note).ok()
}

/// Records `panic` in this run's journal, with the step and site it happened at.
pub fn note(panic: PanicInfo) {
    let entry = SidePanic {
        step: STEP.with(Cell::get),
        site: SITE.with(Cell::get).into(),
        panic,
    };
    JOURNAL.with(|j| j.borrow_mut().push(entry));
}

/// Records an error value Burn returned where nothing else records it (a mirror's replay, a
/// best-effort read), with the step and site it happened at.
pub fn note_error(error: &str, message: String) {
    let entry = SideError {
        step: STEP.with(Cell::get),
        site: SITE.with(Cell::get).into(),
        error: error.to_string(),
        message,
    };
    ERRORS.with(|e| e.borrow_mut().push(entry));
}

/// Runs `f` with panics it notes labelled `site` (`eager mirror`, `wgpu replay`, ...).
pub fn at_site<T>(site: &'static str, f: impl FnOnce() -> T) -> T {
    let _site = Flag::set(&SITE, site);
    f()
}

/// Marks step `step` (or none) as the one running, for the journal.
pub(super) fn set_step(step: Option<usize>) {
    if let (Some(index), Some(progress)) = (step, PROGRESS.get()) {
        progress(index);
    }
    STEP.with(|s| s.set(step));
}

/// What a thread's journal noted: side panics and side errors.
pub(super) type Journal = (Vec<SidePanic>, Vec<SideError>);

/// Starts a run's journal, dropping anything left from an earlier one.
pub(super) fn journal_start() {
    JOURNAL.with(|j| j.borrow_mut().clear());
    ERRORS.with(|e| e.borrow_mut().clear());
    set_step(None);
}

/// Appends what another program thread's journal noted (see [`journal_take`]).
pub(super) fn journal_extend((panics, errors): Journal) {
    JOURNAL.with(|j| j.borrow_mut().extend(panics));
    ERRORS.with(|e| e.borrow_mut().extend(errors));
}

/// Marks this thread as the harness's own (a program thread), so a panic raised on it outside
/// a Burn call is never taken for one of Burn's device threads.
pub(super) fn mark_harness_thread() {
    HARNESS_THREAD.with(|h| h.set(true));
}

/// The run's journal: the panics and the error values it noted.
pub(super) fn journal_take() -> Journal {
    (
        JOURNAL.with(|j| std::mem::take(&mut *j.borrow_mut())),
        ERRORS.with(|e| std::mem::take(&mut *e.borrow_mut())),
    )
}
