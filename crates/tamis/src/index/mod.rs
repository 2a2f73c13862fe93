//! Sidecar indexes: lookup structures for existing Parquet files, kept beside them in a Puffin
//! file (`<data file>.tamis.puffin`) instead of rewriting the data (`tamis index`).
//!
//! ```text
//! puffin.rs      the container: blobs plus a JSON footer (Apache Iceberg's Puffin format)
//! page_bloom.rs  one split-block Bloom filter per data page: `=` / `IN` skip pages
//! rows.rs        per row group, sorted distinct values with their row ids: `=`, `IN` and
//!                ranges become the selection without reading the column
//! build.rs       reading a file's columns to build either, and choosing between them
//! ```
//!
//! A sidecar records the identity of the data file it indexes: its length and an xxHash64 of
//! its footer (plus the ETag or modification time, informational: copying a file changes them
//! without changing its content). A scan uses a sidecar only when length and footer hash match;
//! otherwise it reads as if there were none and `explain` counts the stale index — a stale index
//! costs time, never rows.

pub mod build;
pub mod page_bloom;
pub mod puffin;
pub mod rows;

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::Arc;

use std::sync::Mutex;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::expr::Leaf;
use crate::io::location::FileRef;
use crate::io::{ByteSource, FetchedRanges, Reader};
use crate::schema::LeafColumn;
use crate::selection::Bitmap;
use page_bloom::PageBlooms;
use rows::Fence;

/// Appended to a data file's path or key to name its sidecar.
pub const SIDECAR_SUFFIX: &str = ".tamis.puffin";

/// Version of tamis's blobs and properties inside the Puffin file.
pub const FORMAT_VERSION: &str = "1";

const PROP_VERSION: &str = "tamis.format-version";
const PROP_LENGTH: &str = "tamis.data-file.length";
const PROP_FOOTER_HASH: &str = "tamis.data-file.footer-xxh64";
const PROP_ETAG: &str = "tamis.data-file.etag";
const PROP_MODIFIED: &str = "tamis.data-file.modified-ns";
const PROP_ROW_GROUP: &str = "row-group";
const PROP_COLUMN: &str = "column";
/// Length of a rows blob's fence (its first bytes).
const PROP_FENCE_BYTES: &str = "tamis.fence-bytes";
/// xxHash64 of a blob's bytes, seeded with its row group and column: a flipped bit in a filter
/// (or in the footer's row group or column) could hide a page, so every blob is checked before
/// use.
const PROP_BLOB_HASH: &str = "tamis.xxh64";

/// What a sidecar says about the file it was built for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFileIdentity {
    pub len: u64,
    pub footer_hash: u64,
    pub etag: Option<String>,
    pub modified_ns: Option<i64>,
}

impl DataFileIdentity {
    /// The identity of the file `reader` reads (its footer read through it: usually in memory).
    pub fn of(reader: &Reader, etag: Option<String>, modified_ns: Option<i64>) -> Result<Self> {
        let len = reader.len();
        let footer = footer_range(reader)?;
        let bytes = reader.read_range(footer)?;
        Ok(DataFileIdentity {
            len,
            footer_hash: twox_hash::XxHash64::oneshot(0, &bytes),
            etag,
            modified_ns,
        })
    }

    fn properties(&self) -> BTreeMap<String, String> {
        let mut p = BTreeMap::from([
            (PROP_VERSION.to_string(), FORMAT_VERSION.to_string()),
            (PROP_LENGTH.to_string(), self.len.to_string()),
            (
                PROP_FOOTER_HASH.to_string(),
                format!("{:016x}", self.footer_hash),
            ),
        ]);
        if let Some(e) = &self.etag {
            p.insert(PROP_ETAG.to_string(), e.clone());
        }
        if let Some(m) = self.modified_ns {
            p.insert(PROP_MODIFIED.to_string(), m.to_string());
        }
        p
    }

    /// Same data: the length and the footer hash agree.
    pub fn matches(&self, other: &DataFileIdentity) -> bool {
        self.len == other.len && self.footer_hash == other.footer_hash
    }
}

/// The footer (metadata and its 8-byte trailer) of the file `reader` reads.
fn footer_range(reader: &Reader) -> Result<Range<u64>> {
    let len = reader.len();
    if len < 12 {
        return Err(Error::corrupt("too short for a Parquet footer"));
    }
    let trailer = reader.read_range(len - 8..len)?;
    let meta_len = u32::from_le_bytes(trailer[..4].try_into().expect("4 bytes")) as u64;
    let start = (len - 8)
        .checked_sub(meta_len)
        .ok_or_else(|| Error::corrupt("footer length beyond the file"))?;
    Ok(start..len)
}

