//! The wgpu device: opt-in per process (`DISPATCH_FUZZ_BACKENDS` or `--backends`), initialized
//! once with Burn's fallible `Device::wgpu_options().init()`, so a machine without an adapter
//! gets a clear reason on every wgpu step instead of a panic on a device thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use burn::tensor::{Device, DeviceKind};

/// Environment variable listing the backends a session uses, e.g. `flex,capture,wgpu`.
pub const BACKENDS_VAR: &str = "DISPATCH_FUZZ_BACKENDS";
/// Environment variable choosing the wgpu adapter: `auto` (default: wgpu's own choice, a GPU
/// where one exists), `gpu` (the first discrete GPU) or `cpu` (the CPU adapter, e.g. Mesa's
/// llvmpipe Vulkan driver).
pub const ADAPTER_VAR: &str = "DISPATCH_FUZZ_WGPU";

static FROM_ENV: OnceLock<bool> = OnceLock::new();
static ENABLED: AtomicBool = AtomicBool::new(false);
static DEVICE: OnceLock<Result<Device, String>> = OnceLock::new();

/// Whether this process fuzzes on wgpu: set once, by [`enable`] or from `DISPATCH_FUZZ_BACKENDS`.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
        || *FROM_ENV.get_or_init(|| {
            std::env::var(BACKENDS_VAR).is_ok_and(|v| v.split(',').any(|b| b.trim() == "wgpu"))
        })
}

/// Turns wgpu on for this process and initializes it; returns the
/// adapter's description or why it is unavailable.
pub fn enable() -> Result<String, String> {
    ENABLED.store(true, Ordering::Relaxed);
    device().map(|d| format!("{d:?}"))
}

fn adapter() -> DeviceKind {
    match std::env::var(ADAPTER_VAR).as_deref() {
        Ok("cpu") => DeviceKind::Cpu,
        Ok("gpu") => DeviceKind::DiscreteGpu(0),
        _ => DeviceKind::DefaultDevice,
    }
}

/// The initialized wgpu device, or why there is none. Initialized on first use.
pub fn device() -> Result<Device, String> {
    DEVICE
        .get_or_init(|| {
            Device::wgpu_options()
                .device_kind(adapter())
                .init()
                .map_err(|e| format!("wgpu is unavailable: {e}"))
        })
        .clone()
}
