//! `--set path=value` overrides, applied to the parsed YAML before it is
//! typed, so an override is validated exactly like the file's own keys.
//!
//! A path is dot-separated (`algorithms.privbon.sigma`); a numeric segment
//! indexes a list (`datasets.0.path`). The value is parsed as YAML, so
//! `sigma=[0.5,1]`, `replicates=10` and `estimator=sampled` all work.
//! Missing mapping keys are created; a missing list index is an error.

use anyhow::Result;
use yaml_serde::{Mapping, Value};

use crate::bail_input;
use crate::select::algorithm::AlgorithmKind;

/// Apply one `path=value` override to `root`.
pub fn apply_set(root: &mut Value, assignment: &str) -> Result<()> {
    let Some((path, text)) = assignment.split_once('=') else {
        bail_input!(
            "--set {assignment}: expected PATH=VALUE, e.g. --set algorithms.{}.sigma=[0.5,1]",
            AlgorithmKind::PrivBon.name()
        );
    };
    let path = path.trim();
    if path.is_empty() || path.split('.').any(str::is_empty) {
        bail_input!(
            "--set {assignment}: `{path}` is not a key path; write keys separated by dots, e.g. n.log2"
        );
    }
    let value: Value = match yaml_serde::from_str(text) {
        Ok(v) => v,
        Err(e) => bail_input!("--set {assignment}: the value `{text}` is not valid YAML ({e})"),
    };
    let segments: Vec<&str> = path.split('.').collect();
    let mut node = root;
    for (depth, seg) in segments.iter().enumerate() {
        let here = segments[..depth].join(".");
        let last = depth + 1 == segments.len();
        if node.is_null() {
            *node = Value::Mapping(Mapping::new());
        }
        node = match node {
            Value::Mapping(m) => {
                let key = Value::String((*seg).to_string());
                if last {
                    m.insert(key, value);
                    return Ok(());
                }
                m.entry(key).or_insert(Value::Null)
            }
            Value::Sequence(items) => {
                let len = items.len();
                let Some(item) = seg.parse::<usize>().ok().and_then(|i| items.get_mut(i)) else {
                    bail_input!(
                        "--set {assignment}: `{here}` is a list of {len}; index it with a number below {len}, e.g. {here}.0"
                    );
                };
                if last {
                    *item = value;
                    return Ok(());
                }
                item
            }
            _ => bail_input!(
                "--set {assignment}: `{here}` is a single value, not a mapping or list; set `{here}` itself"
            ),
        };
    }
    unreachable!("the loop returns at the last segment")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Value {
        yaml_serde::from_str("a: {b: 1}\nl: [{p: x}, {p: y}]\n").unwrap()
    }

    #[test]
    fn sets_nested_keys_and_list_items() {
        let mut v = doc();
        apply_set(&mut v, "a.b=[0.5, 1]").unwrap();
        apply_set(&mut v, "a.c.d=sampled").unwrap();
        apply_set(&mut v, "l.1.p=z").unwrap();
        let want: Value =
            yaml_serde::from_str("a: {b: [0.5, 1], c: {d: sampled}}\nl: [{p: x}, {p: z}]\n")
                .unwrap();
        assert_eq!(v, want);
    }

    #[test]
    fn bad_paths_say_what_to_do() {
        let e = apply_set(&mut doc(), "l.5.p=z").unwrap_err().to_string();
        assert!(e.contains("`l` is a list of 2"), "{e}");
        let e = apply_set(&mut doc(), "a.b.c=1").unwrap_err().to_string();
        assert!(e.contains("`a.b` is a single value"), "{e}");
        let e = apply_set(&mut doc(), "a.b").unwrap_err().to_string();
        assert!(e.contains("expected PATH=VALUE"), "{e}");
    }
}
