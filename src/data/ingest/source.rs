//! One input file read in **chunks**: whole parquet row groups, gathered
//! until a chunk holds at least `chunk_rows` rows, or `chunk_rows` records
//! of delimited text (CSV/TSV; a record ends at a newline outside double
//! quotes). Memory per chunk is bounded by `chunk_rows` (or by the file's
//! largest row group, when that is larger). JSON inputs, the nested JSONL,
//! files of one chunk and every file under `--in-memory` are read whole, by
//! the same code as before streaming.
//!
//! Each chunk gets what [`read::read_table_ids`] gives a whole file: the
//! same checks, id columns typed the same way, and source rows numbered as
//! in the file (so every error still names the row of the user's file). A
//! delimited file's column types are inferred from its first chunk (at
//! least 100,000 rows: the whole-file reader's inference window) and
//! imposed on the later chunks, as the whole-file reader does.

use anyhow::Result;
use polars::prelude::*;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Cursor};
use std::path::{Path, PathBuf};

use crate::bail_input;
use crate::data::read::{self, TableFormat};
use crate::error::input_error;

/// Rows per chunk by default: one row group as polars writes them (pyarrow
/// writes 1,048,576), ≈ 210–230 MB peak RSS for a 4-reward-model ingest
/// whatever the row count (README "Ingest at scale").
pub const DEFAULT_CHUNK_ROWS: usize = 1 << 18;

/// Delimited text read record by record.
struct TextChunks {
    reader: BufReader<File>,
    sep: u8,
    header: Vec<u8>,
    /// The next chunk's records (read one chunk ahead, to know the last).
    next: Option<Vec<u8>>,
    eof: bool,
    chunk_rows: usize,
    /// Rows parsed so far (source rows of the next chunk start after them).
    rows_before: u64,
    /// The first chunk's column types, imposed on the later chunks.
    schema: Option<SchemaRef>,
}

/// Read up to `n` records (lines, a newline inside double quotes continuing
/// the record) into `out`; `true` at the end of the file.
fn read_records(reader: &mut BufReader<File>, n: usize, out: &mut Vec<u8>) -> Result<bool> {
    let (mut records, mut in_quotes) = (0usize, false);
    while records < n {
        let start = out.len();
        if reader.read_until(b'\n', out)? == 0 {
            return Ok(true);
        }
        let quotes = out[start..].iter().filter(|&&b| b == b'"').count();
        in_quotes ^= quotes % 2 == 1;
        if !in_quotes {
            records += 1;
        }
    }
    Ok(reader.fill_buf()?.is_empty())
}

enum Plan {
    /// One chunk: the whole file (read, or preloaded).
    Whole(Option<DataFrame>),
    Parquet(VecDeque<(usize, usize)>),
    Text(Box<TextChunks>),
}

/// The chunks of one input file, in file order.
pub struct Chunks {
    path: PathBuf,
    ids: Vec<String>,
    separator: Option<u8>,
    plan: Plan,
    done: bool,
    /// Types of the id columns in the first chunk (every later chunk must agree).
    id_types: Option<Vec<Option<DataType>>>,
}

fn cannot_open(path: &Path, e: impl std::fmt::Display) -> anyhow::Error {
    input_error(format!(
        "{}: cannot open ({e}); check the path",
        path.display()
    ))
}

