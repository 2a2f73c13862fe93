//! Conformance against the parquet-testing corpus: every `data/*.parquet` file reads exactly as
//! the `parquet` crate reads it, except the files listed in [`NOT_READ`] (each with the error
//! tamis gives today and why); every `bad_data/*` file is an error, never a panic. No file of
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

/// `data/` files tamis does not read identically to the `parquet` crate, with the error kind it
/// gives and a piece of its message. Anything else that is not read identically fails the test,
/// and so does a file listed here that starts reading identically (remove it from the list).
const NOT_READ: &[(&str, tamis::ErrorKind, &str)] = &[
    // The footer's dictionary_page_offset is 0 (a Dremio writer), and a list of i64 in it is
    // typed as i16 in the Thrift encoding; pyarrow and DuckDB read 39 rows (their Thrift readers
    // accept the type, and they locate the pages themselves). The parquet crate's footer decoder
    // refuses the list; tamis reports its reason.
    (
        "dict-page-offset-zero.parquet",
        tamis::ErrorKind::CorruptFile,
        "Expected list element type of I64 but got I16",
    ),
    // Page headers whose sizes do not match the data (pyarrow and DuckDB read 25 rows; the
    // parquet crate fails too).
    (
        "nation.dict-malformed.parquet",
        tamis::ErrorKind::CorruptFile,
        "Invalid page header",
    ),
    // The footer says 0 rows, its row group 6 (pyarrow and DuckDB read 6).
    (
        "repeated_no_annotation.parquet",
        tamis::ErrorKind::Unsupported,
        "the footer says the file has 0 rows",
    ),
    // Two INT96 timestamps lie outside the nanosecond range: the parquet crate and pyarrow
    // wrap them around to other instants (1816, 2147), DuckDB refuses them; so does tamis,
    // naming the first such value (year 9999).
    (
        "int96_from_spark.parquet",
        tamis::ErrorKind::Unsupported,
        "INT96 timestamp (Julian day 5373484",
    ),
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
        ..Req::default()
    };
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let p = path.to_str().unwrap().to_string();
        let ours = catch_unwind(AssertUnwindSafe(|| tamis_scan(&p, &Req::default())));
        let oracle = catch_unwind(AssertUnwindSafe(|| oracle_read(path)))
            .unwrap_or_else(|e| Err(format!("parquet crate panicked: {}", panic_text(e))));
        let (status, failure) = match (ours, oracle) {
            (Err(panic), _) => (
                "PANIC",
                Some(format!("tamis panicked: {}", panic_text(panic))),
            ),
            (Ok(Ok((got, _))), Ok(want)) => match diff_batches(&got, &want) {
                // The same rows again with strings and binaries as views.
                None => match tamis_scan(&p, &views) {
                    Ok((got, _)) => match diff_batches(&got, &want) {
                        None => ("ok", None),
                        Some(d) => ("VIEWS", Some(format!("with string views: {d}"))),
                    },
                    Err(e) => ("VIEWS", Some(format!("fails with string views: {e}"))),
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
        if status == "ok" && NOT_READ.iter().any(|(f, _, _)| *f == name) {
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
