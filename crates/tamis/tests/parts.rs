//! Scans of parts of files (`Scan::parts`): whole row groups and row slices inside them, as an
//! engine splitting one table into partitions asks for them. The rows a scan returns are the
//! union of its parts' rows that pass the filter, checked against the `parquet` crate's reader
//! and a filter evaluated here row by row; partitions that cut a row group between them read
//! every row once and count the row group once.

mod common;

use std::ops::Range;
use std::sync::Arc;

use arrow::array::{Array, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::{diff_batches, oracle_read};
use tamis::ScanPart;

/// Rows per row group as written: three full ones and a short last one.
const GROUP_ROWS: usize = 5000;
const ROWS: usize = 3 * GROUP_ROWS + 2300;

/// `id` (ascending: pages prune on it), `v` (nullable), `s` (dictionary, empty strings), `p`
/// (PLAIN doubles with NaN and -0.0), in row groups of 5 000 rows and pages of 256.
fn write(dir: &std::path::Path) -> String {
    let mut rng = StdRng::seed_from_u64(42);
    let id = Int64Array::from_iter_values(0..ROWS as i64);
    let v: Int32Array = (0..ROWS)
        .map(|_| (rng.random_range(0..10) != 0).then(|| rng.random_range(-100..100)))
        .collect();
    let words = ["", "a", "b", "c", "dd"];
    let s: StringArray = (0..ROWS)
        .map(|_| Some(words[rng.random_range(0..words.len())]))
        .collect();
    let p: Float64Array = (0..ROWS)
        .map(|_| match rng.random_range(0..20) {
            0 => f64::NAN,
            1 => -0.0,
            _ => rng.random_range(-1.0..1.0),
        })
        .map(Some)
        .collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("v", DataType::Int32, true),
        Field::new("s", DataType::Utf8, false),
        Field::new("p", DataType::Float64, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(id), Arc::new(v), Arc::new(s), Arc::new(p)],
    )
    .unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(GROUP_ROWS))
        .set_data_page_row_count_limit(256)
        .set_write_batch_size(64)
        .set_column_dictionary_enabled("p".into(), false)
        .build();
    let path = dir.join("parts.parquet");
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    path.to_string_lossy().to_string()
}

/// A filter's text, and the same predicate on row `i` of the oracle's batch.
type Filter = (Option<&'static str>, fn(&RecordBatch, usize) -> bool);

/// The filters tried.
fn filters() -> Vec<Filter> {
    fn col<T: Clone + 'static>(b: &RecordBatch, name: &str) -> T {
        let c = b.column_by_name(name).unwrap();
        c.as_any().downcast_ref::<T>().unwrap().clone()
    }
    vec![
        (None, |_, _| true),
        (Some("v > 10"), |b, i| {
            let v: Int32Array = col(b, "v");
            v.is_valid(i) && v.value(i) > 10
        }),
        (Some("s = 'b' OR s = ''"), |b, i| {
            let s: StringArray = col(b, "s");
            matches!(s.value(i), "b" | "")
        }),
        (Some("id >= 4000 AND id < 7300"), |b, i| {
            let id: Int64Array = col(b, "id");
            (4000..7300).contains(&id.value(i))
        }),
        (Some("v IS NULL OR p < 0.5"), |b, i| {
            let (v, p): (Int32Array, Float64Array) = (col(b, "v"), col(b, "p"));
            v.is_null(i) || p.value(i) < 0.5
        }),
        (Some("v = 1000"), |_, _| false),
    ]
}

/// Random parts of the file: per row group, nothing, all of it, or one to three slices
/// (overlapping at times); the rows they name, as positions in the file.
fn random_parts(rng: &mut StdRng, file: &str) -> (Vec<ScanPart>, Vec<bool>) {
    let mut parts = Vec::new();
    let mut read = vec![false; ROWS];
    let groups = ROWS.div_ceil(GROUP_ROWS);
    for rg in 0..groups {
        let first = rg * GROUP_ROWS;
        let n = GROUP_ROWS.min(ROWS - first);
        match rng.random_range(0..4) {
            0 => {}
            1 => {
                parts.push(ScanPart::row_groups(file, rg..rg + 1));
                read[first..first + n].iter_mut().for_each(|r| *r = true);
            }
            _ => {
                for _ in 0..rng.random_range(1..4) {
                    let start = match rng.random_range(0..4) {
                        0 => 0,
                        _ => rng.random_range(0..n),
                    };
                    let end = match rng.random_range(0..4) {
                        0 => n,
                        _ => rng.random_range(start..=n),
                    };
                    parts.push(ScanPart::rows(file, rg, start..end));
                    read[first + start..first + end]
                        .iter_mut()
                        .for_each(|r| *r = true);
                }
            }
        }
    }
    (parts, read)
}

fn scan(
    path: &str,
    parts: Option<Vec<ScanPart>>,
    filter: Option<&str>,
    threads: usize,
) -> tamis::Result<(RecordBatch, tamis::ScanMetrics)> {
    let mut scan = tamis::Scan::open(path)?.threads(threads);
    if let Some(parts) = parts {
        scan = scan.parts(parts);
    }
    if let Some(f) = filter {
        scan = scan.filter(f)?;
    }
    let mut stream = scan.range_rows(1000).batches()?;
    let schema = stream.schema();
    let mut batches = Vec::new();
    for b in &mut stream {
        batches.push(b?);
    }
    let batch = arrow::compute::concat_batches(&schema, &batches).unwrap();
    Ok((batch, stream.metrics()))
}

