//! The paper's reference-code format: one JSON record per prompt,
//! `{"prompt": …, "responses": [{"is_correct": 0|1, "proxy_reward": float|null, …}]}`.
//!
//! Parsed line by line with serde_json so that every error names its line and
//! response index. The prompt id is the value of the prompt key (string, or a
//! number written as text); the response id is the response's index in its
//! array (0-based). A `null` reward means "unscored" and is handled by ingest
//! like a missing reward row. `gen_seconds` inside a response is kept when every
//! response has it.

use anyhow::{Context, Result};
use polars::prelude::*;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;

use super::cols;
use crate::bail_input;

/// Keys to read from each record.
#[derive(Clone, Debug)]
pub struct NestedKeys {
    pub prompt: String,
    pub responses: String,
    pub correct: String,
    pub reward: String,
    /// Name the reward model gets in the prepared dataset.
    pub reward_name: String,
}

impl Default for NestedKeys {
    fn default() -> Self {
        Self {
            prompt: "prompt".into(),
            responses: "responses".into(),
            correct: "is_correct".into(),
            reward: "proxy_reward".into(),
            reward_name: "proxy".into(),
        }
    }
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

/// Parse a nested JSONL file into a canonical frame (prompt_id, response_id,
/// correct, reward column, optional gen_seconds, source row = line number).
pub fn read_nested_jsonl(path: &Path, keys: &NestedKeys) -> Result<DataFrame> {
    let file = std::fs::File::open(path).map_err(|e| {
        crate::error::input_error(format!(
            "{}: cannot open ({e}); check the path",
            path.display()
        ))
    })?;
    let name = path.display();
    let mut prompt_ids: Vec<String> = Vec::new();
    let mut response_ids: Vec<i64> = Vec::new();
    let mut correct: Vec<f64> = Vec::new();
    let mut reward: Vec<Option<f64>> = Vec::new();
    let mut gen_secs: Vec<Option<f64>> = Vec::new();
    let mut lines: Vec<u64> = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let lineno = i as u64 + 1;
        let line = line.with_context(|| format!("{name}: reading line {lineno}"))?;
        // A UTF-8 byte-order mark (Windows editors write one) is not JSON.
        let line = if lineno == 1 {
            line.trim_start_matches('\u{feff}').to_string()
        } else {
            line
        };
        if line.trim().is_empty() {
            continue;
        }
        let rec: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(e) => bail_input!(
                "{name}: line {lineno}: not valid JSON ({e}); each line must be one JSON object"
            ),
        };
        let Some(obj) = rec.as_object() else {
            bail_input!(
                "{name}: line {lineno}: expected a JSON object with keys {:?} and {:?}",
                keys.prompt,
                keys.responses
            );
        };
        let prompt = match obj.get(&keys.prompt) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            Some(other) => bail_input!(
                "{name}: line {lineno}: {:?} is {other}, expected a string or number",
                keys.prompt
            ),
            None => bail_input!(
                "{name}: line {lineno}: missing key {:?} (use --prompt-key to name the prompt field)",
                keys.prompt
            ),
        };
        let Some(responses) = obj.get(&keys.responses).and_then(Value::as_array) else {
            bail_input!(
                "{name}: line {lineno} (prompt {prompt:?}): missing or non-array key {:?}; each record needs a list of responses",
                keys.responses
            );
        };
        // A prompt with no responses would otherwise vanish from the dataset
        // without a word; with one it fails the "at least 2" check later.
        if responses.is_empty() {
            bail_input!(
                "{name}: line {lineno} (prompt {prompt:?}): {:?} is empty; every prompt needs at least 2 responses — add them or remove the line",
                keys.responses
            );
        }
        for (j, resp) in responses.iter().enumerate() {
            let at = || format!("{name}: line {lineno}, response index {j} (prompt {prompt:?})");
            let Some(r) = resp.as_object() else {
                bail_input!("{}: expected a JSON object", at());
            };
            let c = match r.get(&keys.correct) {
                Some(v) => match number(v) {
                    Some(x) if (0.0..=1.0).contains(&x) => x,
                    _ => bail_input!(
                        "{}: {:?} is {v}, expected 0, 1, a bool or a number in [0, 1]",
                        at(),
                        keys.correct
                    ),
                },
                None => bail_input!(
                    "{}: missing key {:?} (use --correct-key to name the correctness field)",
                    at(),
                    keys.correct
                ),
            };
            let rw = match r.get(&keys.reward) {
                None | Some(Value::Null) => None,
                Some(v) => match v.as_f64() {
                    Some(x) if x.is_finite() => Some(x),
                    _ => bail_input!(
                        "{}: reward {:?} is {v}; rewards must be finite numbers (or null for unscored)",
                        at(),
                        keys.reward
                    ),
                },
            };
            let g = match r.get(cols::GEN_SECONDS) {
                None | Some(Value::Null) => None,
                Some(v) => match v.as_f64() {
                    Some(x) if x.is_finite() && x >= 0.0 => Some(x),
                    _ => bail_input!(
                        "{}: gen_seconds is {v}; expected a non-negative number",
                        at()
                    ),
                },
            };
            prompt_ids.push(prompt.clone());
            response_ids.push(j as i64);
            correct.push(c);
            reward.push(rw);
            gen_secs.push(g);
            lines.push(lineno);
        }
    }
    if prompt_ids.is_empty() {
        bail_input!("{name}: the file has no responses");
    }
    let mut columns = vec![
        Column::new(cols::PROMPT_ID.into(), prompt_ids),
        Column::new(cols::RESPONSE_ID.into(), response_ids),
        Column::new(cols::CORRECT.into(), correct),
        Column::new(keys.reward_name.as_str().into(), reward),
    ];
    let have_gen = gen_secs.iter().filter(|g| g.is_some()).count();
    if have_gen == gen_secs.len() {
        columns.push(Column::new(cols::GEN_SECONDS.into(), gen_secs));
    } else if have_gen > 0 {
        bail_input!(
            "{name}: {have_gen} of {} responses have gen_seconds; give it for every response or for none",
            gen_secs.len()
        );
    }
    columns.push(Column::new(cols::SOURCE_ROW.into(), lines));
    Ok(DataFrame::new_infer_height(columns)?)
}
