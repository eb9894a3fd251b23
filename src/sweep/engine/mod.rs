//! Bootstrap replicates of every algorithm on shared batches, with the exact
//! conditional or the literal sampled estimator (design §6), averaged over
//! replicates into the metrics of design §7.
//!
//! Layout (each file one job):
//! * this file — the run [`Plan`] (what can be computed once per run:
//!   quadrature nodes, node-shifted G tables, stream ids), and the entry
//!   points [`run_prompt`], [`run_item`], [`run_items`];
//! * [`prep`] — what is computed once per pool (contiguous rewards, the
//!   exponential-mechanism weights, PrivITP's λ̃-free acceptance term);
//! * [`replicate`] — one replicate of every algorithm: batch A, BoN, PrivBoN,
//!   ITP, and PrivITP's sampled and single-λ̃ paths;
//! * [`lockstep`] — PrivITP's conditional estimator with every λ̃ node walked
//!   at once (the hot loop of a default sweep);
//! * [`draw`] — batch draws.
//!
//! Memory is O(pool + n) per prompt and independent of the number of
//! replicates: each replicate's batches are drawn, used by every algorithm,
//! and dropped before the next.

mod draw;
#[cfg(all(target_arch = "x86_64", target_pointer_width = "64"))]
mod draw_avx512;
mod eps_table;
pub mod lockstep;
mod pcg;
mod phase2;
pub mod prep;
mod replicate;

use rayon::prelude::*;

use super::seed::{StreamKey, stable_id};
pub use crate::config::plan::{EngineConfig, Estimator, LambdaNoise, Sampling};
use crate::math::quadrature::gauss_hermite_normal;
pub use crate::privacy::accountant::PrivacyParams;
pub use crate::results::cells::Metrics;
pub use crate::select::algorithm::{Algorithm, AlgorithmKind, Batches, PrivItpParams};
use crate::select::gtable::{GTable, ShiftedGTable};
use crate::select::pool::Pool;
pub use prep::PoolPrep;

/// The mechanism stream id of an algorithm: SHA-256 of its
/// [`Algorithm::stream_label`].
pub fn mechanism_stream(a: &Algorithm) -> u64 {
    stable_id(&a.stream_label())
}

/// Per-run precomputation for one PrivITP setting's conditional estimator.
#[derive(Clone, Debug)]
pub struct PrivItpPlan {
    /// The node-shifted table (shifts ρ·x_k, ρ = σ_X/σ_Z), when the fast
    /// lockstep walk applies (quadrature, no clamp).
    pub table: Option<ShiftedGTable>,
    /// κ and ρ of E[ε_2^post] by λ̃ (with the table).
    pub(crate) eps_terms: Option<eps_table::EpsTable>,
    /// Phase-1 ε of this setting.
    pub eps1: f64,
}

/// What a run computes once and every work item shares.
#[derive(Clone, Debug)]
pub struct Plan {
    pub cfg: EngineConfig,
    /// Gauss–Hermite nodes (x_k, w_k) when λ̃ is integrated.
    pub nodes: Vec<(f64, f64)>,
    /// One per algorithm: its mechanism stream id.
    pub streams: Vec<u64>,
    /// One per algorithm: the index of its β among the distinct β values
    /// (λ̂ is solved once per replicate and β).
    pub beta_slot: Vec<Option<usize>>,
    pub betas: Vec<f64>,
    /// One per algorithm (Some for PrivITP).
    pub privitp: Vec<Option<PrivItpPlan>>,
    /// G for the λ̃-free acceptance term.
    pub gtable: GTable,
    /// The instruction set of PrivITP's lockstep walk (from the CPU, see
    /// [`lockstep::simd_level`]; tests set each available level and compare bits).
    pub simd: lockstep::SimdLevel,
}

impl Plan {
    pub fn new(cfg: &EngineConfig) -> Self {
        let nodes = match (cfg.estimator, cfg.lambda_noise) {
            (Estimator::Conditional, LambdaNoise::Quadrature(k)) if k > 0 => {
                gauss_hermite_normal(k)
            }
            _ => Vec::new(),
        };
        Self::with_nodes(cfg, nodes)
    }

