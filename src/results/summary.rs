//! `summary.parquet` (design §7, §10): per (dataset, reward model, algorithm,
//! parameters, n), the mean and standard error across prompts of every
//! per-prompt metric, the lift over the base policy, and the worst-case ε.
//!
//! SE = sample standard deviation (ddof = 1) / √P over the P prompts; with a
//! single prompt it is undefined and written as null. Lift is paired per
//! prompt: 100·(accuracy − base accuracy) for each prompt, then mean and SE of
//! those differences, in percentage points.

use anyhow::Result;
use polars::prelude::*;

use super::cells::{Chunk, METRICS, col, metric, sigma_split};
use crate::privacy::accountant::{
    PrivacyParams, privbon_gauss_eps, privbon_gumbel_eps, privitp_eps_max,
};
use crate::select::algorithm::Algorithm;

pub const SUMMARY_FILE: &str = "summary.parquet";

/// Mean and standard error of one metric across prompts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MeanSe {
    pub mean: Option<f64>,
    pub se: Option<f64>,
}

/// Mean and SE (ddof = 1) of `xs`; null when any value is null (the metric
/// does not apply) or the list is empty; SE null for a single value.
pub fn mean_se(xs: &[Option<f64>]) -> MeanSe {
    let Some(v) = xs.iter().copied().collect::<Option<Vec<f64>>>() else {
        return MeanSe::default();
    };
    if v.is_empty() {
        return MeanSe::default();
    }
    let p = v.len() as f64;
    let mean = v.iter().sum::<f64>() / p;
    let se = (v.len() > 1).then(|| {
        let ss: f64 = v.iter().map(|x| (x - mean).powi(2)).sum();
        (ss / (p - 1.0)).sqrt() / p.sqrt()
    });
    MeanSe {
        mean: Some(mean),
        se,
    }
}

/// The summary statistics in file order: base accuracy, the seven metrics,
/// then lift.
pub const STATS: [&str; 9] = [
    "base_accuracy",
    "accuracy",
    "proxy",
    "win_rate_gold",
    "win_rate_proxy",
    "halting_time",
    "generations",
    "eps",
    "lift",
];

/// One summary row.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryRow {
    pub dataset: String,
    pub reward_model: String,
    pub algorithm: Algorithm,
    pub n: usize,
    pub prompts: usize,
    pub replicates: usize,
    /// In [`STATS`] order.
    pub stats: [MeanSe; 9],
    pub eps_max: Option<f64>,
    /// The reward transform's kind, and whether it was computed from the data
    /// (then every privacy figure is conditional on it, design §5).
    pub transform: String,
    pub privacy_conditional: bool,
}

/// Worst-case per-query ε of a private algorithm (design §8): PrivBoN's
/// 2Δ_r/σ, Gaussian PrivBoN's Report-Noisy-Max bound, PrivITP's ε_max over
/// outcomes and λ̃ in the clamp (null without a clamp: then only the realised
/// ex-post cost in `eps` is defined).
pub fn eps_max(a: &Algorithm, pr: &PrivacyParams, n: usize) -> Option<f64> {
    match a {
        Algorithm::PrivBon { sigma } => Some(privbon_gumbel_eps(pr.delta_r, *sigma)),
        Algorithm::PrivBonGauss { sigma } => {
            Some(privbon_gauss_eps(pr.r_max, pr.delta_r, *sigma, n))
        }
        Algorithm::PrivItp(p) => p.clamp.map(|clamp| {
            privitp_eps_max(
                pr.phase1_eps(p.sigma_x),
                clamp,
                p.sigma_z,
                pr.r_max,
                pr.delta_r,
                p.l,
                n,
            )
        }),
        Algorithm::Bon | Algorithm::Itp { .. } => None,
    }
}

/// Summarise one chunk: one row per algorithm.
pub fn summarise(
    chunk: &Chunk,
    privacy: &PrivacyParams,
    transform: &str,
    data_dependent: bool,
) -> Vec<SummaryRow> {
    let base: Vec<Option<f64>> = chunk.base_accuracy.iter().map(|&b| Some(b)).collect();
    chunk
        .algorithms
        .iter()
        .enumerate()
        .map(|(a, alg)| {
            let mut stats = [MeanSe::default(); 9];
            stats[0] = mean_se(&base);
            for k in 0..METRICS.len() {
                let xs: Vec<Option<f64>> =
                    chunk.metrics.iter().map(|pm| metric(&pm[a], k)).collect();
                stats[k + 1] = mean_se(&xs);
            }
            let lift: Vec<Option<f64>> = chunk
                .metrics
                .iter()
                .zip(&chunk.base_accuracy)
                .map(|(pm, b)| Some(100.0 * (pm[a].values.gold - b)))
                .collect();
            stats[8] = mean_se(&lift);
            let private = !matches!(alg, Algorithm::Bon | Algorithm::Itp { .. });
            SummaryRow {
                dataset: chunk.dataset.clone(),
                reward_model: chunk.reward_model.clone(),
                algorithm: *alg,
                n: chunk.n,
                prompts: chunk.prompt_ids.len(),
                replicates: chunk.replicates,
                stats,
                eps_max: eps_max(alg, privacy, chunk.n),
                transform: transform.to_string(),
                privacy_conditional: private && data_dependent,
            }
        })
        .collect()
}

