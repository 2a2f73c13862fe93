//! Predicates between columns: `l_commitdate < l_receiptdate`, `a = b`, and comparisons with
//! arithmetic on either side (`l_extendedprice * (1 - l_discount) > 1000`).
//!
//! They cannot be decided per value of one column, so the scan evaluates them last-ish (the cost
//! model orders them like any other filter) on the rows still alive: the columns are decoded for
//! those rows only and compared row by row.
//!
//! Semantics (those of DuckDB and the SQL standard):
//! * Numbers are exact: integers and decimals are evaluated as scaled 128-bit integers (`+`/`-`
//!   align scales, `*` adds them), an overflow is an error, never a wrapped value. A FLOAT or
//!   DOUBLE anywhere makes that side a double; an exact side compared with a double is converted
//!   to it. Floats order as everywhere in tamis: NaN above every number, -0.0 = 0.0.
//! * Dates, times and timestamps compare with a column of the same type and unit only, and take
//!   no arithmetic. Strings and binary compare bytewise, booleans false < true.
//! * A NULL on either side makes the comparison NULL: the row is not selected (nor by its
//!   negation).
//!
//! Over a dataset a side may name a column that is constant in a file (a hive partition key, or
//! a column the file lacks, NULL): [`Comparison::fold`] puts its value in as a
//! [`Operand::Constant`], so the file's residual names only the file's own columns.

mod rows;

pub(crate) use rows::ColumnRows;
use rows::{compare_into, eval_operand, rescaled, Vector};

use std::fmt;

use super::{cmp_f64, to_scalar, CmpOp, PhysicalRef};
use crate::error::{Error, Result};
use crate::schema::{Domain, LeafColumn, LogicalKind};
use crate::values::Values;

/// `+`, `-` or `*` (division would need rounding rules of its own; it is refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
}

impl ArithOp {
    pub fn sql(self) -> &'static str {
        match self {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
        }
    }
}

/// An exact number `unscaled × 10^-scale` or a double.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    Exact { unscaled: i128, scale: u8 },
    Float(f64),
}

/// One side of a comparison between columns.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// A leaf column, by index.
    Column(usize),
    Number(Number),
    Arith(Box<Operand>, ArithOp, Box<Operand>),
    /// A column that holds one non-null value in every row of a file (a partition key), typed
    /// as that column: a partition `day` compares with a date column as a date would.
    Constant(std::sync::Arc<Constant>),
}

/// The value of a column constant in a file ([`Operand::Constant`]).
#[derive(Debug, Clone)]
pub struct Constant {
    /// The column it stands for (its type; its index is meaningless in the file).
    pub column: LeafColumn,
    /// Exactly one value, decoded as a dictionary of that column would be.
    pub value: Values,
}

impl PartialEq for Constant {
    fn eq(&self, other: &Constant) -> bool {
        self.column.path == other.column.path
            && self.column.physical == other.column.physical
            && self.column.logical == other.column.logical
            && self.value == other.value
    }
}

impl Operand {
    fn columns(&self, out: &mut Vec<usize>) {
        match self {
            Operand::Column(c) => out.push(*c),
            Operand::Number(_) | Operand::Constant(_) => {}
            Operand::Arith(a, _, b) => {
                a.columns(out);
                b.columns(out);
            }
        }
    }

    /// `self` with the columns `constant` knows put in (`Err(())`: one of them is NULL, so is
    /// the operand).
    fn fold(
        &self,
        constant: &mut impl FnMut(usize) -> Option<Option<Constant>>,
    ) -> std::result::Result<Operand, ()> {
        Ok(match self {
            Operand::Column(c) => match constant(*c) {
                None => self.clone(),
                Some(None) => return Err(()),
                Some(Some(k)) => Operand::Constant(std::sync::Arc::new(k)),
            },
            Operand::Number(_) | Operand::Constant(_) => self.clone(),
            Operand::Arith(a, op, b) => Operand::Arith(
                Box::new(a.fold(constant)?),
                *op,
                Box::new(b.fold(constant)?),
            ),
        })
    }
}

/// `left op right`, at least one side naming a column and the two sides of compatible types
/// (checked by [`Comparison::new`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub left: Operand,
    pub op: CmpOp,
    pub right: Operand,
}

