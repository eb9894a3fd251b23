//! One input file read in **chunks**: whole parquet row groups, gathered
//! until a chunk holds at least `chunk_rows` rows. Memory per chunk is
//! bounded by `chunk_rows` (or by the file's largest row group, when that is
//! larger). Text inputs (CSV, JSON) and parquet files read with
//! `--in-memory` are one chunk: the whole file.
//!
//! Each chunk gets what [`read::read_table_ids`] gives a whole file: the
//! same checks, id columns typed the same way, and source rows numbered as
//! in the file (so every error still names the row of the user's file).

use anyhow::Result;
use polars::prelude::*;
use std::fs::File;
use std::path::{Path, PathBuf};

use crate::bail_input;
use crate::data::read::{self, TableFormat};
use crate::error::input_error;

/// Rows per chunk by default: one row group as polars writes them (pyarrow
/// writes 1,048,576), ≈ 210–230 MB peak RSS for a 4-reward-model ingest
/// whatever the row count (README "Ingest at scale").
pub const DEFAULT_CHUNK_ROWS: usize = 1 << 18;

/// The chunks of one input file, in file order.
pub struct Chunks {
    path: PathBuf,
    ids: Vec<String>,
    separator: Option<u8>,
    /// Row ranges (start, len) of the chunks still to read; `None`: the
    /// whole file is one chunk (read, or preloaded in `whole`).
    ranges: Option<std::collections::VecDeque<(usize, usize)>>,
    whole: Option<DataFrame>,
    done: bool,
    /// Types of the id columns in the first chunk (every later chunk must agree).
    id_types: Option<Vec<Option<DataType>>>,
}

impl Chunks {
    /// Plan the chunks of `path`: row-group ranges for parquet, else the whole file.
    pub fn open(
        path: &Path,
        separator: Option<u8>,
        ids: &[&str],
        chunk_rows: usize,
    ) -> Result<Self> {
        let format = TableFormat::from_path(path, separator)?;
        let mut me = Self {
            path: path.to_path_buf(),
            ids: ids.iter().map(|s| s.to_string()).collect(),
            separator,
            ranges: None,
            whole: None,
            done: false,
            id_types: None,
        };
        if format == TableFormat::Parquet && chunk_rows != usize::MAX {
            let meta = std::fs::metadata(path).map_err(|e| {
                input_error(format!(
                    "{}: cannot open ({e}); check the path",
                    path.display()
                ))
            })?;
            if meta.len() == 0 {
                bail_input!("{}: the file is empty (0 bytes)", path.display());
            }
            let f = File::open(path).map_err(|e| {
                input_error(format!(
                    "{}: cannot open ({e}); check the path",
                    path.display()
                ))
            })?;
            let groups: Vec<usize> = ParquetReader::new(f)
                .get_metadata()
                .map_err(|e| not_parquet(path, e))?
                .row_groups
                .iter()
                .map(|g| g.num_rows())
                .collect();
            let mut ranges = std::collections::VecDeque::new();
            let (mut start, mut len) = (0usize, 0usize);
            for g in groups {
                len += g;
                if len >= chunk_rows {
                    ranges.push_back((start, len));
                    start += len;
                    len = 0;
                }
            }
            if len > 0 || ranges.is_empty() {
                ranges.push_back((start, len));
            }
            if ranges.len() > 1 {
                me.ranges = Some(ranges);
            }
        }
        Ok(me)
    }

    /// A file already read whole (the nested JSONL's own parser).
    pub fn preloaded(path: &Path, df: DataFrame) -> Self {
        Self {
            path: path.to_path_buf(),
            ids: Vec::new(),
            separator: None,
            ranges: None,
            whole: Some(df),
            done: false,
            id_types: None,
        }
    }

    /// Whether every chunk has been read.
    pub fn exhausted(&self) -> bool {
        self.done
    }

    /// Whether the next chunk (if any) is the file's last.
    pub fn at_last(&self) -> bool {
        self.ranges.as_ref().is_none_or(|r| r.len() <= 1)
    }

    /// The next chunk, or `None` at the end of the file.
    pub fn next_chunk(&mut self) -> Result<Option<DataFrame>> {
        if self.done {
            return Ok(None);
        }
        let Some(ranges) = self.ranges.as_mut() else {
            self.done = true;
            if let Some(df) = self.whole.take() {
                return Ok(Some(df));
            }
            let ids: Vec<&str> = self.ids.iter().map(String::as_str).collect();
            return read::read_table_ids(&self.path, self.separator, &ids).map(Some);
        };
        let Some((start, len)) = ranges.pop_front() else {
            self.done = true;
            return Ok(None);
        };
        self.done = ranges.is_empty();
        let f = File::open(&self.path).map_err(|e| {
            input_error(format!(
                "{}: cannot open ({e}); check the path",
                self.path.display()
            ))
        })?;
        let df = ParquetReader::new(f)
            .with_slice(Some((start, len)))
            .finish()
            .map_err(|e| not_parquet(&self.path, e))?;
        let ids: Vec<&str> = self.ids.iter().map(String::as_str).collect();
        let df = read::with_source_rows_from(read::plain_integer_ids(df, &ids)?, start as u64 + 1)?;
        let types: Vec<Option<DataType>> = ids
            .iter()
            .map(|c| df.column(c).ok().map(|c| c.dtype().clone()))
            .collect();
        match &self.id_types {
            None => self.id_types = Some(types),
            Some(first) if first != &types => bail_input!(
                "{}: an id column ({}) holds plain integers up to row {start} but other text from row {} on; ingest reads a file of more than one chunk part by part and needs one kind of id throughout — write the ids as text (or as integers) everywhere, or pass --in-memory to read the file whole",
                self.path.display(),
                ids.join(", "),
                start + 1
            ),
            Some(_) => {}
        }
        Ok(Some(df))
    }
}

fn not_parquet(path: &Path, e: PolarsError) -> anyhow::Error {
    input_error(format!(
        "{}: not a readable parquet file: {e}",
        path.display()
    ))
}
