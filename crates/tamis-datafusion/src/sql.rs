//! Running SQL over named tamis tables, for the CLI (`tamis sql`) and Python (`tamis.sql`).

use std::path::Path;
use std::sync::Arc;

use datafusion::error::DataFusionError;
use datafusion::execution::SessionStateBuilder;
use datafusion::physical_optimizer::optimizer::PhysicalOptimizer;
use datafusion::prelude::{DataFrame, SQLOptions, SessionConfig, SessionContext};
use tamis_arrow::array::RecordBatch;
use tamis_arrow::datatypes::SchemaRef;

use crate::decimal::NarrowDecimalArithmetic;
use crate::few_groups::GroupFewKeysByCode;
use crate::join_order::OrderJoins;
use crate::rules::{KeepSharedPages, ProbeAggregates, TapBuildKeys};
use crate::share::ShareRepeatedSubplans;
use crate::tables::SessionTables;

/// One clear line from a DataFusion error (its messages may span lines).
pub fn one_line(e: &datafusion::error::DataFusionError) -> String {
    match e {
        // A tamis error, as tamis words it.
        datafusion::error::DataFusionError::External(inner) => squeeze(&inner.to_string()),
        other => squeeze(&other.to_string()),
    }
}

/// `text` on one line, its runs of white space one space.
pub(crate) fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The tables of a directory: each `NAME.parquet` file and each subdirectory (a multi-file or
/// partitioned table) becomes table `NAME`, sorted by name.
pub fn tables_in_dir(dir: &Path) -> Result<Vec<(String, String)>, String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot list tables in '{}': {e}", dir.display()))?;
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list tables in '{}': {e}", dir.display()))?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        if name.starts_with('.') || name.starts_with('_') {
            continue;
        }
        if path.is_dir() {
            out.push((name, path.to_string_lossy().to_string()));
        } else if let Some(stem) = name.strip_suffix(".parquet") {
            out.push((stem.to_string(), path.to_string_lossy().to_string()));
        }
    }
    out.sort();
    if out.is_empty() {
        return Err(format!(
            "no tables in '{}' (expected *.parquet files or directories)",
            dir.display()
        ));
    }
    Ok(out)
}

/// Join key sets up to this many distinct values reach the scans as key lists (DataFusion's
/// default, 150, would hand larger build sides over as a hash-table lookup, which a scan
/// cannot probe); tamis turns lists longer than [`crate::dynamic::EXACT_KEYS`] into a Bloom
/// filter. Larger sets pass only their min/max: DataFusion builds the list as one literal per
/// key and rebuilds it for every snapshot, which cost more than the filter saved above about
/// 16 Ki keys (TPC-H SF 1, one thread: with 2^18, Q14's 75 Ki part keys took 0.23 s against
/// 0.16 s without runtime filters, Q5's orders keys 0.38 s against 0.24 s; with 2^14 both are
/// within 5 % of no filters, and Q8, Q9, Q10, Q17, Q18, Q21 keep their gains).
pub const RUNTIME_FILTER_MAX_KEYS: usize = 1 << 14;

/// The key-list limit of one build partition at `partitions` partitions: DataFusion applies
/// it to each partition of a partitioned join, whose lists the scans unite, so the limit of
/// the union ([`RUNTIME_FILTER_MAX_KEYS`]) is shared out. Otherwise at 16 partitions every
/// build partition listed up to 16 Ki keys, 256 Ki in all, each list built as literals and
/// snapshot (TPC-H Q14 at SF 1: the join's build 58 ms against 6 ms without runtime filters).
pub fn keys_per_partition(partitions: usize) -> usize {
    (RUNTIME_FILTER_MAX_KEYS / partitions.max(1)).max(crate::dynamic::EXACT_KEYS)
}

/// The session configuration `tamis sql` uses: `threads` partitions wide, runtime join
/// filters on or off.
pub fn config(threads: usize, runtime_filters: bool) -> SessionConfig {
    let mut config = SessionConfig::new().with_target_partitions(threads.max(1));
    let optimizer = &mut config.options_mut().optimizer;
    optimizer.enable_join_dynamic_filter_pushdown = runtime_filters;
    optimizer.hash_join_inlist_pushdown_max_distinct_values = keys_per_partition(threads);
    // Bytes of the build side's key arrays, every row (not distinct keys) and whole buffers.
    optimizer.hash_join_inlist_pushdown_max_size = 64 * RUNTIME_FILTER_MAX_KEYS;
    config
}