/// A blob of a sidecar as written: page filters or a rows index of one (row group, column).
#[derive(Debug, Clone)]
pub enum IndexBlob {
    PageBloom {
        row_group: usize,
        column: usize,
        blob: Vec<u8>,
    },
    Rows {
        row_group: usize,
        column: usize,
        blob: Vec<u8>,
        /// Length of the blob's fence (its first bytes), read before any block.
        fence_len: usize,
    },
}

/// An opened sidecar. Only its footer is read at open (usually in the same read that finds
/// it); blobs are read when a scan needs them, through the scan's reader (counted in its bytes
/// and requests), checked against their checksums, and kept.
#[derive(Debug)]
pub struct Sidecar {
    pub location: String,
    pub identity: Option<DataFileIdentity>,
    source: Arc<dyn ByteSource>,
    /// What the open read: the end of the sidecar (footer and, often, every blob).
    tail: Arc<FetchedRanges>,
    page_bloom_blobs: HashMap<(usize, usize), (Range<u64>, String)>,
    rows_blobs: HashMap<(usize, usize), RowsBlob>,
    page_blooms: Mutex<HashMap<(usize, usize), Arc<PageBlooms>>>,
    fences: Mutex<HashMap<(usize, usize), Arc<Fence>>>,
    /// Rows of each row group of the data file.
    rows: Vec<u64>,
    /// Bytes and requests the open took (the scan that opens it counts them).
    pub open_cost: (u64, u64),
}

/// Where a rows-index blob is and how to check its fence.
#[derive(Debug, Clone)]
struct RowsBlob {
    range: Range<u64>,
    fence_len: u64,
    fence_hash: String,
}

/// What a scan found beside a data file.
#[derive(Debug, Clone)]
pub enum SidecarState {
    /// No sidecar, or not looked for.
    Absent,
    /// A sidecar built for another version of the file: not used.
    Stale(String),
    Usable(Arc<Sidecar>),
}

impl Sidecar {
    /// Serializes index blobs for a file of `identity`; `columns` names each leaf's path.
    pub fn write(
        identity: &DataFileIdentity,
        blobs: &[IndexBlob],
        columns: &dyn Fn(usize) -> String,
    ) -> Result<Vec<u8>> {
        let mut w = puffin::PuffinWriter::default();
        for b in blobs {
            match b {
                IndexBlob::PageBloom {
                    row_group,
                    column,
                    blob,
                } => {
                    let props = BTreeMap::from([
                        (PROP_ROW_GROUP.to_string(), row_group.to_string()),
                        (PROP_COLUMN.to_string(), columns(*column)),
                        (
                            PROP_BLOB_HASH.to_string(),
                            blob_hash(*row_group, *column, blob),
                        ),
                    ]);
                    w.add(page_bloom::BLOB_TYPE, vec![*column as i32], props, blob);
                }
                IndexBlob::Rows {
                    row_group,
                    column,
                    blob,
                    fence_len,
                } => {
                    let fence = &blob[..*fence_len];
                    let props = BTreeMap::from([
                        (PROP_ROW_GROUP.to_string(), row_group.to_string()),
                        (PROP_COLUMN.to_string(), columns(*column)),
                        (PROP_FENCE_BYTES.to_string(), fence_len.to_string()),
                        (
                            PROP_BLOB_HASH.to_string(),
                            blob_hash(*row_group, *column, fence),
                        ),
                    ]);
                    w.add(rows::BLOB_TYPE, vec![*column as i32], props, blob);
                }
            }
        }
        w.finish(identity.properties())
    }

    /// Parses a whole sidecar held in memory (tools, the fuzzer), checking every blob now
    /// rather than on first use: page filters decoded, rows-index fences and blocks checked
    /// against their checksums. `rows` and `columns` describe the data file.
    pub fn parse(location: &str, bytes: &[u8], rows: &[u64], columns: usize) -> Result<Sidecar> {
        let whole = Bytes::copy_from_slice(bytes);
        if bytes.len() < 4 || &bytes[..4] != puffin::MAGIC {
            return Err(
                Error::corrupt("not a valid Puffin file: no magic at the start").in_file(location),
            );
        }
        let source: Arc<dyn ByteSource> = Arc::new(crate::io::memory::MemorySource::new(
            location,
            whole.clone(),
        ));
        let sidecar = Self::open(source, whole, rows, columns)?;
        let reader = Reader::new(
            sidecar.source.clone(),
            Default::default(),
            Default::default(),
        );
        let ctx = |e: Error| e.in_file(location);
        let mut keys: Vec<(usize, usize)> = sidecar.page_bloom_blobs.keys().copied().collect();
        keys.sort_unstable();
        for (rg, c) in keys {
            sidecar.page_blooms(&reader, rg, &[c])?;
        }
        for ((rg, c), blob) in &sidecar.rows_blobs {
            let fence = blob.range.start..blob.range.start + blob.fence_len;
            let fetched = sidecar.read(&reader, std::slice::from_ref(&fence))?;
            let fence = fetched.slice(fence).unwrap_or_default();
            if blob.fence_hash != blob_hash(*rg, *c, &fence) {
                return Err(ctx(Error::corrupt(format!(
                    "rows index fence of row group {rg}, column {c}: checksum mismatch"
                ))));
            }
        }
        Ok(sidecar)
    }

