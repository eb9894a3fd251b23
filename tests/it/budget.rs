//! `privalign budget`: machine-readable single points equal the library's
//! formulas, every bad parameter is rejected with a message naming the flag,
//! and the LaTeX table is structurally sound.

use crate::common::*;
use privalign::privacy::accountant::*;

fn json(args: &[&str]) -> serde_json::Value {
    let mut a = vec!["budget"];
    a.extend_from_slice(args);
    a.extend(["--format", "json"]);
    let o = run(&a);
    ok(&o);
    serde_json::from_str(&stdout(&o)).unwrap()
}

#[test]
fn single_points_equal_the_library() {
    let v = json(&[
        "--mechanism",
        "privitp-phase2",
        "--lambda",
        "0.2",
        "--t",
        "3",
        "--sigma-z",
        "0.25",
        "--r-max",
        "1",
        "--delta-r",
        "1",
        "--beta",
        "0.05",
        "--L",
        "4",
    ]);
    let t = Phase2Terms::new(0.2, 0.25, 1.0, 1.0, 4.0);
    assert_eq!(v[0]["kappa"].as_f64().unwrap(), t.kappa);
    assert_eq!(
        v[0]["eps2_post"].as_f64().unwrap(),
        2.0 * t.kappa + t.accept
    );
    let v = json(&[
        "--mechanism",
        "privbon",
        "--sigma",
        "0.5",
        "--delta-r",
        "0.39",
    ]);
    assert_eq!(v[0]["eps"].as_f64().unwrap(), 2.0 * 0.39 / 0.5);
    let v = json(&[
        "--mechanism",
        "privbon-gauss",
        "--sigma",
        "0.5",
        "--n",
        "64",
    ]);
    assert_eq!(
        v[0]["eps"].as_f64().unwrap(),
        privbon_gauss_eps(1.0, 1.0, 0.5, 64)
    );
    let v = json(&[
        "--mechanism",
        "privitp-phase1",
        "--sigma-x",
        "2",
        "--delta",
        "1e-5",
    ]);
    assert_eq!(
        v[0]["eps1_analytic"].as_f64().unwrap(),
        phase1_eps_analytic(1.0, 2.0, 1e-5)
    );
    assert_eq!(v[0]["classical_valid"].as_f64().unwrap(), 0.0);
    let v = json(&[
        "--mechanism",
        "privitp-max",
        "--sigma-x",
        "0.25",
        "--sigma-z",
        "0.25",
        "--n",
        "8",
    ]);
    assert!(v[0]["eps_max"].as_f64().unwrap() > v[0]["eps1"].as_f64().unwrap());
    // CSV has the same ids as header.
    let o = run(&["budget", "--format", "csv"]);
    ok(&o);
    assert!(stdout(&o).starts_with(
        "sigma,eps_privbon,eps1,eps1_classical,classical_valid,eps2_post,eps_privitp\n"
    ));
}

#[test]
fn bad_parameters_name_the_flag() {
    let cases: &[(&[&str], &str)] = &[
        (&["--sigma", "0.1,-1"], "--sigma must be positive (got -1)"),
        (&["--delta", "1.5"], "--delta must lie in (0, 1)"),
        (&["--delta", "0"], "--delta must lie in (0, 1)"),
        (&["--delta-r", "0"], "--delta-r must be a positive number"),
        (
            &[
                "--mechanism",
                "privitp-phase2",
                "--lambda",
                "0.2",
                "--t",
                "0",
                "--sigma-z",
                "0.25",
            ],
            "--t must lie in [1, n+1] = [1, 17]",
        ),
        (
            &[
                "--mechanism",
                "privitp-phase2",
                "--lambda",
                "0.2",
                "--t",
                "18",
                "--sigma-z",
                "0.25",
            ],
            "--t must lie in [1, n+1]",
        ),
        (
            &[
                "--mechanism",
                "privitp-phase2",
                "--lambda",
                "0.2",
                "--t",
                "2",
            ],
            "needs --sigma-z",
        ),
        (
            &["--mechanism", "privitp-phase1", "--sigma-x", "0"],
            "--sigma-x must be positive",
        ),
        (
            &["--halting-time", "40"],
            "--halting-time must lie in [1, n+1]",
        ),
        (&["--clamp", "1,0"], "--clamp LO,HI needs LO ≤ HI"),
    ];
    for (args, fragment) in cases {
        let mut a = vec!["budget"];
        a.extend_from_slice(args);
        let o = run(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(fragment), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn latex_table_is_written_and_balanced() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("budgets.tex");
    let o = run(&[
        "budget",
        "--r-max",
        "0.39",
        "--latex",
        &f.display().to_string(),
    ]);
    ok(&o);
    let tex = std::fs::read_to_string(&f).unwrap();
    for (open, close) in [
        ("\\begin{table}", "\\end{table}"),
        ("\\begin{tabular}", "\\end{tabular}"),
    ] {
        assert_eq!(tex.matches(open).count(), 1);
        assert_eq!(tex.matches(close).count(), 1);
    }
    assert_eq!(tex.matches('{').count(), tex.matches('}').count());
    assert!(tex.contains("\\toprule") && tex.contains("\\midrule") && tex.contains("\\bottomrule"));
    // Five σ rows, each with 7 cells.
    let rows: Vec<&str> = tex
        .lines()
        .filter(|l| l.ends_with("\\\\") && l.starts_with("0.") || l.starts_with("1."))
        .collect();
    assert_eq!(rows.len(), 5, "{tex}");
    for r in rows {
        assert_eq!(r.matches(" & ").count(), 6, "{r}");
    }
    // PrivBoN column: 2Δ_r/σ at σ = 0.1 with Δ_r = R_max = 0.39.
    assert!(tex.contains("0.10 & 7.80 &"), "{tex}");
}
