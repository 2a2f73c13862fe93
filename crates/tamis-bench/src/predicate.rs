//! SQL `WHERE` text → arrow-kernel predicates, one per top-level `AND` conjunct.
//!
//! This mirrors how DataFusion feeds the parquet crate: the filter is split at its top-level
//! `AND`s and every conjunct becomes its own `ArrowPredicate`, which only decodes the columns it
//! references. Conjuncts run in written order, each on the rows the previous ones kept.
//!
//! The text is parsed by tamis's own front end ([`tamis::expr::parse()`]), so this peer reads
//! exactly the filters tamis reads; only the compilation to arrow kernels is this crate's.
//! Literals are converted once, at compile time, to the column's Arrow type by casting a
//! one-element `StringArray` of the literal's text, so `DATE '1994-01-01'`, `0.05` against a
//! `Decimal128(15,2)` column, integers, floats and timestamps all go through one well-tested path
//! (arrow's own string parsing); `X'…'` bytes are cast from a one-element `BinaryArray`.

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BooleanArray, RecordBatch, Scalar, StringArray,
};
use arrow::compute::kernels::cmp::{eq, gt, gt_eq, lt, lt_eq, neq};
use arrow::compute::kernels::comparison::{like, nlike};
use arrow::compute::{and_kleene, cast, is_not_null, is_null, not, or_kleene};
use arrow::datatypes::{DataType, Schema};
use arrow::error::ArrowError;
use std::sync::Arc;
use tamis::expr::CmpOp;
use tamis::expr::{Column as Name, Expr, Literal as Lit};

/// A literal already cast to its column's (value) type; `None` is SQL `NULL`.
pub type Literal = Option<ArrayRef>;

/// A compiled predicate. `col` is the position of the column in the batch the predicate is
/// evaluated on (after [`compile_where`], the position inside the conjunct's own projection).
#[derive(Debug, Clone)]
pub enum Pred {
    And(Box<Pred>, Box<Pred>),
    Or(Box<Pred>, Box<Pred>),
    Not(Box<Pred>),
    Cmp {
        col: usize,
        op: CmpOp,
        value: Literal,
    },
    InList {
        col: usize,
        values: Vec<Literal>,
        negated: bool,
    },
    Between {
        col: usize,
        low: Literal,
        high: Literal,
        negated: bool,
    },
    IsNull {
        col: usize,
        negated: bool,
    },
    Like {
        col: usize,
        pattern: ArrayRef,
        negated: bool,
    },
    /// A bare boolean column used as a condition (`WHERE flag`).
    BoolColumn {
        col: usize,
    },
    /// Two columns of one type compared (`l_commitdate < l_receiptdate`).
    Columns {
        left: usize,
        op: CmpOp,
        right: usize,
    },
}

impl Pred {
    /// Evaluates with SQL three-valued logic; a `NULL` result is dropped by the RowFilter.
    pub fn eval(&self, batch: &RecordBatch) -> Result<BooleanArray, ArrowError> {
        let rows = batch.num_rows();
        match self {
            Pred::And(a, b) => and_kleene(&a.eval(batch)?, &b.eval(batch)?),
            Pred::Or(a, b) => or_kleene(&a.eval(batch)?, &b.eval(batch)?),
            Pred::Not(a) => not(&a.eval(batch)?),
            Pred::Cmp { col, op, value } => compare(batch.column(*col), *op, value, rows),
            Pred::InList {
                col,
                values,
                negated,
            } => {
                let column = batch.column(*col);
                let mut acc: Option<BooleanArray> = None;
                for value in values {
                    let m = compare(column, CmpOp::Eq, value, rows)?;
                    acc = Some(match acc {
                        None => m,
                        Some(a) => or_kleene(&a, &m)?,
                    });
                }
                let found = acc.unwrap_or_else(|| BooleanArray::from(vec![false; rows]));
                if *negated {
                    not(&found)
                } else {
                    Ok(found)
                }
            }
            Pred::Between {
                col,
                low,
                high,
                negated,
            } => {
                let column = batch.column(*col);
                let inside = and_kleene(
                    &compare(column, CmpOp::GtEq, low, rows)?,
                    &compare(column, CmpOp::LtEq, high, rows)?,
                )?;
                if *negated {
                    not(&inside)
                } else {
                    Ok(inside)
                }
            }
            Pred::IsNull { col, negated } => {
                if *negated {
                    is_not_null(batch.column(*col))
                } else {
                    is_null(batch.column(*col))
                }
            }
            Pred::Like {
                col,
                pattern,
                negated,
            } => {
                let column = batch.column(*col);
                let pattern = Scalar::new(pattern.clone());
                if *negated {
                    nlike(column, &pattern)
                } else {
                    like(column, &pattern)
                }
            }
            Pred::Columns { left, op, right } => {
                let (l, r) = (batch.column(*left), batch.column(*right));
                match op {
                    CmpOp::Eq => eq(l, r),
                    CmpOp::NotEq => neq(l, r),
                    CmpOp::Lt => lt(l, r),
                    CmpOp::LtEq => lt_eq(l, r),
                    CmpOp::Gt => gt(l, r),
                    CmpOp::GtEq => gt_eq(l, r),
                }
            }
            Pred::BoolColumn { col } => batch
                .column(*col)
                .as_boolean_opt()
                .cloned()
                .ok_or_else(|| ArrowError::InvalidArgumentError("not a boolean column".into())),
        }
    }

