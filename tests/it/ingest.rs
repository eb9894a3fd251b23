//! `privalign ingest`: the three input forms agree, and every bad-input rule
//! of design §3 fails with a message naming the problem and leaves no output.

use crate::common::*;
use polars::prelude::*;
use std::path::Path;

/// The reference data: 3 prompts × 3 responses, rewards for models a and b.
/// (prompt, response, correct, reward_a, reward_b, gen_seconds)
const ROWS: &[(&str, i64, bool, f64, f64, f64)] = &[
    ("q1", 0, true, 0.5, 1.5, 0.1),
    ("q1", 1, false, 0.25, -2.0, 0.2),
    ("q1", 2, true, 1.0, 0.0, 0.3),
    ("q2", 0, false, -1.0, 3.0, 0.4),
    ("q2", 1, false, 2.0, 2.5, 0.5),
    ("q2", 2, true, 0.75, 0.125, 0.6),
    ("q3", 0, true, 0.0, 0.0, 0.7),
    ("q3", 1, true, 0.0, 1.0, 0.8),
    ("q3", 2, false, 0.0, 2.0, 0.9),
];

/// Rows in a scrambled order, as real files often are.
fn scrambled() -> Vec<(&'static str, i64, bool, f64, f64, f64)> {
    let order = [4, 0, 8, 2, 6, 1, 5, 3, 7];
    order.iter().map(|&i| ROWS[i]).collect()
}

fn responses_df(rows: &[(&str, i64, bool, f64, f64, f64)]) -> DataFrame {
    df!(
        "prompt_id" => rows.iter().map(|r| r.0).collect::<Vec<_>>(),
        "response_id" => rows.iter().map(|r| r.1).collect::<Vec<_>>(),
        "correct" => rows.iter().map(|r| r.2).collect::<Vec<_>>(),
        "gen_seconds" => rows.iter().map(|r| r.5).collect::<Vec<_>>(),
        "text" => rows.iter().map(|_| "some text").collect::<Vec<_>>(),
    )
    .unwrap()
}

fn rewards_df(rows: &[(&str, i64, bool, f64, f64, f64)], b: bool) -> DataFrame {
    df!(
        "prompt_id" => rows.iter().map(|r| r.0).collect::<Vec<_>>(),
        "response_id" => rows.iter().map(|r| r.1).collect::<Vec<_>>(),
        "reward" => rows.iter().map(|r| if b { r.4 } else { r.3 }).collect::<Vec<_>>(),
    )
    .unwrap()
}

/// Write the parquet pair into `dir`, returning ingest args.
fn write_pair(dir: &Path) -> Vec<String> {
    let rows = scrambled();
    write_parquet(&dir.join("responses.parquet"), &mut responses_df(&rows));
    let mut rev = rows.clone();
    rev.reverse();
    write_parquet(&dir.join("ra.parquet"), &mut rewards_df(&rev, false));
    write_parquet(&dir.join("rewards_b.parquet"), &mut rewards_df(&rows, true));
    vec![
        "--responses".into(),
        dir.join("responses.parquet").display().to_string(),
        "--rewards".into(),
        format!("a={}", dir.join("ra.parquet").display()),
        // A bare path: the name comes from the stem without "rewards_".
        dir.join("rewards_b.parquet").display().to_string(),
    ]
}

fn csv_text(rows: &[(&str, i64, bool, f64, f64, f64)]) -> String {
    let mut s = String::from("problem,idx,is_correct,prm_score,orm_score,gen_seconds\n");
    for r in rows {
        s += &format!("{},{},{},{},{},{}\n", r.0, r.1, r.2, r.3, r.4, r.5);
    }
    s
}

fn table_args(path: &Path, with_response_col: bool) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "--table".into(),
        path.display().to_string(),
        "--prompt-col".into(),
        "problem".into(),
        "--correct-col".into(),
        "is_correct".into(),
        "--reward-col".into(),
        "a=prm_score".into(),
        "--reward-col".into(),
        "b=orm_score".into(),
    ];
    if with_response_col {
        v.extend(["--response-col".into(), "idx".into()]);
    }
    v
}

fn ingest(args: &[String], out: &Path) -> std::process::Output {
    let mut a: Vec<&str> = vec!["ingest"];
    a.extend(args.iter().map(String::as_str));
    let out_s = out.display().to_string();
    a.extend(["--out", &out_s, "--name", "same"]);
    run(&a)
}

fn manifest_without_source(dir: &Path) -> yaml_serde::Value {
    let text = std::fs::read_to_string(dir.join("dataset.yaml")).unwrap();
    let mut v: yaml_serde::Value = yaml_serde::from_str(&text).unwrap();
    v.as_mapping_mut().unwrap().remove("source");
    v
}