/// A session `threads` partitions wide, with runtime join filters or not, and tamis's own
/// physical rules ([`crate::rules`]): [`ProbeAggregates`] and [`TapBuildKeys`] right after
/// DataFusion's join selection, [`KeepSharedPages`] and [`ShareRepeatedSubplans`] last; and
/// decimal arithmetic in 64-bit lanes ([`NarrowDecimalArithmetic`]) after DataFusion's logical
/// rules.
pub fn session(threads: usize, runtime_filters: bool) -> SessionContext {
    session_with(config(threads, runtime_filters))
}

/// A session with `config` (see [`config`]) and tamis's rules.
pub fn session_with(config: SessionConfig) -> SessionContext {
    build_session(config, false)
}

/// [`session_with`], its inner joins reordered by [`OrderJoins`] before DataFusion's join
/// selection. Not the default: on TPC-H SF 10 it made Q5 6 % faster but Q7, Q8, Q9 and Q10
/// 13–60 % slower (BENCHMARKS.md, "Join order"), the large build sides it moves joins onto
/// feeding runtime filters that cost more than they save.
pub fn session_ordering_joins(config: SessionConfig) -> SessionContext {
    build_session(config, true)
}

fn build_session(config: SessionConfig, order_joins: bool) -> SessionContext {
    let mut rules = PhysicalOptimizer::new().rules;
    let selection = rules.iter().position(|r| r.name() == "join_selection");
    if order_joins {
        rules.insert(selection.unwrap_or(0), Arc::new(OrderJoins));
    }
    let at = selection.map_or(0, |i| i + 1 + usize::from(order_joins));
    rules.insert(at, Arc::new(ProbeAggregates));
    rules.insert(at + 1, Arc::new(TapBuildKeys));
    rules.push(Arc::new(KeepSharedPages));
    rules.push(Arc::new(GroupFewKeysByCode));
    rules.push(Arc::new(ShareRepeatedSubplans));
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_physical_optimizer_rules(rules)
        .with_optimizer_rule(Arc::new(NarrowDecimalArithmetic))
        .build();
    SessionContext::new_with_state(state)
}

/// A session with `tables` (name, path) registered, as wide as `run.threads`, with runtime
/// join filters pushed into the scans or not and row groups sliced or not. Every table is
/// located now (a missing path fails here); a table's footers are read when a query names it
/// ([`SessionTables`]).
pub fn context(
    tables: &[(String, String)],
    options: &tamis::io::StorageOptions,
    run: &RunOptions,
) -> Result<SessionContext, String> {
    let ctx = session(run.threads.max(1), run.runtime_filters);
    let tables = SessionTables::locate(tables, options, run)?;
    let catalog = ctx
        .catalog("datafusion")
        .ok_or("the session has no default catalog")?;
    catalog
        .register_schema("public", Arc::new(tables))
        .map_err(|e| one_line(&e))?;
    Ok(ctx)
}

/// Statements of DataFusion's own grammar (`CREATE EXTERNAL TABLE`, `COPY … TO`, `RESET`),
/// which the plain SQL parser of [`precheck`] does not know.
const DATAFUSION_STATEMENTS: [&str; 3] = ["CREATE", "COPY", "RESET"];

/// Rejects query text that does not parse, before DataFusion's parser sees it. DataFusion's
/// sqlparser (0.62) backtracks exponentially on some malformed text: each unclosed `CAST(`
/// about doubles its time (18 deep: 0.7 s; 30 deep: more than 20 s), within its recursion
/// limit. tamis's own sqlparser (0.63) rejects the same text at once, and accepts every query
/// DataFusion plans here, so a rejection is final and a pass costs one quick parse.
pub fn precheck(query: &str) -> Result<(), String> {
    use sqlparser::dialect::GenericDialect;
    use sqlparser::parser::Parser;

    // The statement's first word, behind any `EXPLAIN [ANALYZE] [VERBOSE]` (DataFusion also
    // explains its own statements).
    let first = query
        .split_whitespace()
        .map(str::to_ascii_uppercase)
        .find(|w| !["EXPLAIN", "ANALYZE", "VERBOSE"].contains(&w.as_str()))
        .unwrap_or_default();
    if DATAFUSION_STATEMENTS.contains(&first.as_str()) {
        return Ok(());
    }
    Parser::new(&GenericDialect {})
        .with_recursion_limit(PARSE_DEPTH)
        .try_with_sql(query)
        .and_then(|mut parser| parser.parse_statements())
        .map(|_| ())
        .map_err(|e| format!("SQL error: {e}"))
}

