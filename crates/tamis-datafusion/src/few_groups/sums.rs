//! `sum`, `avg` and `count` of few groups, a column at a time.
//!
//! DataFusion's accumulators take a row at a time: a group index, a value, an add into that
//! group's slot, each aggregate on its own. TPC-H Q1 sums `l_quantity` twice (`sum` and
//! `avg`), counts its rows three times over (`count(*)` and each `avg`'s count) and adds
//! 128-bit decimals where every value fits in 64 bits: its accumulators were 14 % of the
//! query at one thread (`perf`, SF 1). Here each argument column is summed and counted once
//! for all the aggregates that name it, per batch in 64-bit lanes where the batch cannot
//! overflow them, and, for up to
//! [`FEW`](tamis::kernels::groups::FEW) groups, by one branch-free pass per group that
//! compiles to vector compares and adds. The states emitted are DataFusion's, value for
//! value: `sum` wraps as DataFusion's does, and a group with no value has a null state.

use std::sync::Arc;

use arrow::array::UInt64Array;
use arrow::array::{Array, ArrayRef, AsArray, Int64Array, PrimitiveArray, RecordBatch};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Decimal128Type, Int64Type, Schema};
use datafusion::common::Result;
use datafusion::functions_aggregate::{average::Avg, count::Count, sum::Sum};
use datafusion::logical_expr::ColumnarValue;
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_expr::PhysicalExpr;
use tamis::kernels::groups::{count_by_group, sum_by_group};
use tamis::kernels::narrow::lows_if_sums_fit;

/// An aggregate computed here, and the measure (argument column) it reads.
#[derive(Debug)]
pub(super) enum Summed {
    /// `sum`: its state, the wrapped sum (a decimal or an `Int64`), null for no value.
    Sum { measure: usize, state: DataType },
    /// `avg` of a decimal: count (`UInt64`) and sum, both null for no value.
    Avg { measure: usize, state: DataType },
    /// `count`: the values that are not null (`Int64`, never null).
    Count { measure: usize },
}

/// The sums and counts of every measure, group by group.
#[derive(Default)]
pub(super) struct Sums {
    measures: Vec<Measure>,
    // Scratch, kept between batches.
    codes: Vec<u32>,
    lows: Vec<i64>,
    batch_sums: Vec<i64>,
    batch_rows: Vec<u64>,
    batch_counts: Vec<u64>,
}

struct Measure {
    expr: Arc<dyn PhysicalExpr>,
    /// Whether an aggregate reads its sum (`count` alone does not).
    summed: bool,
    /// Each group's sum, exact modulo 2^128 (an `Int64` sum is its low 64 bits).
    sums: Vec<i128>,
    /// Each group's values that are not null.
    counts: Vec<u64>,
}

impl Sums {
    /// How `aggregate` is computed here, its argument added to the measures (or found
    /// there); `None` where DataFusion's accumulator must compute it.
    pub(super) fn add(
        &mut self,
        aggregate: &AggregateFunctionExpr,
        input_schema: &Schema,
    ) -> Option<Summed> {
        let [argument] = aggregate.expressions().try_into().ok()?;
        let input = argument.data_type(input_schema).ok()?;
        let states: Vec<DataType> = (aggregate.state_fields().ok()?.iter())
            .map(|f| f.data_type().clone())
            .collect();
        let scale = |t: &DataType| match t {
            DataType::Decimal128(_, s) => Some(*s),
            _ => None,
        };
        let decimal = scale(&input).is_some();
        // DataFusion's own functions, by type: a function registered under one of their
        // names may compute something else.
        let function = aggregate.fun().inner();
        let is_sum = function.downcast_ref::<Sum>().is_some();
        let is_avg = function.downcast_ref::<Avg>().is_some();
        let is_count = function.downcast_ref::<Count>().is_some();
        let same_scale = |state: &DataType| decimal && scale(state) == scale(&input);
        let computed = match states.as_slice() {
            [state] if is_sum && same_scale(state) => Some(state),
            [DataType::Int64] if is_sum && input == DataType::Int64 => Some(&DataType::Int64),
            [DataType::UInt64, state] if is_avg && same_scale(state) => Some(state),
            [DataType::Int64] if is_count => None,
            _ => return None,
        };
        let found = (self.measures.iter()).position(|m| m.expr.as_ref() == argument.as_ref());
        let measure = found.unwrap_or_else(|| {
            self.measures.push(Measure {
                expr: argument,
                summed: false,
                sums: Vec::new(),
                counts: Vec::new(),
            });
            self.measures.len() - 1
        });
        self.measures[measure].summed |= computed.is_some();
        Some(match computed {
            None => Summed::Count { measure },
            Some(state) if is_sum => Summed::Sum {
                measure,
                state: state.clone(),
            },
            Some(state) => Summed::Avg {
                measure,
                state: state.clone(),
            },
        })
    }

