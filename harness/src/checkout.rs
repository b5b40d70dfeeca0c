//! Running the harness against a local Burn checkout: a copy of the project whose pins name the
//! checkout's versions and whose `[patch.crates-io]` points at its crates, built in its own
//! target dir. The project's own files are never written, so a failure or Ctrl-C leaves nothing
//! half-patched.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use serde::Deserialize;

/// The crates a checkout must provide, with why the harness needs each: the ones the harness
/// names in its manifest and the ones behind the `burn` features it enables. Other Burn crates
/// the lock file holds are patched when the checkout has them.
pub const REQUIRED: &[(&str, &str)] = &[
    ("burn", "the public API every program and reproducer calls"),
    ("burn-dispatch", "the dispatch layer under test"),
    ("burn-router", "records captured ops and replays them"),
    ("burn-ir", "the captured graph's representation"),
    ("burn-backend", "the Backend trait and tensor data"),
    ("burn-capture", "the `capture` feature: graph capture"),
    ("burn-flex", "the `flex` feature: the Flex CPU backend"),
    ("burn-autodiff", "the `autodiff` feature: autodiff moves"),
    (
        "burn-wgpu",
        "the `wgpu` feature: the differential's second backend",
    ),
];

/// What a user can get wrong when pointing the harness at a checkout.
#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    /// The path does not exist or is not a directory.
    #[error("{0} is not a directory")]
    NotADirectory(PathBuf),
    /// The path has no `Cargo.toml` at its top.
    #[error("{0} is not a Burn checkout: it has no Cargo.toml (give the repository's top folder)")]
    NoManifest(PathBuf),
    /// `cargo metadata` could not read the checkout's workspace.
    #[error("cargo cannot read the workspace at {path}: {stderr}")]
    Unreadable {
        /// The checkout.
        path: PathBuf,
        /// What cargo said.
        stderr: String,
    },
    /// Crates the harness needs are not members of the checkout's workspace.
    #[error("{path} lacks crates the harness needs: {}", missing.join("; "))]
    MissingCrates {
        /// The checkout.
        path: PathBuf,
        /// `name (why it is needed)` of each missing crate.
        missing: Vec<String>,
    },
    /// The project's manifest already patches crates.io, which the copy cannot merge with.
    #[error("{0} already has a [patch.crates-io] section: remove it, the copy adds its own")]
    AlreadyPatched(PathBuf),
}

/// One crate of the checkout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// Its version, as cargo resolves it (workspace inheritance included).
    pub version: String,
    /// Its folder.
    pub dir: PathBuf,
}

/// A validated checkout: the crates the copy patches, by name.
#[derive(Clone, Debug)]
pub struct Checkout {
    /// The checkout's top folder.
    pub path: PathBuf,
    /// Every crate the copy patches (members of the checkout the lock file names).
    pub patched: BTreeMap<String, Member>,
}

#[derive(Deserialize)]
struct Metadata {
    packages: Vec<Package>,
}

#[derive(Deserialize)]
struct Package {
    name: String,
    version: String,
    manifest_path: PathBuf,
}

