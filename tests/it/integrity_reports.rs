//! Reports that cannot mislead (issue "Every number bound to the inputs",
//! item 3): runs of one dataset and reward model from two directories are
//! shown side by side, labelled, never merged or silently dropped; a claim
//! matching no row fails; two reports of one kind write two files (identical
//! ones are refused before the sweep); every table kind escapes names in
//! CSV (RFC 4180), Markdown and LaTeX; FSRC never writes NaN.

use crate::common::*;
use std::path::{Path, PathBuf};

fn bad(o: &std::process::Output, fragments: &[&str]) {
    let e = stderr(o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "stderr: {e}\nstdout: {}",
        stdout(o)
    );
    assert!(!e.contains("panicked"), "{e}");
    for f in fragments {
        assert!(e.contains(f), "expected {f:?} in: {e}");
    }
}

/// A copy of the fixed results (manifest, summary, fsrc) under `dst/name`,
/// optionally with another experiment name in its manifest.
fn copy_results(dst: &Path, name: &str, experiment: Option<&str>) -> PathBuf {
    let out = dst.join(name);
    std::fs::create_dir_all(&out).unwrap();
    for f in [
        "cells.parquet",
        "summary.parquet",
        "fsrc.parquet",
        "manifest.yaml",
    ] {
        std::fs::copy(fixed_results().join(f), out.join(f)).unwrap();
    }
    if let Some(e) = experiment {
        let p = out.join("manifest.yaml");
        let t = std::fs::read_to_string(&p).unwrap();
        let mut v: serde_json::Value = yaml_serde::from_str(&t).unwrap();
        v["experiment"] = serde_json::json!(e);
        std::fs::write(&p, yaml_serde::to_string(&v).unwrap()).unwrap();
    }
    out
}

fn table(dirs: &[&Path], kind: &str, format: &str) -> std::process::Output {
    let mut a = vec!["table".to_string()];
    a.extend(dirs.iter().map(|d| d.display().to_string()));
    a.extend(["--kind", kind, "--format", format].map(String::from));
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    run(&a)
}

#[test]
fn two_runs_of_one_dataset_are_side_by_side_labelled_by_directory_or_name() {
    let d = tempfile::tempdir().unwrap();
    let a = copy_results(d.path(), "runA", None);
    let b = copy_results(d.path(), "runB", None);
    // Same experiment name in both: labelled by directory.
    let o = table(&[&a, &b], "lift", "csv");
    ok(&o);
    let t = stdout(&o);
    let la = format!("fixed [{}]", a.display());
    let lb = format!("fixed [{}]", b.display());
    assert!(t.contains(&la) && t.contains(&lb), "{t}");
    // Each run has its own rows: twice the rows of one directory.
    let one = stdout(&table(&[&a], "lift", "csv"));
    assert_eq!(t.lines().count() - 1, 2 * (one.lines().count() - 1), "{t}");
    for kind in ["winrate", "fsrc", "generation"] {
        let o = table(&[&a, &b], kind, "markdown");
        ok(&o);
        assert!(
            stdout(&o).contains("runA") && stdout(&o).contains("runB"),
            "{kind}: {}",
            stdout(&o)
        );
    }
    // Distinct experiment names: labelled by them.
    let c = copy_results(d.path(), "runC", Some("second-try"));
    let o = table(&[&a, &c], "lift", "markdown");
    ok(&o);
    let t = stdout(&o);
    assert!(
        t.contains("fixed [fixed]") && t.contains("fixed [second-try]"),
        "{t}"
    );
    // A plot draws them as separate panels (never one curve over both).
    let pl = d.path().join("pl");
    ok(&run(&[
        "plot",
        a.to_str().unwrap(),
        c.to_str().unwrap(),
        "--kind",
        "scaling",
        "--sigma",
        "0.5",
        "--beta",
        "0.1",
        "--out",
        pl.to_str().unwrap(),
    ]));
    let svg = std::fs::read_to_string(pl.join("scaling.svg")).unwrap();
    assert!(svg.contains("fixed [fixed]") && svg.contains("fixed [second-try]"));
    // The same directory twice is refused; so is a budget table over two.
    bad(&table(&[&a, &a], "lift", "csv"), &["given twice"]);
    let a2 = d.path().join("runA/../runA");
    bad(&table(&[&a, &a2], "lift", "csv"), &["given twice"]);
    bad(
        &table(&[&a, &b], "budget", "csv"),
        &["give one results directory"],
    );
    // Files untouched.
    assert_eq!(
        std::fs::read(a.join("summary.parquet")).unwrap(),
        std::fs::read(fixed_results().join("summary.parquet")).unwrap()
    );
}

