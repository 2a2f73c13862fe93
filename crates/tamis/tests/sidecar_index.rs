//! Sidecar indexes (`tamis index`): page Bloom filters never change a result, prune pages when
//! a literal is absent from them, and a stale or broken sidecar costs time or gives a clear
//! error — never wrong rows.
//!
//! The oracle is the generated data: each predicate is evaluated on the rows in Rust.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow::array::*;
use arrow::datatypes::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tamis::index::IndexKind;

const ROWS: usize = 6_000;

/// id, an int32 key with NULLs, an int64 key, a float with NaN / ±0.0, a string with "" and NULLs.
struct Data {
    k32: Vec<Option<i32>>,
    k64: Vec<i64>,
    f: Vec<f64>,
    s: Vec<Option<String>>,
}

fn data(seed: u64) -> Data {
    let mut rng = StdRng::seed_from_u64(seed);
    let specials = [f64::NAN, 0.0, -0.0, 1.5, -2.25];
    Data {
        k32: (0..ROWS)
            .map(|_| (!rng.random_bool(0.1)).then(|| rng.random_range(0..2_000)))
            .collect(),
        k64: (0..ROWS)
            .map(|_| rng.random_range(-500..500) * 1_000_003)
            .collect(),
        f: (0..ROWS)
            .map(|_| {
                if rng.random_bool(0.2) {
                    specials[rng.random_range(0..specials.len())]
                } else {
                    rng.random_range(0..300) as f64 / 4.0
                }
            })
            .collect(),
        s: (0..ROWS)
            .map(|_| match rng.random_range(0..10) {
                0 => None,
                1 => Some(String::new()),
                _ => Some(format!("v{}", rng.random_range(0..700))),
            })
            .collect(),
    }
}

fn write(path: &Path, d: &Data) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("k32", DataType::Int32, true),
        Field::new("k64", DataType::Int64, false),
        Field::new("f", DataType::Float64, false),
        Field::new("s", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from((0..ROWS as i64).collect::<Vec<_>>())),
            Arc::new(Int32Array::from(d.k32.clone())),
            Arc::new(Int64Array::from(d.k64.clone())),
            Arc::new(Float64Array::from(d.f.clone())),
            Arc::new(StringArray::from(d.s.clone())),
        ],
    )
    .unwrap();
    let props = WriterProperties::builder()
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_data_page_row_count_limit(250)
        .set_write_batch_size(250)
        .set_max_row_group_row_count(Some(2_000))
        .set_dictionary_enabled(false)
        .build();
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

fn index(path: &Path, columns: &[&str]) -> tamis::index::IndexReport {
    index_kind(path, columns, IndexKind::PageBloom)
}

fn index_kind(path: &Path, columns: &[&str], kind: IndexKind) -> tamis::index::IndexReport {
    let file = tamis::io::FileRef::Local(path.to_path_buf());
    let opened = tamis::file::OpenedFile::open_ref(&file).unwrap();
    let columns: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
    let options = tamis::index::IndexOptions { kind, fpp: 0.01 };
    let (bytes, report) = tamis::index::build_index(&opened, &columns, options).unwrap();
    tamis::index::write_sidecar(&file, bytes, None).unwrap();
    report
}

fn scan(path: &Path, sql: &str, sidecar: bool) -> tamis::Result<(Vec<i64>, tamis::ScanMetrics)> {
    scan_with(path, sql, sidecar, tamis::BrokenIndex::Fail)
}

fn scan_with(
    path: &Path,
    sql: &str,
    sidecar: bool,
    broken: tamis::BrokenIndex,
) -> tamis::Result<(Vec<i64>, tamis::ScanMetrics)> {
    let pruning = tamis::Pruning {
        sidecar_index: sidecar,
        ..tamis::Pruning::default()
    };
    let mut stream = tamis::Scan::open(path.to_str().unwrap())?
        .filter(sql)?
        .select(&["id"])?
        .pruning(pruning)
        .broken_index(broken)
        .threads(2)
        .batches()?;
    let mut ids = Vec::new();
    for b in stream.by_ref() {
        let b = b?;
        let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        ids.extend(a.values().iter().copied());
    }
    Ok((ids, stream.metrics()))
}

