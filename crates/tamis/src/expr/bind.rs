//! Binding: an unbound [`Expr`] tree → a [`Predicate`] on one file's leaf columns.
//!
//! Names are bound to leaf columns, literals are converted into each column's [`Domain`]
//! (adjusting the operator when a literal is not exactly representable or lies outside the
//! column's range), NOT is pushed down to the leaves (NNF, De Morgan), BETWEEN becomes two
//! comparisons and constants are folded.
//!
//! Time zones: naive timestamp literals are read as UTC for UTC-adjusted columns and as wall
//! clock for local ones; a literal with an explicit offset is converted to UTC first (for a
//! local column that UTC wall clock is used, as if the session time zone were UTC).

use chrono::{NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use parquet::basic::Type as PhysicalType;

use super::compare::{Comparison, Number, Operand};
use super::key_filter::KeyKind;
use super::tree::{Column, Expr, Literal as Lit};
use super::{CmpOp, Leaf, LeafOp, LikePattern, Predicate, Scalar, Verdict};
use crate::error::{Error, Result};
use crate::schema::{Domain, LeafColumn, LogicalKind, Unit};

/// Binds `e` to `columns`: the predicate in negation normal form, constants folded.
pub fn bind(e: &Expr, columns: &[LeafColumn]) -> Result<Predicate> {
    let bound = Binder { columns }.bind(e, false)?;
    Ok(bound.simplify(&mut |_| Verdict::Unknown))
}

/// A predicate implied by `e` that names only `columns`: the parts naming other columns (or
/// that cannot be bound) are dropped where that only weakens it — a conjunct becomes TRUE, a
/// disjunction with such a part is dropped whole. `None` when nothing is left.
pub fn bind_implied(e: &Expr, columns: &[LeafColumn]) -> Option<Predicate> {
    let bound = Binder { columns }.bind_implied(e, false)?;
    match bound.simplify(&mut |_| Verdict::Unknown) {
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
fn describe(e: &Expr) -> &str {
    match e {
        Expr::Unsupported { kind, .. } => kind,
        Expr::Compare(..) | Expr::And(..) | Expr::Or(..) | Expr::Not(_) | Expr::Arith(..) => {
            "arithmetic"
        }
        _ => "unsupported expression",
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
    /// [`bind_implied`]'s binding: `None` where `e` cannot be bound.
    fn bind_implied(&self, e: &Expr, neg: bool) -> Option<Predicate> {
        match e {
            Expr::Not(inner) => self.bind_implied(inner, !neg),
            Expr::And(left, right) | Expr::Or(left, right) => {
                if matches!(e, Expr::And(..)) != neg {
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
            Expr::Not(inner) => self.bind(inner, !neg),
            Expr::And(left, right) | Expr::Or(left, right) => {
                let l = self.bind(left, neg)?;
                let r = self.bind(right, neg)?;
                let conj = matches!(e, Expr::And(..)) != neg;
                Ok(if conj {
                    Predicate::And(vec![l, r])
                } else {
                    Predicate::Or(vec![l, r])
                })
            }
            Expr::Compare(left, cmp, right) => {
                let (lc, rc) = (self.column_ref(left)?, self.column_ref(right)?);
                let plain = |x: &Expr| !matches!(x, Expr::Arith(..));
                if (lc.is_some() && rc.is_some()) || !plain(left) || !plain(right) {
                    return self.compare_columns(e, left, *cmp, right, neg);
                }
                let (col, op, lit) = match (lc, rc) {
                    (Some(_), Some(_)) => unreachable!("compared as columns above"),
                    (Some(c), None) => (c, *cmp, right),
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
            Expr::IsNull { expr, negated } => {
                let col = self.filterable(self.require_column(expr, e)?)?;
                Ok(leaf(
                    col,
                    LeafOp::IsNull {
                        negated: *negated != neg,
                    },
                ))
            }
            Expr::IsBool {
                expr,
                value,
                negated,
            } => {
                let col = self.filterable(self.require_column(expr, e)?)?;
                if col.domain() != Domain::Bool {
                    return Err(Error::invalid(format!(
                        "type mismatch: column '{}' is {}, `{e}` needs a BOOLEAN column",
                        col.path,
                        type_name(col)
                    )));
                }
                let target = *value;
                let is = *negated == neg;
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
            Expr::Column(_) => {
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
            Expr::Literal(v) => match v {
                Lit::Bool(b) => Ok(if *b != neg {
                    Predicate::True
                } else {
                    Predicate::False
                }),
                // NULL and NOT NULL are both unknown.
                Lit::Null => Ok(Predicate::False),
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
            Expr::InKeys { expr, filter } => {
                let col = self.filterable(self.require_column(expr, e)?)?;
                let fits = match filter.kind() {
                    KeyKind::Int => matches!(col.domain(), Domain::Int | Domain::UInt),
                    KeyKind::Bytes => col.domain() == Domain::Bytes,
                };
                if !fits {
                    return Err(Error::invalid(format!(
                        "type mismatch: column '{}' is {}, join keys '{}' are {:?}",
                        col.path,
                        type_name(col),
                        filter.label(),
                        filter.kind()
                    )));
                }
                Ok(if neg {
                    Predicate::True
                } else {
                    leaf(col, LeafOp::InKeys(filter.clone()))
                })
            }
            Expr::Like {
                negated,
                expr,
                pattern,
                escape,
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
                    Lit::String(s) => s,
                    other => {
                        return Err(Error::invalid(format!(
                            "type mismatch: LIKE pattern `{pattern}` for column '{}' is {}, not a \
                             string",
                            col.path,
                            other.kind()
                        )))
                    }
                };
                let escape = match escape {
                    None => None,
                    Some(x) => match self.literal(x)? {
                        Lit::Null => return Ok(Predicate::False),
                        Lit::String(s) if s.chars().count() == 1 => s.chars().next(),
                        Lit::String(s) if s.is_empty() => None,
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
            Expr::Invalid { kind, message } => Err(Error::new(*kind, message.clone())),
            Expr::Unsupported { .. } | Expr::Arith(..) => Err(unsupported(describe(e), e)),
        }
    }

    /// `left op right` with columns or arithmetic on both sides: a [`Comparison`] evaluated
    /// row by row; FALSE when a side is NULL (the comparison is then NULL, negated or not).
    fn compare_columns(
        &self,
        whole: &Expr,
        left: &Expr,
        op: CmpOp,
        right: &Expr,
        neg: bool,
    ) -> Result<Predicate> {
        let (l, r) = (self.operand(left, whole)?, self.operand(right, whole)?);
        let (Some(l), Some(r)) = (l, r) else {
            return Ok(Predicate::False);
        };
        let comparison = Comparison::new(l, if neg { op.negate() } else { op }, r, self.columns)?;
        if comparison.columns().is_empty() {
            return Err(unsupported("comparison without a column", whole));
        }
        Ok(Predicate::Compare(std::sync::Arc::new(comparison)))
    }

    /// One side of a [`Comparison`]; `None` for NULL (or arithmetic with a NULL).
    fn operand(&self, x: &Expr, whole: &Expr) -> Result<Option<Operand>> {
        Ok(match x {
            Expr::Column(_) => {
                let col = self.filterable(self.require_column(x, whole)?)?;
                Some(Operand::Column(col.index))
            }
            Expr::Literal(Lit::Null) => None,
            Expr::Literal(Lit::Number(text)) => Some(Operand::Number(exact_number(text)?)),
            Expr::Literal(Lit::Float(f)) => Some(Operand::Number(Number::Float(*f))),
            Expr::Literal(other) => {
                return Err(Error::unsupported(format!(
                    "{} in arithmetic or a comparison between columns: `{whole}`",
                    other.kind()
                )))
            }
            Expr::Arith(a, op, b) => match (self.operand(a, whole)?, self.operand(b, whole)?) {
                (Some(a), Some(b)) => Some(Operand::Arith(Box::new(a), *op, Box::new(b))),
                _ => None,
            },
            Expr::Invalid { kind, message } => return Err(Error::new(*kind, message.clone())),
            _ => return Err(unsupported(describe(x), whole)),
        })
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

    /// The column `e` names, if it is a column reference.
    fn column_ref(&self, e: &Expr) -> Result<Option<&LeafColumn>> {
        let Expr::Column(Column { path, exact }) = e else {
            return Ok(None);
        };
        if let Some(c) = self.columns.iter().find(|c| &c.path == path) {
            return Ok(Some(c));
        }
        if !exact {
            let matches: Vec<&LeafColumn> = self
                .columns
                .iter()
                .filter(|c| c.path.eq_ignore_ascii_case(path))
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
            Expr::Literal(l) => Ok(l.clone()),
            Expr::Invalid { kind, message } => Err(Error::new(*kind, message.clone())),
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

pub(crate) fn parse_f64(t: &str) -> Option<f64> {
    let l = t.trim().to_ascii_lowercase();
    match l.as_str() {
        "nan" | "+nan" | "-nan" => Some(f64::NAN),
        "inf" | "+inf" | "infinity" | "+infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        _ => l.parse::<f64>().ok().filter(|_| parse_number(&l).is_some()),
    }
}

/// `YYYY-MM-DD[( |T)HH:MM[:SS[.fff…]]][Z|UTC|±HH[:MM]]`: the naive value and UTC offset (s).
pub(crate) fn parse_timestamp(t: &str) -> Option<(NaiveDateTime, Option<i32>)> {
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

pub(crate) fn parse_time(t: &str) -> Option<NaiveTime> {
    ["%H:%M:%S%.f", "%H:%M"]
        .iter()
        .find_map(|f| NaiveTime::parse_from_str(t.trim(), f).ok())
}

/// An exact decimal number: `mantissa * 10^exp`, or `None` if `t` is not a plain number.
pub(crate) fn parse_number(t: &str) -> Option<(bool, Vec<u8>, i64)> {
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

/// A number literal as an exact scaled integer (at most 38 digits and scale 38).
fn exact_number(text: &str) -> Result<Number> {
    let too_big = || {
        Error::unsupported(format!(
            "number {text} in arithmetic has more than 38 digits or decimal places"
        ))
    };
    let (neg, mut digits, mut exp) =
        parse_number(text).ok_or_else(|| Error::invalid(format!("`{text}` is not a number")))?;
    let lead = digits.iter().take_while(|&&d| d == 0).count();
    digits.drain(..lead);
    // Trailing zeros of a fraction are kept (1.50 has scale 2, as in SQL); of an integer they
    // are folded into a positive exponent below.
    let mut unscaled: i128 = 0;
    for &d in &digits {
        unscaled = unscaled
            .checked_mul(10)
            .and_then(|v| v.checked_add(d as i128))
            .ok_or_else(too_big)?;
    }
    while exp > 0 {
        unscaled = unscaled.checked_mul(10).ok_or_else(too_big)?;
        exp -= 1;
    }
    let scale = u8::try_from(-exp)
        .ok()
        .filter(|&s| s <= 38)
        .ok_or_else(too_big)?;
    Ok(Number::Exact {
        unscaled: if neg { -unscaled } else { unscaled },
        scale,
    })
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

pub(crate) fn nanos_per(unit: Unit) -> i128 {
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
            Lit::String(s) if s.eq_ignore_ascii_case("true") => {
                Ok(Bound::Leaf(op, Scalar::Bool(true)))
            }
            Lit::String(s) if s.eq_ignore_ascii_case("false") => {
                Ok(Bound::Leaf(op, Scalar::Bool(false)))
            }
            _ => Err(mismatch()),
        },
        Domain::Float => {
            let f = match lit {
                Lit::Float(f) => *f,
                Lit::Number(n) => parse_f64(n).ok_or_else(mismatch)?,
                Lit::String(s) => parse_f64(s).ok_or_else(mismatch)?,
                _ => return Err(mismatch()),
            };
            Ok(Bound::Leaf(op, Scalar::Float(f)))
        }
        Domain::Bytes => match lit {
            Lit::String(s) => Ok(Bound::Leaf(op, Scalar::Bytes(s.as_bytes().to_vec()))),
            Lit::Binary(h) if col.logical == LogicalKind::Binary => {
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
                        Lit::String(s) => float_grid(s, scale)
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
                (LogicalKind::Date, Lit::String(s)) => {
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
                (LogicalKind::Timestamp { unit, .. }, Lit::String(s)) => {
                    let (ts, off) = parse_timestamp(s).ok_or_else(mismatch)?;
                    grid_div(timestamp_nanos(&ts, off), nanos_per(*unit))
                }
                (LogicalKind::Time { unit }, Lit::Time(_) | Lit::String(_)) => {
                    let t = match lit {
                        Lit::String(s) => parse_time(s).ok_or_else(mismatch)?,
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
