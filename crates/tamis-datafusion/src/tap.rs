//! Join keys for build sides too large for DataFusion's key lists (paper 000, T14: building
//! the filter and delivering it to the scan).
//!
//! A hash join's dynamic filter carries the build side's keys as a list only up to
//! [`crate::sql::RUNTIME_FILTER_MAX_KEYS`]; above that it is a lookup into the join's hash
//! table, which a tamis scan cannot evaluate in place. TPC-H Q5, Q10 and Q21 join `lineitem`
//! with hundreds of thousands of filtered orders that way, and their `lineitem` scans then
//! decoded every row for the join to drop 85 % of them.
//!
//! A [`KeyTapExec`] sits on the build side's input and copies the join-key column of every
//! batch into a [`KeyTap`] as the join collects it. The probe side's tamis scan starts when the
//! join first asks it for rows — after the build — and, if the tap saw its whole input, probes a
//! Bloom filter of those keys ([`KeyFilter`]) like any runtime filter: once per dictionary
//! entry or per value, adaptive (switched off when it keeps most rows). A tap that did not see
//! all its input (a partitioned join whose other build partitions are still running, a stream
//! cut short) or that grew past [`TAP_MAX_ROWS`] gives no filter: the scan reads as without it.
//! The join still does the exact work, so results never depend on it.
//!
//! A join on several keys is tapped on one of them (a superset of what can match), and the
//! scan may lie below an aggregate grouped by that key (`rules::TapBuildKeys`): DataFusion's
//! own filter lists no single column's keys there, so such a tap filters however few keys
//! it holds.

use std::fmt;
use std::sync::{Arc, Mutex};

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, Int64Type};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::filter_pushdown::{FilterDescription, FilterPushdownPhase};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::StreamExt;
use tamis::expr::KeyFilter;

/// Build sides with more rows than this give no filter: copying and hashing their keys would
/// cost more than a probe side could save.
pub const TAP_MAX_ROWS: usize = 1 << 22;

/// Nor do string keys whose arrays hold more than this many bytes in all: the tap's copy is
/// memory outside DataFusion's pool.
pub const TAP_MAX_BYTES: usize = 64 << 20;

/// Whether a join key of this type can be tapped (the key types [`KeyFilter`] takes).
pub fn tappable(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::Date32
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
    )
}

/// The keys one build side produced, and the filter made from them.
#[derive(Default)]
pub struct KeyTap {
    state: Mutex<TapState>,
    /// Keys of one column of a join on several: the join's own filter lists none of them, so
    /// the tap gives its filter however few they are.
    one_of_several: bool,
}

#[derive(Default)]
struct TapState {
    ints: Vec<i64>,
    bytes: Vec<Vec<u8>>,
    /// The string key arrays' sizes, summed.
    byte_len: usize,
    /// Input partitions, once known (the first `execute`), and how many have ended.
    partitions: Option<usize>,
    ended: usize,
    /// Too many rows, or a batch of a type not taken: no filter.
    given_up: bool,
    filter: Option<Arc<KeyFilter>>,
}

impl fmt::Debug for KeyTap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f.debug_struct("KeyTap")
            .field("keys", &(s.ints.len() + s.bytes.len()))
            .field("ended", &s.ended)
            .finish()
    }
}

impl KeyTap {
    /// A tap on one key column of a join on several (see [`KeyTap::filter`]).
    pub fn one_of_several_keys() -> Self {
        KeyTap {
            one_of_several: true,
            ..KeyTap::default()
        }
    }

    /// The build side's keys as a filter, if the tap saw all of it and it has more keys than a
    /// key list would have carried (`more_than`), or it taps one key of several; made once,
    /// then shared.
    pub fn filter(&self, column: &str, more_than: usize) -> Option<Arc<KeyFilter>> {
        let mut s = self.state.lock().ok()?;
        if s.given_up || s.partitions != Some(s.ended) {
            return None;
        }
        if s.filter.is_none() {
            let label = format!("join keys on {column} (build side)");
            let f = if s.bytes.is_empty() {
                // Repeats and any order: the filter counts distinct keys itself.
                KeyFilter::from_ints(&s.ints, label)
            } else {
                s.bytes.sort_unstable();
                s.bytes.dedup();
                KeyFilter::from_bytes(s.bytes.iter().map(Vec::as_slice), label)
            };
            s.ints = Vec::new();
            s.bytes = Vec::new();
            s.filter = Some(Arc::new(f));
        }
        let f = s.filter.clone()?;
        (self.one_of_several || f.keys() > more_than).then_some(f)
    }

