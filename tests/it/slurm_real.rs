//! `privalign slurm` on a real Slurm: a one-node cluster on this machine
//! (scripts/slurm-local.sh: Debian's slurm-wlm and munge, daemons as root).
//!
//! With `CI=true` this test runs or fails — it never skips. Elsewhere it
//! skips, printing why, when the cluster cannot start (not root, no apt).
//!
//! Two submissions of the small demo sweep run side by side:
//! 1. 3 array tasks plus the merge job → results byte-identical to a local
//!    `privalign sweep`;
//! 2. the same, held; task 1 is cancelled before it starts, the rest
//!    released. Slurm cancels the merge (`kill_invalid_depend`), `privalign
//!    merge` refuses naming the missing shard, and `privalign slurm --resume`
//!    resubmits only task 1 plus a merge, which completes with byte-identical
//!    results.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const RESULT_FILES: [&str; 3] = ["cells.parquet", "summary.parquet", "fsrc.parquet"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Skip (outside CI) or fail (in CI) with `why`.
fn unavailable(why: &str) -> Option<Cluster> {
    assert!(!in_ci(), "CI=true: the real-Slurm test must run, but {why}");
    eprintln!("skipped: {why}");
    None
}

struct Cluster {
    dir: PathBuf,
    conf: PathBuf,
    started_here: bool,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.started_here {
            let _ = Command::new("bash")
                .arg(root().join("scripts/slurm-local.sh"))
                .arg("stop")
                .env("PRIVALIGN_SLURM_DIR", &self.dir)
                .status();
        }
    }
}

fn pid_alive(pidfile: &Path) -> bool {
    std::fs::read_to_string(pidfile)
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists())
}

