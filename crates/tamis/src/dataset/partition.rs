//! Hive-style partitions: `key=value` directories between the dataset root and each file.
//!
//! ```text
//! year=2024/country=FR/part-0.parquet
//!   └─ parse_hive_path      [("year", Some("2024")), ("country", Some("FR"))]
//!   └─ discover_partitions  one PartitionSchema for all files (inferred or given) and typed values
//!   └─ partition_leaves     a LeafColumn per key, indexed after the file's leaves, so the SQL
//!                           binder sees `year` and `country` like any other column
//!   └─ partition_verdict    partition leaves → True / False with the file's values: False skips
//!                           the file before its footer is read; the rest names file leaves only
//!   └─ partition_arrays     the constant Arrow columns appended to each batch of the file
//! ```
//!
//! Conventions follow Hive / pyarrow's `HivePartitioning`: segments are URI-decoded and the
//! value `__HIVE_DEFAULT_PARTITION__` stands for NULL.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    new_null_array, ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float32Array,
    Float64Array, Int16Array, Int32Array, Int64Array, Int8Array, StringArray,
    TimestampMicrosecondArray, UInt16Array, UInt32Array, UInt64Array, UInt8Array,
};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::DataType;
use chrono::NaiveDate;
use parquet::basic::{IntType, LogicalType, Repetition, Type as PhysicalType};
use parquet::schema::types::{SchemaDescriptor, Type};

use crate::error::{Error, Result};
use crate::expr::compare::Constant;
use crate::expr::eval::eval_dense;
use crate::expr::{Predicate, Verdict};
use crate::schema::{leaf_columns, LeafColumn};
use crate::values::{ByteArrays, Values};

/// The directory value Hive (and pyarrow, Spark, DataFusion) write for a NULL partition value.
pub(crate) const HIVE_NULL: &str = "__HIVE_DEFAULT_PARTITION__";

/// The `key=value` directory segments of `relative_path` (relative to the dataset root, `/`
/// separated), in path order. The last segment is the file name and is never a partition.
/// Keys and values are percent-decoded (invalid UTF-8 after decoding is replaced, never an
/// error); [`HIVE_NULL`] becomes `None`. Segments without `=` or with an empty key are ignored.
pub(crate) fn parse_hive_path(relative_path: &str) -> Vec<(String, Option<String>)> {
    let mut segments: Vec<&str> = relative_path.split('/').collect();
    segments.pop(); // the file name
    segments
        .into_iter()
        .filter_map(|segment| {
            let (key, value) = segment.split_once('=')?;
            if key.is_empty() {
                return None;
            }
            let decode = |s: &str| {
                percent_encoding::percent_decode_str(s)
                    .decode_utf8_lossy()
                    .into_owned()
            };
            let value = decode(value);
            Some((decode(key), (value != HIVE_NULL).then_some(value)))
        })
        .collect()
}

/// One typed partition value. Integers of every width are held as `Int` / `UInt` (the width is
/// in the [`PartitionSchema`]); dates as days since 1970-01-01. Floats, timestamps
/// (microseconds since the epoch, UTC for a column with a time zone) and decimals (the
/// unscaled integer) come from tables, whose metadata types its partition columns.
#[derive(Debug, Clone, PartialEq)]
pub enum PartitionValue {
    Null,
    Int(i64),
    UInt(u64),
    Date(i32),
    Str(String),
    Bool(bool),
    Float(f64),
    Timestamp(i64),
    Decimal(i128),
}

/// The partition columns of a dataset: names in path order and their Arrow types.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartitionSchema {
    pub fields: Vec<(String, DataType)>,
}

/// The partition schema and, per file (in the order given), one value per field.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Partitions {
    pub schema: PartitionSchema,
    pub values: Vec<Vec<PartitionValue>>,
}

/// The Arrow types a partition column may have.
pub(crate) fn is_partition_type(t: &DataType) -> bool {
    use DataType as D;
    matches!(
        t,
        D::Int8
            | D::Int16
            | D::Int32
            | D::Int64
            | D::UInt8
            | D::UInt16
            | D::UInt32
            | D::UInt64
            | D::Utf8
            | D::Date32
            | D::Boolean
    )
}

/// The Arrow types a table's partition column may have: those of paths, and floats,
/// microsecond timestamps and decimals, which a table's metadata types.
fn is_table_partition_type(t: &DataType) -> bool {
    use DataType as D;
    is_partition_type(t)
        || matches!(
            t,
            D::Float32
                | D::Float64
                | D::Timestamp(arrow::datatypes::TimeUnit::Microsecond, _)
                | D::Decimal128(1..=38, _)
        )
}

