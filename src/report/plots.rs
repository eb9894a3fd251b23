//! The paper's figures from results files (design §11): scaling in n
//! (`fig:main_all` top row, `fig:gsm8k_comparison`), σ ablation
//! (`fig:sigma_ablation`), β ablation (`fig:beta_ablation`), ITP vs PrivITP
//! across σ (`fig:privacy-vs-utility`) and FSRC bars (`fig:fsrc_comp`).
//! Each is written as `<kind>.png` and `<kind>.svg`.

use anyhow::Result;
use plotters::style::RGBColor;
use std::path::{Path, PathBuf};

use super::figure::{BarPanel, Figure, HLine, LinePanel, Marker, Panel, Series, Style, XScale};
use super::select::{CellSelection, at, close, distinct, need_n, ordered, pick_beta, select};
use super::tables::{display, settings_text};
use crate::bail_input;
use crate::config::PlotKind;
use crate::results::read::{ResultsSet, SummaryRecord};
use crate::results::summary::mean_se;
use crate::select::algorithm::AlgorithmKind;
use crate::select::algorithm::names::{BON, ITP, PRIVBON, PRIVBON_GAUSS, PRIVITP};

/// What to plot.
#[derive(Clone, Debug)]
pub struct PlotOptions {
    pub kind: PlotKind,
    /// n, σ and β of the cells shown.
    pub select: CellSelection,
}

const BLACK: RGBColor = RGBColor(0, 0, 0);
const GREY: RGBColor = RGBColor(120, 120, 120);
/// Okabe–Ito colours for extra lines of one algorithm.
const EXTRA: [RGBColor; 5] = [
    RGBColor(0, 114, 178),
    RGBColor(86, 180, 233),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
];
const MARKERS: [Marker; 5] = [
    Marker::Square,
    Marker::Circle,
    Marker::Diamond,
    Marker::Triangle,
    Marker::Cross,
];

/// One fixed look per algorithm, so figures agree with each other.
pub fn style(alg: &str) -> Style {
    let (color, marker, dashed) = match alg {
        BON => (BLACK, Marker::Circle, false),
        PRIVBON => (RGBColor(213, 94, 0), Marker::Triangle, false),
        PRIVBON_GAUSS => (RGBColor(230, 159, 0), Marker::Diamond, false),
        PRIVITP => (RGBColor(0, 114, 178), Marker::Square, false),
        ITP => (RGBColor(0, 158, 115), Marker::Cross, true),
        _ => (GREY, Marker::Circle, false),
    };
    Style {
        color,
        marker,
        dashed,
    }
}

fn ms(r: &SummaryRecord, stat: &str, scale: f64) -> Option<(f64, Option<f64>)> {
    let m = r.stat(stat);
    Some((m.mean? * scale, m.se.map(|s| s * scale)))
}

fn panels_keys(records: &[&SummaryRecord]) -> Vec<(String, String)> {
    ordered(
        records
            .iter()
            .map(|r| (r.dataset.clone(), r.reward_model.clone())),
    )
}

fn legend_of(panels: &[Panel]) -> Vec<(String, Style)> {
    let mut out: Vec<(String, Style)> = Vec::new();
    let mut add = |label: &str, s: Style| {
        if !out.iter().any(|(l, _)| l == label) {
            out.push((label.to_string(), s));
        }
    };
    for p in panels {
        match p {
            Panel::Line(l) => {
                for s in &l.series {
                    add(&s.label, s.style);
                }
                for h in &l.hlines {
                    if let Some(label) = &h.label {
                        add(
                            label,
                            Style {
                                color: h.color,
                                marker: Marker::None,
                                dashed: true,
                            },
                        );
                    }
                }
            }
            Panel::Bar(b) => {
                for (label, s, _) in &b.bars {
                    add(label, *s);
                }
            }
        }
    }
    out
}

fn base_line() -> HLine {
    HLine {
        label: Some("base policy".into()),
        value: 0.0,
        color: GREY,
    }
}

const LIFT: &str = "accuracy lift (percentage points)";

