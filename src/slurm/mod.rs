//! `privalign slurm`: run a sweep as a Slurm job array of shards plus one
//! dependent merge job — as a Slurm citizen, not a scheduler of its own.
//!
//! Slurm schedules, retries (`--requeue`) and reports (`squeue`, `sacct`);
//! privalign only writes two sbatch scripts ([`script`]), submits them with
//! `sbatch --parsable` ([`sbatch`]) and records the job ids. Under `--out DIR`:
//!
//! ```text
//! DIR/slurm/array.sbatch, merge.sbatch   the scripts as last submitted
//! DIR/slurm/submissions.yaml             config, --set, N and every submission's job ids
//! DIR/slurm/logs/shard-K.out, merge-J.out
//! DIR/shards/K/                          shard K of N (`privalign sweep --shard K/N`)
//! DIR/results/                           the merged results (`privalign merge`)
//! ```
//!
//! **Resume.** `--resume` reads the record, refuses while any of its jobs is
//! still queued or running (two writers on one shard would race), and
//! resubmits only the shards whose directory is missing or whose
//! `shard.yaml` is not `finished`, plus a new merge job depending on them.
//! The resubmitted tasks run `sweep --resume`, so they keep their finished
//! units. Whether a finished shard was made with the current config is
//! checked by `merge` (it refuses mixed config hashes, naming the shard);
//! `--resume` itself only requires the same config path, `--set` list and N.

pub mod sbatch;
pub mod script;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::fs;
use std::path::PathBuf;

use crate::bail_input;
use crate::fsutil::write_atomic;
use crate::results::manifest::MANIFEST_FILE;
use crate::results::shard_manifest::read_shard_manifest;
pub use script::{Layout, Plan};

/// The flags of `privalign slurm`.
#[derive(Clone, Debug)]
pub struct SlurmOptions {
    pub config: PathBuf,
    pub sets: Vec<String>,
    pub shards: usize,
    pub out: PathBuf,
    pub partition: Option<String>,
    pub time: Option<String>,
    /// CPUs per array task (= the shard's `--threads`); default 1, Slurm's
    /// own default.
    pub cpus_per_task: Option<usize>,
    pub mem: Option<String>,
    pub account: Option<String>,
    /// Extra `#SBATCH` lines, with or without the `#SBATCH` prefix.
    pub sbatch_lines: Vec<String>,
    /// Submit the array held (`sbatch --hold`); release it with
    /// `scontrol release JOBID`.
    pub hold: bool,
    pub dry_run: bool,
    pub resume: bool,
}

/// `DIR/slurm/submissions.yaml`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    pub config: PathBuf,
    pub sets: Vec<String>,
    pub shards: usize,
    pub submissions: Vec<Submission>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Submission {
    /// Seconds since the Unix epoch.
    pub submitted_at: u64,
    /// The shards the array job runs (empty: merge only).
    pub tasks: Vec<usize>,
    pub array_job: Option<String>,
    pub merge_job: Option<String>,
    pub held: bool,
}

/// What `privalign slurm` did.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// `--dry-run`: the scripts (path, text) that would be written.
    DryRun {
        scripts: Vec<(PathBuf, String)>,
        commands: Vec<String>,
    },
    Submitted {
        layout: Layout,
        submission: Submission,
        shards: usize,
    },
    /// `--resume` found every shard finished and the results complete.
    UpToDate { results: PathBuf },
}

/// State of one shard directory, for `--resume`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardState {
    Missing,
    Unfinished,
    Finished,
}

fn one_token(flag: &str, v: &Option<String>) -> Result<()> {
    if let Some(v) = v
        && (v.is_empty() || v.chars().any(|c| c.is_whitespace() || c.is_control()))
    {
        bail_input!("{flag} {v:?}: expected one word without spaces, e.g. {flag} short");
    }
    Ok(())
}

