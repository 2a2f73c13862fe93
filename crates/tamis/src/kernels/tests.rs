//! Every supported path against the scalar reference, for every width 0..=32, sizes across word
//! boundaries, and selection shapes (empty, full, alternating, random, runs, word-edge bits).
//! `packed` is always exactly `ceil(n * k / 8)` bytes, so any read past a slice panics.

use super::{for_isa, scalar, supported, Isa, Kernels};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn pack(codes: &[u32], k: u8) -> Vec<u8> {
    let k = k as usize;
    let mut out = vec![0u8; (codes.len() * k).div_ceil(8)];
    for (i, &c) in codes.iter().enumerate() {
        for b in 0..k {
            let pos = i * k + b;
            out[pos / 8] |= ((c >> b & 1) as u8) << (pos % 8);
        }
    }
    out
}

fn max_code(k: u8) -> u32 {
    if k >= 32 {
        u32::MAX
    } else {
        (1u32 << k) - 1
    }
}

/// Every table compared with the `scalar` reference functions: each supported ISA, the portable
/// table included (it runs word-at-a-time kernels, not the reference).
fn fast_paths() -> Vec<&'static Kernels> {
    supported()
        .into_iter()
        .map(|i| for_isa(i).unwrap())
        .collect()
}

#[derive(Debug, Clone, Copy)]
enum Shape {
    Empty,
    Full,
    Alternating,
    Random(u8),
    Runs,
    Edges,
}

/// A selection of `n` bits in `ceil(n/64)` words; bits past `n` are set too (kernels must ignore
/// them) except where the shape is empty.
fn selection(shape: Shape, n: usize, rng: &mut StdRng) -> Vec<u64> {
    let words = n.div_ceil(64);
    match shape {
        Shape::Empty => vec![0; words],
        Shape::Full => vec![u64::MAX; words],
        Shape::Alternating => vec![0x5555_5555_5555_5555; words],
        Shape::Random(pct) => {
            let mut w = vec![0u64; words];
            for i in 0..words * 64 {
                if rng.random_range(0..100) < pct {
                    w[i / 64] |= 1 << (i % 64);
                }
            }
            w
        }
        Shape::Runs => {
            let mut w = vec![0u64; words];
            let mut i = 0;
            let mut on = rng.random_bool(0.5);
            while i < words * 64 {
                let len = rng.random_range(1..150);
                for j in i..(i + len).min(words * 64) {
                    if on {
                        w[j / 64] |= 1 << (j % 64);
                    }
                }
                i += len;
                on = !on;
            }
            w
        }
        Shape::Edges => {
            let mut w = vec![0u64; words];
            for i in [0, 63, 64, 127, 128, n.saturating_sub(1)] {
                if i < words * 64 {
                    w[i / 64] |= 1 << (i % 64);
                }
            }
            w
        }
    }
}

fn check_select(k: u8, codes: &[u32], sel: &[u64]) {
    let n = codes.len();
    let packed = pack(codes, k);
    let mut want = Vec::new();
    scalar::select_unpack(&packed, k, n, sel, &mut want);
    let mut want_packed = Vec::new();
    let want_count = scalar::select_packed(&packed, k, n, sel, &mut want_packed);
    for t in fast_paths() {
        let mut got = vec![7u32]; // appends after what is there
        (t.select_unpack)(&packed, k, n, sel, &mut got);
        assert_eq!(got[0], 7);
        assert_eq!(
            &got[1..],
            &want[..],
            "{:?} select_unpack k={k} n={n}",
            t.isa
        );
        let mut got_packed = Vec::new();
        let count = (t.select_packed)(&packed, k, n, sel, &mut got_packed);
        assert_eq!(
            count, want_count,
            "{:?} select_packed count k={k} n={n}",
            t.isa
        );
        assert_eq!(
            got_packed, want_packed,
            "{:?} select_packed k={k} n={n}",
            t.isa
        );
    }
}

fn check_equal(k: u8, codes: &[u32], literal: u32) {
    let n = codes.len();
    let packed = pack(codes, k);
    let mut want = vec![0u64; n.div_ceil(64) + 1];
    scalar::equal(&packed, k, n, literal, &mut want);
    for t in fast_paths() {
        let mut got = vec![u64::MAX; want.len()];
        (t.equal)(&packed, k, n, literal, &mut got);
        assert_eq!(got, want, "{:?} equal k={k} n={n} literal={literal}", t.isa);
    }
    check_equal_any(k, codes, &[literal]);
}

