//! Reward transforms (design §5): raw reward-model scores → r̂ ∈ [0, R_max].
//!
//! * `clip`: r̂ = R_max·(clamp(r, lo, hi) − lo)/(hi − lo), with lo, hi from the
//!   config (data-independent; what a private deployment needs).
//! * `minmax`: the same with lo, hi = the dataset's min and max of that reward
//!   model over all responses (data-dependent).
//! * `sigmoid`: r̂ = R_max/(1 + e^(−r)) (data-independent).
//! * `zscore`: z = (r − mean)/sd with the dataset's mean and population sd,
//!   then `clip` with lo, hi in sd units (default [−3, 3]) (data-dependent).
//! * `standardize`: r̂ = (r − mean)/sd, unclipped (the reference scripts';
//!   data-dependent; r̂ is not confined to [0, R_max]).
//! * `none`: r̂ = r; every score must already lie in [0, R_max].
//!
//! Statistics are over the whole dataset, never per prompt: a per-prompt
//! rescaling would change which response a prompt's selection prefers
//! relative to R_max and is not what the paper does.

use anyhow::Result;
use serde::Serialize;

use crate::config::{TransformKind, TransformSpec};
use crate::data::prepared::TransformStats;
use crate::error::input_error;

/// The transform as applied, with the bounds actually used (recorded in the
/// manifest; `data_dependent` flags privacy claims as conditional).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct AppliedTransform {
    pub kind: TransformKind,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    pub r_max: f64,
    pub data_dependent: bool,
    /// zscore: the statistics and the clip bounds in sd units.
    #[serde(skip)]
    pub mean: Option<f64>,
    #[serde(skip)]
    pub sd: Option<f64>,
    #[serde(skip)]
    pub z_lo: Option<f64>,
    #[serde(skip)]
    pub z_hi: Option<f64>,
}

fn linear(r: f64, lo: f64, hi: f64, r_max: f64) -> f64 {
    r_max * ((r.clamp(lo, hi) - lo) / (hi - lo))
}

/// Transform one reward model's raw scores (the whole column: its own
/// statistics). `what` names the dataset and reward model for errors;
/// `prompt_of(i)` names the prompt of response i.
pub fn apply(
    spec: &TransformSpec,
    raw: &[f32],
    what: &str,
    prompt_of: impl Fn(usize) -> String,
) -> Result<(Vec<f64>, AppliedTransform)> {
    if let Some(i) = raw.iter().position(|r| !r.is_finite()) {
        return Err(input_error(format!(
            "{what}: response {i} (prompt {}) has score {}; scores must be finite numbers — fix the raw file and re-run `privalign ingest`",
            prompt_of(i),
            raw[i]
        )));
    }
    let applied = prepare(spec, &TransformStats::of(raw), what)?;
    let out = applied.map(raw, 0, what, prompt_of)?;
    Ok((out, applied))
}

/// Fix a transform's bounds from whole-dataset statistics (data-dependent
/// kinds read them from dataset.yaml, so every window — and every shard —
/// transforms bit-exactly as the whole column would).
pub fn prepare(
    spec: &TransformSpec,
    stats: &TransformStats,
    what: &str,
) -> Result<AppliedTransform> {
    let mut applied = AppliedTransform {
        kind: spec.kind,
        lo: spec.lo,
        hi: spec.hi,
        r_max: spec.r_max,
        data_dependent: spec.kind.data_dependent(),
        mean: None,
        sd: None,
        z_lo: None,
        z_hi: None,
    };
    match spec.kind {
        TransformKind::Clip => {}
        TransformKind::Minmax => {
            let (lo, hi) = (stats.min, stats.max);
            if lo >= hi {
                return Err(input_error(format!(
                    "{what}: every score equals {lo}, so transform kind minmax has no range; use kind clip with fixed lo/hi"
                )));
            }
            applied.lo = Some(lo);
            applied.hi = Some(hi);
        }
        TransformKind::Zscore => {
            let (mean, sd) = (stats.mean, stats.sd);
            if sd.is_nan() || sd <= 0.0 {
                return Err(input_error(format!(
                    "{what}: every score equals {mean}, so transform kind zscore has no scale; use kind clip with fixed lo/hi"
                )));
            }
            let (lo, hi) = (spec.lo.unwrap_or(-3.0), spec.hi.unwrap_or(3.0));
            applied.lo = Some(mean + lo * sd);
            applied.hi = Some(mean + hi * sd);
            applied.mean = Some(mean);
            applied.sd = Some(sd);
            applied.z_lo = Some(lo);
            applied.z_hi = Some(hi);
        }
        TransformKind::Standardize => {
            let (mean, sd) = (stats.mean, stats.sd);
            if sd.is_nan() || sd <= 0.0 {
                return Err(input_error(format!(
                    "{what}: every score equals {mean}, so transform kind standardize has no scale; use kind clip with fixed lo/hi"
                )));
            }
            applied.mean = Some(mean);
            applied.sd = Some(sd);
        }
        TransformKind::Sigmoid | TransformKind::None => {}
    }
    Ok(applied)
}

