//! Sharded sweeps: `sweep --shard K/N` + `merge` give the one-machine
//! results byte for byte (N ∈ {1, 2, 3, 7}, any thread count), and merge
//! refuses every inconsistent set of shards without writing anything.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The manifest keys that describe the run rather than the results.
const RUN_SPECIFIC: [&str; 7] = [
    "merged_shards",
    "threads",
    "host",
    "stages",
    "resumed_chunks",
    "computed_chunks",
    "git_commit",
];

/// experiments/demo.yaml on the prepared demo data with every algorithm and
/// FSRC, but 2 n values and 1 replicate (seconds in the debug build).
fn sets() -> Vec<String> {
    [
        format!("datasets.0.path={}", demo_prepared().display()),
        "n=[2, 64]".into(),
        "replicates=1".into(),
        "fsrc.seeds=2".into(),
        "reports={}".into(),
    ]
    .into_iter()
    .flat_map(|s| ["--set".to_string(), s])
    .collect()
}

fn config() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("experiments/demo.yaml")
        .display()
        .to_string()
}

fn run_s(args: &[String]) -> std::process::Output {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    run(&a)
}

fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("shard-tests");
        if d.exists() {
            std::fs::remove_dir_all(&d).unwrap();
        }
        std::fs::create_dir_all(&d).unwrap();
        d
    })
}

fn sweep_args(out: &Path, threads: usize, extra: &[String]) -> Vec<String> {
    let mut a = vec![
        "sweep".to_string(),
        config(),
        "--out".into(),
        out.display().to_string(),
        "--threads".into(),
        threads.to_string(),
        "--no-progress".into(),
    ];
    a.extend(sets());
    a.extend(extra.iter().cloned());
    a
}

/// The one-machine run (2 threads).
fn local() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let out = scratch().join("local");
        ok(&run_s(&sweep_args(&out, 2, &[])));
        out
    })
}

/// Shard directories of an N-way split, shard K run on `1 + K % 2` threads.
fn shards(tag: &str, n: usize) -> Vec<PathBuf> {
    (0..n)
        .map(|k| {
            let out = scratch().join(format!("{tag}{n}/shards/{k}"));
            let o = run_s(&sweep_args(
                &out,
                1 + k % 2,
                &["--shard".into(), format!("{k}/{n}")],
            ));
            ok(&o);
            out
        })
        .collect()
}

fn merge(dirs: &[PathBuf], out: &Path) -> std::process::Output {
    let mut a = vec!["merge".to_string()];
    a.extend(dirs.iter().map(|d| d.display().to_string()));
    a.extend(["--out".into(), out.display().to_string()]);
    run_s(&a)
}

fn manifest_without_run_fields(dir: &Path) -> yaml_serde::Value {
    let text = std::fs::read_to_string(dir.join("manifest.yaml")).unwrap();
    let mut v: yaml_serde::Value = yaml_serde::from_str(&text).unwrap();
    let m = v.as_mapping_mut().unwrap();
    for k in RUN_SPECIFIC {
        m.remove(k);
    }
    v
}

