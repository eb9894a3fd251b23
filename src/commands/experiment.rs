//! The commands that run an experiment config or its results directories:
//! `sweep`, `reproduce`, `fsrc`, `merge`, `slurm` and `check` — their flags
//! and the conversion into the options `pipeline` takes.

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

use crate::bail_input;
use crate::check::CheckOptions;
use crate::pipeline::{self, ExperimentOptions};
use crate::report::format::Format;
use crate::slurm::SlurmOptions;
use crate::threads::resolve_threads;

/// The experiment config and the settings shared by sweep, reproduce and fsrc.
#[derive(Debug, Args)]
pub struct ExperimentArgs {
    /// Experiment config (YAML), e.g. experiments/demo.yaml.
    pub config: PathBuf,
    /// Results directory (default: results/<experiment name>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Worker threads (0 or omitted: one per core; at most 1024). Results do not depend on it.
    #[arg(long, value_name = "K")]
    pub threads: Option<usize>,
    /// Override a config key, e.g. --set algorithms.privbon.sigma=[0.5,1] (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub exp: ExperimentArgs,
    /// Reuse the finished chunks of an interrupted run with the same config hash.
    #[arg(long)]
    pub resume: bool,
    /// Never draw a progress bar (one status line per stage instead).
    #[arg(long)]
    pub no_progress: bool,
    /// Run only shard K of N (0-based) into --out, a shard directory for `privalign merge`.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shard directories (`privalign sweep --shard K/N --out DIR`), all N of them.
    #[arg(required = true, value_name = "DIR")]
    pub shards: Vec<PathBuf>,
    /// The results directory to write (must not exist yet).
    #[arg(long, value_name = "RESULTS")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct SlurmArgs {
    /// Experiment config (YAML), e.g. experiments/demo.yaml.
    pub config: PathBuf,
    /// Number of shards N (array tasks 0 … N-1).
    #[arg(long, value_name = "N")]
    pub shards: usize,
    /// Submission directory: DIR/shards/K, DIR/results, DIR/slurm (scripts, logs, job ids).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Override a config key in every shard, as for sweep (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,
    /// Slurm partition (#SBATCH --partition).
    #[arg(long, value_name = "P")]
    pub partition: Option<String>,
    /// Time limit per array task, e.g. 02:00:00 (#SBATCH --time).
    #[arg(long, value_name = "T")]
    pub time: Option<String>,
    /// CPUs per array task, used as the shard's --threads (default 1).
    #[arg(long, value_name = "C")]
    pub cpus_per_task: Option<usize>,
    /// Memory per array task, e.g. 4G (#SBATCH --mem).
    #[arg(long, value_name = "M")]
    pub mem: Option<String>,
    /// Account to charge (#SBATCH --account).
    #[arg(long, value_name = "A")]
    pub account: Option<String>,
    /// An extra #SBATCH line for both scripts, e.g. --sbatch-line=--qos=high (repeatable).
    #[arg(long = "sbatch-line", value_name = "LINE", allow_hyphen_values = true)]
    pub sbatch_lines: Vec<String>,
    /// Submit the array held; release it with `scontrol release JOBID`.
    #[arg(long)]
    pub hold: bool,
    /// Print the scripts and the sbatch commands; write and submit nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Resubmit only the missing or unfinished shards, plus a new merge job.
    #[arg(long)]
    pub resume: bool,
}

#[derive(Debug, Args)]
pub struct FsrcArgs {
    #[command(flatten)]
    pub exp: ExperimentArgs,
    /// Output format of the printed table.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Results directory, e.g. results/demo.
    #[arg(value_name = "RESULTS")]
    pub results: PathBuf,
    /// Reference numbers (default: RESULTS/reference.yaml).
    #[arg(long, value_name = "FILE")]
    pub reference: Option<PathBuf>,
    /// Rerun the sweep recorded in RESULTS/manifest.yaml first (into a scratch directory).
    #[arg(long)]
    pub recompute: bool,
    /// Rewrite the reference from the results (deliberately!) and print what changed.
    #[arg(long)]
    pub update: bool,
    /// Also evaluate the paper's claims from this file, e.g. experiments/paper-claims.yaml.
    #[arg(long, value_name = "FILE")]
    pub claims: Option<PathBuf>,
    /// Worker threads for --recompute (0 or omitted: one per core; at most 1024).
    #[arg(long, value_name = "K")]
    pub threads: Option<usize>,
}

