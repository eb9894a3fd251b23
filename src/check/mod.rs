//! `privalign check` (design §12): compare results with the reported numbers
//! of `reference.yaml` and evaluate the paper's claims; `--update` rewrites
//! the reference deliberately and prints what changed.

pub mod claims;
pub mod integrity;
pub mod reference;

use anyhow::{Result, bail};
use std::path::{Path, PathBuf};

use crate::config::Experiment;
use crate::fsutil::StagedDir;
use crate::fsutil::write_atomic;
use crate::report::format::{Cell, ColumnSpec, Table};
use crate::report::select::ordered;
use crate::results::read::{ResultsSet, read_results_set};
use crate::select::algorithm::names::{BON, PRIVBON, PRIVITP};
use crate::sweep::run::{SweepOptions, sweep};
use claims::{ClaimsFile, evaluate};
use reference::{REFERENCE_FILE, RefNumber, Reference, Source, Tolerance, compare, lookup};

/// Options of one check.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    pub results: PathBuf,
    pub reference: Option<PathBuf>,
    pub recompute: bool,
    pub update: bool,
    pub claims: Option<PathBuf>,
    pub threads: Option<usize>,
}

/// Rerun the sweep recorded in `dir`'s manifest (its resolved config) into a
/// scratch directory, leaving `dir` untouched. The scratch directory is a
/// staged directory that is never committed, so dropping it (after the
/// comparison, or on any error) removes it.
fn recompute(dir: &Path, threads: Option<usize>) -> Result<(ResultsSet, StagedDir)> {
    let set = read_results_set(&[dir.to_path_buf()])?;
    let m = &set.dirs[0].manifest;
    let config_path = integrity::locate_config(dir, &m.config_path);
    let exp = Experiment::resolve(m.config.clone(), &config_path)?;
    let scratch = StagedDir::new(
        &std::env::temp_dir().join(format!("privalign-check-{}", std::process::id())),
        true,
    )?;
    eprintln!(
        "check: recomputing {} from {} into {}",
        dir.display(),
        config_path.display(),
        scratch.path().display()
    );
    sweep(
        &exp,
        &SweepOptions {
            out: scratch.path().to_path_buf(),
            threads,
            resume: false,
            progress: false,
        },
    )?;
    Ok((read_results_set(&[scratch.path().to_path_buf()])?, scratch))
}

fn tol_text(t: Tolerance) -> String {
    match t {
        Tolerance::Abs { abs } => format!("±{abs}"),
        Tolerance::Se { se } => format!("{se} SE"),
    }
}

