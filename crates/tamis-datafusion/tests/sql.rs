//! `sql::run`, which `tamis sql` and `tamis.sql` share: queries only unless statements are
//! allowed. DataFusion's `CREATE EXTERNAL TABLE`, `COPY … TO` and the like read and write
//! files no table names; each is refused with one line, before anything runs.

use std::path::Path;
use std::sync::Arc;

use parquet::arrow::ArrowWriter;
use tamis_arrow::array::{ArrayRef, Int64Array, RecordBatch};
use tamis_arrow::datatypes::{DataType, Field, Schema};
use tamis_datafusion::sql::{run, RunOptions};

/// `t(x)`: 0..100, written by the parquet crate.
fn write_table(dir: &Path) -> String {
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)])),
        vec![Arc::new(Int64Array::from_iter_values(0..100)) as ArrayRef],
    )
    .unwrap();
    let path = dir.join("t.parquet");
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    path.to_str().unwrap().to_string()
}

/// The rows of column 0 of a result, as i64s.
fn ints(batches: &[RecordBatch]) -> Vec<i64> {
    batches
        .iter()
        .flat_map(|b| {
            let c = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            c.values().to_vec()
        })
        .collect()
}

fn options(allow_statements: bool) -> RunOptions {
    RunOptions {
        threads: 2,
        allow_statements,
        ..Default::default()
    }
}

#[test]
fn statements_are_refused_with_one_line_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let table = write_table(dir.path());
    let tables = vec![("t".to_string(), table.clone())];
    let storage = Default::default();
    let out = dir.path().join("out.csv");
    let out_s = out.to_str().unwrap();
    let refused = [
        format!("CREATE EXTERNAL TABLE e STORED AS CSV LOCATION '{table}'"),
        "CREATE TABLE c AS SELECT * FROM t".to_string(),
        format!("COPY (SELECT x FROM t) TO '{out_s}' STORED AS CSV"),
        format!("COPY t TO '{out_s}' STORED AS JSON"),
        format!("EXPLAIN ANALYZE COPY t TO '{out_s}' STORED AS ARROW"),
        "INSERT INTO t VALUES (1)".to_string(),
        "DELETE FROM t WHERE x = 1".to_string(),
        "SET datafusion.execution.batch_size = 1".to_string(),
        "RESET datafusion.execution.batch_size".to_string(),
        "DROP TABLE t".to_string(),
        "DROP VIEW IF EXISTS v".to_string(),
        "CREATE VIEW v AS SELECT * FROM t".to_string(),
        "create view v as select * from t".to_string(),
        "PREPARE p AS SELECT x FROM t".to_string(),
    ];
    for sql in &refused {
        let e = run(sql, &tables, &storage, &options(false)).unwrap_err();
        assert!(!e.contains('\n'), "{sql}: {e}");
        assert!(e.starts_with("SQL error: "), "{sql}: {e}");
        assert!(e.contains("not supported"), "{sql}: {e}");
        assert!(e.contains("--allow-statements"), "{sql}: {e}");
        assert!(e.contains("allow_statements=True"), "{sql}: {e}");
        assert!(!out.exists(), "{sql} wrote {out_s}");
    }

    // Queries run as before, EXPLAIN included.
    let q = |sql: &str| run(sql, &tables, &storage, &options(false));
    let (_, b) = q("SELECT x FROM t WHERE x >= 98 ORDER BY x").unwrap();
    assert_eq!(ints(&b), [98, 99]);
    let (_, b) = q("WITH w AS (SELECT x FROM t WHERE x < 3) SELECT x FROM w ORDER BY x").unwrap();
    assert_eq!(ints(&b), [0, 1, 2]);
    let (_, b) = q("SELECT column1 FROM (VALUES (7), (8)) ORDER BY 1").unwrap();
    assert_eq!(ints(&b), [7, 8]);
    let (schema, b) = q("EXPLAIN SELECT count(*) FROM t").unwrap();
    assert_eq!(schema.field(0).name(), "plan_type");
    assert!(b.iter().map(|b| b.num_rows()).sum::<usize>() > 0);
    let (_, b) = q("EXPLAIN ANALYZE SELECT count(*) FROM t").unwrap();
    assert!(b.iter().map(|b| b.num_rows()).sum::<usize>() > 0);

    // Allowed: COPY writes the rows (as CSV: DataFusion's own Parquet format is not built in).
    let sql = format!("COPY (SELECT x FROM t WHERE x < 10) TO '{out_s}' STORED AS CSV");
    run(&sql, &tables, &storage, &options(true)).unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    let mut got: Vec<i64> = text.lines().skip(1).map(|l| l.parse().unwrap()).collect();
    got.sort();
    assert_eq!(text.lines().next(), Some("x"));
    assert_eq!(got, (0..10).collect::<Vec<_>>());
    // As is a session statement.
    run(
        "SET datafusion.execution.batch_size = 1",
        &tables,
        &storage,
        &options(true),
    )
    .unwrap();
}

