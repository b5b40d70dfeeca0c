//! The rooms of `lib.rs`'s doc, checked on the source: no module imports one that imports it
//! back (directly or around a circle), at the top level or among siblings at any depth, and the ground
//! floors import nothing above them. Imports are read from `crate::` and `super::` paths,
//! including names a parent re-exports from a sibling.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module path (`["oracles", "model"]`) -> source text, for every file under `src/`.
fn modules() -> BTreeMap<Vec<String>, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = common::rust_files(&src);
    files
        .into_iter()
        // A test module, in its own `tests.rs` or after `#[cfg(test)]`, may import anything.
        .filter(|p| {
            !p.starts_with(src.join("cli"))
                && !p.ends_with("main.rs")
                && !p.ends_with("cli.rs")
                && !p.ends_with("tests.rs")
        })
        .map(|p| {
            let rel = p.strip_prefix(&src).unwrap().with_extension("");
            let path: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .filter(|c| c != "lib")
                .collect();
            (path, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// The source without comments and test modules (a test may import anything).
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first path segment after each `prefix` (`crate::`, `super::`), braces expanded one level.
fn targets(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        rest = &rest[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.extend(first_segment(&item));
                        item.clear();
                    }
                    c => item.push(c),
                }
            }
            out.extend(first_segment(&item));
        } else {
            out.extend(first_segment(rest));
        }
    }
    out
}

fn first_segment(text: &str) -> Option<String> {
    let name: String = text
        .trim()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty() && name != "self").then_some(name)
}

/// Names a module re-exports with `pub use child::...`: name -> child.
fn reexports(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let code = code(text);
    for statement in code.split(';') {
        let Some(rest) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((child, names)) = rest.split_once("::") else {
            continue;
        };
        let names = names.trim().trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',') {
            let name = name.split(" as ").last().unwrap_or(name);
            out.extend(first_segment(name).map(|n| (n, child.trim().to_string())));
        }
    }
    out
}

/// Edges between top-level modules and between siblings at every depth: (parent, from, to).
fn edges() -> BTreeSet<(String, String, String)> {
    let modules = modules();
    let top: BTreeSet<String> = modules
        .keys()
        .filter(|k| k.len() == 1)
        .map(|k| k[0].clone())
        .collect();
    let mut edges = BTreeSet::new();
    for (path, text) in &modules {
        if path.is_empty() {
            continue;
        }
        let body = code(text);
        // The crate names itself `dispatch_fuzz` too (`extern crate self`), and an import
        // written that way is as much an edge.
        let mut named = targets(&body, "crate::");
        named.extend(targets(&body, "dispatch_fuzz::"));
        for target in named {
            if top.contains(&target) && target != path[0] {
                edges.insert((String::new(), path[0].clone(), target));
            }
        }
        // Among siblings, at every depth: `super::x` and `crate::<parent>::x` name a sibling
        // or what the parent re-exports from one.
        if path.len() >= 2 {
            let parent_path = &path[..path.len() - 1];
            let parent = parent_path.join("::");
            let me = &path[path.len() - 1];
            let siblings: BTreeSet<String> = modules
                .keys()
                .filter(|k| k.len() == path.len() && k[..k.len() - 1] == *parent_path)
                .map(|k| k[k.len() - 1].clone())
                .collect();
            let parent_text = modules.get(parent_path).cloned().unwrap_or_default();
            let exported = reexports(&parent_text);
            let mut named = targets(&body, "super::");
            named.extend(targets(&body, &format!("crate::{parent}::")));
            for name in named {
                let to = if siblings.contains(&name) {
                    Some(name)
                } else {
                    exported.get(&name).cloned()
                };
                if let Some(to) = to.filter(|t| t != me) {
                    edges.insert((parent.clone(), me.clone(), to));
                }
            }
        }
    }
    edges
}

/// A circle through the graph, if there is one.
fn circle(edges: &BTreeSet<(String, String)>) -> Option<Vec<String>> {
    let nodes: BTreeSet<&String> = edges.iter().flat_map(|(a, b)| [a, b]).collect();
    fn visit<'a>(
        node: &'a String,
        edges: &'a BTreeSet<(String, String)>,
        stack: &mut Vec<&'a String>,
        done: &mut BTreeSet<&'a String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|n| *n == node) {
            return Some(
                stack[at..]
                    .iter()
                    .map(|s| s.to_string())
                    .chain([node.clone()])
                    .collect(),
            );
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node);
        for (_, to) in edges.iter().filter(|(from, _)| from == node) {
            if let Some(c) = visit(to, edges, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(node);
        None
    }
    let mut done = BTreeSet::new();
    nodes
        .into_iter()
        .find_map(|n| visit(n, edges, &mut Vec::new(), &mut done))
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let edges = edges();
    for (parent, from, to) in &edges {
        eprintln!("{parent:>12}: {from} -> {to}");
    }
    let parents: BTreeSet<&String> = edges.iter().map(|(p, _, _)| p).collect();
    assert!(
        parents.len() > 3,
        "the reader found too few modules: {parents:?}"
    );
    for parent in parents {
        let graph: BTreeSet<(String, String)> = edges
            .iter()
            .filter(|(p, _, _)| p == parent)
            .map(|(_, a, b)| (a.clone(), b.clone()))
            .collect();
        let room = if parent.is_empty() {
            "the crate"
        } else {
            parent
        };
        assert_eq!(circle(&graph), None, "import circle in {room}");
    }
}

#[test]
fn the_program_and_the_interpreter_import_nothing_above_them() {
    let edges = edges();
    let from = |m: &str| -> BTreeSet<String> {
        edges
            .iter()
            .filter(|(p, a, _)| p.is_empty() && a == m)
            .map(|(_, _, b)| b.clone())
            .collect()
    };
    let allowed = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    let program = from("program");
    assert!(
        program.is_subset(&allowed(&["hash", "rng"])),
        "program imports {program:?}"
    );
    let interpreter = from("interpreter");
    assert!(
        interpreter.is_subset(&allowed(&["hash", "program"])),
        "interpreter imports {interpreter:?}"
    );
}

#[test]
fn the_reader_sees_a_circle_when_there_is_one() {
    let graph: BTreeSet<(String, String)> = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert!(circle(&graph).is_some());
    assert_eq!(
        targets(
            "use super::{compare::{self, X}, faults, Oracle};",
            "super::"
        ),
        ["Oracle", "compare", "faults"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    );
}
