//! SQL over datasets whose files differ: a column some files lack, a column whose type widens
//! from file to file, and hive partition keys compared with file columns. The oracle is an
//! in-memory table holding the same rows as DuckDB's `union_by_name` presents them (a missing
//! column NULL, the wider type, the partition key as a column); DataFusion evaluates every
//! query over it itself.

mod common;
use common::query;

use std::path::Path;
use std::sync::Arc;

use arrow::array::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::prelude::{SessionConfig, SessionContext};
use parquet::arrow::ArrowWriter;
use tamis_datafusion::TamisTable;

/// Writes `columns` (tamis's arrow) as one Parquet file.
fn write(path: &Path, columns: Vec<(&str, tamis_arrow::array::ArrayRef)>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let batch = tamis_arrow::array::RecordBatch::try_from_iter(columns).unwrap();
    let file = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// `t` (tamis over `dir`) and `o` (the oracle's rows) in one session.
fn context(dir: &Path, oracle: RecordBatch) -> SessionContext {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2));
    let table = TamisTable::open(dir.to_str().unwrap()).unwrap();
    ctx.register_table("t", Arc::new(table)).unwrap();
    let mem = MemTable::try_new(oracle.schema(), vec![vec![oracle]]).unwrap();
    ctx.register_table("o", Arc::new(mem)).unwrap();
    ctx
}

async fn same_rows(ctx: &SessionContext, filter: &str, want: usize) {
    let ours = query(ctx, &format!("SELECT * FROM t WHERE {filter}")).await;
    let oracle = query(ctx, &format!("SELECT * FROM o WHERE {filter}")).await;
    assert_eq!(ours, oracle, "{filter}");
    assert_eq!(ours.len(), want, "{filter}");
}

/// `a = b` where `b` is missing from some files and `a` is int32 in one file and int64 in
/// another: the table's `a` is int64, a missing side is NULL, and the filter, exact in the scan,
/// selects what DataFusion selects over the same rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn columns_compared_across_evolved_files() {
    use tamis_arrow::array::{Int32Array as I32, Int64Array as I64};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        &root.join("f1.parquet"),
        vec![
            ("id", Arc::new(I64::from(vec![1, 2, 3, 4]))),
            (
                "a",
                Arc::new(I32::from(vec![Some(1), Some(2), None, Some(7)])),
            ),
            ("b", Arc::new(I64::from(vec![1, 3, 5, 7]))),
        ],
    );
    write(
        &root.join("f2.parquet"),
        vec![
            ("id", Arc::new(I64::from(vec![5, 6, 7]))),
            ("a", Arc::new(I64::from(vec![5, 6, 3_000_000_000]))),
        ],
    );
    write(
        &root.join("f3.parquet"),
        vec![
            ("b", Arc::new(I64::from(vec![8, 0]))),
            ("id", Arc::new(I64::from(vec![8, 9]))),
        ],
    );
    use arrow::array::Int64Array;
    let oracle = RecordBatch::try_from_iter(vec![
        (
            "id",
            Arc::new(Int64Array::from((1..=9).collect::<Vec<i64>>())) as arrow::array::ArrayRef,
        ),
        (
            "a",
            Arc::new(Int64Array::from(vec![
                Some(1),
                Some(2),
                None,
                Some(7),
                Some(5),
                Some(6),
                Some(3_000_000_000),
                None,
                None,
            ])),
        ),
        (
            "b",
            Arc::new(Int64Array::from(vec![
                Some(1),
                Some(3),
                Some(5),
                Some(7),
                None,
                None,
                None,
                Some(8),
                Some(0),
            ])),
        ),
    ])
    .unwrap();
    let ctx = context(root, oracle);
    let schema = ctx.table("t").await.unwrap().schema().as_arrow().clone();
    assert_eq!(
        schema.field_with_name("a").unwrap().data_type(),
        &arrow::datatypes::DataType::Int64
    );
    same_rows(&ctx, "a = b", 2).await;
    same_rows(&ctx, "a < b", 1).await;
    same_rows(&ctx, "NOT (a <> b)", 2).await;
    same_rows(&ctx, "a = b OR b = 8", 3).await;
    same_rows(&ctx, "a > 2147483647", 1).await;
    same_rows(&ctx, "a IS NULL AND b > id", 1).await;
    same_rows(&ctx, "b < id OR a > id", 3).await;
    // Exact in the scan: DataFusion does not filter again.
    let plan = query(&ctx, "EXPLAIN SELECT id FROM t WHERE a = b")
        .await
        .join("\n");
    assert!(!plan.contains("FilterExec"), "{plan}");
}

/// File columns compared with hive partition keys (`y = year`, `r = region`): each file's key
/// value, NULL under `__HIVE_DEFAULT_PARTITION__`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn columns_compared_with_partition_keys() {
    use tamis_arrow::array::{Int64Array as I64, StringArray as Str};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    /// `year` and `region` keys, then the file's `y` and `r`.
    type File = (
        &'static str,
        &'static str,
        Vec<Option<i64>>,
        Vec<Option<&'static str>>,
    );
    let files: Vec<File> = vec![
        (
            "2023",
            "eu",
            vec![Some(2023), Some(2024), None],
            vec![Some("eu"), Some("us"), None],
        ),
        (
            "2024",
            "us",
            vec![Some(2024), Some(2023), Some(2024)],
            vec![Some("us"), Some("eu"), Some("us")],
        ),
        (
            "__HIVE_DEFAULT_PARTITION__",
            "eu",
            vec![Some(2023), None],
            vec![Some("eu"), Some("eu")],
        ),
    ];
    let (mut id, mut ids, mut ys, mut rs, mut years, mut regions) =
        (0i64, vec![], vec![], vec![], vec![], vec![]);
    for (year, region, y, r) in &files {
        let n = y.len() as i64;
        write(
            &root
                .join(format!("year={year}"))
                .join(format!("region={region}"))
                .join("f.parquet"),
            vec![
                ("id", Arc::new(I64::from_iter_values(id..id + n))),
                ("y", Arc::new(I64::from(y.clone()))),
                ("r", Arc::new(Str::from(r.clone()))),
            ],
        );
        ids.extend(id..id + n);
        id += n;
        ys.extend(y.iter().copied());
        rs.extend(r.iter().map(|s| s.map(str::to_string)));
        let key = year.parse::<i64>().ok();
        years.extend(std::iter::repeat_n(key, n as usize));
        regions.extend(std::iter::repeat_n(Some(region.to_string()), n as usize));
    }
    use arrow::array::{ArrayRef, Int64Array, StringArray};
    let oracle = RecordBatch::try_from_iter(vec![
        ("id", Arc::new(Int64Array::from(ids)) as ArrayRef),
        ("y", Arc::new(Int64Array::from(ys))),
        ("r", Arc::new(StringArray::from(rs))),
        ("year", Arc::new(Int64Array::from(years))),
        ("region", Arc::new(StringArray::from(regions))),
    ])
    .unwrap();
    let ctx = context(root, oracle);
    same_rows(&ctx, "y = year", 3).await;
    same_rows(&ctx, "y < year", 1).await;
    same_rows(&ctx, "NOT (y <> year)", 3).await;
    same_rows(&ctx, "r = region", 5).await;
    same_rows(&ctx, "y = year AND r = region", 3).await;
    same_rows(&ctx, "y <> year OR r <> region", 2).await;
    same_rows(&ctx, "year = year", 6).await;
    let plan = query(&ctx, "EXPLAIN SELECT id FROM t WHERE y = year")
        .await
        .join("\n");
    assert!(!plan.contains("FilterExec"), "{plan}");
}
