//! Command-line definitions and dispatch. No logic lives here: each
//! subcommand turns its flags into the library's options and calls it.

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Instant;

use crate::bail_input;
use crate::config::{PlotKind, TableKind};
use crate::data::ingest::{IngestOptions, IngestSource, ingest};
use crate::data::nested_jsonl::NestedKeys;
use crate::data::synth::{Preset, Size, SynthOptions, synth};
use crate::fsutil::write_atomic;
use crate::pipeline::{self, ExperimentOptions};
use crate::privacy::accountant::{
    Phase2Terms, PrivacyParams, phase1_eps_analytic, phase1_eps_classical, privbon_gauss_eps,
    privbon_gumbel_eps, privitp_eps_max,
};
use crate::privacy::budget::{BudgetParams, budget_table, check_scale, check_sigma, point_table};
use crate::report::format::{Format, Table};
use crate::report::plots::PlotOptions;
use crate::report::tables::TableOptions;

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

#[derive(Debug, Args)]
pub struct DescribeArgs {
    /// Prepared dataset directory (`privalign ingest` output), e.g. data/demo/prepared.
    #[arg(value_name = "DATASET")]
    pub dataset: PathBuf,
    /// Output format.
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
    /// The n of the σ/β/privacy-utility plots (default: the largest n).
    #[arg(long)]
    pub n: Option<usize>,
    /// σ of the private algorithms (scaling), or the one PrivITP σ (beta plot).
    #[arg(long)]
    pub sigma: Option<f64>,
    /// β of ITP/PrivITP, when the sweep has several.
    #[arg(long)]
    pub beta: Option<f64>,
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
    /// The n reported (default: the largest n of the sweep).
    #[arg(long)]
    pub n: Option<usize>,
    /// σ of the private algorithms, when the sweep has several.
    #[arg(long)]
    pub sigma: Option<f64>,
    /// β of ITP/PrivITP, when the sweep has several.
    #[arg(long)]
    pub beta: Option<f64>,
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

/// Which accountant quantity `privalign budget` computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BudgetMechanism {
    /// The budget table (tab:budgets) over --sigma values.
    Table,
    /// PrivBoN with Gumbel noise: ε = 2Δ_r/σ.
    Privbon,
    /// PrivBoN with Gaussian noise: pure ε of Gaussian Report Noisy Max (needs --n).
    PrivbonGauss,
    /// PrivITP Phase 1: classical and exact analytic-Gaussian ε_1 (needs --sigma-x).
    PrivitpPhase1,
    /// PrivITP Phase 2: κ, ρ, ε_2^post(t) and its max over t (needs --lambda, --t, --sigma-z).
    PrivitpPhase2,
    /// PrivITP worst case ε_max over outcomes and λ̃ in --clamp (needs --sigma-x, --sigma-z).
    PrivitpMax,
}

