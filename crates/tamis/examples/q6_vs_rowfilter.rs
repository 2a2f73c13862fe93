//! TPC-H Q6 filter on `lineitem`: tamis beside the `parquet` crate's `ParquetRecordBatchReader`
//! with a `RowFilter` (one predicate per column, late materialization) and the page index.
//!
//! ```text
//! cargo run --release -p tamis --example q6_vs_rowfilter -- data/tpch-sf1/lineitem.parquet [runs]
//! ```
//! Single thread for both; prints the median of `runs` (default 5) after one warm-up, warm cache.

use std::time::Instant;

use arrow::array::{BooleanArray, Date32Array, Decimal128Array, RecordBatch};
use arrow::compute::and;
use arrow::compute::kernels::cmp::{gt_eq, lt, lt_eq};
use arrow::error::ArrowError;
use parquet::arrow::arrow_reader::{
    ArrowPredicate, ArrowPredicateFn, ArrowReaderMetadata, ArrowReaderOptions,
    ParquetRecordBatchReaderBuilder, RowFilter,
};
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::PageIndexPolicy;
use tamis::io::Reader;

const WHERE: &str = "l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' \
    AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24";

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn tamis_run(path: &str) -> (usize, f64, u64, u64) {
    let start = Instant::now();
    let mut stream = tamis::Scan::open(path)
        .and_then(|s| s.filter(WHERE))
        .and_then(|s| s.select(&["l_extendedprice", "l_discount"]))
        .map(|s| s.threads(1))
        .and_then(|s| s.batches())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut rows = 0;
    for b in &mut stream {
        rows += b.unwrap_or_else(|e| panic!("{e}")).num_rows();
    }
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let m = stream.metrics();
    (rows, ms, m.bytes_read, m.values_decoded)
}

fn decimal_scalar(v: i128) -> Decimal128Array {
    Decimal128Array::new_scalar(v)
        .into_inner()
        .with_precision_and_scale(15, 2)
        .unwrap()
}

fn column_predicate(
    schema: &parquet::schema::types::SchemaDescriptor,
    root: usize,
    f: impl FnMut(RecordBatch) -> Result<BooleanArray, ArrowError> + Send + 'static,
) -> Box<dyn ArrowPredicate> {
    Box::new(ArrowPredicateFn::new(
        ProjectionMask::roots(schema, [root]),
        f,
    ))
}

fn rowfilter_run(path: &str) -> (usize, f64, u64) {
    let start = Instant::now();
    let source = Reader::open_local(std::path::Path::new(path)).unwrap();
    let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional);
    let meta = ArrowReaderMetadata::load(&source, options).unwrap();
    let arrow_schema = meta.schema().clone();
    let idx = |n: &str| arrow_schema.index_of(n).unwrap();
    let schema = meta.metadata().file_metadata().schema_descr_ptr();
    let (lo, hi) = (Date32Array::new_scalar(8766), Date32Array::new_scalar(9131)); // 1994-01-01, 1995-01-01
    let filter = RowFilter::new(vec![
        column_predicate(&schema, idx("l_shipdate"), move |b| {
            and(&gt_eq(b.column(0), &lo)?, &lt(b.column(0), &hi)?)
        }),
        column_predicate(&schema, idx("l_discount"), move |b| {
            let (lo, hi) = (decimal_scalar(5), decimal_scalar(7));
            and(
                &gt_eq(b.column(0), &arrow::array::Scalar::new(lo))?,
                &lt_eq(b.column(0), &arrow::array::Scalar::new(hi))?,
            )
        }),
        column_predicate(&schema, idx("l_quantity"), move |b| {
            lt(
                b.column(0),
                &arrow::array::Scalar::new(decimal_scalar(2400)),
            )
        }),
    ]);
    let projection = ProjectionMask::roots(&schema, [idx("l_extendedprice"), idx("l_discount")]);
    let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(source.clone(), meta)
        .with_row_filter(filter)
        .with_projection(projection)
        .build()
        .unwrap();
    let rows = reader.map(|b| b.unwrap().num_rows()).sum();
    (
        rows,
        start.elapsed().as_secs_f64() * 1e3,
        source
            .stats()
            .bytes
            .load(std::sync::atomic::Ordering::Relaxed),
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .map(String::as_str)
        .unwrap_or("data/tpch-sf1/lineitem.parquet");
    let runs: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let (t_rows, _, _, _) = tamis_run(path);
    let (r_rows, _, _) = rowfilter_run(path);
    assert_eq!(
        t_rows, r_rows,
        "tamis and the RowFilter reader disagree on the row count"
    );
    let (mut tt, mut rt) = (Vec::new(), Vec::new());
    let (mut t_bytes, mut t_values, mut r_bytes) = (0, 0, 0);
    for _ in 0..runs {
        let (_, ms, b, v) = tamis_run(path);
        tt.push(ms);
        (t_bytes, t_values) = (b, v);
        let (_, ms, b) = rowfilter_run(path);
        rt.push(ms);
        r_bytes = b;
    }
    let file_size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    println!(
        "file: {path} ({:.1} MiB), rows selected: {t_rows}, runs: {runs}, threads: 1, warm cache",
        file_size as f64 / 1048576.0
    );
    println!("| engine | median ms | bytes read | values decoded |");
    println!("|---|---:|---:|---:|");
    println!(
        "| tamis | {:.1} | {:.1} MiB | {} |",
        median(tt.clone()),
        t_bytes as f64 / 1048576.0,
        t_values
    );
    println!(
        "| parquet RowFilter + page index | {:.1} | {:.1} MiB | n/a |",
        median(rt.clone()),
        r_bytes as f64 / 1048576.0
    );
    println!("ratio tamis / RowFilter: {:.2}", median(tt) / median(rt));
}
