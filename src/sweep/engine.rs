//! One (prompt, n) work item: bootstrap replicates of every algorithm on
//! shared batches, with the exact conditional or the literal sampled estimator
//! (design §6), averaged over replicates into the metrics of design §7.
//!
//! Memory is O(pool + n) per work item and independent of the number of
//! replicates: each replicate's batches are drawn, used by every algorithm,
//! and dropped before the next.

use rand::RngExt;
use rand_distr::StandardNormal;
use rand_pcg::Pcg64;
use rayon::prelude::*;

use super::seed::{StreamKey, StreamUse, stable_id};
pub use crate::privacy::accountant::PrivacyParams;
use crate::privacy::accountant::{Phase2Terms, privbon_gumbel_eps};
use crate::select::itp::{ItpAcceptance, PrivItpAcceptance};
use crate::select::lambda::solve_lambda_sorted_desc;
use crate::select::pool::{Pool, Values};
use crate::select::privbon::{privbon_conditional, privbon_gauss_sampled, privbon_gumbel_sampled};
use crate::select::quadrature::gauss_hermite_normal;
use crate::select::reference_scripts::{Conventions, Fallback};
use crate::select::rejection::{RejectionOutcome, rejection_conditional, rejection_sampled};

/// How candidates are drawn from the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampling {
    /// Bootstrap (the paper's protocol).
    WithReplacement,
    /// Requires n ≤ N.
    WithoutReplacement,
}

/// How the mechanism's own randomness is treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Estimator {
    /// Exact expectation over the mechanism's coins given the batches.
    Conditional,
    /// Draw the coins literally, as a deployment would.
    Sampled,
}

/// How the conditional estimator treats PrivITP's Phase-1 noise λ̃.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LambdaNoise {
    /// Gauss–Hermite quadrature with this many nodes.
    Quadrature(usize),
    /// One λ̃ draw per replicate.
    Sampled,
}

/// Which batch ITP's Phase 2 runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Batches {
    /// A fresh independent batch B (the paper's algorithm; needed for privacy).
    Fresh,
    /// Reuse batch A (as in Huang et al.).
    Shared,
}

/// PrivITP's parameters (paper `alg:privitp`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrivItpParams {
    pub sigma_x: f64,
    pub sigma_z: f64,
    pub beta: f64,
    /// Truncation parameter L in M = (R_max + σ_Z·L − λ̃)/β.
    pub l: f64,
    /// Optional clamp of λ̃ to [lo, hi] (post-processing).
    pub clamp: Option<(f64, f64)>,
    pub batches: Batches,
}

impl PrivItpParams {
    /// The paper's split of a total noise σ: σ_X = σ_Z = σ/2, L = 4, no
    /// clamp, fresh Phase-2 batch.
    pub fn split_half(sigma: f64, beta: f64) -> Self {
        Self {
            sigma_x: sigma / 2.0,
            sigma_z: sigma / 2.0,
            beta,
            l: 4.0,
            clamp: None,
            batches: Batches::Fresh,
        }
    }
}

/// One algorithm with its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Algorithm {
    Bon,
    PrivBon { sigma: f64 },
    PrivBonGauss { sigma: f64 },
    Itp { beta: f64, batches: Batches },
    PrivItp(PrivItpParams),
}

impl Algorithm {
    /// Result-file name (design §10).
    pub fn name(&self) -> &'static str {
        match self {
            Algorithm::Bon => "bon",
            Algorithm::PrivBon { .. } => "privbon",
            Algorithm::PrivBonGauss { .. } => "privbon_gauss",
            Algorithm::Itp { .. } => "itp",
            Algorithm::PrivItp(_) => "privitp",
        }
    }

    /// Total noise σ (PrivITP: σ_X + σ_Z, the paper's σ for the `half` split).
    pub fn sigma(&self) -> Option<f64> {
        match self {
            Algorithm::PrivBon { sigma } | Algorithm::PrivBonGauss { sigma } => Some(*sigma),
            Algorithm::PrivItp(p) => Some(p.sigma_x + p.sigma_z),
            _ => None,
        }
    }

    pub fn beta(&self) -> Option<f64> {
        match self {
            Algorithm::Itp { beta, .. } => Some(*beta),
            Algorithm::PrivItp(p) => Some(p.beta),
            _ => None,
        }
    }

    fn mechanism_stream(&self) -> u64 {
        stable_id(&format!("{self:?}"))
    }
}