    /// Rewrites every column reference with `f` (file root index → batch position).
    fn map_columns(&mut self, f: &impl Fn(usize) -> usize) {
        match self {
            Pred::And(a, b) | Pred::Or(a, b) => {
                a.map_columns(f);
                b.map_columns(f);
            }
            Pred::Not(a) => a.map_columns(f),
            Pred::Cmp { col, .. }
            | Pred::InList { col, .. }
            | Pred::Between { col, .. }
            | Pred::IsNull { col, .. }
            | Pred::Like { col, .. }
            | Pred::BoolColumn { col } => *col = f(*col),
            Pred::Columns { left, right, .. } => {
                *left = f(*left);
                *right = f(*right);
            }
        }
    }
}

/// `column <op> literal`; a `NULL` literal makes every row `NULL` (SQL semantics).
fn compare(
    column: &ArrayRef,
    op: CmpOp,
    value: &Literal,
    rows: usize,
) -> Result<BooleanArray, ArrowError> {
    let Some(value) = value else {
        return Ok(BooleanArray::new_null(rows));
    };
    // The comparison kernels unwrap one dictionary level themselves, so a dictionary column is
    // compared against a scalar of its value type without materializing it.
    let value = Scalar::new(value.clone());
    match op {
        CmpOp::Eq => eq(column, &value),
        CmpOp::NotEq => neq(column, &value),
        CmpOp::Lt => lt(column, &value),
        CmpOp::LtEq => lt_eq(column, &value),
        CmpOp::Gt => gt(column, &value),
        CmpOp::GtEq => gt_eq(column, &value),
    }
}

/// One top-level `AND` conjunct: the file root columns it reads (sorted, as the parquet reader
/// delivers them) and the predicate over a batch of exactly those columns.
#[derive(Debug, Clone)]
pub struct Conjunct {
    pub roots: Vec<usize>,
    pub pred: Pred,
}

/// Parses `sql` and compiles each top-level `AND` conjunct, in written order, against `schema`
/// (the file's Arrow schema; column indices are its top-level fields = parquet root columns).
pub fn compile_where(sql: &str, schema: &Schema) -> Result<Vec<Conjunct>, String> {
    let expr = tamis::expr::parse(sql).map_err(|e| e.message)?;
    let mut parts = Vec::new();
    split_conjuncts(&expr, &mut parts);
    let compiler = Compiler { schema };
    parts
        .into_iter()
        .map(|part| {
            let mut roots = Vec::new();
            let mut pred = compiler.pred(part, &mut roots)?;
            roots.sort_unstable();
            roots.dedup();
            // The predicate's batch holds only `roots`, in file order.
            pred.map_columns(&|root| roots.partition_point(|&r| r < root));
            Ok(Conjunct { roots, pred })
        })
        .collect()
}

/// Flattens `a AND (b AND c)` into `[a, b, c]` (the parsed tree has no parentheses left).
fn split_conjuncts<'a>(expr: &'a Expr, out: &mut Vec<&'a Expr>) {
    match expr {
        Expr::And(left, right) => {
            split_conjuncts(left, out);
            split_conjuncts(right, out);
        }
        other => out.push(other),
    }
}

/// Finds a top-level column by name: quoted identifiers match exactly, unquoted ones exactly
/// first and then case-insensitively (if that is unambiguous).
pub fn resolve_column(schema: &Schema, name: &str, quoted: bool) -> Result<usize, String> {
    if let Ok(i) = schema.index_of(name) {
        return Ok(i);
    }
    if !quoted {
        let matches: Vec<usize> = schema
            .fields()
            .iter()
            .enumerate()
            .filter(|(_, f)| f.name().eq_ignore_ascii_case(name))
            .map(|(i, _)| i)
            .collect();
        match matches.as_slice() {
            [i] => return Ok(*i),
            [] => {}
            _ => return Err(format!("column name '{name}' is ambiguous")),
        }
    }
    let available: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    Err(format!(
        "unknown column '{name}' (columns: {})",
        available.join(", ")
    ))
}

