//! One test per pruning level: exact rows against the oracle (the `parquet` crate's reader plus
//! Arrow kernels) AND the metric proving the level did prune.

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::*;
use arrow::compute::kernels::cmp::{eq, gt, gt_eq, lt, lt_eq, neq};
use arrow::compute::kernels::comparison::like;
use arrow::compute::{and_kleene, filter_record_batch, is_not_null, is_null, or_kleene};
use arrow::datatypes::DataType;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::arrow::ArrowWriter;
use parquet::basic::Encoding;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};

use common::{batch, diff_batches, oracle_read, tamis_scan, Req};

fn write(path: &Path, batch: &RecordBatch, props: WriterProperties, chunk: usize) {
    let mut w =
        ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), Some(props)).unwrap();
    let mut off = 0;
    while off < batch.num_rows() {
        let n = chunk.min(batch.num_rows() - off);
        w.write(&batch.slice(off, n)).unwrap();
        off += n;
    }
    w.close().unwrap();
}

/// Runs `sql` with tamis and checks the rows against `mask(oracle data)`; returns the metrics.
fn expect(
    path: &Path,
    sql: &str,
    mask: impl Fn(&RecordBatch) -> BooleanArray,
) -> tamis::ScanMetrics {
    let data = oracle_read(path).unwrap();
    let want = filter_record_batch(&data, &mask(&data)).unwrap();
    let req = Req {
        filter: Some(sql),
        ..Req::default()
    };
    let (got, m) =
        tamis_scan(path.to_str().unwrap(), &req).unwrap_or_else(|e| panic!("{sql}: {e}"));
    if let Some(d) = diff_batches(&got, &want) {
        panic!("{} `{sql}`: {d}\nmetrics: {m:?}", path.display());
    }
    assert_eq!(
        m.rows_selected,
        want.num_rows() as u64,
        "{sql}: rows_selected"
    );
    m
}

fn col<'a>(b: &'a RecordBatch, name: &str) -> &'a ArrayRef {
    b.column_by_name(name).unwrap()
}

fn tmp(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

// (a) ------------------------------------------------------------------------------------------

#[test]
fn statistics_prune_sorted_row_groups() {
    let dir = tempfile::tempdir().unwrap();
    let path = tmp(&dir, "sorted.parquet");
    let x: ArrayRef = Arc::new(Int32Array::from_iter_values(0..1000));
    let y: ArrayRef = Arc::new(StringArray::from_iter_values(
        (0..1000).map(|i| format!("v{i}")),
    ));
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(100))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .build();
    write(
        &path,
        &batch(vec![("x", x, false), ("y", y, false)]),
        props,
        1000,
    );
    let m = expect(&path, "x < 150", |b| {
        lt(col(b, "x"), &Int32Array::new_scalar(150)).unwrap()
    });
    assert_eq!(m.row_groups_total, 10);
    assert!(m.row_groups_pruned_statistics >= 8, "{m:?}");
    let m = expect(&path, "x >= 990 OR x = 5", |b| {
        or_kleene(
            &gt_eq(col(b, "x"), &Int32Array::new_scalar(990)).unwrap(),
            &eq(col(b, "x"), &Int32Array::new_scalar(5)).unwrap(),
        )
        .unwrap()
    });
    assert_eq!(m.row_groups_pruned_statistics, 8, "{m:?}");
    let m = expect(&path, "x > 5000", |b| {
        gt(col(b, "x"), &Int32Array::new_scalar(5000)).unwrap()
    });
    assert_eq!(m.row_groups_pruned_statistics, 10, "{m:?}");
}

