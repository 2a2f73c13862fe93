//! Portable reference implementations: one value or one bit at a time, written to be obviously
//! right. They are the oracle of the property tests and the fallback on CPUs without BMI2.
//!
//! Conventions shared by every kernel: bitmaps are `u64` words, bit `i` of word `i / 64` is item
//! `i`; packed codes are LSB-first, value `i` of width `k` at bits `i*k .. i*k+k` of the byte
//! stream (Parquet's bit-packing).

/// Code `i` of width `k` (0..=32) from LSB-first packed bytes.
#[inline]
pub fn code_at(packed: &[u8], k: u8, i: usize) -> u32 {
    let k = k as usize;
    let mut v = 0u64;
    for b in 0..k {
        let bit = i * k + b;
        v |= ((packed[bit / 8] >> (bit % 8)) as u64 & 1) << b;
    }
    v as u32
}

#[inline]
fn bit(words: &[u64], i: usize) -> bool {
    words[i / 64] >> (i % 64) & 1 == 1
}

#[inline]
fn set(words: &mut [u64], i: usize) {
    words[i / 64] |= 1 << (i % 64);
}

/// Appends the codes `i < n` whose bit is set in `sel`, unpacked.
pub fn select_unpack(packed: &[u8], k: u8, n: usize, sel: &[u64], out: &mut Vec<u32>) {
    for i in 0..n {
        if bit(sel, i) {
            out.push(code_at(packed, k, i));
        }
    }
}

/// The paper's select: the codes `i < n` whose bit is set in `sel`, still packed at width `k`,
/// appended contiguously to the bit stream `out` (which must end on a word boundary: callers pass
/// an empty vector); returns how many codes were written.
pub fn select_packed(packed: &[u8], k: u8, n: usize, sel: &[u64], out: &mut Vec<u64>) -> usize {
    let mut written = 0usize;
    for i in 0..n {
        if !bit(sel, i) {
            continue;
        }
        let v = code_at(packed, k, i) as u64;
        for b in 0..k as usize {
            let pos = written * k as usize + b;
            if pos / 64 >= out.len() {
                out.push(0);
            }
            out[pos / 64] |= (v >> b & 1) << (pos % 64);
        }
        written += 1;
    }
    written
}

/// Transform (paper §4.3, PDEP): the `j`-th set bit of `select` takes the `j`-th bit of
/// `filtered`; unset bits stay unset. `out` has `select.len()` words.
pub fn transform(filtered: &[u64], select: &[u64], out: &mut [u64]) {
    let mut j = 0usize;
    for (w, o) in select.iter().zip(out.iter_mut()) {
        let mut r = 0u64;
        for b in 0..64 {
            if w >> b & 1 == 1 {
                if bit(filtered, j) {
                    r |= 1 << b;
                }
                j += 1;
            }
        }
        *o = r;
    }
}

/// Bit `i` of `out` (for `i < n`) is set iff `table[code_i]` is not 0 (`k <= 8`); returns the
/// largest code (0 when `n == 0`), for the caller's check against the dictionary's size.
pub fn lookup(packed: &[u8], k: u8, n: usize, table: &[u8; 256], out: &mut [u64]) -> u32 {
    out[..n.div_ceil(64)].fill(0);
    let mut max = 0;
    for i in 0..n {
        let c = code_at(packed, k, i);
        max = max.max(c);
        if table[c as usize] != 0 {
            set(out, i);
        }
    }
    max
}

/// Bit `i` of `out` (for `i < n`) is set iff bit `code_i` of the bitset `bits` is (a code past
/// the bitset is not); returns the largest code (0 when `n == 0`).
pub fn lookup_bits(packed: &[u8], k: u8, n: usize, bits: &[u32], out: &mut [u64]) -> u32 {
    out[..n.div_ceil(64)].fill(0);
    let mut max = 0;
    for i in 0..n {
        let c = code_at(packed, k, i);
        max = max.max(c);
        if bits
            .get(c as usize / 32)
            .is_some_and(|w| w >> (c % 32) & 1 == 1)
        {
            set(out, i);
        }
    }
    max
}

/// Bit `i` of `out` (for `i < n`) is set iff packed level `i` equals `literal`.
pub fn equal(packed: &[u8], k: u8, n: usize, literal: u32, out: &mut [u64]) {
    out.iter_mut().for_each(|w| *w = 0);
    for i in 0..n {
        if code_at(packed, k, i) == literal {
            set(out, i);
        }
    }
}

