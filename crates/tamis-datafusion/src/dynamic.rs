//! Runtime join filters: DataFusion's dynamic filters (a hash join's build-side keys, a TopK
//! bound) → tamis predicate trees, read when the scan starts.
//!
//! A hash join pushes a `DynamicFilterPhysicalExpr` into its probe side and fills it once its
//! build side is complete: `key >= min AND key <= max AND key IN (keys…)` for a small build
//! side, a lookup into its hash table for a large one, wrapped in a `CASE` over the hash
//! partition when the join is partitioned. The scan starts when the join first asks for rows,
//! which is after the build — so the filter is complete by then — and converts its current
//! state:
//!
//! - min/max become comparisons: row groups and pages outside them are pruned by statistics
//!   and the page index;
//! - a short key list ([`EXACT_KEYS`] or fewer) becomes `IN (…)`, which also probes the file's
//!   own Bloom filters and dictionaries;
//! - a longer one becomes a [`tamis::expr::KeyFilter`] (a blocked Bloom filter, or an exact
//!   bitmap for integer keys close together), probed once per
//!   dictionary entry on dictionary-encoded keys and per value otherwise; filters are shared by
//!   every scan of the table on the same column and keys ([`KeyFilters`]);
//! - a `CASE` over partitions becomes the OR of its branches (each row's branch is one of
//!   them), and what cannot be converted (the hash-table lookup) is left out.
//!
//! Every conversion selects a superset of the rows the filter keeps; the join above removes the
//! rest, so these filters are never reported to DataFusion as applied. Results are the same with
//! runtime filters on and off; only the rows read differ.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow::datatypes::{DataType, Schema};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{
    BinaryExpr, CaseExpr, Column, InListExpr, IsNotNullExpr, IsNullExpr, Literal as Lit,
};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_common::physical_expr::snapshot_physical_expr;
use tamis::expr::{self as tree, Expr as T, Literal};
use tamis::expr::{CmpOp, KeyFilter};

use crate::convert;

/// Key lists up to this long become an exact `IN (…)`; longer ones a Bloom filter.
pub const EXACT_KEYS: usize = 64;

/// Bloom filters built from join keys, per (column, keys), so that every scan of the table
/// on the same column and keys probes one filter (TPC-H Q17 scans `lineitem` twice on
/// `l_partkey`: paper 000, T16) and shares its run-time counts and on/off decision.
#[derive(Debug, Default)]
pub struct KeyFilters {
    built: Mutex<HashMap<FilterId, Arc<KeyFilter>>>,
}

/// A filter's column and its distinct, sorted keys.
type FilterId = (String, Vec<ScalarValue>);

impl KeyFilters {
    /// The filter for `column` over `keys`, built once.
    fn get(&self, column: &str, keys: &[ScalarValue], dt: &DataType) -> Option<Arc<KeyFilter>> {
        // Keyed by the distinct keys themselves, not a hash of them: two key sets never share
        // a filter, and the same set in another order (or with repeats) is the same filter.
        let mut distinct: Vec<ScalarValue> =
            keys.iter().filter(|k| !k.is_null()).cloned().collect();
        distinct.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        distinct.dedup();
        let keys = distinct.as_slice();
        let id = (column.to_string(), distinct.clone());
        let mut built = self.built.lock().ok()?;
        if let Some(f) = built.get(&id) {
            return Some(f.clone());
        }
        let f = Arc::new(build(column, keys, dt)?);
        built.insert(id, f.clone());
        Some(f)
    }

    /// Every filter built so far (for metrics and tests).
    pub fn all(&self) -> Vec<Arc<KeyFilter>> {
        self.built
            .lock()
            .map(|b| b.values().cloned().collect())
            .unwrap_or_default()
    }
}

