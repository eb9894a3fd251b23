//! Rendering `privalign budget`'s numbers ([`crate::privacy::budget`]): the
//! paper's budget table (`tab:budgets`) and a single accountant point.

use anyhow::Result;

use super::format::{Cell, ColumnSpec, Table};
use crate::privacy::budget::{BudgetParams, budget_rows};
use crate::select::algorithm::AlgorithmKind;

const PRIVBON: AlgorithmKind = AlgorithmKind::PrivBon;
const PRIVITP: AlgorithmKind = AlgorithmKind::PrivItp;

/// The budget table: one row per total σ (PrivITP split σ_X = σ_Z = σ/2),
/// ε_2^post at one mean halting time for every σ.
pub fn budget_table(p: &BudgetParams, sigmas: &[f64], t_mean: f64) -> Result<Table> {
    let rows: Vec<(f64, f64)> = sigmas.iter().map(|&s| (s, t_mean)).collect();
    budget_table_per_sigma(p, &rows, &format!("mean halting time {t_mean}"))
}

/// The budget table with each σ's own mean halting time `(σ, t̄)`, e.g. read
/// from a sweep's summary; `t_note` says where the t̄ come from (caption).
pub fn budget_table_per_sigma(
    p: &BudgetParams,
    rows: &[(f64, f64)],
    t_note: &str,
) -> Result<Table> {
    let rows = budget_rows(p, rows)?
        .into_iter()
        .map(|r| {
            vec![
                Cell::Num(r.sigma),
                Cell::Num(r.eps_privbon),
                Cell::Num(r.eps1),
                Cell::Num(r.eps1_classical),
                Cell::Text(if r.eps1_classical < 1.0 {
                    "yes".into()
                } else {
                    "no".into()
                }),
                Cell::Num(r.eps2_post),
                Cell::Num(r.eps1 + r.eps2_post),
            ]
        })
        .collect();
    Ok(Table::new(
        vec![
            ColumnSpec::new("sigma", "σ", "$\\sigma$"),
            ColumnSpec::new(
                format!("eps_{}", PRIVBON.name()),
                format!("ε {}", PRIVBON.label()),
                format!("$\\varepsilon$ \\textbf{{({})}}", PRIVBON.label()),
            ),
            ColumnSpec::new("eps1", "ε_1", "$\\varepsilon_1$"),
            ColumnSpec::new(
                "eps1_classical",
                "ε_1 classical",
                "$\\varepsilon_1^{\\mathrm{cl}}$",
            ),
            ColumnSpec::new("classical_valid", "classical valid", "valid"),
            ColumnSpec::new("eps2_post", "ε_2^post", "$\\varepsilon_2^{\\mathrm{post}}$"),
            ColumnSpec::new(
                format!("eps_{}", PRIVITP.name()),
                "ε_1+ε_2^post",
                format!(
                    "$\\varepsilon_1+\\varepsilon_2^{{\\mathrm{{post}}}}$ \\textbf{{({})}}",
                    PRIVITP.label()
                ),
            ),
        ],
        rows,
        format!(
            "Privacy budgets ($\\varepsilon$) across noise levels $\\sigma$ ({}: $\\sigma_X=\\sigma_Z=\\sigma/2$, $L={}$), $\\Delta_r={}$, $R_{{\\max}}={}$, $\\delta={}$, $n={}$. $\\varepsilon_1$ is the {} Gaussian-mechanism $\\varepsilon$; $\\varepsilon_2^{{\\mathrm{{post}}}}$ is evaluated at the {} and the worst $\\tilde\\lambda\\in[{},{}]$.",
            PRIVITP.label(),
            p.l,
            p.privacy.delta_r,
            p.privacy.r_max,
            p.privacy.delta,
            p.n,
            if p.privacy.paper_eps1 {
                "classical (paper)"
            } else {
                "exact analytic"
            },
            t_note,
            p.clamp.0,
            p.clamp.1
        ),
        "tab:budgets".into(),
        2,
    ))
}

/// A single-point evaluation: (column id, header, value) triples.
pub type Point = Vec<(&'static str, &'static str, f64)>;

/// Render a single point as a one-row table.
pub fn point_table(point: Point, caption: String) -> Table {
    Table::new(
        point
            .iter()
            .map(|(id, h, _)| ColumnSpec::new(*id, *h, *h))
            .collect(),
        vec![point.iter().map(|p| Cell::Num(p.2)).collect()],
        caption,
        "tab:budget-point".into(),
        6,
    )
}
