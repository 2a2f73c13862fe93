//! Arrow as Spark reads it: the types a scan's columns take on their way into Spark's column
//! vectors, mapped as Spark's own Parquet reader maps them, and the batches converted to them.
//!
//! Spark keeps a decimal of at most 18 digits as one `long` (its unscaled value). A top-level
//! column of such decimals therefore crosses as `Int64` holding the unscaled values, its field
//! marked with [`DECIMAL_KEY`] = `"precision,scale"`; the Java side wraps it in a column vector
//! that answers `getDecimal` from the long (no `BigDecimal` per value). Wider decimals, and
//! decimals inside lists and structs, stay `Decimal128` (Spark's `ArrowColumnVector` reads them).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, AsArray, RecordBatch};
use arrow::compute::{cast_with_options, CastOptions};
use arrow::datatypes::{
    DataType, Decimal128Type, Decimal256Type, Decimal32Type, Decimal64Type, Field, FieldRef,
    Int64Type, Schema, SchemaRef, TimeUnit,
};
use tamis::{Error, Result};

/// The field metadata key marking an `Int64` column of unscaled decimals: `"precision,scale"`.
pub const DECIMAL_KEY: &str = "tamis.decimal";

/// The most digits a decimal may have to cross as one 64-bit unscaled value.
const LONG_DECIMAL_DIGITS: u8 = 18;

/// Spark's decimals hold at most 38 digits.
const SPARK_DECIMAL_DIGITS: u8 = 38;

/// The field a top-level column crosses as: its Spark-facing type (see the module doc).
/// `int96`: the column is stored as INT96 (Spark's own timestamps, a `timestamp` with time zone
/// in Spark). An Arrow type Spark has no type for is an `Unsupported` error naming the column.
pub fn spark_field(field: &Field, int96: bool) -> Result<Field> {
    let name = field.name();
    if let Some(t) = string_dictionary(field.data_type()) {
        return Ok(Field::new(name, t, true));
    }
    if let Some((precision, scale)) = decimal_of(field.data_type()) {
        if precision <= LONG_DECIMAL_DIGITS {
            let metadata =
                HashMap::from([(DECIMAL_KEY.to_string(), format!("{precision},{scale}"))]);
            return Ok(Field::new(name, DataType::Int64, true).with_metadata(metadata));
        }
    }
    Ok(Field::new(
        name,
        spark_type(field.data_type(), name, int96)?,
        true,
    ))
}

/// A top-level dictionary of strings or binaries crosses as it is: the Java side reads its
/// codes and entries in place (`DictionaryStringVector`), where Spark's `ArrowColumnVector`
/// would need every row's value copied out.
fn string_dictionary(t: &DataType) -> Option<DataType> {
    match t {
        DataType::Dictionary(k, v)
            if **k == DataType::Int32 && matches!(**v, DataType::Utf8 | DataType::Binary) =>
        {
            Some(t.clone())
        }
        _ => None,
    }
}

/// The Spark-facing schema of a scan's schema (`int96`: the columns stored as INT96).
pub fn spark_schema(schema: &Schema, int96: &[String]) -> Result<SchemaRef> {
    let fields = (schema.fields().iter())
        .map(|f| spark_field(f, int96.contains(f.name())))
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(Schema::new(fields)))
}

/// The text a task parses back into `field`'s type ([`with_targets`]): Arrow's `DataType`
/// display for atomic types, `long_decimal:p,s` for a decimal crossing as longs; `None` for
/// nested types (a task converts those by their own files' types).
pub fn type_text(field: &Field) -> Option<String> {
    if let Some(ps) = field.metadata().get(DECIMAL_KEY) {
        return Some(format!("long_decimal:{ps}"));
    }
    let t = field.data_type();
    (!t.is_nested()).then(|| t.to_string())
}

