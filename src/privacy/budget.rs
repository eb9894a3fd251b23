//! The numbers of `privalign budget`: the rows of the paper's privacy-budget
//! table (`tab:budgets`) and the range checks of every accountant formula at
//! a single parameter point. `report::budget` renders them.
//!
//! Decisions where the paper is loose:
//! * The table's ε_2^post is evaluated at the mean halting time t̄ as
//!   (t̄ − 1)·κ + ρ, maximised over λ̃ in the clamp interval (default
//!   [0, R_max]): the released λ̃ is data-dependent, so a table that does not
//!   name one must take the worst.
//! * β cancels from every Phase-2 formula (only βM = R_max + σ_Z·L − λ̃
//!   enters), so `--beta` is accepted for the record and does not change ε.
//! * ε_1 is the exact analytic-Gaussian ε (sound for every ε) unless
//!   `--paper-eps1` asks for the classical formula, which is only a valid
//!   bound when it is below 1; both are always shown.

use anyhow::Result;

use super::accountant::*;
use crate::bail_input;
use crate::select::algorithm::split_sigma;

/// Parameters shared by the budget computations.
#[derive(Clone, Debug)]
pub struct BudgetParams {
    pub privacy: PrivacyParams,
    pub n: usize,
    pub l: f64,
    pub clamp: (f64, f64),
}

impl BudgetParams {
    /// Check ranges; every failure names the flag and the fix.
    pub fn validate(&self) -> Result<()> {
        if !(self.privacy.r_max > 0.0 && self.privacy.r_max.is_finite()) {
            bail_input!(
                "--r-max must be a positive number (got {})",
                self.privacy.r_max
            );
        }
        if !(self.privacy.delta_r > 0.0 && self.privacy.delta_r.is_finite()) {
            bail_input!(
                "--delta-r must be a positive number (got {}); the sensitivity Δ_r bounds how much one training example moves a reward",
                self.privacy.delta_r
            );
        }
        if !(self.privacy.delta > 0.0 && self.privacy.delta < 1.0) {
            bail_input!(
                "--delta must lie in (0, 1) (got {}); e.g. --delta 1e-5",
                self.privacy.delta
            );
        }
        if self.n < 1 || self.n > MAX_N {
            bail_input!(
                "--n {}: give 1 ≤ n ≤ {MAX_N} (the accountant is verified up to {MAX_N} candidates)",
                self.n
            );
        }
        if self.privacy.delta_r > self.privacy.r_max {
            bail_input!(
                "--delta-r {} exceeds --r-max {}: rewards in [0, R_max] cannot move by more than R_max; give Δ_r ≤ R_max",
                self.privacy.delta_r,
                self.privacy.r_max
            );
        }
        if self.privacy.delta < 1e-300 {
            bail_input!(
                "--delta must lie in [1e-300, 1) (got {})",
                self.privacy.delta
            );
        }
        if self.l.is_nan() || self.l > MAX_RATIO {
            bail_input!("--L must lie in [0, {MAX_RATIO:e}] (got {})", self.l);
        }
        if !(self.l >= 0.0 && self.l.is_finite()) {
            bail_input!("--L must be a non-negative number (got {})", self.l);
        }
        if self.clamp.0.is_nan() || self.clamp.1.is_nan() || self.clamp.0 > self.clamp.1 {
            bail_input!(
                "--clamp LO,HI needs LO ≤ HI (got {},{})",
                self.clamp.0,
                self.clamp.1
            );
        }
        Ok(())
    }
}

/// Smallest noise scale σ (and σ_X, σ_Z) and regularisation β. Rewards
/// live in [0, r_max] (r_max = 1 by default): at σ = 1e-6 PrivBoN's ε is
/// already 2·10⁶ and PrivITP's 4·10¹²; below ~1e-150 the Phase-2 terms
/// overflow to inf/NaN and σ = 5e-324 panics inside erfc. (Configs share it:
/// `config::limits` re-exports it.)
pub const MIN_SCALE: f64 = 1e-6;

/// Largest accepted ratio of any reward-scale quantity (R_max, Δ_r, |λ̃|,
/// the clamp ends) to a noise scale: beyond it ε exceeds ~1e11 and f64 can
/// no longer evaluate the formulas to 1e-10 (README "Reliability", rule 4).
pub const MAX_RATIO: f64 = super::rnm::MAX_RATIO;
/// Largest accepted n.
pub const MAX_N: usize = super::rnm::MAX_N;

/// Check that every reward-scale quantity over the noise scale `sigma`
/// (named `flag`) is within the accountant's verified range, and that
/// Δ_r/σ is not so small that ε underflows.
pub fn check_scale(p: &BudgetParams, flag: &str, sigma: f64, lambda: Option<f64>) -> Result<()> {
    check_sigma(flag, sigma)?;
    let pr = &p.privacy;
    let mut worst = ("--r-max", pr.r_max);
    for (f, v) in [
        ("--clamp", p.clamp.0.abs()),
        ("--clamp", p.clamp.1.abs()),
        ("--lambda", lambda.map_or(0.0, f64::abs)),
    ] {
        if v > worst.1 {
            worst = (f, v);
        }
    }
    if (worst.1 / sigma).is_nan() || worst.1 / sigma > MAX_RATIO {
        bail_input!(
            "{} {} over {flag} {} is {}, above the accountant's range {MAX_RATIO:e} (ε would be about its square over 2, ≈ {:.1e}); give {flag} ≥ {}",
            worst.0,
            num(worst.1),
            num(sigma),
            num(worst.1 / sigma),
            (worst.1 / sigma).powi(2) / 2.0,
            num(worst.1 / MAX_RATIO)
        );
    }
    if (pr.delta_r / sigma).is_nan() || pr.delta_r / sigma < super::rnm::MIN_RATIO {
        bail_input!(
            "--delta-r {} over {flag} {} is below {:e} (ε would underflow to 0); give {flag} ≤ {}",
            num(pr.delta_r),
            num(sigma),
            super::rnm::MIN_RATIO,
            num(pr.delta_r / super::rnm::MIN_RATIO)
        );
    }
    Ok(())
}

