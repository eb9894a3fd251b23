//! Issue #13 §3: every subcommand over a table of hostile inputs. Each case
//! asserts no abort (exit 101 or 134, or a signal), no "panicked" on
//! stderr, the expected exit code (2 for bad input) and message, and that
//! every file outside what the command owns is byte-identical afterwards.
//! Tiny inputs only: the whole matrix runs in a few seconds.

use crate::common::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut m = BTreeMap::new();
    walk(dir, dir, &mut m);
    m
}

/// One hostile invocation: arguments (with `{d}` for the work directory),
/// expected exit code, a fragment its stderr must contain, and the paths
/// (prefixes, relative to the work directory) the command may create.
struct Case {
    args: &'static str,
    code: i32,
    says: &'static str,
    owns: &'static [&'static str],
}

const fn case(args: &'static str, code: i32, says: &'static str) -> Case {
    Case {
        args,
        code,
        says,
        owns: &[],
    }
}

/// The work directory: a user's file, raw inputs and a prepared dataset.
fn setup(d: &Path) {
    std::fs::write(d.join("precious.txt"), "the user's file").unwrap();
    let mut ok_csv = String::from("prompt_id,correct,r\n");
    for p in 0..3 {
        for k in 0..4 {
            ok_csv += &format!("q{p},{},{}\n", (p + k) % 2, (p * 4 + k) as f64 / 12.0);
        }
    }
    std::fs::write(d.join("ok.csv"), &ok_csv).unwrap();
    std::fs::write(
        d.join("ids.csv"),
        "prompt_id,correct,r\n007,1,0.5\n007,0,0.2\n7,1,0.1\n7,0,0.9\n",
    )
    .unwrap();
    std::fs::write(
        d.join("huge.csv"),
        "prompt_id,correct,r\np,1,1e39\np,0,0.2\n",
    )
    .unwrap();
    std::fs::write(
        d.join("text.csv"),
        "prompt_id,correct,r\np,1,0.5\np,0,abc\n",
    )
    .unwrap();
    std::fs::write(
        d.join("ragged.csv"),
        "prompt_id,correct,r\np,1,0.5\np,0,0.3,9\n",
    )
    .unwrap();
    std::fs::write(d.join("empty.csv"), "").unwrap();
    std::fs::write(
        d.join("flat.jsonl"),
        "{\"prompt_id\":\"p\",\"correct\":1,\"r\":0.5}\n{\"prompt_id\":\"p\",\"correct\":0,\"r\":0.5\n",
    )
    .unwrap();
    let mut bom = vec![0xef, 0xbb, 0xbf];
    bom.extend_from_slice(
        b"{\"prompt\":\"a\",\"responses\":[{\"is_correct\":1,\"proxy_reward\":0.5},{\"is_correct\":0,\"proxy_reward\":0.1}]}\n",
    );
    std::fs::write(d.join("bom.jsonl"), bom).unwrap();
    std::fs::write(d.join("not-yaml.yaml"), "{{{{ :::").unwrap();
    std::fs::write(d.join("taken.tex"), "mine").unwrap();
    let out = run(&[
        "ingest",
        "--table",
        d.join("ok.csv").to_str().unwrap(),
        "--prompt-col",
        "prompt_id",
        "--correct-col",
        "correct",
        "--reward-col",
        "r=r",
        "--out",
        d.join("ds").to_str().unwrap(),
    ]);
    ok(&out);
    let cfg = |name: &str, body: &str| {
        std::fs::write(
            d.join(name),
            format!(
                "datasets: [{{path: ds}}]\nreward_models: {{r: {{transform: {{kind: none}}}}}}\n{body}"
            ),
        )
        .unwrap();
    };
    cfg(
        "good.yaml",
        "n: [2]\nreplicates: 2\nalgorithms: {bon: {}, privbon: {sigma: [0.5]}}\n",
    );
    cfg(
        "big-n.yaml",
        "n: [1000000000000]\nreplicates: 2\nalgorithms: {bon: {}}\n",
    );
    cfg(
        "big-reps.yaml",
        "n: [2]\nreplicates: 1000000000\nalgorithms: {bon: {}}\n",
    );
    cfg(
        "tiny-sigma.yaml",
        "n: [2]\nreplicates: 2\nalgorithms: {privitp: {sigma: [1e-200], beta: [0.1]}}\n",
    );
    cfg(
        "subnormal-sigma.yaml",
        "n: [2]\nreplicates: 2\nalgorithms: {privbon: {sigma: [5e-324]}}\n",
    );
    cfg(
        "report-typo.yaml",
        "n: [2]\nreplicates: 2\nalgorithms: {privbon: {sigma: [0.5]}}\nreports: {tables: [{kind: lift, sigma: 0.25}]}\n",
    );
    cfg(
        "rm-typo.yaml",
        "n: [2]\nreplicates: 2\nalgorithms: {bon: {}}\n",
    );
    let t = std::fs::read_to_string(d.join("rm-typo.yaml")).unwrap();
    std::fs::write(d.join("rm-typo.yaml"), t.replace("{r: {", "{rr: {")).unwrap();
    ok(&run(&[
        "sweep",
        "--no-progress",
        d.join("good.yaml").to_str().unwrap(),
        "--out",
        d.join("res").to_str().unwrap(),
    ]));
}

