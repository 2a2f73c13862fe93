//! Definition and repetition levels of data pages.
//!
//! Data page v1 stores levels either as a length-prefixed RLE/bit-packed hybrid or (deprecated)
//! MSB-first BIT_PACKED; data page v2 stores the hybrid without a prefix, its length being in the
//! page header. A column whose max level is 0 stores no levels at all.

use crate::encoding::bitpack;
#[cfg(test)]
use crate::encoding::rle::decode_rle;
use crate::encoding::rle::{Runs, Span, SPAN};
use crate::error::{Error, Result};
use crate::selection::Bitmap;
use parquet::basic::Encoding;

/// Bits needed to store levels up to `max_level` (0 for 0).
pub(crate) fn level_bit_width(max_level: i16) -> u8 {
    if max_level <= 0 {
        0
    } else {
        (16 - (max_level as u16).leading_zeros()) as u8
    }
}

fn check_max(max_level: i16) -> Result<()> {
    if max_level < 0 {
        return Err(Error::corrupt(format!("negative max level {max_level}")));
    }
    Ok(())
}

/// Checks each decoded level against `max_level` and appends it to `out`.
#[cfg(test)]
fn push_levels(raw: &[u32], max_level: i16, out: &mut Vec<i16>) -> Result<()> {
    let max = raw.iter().copied().max().unwrap_or(0);
    if max > max_level as u32 {
        return Err(Error::corrupt(format!(
            "level {max} is above the max level {max_level}"
        )));
    }
    out.extend(raw.iter().map(|&l| l as i16));
    Ok(())
}

