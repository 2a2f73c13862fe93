//! Predicates: SQL text or a built [`Expr`] → bound, normalized predicate tree → evaluation.
//!
//! ```text
//! "a > 5 AND NOT (b LIKE 'x%' OR c IS NULL)"
//!    └─ parse.rs   sqlparser → unbound tree (tree.rs: `Expr`, also built directly by programs)
//!    └─ bind.rs    bind names to one file's leaf columns, convert literals into each column's
//!                  Domain, push NOT down to the leaves (NNF, De Morgan), BETWEEN → two
//!                  comparisons, fold constants
//!         → Predicate::And([Leaf(a > 5), Leaf(b NOT LIKE 'x%'), Leaf(c IS NOT NULL)])
//!    └─ eval.rs    a leaf on dense decoded values (a page, or a dictionary once) → Bitmap
//!    └─ like.rs    LIKE patterns compiled to prefix / suffix / contains / general matchers
//!    └─ render.rs  bound predicate → SQL text for explain output
//! ```
//!
//! Because NOT sits only on leaves (absorbed into each leaf's operator), the tree is monotone:
//! evaluating every leaf to true/false with SQL's unknown (NULL) mapped to false gives exactly the
//! rows whose three-valued result is TRUE. A NULL value satisfies no leaf except `IS NULL`.

pub(crate) mod bind;
pub(crate) mod compare;
pub(crate) mod eval;
pub(crate) mod key_filter;
pub(crate) mod like;
mod literal;
pub(crate) mod parse;
pub(crate) mod render;
pub(crate) mod tree;
pub(crate) mod verdict;

use std::cmp::Ordering;

use crate::error::Result;

pub use bind::bind;
pub use key_filter::KeyFilter;
pub use like::LikePattern;
pub(crate) use literal::{instant_micros, parse_f64, parse_number, parse_timestamp};
pub use parse::{parse, MAX_BOOLEAN_OPERATORS};
pub use tree::{col, lit, Column, Expr, Literal};
pub use verdict::Verdict;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `<>` (also `!=`)
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
}

impl CmpOp {
    /// The operator that holds exactly when this one does not (for non-null operands).
    pub fn negate(self) -> CmpOp {
        match self {
            CmpOp::Eq => CmpOp::NotEq,
            CmpOp::NotEq => CmpOp::Eq,
            CmpOp::Lt => CmpOp::GtEq,
            CmpOp::LtEq => CmpOp::Gt,
            CmpOp::Gt => CmpOp::LtEq,
            CmpOp::GtEq => CmpOp::Lt,
        }
    }
    /// `a op b` ⇔ `b op.flip() a`.
    pub fn flip(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::LtEq => CmpOp::GtEq,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::GtEq => CmpOp::LtEq,
            other => other,
        }
    }
    /// Whether `ord` (value compared to literal) satisfies the operator.
    #[inline]
    pub fn holds(self, ord: Ordering) -> bool {
        match self {
            CmpOp::Eq => ord == Ordering::Equal,
            CmpOp::NotEq => ord != Ordering::Equal,
            CmpOp::Lt => ord == Ordering::Less,
            CmpOp::LtEq => ord != Ordering::Greater,
            CmpOp::Gt => ord == Ordering::Greater,
            CmpOp::GtEq => ord != Ordering::Less,
        }
    }
    /// The operator as SQL writes it (`<>` for [`CmpOp::NotEq`]).
    pub fn sql(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::NotEq => "<>",
            CmpOp::Lt => "<",
            CmpOp::LtEq => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtEq => ">=",
        }
    }
}

/// A literal converted into a column's `Domain`.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// Domain::Bool.
    Bool(bool),
    /// Domain::Int: signed ints, dates (days), times and timestamps (column unit), decimals on
    /// INT32/INT64 (unscaled).
    Int(i64),
    /// Domain::UInt.
    UInt(u64),
    /// Domain::Float.
    Float(f64),
    /// Domain::Decimal: unscaled value of a FIXED_LEN_BYTE_ARRAY / BYTE_ARRAY decimal.
    Decimal(i128),
    /// Domain::Bytes.
    Bytes(Vec<u8>),
}

/// Total order on floats used by every comparison in tamis (DuckDB's semantics): NaN is greater
/// than every other value and equal to itself; -0.0 equals 0.0.
#[inline]
pub fn cmp_f64(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
    }
}

impl Scalar {
    /// Compares two scalars of the same domain; `None` if the domains differ.
    pub fn compare(&self, other: &Scalar) -> Option<Ordering> {
        Some(match (self, other) {
            (Scalar::Bool(a), Scalar::Bool(b)) => a.cmp(b),
            (Scalar::Int(a), Scalar::Int(b)) => a.cmp(b),
            (Scalar::UInt(a), Scalar::UInt(b)) => a.cmp(b),
            (Scalar::Float(a), Scalar::Float(b)) => cmp_f64(*a, *b),
            (Scalar::Decimal(a), Scalar::Decimal(b)) => a.cmp(b),
            (Scalar::Bytes(a), Scalar::Bytes(b)) => a.as_slice().cmp(b.as_slice()),
            _ => return None,
        })
    }
}

