//! The `--threads K` flag, read the same way by every command that takes it
//! (`sweep`, `reproduce`, `fsrc`, `check --recompute`):
//!
//! * absent or `0`: one worker per core (0 is the usual "automatic" of
//!   compression tools; it is never an error and never means "no workers");
//! * above [`MAX_THREADS`]: refused (exit 2) naming the limit — each worker
//!   holds its own buffers, and no machine privalign targets has more cores;
//! * between the core count and the limit: accepted with a warning, since
//!   results do not depend on the thread count but extra threads only add
//!   memory and contention.

use anyhow::Result;

use crate::bail_input;

/// The hard upper limit of `--threads`.
pub const MAX_THREADS: usize = 1024;

/// The number of cores (what rayon uses by default).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Check `--threads` (`flag` names it in messages) and return the worker
/// count to use, `None` meaning "one per core". Prints the warning, if any,
/// to standard error.
pub fn resolve_threads(flag: &str, k: Option<usize>) -> Result<Option<usize>> {
    match k {
        None | Some(0) => Ok(None),
        Some(k) if k > MAX_THREADS => bail_input!(
            "{flag} {k}: at most {MAX_THREADS} worker threads; give a number from 1 to {MAX_THREADS}, or 0 (or omit {flag}) for one per core ({} here)",
            cores()
        ),
        Some(k) => {
            if let Some(w) = warning(flag, k, cores()) {
                eprintln!("{w}");
            }
            Ok(Some(k))
        }
    }
}

/// The warning for `k` threads on a machine with `cores` cores, if any.
pub fn warning(flag: &str, k: usize, cores: usize) -> Option<String> {
    (k > cores).then(|| {
        format!(
            "warning: {flag} {k} is more than the {cores} cores of this machine; results are identical for any thread count, so this only adds memory and contention (use {flag} {cores} or omit it)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_absent_mean_every_core_and_the_limit_is_enforced() {
        assert_eq!(resolve_threads("--threads", None).unwrap(), None);
        assert_eq!(resolve_threads("--threads", Some(0)).unwrap(), None);
        assert_eq!(resolve_threads("--threads", Some(1)).unwrap(), Some(1));
        assert_eq!(
            resolve_threads("--threads", Some(MAX_THREADS)).unwrap(),
            Some(MAX_THREADS)
        );
        let e = resolve_threads("--threads", Some(MAX_THREADS + 1)).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(e.to_string().contains("at most 1024"), "{e}");
        assert!(
            warning("--threads", 3, 2)
                .unwrap()
                .contains("more than the 2 cores")
        );
        assert!(warning("--threads", 2, 2).is_none());
    }
}
