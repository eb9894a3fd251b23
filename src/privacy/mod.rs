//! Privacy: normal-distribution numerics, the privacy accountant and the
//! budget table. (FSRC composition runs the engine, so it is `sweep::fsrc`.)

pub mod accountant;
pub mod budget;
pub mod normal;
pub mod rnm;
