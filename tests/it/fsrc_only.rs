//! `privalign fsrc CONFIG` with a config that has only an `fsrc:` section (no
//! algorithms, no n grid), and the validation of every FSRC option.

use crate::common::*;
use privalign::config::{self, Experiment};
use std::path::{Path, PathBuf};

/// The committed GPQA data (64 prompts × 64 responses), prepared once.
fn gpqa() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gpqa-prepared-fsrc-only");
        if out.exists() {
            std::fs::remove_dir_all(&out).unwrap();
        }
        let flat = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/gpqa-genrm/raw/flat.csv");
        ingest_csv(
            &flat,
            &out,
            &["--reward-col", "g=genrm_mean32", "--name", "gpqa"],
        );
        out
    })
}

/// A config with only datasets, reward models and an `fsrc:` section.
fn fsrc_only(fsrc: &str) -> String {
    format!(
        "datasets: [{{path: \"{}\"}}]\nreward_models:\n  g: {{transform: {{kind: clip, lo: 0, hi: 1}}}}\nfsrc: {fsrc}\n",
        gpqa().display()
    )
}

const FSRC: &str = "{eps_total: 40, n: 8, sigma: [1.0, 2.0], beta: 0.05, seeds: 2}";

fn error_of(text: &str) -> String {
    match config::parse(text, &[]) {
        Err(e) => format!("{e:#}"),
        Ok(c) => match Experiment::resolve(c, Path::new("cfg.yaml")) {
            Err(e) => format!("{e:#}"),
            Ok(_) => String::new(),
        },
    }
}

fn write_cfg(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("fsrc-only.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn an_fsrc_only_config_runs_with_privalign_fsrc() {
    let d = tempfile::tempdir().unwrap();
    let cfg = write_cfg(d.path(), &fsrc_only(FSRC));
    let out = d.path().join("out");
    let o = run(&[
        "fsrc",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    ok(&o);
    let rows = read_parquet(&out.join("fsrc.parquet"));
    assert_eq!(rows.height(), 4, "2 σ × 2 seeds");
    let e = stderr(&o);
    assert!(e.contains("plan: dataset `gpqa`, reward model `g`"), "{e}");
    assert!(stdout(&o).lines().count() >= 3, "{}", stdout(&o));
    // Same config, same files.
    let out2 = d.path().join("out2");
    ok(&run(&[
        "fsrc",
        cfg.to_str().unwrap(),
        "--out",
        out2.to_str().unwrap(),
    ]));
    assert_eq!(
        std::fs::read(out.join("fsrc.parquet")).unwrap(),
        std::fs::read(out2.join("fsrc.parquet")).unwrap()
    );
    // `sweep` on it says to use `privalign fsrc` (exit 2).
    let o = run(&[
        "sweep",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "has no algorithm to sweep, only an `fsrc:` section; run it with `privalign fsrc"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn explicit_split_and_sampling_are_used() {
    let d = tempfile::tempdir().unwrap();
    let out = |name: &str, fsrc: &str| {
        let dir = d.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = write_cfg(&dir, &fsrc_only(fsrc));
        ok(&run(&[
            "fsrc",
            cfg.to_str().unwrap(),
            "--out",
            dir.join("out").to_str().unwrap(),
        ]));
        read_parquet(&dir.join("out/fsrc.parquet"))
    };
    let explicit = out(
        "explicit",
        "{eps_total: 40, n: 8, split: {sigma_x: 0.7, sigma_z: 1.3}, beta: 0.05, seeds: 1}",
    );
    let s = explicit.column("sigma").unwrap().f64().unwrap().get(0);
    assert_eq!(s, Some(2.0), "the total σ = σ_X + σ_Z is recorded");
    // The split changes the runs: the same total σ split in half gives other numbers.
    let half = out(
        "half",
        "{eps_total: 40, n: 8, sigma: [2.0], beta: 0.05, seeds: 1}",
    );
    assert!(!explicit.equals(&half));
    // Without replacement (n = 64 = the whole pool) runs and differs from with.
    let with = out(
        "with",
        "{eps_total: 40, n: 64, sigma: [2.0], beta: 0.05, seeds: 1}",
    );
    let without = out(
        "without",
        "{eps_total: 40, n: 64, sigma: [2.0], beta: 0.05, seeds: 1, sampling: without_replacement}",
    );
    assert!(!with.equals(&without));
}

#[test]
fn every_fsrc_option_is_validated() {
    let cases = [
        (
            "{eps_total: 40, n: 8, sigma: [1.0], split: {sigma_x: 0.5, sigma_z: 0.5}, beta: 0.05}",
            "fsrc.sigma: cannot be combined with an explicit split",
        ),
        (
            "{eps_total: 40, n: 8, beta: 0.05}",
            "fsrc.sigma: missing; list the total noise values",
        ),
        (
            "{eps_total: 40, n: 8, split: {sigma_x: 0, sigma_z: 0.5}, beta: 0.05}",
            "fsrc.split.sigma_x: σ_X must be a finite number > 0, got 0",
        ),
        (
            "{eps_total: 40, n: 8, sigma: [1.0], beta: 0.05, seeds: 0}",
            "fsrc.seeds: must be at least 1",
        ),
        (
            "{eps_total: 40, n: 65, sigma: [1.0], beta: 0.05, sampling: without_replacement}",
            "fsrc.n: n = 65 exceeds the smallest pool (64 responses",
        ),
        (
            "{eps_total: 40, n: 8, sigma: [1.0], beta: 0.05, sampling: sometimes}",
            "fsrc.sampling: unknown variant `sometimes`",
        ),
        (
            "{eps_total: 1, n: 8, sigma: [1.0], beta: 0.05}",
            "fsrc.eps_total: ε_total = 1 does not cover one query: at σ_X = 0.5, σ_Z = 0.5 on reward model `g` a query can cost ε_max =",
        ),
        (
            "{eps_total: 40, n: 8, sigma: [1.0], beta: 0.05, clamp: [1, 0]}",
            "fsrc.clamp: lo = 1 ≥ hi = 0",
        ),
        (
            "{eps_total: 40, n: 8, sigma: [1.0], beta: 0.05, L: -1}",
            "fsrc.L: L must be a finite number ≥ 0",
        ),
        (
            "{eps_total: 40, n: 8, sigma: [1.0], beta: 0.05, reward_models: [h]}",
            "fsrc.reward_models[0]: `h` is not one of the experiment's reward_models (g)",
        ),
        (
            "{eps_total: 40, n: 8, sigma: [1.0], beta: 0.05, seed: 3}",
            "fsrc.seed: unknown field `seed`",
        ),
    ];
    for (fsrc, want) in cases {
        let e = error_of(&fsrc_only(fsrc));
        assert!(
            e.contains(want),
            "fsrc: {fsrc}\n  expected {want:?} in\n  {e}"
        );
    }
    assert_eq!(error_of(&fsrc_only(FSRC)), "");
    // Neither algorithms nor fsrc; algorithms without an n grid.
    let none = fsrc_only(FSRC).replace(&format!("fsrc: {FSRC}\n"), "");
    assert!(
        error_of(&none)
            .contains("algorithms: no algorithm is enabled and there is no `fsrc:` section"),
        "{}",
        error_of(&none)
    );
    let no_n = fsrc_only(FSRC) + "algorithms: {bon: {}}\n";
    assert!(
        error_of(&no_n).contains("n: missing; the algorithms need an n grid"),
        "{}",
        error_of(&no_n)
    );
}
