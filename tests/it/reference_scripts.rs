//! The reference scripts' conventions (issue 15, item 4) in the engine, each
//! against a brute-force enumeration of the procedure on a tiny pool: every
//! ordered batch drawn without replacement × every accept/reject pattern of
//! the coins. The engine's conditional estimator is exact given a batch, so
//! its replicate mean differs from the enumeration only by batch sampling;
//! each check is a z-test at |z| < 5.3 (two-sided α ≈ 1e-7) with the SE from
//! the enumeration's own spread, fixed seeds, and a deliberately wrong
//! variant shown to fail it.

use privalign::select::lambda::solve_lambda;
use privalign::select::pool::{Pool, Values};
use privalign::select::reference_scripts::{
    Acceptance, Conventions, Envelope, Fallback, ItpConventions, PrivItpConventions,
};
use privalign::sweep::engine::{
    Algorithm, Batches, EngineConfig, Estimator, PrivItpParams, Sampling, run_item,
};
use privalign::sweep::seed::StreamKey;

const N: usize = 3;
const Z: f64 = 5.3;

fn pool() -> Pool {
    // Rewards in [0, 1], the top two correct: the batch envelope (always
    // accepting the batch's best) and the paper's (often falling back) differ
    // by ~15 points, and the fallback credit matters.
    Pool::new(&[0.5, 0.45, 0.3, 0.2, 0.1], &[1.0, 1.0, 0.0, 0.0, 0.0])
}

/// Another prompt, so that the dataset base differs from the pool mean.
fn other() -> Pool {
    Pool::new(&[0.5, 0.4, 0.2], &[1.0, 1.0, 1.0])
}

fn base() -> Values {
    privalign::select::reference_scripts::dataset_base(&[pool(), other()])
}

/// Every ordered batch of N distinct pool items.
fn batches(size: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for a in 0..size {
        for b in 0..size {
            for c in 0..size {
                if a != b && b != c && a != c {
                    out.push(vec![a, b, c]);
                }
            }
        }
    }
    out
}

/// E[gold] of one sequential pass with acceptance `probs`, by enumerating
/// the 2^N coin patterns; `fallback` is the credit when all are rejected.
fn coins(pool: &Pool, walk: &[usize], probs: &[f64], fallback: f64) -> f64 {
    let mut total = 0.0;
    for mask in 0u32..(1 << walk.len()) {
        let pr: f64 = (0..walk.len())
            .map(|t| {
                if mask >> t & 1 == 1 {
                    probs[t]
                } else {
                    1.0 - probs[t]
                }
            })
            .product();
        total += pr
            * match (0..walk.len()).find(|&t| mask >> t & 1 == 1) {
                Some(t) => pool.values[walk[t]].gold,
                None => fallback,
            };
    }
    total
}

/// Exact E[accuracy] over all batches (mean) and the per-batch sd.
fn enumerate(per_batch: impl Fn(&[usize]) -> f64) -> (f64, f64) {
    let all = batches(pool().len());
    let v: Vec<f64> = all.iter().map(|b| per_batch(b)).collect();
    let m = v.iter().sum::<f64>() / v.len() as f64;
    let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len() as f64).sqrt();
    (m, sd)
}

fn engine(alg: Algorithm, conventions: Conventions, estimator: Estimator, reps: usize) -> f64 {
    metrics(alg, conventions, estimator, reps).values.gold
}

fn metrics(
    alg: Algorithm,
    conventions: Conventions,
    estimator: Estimator,
    reps: usize,
) -> privalign::sweep::engine::Metrics {
    let mut cfg = EngineConfig::new(vec![alg], reps, estimator);
    cfg.sampling = Sampling::WithoutReplacement;
    cfg.conventions = conventions;
    cfg.dataset_base = base();
    let key = StreamKey {
        seed: 3,
        dataset: "tiny",
        reward_model: "rm",
        prompt_id: "p",
        n: N,
    };
    run_item(&pool(), N, &key, &cfg)[0]
}

fn z_ok(got: f64, want: f64, sd: f64, reps: usize) -> bool {
    (got - want).abs() <= Z * sd / (reps as f64).sqrt() + 1e-12
}

const REPS: usize = 6000;

fn itp_batch_max(fallback: Fallback) -> Conventions {
    Conventions {
        itp: ItpConventions {
            envelope: Envelope::BatchMax,
            fallback,
        },
        ..Default::default()
    }
}

