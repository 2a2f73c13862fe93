//! DELTA_LENGTH_BYTE_ARRAY: all lengths first (DELTA_BINARY_PACKED), then all bytes concatenated.

use super::delta_binary_packed::decode_i64;
use crate::error::{Error, Result};
use crate::values::ByteArrays;

/// Decodes `num_values` byte arrays.
pub fn decode(data: &[u8], num_values: usize) -> Result<ByteArrays> {
    decode_with_len(data, num_values).map(|(v, _)| v)
}

/// Decodes `num_values` byte arrays, returning them and the bytes read.
pub(crate) fn decode_with_len(data: &[u8], num_values: usize) -> Result<(ByteArrays, usize)> {
    let (lengths, pos) = decode_i64(data, num_values, true)?;
    let body = data.get(pos..).unwrap_or_default();
    let mut total = 0usize;
    for (i, &len) in lengths.iter().enumerate() {
        let len = usize::try_from(len).map_err(|_| {
            Error::corrupt(format!(
                "DELTA_LENGTH_BYTE_ARRAY value {i} has negative length {len}"
            ))
        })?;
        total = total
            .checked_add(len)
            .filter(|&t| t <= body.len())
            .ok_or_else(|| {
                Error::corrupt(format!(
                    "DELTA_LENGTH_BYTE_ARRAY lengths exceed the {} bytes of data after value {i}",
                    body.len()
                ))
            })?;
    }
    // Lengths are validated against the data, so the sizes below are bounded by it.
    let mut out = ByteArrays::with_capacity(num_values, total);
    out.data.extend_from_slice(&body[..total]);
    let mut end = 0usize;
    for &len in &lengths {
        end += len as usize;
        out.offsets.push(end);
    }
    Ok((out, pos + total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::test_util::{arb_strings, encode_values};
    use crate::values::Values;
    use parquet::basic::{Encoding, Type as PhysicalType};
    use proptest::prelude::*;

    fn encode(v: &[Vec<u8>]) -> Vec<u8> {
        let mut b = ByteArrays::new();
        v.iter().for_each(|x| b.push(x));
        encode_values(
            Encoding::DELTA_LENGTH_BYTE_ARRAY,
            PhysicalType::BYTE_ARRAY,
            0,
            &Values::Bytes(b),
        )
    }

    proptest! {
        #[test]
        fn roundtrip(values in arb_strings()) {
            let data = encode(&values);
            let (got, used) = decode_with_len(&data, values.len()).unwrap();
            prop_assert_eq!(got.iter().map(|v| v.to_vec()).collect::<Vec<_>>(), values.clone());
            prop_assert_eq!(used, data.len());
            let total: usize = values.iter().map(|v| v.len()).sum();
            if total > 0 {
                prop_assert!(decode(&data[..data.len() - 1], values.len()).is_err());
            }
        }
    }

    #[test]
    fn bad_lengths() {
        // Two lengths, -1 then 0: block 128/1 mb, total 2, first zigzag(-1)=1, min delta 1, width 0.
        assert!(decode(&[0x80, 1, 1, 2, 1, 2, 0], 2).is_err());
        // Lengths 5 and 5 with only 3 bytes of data.
        assert!(decode(&[0x80, 1, 1, 2, 10, 0, 0, b'a', b'b', b'c'], 2).is_err());
        let ok = decode(&[0x80, 1, 1, 2, 4, 0, 0, b'a', b'b', b'c', b'd'], 2).unwrap();
        assert_eq!(ok.iter().collect::<Vec<_>>(), vec![b"ab", b"cd"]);
        assert_eq!(decode(&[], 0).unwrap().len(), 0);
    }
}