/// A scan that ignores a broken sidecar.
fn scan_ignoring(path: &Path, sql: &str) -> tamis::Result<(Vec<i64>, tamis::ScanMetrics)> {
    scan_with(path, sql, true, tamis::BrokenIndex::Ignore)
}

/// A predicate's SQL and its row-wise truth (SQL semantics: NULL is not true).
type Case = (String, Box<dyn Fn(usize) -> bool>);

fn cases(d: &Arc<Data>, rng: &mut StdRng) -> Vec<Case> {
    let mut out: Vec<Case> = Vec::new();
    for _ in 0..12 {
        let k = rng.random_range(-5..2_100);
        let dd = d.clone();
        out.push((
            format!("k32 = {k}"),
            Box::new(move |i| dd.k32[i] == Some(k)),
        ));
        let ks: Vec<i64> = (0..5)
            .map(|_| rng.random_range(-520..520) * 1_000_003)
            .collect();
        let dd = d.clone();
        let list = ks
            .iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let ks2 = ks.clone();
        out.push((
            format!("k64 IN ({list})"),
            Box::new(move |i| ks2.contains(&dd.k64[i])),
        ));
        let v = format!("v{}", rng.random_range(0..760));
        let dd = d.clone();
        let v2 = v.clone();
        out.push((
            format!("s = '{v}' OR k32 = {k}"),
            Box::new(move |i| dd.s[i].as_deref() == Some(&v2) || dd.k32[i] == Some(k)),
        ));
    }
    for (lit, want) in [
        ("0.0", 0.0f64),
        ("-0.0", 0.0),
        ("1.5", 1.5),
        ("74.75", 74.75),
        ("1e9", 1e9),
    ] {
        let dd = d.clone();
        out.push((format!("f = {lit}"), Box::new(move |i| dd.f[i] == want)));
    }
    let dd = d.clone();
    out.push(("f = 'NaN'".into(), Box::new(move |i| dd.f[i].is_nan())));
    let dd = d.clone();
    out.push((
        "s = ''".into(),
        Box::new(move |i| dd.s[i].as_deref() == Some("")),
    ));
    let dd = d.clone();
    out.push((
        "s IN ('v1', 'nope') AND k64 <> 0".into(),
        Box::new(move |i| dd.s[i].as_deref() == Some("v1") && dd.k64[i] != 0),
    ));
    out
}

#[test]
fn page_filters_never_change_rows_and_prune_pages() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    let d = Arc::new(data(7));
    write(&path, &d);
    let report = index(&path, &["k32", "k64", "f", "s"]);
    assert_eq!(report.pages, 4 * (ROWS as u64 / 250));
    let mut rng = StdRng::seed_from_u64(11);
    let mut pruned = 0;
    for (sql, truth) in cases(&d, &mut rng) {
        let want: Vec<i64> = (0..ROWS).filter(|&i| truth(i)).map(|i| i as i64).collect();
        let (on, m) = scan(&path, &sql, true).unwrap_or_else(|e| panic!("{sql}: {e}"));
        let (off, m_off) = scan(&path, &sql, false).unwrap();
        assert_eq!(on, want, "{sql}: with the index");
        assert_eq!(off, want, "{sql}: without");
        assert_eq!(m_off.pages_pruned_index, 0);
        assert_eq!(m.row_groups_index_stale, 0);
        pruned += m.pages_pruned_index;
        let in_range = sql
            .strip_prefix("k32 = ")
            .and_then(|k| k.parse::<i32>().ok())
            .is_some_and(|k| (0..2_000).contains(&k));
        if want.is_empty() && in_range {
            // An absent key: at 1% false positives, nearly every page is ruled out.
            assert!(m.pages_pruned_index >= 20, "{sql}: {m:?}");
        }
    }
    assert!(pruned > 100, "{pruned}");
}

#[test]
fn a_stale_sidecar_is_ignored_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    write(&path, &data(1));
    index(&path, &["k32"]);
    // Same name, other rows: the sidecar no longer describes the file.
    let d = data(2);
    write(&path, &d);
    let k = d.k32.iter().flatten().next().copied().unwrap();
    let want: Vec<i64> = (0..ROWS)
        .filter(|&i| d.k32[i] == Some(k))
        .map(|i| i as i64)
        .collect();
    let (got, m) = scan(&path, &format!("k32 = {k}"), true).unwrap();
    assert_eq!(got, want);
    assert_eq!(m.pages_pruned_index, 0);
    assert_eq!(m.row_groups_index_stale, 3);
}

