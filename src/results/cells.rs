//! `cells.parquet` (design §10): one row per (dataset, reward model,
//! algorithm, parameters, n, prompt).
//!
//! A sweep produces its cells in chunks — one (dataset, reward model, n)
//! with every prompt and algorithm — which are also the unit `--resume`
//! reuses. Rows within a chunk are algorithm-major, then prompts in dataset
//! order; the file is the chunks in sweep order (dataset, reward model, n).

use anyhow::{Context, Result, bail};
use polars::prelude::*;

use super::parquet_io::{f64_column, str_column};
use crate::select::algorithm::Algorithm;
use crate::select::pool::Values;

/// Metrics of one algorithm on one (prompt, n), averaged over replicates:
/// what the engine computes and a cells row records (the engine re-exports
/// it; defined here so that results never imports the engine).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Metrics {
    pub values: Values,
    pub halting_time: Option<f64>,
    pub generations: f64,
    pub eps: Option<f64>,
}

pub const CELLS_FILE: &str = "cells.parquet";

/// The key columns every result file starts with.
pub mod col {
    pub const DATASET: &str = "dataset";
    pub const REWARD_MODEL: &str = "reward_model";
    pub const ALGORITHM: &str = "algorithm";
    pub const SIGMA: &str = "sigma";
    pub const SIGMA_X: &str = "sigma_x";
    pub const SIGMA_Z: &str = "sigma_z";
    pub const BETA: &str = "beta";
    pub const N: &str = "n";
    pub const PROMPT_ID: &str = "prompt_id";
    pub const REPLICATES: &str = "replicates";
    pub const BASE_ACCURACY: &str = "base_accuracy";
}

/// The per-prompt metrics of design §7, in file order.
pub const METRICS: [&str; 7] = [
    "accuracy",
    "proxy",
    "win_rate_gold",
    "win_rate_proxy",
    "halting_time",
    "generations",
    "eps",
];

/// σ_X and σ_Z of a PrivITP instance (null for the others).
pub fn sigma_split(a: &Algorithm) -> (Option<f64>, Option<f64>) {
    match a {
        Algorithm::PrivItp(p) => (Some(p.sigma_x), Some(p.sigma_z)),
        _ => (None, None),
    }
}

/// The value of metric `k` (index into [`METRICS`]).
pub fn metric(m: &Metrics, k: usize) -> Option<f64> {
    match k {
        0 => Some(m.values.gold),
        1 => Some(m.values.proxy),
        2 => Some(m.values.win_gold),
        3 => Some(m.values.win_proxy),
        4 => m.halting_time,
        5 => Some(m.generations),
        6 => m.eps,
        _ => unreachable!("seven metrics"),
    }
}

/// One (dataset, reward model, n) of a sweep: every prompt × algorithm.
#[derive(Clone, Debug, PartialEq)]
pub struct Chunk {
    pub dataset: String,
    pub reward_model: String,
    pub n: usize,
    pub replicates: usize,
    pub prompt_ids: Vec<String>,
    /// Per prompt: the pool mean of r*.
    pub base_accuracy: Vec<f64>,
    pub algorithms: Vec<Algorithm>,
    /// `metrics[prompt][algorithm]`.
    pub metrics: Vec<Vec<Metrics>>,
}

impl Chunk {
    pub fn rows(&self) -> usize {
        self.prompt_ids.len() * self.algorithms.len()
    }

    /// The chunk's rows as a frame with the cells.parquet schema.
    pub fn to_frame(&self) -> Result<DataFrame> {
        let mut columns = self.key_columns();
        for (k, name) in METRICS.iter().enumerate() {
            let v: Vec<Option<f64>> = (0..self.algorithms.len())
                .flat_map(|a| self.metrics.iter().map(move |pm| metric(&pm[a], k)))
                .collect();
            columns.push(Column::new((*name).into(), v));
        }
        Ok(DataFrame::new_infer_height(columns)?)
    }

