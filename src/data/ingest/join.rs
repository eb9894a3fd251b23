//! Joining reward rows to the responses of a range of prompts, checking
//! the reward file's rows on the way: duplicates and orphans (rows that
//! score no known response), each named by file and row.

use anyhow::Result;
use polars::prelude::*;
use std::collections::HashMap;

use super::checks::{duplicates_in_all, ids_at};
use crate::data::cols;
use crate::data::read::{self, SourceFile};

/// One reward file's rows for a range, canonical: prompt_id, response_id,
/// the reward (named after the model) and `__row_NAME` (source rows).
pub struct RewardRows {
    pub right: DataFrame,
    pub src: SourceFile,
    pub row_col: String,
}

/// Adds reward files' columns, one at a time, to a sorted range of complete
/// prompts (one reward file's rows in memory at a time).
pub struct Joiner {
    index: Option<KeyIndex>,
}

impl Joiner {
    pub fn new(frame: &DataFrame) -> Result<Self> {
        Ok(Self {
            index: KeyIndex::build(frame)?,
        })
    }

    /// Add the column `name` from `right` to `frame`.
    pub fn join(&self, frame: DataFrame, name: &str, right: RewardRows) -> Result<DataFrame> {
        match &self.index {
            Some(index) => join_rewards_keyed(frame, index, name, right),
            None => join_rewards(frame, right),
        }
    }
}

fn left_join_in_order(left: &DataFrame, right: &DataFrame, keys: &[&str]) -> Result<DataFrame> {
    let mut args = JoinArgs::new(JoinType::Left);
    args.maintain_order = MaintainOrderJoin::Left;
    Ok(left.join(right, keys, keys, args, None)?)
}

/// The error for a reward file that scores one response twice.
fn duplicate_reward_error(
    src: &SourceFile,
    rows: (AnyValue, AnyValue),
    prompt: &str,
    response: i64,
    n: usize,
) -> anyhow::Error {
    crate::error::input_error(format!(
        "{}: {}s {} and {} both score (prompt {prompt:?}, response {response}){}; each response needs exactly one reward per model",
        src.name(),
        src.row_word,
        rows.0,
        rows.1,
        duplicates_in_all(n)
    ))
}

/// The error for reward rows that score no known response.
fn orphan_error(
    src: &SourceFile,
    row: AnyValue,
    prompt: &str,
    response: i64,
    n: usize,
) -> anyhow::Error {
    crate::error::input_error(format!(
        "{}: {} {row} (prompt {prompt:?}, response {response}) scores a response that is not in the responses file ({n} such rows); check that both files come from the same generation run",
        src.name(),
        src.row_word,
    ))
}

/// A compact join key for the sorted responses: the prompt's rank in sort
/// order in the high 32 bits, the response id in the low 32. Joining on one
/// u64 instead of (string, i64) cuts the join's memory by more than half and
/// its time several-fold at 10M rows (README, "Benchmarks"); keys sort like
/// the (prompt_id, response_id) pairs they encode.
struct KeyIndex {
    prompts: Vec<String>,
    codes: HashMap<String, u32>,
    /// `__key` of each row of the sorted responses frame.
    keys: Column,
}

const KEY: &str = "__key";

impl KeyIndex {
    /// `None` when some response id is outside [0, 2³²) (the general join is used).
    fn build(frame: &DataFrame) -> Result<Option<Self>> {
        let pid = frame.column(cols::PROMPT_ID)?.str()?;
        let rid = frame.column(cols::RESPONSE_ID)?.i64()?;
        let mut prompts: Vec<String> = Vec::new();
        let mut codes = HashMap::new();
        let mut keys = Vec::with_capacity(frame.height());
        for (p, r) in pid.iter().zip(rid.iter()) {
            let (Some(p), Some(r)) = (p, r) else {
                return Ok(None);
            };
            let Ok(r) = u32::try_from(r) else {
                return Ok(None);
            };
            if prompts.last().map(String::as_str) != Some(p) {
                codes.insert(p.to_string(), prompts.len() as u32);
                prompts.push(p.to_string());
            }
            keys.push((u64::from(prompts.len() as u32 - 1) << 32) | u64::from(r));
        }
        Ok(Some(Self {
            prompts,
            codes,
            keys: Column::new(KEY.into(), keys),
        }))
    }

    fn describe(&self, key: u64) -> (&str, i64) {
        (
            &self.prompts[(key >> 32) as usize],
            (key & 0xffff_ffff) as i64,
        )
    }
}

