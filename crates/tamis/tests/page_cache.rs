//! The page cache (`tamis::cache`): scans through a warm cache return exactly the rows the
//! `parquet` crate's reader returns, read less, and never serve a page of a file that changed.
//!
//! The cache is process-wide, so every test of it lives in this binary and takes [`LOCK`].

mod common;

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use arrow::array::*;
use arrow::compute::filter_record_batch;
use arrow::compute::kernels::cmp::{eq, lt};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::{batch, diff_batches, oracle_read, tamis_scan, Req};

static LOCK: Mutex<()> = Mutex::new(());

const ROWS: usize = 60_000;

/// Snappy pages of a dictionary column `d`, a PLAIN column `v` of random values (literals in
/// the Snappy stream, so a value's bytes appear as they are in the file) and a string column;
/// several row groups and pages, with the page index.
fn write(path: &Path, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let d: Vec<i64> = (0..ROWS).map(|_| rng.random_range(0..50)).collect();
    let v: Vec<i64> = (0..ROWS).map(|_| rng.random::<i64>() >> 1).collect();
    let s: Vec<Option<String>> = (0..ROWS)
        .map(|i| (i % 7 != 0).then(|| format!("s{}", i % 113)))
        .collect();
    let b = batch(vec![
        ("d", Arc::new(Int64Array::from(d)), false),
        ("v", Arc::new(Int64Array::from(v)), false),
        ("s", Arc::new(StringArray::from(s)), true),
    ]);
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(25_000))
        .set_data_page_row_count_limit(2_000)
        .set_write_batch_size(500)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_column_dictionary_enabled("v".into(), false)
        .set_column_encoding("v".into(), Encoding::PLAIN)
        .build();
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), b.schema(), Some(props)).unwrap();
    w.write(&b).unwrap();
    w.close().unwrap();
    settle();
}

/// Waits until a file just written is old enough to be cached (a file changed less than a
/// second ago is not: `tamis::cache`, "racy" files).
fn settle() {
    std::thread::sleep(std::time::Duration::from_millis(1100));
}

/// Scans `path` with `filter`, checks the rows against the `parquet` crate's reader; returns
/// the metrics.
fn check(
    path: &Path,
    filter: &str,
    mask: impl Fn(&RecordBatch) -> BooleanArray,
) -> tamis::ScanMetrics {
    check_keeping(path, filter, mask, false)
}

/// [`check`], the scan keeping its pages in the memory tier on their first read or not.
fn check_keeping(
    path: &Path,
    filter: &str,
    mask: impl Fn(&RecordBatch) -> BooleanArray,
    keep_first_reads: bool,
) -> tamis::ScanMetrics {
    let data = oracle_read(path).unwrap();
    let want = filter_record_batch(&data, &mask(&data)).unwrap();
    let req = Req {
        filter: Some(filter),
        threads: Some(2),
        keep_first_reads,
        ..Req::default()
    };
    let (got, m) = tamis_scan(path.to_str().unwrap(), &req).unwrap();
    if let Some(d) = diff_batches(&got, &want) {
        panic!("`{filter}`: {d}\nmetrics: {m:?}");
    }
    m
}

/// The rows a filter keeps, by Arrow's kernels.
type Mask = dyn Fn(&RecordBatch) -> BooleanArray;

fn col<'a>(b: &'a RecordBatch, name: &str) -> &'a ArrayRef {
    b.column(b.schema().index_of(name).unwrap())
}

