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
    /// Its upstream status in a few words (`not reported`, `class open as tracel-ai/cubecl#68`),
    /// for the index.
    pub status: String,
    /// The upstream status with its evidence: the trackers searched, the sources read (the
    /// pinned release's and the newest reachable, each by commit and date).
    pub upstream: String,
    /// The root cause, traced in the pinned sources with file:line.
    pub cause: String,
    /// What should happen, with where that comes from: IEEE 754, Burn's doc comment, PyTorch's
    /// documented behaviour, another backend's result.
    pub expected: String,
    /// The stored cases it stands for.
    pub cases: Vec<String>,
    /// What the run shows beyond its own message, where that hides the failure (a shader that
    /// fails validation surfaces as a bare `ExecutionError`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub happens: Option<String>,
    /// The case its report shows, where not the smallest (one that shows the bug through the
    /// public API most directly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub show: Option<String>,
}

/// The repositories a bug may be owned by: Burn's own, and wgpu's, which holds naga, the shader
/// translator under cubecl's wgpu runtime.
pub const OWNERS: &[&str] = &[
    "tracel-ai/burn",
    "tracel-ai/cubecl",
    "tracel-ai/cubek",
    "gfx-rs/wgpu",
];