impl Chunks {
    /// Plan the chunks of `path`.
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
            plan: Plan::Whole(None),
            done: false,
            id_types: None,
        };
        if chunk_rows == usize::MAX {
            return Ok(me);
        }
        let meta = std::fs::metadata(path).map_err(|e| cannot_open(path, e))?;
        if meta.len() == 0 {
            bail_input!("{}: the file is empty (0 bytes)", path.display());
        }
        match format {
            TableFormat::Parquet => {
                let f = File::open(path).map_err(|e| cannot_open(path, e))?;
                let groups: Vec<usize> = ParquetReader::new(f)
                    .get_metadata()
                    .map_err(|e| not_parquet(path, e))?
                    .row_groups
                    .iter()
                    .map(|g| g.num_rows())
                    .collect();
                let mut ranges = VecDeque::new();
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
                    me.plan = Plan::Parquet(ranges);
                }
            }
            TableFormat::Csv(sep) => {
                read::check_separator(path, sep)?;
                let f = File::open(path).map_err(|e| cannot_open(path, e))?;
                let mut reader = BufReader::new(f);
                let mut header = Vec::new();
                let mut first = Vec::new();
                // At least the whole-file reader's inference window in the first chunk.
                let rows = chunk_rows.max(100_000);
                let eof = read_records(&mut reader, 1, &mut header)?
                    || read_records(&mut reader, rows, &mut first)?;
                if !eof {
                    me.plan = Plan::Text(Box::new(TextChunks {
                        reader,
                        sep,
                        header,
                        next: Some(first),
                        eof: false,
                        chunk_rows: rows,
                        rows_before: 0,
                        schema: None,
                    }));
                }
            }
            TableFormat::Jsonl | TableFormat::JsonArray => {}
        }
        Ok(me)
    }

    /// A file already read whole (the nested JSONL's own parser).
    pub fn preloaded(path: &Path, df: DataFrame) -> Self {
        Self {
            path: path.to_path_buf(),
            ids: Vec::new(),
            separator: None,
            plan: Plan::Whole(Some(df)),
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
        match &self.plan {
            Plan::Whole(_) => true,
            Plan::Parquet(r) => r.len() <= 1,
            Plan::Text(t) => t.eof,
        }
    }

    /// The next chunk, or `None` at the end of the file.
    pub fn next_chunk(&mut self) -> Result<Option<DataFrame>> {
        if self.done {
            return Ok(None);
        }
        let ids: Vec<String> = self.ids.clone();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let (df, first_row) = match &mut self.plan {
            Plan::Whole(pre) => {
                self.done = true;
                if let Some(df) = pre.take() {
                    return Ok(Some(df));
                }
                return read::read_table_ids(&self.path, self.separator, &ids).map(Some);
            }
            Plan::Parquet(ranges) => {
                let Some((start, len)) = ranges.pop_front() else {
                    self.done = true;
                    return Ok(None);
                };
                self.done = ranges.is_empty();
                let f = File::open(&self.path).map_err(|e| cannot_open(&self.path, e))?;
                let df = ParquetReader::new(f)
                    .with_slice(Some((start, len)))
                    .finish()
                    .map_err(|e| not_parquet(&self.path, e))?;
                (df, start as u64 + 1)
            }
            Plan::Text(t) => {
                let Some(records) = t.next.take() else {
                    self.done = true;
                    return Ok(None);
                };
                if !t.eof {
                    let mut following = Vec::new();
                    t.eof = read_records(&mut t.reader, t.chunk_rows, &mut following)?;
                    if !following.is_empty() {
                        t.next = Some(following);
                    }
                }
                self.done = t.next.is_none();
                let mut buf = t.header.clone();
                if !buf.ends_with(b"\n") {
                    buf.push(b'\n');
                }
                buf.extend_from_slice(&records);
                drop(records);
                let sep = t.sep;
                let mut options = CsvReadOptions::default()
                    .with_has_header(true)
                    .map_parse_options(|o| o.with_separator(sep));
                options = match &t.schema {
                    Some(s) => options.with_schema(Some(s.clone())),
                    None => options
                        .with_infer_schema_length(Some(100_000))
                        .with_schema_overwrite(read::csv_id_schema(&self.path, sep, &ids)),
                };
                let df = options
                    .into_reader_with_file_handle(Cursor::new(buf))
                    .finish()
                    .map_err(|e| crate::data::read_errors::csv_error(&self.path, sep, e))?;
                if t.schema.is_none() {
                    t.schema = Some(df.schema().clone());
                }
                let first = t.rows_before + 1;
                t.rows_before += df.height() as u64;
                (df, first)
            }
        };
        let df = read::with_source_rows_from(read::plain_integer_ids(df, &ids)?, first_row)?;
        let types: Vec<Option<DataType>> = ids
            .iter()
            .map(|c| df.column(c).ok().map(|c| c.dtype().clone()))
            .collect();
        match &self.id_types {
            None => self.id_types = Some(types),
            Some(first) if first != &types => bail_input!(
                "{}: an id column ({}) holds plain integers up to row {} but other text from row {first_row} on; ingest reads a file of more than one chunk part by part and needs one kind of id throughout — write the ids as text (or as integers) everywhere, or pass --in-memory to read the file whole",
                self.path.display(),
                ids.join(", "),
                first_row - 1
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
