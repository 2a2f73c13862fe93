//! The disk tier of the page cache: decompressed pages (still encoded) in files of a cache
//! directory, so that a later process — the next query of a dashboard, a notebook restarted, a
//! Spark executor's next task — reads a page with one positioned read and no decompression.
//!
//! ```text
//! miss   ─► read, decompress ─► handed on ─► a local page's first miss? remembered (cache/asked.rs)
//!                                         └► queued ─► writer thread: what is queued, as one
//!                                                      pack (cache/pack.rs): temporary file, rename
//! get    ─► name held? where? (cache/names.rs; no: a miss, no file system call)
//!        ─► <dir>/<pack>.pack at the entry's spot ─► head, key, every block's checksum ─► page
//!                                     └► anything wrong: the pack is removed, a miss
//! blocks ─► open_entries: the heads ─► EntryFile::read: the 4 KiB blocks asked for, each
//!           checked against its own checksum (column/sparse.rs: a selective scan's values)
//! ```
//!
//! **Read by blocks.** An entry's payload starts at a multiple of [`BLOCK`] and each block of
//! it has its own checksum in the head, so a scan that selects a few rows of a page reads
//! the head and the blocks holding their values — paper 000's I/O skipping inside its disk
//! cache — and still never returns a byte it did not check. A PLAIN page of variable-length
//! byte arrays carries an offset table after its payload (paper 000's section 5.1.6): where
//! each value starts, so that its blocks are found without reading the values before it.
//!
//! **Packs.** Entries are written a batch at a time, as packs (`cache/pack.rs`): the entries
//! the writer found queued, behind an index of where each lies. A file a page cost a second
//! process 2–3x its scan in inode allocations; a pack a batch, tens of files a scan.
//!
//! **Never stale, never torn.** An entry is named by a 128-bit hash of its key (the file's
//! location and [`Identity`], and the page's offset), and repeats the whole key: a changed
//! source file is another key, and a hash collision reads as a miss. A pack is written to a
//! temporary file and renamed into place, so a reader sees a whole pack or none, and two
//! processes sharing the directory never see each other's partial writes; an entry torn or
//! flipped anyway (a crash before the data reached the disk, a bad sector) fails an XXH3-64
//! checksum (its head's, or a block's) and its pack is removed. Entries are read into memory,
//! never mapped: a file truncated under a mapping would crash the process.
//!
//! **Remote metadata too.** Beside pages, entries hold byte ranges of remote files' metadata
//! (footers, page indexes, Bloom filters, sidecar blobs) under the object's ETag: the disk
//! tier is the `io::MetadataStore`, so a repeated remote query reads them from here.
//!
//! **Bounded.** A byte budget over the directory's packs: past it, the writer removes the
//! oldest packs (first in, first out, by modification time) until 90% of it is left. The
//! count starts from a listing of the directory and is recounted at each eviction, so processes
//! sharing it converge on the same view. A write that finds the queue full is dropped: a miss
//! never waits for the disk.

use std::collections::HashSet;
use std::fs;
use std::hash::Hasher;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use parquet::basic::Encoding;
use parquet::column::page::Page;
use twox_hash::XxHash64;

use super::asked::{self, AskLog};
use super::names::{self, Name, Names};
use super::pack::{self, Spot};
use super::FileKey;
use crate::io::{Identity, MetadataStore};
use std::ops::Range;

/// The first bytes of every entry (the last is the layout's version).
const MAGIC: &[u8; 8] = b"TAMISPG\x05";
/// Magic, u32 key length, 5 × u32 of the page's header, u32 count of the offset table, u64
/// payload length, u64 decompression nanoseconds, 5 bytes of kind and encodings, 3 reserved.
/// The key and a checksum of each [`BLOCK`] of what is stored (the payload, and the offset
/// table when there is one) follow, then (for a data page) zeros up to a multiple of [`BLOCK`]
/// less 8 bytes, then a checksum of all before it; the payload follows (a data page's on a
/// block boundary), then, when the entry has one, zeros to the next block boundary and the
/// offset table ([`offset_table`]).
const FIXED: usize = 8 + 7 * 4 + 8 + 8 + 8;
/// The unit of the payload's checksums and alignment: a scan may read an entry by the blocks
/// that hold its selected values, each checked alone (the page size of file systems and
/// SSDs: a finer read costs the device the same, see `column/sparse.rs`).
pub(crate) const BLOCK: u64 = 4096;
/// Each checksum is an XXH3-64 ([`checksum`]).
const CHECKSUM: usize = 8;
/// Entries waiting for the writer; beyond this a write is dropped. Enough for
/// [`MAX_PENDING_BYTES`] of 64 KiB pages: at 256, a second scan of Q6 (1 216 pages of 54 KiB)
/// dropped half its pages with 14 MiB queued, and the third process wrote them.
const QUEUE: usize = 1024;
/// How long the writer waits for more entries to fill a pack to [`pack::MIN_BYTES`].
const GATHER: std::time::Duration = std::time::Duration::from_millis(5);
/// How long the writer waits idle before it appends the asks ([`AskLog`]).
const ASKS_EVERY: std::time::Duration = std::time::Duration::from_millis(100);
/// Bytes of pages waiting for the writer; beyond this a write is dropped (the queued pages
/// hold their decompressed buffers).
const MAX_PENDING_BYTES: u64 = 64 << 20;

/// What an entry holds: a decompressed page and what decompressing it took, or bytes of a
/// remote file's metadata as read ([`crate::io::MetadataStore`]).
pub(crate) enum Held {
    /// A page, what decompressing it took, and its column when its values are byte arrays
    /// worth an offset table.
    Page(Page, u64, Option<ByteArrays>),
    Bytes(Bytes),
}

/// A flat column of variable-length byte arrays: its PLAIN data pages get an offset table,
/// their values starting after the definition levels when `max_def > 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ByteArrays {
    pub(crate) max_def: i16,
}

impl Held {
    fn len(&self) -> u64 {
        match self {
            Held::Page(page, ..) => page.buffer().len() as u64,
            Held::Bytes(bytes) => bytes.len() as u64,
        }
    }
}

/// What the writer is handed: the entry's name, its key, what it holds.
type Queued = (Name, Vec<u8>, Held);
/// The extension of packs (anything else in the directory is left alone, but for
/// [`LEGACY_EXTENSION`]).
pub(crate) const EXTENSION: &str = "pack";
/// The extension of the entries of earlier versions, a page a file: never read, counted
/// against the budget and evicted (oldest first, so before any pack) and cleared.
const LEGACY_EXTENSION: &str = "page";

/// Encodings as entries number them (an encoding not listed is not written to disk).
/// `BIT_PACKED` is deprecated, but old files still encode levels with it.
#[allow(deprecated)]
const ENCODINGS: [Encoding; 9] = [
    Encoding::PLAIN,
    Encoding::PLAIN_DICTIONARY,
    Encoding::RLE,
    Encoding::BIT_PACKED,
    Encoding::DELTA_BINARY_PACKED,
    Encoding::DELTA_LENGTH_BYTE_ARRAY,
    Encoding::DELTA_BYTE_ARRAY,
    Encoding::RLE_DICTIONARY,
    Encoding::BYTE_STREAM_SPLIT,
];

fn encoding_code(e: Encoding) -> Option<u8> {
    ENCODINGS.iter().position(|&x| x == e).map(|i| i as u8)
}

fn encoding_of(code: u8) -> Option<Encoding> {
    ENCODINGS.get(code as usize).copied()
}

/// What the disk tier has done since the process started.
#[derive(Debug, Default)]
pub(crate) struct DiskCounts {
    pub(crate) hits: AtomicU64,
    /// Remote metadata ranges served ([`MetadataStore`]).
    pub(crate) metadata_hits: AtomicU64,
    pub(crate) written: AtomicU64,
    /// Local pages not written: missed for the first time ([`AskLog`]).
    pub(crate) first_misses: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) corrupt: AtomicU64,
    pub(crate) evicted: AtomicU64,
}