/// Nesting depth the pre-check accepts (DataFusion's parser also stops at 50).
const PARSE_DEPTH: usize = 50;

/// How [`run`] runs a query.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Worker threads and DataFusion partitions.
    pub threads: usize,
    /// Whether a hash join's build-side keys are pushed into the probe side's scans.
    pub runtime_filters: bool,
    /// Whether statements other than queries run: DDL (`CREATE EXTERNAL TABLE`, `CREATE
    /// VIEW`, `DROP`…), DML (`INSERT`, `COPY … TO`) and session statements (`SET`…). Off by
    /// default: they read and write files the tables do not name, and `tamis sql` /
    /// `tamis.sql` are for querying the tables they are given.
    pub allow_statements: bool,
    /// Whether a partition may read a slice of a row group, so that every scan has as many
    /// partitions as threads (see [`crate::TamisTable::with_row_group_slices`]).
    pub row_group_slices: bool,
}

impl Default for RunOptions {
    /// All cores, runtime filters on, queries only.
    fn default() -> Self {
        RunOptions {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            runtime_filters: true,
            allow_statements: false,
            row_group_slices: false,
        }
    }
}

/// DataFusion's SQL options for [`RunOptions::allow_statements`]: everything, or queries only
/// (`SELECT`, `WITH`, `VALUES`, `EXPLAIN` of a query).
pub fn sql_options(allow_statements: bool) -> SQLOptions {
    SQLOptions::new()
        .with_allow_ddl(allow_statements)
        .with_allow_dml(allow_statements)
        .with_allow_statements(allow_statements)
}

/// Plans `query` in `ctx`, refusing statements other than queries unless `allow_statements`:
/// `SessionContext::sql_with_options`'s own steps (planning has no side effects; the check runs
/// on the plan, subqueries and `EXPLAIN ANALYZE` inputs included, before anything executes),
/// with the refusal worded as one line that says how to allow it.
pub async fn plan(
    ctx: &SessionContext,
    query: &str,
    allow_statements: bool,
) -> Result<DataFrame, String> {
    let state = ctx.state();
    let public = ctx.catalog("datafusion").and_then(|c| c.schema("public"));
    let tables = public
        .as_deref()
        .and_then(|s| s.downcast_ref::<SessionTables>());
    // A table that failed to open, as tamis says it (DataFusion wraps the error).
    let failed = |e: DataFusionError| {
        tables
            .and_then(SessionTables::failed)
            .unwrap_or_else(|| one_line(&e))
    };
    let dialect = state.config().options().sql_parser.dialect;
    let statement = state
        .sql_to_statement(query, &dialect)
        .map_err(|e| one_line(&e))?;
    // The tables the statement names, opened together before the planner asks for each.
    if let Some(tables) = tables {
        let names: Vec<String> = state
            .resolve_table_references(&statement)
            .map_err(|e| one_line(&e))?
            .iter()
            .filter(|r| r.catalog().is_none_or(|c| c == "datafusion"))
            .filter(|r| r.schema().is_none_or(|s| s == "public"))
            .map(|r| r.table().to_string())
            .collect();
        tables.open_all(&names);
        if let Some(message) = tables.failed() {
            return Err(message);
        }
    }
    let plan = state.statement_to_plan(statement).await.map_err(failed)?;
    sql_options(allow_statements)
        .verify_plan(&plan)
        .map_err(|e| {
            let what = match e.find_root() {
                DataFusionError::Plan(m) => m.clone(),
                other => other.to_string(),
            };
            format!(
                "SQL error: {} (tamis runs queries only; allow statements with \
                 `tamis sql --allow-statements` or `tamis.sql(..., allow_statements=True)`)",
                squeeze(&what)
            )
        })?;
    ctx.execute_logical_plan(plan).await.map_err(failed)
}

