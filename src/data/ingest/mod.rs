//! `privalign ingest`: raw score files → prepared dataset (design §3–§4).
//!
//! All three input forms are turned into *canonical frames* sorted by
//! (prompt_id, response_id) — columns `prompt_id` (Utf8), `response_id`
//! (Int64), `correct` (Float64), optional `gen_seconds`, one Float64 column per
//! reward model (null = unscored) and the source row — and then share one
//! validation and writing path, so equivalent inputs give identical datasets.
//!
//! **Streaming.** Ingest never holds the dataset: it reads each input in
//! chunks of whole parquet row groups or of CSV records ([`source`]), cuts them into ranges of
//! complete prompts (`stream`, which states the row order a file of more
//! than one chunk must have), joins each range's reward rows (`join`),
//! checks it (`checks`), writes it as 32-prompt row groups with their
//! hashes ([`crate::data::layout::LayoutWriter`]) and accumulates the
//! dataset statistics bit-exactly (`manifest`, whose second pass re-reads
//! the staged scores). Peak memory is bounded by the chunk size
//! (`--chunk-rows`, default [`source::DEFAULT_CHUNK_ROWS`]) and the
//! per-prompt index (a few words per prompt), not by the number of rows.
//! JSON inputs (JSON lines, arrays, the nested JSONL) are read whole — their
//! column types come from the whole file. A file of one chunk may be in any
//! row order; with `--in-memory` every file is one chunk.
//!
//! Modules: `pair` and `table` (and [`crate::data::nested_jsonl`]) turn
//! each input form into canonical frames; `join` adds reward files;
//! `checks` validates; `manifest` builds dataset.yaml.
//!
//! Decisions where design §3 is silent:
//! * Reward rows whose (prompt_id, response_id) is not in the responses file are
//!   an error: they almost always mean the files come from different runs.
//! * Without `--response-col`, a flat table's responses are numbered 0, 1, … per
//!   prompt in file order (the nested JSONL's numbering, so the forms agree).
//! * `base_accuracy.mean_over_prompts` averages per-prompt pool means, the base
//!   the per-prompt lift of design §7 is measured against.

mod checks;
mod join;
mod manifest;
mod pair;
pub mod source;
mod stream;
mod table;

use anyhow::{Context, Result};
use std::path::PathBuf;

use super::layout::LayoutWriter;
use super::nested_jsonl::{NestedKeys, read_nested_jsonl};
use super::output;
use super::prepared::DatasetManifest;
use super::read::SourceFile;
use crate::bail_input;
use source::{Chunks, DEFAULT_CHUNK_ROWS};
use stream::{PromptStream, RewardStream};
use table::TableColumns;

/// Which of the three input forms to read.
#[derive(Clone, Debug)]
pub enum IngestSource {
    /// A responses parquet plus one reward parquet per reward model.
    ParquetPair {
        responses: PathBuf,
        rewards: Vec<(String, PathBuf)>,
    },
    /// One flat table (parquet, CSV or JSONL), one row per response.
    Table {
        path: PathBuf,
        prompt_col: String,
        correct_col: String,
        response_col: Option<String>,
        /// (reward model name, column)
        reward_cols: Vec<(String, String)>,
        /// Column with per-response generation time; `None` uses `gen_seconds` if present.
        gen_seconds_col: Option<String>,
        /// Field separator of a delimited text table (`--separator`).
        separator: Option<u8>,
    },
    /// The paper's nested JSONL.
    NestedJsonl { path: PathBuf, keys: NestedKeys },
}

/// Everything `privalign ingest` needs.
#[derive(Clone, Debug)]
pub struct IngestOptions {
    pub source: IngestSource,
    pub out: PathBuf,
    /// Dataset name; defaults to the output directory's name.
    pub name: Option<String>,
    pub policy: Option<String>,
    pub task: Option<String>,
    /// Drop responses that some reward model did not score instead of failing.
    pub drop_unscored: bool,
    /// Replace an existing output directory.
    pub force: bool,
    /// Rows of each input read at a time (whole parquet row groups);
    /// `usize::MAX` reads every file whole (`--in-memory`).
    pub chunk_rows: usize,
}

impl IngestOptions {
    /// A parquet-pair ingest with no labels, no dropping and no replacing —
    /// the common case for programs (benchmarks, tests, sweeps over synthetic data).
    pub fn parquet_pair(responses: PathBuf, rewards: Vec<(String, PathBuf)>, out: PathBuf) -> Self {
        Self {
            source: IngestSource::ParquetPair { responses, rewards },
            out,
            name: None,
            policy: None,
            task: None,
            drop_unscored: false,
            force: false,
            chunk_rows: DEFAULT_CHUNK_ROWS,
        }
    }
}

