//! Reading raw input files and coercing their columns to canonical types.
//!
//! Every coercion checks what design §3 requires (types, nulls, NaN, range)
//! and reports the first offending row as `FILE: row R (prompt P, response I):
//! problem; fix`, plus how many rows share the problem, so a user can repair a
//! file in one pass.

use anyhow::{Context, Result};
use polars::prelude::*;
use std::fs::File;
use std::path::{Path, PathBuf};

use super::cols;
use crate::bail_input;
use crate::error::input_error;

/// An input file and how its rows are numbered in error messages.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub path: PathBuf,
    /// "row" (1-based data row, header excluded) or "line" (1-based JSONL line).
    pub row_word: &'static str,
}

impl SourceFile {
    pub fn rows(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            row_word: "row",
        }
    }
    pub fn lines(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            row_word: "line",
        }
    }
    pub fn name(&self) -> String {
        self.path.display().to_string()
    }

    /// Describe row `idx` of `df` (a canonical frame): its source row and, when
    /// present, its prompt and response ids.
    pub fn locate(&self, df: &DataFrame, idx: usize) -> String {
        let row = df
            .column(cols::SOURCE_ROW)
            .ok()
            .and_then(|c| c.get(idx).ok())
            .map(|v| v.to_string())
            .unwrap_or_else(|| (idx + 1).to_string());
        let mut ids = Vec::new();
        if let Ok(AnyValue::String(s)) = df.column(cols::PROMPT_ID).and_then(|c| c.get(idx)) {
            ids.push(format!("prompt {s:?}"));
        }
        if let Ok(v) = df.column(cols::RESPONSE_ID).and_then(|c| c.get(idx))
            && !v.is_null()
        {
            ids.push(format!("response {v}"));
        }
        if ids.is_empty() {
            format!("{}: {} {row}", self.name(), self.row_word)
        } else {
            format!(
                "{}: {} {row} ({})",
                self.name(),
                self.row_word,
                ids.join(", ")
            )
        }
    }
}

/// Supported tabular formats, chosen by file extension (and, for `.json`,
/// by the first character: `[` is an array of records, as pandas
/// `to_json(orient="records")` writes; `{` is JSON lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableFormat {
    Parquet,
    /// Delimited text with this field separator (`,` for .csv, tab for .tsv,
    /// or `--separator`).
    Csv(u8),
    Jsonl,
    JsonArray,
}

impl TableFormat {
    /// The format of `path`; `separator` overrides a delimited file's default.
    pub fn from_path(path: &Path, separator: Option<u8>) -> Result<Self> {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        let format = match ext.as_str() {
            "parquet" | "pq" => Self::Parquet,
            "csv" | "txt" => Self::Csv(separator.unwrap_or(b',')),
            "tsv" | "tab" => Self::Csv(separator.unwrap_or(b'\t')),
            "jsonl" | "ndjson" => Self::Jsonl,
            "json" => match first_char(path) {
                Some('[') => Self::JsonArray,
                _ => Self::Jsonl,
            },
            _ => bail_input!(
                "{}: unknown file type {ext:?}; privalign reads .parquet, .csv, .tsv, .jsonl (one JSON object per line) and .json (an array of records, or JSON lines)",
                path.display()
            ),
        };
        if separator.is_some() && !matches!(format, Self::Csv(_)) {
            bail_input!(
                "{}: --separator applies to delimited text (.csv, .tsv); this file is read as {format:?}",
                path.display()
            );
        }
        Ok(format)
    }
}

/// The first non-whitespace character of a file (a UTF-8 BOM skipped).
fn first_char(path: &Path) -> Option<char> {
    use std::io::Read;
    let mut buf = [0u8; 4096];
    let n = File::open(path).ok()?.read(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf[..n]);
    text.trim_start_matches('\u{feff}')
        .chars()
        .find(|c| !c.is_whitespace())
}

/// A delimited file whose header line, split at `sep`, is one field holding
/// `;`, a tab or `|` was almost certainly written with that separator: say
/// which flag reads it, instead of reporting missing columns.
pub fn check_separator(path: &Path, sep: u8) -> Result<()> {
    use std::io::BufRead;
    let Ok(f) = File::open(path) else {
        return Ok(());
    };
    let mut header = String::new();
    if std::io::BufReader::new(f).read_line(&mut header).is_err() {
        return Ok(());
    }
    let header = header.trim_end_matches(['\r', '\n']);
    if header.as_bytes().contains(&sep) {
        return Ok(());
    }
    for (c, flag) in [
        (';', "';'"),
        ('\t', "$'\\t' (or name the file .tsv)"),
        ('|', "'|'"),
    ] {
        if header.contains(c) {
            let shown: String = header.chars().take(60).collect();
            bail_input!(
                "{}: the header is one field {shown:?} containing {c:?}: the file looks {}-separated; pass --separator {flag}",
                path.display(),
                match c {
                    ';' => "semicolon",
                    '\t' => "tab",
                    _ => "pipe",
                }
            );
        }
    }
    Ok(())
}

