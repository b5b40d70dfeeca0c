//! The minimizer: shrinks a failing program while its finding's signature stays exactly the
//! same (a candidate that fails differently is rejected, unlike libFuzzer's `tmin`). It offers a
//! small builder, [`Minimizer`], over any predicate, and [`minimize_finding`], which shrinks a
//! program's first finding and re-runs the result to tell a reproducer from a flaky one.

mod passes;
mod shrink;

pub use shrink::{minimize_finding, Minimized, Minimizer, Progress, Reproduction};