/// Parquet writers leave NaN out of min/max: stats [1.0, 2.0] for a chunk holding NaN. NaN is
/// greater than everything, so `f > 5.0` must still return the NaN rows.
#[test]
fn statistics_do_not_prune_nan_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = tmp(&dir, "nan.parquet");
    let vals = [1.0, f64::NAN, 2.0, 1.5, -0.0, f64::NAN, 1.0, 0.0];
    let vals: Vec<f64> = vals
        .iter()
        .map(|v| if *v == 0.0 { 1.25 } else { *v })
        .collect();
    let f: ArrayRef = Arc::new(Float64Array::from(vals.clone()));
    let g: ArrayRef = Arc::new(Float32Array::from(
        vals.iter().map(|v| *v as f32).collect::<Vec<_>>(),
    ));
    let id: ArrayRef = Arc::new(Int32Array::from_iter_values(0..vals.len() as i32));
    for stats in [EnabledStatistics::Chunk, EnabledStatistics::Page] {
        let props = WriterProperties::builder()
            .set_statistics_enabled(stats)
            .build();
        write(
            &path,
            &batch(vec![
                ("id", id.clone(), false),
                ("f", f.clone(), true),
                ("g", g.clone(), true),
            ]),
            props,
            100,
        );
        let nan_rows = |b: &RecordBatch, c: &str| -> BooleanArray {
            let a = col(b, c);
            (0..a.len())
                .map(|i| {
                    Some(match a.data_type() {
                        DataType::Float64 => a
                            .as_any()
                            .downcast_ref::<Float64Array>()
                            .unwrap()
                            .value(i)
                            .is_nan(),
                        _ => a
                            .as_any()
                            .downcast_ref::<Float32Array>()
                            .unwrap()
                            .value(i)
                            .is_nan(),
                    })
                })
                .collect()
        };
        for c in ["f", "g"] {
            let m = expect(&path, &format!("{c} > 5.0"), |b| nan_rows(b, c));
            assert_eq!(
                m.rows_selected, 2,
                "{stats:?} {c} > 5.0 must return the NaN rows: {m:?}"
            );
            expect(&path, &format!("{c} = 'NaN'::DOUBLE"), |b| nan_rows(b, c));
            expect(&path, &format!("{c} >= CAST('inf' AS DOUBLE)"), |b| {
                nan_rows(b, c)
            });
            let m = expect(&path, &format!("{c} <= 2.0"), |b| {
                arrow::compute::not(&nan_rows(b, c)).unwrap()
            });
            assert_eq!(m.rows_selected, 6);
        }
    }
    // -0.0 = 0.0: stats over {-0.0} must not prune `= 0.0`, nor those over {0.0} prune `= -0.0`.
    let z: ArrayRef = Arc::new(Float64Array::from(vec![-0.0, -0.0, 3.0]));
    let w: ArrayRef = Arc::new(Float64Array::from(vec![0.0, 0.0, 3.0]));
    let props = WriterProperties::builder()
        .set_statistics_enabled(EnabledStatistics::Page)
        .build();
    write(
        &path,
        &batch(vec![("z", z, false), ("w", w, false)]),
        props,
        100,
    );
    let first_two = |_: &RecordBatch| BooleanArray::from(vec![true, true, false]);
    expect(&path, "z = 0.0", first_two);
    expect(&path, "w = -0.0", first_two);
    expect(&path, "z >= 0.0 AND z <= 0", first_two);
    expect(&path, "w < 0.5 AND w > -0.5", first_two);
    expect(&path, "z IN (0.0, 7.0)", first_two);
}

// (b) ------------------------------------------------------------------------------------------

