//! The selection engine against independent computations. Statistical tests
//! use fixed seeds and a false-alarm rate ≤ 1e-6 (chi-square p-value > 1e-6,
//! or |z| > 5.5), and each is paired with a deliberately broken variant that
//! the same test must reject.

use privalign::math::normal;
use privalign::select::bon::expected_value_with_replacement;
use privalign::select::itp::{ItpAcceptance, PrivItpAcceptance};
use privalign::select::lambda::solve_lambda;
use privalign::select::pool::Pool;
use privalign::select::privbon::{privbon_gumbel_sampled, softmax_weights};
use privalign::select::rejection::{rejection_conditional_visit, rejection_sampled};
use privalign::sweep::engine::*;
use privalign::sweep::seed::StreamKey;
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;
use rand_pcg::Pcg64;

/// Pearson chi-square p-value of observed counts against probabilities
/// (cells with expected count < 5 are pooled into one).
fn chi_square_p(counts: &[u64], probs: &[f64]) -> f64 {
    let total: u64 = counts.iter().sum();
    let (mut stat, mut df) = (0.0, 0usize);
    let (mut rest_o, mut rest_e) = (0.0, 0.0);
    for (&o, &p) in counts.iter().zip(probs) {
        let e = p * total as f64;
        if e < 5.0 {
            rest_o += o as f64;
            rest_e += e;
        } else {
            stat += (o as f64 - e).powi(2) / e;
            df += 1;
        }
    }
    if rest_e >= 5.0 {
        stat += (rest_o - rest_e).powi(2) / rest_e;
        df += 1;
    } else if rest_o > 0.0 && rest_e == 0.0 {
        return 0.0; // an outcome the law says is impossible
    }
    puruspe::gammq((df - 1) as f64 / 2.0, stat / 2.0)
}

const ALPHA: f64 = 1e-6;

fn pool_from(proxy: &[f64]) -> Pool {
    let gold: Vec<f64> = proxy
        .iter()
        .map(|&r| if r > 0.5 { 1.0 } else { 0.0 })
        .collect();
    Pool::new(proxy, &gold)
}

#[test]
fn privbon_conditional_law_matches_gumbel_argmax() {
    let proxy = [0.1, 0.9, 0.5, 0.5, 0.75, 0.3, 0.95];
    let pool = pool_from(&proxy);
    let batch: Vec<usize> = vec![0, 1, 2, 3, 4, 5, 6, 1];
    let sigma = 0.3;
    let mut rng = Pcg64::seed_from_u64(11);
    let draws = 200_000;
    let mut counts = vec![0u64; batch.len()];
    for _ in 0..draws {
        counts[privbon_gumbel_sampled(&pool, &batch, sigma, &mut rng)] += 1;
    }
    let mut w = Vec::new();
    softmax_weights(&pool, &batch, sigma, &mut w);
    let p = chi_square_p(&counts, &w);
    assert!(p > ALPHA, "conditional law rejected: p = {p:e}");
    // Broken variant: σ perturbed by 10% must be rejected by the same test.
    softmax_weights(&pool, &batch, sigma * 1.1, &mut w);
    let p_bad = chi_square_p(&counts, &w);
    assert!(p_bad < ALPHA, "a 10% σ error went unnoticed: p = {p_bad:e}");
}

/// The halting law of the conditional walk, positions 1..n then fallback.
fn conditional_law(pool: &Pool, batch: &[usize], prob: impl Fn(f64) -> f64) -> Vec<f64> {
    let n = batch.len();
    let mut law = vec![0.0; n + 1];
    let mut t = 0;
    rejection_conditional_visit(
        pool,
        n,
        || {
            t += 1;
            batch[t - 1]
        },
        |i| prob(pool.proxy(i)),
        |t, p| law[t - 1] += p,
    );
    law
}

