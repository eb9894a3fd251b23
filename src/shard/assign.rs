//! Which units shard K of N runs: a contiguous range of the sweep's unit
//! list, the first `U mod N` shards one unit longer than the rest.
//!
//! Contiguous, because the unit list is in cells-file order: a shard's unit
//! files are then one run of the merged file, and neighbouring units share
//! their dataset and reward model (one transform, one window of data). The
//! split depends only on U and N, never on timing, so a requeued or
//! resubmitted shard recomputes exactly the units it owned.

use std::ops::Range;

/// The units of shard `k` of `n` among `units` (k < n).
pub fn shard_range(units: usize, k: usize, n: usize) -> Range<usize> {
    assert!(k < n, "shard {k} of {n}");
    let (q, r) = (units / n, units % n);
    let start = k * q + k.min(r);
    let len = q + usize::from(k < r);
    start..start + len
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every unit in exactly one shard, in order, sizes differing by ≤ 1.
    #[test]
    fn partitions_in_order() {
        for units in 0..40 {
            for n in 1..12 {
                let ranges: Vec<Range<usize>> = (0..n).map(|k| shard_range(units, k, n)).collect();
                let flat: Vec<usize> = ranges.iter().flat_map(|r| r.clone()).collect();
                assert_eq!(flat, (0..units).collect::<Vec<_>>(), "U={units} N={n}");
                let lens: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
                let (lo, hi) = (lens.iter().min().unwrap(), lens.iter().max().unwrap());
                assert!(hi - lo <= 1, "U={units} N={n}: {lens:?}");
            }
        }
        assert_eq!(shard_range(10, 0, 3), 0..4);
        assert_eq!(shard_range(10, 1, 3), 4..7);
        assert_eq!(shard_range(10, 2, 3), 7..10);
    }
}
