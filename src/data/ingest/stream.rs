//! Prompt order across chunks: the rule that lets ingest stream.
//!
//! A file read in several chunks ([`super::source`]) must list its rows
//! **by prompt, prompts in ascending order of their id as text** (byte
//! order: `"p10"` before `"p9"`, `"10"` before `"9"`) — what generation
//! jobs and `privalign synth` write, and what a prepared dataset is. Rows
//! within a prompt may come in any order, and so may the rows inside one
//! chunk. A chunk whose first prompt comes before a prompt already seen is
//! refused (exit 2, naming the file, row and prompt) with the fix: sort the
//! file, or `--in-memory` to read it whole. A file of one chunk (by default
//! up to [`super::source::DEFAULT_CHUNK_ROWS`] parquet rows or 262,144 CSV
//! records, every JSON input, or `--in-memory`) may be in any order, as
//! before streaming.
//!
//! [`PromptStream`] turns the chunks of the responses file (or flat table)
//! into canonical frames of *complete* prompts, sorted by (prompt_id,
//! response_id): the rows of the last prompt of a chunk are held back until
//! the next chunk shows whether it continues. [`RewardStream`] hands out a
//! reward file's rows up to a given prompt, reading ahead only as far as
//! that prompt.

use anyhow::Result;
use polars::prelude::*;

use super::checks::reject_duplicates;
use super::source::Chunks;
use crate::data::cols;
use crate::data::ids::ResponseKeys;
use crate::data::read::{self, SourceFile};
use crate::error::input_error;

/// State carried across the chunks of the responses file: the numbering of
/// string response ids, and of responses without ids.
#[derive(Default)]
pub struct IdState {
    pub keys: Option<ResponseKeys>,
    pub seen_ints: bool,
    /// Per prompt, the next response number (flat tables without `--response-col`).
    pub next: std::collections::HashMap<String, i64>,
}

impl IdState {
    /// Forget prompts before `prompt` (joined and written).
    pub fn retain_from(&mut self, prompt: &str) {
        if let Some(k) = &mut self.keys {
            k.retain_from(prompt);
        }
        self.next.retain(|p, _| p.as_str() >= prompt);
    }
}

pub type Canon = Box<dyn FnMut(DataFrame, &mut IdState) -> Result<DataFrame>>;

/// Canonical frames of complete prompts, in prompt order.
pub struct PromptStream {
    chunks: Chunks,
    canon: Canon,
    src: SourceFile,
    dup_fix: &'static str,
    carry: Option<DataFrame>,
    pub ids: IdState,
}

/// The error for a chunk that goes back to an earlier prompt.
pub fn out_of_order(src: &SourceFile, df: &DataFrame, i: usize, after: &str) -> anyhow::Error {
    input_error(format!(
        "{} comes after prompt {after:?} in the file: ingest reads a file of more than one chunk part by part and needs its rows grouped by prompt, prompts in ascending order of their id as text (\"p10\" before \"p9\"); sort the file by prompt id (e.g. in Python: pl.read_parquet(F).sort(\"prompt_id\", maintain_order=True).write_parquet(F)), or pass --in-memory to read it whole (memory then grows with the file)",
        src.locate(df, i)
    ))
}

/// The smallest prompt id of a canonical frame and its row.
fn min_prompt(df: &DataFrame) -> Result<Option<(usize, String)>> {
    let p = df.column(cols::PROMPT_ID)?.str()?;
    Ok(p.iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| (i, v)))
        .min_by(|a, b| a.1.cmp(b.1).then(a.0.cmp(&b.0)))
        .map(|(i, v)| (i, v.to_string())))
}

/// Prompt id of the last row of a sorted canonical frame.
pub fn last_prompt(df: &DataFrame) -> Result<Option<String>> {
    if df.height() == 0 {
        return Ok(None);
    }
    Ok(df
        .column(cols::PROMPT_ID)?
        .str()?
        .get(df.height() - 1)
        .map(str::to_string))
}

impl PromptStream {
    pub fn new(chunks: Chunks, canon: Canon, src: SourceFile, dup_fix: &'static str) -> Self {
        Self {
            chunks,
            canon,
            src,
            dup_fix,
            carry: None,
            ids: IdState::default(),
        }
    }

    /// Whether every range has been handed out.
    pub fn finished(&self) -> bool {
        self.carry.is_none() && self.chunks.exhausted()
    }

