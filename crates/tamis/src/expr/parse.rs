//! SQL text → unbound [`Expr`] tree, with sqlparser.
//!
//! Only the shape is read here: names stay names and literals stay literals (typed ones such
//! as `DATE '…'` or `CAST('NaN' AS DOUBLE)` are read into their [`Literal`]); what tamis does
//! not evaluate becomes [`Expr::Unsupported`], reported when the tree is bound.

use sqlparser::ast::{
    BinaryOperator, CastKind, DataType, Expr as Sql, Ident, UnaryOperator, Value,
};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use super::compare::ArithOp;
use super::literal::{parse_f64, parse_number, parse_time, parse_timestamp};
use super::tree::{Column, Expr, Literal};
use super::CmpOp;
use crate::error::{Error, ErrorKind, Result};

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

/// Parses `text`, one SQL boolean expression (a WHERE clause without `WHERE`).
pub fn parse(text: &str) -> Result<Expr> {
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
    Ok(convert(&expr))
}

fn unsupported(kind: &str, e: &Sql) -> Expr {
    Expr::Unsupported {
        kind: kind.to_string(),
        text: e.to_string(),
    }
}

fn invalid(err: Error) -> Expr {
    Expr::Invalid {
        kind: err.kind,
        message: err.message,
    }
}

/// What kind of unsupported expression `e` is, for error messages.
fn describe(e: &Sql) -> &'static str {
    match e {
        Sql::Function(_) => "function call",
        Sql::BinaryOp { .. } | Sql::UnaryOp { .. } => "arithmetic",
        Sql::Subquery(_) | Sql::InSubquery { .. } | Sql::Exists { .. } => "subquery",
        Sql::Case { .. } => "CASE expression",
        _ => "unsupported expression",
    }
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

fn boxed(e: &Sql) -> Box<Expr> {
    Box::new(convert(e))
}

fn convert(e: &Sql) -> Expr {
    match e {
        Sql::Nested(inner) => convert(inner),
        Sql::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => Expr::Not(boxed(expr)),
        Sql::BinaryOp { left, op, right } => match op {
            BinaryOperator::And => Expr::And(boxed(left), boxed(right)),
            BinaryOperator::Or => Expr::Or(boxed(left), boxed(right)),
            BinaryOperator::Plus => Expr::Arith(boxed(left), ArithOp::Add, boxed(right)),
            BinaryOperator::Minus => Expr::Arith(boxed(left), ArithOp::Sub, boxed(right)),
            BinaryOperator::Multiply => Expr::Arith(boxed(left), ArithOp::Mul, boxed(right)),
            _ => match cmp_op(op) {
                Some(c) => Expr::Compare(boxed(left), c, boxed(right)),
                None => unsupported(describe(e), e),
            },
        },
        Sql::IsNull(x) => Expr::IsNull {
            expr: boxed(x),
            negated: false,
        },
        Sql::IsNotNull(x) => Expr::IsNull {
            expr: boxed(x),
            negated: true,
        },
        Sql::IsTrue(x) | Sql::IsNotTrue(x) | Sql::IsFalse(x) | Sql::IsNotFalse(x) => Expr::IsBool {
            expr: boxed(x),
            value: matches!(e, Sql::IsTrue(_) | Sql::IsNotTrue(_)),
            negated: matches!(e, Sql::IsNotTrue(_) | Sql::IsNotFalse(_)),
        },
        Sql::Identifier(i) => column(std::slice::from_ref(i)),
        Sql::CompoundIdentifier(parts) => column(parts),
        Sql::Between {
            expr,
            negated,
            low,
            high,
        } => Expr::Between {
            expr: boxed(expr),
            low: boxed(low),
            high: boxed(high),
            negated: *negated,
        },
        Sql::InList {
            expr,
            list,
            negated,
        } => Expr::InList {
            expr: boxed(expr),
            list: list.iter().map(convert).collect(),
            negated: *negated,
        },
        Sql::Like {
            negated,
            any: false,
            expr,
            pattern,
            escape_char,
        } => Expr::Like {
            expr: boxed(expr),
            pattern: boxed(pattern),
            escape: escape_char.as_deref().map(boxed),
            negated: *negated,
        },
        _ => match literal(e) {
            Some(Ok(l)) => Expr::Literal(l),
            Some(Err(err)) => invalid(err),
            None => unsupported(describe(e), e),
        },
    }
}

fn column(parts: &[Ident]) -> Expr {
    Expr::Column(Column {
        path: (parts.iter().map(|p| p.value.as_str()))
            .collect::<Vec<_>>()
            .join("."),
        exact: parts.iter().any(|p| p.quote_style.is_some()),
    })
}

