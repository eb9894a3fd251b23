//! The layering of `src/` (ARCHITECTURE.md, "Layers"): every top-level module
//! may use only modules in layers below its own, so imports point one way
//! and no two modules form a circle. This test reads every `crate::…` path
//! (including `use crate::{a, b::c}` groups and the crate's exported macros)
//! and fails on an upward or sideways import, a cycle, or a top-level module
//! that has not been given a layer.
//!
//! It reads the sources as text (no build needed) so that a wrong import
//! fails in CI with the offending file and line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top to bottom. A module may use the modules of any lower line, never of
/// its own line or a higher one.
const LAYERS: &[&[&str]] = &[
    &["main"],
    &["cli"],
    &["commands"],
    &["pipeline"],
    &["slurm"],
    &["check"],
    &["audit"],
    &["report"],
    &["shard"],
    &["sweep"],
    &["results"],
    &["config"],
    &["data"],
    &["privacy"],
    &["select"],
    &["math"],
    &["threads", "out"],
    &["fsutil"],
    &["rename"],
    &["error"],
];

/// `#[macro_export]` macros live at the crate root; they belong to the
/// module that defines them.
const MACROS: &[(&str, &str)] = &[("bail_input", "error"), ("out", "out"), ("outln", "out")];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a file under `src/` belongs to (`None`: lib.rs).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    match first.strip_suffix(".rs") {
        Some("lib") => None,
        Some(m) => Some(m.to_string()),
        None => Some(first),
    }
}

/// The top-level modules a line refers to through `crate::` (or
/// `privalign::` in main.rs), with `{…}` groups after `crate::` expanded.
fn references(line: &str, root: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find(root) {
        // `$crate::` inside macro bodies is the same crate.
        let after = &rest[i + root.len()..];
        if let Some(group) = after.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push(name);
                }
            }
        } else {
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
        rest = after;
    }
    out.into_iter()
        .map(|n| {
            MACROS
                .iter()
                .find(|(m, _)| *m == n)
                .map_or(n.clone(), |(_, owner)| owner.to_string())
        })
        .collect()
}

/// A multi-line `use crate::{\n a,\n b::c,\n};` joined onto one line.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with("//") {
            continue;
        }
        if let Some((start, mut acc)) = open.take() {
            acc.push_str(line);
            if line.contains('}') {
                out.push((start, acc));
            } else {
                open = Some((start, acc));
            }
            continue;
        }
        let opens_group = ["crate::{", "privalign::{"]
            .iter()
            .any(|r| line.contains(r) && !line[line.find(r).unwrap()..].contains('}'));
        if opens_group {
            open = Some((i + 1, line.to_string()));
        } else {
            out.push((i + 1, line.to_string()));
        }
    }
    out
}

#[test]
fn imports_point_down_and_form_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let Some(module) = module_of(&src, file) else {
            continue;
        };
        let Some(layer) = layer_of(&module) else {
            problems.push(format!(
                "src/{module}: a top-level module with no layer; add it to LAYERS in tests/layers.rs and to ARCHITECTURE.md"
            ));
            continue;
        };
        let root = if module == "main" {
            "privalign::"
        } else {
            "crate::"
        };
        let text = std::fs::read_to_string(file).unwrap();
        for (lineno, line) in logical_lines(&text) {
            for target in references(&line, root) {
                if target == module {
                    continue;
                }
                let Some(target_layer) = layer_of(&target) else {
                    continue; // a crate-root item that is not a module
                };
                graph
                    .entry(module.clone())
                    .or_default()
                    .insert(target.clone());
                if target_layer <= layer {
                    problems.push(format!(
                        "{}:{lineno}: `{module}` uses `{target}`, which is {} it; imports must point down (ARCHITECTURE.md, \"Layers\")",
                        file.strip_prefix(src.parent().unwrap()).unwrap().display(),
                        if target_layer == layer { "beside" } else { "above" }
                    ));
                }
            }
        }
    }
    if let Some(cycle) = find_cycle(&graph) {
        problems.push(format!("a cycle between modules: {}", cycle.join(" → ")));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A cycle in the module graph, as a path that returns to its start.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|s| s == node) {
            let mut cycle = stack[i..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_parser_sees_groups_and_macros() {
    assert_eq!(
        references("use crate::{bail_input, config::X, sweep};", "crate::"),
        ["error", "config", "sweep"]
    );
    assert_eq!(
        references(
            "crate::outln!(\"x\"); crate::report::format::Table",
            "crate::"
        ),
        ["out", "report"]
    );
    assert_eq!(
        logical_lines("use crate::{\n    a::b,\n    c,\n};\n// crate::x\n"),
        [(1, "use crate::{a::b,c,};".to_string())]
    );
}
