//! The wgpu device: off unless the session turns it on (`DISPATCH_FUZZ_BACKENDS` or
//! `--backends`), initialized once, on the adapter the session chooses, with Burn's fallible
//! `Device::wgpu_options().init()`, so a machine without an adapter gets a clear reason on every
//! wgpu step instead of a panic on a device thread. A build without the `wgpu` feature links no
//! wgpu: its device is that reason, and the session switch naming wgpu is refused.

use std::sync::OnceLock;

use burn::tensor::Device;

use crate::program::{list_classes, AdapterClass, Dtype};
pub use crate::program::{Adapter, AdapterChoice, Api};

/// The switch that chooses the adapter (read and validated by `config`): named here so that a
/// command pinned to an API can set it.
pub const ADAPTER_VAR: &str = "DISPATCH_FUZZ_WGPU";

/// Whether this build has the wgpu backend (the `wgpu` feature).
pub const BUILT: bool = cfg!(feature = "wgpu");

/// Why a build without the `wgpu` feature has no wgpu device (and refuses the switch naming it).
pub const NOT_BUILT: &str = "this build has no wgpu (build with the `wgpu` feature)";

/// What wgpu reports about the adapter the device came up on (`wgpu::AdapterInfo`), as the
/// session's start line, the reports and the adapter-class check of the suite show it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AdapterInfo {
    /// The adapter's name (the renderer string on OpenGL).
    pub name: String,
    /// The driver's name; empty where the API reports none (OpenGL).
    pub driver: String,
    /// The driver's own version text (Mesa's version, a vendor driver's number).
    pub driver_info: String,
    /// Its class: graphics API, driver, device type.
    pub class: AdapterClass,
}

impl std::fmt::Display for AdapterInfo {
    /// `Vulkan llvmpipe (LLVM 15.0.6, 256 bits), driver llvmpipe Mesa 22.3.6, device type cpu`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let api = self.class.to_string();
        let api = api.split('/').next().unwrap_or_default();
        let driver = [self.driver.trim(), self.driver_info.trim()]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        write!(
            f,
            "{api} {}, driver {}, device type {}",
            self.name,
            if driver.is_empty() {
                "unnamed"
            } else {
                &driver
            },
            self.class.device_type
        )
    }
}

/// The wgpu device, or why there is none, with the choice that brought it up.
type Started = (AdapterChoice, Result<(Device, AdapterInfo), String>);

static DEVICE: OnceLock<Started> = OnceLock::new();
/// The dtypes the device said it does not support, asked when it came up.
static UNSUPPORTED: OnceLock<Vec<Dtype>> = OnceLock::new();

/// The class of the adapter the wgpu device runs on, if it has come up in this process, without
/// initializing it.
pub fn started_adapter() -> Option<AdapterClass> {
    DEVICE
        .get()?
        .1
        .as_ref()
        .ok()
        .map(|(_, info)| info.class.clone())
}

/// The wgpu device if it has been initialized in this process, without initializing it.
pub fn started() -> Option<Device> {
    DEVICE
        .get()?
        .1
        .as_ref()
        .ok()
        .map(|(device, _)| device.clone())
}

#[cfg(feature = "wgpu")]
fn device_kind(adapter: Adapter) -> burn::tensor::DeviceKind {
    use burn::tensor::DeviceKind;
    match adapter {
        Adapter::Cpu => DeviceKind::Cpu,
        Adapter::Gpu => DeviceKind::DiscreteGpu(0),
        Adapter::Auto => DeviceKind::DefaultDevice,
    }
}

/// The device and adapter brought up on `choice` (once per process: Burn holds one), or why
/// there are none: no adapter, or the device came up on another choice earlier in this
/// process, which is refused rather than silently served by the first one.
fn start(choice: AdapterChoice) -> Result<&'static (Device, AdapterInfo), String> {
    let (first, started) = DEVICE.get_or_init(|| (choice, init(choice)));
    if *first != choice {
        return Err(format!(
            "wgpu came up on adapter `{first}` in this process, and Burn holds one wgpu device \
             per process: adapter `{choice}` cannot be had here"
        ));
    }
    started.as_ref().map_err(String::clone)
}

