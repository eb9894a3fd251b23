//! The floor of bench-paper: draw the same batch-A indices as the sweep (the
//! same PCG64 streams, keyed by seed, dataset, reward model, prompt, n and
//! replicate), read each candidate's reward and keep the batch maximum — what
//! any implementation of BoN must do at least — and nothing else. Every
//! bench-paper figure is quoted as a multiple of this one.
//!
//! Run: `cargo bench --bench floor -- [DATASET_DIR] [REWARD_MODEL]`
//! (defaults: data/paper/prepared, gemma; n = 2 … 4096, 50 replicates, all
//! cores; `RAYON_NUM_THREADS=1` for one thread). Prints wall seconds, the
//! number of candidate evaluations and their rate per core.

use privalign::data::reader::DatasetReader;
use privalign::sweep::seed::{StreamKey, StreamUse};
use rand::RngExt;
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
                    for _ in 0..n {
                        best = best.max(pool[rng.random_range(0..pool.len())]);
                    }
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