/// Reads the checkout's workspace with `cargo metadata --no-deps` (which resolves inherited
/// versions and writes no lock file into the checkout) and keeps the crates `lock` names.
pub fn inspect(path: &Path, lock: &str) -> Result<Checkout> {
    if !path.is_dir() {
        return Err(CheckoutError::NotADirectory(path.to_path_buf()).into());
    }
    let manifest = path.join("Cargo.toml");
    if !manifest.is_file() {
        return Err(CheckoutError::NoManifest(path.to_path_buf()).into());
    }
    let out = Command::new(cargo())
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(&manifest)
        .output()
        .context("cannot run cargo")?;
    if !out.status.success() {
        return Err(CheckoutError::Unreadable {
            path: path.to_path_buf(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        }
        .into());
    }
    let metadata: Metadata =
        serde_json::from_slice(&out.stdout).context("cannot parse cargo metadata's output")?;
    let locked = lock_names(lock);
    let members: BTreeMap<String, Member> = metadata
        .packages
        .into_iter()
        .map(|p| {
            let dir = p.manifest_path.parent().map(Path::to_path_buf);
            (p.name, p.version, dir)
        })
        .filter_map(|(name, version, dir)| Some((name, Member { version, dir: dir? })))
        .collect();
    let missing: Vec<String> = REQUIRED
        .iter()
        .filter(|(name, _)| !members.contains_key(*name))
        .map(|(name, why)| format!("{name} ({why})"))
        .collect();
    if !missing.is_empty() {
        return Err(CheckoutError::MissingCrates {
            path: path.to_path_buf(),
            missing,
        }
        .into());
    }
    let patched = members
        .into_iter()
        .filter(|(name, _)| locked.iter().any(|l| l == name))
        .collect();
    Ok(Checkout {
        path: path.to_path_buf(),
        patched,
    })
}

/// The package names a `Cargo.lock` holds.
fn lock_names(lock: &str) -> Vec<String> {
    lock.lines()
        .filter_map(|l| l.strip_prefix("name = \""))
        .filter_map(|l| l.strip_suffix('"'))
        .map(str::to_string)
        .collect()
}

/// The project's `Cargo.toml` for the copy: each pinned dependency the checkout patches now
/// requires the checkout's exact version (so a checkout numbered other than the pin is used),
/// and a `[patch.crates-io]` section points every patched crate at its folder. `None` when the
/// manifest already has such a section, which the copy cannot merge with.
pub fn patched_manifest(manifest: &str, checkout: &Checkout) -> Option<String> {
    if manifest.lines().any(|l| l.trim() == "[patch.crates-io]") {
        return None;
    }
    let mut out = String::with_capacity(manifest.len() + 1024);
    let mut section = "";
    for line in manifest.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            section = trimmed;
        }
        let name = line.split('=').next().unwrap_or("").trim();
        match checkout.patched.get(name) {
            Some(member) if section == "[workspace.dependencies]" => {
                out.push_str(&repin(line, &member.version));
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "\n# Added for the Burn checkout at {}: every Burn crate the lock file names comes from \
         it.\n[patch.crates-io]\n",
        checkout.path.display()
    ));
    for (name, member) in &checkout.patched {
        out.push_str(&format!("{name} = {{ path = {:?} }}\n", member.dir));
    }
    Some(out)
}

/// `line` with its `"=VERSION"` requirement replaced by `"=version"`.
fn repin(line: &str, version: &str) -> String {
    match line.find("\"=") {
        Some(start) => {
            let rest = &line[start + 1..];
            let end = rest.find('"').map_or(line.len(), |e| start + 1 + e);
            format!("{}\"={version}{}", &line[..start], &line[end..])
        }
        None => line.to_string(),
    }
}

/// Writes the copy of `project` into `dest`: the files git tracks or would track (untracked
/// edits included, ignored build outputs not), each written only when its content changed so
/// cargo's freshness checks keep the copy's build incremental; `Cargo.toml` patched.
pub fn write_copy(project: &Path, dest: &Path, checkout: &Checkout) -> Result<usize> {
    let manifest_path = project.join("Cargo.toml");
    let manifest = std::fs::read_to_string(&manifest_path)
        .with_context(|| format!("cannot read {}", manifest_path.display()))?;
    let patched = patched_manifest(&manifest, checkout)
        .ok_or(CheckoutError::AlreadyPatched(manifest_path))?;
    let mut written = 0;
    for relative in project_files(project)? {
        let target = dest.join(&relative);
        let source = project.join(&relative);
        // A symlink (cargo-fuzz's corpus folders point at corpus/) is copied as the link.
        if let Ok(link) = std::fs::read_link(&source) {
            if std::fs::read_link(&target).ok().as_ref() != Some(&link) {
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent)
                        .with_context(|| format!("cannot create {}", parent.display()))?;
                }
                let _ = std::fs::remove_file(&target);
                symlink(&link, &target)
                    .with_context(|| format!("cannot link {}", target.display()))?;
                written += 1;
            }
            continue;
        }
        let content = if relative == Path::new("Cargo.toml") {
            patched.clone().into_bytes()
        } else {
            match std::fs::read(&source) {
                Ok(bytes) => bytes,
                // Listed by git but deleted in the work tree.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot read {}", source.display()))
                }
            }
        };
        if std::fs::read(&target).ok().as_deref() == Some(&content[..]) {
            continue;
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&target, &content)
            .with_context(|| format!("cannot write {}", target.display()))?;
        written += 1;
    }
    Ok(written)
}

