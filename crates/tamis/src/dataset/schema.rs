//! One schema for a dataset whose files' schemas differ a little.
//!
//! Files written over time gain columns, and writers differ in nullability and in the names
//! they give list items (`item` from Arrow, `element` from the Parquet LIST spec, `array` from
//! old Hive). None of that changes the data, so it is accepted. A top-level column whose types
//! differ by a safe widening takes the wider type, as DuckDB's `union_by_name` and Spark's
//! `mergeSchema` unify them ([`widen`]); each file's batches are cast to it, and predicates are
//! still bound to each file's own type. A column whose type really differs (a string in one
//! file, an integer in another) is an error naming both files, because no cast would be right
//! for every query.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{new_null_array, ArrayRef};
use arrow::compute::{cast_with_options, CastOptions};
use arrow::datatypes::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};

use super::partition::PartitionSchema;
use crate::error::{Error, Result};

/// The dataset schema and where each of its columns is in each file.
#[derive(Debug, Clone)]
pub struct UnifiedSchema {
    /// Every top-level column of any file, in first-seen order; nullable where any file has it
    /// nullable or lacks it. Types are the files' types widened to one ([`widen`]); field
    /// metadata is the first file's with the column (nested fields made nullable where any file
    /// has them nullable); no schema metadata.
    pub schema: SchemaRef,
    /// Per file (in input order), per output column: its index in that file's schema, or `None`
    /// when the file lacks it (read as NULL there).
    pub columns: Vec<Vec<Option<usize>>>,
}

/// Unifies the top-level columns of `schemas` (file name, the file's Arrow schema) by name.
///
/// Types must agree up to nullability, field metadata and the names of list / map item fields,
/// or differ by a widening of a top-level column ([`widen`]); a difference of anything else
/// (including struct field names, or an integer inside a list widened) is an InvalidArgument
/// error naming the column and two files.
pub(crate) fn unify(schemas: &[(String, Schema)]) -> Result<UnifiedSchema> {
    // Per output column: the merged field and the file it was first seen in.
    let mut fields: Vec<(Field, usize)> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    for (f, (file, schema)) in schemas.iter().enumerate() {
        for (i, field) in schema.fields().iter().enumerate() {
            if schema.fields()[..i]
                .iter()
                .any(|x| x.name() == field.name())
            {
                return Err(Error::invalid(format!(
                    "column '{}' appears twice in {file}",
                    field.name()
                )));
            }
            match by_name.get(field.name()) {
                None => {
                    by_name.insert(field.name().clone(), fields.len());
                    fields.push((field.as_ref().clone(), f));
                }
                Some(&o) => {
                    let (seen, first) = &mut fields[o];
                    let Some(t) = widen(seen.data_type(), field.data_type()) else {
                        return Err(Error::invalid(format!(
                            "column '{}' is {} in {} but {} in {file}",
                            field.name(),
                            seen.data_type(),
                            schemas[*first].0,
                            field.data_type()
                        )));
                    };
                    let nullable = seen.is_nullable() || field.is_nullable();
                    *seen = seen.clone().with_data_type(t).with_nullable(nullable);
                }
            }
        }
    }
    let columns: Vec<Vec<Option<usize>>> = schemas
        .iter()
        .map(|(_, schema)| {
            fields
                .iter()
                .map(|(field, _)| schema.index_of(field.name()).ok())
                .collect()
        })
        .collect();
    let fields: Vec<Field> = fields
        .into_iter()
        .enumerate()
        .map(|(o, (field, _))| {
            // Missing from a file ⇒ NULL there.
            let everywhere = columns.iter().all(|c| c[o].is_some());
            let nullable = field.is_nullable() || !everywhere;
            field.with_nullable(nullable)
        })
        .collect();
    Ok(UnifiedSchema {
        schema: Arc::new(Schema::new(fields)),
        columns,
    })
}

impl UnifiedSchema {
    /// The dataset schema with the partition columns appended (nullable: a path may say
    /// `__HIVE_DEFAULT_PARTITION__`). A partition key that is also a file column is an error:
    /// which of the two values a row has would be a guess.
    pub fn with_partitions(&self, partitions: &PartitionSchema) -> Result<SchemaRef> {
        let mut fields: Vec<FieldRef> = self.schema.fields().iter().cloned().collect();
        for (name, t) in &partitions.fields {
            if self.schema.field_with_name(name).is_ok() {
                return Err(Error::invalid(format!(
                    "partition key '{name}' is also a column in the files"
                )));
            }
            fields.push(Arc::new(Field::new(name, t.clone(), true)));
        }
        Ok(Arc::new(Schema::new(fields)))
    }

