//! A small figure model and its rendering with plotters: line panels (log
//! x axis, mean ± SE bands, dashed reference lines) and grouped bar panels
//! with error bars, laid out in a grid under a title and one shared legend.
//!
//! Readability decisions (from looking at the rendered demo plots): the
//! legend is a strip of its own above the panels, so it never covers data;
//! every series has a distinct marker and the non-private skyline is dashed,
//! so lines stay distinguishable in greyscale; the palette is Okabe–Ito
//! (colour-blind safe); fonts are DejaVu Sans embedded in the binary (no
//! system fonts needed).

use anyhow::{Result, anyhow};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

/// Marker shapes, one per algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Triangle,
    Square,
    Cross,
    Diamond,
    /// No marker (reference lines).
    None,
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    pub color: RGBColor,
    pub marker: Marker,
    pub dashed: bool,
}

/// One line: points (x, mean, SE).
#[derive(Clone, Debug)]
pub struct Series {
    pub label: String,
    pub style: Style,
    pub points: Vec<(f64, f64, Option<f64>)>,
}

/// A horizontal dashed reference line.
#[derive(Clone, Debug)]
pub struct HLine {
    pub label: Option<String>,
    pub value: f64,
    pub color: RGBColor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XScale {
    /// Powers of two (n).
    Log2,
    /// The swept values themselves (σ, β), equally spaced in sweep order and
    /// each labelled: sweeps are roughly geometric, and a log axis over less
    /// than a decade would label almost none of them.
    Swept,
}

#[derive(Clone, Debug)]
pub struct LinePanel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_scale: XScale,
    pub series: Vec<Series>,
    pub hlines: Vec<HLine>,
}

/// One series of bars: (label, style, per-group (mean, SE)).
pub type Bars = (String, Style, Vec<(f64, Option<f64>)>);

/// Grouped bars: for each group (e.g. σ) one bar per series, mean ± SE.
#[derive(Clone, Debug)]
pub struct BarPanel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub groups: Vec<String>,
    pub bars: Vec<Bars>,
}

#[derive(Clone, Debug)]
pub enum Panel {
    Line(LinePanel),
    Bar(BarPanel),
}

#[derive(Clone, Debug)]
pub struct Figure {
    pub title: String,
    pub columns: usize,
    pub panels: Vec<Panel>,
    /// Legend entries (label, style); reference lines add a dashed grey entry.
    pub legend: Vec<(String, Style)>,
}

pub const FONT: &str = "sans-serif";
pub const PANEL_W: u32 = 560;
pub const PANEL_H: u32 = 380;
const TITLE_H: u32 = 44;
/// Wide enough for a one-line title and legend on single-panel figures.
const MIN_W: u32 = 900;
const LEGEND_H: u32 = 36;

fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Both are valid TrueType files shipped by the dejavu crate.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
        let _ = plotters::style::register_font(FONT, FontStyle::Bold, dejavu::sans::bold());
    });
}

impl Figure {
    pub fn size(&self) -> (u32, u32) {
        let cols = self.columns.max(1).min(self.panels.len().max(1));
        let rows = self.panels.len().div_ceil(cols).max(1);
        (
            (PANEL_W * cols as u32).max(MIN_W),
            TITLE_H + LEGEND_H + PANEL_H * rows as u32,
        )
    }

