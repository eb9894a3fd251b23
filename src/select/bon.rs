//! Best-of-N: the candidate with the largest r̂; ties share the selection equally.

/// Exact E[value(selected)] of BoN when the n candidates are drawn uniformly
/// **with replacement** from a pool (the paper's bootstrap protocol).
///
/// Sort the pool by reward and group ties. The batch maximum falls in tie group
/// g with probability (H_g/N)^n − (L_g/N)^n, where L_g (H_g) counts pool items
/// with reward below (at most) the group's; given that, the selected candidate
/// is uniform over the group (tied batch members share the selection and each
/// is a uniform draw from the group), so it contributes the group's mean value.
pub fn expected_value_with_replacement(rewards: &[f32], values: &[f32], n: u32) -> f64 {
    assert_eq!(
        rewards.len(),
        values.len(),
        "rewards and values differ in length"
    );
    let pool = rewards.len();
    assert!(pool > 0 && n > 0, "need a non-empty pool and n ≥ 1");
    let mut order: Vec<usize> = (0..pool).collect();
    order.sort_by(|&a, &b| rewards[a].total_cmp(&rewards[b]));
    let big_n = pool as f64;
    let mut total = 0.0;
    let mut lo = 0;
    while lo < pool {
        let mut hi = lo + 1;
        while hi < pool && rewards[order[hi]] == rewards[order[lo]] {
            hi += 1;
        }
        let p = (hi as f64 / big_n).powi(n as i32) - (lo as f64 / big_n).powi(n as i32);
        let mean: f64 = order[lo..hi]
            .iter()
            .map(|&i| f64::from(values[i]))
            .sum::<f64>()
            / (hi - lo) as f64;
        total += p * mean;
        lo = hi;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force over all N^n ordered batches for a tiny pool.
    fn brute(rewards: &[f32], values: &[f32], n: u32) -> f64 {
        let pool = rewards.len();
        let mut total = 0.0;
        let count = pool.pow(n);
        for code in 0..count {
            let mut c = code;
            let batch: Vec<usize> = (0..n)
                .map(|_| {
                    let i = c % pool;
                    c /= pool;
                    i
                })
                .collect();
            let best = batch
                .iter()
                .map(|&i| rewards[i])
                .fold(f32::NEG_INFINITY, f32::max);
            let winners: Vec<usize> = batch
                .iter()
                .copied()
                .filter(|&i| rewards[i] == best)
                .collect();
            let v: f64 =
                winners.iter().map(|&i| f64::from(values[i])).sum::<f64>() / winners.len() as f64;
            total += v;
        }
        total / count as f64
    }

    #[test]
    fn closed_form_matches_enumeration_with_ties() {
        let rewards = [0.5, 1.0, 1.0, 0.2, 1.0];
        let values = [1.0, 0.0, 1.0, 1.0, 0.0];
        for n in 1..=4 {
            let exact = expected_value_with_replacement(&rewards, &values, n);
            let b = brute(&rewards, &values, n);
            assert!((exact - b).abs() < 1e-12, "n={n}: {exact} vs {b}");
        }
    }

    #[test]
    fn n_one_is_pool_mean() {
        let rewards = [3.0, 1.0, 2.0];
        let values = [1.0, 0.0, 0.5];
        assert!((expected_value_with_replacement(&rewards, &values, 1) - 0.5).abs() < 1e-12);
    }
}