impl ExperimentArgs {
    fn options(&self, resume: bool, progress: bool) -> Result<ExperimentOptions> {
        Ok(ExperimentOptions {
            config: self.config.clone(),
            sets: self.sets.clone(),
            out: self.out.clone(),
            threads: resolve_threads("--threads", self.threads)?,
            resume,
            progress,
        })
    }
}

impl TryFrom<&SweepArgs> for ExperimentOptions {
    type Error = anyhow::Error;

    fn try_from(a: &SweepArgs) -> Result<Self> {
        a.exp.options(a.resume, !a.no_progress)
    }
}

/// FSRC alone never resumes and draws no progress bar.
impl TryFrom<&FsrcArgs> for ExperimentOptions {
    type Error = anyhow::Error;

    fn try_from(a: &FsrcArgs) -> Result<Self> {
        a.exp.options(false, false)
    }
}

impl TryFrom<&CheckArgs> for CheckOptions {
    type Error = anyhow::Error;

    fn try_from(a: &CheckArgs) -> Result<Self> {
        Ok(CheckOptions {
            results: a.results.clone(),
            reference: a.reference.clone(),
            recompute: a.recompute,
            update: a.update,
            claims: a.claims.clone(),
            threads: resolve_threads("--threads", a.threads)?,
        })
    }
}

impl From<SlurmArgs> for SlurmOptions {
    fn from(a: SlurmArgs) -> Self {
        SlurmOptions {
            config: a.config,
            sets: a.sets,
            shards: a.shards,
            out: a.out,
            partition: a.partition,
            time: a.time,
            cpus_per_task: a.cpus_per_task,
            mem: a.mem,
            account: a.account,
            sbatch_lines: a.sbatch_lines,
            hold: a.hold,
            dry_run: a.dry_run,
            resume: a.resume,
        }
    }
}

/// `privalign sweep` (one machine, or one shard with --shard K/N).
pub fn sweep(a: &SweepArgs) -> Result<()> {
    let o = ExperimentOptions::try_from(a)?;
    match &a.shard {
        Some(s) => pipeline::sweep_shard(&o, s.parse()?)?,
        None => {
            pipeline::sweep(&o)?;
        }
    }
    Ok(())
}

/// `privalign reproduce`: a sweep, then its reports (never a shard).
pub fn reproduce(a: &SweepArgs) -> Result<()> {
    if a.shard.is_some() {
        bail_input!(
            "--shard belongs to `privalign sweep`; run the shards with sweep, combine them with `privalign merge`, then render reports with table/plot"
        );
    }
    pipeline::reproduce(&ExperimentOptions::try_from(a)?)?;
    Ok(())
}

/// `privalign merge`.
pub fn merge(a: &MergeArgs) -> Result<()> {
    pipeline::merge(&a.shards, &a.out)
}

/// `privalign slurm`.
pub fn slurm(a: SlurmArgs) -> Result<()> {
    pipeline::slurm(&SlurmOptions::from(a))?;
    Ok(())
}

/// `privalign fsrc`: run the section and print its table.
pub fn fsrc(a: &FsrcArgs) -> Result<()> {
    let table = pipeline::fsrc(&ExperimentOptions::try_from(a)?)?;
    crate::out!("{}", table.render(a.format))?;
    Ok(())
}

/// `privalign check`.
pub fn check(a: &CheckArgs) -> Result<()> {
    pipeline::check(&CheckOptions::try_from(a)?)?;
    Ok(())
}
