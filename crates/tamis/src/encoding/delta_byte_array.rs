//! DELTA_BYTE_ARRAY (incremental encoding): each value is a prefix of the previous value plus a
//! suffix. Prefix lengths are DELTA_BINARY_PACKED, suffixes DELTA_LENGTH_BYTE_ARRAY.

use super::delta_binary_packed::decode_i64;
use super::delta_length_byte_array;
use crate::budget::Budget;
use crate::error::{Error, Result};
use crate::values::ByteArrays;

/// Decodes `num_values` values; with `type_length` (FIXED_LEN_BYTE_ARRAY) every value must have
/// exactly that length.
///
/// A prefix repeats bytes of the previous value without storing them, so a few bytes of prefix
/// lengths can announce far more output than the page holds (a 1 MiB value copied by a million
/// following values is 1 TiB). The lengths are checked and summed first; the total is reserved in
/// `budget` before any value is built.
pub fn decode(
    data: &[u8],
    num_values: usize,
    type_length: Option<usize>,
    budget: &Budget,
) -> Result<ByteArrays> {
    let (prefixes, pos) = decode_i64(data, num_values, true)?;
    let rest = data.get(pos..).unwrap_or_default();
    let (suffixes, _) = delta_length_byte_array::decode_with_len(rest, num_values)?;
    // Pass one: every value's length from the lengths alone, checked, and their sum.
    let mut total = 0usize;
    let mut prev_len = 0usize;
    for (i, (&prefix, suffix)) in prefixes.iter().zip(suffixes.iter()).enumerate() {
        let prefix = usize::try_from(prefix).ok().filter(|&p| p <= prev_len).ok_or_else(|| {
            Error::corrupt(format!(
                "DELTA_BYTE_ARRAY value {i} has prefix length {prefix} but the previous value has {prev_len} bytes"
            ))
        })?;
        let len = prefix + suffix.len();
        if let Some(tl) = type_length {
            if len != tl {
                return Err(Error::corrupt(format!(
                    "DELTA_BYTE_ARRAY value {i} has {len} bytes in a FIXED_LEN_BYTE_ARRAY({tl}) column"
                )));
            }
        }
        total = total.saturating_add(len);
        prev_len = len;
    }
    budget.reserve(total, || {
        format!(
            "DELTA_BYTE_ARRAY page of {} bytes expanding to {num_values} values",
            data.len()
        )
    })?;
    // Pass two: the values, into buffers of exactly the reserved size.
    let mut out = ByteArrays::with_capacity(num_values, total);
    let mut prev_start = 0usize;
    for (&prefix, suffix) in prefixes.iter().zip(suffixes.iter()) {
        let start = out.data.len();
        out.data
            .extend_from_within(prev_start..prev_start + prefix as usize);
        out.data.extend_from_slice(suffix);
        out.offsets.push(out.data.len());
        prev_start = start;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::test_util::{arb_strings, encode_values};
    use crate::values::Values;
    use parquet::basic::{Encoding, Type as PhysicalType};
    use proptest::prelude::*;

    fn encode(v: &[Vec<u8>], physical: PhysicalType, tl: usize) -> Vec<u8> {
        let mut b = ByteArrays::new();
        v.iter().for_each(|x| b.push(x));
        encode_values(Encoding::DELTA_BYTE_ARRAY, physical, tl, &Values::Bytes(b))
    }

    proptest! {
        #[test]
        fn roundtrip(mut values in arb_strings()) {
            values.sort();
            let data = encode(&values, PhysicalType::BYTE_ARRAY, 0);
            let got = decode(&data, values.len(), None, &Budget::default()).unwrap();
            prop_assert_eq!(got.iter().map(|v| v.to_vec()).collect::<Vec<_>>(), values.clone());
            let total: usize = values.iter().map(|v| v.len()).sum();
            if total > 0 {
                let _ = decode(&data[..data.len() - 1], values.len(), None, &Budget::default());
            }
        }

        #[test]
        fn garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..80), n in 0usize..300) {
            let _ = decode(&data, n, None, &Budget::default());
            let _ = decode(&data, n, Some(3), &Budget::default());
        }
    }

    #[test]
    fn fixed_len_checks_length() {
        let values = vec![b"abc".to_vec(), b"abd".to_vec(), b"xyz".to_vec()];
        let data = encode(&values, PhysicalType::FIXED_LEN_BYTE_ARRAY, 3);
        let got = decode(&data, 3, Some(3), &Budget::default()).unwrap();
        assert_eq!(got.iter().collect::<Vec<_>>(), vec![b"abc", b"abd", b"xyz"]);
        assert!(decode(&data, 3, Some(4), &Budget::default()).is_err());
    }

    #[test]
    fn prefix_longer_than_previous() {
        // Prefixes [0, 5] (first 0, min delta 5, width 0), suffix lengths [1, 1], "ab".
        let mut data = vec![0x80, 1, 1, 2, 0, 10, 0];
        data.extend([0x80, 1, 1, 2, 2, 0, 0, b'a', b'b']);
        let e = decode(&data, 2, None, &Budget::default()).unwrap_err();
        assert!(e.message.contains("prefix length 5"), "{}", e.message);
        // Prefix 1 is fine: "a", "ab".
        let mut data = vec![0x80, 1, 1, 2, 0, 2, 0];
        data.extend([0x80, 1, 1, 2, 2, 0, 0, b'a', b'b']);
        let got = decode(&data, 2, None, &Budget::default()).unwrap();
        assert_eq!(got.iter().collect::<Vec<_>>(), vec![&b"a"[..], &b"ab"[..]]);
        // Negative prefix.
        let mut data = vec![0x80, 1, 1, 2, 1, 0, 0];
        data.extend([0x80, 1, 1, 2, 2, 0, 0, b'a', b'b']);
        assert!(decode(&data, 2, None, &Budget::default()).is_err());
    }

    /// Prefixes copy bytes the page does not hold: one 1 MiB value repeated by a million
    /// prefixes announces 1 TiB. The total is reserved before anything is built, so the page is
    /// a resource-limit error at once (before the fix: a 1 TiB copy loop).
    #[test]
    fn prefix_copies_are_budgeted() {
        use parquet::util::bit_util::BitWriter;
        let n = 1_000_000usize;
        let big = 1usize << 20;
        // `n` values: `first`, `first + d1`, then the same (deltas d1, 0, 0, …): a first block
        // of 21-bit deltas, then blocks of width 0.
        let lengths = |w: &mut BitWriter, first: i64, d1: i64| {
            w.put_vlq_int(128);
            w.put_vlq_int(1);
            w.put_vlq_int(n as u64);
            w.put_zigzag_vlq_int(first);
            let min = d1.min(0);
            w.put_zigzag_vlq_int(min);
            w.put_aligned(21u8, 1);
            w.put_value((d1 - min) as u64, 21);
            for _ in 1..128 {
                w.put_value((-min) as u64, 21);
            }
            for _ in 0..(n - 1).div_ceil(128) - 1 {
                w.put_zigzag_vlq_int(0);
                w.put_aligned(0u8, 1);
            }
        };
        let mut w = BitWriter::new(1 << 16);
        // Prefix lengths 0, 2^20, 2^20, …; suffix lengths 2^20, 0, 0, …
        lengths(&mut w, 0, big as i64);
        lengths(&mut w, big as i64, -(big as i64));
        let mut data = w.consume();
        data.extend(std::iter::repeat_n(b'x', big));
        let budget = Budget::new(1 << 30);
        let e = decode(&data, n, None, &budget).unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::ResourceLimit, "{e}");
        assert!(
            e.message.contains(&format!("needs {} bytes", big * n)),
            "{}",
            e.message
        );
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn small_budget_refuses_and_large_budget_decodes() {
        let values = vec![b"abcdef".to_vec(), b"abcdxy".to_vec(), b"abcdxyz".to_vec()];
        let data = encode(&values, PhysicalType::BYTE_ARRAY, 0);
        let e = decode(&data, 3, None, &Budget::new(18)).unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::ResourceLimit);
        let budget = Budget::new(19);
        let got = decode(&data, 3, None, &budget).unwrap();
        assert_eq!(got.iter().map(|v| v.to_vec()).collect::<Vec<_>>(), values);
        assert_eq!(budget.used(), 19);
    }
}
