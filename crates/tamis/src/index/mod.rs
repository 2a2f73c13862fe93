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
//! A sidecar is named `.<data file name>.tamis.puffin`, beside the data: the leading `.` makes
//! every reader of the directory skip it (Spark, Hive, pyarrow and Polars ignore hidden and
//! `_` files), where `<name>.tamis.puffin` (read still, never written) was taken for data by
//! engines that list a directory without filtering by extension. In an index directory
//! (`tamis index --output DIR`) the name also carries a hash of the data file's full location,
//! so that two files of the same name in different directories keep their own sidecars.
//!
//! A sidecar records the identity of the data file it indexes: its length, an xxHash64 of its
//! footer, its modification time (local files) or ETag (objects), and per indexed column chunk
//! an xxHash64 of the chunk's bytes. A scan uses a sidecar only when length, footer hash and
//! mtime or ETag match; otherwise it reads as if there were none and `explain` counts the stale
//! index — a stale index costs time, never rows. Data pages live outside the footer: a rewrite
//! that keeps the length and the footer and sets the mtime back is caught by the chunk hashes,
//! which `tamis index --verify` checks and a scan checks when asked ([`crate::Scan::verify_index`]):
//! reading the chunk is what an index saves, so it is not the default.
//!
//! Sidecars are written to a temporary file in the target's directory and renamed over it: a
//! killed `tamis index` leaves the old sidecar or none, and a symbolic link planted at the
//! target is replaced, never followed.

pub(crate) mod build;
mod identity;
pub(crate) mod levels;
mod lookup;
#[doc(hidden)]
pub mod page_bloom;
#[doc(hidden)]
pub mod puffin;
pub(crate) mod rows;

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::Arc;

use std::sync::Mutex;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::expr::Leaf;
use crate::io::{ByteSource, FetchedRanges, Reader};
use crate::schema::LeafColumn;
use crate::selection::Bitmap;
use page_bloom::PageBlooms;
use rows::Fence;

pub use build::{
    build_index, index_files, verify_files, IndexKind, IndexOptions, IndexReport, VerifyReport,
};
pub(crate) use identity::{chunk_hash, chunk_range, DataFileIdentity};
pub use levels::BrokenIndex;
pub(crate) use lookup::{
    open_sidecar, prefetch_sidecar, seed_sidecar, sidecar_of, Lookup, SidecarState,
};
pub use lookup::{sidecar_name, sidecar_refs, write_atomically, write_sidecar};

/// Appended to a data file's name to name its sidecar (see [`sidecar_name`]).
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
/// xxHash64 (seed 0) of the indexed column chunk's bytes, from its first page to its end.
const PROP_CHUNK_HASH: &str = "tamis.chunk-xxh64";
/// xxHash64 of a blob's bytes, seeded with its row group and column: a flipped bit in a filter
/// (or in the footer's row group or column) could hide a page, so every blob is checked before
/// use.
const PROP_BLOB_HASH: &str = "tamis.xxh64";

/// A blob of a sidecar as written: page filters or a rows index of one (row group, column).
#[derive(Debug, Clone)]
pub enum IndexBlob {
    /// One Bloom filter per data page of the chunk.
    PageBloom {
        /// Row group of the data file.
        row_group: usize,
        /// Leaf column of the data file.
        column: usize,
        /// The filters' encoding (each page's first row and bitset).
        blob: Vec<u8>,
        /// `chunk_hash` of the indexed column chunk.
        chunk_hash: u64,
    },
    /// The chunk's sorted distinct values with their row ids.
    Rows {
        /// Row group of the data file.
        row_group: usize,
        /// Leaf column of the data file.
        column: usize,
        /// The rows index's encoding: a fence (the blocks' directory), then the blocks of
        /// values with their row ids.
        blob: Vec<u8>,
        /// Length of the blob's fence (its first bytes), read before any block.
        fence_len: usize,
        /// xxHash64 of the indexed column chunk's bytes.
        chunk_hash: u64,
    },
}

