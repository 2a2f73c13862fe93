//! Hostile-input testing for tamis on stable Rust: a generated corpus of valid files
//! ([`corpus`]), mutations of them ([`mutate`]), random predicates ([`predicate`]), a counting
//! allocator ([`alloc`]) and the verdict on one scan ([`check_scan`]).
//!
//! The `tamis-fuzz` binary runs coverage-free mutation loops over these (see its `--help`); the
//! byte-flipping test (`tests/byteflip.rs`) runs a fixed, seeded share of them in CI.

pub mod alloc;
pub mod corpus;
pub mod mutate;
pub mod predicate;
pub mod targets;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use tamis::ErrorKind;

/// What one scan asks for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub filter: Option<String>,
    pub select: Option<Vec<String>>,
    pub memory_limit: Option<usize>,
    pub index_dir: Option<std::path::PathBuf>,
}

/// Where a scan's error came from: binding the request to the file's schema may legitimately
/// fail without naming the file (a corrupted column name is an unknown column, a predicate the
/// column's type does not support); nothing else may.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Open,
    Bind,
    Read,
}

/// Scans `path` to the end; the rows read, or the first error and where it came from.
pub fn scan(path: &str, req: &Request) -> Result<usize, (Stage, tamis::Error)> {
    let mut scan = tamis::Scan::open(path)
        .map_err(|e| (Stage::Open, e))?
        .threads(1);
    if let Some(l) = req.memory_limit {
        scan = scan.memory_limit(l);
    }
    if let Some(d) = &req.index_dir {
        scan = scan.index_dir(d.clone());
    }
    if let Some(f) = &req.filter {
        scan = scan.filter(f).map_err(|e| (Stage::Bind, e))?;
    }
    if let Some(s) = &req.select {
        scan = scan.select(s).map_err(|e| (Stage::Bind, e))?;
    }
    let mut rows = 0;
    for b in scan.batches().map_err(|e| (Stage::Read, e))? {
        rows += b.map_err(|e| (Stage::Read, e))?.num_rows();
    }
    Ok(rows)
}

/// Why an error is not acceptable for hostile data, if it is not: an internal error (a bug), a
/// message over several lines, or an error that does not name `file`.
pub fn judge_error(stage: Stage, e: &tamis::Error, file: &str) -> Result<(), String> {
    let line = e.to_string();
    if e.kind == ErrorKind::Internal {
        return Err(format!("internal error: {line}"));
    }
    if line.contains('\n') {
        return Err(format!("error over several lines: {line:?}"));
    }
    let named = line.contains(file);
    let request_error = matches!(e.kind, ErrorKind::InvalidArgument | ErrorKind::Unsupported);
    if !named && (stage != Stage::Bind || !request_error) {
        return Err(format!("error does not name the file: {line}"));
    }
    Ok(())
}

/// The panic message of a caught panic.
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

/// A scan of one hostile file: no panic, any error clean and naming the file (see
/// [`judge_error`]), and at most `budget` bytes live at the peak (measured by [`alloc`], which
/// must be the global allocator). `Ok` carries the rows read or the acceptable error.
pub fn check_scan(path: &Path, req: &Request, budget: usize) -> Result<String, String> {
    let p = path.to_str().expect("a UTF-8 temporary path");
    let name = path.file_name().unwrap().to_str().unwrap();
    let base = alloc::reset_peak();
    let result = catch_unwind(AssertUnwindSafe(|| scan(p, req)));
    let peak = alloc::peak_since(base);
    let verdict = match result {
        Err(panic) => Err(format!("panic: {}", panic_message(&*panic))),
        Ok(Ok(rows)) => Ok(format!("{rows} rows")),
        Ok(Err((stage, e))) => judge_error(stage, &e, name).map(|()| e.to_string()),
    };
    match verdict {
        Ok(_) if peak > budget => Err(format!(
            "peak allocation {} KiB over the budget of {} KiB",
            peak >> 10,
            budget >> 10
        )),
        v => v,
    }
}
