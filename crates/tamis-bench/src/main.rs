//! `rowfilter-scan`: the parquet crate's own late-materializing reader (RowFilter + page index)
//! as a benchmark peer for tamis — the fairest Rust baseline. See the library docs.
//!
//! ```text
//! rowfilter-scan --serve                      # JSON lines on stdin → JSON lines on stdout
//! rowfilter-scan FILE --where SQL --columns a,b --threads N --runs R
//! ```
//!
//! `--serve` request (one line): `{"file": "/x.parquet", "where": "<SQL>"|null,
//! "columns": ["a","b"]|null, "threads": 1, "dump": "/out.arrow"|null}`; response (one line,
//! flushed): `{"rows": u64, "ns": u64, "read_bytes": u64|null}` or `{"error": "…"}`. An optional
//! `"batch_size"` (default 1024, the reader's own) is accepted for experiments; `"keep": true`
//! holds every result batch until the scan ends (the harness sends it: the other engines
//! return whole tables).

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use tamis_bench::{handle_request_line, scan, write_ipc, ScanRequest, DEFAULT_BATCH_SIZE};

/// Page buffers are large and short-lived: mimalloc reuses them where glibc malloc unmaps and
/// re-faults them on every page.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
#[command(
    name = "rowfilter-scan",
    about = "Scan a Parquet file with the parquet crate's RowFilter reader and page index"
)]
struct Cli {
    /// Answer JSON requests from stdin, one per line, with one JSON line each on stdout.
    #[arg(long)]
    serve: bool,
    /// Parquet file to scan (human mode).
    #[arg(required_unless_present = "serve")]
    file: Option<PathBuf>,
    /// SQL boolean expression to filter with.
    #[arg(long = "where")]
    where_sql: Option<String>,
    /// Comma-separated output columns (default: all).
    #[arg(long, value_delimiter = ',')]
    columns: Option<Vec<String>>,
    /// Reader threads, each over a contiguous chunk of row groups.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Timed runs after one warm-up.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Rows per batch.
    #[arg(long, default_value_t = DEFAULT_BATCH_SIZE)]
    batch_size: usize,
    /// Write the warm-up run's result to this Arrow IPC file.
    #[arg(long)]
    dump: Option<PathBuf>,
}

fn serve() -> ExitCode {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let response = handle_request_line(&line);
        // A closed stdout means the harness is gone; stop quietly.
        if writeln!(stdout, "{response}")
            .and_then(|()| stdout.flush())
            .is_err()
        {
            break;
        }
    }
    ExitCode::SUCCESS
}

fn human(cli: Cli) -> Result<(), tamis_bench::BoxError> {
    let file = cli.file.ok_or("a FILE is required without --serve")?;
    let request = ScanRequest {
        file,
        where_sql: cli.where_sql,
        columns: cli.columns,
        threads: cli.threads,
        batch_size: cli.batch_size,
        keep_batches: cli.dump.is_some(),
    };
    let warm_up = scan(&request)?;
    if let (Some(path), Some(batches)) = (&cli.dump, &warm_up.batches) {
        write_ipc(path, &warm_up.schema, batches)?;
    }
    let request = ScanRequest {
        keep_batches: false,
        ..request
    };
    let mut ms = Vec::with_capacity(cli.runs);
    let mut read_bytes = None;
    for _ in 0..cli.runs {
        let out = scan(&request)?;
        ms.push(out.elapsed.as_secs_f64() * 1e3);
        read_bytes = out.read_bytes;
    }
    ms.sort_by(f64::total_cmp);
    println!("rows: {}", warm_up.rows);
    match ms.get(ms.len() / 2) {
        Some(median) => println!(
            "median ms: {median:.2} (runs: {}, min {:.2}, max {:.2}, threads: {}, batch size: {}, read_bytes last run: {})",
            ms.len(),
            ms[0],
            ms[ms.len() - 1],
            request.threads,
            request.batch_size,
            read_bytes.map_or("n/a".to_string(), |b| b.to_string()),
        ),
        None => println!(
            "warm-up ms: {:.2} (no timed runs)",
            warm_up.elapsed.as_secs_f64() * 1e3
        ),
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.serve {
        return serve();
    }
    match human(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
