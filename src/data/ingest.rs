//! `privalign ingest`: raw score files → prepared dataset (design §3–§4).
//!
//! All three input forms are first turned into one *canonical frame* sorted by
//! (prompt_id, response_id) — columns `prompt_id` (Utf8), `response_id`
//! (Int64), `correct` (Float64), optional `gen_seconds`, one Float64 column per
//! reward model (null = unscored) and the source row — and then share one
//! validation and writing path, so equivalent inputs give identical datasets.
//!
//! Decisions where design §3 is silent:
//! * Reward rows whose (prompt_id, response_id) is not in the responses file are
//!   an error: they almost always mean the files come from different runs.
//! * Without `--response-col`, a flat table's responses are numbered 0, 1, … per
//!   prompt in file order (the nested JSONL's numbering, so the forms agree).
//! * `base_accuracy.mean_over_prompts` averages per-prompt pool means, the base
//!   the per-prompt lift of design §7 is measured against.

use anyhow::{Context, Result};
use polars::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::cols;
use super::ids::{IdRole, ResponseKeys, response_ids};
use super::nested_jsonl::{NestedKeys, read_nested_jsonl};
use super::output;
use super::prepared::{
    self, BaseAccuracy, Counts, DatasetManifest, SourceFileInfo, SourceInfo, prompt_offsets,
};
use super::read::{self, SourceFile};
use crate::bail_input;
use crate::fsutil::sha256_file;

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
        }
    }
}

/// What ingest did, for the CLI to print.
#[derive(Debug)]
pub struct IngestReport {
    pub out: PathBuf,
    pub manifest: DatasetManifest,
}

/// Run ingest end to end. Nothing is written unless every check passes.
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
    let (frame, reward_models, form, files) = match &opts.source {
        IngestSource::ParquetPair { responses, rewards } => {
            let (df, names) = canonical_from_pair(responses, rewards)?;
            let mut files = vec![(String::from("responses"), responses.clone())];
            files.extend(
                rewards
                    .iter()
                    .map(|(n, p)| (format!("rewards:{n}"), p.clone())),
            );
            (df, names, "parquet-pair", files)
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
            let df = canonical_from_table(
                path,
                prompt_col,
                correct_col,
                response_col.as_deref(),
                reward_cols,
                gen_seconds_col.as_deref(),
                *separator,
            )?;
            let names = reward_cols.iter().map(|(n, _)| n.clone()).collect();
            (df, names, "table", vec![("table".into(), path.clone())])
        }
        IngestSource::NestedJsonl { path, keys } => {
            super::check_reward_model_name(&keys.reward_name)?;
            let src = SourceFile::lines(path);
            let df = read::sort_by_key(&read_nested_jsonl(path, keys)?)?;
            reject_duplicates(&df, &src, "each prompt should appear on one line only")?;
            (
                df,
                vec![keys.reward_name.clone()],
                "nested-jsonl",
                vec![("nested-jsonl".into(), path.clone())],
            )
        }
    };
    let primary = match &opts.source {
        IngestSource::ParquetPair { responses, .. } => SourceFile::rows(responses),
        IngestSource::Table { path, .. } => SourceFile::rows(path),
        IngestSource::NestedJsonl { path, .. } => SourceFile::lines(path),
    };
    let inputs: Vec<PathBuf> = files.iter().map(|(_, p)| p.clone()).collect();
    output::check_ownership(&opts.out, &inputs)?;
    let (frame, dropped) = handle_unscored(frame, &reward_models, &primary, opts.drop_unscored)?;
    check_f32_range(&frame, &reward_models, &primary, &files)?;
    let offsets = check_prompt_sizes(&frame, &primary)?;
    let mut out_df = output_frame(&frame, &reward_models)?;
    drop(frame);

    let name = match &opts.name {
        Some(n) => n.clone(),
        None => opts
            .out
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "dataset".into()),
    };
    let manifest = build_manifest(
        &out_df,
        &offsets,
        &reward_models,
        name,
        opts,
        form,
        &files,
        dropped,
    )?;

    let mut manifest = manifest;
    for m in &reward_models {
        let raw: Vec<f32> = out_df.column(m)?.f32()?.into_no_null_iter().collect();
        manifest
            .transform_stats
            .insert(m.clone(), prepared::TransformStats::of(&raw));
    }
    let stage = output::PreparedOutput::new(&opts.out, opts.force)?;
    manifest.integrity = Some(super::layout::write_layout(
        [stage.scores(), stage.prompts(), stage.blocks()],
        &mut out_df,
        &offsets,
    )?);
    let yaml = yaml_serde::to_string(&manifest)?;
    std::fs::write(stage.manifest(), yaml.as_bytes())
        .with_context(|| format!("writing {}", stage.manifest().display()))?;
    stage.commit()?;
    Ok(IngestReport {
        out: opts.out.clone(),
        manifest,
    })
}

