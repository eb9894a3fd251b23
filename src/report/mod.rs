//! Rendering tables for terminals, documents and other tools.

pub mod format;
pub mod fsrc;
pub mod tables;
