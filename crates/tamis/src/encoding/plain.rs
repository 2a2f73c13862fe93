//! PLAIN: values stored back to back in their natural little-endian width.
//!
//! BOOLEAN is bit-packed LSB first, BYTE_ARRAY is a 4-byte little-endian length before each value,
//! FIXED_LEN_BYTE_ARRAY is `type_length` bytes per value and INT96 is three 32-bit words.

use crate::error::{Error, Result};
use crate::selection::Bitmap;
use crate::values::{ByteArrays, Values};
use parquet::basic::Type as PhysicalType;

/// Decodes `num_values` PLAIN values of `physical` type from `data` (trailing bytes are ignored).
pub fn decode(
    physical: PhysicalType,
    type_length: usize,
    data: &[u8],
    num_values: usize,
) -> Result<Values> {
    Ok(match physical {
        PhysicalType::BOOLEAN => {
            let needed = num_values.div_ceil(8);
            if data.len() < needed {
                return Err(short("BOOLEAN", data.len(), num_values));
            }
            Values::Bool(
                (0..num_values)
                    .map(|i| (data[i / 8] >> (i % 8)) & 1 == 1)
                    .collect(),
            )
        }
        PhysicalType::INT32 => Values::I32(fixed::<4, _>(
            data,
            num_values,
            "INT32",
            i32::from_le_bytes,
        )?),
        PhysicalType::INT64 => Values::I64(fixed::<8, _>(
            data,
            num_values,
            "INT64",
            i64::from_le_bytes,
        )?),
        PhysicalType::FLOAT => Values::F32(fixed::<4, _>(
            data,
            num_values,
            "FLOAT",
            f32::from_le_bytes,
        )?),
        PhysicalType::DOUBLE => Values::F64(fixed::<8, _>(
            data,
            num_values,
            "DOUBLE",
            f64::from_le_bytes,
        )?),
        PhysicalType::INT96 => Values::I96(fixed::<12, _>(data, num_values, "INT96", |b| {
            let w = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
            [w(0), w(4), w(8)]
        })?),
        PhysicalType::BYTE_ARRAY => Values::Bytes(byte_arrays(data, num_values)?.0),
        PhysicalType::FIXED_LEN_BYTE_ARRAY => {
            Values::Bytes(fixed_len(data, type_length, num_values, "PLAIN")?)
        }
    })
}

/// Decodes only the values whose bit is set in `selected` (one bit per value of the page,
/// `num_values` bits), straight from the page bytes: selection pushdown on PLAIN pages, where
/// "select" is a gather. The page is validated exactly as [`decode`] validates it.
pub fn decode_selected(
    physical: PhysicalType,
    type_length: usize,
    data: &[u8],
    num_values: usize,
    selected: &Bitmap,
) -> Result<Values> {
    if selected.len() != num_values {
        return Err(Error::internal(format!(
            "selection of {} bits for a page of {num_values} values",
            selected.len()
        )));
    }
    let picked = selected.count_ones();
    Ok(match physical {
        PhysicalType::BOOLEAN => {
            if data.len() < num_values.div_ceil(8) {
                return Err(short("BOOLEAN", data.len(), num_values));
            }
            let mut out = Vec::with_capacity(picked);
            out.extend(
                selected
                    .iter_ones()
                    .map(|i| (data[i / 8] >> (i % 8)) & 1 == 1),
            );
            Values::Bool(out)
        }
        PhysicalType::INT32 => {
            Values::I32(gather::<4, _>(data, selected, "INT32", i32::from_le_bytes)?)
        }
        PhysicalType::INT64 => {
            Values::I64(gather::<8, _>(data, selected, "INT64", i64::from_le_bytes)?)
        }
        PhysicalType::FLOAT => {
            Values::F32(gather::<4, _>(data, selected, "FLOAT", f32::from_le_bytes)?)
        }
        PhysicalType::DOUBLE => Values::F64(gather::<8, _>(
            data,
            selected,
            "DOUBLE",
            f64::from_le_bytes,
        )?),
        PhysicalType::INT96 => Values::I96(gather::<12, _>(data, selected, "INT96", |b| {
            let w = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
            [w(0), w(4), w(8)]
        })?),
        PhysicalType::BYTE_ARRAY => Values::Bytes(selected_byte_arrays(data, selected)?),
        PhysicalType::FIXED_LEN_BYTE_ARRAY => {
            if type_length == 0 {
                return Err(Error::corrupt(
                    "PLAIN FIXED_LEN_BYTE_ARRAY column has type_length 0",
                ));
            }
            num_values
                .checked_mul(type_length)
                .filter(|&n| n <= data.len())
                .ok_or_else(|| {
                    Error::corrupt(format!(
                        "PLAIN FIXED_LEN_BYTE_ARRAY({type_length}) page holds {} bytes for {num_values} values",
                        data.len()
                    ))
                })?;
            let mut out = ByteArrays::with_capacity(picked, picked * type_length);
            for i in selected.iter_ones() {
                out.push(&data[i * type_length..(i + 1) * type_length]);
            }
            Values::Bytes(out)
        }
    })
}

