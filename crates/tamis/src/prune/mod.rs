//! Pruning: skipping row groups, pages and predicate evaluation from metadata alone.
//!
//! Every level narrows the *same* bound predicate (or the same row set) and hands the result to
//! the next; each fails open — missing, inexact or odd evidence keeps rows, never drops a row
//! that could match.
//!
//! ```text
//!  Predicate (NNF)                        per row group
//!     │
//!     ├─ statistics.rs  footer statistics (min/max/nulls)  → Predicate::False: skip the group
//!     │                 statistics_verdict                    Predicate::True: no filtering
//!     │                 (taken once, when the scan binds its files; replayed per row group)
//!     │
//!     ├─ bloom.rs       Bloom filters, = and IN leaves      → a literal absent ⇒ leaf False
//!     │                 bloom_verdict
//!     │
//!     ├─ dictionary.rs  all-dictionary chunks: each leaf    → no entry matches ⇒ leaf False,
//!     │                 evaluated once per dictionary entry   all match & no nulls ⇒ leaf True
//!     │                 dictionary_verdict                    (a conjunct skipped)
//!     │
//!     └─ page_index.rs  ColumnIndex + OffsetIndex           → candidate row ranges within the
//!                       page_ranges / page_pruning            group (AND ∩, OR ∪)
//!                                     │
//!                                     ▼
//!                       decode and evaluate only the remaining predicate on the remaining rows
//! ```
//!
//! Each row-group level implements [`level::Level`] (the predicate and the row group's metadata
//! in, the narrowed predicate and candidate rows out); the scan runs them as lists.
//!
//! All levels share [`bounds::leaf_verdict`]: a three-valued [`Verdict`](crate::expr::Verdict)
//! of one leaf over a set of values described by [`Bounds`] (min, max, exactness, null count,
//! possible NaN).
//!
//! Statistics trust rules (see [`bounds::min_max_trusted`]): statistics read from the deprecated
//! `min` / `max` fields were computed with a signed comparison and are used only for signed
//! integers, dates/times/timestamps, INT32/INT64 decimals, booleans and FLOAT/DOUBLE; `min_value`
//! / `max_value` follow the type-defined order (unsigned bytewise for strings, unsigned for
//! UINT, signed value for decimals). parquet-rs 60.1 exposes deprecated statistics instead of
//! hiding them (`Statistics::is_min_max_deprecated`), so tamis does the filtering. Given the
//! footer's column orders ([`statistics_verdict_with_orders`]), a legacy file (no orders) gets
//! only the signed-safe types, an unknown order nothing. Statistics of this parquet version carry
//! a NaN count: a float chunk may hold NaN unless `nan_count == Some(0)`. Byte-string bounds are
//! exact only if the writer said so (`is_*_value_exact`); fixed-width bounds cannot be truncated.
//!
//! Bloom filters: a missing or undecodable filter keeps the row group; an I/O error reading one
//! is returned by [`bloom_verdict`]; [`bloom_check`] never fails and lists the errors.

pub(crate) mod bloom;
pub(crate) mod bounds;
pub(crate) mod dictionary;
pub(crate) mod level;
pub(crate) mod page_index;
pub(crate) mod statistics;

#[cfg(test)]
pub(crate) mod test_util {
    use std::sync::Arc;

    use arrow::array::{
        ArrayRef, Date32Array, Decimal128Array, Float32Array, Float64Array, Int32Array, Int64Array,
        StringArray, UInt32Array,
    };
    use arrow::record_batch::RecordBatch;
    use bytes::Bytes;
    use parquet::arrow::ArrowWriter;
    use parquet::file::metadata::ParquetMetaData;
    use parquet::file::properties::WriterProperties;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::file::serialized_reader::ReadOptionsBuilder;

    use crate::schema::{leaf_columns, LeafColumn};

    /// Columns: i32, i64, f32, f64, s (utf8), d (decimal(20,2) on FLBA(9)), day (date32),
    /// u (uint32), n (i32, every other row null). Row r holds: i32 = 2r, i64 = 2r, f32 = f64 =
    /// 2r + 0.5, s = "s{2r:05}", d = 2r (unscaled), day = 2r, u = 3_000_000_000 + 2r, n = r.
    pub(crate) fn sample_file(rows: usize, props: WriterProperties) -> Bytes {
        let r = || (0..rows as i64).map(|r| 2 * r);
        let cols: Vec<(&str, ArrayRef)> = vec![
            (
                "i32",
                Arc::new(Int32Array::from_iter_values(r().map(|v| v as i32))),
            ),
            ("i64", Arc::new(Int64Array::from_iter_values(r()))),
            (
                "f32",
                Arc::new(Float32Array::from_iter_values(r().map(|v| v as f32 + 0.5))),
            ),
            (
                "f64",
                Arc::new(Float64Array::from_iter_values(r().map(|v| v as f64 + 0.5))),
            ),
            (
                "s",
                Arc::new(StringArray::from_iter_values(
                    r().map(|v| format!("s{v:05}")),
                )),
            ),
            (
                "d",
                Arc::new(
                    Decimal128Array::from_iter_values(r().map(|v| v as i128))
                        .with_precision_and_scale(20, 2)
                        .unwrap(),
                ),
            ),
            (
                "day",
                Arc::new(Date32Array::from_iter_values(r().map(|v| v as i32))),
            ),
            (
                "u",
                Arc::new(UInt32Array::from_iter_values(
                    r().map(|v| 3_000_000_000 + v as u32),
                )),
            ),
            (
                "n",
                Arc::new(Int32Array::from_iter(
                    (0..rows as i32).map(|v| (v % 2 == 0).then_some(v)),
                )),
            ),
        ];
        let batch = RecordBatch::try_from_iter(cols).unwrap();
        let mut out = Vec::new();
        let mut w = ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        Bytes::from(out)
    }

    /// The file's metadata (with page indexes) and leaf columns.
    pub(crate) fn open(bytes: &Bytes) -> (Arc<ParquetMetaData>, Vec<LeafColumn>) {
        let opts = ReadOptionsBuilder::new().with_page_index().build();
        let reader = SerializedFileReader::new_with_options(bytes.clone(), opts).unwrap();
        let md = Arc::new(reader.metadata().clone());
        let leaves = leaf_columns(md.file_metadata().schema_descr());
        (md, leaves)
    }

    pub(crate) fn col(leaves: &[LeafColumn], name: &str) -> usize {
        leaves.iter().position(|l| l.path == name).unwrap()
    }
}
