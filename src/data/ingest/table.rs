//! Form 2, one flat table with user-named columns (parquet, CSV, TSV, JSON
//! lines or a JSON array), canonicalised chunk by chunk.

use anyhow::Result;
use polars::prelude::*;

use super::stream::{Canon, IdState};
use crate::bail_input;
use crate::data::cols;
use crate::data::ids::define_response_ids;
use crate::data::read::{self, SourceFile};

/// The table's column names, as the user gave them.
#[derive(Clone, Debug)]
pub struct TableColumns {
    pub prompt: String,
    pub correct: String,
    pub response: Option<String>,
    /// (reward model name, column)
    pub rewards: Vec<(String, String)>,
    pub gen_seconds: Option<String>,
}

impl TableColumns {
    /// The id columns (read as text from delimited files).
    pub fn ids(&self) -> Vec<&str> {
        std::iter::once(self.prompt.as_str())
            .chain(self.response.as_deref())
            .collect()
    }
}

/// The table's canonicaliser: prompt_id, response_id, correct, optional
/// gen_seconds, one Float64 column per reward model, source row.
pub fn table_canon(src: SourceFile, c: TableColumns) -> Result<Canon> {
    if c.rewards.is_empty() {
        bail_input!("no reward columns given; pass --reward-col NAME=COLUMN once per reward model");
    }
    Ok(Box::new(move |raw: DataFrame, ids: &mut IdState| {
        let pid = read::prompt_id_column(
            read::require_column(&raw, &src, &c.prompt, "pass the right --prompt-col")?,
            &src,
            &raw,
        )?;
        let rid = match &c.response {
            Some(col) => {
                let with_pid = DataFrame::new_infer_height(vec![
                    pid.clone(),
                    raw.column(cols::SOURCE_ROW)?.clone(),
                ])?;
                define_response_ids(
                    read::require_column(
                        &raw,
                        &src,
                        col,
                        "pass the right --response-col, or omit it to number responses in file order",
                    )?,
                    &src,
                    &with_pid,
                    &mut ids.keys,
                    &mut ids.seen_ints,
                )?
            }
            None => {
                // Number each prompt's responses 0, 1, … in file order,
                // continuing across chunks.
                let numbers: Vec<i64> = pid
                    .str()?
                    .iter()
                    .map(|p| {
                        let p = p.unwrap_or_default();
                        let k = match ids.next.get_mut(p) {
                            Some(k) => k,
                            None => ids.next.entry(p.to_string()).or_insert(0),
                        };
                        *k += 1;
                        *k - 1
                    })
                    .collect();
                Column::new(cols::RESPONSE_ID.into(), numbers)
            }
        };
        let located = super::located(&pid, &rid, &raw)?;
        let mut columns = vec![pid, rid];
        columns.push(read::correct_column(
            read::require_column(&raw, &src, &c.correct, "pass the right --correct-col")?,
            &src,
            &located,
        )?);
        let gen_secs = match &c.gen_seconds {
            Some(g) => Some(read::require_column(
                &raw,
                &src,
                g,
                "pass the right --gen-seconds-col",
            )?),
            None => raw.column(cols::GEN_SECONDS).ok(),
        };
        if let Some(g) = gen_secs {
            columns.push(read::gen_seconds_column(g, &src, &located)?);
        }
        let mut seen = Vec::new();
        for (name, col) in &c.rewards {
            crate::data::check_reward_model_name(name)?;
            if seen.contains(name) {
                bail_input!(
                    "reward model {name:?} is given twice; each --reward-col needs a distinct NAME"
                );
            }
            seen.push(name.clone());
            columns.push(read::reward_column(
                read::require_column(&raw, &src, col, "pass the right --reward-col NAME=COLUMN")?,
                &src,
                &located,
                name,
            )?);
        }
        columns.push(raw.column(cols::SOURCE_ROW)?.clone());
        Ok(DataFrame::new_infer_height(columns)?)
    }))
}
