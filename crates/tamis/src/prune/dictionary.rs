//! Row-group pruning with dictionaries.
//!
//! When every data page of a column chunk is dictionary-encoded, every non-null value of the
//! chunk is a dictionary entry, so evaluating a leaf once per entry decides it for the chunk:
//! no entry matches ⇒ no row matches; every entry matches and there are no nulls ⇒ every row
//! matches. A dictionary may hold entries no page uses; both conclusions stay sound (unused
//! entries only make "no entry matches" harder and "every entry matches" is still implied for the
//! used ones).

use std::collections::HashMap;
use std::sync::Arc;

use parquet::basic::{Encoding, PageType};
use parquet::file::metadata::ColumnChunkMetaData;

use crate::error::Result;
use crate::expr::eval::eval_dense;
use crate::expr::{Leaf, LeafOp, Predicate, Verdict};
use crate::schema::LeafColumn;
use crate::selection::Bitmap;
use crate::values::Values;

use super::level::{Level, LevelKind, Narrowed, RowGroupView};

fn is_dict(e: Encoding) -> bool {
    matches!(e, Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY)
}

/// Whether every data page of the chunk is provably dictionary-encoded.
///
/// * With page encoding statistics (full or, parquet-rs' default, reduced to a mask of data-page
///   encodings): every data page (v1 or v2) uses `PLAIN_DICTIONARY` / `RLE_DICTIONARY`, and there
///   is at least one data page.
/// * Otherwise from the chunk's encoding list: it is a subset of `{PLAIN_DICTIONARY,
///   RLE_DICTIONARY, RLE, BIT_PACKED}` (levels use RLE / BIT_PACKED) with a dictionary encoding
///   in it, and the chunk has a dictionary page offset. A `PLAIN` in the list is ambiguous (the
///   dictionary page of v2 writers, or a fallback data page), so it answers `false`.
pub(crate) fn chunk_is_all_dictionary(cc: &ColumnChunkMetaData) -> bool {
    if let Some(stats) = cc.page_encoding_stats() {
        let mut data_pages = 0;
        for s in stats {
            if matches!(s.page_type, PageType::DATA_PAGE | PageType::DATA_PAGE_V2) {
                if !is_dict(s.encoding) {
                    return false;
                }
                data_pages += 1;
            }
        }
        return data_pages > 0 || cc.num_values() == 0;
    }
    if let Some(mask) = cc.page_encoding_stats_mask() {
        let mut any = false;
        for e in mask.encodings() {
            if !is_dict(e) {
                return false;
            }
            any = true;
        }
        return any || cc.num_values() == 0;
    }
    let mut has_dict = false;
    for e in cc.encodings() {
        match e {
            Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY => has_dict = true,
            #[allow(deprecated)]
            Encoding::RLE | Encoding::BIT_PACKED => {}
            _ => return false,
        }
    }
    has_dict && cc.dictionary_page_offset().is_some()
}

/// The dictionary level: each filter column whose chunk is dictionary-encoded throughout has its
/// dictionary loaded (through `load`: the chunk's dictionary page, decoded) once the levels
/// before have left its conjuncts, and every leaf on it is evaluated once per entry.
pub(crate) struct Dictionaries<'a> {
    /// Filter columns whose chunks are dictionary-encoded throughout.
    pub(crate) columns: &'a [usize],
    /// Loads a column's dictionary (`None`: the chunk has none after all).
    pub(crate) load: &'a mut dyn FnMut(usize) -> Result<Option<Arc<Values>>>,
    /// The dictionaries loaded (the scan's estimates use them too).
    pub(crate) loaded: HashMap<usize, Arc<Values>>,
    /// Conjuncts every entry satisfies (they need no evaluation).
    pub(crate) all_matched: usize,
}

impl Level for Dictionaries<'_> {
    fn kind(&self) -> LevelKind {
        LevelKind::Dictionary
    }

    fn narrow(
        &mut self,
        rg: &RowGroupView<'_>,
        p: &Predicate,
        _rows: Option<&Bitmap>,
    ) -> Result<Narrowed> {
        let filtered = p.columns();
        for &c in self.columns {
            if filtered.contains(&c) {
                if let Some(d) = (self.load)(c)? {
                    self.loaded.insert(c, d);
                }
            }
        }
        if self.loaded.is_empty() {
            return Ok(Narrowed::to(p.clone()));
        }
        let dict_of = |c: usize| self.loaded.get(&c).map(|d| d.as_ref().clone());
        // A required column holds no nulls; otherwise trust the statistics' null count.
        let nulls = |c: usize| {
            if !rg.leaves[c].optional() {
                return Some(0);
            }
            (rg.metadata.column(c).statistics()).and_then(|s| s.null_count_opt())
        };
        let (p, all_matched) = dictionary_verdict(p, rg.leaves, &dict_of, &nulls)?;
        self.all_matched += all_matched;
        Ok(Narrowed::to(p))
    }
}