    /// One file's columns in dataset order: `arrays` are the file's columns (its schema order,
    /// all of `rows` rows), missing ones become NULL and types are conformed to the dataset's.
    /// A scan that projects should do the same per projected column with [`conform`].
    pub fn align(&self, file: usize, arrays: &[ArrayRef], rows: usize) -> Result<Vec<ArrayRef>> {
        let map = self
            .columns
            .get(file)
            .ok_or_else(|| Error::internal(format!("no file {file} in the unified schema")))?;
        self.schema
            .fields()
            .iter()
            .zip(map)
            .map(|(field, index)| match index {
                None => Ok(new_null_array(field.data_type(), rows)),
                Some(i) => {
                    let array = arrays.get(*i).ok_or_else(|| {
                        Error::internal(format!("file {file} has no column {i} in this batch"))
                    })?;
                    conform(array, field.data_type())
                }
            })
            .collect()
    }
}

/// `array` with type `target`, which [`unify`] found equal to its type up to nullability and
/// item field names, or wider ([`widen`]), or the view form of its strings ([`with_views`]);
/// unchanged (no copy) when the types are already equal. A value the target cannot hold (a
/// millisecond timestamp beyond the years nanoseconds reach) is an error, never a NULL.
pub(crate) fn conform(array: &ArrayRef, target: &DataType) -> Result<ArrayRef> {
    if array.data_type() == target {
        return Ok(array.clone());
    }
    let options = CastOptions {
        safe: false,
        ..Default::default()
    };
    Ok(cast_with_options(array, target, &options)?)
}

/// `schema` with the top-level string and binary columns that `viewed` marks as views
/// (`Utf8View`, `BinaryView`), as DataFusion's own Parquet reader declares them: its operators
/// compare and hash short values inside the 16-byte view, and a dictionary's entries are shared
/// by every row instead of copied.
pub(crate) fn with_views(schema: &Schema, viewed: &[bool]) -> Schema {
    retyped(schema, |i, t| {
        view_of(t).filter(|_| viewed.get(i) == Some(&true))
    })
}

/// `schema` with the columns marked in `dictionaries` as Arrow dictionaries of their strings or
/// binaries (see [`crate::Scan::string_dictionaries`]).
pub(crate) fn with_dictionaries(schema: &Schema, dictionaries: &[bool]) -> Schema {
    retyped(schema, |i, t| {
        dictionary_of(t).filter(|_| dictionaries.get(i) == Some(&true))
    })
}

