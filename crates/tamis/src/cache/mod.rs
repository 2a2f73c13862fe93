//! Decompressed pages kept in memory across scans: the memory tier of paper 000's IO cache.
//!
//! A page of a compressed column chunk is kept once decompressed (from its second read, below)
//! — decompressed but still encoded (dictionary codes bit-packed, PLAIN values, levels), exactly
//! as the page reader hands it to the decoders — so a later scan of the same page neither reads its bytes nor
//! decompresses them, and every in-place kernel runs on it unchanged. On the needle queries of
//! the `selectivity` suite reads and decompression are 90 % of the time (`BENCHMARKS.md`).
//!
//! ```text
//! ColumnChunk wants page p ─► key (file location, file identity, p's offset)
//!     hit  ─► the cached page: no read, no decompression
//!     miss ─► read, decompress ─► asked for before? kept (in a buffer of its exact size)
//!                               ─► handed on
//! ```
//!
//! **Never stale.** The key holds the file's [`Identity`] as the scan opened it — length, mtime,
//! and for local files device, inode and ctime (an in-place rewrite of the same size moves the
//! ctime; a replacement changes the inode); for objects the ETag. A changed file is another
//! key, so its old pages are never served; they age out. Files whose identity cannot tell two
//! versions apart are not cached: no ctime and no ETag, or a ctime less than a second old (a
//! rewrite within the same tick of the file system's clock would keep it).
//!
//! **Bounded.** One process-wide cache with a byte budget ([`set_page_cache_bytes`], or the
//! [`PAGE_CACHE_ENV`] environment variable; default [`default_page_cache_bytes`], a sixteenth
//! of the machine's memory; `0` turns it off), evicted by `quick_cache`'s CLOCK-PRO, under
//! which pages read once by a large scan leave before pages read again.
//!
//! **Kept on a second read.** A page enters the memory tier when it is asked for a second time
//! while the tier still remembers the first ask (a doorkeeper of recent asks, as TinyLFU's;
//! `Admission`), not on its first read: keeping a page takes memory the kernel must hand out
//! and zero, which on a first scan in a new process cost 10–16 % over the cache off
//! (`BENCHMARKS.md`), and most pages of a one-off scan are never read again. A scan that knows
//! which of its columns another scan reads soon keeps their pages on the first read
//! ([`crate::Scan::keep_pages_on_first_read`]: the SQL layer does for the columns two scans of
//! one plan read), a process may keep every first read ([`set_page_cache_keeps_first_reads`]),
//! and a second ask that arrives while the first is still decompressing the page has it kept
//! too.
//!
//! **Decompressed once.** A scan that misses a page of an indexed chunk claims it until it has
//! decompressed it; another scan asking for the page meanwhile (a query's two scans of one
//! table, the partitions of one scan) waits for that page instead of decompressing it again.
//! (A dictionary read alone for pruning, and chunks without an offset index, are not claimed.) Uncompressed chunks are not
//! cached: the operating system's page cache already holds their bytes, and sub-page reads skip
//! what a scan does not need.
//!
//! **On disk too.** With a cache directory ([`set_disk_cache`], or [`DISK_CACHE_ENV`]) a page
//! missed in memory is looked up there before it is read and decompressed, and a page
//! decompressed is also written there, by a background thread (`cache/disk.rs`): the next process
//! reading it pays one positioned read and no decompression. A local file's page is written on
//! its second miss, which the directory remembers across processes (`cache/asked.rs`); a remote
//! file's on its first, as its next read would cost a round trip. A program should call
//! [`flush_disk_cache`] before it exits, as the CLI and the Python package do: a library's
//! statics are not dropped at exit, so pages still queued and the first misses not yet
//! recorded would be lost. Nothing read is ever wrong for it; the next process writes them
//! later.

mod asked;
pub(crate) mod disk;
mod names;
mod pack;

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};

use parquet::column::page::Page;
use quick_cache::sync::{Cache, DefaultLifecycle, GuardResult, PlaceholderGuard};
use quick_cache::{DefaultHashBuilder, Weighter};

use crate::error::{Error, Result};
use crate::io::Identity;
use disk::{DiskTier, EntryFile};

/// Which version of which file a page belongs to.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct FileKey {
    location: String,
    identity: Identity,
    /// The location and identity as the disk tier's keys begin (`disk.rs`, `entry_key`):
    /// formatted once, not once a page lookup (a `Debug` of the identity each time was a few
    /// per cent of a first scan through a cache directory).
    key_prefix: String,
}

/// A local file changed less than this long ago is not cached: file systems stamp ctime from a
/// coarse clock (a tick of 1–10 ms on Linux, up to seconds elsewhere), so a rewrite of the same
/// size within one tick would keep the identity; once this long has passed, any change moves
/// the ctime past the one the key holds (git's "racy clean" rule).
const RACY: std::time::Duration = std::time::Duration::from_secs(1);

impl FileKey {
    #[cfg(test)]
    pub(crate) fn location(&self) -> &str {
        &self.location
    }

    pub(crate) fn identity(&self) -> &Identity {
        &self.identity
    }

    /// See `key_prefix`.
    pub(crate) fn key_prefix(&self) -> &str {
        &self.key_prefix
    }

    pub(crate) fn new(location: &str, identity: &Identity) -> Arc<FileKey> {
        Arc::new(FileKey {
            location: location.to_string(),
            identity: identity.clone(),
            key_prefix: format!("{location}\0{identity:?}\0"),
        })
    }

