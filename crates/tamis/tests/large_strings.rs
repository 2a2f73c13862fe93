//! No 2 GiB cliff (issue 16): a row group whose selected strings exceed the 2 GiB one Arrow
//! `Utf8` array addresses comes back in several batches of the file's own types, every row
//! intact. The file (2 200 strings of 1 MiB, one row group, Zstandard) is written here; the
//! expected strings are computed from the row number, independently of any reader.

use std::sync::Arc;

use arrow::array::{Array, AsArray, Int32Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

const ROWS: i32 = 2200;
const VALUE_BYTES: usize = 1 << 20;

/// Row `i`'s string: its number, zero-padded to 8 digits, repeated to 1 MiB.
fn value(i: i32) -> String {
    format!("{i:08}").repeat(VALUE_BYTES / 8)
}

fn write(path: &std::path::Path) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int32, false),
        Field::new("s", DataType::Utf8, false),
    ]));
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).unwrap()))
        .set_dictionary_enabled(false)
        .set_max_row_group_row_count(Some(1 << 20))
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(file, schema.clone(), Some(props)).unwrap();
    for start in (0..ROWS).step_by(100) {
        let ids: Vec<i32> = (start..(start + 100).min(ROWS)).collect();
        let strings: Vec<String> = ids.iter().map(|&i| value(i)).collect();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int32Array::from(ids)),
                Arc::new(StringArray::from(strings)),
            ],
        )
        .unwrap();
        w.write(&batch).unwrap();
    }
    let meta = w.close().unwrap();
    assert_eq!(meta.row_groups().len(), 1, "one row group");
}

/// Scans with `filter`; checks every batch is in the file's types with under 2 GiB of
/// strings and every row's string; returns the row numbers read, in order.
fn scan(path: &str, filter: Option<&str>) -> (Vec<i32>, usize) {
    let mut scan = tamis::Scan::open(path).unwrap().memory_limit(12 << 30);
    if let Some(f) = filter {
        scan = scan.filter(f).unwrap();
    }
    let mut ids = Vec::new();
    let mut batches = 0;
    for b in scan.batches().unwrap() {
        let b = b.unwrap();
        batches += 1;
        assert_eq!(b.schema().field(1).data_type(), &DataType::Utf8);
        let i = b.column(0).as_primitive::<arrow::datatypes::Int32Type>();
        let s = b.column(1).as_string::<i32>();
        for r in 0..b.num_rows() {
            let id = i.value(r);
            assert!(s.value(r) == value(id), "row {id}: wrong string");
            ids.push(id);
        }
        assert!(s.value_offsets()[s.len()] - s.value_offsets()[0] >= 0);
    }
    (ids, batches)
}

#[test]
fn strings_over_2_gib_in_one_row_group_come_back_in_several_batches() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.parquet");
    write(&path);
    let p = path.to_str().unwrap();

    let (ids, batches) = scan(p, None);
    assert_eq!(ids, (0..ROWS).collect::<Vec<_>>());
    assert!(batches >= 2, "2.2 GiB of strings in {batches} batch");

    // A filter keeping 2 100 rows (2.05 GiB) selects them from the decoded pages.
    let (ids, batches) = scan(p, Some("i >= 100"));
    assert_eq!(ids, (100..ROWS).collect::<Vec<_>>());
    assert!(batches >= 2, "{batches}");

    // Under 2 GiB selected: one batch, as before.
    let (ids, batches) = scan(p, Some("i < 1000"));
    assert_eq!(ids, (0..1000).collect::<Vec<_>>());
    assert_eq!(batches, 1);
}
