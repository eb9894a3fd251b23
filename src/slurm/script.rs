//! The two sbatch scripts of a sharded sweep, as pure functions of a
//! [`Plan`] (no I/O, so every line is unit-tested).
//!
//! * The **array script** runs one shard per array task:
//!   `privalign sweep CONFIG --shard $SLURM_ARRAY_TASK_ID/N --out
//!   DIR/shards/$SLURM_ARRAY_TASK_ID --threads $SLURM_CPUS_PER_TASK --resume`.
//!   `--resume` makes a requeued or resubmitted task keep the units it had
//!   finished; `--requeue` lets Slurm restart a task whose node failed or
//!   was preempted; `--open-mode=append` keeps one log per shard across
//!   restarts.
//! * The **merge script** runs `privalign merge` over every shard directory
//!   into `DIR/results`. It is submitted with `--dependency=afterok:<array
//!   job>` on sbatch's command line (the array's id is known only after its
//!   submission), so it starts only when every task succeeded; with a failed
//!   or cancelled task Slurm never starts it (and, with
//!   `DependencyParameters=kill_invalid_depend`, cancels it).
//!
//! Every path in the scripts is absolute (the privalign binary is the one
//! that wrote them), and the jobs run in the directory `privalign slurm` ran
//! in (`--chdir`), so relative paths inside the config mean what they mean
//! for a local `privalign sweep`.

use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Where a submission's files live under `--out DIR`.
#[derive(Clone, Debug)]
pub struct Layout {
    pub root: PathBuf,
}

impl Layout {
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
        }
    }
    /// The scripts, the submission record and the logs.
    pub fn slurm_dir(&self) -> PathBuf {
        self.root.join("slurm")
    }
    pub fn logs_dir(&self) -> PathBuf {
        self.slurm_dir().join("logs")
    }
    pub fn array_script(&self) -> PathBuf {
        self.slurm_dir().join("array.sbatch")
    }
    pub fn merge_script(&self) -> PathBuf {
        self.slurm_dir().join("merge.sbatch")
    }
    pub fn record(&self) -> PathBuf {
        self.slurm_dir().join("submissions.yaml")
    }
    /// Parent of the shard directories `shards/0` … `shards/N-1`.
    pub fn shards_dir(&self) -> PathBuf {
        self.root.join("shards")
    }
    pub fn shard(&self, k: usize) -> PathBuf {
        self.shards_dir().join(k.to_string())
    }
    /// The merged results directory.
    pub fn results(&self) -> PathBuf {
        self.root.join("results")
    }
}

/// Everything the scripts depend on.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Absolute path of the privalign binary.
    pub exe: PathBuf,
    /// Absolute path of the experiment config.
    pub config: PathBuf,
    /// `--set` overrides, passed through to every sweep.
    pub sets: Vec<String>,
    /// The experiment's name (job names).
    pub name: String,
    pub shards: usize,
    pub layout: Layout,
    /// The working directory of the jobs.
    pub workdir: PathBuf,
    pub partition: Option<String>,
    pub time: Option<String>,
    pub cpus_per_task: usize,
    pub mem: Option<String>,
    pub account: Option<String>,
    /// Extra `#SBATCH` lines, each already starting with `#SBATCH `.
    pub extra: Vec<String>,
}

/// Quote `s` for a POSIX shell: plain words stay as they are, anything else
/// goes in single quotes (a `'` becomes `'\''`).
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

fn path_str(p: &Path) -> String {
    p.display().to_string()
}

