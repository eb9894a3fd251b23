//! `--shard K/N`: which of N shards a sweep runs.

use crate::bail_input;
use anyhow::Result;
use std::fmt;
use std::str::FromStr;

/// Shard `index` of `count` (0-based: K ∈ 0..N).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardSpec {
    pub index: usize,
    pub count: usize,
}

impl fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for ShardSpec {
    type Err = anyhow::Error;

    /// Parse `K/N`; N = 0, K ≥ N and anything else malformed is an input
    /// error (exit 2).
    fn from_str(s: &str) -> Result<Self> {
        let Some((k, n)) = s.split_once('/') else {
            bail_input!("--shard {s:?}: expected K/N (shard K of N, 0-based), e.g. --shard 0/4");
        };
        let parse = |what: &str, v: &str| -> Result<usize> {
            match v.trim().parse::<usize>() {
                Ok(x) => Ok(x),
                Err(_) => bail_input!(
                    "--shard {s:?}: {what} {v:?} is not a non-negative integer; expected K/N, e.g. --shard 0/4"
                ),
            }
        };
        let (index, count) = (parse("K", k)?, parse("N", n)?);
        if count == 0 {
            bail_input!("--shard {s:?}: N = 0 shards; N must be at least 1");
        }
        if index >= count {
            bail_input!(
                "--shard {s:?}: K = {index} is not below N = {count}; shards are numbered 0 … {} (0-based)",
                count - 1
            );
        }
        Ok(Self { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{EXIT_BAD_INPUT, exit_code};

    #[test]
    fn parses_and_refuses() {
        assert_eq!(
            "2/7".parse::<ShardSpec>().unwrap(),
            ShardSpec { index: 2, count: 7 }
        );
        assert_eq!("0/1".parse::<ShardSpec>().unwrap().to_string(), "0/1");
        for bad in ["3/3", "4/3", "0/0", "1", "a/3", "-1/3", "1/x", ""] {
            let e = bad.parse::<ShardSpec>().unwrap_err();
            assert_eq!(exit_code(&e), EXIT_BAD_INPUT, "{bad}");
            assert!(e.to_string().contains("--shard"), "{bad}: {e}");
        }
        let e = "3/3".parse::<ShardSpec>().unwrap_err().to_string();
        assert!(e.contains("0 … 2"), "{e}");
    }
}