/// ITP with the batch envelope, one pass over the same batch: λ̂ from the
/// batch, accept with w_i/max_j w_j.
#[test]
fn itp_batch_envelope_matches_the_enumeration() {
    let p = pool();
    let beta = 0.1;
    let (want, sd) = enumerate(|b| {
        let r: Vec<f64> = b.iter().map(|&i| p.proxy(i)).collect();
        let lam = solve_lambda(&r, beta);
        let w: Vec<f64> = r.iter().map(|&x| ((x - lam) / beta).max(0.0)).collect();
        let m = w.iter().copied().fold(0.0, f64::max);
        let probs: Vec<f64> = w.iter().map(|&x| x / m).collect();
        coins(&p, b, &probs, base().gold)
    });
    let alg = Algorithm::Itp {
        beta,
        batches: Batches::Shared,
    };
    let got = engine(
        alg,
        itp_batch_max(Fallback::DatasetBase),
        Estimator::Conditional,
        REPS,
    );
    assert!(
        z_ok(got, want, sd, REPS),
        "engine {got} vs enumeration {want}"
    );
    // The sampled estimator (literal coins) agrees too.
    let sampled = engine(
        alg,
        itp_batch_max(Fallback::DatasetBase),
        Estimator::Sampled,
        REPS,
    );
    assert!(
        z_ok(sampled, want, 0.5, REPS),
        "sampled {sampled} vs {want}"
    );
    // Broken variant: the paper's envelope does not pass this check.
    let paper = engine(alg, Conventions::default(), Estimator::Conditional, REPS);
    assert!(!z_ok(paper, want, sd, REPS), "paper {paper} vs {want}");
}

/// The paper's envelope with the dataset-wide fallback credit (fresh draws
/// of the pool replaced by the base over both prompts).
#[test]
fn dataset_base_fallback_matches_the_enumeration() {
    let p = pool();
    let beta = 0.1;
    let credit = base().gold;
    let per_batch = |fb: f64| {
        let p = p.clone();
        move |b: &[usize]| {
            let r: Vec<f64> = b.iter().map(|&i| p.proxy(i)).collect();
            let lam = solve_lambda(&r, beta);
            // The paper's ITP: min(w/M, 1) with βM = R_max − λ (R_max = 1).
            let probs: Vec<f64> = r
                .iter()
                .map(|&x| ((x - lam) / (1.0 - lam)).clamp(0.0, 1.0))
                .collect();
            coins(&p, b, &probs, fb)
        }
    };
    let (want, sd) = enumerate(per_batch(credit));
    let alg = Algorithm::Itp {
        beta,
        batches: Batches::Shared,
    };
    let conv = Conventions {
        itp: ItpConventions {
            envelope: Envelope::Paper,
            fallback: Fallback::DatasetBase,
        },
        ..Default::default()
    };
    let got = engine(alg, conv, Estimator::Conditional, REPS);
    assert!(
        z_ok(got, want, sd, REPS),
        "engine {got} vs enumeration {want}"
    );
    let sampled = engine(alg, conv, Estimator::Sampled, REPS);
    assert!(
        z_ok(sampled, want, 0.5, REPS),
        "sampled {sampled} vs {want}"
    );
    // Broken variant: the pool fallback (the paper's) differs measurably here.
    let (pool_fb, _) = enumerate(per_batch(p.mean.gold));
    assert!((pool_fb - want).abs() > 0.01, "{pool_fb} vs {want}");
    let paper = engine(alg, Conventions::default(), Estimator::Conditional, REPS);
    assert!(!z_ok(paper, want, sd, REPS), "paper {paper} vs {want}");
}

fn privitp(sigma: f64, beta: f64) -> Algorithm {
    let mut p = PrivItpParams::split_half(sigma, beta);
    p.batches = Batches::Shared;
    Algorithm::PrivItp(p)
}

fn privitp_conv(acceptance: Acceptance, draws: usize) -> Conventions {
    Conventions {
        privitp: PrivItpConventions {
            envelope: Envelope::BatchMax,
            fallback: Fallback::DatasetBase,
            acceptance,
            draws,
        },
        ..Default::default()
    }
}

