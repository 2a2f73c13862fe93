//! SQL text → bound predicate.
//!
//! The text is parsed as one SQL expression with sqlparser, identifiers are bound to leaf
//! columns, literals are converted into each column's [`Domain`] (adjusting the operator when a
//! literal is not exactly representable or lies outside the column's range), NOT is pushed down
//! to the leaves and constants are folded.
//!
//! Time zones: naive timestamp literals are read as UTC for UTC-adjusted columns and as wall
//! clock for local ones; a literal with an explicit offset is converted to UTC first (for a
//! local column that UTC wall clock is used, as if the session time zone were UTC).

use chrono::{NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use parquet::basic::Type as PhysicalType;
use sqlparser::ast::{BinaryOperator, CastKind, DataType, Expr, Ident, UnaryOperator, Value};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use super::{CmpOp, Leaf, LeafOp, LikePattern, Predicate, Scalar};
use crate::error::{Error, Result};
use crate::schema::{Domain, LeafColumn, LogicalKind, Unit};

/// The most AND / OR operators a predicate may have. sqlparser builds `a AND b AND c …` as a
/// tree as deep as the chain is long, and binding it (and dropping it) recurses that deep: a
/// chain of 20 000 overflowed the stack (found by `tamis-fuzz`). Nesting is bounded by
/// sqlparser's own recursion limit; this bounds the chains.
pub const MAX_BOOLEAN_OPERATORS: usize = 1000;

/// Counts the AND / OR keywords outside quotes without tokenizing: sqlparser's tokens take about
/// 30 times the text, so a few megabytes of chain would take ~100 MB before being refused.
fn check_operator_count(text: &str) -> Result<()> {
    let mut n = 0usize;
    let mut quote: Option<u8> = None;
    let mut word_start: Option<usize> = None;
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().chain(std::iter::once(&b' ')).enumerate() {
        if let Some(q) = quote {
            if b == q {
                quote = None;
            }
            continue;
        }
        if b.is_ascii_alphanumeric() || b == b'_' {
            word_start.get_or_insert(i);
            continue;
        }
        if let Some(w) = word_start.take() {
            let word = &bytes[w..i];
            if word.eq_ignore_ascii_case(b"and") || word.eq_ignore_ascii_case(b"or") {
                n += 1;
            }
        }
        if matches!(b, b'\'' | b'"' | b'`') {
            quote = Some(b);
        }
    }
    if n > MAX_BOOLEAN_OPERATORS {
        return Err(Error::invalid(format!(
            "predicate has {n} AND/OR operators; at most {MAX_BOOLEAN_OPERATORS} are supported \
             (use IN for long lists of values)"
        )));
    }
    Ok(())
}

/// Parses `text` (a SQL boolean expression) and binds it to `columns`.
pub fn parse_predicate(text: &str, columns: &[LeafColumn]) -> Result<Predicate> {
    check_operator_count(text)?;
    let dialect = GenericDialect {};
    let perr = |e: sqlparser::parser::ParserError| {
        Error::invalid(format!("cannot parse predicate `{}`: {e}", text.trim()))
    };
    let mut parser = Parser::new(&dialect).try_with_sql(text).map_err(perr)?;
    let expr = parser.parse_expr().map_err(perr)?;
    let next = parser.peek_token();
    if next.token != Token::EOF {
        return Err(Error::invalid(format!(
            "cannot parse predicate `{}`: unexpected `{}` after the expression",
            text.trim(),
            next.token
        )));
    }
    let bound = Binder { columns }.bind(&expr, false)?;
    Ok(bound.simplify(&mut |_| super::Verdict::Unknown))
}

/// A predicate implied by `text` that names only `columns`: the parts naming other columns (or
/// that cannot be bound) are dropped where that only weakens it — a conjunct becomes TRUE, a
/// disjunction with such a part is dropped whole. `None` when nothing is left or the text does
/// not parse. Used to prune a dataset's files by partition values before any footer is read,
/// when the files' own columns are not known yet.
pub fn parse_implied(text: &str, columns: &[LeafColumn]) -> Option<Predicate> {
    check_operator_count(text).ok()?;
    let dialect = GenericDialect {};
    let mut parser = Parser::new(&dialect).try_with_sql(text).ok()?;
    let expr = parser.parse_expr().ok()?;
    if parser.peek_token().token != Token::EOF {
        return None;
    }
    let bound = Binder { columns }.bind_implied(&expr, false)?;
    match bound.simplify(&mut |_| super::Verdict::Unknown) {
        Predicate::True => None,
        p => Some(p),
    }
}

struct Binder<'a> {
    columns: &'a [LeafColumn],
}

fn unsupported(what: &str, e: &Expr) -> Error {
    Error::unsupported(format!("{what} in predicate: `{e}`"))
}

/// What kind of unsupported expression `e` is, for error messages.
fn describe(e: &Expr) -> &'static str {
    match e {
        Expr::Function(_) => "function call",
        Expr::BinaryOp { .. } | Expr::UnaryOp { .. } => "arithmetic",
        Expr::Subquery(_) | Expr::InSubquery { .. } | Expr::Exists { .. } => "subquery",
        Expr::Case { .. } => "CASE expression",
        _ => "unsupported expression",
    }
}

/// A SQL literal before conversion into a column's domain.
#[derive(Debug, Clone, PartialEq)]
enum Lit {
    Null,
    Bool(bool),
    /// Numeric text as written (with sign), e.g. `-1.5e3`.
    Number(String),
    Str(String),
    Hex(Vec<u8>),
    /// From a cast to a floating type (`'NaN'::DOUBLE`).
    Float(f64),
    Date(NaiveDate),
    /// Naive date-time and an optional UTC offset in seconds.
    Timestamp(NaiveDateTime, Option<i32>),
    Time(NaiveTime),
}

impl Lit {
    fn kind(&self) -> &'static str {
        match self {
            Lit::Null => "NULL",
            Lit::Bool(_) => "a boolean",
            Lit::Number(_) | Lit::Float(_) => "a number",
            Lit::Str(_) => "a string",
            Lit::Hex(_) => "a hex string",
            Lit::Date(_) => "a date",
            Lit::Timestamp(..) => "a timestamp",
            Lit::Time(_) => "a time",
        }
    }
}

/// The SQL type name of a column, for messages.
pub fn type_name(c: &LeafColumn) -> String {
    let unit = |u: Unit| match u {
        Unit::Millis => "MILLIS",
        Unit::Micros => "MICROS",
        Unit::Nanos => "NANOS",
    };
    match &c.logical {
        LogicalKind::Boolean => "BOOLEAN".into(),
        LogicalKind::Integer { bits, signed: true } => format!("INT{bits}"),
        LogicalKind::Integer {
            bits,
            signed: false,
        } => format!("UINT{bits}"),
        LogicalKind::Float16 => "FLOAT16".into(),
        LogicalKind::Float32 => "FLOAT".into(),
        LogicalKind::Float64 => "DOUBLE".into(),
        LogicalKind::Decimal { precision, scale } => format!("DECIMAL({precision},{scale})"),
        LogicalKind::Date => "DATE".into(),
        LogicalKind::Time { unit: u } => format!("TIME({})", unit(*u)),
        LogicalKind::Timestamp { unit: u, utc } => {
            format!("TIMESTAMP({}{})", unit(*u), if *utc { ", UTC" } else { "" })
        }
        LogicalKind::String => "STRING".into(),
        LogicalKind::Binary => format!("BINARY ({})", c.physical),
        LogicalKind::Int96 => "INT96".into(),
        LogicalKind::Opaque => format!("{} (opaque)", c.physical),
    }
}

/// Outcome of converting a literal for one comparison.
enum Bound {
    Leaf(CmpOp, Scalar),
    /// Every non-null value satisfies it.
    AllNonNull,
    /// No value satisfies it.
    Nothing,
}