/// A Bloom filter of `keys` (non-null values of the column's type), or `None` for key types
/// the filter does not take (floats, decimals, timestamps…: those keep min/max only).
fn build(column: &str, keys: &[ScalarValue], dt: &DataType) -> Option<KeyFilter> {
    use ScalarValue as S;
    let label = format!("join keys on {column}");
    if dt.is_integer() || *dt == DataType::Date32 {
        let ints: Vec<i64> = keys
            .iter()
            .filter_map(|k| {
                Some(match k {
                    S::Int8(Some(x)) => *x as i64,
                    S::Int16(Some(x)) => *x as i64,
                    S::Int32(Some(x)) => *x as i64,
                    S::Int64(Some(x)) => *x,
                    S::UInt8(Some(x)) => *x as i64,
                    S::UInt16(Some(x)) => *x as i64,
                    S::UInt32(Some(x)) => *x as i64,
                    S::UInt64(Some(x)) => *x as i64,
                    S::Date32(Some(x)) => *x as i64,
                    _ => return None,
                })
            })
            .collect();
        return Some(KeyFilter::from_ints(&ints, label));
    }
    let bytes: Vec<&[u8]> = keys
        .iter()
        .filter_map(|k| match k {
            S::Utf8(Some(s)) | S::LargeUtf8(Some(s)) | S::Utf8View(Some(s)) => Some(s.as_bytes()),
            S::Binary(Some(b)) | S::LargeBinary(Some(b)) | S::BinaryView(Some(b)) => {
                Some(b.as_slice())
            }
            _ => None,
        })
        .collect();
    let takes_bytes = matches!(
        dt,
        DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
    );
    takes_bytes.then(|| KeyFilter::from_bytes(bytes.into_iter(), label))
}

/// The current state of a dynamic filter as a tamis tree over `schema`'s columns (a superset
/// of its rows); `None` when nothing of it converts (or it is still `true`).
///
/// `ranges` holds the table's value range of numeric columns (from the footers): a bound of
/// the join keys that keeps nearly all of it is left out (see `WORTH_A_BOUND`).
pub fn convert_dynamic(
    filter: &Arc<dyn PhysicalExpr>,
    schema: &Schema,
    filters: &KeyFilters,
    ranges: &Ranges,
) -> Result<Option<T>> {
    let current = snapshot_physical_expr(Arc::clone(filter))?;
    Ok(conv(&current, schema, filters, ranges))
}

/// A column's smallest and largest value in the table, as numbers.
pub type Ranges = HashMap<String, (f64, f64)>;

/// A join-key bound (`k >= min`, `k <= max`) is pushed only when it may remove more than this
/// share of the column's value range. Keys spread over the whole range (a dimension's random
/// subset) give bounds that prune nothing on unsorted data but cost a comparison per value;
/// the join sweep was 20 % slower with them at 20 % and 50 % join selectivity.
const WORTH_A_BOUND: f64 = 0.05;

/// `value` as a number, for the range comparison (integers, dates, times, decimals).
pub fn as_number(value: &ScalarValue) -> Option<f64> {
    use ScalarValue as S;
    Some(match value {
        S::Int8(Some(v)) => *v as f64,
        S::Int16(Some(v)) => *v as f64,
        S::Int32(Some(v)) => *v as f64,
        S::Int64(Some(v)) => *v as f64,
        S::UInt8(Some(v)) => *v as f64,
        S::UInt16(Some(v)) => *v as f64,
        S::UInt32(Some(v)) => *v as f64,
        S::UInt64(Some(v)) => *v as f64,
        S::Date32(Some(v)) => *v as f64,
        S::Date64(Some(v)) => *v as f64,
        S::TimestampSecond(Some(v), _)
        | S::TimestampMillisecond(Some(v), _)
        | S::TimestampMicrosecond(Some(v), _)
        | S::TimestampNanosecond(Some(v), _) => *v as f64,
        S::Decimal128(Some(v), _, _) => *v as f64,
        _ => return None,
    })
}

