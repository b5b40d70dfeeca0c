//! The walk of a program's steps over its threads: each step run on the program thread that
//! names it, with the run's state handed between them, in the serial schedule or under collide.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use anyhow::{anyhow, Result};
use burn::tensor::TensorId;

use super::{complete_with, harness_panic, Handle, Run, UNWIND_PAYLOAD};
use crate::interpreter::catch::{self, catch, harness_code, Journal};
use crate::interpreter::faults::ThreadFaults;
use crate::interpreter::lanes::Lanes;
use crate::interpreter::pool;
use crate::interpreter::trace::Outcome;
use crate::program::{DeviceRef, ExitForm, Program, Slot, Step};

/// A closure handed to another program thread, with the walk it runs in there.
struct Handed<'a, 'p, 'h, F> {
    there: Walk<'a, 'p, 'h>,
    f: F,
}

impl<'a, 'p, 'h, F: FnOnce(&Walk<'a, 'p, 'h>) -> Result<()>> Handed<'a, 'p, 'h, F> {
    /// Runs it on this thread, the thread it was handed to: the planted faults taken on, the
    /// journal it noted handed back with its result.
    fn run(self) -> (Result<()>, Journal) {
        self.there.test_faults.plant();
        let result = (self.f)(&self.there);
        (result, catch::journal_take())
    }
}

/// How long a planted racy scope waits between its start and its registration.
const RACY_WINDOW: std::time::Duration = std::time::Duration::from_millis(2);

/// The run's state, which the program's threads hand to one another: a step runs with the lock
/// held; in the serial schedule only one thread works at a time, the one the schedule names.
pub(super) struct HandedRun<'p, 'h> {
    pub(super) state: Mutex<Exclusive<Run<'p, 'h>>>,
    /// Threads between the start of a scope and its closure's first line, counted only where a
    /// test planted a race there (`faults::racy_scope_for_tests`, with the `test-hooks` feature).
    pub(super) entering: AtomicUsize,
}

/// A [`Run`] that may move between the program's threads.
pub(super) struct Exclusive<T>(pub(super) T);

// SAFETY: a `Run` is `!Send` for the `Rc`s its slots and the oracles' hook hold. It is only ever
// reached through `HandedRun`'s mutex, and no `Rc` escapes the lock: a step's Burn values leave
// it as `AnyTensor`s and capture handles, which are `Send`. So every access to those `Rc`s, from
// whichever program thread, is ordered by the lock, in the serial schedule (where a thread hands
// the schedule on through `Lanes::install` and blocks) and under collide (where two threads
// run at once, each taking the lock for each step) alike.
unsafe impl<T> Send for Exclusive<T> {}

impl<'p, 'h> HandedRun<'p, 'h> {
    fn with<T>(&self, f: impl FnOnce(&mut Run<'p, 'h>) -> T) -> T {
        let mut guard = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut guard.0)
    }
}

/// One program thread's view of a run: the shared state, which thread runs each step, and the
/// lanes the other threads' steps are handed to.
#[derive(Clone, Copy)]
pub(super) struct Walk<'a, 'p, 'h> {
    pub(super) run: &'a HandedRun<'p, 'h>,
    pub(super) program: &'p Program,
    /// The program thread of each step ([`Program::step_threads`]); empty, and never read,
    /// without lanes.
    pub(super) threads: &'a [u8],
    pub(super) ends: &'a [Option<usize>],
    /// The program's threads, for a program that names more than one.
    pub(super) lanes: Option<&'a Lanes>,
    /// The program thread this walk runs on.
    pub(super) me: u8,
    /// The faults tests planted on the thread that runs the program.
    pub(super) test_faults: ThreadFaults,
    /// Collide mode ([`run_colliding`]).
    pub(super) collide: bool,
}

