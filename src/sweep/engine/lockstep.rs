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
//! A lane carries its node's *weighted* survival s̃_k = w_k·S_k (the
//! quadrature is linear, so every per-node quantity enters the metrics
//! multiplied by w_k): a step is p̃ = s̃·a, generated̃ += s̃, s̃ −= p̃, and the
//! values are accumulated once per step with q_t = Σ_k p̃_k — no per-step
//! weight multiply. The accepted mass and the rejections before acceptance
//! are not accumulated per step: with p_t = S_t − S_{t+1} they telescope,
//!
//! ```text
//!   Σ_{t≤T} p_t = 1 − S_{T+1},   Σ_{t≤T} (t−1)·p_t = (Σ_{t≤T} S_t − 1) − (T−1)·S_{T+1},
//! ```
//!
//! T being the step where the lane fell below the cut-off (S_{T+1} taken
//! before it is zeroed) or n. So a lane step costs, besides G, five vector
//! operations. The Taylor polynomial is evaluated by fused multiply-adds; the
//! portable variant uses `f64::mul_add` (correctly rounded, as the
//! instructions are), no operation is reordered across lanes, and the
//! cross-lane sums run in one fixed order — so every SIMD width gives the
//! same bits. The arithmetic differs from the scalar walk
//! ([`rejection_conditional`]) by rounding only; the engine's oracle tests
//! bound the difference (≤ 1e-12 relative per metric).
//!
//!
//! Lanes where the table's absolute accuracy is not enough — βM_k/σ_Z below
//! [`NARROW`] (the acceptance (G(a) − G(a − w))/w loses digits as w → 0) or
//! βM_k ≤ 0 (the threshold rule Φ((r̂ − λ̃)/σ_Z)) — are walked by the scalar
//! exact acceptance [`PrivItpAcceptance::prob`] in the same steps.
//!
//! Long file: the walk and its scalar, AVX2 and AVX-512 lanes, read side by side (same bits).
//!
//! [`rejection_conditional`]: crate::select::rejection::rejection_conditional

use super::draw::Candidates;
use super::eps_table::EpsTable;
use super::prep::WalkItem;
use super::{Metrics, Plan, PrivItpParams};
use crate::select::gtable::{GROUP, GroupCoeffs, ShiftedGTable};
use crate::select::itp::PrivItpAcceptance;
use crate::select::pool::{Pool, Values};
use crate::select::rejection::SURVIVAL_EPS;

/// Lanes with βM/σ_Z below this use the scalar exact acceptance.
pub const NARROW: f64 = 0.05;

type Lane = [f64; GROUP];

/// Candidates per block of the walk: each lane group walks a block with its
/// state in registers; a block's per-candidate data (table row, offset,
/// G_B, pool index) is gathered once for every group.
const BLOCK: usize = 32;

/// Per-lane state, reused across replicates.
#[derive(Default)]
pub(crate) struct LaneScratch {
    lanes: Vec<GroupLanes>,
    inv: Vec<Lane>,
    /// Per lane: w_k·[`SURVIVAL_EPS`], the cut-off of the weighted survival.
    thr: Vec<Lane>,
    alive: Vec<bool>,
    /// Per step of the block: the four partial sums of Σ_k w_k·p_k.
    q4: Vec<[f64; 4]>,
    /// `q4` before the group being walked (for a replay).
    q4_saved: Vec<[f64; 4]>,
}

