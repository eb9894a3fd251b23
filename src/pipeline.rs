//! What the experiment subcommands do, one function each, above `config`,
//! `sweep`, `results` and `report`: load and resolve the config, run, write,
//! say what was written.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

use crate::config::hash::{cells_hash, config_hash};
use crate::config::{self, Experiment};
use crate::fsutil::{sha256_file, write_atomic};
use crate::report::format::{Format, Table};
use crate::report::fsrc::fsrc_table;
use crate::report::plots::{self, PlotOptions};
use crate::report::select::CellSelection;
use crate::report::tables::{self, TableOptions};
use crate::results::fsrc::FSRC_FILE;
use crate::results::manifest::MANIFEST_FILE;
use crate::results::parquet_io::write_frame;
use crate::results::read::read_results_set;
use crate::select::algorithm::AlgorithmKind;
use crate::sweep::run::{SweepOptions, SweepOutcome, fsrc_only, sweep_staged};
use crate::sweep::staging::{Staging, dataset_hashes, old_manifest, recorded_datasets};

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

/// Print what σ, β and Δ_r mean in raw units for every (dataset, reward
/// model), and the warnings about implausible values, before anything runs.
fn print_units_plan(exp: &Experiment) {
    let plan = config::units::units_plan(exp);
    for l in &plan.lines {
        eprintln!("plan: {l}");
    }
    for w in &plan.warnings {
        eprintln!("warning: {w}");
    }
}

fn out_dir(o: &ExperimentOptions, exp: &Experiment) -> PathBuf {
    o.out
        .clone()
        .unwrap_or_else(|| Path::new("results").join(&exp.name))
}

/// The experiment of `sweep`/`reproduce`: loaded, with algorithms to sweep,
/// its units plan printed.
fn sweep_experiment(o: &ExperimentOptions) -> Result<Experiment> {
    let exp = load_experiment(&o.config, &o.sets)?;
    if exp.algorithms.is_empty() {
        crate::bail_input!(
            "{}: has no algorithm to sweep, only an `fsrc:` section; run it with `privalign fsrc {}`, or add algorithms (e.g. `{}: {{}}`) and an n grid",
            o.config.display(),
            o.config.display(),
            AlgorithmKind::Bon.name()
        );
    }
    print_units_plan(&exp);
    let threads = o.threads.unwrap_or_else(crate::threads::cores);
    for w in config::limits::workload_warnings(&exp, threads) {
        eprintln!("warning: {w}");
    }
    Ok(exp)
}

/// `privalign sweep`.
pub fn sweep(o: &ExperimentOptions) -> Result<(Experiment, SweepOutcome)> {
    let exp = sweep_experiment(o)?;
    let (r, staging) = sweep_staged(&exp, &sweep_options(o, &exp), "sweep")?;
    staging.commit()?;
    print_outcome(&r)?;
    Ok((exp, r))
}

fn sweep_options(o: &ExperimentOptions, exp: &Experiment) -> SweepOptions {
    SweepOptions {
        out: out_dir(o, exp),
        threads: o.threads,
        resume: o.resume,
        progress: o.progress,
    }
}

fn print_outcome(r: &SweepOutcome) -> Result<()> {
    if r.up_to_date {
        crate::outln!(
            "{}: results are complete for this config; nothing to do (rerun without --resume to recompute)",
            r.out.display()
        )?;
    } else {
        crate::outln!(
            "wrote {} cells ({} blocks computed, {} resumed){} to {} in {:.1} s",
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
        )?;
    }
    Ok(())
}

