//! `tamis index`: build sidecar indexes beside existing Parquet files.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::CliError;

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexKind {
    /// Per column, from the data: page filters for clustered or low-cardinality columns, the
    /// rows index for scattered ones (the choice and its reason are printed).
    Auto,
    /// One split-block Bloom filter per data page (`=` and `IN` skip pages).
    PageBloom,
    /// Per row group, the sorted distinct values with their row ids (`=`, `IN` and ranges
    /// select rows without reading the column).
    Rows,
}

impl From<IndexKind> for tamis::index::IndexKind {
    fn from(k: IndexKind) -> Self {
        match k {
            IndexKind::Auto => tamis::index::IndexKind::Auto,
            IndexKind::PageBloom => tamis::index::IndexKind::PageBloom,
            IndexKind::Rows => tamis::index::IndexKind::Rows,
        }
    }
}

#[derive(Args, Debug)]
pub struct IndexArgs {
    /// A Parquet file, a directory of Parquet files or a glob, local or in an object store.
    pub path: String,
    /// Comma-separated flat columns to index.
    #[arg(
        long,
        value_name = "COLS",
        value_delimiter = ',',
        required_unless_present = "verify"
    )]
    pub columns: Vec<String>,
    /// Build nothing: check the existing sidecars (beside the data, or in --output DIR) against
    /// their files: identity, blob checksums, and the content hash of every indexed column
    /// chunk. Prints one line per file; exits with 1 if any sidecar is missing or stale.
    #[arg(long, conflicts_with_all = ["columns", "kind"])]
    pub verify: bool,
    /// What to build.
    #[arg(long, value_enum, default_value_t = IndexKind::Auto)]
    pub kind: IndexKind,
    /// Target false-positive rate of each page filter.
    #[arg(long, default_value_t = 0.01)]
    pub fpp: f64,
    /// Write the sidecars into DIR (local files only) instead of beside the data; scans then
    /// need `--index-dir DIR`.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Object-store option KEY=VALUE (repeatable), as for `query`.
    #[arg(long = "storage-option", value_name = "KEY=VALUE", value_parser = crate::parse_key_value)]
    pub storage_options: Vec<(String, String)>,
}

pub fn run(args: &IndexArgs) -> Result<(), CliError> {
    let options: tamis::io::StorageOptions = args.storage_options.iter().cloned().collect();
    if args.verify {
        return verify(args, &options);
    }
    let reports = tamis::index::index_files(
        &args.path,
        &options,
        &args.columns,
        tamis::index::IndexOptions {
            kind: args.kind.into(),
            fpp: args.fpp,
        },
        args.output.as_deref(),
    )?;
    for r in reports {
        println!(
            "{}: {} values, {} bytes ({:.2}% of the data), {:.0} ms",
            r.sidecar,
            r.values,
            r.sidecar_bytes,
            100.0 * r.sidecar_bytes as f64 / r.data_bytes.max(1) as f64,
            r.time_ms
        );
        print_columns(&r);
    }
    Ok(())
}

fn verify(args: &IndexArgs, options: &tamis::io::StorageOptions) -> Result<(), CliError> {
    let reports = tamis::index::verify_files(&args.path, options, args.output.as_deref())?;
    let mut bad = 0;
    for r in &reports {
        if r.problems.is_empty() {
            println!(
                "ok: {} ({} column chunks match)",
                r.sidecar.as_deref().unwrap_or(&r.file),
                r.chunks
            );
        } else {
            bad += 1;
            let at = r.sidecar.as_deref().unwrap_or(&r.file);
            println!("stale: {at}: {}", r.problems.join("; "));
        }
    }
    if bad > 0 {
        return Err(CliError::msg(format!(
            "{bad} of {} sidecar indexes missing or stale (rebuild with `tamis index`)",
            reports.len()
        )));
    }
    Ok(())
}

/// One line per indexed column: what was built, its size, and why.
pub fn print_columns(r: &tamis::index::IndexReport) {
    for c in &r.columns {
        let kind = match c.kind {
            tamis::index::IndexKind::Auto => "auto",
            tamis::index::IndexKind::PageBloom => "page-bloom",
            tamis::index::IndexKind::Rows => "rows",
        };
        println!("  {}: {kind}, {} bytes ({})", c.column, c.bytes, c.why);
    }
}