#[test]
fn three_forms_give_identical_datasets() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let pair_args = write_pair(dir);

    // Flat table as CSV (with ids), parquet and JSONL (without: file order numbering).
    std::fs::write(dir.join("flat.csv"), csv_text(&scrambled())).unwrap();
    let mut flat = df!(
        "problem" => ROWS.iter().map(|r| r.0).collect::<Vec<_>>(),
        "is_correct" => ROWS.iter().map(|r| r.2).collect::<Vec<_>>(),
        "prm_score" => ROWS.iter().map(|r| r.3).collect::<Vec<_>>(),
        "orm_score" => ROWS.iter().map(|r| r.4).collect::<Vec<_>>(),
        "gen_seconds" => ROWS.iter().map(|r| r.5).collect::<Vec<_>>(),
    )
    .unwrap();
    write_parquet(&dir.join("flat.parquet"), &mut flat);
    let jsonl: String = ROWS
        .iter()
        .map(|r| {
            format!(
                "{{\"problem\":\"{}\",\"is_correct\":{},\"prm_score\":{},\"orm_score\":{},\"gen_seconds\":{}}}\n",
                r.0, r.2, r.3, r.4, r.5
            )
        })
        .collect();
    std::fs::write(dir.join("flat.jsonl"), jsonl).unwrap();

    // Nested JSONL of the paper's code: one model per file, so compare on model a.
    let mut nested = String::new();
    for p in ["q1", "q2", "q3"] {
        let resp: Vec<String> = ROWS
            .iter()
            .filter(|r| r.0 == p)
            .map(|r| {
                format!(
                    "{{\"is_correct\":{},\"proxy_reward\":{},\"gen_seconds\":{},\"text\":\"x\"}}",
                    u8::from(r.2),
                    r.3,
                    r.5
                )
            })
            .collect();
        nested += &format!(
            "{{\"prompt\":\"{p}\",\"responses\":[{}]}}\n",
            resp.join(",")
        );
    }
    std::fs::write(dir.join("nested.jsonl"), nested).unwrap();

    let outs = ["o_pair", "o_csv", "o_parquet", "o_jsonl"];
    ok(&ingest(&pair_args, &dir.join(outs[0])));
    ok(&ingest(
        &table_args(&dir.join("flat.csv"), true),
        &dir.join(outs[1]),
    ));
    ok(&ingest(
        &table_args(&dir.join("flat.parquet"), false),
        &dir.join(outs[2]),
    ));
    ok(&ingest(
        &table_args(&dir.join("flat.jsonl"), false),
        &dir.join(outs[3]),
    ));

    let reference = read_parquet(&dir.join("o_pair/scores.parquet"));
    assert_eq!(reference.height(), 9);
    let names: Vec<String> = reference
        .get_column_names()
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        names,
        [
            "prompt_id",
            "response_id",
            "correct",
            "a",
            "b",
            "gen_seconds"
        ]
    );
    assert_eq!(
        reference.column("correct").unwrap().dtype(),
        &DataType::Float32
    );
    assert_eq!(
        reference.column("response_id").unwrap().dtype(),
        &DataType::Int64
    );
    // Sorted by prompt then response.
    let p: Vec<&str> = reference
        .column("prompt_id")
        .unwrap()
        .str()
        .unwrap()
        .iter()
        .map(|x| x.unwrap())
        .collect();
    assert_eq!(p, ["q1", "q1", "q1", "q2", "q2", "q2", "q3", "q3", "q3"]);
    let b: Vec<f32> = reference
        .column("b")
        .unwrap()
        .f32()
        .unwrap()
        .into_no_null_iter()
        .collect();
    assert_eq!(b, ROWS.iter().map(|r| r.4 as f32).collect::<Vec<_>>());
    let m0 = manifest_without_source(&dir.join(outs[0]));
    for o in &outs[1..] {
        let other = read_parquet(&dir.join(o).join("scores.parquet"));
        assert!(
            reference.equals(&other),
            "{o} differs:\n{reference}\n{other}"
        );
        assert_eq!(
            m0,
            manifest_without_source(&dir.join(o)),
            "{o} manifest differs"
        );
    }

    ok(&run(&[
        "ingest",
        "--nested-jsonl",
        &dir.join("nested.jsonl").display().to_string(),
        "--reward-name",
        "a",
        "--out",
        &dir.join("o_nested").display().to_string(),
    ]));
    let nested = read_parquet(&dir.join("o_nested/scores.parquet"));
    let expected = reference.drop("b").unwrap();
    assert!(
        expected.equals(&nested),
        "nested differs:\n{expected}\n{nested}"
    );

    // The manifest's statistics against a hand computation.
    let m: privalign::data::prepared::DatasetManifest =
        yaml_serde::from_str(&std::fs::read_to_string(dir.join("o_pair/dataset.yaml")).unwrap())
            .unwrap();
    assert_eq!(m.reward_models, ["a", "b"]);
    assert_eq!(m.counts.prompts, 3);
    assert_eq!(m.correct_kind, "binary");
    assert!(m.has_gen_seconds);
    // Per-prompt accuracies 2/3, 1/3, 2/3.
    assert!((m.base_accuracy.mean_over_prompts - 5.0 / 9.0).abs() < 1e-12);
    assert_eq!(m.rewards["a"].min, -1.0);
    assert_eq!(m.rewards["a"].max, 2.0);
    assert_eq!(m.source.files.len(), 3);
    assert_eq!(m.source.files[0].sha256.len(), 64);

    // The loader's per-prompt arrays.
    let ds = privalign::data::prepared::PreparedDataset::load(&dir.join("o_pair")).unwrap();
    assert_eq!(ds.offsets, vec![0, 3, 6, 9]);
    assert_eq!(ds.prompt_ids, ["q1", "q2", "q3"]);
    assert_eq!(ds.reward("a").unwrap()[4], 2.0);
}