/// `pred` simplified with dictionaries: `dictionaries(column)` gives the decoded dictionary of a
/// column whose chunk is all dictionary-encoded (`None` otherwise), `null_counts(column)` its null
/// count if known. `IS [NOT] NULL` leaves are left alone (statistics decide those).
///
/// Returns the simplified predicate and how many leaves were resolved to `AllMatch` (conjuncts
/// that need no evaluation). Each dictionary is fetched and each leaf evaluated at most once.
pub(crate) fn dictionary_verdict(
    pred: &Predicate,
    leaves: &[LeafColumn],
    dictionaries: &dyn Fn(usize) -> Option<Values>,
    null_counts: &dyn Fn(usize) -> Option<u64>,
) -> Result<(Predicate, usize)> {
    let mut dicts: HashMap<usize, Option<Values>> = HashMap::new();
    let mut all_matched = 0;
    let mut error = None;
    let simplified = pred.simplify(&mut |leaf| {
        if error.is_some() || matches!(leaf.op, LeafOp::IsNull { .. }) {
            return Verdict::Unknown;
        }
        let Some(column) = leaves.get(leaf.column) else {
            return Verdict::Unknown;
        };
        if column.nested {
            return Verdict::Unknown;
        }
        let dict = dicts
            .entry(leaf.column)
            .or_insert_with(|| dictionaries(leaf.column));
        let Some(dict) = dict else {
            return Verdict::Unknown;
        };
        let matched = match matching_entries(&[leaf], column, dict) {
            Ok(bm) => bm.count_ones(),
            Err(e) => {
                error = Some(e.in_column(&column.path));
                return Verdict::Unknown;
            }
        };
        if matched == 0 {
            // NULLs satisfy no leaf but IS NULL.
            Verdict::NoneMatch
        } else if matched == dict.len() && null_counts(leaf.column) == Some(0) {
            all_matched += 1;
            Verdict::AllMatch
        } else {
            Verdict::Unknown
        }
    });
    match error {
        Some(e) => Err(e),
        None => Ok((simplified, all_matched)),
    }
}

