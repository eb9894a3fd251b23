//! Issue #13 §1: privalign never deletes or overwrites what it did not
//! write, never destroys finished results before their replacement is
//! complete, and one writer at a time holds a results directory.
//!
//! Every test snapshots the files the command does not own and asserts they
//! are byte-identical afterwards, and that no `.tmp-PID`/`.old-PID` entry
//! is left behind.

use crate::common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Every file under `dir` (recursively, hidden ones too) with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&p).unwrap_or_default());
            }
        }
    }
    let mut m = BTreeMap::new();
    walk(dir, dir, &mut m);
    m
}

/// Files of `before` outside `owned` (path prefixes) that changed or vanished.
fn foreign_changes(
    before: &BTreeMap<String, Vec<u8>>,
    after: &BTreeMap<String, Vec<u8>>,
    owned: &[&str],
) -> Vec<String> {
    before
        .iter()
        .filter(|(k, _)| !owned.iter().any(|o| k.starts_with(o)))
        .filter(|(k, v)| after.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .collect()
}

/// No temporary or moved-aside entries anywhere under `dir`.
fn assert_no_leftovers(dir: &Path) {
    let bad: Vec<String> = snapshot(dir)
        .into_keys()
        .filter(|k| k.contains(".tmp-") || k.contains(".old-") || k.contains(".stale-"))
        .collect();
    assert!(bad.is_empty(), "leftovers: {bad:?}");
}

fn code(o: &std::process::Output) -> Option<i32> {
    o.status.code()
}

/// A 4-prompt CSV with two reward models (a, b).
fn small_csv(path: &Path) {
    let mut text = String::from("prompt_id,correct,a,b\n");
    for p in 0..4 {
        for k in 0..6 {
            let x = (p * 7 + k * 5) % 11;
            text += &format!(
                "q{p},{},{},{}\n",
                u8::from((x + p) % 3 == 0),
                x as f64 / 10.0,
                ((x * 3 + k) % 10) as f64 / 10.0
            );
        }
    }
    std::fs::write(path, text).unwrap();
}

fn ingest_args(csv: &Path, out: &Path) -> Vec<String> {
    [
        "ingest",
        "--table",
        csv.to_str().unwrap(),
        "--prompt-col",
        "prompt_id",
        "--correct-col",
        "correct",
        "--reward-col",
        "a=a",
        "--reward-col",
        "b=b",
        "--out",
        out.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec()
}

fn run_s(args: &[String]) -> std::process::Output {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    run(&a)
}

#[test]
fn ingest_force_replaces_only_its_own_files_and_never_its_inputs() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("ds");
    std::fs::create_dir(&out).unwrap();
    // The input lives inside --out, next to a user's file.
    let csv = out.join("input.csv");
    small_csv(&csv);
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let before = snapshot(d.path());
    let mut args = ingest_args(&csv, &out);
    let o = run_s(&args);
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("already exists"), "{}", stderr(&o));
    assert_eq!(snapshot(d.path()), before);

    args.push("--force".into());
    ok(&run_s(&args));
    ok(&run_s(&args)); // and again, over its own output
    let after = snapshot(d.path());
    assert!(foreign_changes(&before, &after, &[]).is_empty());
    assert!(after.contains_key("ds/scores.parquet") && after.contains_key("ds/dataset.yaml"));
    // scores.parquet, prompts.parquet, blocks.parquet, dataset.yaml.
    assert_eq!(after.len(), before.len() + 4, "{:?}", after.keys());
    assert_no_leftovers(d.path());

    // Re-ingesting the prepared scores into their own directory: refused,
    // the input untouched.
    let scores = out.join("scores.parquet");
    let before = snapshot(d.path());
    let o = run(&[
        "ingest",
        "--table",
        scores.to_str().unwrap(),
        "--prompt-col",
        "prompt_id",
        "--response-col",
        "response_id",
        "--correct-col",
        "correct",
        "--reward-col",
        "a=a",
        "--out",
        out.to_str().unwrap(),
        "--force",
    ]);
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("never overwrites its inputs"),
        "{}",
        stderr(&o)
    );
    assert_eq!(snapshot(d.path()), before);

    // A scores.parquet no prepared-dataset manifest vouches for is the user's.
    let other = d.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("scores.parquet"), "not ours").unwrap();
    let before = snapshot(d.path());
    let mut a = ingest_args(&csv, &other);
    a.push("--force".into());
    let o = run_s(&a);
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("scores.parquet that ingest did not write"),
        "{}",
        stderr(&o)
    );
    assert_eq!(snapshot(d.path()), before);
}

