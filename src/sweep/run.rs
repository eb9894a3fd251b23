//! `privalign sweep`: expand an experiment into chunks, run them with the
//! engine in parallel, and write the results of design §10.
//!
//! **Chunks and resume.** The unit of work and of resumption is a chunk: one
//! (dataset, reward model, n) with every prompt and algorithm. Each finished
//! chunk is written atomically to `<out>/.partial/` beside a file holding the
//! config hash. `--resume` reuses the chunks found there when the hash
//! matches and recomputes the rest; because every random stream depends only
//! on (seed, dataset, reward model, prompt, n, replicate), a resumed run
//! writes the same files as an uninterrupted one.
//!
//! **Never half-written.** A run first removes the previous result files
//! (manifest first), writes each new file atomically, and writes
//! `manifest.yaml` last, with the SHA-256 of every file it vouches for. An
//! interrupted run (Ctrl-C, SIGKILL, a crash) therefore leaves no manifest
//! and no result file that looks complete — only `.partial/`.
//!
//! **Memory** is one dataset's scores, one reward model's pools and one
//! chunk's metrics at a time; the cells file is assembled from the chunk
//! files one chunk at a time. Nothing grows with the number of replicates.

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::fs;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::engine::{Batches, Metrics, Plan, PrivItpParams, Sampling, run_prompt};
use super::fsrc::{FsrcParams, run_fsrc};
use super::seed::{StreamKey, stable_id};
use super::transform::{self, AppliedTransform};
use crate::config::{Experiment, ResolvedDataset, RewardModel, SamplingSpec};
use crate::data::cols;
use crate::data::prepared::SCORES_FILE;
use crate::data::reader::DatasetReader;
use crate::error::input_error;
use crate::fsutil::{sha256_file, write_atomic};
use crate::results::cells::{CELLS_FILE, Chunk};
use crate::results::fsrc::{FSRC_FILE, FsrcRow, fsrc_frame};
use crate::results::manifest::{DatasetRecord, MANIFEST_FILE, ResultsManifest, TransformRecord};
use crate::results::parquet_io::{read_frame, write_frame, write_frames};
use crate::results::summary::{SUMMARY_FILE, SummaryRow, summarise, summary_frame};
use crate::select::pool::Pool;

/// Where interrupted runs keep their finished chunks.
pub const PARTIAL_DIR: &str = ".partial";
const HASH_FILE: &str = "config_hash";

/// Options of one sweep run.
#[derive(Clone, Debug)]
pub struct SweepOptions {
    pub out: PathBuf,
    /// Worker threads (default: rayon's, i.e. the number of cores).
    pub threads: Option<usize>,
    pub resume: bool,
    /// Draw a progress bar (only when stderr is a terminal).
    pub progress: bool,
}

/// What a sweep did.
#[derive(Clone, Debug)]
pub struct SweepOutcome {
    pub out: PathBuf,
    pub cells: usize,
    pub computed_chunks: usize,
    pub resumed_chunks: usize,
    pub fsrc_runs: usize,
    pub seconds: f64,
    /// `--resume` found complete results for the same config: nothing ran.
    pub up_to_date: bool,
}

pub use crate::config::hash::config_hash;

fn git_commit() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn host() -> Option<String> {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
}

/// Status lines: through the bar on a terminal, plain stderr lines otherwise.
struct Reporter {
    bar: ProgressBar,
    drawing: bool,
}

impl Reporter {
    fn new(total: u64, want: bool) -> Self {
        let drawing = want && std::io::stderr().is_terminal();
        let bar = if drawing {
            let b = ProgressBar::new(total);
            if let Ok(style) = ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {human_pos}/{human_len} cells  {rate}  ETA {eta}  {msg}",
            ) {
                let rate = |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.0} cells/s", s.per_sec());
                };
                b.set_style(style.with_key("rate", rate).progress_chars("=> "));
            }
            b
        } else {
            ProgressBar::hidden()
        };
        Self { bar, drawing }
    }

    /// A status line; on a terminal the bar shows only its part before the
    /// first colon (e.g. "dataset `demo`, reward model `oasst`") so it fits
    /// on one line.
    fn stage(&self, msg: String) {
        if self.drawing {
            let short = msg.split(':').next().unwrap_or(&msg).to_string();
            self.bar.set_message(short);
        } else {
            eprintln!("sweep: {msg}");
        }
    }
}

