//! The normalisation constant of χ²-regularised rejection sampling (ITP
//! Phase 1, paper `alg:privitp` line 3): the unique λ with
//!
//! ```text
//!     (1/n) Σ_i relu((r_i − λ)/β) = 1 .
//! ```
//!
//! F(λ) = Σ relu(r_i − λ) is continuous, piecewise linear and strictly
//! decreasing where positive, so with the rewards sorted in decreasing order
//! r_(1) ≥ … ≥ r_(n) and S_k = r_(1) + … + r_(k), the root is
//! λ = (S_k − nβ)/k for the smallest k with λ ≥ r_(k+1) (r_(n+1) = −∞).
//! Ties and repeated values (bootstrap batches repeat responses) need no special
//! case: a tie block enters the active set together, and the condition
//! `λ ≥ r_(k+1)` holds or fails for the whole block at once.

/// Solve for λ given rewards `r` (any order) and β > 0. Exact up to floating
/// point; the sum is accumulated in sorted order to keep drift at O(n·ulp).
pub fn solve_lambda(r: &[f64], beta: f64) -> f64 {
    assert!(!r.is_empty(), "solve_lambda needs at least one reward");
    assert!(beta > 0.0, "β must be positive");
    let mut sorted = r.to_vec();
    sorted.sort_unstable_by(|a, b| b.total_cmp(a));
    solve_lambda_sorted_desc(&sorted, beta)
}

/// As [`solve_lambda`], for rewards already sorted in decreasing order.
pub fn solve_lambda_sorted_desc(sorted: &[f64], beta: f64) -> f64 {
    let n = sorted.len();
    let target = n as f64 * beta;
    let mut sum = 0.0;
    for k in 1..=n {
        sum += sorted[k - 1];
        let lambda = (sum - target) / k as f64;
        if k == n || lambda >= sorted[k] {
            return lambda;
        }
    }
    unreachable!("the loop returns at k = n")
}

/// As [`solve_lambda`] without sorting: Newton's method on the convex,
/// decreasing, piecewise-linear F(λ) = Σ relu(r_i − λ) − nβ, started at the
/// k = n solution λ₀ = (Σr − nβ)/n, where F(λ₀) ≥ 0. From the left of the
/// root Newton's iterates increase monotonically (the tangent of a convex
/// decreasing function lies below it) and each step is the closed form
/// λ = (Σ_{r_i > λ_j} r_i − nβ)/k_j over the current active set, so the
/// iteration ends, exactly, once the active set stops changing — after 4–5
/// passes over the batch on real data instead of an O(n log n) sort.
///
/// The result is the closed form of [`solve_lambda_sorted_desc`] over the
/// same active set, summed by [`lane_sum`]'s fixed order rather than in
/// sorted order (a difference of a few ulp of the sum). Ties need no special
/// case: an item with r_i = λ contributes relu(0) = 0 whether or not it is
/// counted.
///
/// Each pass is a branch-free loop over eight accumulators, compiled for the
/// widest vector unit the CPU has (chosen at run time); every variant adds
/// the same numbers in the same order, so λ̂ does not depend on the CPU.
pub fn solve_lambda_newton(r: &[f64], beta: f64) -> f64 {
    solve_lambda_newton_from(r, beta, None)
}

