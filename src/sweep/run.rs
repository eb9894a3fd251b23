//! `privalign sweep`: expand an experiment into chunks, run them with the
//! engine in parallel, and write the results of design §10.
//!
//! **Blocks and resume.** The unit of work and of resumption is a block
//! ([`super::blocks`]): one (dataset, reward model, 32-prompt block) with
//! every n and algorithm. Each finished block is written atomically to
//! `<out>/.partial/` beside a file holding the config hash. `--resume`
//! reuses the blocks found there when the hash matches and recomputes the
//! rest; because every random stream depends only on (seed, dataset, reward
//! model, prompt, n, replicate), a resumed run writes the same files as an
//! uninterrupted one.
//!
//! **Never half-written, never destroyed early.** A run builds every result
//! file in `<out>/.partial/result/` and swaps them in only when all are
//! complete, `manifest.yaml` (with the SHA-256 of every file it vouches for)
//! last; until then the old results stay complete and readable. An
//! interrupted run (Ctrl-C, SIGKILL, a crash) leaves the old results and
//! `.partial/`. The lock, the staging and what privalign may overwrite are
//! in [`super::staging`].
//!
//! **Memory** is a window of blocks' pools (read through the verifying
//! windowed reader, only the columns the config uses) and one (dataset,
//! reward model)'s cell metrics when the cells file is assembled — never the
//! whole dataset's scores, except for FSRC (which draws over all prompts of
//! its reward model). Nothing grows with the number of replicates.

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::fs;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::blocks::{
    TransformLabel, all_pools, applied_transform, block_file_name, content_sha256, fsrc_wanted,
    gen_seconds_mean, prepare_reward_model, read_block, run_blocks, write_block, write_cells,
};
use super::engine::{Batches, PrivItpParams, Sampling};
use super::fsrc::{FsrcParams, run_fsrc};
use super::seed::stable_id;
use crate::config::{Experiment, ResolvedDataset, RewardModel, SamplingSpec};
use crate::data::open::open_reader;
use crate::fsutil::{sha256_file, write_atomic};
use crate::results::cells::CELLS_FILE;
use crate::results::fsrc::{FSRC_FILE, FsrcRow, fsrc_frame};
use crate::results::manifest::{DatasetRecord, MANIFEST_FILE, ResultsManifest, TransformRecord};
use crate::results::parquet_io::write_frame;
use crate::results::summary::{SUMMARY_FILE, summary_frame};
use crate::select::pool::Pool;

pub use super::staging::PARTIAL_DIR;
use super::staging::Staging;

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

pub(crate) fn git_commit() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

pub(crate) fn host() -> Option<String> {
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
    let (outcome, staging) = sweep_staged(exp, opts, "sweep")?;
    staging.commit()?;
    Ok(outcome)
}

/// Run the sweep of `exp` (as `command`, for the lock) up to the swap: the
/// result files wait in `staging.result_dir()`, where `reproduce` adds its
/// reports before [`Staging::commit`]. With `--resume` on complete results
/// nothing is staged (`up_to_date`).
pub fn sweep_staged(
    exp: &Experiment,
    opts: &SweepOptions,
    command: &str,
) -> Result<(SweepOutcome, Staging)> {
    let threads = opts.threads.unwrap_or_else(rayon::current_num_threads);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("starting the worker threads")?;
    pool.install(|| sweep_in_pool(exp, opts, threads, command))
}

/// The result files a sweep of `exp` writes (relative to its `--out`).
pub fn result_files(exp: &Experiment) -> Vec<String> {
    let mut v = vec![MANIFEST_FILE, CELLS_FILE, SUMMARY_FILE];
    if exp.config.fsrc.is_some() {
        v.push(FSRC_FILE);
    }
    v.into_iter().map(String::from).collect()
}