#[test]
fn a_broken_sidecar_is_a_clear_error_never_wrong_rows() {
    broken_sidecar(IndexKind::PageBloom);
}

#[test]
fn a_broken_rows_index_is_a_clear_error_never_wrong_rows() {
    broken_sidecar(IndexKind::Rows);
}

fn broken_sidecar(kind: IndexKind) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    let d = data(3);
    write(&path, &d);
    index_kind(&path, &["k32", "s"], kind);
    let sidecar = dir.path().join(".t.parquet.tamis.puffin");
    let good = std::fs::read(&sidecar).unwrap();
    let k = 17;
    let want: Vec<i64> = (0..ROWS)
        .filter(|&i| d.k32[i] == Some(k))
        .map(|i| i as i64)
        .collect();
    // Truncated: an error naming the sidecar; or, by option, ignored with a warning.
    std::fs::write(&sidecar, &good[..good.len() - 3]).unwrap();
    let e = scan(&path, &format!("k32 = {k}"), true).unwrap_err();
    assert!(e.to_string().contains("t.parquet.tamis.puffin"), "{e}");
    assert_ne!(e.kind, tamis::ErrorKind::Internal, "{e}");
    let (got, m) = scan_ignoring(&path, &format!("k32 = {k}")).unwrap();
    assert_eq!(got, want);
    assert!(m.row_groups_index_broken > 0, "{m:?}");
    assert_eq!(m.warnings.len(), 1, "{:?}", m.warnings);
    assert!(
        m.warnings[0].contains("t.parquet.tamis.puffin"),
        "{:?}",
        m.warnings
    );
    // Any flipped byte: the right rows or a clean error, never a panic or wrong rows.
    let mut rng = StdRng::seed_from_u64(5);
    for _ in 0..300 {
        let mut bad = good.clone();
        let i = rng.random_range(0..bad.len());
        bad[i] ^= 1 << rng.random_range(0..8);
        std::fs::write(&sidecar, &bad).unwrap();
        match scan(&path, &format!("k32 = {k}"), true) {
            // Flips in the footer's JSON may leave it valid (e.g. a property name): the blobs'
            // checksums still hold.
            Ok((got, _)) => assert_eq!(got, want, "byte {i}"),
            Err(e) => {
                assert_ne!(e.kind, tamis::ErrorKind::Internal, "byte {i}: {e}");
                // Ignored, it costs time, never rows.
                let (got, _) = scan_ignoring(&path, &format!("k32 = {k}")).unwrap();
                assert_eq!(got, want, "byte {i}, ignored");
            }
        }
    }
}

/// Range predicates and their row-wise truth, on every indexed type.
fn range_cases(d: &Arc<Data>, rng: &mut StdRng) -> Vec<Case> {
    let mut out: Vec<Case> = Vec::new();
    for _ in 0..6 {
        let a = rng.random_range(-5..2_100);
        let b = a + rng.random_range(0..40);
        let dd = d.clone();
        out.push((
            format!("k32 BETWEEN {a} AND {b}"),
            Box::new(move |i| dd.k32[i].is_some_and(|k| (a..=b).contains(&k))),
        ));
        let dd = d.clone();
        out.push((
            format!("k32 < {a} AND k64 >= 0"),
            Box::new(move |i| dd.k32[i].is_some_and(|k| k < a) && dd.k64[i] >= 0),
        ));
        let v = format!("v{}", rng.random_range(0..760));
        let dd = d.clone();
        let v2 = v.clone();
        out.push((
            format!("s > '{v}'"),
            Box::new(move |i| dd.s[i].as_deref().is_some_and(|s| s > v2.as_str())),
        ));
    }
    for (lit, want) in [("74.5", 74.5f64), ("-0.0", 0.0), ("1e9", 1e9)] {
        let dd = d.clone();
        out.push((
            format!("f >= {lit}"),
            Box::new(move |i| dd.f[i].is_nan() || dd.f[i] >= want),
        ));
        let dd = d.clone();
        out.push((
            format!("f < {lit}"),
            Box::new(move |i| !dd.f[i].is_nan() && dd.f[i] < want),
        ));
    }
    let dd = d.clone();
    out.push(("f > 'NaN'".into(), Box::new(move |_| false)));
    let dd2 = dd.clone();
    out.push((
        "f <= 0".into(),
        Box::new(move |i| !dd2.f[i].is_nan() && dd2.f[i] <= 0.0),
    ));
    out.push((
        "s <= ''".into(),
        Box::new(move |i| dd.s[i].as_deref() == Some("")),
    ));
    out
}