/// `equal_any_max` of every table against the scalar reference (itself checked against the
/// codes), where it applies: 1–16-bit codes, 1 to 8 literals below `2^k`.
fn check_equal_any(k: u8, codes: &[u32], literals: &[u32]) {
    let n = codes.len();
    let packed = pack(codes, k);
    let mut want = vec![0u64; n.div_ceil(64) + 1];
    let want_max = codes.iter().copied().max().unwrap_or(0);
    assert_eq!(
        scalar::equal_any_max(&packed, k, n, literals, &mut want),
        want_max
    );
    for (i, c) in codes.iter().enumerate() {
        assert_eq!(want[i / 64] >> (i % 64) & 1 == 1, literals.contains(c));
    }
    let applies = (1..=16).contains(&k)
        && (1..=8).contains(&literals.len())
        && literals.iter().all(|&l| l >> k == 0);
    for t in fast_paths() {
        let Some(kernel) = t.equal_any_max.filter(|_| applies) else {
            continue;
        };
        // Also with the largest codes past `n` (a run inside a longer page): not counted.
        let mut longer = codes.to_vec();
        longer.extend(std::iter::repeat_n(max_code(k), 70));
        for packed in [packed.clone(), pack(&longer, k)] {
            let mut got = vec![u64::MAX; want.len()];
            let max = kernel(&packed, k, n, literals, &mut got);
            let what = format!(
                "{:?} equal_any_max k={k} n={n} literals={literals:?}",
                t.isa
            );
            assert_eq!(got, want, "{what}");
            assert_eq!(max, want_max, "{what}");
        }
    }
}

fn check_lookup(k: u8, codes: &[u32], table: &[u8; 256]) {
    let n = codes.len();
    let packed = pack(codes, k);
    let mut want = vec![0u64; n.div_ceil(64)];
    let want_max = scalar::lookup(&packed, k, n, table, &mut want);
    assert_eq!(want_max, codes.iter().copied().max().unwrap_or(0));
    for (i, &c) in codes.iter().enumerate() {
        assert_eq!(want[i / 64] >> (i % 64) & 1 == 1, table[c as usize] != 0);
    }
    for t in fast_paths() {
        let Some(lookup) = t.lookup else { continue };
        // Words past the group count keep what they held; words written are overwritten.
        let mut got = vec![u64::MAX; want.len()];
        let max = lookup(&packed, k, n, table, &mut got);
        assert_eq!(got, want, "{:?} lookup k={k} n={n}", t.isa);
        assert_eq!(max, want_max, "{:?} lookup max k={k} n={n}", t.isa);
    }
}

fn check_lookup_bits(k: u8, codes: &[u32], bits: &[u32]) {
    let n = codes.len();
    let packed = pack(codes, k);
    let mut want = vec![0u64; n.div_ceil(64)];
    let want_max = scalar::lookup_bits(&packed, k, n, bits, &mut want);
    assert_eq!(want_max, codes.iter().copied().max().unwrap_or(0));
    for (i, &c) in codes.iter().enumerate() {
        let hit = bits
            .get(c as usize / 32)
            .is_some_and(|w| w >> (c % 32) & 1 == 1);
        assert_eq!(want[i / 64] >> (i % 64) & 1 == 1, hit);
    }
    for t in fast_paths() {
        let Some(lookup_bits) = t.lookup_bits else {
            continue;
        };
        let mut got = vec![u64::MAX; want.len()];
        let max = lookup_bits(&packed, k, n, bits, &mut got);
        assert_eq!(got, want, "{:?} lookup_bits k={k} n={n}", t.isa);
        assert_eq!(max, want_max, "{:?} lookup_bits max k={k} n={n}", t.isa);
    }
}

/// A bitset over every code of width `k` (at least one word), `pct` percent of bits set.
fn random_bits(rng: &mut StdRng, k: u8, pct: u32) -> Vec<u32> {
    let words = (1usize << k).div_ceil(32);
    (0..words)
        .map(|_| {
            (0..32).fold(0u32, |w, b| {
                w | u32::from(rng.random_range(0..100) < pct) << b
            })
        })
        .collect()
}

fn random_table(rng: &mut StdRng, pct: u32) -> [u8; 256] {
    let mut t = [0u8; 256];
    for v in t.iter_mut() {
        *v = u8::from(rng.random_range(0..100) < pct);
    }
    t
}