#[test]
fn merged_shards_equal_the_one_machine_run_byte_for_byte() {
    let local = local();
    for n in [1, 2, 3, 7] {
        let dirs = shards("n", n);
        let out = scratch().join(format!("n{n}/results"));
        let o = merge(&dirs, &out);
        ok(&o);
        for f in ["cells.parquet", "summary.parquet", "fsrc.parquet"] {
            let (a, b) = (
                std::fs::read(local.join(f)).unwrap(),
                std::fs::read(out.join(f)).unwrap(),
            );
            assert!(a == b, "N = {n}: {f} differs from the one-machine run");
        }
        assert_eq!(
            manifest_without_run_fields(local),
            manifest_without_run_fields(&out),
            "N = {n}: manifests differ beyond {RUN_SPECIFIC:?}"
        );
        // Merged results are results: reports work on them.
        let o = run(&[
            "table",
            out.to_str().unwrap(),
            "--kind",
            "lift",
            "--sigma",
            "0.25",
            "--beta",
            "0.05",
            "--format",
            "csv",
        ]);
        ok(&o);
        // A shard directory is not: reports refuse it and point to merge.
        let o = run(&[
            "table",
            dirs[0].to_str().unwrap(),
            "--kind",
            "lift",
            "--sigma",
            "0.25",
            "--beta",
            "0.05",
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("privalign merge"), "{}", stderr(&o));
    }
}

#[test]
fn merge_refuses_inconsistent_shards_and_writes_nothing() {
    let dirs = shards("refuse", 3);
    let refused = |set: &[PathBuf], needle: &str| {
        let out = scratch().join("refused");
        let o = merge(set, &out);
        assert_eq!(o.status.code(), Some(2), "{needle}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(needle),
            "want {needle:?} in: {}",
            stderr(&o)
        );
        assert!(
            !out.exists(),
            "merge wrote {} after refusing",
            out.display()
        );
        assert!(!stderr(&o).contains("panicked"));
    };
    // A missing shard, given or not.
    refused(
        &[dirs[0].clone(), dirs[2].clone()],
        "shard(s) 1 of 3 missing",
    );
    let gone = scratch().join("refuse3/shards/nope");
    refused(
        &[dirs[0].clone(), gone.clone(), dirs[2].clone()],
        &gone.display().to_string(),
    );
    // A duplicated shard.
    refused(
        &[
            dirs[0].clone(),
            dirs[1].clone(),
            dirs[2].clone(),
            dirs[1].clone(),
        ],
        "both hold shard 1/3",
    );
    // A shard of another split.
    let other_n = scratch().join("n2-for-refusal");
    ok(&run_s(&sweep_args(
        &other_n,
        2,
        &["--shard".into(), "1/2".into()],
    )));
    refused(
        &[dirs[0].clone(), other_n.clone(), dirs[2].clone()],
        &other_n.display().to_string(),
    );
    // A shard made with another config.
    let other_cfg = scratch().join("other-seed-shard");
    ok(&run_s(&sweep_args(
        &other_cfg,
        2,
        &[
            "--shard".into(),
            "1/3".into(),
            "--set".into(),
            "seed=7".into(),
        ],
    )));
    refused(
        &[dirs[0].clone(), other_cfg.clone(), dirs[2].clone()],
        &other_cfg.display().to_string(),
    );
    // An unfinished shard (its manifest says so).
    let unfinished = scratch().join("unfinished-shard");
    copy_dir(&dirs[1], &unfinished);
    let m = unfinished.join("shard.yaml");
    let text = std::fs::read_to_string(&m).unwrap();
    assert!(text.contains("finished: true"));
    std::fs::write(&m, text.replace("finished: true", "finished: false")).unwrap();
    refused(
        &[dirs[0].clone(), unfinished.clone(), dirs[2].clone()],
        "unfinished",
    );
    // A shard whose unit file was removed.
    let damaged = scratch().join("damaged-shard");
    copy_dir(&dirs[1], &damaged);
    let unit = std::fs::read_dir(&damaged)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "parquet"))
        .unwrap();
    std::fs::remove_file(&unit).unwrap();
    refused(
        &[dirs[0].clone(), damaged.clone(), dirs[2].clone()],
        &damaged.display().to_string(),
    );
}

#[test]
fn shard_flag_is_checked() {
    for bad in ["3/3", "0/0", "x/2", "1"] {
        let out = scratch().join("bad-flag");
        let o = run_s(&sweep_args(&out, 1, &["--shard".into(), bad.into()]));
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        assert!(stderr(&o).contains("--shard"), "{}", stderr(&o));
        assert!(!out.exists());
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// A shard reads only its slice: the rows of scores.parquet it decoded
/// (recorded in shard.yaml) are exactly the rows of its own blocks, once per
/// reward model — no prompt outside its units. (FSRC, which draws over all
/// prompts, is off here; with it the FSRC shard reads its reward model whole.)
#[test]
fn each_shard_reads_only_its_own_blocks() {
    let reader = privalign::data::reader::DatasetReader::open(demo_prepared()).unwrap();
    let n = 4;
    let mut total = 0u64;
    for k in 0..n {
        let out = scratch().join(format!("slice{n}/{k}"));
        ok(&run_s(&sweep_args(
            &out,
            1,
            &[
                "--shard".into(),
                format!("{k}/{n}"),
                "--set".into(),
                "fsrc=null".into(),
            ],
        )));
        let text = std::fs::read_to_string(out.join("shard.yaml")).unwrap();
        let m: yaml_serde::Value = yaml_serde::from_str(&text).unwrap();
        let want: u64 = m["units"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|u| {
                let name = u.as_str().unwrap();
                let b: usize = name
                    .rsplit_once("-b")
                    .and_then(|(_, rest)| rest.strip_suffix(".parquet"))
                    .unwrap_or_else(|| panic!("{name}: not a block unit"))
                    .parse()
                    .unwrap();
                reader.blocks[b].rows.len() as u64
            })
            .sum();
        let got = m["rows_read"].as_u64().unwrap();
        assert_eq!(
            got, want,
            "shard {k}/{n} read {got} rows, its units hold {want}"
        );
        total += got;
    }
    // Together the shards read every (block, reward model) exactly once.
    let rms = yaml_serde::from_str::<yaml_serde::Value>(
        &std::fs::read_to_string(scratch().join(format!("slice{n}/0/shard.yaml"))).unwrap(),
    )
    .unwrap()["config"]["reward_models"]
        .as_mapping()
        .unwrap()
        .len() as u64;
    assert_eq!(total, rms * reader.offsets.last().copied().unwrap() as u64);
}