fn scaling(set: &ResultsSet, o: &PlotOptions) -> Result<Figure> {
    let sel = select(set, &o.select)?;
    let mut panels = Vec::new();
    for (ds, rm) in panels_keys(&sel.records) {
        for (stat, scale, y_label, what) in [
            ("lift", 1.0, LIFT, "accuracy lift"),
            (
                "proxy",
                1.0,
                "expected proxy reward (transformed units)",
                "proxy reward",
            ),
        ] {
            let series = sel
                .chosen
                .iter()
                .map(|(alg, _, _)| {
                    let mut pts: Vec<(f64, f64, Option<f64>)> = sel
                        .records
                        .iter()
                        .filter(|r| &r.algorithm == alg && r.dataset == ds && r.reward_model == rm)
                        .filter_map(|r| ms(r, stat, scale).map(|(m, s)| (r.n as f64, m, s)))
                        .collect();
                    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                    Series {
                        label: display(alg).to_string(),
                        style: style(alg),
                        points: pts,
                    }
                })
                .collect();
            panels.push(Panel::Line(LinePanel {
                title: format!("{ds} · {rm}: {what}"),
                x_label: "n (candidates, log scale)".into(),
                y_label: y_label.into(),
                x_scale: XScale::Log2,
                series,
                hlines: if stat == "lift" {
                    vec![base_line()]
                } else {
                    vec![]
                },
            }));
        }
    }
    Ok(figure(
        format!(
            "Scaling in n: lift and proxy reward ({})",
            plain(&settings_text(&sel))
        ),
        2,
        panels,
    ))
}

/// LaTeX-free text for titles.
fn plain(s: &str) -> String {
    s.replace("$\\sigma = ", "σ = ")
        .replace("$\\beta = ", "β = ")
        .replace("(PrivITP: $\\sigma_X = \\sigma_Z = \\sigma/2$)", "")
        .replace('$', "")
        .replace(" ,", ",")
        .trim()
        .to_string()
}

fn figure(title: String, columns: usize, panels: Vec<Panel>) -> Figure {
    let legend = legend_of(&panels);
    Figure {
        title,
        columns,
        panels,
        legend,
    }
}

fn curve(
    records: &[&SummaryRecord],
    x: impl Fn(&SummaryRecord) -> Option<f64>,
) -> Vec<(f64, f64, Option<f64>)> {
    let mut pts: Vec<(f64, f64, Option<f64>)> = records
        .iter()
        .filter_map(|r| Some((x(r)?, ms(r, "lift", 1.0)?)))
        .map(|(x, (m, s))| (x, m, s))
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts
}

fn keys_of(set: &ResultsSet, alg: &str) -> Vec<(String, String)> {
    let recs: Vec<&SummaryRecord> = set.summary().filter(|r| r.algorithm == alg).collect();
    panels_keys(&recs)
}

fn sigma_ablation(set: &ResultsSet, o: &PlotOptions) -> Result<Figure> {
    let n = need_n(set, PRIVBON, o.select.n)?;
    let beta = pick_beta(set, o.select.beta)?;
    let mut panels = Vec::new();
    for key in keys_of(set, PRIVBON) {
        let mut series = Vec::new();
        for alg in [PRIVBON, PRIVBON_GAUSS, PRIVITP] {
            let recs = at(set, alg, n, &key, if alg == PRIVITP { beta } else { None });
            if !recs.is_empty() {
                series.push(Series {
                    label: display(alg).to_string(),
                    style: style(alg),
                    points: curve(&recs, |r| r.sigma),
                });
            }
        }
        let mut hlines = vec![base_line()];
        if let Some(b) = at(set, BON, n, &key, None)
            .first()
            .and_then(|r| r.stat("lift").mean)
        {
            hlines.push(HLine {
                label: Some(format!("{} (σ = 0)", AlgorithmKind::Bon.label())),
                value: b,
                color: BLACK,
            });
        }
        panels.push(Panel::Line(LinePanel {
            title: format!("{} · {}: lift vs σ at n = {n}", key.0, key.1),
            x_label: "noise σ (swept values)".into(),
            y_label: LIFT.into(),
            x_scale: XScale::Swept,
            series,
            hlines,
        }));
    }
    Ok(figure(format!("σ ablation at n = {n}"), 2, panels))
}