/// The selected values of `N` bytes each, after checking the data holds every value.
fn gather<const N: usize, T>(
    data: &[u8],
    selected: &Bitmap,
    what: &str,
    convert: impl Fn([u8; N]) -> T,
) -> Result<Vec<T>> {
    let num_values = selected.len();
    match num_values.checked_mul(N) {
        Some(needed) if needed <= data.len() => {
            let data = &data[..needed];
            let mut out = Vec::with_capacity(selected.count_ones());
            out.extend(selected.iter_ones().map(|i| {
                let mut a = [0u8; N];
                a.copy_from_slice(&data[i * N..i * N + N]);
                convert(a)
            }));
            Ok(out)
        }
        _ => Err(short(what, data.len(), num_values)),
    }
}

/// Walks every length prefix (the only way to find a value) and copies the selected values.
fn selected_byte_arrays(data: &[u8], selected: &Bitmap) -> Result<ByteArrays> {
    let num_values = selected.len();
    let mut out = ByteArrays::with_capacity(selected.count_ones(), 0);
    let mut pos = 0usize;
    for i in 0..num_values {
        let len_bytes = data.get(pos..pos + 4).ok_or_else(|| {
            Error::corrupt(format!(
                "PLAIN BYTE_ARRAY page ends at value {i} of {num_values} (no length)"
            ))
        })?;
        let len =
            u32::from_le_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]) as usize;
        pos += 4;
        let end = pos
            .checked_add(len)
            .filter(|&e| e <= data.len())
            .ok_or_else(|| {
                Error::corrupt(format!(
                    "PLAIN BYTE_ARRAY value {i} has length {len} but {} bytes remain",
                    data.len() - pos
                ))
            })?;
        if selected.get(i) {
            out.push(&data[pos..end]);
        }
        pos = end;
    }
    Ok(out)
}

fn short(what: &str, len: usize, num_values: usize) -> Error {
    Error::corrupt(format!(
        "PLAIN {what} page holds {len} bytes for {num_values} values"
    ))
}

/// Decodes `num_values` values of `N` bytes each, after checking the data holds them all.
fn fixed<const N: usize, T>(
    data: &[u8],
    num_values: usize,
    what: &str,
    convert: impl Fn([u8; N]) -> T,
) -> Result<Vec<T>> {
    match num_values.checked_mul(N) {
        Some(needed) if needed <= data.len() => Ok(data[..needed]
            .chunks_exact(N)
            .map(|c| {
                let mut a = [0u8; N];
                a.copy_from_slice(c);
                convert(a)
            })
            .collect()),
        _ => Err(short(what, data.len(), num_values)),
    }
}

/// Decodes `num_values` length-prefixed byte arrays, returning them and the bytes consumed.
pub(crate) fn byte_arrays(data: &[u8], num_values: usize) -> Result<(ByteArrays, usize)> {
    // Each value takes at least its 4-byte length, which bounds the capacity.
    let mut out = ByteArrays::with_capacity(num_values.min(data.len() / 4), data.len());
    let mut pos = 0usize;
    for i in 0..num_values {
        let len_bytes = data.get(pos..pos + 4).ok_or_else(|| {
            Error::corrupt(format!(
                "PLAIN BYTE_ARRAY page ends at value {i} of {num_values} (no length)"
            ))
        })?;
        let len =
            u32::from_le_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]) as usize;
        pos += 4;
        let value = pos
            .checked_add(len)
            .and_then(|end| data.get(pos..end))
            .ok_or_else(|| {
                Error::corrupt(format!(
                    "PLAIN BYTE_ARRAY value {i} has length {len} but {} bytes remain",
                    data.len() - pos
                ))
            })?;
        out.push(value);
        pos += len;
    }
    Ok((out, pos))
}

