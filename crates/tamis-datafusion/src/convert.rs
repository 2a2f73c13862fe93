//! DataFusion filter expressions → tamis predicate trees, and how exact each one is.
//!
//! tamis evaluates a filter in the scan; DataFusion re-applies every filter the provider did
//! not call `Exact`. So a converted filter must select a superset of DataFusion's rows, and is
//! `Exact` only where the semantics are identical:
//!
//! - comparisons, BETWEEN, IN, IS \[NOT\] NULL, IS \[NOT\] TRUE/FALSE, AND/OR/NOT on columns of
//!   integer, decimal, string, binary, boolean, date and timestamp types with literals of the
//!   matching type: tamis converts the literal exactly (see `tamis::expr::bind`), so these are
//!   `Exact`;
//! - floats are never exact: arrow orders floats totally (-0.0 < 0.0, NaN = NaN, negative NaN
//!   below every number) while tamis has -0.0 = 0.0 and NaN above every number. A float leaf is
//!   widened to `(leaf) OR col = 0.0 OR col = NaN`, which holds for every row DataFusion keeps,
//!   and is `Inexact`;
//! - `LIKE` is exact without ESCAPE and without backslashes in the pattern (arrow reads `\` as
//!   an escape, tamis does not without ESCAPE); otherwise not converted;
//! - a string's first `n` characters (`substr(c, 1, n)`, `left(c, n)`) compared with literals
//!   of exactly `n` characters (`=`, `<>`, `IN`) become `c LIKE 'v%'` tests (TPC-H Q22's
//!   country codes), exactly;
//! - NOT is pushed down here, so widened leaves only ever appear un-negated (a negated
//!   superset would be a subset); a conjunct that cannot be converted is dropped (`Inexact`), a
//!   disjunction with such a part is not converted at all;
//! - comparisons of two columns are `Exact` on integers and decimals (with each other),
//!   strings, binary and otherwise identical non-float types; arithmetic is not converted
//!   (DataFusion's integer arithmetic wraps on overflow, tamis's is exact);
//! - anything else (casts of columns, functions, arithmetic, float columns compared with each
//!   other) is `Unsupported`.

use arrow::datatypes::{DataType, Schema};
use chrono::{DateTime, NaiveDate, TimeDelta};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{
    expr::{InList, Like},
    Between, BinaryExpr, Expr, Operator,
};
use tamis::expr::CmpOp;
use tamis::expr::{self as tree, Expr as T, Literal};

/// A converted filter: the tamis tree and whether it selects exactly DataFusion's rows (else
/// a superset).
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    pub expr: T,
    pub exact: bool,
}

/// Converts `e` (a filter over `schema`'s columns); `None` if no useful part converts.
pub fn convert(e: &Expr, schema: &Schema) -> Option<Converted> {
    conv(e, schema, false).map(|(expr, exact)| Converted { expr, exact })
}

