//! Sub-page reads (issue 18, item 3): payload pages stored uncompressed and PLAIN with a fixed
//! width are read by the 4 KiB blocks holding their selected rows. Exact rows against the
//! `parquet` crate's reader, the same rows with sub-page reads off, and the bytes they saved.

mod common;

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow::array::*;
use arrow::compute::filter_record_batch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::{batch, diff_batches, oracle_read};

const ROWS: usize = 60_000;

/// `k` (random, the filter column) and payload columns of every fixed width, required and
/// nullable, with and without NULLs.
fn data(seed: u64) -> RecordBatch {
    let mut rng = StdRng::seed_from_u64(seed);
    let k: Int64Array = (0..ROWS)
        .map(|_| rng.random_range(0..1_000_000i64))
        .collect();
    let i32s: Int32Array = (0..ROWS as i32).map(|i| i.wrapping_mul(7919)).collect();
    let i64s: Int64Array = (0..ROWS as i64).map(|i| Some(i * 1_000_003)).collect();
    let f64s: Float64Array = (0..ROWS)
        .map(|i| match i % 7 {
            0 => None,
            1 => Some(f64::NAN),
            2 => Some(-0.0),
            _ => Some(i as f64 / 3.0),
        })
        .collect();
    let f32s: Float32Array = (0..ROWS)
        .map(|i| (i % 3 != 0).then_some(i as f32))
        .collect();
    let fixed = FixedSizeBinaryArray::try_from_sparse_iter_with_size(
        (0..ROWS).map(|i| (i % 11 != 5).then(|| (i as u128).to_le_bytes())),
        16,
    )
    .unwrap();
    let decimals = Decimal128Array::from_iter_values((0..ROWS as i128).map(|i| i * 12_345 - 99))
        .with_precision_and_scale(30, 2)
        .unwrap();
    let cols: Vec<(&str, ArrayRef, bool)> = vec![
        ("k", Arc::new(k), false),
        ("i32", Arc::new(i32s), false),
        ("i64", Arc::new(i64s), true),
        ("f64", Arc::new(f64s), true),
        ("f32", Arc::new(f32s), true),
        ("fixed", Arc::new(fixed), true),
        ("dec", Arc::new(decimals), false),
    ];
    batch(cols)
}

fn write(path: &Path, batch: &RecordBatch, version: WriterVersion, compression: Compression) {
    let props = WriterProperties::builder()
        .set_writer_version(version)
        .set_compression(compression)
        .set_dictionary_enabled(false)
        // Version 2 would pick DELTA encodings for integers and fixed-size binary.
        .set_encoding(Encoding::PLAIN)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_data_page_size_limit(1 << 30)
        .set_data_page_row_count_limit(20_000)
        .set_write_batch_size(1000)
        .set_max_row_group_row_count(Some(40_000))
        .build();
    let mut w =
        ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), Some(props)).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

/// Scans `path` with `filter`, sub-page reads on or off; checks the rows against the oracle.
fn scan(path: &Path, filter: &str, want: &RecordBatch, sub_page: bool) -> tamis::ScanMetrics {
    let pruning = tamis::Pruning {
        sub_page_reads: sub_page,
        ..tamis::Pruning::default()
    };
    let mut stream = tamis::Scan::open(path.to_str().unwrap())
        .unwrap()
        .filter(filter)
        .unwrap()
        .pruning(pruning)
        .threads(1)
        .batches()
        .unwrap();
    let schema = stream.schema();
    let batches: Vec<RecordBatch> = (&mut stream).map(|b| b.unwrap()).collect();
    let got = arrow::compute::concat_batches(&schema, &batches).unwrap();
    let m = stream.metrics();
    if let Some(d) = diff_batches(&got, want) {
        panic!(
            "{} `{filter}` sub-page {sub_page}: {d}\n{m:?}",
            path.display()
        );
    }
    m
}

#[test]
fn sparse_selections_read_blocks_not_pages() {
    let dir = tempfile::tempdir().unwrap();
    let batch = data(18);
    for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
        let path = dir.path().join(format!("{version:?}.parquet"));
        write(&path, &batch, version, Compression::UNCOMPRESSED);
        let all = oracle_read(&path).unwrap();
        let k = k_column(&all);
        // The first and last rows of a page, a page boundary's two sides, a few rows, none.
        let pick = |rows: &[usize]| {
            let values: Vec<String> = rows.iter().map(|&r| k.value(r).to_string()).collect();
            format!("k IN ({})", values.join(", "))
        };
        let filters = [
            "k < 30".to_string(),
            "k < 300".to_string(),
            "k < 3000".to_string(),
            "k < 0".to_string(),
            pick(&[0]),
            pick(&[19_999, 20_000]),
            pick(&[39_999, 40_000, ROWS - 1]),
            pick(&[5, 511, 512, 513, 4095, 4096, 12_345]),
        ];
        for filter in &filters {
            let want = filter_record_batch(&all, &oracle_mask(&all, filter)).unwrap();
            let on = scan(&path, filter, &want, true);
            let off = scan(&path, filter, &want, false);
            assert_eq!(off.pages_read_partially, 0);
            // A handful of rows in pages of 20 000: far fewer blocks than pages. (`k < 3000`,
            // about 50 rows a page, takes most blocks of the narrow columns: read whole.)
            if want.num_rows() > 0 && want.num_rows() <= 30 {
                assert!(
                    on.pages_read_partially > 0,
                    "{version:?} `{filter}`: {on:?}"
                );
                assert!(
                    on.bytes_read * 2 < off.bytes_read,
                    "{version:?} `{filter}`: {} vs {} bytes\n{on:?}",
                    on.bytes_read,
                    off.bytes_read
                );
            }
        }
        // Dense: every page qualifies for whole reads, results unchanged.
        let want = filter_record_batch(&all, &oracle_mask(&all, "k < 500000")).unwrap();
        let on = scan(&path, "k < 500000", &want, true);
        assert_eq!(on.pages_read_partially, 0, "{on:?}");
    }
}

