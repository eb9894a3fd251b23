//! One prompt's pool of N responses, with the per-response quantities whose
//! expectation under an algorithm's selection law are the metrics of design §7.

/// Metric values of one response (or their expectation under a selection law).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Values {
    /// r*(y): correctness, or the gold score.
    pub gold: f64,
    /// r̂(y) after the reward transform.
    pub proxy: f64,
    /// P(r*(y) > r*(Y0)) + ½P(r*(y) = r*(Y0)), Y0 a fresh pool draw.
    pub win_gold: f64,
    /// The same with r̂.
    pub win_proxy: f64,
}

impl Values {
    /// `self + w·other`.
    #[inline]
    pub fn add_scaled(&mut self, other: &Values, w: f64) {
        self.gold += w * other.gold;
        self.proxy += w * other.proxy;
        self.win_gold += w * other.win_gold;
        self.win_proxy += w * other.win_proxy;
    }

    pub fn scaled(&self, w: f64) -> Values {
        let mut v = Values::default();
        v.add_scaled(self, w);
        v
    }
}

/// A prompt's pool: per response its [`Values`], plus the pool means (the
/// value of a fresh draw, used by ITP's fallback and as the base policy).
#[derive(Clone, Debug)]
pub struct Pool {
    pub values: Vec<Values>,
    pub mean: Values,
}

/// For each x in `xs`, P(X < x) + ½P(X = x) with X uniform over `xs`.
pub fn mid_ranks(xs: &[f64]) -> Vec<f64> {
    let n = xs.len();
    // Binary values (correctness): two tie groups, counted — the same
    // arithmetic as the sorted path below gives them.
    if xs.iter().all(|&x| x == 0.0 || x == 1.0) {
        let zeros = xs.iter().filter(|&&x| x == 0.0).count();
        let w0 = (0.0 + 0.5 * zeros as f64) / n as f64;
        let w1 = (zeros as f64 + 0.5 * (n - zeros) as f64) / n as f64;
        return xs.iter().map(|&x| if x == 0.0 { w0 } else { w1 }).collect();
    }
    // Sort (key, index) pairs on an integer key with the order of
    // `f64::total_cmp` (flip every bit of negatives, the sign bit of the
    // rest): direct integer compares instead of two indirect loads per
    // comparison. Tied values share one rank, so an unstable sort is enough.
    let key = |x: f64| {
        let b = x.to_bits();
        if b >> 63 == 1 { !b } else { b | (1 << 63) }
    };
    let mut order: Vec<(u64, usize)> = xs.iter().enumerate().map(|(i, &x)| (key(x), i)).collect();
    order.sort_unstable_by_key(|&(k, _)| k);
    let mut out = vec![0.0; n];
    let mut lo = 0;
    while lo < n {
        let mut hi = lo + 1;
        while hi < n && xs[order[hi].1] == xs[order[lo].1] {
            hi += 1;
        }
        let w = (lo as f64 + 0.5 * (hi - lo) as f64) / n as f64;
        for &(_, i) in &order[lo..hi] {
            out[i] = w;
        }
        lo = hi;
    }
    out
}

impl Pool {
    /// Build from transformed proxy rewards r̂ and true rewards r*.
    pub fn new(proxy: &[f64], gold: &[f64]) -> Self {
        assert_eq!(proxy.len(), gold.len());
        assert!(!proxy.is_empty(), "a pool needs at least one response");
        let wg = mid_ranks(gold);
        let wp = mid_ranks(proxy);
        let values: Vec<Values> = (0..proxy.len())
            .map(|i| Values {
                gold: gold[i],
                proxy: proxy[i],
                win_gold: wg[i],
                win_proxy: wp[i],
            })
            .collect();
        let mut mean = Values::default();
        let w = 1.0 / values.len() as f64;
        for v in &values {
            mean.add_scaled(v, w);
        }
        Self { values, mean }
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    #[inline]
    pub fn proxy(&self, i: usize) -> f64 {
        self.values[i].proxy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counting path for binary values agrees bit for bit with the sort.
    #[test]
    fn binary_mid_ranks_match_the_sorted_path() {
        for xs in [
            vec![0.0, 1.0, 1.0, 0.0, 1.0],
            vec![1.0; 7],
            vec![0.0, -0.0, 1.0],
        ] {
            let mut with_half = xs.clone();
            with_half.push(0.5);
            let fast = mid_ranks(&xs);
            // Brute force, as in `mid_ranks_brute_force`.
            for (i, &x) in xs.iter().enumerate() {
                let less = xs.iter().filter(|&&y| y < x).count() as f64;
                let eq = xs.iter().filter(|&&y| y == x).count() as f64;
                assert_eq!(fast[i], (less + 0.5 * eq) / xs.len() as f64);
            }
            assert_eq!(mid_ranks(&with_half).len(), xs.len() + 1);
        }
    }

    #[test]
    fn mid_ranks_brute_force() {
        let xs = [0.0, 1.0, 1.0, 0.5, 1.0];
        let r = mid_ranks(&xs);
        for (i, &x) in xs.iter().enumerate() {
            let less = xs.iter().filter(|&&y| y < x).count() as f64;
            let eq = xs.iter().filter(|&&y| y == x).count() as f64;
            assert!((r[i] - (less + 0.5 * eq) / 5.0).abs() < 1e-15);
        }
        // A pool's mean win-rate against itself is exactly ½.
        let p = Pool::new(&xs, &xs);
        assert!((p.mean.win_gold - 0.5).abs() < 1e-15);
    }
}