    /// Write `<stem>.png` and `<stem>.svg`.
    pub fn save(&self, stem: &Path) -> Result<()> {
        register_fonts();
        let size = self.size();
        // Appended, not `with_extension`: a stem may contain dots
        // (`sigma-n4-beta0.1`, config::report_names).
        let with_ext = |ext: &str| {
            let mut s = stem.as_os_str().to_owned();
            s.push(format!(".{ext}"));
            std::path::PathBuf::from(s)
        };
        let png = with_ext("png");
        let svg = with_ext("svg");
        // An existing <stem>.png/.svg that is a symbolic link is written
        // through (the link is kept), as for every other output; the hidden
        // temporaries sit beside the real destination and keep the extension
        // (the PNG encoder needs it).
        let (png_dest, svg_dest) = (
            crate::fsutil::resolve_link(&png)?,
            crate::fsutil::resolve_link(&svg)?,
        );
        let tmp = |dest: &Path| {
            let ext = dest.extension().map(|e| e.to_string_lossy().into_owned());
            let name = stem
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            dest.with_file_name(format!(
                ".{name}.tmp-{}.{}",
                std::process::id(),
                ext.unwrap_or_default()
            ))
        };
        let (tmp_png, tmp_svg) = (tmp(&png_dest), tmp(&svg_dest));
        let result = (|| -> Result<()> {
            // Probe that the directory is writable, so the error names the
            // user's file rather than the encoder's failure on a temporary.
            std::fs::File::create(&tmp_png)
                .map_err(|e| crate::fsutil::output_error(&png, "creating a temporary file", e))?;
            {
                let root = BitMapBackend::new(&tmp_png, size).into_drawing_area();
                self.draw(&root)?;
                root.present()
                    .map_err(|e| anyhow!("rendering {}: {e:?}", png.display()))?;
            }
            {
                let root = SVGBackend::new(&tmp_svg, size).into_drawing_area();
                self.draw(&root)?;
                root.present()
                    .map_err(|e| anyhow!("rendering {}: {e:?}", svg.display()))?;
            }
            for (t, dest, f) in [(&tmp_png, &png_dest, &png), (&tmp_svg, &svg_dest, &svg)] {
                std::fs::rename(t, dest)
                    .map_err(|e| crate::fsutil::output_error(f, "renaming it into place", e))?;
            }
            Ok(())
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp_png);
            let _ = std::fs::remove_file(&tmp_svg);
        }
        result
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<()> {
        let e = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing: {e:?}");
        root.fill(&WHITE).map_err(e)?;
        let (w, _) = self.size();
        let (top, rest) = root.split_vertically(TITLE_H);
        top.draw(&Text::new(
            self.title.clone(),
            (12, 10),
            (FONT, 20).into_font().style(FontStyle::Bold).color(&BLACK),
        ))
        .map_err(e)?;
        let (legend, grid) = rest.split_vertically(LEGEND_H);
        let mut x = 14i32;
        for (label, style) in &self.legend {
            draw_legend_sample(&legend, x, 18, style).map_err(e)?;
            legend
                .draw(&Text::new(
                    label.clone(),
                    (x + 40, 9),
                    (FONT, 16).into_font().color(&BLACK),
                ))
                .map_err(e)?;
            x += 54 + 9 * label.chars().count() as i32;
            if x > w as i32 - 60 {
                break;
            }
        }
        let cols = self.columns.max(1).min(self.panels.len().max(1));
        let rows = self.panels.len().div_ceil(cols).max(1);
        let areas = grid.split_evenly((rows, cols));
        for (panel, area) in self.panels.iter().zip(areas.iter()) {
            match panel {
                Panel::Line(p) => draw_line_panel(area, p)?,
                Panel::Bar(p) => draw_bar_panel(area, p)?,
            }
        }
        Ok(())
    }
}

fn draw_legend_sample<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    x: i32,
    y: i32,
    s: &Style,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let line = s.color.stroke_width(2);
    if s.dashed {
        area.draw(&DashedPathElement::new(
            vec![(x, y), (x + 32, y)],
            6,
            4,
            line,
        ))?;
    } else {
        area.draw(&PathElement::new(vec![(x, y), (x + 32, y)], line))?;
    }
    draw_marker(area, (x + 16, y), s)
}

fn draw_marker<DB: DrawingBackend, C: Copy + 'static>(
    area: &DrawingArea<DB, impl CoordTranslate<From = C>>,
    at: C,
    s: &Style,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let fill = s.color.filled();
    let size = 5;
    match s.marker {
        Marker::Circle => area.draw(&Circle::new(at, size, fill)),
        Marker::Triangle => area.draw(&TriangleMarker::new(at, size + 1, fill)),
        Marker::Square => {
            let e: EmptyElement<C, DB> = EmptyElement::at(at);
            area.draw(&(e + Rectangle::new([(-4, -4), (4, 4)], fill)))
        }
        Marker::Cross => area.draw(&Cross::new(at, size, s.color.stroke_width(2))),
        Marker::Diamond => {
            let e: EmptyElement<C, DB> = EmptyElement::at(at);
            area.draw(&(e + Polygon::new(vec![(0, -6), (6, 0), (0, 6), (-6, 0)], fill)))
        }
        Marker::None => Ok(()),
    }
}

