//! Privacy cost of one query for each mechanism (design §8).
//!
//! Every function cites the result it implements. Rewards are assumed to lie in
//! [0, R_max] with sensitivity Δ_r (design §5).

use super::normal::{log_cdf, log_mean_cdf_uniform};

/// PrivBoN with Gumbel noise is the exponential mechanism: ε = 2Δ_r/σ
/// (`thm:gumbel_priv`).
pub fn privbon_gumbel_eps(delta_r: f64, sigma: f64) -> f64 {
    2.0 * delta_r / sigma
}

/// PrivITP Phase 1, the paper's classical Gaussian-mechanism formula
/// ε_1 = Δ_r·√(2 ln(1.25/δ))/σ_X (`thm:privitp_priv`). It is a valid
/// (ε, δ) bound only when the resulting ε < 1 (Dwork & Roth, Thm A.1).
pub fn phase1_eps_classical(delta_r: f64, sigma_x: f64, delta: f64) -> f64 {
    delta_r * (2.0 * (1.25 / delta).ln()).sqrt() / sigma_x
}

/// δ(ε) of the Gaussian mechanism with sensitivity Δ and noise σ (Balle &
/// Wang 2018, Thm 8): Φ(Δ/(2σ) − εσ/Δ) − e^ε·Φ(−Δ/(2σ) − εσ/Δ), in log space.
pub fn analytic_gaussian_delta(eps: f64, delta_r: f64, sigma: f64) -> f64 {
    let a = delta_r / (2.0 * sigma);
    let b = sigma / delta_r;
    let l1 = log_cdf(a - eps * b);
    let l2 = eps + log_cdf(-a - eps * b);
    if l2 >= l1 {
        return 0.0;
    }
    l1.exp() * (-(l2 - l1).exp_m1())
}

/// The exact (smallest) ε for which the Gaussian mechanism with noise σ and
/// sensitivity Δ_r is (ε, δ)-DP (Balle & Wang 2018, analytic Gaussian
/// mechanism), found by bisection on the decreasing δ(ε) to 1e-12 relative.
pub fn phase1_eps_analytic(delta_r: f64, sigma_x: f64, delta: f64) -> f64 {
    if analytic_gaussian_delta(0.0, delta_r, sigma_x) <= delta {
        return 0.0;
    }
    let mut hi = 1.0;
    while analytic_gaussian_delta(hi, delta_r, sigma_x) > delta {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    while hi - lo > 1e-12 * hi {
        let mid = 0.5 * (lo + hi);
        if analytic_gaussian_delta(mid, delta_r, sigma_x) > delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// Phase-2 ex-post terms of PrivITP for a released λ̃ (`thm:privitp_priv`,
/// eq. `eq:privitp_expost`): ε_2^post(t) = (t − 1)·κ + ρ for an acceptance at
/// t ≤ n, and n·κ when all n candidates are rejected (every round a rejection).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Phase2Terms {
    /// κ = log E_u[Φ((λ̃ + βMu − R_max + Δ_r)/σ_Z)] − log E_u[Φ((λ̃ + βMu − R_max)/σ_Z)]:
    /// the cost of one rejection.
    pub kappa: f64,
    /// ρ = log E_u[Φ((Δ_r − λ̃ − βMu)/σ_Z)] − log E_u[Φ((−λ̃ − βMu)/σ_Z)]:
    /// the cost of the accepting round.
    pub accept: f64,
}

impl Phase2Terms {
    /// With βM = R_max + σ_Z·L − λ̃; when βM ≤ 0 the acceptance is the plain
    /// threshold r̃ ≥ λ̃, i.e. the same formula with βM = 0.
    pub fn new(lambda_tilde: f64, sigma_z: f64, r_max: f64, delta_r: f64, l: f64) -> Self {
        let beta_m = (r_max + sigma_z * l - lambda_tilde).max(0.0);
        let b = beta_m / sigma_z;
        let kappa = log_mean_cdf_uniform((lambda_tilde - r_max + delta_r) / sigma_z, b)
            - log_mean_cdf_uniform((lambda_tilde - r_max) / sigma_z, b);
        let accept = log_mean_cdf_uniform((delta_r - lambda_tilde) / sigma_z, -b)
            - log_mean_cdf_uniform(-lambda_tilde / sigma_z, -b);
        Self { kappa, accept }
    }

    /// ε_2^post(t) for t ∈ [1, n+1] (t = n+1: all rejected).
    pub fn eps_post(&self, t: usize, n: usize) -> f64 {
        if t > n {
            n as f64 * self.kappa
        } else {
            (t - 1) as f64 * self.kappa + self.accept
        }
    }

    /// Worst case over outcomes t ∈ [1, n+1].
    pub fn eps_max_over_t(&self, n: usize) -> f64 {
        (n - 1) as f64 * self.kappa + self.kappa.max(self.accept)
    }
}