#[test]
fn ingest_out_that_is_a_file_or_dot_fails_before_writing() {
    let d = tempfile::tempdir().unwrap();
    let csv = d.path().join("in.csv");
    small_csv(&csv);
    let file = d.path().join("taken.txt");
    std::fs::write(&file, "mine").unwrap();
    let before = snapshot(d.path());
    for (out, msg) in [
        (file.clone(), "is a file, not a directory"),
        (PathBuf::from("."), "names no new directory"),
        (d.path().join("a\nb"), "control character"),
    ] {
        let mut a = ingest_args(&csv, &out);
        a.push("--force".into());
        let o = run_s(&a);
        assert_eq!(code(&o), Some(2), "{out:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(msg), "{}", stderr(&o));
        assert_eq!(snapshot(d.path()), before, "{out:?}");
    }
    let mut a = ingest_args(&csv, &d.path().join("ds"));
    a.extend(["--name".into(), "two\nlines".into()]);
    let o = run_s(&a);
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--name"), "{}", stderr(&o));
    assert_eq!(snapshot(d.path()), before);
}

/// A prepared 4-prompt dataset and a config with an FSRC section; returns
/// (config path, dataset dir).
fn fixture(dir: &Path, extra: &str) -> PathBuf {
    let csv = dir.join("in.csv");
    small_csv(&csv);
    let ds = dir.join("ds");
    if !ds.exists() {
        ok(&run_s(&ingest_args(&csv, &ds)));
    }
    let cfg = dir.join("exp.yaml");
    std::fs::write(
        &cfg,
        format!(
            // Relative to the config's directory, so nothing depends on the cwd.
            "datasets: [{{path: ds}}]\nreward_models: {{a: {{transform: {{kind: none}}}}, b: {{transform: {{kind: none}}}}}}\nn: [2, 4]\nreplicates: 3\nseed: 1\nalgorithms: {{bon: {{}}, privbon: {{sigma: [0.5]}}}}\nfsrc: {{eps_total: 60, n: 4, sigma: [1.0], beta: 0.1, seeds: 2}}\n{extra}"
        ),
    )
    .unwrap();
    cfg
}

fn sweep_out(cfg: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut a = vec![
        "sweep",
        "--no-progress",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    a.extend_from_slice(extra);
    run(&a)
}

/// The manifest's files all exist with the hashes it records.
fn manifest_consistent(out: &Path) {
    let m: privalign::results::manifest::ResultsManifest =
        yaml_serde::from_str(&std::fs::read_to_string(out.join("manifest.yaml")).unwrap()).unwrap();
    for (f, sha) in &m.files {
        assert_eq!(
            &privalign::fsutil::sha256_file(&out.join(f)).unwrap(),
            sha,
            "{f} does not match the manifest"
        );
    }
}

#[test]
fn sweep_keeps_user_files_and_refuses_files_named_like_its_own() {
    let d = tempfile::tempdir().unwrap();
    let cfg = fixture(d.path(), "");
    let out = d.path().join("res");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("cells.parquet"), "my own cells").unwrap();
    let before = snapshot(d.path());
    let o = sweep_out(&cfg, &out, &[]);
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cells.parquet that privalign did not write"),
        "{}",
        stderr(&o)
    );
    assert_eq!(snapshot(d.path()), before);

    std::fs::remove_file(out.join("cells.parquet")).unwrap();
    std::fs::write(out.join("reference.yaml"), "user notes").unwrap();
    ok(&sweep_out(&cfg, &out, &[]));
    // A rerun that drops the fsrc section removes the old fsrc.parquet (it
    // was privalign's), keeps the user's file.
    let before = snapshot(&out);
    let cfg2 = d.path().join("nofsrc.yaml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let text: String = text
        .lines()
        .filter(|l| !l.starts_with("fsrc:"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&cfg2, text).unwrap();
    ok(&sweep_out(&cfg2, &out, &[]));
    let after = snapshot(&out);
    assert_eq!(after["reference.yaml"], b"user notes");
    assert!(!after.contains_key("fsrc.parquet"));
    assert_ne!(after["manifest.yaml"], before["manifest.yaml"]);
    manifest_consistent(&out);
    assert_eq!(
        crate::common::entries(&out),
        [
            "cells.parquet",
            "manifest.yaml",
            "reference.yaml",
            "summary.parquet"
        ]
    );
}

#[test]
fn fsrc_into_finished_results_updates_the_manifest_or_refuses() {
    let d = tempfile::tempdir().unwrap();
    let cfg = fixture(d.path(), "");
    let out = d.path().join("res");
    ok(&sweep_out(&cfg, &out, &[]));
    let before = snapshot(&out);
    let o = run(&[
        "fsrc",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--set",
        "fsrc.seeds=3",
    ]);
    ok(&o);
    let after = snapshot(&out);
    assert_ne!(after["fsrc.parquet"], before["fsrc.parquet"]);
    assert_eq!(after["summary.parquet"], before["summary.parquet"]);
    manifest_consistent(&out);
    let m = std::fs::read_to_string(out.join("manifest.yaml")).unwrap();
    assert!(
        m.contains("seeds: 3"),
        "the manifest's fsrc section is stale:\n{m}"
    );
    assert_no_leftovers(d.path());

    // Another sweep config: refused, nothing changed.
    let before = snapshot(&out);
    let o = run(&[
        "fsrc",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--set",
        "seed=9",
    ]);
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("another config or data"),
        "{}",
        stderr(&o)
    );
    assert_eq!(snapshot(&out), before);
}

#[test]
fn table_plot_and_budget_refuse_to_overwrite_without_force() {
    let d = tempfile::tempdir().unwrap();
    let cfg = fixture(d.path(), "");
    let res = d.path().join("res");
    ok(&sweep_out(&cfg, &res, &[]));
    let tex = d.path().join("t.tex");
    std::fs::write(&tex, "mine").unwrap();
    let plots = d.path().join("plots");
    std::fs::create_dir(&plots).unwrap();
    std::fs::write(plots.join("fsrc.svg"), "mine").unwrap();
    let r = res.to_str().unwrap();
    let t = tex.to_str().unwrap();
    let p = plots.to_str().unwrap();
    let cases: [&[&str]; 3] = [
        &["table", r, "--kind", "lift", "--out", t],
        &["plot", r, "--kind", "fsrc", "--out", p],
        &["budget", "--latex", t],
    ];
    for args in cases {
        let before = snapshot(d.path());
        let o = run(args);
        assert_eq!(code(&o), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("pass --force"), "{}", stderr(&o));
        assert_eq!(snapshot(d.path()), before, "{args:?}");
        let mut a = args.to_vec();
        a.push("--force");
        ok(&run(&a));
    }
    assert_ne!(std::fs::read(&tex).unwrap(), b"mine");
    assert_no_leftovers(d.path());
}

/// Start a sweep in the background.
fn spawn_sweep(cfg: &Path, out: &Path, extra: &[&str]) -> Child {
    Command::new(bin())
        .args([
            "sweep",
            "--no-progress",
            cfg.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn staged_chunks(out: &Path) -> usize {
    std::fs::read_dir(out.join(".partial"))
        .map(|r| {
            r.filter(|e| {
                let n = e.as_ref().unwrap().file_name();
                let n = n.to_string_lossy();
                n.ends_with(".parquet") && !n.starts_with('.')
            })
            .count()
        })
        .unwrap_or(0)
}

/// Wait until the child has staged at least one chunk (it must still run).
fn wait_for_chunks(child: &mut Child, out: &Path) {
    let start = Instant::now();
    while staged_chunks(out) < 1 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the sweep finished before it could be interrupted; enlarge the config"
        );
        assert!(start.elapsed() < Duration::from_secs(300), "no progress");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_rerun_replaces_results_only_when_complete_and_holds_a_lock() {
    let d = tempfile::tempdir().unwrap();
    let cfg = d.path().join("demo.yaml");
    std::fs::write(
        &cfg,
        format!(
            "datasets: [{{path: \"{}\"}}]\nreward_models: {{oasst: {{transform: {{kind: clip, lo: -6, hi: 7}}}}, llama: {{transform: {{kind: minmax}}}}}}\nn: {{log2: [1, 11]}}\nreplicates: 4\nseed: 3\nalgorithms: {{bon: {{}}, privbon: {{sigma: [0.5]}}, itp: {{beta: [0.05]}}}}\n",
            demo_prepared().display()
        ),
    )
    .unwrap();
    let out = d.path().join("res");
    ok(&sweep_out(&cfg, &out, &["--set", "n=[2, 4]"]));
    std::fs::write(out.join("my-notes.md"), "mine").unwrap();
    let old = snapshot(&out);

    // A longer rerun: while it runs, the old results are intact and a
    // second writer is refused naming the holder's pid.
    let mut child = spawn_sweep(&cfg, &out, &[]);
    wait_for_chunks(&mut child, &out);
    let o = sweep_out(&cfg, &out, &["--set", "n=[2]"]);
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("pid {}", child.id())),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "fsrc",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--set",
        "fsrc={eps_total: 100, n: 2, sigma: [1], beta: 0.1}",
    ]);
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("pid {}", child.id())),
        "{}",
        stderr(&o)
    );
    let during = snapshot(&out);
    assert!(foreign_changes(&old, &during, &[".partial", ".privalign-lock"]).is_empty());
    manifest_consistent(&out);

    // Killed: the old results stay, readable and consistent; the lock is stale.
    child.kill().unwrap();
    child.wait().unwrap();
    let after_kill = snapshot(&out);
    assert!(foreign_changes(&old, &after_kill, &[".partial", ".privalign-lock"]).is_empty());
    assert!(after_kill.contains_key(".privalign-lock"));
    ok(&run(&[
        "table",
        out.to_str().unwrap(),
        "--kind",
        "lift",
        "--sigma",
        "0.5",
    ]));

    // A rerun without --resume takes over the dead process's lock, says it
    // discards the unfinished run, and swaps in complete results.
    let o = sweep_out(&cfg, &out, &["--set", "n=[2, 8]"]);
    ok(&o);
    assert!(stderr(&o).contains("took over the lock"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("discarding the unfinished run"),
        "{}",
        stderr(&o)
    );
    let new = snapshot(&out);
    assert_eq!(new["my-notes.md"], b"mine");
    assert_ne!(new["summary.parquet"], old["summary.parquet"]);
    assert!(!out.join(".partial").exists() && !out.join(".privalign-lock").exists());
    manifest_consistent(&out);
    assert_no_leftovers(d.path());
}