    /// The key of a file whose identity tells its versions apart — a local file's device,
    /// inode and ctime (changed at least [`RACY`] ago), or an object's ETag — else `None`: its
    /// pages are not cached (length and mtime alone survive a same-size copy that keeps the
    /// mtime, and an object store's `Last-Modified` has one-second resolution).
    pub(crate) fn cacheable(location: &str, identity: &Identity) -> Option<Arc<FileKey>> {
        let settled = match (&identity.stamp, &identity.etag) {
            (Some(stamp), _) => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as i64);
                now.saturating_sub(stamp.changed_ns) >= RACY.as_nanos() as i64
            }
            (None, Some(_)) => true,
            (None, None) => false,
        };
        settled.then(|| FileKey::new(location, identity))
    }
}

/// A page: its file's version and its offset in the file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PageKey {
    file: Arc<FileKey>,
    offset: u64,
}

/// A page as the memory tier keeps it: decompressed, and what decompressing it cost.
#[derive(Clone)]
struct Kept {
    page: Page,
    inflate_ns: u64,
}

/// A page found in the cache.
pub(crate) struct Hit {
    pub page: Page,
    /// Read from the disk tier (not found in memory).
    pub from_disk: bool,
    /// What decompressing the page cost when it was first read: the time this hit saved.
    pub inflate_ns: u64,
}

/// A page's weight: its bytes, and its key and bookkeeping.
#[derive(Clone)]
struct PageWeight;

/// Bytes an entry costs beyond its page's buffer (key, page fields, the cache's slot).
const ENTRY_OVERHEAD: u64 = 256;

impl Weighter<PageKey, Kept> for PageWeight {
    fn weight(&self, key: &PageKey, kept: &Kept) -> u64 {
        weight(key, &kept.page)
    }
}

/// What keeping `page` under `key` costs the budget.
fn weight(key: &PageKey, page: &Page) -> u64 {
    (page.buffer().len() + key.file.location.len()) as u64 + ENTRY_OVERHEAD
}

type Pages = Cache<PageKey, Kept, PageWeight>;
type Guard<'a> = PlaceholderGuard<
    'a,
    PageKey,
    Kept,
    PageWeight,
    DefaultHashBuilder,
    DefaultLifecycle<PageKey, Kept>,
>;

/// How long a scan waits for another scan decompressing the page it wants before it
/// decompresses the page itself (a page takes about a millisecond; the wait only bounds a
/// scan that holds a claim and stalls, as on a loaded machine or a slow store).
const CLAIM_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// A lookup's answer: the page, or a miss — claimed when the memory tier is on, so that other
/// scans wanting the page wait for this one's decompression instead of repeating it.
pub(crate) enum Lookup<'a> {
    Hit(Hit),
    Miss(Claim<'a>),
}

/// The right to keep a missed page (see [`Lookup`]); dropped without [`Claim::keep`], it
/// hands the page to the next scan waiting for it.
pub(crate) struct Claim<'a> {
    cache: &'a PageCache,
    file: Arc<FileKey>,
    offset: u64,
    guard: Option<Guard<'a>>,
    /// Admitted to the memory tier when claimed (see [`Admission`]): asked for before, or a
    /// first read the scan keeps.
    admitted: bool,
}

impl Claim<'_> {
    /// Whether [`Claim::keep`] keeps the page in memory, as far as is known before it is
    /// decompressed (a page decompressed into a buffer of its own is then kept without a copy;
    /// a page admitted later, by a second ask meanwhile, is copied).
    pub(crate) fn keeps_in_memory(&self) -> bool {
        self.guard.is_some() && self.cache.memory.is_some() && self.admitted
    }

    /// Keeps `page` (decompressed, in `inflate_ns`) as [`PageCache::keep`] does, handing it to
    /// the scans waiting for it; the page to use in its place. `own`: the page's buffer is its
    /// own and exactly its size, kept as it is instead of copied.
    pub(crate) fn keep(
        self,
        page: Page,
        own: bool,
        inflate_ns: u64,
        byte_arrays: Option<disk::ByteArrays>,
    ) -> Page {
        let Claim {
            cache,
            file,
            offset,
            guard,
            admitted,
        } = self;
        if let Some(d) = &cache.disk {
            let first_miss = FIRST_READS_KEPT.load(Relaxed);
            d.put(&file, offset, &page, inflate_ns, byte_arrays, first_miss);
        }
        let Some(m) = &cache.memory else {
            return page;
        };
        let key = PageKey { file, offset };
        // Asked for again while this scan decompressed it: kept, for the scan waiting.
        if !admitted && !m.admission.asked_again(&key) {
            return page;
        }
        match guard {
            Some(guard) => m.keep_with(key, page, own, inflate_ns, |_, kept| {
                let _ = guard.insert(kept);
            }),
            None => m.keep(key, page, inflate_ns),
        }
    }
}

/// Which missed pages the memory tier keeps: a page asked for a second time while the first
/// ask is remembered (TinyLFU's doorkeeper: recent asks in two generations, the older dropped
/// when the newer has seen a budget's worth of pages), or a page a scan says will be read
/// again. A hash collision only keeps a page early.
struct Admission {
    hasher: quick_cache::DefaultHashBuilder,
    asks: Mutex<Asks>,
}

/// Asks by page-key hash: this generation's, and the one before.
struct Asks {
    now: HashMap<u64, u8>,
    before: HashMap<u64, u8>,
    /// Bytes of the pages asked for in this generation.
    now_bytes: u64,
    /// Bytes a generation's pages reach before it becomes the older one: a page read again
    /// within the reading of one to two of these is kept.
    generation_bytes: u64,
}