/// Refuse a Phase-2 point whose κ or ρ is a difference of logarithms too
/// large for 1e-10 relative accuracy (Δ_r tiny next to R_max, |λ̃| or σ_Z·L).
pub fn check_condition(t: &Phase2Terms, flag: &str, delta_r: f64, sigma_z: f64) -> Result<()> {
    if t.condition * 4e-16 > 1e-10 || !t.kappa.is_finite() || !t.accept.is_finite() {
        bail_input!(
            "{flag} {delta_r}: Δ_r/σ_Z = {:e} is too small next to R_max, |λ̃| and σ_Z·L (κ = {:e} and ρ = {:e} would be differences of numbers {:.0e}× larger, beyond f64's 1e-10 accuracy in every formulation privalign has); give {flag} ≥ about {} (κ and ρ grow in proportion to Δ_r there)",
            delta_r / sigma_z,
            t.kappa,
            t.accept,
            t.condition,
            num(delta_r * t.condition * 4e-16 / 1e-10)
        );
    }
    Ok(())
}

/// A number for a message: plain when moderate, scientific otherwise.
fn num(x: f64) -> String {
    if x != 0.0 && !(1e-4..1e6).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// Require σ > 0 (named by its flag).
pub fn check_sigma(flag: &str, s: f64) -> Result<()> {
    if !(s > 0.0 && s.is_finite()) {
        bail_input!("{flag} must be positive (got {s}); noise scales are standard deviations");
    }
    let min = MIN_SCALE;
    if s < min {
        bail_input!(
            "{flag} {s:e} is below the smallest supported value {min:e}; valid values lie in [{min:e}, ∞) — smaller noise overflows the ε formulas"
        );
    }
    Ok(())
}

/// ε_2^post at a fractional mean halting time t̄, maximised over λ̃ in the clamp.
pub fn eps2_at_mean_halting(p: &BudgetParams, sigma_z: f64, t_mean: f64) -> f64 {
    let f = |lt: f64| {
        let t = Phase2Terms::new(lt, sigma_z, p.privacy.r_max, p.privacy.delta_r, p.l);
        (t_mean - 1.0) * t.kappa + t.accept
    };
    // Refined by golden section like privitp-max: a grid alone is 5e-6 off
    // at an interior maximum (tests/data/max_vectors.csv).
    crate::math::maximise::maximise_on_interval(f, p.clamp.0, p.clamp.1).1
}

/// One row of the budget table (one total σ, PrivITP split by
/// [`split_sigma`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BudgetRow {
    pub sigma: f64,
    /// PrivBoN (Gumbel) ε = 2Δ_r/σ.
    pub eps_privbon: f64,
    /// PrivITP's ε_1: the analytic or, with `paper_eps1`, classical ε.
    pub eps1: f64,
    /// The classical ε_1 (a valid bound only below 1).
    pub eps1_classical: f64,
    /// ε_2^post at the row's mean halting time, worst λ̃ in the clamp.
    pub eps2_post: f64,
}

/// The budget table's rows for `(σ, t̄)` pairs (each σ with its own mean
/// halting time), after checking every σ is inside the accountant's range.
pub fn budget_rows(p: &BudgetParams, rows: &[(f64, f64)]) -> Result<Vec<BudgetRow>> {
    p.validate()?;
    if rows.is_empty() {
        bail_input!("--sigma needs at least one value, e.g. --sigma 0.1,0.25,0.5");
    }
    for &(s, t_mean) in rows {
        check_sigma("--sigma", s)?;
        let (sx, sz) = split_sigma(s);
        check_scale(
            p,
            "σ/2 (--sigma; the table splits σ_X = σ_Z = σ/2)",
            sx,
            None,
        )?;
        for lt in [p.clamp.0, 0.5 * (p.clamp.0 + p.clamp.1), p.clamp.1] {
            let t = Phase2Terms::new(lt, sz, p.privacy.r_max, p.privacy.delta_r, p.l);
            check_condition(&t, "--delta-r", p.privacy.delta_r, sz)?;
        }
        if !(1.0..=(p.n + 1) as f64).contains(&t_mean) {
            bail_input!(
                "--halting-time must lie in [1, n+1] = [1, {}] (got {t_mean})",
                p.n + 1
            );
        }
    }
    Ok(rows
        .iter()
        .map(|&(s, t_mean)| {
            let (sx, sz) = split_sigma(s);
            BudgetRow {
                sigma: s,
                eps_privbon: privbon_gumbel_eps(p.privacy.delta_r, s),
                eps1: p.privacy.phase1_eps(sx),
                eps1_classical: phase1_eps_classical(p.privacy.delta_r, sx, p.privacy.delta),
                eps2_post: eps2_at_mean_halting(p, sz, t_mean),
            }
        })
        .collect())
}