fn beta_ablation(set: &ResultsSet, o: &PlotOptions) -> Result<Figure> {
    let alg0 = if keys_of(set, ITP).is_empty() {
        PRIVITP
    } else {
        ITP
    };
    let n = need_n(set, alg0, o.select.n)?;
    let mut panels = Vec::new();
    for key in keys_of(set, alg0) {
        let mut series = Vec::new();
        let itp = at(set, ITP, n, &key, None);
        if !itp.is_empty() {
            series.push(Series {
                label: AlgorithmKind::Itp.label().into(),
                style: style(ITP),
                points: curve(&itp, |r| r.beta),
            });
        }
        let privitp = at(set, PRIVITP, n, &key, None);
        let sigmas = distinct(privitp.iter().filter_map(|r| r.sigma));
        for (i, s) in sigmas.iter().enumerate() {
            if o.select.sigma.is_some_and(|want| !close(want, *s)) {
                continue;
            }
            let recs: Vec<&SummaryRecord> = privitp
                .iter()
                .copied()
                .filter(|r| r.sigma.is_some_and(|x| close(x, *s)))
                .collect();
            series.push(Series {
                label: format!("{} σ = {s}", AlgorithmKind::PrivItp.label()),
                style: Style {
                    color: EXTRA[i % EXTRA.len()],
                    marker: MARKERS[i % MARKERS.len()],
                    dashed: false,
                },
                points: curve(&recs, |r| r.beta),
            });
        }
        panels.push(Panel::Line(LinePanel {
            title: format!("{} · {}: lift vs β at n = {n}", key.0, key.1),
            x_label: "regularisation β (swept values)".into(),
            y_label: LIFT.into(),
            x_scale: XScale::Swept,
            series,
            hlines: vec![base_line()],
        }));
    }
    Ok(figure(format!("β ablation at n = {n}"), 2, panels))
}

fn privacy_utility(set: &ResultsSet, o: &PlotOptions) -> Result<Figure> {
    let n = need_n(set, PRIVITP, o.select.n)?;
    let beta = pick_beta(set, o.select.beta)?;
    let mut panels = Vec::new();
    for key in keys_of(set, PRIVITP) {
        let recs = at(set, PRIVITP, n, &key, beta);
        let mut hlines = vec![base_line()];
        if let Some(v) = at(set, ITP, n, &key, beta)
            .first()
            .and_then(|r| r.stat("lift").mean)
        {
            hlines.push(HLine {
                label: Some(format!(
                    "{} (non-private skyline)",
                    AlgorithmKind::Itp.label()
                )),
                value: v,
                color: style(ITP).color,
            });
        }
        panels.push(Panel::Line(LinePanel {
            title: format!("{} · {}: ITP vs PrivITP at n = {n}", key.0, key.1),
            x_label: "total noise σ = σ_X + σ_Z (swept values)".into(),
            y_label: LIFT.into(),
            x_scale: XScale::Swept,
            series: vec![Series {
                label: AlgorithmKind::PrivItp.label().into(),
                style: style(PRIVITP),
                points: curve(&recs, |r| r.sigma),
            }],
            hlines,
        }));
    }
    let b = beta.map(|b| format!(", β = {b}")).unwrap_or_default();
    Ok(figure(
        format!("Privacy–utility: PrivITP across σ vs the ITP skyline (n = {n}{b})"),
        2,
        panels,
    ))
}