#[test]
fn bloom_filters_prune_absent_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = tmp(&dir, "bloom.parquet");
    let mut rng = StdRng::seed_from_u64(42);
    // Even values only, unsorted, spanning the range in every row group: stats cannot prune.
    let mut h: Vec<i64> = (0..4000)
        .map(|_| rng.random_range(0..1_000_000i64) * 2)
        .collect();
    h[0] = 0;
    h[1] = 1_999_998;
    h[1000] = 0;
    h[1001] = 1_999_998;
    h[2000] = 0;
    h[2001] = 1_999_998;
    h[3000] = 0;
    h[3001] = 1_999_998;
    let present = h[2500];
    let h: ArrayRef = Arc::new(Int64Array::from(h));
    let s: ArrayRef = Arc::new(StringArray::from_iter_values(
        (0..4000).map(|i| format!("s{}", i * 7 % 4000)),
    ));
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(1000))
        .set_dictionary_enabled(false)
        .set_bloom_filter_enabled(true)
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .build();
    write(
        &path,
        &batch(vec![("h", h, false), ("s", s, false)]),
        props,
        4000,
    );
    let absent = 1_000_001i64; // odd: absent, within [min, max] of every row group
    let m = expect(&path, &format!("h = {absent}"), |b| {
        eq(col(b, "h"), &Int64Array::new_scalar(absent)).unwrap()
    });
    assert_eq!(m.rows_selected, 0);
    assert_eq!(m.row_groups_pruned_statistics, 0, "{m:?}");
    assert!(
        m.row_groups_pruned_bloom > 0,
        "Bloom filters should prune: {m:?}"
    );
    let m = expect(&path, &format!("h = {present}"), |b| {
        eq(col(b, "h"), &Int64Array::new_scalar(present)).unwrap()
    });
    assert!(m.rows_selected >= 1);
    let m = expect(
        &path,
        &format!("h IN ({absent}, {}, {present})", absent + 2),
        |b| eq(col(b, "h"), &Int64Array::new_scalar(present)).unwrap(),
    );
    assert!(m.rows_selected >= 1, "{m:?}");
    // Strings too.
    // In range of every row group's min/max ('s0' … 's999'), absent.
    let m = expect(&path, "s = 's5000x'", |b| {
        eq(col(b, "s"), &StringArray::new_scalar("s5000x")).unwrap()
    });
    assert_eq!(m.row_groups_pruned_statistics, 0, "{m:?}");
    assert!(m.row_groups_pruned_bloom > 0, "{m:?}");
    expect(&path, "s = 's14'", |b| {
        eq(col(b, "s"), &StringArray::new_scalar("s14")).unwrap()
    });
}

// (c) ------------------------------------------------------------------------------------------

fn dictionary_file(path: &Path, stats: EnabledStatistics) {
    let pool = ["apple", "banana", "cherry", "date", "fig"];
    let mut rng = StdRng::seed_from_u64(7);
    let s: ArrayRef = Arc::new(StringArray::from_iter_values(
        (0..3000).map(|_| *pool.choose(&mut rng).unwrap()),
    ));
    let n: ArrayRef = Arc::new(Int32Array::from_iter_values(0..3000));
    // No Bloom filters: only statistics and the dictionary can decide.
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(1000))
        .set_dictionary_enabled(true)
        .set_statistics_enabled(stats)
        .set_bloom_filter_enabled(false)
        .build();
    write(
        path,
        &batch(vec![("s", s, false), ("n", n, false)]),
        props,
        3000,
    );
}

#[test]
fn dictionaries_prune_and_skip_conjuncts() {
    let dir = tempfile::tempdir().unwrap();
    for stats in [EnabledStatistics::Chunk, EnabledStatistics::None] {
        let path = tmp(&dir, &format!("dict_{stats:?}.parquet"));
        dictionary_file(&path, stats);
        // In range of min/max ('apple' … 'fig'), absent from the dictionary.
        let m = expect(&path, "s = 'blueberry'", |b| {
            eq(col(b, "s"), &StringArray::new_scalar("blueberry")).unwrap()
        });
        assert_eq!(m.rows_selected, 0);
        assert_eq!(m.row_groups_pruned_statistics, 0, "{stats:?}: {m:?}");
        assert_eq!(m.row_groups_pruned_dictionary, 3, "{stats:?}: {m:?}");
        let m = expect(&path, "s IN ('blueberry', 'cranberry')", |_| {
            BooleanArray::from(vec![false; 3000])
        });
        assert_eq!(m.row_groups_pruned_dictionary, 3, "{stats:?}: {m:?}");
        let m = expect(&path, "s LIKE '%nn%'", |_| {
            BooleanArray::from(vec![false; 3000])
        });
        assert_eq!(
            m.row_groups_pruned_dictionary, 3,
            "LIKE against the dictionary, {stats:?}: {m:?}"
        );
        expect(&path, "s = 'cherry' AND n >= 1000", |b| {
            and_kleene(
                &eq(col(b, "s"), &StringArray::new_scalar("cherry")).unwrap(),
                &gt_eq(col(b, "n"), &Int32Array::new_scalar(1000)).unwrap(),
            )
            .unwrap()
        });
        let m = expect(&path, "s >= ''", |b| {
            gt_eq(col(b, "s"), &StringArray::new_scalar("")).unwrap()
        });
        assert_eq!(m.rows_selected, 3000);
    }
    // With statistics (null_count = 0), a leaf every dictionary entry satisfies that min/max
    // cannot decide ('cranberry' is inside ['apple', 'fig']) is skipped.
    let path = tmp(&dir, "dict_Chunk.parquet");
    let m = expect(&path, "s <> 'cranberry' AND n < 1500", |b| {
        lt(col(b, "n"), &Int32Array::new_scalar(1500)).unwrap()
    });
    assert!(m.conjuncts_skipped_dictionary > 0, "{m:?}");
    let m = expect(&path, "s <> 'cranberry'", |_| {
        BooleanArray::from(vec![true; 3000])
    });
    assert!(m.conjuncts_skipped_dictionary > 0, "{m:?}");
}

