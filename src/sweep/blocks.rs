//! The sweep's unit of work, of resumption and of sharding: one **block** of
//! prompts (the 32-prompt row groups ingest writes, [`crate::data::layout`])
//! of one (dataset, reward model), with every n and algorithm setting.
//!
//! **Why blocks.** Memory: a run holds a window of blocks' pools at a time,
//! read through the verifying [`DatasetReader`] (only the columns the config
//! uses), so peak memory does not grow with the number of prompts. Speed:
//! each pool's precomputation ([`crate::sweep::engine::run_prompt`]) serves
//! every n. Sharding: a shard reads only its own blocks.
//!
//! **Exactness.** A block computes each (prompt, n) with the same stream key
//! and engine call as any other split of the work, so its numbers do not
//! depend on which window, thread or shard computed it. A block file holds
//! the block's cells n-major (one [`Chunk`] per n, in `n_values` order). The
//! cells file is *assembled* from the block files ([`write_cells`](super::block_files::write_cells)) in the
//! sweep's fixed order — (dataset, reward model, n), prompts in dataset
//! order — and the summary is computed from those assembled chunks, so the
//! one-machine sweep and a merge of any number of shards write the same
//! bytes by construction: both call [`write_cells`](super::block_files::write_cells).
//!
//! **Whole-dataset quantities** never come from a window: transform bounds
//! from dataset.yaml's `transform_stats`; the reference-scripts
//! `fallback: dataset_base` credit from a pre-pass over every block (only
//! when configured — documented as the one case where a shard reads beyond
//! its slice); FSRC, which draws over all prompts, reads every block of its
//! reward model.

use anyhow::Result;
use rayon::prelude::*;
use std::path::Path;

use super::block_files::{block_chunk, read_block};
use super::engine::{Metrics, Plan, run_prompt};
use super::seed::StreamKey;
use super::transform::{self, AppliedTransform};
use crate::config::{Experiment, ResolvedDataset, RewardModel};
use crate::data::cols;
use crate::data::reader::{DatasetReader, Window};
use crate::error::input_error;
use crate::results::cells::Chunk;
use crate::results::manifest::TransformRecord;
use crate::select::pool::{Pool, Values};
use crate::select::reference_scripts::Fallback;

/// Prompts per window a worker thread should have (load balance: the last
/// prompt of a window waits for the slowest).
const PROMPTS_PER_THREAD: usize = 32;

/// Whether the config's FSRC section runs on reward model `ri`.
pub fn fsrc_wanted(exp: &Experiment, ri: usize) -> bool {
    exp.config.fsrc.as_ref().is_some_and(|f| {
        f.reward_models
            .as_ref()
            .is_none_or(|only| only.contains(&exp.reward_models[ri].name))
    })
}

/// The block file of (dataset `d`, reward model `r`, block `b`).
pub fn block_file_name(d: usize, r: usize, b: usize) -> String {
    format!("d{d}-r{r}-b{b}.parquet")
}

/// The columns of a dataset an experiment reads: `correct`, the config's
/// reward models, and `gen_seconds` when the dataset has it. The dataset's
/// content hash ([`DatasetReader::content_hash`]) is over exactly these.
pub fn dataset_columns(exp: &Experiment, ds: &ResolvedDataset) -> Vec<String> {
    let mut v = vec![cols::CORRECT.to_string()];
    v.extend(exp.reward_models.iter().map(|r| r.name.clone()));
    if ds.manifest.has_gen_seconds {
        v.push(cols::GEN_SECONDS.to_string());
    }
    v
}

/// The content SHA-256 of what `exp` reads from `reader`.
pub fn content_sha256(
    exp: &Experiment,
    ds: &ResolvedDataset,
    reader: &DatasetReader,
) -> Result<String> {
    let names = dataset_columns(exp, ds);
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    reader.content_hash(&refs)
}

/// `(dataset name, content SHA-256)` per dataset, as the config hashes take them.
pub type DatasetHashes = Vec<(String, String)>;

