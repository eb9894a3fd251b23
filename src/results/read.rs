//! Reading finished results directories back (for tables, plots, budgets and
//! `check`). A directory counts as finished only when its `manifest.yaml`
//! exists (the sweep writes it last).

use anyhow::Result;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::cells::col;
use super::fsrc::{FSRC_FILE, FsrcRow, read_fsrc};
use super::manifest::{MANIFEST_FILE, ResultsManifest};
use super::parquet_io::{f64_column, read_frame, str_column, usize_column};
use super::summary::{MeanSe, STATS, SUMMARY_FILE};
use crate::error::input_error;

/// One row of summary.parquet.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryRecord {
    pub dataset: String,
    pub reward_model: String,
    pub algorithm: String,
    pub sigma: Option<f64>,
    pub beta: Option<f64>,
    pub n: usize,
    pub prompts: usize,
    pub replicates: usize,
    /// Statistic name (see [`STATS`]) → mean and SE.
    pub stats: BTreeMap<String, MeanSe>,
    pub eps_max: Option<f64>,
}

impl SummaryRecord {
    pub fn stat(&self, name: &str) -> MeanSe {
        self.stats.get(name).copied().unwrap_or_default()
    }
}

/// One results directory.
#[derive(Clone, Debug)]
pub struct ResultsDir {
    pub dir: PathBuf,
    pub manifest: ResultsManifest,
    pub summary: Vec<SummaryRecord>,
    /// Empty when the experiment has no FSRC section.
    pub fsrc: Vec<FsrcRow>,
}

/// Several results directories read together (e.g. one per dataset).
#[derive(Clone, Debug, Default)]
pub struct ResultsSet {
    pub dirs: Vec<ResultsDir>,
}

impl ResultsSet {
    pub fn summary(&self) -> impl Iterator<Item = &SummaryRecord> {
        self.dirs.iter().flat_map(|d| d.summary.iter())
    }

    pub fn fsrc(&self) -> impl Iterator<Item = &FsrcRow> {
        self.dirs.iter().flat_map(|d| d.fsrc.iter())
    }

