//! `privalign sweep CONFIG --shard K/N --out DIR`: run shard K's units
//! ([`super::assign`]) and write them, with `shard.yaml`, into DIR.
//!
//! A unit is computed exactly as the one-machine sweep computes it (same
//! pools, same engine call, same random streams), so its file is the
//! sweep's chunk file byte for byte. `shard.yaml` is written first with
//! `finished: false` and again with `finished: true` after the last unit
//! file is on disk; every unit file is written atomically. `--resume`
//! reuses the unit files of an interrupted run of the same shard (same
//! config hash, same K/N) after reading each back against its expected keys.
//!
//! What a shard does not do: the summary and the results manifest (merge
//! computes them from all units in one fixed order), and the cells file.

use anyhow::{Context, Result};
use rayon::prelude::*;
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
use crate::data::open::{load_prepared, scores_sha256};
use crate::fsutil::lock::ResultsLock;
use crate::fsutil::write_atomic;
use crate::results::cells::Chunk;
use crate::results::fsrc::fsrc_frame;
use crate::results::manifest::TransformRecord;
use crate::results::parquet_io::{read_frame, write_frame};
use crate::sweep::engine::{Plan, run_item_with};
use crate::sweep::run::{build_pools, config_hash, fsrc_rows, host};
use crate::sweep::seed::StreamKey;

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
    let mut ds_hashes = Vec::new();
    for d in &exp.datasets {
        ds_hashes.push((d.name.clone(), scores_sha256(&d.dir)?));
    }
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
                scores_sha256: sha.clone(),
            })
            .collect(),
        shard: o.spec.index,
        shards: o.spec.count,
        units: mine.iter().map(|u| u.file_name(exp)).collect(),
        fsrc: mine.iter().any(|u| u.kind == UnitKind::Fsrc),
        finished: false,
        transforms: BTreeMap::new(),
        gen_seconds_mean: BTreeMap::new(),
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

    // Units grouped by dataset, then reward model (the list is ordered so).
    let mut i = 0;
    while i < mine.len() {
        let di = mine[i].dataset;
        let ds = &exp.datasets[di];
        eprintln!("shard {}: loading dataset `{}`", o.spec, ds.name);
        let data = load_prepared(&ds.dir)?;
        manifest.gen_seconds_mean.insert(
            ds.name.clone(),
            data.gen_seconds
                .as_ref()
                .map(|g| g.iter().map(|&x| f64::from(x)).sum::<f64>() / g.len().max(1) as f64),
        );
        while i < mine.len() && mine[i].dataset == di {
            let ri = mine[i].reward_model;
            let rm = &exp.reward_models[ri];
            let (pools, applied) = build_pools(&data, ds, rm)?;
            manifest
                .transforms
                .entry(ds.name.clone())
                .or_default()
                .insert(
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
            let ecfg = exp.engine_config(rm, &pools);
            // Built once per reward model: G tables, nodes, stream ids.
            let plan = Plan::new(&ecfg);
            while i < mine.len() && mine[i].dataset == di && mine[i].reward_model == ri {
                let unit = mine[i];
                let file = o.out.join(unit.file_name(exp));
                match unit.kind {
                    UnitKind::Cells { n_index } => {
                        let n = exp.n_values[n_index];
                        let mut chunk = Chunk {
                            dataset: ds.name.clone(),
                            reward_model: rm.name.clone(),
                            n,
                            replicates: exp.config.replicates,
                            prompt_ids: data.prompt_ids.clone(),
                            base_accuracy: pools.iter().map(|p| p.mean.gold).collect(),
                            algorithms: exp.algorithms.clone(),
                            metrics: Vec::new(),
                        };
                        let reusable = o.resume
                            && file.exists()
                            && read_frame(&file)
                                .and_then(|df| Chunk::from_frame(&df, &chunk))
                                .is_ok();
                        if reusable {
                            manifest.resumed_units += 1;
                        } else {
                            chunk.metrics = pools
                                .par_iter()
                                .zip(&data.prompt_ids)
                                .map(|(pool, pid)| {
                                    let key = StreamKey {
                                        seed: exp.config.seed,
                                        dataset: &ds.name,
                                        reward_model: &rm.name,
                                        prompt_id: pid,
                                        n,
                                    };
                                    run_item_with(&plan, pool, n, &key)
                                })
                                .collect();
                            write_frame(&file, &mut chunk.to_frame()?)?;
                            manifest.computed_units += 1;
                        }
                    }
                    UnitKind::Fsrc => {
                        // Always recomputed: FSRC is cheap next to the cells
                        // and its file holds no keys to check a reuse against.
                        let rows = fsrc_rows(exp, ds, rm, &pools);
                        write_frame(&file, &mut fsrc_frame(&rows)?)?;
                        manifest.computed_units += 1;
                    }
                }
                i += 1;
            }
        }
    }
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