    /// Opens the sidecar `source`, whose open read its last bytes (`tail`).
    fn open(
        source: Arc<dyn ByteSource>,
        tail: Bytes,
        rows: &[u64],
        columns: usize,
    ) -> Result<Sidecar> {
        let location = source.location().to_string();
        let len = source.identity().len;
        let ctx = |e: Error| e.in_file(&location);
        let needed = puffin::footer_bytes_needed(&tail, len).map_err(ctx)?;
        let tail = if needed as usize > tail.len() && needed <= len {
            let never = std::sync::atomic::AtomicBool::new(false);
            let range = len - needed..len;
            let read = source.read_ranges(std::slice::from_ref(&range), &never)?;
            read.into_iter().next().unwrap_or_default()
        } else {
            tail
        };
        let fetched =
            FetchedRanges::from_pieces(vec![(len - tail.len() as u64, tail.clone())], len);
        Self::from_tail(&location, source, tail, fetched, rows, columns)
    }

    fn from_tail(
        location: &str,
        source: Arc<dyn ByteSource>,
        tail: Bytes,
        fetched: FetchedRanges,
        rows: &[u64],
        columns: usize,
    ) -> Result<Sidecar> {
        let ctx = |e: Error| e.in_file(location);
        let len = source.identity().len;
        let meta = puffin::read_footer_tail(&tail, len).map_err(ctx)?;
        let prop = |k: &str| meta.properties.get(k);
        if prop(PROP_VERSION).map(String::as_str) != Some(FORMAT_VERSION) {
            return Err(ctx(Error::unsupported(format!(
                "sidecar format version {:?} (this tamis reads {FORMAT_VERSION})",
                prop(PROP_VERSION)
            ))));
        }
        let identity = (|| {
            Some(DataFileIdentity {
                len: prop(PROP_LENGTH)?.parse().ok()?,
                footer_hash: u64::from_str_radix(prop(PROP_FOOTER_HASH)?, 16).ok()?,
                etag: prop(PROP_ETAG).cloned(),
                modified_ns: prop(PROP_MODIFIED).and_then(|m| m.parse().ok()),
            })
        })()
        .ok_or_else(|| ctx(Error::corrupt("sidecar without the data file's identity")))?;
        let mut page_bloom_blobs = HashMap::new();
        let mut rows_blobs = HashMap::new();
        for b in &meta.blobs {
            let kind = b.r#type.as_str();
            if kind != page_bloom::BLOB_TYPE && kind != rows::BLOB_TYPE {
                continue;
            }
            let rg: usize = b
                .properties
                .get(PROP_ROW_GROUP)
                .and_then(|r| r.parse().ok())
                .filter(|&r| r < rows.len())
                .ok_or_else(|| {
                    ctx(Error::corrupt(format!(
                        "{kind} blob without a valid row group"
                    )))
                })?;
            let column = match b.fields.as_slice() {
                [c] if *c >= 0 && (*c as usize) < columns => *c as usize,
                _ => {
                    return Err(ctx(Error::corrupt(format!(
                        "{kind} blob without a valid column"
                    ))))
                }
            };
            let hash =
                b.properties.get(PROP_BLOB_HASH).cloned().ok_or_else(|| {
                    ctx(Error::corrupt(format!("{kind} blob without a checksum")))
                })?;
            let range = b.offset..b.offset + b.length;
            if kind == page_bloom::BLOB_TYPE {
                page_bloom_blobs.insert((rg, column), (range, hash));
            } else {
                let fence_len = b
                    .properties
                    .get(PROP_FENCE_BYTES)
                    .and_then(|f| f.parse::<u64>().ok())
                    .filter(|&f| f <= b.length)
                    .ok_or_else(|| ctx(Error::corrupt("rows blob without a valid fence length")))?;
                rows_blobs.insert(
                    (rg, column),
                    RowsBlob {
                        range,
                        fence_len,
                        fence_hash: hash,
                    },
                );
            }
        }
        Ok(Sidecar {
            location: location.to_string(),
            identity: Some(identity),
            source,
            tail: Arc::new(fetched),
            page_bloom_blobs,
            rows_blobs,
            page_blooms: Mutex::default(),
            fences: Mutex::default(),
            rows: rows.to_vec(),
            open_cost: (0, 0),
        })
    }

