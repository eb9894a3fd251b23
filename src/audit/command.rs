//! `privalign audit`: flags or an audit config (experiments/audit.yaml) →
//! settings → records, printed as text or JSON and optionally written to
//! `<out>/audit.json` for `table --kind audit` and `plot --kind audit`.
//!
//! Decisions where the issue is silent:
//! * The default confidence is 1 − 10⁻⁶ (the project's false-alarm rate for
//!   statistical checks): an ε_LB above the claim is a one-in-a-million
//!   accident for a correct mechanism, not a 1-in-20 one.
//! * λ̃ is clamped to [0, R_max] unless `--clamp` says otherwise, as for FSRC
//!   and ε_max: without a clamp ε_2^post is unbounded in λ̃.
//! * FSRC's ε_total is a multiple (`--eps-total-factor`, default 3) of the
//!   per-query ε_max, so every σ audits a run of a few queries.

use anyhow::{Context, Result};
use clap::Args;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::run::audit;
use super::{AuditRecord, AuditSetting, Fault, Mechanism};
use crate::bail_input;
use crate::error::input_error;
use crate::fsutil::write_atomic;
use crate::privacy::accountant::PrivacyParams;
use crate::report::format::{Cell, ColumnSpec, Table};
use crate::select::algorithm::AlgorithmKind;

/// File written into the results directory.
pub const AUDIT_FILE: &str = "audit.json";

/// Output format of `privalign audit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AuditFormat {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Mechanism(s) to audit (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_value = AlgorithmKind::PrivBon.cli_name())]
    pub mechanism: Vec<Mechanism>,
    /// Total noise σ (comma-separated; PrivITP splits σ_X = σ_Z = σ/2).
    #[arg(long, value_delimiter = ',', default_values_t = [1.0])]
    pub sigma: Vec<f64>,
    /// PrivITP Phase-1 noise σ_X (overrides the split).
    #[arg(long)]
    pub sigma_x: Option<f64>,
    /// PrivITP Phase-2 query noise σ_Z (overrides the split).
    #[arg(long)]
    pub sigma_z: Option<f64>,
    /// PrivITP regularisation β.
    #[arg(long, default_value_t = 0.05)]
    pub beta: f64,
    /// Candidates per batch n.
    #[arg(long, default_value_t = 16)]
    pub n: usize,
    /// Upper end of the reward range [0, R_max].
    #[arg(long, default_value_t = 1.0)]
    pub r_max: f64,
    /// Sensitivity Δ_r (default: R_max).
    #[arg(long)]
    pub delta_r: Option<f64>,
    /// δ of PrivITP's Phase 1.
    #[arg(long, default_value_t = 1e-2)]
    pub delta: f64,
    /// Truncation parameter L.
    #[arg(long = "L", default_value_t = 4.0)]
    pub l: f64,
    /// Clamp interval of λ̃ as LO,HI (default 0,R_max).
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    pub clamp: Option<Vec<f64>>,
    /// FSRC: ε_total as a multiple of the per-query ε_max.
    #[arg(long, default_value_t = 3.0)]
    pub eps_total_factor: f64,
    /// Runs of the mechanism per input (default 1000000).
    #[arg(long)]
    pub trials: Option<usize>,
    /// Confidence of the empirical lower bound.
    #[arg(long, default_value_t = 0.999999)]
    pub confidence: f64,
    /// Random seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Use the paper's classical ε_1 instead of the exact analytic one.
    #[arg(long)]
    pub paper_eps1: bool,
    /// Audit the settings of this file (e.g. experiments/audit.yaml) instead of the flags.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Also write the records to DIR/audit.json (default with --config: results/<name>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Worker threads (default: all cores). Results do not depend on it.
    #[arg(long, value_name = "K")]
    pub threads: Option<usize>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: AuditFormat,
}

const DEFAULT_TRIALS: usize = 1_000_000;

