//! Bloom filter planning: which columns get a split-block Bloom filter (SBBF), at what false
//! positive probability (fpp), and how large it must be.
//!
//! Sizing follows the parquet crate's writer, which we write through: `bits = -8·ndv /
//! ln(1 − fpp^(1/8))` (the Arrow / parquet-mr formula; note the unit: *bits*, divided by 8 for
//! the byte count — the thesis of paper 002 passed the bit count as bytes and made every filter
//! 8x too large), rounded up to a power of two between 32 bytes and 128 MiB. The power of two is
//! not ours to drop: Arrow C++, Velox and ClickHouse reject any other bitset length
//! ("Given length of bitset is illegal"). The writer then folds each row group's filter to the
//! smallest power of two whose estimated fpp still meets the target, so a row group with fewer
//! distinct values than the maximum gets a smaller filter.
//!
//! `ndv` is *measured*: the number of distinct non-null values of the column in each output row
//! group, counted exactly up to 64-bit hash collisions (a few in 10^8 at a million values) on
//! Arrow's row encoding, which maps equal values — and only equal values — to equal bytes, as the
//! plain encoding the filter hashes does (`-0.0` and `0.0` are distinct there, as in the filter).
//! Writer properties are per file, so the filter is sized for the largest row group count.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};

use arrow::array::{Array, ArrayRef};
use arrow::datatypes::{DataType, Field};
use arrow::row::{OwnedRow, RowConverter, SortField};
use serde::Serialize;

use crate::error::{Error, Result};

/// Default target false-positive probability (the spec's recommendation).
pub(crate) const DEFAULT_FPP: f64 = 0.01;

/// A Bloom filter request from the command line: `col`, `col:fpp`, `auto` or `auto:fpp`.
#[derive(Debug, Clone, PartialEq)]
pub enum BloomRequest {
    /// A filter on one column, whatever its data.
    Column {
        /// A top-level column of the inputs.
        name: String,
        /// Target false-positive probability, in (0, 1).
        fpp: f64,
    },
    /// A filter on each column not named by a `Column` request whose measured data favours
    /// one: many distinct values, not clustered, not the sort key (otherwise its dictionary or
    /// page min/max already prune).
    Auto {
        /// Target false-positive probability of the filters chosen, in (0, 1).
        fpp: f64,
    },
}

impl BloomRequest {
    /// Parses `col[:fpp]` or `auto[:fpp]`; the fpp must lie strictly between 0 and 1.
    pub fn parse(text: &str) -> Result<BloomRequest> {
        let (name, fpp) = match text.rsplit_once(':') {
            Some((name, f)) => {
                let fpp: f64 = f.trim().parse().map_err(|_| {
                    Error::invalid(format!(
                        "Bloom filter '{text}': '{f}' is not a false-positive probability"
                    ))
                })?;
                (name.trim(), fpp)
            }
            None => (text.trim(), DEFAULT_FPP),
        };
        check_fpp(fpp)
            .map_err(|e| Error::invalid(format!("Bloom filter '{text}': {}", e.message)))?;
        if name.is_empty() {
            return Err(Error::invalid(format!(
                "Bloom filter '{text}': no column name"
            )));
        }
        Ok(if name.eq_ignore_ascii_case("auto") {
            BloomRequest::Auto { fpp }
        } else {
            BloomRequest::Column {
                name: name.to_string(),
                fpp,
            }
        })
    }
}

/// A false-positive probability is usable if it lies strictly between 0 and 1.
pub(crate) fn check_fpp(fpp: f64) -> Result<()> {
    if fpp > 0.0 && fpp < 1.0 {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "false-positive probability {fpp} is impossible: it must lie strictly between 0 and 1"
        )))
    }
}

/// Smallest and largest bitset the writer produces.
#[cfg(test)]
const MIN_BYTES: usize = 32;
#[cfg(test)]
const MAX_BYTES: usize = 128 * 1024 * 1024;

