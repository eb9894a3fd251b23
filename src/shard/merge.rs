//! `privalign merge DIR... --out RESULTS`: N finished shard directories →
//! the results directory a one-machine `privalign sweep` writes.
//!
//! **Exact.** The cells file and the summary are written from the unit
//! (block) files by the sweep's own [`write_cells`], which assembles them in
//! the sweep's fixed order — the summary from the assembled cells, never by
//! combining per-shard summaries, whose floating-point sums would depend on
//! N. FSRC rows are the FSRC units' rows
//! in unit order. So cells, summary and FSRC files are byte-identical to the
//! one-machine run's, and the manifest equals it except for the fields that
//! describe the run: `threads`, `host`, `stages`, `resumed_chunks`,
//! `computed_chunks`, `git_commit` and `merged_shards`.
//!
//! **Never partial.** Every check ([`super::verify`], the unit lists, the
//! unit files) runs before anything is written; the results are built in a
//! hidden staging sibling of RESULTS and renamed into place whole. An
//! existing RESULTS is never replaced: merge says "up to date" when it holds
//! these very results (so a requeued merge job succeeds), and refuses
//! otherwise.
//!
//! Merge reads no scores: transforms come from the shard manifests, prompt
//! ids and counts from each dataset's verified index, whose content hash
//! must equal the one the shards computed from; the one column it reads is
//! `gen_seconds` (for the mean generation time, summed as the sweep sums it).

use anyhow::Result;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::assign::shard_range;
use super::units::{UnitKind, units};
use super::verify::verify;
use crate::bail_input;
use crate::config::Experiment;
use crate::data::open::open_reader;
use crate::fsutil::{StagedDir, sha256_file, write_atomic};
use crate::results::cells::CELLS_FILE;
use crate::results::fsrc::{FSRC_FILE, fsrc_frame, read_fsrc};
use crate::results::manifest::{DatasetRecord, MANIFEST_FILE, ResultsManifest, TransformRecord};
use crate::results::parquet_io::write_frame;
use crate::results::summary::{SUMMARY_FILE, summary_frame};
use crate::sweep::block_files::write_cells;
use crate::sweep::blocks::{content_sha256, gen_seconds_mean};
use crate::sweep::run::{git_commit, host};

/// What a merge did.
#[derive(Clone, Debug)]
pub struct MergeOutcome {
    pub out: PathBuf,
    pub shards: usize,
    pub cells: usize,
    pub seconds: f64,
    /// RESULTS already held these results: nothing was written.
    pub up_to_date: bool,
}