    /// Adds `batch`'s rows, row `r` to group `groups[r]` (of `total`). Every group past those
    /// of earlier batches must have a row here, as groups numbered in order of first
    /// appearance do: DataFusion's state of a group that never had a row is not always null
    /// (its `NullState` marks every group seen after a batch with no nulls), and here it is.
    pub(super) fn update(
        &mut self,
        batch: &RecordBatch,
        groups: &[u32],
        total: usize,
    ) -> Result<()> {
        count_by_group(groups, total, &mut self.batch_rows);
        for measure in &mut self.measures {
            measure.sums.resize(total, 0);
            measure.counts.resize(total, 0);
            let values = match measure.expr.evaluate(batch)? {
                // A constant: every row's value, or none (`count(*)` is `count(1)`).
                ColumnarValue::Scalar(v) if !measure.summed => {
                    if !v.is_null() {
                        add(&mut measure.counts, &self.batch_rows);
                    }
                    continue;
                }
                v => v.into_array(groups.len())?,
            };
            // Null rows go to a group of their own, past the others, which nothing reads.
            let codes = match values.logical_nulls().filter(|n| n.null_count() > 0) {
                Some(nulls) => {
                    valid_codes(groups, &nulls, total as u32, &mut self.codes);
                    count_by_group(&self.codes, total, &mut self.batch_counts);
                    add(&mut measure.counts, &self.batch_counts);
                    &self.codes
                }
                None => {
                    add(&mut measure.counts, &self.batch_rows);
                    groups
                }
            };
            if !measure.summed {
                continue;
            }
            match values.data_type() {
                DataType::Decimal128(_, _) => {
                    let values = values.as_primitive::<Decimal128Type>().values();
                    if lows_if_sums_fit(values, &mut self.lows) {
                        sum_by_group(codes, &self.lows, total, &mut self.batch_sums);
                        for (s, &b) in measure.sums.iter_mut().zip(&self.batch_sums) {
                            *s = s.wrapping_add(i128::from(b));
                        }
                    } else {
                        for (&g, &v) in codes.iter().zip(values.iter()) {
                            if let Some(s) = measure.sums.get_mut(g as usize) {
                                *s = s.wrapping_add(v);
                            }
                        }
                    }
                }
                DataType::Int64 => {
                    let values = values.as_primitive::<Int64Type>().values();
                    // Wrapped modulo 2^64, as DataFusion's sum of `Int64` is.
                    sum_by_group(codes, values, total, &mut self.batch_sums);
                    for (s, &b) in measure.sums.iter_mut().zip(&self.batch_sums) {
                        *s = i128::from((*s as i64).wrapping_add(b));
                    }
                }
                t => {
                    return datafusion::common::internal_err!("FewGroupsExec cannot sum {t}");
                }
            }
        }
        Ok(())
    }

