//! Reading errors in the user's terms: the file, the line or row and the
//! column, and what to change — not the dataframe library's options
//! (`truncate_ragged_lines`, `infer_schema_length`, …), which a user of
//! privalign cannot set.

use polars::prelude::*;
use std::path::Path;

use super::read::SourceFile;
use crate::error::input_error;

/// Split one line of delimited text into fields, honouring double quotes.
fn field_count(line: &str, sep: u8) -> usize {
    let (mut n, mut quoted) = (1, false);
    for b in line.bytes() {
        match b {
            b'"' => quoted = !quoted,
            b if b == sep && !quoted => n += 1,
            _ => {}
        }
    }
    n
}

/// The first line of a polars message, without its "consider setting …" hints.
fn first_sentence(e: &PolarsError) -> String {
    let text = e.to_string();
    let first = text.lines().next().unwrap_or_default().trim().to_string();
    first
        .split(" You might want to try")
        .next()
        .unwrap_or_default()
        .to_string()
}

/// A CSV/TSV file polars could not read: find the first line whose field
/// count differs from the header's, else report polars' first sentence.
pub fn csv_error(path: &Path, sep: u8, e: PolarsError) -> anyhow::Error {
    let kind = if sep == b'\t' { "TSV" } else { "CSV" };
    if let Ok(text) = std::fs::read_to_string(path) {
        let mut lines = text.lines().enumerate();
        if let Some((_, header)) = lines.next() {
            let want = field_count(header.trim_start_matches('\u{feff}'), sep);
            for (i, line) in lines {
                if line.trim().is_empty() {
                    continue;
                }
                let got = field_count(line, sep);
                if got != want {
                    return input_error(format!(
                        "{}: line {} has {got} fields but the header has {want}; every row needs one value per column (quote text that contains {:?})",
                        path.display(),
                        i + 1,
                        char::from(sep)
                    ));
                }
            }
        }
    }
    input_error(format!(
        "{}: not a readable {kind} file ({}); check that it is {kind} with a header line",
        path.display(),
        first_sentence(&e)
    ))
}

/// A JSON-lines file polars could not read: name the first line that is not
/// a JSON object.
pub fn jsonl_error(path: &Path, e: PolarsError) -> anyhow::Error {
    if let Ok(text) = std::fs::read_to_string(path) {
        for (i, line) in text.lines().enumerate() {
            let line = if i == 0 {
                line.trim_start_matches('\u{feff}')
            } else {
                line
            };
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<serde_json::Value>(line) {
                Ok(v) if v.is_object() => {}
                Ok(_) => {
                    return input_error(format!(
                        "{}: line {}: not a JSON object; each line must be one object like {{\"prompt_id\": …, \"correct\": …}}",
                        path.display(),
                        i + 1
                    ));
                }
                Err(err) => {
                    return input_error(format!(
                        "{}: line {}: not valid JSON ({err}); each line must be one JSON object",
                        path.display(),
                        i + 1
                    ));
                }
            }
        }
    }
    input_error(format!(
        "{}: not readable as JSON lines (one object per line): {}",
        path.display(),
        first_sentence(&e)
    ))
}

/// For a text column that should hold numbers (`what`, e.g. "reward (armo)"):
/// the first value that is not a number, located by row.
pub fn non_numeric(
    col: &Column,
    src: &SourceFile,
    df: &DataFrame,
    what: &str,
    fix: &str,
) -> Option<anyhow::Error> {
    let ca = col.str().ok()?;
    let i = ca
        .iter()
        .position(|v| v.is_some_and(|s| s.trim().parse::<f64>().is_err()))?;
    Some(input_error(format!(
        "{}: {what} is {:?}, not a number (column {:?}); {fix}",
        src.locate(df, i),
        ca.get(i).unwrap_or_default(),
        col.name()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_respect_quotes() {
        assert_eq!(field_count("a,b,c", b','), 3);
        assert_eq!(field_count("a,\"b,c\"", b','), 2);
        assert_eq!(field_count("a\tb", b'\t'), 2);
    }
}
