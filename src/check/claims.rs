//! The paper's qualitative claims as checkable predicates on results
//! (`experiments/paper-claims.yaml`). Each claim is evaluated per reward
//! model on the summary's lift (mean ± SE across prompts) at the matched σ
//! and β the claims file names, with a margin of `k` combined standard errors.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::report::select::{close, ordered, uses_beta, uses_sigma};
use crate::results::read::{ResultsSet, SummaryRecord};
use crate::results::summary::mean_se;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimsFile {
    #[serde(default)]
    pub description: String,
    /// The σ of the private algorithms the claims compare at.
    pub sigma: f64,
    /// The β of ITP and PrivITP.
    pub beta: f64,
    pub claims: Vec<Claim>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Claim {
    /// BoN's lift at the largest n is below its peak over n by more than
    /// k combined SEs (reward hacking).
    FallsFromPeak {
        name: String,
        algorithm: String,
        reward_models: Vec<String>,
        #[serde(default = "one")]
        k: f64,
    },
    /// Lift never drops between consecutive n by more than k combined SEs.
    MonotoneInN {
        name: String,
        algorithms: Vec<String>,
        #[serde(default = "two")]
        k: f64,
    },
    /// lift(better) ≥ lift(worse) − k combined SEs at the largest n.
    AtLeast {
        name: String,
        better: String,
        worse: String,
        #[serde(default = "two")]
        k: f64,
    },
    /// FSRC answers more queries than basic composition, for every σ.
    FsrcBeatsBasic { name: String },
}

fn one() -> f64 {
    1.0
}

fn two() -> f64 {
    2.0
}

/// One evaluated claim on one reward model (or one FSRC setting).
#[derive(Clone, Debug)]
pub struct ClaimResult {
    pub claim: String,
    pub scope: String,
    pub pass: bool,
    pub detail: String,
}

/// The lift curve (n, mean, se) of `alg` at the matched σ/β on (dataset, RM).
fn curve(
    set: &ResultsSet,
    f: &ClaimsFile,
    alg: &str,
    ds: &str,
    rm: &str,
) -> Vec<(usize, f64, f64)> {
    let mut v: Vec<(usize, f64, f64)> = set
        .summary()
        .filter(|r: &&SummaryRecord| {
            r.algorithm == alg
                && r.dataset == ds
                && r.reward_model == rm
                && (!uses_sigma(alg) || r.sigma.is_some_and(|s| close(s, f.sigma)))
                && (!uses_beta(alg) || r.beta.is_some_and(|b| close(b, f.beta)))
        })
        .filter_map(|r| {
            let m = r.stat("lift");
            Some((r.n, m.mean?, m.se.unwrap_or(0.0)))
        })
        .collect();
    v.sort_by_key(|x| x.0);
    v
}

fn combined(a: f64, b: f64) -> f64 {
    (a * a + b * b).sqrt()
}

/// Evaluate every claim.
pub fn evaluate(set: &ResultsSet, f: &ClaimsFile) -> Result<Vec<ClaimResult>> {
    let keys: Vec<(String, String)> = ordered(
        set.summary()
            .map(|r| (r.dataset.clone(), r.reward_model.clone())),
    );
    let mut out = Vec::new();
    let missing = |claim: &str, scope: String, alg: &str| ClaimResult {
        claim: claim.to_string(),
        scope,
        pass: false,
        detail: format!(
            "no {alg} cells at σ = {}, β = {} in the results",
            f.sigma, f.beta
        ),
    };
    for c in &f.claims {
        let before = out.len();
        match c {
            Claim::FallsFromPeak {
                name,
                algorithm,
                reward_models,
                k,
            } => {
                for (ds, rm) in keys.iter().filter(|(_, rm)| reward_models.contains(rm)) {
                    let cv = curve(set, f, algorithm, ds, rm);
                    let scope = format!("{ds}/{rm}");
                    let (Some(peak), Some(last)) = (
                        cv.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1)),
                        cv.last().copied(),
                    ) else {
                        out.push(missing(name, scope, algorithm));
                        continue;
                    };
                    let fall = peak.1 - last.1;
                    let margin = k * combined(peak.2, last.2);
                    out.push(ClaimResult {
                        claim: name.clone(),
                        scope,
                        pass: fall > margin,
                        detail: format!(
                            "peak {:.2} ± {:.2} at n = {} → {:.2} ± {:.2} at n = {}: fall {fall:.2} vs {k}×SE = {margin:.2}",
                            peak.1, peak.2, peak.0, last.1, last.2, last.0
                        ),
                    });
                }
            }
            Claim::MonotoneInN {
                name,
                algorithms,
                k,
            } => {
                for alg in algorithms {
                    for (ds, rm) in &keys {
                        let cv = curve(set, f, alg, ds, rm);
                        let scope = format!("{ds}/{rm}/{alg}");
                        if cv.len() < 2 {
                            out.push(missing(name, scope, alg));
                            continue;
                        }
                        let worst = cv
                            .windows(2)
                            .map(|w| (w[0], w[1], (w[0].1 - w[1].1) - k * combined(w[0].2, w[1].2)))
                            .max_by(|a, b| a.2.total_cmp(&b.2))
                            .expect("two or more points");
                        let (a, b, excess) = worst;
                        out.push(ClaimResult {
                            claim: name.clone(),
                            scope,
                            pass: excess <= 0.0,
                            detail: format!(
                                "tightest step n = {} → {}: {:.2} → {:.2} (a drop of up to {:.2} = {k}×SE is allowed)",
                                a.0,
                                b.0,
                                a.1,
                                b.1,
                                k * combined(a.2, b.2)
                            ),
                        });
                    }
                }
            }
            Claim::AtLeast {
                name,
                better,
                worse,
                k,
            } => {
                for (ds, rm) in &keys {
                    let (a, b) = (curve(set, f, better, ds, rm), curve(set, f, worse, ds, rm));
                    let scope = format!("{ds}/{rm}");
                    let (Some(a), Some(b)) = (a.last().copied(), b.last().copied()) else {
                        out.push(missing(name, scope, &format!("{better} or {worse}")));
                        continue;
                    };
                    let margin = k * combined(a.2, b.2);
                    out.push(ClaimResult {
                        claim: name.clone(),
                        scope,
                        pass: a.1 >= b.1 - margin,
                        detail: format!(
                            "n = {}: {better} {:.2} ± {:.2} vs {worse} {:.2} ± {:.2} (allowed shortfall {margin:.2} = {k}×SE)",
                            a.0, a.1, a.2, b.1, b.2
                        ),
                    });
                }
            }
            Claim::FsrcBeatsBasic { name } => {
                let rows: Vec<_> = set.fsrc().collect();
                if rows.is_empty() {
                    out.push(ClaimResult {
                        claim: name.clone(),
                        scope: "fsrc".into(),
                        pass: false,
                        detail: "no fsrc.parquet in the results".into(),
                    });
                }
                for rm in ordered(rows.iter().map(|r| r.reward_model.as_str())) {
                    let sigmas = crate::report::tables::distinct(
                        rows.iter()
                            .filter(|r| r.reward_model == rm)
                            .map(|r| r.sigma),
                    );
                    for s in sigmas {
                        let mine: Vec<_> = rows
                            .iter()
                            .filter(|r| r.reward_model == rm && close(r.sigma, s))
                            .collect();
                        let q = mean_se(
                            &mine
                                .iter()
                                .map(|r| Some(r.run.queries as f64))
                                .collect::<Vec<_>>(),
                        );
                        let b = mean_se(
                            &mine
                                .iter()
                                .map(|r| Some(r.run.basic_queries as f64))
                                .collect::<Vec<_>>(),
                        );
                        let (q, b) = (q.mean.unwrap_or(0.0), b.mean.unwrap_or(0.0));
                        out.push(ClaimResult {
                            claim: name.clone(),
                            scope: format!("{rm}/σ = {s}"),
                            pass: q > b,
                            detail: format!(
                                "FSRC {q:.2} vs basic {b:.2} queries (ratio {:.2})",
                                q / b.max(1e-12)
                            ),
                        });
                    }
                }
            }
        }
        // A claim that matched no (dataset, reward model, algorithm) of the
        // results is a failure, never a silent skip: a typo in a reward-model
        // name must not make `check --claims` pass.
        if out.len() == before {
            let (name, wanted) = match c {
                Claim::FallsFromPeak {
                    name,
                    reward_models,
                    algorithm,
                    ..
                } => (
                    name,
                    format!("{algorithm} on reward models {}", reward_models.join(", ")),
                ),
                Claim::MonotoneInN {
                    name, algorithms, ..
                } => (name, format!("algorithms {}", algorithms.join(", "))),
                Claim::AtLeast {
                    name,
                    better,
                    worse,
                    ..
                } => (name, format!("{better} vs {worse}")),
                Claim::FsrcBeatsBasic { name } => (name, "FSRC runs".to_string()),
            };
            out.push(ClaimResult {
                claim: name.clone(),
                scope: "-".into(),
                pass: false,
                detail: format!(
                    "matches no row of the results ({wanted}); the results have {}",
                    if keys.is_empty() {
                        "no summary rows".to_string()
                    } else {
                        keys.iter()
                            .map(|(d, r)| format!("{d}/{r}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ),
            });
        }
    }
    Ok(out)
}
