//! The claimed ε of each audited event, from the accountant
//! (`crate::privacy::accountant`) — the functions every report uses. The only
//! thing added here is PrivITP's maximum over λ̃ for one halting time t.

use super::{AuditSetting, Fault};
use crate::math::maximise::maximise_on_interval;
use crate::privacy::accountant::{
    Phase2Terms, privbon_gauss_eps, privbon_gumbel_eps, privitp_eps_max,
};

/// PrivBoN (Gumbel): 2Δ_r/σ.
pub fn privbon(s: &AuditSetting) -> f64 {
    privbon_gumbel_eps(s.privacy.delta_r, s.sigma)
}

/// Gaussian PrivBoN: the Report-Noisy-Max bound.
pub fn privbon_gauss(s: &AuditSetting) -> f64 {
    privbon_gauss_eps(s.privacy.r_max, s.privacy.delta_r, s.sigma, s.n)
}

/// ε_1 of Phase 1 (the accountant's convention in `s.privacy`).
pub fn eps1(s: &AuditSetting) -> f64 {
    s.privacy.phase1_eps(s.split().0)
}

/// ε_2^post(t) at one released λ̃, from [`Phase2Terms`] (with the broken
/// accountant of [`Fault::OmitRho`] when asked).
pub fn eps2_post(s: &AuditSetting, lambda_tilde: f64, t: usize, fault: Fault) -> f64 {
    let (_, sz) = s.split();
    let mut terms = Phase2Terms::new(lambda_tilde, sz, s.privacy.r_max, s.privacy.delta_r, s.l);
    if fault == Fault::OmitRho {
        terms.accept = 0.0;
    }
    terms.eps_post(t, s.n)
}

/// The ex-post claim for outputs halting at t: ε_1 + max over λ̃ in the clamp
/// of ε_2^post(t; λ̃) (`thm:privitp_priv`: every output (λ̃, t) costs
/// ε_1 + ε_2^post(t; λ̃), so an event inside {halting time t} costs at most
/// this), with the maximising λ̃ — found by the accountant's own maximiser
/// ([`maximise_on_interval`]), so claim and accountant search alike.
pub fn privitp_t(s: &AuditSetting, t: usize, fault: Fault) -> (f64, f64) {
    let (lo, hi) = s.clamp;
    let (best_x, best) = maximise_on_interval(|lt| eps2_post(s, lt, t, fault), lo, hi);
    (eps1(s) + best, best_x)
}

/// PrivITP's worst case over t and λ̃ (`privitp_eps_max`, what summaries and
/// FSRC use).
pub fn privitp_max(s: &AuditSetting) -> f64 {
    let (_, sz) = s.split();
    privitp_eps_max(
        eps1(s),
        s.clamp,
        sz,
        s.privacy.r_max,
        s.privacy.delta_r,
        s.l,
        s.n,
    )
}

/// FSRC's claim: (ε_total, δ_total) with ε_total = factor·ε_max. The paper
/// (`thm:privitp_fsrc_comp`) states δ; each answered query spends one Phase-1
/// δ, and by basic composition the run's δ is δ times the most queries the
/// filter can answer. Every answered query costs at least ε_1 (κ, ρ ≥ 0), and
/// query τ + 1 is answered only while τ·ε_1 ≤ ε_spent < ε_total − ε_max, so at
/// most ⌈(ε_total − ε_max)/ε_1⌉ queries run: δ_total = that many δ.
pub fn fsrc(s: &AuditSetting) -> (f64, f64, usize) {
    let eps_max = privitp_max(s);
    let total = s.eps_total_factor * eps_max;
    let e1 = eps1(s);
    let max_queries = (((total - eps_max) / e1).ceil().max(0.0) as usize).max(1);
    (total, s.privacy.delta * max_queries as f64, max_queries)
}
