//! Survivors → Arrow arrays.
//!
//! Decoders produce physical values (`Values`); this module gives them their logical Arrow type —
//! the type the `parquet` crate's own reader would produce for the column, including the hints of
//! an embedded Arrow schema (INT96 in microseconds, see `scan::file`). Columns whose target type
//! is not a plain reinterpretation of the physical values (nested, INTERVAL, unusual hints) are
//! read through the `parquet` crate's reader instead (see `scan::fallback`).

use std::sync::Arc;

use arrow::array::*;
use arrow::buffer::{NullBuffer, ScalarBuffer};
use arrow::datatypes::*;
use parquet::basic::Type as PhysicalType;

use super::project::Projected;
use crate::budget::Budget;
use crate::error::{Error, Result};
use crate::expr::i128_from_be;
use crate::kernels::gather::take_short;
use crate::schema::{LeafColumn, LogicalKind, Unit};
use crate::values::Values;

/// The Arrow type tamis builds for a flat column before adapting it to the target type.
fn native_type(leaf: &LeafColumn) -> Option<DataType> {
    use LogicalKind as K;
    Some(match (&leaf.logical, leaf.physical) {
        (K::Boolean, PhysicalType::BOOLEAN) => DataType::Boolean,
        (K::Integer { bits, signed }, PhysicalType::INT32 | PhysicalType::INT64) => {
            match (bits, signed, leaf.physical) {
                (8, true, PhysicalType::INT32) => DataType::Int8,
                (16, true, PhysicalType::INT32) => DataType::Int16,
                (32, true, PhysicalType::INT32) => DataType::Int32,
                (64, true, PhysicalType::INT64) => DataType::Int64,
                (8, false, PhysicalType::INT32) => DataType::UInt8,
                (16, false, PhysicalType::INT32) => DataType::UInt16,
                (32, false, PhysicalType::INT32) => DataType::UInt32,
                (64, false, PhysicalType::INT64) => DataType::UInt64,
                _ => return None,
            }
        }
        (K::Float16, PhysicalType::FIXED_LEN_BYTE_ARRAY) if leaf.type_length == 2 => {
            DataType::Float16
        }
        (K::Float32, PhysicalType::FLOAT) => DataType::Float32,
        (K::Float64, PhysicalType::DOUBLE) => DataType::Float64,
        (K::Decimal { precision, scale }, _) if (1..=38).contains(precision) => {
            DataType::Decimal128(*precision as u8, i8::try_from(*scale).ok()?)
        }
        (K::Date, PhysicalType::INT32) => DataType::Date32,
        (K::Time { unit: Unit::Millis }, PhysicalType::INT32) => {
            DataType::Time32(TimeUnit::Millisecond)
        }
        (K::Time { unit: Unit::Micros }, PhysicalType::INT64) => {
            DataType::Time64(TimeUnit::Microsecond)
        }
        (K::Time { unit: Unit::Nanos }, PhysicalType::INT64) => {
            DataType::Time64(TimeUnit::Nanosecond)
        }
        (K::Timestamp { unit, .. }, PhysicalType::INT64) => {
            DataType::Timestamp(arrow_unit(*unit), None)
        }
        // Microseconds, as Spark reads them (and pyarrow with `coerce_int96_timestamp_unit="us"`):
        // Spark writes years 1 to 9999, beyond the nanosecond range. The unit depends on the
        // physical type alone, so every file of a dataset agrees; see `int96_micros`.
        (K::Int96, PhysicalType::INT96) => DataType::Timestamp(TimeUnit::Microsecond, None),
        (K::String, PhysicalType::BYTE_ARRAY) => DataType::Utf8,
        (K::Binary, PhysicalType::BYTE_ARRAY) => DataType::Binary,
        (K::Binary, PhysicalType::FIXED_LEN_BYTE_ARRAY) => {
            DataType::FixedSizeBinary(i32::try_from(leaf.type_length).ok()?)
        }
        _ => return None,
    })
}

fn arrow_unit(u: Unit) -> TimeUnit {
    match u {
        Unit::Millis => TimeUnit::Millisecond,
        Unit::Micros => TimeUnit::Microsecond,
        Unit::Nanos => TimeUnit::Nanosecond,
    }
}

