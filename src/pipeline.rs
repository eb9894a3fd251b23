//! What the experiment subcommands do, one function each, above `config`,
//! `sweep`, `results` and `report`: load and resolve the config, run, write,
//! say what was written.

use anyhow::Result;
use std::path::{Path, PathBuf};

use crate::config::{self, Experiment};
use crate::fsutil::write_atomic;
use crate::report::format::{Format, Table};
use crate::report::fsrc::fsrc_table;
use crate::report::plots::{self, PlotOptions};
use crate::report::tables::{self, TableOptions};
use crate::results::fsrc::FSRC_FILE;
use crate::results::parquet_io::write_frame;
use crate::results::read::read_results_set;
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

/// `privalign sweep`.
pub fn sweep(o: &ExperimentOptions) -> Result<(Experiment, SweepOutcome)> {
    let exp = load_experiment(&o.config, &o.sets)?;
    if exp.algorithms.is_empty() {
        crate::bail_input!(
            "{}: has no algorithm to sweep, only an `fsrc:` section; run it with `privalign fsrc {}`, or add algorithms (e.g. `bon: {{}}`) and an n grid",
            o.config.display(),
            o.config.display()
        );
    }
    print_units_plan(&exp);
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
    print_units_plan(&exp);
    let threads = o.threads.unwrap_or_else(rayon::current_num_threads);
    let rows = fsrc_only(&exp, threads)?;
    let out = out_dir(o, &exp);
    std::fs::create_dir_all(&out)?;
    let path = out.join(FSRC_FILE);
    write_frame(&path, &mut crate::results::fsrc::fsrc_frame(&rows)?)?;
    eprintln!("wrote {} FSRC runs to {}", rows.len(), path.display());
    Ok(fsrc_table(&rows))
}

/// `privalign reproduce`: sweep, then every table and plot the config's
/// `reports` section asks for, into `<out>/tables` and `<out>/plots`.
pub fn reproduce(o: &ExperimentOptions) -> Result<()> {
    let (exp, outcome) = sweep(o)?;
    let set = read_results_set(std::slice::from_ref(&outcome.out))?;
    let tables_dir = outcome.out.join("tables");
    let table_stems = crate::config::report_names::table_stems(&exp.config.reports);
    let plot_stems = crate::config::report_names::plot_stems(&exp.config.reports);
    for (t, stem) in exp.config.reports.tables.iter().zip(&table_stems) {
        let table = tables::table(
            &set,
            &TableOptions {
                kind: t.kind,
                n: t.n,
                sigma: t.sigma,
                beta: t.beta,
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
        println!("wrote {}", path.display());
    }
    for (p, stem) in exp.config.reports.plots.iter().zip(&plot_stems) {
        let png = plots::plot_as(
            &set,
            &PlotOptions {
                kind: p.kind,
                n: p.n,
                sigma: p.sigma,
                beta: p.beta,
            },
            &outcome.out.join("plots"),
            stem,
        )
        .map_err(|e| e.context(format!("rendering the {:?} plot", p.kind)))?;
        println!("wrote {} (+ .svg)", png.display());
    }
    Ok(())
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
    print!("{}", crate::slurm::report(&outcome));
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
    print!("{}", r.table.render(Format::Table));
    let mut bad = r.failed.clone();
    for c in &r.claims {
        println!(
            "{} {} [{}]: {}",
            if c.pass { "PASS" } else { "FAIL" },
            c.claim,
            c.scope,
            c.detail
        );
        if !c.pass {
            bad.push(format!("claim `{}` [{}]", c.claim, c.scope));
        }
    }
    if !bad.is_empty() {
        anyhow::bail!("{} check(s) failed:\n  {}", bad.len(), bad.join("\n  "));
    }
    println!(
        "all {} numbers within tolerance{}",
        r.table.rows.len(),
        if r.claims.is_empty() {
            String::new()
        } else {
            format!("; all {} claims hold", r.claims.len())
        }
    );
    Ok(())
}
