//! Result files (design §10): schemas, parquet IO, summaries and the run
//! manifest. Column names are a public interface (users read these files
//! with pandas); change them only deliberately.

pub mod cells;
pub mod fsrc;
pub mod manifest;
pub mod parquet_io;
pub mod read;
pub mod shard_manifest;
pub mod summary;
