//! DataFusion over tamis against DataFusion over the `parquet` crate's reader (in memory): random predicates on
//! files with NULLs, NaN, ±0.0, empty strings, dictionary and PLAIN columns must select the
//! same rows.

mod common;
use common::{oracle_table, query, rows};

use std::sync::Arc;

use datafusion::prelude::{SessionConfig, SessionContext};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tamis_arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array,
    StringArray,
};
use tamis_arrow::datatypes::{DataType, Field, Schema};
use tamis_datafusion::TamisTable;

/// The files are written (and the oracle read) with tamis's arrow and parquet crates; the
/// oracle's batches cross to DataFusion's arrow.
type FileBatch = tamis_arrow::array::RecordBatch;

const ROWS: usize = 3000;

fn data(rng: &mut StdRng) -> FileBatch {
    let null = |rng: &mut StdRng| rng.random_bool(0.1);
    let i: Int32Array = (0..ROWS)
        .map(|_| (!null(rng)).then(|| rng.random_range(-50..50)))
        .collect();
    let l: Int64Array = (0..ROWS).map(|k| Some(k as i64 * 3 - 1000)).collect();
    let floats = [
        0.0,
        -0.0,
        f64::NAN,
        1.5,
        -1.5,
        2.0,
        f64::INFINITY,
        -7.25,
        100.0,
    ];
    let f: Float64Array = (0..ROWS)
        .map(|_| (!null(rng)).then(|| floats[rng.random_range(0..floats.len())]))
        .collect();
    let words = ["", "a", "ab", "abc", "b", "ba", "x_y", "x%y", "ünï", "zz"];
    let s: StringArray = (0..ROWS)
        .map(|_| (!null(rng)).then(|| words[rng.random_range(0..words.len())]))
        .collect();
    let p: StringArray = (0..ROWS)
        .map(|k| (!null(rng)).then(|| format!("v{:04}", (k * 7919) % 5000)))
        .collect();
    let d: Date32Array = (0..ROWS)
        .map(|_| (!null(rng)).then(|| rng.random_range(8000..9000)))
        .collect();
    let m: Decimal128Array = (0..ROWS)
        .map(|_| (!null(rng)).then(|| rng.random_range(-100_000i128..100_000)))
        .collect::<Decimal128Array>()
        .with_precision_and_scale(12, 2)
        .unwrap();
    let b: BooleanArray = (0..ROWS)
        .map(|_| (!null(rng)).then(|| rng.random_bool(0.5)))
        .collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int32, true),
        Field::new("l", DataType::Int64, false),
        Field::new("f", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("p", DataType::Utf8, true),
        Field::new("d", DataType::Date32, true),
        Field::new("m", DataType::Decimal128(12, 2), true),
        Field::new("b", DataType::Boolean, true),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(i),
        Arc::new(l),
        Arc::new(f),
        Arc::new(s),
        Arc::new(p),
        Arc::new(d),
        Arc::new(m),
        Arc::new(b),
    ];
    FileBatch::try_new(schema, columns).unwrap()
}

fn write(dir: &std::path::Path, batch: &FileBatch) -> String {
    let path = dir.join("t.parquet");
    // Small row groups and pages so pruning has something to do; `s` dictionary-encoded,
    // `p` PLAIN.
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(700))
        .set_data_page_row_count_limit(100)
        .set_write_batch_size(50)
        .set_column_dictionary_enabled("p".into(), false)
        .set_column_dictionary_enabled("s".into(), true)
        .build();
    let file = std::fs::File::create(&path).unwrap();
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
    path.to_string_lossy().to_string()
}

/// A table of seeded random data written to a temporary directory (kept while the guard
/// lives), its session `partitions` wide, and the generator to draw predicates from.
async fn seeded(seed: u64, partitions: usize) -> (tempfile::TempDir, SessionContext, StdRng) {
    let mut rng = StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), &data(&mut rng));
    let ctx = context(&path, partitions).await;
    (dir, ctx, rng)
}

