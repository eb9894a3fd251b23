//! Command-line definitions and dispatch. No logic lives here: each
//! subcommand's flags and their conversion into the library's options live
//! in its module under [`crate::commands`].

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::commands::budget::BudgetArgs;
use crate::commands::experiment::{CheckArgs, FsrcArgs, MergeArgs, SlurmArgs, SweepArgs};
use crate::commands::ingest::IngestArgs;
use crate::commands::report::{DescribeArgs, PlotArgs, TableArgs};
use crate::commands::synth::SynthArgs;
use crate::commands::{budget, experiment, ingest, report, synth};

/// privalign: reproduce "Privacy Without Regret" experiments from precomputed
/// response and reward files — offline, exact and deterministic.
#[derive(Debug, Parser)]
#[command(name = "privalign", version, about, long_about = None)]
#[command(after_help = "Exit codes: 0 success, 1 the run failed, 2 bad usage or bad input.")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate raw score files and write a prepared dataset (scores.parquet + dataset.yaml).
    Ingest(Box<IngestArgs>),
    /// Print a prepared dataset's raw score statistics per reward model, with a suggested clip interval.
    Describe(DescribeArgs),
    /// Generate synthetic raw score files with known ground truth.
    Synth(SynthArgs),
    /// Privacy budgets: the paper's budget table, or one accountant formula at one point.
    Budget(BudgetArgs),
    /// Run an experiment config: every algorithm × σ/β × n × prompt, with bootstrap replicates.
    Sweep(SweepArgs),
    /// Sweep, then render every table and plot the config's `reports` section asks for.
    Reproduce(SweepArgs),
    /// Combine the shard directories of a sharded sweep into one results directory.
    Merge(MergeArgs),
    /// Run a sweep on a Slurm cluster: a job array of shards plus a dependent merge job.
    Slurm(Box<SlurmArgs>),
    /// Run only the config's `fsrc` section (multi-query FSRC composition) and print its table.
    Fsrc(FsrcArgs),
    /// Render one of the paper's tables from results directories (LaTeX by default).
    Table(TableArgs),
    /// Render one of the paper's figures from results directories (PNG and SVG).
    Plot(PlotArgs),
    /// Compare results with their reference numbers (and the paper's claims); non-zero exit if any moved.
    Check(CheckArgs),
    /// Audit a mechanism's privacy: claimed vs exact vs empirical ε on worst-case neighbouring inputs.
    Audit(Box<crate::audit::command::AuditArgs>),
}

/// Run a parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Ingest(a) => ingest::run(*a),
        Command::Describe(a) => report::describe(&a),
        Command::Synth(a) => synth::run(a),
        Command::Budget(a) => budget::run(&a),
        Command::Sweep(a) => experiment::sweep(&a),
        Command::Merge(a) => experiment::merge(&a),
        Command::Reproduce(a) => experiment::reproduce(&a),
        Command::Table(a) => report::table(&a),
        Command::Check(a) => experiment::check(&a),
        Command::Plot(a) => report::plot(&a),
        Command::Slurm(a) => experiment::slurm(*a),
        Command::Fsrc(a) => experiment::fsrc(&a),
        Command::Audit(a) => crate::audit::command::run(&a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// clap's own consistency checks over every subcommand and flag.
    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }
}
