//! Selectivity and bit-width estimates of filters for one row group, before anything is
//! evaluated (the inputs of the cost model, [`super::cost`]).
//!
//! * `k` of a dictionary-encoded chunk is the code width `ceil(log2(entries))`; of any other
//!   chunk the physical value width (BOOLEAN 1, INT32/FLOAT 32, INT64/DOUBLE 64, INT96 96,
//!   FIXED_LEN_BYTE_ARRAY 8·length, BYTE_ARRAY the chunk's mean uncompressed bits per value);
//!   of a nested filter the sum over its distinct columns.
//! * Selectivities come from the row group: the fraction of dictionary entries matching (when
//!   the chunk is all dictionary-encoded), else min/max with a uniform distribution for ranges,
//!   `1/distinct` (or `1/(max−min+1)` on integers) for equality, null counts for `IS NULL`, else
//!   the `DEFAULT_*` constants below. Nested filters combine their children assuming
//!   independence; a comparison between columns takes the default of its operator.

use std::collections::HashMap;
use std::sync::Arc;

use parquet::basic::{ColumnOrder, Type as PhysicalType};
use parquet::file::metadata::RowGroupMetaData;

use crate::expr::{render::render, CmpOp, Leaf, LeafOp, Predicate, Scalar};
use crate::metrics::FilterStep;
use crate::prune::bounds::Bounds;
use crate::prune::dictionary::matching_entries;
use crate::prune::statistics::{chunk_bounds, file_column_order};
use crate::schema::{Domain, LeafColumn};
use crate::values::Values;

use super::order::{and_filters, or_filters, Filter, FilterKind};

/// Selectivity of `IS NULL` when the null count is unknown (and the null fraction assumed for
/// other leaves).
pub(crate) const DEFAULT_NULL_FRACTION: f64 = 0.1;
/// Selectivity of `=` without statistics or dictionary.
pub(crate) const DEFAULT_EQ: f64 = 0.1;
/// Selectivity of one range comparison (`<`, `>=`, …) without usable min/max.
pub(crate) const DEFAULT_RANGE: f64 = 0.5;
/// Selectivity of a `LIKE` with a wildcard (`NOT LIKE`: the complement).
pub(crate) const DEFAULT_LIKE: f64 = 0.1;
/// Share of values a join-key filter is expected to pass before any scan has probed it.
pub(crate) const DEFAULT_IN_KEYS: f64 = 0.1;

/// What one row group's metadata says about a column, for the estimates.
#[derive(Debug)]
struct ColumnInfo {
    bits: u32,
    bounds: Bounds,
    /// Null rows / rows, when known.
    null_fraction: Option<f64>,
    distinct: Option<u64>,
}

/// Selectivity and bit-width estimates for one row group, before evaluating anything.
pub(crate) struct Estimates<'a> {
    leaves: &'a [LeafColumn],
    rg: &'a RowGroupMetaData,
    column_orders: Option<&'a [ColumnOrder]>,
    /// Dictionaries of the all-dictionary-encoded chunks (loaded by pruning).
    dictionaries: &'a HashMap<usize, Arc<Values>>,
    columns: HashMap<usize, ColumnInfo>,
    column_filters: HashMap<u64, f64>,
}

impl<'a> Estimates<'a> {
    pub(crate) fn new(
        leaves: &'a [LeafColumn],
        rg: &'a RowGroupMetaData,
        column_orders: Option<&'a [ColumnOrder]>,
        dictionaries: &'a HashMap<usize, Arc<Values>>,
    ) -> Self {
        Estimates {
            leaves,
            rg,
            column_orders,
            dictionaries,
            columns: HashMap::new(),
            column_filters: HashMap::new(),
        }
    }

    fn info(&mut self, c: usize) -> &ColumnInfo {
        let (leaves, rg, orders, dicts) =
            (self.leaves, self.rg, self.column_orders, self.dictionaries);
        self.columns.entry(c).or_insert_with(|| {
            let column = &leaves[c];
            let cc = rg.column(c);
            let bounds = chunk_bounds(column, rg, c, Some(file_column_order(orders, c)));
            let null_fraction = if !column.optional() {
                Some(0.0)
            } else {
                match (bounds.null_count, bounds.num_values) {
                    (Some(n), Some(v)) if v > 0 => Some((n as f64 / v as f64).min(1.0)),
                    _ => None,
                }
            };
            let bits = match dicts.get(&c) {
                Some(d) => code_width(d.len()),
                None => physical_width(column, cc.uncompressed_size(), cc.num_values()),
            };
            ColumnInfo {
                bits,
                distinct: cc
                    .statistics()
                    .and_then(|s| s.distinct_count_opt())
                    .filter(|&d| d > 0),
                bounds,
                null_fraction,
            }
        })
    }

