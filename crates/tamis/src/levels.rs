//! Definition and repetition levels of data pages.
//!
//! Data page v1 stores levels either as a length-prefixed RLE/bit-packed hybrid or (deprecated)
//! MSB-first BIT_PACKED; data page v2 stores the hybrid without a prefix, its length being in the
//! page header. A column whose max level is 0 stores no levels at all.

use crate::encoding::rle::decode_rle;
use crate::error::{Error, Result};
use crate::selection::Bitmap;
use parquet::basic::Encoding;

/// Bits needed to store levels up to `max_level` (0 for 0).
pub fn level_bit_width(max_level: i16) -> u8 {
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

/// Decodes `num_values` levels of a v1 data page, appending them to `out`; returns the bytes
/// consumed, where the values (or the next levels) start.
pub fn decode_v1(
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
    #[allow(deprecated)]
    let bit_packed = encoding == Encoding::BIT_PACKED;
    if encoding == Encoding::RLE {
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
        let mut raw = Vec::new();
        decode_rle(body, bit_width, num_values, &mut raw)?;
        push_levels(&raw, max_level, out)?;
        Ok(4 + len)
    } else if bit_packed {
        let bw = bit_width as usize;
        let bytes = num_values
            .checked_mul(bw)
            .map(|bits| bits.div_ceil(8))
            .filter(|&b| b <= data.len())
            .ok_or_else(|| {
                Error::corrupt(format!(
                    "BIT_PACKED levels: {num_values} values of {bw} bits need more than the {} bytes of the page",
                    data.len()
                ))
            })?;
        // MSB first: bit j of the stream is bit 7 - j % 8 of byte j / 8, values most significant
        // bit first.
        let raw: Vec<u32> = (0..num_values)
            .map(|i| {
                (0..bw).fold(0u32, |acc, b| {
                    let bit = i * bw + b;
                    (acc << 1) | ((data[bit / 8] >> (7 - bit % 8)) & 1) as u32
                })
            })
            .collect();
        push_levels(&raw, max_level, out)?;
        Ok(bytes)
    } else {
        Err(Error::unsupported(format!(
            "encoding {encoding} for levels"
        )))
    }
}

/// Decodes `num_values` levels of a v2 data page (`data` is exactly the level section), appending
/// them to `out`. Max level 0 pushes nothing, as in [`decode_v1`].
pub fn decode_v2(data: &[u8], max_level: i16, num_values: usize, out: &mut Vec<i16>) -> Result<()> {
    check_max(max_level)?;
    if max_level == 0 {
        return Ok(());
    }
    let mut raw = Vec::new();
    decode_rle(data, level_bit_width(max_level), num_values, &mut raw)?;
    push_levels(&raw, max_level, out)
}

/// Bit `i` is set where `def_levels[i] == max_def`, i.e. where the value is present.
pub fn validity(def_levels: &[i16], max_def: i16) -> Bitmap {
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
