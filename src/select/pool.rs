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
    mid_ranks_sorted(xs, &bucket_order(xs))
}

/// The integer key with the order of `f64::total_cmp` (flip every bit of
/// negatives, the sign bit of the rest).
#[inline]
fn order_key(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 { !b } else { b | (1 << 63) }
}

/// The value of an [`order_key`].
#[inline]
fn key_value(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// Mid ranks from (key, index) pairs sorted by key: tied values share one
/// rank.
fn mid_ranks_sorted(xs: &[f64], order: &[(u64, usize)]) -> Vec<f64> {
    let n = xs.len();
    let mut out = vec![0.0; n];
    let mut lo = 0;
    while lo < n {
        let x = key_value(order[lo].0);
        let mut hi = lo + 1;
        while hi < n && key_value(order[hi].0) == x {
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

/// Buckets larger than this are sorted on their own before the final
/// insertion pass.
const SMALL_BUCKET: u32 = 32;

/// `xs`'s (key, index) pairs in key order, by a bucket sort: the bucket
/// ⌊(x − min)·n/(max − min)⌋ is a non-decreasing function of x (IEEE
/// subtraction and multiplication by a positive number round
/// monotonically), so concatenating the buckets, each sorted on its own,
/// sorts the whole. With about one value per bucket: one counting pass, one
/// scatter, and one insertion-sort pass over the nearly sorted result (an
/// element never moves past its bucket's start: every earlier bucket holds
/// smaller keys); a bucket of more than [`SMALL_BUCKET`] values is first
/// sorted by a comparison sort, so crowded data stays O(n log n). Non-finite
/// values, or pools beyond 2³² items, take the comparison sort.
/// `tests::bucket_order_is_the_comparison_sorts` holds it to the plain sort.
fn bucket_order(xs: &[f64]) -> Vec<(u64, usize)> {
    let n = xs.len();
    // `f64::min`/`max` skip NaN, so NaN is looked for on its own (it would
    // land in bucket 0 yet sort last).
    let (min, max) = xs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        });
    let scale = n as f64 / (max - min);
    if !(scale.is_finite() && scale > 0.0)
        || u32::try_from(n).is_err()
        || xs.iter().any(|x| x.is_nan())
    {
        return comparison_order(xs);
    }
    let bucket = |x: f64| (((x - min) * scale) as usize).min(n - 1);
    let mut start = vec![0u32; n + 1];
    for &x in xs {
        start[bucket(x) + 1] += 1;
    }
    let mut crowded = false;
    for b in 0..n {
        crowded |= start[b + 1] > SMALL_BUCKET;
        start[b + 1] += start[b];
    }
    let mut order = vec![(0u64, 0usize); n];
    {
        let mut fill = start.clone();
        for (i, &x) in xs.iter().enumerate() {
            let b = bucket(x);
            order[fill[b] as usize] = (order_key(x), i);
            fill[b] += 1;
        }
    }
    if crowded {
        for b in 0..n {
            let (lo, hi) = (start[b] as usize, start[b + 1] as usize);
            if hi - lo > SMALL_BUCKET as usize {
                order[lo..hi].sort_unstable_by_key(|&(k, _)| k);
            }
        }
    }
    for j in 1..n {
        let p = order[j];
        let mut k = j;
        while k > 0 && order[k - 1].0 > p.0 {
            order[k] = order[k - 1];
            k -= 1;
        }
        order[k] = p;
    }
    order
}

/// `xs`'s (key, index) pairs sorted by key with a comparison sort.
fn comparison_order(xs: &[f64]) -> Vec<(u64, usize)> {
    let mut order: Vec<(u64, usize)> = xs
        .iter()
        .enumerate()
        .map(|(i, &x)| (order_key(x), i))
        .collect();
    order.sort_unstable_by_key(|&(k, _)| k);
    order
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

    /// The bucket sort orders keys exactly as the comparison sort (the
    /// pairs may differ only in the order of equal keys, which share a
    /// rank): on continuous values, clipped ones (big tie groups at the
    /// ends), a few distinct values, skewed values crowding one bucket,
    /// signed zeros, and non-finite values (the comparison-sort path).
    #[test]
    fn bucket_order_is_the_comparison_sorts() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(4);
        let mut cases: Vec<Vec<f64>> = vec![
            (0..10_000).map(|_| rng.random::<f64>()).collect(),
            (0..10_000)
                .map(|_| (rng.random::<f64>() * 3.0 - 1.0).clamp(0.0, 1.0))
                .collect(),
            (0..5_000)
                .map(|_| f64::from(rng.random_range(0..7u8)) * 0.1)
                .collect(),
            (0..5_000)
                .map(|_| rng.random::<f64>().powi(40) - 0.5)
                .collect(),
            vec![0.0, -0.0, 0.0, -0.0, 1e-300, -1e-300],
            vec![1.0, f64::NAN, -2.0, f64::INFINITY, 0.5],
            vec![1.0, f64::NAN, -2.0, f64::NAN, 0.5, 0.25],
            vec![3.0],
            vec![1e308, -1e308, 0.0, 5.0],
        ];
        cases.push((0..999).map(|i| f64::from(i % 13) * 1e-9).collect());
        for xs in &cases {
            let (b, c) = (bucket_order(xs), comparison_order(xs));
            let keys = |o: &[(u64, usize)]| o.iter().map(|p| p.0).collect::<Vec<_>>();
            assert_eq!(keys(&b), keys(&c), "{:?}", &xs[..xs.len().min(8)]);
            for &(k, i) in &b {
                assert_eq!(k, order_key(xs[i]));
            }
            assert_eq!(mid_ranks_sorted(xs, &b), mid_ranks_sorted(xs, &c));
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
