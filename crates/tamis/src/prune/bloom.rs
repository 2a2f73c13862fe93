//! Row-group pruning with split-block Bloom filters.
//!
//! Only equality leaves (`= v`, `IN (…)`) can use a Bloom filter: a literal whose hash is absent
//! is certainly not in the column chunk. The literal is hashed in its *physical plain encoding*
//! (what the writer hashed): INT32 / INT64 little-endian (dates, times, unsigned and INT32/INT64
//! decimals included), FLOAT / DOUBLE IEEE bits, BYTE_ARRAY bytes, FIXED_LEN_BYTE_ARRAY bytes
//! (decimals big-endian two's complement sign-extended to the type length).
//!
//! Not checked (leaf stays unknown): booleans, INT96, Float16, byte-array decimals (their width
//! varies by writer), NaN literals. `±0.0` is checked under both bit patterns. Literals that no
//! value of the column can equal (an INT32 column and a literal outside `i32`, a binary literal
//! of the wrong fixed width, a decimal that does not fit the type length) are absent.

use std::collections::HashMap;

use parquet::basic::Type as PhysicalType;
use parquet::bloom_filter::Sbbf;
use parquet::file::metadata::RowGroupMetaData;
use parquet::file::reader::ChunkReader;

use super::level::{Level, LevelKind, Narrowed, RowGroupView};
use crate::error::{Error, ErrorKind, Result};
use crate::expr::{CmpOp, Leaf, LeafOp, Predicate, Scalar, Verdict};
use crate::schema::{Domain, LeafColumn};
use crate::selection::Bitmap;

/// Detailed result of [`bloom_check`].
#[derive(Debug, Clone)]
pub(crate) struct BloomOutcome {
    /// The predicate with leaves proven absent replaced by `False`, simplified.
    pub predicate: Predicate,
    /// Filters that could not be read; their leaves were left unknown.
    pub errors: Vec<Error>,
}

/// How a literal is probed in a filter.
pub(crate) enum Probe {
    /// The literal cannot be checked: keep.
    Skip,
    /// No value of the column can equal it.
    Absent,
    /// Present if any of these plain encodings is in the filter.
    AnyOf(Vec<Vec<u8>>),
}

/// Whether Bloom filters of `column` can be probed at all.
fn bloom_capable(column: &LeafColumn) -> bool {
    !column.nested
        && matches!(
            (column.domain(), column.physical),
            (
                Domain::Int | Domain::UInt,
                PhysicalType::INT32 | PhysicalType::INT64
            ) | (Domain::Float, PhysicalType::FLOAT | PhysicalType::DOUBLE)
                | (
                    Domain::Bytes,
                    PhysicalType::BYTE_ARRAY | PhysicalType::FIXED_LEN_BYTE_ARRAY
                )
                | (Domain::Decimal, PhysicalType::FIXED_LEN_BYTE_ARRAY)
        )
}

/// The plain encoding(s) of `lit` in `column`.
fn probe(column: &LeafColumn, lit: &Scalar) -> Probe {
    let one = |b: Vec<u8>| Probe::AnyOf(vec![b]);
    match (column.physical, lit) {
        (PhysicalType::INT32, Scalar::Int(v)) if column.domain() == Domain::Int => {
            i32::try_from(*v).map_or(Probe::Absent, |v| one(v.to_le_bytes().to_vec()))
        }
        (PhysicalType::INT32, Scalar::UInt(v)) if column.domain() == Domain::UInt => {
            u32::try_from(*v).map_or(Probe::Absent, |v| one(v.to_le_bytes().to_vec()))
        }
        (PhysicalType::INT64, Scalar::Int(v)) if column.domain() == Domain::Int => {
            one(v.to_le_bytes().to_vec())
        }
        (PhysicalType::INT64, Scalar::UInt(v)) if column.domain() == Domain::UInt => {
            one(v.to_le_bytes().to_vec())
        }
        (PhysicalType::FLOAT | PhysicalType::DOUBLE, Scalar::Float(f)) => {
            if f.is_nan() {
                return Probe::Skip;
            }
            let (f, g) = if *f == 0.0 { (0.0, -0.0) } else { (*f, *f) };
            if column.physical == PhysicalType::FLOAT {
                let (a, b) = (f as f32, g as f32);
                // A literal no f32 equals exactly: leave it to evaluation.
                if a as f64 != f {
                    return Probe::Skip;
                }
                Probe::AnyOf(vec![a.to_le_bytes().to_vec(), b.to_le_bytes().to_vec()])
            } else {
                Probe::AnyOf(vec![f.to_le_bytes().to_vec(), g.to_le_bytes().to_vec()])
            }
        }
        (PhysicalType::BYTE_ARRAY, Scalar::Bytes(b)) => one(b.clone()),
        (PhysicalType::FIXED_LEN_BYTE_ARRAY, Scalar::Bytes(b)) => {
            if b.len() == column.type_length {
                one(b.clone())
            } else {
                Probe::Absent
            }
        }
        (PhysicalType::FIXED_LEN_BYTE_ARRAY, Scalar::Decimal(d))
            if column.domain() == Domain::Decimal =>
        {
            decimal_be(*d, column.type_length).map_or(Probe::Absent, one)
        }
        _ => Probe::Skip,
    }
}