/// The transform of one reward model, its bounds fixed from the dataset's
/// whole-column statistics (dataset.yaml), never from a window.
fn transform_of(
    reader: &DatasetReader,
    ds: &ResolvedDataset,
    rm: &RewardModel,
) -> Result<AppliedTransform> {
    let what = format!(
        "dataset `{}` ({}), reward model `{}`",
        ds.name,
        ds.dir.display(),
        rm.name
    );
    let stats = reader.manifest.transform_stats.get(&rm.name).ok_or_else(|| {
        input_error(format!(
            "{}: has no scores for reward model `{}`; re-run `privalign ingest` with its rewards",
            ds.dir.join(SCORES_FILE).display(),
            rm.name
        ))
    })?;
    transform::prepare(&rm.transform, stats, &what)
}

/// Pools (transformed proxy r̂, gold r*) of the prompts of `blocks`.
fn pools_of(
    reader: &DatasetReader,
    blocks: std::ops::Range<usize>,
    ds: &ResolvedDataset,
    rm: &RewardModel,
    applied: &AppliedTransform,
) -> Result<(std::ops::Range<usize>, Vec<Pool>)> {
    let w = reader.read_blocks(blocks, &[cols::CORRECT, rm.name.as_str()])?;
    let what = format!("dataset `{}`, reward model `{}`", ds.name, rm.name);
    let offsets = &w.offsets;
    let first = w.prompts.start;
    let proxy = applied.map(w.column(&rm.name), &what, |i| {
        let q = offsets.partition_point(|&o| o <= i) - 1;
        reader.prompt_ids[first + q].clone()
    })?;
    let correct = w.column(cols::CORRECT);
    let pools = (0..w.prompts.len())
        .into_par_iter()
        .map(|q| {
            let (a, b) = (offsets[q], offsets[q + 1]);
            let gold: Vec<f64> = correct[a..b].iter().map(|&c| f64::from(c)).collect();
            Pool::new(&proxy[a..b], &gold)
        })
        .collect();
    Ok((w.prompts, pools))
}

/// Whether the config's FSRC section runs on reward model `rm`.
fn fsrc_wanted(exp: &Experiment, rm: &RewardModel) -> bool {
    exp.config.fsrc.as_ref().is_some_and(|f| {
        f.reward_models
            .as_ref()
            .is_none_or(|only| only.contains(&rm.name))
    })
}

/// A unit's file: the chunks of every n of one block, stacked in n order.
fn write_unit(file: &Path, chunks: &[Chunk]) -> Result<()> {
    let frames = chunks
        .iter()
        .map(|c| c.to_frame())
        .collect::<Result<Vec<_>>>()?;
    let schema = frames[0].schema().as_ref().clone();
    write_frames(file, &schema, frames.into_iter().map(Ok))
}

/// Read back a unit's file against the chunks it must hold (keys checked).
fn read_unit(file: &Path, expected: &[Chunk]) -> Result<Vec<Chunk>> {
    let df = read_frame(file)?;
    let mut out = Vec::new();
    let mut row = 0usize;
    for e in expected {
        let part = df.slice(row as i64, e.rows());
        out.push(Chunk::from_frame(&part, e)?);
        row += e.rows();
    }
    if row != df.height() {
        anyhow::bail!("has {} rows, expected {row}", df.height());
    }
    Ok(out)
}

/// The FSRC runs of one (dataset, reward model): every σ × seed, in parallel.
pub fn fsrc_rows(
    exp: &Experiment,
    ds: &ResolvedDataset,
    rm: &RewardModel,
    pools: &[Pool],
) -> Vec<FsrcRow> {
    let Some(f) = &exp.config.fsrc else {
        return Vec::new();
    };
    if let Some(only) = &f.reward_models
        && !only.contains(&rm.name)
    {
        return Vec::new();
    }
    let jobs: Vec<((f64, f64), usize)> = f
        .sigma_pairs()
        .into_iter()
        .flat_map(|s| (0..f.seeds).map(move |k| (s, k)))
        .collect();
    let sampling = match f.sampling_or(exp.config.sampling) {
        SamplingSpec::WithReplacement => Sampling::WithReplacement,
        SamplingSpec::WithoutReplacement => Sampling::WithoutReplacement,
    };
    jobs.par_iter()
        .map(|&((sigma_x, sigma_z), k)| {
            let sigma = sigma_x + sigma_z;
            let params = FsrcParams {
                eps_total: f.eps_total,
                n: f.n,
                sampling,
                privitp: PrivItpParams {
                    sigma_x,
                    sigma_z,
                    beta: f.beta,
                    l: f.l,
                    clamp: f.clamp.map(|[lo, hi]| (lo, hi)),
                    batches: Batches::Fresh,
                },
                privacy: rm.privacy,
            };
            let seed = stable_id(&format!(
                "fsrc/{}/{}/{}/{k}",
                exp.config.seed, ds.name, rm.name
            ));
            FsrcRow {
                dataset: ds.name.clone(),
                reward_model: rm.name.clone(),
                sigma,
                beta: f.beta,
                n: f.n,
                eps_total: f.eps_total,
                seed: k,
                run: run_fsrc(pools, &params, seed),
            }
        })
        .collect()
}