#[test]
fn warm_cache_returns_the_same_rows_and_reads_less() {
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    write(&path, 1);
    let queries: Vec<(&str, Box<Mask>)> = vec![
        (
            "d = 7",
            Box::new(|b| eq(col(b, "d"), &Int64Array::new_scalar(7)).unwrap()),
        ),
        (
            "d < 3",
            Box::new(|b| lt(col(b, "d"), &Int64Array::new_scalar(3)).unwrap()),
        ),
        (
            "v < 0",
            Box::new(|b| lt(col(b, "v"), &Int64Array::new_scalar(0)).unwrap()),
        ),
    ];
    tamis::cache::set_page_cache_bytes(0);
    let cold: Vec<tamis::ScanMetrics> = queries.iter().map(|(f, m)| check(&path, f, m)).collect();
    for m in &cold {
        assert_eq!(
            m.pages_cache_hits + m.pages_cache_misses,
            0,
            "cache off: {m:?}"
        );
    }
    tamis::cache::set_page_cache_bytes(256 << 20);
    for (i, ((filter, mask), off)) in queries.iter().zip(&cold).enumerate() {
        // The first query reads every column: its second run fills the cache for the others
        // (a page is kept on its second read).
        let first = check(&path, filter, mask);
        assert_eq!(
            first.pages_cache_misses > 0,
            i == 0,
            "`{filter}` first: {first:?}"
        );
        if i == 0 {
            assert_eq!(first.pages_cache_hits, 0, "`{filter}` first: {first:?}");
            assert_eq!(
                tamis::cache::page_cache_stats().pages,
                0,
                "read once: none kept"
            );
            let second = check(&path, filter, mask);
            assert_eq!(second.pages_read, first.pages_read, "{second:?}");
            assert_eq!(second.pages_cache_hits, 0, "`{filter}` second: {second:?}");
        }
        let warm = check(&path, filter, mask);
        assert_eq!(warm.pages_cache_misses, 0, "`{filter}` warm: {warm:?}");
        assert!(warm.pages_cache_hits > 0, "`{filter}` warm: {warm:?}");
        assert_eq!(warm.pages_read, 0, "`{filter}` warm: {warm:?}");
        assert_eq!(warm.time_decompress_ns, 0, "`{filter}` warm: {warm:?}");
        assert_eq!(warm.pages_cache_hits_disk, 0, "`{filter}` warm: {warm:?}");
        assert!(warm.bytes_cache > 0, "`{filter}` warm: {warm:?}");
        assert!(
            warm.time_decompress_saved_ns > 0,
            "`{filter}` warm: {warm:?}"
        );
        assert!(
            warm.bytes_read < off.bytes_read,
            "`{filter}`: warm {} bytes, off {}",
            warm.bytes_read,
            off.bytes_read
        );
        assert_eq!(warm.rows_selected, off.rows_selected);
    }
    let stats = tamis::cache::page_cache_stats();
    assert!(
        stats.pages > 0 && stats.bytes <= stats.budget_bytes,
        "{stats:?}"
    );
    tamis::cache::set_page_cache_bytes(0);
}

/// A process that keeps first reads (`TAMIS_PAGE_CACHE_ADMIT=first`) keeps a page when it is
/// first read: the next scan finds every page.
#[test]
fn a_process_may_keep_pages_on_their_first_read() {
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    write(&path, 5);
    let mask = |b: &RecordBatch| lt(col(b, "d"), &Int64Array::new_scalar(3)).unwrap();
    tamis::cache::set_page_cache_bytes(256 << 20);
    tamis::cache::set_page_cache_keeps_first_reads(true);
    let first = check(&path, "d < 3", mask);
    let warm = check(&path, "d < 3", mask);
    tamis::cache::set_page_cache_keeps_first_reads(false);
    tamis::cache::set_page_cache_bytes(0);
    assert!(first.pages_read > 0, "{first:?}");
    assert_eq!(warm.pages_read, 0, "{warm:?}");
    assert_eq!(warm.pages_cache_hits, first.pages_cache_misses, "{warm:?}");
}

/// A file rewritten in place with the same size (one value's bytes changed inside a Snappy
/// literal) is another version: its pages are read again, and the rows are the new file's.
#[test]
fn a_file_rewritten_in_place_is_never_served_from_the_cache() {
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    tamis::cache::set_page_cache_bytes(256 << 20);
    // The memory tier stays as it is between the runs.
    rewritten_in_place(|_| {});
    tamis::cache::set_page_cache_bytes(0);
}

#[test]
fn a_file_rewritten_in_place_is_never_served_from_the_disk_cache() {
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    rewritten_in_place(|dir| {
        tamis::cache::set_page_cache_bytes(0);
        disk_tier_on(&dir.join("cache"));
    });
    tamis::cache::set_disk_cache(None, None).unwrap();
}