/// A cache directory and its writer thread.
pub(crate) struct DiskTier {
    dir: PathBuf,
    budget: u64,
    held: Arc<AtomicU64>,
    /// The writer thread's queue, made with the thread by the first entry queued: a process
    /// that writes nothing (a first scan, whose local pages are only asked for) runs no thread.
    /// A thread that merely waited beside the scan cost a first scan of Q1's columns 8–14 %
    /// (BENCHMARKS.md, issue 40, ninth step).
    queue: OnceLock<SyncSender<Queued>>,
    /// Entries queued and not yet written.
    pending: Arc<AtomicU64>,
    /// Bytes of the pages queued (they hold their buffers until written).
    pending_bytes: Arc<AtomicU64>,
    /// Whether a write waits for room in the queue instead of being dropped, and a local page
    /// is written on its first miss (`tamis cache warm`, which is there to fill the cache).
    waits: AtomicBool,
    /// The local pages missed before ([`AskLog`]): a local page is written on its second miss.
    asks: Arc<AskLog>,
    /// The entries' names ([`Names`]): a page without an entry is looked up in memory only.
    names: Arc<Names>,
    pub(crate) counts: Arc<DiskCounts>,
}

impl DiskTier {
    /// The tier over `dir` (created if missing) with a budget of `budget` bytes.
    pub(crate) fn open(dir: &Path, budget: u64) -> std::io::Result<DiskTier> {
        create_dir(dir)?;
        sweep_temporaries(dir, std::time::Duration::from_secs(3600));
        let entries = listing(dir);
        let held = Arc::new(AtomicU64::new(entries.iter().map(|e| e.1).sum()));
        let packs = entries.into_iter().map(|e| e.0);
        let names = Arc::new(Names::new(dir, packs.filter(|p| is_pack(p))));
        let counts = Arc::new(DiskCounts::default());
        let pending = Arc::new(AtomicU64::new(0));
        let pending_bytes = Arc::new(AtomicU64::new(0));
        let asks = Arc::new(AskLog::open(dir));
        Ok(DiskTier {
            dir: dir.to_path_buf(),
            budget,
            held,
            queue: OnceLock::new(),
            pending,
            pending_bytes,
            waits: AtomicBool::new(false),
            asks,
            names,
            counts,
        })
    }

    /// The writer thread's queue, the thread started on the first call (a queue whose thread
    /// could not start refuses every entry: dropped, as when it is full).
    fn queue(&self) -> &SyncSender<Queued> {
        self.queue.get_or_init(|| {
            let (queue, entries) = sync_channel::<Queued>(QUEUE);
            let writer = Writer {
                dir: self.dir.clone(),
                budget: self.budget,
                held: self.held.clone(),
                pending: self.pending.clone(),
                pending_bytes: self.pending_bytes.clone(),
                asks: self.asks.clone(),
                names: self.names.clone(),
                counts: self.counts.clone(),
            };
            let _ = std::thread::Builder::new()
                .name("tamis-disk-cache".into())
                .spawn(move || writer.run(entries));
            queue
        })
    }

    /// Makes writes wait for room in the queue (`true`) or be dropped when it is full.
    pub(crate) fn set_waits(&self, waits: bool) {
        self.waits.store(waits, Relaxed);
    }

