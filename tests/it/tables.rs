//! `privalign table`: snapshot tests pin the LaTeX of every table kind for a
//! small fixed results directory, the LaTeX is structurally sound, and
//! missing results give errors naming what is missing.
//!
//! To update the snapshots deliberately: `UPDATE_SNAPSHOTS=1 cargo test --test it tables`,
//! then review the diff of tests/snapshots/.

use crate::common::*;
use std::path::Path;

fn snapshot(name: &str, text: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{}: missing; run with UPDATE_SNAPSHOTS=1", path.display()));
    assert_eq!(
        text, want,
        "{name} changed; if deliberate, UPDATE_SNAPSHOTS=1 and review"
    );
}

/// Balanced braces and environments, booktabs rules, and every row with as
/// many cells as the header.
fn check_latex(tex: &str) {
    let mut depth = 0i64;
    let mut prev = ' ';
    for c in tex.chars() {
        if prev != '\\' {
            if c == '{' {
                depth += 1;
            } else if c == '}' {
                depth -= 1;
                assert!(depth >= 0, "unbalanced }} in\n{tex}");
            }
        }
        prev = c;
    }
    assert_eq!(depth, 0, "unbalanced braces in\n{tex}");
    assert_eq!(tex.matches("$").count() % 2, 0, "odd number of $ in\n{tex}");
    // An unescaped % would comment out the rest of a row.
    let chars: Vec<char> = tex.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        assert!(
            c != '%' || (i > 0 && chars[i - 1] == '\\'),
            "unescaped % in\n{tex}"
        );
    }
    let mut stack = Vec::new();
    for part in tex.split("\\begin{").skip(1) {
        stack.push(part.split('}').next().unwrap().to_string());
    }
    let ends: Vec<String> = tex
        .split("\\end{")
        .skip(1)
        .map(|p| p.split('}').next().unwrap().to_string())
        .collect();
    stack.reverse();
    assert_eq!(stack, ends, "\\begin/\\end mismatch in\n{tex}");
    for rule in ["\\toprule", "\\midrule", "\\bottomrule"] {
        assert!(tex.contains(rule), "no {rule} in\n{tex}");
    }
    let body = tex
        .split("\\toprule\n")
        .nth(1)
        .unwrap()
        .split("\\bottomrule")
        .next()
        .unwrap();
    let rows: Vec<&str> = body.lines().filter(|l| l.ends_with("\\\\")).collect();
    let cols = rows[0].matches(" & ").count();
    for r in &rows {
        assert_eq!(
            r.matches(" & ").count(),
            cols,
            "row with a different cell count: {r}"
        );
    }
}

fn table(kind: &str, extra: &[&str]) -> std::process::Output {
    let dir = fixed_results().to_str().unwrap().to_string();
    let mut args = vec!["table", dir.as_str(), "--kind", kind];
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn every_table_kind_matches_its_snapshot() {
    for (kind, extra) in [
        ("lift", vec!["--bold-best"]),
        ("winrate", vec![]),
        ("budget", vec!["--n", "4"]),
        ("fsrc", vec![]),
        ("generation", vec!["--n", "4"]),
    ] {
        let o = table(kind, &extra);
        ok(&o);
        let tex = stdout(&o);
        check_latex(&tex);
        snapshot(&format!("{kind}.tex"), &tex);
    }
}

/// When a LaTeX engine is installed, every table must compile in a minimal
/// booktabs document (CI does not install one; the structure check above
/// always runs).
#[test]
fn tables_compile_with_pdflatex_when_installed() {
    let Ok(o) = std::process::Command::new("pdflatex")
        .arg("--version")
        .output()
    else {
        eprintln!("pdflatex not installed; structure checks only");
        return;
    };
    if !o.status.success() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let mut body = String::new();
    for (kind, extra) in [
        ("lift", vec![]),
        ("winrate", vec![]),
        ("budget", vec!["--n", "4"]),
        ("fsrc", vec![]),
        ("generation", vec!["--n", "4"]),
    ] {
        body += &stdout(&table(kind, &extra));
    }
    let doc = format!(
        "\\documentclass{{article}}\n\\usepackage{{booktabs}}\n\\usepackage{{amsmath}}\n\\usepackage[utf8]{{inputenc}}\n\\begin{{document}}\n{body}\\end{{document}}\n"
    );
    std::fs::write(d.path().join("t.tex"), doc).unwrap();
    let o = std::process::Command::new("pdflatex")
        .args(["-interaction=nonstopmode", "-halt-on-error", "t.tex"])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn markdown_and_out_file() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("lift.md");
    ok(&table(
        "lift",
        &["--format", "markdown", "--out", f.to_str().unwrap()],
    ));
    let md = std::fs::read_to_string(&f).unwrap();
    assert!(md.starts_with("| dataset | algorithm | a | b |"), "{md}");
    assert!(md.contains(" ± "), "{md}");
}

#[test]
fn the_structure_check_catches_broken_latex() {
    let good = stdout(&table("lift", &[]));
    for broken in [
        good.replacen("\\end{tabular}", "", 1),
        good.replacen("} \\\\", " \\\\", 1),
        good.replacen(" & ", " ", 1),
        good.replacen("\\%", "%", 1) + "\\textbf{Overhead (%)}",
    ] {
        assert!(std::panic::catch_unwind(|| check_latex(&broken)).is_err());
    }
}

#[test]
fn missing_results_are_named() {
    let o = table("lift", &["--n", "64"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no BoN cells for n = 64 in")
            && stderr(&o).contains("the sweep's n grid is 2, 4"),
        "{}",
        stderr(&o)
    );
    let o = table("lift", &["--sigma", "0.3"]);
    assert!(
        stderr(&o).contains("no privbon cells with σ = 0.3; the results have σ = 0.5"),
        "{}",
        stderr(&o)
    );
    let d = tempfile::tempdir().unwrap();
    let o = run(&["table", d.path().to_str().unwrap(), "--kind", "lift"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no manifest.yaml, so these are not finished results"),
        "{}",
        stderr(&o)
    );
}
