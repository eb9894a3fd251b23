//! Data: raw score files in, prepared datasets out, and synthetic raw files.
//!
//! * [`read`] opens parquet / CSV / JSONL inputs and turns named columns into the
//!   canonical column set, with errors that name file, row and fix.
//! * [`nested_jsonl`] parses the paper's reference-code JSONL (one record per prompt).
//! * [`describe`] summarises a prepared dataset's raw score scales.
//! * [`ids`] turns string and dictionary-encoded response ids into integers.
//! * [`ingest`] validates, joins and writes a prepared dataset (design §3–§4).
//! * [`prepared`] is the prepared dataset's on-disk form and its loader into
//!   per-prompt contiguous arrays.
//! * [`synth`] generates raw score files with known ground truth.

pub mod ids;
pub mod ingest;
pub mod layout;
pub mod nested_jsonl;
pub mod open;
pub mod output;
pub mod prepared;
pub mod read;
pub mod read_errors;
pub mod reader;
pub mod synth;

/// Canonical column names shared by every stage.
pub mod cols {
    pub const PROMPT_ID: &str = "prompt_id";
    pub const RESPONSE_ID: &str = "response_id";
    pub const CORRECT: &str = "correct";
    pub const GEN_SECONDS: &str = "gen_seconds";
    pub const REWARD: &str = "reward";
    /// 1-based row (or line) in the source file, carried through ingest so that
    /// errors found after sorting or joining can still point at the input row.
    pub const SOURCE_ROW: &str = "__source_row";
}

/// Names that cannot be used for a reward model because they collide with
/// canonical columns of `scores.parquet`.
pub fn check_reward_model_name(name: &str) -> anyhow::Result<()> {
    use cols::*;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
    {
        crate::bail_input!(
            "reward model name {name:?} is not usable: use letters, digits, '_', '-' or '.' (e.g. --rewards armo=rewards_armo.parquet)"
        );
    }
    if [PROMPT_ID, RESPONSE_ID, CORRECT, GEN_SECONDS].contains(&name) || name.starts_with("__") {
        crate::bail_input!(
            "reward model name {name:?} collides with a column of scores.parquet; choose another name"
        );
    }
    Ok(())
}
