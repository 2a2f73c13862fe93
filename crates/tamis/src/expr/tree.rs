//! The unbound predicate tree: what a filter says, before it meets a file's columns.
//!
//! SQL text parses into it ([`super::parse`]); programs build it directly (the DataFusion
//! provider converts DataFusion's expressions into it). One binder ([`super::bind`]) turns it
//! into a [`super::Predicate`] for each file's own leaves, so every filter, however it was
//! written, gets the same literal coercions and NULL semantics.
//!
//! ```
//! use tamis::expr::{col, lit, Literal};
//! use chrono::NaiveDate;
//!
//! // l_shipdate >= DATE '1994-01-01' AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24
//! let day = NaiveDate::from_ymd_opt(1994, 1, 1).unwrap();
//! let e = col("l_shipdate")
//!     .gt_eq(lit(day))
//!     .and(col("l_discount").between(Literal::number("0.05")?, Literal::number("0.07")?))
//!     .and(col("l_quantity").lt(lit(24i64)));
//! assert_eq!(
//!     e.to_string(),
//!     "l_shipdate >= DATE '1994-01-01' AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24"
//! );
//! # Ok::<(), tamis::Error>(())
//! ```

use std::fmt;

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};

use super::CmpOp;
use crate::error::{Error, ErrorKind, Result};

/// A column named by a filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Dotted leaf path (`a` or `group.field`).
    pub path: String,
    /// Match the path exactly; otherwise an exact match wins, then a unique case-insensitive
    /// one (SQL's unquoted identifiers).
    pub exact: bool,
}

/// A typed literal, before conversion into a column's domain (the binder does that exactly).
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// SQL's NULL: a comparison with it is never true.
    Null,
    /// `TRUE` or `FALSE`.
    Bool(bool),
    /// A number given exactly, as decimal text with optional sign and exponent (`-1.5e3`):
    /// compared with integer and decimal columns without rounding.
    Number(String),
    /// A floating-point value (NaN and infinities included).
    Float(f64),
    /// Text: its UTF-8 bytes for string and binary columns; parsed for the others (`'1994-01-01'`
    /// for a date column, `'true'` for a boolean one).
    String(String),
    /// Bytes (`X'0AFF'` in SQL), for binary (not string) columns.
    Binary(Vec<u8>),
    /// A calendar date (`DATE '1994-01-01'`).
    Date(NaiveDate),
    /// A date-time and its UTC offset in seconds; `None`: without time zone (read as UTC for
    /// UTC-adjusted columns, as wall clock for local ones).
    Timestamp(NaiveDateTime, Option<i32>),
    /// A time of day (`TIME '12:30:00'`).
    Time(NaiveTime),
}

impl Literal {
    /// An exact number from its decimal text; an error if `text` is not a plain number.
    pub fn number(text: &str) -> Result<Literal> {
        match super::literal::parse_number(text) {
            Some(_) => Ok(Literal::Number(text.trim().to_string())),
            None => Err(Error::invalid(format!("`{text}` is not a number"))),
        }
    }

    /// The decimal `unscaled × 10^-scale`, exactly.
    pub fn decimal(unscaled: i128, scale: i8) -> Literal {
        Literal::Number(format!("{unscaled}e{}", -(scale as i32)))
    }

    /// The kind of literal, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Literal::Null => "NULL",
            Literal::Bool(_) => "a boolean",
            Literal::Number(_) | Literal::Float(_) => "a number",
            Literal::String(_) => "a string",
            Literal::Binary(_) => "a hex string",
            Literal::Date(_) => "a date",
            Literal::Timestamp(..) => "a timestamp",
            Literal::Time(_) => "a time",
        }
    }
}

macro_rules! literal_from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Literal {
            fn from(v: $t) -> Literal {
                Literal::Number(v.to_string())
            }
        }
    )*};
}
literal_from_int!(i8, i16, i32, i64, i128, u8, u16, u32, u64);

impl From<f64> for Literal {
    fn from(v: f64) -> Literal {
        Literal::Float(v)
    }
}
impl From<f32> for Literal {
    fn from(v: f32) -> Literal {
        Literal::Float(v as f64)
    }
}
impl From<bool> for Literal {
    fn from(v: bool) -> Literal {
        Literal::Bool(v)
    }
}
impl From<&str> for Literal {
    fn from(v: &str) -> Literal {
        Literal::String(v.to_string())
    }
}
impl From<String> for Literal {
    fn from(v: String) -> Literal {
        Literal::String(v)
    }
}
impl From<Vec<u8>> for Literal {
    fn from(v: Vec<u8>) -> Literal {
        Literal::Binary(v)
    }
}
impl From<NaiveDate> for Literal {
    fn from(v: NaiveDate) -> Literal {
        Literal::Date(v)
    }
}
impl From<NaiveDateTime> for Literal {
    fn from(v: NaiveDateTime) -> Literal {
        Literal::Timestamp(v, None)
    }
}
impl From<NaiveTime> for Literal {
    fn from(v: NaiveTime) -> Literal {
        Literal::Time(v)
    }
}