/// Turns a new disk tier on over `dir` (as a new process would find it), what the last one
/// queued written first.
fn disk_tier_on(dir: &Path) {
    tamis::cache::flush_disk_cache(std::time::Duration::from_secs(60));
    tamis::cache::set_disk_cache(Some(dir), Some(256 << 20)).unwrap();
    tamis::cache::disk_cache_waits(true);
}

/// `cache_on` runs before the first scan and between the cold and the warm one.
fn rewritten_in_place(cache_on: impl Fn(&Path)) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    write(&path, 2);
    cache_on(dir.path());
    let data = oracle_read(&path).unwrap();
    let v = data
        .column(1)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap()
        .clone();
    // Row r takes row r+1's value: the same page, so statistics and page index still hold.
    let r = 30_017;
    let (old, new) = (v.value(r), v.value(r + 1));
    let filter = format!("v = {new}");
    let mask = move |b: &RecordBatch| eq(col(b, "v"), &Int64Array::new_scalar(new)).unwrap();
    let before = check(&path, &filter, mask);
    assert_eq!(before.rows_selected, 1);
    cache_on(dir.path());
    check(&path, &filter, mask); // the second read keeps the pages in memory
    let warm = check(&path, &filter, mask);
    assert!(warm.pages_cache_hits > 0, "{warm:?}");

    let mut bytes = Vec::new();
    File::open(&path).unwrap().read_to_end(&mut bytes).unwrap();
    let mut pattern = old.to_le_bytes().to_vec();
    pattern.extend_from_slice(&new.to_le_bytes());
    let at = bytes
        .windows(16)
        .position(|w| w == pattern.as_slice())
        .expect("the two values lie side by side in a Snappy literal");
    let len = bytes.len();
    let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.seek(SeekFrom::Start(at as u64)).unwrap();
    f.write_all(&new.to_le_bytes()).unwrap();
    f.sync_all().unwrap();
    drop(f);
    assert_eq!(std::fs::metadata(&path).unwrap().len() as usize, len);

    // Just changed: the new rows, and the file is not cached yet.
    let after = check(&path, &filter, mask);
    assert_eq!(after.rows_selected, 2, "{after:?}");
    assert_eq!(
        after.pages_cache_hits + after.pages_cache_misses,
        0,
        "{after:?}"
    );
    // Settled: cached under its new identity, none of the old version's pages served.
    settle();
    let settled = check(&path, &filter, mask);
    assert_eq!(settled.rows_selected, 2, "{settled:?}");
    assert!(settled.pages_cache_misses > 0, "{settled:?}");
    assert_eq!(settled.pages_cache_hits, 0, "{settled:?}");
}

/// The differential queries through a warm disk tier alone (memory off, a tier opened anew
/// over the directory the cold runs filled, as the next process would): the `parquet` crate's
/// rows, no page read or decompressed.
#[test]
fn a_warm_disk_cache_returns_the_same_rows_without_reading_pages() {
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    write(&path, 3);
    let queries: Vec<(&str, Box<Mask>)> = vec![
        (
            "d = 7",
            Box::new(|b| eq(col(b, "d"), &Int64Array::new_scalar(7)).unwrap()),
        ),
        (
            "v < 0",
            Box::new(|b| lt(col(b, "v"), &Int64Array::new_scalar(0)).unwrap()),
        ),
        (
            "s = 's5'",
            Box::new(|b| eq(col(b, "s"), &StringArray::new_scalar("s5")).unwrap()),
        ),
    ];
    tamis::cache::set_page_cache_bytes(0);
    let cache = dir.path().join("cache");
    disk_tier_on(&cache);
    let cold: Vec<_> = queries.iter().map(|(f, m)| check(&path, f, m)).collect();
    disk_tier_on(&cache);
    for ((filter, mask), cold) in queries.iter().zip(&cold) {
        let warm = check(&path, filter, mask);
        assert_eq!(warm.pages_cache_misses, 0, "`{filter}` warm: {warm:?}");
        assert!(warm.pages_cache_hits > 0, "`{filter}` warm: {warm:?}");
        assert_eq!(warm.pages_read, 0, "`{filter}` warm: {warm:?}");
        assert_eq!(warm.time_decompress_ns, 0, "`{filter}` warm: {warm:?}");
        assert_eq!(warm.pages_cache_hits_disk, warm.pages_cache_hits);
        assert!(
            warm.time_decompress_saved_ns > 0,
            "`{filter}` warm: {warm:?}"
        );
        assert_eq!(warm.rows_selected, cold.rows_selected);
    }
    let stats = tamis::cache::page_cache_stats();
    assert!(stats.disk_hits > 0 && stats.disk_corrupt == 0, "{stats:?}");
    assert_eq!(stats.pages, 0, "memory tier off: {stats:?}");
    tamis::cache::set_disk_cache(None, None).unwrap();
}

