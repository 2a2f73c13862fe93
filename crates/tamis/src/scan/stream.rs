//! A running scan: row-group tasks started in a bounded window on the scan's thread pool, their
//! batches emitted in file order, cut to the batch size and the limit.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::time::Instant;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;

use crate::dataset::ScanFile;
use crate::error::{Error, Result};
use crate::file::OpenedFile;
use crate::io::{IoStats, Reader};
use crate::metrics::{add, MetricsCollector, ScanMetrics};

use super::order::Planner;
use super::row_group::{scan_row_group, RowGroupJob};
use super::{fit, pools, Pruning};
use crate::index::BrokenIndex;

pub(super) struct Shared {
    /// The files left after partition pruning, each bound to its own columns.
    pub(super) files: Vec<ScanFile>,
    pub(super) io: Arc<IoStats>,
    pub(super) schema: SchemaRef,
    pub(super) metrics: Arc<MetricsCollector>,
    pub(super) planner: Planner,
    pub(super) pruning: Pruning,
    pub(super) memory_limit: usize,
    pub(super) range_rows: usize,
    pub(super) index_dir: Option<Arc<std::path::PathBuf>>,
    pub(super) broken_index: BrokenIndex,
    pub(super) verify_index: bool,
    pub(super) done: AtomicUsize,
    pub(super) cancelled: Arc<AtomicBool>,
    /// See [`super::Scan::keep_pages_on_first_read`].
    pub(super) first_reads_kept: Arc<[String]>,
}

impl Shared {
    /// Row group `rg` of file `fi`, its batches handed to `emit` as they are made (until it
    /// returns false); a panic inside becomes an internal error naming the row group and
    /// carrying the panic's message, which is not also printed ([`crate::error::quiet`]).
    fn run_row_group(
        &self,
        (fi, rg, next_rg): (usize, usize, Option<usize>),
        file: &OpenedFile,
        reader: &Reader,
        ordinal: usize,
        emit: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Result<()> {
        let plan = &self.files[fi];
        let first_row: u64 = (file.metadata.row_groups()[..rg].iter())
            .map(|g| g.num_rows().max(0) as u64)
            .sum();
        let all = match &plan.deleted {
            Some(deletes) => Some(deletes.rows()?),
            None => None,
        };
        let deleted = match &all {
            Some(all) => {
                let end = first_row + file.metadata.row_group(rg).num_rows().max(0) as u64;
                let from = all.partition_point(|&r| r < first_row);
                let to = all.partition_point(|&r| r < end);
                &all[from..to]
            }
            None => &[][..],
        };
        let job = RowGroupJob {
            file,
            reader,
            needed_leaves: &plan.needed_leaves,
            rg,
            next_rg,
            predicate: plan.predicate.as_ref(),
            statistics: plan.verdicts(rg),
            next_statistics: next_rg.and_then(|next| plan.verdicts(next)),
            output: &plan.output,
            schema: &self.schema,
            metrics: &self.metrics,
            planner: &self.planner,
            ordinal,
            pruning: self.pruning,
            memory_limit: self.memory_limit,
            range_rows: self.range_rows,
            index_dir: self.index_dir.as_deref().map(|d| d.as_path()),
            broken_index: self.broken_index,
            verify_index: self.verify_index,
            first_row,
            deleted,
            rows: plan.rows_read(rg),
        };
        let result =
            crate::error::quiet::catch(|| scan_row_group(&job, emit)).unwrap_or_else(|panic| {
                Err(
                    Error::internal(format!("a row-group task panicked: {panic}"))
                        .in_row_group(rg)
                        .in_file(file.name()),
                )
            });
        self.done.fetch_add(1, Relaxed);
        result
    }
}

/// Record batches of a running scan, in file order. Metrics are complete once it is exhausted.
pub struct ScanStream {
    pub(super) shared: Arc<Shared>,
    pub(super) pool: pools::Lease,
    /// (file, row group) tasks not started yet, in file order.
    pub(super) pending: VecDeque<(usize, usize)>,
    /// The file whose row groups are being started, open, with a reader counting into the
    /// scan's I/O stats. Earlier files are held only by their running tasks, so at most
    /// `window + 1` files are open at once (besides those kept from the footer reads).
    pub(super) current: Option<(usize, Arc<OpenedFile>, Reader)>,
    /// Files still open from the footer reads, by file; taken when the scan reaches them.
    pub(super) kept: Vec<Option<Arc<OpenedFile>>>,
    /// Per running row group, its batches (`Some`) in order, then `None` once it is done.
    pub(super) in_flight: VecDeque<Receiver<Result<Option<RecordBatch>>>>,
    pub(super) window: usize,
    pub(super) ready: VecDeque<RecordBatch>,
    pub(super) remaining: Option<usize>,
    pub(super) batch_size: usize,
    pub(super) total: usize,
    pub(super) started: Instant,
    pub(super) finished: bool,
    pub(super) schema: SchemaRef,
}

impl ScanStream {
    /// The Arrow schema of the batches: the selected columns, partition columns included.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// A handle that stops this scan from another thread: row groups not yet started are
    /// skipped, running ones stop at their next read, and the stream's next item is a
    /// [`crate::ErrorKind::Cancelled`] error (then `None`).
    pub fn canceller(&self) -> Canceller {
        Canceller {
            shared: self.shared.clone(),
        }
    }