/// The default reported numbers of a results set: for every algorithm
/// setting and reward model, lift at the largest n and at the n where BoN
/// peaks, and the per-query ε; FSRC query counts per σ; the budget table.
pub fn default_reference(set: &ResultsSet) -> Result<Reference> {
    let mut numbers = Vec::new();
    let recs: Vec<_> = set.summary().collect();
    let n_max = recs.iter().map(|r| r.n).max().unwrap_or(1);
    let setting = |r: &crate::results::read::SummaryRecord| {
        let mut s = r.algorithm.clone();
        if let Some(x) = r.sigma {
            s += &format!(" σ={x}");
        }
        if let Some(x) = r.beta {
            s += &format!(" β={x}");
        }
        s
    };
    for r in &recs {
        let bon_peak = recs
            .iter()
            .filter(|b| {
                b.algorithm == BON && b.dataset == r.dataset && b.reward_model == r.reward_model
            })
            .max_by(|a, b| {
                a.stat("lift")
                    .mean
                    .unwrap_or(f64::MIN)
                    .total_cmp(&b.stat("lift").mean.unwrap_or(f64::MIN))
            })
            .map(|b| b.n);
        let base = |stat: &str, tol: Tolerance, label: &str| {
            let m = r.stat(stat);
            m.mean.map(|v| RefNumber {
                name: format!(
                    "{label} {} {}/{} n={}",
                    setting(r),
                    r.dataset,
                    r.reward_model,
                    r.n
                ),
                source: Source::Summary,
                dataset: Some(r.dataset.clone()),
                reward_model: Some(r.reward_model.clone()),
                algorithm: Some(r.algorithm.clone()),
                sigma: r.sigma,
                beta: r.beta,
                n: Some(r.n),
                stat: stat.into(),
                value: v,
                se: m.se,
                tolerance: tol,
            })
        };
        if r.n == n_max || Some(r.n) == bon_peak {
            numbers.extend(base("lift", Tolerance::Se { se: 1.0 }, "lift"));
        }
        if r.n == n_max {
            let tol = if r.algorithm == PRIVITP {
                Tolerance::Se { se: 1.0 }
            } else {
                Tolerance::Abs { abs: 1e-6 }
            };
            numbers.extend(base("eps", tol, "eps"));
        }
    }
    // σ values come from the config, so equal settings are bitwise equal.
    let fsrc_keys = ordered(
        set.fsrc()
            .map(|f| (f.dataset.clone(), f.reward_model.clone(), f.sigma)),
    );
    for (ds, rm, s) in fsrc_keys {
        for (stat, tol) in [
            ("queries", Tolerance::Se { se: 1.0 }),
            ("basic_queries", Tolerance::Abs { abs: 0.0 }),
        ] {
            let mut n = RefNumber {
                name: format!("fsrc {stat} {ds}/{rm} σ={s}"),
                source: Source::Fsrc,
                dataset: Some(ds.clone()),
                reward_model: Some(rm.clone()),
                algorithm: None,
                sigma: Some(s),
                beta: None,
                n: None,
                stat: stat.into(),
                value: 0.0,
                se: None,
                tolerance: tol,
            };
            if let Some((v, se)) = lookup(set, &n)? {
                n.value = v;
                n.se = se;
                numbers.push(n);
            }
        }
    }
    // The budget table at the FSRC n when the sweep has it, else the largest n.
    let budget_n = set
        .fsrc()
        .next()
        .map(|f| f.n)
        .filter(|n| recs.iter().any(|r| r.algorithm == PRIVITP && r.n == *n))
        .unwrap_or(n_max);
    let sigmas = crate::report::tables::distinct(
        recs.iter()
            .filter(|r| r.algorithm == PRIVITP)
            .filter_map(|r| r.sigma),
    );
    for s in sigmas {
        let stats: [String; 4] = [
            format!("eps_{PRIVBON}"),
            "eps1".into(),
            "eps2_post".into(),
            format!("eps_{PRIVITP}"),
        ];
        for stat in stats {
            let mut n = RefNumber {
                name: format!("budget {stat} σ={s} n={budget_n}"),
                source: Source::Budget,
                dataset: None,
                reward_model: None,
                algorithm: None,
                sigma: Some(s),
                beta: None,
                n: Some(budget_n),
                stat: stat.clone(),
                value: 0.0,
                se: None,
                tolerance: Tolerance::Abs { abs: 1e-6 },
            };
            if let Some((v, _)) = lookup(set, &n)? {
                n.value = v;
                numbers.push(n);
            }
        }
    }
    Ok(Reference {
        description: "Reported numbers of these results that must not move. Made by `privalign check --update`; tolerances: 1 SE for statistical numbers (lift, PrivITP's expected ε, FSRC query counts), 1e-6 for exact ones (PrivBoN's ε, basic composition, the budget table).".into(),
        numbers,
    })
}

/// What `check` found.
pub struct CheckReport {
    pub table: Table,
    pub failed: Vec<String>,
    pub claims: Vec<claims::ClaimResult>,
}