/// A resolved column reference.
struct Column {
    root: usize,
    name: String,
    /// The type values are compared in: the dictionary's value type for dictionary columns.
    value_type: DataType,
}

struct Compiler<'a> {
    schema: &'a Schema,
}

impl Compiler<'_> {
    fn pred(&self, expr: &Expr, roots: &mut Vec<usize>) -> Result<Pred, String> {
        match expr {
            Expr::And(left, right) => Ok(Pred::And(
                Box::new(self.pred(left, roots)?),
                Box::new(self.pred(right, roots)?),
            )),
            Expr::Or(left, right) => Ok(Pred::Or(
                Box::new(self.pred(left, roots)?),
                Box::new(self.pred(right, roots)?),
            )),
            Expr::Not(inner) => Ok(Pred::Not(Box::new(self.pred(inner, roots)?))),
            Expr::Compare(left, op, right) => self.comparison(expr, left, *op, right, roots),
            Expr::Between {
                expr: target,
                negated,
                low,
                high,
            } => {
                let column = self.required_column(target, expr, roots)?;
                Ok(Pred::Between {
                    col: column.root,
                    low: self.required_literal(low, &column, expr)?,
                    high: self.required_literal(high, &column, expr)?,
                    negated: *negated,
                })
            }
            Expr::InList {
                expr: target,
                list,
                negated,
            } => {
                let column = self.required_column(target, expr, roots)?;
                let values = list
                    .iter()
                    .map(|item| self.required_literal(item, &column, expr))
                    .collect::<Result<_, _>>()?;
                Ok(Pred::InList {
                    col: column.root,
                    values,
                    negated: *negated,
                })
            }
            Expr::IsNull {
                expr: target,
                negated,
            } => {
                let column = self.required_column(target, expr, roots)?;
                Ok(Pred::IsNull {
                    col: column.root,
                    negated: *negated,
                })
            }
            Expr::Like {
                expr: target,
                pattern,
                escape,
                negated,
            } => self.like(expr, target, pattern, escape.as_deref(), *negated, roots),
            Expr::Column(_) => {
                let column = self.required_column(expr, expr, roots)?;
                if column.value_type != DataType::Boolean {
                    return Err(format!(
                        "column '{}' of type {} used as a condition",
                        column.name, column.value_type
                    ));
                }
                Ok(Pred::BoolColumn { col: column.root })
            }
            Expr::Unsupported { text, .. } => Err(format!("unsupported expression '{text}'")),
            Expr::Invalid { message, .. } => Err(message.clone()),
            other => Err(format!("unsupported expression '{other}'")),
        }
    }

    fn comparison(
        &self,
        whole: &Expr,
        left: &Expr,
        op: CmpOp,
        right: &Expr,
        roots: &mut Vec<usize>,
    ) -> Result<Pred, String> {
        if let (Some(l), Some(r)) = (self.column(left)?, self.column(right)?) {
            if l.value_type != r.value_type {
                return Err(format!(
                    "comparison '{whole}' is between columns of types {} and {}",
                    l.value_type, r.value_type
                ));
            }
            roots.extend([l.root, r.root]);
            return Ok(Pred::Columns {
                left: l.root,
                op,
                right: r.root,
            });
        }
        let (column, op, literal) = if let Some(column) = self.column(left)? {
            (column, op, right)
        } else if let Some(column) = self.column(right)? {
            (column, op.flip(), left)
        } else {
            return Err(format!(
                "comparison '{whole}' must be between a column and a literal or two columns"
            ));
        };
        let value = self.required_literal(literal, &column, whole)?;
        roots.push(column.root);
        Ok(Pred::Cmp {
            col: column.root,
            op,
            value,
        })
    }

    fn like(
        &self,
        whole: &Expr,
        target: &Expr,
        pattern: &Expr,
        escape: Option<&Expr>,
        negated: bool,
        roots: &mut Vec<usize>,
    ) -> Result<Pred, String> {
        if let Some(escape) = escape {
            // arrow's LIKE kernels use backslash as the escape character, nothing else.
            if !matches!(escape, Expr::Literal(Lit::String(e)) if e == "\\") {
                return Err(format!(
                    "only the '\\' ESCAPE character is supported: '{whole}'"
                ));
            }
        }
        let column = self.required_column(target, whole, roots)?;
        if !matches!(
            column.value_type,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        ) {
            return Err(format!(
                "LIKE needs a string column, '{}' is {}",
                column.name, column.value_type
            ));
        }
        match pattern {
            Expr::Literal(Lit::Null) => Err(format!("LIKE pattern must not be NULL: '{whole}'")),
            Expr::Literal(Lit::String(_)) => {
                let pattern = self.required_literal(pattern, &column, whole)?;
                Ok(Pred::Like {
                    col: column.root,
                    pattern: pattern.expect("a string literal is not NULL"),
                    negated,
                })
            }
            _ => Err(format!(
                "LIKE pattern must be a single-quoted string: '{whole}'"
            )),
        }
    }

    /// `Ok(None)` when `expr` is not a column reference at all.
    fn column(&self, expr: &Expr) -> Result<Option<Column>, String> {
        let Expr::Column(Name { path, exact }) = expr else {
            return Ok(None);
        };
        let root = resolve_column(self.schema, path, *exact)?;
        let field = self.schema.field(root);
        let value_type = match field.data_type() {
            DataType::Dictionary(_, value) => value.as_ref().clone(),
            other => other.clone(),
        };
        Ok(Some(Column {
            root,
            name: field.name().clone(),
            value_type,
        }))
    }

    fn required_column(
        &self,
        expr: &Expr,
        whole: &Expr,
        roots: &mut Vec<usize>,
    ) -> Result<Column, String> {
        let column = self
            .column(expr)?
            .ok_or_else(|| format!("expected a column name, found '{expr}' in '{whole}'"))?;
        roots.push(column.root);
        Ok(column)
    }

    fn required_literal(
        &self,
        expr: &Expr,
        column: &Column,
        whole: &Expr,
    ) -> Result<Literal, String> {
        match expr {
            Expr::Literal(literal) => cast_literal(literal, column),
            // An invalid literal (`DATE 'not-a-date'`): the front end's message, and the column.
            Expr::Invalid { message, .. } => {
                Err(format!("{message} (for column '{}')", column.name))
            }
            _ => Err(format!("expected a literal, found '{expr}' in '{whole}'")),
        }
    }
}

