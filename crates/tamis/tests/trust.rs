//! A changed file is never read through what was built or kept for its old bytes: sidecar
//! indexes (identity, chunk content hashes, names other engines skip, atomic writes) and the
//! files a `Dataset` keeps open between scans.
//!
//! Oracles: the rows as written (each test knows them), and the `parquet` crate's reader.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;

use arrow::array::*;
use arrow::datatypes::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use tamis::index::{IndexKind, IndexOptions};
use tamis::io::FileRef;

const ROWS: i64 = 4_000;

/// `v` of row `i`: distinct, so each value names one row.
fn value(i: i64) -> i64 {
    1_000_000_007 + i * 7_919
}

/// `id` and `v`, both PLAIN and uncompressed without statistics: rewriting values in the data
/// pages keeps the file's length and every footer byte.
fn write_plain(path: &Path) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("v", DataType::Int64, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from((0..ROWS).collect::<Vec<_>>())),
            Arc::new(Int64Array::from((0..ROWS).map(value).collect::<Vec<_>>())),
        ],
    )
    .unwrap();
    let props = WriterProperties::builder()
        .set_dictionary_enabled(false)
        .set_compression(Compression::UNCOMPRESSED)
        .set_statistics_enabled(EnabledStatistics::None)
        .set_data_page_row_count_limit(250)
        .set_write_batch_size(250)
        .set_max_row_group_row_count(Some(2_000))
        .build();
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

fn index(path: &Path, columns: &[&str], kind: IndexKind, dir: Option<&Path>) -> String {
    let file = FileRef::Local(path.to_path_buf());
    let opened = tamis::file::OpenedFile::open_ref(&file).unwrap();
    let columns: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
    let options = IndexOptions { kind, fpp: 0.01 };
    let (bytes, _) = tamis::index::build_index(&opened, &columns, options).unwrap();
    tamis::index::write_sidecar(&file, bytes, dir).unwrap()
}

/// `(id, v)` of the rows `sql` selects, and the scan's metrics.
fn lookup(scan: tamis::Scan, sql: &str) -> (Vec<(i64, i64)>, tamis::ScanMetrics) {
    let mut stream = scan
        .filter(sql)
        .unwrap()
        .select(&["id", "v"])
        .unwrap()
        .threads(1)
        .batches()
        .unwrap();
    let mut rows = Vec::new();
    for b in stream.by_ref() {
        let b = b.unwrap();
        let id = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        let v = b.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
        rows.extend(id.values().iter().copied().zip(v.values().iter().copied()));
    }
    (rows, stream.metrics())
}

fn scan_of(path: &Path) -> tamis::Scan {
    tamis::Scan::open(path.to_str().unwrap()).unwrap()
}

/// Swaps the stored values of rows `a` and `b` of column `v` in place (found by their bytes:
/// each value occurs once), keeping length and footer; returns the file's old mtime.
fn swap_values(path: &Path, a: i64, b: i64) -> std::time::SystemTime {
    let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    let find = |bytes: &[u8], v: i64| {
        let needle = v.to_le_bytes();
        let at: Vec<usize> = (0..bytes.len() - 8)
            .filter(|&i| bytes[i..i + 8] == needle)
            .collect();
        assert_eq!(at.len(), 1, "value {v} stored once");
        at[0]
    };
    let (pa, pb) = (find(&bytes, value(a)), find(&bytes, value(b)));
    bytes[pa..pa + 8].copy_from_slice(&value(b).to_le_bytes());
    bytes[pb..pb + 8].copy_from_slice(&value(a).to_le_bytes());
    // In place, as `cp` onto an existing file writes: same inode.
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.seek(SeekFrom::Start(0)).unwrap();
    f.write_all(&bytes).unwrap();
    f.sync_all().unwrap();
    mtime
}

fn set_mtime(path: &Path, mtime: std::time::SystemTime) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.set_modified(mtime).unwrap();
}