/// Splits `data` into `num_values` values of `type_length` bytes each.
pub(crate) fn fixed_len(
    data: &[u8],
    type_length: usize,
    num_values: usize,
    encoding: &str,
) -> Result<ByteArrays> {
    if type_length == 0 {
        return Err(Error::corrupt(format!(
            "{encoding} FIXED_LEN_BYTE_ARRAY column has type_length 0"
        )));
    }
    let needed = num_values.checked_mul(type_length).filter(|&n| n <= data.len()).ok_or_else(|| {
        Error::corrupt(format!(
            "{encoding} FIXED_LEN_BYTE_ARRAY({type_length}) page holds {} bytes for {num_values} values",
            data.len()
        ))
    })?;
    let mut out = ByteArrays::with_capacity(num_values, needed);
    out.data.extend_from_slice(&data[..needed]);
    out.offsets
        .extend((1..=num_values).map(|i| i * type_length));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::test_util::{arb_values, encode_values};
    use parquet::basic::Encoding;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn roundtrip_all_types((physical, type_length, values) in arb_values()) {
            let data = encode_values(Encoding::PLAIN, physical, type_length, &values);
            let got = decode(physical, type_length, &data, values.len()).unwrap();
            prop_assert_eq!(&got, &values);
            for shape in 0..4usize {
                let sel = Bitmap::from_bools(&(0..values.len()).map(|i| match shape {
                    0 => false,
                    1 => true,
                    2 => i % 3 == 0,
                    _ => i % 64 == 63 || i % 7 == 2,
                }).collect::<Vec<_>>());
                let idx: Vec<u32> = sel.iter_ones().map(|i| i as u32).collect();
                let picked = decode_selected(physical, type_length, &data, values.len(), &sel).unwrap();
                prop_assert_eq!(picked, values.take(&idx));
                if !values.is_empty() && physical != PhysicalType::BOOLEAN {
                    let cut = &data[..data.len() - 1];
                    prop_assert!(decode_selected(physical, type_length, cut, values.len(), &sel).is_err());
                }
            }
            if !values.is_empty() && physical != PhysicalType::BOOLEAN {
                // Dropping the last byte always loses part of the last value.
                prop_assert!(decode(physical, type_length, &data[..data.len() - 1], values.len()).is_err());
            }
            prop_assert!(decode(physical, type_length, &data, usize::MAX).is_err());
            prop_assert!(decode(physical, type_length, &data, values.len() + 1 + data.len() * 8).is_err());
        }

        #[test]
        fn garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..64), n in 0usize..100, tl in 0usize..5) {
            for physical in crate::encoding::test_util::ALL_TYPES {
                let _ = decode(physical, tl, &data, n);
            }
        }
    }

    #[test]
    fn edge_cases() {
        assert_eq!(
            decode(PhysicalType::INT32, 0, &[], 0).unwrap(),
            Values::I32(vec![])
        );
        let e = decode(PhysicalType::INT32, 0, &[0; 10], 4).unwrap_err();
        assert_eq!(e.message, "PLAIN INT32 page holds 10 bytes for 4 values");
        assert!(decode(PhysicalType::FIXED_LEN_BYTE_ARRAY, 0, &[0; 10], 1).is_err());
        assert!(decode(PhysicalType::FIXED_LEN_BYTE_ARRAY, usize::MAX, &[0; 10], 2).is_err());
        // A length that points past the end, and one that overflows.
        assert!(decode(PhysicalType::BYTE_ARRAY, 0, &[5, 0, 0, 0, 1], 1).is_err());
        assert!(decode(PhysicalType::BYTE_ARRAY, 0, &[0xff; 8], 1).is_err());
        assert!(decode(PhysicalType::BYTE_ARRAY, 0, &[0, 0, 0], 1).is_err());
        assert_eq!(
            decode(PhysicalType::BOOLEAN, 0, &[0b101], 3).unwrap(),
            Values::Bool(vec![true, false, true])
        );
        assert!(decode(PhysicalType::BOOLEAN, 0, &[0b101], 9).is_err());
    }
}