/// `schema` (a task's Spark-facing schema) with the driver's types where they are given.
pub fn with_targets(schema: SchemaRef, targets: &BTreeMap<String, String>) -> Result<SchemaRef> {
    if targets.is_empty() {
        return Ok(schema);
    }
    let fields = (schema.fields().iter())
        .map(|f| {
            let Some(text) = targets.get(f.name()) else {
                return Ok(f.as_ref().clone());
            };
            if let Some(ps) = text.strip_prefix("long_decimal:") {
                let metadata = HashMap::from([(DECIMAL_KEY.to_string(), ps.to_string())]);
                return Ok(Field::new(f.name(), DataType::Int64, true).with_metadata(metadata));
            }
            let t = text.parse::<DataType>().map_err(|e| {
                Error::invalid(format!("column '{}': type '{text}': {e}", f.name()))
            })?;
            match f.data_type() {
                // The driver's `Utf8`/`Binary` read from a dictionary of them: kept as is.
                DataType::Dictionary(_, v) if **v == t => Ok(f.as_ref().clone()),
                _ => Ok(Field::new(f.name(), t, true)),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(Schema::new(fields)))
}

fn decimal_of(t: &DataType) -> Option<(u8, i8)> {
    match t {
        DataType::Decimal32(p, s)
        | DataType::Decimal64(p, s)
        | DataType::Decimal128(p, s)
        | DataType::Decimal256(p, s) => Some((*p, *s)),
        _ => None,
    }
}

/// The Arrow type Spark's `ArrowColumnVector` reads for a value of type `t` (nested values
/// included), as Spark's Parquet reader types it.
fn spark_type(t: &DataType, column: &str, int96: bool) -> Result<DataType> {
    use DataType::*;
    let unsupported = |what: String| {
        Err(Error::unsupported(format!(
            "column '{column}': {what} has no Spark type"
        )))
    };
    Ok(match t {
        Null | Boolean | Int8 | Int16 | Int32 | Int64 | Float32 | Float64 | Date32 | Utf8
        | Binary => t.clone(),
        UInt8 => Int16,
        UInt16 => Int32,
        UInt32 => Int64,
        UInt64 => Decimal128(20, 0),
        Float16 => Float32,
        Date64 => Date32,
        LargeUtf8 | Utf8View => Utf8,
        LargeBinary | BinaryView | FixedSizeBinary(_) => Binary,
        Decimal32(p, s) | Decimal64(p, s) | Decimal128(p, s) | Decimal256(p, s) => {
            if *p > SPARK_DECIMAL_DIGITS {
                return unsupported(format!("{t} (more digits than Spark's 38)"));
            }
            Decimal128(*p, *s)
        }
        // Spark's timestamps are microseconds: finer ones are truncated, as Spark's reader does.
        Timestamp(_, tz) => {
            let zoned = tz.is_some() || int96;
            // An offset, not a zone name: casting to a named zone needs chrono-tz.
            Timestamp(TimeUnit::Microsecond, zoned.then(|| "+00:00".into()))
        }
        Dictionary(_, values) => spark_type(values, column, int96)?,
        List(f) | LargeList(f) | ListView(f) | LargeListView(f) | FixedSizeList(f, _) => {
            List(nested(f, column)?)
        }
        Map(entries, sorted) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return unsupported(format!("{t}"));
            };
            let kv = (kv.iter())
                .enumerate()
                .map(|(i, f)| {
                    let t = spark_type(f.data_type(), column, false)?;
                    // Spark's map keys are never null.
                    Ok(Arc::new(Field::new(f.name(), t, i != 0)))
                })
                .collect::<Result<Vec<FieldRef>>>()?;
            let entries = Field::new(entries.name(), Struct(kv.into()), false);
            Map(Arc::new(entries), *sorted)
        }
        Struct(fields) => Struct(
            (fields.iter())
                .map(|f| nested(f, column))
                .collect::<Result<Vec<_>>>()?
                .into(),
        ),
        other => return unsupported(format!("Arrow type {other}")),
    })
}

fn nested(f: &FieldRef, column: &str) -> Result<FieldRef> {
    Ok(Arc::new(Field::new(
        f.name(),
        spark_type(f.data_type(), column, false)?,
        true,
    )))
}

/// `batch` with its columns converted to `target`'s fields, matched by position (the scan's
/// schema mapped by [`spark_schema`]).
pub fn conform(batch: &RecordBatch, target: &SchemaRef) -> Result<RecordBatch> {
    let columns = (batch.columns().iter())
        .zip(target.fields())
        .map(|(column, field)| conform_column(column, field))
        .collect::<Result<Vec<_>>>()?;
    let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(target.clone(), columns, &options)
        .map_err(|e| Error::internal(format!("building a batch for Spark: {e}")))
}

