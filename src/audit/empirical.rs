//! The empirical audit: run a sampled mechanism on D and D′, count its
//! (discretised) outputs, choose an event on the first half of the runs and
//! turn the event's frequencies on the second half into a lower bound on ε
//! (Jagielski et al. 2020; the split keeps the choice from overfitting noise).
//!
//! **Bound.** If the mechanism is (ε, δ)-DP then for every event E,
//! P_D(E) ≤ e^ε P_D′(E) + δ, so ε ≥ log((P_D(E) − δ)/P_D′(E)). With
//! Clopper–Pearson bounds p_lo ≤ P_D(E) and p_hi ≥ P_D′(E), each at one-sided
//! level α/2 (α = 1 − confidence), ε_LB = log((p_lo − δ)/p_hi) holds with
//! probability ≥ 1 − α (union bound); it is reported as 0 when p_lo ≤ δ.
//! Both directions (D over D′ and D′ over D) are tried.
//!
//! **Event choice.** Within the allowed outputs, sort them by the first
//! half's likelihood ratio (counts + ½) — the Neyman–Pearson order — and take
//! the prefix with the largest first-half bound.
//!
//! **Determinism.** Runs are cut into chunks of [`CHUNK`]; chunk j of half h of
//! input i draws from its own PCG64 stream keyed by (seed key, i, h, j), so
//! the counts are the same for any thread count (rayon sums integer counts).

use rand_pcg::Pcg64;
use rayon::prelude::*;

use super::clopper_pearson::{lower, upper};

/// Runs per chunk (one RNG stream each).
pub const CHUNK: usize = 1 << 14;

/// SplitMix64 finaliser: a well-mixed 64-bit hash step.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Output counts of one input: `counts[h][c]` runs of half h landing in
/// category c; `runs[h]` runs in half h.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counts {
    pub counts: [Vec<u64>; 2],
    pub runs: [u64; 2],
}

/// Run `draw` `trials` times (half in each half), in parallel.
pub fn histogram<F>(trials: usize, categories: usize, key: u64, draw: F) -> Counts
where
    F: Fn(&mut Pcg64) -> usize + Sync,
{
    let halves = [trials / 2, trials - trials / 2];
    let mut out = Counts {
        counts: [vec![0; categories], vec![0; categories]],
        runs: [halves[0] as u64, halves[1] as u64],
    };
    for (h, &runs) in halves.iter().enumerate() {
        let chunks = runs.div_ceil(CHUNK);
        out.counts[h] = (0..chunks)
            .into_par_iter()
            .map(|j| {
                let state =
                    (u128::from(mix(key ^ mix(h as u64))) << 64) | u128::from(mix(j as u64));
                let mut rng = Pcg64::new(state, 0x0a02_bdbf_7bb3_c0a7);
                let mut c = vec![0u64; categories];
                for _ in 0..CHUNK.min(runs - j * CHUNK) {
                    c[draw(&mut rng)] += 1;
                }
                c
            })
            .reduce(
                || vec![0u64; categories],
                |mut a, b| {
                    for (x, y) in a.iter_mut().zip(b) {
                        *x += y;
                    }
                    a
                },
            );
    }
    out
}

/// ε_LB of one event from its counts: log((p_lo − δ)/p_hi), 0 if no evidence.
pub fn bound(k_p: u64, n_p: u64, k_q: u64, n_q: u64, delta: f64, alpha: f64) -> f64 {
    if k_p == 0 {
        return 0.0;
    }
    let lo = lower(k_p, n_p, alpha / 2.0) - delta;
    if lo <= 0.0 {
        return 0.0;
    }
    (lo / upper(k_q, n_q, alpha / 2.0)).ln().max(0.0)
}

/// The lower bound and the event it was measured on.
#[derive(Clone, Debug, PartialEq)]
pub struct LowerBound {
    pub eps: f64,
    /// The chosen categories.
    pub event: Vec<usize>,
    /// true: the event is likelier under D (index 0) than D′.
    pub d_over_dprime: bool,
}