    /// Reads `ranges` of the sidecar for the scan that `scan_reader` reads for.
    fn read(&self, scan_reader: &Reader, ranges: &[Range<u64>]) -> Result<FetchedRanges> {
        scan_reader
            .sibling(self.source.clone())
            .with_cached(self.tail.clone())
            .read_ranges(ranges)
            .map_err(|e| e.in_file(&self.location))
    }

    /// Whether the sidecar has page filters or a rows index for `(row group, column)`.
    pub fn has_page_blooms(&self, rg: usize, column: usize) -> bool {
        self.page_bloom_blobs.contains_key(&(rg, column))
    }

    pub fn has_rows(&self, rg: usize, column: usize) -> bool {
        self.rows_blobs.contains_key(&(rg, column))
    }

    /// The page filters of the given columns of row group `rg` (those the sidecar has), read in
    /// one request on first use.
    pub fn page_blooms(
        &self,
        scan_reader: &Reader,
        rg: usize,
        columns: &[usize],
    ) -> Result<HashMap<usize, Arc<PageBlooms>>> {
        let mut out = HashMap::new();
        let mut missing = Vec::new();
        {
            let cache = self.page_blooms.lock().unwrap_or_else(|e| e.into_inner());
            for &c in columns {
                match (cache.get(&(rg, c)), self.page_bloom_blobs.get(&(rg, c))) {
                    (Some(b), _) => {
                        out.insert(c, b.clone());
                    }
                    (None, Some(blob)) => missing.push((c, blob)),
                    (None, None) => {}
                }
            }
        }
        if missing.is_empty() {
            return Ok(out);
        }
        let ranges: Vec<Range<u64>> = missing.iter().map(|(_, (r, _))| r.clone()).collect();
        let fetched = self.read(scan_reader, &ranges)?;
        let ctx = |e: Error| e.in_file(&self.location);
        let mut cache = self.page_blooms.lock().unwrap_or_else(|e| e.into_inner());
        for (c, (range, hash)) in missing {
            let blob = fetched
                .slice(range.clone())
                .ok_or_else(|| Error::internal("a sidecar blob read went missing"))?;
            if *hash != blob_hash(rg, c, &blob) {
                return Err(ctx(Error::corrupt(format!(
                    "page Bloom blob of row group {rg}, column {c}: checksum mismatch"
                ))));
            }
            let rows = self.rows.get(rg).copied().unwrap_or(0);
            let blooms = Arc::new(PageBlooms::decode(&blob, rows).map_err(ctx)?);
            cache.insert((rg, c), blooms.clone());
            out.insert(c, blooms);
        }
        Ok(out)
    }

    /// The rows of row group `rg` where `leaf` holds, from the rows index of its column —
    /// `None` when there is none, the leaf is not one it answers (`=`, `IN`, ranges), or the
    /// blocks it would read cost more than `max_bytes` (reading the column is then cheaper).
    pub fn rows_matching(
        &self,
        scan_reader: &Reader,
        rg: usize,
        column: &LeafColumn,
        leaf: &Leaf,
        max_bytes: u64,
    ) -> Result<Option<Bitmap>> {
        let Some(blob) = self.rows_blobs.get(&(rg, column.index)) else {
            return Ok(None);
        };
        let ctx = |e: Error| {
            e.in_column(&column.path)
                .in_row_group(rg)
                .in_file(&self.location)
        };
        let fence = self.fence(scan_reader, rg, column, blob).map_err(ctx)?;
        let Some(blocks) = fence.blocks_for(leaf) else {
            return Ok(None);
        };
        let bytes: u64 = blocks
            .iter()
            .map(|&b| fence.blocks[b].range.end - fence.blocks[b].range.start)
            .sum();
        if bytes > max_bytes {
            return Ok(None);
        }
        let rows = self.rows.get(rg).copied().unwrap_or(0) as usize;
        let base = blob.range.start;
        let ranges: Vec<Range<u64>> = blocks
            .iter()
            .map(|&b| base + fence.blocks[b].range.start..base + fence.blocks[b].range.end)
            .collect();
        let fetched = self.read(scan_reader, &ranges).map_err(ctx)?;
        let mut out = Bitmap::new_zeroed(rows);
        for (&b, range) in blocks.iter().zip(&ranges) {
            let block = &fence.blocks[b];
            let bytes = fetched
                .slice(range.clone())
                .ok_or_else(|| Error::internal("a sidecar block read went missing"))?;
            if rows::block_hash(block.range.start, &bytes) != block.hash {
                return Err(ctx(Error::corrupt(format!(
                    "rows index block {b}: checksum mismatch"
                ))));
            }
            rows::block_rows(&bytes, column, leaf, rows, &mut out).map_err(ctx)?;
        }
        Ok(Some(out))
    }