/// Reads a literal expression: `None` if `e` is not one, an error if it is an invalid one.
fn literal(e: &Sql) -> Option<Result<Literal>> {
    Some(match e {
        Sql::Nested(inner) => return literal(inner),
        Sql::Value(v) => match &v.value {
            Value::Null => Ok(Literal::Null),
            Value::Boolean(b) => Ok(Literal::Bool(*b)),
            Value::Number(n, _) => Ok(Literal::Number(n.to_string())),
            Value::SingleQuotedString(s)
            | Value::DoubleQuotedString(s)
            | Value::EscapedStringLiteral(s)
            | Value::NationalStringLiteral(s)
            | Value::UnicodeStringLiteral(s) => Ok(Literal::String(s.clone())),
            Value::HexStringLiteral(h) => parse_hex(h)
                .map(Literal::Binary)
                .ok_or_else(|| Error::invalid(format!("invalid hex literal `{e}`"))),
            _ => Err(Error::unsupported(format!("literal in predicate: `{e}`"))),
        },
        Sql::UnaryOp {
            op: op @ (UnaryOperator::Minus | UnaryOperator::Plus),
            expr,
        } => {
            let minus = matches!(op, UnaryOperator::Minus);
            match literal(expr)? {
                Ok(Literal::Number(n)) => Ok(Literal::Number(match (minus, n.strip_prefix('-')) {
                    (false, _) => n,
                    (true, Some(pos)) => pos.to_string(),
                    (true, None) => format!("-{n}"),
                })),
                Ok(Literal::Float(f)) => Ok(Literal::Float(if minus { -f } else { f })),
                Err(err) => Err(err),
                Ok(_) => return None,
            }
        }
        Sql::TypedString(ts) => {
            let Some(text) = ts.value.value.clone().into_string() else {
                return Some(Err(Error::unsupported(format!(
                    "literal in predicate: `{e}`"
                ))));
            };
            typed(&ts.data_type, Literal::String(text), e)
        }
        Sql::Cast {
            kind,
            expr,
            data_type,
            format: None,
        } if !matches!(kind, CastKind::TryCast | CastKind::SafeCast) => match literal(expr)? {
            Ok(inner) => typed(data_type, inner, e),
            Err(err) => Err(err),
        },
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
fn typed(dt: &DataType, lit: Literal, e: &Sql) -> Result<Literal> {
    let bad = || Error::invalid(format!("invalid {dt} literal `{e}`"));
    if lit == Literal::Null {
        return Ok(Literal::Null);
    }
    let text = match &lit {
        Literal::String(s) => Some(s.trim().to_string()),
        Literal::Number(n) => Some(n.clone()),
        _ => None,
    };
    let custom = match dt {
        DataType::Custom(name, _) => name.to_string().to_ascii_uppercase(),
        _ => String::new(),
    };
    match dt {
        DataType::Date | DataType::Date32 => {
            let t = text.ok_or_else(bad)?;
            Ok(Literal::Date(
                chrono::NaiveDate::parse_from_str(&t, "%Y-%m-%d").map_err(|_| bad())?,
            ))
        }
        // Naive values typed WITH TIME ZONE are read as UTC too.
        DataType::Timestamp(..) | DataType::Datetime(_) | DataType::TimestampNtz(_) => {
            let t = text.ok_or_else(bad)?;
            let (ts, off) = parse_timestamp(&t).ok_or_else(bad)?;
            Ok(Literal::Timestamp(ts, off))
        }
        _ if custom == "TIMESTAMPTZ" || custom == "DATETIME" => {
            let t = text.ok_or_else(bad)?;
            let (ts, off) = parse_timestamp(&t).ok_or_else(bad)?;
            Ok(Literal::Timestamp(ts, off))
        }
        DataType::Time(_, _) => {
            let t = text.ok_or_else(bad)?;
            Ok(Literal::Time(parse_time(&t).ok_or_else(bad)?))
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
            Ok(Literal::Float(parse_f64(&t).ok_or_else(bad)?))
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
            Ok(Literal::Number(t))
        }
        DataType::Varchar(_) | DataType::Text | DataType::String(_) | DataType::Char(_) => {
            Ok(Literal::String(text.ok_or_else(bad)?))
        }
        DataType::Boolean | DataType::Bool => match &lit {
            Literal::Bool(_) => Ok(lit),
            Literal::String(s) if s.eq_ignore_ascii_case("true") => Ok(Literal::Bool(true)),
            Literal::String(s) if s.eq_ignore_ascii_case("false") => Ok(Literal::Bool(false)),
            _ => Err(bad()),
        },
        _ => Err(Error::new(
            ErrorKind::Unsupported,
            format!("cast to {dt} in predicate: `{e}`"),
        )),
    }
}