const INGEST: &str = "ingest --prompt-col prompt_id --correct-col correct --reward-col r=r";

#[test]
fn every_subcommand_survives_hostile_inputs() {
    let d = tempfile::tempdir().unwrap();
    let d = d.path();
    setup(d);
    let cases: Vec<Case> = vec![
        // ingest
        Case {
            args: "ingest --table {d}/ids.csv --prompt-col prompt_id --correct-col correct --reward-col r=r --out {d}/ids-ds",
            code: 0,
            says: "",
            owns: &["ids-ds"],
        },
        case(
            "INGEST --table {d}/huge.csv --out {d}/o",
            2,
            "beyond float32's range",
        ),
        case(
            "INGEST --table {d}/text.csv --out {d}/o",
            2,
            "row 2 (prompt \"p\", response 1): reward (r) is \"abc\"",
        ),
        case(
            "INGEST --table {d}/ragged.csv --out {d}/o",
            2,
            "line 3 has 4 fields",
        ),
        case(
            "INGEST --table {d}/flat.jsonl --out {d}/o",
            2,
            "line 2: not valid JSON",
        ),
        case("INGEST --table {d}/empty.csv --out {d}/o", 2, "empty"),
        case(
            "INGEST --table {d}/missing.csv --out {d}/o",
            2,
            "missing.csv",
        ),
        case(
            "INGEST --table {d}/ok.csv --out .",
            2,
            "names no new directory",
        ),
        case(
            "INGEST --table {d}/ok.csv --out {d}/precious.txt --force",
            2,
            "is a file",
        ),
        case(
            "INGEST --table {d}/ok.csv --out {d}/ds",
            2,
            "already exists",
        ),
        case(
            "INGEST --table {d}/ok.csv --out {d}/o --name a\nb",
            2,
            "control character",
        ),
        Case {
            args: "ingest --nested-jsonl {d}/bom.jsonl --out {d}/bom-ds",
            code: 0,
            says: "",
            owns: &["bom-ds"],
        },
        // synth
        case("synth --prompts 0 --responses 8 --out {d}/s", 2, ""),
        case("synth --out {d}/precious.txt", 2, ""),
        // budget
        case(
            "budget --mechanism privitp-phase2 --lambda -0.2 --t 3 --sigma-z 0.5",
            0,
            "",
        ),
        case(
            "budget --n 1000000000000000000",
            2,
            "--n: n = 1000000000000000000 is above the limit of 4194304",
        ),
        case("budget --sigma 1e-200", 2, "valid values lie in [1e-6"),
        case("budget --sigma 5e-324", 2, "valid values lie in [1e-6"),
        case("budget --sigma -1", 2, "--sigma must be positive"),
        case("budget --latex {d}/taken.tex", 2, "pass --force"),
        case("budget --latex {d}/no-such-dir/t.tex", 2, "t.tex"),
        // sweep / reproduce / fsrc
        case(
            "sweep --no-progress {d}/big-n.yaml --out {d}/o",
            2,
            "above the limit of 4194304",
        ),
        case(
            "sweep --no-progress {d}/big-reps.yaml --out {d}/o",
            2,
            "replicates: 1000000000 replicates is above the limit",
        ),
        case(
            "sweep --no-progress {d}/tiny-sigma.yaml --out {d}/o",
            2,
            "algorithms.privitp.sigma[0]: σ = 1e-200 is below the smallest supported value",
        ),
        case(
            "sweep --no-progress {d}/subnormal-sigma.yaml --out {d}/o",
            2,
            "algorithms.privbon.sigma[0]",
        ),
        case(
            "reproduce --no-progress {d}/report-typo.yaml --out {d}/o",
            2,
            "reports.tables[0].sigma: σ = 0.25 is not one the sweep runs (0.5)",
        ),
        case("sweep --no-progress {d}/rm-typo.yaml --out {d}/o", 2, "rr"),
        case(
            "sweep --no-progress {d}/good.yaml --threads 100000 --out {d}/o",
            2,
            "at most 1024",
        ),
        case(
            "sweep --no-progress {d}/not-yaml.yaml --out {d}/o",
            2,
            "not-yaml.yaml",
        ),
        case(
            "sweep --no-progress {d}/missing.yaml --out {d}/o",
            2,
            "missing.yaml",
        ),
        case(
            "sweep --no-progress {d}/good.yaml --out {d}/precious.txt",
            2,
            "is a file",
        ),
        case("fsrc {d}/good.yaml --out {d}/o", 2, "no `fsrc:` section"),
        // reading results
        case("table {d}/nowhere --kind lift", 2, "nowhere"),
        case("table {d}/ds --kind lift", 2, "manifest.yaml"),
        case("table {d}/res --kind lift --sigma -1", 2, ""),
        case(
            "table {d}/res --kind lift --out {d}/taken.tex",
            2,
            "pass --force",
        ),
        case("plot {d}/nowhere --kind scaling", 2, "nowhere"),
        case("check {d}/nowhere", 2, "nowhere"),
        case("check {d}/ds", 2, "manifest.yaml"),
        case("describe {d}/nowhere", 2, "nowhere"),
        case("merge {d}/nowhere --out {d}/o", 2, "nowhere"),
        case("audit --mechanism nonsense", 2, ""),
        case("sweep", 2, ""),
    ];
    let mut failures = Vec::new();
    for c in &cases {
        let before = snapshot(d);
        let line = c
            .args
            .replace("INGEST", INGEST)
            .replace("{d}", d.to_str().unwrap());
        // Split on spaces, but keep a literal "\n" inside an argument.
        let args: Vec<String> = line.split(' ').map(String::from).collect();
        let o = Command::new(bin()).args(&args).output().unwrap();
        let err = stderr(&o);
        let code = o.status.code();
        let mut why = Vec::new();
        if code.is_none() || matches!(code, Some(101 | 134)) {
            why.push(format!("aborted ({:?})", o.status));
        }
        if err.contains("panicked") {
            why.push("panicked".into());
        }
        if code != Some(c.code) {
            why.push(format!("exit {code:?}, expected {}", c.code));
        }
        if !err.contains(c.says) {
            why.push(format!("stderr lacks {:?}", c.says));
        }
        let after = snapshot(d);
        let touched: Vec<&String> =
            before
                .iter()
                .filter(|(k, v)| after.get(*k) != Some(*v))
                .map(|(k, _)| k)
                .chain(after.keys().filter(|k| {
                    !before.contains_key(*k) && !c.owns.iter().any(|o| k.starts_with(o))
                }))
                .collect();
        if !touched.is_empty() {
            why.push(format!("touched {touched:?}"));
        }
        if !why.is_empty() {
            failures.push(format!("`{line}`: {}\n    stderr: {err}", why.join("; ")));
        }
        for o in c.owns {
            let _ = std::fs::remove_dir_all(d.join(o));
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn csv_ids_are_text_so_007_and_7_stay_two_prompts() {
    let d = tempfile::tempdir().unwrap();
    setup(d.path());
    let o = run(&[
        "ingest",
        "--table",
        d.path().join("ids.csv").to_str().unwrap(),
        "--prompt-col",
        "prompt_id",
        "--correct-col",
        "correct",
        "--reward-col",
        "r=r",
        "--out",
        d.path().join("ids-ds").to_str().unwrap(),
    ]);
    ok(&o);
    assert!(stdout(&o).contains("ingested 2 prompts"), "{}", stdout(&o));
    let ds = privalign::data::prepared::PreparedDataset::load(&d.path().join("ids-ds")).unwrap();
    assert_eq!(ds.prompt_ids, ["007", "7"]);
}

/// A reader that has gone: the read end of stdout's pipe is closed before
/// privalign writes, so every write fails with EPIPE.
fn closed_pipe_run(args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Command::new(bin())
        .args(args)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_closed_stdout_pipe_exits_quietly() {
    let d = tempfile::tempdir().unwrap();
    setup(d.path());
    let res = d.path().join("res");
    for args in [
        vec!["budget"],
        vec![
            "table",
            res.to_str().unwrap(),
            "--kind",
            "lift",
            "--format",
            "markdown",
        ],
        vec!["describe", d.path().join("ds").to_str().unwrap()],
    ] {
        let o = closed_pipe_run(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).is_empty(), "{args:?}: {}", stderr(&o));
    }
}

/// Issue #13 §4: absurd but legal workloads are warned about before any
/// work starts — the expected run time for replicates × cells, the memory
/// for threads × n, threads above the core count — and threads above the
/// hard limit are refused (exit 2) naming it, by every command taking them.
#[test]
fn absurd_workloads_warn_with_time_and_memory_before_running() {
    use std::io::BufRead;
    let d = tempfile::tempdir().unwrap();
    let d = d.path();
    setup(d);
    std::fs::write(
        d.join("absurd.yaml"),
        "datasets: [{path: ds}]\nreward_models: {r: {transform: {kind: none}}}\nn: [4194304]\nreplicates: 1000000\nalgorithms: {bon: {}}\n",
    )
    .unwrap();
    // 1024 workers × 32 bytes × 2^22 = 128 GiB, warned about on any machine
    // with less than twice that available.
    let avail_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            let l = t
                .lines()
                .find(|l| l.starts_with("MemAvailable:"))?
                .to_string();
            l.split_whitespace().nth(1)?.parse::<f64>().ok()
        })
        .map(|kb| kb / 1024.0 / 1024.0);
    let memory_warned = avail_gib.is_some_and(|g| g < 250.0);
    let mut child = Command::new(bin())
        .args(["sweep", "--no-progress", "absurd.yaml", "--out", "o"])
        .args(["--threads", "1024"])
        .current_dir(d)
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Read stderr on a thread; stop once the expected warnings are in (they
    // come before any work), or after 120 s.
    let stderr_pipe = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr_pipe).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let done = seen.contains("warning: this sweep evaluates")
            && (!memory_warned || seen.contains("worker threads × n"));
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if done || left.is_zero() {
            break;
        }
        match rx.recv_timeout(left) {
            Ok(line) => {
                seen.push_str(&line);
                seen.push('\n');
            }
            Err(_) => break,
        }
    }
    // Stop the 10⁶-replicate sweep this test started (its own child, by pid).
    let _ = child.kill();
    let _ = child.wait();
    let cores = std::thread::available_parallelism().unwrap().get();
    for frag in [
        format!("warning: --threads 1024 is more than the {cores} cores of this machine"),
        // 3 prompts × 1 reward model × n × 10⁶ replicates × 1 algorithm.
        "warning: this sweep evaluates about 1.3e13 candidates (1000000 replicates, n up to 4194304, 1 algorithm settings, 3 prompts, 1 reward models): roughly ".into(),
        "lower replicates or the n grid".into(),
    ] {
        assert!(seen.contains(&frag), "missing {frag:?} in:\n{seen}");
    }
    if memory_warned {
        let frag = "warning: 1024 worker threads × n = 4194304 need about 128.0 GiB of buffers";
        assert!(seen.contains(frag), "missing {frag:?} in:\n{seen}");
    }
    assert!(
        seen.contains(" days on ") || seen.contains(" h on "),
        "no run time in:\n{seen}"
    );
    assert!(!seen.contains("panicked"), "{seen}");

    // Above the hard limit: exit 2 naming it, nothing written, in every command.
    for args in [
        vec!["sweep", "--no-progress", "good.yaml", "--out", "o2"],
        vec!["reproduce", "--no-progress", "good.yaml", "--out", "o2"],
        vec!["fsrc", "good.yaml", "--out", "o2"],
    ] {
        let o = Command::new(bin())
            .args(&args)
            .args(["--threads", "1025"])
            .current_dir(d)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("--threads 1025: at most 1024 worker threads"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(!d.join("o2").exists(), "{args:?}");
    }
}
