//! Batch indices sixteen at a time with AVX-512: the same words, the same
//! indices as [`super::draw::Drawer::fill`]'s scalar loop.
//!
//! Eight lanes hold the PCG64 states of the next eight words (lane l: the
//! state after l + 1 more steps); a block outputs their words (XSL-RR),
//! cuts each into its two 32-bit halves, maps each half to an index by
//! Canon's multiply, and advances every lane by eight steps at once
//! (s ← a⁸·s + c·(1 + a + … + a⁷), exact in wrapping 128-bit arithmetic,
//! the constants computed at compile time,
//! done on 64-bit lanes with 32-bit partial products). A block any of whose
//! sixteen halves falls in Canon's biased zone is left unconsumed for the
//! scalar loop, which knows the correction's word shift. Integer arithmetic
//! only, so the result is the scalar loop's bit for bit
//! (`draw::tests::fill_is_next_one_by_one` runs both).

use std::arch::x86_64::*;

use super::pcg::{MUL, Pcg64Words};

/// (a⁸, 1 + a + … + a⁷), wrapping: eight steps of s ← a·s + c are
/// s ← a⁸·s + c·(1 + a + … + a⁷), whatever the stream's increment c.
const LEAP8: (u128, u128) = {
    let (mut m, mut sum) = (1u128, 0u128);
    let mut k = 0;
    while k < 8 {
        sum = sum.wrapping_add(m);
        m = m.wrapping_mul(MUL);
        k += 1;
    }
    (m, sum)
};

/// Fills `out` from its start with indices below `range`, sixteen per block
/// (eight words), stopping before the first block with a biased half or
/// when fewer than sixteen remain; advances `g` past the words used and
/// returns how many indices were written (a multiple of sixteen).
///
/// # Safety
/// AVX-512F and AVX-512DQ must be available.
#[target_feature(enable = "avx512f,avx512dq")]
pub(crate) unsafe fn fill_blocks(g: &mut Pcg64Words, range: u32, out: &mut [usize]) -> usize {
    if out.len() < 16 {
        return 0;
    }
    let (m8, c8) = (LEAP8.0, g.inc.wrapping_mul(LEAP8.1));
    let mut st = [0u128; 8];
    let mut s = *g;
    for x in st.iter_mut() {
        s.next_u64();
        *x = s.state;
    }
    let split = |v: &[u128; 8]| -> ([u64; 8], [u64; 8]) {
        (
            std::array::from_fn(|l| (v[l] >> 64) as u64),
            std::array::from_fn(|l| v[l] as u64),
        )
    };
    let (h0, l0) = split(&st);
    let k64 = |x: u64| _mm512_set1_epi64(x as i64);
    // SAFETY: the caller guarantees AVX-512F/DQ; loads and stores are
    // unaligned and within `out` (16 indices per block, checked).
    unsafe {
        let mut hi = _mm512_loadu_si512(h0.as_ptr().cast());
        let mut lo = _mm512_loadu_si512(l0.as_ptr().cast());
        let (a_hi, a_lo) = (k64((m8 >> 64) as u64), k64(m8 as u64));
        let a_lo_hi = k64((m8 as u64) >> 32);
        let (c_hi, c_lo) = (k64((c8 >> 64) as u64), k64(c8 as u64));
        let m32 = k64(0xffff_ffff);
        let one = k64(1);
        let r = k64(u64::from(range));
        let zone = k64(u64::from(range.wrapping_neg()));
        let even = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
        let odd = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
        let mut k = 0;
        let (mut last_hi, mut last_lo) = (hi, lo);
        while out.len() - k >= 16 {
            // XSL-RR output of each lane's state.
            let word = _mm512_rorv_epi64(_mm512_xor_si512(hi, lo), _mm512_srli_epi64(hi, 58));
            let p_lo = _mm512_mul_epu32(word, r);
            let p_hi = _mm512_mul_epu32(_mm512_srli_epi64(word, 32), r);
            let biased = _mm512_cmpgt_epu64_mask(_mm512_and_si512(p_lo, m32), zone)
                | _mm512_cmpgt_epu64_mask(_mm512_and_si512(p_hi, m32), zone);
            if biased != 0 {
                break;
            }
            let (i_lo, i_hi) = (_mm512_srli_epi64(p_lo, 32), _mm512_srli_epi64(p_hi, 32));
            let dst = out.as_mut_ptr().add(k).cast::<__m512i>();
            _mm512_storeu_si512(dst, _mm512_permutex2var_epi64(i_lo, even, i_hi));
            _mm512_storeu_si512(dst.add(1), _mm512_permutex2var_epi64(i_lo, odd, i_hi));
            k += 16;
            (last_hi, last_lo) = (hi, lo);
            // (hi, lo) ← (hi, lo)·a⁸ + c₈ mod 2¹²⁸: the high word of lo·a_lo
            // from 32-bit partial products, then the cross terms and c.
            let lo1 = _mm512_srli_epi64(lo, 32);
            let p00 = _mm512_mul_epu32(lo, a_lo);
            let p01 = _mm512_mul_epu32(lo, a_lo_hi);
            let p10 = _mm512_mul_epu32(lo1, a_lo);
            let p11 = _mm512_mul_epu32(lo1, a_lo_hi);
            let mid = _mm512_add_epi64(
                _mm512_srli_epi64(p00, 32),
                _mm512_add_epi64(_mm512_and_si512(p01, m32), _mm512_and_si512(p10, m32)),
            );
            let mulhi = _mm512_add_epi64(
                _mm512_add_epi64(p11, _mm512_srli_epi64(mid, 32)),
                _mm512_add_epi64(_mm512_srli_epi64(p01, 32), _mm512_srli_epi64(p10, 32)),
            );
            let new_hi = _mm512_add_epi64(
                _mm512_add_epi64(mulhi, c_hi),
                _mm512_add_epi64(_mm512_mullo_epi64(lo, a_hi), _mm512_mullo_epi64(hi, a_lo)),
            );
            let new_lo = _mm512_add_epi64(_mm512_mullo_epi64(lo, a_lo), c_lo);
            let carry = _mm512_cmplt_epu64_mask(new_lo, c_lo);
            hi = _mm512_mask_add_epi64(new_hi, carry, new_hi, one);
            lo = new_lo;
        }
        if k > 0 {
            // The generator now stands at the last word used: lane 7 of the
            // last block.
            let (mut h, mut l) = ([0u64; 8], [0u64; 8]);
            _mm512_storeu_si512(h.as_mut_ptr().cast(), last_hi);
            _mm512_storeu_si512(l.as_mut_ptr().cast(), last_lo);
            g.state = (u128::from(h[7]) << 64) | u128::from(l[7]);
        }
        k
    }
}

#[cfg(test)]
mod tests {
    use super::LEAP8;
    use crate::sweep::engine::pcg::Pcg64Words;

    /// The leap is eight single steps, for several streams.
    #[test]
    fn leap_is_eight_steps() {
        for stream in [0u128, 1, 2, 9, u128::MAX >> 1] {
            let mut g = Pcg64Words::new(5, stream);
            let s0 = g.state;
            for _ in 0..8 {
                g.next_u64();
            }
            let c8 = g.inc.wrapping_mul(LEAP8.1);
            assert_eq!(LEAP8.0.wrapping_mul(s0).wrapping_add(c8), g.state);
        }
    }
}
