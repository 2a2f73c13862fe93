//! The scan the command line describes, and driving it with a progress bar: shared by
//! `tamis query` and `tamis explain`.

use arrow::record_batch::RecordBatch;

use crate::{
    progress, BrokenIndexArg, CliError, CliResult, EvaluationArg, FilterOrderArg, ScanArgs,
};

/// Builds the scan described by the command line.
pub fn build_scan(args: &ScanArgs, limit: Option<usize>) -> CliResult<tamis::Scan> {
    let options: tamis::io::StorageOptions = args.storage_options.iter().cloned().collect();
    if let Some(dir) = &args.cache_dir {
        tamis::cache::set_disk_cache(Some(dir), None)?;
    }
    let at = tamis::table::AsOf::given(args.table_version, args.table_timestamp.as_deref())?;
    let mut scan = tamis::Scan::open_as_of(&args.path, args.table_format, at, &options)?;
    if let Some(filter) = &args.filter {
        scan = scan.filter(filter)?;
    }
    if let Some(columns) = &args.select {
        let columns: Vec<&str> = columns
            .iter()
            .map(|c| c.trim())
            .filter(|c| !c.is_empty())
            .collect();
        if columns.is_empty() {
            return Err(CliError::msg("--select needs at least one column name"));
        }
        scan = scan.select(&columns)?;
    }
    if let Some(limit) = args.memory_limit {
        scan = scan.memory_limit(limit);
    }
    if let Some(dir) = &args.index_dir {
        scan = scan.index_dir(dir);
    }
    scan = scan.broken_index(match args.broken_index {
        BrokenIndexArg::Fail => tamis::BrokenIndex::Fail,
        BrokenIndexArg::Ignore => tamis::BrokenIndex::Ignore,
    });
    scan = scan.verify_index(args.verify_index);
    if let Some(threads) = args.threads {
        scan = scan.threads(threads as usize);
    }
    scan = scan.filter_order(match args.filter_order {
        FilterOrderArg::Auto => tamis::FilterOrder::Auto,
        FilterOrderArg::Written => tamis::FilterOrder::AsWritten,
    });
    scan = scan.evaluation(match args.evaluation {
        EvaluationArg::Auto => tamis::Evaluation::Auto,
        EvaluationArg::Selected => tamis::Evaluation::Selected,
        EvaluationArg::Whole => tamis::Evaluation::Whole,
    });
    Ok(scan.limit(limit).batch_size(8192))
}

/// Drives a scan stream to its end, feeding every batch to `on_batch`, with a progress bar.
/// Returns the final metrics.
pub fn drive(
    mut stream: tamis::ScanStream,
    mut on_batch: impl FnMut(RecordBatch) -> CliResult<()>,
) -> CliResult<tamis::ScanMetrics> {
    let (_, total) = stream.progress();
    let pb = progress::bar(total as u64, "row groups", "scanning");
    let result = (|| {
        while let Some(batch) = stream.next() {
            let batch = batch?;
            let (done, total) = stream.progress();
            pb.set_length(total as u64);
            pb.set_position(done as u64);
            on_batch(batch)?;
        }
        Ok::<(), CliError>(())
    })();
    pb.finish_and_clear();
    result?;
    let metrics = stream.metrics();
    for w in &metrics.warnings {
        eprintln!("warning: {w}");
    }
    Ok(metrics)
}