/// Bytes of bitset the sizing formula asks for `ndv` distinct values at `fpp` (before rounding).
pub fn theoretical_bytes(ndv: u64, fpp: f64) -> f64 {
    let bits = -8.0 * ndv as f64 / (1.0 - fpp.powf(1.0 / 8.0)).ln();
    bits / 8.0
}

/// Bytes of bitset the parquet writer allocates: the theoretical size rounded up to a power of
/// two, clamped to [32 B, 128 MiB].
#[cfg(test)]
pub(crate) fn allocated_bytes(ndv: u64, fpp: f64) -> usize {
    let bytes = theoretical_bytes(ndv, fpp) as usize; // the writer truncates, then rounds up
    bytes.clamp(MIN_BYTES, MAX_BYTES).next_power_of_two()
}

/// Expected false-positive probability of an SBBF of `bytes` holding `ndv` distinct values.
///
/// Each value sets one bit in each of the 8 words of one 256-bit block; the block is uniform, so
/// block loads are Poisson(λ = ndv / blocks) and a probe of an absent value hits a block with j
/// values with probability `(1 − (31/32)^j)^8`. This is higher than the `fill^8` estimate behind
/// the sizing formula, because loaded blocks are fuller than average.
pub(crate) fn expected_fpp(ndv: u64, bytes: usize) -> f64 {
    let blocks = (bytes / 32).max(1) as f64;
    let lambda = ndv as f64 / blocks;
    if lambda == 0.0 {
        return 0.0;
    }
    let hi = (lambda + 12.0 * lambda.sqrt() + 30.0).ceil() as u64;
    let lo = (lambda - 12.0 * lambda.sqrt()).floor().max(0.0) as u64;
    // Poisson pmf in log space (λ can be large).
    let ln_lambda = lambda.ln();
    let mut total = 0.0;
    let mut ln_fact = (1..=lo).map(|k| (k as f64).ln()).sum::<f64>();
    for j in lo..=hi {
        if j > lo {
            ln_fact += (j as f64).ln();
        }
        let pmf = (j as f64 * ln_lambda - lambda - ln_fact).exp();
        total += pmf * (1.0 - (31.0f64 / 32.0).powi(j as i32)).powi(8);
    }
    total.min(1.0)
}

/// Whether a column can carry a useful Bloom filter at all: a flat (non-nested) column of a type
/// with more than two values.
pub(crate) fn filterable(field: &Field) -> std::result::Result<(), String> {
    let dt = match field.data_type() {
        DataType::Dictionary(_, v) => v.as_ref(),
        dt => dt,
    };
    match dt {
        DataType::Boolean => Err("a boolean has two values; statistics already prune it".into()),
        DataType::Null => Err("the column is always null".into()),
        dt if dt.is_nested() => Err(format!("nested type {dt} is not supported")),
        DataType::Float16 | DataType::Interval(_) => {
            Err(format!("tamis cannot probe filters of type {dt}"))
        }
        _ => Ok(()),
    }
}

/// Types where an equality lookup is a natural query (`auto` only): integers, strings, binary,
/// decimals, dates and times — not floating point, whose equality is fragile.
fn equality_type(field: &Field) -> bool {
    let dt = match field.data_type() {
        DataType::Dictionary(_, v) => v.as_ref(),
        dt => dt,
    };
    dt.is_integer()
        || matches!(
            dt,
            DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Utf8View
                | DataType::Binary
                | DataType::LargeBinary
                | DataType::BinaryView
                | DataType::FixedSizeBinary(_)
                | DataType::Decimal32(_, _)
                | DataType::Decimal64(_, _)
                | DataType::Decimal128(_, _)
                | DataType::Decimal256(_, _)
                | DataType::Date32
                | DataType::Date64
                | DataType::Timestamp(_, _)
        )
}

/// What one pass over the output order measured about a column, row group by row group.
#[derive(Debug, Clone, Default)]
pub(crate) struct ColumnProfile {
    /// Distinct non-null values per row group.
    pub ndv: Vec<u64>,
    /// Rows per row group.
    pub rows: Vec<u64>,
    /// Mean over pages of the fraction of the row group's pages whose [min, max] overlaps the
    /// page's (1/pages for sorted data, near 1 for random data): what min/max pruning leaves.
    pub page_overlap: Vec<f64>,
}