#[test]
fn compressed_or_delta_pages_are_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let batch = data(7);
    // Snappy: decided from the footer. DELTA encodings (version 2's default for the integer
    // and fixed-size columns): decided by each page's header, after reading it.
    for (name, version, compression, encoding) in [
        (
            "snappy",
            WriterVersion::PARQUET_1_0,
            Compression::SNAPPY,
            Encoding::PLAIN,
        ),
        (
            "delta",
            WriterVersion::PARQUET_2_0,
            Compression::UNCOMPRESSED,
            Encoding::DELTA_BINARY_PACKED,
        ),
    ] {
        let path = dir.path().join(format!("{name}.parquet"));
        let props = WriterProperties::builder()
            .set_writer_version(version)
            .set_compression(compression)
            .set_dictionary_enabled(false)
            .set_statistics_enabled(EnabledStatistics::Page)
            .set_data_page_row_count_limit(20_000)
            .set_write_batch_size(1000)
            .set_column_encoding("i32".into(), encoding)
            .set_column_encoding("i64".into(), encoding)
            .build();
        let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), batch.schema(), Some(props))
            .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let all = oracle_read(&path).unwrap();
        let want = filter_record_batch(&all, &oracle_mask(&all, "k < 100")).unwrap();
        let m = scan(&path, "k < 100", &want, true);
        let off = scan(&path, "k < 100", &want, false);
        match name {
            "snappy" => assert_eq!(m.pages_read_partially, 0, "{m:?}"),
            // The float and fixed-size columns stay PLAIN and are read by blocks.
            _ => assert!(m.pages_read_partially > 0 && m.pages_read > 0, "{m:?}"),
        }
        assert_eq!(
            m.pages_read + m.pages_read_partially,
            off.pages_read,
            "{m:?}"
        );
    }
}

/// The filter column of [`data`].
fn k_column(all: &RecordBatch) -> &Int64Array {
    all.column_by_name("k")
        .unwrap()
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap()
}

/// The rows `filter` (`k < N` or `k IN (…)`) selects, computed on the oracle's data.
fn oracle_mask(all: &RecordBatch, filter: &str) -> BooleanArray {
    let k = k_column(all);
    if let Some(bound) = filter.strip_prefix("k < ") {
        let bound: i64 = bound.parse().unwrap();
        return k.iter().map(|v| v.map(|v| v < bound)).collect();
    }
    let list = filter
        .strip_prefix("k IN (")
        .and_then(|s| s.strip_suffix(')'))
        .unwrap();
    let values: Vec<i64> = list.split(", ").map(|v| v.parse().unwrap()).collect();
    k.iter().map(|v| v.map(|v| values.contains(&v))).collect()
}

/// Bytes flipped in the headers and levels of the pages read by blocks: a clean error or rows,
/// never a panic or an internal error; and where the whole-page path reads the same page and
/// returns rows, the same rows.
#[test]
fn damaged_page_heads_are_errors_not_panics() {
    use parquet::file::metadata::{PageIndexPolicy, ParquetMetaDataReader};

    let dir = tempfile::tempdir().unwrap();
    let batch = data(99);
    let mut rng = StdRng::seed_from_u64(1818);
    for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
        let good = dir.path().join("good.parquet");
        write(&good, &batch, version, Compression::UNCOMPRESSED);
        let bytes = std::fs::read(&good).unwrap();
        let meta = ParquetMetaDataReader::new()
            .with_page_index_policy(PageIndexPolicy::Required)
            .parse_and_finish(&bytes::Bytes::from(bytes.clone()))
            .unwrap();
        // Page starts of the payload columns (every column but `k`, the first).
        let starts: Vec<usize> = (0..meta.num_row_groups())
            .flat_map(|rg| {
                let index = meta.page_index_for_row_group(rg);
                (1..batch.num_columns())
                    .flat_map(|c| {
                        let locations = index.offset_index(c).unwrap().page_locations();
                        locations
                            .iter()
                            .map(|l| l.offset as usize)
                            .collect::<Vec<_>>()
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        let bad = dir.path().join("bad.parquet");
        for _ in 0..150 {
            let mut damaged = bytes.clone();
            let at = starts[rng.random_range(0..starts.len())] + rng.random_range(0..64);
            damaged[at] ^= 1 << rng.random_range(0..8);
            if rng.random_bool(0.3) {
                damaged[at + 1] = rng.random();
            }
            std::fs::write(&bad, &damaged).unwrap();
            let run = |sub_page: bool| {
                let pruning = tamis::Pruning {
                    sub_page_reads: sub_page,
                    ..tamis::Pruning::default()
                };
                let scan = tamis::Scan::open(bad.to_str().unwrap())?
                    .filter("k < 100")?
                    .pruning(pruning)
                    .threads(1);
                let mut stream = scan.batches()?;
                let schema = stream.schema();
                let batches = (&mut stream).collect::<tamis::Result<Vec<_>>>()?;
                Ok::<_, tamis::Error>(arrow::compute::concat_batches(&schema, &batches).unwrap())
            };
            match run(true) {
                Ok(got) => {
                    if let Ok(whole) = run(false) {
                        assert_eq!(got, whole, "byte {at}");
                    }
                }
                Err(e) => assert_ne!(e.kind, tamis::ErrorKind::Internal, "byte {at}: {e}"),
            }
        }
    }
}