/// The audit config file (experiments/audit.yaml).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    pub name: String,
    pub mechanisms: Vec<Mechanism>,
    pub sigma: Vec<f64>,
    pub n: usize,
    #[serde(default = "one")]
    pub r_max: f64,
    pub delta_r: Option<f64>,
    #[serde(default = "default_delta")]
    pub delta: f64,
    #[serde(default = "default_beta")]
    pub beta: f64,
    #[serde(default = "default_l", rename = "L")]
    pub l: f64,
    pub clamp: Option<(f64, f64)>,
    #[serde(default = "default_factor")]
    pub eps_total_factor: f64,
    #[serde(default = "default_trials")]
    pub trials: usize,
    #[serde(default = "default_confidence")]
    pub confidence: f64,
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub paper_eps1: bool,
}

fn one() -> f64 {
    1.0
}
fn default_delta() -> f64 {
    1e-2
}
fn default_beta() -> f64 {
    0.05
}
fn default_l() -> f64 {
    4.0
}
fn default_factor() -> f64 {
    3.0
}
fn default_trials() -> usize {
    DEFAULT_TRIALS
}
fn default_confidence() -> f64 {
    0.999999
}

/// Read an audit config; errors name the file and the key.
pub fn load_config(path: &Path) -> Result<AuditConfig> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        input_error(format!(
            "{}: cannot read the audit config ({e}); check the path",
            path.display()
        ))
    })?;
    let value: yaml_serde::Value = yaml_serde::from_str(&text)
        .map_err(|e| input_error(format!("{}: not valid YAML: {e}", path.display())))?;
    serde_path_to_error::deserialize(value).map_err(|e| {
        input_error(format!(
            "{}: key `{}`: {}; see experiments/audit.yaml for the keys",
            path.display(),
            e.path(),
            e.inner()
        ))
    })
}

impl AuditConfig {
    fn from_args(a: &AuditArgs) -> Result<Self> {
        let clamp = match a.clamp.as_deref() {
            Some(&[lo, hi]) => Some((lo, hi)),
            Some(v) => bail_input!(
                "--clamp takes two numbers LO,HI (got {} values), e.g. --clamp 0,1",
                v.len()
            ),
            None => None,
        };
        Ok(Self {
            name: "audit".into(),
            mechanisms: a.mechanism.clone(),
            sigma: a.sigma.clone(),
            n: a.n,
            r_max: a.r_max,
            delta_r: a.delta_r,
            delta: a.delta,
            beta: a.beta,
            l: a.l,
            clamp,
            eps_total_factor: a.eps_total_factor,
            trials: a.trials.unwrap_or(DEFAULT_TRIALS),
            confidence: a.confidence,
            seed: a.seed,
            paper_eps1: a.paper_eps1,
        })
    }

    /// One setting per (mechanism, σ), in file order.
    pub fn settings(&self, sigma_x: Option<f64>, sigma_z: Option<f64>) -> Vec<AuditSetting> {
        let mut out = Vec::new();
        for &m in &self.mechanisms {
            for &sigma in &self.sigma {
                out.push(AuditSetting {
                    mechanism: m,
                    sigma,
                    sigma_x,
                    sigma_z,
                    privacy: PrivacyParams {
                        r_max: self.r_max,
                        delta_r: self.delta_r.unwrap_or(self.r_max),
                        delta: self.delta,
                        paper_eps1: self.paper_eps1,
                    },
                    n: self.n,
                    beta: self.beta,
                    l: self.l,
                    clamp: self.clamp.unwrap_or((0.0, self.r_max)),
                    eps_total_factor: self.eps_total_factor,
                    trials: self.trials,
                    confidence: self.confidence,
                    seed: self.seed,
                });
            }
        }
        out
    }
}