/// The rows the `parquet` crate reads where `v = value`.
fn oracle(path: &Path, v: i64) -> Vec<(i64, i64)> {
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(
        File::open(path).unwrap(),
        8192,
    )
    .unwrap();
    let mut out = Vec::new();
    for b in reader {
        let b = b.unwrap();
        let id = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        let vs = b.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
        for i in 0..b.num_rows() {
            if vs.value(i) == v {
                out.push((id.value(i), v));
            }
        }
    }
    out
}

#[test]
fn a_sidecar_of_other_data_pages_is_never_used() {
    for kind in [IndexKind::Rows, IndexKind::PageBloom] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        write_plain(&path);
        let footer_before = tail(&path);
        index(&path, &["v"], kind, None);
        let (a, b) = (10, 3_500);
        let sql = format!("v = {}", value(a));
        assert_eq!(lookup(scan_of(&path), &sql).0, [(a, value(a))]);

        // Same length, same footer: before, the rows index answered with row `a`, labelled
        // `v = value(a)` by the pinned column. The modification time gives it away.
        let mtime = swap_values(&path, a, b);
        assert_eq!(tail(&path), footer_before, "the footer did not change");
        let want = oracle(&path, value(a));
        assert_eq!(want, [(b, value(a))]);
        let (got, m) = lookup(scan_of(&path), &sql);
        assert_eq!(got, want, "{kind:?}");
        assert!(m.row_groups_index_stale > 0, "{kind:?}: {m:?}");
        assert_eq!(m.conjuncts_decided_index, 0, "{kind:?}: {m:?}");

        // The modification time set back: only the chunks' bytes tell. `--verify` says so,
        // and a scan asked to verify reads right.
        set_mtime(&path, mtime);
        let reports =
            tamis::index::verify_files(path.to_str().unwrap(), &Default::default(), None).unwrap();
        assert_eq!(reports.len(), 1);
        assert!(
            reports[0]
                .problems
                .iter()
                .any(|p| p.contains("column v") && p.contains("changed")),
            "{:?}",
            reports[0]
        );
        let (got, m) = lookup(scan_of(&path).verify_index(true), &sql);
        assert_eq!(got, want, "{kind:?}");
        assert_eq!(m.conjuncts_decided_index, 0, "{kind:?}: {m:?}");
        assert!(
            m.warnings.iter().any(|w| w.contains("changed since")),
            "{:?}",
            m.warnings
        );

        // Rebuilt, it verifies and answers again.
        index(&path, &["v"], kind, None);
        let reports =
            tamis::index::verify_files(path.to_str().unwrap(), &Default::default(), None).unwrap();
        assert!(reports[0].problems.is_empty(), "{:?}", reports[0]);
        assert!(reports[0].chunks > 0);
        let (got, m) = lookup(scan_of(&path).verify_index(true), &sql);
        assert_eq!(got, want);
        if kind == IndexKind::Rows {
            assert!(m.conjuncts_decided_index > 0, "{m:?}");
        } else {
            assert!(m.pages_pruned_index > 0, "{m:?}");
        }
    }
}

fn tail(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    let n = u32::from_le_bytes(bytes[bytes.len() - 8..bytes.len() - 4].try_into().unwrap());
    bytes[bytes.len() - 8 - n as usize..].to_vec()
}

#[test]
fn sidecars_are_hidden_files_and_old_names_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    write_plain(&path);
    let written = index(&path, &["v"], IndexKind::Rows, None);
    let hidden = dir.path().join(".t.parquet.tamis.puffin");
    assert_eq!(written, hidden.display().to_string());
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "no temporary file left: {names:?}");
    let sql = format!("v = {}", value(77));
    let (got, m) = lookup(scan_of(&path), &sql);
    assert_eq!(got, [(77, value(77))]);
    assert!(m.conjuncts_decided_index > 0, "{m:?}");
    // A sidecar under the name tamis wrote before is read too.
    std::fs::rename(&hidden, dir.path().join("t.parquet.tamis.puffin")).unwrap();
    let (got, m) = lookup(scan_of(&path), &sql);
    assert_eq!(got, [(77, value(77))]);
    assert!(m.conjuncts_decided_index > 0, "{m:?}");
    // The listing of the directory is still the data file alone.
    let files = tamis::Scan::open(dir.path().to_str().unwrap())
        .unwrap()
        .files();
    assert_eq!(files.len(), 1, "{files:?}");
}

