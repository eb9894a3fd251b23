//! One audit setting end to end: pairs, claimed ε, exact ε, empirical bound.

use anyhow::Result;

use super::empirical::{Counts, LowerBound, histogram, lower_bound, mix};
use super::exact::{self, ItpModel};
use super::mechanisms::{BonInput, ItpInput};
use super::pairs::{ItpPair, check_range, privbon_pair, privitp_pair};
use super::{AuditRecord, AuditSetting, Fault, Mechanism, claimed};
use crate::bail_input;
use crate::sweep::seed::stable_id;

/// λ̃ is discretised into this many equal bins inside the clamp, plus one
/// category for each clamp end (atoms).
pub const LAMBDA_BINS: usize = 16;
const NB: usize = LAMBDA_BINS + 2;

/// Check a setting; every message names the flag and the fix.
pub fn validate(s: &AuditSetting) -> Result<()> {
    let pr = &s.privacy;
    if !(pr.r_max > 0.0 && pr.r_max.is_finite()) {
        bail_input!("--r-max must be a positive number (got {})", pr.r_max);
    }
    check_range(pr.r_max, pr.delta_r)?;
    for (flag, v) in [
        ("--sigma", Some(s.sigma)),
        ("--sigma-x", s.sigma_x),
        ("--sigma-z", s.sigma_z),
    ] {
        if let Some(v) = v
            && !(v > 0.0 && v.is_finite())
        {
            bail_input!("{flag} must be positive (got {v}); noise scales are standard deviations");
        }
    }
    if s.n < 1 {
        bail_input!("--n must be at least 1");
    }
    if s.trials < 2 {
        bail_input!(
            "--trials must be at least 2 (half choose the event, half measure it); the audit's default is 1000000"
        );
    }
    if !(s.confidence > 0.0 && s.confidence < 1.0) {
        bail_input!(
            "--confidence must lie in (0, 1) (got {}), e.g. 0.999999",
            s.confidence
        );
    }
    if matches!(s.mechanism, Mechanism::Privitp | Mechanism::Fsrc) {
        if !(pr.delta > 0.0 && pr.delta < 1.0) {
            bail_input!("--delta must lie in (0, 1) (got {})", pr.delta);
        }
        if !(s.beta > 0.0 && s.beta.is_finite()) {
            bail_input!("--beta must be positive (got {})", s.beta);
        }
        if !(s.l >= 0.0 && s.l.is_finite()) {
            bail_input!("--L must be a non-negative number (got {})", s.l);
        }
        let (lo, hi) = s.clamp;
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            bail_input!(
                "--clamp LO,HI needs finite LO < HI (got {lo},{hi}); the default is 0,R_max"
            );
        }
    }
    if s.mechanism == Mechanism::Fsrc
        && !(s.eps_total_factor > 1.0 && s.eps_total_factor.is_finite())
    {
        bail_input!(
            "--eps-total-factor must exceed 1 (got {}): FSRC answers nothing unless ε_total > ε_max",
            s.eps_total_factor
        );
    }
    Ok(())
}

/// The seed key of one input of one pair of a setting.
fn key(s: &AuditSetting, pair: usize, side: usize) -> u64 {
    let id = stable_id(&format!(
        "audit/{}/{}/{}/{}",
        s.mechanism.name(),
        s.sigma,
        s.n,
        pair
    ));
    mix(s.seed ^ mix(id ^ side as u64))
}

fn alpha(s: &AuditSetting) -> f64 {
    1.0 - s.confidence
}

fn record(
    s: &AuditSetting,
    t: Option<usize>,
    claimed: f64,
    exact: Option<f64>,
    lb: f64,
    delta: f64,
    event: String,
) -> AuditRecord {
    AuditRecord {
        mechanism: s.mechanism.name().to_string(),
        sigma: s.sigma,
        t,
        claimed_eps: claimed,
        exact_eps: exact,
        eps_lower_bound: lb,
        confidence: s.confidence,
        trials: s.trials,
        delta,
        lb_over_claimed: lb / claimed,
        exact_over_claimed: exact.map(|e| e / claimed),
        n: s.n,
        r_max: s.privacy.r_max,
        delta_r: s.privacy.delta_r,
        event,
    }
}

fn side_name(lb: &LowerBound) -> &'static str {
    if lb.d_over_dprime {
        "P_D/P_D′"
    } else {
        "P_D′/P_D"
    }
}

/// Audit one setting; `fault` breaks the mechanism or its accountant on
/// purpose (tests; the command passes [`Fault::None`]).
pub fn audit(s: &AuditSetting, fault: Fault) -> Result<Vec<AuditRecord>> {
    validate(s)?;
    Ok(match s.mechanism {
        Mechanism::Privbon | Mechanism::PrivbonGauss => vec![privbon(s, fault)],
        Mechanism::Privitp => privitp(s, fault),
        Mechanism::Fsrc => vec![super::fsrc::audit(s, fault)],
    })
}