#[test]
fn itp_conditional_law_matches_literal_rejection_sampler() {
    let proxy = [0.05, 0.2, 0.35, 0.5, 0.62, 0.8, 0.9];
    let pool = pool_from(&proxy);
    let batch_a = [0, 1, 2, 3, 4, 5, 6, 3];
    let batch_b = [2, 6, 0, 4, 4, 1];
    let beta = 0.1;
    let r: Vec<f64> = batch_a.iter().map(|&i| proxy[i]).collect();
    let acc = ItpAcceptance::new(solve_lambda(&r, beta), beta, 1.0);
    let law = conditional_law(&pool, &batch_b, |x| acc.prob(x));
    assert!(
        law[batch_b.len()] > 0.01,
        "the test needs visible fallback mass"
    );
    let mut rng = Pcg64::seed_from_u64(5);
    let mut counts = vec![0u64; batch_b.len() + 1];
    for _ in 0..200_000 {
        let mut t = 0;
        let (_, halt) = rejection_sampled(
            batch_b.len(),
            &mut rng,
            || {
                t += 1;
                batch_b[t - 1]
            },
            |i, r| r.random::<f64>() < acc.prob(proxy[i]),
            |_| 0,
        );
        counts[halt - 1] += 1;
    }
    let p = chi_square_p(&counts, &law);
    assert!(p > ALPHA, "ITP law rejected: p = {p:e}");
    // Broken: β off by 10%.
    let bad = ItpAcceptance::new(solve_lambda(&r, beta * 1.1), beta * 1.1, 1.0);
    let p_bad = chi_square_p(&counts, &conditional_law(&pool, &batch_b, |x| bad.prob(x)));
    assert!(p_bad < ALPHA, "a 10% β error went unnoticed: p = {p_bad:e}");
}

#[test]
fn privitp_conditional_law_matches_literal_noisy_sampler() {
    let proxy = [0.05, 0.2, 0.35, 0.5, 0.62, 0.8, 0.9];
    let pool = pool_from(&proxy);
    let batch_b = [2, 6, 0, 4, 4, 1, 3, 5];
    let (lambda_tilde, sigma_z, l) = (0.55, 0.15, 4.0);
    let acc = PrivItpAcceptance::new(lambda_tilde, sigma_z, 1.0, l);
    let law = conditional_law(&pool, &batch_b, |x| acc.prob(x));
    assert!(
        law[batch_b.len()] > 0.01,
        "the test needs visible fallback mass"
    );
    let mut rng = Pcg64::seed_from_u64(9);
    let mut counts = vec![0u64; batch_b.len() + 1];
    for _ in 0..200_000 {
        let mut t = 0;
        let (_, halt) = rejection_sampled(
            batch_b.len(),
            &mut rng,
            || {
                t += 1;
                batch_b[t - 1]
            },
            |i, r| {
                let z: f64 = r.sample(StandardNormal);
                let u: f64 = r.random::<f64>();
                acc.coin(proxy[i] + sigma_z * z, u)
            },
            |_| 0,
        );
        counts[halt - 1] += 1;
    }
    let p = chi_square_p(&counts, &law);
    assert!(p > ALPHA, "PrivITP law rejected: p = {p:e}");
    // Broken: the acceptance without query noise (plain ITP rule at λ̃).
    let bad = PrivItpAcceptance::new(lambda_tilde, sigma_z * 0.9, 1.0, l);
    let p_bad = chi_square_p(&counts, &conditional_law(&pool, &batch_b, |x| bad.prob(x)));
    assert!(
        p_bad < ALPHA,
        "a 10% σ_Z error went unnoticed: p = {p_bad:e}"
    );
    // M ≤ 0 case: acceptance is 1{r̃ ≥ λ̃}, i.e. Φ((r̂ − λ̃)/σ_Z).
    let high = PrivItpAcceptance::new(1.0 + sigma_z * l + 0.1, sigma_z, 1.0, l);
    assert!((high.prob(0.9) - normal::cdf((0.9 - high.lambda_tilde) / sigma_z)).abs() < 1e-15);
}

fn key<'a>(prompt: &'a str, n: usize) -> StreamKey<'a> {
    StreamKey {
        seed: 1,
        dataset: "test",
        reward_model: "rm",
        prompt_id: prompt,
        n,
    }
}

fn cfg(algorithms: Vec<Algorithm>, replicates: usize, estimator: Estimator) -> EngineConfig {
    EngineConfig::new(algorithms, replicates, estimator)
}

fn privitp(sigma: f64, beta: f64) -> Algorithm {
    Algorithm::PrivItp(PrivItpParams::split_half(sigma, beta))
}

/// A pool on a coarse grid (many ties) with binary correctness.
fn grid_pool(size: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut rng = Pcg64::seed_from_u64(seed);
    let proxy: Vec<f64> = (0..size)
        .map(|_| f64::from(rng.random_range(0..10u32)) / 10.0)
        .collect();
    let gold: Vec<f64> = proxy
        .iter()
        .map(|&r| {
            if rng.random::<f64>() < 0.2 + 0.6 * r {
                1.0
            } else {
                0.0
            }
        })
        .collect();
    (proxy, gold)
}

