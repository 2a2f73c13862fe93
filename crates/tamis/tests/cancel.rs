//! A cancelled scan says so: its next item is a `Cancelled` error, never a quiet end that a
//! consumer could take for the whole result.

use std::fs::File;
use std::sync::Arc;

use arrow::array::{Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

fn file(dir: &std::path::Path) -> String {
    let path = dir.join("t.parquet");
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(Int64Array::from(
            (0..100_000).collect::<Vec<i64>>(),
        ))],
    )
    .unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(1_000))
        .build();
    let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_cancelled_scan_ends_with_a_cancelled_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(dir.path());
    // Cancelled mid-way.
    let mut stream = tamis::Scan::open(&path)
        .unwrap()
        .threads(1)
        .batches()
        .unwrap();
    let first = stream.next().unwrap().unwrap();
    assert!(first.num_rows() > 0);
    stream.canceller().cancel();
    let e = stream.next().expect("an item after cancel").unwrap_err();
    assert_eq!(e.kind, tamis::ErrorKind::Cancelled, "{e}");
    assert!(stream.next().is_none());
    // Cancelled before the first batch.
    let mut stream = tamis::Scan::open(&path).unwrap().batches().unwrap();
    stream.canceller().cancel();
    let e = stream.next().unwrap().unwrap_err();
    assert_eq!(e.kind, tamis::ErrorKind::Cancelled);
    // Not cancelled: every row, then None (a limit is a normal end too).
    let rows: usize = tamis::Scan::open(&path)
        .unwrap()
        .batches()
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .sum();
    assert_eq!(rows, 100_000);
    let rows: usize = tamis::Scan::open(&path)
        .unwrap()
        .limit(Some(1_500))
        .batches()
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .sum();
    assert_eq!(rows, 1_500);
}
