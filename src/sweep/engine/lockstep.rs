//! PrivITP's conditional estimator with every λ̃ quadrature node walked at
//! once (paper `alg:privitp`; the acceptance of `lem:reformulation`).
//!
//! For node k, λ̃_k = λ̂ + σ_X·x_k and βM_k = R_max + σ_Z·L − λ̃_k. Candidate
//! t (reward r̂) is accepted with
//!
//! ```text
//!   a_k = σ_Z·[G(u − ρ·x_k) − G_B(r̂)]/βM_k,  u = (r̂ − λ̂)/σ_Z,  ρ = σ_X/σ_Z,
//! ```
//!
//! G_B(r̂) = G((r̂ − R_max − σ_Z·L)/σ_Z) being λ̃-free ([`super::prep`]). One row
//! of the node-shifted table, found from u, gives every node's G at the same
//! offset, so the nodes are SIMD lanes: a step updates each lane's survival
//! S_k ← S_k·(1 − a_k) and the statistics the metrics need, and the walk ends
//! when every lane's survival is below [`SURVIVAL_EPS`] (set to 0 there, as
//! the scalar walk stops) or at t = n. A lane group whose lanes are all dead
//! is skipped.
//!
//! Per lane the arithmetic is the scalar walk's ([`rejection_conditional`]):
//! p = S·a, generated += S, accepted += p, rejections += p·(t − 1), S −= p.
//! The values are accumulated once per step with q_t = Σ_k w_k·p_k (the
//! quadrature is linear), and the fallback's with Σ_k w_k·S_k. No operation
//! is reordered across lanes and no multiply-add is fused, so every SIMD
//! width gives the same bits.
//!
//! Lanes where the table's absolute accuracy is not enough — βM_k/σ_Z below
//! [`NARROW`] (the acceptance (G(a) − G(a − w))/w loses digits as w → 0) or
//! βM_k ≤ 0 (the threshold rule Φ((r̂ − λ̃)/σ_Z)) — are walked by the scalar
//! exact acceptance [`PrivItpAcceptance::prob`] in the same steps.
//!
//! [`rejection_conditional`]: crate::select::rejection::rejection_conditional

use super::draw::Candidates;
use super::prep::PoolPrep;
use super::{Metrics, Plan, PrivItpParams};
use crate::privacy::accountant::Phase2Terms;
use crate::privacy::normal;
use crate::select::gtable::{COEFFS, GROUP, ShiftedGTable};
use crate::select::itp::PrivItpAcceptance;
use crate::select::pool::{Pool, Values};
use crate::select::rejection::SURVIVAL_EPS;

/// Lanes with βM/σ_Z below this use the scalar exact acceptance.
pub const NARROW: f64 = 0.05;

type Lane = [f64; GROUP];

/// Per-lane state, reused across replicates.
#[derive(Default)]
pub(crate) struct LaneScratch {
    survival: Vec<Lane>,
    generated: Vec<Lane>,
    accepted: Vec<Lane>,
    rejections: Vec<Lane>,
    inv: Vec<Lane>,
    weight: Vec<Lane>,
    alive: Vec<bool>,
}

