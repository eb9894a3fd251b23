//! The paper's tables from results files only (design §11): lift
//! (`tab:rm_dataset_sweep*`), win rate (`tab:alpaca_eval`), generation cost
//! (`tab:wall_clock`), privacy budget (`tab:budgets`) and FSRC.
//! Which setting of each algorithm a table shows is chosen in
//! [`super::select`], shared with the figures.

use anyhow::Result;
use std::collections::BTreeSet;

use super::budget::budget_table_per_sigma;
use super::format::{Cell, ColumnSpec, Table, latex_escape};
use super::fsrc::fsrc_table;
pub(crate) use super::select::{CellSelection, Selection, close, distinct, ordered, select};
use crate::bail_input;
use crate::config::TableKind;
use crate::privacy::accountant::PrivacyParams;
use crate::privacy::budget::BudgetParams;
use crate::results::read::{ResultsSet, SummaryRecord};
use crate::results::summary::MeanSe;
use crate::select::algorithm::AlgorithmKind;
use crate::select::algorithm::names::{ITP, PRIVBON, PRIVITP};

/// What to put in a table.
#[derive(Clone, Debug)]
pub struct TableOptions {
    pub kind: TableKind,
    /// n of the lift/generation/budget tables (default: the largest n).
    /// n, σ and β of the cells shown; n of the lift/generation/budget tables
    /// defaults to the largest n.
    pub select: CellSelection,
    /// Bold the best value per column (per dataset group).
    pub bold_best: bool,
}

/// The reader's name of a result row's algorithm ([`AlgorithmKind::label`]).
pub(crate) fn display(alg: &str) -> &str {
    match AlgorithmKind::from_name(alg) {
        Some(k) => k.label(),
        None => alg,
    }
}

/// The n to report: the requested one (which every algorithm must have) or
/// the largest n all have.
pub(crate) fn choose_n(set: &ResultsSet, sel: &Selection, n: Option<usize>) -> Result<usize> {
    let grid: BTreeSet<usize> = sel.records.iter().map(|r| r.n).collect();
    let grid_text = grid
        .iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let n = match n {
        Some(n) => n,
        None => *grid.iter().next_back().unwrap_or(&1),
    };
    for (alg, _, _) in &sel.chosen {
        if !sel.records.iter().any(|r| &r.algorithm == alg && r.n == n) {
            bail_input!(
                "no {} cells for n = {n} in {}; the sweep's n grid is {grid_text}",
                display(alg),
                set.names()
            );
        }
    }
    Ok(n)
}

pub(crate) fn settings_text(sel: &Selection) -> String {
    let sig = sel.chosen.iter().find_map(|c| c.1);
    let beta = sel.chosen.iter().find_map(|c| c.2);
    let mut parts = Vec::new();
    if let Some(s) = sig {
        parts.push(format!(
            "$\\sigma = {s}$ (PrivITP: $\\sigma_X = \\sigma_Z = \\sigma/2$)"
        ));
    }
    if let Some(b) = beta {
        parts.push(format!("$\\beta = {b}$"));
    }
    parts.join(", ")
}

/// Replicates and estimator of every directory (distinct values joined by
/// "/", so a caption never states one directory's settings for all).
fn run_text(set: &ResultsSet) -> String {
    let reps = ordered(
        set.dirs
            .iter()
            .map(|d| d.manifest.config.replicates.to_string()),
    );
    let est = ordered(set.dirs.iter().map(|d| match d.manifest.config.estimator {
        crate::config::EstimatorSpec::Conditional => "exact conditional",
        crate::config::EstimatorSpec::Sampled => "sampled",
    }));
    format!(
        "{} bootstrap replicates, {} estimator",
        reps.join("/"),
        est.join("/")
    )
}

fn ms(m: MeanSe, scale: f64) -> Cell {
    match m.mean {
        Some(x) => Cell::MeanSe(x * scale, m.se.map(|s| s * scale)),
        None => Cell::Empty,
    }
}

/// Bold the largest mean per column within each row group.
fn bold_best(t: &mut Table, groups: &[(usize, usize)], first_value_col: usize) {
    for &(a, b) in groups {
        for j in first_value_col..t.columns.len() {
            let best = (a..b)
                .filter_map(|i| match t.rows[i][j] {
                    Cell::MeanSe(m, _) | Cell::Num(m) => Some((i, m)),
                    _ => None,
                })
                .max_by(|x, y| x.1.total_cmp(&y.1));
            if let Some((i, _)) = best {
                t.bold.push((i, j));
            }
        }
    }
}

