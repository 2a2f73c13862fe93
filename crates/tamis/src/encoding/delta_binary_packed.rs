//! DELTA_BINARY_PACKED: integers as a first value plus bit-packed deltas.
//!
//! Layout: a header (`block_size`, `miniblocks_per_block`, `total_value_count` as ULEB128 and the
//! first value as zigzag ULEB128), then blocks of `block_size` deltas: a zigzag `min_delta`, one
//! bit-width byte per miniblock and the miniblocks, each holding `block_size /
//! miniblocks_per_block` values of `delta - min_delta`. Arithmetic wraps, as the spec requires:
//! INT32 columns decode in 64 bits and truncate, which is the same modulo 2^32.

use super::bitpack;
use super::rle::read_uleb128;
use crate::error::{Error, Result};
use crate::values::Values;
use parquet::basic::Type as PhysicalType;

/// Decodes `num_values` INT32 or INT64 values; the header may announce more values, of which the
/// first `num_values` are returned.
pub fn decode(physical: PhysicalType, data: &[u8], num_values: usize) -> Result<Values> {
    let (values, _) = decode_i64(data, num_values, false)?;
    match physical {
        PhysicalType::INT32 => Ok(Values::I32(values.into_iter().map(|v| v as i32).collect())),
        PhysicalType::INT64 => Ok(Values::I64(values)),
        other => Err(Error::unsupported(format!(
            "encoding DELTA_BINARY_PACKED for physical type {other}"
        ))),
    }
}

/// Reads a zigzag-encoded ULEB128 integer.
fn read_zigzag(data: &[u8], pos: &mut usize) -> Result<i64> {
    let u = read_uleb128(data, pos)?;
    Ok((u >> 1) as i64 ^ -((u & 1) as i64))
}

fn header_usize(data: &[u8], pos: &mut usize, what: &str) -> Result<usize> {
    let v = read_uleb128(data, pos)?;
    usize::try_from(v)
        .map_err(|_| Error::corrupt(format!("DELTA_BINARY_PACKED {what} {v} is too large")))
}

/// Decodes the first `num_values` values, returning them and the bytes read.
///
/// With `exact`, the header must announce exactly `num_values` values, so the returned position
/// is the end of the encoded stream (what DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY need to
/// find the data that follows).
pub(crate) fn decode_i64(data: &[u8], num_values: usize, exact: bool) -> Result<(Vec<i64>, usize)> {
    let mut pos = 0usize;
    if num_values == 0 && data.is_empty() {
        return Ok((Vec::new(), 0));
    }
    let block_size = header_usize(data, &mut pos, "block size")?;
    let miniblocks = header_usize(data, &mut pos, "miniblock count")?;
    let total = header_usize(data, &mut pos, "value count")?;
    let first = read_zigzag(data, &mut pos)?;
    if block_size == 0 || block_size % 128 != 0 {
        return Err(Error::corrupt(format!(
            "DELTA_BINARY_PACKED block size {block_size} is not a positive multiple of 128"
        )));
    }
    if miniblocks == 0 || block_size % miniblocks != 0 || (block_size / miniblocks) % 32 != 0 {
        return Err(Error::corrupt(format!(
            "DELTA_BINARY_PACKED block of {block_size} values cannot hold {miniblocks} miniblocks of a multiple of 32 values"
        )));
    }
    if total < num_values || (exact && total != num_values) {
        return Err(Error::corrupt(format!(
            "DELTA_BINARY_PACKED header holds {total} values, page needs {num_values}"
        )));
    }
    let per_miniblock = block_size / miniblocks;
    // Bit width 0 miniblocks take no bytes, so cap the up-front capacity by what a byte can hold.
    let mut out = Vec::with_capacity(num_values.min(data.len().saturating_mul(8) + 1));
    if num_values == 0 {
        return Ok((out, pos));
    }
    out.push(first);
    let mut last = first;
    let mut deltas: Vec<u32> = Vec::new();
    while out.len() < num_values {
        let min_delta = read_zigzag(data, &mut pos)?;
        let widths = data
            .get(pos..)
            .and_then(|d| d.get(..miniblocks))
            .ok_or_else(|| {
                Error::corrupt(format!(
                    "DELTA_BINARY_PACKED block needs {miniblocks} bit widths, {} bytes left",
                    data.len() - pos.min(data.len())
                ))
            })?;
        pos += miniblocks;
        for &width in widths {
            if out.len() >= num_values {
                // Widths of unused miniblocks are arbitrary and their bodies absent.
                break;
            }
            if width > 64 {
                return Err(Error::corrupt(format!(
                    "DELTA_BINARY_PACKED miniblock bit width {width} is above 64"
                )));
            }
            // per_miniblock is a multiple of 32, so the body is whole bytes.
            let body_len = (per_miniblock / 8)
                .checked_mul(width as usize)
                .ok_or_else(|| {
                    Error::corrupt(format!(
                        "DELTA_BINARY_PACKED miniblock of {per_miniblock} values overflows"
                    ))
                })?;
            let body = data
                .get(pos..)
                .and_then(|d| d.get(..body_len))
                .ok_or_else(|| {
                    Error::corrupt(format!(
                        "DELTA_BINARY_PACKED miniblock needs {body_len} bytes, {} left",
                        data.len() - pos.min(data.len())
                    ))
                })?;
            pos += body_len;
            let n = per_miniblock.min(num_values - out.len());
            if width <= 32 {
                deltas.clear();
                bitpack::unpack(body, width, n, &mut deltas)?;
                for &d in &deltas {
                    last = last.wrapping_add(min_delta).wrapping_add(d as i64);
                    out.push(last);
                }
            } else {
                for i in 0..n {
                    let d = read_wide(body, i * width as usize, width as usize);
                    last = last.wrapping_add(min_delta).wrapping_add(d as i64);
                    out.push(last);
                }
            }
        }
    }
    Ok((out, pos))
}