/// `schema` with each top-level field `i` of type `t` given type `to(i, t)` where that is
/// `Some` (names, nullability and metadata kept).
fn retyped(schema: &Schema, to: impl Fn(usize, &DataType) -> Option<DataType>) -> Schema {
    let fields: Vec<FieldRef> = (schema.fields().iter().enumerate())
        .map(|(i, f)| match to(i, f.data_type()) {
            Some(t) => Arc::new(f.as_ref().clone().with_data_type(t)),
            None => f.clone(),
        })
        .collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

/// The dictionary type that [`with_dictionaries`] gives a column of type `file`: 32-bit codes
/// into its row group's entries (`None`: it keeps `file`).
pub(crate) fn dictionary_of(file: &DataType) -> Option<DataType> {
    match file {
        DataType::Utf8 | DataType::Binary => Some(DataType::Dictionary(
            Box::new(DataType::Int32),
            Box::new(file.clone()),
        )),
        _ => None,
    }
}

/// `schema` with its top-level decimals of at most 18 digits as `Decimal64` (see
/// [`crate::Scan::short_decimals`]).
pub(crate) fn with_short_decimals(schema: &Schema) -> Schema {
    retyped(schema, |_, t| short_decimal_of(t))
}

/// The `Decimal64` that [`with_short_decimals`] gives a decimal of type `file`, if it has at
/// most 18 digits (`None`: it keeps `file`).
pub(crate) fn short_decimal_of(file: &DataType) -> Option<DataType> {
    match file {
        DataType::Decimal128(p, s) if *p <= 18 => Some(DataType::Decimal64(*p, *s)),
        _ => None,
    }
}

/// The view type that [`with_views`] gives a column of type `file` (`None`: it keeps `file`).
pub(crate) fn view_of(file: &DataType) -> Option<DataType> {
    match file {
        DataType::Utf8 | DataType::LargeUtf8 => Some(DataType::Utf8View),
        DataType::Binary | DataType::LargeBinary => Some(DataType::BinaryView),
        _ => None,
    }
}

/// The type two files' types of one top-level column are read as: [`merge`]d when they agree,
/// else the wider of the two where one holds every value of both (`None`: a conflict).
///
/// * Integers: the wider; signed with unsigned, a signed type wider than the unsigned one
///   (`int32`/`uint32` → `int64`; `int64` with `uint64` has none and is a conflict).
/// * Floats: the wider (`float` → `double`). Integers with floats stay a conflict: a double
///   does not hold every `int64`.
/// * Decimals: the larger scale and the most integer digits of the two (`(10,2)` with `(12,2)`
///   is `(12,2)`; `(10,2)` with `(5,4)` is `(12,4)`), when that fits 76 digits (the wider
///   Arrow decimal of the two, or a wider one if the precision needs it).
/// * Timestamps: the finest unit present (Polars's supertype; Spark has only microseconds,
///   DuckDB's `union_by_name` keeps one unit too), so no file loses precision; a value outside
///   the finer unit's range (nanoseconds reach 1677–2262) is an error when read, never NULL.
///   Time zones that differ name the same instants (Parquet stores UTC) and become `UTC`; a
///   timestamp with a zone against one without (local time) is a conflict.
/// * `string` / `large_string` / `string_view` (and the same for binary): the plain form, and a
///   dictionary hint is read as its values: Arrow hints in a file's metadata never split a
///   dataset.
pub(crate) fn widen(a: &DataType, b: &DataType) -> Option<DataType> {
    use DataType as D;
    if let Some(t) = merge(a, b) {
        return Some(t);
    }
    let utf8 = |t: &DataType| matches!(t, D::Utf8 | D::LargeUtf8 | D::Utf8View);
    let binary = |t: &DataType| matches!(t, D::Binary | D::LargeBinary | D::BinaryView);
    let float = |t: &DataType| match t {
        D::Float16 => Some(16),
        D::Float32 => Some(32),
        D::Float64 => Some(64),
        _ => None,
    };
    Some(match (a, b) {
        (D::Dictionary(_, x), y) | (y, D::Dictionary(_, x)) => return widen(x, y),
        _ if utf8(a) && utf8(b) => D::Utf8,
        _ if binary(a) && binary(b) => D::Binary,
        _ if float(a).is_some() && float(b).is_some() => {
            if float(a) >= float(b) {
                a.clone()
            } else {
                b.clone()
            }
        }
        (D::Timestamp(u, x), D::Timestamp(v, y)) if x.is_some() == y.is_some() => {
            let unit = finer(*u, *v);
            let zone = match (x, y) {
                (Some(x), Some(y)) if x != y => Some("UTC".into()),
                _ => x.clone(),
            };
            D::Timestamp(unit, zone)
        }
        _ => match (integer(a), integer(b), decimal(a), decimal(b)) {
            (Some(x), Some(y), _, _) => widen_integer(x, y)?,
            (_, _, Some(x), Some(y)) => widen_decimal(x, y)?,
            _ => return None,
        },
    })
}

/// Bits and signedness of an integer type.
fn integer(t: &DataType) -> Option<(u8, bool)> {
    use DataType as D;
    Some(match t {
        D::Int8 => (8, true),
        D::Int16 => (16, true),
        D::Int32 => (32, true),
        D::Int64 => (64, true),
        D::UInt8 => (8, false),
        D::UInt16 => (16, false),
        D::UInt32 => (32, false),
        D::UInt64 => (64, false),
        _ => return None,
    })
}

/// The narrowest integer type holding every value of both.
fn widen_integer((a, sa): (u8, bool), (b, sb): (u8, bool)) -> Option<DataType> {
    use DataType as D;
    let (bits, signed) = match (sa, sb) {
        (true, true) | (false, false) => (a.max(b), sa),
        // A signed type holds an unsigned one only with more bits.
        (true, false) => (a.max(b.checked_mul(2)?), true),
        (false, true) => (b.max(a.checked_mul(2)?), true),
    };
    Some(match (bits, signed) {
        (8, true) => D::Int8,
        (16, true) => D::Int16,
        (32, true) => D::Int32,
        (64, true) => D::Int64,
        (8, false) => D::UInt8,
        (16, false) => D::UInt16,
        (32, false) => D::UInt32,
        (64, false) => D::UInt64,
        _ => return None,
    })
}

/// Precision, scale and the largest precision of a decimal type's Arrow width.
fn decimal(t: &DataType) -> Option<(u8, i8, u8)> {
    use DataType as D;
    Some(match t {
        D::Decimal32(p, s) => (*p, *s, 9),
        D::Decimal64(p, s) => (*p, *s, 18),
        D::Decimal128(p, s) => (*p, *s, 38),
        D::Decimal256(p, s) => (*p, *s, 76),
        _ => return None,
    })
}

/// The decimal holding every value of both: the larger scale, the most integer digits, in the
/// wider Arrow decimal of the two (or a wider one the precision needs).
fn widen_decimal((pa, sa, ma): (u8, i8, u8), (pb, sb, mb): (u8, i8, u8)) -> Option<DataType> {
    use DataType as D;
    let scale = sa.max(sb);
    let digits = (i16::from(pa) - i16::from(sa)).max(i16::from(pb) - i16::from(sb));
    let precision = u8::try_from(digits + i16::from(scale)).ok()?;
    if precision == 0 {
        return None;
    }
    let at_least = ma.max(mb);
    Some(
        match [9u8, 18, 38, 76]
            .into_iter()
            .find(|&m| m >= at_least && m >= precision)?
        {
            9 => D::Decimal32(precision, scale),
            18 => D::Decimal64(precision, scale),
            38 => D::Decimal128(precision, scale),
            _ => D::Decimal256(precision, scale),
        },
    )
}

/// The finer of two time units.
fn finer(
    a: arrow::datatypes::TimeUnit,
    b: arrow::datatypes::TimeUnit,
) -> arrow::datatypes::TimeUnit {
    use arrow::datatypes::TimeUnit as U;
    let rank = |u: U| match u {
        U::Second => 0,
        U::Millisecond => 1,
        U::Microsecond => 2,
        U::Nanosecond => 3,
    };
    if rank(a) >= rank(b) {
        a
    } else {
        b
    }
}

/// `a` and `b` merged, or `None` if they differ beyond nullability, metadata and list / map
/// item names. The result keeps `a`'s names and makes a nested field nullable if either is.
fn merge(a: &DataType, b: &DataType) -> Option<DataType> {
    use DataType as D;
    // A child whose name does not matter (list item, map entries).
    let item = |x: &FieldRef, y: &FieldRef| -> Option<FieldRef> {
        let t = merge(x.data_type(), y.data_type())?;
        let nullable = x.is_nullable() || y.is_nullable();
        Some(Arc::new(
            x.as_ref().clone().with_data_type(t).with_nullable(nullable),
        ))
    };
    Some(match (a, b) {
        (D::List(x), D::List(y)) => D::List(item(x, y)?),
        (D::LargeList(x), D::LargeList(y)) => D::LargeList(item(x, y)?),
        (D::ListView(x), D::ListView(y)) => D::ListView(item(x, y)?),
        (D::LargeListView(x), D::LargeListView(y)) => D::LargeListView(item(x, y)?),
        (D::FixedSizeList(x, n), D::FixedSizeList(y, m)) if n == m => {
            D::FixedSizeList(item(x, y)?, *n)
        }
        // The entries struct, and its key and value fields, are named by the writer too.
        (D::Map(x, sx), D::Map(y, sy)) if sx == sy => {
            let (D::Struct(xs), D::Struct(ys)) = (x.data_type(), y.data_type()) else {
                return None;
            };
            if xs.len() != ys.len() {
                return None;
            }
            let kv = xs.iter().zip(ys.iter()).map(|(p, q)| item(p, q));
            let kv = kv.collect::<Option<Fields>>()?;
            D::Map(
                Arc::new(x.as_ref().clone().with_data_type(D::Struct(kv))),
                *sx,
            )
        }
        (D::Struct(xs), D::Struct(ys)) if xs.len() == ys.len() => D::Struct(
            xs.iter()
                .zip(ys.iter())
                .map(|(x, y)| (x.name() == y.name()).then(|| item(x, y)).flatten())
                .collect::<Option<Fields>>()?,
        ),
        _ if a == b => a.clone(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use arrow::array::{Array, AsArray, Int32Array, Int64Array, ListArray, StringArray};
    use arrow::datatypes::Int32Type;

    use super::*;
    use crate::error::ErrorKind;

    fn field(name: &str, t: DataType, nullable: bool) -> Field {
        Field::new(name, t, nullable)
    }
    fn list(item: &str, t: DataType, nullable: bool) -> DataType {
        DataType::List(Arc::new(Field::new(item, t, nullable)))
    }
    fn files(schemas: Vec<(&str, Vec<Field>)>) -> Vec<(String, Schema)> {
        schemas
            .into_iter()
            .map(|(n, f)| (n.to_string(), Schema::new(f)))
            .collect()
    }
    fn err(schemas: Vec<(&str, Vec<Field>)>) -> String {
        let e = unify(&files(schemas)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        e.message
    }

    #[test]
    fn same_schemas_are_unchanged() {
        let f = vec![
            field("a", DataType::Int64, false),
            field("b", DataType::Utf8, true),
        ];
        let u = unify(&files(vec![
            ("a.parquet", f.clone()),
            ("b.parquet", f.clone()),
        ]))
        .unwrap();
        assert_eq!(u.schema.as_ref(), &Schema::new(f));
        assert_eq!(
            u.columns,
            vec![vec![Some(0), Some(1)], vec![Some(0), Some(1)]]
        );
    }

    #[test]
    fn union_of_columns_in_first_seen_order() {
        let u = unify(&files(vec![
            (
                "a.parquet",
                vec![
                    field("x", DataType::Int64, false),
                    field("y", DataType::Utf8, false),
                ],
            ),
            (
                "b.parquet",
                vec![
                    field("z", DataType::Boolean, false),
                    field("x", DataType::Int64, true),
                ],
            ),
            ("c.parquet", vec![field("y", DataType::Utf8, false)]),
        ]))
        .unwrap();
        assert_eq!(
            u.schema.as_ref(),
            &Schema::new(vec![
                field("x", DataType::Int64, true),   // nullable in b, missing in c
                field("y", DataType::Utf8, true),    // missing in b
                field("z", DataType::Boolean, true), // missing in a and c
            ])
        );
        assert_eq!(
            u.columns,
            vec![
                vec![Some(0), Some(1), None],
                vec![Some(1), None, Some(0)],
                vec![None, Some(0), None],
            ]
        );
        // A column in every file keeps its nullability.
        let u = unify(&files(vec![
            ("a.parquet", vec![field("x", DataType::Int64, false)]),
            ("b.parquet", vec![field("x", DataType::Int64, false)]),
        ]))
        .unwrap();
        assert!(!u.schema.field(0).is_nullable());
        assert_eq!(unify(&[]).unwrap().schema.fields().len(), 0);
    }

    #[test]
    fn type_conflicts_name_both_files() {
        assert_eq!(
            err(vec![
                ("a.parquet", vec![field("x", DataType::Int64, true)]),
                ("b.parquet", vec![field("y", DataType::Int64, true)]),
                ("c.parquet", vec![field("x", DataType::Utf8, true)]),
            ]),
            "column 'x' is Int64 in a.parquet but Utf8 in c.parquet"
        );
        // Widening has limits: no integer type holds both int64 and uint64, a double not every
        // int64, and local time is not an instant.
        assert_eq!(
            err(vec![
                ("a.parquet", vec![field("x", DataType::Int64, true)]),
                ("b.parquet", vec![field("x", DataType::UInt64, true)]),
            ]),
            "column 'x' is Int64 in a.parquet but UInt64 in b.parquet"
        );
        assert_eq!(
            err(vec![
                ("a.parquet", vec![field("x", DataType::Int32, true)]),
                ("b.parquet", vec![field("x", DataType::Float64, true)]),
            ]),
            "column 'x' is Int32 in a.parquet but Float64 in b.parquet"
        );
        let ts = |tz: Option<&str>| {
            DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, tz.map(Into::into))
        };
        assert_eq!(
            err(vec![
                ("a.parquet", vec![field("t", ts(Some("UTC")), true)]),
                ("b.parquet", vec![field("t", ts(None), true)]),
            ]),
            "column 't' is Timestamp(µs, \"UTC\") in a.parquet but Timestamp(µs) in b.parquet"
        );
        // 40 integer digits and 40 decimals need 80 digits.
        assert_eq!(
            err(vec![
                (
                    "a.parquet",
                    vec![field("d", DataType::Decimal256(76, 36), true)]
                ),
                (
                    "b.parquet",
                    vec![field("d", DataType::Decimal256(76, 40), true)]
                ),
            ]),
            "column 'd' is Decimal256(76, 36) in a.parquet but Decimal256(76, 40) in b.parquet"
        );
        // Widening stops at the top level.
        assert!(unify(&files(vec![
            (
                "a.parquet",
                vec![field("l", list("item", DataType::Int32, true), true)]
            ),
            (
                "b.parquet",
                vec![field("l", list("item", DataType::Int64, true), true)]
            ),
        ]))
        .is_err());
        assert_eq!(
            err(vec![(
                "a.parquet",
                vec![
                    field("x", DataType::Int64, true),
                    field("x", DataType::Int64, true)
                ]
            )]),
            "column 'x' appears twice in a.parquet"
        );
    }

    #[test]
    fn safe_widenings_take_the_wider_type() {
        use arrow::datatypes::TimeUnit::*;
        use DataType as D;
        let ts = |u, tz: Option<&str>| D::Timestamp(u, tz.map(Into::into));
        let dict = D::Dictionary(Box::new(D::Int32), Box::new(D::Utf8));
        let cases: Vec<(D, D, D)> = vec![
            (D::Int32, D::Int64, D::Int64),
            (D::Int32, D::UInt32, D::Int64),
            (D::UInt32, D::Int32, D::Int64),
            (D::Int8, D::UInt8, D::Int16),
            (D::Int64, D::UInt16, D::Int64),
            (D::UInt8, D::UInt32, D::UInt32),
            (D::Float32, D::Float64, D::Float64),
            (D::Float16, D::Float32, D::Float32),
            (
                D::Decimal128(10, 2),
                D::Decimal128(12, 2),
                D::Decimal128(12, 2),
            ),
            (
                D::Decimal128(10, 2),
                D::Decimal128(5, 4),
                D::Decimal128(12, 4),
            ),
            (D::Decimal32(9, 2), D::Decimal64(10, 2), D::Decimal64(10, 2)),
            (D::Decimal32(9, 0), D::Decimal32(9, 2), D::Decimal64(11, 2)),
            (
                D::Decimal128(38, 0),
                D::Decimal128(38, 10),
                D::Decimal256(48, 10),
            ),
            (
                ts(Millisecond, None),
                ts(Nanosecond, None),
                ts(Nanosecond, None),
            ),
            (
                ts(Microsecond, None),
                ts(Millisecond, None),
                ts(Microsecond, None),
            ),
            (
                ts(Millisecond, Some("Europe/Paris")),
                ts(Microsecond, Some("UTC")),
                ts(Microsecond, Some("UTC")),
            ),
            (
                ts(Microsecond, Some("+01:00")),
                ts(Microsecond, Some("America/New_York")),
                ts(Microsecond, Some("UTC")),
            ),
            (
                ts(Microsecond, Some("+01:00")),
                ts(Millisecond, Some("+01:00")),
                ts(Microsecond, Some("+01:00")),
            ),
            (D::Utf8View, D::Utf8, D::Utf8),
            (D::LargeUtf8, D::Utf8View, D::Utf8),
            (dict.clone(), D::Utf8View, D::Utf8),
            (dict, D::Utf8, D::Utf8),
            (D::BinaryView, D::LargeBinary, D::Binary),
        ];
        for (a, b, want) in cases {
            let u = unify(&files(vec![
                ("a.parquet", vec![field("x", a.clone(), false)]),
                ("b.parquet", vec![field("x", b.clone(), false)]),
            ]))
            .unwrap_or_else(|e| panic!("{a} with {b}: {e}"));
            assert_eq!(u.schema.field(0).data_type(), &want, "{a} with {b}");
            assert!(!u.schema.field(0).is_nullable());
        }
        // Each file's values conform to the wider type exactly.
        let x: ArrayRef = Arc::new(arrow::array::UInt32Array::from(vec![Some(u32::MAX), None]));
        let y = conform(&x, &D::Int64).unwrap();
        assert_eq!(
            y.as_primitive::<arrow::datatypes::Int64Type>(),
            &Int64Array::from(vec![Some(i64::from(u32::MAX)), None])
        );
        // A value the finer unit cannot hold is an error, not a NULL.
        let far: ArrayRef = Arc::new(arrow::array::TimestampMillisecondArray::from(vec![
            32_503_680_000_000i64, // 3000-01-01
        ]));
        assert!(conform(&far, &ts(Nanosecond, None)).is_err());
        let near: ArrayRef = Arc::new(arrow::array::TimestampMillisecondArray::from(vec![1_000]));
        let n = conform(&near, &ts(Nanosecond, None)).unwrap();
        assert_eq!(
            n.as_primitive::<arrow::datatypes::TimestampNanosecondType>()
                .value(0),
            1_000_000_000
        );
    }

    #[test]
    fn metadata_is_ignored() {
        let id = |i: &str| HashMap::from([("PARQUET:field_id".to_string(), i.to_string())]);
        let a = field("x", DataType::Int64, true).with_metadata(id("1"));
        let b = field("x", DataType::Int64, true).with_metadata(id("7"));
        let mut sa = Schema::new(vec![a.clone()]);
        sa.metadata.insert("writer", "a");
        let u = unify(&[
            ("a.parquet".into(), sa),
            ("b.parquet".into(), Schema::new(vec![b])),
        ])
        .unwrap();
        // The first file's field metadata, no schema metadata.
        assert_eq!(u.schema.field(0), &a);
        assert!(u.schema.metadata().is_empty());
    }

    #[test]
    fn nested_types_ignore_item_names_and_nullability() {
        let u = unify(&files(vec![
            (
                "a.parquet",
                vec![field("l", list("item", DataType::Int32, false), false)],
            ),
            (
                "b.parquet",
                vec![field("l", list("element", DataType::Int32, true), false)],
            ),
        ]))
        .unwrap();
        // a's name, nullable items because b has them nullable.
        assert_eq!(
            u.schema.field(0),
            &field("l", list("item", DataType::Int32, true), false)
        );

        let strukt = |names: [&str; 2], inner: &str| {
            DataType::Struct(Fields::from(vec![
                Field::new(names[0], DataType::Int64, false),
                Field::new(names[1], list(inner, DataType::Utf8, true), true),
            ]))
        };
        let u = unify(&files(vec![
            (
                "a.parquet",
                vec![field("s", strukt(["p", "q"], "element"), true)],
            ),
            (
                "b.parquet",
                vec![field("s", strukt(["p", "q"], "array"), true)],
            ),
        ]))
        .unwrap();
        assert_eq!(
            u.schema.field(0).data_type(),
            &strukt(["p", "q"], "element")
        );
        // Struct field names are data.
        assert_eq!(
            err(vec![
                (
                    "a.parquet",
                    vec![field("s", strukt(["p", "q"], "item"), true)]
                ),
                (
                    "b.parquet",
                    vec![field("s", strukt(["p", "r"], "item"), true)]
                ),
            ]),
            format!(
                "column 's' is {} in a.parquet but {} in b.parquet",
                strukt(["p", "q"], "item"),
                strukt(["p", "r"], "item")
            )
        );
        // So is the item type, however deep.
        let deep = |t| list("item", list("element", t, true), true);
        assert!(unify(&files(vec![
            ("a.parquet", vec![field("l", deep(DataType::Int32), true)]),
            ("b.parquet", vec![field("l", deep(DataType::Int64), true)]),
        ]))
        .is_err());
        // List vs LargeList is a different type.
        assert!(unify(&files(vec![
            (
                "a.parquet",
                vec![field("l", list("item", DataType::Int32, true), true)]
            ),
            (
                "b.parquet",
                vec![field(
                    "l",
                    DataType::LargeList(Arc::new(Field::new("item", DataType::Int32, true))),
                    true
                )]
            ),
        ]))
        .is_err());
    }

    #[test]
    fn maps_ignore_entry_names() {
        let map = |entries: &str, k: &str, v: &str, vt: DataType| {
            DataType::Map(
                Arc::new(Field::new(
                    entries,
                    DataType::Struct(Fields::from(vec![
                        Field::new(k, DataType::Utf8, false),
                        Field::new(v, vt, true),
                    ])),
                    false,
                )),
                false,
            )
        };
        let u = unify(&files(vec![
            (
                "a.parquet",
                vec![field(
                    "m",
                    map("key_value", "key", "value", DataType::Int32),
                    true,
                )],
            ),
            (
                "b.parquet",
                vec![field(
                    "m",
                    map("entries", "keys", "values", DataType::Int32),
                    true,
                )],
            ),
        ]))
        .unwrap();
        assert_eq!(
            u.schema.field(0).data_type(),
            &map("key_value", "key", "value", DataType::Int32)
        );
        assert!(unify(&files(vec![
            (
                "a.parquet",
                vec![field(
                    "m",
                    map("key_value", "key", "value", DataType::Int32),
                    true
                )]
            ),
            (
                "b.parquet",
                vec![field(
                    "m",
                    map("key_value", "key", "value", DataType::Int64),
                    true
                )]
            ),
        ]))
        .is_err());
    }

    #[test]
    fn partition_keys_must_not_be_file_columns() {
        let u = unify(&files(vec![(
            "a.parquet",
            vec![field("year", DataType::Int64, false)],
        )]))
        .unwrap();
        let clash = PartitionSchema {
            fields: vec![("year".into(), DataType::Int64)],
        };
        let e = u.with_partitions(&clash).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert_eq!(
            e.message,
            "partition key 'year' is also a column in the files"
        );
        let ok = PartitionSchema {
            fields: vec![
                ("country".into(), DataType::Utf8),
                ("day".into(), DataType::Date32),
            ],
        };
        assert_eq!(
            u.with_partitions(&ok).unwrap().as_ref(),
            &Schema::new(vec![
                field("year", DataType::Int64, false),
                field("country", DataType::Utf8, true),
                field("day", DataType::Date32, true),
            ])
        );
    }

    #[test]
    fn align_fills_missing_columns_and_conforms_types() {
        let u = unify(&files(vec![
            (
                "a.parquet",
                vec![
                    field("x", DataType::Int64, false),
                    field("l", list("item", DataType::Int32, false), true),
                ],
            ),
            (
                "b.parquet",
                vec![
                    field("l", list("element", DataType::Int32, true), true),
                    field("s", DataType::Utf8, true),
                ],
            ),
        ]))
        .unwrap();
        let l = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1), None]),
            None,
        ]);
        let l = ListArray::new(
            Arc::new(Field::new("element", DataType::Int32, true)),
            l.offsets().clone(),
            l.values().clone(),
            l.nulls().cloned(),
        );
        let b: Vec<ArrayRef> = vec![Arc::new(l), Arc::new(StringArray::from(vec!["p", "q"]))];
        let out = u.align(1, &b, 2).unwrap();
        assert_eq!(out.len(), 3);
        for (a, f) in out.iter().zip(u.schema.fields()) {
            assert_eq!(a.data_type(), f.data_type());
            assert_eq!(a.len(), 2);
        }
        assert_eq!(out[0].null_count(), 2);
        let lists = out[1].as_list::<i32>();
        assert!(lists.is_null(1));
        assert_eq!(
            lists.value(0).as_primitive::<Int32Type>(),
            &Int32Array::from(vec![Some(1), None])
        );
        assert_eq!(
            out[2].as_string::<i32>(),
            &StringArray::from(vec!["p", "q"])
        );
        // The batch builds under the dataset schema.
        arrow::array::RecordBatch::try_new(u.schema.clone(), out).unwrap();

        // Equal types: the same array, not a copy.
        let x: ArrayRef = Arc::new(Int64Array::from(vec![1, 2]));
        let same = conform(&x, &DataType::Int64).unwrap();
        assert!(Arc::ptr_eq(&x, &same));
        assert_eq!(u.align(2, &b, 2).unwrap_err().kind, ErrorKind::Internal);
    }
}
