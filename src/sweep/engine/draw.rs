//! Batch draws: pool indices with or without replacement, from one PCG64
//! stream per (replicate, batch).

use rand::RngExt;
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
    #[inline]
    pub(crate) fn next(&mut self, pool: usize) -> usize {
        if self.without {
            let j = self.drawn + self.rng.random_range(0..pool - self.drawn);
            self.perm.swap(self.drawn, j);
            self.drawn += 1;
            self.perm[self.drawn - 1]
        } else {
            self.rng.random_range(0..pool)
        }
    }
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
        while self.items.len() < end {
            let i = self.drawer.next(self.pool);
            self.items.push(i);
        }
    }

    /// Pool index of batch position `t` (0-based).
    #[inline]
    pub(crate) fn get(&mut self, t: usize) -> usize {
        while self.items.len() <= t {
            let i = self.drawer.next(self.pool);
            self.items.push(i);
        }
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