fn remove_if_exists(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing {}", path.display())),
    }
}

/// Whether `out` holds complete results (manifest present, every file it
/// lists present with its hash) made under `hash`.
fn complete_results(out: &Path, hash: &str) -> bool {
    let Ok(text) = fs::read_to_string(out.join(MANIFEST_FILE)) else {
        return false;
    };
    let Ok(m) = yaml_serde::from_str::<ResultsManifest>(&text) else {
        return false;
    };
    m.config_hash == hash
        && m.files
            .iter()
            .all(|(f, sha)| sha256_file(&out.join(f)).is_ok_and(|s| &s == sha))
}

/// Run the sweep of `exp` and write its results to `opts.out`.
pub fn sweep(exp: &Experiment, opts: &SweepOptions) -> Result<SweepOutcome> {
    let threads = opts.threads.unwrap_or_else(rayon::current_num_threads);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("starting the worker threads")?;
    pool.install(|| sweep_in_pool(exp, opts, threads))
}

fn sweep_in_pool(exp: &Experiment, opts: &SweepOptions, threads: usize) -> Result<SweepOutcome> {
    let start = Instant::now();
    let mut stages: BTreeMap<String, f64> = BTreeMap::new();
    let out = &opts.out;
    let hashing = Instant::now();
    // Open every dataset (its index verified against dataset.yaml) and bind
    // the run to the content hash of exactly the columns it reads.
    let mut readers = Vec::new();
    let mut ds_hashes = Vec::new();
    for d in &exp.datasets {
        let reader = DatasetReader::open(&d.dir)?;
        let mut columns: Vec<&str> = vec![cols::CORRECT];
        columns.extend(exp.reward_models.iter().map(|r| r.name.as_str()));
        if reader.manifest.has_gen_seconds {
            columns.push(cols::GEN_SECONDS);
        }
        ds_hashes.push((d.name.clone(), reader.content_hash(&columns)?));
        readers.push(reader);
    }
    let hash = config_hash(&exp.config, &ds_hashes)?;
    let chunks_hash = crate::config::hash::cells_hash(&exp.config, &ds_hashes)?;
    stages.insert("hash_inputs".into(), hashing.elapsed().as_secs_f64());

    fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    if opts.resume && complete_results(out, &hash) {
        return Ok(SweepOutcome {
            out: out.clone(),
            cells: 0,
            computed_chunks: 0,
            resumed_chunks: 0,
            fsrc_runs: 0,
            seconds: start.elapsed().as_secs_f64(),
            up_to_date: true,
        });
    }
    let partial = out.join(PARTIAL_DIR);
    if opts.resume && partial.exists() {
        let old = fs::read_to_string(partial.join(HASH_FILE)).unwrap_or_default();
        if old.trim() != chunks_hash {
            return Err(input_error(format!(
                "{}: the unfinished run there was made with a different config or data (config hash {} ≠ {}); rerun without --resume to start over",
                partial.display(),
                if old.trim().is_empty() {
                    "unknown"
                } else {
                    old.trim()
                },
                chunks_hash
            )));
        }
    } else if partial.exists() {
        fs::remove_dir_all(&partial)
            .with_context(|| format!("removing the stale {}", partial.display()))?;
    }
    fs::create_dir_all(&partial).with_context(|| format!("creating {}", partial.display()))?;
    write_atomic(&partial.join(HASH_FILE), chunks_hash.as_bytes())?;
    for f in [MANIFEST_FILE, CELLS_FILE, SUMMARY_FILE, FSRC_FILE] {
        remove_if_exists(&out.join(f))?;
    }

    let algs = exp.algorithms.len() as u64;
    let total: u64 = exp
        .datasets
        .iter()
        .map(|d| d.manifest.counts.prompts as u64)
        .sum::<u64>()
        * exp.reward_models.len() as u64
        * exp.n_values.len() as u64
        * algs;
    let rep = Reporter::new(total, opts.progress);
    let mut summary: Vec<SummaryRow> = Vec::new();
    let mut fsrc: Vec<FsrcRow> = Vec::new();
    let mut chunk_files: Vec<PathBuf> = Vec::new();
    let mut transforms: BTreeMap<String, BTreeMap<String, TransformRecord>> = BTreeMap::new();
    let mut gen_seconds: Vec<Option<f64>> = Vec::new();
    let (mut computed, mut resumed, mut cells) = (0usize, 0usize, 0usize);
    let (mut t_load, mut t_run, mut t_fsrc) = (0.0, 0.0, 0.0);

    for ((di, ds), reader) in exp.datasets.iter().enumerate().zip(&readers) {
        let t = Instant::now();
        gen_seconds.push(if reader.manifest.has_gen_seconds {
            let mut sum = 0.0;
            for b in 0..reader.blocks.len() {
                let w = reader.read_blocks(b..b + 1, &[cols::GEN_SECONDS])?;
                sum += w
                    .column(cols::GEN_SECONDS)
                    .iter()
                    .map(|&x| f64::from(x))
                    .sum::<f64>();
            }
            Some(sum / reader.manifest.counts.responses.max(1) as f64)
        } else {
            None
        });
        t_load += t.elapsed().as_secs_f64();
        for (ri, rm) in exp.reward_models.iter().enumerate() {
            let applied = transform_of(reader, ds, rm)?;
            let kind = format!("{:?}", applied.kind).to_lowercase();
            transforms.entry(ds.name.clone()).or_default().insert(
                rm.name.clone(),
                TransformRecord {
                    kind: kind.clone(),
                    lo: applied.lo,
                    hi: applied.hi,
                    r_max: applied.r_max,
                    delta_r: rm.privacy.delta_r,
                    data_dependent: applied.data_dependent,
                },
            );
            let ecfg = exp.engine_config(rm);
            let plan = Plan::new(&ecfg);
            rep.stage(format!(
                "dataset `{}`, reward model `{}`: {} n × {} prompts × {} algorithm settings",
                ds.name,
                rm.name,
                exp.n_values.len(),
                reader.prompts(),
                algs
            ));
            let empty = |n: usize| Chunk {
                dataset: ds.name.clone(),
                reward_model: rm.name.clone(),
                n,
                replicates: exp.config.replicates,
                prompt_ids: Vec::new(),
                base_accuracy: Vec::new(),
                algorithms: exp.algorithms.clone(),
                metrics: Vec::new(),
            };
            // Every prompt's metrics per n, for the summary (which needs all prompts).
            let mut per_n: Vec<Chunk> = exp.n_values.iter().map(|&n| empty(n)).collect();
            let wants_fsrc = fsrc_wanted(exp, rm);
            let mut all_pools: Vec<Pool> = Vec::new();
            // One unit of work per block of prompts: read its window, run every
            // n of every prompt (the pool's tables are built once), write it.
            for b in 0..reader.blocks.len() {
                let t = Instant::now();
                let (prompts, pools) = pools_of(reader, b..b + 1, ds, rm, &applied)?;
                t_load += t.elapsed().as_secs_f64();
                let t = Instant::now();
                let ids = &reader.prompt_ids[prompts];
                let mut chunks: Vec<Chunk> = exp
                    .n_values
                    .iter()
                    .map(|&n| Chunk {
                        prompt_ids: ids.to_vec(),
                        base_accuracy: pools.iter().map(|p| p.mean.gold).collect(),
                        ..empty(n)
                    })
                    .collect();
                let file = partial.join(format!("d{di}-r{ri}-b{b}.parquet"));
                let reused = opts.resume
                    && file.exists()
                    && match read_unit(&file, &chunks) {
                        Ok(done) => {
                            chunks = done;
                            true
                        }
                        Err(e) => {
                            rep.stage(format!("recomputing {} ({e:#})", file.display()));
                            false
                        }
                    };
                if reused {
                    resumed += 1;
                } else {
                    let per_prompt: Vec<Vec<Vec<Metrics>>> = pools
                        .par_iter()
                        .zip(ids)
                        .map(|(pool, pid)| {
                            let m = run_prompt(&plan, pool, &exp.n_values, |n| StreamKey {
                                seed: exp.config.seed,
                                dataset: &ds.name,
                                reward_model: &rm.name,
                                prompt_id: pid,
                                n,
                            });
                            rep.bar.inc(algs * exp.n_values.len() as u64);
                            m
                        })
                        .collect();
                    for (j, c) in chunks.iter_mut().enumerate() {
                        c.metrics = per_prompt.iter().map(|v| v[j].clone()).collect();
                    }
                    write_unit(&file, &chunks)?;
                    computed += 1;
                }
                if reused {
                    rep.bar.inc(chunks.iter().map(|c| c.rows() as u64).sum());
                }
                for (all, c) in per_n.iter_mut().zip(chunks) {
                    cells += c.rows();
                    all.prompt_ids.extend(c.prompt_ids);
                    all.base_accuracy.extend(c.base_accuracy);
                    all.metrics.extend(c.metrics);
                }
                chunk_files.push(file);
                if wants_fsrc {
                    all_pools.extend(pools);
                }
                t_run += t.elapsed().as_secs_f64();
            }
            for chunk in &per_n {
                summary.extend(summarise(chunk, &rm.privacy, &kind, applied.data_dependent));
            }
            let t = Instant::now();
            fsrc.extend(fsrc_rows(exp, ds, rm, &all_pools));
            t_fsrc += t.elapsed().as_secs_f64();
        }
    }
    rep.bar.finish_and_clear();
    stages.insert("load_and_transform".into(), t_load);
    stages.insert("run_cells".into(), t_run);
    if exp.config.fsrc.is_some() {
        stages.insert("fsrc".into(), t_fsrc);
    }

    rep.stage(format!("writing results to {}", out.display()));
    let t = Instant::now();
    let mut files = BTreeMap::new();
    let first = read_frame(&chunk_files[0])?;
    let schema = first.schema().as_ref().clone();
    write_frames(
        &out.join(CELLS_FILE),
        &schema,
        chunk_files.iter().map(|f| read_frame(f)),
    )?;
    write_frame(&out.join(SUMMARY_FILE), &mut summary_frame(&summary)?)?;
    let mut written = vec![CELLS_FILE, SUMMARY_FILE];
    if exp.config.fsrc.is_some() {
        write_frame(&out.join(FSRC_FILE), &mut fsrc_frame(&fsrc)?)?;
        written.push(FSRC_FILE);
    }
    for f in written {
        files.insert(f.to_string(), sha256_file(&out.join(f))?);
    }
    stages.insert("write".into(), t.elapsed().as_secs_f64());
    stages.insert("total".into(), start.elapsed().as_secs_f64());
    let manifest = ResultsManifest {
        experiment: exp.name.clone(),
        privalign_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: git_commit(),
        config_path: exp.config_path.display().to_string(),
        config_hash: hash,
        config: exp.config.clone(),
        n_values: exp.n_values.clone(),
        datasets: exp
            .datasets
            .iter()
            .zip(&ds_hashes)
            .zip(&gen_seconds)
            .map(|((d, (_, sha)), g)| DatasetRecord {
                name: d.name.clone(),
                path: d.dir.display().to_string(),
                content_sha256: sha.clone(),
                prompts: d.manifest.counts.prompts,
                responses: d.manifest.counts.responses,
                gen_seconds_mean: *g,
            })
            .collect(),
        transforms,
        seed: exp.config.seed,
        threads,
        host: host(),
        stages,
        resumed_chunks: resumed,
        computed_chunks: computed,
        files,
    };
    write_atomic(
        &out.join(MANIFEST_FILE),
        yaml_serde::to_string(&manifest)?.as_bytes(),
    )?;
    fs::remove_dir_all(&partial).with_context(|| format!("removing {}", partial.display()))?;
    Ok(SweepOutcome {
        out: out.clone(),
        cells,
        computed_chunks: computed,
        resumed_chunks: resumed,
        fsrc_runs: fsrc.len(),
        seconds: start.elapsed().as_secs_f64(),
        up_to_date: false,
    })
}

/// Only the FSRC section of `exp` (for `privalign fsrc`), on `threads` workers.
pub fn fsrc_only(exp: &Experiment, threads: usize) -> Result<Vec<FsrcRow>> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("starting the worker threads")?;
    pool.install(|| {
        let mut rows = Vec::new();
        for ds in &exp.datasets {
            let reader = DatasetReader::open(&ds.dir)?;
            for rm in exp.reward_models.iter().filter(|rm| fsrc_wanted(exp, rm)) {
                let applied = transform_of(&reader, ds, rm)?;
                let (_, pools) = pools_of(&reader, 0..reader.blocks.len(), ds, rm, &applied)?;
                rows.extend(fsrc_rows(exp, ds, rm, &pools));
            }
        }
        Ok(rows)
    })
}
