//! The paper's reference Python scripts' conventions for ITP and PrivITP, as
//! named options (issue 15, item 4). The default everywhere remains the
//! paper's Algorithm 2 (`alg:privitp`); these exist so a user can reproduce
//! numbers made with the scripts and see how far they are from the algorithm.
//! At small n they differ by up to ~25 points of lift.
//!
//! * **Envelope from the batch** (`envelope: batch_max`). The paper bounds
//!   the weight w = relu((r − λ)/β) by M = (R_max − λ)/β (ITP) or
//!   M = (R_max + σ_Z·L − λ̃)/β (PrivITP), fixed before Phase 2. The scripts use
//!   the realised maximum over the batch being walked: ITP M = max_i w_i, so
//!   the batch's best candidate is always accepted; PrivITP
//!   M = max((max_i r̃_i − λ̃)/β, 1e-8) with r̃ the batch's noisy rewards. A
//!   data-dependent envelope voids PrivITP's privacy analysis (no ε reported).
//! * **Fallback credit** (`fallback: dataset_base`). When every candidate is
//!   rejected the paper returns a fresh draw from the prompt's pool; the
//!   scripts credit the base policy's accuracy over the whole dataset (mean
//!   correctness over all prompts and responses) and proxy = the transformed
//!   global mean (0 for z-scored rewards). Win rates are credited ½, a base
//!   draw against a base draw.
//! * **PrivITP's acceptance averaged over the noise before the sequential
//!   product** (`acceptance: noise_averaged`): p̄_i = (1/S)·Σ_s p_i(λ̃_s, r̃_s)
//!   over S draws (default 150) of λ̃ and of every candidate's noise, then
//!   P(select i) = p̄_i·Π_{j<i}(1 − p̄_j). The algorithm's law is the average
//!   *of* the products, E_s[p_{i,s}·Π_{j<i}(1 − p_{j,s})]; the two differ
//!   because the acceptances of one draw are dependent (shared λ̃ and, with
//!   the batch envelope, shared max). Biased with respect to the algorithm:
//!   offered only as part of the convention. The unbiased counterpart
//!   (`acceptance: exact`) averages the per-draw laws; with the paper's
//!   envelope `exact` keeps privalign's closed form.
//! * One pass over the same batch (`batches: shared`), batches drawn without
//!   replacement, and rewards z-scored by the global mean and population sd
//!   (`transform: standardize`) are existing or general options; the
//!   top-level `convention: reference-scripts` sets all of these at once.

use rand::RngExt;
use rand_distr::StandardNormal;
use rand_pcg::Pcg64;

use super::pool::{Pool, Values};
use super::rejection::RejectionOutcome;

/// The floor of the scripts' PrivITP batch envelope M.
pub const ENVELOPE_FLOOR: f64 = 1e-8;
/// The scripts' number of noise draws S.
pub const DEFAULT_NOISE_DRAWS: usize = 150;

/// Where the rejection bound M comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Envelope {
    /// The paper's fixed M (from R_max, σ_Z, L and λ).
    #[default]
    Paper,
    /// The realised maximum over the batch being walked.
    BatchMax,
}

/// What a fully rejected batch is credited with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fallback {
    /// A fresh draw from the prompt's pool (the paper's; its pool mean).
    #[default]
    Pool,
    /// The dataset-wide base values ([`dataset_base`]).
    DatasetBase,
}

/// How PrivITP's Phase-2 noise enters the selection law.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Acceptance {
    /// The algorithm's law (closed form with the paper's envelope; the mean of
    /// per-draw laws over `draws` noise draws with the batch envelope).
    #[default]
    Exact,
    /// The scripts': per-candidate acceptance averaged over the draws, then
    /// one sequential product (biased).
    NoiseAveraged,
}

/// ITP's conventions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ItpConventions {
    pub envelope: Envelope,
    pub fallback: Fallback,
}

/// PrivITP's conventions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrivItpConventions {
    pub envelope: Envelope,
    pub fallback: Fallback,
    pub acceptance: Acceptance,
    /// Noise draws S for the Monte Carlo laws.
    pub draws: usize,
}

