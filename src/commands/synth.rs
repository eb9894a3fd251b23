//! `privalign synth`: its flags and their conversion into [`SynthOptions`].

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::time::Instant;

use crate::data::synth::{Preset, Size, SynthOptions, synth};

#[derive(Debug, Args)]
pub struct SynthArgs {
    /// Which synthetic world: math (binary correctness, reward hacking), gaussian
    /// (r̂ = r* + N(0, σ_r²)), open-ended (continuous gold score).
    #[arg(long, value_enum, default_value = "math")]
    pub preset: Preset,
    /// demo = 100 prompts × 1000 responses; paper = 1000 × 10,000.
    #[arg(long, value_enum, default_value = "demo")]
    pub size: Size,
    /// Number of prompts (overrides --size).
    #[arg(long)]
    pub prompts: Option<usize>,
    /// Responses per prompt (overrides --size).
    #[arg(long)]
    pub responses: Option<usize>,
    /// Reward models, comma-separated (math/open-ended: oasst,gemma,llama,armo;
    /// gaussian: gauss<σ_r>, e.g. gauss0.5).
    #[arg(long, value_delimiter = ',')]
    pub reward_models: Option<Vec<String>>,
    /// Random seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output directory for responses.parquet, rewards_<model>.parquet, synth.yaml.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Replace the output directory if it exists.
    #[arg(long)]
    pub force: bool,
}

/// `--size` gives the defaults that `--prompts` and `--responses` override.
impl From<SynthArgs> for SynthOptions {
    fn from(a: SynthArgs) -> Self {
        let (p, n) = a.size.dims();
        SynthOptions {
            preset: a.preset,
            prompts: a.prompts.unwrap_or(p),
            responses: a.responses.unwrap_or(n),
            reward_models: a.reward_models,
            seed: a.seed,
            out: a.out,
            force: a.force,
        }
    }
}

/// Generate, then print what was written.
pub fn run(a: SynthArgs) -> Result<()> {
    let opts = SynthOptions::from(a);
    let start = Instant::now();
    let out = synth(&opts)?;
    crate::outln!(
        "wrote {} prompts × {} responses ({:?} preset) to {}",
        opts.prompts,
        opts.responses,
        opts.preset,
        out.display()
    )?;
    eprintln!("synth took {:.2} s", start.elapsed().as_secs_f64());
    Ok(())
}
