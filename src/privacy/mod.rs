//! Privacy: normal-distribution numerics and the privacy accountant.

pub mod accountant;
pub mod normal;