    /// Waits until every queued entry is written, at most `limit`: a process about to exit
    /// calls it so that its pages reach the directory.
    pub(crate) fn flush(&self, limit: std::time::Duration) {
        let start = std::time::Instant::now();
        while self.pending.load(Relaxed) > 0 && start.elapsed() < limit {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        self.asks.write();
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn budget(&self) -> u64 {
        self.budget
    }

    /// Bytes of entries in the directory, as this process last counted them.
    pub(crate) fn held(&self) -> u64 {
        self.held.load(Relaxed)
    }

    /// The entry named `key`, opened, when the directory holds it (as far as [`Names`] knows:
    /// no file system call for an entry it does not hold).
    fn open_entry(&self, key: &[u8]) -> Option<Opened> {
        let spot = self.names.spot(name(key))?;
        let file = self.names.open(spot.pack)?;
        Some(Opened { file, spot })
    }

    /// Removes the pack of a damaged entry (a damaged byte makes the whole file suspect).
    fn remove(&self, spot: &Spot) {
        remove_pack(&self.dir, &self.names, &self.counts, spot.pack);
    }

    /// Whether an entry for the page exists, as far as [`Names`] knows (not read or checked:
    /// for planning reads; an entry gone since is read from the source when it misses).
    pub(crate) fn contains(&self, file: &FileKey, offset: u64) -> bool {
        self.names.spot(name(&entry_key(file, offset))).is_some()
    }

    /// The page of `file` at `offset` from its entry, when one exists and is whole, with what
    /// decompressing it cost; an entry that is not (torn, flipped, another key's) is removed
    /// with its pack.
    pub(crate) fn get(&self, file: &FileKey, offset: u64) -> Option<(Page, u64)> {
        match self.read(&entry_key(file, offset))? {
            Held::Page(page, inflate_ns, _) => {
                self.counts.hits.fetch_add(1, Relaxed);
                Some((page, inflate_ns))
            }
            Held::Bytes(_) => None,
        }
    }

    /// What the entry named `key` holds, when it exists and is whole; one that is not is
    /// removed with its pack. The head and the payload are read, not the offset table (a page
    /// read whole does not need it).
    fn read(&self, key: &[u8]) -> Option<Held> {
        let entry = self.open_entry(key)?;
        match read_payload(&entry, key) {
            Some(held) => Some(held),
            None => {
                self.remove(&entry.spot);
                None
            }
        }
    }

    /// Asks the kernel to load, in the background, the heads of the entries of `file`'s pages
    /// and the blocks [`Self::open_entries`]' readers are expected to read: for each page, its
    /// offset, the length its payload is expected to have, and ranges of that payload. For
    /// entries found cold ([`Self::entry_cold`]); nothing off Linux. A guess that turns out
    /// wrong costs a read the device did for nothing.
    pub(crate) fn advise_entries(&self, file: &FileKey, pages: &[(u64, u64, Vec<Range<u64>>)]) {
        #[cfg(target_os = "linux")]
        for (offset, payload_len, ranges) in pages {
            let key = entry_key(file, *offset);
            let Some(entry) = self.open_entry(&key) else {
                continue;
            };
            // Advice only: a file system that ignores it reads when asked, as before.
            let advise = |r: Range<u64>| entry.advise(r);
            advise(0..BLOCK);
            // The ranges are guessed for entries without an offset table (fixed-width values):
            // what is stored is the payload.
            let start = payload_start(key.len(), *payload_len, true);
            let mut last = 0..0;
            for r in ranges {
                let b = start + r.start / BLOCK * BLOCK..start + align_up(r.end);
                if b.start <= last.end && !last.is_empty() {
                    last.end = last.end.max(b.end);
                    continue;
                }
                if !last.is_empty() {
                    advise(last);
                }
                last = b;
            }
            if !last.is_empty() {
                advise(last);
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (file, pages);
    }

    /// Whether the entry of `file`'s page at `offset` is outside the OS page cache (its first
    /// byte; `None` without an entry or off Linux): a cold entry's random reads each wait for
    /// the device. Ask once: the probe itself starts reading the entry's first block, so a
    /// second probe soon after may find it loaded.
    pub(crate) fn entry_cold(&self, file: &FileKey, offset: u64) -> Option<bool> {
        let entry = self.open_entry(&entry_key(file, offset))?;
        #[cfg(target_os = "linux")]
        return Some(cold(&entry));
        #[cfg(not(target_os = "linux"))]
        {
            drop(entry);
            None
        }
    }

    /// Opens the entries of `file`'s pages at `offsets` to be read by blocks, their heads read
    /// and checked (`None` for a page with no whole entry; a damaged one is removed with its
    /// pack). `cold` entries ([`Self::entry_cold`]) have their heads asked of the device
    /// together, as [`Self::will_need`] does for whole entries, and no read-ahead past what is
    /// read.
    pub(crate) fn open_entries(
        &self,
        file: &FileKey,
        offsets: &[u64],
        cold: bool,
    ) -> Vec<Option<EntryFile>> {
        let opened: Vec<Option<Opened>> = offsets
            .iter()
            .map(|&o| self.open_entry(&entry_key(file, o)))
            .collect();
        #[cfg(target_os = "linux")]
        if cold {
            for entry in opened.iter().flatten() {
                // Advice only: no read-ahead past the blocks asked for (this open of the
                // pack's only); the heads now.
                let _ = rustix::fs::fadvise(&entry.file, 0, None, rustix::fs::Advice::Random);
                entry.advise(0..BLOCK.min(entry.spot.len));
            }
        }
        offsets
            .iter()
            .zip(opened)
            .map(|(&o, opened)| {
                let entry = opened?;
                match read_head(&entry, &entry_key(file, o)) {
                    Some((head, _)) => Some(EntryFile {
                        entry,
                        head,
                        cold,
                        dir: self.dir.clone(),
                        names: self.names.clone(),
                        counts: self.counts.clone(),
                    }),
                    None => {
                        self.remove(&entry.spot);
                        None
                    }
                }
            })
            .collect()
    }

    /// Hands the entries of `file`'s pages at `offsets` to the kernel to load in the background
    /// (`POSIX_FADV_WILLNEED`) when the first of them is not in the OS page cache: a cold scan
    /// then waits for the device once for all of them, not once an entry. One probe stands for
    /// all (a scan's entries are mostly cold or warm together), so a warm scan pays one read.
    #[cfg(target_os = "linux")]
    pub(crate) fn will_need(&self, file: &FileKey, offsets: &[u64]) {
        let mut entries = offsets
            .iter()
            .filter_map(|&o| self.open_entry(&entry_key(file, o)));
        let Some(first) = entries.next() else {
            return;
        };
        if cold(&first) {
            for entry in std::iter::once(first).chain(entries) {
                entry.advise(0..entry.spot.len);
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn will_need(&self, _file: &FileKey, _offsets: &[u64]) {}

    /// Queues `page` of `file` at `offset` for writing: the page itself (its buffer shared,
    /// not copied), encoded by the writer. A page of a local file is written on its second
    /// miss ([`AskLog`]), unless `first_miss` or writes wait (the cache is being filled); a
    /// remote page on its first. Dropped when the queue is full or holds
    /// [`MAX_PENDING_BYTES`] already (unless writes wait), when one page would take a tenth of
    /// the budget, or when its encoding is one entries do not number.
    /// A PLAIN page of a column of `byte_arrays` is written with its offset table (when its
    /// payload takes two blocks or more, its levels are RLE and its lengths add up, see
    /// [`offset_table`]).
    pub(crate) fn put(
        &self,
        file: &FileKey,
        offset: u64,
        page: &Page,
        inflate_ns: u64,
        byte_arrays: Option<ByteArrays>,
        first_miss: bool,
    ) {
        let key = entry_key(file, offset);
        let local = file.identity().stamp.is_some();
        if local && !first_miss && !self.waits.load(Relaxed) && !self.asks.ask(key_hash(&key, 0)) {
            self.counts.first_misses.fetch_add(1, Relaxed);
            return;
        }
        let held = Held::Page(page.clone(), inflate_ns, byte_arrays);
        self.queue_entry(key, held);
    }

    /// Queues an entry named `key` (see [`Self::put`]).
    fn queue_entry(&self, key: Vec<u8>, held: Held) {
        let len = held.len();
        if len > self.budget / 10 {
            return;
        }
        let waits = self.waits.load(Relaxed);
        if !waits && self.pending_bytes.load(Relaxed) + len > MAX_PENDING_BYTES {
            self.counts.dropped.fetch_add(1, Relaxed);
            return;
        }
        self.pending.fetch_add(1, Relaxed);
        self.pending_bytes.fetch_add(len, Relaxed);
        let item = (name(&key), key, held);
        let sent = if waits {
            self.queue().send(item).is_ok()
        } else {
            match self.queue().try_send(item) {
                Ok(()) => true,
                Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => false,
            }
        };
        if !sent {
            self.pending.fetch_sub(1, Relaxed);
            self.pending_bytes.fetch_sub(len, Relaxed);
            self.counts.dropped.fetch_add(1, Relaxed);
        }
    }
}

/// The writer thread: entries queued by scans, written a pack at a time.
struct Writer {
    dir: PathBuf,
    budget: u64,
    held: Arc<AtomicU64>,
    pending: Arc<AtomicU64>,
    pending_bytes: Arc<AtomicU64>,
    asks: Arc<AskLog>,
    names: Arc<Names>,
    counts: Arc<DiskCounts>,
}

impl Writer {
    /// Writes what arrives on `entries` until the tier is dropped.
    fn run(self, entries: Receiver<Queued>) {
        loop {
            // The asks are appended when the writer is idle a moment (or flushed, or many
            // are waiting), so a process that ends without a flush still leaves most of them.
            let first = match entries.recv_timeout(ASKS_EVERY) {
                Ok(queued) => queued,
                Err(RecvTimeoutError::Timeout) => {
                    self.asks.write();
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            };
            // What else is queued goes into the same pack, and what arrives within [`GATHER`]
            // while the pack is under [`pack::MIN_BYTES`]: one file for the batch. A writer that
            // kept up with the scan wrote packs of 4 pages on average.
            let mut batch = vec![first];
            let mut bytes = batch[0].2.len();
            let until = std::time::Instant::now() + GATHER;
            while batch.len() < pack::MAX_ENTRIES && bytes < pack::MAX_BYTES {
                let next = match bytes < pack::MIN_BYTES {
                    true => entries
                        .recv_timeout(until.saturating_duration_since(std::time::Instant::now()))
                        .ok(),
                    false => entries.try_recv().ok(),
                };
                let Some(queued) = next else {
                    break;
                };
                bytes += queued.2.len();
                batch.push(queued);
            }
            let taken = batch.len() as u64;
            self.pending_bytes.fetch_sub(bytes, Relaxed);
            self.write(batch);
            self.pending.fetch_sub(taken, Relaxed);
        }
    }

    /// Encodes `batch` (here, not on the scans' threads: a miss costs a scan a queue push) and
    /// writes it as one pack; evicts past the budget.
    fn write(&self, batch: Vec<Queued>) {
        let encoded: Vec<(Name, Vec<u8>)> = batch
            .into_iter()
            .filter_map(|(name, key, held)| {
                let entry = encode(&held, &key)?;
                // An encoding entries do not number, or a page too large: not written.
                ((entry.len() as u64) <= self.budget / 10).then_some((name, entry))
            })
            .collect();
        if encoded.is_empty() {
            return;
        }
        let name = pack::new_name();
        let Ok((spots, len)) = pack::write(&self.dir, name, &encoded) else {
            return;
        };
        self.names.insert(name, &spots);
        self.counts.written.fetch_add(spots.len() as u64, Relaxed);
        let now = self.held.fetch_add(len, Relaxed) + len;
        if now > self.budget {
            let (left, removed) = evict(&self.dir, self.budget / 10 * 9, &self.names);
            self.held.store(left, Relaxed);
            self.counts.evicted.fetch_add(removed, Relaxed);
        }
    }
}

/// Whether the first byte of `entry` is not in the OS page cache (a one-byte `RWF_NOWAIT`
/// read).
#[cfg(target_os = "linux")]
fn cold(entry: &Opened) -> bool {
    let mut byte = [0u8; 1];
    let mut bufs = [std::io::IoSliceMut::new(&mut byte)];
    let at = entry.spot.at;
    matches!(
        rustix::io::preadv2(
            &entry.file,
            &mut bufs,
            at,
            rustix::io::ReadWriteFlags::NOWAIT
        ),
        Err(rustix::io::Errno::AGAIN)
    )
}

/// An entry opened: its pack's file and where the entry lies in it. Offsets given to its
/// methods are the entry's own (0 is its first byte).
struct Opened {
    /// Shared by the entries of the pack (held open by [`Names`]).
    file: Arc<fs::File>,
    spot: Spot,
}

impl Opened {
    /// Fills `buf` from the entry at `offset`; an error past the entry's end.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let end = offset.checked_add(buf.len() as u64);
        if end.is_none_or(|e| e > self.spot.len) {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        pack::read_exact_at(&self.file, buf, self.spot.at + offset)
    }

    /// Asks the kernel to load `range` of the entry in the background. Advice only: a file
    /// system that ignores it reads when asked, as before.
    fn advise(&self, range: Range<u64>) {
        #[cfg(target_os = "linux")]
        {
            // An empty range asks for nothing (no length would mean the rest of the pack).
            let Some(len) = std::num::NonZeroU64::new(range.end.saturating_sub(range.start)) else {
                return;
            };
            let advice = rustix::fs::Advice::WillNeed;
            let at = self.spot.at + range.start;
            let _ = rustix::fs::fadvise(&self.file, at, Some(len), advice);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = range;
    }
}

/// Removes the pack `pack` of `dir` (found damaged) and forgets its entries.
fn remove_pack(dir: &Path, names: &Names, counts: &DiskCounts, pack: Name) {
    counts.corrupt.fetch_add(1, Relaxed);
    let _ = fs::remove_file(dir.join(names::file_name(pack, EXTENSION)));
    names.remove(&HashSet::from([pack]));
}

/// A remote file's metadata kept beside its pages: a repeated query over an object store reads
/// footers, page indexes and Bloom filters from here, under the object's ETag.
impl MetadataStore for DiskTier {
    fn get(&self, location: &str, identity: &Identity, range: &Range<u64>) -> Option<Bytes> {
        match self.read(&metadata_key(location, identity, range))? {
            Held::Bytes(bytes) if bytes.len() as u64 == range.end - range.start => {
                self.counts.metadata_hits.fetch_add(1, Relaxed);
                Some(bytes)
            }
            _ => None,
        }
    }

    fn put(&self, location: &str, identity: &Identity, range: &Range<u64>, bytes: &Bytes) {
        let key = metadata_key(location, identity, range);
        self.queue_entry(key, Held::Bytes(bytes.clone()));
    }
}

/// Creates the cache directory (and its parents) if missing: the decompressed pages of the
/// files read, readable by their owner only.
#[cfg(unix)]
pub(crate) fn create_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
pub(crate) fn create_dir(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)
}

/// Removes temporary files older than `age`: left by a process that ended before its writer
/// renamed them (they are not entries, so eviction does not see them).
fn sweep_temporaries(dir: &Path, age: std::time::Duration) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|a| a > age);
        if old && e.file_name().to_string_lossy().starts_with(".tmp-") {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// Removes the packs, temporary files and ask logs of a cache directory; returns the entries
/// removed.
pub(crate) fn clear_dir(dir: &Path) -> u64 {
    for log in [asked::LOG, asked::OLD_LOG] {
        let _ = fs::remove_file(dir.join(log));
    }
    let mut removed = 0;
    for (path, _, _) in listing(dir) {
        let entries = entries_in(&path);
        if fs::remove_file(path).is_ok() {
            removed += entries;
        }
    }
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(".tmp-") {
                let _ = fs::remove_file(e.path());
            }
        }
    }
    removed
}

/// How many entries the file at `path` holds: a pack's count (none when its index is not
/// whole), one for an earlier version's entry.
pub(crate) fn entries_in(path: &Path) -> u64 {
    if !is_pack(path) {
        return 1;
    }
    let pack = names::name_of(path).and_then(|name| pack::read_index(path, name));
    pack.map_or(0, |entries| entries.len() as u64)
}

/// Whether `path` is a pack (not an earlier version's entry).
fn is_pack(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == EXTENSION)
}

/// A cache directory's packs (and earlier versions' entries): path, bytes and modification
/// time, oldest first.
pub(crate) fn listing(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            let path = e.path();
            let ours = path
                .extension()
                .is_some_and(|x| x == EXTENSION || x == LEGACY_EXTENSION);
            if ours {
                if let Ok(m) = e.metadata() {
                    let when = m.modified().unwrap_or(std::time::UNIX_EPOCH);
                    out.push((path, m.len(), when));
                }
            }
        }
    }
    out.sort_by_key(|e| e.2);
    out
}

/// Removes the oldest packs until at most `keep` bytes are left: (bytes left, entries
/// removed, as far as this process held them; an earlier version's entry counts one).
fn evict(dir: &Path, keep: u64, names: &Names) -> (u64, u64) {
    let entries = listing(dir);
    let mut left: u64 = entries.iter().map(|e| e.1).sum();
    let (mut packs, mut legacy) = (HashSet::new(), 0);
    for (path, len, _) in entries {
        if left <= keep {
            break;
        }
        if fs::remove_file(&path).is_ok() {
            left -= len;
            match names::name_of(&path).filter(|_| is_pack(&path)) {
                Some(pack) => {
                    packs.insert(pack);
                }
                None => legacy += 1,
            }
        }
    }
    (left, names.remove(&packs) + legacy)
}

/// The name of the entry of `key` (two of its hashes).
fn name(key: &[u8]) -> Name {
    (u128::from(key_hash(key, 0)) << 64) | u128::from(key_hash(key, 1))
}

/// A 64-bit hash of an entry's key (and of the layout's version), by seed.
fn key_hash(key: &[u8], seed: u64) -> u64 {
    let mut h = XxHash64::with_seed(seed);
    h.write(MAGIC);
    h.write(key);
    h.finish()
}

/// The bytes that name a page: its file's location and identity, and its offset.
fn entry_key(file: &FileKey, offset: u64) -> Vec<u8> {
    use std::io::Write as _;
    let mut key = Vec::with_capacity(file.key_prefix().len() + 20);
    key.extend_from_slice(file.key_prefix().as_bytes());
    let _ = write!(key, "{offset}"); // into a Vec: cannot fail
    key
}

/// The bytes that name a range of a file's metadata (four parts where a page's key has three,
/// the last a number: the two never meet).
fn metadata_key(location: &str, identity: &Identity, range: &Range<u64>) -> Vec<u8> {
    format!(
        "meta\0{location}\0{identity:?}\0{}..{}",
        range.start, range.end
    )
    .into_bytes()
}

/// An XXH3-64 of `bytes`: a warm scan checksums every byte it reads from the directory, and
/// XXH3 (AVX2 when the CPU has it, detected at run time by `twox-hash`) does it at a third of
/// xxHash64's cost, which was 10 % of a warm Q6 (BENCHMARKS.md, issue 40, ninth step).
pub(super) fn checksum(bytes: &[u8]) -> u64 {
    twox_hash::XxHash3_64::oneshot(bytes)
}

/// An entry: header, key, the page's (decompressed) bytes or the metadata's, checksum.
fn encode(held: &Held, key: &[u8]) -> Option<Vec<u8>> {
    let (page, inflate_ns, byte_arrays) = match held {
        Held::Page(page, inflate_ns, byte_arrays) => (page, *inflate_ns, *byte_arrays),
        Held::Bytes(bytes) => {
            return Some(entry(key, bytes, &[], 0, [BYTES, 0, 0, 0, 0], [0; 5]));
        }
    };
    let (kind, encoding, def, rep, flag, numbers) = match page {
        Page::DataPage {
            num_values,
            encoding,
            def_level_encoding,
            rep_level_encoding,
            ..
        } => (
            0u8,
            *encoding,
            *def_level_encoding,
            *rep_level_encoding,
            false,
            [*num_values, 0, 0, 0, 0],
        ),
        Page::DataPageV2 {
            num_values,
            encoding,
            num_nulls,
            num_rows,
            def_levels_byte_len,
            rep_levels_byte_len,
            is_compressed,
            ..
        } => {
            if *is_compressed {
                return None; // only decompressed pages are cached
            }
            (
                1,
                *encoding,
                Encoding::RLE,
                Encoding::RLE,
                false,
                [
                    *num_values,
                    *num_nulls,
                    *num_rows,
                    *def_levels_byte_len,
                    *rep_levels_byte_len,
                ],
            )
        }
        Page::DictionaryPage {
            num_values,
            encoding,
            is_sorted,
            ..
        } => (
            2,
            *encoding,
            Encoding::PLAIN,
            Encoding::PLAIN,
            *is_sorted,
            [*num_values, 0, 0, 0, 0],
        ),
    };
    let flags = [
        kind,
        encoding_code(encoding)?,
        encoding_code(def)?,
        encoding_code(rep)?,
        flag as u8,
    ];
    let table = byte_arrays
        .and_then(|c| offset_table(page, c))
        .unwrap_or_default();
    Some(entry(
        key,
        page.buffer(),
        &table,
        inflate_ns,
        flags,
        numbers,
    ))
}

/// The offset table of a PLAIN data page of byte arrays: where each value starts (its length
/// prefix), then where the last ends, as u32 counted from the values' start (after the
/// levels). `None` for any other page, one under two blocks (read whole anyway), or one whose
/// values do not end exactly at the payload's end.
fn offset_table(page: &Page, column: ByteArrays) -> Option<Vec<u32>> {
    let buf = page.buffer();
    if (buf.len() as u64) < 2 * BLOCK {
        return None;
    }
    let start = match page {
        Page::DataPage {
            encoding: Encoding::PLAIN,
            def_level_encoding,
            ..
        } => match column.max_def {
            0 => 0,
            _ if *def_level_encoding == Encoding::RLE => {
                let len = u32::from_le_bytes(buf.get(..4)?.try_into().ok()?);
                4usize.checked_add(len as usize)?
            }
            _ => return None,
        },
        Page::DataPageV2 {
            encoding: Encoding::PLAIN,
            def_levels_byte_len,
            rep_levels_byte_len,
            ..
        } => (*def_levels_byte_len as usize).checked_add(*rep_levels_byte_len as usize)?,
        _ => return None,
    };
    let values = buf.get(start..)?;
    let end = u32::try_from(values.len()).ok()?;
    let mut table = Vec::new();
    let mut at = 0u32;
    while at < end {
        table.push(at);
        let i = at as usize;
        let len = u32::from_le_bytes(values.get(i..i + 4)?.try_into().ok()?);
        at = at.checked_add(4)?.checked_add(len)?;
    }
    (at == end).then(|| {
        table.push(end);
        table
    })
}

/// The kind byte of an entry holding metadata bytes (pages: 0, 1, 2).
const BYTES: u8 = 3;

/// An entry's bytes (see [`FIXED`]), with `table` after the payload when not empty (data
/// pages only); a key over 4 GiB is refused by the caller's budget long before (entries are at
/// most a tenth of it).
fn entry(
    key: &[u8],
    payload: &[u8],
    table: &[u32],
    inflate_ns: u64,
    flags: [u8; 5],
    numbers: [u32; 5],
) -> Vec<u8> {
    let payload_len = payload.len() as u64;
    let stored_len = stored_len(payload_len, table.len() as u32);
    let start = payload_start(key.len(), stored_len, aligned(flags[0])) as usize;
    let mut out = Vec::with_capacity(start + stored_len as usize);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    for n in numbers {
        out.extend_from_slice(&n.to_le_bytes());
    }
    out.extend_from_slice(&(table.len() as u32).to_le_bytes());
    out.extend_from_slice(&payload_len.to_le_bytes());
    out.extend_from_slice(&inflate_ns.to_le_bytes());
    out.extend_from_slice(&flags);
    out.extend_from_slice(&[0, 0, 0]);
    out.extend_from_slice(key);
    // The blocks' checksums, the padding and the head's checksum are filled in once the
    // stored bytes are in place (copied once).
    let sums_at = out.len();
    out.resize(start, 0);
    out.extend_from_slice(payload);
    if !table.is_empty() {
        out.resize(start + align_up(payload_len) as usize, 0);
        out.extend(table.iter().flat_map(|o| o.to_le_bytes()));
    }
    let sums: Vec<u64> = out[start..].chunks(BLOCK as usize).map(checksum).collect();
    for (i, sum) in sums.into_iter().enumerate() {
        let at = sums_at + CHECKSUM * i;
        out[at..at + CHECKSUM].copy_from_slice(&sum.to_le_bytes());
    }
    let sum = checksum(&out[..start - CHECKSUM]);
    out[start - CHECKSUM..start].copy_from_slice(&sum.to_le_bytes());
    out
}

/// The bytes stored after an entry's head: the payload, and an offset table of `offsets`
/// entries (when not 0) from the payload's next block boundary.
fn stored_len(payload_len: u64, offsets: u32) -> u64 {
    match offsets {
        0 => payload_len,
        n => align_up(payload_len).saturating_add(4 * u64::from(n)),
    }
}

/// Where the payload of an entry starts, for a key of `key_len` bytes and `stored_len` bytes
/// after the head ([`stored_len`]; see [`FIXED`]): on a block boundary for a data page
/// (`aligned`), read by blocks; right after the head for anything else, read whole (a few
/// hundred bytes of metadata then take no 4 KiB).
fn payload_start(key_len: usize, stored_len: u64, aligned: bool) -> u64 {
    let sums = stored_len.div_ceil(BLOCK).saturating_mul(CHECKSUM as u64);
    let head = ((FIXED + key_len + CHECKSUM) as u64).saturating_add(sums);
    if aligned {
        align_up(head)
    } else {
        head
    }
}

/// Whether an entry of this kind (its first flag) starts its payload on a block boundary: data
/// pages (kinds 0 and 1).
fn aligned(kind: u8) -> bool {
    kind <= 1
}

pub(super) fn align_up(x: u64) -> u64 {
    x.div_ceil(BLOCK).saturating_mul(BLOCK)
}

/// An entry's head, checked: what it holds and where its payload is.
#[derive(Debug, Clone)]
struct Head {
    numbers: [u32; 5],
    flags: [u8; 5],
    payload_len: u64,
    /// How many offsets the table after the payload holds (0: none).
    offsets: u32,
    inflate_ns: u64,
    /// Where the payload starts in the entry (from its first byte) (a multiple of [`BLOCK`] for data pages).
    payload_start: u64,
    /// The checksum of each block stored (payload, then the offset table's blocks).
    sums: Vec<u64>,
}

impl Head {
    /// The bytes stored after the head, to the end of the file.
    fn stored_len(&self) -> u64 {
        stored_len(self.payload_len, self.offsets)
    }

    /// The blocks a whole read takes: the payload's, not the table's.
    fn payload_blocks_len(&self) -> u64 {
        match self.offsets {
            0 => self.payload_len,
            _ => align_up(self.payload_len),
        }
    }
}

/// What the first bytes of an entry say.
enum Parsed {
    Head(Head),
    /// The head is longer than the bytes given: this many are needed.
    Short(usize),
    /// Not an entry of this layout for this key, or not whole.
    Bad,
}

/// The head of an entry of `file_len` bytes naming `key`, from its first bytes. Every length
/// is checked against `file_len` before anything is sized by it.
fn parse_head(bytes: &[u8], key: &[u8], file_len: u64) -> Parsed {
    if bytes.len() < FIXED || &bytes[..8] != MAGIC {
        return Parsed::Bad;
    }
    let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
    if u32_at(8) as usize != key.len() {
        return Parsed::Bad;
    }
    let offsets = u32_at(32);
    let payload_len = u64_at(36);
    let kind = bytes[52];
    if offsets != 0 && !aligned(kind) {
        return Parsed::Bad;
    }
    let stored = stored_len(payload_len, offsets);
    let blocks = stored.div_ceil(BLOCK);
    let payload_start = payload_start(key.len(), stored, aligned(kind));
    if payload_start.checked_add(stored) != Some(file_len) {
        return Parsed::Bad;
    }
    let head_len = payload_start as usize; // at most the file's length, which the caller read
    if bytes.len() < head_len {
        return Parsed::Short(head_len);
    }
    let sum_at = head_len - CHECKSUM;
    if checksum(&bytes[..sum_at]) != u64_at(sum_at) || &bytes[FIXED..FIXED + key.len()] != key {
        return Parsed::Bad;
    }
    let sums_at = FIXED + key.len();
    Parsed::Head(Head {
        numbers: std::array::from_fn(|i| u32_at(12 + 4 * i)),
        flags: bytes[52..57].try_into().expect("5 bytes"),
        payload_len,
        offsets,
        inflate_ns: u64_at(44),
        payload_start,
        sums: (0..blocks as usize)
            .map(|i| u64_at(sums_at + CHECKSUM * i))
            .collect(),
    })
}

/// Whether `bytes`, the stored bytes' (payload, then offset table) from `at` (a multiple of
/// [`BLOCK`] from the payload's start), match their blocks' checksums.
fn blocks_whole(head: &Head, at: u64, bytes: &[u8]) -> bool {
    let first = (at / BLOCK) as usize;
    bytes
        .chunks(BLOCK as usize)
        .enumerate()
        .all(|(i, block)| head.sums.get(first + i) == Some(&checksum(block)))
}

/// The head of `entry` naming `key`, checked, and the bytes read for it (its first block, or
/// more for a longer head); `None` when it cannot be read or is not a whole head for `key`.
fn read_head(entry: &Opened, key: &[u8]) -> Option<(Head, Vec<u8>)> {
    let len = entry.spot.len;
    let mut buf = vec![0u8; BLOCK.min(len) as usize];
    entry.read_at(&mut buf, 0).ok()?;
    let mut parsed = parse_head(&buf, key, len);
    if let Parsed::Short(n) = parsed {
        let have = buf.len();
        buf.resize(n, 0);
        entry.read_at(&mut buf[have..], have as u64).ok()?;
        parsed = parse_head(&buf, key, len);
    }
    match parsed {
        Parsed::Head(head) => Some((head, buf)),
        Parsed::Short(_) | Parsed::Bad => None,
    }
}

/// What `entry` holds, when it is whole and names `key`, read by its head and its payload's
/// blocks (not its offset table); `None` otherwise.
fn read_payload(entry: &Opened, key: &[u8]) -> Option<Held> {
    let (head, mut buf) = read_head(entry, key)?;
    let start = head.payload_start as usize;
    // The head's length and the payload's are checked against the entry's by `parse_head`.
    let end = start + head.payload_blocks_len() as usize;
    let have = buf.len().min(end);
    buf.resize(end, 0);
    entry.read_at(&mut buf[have..], have as u64).ok()?;
    if !blocks_whole(&head, 0, &buf[start..]) {
        return None;
    }
    let payload = Bytes::from(buf).slice(start..start + head.payload_len as usize);
    held(&head, payload)
}

/// What an entry with `head` holds, its payload being `buf`.
fn held(head: &Head, buf: Bytes) -> Option<Held> {
    let (n, flags) = (&head.numbers, &head.flags);
    if flags[0] == BYTES {
        return Some(Held::Bytes(buf));
    }
    let encoding = encoding_of(flags[1])?;
    let page = match flags[0] {
        0 => Page::DataPage {
            buf,
            num_values: n[0],
            encoding,
            def_level_encoding: encoding_of(flags[2])?,
            rep_level_encoding: encoding_of(flags[3])?,
            statistics: None,
        },
        1 => Page::DataPageV2 {
            buf,
            num_values: n[0],
            encoding,
            num_nulls: n[1],
            num_rows: n[2],
            def_levels_byte_len: n[3],
            rep_levels_byte_len: n[4],
            is_compressed: false,
            statistics: None,
        },
        2 => Page::DictionaryPage {
            buf,
            num_values: n[0],
            encoding,
            is_sorted: flags[4] != 0,
        },
        _ => return None,
    };
    Some(Held::Page(page, head.inflate_ns, None))
}

/// How a data page kept in an entry lays out its payload (what its header said).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DataShape {
    pub num_values: usize,
    pub encoding: Encoding,
    pub levels: DataLevels,
}

/// Where a data page's levels are in its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DataLevels {
    /// Version 1: at the payload's start, in `def_level_encoding`.
    V1 { def_level_encoding: Encoding },
    /// Version 2: repetition then definition levels of these lengths.
    V2 { rep_len: usize, def_len: usize },
}

/// An entry opened to be read by blocks ([`DiskTier::open_entries`]): its head, read and
/// checked, and its pack's file.
pub(crate) struct EntryFile {
    entry: Opened,
    head: Head,
    /// Whether the entries opened with it were found outside the OS page cache.
    cold: bool,
    /// The directory and its names, to remove the pack when a block is damaged.
    dir: PathBuf,
    names: Arc<Names>,
    counts: Arc<DiskCounts>,
}

impl EntryFile {
    /// Whether the entries opened with this one were found outside the OS page cache (then
    /// [`Self::advise`] is worth its system calls).
    pub(crate) fn cold(&self) -> bool {
        self.cold
    }