    /// `aggregate`'s state for every group so far.
    pub(super) fn state(&self, aggregate: &Summed) -> Result<Vec<ArrayRef>> {
        Ok(match aggregate {
            Summed::Count { measure } => {
                let counts = self.measures[*measure].counts.iter().map(|&c| c as i64);
                vec![Arc::new(Int64Array::from_iter_values(counts))]
            }
            Summed::Sum { measure, state } => vec![self.measures[*measure].sum_state(state)?],
            Summed::Avg { measure, state } => {
                let m = &self.measures[*measure];
                let counts = UInt64Array::new(m.counts.clone().into(), m.no_value());
                vec![Arc::new(counts), m.sum_state(state)?]
            }
        })
    }

    /// Forgets every group.
    pub(super) fn clear(&mut self) {
        for measure in &mut self.measures {
            measure.sums.clear();
            measure.counts.clear();
        }
    }

    /// Bytes the groups' sums and counts hold.
    pub(super) fn size(&self) -> usize {
        (self.measures.iter())
            .map(|m| m.sums.capacity() * 16 + m.counts.capacity() * 8)
            .sum()
    }
}

impl Measure {
    /// Null for each group that saw no value, as DataFusion's `NullState` has it.
    fn no_value(&self) -> Option<NullBuffer> {
        (self.counts.contains(&0))
            .then(|| NullBuffer::from_iter(self.counts.iter().map(|&c| c > 0)))
    }

    /// The sums as the state type `state`.
    fn sum_state(&self, state: &DataType) -> Result<ArrayRef> {
        Ok(match state {
            DataType::Int64 => {
                let sums = self.sums.iter().map(|&s| s as i64).collect::<Vec<_>>();
                Arc::new(PrimitiveArray::<Int64Type>::new(
                    sums.into(),
                    self.no_value(),
                ))
            }
            DataType::Decimal128(_, _) => Arc::new(
                PrimitiveArray::<Decimal128Type>::new(self.sums.clone().into(), self.no_value())
                    .with_data_type(state.clone()),
            ),
            t => return datafusion::common::internal_err!("FewGroupsExec has no {t} sums"),
        })
    }
}

fn add(totals: &mut [u64], batch: &[u64]) {
    for (t, &b) in totals.iter_mut().zip(batch) {
        *t += b;
    }
}

