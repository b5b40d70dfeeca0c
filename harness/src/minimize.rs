//! The minimizer: shrinks a failing program while its finding's signature stays exactly the
//! same (a candidate that fails differently is rejected, unlike libFuzzer's `tmin`). It offers a
//! small builder, [`Minimizer`], over any predicate, and [`minimize_finding`], which shrinks a
//! program's first finding and re-runs the result to tell a reproducer from a flaky one;
//! [`triage`] does both within a time budget for a finding the fuzz session just met.

mod passes;
mod shrink;
pub mod triage;

pub use shrink::{minimize_finding, Minimized, Minimizer, Progress, Reproduction, PARALLEL_FROM};

use crate::oracles::known::stored_case;
use crate::program::Input;
use crate::Session;

/// The session a saved finding is minimized (or printed) in: `base` with the input's own class
/// as a finding too. Known findings count too only when the input's own finding is one (a
/// stored case re-minimized): otherwise a known finding earlier in the program would take the
/// place of the one the file was saved for.
pub fn session_for(input: &Input, base: &Session) -> Session {
    let known = (input.signature.as_deref())
        .map(|s| s.parse().ok().and_then(|s| stored_case(&s)).is_some());
    let policy = match known {
        // A finding no case stores: a stored bug met earlier in its program (a known quantized
        // add_zero before a new quantized select) stays known, or minimizing would keep it.
        Some(false) => base.policy.with_new_class(input.class.as_deref()),
        _ => base.policy.with_class(input.class.as_deref()),
    };
    base.with_policy(policy)
}