/// A REQUIRED column cannot hold NULLs, statistics or not: when every dictionary entry satisfies
/// the leaf (`s >= ''`, `s <> 'cranberry'`), the conjunct is skipped.
#[test]
fn dictionary_skips_conjuncts_on_required_column_without_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let path = tmp(&dir, "dict_none.parquet");
    dictionary_file(&path, EnabledStatistics::None);
    let m = expect(&path, "s >= ''", |b| {
        gt_eq(col(b, "s"), &StringArray::new_scalar("")).unwrap()
    });
    assert_eq!(m.rows_selected, 3000);
    assert!(
        m.conjuncts_skipped_dictionary > 0,
        "s >= '' on a REQUIRED all-dictionary column: {m:?}"
    );
    let m = expect(&path, "s <> 'cranberry' AND n < 1500", |b| {
        lt(col(b, "n"), &Int32Array::new_scalar(1500)).unwrap()
    });
    assert!(m.conjuncts_skipped_dictionary > 0, "{m:?}");
}

// (d) ------------------------------------------------------------------------------------------

#[test]
fn page_index_prunes_pages() {
    let dir = tempfile::tempdir().unwrap();
    let path = tmp(&dir, "pages.parquet");
    let x: ArrayRef = Arc::new(Int64Array::from_iter_values(0..10_000));
    let y: ArrayRef = Arc::new(Float64Array::from_iter_values(
        (0..10_000).map(|i| (i % 97) as f64),
    ));
    let props = WriterProperties::builder()
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_data_page_row_count_limit(100)
        .set_write_batch_size(17)
        .set_dictionary_enabled(false)
        .build();
    write(
        &path,
        &batch(vec![("x", x, false), ("y", y, false)]),
        props,
        10_000,
    );
    let m = expect(&path, "x BETWEEN 5000 AND 5050", |b| {
        and_kleene(
            &gt_eq(col(b, "x"), &Int64Array::new_scalar(5000)).unwrap(),
            &lt_eq(col(b, "x"), &Int64Array::new_scalar(5050)).unwrap(),
        )
        .unwrap()
    });
    assert_eq!(m.rows_selected, 51);
    assert!(m.pages_pruned > 0, "{m:?}");
    assert!(m.rows_candidate < m.rows_total, "{m:?}");
    assert!(
        m.rows_candidate <= 300,
        "two or three pages of ~100 rows: {m:?}"
    );
    let m = expect(&path, "x < 10 OR x >= 9990", |b| {
        or_kleene(
            &lt(col(b, "x"), &Int64Array::new_scalar(10)).unwrap(),
            &gt_eq(col(b, "x"), &Int64Array::new_scalar(9990)).unwrap(),
        )
        .unwrap()
    });
    assert!(m.pages_pruned > 0, "{m:?}");
    assert!(m.rows_candidate < m.rows_total, "{m:?}");
}

// (e) ------------------------------------------------------------------------------------------

fn wide_file(path: &Path, page_index: bool) {
    let mut rng = StdRng::seed_from_u64(99);
    let n = 20_000;
    let key: ArrayRef = Arc::new(Int64Array::from_iter_values(0..n as i64));
    let mut cols = vec![("key", key, false)];
    let names = ["p1", "p2", "p3", "p4", "p5"];
    for name in names {
        let a: ArrayRef = Arc::new(StringArray::from_iter_values((0..n).map(|_| {
            let len = rng.random_range(20..40);
            (0..len)
                .map(|_| rng.random_range(b'a'..=b'z') as char)
                .collect::<String>()
        })));
        cols.push((name, a, false));
    }
    let mut props = WriterProperties::builder()
        .set_dictionary_enabled(false)
        .set_data_page_row_count_limit(200)
        .set_write_batch_size(50);
    props = if page_index {
        props.set_statistics_enabled(EnabledStatistics::Page)
    } else {
        props
            .set_statistics_enabled(EnabledStatistics::Chunk)
            .set_offset_index_disabled(true)
    };
    write(path, &batch(cols), props.build(), n);
}

