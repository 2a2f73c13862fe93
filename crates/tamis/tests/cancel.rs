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

/// `ScanStream::drive`: every row in order, a limit, a consumer that stops, and a cancel from
/// another thread (a `Cancelled` error, not a quiet end).
#[test]
fn a_driven_scan_stops_when_told_and_says_when_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(dir.path());
    let values = |batches: &[RecordBatch]| -> Vec<i64> {
        batches
            .iter()
            .flat_map(|b| {
                let x = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
                x.values().to_vec()
            })
            .collect()
    };
    let driven = |limit: Option<usize>, stop_after: usize| {
        let mut stream = tamis::Scan::open(&path)
            .unwrap()
            .filter("x < 30000 OR x >= 90000")
            .unwrap()
            .batch_size(700)
            .limit(limit)
            .batches()
            .unwrap();
        let mut got = Vec::new();
        stream
            .drive(|b| {
                got.push(b);
                got.len() < stop_after
            })
            .map(|()| got)
    };
    let all = values(&driven(None, usize::MAX).unwrap());
    let want: Vec<i64> = (0..100_000)
        .filter(|x| *x < 30_000 || *x >= 90_000)
        .collect();
    assert_eq!(all, want);
    let limited = values(&driven(Some(1_234), usize::MAX).unwrap());
    assert_eq!(limited, all[..1_234]);
    // The consumer stops after two batches: nothing more is made.
    assert_eq!(driven(None, 2).unwrap().len(), 2);
    // Cancelled by another thread while it runs.
    let mut stream = tamis::Scan::open(&path).unwrap().batches().unwrap();
    let canceller = stream.canceller();
    let mut seen = 0;
    let e = stream
        .drive(|_| {
            seen += 1;
            if seen == 3 {
                let c = canceller.clone();
                std::thread::spawn(move || c.cancel()).join().unwrap();
            }
            true
        })
        .unwrap_err();
    assert_eq!(e.kind, tamis::ErrorKind::Cancelled, "{e}");
    // A stream already iterated cannot be driven.
    let mut stream = tamis::Scan::open(&path).unwrap().batches().unwrap();
    stream.next().unwrap().unwrap();
    assert!(stream.drive(|_| true).is_err());
}
