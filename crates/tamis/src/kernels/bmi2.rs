//! BMI2 kernels: the paper's PDEP/PEXT algorithms (Li, Lu, Chandramouli, SIGMOD 2023).
//!
//! * select (§3): 64 consecutive codes of width `k` span exactly `k` words (a *group*); word `t`
//!   of every group has the same layout, so `k` masks (Algorithm 3) serve all groups. Per word,
//!   `extend(chunk, mask) = PDEP(chunk, mask - 1) - PDEP(chunk, mask)` widens one selection bit
//!   per value into `k` bits and `PEXT` keeps the selected bits; a bit writer concatenates them.
//! * transform (§4.3): one PDEP per selection word.
//! * equal (§5.3, Algorithm 5): SWAR compare of `floor(64 / k)` whole values read through an
//!   unaligned 64-bit window, then PEXT of the field MSBs.
//! * extend (§5.4.1) / compress (§5.4.2): PDEP / PEXT per level word.
//!
//! Every entry point checks `bmi2` at run time (a cached atomic load) and falls back to the
//! scalar reference otherwise, so the safe wrappers are sound whatever table they end up in.
//! Inputs are read strictly within their slices: tails go through zero-padded local buffers.

use super::bits::{group_bytes, le64, low_bits, sel_word};
use super::scalar;
use std::arch::x86_64::{_pdep_u64, _pext_u64};

/// Whether this CPU has BMI2 (cached by std after the first call).
#[inline]
fn has_bmi2() -> bool {
    std::arch::is_x86_feature_detected!("bmi2")
        && std::arch::is_x86_feature_detected!("bmi1")
        && std::arch::is_x86_feature_detected!("popcnt")
}

/// Appends bit strings to a vector of words, LSB first.
struct BitWriter<'a> {
    out: &'a mut Vec<u64>,
    acc: u64,
    fill: u32,
}

impl<'a> BitWriter<'a> {
    fn new(out: &'a mut Vec<u64>) -> Self {
        BitWriter {
            out,
            acc: 0,
            fill: 0,
        }
    }

    /// Appends the low `count` bits of `v` (`count <= 64`, higher bits of `v` zero).
    #[inline(always)]
    fn put(&mut self, v: u64, count: u32) {
        self.acc |= v << self.fill;
        let total = self.fill + count;
        if total >= 64 {
            self.out.push(self.acc);
            // The bits of `v` that did not fit (none when fill == 0).
            self.acc = if self.fill == 0 {
                0
            } else {
                v >> (64 - self.fill)
            };
            self.fill = total - 64;
        } else {
            self.fill = total;
        }
    }

    fn finish(self) {
        if self.fill > 0 {
            self.out.push(self.acc);
        }
    }
}

/// Per-word select masks of a group (Algorithm 3, with the corrected bound: `k` masks) and the
/// index of the first value touching each word.
pub(crate) struct GroupLayout {
    pub masks: [u64; 32],
    pub first: [u32; 32],
}

impl GroupLayout {
    pub(crate) fn new(k: usize) -> Self {
        debug_assert!((1..=32).contains(&k));
        // A 1 at the lowest bit of every k-bit field.
        let pattern = (0..64).step_by(k).fold(0u64, |m, b| m | 1 << b);
        let mut masks = [0u64; 32];
        let mut first = [0u32; 32];
        for t in 0..k {
            let offset = k - (t * 64) % k; // where the first value starting in word t begins
            masks[t] = if offset >= 64 {
                1
            } else {
                (pattern << offset) | 1
            };
            first[t] = (64 * t / k) as u32;
        }
        GroupLayout { masks, first }
    }
}

/// The paper's extend on one word: every set bit of `chunk` (one per value, in `mask` order)
/// widened to the whole field of its value, the last field reaching bit 63.
#[inline]
#[target_feature(enable = "bmi1,bmi2,popcnt")]
fn extend_word(chunk: u64, mask: u64) -> u64 {
    _pdep_u64(chunk, mask & !1).wrapping_sub(_pdep_u64(chunk, mask))
}

/// Calls `emit(bits, count)` with the selected bits of each word of one group, in order.
#[inline]
#[target_feature(enable = "bmi1,bmi2,popcnt")]
fn select_group(
    words: &[u8],
    k: usize,
    b: u64,
    layout: &GroupLayout,
    mut emit: impl FnMut(u64, u32),
) {
    for t in 0..k {
        let word = le64(&words[8 * t..]);
        let ext = extend_word(b >> layout.first[t], layout.masks[t]);
        emit(_pext_u64(word, ext), ext.count_ones());
    }
}

