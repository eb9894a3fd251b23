//! FSRC composition of PrivITP (paper `alg:privitp_fsrc`,
//! `thm:privitp_fsrc_comp`; Lebensold et al. 2024, Thm 11): answer a stream
//! of prompts while ε_spent + ε_max < ε_total, charging each query its
//! realised ex-post cost ε_1 + ε_2^post(t), and compare with basic
//! composition, which answers ⌊ε_total/ε_max⌋ queries.
//!
//! Each query is one replicate of the engine's PrivITP with the `sampled`
//! estimator and a sampled λ̃ — real coins, exactly as in a sweep — whose
//! metrics are then the realised halting time t, ε_1 + ε_2^post(t) and r* of
//! the released response. The clamp interval (default [0, R_max], design §5)
//! makes ε_max finite. Lives under `sweep` (not `privacy`) because it runs the
//! engine.
//!
//! The prompt stream visits the prompts in a seeded random order, reshuffled
//! on every pass. Query τ draws from its own stream (the query number stands
//! in the key's dataset field), so a prompt revisited later gets fresh coins.

use anyhow::{Context, Result};
use rayon::prelude::*;

use super::blocks::{all_pools, applied_transform, fsrc_wanted};
use super::seed::stable_id;
use crate::config::{Experiment, ResolvedDataset, RewardModel, SamplingSpec};
use crate::data::open::open_reader;
use crate::results::fsrc::FsrcRow;
use crate::select::algorithm::Batches;
use rand::seq::SliceRandom;
use rand_pcg::Pcg64;

use super::engine::{
    Algorithm, EngineConfig, Estimator, LambdaNoise, PrivItpParams, PrivacyParams, Sampling,
    run_item,
};
use super::seed::StreamKey;
use crate::privacy::accountant::privitp_eps_max;
pub use crate::results::fsrc::FsrcRun;
use crate::select::pool::Pool;

/// FSRC settings for one reward model.
#[derive(Clone, Debug)]
pub struct FsrcParams {
    pub eps_total: f64,
    pub n: usize,
    /// How each query's n candidates are drawn from the prompt's pool.
    pub sampling: Sampling,
    /// PrivITP's parameters; `clamp: None` means [0, R_max].
    pub privitp: PrivItpParams,
    pub privacy: PrivacyParams,
}

/// Run the FSRC filter over a prompt stream drawn from `pools`.
pub fn run_fsrc(pools: &[Pool], p: &FsrcParams, seed: u64) -> FsrcRun {
    assert!(!pools.is_empty(), "FSRC needs at least one prompt");
    let pr = p.privacy;
    let clamp = p.privitp.clamp.unwrap_or((0.0, pr.r_max));
    let privitp = PrivItpParams {
        clamp: Some(clamp),
        ..p.privitp
    };
    let eps1 = pr.phase1_eps(privitp.sigma_x);
    let eps_max = privitp_eps_max(
        eps1,
        clamp,
        privitp.sigma_z,
        pr.r_max,
        pr.delta_r,
        privitp.l,
        p.n,
    );
    let cfg = EngineConfig {
        algorithms: vec![Algorithm::PrivItp(privitp)],
        replicates: 1,
        sampling: p.sampling,
        estimator: Estimator::Sampled,
        lambda_noise: LambdaNoise::Sampled,
        privacy: pr,
        conventions: Default::default(),
        dataset_base: Default::default(),
    };
    let mut rng = Pcg64::new(
        u128::from(seed) ^ 0x6673_7263_0000_0000_0000_0000_0000_0000,
        7,
    );
    let mut order: Vec<usize> = (0..pools.len()).collect();
    let mut pos = order.len();
    let (mut spent, mut queries, mut halt_sum, mut gold_sum, mut max_q) =
        (0.0, 0usize, 0.0, 0.0, 0.0f64);
    while spent + eps_max < p.eps_total {
        if pos == order.len() {
            order.shuffle(&mut rng);
            pos = 0;
        }
        let prompt = order[pos];
        pos += 1;
        let query = format!("fsrc-query-{queries}");
        let prompt_id = prompt.to_string();
        let key = StreamKey {
            seed,
            dataset: &query,
            reward_model: "",
            prompt_id: &prompt_id,
            n: p.n,
        };
        let m = run_item(&pools[prompt], p.n, &key, &cfg)[0];
        let cost = m.eps.unwrap_or(f64::INFINITY);
        spent += cost;
        max_q = max_q.max(cost);
        queries += 1;
        halt_sum += m.halting_time.unwrap_or(f64::NAN);
        gold_sum += m.values.gold;
    }
    FsrcRun {
        queries,
        basic_queries: (p.eps_total / eps_max).floor() as usize,
        eps_max,
        eps_spent: spent,
        mean_halting_time: if queries > 0 {
            halt_sum / queries as f64
        } else {
            f64::NAN
        },
        accuracy: if queries > 0 {
            gold_sum / queries as f64
        } else {
            f64::NAN
        },
        max_query_eps: max_q,
    }
}

/// The FSRC runs of one (dataset, reward model): every σ × seed, in parallel.
pub fn fsrc_rows(
    exp: &Experiment,
    ds: &ResolvedDataset,
    rm: &RewardModel,
    pools: &[Pool],
) -> Vec<FsrcRow> {
    let Some(f) = &exp.config.fsrc else {
        return Vec::new();
    };
    if let Some(only) = &f.reward_models
        && !only.contains(&rm.name)
    {
        return Vec::new();
    }
    let jobs: Vec<((f64, f64), usize)> = f
        .sigma_pairs()
        .into_iter()
        .flat_map(|s| (0..f.seeds).map(move |k| (s, k)))
        .collect();
    let sampling = match f.sampling_or(exp.config.sampling) {
        SamplingSpec::WithReplacement => Sampling::WithReplacement,
        SamplingSpec::WithoutReplacement => Sampling::WithoutReplacement,
    };
    jobs.par_iter()
        .map(|&((sigma_x, sigma_z), k)| {
            let sigma = sigma_x + sigma_z;
            let params = FsrcParams {
                eps_total: f.eps_total,
                n: f.n,
                sampling,
                privitp: PrivItpParams {
                    sigma_x,
                    sigma_z,
                    beta: f.beta,
                    l: f.l,
                    clamp: f.clamp.map(|[lo, hi]| (lo, hi)),
                    batches: Batches::Fresh,
                },
                privacy: rm.privacy,
            };
            let seed = stable_id(&format!(
                "fsrc/{}/{}/{}/{k}",
                exp.config.seed, ds.name, rm.name
            ));
            FsrcRow {
                dataset: ds.name.clone(),
                reward_model: rm.name.clone(),
                sigma,
                beta: f.beta,
                n: f.n,
                eps_total: f.eps_total,
                seed: k,
                run: run_fsrc(pools, &params, seed),
            }
        })
        .collect()
}

/// Only the FSRC section of `exp` (for `privalign fsrc`), on `threads` workers.
pub fn fsrc_only(exp: &Experiment, threads: usize) -> Result<Vec<FsrcRow>> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("starting the worker threads")?;
    pool.install(|| {
        let mut rows = Vec::new();
        for ds in &exp.datasets {
            let reader = open_reader(&ds.dir)?;
            for (ri, rm) in exp.reward_models.iter().enumerate() {
                if !fsrc_wanted(exp, ri) {
                    continue;
                }
                let applied = applied_transform(ds, rm)?;
                let pools = all_pools(ds, &reader, rm, &applied)?;
                rows.extend(fsrc_rows(exp, ds, rm, &pools));
            }
        }
        Ok(rows)
    })
}
