//! Filter sequences and the scan-wide side of ordering them (paper 001 §4.4).
//!
//! A *filter* is one step of a sequence the scan evaluates on the rows still alive: the leaves of
//! an AND on one column (evaluated in one pass), a comparison between columns, or a nested
//! AND / OR. The children of an AND form a sequence; so do the children of an OR, evaluated
//! through De Morgan with the negate flag (`a ∨ b = ¬(¬a ∧ ¬b)`: each child keeps the rows where
//! it is *not* true).
//!
//! Each sequence is ordered by the cost model ([`super::cost`]) from the row group's estimates
//! ([`super::estimate`]), corrected at run time: the [`Planner`] measures each filter's
//! selectivity (rows in, rows passing) and later row groups order by the measured value.
//! Filters are identified by their content (a hash of their leaves), since pruning rewrites the
//! predicate differently in each row group.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::str::FromStr;
use std::sync::{Mutex, MutexGuard};

use crate::column::adapt::{Adaptive, Evaluation};
use crate::error::{Error, Result};
use crate::expr::{Leaf, Predicate};
use crate::metrics::FilterStep;

use super::cost::{greedy_order, FilterCost};
use super::estimate::Estimates;

/// How the scan orders the filters of each AND (and the children of each OR).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FilterOrder {
    /// The cost model's order, from estimated then measured selectivities.
    #[default]
    Auto,
    /// The order of the WHERE text (leaves on one column are still evaluated together, at the
    /// position of the column's first leaf).
    AsWritten,
    /// A pseudo-random order drawn from the seed, per sequence. For tests: every order must give
    /// the same rows.
    Seeded(u64),
}

impl FromStr for FilterOrder {
    type Err = Error;

    /// `auto` or `written`.
    fn from_str(s: &str) -> Result<FilterOrder> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(FilterOrder::Auto),
            "written" | "as-written" | "as_written" => Ok(FilterOrder::AsWritten),
            other => Err(Error::invalid(format!(
                "unknown filter order '{other}' (expected auto or written)"
            ))),
        }
    }
}

/// One step of a filter sequence.
#[derive(Debug, Clone)]
pub(crate) struct Filter<'p> {
    /// Stable identity across row groups (a hash of the content).
    pub key: u64,
    pub kind: FilterKind<'p>,
}

#[derive(Debug, Clone)]
pub(crate) enum FilterKind<'p> {
    /// Leaves on one column, evaluated together in one pass.
    Column {
        column: usize,
        leaves: Vec<&'p Leaf>,
    },
    /// A nested AND / OR.
    Node(&'p Predicate),
}

impl<'p> Filter<'p> {
    fn column(column: usize, leaves: Vec<&'p Leaf>) -> Filter<'p> {
        let mut h = DefaultHasher::new();
        (0u8, column).hash(&mut h);
        for l in &leaves {
            hash_debug(&mut h, &l.op);
        }
        Filter {
            key: h.finish(),
            kind: FilterKind::Column { column, leaves },
        }
    }

    fn node(p: &'p Predicate) -> Filter<'p> {
        match p {
            Predicate::Leaf(l) => Filter::column(l.column, vec![l]),
            _ => {
                let mut h = DefaultHasher::new();
                1u8.hash(&mut h);
                hash_debug(&mut h, p);
                Filter {
                    key: h.finish(),
                    kind: FilterKind::Node(p),
                }
            }
        }
    }

    /// The filter as a predicate (for display).
    pub(crate) fn predicate(&self) -> Predicate {
        match &self.kind {
            FilterKind::Column { leaves, .. } if leaves.len() == 1 => {
                Predicate::Leaf(leaves[0].clone())
            }
            FilterKind::Column { leaves, .. } => Predicate::And(
                leaves
                    .iter()
                    .map(|l| Predicate::Leaf((*l).clone()))
                    .collect(),
            ),
            FilterKind::Node(p) => (*p).clone(),
        }
    }

    pub(crate) fn columns(&self) -> Vec<usize> {
        match &self.kind {
            FilterKind::Column { column, .. } => vec![*column],
            FilterKind::Node(p) => p.columns(),
        }
    }
}

/// Hashes a value's `Debug` text without building the string (NaN literals hash alike).
fn hash_debug(h: &mut DefaultHasher, v: &impl std::fmt::Debug) {
    struct W<'a>(&'a mut DefaultHasher);
    impl std::fmt::Write for W<'_> {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.write(s.as_bytes());
            Ok(())
        }
    }
    let _ = std::fmt::write(&mut W(h), format_args!("{v:?}"));
}