/// What an operand holds, for type checking at binding.
#[derive(Debug, Clone, PartialEq)]
enum Type {
    /// Exact with this scale, or a double.
    Exact(u8),
    Float,
    /// A date, time or timestamp column: comparable only with the same kind.
    Temporal(LogicalKind),
    Bytes,
    Bool,
}

/// Largest scale an exact intermediate may have (i128 holds 38 digits).
const MAX_SCALE: u8 = 38;

impl Comparison {
    /// Type-checks `left op right` against `columns`: an error names what cannot be compared.
    pub fn new(left: Operand, op: CmpOp, right: Operand, columns: &[LeafColumn]) -> Result<Self> {
        let (l, r) = (type_of(&left, columns)?, type_of(&right, columns)?);
        let ok = match (&l, &r) {
            (Type::Exact(_) | Type::Float, Type::Exact(_) | Type::Float) => true,
            (Type::Temporal(a), Type::Temporal(b)) => a == b,
            (a, b) => a == b,
        };
        if !ok {
            return Err(Error::invalid(format!(
                "type mismatch: cannot compare {} with {}",
                describe(&left, &l, columns),
                describe(&right, &r, columns)
            )));
        }
        Ok(Comparison { left, op, right })
    }

    /// Leaf columns read, ascending, without duplicates.
    pub fn columns(&self) -> Vec<usize> {
        let mut out = Vec::new();
        self.left.columns(&mut out);
        self.right.columns(&mut out);
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The comparison in a file where some columns are constant: `constant(leaf)` is `None` for
    /// a column the file reads, `Some(None)` for one that is NULL throughout (a column the file
    /// lacks) and `Some(Some(value))` for a partition key. NULL on either side makes the
    /// comparison NULL, which no row satisfies (negated or not: NOT sits on the operator); a
    /// comparison left without columns is decided here.
    pub fn fold(
        &self,
        constant: &mut impl FnMut(usize) -> Option<Option<Constant>>,
    ) -> Result<super::Predicate> {
        use super::Predicate;
        let (Ok(left), Ok(right)) = (self.left.fold(constant), self.right.fold(constant)) else {
            return Ok(Predicate::False);
        };
        let folded = Comparison {
            left,
            op: self.op,
            right,
        };
        if !folded.columns().is_empty() {
            return Ok(Predicate::Compare(std::sync::Arc::new(folded)));
        }
        Ok(match folded.evaluate(&[], 1)?.first() {
            Some(true) => Predicate::True,
            _ => Predicate::False,
        })
    }

    /// The comparison with its operator negated (`NOT (a < b)` is `a >= b` for non-null rows).
    pub fn negated(&self) -> Comparison {
        Comparison {
            op: self.op.negate(),
            ..self.clone()
        }
    }

    /// Bit `i` is whether the comparison is TRUE on row `i` of `rows`: the decoded values of
    /// each column the comparison reads, for the same `n` rows, and their validity.
    pub fn evaluate(&self, rows: &[ColumnRows<'_>], n: usize) -> Result<Vec<bool>> {
        if let (Operand::Column(a), Operand::Column(b)) = (&self.left, &self.right) {
            let find = |c: usize| rows.iter().find(|r| r.column.index == c);
            if let (Some(a), Some(b)) = (find(*a), find(*b)) {
                if let Some(out) = same_type_columns(a, self.op, b, n) {
                    return Ok(out);
                }
            }
        }
        let l = eval_operand(&self.left, rows, n)?;
        let r = eval_operand(&self.right, rows, n)?;
        let op = self.op;
        let mut out = vec![false; n];
        match (&l.values, &r.values) {
            (Vector::Exact(a, sa), Vector::Exact(b, sb)) if sa == sb => {
                compare_into(&mut out, &l, &r, |i| a[i].cmp(&b[i]), op);
            }
            (Vector::Exact(a, sa), Vector::Exact(b, sb)) => {
                let s = (*sa).max(*sb);
                let (a, b) = (rescaled(a, *sa, s)?, rescaled(b, *sb, s)?);
                compare_into(&mut out, &l, &r, |i| a[i].cmp(&b[i]), op);
            }
            (Vector::Float(a), Vector::Float(b)) => {
                compare_into(&mut out, &l, &r, |i| cmp_f64(a[i], b[i]), op)
            }
            (Vector::Exact(..), Vector::Float(b)) => {
                let a = l.values.as_f64();
                compare_into(&mut out, &l, &r, |i| cmp_f64(a[i], b[i]), op)
            }
            (Vector::Float(a), Vector::Exact(..)) => {
                let b = r.values.as_f64();
                compare_into(&mut out, &l, &r, |i| cmp_f64(a[i], b[i]), op)
            }
            (Vector::Bytes(a), Vector::Bytes(b)) => {
                compare_into(&mut out, &l, &r, |i| a.get(i).cmp(b.get(i)), op)
            }
            (Vector::Bool(a), Vector::Bool(b)) => {
                compare_into(&mut out, &l, &r, |i| a[i].cmp(&b[i]), op)
            }
            _ => return Err(Error::internal("comparison sides of different types")),
        }
        Ok(out)
    }

    /// SQL text, naming columns by their paths.
    pub fn render(&self, columns: &[LeafColumn]) -> String {
        format!(
            "{} {} {}",
            Rendered(&self.left, columns, false),
            self.op.sql(),
            Rendered(&self.right, columns, false)
        )
    }
}

/// Two bare columns holding the same physical type in the same domain (two dates, two
/// DECIMAL(15,2) columns, two strings): compared on their decoded values as they are, without
/// widening. `None` when the types differ.
fn same_type_columns(
    a: &ColumnRows<'_>,
    op: CmpOp,
    b: &ColumnRows<'_>,
    n: usize,
) -> Option<Vec<bool>> {
    let (ca, cb) = (a.column, b.column);
    if ca.physical != cb.physical
        || ca.domain() != cb.domain()
        || exact_scale(ca) != exact_scale(cb)
        || a.validity.len() != n
        || b.validity.len() != n
    {
        return None;
    }
    let unsigned = ca.domain() == Domain::UInt;
    Some(match (&a.values, &b.values) {
        (Values::I32(x), Values::I32(y)) if unsigned => compare_dense(
            x,
            &a.validity,
            y,
            &b.validity,
            |p, q| (*p as u32).cmp(&(*q as u32)),
            op,
        ),
        (Values::I32(x), Values::I32(y)) => {
            compare_dense(x, &a.validity, y, &b.validity, |p, q| p.cmp(q), op)
        }
        (Values::I64(x), Values::I64(y)) if unsigned => compare_dense(
            x,
            &a.validity,
            y,
            &b.validity,
            |p, q| (*p as u64).cmp(&(*q as u64)),
            op,
        ),
        (Values::I64(x), Values::I64(y)) => {
            compare_dense(x, &a.validity, y, &b.validity, |p, q| p.cmp(q), op)
        }
        (Values::F32(x), Values::F32(y)) => compare_dense(
            x,
            &a.validity,
            y,
            &b.validity,
            |p, q| cmp_f64(*p as f64, *q as f64),
            op,
        ),
        (Values::F64(x), Values::F64(y)) => {
            compare_dense(x, &a.validity, y, &b.validity, |p, q| cmp_f64(*p, *q), op)
        }
        (Values::Bytes(x), Values::Bytes(y)) if ca.domain() == Domain::Bytes => {
            let (xs, ys): (Vec<&[u8]>, Vec<&[u8]>) = (x.iter().collect(), y.iter().collect());
            compare_dense(&xs, &a.validity, &ys, &b.validity, |p, q| p.cmp(q), op)
        }
        _ => return None,
    })
}

/// Row `i` is `op` on the dense values of rows valid on both sides (`false` where either is
/// NULL); `x` and `y` hold one value per valid row.
fn compare_dense<T>(
    x: &[T],
    vx: &[bool],
    y: &[T],
    vy: &[bool],
    cmp: impl Fn(&T, &T) -> std::cmp::Ordering,
    op: CmpOp,
) -> Vec<bool> {
    if x.len() == vx.len() && y.len() == vy.len() {
        return x.iter().zip(y).map(|(p, q)| op.holds(cmp(p, q))).collect();
    }
    let (mut i, mut j) = (0, 0);
    vx.iter()
        .zip(vy)
        .map(|(&a, &b)| {
            let holds = a
                && b
                && x.get(i)
                    .zip(y.get(j))
                    .is_some_and(|(p, q)| op.holds(cmp(p, q)));
            i += a as usize;
            j += b as usize;
            holds
        })
        .collect()
}

fn type_of(o: &Operand, columns: &[LeafColumn]) -> Result<Type> {
    Ok(match o {
        Operand::Number(Number::Exact { scale, .. }) => Type::Exact(*scale),
        Operand::Number(Number::Float(_)) => Type::Float,
        Operand::Constant(k) => column_type(&k.column)?,
        Operand::Column(c) => column_type(column(columns, *c)?)?,
        Operand::Arith(a, op, b) => {
            let (ta, tb) = (type_of(a, columns)?, type_of(b, columns)?);
            match (&ta, &tb) {
                (&Type::Exact(x), &Type::Exact(y)) => {
                    let scale = match op {
                        ArithOp::Add | ArithOp::Sub => x.max(y),
                        ArithOp::Mul => x.saturating_add(y),
                    };
                    if scale > MAX_SCALE {
                        return Err(Error::unsupported(format!(
                            "arithmetic with a result scale of {scale} (above {MAX_SCALE})"
                        )));
                    }
                    Type::Exact(scale)
                }
                (Type::Exact(_) | Type::Float, Type::Exact(_) | Type::Float) => Type::Float,
                _ => {
                    let bad = if matches!(ta, Type::Exact(_) | Type::Float) {
                        (b, &tb)
                    } else {
                        (a, &ta)
                    };
                    return Err(Error::unsupported(format!(
                        "arithmetic on {}",
                        describe(bad.0, bad.1, columns)
                    )));
                }
            }
        }
    })
}

/// What a column holds, for type checking.
fn column_type(col: &LeafColumn) -> Result<Type> {
    Ok(match (col.domain(), col.logical.clone()) {
        (_, k @ (LogicalKind::Date | LogicalKind::Time { .. } | LogicalKind::Timestamp { .. })) => {
            Type::Temporal(k)
        }
        (Domain::Int | Domain::Decimal, LogicalKind::Decimal { scale, .. }) => Type::Exact(
            u8::try_from(scale)
                .unwrap_or(MAX_SCALE + 1)
                .min(MAX_SCALE + 1),
        ),
        (Domain::Int | Domain::UInt, _) => Type::Exact(0),
        (Domain::Float, _) => Type::Float,
        (Domain::Bytes, _) => Type::Bytes,
        (Domain::Bool, _) => Type::Bool,
        _ => {
            return Err(Error::unsupported(format!(
                "comparison on column '{}' of type {} is not supported",
                col.path,
                super::bind::type_name(col)
            )))
        }
    })
}

fn column(columns: &[LeafColumn], c: usize) -> Result<&LeafColumn> {
    columns
        .iter()
        .find(|l| l.index == c)
        .ok_or_else(|| Error::internal(format!("comparison names leaf {c}, not in the file")))
}

fn describe(o: &Operand, t: &Type, columns: &[LeafColumn]) -> String {
    let what = match t {
        Type::Exact(_) => "a number".to_string(),
        Type::Float => "a floating-point number".to_string(),
        Type::Temporal(k) => format!("{k:?}").to_lowercase(),
        Type::Bytes => "a string".to_string(),
        Type::Bool => "a boolean".to_string(),
    };
    match o {
        Operand::Column(c) => match column(columns, *c) {
            Ok(col) => format!("column '{}' ({})", col.path, super::bind::type_name(col)),
            Err(_) => what,
        },
        _ => format!("`{}` ({what})", Rendered(o, columns, false)),
    }
}

/// `unscaled × 10^-scale` as decimal text.
pub(crate) fn exact_text(unscaled: i128, scale: u8) -> String {
    let digits = unscaled.unsigned_abs().to_string();
    let sign = if unscaled < 0 { "-" } else { "" };
    let s = scale as usize;
    if s == 0 {
        return format!("{sign}{digits}");
    }
    let padded = format!("{digits:0>width$}", width = s + 1);
    let (int, frac) = padded.split_at(padded.len() - s);
    format!("{sign}{int}.{frac}")
}

fn exact_scale(c: &LeafColumn) -> u8 {
    match c.logical {
        LogicalKind::Decimal { scale, .. } => u8::try_from(scale).unwrap_or(0),
        _ => 0,
    }
}

/// An operand as SQL (`paren`: wrap an arithmetic operand in parentheses).
struct Rendered<'a>(&'a Operand, &'a [LeafColumn], bool);

impl fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Operand::Column(c) => match column(self.1, *c) {
                Ok(col) => write!(f, "{}", col.path),
                Err(_) => write!(f, "#{c}"),
            },
            Operand::Number(Number::Float(x)) => write!(f, "{x:?}"),
            Operand::Constant(k) => match first(&k.value).and_then(|v| to_scalar(&k.column, v)) {
                Some(v) => write!(f, "{}", crate::expr::render::render_scalar(&k.column, &v)),
                None => write!(f, "{}", k.column.path),
            },
            Operand::Number(Number::Exact { unscaled, scale }) => {
                write!(f, "{}", exact_text(*unscaled, *scale))
            }
            Operand::Arith(a, op, b) => {
                let (open, close) = if self.2 { ("(", ")") } else { ("", "") };
                // A right operand of `-` or any operand of `*` that is itself a sum needs
                // parentheses; so does the right side of `-` for any arithmetic.
                let wrap_a = *op == ArithOp::Mul;
                let wrap_b = *op != ArithOp::Add;
                write!(
                    f,
                    "{open}{} {} {}{close}",
                    Rendered(a, self.1, wrap_a && matches!(**a, Operand::Arith(..))),
                    op.sql(),
                    Rendered(b, self.1, wrap_b && matches!(**b, Operand::Arith(..)))
                )
            }
        }
    }
}