#[test]
fn resume_continues_the_staged_run_beside_old_results() {
    let d = tempfile::tempdir().unwrap();
    let cfg = d.path().join("demo.yaml");
    std::fs::write(
        &cfg,
        format!(
            "datasets: [{{path: \"{}\"}}]\nreward_models: {{oasst: {{transform: {{kind: clip, lo: -6, hi: 7}}}}, llama: {{transform: {{kind: minmax}}}}}}\nn: {{log2: [1, 11]}}\nreplicates: 4\nseed: 3\nalgorithms: {{bon: {{}}, privbon: {{sigma: [0.5]}}, itp: {{beta: [0.05]}}}}\n",
            demo_prepared().display()
        ),
    )
    .unwrap();
    let full = d.path().join("full");
    ok(&sweep_out(&cfg, &full, &[]));
    let out = d.path().join("res");
    ok(&sweep_out(
        &cfg,
        &out,
        &["--set", "seed=1", "--set", "n=[2]"],
    ));
    let old = snapshot(&out);
    let mut child = spawn_sweep(&cfg, &out, &[]);
    wait_for_chunks(&mut child, &out);
    child.kill().unwrap();
    child.wait().unwrap();
    let done = staged_chunks(&out);
    assert!(foreign_changes(&old, &snapshot(&out), &[".partial", ".privalign-lock"]).is_empty());
    let o = sweep_out(&cfg, &out, &["--resume"]);
    ok(&o);
    assert!(
        stdout(&o).contains(&format!("{done} resumed")),
        "{}",
        stdout(&o)
    );
    for f in ["cells.parquet", "summary.parquet"] {
        assert_eq!(
            std::fs::read(out.join(f)).unwrap(),
            std::fs::read(full.join(f)).unwrap(),
            "{f}"
        );
    }
    assert_no_leftovers(d.path());
}

