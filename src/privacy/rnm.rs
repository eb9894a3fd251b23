//! Pure ε of Gaussian Report Noisy Max (PrivBoN with Gaussian noise; paper
//! `thm:gaussian_priv`, eq. `eq:gaussian_mbon_eps`; Lebensold, Precup & Balle
//! 2024, Thm 8), finite, accurate and fast over the whole accepted range.
//!
//! With a = R_max/σ, t = 2Δ_r/σ and m = n − 1,
//! ε = log E_z[Φ(z − a + t)^m] − log E_z[Φ(z − a)^m], z ~ N(0, 1).
//! Substituting x = z − a (+ t in the first integral) turns the ratio into
//! one tilted expectation under w(x) ∝ φ(x + a)·Φ(x)^m:
//!
//!   ε = t·(x₀ + a) − t²/2 + log E_w[e^{t(x − x₀)}],
//!
//! x₀ the mode of w. The two integrals are never formed as differences of
//! huge logarithms (which lost every digit at σ = 1e-9 and made the old
//! walk take minutes): every log-density is evaluated *relative to a base
//! point* from exact differences (`lcd`), the tilted expectation is computed
//! on w's own nodes with `expm1` when the tilt is mild (small Δ_r/σ, where ε
//! is tiny), and around its own mode otherwise. Integration is composite
//! 20-node Gauss–Legendre on panels that follow the local scale
//! 1/√(1 + m·v(x)), v = −(d/dx)(φ/Φ) ∈ (0, 1), growing 1.5× per panel until
//! the log-density has fallen by 90 nats (log-concave with curvature ≥ 1, so
//! that happens within a bounded number of panels).
//!
//! Accepted range (refused beyond with it in the message, see
//! [`check_range`]): R_max/σ ≤ 1e6, Δ_r/σ ≥ 1e-250, Δ_r ≤ R_max, n ≤ 1e6.
//! Checked against 60-digit mpmath quadrature (tests/data/make_budget_vectors.py).

use puruspe::erfcx;
use std::f64::consts::{FRAC_1_SQRT_2, PI};
use std::sync::OnceLock;

use crate::math::normal::{log_cdf, log_pdf};

/// Largest accepted R_max/σ (ε grows like (R_max/σ)²/2; beyond, f64 can no
/// longer resolve the integrand's scale next to its location).
pub const MAX_RATIO: f64 = 1e6;
/// Smallest accepted Δ_r/σ (ε ≈ 2Δ_r/σ·E[max]; below, ε is subnormal).
pub const MIN_RATIO: f64 = 1e-250;
/// Largest accepted n.
pub const MAX_N: usize = 1_000_000;

/// The valid range, or a message naming it.
pub fn check_range(r_max: f64, delta_r: f64, sigma: f64, n: usize) -> Result<(), String> {
    let (a, d) = (r_max / sigma, delta_r / sigma);
    if a.is_nan() || a > MAX_RATIO {
        return Err(format!(
            "R_max/σ = {a:e} is above {MAX_RATIO:e}: Gaussian PrivBoN's ε would be about (R_max/σ)²/2 ≈ {:.1e}; give σ ≥ R_max/{MAX_RATIO:e} = {:e}",
            a * a / 2.0,
            r_max / MAX_RATIO
        ));
    }
    if d.is_nan() || d < MIN_RATIO {
        return Err(format!(
            "Δ_r/σ = {d:e} is below {MIN_RATIO:e} (ε would underflow); give σ ≤ Δ_r/{MIN_RATIO:e}"
        ));
    }
    if delta_r > r_max {
        return Err(format!(
            "Δ_r = {delta_r} exceeds R_max = {r_max}: rewards in [0, R_max] cannot move by more than R_max; give Δ_r ≤ R_max"
        ));
    }
    if n > MAX_N {
        return Err(format!("n = {n} is above {MAX_N}; give n ≤ {MAX_N}"));
    }
    Ok(())
}

/// φ(x)/Φ(x), the inverse Mills ratio, without overflow or cancellation.
pub(crate) fn inv_mills(x: f64) -> f64 {
    if x < -1.0 {
        (2.0 / PI).sqrt() / erfcx(-x * FRAC_1_SQRT_2)
    } else {
        (log_pdf(x) - log_cdf(x)).exp()
    }
}

/// log Φ(x) − log Φ(y) given the exact difference `dx` = x − y.
pub(crate) fn lcd(x: f64, y: f64, dx: f64) -> f64 {
    if x < -1.0 && y < -1.0 {
        // log Φ(x) = ln(erfcx(−x/√2)/2) − x²/2; the quadratic parts differ by
        // −dx·(x + y)/2, computed from the exact difference.
        (erfcx(-x * FRAC_1_SQRT_2) / erfcx(-y * FRAC_1_SQRT_2)).ln() - 0.5 * dx * (x + y)
    } else {
        log_cdf(x) - log_cdf(y)
    }
}

/// The log-density of w (plus a tilt t) at base + v, relative to base:
/// log φ(x + a) + m log Φ(x) + t·x, differenced exactly in v.
struct Density {
    a: f64,
    m: f64,
    t: f64,
    base: f64,
}

impl Density {
    fn rel(&self, v: f64) -> f64 {
        let x = self.base + v;
        -0.5 * v * (2.0 * self.base + v + 2.0 * self.a) + self.m * lcd(x, self.base, v) + self.t * v
    }

