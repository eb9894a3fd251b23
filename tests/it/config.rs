//! Experiment-config validation: every rule of issue #5 / design §9 names the
//! key path and the fix. Each test checks the exact message fragment.

use crate::common::*;
use privalign::config::{self, Experiment};
use std::path::Path;

/// A valid config on the demo data; `edit` replaces one line.
fn base() -> String {
    format!(
        r#"datasets: [{{path: "{}"}}]
reward_models:
  oasst: {{transform: {{kind: clip, lo: -6, hi: 7}}}}
n: [2, 8]
replicates: 2
algorithms:
  bon: {{}}
  privbon: {{sigma: [0.5]}}
  itp: {{beta: [0.05]}}
  privitp: {{sigma: [0.5], beta: [0.05]}}
"#,
        demo_prepared().display()
    )
}

/// Parse and resolve `text` with overrides; the error text, or "" if valid.
fn error_of(text: &str, sets: &[&str]) -> String {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    match config::parse(text, &sets) {
        Err(e) => format!("{e:#}"),
        Ok(c) => match Experiment::resolve(c, Path::new("cfg.yaml")) {
            Err(e) => format!("{e:#}"),
            Ok(_) => String::new(),
        },
    }
}

fn assert_error(sets: &[&str], fragment: &str) {
    let e = error_of(&base(), sets);
    assert!(
        e.contains(fragment),
        "--set {sets:?}: expected {fragment:?} in\n  {e}"
    );
}

#[test]
fn the_base_config_is_valid() {
    assert_eq!(error_of(&base(), &[]), "");
}

#[test]
fn unknown_keys_name_their_path() {
    assert_error(
        &["algorithms.privbon.sigmaa=[1]"],
        "algorithms.privbon.sigmaa: unknown field `sigmaa`, expected `sigma`; remove or rename it",
    );
    assert_error(&["replicatez=3"], "replicatez: unknown field `replicatez`");
    assert_error(
        &["reward_models.oasst.transform.low=1"],
        "reward_models.oasst.transform.low: unknown field `low`",
    );
}

#[test]
fn wrong_types_name_their_path() {
    assert_error(
        &["replicates=many"],
        "replicates: invalid type: string \"many\"",
    );
    assert_error(
        &["algorithms.privbon.sigma=0.5"],
        "algorithms.privbon.sigma: invalid type: floating point `0.5`, expected a sequence",
    );
    assert_error(
        &["n=8"],
        "n: got 8: expected a list of integers like [2, 8, 64] or {log2: [1, 12]}",
    );
    assert_error(
        &["estimator=exact"],
        "estimator: unknown variant `exact`, expected `conditional` or `sampled`",
    );
}

#[test]
fn empty_sweeps_are_rejected() {
    assert_error(
        &["algorithms.privbon.sigma=[]"],
        "algorithms.privbon.sigma: is empty; list at least one σ value",
    );
    assert_error(
        &["algorithms.itp.beta=[]"],
        "algorithms.itp.beta: is empty; list at least one β value",
    );
    assert_error(&["n=[]"], "n: is empty; list at least one n");
    assert_error(&["algorithms={}"], "algorithms: no algorithm is enabled");
}

#[test]
fn sigma_and_beta_must_be_positive() {
    assert_error(
        &["algorithms.privbon.sigma=[0.5, 0]"],
        "algorithms.privbon.sigma[1]: σ must be a finite number > 0, got 0",
    );
    assert_error(
        &["algorithms.privitp.sigma=[-1]"],
        "algorithms.privitp.sigma[0]: σ must be a finite number > 0, got -1",
    );
    assert_error(
        &["algorithms.itp.beta=[0]"],
        "algorithms.itp.beta[0]: β must be a finite number > 0, got 0",
    );
    assert_error(
        &["algorithms.privitp.beta=[-0.1]"],
        "algorithms.privitp.beta[0]: β must be a finite number > 0, got -0.1",
    );
    assert_error(
        &["fsrc={eps_total: 10, n: 16, sigma: [1], beta: 0}"],
        "fsrc.beta: β must be a finite number > 0, got 0",
    );
}

#[test]
fn n_must_be_at_least_one() {
    assert_error(
        &["n=[2, 0]"],
        "n: [1] is 0; n is the number of candidates per query and must be at least 1",
    );
    assert_error(&["n={log2: [-1, 3]}"], "n: log2 starts at -1");
}