    /// Bits per value the select reads for this filter (`k`).
    pub(crate) fn bits(&mut self, f: &Filter<'_>) -> u32 {
        f.columns().into_iter().map(|c| self.info(c).bits).sum()
    }

    /// The estimate before any evaluation (no measurements).
    pub(crate) fn estimate(&mut self, f: &Filter<'_>) -> f64 {
        self.selectivity(f, &|_| None)
    }

    /// `measured(key)` where known, else the estimate; nested filters combine their children's
    /// selectivities assuming independence.
    pub(crate) fn selectivity(
        &mut self,
        f: &Filter<'_>,
        measured: &dyn Fn(u64) -> Option<f64>,
    ) -> f64 {
        if let Some(s) = measured(f.key) {
            return s;
        }
        let s = match &f.kind {
            FilterKind::Column { column, leaves } => {
                if let Some(&s) = self.column_filters.get(&f.key) {
                    return s;
                }
                let s = self.column_selectivity(*column, leaves);
                self.column_filters.insert(f.key, s);
                s
            }
            FilterKind::Node(Predicate::And(c)) => and_filters(c)
                .iter()
                .map(|g| self.selectivity(g, measured))
                .product(),
            FilterKind::Node(Predicate::Or(c)) => {
                1.0 - or_filters(c)
                    .iter()
                    .map(|g| 1.0 - self.selectivity(g, measured))
                    .product::<f64>()
            }
            FilterKind::Node(Predicate::True) => 1.0,
            FilterKind::Node(Predicate::False) => 0.0,
            FilterKind::Node(Predicate::Leaf(l)) => self.column_selectivity(l.column, &[l]),
            FilterKind::Node(Predicate::Compare(c)) => match c.op {
                CmpOp::Eq => DEFAULT_EQ,
                CmpOp::NotEq => 1.0 - DEFAULT_EQ,
                _ => DEFAULT_RANGE,
            },
        };
        s.clamp(0.0, 1.0)
    }

    /// The fraction of rows satisfying every leaf (all on `c`).
    fn column_selectivity(&mut self, c: usize, leaves: &[&Leaf]) -> f64 {
        let null_fraction = self.info(c).null_fraction;
        if leaves.iter().any(|l| l.op.accepts_null()) {
            // Only nulls can pass, and only if every leaf accepts them.
            return if leaves.iter().all(|l| l.op.accepts_null()) {
                null_fraction.unwrap_or(DEFAULT_NULL_FRACTION)
            } else {
                0.0
            };
        }
        let non_null = 1.0 - null_fraction.unwrap_or(DEFAULT_NULL_FRACTION);
        let values: Vec<&Leaf> = leaves
            .iter()
            .copied()
            .filter(|l| !matches!(l.op, LeafOp::IsNull { .. }))
            .collect();
        if values.is_empty() {
            return non_null;
        }
        let leaves_of_file = self.leaves;
        let column = &leaves_of_file[c];
        let from_dictionary = self.dictionaries.get(&c).and_then(|d| {
            let matching = matching_entries(&values, column, d).ok()?;
            (!d.is_empty()).then(|| matching.count_ones() as f64 / d.len() as f64)
        });
        let s = match from_dictionary {
            Some(s) => s,
            None => {
                let domain = column.domain();
                values_selectivity(self.info(c), domain, &values)
            }
        };
        non_null * s
    }

    /// The report line of a filter.
    pub(crate) fn step(&mut self, f: &Filter<'_>, negated: bool) -> (u64, FilterStep) {
        let step = FilterStep {
            filter: render(&f.predicate(), self.leaves),
            negated,
            bit_width: self.bits(f),
            estimated_selectivity: self.estimate(f),
            measured_selectivity: None,
        };
        (f.key, step)
    }
}

/// `ceil(log2(entries))`: the bit width of dictionary codes.
pub(crate) fn code_width(entries: usize) -> u32 {
    if entries <= 1 {
        0
    } else {
        usize::BITS - (entries - 1).leading_zeros()
    }
}

