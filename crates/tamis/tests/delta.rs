//! A Delta Lake table written here by hand, as the protocol describes it (PROTOCOL.md): a log
//! with column mapping in `name` mode (the files' columns have physical names) or in `id` mode
//! (the files' columns carry field ids, under names nothing else matches), a column added
//! later (older files lack it), a column dropped (a file still holds it), a partition column, a
//! deletion vector, and a file the log removed. tamis's rows are compared with the `parquet`
//! crate's reading of the files the log names, less the deleted positions, renamed and given
//! their partition values by this test.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use roaring::RoaringTreemap;
use tamis::table::AsOf;

/// Column mapping's two modes: how a reader finds a table column in a file.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mapping {
    /// By its physical name.
    Name,
    /// By its field id (the file's names are not the physical ones).
    Id,
}

impl Mapping {
    /// The name a file written in this mode gives the column of this physical name.
    fn file_column(self, physical: &str) -> String {
        match self {
            Mapping::Name => physical.to_string(),
            Mapping::Id => format!("written-as-{physical}"),
        }
    }
}

/// The column mapping id of each physical column (the table's schema gives the same).
fn field_id(physical: &str) -> i32 {
    match physical {
        "col-id" => 1,
        "col-name" => 2,
        "col-gone" => 3,
        "col-p" => 4,
        "col-extra" => 5,
        other => panic!("no id for {other}"),
    }
}

/// Writes a Parquet file of these physical columns, named and given field ids as `mode`
/// writes them; small row groups so that deleted rows fall in several.
fn write_file(path: &Path, columns: Vec<(&str, ArrayRef)>, mode: Mapping) -> u64 {
    let schema = Arc::new(Schema::new(
        (columns.iter())
            .map(|(n, a)| {
                let field = Field::new(mode.file_column(n), a.data_type().clone(), true);
                match mode {
                    Mapping::Name => field,
                    Mapping::Id => field.with_metadata(std::collections::HashMap::from([(
                        "PARQUET:field_id".to_string(),
                        field_id(n).to_string(),
                    )])),
                }
            })
            .collect::<Vec<_>>(),
    ));
    let batch =
        RecordBatch::try_new(schema.clone(), columns.into_iter().map(|c| c.1).collect()).unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(300))
        .build();
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(path).unwrap(), schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    std::fs::metadata(path).unwrap().len()
}

/// A deletion vector file (version 1, one vector at offset 1): its descriptor's JSON.
fn write_deletion_vector(path: &Path, rows: &[u64]) -> String {
    let map: RoaringTreemap = rows.iter().copied().collect();
    let mut bitmap = 1681511377u32.to_le_bytes().to_vec();
    map.serialize_into(&mut bitmap).unwrap();
    let mut file = vec![1u8];
    file.extend((bitmap.len() as u32).to_be_bytes());
    file.extend(&bitmap);
    file.extend(crc32(&bitmap).to_be_bytes());
    std::fs::write(path, file).unwrap();
    let url = url::Url::from_file_path(path).unwrap();
    format!(
        r#"{{"storageType":"p","pathOrInlineDv":"{url}","offset":1,"sizeInBytes":{},"cardinality":{}}}"#,
        bitmap.len(),
        map.len()
    )
}

/// CRC-32 (IEEE), bit by bit: a test needs no table.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn field(name: &str, t: &str, id: u32, physical: &str) -> String {
    format!(
        r#"{{"name":"{name}","type":"{t}","nullable":true,"metadata":{{"delta.columnMapping.id":{id},"delta.columnMapping.physicalName":"{physical}"}}}}"#
    )
}

struct Table {
    root: std::path::PathBuf,
    /// Deleted positions in `a.parquet`.
    deleted: Vec<u64>,
    mode: Mapping,
}

/// The table: `id` (long, physical `col-id`), `name` (string, `col-name`), `extra` (long,
/// `col-extra`: added after `a.parquet` was written, as an integer, and widened to long since,
/// so `b.parquet` holds it as INT32), `p` (string partition, `col-p`). `a.parquet` also holds
/// `col-gone`, a column since dropped; `old.parquet` was removed. Column mapping in `name`
/// mode.
fn table(dir: &Path) -> Table {
    table_in(dir, Mapping::Name)
}

