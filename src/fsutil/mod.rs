//! Atomic output: a directory or file is either absent, its previous version,
//! or complete — never half-written.
//!
//! Everything privalign writes goes first to a hidden sibling
//! (`.NAME.tmp-PID`) on the same filesystem and is renamed into place only
//! after every byte has been written. If the process fails before that, the
//! temporary is removed by `Drop`; if it is killed, only a hidden `.tmp-`
//! entry is left, which never looks like a finished result.
//!
//! [`lock`] keeps a second writer out of a directory being written.

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::bail_input;
use crate::error::input_error;
use crate::rename::rename_noreplace;

pub mod lock;

/// A directory being built next to its final location.
pub struct StagedDir {
    /// The path the user gave (for messages); `target` is it with a final
    /// symbolic link followed.
    user: PathBuf,
    target: PathBuf,
    staging: PathBuf,
    replace: bool,
    committed: bool,
}

/// The longest file name most filesystems allow (ext4, xfs, btrfs, tmpfs).
const NAME_MAX: usize = 255;

/// The hidden temporary sibling of `target`: `.NAME.TAG-PID`, or, when that
/// would exceed the filesystem's 255-byte name limit although `NAME` itself
/// fits, `.privalign-TAG-PID-HASH` with a hash of `NAME` (so a long output
/// name never fails because of privalign's own temporary name).
fn sibling(target: &Path, tag: &str) -> Result<PathBuf> {
    let Some(name) = target.file_name() else {
        bail_input!(
            "{}: output path has no final component; name a file or directory, e.g. {}/out",
            target.display(),
            target.display()
        );
    };
    let parent = target.parent().unwrap_or(Path::new(""));
    let pid = std::process::id();
    let long = format!(".{}.{tag}-{pid}", name.to_string_lossy());
    if long.len() <= NAME_MAX {
        return Ok(parent.join(long));
    }
    let h = hex::encode(Sha256::digest(name.as_encoded_bytes()));
    Ok(parent.join(format!(".privalign-{tag}-{pid}-{}", &h[..16])))
}

/// Follow `path`'s final component while it is a symbolic link, so that
/// writing "to" a link writes the file it points to and keeps the link
/// (README: "What an --out that is a symlink means"). A dangling link is
/// written through too (its target is created). More than 40 hops is a loop.
pub fn resolve_link(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let t = fs::read_link(&p).map_err(|e| output_error(path, "reading the link", e))?;
                p = match p.parent() {
                    Some(dir) if t.is_relative() => dir.join(t),
                    _ => t,
                };
            }
            _ => return Ok(p),
        }
    }
    bail_input!(
        "{}: too many levels of symbolic links (a loop?); point --out at a real file or directory",
        path.display()
    )
}