/// The probes of an `=` / `IN` leaf on `column`, or `None` when no Bloom filter can decide it
/// (another operator, a column type filters are not built for, a literal that cannot be
/// hashed as the writer would have).
pub(crate) fn leaf_probes(leaf: &Leaf, column: &LeafColumn) -> Option<Vec<Probe>> {
    let literals: &[Scalar] = match &leaf.op {
        LeafOp::Cmp(CmpOp::Eq, v) => std::slice::from_ref(v),
        LeafOp::In {
            values,
            negated: false,
        } => values,
        _ => return None,
    };
    if !bloom_capable(column) {
        return None;
    }
    let probes: Vec<Probe> = literals.iter().map(|l| probe(column, l)).collect();
    (!probes.iter().any(|p| matches!(p, Probe::Skip))).then_some(probes)
}

/// `v` as big-endian two's complement of exactly `width` bytes, if it fits.
fn decimal_be(v: i128, width: usize) -> Option<Vec<u8>> {
    if width == 0 {
        return None;
    }
    let full = v.to_be_bytes();
    let sign = if v < 0 { 0xff } else { 0 };
    if width >= 16 {
        let mut out = vec![sign; width - 16];
        out.extend_from_slice(&full);
        return Some(out);
    }
    let (head, tail) = full.split_at(16 - width);
    // Fits if the dropped bytes are sign extension and the kept top bit has the same sign.
    let fits = head.iter().all(|&b| b == sign) && ((tail[0] & 0x80 != 0) == (v < 0));
    fits.then(|| tail.to_vec())
}

/// `pred` simplified with the row group's Bloom filters: an equality (or IN) leaf whose literals
/// are all absent becomes `False`.
///
/// A missing filter keeps the row group. A filter that cannot be decoded keeps it too (the leaf
/// stays unknown); an I/O error while reading one is returned, not hidden — see [`bloom_check`]
/// for a variant that never fails and reports every error.
pub(crate) fn bloom_verdict<R: ChunkReader>(
    pred: &Predicate,
    leaves: &[LeafColumn],
    rg: &RowGroupMetaData,
    reader: &R,
) -> Result<Predicate> {
    let outcome = bloom_check(pred, leaves, rg, reader);
    if let Some(e) = outcome.errors.into_iter().find(|e| e.kind == ErrorKind::Io) {
        return Err(e);
    }
    Ok(outcome.predicate)
}

/// The Bloom filter level: `reader` serves the filters' bytes (from the row group's coalesced
/// metadata read when it holds them).
pub(crate) struct Bloom<'a, R> {
    pub(crate) reader: &'a R,
}

impl<R: ChunkReader> Level for Bloom<'_, R> {
    fn kind(&self) -> LevelKind {
        LevelKind::Bloom
    }

    fn narrow(
        &mut self,
        rg: &RowGroupView<'_>,
        p: &Predicate,
        _rows: Option<&Bitmap>,
    ) -> Result<Narrowed> {
        bloom_verdict(p, rg.leaves, rg.metadata, self.reader).map(Narrowed::to)
    }
}

