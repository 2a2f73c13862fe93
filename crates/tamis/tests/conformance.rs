//! Conformance against the parquet-testing corpus: every `data/*.parquet` file reads exactly as
//! the `parquet` crate reads it (INT96 in microseconds), or, for the files the crate refuses or
//! reads otherwise than pyarrow ([`PYARROW_READ`]), exactly as pyarrow does; except the files
//! listed in [`NOT_READ`] (each with the error tamis gives today and why). Every `bad_data/*`
//! file is an error, never a panic. No file of
//! either directory may yield an internal error: those are bugs (a panic caught in a row-group
//! task is reported as one).
//!
//! The corpus directory is `$TAMIS_PARQUET_TESTING`, else `<workspace>/../shared/parquet-testing`;
//! `TAMIS_PARQUET_TESTING=skip` skips both tests (see [`corpus_dir`]).

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use common::{diff_batches, oracle_read, tamis_scan, Req};

/// The corpus, or `None` when `TAMIS_PARQUET_TESTING=skip` (what `.ci/run` sets on a clone
/// without `../shared`, and says so). Anywhere else a missing corpus, or one whose `data/` holds
/// no Parquet file, fails the test: CI must not pass without it by accident.
fn corpus_dir() -> Option<PathBuf> {
    let dir = match std::env::var("TAMIS_PARQUET_TESTING") {
        Ok(d) if d == "skip" => {
            eprintln!("TAMIS_PARQUET_TESTING=skip: parquet-testing conformance skipped");
            return None;
        }
        Ok(d) => PathBuf::from(d),
        Err(_) => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/parquet-testing"),
    };
    let has_data = std::fs::read_dir(dir.join("data")).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "parquet"))
    });
    assert!(
        has_data,
        "parquet-testing corpus not found at {} (no data/*.parquet): set TAMIS_PARQUET_TESTING \
         to a checkout of apache/parquet-testing, or to `skip` to skip these tests; refusing to \
         pass without it",
        dir.display()
    );
    Some(dir)
}

fn files_in(dir: &Path, parquet_only: bool) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .filter(|p| !parquet_only || p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    v.sort();
    v
}

fn panic_text(e: Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "non-string panic".into())
}

/// Whether the `parquet` crate reads the file without error and exactly as `got`.
fn oracle_agrees(path: &Path, got: &arrow::array::RecordBatch) -> bool {
    match catch_unwind(AssertUnwindSafe(|| oracle_read(path))) {
        Ok(Ok(want)) => diff_batches(got, &want).is_none(),
        _ => false,
    }
}

/// `data/` files the `parquet` crate refuses or reads otherwise than pyarrow and DuckDB, which
/// tamis reads as pyarrow does: each is compared with what pyarrow 26 reads from it, written by
/// `tests/pyarrow/write_expected.py` to `tests/pyarrow/<name>.arrow`.
const PYARROW_READ: &[&str] = &[
    // The footer's dictionary_page_offset is 0, and ColumnMetaData field 15 (declared `i32
    // bloom_filter_length`) holds a list of page headers (a Dremio writer): pyarrow's Thrift
    // reader skips the mistyped field, the crate's misreads it.
    "dict-page-offset-zero.parquet",
    // Chunk sizes without the dictionary page header (parquet-mr before 1.2.9, PARQUET-816):
    // the crate's page reader runs out of bytes; Arrow C++ pads such chunks.
    "nation.dict-malformed.parquet",
    // The footer says 0 rows, its row group 6: pyarrow and DuckDB read the row group's 6.
    "repeated_no_annotation.parquet",
];

/// What pyarrow reads from `name` (see [`PYARROW_READ`]).
fn pyarrow_read(name: &str) -> arrow::array::RecordBatch {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/pyarrow")
        .join(name.replace(".parquet", ".arrow"));
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader = arrow::ipc::reader::FileReader::try_new(file, None).unwrap();
    let schema = reader.schema();
    let batches: Vec<_> = reader.map(|b| b.unwrap()).collect();
    arrow::compute::concat_batches(&schema, &batches).unwrap()
}

/// `data/` files tamis does not read identically to the `parquet` crate, with the error kind it
/// gives and a piece of its message. Anything else that is not read identically fails the test,
/// and so does a file listed here that starts reading identically (remove it from the list).
const NOT_READ: &[(&str, tamis::ErrorKind, &str)] = &[
    // A map of strings above the 2 GiB of one Arrow string array (the parquet crate and pyarrow
    // fail too; issue 16, requirement 5).
    (
        "large_string_map.brotli.parquet",
        tamis::ErrorKind::CorruptFile,
        "index overflow decoding byte array",
    ),
];

