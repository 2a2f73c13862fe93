//! `tamis`: query, explain, inspect and generate Parquet files from the command line.

mod cache;
mod explain;
mod gen;
mod index;
mod inspect;
mod optimize;
mod output;
mod progress;
mod query;
mod scan;
mod sql;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Page buffers are large and short-lived: mimalloc reuses them where glibc malloc unmaps and
/// re-faults them on every page.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The CLI's error: one line, printed as `error: <line>`.
#[derive(Debug)]
pub struct CliError {
    pub message: String,
    /// A closed stdout (e.g. `tamis query … | head`): not worth an error message.
    pub broken_pipe: bool,
}

impl CliError {
    pub fn msg(message: impl Into<String>) -> Self {
        CliError {
            message: message.into(),
            broken_pipe: false,
        }
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message.replace('\n', " "))
    }
}

impl From<tamis::Error> for CliError {
    fn from(e: tamis::Error) -> Self {
        CliError::msg(e.to_string())
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError {
            broken_pipe: e.kind() == std::io::ErrorKind::BrokenPipe,
            message: format!("I/O error: {e}"),
        }
    }
}

impl From<parquet::errors::ParquetError> for CliError {
    fn from(e: parquet::errors::ParquetError) -> Self {
        if let parquet::errors::ParquetError::External(inner) = &e {
            if let Some(io) = inner.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    return CliError {
                        message: e.to_string(),
                        broken_pipe: true,
                    };
                }
            }
        }
        CliError::msg(format!("parquet: {e}"))
    }
}

impl From<arrow::error::ArrowError> for CliError {
    fn from(e: arrow::error::ArrowError) -> Self {
        if let arrow::error::ArrowError::IoError(_, io) = &e {
            if io.kind() == std::io::ErrorKind::BrokenPipe {
                return CliError {
                    message: e.to_string(),
                    broken_pipe: true,
                };
            }
        }
        CliError::msg(format!("arrow: {e}"))
    }
}

pub type CliResult<T> = Result<T, CliError>;

/// Set when writing to stdout failed because its reader closed the pipe.
pub static STDOUT_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[derive(Parser, Debug)]
#[command(
    name = "tamis",
    version,
    about = "tamis: a Parquet scan engine that prunes at every level"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Scan Parquet files with a filter and a projection; write the result.
    Query(QueryArgs),
    /// Run SQL (joins, aggregates) over Parquet tables: DataFusion on tamis scans.
    Sql(SqlArgs),
    /// Run a scan, discard the rows and print the pruning funnel.
    Explain(ExplainArgs),
    /// Print a Parquet file's schema, row groups, column chunks and indexes.
    Inspect(InspectArgs),
    /// Rewrite Parquet files for pushdown: page index, sized Bloom filters, sort order, page size.
    Optimize(optimize::OptimizeArgs),
    /// Build sidecar indexes beside existing Parquet files (page-level Bloom filters).
    Index(index::IndexArgs),
    /// Generate benchmark data.
    #[command(subcommand)]
    Gen(GenCommand),
    /// The disk cache of decompressed pages: fill it, show it, empty it.
    #[command(subcommand)]
    Cache(CacheCommand),
    /// Print the kernel instruction-set paths this CPU and build support (one per line, fastest
    /// last; any can be forced with TAMIS_FORCE_ISA), then the one this process uses and why.
    Kernels {
        /// Only the supported paths, one per line (for scripts).
        #[arg(long)]
        list: bool,
    },
}