/// Canonical frame from a responses parquet and one reward parquet per model.
fn canonical_from_pair(
    responses: &Path,
    rewards: &[(String, PathBuf)],
) -> Result<(DataFrame, Vec<String>)> {
    if rewards.is_empty() {
        bail_input!("no reward files given; pass --rewards NAME=PATH once per reward model");
    }
    let mut names: Vec<String> = Vec::new();
    for (n, _) in rewards {
        super::check_reward_model_name(n)?;
        if names.contains(n) {
            bail_input!("reward model {n:?} is given twice; each --rewards needs a distinct NAME");
        }
        names.push(n.clone());
    }
    let src = SourceFile::rows(responses);
    let raw = read::read_table_ids(responses, None, &[cols::PROMPT_ID, cols::RESPONSE_ID])?;
    let fix_cols = "the responses file needs prompt_id, response_id and correct columns (or use --table with --prompt-col/--correct-col to name other columns)";
    let mut columns = vec![read::prompt_id_column(
        read::require_column(&raw, &src, cols::PROMPT_ID, fix_cols)?,
        &src,
        &raw,
    )?];
    // Build step by step so later checks can name the prompt of a bad row.
    let with_pid = DataFrame::new_infer_height(vec![
        columns[0].clone(),
        raw.column(cols::SOURCE_ROW)?.clone(),
    ])?;
    let (rid, keys) = response_ids(
        read::require_column(&raw, &src, cols::RESPONSE_ID, fix_cols)?,
        &src,
        &with_pid,
        IdRole::Define,
    )?;
    columns.push(rid);
    let located = DataFrame::new_infer_height(vec![
        columns[0].clone(),
        columns[1].clone(),
        raw.column(cols::SOURCE_ROW)?.clone(),
    ])?;
    columns.push(read::correct_column(
        read::require_column(&raw, &src, cols::CORRECT, fix_cols)?,
        &src,
        &located,
    )?);
    if let Ok(g) = raw.column(cols::GEN_SECONDS) {
        columns.push(read::gen_seconds_column(g, &src, &located)?);
    }
    columns.push(raw.column(cols::SOURCE_ROW)?.clone());
    drop(raw);
    let mut frame = read::sort_by_key(&DataFrame::new_infer_height(columns)?)?;
    reject_duplicates(
        &frame,
        &src,
        "each (prompt_id, response_id) must appear once",
    )?;

    match KeyIndex::build(&frame)? {
        Some(index) => {
            for (name, path) in rewards {
                frame = join_rewards_keyed(frame, &index, name, path, keys.as_ref())?;
            }
        }
        None => {
            for (name, path) in rewards {
                frame = join_rewards(frame, name, path, keys.as_ref())?;
            }
        }
    }
    Ok((frame, names))
}

/// One reward file, canonicalised: prompt_id, response_id, the reward (named
/// after the model) and `__row_NAME` (its source rows, for error messages).
fn read_reward_file(
    name: &str,
    path: &Path,
    keys: Option<&ResponseKeys>,
) -> Result<(DataFrame, SourceFile, String)> {
    let src = SourceFile::rows(path);
    let raw = read::read_table_ids(path, None, &[cols::PROMPT_ID, cols::RESPONSE_ID])?;
    let fix = "a reward file needs prompt_id, response_id and reward columns";
    let pid = read::prompt_id_column(
        read::require_column(&raw, &src, cols::PROMPT_ID, fix)?,
        &src,
        &raw,
    )?;
    let with_pid =
        DataFrame::new_infer_height(vec![pid.clone(), raw.column(cols::SOURCE_ROW)?.clone()])?;
    let (rid, _) = response_ids(
        read::require_column(&raw, &src, cols::RESPONSE_ID, fix)?,
        &src,
        &with_pid,
        IdRole::Lookup(keys),
    )?;
    let located = DataFrame::new_infer_height(vec![
        pid.clone(),
        rid.clone(),
        raw.column(cols::SOURCE_ROW)?.clone(),
    ])?;
    let reward = read::reward_column(
        read::require_column(&raw, &src, cols::REWARD, fix)?,
        &src,
        &located,
        name,
    )?;
    let row_col = format!("__row_{name}");
    let right = DataFrame::new_infer_height(vec![
        pid,
        rid,
        reward,
        raw.column(cols::SOURCE_ROW)?
            .clone()
            .with_name(row_col.as_str().into()),
    ])?;
    Ok((right, src, row_col))
}

