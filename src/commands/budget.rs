//! `privalign budget`: its flags, their conversion into [`BudgetParams`], and
//! the table of the quantity asked for (computed by `privacy`, rendered by
//! `report::budget`).

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

use crate::bail_input;
use crate::config::TableKind;
use crate::config::limits::check_n;
use crate::fsutil::write_atomic;
use crate::pipeline;
use crate::privacy::accountant::{
    Phase2Terms, PrivacyParams, phase1_eps_analytic, phase1_eps_classical, privbon_gauss_eps,
    privbon_gumbel_eps, privitp_eps_max,
};
use crate::privacy::budget::{BudgetParams, check_condition, check_scale, check_sigma};
use crate::privacy::rnm::check_range;
use crate::report::budget::{budget_table, point_table};
use crate::report::format::{Format, Table};
use crate::report::select::CellSelection;
use crate::report::tables::TableOptions;

/// Which accountant quantity `privalign budget` computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BudgetMechanism {
    /// The budget table (tab:budgets) over --sigma values.
    Table,
    /// PrivBoN with Gumbel noise: ε = 2Δ_r/σ.
    Privbon,
    /// PrivBoN with Gaussian noise: pure ε of Gaussian Report Noisy Max (needs --n).
    PrivbonGauss,
    /// PrivITP Phase 1: classical and exact analytic-Gaussian ε_1 (needs --sigma-x).
    PrivitpPhase1,
    /// PrivITP Phase 2: κ, ρ, ε_2^post(t) and its max over t (needs --lambda, --t, --sigma-z).
    PrivitpPhase2,
    /// PrivITP worst case ε_max over outcomes and λ̃ in --clamp (needs --sigma-x, --sigma-z).
    PrivitpMax,
}

impl BudgetMechanism {
    /// Its `--mechanism` spelling (clap's, from the variant name).
    fn flag(self) -> String {
        clap::ValueEnum::to_possible_value(&self)
            .map(|v| v.get_name().to_string())
            .unwrap_or_default()
    }
}

/// Values may be negative (`--lambda -0.2`): the parser passes them to
/// validation, which names the flag and its valid range.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct BudgetArgs {
    /// What to compute.
    #[arg(long, value_enum, default_value = "table")]
    pub mechanism: BudgetMechanism,
    /// Total noise σ (table: comma-separated list; PrivITP splits σ_X = σ_Z = σ/2).
    #[arg(long, value_delimiter = ',', default_values_t = [0.1, 0.25, 0.5, 0.75, 1.0])]
    pub sigma: Vec<f64>,
    /// PrivITP Phase-1 noise σ_X.
    #[arg(long)]
    pub sigma_x: Option<f64>,
    /// PrivITP Phase-2 query noise σ_Z.
    #[arg(long)]
    pub sigma_z: Option<f64>,
    /// Upper end of the reward range [0, R_max].
    #[arg(long, default_value_t = 1.0)]
    pub r_max: f64,
    /// Sensitivity Δ_r (default: R_max, the assumption-free bound).
    #[arg(long)]
    pub delta_r: Option<f64>,
    /// δ of Phase 1's (ε, δ) guarantee.
    #[arg(long, default_value_t = 1e-2)]
    pub delta: f64,
    /// Candidates per batch n (the all-rejected outcome costs n·κ).
    #[arg(long, default_value_t = 16)]
    pub n: usize,
    /// Regularisation β (recorded; it cancels from every privacy formula).
    #[arg(long)]
    pub beta: Option<f64>,
    /// Truncation parameter L in M = (R_max + σ_Z·L − λ̃)/β.
    #[arg(long = "L", default_value_t = 4.0)]
    pub l: f64,
    /// Released λ̃ (privitp-phase2).
    #[arg(long)]
    pub lambda: Option<f64>,
    /// Halting time t ∈ [1, n+1] (privitp-phase2; n+1 = all rejected).
    #[arg(long)]
    pub t: Option<usize>,
    /// Mean halting time for the table's ε_2^post.
    #[arg(long, default_value_t = 1.0)]
    pub halting_time: f64,
    /// Clamp interval of λ̃ as LO,HI (default 0,R_max); LO may be negative (`--clamp -0.5,1.5`).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub clamp: Option<Vec<f64>>,
    /// Use the paper's classical ε_1 (valid only when < 1) instead of the exact analytic one.
    #[arg(long)]
    pub paper_eps1: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Also write the LaTeX rendering to this file.
    #[arg(long, value_name = "FILE")]
    pub latex: Option<PathBuf>,
    /// Replace the --latex file if it exists.
    #[arg(long)]
    pub force: bool,
    /// Build the table from a sweep's results directory: privacy parameters from its
    /// manifest, each σ's PrivITP mean halting time at --n from its summary.
    #[arg(long, value_name = "DIR")]
    pub results: Option<PathBuf>,
}