#[test]
fn lookup_bits_every_width_size_and_bitset() {
    let mut rng = StdRng::seed_from_u64(6);
    for k in 0..=17u8 {
        for n in SIZES {
            for pct in [0, 3, 50, 100] {
                let codes = random_codes(k, n, &mut rng);
                check_lookup_bits(k, &codes, &random_bits(&mut rng, k, pct));
            }
        }
        let bits = random_bits(&mut rng, k, 50);
        check_lookup_bits(k, &vec![max_code(k); 300], &bits);
        check_lookup_bits(k, &vec![0; 130], &bits);
        // A bitset shorter than the width's codes: the fast path declines, nothing is read
        // past it.
        check_lookup_bits(k, &random_codes(k, 200, &mut rng), &bits[..bits.len() / 2]);
    }
}

#[test]
fn lookup_every_width_size_and_table() {
    let mut rng = StdRng::seed_from_u64(5);
    for k in 0..=8u8 {
        for n in SIZES {
            for pct in [0, 3, 50, 100] {
                let codes = random_codes(k, n, &mut rng);
                check_lookup(k, &codes, &random_table(&mut rng, pct));
            }
        }
        // Every code at its maximum (the 8th bit's table half for k = 8), and every code 0.
        let table = random_table(&mut rng, 50);
        check_lookup(k, &vec![max_code(k); 300], &table);
        check_lookup(k, &vec![0; 130], &table);
    }
}

fn random_codes(k: u8, n: usize, rng: &mut StdRng) -> Vec<u32> {
    (0..n).map(|_| rng.random::<u32>() & max_code(k)).collect()
}

const SIZES: [usize; 14] = [0, 1, 7, 8, 63, 64, 65, 127, 128, 129, 200, 511, 777, 2049];

#[test]
fn select_every_width_size_and_shape() {
    let mut rng = StdRng::seed_from_u64(1);
    let shapes = [
        Shape::Empty,
        Shape::Full,
        Shape::Alternating,
        Shape::Random(2),
        Shape::Random(50),
        Shape::Random(97),
        Shape::Runs,
        Shape::Edges,
    ];
    for k in 0..=32u8 {
        for n in SIZES {
            let codes = random_codes(k, n, &mut rng);
            for shape in shapes {
                check_select(k, &codes, &selection(shape, n, &mut rng));
            }
        }
        // Every code at its maximum value, all selected: no bit may leak between fields.
        check_select(k, &vec![max_code(k); 300], &[u64::MAX; 5]);
    }
}

#[test]
fn select_reads_no_selection_past_n() {
    // `sel` may be shorter than ceil(n/64) words only if the caller broke the contract, but a
    // longer one with garbage past n is normal (a page within a batch).
    let mut rng = StdRng::seed_from_u64(2);
    for k in [1u8, 3, 8, 13, 16, 17, 32] {
        let codes = random_codes(k, 100, &mut rng);
        check_select(k, &codes, &[u64::MAX, u64::MAX, u64::MAX]);
    }
}

#[test]
fn equal_every_width_and_literal() {
    let mut rng = StdRng::seed_from_u64(3);
    for k in 0..=32u8 {
        for n in SIZES {
            // Small alphabets so that matches are frequent.
            let codes: Vec<u32> = (0..n)
                .map(|_| match rng.random_range(0..4) {
                    0 => max_code(k),
                    1 => 0,
                    _ => rng.random::<u32>() & max_code(k) & 3,
                })
                .collect();
            for literal in [
                0,
                1,
                2,
                3,
                max_code(k),
                max_code(k).wrapping_add(1),
                u32::MAX,
            ] {
                check_equal(k, &codes, literal);
            }
        }
    }
}

/// Extend `bits` (one per record) by the record starts `mask` over `n` levels, then compress
/// the level bitmap by `valid` (n bits).
fn check_levels(bits: &[u64], mask: &[u64], n: usize, valid: &[u64]) {
    let words = n.div_ceil(64);
    let mut want = vec![0u64; words];
    scalar::extend(bits, mask, n, &mut want);
    let mut want_c = Vec::new();
    let want_count = scalar::compress(&want, valid, n, &mut want_c);
    for t in fast_paths() {
        let mut got = vec![u64::MAX; words];
        (t.extend)(bits, mask, n, &mut got);
        assert_eq!(got, want, "{:?} extend n={n}", t.isa);
        let mut got_c = vec![9u64];
        let count = (t.compress)(&want, valid, n, &mut got_c);
        assert_eq!(count, want_count, "{:?} compress count n={n}", t.isa);
        assert_eq!(got_c, want_c, "{:?} compress n={n}", t.isa);
    }
}

fn check_transform(filtered: &[u64], select: &[u64]) {
    let mut want = vec![0u64; select.len()];
    scalar::transform(filtered, select, &mut want);
    for t in fast_paths() {
        let mut got = vec![u64::MAX; select.len()];
        (t.transform)(filtered, select, &mut got);
        assert_eq!(got, want, "{:?} transform", t.isa);
    }
}

