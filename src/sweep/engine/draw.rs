//! Batch draws: pool indices with or without replacement, from one PCG64
//! stream per (replicate, batch).

use rand::{Rng, RngExt};
use rand_pcg::Pcg64;

use super::Sampling;

/// Draws pool indices with or without replacement.
pub(crate) struct Drawer {
    rng: Pcg64,
    without: bool,
    perm: Vec<usize>,
    drawn: usize,
}

impl Drawer {
    pub(crate) fn new(rng: Pcg64, pool: usize, sampling: Sampling) -> Self {
        let without = sampling == Sampling::WithoutReplacement;
        Self {
            rng,
            without,
            perm: if without {
                (0..pool).collect()
            } else {
                Vec::new()
            },
            drawn: 0,
        }
    }

    /// The next index; without replacement, a partial Fisher–Yates shuffle.
    #[inline(always)]
    pub(crate) fn next(&mut self, pool: usize) -> usize {
        if self.without {
            let j = self.drawn + index_below(&mut self.rng, pool - self.drawn);
            self.perm.swap(self.drawn, j);
            self.drawn += 1;
            self.perm[self.drawn - 1]
        } else {
            index_below(&mut self.rng, pool)
        }
    }
}

/// `rng.random_range(0..range)`, the same numbers from the same stream
/// (rand's single-sample path for a `usize` range that fits in 32 bits:
/// one 32-bit word times the range, and a second word only in the rare
/// biased zone — Canon's method), written out so it inlines into the draw
/// loops; `tests::index_below_is_rands_random_range` holds it to rand's.
#[inline(always)]
pub(crate) fn index_below(rng: &mut Pcg64, range: usize) -> usize {
    let Ok(r32) = u32::try_from(range) else {
        return rng.random_range(0..range);
    };
    debug_assert!(r32 > 0, "an empty range");
    let wide = u64::from(rng.next_u32()) * u64::from(r32);
    let (mut hi, lo) = ((wide >> 32) as u32, wide as u32);
    if lo > r32.wrapping_neg() {
        let new_hi = ((u64::from(rng.next_u32()) * u64::from(r32)) >> 32) as u32;
        hi += u32::from(lo.checked_add(new_hi).is_none());
    }
    hi as usize
}

/// Batch B, drawn on demand and shared by every ITP/PrivITP setting (and
/// every λ̃ node) of a replicate: common random numbers, and a walk that
/// stops early never pays for the rest of the batch.
pub(crate) struct LazyBatch {
    pub(crate) drawer: Drawer,
    pub(crate) items: Vec<usize>,
    pub(crate) pool: usize,
}

impl LazyBatch {
    /// Draw positions up to `end` (exclusive) if not yet drawn.
    #[inline]
    pub(crate) fn ensure(&mut self, end: usize) {
        let len = self.items.len();
        if len < end {
            let (drawer, pool) = (&mut self.drawer, self.pool);
            self.items.extend((len..end).map(|_| drawer.next(pool)));
        }
    }

    /// Pool index of batch position `t` (0-based).
    #[inline]
    pub(crate) fn get(&mut self, t: usize) -> usize {
        self.ensure(t + 1);
        self.items[t]
    }
}

/// Where Phase 2 takes its candidates from.
pub(crate) enum Candidates<'a> {
    Fresh(&'a mut LazyBatch),
    Shared(&'a [usize]),
}

impl Candidates<'_> {
    /// Pool indices of positions `start..start + out.len()`.
    #[inline]
    pub(crate) fn fill(&mut self, start: usize, out: &mut [usize]) {
        let end = start + out.len();
        match self {
            Candidates::Fresh(b) => {
                b.ensure(end);
                out.copy_from_slice(&b.items[start..end]);
            }
            Candidates::Shared(a) => out.copy_from_slice(&a[start..end]),
        }
    }

    #[inline]
    pub(crate) fn get(&mut self, t: usize) -> usize {
        match self {
            Candidates::Fresh(b) => b.get(t),
            Candidates::Shared(a) => a[t],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::index_below;
    use rand::{RngExt, SeedableRng};
    use rand_pcg::Pcg64;

    /// The inlined draw gives rand's numbers, including ranges where the
    /// second word is often needed (just below 2³², and 3·2³⁰) and ranges
    /// beyond 32 bits (rand's 64-bit path).
    #[test]
    fn index_below_is_rands_random_range() {
        for range in [
            1usize,
            2,
            3,
            10,
            1000,
            10_000,
            65_537,
            3 << 30,
            (1 << 32) - 1,
            1 << 40,
        ] {
            let (mut a, mut b) = (Pcg64::seed_from_u64(9), Pcg64::seed_from_u64(9));
            for k in 0..20_000 {
                assert_eq!(
                    index_below(&mut a, range),
                    b.random_range(0..range),
                    "range {range}, draw {k}"
                );
            }
        }
    }
}
