//! The prepared dataset (design §4): `scores.parquet` + `dataset.yaml`, and
//! its loader into per-prompt contiguous arrays for the engine.

use anyhow::Result;
use polars::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::cols;

pub const SCORES_FILE: &str = "scores.parquet";
pub const DATASET_MANIFEST_FILE: &str = "dataset.yaml";

/// `dataset.yaml`: what the dataset is, where it came from, and summary
/// statistics a user checks before trusting a sweep.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DatasetManifest {
    pub name: String,
    /// Base policy label (e.g. "phi-3-mini-instruct").
    pub policy: Option<String>,
    /// Task label (e.g. "gsm8k").
    pub task: Option<String>,
    pub reward_models: Vec<String>,
    /// `binary` when every `correct` is 0 or 1, else `continuous` (a gold score r* in [0, 1]).
    pub correct_kind: String,
    pub has_gen_seconds: bool,
    pub counts: Counts,
    /// Mean over prompts of each prompt's pool mean of r* (the base the lift is
    /// measured against, design §7), and the pooled mean over all responses.
    pub base_accuracy: BaseAccuracy,
    /// Per reward model statistics of the raw (untransformed) scores.
    pub rewards: BTreeMap<String, RewardStats>,
    /// How the dataset was made: input form, files with sha256, dropped rows.
    pub source: SourceInfo,
    pub privalign_version: String,
    /// Per reward model, the whole-dataset statistics the data-dependent
    /// transforms (minmax, zscore) use — computed once here, so a sweep that
    /// reads a window of prompts (or a shard) transforms bit-exactly as one
    /// that reads everything.
    #[serde(default)]
    pub transform_stats: BTreeMap<String, TransformStats>,
    /// Block layout and the hashes that bind every read to what ingest wrote
    /// ([`super::layout`]); absent in datasets of older versions, which must
    /// be re-ingested.
    #[serde(default)]
    pub integrity: Option<super::layout::Integrity>,
}

/// Whole-dataset statistics of one reward model's raw scores, in the exact
/// arithmetic the transforms use: min and max; mean = Σr/N in row order;
/// population sd = sqrt(Σ(r − mean)²/N), two-pass, in row order.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TransformStats {
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub sd: f64,
}

