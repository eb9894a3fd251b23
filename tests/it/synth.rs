//! `privalign synth`: determinism, the shipped demo data, and the properties
//! each preset promises (rise-then-fall for weak models, Gaussian noise law).

use crate::common::*;
use privalign::data::prepared::PreparedDataset;
use privalign::select::bon::expected_value_with_replacement;
use std::path::Path;

fn synth(args: &[&str], out: &Path, threads: &str) {
    let o = std::process::Command::new(bin())
        .env("RAYON_NUM_THREADS", threads)
        .arg("synth")
        .args(args)
        .args(["--out", &out.display().to_string()])
        .output()
        .unwrap();
    ok(&o);
}

fn ingest_dir(raw: &Path, out: &Path) -> PreparedDataset {
    ingest_raw(raw, out);
    PreparedDataset::load(out).unwrap()
}

#[test]
fn same_seed_same_bytes_for_any_thread_count() {
    let d = tempfile::tempdir().unwrap();
    let args = [
        "--preset",
        "math",
        "--prompts",
        "7",
        "--responses",
        "50",
        "--seed",
        "3",
    ];
    synth(&args, &d.path().join("a"), "1");
    synth(&args, &d.path().join("b"), "2");
    for f in entries(&d.path().join("a")) {
        let a = std::fs::read(d.path().join("a").join(&f)).unwrap();
        let b = std::fs::read(d.path().join("b").join(&f)).unwrap();
        assert!(a == b, "{f} differs between thread counts");
    }
    synth(
        &["--prompts", "7", "--responses", "50", "--seed", "4"],
        &d.path().join("c"),
        "2",
    );
    let a = read_parquet(&d.path().join("a/rewards_oasst.parquet"));
    let c = read_parquet(&d.path().join("c/rewards_oasst.parquet"));
    assert!(!a.equals(&c), "a different seed must give different data");
}

/// The committed demo data is what `synth` makes from the command in data/README.md.
#[test]
fn demo_data_regenerates_identically() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shipped = root.join("data/demo/raw");
    let d = tempfile::tempdir().unwrap();
    let fresh = d.path().join("raw");
    synth(
        &["--preset", "math", "--size", "demo", "--seed", "0"],
        &fresh,
        "2",
    );
    assert_eq!(entries(&shipped), entries(&fresh));
    for f in entries(&fresh) {
        if f.ends_with(".parquet") {
            // Content, not bytes: a newer parquet writer may encode the same data differently.
            let a = read_parquet(&shipped.join(&f));
            let b = read_parquet(&fresh.join(&f));
            assert!(
                a.equals(&b),
                "{f}: committed demo data differs from a fresh synth"
            );
        } else {
            let a = std::fs::read_to_string(shipped.join(&f)).unwrap();
            let b = std::fs::read_to_string(fresh.join(&f)).unwrap();
            assert_eq!(a, b, "{f}: committed demo data differs from a fresh synth");
        }
    }
    let total: u64 = entries(&shipped)
        .iter()
        .map(|f| std::fs::metadata(shipped.join(f)).unwrap().len())
        .sum();
    assert!(
        total <= 5 * 1024 * 1024,
        "data/demo/raw is {total} bytes (> 5 MB)"
    );
}

