//! Bootstrap replicates of every algorithm on shared batches, with the exact
//! conditional or the literal sampled estimator (design §6), averaged over
//! replicates into the metrics of design §7.
//!
//! Layout (each file one job):
//! * this file — the algorithm and engine types, the run [`Plan`] (what can
//!   be computed once per run: quadrature nodes, node-shifted G tables, stream
//!   ids), and the entry points [`run_prompt`], [`run_item`], [`run_items`];
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
pub mod lockstep;
pub mod prep;
mod replicate;

use rayon::prelude::*;

use super::seed::{StreamKey, stable_id};
pub use crate::privacy::accountant::PrivacyParams;
use crate::select::gtable::{GTable, ShiftedGTable};
use crate::select::pool::{Pool, Values};
use crate::math::quadrature::gauss_hermite_normal;
use crate::select::reference_scripts::Conventions;
pub use prep::PoolPrep;

/// How candidates are drawn from the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampling {
    /// Bootstrap (the paper's protocol).
    WithReplacement,
    /// Requires n ≤ N.
    WithoutReplacement,
}

/// How the mechanism's own randomness is treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Estimator {
    /// Exact expectation over the mechanism's coins given the batches.
    Conditional,
    /// Draw the coins literally, as a deployment would.
    Sampled,
}

/// How the conditional estimator treats PrivITP's Phase-1 noise λ̃.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LambdaNoise {
    /// Gauss–Hermite quadrature with this many nodes.
    Quadrature(usize),
    /// One λ̃ draw per replicate.
    Sampled,
}

/// Which batch ITP's Phase 2 runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Batches {
    /// A fresh independent batch B (the paper's algorithm; needed for privacy).
    Fresh,
    /// Reuse batch A (as in Huang et al.).
    Shared,
}

impl Batches {
    fn key(self) -> &'static str {
        match self {
            Batches::Fresh => "fresh",
            Batches::Shared => "shared",
        }
    }
}

/// PrivITP's parameters (paper `alg:privitp`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrivItpParams {
    pub sigma_x: f64,
    pub sigma_z: f64,
    pub beta: f64,
    /// Truncation parameter L in M = (R_max + σ_Z·L − λ̃)/β.
    pub l: f64,
    /// Optional clamp of λ̃ to [lo, hi] (post-processing).
    pub clamp: Option<(f64, f64)>,
    pub batches: Batches,
}

impl PrivItpParams {
    /// The paper's split of a total noise σ: σ_X = σ_Z = σ/2, L = 4, no
    /// clamp, fresh Phase-2 batch.
    pub fn split_half(sigma: f64, beta: f64) -> Self {
        Self {
            sigma_x: sigma / 2.0,
            sigma_z: sigma / 2.0,
            beta,
            l: 4.0,
            clamp: None,
            batches: Batches::Fresh,
        }
    }
}

/// One algorithm with its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Algorithm {
    Bon,
    PrivBon { sigma: f64 },
    PrivBonGauss { sigma: f64 },
    Itp { beta: f64, batches: Batches },
    PrivItp(PrivItpParams),
}

/// An f64 in a stream label: its exact bit pattern, so that labels never
/// depend on how a number is printed.
fn bits(x: f64) -> String {
    format!("{:016x}", x.to_bits())
}