impl ColumnProfile {
    pub(crate) fn max_ndv(&self) -> u64 {
        self.ndv.iter().copied().max().unwrap_or(0)
    }
}

/// Measures [`ColumnProfile`]s of some columns over a stream of batches cut into row groups.
pub(crate) struct Profiler {
    columns: Vec<ColumnMeter>,
    rows_per_group: usize,
    rows_per_page: usize,
    in_group: usize,
}

struct ColumnMeter {
    index: usize,
    converter: RowConverter,
    hasher: std::collections::hash_map::RandomState,
    seen: HashSet<u64>,
    page_min: Option<OwnedRow>,
    page_max: Option<OwnedRow>,
    pages: Vec<(OwnedRow, OwnedRow)>,
    profile: ColumnProfile,
}

impl Profiler {
    /// Profiles the columns at `indices` of `fields`.
    pub(crate) fn new(
        fields: &[&Field],
        indices: &[usize],
        rows_per_group: usize,
        rows_per_page: usize,
    ) -> Result<Profiler> {
        let columns = indices
            .iter()
            .zip(fields)
            .map(|(&index, f)| {
                Ok(ColumnMeter {
                    index,
                    converter: RowConverter::new(vec![SortField::new(f.data_type().clone())])?,
                    hasher: Default::default(),
                    seen: HashSet::new(),
                    page_min: None,
                    page_max: None,
                    pages: Vec::new(),
                    profile: ColumnProfile::default(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Profiler {
            columns,
            rows_per_group: rows_per_group.max(1),
            rows_per_page: rows_per_page.max(1),
            in_group: 0,
        })
    }

    /// Feeds the next rows of the output, in output order.
    pub(crate) fn push(&mut self, columns: &[ArrayRef]) -> Result<()> {
        let len = columns.first().map_or(0, |c| c.len());
        let mut offset = 0;
        while offset < len {
            let take = (self.rows_per_group - self.in_group).min(len - offset);
            for meter in &mut self.columns {
                let array = columns[meter.index].slice(offset, take);
                meter.push(&array, self.in_group, self.rows_per_page)?;
            }
            self.in_group += take;
            offset += take;
            if self.in_group == self.rows_per_group {
                self.finish_group();
            }
        }
        Ok(())
    }

    fn finish_group(&mut self) {
        if self.in_group == 0 {
            return;
        }
        for meter in &mut self.columns {
            meter.finish_group(self.in_group as u64);
        }
        self.in_group = 0;
    }

    /// The profiles, in the order of the indices given to [`Profiler::new`].
    pub(crate) fn finish(mut self) -> Vec<ColumnProfile> {
        self.finish_group();
        self.columns.into_iter().map(|m| m.profile).collect()
    }
}

impl ColumnMeter {
    fn push(&mut self, array: &ArrayRef, start_row: usize, rows_per_page: usize) -> Result<()> {
        let rows = self
            .converter
            .convert_columns(std::slice::from_ref(array))?;
        for i in 0..array.len() {
            if (start_row + i).is_multiple_of(rows_per_page) {
                self.close_page();
            }
            if array.is_null(i) {
                continue;
            }
            let row = rows.row(i);
            let mut h = self.hasher.build_hasher();
            h.write(row.as_ref());
            self.seen.insert(h.finish());
            if self.page_min.as_ref().is_none_or(|m| row < m.row()) {
                self.page_min = Some(row.owned());
            }
            if self.page_max.as_ref().is_none_or(|m| row > m.row()) {
                self.page_max = Some(row.owned());
            }
        }
        Ok(())
    }

    fn close_page(&mut self) {
        if let (Some(lo), Some(hi)) = (self.page_min.take(), self.page_max.take()) {
            self.pages.push((lo, hi));
        }
    }

    fn finish_group(&mut self, rows: u64) {
        self.close_page();
        let pages = std::mem::take(&mut self.pages);
        let overlap = if pages.is_empty() {
            0.0
        } else {
            let n = pages.len() as f64;
            pages
                .iter()
                .map(|(lo, hi)| {
                    pages.iter().filter(|(l2, h2)| l2 <= hi && lo <= h2).count() as f64 / n
                })
                .sum::<f64>()
                / n
        };
        self.profile.ndv.push(self.seen.len() as u64);
        self.profile.rows.push(rows);
        self.profile.page_overlap.push(overlap);
        self.seen.clear();
    }
}

/// A column with its final decision: filter (at which fpp) or not, and why.
#[derive(Debug, Clone, Serialize)]
pub struct BloomChoice {
    /// The top-level column.
    pub column: String,
    /// The fpp of the filter to write, or `None` when no filter is written.
    pub fpp: Option<f64>,
    /// Why, in words (`requested`, or what `auto` measured).
    pub reason: String,
}

/// Below this many distinct values per row group a chunk's dictionary (which tamis prunes with)
/// is small and exact; a filter adds little.
pub(crate) const AUTO_MIN_NDV: u64 = 1024;
/// Distinct values per row per row group above which a column counts as high-cardinality.
pub(crate) const AUTO_MIN_NDV_RATIO: f64 = 0.05;
/// Page overlap below which the page index already prunes equality lookups to a few pages.
pub(crate) const AUTO_MAX_PAGE_OVERLAP: f64 = 0.1;

/// The `auto` decision for one column from its profile.
pub(crate) fn auto_choice(
    field: &Field,
    profile: &ColumnProfile,
    sort_key: bool,
    fpp: f64,
) -> BloomChoice {
    let column = field.name().clone();
    let no = |reason: String| BloomChoice {
        column: column.clone(),
        fpp: None,
        reason,
    };
    if let Err(why) = filterable(field) {
        return no(why);
    }
    if !equality_type(field) {
        return no(format!(
            "{} is not a type usually looked up by equality",
            field.data_type()
        ));
    }
    if sort_key {
        return no("sorted by it: page min/max already prune lookups".into());
    }
    let groups = profile.ndv.len().max(1) as f64;
    let ratio = profile
        .ndv
        .iter()
        .zip(&profile.rows)
        .map(|(&n, &r)| n as f64 / r.max(1) as f64)
        .sum::<f64>()
        / groups;
    let overlap = profile.page_overlap.iter().sum::<f64>() / groups;
    let ndv = profile.max_ndv();
    if ndv < AUTO_MIN_NDV {
        return no(format!(
            "at most {ndv} distinct values per row group: the dictionary already prunes"
        ));
    }
    if ratio < AUTO_MIN_NDV_RATIO {
        return no(format!(
            "low cardinality ({:.1}% distinct per row group)",
            ratio * 100.0
        ));
    }
    if overlap <= AUTO_MAX_PAGE_OVERLAP {
        return no(format!(
            "clustered: a value's range overlaps {:.1}% of pages, min/max already prune",
            overlap * 100.0
        ));
    }
    BloomChoice {
        column,
        fpp: Some(fpp),
        reason: format!(
            "high cardinality ({:.0}% distinct, up to {ndv} per row group) and unclustered \
             (ranges overlap {:.0}% of pages)",
            ratio * 100.0,
            overlap * 100.0
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float64Array, Int64Array, StringArray};
    use std::sync::Arc;

    #[test]
    fn parse_requests() {
        assert_eq!(
            BloomRequest::parse("a").unwrap(),
            BloomRequest::Column {
                name: "a".into(),
                fpp: DEFAULT_FPP
            }
        );
        assert_eq!(
            BloomRequest::parse("a:0.001").unwrap(),
            BloomRequest::Column {
                name: "a".into(),
                fpp: 0.001
            }
        );
        assert_eq!(
            BloomRequest::parse("auto:0.1").unwrap(),
            BloomRequest::Auto { fpp: 0.1 }
        );
        for bad in ["a:0", "a:1", "a:1.5", "a:-0.1", "a:x", ":0.1", "a:NaN"] {
            let e = BloomRequest::parse(bad).unwrap_err();
            assert!(e.to_string().contains(bad), "{e}");
        }
    }

    #[test]
    fn sizing_is_in_bits_then_bytes() {
        // 1M values at 0.1%: 14.6 bits each (not bytes), i.e. 1.83 MB, rounded up to 2 MiB.
        let t = theoretical_bytes(1_000_000, 0.001);
        assert!((t / 1e6 - 1.826).abs() < 0.01, "{t}");
        assert_eq!(allocated_bytes(1_000_000, 0.001), 2 << 20);
        assert_eq!(allocated_bytes(0, 0.5), 32);
        // Same numbers as the parquet crate's own constructor.
        for (n, p) in [
            (1u64, 0.5),
            (1000, 0.01),
            (123_456, 0.001),
            (10_000_000, 0.2),
        ] {
            let f = parquet::bloom_filter::Sbbf::new_with_ndv_fpp(n, p).unwrap();
            assert_eq!(f.num_blocks() * 32, allocated_bytes(n, p), "{n} {p}");
        }
    }

    #[test]
    fn expected_fpp_matches_the_notes() {
        // Reading notes 002, §1.3: exact formula sizing gives 0.21% at nominal 0.1%, 50.9% at 0.5.
        let bytes = |p: f64| theoretical_bytes(10_000_000, p) as usize;
        let at = |p: f64| expected_fpp(10_000_000, bytes(p));
        assert!((at(0.001) - 0.0021).abs() < 0.0003, "{}", at(0.001));
        assert!((at(0.5) - 0.509).abs() < 0.01, "{}", at(0.5));
        assert_eq!(expected_fpp(0, 32), 0.0);
    }

    #[test]
    fn profile_counts_distinct_and_overlap() {
        let fields = [
            Field::new("i", DataType::Int64, true),
            Field::new("f", DataType::Float64, false),
            Field::new("s", DataType::Utf8, false),
        ];
        let refs: Vec<&Field> = fields.iter().collect();
        let mut p = Profiler::new(&refs, &[0, 1, 2], 100, 10).unwrap();
        // 250 rows: row groups of 100, 100, 50; i sorted with nulls, f has ±0 and NaN.
        let i: Vec<Option<i64>> = (0..250).map(|r| (r % 7 != 0).then_some(r / 2)).collect();
        let f: Vec<f64> = (0..250)
            .map(|r| match r % 4 {
                0 => 0.0,
                1 => -0.0,
                2 => f64::NAN,
                _ => 1.5,
            })
            .collect();
        let s: Vec<String> = (0..250).map(|r| format!("{}", (r * 37) % 250)).collect();
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(i.clone())),
            Arc::new(Float64Array::from(f)),
            Arc::new(StringArray::from(s.clone())),
        ];
        // In two uneven pushes.
        p.push(&cols.iter().map(|c| c.slice(0, 33)).collect::<Vec<_>>())
            .unwrap();
        p.push(&cols.iter().map(|c| c.slice(33, 217)).collect::<Vec<_>>())
            .unwrap();
        let out = p.finish();
        for (g, range) in [(0, 0..100), (1, 100..200), (2, 200..250)] {
            let distinct_i: HashSet<i64> = i[range.clone()].iter().flatten().copied().collect();
            assert_eq!(out[0].ndv[g], distinct_i.len() as u64);
            assert_eq!(out[1].ndv[g], 4, "0.0, -0.0, NaN, 1.5");
            let distinct_s: HashSet<&String> = s[range.clone()].iter().collect();
            assert_eq!(out[2].ndv[g], distinct_s.len() as u64);
            assert_eq!(out[0].rows[g], range.len() as u64);
        }
        // Sorted: each page overlaps itself and at most its neighbours (shared boundary values).
        assert!(out[0].page_overlap[0] <= 0.3, "{:?}", out[0].page_overlap);
        // Scattered strings: pages overlap nearly all others.
        assert!(out[2].page_overlap[0] > 0.8, "{:?}", out[2].page_overlap);
    }
}