/// The filters of an AND's children, in written order: leaves grouped by column (at the
/// position of the column's first leaf), every other child one filter.
pub(crate) fn and_filters(children: &[Predicate]) -> Vec<Filter<'_>> {
    let mut groups: Vec<(usize, Vec<&Leaf>)> = Vec::new();
    let mut slots: Vec<std::result::Result<usize, &Predicate>> = Vec::new();
    for c in children {
        match c {
            Predicate::Leaf(l) => match groups.iter_mut().find(|(col, _)| *col == l.column) {
                Some((_, g)) => g.push(l),
                None => {
                    slots.push(Ok(groups.len()));
                    groups.push((l.column, vec![l]));
                }
            },
            other => slots.push(Err(other)),
        }
    }
    let mut groups: Vec<Option<(usize, Vec<&Leaf>)>> = groups.into_iter().map(Some).collect();
    slots
        .into_iter()
        .map(|s| match s {
            Ok(g) => {
                let (column, leaves) = groups[g].take().expect("each group has one slot");
                Filter::column(column, leaves)
            }
            Err(p) => Filter::node(p),
        })
        .collect()
}

/// The filters of an OR's children: one each (they are evaluated negated, so leaves on one
/// column cannot share a pass).
pub(crate) fn or_filters(children: &[Predicate]) -> Vec<Filter<'_>> {
    children.iter().map(Filter::node).collect()
}

/// Rows evaluated by a filter and rows passing it, summed over the row groups so far.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    rows_in: u64,
    rows_passed: u64,
}

/// The scan-wide side of filter ordering, shared by the row-group tasks: the order mode, the
/// selectivities measured so far, and the order chosen for the first row group (for explain).
#[derive(Debug, Default)]
pub(crate) struct Planner {
    mode: FilterOrder,
    measured: Mutex<HashMap<u64, Counts>>,
    /// The lowest ordinal's report.
    first: Mutex<Option<Report>>,
    /// Per filter, the measured page costs of whole vs selected evaluation (never slower).
    pub adaptive: Adaptive,
}

