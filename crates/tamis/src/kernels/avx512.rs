//! AVX-512 VBMI/VBMI2 fused unpack + select for codes of width `k <= 16` (an extension beyond
//! the paper, see notes §6.3).
//!
//! Per 64 codes (one selection word): `VPERMB` gathers, for every qword lane, the source bytes
//! holding that lane's codes; `VPMULTISHIFTQB` shifts each code to the start of its byte (k <= 8)
//! or 16-bit lane (k <= 16); an AND drops the neighbours' bits; `VPCOMPRESSB/W` keeps the codes
//! whose selection bit is set; only the survivors are widened to `u32`. No PEXT/PDEP is involved:
//! this is unpack-then-filter done inside registers.
//!
//! Groups with at most [`SPARSE_MAX`] selected codes are read one code at a time instead (TZCNT
//! loop), which touches less than the vector path when the selection is very sparse.
//!
//! [`lookup`] uses the same unpack for codes of `k <= 8`, then tests all 64 at once against a
//! 256-byte table held in four registers (`VPERMI2B` on the low 7 bits, a blend on the 8th):
//! the first filter's test of dictionary codes without widening them to `u32`. [`lookup_bits`]
//! does it for `9 <= k <= 16`: codes unpacked to 16-bit lanes, widened 16 at a time, and their
//! bits of a bitset fetched with `VPGATHERDD`. [`equal_with`] and [`equal_any_max`] compare the unpacked
//! codes with one literal or a few (`VPCMPEQB/W`): one or a few matching dictionary entries,
//! levels equal to their maximum.

// The AVX-512 intrinsics are stable since Rust 1.89, the workspace's MSRV.

use super::bits::{group_bytes, le64, low_bits, padded, sel_word};
use super::MAX_LITERALS;
use std::arch::x86_64::*;

/// Whether this CPU has every AVX-512 subset the fused kernel uses (cached by std).
pub fn detected() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vbmi")
        && std::arch::is_x86_feature_detected!("avx512vbmi2")
        && std::arch::is_x86_feature_detected!("popcnt")
        && std::arch::is_x86_feature_detected!("bmi1")
}

/// Groups with at most this many selected codes are read code by code. Tuned with
/// `benches/kernels.rs`.
pub const SPARSE_MAX: u32 = 2;

/// Widest code the fused kernel handles.
pub const MAX_K: u8 = 16;

/// [`unpack_controls`] for every `k <= 16`, computed once (a kernel call covers at most 1 024
/// codes, so recomputing them per call showed in profiles).
fn controls(k: usize) -> &'static ([u8; 64], [u8; 64]) {
    static TABLE: std::sync::OnceLock<Vec<([u8; 64], [u8; 64])>> = std::sync::OnceLock::new();
    &TABLE.get_or_init(|| (0..=MAX_K as usize).map(unpack_controls).collect())[k]
}

/// The `VPERMB` byte indices and `VPMULTISHIFTQB` bit offsets that unpack one vector of codes:
/// 64 codes into bytes for `k <= 8`, 32 codes into 16-bit lanes for `k <= 16`.
fn unpack_controls(k: usize) -> ([u8; 64], [u8; 64]) {
    let (mut idx, mut ctrl) = ([0u8; 64], [0u8; 64]);
    for lane in 0..8 {
        for j in 0..8 {
            let p = lane * 8 + j;
            if k <= 8 {
                // Codes 8·lane .. 8·lane+7 fill exactly bytes lane·k .. lane·k+k.
                idx[p] = (lane * k + j) as u8;
                ctrl[p] = (j * k) as u8;
            } else {
                // Codes 4·lane .. 4·lane+3 start at bit 4·lane·k, i.e. byte lane·k/2 plus 0 or
                // 4 bits; 8 bytes from there hold all four (4k + 4 <= 64 for odd k <= 15).
                let start = 4 * lane * k;
                idx[p] = (start / 8 + j) as u8;
                let (code, half) = (j / 2, j % 2);
                ctrl[p] = (start % 8 + code * k + 8 * half) as u8;
            }
        }
    }
    (idx, ctrl)
}