/// The text rendering: one row per record.
pub fn records_table(records: &[AuditRecord], caption: String) -> Table {
    let opt = |x: Option<f64>| x.map_or(Cell::Text("—".into()), Cell::Num);
    let rows = records
        .iter()
        .map(|r| {
            vec![
                Cell::Text(r.mechanism.clone()),
                Cell::Num(r.sigma),
                r.t.map_or(Cell::Text("all".into()), |t| Cell::Text(t.to_string())),
                Cell::Num(r.claimed_eps),
                opt(r.exact_eps),
                Cell::Num(r.eps_lower_bound),
                opt(r.exact_over_claimed),
                Cell::Num(r.lb_over_claimed),
                Cell::Num(r.delta),
            ]
        })
        .collect();
    Table::new(
        vec![
            ColumnSpec::new("mechanism", "mechanism", "mechanism"),
            ColumnSpec::new("sigma", "σ", "$\\sigma$"),
            ColumnSpec::new("t", "t", "$t$"),
            ColumnSpec::new("claimed_eps", "claimed ε", "claimed $\\varepsilon$"),
            ColumnSpec::new("exact_eps", "exact ε", "exact $\\varepsilon$"),
            ColumnSpec::new("eps_lower_bound", "ε_LB", "$\\varepsilon_{\\mathrm{LB}}$"),
            ColumnSpec::new("exact_over_claimed", "exact/claimed", "exact/claimed"),
            ColumnSpec::new("lb_over_claimed", "LB/claimed", "LB/claimed"),
            ColumnSpec::new("delta", "δ", "$\\delta$"),
        ],
        rows,
        caption,
        "tab:audit".into(),
        3,
    )
}

/// Run `privalign audit`.
pub fn run(a: &AuditArgs) -> Result<()> {
    if a.threads == Some(0) {
        bail_input!(
            "--threads 0: give at least 1 worker thread, or omit --threads to use every core"
        );
    }
    let (cfg, out) = match &a.config {
        Some(path) => {
            let mut cfg = load_config(path)?;
            if let Some(t) = a.trials {
                cfg.trials = t;
            }
            let out = a
                .out
                .clone()
                .unwrap_or_else(|| Path::new("results").join(&cfg.name));
            (cfg, Some(out))
        }
        None => (AuditConfig::from_args(a)?, a.out.clone()),
    };
    let settings = cfg.settings(a.sigma_x, a.sigma_z);
    for s in &settings {
        super::run::validate(s)
            .with_context(|| format!("{} at σ = {}", s.mechanism.name(), s.sigma))?;
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads.unwrap_or(0))
        .build()?;
    let mut records = Vec::new();
    for s in &settings {
        let start = Instant::now();
        let r = pool.install(|| audit(s, Fault::None))?;
        eprintln!(
            "audited {} at σ = {} ({} runs per input) in {:.1} s",
            s.mechanism.name(),
            s.sigma,
            s.trials,
            start.elapsed().as_secs_f64()
        );
        records.extend(r);
    }
    match a.format {
        AuditFormat::Json => crate::outln!("{}", serde_json::to_string_pretty(&records)?)?,
        AuditFormat::Text => {
            let caption = format!(
                "Privacy audit: claimed ε (accountant), exact ε of the worst pair, empirical lower bound at confidence {} from {} runs per input; n = {}, R_max = {}, Δ_r = {}, δ = {} (PrivITP/FSRC).",
                cfg.confidence,
                cfg.trials,
                cfg.n,
                cfg.r_max,
                cfg.delta_r.unwrap_or(cfg.r_max),
                cfg.delta
            );
            crate::out!(
                "{}",
                records_table(&records, caption).render(crate::report::format::Format::Table)
            )?;
            for r in &records {
                if r.eps_lower_bound > r.claimed_eps {
                    crate::outln!(
                        "VIOLATION: {} σ = {}{}: ε_LB {:.4} > claimed {:.4}",
                        r.mechanism,
                        r.sigma,
                        r.t.map_or(String::new(), |t| format!(" t = {t}")),
                        r.eps_lower_bound,
                        r.claimed_eps
                    )?;
                }
            }
        }
    }
    if let Some(dir) = out {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(AUDIT_FILE);
        write_atomic(&path, serde_json::to_string_pretty(&records)?.as_bytes())?;
        eprintln!("wrote {}", path.display());
    }
    let violations = records
        .iter()
        .filter(|r| r.eps_lower_bound > r.claimed_eps)
        .count();
    if violations > 0 {
        anyhow::bail!(
            "{violations} audited ε lower bound(s) exceed the claimed ε: the mechanism leaks more than privalign reports"
        );
    }
    Ok(())
}