impl Default for PrivItpConventions {
    fn default() -> Self {
        Self {
            envelope: Envelope::Paper,
            fallback: Fallback::Pool,
            acceptance: Acceptance::Exact,
            draws: DEFAULT_NOISE_DRAWS,
        }
    }
}

impl PrivItpConventions {
    /// Whether privalign's own closed-form PrivITP applies unchanged (apart
    /// from the fallback credit, which is corrected afterwards).
    pub fn closed_form(&self) -> bool {
        self.envelope == Envelope::Paper && self.acceptance == Acceptance::Exact
    }
}

/// Both algorithms' conventions for one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Conventions {
    pub itp: ItpConventions,
    pub privitp: PrivItpConventions,
}

/// The base policy's values over the whole dataset: every response of every
/// pool weighted equally (a pool's mean weighted by its size). Its proxy is
/// the transformed global mean (0 under `standardize`); its win rates are ½.
pub fn dataset_base(pools: &[Pool]) -> Values {
    let total: usize = pools.iter().map(Pool::len).sum();
    let mut v = Values::default();
    for p in pools {
        v.add_scaled(&p.mean, p.len() as f64 / total.max(1) as f64);
    }
    v
}

/// Swap the pool-mean fallback of `o` (computed with the paper's fallback)
/// for `credit`.
pub fn recredit_fallback(o: &mut RejectionOutcome, pool: &Pool, credit: &Values) {
    o.values.add_scaled(&pool.mean, -o.fallback);
    o.values.add_scaled(credit, o.fallback);
}

/// ITP's acceptance probabilities on the walked batch with the batch
/// envelope: w_i = relu((r_i − λ)/β), M = max_i w_i (floored), p_i = w_i/M.
pub fn itp_batch_max_probs(walk_rewards: &[f64], lambda: f64, beta: f64) -> Vec<f64> {
    let w: Vec<f64> = walk_rewards
        .iter()
        .map(|&r| ((r - lambda) / beta).max(0.0))
        .collect();
    let m = w.iter().copied().fold(0.0, f64::max).max(ENVELOPE_FLOOR);
    w.iter().map(|&x| (x / m).min(1.0)).collect()
}

/// PrivITP's acceptance probabilities given λ̃ and the batch's noisy rewards
/// r̃ (the uniform coin is what remains): min(w_i/M, 1), w_i =
/// relu((r̃_i − λ̃)/β), with M the paper's (R_max + σ_Z·L − λ̃)/β — accept iff
/// r̃ ≥ λ̃ when it is ≤ 0 — or the batch's max((max r̃ − λ̃)/β, 1e-8).
pub fn privitp_probs(
    noisy: &[f64],
    lambda_tilde: f64,
    beta: f64,
    envelope: Envelope,
    paper_beta_m: f64,
) -> Vec<f64> {
    match envelope {
        Envelope::Paper => noisy
            .iter()
            .map(|&r| {
                if paper_beta_m <= 0.0 {
                    f64::from(u8::from(r >= lambda_tilde))
                } else {
                    ((r - lambda_tilde) / paper_beta_m).clamp(0.0, 1.0)
                }
            })
            .collect(),
        Envelope::BatchMax => {
            let top = noisy.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let m = ((top - lambda_tilde) / beta).max(ENVELOPE_FLOOR);
            noisy
                .iter()
                .map(|&r| (((r - lambda_tilde) / beta).max(0.0) / m).min(1.0))
                .collect()
        }
    }
}

/// One sequential pass over `walk` with acceptance probabilities `probs`:
/// candidate t is returned with probability p_t·Π_{j<t}(1 − p_j), and
/// `fallback` with Π_j(1 − p_j). Every candidate of the batch is generated.
pub fn one_pass(pool: &Pool, walk: &[usize], probs: &[f64], fallback: &Values) -> RejectionOutcome {
    let mut out = RejectionOutcome::default();
    let mut survival = 1.0;
    for (t, (&i, &a)) in walk.iter().zip(probs).enumerate() {
        let p = survival * a.clamp(0.0, 1.0);
        out.values.add_scaled(&pool.values[i], p);
        out.halting_time += p * (t + 1) as f64;
        out.phase2_generated += survival;
        out.rejections_before_accept += p * t as f64;
        out.accepted += p;
        survival -= p;
    }
    let survival = survival.max(0.0);
    out.fallback = survival;
    out.values.add_scaled(fallback, survival);
    out.halting_time += survival * (walk.len() + 1) as f64;
    out
}