#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,popcnt,bmi1")]
fn load64(bytes: &[u8]) -> __m512i {
    let b: &[u8; 64] = bytes[..64].try_into().expect("64 bytes");
    // SAFETY: `b` is 64 readable bytes; the load is unaligned.
    unsafe { _mm512_loadu_si512(b.as_ptr().cast()) }
}

/// The vector of codes held in `bytes[..64]`, unpacked by the [`controls`] of their width
/// (`idx`, `ctrl`) into bytes (k <= 8) or 16-bit lanes, each masked to k bits by `and`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,popcnt,bmi1")]
fn unpack(idx: __m512i, ctrl: __m512i, and: __m512i, bytes: &[u8]) -> __m512i {
    let v = _mm512_permutexvar_epi8(idx, load64(bytes));
    _mm512_and_si512(_mm512_multishift_epi64_epi8(ctrl, v), and)
}

/// The largest of the byte lanes (`wide` false) or 16-bit lanes (`wide` true) of `v`, in
/// registers: the kernels call it once per run of codes, and runs are short (Arrow's writer
/// bit-packs at most 512 codes per run), so a store and a scalar pass over 32–64 lanes cost
/// more than the run's compares.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn lane_max(v: __m512i, wide: bool) -> u32 {
    // Byte lanes become 16-bit lanes holding the larger byte of each pair.
    let v = if wide {
        v
    } else {
        _mm512_max_epu16(
            _mm512_and_si512(v, _mm512_set1_epi16(0xFF)),
            _mm512_srli_epi16::<8>(v),
        )
    };
    let half = _mm256_max_epu16(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64::<1>(v));
    let quarter = _mm_max_epu16(
        _mm256_castsi256_si128(half),
        _mm256_extracti128_si256::<1>(half),
    );
    // `minpos` finds the smallest of eight 16-bit lanes; of the complements, the largest.
    let min = _mm_minpos_epu16(_mm_xor_si128(quarter, _mm_set1_epi32(-1)));
    0xFFFF - (_mm_cvtsi128_si32(min) as u32 & 0xFFFF)
}

