//! SQL `WHERE` text → arrow-kernel predicates, one per top-level `AND` conjunct.
//!
//! This mirrors how DataFusion feeds the parquet crate: the filter is split at its top-level
//! `AND`s and every conjunct becomes its own `ArrowPredicate`, which only decodes the columns it
//! references. Conjuncts run in written order, each on the rows the previous ones kept.
//!
//! Literals are converted once, at compile time, to the column's Arrow type by casting a
//! one-element `StringArray` of the literal's text, so `DATE '1994-01-01'`, `0.05` against a
//! `Decimal128(15,2)` column, integers, floats and timestamps all go through one well-tested path
//! (arrow's own string parsing).

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch, Scalar, StringArray};
use arrow::compute::kernels::cmp::{eq, gt, gt_eq, lt, lt_eq, neq};
use arrow::compute::kernels::comparison::{ilike, like, nilike, nlike};
use arrow::compute::{and_kleene, cast, is_not_null, is_null, not, or_kleene};
use arrow::datatypes::{DataType, Schema};
use arrow::error::ArrowError;
use sqlparser::ast::{BinaryOperator, Expr, Ident, UnaryOperator, Value};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

/// A comparison operator, always read as `column <op> literal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl CmpOp {
    /// The operator with its operands swapped, so `5 < col` can be evaluated as `col > 5`.
    fn flip(self) -> Self {
        match self {
            CmpOp::Eq | CmpOp::NotEq => self,
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::LtEq => CmpOp::GtEq,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::GtEq => CmpOp::LtEq,
        }
    }
}

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
        case_insensitive: bool,
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
                case_insensitive,
            } => {
                let column = batch.column(*col);
                let pattern = Scalar::new(pattern.clone());
                match (*negated, *case_insensitive) {
                    (false, false) => like(column, &pattern),
                    (true, false) => nlike(column, &pattern),
                    (false, true) => ilike(column, &pattern),
                    (true, true) => nilike(column, &pattern),
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
    let dialect = GenericDialect {};
    let mut parser = Parser::new(&dialect)
        .try_with_sql(sql)
        .map_err(|e| format!("cannot parse WHERE expression: {e}"))?;
    let expr = parser
        .parse_expr()
        .map_err(|e| format!("cannot parse WHERE expression: {e}"))?;
    let next = parser.peek_token();
    if next.token != Token::EOF {
        return Err(format!(
            "unexpected '{}' after the WHERE expression",
            next.token
        ));
    }
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

/// Flattens `a AND (b AND c)` into `[a, b, c]`, looking through parentheses.
fn split_conjuncts<'a>(expr: &'a Expr, out: &mut Vec<&'a Expr>) {
    match expr {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            split_conjuncts(left, out);
            split_conjuncts(right, out);
        }
        Expr::Nested(inner) if matches!(**inner, Expr::BinaryOp { .. } | Expr::Nested(_)) => {
            split_conjuncts(inner, out)
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
            Expr::Nested(inner) => self.pred(inner, roots),
            Expr::BinaryOp { left, op, right } => {
                let cmp = match op {
                    BinaryOperator::And => {
                        return Ok(Pred::And(
                            Box::new(self.pred(left, roots)?),
                            Box::new(self.pred(right, roots)?),
                        ))
                    }
                    BinaryOperator::Or => {
                        return Ok(Pred::Or(
                            Box::new(self.pred(left, roots)?),
                            Box::new(self.pred(right, roots)?),
                        ))
                    }
                    BinaryOperator::Eq => CmpOp::Eq,
                    BinaryOperator::NotEq => CmpOp::NotEq,
                    BinaryOperator::Lt => CmpOp::Lt,
                    BinaryOperator::LtEq => CmpOp::LtEq,
                    BinaryOperator::Gt => CmpOp::Gt,
                    BinaryOperator::GtEq => CmpOp::GtEq,
                    other => return Err(format!("unsupported operator '{other}' in '{expr}'")),
                };
                self.comparison(expr, left, cmp, right, roots)
            }
            Expr::UnaryOp {
                op: UnaryOperator::Not,
                expr: inner,
            } => Ok(Pred::Not(Box::new(self.pred(inner, roots)?))),
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
            Expr::IsNull(target) | Expr::IsNotNull(target) => {
                let column = self.required_column(target, expr, roots)?;
                Ok(Pred::IsNull {
                    col: column.root,
                    negated: matches!(expr, Expr::IsNotNull(_)),
                })
            }
            Expr::Like {
                negated,
                any,
                expr: target,
                pattern,
                escape_char,
            } => self.like(
                expr,
                target,
                pattern,
                *negated,
                *any,
                escape_char,
                false,
                roots,
            ),
            Expr::ILike {
                negated,
                any,
                expr: target,
                pattern,
                escape_char,
            } => self.like(
                expr,
                target,
                pattern,
                *negated,
                *any,
                escape_char,
                true,
                roots,
            ),
            Expr::Identifier(_) => {
                let column = self.required_column(expr, expr, roots)?;
                if column.value_type != DataType::Boolean {
                    return Err(format!(
                        "column '{}' of type {} used as a condition",
                        column.name, column.value_type
                    ));
                }
                Ok(Pred::BoolColumn { col: column.root })
            }
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

    #[allow(clippy::too_many_arguments)]
    fn like(
        &self,
        whole: &Expr,
        target: &Expr,
        pattern: &Expr,
        negated: bool,
        any: bool,
        escape_char: &Option<Box<Expr>>,
        case_insensitive: bool,
        roots: &mut Vec<usize>,
    ) -> Result<Pred, String> {
        if any {
            return Err(format!("LIKE ANY is not supported: '{whole}'"));
        }
        if let Some(escape) = escape_char {
            // arrow's LIKE kernels use backslash as the escape character, nothing else.
            if literal_text(escape)? != Some("\\".to_string()) {
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
        let is_string =
            matches!(pattern, Expr::Value(v) if matches!(v.value, Value::SingleQuotedString(_)));
        if !is_string {
            return Err(format!(
                "LIKE pattern must be a single-quoted string: '{whole}'"
            ));
        }
        let Some(pattern) = self.required_literal(pattern, &column, whole)? else {
            return Err(format!("LIKE pattern must not be NULL: '{whole}'"));
        };
        Ok(Pred::Like {
            col: column.root,
            pattern,
            negated,
            case_insensitive,
        })
    }

    /// `Ok(None)` when `expr` is not a column reference at all.
    fn column(&self, expr: &Expr) -> Result<Option<Column>, String> {
        let ident: &Ident = match expr {
            Expr::Identifier(ident) => ident,
            Expr::Nested(inner) => return self.column(inner),
            _ => return Ok(None),
        };
        let root = resolve_column(self.schema, &ident.value, ident.quote_style.is_some())?;
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
        match literal_text(expr) {
            Ok(text) => cast_literal(text, column),
            Err(_) => Err(format!("expected a literal, found '{expr}' in '{whole}'")),
        }
    }
}

/// The text of a literal expression; `Ok(None)` for `NULL`.
fn literal_text(expr: &Expr) -> Result<Option<String>, String> {
    match expr {
        Expr::Nested(inner) => literal_text(inner),
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => Ok(Some(n.clone())),
            Value::Boolean(b) => Ok(Some(b.to_string())),
            Value::Null => Ok(None),
            other => other
                .clone()
                .into_string()
                .map(Some)
                .ok_or_else(|| format!("unsupported literal {other}")),
        },
        // DATE '…', TIMESTAMP '…': the cast to the column type does the parsing.
        Expr::TypedString(typed) => typed
            .value
            .clone()
            .into_string()
            .map(Some)
            .ok_or_else(|| format!("unsupported literal {typed}")),
        Expr::UnaryOp {
            op: op @ (UnaryOperator::Minus | UnaryOperator::Plus),
            expr: inner,
        } if matches!(**inner, Expr::Value(ref v) if matches!(v.value, Value::Number(..))) => {
            let text = literal_text(inner)?.unwrap_or_default();
            Ok(Some(if *op == UnaryOperator::Minus {
                format!("-{text}")
            } else {
                text
            }))
        }
        other => Err(format!("not a literal: {other}")),
    }
}

/// Casts the literal's text to the column's value type; a failed or `NULL` cast is an error
/// naming the column and literal.
fn cast_literal(text: Option<String>, column: &Column) -> Result<Literal, String> {
    let Some(text) = text else {
        return Ok(None);
    };
    let target = &column.value_type;
    let name = &column.name;
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
    let array = StringArray::from(vec![text.as_str()]);
    let value = cast(&array, target).map_err(|e| {
        format!("cannot convert literal '{text}' to {target} for column '{name}': {e}")
    })?;
    if value.is_null(0) {
        return Err(format!(
            "literal '{text}' is not a valid {target} value for column '{name}'"
        ));
    }
    Ok(Some(value))
}
