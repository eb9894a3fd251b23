//! Helpers shared by the integration tests: running the binary and writing
//! small input files.
#![allow(dead_code)]

use polars::prelude::*;
use std::path::{Path, PathBuf};
use std::process::Output;

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_privalign"))
}

/// Run privalign with `args`, returning its output.
pub fn run(args: &[&str]) -> Output {
    std::process::Command::new(bin())
        .args(args)
        .output()
        .expect("running privalign")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Assert the run succeeded, printing its stderr otherwise.
pub fn ok(o: &Output) {
    assert!(o.status.success(), "privalign failed: {}", stderr(o));
}

pub fn write_parquet(path: &Path, df: &mut DataFrame) {
    let f = std::fs::File::create(path).unwrap();
    ParquetWriter::new(f).finish(df).unwrap();
}

pub fn read_parquet(path: &Path) -> DataFrame {
    let f = std::fs::File::open(path).unwrap();
    ParquetReader::new(f).finish().unwrap()
}

/// Entries of `dir`, sorted, for "nothing was left behind" checks.
pub fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Ingest a synth output directory (responses.parquet + rewards_*.parquet)
/// into a prepared dataset at `out` with the binary, as a user would.
pub fn ingest_raw(raw: &Path, out: &Path) {
    let mut rewards: Vec<String> = entries(raw)
        .into_iter()
        .filter(|f| f.starts_with("rewards_"))
        .map(|f| raw.join(f).display().to_string())
        .collect();
    rewards.sort();
    let mut args = vec![
        "ingest".to_string(),
        "--responses".into(),
        raw.join("responses.parquet").display().to_string(),
        "--rewards".into(),
    ];
    args.extend(rewards);
    args.extend(["--out".into(), out.display().to_string()]);
    args.extend(["--name".into(), "demo".into()]);
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&run(&a));
}

/// The committed demo data, prepared once per test binary (the prepared
/// directory is not committed).
pub fn demo_prepared() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        // One directory per test binary (cargo runs binaries one at a time;
        // the OnceLock serialises the tests within one).
        let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("demo-prepared-{}", env!("CARGO_CRATE_NAME")));
        if out.exists() {
            std::fs::remove_dir_all(&out).unwrap();
        }
        ingest_raw(&root.join("data/demo/raw"), &out);
        out
    })
}

/// A fixed 4-prompt × 6-response dataset with two reward models and
/// generation times, swept with every algorithm and an FSRC section.
pub fn fixed_results() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("fixed-results-{}", env!("CARGO_CRATE_NAME")));
        if root.exists() {
            std::fs::remove_dir_all(&root).unwrap();
        }
        std::fs::create_dir_all(&root).unwrap();
        let mut text = String::from("prompt_id,correct,a,b,gen_seconds\n");
        for p in 0..4 {
            for k in 0..6 {
                let x = (p * 7 + k * 5) % 11;
                let correct = u8::from((x + p) % 3 == 0);
                let a = x as f64 / 10.0;
                let b = ((x * 3 + k) % 10) as f64 / 10.0;
                text += &format!("q{p},{correct},{a},{b},{}\n", 0.5 + 0.1 * k as f64);
            }
        }
        let csv = root.join("fixed.csv");
        std::fs::write(&csv, text).unwrap();
        let ds = root.join("prepared");
        ingest_csv(
            &csv,
            &ds,
            &[
                "--reward-col",
                "a=a",
                "--reward-col",
                "b=b",
                "--name",
                "fixed",
            ],
        );
        let cfg = root.join("fixed.yaml");
        std::fs::write(
            &cfg,
            format!(
                r#"datasets: [{{path: "{}"}}]
reward_models:
  a: {{transform: {{kind: none}}}}
  b: {{transform: {{kind: none}}}}
n: [2, 4]
replicates: 3
seed: 1
algorithms:
  bon: {{}}
  privbon: {{sigma: [0.5]}}
  itp: {{beta: [0.1]}}
  privitp: {{sigma: [0.5], beta: [0.1], clamp: [0, 1]}}
fsrc: {{eps_total: 60, n: 4, sigma: [1.0], beta: 0.1, seeds: 2}}
"#,
                ds.display()
            ),
        )
        .unwrap();
        let out = root.join("results");
        ok(&run(&[
            "sweep",
            "--no-progress",
            cfg.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]));
        out
    })
}

/// Ingest a flat CSV with columns `prompt_id`, `correct` and the reward
/// columns named in `extra` (`--reward-col NAME=COL`, …) into `out`.
pub fn ingest_csv(csv: &Path, out: &Path, extra: &[&str]) {
    let mut args = vec![
        "ingest",
        "--table",
        csv.to_str().unwrap(),
        "--prompt-col",
        "prompt_id",
        "--correct-col",
        "correct",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    ok(&run(&args));
}

/// `--set` overrides that shrink experiments/demo.yaml to a quick sweep on
/// the prepared demo data: 3 n, 2 replicates, 2 FSRC seeds, no reports.
pub fn small_demo_sets() -> Vec<String> {
    [
        format!("datasets.0.path={}", demo_prepared().display()),
        "n=[2, 64, 1024]".into(),
        "replicates=2".into(),
        "fsrc.seeds=2".into(),
        "reports={}".into(),
    ]
    .into_iter()
    .flat_map(|s| ["--set".to_string(), s])
    .collect()
}