/// A node walked by the scalar exact acceptance.
struct SlowLane {
    k: usize,
    acc: PrivItpAcceptance,
    survival: f64,
    generated: f64,
    accepted: f64,
    rejections: f64,
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn privitp_lockstep(
    plan: &Plan,
    pool: &Pool,
    prep: &PoolPrep,
    gb: &[f64],
    table: &ShiftedGTable,
    p: &PrivItpParams,
    lambda: f64,
    eps1: f64,
    n: usize,
    cand: &mut Candidates,
    ls: &mut LaneScratch,
) -> Metrics {
    let pr = &plan.cfg.privacy;
    let nodes = &plan.nodes;
    let groups = table.lanes / GROUP;
    for v in [
        &mut ls.survival,
        &mut ls.generated,
        &mut ls.accepted,
        &mut ls.rejections,
        &mut ls.inv,
        &mut ls.weight,
    ] {
        v.clear();
        v.resize(groups, [0.0; GROUP]);
    }
    ls.alive.clear();
    ls.alive.resize(groups, false);
    let mut slow: Vec<SlowLane> = Vec::new();
    for (k, &(x, w)) in nodes.iter().enumerate() {
        let (g, l) = (k / GROUP, k % GROUP);
        let lt = lambda + p.sigma_x * x;
        let beta_m = pr.r_max + p.sigma_z * p.l - lt;
        if beta_m / p.sigma_z >= NARROW {
            ls.survival[g][l] = 1.0;
            ls.inv[g][l] = p.sigma_z / beta_m;
            ls.alive[g] = true;
        } else {
            slow.push(SlowLane {
                k,
                acc: PrivItpAcceptance::new(lt, p.sigma_z, pr.r_max, p.l),
                survival: 1.0,
                generated: 0.0,
                accepted: 0.0,
                rejections: 0.0,
            });
        }
        ls.weight[g][l] = w;
    }
    let inv_sz = 1.0 / p.sigma_z;
    let lanes = table.lanes;
    let mut values = Values::default();
    for t in 1..=n {
        if !ls.alive.iter().any(|&a| a) && slow.iter().all(|s| s.survival == 0.0) {
            break;
        }
        let i = cand.get(t - 1);
        let r = prep.proxy[i];
        let gbi = gb[i];
        let tm1 = (t - 1) as f64;
        let (row, d) = table.row((r - lambda) * inv_sz);
        let mut q: Lane = [0.0; GROUP];
        for g in 0..groups {
            if !ls.alive[g] {
                continue;
            }
            let c: [&[f64]; COEFFS] = std::array::from_fn(|ci| {
                &row[ci * lanes + g * GROUP..ci * lanes + (g + 1) * GROUP]
            });
            let (s, gen_, acc, rej) = (
                &mut ls.survival[g],
                &mut ls.generated[g],
                &mut ls.accepted[g],
                &mut ls.rejections[g],
            );
            let (inv, w) = (&ls.inv[g], &ls.weight[g]);
            let mut any = false;
            for l in 0..GROUP {
                let gv = ((((c[5][l] * d + c[4][l]) * d + c[3][l]) * d + c[2][l]) * d + c[1][l])
                    * d
                    + c[0][l];
                let a = inv[l] * (gv - gbi);
                let a = a.clamp(0.0, 1.0);
                let sv = s[l];
                let pk = sv * a;
                gen_[l] += sv;
                acc[l] += pk;
                rej[l] += pk * tm1;
                let s2 = sv - pk;
                let s2 = if s2 < SURVIVAL_EPS { 0.0 } else { s2 };
                s[l] = s2;
                q[l] += w[l] * pk;
                any |= s2 > 0.0;
            }
            ls.alive[g] = any;
        }
        let mut qt = (q[0] + q[1]) + (q[2] + q[3]);
        for sl in slow.iter_mut().filter(|s| s.survival > 0.0) {
            let a = sl.acc.prob(r).clamp(0.0, 1.0);
            let pk = sl.survival * a;
            sl.generated += sl.survival;
            sl.accepted += pk;
            sl.rejections += pk * tm1;
            sl.survival -= pk;
            if sl.survival < SURVIVAL_EPS {
                sl.survival = 0.0;
            }
            qt += nodes[sl.k].1 * pk;
        }
        values.add_scaled(&pool.values[i], qt);
    }
    // Per node: fallback mass, halting time, generations and E[ε_2^post].
    let fresh = p.batches == super::Batches::Fresh;
    let consts = EpsConsts::new(p, pr.r_max, pr.delta_r);
    let (mut fallback, mut halting, mut gens, mut eps) = (0.0, 0.0, 0.0, 0.0);
    for (k, &(x, w)) in nodes.iter().enumerate() {
        let (f, a, rj, gn) = match slow.iter().find(|s| s.k == k) {
            Some(sl) => (sl.survival, sl.accepted, sl.rejections, sl.generated),
            None => {
                let (g, l) = (k / GROUP, k % GROUP);
                (
                    ls.survival[g][l],
                    ls.accepted[g][l],
                    ls.rejections[g][l],
                    ls.generated[g][l],
                )
            }
        };
        let lt = lambda + p.sigma_x * x;
        let (kappa, accept) = consts.terms(lt, p);
        fallback += w * f;
        halting += w * (rj + a + f * (n + 1) as f64);
        gens += w * if fresh { n as f64 + gn } else { n as f64 };
        eps += w * (eps1 + kappa * rj + accept * a + n as f64 * kappa * f);
    }
    values.add_scaled(&pool.mean, fallback);
    Metrics {
        values,
        halting_time: Some(halting),
        generations: gens,
        eps: Some(eps),
    }
}

/// Phase-2 privacy terms κ(λ̃), ρ(λ̃) of [`Phase2Terms`] by direct differences
/// of G. Both are log-ratios of E_u[Φ] over intervals with one fixed end:
///
/// ```text
///   κ = ln[G(Δ/σ + L) − G((λ̃ − R_max + Δ)/σ)] − ln[G(L) − G((λ̃ − R_max)/σ)]
///   ρ = ln[G((Δ − λ̃)/σ) − G((Δ − R_max)/σ − L)] − ln[G(−λ̃/σ) − G(−R_max/σ − L)]
/// ```
///
/// (σ = σ_Z; the 1/(βM/σ) of each mean cancels within a ratio), so four of
/// the eight G values are constants of the setting. Used where every
/// variable argument is ≥ [`DIRECT_MIN_ARG`] and βM/σ ≥ [`NARROW`], so that
/// each difference is a well-conditioned difference of relative-accurate
/// values; otherwise the log-space [`Phase2Terms::new`].
struct EpsConsts {
    g_kappa_hi: f64,
    g_l: f64,
    g_rho_lo1: f64,
    g_rho_lo2: f64,
    r_max: f64,
    delta_r: f64,
}

/// Smallest G argument evaluated directly in [`EpsConsts::terms`].
const DIRECT_MIN_ARG: f64 = -30.0;

impl EpsConsts {
    fn new(p: &PrivItpParams, r_max: f64, delta_r: f64) -> Self {
        let s = p.sigma_z;
        Self {
            g_kappa_hi: normal::g(delta_r / s + p.l),
            g_l: normal::g(p.l),
            g_rho_lo1: normal::g((delta_r - r_max) / s - p.l),
            g_rho_lo2: normal::g(-r_max / s - p.l),
            r_max,
            delta_r,
        }
    }

