//! Sharded sweeps: shard K of N runs a deterministic part of a sweep's
//! units into a shard directory; `merge` combines N shard directories into
//! the results directory a one-machine sweep writes.
//!
//! * [`spec`] parses `--shard K/N`.
//! * [`manifest`] is a shard directory's `shard.yaml`.
//! * [`verify`] checks that merge's inputs are the N finished shards of one sweep.

pub mod manifest;
pub mod spec;
pub mod verify;
