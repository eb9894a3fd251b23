//! Errors that name the user's path (issue: "Every number bound to the
//! inputs", items 5 and 6): every case feeds the bad input and asserts the
//! exit code, the message (the user's path, what to do) and that the user's
//! files are untouched.

use crate::common::*;
use std::path::{Path, PathBuf};

fn code(o: &std::process::Output) -> Option<i32> {
    o.status.code()
}

/// Assert exit 2 with every fragment in stderr and no panic.
fn bad(o: &std::process::Output, fragments: &[&str]) {
    let e = stderr(o);
    assert_eq!(code(o), Some(2), "stderr: {e}\nstdout: {}", stdout(o));
    assert!(!e.contains("panicked"), "{e}");
    for f in fragments {
        assert!(e.contains(f), "expected {f:?} in: {e}");
    }
}

fn tiny_csv(dir: &Path) -> PathBuf {
    let p = dir.join("t.csv");
    let mut t = String::from("prompt_id,correct,a\n");
    for q in 0..3 {
        for k in 0..4 {
            t += &format!("q{q},{},{}\n", (q + k) % 2, (q * 4 + k) as f64 / 10.0);
        }
    }
    std::fs::write(&p, t).unwrap();
    p
}

fn ingest_args<'a>(csv: &'a str, out: &'a str) -> Vec<&'a str> {
    vec![
        "ingest",
        "--table",
        csv,
        "--prompt-col",
        "prompt_id",
        "--correct-col",
        "correct",
        "--reward-col",
        "a=a",
        "--out",
        out,
    ]
}

/// A directory where files cannot be created: a 0555 directory, or (as
/// root, who ignores permissions) sysfs.
fn unwritable_dir(d: &Path) -> PathBuf {
    if unsafe_is_root() {
        PathBuf::from("/sys")
    } else {
        use std::os::unix::fs::PermissionsExt;
        let p = d.join("ro");
        std::fs::create_dir(&p).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o555)).unwrap();
        p
    }
}

fn unsafe_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

// ---- item 6: one writer wins, the other is told ----

#[test]
fn concurrent_ingests_into_one_out_never_both_succeed() {
    let d = tempfile::tempdir().unwrap();
    let csv = tiny_csv(d.path());
    for trial in 0..6 {
        let out = d.path().join(format!("out{trial}"));
        let args = ingest_args(csv.to_str().unwrap(), out.to_str().unwrap());
        let spawn = || {
            std::process::Command::new(bin())
                .args(&args)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (spawn(), spawn());
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        let codes = [code(&a), code(&b)];
        assert_eq!(
            codes.iter().filter(|c| **c == Some(0)).count(),
            1,
            "trial {trial}: exactly one ingest may succeed, got {codes:?}\n{}\n{}",
            stderr(&a),
            stderr(&b)
        );
        let loser = if code(&a) == Some(0) { &b } else { &a };
        bad(loser, &[out.to_str().unwrap()]);
        assert!(
            stderr(loser).contains("already exists")
                || stderr(loser).contains("created by another process"),
            "{}",
            stderr(loser)
        );
        assert!(out.join("scores.parquet").exists());
        // Nothing hidden left behind by either.
        assert_eq!(
            entries(d.path())
                .iter()
                .filter(|e| e.starts_with('.'))
                .count(),
            0
        );
    }
}

#[test]
fn check_update_never_overwrites_a_reference_it_cannot_read_or_parse() {
    let d = tempfile::tempdir().unwrap();
    let results = fixed_results();
    let r = results.to_str().unwrap();
    // Not YAML, not a reference, not UTF-8, and a directory.
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "garbage.yaml",
            b"numbers: [\n".to_vec(),
            "not a valid reference file",
        ),
        (
            "other.yaml",
            b"foo: 1\n".to_vec(),
            "not a valid reference file",
        ),
        (
            "latin1.yaml",
            b"numbers: []\ndescription: caf\xe9\n".to_vec(),
            "cannot read the reference file",
        ),
    ];
    for (name, bytes, msg) in cases {
        let p = d.path().join(name);
        std::fs::write(&p, &bytes).unwrap();
        let o = run(&["check", r, "--update", "--reference", p.to_str().unwrap()]);
        bad(&o, &[p.to_str().unwrap(), msg, "nothing was written"]);
        assert_eq!(std::fs::read(&p).unwrap(), bytes, "{name} was changed");
    }
    let dir = d.path().join("adir");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("keep"), b"x").unwrap();
    let o = run(&["check", r, "--update", "--reference", dir.to_str().unwrap()]);
    bad(
        &o,
        &[dir.to_str().unwrap(), "cannot read the reference file"],
    );
    assert_eq!(entries(&dir), vec!["keep"]);
    // A missing reference is created (the one case --update may write).
    let fresh = d.path().join("fresh.yaml");
    ok(&run(&[
        "check",
        r,
        "--update",
        "--reference",
        fresh.to_str().unwrap(),
    ]));
    assert!(fresh.exists());
}