/// `privalign fsrc`: only the FSRC section; writes `<out>/fsrc.parquet`.
///
/// Into finished results (a results manifest in `<out>`) only when they were
/// swept from the same config and data (equal config hash; the `fsrc:`
/// section is not part of it): then fsrc.parquet is replaced and the
/// manifest updated with its hash and the new `fsrc:` section, both swapped
/// in together, so `check` keeps passing. Results of another config are
/// refused (exit 2) instead of being left with a stale manifest.
pub fn fsrc(o: &ExperimentOptions) -> Result<Table> {
    let exp = load_experiment(&o.config, &o.sets)?;
    if exp.config.fsrc.is_none() {
        crate::bail_input!(
            "{}: has no `fsrc:` section; add one (eps_total, n, sigma, beta) — see experiments/README.md",
            o.config.display()
        );
    }
    print_units_plan(&exp);
    let out = out_dir(o, &exp);
    let staging = Staging::begin(&out, "fsrc", &[FSRC_FILE.to_string()])?;
    let old = old_manifest(&out)?;
    let datasets = dataset_hashes(&exp)?;
    if let Some(m) = &old {
        // The cells hash leaves out `fsrc:` (and names, reports): equal
        // means these results were swept from this config and data.
        let mine = cells_hash(&exp.config, &datasets)?;
        let theirs = cells_hash(&m.config, &recorded_datasets(m))?;
        if mine != theirs {
            crate::bail_input!(
                "{}: holds the finished results of another config or data (cells hash {theirs} ≠ {mine} of {}); writing fsrc.parquet there would leave its manifest describing a different run — rerun `privalign sweep` with this config, or give fsrc another --out",
                out.display(),
                o.config.display()
            );
        }
    }
    let threads = o.threads.unwrap_or_else(rayon::current_num_threads);
    let rows = fsrc_only(&exp, threads)?;
    let staged = staging.result_dir()?;
    write_frame(
        &staged.join(FSRC_FILE),
        &mut crate::results::fsrc::fsrc_frame(&rows)?,
    )?;
    if let Some(mut m) = old {
        m.config.fsrc = exp.config.fsrc.clone();
        m.config_hash = config_hash(&m.config, &recorded_datasets(&m))?;
        m.files
            .insert(FSRC_FILE.into(), sha256_file(&staged.join(FSRC_FILE))?);
        write_atomic(
            &staged.join(MANIFEST_FILE),
            yaml_serde::to_string(&m)?.as_bytes(),
        )?;
    }
    staging.commit()?;
    eprintln!(
        "wrote {} FSRC runs to {}",
        rows.len(),
        out.join(FSRC_FILE).display()
    );
    Ok(fsrc_table(&rows))
}

/// `privalign reproduce`: sweep, then every table and plot the config's
/// `reports` section asks for, into `<out>/tables` and `<out>/plots`.
///
/// The tables and plots are rendered into the staged results and swapped in
/// with them, so a failing report leaves the old results (and their reports)
/// as they were.
pub fn reproduce(o: &ExperimentOptions) -> Result<()> {
    let exp = sweep_experiment(o)?;
    let (outcome, staging) = sweep_staged(&exp, &sweep_options(o, &exp), "reproduce")?;
    let staged = staging.result_dir()?;
    let results = if outcome.up_to_date {
        outcome.out.clone()
    } else {
        staged.clone()
    };
    let set = read_results_set(&[results])?;
    let mut wrote = Vec::new();
    let tables_dir = staged.join("tables");
    let table_stems = crate::config::report_names::table_stems(&exp.config.reports);
    let plot_stems = crate::config::report_names::plot_stems(&exp.config.reports);
    for (t, stem) in exp.config.reports.tables.iter().zip(&table_stems) {
        let table = tables::table(
            &set,
            &TableOptions {
                kind: t.kind,
                select: CellSelection {
                    n: t.n,
                    sigma: t.sigma,
                    beta: t.beta,
                },
                bold_best: true,
            },
        )
        .map_err(|e| e.context(format!("rendering the {:?} table", t.kind)))?;
        std::fs::create_dir_all(&tables_dir)?;
        let path = tables_dir.join(format!("{stem}.tex"));
        write_atomic(&path, table.render(Format::Latex).as_bytes())?;
        write_atomic(
            &tables_dir.join(format!("{stem}.md")),
            table.render(Format::Markdown).as_bytes(),
        )?;
        wrote.push(format!("tables/{stem}.tex"));
    }
    for (p, stem) in exp.config.reports.plots.iter().zip(&plot_stems) {
        let png = plots::plot_as(
            &set,
            &PlotOptions {
                kind: p.kind,
                select: CellSelection {
                    n: p.n,
                    sigma: p.sigma,
                    beta: p.beta,
                },
            },
            &staged.join("plots"),
            stem,
        )
        .map_err(|e| e.context(format!("rendering the {:?} plot", p.kind)))?;
        let name = png.file_name().unwrap_or_default().to_string_lossy();
        wrote.push(format!("plots/{name} (+ .svg)"));
    }
    record_reports(&outcome.out, &staged)?;
    staging.commit()?;
    print_outcome(&outcome)?;
    for w in wrote {
        crate::outln!("wrote {}", outcome.out.join(w).display())?;
    }
    Ok(())
}

