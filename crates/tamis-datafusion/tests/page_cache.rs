//! The page cache under SQL: a query that scans one table twice (TPC-H Q17's two `lineitem`
//! scans, a self-join) keeps that table's pages on their first read, so the second scan finds
//! them decompressed; a query that scans each table once keeps nothing (pages are kept on
//! their second read). Rows equal DataFusion's over the `parquet` crate's reader.

mod common;
use common::{oracle_table, rows, scans};

use std::sync::Arc;

use datafusion::physical_plan::ExecutionPlan;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use tamis_arrow::array::{ArrayRef, Int64Array};
use tamis_arrow::datatypes::{DataType, Field, Schema};
use tamis_datafusion::TamisTable;

/// `fact(k, v, w)`, Snappy pages of 1 000 rows (the page cache keeps compressed chunks only).
fn write_fact(path: &std::path::Path) {
    let n = 40_000i64;
    let batch = tamis_arrow::array::RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("v", DataType::Int64, false),
            Field::new("w", DataType::Int64, false),
        ])),
        vec![
            Arc::new(Int64Array::from_iter_values(
                (0..n).map(|i| (i * 7919) % 5_000),
            )) as ArrayRef,
            Arc::new(Int64Array::from_iter_values(0..n)),
            Arc::new(Int64Array::from_iter_values((0..n).map(|i| i % 13))),
        ],
    )
    .unwrap();
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(10_000))
        .set_data_page_row_count_limit(1000)
        .set_write_batch_size(500)
        .build();
    let mut w = ArrowWriter::try_new(
        std::fs::File::create(path).unwrap(),
        batch.schema(),
        Some(props),
    )
    .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// A metric summed over the tamis scans of `plan` (after it ran).
fn metric(plan: &Arc<dyn ExecutionPlan>, name: &str) -> usize {
    scans(plan)
        .iter()
        .filter_map(|s| s.metrics()?.sum_by_name(name))
        .map(|v| v.as_usize())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_scanned_twice_in_one_query_is_decompressed_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fact.parquet");
    write_fact(&path);
    // A file changed less than a second ago is not cached (`tamis::cache`).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let path = path.to_string_lossy().to_string();
    tamis::cache::set_page_cache_bytes(64 << 20);
    let ctx = tamis_datafusion::sql::session(2, true);
    ctx.register_table("fact", Arc::new(TamisTable::open(&path).unwrap()))
        .unwrap();
    let oracle = tamis_datafusion::sql::session(2, false);
    oracle.register_table("fact", oracle_table(&path)).unwrap();

    // Scanned once: its pages are not kept on the first read, and nothing is hit.
    let once = "SELECT count(*), sum(v) FROM fact WHERE k < 100";
    let plan = ctx
        .sql(once)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    assert!(scans(&plan).iter().all(|s| s.first_reads_kept().is_empty()));
    let got = datafusion::physical_plan::collect(plan.clone(), ctx.task_ctx())
        .await
        .unwrap();
    let want = oracle.sql(once).await.unwrap().collect().await.unwrap();
    assert_eq!(rows(&got), rows(&want), "{once}");
    assert!(metric(&plan, "pages_decompressed") > 0);
    assert_eq!(metric(&plan, "pages_cache_hits"), 0);
    assert_eq!(
        tamis::cache::page_cache_stats().pages,
        0,
        "read once: none kept"
    );

    // Scanned twice in one query: both scans keep the first reads of the column both read
    // (`k`; `w` and `v` are read by one each), and the second finds its pages.
    let twice = "SELECT count(*), sum(a.w) FROM fact a JOIN fact b ON a.k = b.k WHERE b.v < 300";
    let plan = ctx
        .sql(twice)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let found = scans(&plan);
    assert_eq!(found.len(), 2, "{plan:?}");
    assert!(
        found.iter().all(|s| s.first_reads_kept() == ["k"]),
        "{plan:?}"
    );
    let shown = datafusion::physical_plan::displayable(plan.as_ref()).indent(false);
    assert!(
        shown.to_string().contains("pages kept on first read=[k]"),
        "{shown}"
    );
    let got = datafusion::physical_plan::collect(plan.clone(), ctx.task_ctx())
        .await
        .unwrap();
    let want = oracle.sql(twice).await.unwrap().collect().await.unwrap();
    assert_eq!(rows(&got), rows(&want), "{twice}");
    assert!(
        metric(&plan, "pages_cache_hits") > 0,
        "the second scan found no page the first kept"
    );
    tamis::cache::set_page_cache_bytes(0);
}
