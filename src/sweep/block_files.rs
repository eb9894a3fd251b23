//! Block files and the cells file assembled from them: a block's chunks are
//! written to a scratch parquet file as soon as its window is computed (the
//! unit of resumption and of sharding, [`super::blocks`]), read back with
//! every key checked, and assembled in the sweep's fixed order into
//! `cells.parquet` by [`write_cells`] — the one writer the sweep and a merge
//! of shards share, so both write the same bytes.

use anyhow::{Context, Result};
use polars::prelude::DataFrame;
use rayon::prelude::*;
use std::path::Path;

use crate::config::{Experiment, ResolvedDataset, RewardModel};
use crate::data::reader::DatasetReader;
use crate::error::input_error;
use crate::results::cells::Chunk;
use crate::results::manifest::TransformRecord;
use crate::results::parquet_io::{f64_column, read_frame, write_frames, write_frames_scratch};
use crate::results::summary::{SummaryRow, summarise};

/// Write one block's chunks (n-major, one row group), atomically.
pub fn write_block(path: &Path, chunks: &[Chunk]) -> Result<()> {
    // One row group: the writer's per-column work (a cardinality estimate) once, not per n.
    let mut frames = chunks.iter().map(Chunk::to_frame);
    let mut df = frames.next().context("a block has at least one n")??;
    frames.try_for_each(|f| df.vstack_mut(&f?).map(drop).map_err(anyhow::Error::from))?;
    df.rechunk_mut();
    write_frames_scratch(path, &df.schema().as_ref().clone(), std::iter::once(Ok(df)))
}

/// Read back block `b`'s file, checking every key against the config and
/// the dataset's index (prompts, algorithms, n); base accuracies come from
/// the file (no scores are read).
pub fn read_block(
    path: &Path,
    exp: &Experiment,
    ds: &ResolvedDataset,
    rm: &RewardModel,
    reader: &DatasetReader,
    b: usize,
) -> Result<Vec<Chunk>> {
    let df = read_frame(path)?;
    let p = reader.blocks[b].prompts.len();
    let rows = p * exp.algorithms.len();
    if df.height() != rows * exp.n_values.len() {
        anyhow::bail!(
            "has {} rows, expected {} (block {b}: {p} prompts × {} algorithm settings × {} n)",
            df.height(),
            rows * exp.n_values.len(),
            exp.algorithms.len(),
            exp.n_values.len()
        );
    }
    exp.n_values
        .iter()
        .enumerate()
        .map(|(ni, &n)| {
            let part = df.slice((ni * rows) as i64, rows);
            let base: Vec<f64> = f64_column(&part, crate::results::cells::col::BASE_ACCURACY)?
                .iter()
                .take(p)
                .map(|b| b.unwrap_or(f64::NAN))
                .collect();
            let want = block_chunk(exp, ds, rm, reader, b, n, base);
            Chunk::from_frame(&part, &want).with_context(|| format!("n = {n}"))
        })
        .collect()
}

/// Per dataset, per reward model: the transform as applied (what results
/// and shard manifests record).
pub type Transforms =
    std::collections::BTreeMap<String, std::collections::BTreeMap<String, TransformRecord>>;