/// How raw x values map to the panel's linear x axis, and how its integer
/// ticks are labelled.
struct XMap {
    scale: XScale,
    /// Swept: the distinct x values in order.
    values: Vec<f64>,
}

impl XMap {
    fn new(p: &LinePanel) -> Self {
        let mut values: Vec<f64> = p
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|q| q.0))
            .collect();
        values.sort_by(f64::total_cmp);
        values.dedup_by(|a, b| (*a - *b).abs() <= 1e-12 * a.abs().max(1.0));
        Self {
            scale: p.x_scale,
            values,
        }
    }

    fn map(&self, x: f64) -> f64 {
        match self.scale {
            XScale::Log2 => x.log2(),
            XScale::Swept => self
                .values
                .iter()
                .position(|&v| (v - x).abs() <= 1e-12 * v.abs().max(1.0))
                .unwrap_or(0) as f64,
        }
    }

    fn label(&self, v: f64) -> String {
        if (v - v.round()).abs() > 1e-6 || v < 0.0 {
            return String::new();
        }
        match self.scale {
            XScale::Log2 => format!("{}", 2f64.powf(v.round()) as u64),
            XScale::Swept => self
                .values
                .get(v.round() as usize)
                .map(|x| format!("{x}"))
                .unwrap_or_default(),
        }
    }
}

fn padded(lo: f64, hi: f64, frac: f64) -> (f64, f64) {
    if !(lo.is_finite() && hi.is_finite()) {
        return (0.0, 1.0);
    }
    let span = (hi - lo).abs().max(1e-9);
    (lo - frac * span, hi + frac * span)
}

fn draw_line_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, p: &LinePanel) -> Result<()> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing {}: {e:?}", p.title);
    let xm = XMap::new(p);
    let xs: Vec<f64> = p
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|q| xm.map(q.0)))
        .collect();
    let (x_lo, x_hi) = (
        xs.iter().copied().fold(f64::INFINITY, f64::min),
        xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    let mut ys: Vec<f64> = p
        .series
        .iter()
        .flat_map(|s| {
            s.points
                .iter()
                .flat_map(|&(_, m, se)| [m - se.unwrap_or(0.0), m + se.unwrap_or(0.0)])
        })
        .collect();
    ys.extend(p.hlines.iter().map(|h| h.value));
    let (y0, y1) = padded(
        ys.iter().copied().fold(f64::INFINITY, f64::min),
        ys.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        0.08,
    );
    let decimals = if y1 - y0 > 20.0 {
        0
    } else if y1 - y0 > 2.0 {
        1
    } else {
        2
    };
    let fmt_y = move |v: &f64| format!("{v:.decimals$}");
    let fmt_x = |v: &f64| xm.label(*v);
    let (x0, x1) = if x_hi > x_lo {
        padded(x_lo, x_hi, 0.05)
    } else {
        (x_lo - 0.5, x_hi + 0.5)
    };
    let mut chart = ChartBuilder::on(area)
        .caption(p.title.clone(), (FONT, 17))
        .margin(12)
        .x_label_area_size(46)
        .y_label_area_size(64)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(e)?;
    // One label per integer position: every power of two, every swept value.
    let ticks = ((x1 - x0).floor() as usize + 1).clamp(2, 14);
    chart
        .configure_mesh()
        .x_desc(p.x_label.clone())
        .y_desc(p.y_label.clone())
        .x_labels(ticks)
        .y_labels(8)
        .x_label_formatter(&fmt_x)
        .y_label_formatter(&fmt_y)
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 15))
        .light_line_style(RGBColor(246, 246, 246))
        .bold_line_style(RGBColor(220, 220, 220))
        .draw()
        .map_err(e)?;
    draw_lines(&mut chart, p, &xm, (x0, x1)).map_err(e)
}

