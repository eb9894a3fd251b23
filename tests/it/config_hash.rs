//! The config hash covers every key (ARCHITECTURE.md, "Config hash"): a
//! table with one mutation per key of the config schema (src/config/types.rs),
//! checked to list exactly the keys a fully specified config serialises to,
//! so a key added to the schema without a row here fails the test. Each
//! mutation must change `config_hash`; it changes `cells_hash` exactly for
//! the keys the cells depend on. End to end, `sweep --resume` after changing
//! `fsrc.sigma` or a report recomputes instead of saying "nothing to do".

use crate::common::*;
use privalign::config::hash::{cells_hash, config_hash};
use privalign::config::{ExperimentConfig, parse};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// A config with every optional key present and set away from its default.
const FULL: &str = r#"
name: full
description: every key set
datasets:
  - {path: ../data/x, name: x}
reward_models:
  a: {transform: {kind: clip, lo: -1.0, hi: 2.0, r_max: 1.0}, delta_r: 0.5}
n: [2, 4]
replicates: 3
seed: 1
sampling: without_replacement
estimator: sampled
lambda_nodes: 8
privacy: {delta: 0.02, paper_eps1: true}
algorithms:
  bon: {}
  privbon: {sigma: [0.5]}
  privbon_gauss: {sigma: [0.5]}
  itp: {beta: [0.1], batches: shared, envelope: batch_max, fallback: dataset_base}
  privitp: {sigma: [0.5], beta: [0.1], split: half, L: 3, clamp: [0, 1], batches: shared, envelope: batch_max, fallback: dataset_base, acceptance: noise_averaged, noise_draws: 10}
convention: paper
fsrc: {eps_total: 50, n: 4, sigma: [1.0], split: half, beta: 0.1, L: 3, clamp: [0, 1], seeds: 2, sampling: with_replacement, reward_models: [a]}
reports:
  tables: [{kind: lift, n: 4, sigma: 0.5, beta: 0.1}]
  plots: [{kind: scaling, n: 4, sigma: 0.5, beta: 0.1}]
"#;

/// (key path, mutated value, whether the cells depend on it).
fn table() -> Vec<(&'static str, Value, bool)> {
    vec![
        ("name", json!("other"), false),
        ("description", json!("changed"), false),
        ("datasets[0].path", json!("../data/y"), true),
        ("datasets[0].name", json!("y"), true),
        ("reward_models.a.transform.kind", json!("sigmoid"), true),
        ("reward_models.a.transform.lo", json!(-2.0), true),
        ("reward_models.a.transform.hi", json!(3.0), true),
        ("reward_models.a.transform.r_max", json!(2.0), true),
        ("reward_models.a.delta_r", json!(0.25), true),
        ("n", json!([2, 8]), true),
        ("replicates", json!(4), true),
        ("seed", json!(2), true),
        ("sampling", json!("with_replacement"), true),
        ("estimator", json!("conditional"), true),
        ("lambda_nodes", json!(16), true),
        ("privacy.delta", json!(0.01), true),
        ("privacy.paper_eps1", json!(false), true),
        ("algorithms.bon", Value::Null, true),
        ("algorithms.privbon.sigma", json!([0.25]), true),
        ("algorithms.privbon_gauss.sigma", json!([0.25]), true),
        ("algorithms.itp.beta", json!([0.2]), true),
        ("algorithms.itp.batches", json!("fresh"), true),
        ("algorithms.privitp.sigma", json!([0.25]), true),
        ("algorithms.privitp.beta", json!([0.2]), true),
        (
            "algorithms.privitp.split",
            json!({"sigma_x": 0.2, "sigma_z": 0.3}),
            true,
        ),
        ("algorithms.privitp.L", json!(4.0), true),
        ("algorithms.privitp.clamp", json!([0.0, 0.5]), true),
        ("algorithms.privitp.batches", json!("fresh"), true),
        ("algorithms.itp.envelope", json!("paper"), true),
        ("algorithms.itp.fallback", json!("pool"), true),
        ("algorithms.privitp.envelope", json!("paper"), true),
        ("algorithms.privitp.fallback", json!("pool"), true),
        ("algorithms.privitp.acceptance", json!("exact"), true),
        ("algorithms.privitp.noise_draws", json!(20), true),
        ("convention", json!("reference-scripts"), true),
        ("fsrc.eps_total", json!(40.0), false),
        ("fsrc.n", json!(8), false),
        ("fsrc.sigma", json!([2.0]), false),
        ("fsrc.split", json!({"sigma_x": 0.2, "sigma_z": 0.3}), false),
        ("fsrc.sampling", json!("without_replacement"), false),
        ("fsrc.beta", json!(0.2), false),
        ("fsrc.L", json!(4.0), false),
        ("fsrc.clamp", json!([0.0, 0.5]), false),
        ("fsrc.seeds", json!(3), false),
        ("fsrc.reward_models", json!(["b"]), false),
        ("reports.tables[0].kind", json!("winrate"), false),
        ("reports.tables[0].n", json!(2), false),
        ("reports.tables[0].sigma", json!(0.25), false),
        ("reports.tables[0].beta", json!(0.2), false),
        ("reports.plots[0].kind", json!("sigma"), false),
        ("reports.plots[0].n", json!(2), false),
        ("reports.plots[0].sigma", json!(0.25), false),
        ("reports.plots[0].beta", json!(0.2), false),
    ]
}

