//! The threads a threaded program runs on: program thread 0 is the thread that runs the
//! program, threads 1-3 are lanes made once per such thread, sharing its capture-device pool.
//!
//! A step runs on another thread by [`Lanes::install`]: the closure goes to that thread's queue
//! and the caller blocks on its own queue, running what is handed to it meanwhile (a scope's
//! closure open on one thread hands steps to another and gets steps handed back), until the
//! closure's completion arrives. Exactly one thread works at a time, in the schedule's order;
//! the others sleep on a condition variable. rayon's `install` did the same, but its waiting
//! workers spin before they sleep, which on two cores made a threaded program four times as
//! slow, and a rayon worker running a program (`fuzz --jobs`) would steal its pool's other
//! programs while it waited.

use std::cell::{Cell, OnceCell};
use std::collections::VecDeque;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
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
    /// The closure this thread handed on has finished.
    Done,
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

    /// Runs what arrives until a `Done` does; `false` on `Quit`.
    fn serve(&self) -> bool {
        loop {
            match self.pop() {
                Message::Run(job) => job(),
                Message::Done => return true,
                Message::Quit => return false,
            }
        }
    }
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
                    // A `Done` never reaches an idle lane: each answers a wait inside a job.
                    while queue.serve() {}
                })
                .map_err(|e| anyhow!("cannot start program thread {k}: {e}"))?;
        }
        Ok(Lanes { queues })
    }

    /// Runs `f` on program thread `to`, from program thread `from` (this thread), and hands
    /// back its value; `from` runs what is handed to it meanwhile. A panic in `f` is raised
    /// again here.
    pub fn install<T: Send>(&self, from: u8, to: u8, f: impl FnOnce() -> T + Send) -> T {
        let mut result: Option<std::thread::Result<T>> = None;
        let slot = SendPtr(&mut result as *mut Option<std::thread::Result<T>>);
        let back = self.queues[usize::from(from)].clone();
        let job: Box<dyn FnOnce() + Send + '_> = Box::new(move || {
            let slot = slot;
            let value = catch_unwind(AssertUnwindSafe(f));
            // SAFETY: the caller waits below until `Done` arrives, which this job sends only
            // after this write, so `result` outlives it and nothing else touches it meanwhile;
            // the queue's mutex orders the write before the caller's read.
            unsafe { *slot.0 = Some(value) };
            back.push(Message::Done);
        });
        // SAFETY: the job borrows from this frame for less than `'static`, and this function
        // returns only once the job has run to its end (`Done`), so nothing it borrows is gone
        // while it runs: the lifetime is erased for the queue's type alone.
        let job: Box<dyn FnOnce() + Send + 'static> = unsafe { std::mem::transmute(job) };
        self.queues[usize::from(to)].push(Message::Run(job));
        if !self.queues[usize::from(from)].serve() {
            unreachable!("only a lane's owner sends Quit, and it is waiting here");
        }
        match result.take() {
            Some(Ok(value)) => value,
            Some(Err(panic)) => resume_unwind(panic),
            None => unreachable!("Done arrives after the job stored its result"),
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

/// A raw pointer the job may carry to another thread (see the SAFETY notes in `install`).
struct SendPtr<T>(*mut T);

// SAFETY: the pointee is written by exactly one thread while its owner waits for it.
unsafe impl<T: Send> Send for SendPtr<T> {}

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