/// Run an ingest that must fail with exit code 2 and a message containing
/// every fragment, leaving nothing in `dir` but the inputs.
fn expect_bad(dir: &Path, args: &[String], fragments: &[&str]) {
    let before = entries(dir);
    let o = ingest(args, &dir.join("out"));
    let err = stderr(&o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "expected exit 2, got {:?}: {err}",
        o.status
    );
    for f in fragments {
        assert!(err.contains(f), "error lacks {f:?}:\n{err}");
    }
    assert_eq!(entries(dir), before, "ingest left files behind");
}

fn pair_with(dir: &Path, responses: &mut DataFrame, rewards: &mut DataFrame) -> Vec<String> {
    write_parquet(&dir.join("r.parquet"), responses);
    write_parquet(&dir.join("w.parquet"), rewards);
    vec![
        "--responses".into(),
        dir.join("r.parquet").display().to_string(),
        "--rewards".into(),
        format!("m={}", dir.join("w.parquet").display()),
    ]
}

#[test]
fn missing_column_names_file_column_and_alternatives() {
    let d = tempfile::tempdir().unwrap();
    let mut r = responses_df(ROWS).drop("correct").unwrap();
    let args = pair_with(d.path(), &mut r, &mut rewards_df(ROWS, false));
    expect_bad(
        d.path(),
        &args,
        &[
            "r.parquet",
            "missing column \"correct\"",
            "found: prompt_id",
        ],
    );
}

#[test]
fn wrong_type_is_named() {
    let d = tempfile::tempdir().unwrap();
    let mut r = responses_df(ROWS);
    // (String ids are numbered, tests/it/file_variants.rs; fractional ones are an error.)
    r.with_column(Column::new("response_id".into(), vec![0.5f64; 9]))
        .unwrap();
    let args = pair_with(d.path(), &mut r, &mut rewards_df(ROWS, false));
    expect_bad(
        d.path(),
        &args,
        &[
            "r.parquet",
            "\"response_id\" has type f64",
            "must be integers or strings",
        ],
    );
    let mut w = rewards_df(ROWS, false);
    w.with_column(Column::new("reward".into(), vec!["high"; 9]))
        .unwrap();
    let args = pair_with(d.path(), &mut responses_df(ROWS), &mut w);
    expect_bad(d.path(), &args, &["w.parquet", "rewards must be numbers"]);
}

#[test]
fn duplicate_keys_name_both_rows() {
    let d = tempfile::tempdir().unwrap();
    let mut rows = ROWS.to_vec();
    rows[7].1 = 0; // q3 has response 0 twice: rows 7 and 8 (1-based)
    let args = pair_with(
        d.path(),
        &mut responses_df(&rows),
        &mut rewards_df(ROWS, false),
    );
    expect_bad(
        d.path(),
        &args,
        &["r.parquet: rows 7 and 8", "(prompt \"q3\", response 0)"],
    );
    // In a reward file.
    let mut wrows = ROWS.to_vec();
    wrows.push(ROWS[4]);
    let args = pair_with(
        d.path(),
        &mut responses_df(ROWS),
        &mut rewards_df(&wrows, false),
    );
    expect_bad(
        d.path(),
        &args,
        &[
            "w.parquet: rows 5 and 10",
            "both score",
            "exactly one reward",
        ],
    );
}

