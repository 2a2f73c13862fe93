//! Page-level split-block Bloom filters (seed 002 §1.5): one filter per data page of a column
//! chunk, so an `=` / `IN` literal absent from a page's filter rules the page out — which a
//! column-level filter cannot do when the value occurs in every row group.
//!
//! Blob `tamis-page-bloom-v1`, one per (row group, column), little-endian:
//!
//! ```text
//! u32 pages, then per page: u64 first row, u32 bitset bytes; then the bitsets back to back
//! ```
//!
//! A page without non-null values has an empty bitset (nothing is present). Values are hashed
//! as Parquet's own filters hash them (xxHash64 of the plain encoding), so the literal probes of
//! `prune::bloom` apply unchanged.

// Row sets are vectors of ranges; one-range vectors are meant.
#![allow(clippy::single_range_in_vec_init)]

use std::collections::HashMap;
use std::ops::Range;

use parquet::bloom_filter::Sbbf;

use crate::error::{Error, Result};
use crate::expr::Predicate;
use crate::prune::bloom::{leaf_probes, Probe};
use crate::prune::page_index::{ranges_intersect, ranges_normalize, ranges_union};
use crate::schema::LeafColumn;

pub const BLOB_TYPE: &str = "tamis-page-bloom-v1";

/// The page filters of one column chunk.
#[derive(Debug, Clone)]
pub struct PageBlooms {
    /// First row of each page, ascending, the first 0.
    pub first_rows: Vec<u64>,
    pub filters: Vec<Option<Sbbf>>,
}

impl PageBlooms {
    pub fn encode(first_rows: &[u64], bitsets: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&(first_rows.len() as u32).to_le_bytes());
        for (first, bits) in first_rows.iter().zip(bitsets) {
            out.extend_from_slice(&first.to_le_bytes());
            out.extend_from_slice(&(bits.len() as u32).to_le_bytes());
        }
        for bits in bitsets {
            out.extend_from_slice(bits);
        }
        out
    }

    /// Decodes a blob for a chunk of `rows` rows; every length and row checked.
    pub fn decode(bytes: &[u8], rows: u64) -> Result<PageBlooms> {
        let bad = |what: &str| Error::corrupt(format!("page Bloom filter blob: {what}"));
        let u32_at = |i: usize| -> Result<u32> {
            let b = bytes.get(i..i + 4).ok_or_else(|| bad("truncated"))?;
            Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
        };
        let pages = u32_at(0)? as usize;
        let table = pages
            .checked_mul(12)
            .and_then(|t| t.checked_add(4))
            .filter(|&t| t <= bytes.len())
            .ok_or_else(|| bad("more pages than bytes"))?;
        let mut first_rows = Vec::with_capacity(pages);
        let mut filters = Vec::with_capacity(pages);
        let mut at = table;
        for p in 0..pages {
            let entry = 4 + 12 * p;
            let first = u64::from_le_bytes(bytes[entry..entry + 8].try_into().expect("8 bytes"));
            let len = u32_at(entry + 8)? as usize;
            let ordered = match first_rows.last() {
                None => first == 0,
                Some(&prev) => first > prev && first < rows,
            };
            if !ordered {
                return Err(bad("page first rows out of order"));
            }
            if !len.is_multiple_of(32) {
                return Err(bad("a bitset is not whole 32-byte blocks"));
            }
            let bits = at
                .checked_add(len)
                .and_then(|end| bytes.get(at..end))
                .ok_or_else(|| bad("a bitset runs past the blob"))?;
            at += len;
            first_rows.push(first);
            filters.push((len > 0).then(|| Sbbf::new(bits)));
        }
        if at != bytes.len() {
            return Err(bad("bytes after the last bitset"));
        }
        Ok(PageBlooms {
            first_rows,
            filters,
        })
    }

    /// Row ranges of the pages whose filter may hold one of `probes`.
    fn may_hold(&self, probes: &[Probe], rows: usize) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        for (p, filter) in self.filters.iter().enumerate() {
            let start = self.first_rows[p] as usize;
            let end = self.first_rows.get(p + 1).map_or(rows, |&r| r as usize);
            let present = filter.as_ref().is_some_and(|f| {
                probes.iter().any(|probe| match probe {
                    Probe::Absent => false,
                    Probe::Skip => true,
                    Probe::AnyOf(encodings) => encodings.iter().any(|e| f.check(&e[..])),
                })
            });
            if present {
                out.push(start..end.min(rows));
            }
        }
        ranges_normalize(out)
    }
}