/// Every table is located (a missing path fails the call), but only the tables a query names
/// are opened: a corrupt table the query does not read costs nothing and fails nothing; one it
/// reads fails with tamis's own line, naming the table.
#[test]
fn only_the_tables_a_query_names_are_opened() {
    let dir = tempfile::tempdir().unwrap();
    let good = write_table(dir.path());
    let bad = dir.path().join("bad.parquet");
    std::fs::write(&bad, b"PAR1 not a footer PAR1").unwrap();
    let bad = bad.to_str().unwrap().to_string();
    let tables = vec![
        ("t".to_string(), good.clone()),
        ("u".to_string(), good.clone()),
        ("bad".to_string(), bad.clone()),
    ];
    let storage = Default::default();
    let q = |sql: &str| run(sql, &tables, &storage, &options(false));
    let (_, b) = q("SELECT x FROM t WHERE x < 2 ORDER BY x").unwrap();
    assert_eq!(ints(&b), [0, 1]);
    // Two tables, opened together; a CTE named like the corrupt table does not open it.
    let (_, b) = q("WITH bad AS (SELECT x FROM u WHERE x > 97) \
                    SELECT t.x FROM t JOIN bad ON t.x = bad.x ORDER BY 1")
    .unwrap();
    assert_eq!(ints(&b), [98, 99]);
    for sql in [
        "SELECT * FROM bad",
        "SELECT t.x FROM t JOIN bad ON t.x = bad.x",
    ] {
        let e = q(sql).unwrap_err();
        assert!(e.starts_with("table 'bad': "), "{sql}: {e}");
        assert!(e.contains("bad.parquet") && !e.contains('\n'), "{sql}: {e}");
    }

    // Names as DataFusion folds them: `T` is `t` unquoted, and given twice.
    let upper = vec![("Big".to_string(), good.clone())];
    let (_, b) = run(
        "SELECT count(*) FROM big",
        &upper,
        &storage,
        &options(false),
    )
    .unwrap();
    assert_eq!(ints(&b), [100]);
    let (_, b) = run(
        "SELECT count(*) FROM Big",
        &upper,
        &storage,
        &options(false),
    )
    .unwrap();
    assert_eq!(ints(&b), [100]);
    let twice = vec![
        ("t".to_string(), good.clone()),
        ("T".to_string(), good.clone()),
    ];
    let e = run("SELECT 1", &twice, &storage, &options(false)).unwrap_err();
    assert!(e.contains("given twice"), "{e}");

    let missing = vec![
        ("t".to_string(), good.clone()),
        (
            "gone".to_string(),
            dir.path()
                .join("gone.parquet")
                .to_str()
                .unwrap()
                .to_string(),
        ),
    ];
    let e = run("SELECT 1", &missing, &storage, &options(false)).unwrap_err();
    assert!(
        e.starts_with("table 'gone': ") && e.contains("gone.parquet"),
        "{e}"
    );

    // Statements see every table, opened or not: a view over one, a dropped one.
    let sql = "CREATE VIEW v AS SELECT x FROM u WHERE x = 5";
    run(sql, &tables, &storage, &options(true)).unwrap();
    run("DROP TABLE u", &tables, &storage, &options(true)).unwrap();
    let e = run("DROP TABLE nope", &tables, &storage, &options(true)).unwrap_err();
    assert!(e.contains("nope"), "{e}");
}
