//! LSB-first bit unpacking, the layout of the bit-packed runs of the RLE/bit-packed hybrid and of
//! DELTA_BINARY_PACKED miniblocks.
//!
//! Values are unpacked eight at a time: eight values of width `w` fill exactly `w` whole bytes, so
//! a group never straddles a byte boundary and its bit offsets are compile-time constants once the
//! width is a const generic.

use crate::error::{Error, Result};

/// Appends `count` values of `bit_width` bits (0..=32), packed LSB-first, from `data` to `out`.
///
/// Width 0 yields zeros and reads nothing. Errors if `data` holds fewer than
/// `ceil(count * bit_width / 8)` bytes or the width is above 32.
pub fn unpack(data: &[u8], bit_width: u8, count: usize, out: &mut Vec<u32>) -> Result<()> {
    if bit_width > 32 {
        return Err(Error::corrupt(format!("bit width {bit_width} is above 32")));
    }
    if count == 0 {
        return Ok(());
    }
    if bit_width == 0 {
        out.resize(out.len() + count, 0);
        return Ok(());
    }
    let needed = count
        .checked_mul(bit_width as usize)
        .map(|bits| bits.div_ceil(8))
        .ok_or_else(|| Error::corrupt(format!("{count} values of {bit_width} bits overflow")))?;
    if data.len() < needed {
        return Err(Error::corrupt(format!(
            "bit-packed data holds {} bytes for {count} values of {bit_width} bits (needs {needed})",
            data.len()
        )));
    }
    out.reserve(count);
    macro_rules! dispatch {
        ($($w:literal)*) => {
            match bit_width {
                $($w => unpack_width::<$w>(&data[..needed], count, out),)*
                _ => unreachable!("bit width checked above"),
            }
        };
    }
    dispatch!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32);
    Ok(())
}

/// Unpacks `count` values of width `W` from `data`, which holds exactly `ceil(count * W / 8)`
/// bytes.
fn unpack_width<const W: usize>(data: &[u8], count: usize, out: &mut Vec<u32>) {
    let full = count / 8;
    let mut chunks = data.chunks_exact(W);
    for chunk in chunks.by_ref().take(full) {
        out.extend_from_slice(&unpack8::<W>(chunk));
    }
    let rem = count % 8;
    if rem != 0 {
        // The tail is shorter than W bytes; unpack a zero-padded group and keep `rem` values.
        let tail = &data[full * W..];
        let mut group = [0u8; 32];
        group[..tail.len()].copy_from_slice(tail);
        out.extend_from_slice(&unpack8::<W>(&group[..W])[..rem]);
    }
}

/// Unpacks one group of eight values from exactly `W` bytes, reading 64-bit words.
#[inline(always)]
fn unpack8<const W: usize>(chunk: &[u8]) -> [u32; 8] {
    // Eight spare bytes let every value be read as one unaligned u64 without a bounds branch.
    let mut buf = [0u8; 40];
    buf[..W].copy_from_slice(&chunk[..W]);
    let mask: u64 = if W == 32 {
        u32::MAX as u64
    } else {
        (1u64 << W) - 1
    };
    let mut vals = [0u32; 8];
    for (j, v) in vals.iter_mut().enumerate() {
        let bit = j * W;
        let byte = bit / 8;
        let mut word = [0u8; 8];
        word.copy_from_slice(&buf[byte..byte + 8]);
        *v = ((u64::from_le_bytes(word) >> (bit % 8)) & mask) as u32;
    }
    vals
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::util::bit_util::BitWriter;
    use proptest::prelude::*;

    /// Bit-at-a-time reference implementation.
    fn reference(data: &[u8], bit_width: u8, count: usize) -> Vec<u32> {
        (0..count)
            .map(|i| {
                (0..bit_width as usize).fold(0u32, |acc, b| {
                    let bit = i * bit_width as usize + b;
                    acc | (((data[bit / 8] >> (bit % 8)) & 1) as u32) << b
                })
            })
            .collect()
    }

    fn pack(values: &[u32], bit_width: u8) -> Vec<u8> {
        let mut w = BitWriter::new(values.len() * 4 + 8);
        for &v in values {
            w.put_value(v as u64, bit_width as usize);
        }
        w.consume()
    }

    fn mask(bit_width: u8) -> u32 {
        if bit_width == 32 {
            u32::MAX
        } else {
            (1u32 << bit_width) - 1
        }
    }

    proptest! {
        #[test]
        fn matches_reference_and_oracle(
            bit_width in 0u8..=32,
            raw in prop::collection::vec(any::<u32>(), 0..300),
            prefix in 0usize..3,
        ) {
            let values: Vec<u32> = raw.iter().map(|v| v & mask(bit_width)).collect();
            let packed = pack(&values, bit_width);
            let mut out = vec![7u32; prefix];
            unpack(&packed, bit_width, values.len(), &mut out).unwrap();
            prop_assert_eq!(&out[..prefix], &vec![7u32; prefix][..]);
            prop_assert_eq!(&out[prefix..], &values[..]);
            prop_assert_eq!(reference(&packed, bit_width, values.len()), values.clone());
            // Any prefix count decodes the prefix of the values.
            let n = values.len() / 2 + 1;
            if n <= values.len() {
                let mut part = Vec::new();
                unpack(&packed, bit_width, n, &mut part).unwrap();
                prop_assert_eq!(&part[..], &values[..n]);
            }
        }

        #[test]
        fn random_bytes_match_reference(
            bit_width in 0u8..=32,
            data in prop::collection::vec(any::<u8>(), 0..200),
        ) {
            let count = if bit_width == 0 { 13 } else { data.len() * 8 / bit_width as usize };
            let mut out = Vec::new();
            unpack(&data, bit_width, count, &mut out).unwrap();
            prop_assert_eq!(out, reference(&data, bit_width, count));
            if bit_width > 0 {
                let mut out = Vec::new();
                prop_assert!(unpack(&data, bit_width, count + 8, &mut out).is_err());
            }
        }
    }

    #[test]
    fn edge_cases() {
        let mut out = Vec::new();
        unpack(&[], 5, 0, &mut out).unwrap();
        unpack(&[], 0, 3, &mut out).unwrap();
        assert_eq!(out, vec![0, 0, 0]);
        assert!(unpack(&[], 1, 1, &mut out).is_err());
        assert!(unpack(&[0; 64], 33, 1, &mut out).is_err());
        assert!(unpack(&[0; 4], 32, usize::MAX, &mut out).is_err());
        assert!(unpack(&[0; 4], 1, usize::MAX / 2, &mut out).is_err());
        let mut out = Vec::new();
        unpack(&[0xff; 4], 32, 1, &mut out).unwrap();
        assert_eq!(out, vec![u32::MAX]);
    }
}