/// Whether tamis decodes this column itself for the given target Arrow type.
pub(crate) fn is_native(leaf: &LeafColumn, target: &DataType) -> bool {
    if leaf.nested {
        return false;
    }
    let Some(native) = native_type(leaf) else {
        return false;
    };
    adaptable(&native, target)
}

/// Whether tamis decodes this leaf itself as the elements of a list of `target` items (the
/// leaf sits below the list, so it is nested; the element itself must be a primitive).
pub(crate) fn is_native_element(leaf: &LeafColumn, target: &DataType) -> bool {
    native_type(leaf).is_some_and(|native| adaptable(&native, target))
}

/// Target types reachable from the native type without changing any value.
fn adaptable(native: &DataType, target: &DataType) -> bool {
    use DataType as D;
    if native == target {
        return true;
    }
    match (native, target) {
        (D::Utf8, D::LargeUtf8 | D::Utf8View) => true,
        (D::Binary, D::LargeBinary | D::BinaryView) => true,
        (D::Timestamp(a, None), D::Timestamp(b, _)) => a == b,
        (D::Decimal128(p, s), D::Decimal32(q, t) | D::Decimal64(q, t) | D::Decimal256(q, t)) => {
            p == q && s == t
        }
        (D::Date32, D::Date64) => true,
        (n, D::Dictionary(_, value)) => adaptable(n, value) && !matches!(n, D::FixedSizeBinary(_)),
        _ => false,
    }
}

/// Arrow offsets of byte values whose own offsets are `offsets` (one per value, plus the end),
/// spread over `validity` (a null takes no bytes). The caller has checked that the total fits
/// `O`.
fn byte_offsets<O: OffsetSizeTrait>(
    offsets: &[usize],
    validity: &[bool],
    has_nulls: bool,
) -> arrow::buffer::OffsetBuffer<O> {
    let out: Vec<O> = if has_nulls {
        let mut out = Vec::with_capacity(validity.len() + 1);
        out.push(O::usize_as(0));
        let mut it = offsets.windows(2);
        let mut end = 0usize;
        for &valid in validity {
            if valid {
                if let Some(w) = it.next() {
                    end += w[1] - w[0];
                }
            }
            out.push(O::usize_as(end));
        }
        out
    } else {
        offsets.iter().map(|&o| O::usize_as(o)).collect()
    };
    arrow::buffer::OffsetBuffer::new(out.into())
}

/// A string (`utf8`) or binary array with `O` offsets from byte values spread over
/// `validity`; fails only on invalid UTF-8.
fn byte_array<O: OffsetSizeTrait>(
    b: crate::values::ByteArrays,
    validity: &[bool],
    has_nulls: bool,
    nulls: Option<NullBuffer>,
    utf8: bool,
) -> std::result::Result<ArrayRef, arrow::error::ArrowError> {
    let offsets = byte_offsets::<O>(&b.offsets, validity, has_nulls);
    let data = arrow::buffer::Buffer::from_vec(b.data);
    Ok(if utf8 {
        Arc::new(GenericStringArray::<O>::try_new(offsets, data, nulls)?)
    } else {
        Arc::new(GenericBinaryArray::<O>::try_new(offsets, data, nulls)?)
    })
}

/// Microseconds from the start of Julian day 0 to 1970-01-01.
const JULIAN_MICROS_OF_EPOCH: i128 = 2_440_588 * MICROS_PER_DAY;
const MICROS_PER_DAY: i128 = 86_400_000_000;

