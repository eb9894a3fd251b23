//! The committed real dataset (data/gpqa-genrm/raw, GPQA-Diamond × Llama-3.3-70B
//! scored by a generative verifier): the facts its README states, computed
//! here from the raw flat CSV without any privalign code; the engine's
//! best-of-64 without replacement against them; and the two input forms
//! (flat CSV, nested JSONL per score) giving identical prepared datasets.

use crate::common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const SCORES: [&str; 3] = ["genrm_mean32", "genrm_mean32_invalid0", "genrm_first1"];

fn raw_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/gpqa-genrm/raw")
}

/// One prompt's responses from flat.csv: (correct, [score per SCORES]).
type Prompt = Vec<(f64, [f64; 3])>;

/// Parse flat.csv by hand (plain numeric CSV, no quoting): prompt → responses
/// in response-id order.
fn read_flat() -> BTreeMap<String, Prompt> {
    let text = std::fs::read_to_string(raw_dir().join("flat.csv")).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "prompt_id,response_id,correct,genrm_mean32,genrm_mean32_invalid0,genrm_first1"
    );
    let mut out: BTreeMap<String, Vec<(usize, f64, [f64; 3])>> = BTreeMap::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), 6, "{line}");
        let num = |s: &str| s.parse::<f64>().unwrap();
        out.entry(f[0].to_string()).or_default().push((
            f[1].parse().unwrap(),
            num(f[2]),
            [num(f[3]), num(f[4]), num(f[5])],
        ));
    }
    out.into_iter()
        .map(|(p, mut v)| {
            v.sort_by_key(|r| r.0);
            (p, v.into_iter().map(|(_, c, s)| (c, s)).collect())
        })
        .collect()
}

/// Best-of-all accuracy with ties broken uniformly at random, as an exact
/// expectation: per prompt, the share of correct responses among those tied
/// at the maximum score; then the mean over prompts.
fn best_of_all(data: &BTreeMap<String, Prompt>, score: usize) -> f64 {
    let per_prompt: Vec<f64> = data
        .values()
        .map(|rs| {
            let best = rs.iter().map(|r| r.1[score]).fold(f64::MIN, f64::max);
            let tied: Vec<f64> = rs
                .iter()
                .filter(|r| r.1[score] == best)
                .map(|r| r.0)
                .collect();
            tied.iter().sum::<f64>() / tied.len() as f64
        })
        .collect();
    per_prompt.iter().sum::<f64>() / per_prompt.len() as f64
}

fn tied_max_prompts(data: &BTreeMap<String, Prompt>, score: usize) -> usize {
    data.values()
        .filter(|rs| {
            let best = rs.iter().map(|r| r.1[score]).fold(f64::MIN, f64::max);
            rs.iter().filter(|r| r.1[score] == best).count() > 1
        })
        .count()
}

/// The data README's "facts to test against", each from the raw file.
#[test]
fn data_readme_facts_hold_in_the_raw_file() {
    let data = read_flat();
    assert_eq!(data.len(), 64);
    assert!(data.values().all(|rs| rs.len() == 64));
    let all: Vec<&(f64, [f64; 3])> = data.values().flatten().collect();
    assert!(all.iter().all(|r| r.0 == 0.0 || r.0 == 1.0));
    // pass@1: the mean correctness (exact: 1822 / 4096).
    let pass1 = all.iter().map(|r| r.0).sum::<f64>() / all.len() as f64;
    assert_eq!(pass1, 0.44482421875);
    let share = |rs: &Prompt| rs.iter().map(|r| r.0).sum::<f64>() / rs.len() as f64;
    assert_eq!(data.values().filter(|rs| share(rs) == 1.0).count(), 4);
    assert_eq!(data.values().filter(|rs| share(rs) == 0.0).count(), 10);
    for s in 0..3 {
        assert!(all.iter().all(|r| (0.0..=1.0).contains(&r.1[s])));
    }
    // Heavy ties: 57 of 64 prompts have a tied maximum of genrm_mean32
    // (summary.json: 57 for the invalid0 variant, 61 for the first verification).
    assert_eq!(tied_max_prompts(&data, 0), 57);
    assert_eq!(tied_max_prompts(&data, 1), 57);
    assert_eq!(tied_max_prompts(&data, 2), 61);
    // Best-of-64 with random tie-breaking, as the README rounds it.
    let round4 = |x: f64| (x * 1e4).round() / 1e4;
    assert_eq!(round4(best_of_all(&data, 0)), 0.4748);
    assert_eq!(round4(best_of_all(&data, 1)), 0.481);
    assert_eq!(round4(best_of_all(&data, 2)), 0.4497);
}

