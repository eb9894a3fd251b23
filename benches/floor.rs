//! The floor of bench-paper: draw the same batch-A indices as the sweep (the
//! same PCG64 streams, keyed by seed, dataset, reward model, prompt, n and
//! replicate, each 64-bit word giving two indices, low half first, by Canon's
//! method), read each candidate's reward and keep the batch maximum — what
//! any implementation of BoN must do at least — and nothing else. Every
//! bench-paper figure is quoted as a multiple of this one.
//!
//! Run: `cargo bench --bench floor -- [DATASET_DIR] [REWARD_MODEL]`
//! (defaults: data/paper/prepared, gemma; n = 2 … 4096, 50 replicates, all
//! cores; `RAYON_NUM_THREADS=1` for one thread). Prints wall seconds, the
//! number of candidate evaluations and their rate per core.

use privalign::data::reader::DatasetReader;
use privalign::sweep::seed::{StreamKey, StreamUse};
use rand::Rng;
use rand_pcg::Pcg64;
use rayon::prelude::*;
use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = args
        .first()
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("data/paper/prepared"));
    let rm = args.get(1).cloned().unwrap_or_else(|| "gemma".into());
    let reader = DatasetReader::open(&dir).expect("open the dataset (run `just paper-data`)");
    let name = reader.manifest.name.clone();
    let t0 = Instant::now();
    let w = reader
        .read_all(&[rm.as_str()])
        .expect("read the reward column");
    let load = t0.elapsed().as_secs_f64();
    let rewards = w.column(&rm);
    let ns: Vec<usize> = (1..=12).map(|k| 1usize << k).collect();
    let replicates = 50;
    let t = Instant::now();
    let checksum: f64 = (0..reader.prompts())
        .into_par_iter()
        .map(|p| {
            let pool = &rewards[w.offsets[p]..w.offsets[p + 1]];
            let mut s = 0.0;
            for &n in &ns {
                let key = StreamKey {
                    seed: 0,
                    dataset: &name,
                    reward_model: &rm,
                    prompt_id: &reader.prompt_ids[p],
                    n,
                };
                for rep in 0..replicates {
                    let mut rng = key.rng(rep, StreamUse::BatchA);
                    let mut best = f32::NEG_INFINITY;
                    draw(&mut rng, pool.len(), n, |i| best = best.max(pool[i]));
                    s += f64::from(best);
                }
            }
            s
        })
        .sum();
    let secs = t.elapsed().as_secs_f64();
    let evals = reader.prompts() as f64 * replicates as f64 * ns.iter().sum::<usize>() as f64;
    let threads = rayon::current_num_threads();
    println!(
        "floor: {} prompts, n = 2..4096, {replicates} replicates: {:.3} s on {threads} thread(s) ({:.0} M candidate evaluations, {:.0} M/s per core); load {:.2} s; checksum {checksum:.6}",
        reader.prompts(),
        secs,
        evals / 1e6,
        evals / secs / threads as f64 / 1e6,
        load
    );
}

/// `n` indices below `range` (< 2³²) from the 32-bit halves of `rng`'s words,
/// as the sweep draws them: both halves of a word at once; in Canon's rare
/// biased zone the next half corrects the draw and the pairing shifts by one.
#[inline(always)]
fn draw(rng: &mut Pcg64, range: usize, n: usize, mut seen: impl FnMut(usize)) {
    let (r, zone) = (range as u64, (range as u32).wrapping_neg());
    let mut spare: Option<u32> = None;
    let half = |rng: &mut Pcg64, spare: &mut Option<u32>| match spare.take() {
        Some(h) => h,
        None => {
            let w = rng.next_u64();
            *spare = Some((w >> 32) as u32);
            w as u32
        }
    };
    let mut k = 0;
    while k < n {
        if spare.is_none() && k + 2 <= n {
            let w = rng.next_u64();
            let (a, b) = (u64::from(w as u32) * r, (w >> 32) * r);
            if a as u32 <= zone && b as u32 <= zone {
                seen((a >> 32) as usize);
                seen((b >> 32) as usize);
                k += 2;
                continue;
            }
            // Rare: the low half's draw is finished with the next half (the
            // high one) as Canon's correction, or leaves it for the next draw.
            if a as u32 > zone {
                let hi = ((w >> 32) * r) >> 32;
                seen(((a >> 32) + u64::from((a as u32).checked_add(hi as u32).is_none())) as usize);
            } else {
                seen((a >> 32) as usize);
                spare = Some((w >> 32) as u32);
            }
            k += 1;
            continue;
        }
        // One index from the next half (Canon's method with its correction).
        let m = u64::from(half(rng, &mut spare)) * r;
        let mut i = m >> 32;
        if m as u32 > zone {
            let hi = (u64::from(half(rng, &mut spare)) * r) >> 32;
            i += u64::from((m as u32).checked_add(hi as u32).is_none());
        }
        seen(i as usize);
        k += 1;
    }
}