fn left_join_in_order(left: &DataFrame, right: &DataFrame, keys: &[&str]) -> Result<DataFrame> {
    let mut args = JoinArgs::new(JoinType::Left);
    args.maintain_order = MaintainOrderJoin::Left;
    Ok(left.join(right, keys, keys, args, None)?)
}

/// " (N duplicates in all)" when there is more than one.
fn duplicates_in_all(n: usize) -> String {
    if n > 1 {
        format!(" ({n} duplicates in all)")
    } else {
        String::new()
    }
}

/// The error for a reward file that scores one response twice.
fn duplicate_reward_error(
    src: &SourceFile,
    rows: (AnyValue, AnyValue),
    prompt: &str,
    response: i64,
    n: usize,
) -> anyhow::Error {
    crate::error::input_error(format!(
        "{}: {}s {} and {} both score (prompt {prompt:?}, response {response}){}; each response needs exactly one reward per model",
        src.name(),
        src.row_word,
        rows.0,
        rows.1,
        duplicates_in_all(n)
    ))
}

/// The error for reward rows that score no known response.
fn orphan_error(
    src: &SourceFile,
    row: AnyValue,
    prompt: &str,
    response: i64,
    n: usize,
) -> anyhow::Error {
    crate::error::input_error(format!(
        "{}: {} {row} (prompt {prompt:?}, response {response}) scores a response that is not in the responses file ({n} such rows); check that both files come from the same generation run",
        src.name(),
        src.row_word,
    ))
}

/// A compact join key for the sorted responses: the prompt's rank in sort
/// order in the high 32 bits, the response id in the low 32. Joining on one
/// u64 instead of (string, i64) cuts the join's memory by more than half and
/// its time several-fold at 10M rows (README, "Benchmarks"); keys sort like
/// the (prompt_id, response_id) pairs they encode.
struct KeyIndex {
    prompts: Vec<String>,
    codes: HashMap<String, u32>,
    /// `__key` of each row of the sorted responses frame.
    keys: Column,
}

const KEY: &str = "__key";

impl KeyIndex {
    /// `None` when some response id is outside [0, 2³²) (the general join is used).
    fn build(frame: &DataFrame) -> Result<Option<Self>> {
        let pid = frame.column(cols::PROMPT_ID)?.str()?;
        let rid = frame.column(cols::RESPONSE_ID)?.i64()?;
        let mut prompts: Vec<String> = Vec::new();
        let mut codes = HashMap::new();
        let mut keys = Vec::with_capacity(frame.height());
        for (p, r) in pid.iter().zip(rid.iter()) {
            let (Some(p), Some(r)) = (p, r) else {
                return Ok(None);
            };
            let Ok(r) = u32::try_from(r) else {
                return Ok(None);
            };
            if prompts.last().map(String::as_str) != Some(p) {
                codes.insert(p.to_string(), prompts.len() as u32);
                prompts.push(p.to_string());
            }
            keys.push((u64::from(prompts.len() as u32 - 1) << 32) | u64::from(r));
        }
        Ok(Some(Self {
            prompts,
            codes,
            keys: Column::new(KEY.into(), keys),
        }))
    }

    fn describe(&self, key: u64) -> (&str, i64) {
        (
            &self.prompts[(key >> 32) as usize],
            (key & 0xffff_ffff) as i64,
        )
    }
}

