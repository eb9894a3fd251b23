//! Engine benchmark: the four algorithms on the demo data (100 prompts × 1000
//! responses, reward model `oasst` min-max scaled to [0, 1]), n = 2..4096,
//! 10 replicates — 1200 (prompt, n) work items — with each estimator and with
//! 1 and 2 threads, then each algorithm alone (2 threads, conditional).
//! Prints wall time per configuration (median of 3 runs).
//!
//! Run: `cargo bench --bench engine` (release profile).

use privalign::data::ingest::{IngestOptions, ingest};
use privalign::data::prepared::PreparedDataset;
use privalign::select::pool::Pool;
use privalign::sweep::engine::*;
use privalign::sweep::seed::StreamKey;
use std::path::Path;
use std::time::Instant;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let raw = root.join("data/demo/raw");
    let tmp = tempfile::tempdir().expect("tempdir");
    let report = ingest(&IngestOptions::parquet_pair(
        raw.join("responses.parquet"),
        vec![("oasst".into(), raw.join("rewards_oasst.parquet"))],
        tmp.path().join("demo"),
    ))
    .expect("ingest demo data");
    let ds = PreparedDataset::load(&report.out).expect("load");
    let r = ds.reward("oasst").expect("oasst");
    let (lo, hi) = r
        .iter()
        .fold((f32::MAX, f32::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    let pools: Vec<Pool> = ds
        .offsets
        .windows(2)
        .map(|w| {
            let proxy: Vec<f64> = r[w[0]..w[1]]
                .iter()
                .map(|&x| f64::from((x - lo) / (hi - lo)))
                .collect();
            let gold: Vec<f64> = ds.correct[w[0]..w[1]]
                .iter()
                .map(|&x| f64::from(x))
                .collect();
            Pool::new(&proxy, &gold)
        })
        .collect();
    let ns: Vec<usize> = (1..=12).map(|k| 1 << k).collect();
    let items: Vec<WorkItem> = pools
        .iter()
        .zip(&ds.prompt_ids)
        .flat_map(|(pool, id)| {
            ns.iter().map(move |&n| WorkItem {
                pool,
                key: StreamKey {
                    seed: 0,
                    dataset: "demo",
                    reward_model: "oasst",
                    prompt_id: id,
                    n,
                },
                n,
            })
        })
        .collect();
    let algorithms = vec![
        Algorithm::Bon,
        Algorithm::PrivBon { sigma: 0.1 },
        Algorithm::Itp {
            beta: 0.05,
            batches: Batches::Fresh,
        },
        Algorithm::PrivItp(PrivItpParams::split_half(0.1, 0.05)),
    ];
    println!(
        "engine benchmark: {} work items × 10 replicates",
        items.len()
    );
    let cfg = |algorithms: Vec<Algorithm>, estimator| EngineConfig::new(algorithms, 10, estimator);
    let time = |c: &EngineConfig, threads: usize| -> f64 {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        let mut times: Vec<f64> = (0..3)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(pool.install(|| run_items(&items, c)));
                t.elapsed().as_secs_f64()
            })
            .collect();
        times.sort_by(f64::total_cmp);
        times[1]
    };
    for estimator in [Estimator::Conditional, Estimator::Sampled] {
        for threads in [1usize, 2] {
            let t = time(&cfg(algorithms.clone(), estimator), threads);
            println!("all four, {estimator:?}, {threads} thread(s): median {t:.3} s");
        }
    }
    for a in &algorithms {
        let t = time(&cfg(vec![*a], Estimator::Conditional), 2);
        println!(
            "{} alone, Conditional, 2 threads: median {t:.3} s",
            a.name()
        );
    }
}
