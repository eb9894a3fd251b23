//! Rendering tables for terminals, documents and other tools.

pub mod figure;
pub mod format;
pub mod fsrc;
pub mod plots;
pub mod tables;
