//! `privalign audit` end to end: JSON fields of the issue, audit.json in the
//! results directory, `table --kind audit` / `plot --kind audit` from it, the
//! config file, and bad input (exit 2 naming the flag or key).

use crate::common::*;

#[test]
fn audit_json_table_and_plot() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("audit");
    let o = run(&[
        "audit",
        "--mechanism",
        "privbon,privitp",
        "--sigma",
        "1,2",
        "--n",
        "2",
        "--trials",
        "20000",
        "--format",
        "json",
        "--out",
        out.to_str().unwrap(),
    ]);
    ok(&o);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = v.as_array().unwrap();
    // privbon: one row per σ; privitp: a summary row plus t = 1..=n+1 per σ.
    assert_eq!(rows.len(), 2 + 2 * 4);
    for r in rows {
        for k in [
            "mechanism",
            "sigma",
            "claimed_eps",
            "exact_eps",
            "eps_lower_bound",
            "confidence",
            "trials",
        ] {
            assert!(r.get(k).is_some(), "missing {k} in {r}");
        }
        assert_eq!(r["trials"], 20000);
        assert_eq!(r["confidence"], 0.999999);
        assert!(r["eps_lower_bound"].as_f64().unwrap() <= r["claimed_eps"].as_f64().unwrap());
    }
    // The claimed ε is the accountant's: PrivBoN 2Δ_r/σ with Δ_r = R_max = 1.
    assert_eq!(rows[0]["mechanism"], "privbon");
    assert_eq!(rows[0]["claimed_eps"], 2.0);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("audit.json")).unwrap()).unwrap();
    assert_eq!(saved, v);

    let t = run(&[
        "table",
        "--kind",
        "audit",
        out.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    ok(&t);
    let csv = stdout(&t);
    assert!(
        csv.starts_with("mechanism,sigma,t,claimed_eps,exact_eps,eps_lower_bound"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 1 + 4, "summary rows only: {csv}");
    let p = run(&["plot", "--kind", "audit", out.to_str().unwrap()]);
    ok(&p);
    let png = out.join("plots").join("audit.png");
    assert!(std::fs::metadata(&png).unwrap().len() > 10_000);
    assert!(out.join("plots").join("audit.svg").exists());
}

#[test]
fn audit_config_runs_and_text_names_the_confidence() {
    let d = tempfile::tempdir().unwrap();
    let cfg = d.path().join("a.yaml");
    std::fs::write(
        &cfg,
        "name: a\nmechanisms: [privbon-gauss]\nsigma: [1.0]\nn: 4\ndelta_r: 0.39\ntrials: 10000\n",
    )
    .unwrap();
    let out = d.path().join("res");
    let o = run(&[
        "audit",
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    ok(&o);
    let text = stdout(&o);
    assert!(
        text.contains("privbon-gauss") && text.contains("confidence 0.999999"),
        "{text}"
    );
    assert!(out.join("audit.json").exists());
}

#[test]
fn bad_input_exits_2_with_the_fix() {
    let o = run(&["audit", "--delta-r", "2", "--trials", "100"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--delta-r must lie in (0, R_max]"),
        "{}",
        stderr(&o)
    );
    let o = run(&["audit", "--confidence", "1", "--trials", "100"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--confidence"));
    let d = tempfile::tempdir().unwrap();
    let cfg = d.path().join("a.yaml");
    std::fs::write(
        &cfg,
        "name: a\nmechanisms: [privbon]\nsigma: [1.0]\nn: 4\nsigmas: 3\n",
    )
    .unwrap();
    let o = run(&["audit", "--config", cfg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("sigmas"), "{}", stderr(&o));
    let o = run(&["table", "--kind", "audit", d.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("audit.json"), "{}", stderr(&o));
}