/// An INT96 timestamp (nanoseconds of the day in the first 8 bytes, the Julian day in the last
/// 4, as Impala and Spark write it) as microseconds since the epoch, sub-microsecond digits
/// truncated: the value Spark, the `parquet` crate (`Int96::to_micros`) and pyarrow
/// (`coerce_int96_timestamp_unit="us"`) read for every instant in the microsecond range (about
/// 290,000 years either side of 1970).
///
/// Spark writes an instant as its microseconds since Julian day 0, in an `i64` that overflows
/// for instants after year 287,396, then split into day and time of day: such bytes, an instant
/// less than that offset below the range, are that wrapped count, and wrap back to the instant
/// written (`290000-12-31T01:00:00+02:00` in `int96_from_spark.parquet`), as Spark and the crate
/// read them (pyarrow reads another instant). Any other value outside the range is refused,
/// saying which (as DuckDB does), never wrapped to another instant.
pub(crate) fn int96_micros(words: [u32; 3]) -> Result<i64> {
    let day = i128::from(words[2] as i32);
    let nanos = ((words[1] as i64) << 32) + words[0] as i64;
    let exact = day * MICROS_PER_DAY + i128::from(nanos / 1000) - JULIAN_MICROS_OF_EPOCH;
    if let Ok(micros) = i64::try_from(exact) {
        return Ok(micros);
    }
    let min = i128::from(i64::MIN);
    if (min - JULIAN_MICROS_OF_EPOCH..min).contains(&exact) {
        return Ok((exact + (1 << 64)) as i64);
    }
    Err(Error::unsupported(format!(
        "INT96 timestamp (Julian day {day}, {nanos} ns into the day) is outside the range of \
         microsecond timestamps"
    )))
}

/// Builds the Arrow array of `target` type from projected values.
pub(crate) fn to_arrow(
    leaf: &LeafColumn,
    mut projected: Projected,
    target: &DataType,
) -> Result<ArrayRef> {
    if let Some((dictionary, codes)) = projected.take_codes() {
        match take_codes(leaf, &dictionary, codes, &projected.validity, target)? {
            Ok(array) => return adapt(array, target),
            // Bounded by the selected rows, which the row group's budget has taken.
            Err(codes) => projected.accept_codes(&dictionary, &codes, &Budget::new(usize::MAX))?,
        }
    }
    if let Some(wide) = projected.take_wide() {
        let Some(DataType::Decimal128(p, s)) = native_type(leaf) else {
            return Err(Error::internal(
                "widened values of a column that is not a decimal",
            ));
        };
        let nulls = nulls_of(leaf, &projected.validity, wide.len())?;
        let array = decimal_array(wide, &projected.validity, nulls, p, s)?;
        return adapt(array, target);
    }
    let array = native_array(leaf, projected, target)?;
    adapt(array, target)
}

/// The array of a column kept as dictionary codes: the dictionary built as an array once (its
/// entries converted, strings checked as UTF-8, once each; as views when `target` is a view
/// type, so that `take` copies 16 bytes a row and the rows share the entries' bytes), then
/// Arrow's `take` by the codes —
/// no value converted or checked twice, no intermediate buffer. `Err(codes)` when an entry does
/// not convert (invalid UTF-8, an INT96 out of range: the caller then converts only the selected
/// values, as every other path does) or the strings outgrow 32-bit offsets.
fn take_codes(
    leaf: &LeafColumn,
    dictionary: &Values,
    codes: Vec<u32>,
    validity: &[bool],
    target: &DataType,
) -> Result<std::result::Result<ArrayRef, Vec<u32>>> {
    let nulls = nulls_of(leaf, validity, codes.len())?;
    let entries = Projected::new(Some(dictionary.clone()), vec![true; dictionary.len()]);
    let Ok(entries) = native_array(leaf, entries, target) else {
        return Ok(Err(codes));
    };
    let has_nulls = nulls.is_some();
    if let DataType::Dictionary(_, value) = target {
        // Asked for as a dictionary (`Scan::string_dictionaries`): the entries and the codes.
        if entries.data_type() == value.as_ref() && i32::try_from(entries.len()).is_ok() {
            let keys: Vec<i32> = codes.into_iter().map(|c| c as i32).collect();
            let keys = Int32Array::new(spread(keys, validity, has_nulls).into(), nulls);
            return Ok(Ok(Arc::new(DictionaryArray::<Int32Type>::try_new(
                keys, entries,
            )?)));
        }
    }
    let indices = UInt32Array::new(spread(codes, validity, has_nulls).into(), nulls);
    let short: Option<ArrayRef> = match entries.data_type() {
        DataType::Utf8 => {
            take_short(entries.as_string::<i32>(), &indices).map(|a| Arc::new(a) as _)
        }
        DataType::Binary => {
            take_short(entries.as_binary::<i32>(), &indices).map(|a| Arc::new(a) as _)
        }
        _ => None,
    };
    if let Some(array) = short {
        return Ok(Ok(array));
    }
    Ok(match arrow::compute::take(&entries, &indices, None) {
        Ok(array) => Ok(array),
        // Dense codes again, for the values path.
        Err(_) => Err(indices.iter().flatten().collect()),
    })
}

