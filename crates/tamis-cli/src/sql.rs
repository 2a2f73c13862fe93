//! `tamis sql`: SQL (joins, aggregates) over Parquet tables, DataFusion on tamis scans.

use std::fs::File;
use std::io::Write;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use crate::output::BatchSink;
use crate::query::open_writer;
use crate::{CliError, CliResult, Format, SqlArgs};

pub fn run(args: &SqlArgs) -> CliResult<()> {
    if let Some(bytes) = args.page_cache {
        tamis::cache::set_page_cache_bytes(bytes as u64);
    }
    if let Some(dir) = &args.cache_dir {
        tamis::cache::set_disk_cache(Some(dir), None)?;
    }
    if matches!(args.format, Format::Parquet | Format::Arrow) && args.output.is_none() {
        return Err(CliError::msg(
            "this --format writes a binary file: give it a path with --output FILE",
        ));
    }
    let mut tables: Vec<(String, String)> = Vec::new();
    for dir in &args.tables {
        tables.extend(tamis_datafusion::sql::tables_in_dir(dir).map_err(CliError::msg)?);
    }
    for (name, path) in &args.table {
        tables.retain(|(n, _)| n != name);
        tables.push((name.clone(), path.clone()));
    }
    let options: tamis::io::StorageOptions = args.storage_options.iter().cloned().collect();
    let mut run = tamis_datafusion::sql::RunOptions {
        runtime_filters: !args.no_runtime_filters,
        allow_statements: args.allow_statements,
        row_group_slices: args.row_group_slices,
        ..Default::default()
    };
    if let Some(threads) = args.threads {
        run.threads = threads as usize;
    }
    let (schema, batches) =
        tamis_datafusion::sql::run(&args.query, &tables, &options, &run).map_err(CliError::msg)?;
    match args.format {
        Format::Table => {
            // With the schema, so that an empty result still prints its header.
            let table = arrow::util::pretty::pretty_format_batches_with_schema(schema, &batches)?;
            let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
            let mut out = open_writer(args.output.as_deref())?;
            writeln!(out, "{table}")?;
            writeln!(out, "{rows} row(s)")?;
            out.flush()?;
        }
        Format::Parquet | Format::Arrow => {
            let path = args
                .output
                .as_ref()
                .ok_or_else(|| CliError::msg("--output is required"))?;
            let file = File::create(path)
                .map_err(|e| CliError::msg(format!("cannot create {}: {e}", path.display())))?;
            let (schema, batches) = without_views(schema, batches)?;
            let mut sink = BatchSink::file(args.format, file, schema)?;
            for b in &batches {
                sink.write(b)?;
            }
            sink.finish()?;
        }
        format => {
            let mut sink = BatchSink::text(format, open_writer(args.output.as_deref())?)?;
            for b in &batches {
                sink.write(b)?;
            }
            sink.finish()?;
        }
    }
    Ok(())
}

/// Result columns of view types (DataFusion's strings and binaries) as `Utf8` / `Binary`:
/// a file written with views in its Arrow schema is unreadable for readers older than them.
fn without_views(
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
) -> CliResult<(SchemaRef, Vec<RecordBatch>)> {
    let plain = |t: &DataType| match t {
        DataType::Utf8View => DataType::Utf8,
        DataType::BinaryView => DataType::Binary,
        t => t.clone(),
    };
    let fields: Vec<Field> = (schema.fields().iter())
        .map(|f| f.as_ref().clone().with_data_type(plain(f.data_type())))
        .collect();
    let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let batches = (batches.iter())
        .map(|b| {
            let columns = (b.columns().iter())
                .map(|c| cast(c, &plain(c.data_type())))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(RecordBatch::try_new(schema.clone(), columns)?)
        })
        .collect::<CliResult<Vec<_>>>()?;
    Ok((schema, batches))
}