/// The lift table: dataset × algorithm rows (ITP last, set apart as the
/// non-private skyline), reward-model columns, lift in points at n.
pub fn lift_table(set: &ResultsSet, o: &TableOptions) -> Result<Table> {
    let sel = select(set, &o.select)?;
    let n = choose_n(set, &sel, o.select.n)?;
    let datasets = ordered(sel.records.iter().map(|r| r.dataset.as_str()));
    let rms = ordered(sel.records.iter().map(|r| r.reward_model.as_str()));
    let mut columns = vec![
        ColumnSpec::new("dataset", "dataset", "\\textbf{Dataset}"),
        ColumnSpec::new("algorithm", "algorithm", "\\textbf{Algorithm}"),
    ];
    for rm in &rms {
        columns.push(ColumnSpec::new(
            *rm,
            *rm,
            format!("\\textbf{{{}}}", latex_escape(rm)),
        ));
    }
    let mut rows = Vec::new();
    let (mut midrules, mut cmidrules, mut groups) = (Vec::new(), Vec::new(), Vec::new());
    let mut prompts = BTreeSet::new();
    for (di, ds) in datasets.iter().enumerate() {
        if di > 0 {
            midrules.push(rows.len());
        }
        let start = rows.len();
        for (k, (alg, _, _)) in sel.chosen.iter().enumerate() {
            if alg == ITP && k > 0 {
                cmidrules.push(rows.len());
            }
            let mut row = vec![
                Cell::Text(if rows.len() == start {
                    ds.to_string()
                } else {
                    String::new()
                }),
                Cell::Text(display(alg).to_string()),
            ];
            for rm in &rms {
                let r = sel.records.iter().find(|r| {
                    &r.algorithm == alg && &r.dataset == ds && &r.reward_model == rm && r.n == n
                });
                if let Some(r) = r {
                    prompts.insert(r.prompts);
                }
                row.push(r.map_or(Cell::Empty, |r| ms(r.stat("lift"), 1.0)));
            }
            rows.push(row);
        }
        groups.push((start, rows.len()));
    }
    let prompts_text = prompts
        .iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join("/");
    let mut t = Table::new(
        columns,
        rows,
        format!(
            "Percentage lift in accuracy over the base policy at $n = {n}$. Mean $\\pm$ standard error over {prompts_text} prompts; {}; {}. ITP is the non-private skyline.",
            run_text(set),
            settings_text(&sel)
        ),
        "tab:lift".into(),
        2,
    );
    t.midrules = midrules;
    t.cmidrules = cmidrules;
    if o.bold_best {
        bold_best(&mut t, &groups, 2);
    }
    Ok(t)
}

/// The win-rate table: (reward model, n) rows, algorithm columns, gold win
/// rate (%) against a fresh base-policy draw.
pub fn winrate_table(set: &ResultsSet, o: &TableOptions) -> Result<Table> {
    let sel = select(set, &o.select)?;
    let datasets = ordered(sel.records.iter().map(|r| r.dataset.as_str()));
    let rms = ordered(sel.records.iter().map(|r| r.reward_model.as_str()));
    let ns: BTreeSet<usize> = match o.select.n {
        Some(n) => [choose_n(set, &sel, Some(n))?].into(),
        None => sel.records.iter().map(|r| r.n).collect(),
    };
    let mut columns = vec![
        ColumnSpec::new("reward_model", "reward model", "\\textbf{RM}"),
        ColumnSpec::new("n", "n", "\\textbf{n}"),
    ];
    for (alg, _, _) in &sel.chosen {
        columns.push(ColumnSpec::new(
            alg.clone(),
            display(alg),
            format!("\\textbf{{{}}}", latex_escape(display(alg))),
        ));
    }
    let (mut rows, mut midrules, mut groups) = (Vec::new(), Vec::new(), Vec::new());
    for ds in &datasets {
        for rm in &rms {
            if !rows.is_empty() {
                midrules.push(rows.len());
            }
            let start = rows.len();
            let label = if datasets.len() > 1 {
                format!("{ds}/{rm}")
            } else {
                rm.to_string()
            };
            for &n in &ns {
                let mut row = vec![
                    Cell::Text(if rows.len() == start {
                        label.clone()
                    } else {
                        String::new()
                    }),
                    Cell::Text(n.to_string()),
                ];
                for (alg, _, _) in &sel.chosen {
                    let r = sel.records.iter().find(|r| {
                        &r.algorithm == alg && &r.dataset == ds && &r.reward_model == rm && r.n == n
                    });
                    row.push(r.map_or(Cell::Empty, |r| ms(r.stat("win_rate_gold"), 100.0)));
                }
                rows.push(row);
            }
            groups.push((start, rows.len()));
        }
    }
    let mut t = Table::new(
        columns,
        rows,
        format!(
            "Gold win rate (\\%) against a fresh base-policy response (ties count half). Mean $\\pm$ standard error over prompts; {}; {}.",
            run_text(set),
            settings_text(&sel)
        ),
        "tab:winrate".into(),
        2,
    );
    t.midrules = midrules;
    if o.bold_best {
        // Best algorithm per row: transpose the usual rule.
        for i in 0..t.rows.len() {
            let best = (2..t.columns.len())
                .filter_map(|j| match t.rows[i][j] {
                    Cell::MeanSe(m, _) => Some((j, m)),
                    _ => None,
                })
                .max_by(|x, y| x.1.total_cmp(&y.1));
            if let Some((j, _)) = best {
                t.bold.push((i, j));
            }
        }
    }
    Ok(t)
}

