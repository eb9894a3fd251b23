//! The one way the engine reads a prepared dataset: a window of prompt
//! blocks and only the columns it needs, each verified against the block
//! hashes ingest recorded ([`super::layout`]). Memory is bounded by the
//! window, not by the dataset: a sweep holds one block at a time, a shard
//! only its own blocks.

use anyhow::{Context, Result};
use polars::prelude::*;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::cols;
use super::layout::{BLOCKS_FILE, Integrity, PROMPTS_FILE, f32_hash};
use super::prepared::{DATASET_MANIFEST_FILE, DatasetManifest, SCORES_FILE, load_manifest};
use crate::error::input_error;
use crate::fsutil::sha256_file;

/// One block: its prompts, its rows of scores.parquet, its column hashes.
#[derive(Clone, Debug)]
pub struct Block {
    pub prompts: Range<usize>,
    pub rows: Range<usize>,
    hashes: BTreeMap<String, String>,
}

/// An opened, index-verified prepared dataset.
#[derive(Debug)]
pub struct DatasetReader {
    pub dir: PathBuf,
    pub manifest: DatasetManifest,
    pub prompt_ids: Vec<String>,
    /// Prompt p's rows of scores.parquet are `offsets[p]..offsets[p+1]`.
    pub offsets: Vec<usize>,
    pub blocks: Vec<Block>,
    rows_read: AtomicU64,
}

/// Columns of a window of prompts, as read and verified.
#[derive(Clone, Debug)]
pub struct Window {
    /// Dataset prompt indices in the window.
    pub prompts: Range<usize>,
    /// Prompt `prompts.start + q` has rows `offsets[q]..offsets[q+1]` of each column.
    pub offsets: Vec<usize>,
    pub columns: BTreeMap<String, Vec<f32>>,
}

impl Window {
    pub fn column(&self, name: &str) -> &[f32] {
        &self.columns[name]
    }
}

fn modified(path: &Path, what: &str) -> anyhow::Error {
    input_error(format!(
        "{}: {what}; the dataset was modified after ingest — re-run `privalign ingest`",
        path.display()
    ))
}

fn u64_col(df: &DataFrame, path: &Path, name: &str) -> Result<Vec<usize>> {
    let c = df
        .column(name)
        .map_err(|_| modified(path, &format!("missing column {name:?}")))?;
    Ok(c.u64()
        .map_err(|_| modified(path, &format!("column {name:?} is not u64")))?
        .into_no_null_iter()
        .map(|v| v as usize)
        .collect())
}

fn read_parquet(path: &Path) -> Result<DataFrame> {
    let f = File::open(path).map_err(|e| modified(path, &format!("cannot open ({e})")))?;
    ParquetReader::new(f)
        .finish()
        .map_err(|e| modified(path, &format!("cannot read ({e})")))
}

