//! The disk tier of the page cache: decompressed pages (still encoded) in files of a cache
//! directory, so that a later process — the next query of a dashboard, a notebook restarted, a
//! Spark executor's next task — reads a page with one positioned read and no decompression.
//!
//! ```text
//! miss ─► read, decompress ─► handed on ─► queued ─► writer thread: temporary file, rename
//! get  ─► <dir>/<hash of key>.page ─► magic, lengths, key and checksum checked ─► the page
//!                                   └► anything wrong: the file is removed, a miss
//! ```
//!
//! **Never stale, never torn.** A page's file name is a 128-bit hash of its key (the file's
//! location and [`Identity`], and the page's offset), and the file repeats the whole key: a
//! changed source file is another key, and a hash collision reads as a miss. An entry is
//! written to a temporary file and renamed into place, so a reader sees a whole entry or none,
//! and two processes sharing the directory never see each other's partial writes; an entry
//! torn or flipped anyway (a crash before the data reached the disk, a bad sector) fails its
//! xxHash64 checksum and is removed. Entries are read into memory, never mapped: a file
//! truncated under a mapping would crash the process.
//!
//! **Remote metadata too.** Beside pages, entries hold byte ranges of remote files' metadata
//! (footers, page indexes, Bloom filters, sidecar blobs) under the object's ETag: the disk
//! tier is the `io::MetadataStore`, so a repeated remote query reads them from here.
//!
//! **Bounded.** A byte budget over the directory's entries: past it, the writer removes the
//! oldest entries (first in, first out, by modification time) until 90% of it is left. The
//! count starts from a listing of the directory and is recounted at each eviction, so processes
//! sharing it converge on the same view. A write that finds the queue full is dropped: a miss
//! never waits for the disk.

use std::fs;
use std::hash::Hasher;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::Arc;

use bytes::Bytes;
use parquet::basic::Encoding;
use parquet::column::page::Page;
use twox_hash::XxHash64;

use super::FileKey;
use crate::io::{Identity, MetadataStore};
use std::ops::Range;

/// The first bytes of every entry (the last is the layout's version).
const MAGIC: &[u8; 8] = b"TAMISPG\x02";
/// Magic, 6 × u32, u64 payload length, u64 decompression nanoseconds, 5 bytes of kind and
/// encodings, 3 reserved.
const HEADER: usize = 8 + 6 * 4 + 8 + 8 + 8;
/// An entry ends with the xxHash64 of everything before it.
const CHECKSUM: usize = 8;
/// Entries waiting for the writer; beyond this a write is dropped.
const QUEUE: usize = 256;
/// Bytes of pages waiting for the writer; beyond this a write is dropped (the queued pages
/// hold their decompressed buffers).
const MAX_PENDING_BYTES: u64 = 64 << 20;

/// What an entry holds: a decompressed page and what decompressing it took, or bytes of a
/// remote file's metadata as read ([`crate::io::MetadataStore`]).
pub(crate) enum Held {
    Page(Page, u64),
    Bytes(Bytes),
}

impl Held {
    fn len(&self) -> u64 {
        match self {
            Held::Page(page, _) => page.buffer().len() as u64,
            Held::Bytes(bytes) => bytes.len() as u64,
        }
    }
}

/// What the writer is handed: the entry's path, its key, what it holds.
type Queued = (PathBuf, Vec<u8>, Held);
/// The extension of entries (anything else in the directory is left alone).
const EXTENSION: &str = "page";

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
    pub(crate) dropped: AtomicU64,
    pub(crate) corrupt: AtomicU64,
    pub(crate) evicted: AtomicU64,
}

/// A cache directory and its writer thread.
pub(crate) struct DiskTier {
    dir: PathBuf,
    budget: u64,
    held: Arc<AtomicU64>,
    queue: SyncSender<Queued>,
    /// Entries queued and not yet written.
    pending: Arc<AtomicU64>,
    /// Bytes of the pages queued (they hold their buffers until written).
    pending_bytes: Arc<AtomicU64>,
    /// Whether a write waits for room in the queue instead of being dropped (`tamis cache
    /// warm`, which is there to fill the cache).
    waits: AtomicBool,
    pub(crate) counts: Arc<DiskCounts>,
}