impl Algorithm {
    /// Result-file name (design §10).
    pub fn name(&self) -> &'static str {
        match self {
            Algorithm::Bon => "bon",
            Algorithm::PrivBon { .. } => "privbon",
            Algorithm::PrivBonGauss { .. } => "privbon_gauss",
            Algorithm::Itp { .. } => "itp",
            Algorithm::PrivItp(_) => "privitp",
        }
    }

    /// Total noise σ (PrivITP: σ_X + σ_Z, the paper's σ for the `half` split).
    pub fn sigma(&self) -> Option<f64> {
        match self {
            Algorithm::PrivBon { sigma } | Algorithm::PrivBonGauss { sigma } => Some(*sigma),
            Algorithm::PrivItp(p) => Some(p.sigma_x + p.sigma_z),
            _ => None,
        }
    }

    pub fn beta(&self) -> Option<f64> {
        match self {
            Algorithm::Itp { beta, .. } => Some(*beta),
            Algorithm::PrivItp(p) => Some(p.beta),
            _ => None,
        }
    }

    /// The label that keys this algorithm's mechanism stream: fixed tags and
    /// the exact bits of every parameter, written out field by field so that
    /// renaming a Rust type or field never moves a number (pinned by a test).
    pub fn stream_label(&self) -> String {
        match self {
            Algorithm::Bon => "bon".into(),
            Algorithm::PrivBon { sigma } => format!("privbon/gumbel/sigma={}", bits(*sigma)),
            Algorithm::PrivBonGauss { sigma } => format!("privbon/gauss/sigma={}", bits(*sigma)),
            Algorithm::Itp { beta, batches } => {
                format!("itp/beta={}/batches={}", bits(*beta), batches.key())
            }
            Algorithm::PrivItp(p) => format!(
                "privitp/sigma_x={}/sigma_z={}/beta={}/L={}/clamp={}/batches={}",
                bits(p.sigma_x),
                bits(p.sigma_z),
                bits(p.beta),
                bits(p.l),
                match p.clamp {
                    Some((lo, hi)) => format!("{},{}", bits(lo), bits(hi)),
                    None => "none".into(),
                },
                p.batches.key()
            ),
        }
    }

    /// The mechanism stream id: SHA-256 of [`Self::stream_label`].
    pub fn mechanism_stream(&self) -> u64 {
        stable_id(&self.stream_label())
    }
}

/// Settings shared by every work item of a run.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    pub algorithms: Vec<Algorithm>,
    pub replicates: usize,
    pub sampling: Sampling,
    pub estimator: Estimator,
    pub lambda_noise: LambdaNoise,
    pub privacy: PrivacyParams,
    /// The reference scripts' conventions (default: none, the paper's algorithm).
    pub conventions: Conventions,
    /// The base policy's values over the whole dataset (fallback `dataset_base`).
    pub dataset_base: Values,
}

impl EngineConfig {
    /// The defaults of design §6–§9: bootstrap with replacement, λ̃
    /// integrated by 16-node Gauss–Hermite quadrature, [`PrivacyParams::default`].
    pub fn new(algorithms: Vec<Algorithm>, replicates: usize, estimator: Estimator) -> Self {
        Self {
            algorithms,
            replicates,
            sampling: Sampling::WithReplacement,
            estimator,
            lambda_noise: LambdaNoise::Quadrature(16),
            privacy: PrivacyParams::default(),
            conventions: Conventions::default(),
            dataset_base: Values::default(),
        }
    }
}

/// Metrics of one algorithm on one (prompt, n), averaged over replicates.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Metrics {
    pub values: Values,
    pub halting_time: Option<f64>,
    pub generations: f64,
    pub eps: Option<f64>,
}

/// Per-run precomputation for one PrivITP setting's conditional estimator.
#[derive(Clone, Debug)]
pub struct PrivItpPlan {
    /// The node-shifted table (shifts ρ·x_k, ρ = σ_X/σ_Z), when the fast
    /// lockstep walk applies (quadrature, no clamp).
    pub table: Option<ShiftedGTable>,
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
                Algorithm::PrivItp(p) => Some(PrivItpPlan {
                    table: (!nodes.is_empty() && p.clamp.is_none()).then(|| {
                        let rho = p.sigma_x / p.sigma_z;
                        let shifts: Vec<f64> = nodes.iter().map(|&(x, _)| rho * x).collect();
                        ShiftedGTable::new(&shifts)
                    }),
                    eps1: cfg.privacy.phase1_eps(p.sigma_x),
                }),
                _ => None,
            })
            .collect();
        Self {
            cfg: cfg.clone(),
            nodes,
            streams: cfg
                .algorithms
                .iter()
                .map(|a| a.mechanism_stream())
                .collect(),
            beta_slot,
            betas,
            privitp,
            gtable: GTable::new(),
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
            Algorithm::Bon.mechanism_stream(),
            17_863_710_600_027_879_794_u64
        );
    }
}