#[test]
fn unscored_responses_fail_unless_dropped() {
    let d = tempfile::tempdir().unwrap();
    let wrows: Vec<_> = ROWS
        .iter()
        .copied()
        .filter(|r| !(r.0 == "q2" && r.1 == 1))
        .collect();
    let args = pair_with(
        d.path(),
        &mut responses_df(ROWS),
        &mut rewards_df(&wrows, false),
    );
    expect_bad(
        d.path(),
        &args,
        &[
            "1 response(s) have no score from reward model \"m\"",
            "prompt \"q2\", response 1",
            "--drop-unscored",
        ],
    );
    let mut a = args.clone();
    a.push("--drop-unscored".into());
    ok(&ingest(&a, &d.path().join("out")));
    let m: privalign::data::prepared::DatasetManifest =
        yaml_serde::from_str(&std::fs::read_to_string(d.path().join("out/dataset.yaml")).unwrap())
            .unwrap();
    assert_eq!(m.source.dropped_unscored, 1);
    assert_eq!(m.counts.responses, 8);
}

#[test]
fn non_finite_rewards_are_rejected() {
    let d = tempfile::tempdir().unwrap();
    for (bad, shown) in [(f64::NAN, "NaN"), (f64::INFINITY, "inf")] {
        let mut wrows = ROWS.to_vec();
        wrows[2].3 = bad;
        let args = pair_with(
            d.path(),
            &mut responses_df(ROWS),
            &mut rewards_df(&wrows, false),
        );
        expect_bad(
            d.path(),
            &args,
            &[
                "w.parquet: row 3 (prompt \"q1\", response 2)",
                shown,
                "finite",
            ],
        );
    }
    // In a CSV table too.
    let mut rows = ROWS.to_vec();
    rows[5].4 = f64::NAN;
    std::fs::write(d.path().join("t.csv"), csv_text(&rows)).unwrap();
    expect_bad(
        d.path(),
        &table_args(&d.path().join("t.csv"), true),
        &["t.csv: row 6", "reward (b) is NaN"],
    );
}

#[test]
fn correct_outside_unit_interval() {
    let d = tempfile::tempdir().unwrap();
    let mut r = responses_df(ROWS);
    let mut c = vec![1.0f64; 9];
    c[3] = 1.5;
    r.with_column(Column::new("correct".into(), c)).unwrap();
    let args = pair_with(d.path(), &mut r, &mut rewards_df(ROWS, false));
    expect_bad(
        d.path(),
        &args,
        &[
            "r.parquet: row 4 (prompt \"q2\", response 0)",
            "1.5, outside [0, 1]",
        ],
    );
}

#[test]
fn prompts_need_two_responses() {
    let d = tempfile::tempdir().unwrap();
    let rows: Vec<_> = ROWS
        .iter()
        .copied()
        .filter(|r| !(r.0 == "q2" && r.1 > 0))
        .collect();
    let args = pair_with(
        d.path(),
        &mut responses_df(&rows),
        &mut rewards_df(&rows, false),
    );
    expect_bad(
        d.path(),
        &args,
        &["prompt \"q2\" has 1 response(s)", "at least 2 responses"],
    );
}

#[test]
fn empty_files_are_rejected() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("e.csv"), "").unwrap();
    expect_bad(
        d.path(),
        &table_args(&d.path().join("e.csv"), true),
        &["e.csv: the file is empty"],
    );
    std::fs::write(
        d.path().join("h.csv"),
        "problem,idx,is_correct,prm_score,orm_score\n",
    )
    .unwrap();
    expect_bad(
        d.path(),
        &table_args(&d.path().join("h.csv"), true),
        &["h.csv: the file has no rows"],
    );
    let mut empty = responses_df(ROWS).head(Some(0));
    let args = pair_with(d.path(), &mut empty, &mut rewards_df(ROWS, false));
    expect_bad(d.path(), &args, &["r.parquet: the file has no rows"]);
}

#[test]
fn orphan_reward_rows_are_rejected() {
    let d = tempfile::tempdir().unwrap();
    let mut wrows = ROWS.to_vec();
    wrows.push(("q9", 0, true, 1.0, 1.0, 1.0));
    let args = pair_with(
        d.path(),
        &mut responses_df(ROWS),
        &mut rewards_df(&wrows, false),
    );
    expect_bad(
        d.path(),
        &args,
        &[
            "w.parquet: row 10 (prompt \"q9\", response 0)",
            "not in the responses file",
        ],
    );
}