/// An unbound boolean expression over columns and literals.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A column's value.
    Column(Column),
    /// A constant.
    Literal(Literal),
    /// `left op right`: a column and a literal, or (see `compare`) columns,
    /// literals and arithmetic on both sides.
    Compare(Box<Expr>, CmpOp, Box<Expr>),
    /// `left + right`, `left - right`, `left * right` on numbers (inside a comparison).
    Arith(Box<Expr>, crate::expr::compare::ArithOp, Box<Expr>),
    /// `left AND right`
    And(Box<Expr>, Box<Expr>),
    /// `left OR right`
    Or(Box<Expr>, Box<Expr>),
    /// `NOT expr` (binding pushes it down to the leaves).
    Not(Box<Expr>),
    /// `expr IS [NOT] NULL`
    IsNull {
        /// The tested expression (a column).
        expr: Box<Expr>,
        /// `IS NOT NULL`.
        negated: bool,
    },
    /// `expr IS [NOT] TRUE` / `expr IS [NOT] FALSE`
    IsBool {
        /// The tested expression (a boolean column).
        expr: Box<Expr>,
        /// `TRUE` or `FALSE`.
        value: bool,
        /// `IS NOT`: a NULL value passes.
        negated: bool,
    },
    /// `expr [NOT] IN (list…)`
    InList {
        /// The tested expression (a column).
        expr: Box<Expr>,
        /// The candidates (literals).
        list: Vec<Expr>,
        /// `NOT IN`.
        negated: bool,
    },
    /// `expr` may be one of a join's keys: a Bloom filter test that passes every key and a
    /// few other values ([`crate::expr::KeyFilter`]). A filter holding it selects a superset
    /// of the exact rows; under NOT it binds to TRUE (the complement of a superset would drop
    /// rows).
    InKeys {
        /// The tested expression (a column of integers or byte strings).
        expr: Box<Expr>,
        /// The join's keys; shared, with its run-time counts, by every scan probing it.
        filter: std::sync::Arc<crate::expr::KeyFilter>,
    },
    /// `expr [NOT] BETWEEN low AND high`
    Between {
        /// The tested expression.
        expr: Box<Expr>,
        /// Lower bound, inclusive.
        low: Box<Expr>,
        /// Upper bound, inclusive.
        high: Box<Expr>,
        /// `NOT BETWEEN`.
        negated: bool,
    },
    /// `expr [NOT] LIKE pattern [ESCAPE escape]`
    Like {
        /// The tested expression (a string or binary column).
        expr: Box<Expr>,
        /// The pattern (a string literal): `%` any run, `_` any one character.
        pattern: Box<Expr>,
        /// The escape character (a one-character string literal); `None`: no escape.
        escape: Option<Box<Expr>>,
        /// `NOT LIKE`.
        negated: bool,
    },
    /// Something the source language has and tamis does not evaluate (a function call,
    /// arithmetic…): `kind` names it and `text` shows it; binding reports it as unsupported.
    Unsupported {
        /// What it is, for the message (`"function call"`, `"subquery"`…).
        kind: String,
        /// The source text of it.
        text: String,
    },
    /// A literal the source wrote but that is invalid (`DATE '2020-13-01'`); binding reports
    /// the error, so a part of a filter that is dropped (see [`super::parse_implied`])
    /// does not fail the whole.
    Invalid {
        /// The kind of the error binding reports.
        kind: ErrorKind,
        /// Its message.
        message: String,
    },
}

/// A column, matched exactly.
pub fn col(path: impl Into<String>) -> Expr {
    Expr::Column(Column {
        path: path.into(),
        exact: true,
    })
}

/// A literal: `lit(5i64)`, `lit("x")`, `lit(NaiveDate)`, `lit(Literal::Null)`.
pub fn lit(v: impl Into<Literal>) -> Expr {
    Expr::Literal(v.into())
}

impl From<Literal> for Expr {
    fn from(l: Literal) -> Expr {
        Expr::Literal(l)
    }
}

