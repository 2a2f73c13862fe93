//! SQL LIKE patterns (to be completed: see helper task).

/// A compiled LIKE pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct LikePattern {
    pub pattern: String,
}
