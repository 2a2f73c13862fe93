//! `tamis gen tpch`: TPC-H tables as Parquet files with page indexes.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::mpsc::sync_channel;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::error::ArrowError;
use clap::{Args, ValueEnum};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use rayon::prelude::*;
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};
use tpchgen_arrow::{
    CustomerArrow, LineItemArrow, NationArrow, OrderArrow, PartArrow, PartSuppArrow, RegionArrow,
    SupplierArrow,
};

use crate::{progress, CliError, CliResult};

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    Lineitem,
    Orders,
    Customer,
    Part,
    Partsupp,
    Supplier,
    Nation,
    Region,
}

const ALL_TABLES: [Table; 8] = [
    Table::Lineitem,
    Table::Orders,
    Table::Customer,
    Table::Part,
    Table::Partsupp,
    Table::Supplier,
    Table::Nation,
    Table::Region,
];

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    Zstd,
    Snappy,
}

#[derive(Args, Debug)]
pub struct TpchArgs {
    /// TPC-H scale factor (1 = lineitem has ~6M rows).
    #[arg(long, value_name = "SF")]
    pub scale_factor: f64,
    /// Output directory (created if missing); writes DIR/<table>.parquet.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: PathBuf,
    /// Comma-separated tables (default: all 8).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub tables: Option<Vec<Table>>,
    /// Compression codec.
    #[arg(long, value_enum, default_value_t = Codec::Zstd)]
    pub compression: Codec,
    /// Rows per data page (upper bound).
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub page_rows: u64,
    /// Rows per row group (upper bound).
    #[arg(long, default_value_t = 1_048_576, value_parser = clap::value_parser!(u64).range(1..))]
    pub row_group_rows: u64,
}

impl Table {
    fn name(self) -> &'static str {
        match self {
            Table::Lineitem => "lineitem",
            Table::Orders => "orders",
            Table::Customer => "customer",
            Table::Part => "part",
            Table::Partsupp => "partsupp",
            Table::Supplier => "supplier",
            Table::Nation => "nation",
            Table::Region => "region",
        }
    }

    /// Rows at this scale factor (lineitem: an estimate, ~4 lines per order).
    fn estimated_rows(self, sf: f64) -> u64 {
        let rows = match self {
            Table::Lineitem => OrderGenerator::calculate_row_count(sf, 1, 1) * 4,
            Table::Orders => OrderGenerator::calculate_row_count(sf, 1, 1),
            Table::Customer => CustomerGenerator::calculate_row_count(sf, 1, 1),
            Table::Part => PartGenerator::calculate_row_count(sf, 1, 1),
            Table::Partsupp => PartSuppGenerator::calculate_row_count(sf, 1, 1),
            Table::Supplier => SupplierGenerator::calculate_row_count(sf, 1, 1),
            Table::Nation => 25,
            Table::Region => 5,
        };
        rows.max(0) as u64
    }

    fn schema(self) -> SchemaRef {
        match self {
            Table::Lineitem => LineItemArrow::schema_ref(),
            Table::Orders => OrderArrow::schema_ref(),
            Table::Customer => CustomerArrow::schema_ref(),
            Table::Part => PartArrow::schema_ref(),
            Table::Partsupp => PartSuppArrow::schema_ref(),
            Table::Supplier => SupplierArrow::schema_ref(),
            Table::Nation => NationArrow::schema_ref(),
            Table::Region => RegionArrow::schema_ref(),
        }
    }

    /// All batches of one part (1-based) of `parts`.
    fn part_batches(self, sf: f64, part: i32, parts: i32) -> Result<Vec<RecordBatch>, ArrowError> {
        const BATCH: usize = 16 * 1024;
        match self {
            Table::Lineitem => LineItemArrow::new(LineItemGenerator::new(sf, part, parts))
                .with_batch_size(BATCH)
                .collect(),
            Table::Orders => OrderArrow::new(OrderGenerator::new(sf, part, parts))
                .with_batch_size(BATCH)
                .collect(),
            Table::Customer => CustomerArrow::new(CustomerGenerator::new(sf, part, parts))
                .with_batch_size(BATCH)
                .collect(),
            Table::Part => PartArrow::new(PartGenerator::new(sf, part, parts))
                .with_batch_size(BATCH)
                .collect(),
            Table::Partsupp => PartSuppArrow::new(PartSuppGenerator::new(sf, part, parts))
                .with_batch_size(BATCH)
                .collect(),
            Table::Supplier => SupplierArrow::new(SupplierGenerator::new(sf, part, parts))
                .with_batch_size(BATCH)
                .collect(),
            Table::Nation => NationArrow::new(NationGenerator::new(sf, part, parts))
                .with_batch_size(BATCH)
                .collect(),
            Table::Region => RegionArrow::new(RegionGenerator::new(sf, part, parts))
                .with_batch_size(BATCH)
                .collect(),
        }
    }
}