fn physical_width(column: &LeafColumn, uncompressed: i64, values: i64) -> u32 {
    match column.physical {
        PhysicalType::BOOLEAN => 1,
        PhysicalType::INT32 | PhysicalType::FLOAT => 32,
        PhysicalType::INT64 | PhysicalType::DOUBLE => 64,
        PhysicalType::INT96 => 96,
        PhysicalType::FIXED_LEN_BYTE_ARRAY => {
            (8 * column.type_length).min(u32::MAX as usize) as u32
        }
        PhysicalType::BYTE_ARRAY => {
            if values > 0 && uncompressed > 0 {
                ((uncompressed as f64 * 8.0 / values as f64).ceil() as u32).max(8)
            } else {
                32
            }
        }
    }
}

/// A numeric domain value as `f64` (for the uniform-distribution estimates).
fn numeric(s: &Scalar) -> Option<f64> {
    let x = match s {
        Scalar::Int(i) => *i as f64,
        Scalar::UInt(u) => *u as f64,
        Scalar::Float(f) => *f,
        Scalar::Decimal(d) => *d as f64,
        Scalar::Bool(_) | Scalar::Bytes(_) => return None,
    };
    (!x.is_nan()).then_some(x)
}

/// Fraction of the non-null values satisfying every leaf (no `IS NULL` among them), from the
/// statistics: range leaves intersect into one interval over `[min, max]` (uniform), the others
/// multiply (independence).
fn values_selectivity(info: &ColumnInfo, domain: Domain, leaves: &[&Leaf]) -> f64 {
    let range = match (&info.bounds.min, &info.bounds.max) {
        (Some(lo), Some(hi)) => match (numeric(lo), numeric(hi)) {
            (Some(lo), Some(hi)) if lo.is_finite() && hi.is_finite() && lo <= hi => Some((lo, hi)),
            _ => None,
        },
        _ => None,
    };
    let integral = matches!(domain, Domain::Int | Domain::UInt);
    let eq = |lit: &Scalar| -> f64 {
        if let (Some((lo, hi)), Some(x)) = (range, numeric(lit)) {
            if x < lo || x > hi {
                return 0.0;
            }
        }
        if let Some(d) = info.distinct {
            return 1.0 / d as f64;
        }
        match (domain, range) {
            (Domain::Bool, _) => 0.5,
            (_, Some((lo, hi))) if integral => 1.0 / (hi - lo + 1.0),
            _ => DEFAULT_EQ,
        }
    };
    let (mut a, mut b) = range.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
    let mut ranged = false;
    let mut point_range = 1.0; // min == max: each range leaf holds or not
    let mut s = 1.0;
    for leaf in leaves {
        match &leaf.op {
            LeafOp::Cmp(op @ (CmpOp::Lt | CmpOp::LtEq | CmpOp::Gt | CmpOp::GtEq), lit) => {
                match (range, numeric(lit)) {
                    (Some((lo, hi)), Some(x)) => {
                        ranged = true;
                        if lo == hi {
                            let holds = op.holds(lo.total_cmp(&x));
                            point_range *= if holds { 1.0 } else { 0.0 };
                        } else if matches!(op, CmpOp::Lt | CmpOp::LtEq) {
                            b = b.min(x);
                        } else {
                            a = a.max(x);
                        }
                    }
                    _ => s *= DEFAULT_RANGE,
                }
            }
            LeafOp::Cmp(CmpOp::Eq, lit) => s *= eq(lit),
            LeafOp::Cmp(CmpOp::NotEq, lit) => s *= 1.0 - eq(lit),
            LeafOp::In { values, negated } => {
                let any = values.iter().map(eq).sum::<f64>().min(1.0);
                s *= if *negated { 1.0 - any } else { any };
            }
            LeafOp::Like { pattern, negated } => {
                let m = if pattern.is_exact() {
                    eq(&Scalar::Bytes(pattern.prefix().to_vec()))
                } else {
                    DEFAULT_LIKE
                };
                s *= if *negated { 1.0 - m } else { m };
            }
            LeafOp::IsNull { .. } => {}
            // What the join's filter has passed so far, over every scan probing it.
            LeafOp::InKeys(f) => {
                let (probed, passed) = f.counts();
                s *= if probed == 0 {
                    DEFAULT_IN_KEYS
                } else {
                    passed as f64 / probed as f64
                };
            }
        }
    }
    if ranged {
        match range {
            Some((lo, hi)) if lo < hi => s *= ((b - a) / (hi - lo)).clamp(0.0, 1.0),
            _ => s *= point_range,
        }
    }
    s.clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_widths() {
        assert_eq!(code_width(0), 0);
        assert_eq!(code_width(1), 0);
        assert_eq!(code_width(2), 1);
        assert_eq!(code_width(3), 2);
        assert_eq!(code_width(4096), 12);
        assert_eq!(code_width(4097), 13);
    }
}
