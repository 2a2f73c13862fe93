//! A dataset of many files holds a bounded number of them open (alone in its test binary, so
//! counting this process's file descriptors is not disturbed by other tests).

use std::fs::File;
use std::sync::Arc;

use arrow::array::{AsArray, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Int64Type, Schema};
use parquet::arrow::ArrowWriter;

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

#[test]
fn open_files_are_bounded() {
    if !std::path::Path::new("/proc/self/fd").exists() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
    let files = 400;
    for i in 0..files {
        let path = dir.path().join(format!("part-{i:04}.parquet"));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from(vec![
                i as i64 * 2,
                i as i64 * 2 + 1,
            ]))],
        )
        .unwrap();
        let mut w =
            ArrowWriter::try_new(File::create(path).unwrap(), schema.clone(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }
    let baseline = open_fds();
    let scan = tamis::Scan::open(dir.path().to_str().unwrap()).unwrap();
    let bound = tamis::dataset::KEEP_OPEN + 2 * 2 + 1 + 4;
    let mut peak = open_fds() - baseline;
    let mut stream = scan.threads(2).batch_size(1).batches().unwrap();
    let mut ids = Vec::new();
    for b in &mut stream {
        let b = b.unwrap();
        ids.extend(
            b.column(0)
                .as_primitive::<Int64Type>()
                .values()
                .iter()
                .copied(),
        );
        peak = peak.max(open_fds().saturating_sub(baseline));
    }
    assert!(ids.iter().copied().eq(0..2 * files as i64));
    assert_eq!(stream.metrics().files, files as u64);
    assert!(peak <= bound, "{peak} files open at once (bound {bound})");
    drop(stream);
    // Finished tasks drop their file a moment after sending their batch.
    let closed = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(10));
        open_fds() <= baseline
    });
    assert!(closed, "{} files still open", open_fds() - baseline);
}
