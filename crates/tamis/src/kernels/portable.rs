//! The portable fast path: plain Rust, word at a time, for CPUs without fast PDEP/PEXT (ARM, AMD
//! before Zen 3) and builds without `bmi-select`. The work is proportional to the number of
//! selected (or set) bits, plus one step per 64-bit word; [`super::scalar`] stays the
//! bit-at-a-time oracle the tests compare this against.

use super::bits::{group_bytes, le64, low_bits, sel_word};

/// Appends code `i < n` to `out` iff bit `i` of `sel` is set: per 64-code group, skip it when
/// nothing is selected, else read each selected code with one unaligned 8-byte load.
pub fn select_unpack(packed: &[u8], k: u8, n: usize, sel: &[u64], out: &mut Vec<u32>) {
    if k == 0 {
        let count: usize = (0..n.div_ceil(64))
            .map(|g| sel_word(sel, g, n).count_ones() as usize)
            .sum();
        out.resize(out.len() + count, 0);
        return;
    }
    let k = k as usize;
    let mask = low_bits(k);
    let mut pad = [0u8; 264];
    for g in 0..n.div_ceil(64) {
        let mut w = sel_word(sel, g, n);
        if w == 0 {
            continue;
        }
        let bytes = group_bytes(packed, k, g, &mut pad);
        out.reserve(w.count_ones() as usize);
        while w != 0 {
            let j = w.trailing_zeros() as usize;
            w &= w - 1;
            let bit = j * k;
            // k ≤ 32 and bit % 8 ≤ 7: the code lies within the 8 bytes read.
            out.push(((le64(&bytes[bit / 8..]) >> (bit % 8)) & mask) as u32);
        }
    }
}

/// PDEP one word at a time, looping over the set bits of `select` only.
pub fn transform(filtered: &[u64], select: &[u64], out: &mut [u64]) {
    let mut j = 0usize; // next bit of `filtered`
    for (o, &s) in out.iter_mut().zip(select) {
        let mut r = 0u64;
        let mut m = s;
        while m != 0 {
            let low = m & m.wrapping_neg();
            if filtered.get(j / 64).is_some_and(|w| w >> (j % 64) & 1 == 1) {
                r |= low;
            }
            j += 1;
            m ^= low;
        }
        *o = r;
    }
}

/// PEXT over `n` bits, looping over the set bits of `mask` only; returns the bits written.
pub fn compress(bits: &[u64], mask: &[u64], n: usize, out: &mut Vec<u64>) -> usize {
    out.clear();
    let mut written = 0usize;
    for g in 0..n.div_ceil(64) {
        let mut m = sel_word(mask, g, n);
        let b = bits.get(g).copied().unwrap_or(0);
        let (mut r, mut c) = (0u64, 0usize);
        while m != 0 {
            let t = m.trailing_zeros();
            r |= (b >> t & 1) << c;
            c += 1;
            m &= m - 1;
        }
        if c == 0 {
            continue;
        }
        let shift = written % 64;
        if shift == 0 {
            out.push(r);
        } else {
            *out.last_mut().expect("partial word") |= r << shift;
            if shift + c > 64 {
                out.push(r >> (64 - shift));
            }
        }
        written += c;
    }
    written
}
