//! Multi-file datasets, the pure part: no I/O here, only what the paths and the files' schemas
//! say.
//!
//! ```text
//! partition.rs  `key=value` directories → partition schema, typed values per file, constant
//!               Arrow columns, and pruning of whole files by the predicate on those values
//! schema.rs     the files' Arrow schemas → one dataset schema (missing columns read as NULL,
//!               nullability and list item names may differ, real type conflicts are errors)
//! ```

pub mod partition;
pub mod schema;

pub use partition::{
    discover_partitions, parse_hive_path, partition_arrays, partition_leaves, partition_verdict,
    PartitionSchema, PartitionValue, Partitions,
};
pub use schema::{unify, UnifiedSchema};