    /// Where the payload is in the entry (from its first byte).
    pub(crate) fn payload(&self) -> Range<u64> {
        self.head.payload_start..self.head.payload_start + self.head.payload_len
    }

    /// Where the offset table of the page's values is in the entry (from its first byte), when it has one:
    /// u32 offsets from the values' start, one per value and one past the last.
    pub(crate) fn offset_table(&self) -> Option<Range<u64>> {
        let start = self.head.payload_start + align_up(self.head.payload_len);
        (self.head.offsets > 0).then(|| start..start + 4 * u64::from(self.head.offsets))
    }

    /// What decompressing the page took when it was kept.
    pub(crate) fn inflate_ns(&self) -> u64 {
        self.head.inflate_ns
    }

    /// The layout of the data page the entry holds; `None` for anything else.
    pub(crate) fn data_shape(&self) -> Option<DataShape> {
        let (n, flags) = (&self.head.numbers, &self.head.flags);
        let levels = match flags[0] {
            0 => DataLevels::V1 {
                def_level_encoding: encoding_of(flags[2])?,
            },
            1 => DataLevels::V2 {
                rep_len: n[4] as usize,
                def_len: n[3] as usize,
            },
            _ => return None,
        };
        Some(DataShape {
            num_values: n[0] as usize,
            encoding: encoding_of(flags[1])?,
            levels,
        })
    }

