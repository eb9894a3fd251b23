//! Atomic output: a directory or file is either absent, its previous version,
//! or complete — never half-written.
//!
//! Everything privalign writes goes first to a hidden sibling
//! (`.NAME.tmp-PID`) on the same filesystem and is renamed into place only
//! after every byte has been written. If the process fails before that, the
//! temporary is removed by `Drop`; if it is killed, only a hidden `.tmp-`
//! entry is left, which never looks like a finished result.

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::bail_input;

/// A directory being built next to its final location.
pub struct StagedDir {
    target: PathBuf,
    staging: PathBuf,
    committed: bool,
}

fn sibling(target: &Path, tag: &str) -> Result<PathBuf> {
    let name = target
        .file_name()
        .with_context(|| format!("{}: output path has no final component", target.display()))?;
    let parent = target.parent().unwrap_or(Path::new(""));
    Ok(parent.join(format!(
        ".{}.{tag}-{}",
        name.to_string_lossy(),
        std::process::id()
    )))
}

impl StagedDir {
    /// Start staging `target`. Fails with an input error when `target`
    /// already exists and `replace` is false, so nothing the user already has
    /// is overwritten by accident.
    pub fn new(target: &Path, replace: bool) -> Result<Self> {
        if target.exists() && !replace {
            bail_input!(
                "{}: already exists; choose another --out or pass --force to replace it",
                target.display()
            );
        }
        if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent)
                .with_context(|| format!("creating directory {}", parent.display()))?;
        }
        let staging = sibling(target, "tmp")?;
        if staging.exists() {
            fs::remove_dir_all(&staging)
                .with_context(|| format!("removing stale {}", staging.display()))?;
        }
        fs::create_dir(&staging).with_context(|| format!("creating {}", staging.display()))?;
        Ok(Self {
            target: target.to_path_buf(),
            staging,
            committed: false,
        })
    }

    /// Where files should be written while staging.
    pub fn path(&self) -> &Path {
        &self.staging
    }

    /// Move the staged directory into place, replacing any previous version.
    pub fn commit(mut self) -> Result<()> {
        let old = sibling(&self.target, "old")?;
        let had_old = self.target.exists();
        if had_old {
            fs::rename(&self.target, &old)
                .with_context(|| format!("moving aside {}", self.target.display()))?;
        }
        if let Err(e) = fs::rename(&self.staging, &self.target) {
            if had_old {
                // Put the previous version back so nothing is lost.
                let _ = fs::rename(&old, &self.target);
            }
            return Err(e).with_context(|| format!("renaming into {}", self.target.display()));
        }
        self.committed = true;
        if had_old {
            fs::remove_dir_all(&old).with_context(|| format!("removing {}", old.display()))?;
        }
        Ok(())
    }
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.staging);
        }
    }
}

/// Write `bytes` to `path` atomically (temporary sibling, fsync, rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    with_atomic_file(path, |f| {
        f.write_all(bytes)?;
        Ok(())
    })
}

/// Create `path` atomically: `fill` writes into a temporary sibling, which
/// is synced and renamed into place only if `fill` succeeds (and removed
/// otherwise).
pub fn with_atomic_file(path: &Path, fill: impl FnOnce(&mut fs::File) -> Result<()>) -> Result<()> {
    let tmp = sibling(path, "tmp")?;
    let result = (|| -> Result<()> {
        let mut f =
            fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        fill(&mut f).with_context(|| format!("writing {}", tmp.display()))?;
        f.sync_all().ok();
        fs::rename(&tmp, path).with_context(|| format!("renaming into {}", path.display()))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Hex sha256 of a file, streamed.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f = fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f
            .read(&mut buf)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncommitted_stage_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("out");
        {
            let s = StagedDir::new(&target, false).unwrap();
            fs::write(s.path().join("a"), b"x").unwrap();
        }
        assert!(!target.exists());
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn commit_replaces_only_with_force() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("out");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("old"), b"1").unwrap();
        assert!(StagedDir::new(&target, false).is_err());
        let s = StagedDir::new(&target, true).unwrap();
        fs::write(s.path().join("new"), b"2").unwrap();
        s.commit().unwrap();
        assert!(target.join("new").exists());
        assert!(!target.join("old").exists());
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }
}