/// The wgpu device on `choice`, or why there is none. Initialized on first use.
pub fn device(choice: AdapterChoice) -> Result<Device, String> {
    start(choice).map(|(device, _)| device.clone())
}

/// The adapter the wgpu device runs on when brought up on `choice`, or why there is none:
/// initializes the device. Whether a program runs on it is its session's choice.
pub fn adapter(choice: AdapterChoice) -> Result<AdapterInfo, String> {
    start(choice).map(|(_, info)| info.clone())
}

/// The dtypes the wgpu device says it does not support (`Device::supports_dtype` false), asked
/// once, when the device came up: Burn holds one device per process and its answers are the
/// adapter's. Empty where the device has not come up in this process.
pub fn unsupported() -> &'static [Dtype] {
    UNSUPPORTED.get().map_or(&[], Vec::as_slice)
}

/// The dtypes steps of `steps` name (a create's, a cast's) that the wgpu device says it does not
/// support: those past which Burn promises nothing on it.
pub fn named_unsupported(steps: &[crate::program::Step]) -> Vec<Dtype> {
    let unsupported = unsupported();
    steps
        .iter()
        .filter_map(crate::program::Step::named_dtype)
        .filter(|d| unsupported.contains(d))
        .collect()
}

/// Whether the wgpu device says it does not support the dtype Burn names `name` (`BF16`, `I8`,
/// `Bool(U8)`: a trace's spelling).
pub fn unsupported_named(name: &str) -> bool {
    unsupported().iter().any(|d| d.spec().name == name)
}

/// Whether this machine's adapter on `choice` is of one of `classes` (any adapter will do when
/// `classes` is empty): the adapter, or why a case or test that holds on those classes cannot
/// be judged here. Initializes the device.
pub fn fits(choice: AdapterChoice, classes: &[AdapterClass]) -> Result<AdapterInfo, String> {
    let info = adapter(choice).map_err(|reason| format!("no wgpu adapter here: {reason}"))?;
    match place(Ok(&info.class), classes, true) {
        Placement::Nowhere(reason) => Err(reason),
        _ => Ok(info),
    }
}

/// Where a case or test that holds on `classes` is judged on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// In this process: its adapter is of one of the classes (or any will do).
    Here,
    /// In a process of its own with wgpu pinned to this API ([`pinned_command`]): a class it
    /// holds on has another graphics API than this process's adapter, which does not fit for
    /// the reason given.
    Pinned(Api, String),
    /// Nowhere here, and why.
    Nowhere(String),
}

/// Where a case or test that holds on `classes` runs ([`Placement`]) in a process whose wgpu
/// comes up on `choice`. A choice already pinned to an API (a process the suite started for a
/// case) sends nothing further.
pub fn placement(choice: AdapterChoice, classes: &[AdapterClass]) -> Placement {
    let here = adapter(choice);
    place(
        here.as_ref().map(|a| &a.class).map_err(String::as_str),
        classes,
        choice.api.is_some(),
    )
}

/// [`placement`] for a process whose adapter is of class `here` (or none, and why), already
/// pinned to an API or not.
fn place(here: Result<&AdapterClass, &str>, classes: &[AdapterClass], pinned: bool) -> Placement {
    let reason = match here {
        Ok(class) if classes.is_empty() || classes.contains(class) => return Placement::Here,
        Ok(class) => format!(
            "found on {}; this machine has {class}",
            list_classes(classes)
        ),
        Err(why) => format!("no wgpu adapter here: {why}"),
    };
    if pinned {
        return Placement::Nowhere(reason);
    }
    let api_here = here.ok().map(|c| c.backend.as_str());
    classes
        .iter()
        .filter(|c| Some(c.backend.as_str()) != api_here)
        .find_map(|c| Api::named(&c.backend))
        .map_or_else(
            || Placement::Nowhere(reason.clone()),
            |api| Placement::Pinned(api, reason.clone()),
        )
}

