//! `table --kind audit` and `plot --kind audit`: claimed vs exact vs empirical
//! ε against σ, from the `audit.json` of results directories. Only the
//! per-setting rows are shown (PrivITP's is the maximum over its per-t rows;
//! the per-t rows are in the JSON and in `privalign audit`'s own output).

use anyhow::Result;
use plotters::style::RGBColor;
use std::path::{Path, PathBuf};

use super::AuditRecord;
use super::command::{AUDIT_FILE, records_table};
use crate::bail_input;
use crate::report::figure::{Figure, LinePanel, Marker, Panel, Series, Style, XScale};
use crate::report::format::Table;
use crate::select::algorithm::AlgorithmKind;

/// The per-setting records of every directory, in file order.
pub fn read(dirs: &[PathBuf]) -> Result<Vec<AuditRecord>> {
    let mut out = Vec::new();
    for d in dirs {
        let path = d.join(AUDIT_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            crate::error::input_error(format!(
                "{}: cannot read ({e}); run `privalign audit --config experiments/audit.yaml --out {}` first",
                path.display(),
                d.display()
            ))
        })?;
        let recs: Vec<AuditRecord> = serde_json::from_str(&text).map_err(|e| {
            crate::error::input_error(format!(
                "{}: not an audit file ({e}); regenerate it with `privalign audit`",
                path.display()
            ))
        })?;
        out.extend(recs.into_iter().filter(|r| r.t.is_none()));
    }
    if out.is_empty() {
        bail_input!("no audit records in {}", names(dirs));
    }
    Ok(out)
}

fn names(dirs: &[PathBuf]) -> String {
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The audit table.
pub fn table(dirs: &[PathBuf]) -> Result<Table> {
    let recs = read(dirs)?;
    let r = &recs[0];
    Ok(records_table(
        &recs,
        format!(
            "Privacy audit ({}): claimed $\\varepsilon$ (accountant), exact $\\varepsilon$ of the worst neighbouring pair, and the empirical lower bound at confidence {} from {} runs per input; $n={}$, $R_{{\\max}}={}$, $\\Delta_r={}$. {} rows are the maximum over halting times.",
            names(dirs),
            r.confidence,
            r.trials,
            r.n,
            r.r_max,
            r.delta_r,
            AlgorithmKind::PrivItp.label()
        ),
    ))
}

fn style(color: RGBColor, marker: Marker, dashed: bool) -> Style {
    Style {
        color,
        marker,
        dashed,
    }
}

/// The audit figure: one panel per mechanism, ε against σ.
pub fn plot(dirs: &[PathBuf], out: &Path) -> Result<PathBuf> {
    let recs = read(dirs)?;
    let mut mechs: Vec<String> = Vec::new();
    for r in &recs {
        if !mechs.contains(&r.mechanism) {
            mechs.push(r.mechanism.clone());
        }
    }
    let claimed = style(RGBColor(0, 0, 0), Marker::Circle, true);
    let exact = style(RGBColor(0, 114, 178), Marker::Square, false);
    let lb = style(RGBColor(213, 94, 0), Marker::Triangle, false);
    let panels: Vec<Panel> = mechs
        .iter()
        .map(|m| {
            let mut mine: Vec<&AuditRecord> = recs.iter().filter(|r| &r.mechanism == m).collect();
            mine.sort_by(|a, b| a.sigma.total_cmp(&b.sigma));
            let pts = |f: &dyn Fn(&AuditRecord) -> Option<f64>| -> Vec<(f64, f64, Option<f64>)> {
                mine.iter()
                    .filter_map(|r| f(r).map(|v| (r.sigma, v, None)))
                    .collect()
            };
            let mut series = vec![Series {
                label: "claimed ε (accountant)".into(),
                style: claimed,
                points: pts(&|r| Some(r.claimed_eps)),
            }];
            let ex = pts(&|r| r.exact_eps);
            if !ex.is_empty() {
                series.push(Series {
                    label: "exact ε of the worst pair".into(),
                    style: exact,
                    points: ex,
                });
            }
            series.push(Series {
                label: "empirical lower bound ε_LB".into(),
                style: lb,
                points: pts(&|r| Some(r.eps_lower_bound)),
            });
            Panel::Line(LinePanel {
                title: m.clone(),
                x_label: "total noise σ".into(),
                y_label: "ε".into(),
                x_scale: XScale::Swept,
                series,
                hlines: Vec::new(),
            })
        })
        .collect();
    let legend = vec![
        ("claimed ε (accountant)".to_string(), claimed),
        ("exact ε of the worst pair".to_string(), exact),
        ("empirical lower bound ε_LB".to_string(), lb),
    ];
    let r = &recs[0];
    let fig = Figure {
        title: format!(
            "Privacy audit: claimed vs exact vs empirical ε (n = {}, Δ_r = {}, {} runs per input, confidence {})",
            r.n, r.delta_r, r.trials, r.confidence
        ),
        columns: 2,
        panels,
        legend,
    };
    std::fs::create_dir_all(out)?;
    let stem = out.join("audit");
    fig.save(&stem)?;
    Ok(stem.with_extension("png"))
}