#[test]
fn nested_jsonl_errors_name_the_line() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("n.jsonl");
    let args = vec!["--nested-jsonl".to_string(), p.display().to_string()];
    std::fs::write(&p, "{\"prompt\":\"a\",\"responses\":[{\"is_correct\":1,\"proxy_reward\":0.5},{\"is_correct\":0,\"proxy_reward\":0.1}]}\n{\"prompt\":\"b\",\"responses\":[{\"is_correct\":2,\"proxy_reward\":0.5}]}\n").unwrap();
    expect_bad(
        d.path(),
        &args,
        &[
            "n.jsonl: line 2, response index 0 (prompt \"b\")",
            "\"is_correct\" is 2",
        ],
    );
    std::fs::write(&p, "{\"prompt\":\"a\",\"responses\":[{\"is_correct\":1,\"proxy_reward\":0.5},{\"is_correct\":0,\"proxy_reward\":null}]}\n").unwrap();
    expect_bad(
        d.path(),
        &args,
        &[
            "no score from reward model \"proxy\"",
            "line 1 (prompt \"a\", response 1)",
        ],
    );
    std::fs::write(&p, "{\"prompt\":\"a\",\"responses\":[{\"is_correct\":1,\"proxy_reward\":0.5},{\"is_correct\":0,\"proxy_reward\":0.1}]}\nnot json\n").unwrap();
    expect_bad(d.path(), &args, &["n.jsonl: line 2: not valid JSON"]);
}