    /// The key columns (everything but the metrics), which depend only on
    /// the config and the dataset.
    fn key_columns(&self) -> Vec<Column> {
        let rows = self.rows();
        let p = self.prompt_ids.len();
        let per_alg = |f: &dyn Fn(&Algorithm) -> Option<f64>| -> Vec<Option<f64>> {
            self.algorithms
                .iter()
                .flat_map(|a| std::iter::repeat_n(f(a), p))
                .collect()
        };
        vec![
            Column::new(col::DATASET.into(), vec![self.dataset.as_str(); rows]),
            Column::new(
                col::REWARD_MODEL.into(),
                vec![self.reward_model.as_str(); rows],
            ),
            Column::new(
                col::ALGORITHM.into(),
                self.algorithms
                    .iter()
                    .flat_map(|a| std::iter::repeat_n(a.name(), p))
                    .collect::<Vec<_>>(),
            ),
            Column::new(col::SIGMA.into(), per_alg(&|a| a.sigma())),
            Column::new(col::SIGMA_X.into(), per_alg(&|a| sigma_split(a).0)),
            Column::new(col::SIGMA_Z.into(), per_alg(&|a| sigma_split(a).1)),
            Column::new(col::BETA.into(), per_alg(&|a| a.beta())),
            Column::new(col::N.into(), vec![self.n as i64; rows]),
            Column::new(
                col::PROMPT_ID.into(),
                (0..self.algorithms.len())
                    .flat_map(|_| self.prompt_ids.iter().map(String::as_str))
                    .collect::<Vec<_>>(),
            ),
            Column::new(col::REPLICATES.into(), vec![self.replicates as i64; rows]),
            Column::new(
                col::BASE_ACCURACY.into(),
                (0..self.algorithms.len())
                    .flat_map(|_| self.base_accuracy.iter().copied())
                    .collect::<Vec<f64>>(),
            ),
        ]
    }

    /// Read back a chunk written by [`Chunk::to_frame`], checking that it is
    /// the chunk `expected` describes (same keys, prompts and algorithms);
    /// `expected.metrics` is ignored.
    pub fn from_frame(df: &DataFrame, expected: &Chunk) -> Result<Chunk> {
        let rows = expected.rows();
        if df.height() != rows {
            bail!("has {} rows, expected {rows}", df.height());
        }
        let p = expected.prompt_ids.len();
        let strs = |name: &str| str_column(df, name);
        let f64s = |name: &str| f64_column(df, name);
        let want = DataFrame::new_infer_height(expected.key_columns())?;
        for key in [
            col::DATASET,
            col::REWARD_MODEL,
            col::ALGORITHM,
            col::PROMPT_ID,
        ] {
            if strs(key)?
                != want
                    .column(key)?
                    .str()?
                    .iter()
                    .map(|s| s.unwrap_or_default().to_string())
                    .collect::<Vec<_>>()
            {
                bail!("column {key} does not match the config");
            }
        }
        for key in [
            col::SIGMA,
            col::SIGMA_X,
            col::SIGMA_Z,
            col::BETA,
            col::BASE_ACCURACY,
        ] {
            if f64s(key)? != f64_column(&want, key)? {
                bail!("column {key} does not match the config");
            }
        }
        let cols: Vec<Vec<Option<f64>>> = METRICS
            .iter()
            .map(|m| f64s(m).with_context(|| format!("column {m}")))
            .collect::<Result<_>>()?;
        let mut metrics = vec![vec![Metrics::default(); expected.algorithms.len()]; p];
        for (a, _) in expected.algorithms.iter().enumerate() {
            for (i, pm) in metrics.iter_mut().enumerate() {
                let r = a * p + i;
                let g = |k: usize| cols[k][r];
                pm[a] = Metrics {
                    values: Values {
                        gold: g(0).unwrap_or(f64::NAN),
                        proxy: g(1).unwrap_or(f64::NAN),
                        win_gold: g(2).unwrap_or(f64::NAN),
                        win_proxy: g(3).unwrap_or(f64::NAN),
                    },
                    halting_time: g(4),
                    generations: g(5).unwrap_or(f64::NAN),
                    eps: g(6),
                };
            }
        }
        Ok(Chunk {
            metrics,
            ..expected.clone()
        })
    }
}
