//! `fsrc.parquet`: one row per FSRC run (dataset, reward model, σ, seed) of
//! paper `alg:privitp_fsrc`, with basic composition's count beside it.

use anyhow::Result;
use polars::prelude::*;

pub const FSRC_FILE: &str = "fsrc.parquet";

/// One FSRC run (one seed): what `sweep::fsrc` computes, defined with its
/// file format.
#[derive(Clone, Debug, PartialEq)]
pub struct FsrcRun {
    pub queries: usize,
    /// ⌊ε_total/ε_max⌋.
    pub basic_queries: usize,
    pub eps_max: f64,
    pub eps_spent: f64,
    pub mean_halting_time: f64,
    /// Mean r* of the released responses.
    pub accuracy: f64,
    /// Largest single-query ex-post cost observed (must not exceed ε_max).
    pub max_query_eps: f64,
}

/// One FSRC run with its setting.
#[derive(Clone, Debug, PartialEq)]
pub struct FsrcRow {
    pub dataset: String,
    pub reward_model: String,
    pub sigma: f64,
    pub beta: f64,
    pub n: usize,
    pub eps_total: f64,
    pub seed: usize,
    pub run: FsrcRun,
}

pub fn fsrc_frame(rows: &[FsrcRow]) -> Result<DataFrame> {
    let s = |g: &dyn Fn(&FsrcRow) -> &str| rows.iter().map(g).collect::<Vec<_>>();
    let f = |g: &dyn Fn(&FsrcRow) -> f64| rows.iter().map(g).collect::<Vec<_>>();
    let i = |g: &dyn Fn(&FsrcRow) -> usize| rows.iter().map(|r| g(r) as i64).collect::<Vec<_>>();
    Ok(DataFrame::new_infer_height(vec![
        Column::new("dataset".into(), s(&|r| &r.dataset)),
        Column::new("reward_model".into(), s(&|r| &r.reward_model)),
        Column::new("sigma".into(), f(&|r| r.sigma)),
        Column::new("beta".into(), f(&|r| r.beta)),
        Column::new("n".into(), i(&|r| r.n)),
        Column::new("eps_total".into(), f(&|r| r.eps_total)),
        Column::new("seed".into(), i(&|r| r.seed)),
        Column::new("queries".into(), i(&|r| r.run.queries)),
        Column::new("basic_queries".into(), i(&|r| r.run.basic_queries)),
        Column::new("eps_max".into(), f(&|r| r.run.eps_max)),
        Column::new("eps_spent".into(), f(&|r| r.run.eps_spent)),
        Column::new("mean_halting_time".into(), f(&|r| r.run.mean_halting_time)),
        Column::new("accuracy".into(), f(&|r| r.run.accuracy)),
        Column::new("max_query_eps".into(), f(&|r| r.run.max_query_eps)),
    ])?)
}

/// Read an `fsrc.parquet` back into rows.
pub fn read_fsrc(path: &std::path::Path) -> Result<Vec<FsrcRow>> {
    use super::parquet_io::{f64_column, str_column, usize_column};
    let df = super::parquet_io::read_frame(path)?;
    let s = |c: &str| str_column(&df, c);
    let f = |c: &str| -> Result<Vec<f64>> {
        Ok(f64_column(&df, c)?
            .into_iter()
            .map(|v| v.unwrap_or(f64::NAN))
            .collect())
    };
    let i = |c: &str| usize_column(&df, c);
    let (ds, rm) = (s("dataset")?, s("reward_model")?);
    let (sigma, beta, eps_total) = (f("sigma")?, f("beta")?, f("eps_total")?);
    let (n, seed, q, bq) = (i("n")?, i("seed")?, i("queries")?, i("basic_queries")?);
    let (em, es, mh, acc, mq) = (
        f("eps_max")?,
        f("eps_spent")?,
        f("mean_halting_time")?,
        f("accuracy")?,
        f("max_query_eps")?,
    );
    Ok((0..df.height())
        .map(|k| FsrcRow {
            dataset: ds[k].clone(),
            reward_model: rm[k].clone(),
            sigma: sigma[k],
            beta: beta[k],
            n: n[k],
            eps_total: eps_total[k],
            seed: seed[k],
            run: FsrcRun {
                queries: q[k],
                basic_queries: bq[k],
                eps_max: em[k],
                eps_spent: es[k],
                mean_halting_time: mh[k],
                accuracy: acc[k],
                max_query_eps: mq[k],
            },
        })
        .collect())
}