/// What to scan: shared by `query` and `explain`.
#[derive(Args, Debug, Clone)]
pub struct ScanArgs {
    /// A Parquet file, a directory of Parquet files or a glob (quote it: 'data/*.parquet'), a
    /// Delta Lake table's root (it holds _delta_log/), or an Apache Iceberg table (its
    /// metadata file, or a root holding metadata/), local or in an object store
    /// (s3://bucket/prefix/, gs://…, az://…, https://…).
    pub path: String,
    /// Read PATH as a table of this format (delta or iceberg): needed only where it holds both
    /// (Delta UniForm). (--format is the output's.)
    #[arg(long, value_name = "FORMAT")]
    pub table_format: Option<tamis::table::TableFormat>,
    /// Read this version of the table at PATH (time travel): a Delta version or an Iceberg
    /// snapshot id (default: the latest).
    #[arg(long, value_name = "VERSION", conflicts_with = "table_timestamp")]
    pub table_version: Option<u64>,
    /// Read the table at PATH as it was at this time (time travel): YYYY-MM-DD,
    /// "YYYY-MM-DD HH:MM:SS" in UTC, or RFC 3339 with an offset.
    #[arg(long, value_name = "TIME")]
    pub table_timestamp: Option<String>,
    /// Object-store option KEY=VALUE (repeatable): endpoint, region, access_key_id,
    /// secret_access_key, allow_http, …; tamis's own: latency_ms, bandwidth_mb_per_s,
    /// max_requests. The standard environment variables (AWS_*, GOOGLE_*, AZURE_*) apply too.
    #[arg(long = "storage-option", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub storage_options: Vec<(String, String)>,
    /// SQL WHERE expression, e.g. "l_quantity < 24 AND l_shipmode = 'AIR'" (it may start with
    /// '-': --where "-1 < x").
    #[arg(long = "where", value_name = "EXPR", allow_hyphen_values = true)]
    pub filter: Option<String>,
    /// Comma-separated top-level columns to output (default: all); names may start with '-'.
    #[arg(
        long,
        value_name = "COLS",
        value_delimiter = ',',
        allow_hyphen_values = true
    )]
    pub select: Option<Vec<String>>,
    /// The most memory one row group's decoding may take (decoded pages, dictionaries, codes,
    /// selection bitmaps), e.g. 512MiB or 8GiB (K, M, G, T are binary multiples, with or
    /// without "iB"/"B"). A file needing more is refused with a resource-limit error.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory_limit: Option<usize>,
    /// Directory holding the files' sidecar indexes (`tamis index --output DIR`), when they are
    /// not beside the data.
    #[arg(long, value_name = "DIR")]
    pub index_dir: Option<PathBuf>,
    /// A sidecar index that cannot be read (truncated, corrupt): fail naming it, or ignore it
    /// with a warning on stderr and read as if there were none. Rows are the same.
    #[arg(long, value_enum, default_value_t = BrokenIndexArg::Fail)]
    pub broken_index: BrokenIndexArg,
    /// Before a sidecar index answers for a column chunk, read the chunk and check it against
    /// the content hash recorded when the index was built (a changed chunk: the index is
    /// ignored as stale). Costs the read the index saves; rows are the same.
    #[arg(long)]
    pub verify_index: bool,
    /// Worker threads (default: all cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub threads: Option<u64>,
    /// Cache directory for decompressed pages (still encoded): pages found there are neither
    /// read from the source nor decompressed; pages decompressed are written there. Budget:
    /// TAMIS_DISK_CACHE_BYTES, else a quarter of the free space. Rows are the same.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Order of filter evaluation: the cost model's, from estimated and measured selectivities
    /// (auto), or the order of the WHERE text (written). Results are the same either way.
    #[arg(long, value_enum, default_value_t = FilterOrderArg::Auto)]
    pub filter_order: FilterOrderArg,
    /// How filters evaluate pages whose rows are partly alive: the cheaper of the two by measured
    /// cost (auto), always selection pushdown (selected), or always the whole page, in place or
    /// decode-then-filter (whole). Results are the same either way.
    #[arg(long, value_enum, default_value_t = EvaluationArg::Auto)]
    pub evaluation: EvaluationArg,
}

/// A size in bytes: a number with an optional binary suffix (K, M, G, T; "KiB", "KB" and "K"
/// are the same); see `tamis::budget::parse_size`.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let n = tamis::budget::parse_size(s)?;
    usize::try_from(n).map_err(|_| format!("'{s}' is out of range"))
}

/// A size as [`parse_size`] reads one, or `0` (off).
fn parse_size_or_zero(s: &str) -> Result<usize, String> {
    if s.trim() == "0" {
        Ok(0)
    } else {
        parse_size(s)
    }
}

