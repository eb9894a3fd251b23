//! What the experiment subcommands do, one function each, above `config`,
//! `sweep`, `results` and `report`: load and resolve the config, run, write,
//! say what was written.

use anyhow::Result;
use std::path::{Path, PathBuf};

use crate::config::{self, Experiment, TableKind};
use crate::fsutil::write_atomic;
use crate::privacy::budget::{BudgetParams, budget_table};
use crate::report::format::{Format, Table};
use crate::report::fsrc::fsrc_table;
use crate::results::fsrc::{FSRC_FILE, read_fsrc};
use crate::results::parquet_io::write_frame;
use crate::results::summary::{SUMMARY_FILE, mean_privitp_halting};
use crate::sweep::run::{SweepOptions, SweepOutcome, fsrc_only, sweep as run_sweep};

/// Flags shared by sweep, reproduce and fsrc.
#[derive(Clone, Debug)]
pub struct ExperimentOptions {
    pub config: PathBuf,
    pub sets: Vec<String>,
    pub out: Option<PathBuf>,
    pub threads: Option<usize>,
    pub resume: bool,
    pub progress: bool,
}

/// Load, override, validate and resolve the config.
pub fn load_experiment(path: &Path, sets: &[String]) -> Result<Experiment> {
    let cfg = config::load(path, sets)?;
    Experiment::resolve(cfg, path).map_err(|e| e.context(path.display().to_string()))
}

fn out_dir(o: &ExperimentOptions, exp: &Experiment) -> PathBuf {
    o.out
        .clone()
        .unwrap_or_else(|| Path::new("results").join(&exp.name))
}

/// `privalign sweep`.
pub fn sweep(o: &ExperimentOptions) -> Result<(Experiment, SweepOutcome)> {
    let exp = load_experiment(&o.config, &o.sets)?;
    let opts = SweepOptions {
        out: out_dir(o, &exp),
        threads: o.threads,
        resume: o.resume,
        progress: o.progress,
    };
    let r = run_sweep(&exp, &opts)?;
    if r.up_to_date {
        println!(
            "{}: results are complete for this config; nothing to do (rerun without --resume to recompute)",
            r.out.display()
        );
    } else {
        println!(
            "wrote {} cells ({} chunks computed, {} resumed){} to {} in {:.1} s",
            r.cells,
            r.computed_chunks,
            r.resumed_chunks,
            if r.fsrc_runs > 0 {
                format!(" and {} FSRC runs", r.fsrc_runs)
            } else {
                String::new()
            },
            r.out.display(),
            r.seconds
        );
    }
    Ok((exp, r))
}

/// `privalign fsrc`: only the FSRC section; writes `<out>/fsrc.parquet`.
pub fn fsrc(o: &ExperimentOptions) -> Result<Table> {
    let exp = load_experiment(&o.config, &o.sets)?;
    if exp.config.fsrc.is_none() {
        crate::bail_input!(
            "{}: has no `fsrc:` section; add one (eps_total, n, sigma, beta) — see experiments/README.md",
            o.config.display()
        );
    }
    let threads = o.threads.unwrap_or_else(rayon::current_num_threads);
    let rows = fsrc_only(&exp, threads)?;
    let out = out_dir(o, &exp);
    std::fs::create_dir_all(&out)?;
    let path = out.join(FSRC_FILE);
    write_frame(&path, &mut crate::results::fsrc::fsrc_frame(&rows)?)?;
    eprintln!("wrote {} FSRC runs to {}", rows.len(), path.display());
    Ok(fsrc_table(&rows))
}

/// `privalign reproduce`: sweep, then the reports the config asks for.
/// Table and plot kinds that privalign cannot render yet are listed as
/// skipped rather than silently dropped.
pub fn reproduce(o: &ExperimentOptions) -> Result<()> {
    let (exp, outcome) = sweep(o)?;
    let tables_dir = outcome.out.join("tables");
    let mut skipped = Vec::new();
    for t in &exp.config.reports.tables {
        let table = match t.kind {
            TableKind::Fsrc => {
                let path = outcome.out.join(FSRC_FILE);
                if !path.exists() {
                    crate::bail_input!(
                        "reports.tables: kind fsrc needs the config's `fsrc:` section (no {} was written)",
                        path.display()
                    );
                }
                fsrc_table(&read_fsrc(&path)?)
            }
            TableKind::Budget => budget_for(&exp, &outcome.out, t.n)?,
            other => {
                skipped.push(format!("table {other:?}"));
                continue;
            }
        };
        std::fs::create_dir_all(&tables_dir)?;
        let name = format!("{}.tex", format!("{:?}", t.kind).to_lowercase());
        let path = tables_dir.join(name);
        write_atomic(&path, table.render(Format::Latex).as_bytes())?;
        println!("wrote {}", path.display());
    }
    for p in &exp.config.reports.plots {
        skipped.push(format!("plot {:?}", p.kind));
    }
    if !skipped.is_empty() {
        println!(
            "skipped (not implemented in this version of privalign): {}",
            skipped.join(", ")
        );
    }
    Ok(())
}

/// The budget table (paper `tab:budgets`) for the experiment's first reward
/// model's privacy parameters and PrivITP setting, at n (default the grid's
/// largest), with ε_2^post at PrivITP's mean halting time read from the
/// sweep's summary (averaged over its σ and β settings at that n).
fn budget_for(exp: &Experiment, out: &Path, n: Option<usize>) -> Result<Table> {
    let rm = &exp.reward_models[0];
    let n = n.unwrap_or(*exp.n_values.last().unwrap_or(&1));
    let sigmas: Vec<f64> = match (
        &exp.config.algorithms.privitp,
        &exp.config.algorithms.privbon,
    ) {
        (Some(p), _) if p.sigma.is_some() => p.sigma.clone().unwrap_or_default(),
        (_, Some(s)) => s.sigma.clone(),
        _ => crate::bail_input!(
            "reports.tables: kind budget needs algorithms.privitp.sigma or algorithms.privbon.sigma to list the σ rows"
        ),
    };
    let (l, clamp) = match &exp.config.algorithms.privitp {
        Some(p) => (p.l, p.clamp.map(|[a, b]| (a, b))),
        None => (4.0, None),
    };
    let t_mean = mean_privitp_halting(&out.join(SUMMARY_FILE), n)?.unwrap_or(1.0);
    budget_table(
        &BudgetParams {
            privacy: rm.privacy,
            n,
            l,
            clamp: clamp.unwrap_or((0.0, rm.privacy.r_max)),
        },
        &sigmas,
        t_mean,
    )
}
