//! One (prompt, n): every replicate of every algorithm on shared batches.
//!
//! Per replicate: batch A is drawn once and gathered into a contiguous array
//! of rewards (BoN, PrivBoN and Phase 1 read it); λ̂ is solved once per
//! distinct β ([`solve_lambda_newton_from`], started from the previous
//! replicate's λ̂); batch B is drawn lazily and shared by
//! every ITP/PrivITP setting. The replicate's generator state (one SHA-256 of
//! the stream key) is computed once and every use's stream derived from it.

use rand::RngExt;
use rand_distr::StandardNormal;
use rand_pcg::Pcg64;

use super::draw::{Candidates, Drawer, LazyBatch};
use super::lockstep::{LaneScratch, privitp_lockstep};
use super::pcg::Pcg64Words;
use super::phase2::phase2;
use super::prep::PoolPrep;
use super::{Algorithm, Batches, Estimator, Metrics, Plan, PrivItpParams};
use crate::privacy::accountant::{Phase2Terms, privbon_gumbel_eps};
use crate::select::itp::{ItpAcceptance, PrivItpAcceptance};
use crate::select::lambda::solve_lambda_newton_from;
use crate::select::pool::{Pool, Values};
use crate::select::privbon::{privbon_gauss_sampled, softmax_weights_of};
use crate::select::reference_scripts::{Conventions, Fallback};
use crate::sweep::conventions::recredit;
use crate::sweep::seed::{StreamKey, StreamUse};

/// Buffers reused across the n values and replicates of one prompt.
#[derive(Default)]
pub(crate) struct Scratch {
    batch_a: Vec<usize>,
    rewards_a: Vec<f64>,
    sorted_a: Vec<f64>,
    weights: Vec<f64>,
    batch_b: Vec<usize>,
    lambdas: Vec<Option<f64>>,
    /// Per β: the previous replicate's λ̂ (same n), Newton's starting guess.
    lambda_guess: Vec<Option<f64>>,
    lanes: LaneScratch,
    memo: Vec<(u32, f64)>,
    memo_stamp: u32,
}