/// Asks a generation holds at most, however small its pages (about 16 MiB of bookkeeping).
const GENERATION_ASKS: usize = 1 << 20;

impl Admission {
    /// Remembers the asks for between `generation_bytes` and twice as many bytes of pages.
    fn new(generation_bytes: u64) -> Admission {
        Admission {
            hasher: Default::default(),
            asks: Mutex::new(Asks {
                now: HashMap::new(),
                before: HashMap::new(),
                now_bytes: 0,
                generation_bytes,
            }),
        }
    }

    /// Counts an ask for the page of `key`, of about `bytes`; whether it was asked for before
    /// (still remembered).
    fn ask(&self, key: &PageKey, bytes: u64) -> bool {
        let hash = self.hasher.hash_one(key);
        let mut asks = self.asks.lock().unwrap_or_else(|e| e.into_inner());
        let earlier = asks.before.remove(&hash).unwrap_or(0);
        let count = asks.now.entry(hash).or_insert(earlier);
        *count = count.saturating_add(1);
        let again = *count > 1;
        asks.now_bytes = asks.now_bytes.saturating_add(bytes);
        if asks.now_bytes >= asks.generation_bytes || asks.now.len() >= GENERATION_ASKS {
            asks.before = std::mem::take(&mut asks.now);
            asks.now_bytes = 0;
        }
        again
    }

    /// Whether the page of `key` has been asked for more than once (not counted as an ask).
    fn asked_again(&self, key: &PageKey) -> bool {
        let hash = self.hasher.hash_one(key);
        let asks = self.asks.lock().unwrap_or_else(|e| e.into_inner());
        let count = asks.now.get(&hash).or_else(|| asks.before.get(&hash));
        count.is_some_and(|&c| c > 1)
    }
}

/// The process-wide page cache: a memory tier, a disk tier, or both.
pub(crate) struct PageCache {
    memory: Option<Arc<MemoryTier>>,
    disk: Option<Arc<DiskTier>>,
}

/// Pages in memory under a byte budget.
struct MemoryTier {
    pages: Pages,
    budget: u64,
    admission: Admission,
}

/// Pages are about this large on average, for the cache's table sizing.
const TYPICAL_PAGE: u64 = 256 << 10;

impl MemoryTier {
    fn new(budget: u64) -> MemoryTier {
        let items = (budget / TYPICAL_PAGE).clamp(16, 1 << 20) as usize;
        MemoryTier {
            pages: Cache::with_weighter(items, budget, PageWeight),
            budget,
            admission: Admission::new(budget),
        }
    }

    /// Counts an ask for the missed page of `key` (`bytes` as stored or decompressed); whether
    /// the page is kept: asked for before, a first read the scan keeps (`first_read`), or a
    /// process that keeps every first read.
    fn admits(&self, key: &PageKey, bytes: u64, first_read: bool) -> bool {
        self.admission.ask(key, bytes) || first_read || FIRST_READS_KEPT.load(Relaxed)
    }

    /// Keeps `page` (decompressed), copied into a buffer of its exact size (a decompression
    /// buffer may be larger, and is lent to the next page when the caller drops it); returns
    /// the copy, to be used in its place.
    fn keep(&self, key: PageKey, page: Page, inflate_ns: u64) -> Page {
        self.keep_with(key, page, false, inflate_ns, |key, kept| {
            self.pages.insert(key, kept)
        })
    }

    /// [`Self::keep`], the copy handed to `insert` (the cache's, or a claim's); a page whose
    /// buffer is its `own`, exactly its size, is kept as it is. A page too large to keep is
    /// handed on as it is (the cache admits no item over one shard's part of the budget).
    fn keep_with(
        &self,
        key: PageKey,
        page: Page,
        own: bool,
        inflate_ns: u64,
        insert: impl FnOnce(PageKey, Kept),
    ) -> Page {
        if weight(&key, &page) > self.pages.shard_capacity() {
            return page;
        }
        if own {
            insert(
                key,
                Kept {
                    page: page.clone(),
                    inflate_ns,
                },
            );
            return page;
        }
        let mut copy = page.clone();
        let exact = bytes::Bytes::copy_from_slice(page.buffer());
        match &mut copy {
            Page::DataPage { buf, .. }
            | Page::DataPageV2 { buf, .. }
            | Page::DictionaryPage { buf, .. } => *buf = exact,
        }
        insert(
            key,
            Kept {
                page: copy.clone(),
                inflate_ns,
            },
        );
        copy
    }
}

impl PageCache {
    #[cfg(test)]
    fn new(budget: u64) -> PageCache {
        PageCache {
            memory: Some(Arc::new(MemoryTier::new(budget))),
            disk: None,
        }
    }

    /// The page of `file` at `offset`, if kept in memory or on disk (a page found on disk is
    /// kept in memory too).
    #[cfg(test)]
    fn get(&self, file: &Arc<FileKey>, offset: u64) -> Option<Hit> {
        match self.claim(file, (offset, 0), false) {
            Lookup::Hit(hit) => Some(hit),
            Lookup::Miss(_) => None,
        }
    }

