//! Numerics shared by the selection algorithms and the privacy accountant:
//! normal-distribution functions in log space ([`normal`]), quadrature
//! ([`quadrature`]) and the one maximiser of a smooth function on an interval
//! ([`maximise`], PrivITP's worst case over λ̃). It sits below both `select`
//! and `privacy` so that neither has to reach into the other for them.

pub mod maximise;
pub mod normal;
pub mod quadrature;