/// Reference lines, SE bands, lines and markers in chart coordinates.
fn draw_lines<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    p: &LinePanel,
    xm: &XMap,
    (x0, x1): (f64, f64),
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    for h in &p.hlines {
        chart.draw_series(std::iter::once(DashedPathElement::new(
            vec![(x0, h.value), (x1, h.value)],
            7,
            5,
            h.color.stroke_width(2),
        )))?;
    }
    for s in &p.series {
        let pts: Vec<(f64, f64, Option<f64>)> = s
            .points
            .iter()
            .map(|&(x, m, se)| (xm.map(x), m, se))
            .collect();
        if pts.iter().all(|q| q.2.is_some()) && pts.len() > 1 {
            let mut band: Vec<(f64, f64)> = pts
                .iter()
                .map(|&(x, m, se)| (x, m + se.unwrap_or(0.0)))
                .collect();
            band.extend(
                pts.iter()
                    .rev()
                    .map(|&(x, m, se)| (x, m - se.unwrap_or(0.0))),
            );
            chart.draw_series(std::iter::once(Polygon::new(band, s.style.color.mix(0.16))))?;
        }
        let line = s.style.color.stroke_width(2);
        let path: Vec<(f64, f64)> = pts.iter().map(|&(x, m, _)| (x, m)).collect();
        if s.style.dashed {
            chart.draw_series(std::iter::once(DashedPathElement::new(
                path.clone(),
                8,
                5,
                line,
            )))?;
        } else {
            chart.draw_series(std::iter::once(PathElement::new(path.clone(), line)))?;
        }
        let plotting = chart.plotting_area();
        for &(x, m) in &path {
            draw_marker(plotting, (x, m), &s.style)?;
        }
    }
    Ok(())
}

fn draw_bar_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, p: &BarPanel) -> Result<()> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing {}: {e:?}", p.title);
    let g = p.groups.len().max(1);
    let k = p.bars.len().max(1);
    let y_hi = p
        .bars
        .iter()
        .flat_map(|b| b.2.iter().map(|&(m, se)| m + se.unwrap_or(0.0)))
        .fold(0.0f64, f64::max)
        * 1.12
        + 1e-9;
    let mut chart = ChartBuilder::on(area)
        .caption(p.title.clone(), (FONT, 17))
        .margin(12)
        .x_label_area_size(46)
        .y_label_area_size(64)
        .build_cartesian_2d(-0.5f64..(g as f64 - 0.5), 0f64..y_hi)
        .map_err(e)?;
    let groups = p.groups.clone();
    let fmt_x = move |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < groups.len() {
            groups[i as usize].clone()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc(p.x_label.clone())
        .y_desc(p.y_label.clone())
        .x_labels(g * 2 + 1)
        .x_label_formatter(&fmt_x)
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 15))
        .light_line_style(RGBColor(236, 236, 236))
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()
        .map_err(e)?;
    let width = 0.8 / k as f64;
    for (b, (_, style, values)) in p.bars.iter().enumerate() {
        for (gi, &(m, se)) in values.iter().enumerate() {
            let left = gi as f64 - 0.4 + b as f64 * width;
            let right = left + width * 0.92;
            let fill = if style.dashed {
                style.color.mix(0.35).filled()
            } else {
                style.color.filled()
            };
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(left, 0.0), (right, m)],
                    fill,
                )))
                .map_err(e)?;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(left, 0.0), (right, m)],
                    BLACK.stroke_width(1),
                )))
                .map_err(e)?;
            if let Some(se) = se {
                let mid = (left + right) / 2.0;
                let cap = width * 0.18;
                for seg in [
                    vec![(mid, m - se), (mid, m + se)],
                    vec![(mid - cap, m - se), (mid + cap, m - se)],
                    vec![(mid - cap, m + se), (mid + cap, m + se)],
                ] {
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            seg,
                            BLACK.stroke_width(2),
                        )))
                        .map_err(e)?;
                }
            }
        }
    }
    Ok(())
}