/// What ingest did, for the CLI to print.
#[derive(Debug)]
pub struct IngestReport {
    pub out: PathBuf,
    pub manifest: DatasetManifest,
}

/// The open inputs of one ingest: the responses (or table) stream and the
/// reward streams, with what the manifest records about them.
struct Inputs {
    responses: PromptStream,
    rewards: Vec<RewardStream>,
    reward_models: Vec<String>,
    form: &'static str,
    files: Vec<(String, PathBuf)>,
    primary: SourceFile,
}

fn open_inputs(opts: &IngestOptions) -> Result<Inputs> {
    let chunk = opts.chunk_rows.max(1);
    match &opts.source {
        IngestSource::ParquetPair { responses, rewards } => {
            if rewards.is_empty() {
                bail_input!(
                    "no reward files given; pass --rewards NAME=PATH once per reward model"
                );
            }
            let mut names: Vec<String> = Vec::new();
            for (n, _) in rewards {
                super::check_reward_model_name(n)?;
                if names.contains(n) {
                    bail_input!(
                        "reward model {n:?} is given twice; each --rewards needs a distinct NAME"
                    );
                }
                names.push(n.clone());
            }
            let ids = [super::cols::PROMPT_ID, super::cols::RESPONSE_ID];
            let src = SourceFile::rows(responses);
            let stream = PromptStream::new(
                Chunks::open(responses, None, &ids, chunk)?,
                pair::responses_canon(src.clone()),
                src.clone(),
                "each (prompt_id, response_id) must appear once",
            );
            let mut streams = Vec::new();
            let mut files = vec![(String::from("responses"), responses.clone())];
            for (name, path) in rewards {
                let rsrc = SourceFile::rows(path);
                streams.push(RewardStream::new(
                    name.clone(),
                    rsrc.clone(),
                    Chunks::open(path, None, &ids, chunk)?,
                    pair::reward_stage1(rsrc),
                ));
                files.push((format!("rewards:{name}"), path.clone()));
            }
            Ok(Inputs {
                responses: stream,
                rewards: streams,
                reward_models: names,
                form: "parquet-pair",
                files,
                primary: src,
            })
        }
        IngestSource::Table {
            path,
            prompt_col,
            correct_col,
            response_col,
            reward_cols,
            gen_seconds_col,
            separator,
        } => {
            let columns = TableColumns {
                prompt: prompt_col.clone(),
                correct: correct_col.clone(),
                response: response_col.clone(),
                rewards: reward_cols.clone(),
                gen_seconds: gen_seconds_col.clone(),
            };
            let src = SourceFile::rows(path);
            let chunks = Chunks::open(path, *separator, &columns.ids(), chunk)?;
            let stream = PromptStream::new(
                chunks,
                table::table_canon(src.clone(), columns)?,
                src.clone(),
                "each (prompt, response) pair must appear once",
            );
            Ok(Inputs {
                responses: stream,
                rewards: Vec::new(),
                reward_models: reward_cols.iter().map(|(n, _)| n.clone()).collect(),
                form: "table",
                files: vec![("table".into(), path.clone())],
                primary: src,
            })
        }
        IngestSource::NestedJsonl { path, keys } => {
            super::check_reward_model_name(&keys.reward_name)?;
            let src = SourceFile::lines(path);
            let df = read_nested_jsonl(path, keys)?;
            let stream = PromptStream::new(
                Chunks::preloaded(path, df),
                Box::new(|df, _| Ok(df)),
                src.clone(),
                "each prompt should appear on one line only",
            );
            Ok(Inputs {
                responses: stream,
                rewards: Vec::new(),
                reward_models: vec![keys.reward_name.clone()],
                form: "nested-jsonl",
                files: vec![("nested-jsonl".into(), path.clone())],
                primary: src,
            })
        }
    }
}

/// One range of complete prompts, joined and checked, ready to write.
struct Range {
    out: polars::prelude::DataFrame,
    offsets: Vec<usize>,
    dropped: usize,
}

/// A reward row that matches no response, or a response without a reward,
/// in a range before the last may only mean that some file is out of prompt
/// order (its rows for this range come later): read the rest of every file
/// through the order checks, and report an order error if there is one —
/// it names the real fix — else `result`'s error.
fn explain<T>(result: Result<T>, inputs: &mut Inputs) -> Result<T> {
    let Err(e) = result else { return result };
    if inputs.responses.finished() {
        return Err(e);
    }
    while inputs.responses.next_range()?.is_some() {}
    for r in &mut inputs.rewards {
        r.check_rest()?;
    }
    Err(e)
}