#[test]
fn slices_of_row_groups_read_exactly_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path());
    let all = oracle_read(std::path::Path::new(&path)).unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    for round in 0..60 {
        let (parts, read) = random_parts(&mut rng, &path);
        for (filter, keep) in filters() {
            let want: Vec<u32> = (0..ROWS)
                .filter(|&i| read[i] && keep(&all, i))
                .map(|i| i as u32)
                .collect();
            let want = arrow::array::UInt32Array::from(want);
            let want = arrow::compute::take_record_batch(&all, &want).unwrap();
            let threads = 1 + round % 3;
            let (got, m) = scan(&path, Some(parts.clone()), filter, threads).unwrap();
            let ctx = format!("round {round}, filter {filter:?}, parts {parts:?}");
            if let Some(d) = diff_batches(&got, &want) {
                panic!("{ctx}: {d}");
            }
            // Metrics: the rows named, once each, and the row groups among them counted
            // once, though a row group cut into slices is a scan of each.
            assert_eq!(
                m.rows_total,
                read.iter().filter(|&&r| r).count() as u64,
                "{ctx}"
            );
        }
    }
}

#[test]
fn partitions_cutting_row_groups_read_every_row_once_and_count_each_row_group_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path());
    let all = oracle_read(std::path::Path::new(&path)).unwrap();
    // Cuts inside row groups 0 and 2, and one on the boundary between 1 and 2.
    let cuts: [Range<usize>; 4] = [0..3100, 3100..10_000, 10_000..12_345, 12_345..ROWS];
    let part = |r: &Range<usize>| -> Vec<ScanPart> {
        let mut out = Vec::new();
        for rg in 0..ROWS.div_ceil(GROUP_ROWS) {
            let first = rg * GROUP_ROWS;
            let n = GROUP_ROWS.min(ROWS - first);
            let (lo, hi) = (r.start.max(first), r.end.min(first + n));
            match (lo, hi) {
                (lo, hi) if lo >= hi => {}
                (lo, hi) if lo == first && hi == first + n => {
                    out.push(ScanPart::row_groups(&path, rg..rg + 1))
                }
                (lo, hi) => out.push(ScanPart::rows(&path, rg, lo - first..hi - first)),
            }
        }
        out
    };
    for (filter, keep) in filters() {
        let mut ids = Vec::new();
        let (mut row_groups, mut rows, mut pruned) = (0, 0, 0);
        for r in &cuts {
            let (got, m) = scan(&path, Some(part(r)), filter, 2).unwrap();
            let id = got.column_by_name("id").unwrap();
            let id = id.as_any().downcast_ref::<Int64Array>().unwrap();
            assert!(id.values().iter().all(|&i| r.contains(&(i as usize))));
            ids.extend(id.values().iter().copied());
            row_groups += m.row_groups_total;
            rows += m.rows_total;
            pruned += m.row_groups_pruned_statistics;
        }
        let want: Vec<i64> = (0..ROWS)
            .filter(|&i| keep(&all, i))
            .map(|i| i as i64)
            .collect();
        assert_eq!(ids, want, "filter {filter:?}");
        assert_eq!(row_groups, 4, "filter {filter:?}");
        assert_eq!(rows, ROWS as u64, "filter {filter:?}");
        let (_, whole) = scan(&path, None, filter, 1).unwrap();
        assert_eq!(
            pruned, whole.row_groups_pruned_statistics,
            "filter {filter:?}"
        );
    }
}

#[test]
fn a_slice_past_its_row_group_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path());
    let parts = vec![ScanPart::rows(&path, 0, 4000..GROUP_ROWS + 1)];
    let err = scan(&path, Some(parts), None, 1).unwrap_err().to_string();
    assert!(
        err.contains("parts.parquet") && err.contains("5000 rows"),
        "{err}"
    );
    // An empty slice reads nothing; a part of a file not in the scan reads nothing.
    let (got, _) = scan(&path, Some(vec![ScanPart::rows(&path, 1, 7..7)]), None, 1).unwrap();
    assert_eq!(got.num_rows(), 0);
    // A slice reads only the pages holding its rows: 1 000 rows of pages of 256 rows are 4 or
    // 5 pages a column, against 20 for the row group; filtered, the same.
    for filter in [None, Some("v > 10")] {
        let slice = vec![ScanPart::rows(&path, 1, 2000..3000)];
        let (got, m) = scan(&path, Some(slice), filter, 1).unwrap();
        assert!(got.num_rows() > 0);
        assert!(
            m.pages_read <= 4 * 5,
            "{filter:?}: {} pages read",
            m.pages_read
        );
        let whole = vec![ScanPart::row_groups(&path, 1..2)];
        let (_, m) = scan(&path, Some(whole), filter, 1).unwrap();
        assert!(
            m.pages_read >= 4 * 19,
            "{filter:?}: {} pages read",
            m.pages_read
        );
    }
    let other = vec![ScanPart::row_groups("elsewhere.parquet", 0..1)];
    let (got, _) = scan(&path, Some(other), None, 1).unwrap();
    assert_eq!(got.num_rows(), 0);
}
