//! Exact privacy loss of a constructed pair, where the output law has a
//! closed form.
//!
//! * PrivBoN (Gumbel): the selection law is softmax(r/σ) (`thm:gumbel_priv`,
//!   the library's own [`softmax_weights`]); the loss is the largest
//!   |log P_D(k)/P_D′(k)| over outputs k (pure DP: a singleton is the worst
//!   event).
//! * Gaussian PrivBoN: P(k) = E_z[Π_{j≠k} Φ(z + (r_k − r_j)/σ)]
//!   (`prop:gaussian_policy`), integrated here in log space, independently of
//!   the accountant's formula.
//! * PrivITP, per halting time t: the output is (λ̃, t); λ̃ has density
//!   φ((λ̃ − λ̂)/σ_X)/σ_X inside the clamp and atoms at its ends, and given λ̃
//!   the halting law is Π_{i<t}(1 − a_i)·a_t with a_i the library's closed-form
//!   acceptance ([`PrivItpAcceptance::prob`]). The exact ε at δ is the
//!   smallest ε with sup_{E ⊆ {t}} P_D(E) − e^ε P_D′(E) ≤ δ in both
//!   directions, i.e. the hockey-stick integral ∫ (p_D − e^ε p_D′)_+ ≤ δ.

use crate::math::normal::{log_cdf, log_pdf};
use crate::math::quadrature::log_integrate_exp;
use crate::select::itp::PrivItpAcceptance;
use crate::select::pool::{Pool, Values};
use crate::select::privbon::softmax_weights;

/// A pool whose proxy rewards are `rewards` (the samplers read only r̂).
pub fn pool(rewards: &[f64]) -> Pool {
    Pool {
        values: rewards
            .iter()
            .map(|&r| Values {
                proxy: r,
                ..Values::default()
            })
            .collect(),
        mean: Values::default(),
    }
}

/// max_k max(log P_D(k) − log P_D′(k), reverse) for two log-laws.
fn max_log_ratio(ld: &[f64], ldp: &[f64]) -> f64 {
    ld.iter()
        .zip(ldp)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max)
}

/// Exact ε of Gumbel PrivBoN on the pair.
pub fn privbon_gumbel(pair: &[Vec<f64>; 2], sigma: f64) -> f64 {
    let law = |r: &Vec<f64>| {
        let p = pool(r);
        let batch: Vec<usize> = (0..r.len()).collect();
        let mut w = Vec::new();
        softmax_weights(&p, &batch, sigma, &mut w);
        w.iter().map(|x| x.ln()).collect::<Vec<f64>>()
    };
    max_log_ratio(&law(&pair[0]), &law(&pair[1]))
}

/// log P(candidate k wins) under Gaussian noise σ (`prop:gaussian_policy`).
pub fn gauss_log_selection(r: &[f64], k: usize, sigma: f64) -> f64 {
    let f = |z: f64| {
        log_pdf(z)
            + r.iter()
                .enumerate()
                .filter(|&(j, _)| j != k)
                .map(|(_, &rj)| log_cdf(z + (r[k] - rj) / sigma))
                .sum::<f64>()
    };
    let peak = (-2000..=2000)
        .map(|i| f(i as f64 * 0.02))
        .fold(f64::NEG_INFINITY, f64::max);
    log_integrate_exp(f, -40.0, 40.0, peak, 400)
}

/// Exact ε of Gaussian PrivBoN on the pair.
pub fn privbon_gauss(pair: &[Vec<f64>; 2], sigma: f64) -> f64 {
    // Candidates with equal rewards have equal selection laws: integrate once.
    let law = |r: &Vec<f64>| {
        let mut memo: Vec<(f64, f64)> = Vec::new();
        (0..r.len())
            .map(|k| match memo.iter().find(|m| m.0 == r[k]) {
                Some(m) => m.1,
                None => {
                    let v = gauss_log_selection(r, k, sigma);
                    memo.push((r[k], v));
                    v
                }
            })
            .collect::<Vec<f64>>()
    };
    max_log_ratio(&law(&pair[0]), &law(&pair[1]))
}