    fn expect(&self, partitions: usize) {
        if let Ok(mut s) = self.state.lock() {
            s.partitions.get_or_insert(partitions);
        }
    }

    fn end(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.ended += 1;
        }
    }

    /// Copies the non-null keys of `column` (integers widened as tamis widens them).
    fn take(&self, column: &ArrayRef) {
        let Ok(mut s) = self.state.lock() else {
            return;
        };
        if s.given_up {
            return;
        }
        let a = column.as_ref();
        let strings = matches!(
            a.data_type(),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        );
        let bytes = if strings {
            a.get_buffer_memory_size()
        } else {
            0
        };
        if s.ints.len() + s.bytes.len() + a.len() > TAP_MAX_ROWS
            || s.byte_len + bytes > TAP_MAX_BYTES
        {
            s.given_up = true;
            s.ints = Vec::new();
            s.bytes = Vec::new();
            return;
        }
        s.byte_len += bytes;
        // Strings of every offset kind as views (no copy of their bytes), integers and dates
        // as i64, the way tamis widens the column (`tappable` leaves out UInt64).
        let target = if strings {
            DataType::Utf8View
        } else {
            DataType::Int64
        };
        match arrow::compute::cast(a, &target) {
            Ok(k) if strings => {
                let v = k.as_string_view().iter().flatten();
                s.bytes.extend(v.map(|x| x.as_bytes().to_vec()));
            }
            Ok(k) => {
                let k = k.as_primitive::<Int64Type>();
                match k.null_count() {
                    0 => s.ints.extend_from_slice(k.values()),
                    _ => s.ints.extend(k.iter().flatten()),
                }
            }
            Err(_) => s.given_up = true,
        }
    }
}

/// Passes its input through unchanged, copying the join-key column into a [`KeyTap`].
#[derive(Debug)]
pub struct KeyTapExec {
    input: Arc<dyn ExecutionPlan>,
    key: usize,
    tap: Arc<KeyTap>,
}

impl KeyTapExec {
    pub fn new(input: Arc<dyn ExecutionPlan>, key: usize, tap: Arc<KeyTap>) -> KeyTapExec {
        KeyTapExec { input, key, tap }
    }
}

impl DisplayAs for KeyTapExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let name = self.input.schema().field(self.key).name().clone();
        write!(f, "TamisKeyTapExec: key={name}")
    }
}

impl ExecutionPlan for KeyTapExec {
    fn name(&self) -> &str {
        "TamisKeyTapExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.input.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    /// Filters pass through to the input unchanged (the same columns): a join above may push
    /// its own runtime filter into the build side's scan.
    fn gather_filters_for_pushdown(
        &self,
        _phase: FilterPushdownPhase,
        parent_filters: Vec<Arc<dyn PhysicalExpr>>,
        _config: &ConfigOptions,
    ) -> Result<FilterDescription> {
        FilterDescription::from_children(parent_filters, &self.children())
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = children.swap_remove(0);
        Ok(Arc::new(KeyTapExec::new(input, self.key, self.tap.clone())))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let partitions = self
            .input
            .properties()
            .output_partitioning()
            .partition_count();
        self.tap.expect(partitions);
        let schema = self.input.schema();
        let input = self.input.execute(partition, context)?;
        let (tap, key) = (self.tap.clone(), self.key);
        let end = self.tap.clone();
        let batches = input.map(move |batch| {
            if let Ok(b) = &batch {
                tap.take(b.column(key));
            }
            batch
        });
        // The end of the input, seen only if the stream is read to its end.
        let ended = futures::stream::once(async move {
            end.end();
            None
        })
        .filter_map(|x: Option<Result<arrow::array::RecordBatch>>| async move { x });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            schema,
            batches.chain(ended),
        )))
    }
}
