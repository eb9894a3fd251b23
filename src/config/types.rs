//! The experiment config's types (design §9), deserialised with serde.
//!
//! Every struct denies unknown keys, so a misspelt key is an error naming its
//! path rather than a silently ignored setting. Defaults are the design's:
//! 50 replicates, seed 0, bootstrap with replacement, the exact conditional
//! estimator, λ̃ integrated by 16-node Gauss–Hermite quadrature, δ = 1e-2,
//! the sound analytic-Gaussian ε₁.

use serde::{Deserialize, Serialize};

use crate::select::algorithm::split_sigma;
use std::collections::BTreeMap;

use super::grid::NGrid;

/// One experiment (one YAML file).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExperimentConfig {
    /// Experiment name; the default results directory is `results/<name>`.
    /// Defaults to the config file's stem.
    #[serde(default)]
    pub name: Option<String>,
    /// Free text, copied to the manifest.
    #[serde(default)]
    pub description: Option<String>,
    /// Prepared datasets (`privalign ingest` outputs).
    pub datasets: Vec<DatasetSpec>,
    /// Reward models by name, each with its transform and privacy parameters
    /// (design §5). Every dataset must have every reward model named here.
    pub reward_models: BTreeMap<String, RewardModelSpec>,
    /// The n grid: `[2, 8, 64]` or `{log2: [1, 12]}`. Required when any
    /// algorithm is enabled; a config with only an `fsrc:` section needs none.
    #[serde(default)]
    pub n: Option<NGrid>,
    #[serde(default = "default_replicates")]
    pub replicates: usize,
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub sampling: SamplingSpec,
    #[serde(default)]
    pub estimator: EstimatorSpec,
    /// Gauss–Hermite nodes integrating PrivITP's λ̃ noise under the
    /// conditional estimator; 0 draws one λ̃ per replicate instead.
    #[serde(default = "default_lambda_nodes")]
    pub lambda_nodes: usize,
    #[serde(default)]
    pub privacy: PrivacySpec,
    /// The swept algorithms; absent or empty is allowed only beside an
    /// `fsrc:` section (run with `privalign fsrc`).
    #[serde(default)]
    pub algorithms: AlgorithmsSpec,
    #[serde(default)]
    pub fsrc: Option<FsrcSpec>,
    #[serde(default)]
    pub reports: ReportsSpec,
    /// `reference-scripts` sets every convention of the paper's reference
    /// Python scripts at once (see [`ConventionSpec`]); absent = the paper's
    /// algorithm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub convention: Option<ConventionSpec>,
}

/// A named set of conventions (`select::reference_scripts`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ConventionSpec {
    /// The paper's Algorithm 2 (the default; sets nothing).
    Paper,
    /// The reference scripts': `sampling: without_replacement`; ITP and PrivITP
    /// `batches: shared`, `envelope: batch_max`, `fallback: dataset_base`;
    /// PrivITP `acceptance: noise_averaged` (150 draws); every reward model's
    /// transform `standardize`. Applied before validation, overriding those keys.
    ReferenceScripts,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// ITP/PrivITP's rejection envelope M.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EnvelopeSpec {
    /// The paper's M, fixed from R_max (and σ_Z·L) before Phase 2.
    #[default]
    Paper,
    /// The realised maximum over the walked batch (the reference scripts').
    BatchMax,
}

/// What a fully rejected Phase 2 is credited with.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FallbackSpec {
    /// A fresh draw from the prompt's pool (the paper's).
    #[default]
    Pool,
    /// The base policy over the whole dataset (the reference scripts').
    DatasetBase,
}

/// How PrivITP's Phase-2 noise enters the selection law.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum AcceptanceSpec {
    /// The algorithm's law.
    #[default]
    Exact,
    /// Acceptance averaged over noise draws before the sequential product
    /// (the reference scripts'; biased).
    NoiseAveraged,
}

fn default_noise_draws() -> usize {
    crate::select::reference_scripts::DEFAULT_NOISE_DRAWS
}

fn is_default_noise_draws(v: &usize) -> bool {
    *v == default_noise_draws()
}

