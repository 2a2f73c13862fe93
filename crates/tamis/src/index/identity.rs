//! The identity of a data file as a sidecar records it: length, footer hash, and mtime or ETag,
//! and per indexed column chunk a hash of its bytes.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::io::Reader;

use std::collections::BTreeMap;

use super::{
    FORMAT_VERSION, PROP_ETAG, PROP_FOOTER_HASH, PROP_LENGTH, PROP_MODIFIED, PROP_VERSION,
};

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

    pub(super) fn properties(&self) -> BTreeMap<String, String> {
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

    /// Same data, as far as a scan checks without reading data pages: the length and the
    /// footer hash agree, and so do the ETags when both have one (objects), else the
    /// modification times (local files). A copy that does not keep the mtime makes the sidecar
    /// stale (rebuild it, or copy with `cp -p`): that costs time; the other way costs rows.
    pub fn matches(&self, other: &DataFileIdentity) -> bool {
        let version = match (&self.etag, &other.etag) {
            (Some(a), Some(b)) => a == b,
            _ => self.modified_ns == other.modified_ns,
        };
        self.len == other.len && self.footer_hash == other.footer_hash && version
    }

    /// Why `self` (recorded) and `other` (the file now) differ, for reports.
    pub fn mismatch(&self, other: &DataFileIdentity) -> Option<String> {
        if self.len != other.len {
            return Some(format!(
                "built for {} bytes, the file has {}",
                self.len, other.len
            ));
        }
        if self.footer_hash != other.footer_hash {
            return Some("built for another footer".into());
        }
        if let (Some(a), Some(b)) = (&self.etag, &other.etag) {
            return (a != b).then(|| format!("built for ETag {a}, the object has {b}"));
        }
        (self.modified_ns != other.modified_ns)
            .then(|| "built for another modification time of the file".into())
    }
}

/// The byte range of column chunk `column` of row group `rg` (first page to the chunk's end),
/// checked against the file's length.
pub(crate) fn chunk_range(
    metadata: &parquet::file::metadata::ParquetMetaData,
    file_len: u64,
    rg: usize,
    column: usize,
) -> Result<Range<u64>> {
    let chunk = metadata.row_group(rg).column(column);
    let (start, len) = chunk.byte_range();
    start
        .checked_add(len)
        .filter(|&end| end <= file_len)
        .map(|end| start..end)
        .ok_or_else(|| {
            Error::corrupt(format!(
                "column chunk {column} of row group {rg} lies beyond the file"
            ))
        })
}

/// The content hash of a column chunk's bytes, as [`PROP_CHUNK_HASH`] records it.
pub(crate) fn chunk_hash(bytes: &[u8]) -> u64 {
    twox_hash::XxHash64::oneshot(0, bytes)
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