/// Values may be negative (`--lambda -0.2`): the parser passes them to
/// validation, which names the flag and its valid range.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct BudgetArgs {
    /// What to compute.
    #[arg(long, value_enum, default_value = "table")]
    pub mechanism: BudgetMechanism,
    /// Total noise σ (table: comma-separated list; PrivITP splits σ_X = σ_Z = σ/2).
    #[arg(long, value_delimiter = ',', default_values_t = [0.1, 0.25, 0.5, 0.75, 1.0])]
    pub sigma: Vec<f64>,
    /// PrivITP Phase-1 noise σ_X.
    #[arg(long)]
    pub sigma_x: Option<f64>,
    /// PrivITP Phase-2 query noise σ_Z.
    #[arg(long)]
    pub sigma_z: Option<f64>,
    /// Upper end of the reward range [0, R_max].
    #[arg(long, default_value_t = 1.0)]
    pub r_max: f64,
    /// Sensitivity Δ_r (default: R_max, the assumption-free bound).
    #[arg(long)]
    pub delta_r: Option<f64>,
    /// δ of Phase 1's (ε, δ) guarantee.
    #[arg(long, default_value_t = 1e-2)]
    pub delta: f64,
    /// Candidates per batch n (the all-rejected outcome costs n·κ).
    #[arg(long, default_value_t = 16)]
    pub n: usize,
    /// Regularisation β (recorded; it cancels from every privacy formula).
    #[arg(long)]
    pub beta: Option<f64>,
    /// Truncation parameter L in M = (R_max + σ_Z·L − λ̃)/β.
    #[arg(long = "L", default_value_t = 4.0)]
    pub l: f64,
    /// Released λ̃ (privitp-phase2).
    #[arg(long)]
    pub lambda: Option<f64>,
    /// Halting time t ∈ [1, n+1] (privitp-phase2; n+1 = all rejected).
    #[arg(long)]
    pub t: Option<usize>,
    /// Mean halting time for the table's ε_2^post.
    #[arg(long, default_value_t = 1.0)]
    pub halting_time: f64,
    /// Clamp interval of λ̃ as LO,HI (default 0,R_max); LO may be negative (`--clamp -0.5,1.5`).
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub clamp: Option<Vec<f64>>,
    /// Use the paper's classical ε_1 (valid only when < 1) instead of the exact analytic one.
    #[arg(long)]
    pub paper_eps1: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Also write the LaTeX rendering to this file.
    #[arg(long, value_name = "FILE")]
    pub latex: Option<PathBuf>,
    /// Replace the --latex file if it exists.
    #[arg(long)]
    pub force: bool,
    /// Build the table from a sweep's results directory: privacy parameters from its
    /// manifest, each σ's PrivITP mean halting time at --n from its summary.
    #[arg(long, value_name = "DIR")]
    pub results: Option<PathBuf>,
}

/// Three input forms; give exactly one of --responses, --table, --nested-jsonl.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("form").required(true).args(["responses", "table", "nested_jsonl"])))]
pub struct IngestArgs {
    /// Form 1: responses parquet with prompt_id, response_id, correct [, gen_seconds].
    #[arg(long, value_name = "PATH", help_heading = "Form 1: parquet pair")]
    pub responses: Option<PathBuf>,
    /// Reward file(s) with prompt_id, response_id, reward: NAME=PATH, or PATH alone
    /// (name = file stem without a leading "rewards_"). Repeat or give several.
    #[arg(long, value_name = "NAME=PATH", num_args = 1.., help_heading = "Form 1: parquet pair")]
    pub rewards: Vec<String>,

    /// Form 2: one flat table (.parquet, .csv or .jsonl), one row per response.
    #[arg(long, value_name = "FILE", help_heading = "Form 2: flat table")]
    pub table: Option<PathBuf>,
    /// Column holding the prompt id (string or integer).
    #[arg(long, value_name = "COLUMN", help_heading = "Form 2: flat table")]
    pub prompt_col: Option<String>,
    /// Column holding correctness (bool, or the true reward in [0, 1]).
    #[arg(long, value_name = "COLUMN", help_heading = "Form 2: flat table")]
    pub correct_col: Option<String>,
    /// Column holding an integer response id; omitted = number responses per prompt in file order.
    #[arg(long, value_name = "COLUMN", help_heading = "Form 2: flat table")]
    pub response_col: Option<String>,
    /// A reward model's column: NAME=COLUMN. Repeat for each reward model.
    #[arg(long, value_name = "NAME=COLUMN", help_heading = "Form 2: flat table")]
    pub reward_col: Vec<String>,
    /// Column of per-response generation seconds (default: `gen_seconds` when present).
    #[arg(long, value_name = "COLUMN", help_heading = "Form 2: flat table")]
    pub gen_seconds_col: Option<String>,
    /// Field separator of a delimited text table (default ',' for .csv, tab for .tsv), e.g. ';'.
    #[arg(long, value_name = "CHAR", help_heading = "Form 2: flat table")]
    pub separator: Option<String>,