async fn context(path: &str, partitions: usize) -> SessionContext {
    let ctx =
        SessionContext::new_with_config(SessionConfig::new().with_target_partitions(partitions));
    ctx.register_table("t", Arc::new(TamisTable::open(path).unwrap()))
        .unwrap();
    ctx.register_table("o", oracle_table(path)).unwrap();
    ctx
}

fn literal(rng: &mut StdRng, column: &str) -> String {
    match column {
        "i" => rng.random_range(-60..60).to_string(),
        "l" => rng.random_range(-1100..9100).to_string(),
        "f" => [
            "0.0",
            "-0.0",
            "1.5",
            "-1.5",
            "2",
            "100",
            "'NaN'::DOUBLE",
            "-7.25",
            "3",
        ][rng.random_range(0..9)]
        .to_string(),
        "s" => ["''", "'a'", "'ab'", "'b'", "'x_y'", "'zz'", "'ünï'", "'c'"]
            [rng.random_range(0..8)]
        .to_string(),
        "p" => format!("'v{:04}'", rng.random_range(0..5100)),
        "d" => format!(
            "DATE '{}'",
            chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap()
                + chrono::TimeDelta::days(rng.random_range(7990..9010))
        ),
        "m" => format!(
            "{}.{:02}",
            rng.random_range(-1000..1000),
            rng.random_range(0..100)
        ),
        "b" => ["TRUE", "FALSE"][rng.random_range(0..2)].to_string(),
        _ => unreachable!(),
    }
}

fn leaf(rng: &mut StdRng) -> String {
    let columns = ["i", "l", "f", "s", "p", "d", "m", "b"];
    let c = columns[rng.random_range(0..columns.len())];
    match rng.random_range(0..10) {
        0 => format!("{c} IS {}NULL", ["", "NOT "][rng.random_range(0..2)]),
        1 => {
            let (a, b) = (literal(rng, c), literal(rng, c));
            format!(
                "{c} {}BETWEEN {a} AND {b}",
                ["", "NOT "][rng.random_range(0..2)]
            )
        }
        2 => {
            let n = rng.random_range(1..4);
            let mut items: Vec<String> = (0..n).map(|_| literal(rng, c)).collect();
            if rng.random_bool(0.2) {
                items.push("NULL".into());
            }
            format!(
                "{c} {}IN ({})",
                ["", "NOT "][rng.random_range(0..2)],
                items.join(", ")
            )
        }
        4 => {
            // Two columns (pushed when exact), or arithmetic (left to DataFusion).
            let pairs = [
                ("i", "l"),
                ("l", "m"),
                ("m", "i"),
                ("s", "p"),
                ("d", "d"),
                ("b", "b"),
                ("f", "i"),
                ("i + 1", "l"),
                ("m", "l * 2 - m"),
            ];
            let (a, b) = pairs[rng.random_range(0..pairs.len())];
            let ops = ["=", "<>", "<", "<=", ">", ">="];
            format!("{a} {} {b}", ops[rng.random_range(0..ops.len())])
        }
        3 if c == "s" || c == "p" => {
            let pats = [
                "'a%'", "'%b'", "'_'", "''", "'%'", "'x_y'", "'v1%'", "'%0_'",
            ];
            format!(
                "{c} {}LIKE {}",
                ["", "NOT "][rng.random_range(0..2)],
                pats[rng.random_range(0..pats.len())]
            )
        }
        5 if c == "s" || c == "p" => {
            // A prefix compared with literals (converted to LIKE 'v%' when every literal has
            // exactly the prefix's length and no wildcard), of several lengths and forms.
            let n: usize = rng.random_range(1..4);
            let prefix = [
                format!("substr({c}, 1, {n})"),
                format!("substring({c} from 1 for {n})"),
                format!("left({c}, {n})"),
                format!("substr({c}, 2, {n})"),
            ][rng.random_range(0..4)]
            .clone();
            // Mostly literals of the prefix's length; sometimes another length, a wildcard
            // or NULL (not converted, left to DataFusion).
            let of_length: [&[&str]; 3] = [
                &["'a'", "'b'", "'ü'", "'v'", "'x'"],
                &["'ab'", "'ba'", "'ün'", "'v1'", "'v0'"],
                &["'abc'", "'ünï'", "'v12'", "'x_y'"],
            ];
            let others = ["''", "'x%'", "'x_'", "'abcd'", "NULL"];
            let items: Vec<&str> = (0..rng.random_range(1..8))
                .map(|_| {
                    if rng.random_bool(0.15) {
                        others[rng.random_range(0..others.len())]
                    } else {
                        let pool = of_length[n - 1];
                        pool[rng.random_range(0..pool.len())]
                    }
                })
                .collect();
            match rng.random_range(0..3) {
                0 => format!("{prefix} = {}", items[0]),
                1 => format!("{} <> {prefix}", items[0]),
                _ => {
                    let not = ["", "NOT "][rng.random_range(0..2)];
                    format!("{prefix} {not}IN ({})", items.join(", "))
                }
            }
        }
        _ => {
            let ops = ["=", "<>", "<", "<=", ">", ">="];
            let op = ops[rng.random_range(0..ops.len())];
            if rng.random_bool(0.2) {
                format!("{} {op} {c}", literal(rng, c))
            } else {
                format!("{c} {op} {}", literal(rng, c))
            }
        }
    }
}