/// Slurm's `--array` syntax for a set of task ids: runs of consecutive ids
/// become ranges (`0-3,5,7-8`). `ids` must be sorted and distinct.
pub fn array_spec(ids: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let start = ids[i];
        let mut end = start;
        while i + 1 < ids.len() && ids[i + 1] == end + 1 {
            i += 1;
            end = ids[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// The `#SBATCH` lines shared by both scripts (resources, account, extras).
fn common_lines(p: &Plan, s: &mut String) {
    let _ = writeln!(s, "#SBATCH --chdir={}", path_str(&p.workdir));
    if let Some(v) = &p.partition {
        let _ = writeln!(s, "#SBATCH --partition={v}");
    }
    if let Some(v) = &p.account {
        let _ = writeln!(s, "#SBATCH --account={v}");
    }
    if let Some(v) = &p.time {
        let _ = writeln!(s, "#SBATCH --time={v}");
    }
    if let Some(v) = &p.mem {
        let _ = writeln!(s, "#SBATCH --mem={v}");
    }
}

fn extra_lines(p: &Plan, s: &mut String) {
    for l in &p.extra {
        let _ = writeln!(s, "{l}");
    }
}

/// `privalign` and its config arguments, quoted.
fn command_head(p: &Plan, sub: &str) -> String {
    let mut c = format!(
        "{} {sub} {}",
        shell_quote(&path_str(&p.exe)),
        shell_quote(&path_str(&p.config))
    );
    for s in &p.sets {
        let _ = write!(c, " --set {}", shell_quote(s));
    }
    c
}

/// The job-array script running the shards `tasks` (sorted, distinct, each
/// below `p.shards`).
pub fn array_script(p: &Plan, tasks: &[usize]) -> String {
    let mut s = String::from("#!/bin/bash\n");
    let _ = writeln!(s, "#SBATCH --job-name=privalign-{}", p.name);
    let _ = writeln!(s, "#SBATCH --array={}", array_spec(tasks));
    let _ = writeln!(s, "#SBATCH --cpus-per-task={}", p.cpus_per_task);
    let _ = writeln!(s, "#SBATCH --ntasks=1");
    common_lines(p, &mut s);
    let _ = writeln!(
        s,
        "#SBATCH --output={}",
        path_str(&p.layout.logs_dir().join("shard-%a.out"))
    );
    let _ = writeln!(s, "#SBATCH --open-mode=append");
    let _ = writeln!(s, "#SBATCH --requeue");
    extra_lines(p, &mut s);
    let _ = writeln!(
        s,
        "# Written by `privalign slurm`: array task K runs shard K of {} of the sweep of\n\
         # {}, with --resume so that a requeued or resubmitted task keeps its finished units.",
        p.shards,
        path_str(&p.config)
    );
    s.push_str("set -euo pipefail\n");
    let _ = writeln!(
        s,
        "echo \"privalign shard $SLURM_ARRAY_TASK_ID/{n}: job $SLURM_JOB_ID on $(hostname) at $(date -u +%FT%TZ)\"",
        n = p.shards
    );
    let _ = writeln!(
        s,
        "exec {} --shard \"$SLURM_ARRAY_TASK_ID/{}\" --out {}/\"$SLURM_ARRAY_TASK_ID\" --threads \"${{SLURM_CPUS_PER_TASK:-{}}}\" --resume --no-progress",
        command_head(p, "sweep"),
        p.shards,
        shell_quote(&path_str(&p.layout.shards_dir())),
        p.cpus_per_task
    );
    s
}

/// The merge script: every shard directory into `DIR/results`.
pub fn merge_script(p: &Plan) -> String {
    let mut s = String::from("#!/bin/bash\n");
    let _ = writeln!(s, "#SBATCH --job-name=privalign-{}-merge", p.name);
    let _ = writeln!(s, "#SBATCH --cpus-per-task=1");
    let _ = writeln!(s, "#SBATCH --ntasks=1");
    common_lines(p, &mut s);
    let _ = writeln!(
        s,
        "#SBATCH --output={}",
        path_str(&p.layout.logs_dir().join("merge-%j.out"))
    );
    extra_lines(p, &mut s);
    let _ = writeln!(
        s,
        "# Written by `privalign slurm`: merges the {} shard directories into the results\n\
         # directory a one-machine `privalign sweep` writes. Submitted with\n\
         # --dependency=afterok:<array job>, so it runs only after every shard succeeded.",
        p.shards
    );
    s.push_str("set -euo pipefail\n");
    let _ = writeln!(
        s,
        "shards=()\nfor k in $(seq 0 {}); do shards+=({}/\"$k\"); done",
        p.shards - 1,
        shell_quote(&path_str(&p.layout.shards_dir()))
    );
    let _ = writeln!(
        s,
        "exec {} merge \"${{shards[@]}}\" --out {}",
        shell_quote(&path_str(&p.exe)),
        shell_quote(&path_str(&p.layout.results()))
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            exe: "/opt/bin/privalign".into(),
            config: "/home/u/exp/demo.yaml".into(),
            sets: vec!["replicates=3".into(), "n={values: [1, 4]}".into()],
            name: "demo".into(),
            shards: 3,
            layout: Layout::new(Path::new("/scratch/run 1")),
            workdir: "/home/u".into(),
            partition: Some("short".into()),
            time: Some("01:00:00".into()),
            cpus_per_task: 4,
            mem: None,
            account: Some("lab".into()),
            extra: vec!["#SBATCH --qos=high".into()],
        }
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("/a/b-c_d.yaml"), "/a/b-c_d.yaml");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn array_specs() {
        assert_eq!(array_spec(&[0, 1, 2]), "0-2");
        assert_eq!(array_spec(&[1]), "1");
        assert_eq!(array_spec(&[0, 2, 3, 4, 7, 9, 10]), "0,2-4,7,9-10");
        assert_eq!(array_spec(&[]), "");
    }

    #[test]
    fn array_script_lines() {
        let s = array_script(&plan(), &[0, 1, 2]);
        let want = "#!/bin/bash
#SBATCH --job-name=privalign-demo
#SBATCH --array=0-2
#SBATCH --cpus-per-task=4
#SBATCH --ntasks=1
#SBATCH --chdir=/home/u
#SBATCH --partition=short
#SBATCH --account=lab
#SBATCH --time=01:00:00
#SBATCH --output=/scratch/run 1/slurm/logs/shard-%a.out
#SBATCH --open-mode=append
#SBATCH --requeue
#SBATCH --qos=high
";
        assert!(s.starts_with(want), "{s}");
        assert!(s.contains(
            "exec /opt/bin/privalign sweep /home/u/exp/demo.yaml --set replicates=3 --set 'n={values: [1, 4]}' --shard \"$SLURM_ARRAY_TASK_ID/3\" --out '/scratch/run 1/shards'/\"$SLURM_ARRAY_TASK_ID\" --threads \"${SLURM_CPUS_PER_TASK:-4}\" --resume --no-progress\n"
        ), "{s}");
        assert!(!s.contains("--mem"));
        // A resubmission of some shards only.
        let s = array_script(&plan(), &[1, 2]);
        assert!(s.contains("#SBATCH --array=1-2\n"));
    }

    #[test]
    fn merge_script_lines() {
        let s = merge_script(&plan());
        assert!(s.contains("#SBATCH --job-name=privalign-demo-merge\n"));
        assert!(s.contains("#SBATCH --output=/scratch/run 1/slurm/logs/merge-%j.out\n"));
        assert!(!s.contains("--array"));
        assert!(!s.contains("--requeue"));
        assert!(
            s.contains("for k in $(seq 0 2); do shards+=('/scratch/run 1/shards'/\"$k\"); done\n")
        );
        assert!(s.contains(
            "exec /opt/bin/privalign merge \"${shards[@]}\" --out '/scratch/run 1/results'\n"
        ));
    }

    /// The scripts are valid bash and expand to the intended command lines.
    #[test]
    fn scripts_expand_in_bash() {
        let Ok(out) = std::process::Command::new("bash").arg("--version").output() else {
            eprintln!("skipped: no bash");
            return;
        };
        assert!(out.status.success());
        let p = plan();
        // Replace `exec` by a printer of its arguments.
        let run = |script: String, env: &[(&str, &str)]| {
            let script = script.replace("exec ", "printf '[%s]' ");
            let out = std::process::Command::new("bash")
                .arg("-c")
                .arg(&script)
                .envs(env.iter().copied())
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap()
        };
        let a = run(
            array_script(&p, &[0, 1, 2]),
            &[
                ("SLURM_ARRAY_TASK_ID", "2"),
                ("SLURM_JOB_ID", "9"),
                ("SLURM_CPUS_PER_TASK", "4"),
            ],
        );
        assert!(a.ends_with("[/opt/bin/privalign][sweep][/home/u/exp/demo.yaml][--set][replicates=3][--set][n={values: [1, 4]}][--shard][2/3][--out][/scratch/run 1/shards/2][--threads][4][--resume][--no-progress]"), "{a}");
        let m = run(merge_script(&p), &[]);
        assert_eq!(
            m,
            "[/opt/bin/privalign][merge][/scratch/run 1/shards/0][/scratch/run 1/shards/1][/scratch/run 1/shards/2][--out][/scratch/run 1/results]"
        );
    }
}
