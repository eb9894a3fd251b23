//! Checks on canonical frames of complete prompts (one range of a streamed
//! ingest, or a whole file): duplicates, unscored responses, prompt sizes,
//! float32 range; and the frame written to scores.parquet.

use anyhow::Result;
use polars::prelude::*;
use std::path::PathBuf;

use crate::bail_input;
use crate::data::cols;
use crate::data::prepared::prompt_offsets;
use crate::data::read::{self, SourceFile};

/// " (N duplicates in all)" when there is more than one.
pub fn duplicates_in_all(n: usize) -> String {
    if n > 1 {
        format!(" ({n} duplicates in all)")
    } else {
        String::new()
    }
}

/// (prompt_id, response_id) of row `i` of a canonical frame.
pub fn ids_at(df: &DataFrame, i: usize) -> Result<(String, i64)> {
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

/// Fail if a key-sorted canonical frame repeats a (prompt_id, response_id).
pub fn reject_duplicates(df: &DataFrame, src: &SourceFile, fix: &str) -> Result<()> {
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
pub fn handle_unscored(
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
/// Returns the prompt offsets of the sorted frame (`[0]` for an empty one).
pub fn check_prompt_sizes(frame: &DataFrame, src: &SourceFile) -> Result<Vec<usize>> {
    if frame.height() == 0 {
        // A range left empty by --drop-unscored; the whole dataset being
        // empty is refused when ingest ends.
        return Ok(vec![0]);
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
pub fn check_f32_range(
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
pub fn output_frame(frame: &DataFrame, reward_models: &[String]) -> Result<DataFrame> {
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