impl AppliedTransform {
    /// r̂ of each raw score; `raw[i]` is response `first_row + i` of the
    /// dataset (for errors) and `prompt_of(i)` names its prompt.
    pub fn map(
        &self,
        raw: &[f32],
        first_row: usize,
        what: &str,
        prompt_of: impl Fn(usize) -> String,
    ) -> Result<Vec<f64>> {
        let r_max = self.r_max;
        // A non-finite score (a dataset written before ingest refused them, or
        // edited since) would make every lift NaN: name it instead.
        if let Some(i) = raw.iter().position(|r| !r.is_finite()) {
            return Err(input_error(format!(
                "{what}: response {} (prompt {}) has score {}; scores must be finite numbers — fix the raw file and re-run `privalign ingest`",
                first_row + i,
                prompt_of(i),
                raw[i]
            )));
        }
        Ok(match self.kind {
            TransformKind::Clip | TransformKind::Minmax => {
                let (lo, hi) = (self.lo.unwrap_or(0.0), self.hi.unwrap_or(1.0));
                raw.iter()
                    .map(|&r| linear(f64::from(r), lo, hi, r_max))
                    .collect()
            }
            TransformKind::Sigmoid => raw
                .iter()
                .map(|&r| r_max / (1.0 + (-f64::from(r)).exp()))
                .collect(),
            TransformKind::Zscore => {
                let (mean, sd) = (self.mean.unwrap_or(0.0), self.sd.unwrap_or(1.0));
                let (lo, hi) = (self.z_lo.unwrap_or(-3.0), self.z_hi.unwrap_or(3.0));
                raw.iter()
                    .map(|&r| linear((f64::from(r) - mean) / sd, lo, hi, r_max))
                    .collect()
            }
            TransformKind::Standardize => {
                let (mean, sd) = (self.mean.unwrap_or(0.0), self.sd.unwrap_or(1.0));
                raw.iter().map(|&r| (f64::from(r) - mean) / sd).collect()
            }
            TransformKind::None => {
                if let Some(i) = raw
                    .iter()
                    .position(|&r| !(0.0..=r_max).contains(&f64::from(r)))
                {
                    return Err(input_error(format!(
                        "{what}: response {i} (prompt {}) has score {} outside [0, r_max = {r_max}]; transform kind none needs scores in [0, r_max] — use kind clip with lo/hi, or minmax",
                        prompt_of(i),
                        raw[i]
                    )));
                }
                raw.iter().map(|&r| f64::from(r)).collect()
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: TransformKind, lo: Option<f64>, hi: Option<f64>) -> TransformSpec {
        TransformSpec {
            kind,
            lo,
            hi,
            r_max: 2.0,
        }
    }

    #[test]
    fn a_non_finite_score_is_named() {
        let raw = [0.1f32, f32::INFINITY, 0.3];
        let e = apply(
            &spec(TransformKind::Zscore, None, None),
            &raw,
            "ds/rm",
            |_| "p7".into(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("score inf") && e.contains("prompt p7"), "{e}");
    }

    #[test]
    fn maps_match_hand_values() {
        let raw = [-1.0f32, 0.0, 1.0, 3.0];
        let p = |_| String::new();
        let (c, _) = apply(
            &spec(TransformKind::Clip, Some(0.0), Some(2.0)),
            &raw,
            "x",
            p,
        )
        .unwrap();
        assert_eq!(c, vec![0.0, 0.0, 1.0, 2.0]);
        let (m, a) = apply(&spec(TransformKind::Minmax, None, None), &raw, "x", p).unwrap();
        assert_eq!(m, vec![0.0, 0.5, 1.0, 2.0]);
        assert_eq!(
            (a.lo, a.hi, a.data_dependent),
            (Some(-1.0), Some(3.0), true)
        );
        let (s, _) = apply(&spec(TransformKind::Sigmoid, None, None), &raw, "x", p).unwrap();
        assert!((s[1] - 1.0).abs() < 1e-15 && (s[2] - 2.0 / (1.0 + (-1f64).exp())).abs() < 1e-15);
        // z-scores of [-1, 0, 1, 3]: mean 0.75, population sd = sqrt(2.1875).
        let (z, _) = apply(&spec(TransformKind::Zscore, None, None), &raw, "x", p).unwrap();
        let sd = 2.1875f64.sqrt();
        for (zi, r) in z.iter().zip(raw) {
            let want = 2.0 * ((f64::from(r) - 0.75) / sd + 3.0) / 6.0;
            assert!((zi - want).abs() < 1e-12);
        }
    }

    #[test]
    fn none_rejects_out_of_range_naming_the_prompt() {
        let e = apply(
            &spec(TransformKind::None, None, None),
            &[0.5, 2.5],
            "demo/oasst",
            |i| format!("p{i}"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("demo/oasst: response 1 (prompt p1) has score 2.5"),
            "{e}"
        );
    }
}