fn table_in(dir: &Path, mode: Mapping) -> Table {
    let root = dir.join("t");
    std::fs::create_dir_all(root.join("_delta_log")).unwrap();
    std::fs::create_dir_all(root.join("col-p=x")).unwrap();
    std::fs::create_dir_all(root.join("col-p=y")).unwrap();
    let n = 1000i64;
    let names = |k: i64| -> ArrayRef {
        Arc::new(StringArray::from_iter(
            (0..n).map(|i| (i % 9 != 0).then(|| format!("n{}", (i * k) % 13))),
        ))
    };
    let a = write_file(
        &root.join("col-p=x/a.parquet"),
        vec![
            ("col-id", Arc::new(Int64Array::from_iter_values(0..n))),
            ("col-name", names(7)),
            (
                "col-gone",
                Arc::new(Int32Array::from_iter_values(0..n as i32)),
            ),
        ],
        mode,
    );
    let b = write_file(
        &root.join("col-p=y/b.parquet"),
        vec![
            (
                "col-extra",
                Arc::new(Int32Array::from_iter_values((0..n as i32).map(|i| i * 10))),
            ),
            ("col-name", names(3)),
            ("col-id", Arc::new(Int64Array::from_iter_values(n..2 * n))),
        ],
        mode,
    );
    let old = write_file(
        &root.join("col-p=x/old.parquet"),
        vec![("col-id", Arc::new(Int64Array::from_iter_values(0..5)))],
        mode,
    );
    let deleted: Vec<u64> = (0..1000u64)
        .filter(|i| i % 7 == 0 || (60..70).contains(i) || *i == 999)
        .collect();
    let dv = write_deletion_vector(&root.join("deletion_vector.bin"), &deleted);
    let schema = format!(
        r#"{{"type":"struct","fields":[{},{},{},{}]}}"#,
        field("id", "long", 1, "col-id"),
        field("name", "string", 2, "col-name"),
        field("p", "string", 4, "col-p"),
        field("extra", "long", 5, "col-extra").replace(
            r#""delta.columnMapping.id":5"#,
            r#""delta.typeChanges":[{"fromType":"integer","toType":"long"}],"delta.columnMapping.id":5"#
        ),
    );
    let metadata = serde_json::json!({"metaData": {
        "id": "6c7e0b0e-0000-4000-8000-000000000001",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": schema,
        "partitionColumns": ["p"],
        "configuration": {"delta.columnMapping.mode": match mode { Mapping::Name => "name", Mapping::Id => "id" },
                          "delta.columnMapping.maxColumnId": "5",
                          "delta.enableDeletionVectors": "true", "delta.enableTypeWidening": "true"},
        "createdTime": 1,
    }});
    let protocol = serde_json::json!({"protocol": {
        "minReaderVersion": 3, "minWriterVersion": 7,
        "readerFeatures": ["columnMapping", "deletionVectors", "typeWidening"],
        "writerFeatures": ["columnMapping", "deletionVectors", "typeWidening"],
    }});
    // Statistics by physical name, as column mapping writes them: `col-id`'s range per file.
    let stats = |path: &str| match path {
        "col-p=x/a.parquet" => (0, 999, 1000),
        "col-p=y/b.parquet" => (1000, 1999, 1000),
        _ => (0, 4, 5),
    };
    let add = |path: &str, size: u64, p: &str| {
        let (min, max, n) = stats(path);
        let stats = format!(
            r#"{{"numRecords":{n},"minValues":{{"col-id":{min}}},"maxValues":{{"col-id":{max}}},"nullCount":{{"col-id":0}}}}"#
        );
        serde_json::json!({"add": {"path": path, "partitionValues": {"col-p": p}, "size": size,
            "modificationTime": 1, "dataChange": true, "stats": stats}})
    };
    let lines = |actions: Vec<serde_json::Value>| {
        actions.iter().map(|a| format!("{a}\n")).collect::<String>()
    };
    std::fs::write(
        root.join("_delta_log/00000000000000000000.json"),
        lines(vec![
            protocol,
            metadata,
            add("col-p=x/a.parquet", a, "x"),
            add("col-p=x/old.parquet", old, "x"),
        ]),
    )
    .unwrap();
    let mut with_dv = add("col-p=x/a.parquet", a, "x");
    with_dv["add"]["deletionVector"] = serde_json::from_str(&dv).unwrap();
    std::fs::write(
        root.join("_delta_log/00000000000000000001.json"),
        lines(vec![
            serde_json::json!({"remove": {"path": "col-p=x/old.parquet", "deletionTimestamp": 2,
                "dataChange": true, "partitionValues": {"col-p": "x"}, "size": old}}),
            serde_json::json!({"remove": {"path": "col-p=x/a.parquet", "deletionTimestamp": 2,
                "dataChange": true, "partitionValues": {"col-p": "x"}, "size": a}}),
            with_dv,
            add("col-p=y/b.parquet", b, "y"),
        ]),
    )
    .unwrap();
    Table {
        root,
        deleted,
        mode,
    }
}