/// Like [`bloom_verdict`], but never fails: unreadable filters leave their leaves unknown and are
/// listed in [`BloomOutcome::errors`].
pub(crate) fn bloom_check<R: ChunkReader>(
    pred: &Predicate,
    leaves: &[LeafColumn],
    rg: &RowGroupMetaData,
    reader: &R,
) -> BloomOutcome {
    let mut filters: HashMap<usize, Option<Sbbf>> = HashMap::new();
    let mut errors = Vec::new();
    let predicate = pred.simplify(&mut |leaf| {
        let literals: &[Scalar] = match &leaf.op {
            LeafOp::Cmp(CmpOp::Eq, v) => std::slice::from_ref(v),
            LeafOp::In {
                values,
                negated: false,
            } => values,
            _ => return Verdict::Unknown,
        };
        let Some(column) = leaves.get(leaf.column) else {
            return Verdict::Unknown;
        };
        if !bloom_capable(column) || leaf.column >= rg.num_columns() {
            return Verdict::Unknown;
        }
        let probes: Vec<Probe> = literals.iter().map(|l| probe(column, l)).collect();
        if probes.iter().any(|p| matches!(p, Probe::Skip)) {
            return Verdict::Unknown;
        }
        let filter = filters.entry(leaf.column).or_insert_with(|| {
            let cc = rg.column(leaf.column);
            match Sbbf::read_from_column_chunk(cc, reader) {
                // An empty bitset would make every probe index out of bounds.
                Ok(Some(f)) if f.num_blocks() > 0 => Some(f),
                Ok(Some(_)) => {
                    errors.push(
                        Error::corrupt("Bloom filter has an empty bitset").in_column(&column.path),
                    );
                    None
                }
                Ok(None) => None,
                Err(e) => {
                    errors.push(
                        Error::from(e)
                            .in_column(&column.path)
                            .with_prefix("reading the Bloom filter"),
                    );
                    None
                }
            }
        });
        let Some(filter) = filter else {
            return Verdict::Unknown;
        };
        let present = probes.iter().any(|p| match p {
            Probe::AnyOf(encodings) => encodings.iter().any(|e| filter.check(e.as_slice())),
            Probe::Absent => false,
            Probe::Skip => true,
        });
        if present {
            Verdict::Unknown
        } else {
            Verdict::NoneMatch
        }
    });
    BloomOutcome { predicate, errors }
}

trait WithPrefix {
    fn with_prefix(self, prefix: &str) -> Self;
}

