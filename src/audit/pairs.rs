//! Worst-case neighbouring inputs, read off the privacy proofs. Adjacency is
//! the paper's (`def:privacy`, sensitivity Δ_r): every reward of D lies within
//! Δ_r of the same candidate's reward under D′, and all rewards lie in
//! [0, R_max]. Index 0 of each pair is D (the input whose output probability
//! the proof bounds from above), index 1 is D′.

use crate::bail_input;
use anyhow::Result;

/// Check that a pair can exist: Δ_r ≤ R_max (else a reward cannot move by
/// Δ_r inside [0, R_max]).
pub fn check_range(r_max: f64, delta_r: f64) -> Result<()> {
    if !(delta_r > 0.0 && delta_r <= r_max) {
        bail_input!(
            "--delta-r must lie in (0, R_max] = (0, {r_max}] for the audit (got {delta_r}): rewards of neighbouring inputs must both lie in [0, R_max]"
        );
    }
    Ok(())
}

/// PrivBoN's pair (both noises): candidate 0 moved up by Δ_r, every other
/// down by Δ_r, candidate 0 of the smallest mass under D′:
/// D′ = (0, R_max, …, R_max), D = (Δ_r, R_max − Δ_r, …, R_max − Δ_r).
///
/// * Gumbel (`thm:gumbel_priv`, proof in `app:proofs_bon`): the likelihood
///   ratio of output 0 is e^{Δ_r/σ}·Σ_j e^{r′_j/σ}/Σ_j e^{r_j/σ}; both factors
///   reach e^{Δ_r/σ} exactly with these shifts, the second as the mass of
///   candidate 0 vanishes, so ε → 2Δ_r/σ as n grows.
/// * Gaussian (`thm:gaussian_priv`, Lebensold et al. 2024 Thm 8): the two
///   expectations of `eq:gaussian_mbon_eps` are P_D(0) (gaps −(R_max − 2Δ_r)/σ)
///   and P_D′(0) (gaps −R_max/σ) of exactly this pair, so the bound is attained.
pub fn privbon_pair(r_max: f64, delta_r: f64, n: usize) -> [Vec<f64>; 2] {
    let mut d = vec![r_max - delta_r; n];
    let mut dp = vec![r_max; n];
    d[0] = delta_r;
    dp[0] = 0.0;
    [d, dp]
}

/// PrivITP's pair for halting time t ∈ [1, n + 1] (`thm:privitp_priv`, proof
/// in `app:proofs_itp`).
#[derive(Clone, Debug, PartialEq)]
pub struct ItpPair {
    pub t: usize,
    /// Phase-1 batch A of D and D′: all rewards equal to c, so λ̂ = c − β and
    /// the two λ̂ differ by exactly Δ_r, the sensitivity bound of the proof's
    /// Phase-1 step ("|λ*(D) − λ*(D′)| ≤ Δ_r").
    pub batch_a: [Vec<f64>; 2],
    /// Phase-2 batch B of D and D′: the proof's "worst-case shifts" and
    /// "worst-case query values": rounds i < t (rejections) have q′_i = R_max
    /// and δ_i = −Δ_r; the accepting round t has q′_t = 0 and δ_t = +Δ_r
    /// (lem:monotone). Rounds after t never run; they repeat the rejection
    /// values. For t = n + 1 every round is a rejection.
    pub batch_b: [Vec<f64>; 2],
}

/// Build the pair for halting time `t`. λ̂ of the two inputs straddle
/// `centre` (moved inside the feasible range), so the Phase-1 noise puts
/// most mass where Phase 2 should leak most; D's λ̂ is the higher one when
/// `d_lambda_higher`. The proof leaves λ̂ free, so the audit tries several
/// centres and both directions and keeps the worst by exact ε.
pub fn privitp_pair(
    t: usize,
    n: usize,
    (r_max, delta_r, beta): (f64, f64, f64),
    centre: f64,
    d_lambda_higher: bool,
) -> ItpPair {
    assert!((1..=n + 1).contains(&t));
    let mut d = vec![r_max - delta_r; n];
    let mut dp = vec![r_max; n];
    if t <= n {
        d[t - 1] = delta_r;
        dp[t - 1] = 0.0;
    }
    let half = 0.5 * delta_r;
    let m = (centre + beta).clamp(half, r_max - half);
    let (hi, lo) = (m + half, m - half);
    let (cd, cdp) = if d_lambda_higher { (hi, lo) } else { (lo, hi) };
    ItpPair {
        t,
        batch_a: [vec![cd; n], vec![cdp; n]],
        batch_b: [d, dp],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::lambda::solve_lambda;

    #[test]
    fn pairs_are_neighbours_in_range() {
        let (r, dr, beta) = (1.0, 0.39, 0.05);
        for t in 1..=5 {
            for up in [false, true] {
                let p = privitp_pair(t, 4, (r, dr, beta), 0.3, up);
                for side in [&p.batch_a, &p.batch_b] {
                    for (a, b) in side[0].iter().zip(&side[1]) {
                        assert!((a - b).abs() <= dr + 1e-15);
                        assert!((0.0..=r).contains(a) && (0.0..=r).contains(b));
                    }
                }
                let l = [
                    solve_lambda(&p.batch_a[0], beta),
                    solve_lambda(&p.batch_a[1], beta),
                ];
                assert!(((l[0] - l[1]).abs() - dr).abs() < 1e-12, "λ̂ moves by Δ_r");
                assert_eq!(l[0] > l[1], up);
            }
        }
        let [d, dp] = privbon_pair(r, dr, 3);
        assert_eq!(d, vec![0.39, 0.61, 0.61]);
        assert_eq!(dp, vec![0.0, 1.0, 1.0]);
    }
}
