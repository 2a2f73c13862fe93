//! Probing a register-blocked Bloom filter of join keys (paper 000, T13) with integer keys,
//! eight at a time with AVX-512 where the CPU has it.
//!
//! A key is mixed to 64 bits; the high 32 bits pick a block (a 64-bit word) by fast range
//! reduction, and six 6-bit fields of the low 36 bits name the bits that must all be set in it.
//! One key at a time that is two multiplies, six shifts and a dependent load: about 2.4 ns per
//! PLAIN value in TPC-H Q17's `lineitem` scans, a quarter of the query on uncompressed pages.
//! The AVX-512 path does the same arithmetic on eight lanes (`VPMULLQ` for the mix, `VPSLLVQ`
//! for the in-block bits, `VPGATHERQQ` for the blocks) and compares all eight at once.
//!
//! [`place`] is the one definition of where a hash lands; the filter's inserts use it too, so
//! the two probe paths and the build cannot disagree.

/// Bits set per key inside its block.
pub const HASHES: u32 = 6;

/// Mixes a 64-bit key (two multiply-xorshift rounds): the block comes from the high bits,
/// the in-block bits from the low 36, so keys with structure in any bits spread out.
#[inline(always)]
pub fn mix(k: u64) -> u64 {
    let mut h = k.wrapping_mul(MUL1);
    h ^= h >> 32;
    h = h.wrapping_mul(MUL2);
    h ^ (h >> 29)
}

const MUL1: u64 = 0x9E37_79B9_7F4A_7C15;
const MUL2: u64 = 0xD6E8_FEB8_6659_FD93;

/// The block of `blocks` (at least 1, at most `u32::MAX`) that hash `h` lands in, and the bits
/// it must have set there.
#[inline(always)]
pub fn place(h: u64, blocks: usize) -> (usize, u64) {
    // Fast range reduction of the high 32 bits: any block count, no modulo, always < blocks.
    let block = (((h >> 32) * blocks as u64) >> 32) as usize;
    let mut mask = 0u64;
    let mut bits = h;
    for _ in 0..HASHES {
        mask |= 1u64 << (bits & 63);
        bits >>= 6;
    }
    (block, mask)
}

/// Whether hash `h` may be in the filter `blocks`.
#[inline(always)]
pub fn test(blocks: &[u64], h: u64) -> bool {
    let (block, mask) = place(h, blocks.len());
    blocks[block] & mask == mask
}

/// Whether [`probe`] may take the AVX-512 path in this process: the CPU has AVX-512 F and DQ,
/// and the kernels were not forced to the portable path. Read once.
pub fn wide() -> bool {
    use std::sync::OnceLock;
    static WIDE: OnceLock<bool> = OnceLock::new();
    *WIDE.get_or_init(|| !super::forced_scalar() && avx512_detected())
}

fn avx512_detected() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512dq")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Up to 64 integer keys against the filter `blocks` (1 to `u32::MAX` blocks): bit `j` of the
/// result is set iff `keys[j]` may be in it. The AVX-512 path when `wide` (which callers pass
/// from [`wide`]).
#[inline]
pub fn probe(wide: bool, blocks: &[u64], keys: &[i64]) -> u64 {
    assert!(keys.len() <= 64 && !blocks.is_empty() && blocks.len() <= u32::MAX as usize);
    #[cfg(target_arch = "x86_64")]
    if wide && avx512_detected() {
        // SAFETY: `probe_avx512` needs AVX-512 F and DQ, detected just above (cached by std);
        // its gathers stay inside `blocks` because every index is below `blocks.len()` (see
        // there), which the assert bounds to 1..=u32::MAX.
        return unsafe { probe_avx512(blocks, keys) };
    }
    let _ = wide;
    if blocks.len() > BATCH_MIN_BLOCKS {
        probe_batched(blocks, keys)
    } else {
        probe_scalar(blocks, keys)
    }
}

