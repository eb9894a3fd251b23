//! Opening a prepared dataset for a sweep with errors a user can act on: a
//! `scores.parquet` that is missing, truncated or otherwise unreadable is the
//! dataset's fault (exit 2, "re-run ingest"), not a failure of the run, and
//! the message names the user's dataset directory.

use anyhow::Result;
use std::path::Path;

use super::prepared::{PreparedDataset, SCORES_FILE};
use super::reader::DatasetReader;
use crate::error::{exit_code, input_error};
use crate::fsutil::sha256_file;

fn damaged(dir: &Path, e: &anyhow::Error) -> anyhow::Error {
    input_error(format!(
        "{}: cannot be read ({e:#}); the prepared dataset {} is missing a file or damaged — re-run `privalign ingest … --out {} --force`",
        dir.join(SCORES_FILE).display(),
        dir.display(),
        dir.display()
    ))
}

/// An error of reading `dir`, reported as bad input ("re-run ingest")
/// unless it already is one.
pub fn damaged_unless_input(dir: &Path, e: anyhow::Error) -> anyhow::Error {
    if exit_code(&e) == crate::error::EXIT_BAD_INPUT {
        e
    } else {
        damaged(dir, &e)
    }
}

/// [`PreparedDataset::load`], with unreadable files reported as bad input.
pub fn load_prepared(dir: &Path) -> Result<PreparedDataset> {
    PreparedDataset::load(dir).map_err(|e| damaged_unless_input(dir, e))
}

/// [`DatasetReader::open`], with unreadable files reported as bad input.
pub fn open_reader(dir: &Path) -> Result<DatasetReader> {
    DatasetReader::open(dir).map_err(|e| damaged_unless_input(dir, e))
}

/// SHA-256 of `dir/scores.parquet`, with a missing or unreadable file
/// reported as bad input.
pub fn scores_sha256(dir: &Path) -> Result<String> {
    sha256_file(&dir.join(SCORES_FILE)).map_err(|e| damaged(dir, &e))
}