/// Scans of one file running at once through a cold memory tier, keeping their pages on the
/// first read (as a query's scans of a table read twice do), decompress each page once between
/// them (a scan wanting a page another is decompressing waits for it), and each returns the
/// `parquet` crate's rows.
#[test]
fn concurrent_scans_decompress_each_page_once() {
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    write(&path, 4);
    let mask = |b: &RecordBatch| lt(col(b, "d"), &Int64Array::new_scalar(10)).unwrap();
    tamis::cache::set_page_cache_bytes(0);
    let alone = check(&path, "d < 10", mask);
    assert!(alone.pages_read > 0, "{alone:?}");
    for round in 0..3 {
        tamis::cache::set_page_cache_bytes(256 << 20); // empty
        let scans = 4;
        let start = std::sync::Barrier::new(scans);
        let metrics: Vec<tamis::ScanMetrics> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..scans)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        check_keeping(&path, "d < 10", mask, true)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let read: u64 = metrics.iter().map(|m| m.pages_read).sum();
        assert_eq!(
            read, alone.pages_read,
            "round {round}: pages decompressed by {scans} scans at once: {metrics:?}"
        );
        // Each page (dictionaries too) missed once, found by the others.
        let misses: u64 = metrics.iter().map(|m| m.pages_cache_misses).sum();
        let hits: u64 = metrics.iter().map(|m| m.pages_cache_hits).sum();
        assert_eq!(
            hits,
            (scans as u64 - 1) * misses,
            "round {round}: {metrics:?}"
        );
    }
    tamis::cache::set_page_cache_bytes(0);
}

