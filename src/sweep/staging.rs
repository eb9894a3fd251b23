//! Results are built beside the old ones and swapped in only when complete.
//!
//! A run of `sweep`/`reproduce` into `<out>`:
//! 1. [`Staging::begin`] creates `<out>` if needed, takes its lock
//!    ([`super::lock`]) and refuses (exit 2, before any work) when `<out>`
//!    holds files privalign would write but did not: see [`owned`].
//! 2. [`Staging::prepare`] opens `<out>/.partial/` — the finished chunks of
//!    this config (kept by `--resume`), or a fresh one; an unfinished run
//!    found without `--resume` is discarded *with a note saying so*.
//! 3. The run writes every result file into `<out>/.partial/result/`
//!    ([`Staging::result_dir`]); `reproduce` adds its tables and plots there.
//! 4. [`Staging::commit`] swaps them in: the old manifest goes first (so the
//!    directory reads as incomplete, never as a mix), each new file is
//!    renamed over its old version, old privalign files the new run does not
//!    write (e.g. `fsrc.parquet` of a config that dropped its `fsrc:`
//!    section) are removed, the new manifest is renamed in last, and
//!    `.partial/` is removed.
//!
//! Until step 4 the old results stay complete, readable and `check`-able. A
//! failure before it leaves them untouched (and `.partial/` for `--resume`);
//! nothing named `.tmp-PID` or `.old-PID` outlives the process on a handled
//! error.
//!
//! **What privalign owns in a results directory** ([`owned`]): the files
//! its manifest lists, `manifest.yaml` itself when it parses as a privalign
//! results manifest, `.partial/`, the lock file, and — when that manifest is
//! present — the report files `reproduce` renders (`tables/*.tex|md`,
//! `plots/*.png|svg`). Anything else is the user's and is never removed or
//! overwritten.

use anyhow::{Context, Result};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::error::input_error;
use crate::fsutil::lock::ResultsLock;
use crate::fsutil::write_atomic;
use crate::results::manifest::{MANIFEST_FILE, ResultsManifest};

/// Where unfinished runs keep their finished chunks.
pub const PARTIAL_DIR: &str = ".partial";
/// The finished result files, inside [`PARTIAL_DIR`], before the swap.
const RESULT_DIR: &str = "result";
const HASH_FILE: &str = "config_hash";
/// Directories of rendered reports inside a results directory.
pub const REPORT_DIRS: [&str; 2] = ["tables", "plots"];

/// The old results manifest of `out`: `Ok(None)` when there is none, an
/// error naming the file when a `manifest.yaml` is there but is not ours.
pub fn old_manifest(out: &Path) -> Result<Option<ResultsManifest>> {
    let path = out.join(MANIFEST_FILE);
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    yaml_serde::from_str::<ResultsManifest>(&text)
        .map(Some)
        .map_err(|_| {
            input_error(format!(
                "{}: is not a privalign results manifest, and privalign never overwrites files it did not write; move it away or choose another --out",
                path.display()
            ))
        })
}

/// `(name, content SHA-256)` of every dataset of `exp` (what the sweep would
/// read of it, [`super::blocks::content_sha256`]), as the config hashes take them.
pub fn dataset_hashes(exp: &crate::config::Experiment) -> Result<Vec<(String, String)>> {
    exp.datasets
        .iter()
        .map(|d| {
            let reader = crate::data::open::open_reader(&d.dir)?;
            Ok((
                d.name.clone(),
                super::blocks::content_sha256(exp, d, &reader)?,
            ))
        })
        .collect()
}

/// The same pairs as recorded in a results manifest.
pub fn recorded_datasets(m: &ResultsManifest) -> Vec<(String, String)> {
    m.datasets
        .iter()
        .map(|d| (d.name.clone(), d.content_sha256.clone()))
        .collect()
}

/// Whether the file at `rel` (relative to a results directory whose
/// manifest is `manifest`) is privalign's to replace or remove.
pub fn owned(rel: &str, manifest: Option<&ResultsManifest>) -> bool {
    let Some(m) = manifest else {
        return false;
    };
    if rel == MANIFEST_FILE || m.files.contains_key(rel) {
        return true;
    }
    if let Some(reports) = &m.reports {
        // Written by a version that records its reports: exactly those.
        return reports.contains_key(rel);
    }
    // Manifests of older versions did not list reports: privalign's report
    // names (tables/*.tex|md, plots/*.png|svg) are taken as its own.
    match rel.split_once('/') {
        Some((dir, file)) if REPORT_DIRS.contains(&dir) && !file.contains('/') => {
            let ext = Path::new(file)
                .extension()
                .map(|e| e.to_string_lossy().to_string())
                .unwrap_or_default();
            matches!(
                (dir, ext.as_str()),
                ("tables", "tex" | "md") | ("plots", "png" | "svg")
            )
        }
        _ => false,
    }
}

