//! What σ, β and Δ_r mean in raw score units, printed before a sweep runs,
//! and warnings (never errors) when they are implausible against the spread
//! of the transformed rewards.
//!
//! σ, β and Δ_r live on the transformed scale [0, r_max] (design §5). For the
//! linear transforms one transformed unit is `k` raw units:
//! * `clip`: k = (hi − lo)/r_max;
//! * `minmax`: k = (max − min)/r_max with the dataset's raw min and max;
//! * `zscore`: k = (hi − lo)·sd/r_max with lo, hi in sd units (default −3, 3)
//!   and the dataset's population sd — with lo, hi = ∓3 and r_max = hi − lo = 6,
//!   one transformed unit is exactly one raw sd;
//! * `none`: k = 1.
//!
//! `sigmoid` is not linear; its local scale at the raw mean m is
//! 1/(r_max·s(m)(1 − s(m))) raw units per transformed unit (exact near m, and
//! more raw units in the tails).
//!
//! Everything here is computed from `dataset.yaml` (no data is loaded), so
//! the transformed spread is an estimate: sd_raw/k, which ignores the clip
//! (clipping only lowers the spread).

use super::resolve::Experiment;
use super::types::{AlgorithmsSpec, SplitSpec, TransformKind, TransformSpec};
use crate::data::prepared::RewardStats;

/// How one reward model's transform maps raw units on one dataset.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    /// Raw units per transformed unit (local, at the mean, for sigmoid).
    pub raw_per_unit: f64,
    /// Estimated sd of the transformed rewards.
    pub transformed_sd: f64,
    /// Raw interval mapped to [0, r_max], when the transform has one.
    pub raw_interval: Option<(f64, f64)>,
}

/// The scale of `t` on raw scores with statistics `s`.
pub fn scale(t: &TransformSpec, s: &RewardStats) -> Scale {
    let linear = |lo: f64, hi: f64| Scale {
        raw_per_unit: (hi - lo) / t.r_max,
        transformed_sd: s.sd * t.r_max / (hi - lo),
        raw_interval: Some((lo, hi)),
    };
    match t.kind {
        TransformKind::Clip => linear(t.lo.unwrap_or(0.0), t.hi.unwrap_or(1.0)),
        TransformKind::Minmax => linear(s.min, s.max),
        TransformKind::Zscore => {
            let (lo, hi) = (t.lo.unwrap_or(-3.0), t.hi.unwrap_or(3.0));
            linear(s.mean + lo * s.sd, s.mean + hi * s.sd)
        }
        TransformKind::Standardize => Scale {
            raw_per_unit: s.sd,
            transformed_sd: 1.0,
            raw_interval: None,
        },
        TransformKind::None => Scale {
            raw_per_unit: 1.0,
            transformed_sd: s.sd,
            raw_interval: None,
        },
        TransformKind::Sigmoid => {
            let p = 1.0 / (1.0 + (-s.mean).exp());
            let slope = t.r_max * p * (1.0 - p);
            Scale {
                raw_per_unit: 1.0 / slope,
                transformed_sd: s.sd * slope,
                raw_interval: None,
            }
        }
    }
}

/// Every σ the experiment uses on reward model `rm` (total σ; an explicit
/// PrivITP split gives σ_X and σ_Z; FSRC's only on its reward models), and
/// every β.
fn sigmas_and_betas(
    a: &AlgorithmsSpec,
    fsrc: Option<&super::FsrcSpec>,
    rm: &str,
) -> (Vec<f64>, Vec<f64>) {
    let mut sig = Vec::new();
    let mut beta = Vec::new();
    if let Some(s) = &a.privbon {
        sig.extend(&s.sigma);
    }
    if let Some(s) = &a.privbon_gauss {
        sig.extend(&s.sigma);
    }
    if let Some(i) = &a.itp {
        beta.extend(&i.beta);
    }
    if let Some(p) = &a.privitp {
        match (&p.split, &p.sigma) {
            (SplitSpec::Explicit { sigma_x, sigma_z }, _) => sig.extend([*sigma_x, *sigma_z]),
            (_, Some(s)) => sig.extend(s),
            _ => {}
        }
        beta.extend(&p.beta);
    }
    if let Some(f) = fsrc
        && f.reward_models
            .as_ref()
            .is_none_or(|r| r.iter().any(|x| x == rm))
    {
        sig.extend(f.sigma_pairs().iter().flat_map(|&(x, z)| {
            if f.split == SplitSpec::Half {
                vec![x + z]
            } else {
                vec![x, z]
            }
        }));
        beta.push(f.beta);
    }
    let tidy = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    };
    (tidy(sig), tidy(beta))
}

