//! `reference.yaml` (design §12): reported numbers that must not move, each
//! located by keys in the result files, with a tolerance in absolute units or
//! in units of the number's reported standard error.

use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

use crate::config::TableKind;
use crate::report::format::Cell;
use crate::report::select::CellSelection;
use crate::report::select::close;
use crate::report::tables::{TableOptions, budget_from_results};
use crate::results::read::ResultsSet;
use crate::results::summary::mean_se;

pub const REFERENCE_FILE: &str = "reference.yaml";

/// Where a number comes from.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A `<stat>_mean` of summary.parquet (SE from `<stat>_se`).
    Summary,
    /// The mean over seeds of an fsrc.parquet column (SE across seeds).
    Fsrc,
    /// A column of the budget table built from the results.
    Budget,
}

/// How far a number may move: `{abs: 0.01}` or `{se: 1}` in the YAML.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
pub enum Tolerance {
    /// |value − reference| ≤ abs.
    Abs { abs: f64 },
    /// |value − reference| ≤ se · (the reference's SE).
    Se { se: f64 },
}

/// One reported number.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RefNumber {
    /// Human name, unique in the file; `check` reports by it.
    pub name: String,
    pub source: Source,
    #[serde(default)]
    pub dataset: Option<String>,
    #[serde(default)]
    pub reward_model: Option<String>,
    #[serde(default)]
    pub algorithm: Option<String>,
    #[serde(default)]
    pub sigma: Option<f64>,
    #[serde(default)]
    pub beta: Option<f64>,
    #[serde(default)]
    pub n: Option<usize>,
    /// Summary statistic (e.g. `lift`), fsrc column (e.g. `queries`) or
    /// budget column id (e.g. `eps1`).
    pub stat: String,
    pub value: f64,
    #[serde(default)]
    pub se: Option<f64>,
    pub tolerance: Tolerance,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    #[serde(default)]
    pub description: String,
    pub numbers: Vec<RefNumber>,
}

fn same(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => close(x, y),
        (None, None) => true,
        _ => false,
    }
}

fn eq_opt(want: &Option<String>, got: &str) -> bool {
    want.as_deref().is_none_or(|w| w == got)
}

/// Look a number up in the results: (value, SE), or `None` when the results
/// do not have it.
pub fn lookup(set: &ResultsSet, r: &RefNumber) -> Result<Option<(f64, Option<f64>)>> {
    Ok(match r.source {
        Source::Summary => set
            .summary()
            .find(|s| {
                eq_opt(&r.dataset, &s.dataset)
                    && eq_opt(&r.reward_model, &s.reward_model)
                    && eq_opt(&r.algorithm, &s.algorithm)
                    && same(r.sigma, s.sigma)
                    && same(r.beta, s.beta)
                    && r.n.is_none_or(|n| n == s.n)
            })
            .and_then(|s| {
                let m = s.stat(&r.stat);
                m.mean.map(|v| (v, m.se))
            }),
        Source::Fsrc => {
            let v: Vec<Option<f64>> = set
                .fsrc()
                .filter(|f| {
                    eq_opt(&r.dataset, &f.dataset)
                        && eq_opt(&r.reward_model, &f.reward_model)
                        && r.sigma.is_none_or(|s| close(s, f.sigma))
                })
                .map(|f| match r.stat.as_str() {
                    "queries" => Some(f.run.queries as f64),
                    "basic_queries" => Some(f.run.basic_queries as f64),
                    "eps_max" => Some(f.run.eps_max),
                    "eps_spent" => Some(f.run.eps_spent),
                    "mean_halting_time" => Some(f.run.mean_halting_time),
                    "accuracy" => Some(f.run.accuracy),
                    _ => None,
                })
                .collect();
            let m = mean_se(&v);
            m.mean.map(|x| (x, m.se))
        }
        Source::Budget => {
            let t = match budget_from_results(
                set,
                &TableOptions {
                    kind: TableKind::Budget,
                    select: CellSelection {
                        n: r.n,
                        ..CellSelection::default()
                    },
                    bold_best: false,
                },
            ) {
                Ok(t) => t,
                Err(_) => return Ok(None),
            };
            let col = t.columns.iter().position(|c| c.id == r.stat);
            let row = t
                .rows
                .iter()
                .find(|row| matches!(row[0], Cell::Num(s) if r.sigma.is_some_and(|x| close(x, s))));
            match (col, row) {
                (Some(j), Some(row)) => match row[j] {
                    Cell::Num(x) => Some((x, None)),
                    _ => None,
                },
                _ => None,
            }
        }
    })
}

/// One compared number.
#[derive(Clone, Debug)]
pub struct Comparison {
    pub name: String,
    pub reference: f64,
    pub value: Option<f64>,
    /// The allowed |difference| in absolute units.
    pub allowed: f64,
    pub tolerance: Tolerance,
    pub pass: bool,
}

/// Compare every reference number with the results.
pub fn compare(set: &ResultsSet, reference: &Reference) -> Result<Vec<Comparison>> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for r in &reference.numbers {
        if !seen.insert(r.name.clone()) {
            crate::bail_input!(
                "reference: the name `{}` appears twice; names must be unique",
                r.name
            );
        }
        let value = lookup(set, r)?.map(|v| v.0);
        let allowed = match r.tolerance {
            Tolerance::Abs { abs } => abs,
            Tolerance::Se { se } => se * r.se.unwrap_or(0.0),
        };
        let pass = value.is_some_and(|v| (v - r.value).abs() <= allowed);
        out.push(Comparison {
            name: r.name.clone(),
            reference: r.value,
            value,
            allowed,
            tolerance: r.tolerance,
            pass,
        });
    }
    Ok(out)
}