impl<'a, 'p, 'h> Walk<'a, 'p, 'h> {
    /// This walk as program thread `thread` runs it, with `f` wrapped for that thread: the
    /// planted faults taken on, and the journal it noted handed back with `f`'s result.
    fn handed<F: FnOnce(&Self) -> Result<()> + Send>(
        &self,
        thread: u8,
        f: F,
    ) -> Handed<'a, 'p, 'h, F> {
        let there = Walk {
            me: thread,
            ..*self
        };
        Handed { there, f }
    }

    /// Runs `f` on program thread `thread`: here, or on that thread's lane, this thread serving
    /// its own lane meanwhile. What the other thread's journal noted comes back to this one's.
    fn on(&self, thread: u8, f: impl FnOnce(&Self) -> Result<()> + Send) -> Result<()> {
        let lanes = match self.lanes {
            Some(lanes) if thread != self.me => lanes,
            _ => return f(self),
        };
        let handed = self.handed(thread, f);
        let (result, journal) = lanes.install(self.me, thread, move || handed.run());
        catch::journal_extend(journal);
        result
    }

    /// The step after step `i`, or after its whole scope where it opens one.
    fn next(&self, i: usize) -> Result<usize> {
        match self.program.steps[i] {
            Step::EnterScope { .. } => self.ends[i]
                .map(|exit| exit + 1)
                .ok_or_else(|| anyhow!("scope at step {i} has no exit")),
            _ => Ok(i + 1),
        }
    }

    /// The end of the run of steps and whole scopes from `i` (before `end`) on step `i`'s thread.
    fn segment_end(&self, i: usize, end: usize) -> Result<usize> {
        let thread = self.threads[i];
        let mut j = i;
        while j < end && self.threads[j] == thread {
            j = self.next(j)?;
        }
        Ok(j)
    }

    /// Runs steps `start..end`, each on its thread: a run of steps and whole scopes on another
    /// thread is handed to it at once, so a thread that runs ten steps in a row is woken once.
    /// Under collide, each two neighbouring runs on different threads run at the same time.
    pub(super) fn range(&self, start: usize, end: usize) -> Result<()> {
        let lanes = match self.lanes {
            Some(lanes) if self.collide => lanes,
            _ => return self.in_order(start, end),
        };
        let mut i = start;
        while i < end {
            let j = self.segment_end(i, end)?;
            if j >= end {
                return self.in_order(i, j);
            }
            let k = self.segment_end(j, end)?;
            // One of the two runs is on another thread (they differ): it goes there, and this
            // thread runs the other, handing it on where it is a third thread's.
            let (there, here) = if self.threads[i] != self.me {
                ((self.threads[i], i, j), (j, k))
            } else {
                ((self.threads[j], j, k), (i, j))
            };
            let (thread, from, to) = there;
            let handed = self.handed(thread, move |walk: &Self| walk.in_order(from, to));
            let ((result, journal), here) = lanes.join(
                self.me,
                thread,
                move || handed.run(),
                || self.in_order(here.0, here.1),
            );
            catch::journal_extend(journal);
            result.and(here)?;
            i = k;
        }
        Ok(())
    }

    /// Runs steps `start..end` one run of a thread after another, each on its thread.
    fn in_order(&self, start: usize, end: usize) -> Result<()> {
        let program = self.program;
        let mut i = start;
        while i < end {
            if self.lanes.is_some() && self.threads[i] != self.me {
                let (thread, j) = (self.threads[i], self.segment_end(i, end)?);
                self.on(thread, |walk| walk.range(i, j))?;
                i = j;
                continue;
            }
            if let Step::EnterScope { device } = program.steps[i] {
                let exit = self.next(i)? - 1;
                self.scope(i, exit, device)?;
            } else {
                self.step(i)?;
            }
            i = self.next(i)?;
        }
        Ok(())
    }

    /// Runs step `i`, which is no scope step, on this thread.
    fn step(&self, i: usize) -> Result<()> {
        catch::set_step(Some(i));
        if self.test_faults.racy_scope() && self.run.entering.load(Ordering::SeqCst) > 0 {
            // The planted race stands where a Burn bug would: in a call, whose panic is Burn's.
            let panic = match catch(crate::interpreter::faults::race) {
                Err(panic) => panic,
                Ok(never) => match never {},
            };
            self.run.with(|run| run.set(i, Outcome::Panic(panic)));
            return Ok(());
        }
        self.run.with(|run| {
            run.current = i;
            // Every Burn call of a step runs under its own `catch`; what unwinds past them was
            // raised while the step's harness code let go of Burn values (a tensor dropped when
            // its slot is overwritten). A panic the hook saw there is the harness's own; one it
            // never saw is a Burn panic re-raised on this thread (`resume_unwind` of a device
            // thread's panic, as cubecl does for a wgpu device that died), and belongs to the
            // step.
            let outcome = match catch(|| harness_code(|| run.step(&self.program.steps[i]))) {
                Ok(outcome) => outcome?,
                Err(panic) if panic.class == catch::HARNESS_ERROR => {
                    return Err(harness_panic(
                        format!("the harness panicked at step {i}"),
                        &panic,
                    ))
                }
                Err(panic) => Outcome::Panic(panic),
            };
            run.set(i, outcome);
            run.observe(|hook, world| hook.after_step(world, i))
        })
    }

    /// Runs the scope of steps `enter..=exit` on this thread, the steps inside it each on its own.
    fn scope(&self, enter: usize, exit: usize, device: DeviceRef) -> Result<()> {
        let program = self.program;
        let backends = self.run.with(|run| run.backends);
        let Step::ExitScope {
            inputs,
            outputs,
            form,
        } = &program.steps[exit]
        else {
            return Err(anyhow!("step {exit} closes a scope but is no ExitScope"));
        };
        catch::set_step(Some(enter));
        let burn_device = match pool::device(device, backends) {
            Ok(d) => d,
            Err(reason) => {
                self.run.with(|run| {
                    for i in enter..=exit {
                        run.set(i, Outcome::skipped(reason.clone()));
                    }
                });
                return Ok(());
            }
        };
        let mut ran = false;
        let mut inner: Result<()> = Ok(());
        let (mut input_handles, mut output_handles) = (Vec::new(), Vec::new());
        let entering = &self.run.entering;
        let racy = self.test_faults.racy_scope();
        if racy {
            entering.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(RACY_WINDOW);
        }
        let mut in_window = racy;
        let mut leave_window = || {
            if std::mem::take(&mut in_window) {
                entering.fetch_sub(1, Ordering::SeqCst);
            }
        };
        let result = catch(|| {
            burn_device.capture_scope(|mut scope| {
                // The closure is the harness's own code, but for the scope's own calls: a panic
                // in it is the harness's fault, never Burn's.
                harness_code(|| {
                    leave_window();
                    ran = true;
                    self.run.with(|run| run.set(enter, Outcome::ok()));
                    inner = self.range(enter + 1, exit);
                    catch::set_step(Some(exit));
                    self.run.with(|run| {
                        input_handles = run.boundary(inputs);
                        output_handles = run.boundary(outputs);
                    });
                });
                let ids = |pairs: &[(Slot, Handle)]| pairs.iter().map(|p| p.1.id()).collect();
                match form {
                    ExitForm::Complete => {
                        let inputs: Vec<TensorId> = ids(&input_handles);
                        let outputs: Vec<TensorId> = ids(&output_handles);
                        scope.complete(inputs, outputs)
                    }
                    ExitForm::With | ExitForm::WithSlice => {
                        for (_, t) in &input_handles {
                            scope.input(t);
                        }
                        let outputs: Vec<&Handle> = output_handles.iter().map(|p| &p.1).collect();
                        complete_with(scope, &outputs, *form)
                    }
                    // resume_unwind runs no panic hook: the fuzz target's hook never sees it.
                    ExitForm::Unwind => std::panic::resume_unwind(Box::new(UNWIND_PAYLOAD)),
                }
            })
        });
        leave_window();
        inner?;
        // What `complete` saw: `input` registers an id once.
        let pairs = |handles: &[(Slot, Handle)], dedup: bool| {
            let mut pairs: Vec<(Slot, TensorId)> = Vec::new();
            for (s, t) in handles {
                if !(dedup && pairs.iter().any(|p| p.1 == t.id())) {
                    pairs.push((*s, t.id()));
                }
            }
            pairs
        };
        let input_pairs = pairs(&input_handles, form.registers_inputs());
        let output_pairs = pairs(&output_handles, false);
        drop((input_handles, output_handles));
        if let Err(panic) = &result {
            if panic.class == catch::HARNESS_ERROR {
                return Err(harness_panic(
                    format!("the harness panicked inside the scope of steps {enter}..={exit}"),
                    panic,
                ));
            }
        }
        self.run
            .with(|run| run.scope_ended(enter, exit, ran, result, &input_pairs, &output_pairs))
    }
}