/// The first value of `values`, if any.
fn first(values: &Values) -> Option<PhysicalRef<'_>> {
    Some(match values {
        Values::Bool(v) => PhysicalRef::Bool(*v.first()?),
        Values::I32(v) => PhysicalRef::I32(*v.first()?),
        Values::I64(v) => PhysicalRef::I64(*v.first()?),
        Values::F32(v) => PhysicalRef::F32(*v.first()?),
        Values::F64(v) => PhysicalRef::F64(*v.first()?),
        Values::Bytes(b) if !b.is_empty() => PhysicalRef::Bytes(b.get(0)),
        Values::Bytes(_) | Values::I96(_) => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::tests::test_columns;

    fn column(name: &str) -> LeafColumn {
        test_columns().into_iter().find(|c| c.path == name).unwrap()
    }

    #[test]
    fn exact_text_places_the_point() {
        assert_eq!(exact_text(12345, 2), "123.45");
        assert_eq!(exact_text(-5, 3), "-0.005");
        assert_eq!(exact_text(7, 0), "7");
        assert_eq!(exact_text(0, 2), "0.00");
    }

    /// Exact arithmetic that leaves 128 bits is an error, never a wrapped value; NULL rows never
    /// overflow and are never TRUE; mixed scales compare exactly.
    #[test]
    fn overflow_nulls_and_scales() {
        let (i64c, d92) = (column("i64"), column("d92"));
        let cols = test_columns();
        let big = ColumnRows {
            column: &i64c,
            values: Values::I64(vec![i64::MAX, 5]),
            validity: vec![true, false, true],
        };
        let dec = ColumnRows {
            column: &d92,
            values: Values::I32(vec![150, 499, 500]),
            validity: vec![true, true, true],
        };
        let rows = [big, dec];
        let num = |unscaled: i128, scale: u8| Operand::Number(Number::Exact { unscaled, scale });
        let square = Operand::Arith(
            Box::new(Operand::Column(i64c.index)),
            ArithOp::Mul,
            Box::new(Operand::Arith(
                Box::new(Operand::Column(i64c.index)),
                ArithOp::Mul,
                Box::new(num(i64::MAX as i128 * 4, 0)),
            )),
        );
        let c = Comparison::new(square, CmpOp::Gt, num(0, 0), &cols).unwrap();
        let e = c.evaluate(&rows, 3).unwrap_err();
        assert!(e.message.contains("overflow"), "{e}");
        // d92 (scale 2) against i64 + 0.5 (scale 1): 1.50 < MAX + 0.5, the NULL row is false
        // (negated too), 5.00 < 5.5.
        let c = Comparison::new(
            Operand::Column(d92.index),
            CmpOp::Lt,
            Operand::Arith(
                Box::new(Operand::Column(i64c.index)),
                ArithOp::Add,
                Box::new(num(5, 1)),
            ),
            &cols,
        )
        .unwrap();
        assert_eq!(c.evaluate(&rows, 3).unwrap(), vec![true, false, true]);
        assert_eq!(
            c.negated().evaluate(&rows, 3).unwrap(),
            vec![false, false, false]
        );
    }
}
