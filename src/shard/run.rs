//! `privalign sweep CONFIG --shard K/N --out DIR`: run shard K's units
//! ([`super::assign`]) and write them, with `shard.yaml`, into DIR.
//!
//! A unit is computed exactly as the one-machine sweep computes it (same
//! pools, same engine call, same random streams, [`crate::sweep::blocks`]),
//! so its file is the sweep's block file byte for byte. The shard reads only
//! its own blocks' rows (of the columns it needs) through the windowed
//! reader; `shard.yaml` records how many rows it decoded (`rows_read`). `shard.yaml` is written first with
//! `finished: false` and again with `finished: true` after the last unit
//! file is on disk; every unit file is written atomically. `--resume`
//! reuses the unit files of an interrupted run of the same shard (same
//! config hash, same K/N) after reading each back against its expected keys.
//!
//! What a shard does not do: the summary and the results manifest (merge
//! computes them from all units in one fixed order), and the cells file.

use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::time::Instant;

use super::assign::shard_range;
use super::manifest::{
    SHARD_FORMAT, SHARD_MANIFEST, ShardDataset, ShardManifest, read_shard_manifest,
};
use super::spec::ShardSpec;
use super::units::{Unit, UnitKind, units};
use crate::bail_input;
use crate::config::Experiment;
use crate::fsutil::lock::ResultsLock;
use crate::fsutil::write_atomic;
use crate::results::fsrc::fsrc_frame;
use crate::results::parquet_io::write_frame;
use crate::sweep::block_files::write_block;
use crate::sweep::blocks::{
    all_pools, block_file_name, blocks_to_compute, open_datasets, prepare_reward_model, run_blocks,
};
use crate::sweep::fsrc::fsrc_rows;
use crate::sweep::run::{config_hash, host};

/// Options of one shard run.
#[derive(Clone, Debug)]
pub struct ShardOptions {
    pub out: PathBuf,
    pub spec: ShardSpec,
    pub threads: Option<usize>,
    pub resume: bool,
}

/// What a shard run did.
#[derive(Clone, Debug)]
pub struct ShardOutcome {
    pub out: PathBuf,
    pub units: usize,
    pub computed: usize,
    pub resumed: usize,
    pub seconds: f64,
    /// `--resume` found the shard already finished: nothing ran.
    pub up_to_date: bool,
}

/// Run shard `o.spec` of `exp` into `o.out`.
pub fn sweep_shard(exp: &Experiment, o: &ShardOptions) -> Result<ShardOutcome> {
    let threads = o.threads.unwrap_or_else(rayon::current_num_threads);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("starting the worker threads")?;
    pool.install(|| run_in_pool(exp, o, threads))
}

/// Check what is already in `out` and decide: `Some(m)` = the finished
/// manifest of this very shard (nothing to do under `--resume`).
fn prepare_dir(o: &ShardOptions, hash: &str) -> Result<Option<ShardManifest>> {
    let out = &o.out;
    match read_shard_manifest(out) {
        Ok(Some(m)) => {
            if m.shard != o.spec.index || m.shards != o.spec.count {
                bail_input!(
                    "{}: holds shard {}/{}, not {}; give each shard its own --out",
                    out.display(),
                    m.shard,
                    m.shards,
                    o.spec
                );
            }
            if o.resume && m.config_hash != hash {
                bail_input!(
                    "{}: this shard was started with another config or data (config hash {} ≠ {}); rerun without --resume to start it over",
                    out.display(),
                    m.config_hash,
                    hash
                );
            }
            Ok((o.resume && m.finished).then_some(m))
        }
        Ok(None) | Err(_) => {
            let foreign = fs::read_dir(out)
                .with_context(|| format!("reading {}", out.display()))?
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .find(|n| !(n.ends_with(".parquet") || n.starts_with('.') || n == SHARD_MANIFEST));
            if let Some(f) = foreign {
                bail_input!(
                    "{}: is not a shard directory (it holds {f:?}); choose an empty or new --out for the shard",
                    out.display()
                );
            }
            Ok(None)
        }
    }
}