fn sweep_in_pool(
    exp: &Experiment,
    opts: &SweepOptions,
    threads: usize,
    command: &str,
) -> Result<(SweepOutcome, Staging)> {
    let start = Instant::now();
    let mut stages: BTreeMap<String, f64> = BTreeMap::new();
    let out = &opts.out;
    let hashing = Instant::now();
    let readers = exp
        .datasets
        .iter()
        .map(|d| open_reader(&d.dir))
        .collect::<Result<Vec<_>>>()?;
    let mut ds_hashes = Vec::new();
    for (d, r) in exp.datasets.iter().zip(&readers) {
        ds_hashes.push((d.name.clone(), content_sha256(exp, d, r)?));
    }
    let hash = config_hash(&exp.config, &ds_hashes)?;
    let chunks_hash = crate::config::hash::cells_hash(&exp.config, &ds_hashes)?;
    stages.insert("hash_inputs".into(), hashing.elapsed().as_secs_f64());

    let mut staging = Staging::begin(out, command, &result_files(exp))?;
    if opts.resume && complete_results(out, &hash) {
        let up = SweepOutcome {
            out: out.clone(),
            cells: 0,
            computed_chunks: 0,
            resumed_chunks: 0,
            fsrc_runs: 0,
            seconds: start.elapsed().as_secs_f64(),
            up_to_date: true,
        };
        return Ok((up, staging));
    }
    let partial = staging.prepare(&chunks_hash, opts.resume)?;

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
    let mut fsrc: Vec<FsrcRow> = Vec::new();
    let mut transforms: BTreeMap<String, BTreeMap<String, TransformRecord>> = BTreeMap::new();
    let mut gen_seconds: Vec<Option<f64>> = Vec::new();
    let (mut computed, mut resumed) = (0usize, 0usize);
    let (mut t_load, mut t_run, mut t_fsrc) = (0.0, 0.0, 0.0);
    let block_path = |d: usize, r: usize, b: usize| partial.join(block_file_name(d, r, b));

    for (di, ds) in exp.datasets.iter().enumerate() {
        let reader = &readers[di];
        let t = Instant::now();
        gen_seconds.push(gen_seconds_mean(ds, reader)?);
        t_load += t.elapsed().as_secs_f64();
        for (ri, rm) in exp.reward_models.iter().enumerate() {
            let t = Instant::now();
            let run = prepare_reward_model(exp, ds, reader, rm)?;
            t_load += t.elapsed().as_secs_f64();
            let applied = &run.applied;
            transforms.entry(ds.name.clone()).or_default().insert(
                rm.name.clone(),
                TransformRecord {
                    kind: applied.kind.name().to_string(),
                    lo: applied.lo,
                    hi: applied.hi,
                    r_max: applied.r_max,
                    delta_r: rm.privacy.delta_r,
                    data_dependent: applied.data_dependent,
                },
            );
            rep.stage(format!(
                "dataset `{}`, reward model `{}`: {} n × {} prompts × {} algorithm settings",
                ds.name,
                rm.name,
                exp.n_values.len(),
                reader.prompts(),
                algs
            ));
            // Blocks already on disk from an interrupted run of this config.
            let nblocks = reader.blocks.len();
            let mut todo = Vec::with_capacity(nblocks);
            for b in 0..nblocks {
                let file = block_path(di, ri, b);
                let reusable = opts.resume
                    && file.exists()
                    && match read_block(&file, exp, ds, rm, reader, b) {
                        Ok(_) => true,
                        Err(e) => {
                            rep.stage(format!("recomputing {} ({e:#})", file.display()));
                            false
                        }
                    };
                if reusable {
                    resumed += 1;
                    rep.bar.inc(
                        reader.blocks[b].prompts.len() as u64 * exp.n_values.len() as u64 * algs,
                    );
                } else {
                    todo.push(b);
                }
            }
            let write = |b: usize, c: &[crate::results::cells::Chunk]| {
                write_block(&block_path(di, ri, b), c)
            };
            let (read, total) =
                run_blocks(exp, ds, rm, reader, &run, &todo, threads, &write, &|c| {
                    rep.bar.inc(c)
                })?;
            computed += todo.len();
            t_load += read;
            t_run += total - read;
            if fsrc_wanted(exp, ri) {
                let t = Instant::now();
                let pools = all_pools(ds, reader, rm, applied)?;
                fsrc.extend(fsrc_rows(exp, ds, rm, &pools));
                t_fsrc += t.elapsed().as_secs_f64();
            }
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
    let res = staging.result_dir()?;
    let labels = |d: usize, r: usize| -> Result<TransformLabel> {
        let t = &transforms[&exp.datasets[d].name][&exp.reward_models[r].name];
        Ok(TransformLabel {
            kind: t.kind.clone(),
            data_dependent: t.data_dependent,
        })
    };
    let (summary, cells) = write_cells(exp, &readers, &labels, &block_path, &res.join(CELLS_FILE))?;
    crate::results::summary::ensure_finite(&summary)?;
    let mut files = BTreeMap::new();
    write_frame(&res.join(SUMMARY_FILE), &mut summary_frame(&summary)?)?;
    let mut written = vec![CELLS_FILE, SUMMARY_FILE];
    if exp.config.fsrc.is_some() {
        write_frame(&res.join(FSRC_FILE), &mut fsrc_frame(&fsrc)?)?;
        written.push(FSRC_FILE);
    }
    for f in written {
        files.insert(f.to_string(), sha256_file(&res.join(f))?);
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
        merged_shards: None,
    };
    write_atomic(
        &res.join(MANIFEST_FILE),
        yaml_serde::to_string(&manifest)?.as_bytes(),
    )?;
    let done = SweepOutcome {
        out: out.clone(),
        cells,
        computed_chunks: computed,
        resumed_chunks: resumed,
        fsrc_runs: fsrc.len(),
        seconds: start.elapsed().as_secs_f64(),
        up_to_date: false,
    };
    Ok((done, staging))
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
            let reader = open_reader(&ds.dir)?;
            for (ri, rm) in exp.reward_models.iter().enumerate() {
                if !fsrc_wanted(exp, ri) {
                    continue;
                }
                let applied = applied_transform(ds, rm)?;
                let pools = all_pools(ds, &reader, rm, &applied)?;
                rows.extend(fsrc_rows(exp, ds, rm, &pools));
            }
        }
        Ok(rows)
    })
}
