//! The algorithms' names and parameters: the one home of every spelling of
//! an algorithm (config key, result files, tables, plots, check) and of the
//! tags that key their random streams.
//!
//! Everything that names an algorithm goes through [`AlgorithmKind`]; a new
//! algorithm is a new variant here, and the compiler then lists every match
//! that must learn about it.

/// The algorithms of the paper, without parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AlgorithmKind {
    /// Best-of-N (non-private baseline).
    Bon,
    /// Private BoN with Gumbel noise (the exponential mechanism).
    PrivBon,
    /// Private BoN with Gaussian noise (report noisy max).
    PrivBonGauss,
    /// InferenceTimePessimism (non-private skyline).
    Itp,
    /// Private ITP (paper `alg:privitp`).
    PrivItp,
}

impl AlgorithmKind {
    /// Every kind, in the order tables list them.
    pub const ALL: [AlgorithmKind; 5] = [
        AlgorithmKind::Bon,
        AlgorithmKind::PrivBon,
        AlgorithmKind::PrivBonGauss,
        AlgorithmKind::PrivItp,
        AlgorithmKind::Itp,
    ];

    /// The machine name: the key under `algorithms:` in a config, the
    /// `algorithm` column of result files, reference.yaml and claims. A
    /// public interface — never change one.
    pub const fn name(self) -> &'static str {
        match self {
            AlgorithmKind::Bon => "bon",
            AlgorithmKind::PrivBon => "privbon",
            AlgorithmKind::PrivBonGauss => "privbon_gauss",
            AlgorithmKind::Itp => "itp",
            AlgorithmKind::PrivItp => "privitp",
        }
    }

    /// The name a reader sees: table rows and plot legends (the paper's).
    pub const fn label(self) -> &'static str {
        match self {
            AlgorithmKind::Bon => "BoN",
            AlgorithmKind::PrivBon => "PrivBoN",
            AlgorithmKind::PrivBonGauss => "PrivBoN (Gauss)",
            AlgorithmKind::Itp => "ITP",
            AlgorithmKind::PrivItp => "PrivITP",
        }
    }

    /// The command-line spelling (`privalign audit --mechanism`, audit.json):
    /// the machine name with `-` for `_`, as clap spells its values.
    pub const fn cli_name(self) -> &'static str {
        match self {
            AlgorithmKind::PrivBonGauss => "privbon-gauss",
            k => k.name(),
        }
    }

    /// The kind a result file's `algorithm` column names.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether it adds noise (and so has a σ and an ε).
    pub const fn is_private(self) -> bool {
        matches!(
            self,
            AlgorithmKind::PrivBon | AlgorithmKind::PrivBonGauss | AlgorithmKind::PrivItp
        )
    }

    /// Whether it has the regularisation β (the ITP family).
    pub const fn has_beta(self) -> bool {
        matches!(self, AlgorithmKind::Itp | AlgorithmKind::PrivItp)
    }
}

/// The machine names as constants, for comparing result rows
/// (`r.algorithm == PRIVITP`) and for match patterns; each is its kind's
/// [`AlgorithmKind::name`].
pub mod names {
    use super::AlgorithmKind;
    pub const BON: &str = AlgorithmKind::Bon.name();
    pub const PRIVBON: &str = AlgorithmKind::PrivBon.name();
    pub const PRIVBON_GAUSS: &str = AlgorithmKind::PrivBonGauss.name();
    pub const ITP: &str = AlgorithmKind::Itp.name();
    pub const PRIVITP: &str = AlgorithmKind::PrivItp.name();
}

/// Stream-label tags (see [`Algorithm::stream_label`]): fixed constants,
/// equal to today's machine names but deliberately separate from them, so
/// that a renamed result name can never move a random stream.
const STREAM_TAG_BON: &str = "bon";
const STREAM_TAG_PRIVBON: &str = "privbon";
const STREAM_TAG_ITP: &str = "itp";
const STREAM_TAG_PRIVITP: &str = "privitp";

/// PrivITP's split of a total noise σ into (σ_X, σ_Z) = (σ/2, σ/2), the
/// paper's choice (every table, plot, FSRC run and audit that speaks of "σ"
/// for PrivITP means this split).
pub fn split_sigma(sigma: f64) -> (f64, f64) {
    (sigma / 2.0, sigma / 2.0)
}

/// Which batch ITP's Phase 2 runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Batches {
    /// A fresh independent batch B (the paper's algorithm; needed for privacy).
    Fresh,
    /// Reuse batch A (as in Huang et al.).
    Shared,
}

