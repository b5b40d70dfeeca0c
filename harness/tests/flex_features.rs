//! The Flex the harness judges is the Flex users run: every feature of burn-flex's default set
//! (its SIMD kernels, its rayon-parallel loops) is on in the harness's build, as it is in a
//! build that adds `burn` with its defaults.

use std::collections::BTreeSet;
use std::path::PathBuf;

/// `cargo tree`'s line for burn-flex as the harness builds it: its version and features.
fn flex_as_built() -> (String, BTreeSet<String>) {
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let out = std::process::Command::new(cargo)
        .args(["tree", "--offline", "-p", "burn-flex", "--depth", "0"])
        .args(["-e", "features", "-f", "{p}|{f}"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = text.lines().next().expect("burn-flex is a dependency");
    let (package, features) = line.split_once('|').unwrap();
    let version = package
        .split_whitespace()
        .nth(1)
        .unwrap()
        .trim_start_matches('v');
    let features = features.split(',').map(str::to_string).collect();
    (version.to_string(), features)
}

/// burn-flex's `default` feature list, from its manifest in cargo's registry sources.
fn flex_defaults(version: &str) -> BTreeSet<String> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .expect("CARGO_HOME or HOME is set");
    let sources = home.join("registry").join("src");
    let manifest = (std::fs::read_dir(&sources).expect("cargo's registry sources"))
        .flatten()
        .map(|index| index.path().join(format!("burn-flex-{version}/Cargo.toml")))
        .find(|p| p.exists())
        .expect("burn-flex's manifest in the registry sources");
    let text = std::fs::read_to_string(manifest).unwrap();
    let list = text
        .split_once("\ndefault = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .expect("burn-flex declares a default feature set")
        .0;
    list.split(',')
        .map(|f| f.trim().trim_matches('"').to_string())
        .filter(|f| !f.is_empty())
        .collect()
}

#[test]
fn the_harness_builds_burn_flex_with_every_feature_of_its_default_set() {
    let (version, enabled) = flex_as_built();
    let defaults = flex_defaults(&version);
    assert!(
        defaults.contains("simd") && defaults.contains("rayon"),
        "burn-flex's default set changed to {defaults:?}: say in the README which Flex is judged"
    );
    let missing: Vec<_> = defaults.difference(&enabled).collect();
    assert!(
        missing.is_empty(),
        "burn-flex is built without {missing:?} of its defaults {defaults:?}: the harness would \
         judge a Flex users do not run (enable them through burn's features in Cargo.toml)"
    );
}