/// Settings shared by every work item of a run.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    pub algorithms: Vec<Algorithm>,
    pub replicates: usize,
    pub sampling: Sampling,
    pub estimator: Estimator,
    pub lambda_noise: LambdaNoise,
    pub privacy: PrivacyParams,
    /// The reference scripts' conventions (default: none, the paper's algorithm).
    pub conventions: Conventions,
    /// The base policy's values over the whole dataset (fallback `dataset_base`).
    pub dataset_base: Values,
}

impl EngineConfig {
    /// The defaults of design §6–§9: bootstrap with replacement, λ̃
    /// integrated by 16-node Gauss–Hermite quadrature, [`PrivacyParams::default`].
    pub fn new(algorithms: Vec<Algorithm>, replicates: usize, estimator: Estimator) -> Self {
        Self {
            algorithms,
            replicates,
            sampling: Sampling::WithReplacement,
            estimator,
            lambda_noise: LambdaNoise::Quadrature(16),
            privacy: PrivacyParams::default(),
            conventions: Conventions::default(),
            dataset_base: Values::default(),
        }
    }
}

/// Metrics of one algorithm on one (prompt, n), averaged over replicates.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Metrics {
    pub values: Values,
    pub halting_time: Option<f64>,
    pub generations: f64,
    pub eps: Option<f64>,
}

/// Draws pool indices with or without replacement.
struct Drawer {
    rng: Pcg64,
    without: bool,
    perm: Vec<usize>,
    drawn: usize,
}

impl Drawer {
    fn new(rng: Pcg64, pool: usize, sampling: Sampling) -> Self {
        let without = sampling == Sampling::WithoutReplacement;
        Self {
            rng,
            without,
            perm: if without {
                (0..pool).collect()
            } else {
                Vec::new()
            },
            drawn: 0,
        }
    }

    fn next(&mut self, pool: usize) -> usize {
        if self.without {
            let j = self.drawn + self.rng.random_range(0..pool - self.drawn);
            self.perm.swap(self.drawn, j);
            self.drawn += 1;
            self.perm[self.drawn - 1]
        } else {
            self.rng.random_range(0..pool)
        }
    }
}

/// Batch B, drawn on demand and shared by every ITP/PrivITP of a replicate.
struct LazyBatch {
    drawer: Drawer,
    items: Vec<usize>,
}

impl LazyBatch {
    fn get(&mut self, t: usize, pool: usize) -> usize {
        while self.items.len() <= t {
            let i = self.drawer.next(pool);
            self.items.push(i);
        }
        self.items[t]
    }
}

/// A per-pool-item memo of one acceptance rule's probabilities. Bootstrap
/// batches repeat pool items (a walk of n = 4096 over a pool of 1000 mostly
/// revisits), and PrivITP's closed-form acceptance costs several erfcx calls,
/// so each (rule, item) is evaluated once. A generation stamp makes starting a
/// new rule O(1) instead of clearing the array.
struct AcceptCache {
    stamp: u32,
    entries: Vec<(u32, f64)>,
}

impl AcceptCache {
    fn new(size: usize) -> Self {
        Self {
            stamp: 0,
            entries: vec![(0, 0.0); size],
        }
    }

    /// Forget every memo (a new λ̃, hence a new rule).
    fn next_generation(&mut self) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.entries.fill((0, 0.0));
            self.stamp = 1;
        }
    }

    fn get_or_insert_with(&mut self, i: usize, f: impl FnOnce() -> f64) -> f64 {
        let e = &mut self.entries[i];
        if e.0 != self.stamp {
            *e = (self.stamp, f());
        }
        e.1
    }
}

fn clamp_lambda(l: f64, clamp: Option<(f64, f64)>) -> f64 {
    match clamp {
        Some((lo, hi)) => l.clamp(lo, hi),
        None => l,
    }
}