/// Add one reward file's column to the (sorted) responses frame through the
/// compact key, checking the reward file's own rows: types, NaN, duplicates
/// and orphans.
fn join_rewards_keyed(
    mut frame: DataFrame,
    index: &KeyIndex,
    name: &str,
    path: &Path,
    keys: Option<&ResponseKeys>,
) -> Result<DataFrame> {
    let (right, src, row_col) = read_reward_file(name, path, keys)?;
    let rw_rows = right.height();
    // Right-side keys; a prompt or id the responses cannot have is an orphan at once.
    let mut keys = Vec::with_capacity(rw_rows);
    let mut orphan: Option<usize> = None;
    let mut orphans = 0;
    {
        let pid = right.column(cols::PROMPT_ID)?.str()?;
        let rid = right.column(cols::RESPONSE_ID)?.i64()?;
        for (i, (p, r)) in pid.iter().zip(rid.iter()).enumerate() {
            let code = p.and_then(|p| index.codes.get(p));
            match (code, r.and_then(|r| u32::try_from(r).ok())) {
                (Some(&c), Some(r)) => keys.push((u64::from(c) << 32) | u64::from(r)),
                _ => {
                    orphans += 1;
                    orphan.get_or_insert(i);
                    keys.push(u64::MAX);
                }
            }
        }
    }
    if let Some(i) = orphan {
        bail_orphan(&right, &src, &row_col, i, orphans)?;
    }
    let slim_right = DataFrame::new_infer_height(vec![
        Column::new(KEY.into(), keys),
        right.column(name)?.clone(),
        right.column(&row_col)?.clone(),
    ])?;
    let slim_left = DataFrame::new_infer_height(vec![index.keys.clone()])?;
    let joined = left_join_in_order(&slim_left, &slim_right, &[KEY])?;
    if joined.height() != frame.height() {
        // A response matched several reward rows: the reward file repeats a key.
        let k = joined.column(KEY)?.u64()?;
        let (mut first, mut n) = (None, 0);
        for i in 1..k.len() {
            if k.get(i) == k.get(i - 1) {
                n += 1;
                first.get_or_insert(i - 1);
            }
        }
        let i = first.unwrap_or(0);
        let r = joined.column(&row_col)?;
        let (prompt, response) = index.describe(k.get(i).unwrap_or(0));
        return Err(duplicate_reward_error(
            &src,
            (r.get(i)?, r.get(i + 1)?),
            prompt,
            response,
            n,
        ));
    }
    let matched = joined.height() - joined.column(&row_col)?.null_count();
    if matched < rw_rows {
        // Known prompt, unknown response id: find the first such reward row.
        let present = DataFrame::new_infer_height(vec![
            index.keys.clone(),
            Column::new("__present".into(), vec![true; frame.height()]),
        ])?;
        let marked = left_join_in_order(&slim_right, &present, &[KEY])?;
        let i = marked
            .column("__present")?
            .is_null()
            .iter()
            .position(|b| b == Some(true))
            .unwrap_or(0);
        let row = marked.column(&row_col)?.get(i)?;
        let (prompt, response) = index.describe(marked.column(KEY)?.u64()?.get(i).unwrap_or(0));
        return Err(orphan_error(&src, row, prompt, response, rw_rows - matched));
    }
    frame.with_column(joined.column(name)?.clone())?;
    Ok(frame)
}

/// (prompt_id, response_id) of row `i` of a canonical frame.
fn ids_at(df: &DataFrame, i: usize) -> Result<(String, i64)> {
    let prompt = df
        .column(cols::PROMPT_ID)?
        .str()?
        .get(i)
        .unwrap_or_default();
    let response = df
        .column(cols::RESPONSE_ID)?
        .i64()?
        .get(i)
        .unwrap_or_default();
    Ok((prompt.to_string(), response))
}

fn bail_orphan(
    right: &DataFrame,
    src: &SourceFile,
    row_col: &str,
    i: usize,
    n: usize,
) -> Result<()> {
    let (prompt, response) = ids_at(right, i)?;
    Err(orphan_error(
        src,
        right.column(row_col)?.get(i)?,
        &prompt,
        response,
        n,
    ))
}

