//! Batch draws: pool indices with or without replacement, from one PCG64
//! stream per (replicate, batch), read as 32-bit halves.

use super::Sampling;
use super::lockstep::SimdLevel;
use super::pcg::Pcg64Words;

/// A PCG64 stream read as 32-bit words: each 64-bit output gives two, its
/// low half first, then its high half.
///
/// Why: an index below a 32-bit range needs 32 random bits (Canon's
/// method), and rand's `random_range` over `Pcg64` throws the other half of
/// every 64-bit output away; the 128-bit generator step is then half of a
/// draw's cost, and the batch draws (819 M per bench-paper run) a fifth of
/// the run. The halves of PCG64's XSL-RR output are both full-period
/// equidistributed 32-bit outputs, so the draws keep their law; the stream
/// of indices is rand's `random_range` driven by this word stream
/// (`tests::index_below_is_rands_random_range_over_halves`).
pub(crate) struct HalfWords {
    rng: Pcg64Words,
    /// The high half of the last 64-bit output, when not yet used.
    spare: Option<u32>,
}

impl HalfWords {
    pub(crate) fn new(rng: Pcg64Words) -> Self {
        Self { rng, spare: None }
    }

    /// The next 32-bit word.
    #[inline(always)]
    pub(crate) fn next_u32(&mut self) -> u32 {
        match self.spare.take() {
            Some(h) => h,
            None => {
                let w = self.rng.next_u64();
                self.spare = Some((w >> 32) as u32);
                w as u32
            }
        }
    }

    /// The next 64-bit word: two 32-bit words, the first as the low half.
    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        let lo = self.next_u32();
        u64::from(lo) | (u64::from(self.next_u32()) << 32)
    }
}

/// Draws pool indices with or without replacement.
pub(crate) struct Drawer {
    rng: HalfWords,
    without: bool,
    perm: Vec<usize>,
    drawn: usize,
    /// Draw with [`super::draw_avx512`] (the CPU has AVX-512F/DQ and the
    /// plan's SIMD level allows it).
    avx512: bool,
}