/// An I/O error while writing the user's output `path`, worded for the
/// user: it names `path` (never privalign's hidden temporary), says what to
/// do, and is an input error (exit 2) when the cause is the destination the
/// user chose (not writable, not a directory, a name too long), else exit 1.
pub fn output_error(path: &Path, doing: &str, e: std::io::Error) -> anyhow::Error {
    use std::io::ErrorKind as K;
    let dir = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(p) => p.display().to_string(),
        None => ".".into(),
    };
    let user_fault = match e.kind() {
        K::PermissionDenied | K::ReadOnlyFilesystem => Some(format!(
            "{dir} is not writable; choose a writable output location or fix its permissions"
        )),
        K::NotADirectory => Some(format!(
            "a component of {dir} is a file, not a directory; choose another output path"
        )),
        K::IsADirectory => {
            Some("it is a directory; give a file name (or move the directory away)".to_string())
        }
        K::InvalidFilename => Some(format!(
            "the name is too long for the filesystem ({} bytes; the limit is {NAME_MAX}); choose a shorter name",
            path.file_name().map_or(0, |n| n.len())
        )),
        K::AlreadyExists => Some("it already exists; move it away or choose another path".into()),
        K::NotFound => Some(format!(
            "the directory {dir} does not exist; create it or choose another output path"
        )),
        K::StorageFull => None,
        _ => None,
    };
    match user_fault {
        Some(fix) => input_error(format!(
            "{}: cannot write ({doing}: {e}); {fix}",
            path.display()
        )),
        None => anyhow::anyhow!(
            "{}: cannot write ({doing}: {e}); check free space and the filesystem",
            path.display()
        ),
    }
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
        let user = target;
        let target = &resolve_link(target)?;
        if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent)
                .map_err(|e| output_error(user, "creating its parent directory", e))?;
        }
        let staging = sibling(target, "tmp")?;
        if staging.exists() {
            fs::remove_dir_all(&staging)
                .map_err(|e| output_error(user, "removing a stale temporary beside it", e))?;
        }
        fs::create_dir(&staging)
            .map_err(|e| output_error(user, "creating a temporary directory beside it", e))?;
        Ok(Self {
            user: user.to_path_buf(),
            target: target.to_path_buf(),
            staging,
            replace,
            committed: false,
        })
    }

    /// Where files should be written while staging.
    pub fn path(&self) -> &Path {
        &self.staging
    }

    /// Move the staged directory into place, replacing any previous version
    /// when staging was started with `replace`. Without it, the existence
    /// check and the rename are one atomic step ([`rename_noreplace`]): if
    /// another process created `target` while this one was working, this
    /// commit fails (exit 2) and leaves the other's output untouched.
    pub fn commit(mut self) -> Result<()> {
        if !self.replace {
            return match rename_noreplace(&self.staging, &self.target) {
                Ok(()) => {
                    self.committed = true;
                    Ok(())
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    Err(input_error(format!(
                        "{}: was created by another process while this one was writing; nothing was replaced. Choose another --out, or pass --force to replace it",
                        self.user.display()
                    )))
                }
                Err(e) => Err(output_error(
                    &self.user,
                    "renaming the finished output into place",
                    e,
                )),
            };
        }
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

/// Checks before writing the user-named output file `path` (given by
/// `flag`): refuse an existing file without `force`, and a directory —
/// before any work is done.
pub fn check_new_file(path: &Path, flag: &str, force: bool) -> Result<()> {
    if path.is_dir() {
        bail_input!(
            "{}: is a directory; {flag} takes a file path",
            path.display()
        );
    }
    if path.exists() && !force {
        bail_input!(
            "{}: already exists; choose another path or pass --force to replace it",
            path.display()
        );
    }
    Ok(())
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
///
/// Errors name `path` as the user gave it, never the temporary. A `path`
/// that is a symbolic link is written through: the file it points to is
/// replaced and the link is kept.
pub fn with_atomic_file(path: &Path, fill: impl FnOnce(&mut fs::File) -> Result<()>) -> Result<()> {
    let user = path;
    let path = &resolve_link(path)?;
    if path.is_dir() {
        bail_input!(
            "{}: is a directory; give a file name (or move the directory away)",
            user.display()
        );
    }
    let tmp = sibling(path, "tmp")?;
    let result = (|| -> Result<()> {
        let mut f = fs::File::create(&tmp)
            .map_err(|e| output_error(user, "creating a temporary file beside it", e))?;
        fill(&mut f).with_context(|| format!("writing {}", user.display()))?;
        f.sync_all().ok();
        fs::rename(&tmp, path)
            .map_err(|e| output_error(user, "renaming the finished file into place", e))
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
    fn commit_without_replace_loses_to_a_directory_created_meanwhile() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("out");
        let s = StagedDir::new(&target, false).unwrap();
        fs::write(s.path().join("a"), b"mine").unwrap();
        // Another writer (or the user) creates the output while we work;
        // a plain rename(2) would silently replace this empty directory.
        fs::create_dir(&target).unwrap();
        let e = s.commit().unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(e.to_string().contains("created by another process"), "{e}");
        assert_eq!(fs::read_dir(&target).unwrap().count(), 0);
        assert_eq!(
            fs::read_dir(d.path()).unwrap().count(),
            1,
            "staging left behind"
        );
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