/// The summary rows as a frame with the summary.parquet schema.
pub fn summary_frame(rows: &[SummaryRow]) -> Result<DataFrame> {
    let f = |g: &dyn Fn(&SummaryRow) -> Option<f64>| -> Vec<Option<f64>> {
        rows.iter().map(g).collect()
    };
    let mut columns = vec![
        Column::new(
            col::DATASET.into(),
            rows.iter().map(|r| r.dataset.as_str()).collect::<Vec<_>>(),
        ),
        Column::new(
            col::REWARD_MODEL.into(),
            rows.iter()
                .map(|r| r.reward_model.as_str())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            col::ALGORITHM.into(),
            rows.iter().map(|r| r.algorithm.name()).collect::<Vec<_>>(),
        ),
        Column::new(col::SIGMA.into(), f(&|r| r.algorithm.sigma())),
        Column::new(col::SIGMA_X.into(), f(&|r| sigma_split(&r.algorithm).0)),
        Column::new(col::SIGMA_Z.into(), f(&|r| sigma_split(&r.algorithm).1)),
        Column::new(col::BETA.into(), f(&|r| r.algorithm.beta())),
        Column::new(
            col::N.into(),
            rows.iter().map(|r| r.n as i64).collect::<Vec<_>>(),
        ),
        Column::new(
            "prompts".into(),
            rows.iter().map(|r| r.prompts as i64).collect::<Vec<_>>(),
        ),
        Column::new(
            col::REPLICATES.into(),
            rows.iter().map(|r| r.replicates as i64).collect::<Vec<_>>(),
        ),
    ];
    for (k, name) in STATS.iter().enumerate() {
        columns.push(Column::new(
            format!("{name}_mean").into(),
            f(&|r| r.stats[k].mean),
        ));
        columns.push(Column::new(
            format!("{name}_se").into(),
            f(&|r| r.stats[k].se),
        ));
    }
    columns.push(Column::new("eps_max".into(), f(&|r| r.eps_max)));
    columns.push(Column::new(
        "transform".into(),
        rows.iter()
            .map(|r| r.transform.as_str())
            .collect::<Vec<_>>(),
    ));
    columns.push(Column::new(
        "privacy_conditional".into(),
        rows.iter()
            .map(|r| r.privacy_conditional)
            .collect::<Vec<_>>(),
    ));
    Ok(DataFrame::new_infer_height(columns)?)
}

/// Fail (exit 1, not an input error: the inputs passed validation) when any
/// summary statistic is NaN or infinite, naming the cell. Exit 0 means every
/// number in the results is a number; a non-finite one that slipped past
/// the up-front parameter checks is a bug to report, never a table entry.
pub fn ensure_finite(rows: &[SummaryRow]) -> Result<()> {
    for r in rows {
        let named = STATS
            .iter()
            .enumerate()
            .flat_map(|(k, s)| {
                [
                    (format!("{s}_mean"), r.stats[k].mean),
                    (format!("{s}_se"), r.stats[k].se),
                ]
            })
            .chain([("eps_max".to_string(), r.eps_max)]);
        for (name, v) in named {
            if let Some(x) = v.filter(|x| !x.is_finite()) {
                anyhow::bail!(
                    "internal error: {name} = {x} in the cell (dataset {}, reward model {}, algorithm {}{}{}, n = {}); no results were written — please report this with the config",
                    r.dataset,
                    r.reward_model,
                    r.algorithm.name(),
                    r.algorithm
                        .sigma()
                        .map(|s| format!(" σ = {s}"))
                        .unwrap_or_default(),
                    r.algorithm
                        .beta()
                        .map(|b| format!(" β = {b}"))
                        .unwrap_or_default(),
                    r.n
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_se_uses_ddof_one() {
        // [1, 2, 3, 6]: mean 3, sample var (4 + 1 + 0 + 9)/3 = 14/3, se = sqrt(14/3)/2.
        let m = mean_se(&[Some(1.0), Some(2.0), Some(3.0), Some(6.0)]);
        assert_eq!(m.mean, Some(3.0));
        assert!((m.se.unwrap() - (14.0f64 / 3.0).sqrt() / 2.0).abs() < 1e-15);
        assert_eq!(mean_se(&[Some(2.0)]).se, None);
        assert_eq!(mean_se(&[Some(2.0), None]), MeanSe::default());
    }

    #[test]
    fn a_nan_statistic_fails_naming_the_cell() {
        let mut row = SummaryRow {
            dataset: "d".into(),
            reward_model: "rm".into(),
            algorithm: Algorithm::PrivBon { sigma: 0.5 },
            n: 8,
            prompts: 2,
            replicates: 1,
            stats: [MeanSe {
                mean: Some(1.0),
                se: None,
            }; 9],
            eps_max: Some(4.0),
            transform: "none".into(),
            privacy_conditional: false,
        };
        ensure_finite(std::slice::from_ref(&row)).unwrap();
        row.stats[8].mean = Some(f64::NAN);
        let e = ensure_finite(&[row]).unwrap_err().to_string();
        assert!(
            e.contains("lift_mean = NaN") && e.contains("reward model rm") && e.contains("n = 8"),
            "{e}"
        );
    }
}