/// Run the check; an error names every number that moved or claim that failed.
pub fn check(o: &CheckOptions) -> Result<CheckReport> {
    let ref_path = o
        .reference
        .clone()
        .unwrap_or_else(|| o.results.join(REFERENCE_FILE));
    let given = crate::results::read::read_results(&o.results)?;
    let v = integrity::verify(&o.results, &given.manifest)?;
    eprintln!(
        "check: {}: {} file(s) match the SHA-256 in its manifest{}",
        o.results.display(),
        v.files,
        if v.config_hash {
            "; config hash verified"
        } else {
            "; config hash not recomputed (made by another privalign version)"
        }
    );
    let (set, _scratch) = if o.recompute {
        let (s, d) = recompute(&o.results, o.threads)?;
        (s, Some(d))
    } else {
        (read_results_set(std::slice::from_ref(&o.results))?, None)
    };
    // Only a reference that does not exist may be created; one that exists
    // but cannot be read (permissions, a directory, not UTF-8) or parsed is
    // never overwritten, `--update` or not.
    let old: Option<Reference> = match std::fs::read_to_string(&ref_path) {
        Ok(t) => Some(yaml_serde::from_str(&t).map_err(|e| {
            crate::error::input_error(format!(
                "{}: not a valid reference file ({e}); fix it or move it away (nothing was written)",
                ref_path.display()
            ))
        })?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => crate::bail_input!(
            "{}: cannot read the reference file ({e}); fix its permissions or move it away (nothing was written)",
            ref_path.display()
        ),
    };
    if o.update {
        let new = match &old {
            Some(r) => {
                let mut r = r.clone();
                for n in &mut r.numbers {
                    match lookup(&set, n)? {
                        Some((v, se)) => {
                            n.value = v;
                            n.se = se;
                        }
                        None => bail!(
                            "{}: the results no longer have `{}`; remove it from the reference or fix the results",
                            ref_path.display(),
                            n.name
                        ),
                    }
                }
                r
            }
            None => default_reference(&set)?,
        };
        let mut changed = 0;
        for n in &new.numbers {
            let before = old
                .as_ref()
                .and_then(|r| r.numbers.iter().find(|m| m.name == n.name))
                .map(|m| m.value);
            if before != Some(n.value) {
                changed += 1;
                match before {
                    Some(b) => crate::outln!("~ {}: {b} → {}", n.name, n.value)?,
                    None => crate::outln!("+ {}: {}", n.name, n.value)?,
                }
            }
        }
        write_atomic(&ref_path, yaml_serde::to_string(&new)?.as_bytes())?;
        crate::outln!(
            "wrote {} ({} numbers, {changed} changed)",
            ref_path.display(),
            new.numbers.len()
        )?;
    }
    let reference = match (&old, o.update) {
        (_, true) => yaml_serde::from_str(&std::fs::read_to_string(&ref_path)?)?,
        (Some(r), false) => r.clone(),
        (None, false) => crate::bail_input!(
            "{}: no reference file; create one with `privalign check {} --update`",
            ref_path.display(),
            o.results.display()
        ),
    };
    let cmp = compare(&set, &reference)?;
    let rows = cmp
        .iter()
        .map(|c| {
            vec![
                Cell::Text(c.name.clone()),
                Cell::Num(c.reference),
                c.value.map_or(Cell::Text("missing".into()), Cell::Num),
                c.value.map_or(Cell::Empty, |v| Cell::Num(v - c.reference)),
                Cell::Text(format!("{} (±{:.4})", tol_text(c.tolerance), c.allowed)),
                Cell::Text(if c.pass { "ok" } else { "MOVED" }.into()),
            ]
        })
        .collect();
    let table = Table::new(
        vec![
            ColumnSpec::new("number", "number", "Number"),
            ColumnSpec::new("reference", "reference", "Reference"),
            ColumnSpec::new("value", "value", "Value"),
            ColumnSpec::new("difference", "difference", "Difference"),
            ColumnSpec::new("tolerance", "tolerance", "Tolerance"),
            ColumnSpec::new("status", "status", "Status"),
        ],
        rows,
        format!(
            "{} numbers checked against {}",
            cmp.len(),
            ref_path.display()
        ),
        "tab:check".into(),
        4,
    );
    let failed: Vec<String> = cmp
        .iter()
        .filter(|c| !c.pass)
        .map(|c| match c.value {
            Some(v) => format!("{} ({} → {v}, allowed ±{})", c.name, c.reference, c.allowed),
            None => format!("{} (missing from the results)", c.name),
        })
        .collect();
    let claims = match &o.claims {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| {
                crate::error::input_error(format!(
                    "{}: cannot read the claims file ({e})",
                    p.display()
                ))
            })?;
            let f: ClaimsFile = yaml_serde::from_str(&text).map_err(|e| {
                crate::error::input_error(format!("{}: not a valid claims file ({e})", p.display()))
            })?;
            evaluate(&set, &f)?
        }
        None => Vec::new(),
    };
    Ok(CheckReport {
        table,
        failed,
        claims,
    })
}