/// Reads `width` (33..=64) bits at bit offset `bit`; bytes past the end read as zero.
fn read_wide(body: &[u8], bit: usize, width: usize) -> u64 {
    let start = bit / 8;
    let mut acc = 0u128;
    for k in 0..9 {
        if let Some(&b) = body.get(start + k) {
            acc |= (b as u128) << (8 * k);
        }
    }
    let v = (acc >> (bit % 8)) as u64;
    if width == 64 {
        v
    } else {
        v & ((1u64 << width) - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::test_util::{arb_i64s, encode_values};
    use parquet::basic::Encoding;
    use parquet::util::bit_util::BitWriter;
    use proptest::prelude::*;

    fn encode_i64(values: &[i64]) -> Vec<u8> {
        encode_values(
            Encoding::DELTA_BINARY_PACKED,
            PhysicalType::INT64,
            0,
            &Values::I64(values.to_vec()),
        )
    }

    proptest! {
        #[test]
        fn roundtrip_i64(values in arb_i64s()) {
            let data = encode_i64(&values);
            let (got, used) = decode_i64(&data, values.len(), true).unwrap();
            prop_assert_eq!(&got, &values);
            prop_assert_eq!(used, data.len());
            // A prefix of the values decodes from the same stream.
            let half = values.len() / 2;
            prop_assert_eq!(decode(PhysicalType::INT64, &data, half).unwrap(), Values::I64(values[..half].to_vec()));
        }

        #[test]
        fn roundtrip_i32(values in prop::collection::vec(any::<i32>(), 0..400)) {
            let data = encode_values(Encoding::DELTA_BINARY_PACKED, PhysicalType::INT32, 0, &Values::I32(values.clone()));
            prop_assert_eq!(decode(PhysicalType::INT32, &data, values.len()).unwrap(), Values::I32(values));
        }

        #[test]
        fn garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..80), n in 0usize..2000) {
            let _ = decode_i64(&data, n, false);
            let _ = decode_i64(&data, n, true);
        }
    }

    /// A stream written by hand: 32-bit-style wrapping deltas and a 64-bit-wide miniblock.
    #[test]
    fn hand_built_wide_miniblock() {
        let mut w = BitWriter::new(1024);
        w.put_vlq_int(128);
        w.put_vlq_int(1);
        w.put_vlq_int(3);
        w.put_zigzag_vlq_int(i64::MAX);
        w.put_zigzag_vlq_int(0); // min delta
        w.put_aligned(64u8, 1);
        w.put_value(1, 64); // i64::MAX + 1 wraps to i64::MIN
        w.put_value(u64::MAX, 64); // + (2^64 - 1) == -1
        for _ in 2..128 {
            w.put_value(0, 64);
        }
        let data = w.consume();
        let (got, used) = decode_i64(&data, 3, true).unwrap();
        assert_eq!(got, vec![i64::MAX, i64::MIN, i64::MAX]);
        assert_eq!(used, data.len());
    }

    #[test]
    fn bad_headers() {
        // Header only, first value, no blocks: one value is fine, two is not.
        let data = [0x80, 1, 4, 1, 1];
        assert_eq!(decode_i64(&data, 1, false).unwrap().0, vec![-1]);
        assert!(decode_i64(&data, 2, false).is_err());
        // Block size not a multiple of 128, zero miniblocks, miniblock of 16 values.
        assert!(decode_i64(&[100, 1, 1, 0], 1, false).is_err());
        assert!(decode_i64(&[0x80, 1, 0, 1, 0], 1, false).is_err());
        assert!(decode_i64(&[0x80, 1, 8, 1, 0], 1, false).is_err());
        // Header count too small or (exact) different.
        assert!(decode_i64(&[0x80, 1, 4, 1, 0], 2, false).is_err());
        assert!(decode_i64(&[0x80, 1, 4, 2, 0], 1, true).is_err());
        // Miniblock width above 64 and truncated miniblock.
        assert!(decode_i64(&[0x80, 1, 1, 2, 0, 0, 65], 2, false).is_err());
        assert!(decode_i64(&[0x80, 1, 1, 2, 0, 0, 8, 1, 2], 2, false).is_err());
        // Missing bit widths.
        assert!(decode_i64(&[0x80, 1, 4, 2, 0, 0, 8], 2, false).is_err());
        // Huge counts and block sizes with tiny data.
        let huge = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01];
        let mut data = huge.to_vec();
        data.extend([1, 0xff, 0xff, 0xff, 0x0f, 0]);
        assert!(decode_i64(&data, usize::MAX, false).is_err());
        assert!(decode_i64(&data, 0xffff_ffff, false).is_err());
        assert!(decode_i64(&[], 1, false).is_err());
        assert_eq!(decode_i64(&[], 0, true).unwrap(), (vec![], 0));
    }
}
