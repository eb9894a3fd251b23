//! Privacy cost of one query for each mechanism (design §8).
//!
//! Every function cites the result it implements. Rewards are assumed to lie in
//! [0, R_max] with sensitivity Δ_r (design §5).

use crate::math::maximise::maximise_on_interval;
use crate::math::normal::{log_cdf, log_mean_cdf_between};

/// Privacy parameters of a reward model (design §5, §8) and the Phase-1
/// convention: the exact analytic-Gaussian ε_1 (sound for every ε) unless
/// `paper_eps1` asks for the paper's classical formula.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrivacyParams {
    pub r_max: f64,
    pub delta_r: f64,
    /// δ of Phase 1's (ε, δ) guarantee.
    pub delta: f64,
    /// Use the paper's classical ε_1 instead of the exact analytic-Gaussian ε.
    pub paper_eps1: bool,
}

impl Default for PrivacyParams {
    /// R_max = Δ_r = 1 (the assumption-free Δ_r = R_max of design §5), δ = 1e-2
    /// (the paper's `tab:budgets`), sound ε_1.
    fn default() -> Self {
        Self {
            r_max: 1.0,
            delta_r: 1.0,
            delta: 1e-2,
            paper_eps1: false,
        }
    }
}

impl PrivacyParams {
    /// ε_1 of PrivITP's Phase 1 with noise σ_X under the chosen convention.
    pub fn phase1_eps(&self, sigma_x: f64) -> f64 {
        if self.paper_eps1 {
            phase1_eps_classical(self.delta_r, sigma_x, self.delta)
        } else {
            phase1_eps_analytic(self.delta_r, sigma_x, self.delta)
        }
    }
}

/// PrivBoN with Gumbel noise is the exponential mechanism: ε = 2Δ_r/σ
/// (`thm:gumbel_priv`).
pub fn privbon_gumbel_eps(delta_r: f64, sigma: f64) -> f64 {
    2.0 * delta_r / sigma
}

/// PrivITP Phase 1, the paper's classical Gaussian-mechanism formula
/// ε_1 = Δ_r·√(2 ln(1.25/δ))/σ_X (`thm:privitp_priv`). It is a valid
/// (ε, δ) bound only when the resulting ε < 1 (Dwork & Roth, Thm A.1).
pub fn phase1_eps_classical(delta_r: f64, sigma_x: f64, delta: f64) -> f64 {
    delta_r * (2.0 * (1.25 / delta).ln()).sqrt() / sigma_x
}

/// δ(ε) of the Gaussian mechanism with sensitivity Δ and noise σ (Balle &
/// Wang 2018, Thm 8): Φ(Δ/(2σ) − εσ/Δ) − e^ε·Φ(−Δ/(2σ) − εσ/Δ), in log space.
pub fn analytic_gaussian_delta(eps: f64, delta_r: f64, sigma: f64) -> f64 {
    let a = delta_r / (2.0 * sigma);
    let b = sigma / delta_r;
    let (x1, x2) = (a - eps * b, -a - eps * b);
    let l1 = log_cdf(x1);
    // l2 − l1 = ε + log Φ(x2) − log Φ(x1) from the exact difference
    // x2 − x1 = −2a (no cancellation of two large log Φ values).
    let d = eps + super::rnm::lcd(x2, x1, -2.0 * a);
    if d >= 0.0 {
        return 0.0;
    }
    l1.exp() * (-d.exp_m1())
}

