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
        DataType::Float32 => update_f32s(&mut h, c.f32()?.iter().map(|v| v.unwrap_or(f32::NAN))),
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
    update_f32s(&mut h, values.iter().copied());
    hex::encode(h.finalize())
}

/// Feed the little-endian bytes of `values`, in order, to `h` a few KiB at
/// a time (one `update` per value spent most of the hashing time on call
/// overhead) — the one way both the ingest and the read side hash a Float32
/// column.
fn update_f32s(h: &mut Sha256, values: impl Iterator<Item = f32>) {
    const CHUNK: usize = 1024;
    let mut buf = [0u8; 4 * CHUNK];
    let mut len = 0;
    for v in values {
        buf[len..len + 4].copy_from_slice(&v.to_le_bytes());
        len += 4;
        if len == buf.len() {
            h.update(&buf[..]);
            len = 0;
        }
    }
    h.update(&buf[..len]);
}

/// Writes scores.parquet block by block as ranges of complete prompts
/// arrive (memory: the prompts of one range plus less than one block), then
/// prompts.parquet and blocks.parquet from the per-prompt index it kept.
pub struct LayoutWriter {
    paths: [std::path::PathBuf; 3],
    writer: Option<polars::io::parquet::write::BatchedWriter<File>>,
    /// Rows waiting for their block to fill, and their prompt boundaries.
    pending: Option<DataFrame>,
    pending_offsets: Vec<usize>,
    /// Rows written so far.
    written: usize,
    prompt_ids: Vec<String>,
    row_start: Vec<u64>,
    rows: Vec<u64>,
    block_cols: BTreeMap<String, Vec<String>>,
    first: Vec<u64>,
    last: Vec<u64>,
    row0: Vec<u64>,
    row1: Vec<u64>,
}

impl LayoutWriter {
    /// Write to `paths` (scores, prompts, blocks; staged names).
    pub fn new(paths: [&Path; 3]) -> Self {
        Self {
            paths: paths.map(Path::to_path_buf),
            writer: None,
            pending: None,
            pending_offsets: vec![0],
            written: 0,
            prompt_ids: Vec::new(),
            row_start: Vec::new(),
            rows: Vec::new(),
            block_cols: BTreeMap::new(),
            first: Vec::new(),
            last: Vec::new(),
            row0: Vec::new(),
            row1: Vec::new(),
        }
    }

    /// Add `df`, complete prompts sorted by prompt (`offsets` its prompt
    /// boundaries), following everything pushed before.
    pub fn push(&mut self, df: DataFrame, offsets: &[usize]) -> Result<()> {
        if df.height() == 0 {
            return Ok(());
        }
        let base = *self.pending_offsets.last().unwrap_or(&0);
        self.pending_offsets
            .extend(offsets[1..].iter().map(|&o| o + base));
        match &mut self.pending {
            Some(p) => {
                p.vstack_mut(&df)?;
            }
            None => self.pending = Some(df),
        }
        while self.pending_offsets.len() > BLOCK_PROMPTS + 1 {
            self.write_block(BLOCK_PROMPTS)?;
        }
        Ok(())
    }

    /// Write the first `k` pending prompts as one block (row group).
    fn write_block(&mut self, k: usize) -> Result<()> {
        let Some(pending) = self.pending.take() else {
            return Ok(());
        };
        let scores = &self.paths[0];
        let rows = self.pending_offsets[k];
        let mut part = pending.slice(0, rows);
        part.rechunk_mut();
        if self.writer.is_none() {
            let f =
                File::create(scores).with_context(|| format!("creating {}", scores.display()))?;
            self.writer = Some(
                ParquetWriter::new(f)
                    .with_compression(ParquetCompression::Zstd(None))
                    .batched(part.schema())
                    .map_err(anyhow::Error::from)
                    .with_context(|| format!("writing {}", scores.display()))?,
            );
        }
        if let Some(w) = &mut self.writer {
            w.write_batch(&part)
                .map_err(anyhow::Error::from)
                .with_context(|| format!("writing {}", scores.display()))?;
        }
        for n in part.get_column_names() {
            self.block_cols
                .entry(format!("sha256:{n}"))
                .or_default()
                .push(column_hash(&part, n, 0, rows)?);
        }
        let p0 = self.prompt_ids.len();
        let pid = part.column(cols::PROMPT_ID)?.str()?;
        for w in self.pending_offsets[..=k].windows(2) {
            self.prompt_ids
                .push(pid.get(w[0]).unwrap_or_default().to_string());
            self.row_start.push((self.written + w[0]) as u64);
            self.rows.push((w[1] - w[0]) as u64);
        }
        self.first.push(p0 as u64);
        self.last.push((p0 + k) as u64);
        self.row0.push(self.written as u64);
        self.row1.push((self.written + rows) as u64);
        self.written += rows;
        if pending.height() > rows {
            self.pending = Some(pending.slice(rows as i64, pending.height() - rows));
        }
        self.pending_offsets = self.pending_offsets[k..]
            .iter()
            .map(|&o| o - rows)
            .collect();
        Ok(())
    }