#[target_feature(enable = "bmi1,bmi2,popcnt")]
fn select_packed_bmi2(packed: &[u8], k: u8, n: usize, sel: &[u64], out: &mut Vec<u64>) -> usize {
    let groups = n.div_ceil(64);
    if k == 0 {
        return (0..groups)
            .map(|g| sel_word(sel, g, n).count_ones() as usize)
            .sum();
    }
    let k = k as usize;
    let layout = GroupLayout::new(k);
    let mut pad = [0u8; 264];
    let mut writer = BitWriter::new(out);
    let mut written = 0usize;
    for g in 0..groups {
        let b = sel_word(sel, g, n);
        if b == 0 {
            continue;
        }
        written += b.count_ones() as usize;
        let bytes = group_bytes(packed, k, g, &mut pad);
        if b == u64::MAX {
            for t in 0..k {
                writer.put(le64(&bytes[8 * t..]), 64);
            }
        } else {
            select_group(bytes, k, b, &layout, |v, c| writer.put(v, c));
        }
    }
    writer.finish();
    written
}

/// BMI2 select (§3): the selected codes, still packed at width `k`.
pub fn select_packed(packed: &[u8], k: u8, n: usize, sel: &[u64], out: &mut Vec<u64>) -> usize {
    if !has_bmi2() {
        return scalar::select_packed(packed, k, n, sel, out);
    }
    // SAFETY: bmi1, bmi2 and popcnt checked above.
    unsafe { select_packed_bmi2(packed, k, n, sel, out) }
}

/// At most this many selected codes in a group are read one by one (TZCNT loop); denser groups
/// go through PEXT select + unpack. Tuned with `benches/kernels.rs`.
const SPARSE_MAX: u32 = 4;

#[target_feature(enable = "bmi1,bmi2,popcnt")]
fn select_unpack_bmi2(packed: &[u8], k: u8, n: usize, sel: &[u64], out: &mut Vec<u32>) {
    let groups = n.div_ceil(64);
    if k == 0 {
        let count: usize = (0..groups)
            .map(|g| sel_word(sel, g, n).count_ones() as usize)
            .sum();
        out.resize(out.len() + count, 0);
        return;
    }
    let k = k as usize;
    let code_mask = low_bits(k);
    let layout = GroupLayout::new(k);
    let mut pad = [0u8; 264];
    // Selected bits of one group, packed; one spare zero word for the two-word reads below.
    let mut selected = [0u64; 33];
    for g in 0..groups {
        let b = sel_word(sel, g, n);
        if b == 0 {
            continue;
        }
        let bytes = group_bytes(packed, k, g, &mut pad);
        let count = b.count_ones();
        out.reserve(64);
        let base = out.len();
        let dst = &mut out.spare_capacity_mut()[..64];
        if b == u64::MAX {
            for (j, d) in dst.iter_mut().enumerate() {
                let bit = j * k;
                d.write(((le64(&bytes[bit / 8..]) >> (bit % 8)) & code_mask) as u32);
            }
        } else if count <= SPARSE_MAX {
            let mut rest = b;
            for d in dst[..count as usize].iter_mut() {
                let bit = rest.trailing_zeros() as usize * k;
                d.write(((le64(&bytes[bit / 8..]) >> (bit % 8)) & code_mask) as u32);
                rest &= rest - 1;
            }
        } else {
            // Select the packed codes (the paper's operator), then unpack only those.
            let mut fill = 0usize;
            selected.fill(0);
            select_group(bytes, k, b, &layout, |v, c| {
                let (w, s) = (fill / 64, fill % 64);
                selected[w] |= v << s;
                if s != 0 {
                    selected[w + 1] |= v >> (64 - s);
                }
                fill += c as usize;
            });
            for (j, d) in dst[..count as usize].iter_mut().enumerate() {
                let bit = j * k;
                let (w, s) = (bit / 64, bit % 64);
                let two = (selected[w] >> s) | ((selected[w + 1] << 1) << (63 - s));
                d.write((two & code_mask) as u32);
            }
        }
        // SAFETY: the first `count` (or 64 when all are selected, then count == 64) spare slots
        // were initialised above, and `reserve(64)` made them part of the capacity.
        unsafe { out.set_len(base + count as usize) };
    }
}

