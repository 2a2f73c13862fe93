//! Our own value decoders over decompressed page bytes, one Parquet encoding per module.
//!
//! Every decoder checks lengths and counts against the bytes it was given and reports a corrupt
//! file instead of panicking, and never sizes an allocation from a header count the data cannot
//! back.
//!
//! What the scan may do with a page's values is asked of its encoding through
//! [`PageEncoding`] (from [`for_page`]): decode them all, evaluate a conjunction on them without
//! decoding, evaluate only the selected ones, or decode only the selected ones. Every verb but
//! `decode` may decline, and the column layer then decodes the page whole; it never asks which
//! encoding a page has. PLAIN ([`plain::Plain`]) evaluates in place and gathers selected values;
//! dictionary codes ([`dictionary::Dictionary`]) are tested against the conjunction's result over
//! the dictionary, one test per RLE run, and selected by the select kernel; the other encodings
//! decode.

pub mod bitpack;
pub mod byte_stream_split;
pub mod delta_binary_packed;
pub mod delta_byte_array;
pub mod delta_length_byte_array;
pub mod dictionary;
pub mod plain;
pub mod rle;

use crate::budget::Budget;
use crate::error::{Error, Result};
use crate::expr::eval::Conjunction;
use crate::schema::LeafColumn;
use crate::selection::Bitmap;
use crate::values::Values;
use parquet::basic::{Encoding, Type as PhysicalType};

/// A data page's non-null values, still encoded: what every [`PageEncoding`] verb works on.
#[derive(Clone, Copy)]
pub struct EncodedPage<'a> {
    pub column: &'a LeafColumn,
    /// The encoded values (after the levels).
    pub data: &'a [u8],
    /// Non-null values on the page.
    pub num_values: usize,
    /// Every decoded buffer is reserved here first.
    pub budget: &'a Budget,
}

/// The operations one encoding offers over a page's values. Only [`decode`](Self::decode) is
/// required; every other verb may decline with `None`, and the caller then decodes the page
/// whole and works on the values. Giving an encoding a faster path is implementing a verb in
/// its own module.
///
/// `selected` bitmaps have one bit per non-null value of the page; results of the selected
/// verbs are compact (one bit or value per selected value, in order).
pub trait PageEncoding {
    /// Every value of the page.
    fn decode(&self, page: &EncodedPage<'_>) -> Result<Values>;

    /// Whether [`select`](Self::select) and [`evaluate_selected`](Self::evaluate_selected) are
    /// offered, so that a caller has a choice between them and a whole-page pass.
    fn selects(&self) -> bool {
        false
    }

    /// The conjunction over every value, without decoding them into a buffer.
    fn evaluate(&self, _page: &EncodedPage<'_>, _conj: &Conjunction<'_>) -> Option<Result<Bitmap>> {
        None
    }

    /// The conjunction over the selected values only (selection pushdown, paper 001 §4).
    fn evaluate_selected(
        &self,
        _page: &EncodedPage<'_>,
        _conj: &Conjunction<'_>,
        _selected: &Bitmap,
    ) -> Option<Result<Bitmap>> {
        None
    }

    /// Only the selected values, decoded (late materialization).
    fn select(&self, _page: &EncodedPage<'_>, _selected: &Bitmap) -> Option<Result<Values>> {
        None
    }

    /// The selected values' dictionary codes (checked against the dictionary's size), appended
    /// to `codes`, whose room the caller has reserved: a dense projection then gathers the
    /// column once, as an Arrow `take` from the dictionary built as an array once. The values
    /// the codes stand for are reserved in the page's budget. Only dictionary encodings offer it.
    fn select_codes_into(
        &self,
        _page: &EncodedPage<'_>,
        _selected: &Bitmap,
        _codes: &mut Vec<u32>,
    ) -> Option<Result<()>> {
        None
    }

    /// [`select`](Self::select) appending to `out` (the column's values so far), so that an
    /// encoding that can writes each value once. By default, selected then appended.
    fn select_into(
        &self,
        page: &EncodedPage<'_>,
        selected: &Bitmap,
        out: &mut Values,
    ) -> Option<Result<()>> {
        Some(self.select(page, selected)?.and_then(|values| {
            if out.append(values) {
                Ok(())
            } else {
                Err(Error::corrupt(
                    "pages of one column decode to different types",
                ))
            }
        }))
    }
}

/// The operations of a page stored with `encoding`; a dictionary-encoded page needs its
/// chunk's `dictionary`.
pub fn for_page<'d>(
    encoding: Encoding,
    dictionary: Option<&'d Values>,
) -> Result<Box<dyn PageEncoding + 'd>> {
    Ok(match encoding {
        Encoding::PLAIN => Box::new(plain::Plain),
        Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY => Box::new(dictionary::Dictionary {
            entries: dictionary.ok_or_else(|| {
                Error::corrupt("dictionary-encoded page without a dictionary page")
            })?,
        }),
        other => Box::new(Decoder(other)),
    })
}

