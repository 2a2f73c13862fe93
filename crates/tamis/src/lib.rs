//! tamis — a Parquet scan engine that pushes predicates down through every level of storage.
pub mod error;
pub mod expr;
pub mod metrics;
pub mod schema;
pub mod selection;
pub mod values;

pub use error::{Error, ErrorKind, Result};