/// `out[r]` = `groups[r]`, or `null_group` where row `r` is null.
fn valid_codes(groups: &[u32], nulls: &NullBuffer, null_group: u32, out: &mut Vec<u32>) {
    out.clear();
    out.extend(groups.iter().zip(nulls.iter()).map(
        |(&g, valid)| {
            if valid {
                g
            } else {
                null_group
            }
        },
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Decimal128Array, UInt32Array};
    use arrow::datatypes::{Field, SchemaRef};
    use datafusion::functions_aggregate::{average::avg_udaf, count::count_udaf, sum::sum_udaf};
    use datafusion::logical_expr::{EmitTo, GroupsAccumulator};
    use datafusion::physical_expr::aggregate::AggregateExprBuilder;
    use datafusion::physical_expr::expressions::{col, lit};

    fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut s = seed | 1;
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        }
    }

    /// Decimal (`d`) and integer (`i`) columns: small, wide, at the ends, nulls.
    fn batch(next: &mut impl FnMut() -> u64, rows: usize, shape: u64) -> RecordBatch {
        let value = |x: u64| -> i128 {
            match shape {
                0 => (x % 2001) as i128 - 1000,
                1 => (x as i64 >> 1) as i128,
                2 => (x as i128) << 62 | (x >> 3) as i128,
                _ => [i64::MIN as i128, i64::MAX as i128, -1, 0, 1][(x % 5) as usize],
            }
        };
        let nulls = move |x: u64| shape != 0 && x.is_multiple_of(7);
        let d: Decimal128Array = (0..rows)
            .map(|_| {
                let x = next();
                (!nulls(x)).then(|| value(x >> 8))
            })
            .collect();
        let d = d.with_precision_and_scale(25, 2).unwrap();
        let i: Int64Array = (0..rows)
            .map(|_| {
                let x = next();
                (!nulls(x)).then(|| value(x >> 8) as i64)
            })
            .collect();
        RecordBatch::try_new(schema(), vec![Arc::new(d), Arc::new(i)]).unwrap()
    }

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            // Precision 25: `avg`'s sum is then a `Decimal128` (past 25, a `Decimal256`).
            Field::new("d", DataType::Decimal128(25, 2), true),
            Field::new("i", DataType::Int64, true),
        ]))
    }

    /// Every aggregate computed here, against DataFusion's own accumulator, state for state:
    /// few groups and many, nulls, values that overflow 64-bit lanes and 128 bits.
    #[test]
    fn states_are_datafusions() {
        let schema = schema();
        let d = col("d", &schema).unwrap();
        let i = col("i", &schema).unwrap();
        let aggregates = [
            (sum_udaf(), d.clone()),
            (avg_udaf(), d.clone()),
            (count_udaf(), d.clone()),
            (sum_udaf(), i.clone()),
            (count_udaf(), i.clone()),
            (count_udaf(), lit(1i64)),
            (sum_udaf(), d.clone()),
        ];
        let aggregates: Vec<Arc<AggregateFunctionExpr>> = (aggregates.into_iter())
            .map(|(f, e)| {
                let a = AggregateExprBuilder::new(f, vec![e])
                    .schema(Arc::clone(&schema))
                    .alias("a")
                    .build()
                    .unwrap();
                Arc::new(a)
            })
            .collect();
        let mut next = rng(42);
        for total in [1usize, 2, 5, 8, 9, 300] {
            for shape in 0..4 {
                let mut sums = Sums::default();
                let summed: Vec<Summed> = (aggregates.iter())
                    .map(|a| {
                        sums.add(a, &schema)
                            .unwrap_or_else(|| panic!("{} {:?}", a.fun().name(), a.state_fields()))
                    })
                    .collect();
                assert_eq!(sums.measures.len(), 3, "d, i and the constant, each once");
                let mut oracles: Vec<Box<dyn GroupsAccumulator>> = (aggregates.iter())
                    .map(|a| a.create_groups_accumulator().unwrap())
                    .collect();
                // Groups numbered in order of first appearance, as `FewGroups` numbers them:
                // every new group has a row in the batch that makes it.
                let mut ids = std::collections::HashMap::new();
                for rows in [0usize, 1, 63, 64, 65, 1000] {
                    let batch = batch(&mut next, rows, shape);
                    let codes: UInt32Array = (0..rows)
                        .map(|_| {
                            let n = ids.len() as u32;
                            *ids.entry(next() % total as u64).or_insert(n)
                        })
                        .collect();
                    let now = ids.len();
                    sums.update(&batch, codes.values(), now).unwrap();
                    for (o, a) in oracles.iter_mut().zip(&aggregates) {
                        let values: Vec<ArrayRef> = (a.expressions().iter())
                            .map(|e| e.evaluate(&batch).unwrap().into_array(rows).unwrap())
                            .collect();
                        let indices: Vec<usize> =
                            codes.values().iter().map(|&c| c as usize).collect();
                        o.update_batch(&values, &indices, None, now).unwrap();
                    }
                }
                for (k, (s, o)) in summed.iter().zip(&mut oracles).enumerate() {
                    let want = o.state(EmitTo::All).unwrap();
                    let got = sums.state(s).unwrap();
                    assert_eq!(got.len(), want.len());
                    for (g, w) in got.iter().zip(&want) {
                        assert_eq!(g.data_type(), w.data_type(), "aggregate {k}");
                        assert_eq!(
                            g.to_data(),
                            w.to_data(),
                            "aggregate {k}, {total} groups, shape {shape}"
                        );
                    }
                }
            }
        }
    }
}
