//! Join order (`sql::session_ordering_joins`, not the default): a `FROM` list whose first join
//! builds on its largest table is reordered so that the small, filtered tables join first and
//! the large one is probed, and every query's rows equal DataFusion's over the `parquet`
//! crate's reader (runtime filters on and off).

mod common;
use common::{oracle_table, query};

use std::sync::Arc;

use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use tamis_arrow::array::{ArrayRef, Int64Array, RecordBatch};
use tamis_arrow::datatypes::{DataType, Field, Schema};
use tamis_datafusion::TamisTable;

const FACT_ROWS: i64 = 60_000;
const BIG_ROWS: i64 = 40_000;
const SMALL_ROWS: i64 = 1_000;

fn write(dir: &std::path::Path, name: &str, columns: Vec<(&str, Vec<Option<i64>>)>) {
    let schema = Arc::new(Schema::new(
        (columns.iter())
            .map(|(n, _)| Field::new(*n, DataType::Int64, true))
            .collect::<Vec<_>>(),
    ));
    let arrays = (columns.into_iter())
        .map(|(_, v)| Arc::new(Int64Array::from(v)) as ArrayRef)
        .collect();
    let batch = RecordBatch::try_new(schema.clone(), arrays).unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(10_000))
        .build();
    let file = std::fs::File::create(dir.join(format!("{name}.parquet"))).unwrap();
    let mut w = ArrowWriter::try_new(file, schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// `fact(f_small, f_big, v)`, a key of each other table per row (every 101st `f_big` NULL);
/// `big(b_key, b_c)`, one row per key; `small(s_key, s_tag)`, one row per key, 50 tags.
fn tables(dir: &std::path::Path) {
    let fact = 0..FACT_ROWS;
    write(
        dir,
        "fact",
        vec![
            (
                "f_small",
                fact.clone().map(|i| Some(i * 7 % SMALL_ROWS)).collect(),
            ),
            (
                "f_big",
                (fact.clone())
                    .map(|i| (i % 101 != 0).then_some(i * 13 % BIG_ROWS))
                    .collect(),
            ),
            ("v", fact.map(Some).collect()),
        ],
    );
    let big = 0..BIG_ROWS;
    write(
        dir,
        "big",
        vec![
            ("b_key", big.clone().map(Some).collect()),
            ("b_c", big.map(|k| Some(k % 10)).collect()),
        ],
    );
    let small = 0..SMALL_ROWS;
    write(
        dir,
        "small",
        vec![
            ("s_key", small.clone().map(Some).collect()),
            ("s_tag", small.map(|k| Some(k % 50)).collect()),
        ],
    );
}

const TABLES: [&str; 3] = ["fact", "big", "small"];

/// Sessions over the files: tamis ordering joins, with runtime filters on and off, the oracle
/// (plain DataFusion, its joins in `FROM` order, over the `parquet` crate's reader), and
/// tamis's default session (joins in `FROM` order).
fn sessions(dir: &std::path::Path) -> [SessionContext; 4] {
    let path = |name: &str| {
        dir.join(format!("{name}.parquet"))
            .to_string_lossy()
            .to_string()
    };
    let ordering = |runtime_filters| {
        let config = tamis_datafusion::sql::config(2, runtime_filters);
        tamis_datafusion::sql::session_ordering_joins(config)
    };
    let (on, off) = (ordering(true), ordering(false));
    let default = tamis_datafusion::sql::session(2, true);
    let oracle = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2));
    for name in TABLES {
        let table = TamisTable::open(&path(name)).unwrap();
        on.register_table(name, Arc::new(table)).unwrap();
        let table = TamisTable::open(&path(name)).unwrap();
        default.register_table(name, Arc::new(table)).unwrap();
        let table = TamisTable::open(&path(name))
            .unwrap()
            .with_runtime_filters(false);
        off.register_table(name, Arc::new(table)).unwrap();
        oracle
            .register_table(name, oracle_table(&path(name)))
            .unwrap();
    }
    [on, off, oracle, default]
}

/// Whether a scan of a table with column `column` is on the build side of a hash join.
fn built_on(plan: &Arc<dyn ExecutionPlan>, column: &str) -> bool {
    fn reads(plan: &Arc<dyn ExecutionPlan>, column: &str) -> bool {
        (plan.name() == "TamisExec" && plan.schema().field_with_name(column).is_ok())
            || plan.children().into_iter().any(|c| reads(c, column))
    }
    if let Some(join) = plan.downcast_ref::<HashJoinExec>() {
        if reads(join.left(), column) {
            return true;
        }
    }
    plan.children().into_iter().any(|c| built_on(c, column))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_are_reordered_so_the_large_table_is_probed_and_rows_stay_the_same() {
    let dir = tempfile::tempdir().unwrap();
    tables(dir.path());
    let [on, off, oracle, default] = sessions(dir.path());
    // In FROM order, `fact ⋈ big` comes first and builds on `big` (40 000 rows against
    // 60 000); joined first, the 20 `small` rows of one tag cut `fact` to 1 200 rows.
    let sql = "SELECT v, b_c, s_tag FROM fact, big, small \
               WHERE f_big = b_key AND f_small = s_key AND s_tag = 7";
    let plan = on
        .sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    assert!(
        !built_on(&plan, "b_key"),
        "big is a build side:\n{}",
        explain(&plan)
    );
    let plan = default.sql(sql).await.unwrap();
    let plan = plan.create_physical_plan().await.unwrap();
    assert!(
        built_on(&plan, "b_key"),
        "FROM order builds on big:\n{}",
        explain(&plan)
    );
    let queries = [
        sql,
        // A join filter over two tables (TPC-H Q7's nations) moves with the joins.
        "SELECT v, b_c, s_tag FROM fact, big, small \
         WHERE f_big = b_key AND f_small = s_key AND s_tag IN (7, 8) \
         AND ((s_tag = 7 AND b_c = 3) OR (s_tag = 8 AND b_c < 5))",
        // The same table twice, a projection with an alias in between, and an aggregate above.
        "SELECT s.s_tag, count(*), sum(x.v) FROM \
         (SELECT v AS v, f_big AS fb, f_small FROM fact WHERE v % 3 = 0) x \
         JOIN big ON fb = b_key JOIN small s ON f_small = s.s_key \
         JOIN small t ON s.s_tag = t.s_key WHERE t.s_tag < 5 GROUP BY s.s_tag",
        // A table joined to nothing stays a cross join.
        "SELECT count(*) FROM fact, big, small \
         WHERE f_big = b_key AND s_key < 3 AND b_c = 1",
    ];
    for sql in queries {
        let want = query(&oracle, sql).await;
        assert!(!want.is_empty(), "{sql}");
        assert_eq!(query(&off, sql).await, want, "{sql} (runtime filters off)");
        assert_eq!(query(&on, sql).await, want, "{sql} (runtime filters on)");
    }
}

fn explain(plan: &Arc<dyn ExecutionPlan>) -> String {
    datafusion::physical_plan::displayable(plan.as_ref())
        .indent(true)
        .to_string()
}
