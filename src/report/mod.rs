//! Rendering tables for terminals, documents and other tools.

pub mod budget;
pub mod describe;
pub mod figure;
pub mod format;
pub mod fsrc;
pub mod plots;
pub mod select;
pub mod tables;
