//! The on-disk layout of a prepared dataset that lets a reader take a window
//! of prompts and only the columns it needs, and verify exactly what it read.
//!
//! * `scores.parquet` is written in **blocks** of [`BLOCK_PROMPTS`]
//!   consecutive prompts (in prompt-id order), one parquet row group per
//!   block, so reading a range of blocks decodes only their row groups.
//! * `prompts.parquet` lists every prompt with its first row and row count
//!   (the sweep never decodes the 10⁷ prompt-id strings of scores.parquet).
//! * `blocks.parquet` holds, per block, its prompt and row ranges and the
//!   SHA-256 of every column's *decoded values* in that block (f32 as
//!   little-endian bytes; strings length-prefixed; integers little-endian).
//!   A reader that decodes some columns of some blocks hashes what it
//!   decoded and compares: a scores.parquet replaced after ingest, even by a
//!   file with the same row count, is refused.
//! * dataset.yaml records the block size and the SHA-256 of prompts.parquet
//!   and blocks.parquet (see [`Integrity`]).

use anyhow::{Context, Result};
use polars::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;

use super::cols;
use crate::fsutil::sha256_file;

/// Prompts per block (one row group of scores.parquet, the unit of windowed
/// reading, of resumable work and of sharding).
pub const BLOCK_PROMPTS: usize = 32;
pub const PROMPTS_FILE: &str = "prompts.parquet";
pub const BLOCKS_FILE: &str = "blocks.parquet";

/// What dataset.yaml records about the layout.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Integrity {
    pub block_prompts: usize,
    pub blocks: usize,
    /// SHA-256 of prompts.parquet and blocks.parquet.
    pub files: BTreeMap<String, String>,
}

/// SHA-256 of a column's decoded values over rows `range` of `df`.
pub fn column_hash(df: &DataFrame, name: &str, start: usize, len: usize) -> Result<String> {
    let c = df
        .column(name)?
        .as_materialized_series()
        .slice(start as i64, len);
    let mut h = Sha256::new();
    match c.dtype() {
        DataType::Float32 => {
            for v in c.f32()?.iter() {
                h.update(v.unwrap_or(f32::NAN).to_le_bytes());
            }
        }
        DataType::Int64 => {
            for v in c.i64()?.iter() {
                h.update(v.unwrap_or(i64::MIN).to_le_bytes());
            }
        }
        DataType::String => {
            for v in c.str()?.iter() {
                let s = v.unwrap_or("");
                h.update((s.len() as u64).to_le_bytes());
                h.update(s.as_bytes());
            }
        }
        other => {
            let c = c.cast(&DataType::String)?;
            h.update(other.to_string().as_bytes());
            for v in c.str()?.iter() {
                let s = v.unwrap_or("");
                h.update((s.len() as u64).to_le_bytes());
                h.update(s.as_bytes());
            }
        }
    }
    Ok(hex::encode(h.finalize()))
}

/// SHA-256 of f32 values as [`column_hash`] computes it for a Float32 column.
pub fn f32_hash(values: &[f32]) -> String {
    let mut h = Sha256::new();
    for v in values {
        h.update(v.to_le_bytes());
    }
    hex::encode(h.finalize())
}

/// Write `df` (sorted by prompt, `offsets` its prompt boundaries) as
/// scores.parquet in blocks, plus prompts.parquet and blocks.parquet, to
/// `paths` (in that order; staged names); returns what dataset.yaml records.
pub fn write_layout(paths: [&Path; 3], df: &mut DataFrame, offsets: &[usize]) -> Result<Integrity> {
    let prompts = offsets.len().saturating_sub(1);
    let blocks: Vec<(usize, usize)> = (0..prompts.div_ceil(BLOCK_PROMPTS))
        .map(|b| (b * BLOCK_PROMPTS, ((b + 1) * BLOCK_PROMPTS).min(prompts)))
        .collect();
    let scores = paths[0];
    let f = File::create(scores).with_context(|| format!("creating {}", scores.display()))?;
    let mut w = ParquetWriter::new(f)
        .with_compression(ParquetCompression::Zstd(None))
        .batched(df.schema())
        .map_err(anyhow::Error::from)
        .with_context(|| format!("writing {}", scores.display()))?;
    let names: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut block_cols: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let (mut first, mut last, mut row0, mut row1) = (vec![], vec![], vec![], vec![]);
    for &(p0, p1) in &blocks {
        let (r0, r1) = (offsets[p0], offsets[p1]);
        let mut part = df.slice(r0 as i64, r1 - r0);
        part.rechunk_mut();
        w.write_batch(&part)
            .map_err(anyhow::Error::from)
            .with_context(|| format!("writing {}", scores.display()))?;
        for n in &names {
            block_cols
                .entry(format!("sha256:{n}"))
                .or_default()
                .push(column_hash(df, n, r0, r1 - r0)?);
        }
        first.push(p0 as u64);
        last.push(p1 as u64);
        row0.push(r0 as u64);
        row1.push(r1 as u64);
    }
    w.finish()
        .map_err(anyhow::Error::from)
        .with_context(|| format!("writing {}", scores.display()))?;

    let pid = df.column(cols::PROMPT_ID)?.str()?;
    let ids: Vec<String> = (0..prompts)
        .map(|p| pid.get(offsets[p]).unwrap_or_default().to_string())
        .collect();
    let mut pdf = DataFrame::new_infer_height(vec![
        Column::new(cols::PROMPT_ID.into(), ids),
        Column::new(
            "row_start".into(),
            offsets[..prompts]
                .iter()
                .map(|&o| o as u64)
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "rows".into(),
            offsets
                .windows(2)
                .map(|w| (w[1] - w[0]) as u64)
                .collect::<Vec<_>>(),
        ),
    ])?;
    let mut cols_b = vec![
        Column::new("first_prompt".into(), first),
        Column::new("end_prompt".into(), last),
        Column::new("row_start".into(), row0),
        Column::new("row_end".into(), row1),
    ];
    for (k, v) in block_cols {
        cols_b.push(Column::new(k.into(), v));
    }
    let mut bdf = DataFrame::new_infer_height(cols_b)?;
    let mut files = BTreeMap::new();
    for ((name, frame), path) in [(PROMPTS_FILE, &mut pdf), (BLOCKS_FILE, &mut bdf)]
        .into_iter()
        .zip([paths[1], paths[2]])
    {
        let f = File::create(path).with_context(|| format!("creating {}", path.display()))?;
        ParquetWriter::new(f)
            .finish(frame)
            .map_err(anyhow::Error::from)
            .with_context(|| format!("writing {}", path.display()))?;
        files.insert(name.to_string(), sha256_file(path)?);
    }
    Ok(Integrity {
        block_prompts: BLOCK_PROMPTS,
        blocks: blocks.len(),
        files,
    })
}