/// Per-prompt exact BoN accuracy (bootstrap with replacement) for n = 2^k.
fn bon_curves(ds: &PreparedDataset, model: &str, ks: &[u32]) -> Vec<Vec<f64>> {
    let r = ds.reward(model).unwrap();
    ks.iter()
        .map(|&k| {
            ds.offsets
                .windows(2)
                .map(|w| {
                    expected_value_with_replacement(&r[w[0]..w[1]], &ds.correct[w[0]..w[1]], 1 << k)
                })
                .collect()
        })
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Mean and standard error of the paired per-prompt difference a − b.
fn paired(a: &[f64], b: &[f64]) -> (f64, f64) {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let m = mean(&d);
    let var = d.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (d.len() - 1) as f64;
    (m, (var / d.len() as f64).sqrt())
}

/// "Rise then fall": the peak over n is well below 4096, is above n = 1 and
/// above n = 4096 by more than 3 paired standard errors each.
fn rises_then_falls(curves: &[Vec<f64>], ks: &[u32]) -> (bool, String) {
    let means: Vec<f64> = curves.iter().map(|c| mean(c)).collect();
    let peak = (0..means.len())
        .max_by(|&a, &b| means[a].total_cmp(&means[b]))
        .unwrap();
    let last = means.len() - 1;
    let (rise, rise_se) = paired(&curves[peak], &curves[0]);
    let (fall, fall_se) = paired(&curves[peak], &curves[last]);
    let ok = ks[peak] <= 8 && rise > 3.0 * rise_se && fall > 3.0 * fall_se;
    (
        ok,
        format!(
            "peak at n=2^{} ({:.4}); rise {rise:.4}±{rise_se:.4}; fall to n=4096 {fall:.4}±{fall_se:.4}; curve {:?}",
            ks[peak],
            means[peak],
            means
                .iter()
                .map(|m| (m * 1000.0).round() / 1000.0)
                .collect::<Vec<_>>()
        ),
    )
}

#[test]
fn math_preset_weak_models_hack_strong_models_do_not() {
    let d = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ds = ingest_dir(&root.join("data/demo/raw"), &d.path().join("prep"));
    let ks: Vec<u32> = (0..=12).collect();
    for model in ["oasst", "gemma"] {
        let (ok, msg) = rises_then_falls(&bon_curves(&ds, model, &ks), &ks);
        assert!(ok, "{model} should rise then fall: {msg}");
    }
    for model in ["llama", "armo"] {
        let curves = bon_curves(&ds, model, &ks);
        let (ok, msg) = rises_then_falls(&curves, &ks);
        assert!(!ok, "{model} should not rise then fall: {msg}");
        // And it keeps improving: n = 4096 is within 0.5 points of the best n.
        let means: Vec<f64> = curves.iter().map(|c| mean(c)).collect();
        let best = means.iter().copied().fold(f64::MIN, f64::max);
        assert!(means[12] > best - 0.005, "{model}: {msg}");
        assert!(
            means[12] > means[0] + 0.05,
            "{model} should improve on the base: {msg}"
        );
    }
    // gen_seconds is present and plausible (ms-scale amortised per response).
    let g = ds.gen_seconds.as_ref().unwrap();
    let mg = g.iter().map(|&x| f64::from(x)).sum::<f64>() / g.len() as f64;
    assert!(mg > 5e-4 && mg < 1e-2, "mean gen_seconds {mg}");
}

/// gaussian preset: r̂ − r* ~ N(0, σ_r²) with σ_r from the model name; r*
/// constant within a prompt. Tolerances are ≥ 6 standard errors (α < 1e-8).
#[test]
fn gaussian_preset_matches_its_model() {
    let d = tempfile::tempdir().unwrap();
    synth(
        &[
            "--preset",
            "gaussian",
            "--prompts",
            "40",
            "--responses",
            "2500",
            "--reward-models",
            "gauss0.25,gauss1",
        ],
        &d.path().join("raw"),
        "2",
    );
    let ds = ingest_dir(&d.path().join("raw"), &d.path().join("prep"));
    assert_eq!(ds.manifest.correct_kind, "continuous");
    for w in ds.offsets.windows(2) {
        let c = &ds.correct[w[0]..w[1]];
        assert!(
            c.iter().all(|&x| x == c[0]),
            "r* must be constant within a prompt"
        );
    }
    for (model, sigma) in [("gauss0.25", 0.25f64), ("gauss1", 1.0)] {
        let r = ds.reward(model).unwrap();
        let e: Vec<f64> = r
            .iter()
            .zip(&ds.correct)
            .map(|(&a, &b)| f64::from(a) - f64::from(b))
            .collect();
        let n = e.len() as f64;
        let m = mean(&e);
        let var = e.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
        assert!(m.abs() < 6.0 * sigma / n.sqrt(), "{model}: mean error {m}");
        // SE of the sample variance of a normal is σ²√(2/(n−1)).
        let tol = 6.0 * sigma * sigma * (2.0 / (n - 1.0)).sqrt();
        assert!((var - sigma * sigma).abs() < tol, "{model}: var {var}");
        // Broken variant: a 10% error in σ_r would be detected.
        assert!((var - 1.21 * sigma * sigma).abs() > tol);
    }
}

#[test]
fn bad_synth_flags_are_input_errors() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("x").display().to_string();
    let o = run(&["synth", "--reward-models", "oasst,bogus", "--out", &out]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown model \"bogus\""),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "synth",
        "--preset",
        "gaussian",
        "--reward-models",
        "oasst",
        "--out",
        &out,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("gauss<σ_r>"), "{}", stderr(&o));
    let o = run(&["synth", "--responses", "1", "--out", &out]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!d.path().join("x").exists());
}