/// Strings are written as plain Utf8 (not Utf8View) so every reader gets the common type.
fn plain_schema(schema: &Schema) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Utf8View => f.as_ref().clone().with_data_type(DataType::Utf8),
            _ => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

fn to_plain(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, ArrowError> {
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| {
            if c.data_type() == f.data_type() {
                Ok(Arc::clone(c))
            } else {
                arrow::compute::cast(c, f.data_type())
            }
        })
        .collect::<Result<Vec<ArrayRef>, _>>()?;
    RecordBatch::try_new(Arc::clone(schema), columns)
}

pub fn run(args: &TpchArgs) -> CliResult<()> {
    let sf = args.scale_factor;
    if !(sf.is_finite() && sf > 0.0 && sf <= 100_000.0) {
        return Err(CliError::msg(format!(
            "--scale-factor must be a positive number, got {sf}"
        )));
    }
    let mut tables = args.tables.clone().unwrap_or_else(|| ALL_TABLES.to_vec());
    tables.dedup();
    std::fs::create_dir_all(&args.output).map_err(|e| {
        CliError::msg(format!(
            "cannot create directory {}: {e}",
            args.output.display()
        ))
    })?;

    let compression = match args.compression {
        Codec::Zstd => Compression::ZSTD(ZstdLevel::try_new(1)?),
        Codec::Snappy => Compression::SNAPPY,
    };
    let page_rows = args.page_rows as usize;
    let props = WriterProperties::builder()
        .set_compression(compression)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_data_page_row_count_limit(page_rows)
        .set_write_batch_size(page_rows.min(1024))
        .set_max_row_group_row_count(Some(args.row_group_rows as usize))
        .build();

    let total: u64 = tables.iter().map(|t| t.estimated_rows(sf)).sum();
    let pb = progress::bar(total, "rows", "generating");
    let result = (|| {
        for &table in &tables {
            pb.set_message(table.name());
            let rows = write_table(table, sf, &args.output, props.clone(), &|n| pb.inc(n))?;
            pb.println(format!(
                "{}: {rows} rows",
                args.output
                    .join(format!("{}.parquet", table.name()))
                    .display()
            ));
        }
        Ok::<(), CliError>(())
    })();
    pb.finish_and_clear();
    result?;
    for &table in &tables {
        let path = args.output.join(format!("{}.parquet", table.name()));
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        eprintln!("wrote {} ({size} bytes)", path.display());
    }
    Ok(())
}

/// Generates one table in parallel parts (in order) and writes it to DIR/<table>.parquet via a
/// temporary file, so no partial file is ever left under the final name. Returns the row count.
fn write_table(
    table: Table,
    sf: f64,
    dir: &Path,
    props: WriterProperties,
    on_rows: &(dyn Fn(u64) + Sync),
) -> CliResult<u64> {
    const ROWS_PER_PART: u64 = 200_000;
    let est = table.estimated_rows(sf);
    let parts = est.div_ceil(ROWS_PER_PART).clamp(1, 100_000) as i32;
    let window = rayon::current_num_threads().max(1);
    let schema = plain_schema(&table.schema());

    let final_path = dir.join(format!("{}.parquet", table.name()));
    let tmp_path = dir.join(format!("{}.parquet.tmp", table.name()));
    let file = File::create(&tmp_path)
        .map_err(|e| CliError::msg(format!("cannot create {}: {e}", tmp_path.display())))?;

    let result = std::thread::scope(|scope| -> CliResult<u64> {
        // Producer: generates `window` parts at a time with rayon; sends them in order.
        let (tx, rx) = sync_channel::<Result<Vec<RecordBatch>, ArrowError>>(1);
        scope.spawn(move || {
            let all: Vec<i32> = (1..=parts).collect();
            for chunk in all.chunks(window) {
                let generated: Vec<_> = chunk
                    .par_iter()
                    .map(|&part| table.part_batches(sf, part, parts))
                    .collect();
                for part in generated {
                    let failed = part.is_err();
                    if tx.send(part).is_err() || failed {
                        return;
                    }
                }
            }
        });
        let mut writer =
            ArrowWriter::try_new(BufWriter::new(file), Arc::clone(&schema), Some(props))?;
        let mut rows = 0u64;
        for part in rx {
            for batch in part? {
                let batch = to_plain(&batch, &schema)?;
                writer.write(&batch)?;
                rows += batch.num_rows() as u64;
                on_rows(batch.num_rows() as u64);
            }
        }
        writer.close()?;
        Ok(rows)
    });
    match result {
        Ok(rows) => {
            std::fs::rename(&tmp_path, &final_path).map_err(|e| {
                CliError::msg(format!("cannot rename to {}: {e}", final_path.display()))
            })?;
            Ok(rows)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp_path);
            Err(e)
        }
    }
}