/// Filters of more blocks than this (1 MiB, an L2 cache) take [`probe_batched`] on the portable
/// path. Measured on a 2-vCPU EPYC (AVX2, 1 MiB L2, 15 M probes alone, BENCHMARKS.md): batched
/// is about 2x faster from 4 MB on (18 against 42 ns a probe at 4 MB, 38 against 77 at
/// 12 MB) and 2-10 % slower at 40-400 KB, where the loads hit anyway; in queries, where the
/// filter shares the caches with hash tables and pages, TPC-H SF 10 Q3 took 0.85x the time.
const BATCH_MIN_BLOCKS: usize = (1 << 20) / 8;

/// The portable path for filters beyond the caches: every key's place first, then the blocks,
/// so that the loads of all the keys are in flight together. One key at a time, the work
/// between two loads keeps only a few misses in flight, and each probe of a filter in memory
/// costs most of a memory latency.
fn probe_batched(blocks: &[u64], keys: &[i64]) -> u64 {
    let mut places = [(0usize, 0u64); 64];
    for (p, &k) in places.iter_mut().zip(keys) {
        *p = place(mix(k as u64), blocks.len());
    }
    let mut w = 0u64;
    for (j, &(block, mask)) in places[..keys.len()].iter().enumerate() {
        w |= ((blocks[block] & mask == mask) as u64) << j;
    }
    w
}

