//! No 2 GiB cliff: a row group whose selected strings (or binary values) in one column exceed
//! the 2 GiB that Arrow's `Utf8`/`Binary` 32-bit offsets address is decoded with 64-bit offsets
//! (`FileOutput::assemble` keeps them), and the stream hands it out here in batches of the
//! scan's schema, each column under 2 GiB: the rows are halved until every piece fits. The
//! values are not copied; only the offsets are rebased.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, RecordBatch, RecordBatchOptions, StringArray,
};
use arrow::buffer::{Buffer, OffsetBuffer};
use arrow::datatypes::{DataType, SchemaRef};

use crate::dataset::schema::conform;
use crate::error::{Error, Result};

/// Most bytes one 32-bit-offset array holds.
const MAX_BYTES: usize = i32::MAX as usize;

/// Appends `batch`, in `schema`'s types, to `out`: as is when its schema is `schema`, else in
/// pieces whose widened columns fit 32-bit offsets.
pub(super) fn push_fitted(
    batch: RecordBatch,
    schema: &SchemaRef,
    out: &mut VecDeque<RecordBatch>,
) -> Result<()> {
    if batch.schema_ref() == schema {
        out.push_back(batch);
        return Ok(());
    }
    push_pieces(batch, schema, MAX_BYTES, out)
}

fn push_pieces(
    batch: RecordBatch,
    schema: &SchemaRef,
    max_bytes: usize,
    out: &mut VecDeque<RecordBatch>,
) -> Result<()> {
    let rows = batch.num_rows();
    let largest = batch.columns().iter().map(value_bytes).max().unwrap_or(0);
    if largest <= max_bytes {
        let columns = batch
            .columns()
            .iter()
            .zip(schema.fields())
            .map(|(c, f)| narrow(c).and_then(|c| conform(&c, f.data_type())))
            .collect::<Result<Vec<_>>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        let piece = RecordBatch::try_new_with_options(schema.clone(), columns, &options)
            .map_err(|e| Error::internal(format!("building a result batch: {e}")))?;
        out.push_back(piece);
        return Ok(());
    }
    if rows <= 1 {
        return Err(Error::resource(format!(
            "one value holds {largest} bytes, more than the {max_bytes} a string or binary \
             array addresses"
        )));
    }
    let half = rows / 2;
    push_pieces(batch.slice(0, half), schema, max_bytes, out)?;
    push_pieces(batch.slice(half, rows - half), schema, max_bytes, out)
}

/// Bytes of values a 64-bit-offset array spans (0 for other arrays).
fn value_bytes(a: &ArrayRef) -> usize {
    let span = |o: &[i64]| (o[o.len() - 1] - o[0]) as usize;
    match a.data_type() {
        DataType::LargeUtf8 => span(a.as_string::<i64>().value_offsets()),
        DataType::LargeBinary => span(a.as_binary::<i64>().value_offsets()),
        _ => 0,
    }
}

/// A 64-bit-offset array of at most 2 GiB as its 32-bit form (other arrays unchanged).
fn narrow(a: &ArrayRef) -> Result<ArrayRef> {
    let rebase = |offsets: &[i64], values: &Buffer| {
        let first = offsets[0];
        let rebased: Vec<i32> = offsets.iter().map(|&o| (o - first) as i32).collect();
        let len = (offsets[offsets.len() - 1] - first) as usize;
        (
            OffsetBuffer::new(rebased.into()),
            values.slice_with_length(first as usize, len),
        )
    };
    let fail = |e: arrow::error::ArrowError| Error::internal(format!("narrowing offsets: {e}"));
    Ok(match a.data_type() {
        DataType::LargeUtf8 => {
            let s = a.as_string::<i64>();
            let (offsets, values) = rebase(s.value_offsets(), s.values());
            Arc::new(StringArray::try_new(offsets, values, s.nulls().cloned()).map_err(fail)?)
        }
        DataType::LargeBinary => {
            let b = a.as_binary::<i64>();
            let (offsets, values) = rebase(b.value_offsets(), b.values());
            Arc::new(BinaryArray::try_new(offsets, values, b.nulls().cloned()).map_err(fail)?)
        }
        _ => a.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int32Array, LargeBinaryArray, LargeStringArray};
    use arrow::datatypes::{Field, Schema};

    fn batch(strings: &[Option<&str>]) -> (RecordBatch, SchemaRef) {
        let wide = Arc::new(Schema::new(vec![
            Field::new("i", DataType::Int32, false),
            Field::new("s", DataType::LargeUtf8, true),
            Field::new("b", DataType::LargeBinary, true),
        ]));
        let narrow = Arc::new(Schema::new(vec![
            Field::new("i", DataType::Int32, false),
            Field::new("s", DataType::Utf8, true),
            Field::new("b", DataType::Binary, true),
        ]));
        let n = strings.len() as i32;
        let bytes: Vec<Option<&[u8]>> = strings.iter().map(|s| s.map(str::as_bytes)).collect();
        let b = RecordBatch::try_new(
            wide,
            vec![
                Arc::new(Int32Array::from_iter_values(0..n)),
                Arc::new(LargeStringArray::from(strings.to_vec())),
                Arc::new(LargeBinaryArray::from(bytes)),
            ],
        )
        .unwrap();
        (b, narrow)
    }

    /// Pieces under a small byte limit hold the same rows, in order, in the narrow types.
    #[test]
    fn pieces_fit_and_keep_every_row() {
        let strings: Vec<Option<&str>> = vec![
            Some("aaaa"),
            None,
            Some(""),
            Some("bbbbbbbb"),
            Some("c"),
            None,
            Some("dddddd"),
            Some("ee"),
        ];
        let (b, schema) = batch(&strings);
        for limit in [8, 10, 16, 100] {
            let mut out = VecDeque::new();
            // Sliced first, as the stream does, so offsets do not start at 0.
            push_pieces(b.slice(1, 7), &schema, limit, &mut out).unwrap();
            let mut rows = Vec::new();
            for piece in &out {
                assert_eq!(piece.schema(), schema);
                let s = piece.column(1).as_string::<i32>();
                let bin = piece.column(2).as_binary::<i32>();
                let span = s.value_offsets()[s.len()] - s.value_offsets()[0];
                assert!(span as usize <= limit, "{limit}: {span}");
                for i in 0..piece.num_rows() {
                    let v = s.is_valid(i).then(|| s.value(i).to_string());
                    assert_eq!(
                        bin.is_valid(i).then(|| bin.value(i)),
                        v.as_deref().map(str::as_bytes)
                    );
                    rows.push(v);
                }
            }
            let want: Vec<Option<String>> =
                strings[1..].iter().map(|s| s.map(String::from)).collect();
            assert_eq!(rows, want, "{limit}");
        }
    }

    #[test]
    fn a_value_over_the_limit_is_a_resource_error() {
        let (b, schema) = batch(&[Some("aaaa"), Some("bbbbbbbbbbbb")]);
        let mut out = VecDeque::new();
        let e = push_pieces(b, &schema, 8, &mut out).unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::ResourceLimit, "{e}");
    }

    #[test]
    fn a_batch_in_the_schema_passes_unchanged() {
        let (b, schema) = batch(&[Some("x")]);
        let mut out = VecDeque::new();
        push_fitted(b.clone(), &b.schema(), &mut out).unwrap();
        assert_eq!(out.pop_front().unwrap(), b);
        push_fitted(b, &schema, &mut out).unwrap();
        assert_eq!(out.pop_front().unwrap().schema(), schema);
    }
}