/// The selected codes unpacked to `u32`: per group of 64 codes, all-zero selections are skipped,
/// full ones unpacked directly, sparse ones (≤ `SPARSE_MAX` codes) read one by one, and the
/// rest selected with PEXT (the paper's select) before unpacking only the survivors.
pub fn select_unpack(packed: &[u8], k: u8, n: usize, sel: &[u64], out: &mut Vec<u32>) {
    if !has_bmi2() {
        return scalar::select_unpack(packed, k, n, sel, out);
    }
    // SAFETY: bmi1, bmi2 and popcnt checked above.
    unsafe { select_unpack_bmi2(packed, k, n, sel, out) }
}

/// Reads 64 bits of `words` starting at bit `pos`; bits past the slice read as 0.
#[inline(always)]
fn read_bits(words: &[u64], pos: usize) -> u64 {
    let (w, s) = (pos / 64, pos % 64);
    let lo = words.get(w).copied().unwrap_or(0) >> s;
    if s == 0 {
        lo
    } else {
        lo | words.get(w + 1).copied().unwrap_or(0) << (64 - s)
    }
}

#[target_feature(enable = "bmi1,bmi2,popcnt")]
fn transform_bmi2(filtered: &[u64], select: &[u64], out: &mut [u64]) {
    let mut pos = 0usize;
    for (&s, o) in select.iter().zip(out.iter_mut()) {
        // PDEP consumes only popcount(s) low bits of the source.
        *o = _pdep_u64(read_bits(filtered, pos), s);
        pos += s.count_ones() as usize;
    }
}

/// Transform (§4.3): `out[w] = PDEP(next popcount(select[w]) bits of filtered, select[w])`.
pub fn transform(filtered: &[u64], select: &[u64], out: &mut [u64]) {
    if !has_bmi2() {
        return scalar::transform(filtered, select, out);
    }
    // SAFETY: bmi1, bmi2 and popcnt checked above.
    unsafe { transform_bmi2(filtered, select, out) }
}

/// 64 bits of the packed stream from bit `pos`; bytes past the slice read as 0.
#[inline(always)]
fn window(packed: &[u8], pos: usize) -> u64 {
    let (byte, s) = (pos / 8, pos % 8);
    let (lo, hi) = if byte + 9 <= packed.len() {
        (le64(&packed[byte..]), packed[byte + 8])
    } else {
        let mut pad = [0u8; 9];
        let avail = packed.len().saturating_sub(byte).min(9);
        pad[..avail].copy_from_slice(&packed[byte..byte + avail]);
        (le64(&pad), pad[8])
    };
    if s == 0 {
        lo
    } else {
        (lo >> s) | (hi as u64) << (64 - s)
    }
}

/// ORs the low `count` bits of `bits` into `out` at bit `pos` (the bits must fit in `out`).
#[inline(always)]
fn or_bits(out: &mut [u64], pos: usize, bits: u64, count: usize) {
    let (w, s) = (pos / 64, pos % 64);
    out[w] |= bits << s;
    if s != 0 && s + count > 64 {
        out[w + 1] |= bits >> (64 - s);
    }
}

#[target_feature(enable = "bmi1,bmi2,popcnt")]
fn equal_bmi2(packed: &[u8], k: u8, n: usize, literal: u32, out: &mut [u64]) {
    out.fill(0);
    let k = k as usize;
    if k == 0 || (k < 32 && literal >> k != 0) {
        // Width 0: every level is 0. A literal wider than k matches nothing.
        if k == 0 && literal == 0 {
            (0..n.div_ceil(64)).for_each(|w| out[w] = low_bits(n - w * 64));
        }
        return;
    }
    let per = 64 / k; // whole fields per window
    let low = (0..per).fold(0u64, |m, f| m | 1 << (f * k));
    let high = low << (k - 1);
    let literals = low.wrapping_mul(literal as u64);
    let mut i = 0;
    while i < n {
        let x = window(packed, i * k) ^ literals;
        let eq = !(x | (x | high).wrapping_sub(low));
        let count = per.min(n - i);
        or_bits(out, i, _pext_u64(eq, high) & low_bits(count), count);
        i += per;
    }
}

/// Equal (§5.3, Algorithm 5): SWAR compare of `floor(64/k)` fields at a time.
pub fn equal(packed: &[u8], k: u8, n: usize, literal: u32, out: &mut [u64]) {
    if !has_bmi2() {
        return scalar::equal(packed, k, n, literal, out);
    }
    // SAFETY: bmi1, bmi2 and popcnt checked above.
    unsafe { equal_bmi2(packed, k, n, literal, out) }
}

