//! Every `DISPATCH_FUZZ_*` environment switch, read once per process and validated: a value
//! the harness does not know is an error naming the allowed ones, never silently ignored.

use std::sync::OnceLock;

use thiserror::Error;

use crate::interpreter::wgpu;
use crate::oracles::{
    catalogue::catalogue, Oracles, Policy, KNOWN, MIXED_DTYPES, ORACLES, STATE_LEAK,
    UNSUPPORTED_DTYPE,
};
use crate::program::Backends;
use crate::program::{Adapter, AdapterChoice, Api};

/// Backends a session fuzzes (`flex,capture` or `flex,capture,wgpu`).
pub const BACKENDS_VAR: &str = "DISPATCH_FUZZ_BACKENDS";
/// The wgpu adapter: `auto` (wgpu's choice, a GPU where one exists), `gpu` or `cpu`; a graphics
/// API to pin (`vulkan`, `gl`, `metal`, `dx12`); and `required`: a wgpu case or test that cannot
/// run here (no adapter, or no adapter of a class it holds on) fails instead of being ignored.
pub const ADAPTER_VAR: &str = wgpu::ADAPTER_VAR;
/// Catalogued classes that count as findings, comma-separated.
pub const CRASH_ON_VAR: &str = "DISPATCH_FUZZ_CRASH_ON";
/// `1`: the fuzz target prints findings and goes on instead of aborting (`0` or unset: abort).
pub const NO_ABORT_VAR: &str = "DISPATCH_FUZZ_NO_ABORT";
/// Oracles `check` does not run, comma-separated names from the `ORACLES` table.
pub const ORACLES_OFF_VAR: &str = "DISPATCH_FUZZ_ORACLES_OFF";

/// One switch, as `--help` lists it.
pub struct Switch {
    /// The variable.
    pub var: &'static str,
    /// What it does and its values.
    pub help: &'static str,
}

/// Every switch.
pub const SWITCHES: &[Switch] = &[
    Switch {
        var: BACKENDS_VAR,
        help: "backends to fuzz: flex,capture (default) or flex,capture,wgpu",
    },
    Switch {
        var: ADAPTER_VAR,
        help: "wgpu adapter, comma-separated words: auto (default), gpu or cpu; a graphics API \
               to pin, vulkan, gl, metal or dx12 (default: wgpu's choice); `required` to fail, \
               not ignore, a wgpu case or test this machine cannot run (no adapter, or none of \
               a class it holds on), e.g. `required` or `cpu,gl,required`",
    },
    Switch {
        var: CRASH_ON_VAR,
        help: "catalogued classes that count as findings, comma-separated; `known`: findings a \
               stored regression case has are findings too (naming a class does it for that \
               class)",
    },
    Switch {
        var: NO_ABORT_VAR,
        help: "1: the fuzz target reports findings without aborting; 0 or unset: aborts",
    },
    Switch {
        var: ORACLES_OFF_VAR,
        help: "oracles check does not run, comma-separated: eager-replay, reference-model, \
               flex-vs-wgpu, dtype-contract, transaction-reads, reference (default: none off; \
               e.g. `reference` for a sanitizer build that needs speed)",
    },
];

/// The text `--help` ends with.
pub fn help() -> String {
    let mut text = String::from("Environment:\n");
    for s in SWITCHES {
        text.push_str(&format!("  {:<24} {}\n", s.var, s.help));
    }
    text
}

/// A switch set to a value the harness does not know.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// A backend name outside `flex`, `capture`, `wgpu`.
    #[error("{BACKENDS_VAR}: unknown backend `{0}` (allowed: flex, capture, wgpu)")]
    Backend(String),
    /// wgpu named in a build without it.
    #[error("{BACKENDS_VAR}: {}", wgpu::NOT_BUILT)]
    WgpuNotBuilt,
    /// A word outside `auto`, `gpu`, `cpu`, the APIs and `required`, or two adapters or APIs.
    #[error(
        "{ADAPTER_VAR}: unknown or repeated word `{0}` (allowed: one of auto, gpu, cpu; one of \
         vulkan, gl, metal, dx12; and `required`)"
    )]
    Adapter(String),
    /// A class neither the catalogue nor an oracle has.
    #[error("{CRASH_ON_VAR}: unknown class `{class}` (allowed: {allowed})")]
    Class {
        /// The class given.
        class: String,
        /// Every known class.
        allowed: String,
    },
    /// A name no oracle has.
    #[error("{ORACLES_OFF_VAR}: unknown oracle `{name}` (allowed: {allowed})")]
    Oracle {
        /// The name given.
        name: String,
        /// Every oracle's name.
        allowed: String,
    },
    /// A flag that is neither `0` nor `1`.
    #[error("{var}: `{value}` is not 0 or 1")]
    Flag {
        /// The variable.
        var: &'static str,
        /// The value given.
        value: String,
    },
}

