//! The run plan a config resolves to and the sweep engine consumes
//! ([`EngineConfig`]): the algorithm list and the estimator settings. It is
//! defined here, below the engine, so that config never imports the engine.

use crate::privacy::accountant::PrivacyParams;
use crate::select::algorithm::Algorithm;
use crate::select::pool::Values;
use crate::select::reference_scripts::Conventions;

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