fn fsrc_bars(set: &ResultsSet) -> Result<Figure> {
    let rows: Vec<_> = set.fsrc().collect();
    if rows.is_empty() {
        bail_input!(
            "{}: no fsrc.parquet; the experiment needs an `fsrc:` section (or run `privalign fsrc CONFIG`)",
            set.names()
        );
    }
    let keys = ordered(rows.iter().map(|r| r.reward_model.clone()));
    let datasets = ordered(rows.iter().map(|r| r.dataset.clone()));
    let mut panels = Vec::new();
    for ds in &datasets {
        for rm in &keys {
            let mine: Vec<_> = rows
                .iter()
                .filter(|r| &r.dataset == ds && &r.reward_model == rm)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let sigmas = distinct(mine.iter().map(|r| r.sigma));
            let stat =
                |f: &dyn Fn(&crate::results::fsrc::FsrcRow) -> f64| -> Vec<(f64, Option<f64>)> {
                    sigmas
                        .iter()
                        .map(|s| {
                            let v: Vec<Option<f64>> = mine
                                .iter()
                                .filter(|r| close(r.sigma, *s))
                                .map(|r| Some(f(r)))
                                .collect();
                            let m = mean_se(&v);
                            (m.mean.unwrap_or(0.0), m.se)
                        })
                        .collect()
                };
            let fsrc = stat(&|r| r.run.queries as f64);
            let basic = stat(&|r| r.run.basic_queries as f64);
            panels.push(Panel::Bar(BarPanel {
                title: format!("{ds} · {rm}: queries answered"),
                x_label: "total noise σ".into(),
                y_label: "queries answered before ε_total is spent".into(),
                groups: sigmas.iter().map(|s| format!("σ = {s}")).collect(),
                bars: vec![
                    ("FSRC (ex-post)".into(), style(PRIVITP), fsrc),
                    (
                        "basic composition ⌊ε_total/ε_max⌋".into(),
                        Style {
                            color: RGBColor(213, 94, 0),
                            marker: Marker::Square,
                            dashed: false,
                        },
                        basic,
                    ),
                ],
            }));
        }
    }
    let r = rows[0];
    let seeds = rows
        .iter()
        .filter(|x| {
            x.sigma == r.sigma && x.reward_model == r.reward_model && x.dataset == r.dataset
        })
        .count();
    Ok(figure(
        format!(
            "FSRC vs basic composition (ε_total = {}, n = {}, β = {}; mean ± SE over {seeds} seeds)",
            r.eps_total, r.n, r.beta
        ),
        2,
        panels,
    ))
}

/// Build the figure of `o.kind`.
pub fn build(set: &ResultsSet, o: &PlotOptions) -> Result<Figure> {
    let fig = match o.kind {
        PlotKind::Scaling => scaling(set, o)?,
        PlotKind::Sigma => sigma_ablation(set, o)?,
        PlotKind::Beta => beta_ablation(set, o)?,
        PlotKind::PrivacyUtility => privacy_utility(set, o)?,
        PlotKind::Fsrc => fsrc_bars(set)?,
    };
    if fig.panels.is_empty() {
        bail_input!("{}: nothing to plot for {:?}", set.names(), o.kind);
    }
    Ok(fig)
}

/// The file stem of a plot kind (`plots/<stem>.png`).
pub fn stem(kind: PlotKind) -> &'static str {
    match kind {
        PlotKind::Scaling => "scaling",
        PlotKind::Sigma => "sigma",
        PlotKind::Beta => "beta",
        PlotKind::PrivacyUtility => "privacy-utility",
        PlotKind::Fsrc => "fsrc",
    }
}

/// Render `o.kind` into `dir/<kind>.png` and `.svg`; returns the PNG path.
pub fn plot(set: &ResultsSet, o: &PlotOptions, dir: &Path) -> Result<PathBuf> {
    plot_as(set, o, dir, stem(o.kind))
}

/// Render `o.kind` into `dir/<file_stem>.png` and `.svg` (reproduce names
/// several plots of one kind apart, `config::report_names`).
pub fn plot_as(set: &ResultsSet, o: &PlotOptions, dir: &Path, file_stem: &str) -> Result<PathBuf> {
    let fig = build(set, o)?;
    let dir = &crate::fsutil::resolve_link(dir)?;
    if dir.exists() && !dir.is_dir() {
        bail_input!(
            "{}: is a file, not a directory; plot --out takes a directory (the plot is written to DIR/{}.png and .svg) — choose a directory",
            dir.display(),
            stem(o.kind)
        );
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| crate::fsutil::output_error(dir, "creating the plot directory", e))?;
    let s = dir.join(file_stem);
    fig.save(&s)?;
    Ok(dir.join(format!("{file_stem}.png")))
}