/// Read a whole table into a DataFrame, adding [`cols::SOURCE_ROW`].
pub fn read_table(path: &Path) -> Result<DataFrame> {
    read_table_with(path, None)
}

/// [`read_table`] with a field separator for delimited text (`--separator`).
pub fn read_table_with(path: &Path, separator: Option<u8>) -> Result<DataFrame> {
    read_table_ids(path, separator, &[])
}

/// [`read_table_with`], reading the id columns named in `ids` of delimited
/// text as text: ids are identifiers, so `007` must not become the number 7
/// and merge with another row's `7`. A text id column whose every value is
/// a plain integer (no sign, no leading zero) is then typed as integers, so a
/// CSV gives the same dataset as its parquet form; any other keeps its text
/// (`007` and `7` stay two ids).
pub fn read_table_ids(path: &Path, separator: Option<u8>, ids: &[&str]) -> Result<DataFrame> {
    let format = TableFormat::from_path(path, separator)?;
    let meta = std::fs::metadata(path).map_err(|e| {
        input_error(format!(
            "{}: cannot open ({e}); check the path",
            path.display()
        ))
    })?;
    if meta.len() == 0 {
        bail_input!("{}: the file is empty (0 bytes)", path.display());
    }
    let df = match format {
        TableFormat::Parquet => {
            let f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
            ParquetReader::new(f).finish().map_err(|e| {
                input_error(format!(
                    "{}: not a readable parquet file: {e}",
                    path.display()
                ))
            })?
        }
        TableFormat::Csv(sep) => {
            check_separator(path, sep)?;
            CsvReadOptions::default()
                .with_has_header(true)
                .with_infer_schema_length(Some(100_000))
                .map_parse_options(|o| o.with_separator(sep))
                .with_schema_overwrite(csv_id_schema(path, sep, ids))
                .try_into_reader_with_file_path(Some(path.to_path_buf()))
                .and_then(|r| r.finish())
                .map_err(|e| super::read_errors::csv_error(path, sep, e))?
        }
        TableFormat::JsonArray => {
            let f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
            JsonReader::new(f)
                .with_json_format(JsonFormat::Json)
                .infer_schema_len(None)
                .finish()
                .map_err(|e| {
                    input_error(format!(
                        "{}: not readable as a JSON array of records ([{{\"col\": value, …}}, …]): {e}",
                        path.display()
                    ))
                })?
        }
        TableFormat::Jsonl => {
            let f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
            JsonReader::new(f)
                .with_json_format(JsonFormat::JsonLines)
                .infer_schema_len(None)
                .finish()
                .map_err(|e| super::read_errors::jsonl_error(path, e))?
        }
    };
    if df.height() == 0 {
        bail_input!("{}: the file has no rows", path.display());
    }
    with_source_rows(plain_integer_ids(df, ids)?)
}

/// Text id columns whose values are all plain integers, as Int64.
pub fn plain_integer_ids(mut df: DataFrame, ids: &[&str]) -> Result<DataFrame> {
    let plain = |s: &str| {
        let digits = s.strip_prefix('-').unwrap_or(s);
        !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (digits == "0" || !digits.starts_with('0'))
            && s != "-0"
            && s.parse::<i64>().is_ok()
    };
    for name in ids {
        let Ok(col) = df.column(name) else { continue };
        let Ok(ca) = col.str() else { continue };
        if ca.iter().all(|v| v.is_none_or(plain)) {
            let ints: Vec<Option<i64>> =
                ca.iter().map(|v| v.and_then(|s| s.parse().ok())).collect();
            df.with_column(Column::new((*name).into(), ints))?;
        }
    }
    Ok(df)
}

/// A schema overwrite typing the id columns present in the CSV header as text.
pub fn csv_id_schema(path: &Path, sep: u8, ids: &[&str]) -> Option<SchemaRef> {
    use std::io::BufRead;
    if ids.is_empty() {
        return None;
    }
    let mut header = String::new();
    std::io::BufReader::new(File::open(path).ok()?)
        .read_line(&mut header)
        .ok()?;
    let header = header.trim_start_matches('\u{feff}').trim_end();
    let fields: Vec<Field> = header
        .split(char::from(sep))
        .map(|h| h.trim().trim_matches('"'))
        .filter(|h| ids.contains(h))
        .map(|h| Field::new(h.into(), DataType::String))
        .collect();
    (!fields.is_empty()).then(|| Arc::new(Schema::from_iter(fields)))
}

