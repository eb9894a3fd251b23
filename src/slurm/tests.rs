//! Unit tests of `privalign slurm`'s planning, record and resume logic.

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
