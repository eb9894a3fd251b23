//! Where and from what a run came: the git commit and the host, recorded in
//! results and shard manifests (run-specific fields, not part of any hash).

use std::fs;

/// The commit of the working directory's repository, when there is one.
pub(crate) fn git_commit() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// This machine's host name.
pub(crate) fn host() -> Option<String> {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
}