/// The accountant's parameters from the flags (Δ_r defaults to R_max, the
/// clamp to [0, R_max]), range-checked.
impl TryFrom<&BudgetArgs> for BudgetParams {
    type Error = anyhow::Error;

    fn try_from(a: &BudgetArgs) -> Result<Self> {
        let clamp = match a.clamp.as_deref() {
            Some(&[lo, hi]) => (lo, hi),
            Some(v) => bail_input!(
                "--clamp takes two numbers LO,HI (got {} values), e.g. --clamp 0,1",
                v.len()
            ),
            None => (0.0, a.r_max),
        };
        let p = BudgetParams {
            privacy: PrivacyParams {
                r_max: a.r_max,
                delta_r: a.delta_r.unwrap_or(a.r_max),
                delta: a.delta,
                paper_eps1: a.paper_eps1,
            },
            n: a.n,
            l: a.l,
            clamp,
        };
        p.validate()?;
        Ok(p)
    }
}

fn need<T: Copy>(v: Option<T>, flag: &str, mech: BudgetMechanism) -> Result<T> {
    match v {
        Some(x) => Ok(x),
        None => bail_input!("--mechanism {} needs {flag}", mech.flag()),
    }
}

/// Build the table `privalign budget` prints.
pub fn budget(a: &BudgetArgs) -> Result<Table> {
    check_n("--n", a.n)?;
    if let Some(dir) = &a.results {
        if a.mechanism != BudgetMechanism::Table {
            bail_input!(
                "--results reads mean halting times for the budget table; drop --mechanism or use --mechanism table"
            );
        }
        return pipeline::table(
            std::slice::from_ref(dir),
            &TableOptions {
                kind: TableKind::Budget,
                select: CellSelection {
                    n: Some(a.n),
                    ..CellSelection::default()
                },
                bold_best: false,
            },
        );
    }
    let p = BudgetParams::try_from(a)?;
    let (delta_r, clamp) = (p.privacy.delta_r, p.clamp);
    if let Some(b) = a.beta {
        check_sigma("--beta", b)?;
    }
    let one_sigma = || -> Result<f64> {
        if a.sigma.len() != 1 {
            bail_input!(
                "--mechanism {} takes one --sigma value (got {})",
                a.mechanism.flag(),
                a.sigma.len()
            );
        }
        check_scale(&p, "--sigma", a.sigma[0], None)?;
        Ok(a.sigma[0])
    };
    let desc = format!(
        "R_max = {}, Δ_r = {delta_r}, δ = {}, n = {}, L = {}",
        a.r_max, a.delta, a.n, a.l
    );
    Ok(match a.mechanism {
        BudgetMechanism::Table => budget_table(&p, &a.sigma, a.halting_time)?,
        BudgetMechanism::Privbon => {
            let s = one_sigma()?;
            point_table(
                vec![
                    ("sigma", "σ", s),
                    ("eps", "ε", privbon_gumbel_eps(delta_r, s)),
                ],
                desc,
            )
        }
        BudgetMechanism::PrivbonGauss => {
            let s = one_sigma()?;
            if let Err(m) = check_range(a.r_max, delta_r, s, a.n) {
                bail_input!("--mechanism {}: {m}", a.mechanism.flag());
            }
            point_table(
                vec![
                    ("sigma", "σ", s),
                    ("eps", "ε", privbon_gauss_eps(a.r_max, delta_r, s, a.n)),
                ],
                desc,
            )
        }
        BudgetMechanism::PrivitpPhase1 => {
            let sx = need(a.sigma_x, "--sigma-x", a.mechanism)?;
            check_scale(&p, "--sigma-x", sx, None)?;
            let c = phase1_eps_classical(delta_r, sx, a.delta);
            point_table(
                vec![
                    ("sigma_x", "σ_X", sx),
                    (
                        "eps1_analytic",
                        "ε_1 analytic",
                        phase1_eps_analytic(delta_r, sx, a.delta),
                    ),
                    ("eps1_classical", "ε_1 classical", c),
                    (
                        "classical_valid",
                        "classical valid (1/0)",
                        if c < 1.0 { 1.0 } else { 0.0 },
                    ),
                ],
                desc,
            )
        }
        BudgetMechanism::PrivitpPhase2 => {
            let lt = need(a.lambda, "--lambda", a.mechanism)?;
            let t = need(a.t, "--t", a.mechanism)?;
            let sz = need(a.sigma_z, "--sigma-z", a.mechanism)?;
            if !lt.is_finite() {
                bail_input!("--lambda must be a finite number");
            }
            check_scale(&p, "--sigma-z", sz, Some(lt))?;
            if !(1..=a.n + 1).contains(&t) {
                bail_input!(
                    "--t must lie in [1, n+1] = [1, {}] (got {t}); t = n+1 means all n candidates were rejected",
                    a.n + 1
                );
            }
            let terms = Phase2Terms::new(lt, sz, a.r_max, delta_r, a.l);
            check_condition(&terms, "--delta-r", delta_r, sz)?;
            point_table(
                vec![
                    ("lambda", "λ̃", lt),
                    ("t", "t", t as f64),
                    ("kappa", "κ", terms.kappa),
                    ("rho", "ρ", terms.accept),
                    ("eps2_post", "ε_2^post(t)", terms.eps_post(t, a.n)),
                    ("eps2_max", "max_t ε_2^post", terms.eps_max_over_t(a.n)),
                ],
                desc,
            )
        }
        BudgetMechanism::PrivitpMax => {
            let sx = need(a.sigma_x, "--sigma-x", a.mechanism)?;
            let sz = need(a.sigma_z, "--sigma-z", a.mechanism)?;
            check_scale(&p, "--sigma-x", sx, None)?;
            check_scale(&p, "--sigma-z", sz, None)?;
            for lt in [clamp.0, 0.5 * (clamp.0 + clamp.1), clamp.1] {
                let t = Phase2Terms::new(lt, sz, a.r_max, delta_r, a.l);
                check_condition(&t, "--delta-r", delta_r, sz)?;
            }
            let eps1 = p.privacy.phase1_eps(sx);
            point_table(
                vec![
                    ("eps1", "ε_1", eps1),
                    (
                        "eps_max",
                        "ε_max",
                        privitp_eps_max(eps1, clamp, sz, a.r_max, delta_r, a.l, a.n),
                    ),
                ],
                format!("{desc}, λ̃ ∈ [{}, {}]", clamp.0, clamp.1),
            )
        }
    })
}

/// Print the table (and write its LaTeX rendering when asked).
pub fn run(a: &BudgetArgs) -> Result<()> {
    if let Some(path) = &a.latex {
        crate::fsutil::check_new_file(path, "--latex", a.force)?;
    }
    let table = budget(a)?;
    crate::out!("{}", table.render(a.format))?;
    if let Some(path) = &a.latex {
        write_atomic(path, table.render(Format::Latex).as_bytes())?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
