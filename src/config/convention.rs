//! `convention: reference-scripts`: every convention of the paper's
//! reference Python scripts at once (`select::reference_scripts` describes
//! each). Applied to the typed config before validation, so the resolved
//! config — and the results manifest — show the effective keys.

use super::types::*;

/// Set the keys a named convention implies (overriding what the file says).
pub fn apply(c: &mut ExperimentConfig) {
    if c.convention != Some(ConventionSpec::ReferenceScripts) {
        return;
    }
    c.sampling = SamplingSpec::WithoutReplacement;
    for rm in c.reward_models.values_mut() {
        rm.transform.kind = TransformKind::Standardize;
        rm.transform.lo = None;
        rm.transform.hi = None;
    }
    if let Some(itp) = &mut c.algorithms.itp {
        itp.batches = BatchesSpec::Shared;
        itp.envelope = EnvelopeSpec::BatchMax;
        itp.fallback = FallbackSpec::DatasetBase;
    }
    if let Some(p) = &mut c.algorithms.privitp {
        p.batches = BatchesSpec::Shared;
        p.envelope = EnvelopeSpec::BatchMax;
        p.fallback = FallbackSpec::DatasetBase;
        p.acceptance = AcceptanceSpec::NoiseAveraged;
    }
}
