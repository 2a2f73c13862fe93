//! Helpers shared by the integration tests.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;
use tamis_datafusion::TamisExec;

/// The whole file read by the `parquet` crate's reader (no pruning, no pushdown) as an
/// in-memory table: DataFusion evaluates every predicate itself over it. (DataFusion's own
/// Parquet scan is not used as the oracle: its statistics pruning drops row groups holding NaN
/// for `f >= 'NaN'`, since Parquet min/max leave NaN out.)
#[allow(dead_code)] // not every test binary that includes this module uses it
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

/// Rows as sorted strings (NULL spelled out), to compare results whatever their batching.
#[allow(dead_code)]
pub fn rows(batches: &[RecordBatch]) -> Vec<String> {
    let opts = FormatOptions::default().with_null("NULL");
    let mut out = Vec::new();
    for b in batches {
        let fmts: Vec<ArrayFormatter> = (b.columns().iter())
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).unwrap())
            .collect();
        for r in 0..b.num_rows() {
            let row: Vec<String> = fmts.iter().map(|f| f.value(r).to_string()).collect();
            out.push(row.join("|"));
        }
    }
    out.sort();
    out
}

/// The sorted rows `sql` returns (a failure names the query).
#[allow(dead_code)]
pub async fn query(ctx: &SessionContext, sql: &str) -> Vec<String> {
    let df = ctx.sql(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows(&df.collect().await.unwrap_or_else(|e| panic!("{sql}: {e}")))
}

/// The tamis scans of `plan`.
#[allow(dead_code)]
pub fn scans(plan: &Arc<dyn ExecutionPlan>) -> Vec<&TamisExec> {
    let mut found: Vec<&TamisExec> = plan.children().into_iter().flat_map(scans).collect();
    found.extend(plan.downcast_ref::<TamisExec>());
    found
}
