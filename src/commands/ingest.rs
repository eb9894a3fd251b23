//! `privalign ingest`: its flags, their conversion into
//! [`IngestOptions`], and the summary it prints.

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::time::Instant;

use crate::bail_input;
use crate::data::ingest::{IngestOptions, IngestSource, ingest};
use crate::data::nested_jsonl::NestedKeys;

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
    /// groups, or CSV records); smaller uses less memory.
    #[arg(long, value_name = "ROWS", default_value_t = crate::data::ingest::source::DEFAULT_CHUNK_ROWS as u64, value_parser = clap::value_parser!(u64).range(1..))]
    pub chunk_rows: u64,
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

/// The flags of one input form → what `ingest` reads; flags of another form
/// are refused with the flag that belongs.
impl TryFrom<IngestArgs> for IngestOptions {
    type Error = anyhow::Error;

    fn try_from(a: IngestArgs) -> Result<Self> {
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
}

/// Ingest, then print what was written.
pub fn run(a: IngestArgs) -> Result<()> {
    let start = Instant::now();
    let report = ingest(&IngestOptions::try_from(a)?)?;
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
    Ok(())
}
