//! Fast evaluation of G(x) = xΦ(x) + φ(x) = ∫_{−∞}^x Φ, the antiderivative
//! behind PrivITP's closed-form Phase-2 acceptance (paper `lem:reformulation`):
//!
//! ```text
//!   P(accept | r̂, λ̃) = E_u[Φ((r̂ − λ̃ − βM·u)/σ_Z)]
//!                     = σ_Z·[G((r̂ − λ̃)/σ_Z) − G((r̂ − R_max − σ_Z·L)/σ_Z)]/βM ,
//! ```
//!
//! with βM = R_max + σ_Z·L − λ̃ > 0. The second G term does not depend on λ̃
//! (it is computed once per pool item), the first is a univariate function
//! of (r̂ − λ̃)/σ_Z evaluated billions of times in a sweep.
//!
//! Both tables hold degree-5 Taylor expansions of G on a grid of step
//! h = 1/64, expanded about the nearest grid point (|δ| ≤ h/2): the
//! truncation error is ≤ max|φ⁽⁴⁾|·(h/2)⁶/6! ≈ 4e-16 absolute, below the
//! rounding of G's own value for |x| ≳ 1. The coefficients are G, Φ, φ/2,
//! φ′/6, φ″/24, φ‴/120 from [`normal`] (accurate to a few ulp). Outside
//! [X_LO, X_HI] the expansions are exact: G = 0 to double precision below
//! −40 (G(−40) ≈ 1e-352) and G(x) = x above 12 (G(x) − x = G(−x) < 1e-33),
//! so the end rows are written as those exact polynomials and any argument
//! beyond the table is evaluated exactly by extrapolating them.
//!
//! The accuracy is *absolute* (≈ 5e-16 near |x| ≤ 1, the ulp of x beyond),
//! which is what an acceptance probability in [0, 1] needs; a caller that
//! needs G's relative accuracy far in the left tail (privacy ratios) uses
//! [`normal::g`] instead.
//!
//! [`ShiftedGTable`] is the node-shifted form used by the λ̃ quadrature: with
//! λ̃_k = λ̂ + σ_X·x_k, node k's argument is u − ρ·x_k with u = (r̂ − λ̂)/σ_Z
//! and ρ = σ_X/σ_Z, so one row of the table, found from u alone, holds every
//! node's expansion at the same offset δ: the nodes are evaluated as SIMD
//! lanes with no per-lane table lookup.

use crate::math::normal;

/// Grid step of both tables.
pub const STEP: f64 = 1.0 / 64.0;
const INV_STEP: f64 = 64.0;
/// Below this G is 0 in double precision.
pub const X_LO: f64 = -40.0;
/// Above this G(x) = x in double precision.
pub const X_HI: f64 = 12.0;
/// Taylor coefficients per expansion.
pub const COEFFS: usize = 6;

/// The Taylor coefficients of G at `x0` (exact polynomials beyond the ends).
pub fn taylor_coefficients(x0: f64) -> [f64; COEFFS] {
    if x0 <= X_LO {
        return [0.0; COEFFS];
    }
    if x0 >= X_HI {
        return [x0, 1.0, 0.0, 0.0, 0.0, 0.0];
    }
    let p = normal::pdf(x0);
    let x2 = x0 * x0;
    [
        normal::g(x0),
        normal::cdf(x0),
        p / 2.0,
        -x0 * p / 6.0,
        (x2 - 1.0) * p / 24.0,
        -(x2 * x0 - 3.0 * x0) * p / 120.0,
    ]
}

#[inline(always)]
fn horner(c: &[f64; COEFFS], d: f64) -> f64 {
    ((((c[5] * d + c[4]) * d + c[3]) * d + c[2]) * d + c[1]) * d + c[0]
}

/// [`horner`] with fused multiply-adds (one rounding per step): how the
/// PrivITP walk evaluates the node-shifted table.
#[inline(always)]
pub fn horner_fused(c: &[f64; COEFFS], d: f64) -> f64 {
    let mut h = c[5].mul_add(d, c[4]);
    h = h.mul_add(d, c[3]);
    h = h.mul_add(d, c[2]);
    h = h.mul_add(d, c[1]);
    h.mul_add(d, c[0])
}

/// G on one grid.
#[derive(Clone, Debug)]
pub struct GTable {
    rows: Vec<[f64; COEFFS]>,
}

impl Default for GTable {
    fn default() -> Self {
        Self::new()
    }
}

impl GTable {
    pub fn new() -> Self {
        let count = ((X_HI - X_LO) * INV_STEP).round() as usize + 1;
        let rows = (0..count)
            .map(|j| taylor_coefficients(X_LO + j as f64 * STEP))
            .collect();
        Self { rows }
    }

    /// G(x) to ≈ 5e-16 absolute (exact beyond the table's ends).
    #[inline]
    pub fn g(&self, x: f64) -> f64 {
        let last = self.rows.len() - 1;
        let pos = ((x - X_LO) * INV_STEP).round();
        let j = if pos <= 0.0 {
            0
        } else if pos >= last as f64 {
            last
        } else {
            pos as usize
        };
        horner(&self.rows[j], x - (X_LO + j as f64 * STEP))
    }
}

/// Lanes of one SIMD group: node tables, lane states and lane loops are laid
/// out in groups of this many f64 (one AVX-512 register, two AVX2 registers).
pub const GROUP: usize = 8;

/// One lane group's Taylor coefficients at one row: `[coefficient][lane]`,
/// aligned to a cache line so a group's vector loads never straddle two.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct GroupCoeffs(pub [[f64; GROUP]; COEFFS]);

