//! The experiment config (design §9): types, defaults, validation, and
//! `--set` overrides.
//!
//! Loading has three steps, each with errors that name the config file and
//! the key path, and say how to fix it:
//! 1. parse the YAML and apply `--set` overrides ([`overrides`]);
//! 2. type it (unknown keys and wrong types, with their path);
//! 3. check values ([`validate`]) and, against the prepared datasets'
//!    manifests, that every dataset and reward model exists and that the n
//!    grid fits the pools ([`resolve`]).

pub mod convention;
pub mod grid;
pub mod hash;
pub mod limits;
pub mod overrides;
pub mod plan;
pub mod report_names;
pub mod resolve;
pub mod types;
pub mod units;
pub mod validate;

use anyhow::{Context, Result};
use std::path::Path;

pub use resolve::{Experiment, ResolvedDataset, RewardModel};
pub use types::*;

use crate::error::input_error;

/// Read, override and type a config file, then check its values.
pub fn load(path: &Path, sets: &[String]) -> Result<ExperimentConfig> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        input_error(format!(
            "{}: cannot read the experiment config ({e}); check the path",
            path.display()
        ))
    })?;
    parse(&text, sets).with_context(|| format!("{}", path.display()))
}

/// Parse config text with overrides (errors carry the key path, not the file).
pub fn parse(text: &str, sets: &[String]) -> Result<ExperimentConfig> {
    let mut value: yaml_serde::Value =
        yaml_serde::from_str(text).map_err(|e| input_error(format!("not valid YAML: {e}")))?;
    if value.is_null() {
        value = yaml_serde::Value::Mapping(Default::default());
    }
    for s in sets {
        overrides::apply_set(&mut value, s)?;
    }
    let mut config: ExperimentConfig = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let msg = e.inner().to_string();
        let hint = if msg.starts_with("unknown field") {
            "; remove or rename it"
        } else if msg.starts_with("missing field") {
            "; add it (see experiments/README.md for every key)"
        } else {
            ""
        };
        if path == "." {
            input_error(format!("{msg}{hint}"))
        } else {
            input_error(format!("{path}: {msg}{hint}"))
        }
    })?;
    convention::apply(&mut config);
    validate::validate(&config)?;
    Ok(config)
}
