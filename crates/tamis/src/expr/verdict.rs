//! Three-valued answers of the pruning levels.

/// What a piece of evidence (statistics, a Bloom filter, a dictionary, a page index) proves
/// about a predicate over a set of rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// No row can satisfy it: skip the rows.
    NoneMatch,
    /// Every row satisfies it: no need to evaluate.
    AllMatch,
    /// Rows must be evaluated.
    Unknown,
}

impl Verdict {
    /// The verdict of `a AND b` from those of `a` and `b` (over the same rows).
    pub fn and(self, other: Verdict) -> Verdict {
        match (self, other) {
            (Verdict::NoneMatch, _) | (_, Verdict::NoneMatch) => Verdict::NoneMatch,
            (Verdict::AllMatch, Verdict::AllMatch) => Verdict::AllMatch,
            _ => Verdict::Unknown,
        }
    }
    /// The verdict of `a OR b` from those of `a` and `b` (over the same rows).
    pub fn or(self, other: Verdict) -> Verdict {
        match (self, other) {
            (Verdict::AllMatch, _) | (_, Verdict::AllMatch) => Verdict::AllMatch,
            (Verdict::NoneMatch, Verdict::NoneMatch) => Verdict::NoneMatch,
            _ => Verdict::Unknown,
        }
    }
}