pub(crate) fn run_n(
    plan: &Plan,
    pool: &Pool,
    prep: &PoolPrep,
    n: usize,
    key: &StreamKey,
    s: &mut Scratch,
) -> Vec<Metrics> {
    let cfg = &plan.cfg;
    let size = pool.len();
    assert!(n >= 1, "n must be at least 1");
    assert!(
        cfg.sampling == super::Sampling::WithReplacement || n <= size,
        "without replacement needs n ≤ pool size"
    );
    let mut sums = vec![Metrics::default(); cfg.algorithms.len()];
    s.lambda_guess.clear();
    s.lambda_guess.resize(plan.betas.len(), None);
    let states = key.replicate_states();
    for rep in 0..cfg.replicates {
        let state = states.state(rep);
        let drawer = |batch: StreamUse| {
            Drawer::new(
                Pcg64Words::new(state, batch.stream()),
                size,
                cfg.sampling,
                plan.simd,
            )
        };
        let mut da = drawer(StreamUse::BatchA);
        s.batch_a.resize(n, 0);
        s.rewards_a.resize(n, 0.0);
        // BoN's maximum is tracked while drawing: the draws' latency hides it.
        let mut top = TopTracker::new();
        da.fill(size, &mut s.batch_a);
        for (t, (&i, ri)) in s.batch_a.iter().zip(s.rewards_a.iter_mut()).enumerate() {
            let r = prep.proxy[i];
            *ri = r;
            top.push(r, t);
        }
        let mut batch_b = LazyBatch::new(
            drawer(StreamUse::BatchB),
            std::mem::take(&mut s.batch_b),
            size,
            n,
        );
        s.lambdas.clear();
        s.lambdas.resize(plan.betas.len(), None);
        for (k, alg) in cfg.algorithms.iter().enumerate() {
            let coins = || key.rng_from(state, StreamUse::Mechanism(plan.streams[k]));
            let lambda = plan.beta_slot[k].map(|slot| {
                *s.lambdas[slot].get_or_insert_with(|| {
                    let l = solve_lambda_newton_from(
                        &s.rewards_a,
                        plan.betas[slot],
                        s.lambda_guess[slot],
                    );
                    s.lambda_guess[slot] = Some(l);
                    l
                })
            });
            // The reference scripts' conventions (`sweep::conventions`), when configured.
            let conv = if cfg.conventions == Conventions::default() {
                None
            } else {
                s.sorted_a.clear();
                s.sorted_a.extend_from_slice(&s.rewards_a);
                s.sorted_a.sort_unstable_by(|a, b| b.total_cmp(a));
                let mut b = |t: usize| batch_b.get(t);
                crate::sweep::conventions::run(
                    alg,
                    &cfg.conventions,
                    &mut crate::sweep::conventions::Replicate {
                        pool,
                        n,
                        batch_a: &s.batch_a,
                        sorted_a: &s.sorted_a,
                        batch_b: &mut b,
                        estimator: cfg.estimator,
                        r_max: cfg.privacy.r_max,
                        dataset_base: cfg.dataset_base,
                    },
                    &mut coins(),
                )
            };
            let m = match *alg {
                _ if conv.is_some() => conv.unwrap_or_default(),
                Algorithm::Bon => bon(pool, &s.batch_a, &s.rewards_a, top, cfg.estimator, coins),
                Algorithm::PrivBon { sigma } => Metrics {
                    values: privbon(pool, prep, k, sigma, s, cfg.estimator, coins),
                    halting_time: None,
                    generations: n as f64,
                    eps: Some(privbon_gumbel_eps(cfg.privacy.delta_r, sigma)),
                },
                Algorithm::PrivBonGauss { sigma } => Metrics {
                    values: pool.values
                        [s.batch_a[privbon_gauss_sampled(pool, &s.batch_a, sigma, &mut coins())]],
                    halting_time: None,
                    generations: n as f64,
                    eps: None,
                },
                Algorithm::Itp { beta, batches } => {
                    let acc =
                        ItpAcceptance::new(lambda.unwrap_or_default(), beta, cfg.privacy.r_max);
                    let mut cand = candidates(batches, &mut batch_b, &s.batch_a);
                    let (mut m, o) = phase2(
                        pool,
                        prep,
                        n,
                        batches,
                        &mut cand,
                        cfg.estimator,
                        &mut coins(),
                        |i| acc.prob(prep.proxy[i]),
                        |r, c| c.random::<f64>() < acc.prob(r),
                    );
                    if cfg.conventions.itp.fallback == Fallback::DatasetBase {
                        recredit(&mut m.values, &o, pool, &cfg.dataset_base, cfg.estimator);
                    }
                    m
                }
                Algorithm::PrivItp(p) => {
                    let lam = lambda.unwrap_or_default();
                    let pp = plan.privitp[k].as_ref().expect("PrivITP plan");
                    let dataset_base = cfg.conventions.privitp.fallback == Fallback::DatasetBase;
                    match (&pp.table, &pp.eps_terms, prep.privitp_items[k].as_ref()) {
                        (Some(table), Some(eps), Some(items)) if !dataset_base => {
                            let mut cand = candidates(p.batches, &mut batch_b, &s.batch_a);
                            privitp_lockstep(
                                plan,
                                pool,
                                items,
                                table,
                                &p,
                                lam,
                                pp.eps1,
                                eps,
                                n,
                                &mut cand,
                                &mut s.lanes,
                            )
                        }
                        _ => privitp_general(
                            plan,
                            pool,
                            prep,
                            n,
                            &p,
                            lam,
                            pp.eps1,
                            &mut batch_b,
                            &s.batch_a,
                            coins,
                            (&mut s.memo, &mut s.memo_stamp),
                        ),
                    }
                }
            };
            let acc = &mut sums[k];
            acc.values.add_scaled(&m.values, 1.0);
            acc.generations += m.generations;
            acc.halting_time = m.halting_time.map(|h| acc.halting_time.unwrap_or(0.0) + h);
            acc.eps = m.eps.map(|e| acc.eps.unwrap_or(0.0) + e);
        }
        s.batch_b = batch_b.into_scratch();
    }
    let r = cfg.replicates as f64;
    sums.iter()
        .map(|m| Metrics {
            values: m.values.scaled(1.0 / r),
            halting_time: m.halting_time.map(|h| h / r),
            generations: m.generations / r,
            eps: m.eps.map(|e| e / r),
        })
        .collect()
}

fn candidates<'a>(
    batches: Batches,
    batch_b: &'a mut LazyBatch,
    batch_a: &'a [usize],
) -> Candidates<'a> {
    match batches {
        Batches::Fresh => Candidates::Fresh(batch_b),
        Batches::Shared => Candidates::Shared(batch_a),
    }
}

