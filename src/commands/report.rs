//! `privalign table`, `plot` and `describe`: their flags and the rendering
//! they run. `table` and `plot` share the cell-selection flags
//! ([`SelectionArgs`]).

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

use crate::config::{PlotKind, TableKind};
use crate::fsutil::{check_new_file, write_atomic};
use crate::pipeline;
use crate::report::format::Format;
use crate::report::plots::PlotOptions;
use crate::report::select::CellSelection;
use crate::report::tables::TableOptions;

#[derive(Debug, Args)]
pub struct DescribeArgs {
    /// Prepared dataset directory (`privalign ingest` output), e.g. data/demo/prepared.
    #[arg(value_name = "DATASET")]
    pub dataset: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

/// Which cells a table or plot shows, when the sweep has several n, σ or β.
#[derive(Debug, Args)]
pub struct SelectionArgs {
    /// The n reported (default: the largest n of the sweep).
    #[arg(long)]
    pub n: Option<usize>,
    /// σ of the private algorithms, when the sweep has several (beta plot:
    /// the one PrivITP σ).
    #[arg(long)]
    pub sigma: Option<f64>,
    /// β of ITP/PrivITP, when the sweep has several.
    #[arg(long)]
    pub beta: Option<f64>,
}

impl From<&SelectionArgs> for CellSelection {
    fn from(a: &SelectionArgs) -> Self {
        CellSelection {
            n: a.n,
            sigma: a.sigma,
            beta: a.beta,
        }
    }
}

/// Values may be negative (`--lambda -0.2`): the parser passes them to
/// validation, which names the flag and its valid range.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct PlotArgs {
    /// Results directories (several are combined, e.g. one per dataset).
    #[arg(required = true, value_name = "RESULTS")]
    pub results: Vec<PathBuf>,
    /// Which figure.
    #[arg(long, value_enum)]
    pub kind: PlotKindArg,
    /// Which cells: n, σ and β.
    #[command(flatten)]
    pub select: SelectionArgs,
    /// Output directory (default: <first RESULTS>/plots).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Replace <kind>.png/.svg if they exist.
    #[arg(long)]
    pub force: bool,
}

/// Plot kinds (design §11).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PlotKindArg {
    Scaling,
    Sigma,
    Beta,
    PrivacyUtility,
    Fsrc,
    /// Claimed vs exact vs empirical ε against σ (from `privalign audit`'s audit.json).
    Audit,
}

impl PlotKindArg {
    /// The results figure it names; `None` for `audit` (read from audit.json).
    pub fn results_kind(self) -> Option<PlotKind> {
        match self {
            PlotKindArg::Scaling => Some(PlotKind::Scaling),
            PlotKindArg::Sigma => Some(PlotKind::Sigma),
            PlotKindArg::Beta => Some(PlotKind::Beta),
            PlotKindArg::PrivacyUtility => Some(PlotKind::PrivacyUtility),
            PlotKindArg::Fsrc => Some(PlotKind::Fsrc),
            PlotKindArg::Audit => None,
        }
    }
}

/// Values may be negative (`--lambda -0.2`): the parser passes them to
/// validation, which names the flag and its valid range.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct TableArgs {
    /// Results directories (several are combined, e.g. one per dataset).
    #[arg(required = true, value_name = "RESULTS")]
    pub results: Vec<PathBuf>,
    /// Which table.
    #[arg(long, value_enum)]
    pub kind: TableKindArg,
    /// Which cells: n, σ and β.
    #[command(flatten)]
    pub select: SelectionArgs,
    /// Bold the best value per column (lift) or per row (win rate).
    #[arg(long)]
    pub bold_best: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "latex")]
    pub format: Format,
    /// Write to FILE (atomically) instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace FILE if it exists.
    #[arg(long)]
    pub force: bool,
}

/// Table kinds (design §11).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TableKindArg {
    Lift,
    Winrate,
    Budget,
    Fsrc,
    Generation,
    /// Claimed vs exact vs empirical ε (from `privalign audit`'s audit.json).
    Audit,
}

impl TableKindArg {
    /// The results table it names; `None` for `audit` (read from audit.json).
    pub fn results_kind(self) -> Option<TableKind> {
        match self {
            TableKindArg::Lift => Some(TableKind::Lift),
            TableKindArg::Winrate => Some(TableKind::Winrate),
            TableKindArg::Budget => Some(TableKind::Budget),
            TableKindArg::Fsrc => Some(TableKind::Fsrc),
            TableKindArg::Generation => Some(TableKind::Generation),
            TableKindArg::Audit => None,
        }
    }
}

/// `privalign describe DATASET`.
pub fn describe(a: &DescribeArgs) -> Result<()> {
    let table = crate::report::describe::describe(&a.dataset)?;
    crate::out!("{}", table.render(a.format))?;
    Ok(())
}

/// `privalign table`: render to standard output or, atomically, to --out.
pub fn table(a: &TableArgs) -> Result<()> {
    if let Some(path) = &a.out {
        check_new_file(path, "--out", a.force)?;
    }
    let table = match a.kind.results_kind() {
        None => crate::audit::view::table(&a.results)?,
        Some(kind) => pipeline::table(
            &a.results,
            &TableOptions {
                kind,
                select: CellSelection::from(&a.select),
                bold_best: a.bold_best,
            },
        )?,
    };
    let text = table.render(a.format);
    match &a.out {
        Some(path) => {
            write_atomic(path, text.as_bytes())?;
            eprintln!("wrote {}", path.display());
        }
        None => crate::out!("{text}")?,
    }
    Ok(())
}

/// `privalign plot`: write <kind>.png and .svg.
pub fn plot(a: &PlotArgs) -> Result<()> {
    let kind = a.kind.results_kind();
    let out = a.out.clone().unwrap_or_else(|| a.results[0].join("plots"));
    let stem = out.join(kind.map_or("audit", crate::report::plots::stem));
    for ext in ["png", "svg"] {
        check_new_file(&stem.with_extension(ext), "plot", a.force)?;
    }
    let png = match kind {
        None => crate::audit::view::plot(&a.results, &out)?,
        Some(kind) => pipeline::plot(
            &a.results,
            &PlotOptions {
                kind,
                select: CellSelection::from(&a.select),
            },
            &out,
        )?,
    };
    crate::outln!(
        "wrote {} and {}",
        png.display(),
        png.with_extension("svg").display()
    )?;
    Ok(())
}