/// Zstandard pages of 16 384 rows (128 KiB of values): a filter column `k`, PLAIN payload
/// columns of each fixed width — `v` (INT64), `n` (nullable INT32, every 5th row NULL), `x`
/// (FLOAT, NaN and -0.0 among them), `w` (a 16-byte FIXED_LEN_BYTE_ARRAY) — and a dictionary
/// column `d`.
fn write_wide_pages(path: &Path) {
    use arrow::datatypes::DataType;
    let rows = 100_000;
    let mut rng = StdRng::seed_from_u64(40);
    let k: Vec<i64> = (0..rows).map(|_| rng.random_range(0..1_000_000)).collect();
    let v: Vec<i64> = (0..rows).map(|_| rng.random::<i64>()).collect();
    let n: Vec<Option<i32>> = (0..rows)
        .map(|i| (i % 5 != 0).then(|| rng.random()))
        .collect();
    let x: Vec<f32> = (0..rows)
        .map(|i| match i % 97 {
            0 => f32::NAN,
            1 => -0.0,
            _ => rng.random(),
        })
        .collect();
    let w: Vec<[u8; 16]> = (0..rows).map(|_| rng.random()).collect();
    let d: Vec<i64> = (0..rows).map(|i| (i % 40) as i64).collect();
    // Strings: empty ones, short ones, non-ASCII ones, and one in 700 longer than a block.
    let text = |rng: &mut StdRng, i: usize| -> String {
        let len = match i % 700 {
            3 => 5000,
            _ if i.is_multiple_of(11) => 0,
            _ => rng.random_range(1..60),
        };
        (0..len)
            .map(|j| ['a', 'é', 'z', '語', '0'][(i + j) % 5])
            .collect()
    };
    let s: Vec<String> = (0..rows).map(|i| text(&mut rng, i)).collect();
    let t: Vec<Option<String>> = (0..rows)
        .map(|i| (i % 4 != 1).then(|| text(&mut rng, i + 1)))
        .collect();
    let w = FixedSizeBinaryArray::try_from_iter(w.iter()).unwrap();
    assert_eq!(w.data_type(), &DataType::FixedSizeBinary(16));
    let b = batch(vec![
        ("k", Arc::new(Int64Array::from(k)), false),
        ("v", Arc::new(Int64Array::from(v)), false),
        ("n", Arc::new(Int32Array::from(n)), true),
        ("x", Arc::new(Float32Array::from(x)), false),
        ("w", Arc::new(w), false),
        ("d", Arc::new(Int64Array::from(d)), false),
        ("s", Arc::new(StringArray::from(s)), false),
        ("t", Arc::new(StringArray::from(t)), true),
    ]);
    let mut props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(Default::default()))
        .set_max_row_group_row_count(Some(60_000))
        .set_data_page_row_count_limit(16_384)
        .set_data_page_size_limit(1 << 20)
        .set_write_batch_size(1024)
        .set_statistics_enabled(EnabledStatistics::Page);
    for c in ["k", "v", "n", "x", "w", "s", "t"] {
        props = props
            .set_column_dictionary_enabled(c.into(), false)
            .set_column_encoding(c.into(), Encoding::PLAIN);
    }
    let mut w =
        ArrowWriter::try_new(File::create(path).unwrap(), b.schema(), Some(props.build())).unwrap();
    w.write(&b).unwrap();
    w.close().unwrap();
    settle();
}