/// BoN: the largest r̂; tied candidates share the selection equally
/// (conditional) or one is picked uniformly (sampled).
fn bon(
    pool: &Pool,
    batch: &[usize],
    rewards: &[f64],
    top: TopTracker,
    estimator: Estimator,
    coins: impl FnOnce() -> Pcg64,
) -> Metrics {
    let TopTracker { best, ties, first } = top;
    let tied = || {
        batch
            .iter()
            .zip(rewards)
            .filter(|&(_, &r)| r == best)
            .map(|(&i, _)| i)
    };
    let values = match estimator {
        Estimator::Conditional => {
            let mut v = Values::default();
            let w = 1.0 / ties as f64;
            if ties == 1 {
                v.add_scaled(&pool.values[batch[first]], w);
            } else {
                for i in tied() {
                    v.add_scaled(&pool.values[i], w);
                }
            }
            v
        }
        Estimator::Sampled => {
            let pick = coins().random_range(0..ties);
            pool.values[tied().nth(pick).expect("a tied candidate")]
        }
    };
    Metrics {
        values,
        halting_time: None,
        generations: batch.len() as f64,
        eps: None,
    }
}

/// The largest reward of a batch, how many candidates have it, and the
/// first position holding it, updated one draw at a time (exact: a maximum
/// and a count do not depend on how they are taken; the branches are taken
/// O(log n) times in a batch of distinct values).
#[derive(Clone, Copy, Debug, PartialEq)]
struct TopTracker {
    best: f64,
    ties: usize,
    first: usize,
}

impl TopTracker {
    fn new() -> Self {
        Self {
            best: f64::NEG_INFINITY,
            ties: 0,
            first: usize::MAX,
        }
    }

    #[inline(always)]
    fn push(&mut self, r: f64, t: usize) {
        if r > self.best {
            *self = Self {
                best: r,
                ties: 1,
                first: t,
            };
        } else if r == self.best {
            self.ties += 1;
        }
    }
}

/// Gumbel PrivBoN (the exponential mechanism, `thm:gumbel_priv`): the
/// selection law is softmax(r̂/σ) over the batch. Conditional: its
/// expectation. Sampled: one uniform against the cumulative softmax — the
/// same law as the Gumbel-max draw ([`crate::select::privbon::privbon_gumbel_sampled`],
/// kept as the literal mechanism for the audit) with one draw per
/// replicate instead of one Gumbel (two logarithms) per candidate.
fn privbon(
    pool: &Pool,
    prep: &PoolPrep,
    k: usize,
    sigma: f64,
    s: &mut Scratch,
    estimator: Estimator,
    coins: impl FnOnce() -> Pcg64,
) -> Values {
    if let (Some(e), Estimator::Conditional) = (&prep.privbon_weights[k], estimator) {
        // One pass: Σ e_i·v_i and Σ e_i over the batch, candidate j into
        // accumulator j mod 4 (four independent add chains), then
        // (a₀ + a₁) + (a₂ + a₃).
        let mut v = [Values::default(); 4];
        let mut total = [0.0; 4];
        let quads = s.batch_a.chunks_exact(4);
        let rest = quads.remainder();
        for q in quads {
            for l in 0..4 {
                let w = e[q[l]];
                total[l] += w;
                v[l].add_scaled(&pool.values[q[l]], w);
            }
        }
        for (l, &i) in rest.iter().enumerate() {
            let w = e[i];
            total[l] += w;
            v[l].add_scaled(&pool.values[i], w);
        }
        let mut sum = v[0];
        sum.add_scaled(&v[1], 1.0);
        let mut hi = v[2];
        hi.add_scaled(&v[3], 1.0);
        sum.add_scaled(&hi, 1.0);
        let total = (total[0] + total[1]) + (total[2] + total[3]);
        return sum.scaled(1.0 / total);
    }
    let weights: &[f64] = match &prep.privbon_weights[k] {
        Some(e) => {
            s.weights.clear();
            s.weights.extend(s.batch_a.iter().map(|&i| e[i]));
            &s.weights
        }
        None => {
            softmax_weights_of(&s.rewards_a, sigma, &mut s.weights);
            &s.weights
        }
    };
    let total: f64 = weights.iter().sum();
    match estimator {
        Estimator::Conditional => {
            let mut v = Values::default();
            for (&i, &w) in s.batch_a.iter().zip(weights) {
                v.add_scaled(&pool.values[i], w);
            }
            v.scaled(1.0 / total)
        }
        Estimator::Sampled => {
            let target = coins().random::<f64>() * total;
            let mut cum = 0.0;
            let mut pick = s.batch_a.len() - 1;
            for (j, &w) in weights.iter().enumerate() {
                cum += w;
                if cum > target {
                    pick = j;
                    break;
                }
            }
            pool.values[s.batch_a[pick]]
        }
    }
}

