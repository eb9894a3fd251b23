//! Phase 2 of ITP and PrivITP outside the lockstep walk: the conditional
//! walk a block of candidates at a time, and the literal (sampled) walk.

use rand::RngExt;
use rand_pcg::Pcg64;

use super::draw::Candidates;
use super::prep::PoolPrep;
use super::{Batches, Estimator, Metrics};
use crate::select::pool::Pool;
use crate::select::rejection::{ConditionalWalk, RejectionOutcome, rejection_sampled};

/// Candidates the conditional walk takes from the batch at a time.
const BLOCK: usize = 32;

/// [`crate::select::rejection::rejection_conditional`] over `cand`, a block
/// of positions at a time: the same [`ConditionalWalk`] steps (so the same
/// bits), but no call into the lazy batch's drawer inside the step loop, so
/// the walk's state stays in registers (with a possible call per candidate
/// it went through the stack every step).
pub(super) fn conditional_in_blocks(
    pool: &Pool,
    n: usize,
    cand: &mut Candidates,
    mut prob_of: impl FnMut(usize) -> f64,
) -> RejectionOutcome {
    let mut walk = ConditionalWalk::new();
    let mut t0 = 0;
    'walk: while t0 < n {
        let len = BLOCK.min(n - t0);
        for (j, &i) in cand.block(t0, len).iter().enumerate() {
            if !walk.step(&pool.values[i], prob_of(i), t0 + j + 1).1 {
                break 'walk;
            }
        }
        t0 += len;
    }
    walk.finish(pool, n)
}