/// PrivITP with the batch envelope. With negligible noise both acceptance
/// conventions reduce to ITP's batch envelope (the enumeration above); with
/// real noise the unbiased law agrees with literal coins, and the scripts'
/// noise-averaged acceptance differs from both (its bias).
#[test]
fn privitp_conventions_match_the_enumeration_and_show_the_bias() {
    let p = pool();
    let beta = 0.1;
    let (want, sd) = enumerate(|b| {
        let r: Vec<f64> = b.iter().map(|&i| p.proxy(i)).collect();
        let lam = solve_lambda(&r, beta);
        let w: Vec<f64> = r.iter().map(|&x| ((x - lam) / beta).max(0.0)).collect();
        let m = w.iter().copied().fold(0.0, f64::max);
        coins(
            &p,
            b,
            &w.iter().map(|&x| x / m).collect::<Vec<_>>(),
            base().gold,
        )
    });
    let reps = 2000;
    for acc in [Acceptance::Exact, Acceptance::NoiseAveraged] {
        let got = engine(
            privitp(1e-9, beta),
            privitp_conv(acc, 3),
            Estimator::Conditional,
            reps,
        );
        assert!(z_ok(got, want, sd, reps), "{acc:?}: {got} vs {want}");
    }
    // Real noise (σ = 0.6, σ_X = σ_Z = 0.3): the exact law vs literal coins.
    let reps = 4000;
    let exact = engine(
        privitp(0.6, beta),
        privitp_conv(Acceptance::Exact, 64),
        Estimator::Conditional,
        reps,
    );
    let literal = engine(
        privitp(0.6, beta),
        privitp_conv(Acceptance::Exact, 64),
        Estimator::Sampled,
        reps,
    );
    // Per-replicate values lie in [0, 1]: sd ≤ 0.5 bounds both estimators' spread.
    assert!(
        (exact - literal).abs() <= Z * 0.5 * (2.0 / reps as f64).sqrt(),
        "exact {exact} vs literal {literal}"
    );
    // The bias: with a noisy λ̃ (σ_X = 3) a draw either accepts at once or
    // rejects the whole batch, so averaging the acceptances first spreads
    // the halting time. Same batches (common random numbers), 64 draws each.
    let noisy_lambda = {
        let mut p = PrivItpParams::split_half(1.0, beta);
        (p.sigma_x, p.sigma_z, p.batches) = (3.0, 0.01, Batches::Shared);
        Algorithm::PrivItp(p)
    };
    let t = |acc| {
        metrics(
            noisy_lambda,
            privitp_conv(acc, 64),
            Estimator::Conditional,
            500,
        )
        .halting_time
        .unwrap()
    };
    let (t_exact, t_avg) = (t(Acceptance::Exact), t(Acceptance::NoiseAveraged));
    assert!(
        (t_avg - t_exact).abs() > 0.1,
        "noise-averaged E[t] {t_avg} vs exact {t_exact}: no bias visible"
    );
}

#[test]
fn the_named_convention_sets_every_key() {
    let text = r#"datasets: [{path: x}]
convention: reference-scripts
reward_models:
  a: {transform: {kind: clip, lo: 0, hi: 1}}
n: [2]
algorithms:
  itp: {beta: [0.1]}
  privitp: {sigma: [0.5], beta: [0.1]}
"#;
    let c = privalign::config::parse(text, &[]).unwrap();
    let v = serde_json::to_value(&c).unwrap();
    assert_eq!(v["sampling"], "without_replacement");
    assert_eq!(v["reward_models"]["a"]["transform"]["kind"], "standardize");
    assert_eq!(
        v["reward_models"]["a"]["transform"]["lo"],
        serde_json::Value::Null
    );
    for alg in ["itp", "privitp"] {
        assert_eq!(v["algorithms"][alg]["batches"], "shared");
        assert_eq!(v["algorithms"][alg]["envelope"], "batch_max");
        assert_eq!(v["algorithms"][alg]["fallback"], "dataset_base");
    }
    assert_eq!(v["algorithms"]["privitp"]["acceptance"], "noise_averaged");
    let conv = privalign::config::resolve::conventions(&c.algorithms);
    assert_eq!(conv.privitp.draws, 150);
    // Without the key nothing changes, and the per-algorithm keys work alone.
    let plain = privalign::config::parse(&text.replace("convention: reference-scripts\n", ""), &[])
        .unwrap();
    assert_eq!(
        privalign::config::resolve::conventions(&plain.algorithms),
        Conventions::default()
    );
    let one = privalign::config::parse(
        &text.replace("convention: reference-scripts\n", "").replace(
            "itp: {beta: [0.1]}",
            "itp: {beta: [0.1], envelope: batch_max, fallback: dataset_base}",
        ),
        &[],
    )
    .unwrap();
    let conv = privalign::config::resolve::conventions(&one.algorithms);
    assert_eq!(conv.itp.envelope, Envelope::BatchMax);
    assert_eq!(conv.privitp, PrivItpConventions::default());
    // Bad values name their key.
    let e = privalign::config::parse(
        &text.replace(
            "beta: [0.1]}\n  privitp",
            "beta: [0.1], envelope: biggest}\n  privitp",
        ),
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("algorithms.itp.envelope: unknown variant `biggest`"),
        "{e}"
    );
    let e = privalign::config::parse(
        &text.replace(
            "sigma: [0.5], beta: [0.1]}",
            "sigma: [0.5], beta: [0.1], noise_draws: 0}",
        ),
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("algorithms.privitp.noise_draws: 0 noise draws"),
        "{e}"
    );
}
