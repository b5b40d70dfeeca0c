//! Embeds the signatures of the reviewed regression cases (`regressions/*.json`, not `pending/`
//! or `divergences/`) as data: a finding with one of them is a known finding, counted and
//! reported but not aborted on, so fuzzing runs past every bug already stored.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../regressions");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut cases = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&dir) {
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
