//! PCG64 (rand_pcg's `Lcg128Xsl64`), its state in plain integers so the
//! batch-draw loops keep it in registers.
//!
//! `rand_pcg::Pcg64` keeps its state private, so a draw loop over it
//! stores the 128-bit state back through the generator on every step; with
//! the state a local `u128` the loop is a multiply chain and two Canon
//! multiplies. The words are rand_pcg's, word for word
//! (`tests::words_are_rand_pcgs`).

/// rand_pcg's `Lcg128Xsl64` multiplier.
pub(crate) const MUL: u128 = 0x2360_ED05_1FC6_5DA4_4385_DF64_9FCC_F645;

/// The stream of `rand_pcg::Pcg64::new(state, stream)`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pcg64Words {
    /// The state whose step gives the next word.
    pub(crate) state: u128,
    pub(crate) inc: u128,
}

impl Pcg64Words {
    /// As `Pcg64::new(state, stream)`: increment 2·stream + 1, the state
    /// moved by one increment and one step before the first word.
    pub(crate) fn new(state: u128, stream: u128) -> Self {
        let inc = (stream << 1) | 1;
        let mut g = Self {
            state: state.wrapping_add(inc),
            inc,
        };
        g.step();
        g
    }

    #[inline(always)]
    fn step(&mut self) {
        self.state = self.state.wrapping_mul(MUL).wrapping_add(self.inc);
    }

    /// The next 64-bit word: a step, then the XSL-RR output of the state.
    #[inline(always)]
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.step();
        let s = self.state;
        (((s >> 64) as u64) ^ (s as u64)).rotate_right((s >> 122) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::Pcg64Words;
    use rand::Rng;
    use rand_pcg::Pcg64;

    /// Word for word rand_pcg's stream, for states and streams at the edges
    /// of their range.
    #[test]
    fn words_are_rand_pcgs() {
        for (state, stream) in [
            (0u128, 0u128),
            (1, 1),
            (u128::MAX, u128::MAX),
            (0x0123_4567_89ab_cdef_fedc_ba98_7654_3210, 2),
            (0xdead_beef, 0x0a02_bdbf_7bb3_c0a7),
        ] {
            let (mut ours, mut theirs) =
                (Pcg64Words::new(state, stream), Pcg64::new(state, stream));
            for k in 0..1000 {
                assert_eq!(
                    ours.next_u64(),
                    theirs.next_u64(),
                    "state {state:#x}, stream {stream}, word {k}"
                );
            }
        }
    }
}