#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,popcnt,bmi1")]
fn select_unpack_avx512(packed: &[u8], k: u8, n: usize, sel: &[u64], out: &mut Vec<u32>) {
    let k = k as usize;
    debug_assert!((1..=MAX_K as usize).contains(&k));
    let code_mask = low_bits(k);
    let (idx, ctrl) = controls(k);
    let idx = load64(idx);
    let ctrl = load64(ctrl);
    let and = if k <= 8 {
        _mm512_set1_epi8(code_mask as u8 as i8)
    } else {
        _mm512_set1_epi16(code_mask as u16 as i16)
    };
    // Bytes a group's vector loads touch: one 64-byte load (k <= 8) or two, 4k bytes apart.
    let span = if k <= 8 { 64 } else { 4 * k + 64 };
    let mut tail = [0u8; 128];
    let mut pad = [0u8; 264];
    for g in 0..n.div_ceil(64) {
        let b = sel_word(sel, g, n);
        if b == 0 {
            continue;
        }
        let count = b.count_ones() as usize;
        out.reserve(64);
        let base = out.len();
        if count <= SPARSE_MAX as usize {
            let bytes = group_bytes(packed, k, g, &mut pad);
            let dst = &mut out.spare_capacity_mut()[..count];
            let mut rest = b;
            for d in dst {
                let bit = rest.trailing_zeros() as usize * k;
                d.write(((le64(&bytes[bit / 8..]) >> (bit % 8)) & code_mask) as u32);
                rest &= rest - 1;
            }
        } else {
            let bytes = padded(packed, g * 8 * k, span, &mut tail);
            let dst = out.spare_capacity_mut()[..64]
                .as_mut_ptr()
                .cast::<__m512i>();
            let unpack = |at: usize| unpack(idx, ctrl, and, &bytes[at..]);
            if k <= 8 {
                let c = _mm512_maskz_compress_epi8(b, unpack(0));
                let quarters = [
                    _mm512_castsi512_si128(c),
                    _mm512_extracti32x4_epi32::<1>(c),
                    _mm512_extracti32x4_epi32::<2>(c),
                    _mm512_extracti32x4_epi32::<3>(c),
                ];
                for (q, &v) in quarters.iter().enumerate().take(count.div_ceil(16)) {
                    // SAFETY: `dst` points at 64 reserved u32 slots (256 bytes); q < 4 so the
                    // 64-byte store stays inside them. The store is unaligned.
                    unsafe { _mm512_storeu_si512(dst.add(q), _mm512_cvtepu8_epi32(v)) };
                }
            } else {
                let mut written = 0usize;
                for h in 0..2 {
                    let half = (b >> (32 * h)) as u32;
                    let c = _mm512_maskz_compress_epi16(half, unpack(4 * k * h));
                    let halves = [_mm512_castsi512_si256(c), _mm512_extracti64x4_epi64::<1>(c)];
                    let cnt = half.count_ones() as usize;
                    for (q, &v) in halves.iter().enumerate().take(cnt.div_ceil(16)) {
                        let wide = _mm512_cvtepu16_epi32(v);
                        // SAFETY: a store is made only while 16q < cnt <= 32, at slot
                        // written + 16q with written <= 32 (the first half's count) and the
                        // same bound for the first half, so it ends at slot <= 64: inside the
                        // 64 reserved u32 slots of `dst`. Unaligned store.
                        unsafe {
                            let at = dst.cast::<u32>().add(written + 16 * q);
                            _mm512_storeu_si512(at.cast(), wide)
                        };
                    }
                    written += cnt;
                }
            }
        }
        // SAFETY: the first `count` spare slots were initialised above (every selected code was
        // stored; stores past `count` only wrote reserved capacity, which stays unused).
        unsafe { out.set_len(base + count) };
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,popcnt,bmi1")]
fn lookup_avx512(packed: &[u8], k: u8, n: usize, table: &[u8; 256], out: &mut [u64]) -> u32 {
    let k = k as usize;
    debug_assert!((1..=8).contains(&k));
    let (idx, ctrl) = controls(k);
    let (idx, ctrl) = (load64(idx), load64(ctrl));
    let and = _mm512_set1_epi8(low_bits(k) as u8 as i8);
    let t = [
        load64(&table[0..64]),
        load64(&table[64..128]),
        load64(&table[128..192]),
        load64(&table[192..256]),
    ];
    let mut max = _mm512_setzero_si512();
    let mut tail = [0u8; 64];
    for (g, word) in out.iter_mut().enumerate().take(n.div_ceil(64)) {
        // A group's 64 codes take 8k <= 64 bytes; the last group's may run past `packed`.
        let bytes = padded(packed, g * 8 * k, 64, &mut tail);
        let codes = unpack(idx, ctrl, and, bytes);
        let valid = low_bits(n - g * 64);
        let low = _mm512_permutex2var_epi8(t[0], codes, t[1]);
        let hits = if k == 8 {
            let high = _mm512_permutex2var_epi8(t[2], codes, t[3]);
            _mm512_mask_blend_epi8(_mm512_movepi8_mask(codes), low, high)
        } else {
            low
        };
        *word = _mm512_test_epi8_mask(hits, hits) & valid;
        max = _mm512_mask_max_epu8(max, valid, max, codes);
    }
    lane_max(max, false)
}

#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,popcnt,bmi1")]
fn lookup_bits_avx512(packed: &[u8], k: u8, n: usize, bits: &[u32], out: &mut [u64]) -> u32 {
    let k = k as usize;
    debug_assert!((9..=MAX_K as usize).contains(&k) && bits.len() >= (1 << k) / 32);
    let (idx, ctrl) = controls(k);
    let (idx, ctrl) = (load64(idx), load64(ctrl));
    let and = _mm512_set1_epi16(low_bits(k) as u16 as i16);
    let (five, one) = (_mm512_set1_epi32(31), _mm512_set1_epi32(1));
    let mut max = _mm512_setzero_si512();
    let mut tail = [0u8; 128];
    // 16 codes (u32 lanes) → 16 bits: word `code >> 5` of `bits`, bit `code & 31`.
    let test = |codes: __m256i| -> u16 {
        let codes = _mm512_cvtepu16_epi32(codes);
        let at = _mm512_srli_epi32::<5>(codes);
        // SAFETY: every code is below 2^k (masked to k bits), so `at` < 2^k / 32 <= bits.len():
        // each 4-byte gather reads inside `bits`.
        let words = unsafe { _mm512_i32gather_epi32::<4>(at, bits.as_ptr().cast()) };
        let shifted = _mm512_srlv_epi32(words, _mm512_and_si512(codes, five));
        _mm512_test_epi32_mask(shifted, one)
    };
    for (g, word) in out.iter_mut().enumerate().take(n.div_ceil(64)) {
        // A group's 64 codes take 8k bytes: two 64-byte loads, 4k bytes apart.
        let bytes = padded(packed, g * 8 * k, 4 * k + 64, &mut tail);
        let valid = low_bits(n - g * 64);
        let mut hits = 0u64;
        for h in 0..2 {
            let codes = unpack(idx, ctrl, and, &bytes[4 * k * h..]);
            let lo = test(_mm512_castsi512_si256(codes)) as u64;
            let hi = test(_mm512_extracti64x4_epi64::<1>(codes)) as u64;
            hits |= (lo | hi << 16) << (32 * h);
            max = _mm512_mask_max_epu16(max, (valid >> (32 * h)) as u32, max, codes);
        }
        *word = hits & valid;
    }
    lane_max(max, true)
}

#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,popcnt,bmi1")]
fn equal_avx512(packed: &[u8], k: u8, n: usize, literals: &[u32], out: &mut [u64]) -> u32 {
    let k = k as usize;
    debug_assert!((1..=MAX_K as usize).contains(&k));
    debug_assert!((1..=MAX_LITERALS).contains(&literals.len()));
    debug_assert!(literals.iter().all(|&l| l >> k == 0));
    out.fill(0);
    let (idx, ctrl) = controls(k);
    let (idx, ctrl) = (load64(idx), load64(ctrl));
    let splat = |x: u64| {
        if k <= 8 {
            _mm512_set1_epi8(x as u8 as i8)
        } else {
            _mm512_set1_epi16(x as u16 as i16)
        }
    };
    let and = splat(low_bits(k));
    let mut needles = [_mm512_setzero_si512(); MAX_LITERALS];
    for (needle, &l) in needles.iter_mut().zip(literals) {
        *needle = splat(l as u64);
    }
    let needles = &needles[..literals.len()];
    // Bytes a group's loads touch: one 64-byte load (k <= 8) or two, 4k bytes apart.
    let span = if k <= 8 { 64 } else { 4 * k + 64 };
    let mut tail = [0u8; 128];
    // The largest code so far, per byte (k <= 8) or 16-bit lane.
    let mut max = _mm512_setzero_si512();
    for (g, word) in out.iter_mut().enumerate().take(n.div_ceil(64)) {
        // The last group's bytes may run past `packed` (zero-padded; masked by `valid`).
        let bytes = padded(packed, g * 8 * k, span, &mut tail);
        let unpack = |at: usize| unpack(idx, ctrl, and, &bytes[at..]);
        let valid = low_bits(n - g * 64);
        let hits = if k <= 8 {
            let codes = unpack(0);
            max = _mm512_mask_max_epu8(max, valid, max, codes);
            (needles.iter()).fold(0, |h, &x| h | _mm512_cmpeq_epi8_mask(codes, x))
        } else {
            let (low, high) = (unpack(0), unpack(4 * k));
            max = _mm512_mask_max_epu16(max, valid as u32, max, low);
            max = _mm512_mask_max_epu16(max, (valid >> 32) as u32, max, high);
            let eq = |codes: __m512i| {
                (needles.iter()).fold(0, |h, &x| h | _mm512_cmpeq_epi16_mask(codes, x)) as u64
            };
            eq(low) | eq(high) << 32
        };
        *word = hits & valid;
    }
    lane_max(max, k > 8)
}

/// [`super::Kernels::equal`] for `from_k <= k <= 16` (`from_k >= 1`): 64 codes unpacked in
/// registers (as for [`lookup`] and [`lookup_bits`]) and compared with the literal at once,
/// where the BMI2 SWAR compare fits only `64 / k` codes in a word (4 at k = 15). Other widths,
/// literals wider than `k` and CPUs without the AVX-512 subsets take `fallback`. With BMI2 as
/// the fallback, `from_k` is 2: at k = 1 its 64 codes per word are faster (`equal/` in
/// `benches/kernels.rs`: 13.4 against 10.5 G codes/s; 2.3 against 20.6 at k = 9).
#[inline]
pub fn equal_with(
    fallback: fn(&[u8], u8, usize, u32, &mut [u64]),
    from_k: u8,
    packed: &[u8],
    k: u8,
    n: usize,
    literal: u32,
    out: &mut [u64],
) {
    if k == 0 || k < from_k || k > MAX_K || literal >> k != 0 || !detected() {
        return fallback(packed, k, n, literal, out);
    }
    // SAFETY: every target feature of the callee was detected above.
    unsafe { equal_avx512(packed, k, n, &[literal], out) };
}

/// [`super::Kernels::equal_any_max`]: codes equal to any of 1 to [`MAX_LITERALS`] literals,
/// each below `2^k`, for `1 <= k <= 16`, returning the largest code; other calls (and CPUs
/// without the AVX-512 subsets) take the scalar reference.
pub fn equal_any_max(packed: &[u8], k: u8, n: usize, literals: &[u32], out: &mut [u64]) -> u32 {
    let fits = (1..=MAX_K).contains(&k) && literals.iter().all(|&l| l >> k == 0);
    if !fits || !(1..=MAX_LITERALS).contains(&literals.len()) || !detected() {
        return super::scalar::equal_any_max(packed, k, n, literals, out);
    }
    // SAFETY: every target feature of the callee was detected above.
    unsafe { equal_avx512(packed, k, n, literals, out) }
}

/// [`super::Kernels::lookup_bits`] for `9 <= k <= 16` with `bits` covering every code of the
/// width; other calls (and CPUs without the AVX-512 subsets) take the scalar reference.
pub fn lookup_bits(packed: &[u8], k: u8, n: usize, bits: &[u32], out: &mut [u64]) -> u32 {
    if !(9..=MAX_K).contains(&k) || bits.len() < (1 << k) / 32 || !detected() {
        return super::scalar::lookup_bits(packed, k, n, bits, out);
    }
    // SAFETY: every target feature of the callee was detected above; `bits` covers 2^k codes.
    unsafe { lookup_bits_avx512(packed, k, n, bits, out) }
}

/// [`super::Kernels::lookup`] for `1 <= k <= 8`; other widths (and CPUs without the AVX-512
/// subsets) take the scalar reference.
pub fn lookup(packed: &[u8], k: u8, n: usize, table: &[u8; 256], out: &mut [u64]) -> u32 {
    if k == 0 || k > 8 || !detected() {
        return super::scalar::lookup(packed, k, n, table, out);
    }
    // SAFETY: every target feature of the callee was detected above.
    unsafe { lookup_avx512(packed, k, n, table, out) }
}

/// Fused select + unpack for `1 <= k <= 16`; falls back to `fallback` for other widths or when
/// the CPU lacks the AVX-512 subsets.
#[inline]
pub fn select_unpack_with(
    fallback: fn(&[u8], u8, usize, &[u64], &mut Vec<u32>),
    packed: &[u8],
    k: u8,
    n: usize,
    sel: &[u64],
    out: &mut Vec<u32>,
) {
    if k == 0 || k > MAX_K || !detected() {
        return fallback(packed, k, n, sel, out);
    }
    // SAFETY: every target feature of the callee was detected above.
    unsafe { select_unpack_avx512(packed, k, n, sel, out) }
}