/// List every table and plot staged in `staged` (with its SHA-256) in the
/// staged manifest — the results' own when they were up to date — so what
/// privalign owns under `tables/` and `plots/` is a record, not a naming rule.
fn record_reports(out: &std::path::Path, staged: &std::path::Path) -> Result<()> {
    let staged_manifest = staged.join(MANIFEST_FILE);
    let from = if staged_manifest.exists() {
        staged_manifest.clone()
    } else {
        out.join(MANIFEST_FILE)
    };
    let mut m: crate::results::manifest::ResultsManifest =
        yaml_serde::from_str(&std::fs::read_to_string(&from)?)
            .with_context(|| format!("reading {}", from.display()))?;
    let mut reports = std::collections::BTreeMap::new();
    for dir in crate::sweep::staging::REPORT_DIRS {
        let Ok(entries) = std::fs::read_dir(staged.join(dir)) else {
            continue;
        };
        for e in entries {
            let e = e?;
            if e.file_type()?.is_file() {
                let rel = format!("{dir}/{}", e.file_name().to_string_lossy());
                reports.insert(rel, crate::fsutil::sha256_file(&e.path())?);
            }
        }
    }
    m.reports = Some(reports);
    crate::fsutil::write_atomic(&staged_manifest, yaml_serde::to_string(&m)?.as_bytes())
}

/// `privalign sweep --shard K/N`: one shard of the sweep into `--out`
/// (required: a shard directory has no default place).
pub fn sweep_shard(o: &ExperimentOptions, spec: crate::shard::spec::ShardSpec) -> Result<()> {
    let Some(out) = &o.out else {
        crate::bail_input!(
            "--shard {spec} needs --out DIR: each shard writes its own directory, e.g. --out runs/shards/{}",
            spec.index
        );
    };
    let exp = load_experiment(&o.config, &o.sets)?;
    print_units_plan(&exp);
    let r = crate::shard::run::sweep_shard(
        &exp,
        &crate::shard::run::ShardOptions {
            out: out.clone(),
            spec,
            threads: o.threads,
            resume: o.resume,
        },
    )?;
    if r.up_to_date {
        println!(
            "{}: shard {spec} is finished for this config; nothing to do",
            r.out.display()
        );
    } else {
        println!(
            "wrote shard {spec}: {} units ({} computed, {} resumed) to {} in {:.1} s",
            r.units,
            r.computed,
            r.resumed,
            r.out.display(),
            r.seconds
        );
    }
    Ok(())
}

/// `privalign merge`.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<()> {
    let r = crate::shard::merge::merge(dirs, out)?;
    if r.up_to_date {
        println!(
            "{}: already holds the merged results of these {} shards; nothing to do",
            r.out.display(),
            r.shards
        );
    } else {
        println!(
            "merged {} shards ({} cells) into {} in {:.2} s",
            r.shards,
            r.cells,
            r.out.display(),
            r.seconds
        );
    }
    Ok(())
}

/// `privalign slurm`: validate the config (a typo must not cost a cluster
/// allocation), then write and submit the scripts.
pub fn slurm(o: &crate::slurm::SlurmOptions) -> Result<()> {
    let exp = load_experiment(&o.config, &o.sets)?;
    let outcome = crate::slurm::submit(o, &exp.name)?;
    crate::out!("{}", crate::slurm::report(&outcome))?;
    Ok(())
}

/// `privalign plot`.
pub fn plot(dirs: &[PathBuf], o: &PlotOptions, out: &Path) -> Result<PathBuf> {
    let set = read_results_set(dirs)?;
    plots::plot(&set, o, out)
}

/// `privalign table`.
pub fn table(dirs: &[PathBuf], o: &TableOptions) -> Result<Table> {
    let set = read_results_set(dirs)?;
    tables::table(&set, o)
}

/// `privalign check`: print the comparison table and every claim, then fail
/// (exit 1) naming each number that moved and each claim that failed.
pub fn check(o: &crate::check::CheckOptions) -> Result<()> {
    let r = crate::check::check(o)?;
    crate::out!("{}", r.table.render(Format::Table))?;
    let mut bad = r.failed.clone();
    for c in &r.claims {
        crate::outln!(
            "{} {} [{}]: {}",
            if c.pass { "PASS" } else { "FAIL" },
            c.claim,
            c.scope,
            c.detail
        )?;
        if !c.pass {
            bad.push(format!("claim `{}` [{}]", c.claim, c.scope));
        }
    }
    if !bad.is_empty() {
        anyhow::bail!("{} check(s) failed:\n  {}", bad.len(), bad.join("\n  "));
    }
    crate::outln!(
        "all {} numbers within tolerance{}",
        r.table.rows.len(),
        if r.claims.is_empty() {
            String::new()
        } else {
            format!("; all {} claims hold", r.claims.len())
        }
    )?;
    Ok(())
}