fn predicate(rng: &mut StdRng, depth: u32) -> String {
    if depth == 0 || rng.random_bool(0.4) {
        return leaf(rng);
    }
    match rng.random_range(0..3) {
        0 => format!(
            "({} AND {})",
            predicate(rng, depth - 1),
            predicate(rng, depth - 1)
        ),
        1 => format!(
            "({} OR {})",
            predicate(rng, depth - 1),
            predicate(rng, depth - 1)
        ),
        _ => format!("NOT ({})", predicate(rng, depth - 1)),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_predicates_match_datafusion_parquet_reader() {
    let (_dir, ctx, mut rng) = seeded(14, 3).await;
    for k in 0..300 {
        let p = predicate(&mut rng, 3);
        let ours = query(&ctx, &format!("SELECT * FROM t WHERE {p}")).await;
        let oracle = query(&ctx, &format!("SELECT * FROM o WHERE {p}")).await;
        assert_eq!(
            ours.len(),
            oracle.len(),
            "predicate {k}: {p}: {} rows vs {} from DataFusion's reader",
            ours.len(),
            oracle.len()
        );
        assert_eq!(ours, oracle, "predicate {k}: {p}");
    }
}

/// Prefixes compared with lists long enough to stay `IN` lists (DataFusion turns up to three
/// values into `=` tests joined by OR), negated or not, beside other conditions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefix_lists_match_datafusion_parquet_reader() {
    let (_dir, ctx, _) = seeded(22, 3).await;
    for p in [
        "substring(s from 1 for 2) IN ('ab', 'ba', 'ün', 'zz', 'x_')",
        "substr(s, 1, 2) NOT IN ('ab', 'ba', 'ün', 'zz')",
        "NOT (left(s, 1) IN ('a', 'b', 'ü', 'z'))",
        "substr(p, 1, 3) IN ('v00', 'v01', 'v12', 'v49') AND l < 4000",
        "substr(p, 1, 3) NOT IN ('v00', 'v01', 'v12', 'v49') OR s IS NULL",
        "substr(s, 1, 2) IN ('ab', 'ba', 'a', 'zz')",
        "substr(s, 1, 3) NOT IN ('ünï', 'abc', 'x_y', 'x%y')",
    ] {
        let ours = query(&ctx, &format!("SELECT * FROM t WHERE {p}")).await;
        let oracle = query(&ctx, &format!("SELECT * FROM o WHERE {p}")).await;
        assert!(!oracle.is_empty(), "{p}: no rows to compare");
        assert_eq!(ours, oracle, "{p}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregates_projections_and_limits_match() {
    let (_dir, ctx, _) = seeded(7, 4).await;
    for q in [
        "SELECT count(*) FROM {}",
        "SELECT count(*) FROM {} WHERE i > 3",
        "SELECT s, count(*), sum(m), min(d), max(l) FROM {} GROUP BY s",
        "SELECT p FROM {} WHERE p LIKE 'v1%' AND l < 5000",
        "SELECT l FROM {} ORDER BY l LIMIT 5",
        "SELECT count(*) FROM (SELECT i FROM {} LIMIT 17)",
        "SELECT count(*) FROM {} WHERE f = 0.0",
        "SELECT count(*) FROM {} WHERE f <> 0.0",
        "SELECT count(*) FROM {} WHERE f > 'NaN'::DOUBLE OR f IS NULL",
        "SELECT b, count(*) FROM {} WHERE b GROUP BY b",
        "SELECT count(*) FROM {} a JOIN {} b ON a.i = b.i WHERE a.l < 0",
    ] {
        let ours = query(&ctx, &q.replace("{}", "t")).await;
        let oracle = query(&ctx, &q.replace("{}", "o")).await;
        assert_eq!(ours, oracle, "{q}");
    }
}

/// Decimal `+ - *` in projections and aggregates, which `tamis sql`'s session computes in
/// 64-bit lanes where the values fit (`decimal.rs`), against DataFusion's own operators over
/// the `parquet` crate's reader: the same rows and the same column names, wide values
/// (past an `i64`) and nulls included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decimal_arithmetic_matches_datafusion() {
    let mut rng = StdRng::seed_from_u64(11);
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), &data(&mut rng));
    let ours = tamis_datafusion::sql::session(4, true);
    ours.register_table("t", Arc::new(TamisTable::open(&path).unwrap()))
        .unwrap();
    let oracle = SessionContext::new();
    oracle.register_table("t", oracle_table(&path)).unwrap();
    let wide = "CAST(l AS DECIMAL(38, 0)) * 10000000000000000000";
    for q in [
        "SELECT m * m, m + 1, m - 0.5, 2 * m, m * (1 - m), l FROM t".to_string(),
        format!("SELECT {wide} AS w, m * ({wide}), m - {wide}, l FROM t"),
        "SELECT s, sum(m * (1 - m)), sum(m * (1 + m) * (1 - m)) AS charge, avg(m - 1) \
         FROM t GROUP BY s"
            .to_string(),
        "SELECT sum(m * m) FROM t WHERE i > 3".to_string(),
        "SELECT m * 2, count(*) FROM t GROUP BY m * 2".to_string(),
    ] {
        let names = |ctx: &SessionContext| {
            let q = q.clone();
            let ctx = ctx.clone();
            async move {
                let df = ctx.sql(&q).await.unwrap();
                df.schema().field_names()
            }
        };
        assert_eq!(names(&ours).await, names(&oracle).await, "{q}");
        assert_eq!(query(&ours, &q).await, query(&oracle, &q).await, "{q}");
    }
    // The functions ran: the plan names them.
    let plan = query(&ours, "EXPLAIN SELECT sum(m * (1 - m)) FROM t").await;
    assert!(
        plan.iter()
            .any(|r| r.contains("decimal_mul") && r.contains("decimal_sub")),
        "{plan:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exact_filters_leave_no_filter_above_the_scan_and_metrics_show() {
    let (_dir, ctx, _) = seeded(3, 2).await;
    let plan = |sql: &'static str| {
        let ctx = ctx.clone();
        async move {
            let df = ctx.sql(sql).await.unwrap();
            let batches = df.collect().await.unwrap();
            rows(&batches).join("\n")
        }
    };
    let exact = plan("EXPLAIN SELECT l FROM t WHERE l < 100 AND s = 'a'").await;
    assert!(exact.contains("TamisExec"), "{exact}");
    assert!(!exact.contains("FilterExec"), "{exact}");
    // Two columns compared: exact on integers, decimals and strings.
    let exact = plan("EXPLAIN SELECT l FROM t WHERE i < l AND m >= i AND s <> p").await;
    assert!(!exact.contains("FilterExec"), "{exact}");
    // A prefix compared with literals of its length is a LIKE in the scan (TPC-H Q22).
    let exact =
        plan("EXPLAIN SELECT l FROM t WHERE substring(s from 1 for 2) IN ('ab', 'ba', 'ün', 'v1')")
            .await;
    assert!(!exact.contains("FilterExec"), "{exact}");
    // Floats are re-checked by DataFusion.
    let inexact = plan("EXPLAIN SELECT l FROM t WHERE f < 1").await;
    assert!(inexact.contains("FilterExec"), "{inexact}");
    let analyzed = plan("EXPLAIN ANALYZE SELECT l FROM t WHERE l < 100").await;
    assert!(analyzed.contains("row_groups_pruned="), "{analyzed}");
    assert!(analyzed.contains("bytes_read="), "{analyzed}");
}