#[test]
fn bon_bootstrap_matches_closed_forms() {
    let (proxy, gold) = grid_pool(30, 3);
    let pool = Pool::new(&proxy, &gold);
    let reps = 20_000;
    let n = 15;
    let m = run_item(
        &pool,
        n,
        &key("p", n),
        &cfg(vec![Algorithm::Bon], reps, Estimator::Conditional),
    );
    let acc = m[0].values.gold;
    let p32: Vec<f32> = proxy.iter().map(|&x| x as f32).collect();
    let g32: Vec<f32> = gold.iter().map(|&x| x as f32).collect();
    let exact = expected_value_with_replacement(&p32, &g32, n as u32);
    // Per-replicate accuracy lies in [0, 1], so its sd ≤ ½.
    let tol = 5.5 * 0.5 / (reps as f64).sqrt();
    assert!(
        (acc - exact).abs() < tol,
        "bootstrap {acc} vs exact {exact} (tol {tol})"
    );
    let wrong = expected_value_with_replacement(&p32, &g32, n as u32 + 3);
    assert!(
        (acc - wrong).abs() > tol,
        "the test cannot tell n from n + 3"
    );

    // Without replacement: P(max in tie group) = [C(H, n) − C(L, n)]/C(N, n).
    let mut c = cfg(vec![Algorithm::Bon], reps, Estimator::Conditional);
    c.sampling = Sampling::WithoutReplacement;
    let m = run_item(&pool, n, &key("p", n), &c);
    let hyper = hypergeometric_bon(&proxy, &gold, n);
    assert!(
        (m[0].values.gold - hyper).abs() < tol,
        "{} vs {hyper}",
        m[0].values.gold
    );
    assert!(
        (hyper - exact).abs() > tol,
        "the two sampling schemes should differ here"
    );
}

fn choose(n: usize, k: usize) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

fn hypergeometric_bon(proxy: &[f64], gold: &[f64], n: usize) -> f64 {
    let mut levels: Vec<f64> = proxy.to_vec();
    levels.sort_by(f64::total_cmp);
    levels.dedup();
    let total = choose(proxy.len(), n);
    levels
        .iter()
        .map(|&v| {
            let below = proxy.iter().filter(|&&x| x < v).count();
            let at_most = proxy.iter().filter(|&&x| x <= v).count();
            let group: Vec<f64> = proxy
                .iter()
                .zip(gold)
                .filter(|(x, _)| **x == v)
                .map(|(_, g)| *g)
                .collect();
            let mean = group.iter().sum::<f64>() / group.len() as f64;
            (choose(at_most, n) - choose(below, n)) / total * mean
        })
        .sum()
}

#[test]
fn privbon_limits_bon_and_tilted_policy() {
    let (proxy, gold) = grid_pool(30, 8);
    let pool = Pool::new(&proxy, &gold);
    let n = 16;
    let m = run_item(
        &pool,
        n,
        &key("p", n),
        &cfg(
            vec![Algorithm::Bon, Algorithm::PrivBon { sigma: 1e-9 }],
            300,
            Estimator::Conditional,
        ),
    );
    assert!(
        (m[0].values.gold - m[1].values.gold).abs() < 1e-12,
        "σ → 0 must equal BoN with ties shared"
    );
    assert!((m[0].values.proxy - m[1].values.proxy).abs() < 1e-12);

    // n → ∞: P(select item j) → π0(j)·e^{r̂_j/σ}/Z (prop:gumbel_policy (b)).
    let proxy: [f64; 5] = [0.0, 0.3, 0.6, 0.6, 1.0];
    let sigma: f64 = 0.4;
    let z: f64 = proxy.iter().map(|r| (r / sigma).exp()).sum();
    let n = 4096;
    for j in 0..proxy.len() {
        let indicator: Vec<f64> = (0..proxy.len())
            .map(|i| if i == j { 1.0 } else { 0.0 })
            .collect();
        let pool = Pool::new(&proxy, &indicator);
        let m = run_item(
            &pool,
            n,
            &key("t", n),
            &cfg(
                vec![Algorithm::PrivBon { sigma }],
                40,
                Estimator::Conditional,
            ),
        );
        let tilted = (proxy[j] / sigma).exp() / z;
        assert!(
            (m[0].values.gold - tilted).abs() < 2e-3,
            "item {j}: {} vs tilted {tilted}",
            m[0].values.gold
        );
    }
}