/// Leaf key paths of a serialised config: objects are walked, arrays of
/// objects are indexed, arrays of scalars and empty objects are leaves.
fn leaves(v: &Value, path: &str, out: &mut BTreeSet<String>) {
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, x) in m {
                leaves(x, &join(k), out);
            }
        }
        Value::Array(a) if a.iter().any(Value::is_object) => {
            for (i, x) in a.iter().enumerate() {
                leaves(x, &format!("{path}[{i}]"), out);
            }
        }
        _ => {
            out.insert(path.to_string());
        }
    }
}

fn set_path(v: &mut Value, path: &str, new: Value) {
    let mut cur = v;
    for part in path.split('.') {
        let (key, idx) = match part.split_once('[') {
            Some((k, i)) => (k, Some(i.trim_end_matches(']').parse::<usize>().unwrap())),
            None => (part, None),
        };
        cur = cur
            .get_mut(key)
            .unwrap_or_else(|| panic!("{path}: no {key}"));
        if let Some(i) = idx {
            cur = cur.get_mut(i).unwrap();
        }
    }
    assert_ne!(*cur, new, "{path}: the mutation must change the value");
    *cur = new;
}

fn get_path<'a>(v: &'a Value, path: &str) -> &'a Value {
    let mut cur = v;
    for part in path.split('.') {
        let (key, idx) = part.split_once('[').unwrap_or((part, ""));
        cur = &cur[key];
        if let Ok(i) = idx.trim_end_matches(']').parse::<usize>() {
            cur = &cur[i];
        }
    }
    cur
}

fn full() -> ExperimentConfig {
    parse(FULL, &[]).expect("the full config is valid")
}

#[test]
fn the_table_lists_every_key_of_the_schema() {
    let v = serde_json::to_value(full()).unwrap();
    let mut keys = BTreeSet::new();
    leaves(&v, "", &mut keys);
    let unset: Vec<&String> = keys.iter().filter(|k| get_path(&v, k).is_null()).collect();
    assert!(
        unset.is_empty(),
        "the full config leaves keys unset: {unset:?}"
    );
    let listed: BTreeSet<String> = table().iter().map(|(k, _, _)| k.to_string()).collect();
    assert_eq!(
        listed, keys,
        "tests/it/config_hash.rs lists different keys than the schema serialises; add a row per new key"
    );
}