/// Normalise `--sbatch-line` values to `#SBATCH --opt=value` lines; refuse
/// the options privalign sets itself (`--array`, `--dependency`).
pub fn sbatch_lines(lines: &[String]) -> Result<Vec<String>> {
    lines
        .iter()
        .map(|l| {
            if l.contains(['\n', '\r']) {
                bail_input!("--sbatch-line {l:?}: one line only (repeat the flag for several)");
            }
            let body = l.trim().strip_prefix("#SBATCH").unwrap_or(l.trim()).trim();
            if !body.starts_with('-') {
                bail_input!(
                    "--sbatch-line {l:?}: expected an sbatch option such as --qos=high or \"#SBATCH --gres=gpu:0\""
                );
            }
            let opt = body.split(['=', ' ', '\t']).next().unwrap_or(body);
            if ["--array", "-a", "--dependency", "-d"].contains(&opt) {
                bail_input!(
                    "--sbatch-line {l:?}: {opt} is set by privalign slurm itself (from --shards and the array job's id)"
                );
            }
            Ok(format!("#SBATCH {body}"))
        })
        .collect()
}

/// Build the plan from the options (validating them) for experiment `name`.
pub fn plan(o: &SlurmOptions, name: &str) -> Result<Plan> {
    if o.shards == 0 {
        bail_input!("--shards 0: give at least 1 shard");
    }
    if o.cpus_per_task == Some(0) {
        bail_input!("--cpus-per-task 0: give at least 1 CPU per array task");
    }
    // It becomes each shard's --threads, which is bounded (crate::threads).
    if let Some(c) = o.cpus_per_task.filter(|&c| c > crate::threads::MAX_THREADS) {
        bail_input!(
            "--cpus-per-task {c}: at most {} (it is each shard's --threads)",
            crate::threads::MAX_THREADS
        );
    }
    one_token("--partition", &o.partition)?;
    one_token("--time", &o.time)?;
    one_token("--mem", &o.mem)?;
    one_token("--account", &o.account)?;
    let config = fs::canonicalize(&o.config)
        .with_context(|| format!("{}: cannot resolve the config path", o.config.display()))?;
    let out = std::path::absolute(&o.out)
        .with_context(|| format!("{}: cannot make the path absolute", o.out.display()))?;
    let exe = std::env::current_exe().context("finding the path of the privalign binary")?;
    let workdir = std::env::current_dir().context("reading the current directory")?;
    Ok(Plan {
        exe,
        config,
        sets: o.sets.clone(),
        name: name.to_string(),
        shards: o.shards,
        layout: Layout::new(&out),
        workdir,
        partition: o.partition.clone(),
        time: o.time.clone(),
        cpus_per_task: o.cpus_per_task.unwrap_or(1),
        mem: o.mem.clone(),
        account: o.account.clone(),
        extra: sbatch_lines(&o.sbatch_lines)?,
    })
}

