//! BYTE_STREAM_SPLIT: byte `k` of every value is stored in stream `k`; streams are `num_values`
//! bytes long and laid out one after another. Decoding transposes back to PLAIN layout.

use super::plain;
use crate::error::{Error, Result};
use crate::values::Values;
use parquet::basic::Type as PhysicalType;

/// Decodes `num_values` FLOAT, DOUBLE, INT32, INT64 or FIXED_LEN_BYTE_ARRAY values.
pub fn decode(
    physical: PhysicalType,
    type_length: usize,
    data: &[u8],
    num_values: usize,
) -> Result<Values> {
    let width = match physical {
        PhysicalType::FLOAT | PhysicalType::INT32 => 4,
        PhysicalType::DOUBLE | PhysicalType::INT64 => 8,
        PhysicalType::FIXED_LEN_BYTE_ARRAY if type_length > 0 => type_length,
        PhysicalType::FIXED_LEN_BYTE_ARRAY => {
            return Err(Error::corrupt(
                "BYTE_STREAM_SPLIT FIXED_LEN_BYTE_ARRAY column has type_length 0",
            ))
        }
        other => {
            return Err(Error::unsupported(format!(
                "encoding BYTE_STREAM_SPLIT for physical type {other}"
            )))
        }
    };
    let total = num_values.checked_mul(width).filter(|&t| t <= data.len()).ok_or_else(|| {
        Error::corrupt(format!(
            "BYTE_STREAM_SPLIT {physical} page holds {} bytes for {num_values} values of {width} bytes",
            data.len()
        ))
    })?;
    let mut plain_bytes = vec![0u8; total];
    for (k, stream) in data[..total].chunks_exact(num_values.max(1)).enumerate() {
        for (i, &b) in stream.iter().enumerate() {
            plain_bytes[i * width + k] = b;
        }
    }
    plain::decode(physical, type_length, &plain_bytes, num_values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::test_util::{arb_of, encode_values};
    use parquet::basic::Encoding;
    use proptest::prelude::*;

    fn arb() -> impl Strategy<Value = (PhysicalType, usize, Values)> {
        use PhysicalType as T;
        (
            prop::sample::select(vec![
                T::FLOAT,
                T::DOUBLE,
                T::INT32,
                T::INT64,
                T::FIXED_LEN_BYTE_ARRAY,
            ]),
            1usize..17,
        )
            .prop_flat_map(|(p, tl)| arb_of(p, tl).prop_map(move |v| (p, tl, v)))
    }

    proptest! {
        #[test]
        fn roundtrip((physical, tl, values) in arb()) {
            let data = encode_values(Encoding::BYTE_STREAM_SPLIT, physical, tl, &values);
            prop_assert_eq!(decode(physical, tl, &data, values.len()).unwrap(), values.clone());
            if !data.is_empty() {
                prop_assert!(decode(physical, tl, &data[..data.len() - 1], values.len()).is_err());
            }
        }
    }

    #[test]
    fn bad_input() {
        assert!(decode(PhysicalType::FIXED_LEN_BYTE_ARRAY, 0, &[1, 2], 1).is_err());
        assert!(decode(PhysicalType::FIXED_LEN_BYTE_ARRAY, usize::MAX, &[1, 2], 2).is_err());
        assert!(decode(PhysicalType::INT32, 0, &[1, 2, 3], 1).is_err());
        assert!(decode(PhysicalType::INT64, 0, &[1; 16], usize::MAX).is_err());
        assert!(decode(PhysicalType::BOOLEAN, 0, &[1], 1).is_err());
        assert_eq!(
            decode(PhysicalType::INT32, 0, &[], 0).unwrap(),
            Values::I32(vec![])
        );
        assert_eq!(
            decode(PhysicalType::INT32, 0, &[1, 2, 0, 0, 0, 0, 0, 0], 2).unwrap(),
            Values::I32(vec![1, 2])
        );
    }
}