/// The hybrid-encoded body of a v1 RLE level section (after its 4-byte length prefix) and the
/// bytes the section takes.
fn v1_rle_body(data: &[u8]) -> Result<(&[u8], usize)> {
    let len = data
        .get(..4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or_else(|| {
            Error::corrupt(format!(
                "v1 levels need a 4-byte length, page has {} bytes",
                data.len()
            ))
        })?;
    let body = data.get(4..).and_then(|d| d.get(..len)).ok_or_else(|| {
        Error::corrupt(format!(
            "v1 levels claim {len} bytes, page has {} after the length",
            data.len() - 4
        ))
    })?;
    Ok((body, 4 + len))
}

/// Bytes of `num_values` deprecated BIT_PACKED levels of `bw` bits, checked against the page.
fn bit_packed_len(data: &[u8], bw: usize, num_values: usize) -> Result<usize> {
    num_values
        .checked_mul(bw)
        .map(|bits| bits.div_ceil(8))
        .filter(|&b| b <= data.len())
        .ok_or_else(|| {
            Error::corrupt(format!(
                "BIT_PACKED levels: {num_values} values of {bw} bits need more than the {} bytes of the page",
                data.len()
            ))
        })
}

/// Level `i` of the deprecated BIT_PACKED encoding: MSB first, bit `j` of the stream is bit
/// `7 - j % 8` of byte `j / 8`, values most significant bit first.
fn bit_packed_level(data: &[u8], bw: usize, i: usize) -> u32 {
    (0..bw).fold(0u32, |acc, b| {
        let bit = i * bw + b;
        (acc << 1) | ((data[bit / 8] >> (7 - bit % 8)) & 1) as u32
    })
}

#[allow(deprecated)]
fn is_bit_packed(encoding: Encoding) -> bool {
    encoding == Encoding::BIT_PACKED
}

fn unsupported_encoding(encoding: Encoding) -> Error {
    Error::unsupported(format!("encoding {encoding} for levels"))
}

/// Decodes `num_values` levels of a v1 data page, appending them to `out`; returns the bytes
/// consumed, where the values (or the next levels) start.
#[cfg(test)]
pub(crate) fn decode_v1(
    data: &[u8],
    encoding: Encoding,
    max_level: i16,
    num_values: usize,
    out: &mut Vec<i16>,
) -> Result<usize> {
    check_max(max_level)?;
    if max_level == 0 {
        return Ok(0);
    }
    let bit_width = level_bit_width(max_level);
    if encoding == Encoding::RLE {
        let (body, used) = v1_rle_body(data)?;
        let mut raw = Vec::new();
        decode_rle(body, bit_width, num_values, &mut raw)?;
        push_levels(&raw, max_level, out)?;
        Ok(used)
    } else if is_bit_packed(encoding) {
        let bw = bit_width as usize;
        let bytes = bit_packed_len(data, bw, num_values)?;
        let raw: Vec<u32> = (0..num_values)
            .map(|i| bit_packed_level(data, bw, i))
            .collect();
        push_levels(&raw, max_level, out)?;
        Ok(bytes)
    } else {
        Err(unsupported_encoding(encoding))
    }
}

/// Decodes `num_values` levels of a v2 data page (`data` is exactly the level section), appending
/// them to `out`. Max level 0 pushes nothing, as in [`decode_v1`].
#[cfg(test)]
pub(crate) fn decode_v2(
    data: &[u8],
    max_level: i16,
    num_values: usize,
    out: &mut Vec<i16>,
) -> Result<()> {
    check_max(max_level)?;
    if max_level == 0 {
        return Ok(());
    }
    let mut raw = Vec::new();
    decode_rle(data, level_bit_width(max_level), num_values, &mut raw)?;
    push_levels(&raw, max_level, out)
}

// ── Levels straight to bitmaps ───────────────────────────────────────────────────────────────
//
// The paper's `equal` (§5.3) on the encoded levels: a bit-packed run goes through the
// bit-parallel `kernels().equal` on its packed bytes, a repeated run sets or clears a whole
// range. Levels are never materialised as integers, yet validated as strictly as by
// `decode_v1` / `decode_v2`: a level above the max level or a truncated section is an error.

/// Validity of `num_values` levels: bit `i` set iff definition level `i` equals `max_def` (the
/// value is present, fact ① of the paper). Returns the bitmap and the bytes the v1 level
/// section takes. Max level 0 stores no levels: everything is valid, nothing is consumed.
pub(crate) fn validity_v1(
    data: &[u8],
    encoding: Encoding,
    max_def: i16,
    num_values: usize,
) -> Result<(Bitmap, usize)> {
    let (mut maps, used) = equal_v1(
        data,
        encoding,
        max_def,
        num_values,
        &[max_def.max(0) as u32],
    )?;
    Ok((maps.pop().expect("one literal"), used))
}

/// [`validity_v1`] for the level section of a v2 data page (`data` is exactly that section).
pub(crate) fn validity_v2(data: &[u8], max_def: i16, num_values: usize) -> Result<Bitmap> {
    let mut maps = equal_v2(data, max_def, num_values, &[max_def.max(0) as u32])?;
    Ok(maps.pop().expect("one literal"))
}

/// Record starts of `num_values` levels: bit `i` set iff repetition level `i` is 0 (level `i`
/// begins a new record, fact ② of the paper). Returns the bitmap and the bytes consumed.
pub(crate) fn record_starts_v1(
    data: &[u8],
    encoding: Encoding,
    max_rep: i16,
    num_values: usize,
) -> Result<(Bitmap, usize)> {
    let (mut maps, used) = equal_v1(data, encoding, max_rep, num_values, &[0])?;
    Ok((maps.pop().expect("one literal"), used))
}

/// [`record_starts_v1`] for the level section of a v2 data page.
pub(crate) fn record_starts_v2(data: &[u8], max_rep: i16, num_values: usize) -> Result<Bitmap> {
    let mut maps = equal_v2(data, max_rep, num_values, &[0])?;
    Ok(maps.pop().expect("one literal"))
}

/// One bitmap per literal over `num_values` v1 levels (bit `i` set iff level `i` equals the
/// literal), in one pass over the encoded section; and the bytes the section takes. A column
/// with max level 0 stores no levels: they are all 0.
pub(crate) fn equal_v1(
    data: &[u8],
    encoding: Encoding,
    max_level: i16,
    num_values: usize,
    literals: &[u32],
) -> Result<(Vec<Bitmap>, usize)> {
    check_max(max_level)?;
    if max_level == 0 {
        return Ok((all_zero_levels(num_values, literals), 0));
    }
    if encoding == Encoding::RLE {
        let (body, used) = v1_rle_body(data)?;
        Ok((equal_hybrid(body, max_level, num_values, literals)?, used))
    } else if is_bit_packed(encoding) {
        let bw = level_bit_width(max_level) as usize;
        let used = bit_packed_len(data, bw, num_values)?;
        let mut maps: Vec<Bitmap> = literals
            .iter()
            .map(|_| Bitmap::new_zeroed(num_values))
            .collect();
        for i in 0..num_values {
            let level = bit_packed_level(data, bw, i);
            if level > max_level as u32 {
                return Err(above_max(level, max_level));
            }
            for (map, &lit) in maps.iter_mut().zip(literals) {
                if level == lit {
                    map.set(i);
                }
            }
        }
        Ok((maps, used))
    } else {
        Err(unsupported_encoding(encoding))
    }
}

/// [`equal_v1`] for the level section of a v2 data page (`data` is exactly that section).
pub(crate) fn equal_v2(
    data: &[u8],
    max_level: i16,
    num_values: usize,
    literals: &[u32],
) -> Result<Vec<Bitmap>> {
    check_max(max_level)?;
    if max_level == 0 {
        return Ok(all_zero_levels(num_values, literals));
    }
    equal_hybrid(data, max_level, num_values, literals)
}

fn above_max(level: u32, max_level: i16) -> Error {
    Error::corrupt(format!("level {level} is above the max level {max_level}"))
}

/// The bitmaps of `num_values` implicit levels, all 0.
fn all_zero_levels(num_values: usize, literals: &[u32]) -> Vec<Bitmap> {
    literals
        .iter()
        .map(|&lit| {
            if lit == 0 {
                Bitmap::new_set(num_values)
            } else {
                Bitmap::new_zeroed(num_values)
            }
        })
        .collect()
}

/// `equal` for each literal over the first `num_values` levels of a hybrid stream.
fn equal_hybrid(
    data: &[u8],
    max_level: i16,
    num_values: usize,
    literals: &[u32],
) -> Result<Vec<Bitmap>> {
    let k = level_bit_width(max_level);
    let max = max_level as u32;
    // Levels that fit in k bits but exceed the max: a bit-packed run is checked for each with
    // `equal` when there are few (max levels 2^k - 1, 2^k - 2, 2^k - 3, the common ones), else
    // unpacked.
    let top = (1u32 << k) - 1;
    let few_invalid = top - max <= 2;
    let mut maps: Vec<Bitmap> = literals
        .iter()
        .map(|_| Bitmap::new_zeroed(num_values))
        .collect();
    let equal = crate::kernels::kernels().equal;
    let mut scratch = [0u64; SPAN / 64];
    let mut unpacked: Vec<u32> = Vec::new();
    let mut runs = Runs::new(data, k, num_values);
    while let Some((pos, span)) = runs.next()? {
        match span {
            Span::Repeated { value, count } => {
                if value > max {
                    return Err(above_max(value, max_level));
                }
                for (map, &lit) in maps.iter_mut().zip(literals) {
                    if value == lit {
                        map.set_range(pos, pos + count);
                    }
                }
            }
            Span::Packed {
                data: bytes,
                count: n,
            } => {
                let words = n.div_ceil(64);
                let tail_mask = match n % 64 {
                    0 => u64::MAX,
                    r => (1u64 << r) - 1,
                };
                if few_invalid {
                    for bad in max + 1..=top {
                        equal(bytes, k, n, bad, &mut scratch[..words]);
                        scratch[words - 1] &= tail_mask;
                        if scratch[..words].iter().any(|&w| w != 0) {
                            return Err(above_max(bad, max_level));
                        }
                    }
                    for (map, &lit) in maps.iter_mut().zip(literals) {
                        if lit > max {
                            continue;
                        }
                        equal(bytes, k, n, lit, &mut scratch[..words]);
                        scratch[words - 1] &= tail_mask;
                        for (w, &word) in scratch[..words].iter().enumerate() {
                            map.or_word_at(pos + w * 64, word);
                        }
                    }
                } else {
                    unpacked.clear();
                    bitpack::unpack(bytes, k, n, &mut unpacked)?;
                    if let Some(&bad) = unpacked.iter().find(|&&l| l > max) {
                        return Err(above_max(bad, max_level));
                    }
                    for (map, &lit) in maps.iter_mut().zip(literals) {
                        for (i, _) in unpacked.iter().enumerate().filter(|(_, &l)| l == lit) {
                            map.set(pos + i);
                        }
                    }
                }
            }
        }
    }
    Ok(maps)
}

/// Bit `i` is set where `def_levels[i] == max_def`, i.e. where the value is present: the
/// one-level-at-a-time reference the bit-parallel `validity_v1/v2` are tested against.
#[cfg(test)]
pub(crate) fn validity(def_levels: &[i16], max_def: i16) -> Bitmap {
    let mut b = Bitmap::new_zeroed(def_levels.len());
    for (i, &d) in def_levels.iter().enumerate() {
        if d == max_def {
            b.set(i);
        }
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::encodings::levels::LevelEncoder;
    use proptest::prelude::*;

    fn arb_levels() -> impl Strategy<Value = (i16, Vec<i16>)> {
        prop_oneof![1i16..4, 1i16..=i16::MAX].prop_flat_map(|max| {
            let runs = prop::collection::vec((0..=max, 1usize..50, any::<bool>()), 0..15);
            (Just(max), runs).prop_map(|(max, runs)| {
                let mut v = Vec::new();
                for (l, n, repeat) in runs {
                    for i in 0..n {
                        v.push(if repeat {
                            l
                        } else {
                            ((l as usize + i * 3) % (max as usize + 1)) as i16
                        });
                    }
                }
                (max, v)
            })
        })
    }

    /// Reference MSB-first packer for the deprecated BIT_PACKED encoding.
    fn bit_pack_msb(levels: &[i16], bw: usize) -> Vec<u8> {
        let mut out = vec![0u8; (levels.len() * bw).div_ceil(8)];
        for (i, &l) in levels.iter().enumerate() {
            for b in 0..bw {
                let bit = i * bw + b;
                if (l as u32 >> (bw - 1 - b)) & 1 == 1 {
                    out[bit / 8] |= 0x80 >> (bit % 8);
                }
            }
        }
        out
    }

    proptest! {
        #[test]
        fn roundtrip_v1_v2((max, levels) in arb_levels(), trailing in prop::collection::vec(any::<u8>(), 0..5)) {
            let mut enc = LevelEncoder::v1_streaming(max);
            enc.put_with_observer(&levels, |_, _| {});
            let mut data = enc.consume();
            let len = data.len();
            data.extend(&trailing);
            let mut out = vec![-1];
            prop_assert_eq!(decode_v1(&data, Encoding::RLE, max, levels.len(), &mut out).unwrap(), len);
            prop_assert_eq!(&out[1..], &levels[..]);

            let mut enc = LevelEncoder::v2_streaming(max);
            enc.put_with_observer(&levels, |_, _| {});
            let data = enc.consume();
            let mut out = Vec::new();
            decode_v2(&data, max, levels.len(), &mut out).unwrap();
            prop_assert_eq!(&out, &levels);
            prop_assert!(decode_v2(&data, max, levels.len() + 10_000, &mut out).is_err());

            let bw = level_bit_width(max) as usize;
            let mut packed = bit_pack_msb(&levels, bw);
            let len = packed.len();
            packed.extend(&trailing);
            let mut out = Vec::new();
            #[allow(deprecated)]
            let used = decode_v1(&packed, Encoding::BIT_PACKED, max, levels.len(), &mut out).unwrap();
            prop_assert_eq!(used, len);
            prop_assert_eq!(&out, &levels);

            let valid = validity(&levels, max);
            prop_assert_eq!(valid.count_ones(), levels.iter().filter(|&&l| l == max).count());
        }

        #[test]
        fn garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..64), n in 0usize..1000, max in -2i16..300) {
            let mut out = Vec::new();
            let _ = decode_v1(&data, Encoding::RLE, max, n, &mut out);
            #[allow(deprecated)]
            let _ = decode_v1(&data, Encoding::BIT_PACKED, max, n, &mut out);
            let _ = decode_v2(&data, max, n, &mut out);
        }
    }

    /// Max levels of every bit width 1..=15: 2^k - 1 (no invalid k-bit level), 2^(k-1) (the
    /// most invalid ones), and small ones.
    fn arb_max() -> impl Strategy<Value = i16> {
        prop_oneof![
            1i16..=8,
            (1u32..=15).prop_map(|k| ((1u32 << k) - 1) as i16),
            (1u32..=15).prop_map(|k| (1u32 << (k - 1)) as i16),
            1i16..=i16::MAX,
        ]
    }

    /// Levels in runs of every shape: long repeats (RLE runs), noise (bit-packed runs), both
    /// longer than a word and than a comparison chunk.
    fn arb_level_runs() -> impl Strategy<Value = (i16, Vec<i16>)> {
        arb_max().prop_flat_map(|max| {
            let len = prop_oneof![1usize..20, 1usize..200, 1usize..5000];
            let runs = prop::collection::vec((0..=max, len, any::<bool>(), any::<u32>()), 0..8);
            (Just(max), runs).prop_map(|(max, runs)| {
                let mut v = Vec::new();
                for (l, n, repeat, seed) in runs {
                    for i in 0..n {
                        let x = (seed as usize).wrapping_mul(i + 1).rotate_left(7) ^ i;
                        v.push(if repeat {
                            l
                        } else {
                            (x % (max as usize + 1)) as i16
                        });
                    }
                }
                (max, v)
            })
        })
    }

    /// The reference: per-literal bitmaps of decoded levels.
    fn reference(levels: &[i16], literals: &[u32]) -> Vec<Bitmap> {
        literals
            .iter()
            .map(|&lit| {
                let bools: Vec<bool> = levels.iter().map(|&l| l as u32 == lit).collect();
                Bitmap::from_bools(&bools)
            })
            .collect()
    }

    fn literals_for(max: i16, pick: u32) -> Vec<u32> {
        vec![0, max as u32, pick % (max as u32 + 1), max as u32 + 1]
    }

    /// Both paths agree: same error or not, and when not, same bitmaps and bytes consumed.
    fn same_as_decode_v1(data: &[u8], encoding: Encoding, max: i16, n: usize, literals: &[u32]) {
        let mut levels = Vec::new();
        let decoded = decode_v1(data, encoding, max, n, &mut levels);
        let bitmaps = equal_v1(data, encoding, max, n, literals);
        match (decoded, bitmaps) {
            (Ok(used), Ok((maps, used2))) => {
                assert_eq!(used, used2);
                if max == 0 {
                    levels = vec![0; n];
                }
                assert_eq!(maps, reference(&levels, literals));
            }
            (Err(_), Err(_)) => {}
            (a, b) => panic!("decode_v1 {a:?} but equal_v1 {:?}", b.map(|(_, u)| u)),
        }
    }

    fn same_as_decode_v2(data: &[u8], max: i16, n: usize, literals: &[u32]) {
        let mut levels = Vec::new();
        let decoded = decode_v2(data, max, n, &mut levels);
        let bitmaps = equal_v2(data, max, n, literals);
        match (decoded, bitmaps) {
            (Ok(()), Ok(maps)) => {
                if max == 0 {
                    levels = vec![0; n];
                }
                assert_eq!(maps, reference(&levels, literals));
            }
            (Err(_), Err(_)) => {}
            (a, b) => panic!("decode_v2 {a:?} but equal_v2 {:?}", b.map(|m| m.len())),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn bitmaps_match_decoded_levels((max, levels) in arb_level_runs(), pick in any::<u32>(),
                                        trailing in prop::collection::vec(any::<u8>(), 0..5)) {
            let literals = literals_for(max, pick);
            let n = levels.len();
            let expect = reference(&levels, &literals);

            let mut enc = LevelEncoder::v1_streaming(max);
            enc.put_with_observer(&levels, |_, _| {});
            let mut v1 = enc.consume();
            let len = v1.len();
            v1.extend(&trailing);
            let (maps, used) = equal_v1(&v1, Encoding::RLE, max, n, &literals).unwrap();
            prop_assert_eq!(used, len);
            prop_assert_eq!(&maps, &expect);
            let (valid, used) = validity_v1(&v1, Encoding::RLE, max, n).unwrap();
            prop_assert_eq!((&valid, used), (&expect[1], len));
            prop_assert_eq!(valid, validity(&levels, max));
            prop_assert_eq!(record_starts_v1(&v1, Encoding::RLE, max, n).unwrap(), (expect[0].clone(), len));
            // Fewer levels than encoded: a prefix; more: an error.
            let (prefix, _) = equal_v1(&v1, Encoding::RLE, max, n / 2, &literals).unwrap();
            prop_assert_eq!(prefix, reference(&levels[..n / 2], &literals));
            same_as_decode_v1(&v1, Encoding::RLE, max, n + 9, &literals);

            let mut enc = LevelEncoder::v2_streaming(max);
            enc.put_with_observer(&levels, |_, _| {});
            let v2 = enc.consume();
            prop_assert_eq!(&equal_v2(&v2, max, n, &literals).unwrap(), &expect);
            prop_assert_eq!(&validity_v2(&v2, max, n).unwrap(), &expect[1]);
            prop_assert_eq!(&record_starts_v2(&v2, max, n).unwrap(), &expect[0]);
            prop_assert!(equal_v2(&v2, max, n + 10_000, &literals).is_err());

            #[allow(deprecated)]
            let bp = Encoding::BIT_PACKED;
            let bw = level_bit_width(max) as usize;
            let mut packed = bit_pack_msb(&levels, bw);
            let len = packed.len();
            packed.extend(&trailing);
            let (maps, used) = equal_v1(&packed, bp, max, n, &literals).unwrap();
            prop_assert_eq!(used, len);
            prop_assert_eq!(&maps, &expect);
        }

        /// A level above the max, in a repeated or a bit-packed run, anywhere: an error, as when
        /// decoding.
        #[test]
        fn level_above_max_is_an_error((max, mut levels) in arb_level_runs(), at in any::<usize>(),
                                       over in 1u32..4, repeat in 1usize..100) {
            let k = level_bit_width(max);
            let top = (1u32 << k) - 1;
            // Max levels of 2^k - 1 leave no k-bit level invalid (about a third of the cases).
            if top == max as u32 || levels.is_empty() {
                return Ok(());
            }
            let bad = (max as u32 + over).min(top) as u16;
            // Encode with a wider max so the encoder accepts the bad level at the same width.
            let wide = top as i16;
            let at = at % levels.len();
            for _ in 0..repeat { levels.insert(at, bad as i16); }
            let literals = literals_for(max, 0);
            let mut enc = LevelEncoder::v2_streaming(wide);
            enc.put_with_observer(&levels, |_, _| {});
            let v2 = enc.consume();
            prop_assert!(equal_v2(&v2, max, levels.len(), &literals).is_err());
            same_as_decode_v2(&v2, max, levels.len(), &literals);
            let mut enc = LevelEncoder::v1_streaming(wide);
            enc.put_with_observer(&levels, |_, _| {});
            let v1 = enc.consume();
            prop_assert!(equal_v1(&v1, Encoding::RLE, max, levels.len(), &literals).is_err());
            same_as_decode_v1(&v1, Encoding::RLE, max, levels.len(), &literals);
            #[allow(deprecated)]
            let bp = Encoding::BIT_PACKED;
            let packed = bit_pack_msb(&levels, k as usize);
            prop_assert!(equal_v1(&packed, bp, max, levels.len(), &literals).is_err());
        }

        /// Arbitrary bytes: the bitmap path accepts exactly what decoding accepts, and agrees.
        #[test]
        fn garbage_agrees_with_decoding(data in prop::collection::vec(any::<u8>(), 0..80),
                                        n in 0usize..700, max in 0i16..20, pick in any::<u32>()) {
            let literals = literals_for(max, pick);
            same_as_decode_v1(&data, Encoding::RLE, max, n, &literals);
            #[allow(deprecated)]
            same_as_decode_v1(&data, Encoding::BIT_PACKED, max, n, &literals);
            same_as_decode_v1(&data, Encoding::PLAIN, max, n, &literals);
            same_as_decode_v2(&data, max, n, &literals);
            // A length prefix that fits, so the body is garbage rather than the prefix.
            let mut prefixed = (data.len() as u32).to_le_bytes().to_vec();
            prefixed.extend(&data);
            same_as_decode_v1(&prefixed, Encoding::RLE, max, n, &literals);
        }
    }

    #[test]
    fn figure_9_valid_bitmap() {
        // First 16 2-bit def levels of the running example, max level 2: b_valid's low 16 bits
        // are 0001100101110011 (most significant first).
        let expect = "0001100101110011";
        let levels: Vec<i16> = expect
            .chars()
            .rev()
            .enumerate()
            .map(|(i, c)| if c == '1' { 2 } else { (i % 2) as i16 })
            .collect();
        let mut enc = LevelEncoder::v2_streaming(2);
        enc.put_with_observer(&levels, |_, _| {});
        let valid = validity_v2(&enc.consume(), 2, 16).unwrap();
        assert_eq!(valid.words()[0], u64::from_str_radix(expect, 2).unwrap());
        // Max level 0: no levels stored, all valid, all record starts, nothing consumed.
        assert_eq!(
            validity_v1(&[], Encoding::RLE, 0, 70).unwrap(),
            (Bitmap::new_set(70), 0)
        );
        assert_eq!(record_starts_v2(&[], 0, 70).unwrap(), Bitmap::new_set(70));
        assert!(validity_v2(&[], -1, 1).is_err());
    }

    #[test]
    fn bit_widths() {
        assert_eq!(level_bit_width(0), 0);
        assert_eq!(level_bit_width(1), 1);
        assert_eq!(level_bit_width(2), 2);
        assert_eq!(level_bit_width(3), 2);
        assert_eq!(level_bit_width(4), 3);
        assert_eq!(level_bit_width(i16::MAX), 15);
    }

    #[test]
    fn bad_input() {
        let mut out = Vec::new();
        // Max level 0: nothing read, nothing pushed.
        assert_eq!(decode_v1(&[], Encoding::RLE, 0, 100, &mut out).unwrap(), 0);
        decode_v2(&[], 0, 100, &mut out).unwrap();
        assert!(out.is_empty());
        // Level 3 with max level 2 (bw 2, repeated run of 3).
        let e = decode_v2(&[2, 3], 2, 1, &mut out).unwrap_err();
        assert!(e.message.contains("level 3"), "{}", e.message);
        assert!(decode_v1(&[2, 0, 0, 0, 2, 3], Encoding::RLE, 2, 1, &mut out).is_err());
        // BIT_PACKED level above max: bw 2, value 3 in the top bits.
        #[allow(deprecated)]
        let bp = Encoding::BIT_PACKED;
        assert!(decode_v1(&[0b1100_0000], bp, 2, 1, &mut out).is_err());
        assert!(decode_v1(&[0], bp, 2, 5, &mut out).is_err());
        assert!(decode_v1(&[0], bp, 2, usize::MAX, &mut out).is_err());
        // Length prefix missing, too large; data too short for the count.
        assert!(decode_v1(&[1, 0], Encoding::RLE, 1, 1, &mut out).is_err());
        assert!(decode_v1(&[9, 0, 0, 0, 2, 1], Encoding::RLE, 1, 1, &mut out).is_err());
        assert!(decode_v1(
            &[0xff, 0xff, 0xff, 0xff, 2, 1],
            Encoding::RLE,
            1,
            1,
            &mut out
        )
        .is_err());
        assert!(decode_v1(&[2, 0, 0, 0, 2, 1], Encoding::RLE, 1, 2, &mut out).is_err());
        assert!(decode_v1(&[2, 0, 0, 0, 2, 1], Encoding::PLAIN, 1, 1, &mut out).is_err());
        assert!(decode_v2(&[2, 1], -1, 1, &mut out).is_err());
        assert!(out.is_empty());
        assert_eq!(
            validity(&[0, 2, 1, 2], 2),
            Bitmap::from_bools(&[false, true, false, true])
        );
    }
}