    /// The next frame of complete prompts (sorted by key, duplicates
    /// refused), or `None` at the end.
    pub fn next_range(&mut self) -> Result<Option<DataFrame>> {
        loop {
            let last = self.chunks.at_last();
            let Some(raw) = self.chunks.next_chunk()? else {
                return Ok(self.carry.take());
            };
            let canon = (self.canon)(raw, &mut self.ids)?;
            let combined = match self.carry.take() {
                Some(carry) => {
                    let held = last_prompt(&carry)?.unwrap_or_default();
                    if let Some((i, p)) = min_prompt(&canon)?
                        && p < held
                    {
                        return Err(out_of_order(&self.src, &canon, i, &held));
                    }
                    let mut c = carry;
                    c.vstack_mut(&canon)?;
                    c
                }
                None => canon,
            };
            let sorted = read::sort_by_key(&combined)?;
            drop(combined);
            reject_duplicates(&sorted, &self.src, self.dup_fix)?;
            if last {
                return Ok(Some(sorted));
            }
            // Hold back the last prompt: the next chunk may continue it.
            let Some(held) = last_prompt(&sorted)? else {
                continue;
            };
            let p = sorted.column(cols::PROMPT_ID)?.str()?;
            let cut = (0..sorted.height())
                .rev()
                .find(|&i| p.get(i) != Some(held.as_str()))
                .map_or(0, |i| i + 1);
            self.carry = Some(sorted.slice(cut as i64, sorted.height() - cut));
            if cut > 0 {
                return Ok(Some(sorted.slice(0, cut)));
            }
        }
    }
}

/// A reward file's rows with canonical prompt ids, handed out up to a prompt.
pub struct RewardStream {
    pub name: String,
    pub src: SourceFile,
    chunks: Chunks,
    /// Canonicalises a chunk's prompt ids (and checks its columns exist).
    stage1: Box<dyn FnMut(DataFrame) -> Result<DataFrame>>,
    buf: Option<DataFrame>,
    /// The last prompt handed out.
    upto: Option<String>,
}

impl RewardStream {
    pub fn new(
        name: String,
        src: SourceFile,
        chunks: Chunks,
        stage1: Box<dyn FnMut(DataFrame) -> Result<DataFrame>>,
    ) -> Self {
        Self {
            name,
            src,
            chunks,
            stage1,
            buf: None,
            upto: None,
        }
    }

    fn buf_max(&self) -> Result<Option<String>> {
        let Some(b) = &self.buf else { return Ok(None) };
        Ok(b.column(cols::PROMPT_ID)?
            .str()?
            .iter()
            .flatten()
            .max()
            .map(str::to_string))
    }

    /// Read the rest of the file through the order check only (to explain
    /// an error), keeping nothing.
    pub fn check_rest(&mut self) -> Result<()> {
        let Some(done) = self.upto.clone() else {
            return Ok(());
        };
        while let Some(raw) = self.chunks.next_chunk()? {
            let c = (self.stage1)(raw)?;
            if let Some((i, p)) = min_prompt(&c)?
                && p.as_str() <= done.as_str()
            {
                return Err(out_of_order(&self.src, &c, i, &done));
            }
        }
        Ok(())
    }

    /// Rows whose prompt is ≤ `upto` (every remaining row for `None`), in
    /// file order.
    pub fn take_upto(&mut self, upto: Option<&str>) -> Result<Option<DataFrame>> {
        loop {
            let enough = match (upto, self.buf_max()?) {
                (Some(u), Some(m)) => m.as_str() > u,
                _ => false,
            };
            if enough {
                break;
            }
            let Some(raw) = self.chunks.next_chunk()? else {
                break;
            };
            let c = (self.stage1)(raw)?;
            if let Some(done) = &self.upto
                && let Some((i, p)) = min_prompt(&c)?
                && p.as_str() <= done.as_str()
            {
                return Err(out_of_order(&self.src, &c, i, done));
            }
            match &mut self.buf {
                Some(b) => {
                    b.vstack_mut(&c)?;
                }
                None => self.buf = Some(c),
            }
        }
        let Some(buf) = self.buf.take() else {
            return Ok(None);
        };
        let Some(u) = upto else {
            return Ok(Some(buf));
        };
        let mask: BooleanChunked = buf
            .column(cols::PROMPT_ID)?
            .str()?
            .iter()
            .map(|p| p.is_some_and(|p| p <= u))
            .collect();
        let taken = buf.filter(&mask)?;
        let rest = buf.filter(&!&mask)?;
        if rest.height() > 0 {
            self.buf = Some(rest);
        }
        self.upto = Some(u.to_string());
        Ok(Some(taken))
    }
}