/// A selective scan through a warm disk tier reads the payload pages' entries by the 4 KiB
/// blocks of their selected values (issue 40: I/O skipping inside the cache; strings found by
/// the entries' offset tables), returns the
/// `parquet` crate's rows for selections of one row, several, none and dense ones (read whole),
/// and falls back to the file when a block of an entry is damaged.
#[test]
fn a_warm_disk_cache_is_read_by_the_blocks_of_the_selected_values() {
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.parquet");
    write_wide_pages(&path);
    let data = oracle_read(&path).unwrap();
    let ks = data
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap()
        .clone();
    // One row; the first and last rows of a page (word and block edges); about 0.05 %; none;
    // about 30 % (dense: whole pages).
    let one = ks.value(12_345);
    let edges = [ks.value(16_383), ks.value(16_384), ks.value(59_999)];
    let queries: Vec<(String, Box<Mask>)> = vec![
        (
            format!("k = {one}"),
            Box::new(move |b| eq(col(b, "k"), &Int64Array::new_scalar(one)).unwrap()),
        ),
        (
            format!("k IN ({}, {}, {})", edges[0], edges[1], edges[2]),
            Box::new(move |b| {
                let k = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
                k.iter().map(|v| v.map(|v| edges.contains(&v))).collect()
            }),
        ),
        (
            "k < 500".into(),
            Box::new(|b| lt(col(b, "k"), &Int64Array::new_scalar(500)).unwrap()),
        ),
        (
            "k < 0".into(),
            Box::new(|b| lt(col(b, "k"), &Int64Array::new_scalar(0)).unwrap()),
        ),
        (
            "k < 300000".into(),
            Box::new(|b| lt(col(b, "k"), &Int64Array::new_scalar(300_000)).unwrap()),
        ),
    ];
    tamis::cache::set_page_cache_bytes(0);
    let cache = dir.path().join("cache");
    disk_tier_on(&cache);
    // Cold: every page read whole from the file (and written to the directory).
    for (filter, mask) in &queries[4..] {
        let m = check(&path, filter, mask);
        assert_eq!(m.pages_read_partially, 0, "{m:?}");
    }
    disk_tier_on(&cache);
    for (filter, mask) in &queries {
        let warm = check(&path, filter, mask);
        assert_eq!(warm.pages_read, 0, "`{filter}`: {warm:?}");
        assert_eq!(warm.time_decompress_ns, 0, "`{filter}`: {warm:?}");
        if filter == "k < 300000" || warm.rows_selected == 0 {
            assert_eq!(warm.pages_read_partially, 0, "`{filter}`: {warm:?}");
            continue;
        }
        // Every payload column but the dictionary-encoded `d` is read by blocks, strings too:
        // the blocks save over half of what whole pages take beyond the filter column `k`
        // (read whole either way: 100 000 values of 8 bytes, no levels).
        assert!(warm.pages_read_partially >= 6, "`{filter}`: {warm:?}");
        let whole = check_whole_bytes(&path, filter, mask);
        let k_bytes = 800_000;
        assert!(
            (whole - warm.bytes_cache) * 2 > whole - k_bytes,
            "`{filter}`: {} bytes by blocks, {whole} whole",
            warm.bytes_cache
        );
    }
    // Random sets of rows: each the `parquet` crate's rows.
    let mut rng = StdRng::seed_from_u64(41);
    let mut partial = 0;
    for _ in 0..12 {
        let n = rng.random_range(1..60);
        let keys: Vec<i64> = (0..n)
            .map(|_| ks.value(rng.random_range(0..ks.len())))
            .collect();
        let list = keys.iter().map(|k| k.to_string()).collect::<Vec<_>>();
        let filter = format!("k IN ({})", list.join(", "));
        let mask = move |b: &RecordBatch| -> BooleanArray {
            let k = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            k.iter().map(|v| v.map(|v| keys.contains(&v))).collect()
        };
        partial += check(&path, &filter, mask).pages_read_partially;
    }
    assert!(partial > 0);
    // A flipped byte in every block of every entry's payload: the scan reads those pages from
    // the file (the payload's blocks fail their checksums after the heads passed, and their
    // packs are removed), the same rows.
    let damaged = damage_entries(&cache);
    assert!(damaged > 0);
    disk_tier_on(&cache);
    let (filter, mask) = &queries[0];
    let m = check(&path, filter, mask);
    assert!(m.pages_read > 0, "{m:?}");
    assert_eq!(m.pages_read_partially, 0, "{m:?}");
    let stats = tamis::cache::page_cache_stats();
    assert!(stats.disk_corrupt > 0, "{stats:?}");
    tamis::cache::set_disk_cache(None, None).unwrap();
}

/// Bytes of the cache the scan takes with sub-page reads off (whole pages from the entries).
fn check_whole_bytes(path: &Path, filter: &str, mask: &Mask) -> u64 {
    let data = oracle_read(path).unwrap();
    let want = filter_record_batch(&data, &mask(&data)).unwrap();
    let req = Req {
        filter: Some(filter),
        pruning: Some(tamis::Pruning {
            sub_page_reads: false,
            ..tamis::Pruning::default()
        }),
        ..Req::default()
    };
    let (got, m) = tamis_scan(path.to_str().unwrap(), &req).unwrap();
    if let Some(d) = diff_batches(&got, &want) {
        panic!("`{filter}` whole pages: {d}");
    }
    assert_eq!(m.pages_read_partially, 0);
    m.bytes_cache
}

/// Flips a byte in every 4 KiB block past the first of every entry of `dir` (a data page's
/// head is its first block here), found by its pack's index (block 0: 16 bytes, then a row of
/// name u128, start u64, length u64 per entry); returns how many entries.
fn damage_entries(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "pack") {
            let mut bytes = std::fs::read(e.path()).unwrap();
            let count = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
            for row in (16..16 + 32 * count).step_by(32) {
                let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
                let (at, len) = (u64_at(row + 16) as usize, u64_at(row + 24) as usize);
                for b in (at + 4096 + 100..at + len).step_by(4096) {
                    bytes[b] ^= 0x40;
                }
                n += 1;
            }
            std::fs::write(e.path(), &bytes).unwrap();
        }
    }
    n
}