impl Batches {
    /// The batch mode's tag in stream labels (fixed; never Debug text).
    pub fn key(self) -> &'static str {
        match self {
            Batches::Fresh => "fresh",
            Batches::Shared => "shared",
        }
    }
}

/// PrivITP's parameters (paper `alg:privitp`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrivItpParams {
    pub sigma_x: f64,
    pub sigma_z: f64,
    pub beta: f64,
    /// Truncation parameter L in M = (R_max + σ_Z·L − λ̃)/β.
    pub l: f64,
    /// Optional clamp of λ̃ to [lo, hi] (post-processing).
    pub clamp: Option<(f64, f64)>,
    pub batches: Batches,
}

impl PrivItpParams {
    /// The paper's split of a total noise σ ([`split_sigma`]), L = 4, no
    /// clamp, fresh Phase-2 batch.
    pub fn split_half(sigma: f64, beta: f64) -> Self {
        let (sigma_x, sigma_z) = split_sigma(sigma);
        Self {
            sigma_x,
            sigma_z,
            beta,
            l: 4.0,
            clamp: None,
            batches: Batches::Fresh,
        }
    }
}

/// One algorithm with its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Algorithm {
    Bon,
    PrivBon { sigma: f64 },
    PrivBonGauss { sigma: f64 },
    Itp { beta: f64, batches: Batches },
    PrivItp(PrivItpParams),
}

/// An f64 in a stream label: its exact bit pattern, so that labels never
/// depend on how a number is printed.
fn bits(x: f64) -> String {
    format!("{:016x}", x.to_bits())
}

impl Algorithm {
    /// Which algorithm, without its parameters.
    pub fn kind(&self) -> AlgorithmKind {
        match self {
            Algorithm::Bon => AlgorithmKind::Bon,
            Algorithm::PrivBon { .. } => AlgorithmKind::PrivBon,
            Algorithm::PrivBonGauss { .. } => AlgorithmKind::PrivBonGauss,
            Algorithm::Itp { .. } => AlgorithmKind::Itp,
            Algorithm::PrivItp(_) => AlgorithmKind::PrivItp,
        }
    }

    /// Result-file name (design §10): [`AlgorithmKind::name`].
    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// Total noise σ (PrivITP: σ_X + σ_Z, the paper's σ for the `half` split).
    pub fn sigma(&self) -> Option<f64> {
        match self {
            Algorithm::PrivBon { sigma } | Algorithm::PrivBonGauss { sigma } => Some(*sigma),
            Algorithm::PrivItp(p) => Some(p.sigma_x + p.sigma_z),
            _ => None,
        }
    }

    pub fn beta(&self) -> Option<f64> {
        match self {
            Algorithm::Itp { beta, .. } => Some(*beta),
            Algorithm::PrivItp(p) => Some(p.beta),
            _ => None,
        }
    }

    /// The label that keys this algorithm's mechanism stream: fixed tags and
    /// the exact bits of every parameter, written out field by field so that
    /// renaming a Rust type or field never moves a number (pinned by a test).
    pub fn stream_label(&self) -> String {
        match self {
            Algorithm::Bon => STREAM_TAG_BON.into(),
            Algorithm::PrivBon { sigma } => {
                format!("{STREAM_TAG_PRIVBON}/gumbel/sigma={}", bits(*sigma))
            }
            Algorithm::PrivBonGauss { sigma } => {
                format!("{STREAM_TAG_PRIVBON}/gauss/sigma={}", bits(*sigma))
            }
            Algorithm::Itp { beta, batches } => {
                format!(
                    "{STREAM_TAG_ITP}/beta={}/batches={}",
                    bits(*beta),
                    batches.key()
                )
            }
            Algorithm::PrivItp(p) => format!(
                "{STREAM_TAG_PRIVITP}/sigma_x={}/sigma_z={}/beta={}/L={}/clamp={}/batches={}",
                bits(p.sigma_x),
                bits(p.sigma_z),
                bits(p.beta),
                bits(p.l),
                match p.clamp {
                    Some((lo, hi)) => format!("{},{}", bits(lo), bits(hi)),
                    None => "none".into(),
                },
                p.batches.key()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_distinct() {
        for k in AlgorithmKind::ALL {
            assert_eq!(AlgorithmKind::from_name(k.name()), Some(k));
        }
        let mut names: Vec<_> = AlgorithmKind::ALL.iter().map(|k| k.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), AlgorithmKind::ALL.len());
    }
}