impl Expr {
    fn arith(self, op: crate::expr::compare::ArithOp, other: impl Into<Expr>) -> Expr {
        Expr::Arith(Box::new(self), op, Box::new(other.into()))
    }
    /// `self + other` (numbers).
    pub fn plus(self, other: impl Into<Expr>) -> Expr {
        self.arith(crate::expr::compare::ArithOp::Add, other)
    }
    /// `self - other` (numbers).
    pub fn minus(self, other: impl Into<Expr>) -> Expr {
        self.arith(crate::expr::compare::ArithOp::Sub, other)
    }
    /// `self * other` (numbers).
    pub fn times(self, other: impl Into<Expr>) -> Expr {
        self.arith(crate::expr::compare::ArithOp::Mul, other)
    }
    fn cmp(self, op: CmpOp, other: impl Into<Expr>) -> Expr {
        Expr::Compare(Box::new(self), op, Box::new(other.into()))
    }
    /// `self = other`.
    pub fn eq(self, other: impl Into<Expr>) -> Expr {
        self.cmp(CmpOp::Eq, other)
    }
    /// `self <> other`.
    pub fn not_eq(self, other: impl Into<Expr>) -> Expr {
        self.cmp(CmpOp::NotEq, other)
    }
    /// `self < other`.
    pub fn lt(self, other: impl Into<Expr>) -> Expr {
        self.cmp(CmpOp::Lt, other)
    }
    /// `self <= other`.
    pub fn lt_eq(self, other: impl Into<Expr>) -> Expr {
        self.cmp(CmpOp::LtEq, other)
    }
    /// `self > other`.
    pub fn gt(self, other: impl Into<Expr>) -> Expr {
        self.cmp(CmpOp::Gt, other)
    }
    /// `self >= other`.
    pub fn gt_eq(self, other: impl Into<Expr>) -> Expr {
        self.cmp(CmpOp::GtEq, other)
    }
    /// `self AND other`.
    pub fn and(self, other: Expr) -> Expr {
        Expr::And(Box::new(self), Box::new(other))
    }
    /// `self OR other`.
    pub fn or(self, other: Expr) -> Expr {
        Expr::Or(Box::new(self), Box::new(other))
    }
    /// `NOT self`.
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Expr {
        Expr::Not(Box::new(self))
    }
    /// `self IS NULL`.
    pub fn is_null(self) -> Expr {
        Expr::IsNull {
            expr: Box::new(self),
            negated: false,
        }
    }
    /// `self IS NOT NULL`.
    pub fn is_not_null(self) -> Expr {
        Expr::IsNull {
            expr: Box::new(self),
            negated: true,
        }
    }
    /// `self IN (list…)`, or `self NOT IN (list…)` when `negated`.
    pub fn in_list<L: Into<Expr>>(self, list: impl IntoIterator<Item = L>, negated: bool) -> Expr {
        Expr::InList {
            expr: Box::new(self),
            list: list.into_iter().map(Into::into).collect(),
            negated,
        }
    }
    /// `self` may be one of the keys in `filter` (see [`Expr::InKeys`]).
    pub fn in_keys(self, filter: std::sync::Arc<crate::expr::KeyFilter>) -> Expr {
        Expr::InKeys {
            expr: Box::new(self),
            filter,
        }
    }
    /// `self BETWEEN low AND high` (both bounds inclusive).
    pub fn between(self, low: impl Into<Expr>, high: impl Into<Expr>) -> Expr {
        Expr::Between {
            expr: Box::new(self),
            low: Box::new(low.into()),
            high: Box::new(high.into()),
            negated: false,
        }
    }
    /// `self NOT BETWEEN low AND high`.
    pub fn not_between(self, low: impl Into<Expr>, high: impl Into<Expr>) -> Expr {
        Expr::Between {
            expr: Box::new(self),
            low: Box::new(low.into()),
            high: Box::new(high.into()),
            negated: true,
        }
    }
    /// `self LIKE pattern` (`%` any run, `_` any one character; no escape).
    pub fn like(self, pattern: &str) -> Expr {
        Expr::Like {
            expr: Box::new(self),
            pattern: Box::new(lit(pattern)),
            escape: None,
            negated: false,
        }
    }
    /// `self NOT LIKE pattern`.
    pub fn not_like(self, pattern: &str) -> Expr {
        Expr::Like {
            expr: Box::new(self),
            pattern: Box::new(lit(pattern)),
            escape: None,
            negated: true,
        }
    }

    /// The conjunction of `parts` (`TRUE` when empty).
    pub fn all(parts: impl IntoIterator<Item = Expr>) -> Expr {
        parts
            .into_iter()
            .reduce(Expr::and)
            .unwrap_or(Expr::Literal(Literal::Bool(true)))
    }