/// One lane group's walk state (weighted by the node weights).
#[derive(Clone, Copy, Default)]
struct GroupLanes {
    /// w·S.
    s: Lane,
    /// w·Σ_t S_t.
    generated: Lane,
    /// w·S_{T+1} before the cut-off zeroed it (lanes that were cut).
    cut_s: Lane,
    /// T of a cut lane (0 while the lane lives).
    cut_t: Lane,
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
    items: &[WalkItem],
    table: &ShiftedGTable,
    p: &PrivItpParams,
    lambda: f64,
    eps1: f64,
    eps_terms: &EpsTable,
    n: usize,
    cand: &mut Candidates,
    ls: &mut LaneScratch,
) -> Metrics {
    let pr = &plan.cfg.privacy;
    let nodes = &plan.nodes;
    let groups = table.groups;
    ls.lanes.clear();
    ls.lanes.resize(groups, GroupLanes::default());
    for v in [&mut ls.inv, &mut ls.thr] {
        v.clear();
        v.resize(groups, [0.0; GROUP]);
    }
    ls.alive.clear();
    ls.alive.resize(groups, false);
    ls.q4.resize(BLOCK, [0.0; 4]);
    ls.q4_saved.resize(BLOCK, [0.0; 4]);
    let mut slow: Vec<SlowLane> = Vec::new();
    for (k, &(x, w)) in nodes.iter().enumerate() {
        let (g, l) = (k / GROUP, k % GROUP);
        let lt = lambda + p.sigma_x * x;
        let beta_m = pr.r_max + p.sigma_z * p.l - lt;
        if beta_m / p.sigma_z >= NARROW {
            ls.lanes[g].s[l] = w;
            ls.inv[g][l] = p.sigma_z / beta_m;
            ls.thr[g][l] = w * SURVIVAL_EPS;
            ls.alive[g] |= w > 0.0;
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
    }
    let mut values = Values::default();
    let walk = Walk {
        items,
        table,
        lambda,
        inv_sz: 1.0 / p.sigma_z,
        n,
        nodes,
    };
    match plan.simd.capped() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the level is at most the best the CPU was detected to run.
        SimdLevel::Avx512 => unsafe { walk_avx512(&walk, cand, ls, &mut slow, &mut values) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        SimdLevel::Avx2 => unsafe { walk_avx2(&walk, cand, ls, &mut slow, &mut values) },
        _ => walk_blocks::<Scalar>(&walk, cand, ls, &mut slow, &mut values),
    }
    // Per node: fallback mass, halting time, generations and E[ε_2^post].
    let fresh = p.batches == super::Batches::Fresh;
    let (mut fallback, mut halting, mut gens, mut eps) = (0.0, 0.0, 0.0, 0.0);
    for (k, &(x, w)) in nodes.iter().enumerate() {
        // Weighted fallback mass, accepted mass, rejections and generations.
        let (f, a, rj, gn) = match slow.iter().find(|s| s.k == k) {
            Some(sl) => (
                w * sl.survival,
                w * sl.accepted,
                w * sl.rejections,
                w * sl.generated,
            ),
            None => {
                let (g, l) = (k / GROUP, k % GROUP);
                let st = &ls.lanes[g];
                // The telescoped sums of the module docs.
                let (s_end, t_end) = if st.cut_t[l] > 0.0 {
                    (st.cut_s[l], st.cut_t[l])
                } else {
                    (st.s[l], n as f64)
                };
                let rj = (st.generated[l] - w) - (t_end - 1.0) * s_end;
                (st.s[l], w - s_end, rj, st.generated[l])
            }
        };
        let lt = lambda + p.sigma_x * x;
        let (kappa, accept) = eps_terms.terms(lt);
        fallback += f;
        halting += rj + a + f * (n + 1) as f64;
        gens += w * n as f64 + if fresh { gn } else { 0.0 };
        eps += w * eps1 + kappa * rj + accept * a + n as f64 * kappa * f;
    }
    values.add_scaled(&pool.mean, fallback);
    Metrics {
        values,
        halting_time: Some(halting),
        generations: gens,
        eps: Some(eps),
    }
}

/// Which instruction set the walk (and the batch draws, `draw_avx512`) runs
/// with: chosen once per process from the CPU (AVX-512F+DQ with FMA, else
/// AVX2 with FMA, else the portable code), or capped with `PRIVALIGN_SIMD=baseline|avx2|avx512`; a plan
/// carries its level ([`Plan::simd`]) so tests run every variant the CPU has
/// and compare bits. The variants compile the same arithmetic: the same
/// operations per lane in the same order, a multiply-add fused exactly where
/// the source asks for it in every variant (the instructions and
/// `f64::mul_add` both round once; Rust never contracts on its own), and the
/// cross-lane sum in one fixed order — so results do not depend on which
/// node of a cluster computed them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SimdLevel {
    Baseline,
    Avx2,
    Avx512,
}

