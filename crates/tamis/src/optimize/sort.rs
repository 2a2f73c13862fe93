//! External merge sort of record batches by some columns (ascending, nulls last, stable).
//!
//! Input is read in runs of at most `memory_limit` bytes of Arrow data. Each run is sorted in
//! memory by Arrow's row format (`RowConverter`: one memcmp-comparable byte string per row) and,
//! unless it is the only run, spilled to an uncompressed-LZ4 Parquet file in a temporary
//! directory. The runs are then merged k ways with a binary heap of row keys. Ties keep input
//! order (stable sort, then run index as the tie break), so the output is deterministic.
//!
//! Limits: memory is about `memory_limit` while runs are built (plus one sorted copy of a run),
//! then one batch per run while merging; temporary disk is one uncompressed-ish copy of the input.
//! The merge can be replayed (it is run once to measure and once to write).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow::array::{ArrayRef, RecordBatch, UInt32Array};
use arrow::compute::{concat_batches, interleave_record_batch, take_record_batch};
use arrow::datatypes::SchemaRef;
use arrow::row::{OwnedRow, RowConverter, Rows, SortField};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use crate::error::{Error, Result};

/// Rows per output batch of the merge.
const BATCH_ROWS: usize = 8192;

/// A sort key: the columns (by index) and a converter to row format.
pub(crate) struct SortKey {
    columns: Vec<usize>,
    converter: RowConverter,
}

impl SortKey {
    pub(crate) fn new(schema: &SchemaRef, columns: Vec<usize>) -> Result<SortKey> {
        let fields = columns
            .iter()
            .map(|&c| {
                SortField::new_with_options(
                    schema.field(c).data_type().clone(),
                    arrow::compute::SortOptions {
                        descending: false,
                        nulls_first: false,
                    },
                )
            })
            .collect();
        let converter = RowConverter::new(fields).map_err(|e| {
            let names: Vec<&str> = columns
                .iter()
                .map(|&c| schema.field(c).name().as_str())
                .collect();
            Error::unsupported(format!("cannot sort by {}: {e}", names.join(", ")))
        })?;
        Ok(SortKey { columns, converter })
    }

    fn rows(&self, batch: &RecordBatch) -> Result<Rows> {
        let cols: Vec<ArrayRef> = self
            .columns
            .iter()
            .map(|&c| batch.column(c).clone())
            .collect();
        Ok(self.converter.convert_columns(&cols)?)
    }

    /// `batch` sorted (stably).
    fn sort(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let rows = self.rows(batch)?;
        let mut order: Vec<u32> = (0..batch.num_rows() as u32).collect();
        order.sort_by(|&a, &b| rows.row(a as usize).cmp(&rows.row(b as usize)));
        Ok(take_record_batch(batch, &UInt32Array::from(order))?)
    }
}

/// The sorted data: in memory (one run) or spilled runs to merge.
pub(crate) enum Sorted {
    InMemory(RecordBatch),
    Runs {
        schema: SchemaRef,
        runs: Vec<PathBuf>,
        /// Holds the spill files; removed on drop.
        _dir: tempfile::TempDir,
    },
}

/// Statistics of a sort, for the report.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SortStats {
    /// Sorted runs the inputs were read in; 1: sorted in memory, nothing spilled.
    pub runs: usize,
    /// Bytes of the runs spilled to temporary Parquet files (0 for a single run).
    pub spilled_bytes: u64,
}

/// Reads `input` in runs of about `memory_limit` bytes, sorts each, spills all but a lone run
/// under `spill_parent`.
pub(crate) fn sort(
    schema: SchemaRef,
    input: impl Iterator<Item = Result<RecordBatch>>,
    key: &SortKey,
    memory_limit: usize,
    spill_parent: &Path,
    mut progress: impl FnMut(u64),
) -> Result<(Sorted, SortStats)> {
    let mut pending: Vec<RecordBatch> = Vec::new();
    let mut pending_bytes = 0usize;
    let mut spill: Option<(tempfile::TempDir, Vec<PathBuf>)> = None;
    let mut stats = SortStats::default();
    let flush = |pending: &mut Vec<RecordBatch>,
                 spill: &mut Option<(tempfile::TempDir, Vec<PathBuf>)>,
                 stats: &mut SortStats|
     -> Result<()> {
        let run = key.sort(&concat_batches(&schema, pending.iter())?)?;
        pending.clear();
        if spill.is_none() {
            let dir = tempfile::Builder::new()
                .prefix(".tamis-sort-")
                .tempdir_in(spill_parent)
                .map_err(|e| {
                    Error::from(e)
                        .in_file(format!("temporary directory in {}", spill_parent.display()))
                })?;
            *spill = Some((dir, Vec::new()));
        }
        let (dir, runs) = spill.as_mut().expect("just set");
        let path = dir.path().join(format!("run-{:05}.parquet", runs.len()));
        write_run(&path, &run)?;
        stats.spilled_bytes += std::fs::metadata(&path)?.len();
        runs.push(path);
        Ok(())
    };
    for batch in input {
        let batch = batch?;
        progress(batch.num_rows() as u64);
        pending_bytes += batch.get_array_memory_size();
        pending.push(batch);
        if pending_bytes >= memory_limit {
            flush(&mut pending, &mut spill, &mut stats)?;
            pending_bytes = 0;
        }
    }
    match spill {
        None => {
            stats.runs = 1;
            let all = concat_batches(&schema, pending.iter())?;
            Ok((Sorted::InMemory(key.sort(&all)?), stats))
        }
        Some(mut s) => {
            if !pending.is_empty() {
                let mut tmp = Some(s);
                flush(&mut pending, &mut tmp, &mut stats)?;
                s = tmp.expect("kept");
            }
            stats.runs = s.1.len();
            Ok((
                Sorted::Runs {
                    schema,
                    runs: s.1,
                    _dir: s.0,
                },
                stats,
            ))
        }
    }
}

