//! `merge`'s refusals: before anything is written, the given directories
//! must be exactly the N finished shards of one sweep — same config hash,
//! same datasets, same N, each K once, none missing. Every refusal is an
//! input error naming the directory and what is wrong.

use anyhow::Result;
use std::path::{Path, PathBuf};

use crate::bail_input;
use crate::results::shard_manifest::{SHARD_MANIFEST, ShardManifest, read_shard_manifest};

/// The verified shards, ordered by K.
#[derive(Clone, Debug)]
pub struct ShardSet {
    /// `(directory, manifest)` of shard 0 … N-1.
    pub shards: Vec<(PathBuf, ShardManifest)>,
}

fn load(dir: &Path) -> Result<ShardManifest> {
    if !dir.is_dir() {
        bail_input!(
            "{}: does not exist or is not a directory, so its shard is missing; run that shard (`privalign sweep CONFIG --shard K/N --out {}`) or resubmit it (`privalign slurm … --resume`)",
            dir.display(),
            dir.display()
        );
    }
    match read_shard_manifest(dir)? {
        Some(m) => Ok(m),
        None => bail_input!(
            "{}: has no {SHARD_MANIFEST}, so it is not a shard directory (or its shard never started); give the directories written by `privalign sweep --shard K/N`",
            dir.display()
        ),
    }
}

/// Check that `dirs` are the complete, finished shards of one sweep.
pub fn verify(dirs: &[PathBuf]) -> Result<ShardSet> {
    if dirs.is_empty() {
        bail_input!("merge needs the shard directories: privalign merge DIR... --out RESULTS");
    }
    let mut loaded = Vec::with_capacity(dirs.len());
    for d in dirs {
        loaded.push((d.clone(), load(d)?));
    }
    let (d0, m0) = &loaded[0];
    for (d, m) in &loaded {
        if m.shards != m0.shards {
            bail_input!(
                "{}: holds shard {}/{} but {} holds shard {}/{}; all shards of one merge must come from the same --shard K/N split",
                d.display(),
                m.shard,
                m.shards,
                d0.display(),
                m0.shard,
                m0.shards
            );
        }
        if m.config_hash != m0.config_hash || m.datasets != m0.datasets {
            bail_input!(
                "{}: was made with another config or other data than {} (config hash {} ≠ {}); merge only shards of one sweep — rerun this shard with the same config and data",
                d.display(),
                d0.display(),
                m.config_hash,
                m0.config_hash
            );
        }
        if !m.finished {
            bail_input!(
                "{}: shard {}/{} is unfinished (interrupted, or still running); finish it with `privalign sweep CONFIG --shard {}/{} --out {} --resume`",
                d.display(),
                m.shard,
                m.shards,
                m.shard,
                m.shards,
                d.display()
            );
        }
    }
    let n = m0.shards;
    let mut slots: Vec<Option<(PathBuf, ShardManifest)>> = vec![None; n];
    for (d, m) in loaded {
        if m.shard >= n {
            bail_input!(
                "{}: shard index {} is not below N = {n}; the manifest is damaged — rerun this shard",
                d.display(),
                m.shard
            );
        }
        if let Some((other, _)) = &slots[m.shard] {
            bail_input!(
                "{} and {}: both hold shard {}/{n}; give each shard once",
                other.display(),
                d.display(),
                m.shard
            );
        }
        let k = m.shard;
        slots[k] = Some((d, m));
    }
    let missing: Vec<String> = slots
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_none())
        .map(|(k, _)| k.to_string())
        .collect();
    if !missing.is_empty() {
        bail_input!(
            "shard(s) {} of {n} missing: none of the given directories holds them; give all {n} shard directories (run the missing shards first)",
            missing.join(", ")
        );
    }
    Ok(ShardSet {
        shards: slots.into_iter().flatten().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{EXIT_BAD_INPUT, exit_code};
    use crate::results::shard_manifest::{test_manifest, write_test_manifest};

    fn err(dirs: &[PathBuf]) -> String {
        let e = verify(dirs).unwrap_err();
        assert_eq!(exit_code(&e), EXIT_BAD_INPUT, "{e}");
        e.to_string()
    }

    #[test]
    fn refusals_name_the_directory() {
        let t = tempfile::tempdir().unwrap();
        let d = |k: &str| t.path().join(k);
        for k in 0..3 {
            write_test_manifest(&d(&k.to_string()), &test_manifest(k, 3, true));
        }
        let all: Vec<PathBuf> = (0..3).map(|k| d(&k.to_string())).collect();
        let set = verify(&[all[2].clone(), all[0].clone(), all[1].clone()]).unwrap();
        let ks: Vec<usize> = set.shards.iter().map(|(_, m)| m.shard).collect();
        assert_eq!(ks, [0, 1, 2], "ordered by K");

        // Missing: a directory that does not exist, or a K nobody holds.
        let e = err(&[all[0].clone(), d("nope"), all[2].clone()]);
        assert!(e.contains(&d("nope").display().to_string()), "{e}");
        let e = err(&[all[0].clone(), all[2].clone()]);
        assert!(e.contains("shard(s) 1 of 3 missing"), "{e}");
        // Duplicate.
        write_test_manifest(&d("dup"), &test_manifest(2, 3, true));
        let e = err(&[all[0].clone(), all[1].clone(), all[2].clone(), d("dup")]);
        assert!(e.contains("both hold shard 2/3"), "{e}");
        // Another N.
        write_test_manifest(&d("n4"), &test_manifest(1, 4, true));
        let e = err(&[all[0].clone(), d("n4"), all[2].clone()]);
        assert!(
            e.contains(&d("n4").display().to_string()) && e.contains("1/4"),
            "{e}"
        );
        // Another config, or other data.
        let mut m = test_manifest(1, 3, true);
        m.config_hash = "other".into();
        write_test_manifest(&d("cfg"), &m);
        let e = err(&[all[0].clone(), d("cfg"), all[2].clone()]);
        assert!(
            e.contains(&d("cfg").display().to_string()) && e.contains("another config"),
            "{e}"
        );
        let mut m = test_manifest(1, 3, true);
        m.datasets[0].content_sha256 = "t".into();
        write_test_manifest(&d("data"), &m);
        assert!(err(&[all[0].clone(), d("data"), all[2].clone()]).contains("other data"));
        // Unfinished.
        write_test_manifest(&d("unf"), &test_manifest(1, 3, false));
        let e = err(&[all[0].clone(), d("unf"), all[2].clone()]);
        assert!(e.contains("unfinished") && e.contains("--shard 1/3"), "{e}");
        // Not a shard directory.
        std::fs::create_dir_all(d("empty")).unwrap();
        assert!(err(&[d("empty")]).contains("not a shard directory"));
    }
}
