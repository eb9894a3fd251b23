//! The engine's fast paths against a straightforward implementation kept
//! here as the oracle: the same random streams (batches — PCG64 words cut in
//! 32-bit halves, drawn from by rand's `random_range` — and mechanism coins),
//! λ̂ by sorting batch A, each λ̃ node walked on its own with the log-space
//! acceptance `PrivItpAcceptance::prob` and the log-space accountant
//! `Phase2Terms::new`, softmax recomputed per batch. Every metric must agree
//! to ≤ 1e-12 relative (1e-15 absolute near 0) on pools with ties, n = 1 and
//! n = N, edge σ and β, clamped λ̃, shared batches, sampling without
//! replacement, an explicit σ_X/σ_Z split, nodes with βM ≤ 0, and equal node
//! weights (under Gauss–Hermite weights the outer nodes' errors hide).

use privalign::math::quadrature::gauss_hermite_normal;
use privalign::privacy::accountant::{Phase2Terms, privbon_gumbel_eps};
use privalign::select::itp::{ItpAcceptance, PrivItpAcceptance};
use privalign::select::lambda::solve_lambda;
use privalign::select::pool::{Pool, Values};
use privalign::select::privbon::softmax_weights;
use privalign::select::rejection::{RejectionOutcome, rejection_conditional, rejection_sampled};
use privalign::sweep::engine::*;
use privalign::sweep::seed::{StreamKey, StreamUse};
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;
use rand_pcg::Pcg64;

mod oracle {
    use super::*;
    use std::collections::VecDeque;
    use std::convert::Infallible;

    /// The batch streams' words: the PCG64 stream's 64-bit outputs cut in
    /// two 32-bit words, low half first (a queue of halves), for rand's own
    /// `random_range`.
    struct Halves(Pcg64, VecDeque<u32>);

    impl rand::TryRng for Halves {
        type Error = Infallible;
        fn try_next_u32(&mut self) -> Result<u32, Infallible> {
            if self.1.is_empty() {
                let w = rand::Rng::next_u64(&mut self.0);
                self.1.extend([w as u32, (w >> 32) as u32]);
            }
            Ok(self.1.pop_front().expect("a half"))
        }
        fn try_next_u64(&mut self) -> Result<u64, Infallible> {
            let lo = u64::from(self.try_next_u32()?);
            Ok(lo | (u64::from(self.try_next_u32()?) << 32))
        }
        fn try_fill_bytes(&mut self, _: &mut [u8]) -> Result<(), Infallible> {
            unreachable!("random_range reads words")
        }
    }

    struct Drawer {
        rng: Halves,
        without: bool,
        perm: Vec<usize>,
        drawn: usize,
    }