/// The generation-cost table: expected responses generated per query by
/// PrivBoN (n) and PrivITP (n + E[min(t, n)] with a lazy Phase 2) per reward
/// model, PrivITP's overhead in %, and — when the dataset records generation
/// times — expected seconds per query, E[#generated] × mean seconds per
/// response (Wald's identity, taking generation time independent of reward).
pub fn generation_table(set: &ResultsSet, o: &TableOptions) -> Result<Table> {
    let sel = select(set, &o.select)?;
    let n = choose_n(set, &sel, o.select.n)?;
    for need in [PRIVBON, PRIVITP] {
        if !sel.chosen.iter().any(|c| c.0 == need) {
            bail_input!(
                "{}: the generation table compares PrivBoN and PrivITP, but there are no {} cells; add algorithms.{need} to the config",
                set.names(),
                display(need)
            );
        }
    }
    let keys: Vec<(String, String)> = ordered(
        sel.records
            .iter()
            .map(|r| (r.dataset.clone(), r.reward_model.clone())),
    );
    let multi = keys.iter().map(|k| &k.0).collect::<BTreeSet<_>>().len() > 1;
    let mut columns = vec![ColumnSpec::new("row", "", "")];
    for (ds, rm) in &keys {
        let h = if multi {
            format!("{ds}/{rm}")
        } else {
            rm.clone()
        };
        let latex = format!("\\textbf{{{}}}", latex_escape(&h));
        columns.push(ColumnSpec::new(h.clone(), h, latex));
    }
    let gen_secs = |ds: &str| {
        set.dirs
            .iter()
            .flat_map(|d| d.manifest.datasets.iter())
            .find(|d| d.name == ds)
            .and_then(|d| d.gen_seconds_mean)
    };
    let value = |alg: &str, ds: &str, rm: &str| -> Option<f64> {
        sel.records
            .iter()
            .find(|r| r.algorithm == alg && r.dataset == ds && r.reward_model == rm && r.n == n)
            .and_then(|r| r.stat("generations").mean)
    };
    let line = |label: &str, f: &dyn Fn(&str, &str) -> Option<f64>| {
        let mut row = vec![Cell::Text(label.to_string())];
        for (ds, rm) in &keys {
            row.push(f(ds, rm).map_or(Cell::Empty, Cell::Num));
        }
        row
    };
    let mut rows = vec![
        line(
            &format!("{} responses", AlgorithmKind::PrivBon.label()),
            &|ds, rm| value(PRIVBON, ds, rm),
        ),
        line(
            &format!("{} responses", AlgorithmKind::PrivItp.label()),
            &|ds, rm| value(PRIVITP, ds, rm),
        ),
    ];
    let has_secs = keys.iter().any(|(ds, _)| gen_secs(ds).is_some());
    if has_secs {
        rows.push(line(
            &format!("{} seconds", AlgorithmKind::PrivBon.label()),
            &|ds, rm| Some(value(PRIVBON, ds, rm)? * gen_secs(ds)?),
        ));
        rows.push(line(
            &format!("{} seconds", AlgorithmKind::PrivItp.label()),
            &|ds, rm| Some(value(PRIVITP, ds, rm)? * gen_secs(ds)?),
        ));
    }
    let overhead_row = rows.len();
    rows.push(line("Overhead (%)", &|ds, rm| {
        Some(100.0 * (value(PRIVITP, ds, rm)? / value(PRIVBON, ds, rm)? - 1.0))
    }));
    let mut t = Table::new(
        columns,
        rows,
        format!(
            "Generation cost per query at $n = {n}$: expected responses generated (PrivBoN: $n$; PrivITP: $n + \\mathbb{{E}}[\\min(t, n)]$ with a lazy Phase 2){}; {}; {}.",
            if has_secs {
                ", and expected seconds per query from the dataset's mean generation time per response"
            } else {
                ""
            },
            run_text(set),
            settings_text(&sel)
        ),
        "tab:generation".into(),
        2,
    );
    t.midrules = vec![overhead_row];
    Ok(t)
}

