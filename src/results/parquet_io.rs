//! Parquet reading and atomic writing of result frames.
//!
//! Files are written to a hidden temporary sibling and renamed into place,
//! so a result file is either absent, its previous version, or complete.
//! Compression is zstd with the writer's defaults and no wall-clock metadata,
//! so equal frames give byte-identical files.

use anyhow::{Context, Result};
use polars::prelude::*;
use std::fs::File;
use std::path::Path;

use crate::fsutil::with_atomic_file;

/// Write one frame to `path` atomically.
pub fn write_frame(path: &Path, df: &mut DataFrame) -> Result<()> {
    with_atomic_file(path, |f| {
        ParquetWriter::new(f)
            .with_compression(ParquetCompression::Zstd(None))
            .finish(df)
            .map_err(anyhow::Error::from)?;
        Ok(())
    })
    .with_context(|| format!("writing {}", path.display()))
}

/// Write a sequence of frames with one schema as one file (one row group
/// each), atomically, holding one frame in memory at a time.
pub fn write_frames(
    path: &Path,
    schema: &Schema,
    frames: impl Iterator<Item = Result<DataFrame>>,
) -> Result<()> {
    write_frames_as(path, schema, frames, ParquetCompression::Zstd(None), true)
}

/// [`write_frames`] for privalign's own intermediate files (the sweep's
/// block files): no compression and no column statistics — they are read
/// back only by privalign, whole, and writing them sits on the sweep's
/// critical path.
pub fn write_frames_scratch(
    path: &Path,
    schema: &Schema,
    frames: impl Iterator<Item = Result<DataFrame>>,
) -> Result<()> {
    write_frames_as(
        path,
        schema,
        frames,
        ParquetCompression::Uncompressed,
        false,
    )
}

fn write_frames_as(
    path: &Path,
    schema: &Schema,
    frames: impl Iterator<Item = Result<DataFrame>>,
    compression: ParquetCompression,
    statistics: bool,
) -> Result<()> {
    with_atomic_file(path, |f| {
        let mut w = ParquetWriter::new(f).with_compression(compression);
        if !statistics {
            w = w.with_statistics(StatisticsOptions::empty());
        }
        let mut w = w.batched(schema)?;
        for df in frames {
            w.write_batch(&df?)?;
        }
        w.finish()?;
        Ok(())
    })
    .with_context(|| format!("writing {}", path.display()))
}

/// Read a whole parquet file.
pub fn read_frame(path: &Path) -> Result<DataFrame> {
    let f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    ParquetReader::new(f)
        .finish()
        .map_err(anyhow::Error::from)
        .with_context(|| format!("reading {}", path.display()))
}

/// A string column as owned strings (nulls as "").
pub fn str_column(df: &DataFrame, name: &str) -> Result<Vec<String>> {
    Ok(df
        .column(name)?
        .str()?
        .iter()
        .map(|v| v.unwrap_or_default().to_string())
        .collect())
}

/// A float column with its nulls.
pub fn f64_column(df: &DataFrame, name: &str) -> Result<Vec<Option<f64>>> {
    Ok(df.column(name)?.f64()?.iter().collect())
}

/// An integer count column (nulls as 0).
pub fn usize_column(df: &DataFrame, name: &str) -> Result<Vec<usize>> {
    Ok(df
        .column(name)?
        .i64()?
        .iter()
        .map(|v| v.unwrap_or(0) as usize)
        .collect())
}