/// The text a literal is cast from (and named by in errors). Typed literals (`DATE '…'`,
/// `TIMESTAMP '…'`) were checked by the parser and are written back in ISO form.
fn literal_text(literal: &Lit) -> String {
    match literal {
        Lit::Bool(b) => b.to_string(),
        Lit::Number(n) => n.clone(),
        Lit::Float(x) => x.to_string(),
        Lit::String(s) => s.clone(),
        Lit::Date(d) => d.format("%Y-%m-%d").to_string(),
        Lit::Timestamp(t, offset) => {
            let mut text = t.format("%Y-%m-%d %H:%M:%S%.f").to_string();
            if let Some(seconds) = offset {
                let sign = if *seconds < 0 { '-' } else { '+' };
                let a = seconds.unsigned_abs();
                text.push_str(&format!("{sign}{:02}:{:02}", a / 3600, a % 3600 / 60));
            }
            text
        }
        Lit::Time(t) => t.format("%H:%M:%S%.f").to_string(),
        // `NULL` is not cast; bytes are cast as they are (`X'…'` names them).
        Lit::Null | Lit::Binary(_) => literal.to_string(),
    }
}

/// Casts the literal (its text, or its bytes) to the column's value type; a failed or `NULL`
/// cast is an error naming the column and literal.
fn cast_literal(literal: &Lit, column: &Column) -> Result<Literal, String> {
    let target = &column.value_type;
    let name = &column.name;
    let text = literal_text(literal);
    let source: ArrayRef = match literal {
        Lit::Null => return Ok(None),
        Lit::Binary(bytes) => Arc::new(BinaryArray::from_vec(vec![bytes.as_slice()])),
        _ => Arc::new(StringArray::from(vec![text.as_str()])),
    };
    if let DataType::Decimal32(_, scale)
    | DataType::Decimal64(_, scale)
    | DataType::Decimal128(_, scale)
    | DataType::Decimal256(_, scale) = target
    {
        // The cast would silently round `0.055` to scale 2, changing which rows match.
        if !text.contains(['e', 'E']) {
            if let Some((_, fraction)) = text.split_once('.') {
                let digits = fraction.trim_end_matches('0').len();
                if digits > usize::try_from(*scale).unwrap_or(0) {
                    return Err(format!(
                        "literal '{text}' has more decimal places than column '{name}' ({target})"
                    ));
                }
            }
        }
    }
    let value = cast(&source, target).map_err(|e| {
        format!("cannot convert literal '{text}' to {target} for column '{name}': {e}")
    })?;
    if value.is_null(0) {
        return Err(format!(
            "literal '{text}' is not a valid {target} value for column '{name}'"
        ));
    }
    Ok(Some(value))
}
