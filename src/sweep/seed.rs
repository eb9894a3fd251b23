//! Deterministic random streams.
//!
//! A replicate's generator is a PCG64 whose 128-bit state is the first 16
//! bytes of SHA-256 over (seed, dataset, reward model, prompt id, n,
//! replicate), length-prefixed so that no two tuples collide, and whose stream
//! selects the use: batch A, batch B, or an algorithm's mechanism coins. The
//! batch streams depend on nothing else, so every algorithm and every σ/β value
//! sees the same batches (common random numbers), and the numbers are the same
//! for any thread count or order of work.

use rand_pcg::Pcg64;
use sha2::{Digest, Sha256};

/// Identifies one (dataset, reward model, prompt, n) work item.
#[derive(Clone, Debug)]
pub struct StreamKey<'a> {
    pub seed: u64,
    pub dataset: &'a str,
    pub reward_model: &'a str,
    pub prompt_id: &'a str,
    pub n: usize,
}

/// What a stream is used for.
#[derive(Clone, Copy, Debug)]
pub enum StreamUse {
    /// Phase-1 batch (the batch of BoN and PrivBoN too).
    BatchA,
    /// ITP's fresh Phase-2 batch, drawn lazily.
    BatchB,
    /// An algorithm's own randomness (sampled estimator, λ̃ draws), keyed by a
    /// stable id of the algorithm and its parameters.
    Mechanism(u64),
}

impl StreamKey<'_> {
    /// The 128-bit generator state of `replicate` (one SHA-256; every use's
    /// stream of the replicate derives from it with [`Self::rng_from`]).
    pub fn state(&self, replicate: usize) -> u128 {
        self.replicate_states().state(replicate)
    }

    /// The states of every replicate of this key, sharing the hash of the
    /// key's bytes: SHA-256 of the key fills its first 64-byte block, which
    /// is then compressed once per key instead of once per replicate.
    pub fn replicate_states(&self) -> ReplicateStates {
        let mut h = Sha256::new();
        h.update(b"privalign/v1");
        h.update(self.seed.to_le_bytes());
        for s in [self.dataset, self.reward_model, self.prompt_id] {
            h.update((s.len() as u64).to_le_bytes());
            h.update(s.as_bytes());
        }
        h.update((self.n as u64).to_le_bytes());
        ReplicateStates(h)
    }

    /// The generator for `replicate` and `use_`.
    pub fn rng(&self, replicate: usize, use_: StreamUse) -> Pcg64 {
        self.rng_from(self.state(replicate), use_)
    }

    /// The generator for a replicate's `state` and `use_`.
    pub fn rng_from(&self, state: u128, use_: StreamUse) -> Pcg64 {
        Pcg64::new(state, use_.stream())
    }
}

impl StreamUse {
    /// The PCG64 stream number of this use (`Pcg64::new(state, stream)`).
    pub fn stream(self) -> u128 {
        match self {
            StreamUse::BatchA => 1,
            StreamUse::BatchB => 2,
            StreamUse::Mechanism(id) => (u128::from(id) << 8) | 3,
        }
    }
}

/// A key's hash state before the replicate ([`StreamKey::replicate_states`]).
#[derive(Clone)]
pub struct ReplicateStates(Sha256);

impl ReplicateStates {
    /// The generator state of `replicate`: the first 16 bytes of the
    /// SHA-256 of the key's bytes and the replicate's.
    pub fn state(&self, replicate: usize) -> u128 {
        let mut h = self.0.clone();
        h.update((replicate as u64).to_le_bytes());
        let d = h.finalize();
        let mut b = [0u8; 16];
        b.copy_from_slice(&d[..16]);
        u128::from_le_bytes(b)
    }
}

/// A stable 64-bit id of a text (an algorithm's canonical description).
pub fn stable_id(text: &str) -> u64 {
    let d = Sha256::digest(text.as_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_le_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A replicate's state is SHA-256 of the whole key, hashed in one go
    /// here (length-prefixed strings, little-endian integers), whichever
    /// way the engine splits the hashing.
    #[test]
    fn replicate_state_is_the_keys_sha256() {
        let key = StreamKey {
            seed: 7,
            dataset: "synthetic-math",
            reward_model: "gemma",
            prompt_id: "p0042",
            n: 4096,
        };
        let mut bytes = b"privalign/v1".to_vec();
        bytes.extend(7u64.to_le_bytes());
        for s in ["synthetic-math", "gemma", "p0042"] {
            bytes.extend((s.len() as u64).to_le_bytes());
            bytes.extend(s.as_bytes());
        }
        bytes.extend(4096u64.to_le_bytes());
        let states = key.replicate_states();
        for rep in [0usize, 1, 49, 1 << 40] {
            let mut b = bytes.clone();
            b.extend((rep as u64).to_le_bytes());
            let d = Sha256::digest(&b);
            let want = u128::from_le_bytes(d[..16].try_into().unwrap());
            assert_eq!(states.state(rep), want, "replicate {rep}");
            assert_eq!(key.state(rep), want, "replicate {rep}");
        }
    }
}
