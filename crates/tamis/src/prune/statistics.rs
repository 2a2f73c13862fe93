//! Row-group pruning from the column chunks' footer statistics.

use std::collections::HashMap;

use parquet::basic::ColumnOrder;
use parquet::file::metadata::RowGroupMetaData;

use super::bounds::{leaf_verdict, stats_bounds_with_order, Bounds};
use super::level::{Level, LevelKind, Narrowed, RowGroupView};
use crate::error::Result;
use crate::expr::{Predicate, Verdict};
use crate::schema::LeafColumn;
use crate::selection::Bitmap;

/// `pred` simplified with each leaf's verdict from the row group's statistics: `False` means no
/// row can match (prune), `True` that every row matches (no filtering needed).
///
/// The file's column orders are not available here, so trust is inferred from the statistics
/// themselves (see [`super::bounds::min_max_trusted`]); prefer
/// [`statistics_verdict_with_orders`] when the file metadata is at hand.
#[cfg(test)]
pub(crate) fn statistics_verdict(
    pred: &Predicate,
    leaves: &[LeafColumn],
    rg: &RowGroupMetaData,
) -> Predicate {
    verdict_impl(pred, leaves, rg, &|_| None, &mut |_| {})
}

/// [`statistics_verdict`] with the file's column orders (`FileMetaData::column_orders()`); a
/// file without them is legacy (`ColumnOrder::UNDEFINED`: signed order, so statistics of
/// strings, unsigned integers and byte-array decimals are ignored).
pub(crate) fn statistics_verdict_with_orders(
    pred: &Predicate,
    leaves: &[LeafColumn],
    rg: &RowGroupMetaData,
    column_orders: Option<&[ColumnOrder]>,
) -> Predicate {
    let order = |i| Some(file_column_order(column_orders, i));
    verdict_impl(pred, leaves, rg, &order, &mut |_| {})
}

/// The statistics' verdicts on a predicate's leaves for one row group, in the order
/// [`Predicate::simplify`] asks for them: taken once, when a scan binds its files (pruning row
/// groups before any task starts), and replayed when the row group is scanned, so the same
/// statistics are never evaluated twice.
#[derive(Debug, Clone, Default)]
pub(crate) struct LeafVerdicts(Box<[Verdict]>);

impl LeafVerdicts {
    /// `pred` simplified with the recorded verdicts: the predicate they were taken on gives
    /// what [`statistics_verdict_with_orders`] gave. A leaf past the record reads as unknown,
    /// which only keeps rows.
    pub(crate) fn replay(&self, pred: &Predicate) -> Predicate {
        let mut next = self.0.iter().copied();
        pred.simplify(&mut |_| next.next().unwrap_or(Verdict::Unknown))
    }
}

/// [`statistics_verdict_with_orders`], with the leaf verdicts recorded for
/// [`LeafVerdicts::replay`].
pub(crate) fn statistics_verdicts(
    pred: &Predicate,
    leaves: &[LeafColumn],
    rg: &RowGroupMetaData,
    column_orders: Option<&[ColumnOrder]>,
) -> (Predicate, LeafVerdicts) {
    let mut record = Vec::new();
    let order = |i| Some(file_column_order(column_orders, i));
    let simplified = verdict_impl(pred, leaves, rg, &order, &mut |v| record.push(v));
    (simplified, LeafVerdicts(record.into_boxed_slice()))
}

/// The statistics level: the verdicts recorded when the scan bound the file, else the footer's
/// statistics evaluated here.
pub(crate) struct Statistics<'a> {
    /// See [`LeafVerdicts`].
    pub(crate) recorded: Option<&'a LeafVerdicts>,
}

impl Level for Statistics<'_> {
    fn kind(&self) -> LevelKind {
        LevelKind::Statistics
    }

    fn narrow(
        &mut self,
        rg: &RowGroupView<'_>,
        p: &Predicate,
        _rows: Option<&Bitmap>,
    ) -> Result<Narrowed> {
        Ok(Narrowed::to(match self.recorded {
            Some(verdicts) => verdicts.replay(p),
            None => statistics_verdict_with_orders(p, rg.leaves, rg.metadata, rg.column_orders),
        }))
    }
}