/// An integer-grid value: `floor` of the literal on the column's grid and whether it is exact;
/// `Below` / `Above` when the literal is beyond any i128.
enum Grid {
    At { floor: i128, exact: bool },
    Below,
    Above,
}

impl Binder<'_> {
    /// [`parse_implied`]'s binding: `None` where `e` cannot be bound.
    fn bind_implied(&self, e: &Expr, neg: bool) -> Option<Predicate> {
        match e {
            Expr::Nested(inner) => self.bind_implied(inner, neg),
            Expr::UnaryOp {
                op: UnaryOperator::Not,
                expr,
            } => self.bind_implied(expr, !neg),
            Expr::BinaryOp {
                left,
                op: op @ (BinaryOperator::And | BinaryOperator::Or),
                right,
            } => {
                if matches!(op, BinaryOperator::And) != neg {
                    let l = self.bind_implied(left, neg).unwrap_or(Predicate::True);
                    let r = self.bind_implied(right, neg).unwrap_or(Predicate::True);
                    Some(Predicate::And(vec![l, r]))
                } else {
                    let l = self.bind_implied(left, neg)?;
                    let r = self.bind_implied(right, neg)?;
                    Some(Predicate::Or(vec![l, r]))
                }
            }
            _ => self.bind(e, neg).ok(),
        }
    }

    fn bind(&self, e: &Expr, neg: bool) -> Result<Predicate> {
        match e {
            Expr::Nested(inner) => self.bind(inner, neg),
            Expr::UnaryOp {
                op: UnaryOperator::Not,
                expr,
            } => self.bind(expr, !neg),
            Expr::BinaryOp {
                left,
                op: op @ (BinaryOperator::And | BinaryOperator::Or),
                right,
            } => {
                let l = self.bind(left, neg)?;
                let r = self.bind(right, neg)?;
                let conj = matches!(op, BinaryOperator::And) != neg;
                Ok(if conj {
                    Predicate::And(vec![l, r])
                } else {
                    Predicate::Or(vec![l, r])
                })
            }
            Expr::BinaryOp { left, op, right } => {
                let Some(cmp) = cmp_op(op) else {
                    return Err(unsupported(describe(e), e));
                };
                let (lc, rc) = (self.column_ref(left)?, self.column_ref(right)?);
                let (col, op, lit) = match (lc, rc) {
                    (Some(_), Some(_)) => {
                        return Err(unsupported("column-to-column comparison", e));
                    }
                    (Some(c), None) => (c, cmp, right),
                    (None, Some(c)) => (c, cmp.flip(), left),
                    (None, None) => {
                        // Blame the side that is neither a column nor a literal.
                        let odd = [left, right].into_iter().find(|x| self.literal(x).is_err());
                        return Err(match odd {
                            Some(x) => unsupported(describe(x), e),
                            None => unsupported("comparison without a column", e),
                        });
                    }
                };
                let col = self.filterable(col)?;
                let op = if neg { op.negate() } else { op };
                self.compare(col, op, lit)
            }
            Expr::IsNull(x) | Expr::IsNotNull(x) => {
                let col = self.filterable(self.require_column(x, e)?)?;
                let negated = matches!(e, Expr::IsNotNull(_)) != neg;
                Ok(leaf(col, LeafOp::IsNull { negated }))
            }
            Expr::IsTrue(x) | Expr::IsNotTrue(x) | Expr::IsFalse(x) | Expr::IsNotFalse(x) => {
                let col = self.filterable(self.require_column(x, e)?)?;
                if col.domain() != Domain::Bool {
                    return Err(Error::invalid(format!(
                        "type mismatch: column '{}' is {}, `{e}` needs a BOOLEAN column",
                        col.path,
                        type_name(col)
                    )));
                }
                let target = matches!(e, Expr::IsTrue(_) | Expr::IsNotTrue(_));
                let is = matches!(e, Expr::IsTrue(_) | Expr::IsFalse(_)) != neg;
                let eq = leaf(col, LeafOp::Cmp(CmpOp::Eq, Scalar::Bool(target)));
                Ok(if is {
                    eq
                } else {
                    // IS NOT TRUE: false or NULL.
                    Predicate::Or(vec![
                        leaf(col, LeafOp::Cmp(CmpOp::Eq, Scalar::Bool(!target))),
                        leaf(col, LeafOp::IsNull { negated: false }),
                    ])
                })
            }
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
                let col = self.filterable(self.require_column(e, e)?)?;
                if col.domain() != Domain::Bool {
                    return Err(Error::invalid(format!(
                        "type mismatch: column '{}' is {}, it cannot be used as a condition",
                        col.path,
                        type_name(col)
                    )));
                }
                Ok(leaf(col, LeafOp::Cmp(CmpOp::Eq, Scalar::Bool(!neg))))
            }
            Expr::Value(v) => match &v.value {
                Value::Boolean(b) => Ok(if *b != neg {
                    Predicate::True
                } else {
                    Predicate::False
                }),
                // NULL and NOT NULL are both unknown.
                Value::Null => Ok(Predicate::False),
                _ => Err(unsupported("non-boolean literal", e)),
            },
            Expr::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let col = self.filterable(self.require_column(expr, e)?)?;
                if *negated != neg {
                    Ok(Predicate::Or(vec![
                        self.compare(col, CmpOp::Lt, low)?,
                        self.compare(col, CmpOp::Gt, high)?,
                    ]))
                } else {
                    Ok(Predicate::And(vec![
                        self.compare(col, CmpOp::GtEq, low)?,
                        self.compare(col, CmpOp::LtEq, high)?,
                    ]))
                }
            }
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                let col = self.filterable(self.require_column(expr, e)?)?;
                self.in_list(col, list, *negated != neg)
            }
            Expr::Like {
                negated,
                any: false,
                expr,
                pattern,
                escape_char,
            } => {
                let col = self.filterable(self.require_column(expr, e)?)?;
                if col.domain() != Domain::Bytes {
                    return Err(Error::invalid(format!(
                        "type mismatch: column '{}' is {}, LIKE needs a string or binary column",
                        col.path,
                        type_name(col)
                    )));
                }
                let pat = match self.literal(pattern)? {
                    Lit::Null => return Ok(Predicate::False),
                    Lit::Str(s) => s,
                    other => {
                        return Err(Error::invalid(format!(
                            "type mismatch: LIKE pattern `{pattern}` for column '{}' is {}, not a \
                             string",
                            col.path,
                            other.kind()
                        )))
                    }
                };
                let escape = match escape_char {
                    None => None,
                    Some(x) => match self.literal(x)? {
                        Lit::Null => return Ok(Predicate::False),
                        Lit::Str(s) if s.chars().count() == 1 => s.chars().next(),
                        Lit::Str(s) if s.is_empty() => None,
                        _ => {
                            return Err(Error::invalid(format!(
                                "LIKE escape `{x}` for column '{}' must be a single character",
                                col.path
                            )))
                        }
                    },
                };
                let pattern = LikePattern::new(&pat, escape).map_err(|err| {
                    Error::invalid(format!("column '{}': {}", col.path, err.message))
                })?;
                Ok(leaf(
                    col,
                    LeafOp::Like {
                        pattern,
                        negated: *negated != neg,
                    },
                ))
            }
            _ => Err(unsupported(describe(e), e)),
        }
    }

    fn in_list(&self, col: &LeafColumn, list: &[Expr], negated: bool) -> Result<Predicate> {
        let mut values: Vec<Scalar> = Vec::new();
        let mut has_null = false;
        for item in list {
            let lit = self.literal(item)?;
            if lit == Lit::Null {
                has_null = true;
                continue;
            }
            // Only values the column can hold exactly can be equal to something.
            if let Bound::Leaf(CmpOp::Eq, s) = convert(col, CmpOp::Eq, &lit, item)? {
                if !values.contains(&s) {
                    values.push(s);
                }
            }
        }
        values.sort_by(|a, b| a.compare(b).unwrap_or(std::cmp::Ordering::Equal));
        if negated && has_null {
            // A row not in the list compares unknown with the NULL; one in it is false.
            return Ok(Predicate::False);
        }
        Ok(match (values.len(), negated) {
            (0, false) => Predicate::False,
            (0, true) => leaf(col, LeafOp::IsNull { negated: true }),
            (1, _) => {
                let v = values.pop().expect("one value");
                leaf(
                    col,
                    LeafOp::Cmp(if negated { CmpOp::NotEq } else { CmpOp::Eq }, v),
                )
            }
            _ => leaf(col, LeafOp::In { values, negated }),
        })
    }

    /// `col op <literal expression>`.
    fn compare(&self, col: &LeafColumn, op: CmpOp, lit_expr: &Expr) -> Result<Predicate> {
        if self.column_ref(lit_expr)?.is_some() {
            return Err(unsupported("column-to-column comparison", lit_expr));
        }
        let lit = self.literal(lit_expr)?;
        Ok(match convert(col, op, &lit, lit_expr)? {
            Bound::Leaf(op, s) => leaf(col, LeafOp::Cmp(op, s)),
            Bound::AllNonNull => leaf(col, LeafOp::IsNull { negated: true }),
            Bound::Nothing => Predicate::False,
        })
    }

    fn filterable<'c>(&self, col: &'c LeafColumn) -> Result<&'c LeafColumn> {
        if col.nested || col.domain() == Domain::None {
            let what = if col.nested {
                format!("{} (nested)", type_name(col))
            } else {
                type_name(col)
            };
            return Err(Error::unsupported(format!(
                "predicate on column '{}' of type {what} is not supported",
                col.path
            )));
        }
        Ok(col)
    }

    fn require_column(&self, x: &Expr, whole: &Expr) -> Result<&LeafColumn> {
        match self.column_ref(x)? {
            Some(c) => Ok(c),
            None => Err(unsupported(describe(x), whole)),
        }
    }

    /// The column `e` names, if it is an identifier (parentheses allowed).
    fn column_ref(&self, e: &Expr) -> Result<Option<&LeafColumn>> {
        let parts: &[Ident] = match e {
            Expr::Nested(inner) => return self.column_ref(inner),
            Expr::Identifier(i) => std::slice::from_ref(i),
            Expr::CompoundIdentifier(p) => p,
            _ => return Ok(None),
        };
        let path = parts
            .iter()
            .map(|p| p.value.as_str())
            .collect::<Vec<_>>()
            .join(".");
        if let Some(c) = self.columns.iter().find(|c| c.path == path) {
            return Ok(Some(c));
        }
        if parts.iter().all(|p| p.quote_style.is_none()) {
            let matches: Vec<&LeafColumn> = self
                .columns
                .iter()
                .filter(|c| c.path.eq_ignore_ascii_case(&path))
                .collect();
            match matches.as_slice() {
                [c] => return Ok(Some(c)),
                [] => {}
                many => {
                    let names: Vec<&str> = many.iter().map(|c| c.path.as_str()).collect();
                    return Err(Error::invalid(format!(
                        "ambiguous column '{path}' in predicate (matches: {}); quote it",
                        names.join(", ")
                    )));
                }
            }
        }
        const SHOWN: usize = 30;
        let mut names: Vec<&str> = self
            .columns
            .iter()
            .take(SHOWN)
            .map(|c| c.path.as_str())
            .collect();
        if self.columns.len() > SHOWN {
            names.push("…");
        }
        Err(Error::invalid(format!(
            "unknown column '{path}' in predicate (columns: {})",
            names.join(", ")
        )))
    }

    /// Reads a literal expression.
    fn literal(&self, e: &Expr) -> Result<Lit> {
        match e {
            Expr::Nested(inner) => self.literal(inner),
            Expr::Value(v) => match &v.value {
                Value::Null => Ok(Lit::Null),
                Value::Boolean(b) => Ok(Lit::Bool(*b)),
                Value::Number(n, _) => Ok(Lit::Number(n.to_string())),
                Value::SingleQuotedString(s)
                | Value::DoubleQuotedString(s)
                | Value::EscapedStringLiteral(s)
                | Value::NationalStringLiteral(s)
                | Value::UnicodeStringLiteral(s) => Ok(Lit::Str(s.clone())),
                Value::HexStringLiteral(h) => parse_hex(h)
                    .map(Lit::Hex)
                    .ok_or_else(|| Error::invalid(format!("invalid hex literal `{e}`"))),
                _ => Err(unsupported("literal", e)),
            },
            Expr::UnaryOp {
                op: op @ (UnaryOperator::Minus | UnaryOperator::Plus),
                expr,
            } => {
                let minus = matches!(op, UnaryOperator::Minus);
                match self.literal(expr)? {
                    Lit::Number(n) => Ok(Lit::Number(match (minus, n.strip_prefix('-')) {
                        (false, _) => n,
                        (true, Some(pos)) => pos.to_string(),
                        (true, None) => format!("-{n}"),
                    })),
                    Lit::Float(f) => Ok(Lit::Float(if minus { -f } else { f })),
                    _ => Err(unsupported("arithmetic", e)),
                }
            }
            Expr::TypedString(ts) => {
                let Some(text) = ts.value.value.clone().into_string() else {
                    return Err(unsupported("literal", e));
                };
                typed(&ts.data_type, Lit::Str(text), e)
            }
            Expr::Cast {
                kind,
                expr,
                data_type,
                format: None,
            } if !matches!(kind, CastKind::TryCast | CastKind::SafeCast) => {
                let inner = self.literal(expr)?;
                typed(data_type, inner, e)
            }
            _ if self.column_ref(e).ok().flatten().is_some() => {
                Err(unsupported("column-to-column comparison", e))
            }
            _ => Err(unsupported(describe(e), e)),
        }
    }
}

