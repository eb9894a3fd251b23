//! Files as pandas, pyarrow and polars users write them (issue 15, item 5):
//! every variant in tests/data/variants/ (made by
//! tests/data/make_file_variants.py with pandas and pyarrow) ingests to the
//! same prepared dataset as the plain parquet pair — scores.parquet equal and
//! dataset.yaml equal apart from its `source` record. Each fixture's physical
//! type is checked first, so a regenerated fixture cannot silently lose the
//! variant it stands for.

use crate::common::*;
use polars::prelude::*;
use std::path::{Path, PathBuf};

fn variants() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/variants")
}

fn pair_args(name: &str) -> Vec<String> {
    let d = variants().join(name);
    vec![
        "--responses".into(),
        d.join("responses.parquet").display().to_string(),
        "--rewards".into(),
        format!("a={}", d.join("rewards_a.parquet").display()),
        "--rewards".into(),
        format!("b={}", d.join("rewards_b.parquet").display()),
    ]
}

fn table_args(file: &str) -> Vec<String> {
    [
        "--table",
        &variants().join(file).display().to_string(),
        "--prompt-col",
        "prompt_id",
        "--response-col",
        "response_id",
        "--correct-col",
        "correct",
        "--reward-col",
        "a=a",
        "--reward-col",
        "b=b",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
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

/// The parquet schema of a fixture file, as polars reads it.
fn dtype_of(dir: &str, file: &str, col: &str) -> DataType {
    let df = read_parquet(&variants().join(dir).join(file));
    df.column(col).unwrap().dtype().clone()
}

#[test]
fn fixtures_hold_the_variants_they_name() {
    assert_eq!(
        dtype_of("pair_float16", "rewards_a.parquet", "reward"),
        DataType::Float16
    );
    assert_eq!(
        dtype_of("pair_int8", "responses.parquet", "correct"),
        DataType::Int8
    );
    assert_eq!(
        dtype_of("pair_uint8", "responses.parquet", "correct"),
        DataType::UInt8
    );
    assert!(dtype_of("pair_dict", "responses.parquet", "prompt_id").is_categorical());
    assert!(dtype_of("pair_categorical", "rewards_b.parquet", "prompt_id").is_categorical());
    assert_eq!(
        dtype_of("pair_string_ids", "responses.parquet", "response_id"),
        DataType::String
    );
    assert_eq!(
        dtype_of("pair_float32", "rewards_b.parquet", "reward"),
        DataType::Float32
    );
    assert_eq!(
        dtype_of("pair_int_rewards", "rewards_b.parquet", "reward"),
        DataType::Int64
    );
    let idx = read_parquet(&variants().join("pair_pandas_index/responses.parquet"));
    assert!(idx.column("row").is_ok(), "pandas index column kept");
    let f = std::fs::File::open(variants().join("pair_row_groups/responses.parquet")).unwrap();
    let md = ParquetReader::new(f).get_metadata().unwrap().clone();
    assert_eq!(md.row_groups.len(), 12, "one row per row group");
    let nulls = read_parquet(&variants().join("pair_nulls/rewards_b.parquet"));
    assert_eq!(nulls.column("reward").unwrap().null_count(), 1);
    let uuid = read_parquet(&variants().join("pair_uuid_ids/responses.parquet"));
    let first = uuid
        .column("response_id")
        .unwrap()
        .get(0)
        .unwrap()
        .to_string();
    assert_eq!(first.trim_matches('"').len(), 36, "a UUID: {first}");
    let sci = std::fs::read_to_string(variants().join("flat_sci.csv")).unwrap();
    assert!(sci.contains("e-01,") && sci.contains(",True,") && sci.contains("\"two\nlines\""));
    let json = std::fs::read_to_string(variants().join("flat.json")).unwrap();
    assert!(json.starts_with("[{"));
    assert!(
        std::fs::read_to_string(variants().join("flat.tsv"))
            .unwrap()
            .contains('\t')
    );
}

#[test]
fn every_variant_ingests_to_the_plain_dataset() {
    let d = tempfile::tempdir().unwrap();
    let plain = d.path().join("plain");
    ok(&ingest(&pair_args("pair_plain"), &plain));
    let want_scores = read_parquet(&plain.join("scores.parquet"));
    let want_manifest = manifest_without_source(&plain);
    assert_eq!(want_scores.height(), 12);

    let semicolon = {
        let mut a = table_args("flat_semicolon.csv");
        a.extend(["--separator".into(), ";".into()]);
        a
    };
    let nulls = {
        let mut a = pair_args("pair_nulls");
        a.push("--drop-unscored".into());
        a
    };
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("float16 rewards", pair_args("pair_float16")),
        ("int8 correctness", pair_args("pair_int8")),
        ("uint8 correctness", pair_args("pair_uint8")),
        ("dictionary-encoded prompt ids", pair_args("pair_dict")),
        ("pandas Categorical ids", pair_args("pair_categorical")),
        ("string response ids", pair_args("pair_string_ids")),
        ("UUID response ids", pair_args("pair_uuid_ids")),
        ("float32 rewards", pair_args("pair_float32")),
        ("int rewards", pair_args("pair_int_rewards")),
        ("large_string ids", pair_args("pair_large_string")),
        ("pandas index column", pair_args("pair_pandas_index")),
        ("many row groups, zstd", pair_args("pair_row_groups")),
        ("nulls as unscored (--drop-unscored)", nulls),
        ("CSV", table_args("flat.csv")),
        ("TSV", table_args("flat.tsv")),
        ("semicolon CSV with --separator", semicolon),
        (
            "scientific notation, True/False",
            table_args("flat_sci.csv"),
        ),
        ("JSON array of records", table_args("flat.json")),
        ("JSON lines", table_args("flat.jsonl")),
    ];
    for (i, (what, args)) in cases.iter().enumerate() {
        let out = d.path().join(format!("v{i}"));
        let o = ingest(args, &out);
        assert!(o.status.success(), "{what}: {}", stderr(&o));
        let got = read_parquet(&out.join("scores.parquet"));
        assert!(
            got.equals_missing(&want_scores),
            "{what}: scores differ\n{got}\n{want_scores}"
        );
        assert_eq!(manifest_without_source(&out), want_manifest, "{what}");
    }
}

fn expect_bad(args: &[String], fragments: &[&str]) {
    let d = tempfile::tempdir().unwrap();
    let o = ingest(args, &d.path().join("out"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    for f in fragments {
        assert!(e.contains(f), "expected {f:?} in\n{e}");
    }
}

#[test]
fn wrong_separators_and_mixed_ids_are_explained() {
    // A semicolon file without --separator: the hint names the flag.
    expect_bad(
        &table_args("flat_semicolon.csv"),
        &[
            "the header is one field \"prompt_id;response_id;correct;a;b\" containing ';'",
            "pass --separator ';'",
        ],
    );
    // A tab-separated file named .csv.
    let d = tempfile::tempdir().unwrap();
    let tsv_as_csv = d.path().join("scores.csv");
    std::fs::copy(variants().join("flat.tsv"), &tsv_as_csv).unwrap();
    let mut args = table_args("flat.tsv");
    args[1] = tsv_as_csv.display().to_string();
    expect_bad(&args, &["looks tab-separated; pass --separator $'\\t'"]);
    // --separator on a parquet table, and a separator that is not one character.
    let mut a = table_args("flat.json");
    a.extend(["--separator".into(), ";".into()]);
    expect_bad(&a, &["--separator applies to delimited text"]);
    let mut a = table_args("flat.csv");
    a.extend(["--separator".into(), ";;".into()]);
    expect_bad(&a, &["--separator \";;\": give one ASCII character"]);
    // String ids in the responses, integer ids in a reward file.
    let mixed = vec![
        "--responses".to_string(),
        variants()
            .join("pair_string_ids/responses.parquet")
            .display()
            .to_string(),
        "--rewards".into(),
        format!(
            "a={}",
            variants().join("pair_plain/rewards_a.parquet").display()
        ),
    ];
    expect_bad(
        &mixed,
        &["holds integer response ids but the responses file's are strings"],
    );
    // A reward file naming a string id the responses file does not have.
    let ids = read_parquet(&variants().join("pair_string_ids/rewards_a.parquet"));
    let mut renamed = ids
        .clone()
        .lazy_free_replace_first_id("sample-2", "sample-7");
    let bad = d.path().join("rewards_bad.parquet");
    write_parquet(&bad, &mut renamed);
    let orphan = vec![
        "--responses".to_string(),
        variants()
            .join("pair_string_ids/responses.parquet")
            .display()
            .to_string(),
        "--rewards".into(),
        format!("a={}", bad.display()),
    ];
    expect_bad(
        &orphan,
        &[
            "rewards_bad.parquet: row 3 (prompt \"q1, part a\") (response id \"sample-7\") scores a response that is not in the responses file (1 such rows)",
        ],
    );
}

/// Replace the first occurrence of a response id (no lazy API in this build).
trait ReplaceId {
    fn lazy_free_replace_first_id(self, from: &str, to: &str) -> DataFrame;
}

impl ReplaceId for DataFrame {
    fn lazy_free_replace_first_id(mut self, from: &str, to: &str) -> DataFrame {
        let ids: Vec<String> = self
            .column("response_id")
            .unwrap()
            .str()
            .unwrap()
            .iter()
            .map(|s| s.unwrap().to_string())
            .collect();
        let mut done = false;
        let new: Vec<String> = ids
            .into_iter()
            .map(|s| {
                if !done && s == from {
                    done = true;
                    to.to_string()
                } else {
                    s
                }
            })
            .collect();
        self.with_column(Column::new("response_id".into(), new))
            .unwrap();
        self
    }
}