/// Phase 2 on batch B (or A when shared) under either estimator, with the
/// acceptance probability of a pool index. Returns the metrics without ε and,
/// for the conditional estimator, the outcome law (for ε_2^post); for the
/// sampled one, the realised halting time.
#[allow(clippy::too_many_arguments)]
pub(super) fn phase2(
    pool: &Pool,
    prep: &PoolPrep,
    n: usize,
    batches: Batches,
    cand: &mut Candidates,
    estimator: Estimator,
    rng: &mut Pcg64,
    mut prob_of: impl FnMut(usize) -> f64,
    mut coin: impl FnMut(f64, &mut Pcg64) -> bool,
) -> (Metrics, RejectionOutcome) {
    let size = pool.len();
    let fresh = batches == Batches::Fresh;
    let phase1 = n as f64;
    match estimator {
        Estimator::Conditional => {
            let o = conditional_in_blocks(pool, n, cand, &mut prob_of);
            let gens = if fresh {
                phase1 + o.phase2_generated
            } else {
                phase1
            };
            (
                Metrics {
                    values: o.values,
                    halting_time: Some(o.halting_time),
                    generations: gens,
                    eps: None,
                },
                o,
            )
        }
        Estimator::Sampled => {
            let mut t = 0usize;
            let next = || {
                let i = cand.get(t);
                t += 1;
                i
            };
            let (sel, t_halt) = rejection_sampled(
                n,
                rng,
                next,
                |i, c| coin(prep.proxy[i], c),
                |c| c.random_range(0..size),
            );
            let gens = if fresh {
                phase1 + t_halt.min(n) as f64
            } else {
                phase1
            };
            let o = RejectionOutcome {
                halting_time: t_halt as f64,
                accepted: if t_halt <= n { 1.0 } else { 0.0 },
                fallback: if t_halt > n { 1.0 } else { 0.0 },
                rejections_before_accept: if t_halt <= n {
                    (t_halt - 1) as f64
                } else {
                    0.0
                },
                ..Default::default()
            };
            (
                Metrics {
                    values: pool.values[sel],
                    halting_time: Some(t_halt as f64),
                    generations: gens,
                    eps: None,
                },
                o,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Candidates, conditional_in_blocks};
    use crate::select::pool::Pool;
    use crate::select::rejection::rejection_conditional;
    use rand::{RngExt, SeedableRng};

    /// Bit for bit the one-candidate-at-a-time walk, on pools with ties,
    /// acceptances of exactly 0 and 1 and out of range (clamped), walks that
    /// stop mid-block, on a block edge or run to n (including n = 1, 31, 32,
    /// 33 and 65); fails if a block's steps are numbered or ended wrongly.
    #[test]
    fn blocks_walk_as_one_at_a_time() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(11);
        for trial in 0..300 {
            let size = rng.random_range(1..60usize);
            let proxy: Vec<f64> = (0..size)
                .map(|_| f64::from(rng.random_range(0..5u32)))
                .collect();
            let gold: Vec<f64> = (0..size).map(|_| rng.random::<f64>()).collect();
            let pool = Pool::new(&proxy, &gold);
            let accept: Vec<f64> = (0..size)
                .map(|_| match rng.random_range(0..6u32) {
                    0 => 0.0,
                    1 => 1.0,
                    2 => 1.5,
                    3 => -0.2,
                    _ => rng.random::<f64>() * [1.0, 0.05, 1e-3][trial % 3],
                })
                .collect();
            let n = [1, 31, 32, 33, 65, rng.random_range(1..400usize)][trial % 6];
            let batch: Vec<usize> = (0..n).map(|_| rng.random_range(0..size)).collect();
            let mut t = 0;
            let want = rejection_conditional(
                &pool,
                n,
                || {
                    t += 1;
                    batch[t - 1]
                },
                |i| accept[i],
            );
            let got =
                conditional_in_blocks(&pool, n, &mut Candidates::Shared(&batch), |i| accept[i]);
            assert_eq!(
                format!("{got:?}"),
                format!("{want:?}"),
                "trial {trial}, n {n}"
            );
        }
    }

    /// On a lazily drawn batch (drawn 128 ahead of the walk, its scratch
    /// reused and longer than n, at every SIMD level, with and without
    /// replacement, n up to the pool size), the walk is the one-at-a-time
    /// walk over one draw per candidate from a second drawer on the same
    /// stream.
    #[test]
    fn lazy_batch_walks_as_drawn_one_at_a_time() {
        use crate::sweep::engine::Sampling;
        use crate::sweep::engine::draw::{Drawer, LazyBatch};
        use crate::sweep::engine::lockstep::SimdLevel;
        use crate::sweep::engine::pcg::Pcg64Words;
        let mut rng = rand_pcg::Pcg64::seed_from_u64(12);
        let mut scratch = vec![usize::MAX; 1000];
        for simd in SimdLevel::available() {
            for trial in 0..120u128 {
                let size = rng.random_range(1..300usize);
                let proxy: Vec<f64> = (0..size).map(|_| rng.random::<f64>()).collect();
                let pool = Pool::new(&proxy, &proxy);
                let scale = [1.0, 0.02, 1e-4][(trial % 3) as usize];
                let accept: Vec<f64> = (0..size).map(|_| rng.random::<f64>() * scale).collect();
                let sampling = if trial % 2 == 0 {
                    Sampling::WithReplacement
                } else {
                    Sampling::WithoutReplacement
                };
                let n = match trial % 4 {
                    0 | 1 => size,
                    _ => rng.random_range(1..=size),
                };
                let drawer = || Drawer::new(Pcg64Words::new(trial, 2), size, sampling, simd);
                let mut single = drawer();
                let want = rejection_conditional(
                    &pool,
                    n,
                    || {
                        let mut i = [0];
                        single.fill(size, &mut i);
                        i[0]
                    },
                    |i| accept[i],
                );
                let mut lazy = LazyBatch::new(drawer(), std::mem::take(&mut scratch), size, n);
                let got = conditional_in_blocks(&pool, n, &mut Candidates::Fresh(&mut lazy), |i| {
                    accept[i]
                });
                scratch = lazy.into_scratch();
                assert_eq!(
                    format!("{got:?}"),
                    format!("{want:?}"),
                    "{simd:?}, trial {trial}, n {n} of {size}, {sampling:?}"
                );
            }
        }
    }
}
