//! tamis — a Parquet scan engine that pushes predicates down through every level of storage.
//!
//! The modules are layers, top to bottom; each uses only those below it (`tests/layers.rs`
//! keeps it so), and the folders follow the data's path:
//!
//! ```text
//! optimize/  rewrite files for pushdown: page index, sized Bloom filters, sort order
//! scan/      the sequencer: the builder, row groups in parallel, batches streamed in file
//!            order; per row group the pruning levels (pruning.rs), every byte range fetched
//!            (io_plan.rs), then filter and project (row_group.rs), filters ordered by the
//!            cost model (order.rs)
//! dataset/   many files: listing, hive partitions (pruning files), schema unification, the
//!            open-file cache
//! index/     sidecar indexes beside existing files (Puffin): page Bloom filters, rows index
//! column/    a column chunk's pages: fetch (only pages with live rows), filter, project, and
//!            the survivors as Arrow arrays (arrays.rs)
//! prune/     one interface for every pruning level (level.rs); row groups by statistics,
//!            Bloom filters, dictionaries; pages by the page index
//! levels.rs  definition and repetition levels
//! encoding/  our decoders over decompressed page bytes, one module per Parquet encoding
//! expr/      predicates: SQL → Expr → bound Predicate (negation normal form), evaluation
//! file/      an opened Parquet file: footer, page indexes, page headers, the Thrift guard
//! schema.rs  leaf columns and their value domains
//! cache/     the page cache: decompressed pages kept across scans, keyed by file identity
//! io/        byte sources (local files, object stores), listings, a scan's counted reader
//! metrics.rs, budget.rs, values.rs, selection.rs   what a scan did, memory, values, bitmaps
//! kernels/   bit-parallel select, gathers: BMI2 / AVX-512 / portable, dispatched at run time
//! error/     the error type; panics of third-party decoders caught as errors
//! ```
//!
//! Start with [`Scan`]:
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use arrow::array::{Int64Array, RecordBatch, StringArray};
//! use arrow::datatypes::{DataType, Field, Schema};
//!
//! // A small file: ids 0..1000, every third row 'AIR'.
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("orders.parquet");
//! let schema = Arc::new(Schema::new(vec![
//!     Field::new("id", DataType::Int64, false),
//!     Field::new("mode", DataType::Utf8, false),
//! ]));
//! let ids = Int64Array::from_iter_values(0..1000);
//! let modes = StringArray::from_iter_values((0..1000).map(|i| if i % 3 == 0 { "AIR" } else { "RAIL" }));
//! let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(ids), Arc::new(modes)])?;
//! let mut writer = parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&path)?, schema, None)?;
//! writer.write(&batch)?;
//! writer.close()?;
//!
//! // The predicate is evaluated on the encoded pages; only the selected ids are decoded.
//! let mut stream = tamis::Scan::open(path.to_str().unwrap())?
//!     .filter("mode = 'AIR' AND id < 30")?
//!     .select(&["id"])?
//!     .batches()?;
//! let mut ids = Vec::new();
//! for batch in &mut stream {
//!     let batch = batch?;
//!     let column = batch.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
//!     ids.extend(column.values().iter().copied());
//! }
//! assert_eq!(ids, [0, 3, 6, 9, 12, 15, 18, 21, 24, 27]);
//! assert_eq!(stream.metrics().rows_selected, 10);
//! # Ok(()) }
//! ```
//!
//! The public API: [`Scan`] and [`Dataset`] (what to read), [`expr`] (predicates, as SQL text or
//! built), [`ScanMetrics`] (what a scan did), [`Error`], [`optimize`] (rewriting files for
//! pushdown), [`index`] (sidecar indexes) and [`io`] (object-store options and sources).
//! Modules marked hidden are public only for tamis's own crates (the fuzzer, the benchmarks,
//! the CLI's `kernels` command) and may change at any time.
#![warn(unreachable_pub, missing_docs)]
pub mod cache;
pub mod dataset;
pub mod expr;
#[doc(hidden)]
pub mod file;
pub mod index;
pub mod io;
pub mod optimize;
pub(crate) mod scan;
pub mod table;

#[doc(hidden)]
pub mod budget;
#[doc(hidden)]
pub mod encoding;
#[doc(hidden)]
pub mod kernels;
#[doc(hidden)]
pub mod selection;
#[doc(hidden)]
pub mod values;

pub(crate) mod column;
pub(crate) mod error;
pub(crate) mod levels;
pub(crate) mod metrics;
pub(crate) mod prune;
pub(crate) mod schema;

pub use column::adapt::Evaluation;
pub use dataset::{Dataset, DatasetLocation};
pub use error::{Error, ErrorKind, Result};
pub use index::BrokenIndex;
pub use metrics::{FilterStep, ScanMetrics};
pub use scan::order::FilterOrder;
pub use scan::{Canceller, Pruning, RowGroupParts, Scan, ScanPart, ScanStream};
