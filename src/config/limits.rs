//! Upper limits on the sizes a user can ask for, and warnings for sizes that
//! are legal but would take hours or more memory than the machine has.
//!
//! Without limits a typo (`n: [1e12]`, `replicates: 100000000`) aborts with
//! a capacity overflow or an out-of-memory kill after a long wait. Each
//! limit is far above anything the paper runs (n ≤ 2^14, ≤ 1000 replicates)
//! and below what breaks:
//! * **n ≤ 2^22 = 4,194,304.** Every worker keeps three n-long buffers per
//!   work item (≈ 32 bytes × n: 128 MiB at the limit); the accountant's n·κ
//!   and n + 1 stay exact. `budget --n` shares the limit.
//! * **replicates ≤ 1,000,000.** The bootstrap SE of a lift is below 0.1% of
//!   its spread long before that; more only multiplies the run time.
//! * **threads ≤ 1024** ([`crate::threads::MAX_THREADS`], issue #19's limit,
//!   shared by every command).
//!
//! [`workload_warnings`] estimates the run time from the engine benchmark in
//! README ("Benchmarks": ≈ 5·10⁶ candidate evaluations per core-second with
//! the conditional estimator in the release build, 9× more with `sampled`)
//! and the memory from the buffers above, and warns before the sweep starts.

use anyhow::Result;

use super::resolve::Experiment;
use crate::bail_input;

/// Smallest noise scale and β: the accountant's limit, shared by configs.
pub use crate::privacy::budget::MIN_SCALE;

/// Largest n (candidates per query).
pub const MAX_N: usize = 1 << 22;
/// Largest number of bootstrap replicates.
pub const MAX_REPLICATES: usize = 1_000_000;
/// Candidate evaluations per core-second, conditional estimator, release
/// build (README benchmark: 1200 demo items, Σn = 8190, 10 replicates, 4
/// algorithms → 3.3·10⁷ evaluations in 6.67 s on one thread).
const EVALS_PER_CORE_SECOND: f64 = 5e6;
/// Bytes of per-worker buffers per candidate (three n-long vectors).
const BYTES_PER_CANDIDATE: f64 = 32.0;

/// Refuse an n above [`MAX_N`]; `key` names it ("n[3]", "fsrc.n", "--n").
pub fn check_n(key: &str, n: usize) -> Result<()> {
    if n > MAX_N {
        bail_input!(
            "{key}: n = {n} is above the limit of {MAX_N} (2^22) candidates per query; each worker needs about 32 bytes per candidate, and the paper's largest n is 2^14 — choose a smaller n"
        );
    }
    Ok(())
}

/// Refuse replicates above [`MAX_REPLICATES`].
pub fn check_replicates(key: &str, r: usize) -> Result<()> {
    if r > MAX_REPLICATES {
        bail_input!(
            "{key}: {r} replicates is above the limit of {MAX_REPLICATES}; the bootstrap SE settles long before that (the paper uses at most 1000) — choose fewer"
        );
    }
    Ok(())
}

fn human_seconds(s: f64) -> String {
    if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.0} min", s / 60.0)
    } else if s < 3.0 * 86400.0 {
        format!("{:.0} h", s / 3600.0)
    } else {
        format!("{:.0} days", s / 86400.0)
    }
}

/// Memory the machine has available, from /proc/meminfo (Linux).
fn available_bytes() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024.0)
}

/// Warnings for a sweep of `exp` on `threads` workers: expected run time
/// above an hour (naming replicates, the largest n and the thread count),
/// and per-worker buffers beyond the available memory.
pub fn workload_warnings(exp: &Experiment, threads: usize) -> Vec<String> {
    let threads = threads.max(1);
    let prompts: f64 = exp
        .datasets
        .iter()
        .map(|d| d.manifest.counts.prompts as f64)
        .sum();
    let sum_n: f64 = exp.n_values.iter().map(|&n| n as f64).sum();
    let evals = prompts
        * exp.reward_models.len() as f64
        * sum_n
        * exp.config.replicates as f64
        * exp.algorithms.len() as f64;
    let rate = EVALS_PER_CORE_SECOND
        * match exp.config.estimator {
            super::EstimatorSpec::Sampled => 9.0,
            super::EstimatorSpec::Conditional => 1.0,
        };
    let cores = threads.min(crate::threads::cores()) as f64;
    let seconds = evals / (rate * cores);
    let mut w = Vec::new();
    if seconds > 3600.0 {
        w.push(format!(
            "this sweep evaluates about {evals:.1e} candidates ({} replicates, n up to {}, {} algorithm settings, {prompts} prompts, {} reward models): roughly {} on {} core(s) with the release build (README, Benchmarks); lower replicates or the n grid for a quicker run",
            exp.config.replicates,
            exp.n_values.iter().max().copied().unwrap_or(0),
            exp.algorithms.len(),
            exp.reward_models.len(),
            human_seconds(seconds),
            cores
        ));
    }
    let n_max = exp.n_values.iter().max().copied().unwrap_or(0) as f64;
    let bytes = threads as f64 * BYTES_PER_CANDIDATE * n_max;
    if let Some(avail) = available_bytes()
        && bytes > 0.5 * avail
    {
        w.push(format!(
            "{threads} worker threads × n = {n_max} need about {:.1} GiB of buffers, more than half of the {:.1} GiB available; use fewer --threads or a smaller n",
            bytes / f64::from(1u32 << 30),
            avail / f64::from(1u32 << 30)
        ));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_name_the_key_and_the_limit() {
        assert!(check_n("n[0]", MAX_N).is_ok());
        let e = check_n("n[0]", MAX_N + 1).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(e.to_string().contains("n[0]") && e.to_string().contains("4194304"));
        let e = check_replicates("replicates", MAX_REPLICATES + 1).unwrap_err();
        assert!(e.to_string().contains("replicates") && e.to_string().contains("1000000"));
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human_seconds(30.0), "30 s");
        assert_eq!(human_seconds(5400.0), "90 min");
        assert_eq!(human_seconds(86400.0), "24 h");
        assert_eq!(human_seconds(864000.0), "10 days");
    }
}