/// The runtime of [`run`]'s queries at `threads` workers, kept for the next query of that
/// width (the few most recent widths are kept). A runtime started per query started its
/// workers per query too, and a new thread starts with an empty allocator heap whose memory
/// the kernel must zero again (2 MiB at a time where huge pages are on): the cost grows with
/// the thread count, as the scans' pools did (see `tamis::scan` pools). Queries at once share
/// the workers, as a DuckDB connection's share its threads. Each runtime carries the id of the
/// process that started it: a child made by `fork` inherits the list, not the threads.
fn runtime(threads: usize) -> Result<Arc<tokio::runtime::Runtime>, String> {
    type Kept = Vec<(u32, usize, Arc<tokio::runtime::Runtime>)>;
    static KEPT: std::sync::Mutex<Kept> = std::sync::Mutex::new(Vec::new());
    const WIDTHS: usize = 4;
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    let here = std::process::id();
    if kept.iter().any(|(pid, _, _)| *pid != here) {
        // A forked child: those workers do not exist here, and dropping a runtime joins them.
        kept.drain(..).for_each(std::mem::forget);
    }
    if let Some(at) = kept.iter().position(|(_, n, _)| *n == threads) {
        let entry = kept.remove(at);
        let runtime = Arc::clone(&entry.2);
        kept.push(entry);
        return Ok(runtime);
    }
    let runtime = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("tamis-sql")
            .build()
            .map_err(|e| format!("cannot start the SQL runtime: {e}"))?,
    );
    kept.push((here, threads, Arc::clone(&runtime)));
    let dropped = (kept.len() > WIDTHS).then(|| kept.remove(0));
    drop(kept);
    // Outside the lock: the last handle of a runtime joins its workers when dropped.
    drop(dropped);
    Ok(runtime)
}

/// Runs `query` over `tables` to completion on a kept runtime of its width (`runtime`; the
/// caller need not be async): the result's schema and batches (in tamis's arrow), or one line
/// saying what went wrong.
pub fn run(
    query: &str,
    tables: &[(String, String)],
    options: &tamis::io::StorageOptions,
    run: &RunOptions,
) -> Result<(SchemaRef, Vec<RecordBatch>), String> {
    let runtime = runtime(run.threads.max(1))?;
    precheck(query)?;
    runtime.block_on(async {
        let ctx = context(tables, options, run)?;
        let df = plan(&ctx, query, run.allow_statements).await?;
        let schema =
            crate::cross::schema_to_tamis(df.schema().as_arrow()).map_err(|e| one_line(&e))?;
        let batches = df.collect().await.map_err(|e| one_line(&e))?;
        // Back to tamis's arrow, which the CLI and Python write out.
        let batches = batches
            .iter()
            .map(|b| crate::cross::batch_to_tamis(b, &schema))
            .collect::<datafusion::common::Result<Vec<_>>>()
            .map_err(|e| one_line(&e))?;
        Ok((schema, batches))
    })
}

#[cfg(test)]
mod tests {
    use super::{precheck, runtime};
    use std::sync::Arc;

    /// A width's runtime is kept for its next query; the oldest of more than four widths goes.
    #[test]
    fn runtimes_are_kept_per_width() {
        // Widths no other test uses (tests run in parallel in one process).
        let a = runtime(97).unwrap();
        assert!(Arc::ptr_eq(&a, &runtime(97).unwrap()));
        assert_eq!(a.metrics().num_workers(), 97);
        for width in 98..102 {
            runtime(width).unwrap();
        }
        assert!(!Arc::ptr_eq(&a, &runtime(97).unwrap()));
    }

    #[test]
    fn precheck_rejects_unclosed_casts_that_datafusion_backtracks_on() {
        // 40 unclosed CASTs: DataFusion's parser alone would take hours on this.
        let query = format!("SELECT a FROM t WHERE {}a", "CAST(".repeat(40));
        let e = precheck(&query).unwrap_err();
        assert!(e.starts_with("SQL error: ") && !e.contains('\n'), "{e}");
        assert!(precheck("SELEKT 1").is_err());
    }

    #[test]
    fn precheck_passes_the_tpch_queries_and_datafusion_statements() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/tpch/queries");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            assert_eq!(precheck(&text), Ok(()), "{}", path.display());
            n += 1;
        }
        assert_eq!(n, 22);
        let nested = format!(
            "SELECT {}a{} FROM t",
            "CAST(".repeat(40),
            " AS BIGINT)".repeat(40)
        );
        assert_eq!(precheck(&nested), Ok(()));
        let ddl = "CREATE EXTERNAL TABLE t STORED AS PARQUET LOCATION 'x.parquet'";
        assert_eq!(precheck(ddl), Ok(()));
        let explained = "EXPLAIN ANALYZE COPY t TO 'x.csv' STORED AS CSV";
        assert_eq!(precheck(explained), Ok(()));
    }
}
