//! Gauss–Hermite quadrature for expectations over a normal variable, used to
//! integrate PrivITP's Phase-1 noise λ̃ = λ + N(0, σ_X²) exactly enough.

/// Nodes x_k and weights w_k with Σ w_k f(x_k) ≈ E[f(Z)], Z ~ N(0, 1); exact
/// for polynomials of degree < 2K. Newton iteration on the orthonormal
/// Hermite recurrence (Numerical Recipes `gauher`), then rescaled from the
/// e^{−x²} weight to the standard normal.
pub fn gauss_hermite_normal(k: usize) -> Vec<(f64, f64)> {
    assert!(k >= 1, "need at least one node");
    let pim4 = std::f64::consts::PI.powf(-0.25);
    let mut x = vec![0.0; k];
    let mut w = vec![0.0; k];
    let m = k.div_ceil(2);
    let mut z = 0.0f64;
    for i in 0..m {
        z = match i {
            0 => (2.0 * k as f64 + 1.0).sqrt() - 1.85575 * (2.0 * k as f64 + 1.0).powf(-1.0 / 6.0),
            1 => z - 1.14 * (k as f64).powf(0.426) / z,
            2 => 1.86 * z - 0.86 * x[0],
            3 => 1.91 * z - 0.91 * x[1],
            _ => 2.0 * z - x[i - 2],
        };
        let mut pp = 0.0;
        for _ in 0..100 {
            let mut p1 = pim4;
            let mut p2 = 0.0;
            for j in 0..k {
                let p3 = p2;
                p2 = p1;
                p1 = z * (2.0 / (j as f64 + 1.0)).sqrt() * p2
                    - ((j as f64) / (j as f64 + 1.0)).sqrt() * p3;
            }
            pp = (2.0 * k as f64).sqrt() * p2;
            let z1 = z;
            z = z1 - p1 / pp;
            if (z - z1).abs() <= 1e-15 * z.abs().max(1.0) {
                break;
            }
        }
        x[i] = z;
        x[k - 1 - i] = -z;
        w[i] = 2.0 / (pp * pp);
        w[k - 1 - i] = w[i];
    }
    let s = std::f64::consts::SQRT_2;
    let norm = std::f64::consts::PI.sqrt();
    let mut out: Vec<(f64, f64)> = x
        .iter()
        .zip(&w)
        .map(|(&xi, &wi)| (s * xi, wi / norm))
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// Gauss–Legendre nodes and weights on [−1, 1] (exact for polynomials of
/// degree < 2K), by Newton iteration on the Legendre recurrence.
pub fn gauss_legendre(k: usize) -> Vec<(f64, f64)> {
    assert!(k >= 1, "need at least one node");
    let mut out = Vec::with_capacity(k);
    for i in 0..k {
        let mut z = (std::f64::consts::PI * (i as f64 + 0.75) / (k as f64 + 0.5)).cos();
        let mut dp = 0.0;
        for _ in 0..100 {
            let (mut p1, mut p2) = (1.0, 0.0);
            for j in 0..k {
                let p3 = p2;
                p2 = p1;
                p1 = ((2 * j + 1) as f64 * z * p2 - j as f64 * p3) / (j + 1) as f64;
            }
            dp = k as f64 * (z * p1 - p2) / (z * z - 1.0);
            let z1 = z;
            z = z1 - p1 / dp;
            if (z - z1).abs() < 1e-16 {
                break;
            }
        }
        out.push((z, 2.0 / ((1.0 - z * z) * dp * dp)));
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// log ∫_lo^hi exp(f(z)) dz by composite Gauss–Legendre (`panels` × 20
/// nodes), computed relative to `f_max` (an upper bound near the maximum of f)
/// so nothing under- or overflows.
pub fn log_integrate_exp(
    f: impl Fn(f64) -> f64,
    lo: f64,
    hi: f64,
    f_max: f64,
    panels: usize,
) -> f64 {
    let nodes = gauss_legendre(20);
    let width = (hi - lo) / panels as f64;
    let mut total = 0.0;
    for p in 0..panels {
        let a = lo + p as f64 * width;
        for &(x, w) in &nodes {
            let z = a + 0.5 * width * (x + 1.0);
            total += w * (f(z) - f_max).exp();
        }
    }
    f_max + (0.5 * width * total).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legendre_integrates_polynomials_and_exp() {
        let q = gauss_legendre(20);
        let s: f64 = q.iter().map(|p| p.1).sum();
        assert!((s - 2.0).abs() < 1e-14);
        let m: f64 = q.iter().map(|(x, w)| w * x.powi(38)).sum();
        assert!((m - 2.0 / 39.0).abs() < 1e-14);
        // ∫_0^3 e^{−z²/2} dz = √(π/2)·erf(3/√2).
        let v = log_integrate_exp(|z| -0.5 * z * z, 0.0, 3.0, 0.0, 4).exp();
        let exact =
            (std::f64::consts::PI / 2.0).sqrt() * puruspe::erf(3.0 / std::f64::consts::SQRT_2);
        assert!((v - exact).abs() < 1e-14 * exact);
    }

    #[test]
    fn integrates_normal_moments_exactly() {
        for k in [1usize, 2, 5, 16, 32] {
            let q = gauss_hermite_normal(k);
            let total: f64 = q.iter().map(|p| p.1).sum();
            assert!((total - 1.0).abs() < 1e-13, "k={k}: weights sum {total}");
            // E[Z^{2j}] = (2j − 1)!! for 2j < 2k.
            let mut dfact = 1.0;
            for j in 1..k.min(8) {
                dfact *= (2 * j - 1) as f64;
                let m: f64 = q.iter().map(|(x, w)| w * x.powi(2 * j as i32)).sum();
                assert!(
                    (m - dfact).abs() < 1e-10 * dfact,
                    "k={k} j={j}: {m} vs {dfact}"
                );
            }
        }
        // E[Φ(Z)] = ½ and E[cos Z] = e^{−1/2}, smooth but not polynomial.
        let q = gauss_hermite_normal(16);
        let c: f64 = q.iter().map(|(x, w)| w * x.cos()).sum();
        assert!((c - (-0.5f64).exp()).abs() < 1e-12);
    }
}