#[test]
fn the_rows_index_answers_predicates_without_reading_the_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    let d = Arc::new(data(21));
    write(&path, &d);
    let report = index_kind(&path, &["k32", "k64", "f", "s"], IndexKind::Rows);
    assert!(report.columns.iter().all(|c| c.kind == IndexKind::Rows));
    let mut rng = StdRng::seed_from_u64(23);
    let mut all = cases(&d, &mut rng);
    all.extend(range_cases(&d, &mut rng));
    let mut decided = 0;
    for (sql, truth) in all {
        let want: Vec<i64> = (0..ROWS).filter(|&i| truth(i)).map(|i| i as i64).collect();
        let (on, m) = scan(&path, &sql, true).unwrap_or_else(|e| panic!("{sql}: {e}"));
        let (off, m_off) = scan(&path, &sql, false).unwrap();
        assert_eq!(on, want, "{sql}: with the index");
        assert_eq!(off, want, "{sql}: without");
        assert_eq!(m_off.conjuncts_decided_index, 0);
        decided += m.conjuncts_decided_index;
        // A point lookup the index answers alone: the candidates are exactly the matches,
        // and the row groups without a match are pruned before any page is read.
        let point = sql.starts_with("k32 = ") || sql.starts_with("k64 IN");
        let read = m_off.row_groups_pruned_statistics < m_off.row_groups_total;
        if point && read {
            assert_eq!(m.rows_candidate, m.rows_selected, "{sql}: {m:?}");
            assert!(m.conjuncts_decided_index > 0, "{sql}: {m:?}");
            // The filter column's pages are not read; for one key, its index blocks cost less
            // than the column (five keys read five blocks, about a page each at this size).
            assert!(m.pages_read < m_off.pages_read, "{sql}: {m:?}");
            if sql.starts_with("k32 = ") {
                let (on, off) = (m.bytes_read, m_off.bytes_read);
                assert!(on < off, "{sql}: {on} vs {off}");
            }
            if want.is_empty() {
                let pruned = m.row_groups_pruned_index + m.row_groups_pruned_statistics;
                assert_eq!(pruned, m.row_groups_total, "{sql}: {m:?}");
            }
        }
    }
    assert!(decided > 50, "{decided}");
}

#[test]
fn auto_picks_page_filters_for_clustered_columns_and_rows_for_scattered_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    write(&path, &data(4));
    let report = index_kind(&path, &["id", "k32"], IndexKind::Auto);
    let kind = |c: &str| report.columns.iter().find(|r| r.column == c).unwrap().kind;
    assert_eq!(kind("id"), IndexKind::PageBloom, "{:?}", report.columns);
    assert_eq!(kind("k32"), IndexKind::Rows, "{:?}", report.columns);
    // Both kinds in one sidecar: each answers its column.
    let (got, m) = scan(&path, "id = 4321 OR id = 17", true).unwrap();
    assert_eq!(got, vec![17, 4321]);
    assert_eq!(m.conjuncts_decided_index, 0, "{m:?}");
    let d = data(4);
    let want: Vec<i64> = (0..ROWS)
        .filter(|&i| d.k32[i] == Some(99))
        .map(|i| i as i64)
        .collect();
    let (got, m) = scan(&path, "k32 = 99", true).unwrap();
    assert_eq!(got, want);
    assert!(m.conjuncts_decided_index > 0, "{m:?}");
}

