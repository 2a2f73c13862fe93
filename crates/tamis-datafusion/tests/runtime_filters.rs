//! Runtime join filters: a hash join's build-side keys pushed into the tamis scan of the other
//! side. The rows must equal those of DataFusion over the `parquet` crate's reader with the filters
//! on and off; with them on, the scan must select fewer rows, short key lists must stay exact
//! lists, long ones must become one Bloom filter shared by every scan of the table on that key.

mod common;
use common::{oracle_table, scans};

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use tamis_arrow::array::{ArrayRef, Int64Array, StringArray};
use tamis_arrow::datatypes::{DataType, Field, Schema};
use tamis_datafusion::TamisTable;

/// The files are written (and the oracle read) with tamis's arrow and parquet crates; the
/// oracle's batches cross to DataFusion's arrow.
type FileBatch = tamis_arrow::array::RecordBatch;

const FACT_ROWS: i64 = 60_000;
const KEYS: i64 = 20_000;

fn write(path: &std::path::Path, batch: &FileBatch, dictionary: bool) {
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(10_000))
        .set_data_page_row_count_limit(1000)
        .set_write_batch_size(500)
        .set_dictionary_enabled(dictionary)
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

/// `fact(k, ks, v)`: every key three times, spread over all row groups; `dim(k, ks, a)`: one
/// row per key, `a` = key mod 1000. `fact` is written with dictionaries, `fact_plain`
/// without.
fn tables(dir: &std::path::Path) {
    let k: Vec<i64> = (0..FACT_ROWS).map(|i| (i * 7919) % KEYS).collect();
    let fact = FileBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("ks", DataType::Utf8, true),
            Field::new("v", DataType::Int64, false),
        ])),
        vec![
            Arc::new(Int64Array::from_iter(
                k.iter()
                    .enumerate()
                    .map(|(i, &k)| (i % 97 != 0).then_some(k)),
            )) as ArrayRef,
            Arc::new(StringArray::from_iter(
                k.iter().map(|k| Some(format!("key-{k:05}"))),
            )),
            Arc::new(Int64Array::from_iter_values(0..FACT_ROWS)),
        ],
    )
    .unwrap();
    write(&dir.join("fact.parquet"), &fact, true);
    write(&dir.join("fact_plain.parquet"), &fact, false);
    let dim = FileBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("ks", DataType::Utf8, false),
            Field::new("a", DataType::Int64, false),
        ])),
        vec![
            Arc::new(Int64Array::from_iter_values(0..KEYS)) as ArrayRef,
            Arc::new(StringArray::from_iter_values(
                (0..KEYS).map(|k| format!("key-{k:05}")),
            )),
            Arc::new(Int64Array::from_iter_values(
                (0..KEYS).map(|k| (k * 31) % 1000),
            )),
        ],
    )
    .unwrap();
    write(&dir.join("dim.parquet"), &dim, true);
}

struct Contexts {
    on: SessionContext,
    off: SessionContext,
    oracle: SessionContext,
    fact_on: Arc<TamisTable>,
}

async fn contexts(dir: &std::path::Path, fact: &str) -> Contexts {
    let path = |name: &str| {
        dir.join(format!("{name}.parquet"))
            .to_string_lossy()
            .to_string()
    };
    let on = tamis_datafusion::sql::session(2, true);
    let off = tamis_datafusion::sql::session(2, false);
    let fact_on = Arc::new(TamisTable::open(&path(fact)).unwrap());
    on.register_table("fact", fact_on.clone()).unwrap();
    on.register_table("dim", Arc::new(TamisTable::open(&path("dim")).unwrap()))
        .unwrap();
    off.register_table(
        "fact",
        Arc::new(
            TamisTable::open(&path(fact))
                .unwrap()
                .with_runtime_filters(false),
        ),
    )
    .unwrap();
    off.register_table(
        "dim",
        Arc::new(
            TamisTable::open(&path("dim"))
                .unwrap()
                .with_runtime_filters(false),
        ),
    )
    .unwrap();
    let oracle = tamis_datafusion::sql::session(2, false);
    for name in ["fact", "dim"] {
        let file = if name == "fact" { fact } else { name };
        oracle
            .register_table(name, oracle_table(&path(file)))
            .unwrap();
    }
    Contexts {
        on,
        off,
        oracle,
        fact_on,
    }
}