/// Open every dataset of `exp` (its index only: prompts.parquet and
/// blocks.parquet, verified) and compute each one's content hash, as the
/// config hashes take them: `(name, content SHA-256)`.
pub fn open_datasets(exp: &Experiment) -> Result<(Vec<DatasetReader>, DatasetHashes)> {
    let readers = exp
        .datasets
        .iter()
        .map(|d| crate::data::open::open_reader(&d.dir))
        .collect::<Result<Vec<_>>>()?;
    let hashes = exp
        .datasets
        .iter()
        .zip(&readers)
        .map(|(d, r)| Ok((d.name.clone(), content_sha256(exp, d, r)?)))
        .collect::<Result<Vec<_>>>()?;
    Ok((readers, hashes))
}

/// What one (dataset, reward model) run fixes before touching a block.
pub struct RewardModelRun {
    pub applied: AppliedTransform,
    pub plan: Plan,
}

impl RewardModelRun {
    /// The transform as results and shard manifests record it.
    pub fn transform_record(&self, rm: &RewardModel) -> TransformRecord {
        let a = &self.applied;
        TransformRecord {
            kind: a.kind.name().to_string(),
            lo: a.lo,
            hi: a.hi,
            r_max: a.r_max,
            delta_r: rm.privacy.delta_r,
            data_dependent: a.data_dependent,
        }
    }
}

fn what(ds: &ResolvedDataset, rm: &RewardModel) -> String {
    format!(
        "dataset `{}` ({}), reward model `{}`",
        ds.name,
        ds.dir.display(),
        rm.name
    )
}

/// The transform of `rm` on `ds`, its bounds from dataset.yaml's
/// whole-dataset statistics.
pub fn applied_transform(ds: &ResolvedDataset, rm: &RewardModel) -> Result<AppliedTransform> {
    if !ds.manifest.reward_models.contains(&rm.name) {
        return Err(input_error(format!(
            "{}: has no scores for reward model `{}`; re-run `privalign ingest` with its rewards",
            ds.dir.join(crate::data::prepared::SCORES_FILE).display(),
            rm.name
        )));
    }
    let stats = ds.manifest.transform_stats.get(&rm.name).ok_or_else(|| {
        input_error(format!(
            "{}: records no transform statistics for reward model `{}` (written by an older privalign); re-run `privalign ingest`",
            ds.dir.join(crate::data::prepared::DATASET_MANIFEST_FILE).display(),
            rm.name
        ))
    })?;
    transform::prepare(&rm.transform, stats, &what(ds, rm))
}

/// Fix the transform and build the run plan of (`ds`, `rm`). Reads every
/// block only when a reference-scripts convention needs the dataset-wide
/// base values.
pub fn prepare_reward_model(
    exp: &Experiment,
    ds: &ResolvedDataset,
    reader: &DatasetReader,
    rm: &RewardModel,
) -> Result<RewardModelRun> {
    let applied = applied_transform(ds, rm)?;
    let conv = crate::config::resolve::conventions(&exp.config.algorithms);
    let base = if conv.itp.fallback == Fallback::DatasetBase
        || conv.privitp.fallback == Fallback::DatasetBase
    {
        dataset_base(ds, reader, rm, &applied)?
    } else {
        Values::default()
    };
    let ecfg = exp.engine_config(rm, base);
    Ok(RewardModelRun {
        applied,
        plan: Plan::new(&ecfg),
    })
}

/// The base policy's values over the whole dataset
/// ([`crate::select::reference_scripts::dataset_base`]), accumulated block by
/// block in prompt order — the same operations in the same order as over
/// all pools at once, so the same bits.
fn dataset_base(
    ds: &ResolvedDataset,
    reader: &DatasetReader,
    rm: &RewardModel,
    applied: &AppliedTransform,
) -> Result<Values> {
    let total = reader.offsets.last().copied().unwrap_or(0);
    let mut v = Values::default();
    for b in 0..reader.blocks.len() {
        for p in window_pools(ds, reader, rm, applied, b..b + 1)? {
            v.add_scaled(&p.mean, p.len() as f64 / total.max(1) as f64);
        }
    }
    Ok(v)
}