    /// The page of `file` at `offset`, if kept in memory or on disk (a page found on disk is
    /// kept in memory too: read before, it is read again); else a claim to keep it once read,
    /// in memory when [`Admission`] admits it (`first_read`: on its first ask; `stored`: the
    /// page's size in the file, what the ask weighs). While one scan
    /// holds the claim, another asking for the page waits (at most [`CLAIM_WAIT`]) for its
    /// decompression.
    pub(crate) fn claim(
        &self,
        file: &Arc<FileKey>,
        (offset, stored): (u64, u64),
        first_read: bool,
    ) -> Lookup<'_> {
        let key = PageKey {
            file: file.clone(),
            offset,
        };
        let mut guard = None;
        let mut admitted = false;
        if let Some(m) = &self.memory {
            if let Some(kept) = m.pages.get(&key) {
                HITS.fetch_add(1, Relaxed);
                return Lookup::Hit(Hit {
                    page: kept.page,
                    from_disk: false,
                    inflate_ns: kept.inflate_ns,
                });
            }
            // Counted before waiting on another scan's claim, which then keeps the page.
            admitted = m.admits(&key, stored, first_read);
            match m.pages.get_value_or_guard(&key, Some(CLAIM_WAIT)) {
                GuardResult::Value(kept) => {
                    HITS.fetch_add(1, Relaxed);
                    return Lookup::Hit(Hit {
                        page: kept.page,
                        from_disk: false,
                        inflate_ns: kept.inflate_ns,
                    });
                }
                GuardResult::Guard(g) => guard = Some(g),
                GuardResult::Timeout => {}
            }
        }
        if let Some((page, inflate_ns)) = self.disk.as_ref().and_then(|d| d.get(file, offset)) {
            HITS.fetch_add(1, Relaxed);
            let page = match (&self.memory, guard) {
                (Some(m), Some(guard)) => m.keep_with(key, page, false, inflate_ns, |_, kept| {
                    let _ = guard.insert(kept);
                }),
                (Some(m), None) => m.keep(key, page, inflate_ns),
                (None, _) => page,
            };
            return Lookup::Hit(Hit {
                page,
                from_disk: true,
                inflate_ns,
            });
        }
        MISSES.fetch_add(1, Relaxed);
        Lookup::Miss(Claim {
            cache: self,
            file: key.file,
            offset,
            guard,
            admitted,
        })
    }

    /// Whether the page of `file` at `offset` is kept (not counted as a lookup).
    pub(crate) fn contains(&self, file: &Arc<FileKey>, offset: u64) -> bool {
        let key = PageKey {
            file: file.clone(),
            offset,
        };
        self.memory
            .as_ref()
            .is_some_and(|m| m.pages.contains_key(&key))
            || self.disk.as_ref().is_some_and(|d| d.contains(file, offset))
    }

    /// Whether pages are kept on disk too.
    pub(crate) fn has_disk(&self) -> bool {
        self.disk.is_some()
    }

    /// Whether the page of `file` at `offset` is kept in memory (not counted as a lookup).
    pub(crate) fn in_memory(&self, file: &Arc<FileKey>, offset: u64) -> bool {
        self.memory.as_ref().is_some_and(|m| {
            m.pages.contains_key(&PageKey {
                file: file.clone(),
                offset,
            })
        })
    }

    /// The disk tier's entries of `file`'s pages at `offsets`, opened to be read by blocks
    /// (`None` for a page without a whole entry, or with no disk tier).
    pub(crate) fn open_entries(
        &self,
        file: &Arc<FileKey>,
        offsets: &[u64],
        cold: bool,
    ) -> Vec<Option<EntryFile>> {
        match &self.disk {
            Some(d) => d.open_entries(file, offsets, cold),
            None => offsets.iter().map(|_| None).collect(),
        }
    }

    /// See [`DiskTier::entry_cold`].
    pub(crate) fn entry_cold(&self, file: &Arc<FileKey>, offset: u64) -> Option<bool> {
        self.disk.as_ref()?.entry_cold(file, offset)
    }

    /// See [`DiskTier::advise_entries`].
    pub(crate) fn advise_entries(
        &self,
        file: &Arc<FileKey>,
        pages: &[(u64, u64, Vec<Range<u64>>)],
    ) {
        if let Some(d) = &self.disk {
            d.advise_entries(file, pages);
        }
    }

    /// Counts a page served by blocks from its disk entry (a hit).
    pub(crate) fn count_blocks_hit(&self) {
        HITS.fetch_add(1, Relaxed);
        if let Some(d) = &self.disk {
            d.counts.hits.fetch_add(1, Relaxed);
        }
    }

    /// Says that the pages of `file` at `offsets` are about to be looked up: those not in
    /// memory are loaded from the disk tier in the background when they are not in the OS page
    /// cache.
    pub(crate) fn will_need(&self, file: &Arc<FileKey>, offsets: &[u64]) {
        let Some(disk) = &self.disk else {
            return;
        };
        let missing: Vec<u64> = match &self.memory {
            Some(m) => offsets
                .iter()
                .copied()
                .filter(|&offset| {
                    !m.pages.contains_key(&PageKey {
                        file: file.clone(),
                        offset,
                    })
                })
                .collect(),
            None => offsets.to_vec(),
        };
        if missing.len() > 1 {
            disk.will_need(file, &missing);
        }
    }

    /// Keeps `page` (decompressed, in `inflate_ns`) of `file` at `offset`, read without a
    /// claim: counted as an ask, in memory when [`Admission`] admits it (`first_read`: on its
    /// first ask; a copy of its exact size, returned to be used in its place), and queued for
    /// the disk (with an offset table when its column is of `byte_arrays`).
    pub(crate) fn keep(
        &self,
        file: &Arc<FileKey>,
        offset: u64,
        page: Page,
        inflate_ns: u64,
        byte_arrays: Option<disk::ByteArrays>,
        first_read: bool,
    ) -> Page {
        if let Some(d) = &self.disk {
            let first_miss = FIRST_READS_KEPT.load(Relaxed);
            d.put(file, offset, &page, inflate_ns, byte_arrays, first_miss);
        }
        let Some(m) = &self.memory else {
            return page;
        };
        let key = PageKey {
            file: file.clone(),
            offset,
        };
        if m.admits(&key, page.buffer().len() as u64, first_read) {
            m.keep(key, page, inflate_ns)
        } else {
            page
        }
    }
}