fn leaf(col: &LeafColumn, op: LeafOp) -> Predicate {
    Predicate::Leaf(Leaf {
        column: col.index,
        op,
    })
}

fn cmp_op(op: &BinaryOperator) -> Option<CmpOp> {
    Some(match op {
        BinaryOperator::Eq => CmpOp::Eq,
        BinaryOperator::NotEq => CmpOp::NotEq,
        BinaryOperator::Lt => CmpOp::Lt,
        BinaryOperator::LtEq => CmpOp::LtEq,
        BinaryOperator::Gt => CmpOp::Gt,
        BinaryOperator::GtEq => CmpOp::GtEq,
        _ => return None,
    })
}

fn parse_hex(h: &str) -> Option<Vec<u8>> {
    if !h.len().is_multiple_of(2) {
        return None;
    }
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Applies a type to a literal: `DATE '…'`, `CAST('NaN' AS DOUBLE)`, `'…'::TIMESTAMPTZ`.
fn typed(dt: &DataType, lit: Lit, e: &Expr) -> Result<Lit> {
    let bad = || Error::invalid(format!("invalid {dt} literal `{e}`"));
    if lit == Lit::Null {
        return Ok(Lit::Null);
    }
    let text = match &lit {
        Lit::Str(s) => Some(s.trim().to_string()),
        Lit::Number(n) => Some(n.clone()),
        _ => None,
    };
    let custom = match dt {
        DataType::Custom(name, _) => name.to_string().to_ascii_uppercase(),
        _ => String::new(),
    };
    match dt {
        DataType::Date | DataType::Date32 => {
            let t = text.ok_or_else(bad)?;
            Ok(Lit::Date(
                NaiveDate::parse_from_str(&t, "%Y-%m-%d").map_err(|_| bad())?,
            ))
        }
        // Naive values typed WITH TIME ZONE are read as UTC too.
        DataType::Timestamp(..) | DataType::Datetime(_) | DataType::TimestampNtz(_) => {
            let t = text.ok_or_else(bad)?;
            let (ts, off) = parse_timestamp(&t).ok_or_else(bad)?;
            Ok(Lit::Timestamp(ts, off))
        }
        _ if custom == "TIMESTAMPTZ" || custom == "DATETIME" => {
            let t = text.ok_or_else(bad)?;
            let (ts, off) = parse_timestamp(&t).ok_or_else(bad)?;
            Ok(Lit::Timestamp(ts, off))
        }
        DataType::Time(_, _) => {
            let t = text.ok_or_else(bad)?;
            Ok(Lit::Time(parse_time(&t).ok_or_else(bad)?))
        }
        DataType::Double(_)
        | DataType::DoublePrecision
        | DataType::Float(_)
        | DataType::Float4
        | DataType::Float8
        | DataType::Float32
        | DataType::Float64
        | DataType::Real => {
            let t = text.ok_or_else(bad)?;
            Ok(Lit::Float(parse_f64(&t).ok_or_else(bad)?))
        }
        DataType::Decimal(_)
        | DataType::Numeric(_)
        | DataType::Int(_)
        | DataType::Integer(_)
        | DataType::BigInt(_)
        | DataType::SmallInt(_)
        | DataType::TinyInt(_) => {
            let t = text.ok_or_else(bad)?;
            if parse_number(&t).is_none() {
                return Err(bad());
            }
            Ok(Lit::Number(t))
        }
        DataType::Varchar(_) | DataType::Text | DataType::String(_) | DataType::Char(_) => {
            Ok(Lit::Str(text.ok_or_else(bad)?))
        }
        DataType::Boolean | DataType::Bool => match &lit {
            Lit::Bool(_) => Ok(lit),
            Lit::Str(s) if s.eq_ignore_ascii_case("true") => Ok(Lit::Bool(true)),
            Lit::Str(s) if s.eq_ignore_ascii_case("false") => Ok(Lit::Bool(false)),
            _ => Err(bad()),
        },
        _ => Err(unsupported(&format!("cast to {dt}"), e)),
    }
}

fn parse_f64(t: &str) -> Option<f64> {
    let l = t.trim().to_ascii_lowercase();
    match l.as_str() {
        "nan" | "+nan" | "-nan" => Some(f64::NAN),
        "inf" | "+inf" | "infinity" | "+infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        _ => l.parse::<f64>().ok().filter(|_| parse_number(&l).is_some()),
    }
}

/// `YYYY-MM-DD[( |T)HH:MM[:SS[.fff…]]][Z|UTC|±HH[:MM]]`: the naive value and UTC offset (s).
fn parse_timestamp(t: &str) -> Option<(NaiveDateTime, Option<i32>)> {
    let t = t.trim();
    let (body, offset) = split_offset(t)?;
    let body = body.trim();
    if let Ok(d) = NaiveDate::parse_from_str(body, "%Y-%m-%d") {
        return Some((d.and_hms_opt(0, 0, 0)?, offset));
    }
    for f in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(ts) = NaiveDateTime::parse_from_str(body, f) {
            return Some((ts, offset));
        }
    }
    None
}

