//! Multi-file datasets, the pure part: no I/O here, only what the paths and the files' schemas
//! say.
//!
//! ```text
//! partition.rs  `key=value` directories → partition schema, typed values per file, constant
//!               Arrow columns, and pruning of whole files by the predicate on those values
//! ```

pub mod partition;

pub use partition::{
    discover_partitions, parse_hive_path, partition_arrays, partition_leaves, partition_verdict,
    PartitionSchema, PartitionValue, Partitions,
};
