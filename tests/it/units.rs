//! Units a user cannot misread: `dataset.yaml`'s raw score statistics,
//! `privalign describe`, and the sweep plan's raw-unit lines and warnings.

use crate::common::*;
use std::path::Path;

/// A small CSV with known raw scores: reward `a` = 10·k for k = 0..9 per
/// prompt (mean 45, population sd √825), reward `b` constant but for one value.
fn dataset(dir: &Path) -> std::path::PathBuf {
    let mut text = String::from("prompt_id,correct,a,b\n");
    for p in 0..3 {
        for k in 0..10 {
            let b = if p == 0 && k == 0 { 1.0 } else { 0.0 };
            text += &format!("q{p},{},{},{b}\n", k % 2, 10 * k);
        }
    }
    let csv = dir.join("s.csv");
    std::fs::write(&csv, text).unwrap();
    let out = dir.join("prepared");
    ingest_csv(
        &csv,
        &out,
        &["--reward-col", "a=a", "--reward-col", "b=b", "--name", "s"],
    );
    out
}

#[test]
fn dataset_yaml_records_raw_statistics_and_describe_prints_them() {
    let d = tempfile::tempdir().unwrap();
    let ds = dataset(d.path());
    let m: yaml_serde::Value =
        yaml_serde::from_str(&std::fs::read_to_string(ds.join("dataset.yaml")).unwrap()).unwrap();
    let a = &m["rewards"]["a"];
    assert_eq!(a["count"].as_u64(), Some(30));
    assert_eq!(a["min"].as_f64(), Some(0.0));
    assert_eq!(a["max"].as_f64(), Some(90.0));
    assert_eq!(a["mean"].as_f64(), Some(45.0));
    assert!((a["sd"].as_f64().unwrap() - 825f64.sqrt()).abs() < 1e-9);
    assert_eq!(a["q001"].as_f64(), Some(0.0));
    assert_eq!(a["q999"].as_f64(), Some(90.0));

    let o = run(&["describe", ds.to_str().unwrap(), "--format", "json"]);
    ok(&o);
    let rows: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let a = &rows[0];
    assert_eq!(a["reward_model"], "a");
    assert_eq!(a["count"], "30");
    assert_eq!(a["clip_lo"].as_f64(), Some(0.0));
    assert_eq!(a["clip_hi"].as_f64(), Some(90.0));
    // b: 29 zeros and one 1 — the quantiles coincide, so min/max are suggested.
    assert_eq!(rows[1]["clip_lo"].as_f64(), Some(0.0));
    assert_eq!(rows[1]["clip_hi"].as_f64(), Some(1.0));
    // A directory that is not a dataset: exit 2 naming it.
    let o = run(&["describe", d.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("dataset.yaml"), "{}", stderr(&o));
}

fn sweep_stderr(ds: &Path, dir: &Path, body: &str) -> std::process::Output {
    let cfg = dir.join("c.yaml");
    std::fs::write(
        &cfg,
        format!(
            "datasets: [{{path: \"{}\"}}]\nn: [2]\nreplicates: 1\n{body}",
            ds.display()
        ),
    )
    .unwrap();
    run(&[
        "sweep",
        "--no-progress",
        cfg.to_str().unwrap(),
        "--out",
        dir.join("r").to_str().unwrap(),
    ])
}

#[test]
fn sweep_plan_states_raw_units_and_warns_without_failing() {
    let d = tempfile::tempdir().unwrap();
    let ds = dataset(d.path());
    // clip [0, 90] → [0, 2]: one transformed unit = 45 raw units.
    let o = sweep_stderr(
        &ds,
        d.path(),
        "reward_models:\n  a: {transform: {kind: clip, lo: 0, hi: 90, r_max: 2}}\n\
         algorithms:\n  privbon: {sigma: [0.1]}\n  itp: {beta: [0.02]}\n",
    );
    ok(&o);
    let e = stderr(&o);
    assert!(
        e.contains("plan: dataset `s`, reward model `a`: clip raw [0, 90] → [0, r_max = 2]; one unit = 45 raw; σ = 0.1 = 4.5 raw; β = 0.02 = 0.9 raw; Δ_r = 2 = 90 raw"),
        "{e}"
    );
    assert!(!e.contains("warning"), "{e}");

    // zscore with r_max = hi − lo = 6: one transformed unit is one raw sd.
    let o = sweep_stderr(
        &ds,
        d.path(),
        "reward_models:\n  a: {transform: {kind: zscore, r_max: 6}}\nalgorithms: {bon: {}}\n",
    );
    ok(&o);
    let e = stderr(&o);
    assert!(
        e.contains(&format!(
            "zscore raw [-41.17, 131.2] → [0, r_max = 6] (bounds from this dataset: data-dependent); one unit = {} raw",
            privalign::config::units::num(825f64.sqrt())
        )),
        "{e}"
    );

    // σ far above and below the transformed spread (sd of a on [0, 1] ≈ 0.319),
    // β far above it: warnings, and the sweep still runs (exit 0).
    let o = sweep_stderr(
        &ds,
        d.path(),
        "reward_models:\n  a: {transform: {kind: clip, lo: 0, hi: 90}}\n\
         algorithms:\n  privbon: {sigma: [0.001, 0.3, 20]}\n  itp: {beta: [5]}\n",
    );
    ok(&o);
    let e = stderr(&o);
    let warnings: Vec<&str> = e.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 3, "{e}");
    assert!(warnings[0].contains("σ = 0.001 is under 1%"), "{e}");
    assert!(
        warnings[1].contains("σ = 20 is 62.67× the transformed rewards' sd (0.3191)")
            && warnings[1].contains("write σ = 0.2222"),
        "{e}"
    );
    assert!(warnings[2].contains("β = 5 is 15.67×"), "{e}");

    // Clip bounds that miss the scores flatten them: one warning, no σ noise.
    let o = sweep_stderr(
        &ds,
        d.path(),
        "reward_models:\n  a: {transform: {kind: clip, lo: 0, hi: 90000}}\nalgorithms:\n  privbon: {sigma: [0.25]}\n",
    );
    ok(&o);
    let e = stderr(&o);
    assert!(
        e.contains("warning: dataset `s`, reward model `a`: the transformed rewards barely vary"),
        "{e}"
    );
}
