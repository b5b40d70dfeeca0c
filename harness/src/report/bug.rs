//! A root cause as the table of root causes (`regressions/upstream/bugs.json`) states it: what
//! both a case's report and its root cause's grouped report read.

use serde::{Deserialize, Serialize};

/// One root cause, as `regressions/upstream/bugs.json` states it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Bug {
    /// The report's file stem.
    pub id: String,
    /// The title: the bug, stated.
    pub title: String,
    /// The repository whose code holds the fault: `tracel-ai/burn`, `tracel-ai/cubecl` or
    /// `tracel-ai/cubek`.
    pub repo: String,
    /// The crates (and files) a fix touches.
    pub crates: String,
    /// Its upstream status in a few words (`not reported`, `class open as tracel-ai/cubecl#68`);
    /// the shown case's `upstream` note has the evidence.
    pub status: String,
    /// What should happen, with where that comes from: IEEE 754, Burn's doc comment, PyTorch's
    /// documented behaviour, another backend's result.
    pub expected: String,
    /// The stored cases it stands for.
    pub cases: Vec<String>,
}

/// The repositories a bug may be owned by: Burn's own, and wgpu's, which holds naga, the shader
/// translator under cubecl's wgpu runtime.
pub const OWNERS: &[&str] = &[
    "tracel-ai/burn",
    "tracel-ai/cubecl",
    "tracel-ai/cubek",
    "gfx-rs/wgpu",
];