fn pages_per_column(path: &Path) -> Vec<usize> {
    use parquet::file::reader::FileReader;
    let r = parquet::file::serialized_reader::SerializedFileReader::new(File::open(path).unwrap())
        .unwrap();
    let rg = r.get_row_group(0).unwrap();
    (0..rg.num_columns())
        .map(|c| {
            rg.get_column_page_reader(c)
                .unwrap()
                .map(|p| p.unwrap())
                .filter(|p| !matches!(p.page_type(), parquet::basic::PageType::DICTIONARY_PAGE))
                .count()
        })
        .collect()
}

#[test]
fn late_materialization_skips_payload_pages() {
    let dir = tempfile::tempdir().unwrap();
    let (with, without) = (tmp(&dir, "wide_pi.parquet"), tmp(&dir, "wide_nopi.parquet"));
    wide_file(&with, true);
    wide_file(&without, false);
    let pages = pages_per_column(&with);
    assert!(
        pages[1] > 20,
        "the payload columns need many pages: {pages:?}"
    );
    let size = std::fs::metadata(&with).unwrap().len();
    let sql = "key = 12345";
    let mask = |b: &RecordBatch| eq(col(b, "key"), &Int64Array::new_scalar(12345)).unwrap();
    let m = expect(&with, sql, mask);
    assert_eq!(m.rows_selected, 1);
    let min_skipped: usize = pages[1..].iter().map(|p| p - 1).sum();
    assert!(
        m.pages_skipped_payload >= min_skipped as u64,
        "expected ≥ {min_skipped} payload pages skipped (pages per column {pages:?}): {m:?}"
    );
    assert_eq!(m.bytes_file, size);
    assert!(
        m.bytes_read * 4 < size,
        "read {} of {} bytes (≥ 25%) for a point lookup: {m:?}",
        m.bytes_read,
        size
    );
    let m2 = expect(&without, sql, mask);
    assert_eq!(m2.rows_selected, 1);
    assert!(
        m2.bytes_read > m.bytes_read,
        "without a page index the scan should read more: {} vs {} bytes",
        m2.bytes_read,
        m.bytes_read
    );
    // Selecting a payload column only still works and returns the right value.
    let data = oracle_read(&with).unwrap();
    let req = Req {
        filter: Some(sql),
        select: Some(vec!["p3".into(), "key".into()]),
        ..Req::default()
    };
    let (got, _) = tamis_scan(with.to_str().unwrap(), &req).unwrap();
    let want = common::project(
        &filter_record_batch(&data, &mask(&data)).unwrap(),
        &["p3".into(), "key".into()],
    );
    assert!(
        diff_batches(&got, &want).is_none(),
        "{:?}",
        diff_batches(&got, &want)
    );
}

// (f) ------------------------------------------------------------------------------------------