#[test]
fn data_files_match_parquet_crate() {
    let Some(corpus) = corpus_dir() else { return };
    let dir = corpus.join("data");
    let files = files_in(&dir, true);
    assert!(!files.is_empty(), "no data/*.parquet in {}", dir.display());
    let mut table = Vec::new();
    let mut failures = Vec::new();
    let views = Req {
        string_views: true,
        short_decimals: true,
        ..Req::default()
    };
    let dictionaries = Req {
        string_dictionaries: true,
        ..Req::default()
    };
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let p = path.to_str().unwrap().to_string();
        let ours = catch_unwind(AssertUnwindSafe(|| tamis_scan(&p, &Req::default())));
        let oracle = if PYARROW_READ.contains(&name.as_str()) {
            Ok(pyarrow_read(&name))
        } else {
            catch_unwind(AssertUnwindSafe(|| oracle_read(path)))
                .unwrap_or_else(|e| Err(format!("parquet crate panicked: {}", panic_text(e))))
        };
        let (status, failure) = match (ours, oracle) {
            (Err(panic), _) => (
                "PANIC",
                Some(format!("tamis panicked: {}", panic_text(panic))),
            ),
            (Ok(Ok((got, _))), Ok(want)) => match diff_batches(&got, &want) {
                // The same rows again with strings and binaries as views and short decimals
                // as `Decimal64`, and with strings and binaries as Arrow dictionaries.
                None => match (tamis_scan(&p, &views), tamis_scan(&p, &dictionaries)) {
                    (Ok((got, _)), Ok((in_dictionaries, _))) => {
                        match (
                            diff_batches(&got, &want),
                            diff_batches(&in_dictionaries, &want),
                        ) {
                            (None, None) if PYARROW_READ.contains(&name.as_str()) => {
                                ("ok (as pyarrow)", None)
                            }
                            (None, None) => ("ok", None),
                            (Some(d), _) => ("VIEWS", Some(format!("with string views: {d}"))),
                            (None, Some(d)) => {
                                ("DICTIONARIES", Some(format!("with dictionaries: {d}")))
                            }
                        }
                    }
                    (Err(e), _) => ("VIEWS", Some(format!("fails with string views: {e}"))),
                    (_, Err(e)) => (
                        "DICTIONARIES",
                        Some(format!("fails with dictionaries: {e}")),
                    ),
                },
                Some(d) => ("MISMATCH", Some(d)),
            },
            (Ok(Err(e)), _) if e.kind == tamis::ErrorKind::Internal => (
                "INTERNAL",
                Some(format!("internal error (a bug, never data): {e}")),
            ),
            (Ok(Err(e)), _) => match NOT_READ.iter().find(|(f, _, _)| *f == name) {
                Some((_, kind, text)) if e.kind == *kind && e.to_string().contains(text) => {
                    ("listed", None)
                }
                Some((_, kind, text)) => (
                    "CHANGED",
                    Some(format!(
                        "listed as {kind:?} '{text}' but tamis now fails with {:?}: {e}",
                        e.kind
                    )),
                ),
                None => (
                    "ERROR",
                    Some(format!(
                        "tamis fails ({:?}) and the file is not in NOT_READ: {e}",
                        e.kind
                    )),
                ),
            },
            (Ok(Ok((got, _))), Err(oe)) => (
                "ACCEPTS-BAD",
                Some(format!(
                    "parquet crate fails ({oe}) but tamis returned {} rows",
                    got.num_rows()
                )),
            ),
        };
        if status.starts_with("ok") && NOT_READ.iter().any(|(f, _, _)| *f == name) {
            failures.push(format!(
                "{name}: reads identically now; remove it from NOT_READ"
            ));
        }
        table.push(format!("{name:<60} {status}"));
        if let Some(f) = failure {
            failures.push(format!("{name}: {f}"));
        }
    }
    eprintln!("{:<60} result\n{}", "file", table.join("\n"));
    assert!(
        failures.is_empty(),
        "{} of {} corpus files disagree:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

/// Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's `days_from_civil`): the
/// test's own calendar, for years chrono and Python do not reach.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Microseconds since the epoch of a UTC date and time.
fn micros(date: (i64, i64, i64), hour: i64, minute: i64, second: i64, us: i64) -> i64 {
    ((days_from_civil(date.0, date.1, date.2) * 24 + hour) * 60 + minute) * 60_000_000
        + second * 1_000_000
        + us
}

/// `int96_from_spark.parquet` holds Spark timestamps up to year 290,000, beyond the nanosecond
/// range; tamis reads them in microseconds (Spark's unit). The values written (Comet's Spark
/// test generator: 2024-01-01T12:34:56.123456 at UTC-8, 2024-01-01T01:00:00Z,
/// 9999-12-31T01:00:00-02:00, 2024-12-31T01:00:00+02:00, null, 290000-12-31T01:00:00+02:00),
/// spelled out, and pyarrow's `coerce_int96_timestamp_unit="us"` read of the same file, which
/// agrees on all but the last: Spark's writer overflows its Julian-day count for it, Spark and
/// the `parquet` crate wrap it back, pyarrow reads another instant (-7188624036226874385).
#[test]
fn int96_from_spark_in_microseconds() {
    use arrow::array::{Array, TimestampMicrosecondArray};
    let Some(corpus) = corpus_dir() else { return };
    let path = corpus.join("data/int96_from_spark.parquet");
    let (got, _) = tamis_scan(path.to_str().unwrap(), &Req::default()).unwrap();
    let a = got.column(0);
    let a = a
        .as_any()
        .downcast_ref::<TimestampMicrosecondArray>()
        .unwrap_or_else(|| panic!("INT96 read as {}", a.data_type()));
    let want = TimestampMicrosecondArray::from(vec![
        Some(micros((2024, 1, 1), 20, 34, 56, 123_456)),
        Some(micros((2024, 1, 1), 1, 0, 0, 0)),
        Some(micros((9999, 12, 31), 3, 0, 0, 0)),
        Some(micros((2024, 12, 30), 23, 0, 0, 0)),
        None,
        Some(micros((290_000, 12, 30), 23, 0, 0, 0)),
    ]);
    assert_eq!(a, &want);
    assert_eq!(a.value(5), 9_089_380_393_200_000_000);
    let pyarrow = pyarrow_read("int96_from_spark.parquet");
    let theirs = (pyarrow.column(0).as_any())
        .downcast_ref::<TimestampMicrosecondArray>()
        .unwrap();
    assert_eq!(theirs.slice(0, 5), a.slice(0, 5));
    assert_eq!(theirs.value(5), -7_188_624_036_226_874_385);
}

/// Every corrupt file is an `Err`, at open or while streaming — with and without a filter.
#[test]
fn bad_data_is_an_error_not_a_panic() {
    let Some(corpus) = corpus_dir() else { return };
    let dir = corpus.join("bad_data");
    let files = files_in(&dir, false);
    assert!(!files.is_empty(), "no files in {}", dir.display());
    let mut failures = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let p = path.to_str().unwrap().to_string();
        // Plain scan.
        let mut attempts: Vec<(String, Req)> = vec![("no filter".into(), Req::default())];
        // A filter on the first column, if the file opens and the column is filterable.
        let first = catch_unwind(AssertUnwindSafe(|| {
            tamis::Scan::open(&p)
                .ok()
                .and_then(|mut s| s.schema().ok())
                .map(|s| s.field(0).name().clone())
        }));
        match first {
            Err(panic) => {
                failures.push(format!(
                    "{name}: Scan::open panicked: {}",
                    panic_text(panic)
                ));
                continue;
            }
            Ok(Some(col)) => {
                for f in [
                    format!("\"{col}\" IS NOT NULL"),
                    format!("\"{col}\" IS NULL"),
                ] {
                    attempts.push((
                        f.clone(),
                        Req {
                            filter: None,
                            ..Req::default()
                        },
                    ));
                }
            }
            Ok(None) => {}
        }
        let mut readable = false;
        for (label, req) in &attempts {
            let filter = (label != "no filter").then_some(label.as_str());
            let req = Req {
                filter,
                ..req.clone()
            };
            let r = catch_unwind(AssertUnwindSafe(|| tamis_scan(&p, &req)));
            let outcome = match r {
                Err(panic) => {
                    failures.push(format!("{name} [{label}]: panicked: {}", panic_text(panic)));
                    "PANIC".to_string()
                }
                Ok(Ok((b, m))) if filter.is_some() && b.num_rows() == 0 => {
                    // Pruning (or levels alone) decided without materialising a value: the
                    // corruption need not be seen.
                    format!("ok, 0 rows ({} pages read)", m.pages_read)
                }
                Ok(Ok((b, _))) if filter.is_some() && readable => {
                    format!(
                        "ok, {} rows; the file is readable (see no-filter line)",
                        b.num_rows()
                    )
                }
                Ok(Ok((b, _))) if filter.is_none() && oracle_agrees(path, &b) => {
                    readable = true;
                    // The reference reader accepts the file and reads the same rows: no tamis
                    // bug to report (printed so a reviewer sees it).
                    format!(
                        "READABLE: {} rows, identical to the parquet crate",
                        b.num_rows()
                    )
                }
                Ok(Ok((b, _))) => {
                    failures.push(format!(
                        "{name} [{label}]: returned {} rows, expected an error",
                        b.num_rows()
                    ));
                    "ACCEPTED".to_string()
                }
                Ok(Err(e)) => {
                    assert!(
                        !e.to_string().contains('\n'),
                        "error Display is one line: {e}"
                    );
                    if e.kind == tamis::ErrorKind::Internal {
                        failures.push(format!(
                            "{name} [{label}]: internal error (a bug, never data): {e}"
                        ));
                    }
                    format!("error ({:?}): {e}", e.kind)
                }
            };
            eprintln!("{name:<40} [{label}] {outcome}");
        }
    }
    assert!(
        failures.is_empty(),
        "bad_data handling:\n{}",
        failures.join("\n")
    );
}
