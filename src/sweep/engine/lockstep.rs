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
use crate::math::normal;
use crate::privacy::accountant::Phase2Terms;
use crate::select::gtable::{GROUP, GroupCoeffs, ShiftedGTable};
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
    let groups = table.groups;
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
    let mut values = Values::default();
    let walk = Walk {
        pool,
        proxy: &prep.proxy,
        gb,
        table,
        lambda,
        inv_sz: 1.0 / p.sigma_z,
        n,
        nodes,
    };
    if simd_level() == SimdLevel::Avx2 {
        // SAFETY: AVX2 was detected at run time.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            walk_avx2(&walk, cand, ls, &mut slow, &mut values)
        }
    } else {
        walk_steps::<false>(&walk, cand, ls, &mut slow, &mut values);
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

/// Which instruction set the walk runs with: chosen once per process from
/// the CPU (AVX2 when present), or forced with `PRIVALIGN_SIMD=baseline|avx2`
/// (tests run both and compare bits). The variants compile the same source:
/// the same operations per lane in the same order, no fused multiply-add
/// (neither variant enables FMA and Rust never contracts), so results do not
/// depend on which node of a cluster computed them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimdLevel {
    Baseline,
    Avx2,
}

fn detect() -> SimdLevel {
    #[cfg(target_arch = "x86_64")]
    {
        let want = std::env::var("PRIVALIGN_SIMD").unwrap_or_default();
        if want != "baseline" && std::arch::is_x86_feature_detected!("avx2") {
            return SimdLevel::Avx2;
        }
    }
    SimdLevel::Baseline
}

/// The walk's instruction set for this process.
pub fn simd_level() -> SimdLevel {
    static LEVEL: std::sync::OnceLock<SimdLevel> = std::sync::OnceLock::new();
    *LEVEL.get_or_init(detect)
}

/// What one walk reads.
struct Walk<'a> {
    pool: &'a Pool,
    proxy: &'a [f64],
    gb: &'a [f64],
    table: &'a ShiftedGTable,
    lambda: f64,
    inv_sz: f64,
    n: usize,
    nodes: &'a [(f64, f64)],
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn walk_avx2(
    w: &Walk,
    cand: &mut Candidates,
    ls: &mut LaneScratch,
    slow: &mut [SlowLane],
    values: &mut Values,
) {
    walk_steps::<true>(w, cand, ls, slow, values)
}

/// Phase 2 for every node in lockstep (see the module docs).
#[inline(always)]
fn walk_steps<const AVX2: bool>(
    w: &Walk,
    cand: &mut Candidates,
    ls: &mut LaneScratch,
    slow: &mut [SlowLane],
    values: &mut Values,
) {
    let groups = w.table.groups;
    let mut live_groups = ls.alive.iter().filter(|&&a| a).count();
    let mut live_slow = slow.len();
    for t in 1..=w.n {
        if live_groups == 0 && live_slow == 0 {
            break;
        }
        let i = cand.get(t - 1);
        let r = w.proxy[i];
        let gbi = w.gb[i];
        let tm1 = (t - 1) as f64;
        let (row, d) = w.table.row((r - w.lambda) * w.inv_sz);
        let mut q: Lane = [0.0; GROUP];
        #[allow(clippy::needless_range_loop)] // g indexes six parallel arrays
        for g in 0..groups {
            if !ls.alive[g] {
                continue;
            }
            let st = GroupState {
                s: &mut ls.survival[g],
                generated: &mut ls.generated[g],
                accepted: &mut ls.accepted[g],
                rejections: &mut ls.rejections[g],
            };
            let live =
                step_group::<AVX2>(&row[g], d, gbi, tm1, &ls.inv[g], &ls.weight[g], st, &mut q);
            if !live {
                ls.alive[g] = false;
                live_groups -= 1;
            }
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
                live_slow -= 1;
            }
            qt += w.nodes[sl.k].1 * pk;
        }
        values.add_scaled(&w.pool.values[i], qt);
    }
}

/// One lane group's mutable walk state.
struct GroupState<'a> {
    s: &'a mut Lane,
    generated: &'a mut Lane,
    accepted: &'a mut Lane,
    rejections: &'a mut Lane,
}