fn conv(
    e: &Arc<dyn PhysicalExpr>,
    schema: &Schema,
    filters: &KeyFilters,
    ranges: &Ranges,
) -> Option<T> {
    if let Some(b) = e.downcast_ref::<BinaryExpr>() {
        return match b.op() {
            Operator::And => {
                match (
                    conv(b.left(), schema, filters, ranges),
                    conv(b.right(), schema, filters, ranges),
                ) {
                    (Some(l), Some(r)) => Some(l.and(r)),
                    // Dropping a conjunct only widens the filter.
                    (Some(x), None) | (None, Some(x)) => Some(x),
                    (None, None) => None,
                }
            }
            Operator::Or => Some(conv(b.left(), schema, filters, ranges)?.or(conv(
                b.right(),
                schema,
                filters,
                ranges,
            )?)),
            _ => {
                let (col, op, value) = column_vs_literal(b, schema)?;
                bound(col, op, value, ranges)
            }
        };
    }
    if let Some(l) = e.downcast_ref::<Lit>() {
        return match l.value() {
            // `false` (an empty build side) keeps nothing; `true` is no filter.
            ScalarValue::Boolean(Some(false)) => Some(tree::lit(Literal::Bool(false))),
            _ => None,
        };
    }
    if let Some(c) = e.downcast_ref::<CaseExpr>() {
        // Each row takes one branch: the OR of all branches holds wherever the CASE does.
        let branches: Vec<&Arc<dyn PhysicalExpr>> = (c.when_then_expr().iter())
            .map(|(_, then)| then)
            .chain(c.else_expr())
            .collect();
        if let Some(union) = union_of_branches(&branches, schema, filters, ranges) {
            return union;
        }
        let mut out = conv(branches.first()?, schema, filters, ranges)?;
        for then in &branches[1..] {
            out = out.or(conv(then, schema, filters, ranges)?);
        }
        return Some(out);
    }
    if let Some(i) = e.downcast_ref::<InListExpr>() {
        let (name, keys) = in_list_keys(i, schema)?;
        return key_set(name, &keys, schema, filters, ranges);
    }
    if let Some(n) = e.downcast_ref::<IsNullExpr>() {
        let (name, _) = column(n.arg(), schema)?;
        return Some(tree::col(name).is_null());
    }
    if let Some(n) = e.downcast_ref::<IsNotNullExpr>() {
        let (name, _) = column(n.arg(), schema)?;
        return Some(tree::col(name).is_not_null());
    }
    None
}

/// The column and literal keys of a non-negated `column IN (literals…)`.
fn in_list_keys<'s>(i: &InListExpr, schema: &'s Schema) -> Option<(&'s str, Vec<ScalarValue>)> {
    if i.negated() {
        return None;
    }
    let (name, _) = column(i.expr(), schema)?;
    let keys = distinct_keys([Keys::List(i)].iter(), usize::MAX)?;
    Some((name, keys))
}

/// The distinct non-null keys of `lists`, or `None` past `limit` of them (or where a list
/// holds something other than literals). A join's list holds its build rows' keys, repeats
/// included: TPC-H Q17's semi join at SF 10 lists 61 000 rows of 2 044 keys.
fn distinct_keys<'a>(
    lists: impl Iterator<Item = &'a Keys<'a>>,
    limit: usize,
) -> Option<Vec<ScalarValue>> {
    let mut seen = std::collections::HashSet::new();
    let mut keys = Vec::new();
    for list in lists {
        let values: Vec<&ScalarValue> = match list {
            Keys::List(i) => (i.list().iter())
                .map(|v| v.downcast_ref::<Lit>().map(Lit::value))
                .collect::<Option<_>>()?,
            Keys::One(v) => vec![v],
        };
        for v in values {
            if !v.is_null() && seen.insert(v) {
                keys.push(v.clone());
                if keys.len() > limit {
                    return None;
                }
            }
        }
    }
    Some(keys)
}

/// `name IN (keys)`: exact up to [`EXACT_KEYS`] keys, a shared Bloom filter beyond; `None`
/// for a Bloom filter whose keys fill most of the column's range ([`too_dense`]).
fn key_set(
    name: &str,
    keys: &[ScalarValue],
    schema: &Schema,
    filters: &KeyFilters,
    ranges: &Ranges,
) -> Option<T> {
    let dt = schema.field_with_name(name).ok()?.data_type();
    if keys.len() <= EXACT_KEYS {
        if convert::is_float(dt) {
            // Float equality differs between arrow and tamis (-0.0, NaN): not converted.
            return None;
        }
        let values: Vec<Literal> = keys
            .iter()
            .filter(|k| !k.is_null())
            .map(|k| convert::scalar_literal(k, dt))
            .collect::<Option<_>>()?;
        return Some(tree::col(name).in_list(values, false));
    }
    let numbers = keys.iter().filter_map(as_number);
    let span = numbers.fold(None, |span: Option<(f64, f64)>, v| {
        Some(span.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))))
    });
    if too_dense_on(ranges, name, keys.len(), span) {
        return None;
    }
    let f = filters.get(name, keys, dt)?;
    Some(tree::col(name).in_keys(f))
}

