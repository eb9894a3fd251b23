//! Engine benchmark: the four algorithms on the demo data (100 prompts × 1000
//! responses, reward model `oasst` min-max scaled to [0, 1]), n = 2..4096,
//! 50 replicates — 1200 (prompt, n) work items — with each estimator and with
//! 1 and 2 threads. Prints wall time per configuration (median of 3 runs).
//!
//! Run: `cargo bench --bench engine` (release profile).

use privalign::data::ingest::{IngestOptions, IngestSource, ingest};
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
    let report = ingest(&IngestOptions {
        source: IngestSource::ParquetPair {
            responses: raw.join("responses.parquet"),
            rewards: vec![("oasst".into(), raw.join("rewards_oasst.parquet"))],
        },
        out: tmp.path().join("demo"),
        name: None,
        policy: None,
        task: None,
        drop_unscored: false,
        force: false,
    })
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
        "engine benchmark: {} work items × 50 replicates × 4 algorithms",
        items.len()
    );
    for estimator in [Estimator::Conditional, Estimator::Sampled] {
        for threads in [1usize, 2] {
            let cfg = EngineConfig {
                algorithms: algorithms.clone(),
                replicates: 50,
                sampling: Sampling::WithReplacement,
                estimator,
                lambda_noise: LambdaNoise::Quadrature(16),
                privacy: PrivacyParams {
                    r_max: 1.0,
                    delta_r: 1.0,
                    delta: 1e-2,
                    paper_eps1: false,
                },
            };
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("pool");
            let mut times: Vec<f64> = (0..3)
                .map(|_| {
                    let t = Instant::now();
                    let out = pool.install(|| run_items(&items, &cfg));
                    std::hint::black_box(out);
                    t.elapsed().as_secs_f64()
                })
                .collect();
            times.sort_by(f64::total_cmp);
            println!(
                "{estimator:?}, {threads} thread(s): median {:.3} s",
                times[1]
            );
        }
    }
}