static CACHE: RwLock<Option<Arc<PageCache>>> = RwLock::new(None);
/// Whether the cache was configured (by a call, or from `TAMIS_PAGE_CACHE` at first use).
static CONFIGURED: std::sync::Once = std::sync::Once::new();
/// Every scan keeps missed pages on their first read ([`set_page_cache_keeps_first_reads`]).
static FIRST_READS_KEPT: AtomicBool = AtomicBool::new(false);
static HITS: AtomicU64 = AtomicU64::new(0);
static MISSES: AtomicU64 = AtomicU64::new(0);

/// Sets the page cache's budget in bytes, emptying it; `0` turns it off.
///
/// The cache is process-wide: every scan after this call uses it, and scans of the same pages —
/// a query's two scans of one table, the partitions of one DataFusion or Spark scan, repeated
/// queries — decompress each page once while it stays cached.
pub fn set_page_cache_bytes(bytes: u64) {
    configure();
    let mut cache = CACHE.write().unwrap_or_else(|e| e.into_inner());
    let disk = cache.as_ref().and_then(|c| c.disk.clone());
    let memory = (bytes > 0).then(|| Arc::new(MemoryTier::new(bytes)));
    *cache = PageCache::install(memory, disk);
}

/// Has the memory tier keep every missed page on its first read (`true`), as a scan does that
/// asks for it ([`crate::Scan::keep_pages_on_first_read`]), and the disk tier write a local
/// file's page on its first miss, instead of on their second (`false`, the default; or
/// [`PAGE_CACHE_ADMIT_ENV`]). For a process that reads the same data again and again, and
/// would rather pay the memory and the writes on the first read than decompress twice.
pub fn set_page_cache_keeps_first_reads(keep: bool) {
    configure();
    FIRST_READS_KEPT.store(keep, Relaxed);
}

/// Sets the page cache's disk tier: pages in files of `dir` (created if missing, readable by
/// its owner only) under a budget of `bytes` (`None`: [`DISK_CACHE_BYTES_ENV`], else a quarter
/// of the space free there now); `dir` `None` turns it off. The memory tier, if on, stays as it
/// is.
///
/// Processes may share a directory. Entries are checked when read (see `cache/disk.rs`), so a
/// damaged one is a miss, never a wrong page. The checksum catches accidents, not tampering:
/// share a directory only between users who trust each other.
pub fn set_disk_cache(dir: Option<&Path>, bytes: Option<u64>) -> Result<()> {
    configure();
    let disk = match dir {
        Some(dir) => Some(Arc::new(open_disk(dir, bytes)?)),
        None => None,
    };
    let mut cache = CACHE.write().unwrap_or_else(|e| e.into_inner());
    let memory = cache.as_ref().and_then(|c| c.memory.clone());
    *cache = PageCache::install(memory, disk);
    Ok(())
}

fn open_disk(dir: &Path, bytes: Option<u64>) -> Result<DiskTier> {
    let failed =
        |e: std::io::Error| Error::invalid(format!("cache directory {}: {e}", dir.display()));
    disk::create_dir(dir).map_err(failed)?;
    let from_env = std::env::var(DISK_CACHE_BYTES_ENV)
        .ok()
        .and_then(|v| crate::budget::parse_size(&v).ok());
    let budget = match bytes.or(from_env) {
        Some(b) => b,
        None => {
            let free = rustix::fs::statvfs(dir).map_err(|e| failed(e.into()))?;
            free.f_bavail.saturating_mul(free.f_frsize) / 4
        }
    };
    DiskTier::open(dir, budget).map_err(failed)
}

impl PageCache {
    /// The cache of these tiers (`None` when both are off); the disk tier, if on, also keeps
    /// remote files' metadata ([`crate::io::MetadataStore`]).
    fn install(
        memory: Option<Arc<MemoryTier>>,
        disk: Option<Arc<DiskTier>>,
    ) -> Option<Arc<PageCache>> {
        let store = disk.clone().map(|d| d as Arc<dyn crate::io::MetadataStore>);
        crate::io::set_metadata_store(store);
        (memory.is_some() || disk.is_some()).then(|| Arc::new(PageCache { memory, disk }))
    }
}

/// Waits (at most `limit`) until the pages queued for the disk tier are written: a process
/// about to exit calls it so that what it decompressed reaches the directory.
pub fn flush_disk_cache(limit: std::time::Duration) {
    if let Some(d) = disk_tier() {
        d.flush(limit);
    }
}

/// Makes scans wait for the disk tier's writer (`true`) instead of dropping the pages it has no
/// room for yet (the default: a miss never waits for the disk). For filling the cache on
/// purpose, as `tamis cache warm` does.
pub fn disk_cache_waits(waits: bool) {
    if let Some(d) = disk_tier() {
        d.set_waits(waits);
    }
}

