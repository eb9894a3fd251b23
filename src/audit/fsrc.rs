//! FSRC audit (`alg:privitp_fsrc`, `thm:privitp_fsrc_comp`): a run of PrivITP
//! queries on the same neighbouring pair, answered while
//! ε_spent + ε_max < ε_total, each charged its ex-post cost
//! ε_1 + ε_2^post(t; λ̃) — the filter and the ledger of `sweep::fsrc`, with
//! ε_max from `privitp_eps_max`. Every query draws from the literal PrivITP of
//! [`super::mechanisms`].
//!
//! The released transcript (λ̃_τ, t_τ)_τ lives in a space too large to count,
//! so each run is summarised by its privacy-loss statistic
//! log p_D(transcript) − log p_D′(transcript), summed over queries from the
//! closed-form law of [`super::exact::ItpModel`] (the number of queries is a
//! function of the transcript, so it adds no term). By Neyman–Pearson the
//! best events are its upper (or lower) level sets; the statistic is binned
//! in steps of [`LLR_STEP`] and the threshold is chosen on the first half.
//! The event is a valid event whatever the sampler does, so a broken sampler
//! still cannot fake a small bound.
//!
//! Pair: the PrivITP pair of the halting time with the largest exact ε.

use super::empirical::{Counts, histogram, lower_bound_ordered, mix};
use super::run::{itp_case, model};
use super::{AuditRecord, AuditSetting, Fault, claimed};

/// Width of one bin of the privacy-loss statistic.
pub const LLR_STEP: f64 = 0.05;
/// Bins on each side of zero; larger |statistic| share the end bins.
const LLR_HALF_BINS: usize = 1200;

pub fn audit(s: &AuditSetting, fault: Fault) -> AuditRecord {
    let m = model(s);
    let (eps_total, delta_total, _max_q) = claimed::fsrc(s);
    let eps_max = claimed::privitp_max(s);
    let eps1 = claimed::eps1(s);
    let case = (1..=s.n + 1)
        .map(|t| itp_case(s, t, Fault::None))
        .max_by(|a, b| a.exact.total_cmp(&b.exact))
        .expect("n ≥ 1");
    let lam = [case.inputs[0].lambda_hat, case.inputs[1].lambda_hat];
    let q = [&case.pair.batch_b[0], &case.pair.batch_b[1]];
    let bins = 2 * LLR_HALF_BINS;
    let counts: Vec<Counts> = (0..2)
        .map(|side| {
            let input = &case.inputs[side];
            let key = mix(s.seed ^ mix(0xF5C0 ^ side as u64) ^ s.sigma.to_bits());
            histogram(s.trials, bins, key, |rng| {
                let (mut spent, mut llr, mut answered) = (0.0, 0.0, 0usize);
                while spent + eps_max < eps_total {
                    let (lt, t) = input.draw(&m, fault, rng);
                    let cost = eps1 + claimed::eps2_post(s, lt, t, Fault::None);
                    if !(fault == Fault::FsrcSkipLedger && answered == 0) {
                        spent += cost;
                    }
                    llr += m.log_lambda(lt, lam[0]) - m.log_lambda(lt, lam[1])
                        + m.log_halting(q[0], lt, t)
                        - m.log_halting(q[1], lt, t);
                    answered += 1;
                }
                let b = (llr / LLR_STEP).floor() + LLR_HALF_BINS as f64;
                b.clamp(0.0, (bins - 1) as f64) as usize
            })
        })
        .collect();
    let order: Vec<usize> = (0..bins).rev().collect();
    let lb = lower_bound_ordered(
        &counts[0],
        &counts[1],
        &order,
        delta_total,
        1.0 - s.confidence,
    );
    let thr = |c: usize| (c as f64 - LLR_HALF_BINS as f64) * LLR_STEP;
    let event = if lb.event.is_empty() {
        "no event with evidence".to_string()
    } else if lb.d_over_dprime {
        format!(
            "P_D/P_D′: transcript privacy loss ≥ {:.2} (pair of halting time {})",
            thr(*lb.event.iter().min().expect("non-empty")),
            case.t
        )
    } else {
        format!(
            "P_D′/P_D: transcript privacy loss < {:.2} (pair of halting time {})",
            thr(*lb.event.iter().max().expect("non-empty") + 1),
            case.t
        )
    };
    AuditRecord {
        mechanism: s.mechanism.name().to_string(),
        sigma: s.sigma,
        t: None,
        claimed_eps: eps_total,
        exact_eps: None,
        eps_lower_bound: lb.eps,
        confidence: s.confidence,
        trials: s.trials,
        delta: delta_total,
        lb_over_claimed: lb.eps / eps_total,
        exact_over_claimed: None,
        n: s.n,
        r_max: s.privacy.r_max,
        delta_r: s.privacy.delta_r,
        event,
    }
}