fn rows(batches: &[RecordBatch]) -> Vec<String> {
    let opts = FormatOptions::default().with_null("NULL");
    let mut out = Vec::new();
    for b in batches {
        let fmts: Vec<ArrayFormatter> = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).unwrap())
            .collect();
        for r in 0..b.num_rows() {
            out.push(
                fmts.iter()
                    .map(|f| f.value(r).to_string())
                    .collect::<Vec<_>>()
                    .join("|"),
            );
        }
    }
    out.sort();
    out
}

/// `sql`'s rows with runtime filters off and on equal the oracle's.
async fn same_rows(oracle: &SessionContext, off: &SessionContext, on: &SessionContext, sql: &str) {
    let want = query(oracle, sql).await;
    assert_eq!(query(off, sql).await, want, "{sql} (runtime filters off)");
    assert_eq!(query(on, sql).await, want, "{sql} (runtime filters on)");
}

async fn query(ctx: &SessionContext, sql: &str) -> Vec<String> {
    let df = ctx.sql(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows(&df.collect().await.unwrap_or_else(|e| panic!("{sql}: {e}")))
}

/// The physical plan of `sql`.
async fn plan_of(ctx: &SessionContext, sql: &str) -> Arc<dyn ExecutionPlan> {
    let df = ctx.sql(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    df.create_physical_plan().await.unwrap()
}

/// Runs `sql` and sums metric `name` over the TamisExec nodes that read column `v` (the scans
/// of `fact`).
async fn fact_metric(ctx: &SessionContext, sql: &str, name: &str) -> usize {
    let plan = plan_of(ctx, sql).await;
    datafusion::physical_plan::collect(plan.clone(), ctx.task_ctx())
        .await
        .unwrap();
    fn visit(p: &Arc<dyn ExecutionPlan>, name: &str, total: &mut usize) {
        if p.name() == "TamisExec" && p.schema().field_with_name("v").is_ok() {
            let m = p.metrics().unwrap();
            *total += m.sum_by_name(name).map(|v| v.as_usize()).unwrap_or(0);
        }
        for c in p.children() {
            visit(c, name, total);
        }
    }
    let mut total = 0;
    visit(&plan, name, &mut total);
    total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_results_are_the_same_with_runtime_filters_on_and_off() {
    let dir = tempfile::tempdir().unwrap();
    tables(dir.path());
    for fact in ["fact", "fact_plain"] {
        let c = contexts(dir.path(), fact).await;
        // Build sides of 0, 20 (exact list), 400 and 4 000 keys (Bloom filters), integer and
        // string keys, an outer join (no filter may be pushed into its preserved side) and a
        // key with NULLs on the probe side.
        for q in [
            "SELECT f.v, f.k FROM fact f JOIN dim d ON f.k = d.k WHERE d.a = 1000",
            "SELECT f.v, f.k FROM fact f JOIN dim d ON f.k = d.k WHERE d.a = 7",
            "SELECT f.v, d.a FROM fact f JOIN dim d ON f.k = d.k WHERE d.a < 20",
            "SELECT f.v FROM fact f JOIN dim d ON f.ks = d.ks WHERE d.a < 20",
            "SELECT count(*), sum(f.v) FROM fact f JOIN dim d ON f.k = d.k WHERE d.a < 200",
            "SELECT f.v, d.a FROM fact f LEFT JOIN dim d ON f.k = d.k AND d.a < 20 WHERE f.v < 300",
            "SELECT count(*) FROM fact f WHERE f.k IN (SELECT k FROM dim WHERE a BETWEEN 10 AND 30)",
            "SELECT count(*) FROM fact f WHERE f.k NOT IN (SELECT k FROM dim WHERE a < 900)",
        ] {
            let on = query(&c.on, q).await;
            let off = query(&c.off, q).await;
            let oracle = query(&c.oracle, q).await;
            assert_eq!(off, oracle, "{fact}: {q} (runtime filters off)");
            assert_eq!(on, oracle, "{fact}: {q} (runtime filters on)");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_filters_cut_rows_and_long_key_lists_become_one_shared_bloom_filter() {
    let dir = tempfile::tempdir().unwrap();
    tables(dir.path());
    let c = contexts(dir.path(), "fact").await;

    // 20 keys: an exact IN list, no Bloom filter.
    let q = "SELECT f.v FROM fact f JOIN dim d ON f.k = d.k WHERE d.a = 7";
    let on = fact_metric(&c.on, q, "rows_selected").await;
    let off = fact_metric(&c.off, q, "rows_selected").await;
    assert!(
        off >= 59_000,
        "without runtime filters the scan keeps every row: {off}"
    );
    assert!(
        on <= 60 + 2_000,
        "20 keys x 3 rows, plus row groups not decided: {on}"
    );
    assert_eq!(fact_metric(&c.on, q, "runtime_filters").await, 2);
    assert!(
        c.fact_on.key_filters().is_empty(),
        "20 keys stay an exact list"
    );

    // 400 keys, joined twice with the same key (TPC-H Q17's shape): one Bloom filter, used by
    // both scans of `fact`.
    let q = "SELECT f.v FROM fact f JOIN dim d ON f.k = d.k \
             JOIN (SELECT k, max(v) AS m FROM fact GROUP BY k) g ON g.k = d.k \
             WHERE d.a < 20 AND f.v <= g.m";
    let on_rows = query(&c.on, q).await;
    assert_eq!(on_rows, query(&c.oracle, q).await);
    let filters = c.fact_on.key_filters();
    assert_eq!(filters.len(), 1, "{filters:?}");
    assert_eq!(filters[0].keys(), 400);
    let (probed, passed) = filters[0].counts();
    assert!(
        probed > 0 && passed < probed / 10,
        "{probed} probed, {passed} passed"
    );

    // TPC-H Q17's own form: a correlated scalar subquery, which DataFusion decorrelates into a
    // semi join with the aggregate on its build side. The probe-aggregates rule swaps it, so
    // the dimension's keys reach the aggregate's scan too: both scans of `fact` read few rows.
    let q = "SELECT sum(f.v) FROM fact f JOIN dim d ON f.k = d.k WHERE d.a < 20 \
             AND f.v < (SELECT 0.5 * avg(f2.v) FROM fact f2 WHERE f2.k = d.k)";
    assert_eq!(query(&c.on, q).await, query(&c.oracle, q).await);
    assert_eq!(query(&c.off, q).await, query(&c.oracle, q).await);
    let on = fact_metric(&c.on, q, "rows_selected").await;
    let off = fact_metric(&c.off, q, "rows_selected").await;
    assert!(
        off >= 2 * 59_000,
        "both scans read every row without filters: {off}"
    );
    assert!(
        on <= off / 10,
        "both scans filtered by the join keys: {on} of {off}"
    );
}

/// The probe-aggregates rule on the plan shape DataFusion's join selection gives TPC-H Q17 at
/// SF 1: the decorrelated subquery's semi join with the aggregate on the build side. The rule
/// makes the aggregate the probe side again (a left semi join), and the rows stay the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_aggregates_swaps_a_semi_join_built_on_an_aggregate() {
    use datafusion::common::tree_node::{Transformed, TreeNode};
    use datafusion::common::JoinType;
    use datafusion::physical_optimizer::PhysicalOptimizerRule;
    use datafusion::physical_plan::aggregates::AggregateExec;
    use datafusion::physical_plan::joins::HashJoinExec;

    let dir = tempfile::tempdir().unwrap();
    tables(dir.path());
    let c = contexts(dir.path(), "fact").await;
    let q = "SELECT sum(f.v) FROM fact f JOIN dim d ON f.k = d.k WHERE d.a < 20 \
             AND f.v < (SELECT 0.5 * avg(f2.v) FROM fact f2 WHERE f2.k = d.k)";
    // Planned without runtime filters: DataFusion refuses to swap a join whose dynamic filter
    // exists, and the rule runs before that filter is made.
    let plan = plan_of(&c.off, q).await;
    // The semi join of the plan, with the side holding the aggregate on the left or right.
    fn semi_join(p: &Arc<dyn ExecutionPlan>) -> Option<(JoinType, bool)> {
        if let Some(j) = p.downcast_ref::<HashJoinExec>() {
            if matches!(j.join_type(), JoinType::LeftSemi | JoinType::RightSemi) {
                return Some((*j.join_type(), has_aggregate(j.right())));
            }
        }
        p.children().into_iter().find_map(semi_join)
    }
    fn has_aggregate(p: &Arc<dyn ExecutionPlan>) -> bool {
        p.downcast_ref::<AggregateExec>().is_some() || p.children().into_iter().any(has_aggregate)
    }
    assert_eq!(
        semi_join(&plan),
        Some((JoinType::LeftSemi, true)),
        "aggregate probed already"
    );
    // As at SF 1: the aggregate on the build side.
    let built_on_aggregate = plan
        .clone()
        .transform_up(|n| match n.downcast_ref::<HashJoinExec>() {
            Some(j) if j.join_type() == &JoinType::LeftSemi => {
                Ok(Transformed::yes(j.swap_inputs(*j.partition_mode())?))
            }
            _ => Ok(Transformed::no(n)),
        })
        .unwrap()
        .data;
    assert_eq!(
        semi_join(&built_on_aggregate),
        Some((JoinType::RightSemi, false))
    );
    let config = c.on.state().config_options().clone();
    let fixed = tamis_datafusion::rules::ProbeAggregates
        .optimize(built_on_aggregate, &config)
        .unwrap();
    assert_eq!(
        semi_join(&fixed),
        Some((JoinType::LeftSemi, true)),
        "swapped back"
    );
    let batches = datafusion::physical_plan::collect(fixed, c.off.task_ctx())
        .await
        .unwrap();
    assert_eq!(rows(&batches), query(&c.oracle, q).await);
}

/// A build side of 20 000 distinct keys, more than the join's dynamic filter lists: the build
/// side is tapped (`tap.rs`) and the probe scan of `big` probes those keys as a Bloom filter,
/// on integer and string keys and through a semi join; rows equal the oracle's with runtime
/// filters on and off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn build_sides_too_large_for_a_key_list_are_tapped_for_the_probe_scan() {
    let dir = tempfile::tempdir().unwrap();
    let n: i64 = 100_000;
    let k: Vec<i64> = (0..n).map(|i| (i * 7919) % n).collect();
    let big = FileBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("s", DataType::Utf8, false),
            Field::new("v", DataType::Int64, false),
        ])),
        vec![
            Arc::new(Int64Array::from(k.clone())) as ArrayRef,
            Arc::new(StringArray::from_iter_values(
                k.iter().map(|k| format!("key-{k:06}")),
            )),
            Arc::new(Int64Array::from_iter_values(0..n)),
        ],
    )
    .unwrap();
    let few_keys: Vec<i64> = (0..20_000).map(|j| 5 * j).collect();
    let few = FileBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("s", DataType::Utf8, false),
        ])),
        vec![
            Arc::new(Int64Array::from(few_keys.clone())) as ArrayRef,
            Arc::new(StringArray::from_iter_values(
                few_keys.iter().map(|k| format!("key-{k:06}")),
            )),
        ],
    )
    .unwrap();
    let path = |name: &str| dir.path().join(format!("{name}.parquet"));
    write(&path("big"), &big, true);
    write(&path("few"), &few, false);
    let session = |rf: bool| {
        let ctx = tamis_datafusion::sql::session(2, rf);
        for name in ["big", "few"] {
            let t = TamisTable::open(path(name).to_str().unwrap()).unwrap();
            ctx.register_table(name, Arc::new(t.with_runtime_filters(rf)))
                .unwrap();
        }
        ctx
    };
    let (on, off) = (session(true), session(false));
    let oracle = tamis_datafusion::sql::session(2, false);
    for name in ["big", "few"] {
        let table = oracle_table(path(name).to_str().unwrap());
        oracle.register_table(name, table).unwrap();
    }
    // Inner joins on integer and string keys: the probe scan of `big` keeps what may join.
    for q in [
        "SELECT count(*), sum(b.v) FROM big b JOIN few f ON b.k = f.k",
        "SELECT b.v, f.s FROM big b JOIN few f ON b.s = f.s WHERE b.v < 50000",
    ] {
        same_rows(&oracle, &off, &on, q).await;
        assert!(fact_metric(&on, q, "runtime_filters").await >= 1, "{q}");
        let kept = fact_metric(&on, q, "rows_selected").await;
        assert!(
            kept <= 30_000,
            "{q}: 20 % of the probe rows join, {kept} selected"
        );
        assert!(fact_metric(&off, q, "rows_selected").await >= 50_000, "{q}");
    }
    // INTERSECT joins NULL to NULL: a NULL key on both sides is in the answer, so such a
    // join must not be tapped (the tap and the filter skip NULLs).
    let with_nulls = |offset: i64| {
        FileBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true)])),
            vec![Arc::new(Int64Array::from_iter(
                (0..30_000).map(|i| (i % 1000 != 7).then_some(i + offset)),
            )) as ArrayRef],
        )
        .unwrap()
    };
    write(&path("na"), &with_nulls(0), true);
    write(&path("nb"), &with_nulls(5_000), true);
    for ctx in [&on, &off, &oracle] {
        for name in ["na", "nb"] {
            let p = path(name);
            if std::ptr::eq(ctx, &oracle) {
                ctx.register_table(name, oracle_table(p.to_str().unwrap()))
                    .unwrap();
            } else {
                let t = TamisTable::open(p.to_str().unwrap()).unwrap();
                let rf = std::ptr::eq(ctx, &on);
                ctx.register_table(name, Arc::new(t.with_runtime_filters(rf)))
                    .unwrap();
            }
        }
    }
    let q = "SELECT k FROM na INTERSECT SELECT k FROM nb";
    let want = query(&oracle, q).await;
    assert!(want.contains(&"NULL".to_string()), "{want:?}");
    assert_eq!(query(&off, q).await, want, "{q} (runtime filters off)");
    assert_eq!(query(&on, q).await, want, "{q} (runtime filters on)");
    // NOT IN is a null-aware anti join: one NULL among the probe side's keys empties the
    // answer, so its probe scan must not drop NULLs (nor anything else): not tapped.
    for q in [
        "SELECT count(*) FROM na WHERE k NOT IN (SELECT k FROM nb)",
        "SELECT count(*) FROM na WHERE k NOT IN (SELECT k FROM nb WHERE k IS NOT NULL)",
        "SELECT count(*) FROM few WHERE k < 10000 AND k NOT IN (SELECT k FROM nb)",
        "SELECT count(*) FROM few WHERE k < 10000 AND k NOT IN (SELECT k + 0 FROM nb)",
    ] {
        same_rows(&oracle, &off, &on, q).await;
    }
    // Outer and anti joins built on `few`: probe rows without a match add nothing to the
    // answer, so the probe scan of `big` keeps only what may join here too.
    for q in [
        "SELECT count(*), count(b.v), sum(b.v) FROM few f LEFT JOIN big b ON b.k = f.k",
        "SELECT count(*) FROM few f WHERE NOT EXISTS \
         (SELECT 1 FROM big b WHERE b.k = f.k AND b.v < 50000 AND b.v <> f.k + 3)",
    ] {
        same_rows(&oracle, &off, &on, q).await;
        assert!(fact_metric(&on, q, "runtime_filters").await >= 1, "{q}");
        let kept = fact_metric(&on, q, "rows_selected").await;
        assert!(kept <= 30_000, "{q}: {kept} probe rows selected");
    }
    // Semi and anti joins (which side is built is DataFusion's choice): the same rows.
    for q in [
        "SELECT count(*) FROM big b WHERE b.k IN (SELECT k FROM few)",
        "SELECT count(*) FROM few f WHERE f.k IN (SELECT k FROM big WHERE v < 90000)",
        "SELECT count(*) FROM big b WHERE b.k NOT IN (SELECT k FROM few)",
    ] {
        same_rows(&oracle, &off, &on, q).await;
    }
}

