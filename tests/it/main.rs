//! privalign's integration tests: one test binary (linking polars once),
//! one module per concern. Run one module with `cargo test --test it MODULE`
//! (e.g. `cargo test --test it slurm_real`), one test by adding its name.
//!
//! Modules run in one process, side by side, so no test sets a process-wide
//! environment variable or current directory (children get theirs through
//! `Command`). A module's fixed scratch directories under `CARGO_TARGET_TMPDIR`
//! carry its own name (`shard-tests`, `gpqa-prepared-fsrc-only`); the ones in
//! [`common`] (`demo_prepared`, `fixed_results`) are made once per process and
//! only read by every module that shares them. Everything else is a tempdir.

mod common;

mod audit_cli;
mod audit_power;
mod budget;
mod budget_extremes;
mod check;
mod config;
mod config_hash;
mod engine;
mod engine_oracle;
mod file_variants;
mod fsrc_only;
mod gpqa;
mod hostile;
mod ingest;
mod integrity_io;
mod integrity_reports;
mod layers;
mod plots;
mod privacy;
mod readme;
mod reference_scripts;
mod safety;
mod shard;
mod slurm_real;
mod source_rules;
mod sweep;
mod synth;
mod tables;
mod units;