/// The null buffer of rows with `validity`, `None` when every row is valid; checks that `dense`
/// values fill the valid rows.
fn nulls_of(leaf: &LeafColumn, validity: &[bool], dense: usize) -> Result<Option<NullBuffer>> {
    // Counted in blocks of u32 lanes, which the compiler vectorizes (a byte-wise `all` or
    // `count` over millions of rows is not).
    let valid: usize = validity
        .chunks(1024)
        .map(|c| c.iter().map(|&v| u32::from(v)).sum::<u32>() as usize)
        .sum();
    if valid != dense {
        return Err(Error::internal("value count does not match validity").in_column(&leaf.path));
    }
    Ok((valid != validity.len()).then(|| NullBuffer::from(validity)))
}

/// The array of the native type ([`native_type`]) of projected values.
fn native_array(leaf: &LeafColumn, projected: Projected, target: &DataType) -> Result<ArrayRef> {
    let native = native_type(leaf).ok_or_else(|| {
        Error::internal(format!("column '{}' is not natively decodable", leaf.path))
    })?;
    let n = projected.validity.len();
    let values = match projected.values {
        Some(v) => v,
        None => empty_values(leaf.physical),
    };
    let nulls = nulls_of(leaf, &projected.validity, values.len())?;
    let has_nulls = nulls.is_some();
    let v = &projected.validity;
    let array: ArrayRef = match (&native, values) {
        (DataType::Boolean, Values::Bool(b)) => {
            Arc::new(BooleanArray::new(spread(b, v, has_nulls).into(), nulls))
        }
        (DataType::Int8, Values::I32(x)) => {
            prim::<Int8Type>(x.into_iter().map(|x| x as i8).collect(), v, nulls)
        }
        (DataType::Int16, Values::I32(x)) => {
            prim::<Int16Type>(x.into_iter().map(|x| x as i16).collect(), v, nulls)
        }
        (DataType::Int32, Values::I32(x)) => prim::<Int32Type>(x, v, nulls),
        (DataType::UInt8, Values::I32(x)) => {
            prim::<UInt8Type>(x.into_iter().map(|x| x as u8).collect(), v, nulls)
        }
        (DataType::UInt16, Values::I32(x)) => {
            prim::<UInt16Type>(x.into_iter().map(|x| x as u16).collect(), v, nulls)
        }
        (DataType::UInt32, Values::I32(x)) => {
            prim::<UInt32Type>(x.into_iter().map(|x| x as u32).collect(), v, nulls)
        }
        (DataType::Int64, Values::I64(x)) => prim::<Int64Type>(x, v, nulls),
        (DataType::UInt64, Values::I64(x)) => {
            prim::<UInt64Type>(x.into_iter().map(|x| x as u64).collect(), v, nulls)
        }
        (DataType::Float32, Values::F32(x)) => prim::<Float32Type>(x, v, nulls),
        (DataType::Float64, Values::F64(x)) => prim::<Float64Type>(x, v, nulls),
        (DataType::Float16, Values::Bytes(b)) => {
            let x: Vec<half::f16> = b
                .iter()
                .map(|s| half::f16::from_le_bytes([s[0], s.get(1).copied().unwrap_or(0)]))
                .collect();
            prim::<Float16Type>(x, v, nulls)
        }
        // Decimals asked for as `Decimal64` (`Scan::short_decimals`): the integers as they are.
        (DataType::Decimal128(p, s), Values::I64(x))
            if matches!(target, DataType::Decimal64(..)) =>
        {
            let a = PrimitiveArray::<Decimal64Type>::new(
                ScalarBuffer::from(spread(x, v, has_nulls)),
                nulls,
            );
            Arc::new(a.with_precision_and_scale(*p, *s)?)
        }
        (DataType::Decimal128(p, s), Values::I32(x))
            if matches!(target, DataType::Decimal64(..)) =>
        {
            let x: Vec<i64> = x.into_iter().map(i64::from).collect();
            let a = PrimitiveArray::<Decimal64Type>::new(
                ScalarBuffer::from(spread(x, v, has_nulls)),
                nulls,
            );
            Arc::new(a.with_precision_and_scale(*p, *s)?)
        }
        (DataType::Decimal128(p, s), vals) => {
            let x: Vec<i128> = match vals {
                Values::I32(x) => x.into_iter().map(i128::from).collect(),
                Values::I64(x) => x.into_iter().map(i128::from).collect(),
                Values::Bytes(b) => b
                    .iter()
                    .map(|s| {
                        i128_from_be(s).ok_or_else(|| Error::corrupt("decimal wider than 16 bytes"))
                    })
                    .collect::<Result<_>>()?,
                _ => return Err(Error::internal("decimal values of an unexpected type")),
            };
            decimal_array(x, v, nulls, *p, *s)?
        }
        (DataType::Date32, Values::I32(x)) => prim::<Date32Type>(x, v, nulls),
        (DataType::Time32(_), Values::I32(x)) => prim::<Time32MillisecondType>(x, v, nulls),
        (DataType::Time64(TimeUnit::Microsecond), Values::I64(x)) => {
            prim::<Time64MicrosecondType>(x, v, nulls)
        }
        (DataType::Time64(_), Values::I64(x)) => prim::<Time64NanosecondType>(x, v, nulls),
        (DataType::Timestamp(unit, _), Values::I64(x)) => {
            let tz = match target {
                DataType::Timestamp(_, tz) => tz.clone(),
                _ => None,
            };
            let x = spread(x, v, has_nulls);
            match unit {
                TimeUnit::Millisecond => {
                    Arc::new(TimestampMillisecondArray::new(x.into(), nulls).with_timezone_opt(tz))
                }
                TimeUnit::Microsecond => {
                    Arc::new(TimestampMicrosecondArray::new(x.into(), nulls).with_timezone_opt(tz))
                }
                _ => Arc::new(TimestampNanosecondArray::new(x.into(), nulls).with_timezone_opt(tz)),
            }
        }
        (DataType::Timestamp(TimeUnit::Microsecond, _), Values::I96(x)) => {
            let tz = match target {
                DataType::Timestamp(_, tz) => tz.clone(),
                _ => None,
            };
            let x = x
                .into_iter()
                .map(int96_micros)
                .collect::<Result<Vec<i64>>>()
                .map_err(|e| e.in_column(&leaf.path))?;
            let x = spread(x, v, has_nulls);
            Arc::new(TimestampMicrosecondArray::new(x.into(), nulls).with_timezone_opt(tz))
        }
        (DataType::Utf8 | DataType::Binary, Values::Bytes(b)) => {
            // Over 2 GiB of values: 64-bit offsets. The scan stream then hands them out in
            // batches that fit the schema's 32-bit offsets (`scan::fit`).
            let utf8 = native == DataType::Utf8;
            let viewed = matches!(target, DataType::Utf8View | DataType::BinaryView);
            if viewed && u32::try_from(b.data.len()).is_ok() {
                // Views straight over the decoded values (no offsets written, no cast).
                return crate::kernels::views::views(&b.offsets, b.data, nulls, utf8).map_err(
                    |e| Error::corrupt(format!("invalid string values: {e}")).in_column(&leaf.path),
                );
            }
            let built = if b.data.len() > i32::MAX as usize {
                byte_array::<i64>(b, v, has_nulls, nulls, utf8)
            } else {
                byte_array::<i32>(b, v, has_nulls, nulls, utf8)
            };
            built.map_err(|e| {
                Error::corrupt(format!("invalid UTF-8 in a string column: {e}"))
                    .in_column(&leaf.path)
            })?
        }
        (DataType::FixedSizeBinary(width), Values::Bytes(b)) => {
            let w = *width as usize;
            let mut data = Vec::with_capacity(n * w);
            let mut it = b.iter();
            for &valid in v {
                if valid {
                    let s = it.next().unwrap_or_default();
                    if s.len() != w {
                        return Err(Error::corrupt("fixed-length value of the wrong width")
                            .in_column(&leaf.path));
                    }
                    data.extend_from_slice(s);
                } else {
                    data.extend(std::iter::repeat_n(0u8, w));
                }
            }
            Arc::new(FixedSizeBinaryArray::try_new(*width, data.into(), nulls)?)
        }
        (t, _) => {
            return Err(
                Error::internal(format!("values do not match Arrow type {t}"))
                    .in_column(&leaf.path),
            )
        }
    };
    Ok(array)
}