/// One step of one lane group: a = clamp(inv·(G − G_B), 0, 1), then the
/// scalar walk's update per lane. Returns whether any lane is still alive.
/// With AVX2 the four lanes are one vector; the per-lane operations and
/// their order are the same as the portable version's.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn step_group<const AVX2: bool>(
    c: &GroupCoeffs,
    d: f64,
    gb: f64,
    tm1: f64,
    inv: &Lane,
    w: &Lane,
    st: GroupState,
    q: &mut Lane,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if AVX2 {
        // SAFETY: AVX2 = true only in `walk_avx2`, entered after detection.
        return unsafe { step_group_avx2(c, d, gb, tm1, inv, w, st, q) };
    }
    let mut live = false;
    for l in 0..GROUP {
        let gv =
            ((((c[5][l] * d + c[4][l]) * d + c[3][l]) * d + c[2][l]) * d + c[1][l]) * d + c[0][l];
        // max then min, as the AVX2 variant's max_pd/min_pd (same for non-NaN).
        #[allow(clippy::manual_clamp)]
        let a = (inv[l] * (gv - gb)).max(0.0).min(1.0);
        let sv = st.s[l];
        let pk = sv * a;
        st.generated[l] += sv;
        st.accepted[l] += pk;
        st.rejections[l] += pk * tm1;
        let s2 = sv - pk;
        let s2 = if s2 < SURVIVAL_EPS { 0.0 } else { s2 };
        st.s[l] = s2;
        q[l] += w[l] * pk;
        live |= s2 > 0.0;
    }
    live
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
unsafe fn step_group_avx2(
    c: &GroupCoeffs,
    d: f64,
    gb: f64,
    tm1: f64,
    inv: &Lane,
    w: &Lane,
    st: GroupState,
    q: &mut Lane,
) -> bool {
    use std::arch::x86_64::*;
    // SAFETY: every pointer is to a [f64; 4] (unaligned loads and stores).
    unsafe {
        let ld = |x: &Lane| _mm256_loadu_pd(x.as_ptr());
        let dv = _mm256_set1_pd(d);
        let mut gv = _mm256_add_pd(_mm256_mul_pd(ld(&c[5]), dv), ld(&c[4]));
        gv = _mm256_add_pd(_mm256_mul_pd(gv, dv), ld(&c[3]));
        gv = _mm256_add_pd(_mm256_mul_pd(gv, dv), ld(&c[2]));
        gv = _mm256_add_pd(_mm256_mul_pd(gv, dv), ld(&c[1]));
        gv = _mm256_add_pd(_mm256_mul_pd(gv, dv), ld(&c[0]));
        let zero = _mm256_setzero_pd();
        // max(x, 0) then min(·, 1): for a non-NaN x the same as f64::max/min.
        let a = _mm256_mul_pd(ld(inv), _mm256_sub_pd(gv, _mm256_set1_pd(gb)));
        let a = _mm256_min_pd(_mm256_max_pd(a, zero), _mm256_set1_pd(1.0));
        let sv = ld(st.s);
        let pk = _mm256_mul_pd(sv, a);
        _mm256_storeu_pd(
            st.generated.as_mut_ptr(),
            _mm256_add_pd(ld(st.generated), sv),
        );
        _mm256_storeu_pd(st.accepted.as_mut_ptr(), _mm256_add_pd(ld(st.accepted), pk));
        _mm256_storeu_pd(
            st.rejections.as_mut_ptr(),
            _mm256_add_pd(ld(st.rejections), _mm256_mul_pd(pk, _mm256_set1_pd(tm1))),
        );
        let s2 = _mm256_sub_pd(sv, pk);
        let dead = _mm256_cmp_pd::<_CMP_LT_OQ>(s2, _mm256_set1_pd(SURVIVAL_EPS));
        let s2 = _mm256_andnot_pd(dead, s2);
        _mm256_storeu_pd(st.s.as_mut_ptr(), s2);
        _mm256_storeu_pd(
            q.as_mut_ptr(),
            _mm256_add_pd(ld(q), _mm256_mul_pd(ld(w), pk)),
        );
        _mm256_movemask_pd(_mm256_cmp_pd::<_CMP_GT_OQ>(s2, zero)) != 0
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