// ---- item 5: errors name the user's path and say what to do ----

#[test]
fn nested_jsonl_with_no_responses_names_its_line() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("n.jsonl");
    let good = "{\"prompt\":\"a\",\"responses\":[{\"is_correct\":1,\"proxy_reward\":0.5},{\"is_correct\":0,\"proxy_reward\":0.1}]}";
    for (text, line) in [
        (
            format!("{good}\n{{\"prompt\":\"b\",\"responses\":[]}}\n"),
            "line 2",
        ),
        (
            format!("{{\"prompt\":\"z\",\"responses\":[]}}\n{good}\n"),
            "line 1",
        ),
        (
            format!("{good}\n\n{good}\n{{\"prompt\":7,\"responses\":[]}}\n"),
            "line 4",
        ),
    ] {
        std::fs::write(&p, text).unwrap();
        let out = d.path().join("o");
        let o = run(&[
            "ingest",
            "--nested-jsonl",
            p.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        bad(
            &o,
            &[
                "n.jsonl",
                line,
                "\"responses\" is empty",
                "at least 2 responses",
            ],
        );
        assert!(!out.exists());
    }
}

#[test]
fn threads_are_bounded_the_same_way_in_every_command() {
    let d = tempfile::tempdir().unwrap();
    let results = fixed_results();
    let m: serde_json::Value =
        yaml_serde::from_str(&std::fs::read_to_string(results.join("manifest.yaml")).unwrap())
            .unwrap();
    let cfg = m["config_path"].as_str().unwrap().to_string();
    let out = d.path().join("o");
    let o_s = out.to_str().unwrap();
    let r = results.to_str().unwrap();
    for k in ["1025", "4096", "18446744073709551615"] {
        for args in [
            vec!["sweep", "--no-progress", &cfg, "--out", o_s, "--threads", k],
            vec![
                "reproduce",
                "--no-progress",
                &cfg,
                "--out",
                o_s,
                "--threads",
                k,
            ],
            vec!["fsrc", &cfg, "--out", o_s, "--threads", k],
            vec!["check", r, "--recompute", "--threads", k],
        ] {
            let o = run(&args);
            bad(&o, &["--threads", "at most 1024"]);
        }
    }
    assert!(!out.exists(), "a refused run wrote {}", out.display());
    // 0 means one worker per core everywhere (never an error).
    ok(&run(&[
        "sweep",
        "--no-progress",
        &cfg,
        "--out",
        o_s,
        "--threads",
        "0",
    ]));
    ok(&run(&["fsrc", &cfg, "--out", o_s, "--threads", "0"]));
    // Above the core count: a warning, and the same results.
    let cores = std::thread::available_parallelism().unwrap().get();
    let k = (cores + 1).to_string();
    let out2 = d.path().join("o2");
    let o = run(&[
        "sweep",
        "--no-progress",
        &cfg,
        "--out",
        out2.to_str().unwrap(),
        "--threads",
        &k,
    ]);
    ok(&o);
    assert!(
        stderr(&o).contains(&format!(
            "warning: --threads {k} is more than the {cores} cores"
        )),
        "{}",
        stderr(&o)
    );
    for f in ["cells.parquet", "summary.parquet"] {
        assert_eq!(
            std::fs::read(out.join(f)).unwrap(),
            std::fs::read(out2.join(f)).unwrap(),
            "{f}"
        );
    }
    // check accepts 0 as well.
    let o = run(&[
        "check",
        r,
        "--recompute",
        "--threads",
        "0",
        "--update",
        "--reference",
        d.path().join("ref.yaml").to_str().unwrap(),
    ]);
    ok(&o);
}

/// A prepared dataset whose scores.parquet is missing or truncated: the sweep
/// says which file and "re-run ingest", exit 2, and writes no results.
#[test]
fn missing_or_truncated_scores_say_rerun_ingest() {
    let d = tempfile::tempdir().unwrap();
    let csv = tiny_csv(d.path());
    let ds = d.path().join("ds");
    ok(&run(&ingest_args(
        csv.to_str().unwrap(),
        ds.to_str().unwrap(),
    )));
    let cfg = d.path().join("c.yaml");
    std::fs::write(
        &cfg,
        "datasets: [{path: ds}]\nreward_models: {a: {transform: {kind: none}}}\nn: [2]\nreplicates: 2\nalgorithms: {bon: {}}\n",
    )
    .unwrap();
    let scores = ds.join("scores.parquet");
    let full = std::fs::read(&scores).unwrap();
    let out = d.path().join("r");
    for (what, bytes) in [
        ("truncated", Some(full[..full.len() / 2].to_vec())),
        ("empty", Some(Vec::new())),
        ("garbage", Some(b"PAR1 not really".to_vec())),
        ("missing", None),
    ] {
        match &bytes {
            Some(b) => std::fs::write(&scores, b).unwrap(),
            None => std::fs::remove_file(&scores).unwrap(),
        }
        for cmd in ["sweep", "fsrc"] {
            let mut args = vec![cmd, cfg.to_str().unwrap(), "--out", out.to_str().unwrap()];
            if cmd == "fsrc" {
                args.extend([
                    "--set",
                    "fsrc={eps_total: 10, n: 2, sigma: [1.0], beta: 0.1}",
                ]);
            }
            let o = run(&args);
            bad(&o, &[scores.to_str().unwrap(), "re-run `privalign ingest"]);
            assert!(!out.join("manifest.yaml").exists(), "{what}/{cmd}");
        }
    }
}

fn copy_results(dst: &Path) -> PathBuf {
    let out = dst.join("res");
    std::fs::create_dir_all(&out).unwrap();
    for f in [
        "cells.parquet",
        "summary.parquet",
        "fsrc.parquet",
        "manifest.yaml",
    ] {
        std::fs::copy(fixed_results().join(f), out.join(f)).unwrap();
    }
    out
}

#[test]
fn damaged_summary_or_fsrc_says_rerun_sweep() {
    let d = tempfile::tempdir().unwrap();
    let res = copy_results(d.path());
    for f in ["summary.parquet", "fsrc.parquet"] {
        let p = res.join(f);
        let full = std::fs::read(&p).unwrap();
        std::fs::write(&p, &full[..full.len() / 3]).unwrap();
        for args in [
            vec!["table", res.to_str().unwrap(), "--kind", "lift"],
            vec![
                "plot",
                res.to_str().unwrap(),
                "--kind",
                "scaling",
                "--out",
                d.path().join("pl").to_str().unwrap(),
            ],
            vec!["check", res.to_str().unwrap(), "--update"],
        ] {
            let o = run(&args);
            bad(&o, &[p.to_str().unwrap(), "re-run `privalign sweep"]);
        }
        assert_eq!(std::fs::read(&p).unwrap().len(), full.len() / 3);
        assert!(!res.join("reference.yaml").exists());
        std::fs::write(&p, &full).unwrap();
    }
    std::fs::remove_file(res.join("summary.parquet")).unwrap();
    let o = run(&["table", res.to_str().unwrap(), "--kind", "lift"]);
    bad(&o, &["summary.parquet", "rerun the sweep"]);
}

#[test]
fn plot_out_that_is_a_file_is_refused_and_kept() {
    let d = tempfile::tempdir().unwrap();
    let res = copy_results(d.path());
    let f = d.path().join("plots");
    std::fs::write(&f, b"my notes").unwrap();
    let o = run(&[
        "plot",
        res.to_str().unwrap(),
        "--kind",
        "scaling",
        "--out",
        f.to_str().unwrap(),
    ]);
    bad(&o, &[f.to_str().unwrap(), "is a file, not a directory"]);
    assert_eq!(std::fs::read(&f).unwrap(), b"my notes");
    // A table --out that is a directory.
    let o = run(&[
        "table",
        res.to_str().unwrap(),
        "--kind",
        "lift",
        "--out",
        d.path().to_str().unwrap(),
    ]);
    bad(&o, &[d.path().to_str().unwrap(), "is a directory"]);
}

#[test]
fn unwritable_output_locations_are_named_with_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let res = copy_results(d.path());
    let ro = unwritable_dir(d.path());
    let before = entries(&ro);
    let t = ro.join("lift.tex");
    let o = run(&[
        "table",
        res.to_str().unwrap(),
        "--kind",
        "lift",
        "--out",
        t.to_str().unwrap(),
    ]);
    bad(&o, &[t.to_str().unwrap(), "not writable"]);
    assert!(!stderr(&o).contains(".tmp-"), "{}", stderr(&o));
    let p = ro.join("plots");
    let o = run(&[
        "plot",
        res.to_str().unwrap(),
        "--kind",
        "scaling",
        "--out",
        p.to_str().unwrap(),
    ]);
    bad(&o, &[p.to_str().unwrap(), "not writable"]);
    let csv = tiny_csv(d.path());
    let ds = ro.join("ds");
    let o = run(&ingest_args(csv.to_str().unwrap(), ds.to_str().unwrap()));
    bad(&o, &[ds.to_str().unwrap(), "not writable"]);
    assert!(!stderr(&o).contains(".tmp-"), "{}", stderr(&o));
    let b = ro.join("budget.tex");
    let o = run(&["budget", "--latex", b.to_str().unwrap()]);
    bad(&o, &[b.to_str().unwrap(), "not writable"]);
    assert_eq!(entries(&ro), before);
}