/// What a leaf tests about its column's value.
#[derive(Debug, Clone, PartialEq)]
pub enum LeafOp {
    /// `column op literal`
    Cmp(CmpOp, Scalar),
    /// `column [NOT] IN (…)`; the list holds no NULL (binding folds those away).
    In {
        /// The candidates, in the column's domain.
        values: Vec<Scalar>,
        /// `NOT IN`.
        negated: bool,
    },
    /// `column IS [NOT] NULL`
    IsNull {
        /// `IS NOT NULL`.
        negated: bool,
    },
    /// `column [NOT] LIKE pattern` (Domain::Bytes only)
    Like {
        /// The compiled pattern.
        pattern: LikePattern,
        /// `NOT LIKE`.
        negated: bool,
    },
    /// `column` may be one of a join's keys ([`KeyFilter`]; Domain::Int / UInt / Bytes). A
    /// superset test: true for every key and for a few other values, so a predicate holding
    /// it selects a superset of the rows that join (the join removes the rest).
    InKeys(std::sync::Arc<KeyFilter>),
}

impl LeafOp {
    /// Whether a NULL value satisfies this leaf (only `IS NULL` does).
    pub fn accepts_null(&self) -> bool {
        matches!(self, LeafOp::IsNull { negated: false })
    }
}

/// A predicate on one leaf column.
#[derive(Debug, Clone, PartialEq)]
pub struct Leaf {
    /// Leaf column index (see `index`).
    pub column: usize,
    /// What it tests (NOT already absorbed into it).
    pub op: LeafOp,
}

/// A bound predicate in negation normal form.
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// Every row.
    True,
    /// No row.
    False,
    /// A test on one column.
    Leaf(Leaf),
    /// A comparison between columns (or with arithmetic), evaluated row by row.
    Compare(std::sync::Arc<compare::Comparison>),
    /// Rows satisfying every child.
    And(Vec<Predicate>),
    /// Rows satisfying any child.
    Or(Vec<Predicate>),
}

impl Predicate {
    /// Leaf column indices this predicate reads, ascending, without duplicates.
    pub fn columns(&self) -> Vec<usize> {
        let mut out = Vec::new();
        self.visit_leaves(&mut |l| out.push(l.column));
        self.visit_comparisons(&mut |c| out.extend(c.columns()));
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Every single-column leaf (comparisons between columns are not leaves).
    pub fn visit_leaves(&self, f: &mut impl FnMut(&Leaf)) {
        match self {
            Predicate::Leaf(l) => f(l),
            Predicate::And(c) | Predicate::Or(c) => c.iter().for_each(|p| p.visit_leaves(f)),
            Predicate::True | Predicate::False | Predicate::Compare(_) => {}
        }
    }

    /// Every comparison between columns.
    pub fn visit_comparisons(&self, f: &mut impl FnMut(&compare::Comparison)) {
        match self {
            Predicate::Compare(c) => f(c),
            Predicate::And(c) | Predicate::Or(c) => c.iter().for_each(|p| p.visit_comparisons(f)),
            Predicate::True | Predicate::False | Predicate::Leaf(_) => {}
        }
    }

    /// Three-valued verdict of the tree from a verdict per leaf.
    pub fn verdict(&self, leaf: &mut impl FnMut(&Leaf) -> Verdict) -> Verdict {
        match self {
            Predicate::True => Verdict::AllMatch,
            Predicate::False => Verdict::NoneMatch,
            Predicate::Leaf(l) => leaf(l),
            // Metadata of one column says nothing about how two compare.
            Predicate::Compare(_) => Verdict::Unknown,
            Predicate::And(c) => c
                .iter()
                .fold(Verdict::AllMatch, |acc, p| acc.and(p.verdict(leaf))),
            Predicate::Or(c) => c
                .iter()
                .fold(Verdict::NoneMatch, |acc, p| acc.or(p.verdict(leaf))),
        }
    }
}

impl Predicate {
    /// Each comparison between columns replaced by `f` of it (the tree is not simplified).
    pub fn map_comparisons(
        &self,
        f: &mut impl FnMut(&compare::Comparison) -> crate::error::Result<Predicate>,
    ) -> crate::error::Result<Predicate> {
        Ok(match self {
            Predicate::Compare(c) => f(c)?,
            Predicate::And(c) => Predicate::And(
                c.iter()
                    .map(|p| p.map_comparisons(f))
                    .collect::<crate::error::Result<_>>()?,
            ),
            Predicate::Or(c) => Predicate::Or(
                c.iter()
                    .map(|p| p.map_comparisons(f))
                    .collect::<crate::error::Result<_>>()?,
            ),
            Predicate::True | Predicate::False | Predicate::Leaf(_) => self.clone(),
        })
    }