/// PrivITP's noise, drawn literally: λ̃ = λ̂ + σ_X·z (clamped) and
/// r̃_i = r̂_i + σ_Z·z_i for the walked batch.
#[allow(clippy::too_many_arguments)]
fn draw_noise(
    pool: &Pool,
    walk: &[usize],
    lambda_hat: f64,
    sigma_x: f64,
    sigma_z: f64,
    clamp: Option<(f64, f64)>,
    rng: &mut Pcg64,
    noisy: &mut Vec<f64>,
) -> f64 {
    let z: f64 = rng.sample(StandardNormal);
    let mut lt = lambda_hat + sigma_x * z;
    if let Some((lo, hi)) = clamp {
        lt = lt.clamp(lo, hi);
    }
    noisy.clear();
    noisy.extend(walk.iter().map(|&i| {
        let z: f64 = rng.sample(StandardNormal);
        pool.proxy(i) + sigma_z * z
    }));
    lt
}

/// PrivITP's parameters as this module needs them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrivItpNoise {
    pub sigma_x: f64,
    pub sigma_z: f64,
    pub beta: f64,
    pub l: f64,
    pub r_max: f64,
    pub clamp: Option<(f64, f64)>,
}

/// PrivITP's Phase 2 on `walk` under conventions `c`, by Monte Carlo over
/// `c.draws` draws of the noise from `rng`: the mean of the per-draw laws
/// (`Exact`), or one pass with the per-candidate acceptance averaged over the
/// draws (`NoiseAveraged`, the scripts').
pub fn privitp_monte_carlo(
    pool: &Pool,
    walk: &[usize],
    lambda_hat: f64,
    p: &PrivItpNoise,
    c: &PrivItpConventions,
    fallback: &Values,
    rng: &mut Pcg64,
) -> RejectionOutcome {
    let s = c.draws.max(1);
    let mut noisy = Vec::with_capacity(walk.len());
    let mut mean_probs = vec![0.0; walk.len()];
    let mut out = RejectionOutcome::default();
    let w = 1.0 / s as f64;
    for _ in 0..s {
        let lt = draw_noise(
            pool, walk, lambda_hat, p.sigma_x, p.sigma_z, p.clamp, rng, &mut noisy,
        );
        let beta_m = p.r_max + p.sigma_z * p.l - lt;
        let probs = privitp_probs(&noisy, lt, p.beta, c.envelope, beta_m);
        match c.acceptance {
            Acceptance::NoiseAveraged => {
                for (m, q) in mean_probs.iter_mut().zip(&probs) {
                    *m += w * q;
                }
            }
            Acceptance::Exact => {
                let o = one_pass(pool, walk, &probs, fallback);
                add_outcome(&mut out, &o, w);
            }
        }
    }
    match c.acceptance {
        Acceptance::NoiseAveraged => one_pass(pool, walk, &mean_probs, fallback),
        Acceptance::Exact => out,
    }
}

/// PrivITP's Phase 2 with literal coins: one noise draw, then a uniform coin
/// per candidate against its acceptance (`NoiseAveraged`: against the
/// acceptance averaged over `c.draws` draws). Returns the walk position
/// accepted (`None`: all rejected) and the halting time.
pub fn privitp_sampled(
    pool: &Pool,
    walk: &[usize],
    lambda_hat: f64,
    p: &PrivItpNoise,
    c: &PrivItpConventions,
    rng: &mut Pcg64,
) -> (Option<usize>, usize) {
    let probs = match c.acceptance {
        Acceptance::Exact => {
            let mut noisy = Vec::with_capacity(walk.len());
            let lt = draw_noise(
                pool, walk, lambda_hat, p.sigma_x, p.sigma_z, p.clamp, rng, &mut noisy,
            );
            privitp_probs(
                &noisy,
                lt,
                p.beta,
                c.envelope,
                p.r_max + p.sigma_z * p.l - lt,
            )
        }
        Acceptance::NoiseAveraged => averaged_probs(pool, walk, lambda_hat, p, c, rng),
    };
    for (t, &a) in probs.iter().enumerate() {
        if rng.random::<f64>() < a {
            return (Some(t), t + 1);
        }
    }
    (None, walk.len() + 1)
}