#[test]
fn empty_strings_are_not_null() {
    let dir = tempfile::tempdir().unwrap();
    let vals: Vec<Option<&str>> = (0..1000)
        .map(|i| match i {
            0..200 => (i % 2 == 0).then_some(""),
            200..400 => None,
            400..600 => Some(""),
            _ => Some(["a", "b", "", "ab"][i % 4]),
        })
        .collect();
    let s: ArrayRef = Arc::new(StringArray::from(vals));
    let id: ArrayRef = Arc::new(Int32Array::from_iter_values(0..1000));
    for (k, (dict, stats)) in [
        (true, EnabledStatistics::Page),
        (false, EnabledStatistics::Page),
        (false, EnabledStatistics::Chunk),
    ]
    .into_iter()
    .enumerate()
    {
        let path = tmp(&dir, &format!("empty{k}.parquet"));
        let props = WriterProperties::builder()
            .set_statistics_enabled(stats)
            .set_dictionary_enabled(dict)
            .set_data_page_row_count_limit(50)
            .set_write_batch_size(10)
            .set_max_row_group_row_count(Some(400))
            .build();
        write(
            &path,
            &batch(vec![("id", id.clone(), false), ("s", s.clone(), true)]),
            props,
            1000,
        );
        let e = || StringArray::new_scalar("");
        let m = expect(&path, "s = ''", |b| eq(col(b, "s"), &e()).unwrap());
        assert_eq!(m.rows_selected, 100 + 200 + 100);
        let m = expect(&path, "s IS NULL", |b| is_null(col(b, "s")).unwrap());
        assert_eq!(m.rows_selected, 100 + 200);
        let m = expect(&path, "s <> ''", |b| neq(col(b, "s"), &e()).unwrap());
        assert_eq!(m.rows_selected, 300);
        expect(&path, "s IS NOT NULL", |b| {
            is_not_null(col(b, "s")).unwrap()
        });
        expect(&path, "s < 'a'", |b| {
            lt(col(b, "s"), &StringArray::new_scalar("a")).unwrap()
        });
        expect(&path, "s <= ''", |b| lt_eq(col(b, "s"), &e()).unwrap());
        expect(&path, "s > ''", |b| gt(col(b, "s"), &e()).unwrap());
        expect(&path, "s LIKE ''", |b| like(col(b, "s"), &e()).unwrap());
        expect(&path, "s LIKE '%'", |b| {
            like(col(b, "s"), &StringArray::new_scalar("%")).unwrap()
        });
        expect(&path, "s IN ('', 'ab')", |b| {
            or_kleene(
                &eq(col(b, "s"), &e()).unwrap(),
                &eq(col(b, "s"), &StringArray::new_scalar("ab")).unwrap(),
            )
            .unwrap()
        });
        expect(&path, "NOT (s = '') AND id >= 250", |b| {
            and_kleene(
                &neq(col(b, "s"), &e()).unwrap(),
                &gt_eq(col(b, "id"), &Int32Array::new_scalar(250)).unwrap(),
            )
            .unwrap()
        });
    }
}

// (g) ------------------------------------------------------------------------------------------

/// DuckDB#24994: BLOB equality on PLAIN_DICTIONARY (writer v1) pages.
#[test]
fn blob_equality_on_plain_dictionary_pages() {
    let dir = tempfile::tempdir().unwrap();
    let path = tmp(&dir, "blob.parquet");
    let pool: [Option<&[u8]>; 8] = [
        Some(&[0x00, 0xff, 0x10]),
        Some(&[0x00, 0xff]),
        Some(&[0x00, 0xff, 0x10, 0x00]),
        Some(&[0xff]),
        Some(&[]),
        Some(&[0x10]),
        Some(&[0x00, 0xfe, 0x10]),
        None,
    ];
    let mut rng = StdRng::seed_from_u64(3);
    let vals: Vec<Option<&[u8]>> = (0..2000).map(|_| *pool.choose(&mut rng).unwrap()).collect();
    let b: ArrayRef = Arc::new(BinaryArray::from(vals));
    for stats in [EnabledStatistics::Page, EnabledStatistics::None] {
        let props = WriterProperties::builder()
            .set_writer_version(WriterVersion::PARQUET_1_0)
            .set_dictionary_enabled(true)
            .set_statistics_enabled(stats)
            .set_data_page_row_count_limit(300)
            .set_write_batch_size(50)
            .build();
        write(&path, &batch(vec![("b", b.clone(), true)]), props, 2000);
        // parquet-rs writes RLE_DICTIONARY even with writer v1; older writers (parquet-mr v1,
        // DuckDB) write PLAIN_DICTIONARY. Relabel the pages and the footer in place.
        let patched = to_plain_dictionary(&std::fs::read(&path).unwrap());
        std::fs::write(&path, patched).unwrap();
        // The pages really are PLAIN_DICTIONARY.
        let f = File::open(&path).unwrap();
        let md = ArrowReaderMetadata::load(&f, ArrowReaderOptions::new()).unwrap();
        let encodings: Vec<Encoding> = md.metadata().row_group(0).column(0).encodings().collect();
        assert!(
            encodings.contains(&Encoding::PLAIN_DICTIONARY),
            "{encodings:?}"
        );
        let lit = |v: &[u8]| BinaryArray::new_scalar(v);
        let m = expect(&path, "b = X'00ff10'", |x| {
            eq(col(x, "b"), &lit(&[0x00, 0xff, 0x10])).unwrap()
        });
        assert!(m.rows_selected > 100);
        expect(&path, "b = X'00FF10'", |x| {
            eq(col(x, "b"), &lit(&[0x00, 0xff, 0x10])).unwrap()
        });
        expect(&path, "b <> X'00ff10'", |x| {
            neq(col(x, "b"), &lit(&[0x00, 0xff, 0x10])).unwrap()
        });
        expect(&path, "b < X'00ff10'", |x| {
            lt(col(x, "b"), &lit(&[0x00, 0xff, 0x10])).unwrap()
        });
        expect(&path, "b > X'00ff10'", |x| {
            gt(col(x, "b"), &lit(&[0x00, 0xff, 0x10])).unwrap()
        });
        expect(&path, "b = X''", |x| eq(col(x, "b"), &lit(&[])).unwrap());
        expect(&path, "b IN (X'ff', X'00ff')", |x| {
            or_kleene(
                &eq(col(x, "b"), &lit(&[0xff])).unwrap(),
                &eq(col(x, "b"), &lit(&[0x00, 0xff])).unwrap(),
            )
            .unwrap()
        });
        expect(&path, "b = X'00ff1000'", |x| {
            eq(col(x, "b"), &lit(&[0x00, 0xff, 0x10, 0x00])).unwrap()
        });
        let m = expect(&path, "b = X'00ff11'", |x| {
            eq(col(x, "b"), &lit(&[0x00, 0xff, 0x11])).unwrap()
        });
        assert_eq!(m.rows_selected, 0);
    }
}

