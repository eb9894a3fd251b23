//! One writer per results directory.
//!
//! `sweep`, `reproduce` and `fsrc` hold `<out>/.privalign-lock` while they
//! write `<out>`; a second writer exits 2 naming the holder. Without it two
//! sweeps into one `--out` interleave their files (issue #13 measured 19
//! mixed directories in 40 trials).
//!
//! The lock file is created with `O_EXCL` (atomic on local filesystems and on
//! NFSv3+) and records who holds it: pid, host, start time, the command and,
//! under Slurm, `SLURM_JOB_ID`, so a user (or a later cluster launcher) can
//! see which job to wait for. It is removed when the holder finishes or
//! fails with a handled error; a process killed (Ctrl-C, SIGKILL, a node
//! failure) leaves it behind. Such a *stale*
//! lock is taken over when its host is this host and its pid is no longer
//! running (`/proc/PID` is absent). A lock from another host is never taken
//! over: privalign cannot see that host's processes, so the message says how
//! to remove it by hand once the job is known to be gone.

use anyhow::{Context, Result};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::input_error;

/// Name of the lock file inside a results directory.
pub const LOCK_FILE: &str = ".privalign-lock";

/// Who holds a lock, as recorded in the lock file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    pub host: String,
    pub slurm_job_id: Option<String>,
    /// `SLURM_RESTART_COUNT` (0 when unset) under Slurm: how often Slurm
    /// requeued the job before this incarnation.
    pub slurm_restart_count: Option<u32>,
    pub command: String,
    pub started_unix: u64,
}

impl Holder {
    fn me(command: &str) -> Self {
        let slurm_job_id = std::env::var("SLURM_JOB_ID").ok().filter(|s| !s.is_empty());
        Self {
            pid: std::process::id(),
            host: this_host(),
            slurm_restart_count: slurm_job_id.as_ref().map(|_| {
                std::env::var("SLURM_RESTART_COUNT")
                    .ok()
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0)
            }),
            slurm_job_id,
            command: command.to_string(),
            started_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        }
    }

    fn render(&self) -> String {
        let mut s = format!(
            "pid: {}\nhost: {}\ncommand: {}\nstarted_unix: {}\n",
            self.pid, self.host, self.command, self.started_unix
        );
        if let Some(j) = &self.slurm_job_id {
            s += &format!("slurm_job_id: {j}\n");
        }
        if let Some(r) = self.slurm_restart_count {
            s += &format!("slurm_restart_count: {r}\n");
        }
        s
    }

    /// Parse a lock file; `None` when it is not one of ours (or truncated).
    fn parse(text: &str) -> Option<Self> {
        let mut h = Holder::default();
        let mut have_pid = false;
        for line in text.lines() {
            let (k, v) = line.split_once(": ")?;
            match k {
                "pid" => {
                    h.pid = v.parse().ok()?;
                    have_pid = true;
                }
                "host" => h.host = v.to_string(),
                "command" => h.command = v.to_string(),
                "started_unix" => h.started_unix = v.parse().unwrap_or(0),
                "slurm_job_id" => h.slurm_job_id = Some(v.to_string()),
                "slurm_restart_count" => h.slurm_restart_count = v.parse().ok(),
                _ => {}
            }
        }
        have_pid.then_some(h)
    }

    fn describe(&self) -> String {
        let mut s = format!("pid {} on host {}", self.pid, self.host);
        if let Some(j) = &self.slurm_job_id {
            s += &format!(" (Slurm job {j})");
        }
        if !self.command.is_empty() {
            s += &format!(", running `{}`", self.command);
        }
        s
    }

    /// Whether this holder is certainly gone, seen from `me`: same host
    /// and its pid not running — or an earlier incarnation of `me`'s own
    /// Slurm job. Slurm runs one incarnation of a job at a time and bumps
    /// `SLURM_RESTART_COUNT` on every requeue (node failure, preemption,
    /// `scontrol requeue`), so a lock of the same job id with a lower restart
    /// count was left by an incarnation that is over, on whatever node it
    /// ran: a requeued array task takes over its own shard's lock and keeps
    /// its finished units. The same job id with the same count on another
    /// host (two steps of one allocation) is never taken.
    fn is_dead_for(&self, me: &Holder) -> bool {
        if self.host == me.host && !pid_running(self.pid) {
            return true;
        }
        matches!((&self.slurm_job_id, &me.slurm_job_id), (Some(a), Some(b)) if a == b)
            && self.slurm_restart_count.unwrap_or(0) < me.slurm_restart_count.unwrap_or(0)
    }
}