/// Whether [`to_arrow`] builds this column as `Decimal128` from integers (so that a projection
/// may widen them as it goes, [`crate::column::project::Projection::decimal128`]).
pub(crate) fn widens_to_i128(leaf: &LeafColumn) -> bool {
    matches!(leaf.physical, PhysicalType::INT32 | PhysicalType::INT64)
        && matches!(native_type(leaf), Some(DataType::Decimal128(..)))
}

fn decimal_array(
    dense: Vec<i128>,
    validity: &[bool],
    nulls: Option<NullBuffer>,
    precision: u8,
    scale: i8,
) -> Result<ArrayRef> {
    let values = spread(dense, validity, nulls.is_some());
    let a = PrimitiveArray::<Decimal128Type>::new(ScalarBuffer::from(values), nulls);
    Ok(Arc::new(a.with_precision_and_scale(precision, scale)?))
}

fn prim<T: ArrowPrimitiveType>(
    dense: Vec<T::Native>,
    validity: &[bool],
    nulls: Option<NullBuffer>,
) -> ArrayRef {
    let values = spread(dense, validity, nulls.is_some());
    Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(values), nulls))
}

/// Spreads dense (non-null) values over the rows; null rows get a default value.
fn spread<T: Copy + Default>(dense: Vec<T>, validity: &[bool], has_nulls: bool) -> Vec<T> {
    if !has_nulls {
        return dense;
    }
    let mut out = Vec::with_capacity(validity.len());
    let mut it = dense.into_iter();
    for &v in validity {
        out.push(if v {
            it.next().unwrap_or_default()
        } else {
            T::default()
        });
    }
    out
}