    /// A plan with explicit λ̃ nodes (x_k, w_k) for the conditional estimator
    /// (tests use equal weights, under which the outer nodes' errors are not
    /// hidden by their tiny Gauss–Hermite weights). Empty: λ̃ is sampled.
    pub fn with_nodes(cfg: &EngineConfig, nodes: Vec<(f64, f64)>) -> Self {
        let nodes = if cfg.estimator == Estimator::Conditional {
            nodes
        } else {
            Vec::new()
        };
        let mut betas: Vec<f64> = Vec::new();
        let beta_slot = cfg
            .algorithms
            .iter()
            .map(|a| {
                a.beta().map(|b| match betas.iter().position(|&x| x == b) {
                    Some(i) => i,
                    None => {
                        betas.push(b);
                        betas.len() - 1
                    }
                })
            })
            .collect();
        let privitp = cfg
            .algorithms
            .iter()
            .map(|a| match a {
                Algorithm::PrivItp(p) => {
                    let walk = !nodes.is_empty() && p.clamp.is_none();
                    let x_max = nodes.iter().fold(0.0f64, |m, &(x, _)| m.max(x.abs()));
                    Some(PrivItpPlan {
                        table: walk.then(|| {
                            let rho = p.sigma_x / p.sigma_z;
                            let shifts: Vec<f64> = nodes.iter().map(|&(x, _)| rho * x).collect();
                            ShiftedGTable::new(&shifts)
                        }),
                        eps_terms: walk.then(|| {
                            eps_table::EpsTable::new(
                                p,
                                cfg.privacy.r_max,
                                cfg.privacy.delta_r,
                                x_max,
                            )
                        }),
                        eps1: cfg.privacy.phase1_eps(p.sigma_x),
                    })
                }
                _ => None,
            })
            .collect();
        Self {
            cfg: cfg.clone(),
            nodes,
            streams: cfg.algorithms.iter().map(mechanism_stream).collect(),
            beta_slot,
            betas,
            privitp,
            gtable: GTable::new(),
            simd: lockstep::simd_level(),
        }
    }
}

/// Run all replicates of every n in `ns` on one prompt's pool; `key(n)` is
/// the stream key of (prompt, n). Returns, per n, one [`Metrics`] per
/// algorithm. The pool's precomputation is shared by every n.
pub fn run_prompt<'k>(
    plan: &Plan,
    pool: &Pool,
    ns: &[usize],
    key: impl Fn(usize) -> StreamKey<'k>,
) -> Vec<Vec<Metrics>> {
    let prep = PoolPrep::new(plan, pool);
    let mut scratch = replicate::Scratch::default();
    ns.iter()
        .map(|&n| replicate::run_n(plan, pool, &prep, n, &key(n), &mut scratch))
        .collect()
}

/// Run all replicates of one (prompt, n) work item (building the run's plan;
/// loops over many items use [`run_prompt`] or [`run_items`]).
pub fn run_item(pool: &Pool, n: usize, key: &StreamKey, cfg: &EngineConfig) -> Vec<Metrics> {
    let plan = Plan::new(cfg);
    run_item_with(&plan, pool, n, key)
}

/// [`run_item`] with a prebuilt plan.
pub fn run_item_with(plan: &Plan, pool: &Pool, n: usize, key: &StreamKey) -> Vec<Metrics> {
    let prep = PoolPrep::new(plan, pool);
    replicate::run_n(
        plan,
        pool,
        &prep,
        n,
        key,
        &mut replicate::Scratch::default(),
    )
}

/// One unit of parallel work.
pub struct WorkItem<'a> {
    pub pool: &'a Pool,
    pub key: StreamKey<'a>,
    pub n: usize,
}

/// Run work items in parallel (rayon); the output order is the input order
/// and every number is independent of the thread count.
pub fn run_items(items: &[WorkItem], cfg: &EngineConfig) -> Vec<Vec<Metrics>> {
    let plan = Plan::new(cfg);
    items
        .par_iter()
        .map(|w| run_item_with(&plan, w.pool, w.n, &w.key))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stream keys are pinned: renaming a type, a field or a variant must not
    /// move a number. A change here is a deliberate change of every random
    /// stream and needs a reference update.
    #[test]
    fn mechanism_stream_labels_are_pinned() {
        assert_eq!(Algorithm::Bon.stream_label(), "bon");
        assert_eq!(
            Algorithm::PrivBon { sigma: 0.25 }.stream_label(),
            "privbon/gumbel/sigma=3fd0000000000000"
        );
        assert_eq!(
            Algorithm::Itp {
                beta: 0.05,
                batches: Batches::Fresh
            }
            .stream_label(),
            "itp/beta=3fa999999999999a/batches=fresh"
        );
        assert_eq!(
            Algorithm::PrivItp(PrivItpParams::split_half(0.25, 0.05)).stream_label(),
            "privitp/sigma_x=3fc0000000000000/sigma_z=3fc0000000000000/beta=3fa999999999999a/L=4010000000000000/clamp=none/batches=fresh"
        );
        assert_eq!(
            mechanism_stream(&Algorithm::Bon),
            17_863_710_600_027_879_794_u64
        );
    }
}