/// An encoding whose only verb is decoding the page whole (DELTA_*, BYTE_STREAM_SPLIT, RLE
/// booleans).
struct Decoder(Encoding);

impl PageEncoding for Decoder {
    fn decode(&self, page: &EncodedPage<'_>) -> Result<Values> {
        page.decode_as(self.0)
    }
}

impl EncodedPage<'_> {
    /// The page decoded by [`decode_values`] as `encoding`.
    fn decode_as(&self, encoding: Encoding) -> Result<Values> {
        decode_values(
            encoding,
            self.column.physical,
            self.column.type_length,
            self.data,
            self.num_values,
            self.budget,
        )
    }
}

/// Bytes a decoder holds per value of `physical` type, output and scratch (INT32 deltas decode
/// in 64 bits; byte arrays keep an offset and, in the DELTA encodings, a decoded length; RLE
/// booleans go through 32-bit codes). The value bytes of byte arrays are reserved separately.
pub fn value_bytes(physical: PhysicalType, type_length: usize) -> usize {
    use PhysicalType as T;
    match physical {
        T::BOOLEAN => 5,
        T::INT32 => 12,
        T::FLOAT => 4,
        T::INT64 | T::DOUBLE => 8,
        T::INT96 => 12,
        T::BYTE_ARRAY => 16,
        T::FIXED_LEN_BYTE_ARRAY => 16usize.saturating_add(type_length),
    }
}

/// Decodes exactly `num_values` non-null values of `physical` type stored with `encoding`.
///
/// `type_length` is the FIXED_LEN_BYTE_ARRAY width (ignored for other types). Dictionary
/// encodings are not handled here: see [`dictionary`]. The output is reserved in `budget` before
/// it is built: `num_values` times [`value_bytes`], plus the page's bytes for byte arrays
/// (DELTA_BYTE_ARRAY, whose values can be longer than the page, reserves their exact total).
pub fn decode_values(
    encoding: Encoding,
    physical: PhysicalType,
    type_length: usize,
    data: &[u8],
    num_values: usize,
    budget: &Budget,
) -> Result<Values> {
    use PhysicalType as T;
    let copies_page = matches!(physical, T::BYTE_ARRAY | T::FIXED_LEN_BYTE_ARRAY)
        && encoding != Encoding::DELTA_BYTE_ARRAY;
    budget.reserve(
        num_values
            .saturating_mul(value_bytes(physical, type_length))
            .saturating_add(if copies_page { data.len() } else { 0 }),
        || format!("decoding {num_values} {encoding} values of type {physical}"),
    )?;
    match (encoding, physical) {
        (Encoding::PLAIN, _) => plain::decode(physical, type_length, data, num_values),
        (Encoding::DELTA_BINARY_PACKED, T::INT32 | T::INT64) => {
            delta_binary_packed::decode(physical, data, num_values)
        }
        (Encoding::DELTA_LENGTH_BYTE_ARRAY, T::BYTE_ARRAY) => {
            delta_length_byte_array::decode(data, num_values).map(Values::Bytes)
        }
        (Encoding::DELTA_BYTE_ARRAY, T::BYTE_ARRAY) => {
            delta_byte_array::decode(data, num_values, None, budget).map(Values::Bytes)
        }
        (Encoding::DELTA_BYTE_ARRAY, T::FIXED_LEN_BYTE_ARRAY) => {
            delta_byte_array::decode(data, num_values, Some(type_length), budget).map(Values::Bytes)
        }
        (
            Encoding::BYTE_STREAM_SPLIT,
            T::FLOAT | T::DOUBLE | T::INT32 | T::INT64 | T::FIXED_LEN_BYTE_ARRAY,
        ) => byte_stream_split::decode(physical, type_length, data, num_values),
        (Encoding::RLE, T::BOOLEAN) => decode_rle_booleans(data, num_values),
        _ => Err(Error::unsupported(format!(
            "encoding {encoding} for physical type {physical}"
        ))),
    }
}