/// A key filter is left out when its keys are expected to keep more than this share of the
/// rows within their span (the key filters' own run-time switch, `ADAPT_MAX_PASS`, is 0.8).
pub const DENSE_SHARE: f64 = 0.5;

/// Whether `keys` distinct integer keys spanning `span` fill more than [`DENSE_SHARE`] of the
/// values a column ranging over `column` can hold where the two overlap (the keys taken as
/// spread evenly over their span): a dimension's every key probed by its fact table (TPC-H Q14
/// joins `lineitem` with all 200 000 parts at SF 1). Such a filter keeps nearly every row, yet
/// costs its build and a probe per value until it switches itself off; the bounds of the keys
/// still prune. Keys that miss the column's range entirely are never dense (they keep nothing).
pub fn too_dense(keys: usize, span: (f64, f64), column: (f64, f64)) -> bool {
    let (lo, hi) = (span.0.max(column.0), span.1.min(column.1));
    if hi < lo {
        return false;
    }
    let inside = keys as f64 * (hi - lo + 1.0) / (span.1 - span.0 + 1.0).max(1.0);
    inside > DENSE_SHARE * (hi - lo + 1.0)
}

/// [`too_dense`] for `keys` spanning `span` (`None`: not numbers) on column `name`, whose
/// range `ranges` knows (or not: never dense).
pub fn too_dense_on(ranges: &Ranges, name: &str, keys: usize, span: Option<(f64, f64)>) -> bool {
    span.zip(ranges.get(name))
        .is_some_and(|(span, &column)| too_dense(keys, span, column))
}

/// What one branch of a partitioned join's filter says about one column: its bounds and its
/// keys, where it has them (lists by reference: they are copied only if the union is kept).
#[derive(Default)]
struct ColumnSummary<'a> {
    lower: Option<ScalarValue>,
    upper: Option<ScalarValue>,
    keys: Option<Vec<Keys<'a>>>,
}

/// Keys of one branch: an `IN` list or one `=` value.
enum Keys<'a> {
    List(&'a InListExpr),
    One(ScalarValue),
}

