//! What the engine computes once per pool and reuses for every n and
//! replicate: the rewards as one contiguous array, the exponential
//! mechanism's weights, and PrivITP's λ̃-free acceptance term.

use super::{Algorithm, Plan};
use crate::select::pool::{Pool, Values};

/// Per-pool tables of one run.
#[derive(Clone, Debug)]
pub struct PoolPrep {
    /// r̂ of every pool item.
    pub proxy: Vec<f64>,
    /// Per algorithm: for PrivBoN with Gumbel noise, e_i = exp((r̂_i − max r̂)/σ)
    /// — softmax over a batch is e_{b_j}/Σ e_{b_j} (the normalisation cancels
    /// the pool maximum), so no exp is evaluated per candidate. `None` when
    /// some e_i underflows (range/σ > 700), where a batch's own maximum must
    /// be the reference and the weights are computed per batch.
    pub privbon_weights: Vec<Option<Vec<f64>>>,
    /// Per algorithm: for PrivITP, each pool item's walk data packed in one
    /// cache line — r̂, G_B = G((r̂_i − R_max − σ_Z·L)/σ_Z) (the second term
    /// of the closed-form acceptance σ_Z·[G((r̂ − λ̃)/σ_Z) − G_B]/βM, which
    /// does not depend on λ̃) and the item's values — so a step of the walk
    /// touches one line of the pool, not three.
    pub privitp_items: Vec<Option<Vec<WalkItem>>>,
}

/// One pool item as PrivITP's lockstep walk reads it.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct WalkItem {
    pub r: f64,
    pub gb: f64,
    pub values: Values,
}

impl PoolPrep {
    pub fn new(plan: &Plan, pool: &Pool) -> Self {
        let proxy: Vec<f64> = pool.values.iter().map(|v| v.proxy).collect();
        let max = proxy.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let min = proxy.iter().copied().fold(f64::INFINITY, f64::min);
        let r_max = plan.cfg.privacy.r_max;
        let privbon_weights = plan
            .cfg
            .algorithms
            .iter()
            .map(|a| match *a {
                Algorithm::PrivBon { sigma } if (max - min) / sigma < 700.0 => {
                    Some(proxy.iter().map(|&r| ((r - max) / sigma).exp()).collect())
                }
                _ => None,
            })
            .collect();
        let privitp_items = plan
            .cfg
            .algorithms
            .iter()
            .zip(&plan.privitp)
            .map(|(a, pp)| match a {
                // Only the lockstep walk (a node-shifted table) reads them.
                Algorithm::PrivItp(p) if pp.as_ref().is_some_and(|pp| pp.table.is_some()) => {
                    let c = r_max + p.sigma_z * p.l;
                    Some(
                        pool.values
                            .iter()
                            .map(|v| WalkItem {
                                r: v.proxy,
                                gb: plan.gtable.g((v.proxy - c) / p.sigma_z),
                                values: *v,
                            })
                            .collect(),
                    )
                }
                _ => None,
            })
            .collect();
        Self {
            proxy,
            privbon_weights,
            privitp_items,
        }
    }
}
