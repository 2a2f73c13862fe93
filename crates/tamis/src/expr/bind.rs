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

use super::compare::{Comparison, Number, Operand};
use super::key_filter::KeyKind;
use super::literal::{convert, exact_number, Bound};
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
pub(crate) fn bind_implied(e: &Expr, columns: &[LeafColumn]) -> Option<Predicate> {
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
pub(crate) fn type_name(c: &LeafColumn) -> String {
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