/// The column order of column `i` given the footer's list (`None`: legacy file, `UNDEFINED`).
pub(crate) fn file_column_order(column_orders: Option<&[ColumnOrder]>, i: usize) -> ColumnOrder {
    match column_orders {
        Some(orders) => orders.get(i).copied().unwrap_or(ColumnOrder::UNKNOWN),
        None => ColumnOrder::UNDEFINED,
    }
}

fn verdict_impl(
    pred: &Predicate,
    leaves: &[LeafColumn],
    rg: &RowGroupMetaData,
    order: &dyn Fn(usize) -> Option<ColumnOrder>,
    record: &mut dyn FnMut(Verdict),
) -> Predicate {
    if rg.num_rows() == 0 {
        return Predicate::False;
    }
    let mut cache: HashMap<usize, Bounds> = HashMap::new();
    pred.simplify(&mut |leaf| {
        let verdict = match leaves.get(leaf.column) {
            Some(column) if !column.nested => {
                let bounds = cache
                    .entry(leaf.column)
                    .or_insert_with(|| chunk_bounds(column, rg, leaf.column, order(leaf.column)));
                leaf_verdict(&leaf.op, bounds)
            }
            _ => Verdict::Unknown,
        };
        record(verdict);
        verdict
    })
}

/// Bounds of one column chunk (unknown without statistics); `order` is the file's column order
/// for it, `None` if unknown (trust inferred from the statistics).
pub(crate) fn chunk_bounds(
    column: &LeafColumn,
    rg: &RowGroupMetaData,
    index: usize,
    order: Option<ColumnOrder>,
) -> Bounds {
    if index >= rg.num_columns() {
        return Bounds::unknown();
    }
    let cc = rg.column(index);
    let Some(stats) = cc.statistics() else {
        return Bounds::unknown();
    };
    let Ok(num_values) = u64::try_from(cc.num_values()) else {
        return Bounds::unknown();
    };
    stats_bounds_with_order(column, stats, num_values, order)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use parquet::basic::SortOrder;
    use parquet::data_type::{ByteArray, FixedLenByteArray};
    use parquet::file::properties::WriterProperties;
    use parquet::file::statistics::{Statistics, ValueStatistics};
    use parquet::schema::parser::parse_message_type;
    use parquet::schema::types::SchemaDescriptor;

    use super::*;
    use crate::expr::{CmpOp, Leaf, LeafOp, LikePattern, Scalar};
    use crate::prune::bounds::stats_bounds;
    use crate::prune::test_util::{col, open, sample_file};
    use crate::schema::leaf_columns;

    fn leaf(column: usize, op: LeafOp) -> Predicate {
        Predicate::Leaf(Leaf { column, op })
    }
    fn cmp(column: usize, op: CmpOp, v: Scalar) -> Predicate {
        leaf(column, LeafOp::Cmp(op, v))
    }

    /// Replaying the verdicts recorded at bind gives exactly what evaluating the statistics
    /// again gives, for random trees of AND / OR over leaves that statistics decide either way
    /// or not at all (the short cuts of `simplify` included).
    #[test]
    fn replayed_verdicts_equal_evaluated_ones() {
        let bytes = sample_file(500, WriterProperties::builder().build());
        let (md, leaves) = open(&bytes);
        let orders = md.file_metadata().column_orders().map(|o| o.as_slice());
        let (i, s, n) = (col(&leaves, "i32"), col(&leaves, "s"), col(&leaves, "n"));
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        fn tree(
            next: &mut dyn FnMut(u64) -> u64,
            depth: u32,
            i: usize,
            s: usize,
            n: usize,
        ) -> Predicate {
            let ops = [
                CmpOp::Eq,
                CmpOp::Lt,
                CmpOp::Gt,
                CmpOp::LtEq,
                CmpOp::GtEq,
                CmpOp::NotEq,
            ];
            match next(if depth == 0 { 3 } else { 5 }) {
                0 => {
                    let value = next(1200) as i64 - 100;
                    cmp(i, ops[next(6) as usize], Scalar::Int(value))
                }
                1 => {
                    let value = format!("s{:05}", next(1200));
                    cmp(s, ops[next(6) as usize], Scalar::Bytes(value.into_bytes()))
                }
                2 => leaf(
                    n,
                    LeafOp::IsNull {
                        negated: next(2) == 0,
                    },
                ),
                k => {
                    let children = (0..2 + next(3))
                        .map(|_| tree(&mut *next, depth - 1, i, s, n))
                        .collect();
                    if k == 3 {
                        Predicate::And(children)
                    } else {
                        Predicate::Or(children)
                    }
                }
            }
        }
        for rg in md.row_groups() {
            for _ in 0..500 {
                let p = tree(&mut next, 3, i, s, n);
                let evaluated = statistics_verdict_with_orders(&p, &leaves, rg, orders);
                let (simplified, verdicts) = statistics_verdicts(&p, &leaves, rg, orders);
                assert_eq!(simplified, evaluated, "{p:?}");
                assert_eq!(verdicts.replay(&p), evaluated, "{p:?}");
            }
        }
    }

    #[test]
    fn row_group_statistics() {
        let bytes = sample_file(500, WriterProperties::builder().build());
        let (md, leaves) = open(&bytes);
        let rg = md.row_group(0);
        let v = |p: &Predicate| statistics_verdict(p, &leaves, rg);
        let i = col(&leaves, "i32");
        assert_eq!(v(&cmp(i, CmpOp::Gt, Scalar::Int(998))), Predicate::False);
        assert_eq!(v(&cmp(i, CmpOp::GtEq, Scalar::Int(0))), Predicate::True);
        let eq7 = cmp(i, CmpOp::Eq, Scalar::Int(7));
        assert_eq!(v(&eq7), eq7);
        assert_eq!(
            v(&leaf(i, LeafOp::IsNull { negated: false })),
            Predicate::False
        );
        assert_eq!(
            v(&leaf(i, LeafOp::IsNull { negated: true })),
            Predicate::True
        );
        let n = col(&leaves, "n");
        let nn = leaf(n, LeafOp::IsNull { negated: true });
        assert_eq!(v(&nn), nn);
        assert_eq!(
            v(&cmp(n, CmpOp::GtEq, Scalar::Int(0))),
            cmp(n, CmpOp::GtEq, Scalar::Int(0))
        );

        let s = col(&leaves, "s");
        let like = |p: &str| {
            leaf(
                s,
                LeafOp::Like {
                    pattern: LikePattern::new(p, None).unwrap(),
                    negated: false,
                },
            )
        };
        assert_eq!(v(&like("x%")), Predicate::False);
        assert_eq!(v(&like("s009%")), like("s009%"));
        assert_eq!(v(&like("s01%")), Predicate::False, "max is s00998");
        // parquet-rs writes is_max_value_exact: exact string bounds prove AllMatch.
        assert_eq!(
            v(&cmp(s, CmpOp::LtEq, Scalar::Bytes(b"s00998".to_vec()))),
            Predicate::True
        );
        assert_eq!(
            v(&cmp(s, CmpOp::Lt, Scalar::Bytes(b"s".to_vec()))),
            Predicate::False
        );

        let u = col(&leaves, "u");
        assert_eq!(
            v(&cmp(u, CmpOp::GtEq, Scalar::UInt(3_000_000_000))),
            Predicate::True
        );
        assert_eq!(
            v(&cmp(u, CmpOp::Lt, Scalar::UInt(3_000_000_000))),
            Predicate::False
        );

        let d = col(&leaves, "d");
        assert_eq!(
            v(&cmp(d, CmpOp::Gt, Scalar::Decimal(998))),
            Predicate::False
        );
        assert_eq!(
            v(&cmp(d, CmpOp::GtEq, Scalar::Decimal(-5))),
            Predicate::True
        );

        let f = col(&leaves, "f64");
        assert_eq!(v(&cmp(f, CmpOp::Gt, Scalar::Float(1e9))), Predicate::False);
        let day = col(&leaves, "day");
        assert_eq!(v(&cmp(day, CmpOp::Lt, Scalar::Int(0))), Predicate::False);

        // Composition: AND with a pruned leaf is pruned, OR with a pruned leaf drops it.
        let and = Predicate::And(vec![eq7.clone(), like("x%")]);
        assert_eq!(v(&and), Predicate::False);
        let or = Predicate::Or(vec![eq7.clone(), like("x%")]);
        assert_eq!(v(&or), eq7);
        let leaves_known = statistics_verdict_with_orders(
            &like("x%"),
            &leaves,
            rg,
            md.file_metadata().column_orders().map(|v| v.as_slice()),
        );
        assert_eq!(leaves_known, Predicate::False);
        // Same file treated as legacy (no column orders): string and unsigned stats ignored.
        let legacy = |p: &Predicate| statistics_verdict_with_orders(p, &leaves, rg, None);
        assert_eq!(legacy(&like("x%")), like("x%"));
        let u_lt = cmp(u, CmpOp::Lt, Scalar::UInt(3_000_000_000));
        assert_eq!(legacy(&u_lt), u_lt);
        assert_eq!(
            legacy(&cmp(i, CmpOp::Gt, Scalar::Int(998))),
            Predicate::False
        );
    }

    fn leaves_of(schema: &str) -> Vec<LeafColumn> {
        let t = parse_message_type(schema).unwrap();
        leaf_columns(&SchemaDescriptor::new(Arc::new(t)))
    }

    #[test]
    fn statistics_trust_rules() {
        let leaves = leaves_of(
            "message m {
               required binary s (STRING);
               required int32 u (INTEGER(32,false));
               required int32 i;
               required fixed_len_byte_array(4) d (DECIMAL(9,2));
               required binary bd (DECIMAL(9,2));
               required double f;
               required fixed_len_byte_array(2) h (FLOAT16);
             }",
        );
        let (s, u, i, d, bd, f, h) = (
            &leaves[0], &leaves[1], &leaves[2], &leaves[3], &leaves[4], &leaves[5], &leaves[6],
        );
        assert_eq!(s.descr.sort_order(), SortOrder::UNSIGNED);
        assert_eq!(u.descr.sort_order(), SortOrder::UNSIGNED);
        assert_eq!(d.descr.sort_order(), SortOrder::SIGNED);

        let ba = |min: &[u8], max: &[u8], deprecated: bool| {
            Statistics::byte_array(
                Some(ByteArray::from(min.to_vec())),
                Some(ByteArray::from(max.to_vec())),
                None,
                Some(0),
                deprecated,
            )
        };
        // Strings: deprecated (signed) statistics are ignored, min_value/max_value kept.
        let b = stats_bounds(s, &ba(b"a", b"\xc3\xa9", true), 10);
        assert_eq!((b.min, b.max), (None, None));
        assert_eq!(b.null_count, Some(0));
        let b = stats_bounds(s, &ba(b"a", b"b", false), 10);
        assert_eq!(b.min, Some(Scalar::Bytes(b"a".to_vec())));
        assert!(
            b.min_exact && b.max_exact,
            "parquet-rs: no flag in memory = exact"
        );
        // With the file's column order.
        let with = |order| stats_bounds_with_order(s, &ba(b"a", b"b", false), 10, Some(order));
        assert_eq!(with(ColumnOrder::UNDEFINED).min, None);
        assert_eq!(with(ColumnOrder::UNKNOWN).min, None);
        assert!(with(ColumnOrder::TYPE_DEFINED_ORDER(SortOrder::UNSIGNED))
            .min
            .is_some());

        // Unsigned ints: deprecated statistics were computed signed.
        let i32s = |min: i32, max: i32, deprecated| {
            Statistics::int32(Some(min), Some(max), None, Some(0), deprecated)
        };
        assert_eq!(stats_bounds(u, &i32s(1, -1, true), 10).min, None);
        let b = stats_bounds(u, &i32s(1, -1, false), 10);
        assert_eq!(
            (b.min, b.max),
            (Some(Scalar::UInt(1)), Some(Scalar::UInt(u32::MAX as u64)))
        );
        // Signed ints: deprecated statistics are fine.
        assert_eq!(
            stats_bounds(i, &i32s(-1, 1, true), 10).min,
            Some(Scalar::Int(-1))
        );

        // Decimals on FLBA: signed value order; the wrong width (truncated) is no bound.
        let fl = |min: &[u8], max: &[u8]| {
            Statistics::fixed_len_byte_array(
                Some(FixedLenByteArray::from(min.to_vec())),
                Some(FixedLenByteArray::from(max.to_vec())),
                None,
                Some(0),
                false,
            )
        };
        let b = stats_bounds(d, &fl(&[0xff, 0xff, 0xff, 0xfe], &[0, 0, 1, 0]), 10);
        assert_eq!(
            (b.min, b.max),
            (Some(Scalar::Decimal(-2)), Some(Scalar::Decimal(256)))
        );
        let b = stats_bounds(d, &fl(&[0xff, 0xff], &[0, 0, 1, 0]), 10);
        assert_eq!(b.min, None);
        assert_eq!(
            stats_bounds(d, &fl(&[0, 0, 0, 1], &[0, 0, 0, 2]), 10).max,
            Some(Scalar::Decimal(2))
        );
        let b = stats_bounds(bd, &ba(&[0x80], &[0x7f], false), 10);
        assert_eq!(
            (b.min, b.max),
            (Some(Scalar::Decimal(-128)), Some(Scalar::Decimal(127)))
        );
        assert_eq!(stats_bounds(bd, &ba(&[0x80], &[0x7f], true), 10).min, None);

        // Floats: NaN bounds are missing; NaN possible unless nan_count is 0.
        let dbl = |min: f64, max: f64, nan: Option<u64>| {
            Statistics::Double(
                ValueStatistics::new(Some(min), Some(max), None, Some(0), false)
                    .with_nan_count(nan),
            )
        };
        let b = stats_bounds(f, &dbl(f64::NAN, 2.0, None), 10);
        assert_eq!(b.min, None);
        assert!(b.may_have_nan);
        assert!(b.max_exact, "fixed-width values cannot be truncated");
        assert!(!stats_bounds(f, &dbl(1.0, 2.0, Some(0)), 10).may_have_nan);
        assert!(stats_bounds(f, &dbl(1.0, 2.0, Some(3)), 10).may_have_nan);
        // Float16 (little endian): 1.0 = 0x3c00.
        let b = stats_bounds(h, &fl(&[0x00, 0x3c], &[0x00, 0x40]), 10);
        assert_eq!(
            (b.min, b.max),
            (Some(Scalar::Float(1.0)), Some(Scalar::Float(2.0)))
        );
        // Statistics of another physical type are ignored.
        assert_eq!(stats_bounds(s, &i32s(1, 2, false), 10).min, None);
    }

    /// DuckDB once returned no rows for `f > 5.0` on a file with values [1.0, NaN, 2.0].
    #[test]
    fn nan_in_data_keeps_row_group() {
        use arrow::array::{ArrayRef, Float64Array};
        use arrow::record_batch::RecordBatch;
        let batch = RecordBatch::try_from_iter([(
            "f",
            Arc::new(Float64Array::from(vec![1.0, f64::NAN, 2.0])) as ArrayRef,
        )])
        .unwrap();
        let mut out = Vec::new();
        let mut w = parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let bytes = bytes::Bytes::from(out);
        let (md, leaves) = open(&bytes);
        let rg = md.row_group(0);
        let gt = cmp(0, CmpOp::Gt, Scalar::Float(5.0));
        assert_eq!(statistics_verdict(&gt, &leaves, rg), gt);
        let lt = cmp(0, CmpOp::Lt, Scalar::Float(5.0));
        assert_eq!(statistics_verdict(&lt, &leaves, rg), lt, "NaN < 5 is false");
        assert_eq!(
            statistics_verdict(&cmp(0, CmpOp::Eq, Scalar::Float(5.0)), &leaves, rg),
            Predicate::False
        );
        assert_eq!(
            statistics_verdict(&cmp(0, CmpOp::GtEq, Scalar::Float(0.0)), &leaves, rg),
            Predicate::True
        );
        let b = chunk_bounds(&leaves[0], rg, 0, None);
        assert!(b.may_have_nan);
        assert_eq!(
            (b.min, b.max),
            (Some(Scalar::Float(1.0)), Some(Scalar::Float(2.0)))
        );
    }
}