impl WithPrefix for Error {
    fn with_prefix(mut self, prefix: &str) -> Self {
        self.message = format!("{prefix}: {}", self.message);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Leaf;
    use crate::prune::test_util::{col, open, sample_file};
    use parquet::file::properties::WriterProperties;

    fn eq(column: usize, v: Scalar) -> Predicate {
        Predicate::Leaf(Leaf {
            column,
            op: LeafOp::Cmp(CmpOp::Eq, v),
        })
    }

    #[test]
    fn decimal_encoding() {
        assert_eq!(decimal_be(1, 3), Some(vec![0, 0, 1]));
        assert_eq!(decimal_be(-1, 3), Some(vec![0xff, 0xff, 0xff]));
        assert_eq!(decimal_be(-129, 2), Some(vec![0xff, 0x7f]));
        assert_eq!(decimal_be(128, 1), None);
        assert_eq!(decimal_be(-129, 1), None);
        assert_eq!(decimal_be(127, 1), Some(vec![0x7f]));
        assert_eq!(decimal_be(-1, 17), Some(vec![0xff; 17]));
    }

    #[test]
    fn bloom_filters_prune_absent_values_only() {
        let rows = 500;
        let props = WriterProperties::builder()
            .set_bloom_filter_enabled(true)
            .build();
        let bytes = sample_file(rows, props);
        let (md, leaves) = open(&bytes);
        let rg = md.row_group(0);
        type Lit = fn(i64) -> Scalar;
        let columns: [(&str, Lit); 8] = [
            ("i32", Scalar::Int),
            ("i64", Scalar::Int),
            ("f32", |v| Scalar::Float(v as f64 + 0.5)),
            ("f64", |v| Scalar::Float(v as f64 + 0.5)),
            ("s", |v| Scalar::Bytes(format!("s{v:05}").into_bytes())),
            ("d", |v| Scalar::Decimal(v as i128)),
            ("day", Scalar::Int),
            ("u", |v| Scalar::UInt(3_000_000_000 + v as u64)),
        ];
        for (name, lit) in columns {
            let c = col(&leaves, name);
            assert!(
                rg.column(c).bloom_filter_offset().is_some(),
                "{name} has a filter"
            );
            for r in 0..rows as i64 {
                let p = eq(c, lit(2 * r));
                assert_eq!(
                    bloom_verdict(&p, &leaves, rg, &bytes).unwrap(),
                    p,
                    "{name} {r} present"
                );
            }
            let pruned = (0..rows as i64)
                .filter(|r| {
                    let p = eq(c, lit(2 * r + 1));
                    bloom_verdict(&p, &leaves, rg, &bytes).unwrap() == Predicate::False
                })
                .count();
            assert!(
                pruned > rows * 9 / 10,
                "{name}: only {pruned} of {rows} absent values pruned"
            );
            // IN: absent only if every value is absent.
            let absent: Vec<Scalar> = (0..rows as i64)
                .map(|r| lit(2 * r + 1))
                .filter(|v| {
                    bloom_verdict(&eq(c, v.clone()), &leaves, rg, &bytes).unwrap()
                        == Predicate::False
                })
                .take(3)
                .collect();
            let in_absent = Predicate::Leaf(Leaf {
                column: c,
                op: LeafOp::In {
                    values: absent.clone(),
                    negated: false,
                },
            });
            assert_eq!(
                bloom_verdict(&in_absent, &leaves, rg, &bytes).unwrap(),
                Predicate::False
            );
            let mut with_present = absent;
            with_present.push(lit(4));
            let in_present = Predicate::Leaf(Leaf {
                column: c,
                op: LeafOp::In {
                    values: with_present,
                    negated: false,
                },
            });
            assert_eq!(
                bloom_verdict(&in_present, &leaves, rg, &bytes).unwrap(),
                in_present
            );
        }
        // Unprobeable literals stay.
        let f = col(&leaves, "f64");
        let nan = eq(f, Scalar::Float(f64::NAN));
        assert!(matches!(
            bloom_verdict(&nan, &leaves, rg, &bytes).unwrap(),
            Predicate::Leaf(_)
        ));
        // Out-of-range literal for an INT32 column: absent without a probe.
        let i = col(&leaves, "i32");
        assert_eq!(
            bloom_verdict(&eq(i, Scalar::Int(1 << 40)), &leaves, rg, &bytes).unwrap(),
            Predicate::False
        );
        // Other leaves untouched; AND with an absent equality is pruned.
        let gt = Predicate::Leaf(Leaf {
            column: i,
            op: LeafOp::Cmp(CmpOp::Gt, Scalar::Int(3)),
        });
        assert_eq!(bloom_verdict(&gt, &leaves, rg, &bytes).unwrap(), gt);
        let and = Predicate::And(vec![gt.clone(), eq(i, Scalar::Int(1 << 40))]);
        assert_eq!(
            bloom_verdict(&and, &leaves, rg, &bytes).unwrap(),
            Predicate::False
        );
    }

    #[test]
    fn signed_zero_probes_both_patterns() {
        use arrow::array::Float64Array;
        use arrow::record_batch::RecordBatch;
        use std::sync::Arc;
        let batch = RecordBatch::try_from_iter([(
            "f",
            Arc::new(Float64Array::from(vec![-0.0, 1.0])) as arrow::array::ArrayRef,
        )])
        .unwrap();
        let mut out = Vec::new();
        let props = WriterProperties::builder()
            .set_bloom_filter_enabled(true)
            .build();
        let mut w =
            parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let bytes = bytes::Bytes::from(out);
        let (md, leaves) = open(&bytes);
        let p = eq(0, Scalar::Float(0.0));
        assert_eq!(
            bloom_verdict(&p, &leaves, md.row_group(0), &bytes).unwrap(),
            p
        );
    }

    #[test]
    fn no_filter_or_corrupt_filter_keeps() {
        let bytes = sample_file(50, WriterProperties::builder().build());
        let (md, leaves) = open(&bytes);
        let p = eq(0, Scalar::Int(1));
        assert_eq!(
            bloom_verdict(&p, &leaves, md.row_group(0), &bytes).unwrap(),
            p
        );

        let props = WriterProperties::builder()
            .set_bloom_filter_enabled(true)
            .build();
        let good = sample_file(50, props);
        let (md, leaves) = open(&good);
        let rg = md.row_group(0);
        let off = rg.column(0).bloom_filter_offset().unwrap() as usize;
        let mut bad = good.to_vec();
        for b in &mut bad[off..off + 8] {
            *b = 0xff;
        }
        let bad = bytes::Bytes::from(bad);
        let out = bloom_check(&p, &leaves, rg, &bad);
        assert_eq!(out.predicate, p);
        assert_eq!(out.errors.len(), 1, "{:?}", out.errors);
        assert_eq!(bloom_verdict(&p, &leaves, rg, &bad).unwrap(), p);
    }
}