fn start_cluster() -> Option<Cluster> {
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !is_root {
        return unavailable(
            "not root: the local Slurm daemons run as root (scripts/slurm-local.sh)",
        );
    }
    let dir = std::env::var_os("PRIVALIGN_SLURM_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/privalign-slurm"));
    let started_here = !pid_alive(&dir.join("slurmctld.pid"));
    let t = Instant::now();
    let out = Command::new("bash")
        .arg(root().join("scripts/slurm-local.sh"))
        .arg("start")
        .env("PRIVALIGN_SLURM_DIR", &dir)
        .output()
        .expect("running bash");
    if !out.status.success() {
        return unavailable(&format!(
            "scripts/slurm-local.sh start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    eprintln!(
        "local Slurm up in {:.1} s ({})",
        t.elapsed().as_secs_f64(),
        if started_here {
            "started"
        } else {
            "already running"
        }
    );
    Some(Cluster {
        conf: dir.join("slurm.conf"),
        dir,
        started_here,
    })
}

impl Cluster {
    fn cmd(&self, prog: &str) -> Command {
        let mut c = Command::new(prog);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    fn run(&self, prog: &str, args: &[&str]) -> String {
        let o = self.cmd(prog).args(args).output().expect(prog);
        assert!(
            o.status.success(),
            "{prog} {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn privalign(&self, args: &[String]) -> std::process::Output {
        self.cmd(bin().to_str().unwrap())
            .args(args)
            .output()
            .expect("privalign")
    }

    /// Wait until none of `ids` is pending or running (polling squeue:
    /// `sbatch --wait` backs off to ~10 s).
    fn wait_gone(&self, ids: &[&str]) {
        let t = Instant::now();
        let list = ids.join(",");
        loop {
            let out = self.run("squeue", &["-h", "-j", &list, "-o", "%i %T"]);
            if out.trim().is_empty() {
                return;
            }
            assert!(
                t.elapsed() < Duration::from_secs(600),
                "jobs {list} still queued after 600 s:\n{out}\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn state(&self, id: &str) -> String {
        let out = self.run("scontrol", &["show", "job", id]);
        out.split_whitespace()
            .find_map(|w| w.strip_prefix("JobState="))
            .unwrap_or("?")
            .to_string()
    }

    fn logs(&self) -> String {
        std::fs::read_to_string(self.dir.join("log/slurmctld.log"))
            .map(|s| s.lines().rev().take(20).collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    }
}

/// The small demo sweep's flags: every algorithm and FSRC, fewer n and
/// replicates so the debug build runs it in seconds.
fn sets() -> Vec<String> {
    [
        format!("datasets.0.path={}", demo_prepared().display()),
        "n=[2, 64]".into(),
        "replicates=2".into(),
        "fsrc.seeds=2".into(),
        "reports={}".into(),
    ]
    .into_iter()
    .flat_map(|s| ["--set".to_string(), s])
    .collect()
}

fn config() -> String {
    root().join("experiments/demo.yaml").display().to_string()
}

fn submit(c: &Cluster, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "slurm".to_string(),
        config(),
        "--shards".into(),
        "3".into(),
        "--out".into(),
        out.display().to_string(),
    ];
    args.extend(sets());
    args.extend(extra.iter().map(|s| s.to_string()));
    c.privalign(&args)
}

/// The last submission's (array job, merge job) ids.
fn job_ids(out: &Path) -> (Option<String>, String, Vec<usize>) {
    let text = std::fs::read_to_string(out.join("slurm/submissions.yaml")).unwrap();
    let v: yaml_serde::Value = yaml_serde::from_str(&text).unwrap();
    let last = v["submissions"]
        .as_sequence()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let s = |k: &str| last[k].as_str().map(str::to_string);
    let tasks = last["tasks"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap() as usize)
        .collect();
    (s("array_job"), s("merge_job").unwrap(), tasks)
}

fn assert_identical(local: &Path, merged: &Path) {
    for f in RESULT_FILES {
        let (a, b) = (
            std::fs::read(local.join(f)).unwrap(),
            std::fs::read(merged.join(f)).unwrap(),
        );
        assert!(
            a == b,
            "{f} differs between {} and {}",
            local.display(),
            merged.display()
        );
    }
}

fn shard_log(out: &Path) -> String {
    let mut s = String::new();
    if let Ok(rd) = std::fs::read_dir(out.join("slurm/logs")) {
        for e in rd.flatten() {
            s += &format!(
                "== {}\n{}\n",
                e.path().display(),
                std::fs::read_to_string(e.path()).unwrap_or_default()
            );
        }
    }
    s
}

#[test]
fn job_array_and_merge_match_the_local_run_and_resume_after_a_cancelled_task() {
    let Some(c) = start_cluster() else {
        return;
    };
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let t = Instant::now();

    // Case 1: 3 shards + merge.
    let run1 = scratch.path().join("run1");
    let o = submit(&c, &run1, &["--cpus-per-task", "1"]);
    ok(&o);
    assert!(stdout(&o).contains("squeue -j"), "{}", stdout(&o));
    let (a1, m1, tasks1) = job_ids(&run1);
    assert_eq!(tasks1, [0, 1, 2]);
    let a1 = a1.unwrap();

    // Case 2: held; cancel task 1 before anything runs, release the rest.
    let run2 = scratch.path().join("run2");
    let o = submit(&c, &run2, &["--hold"]);
    ok(&o);
    assert!(stdout(&o).contains("scontrol release"), "{}", stdout(&o));
    let (a2, m2, _) = job_ids(&run2);
    let a2 = a2.unwrap();
    c.run("scancel", &[&format!("{a2}_1")]);
    c.run("scontrol", &["release", &a2]);

    // The local one-machine run, while the cluster works.
    let local = scratch.path().join("local");
    let mut args = vec![
        "sweep".to_string(),
        config(),
        "--out".into(),
        local.display().to_string(),
        "--no-progress".into(),
    ];
    args.extend(sets());
    ok(&c.privalign(&args));

    c.wait_gone(&[&a1, &m1, &a2, &m2]);
    assert_eq!(c.state(&m1), "COMPLETED", "{}", shard_log(&run1));
    assert_identical(&local, &run1.join("results"));
    eprintln!("case 1 done after {:.1} s", t.elapsed().as_secs_f64());

    // Slurm cancelled the merge of case 2: its dependency can never be met.
    assert_eq!(c.state(&m2), "CANCELLED", "{}", shard_log(&run2));
    assert!(!run2.join("results").exists());
    // merge refuses, naming the missing shard.
    let mut args = vec!["merge".to_string()];
    for k in 0..3 {
        args.push(run2.join(format!("shards/{k}")).display().to_string());
    }
    args.extend([
        "--out".into(),
        scratch.path().join("partial").display().to_string(),
    ]);
    let o = c.privalign(&args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&run2.join("shards/1").display().to_string()),
        "{}",
        stderr(&o)
    );
    assert!(!scratch.path().join("partial").exists());

    // --resume resubmits task 1 only, plus a merge that completes.
    let o = submit(&c, &run2, &["--resume"]);
    ok(&o);
    let (a3, m3, tasks3) = job_ids(&run2);
    assert_eq!(tasks3, [1], "{}", stdout(&o));
    c.wait_gone(&[a3.as_deref().unwrap(), &m3]);
    assert_eq!(c.state(&m3), "COMPLETED", "{}", shard_log(&run2));
    assert_identical(&local, &run2.join("results"));
    // Nothing left to do.
    let o = submit(&c, &run2, &["--resume"]);
    ok(&o);
    assert!(stdout(&o).contains("nothing to submit"), "{}", stdout(&o));
    eprintln!("both cases done in {:.1} s", t.elapsed().as_secs_f64());
}
