//! The README, followed literally in a fresh clone: the main job's ingest,
//! then the "Your own data, end to end" walkthrough (synth standing in for a
//! user's parquet pair, ingest, sweep, table, plot). `cargo run --release --`
//! is replaced by the binary under test, which is on PATH as `privalign`;
//! every command runs through `sh` from the clone's root, as a user types it.

use crate::common::*;
use std::path::Path;
use std::process::Command;

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap()
}

fn sh(dir: &Path, line: &str) -> std::process::Output {
    let bin_dir = bin().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .unwrap()
}

#[test]
fn readme_walkthrough_runs_in_a_fresh_clone() {
    let d = tempfile::tempdir().unwrap();
    let clone = d.path().join("clone");
    let o = Command::new("git")
        .args([
            "clone",
            "-q",
            env!("CARGO_MANIFEST_DIR"),
            clone.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    if !o.status.success() {
        // Not a git checkout (e.g. a source tarball): copy what a clone has.
        panic!("git clone failed: {}", String::from_utf8_lossy(&o.stderr));
    }
    let text = readme();
    // Set-up command 1 (the main job): its ingest half — the reproduce half is
    // the demo sweep, covered by tests/it/sweep.rs and CI's check --recompute.
    let setup = text
        .lines()
        .find(|l| l.starts_with("cargo run --release -- ingest"))
        .expect("the README's main job");
    let ingest = setup
        .split(" && ")
        .next()
        .unwrap()
        .replace("cargo run --release --", "privalign");
    let o = sh(&clone, &ingest);
    assert!(o.status.success(), "{ingest}: {}", stderr(&o));
    assert!(clone.join("data/demo/prepared/scores.parquet").exists());
    assert!(setup.contains("&& cargo run --release -- reproduce experiments/demo.yaml"));
    assert!(text.contains("\ncargo test --locked\n"), "set-up command 2");

    let block = text
        .split("<!-- e2e:begin -->")
        .nth(1)
        .and_then(|b| b.split("<!-- e2e:end -->").next())
        .expect("README has an e2e block");
    let lines: Vec<&str> = block
        .lines()
        .filter(|l| l.starts_with("privalign "))
        .collect();
    assert!(lines.len() >= 5, "{lines:?}");
    for line in &lines {
        let o = sh(&clone, line);
        assert!(
            o.status.success(),
            "{line}:\n{}\n{}",
            stdout(&o),
            stderr(&o)
        );
    }
    let out = clone.join("results/mine");
    for f in [
        "cells.parquet",
        "summary.parquet",
        "manifest.yaml",
        "plots/scaling.png",
        "plots/scaling.svg",
    ] {
        assert!(out.join(f).exists(), "{f} missing after the walkthrough");
    }
    let table = sh(
        &clone,
        lines.iter().find(|l| l.contains(" table ")).unwrap(),
    );
    assert!(
        stdout(&table).contains("| mine | BoN |"),
        "{}",
        stdout(&table)
    );
}