#[cfg(unix)]
fn symlink(link: &Path, at: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(link, at)
}

#[cfg(windows)]
fn symlink(link: &Path, at: &Path) -> std::io::Result<()> {
    std::os::windows::fs::symlink_dir(link, at)
}

/// The project's files relative to its root: git's view where it is a git work tree, else a
/// walk that skips `target/` and `.git/`.
fn project_files(project: &Path) -> Result<Vec<PathBuf>> {
    let git = Command::new("git")
        .arg("-C")
        .arg(project)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output();
    if let Ok(out) = git {
        if out.status.success() {
            return Ok(out
                .stdout
                .split(|b| *b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
                .collect());
        }
    }
    let mut files = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(dir) = stack.pop() {
        let full = project.join(&dir);
        for entry in
            std::fs::read_dir(&full).with_context(|| format!("cannot list {}", full.display()))?
        {
            let entry = entry?;
            let name = entry.file_name();
            if name == "target" || name == ".git" {
                continue;
            }
            let relative = dir.join(&name);
            if entry.file_type()?.is_dir() {
                stack.push(relative);
            } else {
                files.push(relative);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// The cargo that runs this process's builds (`$CARGO` under cargo), else `cargo` on `PATH`.
pub fn cargo() -> PathBuf {
    std::env::var_os("CARGO").map_or_else(|| PathBuf::from("cargo"), PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkout(names: &[(&str, &str)]) -> Checkout {
        Checkout {
            path: PathBuf::from("burn"),
            patched: names
                .iter()
                .map(|(n, v)| {
                    let member = Member {
                        version: v.to_string(),
                        dir: PathBuf::from(format!("burn/crates/{n}")),
                    };
                    (n.to_string(), member)
                })
                .collect(),
        }
    }

    #[test]
    fn the_copy_pins_the_checkouts_versions_and_patches_its_crates() {
        let manifest = "[workspace]\nmembers = [\"harness\"]\n\n[workspace.dependencies]\n\
                        burn = { version = \"=0.23.0-pre.1\", features = [\"std\"] }\n\
                        burn-ir = \"=0.23.0-pre.1\"\nserde = \"=1.0.0\"\n";
        let patched = patched_manifest(
            manifest,
            &checkout(&[("burn", "0.24.0"), ("burn-ir", "0.24.0")]),
        )
        .unwrap();
        assert!(patched.contains("burn = { version = \"=0.24.0\", features = [\"std\"] }"));
        assert!(patched.contains("burn-ir = \"=0.24.0\"\n"));
        assert!(patched.contains("serde = \"=1.0.0\"\n"), "{patched}");
        assert!(patched.contains("[patch.crates-io]\nburn = { path = \"burn/crates/burn\" }\n"));
    }

    #[test]
    fn a_manifest_that_already_patches_crates_io_is_refused() {
        let manifest = "[patch.crates-io]\nburn = { path = \"x\" }\n";
        assert!(patched_manifest(manifest, &checkout(&[("burn", "1.0.0")])).is_none());
    }

    #[test]
    fn the_lock_files_package_names_are_read() {
        let lock = "[[package]]\nname = \"burn\"\nversion = \"0.23.0-pre.1\"\n\n[[package]]\n\
                    name = \"burn-ir\"\n";
        assert_eq!(lock_names(lock), ["burn", "burn-ir"]);
    }
}
