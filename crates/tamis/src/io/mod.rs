//! The byte-source boundary: every byte tamis reads — footer, page index, Bloom filters,
//! dictionary and data pages — goes through a [`ByteSource`] (a local file or an object in a
//! store), and every read a scan makes goes through its [`Reader`], which counts bytes and
//! requests, coalesces ranges by the source's own costs and stops issuing requests once the scan
//! is cancelled.
//!
//! ```text
//! wanted ranges ──► coalesce(gap = first-byte latency × bandwidth) ──► ByteSource::read_ranges
//!               ──► FetchedRanges (serves the parquet crate's page reader from memory)
//! ```

pub(crate) mod local;
pub(crate) mod location;
pub(crate) mod memory;
pub(crate) mod object;
pub(crate) mod recycle;

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use bytes::{Buf, Bytes};
use parquet::errors::ParquetError;
use parquet::file::reader::{ChunkReader, Length};

use crate::error::{Error, ErrorKind, Result};

pub use location::{named, FileRef, Listing, StorageOptions};

/// Wanted byte ranges of a local file closer than this are fetched with one read that includes
/// the gap.
///
/// Measured by `bench/io_crossover.py` (64 KiB pages, local virtio disk, see BENCHMARKS.md "I/O
/// policy"): one read over the gap wins up to a 16 KiB gap and loses from 32 KiB on, both warm
/// (a system call ≈ copying 16–32 KiB) and cold.
pub const LOCAL_COALESCE_GAP: u64 = 16 << 10;

/// Bytes read from the end of a local file to open it: the footer of most files (a second read
/// when it is larger). Reading past what a system call costs to copy (about this much, see
/// [`LOCAL_COALESCE_GAP`]) saves nothing locally, and every speculative byte counts in the bytes
/// a scan reports: 100 KiB a file was 2% of a selective scan of 20 files. Page indexes are read
/// when a scan needs them.
pub const LOCAL_TAIL_READ: u64 = LOCAL_COALESCE_GAP;

/// The largest gap a remote read reads through (see [`IoProfile::coalesce_gap`]).
pub const MAX_COALESCE_GAP: u64 = 1 << 20;

/// What a source's requests cost: the time to the first byte, the transfer rate, and how many
/// requests of one batch run at once.
///
/// A dependent request (the next one needs this one's bytes) costs a whole first-byte wait: the
/// bytes worth reading speculatively instead are their product, [`IoProfile::round_trip_bytes`].
/// The ranges of one batch are fetched concurrently, so splitting a range in two costs only a
/// share of a wait: the gap worth reading through is that product over the concurrency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IoProfile {
    /// Time from issuing a request to its first byte, in nanoseconds.
    pub first_byte_ns: u64,
    /// Transfer rate of one request once its bytes flow, in bytes per second.
    pub bytes_per_sec: u64,
    /// Requests in flight at once (1: sequential).
    pub concurrency: u64,
}

impl IoProfile {
    /// Bytes that arrive while waiting for one first byte.
    pub fn round_trip_bytes(&self) -> u64 {
        (self.first_byte_ns as u128 * self.bytes_per_sec as u128 / 1_000_000_000) as u64
    }

    /// Bytes between two wanted ranges of one batch below which one request over both is
    /// cheaper than two concurrent ones, when the requests fill every slot.
    ///
    /// Capped at [`MAX_COALESCE_GAP`]: the measured bandwidth is what one stream achieved,
    /// and reading through a gap beyond about a round trip of one real object-store stream
    /// (~100 MB/s × 10 ms) costs more than a request does while slots are free.
    pub fn coalesce_gap(&self) -> u64 {
        (self.round_trip_bytes() / self.concurrency.max(1)).clamp(4 << 10, MAX_COALESCE_GAP)
    }

    /// Bytes worth reading speculatively from the end of a file of `len` bytes (if known) to
    /// catch the footer and the page index in the same request: 64 KiB plus 0.5% of the file
    /// (the page index of 20k-row pages is about 0.25% of TPC-H lineitem; its footer 14 KB),
    /// 1 MiB when the size is unknown, never more than one round trip's worth (at most 4 MiB).
    pub fn tail_read(&self, len: Option<u64>) -> u64 {
        let cap = self.round_trip_bytes().clamp(64 << 10, 4 << 20);
        let want = len.map_or(1 << 20, |l| (64 << 10) + l / 200);
        want.clamp(64 << 10, cap)
    }
}

