//! The threads a threaded program runs on: program thread 0 is the thread that runs the
//! program, threads 1-3 are lanes made once per such thread, sharing its capture-device pool.
//!
//! A step runs on another thread by [`Lanes::install`]: the closure goes to that thread's queue
//! and the caller blocks on its own queue, running what is handed to it meanwhile (a scope's
//! closure open on one thread hands steps to another and gets steps handed back), until the
//! closure's completion arrives. In the serial schedule exactly one thread works at a time, in
//! the schedule's order; the others sleep on a condition variable. Collide ([`Lanes::join`])
//! runs two threads' steps at once. rayon's `install` did the same, but its waiting workers
//! spin before they sleep, which on two cores made a threaded program four times as slow, and a
//! rayon worker running a program (`fuzz --jobs`) would steal its pool's other programs while
//! it waited.

use std::cell::{Cell, OnceCell};
use std::collections::VecDeque;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::ThreadId;

use anyhow::{anyhow, Result};

use super::{catch, pool};
use crate::program::limits::MAX_THREADS;

/// Stack of a lane: a lane waiting for another runs the steps handed back on top of its own
/// stack, a scope's closure and Burn's calls each time (2 MiB overflowed on a debug build).
const LANE_STACK: usize = 64 << 20;

/// What a thread's queue holds.
enum Message {
    /// A closure to run here.
    Run(Box<dyn FnOnce() + Send + 'static>),
    /// A closure this thread is waiting for may have finished: look again.
    Wake,
    /// The lane's owner is gone: the lane ends.
    Quit,
}

/// One thread's queue.
#[derive(Default)]
struct Queue {
    messages: Mutex<VecDeque<Message>>,
    arrived: Condvar,
}

impl Queue {
    fn push(&self, message: Message) {
        self.messages
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(message);
        self.arrived.notify_one();
    }

    /// The next message, sleeping until one arrives. Spinning first (up to 20,000 looks) made
    /// a woken switch cheaper alone but `bench` half as fast on two cores: the spinning thread
    /// took the core the working one needed.
    fn pop(&self) -> Message {
        let mut messages = self.messages.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(message) = messages.pop_front() {
                return message;
            }
            messages = self
                .arrived
                .wait(messages)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Runs what arrives until `done` is set; `false` on `Quit`. Completions are flags, not
    /// messages, because under collide a thread may wait for one closure while running another
    /// that waits for a third, and their completions arrive in any order.
    fn serve_until(&self, done: &AtomicBool) -> bool {
        loop {
            if done.load(Ordering::Acquire) {
                return true;
            }
            match self.pop() {
                Message::Run(job) => job(),
                Message::Wake => {}
                Message::Quit => return false,
            }
        }
    }
}

/// A closure handed to another thread: its result, once `done`.
struct Completion<T> {
    result: Mutex<Option<std::thread::Result<T>>>,
    done: AtomicBool,
}

/// A closure running on another thread, which [`Lanes::wait`] must collect before anything
/// it borrows goes away.
#[must_use = "a handed-on closure must be waited for: it borrows from the caller's frame"]
struct Pending<T> {
    completion: Arc<Completion<T>>,
}

/// The queues of one program-running thread's program threads: 0 its own, 1.. its lanes.
pub struct Lanes {
    queues: Vec<Arc<Queue>>,
}

impl Lanes {
    fn new() -> Result<Self> {
        let devices = pool::devices();
        let driver = std::thread::current().id();
        let queues: Vec<Arc<Queue>> = (0..MAX_THREADS).map(|_| Arc::default()).collect();
        for (k, queue) in queues.iter().enumerate().skip(1) {
            let (queue, devices) = (queue.clone(), devices.clone());
            std::thread::Builder::new()
                .name(format!("program thread {k}"))
                .stack_size(LANE_STACK)
                .spawn(move || {
                    pool::adopt(devices);
                    DRIVER.with(|d| d.set(Some(driver)));
                    catch::mark_harness_thread();
                    let never = AtomicBool::new(false);
                    queue.serve_until(&never);
                })
                .map_err(|e| anyhow!("cannot start program thread {k}: {e}"))?;
        }
        Ok(Lanes { queues })
    }