fn write_run(path: &Path, batch: &RecordBatch) -> Result<()> {
    let file = File::create(path).map_err(|e| Error::from(e).in_file(path.display()))?;
    let props = WriterProperties::builder()
        .set_compression(Compression::LZ4_RAW)
        .set_dictionary_enabled(false)
        .set_statistics_enabled(parquet::file::properties::EnabledStatistics::None)
        .build();
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props))?;
    for start in (0..batch.num_rows()).step_by(BATCH_ROWS) {
        w.write(&batch.slice(start, BATCH_ROWS.min(batch.num_rows() - start)))?;
    }
    w.close()?;
    Ok(())
}

impl Sorted {
    /// The sorted rows, in batches; can be called again to replay them.
    pub(crate) fn batches<'a>(
        &'a self,
        key: &'a SortKey,
    ) -> Result<Box<dyn Iterator<Item = Result<RecordBatch>> + 'a>> {
        match self {
            Sorted::InMemory(batch) => {
                let n = batch.num_rows();
                Ok(Box::new(
                    (0..n)
                        .step_by(BATCH_ROWS)
                        .map(move |s| Ok(batch.slice(s, BATCH_ROWS.min(n - s)))),
                ))
            }
            Sorted::Runs { schema, runs, .. } => {
                Ok(Box::new(Merge::new(schema.clone(), runs, key)?))
            }
        }
    }
}

/// One spilled run being merged: its reader, current batch and that batch's row keys.
struct Cursor {
    reader: parquet::arrow::arrow_reader::ParquetRecordBatchReader,
    batch: RecordBatch,
    rows: Rows,
    pos: usize,
    /// Index of `batch` in the merge's current list of source batches.
    slot: usize,
}

/// K-way merge of sorted runs.
struct Merge<'a> {
    schema: SchemaRef,
    key: &'a SortKey,
    cursors: Vec<Option<Cursor>>,
    heap: BinaryHeap<Reverse<(OwnedRow, usize)>>,
    /// Batches referenced by the output being built.
    sources: Vec<RecordBatch>,
    failed: bool,
}