#[test]
fn a_claim_matching_no_row_fails() {
    let d = tempfile::tempdir().unwrap();
    let res = copy_results(d.path(), "r", None);
    ok(&run(&["check", res.to_str().unwrap(), "--update"]));
    let reference = std::fs::read(res.join("reference.yaml")).unwrap();
    let claims = d.path().join("claims.yaml");
    for (claim, scope) in [
        (
            "{kind: falls_from_peak, name: typo, algorithm: bon, reward_models: [aa]}",
            "bon on reward models aa",
        ),
        (
            "{kind: monotone_in_n, name: none, algorithms: []}",
            "algorithms ",
        ),
    ] {
        std::fs::write(
            &claims,
            format!("sigma: 0.5\nbeta: 0.1\nclaims:\n  - {claim}\n"),
        )
        .unwrap();
        let o = run(&[
            "check",
            res.to_str().unwrap(),
            "--claims",
            claims.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
        let out = stdout(&o);
        assert!(
            out.contains("FAIL") && out.contains("matches no row"),
            "{out}"
        );
        assert!(out.contains(scope), "{out}");
        assert!(out.contains("fixed/a, fixed/b"), "{out}");
    }
    // An algorithm the sweep lacks is a failure too (never skipped).
    std::fs::write(
        &claims,
        "sigma: 0.5\nbeta: 0.1\nclaims:\n  - {kind: monotone_in_n, name: g, algorithms: [privbon_gauss]}\n",
    )
    .unwrap();
    let o = run(&[
        "check",
        res.to_str().unwrap(),
        "--claims",
        claims.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    // A claim that matches still passes or fails on its numbers.
    std::fs::write(
        &claims,
        "sigma: 0.5\nbeta: 0.1\nclaims:\n  - {kind: fsrc_beats_basic, name: f}\n",
    )
    .unwrap();
    let o = run(&[
        "check",
        res.to_str().unwrap(),
        "--claims",
        claims.to_str().unwrap(),
    ]);
    assert!(!stdout(&o).contains("matches no row"), "{}", stdout(&o));
    assert_eq!(
        std::fs::read(res.join("reference.yaml")).unwrap(),
        reference
    );
}

fn fixed_config() -> PathBuf {
    let m: serde_json::Value = yaml_serde::from_str(
        &std::fs::read_to_string(fixed_results().join("manifest.yaml")).unwrap(),
    )
    .unwrap();
    PathBuf::from(m["config_path"].as_str().unwrap())
}

#[test]
fn two_reports_of_one_kind_write_two_files_and_identical_ones_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let cfg = fixed_config();
    let out = d.path().join("r");
    let o = run(&[
        "reproduce",
        "--no-progress",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--set",
        "reports={tables: [{kind: lift, n: 2, sigma: 0.5, beta: 0.1}, {kind: lift, n: 4, sigma: 0.5, beta: 0.1}, {kind: fsrc}], plots: [{kind: sigma, n: 2, beta: 0.1}, {kind: sigma, n: 4, beta: 0.1}]}",
    ]);
    ok(&o);
    let tables = entries(&out.join("tables"));
    assert_eq!(
        tables,
        [
            "fsrc.md",
            "fsrc.tex",
            "lift-n2-sigma0.5-beta0.1.md",
            "lift-n2-sigma0.5-beta0.1.tex",
            "lift-n4-sigma0.5-beta0.1.md",
            "lift-n4-sigma0.5-beta0.1.tex"
        ]
    );
    let t2 = std::fs::read_to_string(out.join("tables/lift-n2-sigma0.5-beta0.1.tex")).unwrap();
    let t4 = std::fs::read_to_string(out.join("tables/lift-n4-sigma0.5-beta0.1.tex")).unwrap();
    assert!(t2.contains("$n = 2$") && t4.contains("$n = 4$"));
    assert_eq!(
        entries(&out.join("plots")),
        [
            "sigma-n2-beta0.1.png",
            "sigma-n2-beta0.1.svg",
            "sigma-n4-beta0.1.png",
            "sigma-n4-beta0.1.svg"
        ]
    );
    // Identical entries would overwrite each other: refused before any work.
    let out2 = d.path().join("r2");
    for sets in [
        "reports={tables: [{kind: lift, n: 2}, {kind: winrate}, {kind: lift, n: 2}]}",
        "reports={plots: [{kind: fsrc}, {kind: fsrc}]}",
        "reports={tables: [{kind: budget}, {kind: budget}]}",
    ] {
        let o = run(&[
            "reproduce",
            "--no-progress",
            cfg.to_str().unwrap(),
            "--out",
            out2.to_str().unwrap(),
            "--set",
            sets,
        ]);
        bad(&o, &["would overwrite"]);
        assert!(!out2.exists());
    }
}

/// Count `sep` outside of backslash escapes.
fn unescaped(line: &str, sep: char) -> usize {
    let mut n = 0;
    let mut esc = false;
    for c in line.chars() {
        if esc {
            esc = false;
        } else if c == '\\' {
            esc = true;
        } else if c == sep {
            n += 1;
        }
    }
    n
}

/// Parse RFC 4180 CSV into records.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut recs = vec![];
    let mut rec = vec![];
    let mut field = String::new();
    let mut q = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (q, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => q = false,
            (true, c) => field.push(c),
            (false, '"') if field.is_empty() => q = true,
            (false, ',') => rec.push(std::mem::take(&mut field)),
            (false, '\n') => {
                rec.push(std::mem::take(&mut field));
                recs.push(std::mem::take(&mut rec));
            }
            (false, c) => field.push(c),
        }
    }
    assert!(!q && field.is_empty() && rec.is_empty(), "unterminated CSV");
    recs
}

#[test]
fn every_table_kind_escapes_names_in_csv_markdown_and_latex() {
    let d = tempfile::tempdir().unwrap();
    let cfg = fixed_config();
    let hostile = r#"a|b,"c" & 50% $x_1$ #2 {y} ~^\z"#;
    // The fixed data again, with a reward model named `a_1`.
    let root = fixed_results().parent().unwrap();
    let ds = d.path().join("prepared");
    ingest_csv(
        &root.join("fixed.csv"),
        &ds,
        &["--reward-col", "a_1=a", "--reward-col", "b=b"],
    );
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("  a: {transform", "  a_1: {transform");
    let text = text.replace(
        &root.join("prepared").display().to_string(),
        &ds.display().to_string(),
    );
    let cfg = d.path().join("h.yaml");
    std::fs::write(&cfg, text).unwrap();
    let out = d.path().join("r");
    let set = format!(
        "datasets.0.name={}",
        serde_json::to_string(hostile).unwrap()
    );
    ok(&run(&[
        "sweep",
        "--no-progress",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--set",
        &set,
    ]));
    // Two directories as well (names then carry "[dir]" labels).
    let out2 = d.path().join("r,2|x");
    copy_dir(&out, &out2);
    for dirs in [vec![out.as_path()], vec![out.as_path(), out2.as_path()]] {
        for kind in ["lift", "winrate", "budget", "fsrc", "generation"] {
            if kind == "budget" && dirs.len() > 1 {
                continue;
            }
            // Single-dataset win-rate and generation tables do not name it.
            let named = matches!(kind, "lift" | "fsrc") || (dirs.len() > 1 && kind != "budget");
            let get = |f: &str| {
                let o = table(&dirs, kind, f);
                ok(&o);
                stdout(&o)
            };
            // CSV: every record has the header's field count; names round-trip.
            let csv = get("csv");
            let recs = parse_csv(&csv);
            for rec in &recs {
                assert_eq!(rec.len(), recs[0].len(), "{kind}: {csv}");
            }
            let all: Vec<&String> = recs.iter().flatten().collect();
            if named {
                assert!(
                    all.iter().any(|f| f.contains(hostile)),
                    "{kind}: the name does not round-trip through CSV: {csv}"
                );
            }
            // (the budget table names its reward model only in the caption)
            assert!(
                kind == "budget" || all.iter().any(|f| f.contains("a_1")),
                "{kind}: {csv}"
            );
            // Markdown: every row has the header's number of unescaped pipes.
            let md = get("markdown");
            let rows: Vec<&str> = md.lines().take_while(|l| l.starts_with('|')).collect();
            for l in &rows {
                assert_eq!(unescaped(l, '|'), unescaped(rows[0], '|'), "{kind}: {md}");
            }
            if named {
                assert!(md.contains(r"a\|b"), "{kind}: {md}");
            }
            // LaTeX: every tabular row has the header's number of unescaped
            // '&', and no special character of the name is left raw.
            let tex = get("latex");
            let body: Vec<&str> = tex
                .lines()
                .skip_while(|l| !l.starts_with("\\toprule"))
                .skip(1)
                .take_while(|l| !l.starts_with("\\bottomrule"))
                .filter(|l| l.ends_with("\\\\"))
                .collect();
            for l in &body {
                assert_eq!(unescaped(l, '&'), unescaped(body[0], '&'), "{kind}: {tex}");
            }
            if named {
                assert!(
                    tex.contains(r#"a|b,"c" \& 50\% \$x\_1\$ \#2 \{y\} \textasciitilde{}\textasciicircum{}\textbackslash{}z"#),
                    "{kind}: {tex}"
                );
            }
            assert!(tex.contains(r"a\_1"), "{kind}: {tex}");
            assert!(!tex.contains("a_1"), "{kind}: {tex}");
            let json: serde_json::Value = serde_json::from_str(&get("json")).unwrap();
            assert!(json.is_array());
        }
    }
}

fn copy_dir(a: &Path, b: &Path) {
    std::fs::create_dir_all(b).unwrap();
    for e in std::fs::read_dir(a).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), b.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn fsrc_never_writes_nan() {
    let d = tempfile::tempdir().unwrap();
    let cfg = fixed_config();
    // A budget below one query's ε_max is refused before anything runs.
    let out = d.path().join("r");
    let o = run(&[
        "fsrc",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--set",
        "fsrc.eps_total=1",
    ]);
    bad(&o, &["fsrc.eps_total", "does not cover one query"]);
    assert!(!out.exists());
    // A valid run has no NaN anywhere in fsrc.parquet or its table.
    let o = run(&[
        "fsrc",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    ok(&o);
    assert!(!stdout(&o).to_lowercase().contains("nan"), "{}", stdout(&o));
    let df = read_parquet(&out.join("fsrc.parquet"));
    for c in df.columns() {
        if let Ok(f) = c.f64() {
            assert!(f.iter().flatten().all(f64::is_finite), "{}", c.name());
        }
    }
}