/// The pools (transformed r̂, gold r*) of the prompts of `blocks`.
pub fn window_pools(
    ds: &ResolvedDataset,
    reader: &DatasetReader,
    rm: &RewardModel,
    applied: &AppliedTransform,
    blocks: std::ops::Range<usize>,
) -> Result<Vec<Pool>> {
    let w = reader
        .read_blocks(blocks, &[cols::CORRECT, rm.name.as_str()])
        .map_err(|e| crate::data::open::damaged_unless_input(&ds.dir, e))?;
    pools_of(ds, reader, rm, applied, &w)
}

fn pools_of(
    ds: &ResolvedDataset,
    reader: &DatasetReader,
    rm: &RewardModel,
    applied: &AppliedTransform,
    w: &Window,
) -> Result<Vec<Pool>> {
    let raw = w.column(&rm.name);
    let row0 = reader.offsets[w.prompts.start];
    let prompt_of = |i: usize| {
        let q = w.offsets.partition_point(|&o| o <= i) - 1;
        reader.prompt_ids[w.prompts.start + q].clone()
    };
    let proxy = applied.map(raw, row0, &what(ds, rm), prompt_of)?;
    let correct = w.column(cols::CORRECT);
    Ok((0..w.prompts.len())
        .into_par_iter()
        .map(|q| {
            let (a, b) = (w.offsets[q], w.offsets[q + 1]);
            let gold: Vec<f64> = correct[a..b].iter().map(|&c| f64::from(c)).collect();
            Pool::new(&proxy[a..b], &gold)
        })
        .collect())
}

/// Every pool of (`ds`, `rm`) in prompt order (FSRC draws over all prompts).
pub fn all_pools(
    ds: &ResolvedDataset,
    reader: &DatasetReader,
    rm: &RewardModel,
    applied: &AppliedTransform,
) -> Result<Vec<Pool>> {
    if reader.blocks.is_empty() {
        return Ok(Vec::new());
    }
    window_pools(ds, reader, rm, applied, 0..reader.blocks.len())
}

/// Blocks per window for `threads` workers.
pub fn window_blocks(threads: usize, reader: &DatasetReader) -> usize {
    let per_block = reader.blocks.first().map_or(1, |b| b.prompts.len().max(1));
    (threads * PROMPTS_PER_THREAD).div_ceil(per_block).max(1)
}

/// Which of `blocks` must be computed. Under `resume`, a block whose file
/// (`path_of(b)`) reads back as this config's block is kept — `kept(b)` is
/// told — and one whose file exists but does not read back is recomputed,
/// `unreadable(path, why)` told why. Shared by the sweep and a shard.
#[allow(clippy::too_many_arguments)]
pub fn blocks_to_compute(
    exp: &Experiment,
    ds: &ResolvedDataset,
    rm: &RewardModel,
    reader: &DatasetReader,
    blocks: impl Iterator<Item = usize>,
    path_of: &dyn Fn(usize) -> std::path::PathBuf,
    resume: bool,
    kept: &mut dyn FnMut(usize),
    unreadable: &mut dyn FnMut(&Path, &anyhow::Error),
) -> Vec<usize> {
    let mut todo = Vec::new();
    for b in blocks {
        let file = path_of(b);
        let keep = resume
            && file.exists()
            && match read_block(&file, exp, ds, rm, reader, b) {
                Ok(_) => true,
                Err(e) => {
                    unreadable(&file, &e);
                    false
                }
            };
        if keep {
            kept(b);
        } else {
            todo.push(b);
        }
    }
    todo
}