#[test]
fn existing_output_is_kept_without_force() {
    let d = tempfile::tempdir().unwrap();
    let args = write_pair(d.path());
    let out = d.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep.txt"), "mine").unwrap();
    let o = ingest(&args, &out);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("already exists"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(out.join("keep.txt")).unwrap(),
        "mine"
    );
    let mut a = args.clone();
    a.push("--force".into());
    ok(&ingest(&a, &out));
    assert!(out.join("scores.parquet").exists());
    // --force replaces only what ingest writes: the user's file stays.
    assert_eq!(
        std::fs::read_to_string(out.join("keep.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn usage_errors_exit_two() {
    let o = run(&["ingest", "--out", "x"]);
    assert_eq!(o.status.code(), Some(2));
    let d = tempfile::tempdir().unwrap();
    let o = run(&[
        "ingest",
        "--table",
        "t.xlsx",
        "--prompt-col",
        "p",
        "--correct-col",
        "c",
        "--reward-col",
        "a=b",
        "--out",
        &d.path().join("o").display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown file type \"xlsx\""),
        "{}",
        stderr(&o)
    );
    let o = run(&["--version"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains(env!("CARGO_PKG_VERSION")));
}

/// Response ids beyond 32 bits take the general (prompt_id, response_id) join;
/// it gives the same dataset as the table form and the same checks.
#[test]
fn large_response_ids_use_the_general_join() {
    let d = tempfile::tempdir().unwrap();
    let big = 1i64 << 40;
    let rows: Vec<_> = ROWS
        .iter()
        .map(|r| (r.0, r.1 + big, r.2, r.3, r.4, r.5))
        .collect();
    let mut a = pair_with(
        d.path(),
        &mut responses_df(&rows),
        &mut rewards_df(&rows, false),
    );
    a[3] = format!("a={}", d.path().join("w.parquet").display());
    ok(&ingest(&a, &d.path().join("o_pair")));
    let mut csv = String::from("problem,idx,is_correct,prm_score,gen_seconds\n");
    for r in &rows {
        csv += &format!("{},{},{},{},{}\n", r.0, r.1, r.2, r.3, r.5);
    }
    std::fs::write(d.path().join("t.csv"), csv).unwrap();
    let t = [
        "--table",
        &d.path().join("t.csv").display().to_string(),
        "--prompt-col",
        "problem",
        "--correct-col",
        "is_correct",
        "--response-col",
        "idx",
        "--reward-col",
        "a=prm_score",
    ]
    .map(String::from);
    ok(&ingest(&t, &d.path().join("o_table")));
    let x = read_parquet(&d.path().join("o_pair/scores.parquet"));
    let y = read_parquet(&d.path().join("o_table/scores.parquet"));
    assert!(x.equals(&y), "{x}\n{y}");
    assert_eq!(
        x.column("response_id").unwrap().i64().unwrap().get(0),
        Some(big)
    );
    // Duplicates and orphans are still caught on this path.
    std::fs::remove_dir_all(d.path().join("o_pair")).unwrap();
    std::fs::remove_dir_all(d.path().join("o_table")).unwrap();
    let mut dup = rows.clone();
    dup.push(rows[4]);
    let args = pair_with(
        d.path(),
        &mut responses_df(&rows),
        &mut rewards_df(&dup, false),
    );
    expect_bad(d.path(), &args, &["w.parquet: rows 5 and 10", "both score"]);
    let mut orphan = rows.clone();
    orphan.push(("q1", 7, true, 1.0, 1.0, 1.0));
    let args = pair_with(
        d.path(),
        &mut responses_df(&rows),
        &mut rewards_df(&orphan, false),
    );
    expect_bad(
        d.path(),
        &args,
        &[
            "w.parquet: row 10 (prompt \"q1\", response 7)",
            "not in the responses file",
        ],
    );
}

// ---- Streaming (files of several chunks) --------------------------------

/// A parquet file written in row groups of `rows` rows (so ingest reads it
/// in several chunks with a small `--chunk-rows`).
fn write_grouped(path: &Path, df: &mut DataFrame, rows: usize) {
    let f = std::fs::File::create(path).unwrap();
    ParquetWriter::new(f)
        .with_row_group_size(Some(rows))
        .finish(df)
        .unwrap();
}

/// 30 prompts "q00".."q29" with 2..=6 responses each, listed prompt by
/// prompt but with each prompt's responses in reverse order; `string_ids`
/// names the responses "r<k>" instead of numbering them.
#[allow(clippy::type_complexity)]
fn stream_rows() -> Vec<(String, i64, bool, f64, f64, f64)> {
    let mut rows = Vec::new();
    for p in 0..30i64 {
        let k = 2 + p % 5;
        for r in (0..k).rev() {
            let x = ((p * 31 + r * 17) % 23) as f64 / 7.0 - 1.5;
            rows.push((
                format!("q{p:02}"),
                r,
                (p + r) % 3 == 0,
                x,
                -x * 0.5 + r as f64,
                0.1 * (r + 1) as f64,
            ));
        }
    }
    rows
}

#[allow(clippy::type_complexity)]
fn write_stream_pair(
    dir: &Path,
    rows: &[(String, i64, bool, f64, f64, f64)],
    string_ids: bool,
) -> Vec<String> {
    let rid = |r: i64| -> AnyValue<'static> {
        if string_ids {
            AnyValue::StringOwned(format!("r{r}").into())
        } else {
            AnyValue::Int64(r)
        }
    };
    let rid_col = |rows: &[&(String, i64, bool, f64, f64, f64)]| {
        Column::from(
            Series::from_any_values(
                "response_id".into(),
                &rows.iter().map(|r| rid(r.1)).collect::<Vec<_>>(),
                true,
            )
            .unwrap(),
        )
    };
    let all: Vec<&(String, i64, bool, f64, f64, f64)> = rows.iter().collect();
    let mut resp = DataFrame::new_infer_height(vec![
        Column::new(
            "prompt_id".into(),
            all.iter().map(|r| r.0.clone()).collect::<Vec<_>>(),
        ),
        rid_col(&all),
        Column::new(
            "correct".into(),
            all.iter().map(|r| r.2).collect::<Vec<_>>(),
        ),
        Column::new(
            "gen_seconds".into(),
            all.iter().map(|r| r.5).collect::<Vec<_>>(),
        ),
    ])
    .unwrap();
    write_grouped(&dir.join("responses.parquet"), &mut resp, 7);
    // Reward a: every row but one (response 1 of q07 is unscored), each
    // prompt's rows in ascending response order; reward b: all rows.
    let a_rows: Vec<&(String, i64, bool, f64, f64, f64)> = {
        let mut v: Vec<_> = all
            .iter()
            .copied()
            .filter(|r| !(r.0 == "q07" && r.1 == 1))
            .collect();
        v.sort_by(|x, y| (&x.0, x.1).cmp(&(&y.0, y.1)));
        v
    };
    for (name, sel, col, rg) in [("a", a_rows, 3, 11), ("b", all.clone(), 4, 5)] {
        let mut df = DataFrame::new_infer_height(vec![
            Column::new(
                "prompt_id".into(),
                sel.iter().map(|r| r.0.clone()).collect::<Vec<_>>(),
            ),
            rid_col(&sel),
            Column::new(
                "reward".into(),
                sel.iter()
                    .map(|r| if col == 3 { r.3 } else { r.4 })
                    .collect::<Vec<_>>(),
            ),
        ])
        .unwrap();
        write_grouped(&dir.join(format!("rewards_{name}.parquet")), &mut df, rg);
    }
    vec![
        "--responses".into(),
        dir.join("responses.parquet").display().to_string(),
        "--rewards".into(),
        dir.join("rewards_a.parquet").display().to_string(),
        dir.join("rewards_b.parquet").display().to_string(),
        "--drop-unscored".into(),
    ]
}

fn same_files(a: &Path, b: &Path) {
    for f in [
        "scores.parquet",
        "prompts.parquet",
        "blocks.parquet",
        "dataset.yaml",
    ] {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}

/// A file read in many chunks (prompts cut across chunk boundaries, each
/// prompt's rows out of order, an unscored row dropped, string ids numbered
/// across chunks) gives the very bytes of reading it whole.
#[test]
fn streamed_ingest_equals_whole_file_ingest() {
    for string_ids in [false, true] {
        let d = tempfile::tempdir().unwrap();
        let args = write_stream_pair(d.path(), &stream_rows(), string_ids);
        let whole = d.path().join("whole");
        let mut a = args.clone();
        a.push("--in-memory".into());
        ok(&ingest(&a, &whole));
        for chunk in ["1", "6", "20"] {
            let out = d.path().join(format!("chunk{chunk}"));
            let mut a = args.clone();
            a.extend(["--chunk-rows".into(), chunk.into()]);
            ok(&ingest(&a, &out));
            same_files(&whole, &out);
        }
        let m = std::fs::read_to_string(whole.join("dataset.yaml")).unwrap();
        assert!(m.contains("dropped_unscored: 1"), "{m}");
    }

    // The flat-table form, numbering responses in file order across chunks.
    let d = tempfile::tempdir().unwrap();
    let rows = stream_rows();
    let mut df = DataFrame::new_infer_height(vec![
        Column::new(
            "q".into(),
            rows.iter().map(|r| r.0.clone()).collect::<Vec<_>>(),
        ),
        Column::new("ok".into(), rows.iter().map(|r| r.2).collect::<Vec<_>>()),
        Column::new("ra".into(), rows.iter().map(|r| r.3).collect::<Vec<_>>()),
    ])
    .unwrap();
    let path = d.path().join("table.parquet");
    write_grouped(&path, &mut df, 4);
    let args: Vec<String> = [
        "--table",
        &path.display().to_string(),
        "--prompt-col",
        "q",
        "--correct-col",
        "ok",
        "--reward-col",
        "a=ra",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let whole = d.path().join("whole");
    let mut a = args.clone();
    a.push("--in-memory".into());
    ok(&ingest(&a, &whole));
    let out = d.path().join("chunked");
    let mut a = args.clone();
    a.extend(["--chunk-rows".into(), "3".into()]);
    ok(&ingest(&a, &out));
    same_files(&whole, &out);
}

/// A file of several chunks whose prompts go back to an earlier one cannot
/// be streamed: exit 2 naming the file, row and prompt, and the two fixes;
/// nothing is written. `--in-memory` reads it.
#[test]
fn streamed_input_out_of_prompt_order_is_refused_with_the_fix() {
    let d = tempfile::tempdir().unwrap();
    let mut rows = stream_rows();
    // Move prompt q03's rows to the end of the file.
    let (q3, mut rest): (Vec<_>, Vec<_>) = rows.drain(..).partition(|r| r.0 == "q03");
    rest.extend(q3);
    let args = write_stream_pair(d.path(), &rest, false);
    let out = d.path().join("out");
    let mut a = args.clone();
    a.extend(["--chunk-rows".into(), "6".into()]);
    let o = ingest(&a, &out);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    for frag in [
        "responses.parquet: row ",
        "(prompt \"q03\"",
        "comes after prompt",
        "sort the file by prompt id",
        "--in-memory",
    ] {
        assert!(e.contains(frag), "missing {frag:?} in: {e}");
    }
    assert!(!e.contains("panicked"), "{e}");
    assert!(!out.exists(), "nothing may be written");
    let mut a = args;
    a.push("--in-memory".into());
    ok(&ingest(&a, &out));

    // A reward file out of order (the responses in order): even with
    // --drop-unscored, never a silent drop of the responses whose reward
    // rows come late — the reward file is named.
    let d = tempfile::tempdir().unwrap();
    let args = write_stream_pair(d.path(), &stream_rows(), false);
    let b = d.path().join("rewards_b.parquet");
    let mut df = read_parquet(&b);
    let late = df.column("prompt_id").unwrap().str().unwrap().equal("q03");
    let mut moved = df.filter(&!&late).unwrap();
    moved.vstack_mut(&df.filter(&late).unwrap()).unwrap();
    df = moved;
    write_grouped(&b, &mut df, 5);
    let mut a = args;
    a.extend(["--chunk-rows".into(), "6".into()]);
    let out = d.path().join("out");
    let o = ingest(&a, &out);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("rewards_b.parquet: row ") && e.contains("comes after prompt"),
        "{e}"
    );
    assert!(!out.exists());
}

/// Ingest streams: 1.5M responses × 2 reward models ingest under
/// `ulimit -v 320 MiB` (the whole-file path needs ≈ 430 MiB of address space
/// for them, the streaming one ≈ 230 MiB whatever the row count; README
/// "Ingest at scale"), and the result is byte-identical to an unbounded
/// whole-file ingest. The allocator's arenas and the thread pools are capped
/// so the address space does not depend on the machine's core count.
#[test]
fn ingest_streams_in_a_bounded_memory_budget() {
    let d = tempfile::tempdir().unwrap();
    let raw = d.path().join("raw");
    let raw_s = raw.display().to_string();
    ok(&run(&[
        "synth",
        "--preset",
        "math",
        "--prompts",
        "150",
        "--responses",
        "10000",
        "--reward-models",
        "armo,gemma",
        "--out",
        &raw_s,
    ]));
    let inputs = |out: &Path| -> Vec<String> {
        vec![
            "ingest".into(),
            "--responses".into(),
            raw.join("responses.parquet").display().to_string(),
            "--rewards".into(),
            raw.join("rewards_armo.parquet").display().to_string(),
            raw.join("rewards_gemma.parquet").display().to_string(),
            "--out".into(),
            out.display().to_string(),
            "--name".into(),
            "big".into(),
        ]
    };
    let bounded = d.path().join("bounded");
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 327680 && exec \"$@\"")
        .arg("sh")
        .arg(bin())
        .args(inputs(&bounded))
        .env("MALLOC_ARENA_MAX", "2")
        .env("POLARS_MAX_THREADS", "2")
        .env("RAYON_NUM_THREADS", "2")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "streamed ingest under ulimit -v 320 MiB failed ({:?}): {}",
        o.status,
        stderr(&o)
    );
    let whole = d.path().join("whole");
    let mut a = inputs(&whole);
    a.push("--in-memory".into());
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    ok(&run(&a));
    same_files(&whole, &bounded);
}

/// Delimited text streams too (records split at newlines outside quotes,
/// column types from the first ≥ 100,000 rows imposed on the rest): a CSV
/// of 120,000 rows with quoted multi-line fields gives the bytes of reading
/// it whole, and an error in its second chunk names the same row.
#[test]
fn streamed_csv_equals_whole_file_and_names_rows() {
    let d = tempfile::tempdir().unwrap();
    // `bad`: the 0-based data row whose reward is NaN.
    let csv = |bad: Option<usize>| {
        let mut text = String::from("q,note,ok,ra\n");
        let mut row = 0;
        for p in 0..12_000 {
            for r in (0..10).rev() {
                let note = if (p * 10 + r) % 997 == 0 {
                    "\"two\nlines, \"\"quoted\"\"\""
                } else {
                    "plain"
                };
                let x = ((p * 31 + r * 17) % 23) as f64 / 7.0 - 1.5;
                let x = if bad == Some(row) {
                    "NaN".to_string()
                } else {
                    x.to_string()
                };
                text.push_str(&format!("p{p:05},{note},{},{x}\n", (p + r) % 3 == 0));
                row += 1;
            }
        }
        text
    };
    let text = csv(None);
    let path = d.path().join("table.csv");
    std::fs::write(&path, &text).unwrap();
    let args = |path: &Path| -> Vec<String> {
        [
            "--table",
            &path.display().to_string(),
            "--prompt-col",
            "q",
            "--correct-col",
            "ok",
            "--reward-col",
            "a=ra",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let whole = d.path().join("whole");
    let mut a = args(&path);
    a.push("--in-memory".into());
    ok(&ingest(&a, &whole));
    let out = d.path().join("chunked");
    let mut a = args(&path);
    a.extend(["--chunk-rows".into(), "1".into()]);
    ok(&ingest(&a, &out));
    same_files(&whole, &out);

    // A bad value in the second chunk (data row 110,001): the same message
    // streamed as whole.
    let bad = csv(Some(110_000));
    let path = d.path().join("bad.csv");
    std::fs::write(&path, &bad).unwrap();
    let mut msgs = Vec::new();
    for extra in ["--in-memory", "--force"] {
        let mut a = args(&path);
        a.push(extra.into());
        let o = ingest(&a, &d.path().join("bad-out"));
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        msgs.push(stderr(&o));
    }
    assert!(msgs[0].contains("row 110001"), "{}", msgs[0]);
    assert_eq!(msgs[0], msgs[1]);
}
