//! File names of the reports `reproduce` writes (`tables/<stem>.tex|.md`,
//! `plots/<stem>.png|.svg`).
//!
//! A kind that appears once keeps its plain name (`lift.tex`). When a config
//! asks for several reports of one kind (e.g. lift tables at two n), each is
//! named by the settings it gives — `lift-n64.tex`, `lift-n4096-sigma0.25.tex`
//! — so every report gets its own file and none overwrites another. Two
//! entries that would get the same name (identical settings) are refused
//! before the sweep ([`check_unique`]).

use anyhow::Result;

use super::{PlotKind, ReportsSpec, TableKind};
use crate::bail_input;

/// The plain stem of a table kind.
pub fn table_stem(kind: TableKind) -> &'static str {
    match kind {
        TableKind::Lift => "lift",
        TableKind::Winrate => "winrate",
        TableKind::Budget => "budget",
        TableKind::Fsrc => "fsrc",
        TableKind::Generation => "generation",
    }
}

/// The plain stem of a plot kind.
pub fn plot_stem(kind: PlotKind) -> &'static str {
    match kind {
        PlotKind::Scaling => "scaling",
        PlotKind::Sigma => "sigma",
        PlotKind::Beta => "beta",
        PlotKind::PrivacyUtility => "privacy-utility",
        PlotKind::Fsrc => "fsrc",
    }
}

/// A report's plain stem and its settings `(stem, n, σ, β)`.
pub type ReportKey<'a> = (&'a str, Option<usize>, Option<f64>, Option<f64>);

/// One stem per item, in order.
pub fn stems(items: &[ReportKey]) -> Vec<String> {
    items
        .iter()
        .map(|&(base, n, sigma, beta)| {
            if items.iter().filter(|i| i.0 == base).count() == 1 {
                return base.to_string();
            }
            let mut s = base.to_string();
            if let Some(n) = n {
                s += &format!("-n{n}");
            }
            if let Some(x) = sigma {
                s += &format!("-sigma{x}");
            }
            if let Some(x) = beta {
                s += &format!("-beta{x}");
            }
            s
        })
        .collect()
}

/// The stems of the config's tables.
pub fn table_stems(r: &ReportsSpec) -> Vec<String> {
    let items: Vec<_> = r
        .tables
        .iter()
        .map(|t| (table_stem(t.kind), t.n, t.sigma, t.beta))
        .collect();
    stems(&items)
}

/// The stems of the config's plots.
pub fn plot_stems(r: &ReportsSpec) -> Vec<String> {
    let items: Vec<_> = r
        .plots
        .iter()
        .map(|p| (plot_stem(p.kind), p.n, p.sigma, p.beta))
        .collect();
    stems(&items)
}

/// Refuse two reports that would write the same file.
pub fn check_unique(r: &ReportsSpec) -> Result<()> {
    for (what, names) in [("tables", table_stems(r)), ("plots", plot_stems(r))] {
        for (i, a) in names.iter().enumerate() {
            if let Some(j) = names[..i].iter().position(|b| b == a) {
                bail_input!(
                    "reports.{what}[{i}]: the same kind and settings as reports.{what}[{j}], so it would overwrite its file {a}; remove one, or give them different n/sigma/beta"
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
    fn one_of_a_kind_keeps_its_name_several_are_told_apart() {
        assert_eq!(
            stems(&[
                ("lift", Some(64), None, None),
                ("winrate", None, None, None)
            ]),
            ["lift", "winrate"]
        );
        assert_eq!(
            stems(&[
                ("lift", Some(64), Some(0.25), None),
                ("lift", Some(4096), Some(0.25), Some(0.05)),
                ("budget", Some(16), None, None),
            ]),
            [
                "lift-n64-sigma0.25",
                "lift-n4096-sigma0.25-beta0.05",
                "budget"
            ]
        );
    }
}