/// Compute the blocks `todo` (ascending) of (`ds`, `rm`) and hand each
/// block's chunks to `write`, in windows of consecutive blocks of
/// [`window_blocks`] — the one loop the sweep and a shard share. The next
/// window is read (and verified) while the current one computes, so the
/// reads cost no wall time on more than one thread. `done(k)` reports k
/// finished cells. Returns the seconds of the first read (the only one not
/// overlapped with computing) and of the whole loop.
#[allow(clippy::too_many_arguments)]
pub fn run_blocks(
    exp: &Experiment,
    ds: &ResolvedDataset,
    rm: &RewardModel,
    reader: &DatasetReader,
    run: &RewardModelRun,
    todo: &[usize],
    threads: usize,
    write: &(dyn Fn(usize, &[Chunk]) -> Result<()> + Sync),
    done: &(dyn Fn(u64) + Sync),
) -> Result<(f64, f64)> {
    let per_window = window_blocks(threads, reader);
    let mut windows: Vec<std::ops::Range<usize>> = Vec::new();
    let mut k = 0;
    while k < todo.len() {
        let mut e = k + 1;
        while e < todo.len() && e - k < per_window && todo[e] == todo[e - 1] + 1 {
            e += 1;
        }
        windows.push(todo[k]..todo[e - 1] + 1);
        k = e;
    }
    let read = |w: &std::ops::Range<usize>| window_pools(ds, reader, rm, &run.applied, w.clone());
    let start = std::time::Instant::now();
    let mut next: Option<Result<Vec<Pool>>> = windows.first().map(read);
    let t_read = start.elapsed().as_secs_f64();
    for (i, w) in windows.iter().enumerate() {
        let pools = next.take().expect("a window read ahead")?;
        let compute = || -> Result<()> {
            let chunks = compute_blocks(exp, ds, rm, reader, run, w.clone(), &pools, done);
            for (b, c) in w.clone().zip(&chunks) {
                write(b, c)?;
            }
            Ok(())
        };
        let (computed, ahead) = rayon::join(compute, || windows.get(i + 1).map(read));
        computed?;
        next = ahead;
    }
    Ok((t_read, start.elapsed().as_secs_f64()))
}

/// Compute the blocks `blocks` of (`ds`, `rm`) from their pools (in prompt
/// order), in parallel over prompts: per block, one chunk per n.
/// `done(k)` is called as each prompt finishes, with its cell count.
#[allow(clippy::too_many_arguments)]
pub fn compute_blocks(
    exp: &Experiment,
    ds: &ResolvedDataset,
    rm: &RewardModel,
    reader: &DatasetReader,
    run: &RewardModelRun,
    blocks: std::ops::Range<usize>,
    pools: &[Pool],
    done: &(dyn Fn(u64) + Sync),
) -> Vec<Vec<Chunk>> {
    let first = reader.blocks[blocks.start].prompts.start;
    let cells = (exp.n_values.len() * exp.algorithms.len()) as u64;
    let per_prompt: Vec<Vec<Vec<Metrics>>> = pools
        .par_iter()
        .enumerate()
        .map(|(q, pool)| {
            let pid = &reader.prompt_ids[first + q];
            let m = run_prompt(&run.plan, pool, &exp.n_values, |n| StreamKey {
                seed: exp.config.seed,
                dataset: &ds.name,
                reward_model: &rm.name,
                prompt_id: pid,
                n,
            });
            done(cells);
            m
        })
        .collect();
    blocks
        .map(|b| {
            let ps = reader.blocks[b].prompts.clone();
            let (q0, q1) = (ps.start - first, ps.end - first);
            exp.n_values
                .iter()
                .enumerate()
                .map(|(ni, &n)| {
                    let base = pools[q0..q1].iter().map(|p| p.mean.gold).collect();
                    let mut c = block_chunk(exp, ds, rm, reader, b, n, base);
                    c.metrics = per_prompt[q0..q1].iter().map(|m| m[ni].clone()).collect();
                    c
                })
                .collect()
        })
        .collect()
}

/// Mean generation time per response over the whole dataset (the sum in row
/// order, block by block), or `None` without a `gen_seconds` column.
pub fn gen_seconds_mean(ds: &ResolvedDataset, reader: &DatasetReader) -> Result<Option<f64>> {
    if !ds.manifest.has_gen_seconds || reader.blocks.is_empty() {
        return Ok(None);
    }
    let mut sum = 0.0f64;
    let mut count = 0usize;
    // A few blocks at a time: memory bounded like the windows of the sweep.
    let step = 4;
    let mut b = 0;
    while b < reader.blocks.len() {
        let e = (b + step).min(reader.blocks.len());
        let w = reader
            .read_blocks(b..e, &[cols::GEN_SECONDS])
            .map_err(|e| crate::data::open::damaged_unless_input(&ds.dir, e))?;
        let g = w.column(cols::GEN_SECONDS);
        for &x in g {
            sum += f64::from(x);
        }
        count += g.len();
        b = e;
    }
    Ok(Some(sum / count.max(1) as f64))
}