    fn terms(&self, lt: f64, p: &PrivItpParams) -> (f64, f64) {
        let s = p.sigma_z;
        let beta_m = self.r_max + s * p.l - lt;
        let args = [
            (lt - self.r_max + self.delta_r) / s,
            (lt - self.r_max) / s,
            (self.delta_r - lt) / s,
            -lt / s,
        ];
        let lo_args = [(self.delta_r - self.r_max) / s - p.l, -self.r_max / s - p.l];
        if beta_m / s < NARROW || args.iter().chain(&lo_args).any(|&a| a < DIRECT_MIN_ARG) {
            let t = Phase2Terms::new(lt, s, self.r_max, self.delta_r, p.l);
            return (t.kappa, t.accept);
        }
        let kappa = ((self.g_kappa_hi - normal::g(args[0])) / (self.g_l - normal::g(args[1]))).ln();
        let accept =
            ((normal::g(args[2]) - self.g_rho_lo1) / (normal::g(args[3]) - self.g_rho_lo2)).ln();
        (kappa, accept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The direct κ, ρ agree with the log-space accountant to 1e-12 relative
    /// (absolute near 0) over λ̃, σ_Z, Δ_r and R_max.
    #[test]
    fn direct_eps_terms_match_the_accountant() {
        for &sz in &[0.01, 0.05, 0.125, 0.5, 2.0] {
            for &dr in &[0.1, 1.0, 3.0] {
                for &rm in &[0.5, 1.0, 4.0] {
                    let p = PrivItpParams {
                        sigma_x: sz,
                        sigma_z: sz,
                        beta: 0.05,
                        l: 4.0,
                        clamp: None,
                        batches: super::super::Batches::Fresh,
                    };
                    let c = EpsConsts::new(&p, rm, dr);
                    let mut lt = -2.0;
                    while lt < rm + sz * 4.0 + 0.5 {
                        let (k, a) = c.terms(lt, &p);
                        let t = Phase2Terms::new(lt, sz, rm, dr, 4.0);
                        for (got, want) in [(k, t.kappa), (a, t.accept)] {
                            assert!(
                                (got - want).abs() <= 1e-12 * want.abs().max(1.0),
                                "σ_Z={sz} Δ={dr} R={rm} λ̃={lt}: {got} vs {want}"
                            );
                        }
                        lt += 0.0173;
                    }
                }
            }
        }
    }
}