/// The exact (smallest) ε for which the Gaussian mechanism with noise σ and
/// sensitivity Δ_r is (ε, δ)-DP (Balle & Wang 2018, analytic Gaussian
/// mechanism), found by bisection on the decreasing δ(ε) to 1e-12 relative.
pub fn phase1_eps_analytic(delta_r: f64, sigma_x: f64, delta: f64) -> f64 {
    if analytic_gaussian_delta(0.0, delta_r, sigma_x) <= delta {
        return 0.0;
    }
    let mut hi = 1.0;
    while analytic_gaussian_delta(hi, delta_r, sigma_x) > delta {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    while hi - lo > 1e-12 * hi {
        let mid = 0.5 * (lo + hi);
        if analytic_gaussian_delta(mid, delta_r, sigma_x) > delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// log M(lo + d, hi + d) − log M(lo, hi), M the mean of Φ over an interval
/// (κ and ρ both have this form: the numerator's interval is the
/// denominator's shifted by d = Δ_r/σ_Z), with its condition number
/// (relative error ≈ 1e-16 × condition).
///
/// Directly, as a difference of two logarithms, when that is well
/// conditioned; otherwise from the exact identity
/// M(lo+d, hi+d)/M(lo, hi) − 1 = (d/w)·[m(hi, d) − m(lo, d)]/M(lo, hi),
/// m(x, d) the mean of Φ over [x, x + d], through `ln_1p` — accurate for
/// small d, where the direct difference loses every digit. A degenerate
/// interval (w = 0) uses Φ(x+d)/Φ(x) − 1 = d·φ̄/Φ(x), φ̄ ≈ φ(x + d/2)·(1 +
/// d²((x+d/2)² − 1)/24) written through the inverse Mills ratio.
/// `num` is `den` shifted by `d`, each end computed from the inputs.
fn shifted_log_ratio(num: (f64, f64), (lo, hi): (f64, f64), d: f64) -> (f64, f64) {
    let t_num = log_mean_cdf_between(num.0, num.1);
    let t_den = log_mean_cdf_between(lo, hi);
    let direct = t_num - t_den;
    let big = t_num.abs().max(t_den.abs());
    let c_direct = if big == 0.0 { 0.0 } else { big / direct.abs() };
    if c_direct <= RESCUE_CONDITION {
        return (direct, c_direct);
    }
    let w = hi - lo;
    let (alt, c_alt) = if w <= 0.0 {
        if d * (1.0 + lo.abs()) > 1e-3 {
            return rescue((direct, c_direct), lo, hi, d, t_den);
        }
        let mid = lo + 0.5 * d;
        let series = 1.0 + d * d * (mid * mid - 1.0) / 24.0;
        let ratio = d * super::rnm::inv_mills(lo) * (-0.5 * d * (lo + 0.25 * d)).exp() * series;
        (ratio.ln_1p(), 1.0 + lo.abs())
    } else {
        let a_hi = log_mean_cdf_between(hi, num.1) - t_den;
        let a_lo = log_mean_cdf_between(lo, num.0) - t_den;
        let (r_hi, r_lo) = (a_hi.exp(), a_lo.exp());
        let diff = r_hi - r_lo;
        let c = (r_hi * (1.0 + t_den.abs() + a_hi.abs()) + r_lo * (1.0 + t_den.abs() + a_lo.abs()))
            / diff.abs();
        ((d / w * diff).ln_1p(), c)
    };
    let best = if c_alt < c_direct {
        (alt, c_alt)
    } else {
        (direct, c_direct)
    };
    rescue(best, lo, hi, d, t_den)
}

/// The condition above which [`shifted_log_ratio`] looks for a better
/// formulation than the direct difference.
const RESCUE_CONDITION: f64 = 2.5e4;

/// Where the formulations above are ill-conditioned (condition above
/// 2.5e4, a tenth of what 1e-10 allows: the 4e-16·condition estimate is
/// optimistic by up to 2× — 1.6e-10 was seen at 2.2e5), the
/// better-conditioned of them and of the small-shift series and the
/// lower-tail form, when those apply. Only such points: a well-conditioned
/// point (every point of the demo and the paper's grids) keeps its exact bits.
fn rescue(best: (f64, f64), lo: f64, hi: f64, d: f64, t_den: f64) -> (f64, f64) {
    if best.1 <= RESCUE_CONDITION {
        return best;
    }
    [
        small_shift_series(lo, hi, d, t_den),
        lower_tail_shift(lo, hi, d),
    ]
    .into_iter()
    .flatten()
    .fold(best, |b, c| if c.1 < b.1 { c } else { b })
}

/// κ-type ratio log M(lo+d, hi+d) − log M(lo, hi) when both the width
/// w = hi − lo and the shift d are small next to the scale of φ at the
/// centre c = (lo + hi + d)/2: M(lo+d, hi+d) − M(lo, hi) = d·E[φ(c + U)],
/// U the sum of independent centred uniforms of widths w and d, expanded
/// to fourth order: E[φ(c+U)] = φ(c)·(1 + (c² − 1)·E[U²]/2 + (c⁴ − 6c² + 3)·E[U⁴]/24),
/// E[U²] = (w² + d²)/12, E[U⁴] = w⁴/80 + w²d²/24 + d⁴/80; the sixth-order
/// remainder is below 1e-13 relative where (w + d)(1 + |c|) ≤ 0.02. Then
/// the ratio is ln_1p(d·E[φ(c+U)]/M(lo, hi)) (`t_den` = log M(lo, hi)),
/// with no cancellation of the shift.
fn small_shift_series(lo: f64, hi: f64, d: f64, t_den: f64) -> Option<(f64, f64)> {
    let w = hi - lo;
    let c = 0.5 * lo + 0.5 * hi + 0.5 * d;
    let small = (w + d) * (1.0 + c.abs());
    if small.is_nan() || small > 0.02 || !t_den.is_finite() {
        return None;
    }
    let (w2, d2, c2) = (w * w, d * d, c * c);
    let u2 = (w2 + d2) / 12.0;
    let u4 = w2 * w2 / 80.0 + w2 * d2 / 24.0 + d2 * d2 / 80.0;
    let series = 1.0 + (c2 - 1.0) * u2 / 2.0 + (c2 * c2 - 6.0 * c2 + 3.0) * u4 / 24.0;
    let lp = crate::math::normal::log_pdf(c);
    let x = d * (lp - t_den).exp() * series;
    // φ(c)/M(lo, hi) is formed from two logarithms: their rounding (≈ 1e-16
    // of each) is this form's error, small only near the centre of Φ (deep
    // in the tail the lower-tail form is better conditioned).
    Some((x.ln_1p(), 4.0 + lp.abs() + t_den.abs()))
}

/// κ-type ratio deep in Φ's lower tail (hi + d ≤ 0), where log M(·) is
/// ≈ −hi²/2 and the plain difference cancels: with G(x) = φ(x)·h(−x)
/// (Φ(x) = φ(x)·R(−x) when w = 0, R the Mills ratio) and
/// log M(lo, hi) = log G(hi) + ln(1 − G(lo)/G(hi)) − ln w,
/// log G(hi + d) − log G(hi) = −d·(hi + d/2) + ln(h(−hi−d)/h(−hi)) and
/// log G(lo) − log G(hi) = w·(lo + hi)/2 + ln(h(−lo)/h(−hi)) are formed
/// without the squares, so every summand is moderate.
fn lower_tail_shift(lo: f64, hi: f64, d: f64) -> Option<(f64, f64)> {
    use crate::math::normal::{h, mills};
    if (hi + d).is_nan() || hi + d > 0.0 {
        return None;
    }
    let w = hi - lo;
    let quad = -d * (hi + 0.5 * d);
    if w <= 0.0 {
        let v = quad + (mills(-(hi + d)) / mills(-hi)).ln();
        return Some((v, (quad.abs() + 1.0) / v.abs()));
    }
    let gap = |l: f64, u: f64| w * (0.5 * l + 0.5 * u) + (h(-l) / h(-u)).ln();
    let b = |l: f64, u: f64| (-gap(l, u).exp_m1()).ln();
    let head = quad + (h(-(hi + d)) / h(-hi)).ln();
    let (b1, b0) = (b(lo + d, hi + d), b(lo, hi));
    let v = head + b1 - b0;
    // h(z) = 1 − z·R(z) loses up to z² ulp below z = 20, where it is formed
    // from erfcx; beyond, its asymptotic series is accurate (privacy::normal).
    let ulps = |z: f64| if z.abs() < 20.0 { z * z } else { 1.0 };
    let h_err = 1.0 + 2.0 * ulps(hi) + 2.0 * ulps(lo);
    let c = (quad.abs() + h_err + b1.abs() + b0.abs()) / v.abs();
    Some((v, if c.is_finite() { c } else { f64::INFINITY }))
}

/// Phase-2 ex-post terms of PrivITP for a released λ̃ (`thm:privitp_priv`,
/// eq. `eq:privitp_expost`): ε_2^post(t) = (t − 1)·κ + ρ for an acceptance at
/// t ≤ n, and n·κ when all n candidates are rejected (every round a rejection).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Phase2Terms {
    /// κ = log E_u[Φ((λ̃ + βMu − R_max + Δ_r)/σ_Z)] − log E_u[Φ((λ̃ + βMu − R_max)/σ_Z)]:
    /// the cost of one rejection.
    pub kappa: f64,
    /// ρ = log E_u[Φ((Δ_r − λ̃ − βMu)/σ_Z)] − log E_u[Φ((−λ̃ − βMu)/σ_Z)]:
    /// the cost of the accepting round.
    pub accept: f64,
    /// Condition number of the two differences (the larger of |terms|/|κ|
    /// and |terms|/|ρ|). Each log E_u[Φ] term is accurate to ~1e-16 of its
    /// size, so κ and ρ are accurate to ~1e-16·`condition` relative
    /// (`budget` refuses points where 4e-16·`condition`, two rounding errors per
    /// term, exceeds 1e-10).
    pub condition: f64,
}

impl Phase2Terms {
    /// With βM = R_max + σ_Z·L − λ̃; when βM ≤ 0 the acceptance is the plain
    /// threshold r̃ ≥ λ̃, i.e. the same formula with βM = 0.
    pub fn new(lambda_tilde: f64, sigma_z: f64, r_max: f64, delta_r: f64, l: f64) -> Self {
        let beta_m = (r_max + sigma_z * l - lambda_tilde).max(0.0);
        // The four intervals of Φ's argument, each end computed from the
        // inputs directly (λ̃ − R_max + βM = σ_Z·L when βM > 0), never as
        // start + width, which cancels when the width is large.
        let s = sigma_z;
        let (k_num, k_den, r_num, r_den) = if beta_m > 0.0 {
            (
                ((lambda_tilde - r_max + delta_r) / s, delta_r / s + l),
                ((lambda_tilde - r_max) / s, l),
                ((delta_r - r_max) / s - l, (delta_r - lambda_tilde) / s),
                (-r_max / s - l, -lambda_tilde / s),
            )
        } else {
            let p = |x: f64| (x, x);
            (
                p((lambda_tilde - r_max + delta_r) / s),
                p((lambda_tilde - r_max) / s),
                p((delta_r - lambda_tilde) / s),
                p(-lambda_tilde / s),
            )
        };
        let (kappa, ck) = shifted_log_ratio(k_num, k_den, delta_r / s);
        let (accept, ca) = shifted_log_ratio(r_num, r_den, delta_r / s);
        let condition = ck.max(ca);
        Self {
            kappa,
            accept,
            condition,
        }
    }

    /// ε_2^post(t) for t ∈ [1, n+1] (t = n+1: all rejected).
    pub fn eps_post(&self, t: usize, n: usize) -> f64 {
        if t > n {
            n as f64 * self.kappa
        } else {
            (t - 1) as f64 * self.kappa + self.accept
        }
    }

    /// E[ε_2^post(t)] over a halting law given by its three sufficient
    /// statistics: E[(t − 1)·1{t ≤ n}], P(t ≤ n) and P(t = n + 1). With 0/1
    /// indicators (one realised t) it equals [`Self::eps_post`].
    pub fn expected_eps_post(
        &self,
        rejections_before_accept: f64,
        accepted: f64,
        fallback: f64,
        n: usize,
    ) -> f64 {
        self.kappa * rejections_before_accept
            + self.accept * accepted
            + n as f64 * self.kappa * fallback
    }

    /// Worst case over outcomes t ∈ [1, n+1].
    pub fn eps_max_over_t(&self, n: usize) -> f64 {
        (n - 1) as f64 * self.kappa + self.kappa.max(self.accept)
    }
}

/// Pure ε of PrivBoN with Gaussian noise N(0, σ²) over n candidates with
/// rewards in [0, R_max] and sensitivity Δ_r — Gaussian Report Noisy Max
/// (paper `thm:gaussian_priv`, eq. `eq:gaussian_mbon_eps`):
/// ε = log E_z[Φ(z − (R_max − 2Δ_r)/σ)^{n−1}] − log E_z[Φ(z − R_max/σ)^{n−1}],
/// evaluated by [`super::rnm`] (accurate to 1e-10 over its accepted range,
/// [`super::rnm::check_range`]).
pub fn privbon_gauss_eps(r_max: f64, delta_r: f64, sigma: f64, n: usize) -> f64 {
    super::rnm::privbon_gauss_eps(r_max, delta_r, sigma, n)
}

/// Worst-case per-query ε of PrivITP over outcomes t ∈ [1, n+1] and over λ̃
/// in the clamp interval [lo, hi] (design §8): ε_1 + max_λ̃ ε_2^post-max(λ̃).
/// κ and ρ are smooth in λ̃; the maximum is [`maximise_on_interval`]'s.
pub fn privitp_eps_max(
    eps1: f64,
    (lo, hi): (f64, f64),
    sigma_z: f64,
    r_max: f64,
    delta_r: f64,
    l: f64,
    n: usize,
) -> f64 {
    let g = |lt: f64| Phase2Terms::new(lt, sigma_z, r_max, delta_r, l).eps_max_over_t(n);
    eps1 + maximise_on_interval(g, lo, hi).1
}