/// The next range of the dataset, or `None` at the end.
fn next_range(inputs: &mut Inputs, opts: &IngestOptions) -> Result<Option<Range>> {
    let Some(mut frame) = inputs.responses.next_range()? else {
        return Ok(None);
    };
    if !inputs.rewards.is_empty() {
        // Up to this range's last prompt; at the end, every remaining row
        // (rows past the last prompt score no known response).
        let upto = if inputs.responses.finished() {
            None
        } else {
            stream::last_prompt(&frame)?
        };
        // One reward file at a time: its rows of this range, canonical, joined.
        let joiner = join::Joiner::new(&frame)?;
        for i in 0..inputs.rewards.len() {
            let r = &mut inputs.rewards[i];
            let rows = r.take_upto(upto.as_deref())?;
            let keys = inputs.responses.ids.keys.as_ref();
            let rows = pair::reward_rows(&r.name, &r.src, rows, keys);
            let name = r.name.clone();
            let right = explain(rows, inputs)?;
            frame = explain(joiner.join(frame, &name, right), inputs)?;
        }
        if let Some(u) = &upto {
            inputs.responses.ids.retain_from(u);
        }
    }
    let (frame, dropped) = explain(
        checks::handle_unscored(
            frame,
            &inputs.reward_models,
            &inputs.primary,
            opts.drop_unscored,
        ),
        inputs,
    )?;
    checks::check_f32_range(
        &frame,
        &inputs.reward_models,
        &inputs.primary,
        &inputs.files,
    )?;
    let offsets = checks::check_prompt_sizes(&frame, &inputs.primary)?;
    let out = checks::output_frame(&frame, &inputs.reward_models)?;
    Ok(Some(Range {
        out,
        offsets,
        dropped,
    }))
}

/// Run ingest end to end. Nothing is written unless every check passes:
/// the output is staged under hidden names and swapped in at the end.
pub fn ingest(opts: &IngestOptions) -> Result<IngestReport> {
    // Refuse a bad or existing output before doing any work.
    output::check_out(&opts.out, opts.force)?;
    for (what, v) in [
        ("--name", &opts.name),
        ("--policy", &opts.policy),
        ("--task", &opts.task),
    ] {
        if let Some(v) = v {
            output::check_text(what, v)?;
        }
    }
    let mut inputs = open_inputs(opts)?;
    // The first range is read and checked before anything is created, so an
    // input that fails early leaves no trace at all.
    let first = next_range(&mut inputs, opts)?;
    let paths: Vec<PathBuf> = inputs.files.iter().map(|(_, p)| p.clone()).collect();
    output::check_ownership(&opts.out, &paths)?;
    let stage = output::PreparedOutput::new(&opts.out, opts.force)?;
    let mut layout = LayoutWriter::new([stage.scores(), stage.prompts(), stage.blocks()]);
    let mut stats = manifest::Stats::new(&inputs.reward_models);
    let mut dropped = 0;
    let mut range = first;
    while let Some(r) = range {
        dropped += r.dropped;
        stats.push(&r.out, &r.offsets)?;
        layout.push(r.out, &r.offsets)?;
        range = next_range(&mut inputs, opts)?;
    }
    if stats.rows() == 0 {
        bail_input!("{}: no responses left to ingest", inputs.primary.name());
    }
    let integrity = layout.finish()?;
    let finished = stats.finish(stage.scores(), &layout.windows(opts.chunk_rows.max(1)))?;
    let name = match &opts.name {
        Some(n) => n.clone(),
        None => opts
            .out
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "dataset".into()),
    };
    let mut manifest = stats.manifest(finished, name, opts, inputs.form, &inputs.files, dropped)?;
    manifest.integrity = Some(integrity);
    let yaml = yaml_serde::to_string(&manifest)?;
    std::fs::write(stage.manifest(), yaml.as_bytes())
        .with_context(|| format!("writing {}", stage.manifest().display()))?;
    stage.commit()?;
    Ok(IngestReport {
        out: opts.out.clone(),
        manifest,
    })
}

/// The rows' ids and source row numbers: what error messages name a row by.
fn located(
    pid: &polars::prelude::Column,
    rid: &polars::prelude::Column,
    raw: &polars::prelude::DataFrame,
) -> anyhow::Result<polars::prelude::DataFrame> {
    Ok(polars::prelude::DataFrame::new_infer_height(vec![
        pid.clone(),
        rid.clone(),
        raw.column(super::cols::SOURCE_ROW)?.clone(),
    ])?)
}