/// Whether shard `k`'s directory is missing, unfinished or finished (for N
/// = `shards`). A finished manifest naming another K or N is an input error:
/// the directory belongs to a different split.
pub fn shard_state(layout: &Layout, k: usize, shards: usize) -> Result<ShardState> {
    let dir = layout.shard(k);
    if !dir.exists() {
        return Ok(ShardState::Missing);
    }
    let Ok(Some(m)) = read_shard_manifest(&dir) else {
        return Ok(ShardState::Unfinished);
    };
    if m.shard != k || m.shards != shards {
        bail_input!(
            "{}: holds shard {}/{} but this submission's shard {k}/{shards} belongs there; it is not from this submission — move it away",
            dir.display(),
            m.shard,
            m.shards
        );
    }
    Ok(if m.finished {
        ShardState::Finished
    } else {
        ShardState::Unfinished
    })
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn read_record(layout: &Layout) -> Result<Option<Record>> {
    let path = layout.record();
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    match yaml_serde::from_str(&text) {
        Ok(r) => Ok(Some(r)),
        Err(e) => bail_input!("{}: not a submission record ({e})", path.display()),
    }
}

/// The sbatch command lines a user would type for `--dry-run`.
fn manual_commands(layout: &Layout, hold: bool) -> Vec<String> {
    let q = |p: PathBuf| script::shell_quote(&p.display().to_string());
    vec![
        format!(
            "array=$(sbatch --parsable{} {})",
            if hold { " --hold" } else { "" },
            q(layout.array_script())
        ),
        format!(
            "sbatch --parsable --dependency=afterok:${{array%%;*}} {}",
            q(layout.merge_script())
        ),
    ]
}

/// Write the scripts and submit them (or, with `--dry-run`, only show them).
pub fn submit(o: &SlurmOptions, name: &str) -> Result<Outcome> {
    let p = plan(o, name)?;
    let layout = p.layout.clone();
    let mut record = read_record(&layout)?;
    let tasks: Vec<usize> = if o.resume {
        let Some(r) = &record else {
            bail_input!(
                "{}: nothing to resume (no {}); run without --resume to submit",
                layout.root.display(),
                layout.record().display()
            );
        };
        if r.shards != p.shards {
            bail_input!(
                "{}: was submitted with --shards {}; --resume needs the same N (another N splits the units differently)",
                layout.root.display(),
                r.shards
            );
        }
        if r.config != p.config || r.sets != p.sets {
            bail_input!(
                "{}: was submitted for config {} with --set [{}]; --resume needs the same config and --set flags",
                layout.root.display(),
                r.config.display(),
                r.sets.join(", ")
            );
        }
        if !o.dry_run {
            let queued = sbatch::queued_job_ids()?;
            let mut active: Vec<&String> = r
                .submissions
                .iter()
                .flat_map(|s| s.array_job.iter().chain(&s.merge_job))
                .filter(|id| queued.contains(id))
                .collect();
            active.sort();
            active.dedup();
            if !active.is_empty() {
                let ids: Vec<&str> = active.iter().map(|s| s.as_str()).collect();
                bail_input!(
                    "{}: jobs {} of an earlier submission are still queued or running (squeue -j {}); wait for them or cancel them (scancel), then --resume",
                    layout.root.display(),
                    ids.join(", "),
                    ids.join(",")
                );
            }
        }
        let mut todo = Vec::new();
        for k in 0..p.shards {
            if shard_state(&layout, k, p.shards)? != ShardState::Finished {
                todo.push(k);
            }
        }
        if todo.is_empty() && layout.results().join(MANIFEST_FILE).exists() {
            return Ok(Outcome::UpToDate {
                results: layout.results(),
            });
        }
        todo
    } else {
        if record.is_some() || layout.shards_dir().exists() {
            bail_input!(
                "{}: already holds a submission ({}); continue it with --resume, or choose another --out",
                layout.root.display(),
                if record.is_some() {
                    layout.record()
                } else {
                    layout.shards_dir()
                }
                .display()
            );
        }
        (0..p.shards).collect()
    };

    let array_text = script::array_script(&p, &tasks);
    let merge_text = script::merge_script(&p);
    if o.dry_run {
        let mut scripts = Vec::new();
        if !tasks.is_empty() {
            scripts.push((layout.array_script(), array_text));
        }
        scripts.push((layout.merge_script(), merge_text));
        return Ok(Outcome::DryRun {
            scripts,
            commands: manual_commands(&layout, o.hold),
        });
    }

    fs::create_dir_all(layout.logs_dir())
        .with_context(|| format!("creating {}", layout.logs_dir().display()))?;
    fs::create_dir_all(layout.shards_dir())
        .with_context(|| format!("creating {}", layout.shards_dir().display()))?;
    write_atomic(&layout.merge_script(), merge_text.as_bytes())?;
    let record = record.get_or_insert_with(|| Record {
        config: p.config.clone(),
        sets: p.sets.clone(),
        shards: p.shards,
        submissions: Vec::new(),
    });
    let mut sub = Submission {
        submitted_at: now(),
        tasks: tasks.clone(),
        array_job: None,
        merge_job: None,
        held: o.hold && !tasks.is_empty(),
    };
    let save = |record: &Record| -> Result<()> {
        write_atomic(&layout.record(), yaml_serde::to_string(record)?.as_bytes())
    };
    let mut dependency = Vec::new();
    if !tasks.is_empty() {
        write_atomic(&layout.array_script(), array_text.as_bytes())?;
        let flags = if o.hold {
            vec!["--hold".to_string()]
        } else {
            Vec::new()
        };
        let id = sbatch::submit(&layout.array_script(), &flags)?;
        dependency.push(format!("--dependency=afterok:{id}"));
        sub.array_job = Some(id);
        // Record the array before submitting the merge: if the merge's
        // submission fails, --resume still knows these jobs.
        record.submissions.push(sub.clone());
        save(record)?;
        record.submissions.pop();
    }
    let merge = sbatch::submit(&layout.merge_script(), &dependency).with_context(|| {
        format!(
            "the array job {} is queued; submit the merge again with `privalign slurm … --resume` once it finishes",
            sub.array_job.as_deref().unwrap_or("-")
        )
    })?;
    sub.merge_job = Some(merge);
    record.submissions.push(sub.clone());
    save(record)?;
    Ok(Outcome::Submitted {
        layout,
        submission: sub,
        shards: p.shards,
    })
}

/// What to print for an outcome: the job ids and how to follow them.
pub fn report(o: &Outcome) -> String {
    let mut s = String::new();
    match o {
        Outcome::DryRun { scripts, commands } => {
            for (path, text) in scripts {
                let _ = writeln!(s, "# ---- {} ----\n{text}", path.display());
            }
            let _ = writeln!(
                s,
                "# --dry-run: nothing written or submitted. `privalign slurm` without --dry-run\n# writes these files and runs:"
            );
            for c in commands {
                let _ = writeln!(s, "#   {c}");
            }
        }
        Outcome::UpToDate { results } => {
            let _ = writeln!(
                s,
                "every shard is finished and {} is complete; nothing to submit",
                results.display()
            );
        }
        Outcome::Submitted {
            layout,
            submission,
            shards,
        } => {
            let merge = submission.merge_job.as_deref().unwrap_or("-");
            let mut ids = Vec::new();
            match &submission.array_job {
                Some(a) => {
                    let _ = writeln!(
                        s,
                        "submitted array job {a}: shards {} of {shards}{}",
                        script::array_spec(&submission.tasks),
                        if submission.held {
                            format!(" (held: release with `scontrol release {a}`)")
                        } else {
                            String::new()
                        }
                    );
                    let _ = writeln!(
                        s,
                        "submitted merge job {merge}: runs after every task of {a} succeeded"
                    );
                    ids.push(a.as_str());
                }
                None => {
                    let _ = writeln!(s, "every shard is finished; submitted merge job {merge}");
                }
            }
            ids.push(merge);
            let ids = ids.join(",");
            let _ = writeln!(s, "follow:   squeue -j {ids}");
            let _ = writeln!(
                s,
                "history:  sacct -j {ids} --format=JobID,JobName,State,ExitCode,Elapsed,MaxRSS"
            );
            let _ = writeln!(s, "logs:     {}", layout.logs_dir().display());
            let _ = writeln!(
                s,
                "results:  {} (when job {merge} completes; if a task fails, fix it and rerun with --resume)",
                layout.results().display()
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{EXIT_BAD_INPUT, exit_code};
    use crate::results::shard_manifest::{test_manifest, write_test_manifest};
    use std::path::Path;

    #[test]
    fn sbatch_line_forms() {
        let l = sbatch_lines(&["--qos=high".into(), "#SBATCH --gres=gpu:1".into()]).unwrap();
        assert_eq!(l, ["#SBATCH --qos=high", "#SBATCH --gres=gpu:1"]);
        for bad in [
            "--array=0-3",
            "#SBATCH --dependency=afterok:1",
            "-a 1",
            "qos",
            "--x\n--y",
        ] {
            let e = sbatch_lines(&[bad.into()]).unwrap_err();
            assert_eq!(exit_code(&e), EXIT_BAD_INPUT, "{bad}");
        }
    }

    fn opts(dir: &Path) -> SlurmOptions {
        SlurmOptions {
            config: dir.join("c.yaml"),
            sets: vec![],
            shards: 3,
            out: dir.join("run"),
            partition: None,
            time: None,
            cpus_per_task: None,
            mem: None,
            account: None,
            sbatch_lines: vec![],
            hold: false,
            dry_run: true,
            resume: false,
        }
    }

    #[test]
    fn plan_validates_flags() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("c.yaml"), "x").unwrap();
        let p = plan(&opts(d.path()), "demo").unwrap();
        assert!(p.exe.is_absolute() && p.config.is_absolute());
        assert_eq!(p.cpus_per_task, 1);
        let mut o = opts(d.path());
        o.shards = 0;
        assert_eq!(exit_code(&plan(&o, "x").unwrap_err()), EXIT_BAD_INPUT);
        let mut o = opts(d.path());
        o.partition = Some("a b".into());
        assert_eq!(exit_code(&plan(&o, "x").unwrap_err()), EXIT_BAD_INPUT);
        let mut o = opts(d.path());
        o.cpus_per_task = Some(0);
        assert_eq!(exit_code(&plan(&o, "x").unwrap_err()), EXIT_BAD_INPUT);
        o.cpus_per_task = Some(crate::threads::MAX_THREADS + 1);
        let e = plan(&o, "x").unwrap_err();
        assert_eq!(exit_code(&e), EXIT_BAD_INPUT);
        assert!(e.to_string().contains("at most 1024"), "{e}");
    }

    #[test]
    fn dry_run_writes_nothing_and_resume_needs_a_record() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("c.yaml"), "x").unwrap();
        let out = submit(&opts(d.path()), "demo").unwrap();
        let Outcome::DryRun { scripts, commands } = &out else {
            panic!("{out:?}")
        };
        assert_eq!(scripts.len(), 2);
        assert!(scripts[0].1.contains("--array=0-2"));
        assert!(commands[1].contains("--dependency=afterok:"));
        assert!(!d.path().join("run").exists());
        let text = report(&out);
        assert!(text.contains("nothing written or submitted"));
        let mut o = opts(d.path());
        o.resume = true;
        let e = submit(&o, "demo").unwrap_err();
        assert_eq!(exit_code(&e), EXIT_BAD_INPUT);
        assert!(e.to_string().contains("nothing to resume"), "{e}");
    }

    fn write_shard(root: &Path, k: usize, n: usize, finished: bool) {
        write_test_manifest(&Layout::new(root).shard(k), &test_manifest(k, n, finished));
    }

    /// `--resume` resubmits exactly the missing and unfinished shards.
    #[test]
    fn resume_selects_missing_and_unfinished_shards() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("c.yaml"), "x").unwrap();
        let mut o = opts(d.path());
        o.shards = 5;
        let p = plan(&o, "demo").unwrap();
        let layout = p.layout.clone();
        fs::create_dir_all(layout.slurm_dir()).unwrap();
        let rec = Record {
            config: p.config.clone(),
            sets: vec![],
            shards: 5,
            submissions: vec![],
        };
        fs::write(layout.record(), yaml_serde::to_string(&rec).unwrap()).unwrap();
        write_shard(&layout.root, 0, 5, true);
        write_shard(&layout.root, 1, 5, false);
        write_shard(&layout.root, 3, 5, true);
        fs::create_dir_all(layout.shard(4)).unwrap(); // started, no manifest yet
        o.resume = true;
        let Outcome::DryRun { scripts, .. } = submit(&o, "demo").unwrap() else {
            panic!()
        };
        assert!(
            scripts[0].1.contains("#SBATCH --array=1-2,4\n"),
            "{}",
            scripts[0].1
        );
        // Without --resume the directory is refused.
        o.resume = false;
        let e = submit(&o, "demo").unwrap_err();
        assert!(e.to_string().contains("--resume"), "{e}");
        // Another N, or a shard from another split, is refused.
        o.resume = true;
        o.shards = 4;
        assert_eq!(exit_code(&submit(&o, "demo").unwrap_err()), EXIT_BAD_INPUT);
        o.shards = 5;
        write_shard(&layout.root, 2, 7, true);
        let e = submit(&o, "demo").unwrap_err();
        assert!(e.to_string().contains("holds shard 2/7"), "{e}");
        // Every shard finished and results present: nothing to do.
        for k in 0..5 {
            write_shard(&layout.root, k, 5, true);
        }
        let Outcome::DryRun { scripts, .. } = submit(&o, "demo").unwrap() else {
            panic!()
        };
        assert_eq!(scripts.len(), 1, "merge only");
        fs::create_dir_all(layout.results()).unwrap();
        fs::write(layout.results().join(MANIFEST_FILE), "x").unwrap();
        assert!(matches!(
            submit(&o, "demo").unwrap(),
            Outcome::UpToDate { .. }
        ));
    }
}