/// `NOT e` when `neg`; `(tree, exact)`.
fn conv(e: &Expr, schema: &Schema, neg: bool) -> Option<(T, bool)> {
    match e {
        Expr::Not(inner) => conv(inner, schema, !neg),
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And | Operator::Or => {
                let conj = (*op == Operator::And) != neg;
                let l = conv(left, schema, neg);
                let r = conv(right, schema, neg);
                match (l, r, conj) {
                    (Some((a, ea)), Some((b, eb)), true) => Some((a.and(b), ea && eb)),
                    (Some((a, ea)), Some((b, eb)), false) => Some((a.or(b), ea && eb)),
                    // Dropping a conjunct only weakens the filter.
                    (Some((a, _)), None, true) | (None, Some((a, _)), true) => Some((a, false)),
                    _ => None,
                }
            }
            _ => {
                if matches!(op, Operator::Eq | Operator::NotEq) {
                    let prefix = match (prefix_of(left, schema), prefix_of(right, schema)) {
                        (Some(p), _) => Some((p, right)),
                        (None, Some(p)) => Some((p, left)),
                        (None, None) => None,
                    };
                    if let Some(((name, n), value)) = prefix {
                        let negated = (*op == Operator::NotEq) != neg;
                        return prefix_match(
                            name,
                            n,
                            std::slice::from_ref(value.as_ref()),
                            negated,
                        );
                    }
                }
                let op = cmp_op(*op)?;
                if let (Some(a), Some(b)) = (widened(left, schema), widened(right, schema)) {
                    return columns_compared(a, op, b, neg);
                }
                let (column, op, value) = match (column(left, schema), column(right, schema)) {
                    (Some(c), None) => (c, op, right),
                    (None, Some(c)) => (c, op.flip(), left),
                    _ => return None,
                };
                let op = if neg { op.negate() } else { op };
                let lit = literal(value, column.1)?;
                let leaf = tree::col(column.0).cmp_op(op, lit.clone());
                Some(widen(leaf, column, &[lit]))
            }
        },
        Expr::IsNull(x) | Expr::IsNotNull(x) => {
            let (name, _) = column(x, schema)?;
            let not = matches!(e, Expr::IsNotNull(_)) != neg;
            let c = tree::col(name);
            Some((if not { c.is_not_null() } else { c.is_null() }, true))
        }
        Expr::IsTrue(x) | Expr::IsFalse(x) | Expr::IsNotTrue(x) | Expr::IsNotFalse(x) => {
            let (name, dt) = column(x, schema)?;
            if *dt != DataType::Boolean {
                return None;
            }
            let value = matches!(e, Expr::IsTrue(_) | Expr::IsNotTrue(_));
            let negated = matches!(e, Expr::IsNotTrue(_) | Expr::IsNotFalse(_)) != neg;
            Some((
                T::IsBool {
                    expr: Box::new(tree::col(name)),
                    value,
                    negated,
                },
                true,
            ))
        }
        Expr::Column(_) => {
            let (name, dt) = column(e, schema)?;
            if *dt != DataType::Boolean {
                return None;
            }
            let c = tree::col(name);
            Some((if neg { c.not() } else { c }, true))
        }
        Expr::Literal(ScalarValue::Boolean(b), _) => {
            let l = tree::lit(match b {
                Some(b) => Literal::Bool(*b),
                None => Literal::Null,
            });
            Some((if neg { l.not() } else { l }, true))
        }
        Expr::Between(Between {
            expr,
            negated,
            low,
            high,
        }) => {
            let c = column(expr, schema)?;
            let (lo, hi) = (literal(low, c.1)?, literal(high, c.1)?);
            let t = T::Between {
                expr: Box::new(tree::col(c.0)),
                low: Box::new(tree::lit(lo.clone())),
                high: Box::new(tree::lit(hi.clone())),
                negated: *negated != neg,
            };
            Some(widen(t, c, &[lo, hi]))
        }
        Expr::InList(InList {
            expr,
            list,
            negated,
        }) => {
            if let Some((name, n)) = prefix_of(expr, schema) {
                return prefix_match(name, n, list, *negated != neg);
            }
            let c = column(expr, schema)?;
            let values: Vec<Literal> = list
                .iter()
                .map(|v| literal(v, c.1))
                .collect::<Option<_>>()?;
            let t = tree::col(c.0).in_list(values.clone(), *negated != neg);
            Some(widen(t, c, &values))
        }
        Expr::Like(Like {
            negated,
            expr,
            pattern,
            escape_char: None,
            case_insensitive: false,
        }) => {
            let (name, dt) = column(expr, schema)?;
            if !is_string(dt) {
                return None;
            }
            let pattern = match literal(pattern, dt)? {
                Literal::String(p) if !p.contains('\\') => Literal::String(p),
                Literal::Null => Literal::Null,
                _ => return None,
            };
            Some((
                T::Like {
                    expr: Box::new(tree::col(name)),
                    pattern: Box::new(tree::lit(pattern)),
                    escape: None,
                    negated: *negated != neg,
                },
                true,
            ))
        }
        _ => None,
    }
}