impl TransformStats {
    pub fn of(raw: &[f32]) -> Self {
        let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
        for &r in raw {
            min = min.min(f64::from(r));
            max = max.max(f64::from(r));
        }
        let n = raw.len() as f64;
        let mean = raw.iter().map(|&r| f64::from(r)).sum::<f64>() / n;
        let var = raw
            .iter()
            .map(|&r| (f64::from(r) - mean).powi(2))
            .sum::<f64>()
            / n;
        Self {
            min,
            max,
            mean,
            sd: var.sqrt(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Counts {
    pub prompts: usize,
    pub responses: usize,
    pub responses_per_prompt_min: usize,
    pub responses_per_prompt_median: f64,
    pub responses_per_prompt_max: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BaseAccuracy {
    pub mean_over_prompts: f64,
    pub pooled: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RewardStats {
    /// Scored responses (after `--drop-unscored`).
    pub count: usize,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// Population standard deviation (divisor N), the scale the `zscore`
    /// transform divides by.
    pub sd: f64,
    /// 0.1% and 99.9% quantiles (nearest-rank), a robust range for `clip` transforms.
    pub q001: f64,
    pub q999: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SourceInfo {
    /// `parquet-pair`, `table` or `nested-jsonl`.
    pub form: String,
    pub files: Vec<SourceFileInfo>,
    /// Responses dropped because some reward model had not scored them (`--drop-unscored`).
    pub dropped_unscored: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SourceFileInfo {
    /// `responses`, `rewards:NAME`, `table` or `nested-jsonl`.
    pub role: String,
    pub path: String,
    pub sha256: String,
}

/// Nearest-rank quantile of `v` (which is reordered).
fn quantile(v: &mut [f64], q: f64) -> f64 {
    let n = v.len();
    let k = ((q * n as f64).ceil() as usize).clamp(1, n) - 1;
    let (_, x, _) = v.select_nth_unstable_by(k, |a, b| a.total_cmp(b));
    *x
}

/// Statistics of one reward model's raw scores.
pub fn reward_stats(values: &[f64]) -> RewardStats {
    let mut v = values.to_vec();
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64).sqrt();
    RewardStats {
        count: v.len(),
        min,
        max,
        mean,
        sd,
        q001: quantile(&mut v, 0.001),
        q999: quantile(&mut v, 0.999),
    }
}

/// Prompt boundaries of a frame sorted by prompt id: `offsets[p]..offsets[p+1]`
/// are prompt p's rows.
pub fn prompt_offsets(prompt_ids: &StringChunked) -> Vec<usize> {
    let mut offsets = vec![0];
    let mut prev: Option<&str> = None;
    for (i, p) in prompt_ids.iter().enumerate() {
        if i > 0 && p != prev {
            offsets.push(i);
        }
        prev = p;
    }
    offsets.push(prompt_ids.len());
    if prompt_ids.is_empty() {
        offsets.truncate(1);
    }
    offsets
}

/// A prepared dataset in memory: one offsets array plus one array per column
/// (design §4: "not a dataframe").
#[derive(Clone, Debug)]
pub struct PreparedDataset {
    pub dir: PathBuf,
    pub manifest: DatasetManifest,
    pub prompt_ids: Vec<String>,
    /// Prompt p's responses are rows `offsets[p]..offsets[p+1]`.
    pub offsets: Vec<usize>,
    pub correct: Vec<f32>,
    /// One array per reward model, in manifest order.
    pub rewards: Vec<(String, Vec<f32>)>,
    pub gen_seconds: Option<Vec<f32>>,
}

/// Read `dir/dataset.yaml` alone (cheap: validation needs only the counts
/// and reward-model names).
pub fn load_manifest(dir: &Path) -> Result<DatasetManifest> {
    let manifest_path = dir.join(DATASET_MANIFEST_FILE);
    let text = std::fs::read_to_string(&manifest_path).map_err(|e| {
        crate::error::input_error(format!(
            "{}: cannot read ({e}); is {} a dataset prepared by `privalign ingest`?",
            manifest_path.display(),
            dir.display()
        ))
    })?;
    yaml_serde::from_str(&text).map_err(|e| {
        crate::error::input_error(format!(
            "{}: not a valid dataset manifest ({e}); re-run `privalign ingest`",
            manifest_path.display()
        ))
    })
}

impl PreparedDataset {
    pub fn prompts(&self) -> usize {
        self.prompt_ids.len()
    }

    pub fn reward(&self, name: &str) -> Option<&[f32]> {
        self.rewards
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
    }

    /// Load every column of `dir` through the verifying reader
    /// ([`super::reader::DatasetReader`]).
    pub fn load(dir: &Path) -> Result<Self> {
        let reader = super::reader::DatasetReader::open(dir)?;
        let manifest = reader.manifest.clone();
        let mut names: Vec<&str> = vec![cols::CORRECT];
        names.extend(manifest.reward_models.iter().map(String::as_str));
        if manifest.has_gen_seconds {
            names.push(cols::GEN_SECONDS);
        }
        let mut w = reader.read_all(&names)?;
        let rewards = manifest
            .reward_models
            .iter()
            .map(|m| (m.clone(), w.columns.remove(m.as_str()).unwrap_or_default()))
            .collect();
        Ok(Self {
            dir: dir.to_path_buf(),
            correct: w.columns.remove(cols::CORRECT).unwrap_or_default(),
            gen_seconds: if manifest.has_gen_seconds {
                w.columns.remove(cols::GEN_SECONDS)
            } else {
                None
            },
            manifest,
            prompt_ids: reader.prompt_ids.clone(),
            offsets: reader.offsets.clone(),
            rewards,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles_match_brute_force() {
        let v: Vec<f64> = (1..=2000).map(|i| i as f64).collect();
        let s = reward_stats(&v);
        assert_eq!(s.q001, 2.0); // ceil(0.001 * 2000) = 2nd smallest
        assert_eq!(s.q999, 1998.0);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 2000.0);
        assert!((s.mean - 1000.5).abs() < 1e-12);
        assert_eq!(s.count, 2000);
        // Population sd of 1..=N is sqrt((N² − 1)/12).
        assert!((s.sd - ((2000.0f64 * 2000.0 - 1.0) / 12.0).sqrt()).abs() < 1e-9);
    }

    #[test]
    fn offsets_split_runs() {
        let ca = StringChunked::from_slice("p".into(), &["a", "a", "b", "c", "c", "c"]);
        assert_eq!(prompt_offsets(&ca), vec![0, 2, 3, 6]);
    }
}