impl<'a> Merge<'a> {
    fn new(schema: SchemaRef, runs: &[PathBuf], key: &'a SortKey) -> Result<Merge<'a>> {
        let mut m = Merge {
            schema,
            key,
            cursors: Vec::with_capacity(runs.len()),
            heap: BinaryHeap::with_capacity(runs.len()),
            sources: Vec::new(),
            failed: false,
        };
        for (i, path) in runs.iter().enumerate() {
            let file = File::open(path).map_err(|e| Error::from(e).in_file(path.display()))?;
            let reader = ParquetRecordBatchReaderBuilder::try_new(file)?
                .with_batch_size(BATCH_ROWS)
                .build()?;
            m.cursors.push(None);
            m.advance_batch(i, reader)?;
        }
        Ok(m)
    }

    /// Loads the next non-empty batch of run `i` (or retires the run) and pushes its first key.
    fn advance_batch(
        &mut self,
        i: usize,
        mut reader: parquet::arrow::arrow_reader::ParquetRecordBatchReader,
    ) -> Result<()> {
        loop {
            match reader.next() {
                None => {
                    self.cursors[i] = None;
                    return Ok(());
                }
                Some(batch) => {
                    let batch = batch?;
                    if batch.num_rows() == 0 {
                        continue;
                    }
                    let rows = self.key.rows(&batch)?;
                    self.heap.push(Reverse((rows.row(0).owned(), i)));
                    self.sources.push(batch.clone());
                    self.cursors[i] = Some(Cursor {
                        reader,
                        batch,
                        rows,
                        pos: 0,
                        slot: self.sources.len() - 1,
                    });
                    return Ok(());
                }
            }
        }
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let mut picks: Vec<(usize, usize)> = Vec::with_capacity(BATCH_ROWS);
        while picks.len() < BATCH_ROWS {
            let Some(Reverse((_, i))) = self.heap.pop() else {
                break;
            };
            let c = self.cursors[i].as_mut().expect("a run in the heap is open");
            picks.push((c.slot, c.pos));
            c.pos += 1;
            if c.pos < c.batch.num_rows() {
                self.heap.push(Reverse((c.rows.row(c.pos).owned(), i)));
            } else {
                let c = self.cursors[i].take().expect("open");
                self.advance_batch(i, c.reader)?;
            }
        }
        if picks.is_empty() {
            return Ok(None);
        }
        let sources: Vec<&RecordBatch> = self.sources.iter().collect();
        let out = interleave_record_batch(&sources, &picks)?;
        // Keep only the batches the open cursors still point into.
        let mut kept = Vec::new();
        for c in self.cursors.iter_mut().flatten() {
            kept.push(c.batch.clone());
            c.slot = kept.len() - 1;
        }
        self.sources = kept;
        Ok(Some(RecordBatch::try_new(
            self.schema.clone(),
            out.columns().to_vec(),
        )?))
    }
}

impl Iterator for Merge<'_> {
    type Item = Result<RecordBatch>;
    fn next(&mut self) -> Option<Result<RecordBatch>> {
        if self.failed {
            return None;
        }
        match self.next_batch() {
            Ok(b) => b.map(Ok),
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int32Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;

    fn batches(n: usize, seed: u64) -> (SchemaRef, Vec<RecordBatch>) {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int32, true),
            Field::new("s", DataType::Utf8, false),
            Field::new("id", DataType::Int32, false),
        ]));
        let mut x = seed;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as i32
        };
        let keys: Vec<Option<i32>> = (0..n)
            .map(|_| {
                let v = next() % 50;
                (v != 0).then_some(v)
            })
            .collect();
        let strs: Vec<String> = (0..n).map(|_| format!("{}", next() % 7)).collect();
        let ids: Vec<i32> = (0..n as i32).collect();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int32Array::from(keys)),
                Arc::new(StringArray::from(strs)),
                Arc::new(Int32Array::from(ids)),
            ],
        )
        .unwrap();
        let parts = (0..n)
            .step_by(333)
            .map(|s| batch.slice(s, 333.min(n - s)))
            .collect();
        (schema, parts)
    }

    /// Oracle: arrow's lexsort over (k asc nulls last, s asc), stable by id.
    fn oracle(schema: &SchemaRef, parts: &[RecordBatch]) -> RecordBatch {
        let all = concat_batches(schema, parts).unwrap();
        let opts = arrow::compute::SortOptions {
            descending: false,
            nulls_first: false,
        };
        let cols = vec![
            arrow::compute::SortColumn {
                values: all.column(0).clone(),
                options: Some(opts),
            },
            arrow::compute::SortColumn {
                values: all.column(1).clone(),
                options: Some(opts),
            },
            arrow::compute::SortColumn {
                values: all.column(2).clone(),
                options: Some(opts),
            },
        ];
        let idx = arrow::compute::lexsort_to_indices(&cols, None).unwrap();
        take_record_batch(&all, &idx).unwrap()
    }

    #[test]
    fn in_memory_and_spilled_sorts_agree_with_lexsort() {
        let (schema, parts) = batches(5000, 7);
        let expect = oracle(&schema, &parts);
        let key = SortKey::new(&schema, vec![0, 1]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        for limit in [usize::MAX, 20_000, 1] {
            let (sorted, stats) = sort(
                schema.clone(),
                parts.iter().cloned().map(Ok),
                &key,
                limit,
                dir.path(),
                |_| {},
            )
            .unwrap();
            if limit == usize::MAX {
                assert_eq!(stats.runs, 1);
            } else {
                assert!(stats.runs > 1, "{limit}: {stats:?}");
            }
            for _replay in 0..2 {
                let out: Vec<RecordBatch> = sorted
                    .batches(&key)
                    .unwrap()
                    .collect::<Result<_>>()
                    .unwrap();
                let got = concat_batches(&schema, &out).unwrap();
                assert_eq!(got, expect, "memory limit {limit}");
            }
            drop(sorted);
        }
        // Spill directories are removed with the sort.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn empty_input() {
        let (schema, _) = batches(1, 1);
        let key = SortKey::new(&schema, vec![0]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (sorted, _) = sort(schema, std::iter::empty(), &key, 1, dir.path(), |_| {}).unwrap();
        let n: usize = sorted
            .batches(&key)
            .unwrap()
            .map(|b| b.unwrap().num_rows())
            .sum();
        assert_eq!(n, 0);
    }
}
