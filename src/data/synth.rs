//! `privalign synth`: deterministic synthetic *raw score files* with known
//! ground truth — the same two-kind parquet files a user brings
//! (`responses.parquet` + `rewards_<model>.parquet`), plus `synth.yaml`
//! recording every parameter.
//!
//! Presets (see `data/README.md` for the modelling rationale):
//! * `math` — binary correctness with per-prompt difficulty; four reward
//!   models named after the paper's. All share a per-response style latent; the
//!   two weak ones (oasst, gemma) have a weak correctness signal and score a
//!   small population of "persuasive wrong" responses highly with an
//!   exponential (heavier-than-Gaussian) upper tail, so BoN's accuracy rises
//!   and then falls with n; the strong ones (llama, armo) see correctness
//!   clearly and barely respond to the hack, so BoN keeps improving.
//! * `gaussian` — the model of `thm:gumbel_regret` / `prop:hacking`: within a
//!   prompt r* is fixed and r̂ = r* + N(0, σ_r²). Model names are `gauss<σ_r>`.
//! * `open-ended` — a continuous gold score r* ∈ [0, 1] (AlpacaEval protocol)
//!   driven by a quality latent, with a length-biased hack for the weak models.
//!
//! Determinism: prompt p's responses come from a PCG64 stream seeded by
//! (seed, preset) with stream id p, so output is identical for any thread count.

use anyhow::{Context, Result};
use polars::prelude::*;
use rand::RngExt;
use rand_distr::{Exp1, StandardNormal};
use rand_pcg::Pcg64;
use rayon::prelude::*;
use serde::Serialize;
use std::fs::File;
use std::path::{Path, PathBuf};

use super::cols;
use crate::bail_input;
use crate::fsutil::{StagedDir, write_atomic};

/// Which synthetic world to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    Math,
    Gaussian,
    OpenEnded,
}

/// Size presets: `demo` is small enough to commit, `paper` matches the paper's
/// scale (1000 prompts × 10,000 responses) for benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Size {
    Demo,
    Paper,
}

impl Size {
    pub fn dims(self) -> (usize, usize) {
        match self {
            Size::Demo => (100, 1000),
            Size::Paper => (1000, 10_000),
        }
    }
}

#[derive(Clone, Debug)]
pub struct SynthOptions {
    pub preset: Preset,
    pub prompts: usize,
    pub responses: usize,
    /// `None` = the preset's default models.
    pub reward_models: Option<Vec<String>>,
    pub seed: u64,
    pub out: PathBuf,
    pub force: bool,
}

/// How one reward model of the `math`/`open-ended` presets scores a response:
/// `scale · (signal·truth + style_weight·style + noise·ε + hack·(gain + tail·η)) + offset`,
/// where `hack` marks the persuasive-wrong population and η ~ Exp(1).
#[derive(Clone, Debug, Serialize)]
pub struct RewardProfile {
    pub name: String,
    pub signal: f64,
    pub style_weight: f64,
    pub noise: f64,
    pub hack_gain: f64,
    pub hack_tail: f64,
    /// Raw output units differ per model, as with real reward models.
    pub scale: f64,
    pub offset: f64,
}

fn profile(
    name: &str,
    signal: f64,
    hack_gain: f64,
    hack_tail: f64,
    scale: f64,
    offset: f64,
) -> RewardProfile {
    RewardProfile {
        name: name.into(),
        signal,
        style_weight: 0.5,
        noise: 0.9,
        hack_gain,
        hack_tail,
        scale,
        offset,
    }
}

/// The four named reward models: two weak and hackable, two strong.
pub fn named_profiles() -> Vec<RewardProfile> {
    vec![
        profile("oasst", 0.9, 0.6, 1.3, 1.5, -1.0),
        profile("gemma", 1.1, 0.4, 1.1, 4.0, 2.0),
        profile("llama", 2.4, 0.0, 0.25, 1.0, 0.0),
        profile("armo", 2.8, 0.0, 0.2, 0.05, 0.1),
    ]
}

