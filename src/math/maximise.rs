//! The maximum of a smooth function on a closed interval, used for PrivITP's
//! worst case over the released λ̃ (the accountant's ε_max and the audit's
//! claimed ε). One implementation, so that the two always agree.

/// Grid points of the coarse search (401 evaluations).
const GRID: usize = 400;

/// `(argmax, max)` of `f` on `[lo, hi]`: the best of a 401-point grid,
/// refined by 100 steps of golden-section search between its two
/// neighbours (κ and ρ are smooth in λ̃, so the grid finds the right basin
/// and golden section the last digits). A degenerate interval (`hi ≤ lo`)
/// is the point `lo`.
pub fn maximise_on_interval(f: impl Fn(f64) -> f64, lo: f64, hi: f64) -> (f64, f64) {
    if hi <= lo {
        return (lo, f(lo));
    }
    let step = (hi - lo) / GRID as f64;
    let (mut best_i, mut best) = (0, f64::NEG_INFINITY);
    for i in 0..=GRID {
        let v = f(lo + i as f64 * step);
        if v > best {
            best = v;
            best_i = i;
        }
    }
    let mut best_x = lo + best_i as f64 * step;
    let (mut a, mut b) = (
        (lo + (best_i as f64 - 1.0) * step).max(lo),
        (lo + (best_i as f64 + 1.0) * step).min(hi),
    );
    let phi = 0.5 * (5f64.sqrt() - 1.0);
    for _ in 0..100 {
        let x1 = b - phi * (b - a);
        let x2 = a + phi * (b - a);
        if f(x1) > f(x2) {
            b = x2;
        } else {
            a = x1;
        }
    }
    let mid = 0.5 * (a + b);
    let v = f(mid);
    if v > best {
        best = v;
        best_x = mid;
    }
    (best_x, best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_an_interior_maximum_and_the_ends() {
        let (x, v) = maximise_on_interval(|x| -(x - 0.3137).powi(2), 0.0, 1.0);
        assert!((x - 0.3137).abs() < 1e-7 && v.abs() < 1e-14, "{x} {v}");
        assert_eq!(maximise_on_interval(|x| x, 0.0, 2.0), (2.0, 2.0));
        assert_eq!(maximise_on_interval(|x| -x, -1.0, 1.0), (-1.0, 1.0));
        assert_eq!(maximise_on_interval(|x| x, 0.5, 0.5), (0.5, 0.5));
    }
}