fn empty_values(physical: PhysicalType) -> Values {
    match physical {
        PhysicalType::BOOLEAN => Values::Bool(Vec::new()),
        PhysicalType::INT32 => Values::I32(Vec::new()),
        PhysicalType::INT64 => Values::I64(Vec::new()),
        PhysicalType::INT96 => Values::I96(Vec::new()),
        PhysicalType::FLOAT => Values::F32(Vec::new()),
        PhysicalType::DOUBLE => Values::F64(Vec::new()),
        _ => Values::Bytes(crate::values::ByteArrays::new()),
    }
}

/// Adapts a natively built array to the target type (representation changes only).
fn adapt(array: ArrayRef, target: &DataType) -> Result<ArrayRef> {
    if array.data_type() == target {
        return Ok(array);
    }
    if let (DataType::Timestamp(..), DataType::Timestamp(..)) = (array.data_type(), target) {
        // Already carries the target's time zone (set while building).
        return Ok(array);
    }
    if is_widened(array.data_type(), target) {
        // Over 2 GiB: kept wide for the stream to cut (`scan::fit`).
        return Ok(array);
    }
    Ok(arrow::compute::cast(&array, target)?)
}

/// Whether `array` is the 64-bit-offset form of `target` (more than 2 GiB of values).
pub(crate) fn is_widened(array: &DataType, target: &DataType) -> bool {
    matches!(
        (array, target),
        (DataType::LargeUtf8, DataType::Utf8) | (DataType::LargeBinary, DataType::Binary)
    )
}

#[cfg(test)]
mod tests {
    use parquet::data_type::Int96;
    use proptest::prelude::*;

