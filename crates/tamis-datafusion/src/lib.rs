//! A DataFusion [`TableProvider`] over a tamis dataset: SQL, joins and aggregates from
//! DataFusion, the Parquet scan (pruning, selection pushdown) from tamis.
//!
//! ```no_run
//! # async fn run() -> datafusion::error::Result<()> {
//! use std::sync::Arc;
//! use datafusion::prelude::SessionContext;
//!
//! let ctx = SessionContext::new();
//! let table = tamis_datafusion::TamisTable::open("data/tpch-sf1/lineitem.parquet")?;
//! ctx.register_table("lineitem", Arc::new(table))?;
//! let df = ctx.sql("SELECT count(*) FROM lineitem WHERE l_quantity < 24").await?;
//! df.show().await?;
//! # Ok(()) }
//! ```
//!
//! DataFusion 55 is on arrow 59 and tamis on arrow 60: schemas, batches and statistics cross
//! through the Arrow C Data Interface without copying ([`cross`]). Filters arrive as DataFusion expressions and are converted
//! to `tamis::expr::Expr` trees ([`convert`]); the scan is split into partitions of whole row
//! groups; each partition runs a synchronous tamis scan on a thread of its own and hands its
//! batches over a bounded channel, so DataFusion's async workers never block.

pub mod convert;
pub mod cross;
pub mod decimal;
pub mod dynamic;
mod exec;
pub mod few_groups;
pub mod join_order;
pub mod rules;
pub mod share;
mod split;
pub mod sql;
mod stats;
pub mod tables;
pub mod tap;

use std::fmt;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DataFusionError, Result, Statistics};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_plan::ExecutionPlan;
use tamis::io::StorageOptions;

pub use exec::TamisExec;

/// A tamis dataset as a DataFusion table: a file, a directory, a glob, a hive-partitioned
/// prefix, or an object-store URL. Footers are read once, at [`TamisTable::open`].
pub struct TamisTable {
    dataset: Arc<tamis::Dataset>,
    schema: SchemaRef,
    stats: Arc<stats::TableStats>,
    location: String,
    /// Join-key filters built for this table's scans, shared between them.
    key_filters: Arc<dynamic::KeyFilters>,
    /// Whether scans take runtime filters from joins (on by default).
    runtime_filters: bool,
    /// Whether strings and binaries are views (on by default, see
    /// [`TamisTable::with_string_views`]).
    string_views: bool,
    /// Whether partitions may cut inside row groups (off by default, see
    /// [`TamisTable::with_row_group_slices`]).
    row_group_slices: bool,
}

impl fmt::Debug for TamisTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TamisTable")
            .field("location", &self.location)
            .finish()
    }
}

/// A tamis error as a DataFusion error (its one-line message kept).
pub fn df_error(e: tamis::Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

impl TamisTable {
    /// Opens `path` (local file, directory, glob or URL) with default storage options.
    pub fn open(path: &str) -> Result<TamisTable> {
        Self::open_with(path, &StorageOptions::default())
    }

    /// Opens `path` with object-store options (credentials, region, endpoint…).
    pub fn open_with(path: &str, options: &StorageOptions) -> Result<TamisTable> {
        let dataset = tamis::Dataset::open_with(path, options, None).map_err(df_error)?;
        Self::from_dataset(Arc::new(dataset), path)
    }

    /// A table over a dataset already open (its cached footers are shared, not read again);
    /// `location` names it in plans and errors.
    pub fn from_dataset(dataset: Arc<tamis::Dataset>, location: &str) -> Result<TamisTable> {
        let schema = cross::schema_to_datafusion(&dataset.plan().schema_with_views())?;
        let stats = Arc::new(stats::TableStats::new(dataset.plan())?);
        Ok(TamisTable {
            dataset,
            schema,
            stats,
            location: location.to_string(),
            key_filters: Arc::default(),
            runtime_filters: true,
            string_views: true,
            row_group_slices: false,
        })
    }

    /// Declares the files' dictionary-encoded top-level string and binary columns as
    /// `Utf8View` / `BinaryView` (on by default) or keeps the files' types
    /// ([`tamis::Scan::string_views`]). DataFusion's hash aggregates and joins compare short
    /// values inside the view, and tamis builds the views by sharing the dictionary's entries
    /// (TPC-H Q1, whose group keys are two such columns: about 7 % faster at 1 thread). Rows
    /// are the same either way.
    pub fn with_string_views(mut self, on: bool) -> Result<TamisTable> {
        let plan = self.dataset.plan();
        let schema = if on {
            plan.schema_with_views()
        } else {
            plan.schema.clone()
        };
        self.schema = cross::schema_to_datafusion(&schema)?;
        self.string_views = on;
        Ok(self)
    }

    /// Turns runtime join filters on or off for this table's scans (on by default). Results
    /// are the same either way; only the rows read differ.
    pub fn with_runtime_filters(mut self, on: bool) -> TamisTable {
        self.runtime_filters = on;
        self
    }

    /// Lets the scan's partitions cut inside row groups (off by default; `split.rs`): a table
    /// of fewer row groups than partitions is then read by all of them, not by one per row
    /// group. Off by default because each slice decodes its row group's dictionaries and reads
    /// its page index again: at 16 partitions on one CPU (TPC-H SF 1, 1 Mi-row groups) the
    /// CPU time of Q6 grew 1.5x and of Q13 2.8x over whole row groups (BENCHMARKS.md). Rows are
    /// the same either way.
    pub fn with_row_group_slices(mut self, on: bool) -> TamisTable {
        self.row_group_slices = on;
        self
    }

    /// The join-key Bloom filters this table's scans have built (with their probe counts).
    pub fn key_filters(&self) -> Vec<Arc<tamis::expr::KeyFilter>> {
        self.key_filters.all()
    }

    /// Converts `filter` and checks it binds to the dataset's columns.
    fn pushable(&self, filter: &Expr) -> Option<convert::Converted> {
        let c = convert::convert(filter, &self.schema)?;
        tamis::expr::bind(&c.expr, &self.dataset.plan().leaves).ok()?;
        Some(c)
    }
}

#[async_trait]
impl TableProvider for TamisTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| match self.pushable(f) {
                Some(c) if c.exact => TableProviderFilterPushDown::Exact,
                Some(_) => TableProviderFilterPushDown::Inexact,
                None => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    fn statistics(&self) -> Option<Statistics> {
        Some(self.stats.table(&self.schema))
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let parts: Vec<tamis::expr::Expr> = filters
            .iter()
            .filter_map(|f| self.pushable(f).map(|c| c.expr))
            .collect();
        let filter = (!parts.is_empty()).then(|| tamis::expr::Expr::all(parts));
        let projection = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let target = state.config().target_partitions().max(1);
        Ok(Arc::new(TamisExec::new(
            self, projection, filter, limit, target,
        )?))
    }
}