/// The general path (response ids outside u32): left-join on (prompt_id,
/// response_id) directly, with the same checks.
fn join_rewards(
    frame: DataFrame,
    name: &str,
    path: &Path,
    keys: Option<&ResponseKeys>,
) -> Result<DataFrame> {
    let (right, src, row_col) = read_reward_file(name, path, keys)?;
    let rw_rows = right.height();
    let keys = [cols::PROMPT_ID, cols::RESPONSE_ID];
    let joined = left_join_in_order(&frame, &right, &keys)?;
    if joined.height() != frame.height()
        && let Some((i, n)) = read::adjacent_duplicate(&joined)?
    {
        let r = joined.column(&row_col)?;
        let (prompt, response) = ids_at(&joined, i)?;
        return Err(duplicate_reward_error(
            &src,
            (r.get(i)?, r.get(i + 1)?),
            &prompt,
            response,
            n,
        ));
    }
    let matched = joined.height() - joined.column(&row_col)?.null_count();
    if matched < rw_rows {
        let present = DataFrame::new_infer_height(vec![
            frame.column(cols::PROMPT_ID)?.clone(),
            frame.column(cols::RESPONSE_ID)?.clone(),
            Column::new("__present".into(), vec![true; frame.height()]),
        ])?;
        let marked = left_join_in_order(&right, &present, &keys)?;
        let i = marked
            .column("__present")?
            .is_null()
            .iter()
            .position(|b| b == Some(true))
            .unwrap_or(0);
        bail_orphan(&marked, &src, &row_col, i, rw_rows - matched)?;
    }
    drop(frame);
    Ok(joined.drop(&row_col)?)
}

/// Canonical frame from one flat table with user-named columns.
fn canonical_from_table(
    path: &Path,
    prompt_col: &str,
    correct_col: &str,
    response_col: Option<&str>,
    reward_cols: &[(String, String)],
    gen_seconds_col: Option<&str>,
    separator: Option<u8>,
) -> Result<DataFrame> {
    if reward_cols.is_empty() {
        bail_input!("no reward columns given; pass --reward-col NAME=COLUMN once per reward model");
    }
    let src = SourceFile::rows(path);
    let ids: Vec<&str> = std::iter::once(prompt_col).chain(response_col).collect();
    let raw = read::read_table_ids(path, separator, &ids)?;
    let pid = read::prompt_id_column(
        read::require_column(&raw, &src, prompt_col, "pass the right --prompt-col")?,
        &src,
        &raw,
    )?;
    let rid = match response_col {
        Some(c) => {
            let with_pid = DataFrame::new_infer_height(vec![
                pid.clone(),
                raw.column(cols::SOURCE_ROW)?.clone(),
            ])?;
            response_ids(
                read::require_column(
                    &raw,
                    &src,
                    c,
                    "pass the right --response-col, or omit it to number responses in file order",
                )?,
                &src,
                &with_pid,
                IdRole::Define,
            )?
            .0
        }
        None => {
            let mut next: HashMap<&str, i64> = HashMap::new();
            let ids: Vec<i64> = pid
                .str()?
                .iter()
                .map(|p| {
                    let p = p.unwrap_or_default();
                    let k = next.entry(p).or_insert(0);
                    *k += 1;
                    *k - 1
                })
                .collect();
            Column::new(cols::RESPONSE_ID.into(), ids)
        }
    };
    let located = DataFrame::new_infer_height(vec![
        pid.clone(),
        rid.clone(),
        raw.column(cols::SOURCE_ROW)?.clone(),
    ])?;
    let mut columns = vec![pid, rid];
    columns.push(read::correct_column(
        read::require_column(&raw, &src, correct_col, "pass the right --correct-col")?,
        &src,
        &located,
    )?);
    let gen_secs = match gen_seconds_col {
        Some(c) => Some(read::require_column(
            &raw,
            &src,
            c,
            "pass the right --gen-seconds-col",
        )?),
        None => raw.column(cols::GEN_SECONDS).ok(),
    };
    if let Some(g) = gen_secs {
        columns.push(read::gen_seconds_column(g, &src, &located)?);
    }
    let mut seen = Vec::new();
    for (name, col) in reward_cols {
        super::check_reward_model_name(name)?;
        if seen.contains(name) {
            bail_input!(
                "reward model {name:?} is given twice; each --reward-col needs a distinct NAME"
            );
        }
        seen.push(name.clone());
        columns.push(read::reward_column(
            read::require_column(&raw, &src, col, "pass the right --reward-col NAME=COLUMN")?,
            &src,
            &located,
            name,
        )?);
    }
    columns.push(raw.column(cols::SOURCE_ROW)?.clone());
    drop(raw);
    let frame = read::sort_by_key(&DataFrame::new_infer_height(columns)?)?;
    reject_duplicates(
        &frame,
        &src,
        "each (prompt, response) pair must appear once",
    )?;
    Ok(frame)
}