/// This machine's host name (Linux: the kernel's; elsewhere `HOSTNAME` or "unknown").
pub fn this_host() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// Whether `pid` is a running process. Where `/proc` is unavailable every
/// pid counts as running, so a lock is never taken from a live process.
fn pid_running(pid: u32) -> bool {
    let proc_ = Path::new("/proc");
    if !proc_.join("self").exists() {
        return true;
    }
    // A zombie still has /proc/PID; it no longer writes, so it counts as gone.
    match fs::read_to_string(proc_.join(pid.to_string()).join("stat")) {
        Ok(stat) => !stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
        Err(_) => false,
    }
}

/// A held lock; released (file removed) on drop.
#[derive(Debug)]
pub struct ResultsLock {
    path: PathBuf,
    holder: Holder,
}

impl ResultsLock {
    /// Take the lock of results directory `dir` (which must exist) for
    /// `command` ("sweep", "reproduce", "fsrc"). A live holder is an input
    /// error (exit 2) naming its pid; a dead one on this host is replaced,
    /// with a note on stderr.
    pub fn acquire(dir: &Path, command: &str) -> Result<Self> {
        let path = dir.join(LOCK_FILE);
        let me = Holder::me(command);
        for _ in 0..8 {
            match fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    f.write_all(me.render().as_bytes())
                        .and_then(|_| f.sync_all())
                        .with_context(|| format!("writing the lock {}", path.display()))?;
                    return Ok(Self { path, holder: me });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!(
                            "{}: cannot create the lock file (is the directory writable?)",
                            path.display()
                        )
                    });
                }
            }
            let text = match fs::read_to_string(&path) {
                Ok(t) => t,
                // Released between our create and read: try again.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
            };
            let Some(other) = Holder::parse(&text) else {
                // A holder between create and write, or a damaged file.
                std::thread::sleep(std::time::Duration::from_millis(50));
                if fs::read_to_string(&path).is_ok_and(|t| t == text) && !text.is_empty() {
                    return Err(input_error(format!(
                        "{}: exists but is not a privalign lock; if no privalign run writes {}, remove it",
                        path.display(),
                        dir.display()
                    )));
                }
                continue;
            };
            if !other.is_dead_for(&me) {
                return Err(input_error(format!(
                    "{}: is being written by another privalign process — {} (lock file {}); wait for it to finish{}",
                    dir.display(),
                    other.describe(),
                    path.display(),
                    if other.host == this_host() {
                        String::new()
                    } else {
                        format!(
                            ", or, if that job is gone, remove {} by hand",
                            path.display()
                        )
                    }
                )));
            }
            // Stale: move it aside (only one taker can), check that what we
            // moved is the stale lock we read, and retry the exclusive create.
            let aside = dir.join(format!("{LOCK_FILE}.stale-{}", me.pid));
            match fs::rename(&path, &aside) {
                Ok(()) => {
                    let moved = fs::read_to_string(&aside).unwrap_or_default();
                    if moved != text {
                        // We moved a fresh lock someone else just took: give it back.
                        let _ = fs::hard_link(&aside, &path);
                    } else {
                        eprintln!(
                            "note: {}: took over the lock of {} (that process is no longer running, or Slurm requeued its job)",
                            dir.display(),
                            other.describe()
                        );
                    }
                    let _ = fs::remove_file(&aside);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(e)
                        .with_context(|| format!("taking over the stale lock {}", path.display()));
                }
            }
        }
        Err(input_error(format!(
            "{}: could not take the lock (another process keeps taking it); try again",
            path.display()
        )))
    }

    /// Who holds this lock (this process).
    pub fn holder(&self) -> &Holder {
        &self.holder
    }
}

