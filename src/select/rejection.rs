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
    let mut walk = ConditionalWalk::new();
    for t in 1..=n {
        let i = next_candidate();
        let (p, goes_on) = walk.step(&pool.values[i], accept(i), t);
        visit(t, p);
        if !goes_on {
            break;
        }
    }
    visit(n + 1, walk.survival());
    walk.finish(pool, n)
}

/// The conditional walk's state, one [`ConditionalWalk::step`] per
/// candidate: the arithmetic of [`rejection_conditional`], shared with the
/// engine's walk over blocks of a lazily drawn batch (which keeps this state
/// in registers), so both give the same bits.
#[derive(Clone, Copy, Debug)]
pub struct ConditionalWalk {
    out: RejectionOutcome,
    survival: f64,
}

impl Default for ConditionalWalk {
    fn default() -> Self {
        Self::new()
    }
}

impl ConditionalWalk {
    pub fn new() -> Self {
        Self {
            out: RejectionOutcome::default(),
            survival: 1.0,
        }
    }

    /// Candidate `t` (1-based) with pool values `v` and acceptance
    /// probability `a` (clamped to [0, 1]): returns P(halting at t) and
    /// whether the walk goes on (false once the survival fell below
    /// [`SURVIVAL_EPS`], which sets it to 0).
    #[inline(always)]
    pub fn step(&mut self, v: &Values, a: f64, t: usize) -> (f64, bool) {
        let a = a.clamp(0.0, 1.0);
        let p = self.survival * a;
        let out = &mut self.out;
        out.values.add_scaled(v, p);
        out.halting_time += p * t as f64;
        out.phase2_generated += self.survival; // candidate t is generated iff t−1 were rejected
        out.rejections_before_accept += p * (t - 1) as f64;
        out.accepted += p;
        self.survival -= p;
        if self.survival < SURVIVAL_EPS {
            self.survival = 0.0;
            return (p, false);
        }
        (p, true)
    }

    /// P(no candidate accepted so far).
    pub fn survival(&self) -> f64 {
        self.survival
    }

    /// The outcome after a walk over (at most) `n` candidates: the
    /// remaining survival goes to the fallback (a fresh pool draw).
    pub fn finish(self, pool: &Pool, n: usize) -> RejectionOutcome {
        let mut out = self.out;
        out.fallback = self.survival;
        out.values.add_scaled(&pool.mean, self.survival);
        out.halting_time += self.survival * (n + 1) as f64;
        out
    }
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