/// Run all replicates of one (prompt, n) work item.
pub fn run_item(pool: &Pool, n: usize, key: &StreamKey, cfg: &EngineConfig) -> Vec<Metrics> {
    let size = pool.len();
    assert!(n >= 1, "n must be at least 1");
    assert!(
        cfg.sampling == Sampling::WithReplacement || n <= size,
        "without replacement needs n ≤ pool size"
    );
    let nodes = match cfg.lambda_noise {
        LambdaNoise::Quadrature(k) => gauss_hermite_normal(k),
        LambdaNoise::Sampled => Vec::new(),
    };
    let eps1: Vec<f64> = cfg
        .algorithms
        .iter()
        .map(|a| match a {
            Algorithm::PrivItp(p) => cfg.privacy.phase1_eps(p.sigma_x),
            _ => 0.0,
        })
        .collect();
    let needs_lambda = cfg
        .algorithms
        .iter()
        .any(|a| matches!(a, Algorithm::Itp { .. } | Algorithm::PrivItp(_)));

    let mut sums = vec![Metrics::default(); cfg.algorithms.len()];
    let mut batch_a: Vec<usize> = Vec::with_capacity(n);
    let mut sorted_a: Vec<f64> = Vec::with_capacity(n);
    let mut scratch: Vec<f64> = Vec::with_capacity(n);
    let mut cache = AcceptCache::new(size);
    for rep in 0..cfg.replicates {
        let mut da = Drawer::new(key.rng(rep, StreamUse::BatchA), size, cfg.sampling);
        batch_a.clear();
        for _ in 0..n {
            batch_a.push(da.next(size));
        }
        let mut batch_b = LazyBatch {
            drawer: Drawer::new(key.rng(rep, StreamUse::BatchB), size, cfg.sampling),
            items: Vec::new(),
        };
        let lambda = if needs_lambda {
            sorted_a.clear();
            sorted_a.extend(batch_a.iter().map(|&i| pool.proxy(i)));
            sorted_a.sort_unstable_by(|a, b| b.total_cmp(a));
            Some(sorted_a.as_slice())
        } else {
            None
        };
        for (k, alg) in cfg.algorithms.iter().enumerate() {
            let mut coins = key.rng(rep, StreamUse::Mechanism(alg.mechanism_stream()));
            let conv = if cfg.conventions == Conventions::default() {
                None
            } else {
                let mut b = |t: usize| batch_b.get(t, size);
                super::conventions::run(
                    alg,
                    &cfg.conventions,
                    &mut super::conventions::Replicate {
                        pool,
                        n,
                        batch_a: &batch_a,
                        sorted_a: lambda.unwrap_or_default(),
                        batch_b: &mut b,
                        estimator: cfg.estimator,
                        r_max: cfg.privacy.r_max,
                        dataset_base: cfg.dataset_base,
                    },
                    &mut coins,
                )
            };
            let m = match *alg {
                _ if conv.is_some() => conv.unwrap_or_default(),
                Algorithm::Bon => bon(pool, &batch_a, cfg.estimator, &mut coins),
                Algorithm::PrivBon { sigma } => {
                    let values = match cfg.estimator {
                        Estimator::Conditional => {
                            privbon_conditional(pool, &batch_a, sigma, &mut scratch)
                        }
                        Estimator::Sampled => {
                            pool.values
                                [batch_a[privbon_gumbel_sampled(pool, &batch_a, sigma, &mut coins)]]
                        }
                    };
                    Metrics {
                        values,
                        halting_time: None,
                        generations: n as f64,
                        eps: Some(privbon_gumbel_eps(cfg.privacy.delta_r, sigma)),
                    }
                }
                Algorithm::PrivBonGauss { sigma } => Metrics {
                    values: pool.values
                        [batch_a[privbon_gauss_sampled(pool, &batch_a, sigma, &mut coins)]],
                    halting_time: None,
                    generations: n as f64,
                    eps: None,
                },
                Algorithm::Itp { beta, batches } => {
                    let lam = solve_lambda_sorted_desc(lambda.unwrap_or_default(), beta);
                    let acc = ItpAcceptance::new(lam, beta, cfg.privacy.r_max);
                    let (mut m, o) = phase2(
                        pool,
                        n,
                        batches,
                        &batch_a,
                        &mut batch_b,
                        cfg.estimator,
                        &mut coins,
                        |i| acc.prob(pool.proxy(i)),
                        |r, c| c.random::<f64>() < acc.prob(r),
                    );
                    if cfg.conventions.itp.fallback == Fallback::DatasetBase {
                        super::conventions::recredit(
                            &mut m.values,
                            &o,
                            pool,
                            &cfg.dataset_base,
                            cfg.estimator,
                        );
                    }
                    m
                }
                Algorithm::PrivItp(p) => {
                    let lam = solve_lambda_sorted_desc(lambda.unwrap_or_default(), p.beta);
                    privitp(
                        pool,
                        n,
                        &p,
                        lam,
                        eps1[k],
                        &nodes,
                        &batch_a,
                        &mut batch_b,
                        cfg,
                        &mut coins,
                        &mut cache,
                    )
                }
            };
            let s = &mut sums[k];
            s.values.add_scaled(&m.values, 1.0);
            s.generations += m.generations;
            s.halting_time = m.halting_time.map(|h| s.halting_time.unwrap_or(0.0) + h);
            s.eps = m.eps.map(|e| s.eps.unwrap_or(0.0) + e);
        }
    }
    let r = cfg.replicates as f64;
    sums.iter()
        .map(|s| Metrics {
            values: s.values.scaled(1.0 / r),
            halting_time: s.halting_time.map(|h| h / r),
            generations: s.generations / r,
            eps: s.eps.map(|e| e / r),
        })
        .collect()
}