/// A row group's ordinal in file order and its top-level sequence (filter key, report line).
type Report = (usize, Vec<(u64, FilterStep)>);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking task is reported as an error; its counts are still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Planner {
    pub(crate) fn new(mode: FilterOrder) -> Planner {
        Planner {
            mode,
            ..Planner::default()
        }
    }

    /// The same planner with partly alive pages evaluated as `evaluation` says.
    pub(crate) fn with_evaluation(mut self, evaluation: Evaluation) -> Planner {
        self.adaptive = Adaptive::new(evaluation);
        self
    }

    /// The selectivity measured so far (rows passing / rows in), if the filter ran on any row.
    pub(crate) fn measured(&self, key: u64) -> Option<f64> {
        lock(&self.measured)
            .get(&key)
            .filter(|c| c.rows_in > 0)
            .map(|c| c.rows_passed as f64 / c.rows_in as f64)
    }

    /// Adds one evaluation: `rows_passed` of `rows_in` rows satisfied the filter (un-negated).
    pub(crate) fn record(&self, key: u64, rows_in: usize, rows_passed: usize) {
        let mut m = lock(&self.measured);
        let c = m.entry(key).or_default();
        c.rows_in += rows_in as u64;
        c.rows_passed += rows_passed as u64;
    }

    /// The evaluation order of a sequence (indices into `filters`); `negated` when each filter
    /// keeps the rows where it is not true (an OR's children), so it keeps `1 − s`.
    pub(crate) fn order(
        &self,
        filters: &[Filter<'_>],
        est: &mut Estimates<'_>,
        negated: bool,
    ) -> Vec<usize> {
        let n = filters.len();
        match self.mode {
            _ if n <= 1 => (0..n).collect(),
            FilterOrder::AsWritten => (0..n).collect(),
            FilterOrder::Seeded(seed) => {
                let mut order: Vec<usize> = (0..n).collect();
                order.sort_by_cached_key(|&i| {
                    let mut h = DefaultHasher::new();
                    (seed, filters[i].key, i).hash(&mut h);
                    h.finish()
                });
                order
            }
            FilterOrder::Auto => {
                let measured = |k| self.measured(k);
                let costs: Vec<FilterCost> = filters
                    .iter()
                    .map(|f| {
                        let s = est.selectivity(f, &measured);
                        FilterCost {
                            bits: est.bits(f) as f64,
                            selectivity: if negated { 1.0 - s } else { s },
                        }
                    })
                    .collect();
                greedy_order(&costs)
            }
        }
    }

    /// Whether the row group with this ordinal should report its order (none lower has).
    pub(crate) fn wants_report(&self, ordinal: usize) -> bool {
        lock(&self.first).as_ref().is_none_or(|(o, _)| ordinal < *o)
    }

    /// Keeps `steps` as the reported order if no lower ordinal reported one.
    pub(crate) fn offer_report(&self, ordinal: usize, steps: Vec<(u64, FilterStep)>) {
        let mut first = lock(&self.first);
        if first.as_ref().is_none_or(|(o, _)| ordinal < *o) {
            *first = Some((ordinal, steps));
        }
    }

    /// The order chosen for the first row group that evaluated filters, with each filter's
    /// selectivity measured over the whole scan so far.
    pub(crate) fn report(&self) -> Vec<FilterStep> {
        let first = lock(&self.first).clone();
        first
            .map(|(_, steps)| {
                steps
                    .into_iter()
                    .map(|(key, mut step)| {
                        step.measured_selectivity = self.measured(key);
                        step
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Forgets the reported order (tests look at the order of each row group).
    #[cfg(test)]
    pub(crate) fn take_report(&self) -> Vec<FilterStep> {
        let r = self.report();
        *lock(&self.first) = None;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_order_parses() {
        assert_eq!("auto".parse::<FilterOrder>().unwrap(), FilterOrder::Auto);
        assert_eq!(
            " Written".parse::<FilterOrder>().unwrap(),
            FilterOrder::AsWritten
        );
        let e = "fast".parse::<FilterOrder>().unwrap_err();
        assert!(e.to_string().contains("auto or written"), "{e}");
    }

    use std::sync::Arc;

    use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::{EnabledStatistics, WriterProperties};
    use parquet::schema::types::ColumnPath;

    use crate::dataset::FileOutput;
    use crate::file::OpenedFile;
    use crate::metrics::MetricsCollector;
    use crate::scan::row_group::{scan_row_group, RowGroupJob};
    use crate::Scan;

    fn write(path: &std::path::Path, columns: Vec<(&str, ArrayRef)>, props: WriterProperties) {
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let file = std::fs::File::create(path).unwrap();
        let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }

    fn steps(path: &std::path::Path, sql: &str) -> Vec<FilterStep> {
        let mut stream = Scan::open(path.to_str().unwrap())
            .unwrap()
            .filter(sql)
            .unwrap()
            .threads(1)
            .filter_order(FilterOrder::AsWritten)
            .batches()
            .unwrap();
        for b in &mut stream {
            b.unwrap();
        }
        stream.metrics().filter_order
    }

    /// Estimates from min/max (uniform), null counts, integer ranges, dictionaries; bit widths
    /// from dictionary sizes and physical types.
    #[test]
    fn estimates_from_statistics_and_dictionaries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("est.parquet");
        let n = 4000;
        let x = Int64Array::from_iter_values((0..n).map(|i| (i * 7919) % 1000));
        let d = Int64Array::from_iter_values((0..n).map(|i| (i * 7919) % 1000));
        let n_col = Int64Array::from_iter((0..n).map(|i| (i % 10 >= 3).then_some(i)));
        let s = StringArray::from_iter_values(
            (0..n).map(|i| ["a", "b", "c", "d", "e"][i as usize % 5]),
        );
        let props = WriterProperties::builder()
            .set_statistics_enabled(EnabledStatistics::Chunk)
            .set_column_dictionary_enabled(ColumnPath::from("x"), false)
            .set_column_dictionary_enabled(ColumnPath::from("n"), false)
            .build();
        write(
            &path,
            vec![
                ("x", Arc::new(x) as ArrayRef),
                ("d", Arc::new(d)),
                ("n", Arc::new(n_col)),
                ("s", Arc::new(s)),
            ],
            props,
        );
        let got = steps(
            &path,
            "x < 250 AND d < 250 AND n IS NULL AND s IN ('a', 'c') AND x <> 3 AND (x = 5 OR s = 'b')",
        );
        let names: Vec<&str> = got.iter().map(|s| s.filter.as_str()).collect();
        assert_eq!(
            names,
            [
                "x < 250 AND x <> 3",
                "d < 250",
                "n IS NULL",
                "s IN ('a', 'c')",
                "x = 5 OR s = 'b'"
            ]
        );
        let close = |a: f64, b: f64| (a - b).abs() < 1e-3;
        // x: PLAIN int64, min 0 max 999 → 250/999 · (1 − 1/1000).
        assert_eq!(got[0].bit_width, 64);
        assert!(
            close(got[0].estimated_selectivity, 250.0 / 999.0 * 0.999),
            "{got:?}"
        );
        // d: dictionary of 1000 entries, 250 match.
        assert_eq!(got[1].bit_width, 10);
        assert!(close(got[1].estimated_selectivity, 0.25), "{got:?}");
        // n: 30% nulls.
        assert!(close(got[2].estimated_selectivity, 0.3), "{got:?}");
        // s: 2 of 5 dictionary entries, 3-bit codes.
        assert_eq!(got[3].bit_width, 3);
        assert!(close(got[3].estimated_selectivity, 0.4), "{got:?}");
        // OR by independence: 1 − (1 − 1/1000)(1 − 1/5); bit widths add up.
        assert_eq!(got[4].bit_width, 64 + 3);
        assert!(
            close(got[4].estimated_selectivity, 1.0 - 0.999 * 0.8),
            "{got:?}"
        );
        // Everything ran on the first row group: measured values exist.
        assert!(
            close(got[0].measured_selectivity.unwrap(), 0.249),
            "{got:?}"
        );
    }

    /// A misleading estimate is corrected by the selectivity measured on the first row group.
    #[test]
    fn measured_selectivity_reorders_later_row_groups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("adapt.parquet");
        let n = 2000;
        // No statistics, no dictionary: `a < 10` is guessed 0.5 and `b = 7` 0.1, but b is
        // always 7 and a < 10 holds for 10 rows of the first row group.
        let props = WriterProperties::builder()
            .set_statistics_enabled(EnabledStatistics::None)
            .set_dictionary_enabled(false)
            .set_max_row_group_row_count(Some(1000))
            .build();
        write(
            &path,
            vec![
                (
                    "a",
                    Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
                ),
                (
                    "b",
                    Arc::new(Int64Array::from_iter_values((0..n).map(|_| 7))),
                ),
            ],
            props,
        );
        let file = OpenedFile::open(&path).unwrap();
        assert_eq!(file.metadata.num_row_groups(), 2);
        let predicate = crate::expr::parse_predicate("a < 10 AND b = 7", &file.leaves).unwrap();
        let schema = Arc::new(file.schema().project(&[0]).unwrap());
        let metrics = MetricsCollector::default();
        let reader = file.reader();
        let run = |planner: &Planner, rg: usize| {
            let job = RowGroupJob {
                file: &file,
                reader: &reader,
                needed_leaves: &[0],
                rg,
                next_rg: None,
                predicate: Some(&predicate),
                statistics: None,
                next_statistics: None,
                output: &FileOutput::read(vec![0]),
                schema: &schema,
                metrics: &metrics,
                planner,
                ordinal: rg,
                pruning: Default::default(),
                memory_limit: crate::budget::DEFAULT_MEMORY_LIMIT,
                range_rows: crate::scan::row_group::RANGE_ROWS,
                index_dir: None,
                broken_index: Default::default(),
                verify_index: false,
                first_row: 0,
                deleted: &[],
                rows: None,
            };
            let mut rows = 0;
            scan_row_group(&job, &mut |b| {
                rows += b.num_rows();
                true
            })
            .unwrap();
            let order: Vec<String> = planner
                .take_report()
                .into_iter()
                .map(|s| s.filter)
                .collect();
            (rows, order)
        };
        let auto = Planner::new(FilterOrder::Auto);
        assert_eq!(run(&auto, 0), (10, vec!["b = 7".into(), "a < 10".into()]));
        assert_eq!(
            auto.measured(
                and_filters(match &predicate {
                    Predicate::And(c) => c,
                    _ => unreachable!(),
                })[1]
                    .key
            ),
            Some(1.0)
        );
        assert_eq!(run(&auto, 1), (0, vec!["a < 10".into(), "b = 7".into()]));
        let written = Planner::new(FilterOrder::AsWritten);
        for rg in 0..2 {
            assert_eq!(run(&written, rg).1, ["a < 10", "b = 7"]);
        }
    }

    #[test]
    fn measurements_override_estimates() {
        let p = Planner::new(FilterOrder::Auto);
        assert_eq!(p.measured(7), None);
        p.record(7, 0, 0);
        assert_eq!(p.measured(7), None, "no rows in, nothing measured");
        p.record(7, 100, 10);
        p.record(7, 300, 90);
        assert_eq!(p.measured(7), Some(0.25));
    }
}