/// Write `cells.parquet` at `out` from the block files of every (dataset,
/// reward model), found by `block_path(d, r, b)`, in the sweep's fixed order,
/// and return the summary rows computed from the same chunks in the same
/// order, with the cell count; the summary labels each reward model with
/// its recorded transform (`transforms`). Holds one (dataset, reward
/// model)'s chunks at a time. Shared by `sweep` and `merge`, so both write
/// the same bytes.
pub fn write_cells(
    exp: &Experiment,
    readers: &[DatasetReader],
    transforms: &Transforms,
    block_path: &(dyn Fn(usize, usize, usize) -> std::path::PathBuf + Sync),
    out: &Path,
) -> Result<(Vec<SummaryRow>, usize)> {
    let mut summary = Vec::new();
    let mut cells = 0usize;
    let mut groups =
        (0..exp.datasets.len()).flat_map(|d| (0..exp.reward_models.len()).map(move |r| (d, r)));
    // One (dataset, reward model) assembled at a time, its chunks yielded in n order.
    let mut pending: std::collections::VecDeque<(usize, Chunk, &TransformRecord)> =
        Default::default();
    let mut next_chunk = move || -> Option<Result<(usize, Chunk, &TransformRecord)>> {
        loop {
            if let Some(x) = pending.pop_front() {
                return Some(Ok(x));
            }
            let (d, r) = groups.next()?;
            let (ds, rm) = (&exp.datasets[d].name, &exp.reward_models[r].name);
            let Some(t) = transforms.get(ds).and_then(|m| m.get(rm)) else {
                return Some(Err(anyhow::anyhow!(
                    "no transform recorded for ({ds}, {rm})"
                )));
            };
            match assemble_group(exp, readers, block_path, d, r) {
                Ok(chunks) => pending.extend(chunks.into_iter().map(|c| (r, c, t))),
                Err(e) => return Some(Err(e)),
            }
        }
    };
    let first = next_chunk().context("the config has no cells to write")??;
    let schema = first.1.to_frame()?.schema().as_ref().clone();
    let mut handle = |(r, c, t): (usize, Chunk, &TransformRecord)| -> Result<DataFrame> {
        summary.extend(summarise(
            &c,
            &exp.reward_models[r].privacy,
            &t.kind,
            t.data_dependent,
        ));
        cells += c.rows();
        c.to_frame()
    };
    let head = handle(first);
    write_frames(
        out,
        &schema,
        std::iter::once(head)
            .chain(std::iter::from_fn(next_chunk).map(|x| x.and_then(&mut handle))),
    )?;
    Ok((summary, cells))
}

/// The chunks (one per n, every prompt in order) of (dataset `d`, reward
/// model `r`), assembled from its block files.
fn assemble_group(
    exp: &Experiment,
    readers: &[DatasetReader],
    block_path: &(dyn Fn(usize, usize, usize) -> std::path::PathBuf + Sync),
    d: usize,
    r: usize,
) -> Result<Vec<Chunk>> {
    let (ds, rm, reader) = (&exp.datasets[d], &exp.reward_models[r], &readers[d]);
    let mut out: Vec<Chunk> = exp
        .n_values
        .iter()
        .map(|&n| Chunk {
            dataset: ds.name.clone(),
            reward_model: rm.name.clone(),
            n,
            replicates: exp.config.replicates,
            prompt_ids: reader.prompt_ids.clone(),
            base_accuracy: Vec::with_capacity(reader.prompts()),
            algorithms: exp.algorithms.clone(),
            metrics: Vec::with_capacity(reader.prompts()),
        })
        .collect();
    // The block files are read a few at a time in parallel (the sweep's
    // serial tail), each few appended in block order before the next is
    // read: memory is the assembled chunks plus one block per thread (all
    // blocks read at once had doubled a large sweep's peak).
    let read = |b: usize| {
        let path = block_path(d, r, b);
        read_block(&path, exp, ds, rm, reader, b).map_err(|e| {
            input_error(format!(
                "{}: is not the block this config expects ({e:#}); rerun the sweep or shard that wrote it",
                path.display()
            ))
        })
    };
    let (blocks, per_round) = (reader.blocks.len(), rayon::current_num_threads().max(1));
    for first in (0..blocks).step_by(per_round) {
        let read_now: Vec<Result<Vec<Chunk>>> = (first..(first + per_round).min(blocks))
            .into_par_iter()
            .map(read)
            .collect();
        for chunks in read_now {
            for (o, c) in out.iter_mut().zip(chunks?) {
                o.base_accuracy.extend(c.base_accuracy);
                o.metrics.extend(c.metrics);
            }
        }
    }
    Ok(out)
}

/// An empty chunk of block `b` at `n` (keys only).
pub(super) fn block_chunk(
    exp: &Experiment,
    ds: &ResolvedDataset,
    rm: &RewardModel,
    reader: &DatasetReader,
    b: usize,
    n: usize,
    base_accuracy: Vec<f64>,
) -> Chunk {
    Chunk {
        dataset: ds.name.clone(),
        reward_model: rm.name.clone(),
        n,
        replicates: exp.config.replicates,
        prompt_ids: reader.prompt_ids[reader.blocks[b].prompts.clone()].to_vec(),
        base_accuracy,
        algorithms: exp.algorithms.clone(),
        metrics: Vec::new(),
    }
}
