//! Multi-file datasets. `partition.rs` and `schema.rs` are pure (what the paths and the files'
//! schemas say); `plan.rs` reads the footers and binds the scan to each file.
//!
//! ```text
//! partition.rs  `key=value` directories → partition schema, typed values per file, constant
//!               Arrow columns, and pruning of whole files by the predicate on those values
//! schema.rs     the files' Arrow schemas → one dataset schema (missing columns read as NULL,
//!               nullability and list item names may differ, real type conflicts are errors)
//! cache.rs      `Dataset`: a plan opened once, its files' metadata kept across scans
//! plan.rs       listing → footers → dataset schema and leaves; per file: partition pruning, the
//!               predicate bound to its own leaves, row groups left by statistics, batch assembly
//! ```

mod cache;
pub(crate) mod partition;
pub(crate) mod plan;
pub(crate) mod schema;

pub use cache::{Dataset, DatasetLocation};
pub(crate) use partition::{
    discover_partitions, parse_hive_path, partition_leaves, partition_verdict, table_partitions,
    Partitions,
};
#[doc(hidden)]
pub use plan::KEEP_OPEN;
pub use plan::{DatasetPlan, ScanPart};
pub(crate) use plan::{FileOutput, ScanFile};
