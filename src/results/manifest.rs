//! `manifest.yaml` (design §10): what produced a results directory. It is
//! written last, so a directory whose manifest is missing is incomplete, and
//! it records the SHA-256 of every result file it vouches for.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::config::ExperimentConfig;

pub const MANIFEST_FILE: &str = "manifest.yaml";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ResultsManifest {
    pub experiment: String,
    pub privalign_version: String,
    /// `git rev-parse HEAD` of the working directory, when it is a checkout.
    pub git_commit: Option<String>,
    pub config_path: String,
    /// SHA-256 over the resolved config, the privalign version and the input
    /// datasets' hashes; `--resume` reuses work only under the same hash.
    pub config_hash: String,
    /// The config after `--set` overrides, with every default filled in.
    pub config: ExperimentConfig,
    pub n_values: Vec<usize>,
    pub datasets: Vec<DatasetRecord>,
    /// Per dataset, per reward model: the transform as applied.
    pub transforms: BTreeMap<String, BTreeMap<String, TransformRecord>>,
    pub seed: u64,
    pub threads: usize,
    pub host: Option<String>,
    /// Wall time per stage, seconds.
    pub stages: BTreeMap<String, f64>,
    /// Blocks (dataset, reward model, 32 prompts) reused from an interrupted
    /// run, and computed by this one (the keys keep their first name, so
    /// older manifests still read).
    pub resumed_chunks: usize,
    pub computed_chunks: usize,
    /// SHA-256 of each result file.
    pub files: BTreeMap<String, String>,
    /// Set by `privalign merge`: the number of shards these results were
    /// merged from (absent for a one-machine sweep).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_shards: Option<usize>,
    /// Set by `privalign reproduce`: SHA-256 of each table and plot it wrote
    /// (paths relative to the results directory). What privalign may replace
    /// or remove under `tables/` and `plots/` is exactly what this lists;
    /// `check` verifies them like the result files. Absent in manifests of a
    /// plain `sweep` (no reports) and of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reports: Option<BTreeMap<String, String>>,
}

impl DatasetRecord {
    /// The record of dataset `d` with its content hash and mean generation time.
    pub fn of(
        d: &crate::config::ResolvedDataset,
        content_sha256: &str,
        gen_seconds_mean: Option<f64>,
    ) -> Self {
        Self {
            name: d.name.clone(),
            path: d.dir.display().to_string(),
            content_sha256: content_sha256.to_string(),
            prompts: d.manifest.counts.prompts,
            responses: d.manifest.counts.responses,
            gen_seconds_mean,
        }
    }
}

impl ResultsManifest {
    /// Every file the manifest vouches for: result files, then reports.
    pub fn listed_files(&self) -> impl Iterator<Item = (&String, &String)> {
        self.files.iter().chain(self.reports.iter().flatten())
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DatasetRecord {
    pub name: String,
    pub path: String,
    /// SHA-256 over the block hashes of exactly the columns the sweep read
    /// (`DatasetReader::content_hash`): every block read was verified against
    /// those hashes, so this vouches for the values the numbers came from.
    /// (Results of older versions recorded the whole file's hash as
    /// `scores_sha256`; they still parse, and `check` reports their config
    /// hash as stale.)
    #[serde(alias = "scores_sha256")]
    pub content_sha256: String,
    pub prompts: usize,
    pub responses: usize,
    /// Mean generation seconds per response, when the dataset records them
    /// (for the generation-cost table).
    #[serde(default)]
    pub gen_seconds_mean: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TransformRecord {
    pub kind: String,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    pub r_max: f64,
    pub delta_r: f64,
    /// Data-dependent transforms make privacy figures conditional (design §5).
    pub data_dependent: bool,
}
