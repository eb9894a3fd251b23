//! Privacy: the accountant (ε of every mechanism) and the budget
//! quantities, as numbers (`report::budget` renders them). The
//! normal-distribution numerics they evaluate live in [`crate::math`], below
//! the selection algorithms that share them. (FSRC composition runs the
//! engine, so it is `sweep::fsrc`.)

pub mod accountant;
pub mod budget;
pub mod rnm;
