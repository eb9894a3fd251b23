//! PrivITP's Phase-2 privacy terms κ(λ̃), ρ(λ̃) for the conditional
//! estimator's E[ε_2^post] (the accountant's [`Phase2Terms`]), evaluated
//! once per λ̃ node of every replicate — millions of times in a sweep.
//!
//! [`EpsConsts`] computes them directly (four G values per λ̃, two logs).
//! [`EpsTable`] interpolates that function: on cells of width σ_Z/8 it holds
//! the 16-point Chebyshev interpolant of κ and ρ (coefficients from
//! [`EpsConsts::terms`] at the cell's Chebyshev points, built on first use),
//! evaluated by Clenshaw's recurrence. κ and ρ are analytic in λ̃ on the
//! table's domain — λ̃ from −β − σ_X·x_max (rewards are ≥ 0 for every
//! bounded transform) up to where βM/σ_Z = 2·NARROW, short of the kink at
//! βM = 0 where the acceptance rule changes — so the interpolant agrees with
//! the direct terms to ≈ 1e-15 (`tests::table_matches_the_direct_terms`);
//! outside the domain the direct terms are used.

use std::sync::OnceLock;

use super::PrivItpParams;
use super::lockstep::NARROW;
use crate::math::normal;
use crate::privacy::accountant::Phase2Terms;

/// Chebyshev points per cell (the interpolant's degree + 1).
const POINTS: usize = 16;
/// Cells per σ_Z.
const CELLS_PER_SIGMA: f64 = 8.0;
/// At most this many cells (a setting whose domain needs more — σ_Z tiny
/// against R_max — is evaluated directly); an unbuilt cell costs 16 bytes.
const MAX_CELLS: f64 = 65_536.0;

/// One cell's Chebyshev coefficients of κ, then of ρ.
type Coefficients = [[f64; POINTS]; 2];

/// κ and ρ of one PrivITP setting, tabulated (module docs).
#[derive(Clone, Debug)]
pub(crate) struct EpsTable {
    consts: EpsConsts,
    lo: f64,
    width: f64,
    /// Per cell: the Chebyshev coefficients of κ, then of ρ.
    cells: Vec<OnceLock<Box<Coefficients>>>,
}

impl EpsTable {
    /// The table for setting `p`, nodes with largest |x| = `x_max`.
    pub(crate) fn new(p: &PrivItpParams, r_max: f64, delta_r: f64, x_max: f64) -> Self {
        let lo = -p.beta - p.sigma_x * x_max;
        let hi = (r_max + p.sigma_x * x_max).min(r_max + p.sigma_z * (p.l - 2.0 * NARROW));
        let width = p.sigma_z / CELLS_PER_SIGMA;
        let span = (hi - lo) / width;
        let count = if (0.0..=MAX_CELLS).contains(&span) {
            span.floor() as usize
        } else {
            0
        };
        Self {
            consts: EpsConsts::new(p, r_max, delta_r),
            lo,
            width,
            cells: (0..count).map(|_| OnceLock::new()).collect(),
        }
    }

    /// (κ, ρ) at λ̃.
    #[inline]
    pub(crate) fn terms(&self, lt: f64) -> (f64, f64) {
        let pos = (lt - self.lo) / self.width;
        if !(pos >= 0.0 && pos < self.cells.len() as f64) {
            return self.consts.terms(lt);
        }
        let cell = pos as usize;
        let c = self.cells[cell].get_or_init(|| Box::new(self.build(cell)));
        // Local coordinate in [−1, 1].
        let t = 2.0 * (pos - cell as f64) - 1.0;
        (clenshaw(&c[0], t), clenshaw(&c[1], t))
    }

    fn build(&self, cell: usize) -> Coefficients {
        let (a, b) = (
            self.lo + cell as f64 * self.width,
            self.lo + (cell + 1) as f64 * self.width,
        );
        let (mid, half) = (0.5 * (a + b), 0.5 * (b - a));
        let theta = |j: usize| std::f64::consts::PI * (j as f64 + 0.5) / POINTS as f64;
        let values: Vec<(f64, f64)> = (0..POINTS)
            .map(|j| self.consts.terms(mid + half * theta(j).cos()))
            .collect();
        let mut out = [[0.0; POINTS]; 2];
        for (f, coef) in out.iter_mut().enumerate() {
            for (k, ck) in coef.iter_mut().enumerate() {
                let s: f64 = (0..POINTS)
                    .map(|j| {
                        let v = if f == 0 { values[j].0 } else { values[j].1 };
                        v * (k as f64 * theta(j)).cos()
                    })
                    .sum();
                *ck = s * 2.0 / POINTS as f64;
            }
            coef[0] *= 0.5;
        }
        out
    }
}

