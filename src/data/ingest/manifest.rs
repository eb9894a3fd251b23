//! dataset.yaml's statistics, accumulated as the ranges stream past, in
//! exactly the arithmetic of a whole-dataset computation (so a streamed
//! ingest writes the same bytes as reading everything at once):
//!
//! * sums (means, pooled and per-prompt accuracy) are left folds in row
//!   order starting where `Iterator::sum` starts — the same additions in
//!   the same order;
//! * min, max, counts and the binary check are order-free;
//! * the population sd is two-pass (Σ(r − mean)² in row order once the
//!   mean is known): the second pass re-reads the staged scores.parquet a
//!   window of blocks at a time;
//! * the nearest-rank quantiles q001/q999 are exact order statistics found
//!   by **histogram refinement** over the float32 values' order-preserving
//!   bit patterns: the first pass counts the upper 16 bits (65,536 bins),
//!   which locates each target rank's bin; the second counts the lower 16
//!   bits of the values in that bin, which locates the value itself. Two
//!   passes, 2 × 512 KiB of counters per reward model, the same value a full
//!   sort selects (scores are float32, so 32 bits identify a value).

use anyhow::{Context, Result};
use polars::prelude::*;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use super::IngestOptions;
use crate::data::cols;
use crate::data::prepared::{
    BaseAccuracy, Counts, DatasetManifest, RewardStats, SourceFileInfo, SourceInfo, TransformStats,
};
use crate::fsutil::sha256_file;

/// `Iterator::sum`'s starting value for f64 (so folds continue it exactly).
fn sum_start() -> f64 {
    std::iter::empty::<f64>().sum()
}

/// Order-preserving u32 key of an f32 (the total order `f64::total_cmp`
/// gives the f32's exact f64 value).
fn order_key(x: f32) -> u32 {
    let b = x.to_bits();
    if b & 0x8000_0000 != 0 {
        !b
    } else {
        b | 0x8000_0000
    }
}

fn from_key(k: u32) -> f32 {
    f32::from_bits(if k & 0x8000_0000 != 0 {
        k & 0x7fff_ffff
    } else {
        !k
    })
}

/// One reward model's first-pass accumulator.
struct RewardAcc {
    n: usize,
    sum: f64,
    min: f64,
    max: f64,
    hi: Vec<u64>,
}

impl RewardAcc {
    fn new() -> Self {
        Self {
            n: 0,
            sum: sum_start(),
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            hi: vec![0; 1 << 16],
        }
    }
}

/// Nearest-rank index (0-based) of quantile `q` among `n` values, as
/// [`crate::data::prepared::reward_stats`] selects it.
fn rank(q: f64, n: usize) -> usize {
    ((q * n as f64).ceil() as usize).clamp(1, n) - 1
}

/// The bin of the upper-bits histogram holding rank `k`, and `k`'s rank within it.
fn locate(hist: &[u64], k: usize) -> (usize, u64) {
    let mut below = 0u64;
    for (b, &c) in hist.iter().enumerate() {
        if below + c > k as u64 {
            return (b, k as u64 - below);
        }
        below += c;
    }
    (hist.len() - 1, 0)
}

/// Statistics of the dataset, fed range by range in row order.
pub struct Stats {
    models: Vec<String>,
    rewards: Vec<RewardAcc>,
    correct_sum: f64,
    binary: bool,
    /// Per prompt: its row count and mean correctness (O(prompts) memory).
    sizes: Vec<usize>,
    prompt_means: Vec<f64>,
    rows: usize,
    has_gen_seconds: bool,
}

/// What [`Stats::finish`] computes.
pub struct Finished {
    pub rewards: BTreeMap<String, RewardStats>,
    pub transform_stats: BTreeMap<String, TransformStats>,
}