/// The budget table from a sweep: the first reward model's privacy
/// parameters (as recorded in the manifest), one row per PrivITP σ with ε_2^post
/// at that σ's own mean halting time at n (averaged over β when several).
pub fn budget_from_results(set: &ResultsSet, o: &TableOptions) -> Result<Table> {
    if set.dirs.len() > 1 {
        bail_input!(
            "{}: the budget table is built from one sweep's privacy parameters and halting times; give one results directory (one table per directory)",
            set.names()
        );
    }
    let dir = &set.dirs[0];
    let cfg = &dir.manifest.config;
    let Some(privitp) = &cfg.algorithms.privitp else {
        bail_input!(
            "{}: the budget table needs PrivITP cells (for the mean halting times); add algorithms.privitp to the config",
            dir.dir.display()
        );
    };
    let (rm_name, rm) = match cfg.reward_models.iter().next() {
        Some(x) => x,
        None => bail_input!("{}: the manifest names no reward model", dir.dir.display()),
    };
    let recs: Vec<&SummaryRecord> = dir
        .summary
        .iter()
        .filter(|r| r.algorithm == PRIVITP && &r.reward_model == rm_name)
        .collect();
    let grid: BTreeSet<usize> = recs.iter().map(|r| r.n).collect();
    let n = o.select.n.unwrap_or(*grid.iter().next_back().unwrap_or(&1));
    let sigmas = distinct(recs.iter().filter(|r| r.n == n).filter_map(|r| r.sigma));
    if sigmas.is_empty() {
        bail_input!(
            "no PrivITP cells for n = {n} in {}; the sweep's n grid is {}",
            dir.dir.display(),
            grid.iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let rows: Vec<(f64, f64)> = sigmas
        .iter()
        .map(|&s| {
            let t: Vec<f64> = recs
                .iter()
                .filter(|r| r.n == n && r.sigma.is_some_and(|x| close(x, s)))
                .filter_map(|r| r.stat("halting_time").mean)
                .collect();
            (s, t.iter().sum::<f64>() / t.len().max(1) as f64)
        })
        .collect();
    let r_max = rm.transform.r_max;
    let p = BudgetParams {
        privacy: PrivacyParams {
            r_max,
            delta_r: rm.delta_r.unwrap_or(r_max),
            delta: cfg.privacy.delta,
            paper_eps1: cfg.privacy.paper_eps1,
        },
        n,
        l: privitp.l,
        clamp: privitp.clamp.map_or((0.0, r_max), |[a, b]| (a, b)),
    };
    let mut t = budget_table_per_sigma(
        &p,
        &rows,
        &format!(
            "mean halting time of each $\\sigma$ in the sweep ({})",
            latex_escape(rm_name)
        ),
    )?;
    t.columns
        .push(ColumnSpec::new("halting_time", "mean t", "$\\bar t$"));
    for (row, (_, tm)) in t.rows.iter_mut().zip(&rows) {
        row.push(Cell::Num(*tm));
    }
    Ok(t)
}

/// Any table kind.
pub fn table(set: &ResultsSet, o: &TableOptions) -> Result<Table> {
    match o.kind {
        TableKind::Lift => lift_table(set, o),
        TableKind::Winrate => winrate_table(set, o),
        TableKind::Generation => generation_table(set, o),
        TableKind::Budget => budget_from_results(set, o),
        TableKind::Fsrc => {
            let rows: Vec<_> = set.fsrc().cloned().collect();
            if rows.is_empty() {
                bail_input!(
                    "{}: no fsrc.parquet; the experiment needs an `fsrc:` section (or run `privalign fsrc CONFIG`)",
                    set.names()
                );
            }
            Ok(fsrc_table(&rows))
        }
    }
}