/// Add one reward file's column to the (sorted) responses frame through the
/// compact key, checking the reward file's own rows: types, NaN, duplicates
/// and orphans.
fn join_rewards_keyed(
    mut frame: DataFrame,
    index: &KeyIndex,
    name: &str,
    right: RewardRows,
) -> Result<DataFrame> {
    let RewardRows {
        right,
        src,
        row_col,
    } = right;
    let rw_rows = right.height();
    // Right-side keys; a prompt or id the responses cannot have is an orphan at once.
    let mut keys = Vec::with_capacity(rw_rows);
    let mut orphan: Option<usize> = None;
    let mut orphans = 0;
    {
        let pid = right.column(cols::PROMPT_ID)?.str()?;
        let rid = right.column(cols::RESPONSE_ID)?.i64()?;
        for (i, (p, r)) in pid.iter().zip(rid.iter()).enumerate() {
            let code = p.and_then(|p| index.codes.get(p));
            match (code, r.and_then(|r| u32::try_from(r).ok())) {
                (Some(&c), Some(r)) => keys.push((u64::from(c) << 32) | u64::from(r)),
                _ => {
                    orphans += 1;
                    orphan.get_or_insert(i);
                    keys.push(u64::MAX);
                }
            }
        }
    }
    if let Some(i) = orphan {
        bail_orphan(&right, &src, &row_col, i, orphans)?;
    }
    let slim_right = DataFrame::new_infer_height(vec![
        Column::new(KEY.into(), keys),
        right.column(name)?.clone(),
        right.column(&row_col)?.clone(),
    ])?;
    let slim_left = DataFrame::new_infer_height(vec![index.keys.clone()])?;
    let joined = left_join_in_order(&slim_left, &slim_right, &[KEY])?;
    if joined.height() != frame.height() {
        // A response matched several reward rows: the reward file repeats a key.
        let k = joined.column(KEY)?.u64()?;
        let (mut first, mut n) = (None, 0);
        for i in 1..k.len() {
            if k.get(i) == k.get(i - 1) {
                n += 1;
                first.get_or_insert(i - 1);
            }
        }
        let i = first.unwrap_or(0);
        let r = joined.column(&row_col)?;
        let (prompt, response) = index.describe(k.get(i).unwrap_or(0));
        return Err(duplicate_reward_error(
            &src,
            (r.get(i)?, r.get(i + 1)?),
            prompt,
            response,
            n,
        ));
    }
    let matched = joined.height() - joined.column(&row_col)?.null_count();
    if matched < rw_rows {
        // Known prompt, unknown response id: find the first such reward row.
        let present = DataFrame::new_infer_height(vec![
            index.keys.clone(),
            Column::new("__present".into(), vec![true; frame.height()]),
        ])?;
        let marked = left_join_in_order(&slim_right, &present, &[KEY])?;
        let i = marked
            .column("__present")?
            .is_null()
            .iter()
            .position(|b| b == Some(true))
            .unwrap_or(0);
        let row = marked.column(&row_col)?.get(i)?;
        let (prompt, response) = index.describe(marked.column(KEY)?.u64()?.get(i).unwrap_or(0));
        return Err(orphan_error(&src, row, prompt, response, rw_rows - matched));
    }
    frame.with_column(joined.column(name)?.clone())?;
    Ok(frame)
}

fn bail_orphan(
    right: &DataFrame,
    src: &SourceFile,
    row_col: &str,
    i: usize,
    n: usize,
) -> Result<()> {
    let (prompt, response) = ids_at(right, i)?;
    Err(orphan_error(
        src,
        right.column(row_col)?.get(i)?,
        &prompt,
        response,
        n,
    ))
}

/// The general path (response ids outside u32): left-join on (prompt_id,
/// response_id) directly, with the same checks.
fn join_rewards(frame: DataFrame, right: RewardRows) -> Result<DataFrame> {
    let RewardRows {
        right,
        src,
        row_col,
    } = right;
    let rw_rows = right.height();
    let keys = [cols::PROMPT_ID, cols::RESPONSE_ID];
    let joined = left_join_in_order(&frame, &right, &keys)?;
    if joined.height() != frame.height()
        && let Some((i, n)) = read::adjacent_duplicate(&joined)?
    {
        let r = joined.column(&row_col)?;
        let (prompt, response) = ids_at(&joined, i)?;
        return Err(duplicate_reward_error(
            &src,
            (r.get(i)?, r.get(i + 1)?),
            &prompt,
            response,
            n,
        ));
    }
    let matched = joined.height() - joined.column(&row_col)?.null_count();
    if matched < rw_rows {
        let present = DataFrame::new_infer_height(vec![
            frame.column(cols::PROMPT_ID)?.clone(),
            frame.column(cols::RESPONSE_ID)?.clone(),
            Column::new("__present".into(), vec![true; frame.height()]),
        ])?;
        let marked = left_join_in_order(&right, &present, &keys)?;
        let i = marked
            .column("__present")?
            .is_null()
            .iter()
            .position(|b| b == Some(true))
            .unwrap_or(0);
        bail_orphan(&marked, &src, &row_col, i, rw_rows - matched)?;
    }
    drop(frame);
    Ok(joined.drop(&row_col)?)
}