/// Add the 1-based source row number column.
pub fn with_source_rows(df: DataFrame) -> Result<DataFrame> {
    with_source_rows_from(df, 1)
}

/// Add the source row number column, numbering the rows of `df` from `first`
/// (a chunk of a file read in parts).
pub fn with_source_rows_from(mut df: DataFrame, first: u64) -> Result<DataFrame> {
    let n = df.height() as u64;
    let rows: Vec<u64> = (first..first + n).collect();
    df.with_column(Column::new(cols::SOURCE_ROW.into(), rows))?;
    Ok(df)
}

/// Fetch `name` from `df` or fail naming the file, the column and what exists.
pub fn require_column<'a>(
    df: &'a DataFrame,
    src: &SourceFile,
    name: &str,
    fix: &str,
) -> Result<&'a Column> {
    df.column(name).map_err(|_| {
        let have: Vec<String> = df
            .get_column_names()
            .into_iter()
            .filter(|c| c.as_str() != cols::SOURCE_ROW)
            .map(|c| c.to_string())
            .collect();
        input_error(format!(
            "{}: missing column {name:?} (found: {}); {fix}",
            src.name(),
            have.join(", ")
        ))
    })
}

/// First index where `bad` holds, and how many indices do.
fn first_bad(mask: impl Iterator<Item = bool>) -> Option<(usize, usize)> {
    let mut first = None;
    let mut count = 0;
    for (i, b) in mask.enumerate() {
        if b {
            count += 1;
            first.get_or_insert(i);
        }
    }
    first.map(|f| (f, count))
}

fn more(count: usize) -> String {
    if count > 1 {
        format!(" ({} rows in all)", count)
    } else {
        String::new()
    }
}

/// Coerce a prompt-id column to Utf8. Integers become their decimal text.
pub fn prompt_id_column(col: &Column, src: &SourceFile, df: &DataFrame) -> Result<Column> {
    let dt = col.dtype();
    let out = if dt == &DataType::String {
        col.clone()
    } else if dt.is_integer() || matches!(dt, DataType::Categorical(..) | DataType::Enum(..)) {
        // Integers become their decimal text; dictionary-encoded (pandas
        // Categorical, pyarrow dictionary_encode) ids their string values.
        col.cast(&DataType::String)?
    } else {
        bail_input!(
            "{}: column {:?} has type {dt}; prompt ids must be strings or integers",
            src.name(),
            col.name()
        );
    };
    if let Some((i, n)) = first_bad(out.str()?.iter().map(|v| v.is_none())) {
        bail_input!(
            "{}: the prompt id is missing{}; every row needs a prompt id",
            src.locate(df, i),
            more(n)
        );
    }
    Ok(out.with_name(cols::PROMPT_ID.into()))
}

/// Coerce a response-id column to Int64 (integers only: ids are not measurements).
pub fn response_id_column(col: &Column, src: &SourceFile, df: &DataFrame) -> Result<Column> {
    let dt = col.dtype();
    if !dt.is_integer() {
        bail_input!(
            "{}: column {:?} has type {dt}; response ids must be integers (convert them, or omit --response-col to number responses in file order)",
            src.name(),
            col.name()
        );
    }
    let out = col.cast(&DataType::Int64)?;
    if let Some((i, n)) = first_bad(out.i64()?.iter().map(|v| v.is_none())) {
        bail_input!(
            "{}: the response id is missing{}; every row needs a response id",
            src.locate(df, i),
            more(n)
        );
    }
    Ok(out.with_name(cols::RESPONSE_ID.into()))
}

/// Coerce a correctness column to Float64 in [0, 1]: bools become 0/1, numbers
/// are the true reward r*.
pub fn correct_column(col: &Column, src: &SourceFile, df: &DataFrame) -> Result<Column> {
    let dt = col.dtype();
    if !(dt == &DataType::Boolean || dt.is_primitive_numeric()) {
        bail_input!(
            "{}: column {:?} has type {dt}; correctness must be a bool or a number in [0, 1]",
            src.name(),
            col.name()
        );
    }
    let out = col.cast(&DataType::Float64)?;
    let ca = out.f64()?;
    if let Some((i, n)) = first_bad(ca.iter().map(|v| v.is_none())) {
        bail_input!(
            "{}: correctness is missing{}; every response needs a correctness value (bool, or a number in [0, 1])",
            src.locate(df, i),
            more(n)
        );
    }
    if let Some((i, n)) = first_bad(
        ca.iter()
            .map(|v| !v.is_some_and(|x| (0.0..=1.0).contains(&x))),
    ) {
        bail_input!(
            "{}: correctness is {}, outside [0, 1]{}; use a bool, or rescale the true reward to [0, 1]",
            src.locate(df, i),
            ca.get(i).unwrap_or(f64::NAN),
            more(n)
        );
    }
    Ok(out.with_name(cols::CORRECT.into()))
}

