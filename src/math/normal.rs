//! Normal-distribution numerics for privacy ratios, all in log space where a
//! value can underflow, none with catastrophic cancellation.
//!
//! `erfc` and `erfcx` come from `puruspe` (accurate to ~1e-16 relative; statrs'
//! are only ~1e-10, not enough for privacy ratios). Test vectors in
//! `tests/data/normal_vectors.csv` were computed with mpmath at 50 digits
//! (`tests/data/make_normal_vectors.py`).
//!
//! * Φ, φ, log Φ: log Φ(x) = ln(erfcx(−x/√2)/2) − x²/2 for x < −1, else
//!   ln_1p(−erfc(x/√2)/2).
//! * G(x) = xΦ(x) + φ(x) = ∫_{−∞}^x Φ — the antiderivative behind PrivITP's
//!   closed-form Phase-2 acceptance. For x < 0, G(x) = φ(x)·h(|x|) with
//!   h(z) = 1 − z·R(z), R the Mills ratio; h is computed from erfcx for
//!   z < 20 (cancellation costs ≤ 400 ulp there) and from its asymptotic series
//!   Σ (−1)^{k+1} (2k−1)!!/z^{2k} beyond. For x ≥ 0, G(x) = x + G(−x).
//! * E_u[Φ(a + b·u)], u ~ Unif[0, 1] = (G(a+b) − G(a))/b, evaluated by the
//!   midpoint Taylor series when b is small (the b → 0 limit is Φ(a)), by the
//!   log-difference of G otherwise, and through 1 − E_u[Φ(−a − b·u)] when the
//!   interval's midpoint is positive so that values near 1 keep full accuracy.

use puruspe::{erfc, erfcx};
use std::f64::consts::{FRAC_1_SQRT_2, PI};

const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

/// Standard normal density φ(x).
pub fn pdf(x: f64) -> f64 {
    (-0.5 * x * x - LN_SQRT_2PI).exp()
}

/// log φ(x).
pub fn log_pdf(x: f64) -> f64 {
    -0.5 * x * x - LN_SQRT_2PI
}

/// Standard normal CDF Φ(x), accurate relative to its value in both tails.
pub fn cdf(x: f64) -> f64 {
    if x < -1.0 {
        0.5 * erfcx(-x * FRAC_1_SQRT_2) * (-0.5 * x * x).exp()
    } else {
        1.0 - 0.5 * erfc(x * FRAC_1_SQRT_2)
    }
}

/// log Φ(x), finite for every finite x (log Φ(−40) ≈ −804.6).
pub fn log_cdf(x: f64) -> f64 {
    if x < -1.0 {
        (0.5 * erfcx(-x * FRAC_1_SQRT_2)).ln() - 0.5 * x * x
    } else {
        (-0.5 * erfc(x * FRAC_1_SQRT_2)).ln_1p()
    }
}

/// Φ(x)/φ(x) for x ≤ 0: the Mills ratio R(|x|) = √(π/2)·erfcx(|x|/√2).
pub fn mills(z: f64) -> f64 {
    (PI / 2.0).sqrt() * erfcx(z * FRAC_1_SQRT_2)
}

/// h(z) = 1 − z·R(z) for z ≥ 0, so that G(−z) = φ(z)·h(z).
pub fn h(z: f64) -> f64 {
    if z < 20.0 {
        1.0 - z * mills(z)
    } else {
        // Asymptotic series; at z ≥ 20 the 20th term is < 1e-20 of the first.
        let inv = 1.0 / (z * z);
        let mut term = inv;
        let mut sum = 0.0;
        for k in 1..=20 {
            sum += term;
            term *= -((2 * k + 1) as f64) * inv;
        }
        sum
    }
}

/// G(x) = xΦ(x) + φ(x).
pub fn g(x: f64) -> f64 {
    if x > 0.0 { x + g(-x) } else { pdf(x) * h(-x) }
}

/// log G(x), finite for every finite x.
pub fn log_g(x: f64) -> f64 {
    if x > 0.0 {
        g(x).ln()
    } else {
        log_pdf(x) + h(-x).ln()
    }
}

/// log E_u[Φ(a + b·u)] for u ~ Unif[0, 1] (any sign of b; b = 0 gives log Φ(a)).
pub fn log_mean_cdf_uniform(a: f64, b: f64) -> f64 {
    // Orient the interval [lo, lo + w] with w ≥ 0.
    let (lo, w) = if b < 0.0 { (a + b, -b) } else { (a, b) };
    let m = lo + 0.5 * w;
    if m > 0.0 {
        // E[Φ(X)] = 1 − E[Φ(−X)], and −X ranges over [−lo − w, −lo] (midpoint < 0).
        return (-log_mean_cdf_uniform(-lo - w, w).exp()).ln_1p();
    }
    if w * (1.0 + m.abs()) < 0.1 {
        // Midpoint series: (1/w)∫ Φ = Φ(m) + Σ_k Φ^{(2k)}(m) (w/2)^{2k}/(2k+1)!,
        // Φ^{(2k)}(m) = −He_{2k−1}(m) φ(m).
        let w2 = w * w;
        let m2 = m * m;
        let poly = w2 / 24.0 * m
            + w2 * w2 / 1920.0 * (m2 * m - 3.0 * m)
            + w2 * w2 * w2 / 322_560.0 * (m2 * m2 * m - 10.0 * m2 * m + 15.0 * m);
        let lc = log_cdf(m);
        let ratio = (log_pdf(m) - lc).exp(); // φ(m)/Φ(m)
        return lc + (-ratio * poly).ln_1p();
    }
    // (G(lo + w) − G(lo))/w with G(lo) < G(lo + w), in log space.
    let hi = log_g(lo + w);
    let low = log_g(lo);
    hi + (-(low - hi).exp_m1()).ln() - w.ln()
}

