//! A new finding settled inside the session that met it: minimized within a time budget, then run again.

use std::time::Duration;

use anyhow::Result;

use super::{minimize_finding, Minimized, Minimizer, Reproduction};
use crate::oracles::{Facts, Signature};
use crate::program::Program;
use crate::Session;

/// What a new finding turned out to be once minimized and run again.
#[derive(Clone, Debug)]
pub enum Settled {
    /// The minimized program shows the same signature, a finding no stored case knows, in
    /// every re-run.
    New {
        /// The minimized program and how far it shrank.
        minimized: Minimized,
        /// What went wrong in it, for grouping findings by root cause.
        facts: Facts,
    },
    /// Run again the program no longer shows that signature: the session's state reached it
    /// (a capture device, a cache, an earlier program), or it comes and goes. Its first
    /// program is kept as it was met.
    Unsettled {
        /// What the re-runs showed instead.
        why: String,
    },
}

/// Minimizes `program`, whose run in `session` met `signature` as a new finding, for at most
/// `budget` (candidates one at a time: the session's workers hold the other cores), then runs
/// the result again as the minimizer does.
pub fn settle(
    session: &Session,
    program: Program,
    signature: &Signature,
    budget: Duration,
) -> Result<Settled> {
    let again = crate::check(session, &program)?;
    match again.finding {
        Some(f) if &f.signature == signature => {}
        Some(f) => {
            return Ok(Settled::Unsettled {
                why: format!(
                    "run again, it showed another finding first: {}",
                    f.signature
                ),
            })
        }
        None => {
            return Ok(Settled::Unsettled {
                why: "run again, it showed no finding".to_string(),
            })
        }
    }
    let minimizer = Minimizer::new().jobs(1).time_limit(budget);
    let (shown, minimized, reproduction) = minimize_finding(program, session, minimizer)?;
    if &shown != signature {
        return Ok(Settled::Unsettled {
            why: format!("run again, it showed another finding first: {shown}"),
        });
    }
    if let Reproduction::Flaky { reproduced, runs } = reproduction {
        return Ok(Settled::Unsettled {
            why: format!("the minimized program showed it in {reproduced} of {runs} re-runs"),
        });
    }
    let facts = crate::check(session, &minimized.program)?
        .finding
        .map(|f| f.facts)
        .unwrap_or_default();
    Ok(Settled::New { minimized, facts })
}
