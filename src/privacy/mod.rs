//! Privacy: normal-distribution numerics, the privacy accountant, the
//! budget table and FSRC composition.

pub mod accountant;
pub mod budget;
pub mod fsrc;
pub mod normal;