#[test]
fn long_output_names_use_a_short_temporary_and_too_long_ones_are_named() {
    let d = tempfile::tempdir().unwrap();
    let res = copy_results(d.path());
    // 250 bytes: fits, but ".NAME.tmp-PID" would not.
    let name = format!("{}.tex", "l".repeat(246));
    let t = d.path().join(&name);
    ok(&run(&[
        "table",
        res.to_str().unwrap(),
        "--kind",
        "lift",
        "--out",
        t.to_str().unwrap(),
    ]));
    assert!(
        std::fs::read_to_string(&t)
            .unwrap()
            .contains("\\begin{table}")
    );
    let csv = tiny_csv(d.path());
    let ds = d.path().join("d".repeat(255));
    ok(&run(&ingest_args(
        csv.to_str().unwrap(),
        ds.to_str().unwrap(),
    )));
    assert!(ds.join("scores.parquet").exists());
    // 256 bytes: the name itself is too long.
    let t2 = d.path().join(format!("{}.tex", "m".repeat(252)));
    let o = run(&[
        "table",
        res.to_str().unwrap(),
        "--kind",
        "lift",
        "--out",
        t2.to_str().unwrap(),
    ]);
    bad(&o, &["too long", "255", "choose a shorter name"]);
    let mut want = entries(d.path());
    want.sort();
    assert!(want.iter().all(|e| !e.starts_with('.')), "{want:?}");
}