impl DatasetReader {
    /// Open `dir`: dataset.yaml, then prompts.parquet and blocks.parquet
    /// verified against the hashes dataset.yaml records, and every count of
    /// dataset.yaml checked against them (never trusted).
    pub fn open(dir: &Path) -> Result<Self> {
        let manifest = load_manifest(dir)?;
        let mpath = dir.join(DATASET_MANIFEST_FILE);
        let Some(integrity): Option<&Integrity> = manifest.integrity.as_ref() else {
            return Err(input_error(format!(
                "{}: has no block hashes (written by an older privalign); re-run `privalign ingest`",
                mpath.display()
            )));
        };
        for name in [PROMPTS_FILE, BLOCKS_FILE] {
            let path = dir.join(name);
            let want = integrity
                .files
                .get(name)
                .ok_or_else(|| modified(&mpath, &format!("lists no hash for {name}")))?;
            let got = sha256_file(&path).map_err(|e| modified(&path, &format!("{e:#}")))?;
            if &got != want {
                return Err(modified(
                    &path,
                    "does not match the SHA-256 recorded in dataset.yaml",
                ));
            }
        }
        let ppath = dir.join(PROMPTS_FILE);
        let pdf = read_parquet(&ppath)?;
        let prompt_ids: Vec<String> = pdf
            .column(cols::PROMPT_ID)
            .and_then(|c| c.str().cloned())
            .map_err(|_| modified(&ppath, "no prompt ids"))?
            .iter()
            .map(|s| s.unwrap_or_default().to_string())
            .collect();
        let starts = u64_col(&pdf, &ppath, "row_start")?;
        let rows = u64_col(&pdf, &ppath, "rows")?;
        let mut offsets = vec![0usize];
        for (p, (&s, &r)) in starts.iter().zip(&rows).enumerate() {
            if s != offsets[p] || r == 0 {
                return Err(modified(
                    &ppath,
                    &format!("prompt {p} has an inconsistent row range"),
                ));
            }
            offsets.push(s + r);
        }
        let c = &manifest.counts;
        let responses = *offsets.last().unwrap_or(&0);
        let (min, max) = rows
            .iter()
            .fold((usize::MAX, 0), |(a, b), &r| (a.min(r), b.max(r)));
        if prompt_ids.len() != c.prompts
            || responses != c.responses
            || (!rows.is_empty()
                && (min != c.responses_per_prompt_min || max != c.responses_per_prompt_max))
        {
            return Err(modified(
                &mpath,
                &format!(
                    "its counts ({} prompts, {} responses, {}..{} per prompt) disagree with {PROMPTS_FILE} ({} prompts, {responses} responses, {min}..{max} per prompt)",
                    c.prompts,
                    c.responses,
                    c.responses_per_prompt_min,
                    c.responses_per_prompt_max,
                    prompt_ids.len()
                ),
            ));
        }
        let bpath = dir.join(BLOCKS_FILE);
        let bdf = read_parquet(&bpath)?;
        let (first, end) = (
            u64_col(&bdf, &bpath, "first_prompt")?,
            u64_col(&bdf, &bpath, "end_prompt")?,
        );
        let (r0, r1) = (
            u64_col(&bdf, &bpath, "row_start")?,
            u64_col(&bdf, &bpath, "row_end")?,
        );
        let hash_cols: Vec<(String, Vec<String>)> = bdf
            .columns()
            .iter()
            .filter_map(|c| {
                let name = c.name().as_str().strip_prefix("sha256:")?.to_string();
                let v = c
                    .str()
                    .ok()?
                    .iter()
                    .map(|s| s.unwrap_or_default().to_string())
                    .collect();
                Some((name, v))
            })
            .collect();
        let mut blocks = Vec::new();
        let mut next = 0usize;
        for b in 0..first.len() {
            if first[b] != next
                || end[b] <= first[b]
                || end[b] > prompt_ids.len()
                || r0[b] != offsets[first[b]]
                || r1[b] != offsets[end[b]]
            {
                return Err(modified(
                    &bpath,
                    &format!("block {b} does not tile the prompts"),
                ));
            }
            next = end[b];
            blocks.push(Block {
                prompts: first[b]..end[b],
                rows: r0[b]..r1[b],
                hashes: hash_cols
                    .iter()
                    .map(|(n, v)| (n.clone(), v[b].clone()))
                    .collect(),
            });
        }
        if next != prompt_ids.len() || blocks.len() != integrity.blocks {
            return Err(modified(&bpath, "its blocks do not cover every prompt"));
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            manifest,
            prompt_ids,
            offsets,
            blocks,
            rows_read: AtomicU64::new(0),
        })
    }

    pub fn prompts(&self) -> usize {
        self.prompt_ids.len()
    }

    /// Rows of scores.parquet decoded so far (for tests of windowed reading).
    pub fn rows_read(&self) -> u64 {
        self.rows_read.load(Ordering::Relaxed)
    }

    /// Read `columns` (as f32) for the prompts of `blocks`, verifying each
    /// block's decoded values against its recorded hash.
    pub fn read_blocks(&self, blocks: Range<usize>, columns: &[&str]) -> Result<Window> {
        let path = self.dir.join(SCORES_FILE);
        let (b0, b1) = (&self.blocks[blocks.start], &self.blocks[blocks.end - 1]);
        let (row0, row1) = (b0.rows.start, b1.rows.end);
        let f = File::open(&path).map_err(|e| modified(&path, &format!("cannot open ({e})")))?;
        let df = ParquetReader::new(f)
            .with_columns(Some(columns.iter().map(|s| s.to_string()).collect()))
            .with_slice(Some((row0, row1 - row0)))
            .finish()
            .map_err(|e| modified(&path, &format!("cannot read ({e})")))?;
        if df.height() != row1 - row0 {
            return Err(modified(&path, "is shorter than its index"));
        }
        self.rows_read
            .fetch_add((row1 - row0) as u64, Ordering::Relaxed);
        let mut out = BTreeMap::new();
        for &name in columns {
            let c = df
                .column(name)
                .map_err(|_| modified(&path, &format!("missing column {name:?}")))?;
            let v: Vec<f32> = c
                .f32()
                .map_err(|_| modified(&path, &format!("column {name:?} is not Float32")))?
                .into_no_null_iter()
                .collect();
            for b in &self.blocks[blocks.clone()] {
                let want = b.hashes.get(name).ok_or_else(|| {
                    modified(&path, &format!("no hash recorded for column {name:?}"))
                })?;
                let slice = &v[b.rows.start - row0..b.rows.end - row0];
                if &f32_hash(slice) != want {
                    return Err(modified(
                        &path,
                        &format!(
                            "column {name:?} of prompts {}..{} does not match the hash recorded at ingest",
                            b.prompts.start, b.prompts.end
                        ),
                    ));
                }
            }
            out.insert(name.to_string(), v);
        }
        let prompts = b0.prompts.start..b1.prompts.end;
        let offsets = self.offsets[prompts.start..=prompts.end]
            .iter()
            .map(|&o| o - row0)
            .collect();
        Ok(Window {
            prompts,
            offsets,
            columns: out,
        })
    }

    /// The dataset's content hash for a set of columns: SHA-256 over the
    /// block hashes of those columns (the hashes every read verifies), so a
    /// results manifest vouches for exactly the values its numbers came from.
    pub fn content_hash(&self, columns: &[&str]) -> Result<String> {
        let mut names: Vec<&str> = columns.to_vec();
        names.sort_unstable();
        names.dedup();
        let mut h = Sha256::new();
        h.update(b"privalign-dataset-content/v1\0");
        for name in names {
            h.update(name.as_bytes());
            h.update([0]);
            for b in &self.blocks {
                let s = b.hashes.get(name).ok_or_else(|| {
                    modified(
                        &self.dir.join(BLOCKS_FILE),
                        &format!("no hash recorded for column {name:?}"),
                    )
                })?;
                h.update(s.as_bytes());
            }
        }
        Ok(hex::encode(h.finalize()))
    }

    /// Every column of every block (for whole-dataset consumers).
    pub fn read_all(&self, columns: &[&str]) -> Result<Window> {
        if self.blocks.is_empty() {
            return Ok(Window {
                prompts: 0..0,
                offsets: vec![0],
                columns: columns
                    .iter()
                    .map(|c| (c.to_string(), Vec::new()))
                    .collect(),
            });
        }
        self.read_blocks(0..self.blocks.len(), columns)
            .with_context(|| format!("reading {}", self.dir.display()))
    }
}