/// A join on two keys whose probe side is an aggregate grouped by both (TPC-H Q20's shape):
/// the build side is tapped on its first key through the aggregate, so the probe scan reads
/// only the groups that may join; rows equal the oracle's with runtime filters on and off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_on_two_keys_is_tapped_on_one_through_an_aggregate() {
    let dir = tempfile::tempdir().unwrap();
    tables(dir.path());
    let c = contexts(dir.path(), "fact").await;
    for q in [
        "SELECT d.k, g.total FROM dim d JOIN \
         (SELECT k, ks, sum(v) AS total FROM fact GROUP BY k, ks) g \
         ON d.k = g.k AND d.ks = g.ks WHERE d.a < 20",
        "SELECT count(*) FROM dim d WHERE d.a < 20 AND d.k * 1000 < \
         (SELECT sum(f.v) FROM fact f WHERE f.k = d.k AND f.ks = d.ks)",
    ] {
        same_rows(&c.oracle, &c.off, &c.on, q).await;
        // 400 of the 20 000 keys join: about 1 200 of the 60 000 fact rows.
        let kept = fact_metric(&c.on, q, "rows_selected").await;
        assert!(kept <= 6_000, "{q}: {kept} fact rows selected");
        assert!(
            fact_metric(&c.off, q, "rows_selected").await >= 50_000,
            "{q}"
        );
    }
}