/// A partitioned hash join's filter, `CASE hash(key) % N WHEN i THEN <partition i's bounds and
/// keys> … END`, as one filter over the union of its branches: the lowest lower bound, the
/// highest upper bound and every partition's keys in one list (one Bloom filter, shared by
/// the scan's partitions). OR-ing the branches instead had every row probe N bounds and N key
/// sets, so the filter's cost grew with the thread count (TPC-H Q17 at 16 partitions: 16
/// probes a row). DataFusion caps each partition's list, not their union: more keys in all
/// than [`crate::sql::RUNTIME_FILTER_MAX_KEYS`] keep their bounds only, as one partition's
/// would (a build side that large is tapped instead, [`crate::tap`]). `Some(None)` when the
/// union is worth nothing (bounds that prune nothing, keys too dense); `None` when the
/// branches share no bounded or listed column to unite (the OR of the branches is used).
fn union_of_branches<'a>(
    branches: &[&'a Arc<dyn PhysicalExpr>],
    schema: &Schema,
    filters: &KeyFilters,
    ranges: &Ranges,
) -> Option<Option<T>> {
    let mut united: Option<HashMap<String, ColumnSummary<'a>>> = None;
    for branch in branches {
        if let Some(l) = branch.downcast_ref::<Lit>() {
            if l.value() == &ScalarValue::Boolean(Some(false)) {
                continue; // an empty partition keeps no row
            }
            return None;
        }
        let mut this: HashMap<String, ColumnSummary> = HashMap::new();
        summarize(branch, schema, &mut this);
        if this
            .values()
            .any(|c| c.keys.as_deref().is_some_and(only_nulls))
        {
            // A partition whose build keys are all NULL joins no row (`k IN (NULL)`), and its
            // bounds (`k >= NULL`) would widen the union to everything.
            continue;
        }
        united = Some(match united {
            None => this,
            Some(mut all) => {
                // A column stays only where every branch bounds or lists it.
                all.retain(|name, s| {
                    let Some(t) = this.remove(name) else {
                        return false;
                    };
                    s.lower = wider(s.lower.take(), t.lower, std::cmp::Ordering::Less);
                    s.upper = wider(s.upper.take(), t.upper, std::cmp::Ordering::Greater);
                    s.keys = match (s.keys.take(), t.keys) {
                        (Some(mut a), Some(b)) => {
                            a.extend(b);
                            Some(a)
                        }
                        _ => None,
                    };
                    s.lower.is_some() || s.upper.is_some() || s.keys.is_some()
                });
                all
            }
        });
    }
    let Some(united) = united else {
        // Every partition was empty.
        return Some(Some(tree::lit(Literal::Bool(false))));
    };
    if united.is_empty() {
        return None;
    }
    let mut names: Vec<&String> = united.keys().collect();
    names.sort();
    let mut parts = Vec::new();
    for name in names {
        let s = &united[name];
        let col = (
            name.as_str(),
            schema.field_with_name(name).ok()?.data_type(),
        );
        for (op, value) in [(CmpOp::GtEq, &s.lower), (CmpOp::LtEq, &s.upper)] {
            parts.extend(value.as_ref().and_then(|v| bound(col, op, v, ranges)));
        }
        let limit = crate::sql::RUNTIME_FILTER_MAX_KEYS;
        let keys = (s.keys.as_ref()).and_then(|lists| distinct_keys(lists.iter(), limit));
        if let Some(keys) = keys {
            parts.extend(key_set(name, &keys, schema, filters, ranges));
        }
    }
    Some((!parts.is_empty()).then(|| T::all(parts)))
}

/// The bound of `a` and `b` that keeps more (`keep` = `Less`: the lower), `None` if either
/// branch has none or they do not compare.
fn wider(
    a: Option<ScalarValue>,
    b: Option<ScalarValue>,
    keep: std::cmp::Ordering,
) -> Option<ScalarValue> {
    let (a, b) = (a?, b?);
    match a.partial_cmp(&b)? {
        o if o == keep => Some(a),
        _ => Some(b),
    }
}

/// The bounds (`col >= v`, `col > v`, `col <= v`, `col < v`, a strict bound taken as
/// inclusive: wider) and key lists in the conjunction `e`, by column. Other conjuncts (a
/// hash-table lookup) are left out, which only widens.
fn summarize<'a>(
    e: &'a Arc<dyn PhysicalExpr>,
    schema: &Schema,
    out: &mut HashMap<String, ColumnSummary<'a>>,
) {
    if let Some(b) = e.downcast_ref::<BinaryExpr>() {
        if *b.op() == Operator::And {
            summarize(b.left(), schema, out);
            summarize(b.right(), schema, out);
            return;
        }
        let Some(((name, _), op, value)) = column_vs_literal(b, schema) else {
            return;
        };
        let s = out.entry(name.to_string()).or_default();
        let value = value.clone();
        match op {
            CmpOp::GtEq | CmpOp::Gt => s.lower = Some(value),
            CmpOp::LtEq | CmpOp::Lt => s.upper = Some(value),
            CmpOp::Eq => s.keys = Some(vec![Keys::One(value)]),
            _ => {}
        }
        return;
    }
    if let Some(i) = e.downcast_ref::<InListExpr>() {
        if let (false, Some((name, _))) = (i.negated(), column(i.expr(), schema)) {
            out.entry(name.to_string()).or_default().keys = Some(vec![Keys::List(i)]);
        }
    }
}