/// One row, by logical column: id, name, p, extra.
type Row = (i64, Option<String>, String, Option<i64>);

/// A filter's text and which rows it keeps.
type Case = (&'static str, Box<dyn Fn(&Row) -> bool>);

/// The oracle: the parquet crate reads the two live files; this test drops the deleted
/// positions, maps the physical names and adds the partition values.
fn expected(t: &Table) -> Vec<Row> {
    let mut rows = Vec::new();
    for (file, p, deleted) in [
        ("col-p=x/a.parquet", "x", &t.deleted[..]),
        ("col-p=y/b.parquet", "y", &[][..]),
    ] {
        let f = std::fs::File::open(t.root.join(file)).unwrap();
        let mut position = 0u64;
        for batch in ParquetRecordBatchReaderBuilder::try_new(f)
            .unwrap()
            .build()
            .unwrap()
        {
            let batch = batch.unwrap();
            let col = |n: &str| batch.column_by_name(&t.mode.file_column(n)).cloned();
            let ids = col("col-id").unwrap();
            let ids = ids.as_any().downcast_ref::<Int64Array>().unwrap();
            let names = col("col-name").unwrap();
            let names = names.as_any().downcast_ref::<StringArray>().unwrap();
            // Written as INT32 before the column was widened.
            let extra =
                col("col-extra").map(|e| arrow::compute::cast(&e, &DataType::Int64).unwrap());
            let extra = extra
                .as_ref()
                .map(|e| e.as_any().downcast_ref::<Int64Array>().unwrap());
            for i in 0..batch.num_rows() {
                if !deleted.contains(&(position + i as u64)) {
                    rows.push((
                        ids.value(i),
                        names.is_valid(i).then(|| names.value(i).to_string()),
                        p.to_string(),
                        extra.and_then(|e| e.is_valid(i).then(|| e.value(i))),
                    ));
                }
            }
            position += batch.num_rows() as u64;
        }
    }
    rows
}

fn scanned(scan: tamis::Scan) -> (Vec<String>, Vec<Row>) {
    let mut names = Vec::new();
    let mut rows = Vec::new();
    for batch in scan.threads(2).batches().unwrap() {
        let batch = batch.unwrap();
        names = batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let col = |n: &str| batch.column_by_name(n).unwrap().clone();
        let ids = col("id");
        let ids = ids.as_any().downcast_ref::<Int64Array>().unwrap();
        let name = arrow::compute::cast(&col("name"), &DataType::Utf8).unwrap();
        let name = name.as_any().downcast_ref::<StringArray>().unwrap();
        let p = arrow::compute::cast(&col("p"), &DataType::Utf8).unwrap();
        let p = p.as_any().downcast_ref::<StringArray>().unwrap();
        let extra = col("extra");
        let extra = extra.as_any().downcast_ref::<Int64Array>().unwrap();
        for i in 0..batch.num_rows() {
            rows.push((
                ids.value(i),
                name.is_valid(i).then(|| name.value(i).to_string()),
                p.value(i).to_string(),
                extra.is_valid(i).then(|| extra.value(i)),
            ));
        }
    }
    rows.sort();
    (names, rows)
}

#[test]
fn a_delta_table_reads_as_its_log_says() {
    reads_as_its_log_says(Mapping::Name);
}

/// In `id` mode the files' column names match no physical name: only field ids bind them
/// (filters, statistics and the dropped column included).
#[test]
fn a_delta_table_in_id_mode_binds_columns_by_field_id() {
    reads_as_its_log_says(Mapping::Id);
}

fn reads_as_its_log_says(mode: Mapping) {
    let dir = tempfile::tempdir().unwrap();
    let t = table_in(dir.path(), mode);
    let all = expected(&t);
    let cases: Vec<Case> = vec![
        ("id >= 0", Box::new(|_| true)),
        ("id < 100", Box::new(|r| r.0 < 100)),
        ("name = 'n3'", Box::new(|r| r.1.as_deref() == Some("n3"))),
        ("name IS NULL", Box::new(|r| r.1.is_none())),
        ("p = 'y'", Box::new(|r| r.2 == "y")),
        (
            "p = 'x' AND id > 500",
            Box::new(|r| r.2 == "x" && r.0 > 500),
        ),
        ("extra IS NULL", Box::new(|r| r.3.is_none())),
        ("extra > 5000", Box::new(|r| r.3.is_some_and(|e| e > 5000))),
        ("extra = 9990", Box::new(|r| r.3 == Some(9990))),
        // Beyond INT32: bound to the widened type, not the file's.
        ("extra < 3000000000", Box::new(|r| r.3.is_some())),
    ];
    for (text, keep) in cases {
        let mut want: Vec<Row> = all.iter().filter(|r| keep(r)).cloned().collect();
        want.sort();
        let scan = tamis::Scan::open(t.root.to_str().unwrap())
            .unwrap()
            .filter(text)
            .unwrap();
        let (names, got) = scanned(scan);
        assert_eq!(got, want, "{text}");
        if !got.is_empty() {
            // The table's order: the partition column where the schema puts it.
            assert_eq!(names, ["id", "name", "p", "extra"], "{text}");
        }
        // A dataset (what SQL and Python's Dataset scan) reads the same rows.
        let dataset = tamis::Dataset::open(t.root.to_str().unwrap()).unwrap();
        let (_, again) = scanned(dataset.scan().filter(text).unwrap());
        assert_eq!(again, want, "{text} (dataset)");
    }
    // The dropped column is not the table's; the partition filter never opens file a.
    let e = tamis::Scan::open(t.root.to_str().unwrap())
        .unwrap()
        .select(&["gone"])
        .err();
    assert!(e.is_some());
    let mut stream = (tamis::Scan::open(t.root.to_str().unwrap()).unwrap())
        .filter("p = 'y'")
        .unwrap()
        .batches()
        .unwrap();
    for b in &mut stream {
        b.unwrap();
    }
    assert_eq!(stream.metrics().files_pruned_partition, 1);
    // The log's statistics prune a file before its footer is read: ids of a.parquet are
    // 0..999, of b.parquet 1000..1999.
    for (text, pruned) in [
        ("id >= 1500", 1),
        ("id < 10 OR id > 1990", 0),
        ("id = 5000", 2),
    ] {
        let mut stream = (tamis::Scan::open(t.root.to_str().unwrap()).unwrap())
            .filter(text)
            .unwrap()
            .batches()
            .unwrap();
        let rows: usize = (&mut stream).map(|b| b.unwrap().num_rows()).sum();
        let want = all.iter().filter(|r| match text {
            "id >= 1500" => r.0 >= 1500,
            "id = 5000" => false,
            _ => r.0 < 10 || r.0 > 1990,
        });
        assert_eq!(rows, want.count(), "{text}");
        assert_eq!(stream.metrics().files_pruned_table_stats, pruned, "{text}");
    }
}

#[test]
fn a_delta_version_is_read_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let t = table(dir.path());
    let root = t.root.to_str().unwrap();
    let v0 = tamis::table::delta::snapshot(root, AsOf::Version(0), &Default::default()).unwrap();
    assert_eq!(v0.version, 0);
    assert_eq!(v0.files.len(), 2);
    assert!(v0.files.iter().all(|f| f.deleted.is_none()));
    let (_, rows) = scanned(tamis::Scan::open_table(v0).unwrap());
    // a.parquet whole (1000 rows) and old.parquet's 5.
    assert_eq!(rows.len(), 1005);
    let latest = tamis::table::delta::snapshot(root, AsOf::Latest, &Default::default()).unwrap();
    assert_eq!(latest.version, 1);
    let e = tamis::table::delta::snapshot(root, AsOf::Version(7), &Default::default()).unwrap_err();
    assert!(e.to_string().contains("Delta Lake table"), "{e}");

    // By time: without in-commit timestamps a commit's time is its file's modification time.
    let day = |y: i32| {
        let d = chrono::NaiveDate::from_ymd_opt(y, 1, 1).unwrap();
        d.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp_millis()
    };
    for (commit, year) in [(0, 2020), (1, 2022)] {
        let f = std::fs::File::options()
            .write(true)
            .open(t.root.join(format!("_delta_log/{commit:020}.json")))
            .unwrap();
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(day(year) as u64);
        f.set_modified(at).unwrap();
    }
    let at = |ms| tamis::table::delta::snapshot(root, AsOf::Timestamp(ms), &Default::default());
    assert_eq!(at(day(2021)).unwrap().version, 0);
    assert_eq!(at(day(2020)).unwrap().version, 0);
    assert_eq!(at(day(2023)).unwrap().version, 1);
    let e = at(day(2019)).unwrap_err();
    assert_eq!(e.kind, tamis::ErrorKind::InvalidArgument, "{e}");
}