impl SimdLevel {
    /// This level, capped by the best the CPU runs: a plan's level is a
    /// public field, and no caller may run instructions the CPU lacks —
    /// every dispatch on a level (the walk, the batch draws) goes through
    /// this.
    pub fn capped(self) -> SimdLevel {
        self.min(best_available())
    }

    /// Every level this CPU can run, lowest first.
    pub fn available() -> Vec<SimdLevel> {
        let mut v = vec![SimdLevel::Baseline];
        #[cfg(target_arch = "x86_64")]
        {
            // Both vector variants fuse multiply-adds (as the portable one
            // does through `f64::mul_add`), so both need FMA.
            let fma = std::arch::is_x86_feature_detected!("fma");
            if fma && std::arch::is_x86_feature_detected!("avx2") {
                v.push(SimdLevel::Avx2);
            }
            if fma
                && std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512dq")
            {
                v.push(SimdLevel::Avx512);
            }
        }
        v
    }
}

fn detect() -> SimdLevel {
    let best = best_available();
    let cap = match std::env::var("PRIVALIGN_SIMD").as_deref() {
        Ok("baseline") => SimdLevel::Baseline,
        Ok("avx2") => SimdLevel::Avx2,
        _ => SimdLevel::Avx512,
    };
    best.min(cap)
}

/// The best level this CPU runs (detected once).
fn best_available() -> SimdLevel {
    static BEST: std::sync::OnceLock<SimdLevel> = std::sync::OnceLock::new();
    *BEST.get_or_init(|| {
        *SimdLevel::available()
            .last()
            .unwrap_or(&SimdLevel::Baseline)
    })
}

/// The walk's instruction set for this process.
pub fn simd_level() -> SimdLevel {
    static LEVEL: std::sync::OnceLock<SimdLevel> = std::sync::OnceLock::new();
    *LEVEL.get_or_init(detect)
}