/// Bit `i` of `out` (for `i < n`) is set iff packed code `i` is one of `literals`; returns the
/// largest of the `n` codes (0 when `n` is 0).
pub fn equal_any_max(packed: &[u8], k: u8, n: usize, literals: &[u32], out: &mut [u64]) -> u32 {
    out.iter_mut().for_each(|w| *w = 0);
    let mut max = 0;
    for i in 0..n {
        let c = code_at(packed, k, i);
        max = max.max(c);
        if literals.contains(&c) {
            set(out, i);
        }
    }
    max
}

/// Extend (paper §5.4.1): `mask` has `n` bits, a set bit marking the first level of each record
/// (bit 0 must be set when `n > 0`); `bits` has one bit per record. Level `i` of `out` takes the
/// bit of the record it belongs to.
pub fn extend(bits: &[u64], mask: &[u64], n: usize, out: &mut [u64]) {
    out.iter_mut().for_each(|w| *w = 0);
    let mut record: Option<usize> = None;
    for i in 0..n {
        if bit(mask, i) {
            record = Some(record.map_or(0, |r| r + 1));
        }
        if let Some(r) = record {
            if bit(bits, r) {
                set(out, i);
            }
        }
    }
}

/// Compress (paper §5.4.2, PEXT): the bits of `bits` at the set positions of `mask` (over `n`
/// bits), packed contiguously into `out` (cleared first); returns how many bits were written.
pub fn compress(bits: &[u64], mask: &[u64], n: usize, out: &mut Vec<u64>) -> usize {
    out.clear();
    let mut j = 0usize;
    for i in 0..n {
        if bit(mask, i) {
            if j.is_multiple_of(64) {
                out.push(0);
            }
            if bit(bits, i) {
                out[j / 64] |= 1 << (j % 64);
            }
            j += 1;
        }
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pack(codes: &[u32], k: u8) -> Vec<u8> {
        let mut out = vec![0u8; (codes.len() * k as usize).div_ceil(8) + 8];
        for (i, &c) in codes.iter().enumerate() {
            for b in 0..k as usize {
                let pos = i * k as usize + b;
                out[pos / 8] |= ((c >> b & 1) as u8) << (pos % 8);
            }
        }
        out
    }

    fn words(bits: &str) -> Vec<u64> {
        // Figures print the most significant bit first.
        let mut w = vec![0u64; bits.len().div_ceil(64)];
        for (i, c) in bits.chars().rev().enumerate() {
            if c == '1' {
                w[i / 64] |= 1 << (i % 64);
            }
        }
        w
    }

    #[test]
    fn figure_6_transform() {
        let a = words("10100001000001000000111000001000");
        let f = words("01110100");
        let mut out = vec![0u64; 1];
        transform(&f, &a, &mut out);
        assert_eq!(out, words("00100001000001000000010000000000"));
    }

    #[test]
    fn figure_10_extend_and_11_compress() {
        let select = words("010000010001100000100001");
        let record = words("10111111111100011110111110011101");
        let mut level = vec![0u64; 1];
        extend(&select, &record, 32, &mut level);
        assert_eq!(level, words("01100000100011111000000100000011"));
        let valid = words("01100001000111110001100101110011");
        let mut value = Vec::new();
        assert_eq!(compress(&level, &valid, 32, &mut value), 16);
        assert_eq!(value, words("1100111100100011"));
    }

    #[test]
    fn figure_9_equal() {
        // First 16 2-bit def levels, max level 2 → b_valid's low 16 bits 0001100101110011.
        let expect = words("0001100101110011");
        let levels: Vec<u32> = (0..16)
            .map(|i| {
                if expect[0] >> i & 1 == 1 {
                    2
                } else {
                    (i % 2) as u32
                }
            })
            .collect();
        let mut out = vec![0u64; 1];
        equal(&pack(&levels, 2), 2, 16, 2, &mut out);
        assert_eq!(out, expect);
    }

    #[test]
    fn figure_3_select() {
        let codes: Vec<u32> = (0..8).map(|i| (i * 3 + 1) % 16).collect();
        let sel = words("11000100");
        let mut out = Vec::new();
        select_unpack(&pack(&codes, 4), 4, 8, &sel, &mut out);
        assert_eq!(out, vec![codes[2], codes[6], codes[7]]);
        let mut packed = Vec::new();
        assert_eq!(select_packed(&pack(&codes, 4), 4, 8, &sel, &mut packed), 3);
        assert_eq!(
            packed[0],
            codes[2] as u64 | (codes[6] as u64) << 4 | (codes[7] as u64) << 8
        );
    }
}