fn default_replicates() -> usize {
    50
}

fn default_lambda_nodes() -> usize {
    16
}

/// A prepared dataset. A relative `path` is resolved against the directory
/// of the config file, so a config runs the same from any working directory.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    pub path: String,
    /// Name in the results; defaults to the dataset's own name (dataset.yaml).
    #[serde(default)]
    pub name: Option<String>,
}

/// How raw scores map to [0, r_max] (design §5), and the sensitivity.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RewardModelSpec {
    #[serde(default)]
    pub transform: TransformSpec,
    /// Sensitivity Δ_r; defaults to r_max (the assumption-free bound).
    #[serde(default)]
    pub delta_r: Option<f64>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TransformSpec {
    #[serde(default)]
    pub kind: TransformKind,
    #[serde(default)]
    pub lo: Option<f64>,
    #[serde(default)]
    pub hi: Option<f64>,
    #[serde(default = "default_r_max")]
    pub r_max: f64,
}

impl Default for TransformSpec {
    fn default() -> Self {
        Self {
            kind: TransformKind::default(),
            lo: None,
            hi: None,
            r_max: default_r_max(),
        }
    }
}

fn default_r_max() -> f64 {
    1.0
}

/// The reward transforms of design §5. See `sweep::transform` for the maps.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TransformKind {
    /// Clip to the configured [lo, hi], map linearly to [0, r_max].
    /// Data-independent: what a private deployment needs.
    Clip,
    /// The dataset's own min and max map to 0 and r_max (data-dependent).
    #[default]
    Minmax,
    /// r_max · logistic(raw): data-independent, no bounds.
    Sigmoid,
    /// Standardise by the dataset's mean and sd, clip to [lo, hi] (default
    /// [−3, 3]) in sd units, map to [0, r_max] (data-dependent).
    Zscore,
    /// (raw − mean)/sd with the dataset's mean and population sd, unclipped
    /// and unmapped (the reference scripts'; data-dependent, r̂ unbounded, so
    /// the paper's envelope and every ε lose their meaning).
    Standardize,
    /// Raw scores used as they are; they must already lie in [0, r_max].
    None,
}

impl TransformKind {
    /// Every kind (the test below keeps [`Self::name`] equal to serde's).
    pub const ALL: [TransformKind; 6] = [
        TransformKind::Clip,
        TransformKind::Minmax,
        TransformKind::Sigmoid,
        TransformKind::Zscore,
        TransformKind::Standardize,
        TransformKind::None,
    ];