/// Fail if a key-sorted canonical frame repeats a (prompt_id, response_id).
fn reject_duplicates(df: &DataFrame, src: &SourceFile, fix: &str) -> Result<()> {
    if let Some((i, n)) = read::adjacent_duplicate(df)? {
        let r = df.column(cols::SOURCE_ROW)?;
        bail_input!(
            "{}: {}s {} and {} have the same (prompt {}, response {}){}; {fix}",
            src.name(),
            src.row_word,
            r.get(i)?,
            r.get(i + 1)?,
            df.column(cols::PROMPT_ID)?.get(i)?,
            df.column(cols::RESPONSE_ID)?.get(i)?,
            duplicates_in_all(n)
        );
    }
    Ok(())
}

/// Unscored responses (a null reward for some model) are an error unless the
/// user asked to drop them. Returns the frame and how many rows were dropped.
fn handle_unscored(
    frame: DataFrame,
    reward_models: &[String],
    src: &SourceFile,
    drop_unscored: bool,
) -> Result<(DataFrame, usize)> {
    let mut any_null: Option<BooleanChunked> = None;
    for m in reward_models {
        let c = frame.column(m)?;
        if c.null_count() == 0 {
            continue;
        }
        if !drop_unscored {
            let mask = c.is_null();
            let i = mask.iter().position(|b| b == Some(true)).unwrap_or(0);
            bail_input!(
                "{}: {} response(s) have no score from reward model {m:?}, first {}; score them, or pass --drop-unscored to leave them out",
                src.name(),
                c.null_count(),
                src.locate(&frame, i)
            );
        }
        let mask = c.is_null();
        any_null = Some(match any_null {
            Some(a) => &a | &mask,
            None => mask,
        });
    }
    match any_null {
        None => Ok((frame, 0)),
        Some(mask) => {
            let dropped = mask.sum().unwrap_or(0) as usize;
            let keep = !&mask;
            Ok((frame.filter(&keep)?, dropped))
        }
    }
}

/// Every prompt needs ≥ 2 responses (a selection among one is no selection).
/// Returns the prompt offsets of the sorted frame.
fn check_prompt_sizes(frame: &DataFrame, src: &SourceFile) -> Result<Vec<usize>> {
    if frame.height() == 0 {
        bail_input!("{}: no responses left to ingest", src.name());
    }
    let pid = frame.column(cols::PROMPT_ID)?.str()?.clone();
    let offsets = prompt_offsets(&pid);
    let small: Vec<(String, usize)> = offsets
        .windows(2)
        .filter(|w| w[1] - w[0] < 2)
        .map(|w| (pid.get(w[0]).unwrap_or_default().to_string(), w[1] - w[0]))
        .collect();
    if let Some((p, k)) = small.first() {
        let others = if small.len() > 1 {
            format!(" and {} more prompt(s)", small.len() - 1)
        } else {
            String::new()
        };
        bail_input!(
            "{}: prompt {p:?} has {k} response(s){others}; every prompt needs at least 2 responses to select among — remove it or generate more responses",
            src.name()
        );
    }
    Ok(offsets)
}

/// Prepared scores are float32 (design §4): half the memory of the engine's
/// pools, and ample precision for reward-model scores. A value beyond
/// float32's range (±3.4e38) would be stored as ±inf and turn every lift
/// into NaN, so it is refused here, naming its file, row and column.
fn check_f32_range(
    frame: &DataFrame,
    reward_models: &[String],
    primary: &SourceFile,
    files: &[(String, PathBuf)],
) -> Result<()> {
    let limit = f64::from(f32::MAX);
    let mut columns: Vec<(&str, String)> = reward_models
        .iter()
        .map(|m| (m.as_str(), format!("reward ({m})")))
        .collect();
    if frame.column(cols::GEN_SECONDS).is_ok() {
        columns.push((cols::GEN_SECONDS, "gen_seconds".into()));
    }
    for (col, what) in columns {
        let ca = frame.column(col)?.cast(&DataType::Float64)?;
        let ca = ca.f64()?;
        let bad = ca.iter().position(|v| v.is_some_and(|x| x.abs() > limit));
        if let Some(i) = bad {
            let value = ca.get(i).unwrap_or(f64::NAN);
            // Form 1 keeps each reward in its own file: name that file.
            let reward_file = files
                .iter()
                .find(|(role, _)| role.strip_prefix("rewards:") == Some(col))
                .map(|(_, p)| p);
            let at = match reward_file {
                Some(p) => {
                    let (prompt, response) = ids_at(frame, i)?;
                    format!(
                        "{}: the row of (prompt {prompt:?}, response {response})",
                        p.display()
                    )
                }
                None => primary.locate(frame, i),
            };
            bail_input!(
                "{at}: {what} is {value:e}, beyond float32's range (±{:e}) in which prepared scores are stored; rescale the column",
                f32::MAX
            );
        }
    }
    Ok(())
}