impl Stats {
    pub fn new(models: &[String]) -> Self {
        Self {
            models: models.to_vec(),
            rewards: models.iter().map(|_| RewardAcc::new()).collect(),
            correct_sum: sum_start(),
            binary: true,
            sizes: Vec::new(),
            prompt_means: Vec::new(),
            rows: 0,
            has_gen_seconds: false,
        }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Feed the output frame of one range (`offsets` its prompt boundaries).
    pub fn push(&mut self, out: &DataFrame, offsets: &[usize]) -> Result<()> {
        let correct: Vec<f64> = out
            .column(cols::CORRECT)?
            .f32()?
            .into_no_null_iter()
            .map(f64::from)
            .collect();
        self.correct_sum = correct.iter().fold(self.correct_sum, |a, &b| a + b);
        self.binary &= correct.iter().all(|&c| c == 0.0 || c == 1.0);
        for w in offsets.windows(2) {
            self.sizes.push(w[1] - w[0]);
            self.prompt_means
                .push(correct[w[0]..w[1]].iter().sum::<f64>() / (w[1] - w[0]) as f64);
        }
        for (m, acc) in self.models.iter().zip(&mut self.rewards) {
            for v in out.column(m)?.f32()?.into_no_null_iter() {
                let x = f64::from(v);
                acc.n += 1;
                acc.sum += x;
                acc.min = acc.min.min(x);
                acc.max = acc.max.max(x);
                acc.hi[(order_key(v) >> 16) as usize] += 1;
            }
        }
        self.rows += out.height();
        self.has_gen_seconds |= out.column(cols::GEN_SECONDS).is_ok();
        Ok(())
    }

    /// The second pass over the staged `scores` file (`windows`: row ranges
    /// to read at a time, in order): sd and the exact quantiles.
    pub fn finish(&self, scores: &Path, windows: &[(usize, usize)]) -> Result<Finished> {
        struct Pass2 {
            mean: f64,
            ss: f64,
            targets: [(usize, u64); 2],
            lo: [Vec<u64>; 2],
        }
        let mut p2: Vec<Pass2> = self
            .rewards
            .iter()
            .map(|a| {
                let n = a.n.max(1);
                Pass2 {
                    mean: a.sum / a.n as f64,
                    ss: sum_start(),
                    targets: [locate(&a.hi, rank(0.001, n)), locate(&a.hi, rank(0.999, n))],
                    lo: [vec![0; 1 << 16], vec![0; 1 << 16]],
                }
            })
            .collect();
        for &(start, len) in windows {
            let f = File::open(scores).with_context(|| format!("opening {}", scores.display()))?;
            let df = ParquetReader::new(f)
                .with_columns(Some(self.models.clone()))
                .with_slice(Some((start, len)))
                .finish()
                .map_err(anyhow::Error::from)
                .with_context(|| format!("re-reading {}", scores.display()))?;
            for (m, p) in self.models.iter().zip(&mut p2) {
                for v in df.column(m)?.f32()?.into_no_null_iter() {
                    p.ss += (f64::from(v) - p.mean).powi(2);
                    let k = order_key(v);
                    for t in 0..2 {
                        if (k >> 16) as usize == p.targets[t].0 {
                            p.lo[t][(k & 0xffff) as usize] += 1;
                        }
                    }
                }
            }
        }
        let mut rewards = BTreeMap::new();
        let mut transform_stats = BTreeMap::new();
        for ((m, a), p) in self.models.iter().zip(&self.rewards).zip(&p2) {
            let sd = (p.ss / a.n as f64).sqrt();
            let q = |t: usize| {
                let (bin, within) = p.targets[t];
                let (lo, _) = locate(&p.lo[t], within as usize);
                f64::from(from_key(((bin as u32) << 16) | lo as u32))
            };
            rewards.insert(
                m.clone(),
                RewardStats {
                    count: a.n,
                    min: a.min,
                    max: a.max,
                    mean: p.mean,
                    sd,
                    q001: q(0),
                    q999: q(1),
                },
            );
            transform_stats.insert(
                m.clone(),
                TransformStats {
                    min: a.min,
                    max: a.max,
                    mean: p.mean,
                    sd,
                },
            );
        }
        Ok(Finished {
            rewards,
            transform_stats,
        })
    }

    /// dataset.yaml (without `integrity`, which the layout writer gives).
    pub fn manifest(
        &self,
        finished: Finished,
        name: String,
        opts: &IngestOptions,
        form: &str,
        files: &[(String, PathBuf)],
        dropped: usize,
    ) -> Result<DatasetManifest> {
        let prompts = self.sizes.len();
        let mut sizes = self.sizes.clone();
        sizes.sort_unstable();
        let median = if prompts % 2 == 1 {
            sizes[prompts / 2] as f64
        } else {
            (sizes[prompts / 2 - 1] + sizes[prompts / 2]) as f64 / 2.0
        };
        let per_prompt = self.prompt_means.iter().sum::<f64>() / prompts as f64;
        let pooled = self.correct_sum / self.rows as f64;
        let files = files
            .iter()
            .map(|(role, p)| {
                Ok(SourceFileInfo {
                    role: role.clone(),
                    path: p.display().to_string(),
                    sha256: sha256_file(p)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(DatasetManifest {
            name,
            policy: opts.policy.clone(),
            task: opts.task.clone(),
            reward_models: self.models.clone(),
            correct_kind: if self.binary { "binary" } else { "continuous" }.into(),
            has_gen_seconds: self.has_gen_seconds,
            counts: Counts {
                prompts,
                responses: self.rows,
                responses_per_prompt_min: sizes[0],
                responses_per_prompt_median: median,
                responses_per_prompt_max: sizes[prompts - 1],
            },
            base_accuracy: BaseAccuracy {
                mean_over_prompts: per_prompt,
                pooled,
            },
            rewards: finished.rewards,
            source: SourceInfo {
                form: form.into(),
                files,
                dropped_unscored: dropped,
            },
            privalign_version: env!("CARGO_PKG_VERSION").into(),
            transform_stats: finished.transform_stats,
            integrity: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The histogram refinement selects the same order statistic as a sort,
    /// on values with ties, signed zeros, subnormals and both signs.
    #[test]
    fn order_keys_sort_like_total_cmp_and_select_exactly() {
        let mut v: Vec<f32> = vec![
            -0.0,
            0.0,
            1e-45,
            -1e-45,
            f32::MAX,
            f32::MIN,
            3.5,
            3.5,
            -2.25,
            1e30,
        ];
        let mut x = 0x9e37_79b9u32;
        for _ in 0..5000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            v.push(f32::from_bits(x & 0xbfff_ffff) * if x & 1 == 0 { 1.0 } else { -1.0 });
        }
        v.retain(|x| x.is_finite());
        for &a in &v {
            assert_eq!(from_key(order_key(a)).to_bits(), a.to_bits());
        }
        let mut sorted: Vec<f64> = v.iter().map(|&x| f64::from(x)).collect();
        sorted.sort_by(|a, b| a.total_cmp(b));
        let mut hi = vec![0u64; 1 << 16];
        for &a in &v {
            hi[(order_key(a) >> 16) as usize] += 1;
        }
        for q in [0.0, 0.001, 0.3, 0.5, 0.999, 1.0] {
            let k = rank(q, v.len());
            let (bin, within) = locate(&hi, k);
            let mut lo = vec![0u64; 1 << 16];
            for &a in &v {
                if (order_key(a) >> 16) as usize == bin {
                    lo[(order_key(a) & 0xffff) as usize] += 1;
                }
            }
            let (l, _) = locate(&lo, within as usize);
            let got = f64::from(from_key(((bin as u32) << 16) | l as u32));
            assert_eq!(got.to_bits(), sorted[k].to_bits(), "q = {q}");
        }
    }
}
