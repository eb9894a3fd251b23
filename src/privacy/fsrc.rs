//! FSRC composition of PrivITP (paper `alg:privitp_fsrc`,
//! `thm:privitp_fsrc_comp`; Lebensold et al. 2024, Thm 11): answer a stream
//! of prompts while ε_spent + ε_max < ε_total, charging each query its
//! realised ex-post cost ε_1 + ε_2^post(t), and compare with basic
//! composition, which answers ⌊ε_total/ε_max⌋ queries.
//!
//! Each query is a literal PrivITP run (the `sampled` estimator: real coins):
//! batch A → λ, λ̃ = clamp(λ + N(0, σ_X²)), Phase 2 on a fresh batch with
//! noisy rewards and acceptance coins, fallback to a fresh draw. The clamp
//! interval (default [0, R_max], design §5) makes ε_max finite.
//!
//! The prompt stream visits the dataset's prompts in a seeded random order,
//! reshuffled on every pass, until the filter halts.

use rand::RngExt;
use rand::seq::SliceRandom;
use rand_distr::StandardNormal;
use rand_pcg::Pcg64;

use super::accountant::{Phase2Terms, privitp_eps_max};
use crate::select::itp::PrivItpAcceptance;
use crate::select::lambda::solve_lambda;
use crate::select::pool::Pool;

/// FSRC settings for one reward model.
#[derive(Clone, Debug)]
pub struct FsrcParams {
    pub eps_total: f64,
    pub n: usize,
    pub beta: f64,
    pub sigma_x: f64,
    pub sigma_z: f64,
    pub l: f64,
    pub r_max: f64,
    pub delta_r: f64,
    /// ε_1 of Phase 1 (the accountant's sound value, or the paper's on request).
    pub eps1: f64,
    /// λ̃ clamp interval (post-processing).
    pub clamp: (f64, f64),
}

/// One FSRC run (one seed).
#[derive(Clone, Debug, PartialEq)]
pub struct FsrcRun {
    pub queries: usize,
    /// ⌊ε_total/ε_max⌋.
    pub basic_queries: usize,
    pub eps_max: f64,
    pub eps_spent: f64,
    pub mean_halting_time: f64,
    /// Mean r* of the released responses.
    pub accuracy: f64,
    /// Largest single-query ex-post cost observed (must not exceed ε_max).
    pub max_query_eps: f64,
}

/// One literal PrivITP query on `pool`: returns (released pool index, halting time t).
fn privitp_query(pool: &Pool, p: &FsrcParams, rng: &mut Pcg64) -> (usize, usize, f64) {
    let size = pool.len();
    let batch_a: Vec<f64> = (0..p.n)
        .map(|_| pool.proxy(rng.random_range(0..size)))
        .collect();
    let lambda = solve_lambda(&batch_a, p.beta);
    let z: f64 = rng.sample(StandardNormal);
    let lt = (lambda + p.sigma_x * z).clamp(p.clamp.0, p.clamp.1);
    let acc = PrivItpAcceptance::new(lt, p.sigma_z, p.r_max, p.l);
    for t in 1..=p.n {
        let i = rng.random_range(0..size);
        let g: f64 = rng.sample(StandardNormal);
        let u: f64 = rng.random::<f64>();
        if acc.coin(pool.proxy(i) + p.sigma_z * g, u) {
            return (i, t, lt);
        }
    }
    (rng.random_range(0..size), p.n + 1, lt)
}

/// Run the FSRC filter over a prompt stream drawn from `pools`.
pub fn run_fsrc(pools: &[Pool], p: &FsrcParams, seed: u64) -> FsrcRun {
    assert!(!pools.is_empty(), "FSRC needs at least one prompt");
    let eps_max = privitp_eps_max(p.eps1, p.clamp, p.sigma_z, p.r_max, p.delta_r, p.l, p.n);
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
        let pool = &pools[order[pos]];
        pos += 1;
        let (sel, t, lt) = privitp_query(pool, p, &mut rng);
        let cost =
            p.eps1 + Phase2Terms::new(lt, p.sigma_z, p.r_max, p.delta_r, p.l).eps_post(t, p.n);
        spent += cost;
        max_q = max_q.max(cost);
        queries += 1;
        halt_sum += t as f64;
        gold_sum += pool.values[sel].gold;
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