    /// Hands `f` to program thread `to`; program thread `from` (this thread) is woken when it
    /// has finished. The caller must [`wait`](Self::wait) for it before returning.
    fn send<T: Send>(&self, from: u8, to: u8, f: impl FnOnce() -> T + Send) -> Pending<T> {
        let completion = Arc::new(Completion {
            result: Mutex::new(None),
            done: AtomicBool::new(false),
        });
        let back = self.queues[usize::from(from)].clone();
        let there = completion.clone();
        let job: Box<dyn FnOnce() + Send + '_> = Box::new(move || {
            let value = catch_unwind(AssertUnwindSafe(f));
            *there.result.lock().unwrap_or_else(PoisonError::into_inner) = Some(value);
            there.done.store(true, Ordering::Release);
            back.push(Message::Wake);
        });
        // SAFETY: the job borrows from the caller's frame for less than `'static`. `Pending` is
        // `must_use`, and every caller here waits for it (`wait`, which returns only once `done`
        // is set, after `f` has run and its captures are gone) before its frame ends, so nothing
        // the job borrows is gone while it runs: the lifetime is erased for the queue's type.
        let job: Box<dyn FnOnce() + Send + 'static> = unsafe { std::mem::transmute(job) };
        self.queues[usize::from(to)].push(Message::Run(job));
        Pending { completion }
    }

    /// Waits on program thread `from` (this thread) for `pending`, running what is handed to
    /// this thread meanwhile, and hands back its value; a panic in it is raised again here.
    fn wait<T>(&self, from: u8, pending: Pending<T>) -> T {
        let completion = pending.completion;
        if !self.queues[usize::from(from)].serve_until(&completion.done) {
            unreachable!("only a lane's owner sends Quit, and it is waiting here");
        }
        let result = completion
            .result
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match result {
            Some(Ok(value)) => value,
            Some(Err(panic)) => resume_unwind(panic),
            None => unreachable!("`done` is set after the job stored its result"),
        }
    }

    /// Runs `f` on program thread `to`, from program thread `from` (this thread), and hands
    /// back its value; `from` runs what is handed to it meanwhile. A panic in `f` is raised
    /// again here.
    pub fn install<T: Send>(&self, from: u8, to: u8, f: impl FnOnce() -> T + Send) -> T {
        let pending = self.send(from, to, f);
        self.wait(from, pending)
    }

    /// Runs `there` on program thread `to` and `here` on program thread `from` (this thread)
    /// at the same time, and hands back both values once both have finished (collide). A panic
    /// in either is raised again here, after both have finished.
    pub fn join<A: Send, B>(
        &self,
        from: u8,
        to: u8,
        there: impl FnOnce() -> A + Send,
        here: impl FnOnce() -> B,
    ) -> (A, B) {
        let pending = self.send(from, to, there);
        let b = catch_unwind(AssertUnwindSafe(here));
        let a = self.wait(from, pending);
        match b {
            Ok(b) => (a, b),
            Err(panic) => resume_unwind(panic),
        }
    }
}

impl Drop for Lanes {
    fn drop(&mut self) {
        for queue in self.queues.iter().skip(1) {
            queue.push(Message::Quit);
        }
    }
}

thread_local! {
    static LANES: OnceCell<Lanes> = const { OnceCell::new() };
    /// On a lane: the thread whose programs it runs.
    static DRIVER: Cell<Option<ThreadId>> = const { Cell::new(None) };
}

/// The thread whose program this thread is running a step of: this thread, or, on a program
/// thread, the thread that runs the program (a panic policy that collects per caller needs it).
pub fn program_runner() -> ThreadId {
    DRIVER
        .with(Cell::get)
        .unwrap_or_else(|| std::thread::current().id())
}

/// Calls `f` with this thread's lanes, starting them the first time.
pub fn with<T>(f: impl FnOnce(&Lanes) -> Result<T>) -> Result<T> {
    LANES.with(|cell| {
        if cell.get().is_none() {
            let _ = cell.set(Lanes::new()?);
        }
        f(cell.get().ok_or_else(|| anyhow!("no lanes"))?)
    })
}
