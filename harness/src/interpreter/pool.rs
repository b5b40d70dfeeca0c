//! The per-thread pool of capture devices, created once and reused by every program.
//!
//! Burn numbers capture devices from a global `u16` counter that is never recycled, so a device
//! per program would panic after 65,536 programs. Each thread that runs programs gets
//! `CAPTURE_POOL_SIZE` devices the first time it needs them; threads never share a device, so
//! programs running in parallel (the regression suite) cannot see each other's scopes. The
//! threads of one threaded program share the pool of the thread that runs it.

use std::cell::OnceCell;

use burn::tensor::{Device, Tensor};

use super::catch::{attempt, catch, note};
use super::trace::{Base, Placed};
use crate::program::limits::CAPTURE_POOL_SIZE;
use crate::program::{Backends, DeviceRef, Program};

thread_local! {
    static POOL: OnceCell<Vec<Device>> = const { OnceCell::new() };
    static FLEX: Device = Device::flex();
}

/// This thread's pool, made the first time it is needed.
fn with_pool<T>(f: impl FnOnce(&[Device]) -> T) -> T {
    POOL.with(|pool| {
        f(pool.get_or_init(|| (0..CAPTURE_POOL_SIZE).map(|_| Device::capture()).collect()))
    })
}

/// This thread's pool, for the threads of a threaded program to [`adopt`].
pub(super) fn devices() -> Vec<Device> {
    with_pool(<[Device]>::to_vec)
}

/// Makes `devices` this thread's pool: a program thread names the devices of the thread that
/// runs the program. A thread that has made its own pool keeps it.
pub(super) fn adopt(devices: Vec<Device>) {
    POOL.with(|pool| {
        let _ = pool.set(devices);
    });
}

/// The Burn device a program's device reference names, on this thread, or why it has none (wgpu
/// not among the session's `backends`, or no adapter).
pub fn device(device: DeviceRef, backends: Backends) -> Result<Device, String> {
    Ok(match device {
        DeviceRef::Flex => Device::flex(),
        DeviceRef::FlexAutodiff => Device::flex().autodiff(),
        DeviceRef::Capture(k) => capture(usize::from(k)),
        DeviceRef::Wgpu if backends.wgpu => super::wgpu::device(backends.adapter)?,
        DeviceRef::Wgpu => {
            return Err(
                "wgpu is not enabled in this session (DISPATCH_FUZZ_BACKENDS=flex,capture,wgpu)"
                    .to_string(),
            )
        }
    })
}

/// Seeds Flex's random generator, which is one for the whole process (burn-flex backend.rs:20)
/// and drawn from entropy until seeded: a program's random draws on Flex (its own, its eager
/// mirror's, its replays') are then the same on every run that starts from the same seed with
/// nothing else drawing meanwhile. Programs draw unseeded otherwise, as users' do.
pub fn seed_flex(seed: u64) {
    Device::flex().seed(seed);
}

/// Capture device `k` of this thread's pool (`k` taken modulo the pool size).
pub fn capture(k: usize) -> Device {
    with_pool(|pool| pool[pooled(k)].clone())
}

/// The pool index program device `capture{k}` names.
fn pooled(k: usize) -> usize {
    k % usize::from(CAPTURE_POOL_SIZE)
}

/// The pool devices `program` names, each once, in pool order.
pub fn named_by(program: &Program) -> impl Iterator<Item = usize> + '_ {
    (0..usize::from(CAPTURE_POOL_SIZE)).filter(|&k| {
        program.steps.iter().any(
            |s| matches!(s.device(), Some(DeviceRef::Capture(d)) if pooled(usize::from(d)) == k),
        )
    })
}

/// Places a Burn device the way programs name devices (`flex`, `flex_ad`, `capture1`,
/// `capture1_ad`), or [`Base::Other`] for a device outside the pool.
pub fn placed(device: &Device) -> Placed {
    // A device compares equal to its autodiff wrapper, so the flag is read separately.
    let autodiff = device.is_autodiff();
    // Flex first: it is the commonest answer (every eager mirror value), and no pooled capture
    // device or wgpu device compares equal to it.
    if is_flex(device) {
        return Placed::new(Base::Flex, autodiff);
    }
    let pooled = with_pool(|pool| pool.iter().position(|d| d == device));
    let wgpu = pooled.is_none() && super::wgpu::started().is_some_and(|w| w == *device);
    let base = match pooled.and_then(|k| u8::try_from(k).ok()) {
        Some(k) => Base::Capture(k),
        None if wgpu => Base::Wgpu,
        None => Base::Other,
    };
    Placed::new(base, autodiff)
}

/// Whether `device` is Flex, autodiff or not (what a [`Placed`] is named: `flex` or `flex_ad`), with
/// one comparison.
pub fn is_flex(device: &Device) -> bool {
    FLEX.with(|flex| flex == device)
}

/// Frees the autodiff graphs that programs left behind.
///
/// burn-autodiff removes orphaned graph nodes only at the end of a `backward()`
/// (`runtime/graph.rs`, `GraphCleaner::cleanup_orphaned_entries`), and programs never call
/// backward, so without this sweep every autodiff op keeps about 2 KiB alive for the life of
/// the process (measured: 460 MiB after 200,000 small ops). A one-element backward runs the
/// cleanup. A panic here is still Burn's: it goes to the run's journal like any other.
pub fn sweep_autodiff_graphs() {
    attempt(|| {
        let root = Tensor::<1>::from_data([0.0f32], &Device::flex().autodiff()).require_grad();
        let _ = root.sum().backward();
    });
}

/// Which of the pool devices `named` (indices into the pool) do not accept a fresh, empty scope
/// right now: each must open a scope, record nothing and complete. A device that refuses still
/// holds state from an earlier program (an open scope, a stale registration), which would make
/// crashes depend on input order. Only the devices a program names can hold its state: no
/// tensor outlives its program, and each earlier program had its own devices probed.
pub fn leaked_devices(named: impl IntoIterator<Item = usize>) -> Vec<usize> {
    named
        .into_iter()
        .filter(|&k| {
            let device = capture(k);
            let fresh = catch(|| device.capture_scope(|scope| scope.complete([], [])));
            let fresh = fresh.map_err(note);
            !matches!(fresh, Ok(Ok(graph)) if graph.graph.operations.is_empty() && graph.values.is_empty())
        })
        .collect()
}