/// BoN: the largest r̂; tied candidates share the selection equally
/// (conditional) or one is picked uniformly (sampled).
fn bon(pool: &Pool, batch: &[usize], estimator: Estimator, coins: &mut Pcg64) -> Metrics {
    let best = batch
        .iter()
        .map(|&i| pool.proxy(i))
        .fold(f64::NEG_INFINITY, f64::max);
    let tied: Vec<usize> = batch
        .iter()
        .copied()
        .filter(|&i| pool.proxy(i) == best)
        .collect();
    let values = match estimator {
        Estimator::Conditional => {
            let mut v = Values::default();
            let w = 1.0 / tied.len() as f64;
            for &i in &tied {
                v.add_scaled(&pool.values[i], w);
            }
            v
        }
        Estimator::Sampled => pool.values[tied[coins.random_range(0..tied.len())]],
    };
    Metrics {
        values,
        halting_time: None,
        generations: batch.len() as f64,
        eps: None,
    }
}

/// Phase 2 on batch B (or A when shared) under either estimator. Returns the
/// metrics without ε and, for the conditional estimator, the outcome law
/// (for ε_2^post); for the sampled one, the realised halting time.
#[allow(clippy::too_many_arguments)]
fn phase2(
    pool: &Pool,
    n: usize,
    batches: Batches,
    batch_a: &[usize],
    batch_b: &mut LazyBatch,
    estimator: Estimator,
    coins: &mut Pcg64,
    mut prob: impl FnMut(usize) -> f64,
    mut coin: impl FnMut(f64, &mut Pcg64) -> bool,
) -> (Metrics, RejectionOutcome) {
    let size = pool.len();
    let fresh = batches == Batches::Fresh;
    let mut t = 0usize;
    let mut next = || {
        let i = if fresh {
            batch_b.get(t, size)
        } else {
            batch_a[t]
        };
        t += 1;
        i
    };
    let phase1 = n as f64;
    match estimator {
        Estimator::Conditional => {
            let o = rejection_conditional(pool, n, &mut next, &mut prob);
            let gens = if fresh {
                phase1 + o.phase2_generated
            } else {
                phase1
            };
            (
                Metrics {
                    values: o.values,
                    halting_time: Some(o.halting_time),
                    generations: gens,
                    eps: None,
                },
                o,
            )
        }
        Estimator::Sampled => {
            let (sel, t_halt) = rejection_sampled(
                n,
                coins,
                &mut next,
                |i, c| coin(pool.proxy(i), c),
                |c| c.random_range(0..size),
            );
            let gens = if fresh {
                phase1 + t_halt.min(n) as f64
            } else {
                phase1
            };
            let o = RejectionOutcome {
                halting_time: t_halt as f64,
                accepted: if t_halt <= n { 1.0 } else { 0.0 },
                fallback: if t_halt > n { 1.0 } else { 0.0 },
                rejections_before_accept: if t_halt <= n {
                    (t_halt - 1) as f64
                } else {
                    0.0
                },
                ..Default::default()
            };
            (
                Metrics {
                    values: pool.values[sel],
                    halting_time: Some(t_halt as f64),
                    generations: gens,
                    eps: None,
                },
                o,
            )
        }
    }
}