fn run_in_pool(exp: &Experiment, o: &ShardOptions, threads: usize) -> Result<ShardOutcome> {
    let start = Instant::now();
    // Opening reads only each dataset's index (prompts.parquet, blocks.parquet).
    let (readers, ds_hashes) = open_datasets(exp)?;
    let hash = config_hash(&exp.config, &ds_hashes)?;
    let all = units(exp);
    let mine: Vec<Unit> = all[shard_range(all.len(), o.spec.index, o.spec.count)].to_vec();
    if o.out.exists() && !o.out.is_dir() {
        bail_input!(
            "{}: exists and is not a directory; choose another --out for the shard",
            o.out.display()
        );
    }
    fs::create_dir_all(&o.out).with_context(|| format!("creating {}", o.out.display()))?;
    // One writer per shard directory; a requeued Slurm task takes over the
    // lock its earlier incarnation left (crate::fsutil::lock).
    let _lock = ResultsLock::acquire(&o.out, "sweep --shard")?;
    if let Some(m) = prepare_dir(o, &hash)? {
        return Ok(ShardOutcome {
            out: o.out.clone(),
            units: m.units.len(),
            computed: 0,
            resumed: 0,
            seconds: start.elapsed().as_secs_f64(),
            up_to_date: true,
        });
    }
    if mine.is_empty() {
        eprintln!(
            "warning: shard {} has no units: this sweep has only {} units, so at most {} shards do work",
            o.spec,
            all.len(),
            all.len()
        );
    }
    let mut manifest = ShardManifest {
        format: SHARD_FORMAT.into(),
        experiment: exp.name.clone(),
        privalign_version: env!("CARGO_PKG_VERSION").into(),
        config_hash: hash,
        config_path: exp.config_path.display().to_string(),
        config: exp.config.clone(),
        datasets: ds_hashes
            .iter()
            .map(|(name, sha)| ShardDataset {
                name: name.clone(),
                content_sha256: sha.clone(),
            })
            .collect(),
        shard: o.spec.index,
        shards: o.spec.count,
        units: mine.iter().map(|u| u.file_name()).collect(),
        fsrc: mine.iter().any(|u| u.kind == UnitKind::Fsrc),
        finished: false,
        transforms: BTreeMap::new(),
        rows_read: 0,
        computed_units: 0,
        resumed_units: 0,
        threads,
        host: host(),
        slurm_job_id: std::env::var("SLURM_JOB_ID").ok().filter(|s| !s.is_empty()),
        seconds: 0.0,
    };
    let save = |m: &ShardManifest| -> Result<()> {
        write_atomic(
            &o.out.join(SHARD_MANIFEST),
            yaml_serde::to_string(m)?.as_bytes(),
        )
    };
    save(&manifest)?;

    // Units grouped by (dataset, reward model) (the list is ordered so).
    let mut i = 0;
    while i < mine.len() {
        let (di, ri) = (mine[i].dataset, mine[i].reward_model);
        let (ds, rm, reader) = (&exp.datasets[di], &exp.reward_models[ri], &readers[di]);
        let mut j = i;
        while j < mine.len() && mine[j].dataset == di && mine[j].reward_model == ri {
            j += 1;
        }
        eprintln!(
            "shard {}: dataset `{}`, reward model `{}`: {} units",
            o.spec,
            ds.name,
            rm.name,
            j - i
        );
        let run = prepare_reward_model(exp, ds, reader, rm)?;
        let applied = &run.applied;
        manifest
            .transforms
            .entry(ds.name.clone())
            .or_default()
            .insert(rm.name.clone(), run.transform_record(rm));
        let cells = mine[i..j].iter().filter_map(|u| match u.kind {
            UnitKind::Cells { block } => Some(block),
            UnitKind::Fsrc => None,
        });
        let todo = blocks_to_compute(
            exp,
            ds,
            rm,
            reader,
            cells,
            &|b| o.out.join(block_file_name(di, ri, b)),
            o.resume,
            &mut |_| manifest.resumed_units += 1,
            &mut |_, _| {},
        );
        let out = &o.out;
        let write = |b: usize, c: &[crate::results::cells::Chunk]| {
            write_block(&out.join(block_file_name(di, ri, b)), c)
        };
        run_blocks(exp, ds, rm, reader, &run, &todo, threads, &write, &|_| {})?;
        manifest.computed_units += todo.len();
        if mine[i..j].iter().any(|u| u.kind == UnitKind::Fsrc) {
            // Always recomputed: FSRC is cheap next to the cells and its
            // file holds no keys to check a reuse against.
            let pools = all_pools(ds, reader, rm, applied)?;
            let rows = fsrc_rows(exp, ds, rm, &pools);
            let file = o.out.join(
                Unit {
                    dataset: di,
                    reward_model: ri,
                    kind: UnitKind::Fsrc,
                }
                .file_name(),
            );
            write_frame(&file, &mut fsrc_frame(&rows)?)?;
            manifest.computed_units += 1;
        }
        i = j;
    }
    manifest.rows_read = readers.iter().map(|r| r.rows_read()).sum();
    manifest.finished = true;
    manifest.seconds = start.elapsed().as_secs_f64();
    save(&manifest)?;
    Ok(ShardOutcome {
        out: o.out.clone(),
        units: mine.len(),
        computed: manifest.computed_units,
        resumed: manifest.resumed_units,
        seconds: manifest.seconds,
        up_to_date: false,
    })
}