/// The reference: one key at a time.
pub fn probe_scalar(blocks: &[u64], keys: &[i64]) -> u64 {
    let mut w = 0u64;
    for (j, &k) in keys.iter().enumerate() {
        w |= (test(blocks, mix(k as u64)) as u64) << j;
    }
    w
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
unsafe fn probe_avx512(blocks: &[u64], keys: &[i64]) -> u64 {
    use std::arch::x86_64::*;
    let len = _mm512_set1_epi64(blocks.len() as i64);
    let (mul1, mul2) = (
        _mm512_set1_epi64(MUL1 as i64),
        _mm512_set1_epi64(MUL2 as i64),
    );
    let (one, six_bits) = (_mm512_set1_epi64(1), _mm512_set1_epi64(63));
    let mut word = 0u64;
    for (c, chunk) in keys.chunks(8).enumerate() {
        let lanes: __mmask8 = ((1u16 << chunk.len()) - 1) as __mmask8;
        // SAFETY: the masked load reads only the `chunk.len()` lanes that `chunk` holds.
        let k = unsafe { _mm512_maskz_loadu_epi64(lanes, chunk.as_ptr()) };
        let mut h = _mm512_mullo_epi64(k, mul1);
        h = _mm512_xor_si512(h, _mm512_srli_epi64::<32>(h));
        h = _mm512_mullo_epi64(h, mul2);
        h = _mm512_xor_si512(h, _mm512_srli_epi64::<29>(h));
        // block = (high 32 bits × len) >> 32: `mul_epu32` multiplies the low 32 bits of each
        // lane into 64, and both factors are below 2^32, so the block is below `len`.
        let block = _mm512_srli_epi64::<32>(_mm512_mul_epu32(_mm512_srli_epi64::<32>(h), len));
        let mut mask = _mm512_setzero_si512();
        let mut bits = h;
        for _ in 0..HASHES {
            let bit = _mm512_sllv_epi64(one, _mm512_and_si512(bits, six_bits));
            mask = _mm512_or_si512(mask, bit);
            bits = _mm512_srli_epi64::<6>(bits);
        }
        // SAFETY: every active lane's index is below `blocks.len()` (above), and inactive lanes
        // are not loaded.
        let got = unsafe {
            _mm512_mask_i64gather_epi64::<8>(
                _mm512_setzero_si512(),
                lanes,
                block,
                blocks.as_ptr().cast(),
            )
        };
        let hit = _mm512_mask_cmpeq_epi64_mask(lanes, _mm512_and_si512(got, mask), mask);
        word |= (hit as u64) << (8 * c);
    }
    word
}

/// Up to 64 integer keys against an exact set of keys given as a bitmap over their span: bit
/// `i` of `bits` is set iff `lo + i` is a key, `len` bits in all (at most `64 * bits.len()`).
/// Bit `j` of the result is set iff `keys[j]` is one of the keys. The AVX-512 path when `wide`.
#[inline]
pub fn probe_span(wide: bool, lo: i64, len: u64, bits: &[u64], keys: &[i64]) -> u64 {
    assert!(keys.len() <= 64 && len <= 64 * bits.len() as u64);
    #[cfg(target_arch = "x86_64")]
    if wide && avx512_detected() {
        // SAFETY: `probe_span_avx512` needs AVX-512 F and DQ, detected just above; it gathers
        // only lanes whose offset is below `len`, so every word index is below `bits.len()`
        // (the assert).
        return unsafe { probe_span_avx512(lo, len, bits, keys) };
    }
    let _ = wide;
    probe_span_scalar(lo, len, bits, keys)
}

/// The reference: one key at a time.
pub fn probe_span_scalar(lo: i64, len: u64, bits: &[u64], keys: &[i64]) -> u64 {
    let mut w = 0u64;
    for (j, &k) in keys.iter().enumerate() {
        let off = k.wrapping_sub(lo) as u64;
        let hit = off < len && (bits[(off >> 6) as usize] >> (off & 63)) & 1 == 1;
        w |= (hit as u64) << j;
    }
    w
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
unsafe fn probe_span_avx512(lo: i64, len: u64, bits: &[u64], keys: &[i64]) -> u64 {
    use std::arch::x86_64::*;
    let (lo, len) = (_mm512_set1_epi64(lo), _mm512_set1_epi64(len as i64));
    let (one, six_bits) = (_mm512_set1_epi64(1), _mm512_set1_epi64(63));
    let mut word = 0u64;
    for (c, chunk) in keys.chunks(8).enumerate() {
        let lanes: __mmask8 = ((1u16 << chunk.len()) - 1) as __mmask8;
        // SAFETY: the masked load reads only the `chunk.len()` lanes that `chunk` holds.
        let k = unsafe { _mm512_maskz_loadu_epi64(lanes, chunk.as_ptr()) };
        // The offset from the span's start, wrapping as the scalar path does: keys below `lo`
        // become huge offsets and fail the unsigned compare with `len`.
        let off = _mm512_sub_epi64(k, lo);
        let inside = _mm512_mask_cmplt_epu64_mask(lanes, off, len);
        // SAFETY: only lanes inside the span are gathered, and their word index `off >> 6` is
        // below `len / 64` rounded up, at most `bits.len()`.
        let got = unsafe {
            _mm512_mask_i64gather_epi64::<8>(
                _mm512_setzero_si512(),
                inside,
                _mm512_srli_epi64::<6>(off),
                bits.as_ptr().cast(),
            )
        };
        let bit = _mm512_sllv_epi64(one, _mm512_and_si512(off, six_bits));
        let hit = _mm512_mask_test_epi64_mask(inside, got, bit);
        word |= (hit as u64) << (8 * c);
    }
    word
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every path this CPU runs.
    fn paths() -> Vec<bool> {
        if avx512_detected() {
            vec![false, true]
        } else {
            vec![false]
        }
    }

    fn filter(keys: &[i64], blocks: usize) -> Vec<u64> {
        let mut f = vec![0u64; blocks];
        for &k in keys {
            let (b, m) = place(mix(k as u64), blocks);
            f[b] |= m;
        }
        f
    }

    fn check(blocks: &[u64], probes: &[i64]) {
        for chunk in probes.chunks(64) {
            let want = probe_scalar(blocks, chunk);
            for wide in paths() {
                let got = probe(wide, blocks, chunk);
                assert_eq!(got, want, "wide {wide}, {} blocks", blocks.len());
            }
            // The batched path whatever the filter's size (`probe` takes it for large ones).
            let got = probe_batched(blocks, chunk);
            assert_eq!(got, want, "batched, {} blocks", blocks.len());
        }
    }

    #[test]
    fn edges() {
        let extremes = [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX];
        // The last two sizes straddle `BATCH_MIN_BLOCKS`: `probe` batches the second's loads.
        for blocks in [
            1usize,
            2,
            3,
            51,
            64,
            1000,
            BATCH_MIN_BLOCKS,
            BATCH_MIN_BLOCKS + 1,
        ] {
            let f = filter(&extremes, blocks);
            for n in 0..=64 {
                let probes: Vec<i64> = (0..n as i64)
                    .map(|i| extremes[i as usize % 7] ^ i)
                    .collect();
                check(&f, &probes);
            }
            // Inserted keys always pass, on every path.
            for wide in paths() {
                assert_eq!(probe(wide, &f, &extremes), 0x7f);
            }
            // An empty filter passes nothing; a full one everything.
            for wide in paths() {
                assert_eq!(probe(wide, &vec![0; blocks], &extremes), 0);
                assert_eq!(probe(wide, &vec![u64::MAX; blocks], &extremes), 0x7f);
            }
        }
    }

    #[test]
    fn filters_beyond_the_caches() {
        // A filter of 2 MiB, filled as a join's build fills it (16 bits a key), probed with its
        // keys and as many others: the batched path in `probe` against one key at a time.
        let blocks = 2 * BATCH_MIN_BLOCKS;
        let keys: Vec<i64> = (0..blocks as i64 * 4)
            .map(|i| i.wrapping_mul(7919))
            .collect();
        let f = filter(&keys, blocks);
        let mut probes = keys[..20_000].to_vec();
        probes.extend((0..20_000i64).map(|i| i.wrapping_mul(7919) + 1));
        check(&f, &probes);
        for chunk in keys.chunks(64).take(300) {
            assert_eq!(probe(false, &f, chunk), u64::MAX >> (64 - chunk.len()));
        }
    }

    fn span(keys: &[i64]) -> (i64, u64, Vec<u64>) {
        let lo = keys.iter().copied().min().unwrap_or(0);
        let hi = keys.iter().copied().max().unwrap_or(-1);
        let len = (hi as i128 - lo as i128 + 1).max(0) as u64;
        let mut bits = vec![0u64; len.div_ceil(64) as usize];
        for &k in keys {
            let off = k.wrapping_sub(lo) as u64;
            bits[(off >> 6) as usize] |= 1 << (off & 63);
        }
        (lo, len, bits)
    }

    fn check_span(keys: &[i64], probes: &[i64]) {
        let (lo, len, bits) = span(keys);
        for wide in paths() {
            for chunk in probes.chunks(64) {
                let got = probe_span(wide, lo, len, &bits, chunk);
                let want = chunk
                    .iter()
                    .enumerate()
                    .fold(0u64, |w, (j, k)| w | ((keys.contains(k) as u64) << j));
                assert_eq!(got, want, "wide {wide}, lo {lo}, len {len}");
            }
        }
    }

    #[test]
    fn span_edges() {
        // Spans at the ends of i64, one key, keys on word boundaries, and probes just outside.
        for keys in [
            vec![i64::MIN, i64::MIN + 63, i64::MIN + 64],
            vec![i64::MAX - 64, i64::MAX - 1, i64::MAX],
            vec![0],
            vec![-1, 0, 63, 64, 127, 128],
            vec![],
        ] {
            let mut probes: Vec<i64> = keys
                .iter()
                .flat_map(|&k| [k.wrapping_sub(1), k, k.wrapping_add(1)])
                .collect();
            probes.extend([i64::MIN, -1, 0, 1, i64::MAX]);
            for n in 0..=probes.len().min(64) {
                check_span(&keys, &probes[..n]);
            }
        }
    }

    proptest! {
        #[test]
        fn both_paths_agree_with_one_key_at_a_time(
            keys in proptest::collection::vec(any::<i64>(), 0..300),
            probes in proptest::collection::vec(any::<i64>(), 0..200),
            blocks in 1usize..5000,
        ) {
            let f = filter(&keys, blocks);
            let mut all = probes.clone();
            all.extend_from_slice(&keys); // hits as well as misses
            check(&f, &all);
        }

        #[test]
        fn span_paths_agree_with_the_key_list(
            base in i64::MIN..i64::MAX - 4000,
            offsets in proptest::collection::vec(0i64..3000, 0..300),
            probes in proptest::collection::vec(-100i64..3100, 0..200),
        ) {
            let keys: Vec<i64> = offsets.iter().map(|o| base.wrapping_add(*o)).collect();
            let mut all: Vec<i64> = probes.iter().map(|p| base.wrapping_add(*p)).collect();
            all.extend_from_slice(&keys);
            check_span(&keys, &all);
        }
    }
}