/// A number for a message: up to 4 significant digits, no trailing zeros.
pub fn num(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (3 - x.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{x:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn list(v: &[f64], k: f64) -> String {
    v.iter().map(|&x| num(x * k)).collect::<Vec<_>>().join(", ")
}

/// The plan's unit lines and the warnings, one (dataset, reward model) each.
#[derive(Clone, Debug, Default)]
pub struct UnitsPlan {
    pub lines: Vec<String>,
    pub warnings: Vec<String>,
}

/// σ more than this many transformed sds: the noise swamps the scores.
pub const SIGMA_TOO_LARGE: f64 = 10.0;
/// σ under this fraction of a transformed sd: the noise does nothing.
pub const SIGMA_TOO_SMALL: f64 = 0.01;
/// β more than this many transformed sds: ITP accepts almost anything.
pub const BETA_TOO_LARGE: f64 = 10.0;
/// A transformed sd under this fraction of r_max: the transform flattens the scores.
pub const FLAT: f64 = 1e-3;

/// What σ, β and Δ_r mean in raw units for every (dataset, reward model).
pub fn units_plan(exp: &Experiment) -> UnitsPlan {
    let mut plan = UnitsPlan::default();
    for ds in &exp.datasets {
        for rm in &exp.reward_models {
            let (sigmas, betas) =
                sigmas_and_betas(&exp.config.algorithms, exp.config.fsrc.as_ref(), &rm.name);
            let Some(stats) = ds.manifest.rewards.get(&rm.name) else {
                continue;
            };
            let t = &rm.transform;
            let sc = scale(t, stats);
            let k = sc.raw_per_unit;
            let kind = t.kind.name();
            let map = match (t.kind, sc.raw_interval) {
                (TransformKind::Sigmoid, _) => format!(
                    "r_max·logistic(raw) → [0, {}]; near the raw mean {} one unit ≈ {} raw",
                    num(t.r_max),
                    num(stats.mean),
                    num(k)
                ),
                (TransformKind::Standardize, _) => format!(
                    "(raw − {})/{} unclipped (data-dependent); one unit = {} raw",
                    num(stats.mean),
                    num(stats.sd),
                    num(k)
                ),
                (TransformKind::None, _) => format!(
                    "raw used as is on [0, r_max = {}]; one unit = one raw unit",
                    num(t.r_max)
                ),
                (_, Some((lo, hi))) => format!(
                    "raw [{}, {}] → [0, r_max = {}]{}; one unit = {} raw",
                    num(lo),
                    num(hi),
                    num(t.r_max),
                    if t.kind.data_dependent() {
                        " (bounds from this dataset: data-dependent)"
                    } else {
                        ""
                    },
                    num(k)
                ),
                (_, None) => String::new(),
            };
            let mut line = format!(
                "dataset `{}`, reward model `{}`: {kind} {map}",
                ds.name, rm.name
            );
            if !sigmas.is_empty() {
                line += &format!("; σ = {} = {} raw", list(&sigmas, 1.0), list(&sigmas, k));
            }
            if !betas.is_empty() {
                line += &format!("; β = {} = {} raw", list(&betas, 1.0), list(&betas, k));
            }
            line += &format!(
                "; Δ_r = {} = {} raw (raw scores: sd {}, 0.1–99.9% [{}, {}])",
                num(rm.privacy.delta_r),
                num(rm.privacy.delta_r * k),
                num(stats.sd),
                num(stats.q001),
                num(stats.q999)
            );
            plan.lines.push(line);

            let what = format!("dataset `{}`, reward model `{}`", ds.name, rm.name);
            let sd = sc.transformed_sd;
            if sd < FLAT * t.r_max {
                plan.warnings.push(format!(
                    "{what}: the transformed rewards barely vary (sd ≈ {} on [0, {}]); check the transform against the raw scores (sd {}, 0.1–99.9% [{}, {}]; `privalign describe {}`)",
                    num(sd),
                    num(t.r_max),
                    num(stats.sd),
                    num(stats.q001),
                    num(stats.q999),
                    ds.dir.display()
                ));
                continue;
            }
            for &s in &sigmas {
                if s > SIGMA_TOO_LARGE * sd {
                    plan.warnings.push(format!(
                        "{what}: σ = {} is {}× the transformed rewards' sd ({}): at this noise the private algorithms are close to random choice (fine if intended; if σ = {} was meant in raw units, write σ = {})",
                        num(s),
                        num(s / sd),
                        num(sd),
                        num(s),
                        num(s / k)
                    ));
                } else if s < SIGMA_TOO_SMALL * sd {
                    plan.warnings.push(format!(
                        "{what}: σ = {} is under {}% of the transformed rewards' sd ({}): the noise changes almost nothing and ε = 2Δ_r/σ = {} is large",
                        num(s),
                        num(100.0 * SIGMA_TOO_SMALL),
                        num(sd),
                        num(2.0 * rm.privacy.delta_r / s)
                    ));
                }
            }
            for &b in &betas {
                if b > BETA_TOO_LARGE * sd {
                    plan.warnings.push(format!(
                        "{what}: β = {} is {}× the transformed rewards' sd ({}): ITP accepts almost any candidate and stays near the base policy",
                        num(b),
                        num(b / sd),
                        num(sd)
                    ));
                }
            }
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats() -> RewardStats {
        RewardStats {
            count: 100,
            min: -4.0,
            max: 6.0,
            mean: 1.0,
            sd: 2.0,
            q001: -3.0,
            q999: 5.0,
        }
    }

    fn spec(kind: TransformKind, lo: Option<f64>, hi: Option<f64>, r_max: f64) -> TransformSpec {
        TransformSpec {
            kind,
            lo,
            hi,
            r_max,
        }
    }

    #[test]
    fn raw_units_per_transformed_unit() {
        let s = stats();
        let c = scale(&spec(TransformKind::Clip, Some(-3.0), Some(5.0), 2.0), &s);
        assert_eq!((c.raw_per_unit, c.transformed_sd), (4.0, 0.5));
        let m = scale(&spec(TransformKind::Minmax, None, None, 1.0), &s);
        assert_eq!((m.raw_per_unit, m.raw_interval), (10.0, Some((-4.0, 6.0))));
        // zscore with r_max = hi − lo: one transformed unit is one raw sd.
        let z = scale(&spec(TransformKind::Zscore, None, None, 6.0), &s);
        assert_eq!(z.raw_per_unit, s.sd);
        assert_eq!(z.raw_interval, Some((-5.0, 7.0)));
        assert!((z.transformed_sd - 1.0).abs() < 1e-15);
        let n = scale(&spec(TransformKind::None, None, None, 1.0), &s);
        assert_eq!((n.raw_per_unit, n.transformed_sd), (1.0, 2.0));
        // Sigmoid: the derivative of r_max·logistic at the mean, by a central difference.
        let g = scale(&spec(TransformKind::Sigmoid, None, None, 3.0), &s);
        let f = |x: f64| 3.0 / (1.0 + (-x).exp());
        let h = 1e-6;
        let slope = (f(1.0 + h) - f(1.0 - h)) / (2.0 * h);
        assert!((1.0 / g.raw_per_unit - slope).abs() < 1e-8);
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(num(0.25), "0.25");
        assert_eq!(num(13.0), "13");
        assert_eq!(num(0.123456), "0.1235");
        assert_eq!(num(12345.6), "12346");
        assert_eq!(num(-0.07), "-0.07");
    }
}