/// PrivITP: Phase-1 noise on λ (integrated by quadrature or sampled), then
/// Phase 2 with the closed-form (conditional) or literal (sampled) acceptance.
#[allow(clippy::too_many_arguments)]
fn privitp(
    pool: &Pool,
    n: usize,
    p: &PrivItpParams,
    lambda: f64,
    eps1: f64,
    nodes: &[(f64, f64)],
    batch_a: &[usize],
    batch_b: &mut LazyBatch,
    cfg: &EngineConfig,
    coins: &mut Pcg64,
    cache: &mut AcceptCache,
) -> Metrics {
    let pr = &cfg.privacy;
    let mut one = |lt: f64, batch_b: &mut LazyBatch, coins: &mut Pcg64| -> Metrics {
        let acc = PrivItpAcceptance::new(lt, p.sigma_z, pr.r_max, p.l);
        cache.next_generation();
        let (mut m, o) = phase2(
            pool,
            n,
            p.batches,
            batch_a,
            batch_b,
            cfg.estimator,
            coins,
            |i| cache.get_or_insert_with(i, || acc.prob(pool.proxy(i))),
            |r, c| {
                let z: f64 = c.sample(StandardNormal);
                let u: f64 = c.random::<f64>();
                acc.coin(r + p.sigma_z * z, u)
            },
        );
        if cfg.conventions.privitp.fallback == Fallback::DatasetBase {
            super::conventions::recredit(&mut m.values, &o, pool, &cfg.dataset_base, cfg.estimator);
        }
        let terms = Phase2Terms::new(lt, p.sigma_z, pr.r_max, pr.delta_r, p.l);
        m.eps = Some(
            eps1 + terms.expected_eps_post(o.rejections_before_accept, o.accepted, o.fallback, n),
        );
        m
    };
    let sample_lambda = cfg.estimator == Estimator::Sampled || nodes.is_empty();
    if sample_lambda {
        let z: f64 = coins.sample(StandardNormal);
        let lt = clamp_lambda(lambda + p.sigma_x * z, p.clamp);
        return one(lt, batch_b, coins);
    }
    let mut out = Metrics {
        halting_time: Some(0.0),
        eps: Some(0.0),
        ..Default::default()
    };
    for &(x, w) in nodes {
        let lt = clamp_lambda(lambda + p.sigma_x * x, p.clamp);
        let m = one(lt, batch_b, coins);
        out.values.add_scaled(&m.values, w);
        out.generations += w * m.generations;
        out.halting_time =
            Some(out.halting_time.unwrap_or(0.0) + w * m.halting_time.unwrap_or(0.0));
        out.eps = Some(out.eps.unwrap_or(0.0) + w * m.eps.unwrap_or(0.0));
    }
    out
}

/// One unit of parallel work.
pub struct WorkItem<'a> {
    pub pool: &'a Pool,
    pub key: StreamKey<'a>,
    pub n: usize,
}

/// Run work items in parallel (rayon); the output order is the input order
/// and every number is independent of the thread count.
pub fn run_items(items: &[WorkItem], cfg: &EngineConfig) -> Vec<Vec<Metrics>> {
    items
        .par_iter()
        .map(|w| run_item(w.pool, w.n, &w.key, cfg))
        .collect()
}