/// `substr(c, 1, n)`, `substring(c, 1, n)` or `left(c, n)` of a string column `c` with a
/// literal `n >= 1`: the column's name and `n`.
fn prefix_of<'s>(e: &Expr, schema: &'s Schema) -> Option<(&'s str, usize)> {
    let Expr::ScalarFunction(f) = e else {
        return None;
    };
    let int = |e: &Expr| match e {
        Expr::Literal(ScalarValue::Int64(Some(v)), _) => Some(*v),
        Expr::Literal(ScalarValue::Int32(Some(v)), _) => Some(*v as i64),
        _ => None,
    };
    let (c, n) = match (f.name(), f.args.as_slice()) {
        ("substr" | "substring", [c, start, len]) if int(start) == Some(1) => (c, int(len)?),
        ("left", [c, len]) => (c, int(len)?),
        _ => return None,
    };
    let (name, dt) = column(c, schema)?;
    (is_string(dt) && n >= 1).then_some((name, usize::try_from(n).ok()?))
}

/// A prefix of `n` characters compared with string literals (`= v`, `IN (…)`, negated or
/// not), as `LIKE 'v%'` tests joined by OR (AND of `NOT LIKE` when negated). Exact: a value
/// of exactly `n` characters equals the prefix iff the string starts with it, and a NULL
/// string fails both forms. Not converted when a value has another length (it could only
/// match a shorter whole string), is NULL, or holds a LIKE wildcard or backslash.
fn prefix_match(name: &str, n: usize, values: &[Expr], negated: bool) -> Option<(T, bool)> {
    let mut tests = values.iter().map(|v| match v {
        Expr::Literal(
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)),
            _,
        ) if s.chars().count() == n && !s.contains(['%', '_', '\\']) => {
            let pattern = format!("{s}%");
            Some(if negated {
                tree::col(name).not_like(&pattern)
            } else {
                tree::col(name).like(&pattern)
            })
        }
        _ => None,
    });
    let first = tests.next()??;
    let joined = tests.try_fold(first, |acc, t| {
        let t = t?;
        Some(if negated { acc.and(t) } else { acc.or(t) })
    })?;
    Some((joined, true))
}

trait CmpExt {
    fn cmp_op(self, op: CmpOp, other: Literal) -> T;
}

impl CmpExt for T {
    fn cmp_op(self, op: CmpOp, other: Literal) -> T {
        T::Compare(Box::new(self), op, Box::new(T::Literal(other)))
    }
}

/// Floats: `(leaf) OR col = 0.0 OR col = NaN` (see the module comment), `IS NOT NULL` when a
/// literal is NaN (a negative NaN sorts below every number in arrow, above in tamis).
fn widen(leaf: T, (name, dt): (&str, &DataType), values: &[Literal]) -> (T, bool) {
    if !is_float(dt) {
        return (leaf, true);
    }
    let nan = values
        .iter()
        .any(|v| matches!(v, Literal::Float(f) if f.is_nan()));
    let c = || tree::col(name);
    if nan {
        return (c().is_not_null(), false);
    }
    let widened = leaf
        .or(c().eq(Literal::Float(0.0)))
        .or(c().eq(Literal::Float(f64::NAN)));
    (widened, false)
}

/// `a op b` on two columns, exact where DataFusion's coercion compares exactly what tamis does:
/// integers and decimals with each other (both compare the exact values), strings with strings,
/// binary with binary, and otherwise identical types (booleans, dates, timestamps of one unit
/// and zone). Floats are not converted (their orders differ, see above), nor is arithmetic:
/// DataFusion's integer arithmetic wraps on overflow where tamis's is exact.
fn columns_compared(
    (a, ta): (&str, &DataType),
    op: CmpOp,
    (b, tb): (&str, &DataType),
    neg: bool,
) -> Option<(T, bool)> {
    let exact_number = |t: &DataType| t.is_integer() || matches!(t, DataType::Decimal128(..));
    let comparable = (exact_number(ta) && exact_number(tb))
        || (is_string(ta) && is_string(tb))
        || (is_binary(ta) && is_binary(tb))
        || (ta == tb && !is_float(ta));
    if !comparable {
        return None;
    }
    let op = if neg { op.negate() } else { op };
    Some((
        T::Compare(Box::new(tree::col(a)), op, Box::new(tree::col(b))),
        true,
    ))
}

