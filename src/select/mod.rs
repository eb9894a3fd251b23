//! Selection algorithms as pure functions of one prompt's candidates (design §6).

pub mod algorithm;
pub mod bon;
pub mod gtable;
pub mod itp;
pub mod lambda;
pub mod pool;
pub mod privbon;
pub mod reference_scripts;
pub mod rejection;