    use super::int96_micros;

    fn words(day: i32, nanos: u64) -> [u32; 3] {
        [nanos as u32, (nanos >> 32) as u32, day as u32]
    }

    #[test]
    fn int96_edges() {
        assert_eq!(int96_micros(words(2_440_588, 0)).unwrap(), 0);
        assert_eq!(int96_micros(words(2_440_588, 1_999)).unwrap(), 1);
        assert_eq!(
            int96_micros(words(2_440_587, 86_399_999_999_999)).unwrap(),
            -1
        );
        // 9999-12-31T23:59:59.999999 (Spark's largest ordinary timestamp), beyond nanoseconds.
        assert_eq!(
            int96_micros(words(5_373_484, 86_399_999_999_000)).unwrap(),
            253_402_300_799_999_999
        );
        // Julian day 0 (4714 BC) is in range too.
        assert_eq!(
            int96_micros(words(0, 0)).unwrap(),
            -2_440_588 * 86_400_000_000
        );
        // i64::MAX microseconds is day 106,751,991 after the epoch and 14,454,775,807 µs;
        // one microsecond more is out of range.
        let (day, nanos) = (2_440_588 + 106_751_991, 14_454_775_807_999);
        assert_eq!(int96_micros(words(day, nanos)).unwrap(), i64::MAX);
        let e = int96_micros(words(day, nanos + 1)).unwrap_err();
        assert!(e.to_string().contains("outside the range"), "{e}");
        for day in [i32::MIN, i32::MAX, -200_000_000, 110_000_000] {
            assert!(int96_micros(words(day, 0)).is_err(), "{day}");
        }
        // The last value of int96_from_spark.parquet, as its bytes hold it: Spark's overflowed
        // Julian-day count of 290000-12-31T01:00:00+02:00.
        let w = [0xc7b9_6000, 0xffff_e26e, -105_862_232i32 as u32];
        assert_eq!(
            ((w[1] as i64) << 32) + w[0] as i64,
            -32_509_551_616_000,
            "nanoseconds of the day"
        );
        assert_eq!(int96_micros(w).unwrap(), 9_089_380_393_200_000_000);
    }

    /// Spark's INT96 writer (`DateTimeUtils.toJulianDay`): microseconds since Julian day 0 in
    /// a wrapping `i64`, split into day and nanoseconds of the day.
    fn spark_int96(micros: i64) -> [u32; 3] {
        let julian = micros.wrapping_add(2_440_588 * 86_400_000_000);
        let (day, us) = (julian / 86_400_000_000, julian % 86_400_000_000);
        let nanos = us * 1000;
        [nanos as u32, (nanos >> 32) as u32, day as i32 as u32]
    }

    proptest! {
        /// Where tamis reads a value, it is the parquet crate's (which wraps everywhere).
        #[test]
        fn int96_matches_the_parquet_crate_where_read(w in any::<[u32; 3]>()) {
            let mut v = Int96::new();
            v.set_data(w[0], w[1], w[2]);
            match int96_micros(w) {
                Ok(n) => prop_assert_eq!(n, v.to_micros()),
                Err(_) => {
                    let day = i128::from(w[2] as i32) - 2_440_588;
                    let nanos = i128::from(((w[1] as i64) << 32) + w[0] as i64);
                    let exact = day * 86_400_000_000 + nanos / 1000;
                    prop_assert!(exact > i128::from(i64::MAX) || exact < i128::from(i64::MIN));
                }
            }
        }

        /// Every timestamp Spark can write reads back as written.
        #[test]
        fn every_spark_timestamp_reads_back(micros in any::<i64>()) {
            prop_assert_eq!(int96_micros(spark_int96(micros)).unwrap(), micros);
        }
    }

    #[test]
    fn spark_extremes_read_back() {
        for micros in [
            i64::MIN,
            i64::MAX,
            i64::MAX - 2_440_588 * 86_400_000_000,
            0,
            -1,
        ] {
            assert_eq!(
                int96_micros(spark_int96(micros)).unwrap(),
                micros,
                "{micros}"
            );
        }
    }
}
