//! A validated config resolved against the prepared datasets' manifests:
//! dataset paths made absolute, names fixed, every reward model checked to
//! exist in every dataset, the n grid checked against the pool sizes, and the
//! sweeps expanded into the engine's algorithm list.

use anyhow::Result;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::plan::{EngineConfig, Estimator, LambdaNoise, Sampling};
use super::types::*;
use crate::data::prepared::{DatasetManifest, load_manifest};
use crate::error::input_error;
use crate::privacy::accountant::PrivacyParams;
use crate::select::algorithm::{Algorithm, Batches, PrivItpParams};
use crate::select::pool::Values;
use crate::select::reference_scripts::{
    Acceptance, Conventions, Envelope, Fallback, ItpConventions, PrivItpConventions,
};

/// A dataset of the experiment.
#[derive(Clone, Debug)]
pub struct ResolvedDataset {
    /// Name in the results.
    pub name: String,
    pub dir: PathBuf,
    pub manifest: DatasetManifest,
}

/// A reward model with its transform and privacy parameters.
#[derive(Clone, Debug)]
pub struct RewardModel {
    pub name: String,
    pub transform: TransformSpec,
    pub privacy: PrivacyParams,
}

/// Everything a sweep needs, validated.
#[derive(Clone, Debug)]
pub struct Experiment {
    /// The config after overrides, with defaults filled in.
    pub config: ExperimentConfig,
    pub config_path: PathBuf,
    pub name: String,
    pub datasets: Vec<ResolvedDataset>,
    pub reward_models: Vec<RewardModel>,
    pub n_values: Vec<usize>,
    pub algorithms: Vec<Algorithm>,
}

fn batches(b: BatchesSpec) -> Batches {
    match b {
        BatchesSpec::Fresh => Batches::Fresh,
        BatchesSpec::Shared => Batches::Shared,
    }
}

/// The algorithm instances of the sweeps, in a fixed order: BoN, PrivBoN by
/// σ, Gaussian PrivBoN by σ, ITP by β, PrivITP by σ then β.
pub fn expand_algorithms(a: &AlgorithmsSpec) -> Vec<Algorithm> {
    let mut out = Vec::new();
    if a.bon.is_some() {
        out.push(Algorithm::Bon);
    }
    if let Some(s) = &a.privbon {
        out.extend(s.sigma.iter().map(|&sigma| Algorithm::PrivBon { sigma }));
    }
    if let Some(s) = &a.privbon_gauss {
        out.extend(
            s.sigma
                .iter()
                .map(|&sigma| Algorithm::PrivBonGauss { sigma }),
        );
    }
    if let Some(s) = &a.itp {
        out.extend(s.beta.iter().map(|&beta| Algorithm::Itp {
            beta,
            batches: batches(s.batches),
        }));
    }
    if let Some(p) = &a.privitp {
        let pairs = p.split.pairs(p.sigma.as_deref());
        for (sigma_x, sigma_z) in pairs {
            for &beta in &p.beta {
                out.push(Algorithm::PrivItp(PrivItpParams {
                    sigma_x,
                    sigma_z,
                    beta,
                    l: p.l,
                    clamp: p.clamp.map(|[lo, hi]| (lo, hi)),
                    batches: batches(p.batches),
                }));
            }
        }
    }
    out
}

/// The engine's form of the config's convention keys.
pub fn conventions(a: &AlgorithmsSpec) -> Conventions {
    let env = |e: EnvelopeSpec| match e {
        EnvelopeSpec::Paper => Envelope::Paper,
        EnvelopeSpec::BatchMax => Envelope::BatchMax,
    };
    let fb = |f: FallbackSpec| match f {
        FallbackSpec::Pool => Fallback::Pool,
        FallbackSpec::DatasetBase => Fallback::DatasetBase,
    };
    let mut c = Conventions::default();
    if let Some(i) = &a.itp {
        c.itp = ItpConventions {
            envelope: env(i.envelope),
            fallback: fb(i.fallback),
        };
    }
    if let Some(p) = &a.privitp {
        c.privitp = PrivItpConventions {
            envelope: env(p.envelope),
            fallback: fb(p.fallback),
            acceptance: match p.acceptance {
                AcceptanceSpec::Exact => Acceptance::Exact,
                AcceptanceSpec::NoiseAveraged => Acceptance::NoiseAveraged,
            },
            draws: p.noise_draws,
        };
    }
    c
}