/// The column `e` names, under a cast that DataFusion's type coercion adds to compare two
/// columns (`CAST(i32 AS Int64) < i64`), when that cast keeps every value exactly: integers to
/// wider integers or to decimals with room for all their digits, decimals to decimals with at
/// least their scale and integer digits, strings or binaries to another of their kinds. tamis
/// compares the exact values without it.
fn widened<'s>(e: &Expr, schema: &'s Schema) -> Option<(&'s str, &'s DataType)> {
    let Expr::Cast(datafusion::logical_expr::Cast { expr, field }) = e else {
        return column(e, schema);
    };
    let data_type = field.data_type();
    let (name, from) = column(expr, schema)?;
    let int_digits = |t: &DataType| -> Option<i16> {
        Some(match t {
            DataType::Int8 | DataType::UInt8 => 3,
            DataType::Int16 | DataType::UInt16 => 5,
            DataType::Int32 | DataType::UInt32 => 10,
            DataType::Int64 => 19,
            DataType::UInt64 => 20,
            DataType::Decimal128(p, s) => *p as i16 - *s as i16,
            _ => return None,
        })
    };
    let keeps = match (from, data_type) {
        (f, t) if f.is_integer() && t.is_integer() => {
            let signed = |t: &DataType| t.is_signed_integer();
            let bits = |t: &DataType| t.primitive_width().unwrap_or(0) * 8;
            (signed(f) == signed(t) && bits(t) >= bits(f))
                || (!signed(f) && signed(t) && bits(t) > bits(f))
        }
        (f, &DataType::Decimal128(_, s)) => {
            let from_scale = match f {
                DataType::Decimal128(_, fs) => *fs,
                _ => 0,
            };
            s >= from_scale && int_digits(data_type)? >= int_digits(f)?
        }
        // Another representation of the same strings (a `Utf8` column compared with a view).
        (f, t) => (is_string(f) && is_string(t)) || (is_binary(f) && is_binary(t)),
    };
    keeps.then_some((name, from))
}

/// A DataFusion comparison operator as tamis's (`None` for every other operator).
pub(crate) fn cmp_op(op: Operator) -> Option<CmpOp> {
    Some(match op {
        Operator::Eq => CmpOp::Eq,
        Operator::NotEq => CmpOp::NotEq,
        Operator::Lt => CmpOp::Lt,
        Operator::LtEq => CmpOp::LtEq,
        Operator::Gt => CmpOp::Gt,
        Operator::GtEq => CmpOp::GtEq,
        _ => return None,
    })
}

/// The table column `e` names, with its type, if tamis can filter that type.
fn column<'s>(e: &Expr, schema: &'s Schema) -> Option<(&'s str, &'s DataType)> {
    let Expr::Column(c) = e else { return None };
    let field = schema.field_with_name(&c.name).ok()?;
    let dt = field.data_type();
    let ok = dt.is_integer()
        || is_float(dt)
        || is_string(dt)
        || is_binary(dt)
        || matches!(
            dt,
            DataType::Boolean
                | DataType::Date32
                | DataType::Decimal128(..)
                | DataType::Timestamp(..)
        );
    ok.then_some((field.name().as_str(), dt))
}

pub(crate) fn is_float(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Float16 | DataType::Float32 | DataType::Float64
    )
}

fn is_string(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

fn is_binary(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView
    )
}

/// `e` as a literal for a column of type `dt`: only literals of the column's own type family
/// (DataFusion's type coercion has made them so), converted exactly; NULL of any type.
fn literal(e: &Expr, dt: &DataType) -> Option<Literal> {
    let Expr::Literal(v, _) = e else { return None };
    if v.is_null() {
        return Some(Literal::Null);
    }
    scalar_literal(v, dt)
}

