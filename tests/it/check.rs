//! `privalign check`: the committed demo results pass; a reported number
//! shifted by three of its SEs fails naming exactly that number; a sweep with
//! σ scaled by 1.1 fails against the reference of the unscaled one.

use crate::common::*;
use std::path::Path;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A copy of the committed results/demo (summary, fsrc, manifest, reference,
/// and the tables and plots the manifest lists).
fn demo_copy(dir: &Path) -> std::path::PathBuf {
    let out = dir.join("demo");
    let src = repo().join("results/demo");
    for sub in ["", "tables", "plots"] {
        std::fs::create_dir_all(out.join(sub)).unwrap();
        for e in std::fs::read_dir(src.join(sub)).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            // cells.parquet is not committed (the manifest does not list it).
            if e.file_type().unwrap().is_file() && name != "cells.parquet" {
                std::fs::copy(e.path(), out.join(sub).join(&name)).unwrap();
            }
        }
    }
    out
}

#[test]
fn committed_demo_results_pass_their_reference_and_the_claims() {
    let d = tempfile::tempdir().unwrap();
    let out = demo_copy(d.path());
    let claims = repo().join("experiments/paper-claims.yaml");
    let o = run(&[
        "check",
        out.to_str().unwrap(),
        "--claims",
        claims.to_str().unwrap(),
    ]);
    ok(&o);
    assert!(
        stdout(&o).contains("numbers within tolerance; all 25 claims hold"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_number_shifted_by_three_se_fails_naming_exactly_it() {
    let d = tempfile::tempdir().unwrap();
    let out = demo_copy(d.path());
    let path = out.join("reference.yaml");
    let mut r: serde_json::Value =
        yaml_serde::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let numbers = r["numbers"].as_array_mut().unwrap();
    let target = numbers
        .iter_mut()
        .find(|n| n["stat"] == "lift" && n["algorithm"] == "privitp" && n["se"].as_f64().is_some())
        .unwrap();
    let name = target["name"].as_str().unwrap().to_string();
    let (v, se) = (
        target["value"].as_f64().unwrap(),
        target["se"].as_f64().unwrap(),
    );
    target["value"] = serde_json::json!(v + 3.0 * se);
    std::fs::write(&path, yaml_serde::to_string(&r).unwrap()).unwrap();
    let o = run(&["check", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(e.contains("1 check(s) failed"), "{e}");
    assert!(e.contains(&name), "{e}");
    assert_eq!(stdout(&o).matches("MOVED").count(), 1, "{}", stdout(&o));
}

#[test]
fn sigma_scaled_by_1_1_fails_the_check() {
    let d = tempfile::tempdir().unwrap();
    let cfg = repo().join("experiments/demo.yaml");
    let sets = small_demo_sets();
    let small: Vec<&str> = sets.iter().map(String::as_str).collect();
    let base = d.path().join("base");
    let mut a = vec![
        "sweep",
        "--no-progress",
        cfg.to_str().unwrap(),
        "--out",
        base.to_str().unwrap(),
    ];
    a.extend_from_slice(&small);
    ok(&run(&a));
    ok(&run(&["check", base.to_str().unwrap(), "--update"]));
    ok(&run(&["check", base.to_str().unwrap()]));

    let scaled = d.path().join("scaled");
    let mut a = vec![
        "sweep",
        "--no-progress",
        cfg.to_str().unwrap(),
        "--out",
        scaled.to_str().unwrap(),
    ];
    a.extend_from_slice(&small);
    a.extend_from_slice(&[
        "--set",
        "algorithms.privbon.sigma=[0.055, 0.11, 0.275, 0.55]",
        "--set",
        "algorithms.privitp.sigma=[0.11, 0.275]",
        "--set",
        "fsrc.sigma=[1.1, 2.2, 4.4]",
    ]);
    ok(&run(&a));
    let reference = base.join("reference.yaml");
    let o = run(&[
        "check",
        scaled.to_str().unwrap(),
        "--reference",
        reference.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("eps privbon σ=0.1 demo/oasst n=1024 (missing from the results)"),
        "{e}"
    );
    // BoN and ITP do not depend on σ: their numbers did not move.
    assert!(!e.contains("lift bon "), "{e}");
    assert!(!e.contains("lift itp "), "{e}");
}