/// p̄ over `c.draws` noise draws.
fn averaged_probs(
    pool: &Pool,
    walk: &[usize],
    lambda_hat: f64,
    p: &PrivItpNoise,
    c: &PrivItpConventions,
    rng: &mut Pcg64,
) -> Vec<f64> {
    let s = c.draws.max(1);
    let mut noisy = Vec::with_capacity(walk.len());
    let mut mean = vec![0.0; walk.len()];
    for _ in 0..s {
        let lt = draw_noise(
            pool, walk, lambda_hat, p.sigma_x, p.sigma_z, p.clamp, rng, &mut noisy,
        );
        let probs = privitp_probs(
            &noisy,
            lt,
            p.beta,
            c.envelope,
            p.r_max + p.sigma_z * p.l - lt,
        );
        for (m, q) in mean.iter_mut().zip(&probs) {
            *m += q / s as f64;
        }
    }
    mean
}

fn add_outcome(acc: &mut RejectionOutcome, o: &RejectionOutcome, w: f64) {
    acc.values.add_scaled(&o.values, w);
    acc.halting_time += w * o.halting_time;
    acc.phase2_generated += w * o.phase2_generated;
    acc.fallback += w * o.fallback;
    acc.rejections_before_accept += w * o.rejections_before_accept;
    acc.accepted += w * o.accepted;
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// A tiny pool: rewards with a tie, correctness mixed.
    fn pool() -> Pool {
        Pool::new(&[0.9, 0.2, 0.9, 0.5, -0.3], &[1.0, 0.0, 0.0, 1.0, 0.0])
    }

    /// The selection law by enumerating every accept/reject pattern of the
    /// walk's coins: (P(return walk position t), P(all rejected)).
    fn enumerate_coins(probs: &[f64]) -> (Vec<f64>, f64) {
        let n = probs.len();
        let mut law = vec![0.0; n];
        let mut none = 0.0;
        for mask in 0u32..(1 << n) {
            let pr: f64 = (0..n)
                .map(|t| {
                    if mask >> t & 1 == 1 {
                        probs[t]
                    } else {
                        1.0 - probs[t]
                    }
                })
                .product();
            match (0..n).find(|&t| mask >> t & 1 == 1) {
                Some(t) => law[t] += pr,
                None => none += pr,
            }
        }
        (law, none)
    }

    #[test]
    fn one_pass_is_the_coin_enumeration() {
        let pool = pool();
        let walk = [3, 0, 4, 2];
        let probs = [0.3, 0.6, 0.0, 0.25];
        let base = Values {
            gold: 0.7,
            proxy: 0.0,
            win_gold: 0.5,
            win_proxy: 0.5,
        };
        let o = one_pass(&pool, &walk, &probs, &base);
        let (law, none) = enumerate_coins(&probs);
        let mut gold = none * base.gold;
        let mut t_mean = none * 5.0;
        for (t, &p) in law.iter().enumerate() {
            gold += p * pool.values[walk[t]].gold;
            t_mean += p * (t + 1) as f64;
        }
        assert!((o.values.gold - gold).abs() < 1e-15);
        assert!((o.halting_time - t_mean).abs() < 1e-14);
        assert!((o.fallback - none).abs() < 1e-15);
        assert!((o.accepted + o.fallback - 1.0).abs() < 1e-15);
    }

    #[test]
    fn batch_envelope_always_accepts_the_batch_best() {
        let probs = itp_batch_max_probs(&[0.2, 0.9, 0.5], 0.4, 0.1);
        assert_eq!(probs[1], 1.0);
        assert_eq!(probs[0], 0.0);
        assert!((probs[2] - 0.2).abs() < 1e-12, "{probs:?}"); // (0.5−0.4)/(0.9−0.4)
        // PrivITP: the noisy max is accepted; below λ̃ everywhere → floor, nothing accepted.
        let p = privitp_probs(&[0.3, 0.7], 0.5, 0.1, Envelope::BatchMax, 0.0);
        assert_eq!(p, vec![0.0, 1.0]);
        let p = privitp_probs(&[0.3, 0.4], 0.5, 0.1, Envelope::BatchMax, 0.0);
        assert_eq!(p, vec![0.0, 0.0]);
        // The paper's envelope: min(w/M, 1) with βM given; βM ≤ 0 → indicator.
        let p = privitp_probs(&[0.3, 0.7], 0.5, 0.1, Envelope::Paper, 0.4);
        assert!((p[1] - 0.5).abs() < 1e-12 && p[0] == 0.0);
        let p = privitp_probs(&[0.3, 0.7], 0.5, 0.1, Envelope::Paper, -0.1);
        assert_eq!(p, vec![0.0, 1.0]);
    }

    /// Monte Carlo laws against their definitions on the same draws: `Exact`
    /// is the mean of per-draw coin enumerations, `NoiseAveraged` the coin
    /// enumeration of the mean acceptances — and the two differ (the bias).
    #[test]
    fn monte_carlo_laws_match_their_definitions_and_differ() {
        let pool = pool();
        let walk = [1, 3, 0, 4];
        let p = PrivItpNoise {
            sigma_x: 0.3,
            sigma_z: 0.3,
            beta: 0.1,
            l: 4.0,
            r_max: 1.0,
            clamp: None,
        };
        let c = PrivItpConventions {
            envelope: Envelope::BatchMax,
            fallback: Fallback::DatasetBase,
            acceptance: Acceptance::Exact,
            draws: 40,
        };
        let base = dataset_base(std::slice::from_ref(&pool));
        let lam = 0.35;
        let exact = privitp_monte_carlo(
            &pool,
            &walk,
            lam,
            &p,
            &c,
            &base,
            &mut Pcg64::seed_from_u64(9),
        );
        let avg_c = PrivItpConventions {
            acceptance: Acceptance::NoiseAveraged,
            ..c
        };
        let averaged = privitp_monte_carlo(
            &pool,
            &walk,
            lam,
            &p,
            &avg_c,
            &base,
            &mut Pcg64::seed_from_u64(9),
        );
        // Brute force on the same 40 draws.
        let mut rng = Pcg64::seed_from_u64(9);
        let mut noisy = Vec::new();
        let (mut gold_exact, mut mean_probs) = (0.0, vec![0.0; walk.len()]);
        for _ in 0..40 {
            let lt = draw_noise(&pool, &walk, lam, 0.3, 0.3, None, &mut rng, &mut noisy);
            // The batch envelope by hand.
            let top = noisy.iter().copied().fold(f64::MIN, f64::max);
            let m = ((top - lt) / 0.1).max(1e-8);
            let probs: Vec<f64> = noisy
                .iter()
                .map(|&r| (((r - lt) / 0.1).max(0.0) / m).min(1.0))
                .collect();
            let (law, none) = enumerate_coins(&probs);
            gold_exact += (law
                .iter()
                .enumerate()
                .map(|(t, q)| q * pool.values[walk[t]].gold)
                .sum::<f64>()
                + none * base.gold)
                / 40.0;
            for (m, q) in mean_probs.iter_mut().zip(&probs) {
                *m += q / 40.0;
            }
        }
        let (law, none) = enumerate_coins(&mean_probs);
        let gold_avg = law
            .iter()
            .enumerate()
            .map(|(t, q)| q * pool.values[walk[t]].gold)
            .sum::<f64>()
            + none * base.gold;
        assert!((exact.values.gold - gold_exact).abs() < 1e-12);
        assert!((averaged.values.gold - gold_avg).abs() < 1e-12);
        assert!(
            (exact.values.gold - averaged.values.gold).abs() > 1e-3,
            "{} vs {}",
            exact.values.gold,
            averaged.values.gold
        );
    }

    #[test]
    fn dataset_base_weights_responses_equally() {
        let a = Pool::new(&[0.0, 1.0], &[1.0, 1.0]);
        let b = Pool::new(&[0.0, 1.0, 2.0, 3.0], &[0.0, 0.0, 0.0, 1.0]);
        let v = dataset_base(&[a, b]);
        assert!((v.gold - 3.0 / 6.0).abs() < 1e-15);
        assert!((v.proxy - 7.0 / 6.0).abs() < 1e-15);
        assert!((v.win_gold - 0.5).abs() < 1e-15 && (v.win_proxy - 0.5).abs() < 1e-15);
    }
}
