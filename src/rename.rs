//! Renaming onto a path only if nothing is there: the existence check and the
//! rename are one atomic step, so two writers racing for one output cannot
//! both succeed (issue: "two `ingest` runs into one `--out` must not both
//! exit 0").
//!
//! On Linux this is `renameat2(…, RENAME_NOREPLACE)`. A plain `rename(2)` of a
//! directory silently replaces an *empty* directory at the target, and
//! checking `exists()` first leaves a window between check and rename; the
//! flag closes both. Filesystems that do not support the flag (`EINVAL`) and
//! other systems fall back to check-then-rename, which is racy only there.

use std::io;
use std::path::Path;

/// Rename `from` to `to`, failing with [`io::ErrorKind::AlreadyExists`] when
/// `to` exists (file, directory — even an empty one — or symlink).
pub fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let cstr = |p: &Path| {
            CString::new(p.as_os_str().as_bytes())
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))
        };
        let (a, b) = (cstr(from)?, cstr(to)?);
        // SAFETY: both pointers are valid NUL-terminated strings for the call.
        let r = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                a.as_ptr(),
                libc::AT_FDCWD,
                b.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINVAL) | Some(libc::ENOSYS) => {}
            _ => return Err(e),
        }
    }
    if std::fs::symlink_metadata(to).is_ok() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "target exists",
        ));
    }
    std::fs::rename(from, to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_an_existing_empty_directory_and_a_file() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::write(a.join("x"), b"1").unwrap();
        std::fs::create_dir(&b).unwrap();
        let e = rename_noreplace(&a, &b).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert!(a.join("x").exists() && !b.join("x").exists());
        std::fs::remove_dir(&b).unwrap();
        std::fs::write(&b, b"user").unwrap();
        assert_eq!(
            rename_noreplace(&a, &b).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        assert_eq!(std::fs::read(&b).unwrap(), b"user");
        std::fs::remove_file(&b).unwrap();
        rename_noreplace(&a, &b).unwrap();
        assert!(b.join("x").exists() && !a.exists());
    }
}