fn conform_column(column: &ArrayRef, field: &Field) -> Result<ArrayRef> {
    let target = field.data_type();
    if column.data_type() == target {
        return Ok(column.clone());
    }
    if field.metadata().contains_key(DECIMAL_KEY) {
        return unscaled(column, field);
    }
    if column.data_type() == &DataType::Null {
        return Ok(new_null_array(target, column.len()));
    }
    // Truncating casts only where Spark's reader truncates too (finer timestamps).
    let options = CastOptions {
        safe: false,
        ..Default::default()
    };
    cast_with_options(column, target, &options).map_err(|e| {
        Error::unsupported(format!(
            "column '{}': cannot hand {} to Spark as {target}: {e}",
            field.name(),
            column.data_type()
        ))
    })
}

/// A decimal column of at most 18 digits as its unscaled 64-bit values, at the precision and
/// scale `field`'s metadata gives (a narrower decimal is rescaled first).
fn unscaled(column: &ArrayRef, field: &Field) -> Result<ArrayRef> {
    let name = field.name();
    let target = (field.metadata().get(DECIMAL_KEY))
        .and_then(|ps| ps.split_once(','))
        .and_then(|(p, s)| Some((p.parse::<u8>().ok()?, s.parse::<i8>().ok()?)))
        .ok_or_else(|| Error::internal(format!("column '{name}': no decimal type to hand over")))?;
    let rescaled;
    let column = match decimal_of(column.data_type()) {
        Some(ps) if ps == target => column,
        _ if column.data_type() == &DataType::Null => column,
        _ => {
            let options = CastOptions {
                safe: false,
                ..Default::default()
            };
            rescaled =
                cast_with_options(column, &DataType::Decimal128(target.0, target.1), &options)
                    .map_err(|e| {
                        Error::unsupported(format!(
                            "column '{name}': cannot hand {} to Spark as decimal({},{}): {e}",
                            column.data_type(),
                            target.0,
                            target.1
                        ))
                    })?;
            &rescaled
        }
    };
    let array: ArrayRef = match column.data_type() {
        DataType::Decimal32(..) => Arc::new(
            column
                .as_primitive::<Decimal32Type>()
                .unary::<_, Int64Type>(i64::from),
        ),
        DataType::Decimal64(..) => Arc::new(
            column
                .as_primitive::<Decimal64Type>()
                .reinterpret_cast::<Int64Type>(),
        ),
        // At most 18 digits: the value fits in an i64.
        DataType::Decimal128(..) => Arc::new(
            column
                .as_primitive::<Decimal128Type>()
                .unary::<_, Int64Type>(|v| v as i64),
        ),
        DataType::Decimal256(..) => Arc::new(
            column
                .as_primitive::<Decimal256Type>()
                .unary::<_, Int64Type>(|v| v.as_i128() as i64),
        ),
        DataType::Null => new_null_array(&DataType::Int64, column.len()),
        other => {
            return Err(Error::internal(format!(
                "column '{name}': {other} where a decimal was planned"
            )))
        }
    };
    Ok(array)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Decimal128Array, Int64Array, StringViewArray, TimestampNanosecondArray};

    #[test]
    fn short_decimals_cross_as_unscaled_longs_marked_with_their_type() {
        let field = Field::new("price", DataType::Decimal128(15, 2), true);
        let spark = spark_field(&field, false).unwrap();
        assert_eq!(spark.data_type(), &DataType::Int64);
        assert_eq!(spark.metadata()[DECIMAL_KEY], "15,2");
        let wide = spark_field(&Field::new("w", DataType::Decimal128(30, 4), true), false).unwrap();
        assert_eq!(wide.data_type(), &DataType::Decimal128(30, 4));
        assert!(wide.metadata().is_empty());
        let values = Decimal128Array::from(vec![Some(-123_456), None, Some(999_999_999_999_999)])
            .with_precision_and_scale(15, 2)
            .unwrap();
        let schema = Arc::new(Schema::new(vec![field]));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(values)]).unwrap();
        let out = conform(&batch, &spark_schema(&schema, &[]).unwrap()).unwrap();
        let longs = out.column(0).as_primitive::<Int64Type>();
        assert_eq!(
            longs,
            &Int64Array::from(vec![Some(-123_456), None, Some(999_999_999_999_999)])
        );
    }

    #[test]
    fn atomic_types_survive_the_trip_to_the_tasks_as_text() {
        for t in [
            DataType::Boolean,
            DataType::Int8,
            DataType::Int64,
            DataType::Float32,
            DataType::Utf8,
            DataType::Binary,
            DataType::Date32,
            DataType::Decimal128(38, 6),
            DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())),
            DataType::Timestamp(TimeUnit::Microsecond, None),
        ] {
            let text = type_text(&Field::new("c", t.clone(), true)).unwrap();
            assert_eq!(text.parse::<DataType>().unwrap(), t, "{text}");
        }
        let list = Field::new_list("l", Field::new("item", DataType::Int32, true), true);
        assert_eq!(type_text(&list), None);
    }

    #[test]
    fn a_narrower_decimal_is_rescaled_to_the_drivers_type() {
        let narrow = Field::new("d", DataType::Decimal128(9, 2), true);
        let schema = Arc::new(Schema::new(vec![narrow]));
        let targets = BTreeMap::from([("d".to_string(), "long_decimal:10,3".to_string())]);
        let target = with_targets(spark_schema(&schema, &[]).unwrap(), &targets).unwrap();
        let values = Decimal128Array::from(vec![Some(150), None])
            .with_precision_and_scale(9, 2)
            .unwrap();
        let batch = RecordBatch::try_new(schema, vec![Arc::new(values)]).unwrap();
        let out = conform(&batch, &target).unwrap();
        // 1.50 as decimal(10,3) is 1500 unscaled.
        assert_eq!(out.column(0).as_primitive::<Int64Type>().value(0), 1500);
        let wide = Arc::new(Schema::new(vec![Field::new("i", DataType::Int32, true)]));
        let targets = BTreeMap::from([("i".to_string(), "Int64".to_string())]);
        let target = with_targets(spark_schema(&wide, &[]).unwrap(), &targets).unwrap();
        let ints = arrow::array::Int32Array::from(vec![Some(-7), None]);
        let out = conform(
            &RecordBatch::try_new(wide, vec![Arc::new(ints)]).unwrap(),
            &target,
        )
        .unwrap();
        assert_eq!(out.column(0).as_primitive::<Int64Type>().value(0), -7);
    }

    #[test]
    fn timestamps_are_microseconds_zoned_when_the_file_says_so_or_int96() {
        let naive = Field::new("t", DataType::Timestamp(TimeUnit::Nanosecond, None), true);
        let zoned = DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()));
        assert_eq!(spark_field(&naive, true).unwrap().data_type(), &zoned);
        assert_eq!(
            spark_field(&naive, false).unwrap().data_type(),
            &DataType::Timestamp(TimeUnit::Microsecond, None)
        );
        let schema = Arc::new(Schema::new(vec![naive]));
        let nanos = TimestampNanosecondArray::from(vec![Some(1_999), Some(-1_001), None]);
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(nanos)]).unwrap();
        let out = conform(&batch, &spark_schema(&schema, &[]).unwrap()).unwrap();
        let micros = out
            .column(0)
            .as_primitive::<arrow::datatypes::TimestampMicrosecondType>();
        assert_eq!(micros.value(0), 1);
        assert_eq!(micros.value(1), -1, "toward zero, as Arrow casts");
        assert!(micros.is_null(2));
    }

    #[test]
    fn string_views_cross_as_plain_strings_and_unknown_types_are_named() {
        let field = Field::new("s", DataType::Utf8View, true);
        let schema = Arc::new(Schema::new(vec![field]));
        let views = StringViewArray::from(vec![Some("a"), None, Some("")]);
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(views)]).unwrap();
        let out = conform(&batch, &spark_schema(&schema, &[]).unwrap()).unwrap();
        assert_eq!(out.column(0).as_string::<i32>().value(2), "");
        let time = Field::new("at", DataType::Time64(TimeUnit::Microsecond), true);
        let e = spark_field(&time, false).unwrap_err();
        assert!(e.to_string().contains("column 'at'"), "{e}");
    }
}