#[test]
fn a_deletion_vector_is_read_only_for_a_file_the_scan_reaches() {
    let dir = tempfile::tempdir().unwrap();
    let t = table(dir.path());
    let root = t.root.to_str().unwrap();
    let all = expected(&t);
    // Without a.parquet's deletion vector, every scan that reaches a.parquet fails, naming it…
    std::fs::remove_file(t.root.join("deletion_vector.bin")).unwrap();
    let e = (tamis::Scan::open(root)
        .unwrap()
        .filter("id >= 0")
        .unwrap()
        .batches())
    .and_then(|mut stream| stream.try_for_each(|b| b.map(|_| ())))
    .unwrap_err();
    assert!(e.to_string().contains("a.parquet"), "{e}");
    // …and every scan that prunes it, by the partition or by the log's statistics, does not
    // read it: the same rows as with it.
    for (text, keep) in [
        (
            "p = 'y'",
            Box::new(|r: &Row| r.2 == "y") as Box<dyn Fn(&Row) -> bool>,
        ),
        ("id >= 1500", Box::new(|r: &Row| r.0 >= 1500)),
    ] {
        let mut want: Vec<Row> = all.iter().filter(|r| keep(r)).cloned().collect();
        want.sort();
        let scan = tamis::Scan::open(root).unwrap().filter(text).unwrap();
        assert_eq!(scanned(scan).1, want, "{text}");
        let dataset = tamis::Dataset::open(root).unwrap();
        assert_eq!(
            scanned(dataset.scan().filter(text).unwrap()).1,
            want,
            "{text}"
        );
    }
}

#[test]
fn a_directory_holding_a_table_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let t = table(dir.path());
    // A plain file beside the table: the listing is of the warehouse, not of one table.
    std::fs::copy(
        t.root.join("col-p=y/b.parquet"),
        dir.path().join("other.parquet"),
    )
    .unwrap();
    let e = tamis::Scan::open(dir.path().to_str().unwrap())
        .err()
        .unwrap();
    assert_eq!(e.kind, tamis::ErrorKind::Unsupported, "{e}");
    let message = e.to_string();
    assert!(message.contains("Delta Lake table"), "{message}");
    assert!(message.contains(t.root.to_str().unwrap()), "{message}");
    let e = tamis::Dataset::open(dir.path().to_str().unwrap())
        .err()
        .unwrap();
    assert!(e.to_string().contains("Delta Lake table"), "{e}");
}