/// Σ_k c_k·T_k(t) by Clenshaw's recurrence.
#[inline(always)]
fn clenshaw(c: &[f64; POINTS], t: f64) -> f64 {
    let (mut b1, mut b2) = (0.0, 0.0);
    let t2 = 2.0 * t;
    for &ck in c[1..].iter().rev() {
        let b = t2 * b1 - b2 + ck;
        b2 = b1;
        b1 = b;
    }
    t * b1 - b2 + c[0]
}

/// Phase-2 privacy terms κ(λ̃), ρ(λ̃) of [`Phase2Terms`] by direct differences
/// of G. Both are log-ratios of E_u[Φ] over intervals with one fixed end:
///
/// ```text
///   κ = ln[G(Δ/σ + L) − G((λ̃ − R_max + Δ)/σ)] − ln[G(L) − G((λ̃ − R_max)/σ)]
///   ρ = ln[G((Δ − λ̃)/σ) − G((Δ − R_max)/σ − L)] − ln[G(−λ̃/σ) − G(−R_max/σ − L)]
/// ```
///
/// (σ = σ_Z; the 1/(βM/σ) of each mean cancels within a ratio), so four of
/// the eight G values are constants of the setting. Used where every
/// variable argument is ≥ [`DIRECT_MIN_ARG`] and βM/σ ≥ [`NARROW`], so that
/// each difference is a well-conditioned difference of relative-accurate
/// values; otherwise the log-space [`Phase2Terms::new`].
#[derive(Clone, Debug)]
pub(crate) struct EpsConsts {
    g_kappa_hi: f64,
    g_l: f64,
    g_rho_lo1: f64,
    g_rho_lo2: f64,
    r_max: f64,
    delta_r: f64,
    sigma_z: f64,
    l: f64,
}

/// Smallest G argument evaluated directly in [`EpsConsts::terms`].
const DIRECT_MIN_ARG: f64 = -30.0;

impl EpsConsts {
    pub(crate) fn new(p: &PrivItpParams, r_max: f64, delta_r: f64) -> Self {
        let s = p.sigma_z;
        Self {
            g_kappa_hi: normal::g(delta_r / s + p.l),
            g_l: normal::g(p.l),
            g_rho_lo1: normal::g((delta_r - r_max) / s - p.l),
            g_rho_lo2: normal::g(-r_max / s - p.l),
            r_max,
            delta_r,
            sigma_z: s,
            l: p.l,
        }
    }

