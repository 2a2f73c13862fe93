//! SQL text → bound predicate.
