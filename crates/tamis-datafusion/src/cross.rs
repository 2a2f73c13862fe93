//! Crossing between tamis's arrow (60) and DataFusion's (59) through the Arrow C Data
//! Interface: the buffers are shared, not copied.
//!
//! DataFusion 55 is built on arrow 59 and tamis on arrow 60 (docs/DESIGN.md says why the
//! workspace keeps both). Schemas, batches and statistics arrays cross here and nowhere else:
//! one arrow exports an `FFI_ArrowArray` / `FFI_ArrowSchema`, the other imports them.

use std::mem::{align_of, size_of};
use std::sync::Arc;

use datafusion::common::{DataFusionError, Result};

/// The C Data Interface structs are `#[repr(C)]` in both versions, as the Arrow
/// specification lays them out; this checks the two agree in size and alignment.
const _: () = {
    assert!(
        size_of::<tamis_arrow::ffi::FFI_ArrowArray>() == size_of::<arrow::ffi::FFI_ArrowArray>()
    );
    assert!(
        align_of::<tamis_arrow::ffi::FFI_ArrowArray>() == align_of::<arrow::ffi::FFI_ArrowArray>()
    );
    assert!(
        size_of::<tamis_arrow::ffi::FFI_ArrowSchema>() == size_of::<arrow::ffi::FFI_ArrowSchema>()
    );
    assert!(
        align_of::<tamis_arrow::ffi::FFI_ArrowSchema>()
            == align_of::<arrow::ffi::FFI_ArrowSchema>()
    );
};

fn error(what: &str, e: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Internal(format!("cannot pass {what} between arrow versions: {e}"))
}

/// Moves an exported C struct from one arrow version's type to the other's.
macro_rules! move_struct {
    ($value:expr, $to:ty) => {{
        let mut value = $value;
        // SAFETY: both types are the Arrow C Data Interface struct, `#[repr(C)]` with the same
        // fields, size and alignment (checked above); `value` is initialised, aligned and
        // exclusively ours. `from_raw` moves it out and leaves an empty struct (no release
        // callback) behind, so dropping `value` afterwards releases nothing twice.
        unsafe { <$to>::from_raw(std::ptr::from_mut(&mut value).cast::<$to>()) }
    }};
}

/// One direction of the crossing, for arrow crate `$from` to arrow crate `$to`.
macro_rules! crossing {
    ($from:ident => $to:ident, $array:ident, $schema:ident, $batch:ident) => {
        /// An array, its buffers shared.
        pub fn $array(array: &$from::array::ArrayRef) -> Result<$to::array::ArrayRef> {
            let (ffi_array, ffi_schema) =
                $from::ffi::to_ffi(&array.to_data()).map_err(|e| error("an array", e))?;
            let ffi_array = move_struct!(ffi_array, $to::ffi::FFI_ArrowArray);
            let ffi_schema = move_struct!(ffi_schema, $to::ffi::FFI_ArrowSchema);
            // SAFETY: the structs were just exported by arrow from a valid `ArrayData` and
            // describe it (buffers, lengths, type) as the C Data Interface specifies.
            let data = unsafe { $to::ffi::from_ffi(ffi_array, &ffi_schema) }
                .map_err(|e| error("an array", e))?;
            Ok($to::array::make_array(data))
        }

        /// A schema, with its fields' and its own metadata.
        pub fn $schema(schema: &$from::datatypes::Schema) -> Result<$to::datatypes::SchemaRef> {
            let ffi =
                $from::ffi::FFI_ArrowSchema::try_from(schema).map_err(|e| error("a schema", e))?;
            let ffi = move_struct!(ffi, $to::ffi::FFI_ArrowSchema);
            let schema =
                $to::datatypes::Schema::try_from(&ffi).map_err(|e| error("a schema", e))?;
            Ok(Arc::new(schema))
        }

        /// A batch, as `schema` (already crossed) describes it; its row count kept when it
        /// has no columns.
        pub fn $batch(
            batch: &$from::array::RecordBatch,
            schema: &$to::datatypes::SchemaRef,
        ) -> Result<$to::array::RecordBatch> {
            let columns = batch
                .columns()
                .iter()
                .map($array)
                .collect::<Result<Vec<_>>>()?;
            let options =
                $to::array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
            $to::array::RecordBatch::try_new_with_options(schema.clone(), columns, &options)
                .map_err(|e| error("a batch", e))
        }
    };
}

crossing!(tamis_arrow => arrow, array_to_datafusion, schema_to_datafusion, batch_to_datafusion);
crossing!(arrow => tamis_arrow, array_to_tamis, schema_to_tamis, batch_to_tamis);

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use tamis_arrow::array::{
        Array, ArrayRef, DictionaryArray, Float64Array, Int32Array, ListArray, StringArray,
        StringViewArray, StructArray,
    };
    use tamis_arrow::datatypes::{DataType, Field, Int32Type, Schema};

    fn round_trip(array: ArrayRef) {
        let there = array_to_datafusion(&array).unwrap();
        assert_eq!(there.len(), array.len());
        assert_eq!(there.null_count(), array.null_count());
        let back = array_to_tamis(&there).unwrap();
        assert_eq!(back.to_data(), array.to_data());
    }

    #[test]
    fn arrays_round_trip_with_nulls_offsets_and_nesting() {
        round_trip(Arc::new(Int32Array::from(vec![Some(1), None, Some(-3)])));
        round_trip(Arc::new(Float64Array::from(vec![0.0, -0.0, f64::NAN])));
        round_trip(Arc::new(StringArray::from(vec![
            Some(""),
            None,
            Some("ünï"),
        ])));
        round_trip(Arc::new(StringViewArray::from(vec![
            "a rather long string, not inline",
            "",
        ])));
        let sliced: ArrayRef = Arc::new(Int32Array::from((0..100).collect::<Vec<_>>()));
        round_trip(sliced.slice(37, 20));
        let dict: DictionaryArray<Int32Type> = vec!["x", "y", "x"].into_iter().collect();
        round_trip(Arc::new(dict));
        round_trip(Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(
            vec![Some(vec![Some(1), None]), None, Some(vec![])],
        )));
        let s = StructArray::from(vec![(
            Arc::new(Field::new("a", DataType::Int32, true)),
            Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef,
        )]);
        round_trip(Arc::new(s));
    }

    #[test]
    fn schemas_and_empty_batches_cross() {
        let schema = Schema::new(vec![Field::new("a", DataType::Int32, false)
            .with_metadata(HashMap::from([("k".to_string(), "v".to_string())]))])
        .with_metadata(HashMap::from([("m".to_string(), "n".to_string())]));
        let there = schema_to_datafusion(&schema).unwrap();
        assert_eq!(there.metadata().get("m").map(String::as_str), Some("n"));
        assert_eq!(schema_to_tamis(&there).unwrap().as_ref(), &schema);
        let empty = arrow::datatypes::SchemaRef::new(arrow::datatypes::Schema::empty());
        let options = tamis_arrow::array::RecordBatchOptions::new().with_row_count(Some(7));
        let batch = tamis_arrow::array::RecordBatch::try_new_with_options(
            Arc::new(Schema::empty()),
            vec![],
            &options,
        )
        .unwrap();
        assert_eq!(batch_to_datafusion(&batch, &empty).unwrap().num_rows(), 7);
    }
}