#[test]
fn conditional_and_sampled_estimators_agree() {
    let (proxy, gold) = grid_pool(60, 21);
    let pool = Pool::new(&proxy, &gold);
    let n = 8;
    let algs = vec![
        Algorithm::Bon,
        Algorithm::PrivBon { sigma: 0.2 },
        Algorithm::Itp {
            beta: 0.05,
            batches: Batches::Fresh,
        },
        privitp(0.2, 0.05),
    ];
    let reps = 40_000;
    let c = run_item(
        &pool,
        n,
        &key("p", n),
        &cfg(algs.clone(), reps, Estimator::Conditional),
    );
    let s = run_item(
        &pool,
        n,
        &key("p", n),
        &cfg(algs.clone(), reps, Estimator::Sampled),
    );
    // Each sampled replicate's accuracy is 0/1 (sd ≤ ½); conditional ones vary less.
    let tol = 5.5 * 0.5 * (2.0 / reps as f64).sqrt();
    for (k, a) in algs.iter().enumerate() {
        let (x, y) = (c[k].values.gold, s[k].values.gold);
        assert!(
            (x - y).abs() < tol,
            "{}: conditional {x} vs sampled {y}",
            a.name()
        );
    }
    // Halting time too (t ∈ [1, n+1], sd ≤ (n)/2).
    for k in [2, 3] {
        let (x, y) = (c[k].halting_time.unwrap(), s[k].halting_time.unwrap());
        let tol_t = 5.5 * (n as f64 / 2.0) * (2.0 / reps as f64).sqrt();
        assert!((x - y).abs() < tol_t, "{}: E[t] {x} vs {y}", algs[k].name());
    }
    // PrivITP's expected ε: the conditional E[ε_1 + ε_2^post(t)] against the
    // mean of realised costs (each in [ε_1, ε_1 + n·κ_max]; bounded sd).
    let (ce, se) = (c[3].eps.unwrap(), s[3].eps.unwrap());
    assert!(
        (ce - se).abs() < 0.02 * ce,
        "PrivITP ε: conditional {ce} vs sampled {se}"
    );
    // Broken variant: PrivBoN's conditional at 1.5σ differs detectably.
    let bad = run_item(
        &pool,
        n,
        &key("p", n),
        &cfg(
            vec![Algorithm::PrivBon { sigma: 0.3 }],
            reps,
            Estimator::Conditional,
        ),
    );
    assert!((bad[0].values.gold - s[1].values.gold).abs() > tol);
}

#[test]
fn privitp_with_vanishing_noise_is_itp() {
    let (proxy, gold) = grid_pool(50, 4);
    let pool = Pool::new(&proxy, &gold);
    let n = 32;
    let m = run_item(
        &pool,
        n,
        &key("p", n),
        &cfg(
            vec![
                Algorithm::Itp {
                    beta: 0.1,
                    batches: Batches::Fresh,
                },
                privitp(1e-7, 0.1),
            ],
            200,
            Estimator::Conditional,
        ),
    );
    assert!(
        (m[0].values.gold - m[1].values.gold).abs() < 1e-4,
        "{:?} vs {:?}",
        m[0],
        m[1]
    );
    assert!((m[0].halting_time.unwrap() - m[1].halting_time.unwrap()).abs() < 1e-3);
}

#[test]
fn results_do_not_depend_on_thread_count_or_item_order() {
    let (proxy, gold) = grid_pool(100, 2);
    let pool = Pool::new(&proxy, &gold);
    let algs = vec![
        Algorithm::Bon,
        Algorithm::PrivBon { sigma: 0.1 },
        Algorithm::Itp {
            beta: 0.02,
            batches: Batches::Fresh,
        },
        privitp(0.1, 0.02),
    ];
    let c = cfg(algs, 20, Estimator::Sampled);
    let prompts = ["a", "b", "c", "d"];
    let items: Vec<WorkItem> = prompts
        .iter()
        .flat_map(|p| {
            [2usize, 16, 64].map(|n| WorkItem {
                pool: &pool,
                key: key(p, n),
                n,
            })
        })
        .collect();
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| run_items(&items, &c));
    let two = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap()
        .install(|| run_items(&items, &c));
    assert_eq!(one, two);
    // Any single item recomputed alone gives the same numbers.
    assert_eq!(run_item(&pool, 16, &key("c", 16), &c), one[7]);
}

