//! Aggregates grouped by code ([`FewGroupsExec`]) against DataFusion's own hash aggregate over
//! the `parquet` crate's reader: the same groups and values for every key type coded, with
//! NULL keys and values, and when a stream hands over to the hash aggregate (too many groups,
//! a string too long to code) at its first batch or in the middle.

mod common;
use common::{oracle_table, query};

use std::sync::Arc;

use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tamis_arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array,
    StringArray,
};
use tamis_arrow::datatypes::{DataType, Field, Schema};
use tamis_datafusion::few_groups::{FewGroupsExec, MAX_GROUPS};
use tamis_datafusion::TamisTable;

const ROWS: usize = 12_000;

/// Few-valued keys of each coded type (`s` one-letter and empty strings, `w` with a string
/// longer than 12 bytes late in the file), a key with few values until row 9 000 and a new
/// one every row after (`g`), a unique key (`u`), and values with NULLs (`x` in quarters,
/// so its sums are exact in any order).
fn write(dir: &std::path::Path, seed: u64) -> String {
    let mut rng = StdRng::seed_from_u64(seed);
    let null = |rng: &mut StdRng| rng.random_bool(0.1);
    let s: StringArray = (0..ROWS)
        .map(|_| (!null(&mut rng)).then(|| ["", "A", "N", "R", "ab"][rng.random_range(0..5)]))
        .collect();
    let w: StringArray = (0..ROWS)
        .map(|r| {
            let long = r > 10_000 && rng.random_bool(0.01);
            Some(if long {
                "a string of 25 characters"
            } else {
                "twelve bytes"
            })
        })
        .collect();
    let k: Int32Array = (0..ROWS)
        .map(|_| (!null(&mut rng)).then(|| rng.random_range(-2..3)))
        .collect();
    let g: Int64Array = (0..ROWS)
        .map(|r| Some(if r < 9_000 { (r % 7) as i64 } else { r as i64 }))
        .collect();
    let u: Int64Array = (0..ROWS).map(|r| Some(r as i64 * 31 % 12_007)).collect();
    let d: Date32Array = (0..ROWS)
        .map(|_| (!null(&mut rng)).then(|| 9000 + rng.random_range(0..4)))
        .collect();
    let b: BooleanArray = (0..ROWS)
        .map(|_| (!null(&mut rng)).then(|| rng.random_bool(0.5)))
        .collect();
    let m: Decimal128Array = (0..ROWS)
        .map(|_| (!null(&mut rng)).then(|| rng.random_range(-1_000_000i128..1_000_000)))
        .collect::<Decimal128Array>()
        .with_precision_and_scale(15, 2)
        .unwrap();
    let x: Float64Array = (0..ROWS)
        .map(|_| (!null(&mut rng)).then(|| rng.random_range(-4_000_000..4_000_000) as f64 / 4.0))
        .collect();
    let q: Int64Array = (0..ROWS)
        .map(|_| (!null(&mut rng)).then(|| rng.random_range(1..51)))
        .collect();
    let fields = [
        ("s", DataType::Utf8),
        ("w", DataType::Utf8),
        ("k", DataType::Int32),
        ("g", DataType::Int64),
        ("u", DataType::Int64),
        ("d", DataType::Date32),
        ("b", DataType::Boolean),
        ("m", DataType::Decimal128(15, 2)),
        ("x", DataType::Float64),
        ("q", DataType::Int64),
    ];
    let schema = Arc::new(Schema::new(
        (fields.iter())
            .map(|(n, t)| Field::new(*n, t.clone(), true))
            .collect::<Vec<_>>(),
    ));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(s),
        Arc::new(w),
        Arc::new(k),
        Arc::new(g),
        Arc::new(u),
        Arc::new(d),
        Arc::new(b),
        Arc::new(m),
        Arc::new(x),
        Arc::new(q),
    ];
    let batch = tamis_arrow::array::RecordBatch::try_new(schema, columns).unwrap();
    let path = dir.join("t.parquet");
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(1500))
        .set_data_page_row_count_limit(500)
        .set_write_batch_size(100)
        .build();
    let file = std::fs::File::create(&path).unwrap();
    let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    path.to_string_lossy().to_string()
}

fn count_few_groups(plan: &Arc<dyn ExecutionPlan>) -> usize {
    let own = usize::from(plan.downcast_ref::<FewGroupsExec>().is_some());
    own + plan
        .children()
        .into_iter()
        .map(count_few_groups)
        .sum::<usize>()
}