/// Decision: an --out that is a symbolic link is written through — the file
/// it points to gets the new content and the link is kept.
#[test]
fn an_out_that_is_a_symlink_is_written_through_and_kept() {
    let d = tempfile::tempdir().unwrap();
    let res = copy_results(d.path());
    let real = d.path().join("real.tex");
    std::fs::write(&real, b"old").unwrap();
    let link = d.path().join("link.tex");
    std::os::unix::fs::symlink("real.tex", &link).unwrap();
    ok(&run(&[
        "table",
        res.to_str().unwrap(),
        "--kind",
        "lift",
        "--out",
        link.to_str().unwrap(),
        // real.tex exists: replacing it needs --force (issue #13).
        "--force",
    ]));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::read_to_string(&real)
            .unwrap()
            .contains("\\begin{table}")
    );
    // A dangling link: its target is created.
    let link2 = d.path().join("dangling.tex");
    std::os::unix::fs::symlink("sub-missing.tex", &link2).unwrap();
    ok(&run(&["budget", "--latex", link2.to_str().unwrap()]));
    assert!(
        std::fs::symlink_metadata(&link2)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(d.path().join("sub-missing.tex").exists());
    // A plot --out directory that is a link to a directory.
    let pdir = d.path().join("pdir");
    std::fs::create_dir(&pdir).unwrap();
    let plink = d.path().join("plink");
    std::os::unix::fs::symlink(&pdir, &plink).unwrap();
    ok(&run(&[
        "plot",
        res.to_str().unwrap(),
        "--kind",
        "scaling",
        "--out",
        plink.to_str().unwrap(),
    ]));
    assert!(pdir.join("scaling.png").exists() && pdir.join("scaling.svg").exists());
    // A link loop is refused with exit 2.
    let a = d.path().join("loop-a");
    let b = d.path().join("loop-b");
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    let o = run(&[
        "table",
        res.to_str().unwrap(),
        "--kind",
        "lift",
        "--out",
        a.to_str().unwrap(),
    ]);
    bad(&o, &["loop-a", "too many levels of symbolic links"]);
}
