//! Response ids to the prepared dataset's integers.
//!
//! Integer ids are kept. String ids (UUIDs, "sample-3") and dictionary-encoded
//! ids (pandas `Categorical`, pyarrow `dictionary_encode`) are numbered per
//! prompt 0, 1, … in order of first appearance in the responses file (or the
//! flat table) — the numbering ingest already uses when no response column is
//! given, so a file whose string ids list the responses in their integer order
//! gives the same prepared dataset as its integer form. Reward files are then
//! mapped through the responses file's numbering, whatever their row order;
//! an id the responses file does not have is an error, as with integer ids.
//! The original strings are not kept (scores.parquet holds integers); file
//! order recovers them.

use anyhow::Result;
use polars::prelude::*;
use std::collections::HashMap;

use super::cols;
use super::read::SourceFile;
use crate::bail_input;

/// Per prompt, string response id → its number.
#[derive(Clone, Debug, Default)]
pub struct ResponseKeys {
    per_prompt: HashMap<String, HashMap<String, i64>>,
}

impl ResponseKeys {
    /// Number the string ids `ids` of prompts `pids` (continuing each
    /// prompt's numbering), pushing the numbers to `out`.
    fn number(&mut self, pids: &StringChunked, ids: &StringChunked, out: &mut Vec<i64>) {
        for (p, r) in pids.iter().zip(ids.iter()) {
            let m = self
                .per_prompt
                .entry(p.unwrap_or_default().to_string())
                .or_default();
            let next = m.len() as i64;
            out.push(*m.entry(r.unwrap_or_default().to_string()).or_insert(next));
        }
    }

    /// Forget the prompts before `prompt` (streamed ingest: their rewards
    /// are joined, and a sorted input never returns to them).
    pub fn retain_from(&mut self, prompt: &str) {
        self.per_prompt.retain(|p, _| p.as_str() >= prompt);
    }
}

/// [`response_ids`] for the responses file (or flat table) read in chunks:
/// string ids continue the numbering in `keys` (`None` so far: integer ids,
/// or no chunk yet — `seen_ints` tells which), so a prompt whose rows span
/// two chunks is numbered as if the file were read whole.
pub fn define_response_ids(
    col: &Column,
    src: &SourceFile,
    df: &DataFrame,
    keys: &mut Option<ResponseKeys>,
    seen_ints: &mut bool,
) -> Result<Column> {
    if keys.is_none() && !*seen_ints {
        let (c, k) = response_ids(col, src, df, IdRole::Define)?;
        *seen_ints = k.is_none();
        *keys = k;
        return Ok(c);
    }
    let text = is_text(col.dtype());
    if text != keys.is_some() {
        bail_input!(
            "{}: column {:?} changes between integer and string response ids partway through the file ({}); write one kind of id throughout",
            src.name(),
            col.name(),
            src.locate(df, 0)
        );
    }
    match keys {
        None => Ok(super::read::response_id_column(col, src, df)?),
        Some(k) => {
            let text = col.cast(&DataType::String)?;
            let ids = text.str()?;
            if let Some(i) = ids.iter().position(|v| v.is_none()) {
                bail_input!(
                    "{}: the response id is missing ({} rows in all); every row needs a response id",
                    src.locate(df, i),
                    ids.null_count()
                );
            }
            let mut out = Vec::with_capacity(ids.len());
            k.number(df.column(cols::PROMPT_ID)?.str()?, ids, &mut out);
            Ok(Column::new(cols::RESPONSE_ID.into(), out))
        }
    }
}

/// Which file's ids are being read.
#[derive(Clone, Copy, Debug)]
pub enum IdRole<'a> {
    /// The responses file or a flat table: string ids are numbered here.
    Define,
    /// A reward file: string ids are looked up in the responses file's
    /// numbering (`None`: the responses file had integer ids).
    Lookup(Option<&'a ResponseKeys>),
}

fn is_text(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::String | DataType::Categorical(..) | DataType::Enum(..)
    )
}

