//! The wgpu device: off unless the session turns it on (`config` does, from
//! `DISPATCH_FUZZ_BACKENDS`, or `--backends`), initialized once with Burn's fallible
//! `Device::wgpu_options().init()`, so a machine without an adapter gets a clear reason on every
//! wgpu step instead of a panic on a device thread. A build without the `wgpu` feature links no
//! wgpu: its device is that reason, and the session switch naming wgpu is refused.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::OnceLock;

use burn::tensor::Device;

/// Whether this build has the wgpu backend (the `wgpu` feature).
pub const BUILT: bool = cfg!(feature = "wgpu");

/// Why a build without the `wgpu` feature has no wgpu device (and refuses the switch naming it).
pub const NOT_BUILT: &str = "this build has no wgpu (build with the `wgpu` feature)";

/// Which adapter wgpu is initialized on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Adapter {
    /// wgpu's own choice: a GPU where one exists.
    #[default]
    Auto,
    /// The first discrete GPU.
    Gpu,
    /// The CPU adapter (e.g. Mesa's llvmpipe Vulkan driver).
    Cpu,
}

static ENABLED: AtomicBool = AtomicBool::new(false);
static ADAPTER: AtomicU8 = AtomicU8::new(0);
static DEVICE: OnceLock<Result<Device, String>> = OnceLock::new();

/// Whether this process fuzzes on wgpu.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Turns wgpu on for this process without initializing it yet.
pub fn turn_on() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Chooses the adapter; only the choice made before the device is first used counts.
pub fn set_adapter(adapter: Adapter) {
    ADAPTER.store(adapter as u8, Ordering::Relaxed);
}

/// Turns wgpu on for this process and initializes it; returns the adapter's description or why
/// it is unavailable.
pub fn enable() -> Result<String, String> {
    turn_on();
    device().map(|d| format!("{d:?}"))
}

#[cfg(feature = "wgpu")]
fn device_kind() -> burn::tensor::DeviceKind {
    use burn::tensor::DeviceKind;
    match ADAPTER.load(Ordering::Relaxed) {
        x if x == Adapter::Cpu as u8 => DeviceKind::Cpu,
        x if x == Adapter::Gpu as u8 => DeviceKind::DiscreteGpu(0),
        _ => DeviceKind::DefaultDevice,
    }
}

/// The initialized wgpu device, or why there is none. Initialized on first use.
pub fn device() -> Result<Device, String> {
    DEVICE.get_or_init(init).clone()
}

#[cfg(feature = "wgpu")]
fn init() -> Result<Device, String> {
    Device::wgpu_options()
        .device_kind(device_kind())
        .init()
        .map_err(|e| format!("wgpu is unavailable: {e}"))
}

#[cfg(not(feature = "wgpu"))]
fn init() -> Result<Device, String> {
    Err(NOT_BUILT.to_string())
}