    /// The config spelling (`transform: {kind: …}`), also what manifests
    /// record: a fixed string, never Debug text, so renaming a variant cannot
    /// change a file.
    pub const fn name(self) -> &'static str {
        match self {
            TransformKind::Clip => "clip",
            TransformKind::Minmax => "minmax",
            TransformKind::Sigmoid => "sigmoid",
            TransformKind::Zscore => "zscore",
            TransformKind::Standardize => "standardize",
            TransformKind::None => "none",
        }
    }

    /// Whether the transform is computed from the data, which makes any
    /// privacy claim conditional on it (design §5).
    pub fn data_dependent(self) -> bool {
        matches!(
            self,
            TransformKind::Minmax | TransformKind::Zscore | TransformKind::Standardize
        )
    }
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SamplingSpec {
    #[default]
    WithReplacement,
    WithoutReplacement,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EstimatorSpec {
    #[default]
    Conditional,
    Sampled,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PrivacySpec {
    /// δ of PrivITP Phase 1's (ε, δ) guarantee.
    #[serde(default = "default_delta")]
    pub delta: f64,
    /// Compose with the paper's classical ε₁ instead of the sound analytic one.
    #[serde(default)]
    pub paper_eps1: bool,
}

impl Default for PrivacySpec {
    fn default() -> Self {
        Self {
            delta: default_delta(),
            paper_eps1: false,
        }
    }
}

fn default_delta() -> f64 {
    1e-2
}

/// The algorithms and their sweeps. An absent key means "not run".
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AlgorithmsSpec {
    #[serde(default)]
    pub bon: Option<BonSpec>,
    #[serde(default)]
    pub privbon: Option<SigmaSweep>,
    #[serde(default)]
    pub privbon_gauss: Option<SigmaSweep>,
    #[serde(default)]
    pub itp: Option<ItpSpec>,
    #[serde(default)]
    pub privitp: Option<PrivItpSpec>,
}

/// BoN has no parameters: `bon: {}`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BonSpec {}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SigmaSweep {
    pub sigma: Vec<f64>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BatchesSpec {
    #[default]
    Fresh,
    Shared,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ItpSpec {
    pub beta: Vec<f64>,
    #[serde(default)]
    pub batches: BatchesSpec,
    #[serde(default, skip_serializing_if = "is_default")]
    pub envelope: EnvelopeSpec,
    #[serde(default, skip_serializing_if = "is_default")]
    pub fallback: FallbackSpec,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PrivItpSpec {
    /// Total noise σ, split by `split` (required unless `split` gives σ_X
    /// and σ_Z explicitly).
    #[serde(default)]
    pub sigma: Option<Vec<f64>>,
    pub beta: Vec<f64>,
    #[serde(default)]
    pub split: SplitSpec,
    /// Truncation parameter L of M = (R_max + σ_Z·L − λ̃)/β.
    #[serde(default = "default_l", rename = "L")]
    pub l: f64,
    /// Clamp λ̃ to [lo, hi] (post-processing); none by default in sweeps.
    #[serde(default)]
    pub clamp: Option<[f64; 2]>,
    #[serde(default)]
    pub batches: BatchesSpec,
    #[serde(default, skip_serializing_if = "is_default")]
    pub envelope: EnvelopeSpec,
    #[serde(default, skip_serializing_if = "is_default")]
    pub fallback: FallbackSpec,
    #[serde(default, skip_serializing_if = "is_default")]
    pub acceptance: AcceptanceSpec,
    /// Noise draws S of the Monte Carlo laws (batch envelope or
    /// `noise_averaged`).
    #[serde(
        default = "default_noise_draws",
        skip_serializing_if = "is_default_noise_draws"
    )]
    pub noise_draws: usize,
}

fn default_l() -> f64 {
    4.0
}

/// How PrivITP's total σ is split between Phase 1 (σ_X) and Phase 2 (σ_Z):
/// `split: half` or `split: {sigma_x: 0.3, sigma_z: 0.2}`.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum SplitSpec {
    /// σ_X = σ_Z = σ/2 (the paper's choice).
    #[default]
    Half,
    /// One explicit pair; then `sigma` must be absent.
    Explicit { sigma_x: f64, sigma_z: f64 },
}

impl SplitSpec {
    /// PrivITP's (σ_X, σ_Z) pairs: the explicit pair, or each total σ split
    /// by [`split_sigma`] (none without a `sigma` list).
    pub fn pairs(&self, sigma: Option<&[f64]>) -> Vec<(f64, f64)> {
        match (self, sigma) {
            (SplitSpec::Explicit { sigma_x, sigma_z }, _) => vec![(*sigma_x, *sigma_z)],
            (SplitSpec::Half, Some(s)) => s.iter().map(|&s| split_sigma(s)).collect(),
            (SplitSpec::Half, None) => Vec::new(),
        }
    }
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct SplitPair {
    sigma_x: f64,
    sigma_z: f64,
}

impl<'de> Deserialize<'de> for SplitSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let v = yaml_serde::Value::deserialize(d)?;
        if v.as_str() == Some("half") {
            return Ok(SplitSpec::Half);
        }
        match yaml_serde::from_value::<SplitPair>(v) {
            Ok(p) => Ok(SplitSpec::Explicit {
                sigma_x: p.sigma_x,
                sigma_z: p.sigma_z,
            }),
            Err(e) => Err(D::Error::custom(format!(
                "expected `half` or {{sigma_x: <number>, sigma_z: <number>}} ({e})"
            ))),
        }
    }
}

impl Serialize for SplitSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SplitSpec::Half => s.serialize_str("half"),
            SplitSpec::Explicit { sigma_x, sigma_z } => SplitPair {
                sigma_x: *sigma_x,
                sigma_z: *sigma_z,
            }
            .serialize(s),
        }
    }
}