    /// (row groups done, row groups total).
    pub fn progress(&self) -> (usize, usize) {
        (self.shared.done.load(Relaxed), self.total)
    }

    /// A snapshot of the metrics; complete after the last batch.
    pub fn metrics(&self) -> ScanMetrics {
        let mut s = self.shared.metrics.snapshot();
        s.bytes_read = self.shared.io.bytes.load(Relaxed);
        s.requests = self.shared.io.requests.load(Relaxed);
        s.time_read_ns = self.shared.io.read_ns.load(Relaxed);
        s.time_decompress_ns = self.shared.io.inflate_ns.load(Relaxed);
        s.pages_cache_hits = self.shared.io.cache_hits.load(Relaxed);
        s.pages_cache_misses = self.shared.io.cache_misses.load(Relaxed);
        s.pages_cache_hits_disk = self.shared.io.cache_hits_disk.load(Relaxed);
        s.bytes_cache = self.shared.io.cache_bytes.load(Relaxed);
        s.time_decompress_saved_ns = self.shared.io.cache_inflate_saved_ns.load(Relaxed);
        s.filter_order = self.shared.planner.report();
        s.warnings = self.shared.metrics.warnings();
        s
    }

    /// File `fi`, open (opened when the scan reaches it, unless kept from the footer reads).
    fn file(&mut self, fi: usize) -> Result<(Arc<OpenedFile>, Reader)> {
        if let Some((i, f, r)) = &self.current {
            if *i == fi {
                return Ok((f.clone(), r.clone()));
            }
        }
        self.current = None;
        let file = &self.shared.files[fi];
        let cached = || file.cached.as_ref().and_then(|(open, i)| open.get(*i));
        let f = match self.kept[fi].take().or_else(cached) {
            Some(f) => f,
            None => {
                let f = file.reopen()?;
                add(&self.shared.io.bytes, f.open_bytes);
                add(&self.shared.io.requests, f.open_requests);
                add(&self.shared.metrics.time_metadata_ns, f.open_ns);
                if let Some((open, i)) = &file.cached {
                    open.put(*i, f.clone());
                }
                f
            }
        };
        let reader = f
            .scan_reader(self.shared.io.clone(), self.shared.cancelled.clone())
            .keeping_first_reads(self.shared.first_reads_kept.clone());
        self.current = Some((fi, f.clone(), reader.clone()));
        Ok((f, reader))
    }

    /// The row group of file `fi` the scan starts next, when the next task is in that file.
    fn next_in_file(&self, fi: usize) -> Option<usize> {
        self.pending
            .front()
            .filter(|&&(f, _)| f == fi)
            .map(|&(_, rg)| rg)
    }

    fn spawn_more(&mut self) {
        while self.in_flight.len() < self.window {
            let Some((fi, rg)) = self.pending.pop_front() else {
                break;
            };
            let ordinal = self.total - self.pending.len() - 1;
            let next_rg = self.next_in_file(fi);
            // Unbounded: a task never waits for the consumer (which reads the row groups in
            // order), so later row groups decode while it reads an earlier one. A row group's
            // batches are what one task would have held anyway.
            let (tx, rx) = channel();
            let (file, reader) = match self.file(fi) {
                Ok(x) => x,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    self.in_flight.push_back(rx);
                    break;
                }
            };
            let shared = self.shared.clone();
            self.pool.spawn(move || {
                if shared.cancelled.load(Relaxed) {
                    let _ = tx.send(Ok(None));
                    return;
                }
                let mut emit = |batch| tx.send(Ok(Some(batch))).is_ok();
                let task = (fi, rg, next_rg);
                let result = shared.run_row_group(task, &file, &reader, ordinal, &mut emit);
                let _ = tx.send(result.map(|()| None));
            });
            self.in_flight.push_back(rx);
        }
    }