/// The frame written to `scores.parquet` (design §4 types and order).
fn output_frame(frame: &DataFrame, reward_models: &[String]) -> Result<DataFrame> {
    let mut columns = vec![
        frame.column(cols::PROMPT_ID)?.clone(),
        frame.column(cols::RESPONSE_ID)?.clone(),
        frame.column(cols::CORRECT)?.cast(&DataType::Float32)?,
    ];
    for m in reward_models {
        columns.push(frame.column(m)?.cast(&DataType::Float32)?);
    }
    if let Ok(g) = frame.column(cols::GEN_SECONDS) {
        columns.push(g.cast(&DataType::Float32)?);
    }
    Ok(DataFrame::new_infer_height(columns)?)
}

#[allow(clippy::too_many_arguments)]
fn build_manifest(
    out_df: &DataFrame,
    offsets: &[usize],
    reward_models: &[String],
    name: String,
    opts: &IngestOptions,
    form: &str,
    files: &[(String, PathBuf)],
    dropped: usize,
) -> Result<DatasetManifest> {
    let correct: Vec<f64> = out_df
        .column(cols::CORRECT)?
        .cast(&DataType::Float64)?
        .f64()?
        .into_no_null_iter()
        .collect();
    let prompts = offsets.len() - 1;
    let mut sizes: Vec<usize> = offsets.windows(2).map(|w| w[1] - w[0]).collect();
    sizes.sort_unstable();
    let median = if prompts % 2 == 1 {
        sizes[prompts / 2] as f64
    } else {
        (sizes[prompts / 2 - 1] + sizes[prompts / 2]) as f64 / 2.0
    };
    let per_prompt: f64 = offsets
        .windows(2)
        .map(|w| correct[w[0]..w[1]].iter().sum::<f64>() / (w[1] - w[0]) as f64)
        .sum::<f64>()
        / prompts as f64;
    let pooled = correct.iter().sum::<f64>() / correct.len() as f64;
    let binary = correct.iter().all(|&c| c == 0.0 || c == 1.0);
    let mut rewards = BTreeMap::new();
    for m in reward_models {
        let v: Vec<f64> = out_df
            .column(m)?
            .cast(&DataType::Float64)?
            .f64()?
            .into_no_null_iter()
            .collect();
        rewards.insert(m.clone(), prepared::reward_stats(&v));
    }
    let files = files
        .iter()
        .map(|(role, p)| {
            Ok(SourceFileInfo {
                role: role.clone(),
                path: p.display().to_string(),
                sha256: sha256_file(p)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(DatasetManifest {
        name,
        policy: opts.policy.clone(),
        task: opts.task.clone(),
        reward_models: reward_models.to_vec(),
        correct_kind: if binary { "binary" } else { "continuous" }.into(),
        has_gen_seconds: out_df.column(cols::GEN_SECONDS).is_ok(),
        counts: Counts {
            prompts,
            responses: out_df.height(),
            responses_per_prompt_min: sizes[0],
            responses_per_prompt_median: median,
            responses_per_prompt_max: sizes[prompts - 1],
        },
        base_accuracy: BaseAccuracy {
            mean_over_prompts: per_prompt,
            pooled,
        },
        rewards,
        source: SourceInfo {
            form: form.into(),
            files,
            dropped_unscored: dropped,
        },
        privalign_version: env!("CARGO_PKG_VERSION").into(),
        transform_stats: BTreeMap::new(),
        integrity: None,
    })
}