/// Fraction of wrong (math) or all (open-ended) responses in the persuasive
/// "hacker" population.
pub const HACK_FRACTION: f64 = 0.05;

/// The `gaussian` preset's σ_r from a model name `gauss<σ_r>`.
pub fn gaussian_sigma(name: &str) -> Result<f64> {
    let s = name
        .strip_prefix("gauss")
        .and_then(|s| s.parse::<f64>().ok());
    match s {
        Some(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => bail_input!(
            "--reward-models: {name:?} is not a gaussian-preset model; name them gauss<σ_r> with σ_r > 0, e.g. gauss0.5"
        ),
    }
}

/// Everything recorded in `synth.yaml`.
#[derive(Debug, Serialize)]
struct SynthRecord<'a> {
    preset: Preset,
    prompts: usize,
    responses_per_prompt: usize,
    seed: u64,
    reward_models: &'a [String],
    files: Vec<String>,
    hack_fraction: Option<f64>,
    profiles: Option<Vec<RewardProfile>>,
    gaussian_sigma_r: Option<Vec<(String, f64)>>,
    privalign_version: &'static str,
    ingest_command: String,
}

/// One prompt's generated columns.
struct PromptBlock {
    correct_bool: Vec<bool>,
    correct: Vec<f32>,
    gen_seconds: Vec<f32>,
    rewards: Vec<Vec<f32>>,
}

fn normal(rng: &mut Pcg64) -> f64 {
    rng.sample(StandardNormal)
}