#[test]
fn an_index_directory_keeps_files_of_one_name_apart() {
    let dir = tempfile::tempdir().unwrap();
    let idx = dir.path().join("idx");
    std::fs::create_dir(&idx).unwrap();
    // Two files named t.parquet: the second one's rows are the first one's, reversed.
    let a = dir.path().join("a/t.parquet");
    let b = dir.path().join("b/t.parquet");
    std::fs::create_dir_all(a.parent().unwrap()).unwrap();
    std::fs::create_dir_all(b.parent().unwrap()).unwrap();
    write_plain(&a);
    write_plain(&b);
    swap_values(&b, 5, 6);
    let wa = index(&a, &["v"], IndexKind::Rows, Some(&idx));
    let wb = index(&b, &["v"], IndexKind::Rows, Some(&idx));
    assert_ne!(wa, wb);
    assert_eq!(std::fs::read_dir(&idx).unwrap().count(), 2);
    for (path, want) in [(&a, 5), (&b, 6)] {
        let sql = format!("v = {}", value(5));
        let (got, m) = lookup(scan_of(path).index_dir(&idx), &sql);
        assert_eq!(got, [(want, value(5))], "{}", path.display());
        assert!(m.conjuncts_decided_index > 0, "{m:?}");
        assert_eq!(m.row_groups_index_stale, 0, "{m:?}");
    }
}

#[test]
fn sidecars_replace_a_planted_link_and_never_tear() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    write_plain(&path);
    // A link planted where the sidecar goes: the write replaces the link, the file it points
    // to is untouched.
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let target = dir.path().join(".t.parquet.tamis.puffin");
    std::os::unix::fs::symlink(&victim, &target).unwrap();
    index(&path, &["v"], IndexKind::Rows, None);
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert!(!std::fs::symlink_metadata(&target)
        .unwrap()
        .file_type()
        .is_symlink());
    let good = std::fs::read(&target).unwrap();
    // A write that fails half-way (a killed `tamis index`) leaves the old sidecar whole and no
    // temporary file behind.
    let failed = tamis::index::write_atomically(&target, |f| {
        f.write_all(&good[..good.len() / 2])?;
        Err(std::io::Error::other("killed"))
    });
    assert!(failed.is_err());
    assert_eq!(std::fs::read(&target).unwrap(), good);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    let (got, _) = lookup(scan_of(&path), &format!("v = {}", value(9)));
    assert_eq!(got, [(9, value(9))]);
}

/// `id` and the string column `s` (dictionary-encoded: the writer's default), 2 000 rows per
/// row group.
fn write_id_s(path: &Path, strings: Vec<&str>, compression: Compression) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("s", DataType::Utf8, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from((0..ROWS).collect::<Vec<_>>())),
            Arc::new(StringArray::from(strings)),
        ],
    )
    .unwrap();
    let props = WriterProperties::builder()
        .set_compression(compression)
        .set_max_row_group_row_count(Some(2_000))
        .build();
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// 50 distinct 4-byte strings starting with `first`, uncompressed: files of another `first`
/// have the same length.
fn write_strings(path: &Path, first: char) {
    let strings: Vec<String> = (0..ROWS).map(|i| format!("{first}{:03}", i % 50)).collect();
    let strings = strings.iter().map(String::as_str).collect();
    write_id_s(path, strings, Compression::UNCOMPRESSED);
}