/// The engine's BoN at n = 64 without replacement sees each prompt's whole
/// pool, so its accuracy is the best-of-64 expectation above — in the
/// committed results and in a fresh sweep. Equal up to floating-point
/// summation order (1e-12); the scores' f32 storage merges no tie at the top.
#[test]
fn engine_bon_at_64_without_replacement_is_best_of_64() {
    let data = read_flat();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let d = tempfile::tempdir().unwrap();
    let ds = d.path().join("prepared");
    ingest_flat(&ds, &SCORES);
    let out = d.path().join("results");
    let sets = [
        format!("datasets.0.path={}", ds.display()),
        "n=[16, 64]".into(),
        "replicates=2".into(),
        "algorithms={bon: {}}".into(),
        "reports={}".into(),
    ];
    let mut args = vec![
        "sweep".to_string(),
        "--no-progress".into(),
        root.join("experiments/gpqa-genrm.yaml")
            .display()
            .to_string(),
        "--out".into(),
        out.display().to_string(),
    ];
    for s in sets {
        args.extend(["--set".to_string(), s]);
    }
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&run(&a));
    for dir in [out, root.join("results/gpqa-genrm")] {
        let set = privalign::results::read::read_results_set(std::slice::from_ref(&dir)).unwrap();
        for (s, name) in SCORES.iter().enumerate() {
            let want = best_of_all(&data, s);
            let rec = set
                .summary()
                .find(|r| r.algorithm == "bon" && r.n == 64 && r.reward_model == *name)
                .unwrap_or_else(|| panic!("{}: no BoN n = 64 row for {name}", dir.display()));
            let got = rec.stat("accuracy").mean.unwrap();
            assert!(
                (got - want).abs() <= 1e-12,
                "{}: {name}: engine {got} vs raw {want}",
                dir.display()
            );
            // Lift is measured against pass@1 (every pool has 64 responses).
            let lift = rec.stat("lift").mean.unwrap();
            assert!((lift - 100.0 * (want - 0.44482421875)).abs() < 1e-9);
        }
    }
}

/// `--table flat.csv` with the given reward columns into `out`.
fn ingest_flat(out: &Path, scores: &[&str]) {
    let flat = raw_dir().join("flat.csv");
    let mut args = vec![
        "ingest".to_string(),
        "--table".into(),
        flat.display().to_string(),
        "--prompt-col".into(),
        "prompt_id".into(),
        "--response-col".into(),
        "response_id".into(),
        "--correct-col".into(),
        "correct".into(),
        "--name".into(),
        "gpqa-genrm".into(),
        "--out".into(),
        out.display().to_string(),
    ];
    for s in scores {
        args.extend(["--reward-col".to_string(), format!("{s}={s}")]);
    }
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&run(&a));
}

fn manifest_without_source(dir: &Path) -> yaml_serde::Value {
    let text = std::fs::read_to_string(dir.join("dataset.yaml")).unwrap();
    let mut v: yaml_serde::Value = yaml_serde::from_str(&text).unwrap();
    v.as_mapping_mut().unwrap().remove("source");
    v
}

/// Per score: the flat CSV (that one reward column) and the reference
/// scripts' nested JSONL give the same scores.parquet content and the same
/// dataset.yaml apart from its `source` record.
#[test]
fn flat_csv_and_nested_jsonl_give_identical_datasets() {
    let d = tempfile::tempdir().unwrap();
    for s in SCORES {
        let flat = d.path().join(format!("flat-{s}"));
        ingest_flat(&flat, &[s]);
        let nested = d.path().join(format!("nested-{s}"));
        let jsonl = raw_dir().join(format!("jsonl/{s}.jsonl"));
        ok(&run(&[
            "ingest",
            "--nested-jsonl",
            jsonl.to_str().unwrap(),
            "--reward-name",
            s,
            "--name",
            "gpqa-genrm",
            "--out",
            nested.to_str().unwrap(),
        ]));
        let (a, b) = (
            read_parquet(&flat.join("scores.parquet")),
            read_parquet(&nested.join("scores.parquet")),
        );
        assert_eq!(a.height(), 4096);
        assert!(a.equals_missing(&b), "{s}: scores differ\n{a}\n{b}");
        assert_eq!(
            manifest_without_source(&flat),
            manifest_without_source(&nested),
            "{s}"
        );
    }
}
