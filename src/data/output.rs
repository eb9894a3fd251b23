//! Where `privalign ingest` may write, and writing there without touching
//! anything else.
//!
//! ingest writes exactly two files, `scores.parquet` and `dataset.yaml`, into
//! `--out`. It never deletes or overwrites anything else:
//! * `--out` that exists is refused unless `--force`; with `--force` only
//!   those two files are replaced, and only when they are ingest's (a
//!   `dataset.yaml` that parses as a prepared-dataset manifest). Other files
//!   in the directory are kept.
//! * an input file that *is* one of the two outputs (e.g. re-ingesting
//!   `DIR/scores.parquet` into `DIR`) is refused: ingest never touches its
//!   inputs.
//! * `--out` naming a file, `.`/`..`/`/`, or containing a newline or other
//!   control character is refused before any input is read.
//!
//! The swap: both files are written to hidden temporaries, the old
//! `dataset.yaml` is removed first (a directory without it reads as "not a
//! prepared dataset", never as a mix), then `scores.parquet` and the new
//! `dataset.yaml` are renamed in.

use anyhow::{Context, Result};
use std::fs;
use std::path::{Component, Path, PathBuf};

use super::prepared::{DATASET_MANIFEST_FILE, DatasetManifest, SCORES_FILE};
use crate::bail_input;
use crate::fsutil::lock::ResultsLock;

/// Reject control characters (newlines above all) in a name or label that
/// ends up in YAML, file names and one-line messages.
pub fn check_text(what: &str, s: &str) -> Result<()> {
    if let Some(c) = s.chars().find(|c| c.is_control()) {
        bail_input!(
            "{what} {s:?} contains the control character {c:?}; names and labels must be one line of printable text"
        );
    }
    Ok(())
}

/// Checks on `--out` that need no input: a directory path with a real final
/// name, one line of text, not an existing file, not existing without `force`.
pub fn check_out(out: &Path, force: bool) -> Result<()> {
    check_text("--out", &out.to_string_lossy())?;
    match out.components().next_back() {
        Some(Component::Normal(_)) => {}
        _ => bail_input!(
            "--out {:?} names no new directory (it is `.`, `..` or a root); give the dataset its own directory, e.g. --out data/my-dataset",
            out.display().to_string()
        ),
    }
    if out.exists() && !out.is_dir() {
        bail_input!(
            "{}: is a file, not a directory; --out takes the directory the prepared dataset goes into",
            out.display()
        );
    }
    if out.exists() && !force {
        bail_input!(
            "{}: already exists; choose another --out or pass --force to replace the prepared dataset in it",
            out.display()
        );
    }
    Ok(())
}

/// The files ingest writes, relative to `--out` (the manifest last: it is
/// swapped in last and vouches for the others).
pub const OUTPUTS: [&str; 4] = [
    SCORES_FILE,
    super::layout::PROMPTS_FILE,
    super::layout::BLOCKS_FILE,
    DATASET_MANIFEST_FILE,
];

