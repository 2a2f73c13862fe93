//! `tamis::Dataset` keeps metadata across scans: repeated point lookups read no footer and no
//! page index again, return the rows a fresh scan returns, and the budget closes files.

use std::fs::File;
use std::sync::Arc;

use arrow::array::{AsArray, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Int64Type, Schema};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::{EnabledStatistics, WriterProperties};

fn write_files(dir: &std::path::Path, files: usize, rows: i64) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, false),
    ]));
    let props = WriterProperties::builder()
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_data_page_row_count_limit(500)
        .set_write_batch_size(500)
        .build();
    for f in 0..files {
        let ids: Vec<i64> = (0..rows).map(|i| f as i64 * rows + i).collect();
        let names: Vec<String> = ids.iter().map(|i| format!("name-{i}")).collect();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(ids)),
                Arc::new(StringArray::from(names)),
            ],
        )
        .unwrap();
        let path = dir.join(format!("part-{f}.parquet"));
        let mut w = ArrowWriter::try_new(
            File::create(path).unwrap(),
            schema.clone(),
            Some(props.clone()),
        )
        .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }
}

fn lookup(scan: tamis::Scan, id: i64) -> (Vec<i64>, Vec<String>, tamis::ScanMetrics) {
    let mut stream = scan
        .filter(&format!("id = {id}"))
        .unwrap()
        .threads(1)
        .batches()
        .unwrap();
    let (mut ids, mut names) = (Vec::new(), Vec::new());
    for b in stream.by_ref() {
        let b = b.unwrap();
        ids.extend(
            b.column(0)
                .as_primitive::<Int64Type>()
                .values()
                .iter()
                .copied(),
        );
        names.extend(
            b.column(1)
                .as_string::<i32>()
                .iter()
                .map(|s| s.unwrap().to_string()),
        );
    }
    (ids, names, stream.metrics())
}

#[test]
fn repeated_lookups_reuse_the_metadata() {
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path(), 3, 20_000);
    let path = dir.path().to_str().unwrap();
    let ds = tamis::Dataset::open(path).unwrap();
    assert_eq!(ds.files().len(), 3);
    for id in [5, 20_123, 59_999, 31_000, 5] {
        let (fresh_ids, fresh_names, fresh) = lookup(tamis::Scan::open(path).unwrap(), id);
        let (ids, names, warm) = lookup(ds.scan(), id);
        assert_eq!(ids, vec![id]);
        assert_eq!(names, vec![format!("name-{id}")]);
        assert_eq!((&ids, &names), (&fresh_ids, &fresh_names));
        // A fresh scan reads three footers; the dataset reads only data pages and, the first
        // time a row group is reached, its page index.
        assert!(warm.requests < fresh.requests, "{warm:?} vs {fresh:?}");
        assert!(warm.bytes_read < fresh.bytes_read);
    }
    // Asked again, the page index and the id column's dictionary are in memory: the lookup
    // reads only the id page, then the name page with its dictionary.
    let (_, _, again) = lookup(ds.scan(), 20_123);
    assert!(again.requests <= 2, "{again:?}");
    assert_eq!(again.time_metadata_ns, 0);
    assert!(ds.metadata_bytes() > 0);
    assert_eq!(ds.open_files(), 3);
}

#[test]
fn the_budget_closes_files_and_scans_still_work() {
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path(), 3, 5_000);
    let path = dir.path().to_str().unwrap();
    let ds = tamis::Dataset::open_with(path, &Default::default(), Some(1)).unwrap();
    assert_eq!(ds.metadata_bytes(), 0);
    for _ in 0..2 {
        // What the last scan decoded is dropped before the next one starts.
        let scan = ds.scan();
        assert!(ds.metadata_bytes() <= 1);
        let (ids, _, m) = lookup(scan, 12_345);
        assert_eq!(ids, vec![12_345]);
        // Reopened from the footer read at open: no footer read again.
        assert_eq!(m.time_metadata_ns, 0);
    }
    // A file that changed since the dataset was opened is an error naming it, not its rows.
    write_files(dir.path(), 3, 5_001);
    // Every file is checked before the scan plans (the first one changed is named).
    let scan = ds.scan();
    let e = match scan.filter("id = 7000").unwrap().batches() {
        Err(e) => e,
        Ok(mut batches) => batches.find_map(|b| b.err()).expect("an error"),
    };
    assert!(e.to_string().contains("changed"), "{e}");
    assert!(e.to_string().contains("part-0.parquet"), "{e}");
}
