//! Table formats: a table's metadata (a Delta log) says which Parquet files hold its rows at a
//! version, the partition values of each, which of their rows were deleted, and how the table's
//! columns are named in the files. tamis reads the files; the metadata is read by the format's
//! own project (`delta_kernel`), never by hand.
//!
//! ```text
//! delta.rs   a Delta Lake table → TableSnapshot, through delta_kernel's log replay
//! mod.rs     TableSnapshot: what `DatasetPlan::open_table` opens instead of a listing
//! ```
//!
//! A snapshot's deleted rows become each file's row selection before any filter runs
//! (`dataset::plan::DatasetFile::deleted`), so a deleted row is never decoded as payload.

pub mod delta;

use std::sync::Arc;

use arrow::datatypes::{DataType, Field};

use crate::io::location::FileRef;

/// The files of one version of a table and how its columns map onto them.
#[derive(Debug, Clone)]
pub struct TableSnapshot {
    /// The format and root, for errors and `explain` ("Delta Lake table s3://b/t").
    pub name: String,
    /// The version read.
    pub version: u64,
    /// The data columns (not partition columns), in the table's order.
    pub columns: Vec<TableColumn>,
    /// The partition columns and their types (their values come from the metadata, not the
    /// files).
    pub partitions: Vec<(String, DataType)>,
    /// Every column's name in the table's order (data and partition columns interleaved as
    /// the table declares them): the default projection.
    pub order: Vec<String>,
    /// The files of this version.
    pub files: Vec<TableFile>,
    /// Prunes files by the statistics the table's metadata holds for each (`None`: none).
    pub pruner: Option<Arc<dyn FilePruner>>,
}

/// Prunes a table's files before their footers are read, by what its metadata records per
/// file (min, max and null counts, partition values).
pub trait FilePruner: Send + Sync + std::fmt::Debug {
    /// Per file of [`TableSnapshot::files`], whether `filter` may hold for a row of it;
    /// `None` when the metadata cannot tell (every file may).
    fn files_for(&self, filter: &crate::expr::Expr) -> crate::error::Result<Option<Vec<bool>>>;
}

/// A data column of a table.
#[derive(Debug, Clone)]
pub struct TableColumn {
    /// Its name and type as the table's current schema says.
    pub field: Field,
    /// Its name in the files (column mapping), the same as the field's name without mapping.
    pub physical: String,
    /// Its Parquet field id (column mapping in `id` mode): files are matched by it first.
    pub field_id: Option<i32>,
}

/// One data file of a table version.
#[derive(Debug, Clone)]
pub struct TableFile {
    /// Where the file is, resolved against the table root.
    pub file: FileRef,
    /// One value per partition column of [`TableSnapshot::partitions`], as the metadata
    /// writes it (`None`: NULL); the dataset layer types them.
    pub partition: Vec<Option<String>>,
    /// The file's deleted rows (positions in the file, ascending, no repeats), if any.
    pub deleted: Option<Arc<[u64]>>,
}
