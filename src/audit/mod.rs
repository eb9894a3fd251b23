//! `privalign audit`: measure each private mechanism's privacy loss from the
//! outside and compare it with the ε privalign prints (issue #14).
//!
//! For every mechanism the audit builds the neighbouring pair its privacy
//! proof says is worst ([`pairs`]), then
//! * computes the **exact** privacy loss of that pair where the output law has
//!   a closed form ([`exact`]): PrivBoN's softmax, Gaussian PrivBoN's selection
//!   integral, PrivITP's halting law given λ̃ integrated over λ̃;
//! * runs the **literal** sampled mechanism — the samplers of `crate::select`,
//!   composed exactly as the engine composes them ([`mechanisms`]) — many times
//!   on each input (parallel, deterministic seeds), chooses an output event on
//!   one half of the runs and turns the two frequencies on the other half into
//!   a lower bound ε_LB with Clopper–Pearson bounds ([`empirical`],
//!   [`clopper_pearson`]).
//!
//! The claimed ε always comes from `crate::privacy::accountant`, the functions
//! every report uses. A correct mechanism must give ε_LB ≤ exact ≤ claimed; a
//! broken one (see [`Fault`]) is caught when ε_LB > claimed.

pub mod claimed;
pub mod clopper_pearson;
pub mod command;
pub mod empirical;
pub mod exact;
pub mod fsrc;
pub mod mechanisms;
pub mod pairs;
pub mod run;
pub mod view;

use serde::{Deserialize, Serialize};

use crate::privacy::accountant::PrivacyParams;
use crate::select::algorithm::{AlgorithmKind, split_sigma};

/// The audited mechanisms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Mechanism {
    /// PrivBoN with Gumbel noise (`alg:mbon`, `thm:gumbel_priv`).
    Privbon,
    /// PrivBoN with Gaussian noise (`thm:gaussian_priv`).
    PrivbonGauss,
    /// PrivITP, audited per halting time t (`alg:privitp`, `thm:privitp_priv`).
    Privitp,
    /// A run of PrivITP queries under FSRC (`alg:privitp_fsrc`, `thm:privitp_fsrc_comp`).
    Fsrc,
}

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Privbon => AlgorithmKind::PrivBon.cli_name(),
            Mechanism::PrivbonGauss => AlgorithmKind::PrivBonGauss.cli_name(),
            Mechanism::Privitp => AlgorithmKind::PrivItp.cli_name(),
            Mechanism::Fsrc => "fsrc",
        }
    }
}

/// A deliberately broken variant, injected only to show that the audit can
/// fail (the power tests). The command always audits [`Fault::None`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    None,
    /// The sampler draws noise at half the scale the accountant is told.
    HalveNoise,
    /// PrivITP releases λ̃ = λ̂ (no Phase-1 noise).
    DropPhase1Noise,
    /// The accountant's ε_2^post(t) omits the accepting round's ρ term.
    OmitRho,
    /// The FSRC ledger does not record the first answered query's cost.
    FsrcSkipLedger,
}

/// One audit setting (one mechanism at one σ).
#[derive(Clone, Debug, PartialEq)]
pub struct AuditSetting {
    pub mechanism: Mechanism,
    /// Total noise σ: PrivBoN's σ; PrivITP's σ_X + σ_Z (split σ/2, σ/2 unless
    /// `sigma_x`/`sigma_z` are given).
    pub sigma: f64,
    pub sigma_x: Option<f64>,
    pub sigma_z: Option<f64>,
    pub privacy: PrivacyParams,
    /// Candidates per batch.
    pub n: usize,
    /// PrivITP's β (it enters the pair through λ̂ = c − β; it cancels from ε).
    pub beta: f64,
    /// PrivITP's truncation parameter L.
    pub l: f64,
    /// Clamp interval of λ̃ (post-processing; makes the worst case finite).
    pub clamp: (f64, f64),
    /// FSRC: ε_total as a multiple of the per-query ε_max.
    pub eps_total_factor: f64,
    /// Runs of the sampled mechanism per input (half choose the event, half
    /// evaluate it).
    pub trials: usize,
    /// Confidence of the lower bound (the two Clopper–Pearson bounds share α).
    pub confidence: f64,
    pub seed: u64,
}

impl AuditSetting {
    /// PrivITP's (σ_X, σ_Z).
    pub fn split(&self) -> (f64, f64) {
        let (sx, sz) = split_sigma(self.sigma);
        (self.sigma_x.unwrap_or(sx), self.sigma_z.unwrap_or(sz))
    }
}

/// One line of an audit's output (`audit.json` holds an array of these).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    pub mechanism: String,
    pub sigma: f64,
    /// PrivITP: the halting time of the per-t rows (n + 1 = all rejected);
    /// null on the setting's summary row.
    pub t: Option<usize>,
    pub claimed_eps: f64,
    /// Null where the output law has no closed form (FSRC).
    pub exact_eps: Option<f64>,
    pub eps_lower_bound: f64,
    pub confidence: f64,
    /// Runs per input.
    pub trials: usize,
    /// The δ subtracted in the lower bound (0 for pure-DP mechanisms).
    pub delta: f64,
    pub lb_over_claimed: f64,
    pub exact_over_claimed: Option<f64>,
    pub n: usize,
    pub r_max: f64,
    pub delta_r: f64,
    /// The output event the lower bound was measured on.
    pub event: String,
}