#[test]
fn n_beyond_the_pool_without_replacement_is_rejected() {
    // The demo pools have 1000 responses per prompt.
    assert_error(
        &["sampling=without_replacement", "n=[2, 4096]"],
        "n: n = 4096 exceeds the smallest pool (1000 responses for some prompt of dataset `demo`); sampling: without_replacement needs n ≤ N",
    );
    assert_eq!(
        error_of(&base(), &["sampling=without_replacement", "n=[1000]"]),
        ""
    );
    // With replacement any n is fine.
    assert_eq!(error_of(&base(), &["n=[4096]"]), "");
}

#[test]
fn missing_reward_models_and_datasets_are_named() {
    assert_error(
        &["reward_models.nosuch={}"],
        "reward_models.nosuch: dataset `demo`",
    );
    assert_error(
        &["reward_models.nosuch={}"],
        "has no reward model `nosuch`; it has armo, gemma, llama, oasst",
    );
    assert_error(
        &["datasets.0.path=/no/such/dir"],
        "datasets[0].path: `/no/such/dir` (resolved against the config's directory to /no/such/dir) is not a prepared dataset",
    );
    assert_error(
        &["datasets=[]"],
        "datasets: is empty; list at least one prepared dataset",
    );
}

#[test]
fn reward_ranges_and_bounds_are_checked() {
    assert_error(
        &["reward_models.oasst.transform.r_max=0"],
        "reward_models.oasst.transform.r_max: r_max must be a finite number > 0, got 0",
    );
    assert_error(
        &["reward_models.oasst.transform.r_max=-2"],
        "reward_models.oasst.transform.r_max: r_max must be a finite number > 0, got -2",
    );
    assert_error(
        &["reward_models.oasst.transform.lo=7"],
        "reward_models.oasst.transform: lo = 7 ≥ hi = 7; give an interval with lo < hi",
    );
    assert_error(
        &["reward_models.oasst.transform={kind: clip}"],
        "kind clip needs fixed bounds `lo` and `hi`",
    );
    assert_error(
        &["reward_models.oasst.delta_r=0"],
        "reward_models.oasst.delta_r: Δ_r must be a finite number > 0, got 0",
    );
    assert_error(
        &["algorithms.privitp.clamp=[1, 0]"],
        "algorithms.privitp.clamp: lo = 1 ≥ hi = 0",
    );
    assert_error(
        &["privacy.delta=1"],
        "privacy.delta: δ must lie in (0, 1), got 1",
    );
}

#[test]
fn set_paths_that_cannot_apply_are_explained() {
    assert_error(
        &["datasets.3.path=x"],
        "--set datasets.3.path=x: `datasets` is a list of 1",
    );
    assert_error(&["replicates"], "--set replicates: expected PATH=VALUE");
}

#[test]
fn the_cli_reports_the_file_and_exits_2() {
    let d = tempfile::tempdir().unwrap();
    let cfg = d.path().join("bad.yaml");
    std::fs::write(
        &cfg,
        base().replace("replicates: 2", "replicates: 2\nbogus: 1"),
    )
    .unwrap();
    let o = run(&[
        "sweep",
        cfg.to_str().unwrap(),
        "--out",
        d.path().join("o").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains(&format!("{}: bogus: unknown field `bogus`", cfg.display())),
        "{e}"
    );
    assert!(
        !d.path().join("o").exists(),
        "a rejected config wrote output"
    );
    // The shipped experiment configs are all valid (datasets aside).
    for f in entries(&Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments")) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("experiments")
            .join(&f);
        if f == "paper-claims.yaml" {
            // Not an experiment: the claims `privalign check --claims` evaluates.
            let text = std::fs::read_to_string(&path).unwrap();
            yaml_serde::from_str::<privalign::check::claims::ClaimsFile>(&text)
                .unwrap_or_else(|e| panic!("{f}: {e}"));
        } else if f == "audit.yaml" {
            // Not an experiment: the settings `privalign audit --config` audits.
            privalign::audit::command::load_config(&path).unwrap_or_else(|e| panic!("{f}: {e:#}"));
        } else if f.ends_with(".yaml") {
            config::load(&path, &[]).unwrap_or_else(|e| panic!("{f}: {e:#}"));
        }
    }
}