/// Coerce a reward column to Float64. Nulls are allowed here (they mean
/// "unscored" and are handled by ingest); NaN and infinities are errors.
pub fn reward_column(col: &Column, src: &SourceFile, df: &DataFrame, name: &str) -> Result<Column> {
    let dt = col.dtype();
    if let Some(e) = super::read_errors::non_numeric(
        col,
        src,
        df,
        &format!("reward ({name})"),
        "rewards must be numbers — fix or remove the row",
    ) {
        return Err(e);
    }
    if !dt.is_primitive_numeric() {
        bail_input!(
            "{}: column {:?} (reward model {name}) has type {dt}; rewards must be numbers",
            src.name(),
            col.name()
        );
    }
    let out = col.cast(&DataType::Float64)?;
    let ca = out.f64()?;
    if let Some((i, n)) = first_bad(ca.iter().map(|v| v.is_some_and(|x| !x.is_finite()))) {
        bail_input!(
            "{}: reward ({name}) is {}{}; rewards must be finite numbers — rescore the response or remove it",
            src.locate(df, i),
            ca.get(i).unwrap_or(f64::NAN),
            more(n)
        );
    }
    Ok(out.with_name(name.into()))
}

/// Coerce an optional generation-time column to Float64, finite and ≥ 0.
pub fn gen_seconds_column(col: &Column, src: &SourceFile, df: &DataFrame) -> Result<Column> {
    let dt = col.dtype();
    if !dt.is_primitive_numeric() {
        bail_input!(
            "{}: column {:?} has type {dt}; generation times must be numbers of seconds",
            src.name(),
            col.name()
        );
    }
    let out = col.cast(&DataType::Float64)?;
    let ca = out.f64()?;
    if let Some((i, n)) = first_bad(
        ca.iter()
            .map(|v| !v.is_some_and(|x| x.is_finite() && x >= 0.0)),
    ) {
        bail_input!(
            "{}: gen_seconds is {}{}; generation times must be finite, non-negative and present for every response (or drop the column)",
            src.locate(df, i),
            ca.get(i)
                .map(|x| x.to_string())
                .unwrap_or_else(|| "missing".into()),
            more(n)
        );
    }
    Ok(out.with_name(cols::GEN_SECONDS.into()))
}

/// Whether a canonical frame is already in (prompt_id, response_id) order
/// (non-decreasing; equal keys allowed — they are duplicates, reported later).
fn is_sorted_by_key(df: &DataFrame) -> Result<bool> {
    let p = df.column(cols::PROMPT_ID)?.str()?;
    let r = df.column(cols::RESPONSE_ID)?.i64()?;
    let mut prev: Option<(&str, i64)> = None;
    for (pi, ri) in p.iter().zip(r.iter()) {
        let (Some(pi), Some(ri)) = (pi, ri) else {
            return Ok(false);
        };
        if prev.is_some_and(|q| q > (pi, ri)) {
            return Ok(false);
        }
        prev = Some((pi, ri));
    }
    Ok(true)
}

/// Sort a canonical frame by (prompt_id, response_id), keeping file order for
/// equal keys. Files usually arrive sorted (generation jobs write prompt by
/// prompt); one linear check then saves the sort and its full copy of the frame.
pub fn sort_by_key(df: &DataFrame) -> Result<DataFrame> {
    if is_sorted_by_key(df)? {
        return Ok(df.clone());
    }
    Ok(df.sort(
        [cols::PROMPT_ID, cols::RESPONSE_ID],
        SortMultipleOptions::default().with_maintain_order(true),
    )?)
}

/// In a frame sorted by key, the first pair of adjacent rows with equal
/// (prompt_id, response_id), and how many such pairs exist.
pub fn adjacent_duplicate(df: &DataFrame) -> Result<Option<(usize, usize)>> {
    let p = df.column(cols::PROMPT_ID)?.str()?.clone();
    let r = df.column(cols::RESPONSE_ID)?.i64()?.clone();
    let mut first = None;
    let mut count = 0;
    let mut prev: Option<(Option<&str>, Option<i64>)> = None;
    for (i, key) in p.iter().zip(r.iter()).enumerate() {
        if prev == Some(key) {
            count += 1;
            first.get_or_insert(i - 1);
        }
        prev = Some(key);
    }
    Ok(first.map(|f| (f, count)))
}