/// The process's switches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Backends the session fuzzes, with the adapter wgpu comes up on.
    pub backends: Backends,
    /// A wgpu case or test this machine cannot run fails instead of being ignored.
    pub wgpu_required: bool,
    /// Which catalogued classes are findings.
    policy: Policy,
    /// The fuzz target reports findings without aborting.
    pub no_abort: bool,
    /// The oracles `check` runs.
    pub oracles: Oracles,
}

impl Config {
    /// The finding policy (`DISPATCH_FUZZ_CRASH_ON`).
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Parses the switches from `get`, which reads one variable.
    pub fn parse(get: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let backends = match get(BACKENDS_VAR) {
            Some(list) => Backends::parse(&list).map_err(ConfigError::Backend)?,
            None => Backends::FLEX_CAPTURE,
        };
        if backends.wgpu && !wgpu::BUILT {
            return Err(ConfigError::WgpuNotBuilt);
        }
        let (mut adapter, mut api, mut wgpu_required) = (None, None, false);
        for word in get(ADAPTER_VAR)
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
        {
            let chosen = match word {
                "" => continue,
                "required" => {
                    wgpu_required = true;
                    continue;
                }
                pinned if Api::named(pinned).is_some() => {
                    if api.replace(Api::named(pinned)).is_some() {
                        return Err(ConfigError::Adapter(word.to_string()));
                    }
                    continue;
                }
                "auto" => Adapter::Auto,
                "gpu" => Adapter::Gpu,
                "cpu" => Adapter::Cpu,
                other => return Err(ConfigError::Adapter(other.to_string())),
            };
            if adapter.replace(chosen).is_some() {
                return Err(ConfigError::Adapter(word.to_string()));
            }
        }
        let backends = backends.with_adapter(AdapterChoice {
            kind: adapter.unwrap_or_default(),
            api: api.flatten(),
        });
        let policy = Policy::parse(&get(CRASH_ON_VAR).unwrap_or_default());
        let known = known_classes();
        if let Some(class) = policy.crash_on.iter().find(|c| !known.contains(c)) {
            return Err(ConfigError::Class {
                class: class.clone(),
                allowed: known.join(", "),
            });
        }
        let no_abort = match get(NO_ABORT_VAR).as_deref().map(str::trim) {
            None | Some("") | Some("0") => false,
            Some("1") => true,
            Some(other) => {
                return Err(ConfigError::Flag {
                    var: NO_ABORT_VAR,
                    value: other.to_string(),
                })
            }
        };
        let mut oracles = Oracles::ALL;
        for name in get(ORACLES_OFF_VAR)
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
        {
            if name.is_empty() {
                continue;
            }
            let spec =
                ORACLES
                    .iter()
                    .find(|o| o.name == name)
                    .ok_or_else(|| ConfigError::Oracle {
                        name: name.to_string(),
                        allowed: ORACLES
                            .iter()
                            .map(|o| o.name)
                            .collect::<Vec<_>>()
                            .join(", "),
                    })?;
            oracles = oracles.without(spec.id);
        }
        Ok(Config {
            backends,
            wgpu_required,
            policy,
            no_abort,
            oracles,
        })
    }
}

/// Every class a policy may name: the catalogue's, the oracles' and the state leak, and
/// [`KNOWN`].
pub fn known_classes() -> Vec<String> {
    let mut classes: Vec<String> = catalogue()
        .iter()
        .map(|r| r.background_tag.clone())
        .chain(
            ORACLES
                .iter()
                .flat_map(|o| o.classes.iter().map(|c| c.to_string())),
        )
        .chain([STATE_LEAK, MIXED_DTYPES, UNSUPPORTED_DTYPE, KNOWN].map(str::to_string))
        .collect();
    classes.sort();
    classes.dedup();
    classes
}

/// The switches of this process, read from the environment once. Reading them writes nothing:
/// the adapter choice is a value of the sessions built from them.
pub fn try_get() -> Result<&'static Config, &'static ConfigError> {
    static CONFIG: OnceLock<Result<Config, ConfigError>> = OnceLock::new();
    CONFIG
        .get_or_init(|| Config::parse(|var| std::env::var(var).ok()))
        .as_ref()
}

