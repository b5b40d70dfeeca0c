//! Embeds the signatures of the reviewed regression cases (`regressions/*.json`, not `pending/`
//! or `divergences/`) as data: a finding with one of them is a known finding, counted and
//! reported but not aborted on, so fuzzing runs past every bug already stored.

use std::fmt::Write as _;
use std::path::Path;

/// The resolved version of `name` in the workspace's `Cargo.lock`, so printed reproducers and
/// reports name the Burn the harness really builds (a bump or a `[patch]` needs no edit here).
fn locked_version(manifest: &str, name: &str) -> Option<String> {
    let lock = Path::new(manifest).join("../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = std::fs::read_to_string(lock).ok()?;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() == format!("name = \"{name}\"") {
            let version = lines.next()?.trim().strip_prefix("version = \"")?;
            return Some(version.trim_end_matches('"').to_string());
        }
    }
    None
}

fn main() {
    // Read at run time, not with `env!`: a build script compiled for one checkout is reused for
    // another with the same source (a worktree sharing the target folder), and `env!` would
    // point it at the first one's store.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let burn = locked_version(&manifest, "burn").expect("Cargo.lock names the burn it resolved");
    println!("cargo:rustc-env=DISPATCH_FUZZ_BURN_VERSION={burn}");
    let dir = Path::new(&manifest).join("../regressions");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut cases = Vec::new();
    // A missing store is an error, never an empty list: that would make every stored bug a new
    // finding again, silently.
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: cannot list the regression store: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        println!("cargo:rerun-if-changed={}", path.display());
        let text = std::fs::read_to_string(&path).expect("a regression case is readable");
        let json: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()));
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if let Some(signature) = json.get("signature").and_then(|s| s.as_str()) {
            cases.push((name, signature.to_string()));
        }
    }
    cases.sort();
    let mut out = String::from("&[\n");
    for (name, signature) in &cases {
        let _ = writeln!(out, "    ({name:?}, {signature:?}),");
    }
    out.push(']');
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("known_findings.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
}
