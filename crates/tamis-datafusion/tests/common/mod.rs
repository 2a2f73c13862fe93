//! Helpers shared by the integration tests.

use std::sync::Arc;

use arrow::array::RecordBatch;

/// The whole file read by the `parquet` crate's reader (no pruning, no pushdown) as an
/// in-memory table: DataFusion evaluates every predicate itself over it. (DataFusion's own
/// Parquet scan is not used as the oracle: its statistics pruning drops row groups holding NaN
/// for `f >= 'NaN'`, since Parquet min/max leave NaN out.)
pub fn oracle_table(path: &str) -> Arc<datafusion::datasource::MemTable> {
    let file = std::fs::File::open(path).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let schema = tamis_arrow::array::RecordBatchReader::schema(&reader);
    let schema = tamis_datafusion::cross::schema_to_datafusion(&schema).unwrap();
    let batches: Vec<RecordBatch> = reader
        .map(|b| tamis_datafusion::cross::batch_to_datafusion(&b.unwrap(), &schema).unwrap())
        .collect();
    Arc::new(datafusion::datasource::MemTable::try_new(schema, vec![batches]).unwrap())
}
