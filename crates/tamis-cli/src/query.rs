//! `tamis query`: a scan's batches to the chosen output (its funnel from `explain`).

use std::fs::File;
use std::io::{BufWriter, Write};

use crate::output::BatchSink;
use crate::scan::{build_scan, drive};
use crate::{explain, CliError, CliResult, Format, QueryArgs};

/// Rows the table format shows when no --limit is given (the table is built in memory).
pub const TABLE_DEFAULT_ROWS: usize = 10_000;

pub fn run(args: &QueryArgs) -> CliResult<()> {
    if matches!(args.format, Format::Parquet | Format::Arrow) && args.output.is_none() {
        let name = if args.format == Format::Parquet {
            "parquet"
        } else {
            "arrow"
        };
        return Err(CliError::msg(format!(
            "--format {name} writes a binary file: give it a path with --output FILE"
        )));
    }
    let scan = build_scan(&args.scan, args.limit)?;
    let stream = scan.batches()?;
    let schema = stream.schema();

    let metrics = if args.format == Format::Table {
        // The table is laid out once all its rows are known, so it is built in memory:
        // at most --limit rows, or the first TABLE_DEFAULT_ROWS (the rest is counted, not kept).
        let cap = args.limit.unwrap_or(TABLE_DEFAULT_ROWS);
        let mut kept: Vec<arrow::record_batch::RecordBatch> = Vec::new();
        let mut kept_rows = 0usize;
        let mut dropped_rows = 0u64;
        let metrics = drive(stream, |batch| {
            let room = cap - kept_rows;
            if batch.num_rows() <= room {
                kept_rows += batch.num_rows();
                kept.push(batch);
            } else {
                dropped_rows += (batch.num_rows() - room) as u64;
                if room > 0 {
                    kept.push(batch.slice(0, room));
                    kept_rows += room;
                }
            }
            Ok(())
        })?;
        let mut out = open_output(args)?;
        let table = if kept.is_empty() {
            arrow::util::pretty::pretty_format_batches_with_schema(schema.clone(), &[])?.to_string()
        } else {
            arrow::util::pretty::pretty_format_batches(&kept)?.to_string()
        };
        writeln!(out, "{table}")?;
        writeln!(out, "{} row(s)", kept_rows as u64 + dropped_rows)?;
        out.flush()?;
        if dropped_rows > 0 {
            eprintln!(
                "note: the table shows the first {kept_rows} rows ({dropped_rows} more not shown); \
                 use --limit N or --format csv|json|parquet|arrow for the full result"
            );
        }
        metrics
    } else {
        let mut sink = match args.format {
            Format::Parquet | Format::Arrow => {
                let path = args
                    .output
                    .as_ref()
                    .ok_or_else(|| CliError::msg("--output is required"))?;
                let file = File::create(path)
                    .map_err(|e| CliError::msg(format!("cannot create {}: {e}", path.display())))?;
                BatchSink::file(args.format, file, schema.clone())?
            }
            format => BatchSink::text(format, open_output(args)?)?,
        };
        let metrics = drive(stream, |batch| sink.write(&batch));
        match metrics {
            Ok(m) => {
                sink.finish()?;
                m
            }
            Err(e) => {
                drop(sink);
                if let (Some(path), Format::Parquet | Format::Arrow) = (&args.output, args.format) {
                    let _ = std::fs::remove_file(path);
                }
                return Err(e);
            }
        }
    };

    if args.stats {
        eprint!(
            "{}",
            explain::funnel_text(&metrics, args.scan.filter.as_deref())
        );
    }
    if let Some(path) = &args.stats_json {
        let json = explain::metrics_json(&metrics, args.scan.filter.as_deref())?;
        std::fs::write(path, json + "\n")
            .map_err(|e| CliError::msg(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(())
}

/// stdout, or the --output file, buffered.
fn open_output(args: &QueryArgs) -> CliResult<Box<dyn Write>> {
    open_writer(args.output.as_deref())
}

/// stdout, or `output`, buffered.
pub fn open_writer(output: Option<&std::path::Path>) -> CliResult<Box<dyn Write>> {
    Ok(match output {
        Some(path) => Box::new(BufWriter::new(File::create(path).map_err(|e| {
            CliError::msg(format!("cannot create {}: {e}", path.display()))
        })?)),
        None => Box::new(BufWriter::new(PipeWatch(std::io::stdout().lock()))),
    })
}

/// Notes when stdout's reader went away (`tamis query … | head`), whatever error type the
/// writer on top of it (csv, json) turns that into: `main` then exits quietly with success.
struct PipeWatch<W>(W);

impl<W: Write> PipeWatch<W> {
    fn watch<T>(r: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(e) = &r {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                crate::STDOUT_CLOSED.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        r
    }
}

impl<W: Write> Write for PipeWatch<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        Self::watch(self.0.write(buf))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Self::watch(self.0.flush())
    }
}
