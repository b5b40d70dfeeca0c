//! wgpu adapters as values: the class a stored case or a test holds on (graphics API, driver and
//! device type, as wgpu's `AdapterInfo` reports them, so a case found on one class is not judged
//! on another: Mesa's GL adapter rejects the i64 shaders Vulkan's llvmpipe runs), and the choice
//! of adapter a session brings the device up with.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One adapter class. Two adapters of a class run the same shaders the same way for the
/// harness's purposes: a case recorded on one reproduces on the other.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AdapterClass {
    /// The graphics API wgpu runs on, lowercase: `vulkan`, `gl`, `metal`, `dx12`, `webgpu`.
    pub backend: String,
    /// The driver, lowercase and without its version: `llvmpipe` (Mesa's CPU rasterizer), or the
    /// vendor driver's name (`nvidia`, `radv`, ...).
    pub driver: String,
    /// wgpu's device type, kebab-case: `cpu`, `discrete-gpu`, `integrated-gpu`, `virtual-gpu`,
    /// `other`.
    pub device_type: String,
}

impl AdapterClass {
    /// A class from its three parts.
    pub fn new(backend: &str, driver: &str, device_type: &str) -> AdapterClass {
        AdapterClass {
            backend: backend.to_string(),
            driver: driver.to_string(),
            device_type: device_type.to_string(),
        }
    }

    /// Mesa's llvmpipe behind Vulkan (Debian `mesa-vulkan-drivers`): what CI and most stored
    /// cases run on.
    pub fn vulkan_llvmpipe() -> AdapterClass {
        AdapterClass::new("vulkan", "llvmpipe", "cpu")
    }

    /// Mesa's llvmpipe behind OpenGL: what wgpu falls back to on a machine with Mesa's GL
    /// libraries and no Vulkan driver.
    pub fn gl_llvmpipe() -> AdapterClass {
        AdapterClass::new("gl", "llvmpipe", "cpu")
    }

    /// The driver part of a class, from wgpu's `driver` field, or the adapter's name where the
    /// API reports no driver (OpenGL reports only the renderer, e.g. `llvmpipe (LLVM 15.0.6,
    /// 256 bits)`): its first word, lowercase.
    pub fn driver_of(driver: &str, name: &str) -> String {
        let source = if driver.trim().is_empty() {
            name
        } else {
            driver
        };
        source
            .split(|c: char| c.is_whitespace() || c == '(' || c == '/')
            .find(|w| !w.is_empty())
            .unwrap_or("unknown")
            .to_lowercase()
    }
}

impl fmt::Display for AdapterClass {
    /// `Vulkan/llvmpipe`, `GL/llvmpipe`, `Vulkan/nvidia (discrete-gpu)`: the device type only
    /// where it is not the CPU a software driver implies.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let api = match self.backend.as_str() {
            "vulkan" => "Vulkan",
            "gl" => "GL",
            "metal" => "Metal",
            "dx12" => "DX12",
            "webgpu" => "WebGPU",
            other => other,
        };
        write!(f, "{api}/{}", self.driver)?;
        if self.device_type != "cpu" {
            write!(f, " ({})", self.device_type)?;
        }
        Ok(())
    }
}

/// `classes` as a person reads them: `Vulkan/llvmpipe or GL/llvmpipe`.
pub fn list_classes(classes: &[AdapterClass]) -> String {
    let names: Vec<String> = classes.iter().map(ToString::to_string).collect();
    names.join(" or ")
}

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

/// A graphics API the wgpu device may be pinned to (`DISPATCH_FUZZ_WGPU=gl`, ...): where a case
/// holds on an adapter class of another API than wgpu's own choice, the suite runs it in a
/// process pinned to that API (Mesa serves both Vulkan and GL on one machine).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// Vulkan.
    Vulkan,
    /// OpenGL (ES), through EGL.
    Gl,
    /// Metal.
    Metal,
    /// DirectX 12.
    Dx12,
}

impl Api {
    /// Every API, with the name an [`AdapterClass`]'s `backend` and the switch use.
    pub const NAMES: [(&'static str, Api); 4] = [
        ("vulkan", Api::Vulkan),
        ("gl", Api::Gl),
        ("metal", Api::Metal),
        ("dx12", Api::Dx12),
    ];

    /// The API named `name` (an adapter class's `backend`).
    pub fn named(name: &str) -> Option<Api> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, a)| *a)
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, a)| *a == self)
            .map_or("?", |(n, _)| n)
    }
}

/// How the wgpu device is to come up: the adapter kind and the graphics API pinned, if any. A
/// value of the session (its [`Backends`](crate::program::Backends)), read from the switches by
/// whoever builds the session: Burn holds one wgpu device per process, so the first choice to
/// bring it up is the process's, and another is refused, not silently ignored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdapterChoice {
    /// Which adapter.
    pub kind: Adapter,
    /// The graphics API wgpu is pinned to (`None`: wgpu's choice).
    pub api: Option<Api>,
}

impl AdapterChoice {
    /// wgpu's own choice of adapter and API.
    pub const AUTO: AdapterChoice = AdapterChoice {
        kind: Adapter::Auto,
        api: None,
    };

    /// This choice of adapter kind, pinned to `api` (a case whose class has another API).
    pub fn pinned_to(self, api: Api) -> AdapterChoice {
        AdapterChoice {
            api: Some(api),
            ..self
        }
    }
}

impl fmt::Display for AdapterChoice {
    /// `auto`, `cpu`, `cpu,gl`: the words of the switch that names it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            Adapter::Auto => "auto",
            Adapter::Gpu => "gpu",
            Adapter::Cpu => "cpu",
        };
        match self.api {
            Some(api) => write!(f, "{kind},{}", api.name()),
            None => f.write_str(kind),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_comes_from_the_driver_field_or_else_the_renderer_name() {
        assert_eq!(
            AdapterClass::driver_of("llvmpipe", "llvmpipe (LLVM 15)"),
            "llvmpipe"
        );
        assert_eq!(
            AdapterClass::driver_of("", "llvmpipe (LLVM 15.0.6, 256 bits)"),
            "llvmpipe"
        );
        assert_eq!(AdapterClass::driver_of("NVIDIA", "NVIDIA H200"), "nvidia");
        assert_eq!(
            AdapterClass::driver_of("", "NVIDIA H200/PCIe/SSE2"),
            "nvidia"
        );
        assert_eq!(AdapterClass::driver_of(" ", ""), "unknown");
    }

    #[test]
    fn a_class_prints_its_api_and_driver_and_a_gpus_device_type() {
        assert_eq!(
            AdapterClass::vulkan_llvmpipe().to_string(),
            "Vulkan/llvmpipe"
        );
        assert_eq!(AdapterClass::gl_llvmpipe().to_string(), "GL/llvmpipe");
        assert_eq!(
            AdapterClass::new("vulkan", "nvidia", "discrete-gpu").to_string(),
            "Vulkan/nvidia (discrete-gpu)"
        );
    }
}
