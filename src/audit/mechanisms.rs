//! The literal sampled mechanisms, driven through the real samplers of
//! `crate::select` and composed as `sweep::engine` composes them: PrivBoN is
//! one call of [`privbon_gumbel_sampled`] / [`privbon_gauss_sampled`];
//! PrivITP solves λ̂ with [`solve_lambda`] on batch A, releases
//! λ̃ = clamp(λ̂ + σ_X·z), then runs [`rejection_sampled`] over batch B with the
//! coin of [`PrivItpAcceptance::coin`] on r̂ + σ_Z·z′ and a uniform, drawn from
//! the same stream in the engine's order (z′ then u per round). A sampler bug
//! in `select` is therefore a bug the empirical audit sees.
//!
//! The [`Fault`] parameter breaks a mechanism on purpose (tests only).

use rand::RngExt;
use rand_distr::StandardNormal;
use rand_pcg::Pcg64;

use super::Fault;
use super::exact::{ItpModel, pool};
use crate::select::itp::PrivItpAcceptance;
use crate::select::lambda::solve_lambda;
use crate::select::pool::Pool;
use crate::select::privbon::{privbon_gauss_sampled, privbon_gumbel_sampled};
use crate::select::rejection::rejection_sampled;

/// One PrivBoN input: its pool and the batch (every candidate once).
pub struct BonInput {
    pub pool: Pool,
    pub batch: Vec<usize>,
}

impl BonInput {
    pub fn new(rewards: &[f64]) -> Self {
        Self {
            pool: pool(rewards),
            batch: (0..rewards.len()).collect(),
        }
    }

    /// The selected batch position.
    pub fn draw(&self, sigma: f64, gauss: bool, fault: Fault, rng: &mut Pcg64) -> usize {
        let s = if fault == Fault::HalveNoise {
            0.5 * sigma
        } else {
            sigma
        };
        if gauss {
            privbon_gauss_sampled(&self.pool, &self.batch, s, rng)
        } else {
            privbon_gumbel_sampled(&self.pool, &self.batch, s, rng)
        }
    }
}

/// One PrivITP input: λ̂ of its batch A and its batch B.
pub struct ItpInput {
    pub lambda_hat: f64,
    pub batch_b: Pool,
}

impl ItpInput {
    pub fn new(batch_a: &[f64], batch_b: &[f64], beta: f64) -> Self {
        Self {
            lambda_hat: solve_lambda(batch_a, beta),
            batch_b: pool(batch_b),
        }
    }

    /// One run: the released (λ̃, halting time t ∈ [1, n + 1]).
    pub fn draw(&self, m: &ItpModel, fault: Fault, rng: &mut Pcg64) -> (f64, usize) {
        let scale = if fault == Fault::HalveNoise { 0.5 } else { 1.0 };
        let z: f64 = rng.sample(StandardNormal);
        let raw = if fault == Fault::DropPhase1Noise {
            self.lambda_hat
        } else {
            self.lambda_hat + scale * m.sigma_x * z
        };
        let lt = raw.clamp(m.clamp.0, m.clamp.1);
        let acc = PrivItpAcceptance::new(lt, m.sigma_z, m.r_max, m.l);
        let noise = scale * m.sigma_z;
        let b = &self.batch_b;
        let mut next = 0usize;
        // The fallback's fresh draw is independent of the data; the audited
        // output is (λ̃, t), so it is not drawn.
        let (_, t) = rejection_sampled(
            m.n,
            rng,
            || {
                next += 1;
                next - 1
            },
            |i, c: &mut Pcg64| {
                let zq: f64 = c.sample(StandardNormal);
                let u: f64 = c.random::<f64>();
                acc.coin(b.proxy(i) + noise * zq, u)
            },
            |_| usize::MAX,
        );
        (lt, t)
    }
}