/// The gaussian synth preset's closed forms (prop:hacking): PrivBoN's proxy
/// win-rate → Φ(σ_r/(σ√2)) and hacking gap E[r̂ − r*] → σ_r²/σ as n → ∞,
/// BoN's win-rate → n/(n+1). Tolerances: 0.01 (win-rate) and 0.02 (gap),
/// ≥ 6 standard errors of the pool's own sampling error at 100,000 responses.
#[test]
fn gaussian_preset_win_rate_and_hacking_gap() {
    use privalign::data::synth::{Preset, SynthOptions, synth};
    let d = tempfile::tempdir().unwrap();
    let raw = d.path().join("raw");
    synth(&SynthOptions {
        preset: Preset::Gaussian,
        prompts: 2,
        responses: 100_000,
        reward_models: Some(vec!["gauss0.3".into()]),
        seed: 5,
        out: raw.clone(),
        force: false,
    })
    .unwrap();
    let report =
        privalign::data::ingest::ingest(&privalign::data::ingest::IngestOptions::parquet_pair(
            raw.join("responses.parquet"),
            vec![("gauss0.3".into(), raw.join("rewards_gauss0.3.parquet"))],
            d.path().join("prep"),
        ))
        .unwrap();
    let ds = privalign::data::prepared::PreparedDataset::load(&report.out).unwrap();
    let sigma_r = 0.3;
    let sigma = 0.3;
    let predicted_win = normal::cdf(sigma_r / (sigma * std::f64::consts::SQRT_2));
    let predicted_gap = sigma_r * sigma_r / sigma;
    let r = ds.reward("gauss0.3").unwrap();
    for (p, w) in ds.offsets.windows(2).enumerate() {
        let proxy: Vec<f64> = r[w[0]..w[1]].iter().map(|&x| f64::from(x)).collect();
        let gold: Vec<f64> = ds.correct[w[0]..w[1]]
            .iter()
            .map(|&x| f64::from(x))
            .collect();
        let pool = Pool::new(&proxy, &gold);
        let id = &ds.prompt_ids[p];
        let n = 4096;
        let m = run_item(
            &pool,
            n,
            &key(id, n),
            &cfg(
                vec![Algorithm::PrivBon { sigma }],
                20,
                Estimator::Conditional,
            ),
        );
        let win = m[0].values.win_proxy;
        assert!(
            (win - predicted_win).abs() < 0.01,
            "{id}: PrivBoN win-rate {win} vs Φ(σ_r/(σ√2)) = {predicted_win}"
        );
        // r* is constant within a prompt, so the hacking gap is E[r̂ − r*] of the selection.
        let gap = m[0].values.proxy - m[0].values.gold;
        assert!(
            (gap - predicted_gap).abs() < 0.02,
            "{id}: hacking gap {gap} vs σ_r²/σ = {predicted_gap}"
        );
        for n in [4usize, 64] {
            let m = run_item(
                &pool,
                n,
                &key(id, n),
                &cfg(vec![Algorithm::Bon], 2000, Estimator::Conditional),
            );
            let bound = n as f64 / (n as f64 + 1.0);
            assert!(
                (m[0].values.win_proxy - bound).abs() < 0.006,
                "BoN win-rate at n={n}: {} vs {bound}",
                m[0].values.win_proxy
            );
        }
        // Broken variant: the win-rate law at 1.2σ is outside the tolerance.
        let wrong = normal::cdf(sigma_r / (1.2 * sigma * std::f64::consts::SQRT_2));
        assert!((win - wrong).abs() > 0.01);
    }
}

/// The literal sampler's fallback draw must be uniform over the pool and
/// independent of the coins that rejected every candidate. (A fallback drawn
/// from a copy of the coin stream reuses the first coin's bits, which are
/// biased by the conditioning on rejection; this test rejects that design.)
#[test]
fn sampled_fallback_is_uniform_and_independent_of_the_coins() {
    let size = 10;
    let mut rng = Pcg64::seed_from_u64(12);
    let mut counts = vec![0u64; size];
    let mut draws = 0;
    while draws < 100_000 {
        let (i, t) = rejection_sampled(
            1,
            &mut rng,
            || 0,
            // Reject exactly when the coin's uniform is in its upper half.
            |_, r| r.random::<f64>() < 0.5,
            |r| r.random_range(0..size),
        );
        if t == 2 {
            counts[i] += 1;
            draws += 1;
        }
    }
    let p = chi_square_p(&counts, &vec![1.0 / size as f64; size]);
    assert!(p > ALPHA, "fallback not uniform: p = {p:e} {counts:?}");
    // Broken variant: a fallback from a clone of the coin stream taken before the
    // coins, read the way the coin reads it (so it sees the same bits).
    let mut rng = Pcg64::seed_from_u64(12);
    let mut counts = vec![0u64; size];
    let mut draws = 0;
    while draws < 100_000 {
        let mut copy = rng.clone();
        let (i, t) = rejection_sampled(
            1,
            &mut rng,
            || 0,
            |_, r| r.random::<f64>() < 0.5,
            |_| (copy.random::<f64>() * size as f64) as usize,
        );
        if t == 2 {
            counts[i] += 1;
            draws += 1;
        }
    }
    assert!(
        chi_square_p(&counts, &vec![1.0 / size as f64; size]) < ALPHA,
        "{counts:?}"
    );
}
