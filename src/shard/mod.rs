//! Sharded sweeps: shard K of N runs a deterministic part of a sweep's
//! units into a shard directory; `merge` combines N shard directories into
//! the results directory a one-machine sweep writes, byte for byte.
//!
//! * [`units`] defines the unit (one (dataset, reward model, n) chunk of
//!   cells, or one (dataset, reward model) FSRC section) and their order;
//! * [`assign`] gives shard K of N a contiguous range of that list;
//! * [`spec`] parses `--shard K/N`;
//! * [`run`] runs one shard (`privalign sweep --shard K/N`);
//! * [`manifest`] is a shard directory's `shard.yaml` (a file format, so it
//!   is defined with the other result files in `results`);
//! * [`verify`] checks that merge's inputs are the N finished shards of one sweep;
//! * [`merge`] writes the results directory (`privalign merge`).

pub mod assign;
pub mod merge;
pub mod run;
pub mod spec;
pub mod units;
pub mod verify;

pub use crate::results::shard_manifest as manifest;