fn parse_key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("expected KEY=VALUE, got '{s}'")),
    }
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokenIndexArg {
    Fail,
    Ignore,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterOrderArg {
    Auto,
    Written,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvaluationArg {
    Auto,
    Selected,
    Whole,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Human-readable table (collects the rows in memory: at most --limit or 10 000 rows shown).
    Table,
    /// CSV with a header line.
    Csv,
    /// Newline-delimited JSON.
    Json,
    /// Parquet file (requires --output).
    Parquet,
    /// Arrow IPC file (requires --output).
    Arrow,
}

#[derive(Args, Debug)]
pub struct QueryArgs {
    #[command(flatten)]
    pub scan: ScanArgs,
    /// Stop after N rows.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the result to FILE instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print the pruning funnel to stderr after the result.
    #[arg(long)]
    pub stats: bool,
    /// Write the scan metrics as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub stats_json: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct SqlArgs {
    /// The query, e.g. "SELECT l_returnflag, count(*) FROM lineitem GROUP BY 1" (it may start
    /// with a `--` comment).
    #[arg(allow_hyphen_values = true)]
    pub query: String,
    /// A table NAME=PATH (repeatable); PATH as for `query`: file, directory, glob or URL.
    #[arg(long, value_name = "NAME=PATH", value_parser = parse_key_value)]
    pub table: Vec<(String, String)>,
    /// A directory whose NAME.parquet files and NAME/ subdirectories become tables (repeatable;
    /// only the tables the query names are opened).
    #[arg(long, value_name = "DIR")]
    pub tables: Vec<PathBuf>,
    /// Object-store option KEY=VALUE (repeatable), for every table.
    #[arg(long = "storage-option", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    pub storage_options: Vec<(String, String)>,
    /// Worker threads and DataFusion partitions (default: all cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub threads: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write the result to FILE instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Do not push join keys into the scans (runtime filters): same rows, more read.
    #[arg(long)]
    pub no_runtime_filters: bool,
    /// Let a partition read a slice of a row group, so that a table with fewer row groups
    /// than threads is still read by every thread (each slice reads its row group's
    /// dictionaries and page index again).
    #[arg(long)]
    pub row_group_slices: bool,
    /// Keep up to SIZE of decompressed pages in memory while the query runs, so that scans of
    /// the same pages (a table scanned twice, as in TPC-H Q17) decompress each once (e.g.
    /// 2GiB; 0: off; default: a sixteenth of the machine's memory, at most 4 GiB, or
    /// TAMIS_PAGE_CACHE).
    #[arg(long, value_name = "SIZE", value_parser = parse_size_or_zero)]
    pub page_cache: Option<usize>,
    /// Cache directory for decompressed pages, shared with later runs (see `tamis query
    /// --cache-dir`).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Also run statements, not only queries: DDL (CREATE EXTERNAL TABLE, CREATE VIEW, DROP…),
    /// DML (INSERT, COPY … TO) and SET; they may read and write any local file.
    #[arg(long)]
    pub allow_statements: bool,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub scan: ScanArgs,
    /// Print the metrics as JSON (with the predicate text).
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct InspectArgs {
    /// The Parquet file.
    pub file: PathBuf,
}

#[derive(Subcommand, Debug)]
enum CacheCommand {
    /// Read files' pages into the cache directory, decompressed but still encoded (paper 000's
    /// CACHE SELECT): all columns, or those of --select; --where limits it to the pages a
    /// filter needs.
    Warm(ScanArgs),
    /// What a cache directory holds.
    Stats {
        /// The cache directory.
        dir: PathBuf,
    },
    /// Remove every entry of a cache directory.
    Clear {
        /// The cache directory.
        dir: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
enum GenCommand {
    /// TPC-H tables as Parquet files with page indexes (DIR/<table>.parquet).
    Tpch(gen::TpchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Every command but `sql` runs one scan, which reads each page once: a memory tier could
    // only cost it (copies kept, never hit), so they run without one unless the environment
    // asks for it.
    if !matches!(cli.command, Command::Sql(_))
        && std::env::var_os(tamis::cache::PAGE_CACHE_ENV).is_none()
    {
        tamis::cache::set_page_cache_bytes(0);
    }
    let result = match cli.command {
        Command::Query(args) => query::run(&args),
        Command::Sql(args) => sql::run(&args),
        Command::Explain(args) => explain::run(&args),
        Command::Inspect(args) => inspect::run(&args.file),
        Command::Optimize(args) => optimize::run(&args),
        Command::Index(args) => index::run(&args),
        Command::Gen(GenCommand::Tpch(args)) => gen::run(&args),
        Command::Cache(CacheCommand::Warm(args)) => cache::warm(&args),
        Command::Cache(CacheCommand::Stats { dir }) => cache::stats(&dir),
        Command::Cache(CacheCommand::Clear { dir }) => cache::clear(&dir),
        Command::Kernels { list } => {
            for isa in tamis::kernels::supported() {
                println!("{}", isa.name());
            }
            if !list {
                println!("in use: {}", tamis::kernels::describe());
            }
            Ok(())
        }
    };
    // Pages decompressed into a cache directory reach it before the process ends.
    tamis::cache::flush_disk_cache(std::time::Duration::from_secs(60));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.broken_pipe || STDOUT_CLOSED.load(std::sync::atomic::Ordering::Relaxed) => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("4GiB"), Ok(4 << 30));
        assert_eq!(parse_size("4 GB"), Ok(4 << 30));
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("1k"), Ok(1024));
        assert!(parse_size("0").is_err());
        assert!(parse_size("-1G").is_err());
        assert!(parse_size("1.5G").is_err());
        assert!(parse_size("12PB").is_err());
        assert!(parse_size("99999999999999999999T").is_err());
    }

    /// Values starting with '-' are values, not flags.
    #[test]
    fn hyphen_values() {
        let cli = Cli::try_parse_from([
            "tamis",
            "query",
            "f.parquet",
            "--where",
            "-1 < x",
            "--select",
            "-y,z",
        ])
        .unwrap();
        let Command::Query(q) = cli.command else {
            panic!("query")
        };
        assert_eq!(q.scan.filter.as_deref(), Some("-1 < x"));
        assert_eq!(q.scan.select, Some(vec!["-y".to_string(), "z".to_string()]));
        let cli = Cli::try_parse_from(["tamis", "explain", "f.parquet", "--where=-x > 2"]).unwrap();
        let Command::Explain(e) = cli.command else {
            panic!("explain")
        };
        assert_eq!(e.scan.filter.as_deref(), Some("-x > 2"));
    }
}