    impl Drawer {
        fn new(rng: Pcg64, pool: usize, sampling: Sampling) -> Self {
            let without = sampling == Sampling::WithoutReplacement;
            Self {
                rng: Halves(rng, VecDeque::new()),
                without,
                perm: (0..if without { pool } else { 0 }).collect(),
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

    fn clamp_lambda(l: f64, clamp: Option<(f64, f64)>) -> f64 {
        clamp.map_or(l, |(lo, hi)| l.clamp(lo, hi))
    }

    /// Straightforward run of one (prompt, n).
    pub fn run_item(
        pool: &Pool,
        n: usize,
        key: &StreamKey,
        cfg: &EngineConfig,
        nodes: &[(f64, f64)],
    ) -> Vec<Metrics> {
        let size = pool.len();
        let mut sums = vec![Metrics::default(); cfg.algorithms.len()];
        for rep in 0..cfg.replicates {
            let mut da = Drawer::new(key.rng(rep, StreamUse::BatchA), size, cfg.sampling);
            let batch_a: Vec<usize> = (0..n).map(|_| da.next(size)).collect();
            let rewards: Vec<f64> = batch_a.iter().map(|&i| pool.proxy(i)).collect();
            let mut batch_b = LazyBatch {
                drawer: Drawer::new(key.rng(rep, StreamUse::BatchB), size, cfg.sampling),
                items: Vec::new(),
            };
            for (k, alg) in cfg.algorithms.iter().enumerate() {
                let mut coins = key.rng(rep, StreamUse::Mechanism(mechanism_stream(alg)));
                let m = match *alg {
                    Algorithm::Bon => {
                        let best = rewards.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                        let tied: Vec<usize> = batch_a
                            .iter()
                            .copied()
                            .filter(|&i| pool.proxy(i) == best)
                            .collect();
                        let values = match cfg.estimator {
                            Estimator::Conditional => {
                                let mut v = Values::default();
                                for &i in &tied {
                                    v.add_scaled(&pool.values[i], 1.0 / tied.len() as f64);
                                }
                                v
                            }
                            Estimator::Sampled => {
                                pool.values[tied[coins.random_range(0..tied.len())]]
                            }
                        };
                        Metrics {
                            values,
                            halting_time: None,
                            generations: n as f64,
                            eps: None,
                        }
                    }
                    Algorithm::PrivBon { sigma } => {
                        let mut w = Vec::new();
                        softmax_weights(pool, &batch_a, sigma, &mut w);
                        let values = match cfg.estimator {
                            Estimator::Conditional => {
                                let mut v = Values::default();
                                for (&i, &wi) in batch_a.iter().zip(&w) {
                                    v.add_scaled(&pool.values[i], wi);
                                }
                                v
                            }
                            Estimator::Sampled => {
                                // Inverse CDF of the softmax with one uniform.
                                let target = coins.random::<f64>();
                                let mut cum = 0.0;
                                let mut pick = n - 1;
                                for (j, &wi) in w.iter().enumerate() {
                                    cum += wi;
                                    if cum > target {
                                        pick = j;
                                        break;
                                    }
                                }
                                pool.values[batch_a[pick]]
                            }
                        };
                        Metrics {
                            values,
                            halting_time: None,
                            generations: n as f64,
                            eps: Some(privbon_gumbel_eps(cfg.privacy.delta_r, sigma)),
                        }
                    }
                    Algorithm::PrivBonGauss { .. } => unreachable!("not in these tests"),
                    Algorithm::Itp { beta, batches } => {
                        let lam = solve_lambda(&rewards, beta);
                        let acc = ItpAcceptance::new(lam, beta, cfg.privacy.r_max);
                        phase2(
                            pool,
                            n,
                            batches,
                            &batch_a,
                            &mut batch_b,
                            cfg.estimator,
                            &mut coins,
                            |i| acc.prob(pool.proxy(i)),
                            |r, c| c.random::<f64>() < acc.prob(r),
                        )
                        .0
                    }
                    Algorithm::PrivItp(p) => {
                        let lam = solve_lambda(&rewards, p.beta);
                        let eps1 = cfg.privacy.phase1_eps(p.sigma_x);
                        privitp(
                            pool,
                            n,
                            &p,
                            lam,
                            eps1,
                            nodes,
                            &batch_a,
                            &mut batch_b,
                            cfg,
                            &mut coins,
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
        match estimator {
            Estimator::Conditional => {
                let o = rejection_conditional(pool, n, &mut next, &mut prob);
                let gens = n as f64 + if fresh { o.phase2_generated } else { 0.0 };
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
                let (sel, th) = rejection_sampled(
                    n,
                    coins,
                    &mut next,
                    |i, c| coin(pool.proxy(i), c),
                    |c| c.random_range(0..size),
                );
                let gens = n as f64 + if fresh { th.min(n) as f64 } else { 0.0 };
                let acc = th <= n;
                let o = RejectionOutcome {
                    halting_time: th as f64,
                    accepted: f64::from(u8::from(acc)),
                    fallback: f64::from(u8::from(!acc)),
                    rejections_before_accept: if acc { (th - 1) as f64 } else { 0.0 },
                    ..Default::default()
                };
                (
                    Metrics {
                        values: pool.values[sel],
                        halting_time: Some(th as f64),
                        generations: gens,
                        eps: None,
                    },
                    o,
                )
            }
        }
    }

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
    ) -> Metrics {
        let pr = &cfg.privacy;
        let one = |lt: f64, batch_b: &mut LazyBatch, coins: &mut Pcg64| -> Metrics {
            let acc = PrivItpAcceptance::new(lt, p.sigma_z, pr.r_max, p.l);
            let (mut m, o) = phase2(
                pool,
                n,
                p.batches,
                batch_a,
                batch_b,
                cfg.estimator,
                coins,
                |i| acc.prob(pool.proxy(i)),
                |r, c| {
                    let z: f64 = c.sample(StandardNormal);
                    let u: f64 = c.random::<f64>();
                    acc.coin(r + p.sigma_z * z, u)
                },
            );
            let terms = Phase2Terms::new(lt, p.sigma_z, pr.r_max, pr.delta_r, p.l);
            m.eps = Some(
                eps1 + terms.expected_eps_post(
                    o.rejections_before_accept,
                    o.accepted,
                    o.fallback,
                    n,
                ),
            );
            m
        };
        if cfg.estimator == Estimator::Sampled || nodes.is_empty() {
            let z: f64 = coins.sample(StandardNormal);
            return one(
                clamp_lambda(lambda + p.sigma_x * z, p.clamp),
                batch_b,
                coins,
            );
        }
        let mut out = Metrics {
            halting_time: Some(0.0),
            eps: Some(0.0),
            ..Default::default()
        };
        for &(x, w) in nodes {
            let m = one(
                clamp_lambda(lambda + p.sigma_x * x, p.clamp),
                batch_b,
                coins,
            );
            out.values.add_scaled(&m.values, w);
            out.generations += w * m.generations;
            out.halting_time = Some(out.halting_time.unwrap() + w * m.halting_time.unwrap());
            out.eps = Some(out.eps.unwrap() + w * m.eps.unwrap());
        }
        out
    }
}

fn key<'a>(prompt: &'a str, n: usize) -> StreamKey<'a> {
    StreamKey {
        seed: 3,
        dataset: "oracle",
        reward_model: "rm",
        prompt_id: prompt,
        n,
    }
}

/// A pool on [0, 1] with many ties (a coarse grid), binary correctness.
fn pool(size: usize, levels: u32, seed: u64) -> Pool {
    let mut rng = Pcg64::seed_from_u64(seed);
    let proxy: Vec<f64> = (0..size)
        .map(|_| f64::from(rng.random_range(0..=levels)) / f64::from(levels))
        .collect();
    let gold: Vec<f64> = proxy
        .iter()
        .map(|&r| f64::from(u8::from(rng.random::<f64>() < 0.2 + 0.6 * r)))
        .collect();
    Pool::new(&proxy, &gold)
}

fn close(what: &str, fast: f64, slow: f64) {
    assert!(
        (fast - slow).abs() <= 1e-12 * slow.abs() || (fast - slow).abs() <= 1e-15,
        "{what}: fast {fast:e} vs oracle {slow:e} (diff {:e})",
        fast - slow
    );
}

fn compare(label: &str, pool: &Pool, n: usize, cfg: &EngineConfig, nodes: &[(f64, f64)]) {
    let plan = Plan::with_nodes(cfg, nodes.to_vec());
    let k = key(label, n);
    let fast = run_item_with(&plan, pool, n, &k);
    let slow = oracle::run_item(pool, n, &k, cfg, &plan.nodes);
    for ((a, f), s) in cfg.algorithms.iter().zip(&fast).zip(&slow) {
        let w = format!("{label} n={n} {a:?}");
        close(&format!("{w} gold"), f.values.gold, s.values.gold);
        close(&format!("{w} proxy"), f.values.proxy, s.values.proxy);
        close(
            &format!("{w} win_gold"),
            f.values.win_gold,
            s.values.win_gold,
        );
        close(
            &format!("{w} win_proxy"),
            f.values.win_proxy,
            s.values.win_proxy,
        );
        close(&format!("{w} generations"), f.generations, s.generations);
        assert_eq!(f.halting_time.is_some(), s.halting_time.is_some(), "{w}");
        if let (Some(x), Some(y)) = (f.halting_time, s.halting_time) {
            close(&format!("{w} halting"), x, y);
        }
        assert_eq!(f.eps.is_some(), s.eps.is_some(), "{w}");
        if let (Some(x), Some(y)) = (f.eps, s.eps) {
            close(&format!("{w} eps"), x, y);
        }
    }
}

fn algorithms(sigma: f64, beta: f64) -> Vec<Algorithm> {
    vec![
        Algorithm::Bon,
        Algorithm::PrivBon { sigma },
        Algorithm::Itp {
            beta,
            batches: Batches::Fresh,
        },
        Algorithm::PrivItp(PrivItpParams::split_half(sigma, beta)),
    ]
}

fn equal_weights(k: usize) -> Vec<(f64, f64)> {
    gauss_hermite_normal(k)
        .into_iter()
        .map(|(x, _)| (x, 1.0 / k as f64))
        .collect()
}

#[test]
fn conditional_fast_paths_match_the_oracle() {
    let gh = gauss_hermite_normal(16);
    for (pi, (size, levels)) in [(40usize, 4u32), (200, 20), (7, 1000)]
        .into_iter()
        .enumerate()
    {
        let p = pool(size, levels, pi as u64);
        for &(sigma, beta) in &[(0.25, 0.05), (0.02, 0.001), (2.0, 0.5), (0.25, 5.0)] {
            let cfg = EngineConfig::new(algorithms(sigma, beta), 3, Estimator::Conditional);
            for n in [1usize, 2, 5, size, 3 * size] {
                compare(&format!("p{pi} s{sigma} b{beta}"), &p, n, &cfg, &gh);
                compare(
                    &format!("eq p{pi} s{sigma} b{beta}"),
                    &p,
                    n,
                    &cfg,
                    &equal_weights(16),
                );
            }
        }
    }
}

#[test]
fn variants_match_the_oracle() {
    let p = pool(60, 10, 9);
    let gh = gauss_hermite_normal(16);
    let eq = equal_weights(12);
    // Explicit split, shared batches, large L, and σ_X ≫ σ_Z (many βM ≤ 0 nodes).
    let split = |sx: f64, sz: f64, batches| {
        Algorithm::PrivItp(PrivItpParams {
            sigma_x: sx,
            sigma_z: sz,
            beta: 0.05,
            l: 4.0,
            clamp: None,
            batches,
        })
    };
    let algs = vec![
        split(0.4, 0.05, Batches::Fresh),
        split(0.05, 0.4, Batches::Fresh),
        split(0.125, 0.125, Batches::Shared),
        split(2.0, 0.01, Batches::Fresh),
        Algorithm::Itp {
            beta: 0.05,
            batches: Batches::Shared,
        },
        // Clamped λ̃ (as FSRC runs it): the general path.
        Algorithm::PrivItp(PrivItpParams {
            clamp: Some((0.0, 1.0)),
            ..PrivItpParams::split_half(0.5, 0.05)
        }),
    ];
    for sampling in [Sampling::WithReplacement, Sampling::WithoutReplacement] {
        let mut cfg = EngineConfig::new(algs.clone(), 4, Estimator::Conditional);
        cfg.sampling = sampling;
        for n in [1usize, 3, 17, 60] {
            compare(&format!("{sampling:?}"), &p, n, &cfg, &gh);
            compare(&format!("eq {sampling:?}"), &p, n, &cfg, &eq);
        }
    }
}

#[test]
fn sampled_and_single_lambda_paths_match_the_oracle() {
    let p = pool(50, 8, 4);
    for estimator in [Estimator::Sampled, Estimator::Conditional] {
        let mut cfg = EngineConfig::new(algorithms(0.25, 0.05), 5, estimator);
        cfg.lambda_noise = LambdaNoise::Sampled;
        for n in [1usize, 4, 50, 200] {
            compare(&format!("{estimator:?}"), &p, n, &cfg, &[]);
        }
    }
}

/// The comparison has power: a kernel whose nodes were shifted by one ulp of
/// λ would pass, but one that dropped a node's weight, or used the pool's
/// mean for the wrong node, does not. Here: an oracle run with one node's
/// weight moved to its neighbour differs beyond the tolerance.
#[test]
fn the_oracle_comparison_detects_a_wrong_node_weight() {
    let p = pool(40, 4, 0);
    let cfg = EngineConfig::new(
        vec![Algorithm::PrivItp(PrivItpParams::split_half(0.25, 0.05))],
        3,
        Estimator::Conditional,
    );
    let eq = equal_weights(16);
    let mut broken = eq.clone();
    broken[15].1 = 0.0;
    broken[14].1 = 2.0 / 16.0;
    let plan = Plan::with_nodes(&cfg, eq);
    let k = key("power", 64);
    let fast = run_item_with(&plan, &p, 64, &k);
    let slow = oracle::run_item(&p, 64, &k, &cfg, &broken);
    let rel = ((fast[0].eps.unwrap() - slow[0].eps.unwrap()) / slow[0].eps.unwrap()).abs();
    assert!(rel > 1e-9, "a moved node weight went unnoticed ({rel:e})");
}

/// Every instruction set the CPU offers gives the same bits (the walk's
/// variants are forced one by one through the plan): results must not
/// depend on which node of a cluster computed them. Covers walks that cross
/// the survival cut-off mid-block, 12 nodes (padding lanes), βM ≤ 0 nodes
/// and shared batches.
#[test]
fn every_simd_level_gives_the_same_bits() {
    use privalign::sweep::engine::lockstep::SimdLevel;
    let levels = SimdLevel::available();
    eprintln!("SIMD levels on this CPU: {levels:?}");
    let split = |sx: f64, sz: f64, batches| {
        Algorithm::PrivItp(PrivItpParams {
            sigma_x: sx,
            sigma_z: sz,
            beta: 0.05,
            l: 4.0,
            clamp: None,
            batches,
        })
    };
    let mut algs = algorithms(0.25, 0.05);
    algs.push(split(2.0, 0.01, Batches::Fresh));
    algs.push(split(0.125, 0.125, Batches::Shared));
    let cfg = EngineConfig::new(algs, 3, Estimator::Conditional);
    for (pi, (size, levels_of_pool)) in [(200usize, 20u32), (1000, 1000)].into_iter().enumerate() {
        let p = pool(size, levels_of_pool, 40 + pi as u64);
        for nodes in [gauss_hermite_normal(16), equal_weights(12)] {
            for n in [1usize, 31, 33, 100, 700] {
                let k = key("simd", n);
                let mut plan = Plan::with_nodes(&cfg, nodes.clone());
                plan.simd = SimdLevel::Baseline;
                let want = run_item_with(&plan, &p, n, &k);
                for &level in &levels {
                    plan.simd = level;
                    let got = run_item_with(&plan, &p, n, &k);
                    for (a, (g, w)) in got.iter().zip(&want).enumerate() {
                        let bits = |m: &privalign::sweep::engine::Metrics| {
                            [
                                m.values.gold,
                                m.values.proxy,
                                m.values.win_gold,
                                m.values.win_proxy,
                                m.generations,
                                m.halting_time.unwrap_or(-1.0),
                                m.eps.unwrap_or(-1.0),
                            ]
                            .map(f64::to_bits)
                        };
                        assert_eq!(bits(g), bits(w), "{level:?} pool {pi} n={n} algorithm {a}");
                    }
                }
            }
        }
    }
}