fn logistic(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Amortised per-response generation time in a batched run: tokens × 7.5 µs,
/// which puts n = 256 at ~0.4 s per query, the order of the paper's
/// `tab:wall_clock`. Wrong and hacking responses run longer.
fn gen_time(rng: &mut Pcg64, length_factor: f64) -> f32 {
    let tokens = (220.0f64.ln() + 0.45 * normal(rng)).exp() * length_factor;
    (tokens * 7.5e-6) as f32
}

fn generate_math(rng: &mut Pcg64, n: usize, models: &[RewardProfile]) -> PromptBlock {
    // Per-prompt difficulty: base accuracy spread over (0, 1), some near 0 or 1.
    let acc = logistic(0.3 + 1.8 * normal(rng));
    let offsets: Vec<f64> = models.iter().map(|_| 0.5 * normal(rng)).collect();
    let mut b = PromptBlock {
        correct_bool: Vec::with_capacity(n),
        correct: Vec::with_capacity(n),
        gen_seconds: Vec::with_capacity(n),
        rewards: vec![Vec::with_capacity(n); models.len()],
    };
    for _ in 0..n {
        let c = rng.random::<f64>() < acc;
        let hack = !c && rng.random::<f64>() < HACK_FRACTION;
        let eta: f64 = rng.sample(Exp1);
        let style = normal(rng);
        b.correct_bool.push(c);
        b.correct.push(if c { 1.0 } else { 0.0 });
        let len = if hack {
            1.6
        } else if c {
            1.0
        } else {
            1.25
        };
        b.gen_seconds.push(gen_time(rng, len));
        for (m, p) in models.iter().enumerate() {
            let mut r =
                p.signal * f64::from(u8::from(c)) + p.style_weight * style + p.noise * normal(rng);
            if hack {
                r += p.hack_gain + p.hack_tail * eta;
            }
            b.rewards[m].push((p.scale * (r + offsets[m]) + p.offset) as f32);
        }
    }
    b
}

fn generate_open_ended(rng: &mut Pcg64, n: usize, models: &[RewardProfile]) -> PromptBlock {
    let prompt_level = 0.8 * normal(rng);
    let offsets: Vec<f64> = models.iter().map(|_| 0.5 * normal(rng)).collect();
    let mut b = PromptBlock {
        correct_bool: Vec::new(),
        correct: Vec::with_capacity(n),
        gen_seconds: Vec::with_capacity(n),
        rewards: vec![Vec::with_capacity(n); models.len()],
    };
    for _ in 0..n {
        let quality = normal(rng);
        // Length: the weak models' hack. Long responses are slightly worse for the gold judge.
        let length = normal(rng);
        let hack = rng.random::<f64>() < HACK_FRACTION;
        let eta: f64 = rng.sample(Exp1);
        let gold =
            logistic(prompt_level + 1.2 * quality - 0.2 * length - if hack { 0.8 } else { 0.0 });
        b.correct.push(gold as f32);
        b.gen_seconds.push(gen_time(
            rng,
            (0.35 * length).exp() * if hack { 1.6 } else { 1.0 },
        ));
        let style = normal(rng);
        for (m, p) in models.iter().enumerate() {
            let length_bias = p.hack_gain * length;
            let mut r =
                p.signal * quality + length_bias + p.style_weight * style + p.noise * normal(rng);
            if hack {
                r += p.hack_gain + p.hack_tail * eta;
            }
            b.rewards[m].push((p.scale * (r + offsets[m]) + p.offset) as f32);
        }
    }
    b
}

fn generate_gaussian(rng: &mut Pcg64, n: usize, sigmas: &[f64]) -> PromptBlock {
    let rstar = 0.1 + 0.8 * rng.random::<f64>();
    let mut b = PromptBlock {
        correct_bool: Vec::new(),
        correct: vec![rstar as f32; n],
        gen_seconds: Vec::with_capacity(n),
        rewards: vec![Vec::with_capacity(n); sigmas.len()],
    };
    for _ in 0..n {
        b.gen_seconds.push(gen_time(rng, 1.0));
        for (m, s) in sigmas.iter().enumerate() {
            b.rewards[m].push((rstar + s * normal(rng)) as f32);
        }
    }
    b
}

/// The PCG64 for prompt `p`: state from (seed, preset), stream = p.
fn prompt_rng(seed: u64, preset: Preset, p: usize) -> Pcg64 {
    let tag: u128 = match preset {
        Preset::Math => 0x6d61_7468,
        Preset::Gaussian => 0x6761_7573,
        Preset::OpenEnded => 0x6f70_656e,
    };
    Pcg64::new(
        (u128::from(seed) << 32) ^ tag ^ 0xcafe_f00d_d15e_a5e5_0000_0000_0000_0000,
        p as u128,
    )
}

/// Output file name of a reward model's scores.
pub fn reward_file_name(model: &str) -> String {
    format!("rewards_{model}.parquet")
}

/// Generate and write the raw files. Returns the output directory.
pub fn synth(opts: &SynthOptions) -> Result<PathBuf> {
    if opts.prompts < 1 {
        bail_input!("--prompts must be at least 1");
    }
    if opts.responses < 2 {
        bail_input!("--responses must be at least 2 (a selection needs candidates)");
    }
    let names: Vec<String> = match (&opts.reward_models, opts.preset) {
        (Some(v), _) => v.clone(),
        (None, Preset::Gaussian) => vec!["gauss0.1".into(), "gauss0.3".into(), "gauss1".into()],
        (None, _) => named_profiles().into_iter().map(|p| p.name).collect(),
    };
    if names.is_empty() {
        bail_input!("--reward-models is empty; name at least one reward model");
    }
    for (i, n) in names.iter().enumerate() {
        super::check_reward_model_name(n)?;
        if names[..i].contains(n) {
            bail_input!("--reward-models names {n:?} twice");
        }
    }
    let (profiles, sigmas) = match opts.preset {
        Preset::Gaussian => (
            None,
            Some(
                names
                    .iter()
                    .map(|n| gaussian_sigma(n))
                    .collect::<Result<Vec<_>>>()?,
            ),
        ),
        _ => {
            let all = named_profiles();
            let chosen = names
                .iter()
                .map(|n| {
                    all.iter().find(|p| &p.name == n).cloned().ok_or_else(|| {
                        crate::error::input_error(format!(
                            "--reward-models: unknown model {n:?} for this preset; choose from oasst, gemma, llama, armo"
                        ))
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            (Some(chosen), None)
        }
    };
    let stage = StagedDir::new(&opts.out, opts.force)?;

    let blocks: Vec<PromptBlock> = (0..opts.prompts)
        .into_par_iter()
        .map(|p| {
            let mut rng = prompt_rng(opts.seed, opts.preset, p);
            match opts.preset {
                Preset::Math => {
                    generate_math(&mut rng, opts.responses, profiles.as_deref().unwrap_or(&[]))
                }
                Preset::OpenEnded => generate_open_ended(
                    &mut rng,
                    opts.responses,
                    profiles.as_deref().unwrap_or(&[]),
                ),
                Preset::Gaussian => {
                    generate_gaussian(&mut rng, opts.responses, sigmas.as_deref().unwrap_or(&[]))
                }
            }
        })
        .collect();

    let width = (opts.prompts.max(2) - 1).to_string().len().max(4);
    let total = opts.prompts * opts.responses;
    let prompt_ids: Vec<String> = (0..opts.prompts).map(|p| format!("p{p:0width$}")).collect();
    let pid_col = || -> Column {
        let mut b = StringChunkedBuilder::new(cols::PROMPT_ID.into(), total);
        for id in &prompt_ids {
            for _ in 0..opts.responses {
                b.append_value(id);
            }
        }
        b.finish().into_column()
    };
    let rid_col = || -> Column {
        let ids: Vec<i64> = (0..opts.prompts)
            .flat_map(|_| 0..opts.responses as i64)
            .collect();
        Column::new(cols::RESPONSE_ID.into(), ids)
    };
    let correct = if opts.preset == Preset::Math {
        let v: Vec<bool> = blocks
            .iter()
            .flat_map(|b| b.correct_bool.iter().copied())
            .collect();
        Column::new(cols::CORRECT.into(), v)
    } else {
        let v: Vec<f32> = blocks
            .iter()
            .flat_map(|b| b.correct.iter().copied())
            .collect();
        Column::new(cols::CORRECT.into(), v)
    };
    let gen_secs: Vec<f32> = blocks
        .iter()
        .flat_map(|b| b.gen_seconds.iter().copied())
        .collect();
    let mut responses = DataFrame::new_infer_height(vec![
        pid_col(),
        rid_col(),
        correct,
        Column::new(cols::GEN_SECONDS.into(), gen_secs),
    ])?;
    write_parquet(&stage.path().join("responses.parquet"), &mut responses)?;
    drop(responses);
    let mut files = vec!["responses.parquet".to_string()];
    for (m, name) in names.iter().enumerate() {
        let v: Vec<f32> = blocks
            .iter()
            .flat_map(|b| b.rewards[m].iter().copied())
            .collect();
        let mut df = DataFrame::new_infer_height(vec![
            pid_col(),
            rid_col(),
            Column::new(cols::REWARD.into(), v),
        ])?;
        let file = reward_file_name(name);
        write_parquet(&stage.path().join(&file), &mut df)?;
        files.push(file);
    }
    let record = SynthRecord {
        preset: opts.preset,
        prompts: opts.prompts,
        responses_per_prompt: opts.responses,
        seed: opts.seed,
        reward_models: &names,
        files,
        hack_fraction: profiles.as_ref().map(|_| HACK_FRACTION),
        profiles,
        gaussian_sigma_r: sigmas.map(|s| names.iter().cloned().zip(s).collect()),
        privalign_version: env!("CARGO_PKG_VERSION"),
        // DIR rather than the path, so the directory's bytes do not depend on where it was written.
        ingest_command: "privalign ingest --responses DIR/responses.parquet --rewards DIR/rewards_*.parquet --out data/NAME".into(),
    };
    write_atomic(
        &stage.path().join("synth.yaml"),
        yaml_serde::to_string(&record)?.as_bytes(),
    )?;
    stage.commit()?;
    Ok(opts.out.clone())
}

fn write_parquet(path: &Path, df: &mut DataFrame) -> Result<()> {
    let f = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    ParquetWriter::new(f)
        .with_compression(ParquetCompression::Zstd(None))
        .with_statistics(StatisticsOptions::empty())
        .finish(df)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