    /// The blocks covering `ranges` (offsets in the entry (from its first byte), inside the payload or the
    /// offset table, ascending), read and each checked: `(offset, bytes)` pieces. `None` when a
    /// read fails or a block does not match its checksum: the entry's pack is then removed.
    pub(crate) fn read(&self, ranges: &[Range<u64>]) -> Option<Vec<(u64, Bytes)>> {
        let mut out = Vec::with_capacity(ranges.len());
        for r in self.blocks(ranges) {
            let mut buf = vec![0u8; (r.end - r.start) as usize];
            let whole = self.entry.read_at(&mut buf, r.start).is_ok()
                && blocks_whole(&self.head, r.start - self.head.payload_start, &buf);
            if !whole {
                remove_pack(&self.dir, &self.names, &self.counts, self.entry.spot.pack);
                return None;
            }
            out.push((r.start, Bytes::from(buf)));
        }
        Some(out)
    }

    /// Asks the kernel to load the blocks covering `ranges` in the background (see
    /// [`Self::read`]): the reads of many entries then wait for the device together.
    pub(crate) fn advise(&self, ranges: &[Range<u64>]) {
        for r in self.blocks(ranges) {
            self.entry.advise(r);
        }
    }

    /// `ranges` widened to whole blocks of what is stored, clipped to it, merged when they
    /// touch.
    fn blocks(&self, ranges: &[Range<u64>]) -> Vec<Range<u64>> {
        let start = self.head.payload_start;
        let end = start + self.head.stored_len();
        let mut out: Vec<Range<u64>> = Vec::new();
        for r in ranges {
            let s = start + (r.start.max(start) - start) / BLOCK * BLOCK;
            let e = (start + align_up(r.end.max(start) - start)).min(end);
            if s >= e {
                continue;
            }
            match out.last_mut() {
                Some(last) if s <= last.end && s >= last.start => last.end = last.end.max(e),
                _ => out.push(s..e),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::Identity;

    fn file(mtime: i64) -> Arc<FileKey> {
        FileKey::new(
            "/data/a.parquet",
            &Identity {
                len: 100,
                etag: Some("\"e\"".into()),
                modified_ns: Some(mtime),
                stamp: None,
            },
        )
    }

    fn pages() -> Vec<Page> {
        vec![
            Page::DataPage {
                buf: Bytes::from_static(b"\x02\x00\x00\x00\x03\x01values"),
                num_values: 7,
                encoding: Encoding::RLE_DICTIONARY,
                def_level_encoding: Encoding::RLE,
                rep_level_encoding: Encoding::RLE,
                statistics: None,
            },
            Page::DataPageV2 {
                buf: Bytes::from_static(b"levels+values"),
                num_values: 9,
                encoding: Encoding::DELTA_BINARY_PACKED,
                num_nulls: 2,
                num_rows: 8,
                def_levels_byte_len: 3,
                rep_levels_byte_len: 1,
                is_compressed: false,
                statistics: None,
            },
            Page::DictionaryPage {
                buf: Bytes::new(),
                num_values: 0,
                encoding: Encoding::PLAIN,
                is_sorted: true,
            },
        ]
    }

    fn same(a: &Page, b: &Page) -> bool {
        format!("{a:?}") == format!("{b:?}")
    }

    /// The pack holding the entry named `key`, and where the entry starts in it.
    fn spot(tier: &DiskTier, key: &[u8]) -> (PathBuf, usize) {
        let spot = tier.names.spot(name(key)).expect("an entry");
        (
            tier.dir.join(names::file_name(spot.pack, EXTENSION)),
            spot.at as usize,
        )
    }

    /// Waits until the writer has written `n` entries in all.
    fn written(tier: &DiskTier, n: u64) {
        for _ in 0..500 {
            if tier.counts.written.load(Relaxed) >= n {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        panic!("the writer wrote {:?} of {n}", tier.counts.written);
    }

    #[test]
    fn every_kind_of_page_comes_back_as_it_went_in() {
        let dir = tempfile::tempdir().unwrap();
        let tier = DiskTier::open(dir.path(), 1 << 20).unwrap();
        let f = file(1);
        for (i, p) in pages().iter().enumerate() {
            tier.put(&f, i as u64 * 100, p, 1000 + i as u64, None, false);
        }
        written(&tier, 3);
        for (i, p) in pages().iter().enumerate() {
            let (back, inflate_ns) = tier.get(&f, i as u64 * 100).expect("cached");
            assert!(same(&back, p), "{back:?} != {p:?}");
            assert_eq!(inflate_ns, 1000 + i as u64);
        }
        // A page's key: the file's location and identity, then the offset.
        let want = format!("{}\0{:?}\0{}", f.location(), f.identity(), 200);
        assert_eq!(entry_key(&f, 200), want.into_bytes());
        // Another version of the file, or another offset: a miss.
        assert!(tier.get(&file(2), 0).is_none());
        assert!(tier.get(&f, 1).is_none());
        // Another process (a second tier over the same directory) finds them.
        let other = DiskTier::open(dir.path(), 1 << 20).unwrap();
        assert!(other.get(&f, 100).is_some());
        assert!(other.held() > 0);
    }

    #[test]
    fn a_local_page_is_written_on_its_second_miss_in_any_process() {
        let dir = tempfile::tempdir().unwrap();
        let local = |changed_ns| {
            FileKey::new(
                "/data/local.parquet",
                &Identity {
                    len: 100,
                    etag: None,
                    modified_ns: Some(1),
                    stamp: Some(crate::io::FileStamp {
                        device: 1,
                        inode: 2,
                        changed_ns,
                    }),
                },
            )
        };
        let page = &pages()[0];
        let tier = DiskTier::open(dir.path(), 1 << 20).unwrap();
        tier.put(&local(1), 0, page, 5, None, false);
        tier.flush(std::time::Duration::from_secs(10));
        assert!(!tier.contains(&local(1), 0), "written on a first miss");
        assert_eq!(tier.counts.first_misses.load(Relaxed), 1);
        assert!(
            tier.queue.get().is_none(),
            "a writer thread before anything to write"
        );
        // Missed again in this process: written.
        tier.put(&local(1), 0, page, 5, None, false);
        written(&tier, 1);
        assert!(tier.get(&local(1), 0).is_some());
        // Another page, first missed by one process, is written on its miss by the next.
        tier.put(&local(1), 100, page, 5, None, false);
        tier.flush(std::time::Duration::from_secs(10));
        let next = DiskTier::open(dir.path(), 1 << 20).unwrap();
        next.put(&local(1), 100, page, 5, None, false);
        written(&next, 1);
        assert!(next.get(&local(1), 100).is_some());
        // The file changed: another key, a first miss again.
        next.put(&local(2), 100, page, 5, None, false);
        next.flush(std::time::Duration::from_secs(10));
        assert!(!next.contains(&local(2), 100));
        // Asked to (a process that reads everything again), or filling the cache: the first.
        next.put(&local(3), 0, page, 5, None, true);
        next.set_waits(true);
        next.put(&local(4), 0, page, 5, None, false);
        written(&next, 3);
        assert!(next.contains(&local(3), 0) && next.contains(&local(4), 0));
        // Emptied: the asks go with the entries.
        clear_dir(dir.path());
        assert!(!dir.path().join(asked::LOG).exists());
    }

    #[test]
    fn metadata_ranges_come_back_under_their_object_version_only() {
        let dir = tempfile::tempdir().unwrap();
        let tier = DiskTier::open(dir.path(), 1 << 20).unwrap();
        let v1 = file(1);
        let store: &dyn MetadataStore = &tier;
        let (loc, id) = (v1.location(), v1.identity());
        let footer = Bytes::from_static(b"a footer's bytes");
        store.put(loc, id, &(100..116), &footer);
        written(&tier, 1);
        assert_eq!(store.get(loc, id, &(100..116)), Some(footer));
        // Another range, another version, a page lookup at the same offset: misses.
        assert_eq!(store.get(loc, id, &(100..117)), None);
        assert_eq!(store.get(loc, file(2).identity(), &(100..116)), None);
        assert!(tier.get(&v1, 100).is_none());
        assert_eq!(tier.counts.metadata_hits.load(Relaxed), 1);
        assert_eq!(tier.counts.hits.load(Relaxed), 0);
        // A flipped byte: a miss, and the entry's pack is removed.
        let (path, _) = spot(&tier, &metadata_key(loc, id, &(100..116)));
        let mut bytes = fs::read(&path).unwrap();
        let at = bytes.len() - 20;
        bytes[at] ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert_eq!(store.get(loc, id, &(100..116)), None);
        assert!(!path.exists());
    }

    #[test]
    fn a_damaged_entry_is_a_miss_and_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let tier = DiskTier::open(dir.path(), 1 << 20).unwrap();
        let f = file(1);
        let page = &pages()[0];
        let entry_len = encode(&Held::Page(page.clone(), 0, None), &entry_key(&f, 0))
            .unwrap()
            .len();
        // Every single flipped byte, and every truncation, is caught (one in 61 of the zeros
        // before the payload).
        let padding = FIXED + entry_key(&f, 0).len() + 2 * CHECKSUM..BLOCK as usize - CHECKSUM;
        let places = (0..entry_len).filter(|at| !padding.contains(at) || at % 61 == 0);
        let tried = places.clone().count() as u64;
        for at in places {
            for damage in ["flip", "truncate"] {
                let before = tier.counts.written.load(Relaxed);
                tier.put(&f, 0, page, 0, None, false);
                written(&tier, before + 1);
                let (path, base) = spot(&tier, &entry_key(&f, 0));
                let mut bytes = fs::read(&path).unwrap();
                if damage == "flip" {
                    bytes[base + at] ^= 0x10;
                } else {
                    bytes.truncate(base + at);
                }
                fs::write(&path, &bytes).unwrap();
                assert!(tier.get(&f, 0).is_none(), "{damage} at {at}");
                assert!(!path.exists(), "{damage} at {at}: its pack is removed");
            }
        }
        assert_eq!(tier.counts.corrupt.load(Relaxed), 2 * tried);
    }

    #[test]
    fn an_entry_is_read_by_blocks_each_checked() {
        let dir = tempfile::tempdir().unwrap();
        let tier = DiskTier::open(dir.path(), 1 << 20).unwrap();
        let f = file(1);
        let values: Vec<u8> = (0..3 * BLOCK as usize + 100)
            .map(|i| (i * 7) as u8)
            .collect();
        let page = Page::DataPageV2 {
            buf: Bytes::from(values.clone()),
            num_values: 1000,
            encoding: Encoding::PLAIN,
            num_nulls: 0,
            num_rows: 1000,
            def_levels_byte_len: 0,
            rep_levels_byte_len: 0,
            is_compressed: false,
            statistics: None,
        };
        tier.put(&f, 7, &page, 55, None, false);
        written(&tier, 1);
        let mut opened = tier.open_entries(&f, &[7, 8], false);
        assert!(opened[1].is_none(), "no entry at offset 8");
        let entry = opened.remove(0).expect("the entry at 7");
        let payload = entry.payload();
        assert_eq!(payload.start % BLOCK, 0);
        assert_eq!(payload.end - payload.start, values.len() as u64);
        assert_eq!(entry.inflate_ns(), 55);
        let shape = entry.data_shape().unwrap();
        assert_eq!(shape.num_values, 1000);
        assert_eq!(shape.encoding, Encoding::PLAIN);
        assert_eq!(
            shape.levels,
            DataLevels::V2 {
                rep_len: 0,
                def_len: 0
            }
        );
        // Ranges widen to whole blocks, clipped to the payload; touching ones merge.
        let p = payload.start;
        let pieces = entry
            .read(&[
                p + 10..p + 20,
                p + 4000..p + 4100,
                p + 3 * BLOCK + 50..p + 3 * BLOCK + 60,
            ])
            .unwrap();
        let got: Vec<(u64, usize)> = pieces.iter().map(|(o, b)| (*o - p, b.len())).collect();
        assert_eq!(got, vec![(0, 2 * BLOCK as usize), (3 * BLOCK, 100)]);
        for (o, b) in &pieces {
            let at = (o - p) as usize;
            assert_eq!(&b[..], &values[at..at + b.len()]);
        }
        // A flipped byte in the third block: reading the first still works, the third fails
        // and removes the entry.
        let (path, base) = spot(&tier, &entry_key(&f, 7));
        let mut bytes = fs::read(&path).unwrap();
        bytes[base + (p + 2 * BLOCK + 5) as usize] ^= 1;
        fs::write(&path, &bytes).unwrap();
        let entry = tier.open_entries(&f, &[7], false).remove(0).unwrap();
        assert!(entry.read(std::slice::from_ref(&(p..p + 1))).is_some());
        let third = p + 2 * BLOCK..p + 2 * BLOCK + 1;
        assert!(entry.read(std::slice::from_ref(&third)).is_none());
        assert!(!path.exists());
        assert_eq!(tier.counts.corrupt.load(Relaxed), 1);
        // A damaged head: no entry, removed.
        tier.put(&f, 7, &page, 55, None, false);
        written(&tier, 2);
        let (path, base) = spot(&tier, &entry_key(&f, 7));
        let mut bytes = fs::read(&path).unwrap();
        bytes[base + 60] ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert!(tier.open_entries(&f, &[7], false)[0].is_none());
        assert!(!path.exists());
    }

    /// PLAIN byte arrays of `lens` bytes each (value `i` filled with `i as u8`).
    fn byte_arrays(lens: &[usize]) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, &len) in lens.iter().enumerate() {
            out.extend_from_slice(&(len as u32).to_le_bytes());
            out.extend(std::iter::repeat_n(i as u8, len));
        }
        out
    }

    #[test]
    fn byte_array_pages_carry_an_offset_table_read_by_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let tier = DiskTier::open(dir.path(), 16 << 20).unwrap();
        let f = file(1);
        // Empty values, short ones, and one longer than a block.
        let lens: Vec<usize> = (0..900)
            .map(|i| [0, 1, 7, 30, 5000][i % 5] * (i % 3))
            .collect();
        let values = byte_arrays(&lens);
        let levels = [3u8, 0, 0, 0, 0xAA, 0xBB, 0xCC];
        let v1 = Page::DataPage {
            buf: Bytes::from([&levels[..], &values].concat()),
            num_values: 900,
            encoding: Encoding::PLAIN,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        let v2 = Page::DataPageV2 {
            buf: Bytes::from([&levels[..5], &values].concat()),
            num_values: 900,
            encoding: Encoding::PLAIN,
            num_nulls: 0,
            num_rows: 900,
            def_levels_byte_len: 3,
            rep_levels_byte_len: 2,
            is_compressed: false,
            statistics: None,
        };
        let column = Some(ByteArrays { max_def: 1 });
        tier.put(&f, 1, &v1, 9, column, false);
        tier.put(&f, 2, &v2, 9, column, false);
        written(&tier, 2);
        for (offset, page, values_at) in [(1u64, &v1, 7u64), (2, &v2, 5)] {
            // Read whole, the page comes back as it went in (without its table).
            let (back, _) = tier.get(&f, offset).unwrap();
            assert!(same(&back, page), "{back:?}");
            let entry = tier.open_entries(&f, &[offset], false).remove(0).unwrap();
            let table = entry.offset_table().expect("an offset table");
            assert_eq!(table.start % BLOCK, 0);
            assert!(table.start >= entry.payload().end);
            assert_eq!(table.end - table.start, 4 * 901);
            // Each value found by its offsets, read by the blocks holding them.
            let offsets = entry.read(std::slice::from_ref(&table)).unwrap();
            let mut all = Vec::new();
            for (_, b) in &offsets {
                all.extend_from_slice(b);
            }
            let at = |i: usize| {
                u64::from(u32::from_le_bytes(
                    all[4 * i..4 * i + 4].try_into().unwrap(),
                ))
            };
            for i in [0, 1, 4, 5, 449, 898, 899] {
                let start = entry.payload().start + values_at;
                let r = start + at(i)..start + at(i + 1);
                let pieces = entry.read(std::slice::from_ref(&r)).unwrap();
                let (o, b) = &pieces[0];
                let v = &b[(r.start - o) as usize..(r.end - o) as usize];
                assert_eq!(
                    u32::from_le_bytes(v[..4].try_into().unwrap()) as usize,
                    lens[i]
                );
                assert!(v[4..].iter().all(|&x| x == i as u8), "value {i}");
            }
            assert_eq!(at(900), values.len() as u64);
        }
        // A flipped byte in the table: reading its block fails and removes the entry.
        let entry = tier.open_entries(&f, &[1], false).remove(0).unwrap();
        let table = entry.offset_table().unwrap();
        let (path, base) = spot(&tier, &entry_key(&f, 1));
        let mut bytes = fs::read(&path).unwrap();
        bytes[base + table.start as usize + 9] ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert!(entry
            .read(std::slice::from_ref(&(table.start..table.start + 4)))
            .is_none());
        assert!(!path.exists());
    }

    #[test]
    fn only_plain_byte_array_pages_whose_lengths_add_up_get_a_table() {
        let column = ByteArrays { max_def: 0 };
        let values = byte_arrays(&[3000, 0, 6000, 9]);
        let page = |buf: Vec<u8>, encoding| Page::DataPage {
            buf: Bytes::from(buf),
            num_values: 4,
            encoding,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        let table = offset_table(&page(values.clone(), Encoding::PLAIN), column);
        assert_eq!(table, Some(vec![0, 3004, 3008, 9012, 9025]));
        // Another encoding, a length past the end, bytes left over, a page under two blocks.
        let delta = page(values.clone(), Encoding::DELTA_LENGTH_BYTE_ARRAY);
        assert_eq!(offset_table(&delta, column), None);
        assert_eq!(
            offset_table(&page(values[..5000].to_vec(), Encoding::PLAIN), column),
            None
        );
        let longer = [&values[..], &[1, 0]].concat();
        assert_eq!(offset_table(&page(longer, Encoding::PLAIN), column), None);
        assert_eq!(
            offset_table(&page(byte_arrays(&[10, 20]), Encoding::PLAIN), column),
            None
        );
        // Levels of another encoding than RLE under a nullable column: no table.
        let bit_packed = Page::DataPage {
            buf: Bytes::from(values),
            num_values: 4,
            encoding: Encoding::PLAIN,
            #[allow(deprecated)]
            def_level_encoding: Encoding::BIT_PACKED,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        assert_eq!(offset_table(&bit_packed, ByteArrays { max_def: 1 }), None);
    }

    #[test]
    fn pages_queued_together_share_a_pack_and_a_damaged_one_takes_only_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let tier = DiskTier::open(dir.path(), 64 << 20).unwrap();
        tier.set_waits(true);
        let f = file(1);
        let page = |i: u64| Page::DataPage {
            buf: Bytes::from(vec![i as u8; 1000 + 3000 * (i as usize % 3)]),
            num_values: i as u32,
            encoding: Encoding::PLAIN,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        let n = 3 * pack::MAX_ENTRIES as u64;
        for i in 0..n {
            tier.put(&f, i, &page(i), i, None, false);
        }
        tier.flush(std::time::Duration::from_secs(30));
        assert_eq!(tier.counts.written.load(Relaxed), n);
        let packs = listing(dir.path()).len();
        // The writer takes what is queued (up to MAX_ENTRIES a pack): far fewer files than
        // pages, however fast it drains the queue.
        assert!((3..n as usize / 4).contains(&packs), "{packs} packs");
        let (entries, _) = crate::cache::disk_cache_contents(dir.path());
        assert_eq!(entries, n);
        // A new process finds every page, each as it went in.
        let other = DiskTier::open(dir.path(), 64 << 20).unwrap();
        for i in 0..n {
            let (back, inflate_ns) = other.get(&f, i).expect("cached");
            assert!(same(&back, &page(i)), "{i}");
            assert_eq!(inflate_ns, i);
        }
        // A flipped byte in one entry: that entry's pack goes, the others stay.
        let (path, base) = spot(&other, &entry_key(&f, 5));
        let mut bytes = fs::read(&path).unwrap();
        bytes[base + BLOCK as usize + 1] ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert!(other.get(&f, 5).is_none());
        assert!(!path.exists());
        let left = (0..n).filter(|&i| other.get(&f, i).is_some()).count();
        assert_eq!(listing(dir.path()).len(), packs - 1);
        assert!(left > 0 && left < n as usize, "{left}");
    }

    #[test]
    fn the_budget_bounds_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let budget = 64 << 10;
        let tier = DiskTier::open(dir.path(), budget).unwrap();
        let f = file(1);
        let page = Page::DictionaryPage {
            buf: Bytes::from(vec![5u8; 2000]),
            num_values: 1,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        };
        for i in 0..40u64 {
            tier.put(&f, i, &page, 0, None, false);
            written(&tier, i + 1);
            // Modification times tick with the kernel's coarse clock (1–10 ms): one tick apart
            // so that first in is first out here.
            std::thread::sleep(std::time::Duration::from_millis(12));
        }
        let on_disk: u64 = listing(dir.path()).iter().map(|e| e.1).sum();
        assert!(on_disk <= budget, "{on_disk} > {budget}");
        assert!(tier.counts.evicted.load(Relaxed) > 0);
        // The newest entry stays; the first went.
        assert!(tier.get(&f, 39).is_some());
        assert!(tier.get(&f, 0).is_none());
        // A page over a tenth of the budget is not written.
        let big = Page::DictionaryPage {
            buf: Bytes::from(vec![1u8; (budget / 10) as usize]),
            num_values: 1,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        };
        tier.put(&f, 1 << 30, &big, 0, None, false);
        assert!(!tier.contains(&f, 1 << 30));
        let entries = listing(dir.path()).len();
        assert_eq!(clear_dir(dir.path()) as usize, entries);
        assert!(listing(dir.path()).is_empty());
    }
}