/// The node-shifted table: lane group g, row j, coefficient c, lane l holds
/// the c-th Taylor coefficient of G at u_j − ρ·x_k, k = g·GROUP + l,
/// u_j = u_lo + j·h. Group-major: a group's rows are one slice
/// ([`Self::group`]) indexed by the row alone, and a row's coefficients are
/// contiguous (one aligned block the walk loads as whole vectors). Lanes
/// beyond the node count are zero (padding to whole groups).
#[derive(Clone, Debug)]
pub struct ShiftedGTable {
    /// Padded lane count (a multiple of [`GROUP`]).
    pub lanes: usize,
    pub groups: usize,
    pub u_lo: f64,
    rows: usize,
    /// rows − 1, as the float the row search clamps to.
    last_row: f64,
    data: Vec<GroupCoeffs>,
}

impl ShiftedGTable {
    /// Table for node offsets `shifts[k]` = ρ·x_k.
    pub fn new(shifts: &[f64]) -> Self {
        let groups = shifts.len().div_ceil(GROUP).max(1);
        let lanes = groups * GROUP;
        let lo_shift = shifts.iter().copied().fold(f64::INFINITY, f64::min);
        let hi_shift = shifts.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        // Every lane is in its exact regime below u_lo and above u_hi.
        let u_lo = ((X_LO + lo_shift) * INV_STEP).floor() * STEP;
        let u_hi = ((X_HI + hi_shift) * INV_STEP).ceil() * STEP;
        let rows = ((u_hi - u_lo) * INV_STEP).round() as usize + 1;
        let mut data = vec![GroupCoeffs([[0.0; GROUP]; COEFFS]); rows * groups];
        for j in 0..rows {
            let u = u_lo + j as f64 * STEP;
            for (k, &s) in shifts.iter().enumerate() {
                let c = taylor_coefficients(u - s);
                for (ci, &v) in c.iter().enumerate() {
                    data[(k / GROUP) * rows + j].0[ci][k % GROUP] = v;
                }
            }
        }
        Self {
            lanes,
            groups,
            u_lo,
            rows,
            last_row: (rows - 1) as f64,
            data,
        }
    }

    /// The row for `u` (an index into each [`Self::group`]) and the offset
    /// δ = u − u_j. Rows are clamped at the ends, where every lane's
    /// expansion is exact. All in floating point — ⌊pos + ½⌋ clamped to
    /// [0, rows − 1] (NaN to 0), then one float-to-int cast of the clamped
    /// row — so a block of candidates vectorises with no integer-to-float
    /// conversion.
    #[inline(always)]
    pub fn row_start(&self, u: f64) -> (usize, f64) {
        let pos = ((u - self.u_lo) * INV_STEP + 0.5).floor();
        let j = pos.max(0.0).min(self.last_row);
        // SAFETY: j is an integer in [0, rows − 1] (f64::max maps NaN to 0),
        // so the plain truncating conversion is exact — no saturation fix-ups.
        let row = unsafe { j.to_int_unchecked::<i64>() } as usize;
        (row, u - (self.u_lo + j * STEP))
    }

    /// Lane group g's rows (indexed by [`Self::row_start`]'s row).
    #[inline(always)]
    pub fn group(&self, g: usize) -> &[GroupCoeffs] {
        &self.data[g * self.rows..(g + 1) * self.rows]
    }

    /// G(u − shift_k) for lane k, as one lane of the walk computes it (the
    /// walk evaluates whole groups).
    pub fn g(&self, u: f64, k: usize) -> f64 {
        let (j, d) = self.row_start(u);
        let c: [f64; COEFFS] = std::array::from_fn(|ci| self.group(k / GROUP)[j].0[ci][k % GROUP]);
        horner_fused(&c, d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tol(x: f64) -> f64 {
        // Absolute accuracy: ≈ 5e-16 near 0, the rounding of x (≈ 2 ulp) beyond.
        6e-16 + 4.0 * f64::EPSILON * x.abs()
    }

    #[test]
    fn plain_table_matches_direct_g() {
        let t = GTable::new();
        let mut worst = 0.0f64;
        let mut x = -45.0;
        while x < 30.0 {
            let err = (t.g(x) - normal::g(x)).abs();
            assert!(
                err <= tol(x),
                "x={x}: table {} direct {}",
                t.g(x),
                normal::g(x)
            );
            worst = worst.max(err / tol(x));
            x += 0.000_731;
        }
        // Far beyond both ends the exact polynomials hold.
        assert_eq!(t.g(-1e6), 0.0);
        assert_eq!(t.g(1e6), 1e6);
    }

    #[test]
    fn shifted_table_matches_direct_g_for_every_lane() {
        let shifts = [-6.6, -1.3, 0.0, 0.4, 2.9, 6.6];
        let t = ShiftedGTable::new(&shifts);
        assert_eq!(t.lanes, 8);
        let mut u = -60.0;
        while u < 40.0 {
            for (k, &s) in shifts.iter().enumerate() {
                let want = normal::g(u - s);
                let got = t.g(u, k);
                assert!(
                    (got - want).abs() <= tol(u - s),
                    "u={u} lane {k}: {got} vs {want}"
                );
            }
            // Padding lanes are zero.
            assert_eq!(t.g(u, 7), 0.0);
            u += 0.003_17;
        }
    }

    /// The test has power: a degree-4 expansion (coefficient 5 dropped) fails it.
    #[test]
    fn a_truncated_expansion_fails_the_accuracy_check() {
        let x0 = 0.5;
        let mut c = taylor_coefficients(x0);
        c[5] = 0.0;
        let d = STEP / 2.0;
        let err = (horner(&c, d) - normal::g(x0 + d)).abs();
        assert!(err > tol(x0 + d), "dropping φ‴/120 costs {err:e}");
    }
}