impl Experiment {
    /// Resolve `config` (loaded from `config_path`) against its datasets.
    pub fn resolve(config: ExperimentConfig, config_path: &Path) -> Result<Self> {
        let base = config_path.parent().unwrap_or(Path::new("."));
        let name = match &config.name {
            Some(n) => n.clone(),
            None => config_path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "experiment".into()),
        };
        let mut datasets = Vec::new();
        let mut names = BTreeSet::new();
        for (i, d) in config.datasets.iter().enumerate() {
            let dir = base.join(&d.path);
            let manifest = load_manifest(&dir).map_err(|e| {
                input_error(format!(
                    "datasets[{i}].path: `{}` (resolved against the config's directory to {}) is not a prepared dataset: {e:#}; run `privalign ingest … --out {}` first or fix the path",
                    d.path,
                    dir.display(),
                    dir.display()
                ))
            })?;
            let scores = dir.join(crate::data::prepared::SCORES_FILE);
            if !scores.is_file() {
                return Err(input_error(format!(
                    "datasets[{i}].path: {} is missing; the prepared dataset {} is incomplete — re-run `privalign ingest … --out {} --force`",
                    scores.display(),
                    dir.display(),
                    dir.display()
                )));
            }
            let ds_name = d.name.clone().unwrap_or_else(|| manifest.name.clone());
            if !names.insert(ds_name.clone()) {
                return Err(input_error(format!(
                    "datasets[{i}]: a second dataset named `{ds_name}`; give each a distinct `name:`"
                )));
            }
            for rm in config.reward_models.keys() {
                if !manifest.reward_models.contains(rm) {
                    return Err(input_error(format!(
                        "reward_models.{rm}: dataset `{ds_name}` ({}) has no reward model `{rm}`; it has {} — fix the name or ingest scores for `{rm}`",
                        dir.display(),
                        manifest.reward_models.join(", ")
                    )));
                }
            }
            datasets.push(ResolvedDataset {
                name: ds_name,
                dir,
                manifest,
            });
        }
        let n_values = match &config.n {
            Some(g) => g.values().map_err(|m| input_error(format!("n: {m}")))?,
            None => Vec::new(),
        };
        let mut checks: Vec<(&str, usize)> = Vec::new();
        if config.sampling == SamplingSpec::WithoutReplacement
            && let Some(&n) = n_values.last()
        {
            checks.push(("n", n));
        }
        if let Some(f) = &config.fsrc
            && f.sampling_or(config.sampling) == SamplingSpec::WithoutReplacement
        {
            checks.push(("fsrc.n", f.n));
        }
        for (key, n) in checks {
            for d in &datasets {
                let pool = d.manifest.counts.responses_per_prompt_min;
                if n > pool {
                    return Err(input_error(format!(
                        "{key}: n = {n} exceeds the smallest pool ({pool} responses for some prompt of dataset `{}`); sampling: without_replacement needs n ≤ N — lower n or use sampling: with_replacement",
                        d.name
                    )));
                }
            }
        }
        let reward_models = config
            .reward_models
            .iter()
            .map(|(name, spec)| {
                let r_max = spec.transform.r_max;
                RewardModel {
                    name: name.clone(),
                    transform: spec.transform.clone(),
                    privacy: PrivacyParams {
                        r_max,
                        delta_r: spec.delta_r.unwrap_or(r_max),
                        delta: config.privacy.delta,
                        paper_eps1: config.privacy.paper_eps1,
                    },
                }
            })
            .collect();
        let algorithms = expand_algorithms(&config.algorithms);
        Ok(Self {
            config,
            config_path: config_path.to_path_buf(),
            name,
            datasets,
            reward_models,
            n_values,
            algorithms,
        })
    }

    /// The engine's configuration for `rm`; `dataset_base` is the dataset-wide
    /// base credit of the reference scripts' `fallback: dataset_base` (unused otherwise).
    pub fn engine_config(&self, rm: &RewardModel, dataset_base: Values) -> EngineConfig {
        let c = &self.config;
        EngineConfig {
            algorithms: self.algorithms.clone(),
            replicates: c.replicates,
            sampling: match c.sampling {
                SamplingSpec::WithReplacement => Sampling::WithReplacement,
                SamplingSpec::WithoutReplacement => Sampling::WithoutReplacement,
            },
            estimator: match c.estimator {
                EstimatorSpec::Conditional => Estimator::Conditional,
                EstimatorSpec::Sampled => Estimator::Sampled,
            },
            lambda_noise: match c.lambda_nodes {
                0 => LambdaNoise::Sampled,
                k => LambdaNoise::Quadrature(k),
            },
            privacy: rm.privacy,
            conventions: conventions(&c.algorithms),
            dataset_base,
        }
    }
}
