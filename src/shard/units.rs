//! The shard unit: what a sweep's work is split into.
//!
//! A **cells unit** is one chunk of the one-machine sweep — (dataset, reward
//! model, n) with every prompt and algorithm setting — and its file is the
//! chunk file the sweep keeps in `.partial/` (`d{D}-r{R}-n{n}.parquet`).
//! Every random stream is keyed by (seed, dataset, reward model, prompt, n,
//! replicate), so a unit computes the same numbers wherever it runs, and the
//! merged cells file is the unit files in this list's order — the sweep's
//! own order.
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
    /// Cells of `n_values[n_index]`.
    Cells {
        n_index: usize,
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
    pub fn file_name(&self, exp: &Experiment) -> String {
        let (d, r) = (self.dataset, self.reward_model);
        match self.kind {
            UnitKind::Cells { n_index } => {
                format!("d{d}-r{r}-n{}.parquet", exp.n_values[n_index])
            }
            UnitKind::Fsrc => format!("fsrc-d{d}-r{r}.parquet"),
        }
    }
}

/// Whether the config's FSRC section runs on reward model `ri`.
pub fn fsrc_wanted(exp: &Experiment, ri: usize) -> bool {
    exp.config.fsrc.as_ref().is_some_and(|f| {
        f.reward_models
            .as_ref()
            .is_none_or(|only| only.contains(&exp.reward_models[ri].name))
    })
}

/// Every unit of `exp`, in cells-file order, FSRC units last.
pub fn units(exp: &Experiment) -> Vec<Unit> {
    let mut v = Vec::new();
    for d in 0..exp.datasets.len() {
        for r in 0..exp.reward_models.len() {
            for n_index in 0..exp.n_values.len() {
                v.push(Unit {
                    dataset: d,
                    reward_model: r,
                    kind: UnitKind::Cells { n_index },
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