/// The multi-query FSRC experiment (paper `alg:privitp_fsrc`): every
/// (reward model, σ) runs `seeds` independent prompt streams of PrivITP
/// queries until the budget is spent.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FsrcSpec {
    /// Total privacy budget ε_total.
    pub eps_total: f64,
    /// Candidates per query.
    pub n: usize,
    /// PrivITP's total σ values, split by `split` (required unless `split`
    /// gives σ_X and σ_Z explicitly).
    #[serde(default)]
    pub sigma: Option<Vec<f64>>,
    /// `half` (σ_X = σ_Z = σ/2, the paper's) or one explicit
    /// `{sigma_x, sigma_z}` (then `sigma` must be absent).
    #[serde(default)]
    pub split: SplitSpec,
    pub beta: f64,
    #[serde(default = "default_l", rename = "L")]
    pub l: f64,
    /// λ̃ clamp; default [0, r_max], which makes ε_max finite.
    #[serde(default)]
    pub clamp: Option<[f64; 2]>,
    /// Independent runs per (reward model, σ), for mean ± SE. Run k's
    /// random streams derive from the top-level `seed`, the dataset, the
    /// reward model and k, so runs are reproducible and independent.
    #[serde(default = "default_fsrc_seeds")]
    pub seeds: usize,
    /// How each query's candidates are drawn; default the top-level `sampling`.
    /// `without_replacement` needs `n` ≤ the smallest pool.
    #[serde(default)]
    pub sampling: Option<SamplingSpec>,
    /// Reward models to run; default: all of the experiment's.
    #[serde(default)]
    pub reward_models: Option<Vec<String>>,
}

fn default_fsrc_seeds() -> usize {
    5
}

impl FsrcSpec {
    /// The (σ_X, σ_Z) pairs of the section, in `sigma` order.
    pub fn sigma_pairs(&self) -> Vec<(f64, f64)> {
        self.split.pairs(self.sigma.as_deref())
    }

    /// The sampling FSRC's queries use.
    pub fn sampling_or(&self, top: SamplingSpec) -> SamplingSpec {
        self.sampling.unwrap_or(top)
    }
}

/// What `privalign reproduce` renders after the sweep.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReportsSpec {
    #[serde(default)]
    pub tables: Vec<TableSpec>,
    #[serde(default)]
    pub plots: Vec<PlotSpec>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum TableKind {
    Lift,
    Winrate,
    Budget,
    Fsrc,
    Generation,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    pub kind: TableKind,
    /// The n the table reports; default the grid's largest.
    #[serde(default)]
    pub n: Option<usize>,
    /// The σ shown for the private algorithms when the sweep has several.
    #[serde(default)]
    pub sigma: Option<f64>,
    /// The β shown for ITP/PrivITP when the sweep has several.
    #[serde(default)]
    pub beta: Option<f64>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum PlotKind {
    Scaling,
    Sigma,
    Beta,
    PrivacyUtility,
    Fsrc,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlotSpec {
    pub kind: PlotKind,
    #[serde(default)]
    pub n: Option<usize>,
    #[serde(default)]
    pub sigma: Option<f64>,
    #[serde(default)]
    pub beta: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::algorithm::AlgorithmKind;

    #[test]
    fn transform_names_are_the_config_spellings() {
        for k in TransformKind::ALL {
            assert_eq!(yaml_serde::to_string(&k).unwrap().trim(), k.name());
        }
    }

    /// A config's `algorithms:` keys are [`AlgorithmKind::name`]s.
    #[test]
    fn algorithm_keys_are_the_kind_names() {
        let v = yaml_serde::to_value(AlgorithmsSpec::default()).unwrap();
        let mut keys: Vec<String> = v
            .as_mapping()
            .unwrap()
            .keys()
            .map(|k| k.as_str().unwrap().to_string())
            .collect();
        keys.sort();
        let mut names: Vec<String> = AlgorithmKind::ALL
            .iter()
            .map(|k| k.name().to_string())
            .collect();
        names.sort();
        assert_eq!(keys, names);
    }
}
