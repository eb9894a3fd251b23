//! Private Best-of-N (paper `alg:mbon`): argmax of r̂_i + noise.
//!
//! With Gumbel(0, σ) noise the argmax is a draw from softmax(r̂/σ) over the
//! batch (Gumbel-max trick; the exponential mechanism, `thm:gumbel_priv`), so
//! the conditional estimator is exact: Σ_i softmax_i · values_i. The Gaussian
//! variant (appendix `sec:app_gauss`) has no closed-form selection law and is
//! sampled.

use rand::RngExt;
use rand_distr::StandardNormal;
use rand_pcg::Pcg64;

use super::pool::{Pool, Values};

/// Softmax selection probabilities of the batch, computed stably.
pub fn softmax_weights(pool: &Pool, batch: &[usize], sigma: f64, out: &mut Vec<f64>) {
    out.clear();
    let max = batch
        .iter()
        .map(|&i| pool.proxy(i))
        .fold(f64::NEG_INFINITY, f64::max);
    let mut total = 0.0;
    for &i in batch {
        let w = ((pool.proxy(i) - max) / sigma).exp();
        total += w;
        out.push(w);
    }
    for w in out.iter_mut() {
        *w /= total;
    }
}

/// Softmax selection probabilities of rewards given in batch order.
pub fn softmax_weights_of(rewards: &[f64], sigma: f64, out: &mut Vec<f64>) {
    out.clear();
    let max = rewards.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut total = 0.0;
    for &r in rewards {
        let w = ((r - max) / sigma).exp();
        total += w;
        out.push(w);
    }
    for w in out.iter_mut() {
        *w /= total;
    }
}

/// E[values(selected)] of Gumbel PrivBoN given the batch.
pub fn privbon_conditional(
    pool: &Pool,
    batch: &[usize],
    sigma: f64,
    scratch: &mut Vec<f64>,
) -> Values {
    softmax_weights(pool, batch, sigma, scratch);
    let mut v = Values::default();
    for (&i, &w) in batch.iter().zip(scratch.iter()) {
        v.add_scaled(&pool.values[i], w);
    }
    v
}

/// Standard Gumbel draw −ln(−ln U), U ∈ (0, 1).
fn gumbel(rng: &mut Pcg64) -> f64 {
    let u: f64 = rng.random::<f64>();
    let u = u.max(f64::MIN_POSITIVE);
    -(-u.ln()).ln()
}

/// The literal mechanism: the batch position maximising r̂_i + Gumbel(0, σ).
pub fn privbon_gumbel_sampled(pool: &Pool, batch: &[usize], sigma: f64, rng: &mut Pcg64) -> usize {
    argmax_noisy(pool, batch, |r| r + sigma * gumbel(rng))
}

/// Gaussian PrivBoN: the batch position maximising r̂_i + N(0, σ²).
pub fn privbon_gauss_sampled(pool: &Pool, batch: &[usize], sigma: f64, rng: &mut Pcg64) -> usize {
    argmax_noisy(pool, batch, |r| {
        let z: f64 = rng.sample(StandardNormal);
        r + sigma * z
    })
}

fn argmax_noisy(pool: &Pool, batch: &[usize], mut noisy: impl FnMut(f64) -> f64) -> usize {
    let mut best = 0;
    let mut best_v = f64::NEG_INFINITY;
    for (k, &i) in batch.iter().enumerate() {
        let v = noisy(pool.proxy(i));
        if v > best_v {
            best_v = v;
            best = k;
        }
    }
    best
}