/// Splits a trailing time zone (`Z`, `UTC`, `+02`, `+0200`, `-02:30`) off a timestamp.
fn split_offset(t: &str) -> Option<(&str, Option<i32>)> {
    if let Some(b) = t.strip_suffix('Z').or_else(|| t.strip_suffix('z')) {
        return Some((b, Some(0)));
    }
    if t.len() > 3 && t[t.len() - 3..].eq_ignore_ascii_case("UTC") {
        return Some((&t[..t.len() - 3], Some(0)));
    }
    // A sign after the date part (position 10) starts an offset.
    let pos = t
        .char_indices()
        .skip(10)
        .filter(|(_, c)| *c == '+' || *c == '-')
        .last();
    let Some((i, sign)) = pos else {
        return Some((t, None));
    };
    let digits: String = t[i + 1..].chars().filter(|c| *c != ':').collect();
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (h, m) = match digits.len() {
        1 | 2 => (digits.parse::<i32>().ok()?, 0),
        4 => (
            digits[..2].parse::<i32>().ok()?,
            digits[2..].parse::<i32>().ok()?,
        ),
        _ => return None,
    };
    if h > 18 || m > 59 {
        return None;
    }
    let secs = (h * 3600 + m * 60) * if sign == '-' { -1 } else { 1 };
    Some((&t[..i], Some(secs)))
}

fn parse_time(t: &str) -> Option<NaiveTime> {
    ["%H:%M:%S%.f", "%H:%M"]
        .iter()
        .find_map(|f| NaiveTime::parse_from_str(t.trim(), f).ok())
}

