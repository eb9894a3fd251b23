//! The FSRC table (paper `fig:fsrc_comp` as numbers): per (dataset, reward
//! model, σ), queries answered under FSRC vs basic composition ⌊ε_total/ε_max⌋,
//! mean ± SE over seeds, with the ratio, mean halting time and accuracy.

use crate::report::format::{Cell, ColumnSpec, Table};
use crate::results::fsrc::FsrcRow;
use crate::results::summary::mean_se;
use crate::select::algorithm::AlgorithmKind;

fn col(id: &str, header: &str, latex: &str) -> ColumnSpec {
    ColumnSpec::new(id, header, latex)
}

fn ms(xs: &[f64]) -> Cell {
    let v: Vec<Option<f64>> = xs.iter().map(|&x| Some(x)).collect();
    let m = mean_se(&v);
    match m.mean {
        Some(mean) => Cell::MeanSe(mean, m.se),
        None => Cell::Empty,
    }
}

/// Group FSRC runs by (dataset, reward model, σ) in order of appearance.
pub fn fsrc_table(rows: &[FsrcRow]) -> Table {
    let mut groups: Vec<(&FsrcRow, Vec<&FsrcRow>)> = Vec::new();
    for r in rows {
        match groups.iter_mut().find(|(k, _)| {
            k.dataset == r.dataset && k.reward_model == r.reward_model && k.sigma == r.sigma
        }) {
            Some((_, g)) => g.push(r),
            None => groups.push((r, vec![r])),
        }
    }
    let out_rows = groups
        .iter()
        .map(|(k, g)| {
            let v = |f: &dyn Fn(&FsrcRow) -> f64| g.iter().map(|r| f(r)).collect::<Vec<f64>>();
            let q = v(&|r| r.run.queries as f64);
            let b = v(&|r| r.run.basic_queries as f64);
            let ratio = v(&|r| r.run.queries as f64 / r.run.basic_queries.max(1) as f64);
            vec![
                Cell::Text(k.dataset.clone()),
                Cell::Text(k.reward_model.clone()),
                Cell::Num(k.sigma),
                Cell::Num(k.run.eps_max),
                ms(&q),
                ms(&b),
                ms(&ratio),
                ms(&v(&|r| r.run.mean_halting_time)),
                ms(&v(&|r| r.run.accuracy)),
                ms(&v(&|r| r.run.eps_spent)),
            ]
        })
        .collect();
    // Every distinct setting, joined by "/": runs from several results
    // directories may differ, and a caption must not state the first one's.
    let all = |f: &dyn Fn(&FsrcRow) -> String| {
        crate::report::tables::ordered(rows.iter().map(f)).join("/")
    };
    let caption = if rows.is_empty() {
        "FSRC composition: no runs.".into()
    } else {
        format!(
            "FSRC composition of {} vs basic composition: $\\varepsilon_{{\\mathrm{{total}}}} = {}$, $n = {}$, $\\beta = {}$, mean $\\pm$ SE over {} seeds.",
            AlgorithmKind::PrivItp.label(),
            all(&|r| r.eps_total.to_string()),
            all(&|r| r.n.to_string()),
            all(&|r| r.beta.to_string()),
            crate::report::tables::ordered(groups.iter().map(|g| g.1.len().to_string())).join("/")
        )
    };
    Table::new(
        vec![
            col("dataset", "dataset", "Dataset"),
            col("reward_model", "reward model", "RM"),
            col("sigma", "σ", "$\\sigma$"),
            col("eps_max", "ε_max", "$\\varepsilon_{\\max}$"),
            col("queries", "FSRC queries", "FSRC queries"),
            col("basic_queries", "basic queries", "Basic queries"),
            col("ratio", "FSRC/basic", "FSRC/basic"),
            col("halting_time", "mean t", "Mean $t$"),
            col("accuracy", "accuracy", "Accuracy"),
            col("eps_spent", "ε spent", "$\\varepsilon$ spent"),
        ],
        out_rows,
        caption,
        "tab:fsrc".into(),
        2,
    )
}