/// TPC-H Q2's shape: the probe side groups by the key after inner joins (the subquery joins
/// `fact` with `dim` first). The tap reaches the `fact` scan through the aggregate and the
/// inner join; through an outer join it does not (a dropped row could become a row of NULLs).
/// Rows equal the oracle's with runtime filters on and off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tap_reaches_the_scan_through_inner_joins_below_an_aggregate() {
    let dir = tempfile::tempdir().unwrap();
    tables(dir.path());
    let c = contexts(dir.path(), "fact").await;
    let inner = "SELECT d.k, g.m FROM dim d JOIN \
         (SELECT f.k, f.ks, min(f.v) AS m FROM fact f JOIN dim d2 ON f.k = d2.k \
          WHERE d2.a < 900 GROUP BY f.k, f.ks) g \
         ON d.k = g.k AND d.ks = g.ks WHERE d.a < 20";
    same_rows(&c.oracle, &c.off, &c.on, inner).await;
    // 400 of the 20 000 keys join: about 1 200 of the 60 000 fact rows.
    let kept = fact_metric(&c.on, inner, "rows_selected").await;
    assert!(kept <= 6_000, "{kept} fact rows selected");
    assert!(fact_metric(&c.off, inner, "rows_selected").await >= 50_000);
    for outer in [
        "SELECT d.k, g.m FROM dim d JOIN \
         (SELECT f.k, f.ks, min(d2.a) AS m FROM fact f LEFT JOIN dim d2 ON f.v = d2.k \
          GROUP BY f.k, f.ks) g \
         ON d.k = g.k AND d.ks = g.ks WHERE d.a < 20",
        "SELECT d.k, g.n FROM dim d JOIN \
         (SELECT d2.k, count(f.v) AS n FROM dim d2 LEFT JOIN fact f ON f.k = d2.k \
          GROUP BY d2.k) g ON d.k = g.k AND d.a < 20",
    ] {
        same_rows(&c.oracle, &c.off, &c.on, outer).await;
    }
}