/// Parses the partition paths of every file (`relative_paths`, relative to the dataset root) into
/// one schema and typed values.
///
/// Every file must have the same keys in the same order (a dataset whose files disagree is more
/// likely a wrong root than a real layout). `explicit` gives the type of some or all keys by name;
/// the others are inferred from all their values: Int64 if every non-null value is an integer
/// written canonically (so `007` or `+7`, which would not round-trip, stay strings), else Date32
/// if every one is `YYYY-MM-DD`, else Utf8. A key whose values are all NULL is Utf8.
pub(crate) fn discover_partitions(
    relative_paths: &[&str],
    explicit: &[(String, DataType)],
) -> Result<Partitions> {
    let parsed: Vec<Vec<(String, Option<String>)>> =
        relative_paths.iter().map(|p| parse_hive_path(p)).collect();
    let keys: Vec<&str> = parsed
        .first()
        .map(|kv| kv.iter().map(|(k, _)| k.as_str()).collect())
        .unwrap_or_default();
    for (path, kv) in relative_paths.iter().zip(&parsed) {
        if let Some(dup) = (1..kv.len()).find(|&i| kv[..i].iter().any(|(k, _)| *k == kv[i].0)) {
            return Err(Error::invalid(format!(
                "partition key '{}' appears twice in path {path}",
                kv[dup].0
            )));
        }
        if !kv.iter().map(|(k, _)| k.as_str()).eq(keys.iter().copied()) {
            let names = |kv: &[(String, Option<String>)]| {
                kv.iter()
                    .map(|(k, _)| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(Error::invalid(format!(
                "files disagree on partition keys: {} has ({}) but {path} has ({})",
                relative_paths[0],
                names(&parsed[0]),
                names(kv)
            )));
        }
    }
    for (name, t) in explicit {
        if !keys.contains(&name.as_str()) {
            return Err(Error::invalid(format!(
                "partition column '{name}' was given a type but no path has the key '{name}'"
            )));
        }
        if !is_partition_type(t) {
            return Err(Error::invalid(format!(
                "partition column '{name}' cannot be {t}: use an integer type, Utf8, Date32 or Boolean"
            )));
        }
    }
    let given: HashMap<&str, &DataType> = explicit.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let fields: Vec<(String, DataType)> = keys
        .iter()
        .enumerate()
        .map(|(i, &key)| {
            let t = match given.get(key) {
                Some(&t) => t.clone(),
                None => infer_type(parsed.iter().filter_map(|kv| kv[i].1.as_deref())),
            };
            (key.to_string(), t)
        })
        .collect();
    let values = relative_paths
        .iter()
        .zip(&parsed)
        .map(|(path, kv)| {
            kv.iter()
                .zip(&fields)
                .map(|((key, raw), (_, t))| match raw {
                    None => Ok(PartitionValue::Null),
                    Some(raw) => parse_value(raw, t).ok_or_else(|| {
                        Error::invalid(format!(
                            "partition value '{raw}' of key '{key}' in path {path} is not a valid {t}"
                        ))
                    }),
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Partitions {
        schema: PartitionSchema { fields },
        values,
    })
}

/// A table's partition columns and each file's values, typed (the values are the metadata's
/// text, as a Delta log writes them: dates `YYYY-MM-DD`, booleans `true` / `false`).
pub(crate) fn table_partitions(table: &crate::table::TableSnapshot) -> Result<Partitions> {
    for (name, t) in &table.partitions {
        if !is_table_partition_type(t) {
            return Err(Error::unsupported(format!(
                "partition column '{name}' is {t}; tamis reads integer, float, decimal, \
                 string, date, timestamp and boolean partition columns so far"
            ))
            .in_file(&table.name));
        }
    }
    let values = (table.files.iter())
        .map(|f| {
            (f.partition.iter().zip(&table.partitions))
                .map(|(raw, (name, t))| match raw {
                    None => Ok(PartitionValue::Null),
                    Some(raw) => parse_value(raw, t).ok_or_else(|| {
                        Error::corrupt(format!(
                            "the table gives partition column '{name}' the value '{raw}', \
                             which is not a {t}"
                        ))
                        .in_file(f.file.location())
                    }),
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Partitions {
        schema: PartitionSchema {
            fields: table.partitions.clone(),
        },
        values,
    })
}

/// An integer written the one way it would be printed: optional `-`, no leading zeros, no `-0`.
fn canonical_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let ok = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" && digits.len() == s.len() || !digits.starts_with('0'));
    ok.then(|| s.parse().ok()).flatten()
}

/// `YYYY-MM-DD` exactly (chrono alone would accept `2024-1-5`), as days since 1970-01-01.
fn iso_date(s: &str) -> Option<i32> {
    let b = s.as_bytes();
    let shape = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if !shape {
        return None;
    }
    let date = NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()?;
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1)?;
    i32::try_from((date - epoch).num_days()).ok()
}

fn infer_type<'a>(values: impl Iterator<Item = &'a str> + Clone) -> DataType {
    let mut any = values.clone().peekable();
    if any.peek().is_none() {
        DataType::Utf8
    } else if values.clone().all(|v| canonical_int(v).is_some()) {
        DataType::Int64
    } else if values.clone().all(|v| iso_date(v).is_some()) {
        DataType::Date32
    } else {
        DataType::Utf8
    }
}

/// The Parquet type a decimal of `precision` digits is held in, as writers choose it.
fn decimal_physical(precision: u8) -> PhysicalType {
    match precision {
        0..=9 => PhysicalType::INT32,
        10..=18 => PhysicalType::INT64,
        _ => PhysicalType::FIXED_LEN_BYTE_ARRAY,
    }
}

/// A non-null path value as `t`; `None` if it is not one. With an explicit type the integer
/// syntax is Rust's (`+7` and `007` are 7): the user said it is a number. Floats, decimals and
/// timestamps are read as a Delta log writes them (Java's `NaN`, `Infinity`, exponents;
/// `YYYY-MM-DD HH:MM:SS[.ffffff]`, UTC on a column with a time zone, or ISO 8601 with an
/// offset), decimals exactly (a value with more digits than the type holds is not one).
fn parse_value(raw: &str, t: &DataType) -> Option<PartitionValue> {
    use crate::expr::{instant_micros, parse_f64, parse_number, parse_timestamp};
    use DataType as D;
    use PartitionValue as V;
    Some(match t {
        D::Float32 => V::Float(parse_f64(raw)? as f32 as f64),
        D::Float64 => V::Float(parse_f64(raw)?),
        D::Timestamp(arrow::datatypes::TimeUnit::Microsecond, zone) => {
            let (at, offset) = parse_timestamp(raw)?;
            // A wall-clock column given an instant: not a value of it.
            V::Timestamp(instant_micros(&at, offset, zone.is_some())?)
        }
        &D::Decimal128(precision, scale) => {
            let (negative, digits, exponent) = parse_number(raw)?;
            // value = digits × 10^exponent; unscaled = value × 10^scale, exactly.
            let shift = exponent.checked_add(i64::from(scale))?;
            let mut unscaled: i128 = 0;
            let kept = match shift {
                s if s >= 0 => digits.len(),
                s => {
                    let cut = digits.len().checked_sub(usize::try_from(-s).ok()?)?;
                    if digits[cut..].iter().any(|&d| d != 0) {
                        return None;
                    }
                    cut
                }
            };
            for &d in &digits[..kept] {
                unscaled = unscaled.checked_mul(10)?.checked_add(i128::from(d))?;
            }
            for _ in 0..shift.max(0) {
                unscaled = unscaled.checked_mul(10)?;
            }
            if unscaled >= 10i128.checked_pow(u32::from(precision))? {
                return None;
            }
            V::Decimal(if negative { -unscaled } else { unscaled })
        }
        D::Int8 => V::Int(raw.parse::<i8>().ok()?.into()),
        D::Int16 => V::Int(raw.parse::<i16>().ok()?.into()),
        D::Int32 => V::Int(raw.parse::<i32>().ok()?.into()),
        D::Int64 => V::Int(raw.parse::<i64>().ok()?),
        D::UInt8 => V::UInt(raw.parse::<u8>().ok()?.into()),
        D::UInt16 => V::UInt(raw.parse::<u16>().ok()?.into()),
        D::UInt32 => V::UInt(raw.parse::<u32>().ok()?.into()),
        D::UInt64 => V::UInt(raw.parse::<u64>().ok()?),
        D::Date32 => V::Date(iso_date(raw)?),
        D::Boolean if raw.eq_ignore_ascii_case("true") => V::Bool(true),
        D::Boolean if raw.eq_ignore_ascii_case("false") => V::Bool(false),
        D::Utf8 => V::Str(raw.to_string()),
        _ => return None,
    })
}

/// The value as a constant Arrow array of `rows` rows of type `t` (the value's field type).
pub(crate) fn constant_array(
    value: &PartitionValue,
    t: &DataType,
    rows: usize,
) -> Result<ArrayRef> {
    use DataType as D;
    use PartitionValue as V;
    let narrow = || Error::internal(format!("partition value {value:?} does not fit {t}"));
    Ok(match (value, t) {
        (V::Null, _) => new_null_array(t, rows),
        (V::Int(v), D::Int8) => Arc::new(Int8Array::from_value(
            (*v).try_into().map_err(|_| narrow())?,
            rows,
        )),
        (V::Int(v), D::Int16) => Arc::new(Int16Array::from_value(
            (*v).try_into().map_err(|_| narrow())?,
            rows,
        )),
        (V::Int(v), D::Int32) => Arc::new(Int32Array::from_value(
            (*v).try_into().map_err(|_| narrow())?,
            rows,
        )),
        (V::Int(v), D::Int64) => Arc::new(Int64Array::from_value(*v, rows)),
        (V::UInt(v), D::UInt8) => Arc::new(UInt8Array::from_value(
            (*v).try_into().map_err(|_| narrow())?,
            rows,
        )),
        (V::UInt(v), D::UInt16) => Arc::new(UInt16Array::from_value(
            (*v).try_into().map_err(|_| narrow())?,
            rows,
        )),
        (V::UInt(v), D::UInt32) => Arc::new(UInt32Array::from_value(
            (*v).try_into().map_err(|_| narrow())?,
            rows,
        )),
        (V::UInt(v), D::UInt64) => Arc::new(UInt64Array::from_value(*v, rows)),
        (V::Date(d), D::Date32) => Arc::new(Date32Array::from_value(*d, rows)),
        (V::Float(v), D::Float32) => Arc::new(Float32Array::from_value(*v as f32, rows)),
        (V::Float(v), D::Float64) => Arc::new(Float64Array::from_value(*v, rows)),
        (V::Timestamp(v), D::Timestamp(arrow::datatypes::TimeUnit::Microsecond, zone)) => Arc::new(
            TimestampMicrosecondArray::from_value(*v, rows).with_timezone_opt(zone.clone()),
        ),
        (V::Decimal(v), &D::Decimal128(precision, scale)) => Arc::new(
            Decimal128Array::from_value(*v, rows)
                .with_precision_and_scale(precision, scale)
                .map_err(|_| narrow())?,
        ),
        (V::Str(s), D::Utf8) => Arc::new(StringArray::new_repeated(s, rows)),
        (V::Bool(b), D::Boolean) => Arc::new(BooleanArray::new(
            if *b {
                BooleanBuffer::new_set(rows)
            } else {
                BooleanBuffer::new_unset(rows)
            },
            None,
        )),
        _ => return Err(narrow()),
    })
}

/// One file's partition columns as constant arrays of `rows` rows, in schema order.
#[cfg(test)]
pub(crate) fn partition_arrays(
    schema: &PartitionSchema,
    values: &[PartitionValue],
    rows: usize,
) -> Result<Vec<ArrayRef>> {
    schema
        .fields
        .iter()
        .zip(values)
        .map(|((_, t), v)| constant_array(v, t, rows))
        .collect()
}

/// Leaf columns for the partition keys, so predicates bind to them like file columns: leaf `k`
/// gets index `first_index + k` and root `first_root + k`. Pass `first_index` = the number of
/// leaves they are appended to (predicates look leaves up by position) and `first_root` = the
/// number of top-level fields before them. Each leaf is an optional flat column with the
/// Parquet type the Arrow type maps to, so literals are converted exactly as for a file column.
pub(crate) fn partition_leaves(
    schema: &PartitionSchema,
    first_index: usize,
    first_root: usize,
) -> Result<Vec<LeafColumn>> {
    schema
        .fields
        .iter()
        .enumerate()
        .map(|(k, (name, t))| {
            let int = |bits: i8, signed: bool| {
                let physical = if bits == 64 {
                    PhysicalType::INT64
                } else {
                    PhysicalType::INT32
                };
                let logical = LogicalType::Integer(IntType {
                    bit_width: bits,
                    is_signed: signed,
                });
                (physical, Some(logical))
            };
            let (physical, logical) = match t {
                DataType::Int8 => int(8, true),
                DataType::Int16 => int(16, true),
                DataType::Int32 => int(32, true),
                DataType::Int64 => int(64, true),
                DataType::UInt8 => int(8, false),
                DataType::UInt16 => int(16, false),
                DataType::UInt32 => int(32, false),
                DataType::UInt64 => int(64, false),
                DataType::Date32 => (PhysicalType::INT32, Some(LogicalType::Date)),
                DataType::Utf8 => (PhysicalType::BYTE_ARRAY, Some(LogicalType::String)),
                DataType::Boolean => (PhysicalType::BOOLEAN, None),
                DataType::Float32 => (PhysicalType::FLOAT, None),
                DataType::Float64 => (PhysicalType::DOUBLE, None),
                DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, zone) => (
                    PhysicalType::INT64,
                    Some(LogicalType::Timestamp(parquet::basic::TimestampType {
                        is_adjusted_to_u_t_c: zone.is_some(),
                        unit: parquet::basic::TimeUnit::MICROS,
                    })),
                ),
                &DataType::Decimal128(precision, scale) => (
                    decimal_physical(precision),
                    Some(LogicalType::Decimal(parquet::basic::DecimalType {
                        scale: i32::from(scale),
                        precision: i32::from(precision),
                    })),
                ),
                other => {
                    return Err(Error::invalid(format!(
                        "partition column '{name}' cannot be {other}"
                    )))
                }
            };
            let mut leaf = Type::primitive_type_builder(name, physical)
                .with_repetition(Repetition::OPTIONAL)
                .with_logical_type(logical);
            if let &DataType::Decimal128(precision, scale) = t {
                leaf = (leaf.with_precision(i32::from(precision))).with_scale(i32::from(scale));
                if physical == PhysicalType::FIXED_LEN_BYTE_ARRAY {
                    leaf = leaf.with_length(16);
                }
            }
            let leaf = leaf.build()?;
            let root = Type::group_type_builder("partition")
                .with_fields(vec![Arc::new(leaf)])
                .build()?;
            let mut column = leaf_columns(&SchemaDescriptor::new(Arc::new(root)))
                .pop()
                .ok_or_else(|| Error::internal("partition leaf schema without a leaf"))?;
            column.index = first_index + k;
            column.root = first_root + k;
            Ok(column)
        })
        .collect()
}

/// A non-null value as the one-entry dense vector a dictionary of that column would decode to,
/// so [`eval_dense`] decides leaves on it with the engine's own comparison semantics.
fn one_entry(value: &PartitionValue, column: &LeafColumn) -> Option<Values> {
    use PartitionValue as V;
    Some(match (value, column.physical) {
        (V::Int(v), PhysicalType::INT32) => Values::I32(vec![i32::try_from(*v).ok()?]),
        (V::Int(v), PhysicalType::INT64) => Values::I64(vec![*v]),
        // Unsigned columns hold the bit pattern, as in Parquet.
        (V::UInt(v), PhysicalType::INT32) => Values::I32(vec![u32::try_from(*v).ok()? as i32]),
        (V::UInt(v), PhysicalType::INT64) => Values::I64(vec![*v as i64]),
        (V::Date(d), PhysicalType::INT32) => Values::I32(vec![*d]),
        (V::Float(v), PhysicalType::FLOAT) => Values::F32(vec![*v as f32]),
        (V::Float(v), PhysicalType::DOUBLE) => Values::F64(vec![*v]),
        (V::Timestamp(v), PhysicalType::INT64) => Values::I64(vec![*v]),
        (V::Decimal(v), PhysicalType::INT32) => Values::I32(vec![i32::try_from(*v).ok()?]),
        (V::Decimal(v), PhysicalType::INT64) => Values::I64(vec![i64::try_from(*v).ok()?]),
        // Big-endian two's complement, as Parquet stores decimals in fixed-length bytes.
        (V::Decimal(v), PhysicalType::FIXED_LEN_BYTE_ARRAY) => {
            let mut bytes = ByteArrays::new();
            bytes.push(&v.to_be_bytes());
            Values::Bytes(bytes)
        }
        (V::Bool(b), PhysicalType::BOOLEAN) => Values::Bool(vec![*b]),
        (V::Str(s), PhysicalType::BYTE_ARRAY) => {
            let mut bytes = ByteArrays::new();
            bytes.push(s.as_bytes());
            Values::Bytes(bytes)
        }
        _ => return None,
    })
}

/// `pred` with every leaf on a constant column decided by that column's value: the leaves with
/// index `first_leaf + k` are `leaves[k]` and have value `values[k]` in every row of the file.
///
/// `False` means the file holds no matching row (skip it, before reading its footer); otherwise
/// the result names only leaves below `first_leaf`, i.e. the file's own columns: a comparison
/// between columns takes a constant side's value (see [`crate::expr::compare::Comparison::fold`]). Works for any
/// column that is constant in a file: partition keys, and a column missing from the file (value
/// [`PartitionValue::Null`]).
pub(crate) fn partition_verdict(
    pred: &Predicate,
    first_leaf: usize,
    leaves: &[LeafColumn],
    values: &[PartitionValue],
) -> Result<Predicate> {
    let mut error = None;
    // Comparisons between columns: a constant side becomes its value (NULL: no row matches).
    let constant = |c: usize| -> Result<Option<Option<Constant>>> {
        let Some(k) = c.checked_sub(first_leaf) else {
            return Ok(None);
        };
        let (Some(column), Some(value)) = (leaves.get(k), values.get(k)) else {
            return Err(Error::internal(format!(
                "comparison names leaf {c} but there are {} constant columns from leaf {first_leaf}",
                leaves.len().min(values.len())
            )));
        };
        if *value == PartitionValue::Null {
            return Ok(Some(None));
        }
        let value = one_entry(value, column).ok_or_else(|| {
            Error::internal(format!(
                "partition value {value:?} does not fit column '{}'",
                column.path
            ))
        })?;
        Ok(Some(Some(Constant {
            column: column.clone(),
            value,
        })))
    };
    let pred = pred.map_comparisons(&mut |c| {
        let mut failed = None;
        let folded = c.fold(&mut |leaf| {
            constant(leaf).unwrap_or_else(|e| {
                failed.get_or_insert(e);
                None
            })
        })?;
        match failed {
            Some(e) => Err(e),
            None => Ok(folded),
        }
    })?;
    let simplified = pred.simplify(&mut |leaf| {
        let Some(k) = leaf.column.checked_sub(first_leaf) else {
            return Verdict::Unknown;
        };
        let (Some(column), Some(value)) = (leaves.get(k), values.get(k)) else {
            error.get_or_insert_with(|| {
                Error::internal(format!(
                    "predicate names leaf {} but there are {} constant columns from leaf {first_leaf}",
                    leaf.column,
                    leaves.len().min(values.len())
                ))
            });
            return Verdict::Unknown;
        };
        let matches = if *value == PartitionValue::Null {
            Ok(leaf.op.accepts_null())
        } else {
            match one_entry(value, column) {
                Some(entry) => eval_dense(&leaf.op, column, &entry).map(|bits| bits.get(0)),
                None => Err(Error::internal(format!(
                    "partition value {value:?} does not fit column '{}'",
                    column.path
                ))),
            }
        };
        match matches {
            Ok(true) => Verdict::AllMatch,
            Ok(false) => Verdict::NoneMatch,
            Err(e) => {
                error.get_or_insert(e.in_column(&column.path));
                Verdict::Unknown
            }
        }
    });
    match error {
        Some(e) => Err(e),
        None => Ok(simplified),
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Date32Type, Int64Type, UInt64Type};
    use parquet::schema::parser::parse_message_type;

    use super::*;

    #[test]
    fn table_partition_values_of_floats_decimals_and_timestamps() {
        use arrow::datatypes::TimeUnit::Microsecond;
        use PartitionValue as V;
        let f64t = DataType::Float64;
        assert_eq!(parse_value("1.0E10", &f64t), Some(V::Float(1e10)));
        assert_eq!(
            parse_value("-Infinity", &f64t),
            Some(V::Float(f64::NEG_INFINITY))
        );
        assert!(matches!(parse_value("NaN", &f64t), Some(V::Float(x)) if x.is_nan()));
        assert_eq!(
            parse_value("0.1", &DataType::Float32),
            Some(V::Float(0.1f32 as f64))
        );
        assert_eq!(parse_value("one", &f64t), None);
        let dec = DataType::Decimal128(5, 2);
        assert_eq!(parse_value("12.30", &dec), Some(V::Decimal(1230)));
        assert_eq!(parse_value("-12.3", &dec), Some(V::Decimal(-1230)));
        assert_eq!(parse_value("1.2E+1", &dec), Some(V::Decimal(1200)));
        assert_eq!(parse_value("5", &dec), Some(V::Decimal(500)));
        // Not exact at the scale, or more digits than the precision: not a value of the type.
        assert_eq!(parse_value("12.345", &dec), None);
        assert_eq!(parse_value("1000.00", &dec), None);
        assert_eq!(parse_value("999.99", &dec), Some(V::Decimal(99999)));
        let utc = DataType::Timestamp(Microsecond, Some("UTC".into()));
        let wall = DataType::Timestamp(Microsecond, None);
        let at = 1_709_289_000_000_000; // 2024-03-01 10:30:00 UTC
        assert_eq!(
            parse_value("2024-03-01 10:30:00", &utc),
            Some(V::Timestamp(at))
        );
        assert_eq!(
            parse_value("2024-03-01 10:30:00.000001", &wall),
            Some(V::Timestamp(at + 1))
        );
        assert_eq!(
            parse_value("2024-03-01T10:30:00.000000Z", &utc),
            Some(V::Timestamp(at))
        );
        assert_eq!(
            parse_value("2024-03-01T12:30:00+02:00", &utc),
            Some(V::Timestamp(at))
        );
        assert_eq!(parse_value("2024-03-01T12:30:00+02:00", &wall), None);
        // As arrays, and as the leaves predicates bind to.
        let schema = PartitionSchema {
            fields: vec![
                ("f".into(), f64t),
                ("d".into(), DataType::Decimal128(30, 2)),
                ("t".into(), utc),
            ],
        };
        let values = [V::Float(1.5), V::Decimal(-1230), V::Timestamp(at)];
        let arrays = partition_arrays(&schema, &values, 3).unwrap();
        assert_eq!(arrays[1].data_type(), &DataType::Decimal128(30, 2));
        let leaves = partition_leaves(&schema, 0, 0).unwrap();
        for (leaf, value) in leaves.iter().zip(&values) {
            assert!(
                one_entry(value, leaf).is_some(),
                "{value:?} on {}",
                leaf.path
            );
        }
    }
    use crate::error::ErrorKind;
    use crate::expr::{parse_predicate, render::render};
    use crate::expr::{CmpOp, Leaf, LeafOp, Scalar};

    fn kv(k: &str, v: Option<&str>) -> (String, Option<String>) {
        (k.to_string(), v.map(str::to_string))
    }

    #[test]
    fn parses_key_value_directories() {
        assert_eq!(
            parse_hive_path("year=2024/month=01/part-0.parquet"),
            vec![kv("year", Some("2024")), kv("month", Some("01"))]
        );
        // Not partitions: the file name, segments without '=', an empty key.
        assert_eq!(
            parse_hive_path("raw/x=1/=2/a=b.parquet"),
            vec![kv("x", Some("1"))]
        );
        assert_eq!(parse_hive_path("part-0.parquet"), vec![]);
        assert_eq!(parse_hive_path(""), vec![]);
    }

    #[test]
    fn decodes_values_and_nulls() {
        assert_eq!(
            parse_hive_path("s=a%2Fb/t=x%3Dy/u=/v=__HIVE_DEFAULT_PARTITION__/f.parquet"),
            vec![
                kv("s", Some("a/b")),
                kv("t", Some("x=y")),
                kv("u", Some("")),
                kv("v", None),
            ]
        );
        // Only the first '=' splits; '+' is not a space (URI, not form encoding); keys are
        // decoded too; a stray '%' stays as written; bad UTF-8 is replaced.
        assert_eq!(
            parse_hive_path("k=a=b/p=1+1/my%20key=%E2%82%AC/q=50%/r=%FF/f.parquet"),
            vec![
                kv("k", Some("a=b")),
                kv("p", Some("1+1")),
                kv("my key", Some("€")),
                kv("q", Some("50%")),
                kv("r", Some("\u{FFFD}")),
            ]
        );
        // An encoded null marker is still the null marker.
        assert_eq!(
            parse_hive_path("v=__HIVE%5FDEFAULT_PARTITION__/f.parquet"),
            vec![kv("v", None)]
        );
    }

    fn discover(paths: &[&str]) -> Partitions {
        discover_partitions(paths, &[]).unwrap_or_else(|e| panic!("{paths:?}: {e}"))
    }

    #[test]
    fn infers_types() {
        let p = discover(&[
            "i=-12/d=2024-02-29/s=007/e=/n=__HIVE_DEFAULT_PARTITION__/z=0/f.parquet",
            "i=__HIVE_DEFAULT_PARTITION__/d=1969-12-31/s=7/e=x/n=__HIVE_DEFAULT_PARTITION__/z=9223372036854775807/g.parquet",
        ]);
        assert_eq!(
            p.schema.fields,
            vec![
                ("i".to_string(), DataType::Int64),
                ("d".to_string(), DataType::Date32),
                // `007` would not round-trip as an integer.
                ("s".to_string(), DataType::Utf8),
                // The empty string is a string.
                ("e".to_string(), DataType::Utf8),
                // Nothing to infer from.
                ("n".to_string(), DataType::Utf8),
                ("z".to_string(), DataType::Int64),
            ]
        );
        use PartitionValue as V;
        assert_eq!(
            p.values,
            vec![
                vec![
                    V::Int(-12),
                    V::Date(19782),
                    V::Str("007".into()),
                    V::Str("".into()),
                    V::Null,
                    V::Int(0),
                ],
                vec![
                    V::Null,
                    V::Date(-1),
                    V::Str("7".into()),
                    V::Str("x".into()),
                    V::Null,
                    V::Int(i64::MAX),
                ],
            ]
        );
    }

    #[test]
    fn non_canonical_or_mixed_values_fall_back_to_utf8() {
        for (a, b) in [
            ("1", "+1"),
            ("1", "-0"),
            ("1", "01"),
            ("1", "1.5"),
            ("1", "9223372036854775808"), // beyond i64
            ("1", "2024-01-01"),          // int and date
            ("2024-01-01", "2024-1-01"),  // not zero-padded
            ("2024-01-01", "2023-02-29"), // no such day
            ("2024-01-01", "2024.01.01"),
            ("1", " 1"),
        ] {
            let p = discover(&[&format!("k={a}/f.parquet"), &format!("k={b}/g.parquet")]);
            assert_eq!(p.schema.fields[0].1, DataType::Utf8, "{a} {b}");
            assert_eq!(
                p.values,
                vec![
                    vec![PartitionValue::Str(a.into())],
                    vec![PartitionValue::Str(b.into())]
                ],
            );
        }
        assert_eq!(canonical_int("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(canonical_int("-"), None);
        assert_eq!(canonical_int(""), None);
        assert_eq!(iso_date("1970-01-01"), Some(0));
    }

    #[test]
    fn no_partitions() {
        let p = discover(&["a.parquet", "sub/b.parquet"]);
        assert_eq!(p.schema.fields, vec![]);
        assert_eq!(p.values, vec![Vec::<PartitionValue>::new(), vec![]]);
        assert_eq!(discover(&[]).values.len(), 0);
    }

    #[test]
    fn files_must_agree_on_keys() {
        for (paths, msg) in [
            (
                ["a=1/b=2/f.parquet", "b=2/a=1/g.parquet"],
                "files disagree on partition keys: a=1/b=2/f.parquet has (a, b) but b=2/a=1/g.parquet has (b, a)",
            ),
            (
                ["a=1/f.parquet", "a=1/b=2/g.parquet"],
                "files disagree on partition keys: a=1/f.parquet has (a) but a=1/b=2/g.parquet has (a, b)",
            ),
            (
                ["a=1/f.parquet", "g.parquet"],
                "files disagree on partition keys: a=1/f.parquet has (a) but g.parquet has ()",
            ),
            (
                ["a=1/f.parquet", "a=1/a=2/g.parquet"],
                "partition key 'a' appears twice in path a=1/a=2/g.parquet",
            ),
        ] {
            let e = discover_partitions(&paths, &[]).unwrap_err();
            assert_eq!(e.kind, ErrorKind::InvalidArgument);
            assert_eq!(e.message, msg);
        }
    }

    #[test]
    fn explicit_types() {
        let paths = [
            "y=2024/m=007/ok=TRUE/s=12/u=18446744073709551615/f.parquet",
            "y=__HIVE_DEFAULT_PARTITION__/m=+8/ok=false/s=3/u=0/g.parquet",
        ];
        let explicit = vec![
            ("m".to_string(), DataType::Int8),
            ("ok".to_string(), DataType::Boolean),
            ("s".to_string(), DataType::Utf8),
            ("u".to_string(), DataType::UInt64),
        ];
        let p = discover_partitions(&paths, &explicit).unwrap();
        assert_eq!(
            p.schema.fields,
            vec![
                ("y".to_string(), DataType::Int64), // not given: inferred
                ("m".to_string(), DataType::Int8),
                ("ok".to_string(), DataType::Boolean),
                ("s".to_string(), DataType::Utf8),
                ("u".to_string(), DataType::UInt64),
            ]
        );
        use PartitionValue as V;
        assert_eq!(
            p.values,
            vec![
                vec![
                    V::Int(2024),
                    V::Int(7),
                    V::Bool(true),
                    V::Str("12".into()),
                    V::UInt(u64::MAX)
                ],
                vec![
                    V::Null,
                    V::Int(8),
                    V::Bool(false),
                    V::Str("3".into()),
                    V::UInt(0)
                ],
            ]
        );
    }

    #[test]
    fn explicit_type_errors() {
        let paths = ["k=1/f.parquet", "k=300/g.parquet"];
        let err = |t: DataType, name: &str| {
            let e = discover_partitions(&paths, &[(name.to_string(), t)]).unwrap_err();
            assert_eq!(e.kind, ErrorKind::InvalidArgument);
            e.message
        };
        assert_eq!(
            err(DataType::Int8, "k"),
            "partition value '300' of key 'k' in path k=300/g.parquet is not a valid Int8"
        );
        assert_eq!(
            err(DataType::Date32, "k"),
            "partition value '1' of key 'k' in path k=1/f.parquet is not a valid Date32"
        );
        assert_eq!(
            err(DataType::Boolean, "k"),
            "partition value '1' of key 'k' in path k=1/f.parquet is not a valid Boolean"
        );
        assert_eq!(
            err(DataType::Float64, "k"),
            "partition column 'k' cannot be Float64: use an integer type, Utf8, Date32 or Boolean"
        );
        assert_eq!(
            err(DataType::Int64, "K"),
            "partition column 'K' was given a type but no path has the key 'K'"
        );
        assert!(discover_partitions(&paths, &[("k".into(), DataType::UInt16)]).is_ok());
    }

    #[test]
    fn constant_arrays() {
        let schema = PartitionSchema {
            fields: vec![
                ("i".into(), DataType::Int64),
                ("s".into(), DataType::Utf8),
                ("d".into(), DataType::Date32),
                ("b".into(), DataType::Boolean),
                ("u".into(), DataType::UInt64),
                ("n".into(), DataType::Int16),
                ("e".into(), DataType::Utf8),
            ],
        };
        use PartitionValue as V;
        let values = [
            V::Int(-3),
            V::Str("a/b".into()),
            V::Date(19782),
            V::Bool(true),
            V::UInt(u64::MAX),
            V::Null,
            V::Str(String::new()),
        ];
        let arrays = partition_arrays(&schema, &values, 3).unwrap();
        assert_eq!(arrays.len(), 7);
        for (a, (_, t)) in arrays.iter().zip(&schema.fields) {
            assert_eq!(a.len(), 3);
            assert_eq!(a.data_type(), t);
        }
        assert_eq!(
            arrays[0].as_primitive::<Int64Type>().values(),
            &[-3, -3, -3]
        );
        assert_eq!(arrays[0].null_count(), 0);
        let s: Vec<_> = arrays[1].as_string::<i32>().iter().collect();
        assert_eq!(s, vec![Some("a/b"); 3]);
        assert_eq!(arrays[2].as_primitive::<Date32Type>().values(), &[19782; 3]);
        let b: Vec<_> = arrays[3].as_boolean().iter().collect();
        assert_eq!(b, vec![Some(true); 3]);
        assert_eq!(
            arrays[4].as_primitive::<UInt64Type>().values(),
            &[u64::MAX; 3]
        );
        assert_eq!(arrays[5].null_count(), 3);
        let e: Vec<_> = arrays[6].as_string::<i32>().iter().collect();
        assert_eq!(e, vec![Some(""); 3]);

        let f = constant_array(&V::Bool(false), &DataType::Boolean, 2).unwrap();
        assert_eq!(
            f.as_boolean().iter().collect::<Vec<_>>(),
            vec![Some(false); 2]
        );
        assert_eq!(
            constant_array(&V::Int(1), &DataType::Int8, 0)
                .unwrap()
                .len(),
            0
        );
        // A value that does not fit its type is a bug in the caller.
        let e = constant_array(&V::Int(300), &DataType::Int8, 1).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Internal);
        assert!(constant_array(&V::Str("x".into()), &DataType::Int64, 1).is_err());
    }

    /// A file with columns `x` (int64) and `s` (string), and the dataset's partition leaves
    /// appended after them.
    fn dataset_leaves(partitions: &PartitionSchema) -> (Vec<LeafColumn>, usize) {
        let msg = "message f { optional int64 x; optional binary s (STRING); }";
        let file = SchemaDescriptor::new(Arc::new(parse_message_type(msg).unwrap()));
        let mut leaves = leaf_columns(&file);
        let first = leaves.len();
        leaves.extend(
            partition_leaves(partitions, first, file.root_schema().get_fields().len()).unwrap(),
        );
        (leaves, first)
    }

    fn schema() -> PartitionSchema {
        PartitionSchema {
            fields: vec![
                ("year".into(), DataType::Int64),
                ("country".into(), DataType::Utf8),
                ("day".into(), DataType::Date32),
                ("small".into(), DataType::Int8),
                ("big".into(), DataType::UInt64),
                ("flag".into(), DataType::Boolean),
            ],
        }
    }

    fn values(year: Option<i64>, country: Option<&str>) -> Vec<PartitionValue> {
        vec![
            year.map_or(PartitionValue::Null, PartitionValue::Int),
            country.map_or(PartitionValue::Null, |c| PartitionValue::Str(c.into())),
            PartitionValue::Date(19782), // 2024-02-29
            PartitionValue::Int(-5),
            PartitionValue::UInt(u64::MAX),
            PartitionValue::Bool(true),
        ]
    }

    #[test]
    fn float_decimal_and_timestamp_partitions_decide_filters() {
        use arrow::datatypes::TimeUnit::Microsecond;
        use PartitionValue as V;
        let schema = PartitionSchema {
            fields: vec![
                ("f".into(), DataType::Float64),
                ("small".into(), DataType::Decimal128(5, 2)),
                ("wide".into(), DataType::Decimal128(30, 2)),
                (
                    "t".into(),
                    DataType::Timestamp(Microsecond, Some("UTC".into())),
                ),
            ],
        };
        let (leaves, first) = dataset_leaves(&schema);
        // 2024-03-01 10:30:00 UTC.
        let values = [
            V::Float(-0.0),
            V::Decimal(1230),
            V::Decimal(-1230),
            V::Timestamp(1_709_289_000_000_000),
        ];
        let decide = |sql: &str| {
            let pred = parse_predicate(sql, &leaves).unwrap_or_else(|e| panic!("{sql}: {e}"));
            render(
                &partition_verdict(&pred, first, &leaves[first..], &values).unwrap(),
                &leaves,
            )
        };
        for (sql, want) in [
            ("f = 0", "TRUE"),
            ("f < 0", "FALSE"),
            ("small = 12.3", "TRUE"),
            ("small > 12.3", "FALSE"),
            ("wide = -12.30", "TRUE"),
            ("wide < -12.31", "FALSE"),
            ("wide BETWEEN -13 AND 0", "TRUE"),
            ("t = TIMESTAMP '2024-03-01 10:30:00'", "TRUE"),
            ("t > TIMESTAMP '2024-03-01 12:00:00+02:00'", "TRUE"),
            ("t > TIMESTAMP '2024-03-01 11:00:00'", "FALSE"),
        ] {
            assert_eq!(decide(sql), want, "{sql}");
        }
    }

    /// The residual predicate, rendered as SQL.
    fn verdict(sql: &str, values: &[PartitionValue]) -> String {
        let (leaves, first) = dataset_leaves(&schema());
        let pred = parse_predicate(sql, &leaves).unwrap_or_else(|e| panic!("{sql}: {e}"));
        let out = partition_verdict(&pred, first, &leaves[first..], values).unwrap();
        // Only the file's own leaves remain.
        assert!(out.columns().iter().all(|&c| c < first), "{sql}: {out:?}");
        render(&out, &leaves)
    }

    #[test]
    fn leaves_bind_like_file_columns() {
        let (leaves, first) = dataset_leaves(&schema());
        assert_eq!(first, 2);
        let names: Vec<(usize, &str, usize)> = leaves
            .iter()
            .map(|l| (l.index, l.path.as_str(), l.root))
            .collect();
        assert_eq!(
            names,
            vec![
                (0, "x", 0),
                (1, "s", 1),
                (2, "year", 2),
                (3, "country", 3),
                (4, "day", 4),
                (5, "small", 5),
                (6, "big", 6),
                (7, "flag", 7)
            ]
        );
        assert!(leaves[first..].iter().all(|l| l.optional() && !l.nested));
        let pred = parse_predicate("year = 2024 AND x > 5", &leaves).unwrap();
        assert_eq!(
            pred,
            Predicate::And(vec![
                Predicate::Leaf(Leaf {
                    column: 2,
                    op: LeafOp::Cmp(CmpOp::Eq, Scalar::Int(2024))
                }),
                Predicate::Leaf(Leaf {
                    column: 0,
                    op: LeafOp::Cmp(CmpOp::Gt, Scalar::Int(5))
                }),
            ])
        );
    }

    #[test]
    fn prunes_files_by_partition_values() {
        let fr24 = values(Some(2024), Some("FR"));
        let de23 = values(Some(2023), Some("DE"));
        let nulls = values(None, None);
        let cases: [(&str, [&str; 3]); 20] = [
            ("year = 2024", ["TRUE", "FALSE", "FALSE"]),
            ("year = 2024 AND x > 5", ["x > 5", "FALSE", "FALSE"]),
            ("year = 2023 OR x > 5", ["x > 5", "TRUE", "x > 5"]),
            ("year <> 2023", ["TRUE", "FALSE", "FALSE"]),
            ("NOT (year = 2023)", ["TRUE", "FALSE", "FALSE"]),
            ("year BETWEEN 2020 AND 2023", ["FALSE", "TRUE", "FALSE"]),
            ("year IN (2022, 2024)", ["TRUE", "FALSE", "FALSE"]),
            ("year NOT IN (2022, 2024)", ["FALSE", "TRUE", "FALSE"]),
            ("year IS NULL", ["FALSE", "FALSE", "TRUE"]),
            (
                "year IS NOT NULL AND s = 'a'",
                ["s = 'a'", "s = 'a'", "FALSE"],
            ),
            ("country = 'FR'", ["TRUE", "FALSE", "FALSE"]),
            ("country LIKE 'F%'", ["TRUE", "FALSE", "FALSE"]),
            ("country NOT LIKE 'F%'", ["FALSE", "TRUE", "FALSE"]),
            ("country > 'E'", ["TRUE", "FALSE", "FALSE"]),
            (
                "(country = 'DE' AND x = 1) OR (year = 2024 AND x = 2)",
                ["x = 2", "x = 1", "FALSE"],
            ),
            ("year = 2024 OR country = 'DE'", ["TRUE", "TRUE", "FALSE"]),
            (
                "day = DATE '2024-02-29' AND day > '2024-01-01'",
                ["TRUE", "TRUE", "TRUE"],
            ),
            (
                "small = -5 AND small < 0 AND small > -300",
                ["TRUE", "TRUE", "TRUE"],
            ),
            (
                "big = 18446744073709551615 AND big > 0",
                ["TRUE", "TRUE", "TRUE"],
            ),
            ("flag AND NOT flag = false", ["TRUE", "TRUE", "TRUE"]),
        ];
        for (sql, expected) in cases {
            for (v, want) in [&fr24, &de23, &nulls].into_iter().zip(expected) {
                assert_eq!(verdict(sql, v), want, "{sql} on {v:?}");
            }
        }
        assert_eq!(verdict("small = 5", &fr24), "FALSE");
        assert_eq!(verdict("big < 5", &fr24), "FALSE");
        assert_eq!(
            verdict("flag = false OR day < DATE '2024-02-29'", &fr24),
            "FALSE"
        );
        // A predicate on file columns only is unchanged.
        assert_eq!(verdict("x > 5 OR s IS NULL", &fr24), "x > 5 OR s IS NULL");
    }

    #[test]
    fn a_missing_column_is_a_null_constant() {
        // The same function decides a column absent from a file: every row is NULL there.
        let (leaves, first) = dataset_leaves(&schema());
        let pred = parse_predicate("(x > 5 OR s IS NULL) AND year = 2024", &leaves).unwrap();
        // Pretend s (leaf 1) is missing and x is the only file leaf: constants start at 1.
        let mut constants = vec![leaves[1].clone()];
        constants.extend(leaves[first..].iter().cloned());
        let mut vals = vec![PartitionValue::Null];
        vals.extend(values(Some(2024), Some("FR")));
        let out = partition_verdict(&pred, 1, &constants, &vals).unwrap();
        assert_eq!(out, Predicate::True);
        let pred = parse_predicate("s = 'a' OR x = 1", &leaves).unwrap();
        let out = partition_verdict(&pred, 1, &constants, &vals).unwrap();
        assert_eq!(render(&out, &leaves), "x = 1");
    }

    #[test]
    fn mismatched_values_are_errors_not_verdicts() {
        let (leaves, first) = dataset_leaves(&schema());
        let pred = parse_predicate("year = 2024", &leaves).unwrap();
        // Fewer values than the predicate needs.
        let e = partition_verdict(&pred, first, &leaves[first..], &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Internal);
        // A value of the wrong kind for its column.
        let bad = [PartitionValue::Str("2024".into())];
        let e = partition_verdict(&pred, first, &leaves[first..first + 1], &bad).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Internal);
        assert_eq!(e.context.column.as_deref(), Some("year"));
    }

    #[test]
    fn discovered_partitions_prune_end_to_end() {
        let paths = [
            "year=2023/country=DE/a.parquet",
            "year=2024/country=FR%2FBE/b.parquet",
            "year=__HIVE_DEFAULT_PARTITION__/country=FR/c.parquet",
        ];
        let p = discover_partitions(&paths, &[]).unwrap();
        let (mut leaves, first) = dataset_leaves(&PartitionSchema::default());
        leaves.extend(partition_leaves(&p.schema, first, 2).unwrap());
        let pred = parse_predicate("country LIKE 'FR%' AND year >= 2024", &leaves).unwrap();
        let kept: Vec<&str> = paths
            .iter()
            .zip(&p.values)
            .filter(|(_, v)| {
                partition_verdict(&pred, first, &leaves[first..], v).unwrap() != Predicate::False
            })
            .map(|(path, _)| *path)
            .collect();
        assert_eq!(kept, vec!["year=2024/country=FR%2FBE/b.parquet"]);
    }
}