#[test]
fn every_key_changes_the_config_hash_and_cell_keys_the_cells_hash() {
    let base = full();
    let ds = vec![("x".to_string(), "ab".repeat(32))];
    let (h0, c0) = (
        config_hash(&base, &ds).unwrap(),
        cells_hash(&base, &ds).unwrap(),
    );
    let mut seen = BTreeSet::new();
    for (path, new, cells) in table() {
        let mut v = serde_json::to_value(&base).unwrap();
        set_path(&mut v, path, new);
        let cfg: ExperimentConfig = serde_json::from_value(v)
            .unwrap_or_else(|e| panic!("{path}: mutated config does not type-check: {e}"));
        assert_ne!(cfg, base, "{path}");
        let h = config_hash(&cfg, &ds).unwrap();
        assert_ne!(h, h0, "{path}: changing it must change the config hash");
        assert!(seen.insert(h), "{path}: two mutations gave one hash");
        let c = cells_hash(&cfg, &ds).unwrap();
        assert_eq!(c != c0, cells, "{path}: cells hash changed = {}", c != c0);
    }
    // The data and the dataset's name are part of both.
    let other = vec![("x".to_string(), "cd".repeat(32))];
    assert_ne!(config_hash(&base, &other).unwrap(), h0);
    assert_ne!(cells_hash(&base, &other).unwrap(), c0);
    // Same config, same data: same hash (deterministic).
    assert_eq!(config_hash(&full(), &ds).unwrap(), h0);
}

fn sweep(cfg: &std::path::Path, out: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut a = vec![
        "sweep",
        "--no-progress",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--resume",
    ];
    a.extend_from_slice(extra);
    run(&a)
}

#[test]
fn resume_with_a_changed_fsrc_or_report_recomputes_them() {
    let d = tempfile::tempdir().unwrap();
    let fixed = fixed_results();
    let m: serde_json::Value =
        yaml_serde::from_str(&std::fs::read_to_string(fixed.join("manifest.yaml")).unwrap())
            .unwrap();
    let cfg = std::path::Path::new(m["config_path"].as_str().unwrap()).to_path_buf();
    let out = d.path().join("r");
    let o = sweep(&cfg, &out, &[]);
    ok(&o);
    let o = sweep(&cfg, &out, &[]);
    ok(&o);
    assert!(stdout(&o).contains("nothing to do"), "{}", stdout(&o));
    let fsrc_before = std::fs::read(out.join("fsrc.parquet")).unwrap();

    // fsrc.sigma changed: FSRC is rerun with the new σ, the manifest records it.
    let o = sweep(&cfg, &out, &["--set", "fsrc.sigma=[2.0]"]);
    ok(&o);
    assert!(!stdout(&o).contains("nothing to do"), "{}", stdout(&o));
    assert_ne!(
        std::fs::read(out.join("fsrc.parquet")).unwrap(),
        fsrc_before
    );
    let f = read_parquet(&out.join("fsrc.parquet"));
    let sig: Vec<f64> = f
        .column("sigma")
        .unwrap()
        .f64()
        .unwrap()
        .into_no_null_iter()
        .collect();
    assert!(sig.iter().all(|&s| s == 2.0), "{sig:?}");
    let text = std::fs::read_to_string(out.join("manifest.yaml")).unwrap();
    assert!(text.contains("- 2.0"), "{text}");

    // A report added: not "nothing to do" either (the manifest records reports).
    let o = sweep(
        &cfg,
        &out,
        &[
            "--set",
            "fsrc.sigma=[2.0]",
            "--set",
            "reports.tables=[{kind: lift}]",
        ],
    );
    ok(&o);
    assert!(!stdout(&o).contains("nothing to do"), "{}", stdout(&o));
    // And the same again is up to date.
    let o = sweep(
        &cfg,
        &out,
        &[
            "--set",
            "fsrc.sigma=[2.0]",
            "--set",
            "reports.tables=[{kind: lift}]",
        ],
    );
    assert!(stdout(&o).contains("nothing to do"), "{}", stdout(&o));
}