/// At 8 partitions the joins are partitioned, and each partition's build side reports its
/// own bounds and keys: DataFusion's filter is a `CASE` over the partitions. The scans take
/// it as one filter over all partitions' keys (one shared Bloom filter), not as 8 filters
/// every row probes, so they select about as few rows as at one partition; rows equal the
/// oracle's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_join_filters_as_one_union_of_its_partitions() {
    use datafusion::physical_plan::joins::{HashJoinExec, PartitionMode};

    let dir = tempfile::tempdir().unwrap();
    tables(dir.path());
    let path = |name: &str| {
        (dir.path().join(format!("{name}.parquet")))
            .to_string_lossy()
            .to_string()
    };
    let session = |partitions: usize, rf: bool| {
        let mut config = tamis_datafusion::sql::config(partitions, rf);
        // Partitioned joins even for these small build sides.
        let optimizer = &mut config.options_mut().optimizer;
        optimizer.hash_join_single_partition_threshold = 0;
        optimizer.hash_join_single_partition_threshold_rows = 0;
        let ctx = tamis_datafusion::sql::session_with(config);
        let fact = Arc::new(
            TamisTable::open(&path("fact"))
                .unwrap()
                .with_runtime_filters(rf),
        );
        ctx.register_table("fact", fact.clone()).unwrap();
        let dim = TamisTable::open(&path("dim")).unwrap();
        ctx.register_table("dim", Arc::new(dim.with_runtime_filters(rf)))
            .unwrap();
        (ctx, fact)
    };
    let oracle = tamis_datafusion::sql::session(2, false);
    for name in ["fact", "dim"] {
        oracle
            .register_table(name, oracle_table(&path(name)))
            .unwrap();
    }
    fn partitioned(p: &Arc<dyn ExecutionPlan>) -> bool {
        p.downcast_ref::<HashJoinExec>()
            .is_some_and(|j| *j.partition_mode() == PartitionMode::Partitioned)
            || p.children().into_iter().any(partitioned)
    }
    // 20 keys (exact lists per partition), 400 keys (a Bloom filter), and Q17's shape.
    for (q, keys) in [
        (
            "SELECT f.v, f.k FROM fact f JOIN dim d ON f.k = d.k WHERE d.a = 7",
            20,
        ),
        (
            "SELECT f.v FROM fact f JOIN dim d ON f.k = d.k WHERE d.a < 20",
            400,
        ),
        (
            "SELECT sum(f.v) FROM fact f JOIN dim d ON f.k = d.k WHERE d.a < 20 \
             AND f.v < (SELECT 0.5 * avg(f2.v) FROM fact f2 WHERE f2.k = d.k)",
            400,
        ),
    ] {
        let ((wide, fact), (one, _), (off, _)) =
            (session(8, true), session(1, true), session(8, false));
        same_rows(&oracle, &off, &wide, q).await;
        // One filter over every partition's keys: 400 keys are one Bloom filter (8 branches
        // of about 50 keys would have been 8 exact lists), 20 keys one exact list.
        let filters = fact.key_filters();
        let built: Vec<usize> = filters.iter().map(|f| f.keys()).collect();
        let want = if keys > 64 { vec![keys] } else { vec![] };
        assert_eq!(built, want, "{q}: key filters of the fact scans");
        let plan = plan_of(&wide, q).await;
        assert!(partitioned(&plan), "{q}: no partitioned join to test");
        let at_8 = fact_metric(&wide, q, "rows_selected").await;
        let at_1 = fact_metric(&one, q, "rows_selected").await;
        let without = fact_metric(&off, q, "rows_selected").await;
        assert!(
            at_8 <= at_1 + at_1 / 2 + 1_000 && at_8 <= without / 10,
            "{q}: {at_8} rows selected at 8 partitions, {at_1} at 1, {without} without filters"
        );
    }
    // 12 000 of the 20 000 keys (TPC-H Q14's shape, a join with most of a dimension): such a
    // key filter would keep most rows, so none is built, at 8 partitions or 1; and 20 000
    // keys, more than one filter takes: bounds only. Rows stay the oracle's.
    for q in [
        "SELECT count(*), sum(f.v) FROM fact f JOIN dim d ON f.k = d.k WHERE d.a < 600",
        "SELECT count(*), sum(f.v) FROM fact f JOIN dim d ON f.k = d.k",
    ] {
        for partitions in [8, 1] {
            let ((on, fact), (off, _)) = (session(partitions, true), session(partitions, false));
            same_rows(&oracle, &off, &on, q).await;
            let filters = fact.key_filters();
            assert!(filters.is_empty(), "{q} at {partitions}: {filters:?}");
        }
    }
}