/// [`solve_lambda_newton`] started from a guess (a previous replicate's λ̂
/// for the same n and β): one Newton step from any point with a non-empty
/// active set lands at or left of the root — from the right because the
/// tangent of a convex decreasing function lies below it — and the
/// iteration continues from there as from λ₀, so a close guess saves the
/// passes that climb from the mean. The result is the closed form over the
/// root's active set either way.
pub fn solve_lambda_newton_from(r: &[f64], beta: f64, guess: Option<f64>) -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: AVX-512F was detected.
            return unsafe { newton_avx512(r, beta, guess) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 was detected.
            return unsafe { newton_avx2(r, beta, guess) };
        }
    }
    newton(r, beta, guess)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn newton_avx512(r: &[f64], beta: f64, guess: Option<f64>) -> f64 {
    newton(r, beta, guess)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn newton_avx2(r: &[f64], beta: f64, guess: Option<f64>) -> f64 {
    newton(r, beta, guess)
}

/// Lanes of [`lane_sum`].
pub const SUM_LANES: usize = 8;

/// Σ x_i·1{x_i > above} and the count of such x_i, in a fixed order: item i
/// into accumulator i mod 8 in increasing i, then
/// ((a₀ + a₁) + (a₂ + a₃)) + ((a₄ + a₅) + (a₆ + a₇)). (`above` = −∞ sums
/// everything.) Branch-free, so it vectorises; adding +0 for an inactive
/// item leaves an accumulator's bits unchanged.
#[inline(always)]
pub fn lane_sum(r: &[f64], above: f64) -> (f64, usize) {
    let mut acc = [0.0f64; SUM_LANES];
    let mut cnt = [0u64; SUM_LANES];
    let chunks = r.chunks_exact(SUM_LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..SUM_LANES {
            let on = c[l] > above;
            acc[l] += if on { c[l] } else { 0.0 };
            cnt[l] += u64::from(on);
        }
    }
    for (l, &x) in rest.iter().enumerate() {
        let on = x > above;
        acc[l] += if on { x } else { 0.0 };
        cnt[l] += u64::from(on);
    }
    let sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    (sum, cnt.iter().sum::<u64>() as usize)
}

#[inline(always)]
fn newton(r: &[f64], beta: f64, guess: Option<f64>) -> f64 {
    let n = r.len();
    assert!(n > 0, "solve_lambda needs at least one reward");
    let target = n as f64 * beta;
    let from_guess = guess.filter(|g| g.is_finite()).and_then(|g| {
        let (sum, count) = lane_sum(r, g);
        (count > 0).then(|| (sum - target) / count as f64)
    });
    // Without a guess, the closed form over every item (k = n): the same
    // expression as every later iterate, so a guess that starts at the root
    // returns the same bits.
    let mut lambda =
        from_guess.unwrap_or_else(|| (lane_sum(r, f64::NEG_INFINITY).0 - target) / n as f64);
    // Each pass strictly grows the active set's threshold; n + 2 passes
    // bound the number of distinct active sets (a guard, never reached).
    for _ in 0..n + 2 {
        let (sum, count) = lane_sum(r, lambda);
        if count == 0 {
            // Only possible through rounding at λ = max: the root is max − nβ/#max.
            return lambda;
        }
        let next = (sum - target) / count as f64;
        if next <= lambda {
            return lambda.max(next);
        }
        lambda = next;
    }
    lambda
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    fn mean_weight(r: &[f64], lambda: f64, beta: f64) -> f64 {
        r.iter()
            .map(|&x| ((x - lambda) / beta).max(0.0))
            .sum::<f64>()
            / r.len() as f64
    }

    /// Independent computation: bisection on the defining equation.
    fn bisect(r: &[f64], beta: f64) -> f64 {
        let max = r.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (mut lo, mut hi) = (max - beta * r.len() as f64 - 1.0, max);
        for _ in 0..400 {
            let mid = 0.5 * (lo + hi);
            if mean_weight(r, mid, beta) > 1.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        0.5 * (lo + hi)
    }

    fn check(r: &[f64], beta: f64) {
        let l = solve_lambda(r, beta);
        let b = bisect(r, beta);
        let scale = r.iter().fold(beta, |m, x| m.max(x.abs()));
        assert!(
            (l - b).abs() <= 1e-9 * scale,
            "r={r:?} β={beta}: exact {l} vs bisection {b}"
        );
        // The residual is limited by the conditioning of (r − λ)/β: an ulp of r over β.
        let resid_tol = 1e-9 + 4.0 * f64::EPSILON * scale / beta;
        assert!(
            (mean_weight(r, l, beta) - 1.0).abs() < resid_tol,
            "equation residual at {l} (β={beta})"
        );
    }

    #[test]
    fn adversarial_inputs_match_bisection() {
        // n = 1: λ = r − β.
        assert!((solve_lambda(&[0.7], 0.25) - 0.45).abs() < 1e-15);
        check(&[0.7], 0.25);
        // All equal.
        check(&[0.5; 17], 0.05);
        assert!((solve_lambda(&[0.5; 17], 0.05) - 0.45).abs() < 1e-15);
        // Coarse grid with many ties, as from bootstrap repeats.
        let grid: Vec<f64> = (0..200).map(|i| f64::from(i % 5) * 0.25).collect();
        for beta in [1e-6, 1e-3, 0.05, 0.5, 10.0, 1e6] {
            check(&grid, beta);
        }
        // Huge and tiny β on random data.
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        for n in [2usize, 3, 10, 4096] {
            let r: Vec<f64> = (0..n).map(|_| rng.random::<f64>()).collect();
            for beta in [1e-9, 1e-4, 0.01, 0.5, 3.0, 1e5] {
                check(&r, beta);
            }
        }
    }

    /// A guess anywhere — left or right of the root, beyond the maximum,
    /// far away, NaN — gives the root's closed form bit for bit.
    #[test]
    fn any_guess_gives_the_same_root() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(13);
        for n in [1usize, 2, 5, 64, 1000, 4096] {
            for beta in [1e-6, 0.05, 0.5, 30.0] {
                let cont: Vec<f64> = (0..n).map(|_| rng.random::<f64>()).collect();
                let grid: Vec<f64> = (0..n)
                    .map(|_| f64::from(rng.random_range(0..5u32)) * 0.25)
                    .collect();
                for r in [cont, grid] {
                    let want = solve_lambda_newton(&r, beta);
                    for guess in [
                        want,
                        want - 1e-9,
                        want + 1e-9,
                        want - 0.3,
                        want + 0.2,
                        -1e9,
                        1e9,
                        2.0,
                        f64::NAN,
                    ] {
                        let got = solve_lambda_newton_from(&r, beta, Some(guess));
                        assert_eq!(
                            got.to_bits(),
                            want.to_bits(),
                            "n={n} β={beta} guess {guess}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn newton_matches_the_sorted_closed_form() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(11);
        for n in [1usize, 2, 3, 7, 64, 1000, 4096] {
            for beta in [1e-9, 1e-4, 0.01, 0.05, 0.5, 3.0, 1e5] {
                // Continuous rewards, and a coarse grid with bootstrap-style repeats.
                let cont: Vec<f64> = (0..n).map(|_| rng.random::<f64>()).collect();
                let grid: Vec<f64> = (0..n)
                    .map(|_| f64::from(rng.random_range(0..5u32)) * 0.25)
                    .collect();
                for r in [cont, grid] {
                    let exact = solve_lambda(&r, beta);
                    let fast = solve_lambda_newton(&r, beta);
                    let scale = r.iter().fold(beta, |m, x| m.max(x.abs()));
                    assert!(
                        (exact - fast).abs() <= 8.0 * n as f64 * f64::EPSILON * scale,
                        "n={n} β={beta}: sorted {exact} vs Newton {fast}"
                    );
                }
            }
        }
    }

    /// Every instruction-set variant gives the same bits, and the lane sum
    /// is the documented fixed order (an independent scalar loop).
    #[test]
    fn newton_variants_agree_bit_for_bit() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(12);
        for n in [1usize, 5, 8, 9, 63, 1000, 4097] {
            let r: Vec<f64> = (0..n).map(|_| rng.random::<f64>() * 3.0 - 1.0).collect();
            let mut acc = [0.0f64; 8];
            for (i, &x) in r.iter().enumerate() {
                if x > 0.25 {
                    acc[i % 8] += x;
                }
            }
            let want =
                ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
            assert_eq!(lane_sum(&r, 0.25).0.to_bits(), want.to_bits());
            let base = newton(&r, 0.05, None);
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: detected.
                    assert_eq!(
                        unsafe { newton_avx2(&r, 0.05, None) }.to_bits(),
                        base.to_bits()
                    );
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: detected.
                    assert_eq!(
                        unsafe { newton_avx512(&r, 0.05, None) }.to_bits(),
                        base.to_bits()
                    );
                }
            }
            assert_eq!(solve_lambda_newton(&r, 0.05).to_bits(), base.to_bits());
        }
    }

    #[test]
    fn tiny_beta_approaches_the_maximum() {
        let r = [0.1, 0.9, 0.3, 0.9];
        // Two maxima share the weight: λ = 0.9 − 2β.
        assert!((solve_lambda(&r, 1e-4) - (0.9 - 2e-4)).abs() < 1e-12);
    }
}