/// The dictionary entries satisfying every leaf (a conjunction on `column`): bit i is set iff
/// entry i matches. Also used to estimate selectivities (`scan::order`).
pub(crate) fn matching_entries(
    leaves: &[&Leaf],
    column: &LeafColumn,
    dict: &Values,
) -> Result<Bitmap> {
    let mut acc = Bitmap::new_set(dict.len());
    for leaf in leaves {
        acc.and_inplace(&eval_dense(&leaf.op, column, dict)?);
    }
    Ok(acc)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use parquet::basic::EncodingMask;
    use parquet::file::metadata::PageEncodingStats;
    use parquet::file::properties::WriterProperties;
    use parquet::schema::parser::parse_message_type;
    use parquet::schema::types::SchemaDescriptor;

    use super::*;
    use crate::expr::{CmpOp, Leaf, LikePattern, Scalar};
    use crate::prune::test_util::{col, open, sample_file};
    use crate::schema::leaf_columns;
    use crate::values::ByteArrays;

    fn leaves() -> Vec<LeafColumn> {
        let t = parse_message_type("message m { optional binary s (STRING); optional int32 i; }")
            .unwrap();
        leaf_columns(&SchemaDescriptor::new(Arc::new(t)))
    }

    fn chunk(
        f: impl FnOnce(
            parquet::file::metadata::ColumnChunkMetaDataBuilder,
        ) -> parquet::file::metadata::ColumnChunkMetaDataBuilder,
    ) -> ColumnChunkMetaData {
        let l = leaves();
        f(ColumnChunkMetaData::builder(l[0].descr.clone()).set_num_values(10))
            .build()
            .unwrap()
    }

    fn pes(page_type: PageType, encoding: Encoding) -> PageEncodingStats {
        PageEncodingStats {
            page_type,
            encoding,
            count: 1,
        }
    }

    #[test]
    #[allow(deprecated)]
    fn all_dictionary_detection() {
        use Encoding::*;
        use PageType::*;
        let full = |s: Vec<PageEncodingStats>| chunk(|b| b.set_page_encoding_stats(s));
        assert!(chunk_is_all_dictionary(&full(vec![
            pes(DICTIONARY_PAGE, PLAIN),
            pes(DATA_PAGE, RLE_DICTIONARY),
            pes(DATA_PAGE_V2, PLAIN_DICTIONARY),
        ])));
        assert!(!chunk_is_all_dictionary(&full(vec![
            pes(DICTIONARY_PAGE, PLAIN),
            pes(DATA_PAGE, RLE_DICTIONARY),
            pes(DATA_PAGE, PLAIN),
        ])));
        assert!(
            !chunk_is_all_dictionary(&full(vec![pes(DICTIONARY_PAGE, PLAIN)])),
            "no data page"
        );

        let mask = |e: &[Encoding]| {
            chunk(|b| b.set_page_encoding_stats_mask(EncodingMask::new_from_encodings(e.iter())))
        };
        assert!(chunk_is_all_dictionary(&mask(&[RLE_DICTIONARY])));
        assert!(!chunk_is_all_dictionary(&mask(&[RLE_DICTIONARY, PLAIN])));
        assert!(!chunk_is_all_dictionary(&mask(&[])));

        let list = |e: Vec<Encoding>, dict: Option<i64>| {
            chunk(|b| b.set_encodings(e).set_dictionary_page_offset(dict))
        };
        assert!(chunk_is_all_dictionary(&list(
            vec![PLAIN_DICTIONARY, RLE, BIT_PACKED],
            Some(4)
        )));
        assert!(chunk_is_all_dictionary(&list(
            vec![RLE_DICTIONARY, RLE],
            Some(4)
        )));
        assert!(!chunk_is_all_dictionary(&list(
            vec![PLAIN_DICTIONARY, RLE],
            None
        )));
        assert!(
            !chunk_is_all_dictionary(&list(vec![PLAIN, RLE, RLE_DICTIONARY], Some(4))),
            "PLAIN is ambiguous"
        );
        assert!(!chunk_is_all_dictionary(&list(vec![RLE], Some(4))));
        assert!(!chunk_is_all_dictionary(&list(
            vec![RLE_DICTIONARY, DELTA_BINARY_PACKED],
            Some(4)
        )));
    }

    #[test]
    fn real_files() {
        let bytes = sample_file(100, WriterProperties::builder().build());
        let (md, leaves) = open(&bytes);
        assert!(chunk_is_all_dictionary(
            md.row_group(0).column(col(&leaves, "s"))
        ));
        let plain = WriterProperties::builder()
            .set_dictionary_enabled(false)
            .build();
        let bytes = sample_file(100, plain);
        let (md, leaves) = open(&bytes);
        assert!(!chunk_is_all_dictionary(
            md.row_group(0).column(col(&leaves, "s"))
        ));
    }

    #[test]
    fn dictionary_verdicts() {
        let leaves = leaves();
        let dict = |c: usize| {
            (c == 0).then(|| {
                let mut b = ByteArrays::new();
                b.push(b"apple");
                b.push(b"avocado");
                Values::Bytes(b)
            })
        };
        let s = |op| Predicate::Leaf(Leaf { column: 0, op });
        let eq = |v: &str| s(LeafOp::Cmp(CmpOp::Eq, Scalar::Bytes(v.as_bytes().to_vec())));
        let like = |p: &str| {
            s(LeafOp::Like {
                pattern: LikePattern::new(p, None).unwrap(),
                negated: false,
            })
        };
        let i_gt = Predicate::Leaf(Leaf {
            column: 1,
            op: LeafOp::Cmp(CmpOp::Gt, Scalar::Int(1)),
        });
        let no_nulls = |_| Some(0);
        let nulls = |_| Some(3);
        let unknown = |_| None;

        assert_eq!(
            dictionary_verdict(&eq("banana"), &leaves, &dict, &no_nulls).unwrap(),
            (Predicate::False, 0)
        );
        assert_eq!(
            dictionary_verdict(&eq("banana"), &leaves, &dict, &nulls).unwrap(),
            (Predicate::False, 0)
        );
        assert_eq!(
            dictionary_verdict(&eq("apple"), &leaves, &dict, &no_nulls).unwrap(),
            (eq("apple"), 0)
        );
        assert_eq!(
            dictionary_verdict(&like("a%"), &leaves, &dict, &no_nulls).unwrap(),
            (Predicate::True, 1)
        );
        assert_eq!(
            dictionary_verdict(&like("a%"), &leaves, &dict, &nulls).unwrap(),
            (like("a%"), 0)
        );
        assert_eq!(
            dictionary_verdict(&like("a%"), &leaves, &dict, &unknown).unwrap(),
            (like("a%"), 0)
        );
        // IS NULL is for statistics; columns without a dictionary stay.
        let is_null = s(LeafOp::IsNull { negated: false });
        assert_eq!(
            dictionary_verdict(&is_null, &leaves, &dict, &no_nulls).unwrap(),
            (is_null.clone(), 0)
        );
        let and = Predicate::And(vec![like("a%"), i_gt.clone()]);
        assert_eq!(
            dictionary_verdict(&and, &leaves, &dict, &no_nulls).unwrap(),
            (i_gt.clone(), 1)
        );
        let and = Predicate::And(vec![i_gt.clone(), eq("kiwi")]);
        assert_eq!(
            dictionary_verdict(&and, &leaves, &dict, &no_nulls)
                .unwrap()
                .0,
            Predicate::False
        );
        let or = Predicate::Or(vec![i_gt.clone(), eq("kiwi")]);
        assert_eq!(
            dictionary_verdict(&or, &leaves, &dict, &no_nulls)
                .unwrap()
                .0,
            i_gt
        );
        // The dictionary is fetched once per column.
        let calls = std::cell::Cell::new(0);
        let counting = |c: usize| {
            calls.set(calls.get() + 1);
            dict(c)
        };
        let both = Predicate::Or(vec![eq("x"), eq("y"), like("b%")]);
        assert_eq!(
            dictionary_verdict(&both, &leaves, &counting, &no_nulls)
                .unwrap()
                .0,
            Predicate::False
        );
        assert_eq!(calls.get(), 1);
    }
}