    /// Whether the node prints without parentheses as an operand.
    fn atomic(&self) -> bool {
        matches!(
            self,
            Expr::Column(_) | Expr::Literal(_) | Expr::Unsupported { .. } | Expr::Invalid { .. }
        )
    }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Null => write!(f, "NULL"),
            Literal::Bool(b) => write!(f, "{}", if *b { "TRUE" } else { "FALSE" }),
            Literal::Number(n) => write!(f, "{n}"),
            Literal::Float(x) if x.is_finite() => write!(f, "{x:?}"),
            Literal::Float(x) => write!(f, "CAST('{x}' AS DOUBLE)"),
            Literal::String(s) => write!(f, "{}", quote(s)),
            Literal::Binary(b) => {
                write!(f, "X'")?;
                b.iter().try_for_each(|x| write!(f, "{x:02X}"))?;
                write!(f, "'")
            }
            Literal::Date(d) => write!(f, "DATE '{d}'"),
            Literal::Timestamp(t, None) => {
                write!(f, "TIMESTAMP '{}'", t.format("%Y-%m-%d %H:%M:%S%.f"))
            }
            Literal::Timestamp(t, Some(off)) => {
                let sign = if *off < 0 { '-' } else { '+' };
                let a = off.unsigned_abs();
                write!(
                    f,
                    "TIMESTAMPTZ '{}{sign}{:02}:{:02}'",
                    t.format("%Y-%m-%d %H:%M:%S%.f"),
                    a / 3600,
                    a % 3600 / 60
                )
            }
            Literal::Time(t) => write!(f, "TIME '{}'", t.format("%H:%M:%S%.f")),
        }
    }
}

impl fmt::Display for Column {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plain = self.path.split('.').all(|p| {
            !p.is_empty()
                && !p.starts_with(|c: char| c.is_ascii_digit())
                && p.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        });
        if plain || !self.exact {
            write!(f, "{}", self.path)
        } else {
            write!(f, "\"{}\"", self.path.replace('"', "\"\""))
        }
    }
}

/// SQL text of the tree (parseable back where every node is supported).
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Operands of comparisons and predicates: parenthesised unless atomic.
        let operand = |e: &Expr| {
            if e.atomic() {
                e.to_string()
            } else {
                format!("({e})")
            }
        };
        let not = |n: bool| if n { "NOT " } else { "" };
        match self {
            Expr::Column(c) => write!(f, "{c}"),
            Expr::Literal(l) => write!(f, "{l}"),
            Expr::Compare(l, op, r) => write!(f, "{} {} {}", operand(l), op.sql(), operand(r)),
            Expr::Arith(l, op, r) => write!(f, "{} {} {}", operand(l), op.sql(), operand(r)),
            Expr::And(l, r) => {
                let side = |e: &Expr| match e {
                    Expr::Or(..) => format!("({e})"),
                    _ => e.to_string(),
                };
                write!(f, "{} AND {}", side(l), side(r))
            }
            Expr::Or(l, r) => write!(f, "{l} OR {r}"),
            Expr::Not(e) => write!(f, "NOT {}", operand(e)),
            Expr::IsNull { expr, negated } => {
                write!(f, "{} IS {}NULL", operand(expr), not(*negated))
            }
            Expr::IsBool {
                expr,
                value,
                negated,
            } => write!(
                f,
                "{} IS {}{}",
                operand(expr),
                not(*negated),
                if *value { "TRUE" } else { "FALSE" }
            ),
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                let items: Vec<String> = list.iter().map(operand).collect();
                write!(
                    f,
                    "{} {}IN ({})",
                    operand(expr),
                    not(*negated),
                    items.join(", ")
                )
            }
            Expr::InKeys { expr, filter } => write!(
                f,
                "{} IN KEYS({}: {} keys)",
                operand(expr),
                filter.label(),
                filter.keys()
            ),
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => write!(
                f,
                "{} {}BETWEEN {} AND {}",
                operand(expr),
                not(*negated),
                operand(low),
                operand(high)
            ),
            Expr::Like {
                expr,
                pattern,
                escape,
                negated,
            } => {
                write!(
                    f,
                    "{} {}LIKE {}",
                    operand(expr),
                    not(*negated),
                    operand(pattern)
                )?;
                match escape {
                    Some(e) => write!(f, " ESCAPE {}", operand(e)),
                    None => Ok(()),
                }
            }
            Expr::Unsupported { text, .. } => write!(f, "{text}"),
            Expr::Invalid { message, .. } => write!(f, "<{message}>"),
        }
    }
}
