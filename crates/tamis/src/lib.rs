//! tamis — a Parquet scan engine that pushes predicates down through every level of storage.
//!
//! ```text
//! expr/      SQL → bound predicate (negation normal form)
//! prune/     row groups by statistics, Bloom filters, dictionaries; pages by the page index
//! dataset/   multi-file datasets: hive partitions, schema unification across files
//! column/    page fetching (only pages with live rows), levels, filter and projection per chunk
//! encoding/  our decoders over decompressed page bytes, one module per Parquet encoding
//! scan/      the sequencer: row groups in parallel, batches streamed in file order;
//!            filter ordering by the cost model, OR/NOT by De Morgan (scan/order.rs)
//! arrow.rs   survivors → Arrow arrays
//! optimize/  rewrite files for pushdown: page index, sized Bloom filters, sort order
//! index/     sidecar indexes beside existing files (Puffin): page-level Bloom filters
//! ```
//!
//! Start with [`Scan`].
pub mod arrow;
pub mod budget;
pub mod column;
pub mod dataset;
pub mod encoding;
pub mod error;
pub mod expr;
pub mod index;
pub mod io;
pub mod kernels;
pub mod levels;
pub mod metrics;
pub mod optimize;
pub mod prune;
pub mod scan;
pub mod schema;
pub mod selection;
pub mod values;

pub use column::adapt::Evaluation;
pub use dataset::Dataset;
pub use error::{Error, ErrorKind, Result};
pub use metrics::{FilterStep, ScanMetrics};
pub use scan::order::FilterOrder;
pub use scan::{BrokenIndex, Canceller, Pruning, Scan, ScanStream};
