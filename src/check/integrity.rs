//! `check` verifies what it reads before comparing a single number: every
//! file the manifest lists exists with the SHA-256 recorded there, the
//! result files `check` reads are all listed, and the recorded config hash
//! is the hash of the recorded config and datasets. A summary.parquet edited
//! by one ulp therefore fails `check` even when every reported number stays
//! within its tolerance.

use anyhow::{Result, bail};
use std::path::{Path, PathBuf};

use crate::fsutil::sha256_file;
use crate::results::fsrc::FSRC_FILE;
use crate::results::manifest::{MANIFEST_FILE, ResultsManifest};
use crate::results::summary::SUMMARY_FILE;
use crate::sweep::run::config_hash;

/// What [`verify`] established, for the user.
#[derive(Debug)]
pub struct Verified {
    pub files: usize,
    /// The config hash was recomputed and matched (`false` when the results
    /// were made by another privalign version, whose hash cannot be redone).
    pub config_hash: bool,
}

/// Verify results directory `dir` against its manifest `m` (exit 1 naming
/// every problem when it does not hold).
pub fn verify(dir: &Path, m: &ResultsManifest) -> Result<Verified> {
    let mut problems = Vec::new();
    for (f, sha) in &m.files {
        let p = dir.join(f);
        if !p.exists() {
            problems.push(format!(
                "{}: listed in {MANIFEST_FILE} but missing",
                p.display()
            ));
            continue;
        }
        let actual = sha256_file(&p)?;
        if &actual != sha {
            problems.push(format!(
                "{}: SHA-256 {actual} differs from the {sha} recorded in {MANIFEST_FILE}; the file changed after the sweep wrote it",
                p.display()
            ));
        }
    }
    for f in [SUMMARY_FILE, FSRC_FILE] {
        if dir.join(f).exists() && !m.files.contains_key(f) {
            problems.push(format!(
                "{}: present but not listed in {MANIFEST_FILE}, so nothing vouches for it",
                dir.join(f).display()
            ));
        }
    }
    let same_version = m.privalign_version == env!("CARGO_PKG_VERSION");
    if same_version {
        let ds: Vec<(String, String)> = m
            .datasets
            .iter()
            .map(|d| (d.name.clone(), d.content_sha256.clone()))
            .collect();
        let h = config_hash(&m.config, &ds)?;
        if h != m.config_hash {
            problems.push(format!(
                "{}: config_hash {} is not the hash of the recorded config and datasets ({h}); the manifest was edited",
                dir.join(MANIFEST_FILE).display(),
                m.config_hash
            ));
        }
    }
    if !problems.is_empty() {
        bail!(
            "{}: the results do not match their manifest — rerun the sweep, or `privalign check {} --recompute`:\n  {}",
            dir.display(),
            dir.display(),
            problems.join("\n  ")
        );
    }
    Ok(Verified {
        files: m.files.len(),
        config_hash: same_version,
    })
}

/// The recorded config path of results in `dir`, found independently of
/// the current directory: the path as recorded when absolute; else relative
/// to the nearest ancestor of `dir` where it exists (results usually live
/// below the directory the sweep ran in, e.g. `results/demo` and
/// `experiments/demo.yaml`); else relative to the current directory.
pub fn locate_config(dir: &Path, recorded: &str) -> PathBuf {
    let rec = Path::new(recorded);
    if rec.is_absolute() {
        return rec.to_path_buf();
    }
    if let Ok(abs) = dir.canonicalize() {
        for a in abs.ancestors() {
            if a.join(rec).is_file() {
                return a.join(rec);
            }
        }
    }
    rec.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_is_found_from_an_ancestor_of_the_results() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("experiments")).unwrap();
        std::fs::create_dir_all(root.join("results/demo")).unwrap();
        std::fs::write(root.join("experiments/demo.yaml"), "x").unwrap();
        assert_eq!(
            locate_config(&root.join("results/demo"), "experiments/demo.yaml"),
            root.join("experiments/demo.yaml")
        );
        assert_eq!(
            locate_config(&root.join("results/demo"), "missing.yaml"),
            Path::new("missing.yaml")
        );
    }
}