/// Rows of a row group of `rows` rows that may match `pred` by the page filters of its
/// columns (`blooms`), or `None` when no leaf could use one. The result, pages-pruned count
/// aside, is what `page_ranges` returns for the page index.
pub fn page_ranges(
    pred: &Predicate,
    leaves: &[LeafColumn],
    rows: usize,
    blooms: &HashMap<usize, &PageBlooms>,
) -> Option<Vec<Range<usize>>> {
    let all = if rows > 0 { vec![0..rows] } else { Vec::new() };
    let mut used = false;
    let out = eval(pred, leaves, rows, blooms, &all, &mut used);
    used.then_some(out)
}

fn eval(
    pred: &Predicate,
    leaves: &[LeafColumn],
    rows: usize,
    blooms: &HashMap<usize, &PageBlooms>,
    all: &[Range<usize>],
    used: &mut bool,
) -> Vec<Range<usize>> {
    match pred {
        Predicate::True | Predicate::Compare(_) => all.to_vec(),
        Predicate::False => Vec::new(),
        Predicate::Leaf(leaf) => {
            let (Some(b), Some(column)) = (blooms.get(&leaf.column), leaves.get(leaf.column))
            else {
                return all.to_vec();
            };
            match leaf_probes(leaf, column) {
                Some(probes) => {
                    *used = true;
                    ranges_intersect(&b.may_hold(&probes, rows), all)
                }
                None => all.to_vec(),
            }
        }
        Predicate::And(children) => {
            let mut acc = all.to_vec();
            for c in children {
                if acc.is_empty() {
                    break;
                }
                acc = ranges_intersect(&acc, &eval(c, leaves, rows, blooms, all, used));
            }
            acc
        }
        Predicate::Or(children) => {
            let mut acc = Vec::new();
            for c in children {
                acc = ranges_union(&acc, &eval(c, leaves, rows, blooms, all, used));
            }
            acc
        }
    }
}

/// Whether a predicate has a leaf a page filter could decide (loads sidecars only then).
pub fn probes_anything(pred: &Predicate, leaves: &[LeafColumn]) -> bool {
    let mut any = false;
    pred.visit_leaves(&mut |leaf| {
        if let Some(column) = leaves.get(leaf.column) {
            any |= leaf_probes(leaf, column).is_some();
        }
    });
    any
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_round_trip_and_bad_blobs_are_errors() {
        let mut f = Sbbf::new_with_num_of_bytes(32);
        f.insert(&7i32);
        let mut bits = Vec::new();
        f.write_bitset(&mut bits).unwrap();
        let blob = PageBlooms::encode(&[0, 10], &[bits.clone(), Vec::new()]);
        let b = PageBlooms::decode(&blob, 20).unwrap();
        assert_eq!(b.first_rows, vec![0, 10]);
        assert!(b.filters[0].as_ref().unwrap().check(&7i32));
        assert!(b.filters[1].is_none());
        let probes = vec![Probe::AnyOf(vec![7i32.to_le_bytes().to_vec()])];
        assert_eq!(b.may_hold(&probes, 20), vec![0..10]);
        assert_eq!(b.may_hold(&[Probe::Absent], 20), Vec::<Range<usize>>::new());
        assert_eq!(b.may_hold(&[Probe::Skip], 20), vec![0..10]);
        for n in 0..blob.len() {
            assert!(PageBlooms::decode(&blob[..n], 20).is_err(), "{n}");
        }
        assert!(
            PageBlooms::decode(&blob, 10).is_err(),
            "a page past the rows"
        );
        let unordered = PageBlooms::encode(&[0, 0], &[bits.clone(), bits.clone()]);
        assert!(PageBlooms::decode(&unordered, 20).is_err());
        let ragged = PageBlooms::encode(&[0], &[bits[..31].to_vec()]);
        assert!(PageBlooms::decode(&ragged, 20).is_err());
        let mut huge = blob.clone();
        huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(PageBlooms::decode(&huge, 20).is_err());
    }
}