/// Record starts over `n` levels with record lengths drawn from `lens` (bit 0 always set).
fn record_mask(n: usize, lens: std::ops::Range<usize>, rng: &mut StdRng) -> (Vec<u64>, usize) {
    let mut mask = vec![0u64; n.div_ceil(64)];
    let (mut i, mut records) = (0, 0);
    while i < n {
        mask[i / 64] |= 1 << (i % 64);
        records += 1;
        i += rng.random_range(lens.clone());
    }
    (mask, records)
}

#[test]
fn extend_compress_long_and_short_records() {
    let mut rng = StdRng::seed_from_u64(4);
    for n in SIZES {
        for lens in [1..2, 1..4, 1..9, 30..100, 60..70, 64..65, 100..300] {
            let (mask, records) = record_mask(n, lens, &mut rng);
            for pct in [0, 3, 50, 100] {
                let bits: Vec<u64> = selection(Shape::Random(pct), records.max(1), &mut rng);
                let valid = selection(Shape::Random(100 - pct), n, &mut rng);
                check_levels(&bits, &mask, n, &valid);
                check_levels(&bits, &mask, n, &mask);
            }
        }
        // A mask without bit 0 (outside the contract) still matches the reference.
        let mask: Vec<u64> = vec![0x8000_0000_0000_0100; n.div_ceil(64)];
        check_levels(&[u64::MAX; 64], &mask, n, &mask);
    }
}

#[test]
fn transform_any_select() {
    let mut rng = StdRng::seed_from_u64(5);
    for words in [0usize, 1, 2, 5, 33] {
        for pct in [0, 2, 50, 100] {
            let select = selection(Shape::Random(pct), words * 64, &mut rng);
            let ones: usize = select.iter().map(|w| w.count_ones() as usize).sum();
            let filtered = selection(Shape::Random(50), ones.max(1), &mut rng);
            check_transform(&filtered, &select);
        }
    }
}