/// What identifies one version of a file: a scan that sees another version mid-way fails.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Identity {
    /// Length in bytes.
    pub len: u64,
    /// The object store's entity tag.
    pub etag: Option<String>,
    /// Last modification time, nanoseconds since the epoch (local files: mtime).
    pub modified_ns: Option<i64>,
    /// Local files: which file and its last status change (see [`FileStamp`]).
    pub stamp: Option<FileStamp>,
}

/// A local file's device, inode and status-change time (ctime). An overwrite in place (`cp`
/// onto the file, `shutil.copyfile`) keeps the inode and may keep the size and restore the
/// modification time, but it always moves the ctime, which no user call can set back; a
/// replacement by rename changes the inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileStamp {
    /// The device holding the file (`st_dev`).
    pub device: u64,
    /// The file's inode number (`st_ino`).
    pub inode: u64,
    /// Last status change (ctime), nanoseconds since the epoch.
    pub changed_ns: i64,
}

/// Positioned reads of byte ranges from one file or object.
pub trait ByteSource: Send + Sync + fmt::Debug {
    /// The path or URL, for errors and reports.
    fn location(&self) -> &str;
    /// The version of the file this source reads, as found when it was opened.
    fn identity(&self) -> &Identity;
    /// Reads each range (in bounds, already coalesced) with one request; independent requests
    /// may run concurrently. Checks `cancel` before issuing each request.
    fn read_ranges(&self, ranges: &[Range<u64>], cancel: &AtomicBool) -> Result<Vec<Bytes>>;
    /// The current cost estimate of this source's requests.
    fn profile(&self) -> IoProfile;
    /// Whether requests are expensive (remote): the planner trades bytes for round trips.
    fn is_remote(&self) -> bool;
    /// Whether the byte at `offset` is in the operating system's page cache; `None` when the
    /// source cannot tell (remote sources, other systems).
    fn resident(&self, _offset: u64) -> Option<bool> {
        None
    }
    /// A hint that `ranges` (in bounds, coalesced) will be read soon: a source that can load
    /// them in the background starts to, unless it finds them loaded already. Changes no
    /// result.
    fn will_need(&self, _ranges: &[Range<u64>]) {}
    /// [`ByteSource::will_need`] for ranges the caller has found not loaded: no check first.
    fn advise(&self, ranges: &[Range<u64>]) {
        self.will_need(ranges)
    }
}

/// Where a remote file's metadata — the rest of a long footer, page indexes, Bloom filters,
/// dictionary pages read for pruning, a sidecar's blobs — is kept across processes (the page
/// cache's directory registers itself: `tamis::cache::set_disk_cache`), so that a repeated
/// query sends no request for what is kept; the open still sends one, which is also the check
/// that the object has not changed. Keyed by the file's location and identity (its ETag), so
/// a changed object is never served from it.
pub(crate) trait MetadataStore: Send + Sync {
    /// `range` of the file at `location` in version `identity`, if kept.
    fn get(&self, location: &str, identity: &Identity, range: &Range<u64>) -> Option<Bytes>;
    /// Keeps `bytes`, read from `range` of that file (in the background; may drop it).
    fn put(&self, location: &str, identity: &Identity, range: &Range<u64>, bytes: &Bytes);
}

static METADATA_STORE: std::sync::RwLock<Option<Arc<dyn MetadataStore>>> =
    std::sync::RwLock::new(None);

/// Sets (or with `None` removes) the process's [`MetadataStore`].
pub(crate) fn set_metadata_store(store: Option<Arc<dyn MetadataStore>>) {
    *METADATA_STORE.write().unwrap_or_else(|e| e.into_inner()) = store;
}