impl Drop for ResultsLock {
    fn drop(&mut self) {
        // Remove only our own lock.
        if fs::read_to_string(&self.path)
            .ok()
            .and_then(|t| Holder::parse(&t))
            .is_some_and(|h| h.pid == self.holder.pid && h.host == self.holder.host)
        {
            let _ = fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_writer_is_refused_naming_the_pid() {
        let d = tempfile::tempdir().unwrap();
        let l = ResultsLock::acquire(d.path(), "sweep").unwrap();
        // A live holder: this very process, under another name.
        let e = ResultsLock::acquire(d.path(), "fsrc").unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        let msg = format!("{e:#}");
        assert!(
            msg.contains(&format!("pid {}", std::process::id())),
            "{msg}"
        );
        drop(l);
        assert!(!d.path().join(LOCK_FILE).exists());
        let _again = ResultsLock::acquire(d.path(), "fsrc").unwrap();
    }

    #[test]
    fn stale_lock_of_a_dead_process_is_taken_over() {
        let d = tempfile::tempdir().unwrap();
        // A pid that cannot be running: above the kernel's pid_max (≤ 2^22).
        let dead = Holder {
            pid: 4_194_304 + 17,
            host: this_host(),
            slurm_job_id: Some("42".into()),
            slurm_restart_count: Some(0),
            command: "sweep".into(),
            started_unix: 1,
        };
        fs::write(d.path().join(LOCK_FILE), dead.render()).unwrap();
        let l = ResultsLock::acquire(d.path(), "sweep").unwrap();
        assert_eq!(l.holder().pid, std::process::id());
        drop(l);
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 0, "leftovers");
    }

    #[test]
    fn lock_of_another_host_is_never_taken() {
        let d = tempfile::tempdir().unwrap();
        let other = Holder {
            pid: 4_194_304 + 17,
            host: "some-other-node".into(),
            slurm_job_id: Some("1234".into()),
            slurm_restart_count: Some(0),
            command: "sweep".into(),
            started_unix: 1,
        };
        fs::write(d.path().join(LOCK_FILE), other.render()).unwrap();
        let e = ResultsLock::acquire(d.path(), "sweep").unwrap_err();
        let msg = format!("{e:#}");
        assert!(
            msg.contains("Slurm job 1234") && msg.contains("remove"),
            "{msg}"
        );
        assert!(d.path().join(LOCK_FILE).exists());
    }

    /// A requeued Slurm job (same SLURM_JOB_ID, higher SLURM_RESTART_COUNT)
    /// takes over the lock its earlier incarnation left on another node;
    /// nothing else from another host is taken.
    #[test]
    fn requeued_slurm_job_takes_over_its_own_lock() {
        let old = Holder {
            pid: 1, // running (init), on another host
            host: "node-a".into(),
            slurm_job_id: Some("77".into()),
            slurm_restart_count: Some(0),
            command: "sweep".into(),
            started_unix: 1,
        };
        let me = |job: &str, restarts: u32| Holder {
            pid: std::process::id(),
            host: "node-b".into(),
            slurm_job_id: Some(job.into()),
            slurm_restart_count: Some(restarts),
            command: "sweep".into(),
            started_unix: 2,
        };
        assert!(
            old.is_dead_for(&me("77", 1)),
            "requeued: same job, next restart"
        );
        assert!(
            !old.is_dead_for(&me("77", 0)),
            "same incarnation on another node"
        );
        assert!(!old.is_dead_for(&me("78", 1)), "another job");
        let outside = Holder {
            slurm_job_id: None,
            slurm_restart_count: None,
            ..me("x", 0)
        };
        assert!(!old.is_dead_for(&outside), "not under Slurm");
        // The file round-trips the restart count.
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join(LOCK_FILE), old.render()).unwrap();
        let back = Holder::parse(&fs::read_to_string(d.path().join(LOCK_FILE)).unwrap());
        assert_eq!(back, Some(old));
    }

    #[test]
    fn holder_round_trips() {
        let h = Holder::me("reproduce");
        assert_eq!(Holder::parse(&h.render()), Some(h));
        assert_eq!(Holder::parse("not a lock"), None);
    }
}