/// A session `partitions` wide with tamis's rules, `t` the file at `path`, and the physical
/// plan of `sql` in it.
async fn planned(
    path: &str,
    partitions: usize,
    sql: &str,
) -> (SessionContext, Arc<dyn ExecutionPlan>) {
    let ctx = tamis_datafusion::sql::session(partitions, true);
    ctx.register_table("t", Arc::new(TamisTable::open(path).unwrap()))
        .unwrap();
    let plan = ctx.sql(sql).await.unwrap().create_physical_plan().await;
    (ctx, plan.unwrap())
}

/// The rows of `sql` over tamis (with tamis's rules) equal DataFusion's over the oracle, and
/// whether the plan grouped by code.
async fn check(path: &str, partitions: usize, sql: &str) -> bool {
    let (ctx, plan) = planned(path, partitions, sql).await;
    let oracle = SessionContext::new_with_config(
        datafusion::prelude::SessionConfig::new().with_target_partitions(partitions),
    );
    oracle.register_table("t", oracle_table(path)).unwrap();
    let got = query(&ctx, sql).await;
    let want = query(&oracle, sql).await;
    assert_eq!(got, want, "{sql} at {partitions} partitions");
    assert!(!got.is_empty(), "{sql}: no rows, nothing compared");
    count_few_groups(&plan) > 0
}

/// The rows each `FewGroupsExec` of `sql`'s plan handed over, once the plan has run.
async fn handed_over(path: &str, partitions: usize, sql: &str) -> Vec<usize> {
    let (ctx, plan) = planned(path, partitions, sql).await;
    datafusion::physical_plan::collect(Arc::clone(&plan), ctx.task_ctx())
        .await
        .unwrap();
    fn walk(plan: &Arc<dyn ExecutionPlan>, out: &mut Vec<usize>) {
        if plan.downcast_ref::<FewGroupsExec>().is_some() {
            let metrics = plan.metrics().unwrap();
            out.push(metrics.sum_by_name("rows_handed_over").unwrap().as_usize());
        }
        plan.children().into_iter().for_each(|c| walk(c, out));
    }
    let mut out = Vec::new();
    walk(&plan, &mut out);
    out
}

const AGGREGATES: &str = "count(*), count(q), sum(q), avg(q), min(q), max(q), sum(m), avg(m), \
                          min(m), max(m), sum(x), avg(x), sum(m * (1 - m)), count(m)";

#[tokio::test]
async fn grouped_by_code_as_datafusion_groups_every_key_type() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), 42);
    for partitions in [1, 2] {
        for keys in [
            "s",
            "k",
            "d",
            "b",
            "m",
            "s, k",
            "s, d, b",
            "k, b, s, d",
            "s, w",
        ] {
            let sql = format!("SELECT {keys}, {AGGREGATES} FROM t GROUP BY {keys}");
            assert!(check(&path, partitions, &sql).await, "{sql}: not coded");
        }
        // A filter below the aggregate, and a HAVING above it.
        let sql = format!(
            "SELECT s, k, {AGGREGATES} FROM t WHERE d > DATE '1994-08-23' GROUP BY s, k \
             HAVING count(*) > 1"
        );
        assert!(check(&path, partitions, &sql).await, "{sql}: not coded");
    }
}

#[tokio::test]
async fn streams_with_many_groups_or_long_strings_hand_over_to_the_hash_aggregate() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), 7);
    const {
        assert!(
            ROWS - 9_000 > MAX_GROUPS,
            "`g` must overflow after its first rows"
        )
    };
    for partitions in [1, 2] {
        // Unique from the first batch; few, then unique; few strings, then a long one.
        for keys in ["u", "g", "w", "s, g", "w, k"] {
            let sql = format!("SELECT {keys}, {AGGREGATES} FROM t GROUP BY {keys}");
            assert!(check(&path, partitions, &sql).await, "{sql}: not coded");
        }
    }
    // The streams did hand over: `g` after its first 9 000 rows, `s` never.
    for partitions in [1, 2] {
        let g = handed_over(&path, partitions, "SELECT g, count(*) FROM t GROUP BY g").await;
        assert!(g.iter().sum::<usize>() >= ROWS - 9_000, "{g:?}");
        assert!(g.iter().sum::<usize>() < ROWS, "{g:?}");
        let s = handed_over(&path, partitions, "SELECT s, count(*) FROM t GROUP BY s").await;
        assert_eq!(s, vec![0], "{s:?}");
    }
}

