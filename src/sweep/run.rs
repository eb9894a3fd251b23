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
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use super::block_files::{write_block, write_cells};
use super::blocks::{
    all_pools, block_file_name, blocks_to_compute, fsrc_wanted, gen_seconds_mean, open_datasets,
    prepare_reward_model, run_blocks,
};
pub use super::fsrc::fsrc_only;
use super::fsrc::fsrc_rows;
use super::progress::Reporter;
pub(crate) use super::provenance::{git_commit, host};
use super::staging::complete_results;
use crate::config::Experiment;
use crate::fsutil::{sha256_file, write_atomic};
use crate::results::cells::CELLS_FILE;
use crate::results::fsrc::{FSRC_FILE, FsrcRow, fsrc_frame};
use crate::results::manifest::{DatasetRecord, MANIFEST_FILE, ResultsManifest, TransformRecord};
use crate::results::parquet_io::write_frame;
use crate::results::summary::{SUMMARY_FILE, summary_frame};

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
    let (readers, ds_hashes) = open_datasets(exp)?;
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
        // The mean generation time is one pass over a column: a task of its
        // own, overlapping the reward models' work.
        let mut gen_mean: Option<Result<Option<f64>>> = None;
        let done: Result<()> = rayon::scope(|scope| {
            scope.spawn(|_| gen_mean = Some(gen_seconds_mean(ds, reader)));
            for (ri, rm) in exp.reward_models.iter().enumerate() {
                let t = Instant::now();
                let run = prepare_reward_model(exp, ds, reader, rm)?;
                t_load += t.elapsed().as_secs_f64();
                let applied = &run.applied;
                transforms
                    .entry(ds.name.clone())
                    .or_default()
                    .insert(rm.name.clone(), run.transform_record(rm));
                rep.stage(format!(
                    "dataset `{}`, reward model `{}`: {} n × {} prompts × {} algorithm settings",
                    ds.name,
                    rm.name,
                    exp.n_values.len(),
                    reader.prompts(),
                    algs
                ));
                // Blocks already on disk from an interrupted run of this config.
                let todo = blocks_to_compute(
                    exp,
                    ds,
                    rm,
                    reader,
                    0..reader.blocks.len(),
                    &|b| block_path(di, ri, b),
                    opts.resume,
                    &mut |b| {
                        resumed += 1;
                        rep.bar.inc(
                            reader.blocks[b].prompts.len() as u64
                                * exp.n_values.len() as u64
                                * algs,
                        );
                    },
                    &mut |file, e| rep.stage(format!("recomputing {} ({e:#})", file.display())),
                );
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
            Ok(())
        });
        done?;
        gen_seconds.push(gen_mean.expect("the scope ran the task")?);
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
    let (summary, cells) = write_cells(
        exp,
        &readers,
        &transforms,
        &block_path,
        &res.join(CELLS_FILE),
    )?;
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
            .map(|((d, (_, sha)), g)| DatasetRecord::of(d, sha, *g))
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
        reports: None,
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
