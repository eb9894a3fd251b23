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
