//! `shard.yaml`: what a shard directory holds and whether it is complete.
//!
//! A shard directory (`privalign sweep --shard K/N`) is not a results
//! directory: it holds shard K's unit files and this manifest. The manifest
//! is rewritten (atomically) when the shard starts and again, with
//! `finished: true`, after its last unit file is on disk, so `merge` and
//! `privalign slurm --resume` can tell a finished shard from an interrupted
//! one without reading its data.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

use super::manifest::TransformRecord;
use crate::bail_input;
use crate::config::ExperimentConfig;

pub const SHARD_MANIFEST: &str = "shard.yaml";
/// The `format` key of a shard manifest; a different value is refused.
pub const SHARD_FORMAT: &str = "privalign-shard/v2";

/// One dataset's identity as the shard saw it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardDataset {
    pub name: String,
    /// The dataset's content hash (see `DatasetRecord::content_sha256`).
    pub content_sha256: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShardManifest {
    pub format: String,
    pub experiment: String,
    pub privalign_version: String,
    /// The config hash of the one-machine sweep (same recipe): shards of one
    /// sweep share it, and the merged manifest records it.
    pub config_hash: String,
    /// Where the config was read (dataset paths resolve against it).
    pub config_path: String,
    /// The resolved config after `--set`, as the results manifest records it.
    pub config: ExperimentConfig,
    pub datasets: Vec<ShardDataset>,
    /// K of `--shard K/N` (0-based).
    pub shard: usize,
    /// N of `--shard K/N`.
    pub shards: usize,
    /// The units this shard holds (their file names in the shard directory).
    pub units: Vec<String>,
    /// Whether this shard runs the FSRC section.
    pub fsrc: bool,
    /// Every unit (and the FSRC file, when `fsrc`) is on disk.
    pub finished: bool,
    /// Per dataset, per reward model: the transform as applied, for the
    /// (dataset, reward model) pairs this shard's units touch.
    pub transforms: BTreeMap<String, BTreeMap<String, TransformRecord>>,
    /// Rows of scores.parquet this shard decoded (all columns it read count
    /// once per row and read): its slice, not the dataset.
    #[serde(default)]
    pub rows_read: u64,
    pub computed_units: usize,
    pub resumed_units: usize,
    // Run-specific fields (they differ between runs of the same shard).
    pub threads: usize,
    pub host: Option<String>,
    pub slurm_job_id: Option<String>,
    pub seconds: f64,
}

/// Read `dir/shard.yaml`: `Ok(None)` when it does not exist.
pub fn read_shard_manifest(dir: &Path) -> Result<Option<ShardManifest>> {
    let path = dir.join(SHARD_MANIFEST);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let m: ShardManifest = match yaml_serde::from_str(&text) {
        Ok(m) => m,
        Err(e) => bail_input!(
            "{}: not a shard manifest ({e}); the shard directory is damaged — remove it and rerun its shard",
            path.display()
        ),
    };
    if m.format != SHARD_FORMAT {
        bail_input!(
            "{}: format `{}`, this privalign reads `{SHARD_FORMAT}`; rerun the shard with this version",
            path.display(),
            m.format
        );
    }
    Ok(Some(m))
}

/// A minimal manifest for unit tests of the modules that read manifests.
#[cfg(test)]
pub(crate) fn test_manifest(k: usize, n: usize, finished: bool) -> ShardManifest {
    ShardManifest {
        format: SHARD_FORMAT.into(),
        experiment: "demo".into(),
        privalign_version: "0".into(),
        config_hash: "h".into(),
        config_path: "c.yaml".into(),
        config: crate::config::parse(
            "datasets: [{path: d}]\nreward_models: {a: {}}\nn: [2]\nalgorithms: {bon: {}}\n",
            &[],
        )
        .unwrap(),
        datasets: vec![ShardDataset {
            name: "d".into(),
            content_sha256: "s".into(),
        }],
        shard: k,
        shards: n,
        units: vec![],
        fsrc: false,
        finished,
        transforms: BTreeMap::new(),
        rows_read: 0,
        computed_units: 0,
        resumed_units: 0,
        threads: 1,
        host: None,
        slurm_job_id: None,
        seconds: 0.0,
    }
}

/// Write `m` as `dir/shard.yaml` (tests).
#[cfg(test)]
pub(crate) fn write_test_manifest(dir: &Path, m: &ShardManifest) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(SHARD_MANIFEST), yaml_serde::to_string(m).unwrap()).unwrap();
}