/// An opened sidecar. Only its footer is read at open (usually in the same read that finds
/// it); blobs are read when a scan needs them, through the scan's reader (counted in its bytes
/// and requests), checked against their checksums, and kept.
#[derive(Debug)]
pub struct Sidecar {
    /// Its path or URL.
    pub location: String,
    /// The data file it was built for (length, footer hash, mtime or ETag); `None` when the
    /// sidecar records none: a scan then treats it as stale.
    pub identity: Option<DataFileIdentity>,
    source: Arc<dyn ByteSource>,
    /// What the open read: the end of the sidecar (footer and, often, every blob).
    tail: Arc<FetchedRanges>,
    page_bloom_blobs: HashMap<(usize, usize), (Range<u64>, String)>,
    rows_blobs: HashMap<(usize, usize), RowsBlob>,
    /// [`chunk_hash`] of each indexed column chunk (absent in sidecars of tamis before they
    /// were recorded).
    chunk_hashes: HashMap<(usize, usize), u64>,
    /// Chunks a scan has checked against their hash, and what it found.
    verified: Mutex<HashMap<(usize, usize), bool>>,
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
                    chunk_hash,
                } => {
                    let props = BTreeMap::from([
                        (PROP_ROW_GROUP.to_string(), row_group.to_string()),
                        (PROP_COLUMN.to_string(), columns(*column)),
                        (PROP_CHUNK_HASH.to_string(), format!("{chunk_hash:016x}")),
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
                    chunk_hash,
                } => {
                    let fence = &blob[..*fence_len];
                    let props = BTreeMap::from([
                        (PROP_ROW_GROUP.to_string(), row_group.to_string()),
                        (PROP_COLUMN.to_string(), columns(*column)),
                        (PROP_CHUNK_HASH.to_string(), format!("{chunk_hash:016x}")),
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
        sidecar.check_blobs(&reader)?;
        Ok(sidecar)
    }

    /// Reads every blob and checks it against its checksum: page filters decoded, rows-index
    /// fences checked (their blocks are checked as scans read them). `scan_reader` counts.
    pub fn check_blobs(&self, scan_reader: &Reader) -> Result<()> {
        let ctx = |e: Error| e.in_file(&self.location);
        let mut keys: Vec<(usize, usize)> = self.page_bloom_blobs.keys().copied().collect();
        keys.sort_unstable();
        for (rg, c) in keys {
            self.page_blooms(scan_reader, rg, &[c])?;
        }
        for ((rg, c), blob) in &self.rows_blobs {
            let fence = blob.range.start..blob.range.start + blob.fence_len;
            let fetched = self.read(scan_reader, std::slice::from_ref(&fence))?;
            let fence = fetched.slice(fence).unwrap_or_default();
            if blob.fence_hash != blob_hash(*rg, *c, &fence) {
                return Err(ctx(Error::corrupt(format!(
                    "rows index fence of row group {rg}, column {c}: checksum mismatch"
                ))));
            }
        }
        Ok(())
    }

    /// The recorded content hash of chunk `(rg, column)`, if the sidecar indexes it and
    /// recorded one.
    pub fn recorded_chunk_hash(&self, rg: usize, column: usize) -> Option<u64> {
        self.chunk_hashes.get(&(rg, column)).copied()
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
        // The tail came with the lookup's request (counted there); a long footer's rest is
        // counted here, unless the cache directory held it.
        let mut open_cost = (tail.len() as u64, 0);
        let tail = if needed as usize > tail.len() && needed <= len {
            let never = std::sync::atomic::AtomicBool::new(false);
            let range = len - needed..len;
            let (read, requests) =
                crate::io::read_metadata(&*source, std::slice::from_ref(&range), &never)?;
            if requests > 0 {
                open_cost = (open_cost.0 + needed, requests as u64);
            }
            read.into_iter().next().unwrap_or_default()
        } else {
            tail
        };
        let fetched =
            FetchedRanges::from_pieces(vec![(len - tail.len() as u64, tail.clone())], len);
        let mut sidecar = Self::from_tail(&location, source, tail, fetched, rows, columns)?;
        sidecar.open_cost = open_cost;
        Ok(sidecar)
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
        let mut chunk_hashes = HashMap::new();
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
            if let Some(h) = b.properties.get(PROP_CHUNK_HASH) {
                let h = u64::from_str_radix(h, 16).map_err(|_| {
                    ctx(Error::corrupt(format!("{kind} blob with a bad chunk hash")))
                })?;
                chunk_hashes.insert((rg, column), h);
            }
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
            chunk_hashes,
            verified: Mutex::default(),
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
            .read_metadata_ranges(ranges, &[])
            .map_err(|e| e.in_file(&self.location))
    }

    /// The (row group, column) chunks the sidecar indexes, sorted.
    pub fn indexed_chunks(&self) -> Vec<(usize, usize)> {
        let mut v: Vec<(usize, usize)> = (self.page_bloom_blobs.keys())
            .chain(self.rows_blobs.keys())
            .copied()
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Whether the indexed chunks `columns` of row group `rg` still hold the bytes the sidecar
    /// was built from: each chunk is read through `scan_reader` (`data` is the data file's
    /// metadata and length) and hashed, once per sidecar. A chunk without a recorded hash (a
    /// sidecar of an older tamis) does not verify.
    pub fn chunks_verified(
        &self,
        scan_reader: &Reader,
        data: (&parquet::file::metadata::ParquetMetaData, u64),
        rg: usize,
        columns: &[usize],
    ) -> Result<bool> {
        let mut wanted = Vec::new();
        {
            let verified = self.verified.lock().unwrap_or_else(|e| e.into_inner());
            for &c in columns {
                if !self.has_page_blooms(rg, c) && !self.has_rows(rg, c) {
                    continue;
                }
                match verified.get(&(rg, c)) {
                    Some(false) => return Ok(false),
                    Some(true) => {}
                    None => wanted.push(c),
                }
            }
        }
        let mut all = true;
        for c in wanted {
            let ok = match self.chunk_hashes.get(&(rg, c)) {
                None => false,
                Some(&want) => {
                    let range = chunk_range(data.0, data.1, rg, c)?;
                    chunk_hash(&scan_reader.read_range(range)?) == want
                }
            };
            self.verified
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert((rg, c), ok);
            all &= ok;
        }
        Ok(all)
    }

    /// Whether the sidecar has page filters for `(row group, column)`.
    pub fn has_page_blooms(&self, rg: usize, column: usize) -> bool {
        self.page_bloom_blobs.contains_key(&(rg, column))
    }

    /// Whether the sidecar has a rows index for `(row group, column)`.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::location::FileRef;
    use futures::stream::BoxStream;
    use object_store::memory::InMemory;
    use object_store::path::Path as ObjectPath;
    use object_store::{
        CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
        PutMultipartOptions, PutOptions, PutPayload, PutResult,
    };

    /// An object store that answers 403 for every sidecar key, as S3 does for a missing key to
    /// a reader without `s3:ListBucket`.
    #[derive(Debug)]
    struct Denying(InMemory);

    impl std::fmt::Display for Denying {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "Denying")
        }
    }

    #[async_trait::async_trait]
    impl ObjectStore for Denying {
        async fn put_opts(
            &self,
            location: &ObjectPath,
            payload: PutPayload,
            opts: PutOptions,
        ) -> object_store::Result<PutResult> {
            self.0.put_opts(location, payload, opts).await
        }
        async fn put_multipart_opts(
            &self,
            location: &ObjectPath,
            opts: PutMultipartOptions,
        ) -> object_store::Result<Box<dyn MultipartUpload>> {
            self.0.put_multipart_opts(location, opts).await
        }
        async fn get_opts(
            &self,
            location: &ObjectPath,
            options: GetOptions,
        ) -> object_store::Result<GetResult> {
            if location.as_ref().ends_with(SIDECAR_SUFFIX) {
                return Err(object_store::Error::PermissionDenied {
                    path: location.to_string(),
                    source: "403 Forbidden".into(),
                });
            }
            self.0.get_opts(location, options).await
        }
        fn delete_stream(
            &self,
            locations: BoxStream<'static, object_store::Result<ObjectPath>>,
        ) -> BoxStream<'static, object_store::Result<ObjectPath>> {
            self.0.delete_stream(locations)
        }
        fn list(
            &self,
            prefix: Option<&ObjectPath>,
        ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
            self.0.list(prefix)
        }
        async fn list_with_delimiter(
            &self,
            prefix: Option<&ObjectPath>,
        ) -> object_store::Result<ListResult> {
            self.0.list_with_delimiter(prefix).await
        }
        async fn copy_opts(
            &self,
            from: &ObjectPath,
            to: &ObjectPath,
            options: CopyOptions,
        ) -> object_store::Result<()> {
            self.0.copy_opts(from, to, options).await
        }
    }

    #[test]
    fn a_refused_sidecar_lookup_reads_as_absent() {
        let connect: crate::io::object::Connect =
            Box::new(|| Ok(Arc::new(Denying(InMemory::new())) as Arc<dyn ObjectStore>));
        let store = Arc::new(
            crate::io::object::Store::new(connect, "s3://bucket".into(), None, None).unwrap(),
        );
        let path = ObjectPath::from("d/k=1/t.parquet");
        let file = FileRef::Object {
            store,
            path,
            size: None,
        };
        let [new, legacy] = sidecar_refs(&file, None).unwrap();
        assert_eq!(new.location(), "s3://bucket/d/k=1/.t.parquet.tamis.puffin");
        assert_eq!(
            legacy.location(),
            "s3://bucket/d/k=1/t.parquet.tamis.puffin"
        );
        match open_sidecar(&file, None, &[10], 2).unwrap() {
            Lookup::Denied(why) => assert!(why.contains("access denied"), "{why}"),
            other => panic!("expected Denied, got {other:?}"),
        }
    }
}
