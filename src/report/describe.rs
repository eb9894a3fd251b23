//! `privalign describe DATASET`: the scale of each reward model's raw scores
//! (from `dataset.yaml`, no data loaded) and a suggested fixed clip interval.
//!
//! σ, β and Δ_r are in transformed units (design §5), so a user choosing a
//! `clip` transform needs the raw scale first. The suggestion is the 0.1 % /
//! 99.9 % quantile range rounded outward to three significant digits of its
//! width: it drops the extreme 0.2 % (which would otherwise stretch the
//! interval and squash everyone else) and is round enough to write in a
//! config. Read from this dataset, it is a data-dependent choice (README
//! "Units and sensitivity"): fine for exploring, while a private deployment
//! should fix the bounds from public knowledge of the reward model.

use anyhow::Result;
use std::path::Path;

use super::format::{Cell, ColumnSpec, Table};
use crate::data::prepared::{DatasetManifest, RewardStats, load_manifest};

/// A suggested `clip` interval for a reward model, or `None` when every score
/// is equal (nothing to select by).
pub fn suggested_clip(s: &RewardStats) -> Option<(f64, f64)> {
    let (lo, hi) = if s.q999 > s.q001 {
        (s.q001, s.q999)
    } else if s.max > s.min {
        (s.min, s.max)
    } else {
        return None;
    };
    let step = 10f64.powf((hi - lo).log10().floor() - 2.0);
    // Round, then undo floating noise (0.1 · 3 = 0.30000000000000004).
    let tidy = |x: f64| (x * 1e12).round() / 1e12;
    Some((
        tidy((lo / step).floor() * step),
        tidy((hi / step).ceil() * step),
    ))
}

/// The describe table: one row per reward model.
pub fn describe_table(m: &DatasetManifest) -> Table {
    let cols = [
        ("reward_model", "reward model", "reward model"),
        ("count", "count", "count"),
        ("min", "min", "min"),
        ("max", "max", "max"),
        ("mean", "mean", "mean"),
        ("sd", "sd", "sd"),
        ("q001", "q0.1%", "$q_{0.1\\%}$"),
        ("q999", "q99.9%", "$q_{99.9\\%}$"),
        ("clip_lo", "clip lo", "clip lo"),
        ("clip_hi", "clip hi", "clip hi"),
    ];
    let rows = m
        .reward_models
        .iter()
        .filter_map(|name| m.rewards.get(name).map(|s| (name, s)))
        .map(|(name, s)| {
            let clip = suggested_clip(s);
            let opt = |x: Option<f64>| x.map(Cell::Num).unwrap_or(Cell::Empty);
            vec![
                Cell::Text(name.clone()),
                Cell::Text(s.count.to_string()),
                Cell::Num(s.min),
                Cell::Num(s.max),
                Cell::Num(s.mean),
                Cell::Num(s.sd),
                Cell::Num(s.q001),
                Cell::Num(s.q999),
                opt(clip.map(|c| c.0)),
                opt(clip.map(|c| c.1)),
            ]
        })
        .collect();
    let caption = format!(
        "Raw scores of dataset `{}` ({} prompts, {} responses, {} per prompt; base accuracy {:.4}, correctness {}). \
         sd is the population sd (what zscore divides by). Suggested clip: the 0.1%/99.9% quantiles rounded outward, \
         e.g. `{{transform: {{kind: clip, lo: LO, hi: HI}}}}`; read from this data it is a data-dependent choice — \
         for a private deployment fix the bounds from what is known about the reward model.",
        m.name,
        m.counts.prompts,
        m.counts.responses,
        if m.counts.responses_per_prompt_min == m.counts.responses_per_prompt_max {
            m.counts.responses_per_prompt_min.to_string()
        } else {
            format!(
                "{}..{}",
                m.counts.responses_per_prompt_min, m.counts.responses_per_prompt_max
            )
        },
        m.base_accuracy.mean_over_prompts,
        m.correct_kind
    );
    Table::new(
        cols.iter()
            .map(|(id, h, l)| ColumnSpec::new(*id, *h, *l))
            .collect(),
        rows,
        caption,
        "tab:describe".into(),
        4,
    )
}

/// `privalign describe DIR`.
pub fn describe(dir: &Path) -> Result<Table> {
    Ok(describe_table(&load_manifest(dir)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(min: f64, q001: f64, q999: f64, max: f64) -> RewardStats {
        RewardStats {
            count: 10,
            min,
            max,
            mean: 0.5 * (min + max),
            sd: 1.0,
            q001,
            q999,
        }
    }

    #[test]
    fn clip_suggestion_rounds_the_quantiles_outward() {
        // Width 13.13 → step 0.1.
        assert_eq!(
            suggested_clip(&stats(-9.0, -6.03, 7.1, 12.0)),
            Some((-6.1, 7.1))
        );
        // Width 0.48 → step 0.001; already round.
        assert_eq!(
            suggested_clip(&stats(-0.1, -0.0712, 0.4087, 0.5)),
            Some((-0.072, 0.409))
        );
        assert_eq!(suggested_clip(&stats(0.0, 0.0, 1.0, 1.0)), Some((0.0, 1.0)));
        // Quantiles equal (≥ 99.8% ties): fall back to min/max; all equal: none.
        assert_eq!(suggested_clip(&stats(0.0, 1.0, 1.0, 2.0)), Some((0.0, 2.0)));
        assert_eq!(suggested_clip(&stats(3.0, 3.0, 3.0, 3.0)), None);
    }
}