// The word index also addresses `mask` and the running record count.
#[allow(clippy::needless_range_loop)]
#[target_feature(enable = "bmi1,bmi2,popcnt")]
fn extend_bmi2(bits: &[u64], mask: &[u64], n: usize, out: &mut [u64]) {
    out.fill(0);
    let mut records = 0usize; // record starts before the current word
    for (w, o) in out.iter_mut().enumerate().take(n.div_ceil(64)) {
        let m = sel_word(mask, w, n);
        // The record of level 64w: a continuing one (bit 0 clear) or the one starting there.
        // Before the first record start there is none: a 0 is shifted in for it.
        let chunk = if m & 1 == 1 {
            read_bits(bits, records)
        } else if records == 0 {
            read_bits(bits, 0) << 1
        } else {
            read_bits(bits, records - 1)
        };
        *o = extend_word(chunk, m | 1) & low_bits(n - w * 64);
        records += m.count_ones() as usize;
    }
}

/// Extend (§5.4.1) across words: a record continuing from the previous word gets a forced mask
/// bit 0 and starts the chunk; a record longer than 64 levels gives mask 1 (all or nothing).
pub fn extend(bits: &[u64], mask: &[u64], n: usize, out: &mut [u64]) {
    if !has_bmi2() {
        return scalar::extend(bits, mask, n, out);
    }
    // SAFETY: bmi1, bmi2 and popcnt checked above.
    unsafe { extend_bmi2(bits, mask, n, out) }
}

#[target_feature(enable = "bmi1,bmi2,popcnt")]
fn compress_bmi2(bits: &[u64], mask: &[u64], n: usize, out: &mut Vec<u64>) -> usize {
    out.clear();
    let mut writer = BitWriter::new(out);
    let mut total = 0usize;
    for w in 0..n.div_ceil(64) {
        let m = sel_word(mask, w, n);
        let c = m.count_ones();
        writer.put(_pext_u64(bits.get(w).copied().unwrap_or(0), m), c);
        total += c as usize;
    }
    writer.finish();
    total
}

/// Compress (§5.4.2): PEXT per word, concatenated.
pub fn compress(bits: &[u64], mask: &[u64], n: usize, out: &mut Vec<u64>) -> usize {
    if !has_bmi2() {
        return scalar::compress(bits, mask, n, out);
    }
    // SAFETY: bmi1, bmi2 and popcnt checked above.
    unsafe { compress_bmi2(bits, mask, n, out) }
}

/// Paper Table 1 (M0): the XOR of `PEXT(src, mask)` over `pairs`, with the hardware
/// instruction; `None` without BMI2. For the micro-benchmark only.
pub fn pext_xor(pairs: &[(u64, u64)]) -> Option<u64> {
    #[target_feature(enable = "bmi1,bmi2,popcnt")]
    fn run(pairs: &[(u64, u64)]) -> u64 {
        pairs.iter().fold(0, |acc, &(s, m)| acc ^ _pext_u64(s, m))
    }
    // SAFETY: bmi1, bmi2 and popcnt checked first.
    has_bmi2().then(|| unsafe { run(pairs) })
}

/// Like [`pext_xor`] with `PDEP(src, mask)`.
pub fn pdep_xor(pairs: &[(u64, u64)]) -> Option<u64> {
    #[target_feature(enable = "bmi1,bmi2,popcnt")]
    fn run(pairs: &[(u64, u64)]) -> u64 {
        pairs.iter().fold(0, |acc, &(s, m)| acc ^ _pdep_u64(s, m))
    }
    // SAFETY: bmi1, bmi2 and popcnt checked first.
    has_bmi2().then(|| unsafe { run(pairs) })
}

/// Like [`pext_xor`] with `BLSI(src)` (lowest set bit), the BMI1 instruction.
pub fn blsi_xor(pairs: &[(u64, u64)]) -> Option<u64> {
    #[target_feature(enable = "bmi1,bmi2,popcnt")]
    fn run(pairs: &[(u64, u64)]) -> u64 {
        pairs
            .iter()
            .fold(0, |acc, &(s, _)| acc ^ std::arch::x86_64::_blsi_u64(s))
    }
    // SAFETY: bmi1, bmi2 and popcnt checked first.
    has_bmi2().then(|| unsafe { run(pairs) })
}