/// An exact decimal number: `mantissa * 10^exp`, or `None` if `t` is not a plain number.
fn parse_number(t: &str) -> Option<(bool, Vec<u8>, i64)> {
    let t = t.trim();
    let (neg, rest) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let (mant, exp) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
        None => (rest, 0),
    };
    let (int, frac) = match mant.find('.') {
        Some(i) => (&mant[..i], &mant[i + 1..]),
        None => (mant, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
    Some((neg, digits, exp.checked_sub(frac.len() as i64)?))
}

/// The literal number on the integer grid of `scale` decimal places: floor and exactness.
fn number_grid(text: &str, scale: i64) -> Option<Grid> {
    let (neg, mut digits, exp) = parse_number(text)?;
    // Drop leading zeros; fold trailing zeros into the exponent.
    let lead = digits.iter().take_while(|&&d| d == 0).count();
    digits.drain(..lead);
    let mut exp = exp + scale;
    while digits.last() == Some(&0) {
        digits.pop();
        exp += 1;
    }
    if digits.is_empty() {
        return Some(Grid::At {
            floor: 0,
            exact: true,
        });
    }
    let beyond = if neg { Grid::Below } else { Grid::Above };
    // Integer part (digits shifted by exp) and whether a fraction remains.
    let (int_digits, frac_nonzero): (&[u8], bool) = if exp >= 0 {
        (&digits, false)
    } else {
        let cut = digits.len() as i64 + exp;
        if cut <= 0 {
            (&[], true)
        } else {
            (&digits[..cut as usize], true)
        }
    };
    let mut v: i128 = 0;
    for &d in int_digits {
        v = match v.checked_mul(10).and_then(|x| x.checked_add(d as i128)) {
            Some(x) => x,
            None => return Some(beyond),
        };
    }
    if exp > 0 {
        for _ in 0..exp {
            v = match v.checked_mul(10) {
                Some(x) => x,
                None => return Some(beyond),
            };
        }
    }
    Some(if neg {
        if frac_nonzero {
            Grid::At {
                floor: -v - 1,
                exact: false,
            }
        } else {
            Grid::At {
                floor: -v,
                exact: true,
            }
        }
    } else {
        Grid::At {
            floor: v,
            exact: !frac_nonzero,
        }
    })
}

/// Floor division of a count of nanoseconds by `div` nanoseconds.
fn grid_div(nanos: i128, div: i128) -> Grid {
    Grid::At {
        floor: nanos.div_euclid(div),
        exact: nanos.rem_euclid(div) == 0,
    }
}

fn nanos_per(unit: Unit) -> i128 {
    1_000_000_000 / unit.per_second() as i128
}

const NANOS_PER_DAY: i128 = 86_400_000_000_000;

fn timestamp_nanos(ts: &NaiveDateTime, offset: Option<i32>) -> i128 {
    let utc = ts.and_utc();
    utc.timestamp() as i128 * 1_000_000_000 + utc.timestamp_subsec_nanos() as i128
        - offset.unwrap_or(0) as i128 * 1_000_000_000
}

/// The range of values a column can hold, on its integer grid.
fn int_range(col: &LeafColumn) -> (i128, i128) {
    match (&col.logical, col.physical) {
        (LogicalKind::Integer { bits, signed: true }, _) => {
            let b = (*bits).clamp(1, 64) as u32;
            (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1)
        }
        (
            LogicalKind::Integer {
                bits,
                signed: false,
            },
            _,
        ) => (0, (1i128 << (*bits).clamp(1, 64) as u32) - 1),
        (_, PhysicalType::INT32) => (i32::MIN as i128, i32::MAX as i128),
        (_, PhysicalType::INT64) => (i64::MIN as i128, i64::MAX as i128),
        (_, PhysicalType::FIXED_LEN_BYTE_ARRAY) if (1..16).contains(&col.type_length) => {
            let b = 8 * col.type_length as u32;
            (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1)
        }
        _ => (i128::MIN, i128::MAX),
    }
}

/// Converts `col op lit` into the column's domain.
fn convert(col: &LeafColumn, op: CmpOp, lit: &Lit, e: &Expr) -> Result<Bound> {
    if *lit == Lit::Null {
        return Ok(Bound::Nothing);
    }
    let mismatch = || {
        Error::invalid(format!(
            "type mismatch: column '{}' is {}, literal {e} is {}",
            col.path,
            type_name(col),
            lit.kind()
        ))
    };
    let domain = col.domain();
    match domain {
        Domain::Bool => match lit {
            Lit::Bool(b) => Ok(Bound::Leaf(op, Scalar::Bool(*b))),
            Lit::Str(s) if s.eq_ignore_ascii_case("true") => {
                Ok(Bound::Leaf(op, Scalar::Bool(true)))
            }
            Lit::Str(s) if s.eq_ignore_ascii_case("false") => {
                Ok(Bound::Leaf(op, Scalar::Bool(false)))
            }
            _ => Err(mismatch()),
        },
        Domain::Float => {
            let f = match lit {
                Lit::Float(f) => *f,
                Lit::Number(n) => parse_f64(n).ok_or_else(mismatch)?,
                Lit::Str(s) => parse_f64(s).ok_or_else(mismatch)?,
                _ => return Err(mismatch()),
            };
            Ok(Bound::Leaf(op, Scalar::Float(f)))
        }
        Domain::Bytes => match lit {
            Lit::Str(s) => Ok(Bound::Leaf(op, Scalar::Bytes(s.as_bytes().to_vec()))),
            Lit::Hex(h) if col.logical == LogicalKind::Binary => {
                Ok(Bound::Leaf(op, Scalar::Bytes(h.clone())))
            }
            _ => Err(mismatch()),
        },
        Domain::Int | Domain::UInt | Domain::Decimal => {
            let grid = match (&col.logical, lit) {
                (LogicalKind::Integer { .. } | LogicalKind::Decimal { .. }, _) => {
                    let scale = match col.logical {
                        LogicalKind::Decimal { scale, .. } => scale as i64,
                        _ => 0,
                    };
                    match lit {
                        Lit::Number(n) => number_grid(n, scale).ok_or_else(mismatch)?,
                        Lit::Str(s) => float_grid(s, scale)
                            .or_else(|| number_grid(s, scale))
                            .ok_or_else(mismatch)?,
                        Lit::Float(f) => float_grid(&f.to_string(), scale).ok_or_else(mismatch)?,
                        _ => return Err(mismatch()),
                    }
                }
                (LogicalKind::Date, Lit::Date(d)) => Grid::At {
                    floor: d.signed_duration_since(NaiveDate::default()).num_days() as i128,
                    exact: true,
                },
                (LogicalKind::Date, Lit::Timestamp(ts, off)) => {
                    grid_div(timestamp_nanos(ts, *off), NANOS_PER_DAY)
                }
                (LogicalKind::Date, Lit::Str(s)) => {
                    let (ts, off) = parse_timestamp(s).ok_or_else(mismatch)?;
                    grid_div(timestamp_nanos(&ts, off), NANOS_PER_DAY)
                }
                (LogicalKind::Timestamp { unit, .. }, Lit::Date(d)) => grid_div(
                    timestamp_nanos(&d.and_hms_opt(0, 0, 0).expect("midnight"), None),
                    nanos_per(*unit),
                ),
                (LogicalKind::Timestamp { unit, .. }, Lit::Timestamp(ts, off)) => {
                    grid_div(timestamp_nanos(ts, *off), nanos_per(*unit))
                }
                (LogicalKind::Timestamp { unit, .. }, Lit::Str(s)) => {
                    let (ts, off) = parse_timestamp(s).ok_or_else(mismatch)?;
                    grid_div(timestamp_nanos(&ts, off), nanos_per(*unit))
                }
                (LogicalKind::Time { unit }, Lit::Time(_) | Lit::Str(_)) => {
                    let t = match lit {
                        Lit::Str(s) => parse_time(s).ok_or_else(mismatch)?,
                        Lit::Time(t) => *t,
                        _ => unreachable!("matched above"),
                    };
                    let nanos = t.num_seconds_from_midnight() as i128 * 1_000_000_000
                        + t.nanosecond() as i128;
                    grid_div(nanos, nanos_per(*unit))
                }
                _ => return Err(mismatch()),
            };
            Ok(on_grid(col, op, grid))
        }
        Domain::None => Err(Error::unsupported(format!(
            "predicate on column '{}' of type {} is not supported",
            col.path,
            type_name(col)
        ))),
    }
}

/// Strings on numeric columns: special float values (`'inf'`, `'NaN'`).
fn float_grid(s: &str, scale: i64) -> Option<Grid> {
    let f = parse_f64(s)?;
    if f.is_nan() || f == f64::INFINITY {
        // NaN sorts above every number.
        Some(Grid::Above)
    } else if f == f64::NEG_INFINITY {
        Some(Grid::Below)
    } else {
        number_grid(s, scale).or_else(|| number_grid(&format!("{f:e}"), scale))
    }
}

/// Applies the operator to a grid position, folding out-of-range and in-between literals.
fn on_grid(col: &LeafColumn, op: CmpOp, grid: Grid) -> Bound {
    let (min, max) = int_range(col);
    // Normalise to an integer comparison `x op v`; `None` means beyond i128 (side from grid).
    let (op, v): (CmpOp, Option<i128>) = match grid {
        Grid::At { floor, exact: true } => (op, Some(floor)),
        Grid::At {
            floor,
            exact: false,
        } => match op {
            // floor < literal < floor + 1
            CmpOp::Eq => return Bound::Nothing,
            CmpOp::NotEq => return Bound::AllNonNull,
            CmpOp::Lt | CmpOp::LtEq => (CmpOp::LtEq, Some(floor)),
            CmpOp::Gt | CmpOp::GtEq => (CmpOp::GtEq, floor.checked_add(1)),
        },
        Grid::Below => (op, None),
        Grid::Above => (op, None),
    };
    let below_min = matches!(grid, Grid::Below) || v.is_some_and(|x| x < min);
    let above_max =
        matches!(grid, Grid::Above) || v.is_none_or(|x| x > max) && !matches!(grid, Grid::Below);
    if below_min {
        return match op {
            CmpOp::Eq | CmpOp::Lt | CmpOp::LtEq => Bound::Nothing,
            CmpOp::NotEq | CmpOp::Gt | CmpOp::GtEq => Bound::AllNonNull,
        };
    }
    if above_max {
        return match op {
            CmpOp::Eq | CmpOp::Gt | CmpOp::GtEq => Bound::Nothing,
            CmpOp::NotEq | CmpOp::Lt | CmpOp::LtEq => Bound::AllNonNull,
        };
    }
    let v = v.expect("in range");
    let scalar = match col.domain() {
        Domain::UInt => Scalar::UInt(v as u64),
        Domain::Decimal => Scalar::Decimal(v),
        _ => Scalar::Int(v as i64),
    };
    Bound::Leaf(op, scalar)
}

/// A readable SQL-like form of a bound predicate (for explain output).
pub fn render(p: &Predicate, columns: &[LeafColumn]) -> String {
    match p {
        Predicate::True => "TRUE".into(),
        Predicate::False => "FALSE".into(),
        Predicate::Leaf(l) => render_leaf(l, columns),
        Predicate::And(c) | Predicate::Or(c) => {
            let and = matches!(p, Predicate::And(_));
            let parts: Vec<String> = c
                .iter()
                .map(|x| match x {
                    Predicate::Or(_) if and => format!("({})", render(x, columns)),
                    Predicate::And(_) if !and => format!("({})", render(x, columns)),
                    _ => render(x, columns),
                })
                .collect();
            parts.join(if and { " AND " } else { " OR " })
        }
    }
}

fn render_leaf(l: &Leaf, columns: &[LeafColumn]) -> String {
    let Some(col) = columns.iter().find(|c| c.index == l.column) else {
        return format!("#{} {:?}", l.column, l.op);
    };
    let name = &col.path;
    match &l.op {
        LeafOp::Cmp(op, s) => format!("{name} {} {}", op.sql(), render_scalar(col, s)),
        LeafOp::In { values, negated } => {
            let vals: Vec<String> = values.iter().map(|s| render_scalar(col, s)).collect();
            format!(
                "{name} {}IN ({})",
                if *negated { "NOT " } else { "" },
                vals.join(", ")
            )
        }
        LeafOp::IsNull { negated } => {
            format!("{name} IS {}NULL", if *negated { "NOT " } else { "" })
        }
        LeafOp::Like { pattern, negated } => {
            let esc = pattern
                .escape()
                .map(|c| format!(" ESCAPE {}", quote(&c.to_string())));
            format!(
                "{name} {}LIKE {}{}",
                if *negated { "NOT " } else { "" },
                quote(&pattern.pattern),
                esc.unwrap_or_default()
            )
        }
    }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A literal in the column's own terms (dates as dates, decimals scaled).
fn render_scalar(col: &LeafColumn, s: &Scalar) -> String {
    let decimal = |v: i128, scale: i32| -> String {
        if scale <= 0 {
            return v.to_string();
        }
        let digits = v.unsigned_abs().to_string();
        let scale = scale as usize;
        let padded = format!("{digits:0>width$}", width = scale + 1);
        let (i, f) = padded.split_at(padded.len() - scale);
        format!("{}{i}.{f}", if v < 0 { "-" } else { "" })
    };
    match (s, &col.logical) {
        (Scalar::Int(v), LogicalKind::Decimal { scale, .. }) => decimal(*v as i128, *scale),
        (Scalar::Decimal(v), LogicalKind::Decimal { scale, .. }) => decimal(*v, *scale),
        (Scalar::Int(v), LogicalKind::Date) => {
            match NaiveDate::default().checked_add_signed(chrono::TimeDelta::days(*v)) {
                Some(d) => format!("DATE '{d}'"),
                None => v.to_string(),
            }
        }
        (Scalar::Int(v), LogicalKind::Timestamp { unit, utc }) => {
            let per = unit.per_second();
            let (secs, sub) = (v.div_euclid(per), v.rem_euclid(per));
            let nanos = (sub as i128 * nanos_per(*unit)) as u32;
            match chrono::DateTime::from_timestamp(secs, nanos) {
                Some(t) => {
                    let t = t.naive_utc().format("%Y-%m-%d %H:%M:%S%.f");
                    format!("TIMESTAMP{} '{t}'", if *utc { "TZ" } else { "" })
                }
                None => v.to_string(),
            }
        }
        (Scalar::Int(v), LogicalKind::Time { unit }) => {
            let nanos = *v as i128 * nanos_per(*unit);
            let secs = nanos.div_euclid(1_000_000_000) as u32;
            let sub = nanos.rem_euclid(1_000_000_000) as u32;
            match NaiveTime::from_num_seconds_from_midnight_opt(secs, sub) {
                Some(t) => format!("TIME '{}'", t.format("%H:%M:%S%.f")),
                None => v.to_string(),
            }
        }
        (Scalar::Int(v), _) => v.to_string(),
        (Scalar::UInt(v), _) => v.to_string(),
        (Scalar::Decimal(v), _) => v.to_string(),
        (Scalar::Bool(b), _) => if *b { "TRUE" } else { "FALSE" }.into(),
        (Scalar::Float(f), _) => {
            if f.is_finite() {
                format!("{f:?}")
            } else {
                format!("'{f}'::DOUBLE")
            }
        }
        (Scalar::Bytes(b), LogicalKind::String) => match std::str::from_utf8(b) {
            Ok(s) => quote(s),
            Err(_) => hex(b),
        },
        (Scalar::Bytes(b), _) => match std::str::from_utf8(b) {
            Ok(s) if s.chars().all(|c| !c.is_control()) => quote(s),
            _ => hex(b),
        },
    }
}

fn hex(b: &[u8]) -> String {
    let h: String = b.iter().map(|x| format!("{x:02X}")).collect();
    format!("X'{h}'")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use parquet::schema::parser::parse_message_type;
    use parquet::schema::types::SchemaDescriptor;
    use std::sync::Arc;

    pub(crate) fn test_columns() -> Vec<LeafColumn> {
        let msg = "message t {
            optional int32 i8 (INTEGER(8,true));
            optional int32 u32 (INTEGER(32,false));
            optional int64 u64 (INTEGER(64,false));
            optional int32 i32;
            optional int64 i64;
            optional float f32;
            optional double f64;
            optional fixed_len_byte_array(2) f16 (FLOAT16);
            optional int32 d92 (DECIMAL(9,2));
            optional fixed_len_byte_array(9) d203 (DECIMAL(20,3));
            optional int32 dt (DATE);
            optional int64 ts_ms (TIMESTAMP(MILLIS,true));
            optional int64 ts_us (TIMESTAMP(MICROS,true));
            optional int64 ts_ns (TIMESTAMP(NANOS,true));
            optional int64 lts_us (TIMESTAMP(MICROS,false));
            optional int32 tm (TIME(MILLIS,true));
            optional binary s (STRING);
            optional binary b;
            optional boolean flag;
            optional int96 i96;
            optional group g { optional int32 x; }
            optional int32 Mixed;
            optional int32 dup;
            optional int32 DUP;
        }";
        let schema = SchemaDescriptor::new(Arc::new(parse_message_type(msg).unwrap()));
        crate::schema::leaf_columns(&schema)
    }

    fn idx(name: &str) -> usize {
        test_columns()
            .iter()
            .find(|c| c.path == name)
            .unwrap()
            .index
    }
    fn p(sql: &str) -> Predicate {
        parse_predicate(sql, &test_columns()).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }
    fn err(sql: &str) -> crate::error::Error {
        parse_predicate(sql, &test_columns()).expect_err(sql)
    }
    fn cmp(col: &str, op: CmpOp, s: Scalar) -> Predicate {
        Predicate::Leaf(Leaf {
            column: idx(col),
            op: LeafOp::Cmp(op, s),
        })
    }
    fn not_null(col: &str) -> Predicate {
        Predicate::Leaf(Leaf {
            column: idx(col),
            op: LeafOp::IsNull { negated: true },
        })
    }
    fn is_null(col: &str) -> Predicate {
        Predicate::Leaf(Leaf {
            column: idx(col),
            op: LeafOp::IsNull { negated: false },
        })
    }
    use CmpOp::*;
    use Scalar::{Bool as B, Bytes as By, Decimal as D, Float as F, Int as I, UInt as U};

    #[test]
    fn comparisons_and_flip() {
        assert_eq!(p("i32 > 5"), cmp("i32", Gt, I(5)));
        assert_eq!(p("5 > i32"), cmp("i32", Lt, I(5)));
        assert_eq!(p("-3 <= i64"), cmp("i64", GtEq, I(-3)));
        assert_eq!(p("i64 != 7"), cmp("i64", NotEq, I(7)));
        assert_eq!(p("(i64 <> +7)"), cmp("i64", NotEq, I(7)));
        assert_eq!(
            p("I32 = 1"),
            cmp("i32", Eq, I(1)),
            "case-insensitive binding"
        );
        assert_eq!(p("mixed = 1"), cmp("Mixed", Eq, I(1)));
        assert_eq!(p("\"DUP\" = 1"), cmp("DUP", Eq, I(1)));
        assert_eq!(p("u32 = 4294967295"), cmp("u32", Eq, U(u32::MAX as u64)));
        assert_eq!(
            p("u64 >= 18446744073709551615"),
            cmp("u64", GtEq, U(u64::MAX))
        );
        assert_eq!(p("i32 = '12'"), cmp("i32", Eq, I(12)));
    }

    #[test]
    fn fractional_and_out_of_range_literals() {
        assert_eq!(p("i32 < 5.5"), cmp("i32", LtEq, I(5)));
        assert_eq!(p("i32 <= 5.5"), cmp("i32", LtEq, I(5)));
        assert_eq!(p("i32 > 5.5"), cmp("i32", GtEq, I(6)));
        assert_eq!(p("i32 > -5.5"), cmp("i32", GtEq, I(-5)));
        assert_eq!(p("i32 < -5.5"), cmp("i32", LtEq, I(-6)));
        assert_eq!(p("i32 = 5.5"), Predicate::False);
        assert_eq!(p("i32 <> 5.5"), not_null("i32"));
        assert_eq!(p("i32 = 5.0"), cmp("i32", Eq, I(5)));
        assert_eq!(p("i32 = 1e3"), cmp("i32", Eq, I(1000)));
        assert_eq!(p("i8 < 300"), not_null("i8"));
        assert_eq!(p("i8 = 300"), Predicate::False);
        assert_eq!(p("i8 > -129"), not_null("i8"));
        assert_eq!(p("i8 <= -200"), Predicate::False);
        assert_eq!(p("i8 = 127"), cmp("i8", Eq, I(127)));
        assert_eq!(p("u32 >= -1"), not_null("u32"));
        assert_eq!(p("u32 = -1"), Predicate::False);
        assert_eq!(p("u32 < 4294967296"), not_null("u32"));
        assert_eq!(p("i32 > 3e9"), Predicate::False);
        assert_eq!(p("i32 < 3e9"), not_null("i32"));
        assert_eq!(p("i64 < 1e40"), not_null("i64"));
        assert_eq!(
            p("i64 <> 123456789012345678901234567890123456789012"),
            not_null("i64")
        );
        assert_eq!(
            p("i64 > 0.0000000000000000000000000000000000000000001"),
            cmp("i64", GtEq, I(1))
        );
    }

    #[test]
    fn decimals() {
        assert_eq!(p("d92 = 1.5"), cmp("d92", Eq, I(150)));
        assert_eq!(p("d92 < 0.055"), cmp("d92", LtEq, I(5)));
        assert_eq!(p("d92 > 0.055"), cmp("d92", GtEq, I(6)));
        assert_eq!(p("d92 = 0.055"), Predicate::False);
        assert_eq!(p("d92 >= -12"), cmp("d92", GtEq, I(-1200)));
        assert_eq!(
            p("d92 < 30000000"),
            not_null("d92"),
            "beyond INT32 unscaled"
        );
        assert_eq!(
            p("d203 = 12345678901234567.891"),
            cmp("d203", Eq, D(12345678901234567891))
        );
        assert_eq!(p("d203 < -0.0001"), cmp("d203", LtEq, D(-1)));
        assert_eq!(p("d203 > 1e30"), Predicate::False);
    }

    #[test]
    fn floats() {
        assert_eq!(p("f64 > 1"), cmp("f64", Gt, F(1.0)));
        assert_eq!(p("f32 <= -1.5e3"), cmp("f32", LtEq, F(-1500.0)));
        match p("f64 = 'NaN'::DOUBLE") {
            Predicate::Leaf(Leaf {
                op: LeafOp::Cmp(Eq, F(x)),
                ..
            }) => assert!(x.is_nan()),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            p("f64 < CAST('inf' AS DOUBLE)"),
            cmp("f64", Lt, F(f64::INFINITY))
        );
        assert_eq!(
            p("f64 > -CAST('infinity' AS DOUBLE)"),
            cmp("f64", Gt, F(f64::NEG_INFINITY))
        );
        assert_eq!(p("f16 >= 0.5"), cmp("f16", GtEq, F(0.5)));
    }

    #[test]
    fn dates_times_timestamps() {
        assert_eq!(p("dt >= DATE '1994-01-01'"), cmp("dt", GtEq, I(8766)));
        assert_eq!(p("dt < '1970-01-02'"), cmp("dt", Lt, I(1)));
        assert_eq!(p("dt < CAST('1969-12-31' AS DATE)"), cmp("dt", Lt, I(-1)));
        assert_eq!(
            p("dt > TIMESTAMP '1970-01-02 12:00:00'"),
            cmp("dt", GtEq, I(2))
        );
        let s = 8766 * 86400i64 + 12 * 3600;
        assert_eq!(
            p("ts_ms = TIMESTAMP '1994-01-01 12:00:00'"),
            cmp("ts_ms", Eq, I(s * 1000))
        );
        assert_eq!(
            p("ts_us = TIMESTAMP '1994-01-01 12:00:00.000001'"),
            cmp("ts_us", Eq, I(s * 1_000_000 + 1))
        );
        assert_eq!(
            p("ts_ns = TIMESTAMP '1994-01-01 12:00:00.123456789'"),
            cmp("ts_ns", Eq, I(s * 1_000_000_000 + 123_456_789))
        );
        assert_eq!(
            p("ts_ms < TIMESTAMP '1994-01-01 12:00:00.0005'"),
            cmp("ts_ms", LtEq, I(s * 1000))
        );
        assert_eq!(
            p("ts_ms = TIMESTAMP '1994-01-01 12:00:00.0005'"),
            Predicate::False
        );
        assert_eq!(
            p("ts_us >= TIMESTAMP '1994-01-01 14:00:00+02:00'"),
            cmp("ts_us", GtEq, I(s * 1_000_000))
        );
        assert_eq!(
            p("ts_us >= TIMESTAMPTZ '1994-01-01 10:00:00-02'"),
            cmp("ts_us", GtEq, I(s * 1_000_000))
        );
        assert_eq!(
            p("lts_us = '1994-01-01 12:00:00'"),
            cmp("lts_us", Eq, I(s * 1_000_000))
        );
        assert_eq!(
            p("ts_ms >= DATE '1994-01-01'"),
            cmp("ts_ms", GtEq, I(8766 * 86_400_000))
        );
        assert_eq!(p("tm < TIME '01:00:00.5'"), cmp("tm", Lt, I(3_600_500)));
    }

    #[test]
    fn strings_binary_bool() {
        assert_eq!(p("s = 'it''s'"), cmp("s", Eq, By(b"it's".to_vec())));
        assert_eq!(p("b = X'0A0B'"), cmp("b", Eq, By(vec![10, 11])));
        assert_eq!(p("b >= 'ab'"), cmp("b", GtEq, By(b"ab".to_vec())));
        assert_eq!(p("flag"), cmp("flag", Eq, B(true)));
        assert_eq!(p("NOT flag"), cmp("flag", Eq, B(false)));
        assert_eq!(p("flag = FALSE"), cmp("flag", Eq, B(false)));
        assert_eq!(p("flag IS TRUE"), cmp("flag", Eq, B(true)));
        assert_eq!(
            p("flag IS NOT TRUE"),
            Predicate::Or(vec![cmp("flag", Eq, B(false)), is_null("flag")])
        );
        assert_eq!(p("NOT (flag IS NOT FALSE)"), cmp("flag", Eq, B(false)));
    }

    #[test]
    fn between_in_null_like() {
        assert_eq!(
            p("i32 BETWEEN 1 AND 10"),
            Predicate::And(vec![cmp("i32", GtEq, I(1)), cmp("i32", LtEq, I(10))])
        );
        assert_eq!(
            p("i32 NOT BETWEEN 1 AND 10"),
            Predicate::Or(vec![cmp("i32", Lt, I(1)), cmp("i32", Gt, I(10))])
        );
        assert_eq!(
            p("i32 IN (3, 1, NULL, 1)"),
            Predicate::Leaf(Leaf {
                column: idx("i32"),
                op: LeafOp::In {
                    values: vec![I(1), I(3)],
                    negated: false
                }
            })
        );
        assert_eq!(p("i32 IN (1, NULL)"), cmp("i32", Eq, I(1)));
        assert_eq!(p("i32 NOT IN (1, NULL)"), Predicate::False);
        assert_eq!(p("i32 NOT IN (1, 2.5)"), cmp("i32", NotEq, I(1)));
        assert_eq!(p("i32 IN (2.5)"), Predicate::False);
        assert_eq!(
            p("NOT i32 IN (1, 2)"),
            Predicate::Leaf(Leaf {
                column: idx("i32"),
                op: LeafOp::In {
                    values: vec![I(1), I(2)],
                    negated: true
                }
            })
        );
        assert_eq!(p("i32 = NULL"), Predicate::False);
        assert_eq!(p("NOT (i32 <> NULL)"), Predicate::False);
        assert_eq!(p("i32 IS NULL"), is_null("i32"));
        assert_eq!(p("NOT i32 IS NULL"), not_null("i32"));
        assert_eq!(p("i32 > 1 OR NULL"), cmp("i32", Gt, I(1)));
        assert_eq!(p("i32 > 1 AND TRUE"), cmp("i32", Gt, I(1)));
        let like = |pat: &str, esc: Option<char>, negated: bool| {
            Predicate::Leaf(Leaf {
                column: idx("s"),
                op: LeafOp::Like {
                    pattern: LikePattern::new(pat, esc).unwrap(),
                    negated,
                },
            })
        };
        assert_eq!(p("s LIKE 'a%'"), like("a%", None, false));
        assert_eq!(
            p("s NOT LIKE 'a!%%' ESCAPE '!'"),
            like("a!%%", Some('!'), true)
        );
        assert_eq!(p("NOT (s NOT LIKE '%x')"), like("%x", None, false));
    }

    #[test]
    fn implied_predicates_drop_only_what_weakens() {
        let implied = |sql: &str| parse_implied(sql, &test_columns());
        assert_eq!(implied("i32 > 1 AND zz = 3"), Some(cmp("i32", Gt, I(1))));
        assert_eq!(
            implied("zz = 3 AND NOT i32 <= 1"),
            Some(cmp("i32", Gt, I(1)))
        );
        assert_eq!(implied("i32 > 1 OR zz = 3"), None);
        assert_eq!(
            implied("NOT (i32 > 1 OR zz = 3)"),
            Some(cmp("i32", LtEq, I(1)))
        );
        assert_eq!(implied("NOT (i32 > 1 AND zz = 3)"), None);
        assert_eq!(
            implied("(i32 > 1 OR i64 = 2) AND zz AND i32 = 'x'"),
            Some(Predicate::Or(vec![
                cmp("i32", Gt, I(1)),
                cmp("i64", Eq, I(2))
            ]))
        );
        assert_eq!(implied("zz = 1"), None);
        assert_eq!(implied("i32 >"), None);
        assert_eq!(implied("i32 > 1 zz"), None);
    }

    #[test]
    fn negation_normal_form() {
        assert_eq!(
            p("NOT (i32 > 5 AND (s = 'x' OR i64 IS NULL))"),
            Predicate::Or(vec![
                cmp("i32", LtEq, I(5)),
                Predicate::And(vec![cmp("s", NotEq, By(b"x".to_vec())), not_null("i64")]),
            ])
        );
        assert_eq!(
            p("i32 > 1 AND (i32 < 9 AND i64 = 2)"),
            Predicate::And(vec![
                cmp("i32", Gt, I(1)),
                cmp("i32", Lt, I(9)),
                cmp("i64", Eq, I(2))
            ])
        );
        assert_eq!(p("NOT NOT i32 = 1"), cmp("i32", Eq, I(1)));
    }

    #[test]
    fn errors() {
        let e = err("foo = 1");
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(
            e.message
                .starts_with("unknown column 'foo' in predicate (columns: i8, u32,"),
            "{e}"
        );
        let e = err("i32 = 'abc'");
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert_eq!(
            e.message,
            "type mismatch: column 'i32' is INT32, literal 'abc' is a string"
        );
        let e = err("s = DATE '1994-01-01'");
        assert_eq!(
            e.message,
            "type mismatch: column 's' is STRING, literal DATE '1994-01-01' is a date"
        );
        let e = err("dt = 5");
        assert_eq!(
            e.message,
            "type mismatch: column 'dt' is DATE, literal 5 is a number"
        );
        let e = err("upper(s) = 'X'");
        assert_eq!(e.kind, ErrorKind::Unsupported);
        assert_eq!(e.message, "function call in predicate: `upper(s) = 'X'`");
        let e = err("i32 + 1 > 5");
        assert_eq!(e.message, "arithmetic in predicate: `i32 + 1 > 5`");
        let e = err("i32 = i64");
        assert_eq!(
            e.message,
            "column-to-column comparison in predicate: `i32 = i64`"
        );
        let e = err("i32 IN (SELECT 1)");
        assert_eq!(e.kind, ErrorKind::Unsupported);
        let e = err("g.x = 1");
        assert_eq!(e.kind, ErrorKind::Unsupported);
        assert_eq!(
            e.message,
            "predicate on column 'g.x' of type INT32 (nested) is not supported"
        );
        let e = err("i96 = 1");
        assert!(
            e.message
                .starts_with("predicate on column 'i96' of type INT96"),
            "{e}"
        );
        assert_eq!(p("dup = 1"), cmp("dup", Eq, I(1)), "exact match wins");
        let e = err("Dup = 1");
        assert!(
            e.message
                .contains("ambiguous column 'Dup' in predicate (matches: dup, DUP)"),
            "{e}"
        );
        let e = err("i32 = ");
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e.message.starts_with("cannot parse predicate"), "{e}");
        let e = err("i32 = 1 i64");
        assert!(e.message.contains("unexpected"), "{e}");
        assert!(!err("i32 > 1 AND\n foo(").to_string().contains('\n'));
        let e = err("i32 LIKE 'a%'");
        assert!(
            e.message
                .starts_with("type mismatch: column 'i32' is INT32"),
            "{e}"
        );
        assert!(err("i32").message.contains("cannot be used as a condition"));
    }

    #[test]
    fn renders() {
        let cols = test_columns();
        let r = |sql: &str| render(&p(sql), &cols);
        assert_eq!(
            r("d92 > 1.5 AND (dt = DATE '1994-01-01' OR s LIKE 'a%')"),
            "d92 > 1.50 AND (dt = DATE '1994-01-01' OR s LIKE 'a%')"
        );
        assert_eq!(
            r("ts_ms >= '1994-01-01 12:00:00.5' OR b = X'00FF'"),
            "ts_ms >= TIMESTAMPTZ '1994-01-01 12:00:00.500' OR b = X'00FF'"
        );
        assert_eq!(
            r("i32 NOT IN (1, 2) AND f64 IS NOT NULL"),
            "i32 NOT IN (1, 2) AND f64 IS NOT NULL"
        );
        assert_eq!(r("d203 = -0.5"), "d203 = -0.500");
    }
}