/// The files among `rels` that exist in `out` and are not privalign's.
pub fn foreign_files(out: &Path, rels: &[String]) -> Result<Vec<String>> {
    let m = old_manifest(out)?;
    Ok(rels
        .iter()
        .filter(|r| out.join(r).exists() && !owned(r, m.as_ref()))
        .cloned()
        .collect())
}

fn refuse_foreign(out: &Path, foreign: &[String]) -> Result<()> {
    if foreign.is_empty() {
        return Ok(());
    }
    Err(input_error(format!(
        "{}: holds {} that privalign did not write (no privalign manifest vouches for {}); privalign never overwrites files it did not write — move {} away or choose another --out",
        out.display(),
        foreign.join(", "),
        if foreign.len() == 1 { "it" } else { "them" },
        if foreign.len() == 1 { "it" } else { "them" },
    )))
}

/// A results directory being rewritten: lock held, staging in `.partial/`.
#[derive(Debug)]
pub struct Staging {
    out: PathBuf,
    partial: PathBuf,
    created_out: bool,
    /// Whether this run owns `.partial/` ([`Staging::prepare`]); otherwise
    /// (fsrc, reports only) an unfinished sweep's chunks there are kept.
    prepared: bool,
    lock: Option<ResultsLock>,
}

impl Staging {
    /// Lock `out` (creating it) for `command`, refusing when it holds any of
    /// `will_write` (paths relative to `out`) that privalign does not own.
    pub fn begin(out: &Path, command: &str, will_write: &[String]) -> Result<Self> {
        if out.exists() && !out.is_dir() {
            return Err(input_error(format!(
                "{}: is a file, not a directory; give --out a directory (new or privalign's results)",
                out.display()
            )));
        }
        let created_out = !out.exists();
        fs::create_dir_all(out).with_context(|| {
            format!(
                "{}: cannot create the results directory (check the path and its permissions)",
                out.display()
            )
        })?;
        let mut st = Self {
            out: out.to_path_buf(),
            partial: out.join(PARTIAL_DIR),
            created_out,
            prepared: false,
            lock: None,
        };
        st.lock = Some(ResultsLock::acquire(out, command)?);
        refuse_foreign(out, &foreign_files(out, will_write)?)?;
        Ok(st)
    }

    /// The results directory.
    pub fn out(&self) -> &Path {
        &self.out
    }

    /// Open `.partial/` for a run with config hash `hash` and return it:
    /// with `resume`, the unfinished run of the same hash is kept (another
    /// hash is an input error); without, an unfinished run is discarded with
    /// a note on stderr.
    pub fn prepare(&mut self, hash: &str, resume: bool) -> Result<PathBuf> {
        self.prepared = true;
        let partial = &self.partial;
        if partial.exists() {
            let old = fs::read_to_string(partial.join(HASH_FILE)).unwrap_or_default();
            if resume && old.trim() != hash {
                return Err(input_error(format!(
                    "{}: the unfinished run there was made with a different config or data (config hash {} ≠ {}); rerun without --resume to start over",
                    partial.display(),
                    if old.trim().is_empty() {
                        "unknown"
                    } else {
                        old.trim()
                    },
                    hash
                )));
            }
            if !resume {
                let chunks = fs::read_dir(partial)
                    .map(|r| {
                        r.filter_map(|e| e.ok())
                            .filter(|e| e.file_name().to_string_lossy().ends_with(".parquet"))
                            .count()
                    })
                    .unwrap_or(0);
                eprintln!(
                    "note: discarding the unfinished run in {} ({chunks} finished chunk(s)); pass --resume to continue it instead",
                    partial.display()
                );
                fs::remove_dir_all(partial)
                    .with_context(|| format!("removing the unfinished {}", partial.display()))?;
            }
        }
        fs::create_dir_all(partial).with_context(|| format!("creating {}", partial.display()))?;
        write_atomic(&partial.join(HASH_FILE), hash.as_bytes())?;
        let result = partial.join(RESULT_DIR);
        if result.exists() {
            fs::remove_dir_all(&result)
                .with_context(|| format!("removing the stale {}", result.display()))?;
        }
        Ok(partial.clone())
    }

    /// Where the finished files are written before the swap (created on
    /// first use).
    pub fn result_dir(&self) -> Result<PathBuf> {
        let r = self.partial.join(RESULT_DIR);
        fs::create_dir_all(&r).with_context(|| format!("creating {}", r.display()))?;
        Ok(r)
    }