    fn fence(
        &self,
        scan_reader: &Reader,
        rg: usize,
        column: &LeafColumn,
        blob: &RowsBlob,
    ) -> Result<Arc<Fence>> {
        let key = (rg, column.index);
        if let Some(f) = self
            .fences
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(f.clone());
        }
        let range = blob.range.start..blob.range.start + blob.fence_len;
        let fetched = self.read(scan_reader, std::slice::from_ref(&range))?;
        let bytes = fetched
            .slice(range)
            .ok_or_else(|| Error::internal("a sidecar fence read went missing"))?;
        if blob.fence_hash != blob_hash(rg, column.index, &bytes) {
            return Err(Error::corrupt("rows index fence: checksum mismatch"));
        }
        let blob_len = blob.range.end - blob.range.start;
        let fence = Arc::new(Fence::decode(&bytes, blob_len, column)?);
        self.fences
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, fence.clone());
        Ok(fence)
    }
}

fn blob_hash(rg: usize, column: usize, blob: &[u8]) -> String {
    let seed = ((rg as u64) << 32) ^ column as u64;
    format!("{:016x}", twox_hash::XxHash64::oneshot(seed, blob))
}

/// The sidecar of `file`, beside it.
pub fn sidecar_ref(file: &FileRef) -> FileRef {
    match file {
        FileRef::Local(p) => {
            let mut s = p.clone().into_os_string();
            s.push(SIDECAR_SUFFIX);
            FileRef::Local(s.into())
        }
        FileRef::Object { store, path, .. } => FileRef::Object {
            store: store.clone(),
            path: format!("{path}{SIDECAR_SUFFIX}").into(),
            size: None,
        },
    }
}

/// Writes `bytes` as the sidecar of `file` (beside it; for a local file, into `dir` instead when
/// given — a scan then finds it only if it is moved beside the data). Returns where.
pub fn write_sidecar(
    file: &FileRef,
    bytes: Vec<u8>,
    dir: Option<&std::path::Path>,
) -> Result<String> {
    let sidecar = sidecar_ref(file);
    match (&sidecar, dir) {
        (FileRef::Local(p), dir) => {
            let path = match (dir, p.file_name()) {
                (Some(d), Some(name)) => d.join(name),
                _ => p.clone(),
            };
            std::fs::write(&path, bytes).map_err(|e| Error::from(e).in_file(path.display()))?;
            Ok(path.display().to_string())
        }
        (FileRef::Object { .. }, Some(_)) => Err(Error::invalid(
            "--output applies to local files; object-store sidecars are written beside the data",
        )),
        (FileRef::Object { store, path, .. }, None) => {
            let url = store.url(path);
            crate::io::object::put(store, path, bytes).map_err(|e| e.in_file(&url))?;
            Ok(url)
        }
    }
}

/// Opens the sidecar beside `file` (or in `dir`, by the data file's name): one read of its
/// end, which holds the footer. `None` when there is none. `rows` are the data file's row
/// counts per row group and `columns` its leaf count, which every blob is checked against.
pub fn open_sidecar(
    file: &FileRef,
    dir: Option<&std::path::Path>,
    rows: &[u64],
    columns: usize,
) -> Result<Option<Sidecar>> {
    let mut sidecar = sidecar_ref(file);
    if let Some(dir) = dir {
        let name = match &sidecar {
            FileRef::Local(p) => p.file_name().map(|n| n.to_os_string()),
            FileRef::Object { path, .. } => path.filename().map(Into::into),
        };
        let name = name.ok_or_else(|| Error::invalid("a data file without a name"))?;
        sidecar = FileRef::Local(dir.join(name));
    }
    if let FileRef::Local(p) = &sidecar {
        if !p.exists() {
            return Ok(None);
        }
    }
    let (source, tail) = match sidecar.open() {
        Ok(x) => x,
        Err(e) if e.io_kind == Some(std::io::ErrorKind::NotFound) => return Ok(None),
        Err(e) => return Err(e),
    };
    Sidecar::open(source, tail, rows, columns).map(Some)
}