fn disk_tier() -> Option<Arc<DiskTier>> {
    let cache = CACHE.read().unwrap_or_else(|e| e.into_inner());
    cache.as_ref().and_then(|c| c.disk.clone())
}

/// Removes every entry of the cache directory `dir` (not in use, or in use: readers then
/// miss); returns how many.
pub fn clear_disk_cache(dir: &Path) -> u64 {
    disk::clear_dir(dir)
}

/// What the cache directory `dir` holds: entries (pages and metadata ranges) and bytes.
pub fn disk_cache_contents(dir: &Path) -> (u64, u64) {
    let files = disk::listing(dir);
    let entries = files.iter().map(|e| disk::entries_in(&e.0)).sum();
    (entries, files.iter().map(|e| e.1).sum())
}

/// The environment variable that sets the budget of a process that does not
/// ([`set_page_cache_bytes`]): bytes, or a size such as `2GiB` (`K`, `M`, `G`, `T`, with or
/// without `iB`/`B`: binary multiples, as `tamis::budget::parse_size` reads them); `0`: off.
/// Unset, empty or unreadable: [`default_page_cache_bytes`].
pub const PAGE_CACHE_ENV: &str = "TAMIS_PAGE_CACHE";

/// The environment variable that sets when the memory tier keeps a missed page and the disk
/// tier writes a local one, for a process that does not ([`set_page_cache_keeps_first_reads`]):
/// `first` (on its first read) or `second` (on its second, the default).
pub const PAGE_CACHE_ADMIT_ENV: &str = "TAMIS_PAGE_CACHE_ADMIT";

/// The environment variable naming the cache directory of a process that does not
/// ([`set_disk_cache`]); [`DISK_CACHE_BYTES_ENV`] sets its budget. Unset or empty: no disk tier.
pub const DISK_CACHE_ENV: &str = "TAMIS_DISK_CACHE";

/// The disk tier's budget, read as [`PAGE_CACHE_ENV`] is (unset: a quarter of the free space).
pub const DISK_CACHE_BYTES_ENV: &str = "TAMIS_DISK_CACHE_BYTES";

/// What the page cache holds and has served since the process started.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PageCacheStats {
    /// The budget in bytes (`0`: off).
    pub budget_bytes: u64,
    /// Bytes held (pages, keys and bookkeeping).
    pub bytes: u64,
    /// Pages held.
    pub pages: u64,
    /// Lookups that found their page.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// The cache directory, when the disk tier is on.
    pub disk_dir: Option<PathBuf>,
    /// The disk tier's budget in bytes (`0`: off).
    pub disk_budget_bytes: u64,
    /// Bytes of entries in the directory (as this process last counted them).
    pub disk_bytes: u64,
    /// Lookups that found their page on disk (also counted in `hits`).
    pub disk_hits: u64,
    /// Ranges of remote files' metadata (footers, page indexes, Bloom filters, sidecars)
    /// read from the directory instead of the object store.
    pub disk_metadata_hits: u64,
    /// Pages written to disk.
    pub disk_written: u64,
    /// Pages of local files not written: their first miss (a local page is written on its
    /// second miss, remembered across processes in the directory).
    pub disk_first_misses: u64,
    /// Pages not written because the writer was behind.
    pub disk_dropped: u64,
    /// Entries found damaged (torn, flipped, another key's), removed and read again.
    pub disk_corrupt: u64,
    /// Entries removed to keep the directory under its budget.
    pub disk_evicted: u64,
}

/// The page cache's budget, contents and counts.
pub fn page_cache_stats() -> PageCacheStats {
    let cache = CACHE.read().unwrap_or_else(|e| e.into_inner());
    let memory = cache.as_ref().and_then(|c| c.memory.as_ref());
    let (budget_bytes, bytes, pages) = match memory {
        Some(m) => (m.budget, m.pages.weight(), m.pages.len() as u64),
        None => (0, 0, 0),
    };
    let mut stats = PageCacheStats {
        budget_bytes,
        bytes,
        pages,
        hits: HITS.load(Relaxed),
        misses: MISSES.load(Relaxed),
        ..Default::default()
    };
    if let Some(d) = cache.as_ref().and_then(|c| c.disk.as_ref()) {
        stats.disk_dir = Some(d.dir().to_path_buf());
        stats.disk_budget_bytes = d.budget();
        stats.disk_bytes = d.held();
        stats.disk_hits = d.counts.hits.load(Relaxed);
        stats.disk_metadata_hits = d.counts.metadata_hits.load(Relaxed);
        stats.disk_written = d.counts.written.load(Relaxed);
        stats.disk_first_misses = d.counts.first_misses.load(Relaxed);
        stats.disk_dropped = d.counts.dropped.load(Relaxed);
        stats.disk_corrupt = d.counts.corrupt.load(Relaxed);
        stats.disk_evicted = d.counts.evicted.load(Relaxed);
    }
    stats
}

/// The memory tier's budget when nothing sets one: a sixteenth of the machine's memory (or of
/// the control group's limit, when lower), at most 4 GiB — 1.5 GiB on a 24 GiB machine, a TPC-H
/// SF1 `lineitem`'s decompressed pages twice over. A sixteenth leaves the scans' own buffers
/// and the host application (a Python session, a Spark executor) the rest.
pub fn default_page_cache_bytes() -> u64 {
    const MOST: u64 = 4 << 30;
    machine_memory().map_or(256 << 20, |m| (m / 16).min(MOST))
}