    /// Swap the staged result files into `out` (see the module doc) and
    /// release the lock.
    pub fn commit(mut self) -> Result<()> {
        let staged = self.partial.join(RESULT_DIR);
        let mut new: Vec<String> = Vec::new();
        if staged.exists() {
            collect_files(&staged, "", &mut new)?;
        }
        refuse_foreign(&self.out, &foreign_files(&self.out, &new)?)?;
        let old = old_manifest(&self.out)?;
        let new_manifest = new.iter().any(|f| f == MANIFEST_FILE);
        if new_manifest && old.is_some() {
            fs::remove_file(self.out.join(MANIFEST_FILE)).with_context(|| {
                format!(
                    "removing the old {}",
                    self.out.join(MANIFEST_FILE).display()
                )
            })?;
        }
        for rel in new.iter().filter(|f| *f != MANIFEST_FILE) {
            let to = self.out.join(rel);
            if let Some(p) = to.parent() {
                fs::create_dir_all(p).with_context(|| format!("creating {}", p.display()))?;
            }
            fs::rename(staged.join(rel), &to)
                .with_context(|| format!("moving the new {rel} into {}", self.out.display()))?;
        }
        if new_manifest {
            if let Some(m) = &old {
                // Old result files the new manifest no longer lists were
                // privalign's; they go (fsrc keeps every file it re-lists).
                let next: ResultsManifest = yaml_serde::from_str(
                    &fs::read_to_string(staged.join(MANIFEST_FILE))
                        .context("reading the new manifest")?,
                )
                .context("parsing the new manifest")?;
                // Old reports go too unless rewritten: a table of the old
                // results beside new results would mislead.
                let keep: BTreeSet<&String> = next.listed_files().map(|(f, _)| f).collect();
                for (f, _) in m.listed_files().filter(|(f, _)| !keep.contains(f)) {
                    remove_if_exists(&self.out.join(f))?;
                }
            }
            fs::rename(staged.join(MANIFEST_FILE), self.out.join(MANIFEST_FILE))
                .with_context(|| format!("moving the new manifest into {}", self.out.display()))?;
        }
        if self.prepared {
            fs::remove_dir_all(&self.partial)
                .with_context(|| format!("removing {}", self.partial.display()))?;
        } else {
            let _ = fs::remove_dir_all(&staged);
            let _ = fs::remove_dir(&self.partial); // only when empty
        }
        self.lock.take();
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if self.lock.is_none() {
            // Never held the lock (or committed): nothing here is ours to clean.
            return;
        }
        // Uncommitted: `.partial/` stays for --resume, but its half-written
        // result directory does not.
        let _ = fs::remove_dir_all(self.partial.join(RESULT_DIR));
        if !self.prepared {
            let _ = fs::remove_dir(&self.partial); // only when empty
        }
        self.lock.take();
        if self.created_out {
            // A directory we created and left empty (e.g. the run failed at once).
            let _ = fs::remove_dir(&self.out);
        }
    }
}

fn remove_if_exists(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing {}", path.display())),
    }
}

/// Relative paths of the files under `dir`, manifest included.
fn collect_files(dir: &Path, prefix: &str, out: &mut Vec<String>) -> Result<()> {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .collect::<std::io::Result<_>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        if e.file_type()?.is_dir() {
            collect_files(&e.path(), &rel, out)?;
        } else {
            out.push(rel);
        }
    }
    Ok(())
}

/// Whether `out` holds complete results (manifest present, every file it
/// lists present with its hash) made under `hash`.
pub fn complete_results(out: &Path, hash: &str) -> bool {
    let Ok(text) = fs::read_to_string(out.join(MANIFEST_FILE)) else {
        return false;
    };
    let Ok(m) = yaml_serde::from_str::<ResultsManifest>(&text) else {
        return false;
    };
    m.config_hash == hash
        && m.files
            .iter()
            .all(|(f, sha)| crate::fsutil::sha256_file(&out.join(f)).is_ok_and(|s| &s == sha))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unparsable_manifest_is_foreign() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join(MANIFEST_FILE), "my notes\n").unwrap();
        let e = Staging::begin(d.path(), "sweep", &[]).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(format!("{e:#}").contains("not a privalign results manifest"));
        assert_eq!(
            fs::read(d.path().join(MANIFEST_FILE)).unwrap(),
            b"my notes\n"
        );
        // The lock was released, nothing else left.
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn foreign_result_names_are_refused_and_a_created_dir_is_removed() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("cells.parquet"), "mine").unwrap();
        let e = Staging::begin(d.path(), "sweep", &["cells.parquet".into()]).unwrap_err();
        assert!(format!("{e:#}").contains("cells.parquet"), "{e:#}");
        let fresh = d.path().join("new");
        {
            let mut st = Staging::begin(&fresh, "sweep", &[]).unwrap();
            st.prepare("h", false).unwrap();
            // dropped uncommitted: .partial stays for --resume
        }
        assert!(fresh.join(PARTIAL_DIR).exists());
        let never = d.path().join("never");
        drop(Staging::begin(&never, "sweep", &[]).unwrap());
        assert!(
            !never.exists(),
            "an empty directory we created stays behind"
        );
    }
}