    /// Row ranges of the blocks written, gathered into windows of at least
    /// `rows` rows (for a second pass over scores.parquet).
    pub fn windows(&self, rows: usize) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut start = 0usize;
        for &end in &self.row1 {
            let end = end as usize;
            if end - start >= rows {
                out.push((start, end - start));
                start = end;
            }
        }
        if start < self.written {
            out.push((start, self.written - start));
        }
        out
    }

    /// Write the last (partial) block, close scores.parquet, write
    /// prompts.parquet and blocks.parquet; returns what dataset.yaml records.
    pub fn finish(&mut self) -> Result<Integrity> {
        let left = self.pending_offsets.len() - 1;
        if left > 0 {
            self.write_block(left)?;
        }
        let scores = &self.paths[0];
        if let Some(w) = self.writer.take() {
            w.finish()
                .map_err(anyhow::Error::from)
                .with_context(|| format!("writing {}", scores.display()))?;
        }
        let mut pdf = DataFrame::new_infer_height(vec![
            Column::new(cols::PROMPT_ID.into(), std::mem::take(&mut self.prompt_ids)),
            Column::new("row_start".into(), std::mem::take(&mut self.row_start)),
            Column::new("rows".into(), std::mem::take(&mut self.rows)),
        ])?;
        let blocks = self.first.len();
        let mut cols_b = vec![
            Column::new("first_prompt".into(), std::mem::take(&mut self.first)),
            Column::new("end_prompt".into(), std::mem::take(&mut self.last)),
            Column::new("row_start".into(), std::mem::take(&mut self.row0)),
            Column::new("row_end".into(), self.row1.clone()),
        ];
        for (k, v) in std::mem::take(&mut self.block_cols) {
            cols_b.push(Column::new(k.into(), v));
        }
        let mut bdf = DataFrame::new_infer_height(cols_b)?;
        let mut files = BTreeMap::new();
        for ((name, frame), path) in [(PROMPTS_FILE, &mut pdf), (BLOCKS_FILE, &mut bdf)]
            .into_iter()
            .zip([&self.paths[1], &self.paths[2]])
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
            blocks,
            files,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{column_hash, f32_hash};
    use polars::prelude::*;

    /// The read side's hash is the ingest side's, and both are SHA-256 of
    /// the values' little-endian bytes in order (hashed in one go here), at
    /// every length around the chunk size; one flipped bit moves it.
    #[test]
    fn f32_hash_is_the_ingest_column_hash() {
        use sha2::{Digest, Sha256};
        let values: Vec<f32> = (0..3000).map(|i| (i as f32 * 0.37).sin() * 7.0).collect();
        let df = DataFrame::new_infer_height(vec![Column::new("x".into(), &values)]).unwrap();
        for len in [0, 1, 2, 1023, 1024, 1025, 2048, 2999, 3000] {
            for start in [0, 1] {
                let len = len.min(values.len() - start);
                let slice = &values[start..start + len];
                let bytes: Vec<u8> = slice.iter().flat_map(|v| v.to_le_bytes()).collect();
                let want = hex::encode(Sha256::digest(&bytes));
                assert_eq!(f32_hash(slice), want, "start {start}, len {len}");
                assert_eq!(
                    column_hash(&df, "x", start, len).unwrap(),
                    want,
                    "start {start}, len {len}"
                );
            }
        }
        let mut flipped = values.clone();
        flipped[1500] = f32::from_bits(flipped[1500].to_bits() ^ 1);
        assert_ne!(f32_hash(&flipped), f32_hash(&values));
    }
}
