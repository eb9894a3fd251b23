//! `privalign sweep`/`reproduce`/`fsrc` end to end: the result files,
//! thread-count independence, kill-and-resume, and the summary's lift and SE
//! against a hand computation.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const RESULT_FILES: [&str; 3] = ["cells.parquet", "summary.parquet", "fsrc.parquet"];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A small config on the demo data.
fn small_config(dir: &Path, n: &str, replicates: usize) -> PathBuf {
    let text = format!(
        r#"
name: small
datasets: [{{path: "{}"}}]
reward_models:
  oasst: {{transform: {{kind: clip, lo: -6, hi: 7}}}}
  llama: {{transform: {{kind: minmax}}}}
n: {n}
replicates: {replicates}
seed: 3
algorithms:
  bon: {{}}
  privbon: {{sigma: [0.1, 0.5]}}
  itp: {{beta: [0.05]}}
  privitp: {{sigma: [0.5], beta: [0.05]}}
fsrc: {{eps_total: 20, n: 16, sigma: [1.0, 2.0], beta: 0.05, seeds: 2}}
reports:
  tables: [{{kind: fsrc}}, {{kind: budget}}, {{kind: lift, sigma: 0.5, beta: 0.05}}]
  plots: [{{kind: scaling, sigma: 0.5}}, {{kind: fsrc}}]
"#,
        demo_prepared().display()
    );
    let path = dir.join("small.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

fn sweep(args: &[&str]) -> std::process::Output {
    let mut a = vec!["sweep", "--no-progress"];
    a.extend_from_slice(args);
    run(&a)
}

fn same_files(a: &Path, b: &Path) {
    for f in RESULT_FILES {
        let (x, y) = (
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
        );
        assert!(
            x == y,
            "{f} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}

#[test]
fn demo_config_writes_results_identically_with_one_and_two_threads() {
    let d = tempfile::tempdir().unwrap();
    let sets = small_demo_sets();
    let mut outs = Vec::new();
    for threads in ["1", "2"] {
        let out = d.path().join(format!("t{threads}"));
        let cfg = repo().join("experiments/demo.yaml");
        let mut args = vec![
            cfg.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--threads",
            threads,
        ];
        args.extend(sets.iter().map(String::as_str));
        let o = sweep(&args);
        ok(&o);
        let mut files = entries(&out);
        files.retain(|f| !f.starts_with('.'));
        assert_eq!(
            files,
            [
                "cells.parquet",
                "fsrc.parquet",
                "manifest.yaml",
                "summary.parquet"
            ]
        );
        outs.push(out);
    }
    same_files(&outs[0], &outs[1]);
    // The cells have the design §10 columns and one row per
    // (RM, algorithm setting, n, prompt): 4 RMs × 11 settings (BoN, 4 PrivBoN σ,
    // 2 ITP β, 2 × 2 PrivITP σ × β) × 3 n × 100 prompts.
    let cells = read_parquet(&outs[0].join("cells.parquet"));
    assert_eq!(cells.height(), 4 * 11 * 3 * 100);
    for c in [
        "dataset",
        "reward_model",
        "algorithm",
        "sigma",
        "beta",
        "n",
        "prompt_id",
        "replicates",
        "base_accuracy",
        "accuracy",
        "proxy",
        "win_rate_gold",
        "win_rate_proxy",
        "halting_time",
        "generations",
        "eps",
    ] {
        assert!(cells.column(c).is_ok(), "cells.parquet lacks {c}");
    }
    let summary = read_parquet(&outs[0].join("summary.parquet"));
    assert_eq!(summary.height(), 4 * 11 * 3);
    for c in [
        "prompts",
        "accuracy_mean",
        "accuracy_se",
        "lift_mean",
        "lift_se",
        "eps_max",
    ] {
        assert!(summary.column(c).is_ok(), "summary.parquet lacks {c}");
    }
}

fn partial_chunks(out: &Path) -> usize {
    std::fs::read_dir(out.join(".partial"))
        .map(|r| {
            r.filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                let name = name.to_string_lossy();
                name.ends_with(".parquet") && !name.starts_with('.')
            })
            .count()
        })
        .unwrap_or(0)
}

#[test]
fn killed_sweep_resumes_to_the_same_files() {
    let d = tempfile::tempdir().unwrap();
    let cfg = small_config(d.path(), "{log2: [1, 11]}", 4);
    let cfg = cfg.to_str().unwrap();
    let full = d.path().join("full");
    ok(&sweep(&[cfg, "--out", full.to_str().unwrap()]));

    let out = d.path().join("killed");
    let mut child = std::process::Command::new(bin())
        .args([
            "sweep",
            "--no-progress",
            cfg,
            "--out",
            out.to_str().unwrap(),
        ])
        .stderr(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while partial_chunks(&out) < 3 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the sweep finished before it could be killed; enlarge the config"
        );
        assert!(start.elapsed() < Duration::from_secs(300), "no progress");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    let done = partial_chunks(&out);
    assert!(done < 22, "all 22 chunks finished before the kill");
    for f in [
        "manifest.yaml",
        "cells.parquet",
        "summary.parquet",
        "fsrc.parquet",
    ] {
        assert!(!out.join(f).exists(), "{f} exists after a killed run");
    }

    // A different config may not reuse the partial chunks.
    let o = sweep(&[
        cfg,
        "--out",
        out.to_str().unwrap(),
        "--resume",
        "--set",
        "seed=4",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("made with a different config or data"),
        "{}",
        stderr(&o)
    );

    let o = sweep(&[cfg, "--out", out.to_str().unwrap(), "--resume"]);
    ok(&o);
    assert!(
        stdout(&o).contains(&format!("{done} resumed")),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    same_files(&full, &out);
    assert!(!out.join(".partial").exists());
    // Resuming complete results does nothing.
    let o = sweep(&[cfg, "--out", out.to_str().unwrap(), "--resume"]);
    ok(&o);
    assert!(stdout(&o).contains("nothing to do"), "{}", stdout(&o));
}

/// A 3-prompt × 4-response dataset where BoN over the whole pool (n = N,
/// without replacement) selects a known response per prompt.
fn tiny_dataset(dir: &Path) -> PathBuf {
    let csv = dir.join("tiny.csv");
    let rows = [
        ("p1", [0.1, 0.9, 0.5, 0.3], [1, 0, 1, 0]),
        ("p2", [0.2, 0.4, 0.8, 0.6], [0, 0, 1, 0]),
        ("p3", [0.7, 0.1, 0.2, 0.3], [1, 1, 1, 0]),
    ];
    let mut text = String::from("prompt_id,correct,r\n");
    for (p, r, c) in rows {
        for k in 0..4 {
            text += &format!("{p},{},{}\n", c[k], r[k]);
        }
    }
    std::fs::write(&csv, text).unwrap();
    let out = dir.join("tiny");
    ingest_csv(&csv, &out, &["--reward-col", "rm=r"]);
    out
}

#[test]
fn summary_lift_and_se_equal_a_hand_computation() {
    let d = tempfile::tempdir().unwrap();
    let ds = tiny_dataset(d.path());
    let cfg = d.path().join("tiny.yaml");
    std::fs::write(
        &cfg,
        format!(
            "datasets: [{{path: \"{}\"}}]\nreward_models: {{rm: {{transform: {{kind: none}}}}}}\nn: [4]\nreplicates: 2\nsampling: without_replacement\nalgorithms: {{bon: {{}}}}\n",
            ds.display()
        ),
    )
    .unwrap();
    let out = d.path().join("out");
    ok(&sweep(&[
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    let s = read_parquet(&out.join("summary.parquet"));
    let get = |c: &str| s.column(c).unwrap().f64().unwrap().get(0).unwrap();
    // BoN picks r = 0.9 (wrong), 0.8 (right), 0.7 (right); base accuracies
    // 2/4, 1/4, 3/4. Per-prompt lifts in points: −50, +75, +25.
    let lifts = [-50.0f64, 75.0, 25.0];
    let mean = lifts.iter().sum::<f64>() / 3.0;
    let var = lifts.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 2.0; // ddof = 1
    let se = var.sqrt() / 3f64.sqrt();
    assert!(
        (get("lift_mean") - mean).abs() < 1e-9,
        "{}",
        get("lift_mean")
    );
    assert!(
        (get("lift_se") - se).abs() < 1e-9,
        "{} vs {se}",
        get("lift_se")
    );
    assert!((get("accuracy_mean") - 2.0 / 3.0).abs() < 1e-12);
    assert!((get("base_accuracy_mean") - 0.5).abs() < 1e-12);
    // A sloppy SE (ddof = 0) would differ by a factor sqrt(3/2).
    assert!((get("lift_se") - se * (2.0f64 / 3.0).sqrt()).abs() > 1.0);
}

#[test]
fn reproduce_renders_every_table_and_plot_the_config_lists() {
    let d = tempfile::tempdir().unwrap();
    let cfg = small_config(d.path(), "[2, 16]", 2);
    let out = d.path().join("out");
    let o = run(&[
        "reproduce",
        "--no-progress",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    ok(&o);
    let tex = std::fs::read_to_string(out.join("tables/fsrc.tex")).unwrap();
    assert!(tex.contains("\\toprule") && tex.contains("FSRC"), "{tex}");
    // llama's minmax transform is data-dependent: its private rows are flagged.
    let s = read_parquet(&out.join("summary.parquet"));
    let rm = s.column("reward_model").unwrap().str().unwrap().clone();
    let alg = s.column("algorithm").unwrap().str().unwrap().clone();
    let flag = s
        .column("privacy_conditional")
        .unwrap()
        .bool()
        .unwrap()
        .clone();
    for i in 0..s.height() {
        let private = alg.get(i) != Some("bon") && alg.get(i) != Some("itp");
        let want = private && rm.get(i) == Some("llama");
        assert_eq!(
            flag.get(i),
            Some(want),
            "row {i}: {:?} {:?}",
            rm.get(i),
            alg.get(i)
        );
    }
    let manifest = std::fs::read_to_string(out.join("manifest.yaml")).unwrap();
    assert!(manifest.contains("kind: minmax") && manifest.contains("data_dependent: true"));
    for f in [
        "tables/budget.tex",
        "tables/lift.tex",
        "tables/lift.md",
        "plots/scaling.png",
        "plots/scaling.svg",
        "plots/fsrc.png",
    ] {
        assert!(out.join(f).exists(), "{f} missing");
    }
}

#[test]
fn fsrc_command_prints_the_table_and_answers_more_than_basic_composition() {
    let d = tempfile::tempdir().unwrap();
    let cfg = small_config(d.path(), "[2]", 1);
    let out = d.path().join("out");
    let o = run(&[
        "fsrc",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--format",
        "json",
    ]);
    ok(&o);
    let rows: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 4); // 2 RMs × 2 σ
    for r in rows {
        let q = r["queries"]["mean"].as_f64().unwrap();
        let b = r["basic_queries"]["mean"].as_f64().unwrap();
        assert!(
            q >= b,
            "FSRC answered fewer queries than basic composition: {r}"
        );
    }
    assert!(out.join("fsrc.parquet").exists());
}

/// What privalign owns under tables/ and plots/ is what the manifest lists:
/// reproduce records its reports (and `check` verifies them); a user's file
/// there survives a re-run; a plain sweep removes the old reports (they
/// describe the old results) but not the user's file.
#[test]
fn reports_are_owned_by_record_not_by_name() {
    let d = tempfile::tempdir().unwrap();
    let cfg = small_config(d.path(), "[2, 16]", 2);
    let out = d.path().join("out");
    let reproduce = || {
        run(&[
            "reproduce",
            "--no-progress",
            cfg.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
    };
    ok(&reproduce());
    let text = std::fs::read_to_string(out.join("manifest.yaml")).unwrap();
    let m: yaml_serde::Value = yaml_serde::from_str(&text).unwrap();
    let reports = m["reports"]
        .as_mapping()
        .expect("reproduce lists its reports");
    assert!(reports.contains_key("tables/lift.tex") && reports.contains_key("plots/scaling.png"));
    // A user's own notes beside the tables: a re-run leaves them alone.
    let mine = out.join("tables/my-notes.md");
    std::fs::write(&mine, "mine").unwrap();
    ok(&reproduce());
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "mine");
    // check verifies the listed reports: an edited table fails it.
    let tex = out.join("tables/lift.tex");
    let orig = std::fs::read(&tex).unwrap();
    std::fs::write(&tex, b"edited").unwrap();
    let o = run(&["check", out.to_str().unwrap()]);
    assert_ne!(o.status.code(), Some(0), "an edited table must fail check");
    assert!(String::from_utf8_lossy(&o.stderr).contains("lift.tex"));
    std::fs::write(&tex, orig).unwrap();
    // A plain sweep: the old reports go, the user's file stays.
    ok(&run(&[
        "sweep",
        "--no-progress",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    assert!(
        !out.join("tables/lift.tex").exists(),
        "stale table left beside new results"
    );
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "mine");
}