/// The selected rows of `columns`, in order, as the parquet crate's Arrow arrays would show them.
fn project(path: &Path, sql: &str, columns: &[&str]) -> (RecordBatch, tamis::ScanMetrics) {
    let mut stream = tamis::Scan::open(path.to_str().unwrap())
        .unwrap()
        .filter(sql)
        .unwrap()
        .select(columns)
        .unwrap()
        .threads(1)
        .batches()
        .unwrap();
    let batches: Vec<RecordBatch> = stream.by_ref().map(|b| b.unwrap()).collect();
    let schema = batches
        .first()
        .map(|b| b.schema())
        .unwrap_or_else(|| stream.schema());
    let batch = arrow::compute::concat_batches(&schema, &batches).unwrap();
    (batch, stream.metrics())
}

#[test]
fn a_column_pinned_by_an_equality_is_projected_without_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.parquet");
    let d = Arc::new(data(31));
    write(&path, &d);
    index_kind(&path, &["k32", "k64", "f", "s"], IndexKind::Rows);
    // The oracle: the parquet crate's reader, filtered row by row.
    let file = File::open(&path).unwrap();
    let reader =
        parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(file, 8192).unwrap();
    let all: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    let all = arrow::compute::concat_batches(&all[0].schema(), &all).unwrap();
    let k32 = d.k32.iter().flatten().copied().nth(17).unwrap();
    let k64 = d.k64[4000];
    // (predicate, projected column, row-wise truth)
    type Lookup = (String, &'static str, Box<dyn Fn(usize) -> bool>);
    let cases: Vec<Lookup> = vec![
        (format!("k32 = {k32}"), "k32", {
            let d = d.clone();
            Box::new(move |i| d.k32[i] == Some(k32))
        }),
        (format!("k32 IN ({k32})"), "k32", {
            let d = d.clone();
            Box::new(move |i| d.k32[i] == Some(k32))
        }),
        (format!("k64 = {k64} AND id >= 3000"), "k64", {
            let d = d.clone();
            Box::new(move |i| d.k64[i] == k64 && i >= 3000)
        }),
        ("s = 'v5'".into(), "s", {
            let d = d.clone();
            Box::new(move |i| d.s[i].as_deref() == Some("v5"))
        }),
        ("s = ''".into(), "s", {
            let d = d.clone();
            Box::new(move |i| d.s[i].as_deref() == Some(""))
        }),
        // Not pinned: `f = 0.0` also holds for a stored -0.0, which must come back as stored.
        ("f = 0.0".into(), "f", {
            let d = d.clone();
            Box::new(move |i| d.f[i] == 0.0)
        }),
        // Under OR nothing is pinned.
        (format!("k32 = {k32} OR k32 = 7"), "k32", {
            let d = d.clone();
            Box::new(move |i| d.k32[i] == Some(k32) || d.k32[i] == Some(7))
        }),
    ];
    for (sql, column, truth) in cases {
        let rows: Vec<u32> = (0..ROWS as u32).filter(|&i| truth(i as usize)).collect();
        assert!(!rows.is_empty(), "{sql}");
        let want = arrow::compute::take_record_batch(
            &all.project(&[0, all.schema().index_of(column).unwrap()])
                .unwrap(),
            &UInt32Array::from(rows),
        )
        .unwrap();
        let (got, m) = project(&path, &sql, &["id", column]);
        assert_eq!(got, want, "{sql}");
        if column == "f" {
            let (a, b) = (got.column(1), want.column(1));
            let bits = |x: &ArrayRef| -> Vec<u64> {
                x.as_any()
                    .downcast_ref::<Float64Array>()
                    .unwrap()
                    .values()
                    .iter()
                    .map(|v| v.to_bits())
                    .collect()
            };
            assert_eq!(bits(a), bits(b), "{sql}: the sign of zero");
        }
        // A lookup the rows index decides reads no page of its pinned key column.
        let (_, key_only) = project(&path, &sql, &[column]);
        let pinned = !sql.contains(" OR ") && column != "f";
        if pinned && !sql.contains("id >=") {
            assert_eq!(key_only.pages_read, 0, "{sql}: {key_only:?}");
        } else if !pinned {
            assert!(key_only.pages_read > 0, "{sql}: {key_only:?}");
        }
        assert_eq!(m.rows_selected as usize, want.num_rows(), "{sql}");
    }
}