#[tokio::test]
async fn aggregates_it_does_not_cover_stay_datafusion_s() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), 3);
    // DataFusion plans a DISTINCT as a grouping by (s, q) first, which is coded.
    check(&path, 2, "SELECT s, count(DISTINCT q) FROM t GROUP BY s").await;
    for sql in [
        "SELECT s, sum(q) FILTER (WHERE q > 10) FROM t GROUP BY s",
        "SELECT x, count(*) FROM t GROUP BY x",
        "SELECT count(*), sum(m) FROM t",
        "SELECT s, array_agg(q ORDER BY q) FROM t WHERE q < 3 GROUP BY s",
    ] {
        assert!(!check(&path, 2, sql).await, "{sql}: coded");
    }
}

/// A memory pool that refuses `FewGroupsExec` more than `limit` bytes and grants every
/// other consumer what it asks.
#[derive(Debug)]
struct TightForFewGroups {
    limit: usize,
    used: std::sync::atomic::AtomicUsize,
}

impl std::fmt::Display for TightForFewGroups {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "tight-for-few-groups({})", self.limit)
    }
}

impl datafusion::execution::memory_pool::MemoryPool for TightForFewGroups {
    fn name(&self) -> &str {
        "tight-for-few-groups"
    }

    fn grow(&self, _: &datafusion::execution::memory_pool::MemoryReservation, additional: usize) {
        self.used
            .fetch_add(additional, std::sync::atomic::Ordering::Relaxed);
    }

    fn shrink(&self, _: &datafusion::execution::memory_pool::MemoryReservation, shrink: usize) {
        self.used
            .fetch_sub(shrink, std::sync::atomic::Ordering::Relaxed);
    }

    fn try_grow(
        &self,
        reservation: &datafusion::execution::memory_pool::MemoryReservation,
        additional: usize,
    ) -> datafusion::common::Result<()> {
        let few = reservation.consumer().name().starts_with("FewGroupsExec");
        if few && reservation.size() + additional > self.limit {
            return datafusion::common::resources_err!("few groups past {}", self.limit);
        }
        self.grow(reservation, additional);
        Ok(())
    }

    fn reserved(&self) -> usize {
        self.used.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// An accumulator that keeps every value (`median`) and a pool that refuses its groups the
/// memory: the stream hands over to DataFusion's stage, and the rows are still DataFusion's.
/// With the memory, it does not.
#[tokio::test]
async fn a_stream_refused_memory_hands_over() {
    use datafusion::execution::runtime_env::RuntimeEnvBuilder;
    use datafusion::execution::SessionStateBuilder;
    use tamis_datafusion::few_groups::GroupFewKeysByCode;
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), 11);
    let sql = "SELECT s, median(q), count(*) FROM t GROUP BY s";
    for partitions in [1, 2] {
        for (limit, hands_over) in [(64 << 20, false), (16 << 10, true)] {
            let pool = TightForFewGroups {
                limit,
                used: Default::default(),
            };
            let runtime = RuntimeEnvBuilder::new()
                .with_memory_pool(Arc::new(pool))
                .build_arc()
                .unwrap();
            let config =
                datafusion::prelude::SessionConfig::new().with_target_partitions(partitions);
            let state = SessionStateBuilder::new()
                .with_config(config.clone())
                .with_runtime_env(runtime)
                .with_default_features()
                .with_physical_optimizer_rule(Arc::new(GroupFewKeysByCode))
                .build();
            let ctx = SessionContext::new_with_state(state);
            ctx.register_table("t", Arc::new(TamisTable::open(&path).unwrap()))
                .unwrap();
            let oracle = SessionContext::new_with_config(config);
            oracle.register_table("t", oracle_table(&path)).unwrap();
            assert_eq!(query(&ctx, sql).await, query(&oracle, sql).await);
            let plan = ctx.sql(sql).await.unwrap().create_physical_plan().await;
            let plan = plan.unwrap();
            datafusion::physical_plan::collect(Arc::clone(&plan), ctx.task_ctx())
                .await
                .unwrap();
            fn handed(plan: &Arc<dyn ExecutionPlan>) -> usize {
                let own = (plan.downcast_ref::<FewGroupsExec>())
                    .and_then(|_| plan.metrics().unwrap().sum_by_name("rows_handed_over"))
                    .map_or(0, |m| m.as_usize());
                own + plan.children().into_iter().map(handed).sum::<usize>()
            }
            let few = count_few_groups(&plan);
            assert_eq!(few, 1, "{partitions} partitions: no FewGroupsExec");
            assert_eq!(handed(&plan) > 0, hands_over, "limit {limit}");
        }
    }
}
