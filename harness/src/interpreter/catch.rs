//! Runs one step under `catch_unwind` and records where its panic came from.
//!
//! The payload alone has the message but not the location, so a process-wide panic hook stores
//! the location and thread of a panic raised while a step runs on this thread. Panics outside a
//! step (the harness's own, or a test's assertion) go to the hook that was installed before,
//! which under libFuzzer aborts, and under `cargo test` prints as usual.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe, PanicHookInfo};
use std::sync::{Once, OnceLock};

use super::trace::PanicInfo;

thread_local! {
    static IN_STEP: Cell<bool> = const { Cell::new(false) };
    static LAST: RefCell<Option<PanicInfo>> = const { RefCell::new(None) };
}

/// Called by the hook for every panic raised inside a step, before it unwinds; the fuzz target
/// uses it to abort on findings with a `DEDUP_TOKEN` line.
pub type StepPanicPolicy = fn(&PanicInfo);

static POLICY: OnceLock<StepPanicPolicy> = OnceLock::new();
static INSTALL: Once = Once::new();

/// Installs the hook (once per process), chaining to whatever hook was set before. A policy,
/// if given the first time, sees every step panic before it unwinds.
pub fn install(policy: Option<StepPanicPolicy>) {
    if let Some(policy) = policy {
        let _ = POLICY.set(policy);
    }
    INSTALL.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if IN_STEP.with(Cell::get) {
                let record = record(info);
                if let Some(policy) = POLICY.get() {
                    policy(&record);
                }
                LAST.with(|last| *last.borrow_mut() = Some(record));
            } else {
                previous(info);
            }
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

/// Runs `f`, returning its value or the panic it raised. The panic's class is left empty for
/// `oracles::classify`.
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, PanicInfo> {
    install(None);
    let was_in_step = IN_STEP.with(|s| s.replace(true));
    LAST.with(|last| last.borrow_mut().take());
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    IN_STEP.with(|s| s.set(was_in_step));
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