/// A table of one row group of 60 000 rows, as a dimension table is often stored: one
/// partition by default; with `with_row_group_slices`, split into row slices so that several
/// partitions read it (`split.rs`), each row once. Filters,
/// aggregates, joins (their runtime filters probing the slices) and limits select what
/// DataFusion selects over the `parquet` crate's reader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_row_group_is_read_by_several_partitions() {
    let mut rng = StdRng::seed_from_u64(5);
    let parts: Vec<FileBatch> = (0..20).map(|_| data(&mut rng)).collect();
    let batch = tamis_arrow::compute::concat_batches(&parts[0].schema(), &parts).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one.parquet");
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(100_000))
        .set_data_page_row_count_limit(1000)
        .set_write_batch_size(100)
        .build();
    let file = std::fs::File::create(&path).unwrap();
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let path = path.to_str().unwrap();
    let ctx = context(path, 8).await;
    let whole = query(&ctx, "EXPLAIN SELECT l FROM t").await.join("\n");
    assert!(whole.contains("partitions=1,"), "{whole}");
    let sliced = TamisTable::open(path).unwrap().with_row_group_slices(true);
    ctx.deregister_table("t").unwrap();
    ctx.register_table("t", Arc::new(sliced)).unwrap();
    let plan = query(&ctx, "EXPLAIN SELECT l FROM t WHERE i > 3")
        .await
        .join("\n");
    let partitions = (plan.split("partitions=").nth(1))
        .and_then(|p| p.split(',').next())
        .and_then(|p| p.parse::<usize>().ok());
    assert!(partitions.is_some_and(|n| n >= 3), "{plan}");
    for q in [
        "SELECT count(*), sum(l), min(l), max(l) FROM {}",
        "SELECT * FROM {} WHERE i > 40 OR s = 'ünï'",
        "SELECT l FROM {} WHERE l BETWEEN 1700 AND 1750",
        "SELECT s, count(*), sum(m), avg(f) FROM {} WHERE d > 8500 GROUP BY s",
        "SELECT count(*), sum(a.l) FROM {} a JOIN {} b ON a.l = b.l WHERE b.i = 7",
        "SELECT a.p, b.s FROM {} a JOIN (SELECT l, s FROM {} WHERE l < 2000 AND i = 1) b \
         ON a.l = b.l WHERE a.b",
        "SELECT l FROM {} ORDER BY l DESC LIMIT 7",
    ] {
        let ours = query(&ctx, &q.replace("{}", "t")).await;
        let oracle = query(&ctx, &q.replace("{}", "o")).await;
        assert!(!oracle.is_empty(), "{q}: no rows to compare");
        assert_eq!(ours, oracle, "{q}");
    }
}