/// log of the mean of Φ over [lo, hi] (lo ≤ hi; lo = hi gives log Φ(lo)),
/// with both ends given: forming hi as lo + width loses the digits of a
/// small hi next to a large width (PrivITP's Phase-2 intervals reach
/// [−R_max/σ_Z, Δ_r/σ_Z + L]). The width is hi − lo, exact for floats
/// within 2× of each other and accurate to 1 ulp of the width otherwise.
pub fn log_mean_cdf_between(lo: f64, hi: f64) -> f64 {
    let w = hi - lo;
    if w <= 0.0 {
        return log_cdf(lo);
    }
    let m = 0.5 * lo + 0.5 * hi;
    if m > 0.0 {
        return (-log_mean_cdf_between(-hi, -lo).exp()).ln_1p();
    }
    if w * (1.0 + m.abs()) < 0.1 {
        return log_mean_cdf_uniform(lo, w);
    }
    let top = log_g(hi);
    let low = log_g(lo);
    top + (-(low - top).exp_m1()).ln() - w.ln()
}

/// E_u[Φ(a + b·u)] for u ~ Unif[0, 1].
pub fn mean_cdf_uniform(a: f64, b: f64) -> f64 {
    log_mean_cdf_uniform(a, b).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetry_and_limits() {
        for x in [-3.0, -0.5, 0.0, 0.7, 2.5] {
            assert!((cdf(x) + cdf(-x) - 1.0).abs() < 1e-15);
            assert!((g(x) - g(-x) - x).abs() < 1e-14);
        }
        // b → 0: the mean tends to Φ at the interval's midpoint (no 0/0 blow-up);
        // b < 0 mirrors the interval.
        assert!((mean_cdf_uniform(-1.3, 1e-12) - cdf(-1.3 + 5e-13)).abs() < 1e-16);
        assert_eq!(mean_cdf_uniform(-1.3, 0.0), cdf(-1.3));
        assert!((mean_cdf_uniform(0.2, -0.7) - mean_cdf_uniform(-0.5, 0.7)).abs() < 1e-15);
    }

    #[test]
    fn mean_cdf_matches_simpson() {
        for &(a, b) in &[
            (-2.0, 3.0),
            (0.5, 0.05),
            (-6.0, 1.0),
            (1.0, 4.0),
            (-0.3, 0.2),
        ] {
            let k = 20_000;
            let hstep = 1.0 / k as f64;
            let mut s = cdf(a) + cdf(a + b);
            for i in 1..k {
                let w = if i % 2 == 1 { 4.0 } else { 2.0 };
                s += w * cdf(a + b * i as f64 * hstep);
            }
            let simpson = s * hstep / 3.0;
            let v = mean_cdf_uniform(a, b);
            assert!(
                ((v - simpson) / simpson).abs() < 1e-10,
                "a={a} b={b}: {v} vs {simpson}"
            );
        }
    }
}

/// Agreement with 60-digit mpmath values (tests/data/normal_vectors.csv).
/// Criterion: |log ours − log ref| ≤ 1e-12 + 1e-15·|log ref|, i.e. ≤ 1e-12
/// relative error in the value wherever f64 can represent its logarithm to
/// that precision (|log| ≤ 1000); beyond, the bound is the log's own rounding.
#[cfg(test)]
mod high_precision {
    use super::*;

    #[test]
    fn matches_mpmath_vectors() {
        let text = include_str!("../../tests/data/normal_vectors.csv");
        let mut checked = 0;
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            let a: f64 = f[1].parse().unwrap();
            let b: f64 = f[2].parse().unwrap();
            let want: f64 = f[3].parse().unwrap();
            let (got, is_log) = match f[0] {
                "log_cdf" => (log_cdf(a), true),
                "cdf" => (cdf(a), false),
                "log_g" => (log_g(a), true),
                "log_mcu" => (log_mean_cdf_uniform(a, b), true),
                k => panic!("unknown kind {k}"),
            };
            let ok = if is_log {
                (got - want).abs() <= 1e-12 + 1e-15 * want.abs()
            } else {
                want == 0.0 && got == 0.0 || ((got - want) / want).abs() <= 1e-12
            };
            assert!(ok, "{line}: got {got:e} (diff {:e})", got - want);
            checked += 1;
        }
        assert!(checked > 400);
    }
}