/// [`try_get`] where an invalid switch is fatal: the CLI and the fuzz target call [`try_get`]
/// first and exit with its message, so this only panics in a library caller that skipped that.
pub fn get() -> &'static Config {
    try_get().unwrap_or_else(|error| panic!("{error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::parse(|var| {
            pairs
                .iter()
                .find(|(k, _)| *k == var)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn no_switch_set_means_flex_and_capture_with_the_default_policy() {
        let config = parse(&[]).unwrap();
        assert_eq!(config.backends, Backends::FLEX_CAPTURE);
        assert_eq!(config.backends.adapter.kind, Adapter::Auto);
        assert!(!config.wgpu_required);
        assert!(config.policy().crash_on.is_empty());
        assert!(!config.no_abort);
        assert_eq!(config.oracles, Oracles::ALL);
    }

    #[test]
    fn oracles_named_off_are_not_run_and_an_unknown_name_is_an_error() {
        let config = parse(&[(ORACLES_OFF_VAR, "reference, flex-vs-wgpu")]).unwrap();
        assert_eq!(
            config.oracles,
            Oracles::ALL
                .without(crate::oracles::OracleId::Reference)
                .without(crate::oracles::OracleId::Differential)
        );
        assert!(matches!(
            parse(&[(ORACLES_OFF_VAR, "reference,nope")]),
            Err(ConfigError::Oracle { name, .. }) if name == "nope"
        ));
    }

    #[test]
    fn known_values_parse() {
        let config = parse(&[
            (BACKENDS_VAR, "flex, capture,wgpu"),
            (ADAPTER_VAR, "cpu"),
            (CRASH_ON_VAR, "replay-mismatch,state-leak"),
            (NO_ABORT_VAR, "1"),
        ])
        .unwrap();
        assert!(config.backends.wgpu);
        assert_eq!(config.backends.adapter.kind, Adapter::Cpu);
        assert_eq!(config.policy().crash_on.len(), 2);
        assert!(config.no_abort);
    }

    #[test]
    fn a_typo_in_any_switch_is_an_error_naming_the_allowed_values() {
        let error = parse(&[(BACKENDS_VAR, "flex,wpgu")]).unwrap_err();
        assert_eq!(error, ConfigError::Backend("wpgu".into()));
        assert!(error.to_string().contains("allowed: flex, capture, wgpu"));
        let error = parse(&[(ADAPTER_VAR, "GPU0")]).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("allowed: one of auto, gpu, cpu;"),
            "{error}"
        );
        assert!(parse(&[(ADAPTER_VAR, "cpu,gpu")]).is_err());
        let error = parse(&[(CRASH_ON_VAR, "capture-tensor-not-materialised")]).unwrap_err();
        let text = error.to_string();
        assert!(
            text.contains("unknown class `capture-tensor-not-materialised`"),
            "{text}"
        );
        assert!(text.contains("capture-tensor-not-materialized"), "{text}");
        assert!(parse(&[(NO_ABORT_VAR, "yes")]).is_err());
    }

    #[test]
    fn required_and_a_pinned_api_are_words_beside_the_adapter_choice() {
        let config = parse(&[(ADAPTER_VAR, "required")]).unwrap();
        assert_eq!(
            (config.backends.adapter.kind, config.wgpu_required),
            (Adapter::Auto, true)
        );
        let config = parse(&[(ADAPTER_VAR, "cpu, required")]).unwrap();
        assert_eq!(
            (config.backends.adapter.kind, config.wgpu_required),
            (Adapter::Cpu, true)
        );
        let config = parse(&[(ADAPTER_VAR, "gpu")]).unwrap();
        assert_eq!(
            (config.backends.adapter.kind, config.wgpu_required),
            (Adapter::Gpu, false)
        );
        let config = parse(&[(ADAPTER_VAR, "gl,cpu")]).unwrap();
        assert_eq!(
            (config.backends.adapter.kind, config.backends.adapter.api),
            (Adapter::Cpu, Some(Api::Gl))
        );
        assert!(parse(&[(ADAPTER_VAR, "gl,vulkan")]).is_err());
    }

    #[test]
    fn help_lists_every_switch() {
        let help = help();
        for s in SWITCHES {
            assert!(help.contains(s.var));
        }
    }
}