/// The metadata store, for reads of `source` when it is remote.
fn metadata_store_for(source: &dyn ByteSource) -> Option<Arc<dyn MetadataStore>> {
    if !source.is_remote() || source.identity().etag.is_none() {
        return None; // local metadata reads are cheap, and need no copy on disk
    }
    METADATA_STORE
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// Reads `ranges` of `source` as [`ByteSource::read_ranges`] does (one result a range, in
/// order), serving those the [`MetadataStore`] keeps from there and keeping the others: for
/// metadata reads only (pages are kept decompressed by the page cache). Also returns how many
/// of the ranges were read from the source (a request each).
pub(crate) fn read_metadata(
    source: &dyn ByteSource,
    ranges: &[Range<u64>],
    cancel: &AtomicBool,
) -> Result<(Vec<Bytes>, usize)> {
    let Some(store) = metadata_store_for(source) else {
        return Ok((source.read_ranges(ranges, cancel)?, ranges.len()));
    };
    let (location, identity) = (source.location(), source.identity());
    let mut out: Vec<Option<Bytes>> = (ranges.iter())
        .map(|r| store.get(location, identity, r))
        .collect();
    let missing: Vec<Range<u64>> = (ranges.iter().zip(&out))
        .filter(|(_, kept)| kept.is_none())
        .map(|(r, _)| r.clone())
        .collect();
    if !missing.is_empty() {
        let mut read = source.read_ranges(&missing, cancel)?.into_iter();
        for (r, slot) in ranges.iter().zip(out.iter_mut()) {
            if slot.is_none() {
                let bytes = read.next().unwrap_or_default();
                store.put(location, identity, r, &bytes);
                *slot = Some(bytes);
            }
        }
    }
    let bytes = out.into_iter().map(Option::unwrap_or_default).collect();
    Ok((bytes, missing.len()))
}

/// Bytes and requests of one scan (or one open), shared by its readers, and the time the
/// storage path took: waiting for reads, and inflating the pages they brought.
#[derive(Debug, Default)]
pub struct IoStats {
    /// Bytes read.
    pub bytes: AtomicU64,
    /// Requests issued (system calls on local files, GETs on object stores).
    pub requests: AtomicU64,
    /// Nanoseconds spent in reads, summed over threads.
    pub read_ns: AtomicU64,
    /// Nanoseconds spent decompressing pages, summed over threads.
    pub inflate_ns: AtomicU64,
    /// Pages served by the page cache (neither read nor decompressed).
    pub cache_hits: AtomicU64,
    /// Pages of cached chunks the page cache did not hold (read, decompressed and kept).
    pub cache_misses: AtomicU64,
    /// Of `cache_hits`, pages read from the disk tier.
    pub cache_hits_disk: AtomicU64,
    /// Decompressed bytes the page cache served.
    pub cache_bytes: AtomicU64,
    /// What decompressing the pages the cache served took when they were first read, in
    /// nanoseconds: the decompression the hits saved.
    pub cache_inflate_saved_ns: AtomicU64,
}

/// A scan's view of a source: counts into the scan's [`IoStats`] and honours its cancellation.
#[derive(Debug, Clone)]
pub struct Reader {
    source: Arc<dyn ByteSource>,
    stats: Arc<IoStats>,
    cancel: Arc<AtomicBool>,
    /// Bytes already in memory (the tail read when the file was opened): ranges inside them
    /// cost no request.
    cached: Option<Arc<FetchedRanges>>,
    /// Top-level columns whose pages the page cache keeps on their first read when this
    /// reader's scan decompresses them (see [`crate::Scan::keep_pages_on_first_read`]).
    first_reads_kept: Arc<[String]>,
}

impl Reader {
    /// A reader of `source` that counts into `stats` and issues no request once `cancel` is set.
    pub fn new(source: Arc<dyn ByteSource>, stats: Arc<IoStats>, cancel: Arc<AtomicBool>) -> Self {
        Reader {
            source,
            stats,
            cancel,
            cached: None,
            first_reads_kept: Arc::new([]),
        }
    }

    /// Has the page cache keep the pages of `columns` (top-level names) decompressed through
    /// this reader on their first read.
    pub fn keeping_first_reads(mut self, columns: Arc<[String]>) -> Self {
        self.first_reads_kept = columns;
        self
    }

    /// Whether the page cache keeps the pages of top-level column `column` read through this
    /// reader on their first read.
    pub fn keeps_first_reads(&self, column: &str) -> bool {
        self.first_reads_kept.iter().any(|c| c == column)
    }

    /// A reader of another source for the same scan (a sidecar index): same counters, same
    /// cancellation.
    pub fn sibling(&self, source: Arc<dyn ByteSource>) -> Reader {
        Reader::new(source, self.stats.clone(), self.cancel.clone())
    }

    /// Serves ranges inside `cached` from memory.
    pub fn with_cached(mut self, cached: Arc<FetchedRanges>) -> Self {
        self.cached = Some(cached);
        self
    }

    fn cached_slice(&self, range: &Range<u64>) -> Option<Bytes> {
        self.cached.as_ref()?.slice(range.clone())
    }

    /// Where the cached part of a range starts, when its end (not its start) is in memory.
    fn cached_suffix_start(&self, range: &Range<u64>) -> Option<u64> {
        self.cached
            .as_ref()?
            .pieces
            .iter()
            .map(|(s, b)| (*s, s + b.len() as u64))
            .find(|&(s, e)| s > range.start && s < range.end && e >= range.end)
            .map(|(s, _)| s)
    }

    /// A reader of a local file with its own counters (for tools and examples).
    pub fn open_local(path: &std::path::Path) -> Result<Self> {
        let source: Arc<dyn ByteSource> = Arc::new(local::LocalFile::open(path)?);
        Ok(Reader::new(source, Default::default(), Default::default()))
    }

    /// The counters this reader adds to.
    pub fn stats(&self) -> &Arc<IoStats> {
        &self.stats
    }

    /// The source it reads.
    pub fn source(&self) -> &Arc<dyn ByteSource> {
        &self.source
    }

    /// The file's length in bytes.
    pub fn len(&self) -> u64 {
        self.source.identity().len
    }

    /// Whether the file has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The file's path or URL.
    pub fn location(&self) -> &str {
        self.source.location()
    }

    /// Counts the time since `start` as page decompression (see [`IoStats::inflate_ns`]);
    /// returns it, in nanoseconds.
    pub(crate) fn count_inflate(&self, start: std::time::Instant) -> u64 {
        let ns = start.elapsed().as_nanos() as u64;
        self.stats.inflate_ns.fetch_add(ns, Relaxed);
        ns
    }

    /// Counts a page of `bytes` the page cache served (see [`IoStats::cache_hits`]), from its
    /// directory or not, and the decompression it saved.
    pub(crate) fn count_cache_hit(&self, from_disk: bool, bytes: u64, inflate_ns: u64) {
        let s = &self.stats;
        s.cache_hits.fetch_add(1, Relaxed);
        s.cache_hits_disk.fetch_add(from_disk as u64, Relaxed);
        s.cache_bytes.fetch_add(bytes, Relaxed);
        s.cache_inflate_saved_ns.fetch_add(inflate_ns, Relaxed);
    }

    /// Counts a page the page cache did not hold (see [`IoStats::cache_misses`]).
    pub(crate) fn count_cache_miss(&self) {
        self.stats.cache_misses.fetch_add(1, Relaxed);
    }

    /// The gap below which neighbouring ranges are read as one.
    pub fn coalesce_gap(&self) -> u64 {
        if self.source.is_remote() {
            self.source.profile().coalesce_gap()
        } else {
            LOCAL_COALESCE_GAP
        }
    }

    fn check(&self, range: &Range<u64>) -> Result<()> {
        if range.start > range.end || range.end > self.len() {
            return Err(Error::corrupt(format!(
                "byte range {}..{} lies beyond the end of the file ({} bytes)",
                range.start,
                range.end,
                self.len()
            )));
        }
        Ok(())
    }

    /// Reads one range with one request.
    pub fn read_range(&self, range: Range<u64>) -> Result<Bytes> {
        self.check(&range)?;
        if range.is_empty() {
            return Ok(Bytes::new());
        }
        if let Some(b) = self.cached_slice(&range) {
            return Ok(b);
        }
        let mut out = self.read_exact(std::slice::from_ref(&range))?;
        Ok(out.pop().unwrap_or_default())
    }

    /// Whether the byte at `offset` is in the page cache (see [`ByteSource::resident`]).
    pub fn resident(&self, offset: u64) -> Option<bool> {
        self.source.resident(offset)
    }

    /// Asks the source to start loading `ranges` before they are read (see
    /// [`ByteSource::will_need`]), so that the device works while the scan decodes what it
    /// already has. Ranges out of bounds or in memory are left out; nothing is counted as read.
    pub fn will_need(&self, ranges: &[Range<u64>]) {
        if let Some(wanted) = self.to_hint(ranges) {
            self.source.will_need(&wanted);
        }
    }

    /// [`Reader::will_need`] for ranges the caller has found not loaded, by a probe made before
    /// something else could load the probed byte (see [`ByteSource::advise`]).
    pub fn advise(&self, ranges: &[Range<u64>]) {
        if let Some(wanted) = self.to_hint(ranges) {
            self.source.advise(&wanted);
        }
    }

    /// `ranges` without those out of bounds or in memory, coalesced; `None` when nothing is
    /// left or the reader is cancelled.
    fn to_hint(&self, ranges: &[Range<u64>]) -> Option<Vec<Range<u64>>> {
        if self.cancel.load(Relaxed) {
            return None;
        }
        let wanted: Vec<Range<u64>> = (ranges.iter())
            .filter(|r| self.check(r).is_ok() && self.cached_slice(r).is_none())
            .cloned()
            .collect();
        (!wanted.is_empty()).then(|| coalesce(&wanted, self.coalesce_gap()))
    }

    /// [`Self::read_ranges`] of `metadata` and `pages` together, the `metadata` ranges of a
    /// remote file served from and kept in the cache directory when there is one (the page
    /// cache's disk tier, `tamis::cache::set_disk_cache`).
    pub fn read_metadata_ranges(
        &self,
        metadata: &[Range<u64>],
        pages: &[Range<u64>],
    ) -> Result<FetchedRanges> {
        let Some(store) = metadata_store_for(self.source.as_ref()) else {
            return self.read_ranges(&[metadata, pages].concat());
        };
        let (location, identity) = (self.source.location(), self.source.identity());
        let mut kept = Vec::new();
        let mut missing = pages.to_vec();
        let mut to_keep = Vec::new();
        for r in metadata {
            self.check(r)?;
            match (self.cached_slice(r)).or_else(|| store.get(location, identity, r)) {
                Some(bytes) => kept.push((r.start, bytes)),
                None => {
                    missing.push(r.clone());
                    to_keep.push(r.clone());
                }
            }
        }
        let mut fetched = if missing.is_empty() {
            FetchedRanges::from_pieces(Vec::new(), self.len())
        } else {
            self.read_ranges(&missing)?
        };
        for r in to_keep {
            if let Some(bytes) = fetched.slice(r.clone()) {
                store.put(location, identity, &r, &bytes);
            }
        }
        fetched.extend(kept);
        Ok(fetched)
    }

    /// Reads several ranges, merging those closer than the source's coalescing gap.
    pub fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<FetchedRanges> {
        let mut cached = Vec::new();
        let mut missing = Vec::with_capacity(ranges.len());
        // Ranges whose end lies in memory (they run into the tail): only the head is read, then
        // joined to the cached rest.
        let mut joins = Vec::new();
        for r in ranges {
            self.check(r)?;
            if let Some(b) = self.cached_slice(r) {
                cached.push((r.start, b));
            } else if let Some(split) = self.cached_suffix_start(r) {
                missing.push(r.start..split);
                joins.push((r.clone(), split));
            } else {
                missing.push(r.clone());
            }
        }
        let merged = coalesce(&missing, self.coalesce_gap());
        let pieces = self.read_exact(&merged)?;
        let mut fetched = FetchedRanges::from_pieces(
            merged.iter().map(|r| r.start).zip(pieces).collect(),
            self.len(),
        );
        for (r, split) in joins {
            let (Some(head), Some(rest)) = (
                fetched.slice(r.start..split),
                self.cached_slice(&(split..r.end)),
            ) else {
                return Err(Error::internal(
                    "a range joined to the cached tail went missing",
                ));
            };
            let mut joined = Vec::with_capacity((r.end - r.start) as usize);
            joined.extend_from_slice(&head);
            joined.extend_from_slice(&rest);
            cached.push((r.start, Bytes::from(joined)));
        }
        fetched.extend(cached);
        Ok(fetched)
    }

    /// [`cancelled`] once the scan is cancelled: for work that issues requests other than
    /// through this reader (a sidecar lookup).
    pub(crate) fn check_cancelled(&self) -> Result<()> {
        match self.cancel.load(Relaxed) {
            true => Err(cancelled()),
            false => Ok(()),
        }
    }

    fn read_exact(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.check_cancelled()?;
        let t = std::time::Instant::now();
        let pieces = self.source.read_ranges(ranges, &self.cancel);
        let ns = t.elapsed().as_nanos() as u64;
        self.stats.read_ns.fetch_add(ns, Relaxed);
        let pieces = pieces?;
        for (r, p) in ranges.iter().zip(&pieces) {
            if p.len() as u64 != r.end - r.start {
                return Err(Error::corrupt(format!(
                    "short read: asked for {} bytes at offset {}, got {} (the object is shorter \
                     than it was)",
                    r.end - r.start,
                    r.start,
                    p.len()
                ))
                .in_file(self.location()));
            }
        }
        self.stats.requests.fetch_add(ranges.len() as u64, Relaxed);
        self.stats
            .bytes
            .fetch_add(ranges.iter().map(|r| r.end - r.start).sum(), Relaxed);
        Ok(pieces)
    }
}

/// The error of a read attempted after its scan was cancelled.
pub fn cancelled() -> Error {
    Error::new(ErrorKind::Cancelled, "the scan was cancelled")
}

/// Sorts ranges and merges those closer than `gap` (empty ranges are dropped).
pub fn coalesce(ranges: &[Range<u64>], gap: u64) -> Vec<Range<u64>> {
    let mut sorted: Vec<Range<u64>> = ranges.iter().filter(|r| r.end > r.start).cloned().collect();
    sorted.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::with_capacity(sorted.len());
    for r in sorted {
        match merged.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(gap) => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

impl Length for Reader {
    fn len(&self) -> u64 {
        Reader::len(self)
    }
}

/// The parquet crate reads through this (metadata, Bloom filters, the fallback reader): each
/// call is one counted request.
impl ChunkReader for Reader {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        // A stream from `start`: one request up to a window the source finds cheap.
        let end = start
            .saturating_add(self.coalesce_gap().max(64 << 10))
            .min(self.len());
        Ok(self
            .get_bytes(start, end.saturating_sub(start) as usize)?
            .reader())
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let end = start.checked_add(length as u64).ok_or_else(|| {
            ParquetError::General(format!("byte range {start}+{length} overflows"))
        })?;
        self.read_range(start..end)
            .map_err(|e| ParquetError::External(Box::new(e)))
    }
}

/// Byte ranges of a file already fetched into memory; serves the page reader without I/O.
/// Asking for bytes that were not fetched is an error (it would be a bug in the I/O plan).
#[derive(Debug, Clone, Default)]
pub struct FetchedRanges {
    pieces: Vec<(u64, Bytes)>,
    len: u64,
}

impl FetchedRanges {
    /// `(offset, bytes)` pieces, in any order, of a file of `len` bytes.
    pub fn from_pieces(mut pieces: Vec<(u64, Bytes)>, len: u64) -> Self {
        pieces.sort_by_key(|(s, _)| *s);
        FetchedRanges { pieces, len }
    }

    /// Takes the pieces out, by offset.
    pub fn into_pieces(self) -> Vec<(u64, Bytes)> {
        self.pieces
    }

    /// The fetched pieces, by offset.
    pub fn pieces(&self) -> &[(u64, Bytes)] {
        &self.pieces
    }

    /// Adds pieces (e.g. a dictionary page fetched earlier).
    pub fn extend(&mut self, pieces: impl IntoIterator<Item = (u64, Bytes)>) {
        self.pieces.extend(pieces);
        self.pieces.sort_by_key(|(s, _)| *s);
    }

    /// Forgets the pieces that end at or before `offset`.
    pub fn forget_before(&mut self, offset: u64) {
        self.pieces
            .retain(|(s, data)| s.saturating_add(data.len() as u64) > offset);
    }

    /// The bytes of `range` if one fetched piece holds all of them.
    pub fn slice(&self, range: Range<u64>) -> Option<Bytes> {
        let (s, data) = self.piece(range.start, range.end)?;
        Some(data.slice((range.start - s) as usize..(range.end - s) as usize))
    }

    /// A piece holding `start..end` (pieces may overlap: later fetches add to earlier ones).
    /// No error is built for a miss: sparse reads of disk-tier entries ask for ranges never
    /// fetched, down to one a value, and formatting an error for each took a third of a scan.
    fn piece(&self, start: u64, end: u64) -> Option<(u64, &Bytes)> {
        let i = self.pieces.partition_point(|(s, _)| *s <= start);
        self.pieces[..i]
            .iter()
            .rev()
            .find(|(s, data)| end <= s + data.len() as u64)
            .map(|(s, data)| (*s, data))
    }
}

impl Length for FetchedRanges {
    fn len(&self) -> u64 {
        self.len
    }
}

impl ChunkReader for FetchedRanges {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        // The piece reaching furthest from `start` (a zero-length read may start at the very
        // end of a piece: an empty page body).
        let i = self.pieces.partition_point(|(s, _)| *s <= start);
        let (s, data) = self.pieces[..i]
            .iter()
            .filter(|(s, data)| start <= s + data.len() as u64)
            .max_by_key(|(s, data)| s + data.len() as u64)
            .ok_or_else(|| {
                ParquetError::General(format!("offset {start} lies outside the column chunk"))
            })?;
        Ok(data.slice((start - s) as usize..).reader())
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let end = start.checked_add(length as u64).ok_or_else(|| {
            ParquetError::General(format!(
                "page at offset {start} of {length} bytes overflows"
            ))
        })?;
        let (s, data) = self.piece(start, end).ok_or_else(|| {
            ParquetError::General(format!(
                "page at offset {start} of {length} bytes runs past the column chunk"
            ))
        })?;
        Ok(data.slice((start - s) as usize..(end - s) as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn reader(path: &std::path::Path) -> (Reader, Arc<IoStats>) {
        let source: Arc<dyn ByteSource> = Arc::new(local::LocalFile::open(path).unwrap());
        let stats = Arc::new(IoStats::default());
        (
            Reader::new(source, stats.clone(), Arc::new(AtomicBool::new(false))),
            stats,
        )
    }

    #[test]
    fn counts_and_checks_bounds() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&(0u8..100).collect::<Vec<_>>()).unwrap();
        let (src, stats) = reader(f.path());
        assert_eq!(
            src.get_bytes(10, 5).unwrap().as_ref(),
            &[10, 11, 12, 13, 14]
        );
        assert_eq!(stats.bytes.load(Relaxed), 5);
        assert_eq!(stats.requests.load(Relaxed), 1);
        assert!(src.get_bytes(98, 5).is_err());
        assert!(src.get_bytes(u64::MAX - 1, 5).is_err());
        // 20..30 and 32..40 merge (gap 2 < 16 KiB); 80..90 too (gap 40).
        let fetched = src.read_ranges(&[20..30, 32..40, 80..90]).unwrap();
        assert_eq!(stats.bytes.load(Relaxed), 5 + 70);
        assert_eq!(stats.requests.load(Relaxed), 2);
        assert_eq!(fetched.get_bytes(33, 2).unwrap().as_ref(), &[33, 34]);
        assert_eq!(fetched.slice(85..88).unwrap().as_ref(), &[85, 86, 87]);
        assert!(fetched.get_bytes(95, 1).is_err());
        assert!(fetched.get_bytes(88, 5).is_err());
    }

    #[test]
    fn ranges_running_into_the_cached_tail_read_only_their_head() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let data: Vec<u8> = (0..200u8).collect();
        f.write_all(&data).unwrap();
        let (src, stats) = reader(f.path());
        let tail = Arc::new(FetchedRanges::from_pieces(
            vec![(150, Bytes::copy_from_slice(&data[150..]))],
            200,
        ));
        let src = src.with_cached(tail);
        let fetched = src.read_ranges(&[10..20, 140..170, 180..190]).unwrap();
        // Only 10..20 and 140..150 are read, merged into one request (the gap is under
        // 16 KiB); 150..170 and 180..190 come from the tail.
        assert_eq!(stats.bytes.load(Relaxed), 140);
        assert_eq!(stats.requests.load(Relaxed), 1);
        assert_eq!(fetched.slice(140..170).unwrap().as_ref(), &data[140..170]);
        assert_eq!(fetched.slice(180..190).unwrap().as_ref(), &data[180..190]);
        assert_eq!(fetched.slice(10..20).unwrap().as_ref(), &data[10..20]);
    }

    /// Records the hints a reader passes on.
    #[derive(Debug)]
    struct Hinted {
        inner: memory::MemorySource,
        hints: std::sync::Mutex<Vec<Range<u64>>>,
    }

    impl ByteSource for Hinted {
        fn location(&self) -> &str {
            self.inner.location()
        }
        fn identity(&self) -> &Identity {
            self.inner.identity()
        }
        fn read_ranges(&self, ranges: &[Range<u64>], cancel: &AtomicBool) -> Result<Vec<Bytes>> {
            self.inner.read_ranges(ranges, cancel)
        }
        fn profile(&self) -> IoProfile {
            self.inner.profile()
        }
        fn is_remote(&self) -> bool {
            false
        }
        fn will_need(&self, ranges: &[Range<u64>]) {
            self.hints.lock().unwrap().extend_from_slice(ranges);
        }
    }

    /// Hints reach the source coalesced, without the ranges in memory or out of bounds, and
    /// count no bytes or requests; a cancelled reader passes none on.
    #[test]
    fn will_need_hints_only_what_a_read_would_fetch() {
        let data = Bytes::from((0..=255u8).cycle().take(100_000).collect::<Vec<_>>());
        let source = Arc::new(Hinted {
            inner: memory::MemorySource::new("mem", data.clone()),
            hints: Default::default(),
        });
        let stats = Arc::new(IoStats::default());
        let cancel = Arc::new(AtomicBool::new(false));
        let tail = Arc::new(FetchedRanges::from_pieces(
            vec![(90_000, data.slice(90_000..))],
            100_000,
        ));
        let r = Reader::new(source.clone(), stats.clone(), cancel.clone()).with_cached(tail);
        r.will_need(&[
            0..10,
            100..200,
            50_000..60_000,
            95_000..96_000,
            99_000..100_001,
        ]);
        assert_eq!(*source.hints.lock().unwrap(), vec![0..200, 50_000..60_000]);
        assert_eq!(stats.bytes.load(Relaxed), 0);
        assert_eq!(stats.requests.load(Relaxed), 0);
        cancel.store(true, Relaxed);
        r.will_need(std::slice::from_ref(&(0..10)));
        assert_eq!(source.hints.lock().unwrap().len(), 2);
    }

    #[test]
    fn coalescing_merges_only_close_ranges() {
        assert_eq!(
            coalesce(&[10..20, 0..5, 22..30, 100..110, 7..7], 2),
            vec![0..5, 10..30, 100..110]
        );
        assert_eq!(coalesce(&[0..5, 5..6], 0), vec![0..6]);
        assert!(coalesce(&[], 10).is_empty());
    }

    #[test]
    fn cancelled_readers_issue_no_request() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&[1u8; 100]).unwrap();
        let source: Arc<dyn ByteSource> = Arc::new(local::LocalFile::open(f.path()).unwrap());
        let stats = Arc::new(IoStats::default());
        let cancel = Arc::new(AtomicBool::new(true));
        let r = Reader::new(source, stats.clone(), cancel);
        assert!(r.read_range(0..10).is_err());
        assert_eq!(stats.requests.load(Relaxed), 0);
    }

    #[test]
    fn profile_gap_is_latency_times_bandwidth() {
        let p = IoProfile {
            first_byte_ns: 10_000_000,
            bytes_per_sec: 100_000_000,
            concurrency: 1,
        };
        assert_eq!(p.coalesce_gap(), 1_000_000);
        assert_eq!(p.tail_read(None), 1_000_000);
        assert_eq!(p.tail_read(Some(20_000_000)), (64 << 10) + 100_000);
        let parallel = IoProfile {
            concurrency: 16,
            ..p
        };
        assert_eq!(parallel.coalesce_gap(), 62_500);
        assert_eq!(parallel.tail_read(Some(1 << 30)), 1_000_000);
        let fast = IoProfile {
            first_byte_ns: 1_000,
            bytes_per_sec: 1_000_000_000,
            concurrency: 1,
        };
        assert_eq!(fast.coalesce_gap(), 4 << 10);
        assert_eq!(fast.tail_read(Some(1 << 30)), 64 << 10);
        // Loopback-fast streams at 50 ms would read through 3 MB gaps: capped.
        let loopback = IoProfile {
            first_byte_ns: 50_000_000,
            bytes_per_sec: 1_000_000_000,
            concurrency: 16,
        };
        assert_eq!(loopback.coalesce_gap(), MAX_COALESCE_GAP);
    }
}
