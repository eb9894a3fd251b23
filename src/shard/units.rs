//! The shard unit: what a sweep's work is split into.
//!
//! A **cells unit** is one block of the one-machine sweep — (dataset, reward
//! model, 32-prompt block of ingest's layout) with every n and algorithm —
//! and its file is the block file the sweep keeps in `.partial/`
//! (`d{D}-r{R}-b{B}.parquet`, [`crate::sweep::blocks`]). Why this unit: a
//! shard reads exactly its blocks' rows of the columns it needs (the
//! dataset's row groups are these blocks), so its memory and I/O are bounded
//! by its slice; a block is small enough (32 prompts) that shards balance,
//! and large enough that a unit's file and reads are not dominated by
//! per-file overhead. Every random stream is keyed by (seed, dataset,
//! reward model, prompt, n, replicate), so a unit computes the same numbers
//! wherever it runs; merge assembles the cells file from the unit files with
//! the sweep's own function, so the bytes are the same.
//!
//! An **FSRC unit** is the FSRC section's runs on one (dataset, reward
//! model): FSRC answers a stream of queries drawn over *all* prompts, so it
//! cannot be split by prompt. It is one unit, listed after every cells unit,
//! so the contiguous split gives it to the last shard(s); the merge step
//! does not run it, because merge must stay cheap (one CPU, seconds) while
//! FSRC is σ × seeds full passes over a reward model's pools.

use crate::config::Experiment;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitKind {
    /// Cells of one block of prompts (every n).
    Cells {
        block: usize,
    },
    Fsrc,
}

/// One unit of a sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unit {
    pub dataset: usize,
    pub reward_model: usize,
    pub kind: UnitKind,
}

impl Unit {
    /// The unit's file name in a shard directory.
    pub fn file_name(&self) -> String {
        let (d, r) = (self.dataset, self.reward_model);
        match self.kind {
            UnitKind::Cells { block } => crate::sweep::blocks::block_file_name(d, r, block),
            UnitKind::Fsrc => format!("fsrc-d{d}-r{r}.parquet"),
        }
    }
}

pub use crate::sweep::blocks::fsrc_wanted;

/// Blocks of dataset `d` (from its dataset.yaml; the reader verifies the
/// index against it before any block is read).
pub fn dataset_blocks(exp: &Experiment, d: usize) -> usize {
    exp.datasets[d]
        .manifest
        .integrity
        .as_ref()
        .map_or(0, |i| i.blocks)
}

/// Every unit of `exp`, in cells-file order, FSRC units last.
pub fn units(exp: &Experiment) -> Vec<Unit> {
    let mut v = Vec::new();
    for d in 0..exp.datasets.len() {
        for r in 0..exp.reward_models.len() {
            for block in 0..dataset_blocks(exp, d) {
                v.push(Unit {
                    dataset: d,
                    reward_model: r,
                    kind: UnitKind::Cells { block },
                });
            }
        }
    }
    for d in 0..exp.datasets.len() {
        for r in 0..exp.reward_models.len() {
            if fsrc_wanted(exp, r) {
                v.push(Unit {
                    dataset: d,
                    reward_model: r,
                    kind: UnitKind::Fsrc,
                });
            }
        }
    }
    v
}