fn clamp_lambda(l: f64, clamp: Option<(f64, f64)>) -> f64 {
    match clamp {
        Some((lo, hi)) => l.clamp(lo, hi),
        None => l,
    }
}

/// PrivITP outside the lockstep walk: the sampled estimator (literal coins),
/// one sampled λ̃ (`lambda_nodes: 0`), or a clamped λ̃ (FSRC), where the
/// node-shifted table does not apply. Each λ̃ walks Phase 2 with the exact
/// acceptance, memoised per pool item (bootstrap batches revisit items).
#[allow(clippy::too_many_arguments)]
fn privitp_general(
    plan: &Plan,
    pool: &Pool,
    prep: &PoolPrep,
    n: usize,
    p: &PrivItpParams,
    lambda: f64,
    eps1: f64,
    batch_b: &mut LazyBatch,
    batch_a: &[usize],
    coins: impl FnOnce() -> Pcg64,
    memo: (&mut Vec<(u32, f64)>, &mut u32),
) -> Metrics {
    let cfg = &plan.cfg;
    let pr = &cfg.privacy;
    let (memo, stamp) = memo;
    if memo.len() != pool.len() {
        memo.clear();
        memo.resize(pool.len(), (0, 0.0));
        *stamp = 0;
    }
    let mut rng = coins();
    let mut one = |lt: f64, rng: &mut Pcg64| -> Metrics {
        let acc = PrivItpAcceptance::new(lt, p.sigma_z, pr.r_max, p.l);
        *stamp = stamp.wrapping_add(1);
        if *stamp == 0 {
            memo.fill((0, 0.0));
            *stamp = 1;
        }
        let st = *stamp;
        let mut cand = candidates(p.batches, batch_b, batch_a);
        let (mut m, o) = phase2(
            pool,
            prep,
            n,
            p.batches,
            &mut cand,
            cfg.estimator,
            rng,
            |i| {
                let e = &mut memo[i];
                if e.0 != st {
                    *e = (st, acc.prob(prep.proxy[i]));
                }
                e.1
            },
            |r, c| {
                let z: f64 = c.sample(StandardNormal);
                let u: f64 = c.random::<f64>();
                acc.coin(r + p.sigma_z * z, u)
            },
        );
        if cfg.conventions.privitp.fallback == Fallback::DatasetBase {
            recredit(&mut m.values, &o, pool, &cfg.dataset_base, cfg.estimator);
        }
        let terms = Phase2Terms::new(lt, p.sigma_z, pr.r_max, pr.delta_r, p.l);
        m.eps = Some(
            eps1 + terms.expected_eps_post(o.rejections_before_accept, o.accepted, o.fallback, n),
        );
        m
    };
    if plan.nodes.is_empty() {
        let z: f64 = rng.sample(StandardNormal);
        let lt = clamp_lambda(lambda + p.sigma_x * z, p.clamp);
        return one(lt, &mut rng);
    }
    let mut out = Metrics {
        halting_time: Some(0.0),
        eps: Some(0.0),
        ..Default::default()
    };
    for &(x, w) in &plan.nodes {
        let lt = clamp_lambda(lambda + p.sigma_x * x, p.clamp);
        let m = one(lt, &mut rng);
        out.values.add_scaled(&m.values, w);
        out.generations += w * m.generations;
        out.halting_time =
            Some(out.halting_time.unwrap_or(0.0) + w * m.halting_time.unwrap_or(0.0));
        out.eps = Some(out.eps.unwrap_or(0.0) + w * m.eps.unwrap_or(0.0));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::TopTracker;
    use rand::{RngExt, SeedableRng};

    fn max_and_ties(r: &[f64]) -> (f64, usize, usize) {
        let mut t = TopTracker::new();
        for (i, &x) in r.iter().enumerate() {
            t.push(x, i);
        }
        (t.best, t.ties, t.first)
    }

    /// Against the straightforward fold, count and position.
    #[test]
    fn max_and_ties_match_brute_force() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(5);
        for n in [1usize, 2, 7, 8, 9, 17, 100, 1000] {
            for levels in [1u32, 3, 50, 100_000] {
                let r: Vec<f64> = (0..n)
                    .map(|_| f64::from(rng.random_range(0..=levels)) / f64::from(levels))
                    .collect();
                let best = r.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let ties = r.iter().filter(|&&x| x == best).count();
                let first = r.iter().position(|&x| x == best).unwrap();
                assert_eq!(
                    max_and_ties(&r),
                    (best, ties, first),
                    "n={n} levels={levels}"
                );
            }
        }
    }
}
