//! The engine's hook for the reference scripts' conventions
//! (`select::reference_scripts`): one (prompt, n, replicate) of ITP or PrivITP
//! when a convention changes the algorithm, on the replicate's own batches.
//! The default conventions never reach this module's main path, so the
//! paper's algorithm runs exactly as before.

use rand::RngExt;
use rand_pcg::Pcg64;

use super::engine::{Algorithm, Batches, Estimator, Metrics};
use crate::select::lambda::solve_lambda_sorted_desc;
use crate::select::pool::{Pool, Values};
use crate::select::reference_scripts::{
    Conventions, Envelope, Fallback, PrivItpNoise, itp_batch_max_probs, one_pass,
    privitp_monte_carlo, privitp_sampled,
};
use crate::select::rejection::RejectionOutcome;

/// What the engine hands over for one algorithm on one replicate.
pub struct Replicate<'a> {
    pub pool: &'a Pool,
    pub n: usize,
    pub batch_a: &'a [usize],
    /// Batch A's transformed rewards in decreasing order (for λ̂).
    pub sorted_a: &'a [f64],
    /// Candidate t (0-based) of the fresh Phase-2 batch B, drawn on demand.
    pub batch_b: &'a mut dyn FnMut(usize) -> usize,
    pub estimator: Estimator,
    pub r_max: f64,
    /// The dataset-wide base values (fallback `dataset_base`).
    pub dataset_base: Values,
}

/// The fallback's credit in expectation.
fn credit(c: Fallback, pool: &Pool, base: &Values) -> Values {
    match c {
        Fallback::Pool => pool.mean,
        Fallback::DatasetBase => *base,
    }
}

/// The walked batch: batch A again (`shared`) or the first n of batch B.
fn walk(r: &mut Replicate, batches: Batches) -> Vec<usize> {
    match batches {
        Batches::Shared => r.batch_a.to_vec(),
        Batches::Fresh => (0..r.n).map(|t| (r.batch_b)(t)).collect(),
    }
}

/// ITP or PrivITP under non-default conventions, or `None` when the
/// algorithm runs as the paper's (the engine's own path then applies).
pub fn run(
    alg: &Algorithm,
    conv: &Conventions,
    r: &mut Replicate,
    coins: &mut Pcg64,
) -> Option<Metrics> {
    let (outcome, sampled_pick, batches) = match *alg {
        Algorithm::Itp { beta, batches } if conv.itp.envelope == Envelope::BatchMax => {
            let lambda = solve_lambda_sorted_desc(r.sorted_a, beta);
            let w = walk(r, batches);
            let rewards: Vec<f64> = w.iter().map(|&i| r.pool.proxy(i)).collect();
            let probs = itp_batch_max_probs(&rewards, lambda, beta);
            match r.estimator {
                Estimator::Conditional => {
                    let fb = credit(conv.itp.fallback, r.pool, &r.dataset_base);
                    (Some(one_pass(r.pool, &w, &probs, &fb)), None, batches)
                }
                Estimator::Sampled => {
                    let t = probs.iter().position(|&a| coins.random::<f64>() < a);
                    (
                        None,
                        Some((t.map(|t| w[t]), t.map_or(r.n + 1, |t| t + 1))),
                        batches,
                    )
                }
            }
        }
        Algorithm::PrivItp(p) if !conv.privitp.closed_form() => {
            let lambda = solve_lambda_sorted_desc(r.sorted_a, p.beta);
            let w = walk(r, p.batches);
            let noise = PrivItpNoise {
                sigma_x: p.sigma_x,
                sigma_z: p.sigma_z,
                beta: p.beta,
                l: p.l,
                r_max: r.r_max,
                clamp: p.clamp,
            };
            match r.estimator {
                Estimator::Conditional => {
                    let fb = credit(conv.privitp.fallback, r.pool, &r.dataset_base);
                    let o =
                        privitp_monte_carlo(r.pool, &w, lambda, &noise, &conv.privitp, &fb, coins);
                    (Some(o), None, p.batches)
                }
                Estimator::Sampled => {
                    let (t, halt) =
                        privitp_sampled(r.pool, &w, lambda, &noise, &conv.privitp, coins);
                    (None, Some((t.map(|t| w[t]), halt)), p.batches)
                }
            }
        }
        _ => return None,
    };
    let fallback = match alg {
        Algorithm::Itp { .. } => conv.itp.fallback,
        _ => conv.privitp.fallback,
    };
    // With the batch envelope every candidate of the walked batch is needed.
    let generations = match batches {
        Batches::Shared => r.n as f64,
        Batches::Fresh => 2.0 * r.n as f64,
    };
    Some(match (outcome, sampled_pick) {
        (Some(o), _) => Metrics {
            values: o.values,
            halting_time: Some(o.halting_time),
            generations,
            eps: None,
        },
        (None, Some((pick, halt))) => Metrics {
            values: match (pick, fallback) {
                (Some(i), _) => r.pool.values[i],
                (None, Fallback::DatasetBase) => r.dataset_base,
                (None, Fallback::Pool) => r.pool.values[coins.random_range(0..r.pool.len())],
            },
            halting_time: Some(halt as f64),
            generations,
            eps: None,
        },
        (None, None) => unreachable!("one of the two estimators ran"),
    })
}

/// Swap the paper's pool-draw fallback for the dataset-wide credit in an
/// outcome of the engine's own Phase 2 (`fallback: dataset_base` with the
/// paper's envelope): in expectation (conditional), or for the realised
/// fallback (sampled: `o.fallback` is 1).
pub fn recredit(
    values: &mut Values,
    o: &RejectionOutcome,
    pool: &Pool,
    base: &Values,
    estimator: Estimator,
) {
    match estimator {
        Estimator::Conditional => {
            values.add_scaled(&pool.mean, -o.fallback);
            values.add_scaled(base, o.fallback);
        }
        Estimator::Sampled => {
            if o.fallback > 0.0 {
                *values = *base;
            }
        }
    }
}
