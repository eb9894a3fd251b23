//! Phase 2 of ITP and PrivITP: sequential rejection sampling over batch B,
//! returning the first accepted candidate, or a fresh pool draw (fallback)
//! when all n are rejected.
//!
//! The conditional estimator walks B with the survival probability
//! S_i = Π_{j<i}(1 − a_j): candidate i is returned with probability S_i·a_i,
//! the fallback with S_{n+1}. Phase 2 is consumed lazily — batch B is drawn on
//! demand and the walk stops once S_i < [`SURVIVAL_EPS`], where the remaining
//! mass is negligible — so an informative reward model touches O(1)
//! candidates rather than n (paper, "Wall-clock overhead").

use super::pool::{Pool, Values};

/// Survival probability below which the rest of Phase 2 is ignored (its
/// contribution to any metric in [0, max|value|] is below this times the range).
pub const SURVIVAL_EPS: f64 = 1e-15;

/// Expected outcome of Phase 2 given everything but the acceptance coins.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RejectionOutcome {
    /// E[values(returned response)], fallback included.
    pub values: Values,
    /// E[t], t ∈ {1, …, n+1} (n+1 = fallback).
    pub halting_time: f64,
    /// E[min(t, n)]: Phase-2 responses generated with lazy generation.
    pub phase2_generated: f64,
    /// P(all n rejected).
    pub fallback: f64,
    /// E[(t − 1)·1{t ≤ n}]: rejections before an acceptance (for ε_2^post).
    pub rejections_before_accept: f64,
    /// P(t ≤ n).
    pub accepted: f64,
}

/// Walk Phase 2. `next_candidate()` yields batch B's pool indices in order
/// (drawn lazily); `accept(i)` is the acceptance probability of pool item i.
pub fn rejection_conditional(
    pool: &Pool,
    n: usize,
    next_candidate: impl FnMut() -> usize,
    accept: impl FnMut(usize) -> f64,
) -> RejectionOutcome {
    rejection_conditional_visit(pool, n, next_candidate, accept, |_, _| {})
}

/// [`rejection_conditional`], also reporting the halting law: `visit(t, p)`
/// is called with P(halting at t) for each t walked, and for t = n + 1
/// (fallback) at the end.
pub fn rejection_conditional_visit(
    pool: &Pool,
    n: usize,
    mut next_candidate: impl FnMut() -> usize,
    mut accept: impl FnMut(usize) -> f64,
    mut visit: impl FnMut(usize, f64),
) -> RejectionOutcome {
    let mut out = RejectionOutcome::default();
    let mut survival = 1.0;
    for t in 1..=n {
        let i = next_candidate();
        let a = accept(i).clamp(0.0, 1.0);
        let p = survival * a;
        visit(t, p);
        out.values.add_scaled(&pool.values[i], p);
        out.halting_time += p * t as f64;
        out.phase2_generated += survival; // candidate t is generated iff t−1 were rejected
        out.rejections_before_accept += p * (t - 1) as f64;
        out.accepted += p;
        survival -= p;
        if survival < SURVIVAL_EPS {
            survival = 0.0;
            break;
        }
    }
    out.fallback = survival;
    visit(n + 1, survival);
    out.values.add_scaled(&pool.mean, survival);
    out.halting_time += survival * (n + 1) as f64;
    out
}

/// Literal Phase 2: returns (pool index returned, halting time t).
/// `accept_coin(i, rng)` flips candidate i's acceptance coin; `fallback(rng)`
/// draws a fresh pool index *after* the coins, from the same stream, so the
/// fallback is independent of the coins that led to it.
pub fn rejection_sampled<R>(
    n: usize,
    rng: &mut R,
    mut next_candidate: impl FnMut() -> usize,
    mut accept_coin: impl FnMut(usize, &mut R) -> bool,
    fallback: impl FnOnce(&mut R) -> usize,
) -> (usize, usize) {
    for t in 1..=n {
        let i = next_candidate();
        if accept_coin(i, rng) {
            return (i, t);
        }
    }
    (fallback(rng), n + 1)
}