    /// Replaces leaves with a definite verdict by `True` / `False` and folds constants.
    pub fn simplify(&self, leaf: &mut impl FnMut(&Leaf) -> Verdict) -> Predicate {
        match self {
            Predicate::True | Predicate::False | Predicate::Compare(_) => self.clone(),
            Predicate::Leaf(l) => match leaf(l) {
                Verdict::AllMatch => Predicate::True,
                Verdict::NoneMatch => Predicate::False,
                Verdict::Unknown => self.clone(),
            },
            Predicate::And(children) => {
                let mut kept = Vec::new();
                for c in children {
                    match c.simplify(leaf) {
                        Predicate::False => return Predicate::False,
                        Predicate::True => {}
                        Predicate::And(inner) => kept.extend(inner),
                        other => kept.push(other),
                    }
                }
                match kept.len() {
                    0 => Predicate::True,
                    1 => kept.pop().expect("one element"),
                    _ => Predicate::And(kept),
                }
            }
            Predicate::Or(children) => {
                let mut kept = Vec::new();
                for c in children {
                    match c.simplify(leaf) {
                        Predicate::True => return Predicate::True,
                        Predicate::False => {}
                        Predicate::Or(inner) => kept.extend(inner),
                        other => kept.push(other),
                    }
                }
                match kept.len() {
                    0 => Predicate::False,
                    1 => kept.pop().expect("one element"),
                    _ => Predicate::Or(kept),
                }
            }
        }
    }
}

/// One physical value, borrowed (from statistics, a page index or decoded values).
#[derive(Debug, Clone, Copy)]
pub enum PhysicalRef<'a> {
    /// BOOLEAN.
    Bool(bool),
    /// INT32 (also narrower integers, dates, decimals and times in milliseconds).
    I32(i32),
    /// INT64.
    I64(i64),
    /// FLOAT.
    F32(f32),
    /// DOUBLE.
    F64(f64),
    /// BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY.
    Bytes(&'a [u8]),
}

/// Sign-extends a big-endian two's complement integer of at most 16 bytes.
pub fn i128_from_be(bytes: &[u8]) -> Option<i128> {
    if bytes.is_empty() {
        return Some(0);
    }
    if bytes.len() > 16 {
        // Allowed only if the extra leading bytes are pure sign extension.
        let (head, tail) = bytes.split_at(bytes.len() - 16);
        let sign = if tail[0] & 0x80 != 0 { 0xff } else { 0 };
        if head.iter().any(|&b| b != sign) {
            return None;
        }
        return i128_from_be(tail);
    }
    let mut buf = if bytes[0] & 0x80 != 0 {
        [0xffu8; 16]
    } else {
        [0u8; 16]
    };
    buf[16 - bytes.len()..].copy_from_slice(bytes);
    Some(i128::from_be_bytes(buf))
}

/// Converts a physical value of `column` into its domain; `None` if it has no domain value (an
/// unfilterable type, or a malformed value such as a FLOAT16 of the wrong width).
pub fn to_scalar(column: &crate::schema::LeafColumn, v: PhysicalRef<'_>) -> Option<Scalar> {
    use crate::schema::{Domain, LogicalKind};
    Some(match (column.domain(), v) {
        (Domain::Bool, PhysicalRef::Bool(b)) => Scalar::Bool(b),
        (Domain::Int, PhysicalRef::I32(x)) => Scalar::Int(x as i64),
        (Domain::Int, PhysicalRef::I64(x)) => Scalar::Int(x),
        (Domain::UInt, PhysicalRef::I32(x)) => Scalar::UInt(x as u32 as u64),
        (Domain::UInt, PhysicalRef::I64(x)) => Scalar::UInt(x as u64),
        (Domain::Float, PhysicalRef::F32(x)) => Scalar::Float(x as f64),
        (Domain::Float, PhysicalRef::F64(x)) => Scalar::Float(x),
        (Domain::Float, PhysicalRef::Bytes(b)) if column.logical == LogicalKind::Float16 => {
            let bytes: [u8; 2] = b.try_into().ok()?;
            Scalar::Float(half::f16::from_le_bytes(bytes).to_f64())
        }
        (Domain::Decimal, PhysicalRef::Bytes(b)) => Scalar::Decimal(i128_from_be(b)?),
        (Domain::Bytes, PhysicalRef::Bytes(b)) => Scalar::Bytes(b.to_vec()),
        _ => return None,
    })
}

/// Parses `text` (a SQL boolean expression) and binds it to `columns`.
pub fn parse_predicate(text: &str, columns: &[crate::schema::LeafColumn]) -> Result<Predicate> {
    bind::bind(&parse::parse(text)?, columns)
}

/// A predicate implied by `text` that names only `columns` (see `bind_implied`);
/// `None` when nothing is left or the text does not parse. Used to prune a dataset's files by
/// partition values before any footer is read, when the files' own columns are not known yet.
pub fn parse_implied(text: &str, columns: &[crate::schema::LeafColumn]) -> Option<Predicate> {
    bind::bind_implied(&parse::parse(text).ok()?, columns)
}

#[cfg(test)]
pub(crate) mod tests;