    /// Form 3: the paper's nested JSONL, one {"prompt", "responses": [...]} record per line.
    #[arg(long, value_name = "FILE", help_heading = "Form 3: nested JSONL")]
    pub nested_jsonl: Option<PathBuf>,
    /// Name the nested file's reward model gets in the dataset.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "proxy",
        help_heading = "Form 3: nested JSONL"
    )]
    pub reward_name: String,
    /// Key of the reward inside each response object.
    #[arg(
        long,
        value_name = "KEY",
        default_value = "proxy_reward",
        help_heading = "Form 3: nested JSONL"
    )]
    pub reward_key: String,
    /// Key of the prompt (its value becomes the prompt id).
    #[arg(
        long,
        value_name = "KEY",
        default_value = "prompt",
        help_heading = "Form 3: nested JSONL"
    )]
    pub prompt_key: String,
    /// Key of correctness inside each response object.
    #[arg(
        long,
        value_name = "KEY",
        default_value = "is_correct",
        help_heading = "Form 3: nested JSONL"
    )]
    pub correct_key: String,

    /// Output directory of the prepared dataset (e.g. data/gsm8k-phi3).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Dataset name (default: the output directory's name).
    #[arg(long)]
    pub name: Option<String>,
    /// Base policy label recorded in dataset.yaml (e.g. phi-3-mini-instruct).
    #[arg(long)]
    pub policy: Option<String>,
    /// Task label recorded in dataset.yaml (e.g. gsm8k).
    #[arg(long)]
    pub task: Option<String>,
    /// Leave out responses some reward model did not score, instead of failing.
    #[arg(long)]
    pub drop_unscored: bool,
    /// Replace the output directory if it exists.
    #[arg(long)]
    pub force: bool,
    /// Read every input whole (any row order; memory grows with the data)
    /// instead of streaming it in chunks.
    #[arg(long, conflicts_with = "chunk_rows")]
    pub in_memory: bool,
    /// Rows of each input read at a time when streaming (whole parquet row
    /// groups); smaller uses less memory.
    #[arg(long, value_name = "ROWS", default_value_t = crate::data::ingest::source::DEFAULT_CHUNK_ROWS as u64, value_parser = clap::value_parser!(u64).range(1..))]
    pub chunk_rows: u64,
}

#[derive(Debug, Args)]
pub struct SynthArgs {
    /// Which synthetic world: math (binary correctness, reward hacking), gaussian
    /// (r̂ = r* + N(0, σ_r²)), open-ended (continuous gold score).
    #[arg(long, value_enum, default_value = "math")]
    pub preset: Preset,
    /// demo = 100 prompts × 1000 responses; paper = 1000 × 10,000.
    #[arg(long, value_enum, default_value = "demo")]
    pub size: Size,
    /// Number of prompts (overrides --size).
    #[arg(long)]
    pub prompts: Option<usize>,
    /// Responses per prompt (overrides --size).
    #[arg(long)]
    pub responses: Option<usize>,
    /// Reward models, comma-separated (math/open-ended: oasst,gemma,llama,armo;
    /// gaussian: gauss<σ_r>, e.g. gauss0.5).
    #[arg(long, value_delimiter = ',')]
    pub reward_models: Option<Vec<String>>,
    /// Random seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output directory for responses.parquet, rewards_<model>.parquet, synth.yaml.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Replace the output directory if it exists.
    #[arg(long)]
    pub force: bool,
}

