//! Sidecar indexes: lookup structures for existing Parquet files, kept beside them in a Puffin
//! file (`<data file>.tamis.puffin`) instead of rewriting the data (`tamis index`).
//!
//! ```text
//! puffin.rs      the container: blobs plus a JSON footer (Apache Iceberg's Puffin format)
//! page_bloom.rs  one split-block Bloom filter per data page: `=` / `IN` skip pages
//! build.rs       reading a file's columns page by page to build the filters
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

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::Arc;

use crate::error::{Error, ErrorKind, Result};
use crate::io::location::FileRef;
use crate::io::Reader;
use page_bloom::PageBlooms;

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

/// A loaded sidecar: page filters by (row group, leaf column).
#[derive(Debug, Default)]
pub struct Sidecar {
    pub location: String,
    pub identity: Option<DataFileIdentity>,
    pub page_blooms: HashMap<(usize, usize), PageBlooms>,
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
    /// Serializes page filters for a file of `identity`; `columns` names each leaf's path.
    pub fn write(
        identity: &DataFileIdentity,
        blooms: &[(usize, usize, Vec<u8>)],
        columns: &dyn Fn(usize) -> String,
    ) -> Result<Vec<u8>> {
        let mut w = puffin::PuffinWriter::default();
        for (rg, column, blob) in blooms {
            let props = BTreeMap::from([
                (PROP_ROW_GROUP.to_string(), rg.to_string()),
                (PROP_COLUMN.to_string(), columns(*column)),
                (PROP_BLOB_HASH.to_string(), blob_hash(*rg, *column, blob)),
            ]);
            w.add(page_bloom::BLOB_TYPE, vec![*column as i32], props, blob);
        }
        w.finish(identity.properties())
    }

    /// Parses a sidecar for a file whose row groups have `rows[rg]` rows and `columns` leaves.
    /// Blobs of unknown types are skipped (newer writers may add some).
    pub fn parse(location: &str, bytes: &[u8], rows: &[u64], columns: usize) -> Result<Sidecar> {
        let ctx = |e: Error| e.in_file(location);
        let meta = puffin::read_footer(bytes).map_err(ctx)?;
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
        let mut page_blooms = HashMap::new();
        for b in meta
            .blobs
            .iter()
            .filter(|b| b.r#type == page_bloom::BLOB_TYPE)
        {
            let rg: usize = b
                .properties
                .get(PROP_ROW_GROUP)
                .and_then(|r| r.parse().ok())
                .filter(|&r| r < rows.len())
                .ok_or_else(|| ctx(Error::corrupt("page Bloom blob without a valid row group")))?;
            let column = match b.fields.as_slice() {
                [c] if (*c as usize) < columns && *c >= 0 => *c as usize,
                _ => {
                    return Err(ctx(Error::corrupt(
                        "page Bloom blob without a valid column",
                    )))
                }
            };
            let blob = puffin::blob(bytes, b);
            if b.properties.get(PROP_BLOB_HASH) != Some(&blob_hash(rg, column, blob)) {
                return Err(ctx(Error::corrupt(format!(
                    "page Bloom blob of row group {rg}, column {column}: checksum mismatch"
                ))));
            }
            let blooms = PageBlooms::decode(blob, rows[rg]).map_err(ctx)?;
            page_blooms.insert((rg, column), blooms);
        }
        Ok(Sidecar {
            location: location.to_string(),
            identity: Some(identity),
            page_blooms,
        })
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

/// Reads a whole sidecar (beside `file`, or in `dir` by the data file's name), `None` when
/// there is none.
pub fn read_sidecar(
    file: &FileRef,
    dir: Option<&std::path::Path>,
) -> Result<Option<(String, Vec<u8>)>> {
    let mut sidecar = sidecar_ref(file);
    if let Some(dir) = dir {
        let name = match &sidecar {
            FileRef::Local(p) => p.file_name().map(|n| n.to_os_string()),
            FileRef::Object { path, .. } => path.filename().map(Into::into),
        };
        let name = name.ok_or_else(|| Error::invalid("a data file without a name"))?;
        sidecar = FileRef::Local(dir.join(name));
    }
    let location = sidecar.location();
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
    let len = source.identity().len;
    let bytes = if tail.len() as u64 == len {
        tail.to_vec()
    } else {
        let never = std::sync::atomic::AtomicBool::new(false);
        let whole = source.read_ranges(std::slice::from_ref(&(0..len)), &never)?;
        whole.into_iter().next().unwrap_or_default().to_vec()
    };
    if bytes.len() as u64 != len {
        return Err(Error::new(ErrorKind::Io, "short read of the sidecar").in_file(&location));
    }
    Ok(Some((location, bytes)))
}