impl DiskTier {
    /// The tier over `dir` (created if missing) with a budget of `budget` bytes.
    pub(crate) fn open(dir: &Path, budget: u64) -> std::io::Result<DiskTier> {
        create_dir(dir)?;
        sweep_temporaries(dir, std::time::Duration::from_secs(3600));
        let held = Arc::new(AtomicU64::new(listing(dir).iter().map(|e| e.1).sum()));
        let counts = Arc::new(DiskCounts::default());
        let (queue, entries) = sync_channel::<Queued>(QUEUE);
        let pending = Arc::new(AtomicU64::new(0));
        let pending_bytes = Arc::new(AtomicU64::new(0));
        let (writer_dir, writer_held, writer_counts, writer_pending, writer_bytes) = (
            dir.to_path_buf(),
            held.clone(),
            counts.clone(),
            pending.clone(),
            pending_bytes.clone(),
        );
        std::thread::Builder::new()
            .name("tamis-disk-cache".into())
            .spawn(move || {
                for (path, key, held) in entries {
                    writer_bytes.fetch_sub(held.len(), Relaxed);
                    // Encoded here, not on the scan's thread: a miss costs the scan a queue push.
                    let entry = encode(&held, &key);
                    drop(held);
                    let Some(entry) = entry.filter(|e| (e.len() as u64) <= budget / 10) else {
                        writer_pending.fetch_sub(1, Relaxed);
                        continue; // an encoding entries do not number, or a page too large
                    };
                    if write_entry(&writer_dir, &path, &entry).is_ok() {
                        writer_counts.written.fetch_add(1, Relaxed);
                        let now =
                            writer_held.fetch_add(entry.len() as u64, Relaxed) + entry.len() as u64;
                        if now > budget {
                            let (left, removed) = evict(&writer_dir, budget / 10 * 9);
                            writer_held.store(left, Relaxed);
                            writer_counts.evicted.fetch_add(removed, Relaxed);
                        }
                    }
                    writer_pending.fetch_sub(1, Relaxed);
                }
            })?;
        Ok(DiskTier {
            dir: dir.to_path_buf(),
            budget,
            held,
            queue,
            pending,
            pending_bytes,
            waits: AtomicBool::new(false),
            counts,
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

    /// The entry's file: a hash of the layout's version and the key, so that processes of
    /// two tamis versions sharing a directory never read (and remove as damaged) each other's
    /// entries; the older ones age out under the budget.
    fn path(&self, key: &[u8]) -> PathBuf {
        let hash = |seed| {
            let mut h = XxHash64::with_seed(seed);
            h.write(MAGIC);
            h.write(key);
            h.finish()
        };
        self.dir
            .join(format!("{:016x}{:016x}.{EXTENSION}", hash(0), hash(1)))
    }

    /// Whether an entry for the page exists (not read or checked: for planning reads).
    pub(crate) fn contains(&self, file: &FileKey, offset: u64) -> bool {
        self.path(&entry_key(file, offset)).is_file()
    }

    /// The page of `file` at `offset` from its entry, when one exists and is whole, with what
    /// decompressing it cost; an entry that is not (torn, flipped, another key's) is removed.
    pub(crate) fn get(&self, file: &FileKey, offset: u64) -> Option<(Page, u64)> {
        match self.read(&entry_key(file, offset))? {
            Held::Page(page, inflate_ns) => {
                self.counts.hits.fetch_add(1, Relaxed);
                Some((page, inflate_ns))
            }
            Held::Bytes(_) => None,
        }
    }

    /// What the entry named `key` holds, when it exists and is whole; one that is not is
    /// removed.
    fn read(&self, key: &[u8]) -> Option<Held> {
        let path = self.path(key);
        let bytes = fs::read(&path).ok()?;
        match decode(Bytes::from(bytes), key) {
            Some(held) => Some(held),
            None => {
                self.counts.corrupt.fetch_add(1, Relaxed);
                let _ = fs::remove_file(&path);
                None
            }
        }
    }

    /// Hands the entries of `file`'s pages at `offsets` to the kernel to load in the background
    /// (`POSIX_FADV_WILLNEED`) when the first of them is not in the OS page cache: a cold scan
    /// then waits for the device once for all of them, not once an entry. One probe stands for
    /// all (a scan's entries are mostly cold or warm together), so a warm scan pays one read.
    #[cfg(target_os = "linux")]
    pub(crate) fn will_need(&self, file: &FileKey, offsets: &[u64]) {
        let mut entries = offsets
            .iter()
            .filter_map(|&o| fs::File::open(self.path(&entry_key(file, o))).ok());
        let Some(first) = entries.next() else {
            return;
        };
        let mut byte = [0u8; 1];
        let mut bufs = [std::io::IoSliceMut::new(&mut byte)];
        let cold = matches!(
            rustix::io::preadv2(&first, &mut bufs, 0, rustix::io::ReadWriteFlags::NOWAIT),
            Err(rustix::io::Errno::AGAIN)
        );
        if cold {
            for f in std::iter::once(first).chain(entries) {
                // Advice only: a file system that ignores it reads when asked, as before.
                let _ = rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::WillNeed);
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn will_need(&self, _file: &FileKey, _offsets: &[u64]) {}

    /// Queues `page` of `file` at `offset` for writing: the page itself (its buffer shared,
    /// not copied), encoded by the writer. Dropped when the queue is full or holds
    /// [`MAX_PENDING_BYTES`] already (unless writes wait), when one page would take a tenth of
    /// the budget, or when its encoding is one entries do not number.
    pub(crate) fn put(&self, file: &FileKey, offset: u64, page: &Page, inflate_ns: u64) {
        let held = Held::Page(page.clone(), inflate_ns);
        self.queue_entry(entry_key(file, offset), held);
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
        let item = (self.path(&key), key, held);
        let sent = if waits {
            self.queue.send(item).is_ok()
        } else {
            match self.queue.try_send(item) {
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

/// Removes the entries and temporary files of a cache directory; returns the entries removed.
pub(crate) fn clear_dir(dir: &Path) -> u64 {
    let mut removed = 0;
    for (path, _, _) in listing(dir) {
        if fs::remove_file(path).is_ok() {
            removed += 1;
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

/// A cache directory's entries: path, bytes and modification time, oldest first.
pub(crate) fn listing(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            let path = e.path();
            if path.extension().is_some_and(|x| x == EXTENSION) {
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

/// Removes the oldest entries until at most `keep` bytes are left: (bytes left, removed).
fn evict(dir: &Path, keep: u64) -> (u64, u64) {
    let entries = listing(dir);
    let mut left: u64 = entries.iter().map(|e| e.1).sum();
    let mut removed = 0;
    for (path, len, _) in entries {
        if left <= keep {
            break;
        }
        if fs::remove_file(&path).is_ok() {
            left -= len;
            removed += 1;
        }
    }
    (left, removed)
}

/// Writes `entry` to a temporary file of `dir` and renames it to `path`: readers, in this
/// process or another, see the whole entry or none.
fn write_entry(dir: &Path, path: &Path, entry: &[u8]) -> std::io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    // Unique across processes of other hosts or containers sharing the directory (same pid):
    // the clock's nanoseconds too, and never opened over another writer's file.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let tmp = dir.join(format!(
        ".tmp-{}-{nanos}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Relaxed)
    ));
    let written = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| f.write_all(entry));
    match written.and_then(|()| fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// The bytes that name a page: its file's location and identity, and its offset.
fn entry_key(file: &FileKey, offset: u64) -> Vec<u8> {
    format!("{}\0{:?}\0{offset}", file.location(), file.identity()).into_bytes()
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

fn checksum(bytes: &[u8]) -> u64 {
    let mut h = XxHash64::with_seed(0);
    h.write(bytes);
    h.finish()
}

/// An entry: header, key, the page's (decompressed) bytes or the metadata's, checksum.
fn encode(held: &Held, key: &[u8]) -> Option<Vec<u8>> {
    let (page, inflate_ns) = match held {
        Held::Page(page, inflate_ns) => (page, *inflate_ns),
        Held::Bytes(bytes) => return Some(entry(key, bytes, 0, [BYTES, 0, 0, 0, 0], [0; 5])),
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
    Some(entry(key, page.buffer(), inflate_ns, flags, numbers))
}

/// The kind byte of an entry holding metadata bytes (pages: 0, 1, 2).
const BYTES: u8 = 3;

/// An entry's bytes (see [`HEADER`]); a key over 4 GiB is refused by the caller's budget long
/// before (entries are at most a tenth of it).
fn entry(
    key: &[u8],
    payload: &[u8],
    inflate_ns: u64,
    flags: [u8; 5],
    numbers: [u32; 5],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + key.len() + payload.len() + CHECKSUM);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    for n in numbers {
        out.extend_from_slice(&n.to_le_bytes());
    }
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&inflate_ns.to_le_bytes());
    out.extend_from_slice(&flags);
    out.extend_from_slice(&[0, 0, 0]);
    out.extend_from_slice(key);
    out.extend_from_slice(payload);
    let sum = checksum(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// What an entry holds, when the entry is whole and names `key`; `None` otherwise.
fn decode(entry: Bytes, key: &[u8]) -> Option<Held> {
    if entry.len() < HEADER + CHECKSUM || &entry[..8] != MAGIC {
        return None;
    }
    let body = entry.len() - CHECKSUM;
    let stored = u64::from_le_bytes(entry[body..].try_into().ok()?);
    if checksum(&entry[..body]) != stored {
        return None;
    }
    let u32_at = |i: usize| u32::from_le_bytes(entry[i..i + 4].try_into().unwrap());
    let key_len = u32_at(8) as usize;
    let n: Vec<u32> = (0..5).map(|i| u32_at(12 + 4 * i)).collect();
    let payload_len = u64::from_le_bytes(entry[32..40].try_into().ok()?);
    let inflate_ns = u64::from_le_bytes(entry[40..48].try_into().ok()?);
    let flags = &entry[48..56];
    let key_end = HEADER.checked_add(key_len)?;
    if (body as u64).checked_sub(key_end as u64)? != payload_len || &entry[HEADER..key_end] != key {
        return None;
    }
    let buf = entry.slice(key_end..body);
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
    Some(Held::Page(page, inflate_ns))
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
            tier.put(&f, i as u64 * 100, p, 1000 + i as u64);
        }
        written(&tier, 3);
        for (i, p) in pages().iter().enumerate() {
            let (back, inflate_ns) = tier.get(&f, i as u64 * 100).expect("cached");
            assert!(same(&back, p), "{back:?} != {p:?}");
            assert_eq!(inflate_ns, 1000 + i as u64);
        }
        // Another version of the file, or another offset: a miss.
        assert!(tier.get(&file(2), 0).is_none());
        assert!(tier.get(&f, 1).is_none());
        // Another process (a second tier over the same directory) finds them.
        let other = DiskTier::open(dir.path(), 1 << 20).unwrap();
        assert!(other.get(&f, 100).is_some());
        assert!(other.held() > 0);
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
        // A flipped byte: a miss, and the entry is removed.
        let path = tier.path(&metadata_key(loc, id, &(100..116)));
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
        let entry_len = encode(&Held::Page(page.clone(), 0), &entry_key(&f, 0))
            .unwrap()
            .len();
        // Every single flipped byte, and every truncation, is caught.
        for at in 0..entry_len {
            for damage in ["flip", "truncate"] {
                let before = tier.counts.written.load(Relaxed);
                tier.put(&f, 0, page, 0);
                written(&tier, before + 1);
                let path = tier.path(&entry_key(&f, 0));
                let mut bytes = fs::read(&path).unwrap();
                if damage == "flip" {
                    bytes[at] ^= 0x10;
                } else {
                    bytes.truncate(at);
                }
                fs::write(&path, &bytes).unwrap();
                assert!(tier.get(&f, 0).is_none(), "{damage} at {at}");
                assert!(!path.exists(), "{damage} at {at}: the entry is removed");
            }
        }
        assert_eq!(tier.counts.corrupt.load(Relaxed), 2 * entry_len as u64);
    }

    #[test]
    fn the_budget_bounds_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let budget = 64 << 10;
        let tier = DiskTier::open(dir.path(), budget).unwrap();
        let f = file(1);
        let page = Page::DictionaryPage {
            buf: Bytes::from(vec![5u8; 4000]),
            num_values: 1,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        };
        for i in 0..40u64 {
            tier.put(&f, i, &page, 0);
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
        tier.put(&f, 1 << 30, &big, 0);
        assert!(!tier.contains(&f, 1 << 30));
        let entries = listing(dir.path()).len();
        assert_eq!(clear_dir(dir.path()) as usize, entries);
        assert!(listing(dir.path()).is_empty());
    }
}