impl Drawer {
    pub(crate) fn new(rng: Pcg64Words, pool: usize, sampling: Sampling, simd: SimdLevel) -> Self {
        let without = sampling == Sampling::WithoutReplacement;
        Self {
            avx512: simd.capped() == SimdLevel::Avx512,
            rng: HalfWords::new(rng),
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

    /// `out.len()` next indices, as [`Self::next`] would give them one by
    /// one. With replacement and a 32-bit pool the common case takes both
    /// halves of one 64-bit output at a time (two independent Canon
    /// multiplies, no per-draw bookkeeping of the spare half); the rare
    /// draw in Canon's biased zone, and everything else, goes the one-by-one
    /// way, so the numbers are the same.
    pub(crate) fn fill(&mut self, pool: usize, out: &mut [usize]) {
        let r32 = match u32::try_from(pool) {
            Ok(r) if !self.without => r,
            _ => {
                out.iter_mut().for_each(|o| *o = self.next(pool));
                return;
            }
        };
        let (range, zone) = (u64::from(r32), r32.wrapping_neg());
        let mut k = self.drain_spare(pool, out, 0);
        // The common case, with the generator in registers: both halves of
        // one word, two independent Canon multiplies — sixteen indices a
        // block with AVX-512, the scalar loop taking a block the vector code
        // leaves (a biased half) and the rest.
        let mut g = self.rng.rng;
        let mut stop = k;
        while k + 2 <= out.len() {
            if k >= stop {
                #[cfg(all(target_arch = "x86_64", target_pointer_width = "64"))]
                if self.avx512 {
                    // SAFETY: `avx512` is set only when the CPU has AVX-512F/DQ
                    // (`SimdLevel::capped` in `new`, whatever the plan asks for).
                    k += unsafe { super::draw_avx512::fill_blocks(&mut g, r32, &mut out[k..]) };
                }
                stop = (k + 16).min(out.len());
                if k + 2 > out.len() {
                    break;
                }
            }
            let w = g.next_u64();
            let (a, b) = (u64::from(w as u32) * range, (w >> 32) * range);
            if a as u32 > zone || b as u32 > zone {
                // Rare: the low half is taken; the high half goes back to
                // the stream and the first draw is finished the general way.
                self.rng.rng = g;
                self.rng.spare = Some((w >> 32) as u32);
                out[k] = finish_canon(&mut self.rng, a, r32);
                k = self.drain_spare(pool, out, k + 1);
                g = self.rng.rng;
                continue;
            }
            out[k] = (a >> 32) as usize;
            out[k + 1] = (b >> 32) as usize;
            k += 2;
        }
        self.rng.rng = g;
        for o in &mut out[k..] {
            *o = index_below(&mut self.rng, pool);
        }
    }

    /// Draws `out[k..]` one at a time while a spare half is pending (the
    /// paired loop of [`Self::fill`] starts at a word boundary); returns the
    /// next position.
    #[inline(always)]
    fn drain_spare(&mut self, pool: usize, out: &mut [usize], mut k: usize) -> usize {
        while self.rng.spare.is_some() && k < out.len() {
            out[k] = index_below(&mut self.rng, pool);
            k += 1;
        }
        k
    }
}

/// `rng.random_range(0..range)` over the word stream `rng`, the same
/// numbers (rand's single-sample path for a `usize` range: Canon's method —
/// one word times the range, and a second word only in the rare biased
/// zone — on 32-bit words when the range fits in 32 bits, else on 64-bit
/// words), written out so it inlines into the draw loops;
/// `tests::index_below_is_rands_random_range_over_halves` holds it to rand's.
#[inline(always)]
pub(crate) fn index_below(rng: &mut HalfWords, range: usize) -> usize {
    let Ok(r32) = u32::try_from(range) else {
        return index_below_64(rng, range as u64) as usize;
    };
    debug_assert!(r32 > 0, "an empty range");
    let wide = u64::from(rng.next_u32()) * u64::from(r32);
    finish_canon(rng, wide, r32)
}

/// Canon's method after its first multiply `wide` = word × range: the high
/// half, corrected by a second word's carry in the biased zone.
#[inline(always)]
fn finish_canon(rng: &mut HalfWords, wide: u64, r32: u32) -> usize {
    let (mut hi, lo) = ((wide >> 32) as u32, wide as u32);
    if lo > r32.wrapping_neg() {
        let new_hi = ((u64::from(rng.next_u32()) * u64::from(r32)) >> 32) as u32;
        hi += u32::from(lo.checked_add(new_hi).is_none());
    }
    hi as usize
}

/// Canon's method on 64-bit words (rand's path for ranges beyond 32 bits).
#[cold]
fn index_below_64(rng: &mut HalfWords, r64: u64) -> u64 {
    let wide = u128::from(rng.next_u64()) * u128::from(r64);
    let (mut hi, lo) = ((wide >> 64) as u64, wide as u64);
    if lo > r64.wrapping_neg() {
        let new_hi = ((u128::from(rng.next_u64()) * u128::from(r64)) >> 64) as u64;
        hi += u64::from(lo.checked_add(new_hi).is_none());
    }
    hi
}

/// Batch B, drawn on demand and shared by every ITP/PrivITP setting (and
/// every λ̃ node) of a replicate: common random numbers, and a walk that
/// stops early never pays for most of the batch.
///
/// Positions are drawn in order from the batch's own stream, so drawing
/// ahead of a walk ([`DRAW_AHEAD`], never beyond the batch's `n`) changes no
/// position's value.
///
/// `items` is scratch reused across replicates: its first `drawn` entries
/// are this replicate's draws, the rest stale values of earlier ones (never
/// read), so a replicate neither clears nor zero-fills it.
pub(crate) struct LazyBatch {
    drawer: Drawer,
    items: Vec<usize>,
    drawn: usize,
    pool: usize,
    n: usize,
}

/// Positions a walk's batch is drawn ahead of it ([`LazyBatch::ensure_ahead`]):
/// a one-at-a-time walk (ITP) pays one call into the drawer per 128
/// candidates, not per candidate, and the lockstep walk's 32-candidate
/// blocks read indices drawn in larger vector runs well before (measured:
/// 32 → 128 ahead, 2 % off PrivITP's run; 1024, 0.7 % more, not worth up to
/// 1024 unused draws when a walk stops early). A walk that stops early
/// leaves at most this many drawn positions unread.
const DRAW_AHEAD: usize = 128;

impl LazyBatch {
    /// A fresh batch of `n` draws from a pool of `pool` items by `drawer`,
    /// reusing `scratch`'s allocation.
    pub(crate) fn new(drawer: Drawer, scratch: Vec<usize>, pool: usize, n: usize) -> Self {
        Self {
            drawer,
            items: scratch,
            drawn: 0,
            pool,
            n,
        }
    }

    /// The scratch, for the next replicate.
    pub(crate) fn into_scratch(self) -> Vec<usize> {
        self.items
    }

    /// Draw positions up to `end` (exclusive, at most `n`) if not yet drawn.
    #[inline]
    pub(crate) fn ensure(&mut self, end: usize) {
        let drawn = self.drawn;
        if drawn < end {
            assert!(end <= self.n, "batch B has {} positions", self.n);
            if self.items.len() < end {
                // Grows only the first time a replicate walks this far.
                self.items.resize(end, 0);
            }
            self.drawer.fill(self.pool, &mut self.items[drawn..end]);
            self.drawn = end;
        }
    }

    /// Draw positions up to `end` and [`DRAW_AHEAD`] beyond (at most `n`),
    /// if `end` is not yet drawn.
    #[inline]
    pub(crate) fn ensure_ahead(&mut self, end: usize) {
        if end > self.drawn {
            self.ensure((end + DRAW_AHEAD).min(self.n).max(end));
        }
    }

    /// Pool index of batch position `t` (0-based, below `n`).
    #[inline]
    pub(crate) fn get(&mut self, t: usize) -> usize {
        self.ensure_ahead(t + 1);
        self.items[t]
    }
}

/// Where Phase 2 takes its candidates from.
pub(crate) enum Candidates<'a> {
    Fresh(&'a mut LazyBatch),
    Shared(&'a [usize]),
}

impl Candidates<'_> {
    /// Pool indices of positions `start..start + len` (drawn if need be).
    #[inline]
    pub(crate) fn block(&mut self, start: usize, len: usize) -> &[usize] {
        let end = start + len;
        match self {
            Candidates::Fresh(b) => {
                b.ensure_ahead(end);
                &b.items[start..end]
            }
            Candidates::Shared(a) => &a[start..end],
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
    use super::{HalfWords, index_below};
    use crate::sweep::engine::pcg::Pcg64Words;
    use rand::{Rng, RngExt, TryRng};
    use rand_pcg::Pcg64;
    use std::convert::Infallible;

    /// The oracle's word stream: PCG64 outputs split into halves, written
    /// independently of [`HalfWords`] (a queue of the halves of each word).
    struct Halves(Pcg64, std::collections::VecDeque<u32>);

    impl TryRng for Halves {
        type Error = Infallible;
        fn try_next_u32(&mut self) -> Result<u32, Infallible> {
            if self.1.is_empty() {
                let w = self.0.next_u64();
                self.1.extend([w as u32, (w >> 32) as u32]);
            }
            Ok(self.1.pop_front().expect("a half"))
        }
        fn try_next_u64(&mut self) -> Result<u64, Infallible> {
            let lo = u64::from(self.try_next_u32()?);
            Ok(lo | (u64::from(self.try_next_u32()?) << 32))
        }
        fn try_fill_bytes(&mut self, _: &mut [u8]) -> Result<(), Infallible> {
            unimplemented!("not used by random_range")
        }
    }

    /// The inlined draw gives rand's numbers over the half-word stream,
    /// including ranges where the second word is often needed (just below
    /// 2³², and 3·2³⁰) and ranges beyond 32 bits (rand's 64-bit path).
    #[test]
    fn index_below_is_rands_random_range_over_halves() {
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
            let mut ours = HalfWords::new(Pcg64Words::new(9, 4));
            let mut oracle = Halves(Pcg64::new(9, 4), Default::default());
            for k in 0..20_000 {
                assert_eq!(
                    index_below(&mut ours, range),
                    oracle.random_range(0..range),
                    "range {range}, draw {k}"
                );
            }
        }
    }

    /// `fill` gives the indices `next` gives one by one, whatever the
    /// lengths asked and however often Canon's second word is needed (never;
    /// on 0.2 % or 5 % of the halves, so vector blocks succeed and then one
    /// stops mid-batch; on a quarter or a half, so the scalar loop takes
    /// nearly every block), with and without replacement, at every SIMD
    /// level the CPU has.
    #[test]
    fn fill_is_next_one_by_one() {
        use super::{Drawer, Sampling, SimdLevel};
        for (range, sampling) in [
            (10_000usize, Sampling::WithReplacement),
            // Canon's correction on ~0.2 % and ~5 % of the halves: vector
            // blocks succeed, then one stops mid-batch on a biased half.
            ((1 << 32) / 500 + 1, Sampling::WithReplacement),
            ((1 << 32) / 20 + 1, Sampling::WithReplacement),
            (3 << 30, Sampling::WithReplacement),
            ((1 << 31) + 1, Sampling::WithReplacement),
            (7, Sampling::WithReplacement),
            (1 << 40, Sampling::WithReplacement),
            (5_000, Sampling::WithoutReplacement),
        ] {
            for simd in SimdLevel::available() {
                for seed in 0..20u128 {
                    let mut bulk =
                        Drawer::new(Pcg64Words::new(11 + seed, 2), range, sampling, simd);
                    let mut single =
                        Drawer::new(Pcg64Words::new(11 + seed, 2), range, sampling, simd);
                    let mut len = 0;
                    for chunk in [
                        0usize, 1, 2, 3, 32, 1, 64, 5, 0, 100, 7, 2, 1000, 17, 16, 15, 4096,
                    ] {
                        if sampling == Sampling::WithoutReplacement && len + chunk > range {
                            break;
                        }
                        let mut got = vec![0; chunk];
                        bulk.fill(range, &mut got);
                        let want: Vec<usize> = (0..chunk).map(|_| single.next(range)).collect();
                        assert_eq!(
                            got, want,
                            "{simd:?}, range {range}, seed {seed}, after {len}"
                        );
                        len += chunk;
                    }
                }
            }
        }
    }

    /// Both halves are used, low first: the words are the generator's
    /// outputs cut in two (a check of the oracle's reading too).
    #[test]
    fn half_words_are_the_outputs_halves() {
        let (mut h, mut g) = (HalfWords::new(Pcg64Words::new(3, 1)), Pcg64::new(3, 1));
        for _ in 0..100 {
            let w = g.next_u64();
            assert_eq!((h.next_u32(), h.next_u32()), (w as u32, (w >> 32) as u32));
        }
    }
}