/// A non-null scalar as a literal for a column of type `dt` (see [`literal`]).
pub(crate) fn scalar_literal(v: &ScalarValue, dt: &DataType) -> Option<Literal> {
    use ScalarValue as S;
    let int = |v: &S| -> Option<Literal> {
        Some(match v {
            S::Int8(Some(x)) => (*x).into(),
            S::Int16(Some(x)) => (*x).into(),
            S::Int32(Some(x)) => (*x).into(),
            S::Int64(Some(x)) => (*x).into(),
            S::UInt8(Some(x)) => (*x).into(),
            S::UInt16(Some(x)) => (*x).into(),
            S::UInt32(Some(x)) => (*x).into(),
            S::UInt64(Some(x)) => (*x).into(),
            _ => return None,
        })
    };
    match dt {
        _ if dt.is_integer() => int(v),
        DataType::Decimal128(..) => match v {
            S::Decimal128(Some(x), _, s) => Some(Literal::decimal(*x, *s)),
            _ => int(v),
        },
        _ if is_float(dt) => match v {
            S::Float32(Some(x)) => Some(Literal::Float(*x as f64)),
            S::Float64(Some(x)) => Some(Literal::Float(*x)),
            _ => None,
        },
        _ if is_string(dt) => match v {
            S::Utf8(Some(s)) | S::LargeUtf8(Some(s)) | S::Utf8View(Some(s)) => {
                Some(Literal::String(s.clone()))
            }
            _ => None,
        },
        _ if is_binary(dt) => match v {
            S::Binary(Some(b)) | S::LargeBinary(Some(b)) | S::BinaryView(Some(b)) => {
                Some(Literal::Binary(b.clone()))
            }
            _ => None,
        },
        DataType::Boolean => match v {
            S::Boolean(Some(b)) => Some(Literal::Bool(*b)),
            _ => None,
        },
        DataType::Date32 => match v {
            S::Date32(Some(d)) => {
                let day = NaiveDate::default().checked_add_signed(TimeDelta::days(*d as i64))?;
                Some(Literal::Date(day))
            }
            _ => None,
        },
        DataType::Timestamp(_, col_tz) => {
            let (value, per_second, tz) = match v {
                S::TimestampSecond(Some(x), tz) => (*x, 1, tz),
                S::TimestampMillisecond(Some(x), tz) => (*x, 1_000, tz),
                S::TimestampMicrosecond(Some(x), tz) => (*x, 1_000_000, tz),
                S::TimestampNanosecond(Some(x), tz) => (*x, 1_000_000_000, tz),
                _ => return None,
            };
            if tz.is_some() != col_tz.is_some() {
                return None;
            }
            let secs = value.div_euclid(per_second);
            let nanos = value.rem_euclid(per_second) * (1_000_000_000 / per_second);
            let t = DateTime::from_timestamp(secs, nanos as u32)?.naive_utc();
            // Instants of zoned columns are UTC; naive ones are wall clock.
            Some(Literal::Timestamp(t, tz.as_ref().map(|_| 0)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::{Field, TimeUnit};
    use datafusion::logical_expr::{col, lit};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("i", DataType::Int32, true),
            Field::new("f", DataType::Float64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("b", DataType::Boolean, true),
            Field::new(
                "t",
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                true,
            ),
        ])
    }

    fn conv(e: Expr) -> Option<(String, bool)> {
        convert(&e, &schema()).map(|c| (c.expr.to_string(), c.exact))
    }

    #[test]
    fn exact_where_semantics_agree() {
        assert_eq!(conv(col("i").lt(lit(5i32))), Some(("i < 5".into(), true)));
        assert_eq!(conv(lit(5i32).lt(col("i"))), Some(("i > 5".into(), true)));
        assert_eq!(
            conv(col("s").eq(lit("a")).and(col("i").is_null())),
            Some(("s = 'a' AND i IS NULL".into(), true))
        );
        assert_eq!(
            conv(col("i").lt(lit(5i32)).or(col("b"))).map(|c| c.1),
            Some(true)
        );
        assert_eq!(conv(col("s").like(lit("a%"))).map(|c| c.1), Some(true));
        // Backslash: arrow's escape, not tamis's.
        assert_eq!(conv(col("s").like(lit("a\\%"))), None);
        assert_eq!(
            conv(Expr::Not(Box::new(col("i").gt_eq(lit(3i32))))),
            Some(("i < 3".into(), true))
        );
    }

    #[test]
    fn prefixes_compared_with_literals_become_like() {
        use datafusion::functions::unicode::expr_fn::left;
        let substr = |c: Expr, start: Expr, n: Expr| {
            datafusion::functions::unicode::substr().call(vec![c, start, n])
        };
        let sub = |n: i64| substr(col("s"), lit(1i64), lit(n));
        assert_eq!(
            conv(sub(2).in_list(vec![lit("13"), lit("ün")], false)),
            Some(("s LIKE '13%' OR s LIKE 'ün%'".into(), true))
        );
        assert_eq!(
            conv(sub(2).in_list(vec![lit("13"), lit("31")], true)),
            Some(("s NOT LIKE '13%' AND s NOT LIKE '31%'".into(), true))
        );
        assert_eq!(
            conv(Expr::Not(Box::new(left(col("s"), lit(1i64)).eq(lit("a"))))),
            Some(("s NOT LIKE 'a%'".into(), true))
        );
        assert_eq!(
            conv(lit("ab").not_eq(sub(2))),
            Some(("s NOT LIKE 'ab%'".into(), true))
        );
        // Not converted: a literal of another length (it matches a shorter whole string), a
        // wildcard, NULL, a prefix not from the first character, a non-string column.
        assert_eq!(conv(sub(2).eq(lit("a"))), None);
        assert_eq!(
            conv(sub(2).in_list(vec![lit("ab"), lit("a_")], false)),
            None
        );
        assert_eq!(
            conv(sub(2).in_list(vec![lit("ab"), lit(ScalarValue::Utf8(None))], false)),
            None
        );
        assert_eq!(
            conv(substr(col("s"), lit(2i64), lit(2i64)).eq(lit("ab"))),
            None
        );
        assert_eq!(
            conv(substr(col("i"), lit(1i64), lit(1i64)).eq(lit("1"))),
            None
        );
    }

    #[test]
    fn floats_are_widened_and_inexact() {
        let (text, exact) = conv(col("f").lt(lit(1.5f64))).unwrap();
        assert!(!exact);
        assert_eq!(text, "f < 1.5 OR f = 0.0 OR f = CAST('NaN' AS DOUBLE)");
        // Negated: the leaf is negated before widening, never a negated superset.
        let (text, _) = conv(Expr::Not(Box::new(col("f").eq(lit(0.0f64))))).unwrap();
        assert!(text.starts_with("f <> 0.0 OR"), "{text}");
        assert_eq!(
            conv(col("f").gt(lit(f64::NAN))),
            Some(("f IS NOT NULL".into(), false))
        );
    }

    #[test]
    fn unconvertible_parts() {
        // A conjunct that cannot convert is dropped: inexact (two float columns compared).
        let e = col("i").lt(lit(5i32)).and(col("f").eq(col("f")));
        assert_eq!(conv(e), Some(("i < 5".into(), false)));
        // A disjunct that cannot convert drops the disjunction.
        assert_eq!(conv(col("i").lt(lit(5i32)).or(col("f").eq(col("f")))), None);
        // Two integer columns compare exactly; NOT flips the operator.
        let e = Expr::Not(Box::new(col("i").lt(col("i"))));
        assert_eq!(conv(e), Some(("i >= i".into(), true)));
        // A string column with an integer one does not convert.
        assert_eq!(conv(col("s").eq(col("i"))), None);
        assert_eq!(conv(col("zz").eq(lit(1i32))), None);
        assert_eq!(conv(col("s").eq(lit(1i32))), None);
        let ts = Expr::Literal(
            ScalarValue::TimestampMicrosecond(Some(1), Some("UTC".into())),
            None,
        );
        assert_eq!(
            conv(col("t").gt_eq(ts)),
            Some((
                "t >= TIMESTAMPTZ '1970-01-01 00:00:00.000001+00:00'".into(),
                true
            ))
        );
    }
}