/// PrivITP's mechanism parameters, as the audit runs it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ItpModel {
    pub sigma_x: f64,
    pub sigma_z: f64,
    pub r_max: f64,
    pub l: f64,
    pub clamp: (f64, f64),
    pub n: usize,
}

impl ItpModel {
    /// log P(halting time = t | λ̃) on Phase-2 rewards `q` (t = n + 1: all
    /// rejected).
    pub fn log_halting(&self, q: &[f64], lambda_tilde: f64, t: usize) -> f64 {
        let acc = PrivItpAcceptance::new(lambda_tilde, self.sigma_z, self.r_max, self.l);
        // The pairs repeat a reward or two: evaluate each distinct one once.
        let mut memo: [(f64, f64); 4] = [(f64::NAN, 0.0); 4];
        let mut prob = |r: f64| {
            if let Some(m) = memo.iter().find(|m| m.0 == r) {
                return m.1;
            }
            let a = acc.prob(r);
            memo.rotate_right(1);
            memo[0] = (r, a);
            a
        };
        let mut s = 0.0;
        for (i, &qi) in q.iter().enumerate().take(t.min(self.n)) {
            let a = prob(qi);
            s += if i + 1 == t { a.ln() } else { (-a).ln_1p() };
        }
        s
    }

    /// log of λ̃'s law at a released value: the atom mass at a clamp end, else
    /// the density. Both inputs share the atoms, so ratios are well defined.
    pub fn log_lambda(&self, lambda_tilde: f64, lambda_hat: f64) -> f64 {
        let (lo, hi) = self.clamp;
        let z = (lambda_tilde - lambda_hat) / self.sigma_x;
        if lambda_tilde <= lo {
            log_cdf((lo - lambda_hat) / self.sigma_x)
        } else if lambda_tilde >= hi {
            log_cdf((lambda_hat - hi) / self.sigma_x)
        } else {
            log_pdf(z) - self.sigma_x.ln()
        }
    }
}

