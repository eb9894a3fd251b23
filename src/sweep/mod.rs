//! Running the selection algorithms over bootstrap replicates.
//!
//! * [`seed`] derives every random stream from (seed, dataset, reward model,
//!   prompt, n, replicate), so results never depend on scheduling.
//! * [`engine`] runs one (prompt, n) work item: draws each replicate's batches
//!   once, evaluates every algorithm on them (common random numbers) and
//!   averages the metrics over replicates; [`engine::run_items`] runs many work
//!   items in parallel with rayon.
//! * [`fsrc`] answers a prompt stream with PrivITP under FSRC composition.

pub mod block_files;
pub mod blocks;
pub mod conventions;
pub mod engine;
pub mod fsrc;
pub mod progress;
pub mod provenance;
pub mod run;
pub mod seed;
pub mod staging;
pub mod transform;