/// The nodes of `plan` named `name`, counted once per place in the plan.
fn count_nodes(plan: &Arc<dyn ExecutionPlan>, name: &str) -> usize {
    let own = usize::from(plan.name() == name);
    own + plan
        .children()
        .into_iter()
        .map(|c| count_nodes(c, name))
        .sum::<usize>()
}

/// A view named twice (TPC-H Q15's shape) is computed once: both places read one
/// `SharedExec`, `fact` is scanned once. The join above one of them pushes `dim`'s few keys
/// into its scan when the plans are made; the shared scan must drop them, or the other place
/// (`max` over every key) would see only the joined keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_named_twice_is_computed_once_without_either_places_join_filters() {
    let dir = tempfile::tempdir().unwrap();
    tables(dir.path());
    let c = contexts(dir.path(), "fact").await;
    let shared = [
        // The max lies outside the joined keys: a tap left in the shared scan changes `m`.
        "WITH r AS (SELECT k, sum(v) AS s FROM fact WHERE v > 100 GROUP BY k) \
         SELECT r.k, r.s, (SELECT max(s) FROM r) AS m FROM r JOIN dim d ON r.k = d.k \
         WHERE d.a = 7",
        // The place under the join runs first (it builds the outer join's hash table): a tap
        // left in the shared scan would leave the preserved side 20 keys, not 20 000.
        "WITH r AS (SELECT k, sum(v) AS s FROM fact GROUP BY k) \
         SELECT count(*), count(a.k) FROM r b \
         LEFT JOIN (SELECT r.k FROM r JOIN dim d ON r.k = d.k WHERE d.a = 7) a ON a.k = b.k",
        // Q15 itself: the rows whose sum is the maximum.
        "WITH r AS (SELECT k, sum(v) AS s FROM fact WHERE v < 50000 GROUP BY k) \
         SELECT d.k, d.ks, r.s FROM dim d JOIN r ON d.k = r.k \
         WHERE r.s = (SELECT max(s) FROM r) ORDER BY d.k",
    ];
    for q in shared {
        same_rows(&c.oracle, &c.off, &c.on, q).await;
        for ctx in [&c.on, &c.off] {
            let plan = plan_of(ctx, q).await;
            assert_eq!(count_nodes(&plan, "SharedExec"), 2, "{q}");
            // Two places, one scan below both.
            let scan_count = count_nodes(&plan, "TamisExec");
            assert_eq!(
                scan_count, 3,
                "dim once, fact once under each SharedExec: {q}"
            );
            // `fact` is read once: no page of it is kept for a second read.
            let columns: Vec<&String> = (scans(&plan).into_iter())
                .flat_map(|s| s.first_reads_kept())
                .collect();
            assert_eq!(columns, Vec::<&String>::new(), "{q}");
        }
    }
    // One partition: the aggregate reads its scan through DataFusion's cooperative wrapper.
    let one = tamis_datafusion::sql::session(1, true);
    for name in ["fact", "dim"] {
        let path = dir.path().join(format!("{name}.parquet"));
        let table = TamisTable::open(path.to_str().unwrap()).unwrap();
        one.register_table(name, Arc::new(table)).unwrap();
    }
    for q in shared {
        assert_eq!(query(&one, q).await, query(&c.oracle, q).await, "{q}");
        assert_eq!(count_nodes(&plan_of(&one, q).await, "SharedExec"), 2, "{q}");
    }
    let m = query(
        &c.on,
        "WITH r AS (SELECT k, sum(v) AS s FROM fact WHERE v > 100 GROUP BY k) \
         SELECT (SELECT max(s) FROM r) AS m FROM r JOIN dim d ON r.k = d.k WHERE d.a = 7 LIMIT 1",
    )
    .await;
    let all = query(
        &c.oracle,
        "SELECT max(s) FROM (SELECT k, sum(v) AS s FROM fact WHERE v > 100 GROUP BY k)",
    )
    .await;
    assert_eq!(m, all);

    // Different filters, different tables (also under one alias, the same text): nothing is
    // shared.
    let plain = dir.path().join("fact_plain.parquet");
    let plain = plain.to_str().unwrap();
    c.on.register_table("fact2", Arc::new(TamisTable::open(plain).unwrap()))
        .unwrap();
    c.off
        .register_table("fact2", Arc::new(TamisTable::open(plain).unwrap()))
        .unwrap();
    c.oracle
        .register_table("fact2", oracle_table(plain))
        .unwrap();
    for q in [
        "WITH r AS (SELECT x.k, sum(x.v) AS s FROM fact x GROUP BY x.k), \
              q AS (SELECT x.k, sum(x.v) AS s FROM fact2 x GROUP BY x.k) \
         SELECT r.k FROM r JOIN q ON r.k = q.k WHERE r.s = (SELECT max(s) FROM q)",
        "WITH r AS (SELECT k, sum(v) AS s FROM fact WHERE v > 100 GROUP BY k), \
              q AS (SELECT k, sum(v) AS s FROM fact WHERE v > 101 GROUP BY k) \
         SELECT r.k FROM r JOIN q ON r.k = q.k WHERE r.s = (SELECT max(s) FROM q)",
        "SELECT a.k FROM (SELECT k, max(a) AS m FROM dim GROUP BY k) a \
         JOIN (SELECT k, max(v) AS m FROM fact GROUP BY k) b ON a.k = b.k AND a.m = b.m",
    ] {
        same_rows(&c.oracle, &c.off, &c.on, q).await;
        let plan = plan_of(&c.on, q).await;
        assert_eq!(count_nodes(&plan, "SharedExec"), 0, "{q}");
    }
}
