//! Embeds the signatures of the reviewed regression cases (`regressions/*.json`, not `pending/`
//! or `divergences/`), each case's `also` programs' too, and the root-cause predicate a case
//! states, as data: a finding they explain is a known finding, counted and reported but not
//! aborted on, so fuzzing runs past every bug already stored.

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

/// The root-cause key a case declares (`"key": ["class", "summary", ...]`), or every field when
/// it declares none. A key naming no field of a signature, or a signature without its three
/// base fields, fails the build rather than match nothing (or everything); the harness's test
/// of the store parses each signature in full.
fn key_of(path: &Path, signature: &str, json: &serde_json::Value) -> Vec<String> {
    let all = ["class", "summary", "origin", "op", "operands", "role"];
    if signature.split(" | ").count() < 3 {
        panic!(
            "{}: signature {signature:?} lacks `class | summary | origin`",
            path.display()
        );
    }
    match json.get("key") {
        None => all.iter().map(|f| f.to_string()).collect(),
        Some(serde_json::Value::Array(fields)) => fields
            .iter()
            .map(|f| {
                let f = f.as_str().unwrap_or_default();
                if !all.contains(&f) {
                    panic!("{}: key field {f:?} is not one of {all:?}", path.display());
                }
                f.to_string()
            })
            .collect(),
        Some(other) => panic!(
            "{}: key {other} is not a list of field names",
            path.display()
        ),
    }
}

fn main() {
    // Read at run time, not with `env!`: a build script compiled for one checkout is reused for
    // another with the same source (a worktree sharing the target folder), and `env!` would
    // point it at the first one's store.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let burn = locked_version(&manifest, "burn").expect("Cargo.lock names the burn it resolved");
    println!("cargo:rustc-env=DISPATCH_FUZZ_BURN_VERSION={burn}");
    // A cubecl, cubek or wgpu report names the versions its repository releases.
    for (name, var) in [("cubecl", "CUBECL"), ("cubek", "CUBEK"), ("wgpu", "WGPU")] {
        let version = locked_version(&manifest, name).unwrap_or_else(|| "unknown".into());
        println!("cargo:rustc-env=DISPATCH_FUZZ_{var}_VERSION={version}");
    }
    // The compiler that builds the harness builds Burn too: a report's environment names it.
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(&rustc)
        .arg("-V")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=DISPATCH_FUZZ_RUSTC={version}");
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
            let key = key_of(&path, signature, &json);
            // The adapter classes a wgpu case holds on, as `backend/driver/device_type`.
            let adapters: Vec<String> = (json.get("adapters").and_then(|a| a.as_array()))
                .into_iter()
                .flatten()
                .map(|a| {
                    let part = |f: &str| a.get(f).and_then(|v| v.as_str()).unwrap_or_default();
                    format!(
                        "{}/{}/{}",
                        part("backend"),
                        part("driver"),
                        part("device_type")
                    )
                })
                .collect();
            // The programs of the same root cause under other signatures: the same key over each.
            let also = json.get("also").and_then(|a| a.as_array());
            for other in also.into_iter().flatten() {
                let Some(text) = other.get("signature").and_then(|s| s.as_str()) else {
                    panic!("{}: an `also` program names no signature", path.display());
                };
                if text.split(" | ").next() != signature.split(" | ").next() {
                    panic!(
                        "{}: `also` signature {text:?} is not of the case's class",
                        path.display()
                    );
                }
                key_of(&path, text, &json);
                let row = (text.to_string(), key.clone(), true, None);
                cases.push((name.clone(), row, adapters.clone()));
            }
            // The root-cause predicate, parsed by the harness (its test parses every one).
            let predicate = json.get("predicate").map(|p| p.to_string());
            let row = (signature.to_string(), key, false, predicate);
            cases.push((name, row, adapters));
        }
    }
    cases.sort();
    let mut out = String::from("&[\n");
    for (name, (signature, key, also, predicate), adapters) in &cases {
        let _ = writeln!(
            out,
            "    ({name:?}, {signature:?}, &{key:?}, {also}, {predicate:?}, &{adapters:?}),"
        );
    }
    out.push(']');
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("known_findings.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
}