/// Exact ε at δ of PrivITP on `pair` (λ̂ of D and D′ in `lambda`, Phase-2
/// rewards in `q`) over events inside {halting time = t}.
pub fn privitp_t(model: &ItpModel, lambda: [f64; 2], q: [&[f64]; 2], t: usize, delta: f64) -> f64 {
    let (lo, hi) = model.clamp;
    let step = ((hi - lo) / 4000.0).min(model.sigma_x / 200.0);
    let k = (((hi - lo) / step).ceil() as usize).max(1);
    let step = (hi - lo) / k as f64;
    let joint = |side: usize, lt: f64| {
        (model.log_lambda(lt, lambda[side]) + model.log_halting(q[side], lt, t)).exp()
    };
    // Atoms (λ̃ clamped to an end) and the interior density on a grid
    // (trapezoid weights; a kink of (·)_+ costs O(step²)).
    let atoms: Vec<[f64; 2]> = [lo, hi]
        .iter()
        .map(|&x| [joint(0, x), joint(1, x)])
        .collect();
    let grid: Vec<(f64, [f64; 2])> = (0..=k)
        .map(|i| {
            let x = (lo + i as f64 * step).clamp(lo.next_up(), hi.next_down());
            let w = if i == 0 || i == k { 0.5 * step } else { step };
            (w, [joint(0, x), joint(1, x)])
        })
        .collect();
    let hockey = |eps: f64| -> f64 {
        let e = eps.exp();
        let mut worst: f64 = 0.0;
        for (a, b) in [(0, 1), (1, 0)] {
            let mut s = 0.0;
            for m in &atoms {
                s += (m[a] - e * m[b]).max(0.0);
            }
            for (w, d) in &grid {
                s += w * (d[a] - e * d[b]).max(0.0);
            }
            worst = worst.max(s);
        }
        worst
    };
    if hockey(0.0) <= delta {
        return 0.0;
    }
    let mut top = 1.0;
    while hockey(top) > delta && top < 1e3 {
        top *= 2.0;
    }
    let mut bot = 0.0;
    for _ in 0..60 {
        let mid = 0.5 * (bot + top);
        if hockey(mid) > delta {
            bot = mid;
        } else {
            top = mid;
        }
    }
    top
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::pairs::privbon_pair;
    use crate::privacy::accountant::{privbon_gauss_eps, privbon_gumbel_eps};

    #[test]
    fn gumbel_pair_matches_hand_formula_and_approaches_the_bound() {
        // Output 0: e^{Δ/σ}(1 + (n−1)e^{R/σ}) / (e^{Δ/σ} + (n−1)e^{(R−Δ)/σ}).
        let (r, dr, s) = (1.0f64, 0.39f64, 0.5f64);
        for n in [2usize, 16, 4096] {
            let m = (n - 1) as f64;
            let want = (dr / s).exp() * (1.0 + m * (r / s).exp())
                / ((dr / s).exp() + m * ((r - dr) / s).exp());
            let got = privbon_gumbel(&privbon_pair(r, dr, n), s);
            assert!((got - want.ln()).abs() < 1e-12, "n={n}");
            assert!(got < privbon_gumbel_eps(dr, s));
        }
        let big = privbon_gumbel(&privbon_pair(r, dr, 1 << 20), s);
        assert!(privbon_gumbel_eps(dr, s) - big < 1e-3);
    }

    #[test]
    fn gauss_pair_attains_the_accountant_bound() {
        // The accountant integrates eq:gaussian_mbon_eps its own way; the pair's
        // selection integral must reproduce it (the bound is attained).
        for (dr, s, n) in [
            (0.39, 0.1, 16),
            (1.0, 0.5, 16),
            (0.39, 1.0, 4),
            (1.0, 2.0, 64),
        ] {
            let got = privbon_gauss(&privbon_pair(1.0, dr, n), s);
            let want = privbon_gauss_eps(1.0, dr, s, n);
            assert!(
                (got - want).abs() < 1e-8 * want.max(1.0),
                "{dr} {s} {n}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn hockey_stick_reproduces_the_analytic_gaussian_epsilon() {
        // Phase 2 that never accepts (rewards far below λ̃) leaves t = n + 1 with
        // probability 1 on both inputs: the output is λ̃ alone, the Gaussian
        // mechanism, whose exact ε at δ is Balle–Wang's (the accountant's
        // bisection on its closed-form δ(ε)). A wide clamp makes the atoms
        // negligible.
        for (dr, sx, delta) in [(1.0, 0.5, 1e-2), (0.39, 0.25, 1e-5), (1.0, 2.0, 1e-3)] {
            let m = ItpModel {
                sigma_x: sx,
                sigma_z: 0.1,
                r_max: 1.0,
                l: 4.0,
                clamp: (-60.0 * sx, 60.0 * sx),
                n: 3,
            };
            let q = [-1e3; 3];
            let got = privitp_t(&m, [0.0, dr], [&q, &q], 4, delta);
            let want = crate::privacy::accountant::phase1_eps_analytic(dr, sx, delta);
            assert!(
                (got - want).abs() < 1e-5 * want,
                "{dr} {sx} {delta}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn halting_law_sums_to_one() {
        let m = ItpModel {
            sigma_x: 0.25,
            sigma_z: 0.25,
            r_max: 1.0,
            l: 4.0,
            clamp: (0.0, 1.0),
            n: 5,
        };
        let q = [0.2, 0.9, 0.4, 0.0, 1.0];
        for lt in [0.0, 0.3, 1.0] {
            let s: f64 = (1..=6).map(|t| m.log_halting(&q, lt, t).exp()).sum();
            assert!((s - 1.0).abs() < 1e-12);
        }
    }
}
