//! Value checks that need no data: every σ, β, n, bound and budget is in its
//! domain. Each error names the key path and the fix.

use anyhow::Result;

use super::types::*;
use crate::error::input_error;

fn bad(path: impl AsRef<str>, msg: impl AsRef<str>) -> anyhow::Error {
    input_error(format!("{}: {}", path.as_ref(), msg.as_ref()))
}

/// A list sweep must be non-empty with every value finite and > 0.
fn positive_sweep(path: &str, what: &str, values: &[f64]) -> Result<()> {
    if values.is_empty() {
        return Err(bad(
            path,
            format!("is empty; list at least one {what} value, e.g. [0.5, 1]"),
        ));
    }
    for (i, &v) in values.iter().enumerate() {
        scale(&format!("{path}[{i}]"), what, v)?;
    }
    Ok(())
}

/// A noise scale σ or a regularisation β: finite and at least
/// [`super::limits::MIN_SCALE`], below which the accountant and the
/// Phase-2 acceptance leave floating point (σ = 1e-200 gave NaN, 5e-324 a
/// panic in the error function).
fn scale(path: &str, what: &str, v: f64) -> Result<()> {
    positive(path, what, v)?;
    if v < super::limits::MIN_SCALE {
        return Err(bad(
            path,
            format!(
                "{what} = {v:e} is below the smallest supported value {:e}; valid {what} lie in [{:e}, ∞) (rewards live in [0, r_max], so smaller noise means no privacy and overflows the ε formulas)",
                super::limits::MIN_SCALE,
                super::limits::MIN_SCALE
            ),
        ));
    }
    Ok(())
}

fn positive(path: &str, what: &str, v: f64) -> Result<()> {
    if !(v.is_finite() && v > 0.0) {
        return Err(bad(
            path,
            format!("{what} must be a finite number > 0, got {v}"),
        ));
    }
    Ok(())
}

fn interval(path: &str, lo: f64, hi: f64) -> Result<()> {
    if !(lo.is_finite() && hi.is_finite()) {
        return Err(bad(
            path,
            format!("bounds must be finite, got [{lo}, {hi}]"),
        ));
    }
    if lo >= hi {
        return Err(bad(
            path,
            format!("lo = {lo} ≥ hi = {hi}; give an interval with lo < hi"),
        ));
    }
    Ok(())
}