/// The memory this process may use: the machine's (`/proc/meminfo`), or the lowest limit of
/// its control group and those above it (cgroup v2, found through `/proc/self/cgroup`; v1's
/// `memory.limit_in_bytes`) when lower; `None` where the machine's cannot be read.
fn machine_memory() -> Option<u64> {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            kib.checked_mul(1024)
        })?;
    let read = |p: &Path| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    let mut limits = Vec::new();
    let root = Path::new("/sys/fs/cgroup");
    if let Ok(own) = std::fs::read_to_string("/proc/self/cgroup") {
        // v2: "0::/a/b"; every level up to the root may bound it ("max" reads as none).
        if let Some(path) = own.lines().find_map(|l| l.strip_prefix("0::")) {
            let mut dir = root.join(path.trim_start_matches('/'));
            while dir.starts_with(root) {
                limits.extend(read(&dir.join("memory.max")));
                if !dir.pop() {
                    break;
                }
            }
        }
    }
    limits.extend(read(&root.join("memory/memory.limit_in_bytes")));
    Some(limits.into_iter().fold(total, u64::min))
}

/// The page cache, when on.
pub(crate) fn page_cache() -> Option<Arc<PageCache>> {
    configure();
    CACHE.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Sets the cache from the environment, once, before the first use or setting. A cache
/// directory that cannot be opened leaves the disk tier off (scans still run; `tamis cache
/// stats` shows it off).
fn configure() {
    CONFIGURED.call_once(|| {
        let size = |name| {
            std::env::var(name)
                .ok()
                .and_then(|v| crate::budget::parse_size(&v).ok())
        };
        let budget = match std::env::var(PAGE_CACHE_ENV) {
            Ok(v) if v.trim() == "0" => 0,
            _ => size(PAGE_CACHE_ENV).unwrap_or_else(default_page_cache_bytes),
        };
        let memory = (budget > 0).then(|| Arc::new(MemoryTier::new(budget)));
        let admit = std::env::var(PAGE_CACHE_ADMIT_ENV).unwrap_or_default();
        FIRST_READS_KEPT.store(admit.trim().eq_ignore_ascii_case("first"), Relaxed);
        let disk = std::env::var_os(DISK_CACHE_ENV)
            .filter(|d| !d.is_empty())
            .and_then(|d| open_disk(Path::new(&d), None).ok())
            .map(Arc::new);
        *CACHE.write().unwrap_or_else(|e| e.into_inner()) = PageCache::install(memory, disk);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use parquet::basic::Encoding;

    fn page(bytes: &[u8]) -> Page {
        Page::DataPage {
            buf: Bytes::copy_from_slice(bytes),
            num_values: bytes.len() as u32,
            encoding: Encoding::PLAIN,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        }
    }

    fn identity(len: u64, modified_ns: i64) -> Identity {
        Identity {
            len,
            etag: None,
            modified_ns: Some(modified_ns),
            stamp: None,
        }
    }

    #[test]
    fn a_page_is_found_under_its_file_version_only() {
        let cache = PageCache::new(1 << 20);
        let v1 = FileKey::new("a.parquet", &identity(100, 1));
        let v2 = FileKey::new("a.parquet", &identity(100, 2));
        let other = FileKey::new("b.parquet", &identity(100, 1));
        let kept = cache.keep(&v1, 4, page(b"hello"), 7, None, true);
        assert_eq!(kept.buffer().as_ref(), b"hello");
        let hit = cache.get(&v1, 4).unwrap();
        assert_eq!(hit.page.buffer().as_ref(), b"hello");
        assert_eq!((hit.from_disk, hit.inflate_ns), (false, 7));
        // Same key rebuilt from scratch: found.
        let again = FileKey::new("a.parquet", &identity(100, 1));
        assert!(cache.get(&again, 4).is_some());
        // Another version of the file, another file, another offset: not found.
        assert!(cache.get(&v2, 4).is_none());
        assert!(cache.get(&other, 4).is_none());
        assert!(cache.get(&v1, 5).is_none());
    }

    #[test]
    fn the_budget_bounds_what_is_kept() {
        let budget = 64 << 10;
        let cache = PageCache::new(budget);
        let file = FileKey::new("a.parquet", &identity(1, 1));
        let big = vec![7u8; 4096];
        for offset in 0..200u64 {
            cache.keep(&file, offset * 4096, page(&big), 0, None, true);
            assert!(cache.memory.as_ref().unwrap().pages.weight() <= budget);
        }
        assert!(cache.memory.as_ref().unwrap().pages.len() < 200);
        // A page over the budget (one shard's part of it) is handed back but not kept.
        let huge = vec![1u8; (budget + 1) as usize];
        let kept = cache.keep(&file, 1 << 40, page(&huge), 0, None, true);
        assert_eq!(kept.buffer().len(), huge.len());
        assert!(cache.get(&file, 1 << 40).is_none());
    }

    #[test]
    fn only_identities_that_tell_versions_apart_are_cached() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i64;
        let stamped = |changed_ns| Identity {
            stamp: Some(crate::io::FileStamp {
                device: 1,
                inode: 2,
                changed_ns,
            }),
            ..identity(10, 1)
        };
        assert!(FileKey::cacheable("a", &stamped(now - 5_000_000_000)).is_some());
        // Changed within the last second: a same-size rewrite could keep the identity.
        assert!(FileKey::cacheable("a", &stamped(now)).is_none());
        // Length and mtime alone: not cached; an ETag: cached.
        assert!(FileKey::cacheable("a", &identity(10, 1)).is_none());
        let tagged = Identity {
            etag: Some("\"abc\"".into()),
            ..identity(10, 1)
        };
        assert!(FileKey::cacheable("s3://b/a", &tagged).is_some());
    }

    #[test]
    fn the_default_budget_is_a_part_of_the_memory_this_process_may_use() {
        let b = default_page_cache_bytes();
        assert!(b > 0 && b <= 4 << 30, "{b}");
        if let Some(m) = machine_memory() {
            assert!(b <= m / 16 || b == 256 << 20, "{b} of {m}");
        }
    }

    #[test]
    fn sizes_parse_as_the_environment_variable_takes_them() {
        let parse_size = |s: &str| crate::budget::parse_size(s).ok();
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("512MiB"), Some(512 << 20));
        assert_eq!(parse_size("2G"), Some(2 << 30));
        assert_eq!(parse_size(" 1 kb "), Some(1024));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("5X"), None);
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("99999999999T"), None);
    }

    /// Asks for the page of `file` at `offset` as a scan does, and keeps it when it misses.
    fn read(cache: &PageCache, file: &Arc<FileKey>, offset: u64, first_read: bool) -> bool {
        match cache.claim(file, (offset, 4), first_read) {
            Lookup::Hit(_) => true,
            Lookup::Miss(claim) => {
                let own = claim.keeps_in_memory();
                claim.keep(page(b"page"), own, 1, None);
                false
            }
        }
    }

    #[test]
    fn a_page_is_kept_on_its_second_read_or_its_first_when_the_scan_asks() {
        let cache = PageCache::new(1 << 20);
        let file = FileKey::new("a.parquet", &identity(1, 1));
        // Read once: not kept (no new memory for a page nobody reads again).
        assert!(!read(&cache, &file, 0, false));
        assert!(!cache.in_memory(&file, 0));
        // Read again: kept, then found.
        assert!(!read(&cache, &file, 0, false));
        assert!(cache.in_memory(&file, 0));
        assert!(read(&cache, &file, 0, false));
        // A scan that keeps first reads keeps the page at once.
        assert!(!read(&cache, &file, 8, true));
        assert!(read(&cache, &file, 8, false));
        // Kept without a claim (a chunk without an offset index): the same rule.
        cache.keep(&file, 16, page(b"x"), 0, None, false);
        assert!(!cache.in_memory(&file, 16));
        cache.keep(&file, 16, page(b"x"), 0, None, false);
        assert!(cache.in_memory(&file, 16));
    }

    #[test]
    fn the_doorkeeper_forgets_old_asks() {
        let admission = Admission::new(40);
        let file = FileKey::new("a.parquet", &identity(1, 1));
        let key = |offset| PageKey {
            file: file.clone(),
            offset,
        };
        assert!(!admission.ask(&key(0), 10));
        assert!(admission.ask(&key(0), 10));
        assert!(admission.asked_again(&key(0)));
        assert!(!admission.asked_again(&key(1)));
        // Two generations of other asks (40 bytes each) later, the first is forgotten.
        for offset in 100..108 {
            assert!(!admission.ask(&key(offset), 10));
        }
        assert!(!admission.asked_again(&key(0)));
        assert!(!admission.ask(&key(0), 10));
        // Asked once in the older generation, again in the newer: remembered across them.
        for offset in 200..203 {
            admission.ask(&key(offset), 10);
        }
        assert!(admission.ask(&key(200), 10));
    }

    #[test]
    fn a_second_ask_while_the_first_decompresses_keeps_the_page_for_it() {
        let cache = PageCache::new(1 << 20);
        let file = FileKey::new("a.parquet", &identity(1, 1));
        let Lookup::Miss(claim) = cache.claim(&file, (0, 4), false) else {
            panic!("an empty cache holds nothing");
        };
        assert!(!claim.keeps_in_memory(), "a first read is not kept");
        std::thread::scope(|s| {
            let waiting = s.spawn(|| match cache.claim(&file, (0, 4), false) {
                Lookup::Hit(hit) => hit.page.buffer().to_vec(),
                Lookup::Miss(_) => panic!("the second ask decompressed the page again"),
            });
            let key = PageKey {
                file: file.clone(),
                offset: 0,
            };
            let m = cache.memory.as_ref().unwrap();
            while !m.admission.asked_again(&key) {
                std::thread::yield_now();
            }
            claim.keep(page(b"shared"), false, 1, None);
            assert_eq!(waiting.join().unwrap(), b"shared");
        });
        assert!(cache.in_memory(&file, 0));
    }

    #[test]
    fn a_kept_page_owns_a_buffer_of_its_exact_size() {
        let cache = PageCache::new(1 << 20);
        let file = FileKey::new("a.parquet", &identity(1, 1));
        let mut large = Vec::with_capacity(1 << 16);
        large.extend_from_slice(b"abc");
        // A buffer of 64 KiB holding 3 bytes, as a recycled decompression buffer may.
        let p = Page::DictionaryPage {
            buf: Bytes::from(large),
            num_values: 1,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        };
        let original = p.buffer().as_ptr();
        let kept = cache.keep(&file, 0, p, 0, None, true);
        assert_eq!(kept.buffer().as_ref(), b"abc");
        assert_ne!(kept.buffer().as_ptr(), original, "the kept page is a copy");
        assert!(matches!(kept, Page::DictionaryPage { .. }));
        let w = cache.memory.as_ref().unwrap().pages.weight();
        assert_eq!(w, 3 + "a.parquet".len() as u64 + ENTRY_OVERHEAD);
    }
}
