//! One module per command: its clap arguments, their conversion (`TryFrom`)
//! into the options the library takes, and the run that prints. `cli` only
//! names the commands and dispatches; nothing below `commands` sees clap
//! (`audit::command` is the one exception: its flags and its audit config
//! are one schema).

pub mod budget;
pub mod experiment;
pub mod ingest;
pub mod report;
pub mod synth;