fn shape_strategy() -> impl Strategy<Value = Shape> {
    prop_oneof![
        Just(Shape::Empty),
        Just(Shape::Full),
        Just(Shape::Alternating),
        (0u8..=100).prop_map(Shape::Random),
        Just(Shape::Runs),
        Just(Shape::Edges),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn select_matches_reference(
        k in 0u8..=32,
        n in prop_oneof![0usize..200, 0usize..4000],
        shape in shape_strategy(),
        seed in any::<u64>(),
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        let codes = random_codes(k, n, &mut rng);
        check_select(k, &codes, &selection(shape, n, &mut rng));
    }

    #[test]
    fn equal_matches_reference(
        k in 0u8..=32,
        n in 0usize..2000,
        literal_pick in 0u8..4,
        seed in any::<u64>(),
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        let alphabet = rng.random_range(1..=4u32);
        let codes: Vec<u32> = (0..n).map(|_| rng.random_range(0..alphabet) & max_code(k)).collect();
        let literal = match literal_pick {
            0 => max_code(k),
            1 => rng.random::<u32>(),
            _ => rng.random_range(0..alphabet),
        };
        check_equal(k, &codes, literal);
    }

    #[test]
    fn equal_any_matches_reference(
        k in 1u8..=16,
        n in 0usize..2000,
        m in 1usize..=8,
        seed in any::<u64>(),
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        // A small alphabet, so that the literals match often.
        let alphabet = rng.random_range(1..=16u32);
        let codes: Vec<u32> = (0..n).map(|_| rng.random_range(0..alphabet) & max_code(k)).collect();
        let literals: Vec<u32> = (0..m).map(|_| rng.random_range(0..alphabet) & max_code(k)).collect();
        check_equal_any(k, &codes, &literals);
    }

    #[test]
    fn lookup_bits_matches_reference(
        k in 9u8..=16,
        n in prop_oneof![0usize..200, 0usize..3000],
        pct in 0u32..=100,
        seed in any::<u64>(),
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        let codes = random_codes(k, n, &mut rng);
        check_lookup_bits(k, &codes, &random_bits(&mut rng, k, pct));
    }

    #[test]
    fn lookup_matches_reference(
        k in 0u8..=8,
        n in prop_oneof![0usize..200, 0usize..3000],
        pct in 0u32..=100,
        seed in any::<u64>(),
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        let codes = random_codes(k, n, &mut rng);
        check_lookup(k, &codes, &random_table(&mut rng, pct));
    }

    #[test]
    fn levels_match_reference(
        n in 0usize..3000,
        max_len in 1usize..200,
        pct in 0u8..=100,
        seed in any::<u64>(),
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        let (mask, records) = record_mask(n, 1..max_len + 1, &mut rng);
        let bits = selection(Shape::Random(pct), records.max(1), &mut rng);
        let valid = selection(Shape::Random(pct / 2 + 40), n, &mut rng);
        check_levels(&bits, &mask, n, &valid);
        let filtered = selection(Shape::Random(pct), n.max(1), &mut rng);
        let select = selection(Shape::Random(pct), n, &mut rng);
        check_transform(&filtered, &select);
    }
}

/// The paper's figures, on every path.
#[test]
fn paper_figures_on_every_path() {
    fn words(bits: &str) -> Vec<u64> {
        let mut w = vec![0u64; bits.len().div_ceil(64)];
        for (i, c) in bits.chars().rev().enumerate() {
            if c == '1' {
                w[i / 64] |= 1 << (i % 64);
            }
        }
        w
    }
    for isa in supported() {
        let t = for_isa(isa).unwrap();
        // Fig. 6: transform.
        let mut out = vec![0u64; 1];
        (t.transform)(
            &words("01110100"),
            &words("10100001000001000000111000001000"),
            &mut out,
        );
        assert_eq!(out, words("00100001000001000000010000000000"), "{isa:?}");
        // Fig. 10 / 11: extend, compress.
        let mut level = vec![0u64; 1];
        (t.extend)(
            &words("010000010001100000100001"),
            &words("10111111111100011110111110011101"),
            32,
            &mut level,
        );
        assert_eq!(level, words("01100000100011111000000100000011"), "{isa:?}");
        let mut value = Vec::new();
        let valid = words("01100001000111110001100101110011");
        assert_eq!((t.compress)(&level, &valid, 32, &mut value), 16);
        assert_eq!(value, words("1100111100100011"), "{isa:?}");
        // Fig. 4: 32 3-bit values, select v3, v9, v10, v11, v18, v24, v29, v31 (v10, v21
        // straddle 32-bit words).
        let codes: Vec<u32> = (0..32).map(|i| (i * 5 + 3) % 8).collect();
        let sel = [[3, 9, 10, 11, 18, 24, 29, 31]
            .iter()
            .fold(0u64, |w, &i| w | 1 << i)];
        let mut got = Vec::new();
        (t.select_unpack)(&pack(&codes, 3), 3, 32, &sel, &mut got);
        let want: Vec<u32> = [3, 9, 10, 11, 18, 24, 29, 31]
            .iter()
            .map(|&i| codes[i])
            .collect();
        assert_eq!(got, want, "{isa:?}");
    }
}

#[cfg(all(target_arch = "x86_64", feature = "bmi-select"))]
#[test]
fn generate_masks_matches_figure_4_and_algorithm_3() {
    // Fig. 4 uses 32-bit words; with 64-bit words, word 1 of a 3-bit group starts with the
    // second half of value 21 (bits 63..65), so its first whole value starts at bit 2.
    let layout = super::bmi2::GroupLayout::new(3);
    let pattern = (0..64).step_by(3).fold(0u64, |m, b| m | 1u64 << b);
    assert_eq!(layout.masks[0], pattern);
    assert_eq!(layout.masks[1], pattern << 2 | 1);
    assert_eq!(layout.masks[2], pattern << 1 | 1);
    assert_eq!(&layout.first[..3], &[0, 21, 42]);
    for k in [1usize, 2, 4, 8, 16, 32] {
        // Powers of two: every word has the plain mask.
        let l = super::bmi2::GroupLayout::new(k);
        let plain = (0..64).step_by(k).fold(0u64, |m, b| m | 1u64 << b);
        assert!(l.masks[..k].iter().all(|&m| m == plain), "k={k}");
    }
}

/// The comparisons above are only as good as the paths they reach: on a CPU with the features,
/// the fast paths must be among them.
#[cfg(target_arch = "x86_64")]
#[test]
fn fast_paths_are_exercised_where_available() {
    let s = supported();
    if std::arch::is_x86_feature_detected!("avx512vbmi2") && super::avx512::detected() {
        assert!(s.contains(&Isa::Avx512), "{s:?}");
    }
    if cfg!(feature = "bmi-select")
        && std::arch::is_x86_feature_detected!("bmi2")
        && super::Cpu::get().fast_bmi2()
    {
        assert!(s.contains(&Isa::Bmi2), "{s:?}");
    }
    eprintln!("{}", super::describe());
}
