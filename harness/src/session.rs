//! A session: what `check` runs a program under, as one value the caller holds.

use crate::config::{self, known_classes, BACKENDS_VAR, CRASH_ON_VAR, ORACLES_OFF_VAR};
use crate::oracles::{Oracles, Policy, KNOWN, ORACLES};
use crate::program::Backends;

/// The backends, finding policy and oracles [`check`](crate::check) runs a program under.
///
/// `check` reads nothing else of the process: two sessions with different backends run side by
/// side in one process (the regression suite runs its Flex cases and its wgpu cases in any
/// order), as wasmtime's fuzzing oracles take an explicit `Config`. What stays process-wide is
/// what Burn itself holds: its device tables, capture's client registry, and the one wgpu device
/// (on the adapter of the first session that brought it up: a session choosing another is told
/// so on every wgpu step).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    /// The backends programs run on: a wgpu step runs only where `backends.wgpu`, on the
    /// adapter `backends.adapter` chooses, and the differential oracle mirrors every value on
    /// wgpu only then.
    pub backends: Backends,
    /// Which catalogued classes are findings.
    pub policy: Policy,
    /// The oracles that follow the program.
    pub oracles: Oracles,
}

impl Session {
    /// A session on `backends` with every oracle and the default policy (seed signatures and
    /// uncatalogued panics are findings, catalogued guards and known findings are not).
    pub fn new(backends: Backends) -> Session {
        Session {
            backends,
            policy: Policy::default(),
            oracles: Oracles::ALL,
        }
    }

    /// The session this process's `DISPATCH_FUZZ_*` switches name (backends and wgpu adapter,
    /// crash-on classes, oracles off).
    pub fn from_config() -> Session {
        let config = config::get();
        Session {
            backends: config.backends,
            policy: config.policy().clone(),
            oracles: config.oracles,
        }
    }

    /// This session under another policy.
    pub fn with_policy(&self, policy: Policy) -> Session {
        Session {
            policy,
            ..self.clone()
        }
    }

    /// This session with another choice of oracles.
    pub fn with_oracles(&self, oracles: Oracles) -> Session {
        Session {
            oracles,
            ..self.clone()
        }
    }

    /// This session on other backends, wgpu still on this session's adapter choice (a process
    /// holds one wgpu device: the backends name which devices run, not where wgpu comes up).
    pub fn on(&self, backends: Backends) -> Session {
        Session {
            backends: backends.with_adapter(self.backends.adapter),
            ..self.clone()
        }
    }

    /// The `DISPATCH_FUZZ_*` switches that give a child `dispatch-fuzz` process this session
    /// (its backends, crash-on classes and oracles off), for the runs that need a process of
    /// their own: a fresh one, or one under limits. A class the catalogue lacks (`unknown`) is a
    /// finding under any policy and cannot be named there.
    pub fn switches(&self) -> [(&'static str, String); 3] {
        let backends = if self.backends.wgpu {
            "flex,capture,wgpu"
        } else {
            "flex,capture"
        };
        let known = known_classes();
        // A child process has no switch for finding_classes: they go as crash-on classes,
        // which make their known findings findings there too.
        let mut crash_on: Vec<&str> = (self.policy.crash_on.iter())
            .chain(&self.policy.finding_classes)
            .filter(|c| known.contains(c))
            .map(String::as_str)
            .collect();
        if self.policy.known_are_findings {
            crash_on.push(KNOWN);
        }
        let off: Vec<&str> = (ORACLES.iter())
            .filter(|o| !self.oracles.has(o.id))
            .map(|o| o.name)
            .collect();
        [
            (BACKENDS_VAR, backends.to_string()),
            (CRASH_ON_VAR, crash_on.join(",")),
            (ORACLES_OFF_VAR, off.join(",")),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::oracles::OracleId;

    /// The session a child process builds from `session`'s switches alone.
    fn through_switches(session: &Session) -> Session {
        let switches = session.switches();
        let config = Config::parse(|var| {
            (switches.iter())
                .find(|(name, _)| *name == var)
                .map(|(_, value)| value.clone())
        })
        .expect("the switches parse");
        Session {
            backends: config.backends,
            policy: config.policy().clone(),
            oracles: config.oracles,
        }
    }

    #[test]
    fn a_child_given_a_sessions_switches_runs_in_the_same_session() {
        let default = Session::new(Backends::FLEX_CAPTURE);
        let narrowed = default
            .with_policy(Policy::parse("replay-mismatch,known"))
            .with_oracles(Oracles::ALL.without(OracleId::Reference));
        for session in [default.clone(), narrowed] {
            assert_eq!(through_switches(&session), session);
        }
        if crate::interpreter::wgpu::BUILT {
            let on_wgpu = default.on(Backends::WITH_WGPU);
            assert_eq!(through_switches(&on_wgpu), on_wgpu);
        }
    }
}