#[test]
fn check_verifies_hashes_listed_files_and_the_config_hash() {
    let d = tempfile::tempdir().unwrap();
    let cfg = fixture(d.path(), "");
    let out = d.path().join("res");
    ok(&sweep_out(&cfg, &out, &[]));
    let r = out.to_str().unwrap();
    ok(&run(&["check", r, "--update"]));
    ok(&run(&["check", r]));
    let pristine = snapshot(&out);
    let restore = || {
        for (k, v) in &pristine {
            std::fs::write(out.join(k), v).unwrap();
        }
    };

    // summary.parquet with one number moved by one ulp: every reported
    // number is within tolerance, the hash is not.
    let mut s = read_parquet(&out.join("summary.parquet"));
    let lift: Vec<Option<f64>> = s
        .column("lift_mean")
        .unwrap()
        .f64()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, v)| v.map(|x| if i == 0 { x.next_up() } else { x }))
        .collect();
    s.with_column(polars::prelude::Column::new("lift_mean".into(), lift))
        .unwrap();
    write_parquet(&out.join("summary.parquet"), &mut s);
    let o = run(&["check", r]);
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("summary.parquet: SHA-256") && stderr(&o).contains("changed after"),
        "{}",
        stderr(&o)
    );
    restore();

    // A listed file that is missing.
    std::fs::remove_file(out.join("cells.parquet")).unwrap();
    let o = run(&["check", r]);
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cells.parquet: listed in manifest.yaml but missing"),
        "{}",
        stderr(&o)
    );
    restore();

    // A manifest whose recorded config was edited (seed) no longer hashes to its config_hash.
    let m = std::fs::read_to_string(out.join("manifest.yaml")).unwrap();
    std::fs::write(
        out.join("manifest.yaml"),
        m.replace("\n  seed: 1\n", "\n  seed: 2\n"),
    )
    .unwrap();
    let o = run(&["check", r]);
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("config_hash"), "{}", stderr(&o));
    restore();
    ok(&run(&["check", r]));
}

#[test]
fn check_recompute_does_not_depend_on_the_current_directory() {
    let d = tempfile::tempdir().unwrap();
    fixture(d.path(), "");
    // Swept from d with a relative config path, as a user in a checkout would.
    let o = Command::new(bin())
        .current_dir(d.path())
        .args(["sweep", "--no-progress", "exp.yaml", "--out", "results/exp"])
        .output()
        .unwrap();
    ok(&o);
    let res = d.path().join("results/exp");
    ok(&run(&["check", res.to_str().unwrap(), "--update"]));
    let elsewhere = tempfile::tempdir().unwrap();
    let o = Command::new(bin())
        .current_dir(elsewhere.path())
        .args(["check", res.to_str().unwrap(), "--recompute"])
        .output()
        .unwrap();
    ok(&o);
    assert!(stdout(&o).contains("within tolerance"), "{}", stdout(&o));
}