/// `exe` as a command whose wgpu comes up on `choice` (through [`ADAPTER_VAR`]), and fails
/// where it cannot run a wgpu case when `required`.
pub fn pinned_command(
    exe: &std::path::Path,
    choice: AdapterChoice,
    required: bool,
) -> std::process::Command {
    let mut words = choice.to_string();
    if required {
        words.push_str(",required");
    }
    let mut command = std::process::Command::new(exe);
    command.env(ADAPTER_VAR, words);
    command
}

#[cfg(feature = "wgpu")]
fn graphics_api(api: Api) -> burn::tensor::wgpu::WgpuBackend {
    use burn::tensor::wgpu::WgpuBackend;
    match api {
        Api::Vulkan => WgpuBackend::Vulkan,
        Api::Gl => WgpuBackend::Gl,
        Api::Metal => WgpuBackend::Metal,
        Api::Dx12 => WgpuBackend::Dx12,
    }
}

#[cfg(feature = "wgpu")]
fn init(choice: AdapterChoice) -> Result<(Device, AdapterInfo), String> {
    let mut options = Device::wgpu_options().device_kind(device_kind(choice.kind));
    if let Some(api) = choice.api {
        options = options.graphics_api(graphics_api(api));
    }
    let (device, setup) = options
        .init_with_setup()
        .map_err(|e| format!("wgpu is unavailable: {e}"))?;
    let info = setup.adapter.get_info();
    let unsupported = crate::program::DTYPES
        .iter()
        .map(|s| s.dtype)
        .filter(|d| !device.supports_dtype(d.burn()))
        .collect();
    let _ = UNSUPPORTED.set(unsupported);
    let backend = format!("{:?}", info.backend).to_lowercase();
    let device_type = kebab(&format!("{:?}", info.device_type));
    let driver = AdapterClass::driver_of(&info.driver, &info.name);
    Ok((
        device,
        AdapterInfo {
            class: AdapterClass {
                backend,
                driver,
                device_type,
            },
            name: info.name,
            driver: info.driver,
            driver_info: info.driver_info,
        },
    ))
}

/// `DiscreteGpu` -> `discrete-gpu`.
#[cfg(feature = "wgpu")]
fn kebab(camel: &str) -> String {
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('-');
        }
        out.extend(c.to_lowercase());
    }
    out
}

#[cfg(not(feature = "wgpu"))]
fn init(_: AdapterChoice) -> Result<(Device, AdapterInfo), String> {
    Err(NOT_BUILT.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trial_runs_here_elsewhere_pinned_or_nowhere_by_its_classes() {
        let (vulkan, gl) = (AdapterClass::vulkan_llvmpipe(), AdapterClass::gl_llvmpipe());
        let both = [vulkan.clone(), gl.clone()];
        assert_eq!(place(Ok(&gl), &both, false), Placement::Here);
        assert_eq!(place(Ok(&gl), &[], false), Placement::Here);
        // A GL case on a Vulkan machine goes to a process pinned to GL.
        let why = "found on GL/llvmpipe; this machine has Vulkan/llvmpipe".to_string();
        assert_eq!(
            place(Ok(&vulkan), std::slice::from_ref(&gl), false),
            Placement::Pinned(Api::Gl, why.clone())
        );
        // That process does not send it on again.
        assert_eq!(
            place(Ok(&vulkan), std::slice::from_ref(&gl), true),
            Placement::Nowhere(why)
        );
        // Another driver on the same API is nowhere to be had here.
        let nvidia = AdapterClass::new("vulkan", "nvidia", "discrete-gpu");
        assert!(matches!(
            place(Ok(&vulkan), std::slice::from_ref(&nvidia), false),
            Placement::Nowhere(_)
        ));
        // No adapter at all: try the case's API in a pinned process.
        assert_eq!(
            place(Err("none"), std::slice::from_ref(&vulkan), false),
            Placement::Pinned(Api::Vulkan, "no wgpu adapter here: none".into())
        );
    }
}
