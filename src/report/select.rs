//! Choosing the cells a table or figure shows (design §11).
//!
//! A results directory may hold several n, σ or β per algorithm (a sweep).
//! A table or figure shows one: the one a [`CellSelection`] names (PrivBoN
//! and PrivITP share σ, ITP and PrivITP share β, as in the paper), or the
//! only one there is; otherwise it is an error that lists the values present.
//! Tables and plots choose through this one module, so they agree.

use anyhow::Result;

use super::tables::display;
use crate::bail_input;
use crate::results::read::{ResultsSet, SummaryRecord};
use crate::select::algorithm::AlgorithmKind;
use crate::select::algorithm::names::PRIVITP;

/// Which n, σ and β to show (`None`: the only one, or the largest n).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CellSelection {
    pub n: Option<usize>,
    pub sigma: Option<f64>,
    pub beta: Option<f64>,
}

/// Whether an algorithm (by result name) has a σ / β parameter.
pub(crate) fn uses_sigma(alg: &str) -> bool {
    AlgorithmKind::from_name(alg).is_some_and(AlgorithmKind::is_private)
}

pub(crate) fn uses_beta(alg: &str) -> bool {
    AlgorithmKind::from_name(alg).is_some_and(AlgorithmKind::has_beta)
}

pub(crate) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

pub(crate) fn distinct(v: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    for x in v {
        if !out.iter().any(|&y| close(x, y)) {
            out.push(x);
        }
    }
    out.sort_by(f64::total_cmp);
    out
}

pub(crate) fn list(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The selected records: for every algorithm present, one (σ, β) setting.
pub(crate) struct Selection<'a> {
    pub records: Vec<&'a SummaryRecord>,
    /// (algorithm, σ, β) chosen.
    pub chosen: Vec<(String, Option<f64>, Option<f64>)>,
}

pub(crate) fn select<'a>(set: &'a ResultsSet, o: &CellSelection) -> Result<Selection<'a>> {
    let mut records = Vec::new();
    let mut chosen = Vec::new();
    for alg in AlgorithmKind::ALL.map(AlgorithmKind::name) {
        let rows: Vec<&SummaryRecord> = set.summary().filter(|r| r.algorithm == alg).collect();
        if rows.is_empty() {
            continue;
        }
        let pick = |name: &str,
                    flag: &str,
                    want: Option<f64>,
                    vals: Vec<f64>|
         -> Result<Option<f64>> {
            match (want, vals.len()) {
                (_, 0) => Ok(None),
                (Some(w), _) => {
                    if vals.iter().any(|&v| close(v, w)) {
                        Ok(Some(w))
                    } else {
                        bail_input!(
                            "{}: no {alg} cells with {name} = {w}; the results have {name} = {}",
                            set.names(),
                            list(&vals)
                        )
                    }
                }
                (None, 1) => Ok(Some(vals[0])),
                (None, _) => bail_input!(
                    "{}: {alg} has several settings ({name} = {}); choose one with {flag} (or `{}` in the config's reports entry)",
                    set.names(),
                    list(&vals),
                    flag.trim_start_matches('-')
                ),
            }
        };
        let sigma = if uses_sigma(alg) {
            pick(
                "σ",
                "--sigma",
                o.sigma,
                distinct(rows.iter().filter_map(|r| r.sigma)),
            )?
        } else {
            None
        };
        let beta = if uses_beta(alg) {
            pick(
                "β",
                "--beta",
                o.beta,
                distinct(rows.iter().filter_map(|r| r.beta)),
            )?
        } else {
            None
        };
        let same = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(x), Some(y)) => close(x, y),
            (None, None) => true,
            _ => false,
        };
        records.extend(
            rows.into_iter()
                .filter(|r| same(r.sigma, sigma) && same(r.beta, beta)),
        );
        chosen.push((alg.to_string(), sigma, beta));
    }
    if records.is_empty() {
        bail_input!("{}: the summary has no rows", set.names());
    }
    Ok(Selection { records, chosen })
}

/// The distinct items of `v` in order of first appearance.
pub(crate) fn ordered<T: PartialEq>(v: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// Records of `alg` at n for a (dataset, RM), optionally at one β.
pub(crate) fn at<'a>(
    set: &'a ResultsSet,
    alg: &str,
    n: usize,
    key: &(String, String),
    beta: Option<f64>,
) -> Vec<&'a SummaryRecord> {
    set.summary()
        .filter(|r| {
            r.algorithm == alg
                && r.n == n
                && r.dataset == key.0
                && r.reward_model == key.1
                && beta.is_none_or(|b| r.beta.is_some_and(|x| close(x, b)))
        })
        .collect()
}

pub(crate) fn largest_n(set: &ResultsSet, alg: &str) -> Option<usize> {
    set.summary()
        .filter(|r| r.algorithm == alg)
        .map(|r| r.n)
        .max()
}

pub(crate) fn need_n(set: &ResultsSet, alg: &str, n: Option<usize>) -> Result<usize> {
    let grid: Vec<usize> = {
        let mut g: Vec<usize> = set
            .summary()
            .filter(|r| r.algorithm == alg)
            .map(|r| r.n)
            .collect();
        g.sort_unstable();
        g.dedup();
        g
    };
    if grid.is_empty() {
        bail_input!(
            "{}: no {} cells; add algorithms.{alg} to the config",
            set.names(),
            display(alg)
        );
    }
    let n = n.or(largest_n(set, alg)).unwrap_or(1);
    if !grid.contains(&n) {
        bail_input!(
            "no {} cells for n = {n} in {}; the sweep's n grid is {}",
            display(alg),
            set.names(),
            grid.iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(n)
}

pub(crate) fn pick_beta(set: &ResultsSet, beta: Option<f64>) -> Result<Option<f64>> {
    let betas = distinct(
        set.summary()
            .filter(|r| r.algorithm == PRIVITP)
            .filter_map(|r| r.beta),
    );
    match (beta, betas.len()) {
        (_, 0) => Ok(None),
        (Some(b), _) => Ok(Some(b)),
        (None, 1) => Ok(Some(betas[0])),
        (None, _) => bail_input!(
            "{}: privitp has several settings (β = {}); choose one with --beta (or `beta` in the config's reports entry)",
            set.names(),
            betas
                .iter()
                .map(|b| b.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