/// Merge the shard directories `dirs` into `out`.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<MergeOutcome> {
    let start = Instant::now();
    let set = verify(dirs)?;
    let n = set.shards.len();
    let m0 = &set.shards[0].1;
    let exp = Experiment::resolve(m0.config.clone(), Path::new(&m0.config_path))
        .map_err(|e| e.context(format!("{} (the shards' config)", m0.config_path)))?;

    // Each shard holds exactly the units the split assigns it, all on disk.
    let all = units(&exp);
    let mut files = Vec::with_capacity(all.len());
    for (k, (dir, m)) in set.shards.iter().enumerate() {
        let range = shard_range(all.len(), k, n);
        let want: Vec<String> = all[range.clone()].iter().map(|u| u.file_name()).collect();
        if m.units != want {
            bail_input!(
                "{}: lists units [{}] but shard {k}/{n} of this config owns [{}]; the shard is damaged — rerun it",
                dir.display(),
                m.units.join(", "),
                want.join(", ")
            );
        }
        for (u, name) in all[range].iter().zip(&want) {
            let f = dir.join(name);
            if !f.is_file() {
                bail_input!(
                    "{}: unit file {name} is missing although shard.yaml lists it; rerun the shard (`privalign sweep … --shard {k}/{n} --out {} --resume`)",
                    dir.display(),
                    dir.display()
                );
            }
            files.push((*u, f));
        }
    }

    // Transforms, from the shards that computed them.
    let mut transforms: BTreeMap<String, BTreeMap<String, TransformRecord>> = BTreeMap::new();
    for (dir, m) in &set.shards {
        for (d, per_rm) in &m.transforms {
            for (r, t) in per_rm {
                let slot = transforms.entry(d.clone()).or_default();
                match slot.get(r) {
                    Some(old) if format!("{old:?}") != format!("{t:?}") => bail_input!(
                        "{}: applied transform {t:?} to ({d}, {r}) but another shard applied {old:?}; rerun the shards with one privalign version",
                        dir.display()
                    ),
                    _ => {
                        slot.insert(r.clone(), t.clone());
                    }
                }
            }
        }
    }
    // The datasets' indexes (no scores), checked against the hashes the
    // shards computed from.
    let readers = exp
        .datasets
        .iter()
        .map(|d| open_reader(&d.dir))
        .collect::<Result<Vec<_>>>()?;
    for ((d, r), rec) in exp.datasets.iter().zip(&readers).zip(&m0.datasets) {
        let now = content_sha256(&exp, d, r)?;
        if now != rec.content_sha256 {
            bail_input!(
                "{}: its content changed since the shards ran (hash {} ≠ {}); rerun the shards",
                d.dir.display(),
                now,
                rec.content_sha256
            );
        }
    }

    if out.exists() {
        if crate::sweep::staging::complete_results(out, &m0.config_hash) {
            return Ok(MergeOutcome {
                out: out.to_path_buf(),
                shards: n,
                cells: 0,
                seconds: start.elapsed().as_secs_f64(),
                up_to_date: true,
            });
        }
        bail_input!(
            "{}: already exists and does not hold these results; choose another --out (merge never replaces a directory)",
            out.display()
        );
    }
    let stage = StagedDir::new(out, false)?;
    let dir = stage.path();

    let unit_path: BTreeMap<(usize, usize, usize), PathBuf> = files
        .iter()
        .filter_map(|(u, f)| match u.kind {
            UnitKind::Cells { block } => Some(((u.dataset, u.reward_model, block), f.clone())),
            UnitKind::Fsrc => None,
        })
        .collect();
    let block_path = |d: usize, r: usize, b: usize| unit_path[&(d, r, b)].clone();
    let (summary, cells) = write_cells(
        &exp,
        &readers,
        &transforms,
        &block_path,
        &dir.join(CELLS_FILE),
    )?;
    let mut gen_mean = Vec::new();
    for (d, r) in exp.datasets.iter().zip(&readers) {
        gen_mean.push(gen_seconds_mean(d, r)?);
    }
    write_frame(&dir.join(SUMMARY_FILE), &mut summary_frame(&summary)?)?;
    let mut written = vec![CELLS_FILE, SUMMARY_FILE];
    if exp.config.fsrc.is_some() {
        let mut rows = Vec::new();
        for (u, f) in &files {
            if u.kind == UnitKind::Fsrc {
                rows.extend(read_fsrc(f)?);
            }
        }
        write_frame(&dir.join(FSRC_FILE), &mut fsrc_frame(&rows)?)?;
        written.push(FSRC_FILE);
    }
    let mut hashes = BTreeMap::new();
    for f in written {
        hashes.insert(f.to_string(), sha256_file(&dir.join(f))?);
    }
    let mut stages = BTreeMap::new();
    stages.insert(
        "shards_total".to_string(),
        set.shards.iter().map(|(_, m)| m.seconds).sum::<f64>(),
    );
    stages.insert("merge".to_string(), start.elapsed().as_secs_f64());
    let manifest = ResultsManifest {
        experiment: exp.name.clone(),
        privalign_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: git_commit(),
        config_path: m0.config_path.clone(),
        config_hash: m0.config_hash.clone(),
        config: m0.config.clone(),
        n_values: exp.n_values.clone(),
        datasets: exp
            .datasets
            .iter()
            .zip(&m0.datasets)
            .zip(&gen_mean)
            .map(|((d, h), g)| DatasetRecord::of(d, &h.content_sha256, *g))
            .collect(),
        transforms,
        seed: exp.config.seed,
        threads: set.shards.iter().map(|(_, m)| m.threads).max().unwrap_or(1),
        host: host(),
        stages,
        resumed_chunks: set.shards.iter().map(|(_, m)| m.resumed_units).sum(),
        computed_chunks: set.shards.iter().map(|(_, m)| m.computed_units).sum(),
        files: hashes,
        merged_shards: Some(n),
        reports: None,
    };
    write_atomic(
        &dir.join(MANIFEST_FILE),
        yaml_serde::to_string(&manifest)?.as_bytes(),
    )?;
    stage.commit()?;
    Ok(MergeOutcome {
        out: out.to_path_buf(),
        shards: n,
        cells,
        seconds: start.elapsed().as_secs_f64(),
        up_to_date: false,
    })
}