    /// Runs the scan on the calling thread, handing each batch to `emit` as soon as it is made
    /// (`emit` returns false to stop early), instead of iterating. The iterator lets its
    /// worker pool decode up to two row groups per worker ahead of the consumer; this decodes
    /// at most one range of a row group (see [`super::Scan::range_rows`]) ahead of `emit`, so a
    /// consumer that paces itself (a bounded channel) reads rows still in cache. The row groups
    /// run one after another on one of the scan's threads, so reads are not overlapped with the
    /// consumer's work: meant for local files. Call it on a fresh stream, before any `next`.
    pub fn drive(&mut self, mut emit: impl FnMut(RecordBatch) -> bool + Send) -> Result<()> {
        if !self.in_flight.is_empty() || !self.ready.is_empty() {
            return Err(Error::internal("ScanStream::drive after next"));
        }
        let shared = self.shared.clone();
        let (batch_size, schema) = (self.batch_size, self.schema.clone());
        let mut pieces = VecDeque::new();
        while let Some((fi, rg)) = self.pending.pop_front() {
            if self.remaining == Some(0) {
                break;
            }
            if shared.cancelled.load(Relaxed) {
                self.finish();
                return Err(crate::io::cancelled());
            }
            let ordinal = self.total - self.pending.len() - 1;
            let task = (fi, rg, self.next_in_file(fi));
            let (file, reader) = match self.file(fi) {
                Ok(x) => x,
                Err(e) => {
                    self.finish();
                    return Err(e);
                }
            };
            let (pool, remaining) = (&self.pool, &mut self.remaining);
            let (mut failed, mut stopped) = (None, false);
            // On the scan's one-worker pool (this thread waits): what the row group runs in
            // parallel inside (reads) stays within the scan's threads.
            let result = pool.install(|| {
                shared.run_row_group(task, &file, &reader, ordinal, &mut |batch| {
                    if let Err(e) = fitted_pieces(batch, batch_size, &schema, &mut pieces) {
                        failed = Some(e);
                        return false;
                    }
                    while let Some(piece) = pieces.pop_front() {
                        let taken = within_limit(remaining, piece);
                        if !taken.is_some_and(&mut emit) {
                            stopped = true;
                            return false;
                        }
                    }
                    true
                })
            });
            if let Some(e) = failed.or(result.err()) {
                self.finish();
                return Err(e);
            }
            if stopped {
                break;
            }
        }
        self.finish();
        Ok(())
    }

    fn finish(&mut self) {
        if !self.finished {
            self.finished = true;
            self.shared.cancelled.store(true, Relaxed);
            self.pending.clear();
            self.current = None;
            self.kept.clear();
            add(
                &self.shared.metrics.time_total_ns,
                self.started.elapsed().as_nanos() as u64,
            );
        }
    }
}

impl Iterator for ScanStream {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.finished {
                return None;
            }
            if self.remaining == Some(0) {
                self.finish();
                return None;
            }
            // Cancelled from outside: an error, so that a consumer never takes a cut-short
            // stream for the whole result.
            if self.shared.cancelled.load(Relaxed) {
                self.finish();
                return Some(Err(crate::io::cancelled()));
            }
            if let Some(batch) = self.ready.pop_front() {
                if let Some(batch) = within_limit(&mut self.remaining, batch) {
                    return Some(Ok(batch));
                }
                continue;
            }
            self.spawn_more();
            let Some(rx) = self.in_flight.front() else {
                self.finish();
                return None;
            };
            let received = rx.recv();
            if !matches!(received, Ok(Ok(Some(_)))) {
                self.in_flight.pop_front();
            }
            match received {
                Ok(Ok(Some(batch))) => {
                    let fitted =
                        fitted_pieces(batch, self.batch_size, &self.schema, &mut self.ready);
                    if let Err(e) = fitted {
                        self.finish();
                        return Some(Err(e));
                    }
                }
                Ok(Ok(None)) => {}
                Ok(Err(e)) => {
                    self.finish();
                    return Some(Err(e));
                }
                Err(_) => {
                    self.finish();
                    return Some(Err(Error::internal("a row-group task vanished")));
                }
            }
        }
    }
}

/// Stops a running [`ScanStream`] from any thread (e.g. on Ctrl-C in a binding).
#[derive(Clone)]
pub struct Canceller {
    shared: Arc<Shared>,
}

impl Canceller {
    /// Stops the scan from any thread: row groups in flight stop at their next read, and the
    /// stream's next item is an [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled) error.
    /// Calling it again does nothing.
    pub fn cancel(&self) {
        self.shared.cancelled.store(true, Relaxed);
    }
}

/// `batch` cut into pieces of at most `batch_size` rows, each fitted to `schema`, appended to
/// `out`.
fn fitted_pieces(
    batch: RecordBatch,
    batch_size: usize,
    schema: &SchemaRef,
    out: &mut VecDeque<RecordBatch>,
) -> Result<()> {
    let mut offset = 0;
    while offset < batch.num_rows() {
        let n = batch_size.min(batch.num_rows() - offset);
        fit::push_fitted(batch.slice(offset, n), schema, out)?;
        offset += n;
    }
    Ok(())
}

/// `batch`, cut to the rows the limit still allows (`None` once it allows none).
fn within_limit(remaining: &mut Option<usize>, batch: RecordBatch) -> Option<RecordBatch> {
    match remaining {
        Some(0) => None,
        Some(r) if batch.num_rows() > *r => {
            let b = batch.slice(0, *r);
            *r = 0;
            Some(b)
        }
        Some(r) => {
            *r -= batch.num_rows();
            Some(batch)
        }
        None => Some(batch),
    }
}

impl Drop for ScanStream {
    fn drop(&mut self) {
        self.shared.cancelled.store(true, Relaxed);
    }
}
