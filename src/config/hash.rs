//! The config hashes (ARCHITECTURE.md, "Config hash").
//!
//! **Rule:** every key of the resolved experiment config changes some file
//! privalign writes — the cells and summary (datasets, reward models and
//! their transforms, n, replicates, seed, sampling, estimator, λ̃ nodes,
//! privacy, algorithms), `fsrc.parquet` (the `fsrc:` section), the tables and
//! plots of `reproduce` (`reports:`), or the manifest itself (`name`,
//! `description`, which it records). So [`config_hash`] covers **every** key,
//! after `--set` overrides and with every default filled in, plus the
//! privalign version and each input dataset's name and scores hash. It is what
//! `manifest.yaml` records and what `sweep --resume` compares before saying
//! "nothing to do"; a change to any key means the results are recomputed.
//!
//! [`cells_hash`] is the narrower hash of the keys the per-chunk cells depend
//! on (everything except `name`, `description`, `fsrc` and `reports`). It
//! guards the finished chunks of an *interrupted* run in `.partial/`: those
//! chunks stay valid when only FSRC or report settings change, and the
//! resumed run recomputes FSRC and rewrites every other file.
//!
//! Both are SHA-256 over a canonical JSON serialisation (`BTreeMap` keys are
//! ordered; floats print in shortest round-trip form, so distinct values give
//! distinct text).

use anyhow::Result;
use sha2::{Digest, Sha256};

use super::ExperimentConfig;

fn digest(tag: &[u8], config: &ExperimentConfig, datasets: &[(String, String)]) -> Result<String> {
    let mut h = Sha256::new();
    h.update(tag);
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update([0]);
    h.update(serde_json::to_vec(config)?);
    for (name, sha) in datasets {
        h.update([0]);
        h.update(name.as_bytes());
        h.update([0]);
        h.update(sha.as_bytes());
    }
    Ok(hex::encode(h.finalize()))
}

/// The hash of everything that changes any output: every config key, the
/// privalign version, and every dataset's `(name, scores sha256)`.
pub fn config_hash(config: &ExperimentConfig, datasets: &[(String, String)]) -> Result<String> {
    digest(b"privalign-config/v2\0", config, datasets)
}

/// The hash the finished chunks of an interrupted run depend on: the config
/// without `name`, `description`, `fsrc` and `reports` (recomputed or
/// re-rendered on every run), the version and the datasets.
pub fn cells_hash(config: &ExperimentConfig, datasets: &[(String, String)]) -> Result<String> {
    let mut c = config.clone();
    c.reports = Default::default();
    c.fsrc = None;
    c.name = None;
    c.description = None;
    digest(b"privalign-cells/v1\0", &c, datasets)
}