/// Choose the event among `allowed` categories on half 0 of `d`, `dp` and
/// evaluate it on half 1; candidate events are prefixes of the categories
/// sorted by their first-half likelihood ratio.
pub fn lower_bound(
    d: &Counts,
    dp: &Counts,
    allowed: &[usize],
    delta: f64,
    alpha: f64,
) -> LowerBound {
    let order = |p: &Counts, q: &Counts| {
        let mut o: Vec<(f64, usize)> = allowed
            .iter()
            .filter(|&&c| p.counts[0][c] > 0)
            .map(|&c| {
                (
                    (p.counts[0][c] as f64 + 0.5) / (q.counts[0][c] as f64 + 0.5),
                    c,
                )
            })
            .collect();
        o.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        o
    };
    select(d, dp, [order(d, dp), order(dp, d)], delta, alpha)
}

/// As [`lower_bound`] with the candidate events fixed in advance: prefixes of
/// `order` (D over D′) and of its reverse (D′ over D) — the level sets of a
/// statistic that orders outputs by likelihood ratio.
pub fn lower_bound_ordered(
    d: &Counts,
    dp: &Counts,
    order: &[usize],
    delta: f64,
    alpha: f64,
) -> LowerBound {
    let fwd: Vec<(f64, usize)> = order
        .iter()
        .enumerate()
        .map(|(i, &c)| (-(i as f64), c))
        .collect();
    let back: Vec<(f64, usize)> = order
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &c)| (-(i as f64), c))
        .collect();
    select(d, dp, [fwd, back], delta, alpha)
}

/// Prefix search on half 0 over `orders[0]` (D over D′) and `orders[1]`
/// (D′ over D), each a list of (rank key, category) in order; prefixes are
/// cut only where the key changes and where the next category has runs.
fn select(
    d: &Counts,
    dp: &Counts,
    orders: [Vec<(f64, usize)>; 2],
    delta: f64,
    alpha: f64,
) -> LowerBound {
    let mut best = (f64::NEG_INFINITY, Vec::new(), true);
    for (dir, order) in orders.iter().enumerate() {
        let forward = dir == 0;
        let (p, q) = if forward { (d, dp) } else { (dp, d) };
        let (mut kp, mut kq) = (0u64, 0u64);
        for (j, &(key, c)) in order.iter().enumerate() {
            kp += p.counts[0][c];
            kq += q.counts[0][c];
            if p.counts[0][c] == 0 || (j + 1 < order.len() && order[j + 1].0 == key) {
                continue;
            }
            let b = bound(kp, p.runs[0], kq, q.runs[0], delta, alpha);
            if b > best.0 {
                best = (b, order[..=j].iter().map(|x| x.1).collect(), forward);
            }
        }
    }
    let (_, mut event, forward) = best;
    event.sort_unstable();
    let (p, q) = if forward { (d, dp) } else { (dp, d) };
    let kp: u64 = event.iter().map(|&c| p.counts[1][c]).sum();
    let kq: u64 = event.iter().map(|&c| q.counts[1][c]).sum();
    LowerBound {
        eps: if event.is_empty() {
            0.0
        } else {
            bound(kp, p.runs[1], kq, q.runs[1], delta, alpha)
        },
        event,
        d_over_dprime: forward,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    #[test]
    fn counts_do_not_depend_on_threads() {
        let draw = |r: &mut Pcg64| (r.random::<f64>() * 5.0) as usize;
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let a = one.install(|| histogram(100_003, 5, 7, draw));
        let b = histogram(100_003, 5, 7, draw);
        assert_eq!(a, b);
        assert_eq!(a.runs, [50_001, 50_002]);
        assert_eq!(a.counts[1].iter().sum::<u64>(), 50_002);
    }

    #[test]
    fn bound_of_a_known_pair() {
        // Randomised response with ε = ln 3: P(1|D) = 3/4, P(1|D′) = 1/4.
        let rr = |p: f64| move |r: &mut Pcg64| usize::from(r.random::<f64>() < p);
        let d = histogram(400_000, 2, 1, rr(0.75));
        let dp = histogram(400_000, 2, 2, rr(0.25));
        let lb = lower_bound(&d, &dp, &[0, 1], 0.0, 1e-6);
        assert!(lb.eps <= 3f64.ln(), "{lb:?}");
        assert!(lb.eps > 0.95 * 3f64.ln(), "{lb:?}");
        // δ is subtracted: with δ = 1/2 the evidence vanishes.
        assert_eq!(lower_bound(&d, &dp, &[0, 1], 0.5, 1e-6).eps, 0.0);
    }
}
