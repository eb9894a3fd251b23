//! Form 1, the parquet pair: a responses file plus one reward file per
//! reward model, each canonicalised chunk by chunk.

use anyhow::Result;
use polars::prelude::*;

use super::join::RewardRows;
use super::stream::{Canon, IdState};
use crate::data::cols;
use crate::data::ids::{IdRole, ResponseKeys, define_response_ids, response_ids};
use crate::data::read::{self, SourceFile};

const FIX_COLS: &str = "the responses file needs prompt_id, response_id and correct columns (or use --table with --prompt-col/--correct-col to name other columns)";
const FIX_REWARD: &str = "a reward file needs prompt_id, response_id and reward columns";

/// The responses file's canonicaliser: prompt_id, response_id, correct,
/// optional gen_seconds, source row (unsorted; the stream sorts).
pub fn responses_canon(src: SourceFile) -> Canon {
    Box::new(move |raw: DataFrame, ids: &mut IdState| {
        let pid = read::prompt_id_column(
            read::require_column(&raw, &src, cols::PROMPT_ID, FIX_COLS)?,
            &src,
            &raw,
        )?;
        // Build step by step so later checks can name the prompt of a bad row.
        let with_pid =
            DataFrame::new_infer_height(vec![pid.clone(), raw.column(cols::SOURCE_ROW)?.clone()])?;
        let rid = define_response_ids(
            read::require_column(&raw, &src, cols::RESPONSE_ID, FIX_COLS)?,
            &src,
            &with_pid,
            &mut ids.keys,
            &mut ids.seen_ints,
        )?;
        let located = super::located(&pid, &rid, &raw)?;
        let mut columns = vec![pid, rid];
        columns.push(read::correct_column(
            read::require_column(&raw, &src, cols::CORRECT, FIX_COLS)?,
            &src,
            &located,
        )?);
        if let Ok(g) = raw.column(cols::GEN_SECONDS) {
            columns.push(read::gen_seconds_column(g, &src, &located)?);
        }
        columns.push(raw.column(cols::SOURCE_ROW)?.clone());
        Ok(DataFrame::new_infer_height(columns)?)
    })
}

/// A reward file's first stage, per chunk: canonical prompt ids (needed to
/// order the rows), the raw response-id and reward columns, source rows.
pub fn reward_stage1(src: SourceFile) -> Box<dyn FnMut(DataFrame) -> Result<DataFrame>> {
    Box::new(move |raw: DataFrame| {
        let pid = read::prompt_id_column(
            read::require_column(&raw, &src, cols::PROMPT_ID, FIX_REWARD)?,
            &src,
            &raw,
        )?;
        let rid = read::require_column(&raw, &src, cols::RESPONSE_ID, FIX_REWARD)?.clone();
        let reward = read::require_column(&raw, &src, cols::REWARD, FIX_REWARD)?.clone();
        Ok(DataFrame::new_infer_height(vec![
            pid,
            rid,
            reward,
            raw.column(cols::SOURCE_ROW)?.clone(),
        ])?)
    })
}

/// A reward file's rows of one range, canonical (ids looked up in the
/// responses file's numbering, rewards checked); `None` rows: none.
pub fn reward_rows(
    name: &str,
    src: &SourceFile,
    rows: Option<DataFrame>,
    keys: Option<&ResponseKeys>,
) -> Result<RewardRows> {
    let row_col = format!("__row_{name}");
    let Some(raw) = rows.filter(|r| r.height() > 0) else {
        let right = DataFrame::new_infer_height(vec![
            Column::new(cols::PROMPT_ID.into(), Vec::<String>::new()),
            Column::new(cols::RESPONSE_ID.into(), Vec::<i64>::new()),
            Column::new(name.into(), Vec::<f64>::new()),
            Column::new(row_col.as_str().into(), Vec::<u64>::new()),
        ])?;
        return Ok(RewardRows {
            right,
            src: src.clone(),
            row_col,
        });
    };
    let pid = raw.column(cols::PROMPT_ID)?.clone();
    let with_pid =
        DataFrame::new_infer_height(vec![pid.clone(), raw.column(cols::SOURCE_ROW)?.clone()])?;
    let (rid, _) = response_ids(
        raw.column(cols::RESPONSE_ID)?,
        src,
        &with_pid,
        IdRole::Lookup(keys),
    )?;
    let located = super::located(&pid, &rid, &raw)?;
    let reward = read::reward_column(raw.column(cols::REWARD)?, src, &located, name)?;
    let right = DataFrame::new_infer_height(vec![
        pid,
        rid,
        reward,
        raw.column(cols::SOURCE_ROW)?
            .clone()
            .with_name(row_col.as_str().into()),
    ])?;
    Ok(RewardRows {
        right,
        src: src.clone(),
        row_col,
    })
}