fn ids(ds: &tamis::Dataset, sql: &str) -> tamis::Result<Vec<i64>> {
    let mut out = Vec::new();
    for b in ds.scan().filter(sql)?.select(&["id"])?.batches()? {
        let b = b?;
        let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        out.extend(a.values().iter().copied());
    }
    Ok(out)
}

#[test]
fn a_dataset_notices_a_file_overwritten_in_place_with_the_same_size_and_mtime() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    let other = dir.path().join("other.bin");
    write_strings(&path, 'a');
    write_strings(&other, 'b');
    let new_bytes = std::fs::read(&other).unwrap();
    std::fs::remove_file(&other).unwrap();
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        new_bytes.len() as u64
    );

    let ds = tamis::Dataset::open(dir.path().to_str().unwrap()).unwrap();
    let want_a: Vec<i64> = (0..ROWS).filter(|i| i % 50 == 7).collect();
    // Twice: the second scan runs on the footer, dictionaries and filters the first kept.
    assert_eq!(ids(&ds, "s = 'a007'").unwrap(), want_a);
    assert_eq!(ids(&ds, "s = 'a007'").unwrap(), want_a);

    // Overwritten in place (same inode), same size, the modification time set back.
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.write_all(&new_bytes).unwrap();
    f.sync_all().unwrap();
    drop(f);
    set_mtime(&path, mtime);

    // Never the old rows (its kept footer prunes `b…` away, its kept dictionary decodes the
    // new codes as `a…`): a clear error naming the file.
    for sql in ["s = 'b007'", "s = 'a007'"] {
        let e = ids(&ds, sql).unwrap_err();
        assert_eq!(e.kind, tamis::ErrorKind::InvalidArgument, "{e}");
        assert!(
            e.to_string()
                .contains("changed since the dataset was opened"),
            "{e}"
        );
        assert!(e.to_string().contains("t.parquet"), "{e}");
    }
    // Opened again, it reads the new version.
    let ds = tamis::Dataset::open(dir.path().to_str().unwrap()).unwrap();
    assert_eq!(ids(&ds, "s = 'b007'").unwrap(), want_a);
    assert!(ids(&ds, "s = 'a007'").unwrap().is_empty());
}

#[test]
fn copies_of_a_pinned_byte_string_count_against_the_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    let long = "x".repeat(10_000);
    let strings: Vec<&str> = (0..ROWS)
        .map(|i| if i % 2 == 0 { long.as_str() } else { "short" })
        .collect();
    write_id_s(&path, strings, Compression::SNAPPY);
    index(&path, &["s"], IndexKind::Rows, None);
    let scan = |limit: usize| -> tamis::Result<Vec<(i64, usize)>> {
        let mut out = Vec::new();
        let mut stream = scan_of(&path)
            .filter(&format!("s = '{long}'"))?
            .select(&["id", "s"])?
            .memory_limit(limit)
            .batches()?;
        for b in stream.by_ref() {
            let b = b?;
            let id = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            let s = arrow::compute::cast(b.column(1), &DataType::Utf8).unwrap();
            let s = s.as_any().downcast_ref::<StringArray>().unwrap();
            for i in 0..b.num_rows() {
                assert_eq!(s.value(i), long);
                out.push((id.value(i), s.value(i).len()));
            }
        }
        assert!(stream.metrics().conjuncts_decided_index > 0);
        Ok(out)
    };
    let want: Vec<(i64, usize)> = (0..ROWS).step_by(2).map(|i| (i, long.len())).collect();
    assert_eq!(scan(256 << 20).unwrap(), want);
    // 2 000 copies of 10 kB per row group: 20 MB, over a limit of 8 MiB.
    let e = scan(8 << 20).unwrap_err();
    assert_eq!(e.kind, tamis::ErrorKind::ResourceLimit, "{e}");
    assert!(e.to_string().contains("pinned"), "{e}");
}
