//! A reproducer's header: the `[dependencies]` lines and the `use` lines its code needs, read
//! from the code itself.

use std::fmt::Write as _;

use super::BURN;
use crate::program::mentions_ident;

/// `code` with every string literal's contents left out, so a word in a message is not taken for
/// a name the code uses.
pub fn without_strings(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in code.chars() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    in_string = false;
                    out.push(c);
                }
                _ => {}
            }
        } else {
            if c == '"' {
                in_string = true;
            }
            out.push(c);
        }
    }
    out
}

/// The `use` lines `code` needs: each name it uses from `burn::tensor` (and `Capture`, where
/// it takes a capture primitive), and nothing else.
pub(super) fn imports(code: &str) -> String {
    let stripped = without_strings(code);
    let code: &str = &stripped;
    let tensor: Vec<&str> = [
        "Bool",
        "BoolStore",
        "DType",
        "Device",
        "Float",
        "FloatDType",
        "Int",
        "IntDType",
        "Tensor",
        "TensorData",
        "Tolerance",
        "Transaction",
        "bf16",
        "f16",
    ]
    .into_iter()
    .filter(|name| {
        // A name used only as a path's tail (`burn::tensor::DType::F32`) needs no import.
        let mut rest = code;
        let mut bare = false;
        while let Some(at) = rest.find(name) {
            let before = rest[..at].chars().last();
            let after = rest[at + name.len()..].chars().next();
            let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            if !ident(before) && !ident(after) && !rest[..at].ends_with("::") {
                bare = true;
                break;
            }
            rest = &rest[at + name.len()..];
        }
        bare
    })
    .collect();
    let mut out = String::new();
    if code.contains("<Capture>") {
        out.push_str("use burn::backend::Capture;\n");
    }
    match tensor.as_slice() {
        [] => {}
        [one] => {
            let _ = writeln!(out, "use burn::tensor::{one};");
        }
        names => {
            let _ = writeln!(out, "use burn::tensor::{{{}}};", names.join(", "));
        }
    }
    out
}

/// The line that opens a reproducer's dependency list in its header.
pub const DEPENDENCIES_HEADER: &str = "Cargo.toml [dependencies], all the reproducer needs:";

/// The `burn` features `code` uses: Flex with its default `simd` and `rayon`, capture,
/// autodiff, wgpu (and `std` always).
pub(in crate::report) fn burn_features(code: &str) -> Vec<&'static str> {
    let mut features = vec!["std"];
    if code.contains("Device::flex()") || code.contains("backend::Flex") {
        features.extend(["flex", "simd", "rayon"]);
    }
    if code.contains("Device::capture()") {
        features.push("capture");
    }
    if mentions_ident(code, "autodiff") || code.contains(".require_grad()") {
        features.push("autodiff");
    }
    if code.contains("Device::wgpu(") || code.contains("backend::Cube") {
        features.push("wgpu");
    }
    features
}

/// A reproducer's header dependency list: the manifest lines, after [`DEPENDENCIES_HEADER`],
/// that build `code` as the `main.rs` of a crate of its own: `burn` with the features the code
/// uses (Flex with its default `simd` and `rayon`, capture, autodiff, wgpu), plus burn-router,
/// burn-ir and burn-backend where it replays a captured graph.
pub(super) fn dependencies(code: &str, replay: bool, threaded: bool) -> Vec<String> {
    let features: Vec<String> = burn_features(code)
        .iter()
        .map(|f| format!("\"{f}\""))
        .collect();
    let mut lines = vec![
        DEPENDENCIES_HEADER.to_string(),
        format!(
            "burn = {{ version = \"={BURN}\", default-features = false, features = [{}] }}",
            features.join(", ")
        ),
    ];
    if replay {
        for krate in ["burn-backend", "burn-ir", "burn-router"] {
            lines.push(format!("{krate} = \"={BURN}\""));
        }
    }
    if threaded {
        lines.push("rayon = \"1\"".to_string());
    }
    lines
}