/// Refuse when `out` holds a `scores.parquet`/`dataset.yaml` that ingest did
/// not write, or when an input is one of ingest's outputs.
pub fn check_ownership(out: &Path, inputs: &[PathBuf]) -> Result<()> {
    for input in inputs {
        for f in OUTPUTS {
            let target = out.join(f);
            if same_file(input, &target) {
                bail_input!(
                    "{}: is an input of this ingest and also the file it would write; ingest never overwrites its inputs — choose another --out",
                    input.display()
                );
            }
        }
    }
    if !out.is_dir() {
        return Ok(());
    }
    let manifest = out.join(DATASET_MANIFEST_FILE);
    let ours = fs::read_to_string(&manifest)
        .ok()
        .is_some_and(|t| yaml_serde::from_str::<DatasetManifest>(&t).is_ok());
    if !ours {
        let foreign: Vec<&str> = OUTPUTS
            .iter()
            .copied()
            .filter(|f| out.join(f).exists())
            .collect();
        if !foreign.is_empty() {
            bail_input!(
                "{}: holds {} that ingest did not write (no prepared-dataset manifest vouches for it); ingest never overwrites files it did not write — move {} away or choose another --out",
                out.display(),
                foreign.join(" and "),
                if foreign.len() == 1 { "it" } else { "them" }
            );
        }
    }
    Ok(())
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// The two output files, staged as hidden siblings inside `out`, with
/// `out` locked against a second ingest.
pub struct PreparedOutput {
    out: PathBuf,
    created_out: bool,
    tmp: Vec<PathBuf>,
    lock: Option<ResultsLock>,
}

impl PreparedOutput {
    /// Create `out` — exclusively without `force`, so of two ingests racing
    /// for one new `--out` exactly one proceeds — and lock it (one writer
    /// with `--force`: a second exits 2 naming the first's pid). A directory
    /// created here is removed again if nothing is committed.
    pub fn new(out: &Path, force: bool) -> Result<Self> {
        let fail = |e| crate::fsutil::output_error(out, "creating the output directory", e);
        let created_out = if force {
            let existed = out.exists();
            fs::create_dir_all(out).map_err(fail)?;
            !existed
        } else {
            if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
                fs::create_dir_all(parent).map_err(fail)?;
            }
            match fs::create_dir(out) {
                Ok(()) => true,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => bail_input!(
                    "{}: was created by another process while this one was writing; nothing was replaced. Choose another --out, or pass --force to replace it",
                    out.display()
                ),
                Err(e) => return Err(fail(e)),
            }
        };
        let pid = std::process::id();
        let mut me = Self {
            out: out.to_path_buf(),
            created_out,
            tmp: OUTPUTS
                .iter()
                .map(|f| out.join(format!(".{f}.tmp-{pid}")))
                .collect(),
            lock: None,
        };
        me.lock = Some(ResultsLock::acquire(out, "ingest")?);
        Ok(me)
    }

    /// Where to write `scores.parquet` before the swap.
    pub fn scores(&self) -> &Path {
        &self.tmp[0]
    }

    /// Where to write `prompts.parquet` before the swap.
    pub fn prompts(&self) -> &Path {
        &self.tmp[1]
    }

    /// Where to write `blocks.parquet` before the swap.
    pub fn blocks(&self) -> &Path {
        &self.tmp[2]
    }

    /// Where to write `dataset.yaml` before the swap.
    pub fn manifest(&self) -> &Path {
        &self.tmp[3]
    }

    /// Swap both files in (see the module doc).
    pub fn commit(mut self) -> Result<()> {
        let manifest = self.out.join(DATASET_MANIFEST_FILE);
        match fs::remove_file(&manifest) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", manifest.display())),
        }
        for (tmp, f) in self.tmp.iter().zip(OUTPUTS) {
            let to = self.out.join(f);
            fs::rename(tmp, &to).with_context(|| format!("renaming into {}", to.display()))?;
        }
        self.created_out = false;
        self.tmp.clear();
        self.lock.take();
        Ok(())
    }
}

impl Drop for PreparedOutput {
    fn drop(&mut self) {
        if self.lock.is_none() {
            // Never got the lock: another ingest owns this directory.
            return;
        }
        for t in &self.tmp {
            let _ = fs::remove_file(t);
        }
        self.lock.take();
        if self.created_out {
            let _ = fs::remove_dir(&self.out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_paths_that_name_no_directory_are_refused() {
        for p in [".", "..", "/", "a/..", "a\nb"] {
            let e = check_out(Path::new(p), true).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2, "{p:?}");
        }
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("file");
        fs::write(&f, "x").unwrap();
        assert!(format!("{:#}", check_out(&f, true).unwrap_err()).contains("is a file"));
        assert!(check_out(&d.path().join("new"), false).is_ok());
    }

    #[test]
    fn uncommitted_output_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("ds");
        {
            let o = PreparedOutput::new(&out, false).unwrap();
            fs::write(o.scores(), "x").unwrap();
        }
        assert!(!out.exists());
    }
}