/// Rewrites, in an uncompressed file, every RLE_DICTIONARY (8) encoding of data page headers,
/// column metadata encoding lists and page encoding stats to PLAIN_DICTIONARY (2). Thrift compact
/// zigzag varints: 8 → 0x10, 2 → 0x04, same length, so no offset moves.
fn to_plain_dictionary(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let mut n = 0;
    let mut i = 0;
    while i + 8 < out.len() {
        // DataPageHeader: field 1 num_values (i32, 0x15 varint), field 2 encoding 0x15 0x10,
        // field 3 definition_level_encoding 0x15 0x06 (RLE), field 4 repetition 0x15 0x06.
        if out[i] == 0x2c && out[i + 1] == 0x15 {
            let mut j = i + 2;
            while j < out.len() && out[j] & 0x80 != 0 {
                j += 1;
            }
            j += 1;
            if out.get(j..j + 6) == Some(&[0x15, 0x10, 0x15, 0x06, 0x15, 0x06]) {
                out[j + 1] = 0x04;
                n += 1;
            }
        }
        i += 1;
    }
    assert!(n > 0, "no RLE_DICTIONARY data page header found");
    // Footer: ColumnMetaData.encodings list<i32> [PLAIN, RLE, RLE_DICTIONARY] in some order,
    // and PageEncodingStats {page_type DATA_PAGE (0), encoding RLE_DICTIONARY, count}.
    let footer_len =
        u32::from_le_bytes(out[out.len() - 8..out.len() - 4].try_into().unwrap()) as usize;
    let start = out.len() - 8 - footer_len;
    let mut lists = 0;
    for k in start..out.len() - 12 {
        if out[k] == 0x35 {
            let items = &out[k + 1..k + 4];
            let mut sorted = items.to_vec();
            sorted.sort();
            if sorted == [0x00, 0x06, 0x10] {
                let at = k + 1 + items.iter().position(|&x| x == 0x10).unwrap();
                out[at] = 0x04;
                lists += 1;
            }
        }
        if out[k..k + 4] == [0x15, 0x00, 0x15, 0x10] {
            out[k + 3] = 0x04;
        }
    }
    assert!(lists > 0, "no encodings list found in the footer");
    out
}

// (h) ------------------------------------------------------------------------------------------