    /// The directories, for error messages.
    pub fn names(&self) -> String {
        self.dirs
            .iter()
            .map(|d| d.dir.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Read `dir`'s manifest and summary (and FSRC runs when present).
pub fn read_results(dir: &Path) -> Result<ResultsDir> {
    refuse_shard_dir(dir)?;
    let mpath = dir.join(MANIFEST_FILE);
    let text = std::fs::read_to_string(&mpath).map_err(|_| {
        input_error(format!(
            "{}: no {MANIFEST_FILE}, so these are not finished results; run `privalign sweep CONFIG --out {}` (with --resume to continue an interrupted run)",
            dir.display(),
            dir.display()
        ))
    })?;
    let manifest: ResultsManifest = yaml_serde::from_str(&text).map_err(|e| {
        input_error(format!(
            "{}: not a results manifest ({e}); rerun the sweep",
            mpath.display()
        ))
    })?;
    let spath = dir.join(SUMMARY_FILE);
    if !spath.exists() {
        return Err(input_error(format!(
            "{}: missing although {MANIFEST_FILE} lists it; rerun the sweep",
            spath.display()
        )));
    }
    // A file the manifest vouches for that cannot be decoded (truncated,
    // replaced, wrong columns) is the results directory's fault: exit 2.
    let damaged = |path: &Path, e: anyhow::Error| {
        input_error(format!(
            "{}: cannot be read ({e:#}); the results in {} are damaged — re-run `privalign sweep CONFIG --out {}`",
            path.display(),
            dir.display(),
            dir.display()
        ))
    };
    let summary = read_summary(&spath).map_err(|e| damaged(&spath, e))?;
    let fpath = dir.join(FSRC_FILE);
    let fsrc = if fpath.exists() {
        read_fsrc(&fpath).map_err(|e| damaged(&fpath, e))?
    } else {
        Vec::new()
    };
    Ok(ResultsDir {
        dir: dir.to_path_buf(),
        manifest,
        summary,
        fsrc,
    })
}

/// A shard directory (`sweep --shard K/N`) holds part of a sweep: reporting
/// on it would present a slice of the prompts as the whole. Point to merge.
fn refuse_shard_dir(dir: &Path) -> Result<()> {
    use super::shard_manifest::{SHARD_MANIFEST, read_shard_manifest};
    if !dir.join(SHARD_MANIFEST).exists() {
        return Ok(());
    }
    let what = match read_shard_manifest(dir) {
        Ok(Some(m)) => format!(
            "shard {}/{} of experiment `{}`",
            m.shard, m.shards, m.experiment
        ),
        _ => "a shard".to_string(),
    };
    Err(input_error(format!(
        "{}: is a shard directory ({what}), not a results directory; combine all shards first with `privalign merge SHARD_DIR... --out RESULTS` and use RESULTS",
        dir.display()
    )))
}

/// Read several results directories.
///
/// Runs are never merged: when two directories hold the same (dataset,
/// reward model), each such directory's dataset is relabelled
/// `DATASET [LABEL]` — LABEL its experiment name when those differ, else
/// its directory as given — so tables show the runs side by side and plots
/// draw them as separate curves (rather than one table cell silently taken
/// from the first directory, or one curve zig-zagging between two runs).
/// The same directory given twice is refused.
pub fn read_results_set(dirs: &[PathBuf]) -> Result<ResultsSet> {
    let mut set = ResultsSet {
        dirs: dirs
            .iter()
            .map(|d| read_results(d))
            .collect::<Result<_>>()?,
    };
    label_overlapping_runs(&mut set)?;
    Ok(set)
}

fn label_overlapping_runs(set: &mut ResultsSet) -> Result<()> {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    for (i, a) in set.dirs.iter().enumerate() {
        for b in &set.dirs[..i] {
            if canon(&a.dir) == canon(&b.dir) {
                crate::bail_input!(
                    "{} and {}: the same results directory given twice; give each once",
                    b.dir.display(),
                    a.dir.display()
                );
            }
        }
    }
    let pairs = |d: &ResultsDir| -> std::collections::BTreeSet<(String, String)> {
        d.summary
            .iter()
            .map(|r| (r.dataset.clone(), r.reward_model.clone()))
            .chain(
                d.fsrc
                    .iter()
                    .map(|f| (f.dataset.clone(), f.reward_model.clone())),
            )
            .collect()
    };
    let all: Vec<_> = set.dirs.iter().map(pairs).collect();
    let overlapping: Vec<usize> = (0..set.dirs.len())
        .filter(|&i| (0..set.dirs.len()).any(|j| j != i && !all[i].is_disjoint(&all[j])))
        .collect();
    if overlapping.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = overlapping
        .iter()
        .map(|&i| set.dirs[i].manifest.experiment.as_str())
        .collect();
    let names_distinct = names
        .iter()
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        == names.len();
    for &i in &overlapping {
        let d = &mut set.dirs[i];
        let label = if names_distinct {
            d.manifest.experiment.clone()
        } else {
            d.dir.display().to_string()
        };
        let rename = |ds: &mut String| *ds = format!("{ds} [{label}]");
        d.summary.iter_mut().for_each(|r| rename(&mut r.dataset));
        d.fsrc.iter_mut().for_each(|f| rename(&mut f.dataset));
        d.manifest
            .datasets
            .iter_mut()
            .for_each(|x| rename(&mut x.name));
    }
    Ok(())
}

/// A statistic's name with its `_mean` and `_se` columns.
type StatColumns = (String, Vec<Option<f64>>, Vec<Option<f64>>);

/// Read summary.parquet into records.
pub fn read_summary(path: &Path) -> Result<Vec<SummaryRecord>> {
    let df = read_frame(path)?;
    let strs = |c: &str| str_column(&df, c);
    let f = |c: &str| f64_column(&df, c);
    let i = |c: &str| usize_column(&df, c);
    let (ds, rm, alg) = (
        strs(col::DATASET)?,
        strs(col::REWARD_MODEL)?,
        strs(col::ALGORITHM)?,
    );
    let (sigma, beta, eps_max) = (f(col::SIGMA)?, f(col::BETA)?, f("eps_max")?);
    let (n, prompts, reps) = (i(col::N)?, i("prompts")?, i(col::REPLICATES)?);
    let stats: Vec<StatColumns> = STATS
        .iter()
        .map(|s| {
            Ok((
                s.to_string(),
                f(&format!("{s}_mean"))?,
                f(&format!("{s}_se"))?,
            ))
        })
        .collect::<Result<_>>()?;
    Ok((0..df.height())
        .map(|k| SummaryRecord {
            dataset: ds[k].clone(),
            reward_model: rm[k].clone(),
            algorithm: alg[k].clone(),
            sigma: sigma[k],
            beta: beta[k],
            n: n[k],
            prompts: prompts[k],
            replicates: reps[k],
            stats: stats
                .iter()
                .map(|(name, m, s)| {
                    (
                        name.clone(),
                        MeanSe {
                            mean: m[k],
                            se: s[k],
                        },
                    )
                })
                .collect(),
            eps_max: eps_max[k],
        })
        .collect())
}
