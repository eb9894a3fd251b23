//! InferenceTimePessimism (Huang et al. 2025) and its private variant PrivITP
//! (paper `alg:privitp`): acceptance rules of Phase 2 given Phase 1's λ.

use crate::math::normal;

/// ITP's acceptance probability min(w/M, 1), w = relu((r̂ − λ)/β),
/// M = (R_max − λ)/β. If M ≤ 0 (only possible when rewards exceed R_max),
/// acceptance is 1{r̂ ≥ λ}.
#[derive(Clone, Copy, Debug)]
pub struct ItpAcceptance {
    pub lambda: f64,
    pub beta: f64,
    /// βM = R_max − λ.
    pub beta_m: f64,
}

impl ItpAcceptance {
    pub fn new(lambda: f64, beta: f64, r_max: f64) -> Self {
        Self {
            lambda,
            beta,
            beta_m: r_max - lambda,
        }
    }

    #[inline]
    pub fn prob(&self, r: f64) -> f64 {
        if self.beta_m <= 0.0 {
            return if r >= self.lambda { 1.0 } else { 0.0 };
        }
        ((r - self.lambda) / self.beta_m).clamp(0.0, 1.0)
    }
}

/// PrivITP's Phase-2 rule given the released λ̃: accept with min(w/M, 1),
/// w = relu((r̂ + N(0, σ_Z²) − λ̃)/β), M = (R_max + σ_Z·L − λ̃)/β; if M ≤ 0,
/// accept iff r̂ + N(0, σ_Z²) ≥ λ̃ (design §6).
#[derive(Clone, Copy, Debug)]
pub struct PrivItpAcceptance {
    pub lambda_tilde: f64,
    pub sigma_z: f64,
    /// βM = R_max + σ_Z·L − λ̃.
    pub beta_m: f64,
}

impl PrivItpAcceptance {
    pub fn new(lambda_tilde: f64, sigma_z: f64, r_max: f64, l: f64) -> Self {
        Self {
            lambda_tilde,
            sigma_z,
            beta_m: r_max + sigma_z * l - lambda_tilde,
        }
    }

    /// Acceptance probability marginalised over the query noise. By
    /// `lem:reformulation`, accept ⇔ r̃ ≥ λ̃ + βM·u with u ~ Unif[0, 1], so
    /// P = E_u[Φ((r̂ − λ̃ − βM·u)/σ_Z)], a closed form through G.
    #[inline]
    pub fn prob(&self, r: f64) -> f64 {
        let a = (r - self.lambda_tilde) / self.sigma_z;
        if self.beta_m <= 0.0 {
            return normal::cdf(a);
        }
        normal::mean_cdf_uniform(a, -self.beta_m / self.sigma_z)
    }

    /// The literal coin given the noisy reward r̃ and a uniform draw.
    #[inline]
    pub fn coin(&self, r_noisy: f64, uniform: f64) -> bool {
        if self.beta_m <= 0.0 {
            return r_noisy >= self.lambda_tilde;
        }
        // min(w/M, 1) with w/M = (r̃ − λ̃)/(βM).
        uniform < ((r_noisy - self.lambda_tilde) / self.beta_m).clamp(0.0, 1.0)
    }
}