/// Check every value of `c` that can be checked without the data.
pub fn validate(c: &ExperimentConfig) -> Result<()> {
    if let Some(name) = &c.name
        && (name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.'))
    {
        return Err(bad(
            "name",
            format!("`{name}` cannot name a results directory; use letters, digits, - and _"),
        ));
    }
    if c.datasets.is_empty() {
        return Err(bad(
            "datasets",
            "is empty; list at least one prepared dataset, e.g. `- path: ../data/demo/prepared`",
        ));
    }
    if c.reward_models.is_empty() {
        return Err(bad(
            "reward_models",
            "is empty; name at least one reward model, e.g. `oasst: {transform: {kind: minmax}}`",
        ));
    }
    for (name, rm) in &c.reward_models {
        validate_reward_model(&format!("reward_models.{name}"), rm)?;
    }
    let sweeps = any_algorithm(&c.algorithms);
    let ns = match &c.n {
        Some(g) => g.values().map_err(|m| bad("n", m))?,
        None if sweeps => {
            return Err(bad(
                "n",
                "missing; the algorithms need an n grid, e.g. `n: {log2: [1, 12]}` or `n: [2, 8, 64]`",
            ));
        }
        None => Vec::new(),
    };
    if c.replicates < 1 {
        return Err(bad("replicates", "must be at least 1"));
    }
    super::limits::check_replicates("replicates", c.replicates)?;
    for &n in &ns {
        super::limits::check_n("n", n)?;
    }
    if c.lambda_nodes > 64 {
        return Err(bad(
            "lambda_nodes",
            format!(
                "{} Gauss–Hermite nodes is more than needed; use 1–64 (16 is exact to ~1e-6), or 0 to sample λ̃",
                c.lambda_nodes
            ),
        ));
    }
    let d = c.privacy.delta;
    if !(d > 0.0 && d < 1.0) {
        return Err(bad(
            "privacy.delta",
            format!("δ must lie in (0, 1), got {d}"),
        ));
    }
    if !sweeps && c.fsrc.is_none() {
        return Err(bad(
            "algorithms",
            "no algorithm is enabled and there is no `fsrc:` section; add at least one of bon, privbon, privbon_gauss, itp, privitp (e.g. `bon: {}`), or an fsrc section",
        ));
    }
    validate_algorithms(&c.algorithms)?;
    // Gaussian PrivBoN's ε column is computed by the accountant, which is
    // verified only over its range (README "Reliability", rule 4).
    if let Some(g) = &c.algorithms.privbon_gauss {
        for (name, rm) in &c.reward_models {
            let r_max = rm.transform.r_max;
            let delta_r = rm.delta_r.unwrap_or(r_max);
            for (i, &sigma) in g.sigma.iter().enumerate() {
                let n = ns.iter().copied().max().unwrap_or(1);
                if let Err(m) = crate::privacy::rnm::check_range(r_max, delta_r, sigma, n) {
                    return Err(bad(
                        format!("algorithms.privbon_gauss.sigma[{i}]"),
                        format!("on reward model `{name}`: {m}"),
                    ));
                }
            }
        }
    }
    if let Some(f) = &c.fsrc {
        validate_fsrc(f, c)?;
    }
    let algs = super::resolve::expand_algorithms(&c.algorithms);
    let sigmas: Vec<f64> = algs.iter().filter_map(|a| a.sigma()).collect();
    let betas: Vec<f64> = algs.iter().filter_map(|a| a.beta()).collect();
    for (i, t) in c.reports.tables.iter().enumerate() {
        report_n(&format!("reports.tables[{i}].n"), t.n, &ns)?;
        if matches!(t.kind, TableKind::Lift | TableKind::Winrate) {
            let at = format!("reports.tables[{i}]");
            report_value(&format!("{at}.sigma"), "σ", t.sigma, &sigmas)?;
            report_value(&format!("{at}.beta"), "β", t.beta, &betas)?;
        }
    }
    for (i, p) in c.reports.plots.iter().enumerate() {
        report_n(&format!("reports.plots[{i}].n"), p.n, &ns)?;
        if p.kind != PlotKind::Fsrc {
            let at = format!("reports.plots[{i}]");
            report_value(&format!("{at}.sigma"), "σ", p.sigma, &sigmas)?;
            report_value(&format!("{at}.beta"), "β", p.beta, &betas)?;
        }
    }
    super::report_names::check_unique(&c.reports)?;
    Ok(())
}

/// A report's σ or β must be one the sweep runs, or the report fails after
/// the whole sweep (issue #13: a typo must never cost a full run).
fn report_value(path: &str, what: &str, v: Option<f64>, swept: &[f64]) -> Result<()> {
    let Some(v) = v else {
        return Ok(());
    };
    if swept
        .iter()
        .any(|&s| (s - v).abs() <= 1e-9 * s.abs().max(v.abs()))
    {
        return Ok(());
    }
    let mut have: Vec<f64> = swept.to_vec();
    have.sort_by(f64::total_cmp);
    have.dedup();
    Err(bad(
        path,
        if have.is_empty() {
            format!("{what} = {v}, but no algorithm of the sweep has a {what}; remove it")
        } else {
            format!(
                "{what} = {v} is not one the sweep runs ({}); pick one of those",
                have.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
    ))
}

fn report_n(path: &str, n: Option<usize>, grid: &[usize]) -> Result<()> {
    match n {
        Some(n) if !grid.contains(&n) => Err(bad(
            path,
            format!("n = {n} is not in the n grid {grid:?}; pick one of those"),
        )),
        _ => Ok(()),
    }
}

fn validate_reward_model(path: &str, rm: &RewardModelSpec) -> Result<()> {
    let t = &rm.transform;
    let tp = format!("{path}.transform");
    positive(&format!("{tp}.r_max"), "r_max", t.r_max)?;
    if let Some(dr) = rm.delta_r {
        positive(&format!("{path}.delta_r"), "Δ_r", dr)?;
    }
    let kind = t.kind.name();
    match t.kind {
        TransformKind::Clip => match (t.lo, t.hi) {
            (Some(lo), Some(hi)) => interval(&tp, lo, hi)?,
            _ => {
                return Err(bad(
                    &tp,
                    "kind clip needs fixed bounds `lo` and `hi` (raw-score units), e.g. {kind: clip, lo: -6, hi: 7}",
                ));
            }
        },
        TransformKind::Zscore => {
            interval(&tp, t.lo.unwrap_or(-3.0), t.hi.unwrap_or(3.0))?;
        }
        TransformKind::Minmax
        | TransformKind::Sigmoid
        | TransformKind::None
        | TransformKind::Standardize => {
            if t.lo.is_some() || t.hi.is_some() {
                return Err(bad(
                    &tp,
                    format!(
                        "kind {kind} takes no `lo`/`hi`; remove them, or use kind clip for fixed bounds"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Whether the config sweeps any algorithm (else it is an FSRC-only config).
pub fn any_algorithm(a: &AlgorithmsSpec) -> bool {
    a.bon.is_some()
        || a.privbon.is_some()
        || a.privbon_gauss.is_some()
        || a.itp.is_some()
        || a.privitp.is_some()
}

/// `sigma` and `split` of PrivITP or FSRC (at `path`): `half` needs a σ list,
/// an explicit split replaces it.
fn sigma_split(path: &str, split: &SplitSpec, sigma: &Option<Vec<f64>>) -> Result<()> {
    match (split, sigma) {
        (SplitSpec::Half, None) => Err(bad(
            format!("{path}.sigma"),
            "missing; list the total noise values (σ_X = σ_Z = σ/2), e.g. sigma: [0.5, 1], or give split: {sigma_x: .., sigma_z: ..}",
        )),
        (SplitSpec::Half, Some(s)) => positive_sweep(&format!("{path}.sigma"), "σ", s),
        (SplitSpec::Explicit { .. }, Some(_)) => Err(bad(
            format!("{path}.sigma"),
            "cannot be combined with an explicit split {sigma_x, sigma_z}; remove one of them",
        )),
        (SplitSpec::Explicit { sigma_x, sigma_z }, None) => {
            scale(&format!("{path}.split.sigma_x"), "σ_X", *sigma_x)?;
            scale(&format!("{path}.split.sigma_z"), "σ_Z", *sigma_z)
        }
    }
}

fn validate_algorithms(a: &AlgorithmsSpec) -> Result<()> {
    if let Some(s) = &a.privbon {
        positive_sweep("algorithms.privbon.sigma", "σ", &s.sigma)?;
    }
    if let Some(s) = &a.privbon_gauss {
        positive_sweep("algorithms.privbon_gauss.sigma", "σ", &s.sigma)?;
    }
    if let Some(s) = &a.itp {
        positive_sweep("algorithms.itp.beta", "β", &s.beta)?;
    }
    if let Some(p) = &a.privitp {
        positive_sweep("algorithms.privitp.beta", "β", &p.beta)?;
        sigma_split("algorithms.privitp", &p.split, &p.sigma)?;
        if !(p.l.is_finite() && p.l >= 0.0) {
            return Err(bad(
                "algorithms.privitp.L",
                format!("L must be a finite number ≥ 0, got {}", p.l),
            ));
        }
        if let Some([lo, hi]) = p.clamp {
            interval("algorithms.privitp.clamp", lo, hi)?;
        }
        if !(1..=100_000).contains(&p.noise_draws) {
            return Err(bad(
                "algorithms.privitp.noise_draws",
                format!(
                    "{} noise draws; use 1–100000 (the reference scripts use 150)",
                    p.noise_draws
                ),
            ));
        }
    }
    Ok(())
}

fn validate_fsrc(f: &FsrcSpec, c: &ExperimentConfig) -> Result<()> {
    positive("fsrc.eps_total", "ε_total", f.eps_total)?;
    if f.n < 1 {
        return Err(bad("fsrc.n", "n must be at least 1"));
    }
    super::limits::check_n("fsrc.n", f.n)?;
    sigma_split("fsrc", &f.split, &f.sigma)?;
    scale("fsrc.beta", "β", f.beta)?;
    if !(f.l.is_finite() && f.l >= 0.0) {
        return Err(bad(
            "fsrc.L",
            format!("L must be a finite number ≥ 0, got {}", f.l),
        ));
    }
    if let Some([lo, hi]) = f.clamp {
        interval("fsrc.clamp", lo, hi)?;
    }
    if f.seeds < 1 {
        return Err(bad(
            "fsrc.seeds",
            "must be at least 1 (independent runs per reward model and σ)",
        ));
    }
    if let Some(rms) = &f.reward_models {
        if rms.is_empty() {
            return Err(bad(
                "fsrc.reward_models",
                "is empty; omit it to use every reward model",
            ));
        }
        for (i, r) in rms.iter().enumerate() {
            if !c.reward_models.contains_key(r) {
                let known: Vec<&str> = c.reward_models.keys().map(String::as_str).collect();
                return Err(bad(
                    format!("fsrc.reward_models[{i}]"),
                    format!(
                        "`{r}` is not one of the experiment's reward_models ({}); add it there or fix the name",
                        known.join(", ")
                    ),
                ));
            }
        }
    }
    fsrc_budget_fits(f, c)
}

/// ε_total must pay for at least one query at its worst case ε_max (the FSRC
/// filter answers while ε_spent + ε_max < ε_total), or the run answers nothing.
fn fsrc_budget_fits(f: &FsrcSpec, c: &ExperimentConfig) -> Result<()> {
    use crate::privacy::accountant::{PrivacyParams, privitp_eps_max};
    for (name, rm) in &c.reward_models {
        if f.reward_models.as_ref().is_some_and(|r| !r.contains(name)) {
            continue;
        }
        let r_max = rm.transform.r_max;
        let pr = PrivacyParams {
            r_max,
            delta_r: rm.delta_r.unwrap_or(r_max),
            delta: c.privacy.delta,
            paper_eps1: c.privacy.paper_eps1,
        };
        let clamp = f.clamp.map(|[lo, hi]| (lo, hi)).unwrap_or((0.0, r_max));
        for (sx, sz) in f.sigma_pairs() {
            let eps_max =
                privitp_eps_max(pr.phase1_eps(sx), clamp, sz, r_max, pr.delta_r, f.l, f.n);
            if eps_max.is_nan() || eps_max >= f.eps_total {
                return Err(bad(
                    "fsrc.eps_total",
                    format!(
                        "ε_total = {} does not cover one query: at σ_X = {sx}, σ_Z = {sz} on reward model `{name}` a query can cost ε_max = {eps_max:.4}; raise eps_total or σ",
                        f.eps_total
                    ),
                ));
            }
        }
    }
    Ok(())
}
