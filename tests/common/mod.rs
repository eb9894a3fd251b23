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
