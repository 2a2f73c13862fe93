//! Streaming writers for the query result: one batch at a time, never the whole result.

use std::fs::File;
use std::io::{BufWriter, Write};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};

use crate::{CliError, CliResult, Format};

pub enum BatchSink {
    Csv(arrow::csv::Writer<Box<dyn Write>>),
    Json(arrow::json::LineDelimitedWriter<Box<dyn Write>>),
    Parquet(Box<ArrowWriter<BufWriter<File>>>),
    Arrow(arrow::ipc::writer::FileWriter<BufWriter<File>>),
}

impl BatchSink {
    /// A text sink (csv, json) over stdout or a file.
    pub fn text(format: Format, out: Box<dyn Write>) -> CliResult<Self> {
        Ok(match format {
            Format::Csv => BatchSink::Csv(
                arrow::csv::WriterBuilder::new()
                    .with_header(true)
                    .build(out),
            ),
            Format::Json => BatchSink::Json(arrow::json::LineDelimitedWriter::new(out)),
            other => return Err(CliError::msg(format!("{other:?} is not a text format"))),
        })
    }

    /// A binary file sink (parquet, arrow IPC).
    pub fn file(format: Format, file: File, schema: SchemaRef) -> CliResult<Self> {
        let out = BufWriter::new(file);
        Ok(match format {
            Format::Parquet => {
                let props = WriterProperties::builder()
                    .set_compression(Compression::ZSTD(ZstdLevel::default()))
                    .set_statistics_enabled(EnabledStatistics::Page)
                    .build();
                BatchSink::Parquet(Box::new(ArrowWriter::try_new(out, schema, Some(props))?))
            }
            Format::Arrow => {
                BatchSink::Arrow(arrow::ipc::writer::FileWriter::try_new(out, &schema)?)
            }
            other => return Err(CliError::msg(format!("{other:?} is not a file format"))),
        })
    }

    pub fn write(&mut self, batch: &RecordBatch) -> CliResult<()> {
        match self {
            BatchSink::Csv(w) => w.write(batch)?,
            BatchSink::Json(w) => w.write(batch)?,
            BatchSink::Parquet(w) => w.write(batch)?,
            BatchSink::Arrow(w) => w.write(batch)?,
        }
        Ok(())
    }

    /// Writes the footer (parquet, arrow) and flushes.
    pub fn finish(self) -> CliResult<()> {
        match self {
            BatchSink::Csv(w) => w.into_inner().flush()?,
            BatchSink::Json(mut w) => {
                w.finish()?;
                w.into_inner().flush()?
            }
            BatchSink::Parquet(w) => {
                let mut out = w.into_inner()?;
                out.flush()?
            }
            BatchSink::Arrow(mut w) => {
                w.finish()?;
                w.into_inner()?.flush()?
            }
        }
        Ok(())
    }
}
