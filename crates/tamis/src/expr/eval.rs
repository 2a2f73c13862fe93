//! Leaf evaluation on decoded values.