fn privbon(s: &AuditSetting, fault: Fault) -> AuditRecord {
    let gauss = s.mechanism == Mechanism::PrivbonGauss;
    let pair = privbon_pair(s.privacy.r_max, s.privacy.delta_r, s.n);
    let (claim, exact) = if gauss {
        (
            claimed::privbon_gauss(s),
            exact::privbon_gauss(&pair, s.sigma),
        )
    } else {
        (claimed::privbon(s), exact::privbon_gumbel(&pair, s.sigma))
    };
    let counts: Vec<Counts> = (0..2)
        .map(|side| {
            let input = BonInput::new(&pair[side]);
            histogram(s.trials, s.n, key(s, 0, side), |rng| {
                input.draw(s.sigma, gauss, fault, rng)
            })
        })
        .collect();
    let all: Vec<usize> = (0..s.n).collect();
    let lb = lower_bound(&counts[0], &counts[1], &all, 0.0, alpha(s));
    let event = format!(
        "{}: selected candidate ∈ {:?} (candidate 0 is the one moved up)",
        side_name(&lb),
        lb.event
    );
    record(s, None, claim, Some(exact), lb.eps, 0.0, event)
}

/// PrivITP's model as the audit runs it.
pub fn model(s: &AuditSetting) -> ItpModel {
    let (sigma_x, sigma_z) = s.split();
    ItpModel {
        sigma_x,
        sigma_z,
        r_max: s.privacy.r_max,
        l: s.l,
        clamp: s.clamp,
        n: s.n,
    }
}

/// The worst pair for halting time t (λ̂ centred at the claim's worst λ̃ or
/// at one of 9 points of the clamp, moved up or down: the one with the
/// largest exact ε is kept), its claim and its exact ε.
pub struct ItpCase {
    pub t: usize,
    pub claimed: f64,
    pub exact: f64,
    pub pair: ItpPair,
    pub inputs: [ItpInput; 2],
}

pub fn itp_case(s: &AuditSetting, t: usize, fault: Fault) -> ItpCase {
    let m = model(s);
    let pr = &s.privacy;
    let (claim, centre) = claimed::privitp_t(s, t, fault);
    // Centre the pair's λ̂ where the claim peaks, or anywhere else in the
    // clamp: at small σ the claim's worst λ̃ can make every event of halting
    // time t rarer than δ, while another λ̂ leaks plenty. The exact ε picks.
    let (lo, hi) = s.clamp;
    let mut centres = vec![centre];
    centres.extend((0..=8).map(|i| lo + (hi - lo) * f64::from(i) / 8.0));
    let mut best: Option<ItpCase> = None;
    for (centre, up) in centres.iter().flat_map(|&c| [(c, true), (c, false)]) {
        let pair = privitp_pair(t, s.n, (pr.r_max, pr.delta_r, s.beta), centre, up);
        let inputs = [0, 1].map(|i| ItpInput::new(&pair.batch_a[i], &pair.batch_b[i], s.beta));
        let e = exact::privitp_t(
            &m,
            [inputs[0].lambda_hat, inputs[1].lambda_hat],
            [&pair.batch_b[0], &pair.batch_b[1]],
            t,
            pr.delta,
        );
        if best.as_ref().is_none_or(|b| e > b.exact) {
            best = Some(ItpCase {
                t,
                claimed: claim,
                exact: e,
                pair,
                inputs,
            });
        }
    }
    best.expect("two candidates")
}

/// Category of a PrivITP output (λ̃, t).
pub fn itp_category(m: &ItpModel, lt: f64, t: usize) -> usize {
    let (lo, hi) = m.clamp;
    let bin = if lt <= lo {
        0
    } else if lt >= hi {
        NB - 1
    } else {
        1 + (((lt - lo) / (hi - lo) * LAMBDA_BINS as f64) as usize).min(LAMBDA_BINS - 1)
    };
    (t - 1) * NB + bin
}

fn describe_bins(m: &ItpModel, cats: &[usize]) -> String {
    let (lo, hi) = m.clamp;
    let w = (hi - lo) / LAMBDA_BINS as f64;
    let parts: Vec<String> = cats
        .iter()
        .map(|&c| match c % NB {
            0 => format!("λ̃={lo}"),
            b if b == NB - 1 => format!("λ̃={hi}"),
            b => format!("[{:.4},{:.4})", lo + (b - 1) as f64 * w, lo + b as f64 * w),
        })
        .collect();
    parts.join(" ∪ ")
}

fn privitp(s: &AuditSetting, fault: Fault) -> Vec<AuditRecord> {
    let m = model(s);
    let delta = s.privacy.delta;
    let mut rows = Vec::new();
    for t in 1..=s.n + 1 {
        let case = itp_case(s, t, fault);
        let counts: Vec<Counts> = (0..2)
            .map(|side| {
                let input = &case.inputs[side];
                histogram(s.trials, (s.n + 1) * NB, key(s, t, side), |rng| {
                    let (lt, tt) = input.draw(&m, fault, rng);
                    itp_category(&m, lt, tt)
                })
            })
            .collect();
        let allowed: Vec<usize> = ((t - 1) * NB..t * NB).collect();
        let lb = lower_bound(&counts[0], &counts[1], &allowed, delta, alpha(s));
        let event = format!(
            "{}: t = {t}, {}",
            side_name(&lb),
            describe_bins(&m, &lb.event)
        );
        rows.push(record(
            s,
            Some(t),
            case.claimed,
            Some(case.exact),
            lb.eps,
            delta,
            event,
        ));
    }
    let pick = |f: fn(&AuditRecord) -> f64| rows.iter().map(f).fold(f64::NEG_INFINITY, f64::max);
    let claim = pick(|r| r.claimed_eps);
    let exact = pick(|r| r.exact_eps.unwrap_or(f64::NEG_INFINITY));
    let lb = pick(|r| r.eps_lower_bound);
    let summary = record(
        s,
        None,
        claim,
        Some(exact),
        lb,
        delta,
        "max over the per-t rows (each t its own worst pair and event)".into(),
    );
    rows.insert(0, summary);
    rows
}