/// Coerce the response-id column `col` of `df` (a frame holding the canonical
/// prompt ids and source rows) to Int64. Returns the numbering when `Define`
/// met string ids.
pub fn response_ids(
    col: &Column,
    src: &SourceFile,
    df: &DataFrame,
    role: IdRole,
) -> Result<(Column, Option<ResponseKeys>)> {
    let dt = col.dtype();
    if dt.is_integer() {
        if let IdRole::Lookup(Some(_)) = role {
            bail_input!(
                "{}: column {:?} holds integer response ids but the responses file's are strings; write the same ids in both files",
                src.name(),
                col.name()
            );
        }
        return Ok((super::read::response_id_column(col, src, df)?, None));
    }
    if !is_text(dt) {
        bail_input!(
            "{}: column {:?} has type {dt}; response ids must be integers or strings (or omit --response-col to number responses in file order)",
            src.name(),
            col.name()
        );
    }
    let text = col.cast(&DataType::String)?;
    let ids = text.str()?;
    if let Some(i) = ids.iter().position(|v| v.is_none()) {
        bail_input!(
            "{}: the response id is missing ({} rows in all); every row needs a response id",
            src.locate(df, i),
            ids.null_count()
        );
    }
    let pids = df.column(cols::PROMPT_ID)?.str()?;
    let mut out = Vec::with_capacity(ids.len());
    let keys = match role {
        IdRole::Define => {
            let mut keys = ResponseKeys::default();
            keys.number(pids, ids, &mut out);
            Some(keys)
        }
        IdRole::Lookup(None) => bail_input!(
            "{}: column {:?} holds string response ids but the responses file's are integers; write the same ids in both files",
            src.name(),
            col.name()
        ),
        IdRole::Lookup(Some(keys)) => {
            let (mut first, mut missing) = (None, 0usize);
            for (i, (p, r)) in pids.iter().zip(ids.iter()).enumerate() {
                match keys
                    .per_prompt
                    .get(p.unwrap_or_default())
                    .and_then(|m| m.get(r.unwrap_or_default()))
                {
                    Some(&k) => out.push(k),
                    None => {
                        missing += 1;
                        first.get_or_insert(i);
                        out.push(-1);
                    }
                }
            }
            if let Some(i) = first {
                bail_input!(
                    "{} (response id {:?}) scores a response that is not in the responses file ({missing} such rows); check that both files come from the same generation run",
                    src.locate(df, i),
                    ids.get(i).unwrap_or_default()
                );
            }
            None
        }
    };
    Ok((Column::new(cols::RESPONSE_ID.into(), out), keys))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(p: &[&str]) -> DataFrame {
        DataFrame::new_infer_height(vec![
            Column::new(cols::PROMPT_ID.into(), p),
            Column::new(
                cols::SOURCE_ROW.into(),
                (1..=p.len() as u64).collect::<Vec<_>>(),
            ),
        ])
        .unwrap()
    }

    fn ints(c: &Column) -> Vec<i64> {
        c.i64().unwrap().into_no_null_iter().collect()
    }

    #[test]
    fn strings_are_numbered_in_file_order_and_looked_up() {
        let src = SourceFile::rows(std::path::Path::new("r.parquet"));
        let df = frame(&["a", "a", "b", "a", "b"]);
        let ids = Column::new("rid".into(), ["z", "x", "z", "y", "q"]);
        let (c, keys) = response_ids(&ids, &src, &df, IdRole::Define).unwrap();
        assert_eq!(ints(&c), vec![0, 1, 0, 2, 1]);
        let keys = keys.unwrap();
        // A reward file in another order maps to the same numbers.
        let df2 = frame(&["b", "a", "a"]);
        let ids2 = Column::new("rid".into(), ["q", "y", "z"]);
        let (c2, none) = response_ids(&ids2, &src, &df2, IdRole::Lookup(Some(&keys))).unwrap();
        assert_eq!((ints(&c2), none.is_none()), (vec![1, 2, 0], true));
        // An unknown id, and mixed integer/string ids, are errors naming the row.
        let bad = Column::new("rid".into(), ["q", "w", "z"]);
        let e = response_ids(&bad, &src, &df2, IdRole::Lookup(Some(&keys)))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("r.parquet: row 2 (prompt \"a\") (response id \"w\")"),
            "{e}"
        );
        let e = response_ids(&ids2, &src, &df2, IdRole::Lookup(None))
            .unwrap_err()
            .to_string();
        assert!(e.contains("the responses file's are integers"), "{e}");
        let int_ids = Column::new("rid".into(), [0i64, 1, 2]);
        assert!(response_ids(&int_ids, &src, &df2, IdRole::Lookup(Some(&keys))).is_err());
    }
}