/// What one walk reads.
struct Walk<'a> {
    items: &'a [WalkItem],
    table: &'a ShiftedGTable,
    lambda: f64,
    inv_sz: f64,
    n: usize,
    nodes: &'a [(f64, f64)],
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn walk_avx2(
    w: &Walk,
    cand: &mut Candidates,
    ls: &mut LaneScratch,
    slow: &mut [SlowLane],
    values: &mut Values,
) {
    walk_blocks::<Avx2>(w, cand, ls, slow, values)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,fma")]
fn walk_avx512(
    w: &Walk,
    cand: &mut Candidates,
    ls: &mut LaneScratch,
    slow: &mut [SlowLane],
    values: &mut Values,
) {
    walk_blocks::<Avx512>(w, cand, ls, slow, values)
}

/// A block's per-candidate data, gathered once for every lane group.
struct BlockData {
    len: usize,
    row: [usize; BLOCK],
    d: [f64; BLOCK],
    gb: [f64; BLOCK],
    r: [f64; BLOCK],
    /// The candidate's step t (1-based), for a cut lane's T.
    t: [f64; BLOCK],
}

/// Phase 2 for every node in lockstep (see the module docs), a block of
/// candidates at a time. Each live lane group walks the block with its
/// state in registers and without the per-step survival cut-off; if one of
/// its lanes fell below its cut-off within the block, the group's block is
/// replayed from its saved state with the cut-off applied at every step —
/// so the result is the step-by-step walk's, bit for bit (a dead lane's
/// survival is exactly 0, and every term it adds is +0). The walk ends at
/// the first block that starts with every lane dead, or at t = n.
#[inline(always)]
fn walk_blocks<V: Lanes>(
    w: &Walk,
    cand: &mut Candidates,
    ls: &mut LaneScratch,
    slow: &mut [SlowLane],
    values: &mut Values,
) {
    let groups = w.table.groups;
    let mut live_slow = slow.len();
    let mut blk = BlockData {
        len: 0,
        row: [0; BLOCK],
        d: [0.0; BLOCK],
        gb: [0.0; BLOCK],
        r: [0.0; BLOCK],
        t: [0.0; BLOCK],
    };
    // Four accumulators of Σ_t q_t·values_t (step t into t mod 4), summed
    // at the end: four independent multiply-add chains instead of one.
    let mut acc = [[0.0f64; 4]; 4];
    let mut t0 = 0usize;
    while t0 < w.n && (ls.alive.iter().any(|&a| a) || live_slow > 0) {
        let len = BLOCK.min(w.n - t0);
        blk.len = len;
        let block_items = cand.block(t0, len);
        for (j, &i) in block_items.iter().enumerate() {
            let it = &w.items[i];
            blk.r[j] = it.r;
            blk.gb[j] = it.gb;
        }
        for j in 0..len {
            let (row, d) = w.table.row_start((blk.r[j] - w.lambda) * w.inv_sz);
            blk.row[j] = row;
            blk.d[j] = d;
            blk.t[j] = (t0 + j + 1) as f64;
        }
        // Σ_k p̃_k in one fixed order for every SIMD width: node k into
        // partial sum k mod 4 in increasing k (lanes 0–3, then 4–7, of each
        // live group in turn), then (q0+q1)+(q2+q3) below.
        let mut first = true;
        for g in 0..groups {
            if !ls.alive[g] {
                continue;
            }
            let saved = ls.lanes[g];
            let data = w.table.group(g);
            let (inv, thr) = (&ls.inv[g], &ls.thr[g]);
            let q4: &mut [[f64; 4]; BLOCK] = (&mut ls.q4[..]).try_into().expect("BLOCK steps");
            // SAFETY (both calls): `V`'s instructions were detected before the walk began.
            let crossed = if first {
                unsafe { group_block::<V, false, true>(data, &blk, &mut ls.lanes[g], inv, thr, q4) }
            } else {
                // A replay must start from the partial sums before this group.
                ls.q4_saved.copy_from_slice(&q4[..]);
                unsafe {
                    group_block::<V, false, false>(data, &blk, &mut ls.lanes[g], inv, thr, q4)
                }
            };
            if crossed {
                ls.lanes[g] = saved;
                if first {
                    unsafe {
                        group_block::<V, true, true>(data, &blk, &mut ls.lanes[g], inv, thr, q4)
                    };
                } else {
                    q4.copy_from_slice(&ls.q4_saved);
                    unsafe {
                        group_block::<V, true, false>(data, &blk, &mut ls.lanes[g], inv, thr, q4)
                    };
                }
            }
            ls.alive[g] = ls.lanes[g].s.iter().any(|&x| x > 0.0);
            first = false;
        }
        if first {
            ls.q4[..len].fill([0.0; 4]);
        }
        // Σ_t q_t·values_t, step j into accumulator j mod 4.
        let fold = |a: &mut [f64; 4], qt: f64, j: usize| {
            let v = &w.items[block_items[j]].values;
            a[0] = qt.mul_add(v.gold, a[0]);
            a[1] = qt.mul_add(v.proxy, a[1]);
            a[2] = qt.mul_add(v.win_gold, a[2]);
            a[3] = qt.mul_add(v.win_proxy, a[3]);
        };
        let q_sum = |q: &[f64; 4]| (q[0] + q[1]) + (q[2] + q[3]);
        if live_slow == 0 {
            // The common case, four steps at a time so that the four
            // accumulators stay in registers (the same operations in the
            // same order as the general loop below).
            let quads = len / 4;
            let [mut a0, mut a1, mut a2, mut a3] = acc;
            for k in 0..quads {
                let j = 4 * k;
                fold(&mut a0, q_sum(&ls.q4[j]), j);
                fold(&mut a1, q_sum(&ls.q4[j + 1]), j + 1);
                fold(&mut a2, q_sum(&ls.q4[j + 2]), j + 2);
                fold(&mut a3, q_sum(&ls.q4[j + 3]), j + 3);
            }
            acc = [a0, a1, a2, a3];
            for j in 4 * quads..len {
                fold(&mut acc[j % 4], q_sum(&ls.q4[j]), j);
            }
        } else {
            // Lanes walked by the scalar exact acceptance add their p to q_t.
            for j in 0..len {
                let mut qt = q_sum(&ls.q4[j]);
                let tm1 = blk.t[j] - 1.0;
                for sl in slow.iter_mut().filter(|s| s.survival > 0.0) {
                    let a = sl.acc.prob(blk.r[j]).clamp(0.0, 1.0);
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
                fold(&mut acc[j % 4], qt, j);
            }
        }
        t0 += len;
    }
    let sum = |f: usize| (acc[0][f] + acc[1][f]) + (acc[2][f] + acc[3][f]);
    values.gold += sum(0);
    values.proxy += sum(1);
    values.win_gold += sum(2);
    values.win_proxy += sum(3);
}

/// One lane group's walk over one block: G by a fused-multiply-add Horner
/// scheme, a = min(inv·(G − G_B), 1), p̃ = s̃·a, generated̃ += s̃,
/// s̃ −= p̃ (then, with `CUT`, a lane whose s̃ fell below its cut-off records
/// s̃ and t and is zeroed), and the step's p̃ folded into `q4[j]` (lanes l
/// and l + 4 into partial sum l; `FIRST`: the partial sums start here).
/// Without `CUT`, returns whether a lane alive at the start ended the block
/// below its cut-off (the caller replays with `CUT`).
///
/// # Safety
/// `V`'s instructions must be available.
#[inline(always)]
unsafe fn group_block<V: Lanes, const CUT: bool, const FIRST: bool>(
    data: &[GroupCoeffs],
    blk: &BlockData,
    st: &mut GroupLanes,
    inv: &Lane,
    thr: &Lane,
    q4: &mut [[f64; 4]; BLOCK],
) -> bool {
    // SAFETY: the caller guarantees the instruction set.
    unsafe {
        let start = V::load(&st.s);
        let (mut s, mut generated) = (start, V::load(&st.generated));
        let (mut cut_s, mut cut_t) = (V::load(&st.cut_s), V::load(&st.cut_t));
        let (inv, thr) = (V::load(inv), V::load(thr));
        for j in 0..blk.len {
            let c = &data[blk.row[j]].0;
            let d = V::splat(blk.d[j]);
            let mut gv = V::load(&c[5]).mul_add(d, V::load(&c[4]));
            gv = gv.mul_add(d, V::load(&c[3]));
            gv = gv.mul_add(d, V::load(&c[2]));
            gv = gv.mul_add(d, V::load(&c[1]));
            gv = gv.mul_add(d, V::load(&c[0]));
            // a ≥ 0 needs no clamp: G is increasing and the two arguments
            // differ by βM/σ_Z ≥ NARROW, a gap the tables' errors cannot
            // close (`tests::fast_lane_acceptance_is_never_negative`).
            let a = inv.mul(gv.sub(V::splat(blk.gb[j]))).at_most_one();
            let pk = s.mul(a);
            generated = generated.add(s);
            let next = s.sub(pk);
            s = if CUT {
                V::cut(s, next, thr, V::splat(blk.t[j]), &mut cut_s, &mut cut_t)
            } else {
                next
            };
            pk.fold4::<FIRST>(&mut q4[j]);
        }
        s.store(&mut st.s);
        generated.store(&mut st.generated);
        if CUT {
            cut_s.store(&mut st.cut_s);
            cut_t.store(&mut st.cut_t);
        }
        !CUT && V::crossed(start, s, thr)
    }
}

/// Eight f64 lanes: the operations of the walk, one implementation per
/// instruction set, each the same IEEE operation per lane.
trait Lanes: Copy {
    unsafe fn load(x: &Lane) -> Self;
    unsafe fn store(self, x: &mut Lane);
    unsafe fn splat(x: f64) -> Self;
    unsafe fn add(self, o: Self) -> Self;
    unsafe fn sub(self, o: Self) -> Self;
    unsafe fn mul(self, o: Self) -> Self;
    /// self·m + a with one rounding.
    unsafe fn mul_add(self, m: Self, a: Self) -> Self;
    /// min(x, 1) (for non-NaN x, f64::min).
    unsafe fn at_most_one(self) -> Self;
    /// The survival after a step with the cut-off: a lane alive before
    /// (`before` > 0) whose `after` is below `thr` records `after` in
    /// `cut_s` and `t` in `cut_t` and becomes 0; other lanes keep `after`.
    unsafe fn cut(
        before: Self,
        after: Self,
        thr: Self,
        t: Self,
        cut_s: &mut Self,
        cut_t: &mut Self,
    ) -> Self;
    /// Whether a lane with start > 0 has end < thr.
    unsafe fn crossed(start: Self, end: Self, thr: Self) -> bool;
    /// q[l] = (q[l] + x[l]) + x[l + 4] (`FIRST`: q[l] = x[l] + x[l + 4]).
    unsafe fn fold4<const FIRST: bool>(self, q: &mut [f64; 4]);
}

/// The portable lanes.
#[derive(Clone, Copy)]
struct Scalar(Lane);

impl Lanes for Scalar {
    #[inline(always)]
    unsafe fn load(x: &Lane) -> Self {
        Scalar(*x)
    }
    #[inline(always)]
    unsafe fn store(self, x: &mut Lane) {
        *x = self.0;
    }
    #[inline(always)]
    unsafe fn splat(x: f64) -> Self {
        Scalar([x; GROUP])
    }
    #[inline(always)]
    unsafe fn add(self, o: Self) -> Self {
        Scalar(std::array::from_fn(|l| self.0[l] + o.0[l]))
    }
    #[inline(always)]
    unsafe fn sub(self, o: Self) -> Self {
        Scalar(std::array::from_fn(|l| self.0[l] - o.0[l]))
    }
    #[inline(always)]
    unsafe fn mul(self, o: Self) -> Self {
        Scalar(std::array::from_fn(|l| self.0[l] * o.0[l]))
    }
    #[inline(always)]
    unsafe fn mul_add(self, m: Self, a: Self) -> Self {
        Scalar(std::array::from_fn(|l| self.0[l].mul_add(m.0[l], a.0[l])))
    }
    #[inline(always)]
    unsafe fn at_most_one(self) -> Self {
        Scalar(std::array::from_fn(|l| self.0[l].min(1.0)))
    }
    #[inline(always)]
    unsafe fn cut(
        before: Self,
        after: Self,
        thr: Self,
        t: Self,
        cut_s: &mut Self,
        cut_t: &mut Self,
    ) -> Self {
        Scalar(std::array::from_fn(|l| {
            if before.0[l] > 0.0 && after.0[l] < thr.0[l] {
                cut_s.0[l] = after.0[l];
                cut_t.0[l] = t.0[l];
                0.0
            } else {
                after.0[l]
            }
        }))
    }
    #[inline(always)]
    unsafe fn crossed(start: Self, end: Self, thr: Self) -> bool {
        (0..GROUP).any(|l| start.0[l] > 0.0 && end.0[l] < thr.0[l])
    }
    #[inline(always)]
    unsafe fn fold4<const FIRST: bool>(self, q: &mut [f64; 4]) {
        for (l, ql) in q.iter_mut().enumerate() {
            let lo = if FIRST { self.0[l] } else { *ql + self.0[l] };
            *ql = lo + self.0[l + 4];
        }
    }
}

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Two AVX2 registers.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Avx2(__m256d, __m256d);

// Every method is an intrinsic of the type's instruction set, which the
// trait's contract (the caller detected it) makes safe to call.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_op_in_unsafe_fn)]
impl Lanes for Avx2 {
    #[inline(always)]
    unsafe fn load(x: &Lane) -> Self {
        // SAFETY: x is 8 f64 (unaligned loads).
        unsafe {
            Avx2(
                _mm256_loadu_pd(x.as_ptr()),
                _mm256_loadu_pd(x.as_ptr().add(4)),
            )
        }
    }
    #[inline(always)]
    unsafe fn store(self, x: &mut Lane) {
        // SAFETY: as above.
        unsafe {
            _mm256_storeu_pd(x.as_mut_ptr(), self.0);
            _mm256_storeu_pd(x.as_mut_ptr().add(4), self.1);
        }
    }
    #[inline(always)]
    unsafe fn splat(x: f64) -> Self {
        let v = _mm256_set1_pd(x);
        Avx2(v, v)
    }
    #[inline(always)]
    unsafe fn add(self, o: Self) -> Self {
        Avx2(_mm256_add_pd(self.0, o.0), _mm256_add_pd(self.1, o.1))
    }
    #[inline(always)]
    unsafe fn sub(self, o: Self) -> Self {
        Avx2(_mm256_sub_pd(self.0, o.0), _mm256_sub_pd(self.1, o.1))
    }
    #[inline(always)]
    unsafe fn mul(self, o: Self) -> Self {
        Avx2(_mm256_mul_pd(self.0, o.0), _mm256_mul_pd(self.1, o.1))
    }
    #[inline(always)]
    unsafe fn mul_add(self, m: Self, a: Self) -> Self {
        Avx2(
            _mm256_fmadd_pd(self.0, m.0, a.0),
            _mm256_fmadd_pd(self.1, m.1, a.1),
        )
    }
    #[inline(always)]
    unsafe fn at_most_one(self) -> Self {
        // min_pd(x, 1) returns 1 only where x < 1 fails, as f64::min does for non-NaN x.
        let one = _mm256_set1_pd(1.0);
        Avx2(_mm256_min_pd(self.0, one), _mm256_min_pd(self.1, one))
    }
    #[inline(always)]
    unsafe fn cut(
        before: Self,
        after: Self,
        thr: Self,
        t: Self,
        cut_s: &mut Self,
        cut_t: &mut Self,
    ) -> Self {
        let z = _mm256_setzero_pd();
        let half = |b, a, th, t, cs: &mut __m256d, ct: &mut __m256d| {
            let m = _mm256_and_pd(
                _mm256_cmp_pd::<_CMP_GT_OQ>(b, z),
                _mm256_cmp_pd::<_CMP_LT_OQ>(a, th),
            );
            *cs = _mm256_blendv_pd(*cs, a, m);
            *ct = _mm256_blendv_pd(*ct, t, m);
            _mm256_andnot_pd(m, a)
        };
        let lo = half(before.0, after.0, thr.0, t.0, &mut cut_s.0, &mut cut_t.0);
        let hi = half(before.1, after.1, thr.1, t.1, &mut cut_s.1, &mut cut_t.1);
        Avx2(lo, hi)
    }
    #[inline(always)]
    unsafe fn crossed(start: Self, end: Self, thr: Self) -> bool {
        let z = _mm256_setzero_pd();
        let half = |s, x, th| {
            _mm256_movemask_pd(_mm256_and_pd(
                _mm256_cmp_pd::<_CMP_GT_OQ>(s, z),
                _mm256_cmp_pd::<_CMP_LT_OQ>(x, th),
            )) != 0
        };
        half(start.0, end.0, thr.0) || half(start.1, end.1, thr.1)
    }
    #[inline(always)]
    unsafe fn fold4<const FIRST: bool>(self, q: &mut [f64; 4]) {
        let lo = if FIRST {
            self.0
        } else {
            _mm256_add_pd(_mm256_loadu_pd(q.as_ptr()), self.0)
        };
        _mm256_storeu_pd(q.as_mut_ptr(), _mm256_add_pd(lo, self.1));
    }
}

/// One AVX-512 register.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Avx512(__m512d);

// Every method is an intrinsic of the type's instruction set, which the
// trait's contract (the caller detected it) makes safe to call.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_op_in_unsafe_fn)]
impl Lanes for Avx512 {
    #[inline(always)]
    unsafe fn load(x: &Lane) -> Self {
        // SAFETY: x is 8 f64 (unaligned load).
        unsafe { Avx512(_mm512_loadu_pd(x.as_ptr())) }
    }
    #[inline(always)]
    unsafe fn store(self, x: &mut Lane) {
        // SAFETY: as above.
        unsafe { _mm512_storeu_pd(x.as_mut_ptr(), self.0) }
    }
    #[inline(always)]
    unsafe fn splat(x: f64) -> Self {
        Avx512(_mm512_set1_pd(x))
    }
    #[inline(always)]
    unsafe fn add(self, o: Self) -> Self {
        Avx512(_mm512_add_pd(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn sub(self, o: Self) -> Self {
        Avx512(_mm512_sub_pd(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn mul(self, o: Self) -> Self {
        Avx512(_mm512_mul_pd(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn mul_add(self, m: Self, a: Self) -> Self {
        Avx512(_mm512_fmadd_pd(self.0, m.0, a.0))
    }
    #[inline(always)]
    unsafe fn at_most_one(self) -> Self {
        Avx512(_mm512_min_pd(self.0, _mm512_set1_pd(1.0)))
    }
    #[inline(always)]
    unsafe fn cut(
        before: Self,
        after: Self,
        thr: Self,
        t: Self,
        cut_s: &mut Self,
        cut_t: &mut Self,
    ) -> Self {
        let was = _mm512_cmp_pd_mask::<_CMP_GT_OQ>(before.0, _mm512_setzero_pd());
        let m = was & _mm512_cmp_pd_mask::<_CMP_LT_OQ>(after.0, thr.0);
        cut_s.0 = _mm512_mask_mov_pd(cut_s.0, m, after.0);
        cut_t.0 = _mm512_mask_mov_pd(cut_t.0, m, t.0);
        Avx512(_mm512_maskz_mov_pd(!m, after.0))
    }
    #[inline(always)]
    unsafe fn crossed(start: Self, end: Self, thr: Self) -> bool {
        let was = _mm512_cmp_pd_mask::<_CMP_GT_OQ>(start.0, _mm512_setzero_pd());
        let low = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(end.0, thr.0);
        (was & low) != 0
    }
    #[inline(always)]
    unsafe fn fold4<const FIRST: bool>(self, q: &mut [f64; 4]) {
        let (x0, x1) = (
            _mm512_castpd512_pd256(self.0),
            _mm512_extractf64x4_pd::<1>(self.0),
        );
        let lo = if FIRST {
            x0
        } else {
            _mm256_add_pd(_mm256_loadu_pd(q.as_ptr()), x0)
        };
        _mm256_storeu_pd(q.as_mut_ptr(), _mm256_add_pd(lo, x1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::quadrature::gauss_hermite_normal;
    use crate::select::gtable::GTable;

    /// The walk's unclamped-below acceptance inv·(G(u − ρx_k) − G_B) is
    /// never negative on a fast lane (βM/σ_Z ≥ NARROW): over σ_X/σ_Z ratios,
    /// λ̂ and rewards putting both G arguments anywhere from beyond the
    /// tables' left end (exact zeros) through the far tail to the linear
    /// regime. A lane whose gap were below the tables' error would fail.
    #[test]
    fn fast_lane_acceptance_is_never_negative() {
        let plain = GTable::new();
        let nodes = gauss_hermite_normal(16);
        let (r_max, l) = (1.0, 4.0);
        for &sz in &[0.01, 0.125, 1.0] {
            for &rho in &[0.1, 1.0, 3.0] {
                let sx = rho * sz;
                let shifts: Vec<f64> = nodes.iter().map(|&(x, _)| rho * x).collect();
                let table = ShiftedGTable::new(&shifts);
                let mut lambda = -1.5;
                while lambda < 2.5 {
                    let mut r = -2.0;
                    while r < 3.0 {
                        let u = (r - lambda) / sz;
                        let gb = plain.g((r - r_max - sz * l) / sz);
                        for (k, &(x, _)) in nodes.iter().enumerate() {
                            let beta_m = r_max + sz * l - (lambda + sx * x);
                            if beta_m / sz < NARROW {
                                continue;
                            }
                            let a = (sz / beta_m) * (table.g(u, k) - gb);
                            assert!(
                                a >= 0.0,
                                "σ_Z {sz} ρ {rho} λ̂ {lambda} r {r} node {k}: a = {a:e}"
                            );
                        }
                        r += 0.000_937 * (1.0 + 40.0 * sz);
                    }
                    lambda += 0.0731;
                }
            }
        }
    }
}
