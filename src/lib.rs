//! privalign: differentially private inference-time alignment experiments —
//! from precomputed response and reward files to the paper's results.
//!
//! Stages (design §1): `synth`/raw files → [`data::ingest`] → prepared dataset
//! → [`sweep::engine`] (bootstrap replicates of the [`select`] algorithms).
//! Module dependencies point downwards: `cli` → `data`, `sweep` → `select` →
//! `privacy`, with `error` and `fsutil` shared.

pub mod audit;
pub mod check;
pub mod cli;
pub mod commands;
pub mod config;
pub mod data;
pub mod error;
pub mod fsutil;
pub mod math;
pub mod out;
pub mod pipeline;
pub mod privacy;
pub mod rename;
pub mod report;
pub mod results;
pub mod select;
pub mod shard;
pub mod slurm;
pub mod sweep;
pub mod threads;