    /// Derivative in x (strictly decreasing: the density is log-concave).
    fn deriv(a: f64, m: f64, t: f64, x: f64) -> f64 {
        -(x + a) + m * inv_mills(x) + t
    }
}

/// The mode of log φ(x + a) + m log Φ(x) + t·x, by bisection.
fn mode(a: f64, m: f64, t: f64) -> f64 {
    let d = |x: f64| Density::deriv(a, m, t, x);
    let (mut lo, mut hi) = (-1.0f64, 1.0f64);
    while d(lo) <= 0.0 {
        lo = 2.0 * lo - 1.0;
    }
    while d(hi) >= 0.0 {
        hi = 2.0 * hi + 1.0;
    }
    for _ in 0..300 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if d(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Local scale 1/√(−second derivative) at x (≥ 10% accurate suffices).
fn scale(m: f64, x: f64) -> f64 {
    let v = if x < -30.0 {
        1.0
    } else {
        let r = inv_mills(x);
        (r * (x + r)).clamp(0.0, 1.0)
    };
    1.0 / (1.0 + m * v).sqrt()
}

/// 20-point Gauss–Legendre nodes and weights on [−1, 1].
fn gauss_legendre() -> &'static [(f64, f64)] {
    static NODES: OnceLock<Vec<(f64, f64)>> = OnceLock::new();
    NODES.get_or_init(|| {
        let n = 20;
        (1..=n)
            .map(|i| {
                let mut x = (PI * (i as f64 - 0.25) / (n as f64 + 0.5)).cos();
                let mut dp = 0.0;
                for _ in 0..100 {
                    let (mut p0, mut p1) = (1.0, x);
                    for k in 2..=n {
                        let p2 = ((2 * k - 1) as f64 * x * p1 - (k - 1) as f64 * p0) / k as f64;
                        p0 = p1;
                        p1 = p2;
                    }
                    dp = n as f64 * (x * p1 - p0) / (x * x - 1.0);
                    let dx = p1 / dp;
                    x -= dx;
                    if dx.abs() < 1e-16 {
                        break;
                    }
                }
                (x, 2.0 / ((1.0 - x * x) * dp * dp))
            })
            .collect()
    })
}

/// Quadrature nodes (offset v from the base, weight) covering the density
/// until it has fallen by 90 nats on both sides.
fn nodes(f: &Density, s: f64) -> Vec<(f64, f64)> {
    let gl = gauss_legendre();
    let mut out = Vec::with_capacity(1600);
    for dir in [-1.0, 1.0] {
        let (mut v0, mut step) = (0.0, s);
        for _ in 0..400 {
            let v1 = v0 + dir * step;
            let (c, h) = (0.5 * (v0 + v1), 0.5 * (v1 - v0));
            out.extend(gl.iter().map(|&(x, w)| (c + h * x, w * h.abs())));
            v0 = v1;
            if f.rel(v1) < -90.0 {
                break;
            }
            step *= 1.5;
        }
    }
    out
}

/// log ∫ exp(f.rel(v)) dv over `nodes`.
fn log_integral(f: &Density, nodes: &[(f64, f64)]) -> f64 {
    let vals: Vec<f64> = nodes.iter().map(|&(v, _)| f.rel(v)).collect();
    let peak = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = nodes
        .iter()
        .zip(&vals)
        .map(|(&(_, w), &h)| w * (h - peak).exp())
        .sum();
    peak + sum.ln()
}

/// ε of Gaussian Report Noisy Max (see the module doc). Callers check the
/// range with [`check_range`] first; outside it the value is not guaranteed.
pub fn privbon_gauss_eps(r_max: f64, delta_r: f64, sigma: f64, n: usize) -> f64 {
    if n <= 1 {
        return 0.0; // one candidate: the output does not depend on the rewards
    }
    let (a, t, m) = (r_max / sigma, 2.0 * (delta_r / sigma), (n - 1) as f64);
    let x0 = mode(a, m, 0.0);
    let w = Density {
        a,
        m,
        t: 0.0,
        base: x0,
    };
    let nw = nodes(&w, scale(m, x0));
    let (lo, hi) = nw
        .iter()
        .fold((0.0f64, 0.0f64), |(l, h), &(v, _)| (l.min(v), h.max(v)));
    let tilt = if t * hi.max(-lo) <= 20.0 {
        // Mild tilt: E_w[e^{tv}] on w's nodes, as log1p(E_w[expm1(tv)]).
        let vals: Vec<f64> = nw.iter().map(|&(v, _)| w.rel(v)).collect();
        let peak = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (mut num, mut den) = (0.0, 0.0);
        for (&(v, wt), &h) in nw.iter().zip(&vals) {
            let p = wt * (h - peak).exp();
            den += p;
            num += p * (t * v).exp_m1();
        }
        (num / den).ln_1p()
    } else {
        // Strong tilt: integrate around the tilted mode x_t, then relate
        // its base to x₀ by the exact difference of the log-densities.
        let l0 = log_integral(&w, &nw);
        let xt = mode(a, m, t);
        let tilted = Density { a, m, t, base: xt };
        let lt = log_integral(&tilted, &nodes(&tilted, scale(m, xt)));
        let d = xt - x0;
        let shift = -0.5 * d * (xt + x0 + 2.0 * a) + m * lcd(xt, x0, d) + t * d;
        shift + lt - l0
    };
    t * (x0 + a) - 0.5 * t * t + tilt
}