/// Whether key lists hold NULLs only.
fn only_nulls(keys: &[Keys<'_>]) -> bool {
    keys.iter().all(|k| match k {
        Keys::List(i) => {
            (i.list().iter()).all(|v| v.downcast_ref::<Lit>().is_some_and(|l| l.value().is_null()))
        }
        Keys::One(v) => v.is_null(),
    })
}

/// `column op literal` (either side) as the column, the operator with the column on its left,
/// and the non-null literal.
fn column_vs_literal<'e, 's>(
    b: &'e BinaryExpr,
    schema: &'s Schema,
) -> Option<((&'s str, &'s DataType), CmpOp, &'e ScalarValue)> {
    let op = crate::convert::cmp_op(*b.op())?;
    let (col, op, value) = match (column(b.left(), schema), column(b.right(), schema)) {
        (Some(c), None) => (c, op, b.right()),
        (None, Some(c)) => (c, op.flip(), b.left()),
        _ => return None,
    };
    let value = value.downcast_ref::<Lit>()?.value();
    (!value.is_null()).then_some((col, op, value))
}

/// `column op value` as a tamis comparison, for column types whose comparison tamis evaluates
/// as arrow does (not floats); `None` for a bound that removes little of the column's range
/// ([`WORTH_A_BOUND`]).
fn bound(
    (name, dt): (&str, &DataType),
    op: CmpOp,
    value: &ScalarValue,
    ranges: &Ranges,
) -> Option<T> {
    if convert::is_float(dt) {
        return None;
    }
    if let (Some(&(lo, hi)), Some(v)) = (ranges.get(name), as_number(value)) {
        // The share of the column's range the bound removes (values spread evenly).
        let removed = match op {
            CmpOp::GtEq | CmpOp::Gt => (v - lo) / (hi - lo),
            CmpOp::LtEq | CmpOp::Lt => (hi - v) / (hi - lo),
            _ => 1.0,
        };
        if hi > lo && removed < WORTH_A_BOUND {
            return None;
        }
    }
    let lit = convert::scalar_literal(value, dt)?;
    Some(T::Compare(
        Box::new(tree::col(name)),
        op,
        Box::new(T::Literal(lit)),
    ))
}

fn column<'s>(e: &Arc<dyn PhysicalExpr>, schema: &'s Schema) -> Option<(&'s str, &'s DataType)> {
    let c = e.downcast_ref::<Column>()?;
    let field = schema.field_with_name(c.name()).ok()?;
    Some((field.name().as_str(), field.data_type()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::Field;

    /// `k >= lo AND k <= hi` over `k` ranging 0..=1000 in the table.
    fn bounds(lo: i64, hi: i64) -> Option<T> {
        let schema = Schema::new(vec![Field::new("k", DataType::Int64, true)]);
        let k: Arc<dyn PhysicalExpr> = Arc::new(Column::new("k", 0));
        let lit =
            |v: i64| -> Arc<dyn PhysicalExpr> { Arc::new(Lit::new(ScalarValue::Int64(Some(v)))) };
        let ge: Arc<dyn PhysicalExpr> =
            Arc::new(BinaryExpr::new(k.clone(), Operator::GtEq, lit(lo)));
        let le: Arc<dyn PhysicalExpr> = Arc::new(BinaryExpr::new(k, Operator::LtEq, lit(hi)));
        let both: Arc<dyn PhysicalExpr> = Arc::new(BinaryExpr::new(ge, Operator::And, le));
        let ranges = Ranges::from([("k".to_string(), (0.0, 1000.0))]);
        conv(&both, &schema, &KeyFilters::default(), &ranges)
    }

    #[test]
    fn keys_filling_most_of_the_range_are_too_dense() {
        // 600 keys over 0..=999 of a column ranging 0..=999: 60 % of its values.
        assert!(too_dense(600, (0.0, 999.0), (0.0, 999.0)));
        assert!(!too_dense(500, (0.0, 999.0), (0.0, 999.0)));
        // The same keys within a column ten times as wide: the bounds remove the rest, the
        // keys would keep 60 % of what is left.
        assert!(too_dense(600, (0.0, 999.0), (0.0, 9_999.0)));
        // 600 keys spread over all of it: 6 %.
        assert!(!too_dense(600, (0.0, 9_999.0), (0.0, 9_999.0)));
        // Only the overlap counts: 600 keys in 0..=999, the column in 500..=1499 (about 300
        // of them in its 500 values).
        assert!(too_dense(600, (0.0, 999.0), (500.0, 1_499.0)));
        // 100 keys spread over a million values, the column in 500..=600: about none inside.
        assert!(!too_dense(100, (0.0, 1e6), (500.0, 600.0)));
        // Keys outside the column's range keep nothing: never dense.
        assert!(!too_dense(600, (0.0, 999.0), (5_000.0, 6_000.0)));
    }

    /// `CASE h WHEN 0 THEN <keys[0]> WHEN 1 THEN <keys[1]> … ELSE false END` over `k`, each
    /// branch `k >= min AND k <= max AND k IN (keys…)` as DataFusion writes a partition's.
    fn partitioned(keys: &[Vec<i64>]) -> Arc<dyn PhysicalExpr> {
        let branch = |keys: &Vec<i64>| -> Arc<dyn PhysicalExpr> {
            let (Some(&lo), Some(&hi)) = (keys.iter().min(), keys.iter().max()) else {
                return Arc::new(Lit::new(ScalarValue::Boolean(Some(false))));
            };
            let bounds = and(
                cmp("k", Operator::GtEq, Some(lo)),
                cmp("k", Operator::LtEq, Some(hi)),
            );
            let values: Vec<Option<i64>> = keys.iter().map(|&v| Some(v)).collect();
            and(bounds, list("k", &values))
        };
        case_of(keys.iter().map(branch).collect())
    }

    fn convert_over(
        e: &Arc<dyn PhysicalExpr>,
        range: (f64, f64),
        filters: &KeyFilters,
    ) -> Option<T> {
        let schema = Schema::new(vec![Field::new("k", DataType::Int64, true)]);
        let ranges = Ranges::from([("k".to_string(), range)]);
        conv(e, &schema, filters, &ranges)
    }

    #[test]
    fn a_partitioned_filter_is_the_union_of_its_branches() {
        let filters = KeyFilters::default();
        // Two partitions with keys, one empty: one list, the widest bounds.
        let e = partitioned(&[vec![300, 310], vec![], vec![700, 305]]);
        let t = convert_over(&e, (0.0, 1000.0), &filters).unwrap();
        assert_eq!(
            t.to_string(),
            "k >= 300 AND k <= 700 AND k IN (300, 310, 700, 305)"
        );
        // Every partition empty: nothing joins.
        let t = convert_over(&partitioned(&[vec![], vec![]]), (0.0, 1000.0), &filters).unwrap();
        assert_eq!(t.to_string(), "FALSE");
        // 100 sparse keys over a wide column: one Bloom filter over all of them.
        let sparse: Vec<Vec<i64>> = (0..4)
            .map(|p| (0..25).map(|i| (i * 4 + p) * 1000).collect())
            .collect();
        convert_over(&partitioned(&sparse), (0.0, 1e6), &filters).unwrap();
        assert_eq!(
            filters.all().iter().map(|f| f.keys()).collect::<Vec<_>>(),
            vec![100]
        );
        // A join's lists hold its build rows' keys, repeats included: 20 000 rows in all, more
        // than one filter takes, of the same 100 keys — the same one filter.
        let repeated: Vec<Vec<i64>> = (sparse.iter())
            .map(|keys| keys.iter().cycle().take(5_000).copied().collect())
            .collect();
        let t = convert_over(&partitioned(&repeated), (0.0, 1e6), &filters).unwrap();
        assert!(t.to_string().contains("100 keys"), "{t}");
        assert_eq!(filters.all().len(), 1);
        // The same 100 keys packed into 0..=99 of a column ranging 0..=99: too dense for a
        // Bloom filter, the bounds stay (when they prune).
        let dense: Vec<Vec<i64>> = (0..4)
            .map(|p| (0..25).map(|i| i * 4 + p).collect())
            .collect();
        let filters = KeyFilters::default();
        assert_eq!(
            convert_over(&partitioned(&dense), (0.0, 99.0), &filters),
            None
        );
        let t = convert_over(&partitioned(&dense), (0.0, 999.0), &filters).unwrap();
        assert_eq!(t.to_string(), "k <= 99");
        assert!(filters.all().is_empty());
    }

    /// `CASE … WHEN i THEN branches[i] … ELSE false END` over columns `k` and `j`.
    fn case_of(branches: Vec<Arc<dyn PhysicalExpr>>) -> Arc<dyn PhysicalExpr> {
        let lit = |v: ScalarValue| -> Arc<dyn PhysicalExpr> { Arc::new(Lit::new(v)) };
        let when_then = (branches.into_iter().enumerate())
            .map(|(i, then)| (lit(ScalarValue::UInt64(Some(i as u64))), then))
            .collect();
        let when = lit(ScalarValue::UInt64(Some(0)));
        let otherwise = Some(lit(ScalarValue::Boolean(Some(false))));
        Arc::new(CaseExpr::try_new(Some(when), when_then, otherwise).unwrap())
    }

    /// `column op value` and `column IN (values)` over Int64 columns `k` and `j`.
    fn cmp(column: &str, op: Operator, value: Option<i64>) -> Arc<dyn PhysicalExpr> {
        let c: Arc<dyn PhysicalExpr> = Arc::new(Column::new(column, 0));
        Arc::new(BinaryExpr::new(
            c,
            op,
            Arc::new(Lit::new(ScalarValue::Int64(value))),
        ))
    }

    fn list(column: &str, values: &[Option<i64>]) -> Arc<dyn PhysicalExpr> {
        let c: Arc<dyn PhysicalExpr> = Arc::new(Column::new(column, 0));
        let values = (values.iter())
            .map(|&v| Arc::new(Lit::new(ScalarValue::Int64(v))) as Arc<dyn PhysicalExpr>)
            .collect();
        datafusion::physical_expr::expressions::in_list(c, values, &false, &two_columns()).unwrap()
    }

    fn and(a: Arc<dyn PhysicalExpr>, b: Arc<dyn PhysicalExpr>) -> Arc<dyn PhysicalExpr> {
        Arc::new(BinaryExpr::new(a, Operator::And, b))
    }

    fn two_columns() -> Schema {
        Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("j", DataType::Int64, true),
        ])
    }

    fn united(branches: Vec<Arc<dyn PhysicalExpr>>) -> Option<String> {
        let ranges = Ranges::from([
            ("k".to_string(), (0.0, 1000.0)),
            ("j".to_string(), (0.0, 1000.0)),
        ]);
        let e = case_of(branches);
        conv(&e, &two_columns(), &KeyFilters::default(), &ranges).map(|t| t.to_string())
    }

    #[test]
    fn unions_of_other_branch_shapes() {
        use Operator::{Gt, GtEq, Lt, LtEq};
        // Strict bounds are taken as inclusive (wider); the widest of each side is kept.
        let strict = and(cmp("k", Gt, Some(300)), cmp("k", Lt, Some(700)));
        let inclusive = and(cmp("k", GtEq, Some(100)), cmp("k", LtEq, Some(200)));
        assert_eq!(
            united(vec![strict, inclusive]).unwrap(),
            "k >= 100 AND k <= 700"
        );
        // A branch that keeps everything (a cancelled partition): no filter.
        let t: Arc<dyn PhysicalExpr> = Arc::new(Lit::new(ScalarValue::Boolean(Some(true))));
        assert_eq!(united(vec![list("k", &[Some(1)]), t]), None);
        // Branches on different columns share nothing to unite: their OR.
        assert_eq!(
            united(vec![list("k", &[Some(1), Some(2)]), list("j", &[Some(3)])]).unwrap(),
            "k IN (1, 2) OR j IN (3) OR FALSE"
        );
        // A partition whose keys are all NULL joins nothing and does not widen the bounds.
        let nulls = and(
            and(cmp("k", GtEq, None), cmp("k", LtEq, None)),
            list("k", &[None, None]),
        );
        let some = and(
            and(cmp("k", GtEq, Some(300)), cmp("k", LtEq, Some(310))),
            list("k", &[Some(300), Some(310)]),
        );
        assert_eq!(
            united(vec![nulls, some]).unwrap(),
            "k >= 300 AND k <= 310 AND k IN (300, 310)"
        );
    }

    #[test]
    fn bounds_that_remove_little_of_the_range_are_left_out() {
        assert_eq!(bounds(3, 997), None);
        let lower_only = bounds(300, 990).expect("the lower bound removes 30 %");
        assert_eq!(lower_only.to_string(), "k >= 300");
        assert_eq!(
            bounds(100, 800).unwrap().to_string(),
            "k >= 100 AND k <= 800"
        );
    }
}