/// RLE booleans (data page values): a 4-byte little-endian length, then the hybrid stream with
/// bit width 1.
fn decode_rle_booleans(data: &[u8], num_values: usize) -> Result<Values> {
    if num_values == 0 {
        return Ok(Values::Bool(Vec::new()));
    }
    let body = data
        .get(..4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .and_then(|len| data.get(4..4usize.checked_add(len)?))
        .ok_or_else(|| {
            Error::corrupt(format!(
                "RLE BOOLEAN page of {} bytes has a missing or too large length prefix",
                data.len()
            ))
        })?;
    let mut bits = Vec::new();
    rle::decode_rle(body, 1, num_values, &mut bits)?;
    Ok(Values::Bool(bits.into_iter().map(|b| b == 1).collect()))
}

#[cfg(test)]
pub(crate) mod test_util {
    //! The `parquet` crate's encoders as the independent oracle, and value strategies.

    use crate::values::{ByteArrays, Values};
    use parquet::basic::{Encoding, Type as PhysicalType};
    use parquet::data_type::{
        BoolType, ByteArray, ByteArrayType, DataType, DoubleType, FixedLenByteArray,
        FixedLenByteArrayType, FloatType, Int32Type, Int64Type, Int96, Int96Type,
    };
    use parquet::encodings::encoding::get_encoder;
    use parquet::schema::types::{ColumnDescriptor, ColumnPath, Type as SchemaType};
    use proptest::prelude::*;
    use std::sync::Arc;

    pub(crate) const ALL_TYPES: [PhysicalType; 8] = [
        PhysicalType::BOOLEAN,
        PhysicalType::INT32,
        PhysicalType::INT64,
        PhysicalType::INT96,
        PhysicalType::FLOAT,
        PhysicalType::DOUBLE,
        PhysicalType::BYTE_ARRAY,
        PhysicalType::FIXED_LEN_BYTE_ARRAY,
    ];

    fn encode<T: DataType>(
        encoding: Encoding,
        physical: PhysicalType,
        type_length: usize,
        values: &[T::T],
    ) -> Vec<u8> {
        let mut builder = SchemaType::primitive_type_builder("c", physical);
        if physical == PhysicalType::FIXED_LEN_BYTE_ARRAY {
            builder = builder.with_length(type_length as i32);
        }
        let tp = builder.build().unwrap();
        let descr = Arc::new(ColumnDescriptor::new(
            Arc::new(tp),
            0,
            0,
            ColumnPath::from("c"),
        ));
        let mut enc = get_encoder::<T>(encoding, &descr).unwrap();
        enc.put(values).unwrap();
        enc.flush_buffer().unwrap().to_vec()
    }

    /// Encodes `values` with the parquet crate's encoder for `encoding`.
    pub(crate) fn encode_values(
        encoding: Encoding,
        physical: PhysicalType,
        type_length: usize,
        values: &Values,
    ) -> Vec<u8> {
        let (p, tl) = (physical, type_length);
        match values {
            Values::Bool(v) => encode::<BoolType>(encoding, p, tl, v),
            Values::I32(v) => encode::<Int32Type>(encoding, p, tl, v),
            Values::I64(v) => encode::<Int64Type>(encoding, p, tl, v),
            Values::I96(v) => {
                let v: Vec<Int96> = v.iter().map(|w| Int96::from(w.to_vec())).collect();
                encode::<Int96Type>(encoding, p, tl, &v)
            }
            Values::F32(v) => encode::<FloatType>(encoding, p, tl, v),
            Values::F64(v) => encode::<DoubleType>(encoding, p, tl, v),
            Values::Bytes(v) if physical == PhysicalType::FIXED_LEN_BYTE_ARRAY => {
                let v: Vec<FixedLenByteArray> = v
                    .iter()
                    .map(|b| FixedLenByteArray::from(b.to_vec()))
                    .collect();
                encode::<FixedLenByteArrayType>(encoding, p, tl, &v)
            }
            Values::Bytes(v) => {
                let v: Vec<ByteArray> = v.iter().map(ByteArray::from).collect();
                encode::<ByteArrayType>(encoding, p, tl, &v)
            }
        }
    }

    fn bytes_from(v: Vec<Vec<u8>>) -> Values {
        let mut b = ByteArrays::new();
        for x in &v {
            b.push(x);
        }
        Values::Bytes(b)
    }

    /// Byte strings with shared prefixes, so DELTA_BYTE_ARRAY prefixes are exercised.
    pub(crate) fn arb_strings() -> impl Strategy<Value = Vec<Vec<u8>>> {
        prop::collection::vec(
            prop_oneof![
                prop::collection::vec(any::<u8>(), 0..20),
                prop::collection::vec(prop::sample::select(vec![b'a', b'b']), 0..12),
            ],
            0..150,
        )
        .prop_map(|mut v| {
            if v.len() > 3 && v[0].len() > 2 {
                let prefix = v[0].clone();
                v[2] = [prefix, v[2].clone()].concat();
            }
            v
        })
    }

    /// Integers that are sometimes small and sometimes extreme, to get every delta bit width.
    pub(crate) fn arb_i64s() -> impl Strategy<Value = Vec<i64>> {
        prop::collection::vec(
            prop_oneof![any::<i64>(), -1000i64..1000, Just(i64::MIN), Just(i64::MAX)],
            0..400,
        )
    }

    /// `num` values of `physical` type with `type_length` bytes for FLBA.
    pub(crate) fn arb_of(physical: PhysicalType, type_length: usize) -> BoxedStrategy<Values> {
        let n = 0usize..300;
        match physical {
            PhysicalType::BOOLEAN => prop::collection::vec(any::<bool>(), n)
                .prop_map(Values::Bool)
                .boxed(),
            PhysicalType::INT32 => prop::collection::vec(
                prop_oneof![any::<i32>(), -100i32..100, Just(i32::MIN), Just(i32::MAX)],
                n,
            )
            .prop_map(Values::I32)
            .boxed(),
            PhysicalType::INT64 => arb_i64s().prop_map(Values::I64).boxed(),
            PhysicalType::INT96 => prop::collection::vec(any::<[u32; 3]>(), n)
                .prop_map(Values::I96)
                .boxed(),
            PhysicalType::FLOAT => {
                prop::collection::vec(any::<f32>().prop_filter("nan", |f| !f.is_nan()), n)
                    .prop_map(Values::F32)
                    .boxed()
            }
            PhysicalType::DOUBLE => {
                prop::collection::vec(any::<f64>().prop_filter("nan", |f| !f.is_nan()), n)
                    .prop_map(Values::F64)
                    .boxed()
            }
            PhysicalType::BYTE_ARRAY => arb_strings().prop_map(bytes_from).boxed(),
            PhysicalType::FIXED_LEN_BYTE_ARRAY => prop::collection::vec(
                prop_oneof![
                    prop::collection::vec(any::<u8>(), type_length),
                    prop::collection::vec(Just(7u8), type_length),
                ],
                n,
            )
            .prop_map(bytes_from)
            .boxed(),
        }
    }

    /// A physical type, type length and values of that type.
    pub(crate) fn arb_values() -> impl Strategy<Value = (PhysicalType, usize, Values)> {
        (prop::sample::select(ALL_TYPES.to_vec()), 1usize..20)
            .prop_flat_map(|(p, tl)| arb_of(p, tl).prop_map(move |v| (p, tl, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::*;
    use super::*;
    use crate::budget::Budget;
    use proptest::prelude::*;

    /// Every (encoding, type) pair decode_values supports, as the parquet crate encodes them.
    fn supported() -> Vec<(Encoding, PhysicalType)> {
        use PhysicalType as T;
        let mut v: Vec<_> = ALL_TYPES.iter().map(|&t| (Encoding::PLAIN, t)).collect();
        v.extend([
            (Encoding::DELTA_BINARY_PACKED, T::INT32),
            (Encoding::DELTA_BINARY_PACKED, T::INT64),
            (Encoding::DELTA_LENGTH_BYTE_ARRAY, T::BYTE_ARRAY),
            (Encoding::DELTA_BYTE_ARRAY, T::BYTE_ARRAY),
            (Encoding::DELTA_BYTE_ARRAY, T::FIXED_LEN_BYTE_ARRAY),
            (Encoding::BYTE_STREAM_SPLIT, T::FLOAT),
            (Encoding::BYTE_STREAM_SPLIT, T::DOUBLE),
            (Encoding::BYTE_STREAM_SPLIT, T::INT32),
            (Encoding::BYTE_STREAM_SPLIT, T::INT64),
            (Encoding::BYTE_STREAM_SPLIT, T::FIXED_LEN_BYTE_ARRAY),
            (Encoding::RLE, T::BOOLEAN),
        ]);
        v
    }

    fn arb_case() -> impl Strategy<Value = (Encoding, PhysicalType, usize, Values)> {
        (prop::sample::select(supported()), 1usize..20)
            .prop_flat_map(|((e, p), tl)| arb_of(p, tl).prop_map(move |v| (e, p, tl, v)))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn roundtrip_every_encoding((encoding, physical, tl, values) in arb_case()) {
            let data = encode_values(encoding, physical, tl, &values);
            let got = decode_values(encoding, physical, tl, &data, values.len(), &Budget::default()).unwrap();
            prop_assert_eq!(&got, &values);
            // Truncation anywhere is an error or (for padding) still the same prefix; never a panic.
            for cut in [0, data.len() / 2, data.len().saturating_sub(1)] {
                if let Ok(v) = decode_values(encoding, physical, tl, &data[..cut], values.len(), &Budget::default()) {
                    prop_assert_eq!(&v, &values);
                }
            }
            prop_assert!(decode_values(encoding, physical, tl, &data, values.len() + 100_000, &Budget::default()).is_err());
            let _ = decode_values(encoding, physical, tl, &data, usize::MAX, &Budget::default());
        }

        #[test]
        fn garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..80), n in 0usize..600, tl in 0usize..4) {
            for (e, p) in supported() {
                let _ = decode_values(e, p, tl, &data, n, &Budget::default());
                let _ = decode_values(e, p, tl, &data, usize::MAX - n, &Budget::default());
            }
        }
    }

    #[test]
    fn unsupported_pairs() {
        let e = decode_values(
            Encoding::DELTA_BINARY_PACKED,
            PhysicalType::FLOAT,
            0,
            &[],
            0,
            &Budget::default(),
        )
        .unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::Unsupported);
        assert!(e.message.contains("DELTA_BINARY_PACKED"), "{}", e.message);
        for enc in [Encoding::RLE_DICTIONARY, Encoding::PLAIN_DICTIONARY] {
            assert!(
                decode_values(enc, PhysicalType::INT32, 0, &[], 0, &Budget::default()).is_err()
            );
        }
        assert!(decode_values(
            Encoding::RLE,
            PhysicalType::INT32,
            0,
            &[],
            0,
            &Budget::default()
        )
        .is_err());
    }

    #[test]
    fn rle_booleans_bad_prefix() {
        assert!(decode_rle_booleans(&[], 1).is_err());
        assert!(decode_rle_booleans(&[9, 0, 0, 0, 1], 1).is_err());
        assert!(decode_rle_booleans(&[0xff, 0xff, 0xff, 0xff, 1], 1).is_err());
        assert_eq!(decode_rle_booleans(&[], 0).unwrap(), Values::Bool(vec![]));
    }
}
