//! DELTA_BYTE_ARRAY (incremental encoding): each value is a prefix of the previous value plus a
//! suffix. Prefix lengths are DELTA_BINARY_PACKED, suffixes DELTA_LENGTH_BYTE_ARRAY.

use super::delta_binary_packed::decode_i64;
use super::delta_length_byte_array;
use crate::error::{Error, Result};
use crate::values::ByteArrays;

/// Decodes `num_values` values; with `type_length` (FIXED_LEN_BYTE_ARRAY) every value must have
/// exactly that length.
pub fn decode(data: &[u8], num_values: usize, type_length: Option<usize>) -> Result<ByteArrays> {
    let (prefixes, pos) = decode_i64(data, num_values, true)?;
    let rest = data.get(pos..).unwrap_or_default();
    let (suffixes, _) = delta_length_byte_array::decode_with_len(rest, num_values)?;
    let mut out = ByteArrays::with_capacity(num_values, suffixes.data.len());
    let mut prev_start = 0usize;
    for (i, (&prefix, suffix)) in prefixes.iter().zip(suffixes.iter()).enumerate() {
        let prev_len = out.data.len() - prev_start;
        let prefix = usize::try_from(prefix).ok().filter(|&p| p <= prev_len).ok_or_else(|| {
            Error::corrupt(format!(
                "DELTA_BYTE_ARRAY value {i} has prefix length {prefix} but the previous value has {prev_len} bytes"
            ))
        })?;
        let start = out.data.len();
        out.data.extend_from_within(prev_start..prev_start + prefix);
        out.data.extend_from_slice(suffix);
        if let Some(tl) = type_length {
            if out.data.len() - start != tl {
                return Err(Error::corrupt(format!(
                    "DELTA_BYTE_ARRAY value {i} has {} bytes in a FIXED_LEN_BYTE_ARRAY({tl}) column",
                    out.data.len() - start
                )));
            }
        }
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
            let got = decode(&data, values.len(), None).unwrap();
            prop_assert_eq!(got.iter().map(|v| v.to_vec()).collect::<Vec<_>>(), values.clone());
            let total: usize = values.iter().map(|v| v.len()).sum();
            if total > 0 {
                let _ = decode(&data[..data.len() - 1], values.len(), None);
            }
        }

        #[test]
        fn garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..80), n in 0usize..300) {
            let _ = decode(&data, n, None);
            let _ = decode(&data, n, Some(3));
        }
    }

    #[test]
    fn fixed_len_checks_length() {
        let values = vec![b"abc".to_vec(), b"abd".to_vec(), b"xyz".to_vec()];
        let data = encode(&values, PhysicalType::FIXED_LEN_BYTE_ARRAY, 3);
        let got = decode(&data, 3, Some(3)).unwrap();
        assert_eq!(got.iter().collect::<Vec<_>>(), vec![b"abc", b"abd", b"xyz"]);
        assert!(decode(&data, 3, Some(4)).is_err());
    }

    #[test]
    fn prefix_longer_than_previous() {
        // Prefixes [0, 5] (first 0, min delta 5, width 0), suffix lengths [1, 1], "ab".
        let mut data = vec![0x80, 1, 1, 2, 0, 10, 0];
        data.extend([0x80, 1, 1, 2, 2, 0, 0, b'a', b'b']);
        let e = decode(&data, 2, None).unwrap_err();
        assert!(e.message.contains("prefix length 5"), "{}", e.message);
        // Prefix 1 is fine: "a", "ab".
        let mut data = vec![0x80, 1, 1, 2, 0, 2, 0];
        data.extend([0x80, 1, 1, 2, 2, 0, 0, b'a', b'b']);
        let got = decode(&data, 2, None).unwrap();
        assert_eq!(got.iter().collect::<Vec<_>>(), vec![&b"a"[..], &b"ab"[..]]);
        // Negative prefix.
        let mut data = vec![0x80, 1, 1, 2, 1, 0, 0];
        data.extend([0x80, 1, 1, 2, 2, 0, 0, b'a', b'b']);
        assert!(decode(&data, 2, None).is_err());
    }
}