#[test]
fn bad_predicates_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = tmp(&dir, "bad.parquet");
    let a: ArrayRef = Arc::new(Int32Array::from_iter_values(0..10));
    let s: ArrayRef = Arc::new(StringArray::from_iter_values(
        (0..10).map(|i| i.to_string()),
    ));
    write(
        &path,
        &batch(vec![("a", a, false), ("s", s, false)]),
        WriterProperties::builder().build(),
        10,
    );
    let p = path.to_str().unwrap();
    let err = |sql: &str| -> tamis::Error {
        match tamis::Scan::open(p).unwrap().filter(sql) {
            Ok(_) => panic!("`{sql}` should be rejected"),
            Err(e) => {
                assert!(!e.to_string().contains('\n'), "one line: {e}");
                e
            }
        }
    };
    use tamis::ErrorKind::{InvalidArgument, Unsupported};
    for (sql, kind, needle) in [
        ("nosuch = 1", InvalidArgument, "nosuch"),
        ("nosuch IS NULL AND a = 1", InvalidArgument, "nosuch"),
        ("a = 'abc'", InvalidArgument, "'a'"),
        ("a = DATE '2020-01-01'", InvalidArgument, "'a'"),
        ("s > 5", InvalidArgument, "'s'"),
        ("a LIKE 'x%'", InvalidArgument, "'a'"),
        ("a / 2 > 2", Unsupported, "a / 2 > 2"),
        ("upper(s) = 'X'", Unsupported, "upper(s)"),
        (
            "a = s",
            InvalidArgument,
            "cannot compare column 'a' (INT32) with column 's'",
        ),
        ("a + 1", Unsupported, "a + 1"),
        ("a IN (SELECT 1)", Unsupported, "a"),
    ] {
        let e = err(sql);
        assert_eq!(e.kind, kind, "`{sql}`: {e}");
        assert!(
            e.to_string().contains(needle),
            "`{sql}`: message should name `{needle}`: {e}"
        );
    }
    let e = err("a = ");
    assert_eq!(e.kind, InvalidArgument, "{e}");
    match tamis::Scan::open(p).unwrap().select(&["a", "nope"]) {
        Ok(_) => panic!("unknown select column accepted"),
        Err(e) => {
            assert_eq!(e.kind, InvalidArgument);
            assert!(e.to_string().contains("nope"), "{e}");
        }
    }
    match tamis::Scan::open(dir.path().join("missing.parquet").to_str().unwrap()) {
        Ok(_) => panic!("missing file opened"),
        Err(e) => assert!(
            matches!(e.kind, tamis::ErrorKind::Io | InvalidArgument),
            "{e}"
        ),
    }
}

/// `explain`'s breakdown: the time spent waiting for reads and decompressing pages is counted,
/// and decompression only where pages are compressed.
#[test]
fn read_and_decompression_times_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    // Larger than the tail an open reads (whose bytes need no read later).
    let rows = 400_000i64;
    let b = batch(vec![
        ("k", Arc::new(Int64Array::from_iter_values(0..rows)), false),
        (
            "v",
            Arc::new(Int64Array::from_iter_values(
                (0..rows).map(|i| i * 7 % 1000),
            )),
            false,
        ),
    ]);
    for (name, codec) in [
        ("snappy.parquet", parquet::basic::Compression::SNAPPY),
        ("plain.parquet", parquet::basic::Compression::UNCOMPRESSED),
    ] {
        let path = tmp(&dir, name);
        let props = WriterProperties::builder()
            .set_compression(codec)
            .set_dictionary_enabled(false)
            .build();
        let mut w =
            ArrowWriter::try_new(File::create(&path).unwrap(), b.schema(), Some(props)).unwrap();
        w.write(&b).unwrap();
        w.close().unwrap();
        let m = expect(&path, "v < 3", |b| {
            lt(col(b, "v"), &Int64Array::new_scalar(3)).unwrap()
        });
        assert!(m.time_read_ns > 0, "{name}: no read time counted: {m:?}");
        if codec == parquet::basic::Compression::UNCOMPRESSED {
            assert_eq!(m.time_decompress_ns, 0, "{name}: {m:?}");
        } else {
            assert!(
                m.time_decompress_ns > 0,
                "{name}: no decompression counted: {m:?}"
            );
        }
    }
}