/// Split `NAME=VALUE`; a bare path gets its name from the file stem.
fn parse_named(flag: &str, s: &str, bare_ok: bool) -> Result<(String, String)> {
    if let Some((n, v)) = s.split_once('=') {
        if n.is_empty() || v.is_empty() {
            bail_input!("{flag} {s:?}: expected NAME=VALUE with both parts non-empty");
        }
        return Ok((n.to_string(), v.to_string()));
    }
    if bare_ok {
        let stem = std::path::Path::new(s)
            .file_stem()
            .map(|x| x.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = stem.strip_prefix("rewards_").unwrap_or(&stem).to_string();
        if !name.is_empty() {
            return Ok((name, s.to_string()));
        }
    }
    bail_input!("{flag} {s:?}: expected NAME=VALUE, e.g. {flag} armo=...")
}

/// `--separator`: one ASCII character; `\t` or `tab` for a tab.
fn parse_separator(s: &str) -> Result<u8> {
    match s {
        "\\t" | "tab" | "\t" => Ok(b'\t'),
        _ if s.len() == 1 && s.is_ascii() && s != "\"" && s != "\n" => Ok(s.as_bytes()[0]),
        _ => bail_input!(
            "--separator {s:?}: give one ASCII character, e.g. --separator ';' (or --separator tab)"
        ),
    }
}

fn ingest_options(a: IngestArgs) -> Result<IngestOptions> {
    let table_flags = a.prompt_col.is_some()
        || a.correct_col.is_some()
        || a.response_col.is_some()
        || !a.reward_col.is_empty()
        || a.gen_seconds_col.is_some()
        || a.separator.is_some();
    let source = if let Some(responses) = a.responses {
        if table_flags {
            bail_input!(
                "--prompt-col/--correct-col/--response-col/--reward-col/--gen-seconds-col/--separator belong to --table; with --responses the columns are fixed (prompt_id, response_id, correct, reward) in parquet files"
            );
        }
        if a.rewards.is_empty() {
            bail_input!("--responses needs at least one --rewards NAME=PATH");
        }
        let rewards = a
            .rewards
            .iter()
            .map(|s| parse_named("--rewards", s, true).map(|(n, p)| (n, PathBuf::from(p))))
            .collect::<Result<_>>()?;
        IngestSource::ParquetPair { responses, rewards }
    } else if let Some(path) = a.table {
        if !a.rewards.is_empty() {
            bail_input!(
                "--rewards belongs to --responses; with --table name reward columns with --reward-col NAME=COLUMN"
            );
        }
        let (Some(prompt_col), Some(correct_col)) = (a.prompt_col, a.correct_col) else {
            bail_input!("--table needs --prompt-col and --correct-col naming its columns");
        };
        if a.reward_col.is_empty() {
            bail_input!("--table needs at least one --reward-col NAME=COLUMN");
        }
        let reward_cols = a
            .reward_col
            .iter()
            .map(|s| parse_named("--reward-col", s, false))
            .collect::<Result<_>>()?;
        IngestSource::Table {
            path,
            prompt_col,
            correct_col,
            response_col: a.response_col,
            reward_cols,
            gen_seconds_col: a.gen_seconds_col,
            separator: a.separator.as_deref().map(parse_separator).transpose()?,
        }
    } else if let Some(path) = a.nested_jsonl {
        if table_flags || !a.rewards.is_empty() {
            bail_input!(
                "--nested-jsonl takes --reward-name/--reward-key/--prompt-key/--correct-key, not the --table or --responses flags"
            );
        }
        IngestSource::NestedJsonl {
            path,
            keys: NestedKeys {
                prompt: a.prompt_key,
                correct: a.correct_key,
                reward: a.reward_key,
                reward_name: a.reward_name,
                ..NestedKeys::default()
            },
        }
    } else {
        bail_input!("give one input form: --responses, --table or --nested-jsonl");
    };
    Ok(IngestOptions {
        source,
        out: a.out,
        name: a.name,
        policy: a.policy,
        task: a.task,
        drop_unscored: a.drop_unscored,
        force: a.force,
        chunk_rows: if a.in_memory {
            usize::MAX
        } else {
            usize::try_from(a.chunk_rows).unwrap_or(usize::MAX)
        },
    })
}

fn need<T: Copy>(v: Option<T>, flag: &str, mech: &str) -> Result<T> {
    match v {
        Some(x) => Ok(x),
        None => bail_input!("--mechanism {mech} needs {flag}"),
    }
}

/// Build the table `privalign budget` prints.
fn budget(a: &BudgetArgs) -> Result<Table> {
    crate::config::limits::check_n("--n", a.n)?;
    if let Some(dir) = &a.results {
        if a.mechanism != BudgetMechanism::Table {
            bail_input!(
                "--results reads mean halting times for the budget table; drop --mechanism or use --mechanism table"
            );
        }
        return pipeline::table(
            std::slice::from_ref(dir),
            &TableOptions {
                kind: TableKind::Budget,
                n: Some(a.n),
                sigma: None,
                beta: None,
                bold_best: false,
            },
        );
    }
    let delta_r = a.delta_r.unwrap_or(a.r_max);
    let clamp = match a.clamp.as_deref() {
        Some(&[lo, hi]) => (lo, hi),
        Some(v) => bail_input!(
            "--clamp takes two numbers LO,HI (got {} values), e.g. --clamp 0,1",
            v.len()
        ),
        None => (0.0, a.r_max),
    };
    let p = BudgetParams {
        privacy: PrivacyParams {
            r_max: a.r_max,
            delta_r,
            delta: a.delta,
            paper_eps1: a.paper_eps1,
        },
        n: a.n,
        l: a.l,
        clamp,
    };
    p.validate()?;
    if let Some(b) = a.beta {
        check_sigma("--beta", b)?;
    }
    let one_sigma = || -> Result<f64> {
        if a.sigma.len() != 1 {
            bail_input!(
                "--mechanism {:?} takes one --sigma value (got {})",
                a.mechanism,
                a.sigma.len()
            );
        }
        check_scale(&p, "--sigma", a.sigma[0], None)?;
        Ok(a.sigma[0])
    };
    let desc = format!(
        "R_max = {}, Δ_r = {delta_r}, δ = {}, n = {}, L = {}",
        a.r_max, a.delta, a.n, a.l
    );
    Ok(match a.mechanism {
        BudgetMechanism::Table => budget_table(&p, &a.sigma, a.halting_time)?,
        BudgetMechanism::Privbon => {
            let s = one_sigma()?;
            point_table(
                vec![
                    ("sigma", "σ", s),
                    ("eps", "ε", privbon_gumbel_eps(delta_r, s)),
                ],
                desc,
            )
        }
        BudgetMechanism::PrivbonGauss => {
            let s = one_sigma()?;
            if let Err(m) = crate::privacy::rnm::check_range(a.r_max, delta_r, s, a.n) {
                bail_input!("--mechanism privbon-gauss: {m}");
            }
            point_table(
                vec![
                    ("sigma", "σ", s),
                    ("eps", "ε", privbon_gauss_eps(a.r_max, delta_r, s, a.n)),
                ],
                desc,
            )
        }
        BudgetMechanism::PrivitpPhase1 => {
            let sx = need(a.sigma_x, "--sigma-x", "privitp-phase1")?;
            check_scale(&p, "--sigma-x", sx, None)?;
            let c = phase1_eps_classical(delta_r, sx, a.delta);
            point_table(
                vec![
                    ("sigma_x", "σ_X", sx),
                    (
                        "eps1_analytic",
                        "ε_1 analytic",
                        phase1_eps_analytic(delta_r, sx, a.delta),
                    ),
                    ("eps1_classical", "ε_1 classical", c),
                    (
                        "classical_valid",
                        "classical valid (1/0)",
                        if c < 1.0 { 1.0 } else { 0.0 },
                    ),
                ],
                desc,
            )
        }
        BudgetMechanism::PrivitpPhase2 => {
            let lt = need(a.lambda, "--lambda", "privitp-phase2")?;
            let t = need(a.t, "--t", "privitp-phase2")?;
            let sz = need(a.sigma_z, "--sigma-z", "privitp-phase2")?;
            if !lt.is_finite() {
                bail_input!("--lambda must be a finite number");
            }
            check_scale(&p, "--sigma-z", sz, Some(lt))?;
            if !(1..=a.n + 1).contains(&t) {
                bail_input!(
                    "--t must lie in [1, n+1] = [1, {}] (got {t}); t = n+1 means all n candidates were rejected",
                    a.n + 1
                );
            }
            let terms = Phase2Terms::new(lt, sz, a.r_max, delta_r, a.l);
            crate::privacy::budget::check_condition(&terms, "--delta-r", delta_r, sz)?;
            point_table(
                vec![
                    ("lambda", "λ̃", lt),
                    ("t", "t", t as f64),
                    ("kappa", "κ", terms.kappa),
                    ("rho", "ρ", terms.accept),
                    ("eps2_post", "ε_2^post(t)", terms.eps_post(t, a.n)),
                    ("eps2_max", "max_t ε_2^post", terms.eps_max_over_t(a.n)),
                ],
                desc,
            )
        }
        BudgetMechanism::PrivitpMax => {
            let sx = need(a.sigma_x, "--sigma-x", "privitp-max")?;
            let sz = need(a.sigma_z, "--sigma-z", "privitp-max")?;
            check_scale(&p, "--sigma-x", sx, None)?;
            check_scale(&p, "--sigma-z", sz, None)?;
            for lt in [clamp.0, 0.5 * (clamp.0 + clamp.1), clamp.1] {
                let t = Phase2Terms::new(lt, sz, a.r_max, delta_r, a.l);
                crate::privacy::budget::check_condition(&t, "--delta-r", delta_r, sz)?;
            }
            let eps1 = p.privacy.phase1_eps(sx);
            point_table(
                vec![
                    ("eps1", "ε_1", eps1),
                    (
                        "eps_max",
                        "ε_max",
                        privitp_eps_max(eps1, clamp, sz, a.r_max, delta_r, a.l, a.n),
                    ),
                ],
                format!("{desc}, λ̃ ∈ [{}, {}]", clamp.0, clamp.1),
            )
        }
    })
}

/// Run a parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Ingest(a) => {
            let start = Instant::now();
            let report = ingest(&ingest_options(*a)?)?;
            let m = &report.manifest;
            crate::outln!(
                "ingested {} prompts, {} responses, reward models [{}] into {}",
                m.counts.prompts,
                m.counts.responses,
                m.reward_models.join(", "),
                report.out.display()
            )?;
            crate::outln!(
                "responses per prompt {}..{} (median {}); base accuracy {:.4} (mean over prompts); correctness {}{}",
                m.counts.responses_per_prompt_min,
                m.counts.responses_per_prompt_max,
                m.counts.responses_per_prompt_median,
                m.base_accuracy.mean_over_prompts,
                m.correct_kind,
                if m.source.dropped_unscored > 0 {
                    format!("; dropped {} unscored responses", m.source.dropped_unscored)
                } else {
                    String::new()
                }
            )?;
            eprintln!("ingest took {:.2} s", start.elapsed().as_secs_f64());
        }
        Command::Describe(a) => {
            let table = crate::data::describe::describe(&a.dataset)?;
            crate::out!("{}", table.render(a.format))?;
        }
        Command::Synth(a) => {
            let (p, n) = a.size.dims();
            let opts = SynthOptions {
                preset: a.preset,
                prompts: a.prompts.unwrap_or(p),
                responses: a.responses.unwrap_or(n),
                reward_models: a.reward_models,
                seed: a.seed,
                out: a.out,
                force: a.force,
            };
            let start = Instant::now();
            let out = synth(&opts)?;
            crate::outln!(
                "wrote {} prompts × {} responses ({:?} preset) to {}",
                opts.prompts,
                opts.responses,
                opts.preset,
                out.display()
            )?;
            eprintln!("synth took {:.2} s", start.elapsed().as_secs_f64());
        }
        Command::Budget(a) => {
            if let Some(path) = &a.latex {
                crate::fsutil::check_new_file(path, "--latex", a.force)?;
            }
            let table = budget(&a)?;
            crate::out!("{}", table.render(a.format))?;
            if let Some(path) = &a.latex {
                write_atomic(path, table.render(Format::Latex).as_bytes())?;
                eprintln!("wrote {}", path.display());
            }
        }
        Command::Sweep(a) => {
            let o = experiment_options(&a.exp, a.resume, !a.no_progress)?;
            match &a.shard {
                Some(s) => pipeline::sweep_shard(&o, s.parse()?)?,
                None => {
                    pipeline::sweep(&o)?;
                }
            }
        }
        Command::Merge(a) => pipeline::merge(&a.shards, &a.out)?,
        Command::Reproduce(a) => {
            if a.shard.is_some() {
                bail_input!(
                    "--shard belongs to `privalign sweep`; run the shards with sweep, combine them with `privalign merge`, then render reports with table/plot"
                );
            }
            pipeline::reproduce(&experiment_options(&a.exp, a.resume, !a.no_progress)?)?;
        }
        Command::Table(a) => {
            if let Some(path) = &a.out {
                crate::fsutil::check_new_file(path, "--out", a.force)?;
            }
            let kind = match a.kind {
                TableKindArg::Lift => Some(TableKind::Lift),
                TableKindArg::Winrate => Some(TableKind::Winrate),
                TableKindArg::Budget => Some(TableKind::Budget),
                TableKindArg::Fsrc => Some(TableKind::Fsrc),
                TableKindArg::Generation => Some(TableKind::Generation),
                TableKindArg::Audit => None, // read from audit.json
            };
            let table = match kind {
                None => crate::audit::view::table(&a.results)?,
                Some(kind) => pipeline::table(
                    &a.results,
                    &TableOptions {
                        kind,
                        n: a.n,
                        sigma: a.sigma,
                        beta: a.beta,
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
        }
        Command::Check(a) => {
            pipeline::check(&crate::check::CheckOptions {
                results: a.results.clone(),
                reference: a.reference.clone(),
                recompute: a.recompute,
                update: a.update,
                claims: a.claims.clone(),
                threads: crate::threads::resolve_threads("--threads", a.threads)?,
            })?;
        }
        Command::Plot(a) => {
            let kind = match a.kind {
                PlotKindArg::Scaling => Some(PlotKind::Scaling),
                PlotKindArg::Sigma => Some(PlotKind::Sigma),
                PlotKindArg::Beta => Some(PlotKind::Beta),
                PlotKindArg::PrivacyUtility => Some(PlotKind::PrivacyUtility),
                PlotKindArg::Fsrc => Some(PlotKind::Fsrc),
                PlotKindArg::Audit => None, // read from audit.json
            };
            let out = a.out.clone().unwrap_or_else(|| a.results[0].join("plots"));
            let stem = out.join(kind.map_or("audit", crate::report::plots::stem));
            for ext in ["png", "svg"] {
                crate::fsutil::check_new_file(&stem.with_extension(ext), "plot", a.force)?;
            }
            let png = match kind {
                None => crate::audit::view::plot(&a.results, &out)?,
                Some(kind) => pipeline::plot(
                    &a.results,
                    &PlotOptions {
                        kind,
                        n: a.n,
                        sigma: a.sigma,
                        beta: a.beta,
                    },
                    &out,
                )?,
            };
            crate::outln!(
                "wrote {} and {}",
                png.display(),
                png.with_extension("svg").display()
            )?;
        }
        Command::Slurm(a) => {
            let a = *a;
            pipeline::slurm(&crate::slurm::SlurmOptions {
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
            })?;
        }
        Command::Fsrc(a) => {
            let table = pipeline::fsrc(&experiment_options(&a.exp, false, false)?)?;
            crate::out!("{}", table.render(a.format))?;
        }
        Command::Audit(a) => crate::audit::command::run(&a)?,
    }
    Ok(())
}

fn experiment_options(
    a: &ExperimentArgs,
    resume: bool,
    progress: bool,
) -> Result<ExperimentOptions> {
    Ok(ExperimentOptions {
        config: a.config.clone(),
        sets: a.sets.clone(),
        out: a.out.clone(),
        threads: crate::threads::resolve_threads("--threads", a.threads)?,
        resume,
        progress,
    })
}