    pub(crate) fn terms(&self, lt: f64) -> (f64, f64) {
        let (s, l) = (self.sigma_z, self.l);
        let beta_m = self.r_max + s * l - lt;
        let args = [
            (lt - self.r_max + self.delta_r) / s,
            (lt - self.r_max) / s,
            (self.delta_r - lt) / s,
            -lt / s,
        ];
        let lo_args = [(self.delta_r - self.r_max) / s - l, -self.r_max / s - l];
        if beta_m / s < NARROW || args.iter().chain(&lo_args).any(|&a| a < DIRECT_MIN_ARG) {
            let t = Phase2Terms::new(lt, s, self.r_max, self.delta_r, l);
            return (t.kappa, t.accept);
        }
        let kappa = ((self.g_kappa_hi - normal::g(args[0])) / (self.g_l - normal::g(args[1]))).ln();
        let accept =
            ((normal::g(args[2]) - self.g_rho_lo1) / (normal::g(args[3]) - self.g_rho_lo2)).ln();
        (kappa, accept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select::algorithm::Batches;

    fn params(sx: f64, sz: f64, beta: f64) -> PrivItpParams {
        PrivItpParams {
            sigma_x: sx,
            sigma_z: sz,
            beta,
            l: 4.0,
            clamp: None,
            batches: Batches::Fresh,
        }
    }

    /// The interpolant agrees with the direct terms to 1e-13 (relative, or
    /// absolute below 1; the log-space accountant's own evaluations scatter
    /// by ~1e-14 where the direct differences do not apply) at points dense in every cell, over σ_Z, σ_X/σ_Z,
    /// β, Δ_r and R_max — including the cells next to the domain's ends.
    #[test]
    fn table_matches_the_direct_terms() {
        let mut worst = 0.0f64;
        for &sz in &[0.01, 0.05, 0.125, 0.5, 2.0] {
            for &rho in &[0.3, 1.0, 3.0] {
                for &(dr, rm) in &[(1.0, 1.0), (0.39, 1.0), (2.0, 4.0)] {
                    let p = params(rho * sz, sz, 0.05);
                    let table = EpsTable::new(&p, rm, dr, 4.7);
                    let c = EpsConsts::new(&p, rm, dr);
                    let (lo, hi) = (table.lo, table.lo + table.cells.len() as f64 * table.width);
                    let steps = 4000;
                    for i in 0..=steps {
                        let lt = lo + (hi - lo) * (i as f64 + 0.37) / (steps as f64 + 1.0);
                        let (k, a) = table.terms(lt);
                        let (k0, a0) = c.terms(lt);
                        for (got, want) in [(k, k0), (a, a0)] {
                            let err = (got - want).abs() / want.abs().max(1.0);
                            worst = worst.max(err);
                            assert!(
                                err <= 1e-13,
                                "σ_Z={sz} ρ={rho} Δ={dr} R={rm} λ̃={lt}: {got} vs {want}"
                            );
                        }
                    }
                }
            }
        }
        eprintln!("worst relative error of the κ/ρ table: {worst:e}");
    }

    /// The test has power: an interpolant cut to degree 3 fails it.
    #[test]
    fn a_lower_degree_fails_the_accuracy_check() {
        let p = params(0.125, 0.125, 0.05);
        let table = EpsTable::new(&p, 1.0, 1.0, 4.7);
        let c = EpsConsts::new(&p, 1.0, 1.0);
        let mut worst = 0.0f64;
        for cell in 0..table.cells.len() {
            let mut coef = table.build(cell);
            for f in coef.iter_mut() {
                f[4..].fill(0.0);
            }
            for i in 0..50 {
                let t = -1.0 + 2.0 * (i as f64 + 0.5) / 50.0;
                let lt = table.lo + (cell as f64 + 0.5 * (t + 1.0)) * table.width;
                let (k0, _) = c.terms(lt);
                worst = worst.max((clenshaw(&coef[0], t) - k0).abs() / k0.abs().max(1.0));
            }
        }
        assert!(
            worst > 1e-13,
            "a degree-3 interpolant is off by only {worst:e}"
        );
    }

    /// The direct κ, ρ agree with the log-space accountant to 1e-12 relative
    /// (absolute near 0) over λ̃, σ_Z, Δ_r and R_max.
    #[test]
    fn direct_eps_terms_match_the_accountant() {
        for &sz in &[0.01, 0.05, 0.125, 0.5, 2.0] {
            for &dr in &[0.1, 1.0, 3.0] {
                for &rm in &[0.5, 1.0, 4.0] {
                    let p = PrivItpParams {
                        sigma_x: sz,
                        sigma_z: sz,
                        beta: 0.05,
                        l: 4.0,
                        clamp: None,
                        batches: super::super::Batches::Fresh,
                    };
                    let c = EpsConsts::new(&p, rm, dr);
                    let mut lt = -2.0;
                    while lt < rm + sz * 4.0 + 0.5 {
                        let (k, a) = c.terms(lt);
                        let t = Phase2Terms::new(lt, sz, rm, dr, 4.0);
                        for (got, want) in [(k, t.kappa), (a, t.accept)] {
                            assert!(
                                (got - want).abs() <= 1e-12 * want.abs().max(1.0),
                                "σ_Z={sz} Δ={dr} R={rm} λ̃={lt}: {got} vs {want}"
                            );
                        }
                        lt += 0.0173;
                    }
                }
            }
        }
    }
}
