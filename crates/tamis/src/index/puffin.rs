//! Apache Iceberg's Puffin container, which holds blobs of statistics and indexes beside data
//! files: the sidecar index is a Puffin file (spec: iceberg.apache.org/puffin-spec).
//!
//! ```text
//! Magic  Blob₁ … Blobₙ  Magic  FooterPayload  FooterPayloadSize  Flags  Magic
//! "PFA1"                "PFA1" UTF-8 JSON     i32 little-endian  4 B    "PFA1"
//! ```
//!
//! The footer payload lists each blob's type, offset, length and properties. tamis writes it
//! uncompressed, with blobs uncompressed; a compressed footer or blob is refused (an error, so
//! the scan reads without the index rather than guessing).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

pub const MAGIC: &[u8; 4] = b"PFA1";

/// Bytes after the footer payload: its size, the flags and the magic.
const FOOTER_TRAILER: usize = 4 + 4 + 4;

/// One blob as the footer describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct BlobMetadata {
    pub r#type: String,
    /// Iceberg field ids; tamis stores the Parquet leaf column index.
    pub fields: Vec<i32>,
    /// Required by the spec, meaningless outside an Iceberg table: -1.
    pub snapshot_id: i64,
    pub sequence_number: i64,
    pub offset: u64,
    pub length: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression_codec: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, String>,
}

/// The footer payload.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileMetadata {
    pub blobs: Vec<BlobMetadata>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, String>,
}

/// Writes a Puffin file into memory.
pub struct PuffinWriter {
    bytes: Vec<u8>,
    blobs: Vec<BlobMetadata>,
}

impl Default for PuffinWriter {
    fn default() -> Self {
        PuffinWriter {
            bytes: MAGIC.to_vec(),
            blobs: Vec::new(),
        }
    }
}

impl PuffinWriter {
    pub fn add(
        &mut self,
        r#type: &str,
        fields: Vec<i32>,
        properties: BTreeMap<String, String>,
        blob: &[u8],
    ) {
        self.blobs.push(BlobMetadata {
            r#type: r#type.to_string(),
            fields,
            snapshot_id: -1,
            sequence_number: -1,
            offset: self.bytes.len() as u64,
            length: blob.len() as u64,
            compression_codec: None,
            properties,
        });
        self.bytes.extend_from_slice(blob);
    }

    pub fn finish(mut self, properties: BTreeMap<String, String>) -> Result<Vec<u8>> {
        let footer = FileMetadata {
            blobs: self.blobs,
            properties,
        };
        let payload = serde_json::to_vec(&footer)
            .map_err(|e| Error::internal(format!("writing the Puffin footer: {e}")))?;
        let size = i32::try_from(payload.len())
            .map_err(|_| Error::resource("the Puffin footer exceeds 2 GiB"))?;
        self.bytes.extend_from_slice(MAGIC);
        self.bytes.extend_from_slice(&payload);
        self.bytes.extend_from_slice(&size.to_le_bytes());
        self.bytes.extend_from_slice(&[0; 4]);
        self.bytes.extend_from_slice(MAGIC);
        Ok(self.bytes)
    }
}

/// The footer of a whole Puffin file, every blob checked to lie between the header and the
/// footer.
pub fn read_footer(bytes: &[u8]) -> Result<FileMetadata> {
    if bytes.len() < 4 || &bytes[..4] != MAGIC {
        return Err(Error::corrupt(
            "not a valid Puffin file: no magic at the start",
        ));
    }
    read_footer_tail(bytes, bytes.len() as u64)
}

/// Bytes at the end of a file of `file_len` bytes that hold the footer: `tail` when they do
/// (the usual case, one read at open), else how many are needed.
pub fn footer_bytes_needed(tail: &[u8], file_len: u64) -> Result<u64> {
    let bad = |what: &str| Error::corrupt(format!("not a valid Puffin file: {what}"));
    if file_len < (4 + 4 + FOOTER_TRAILER) as u64 || tail.len() < FOOTER_TRAILER {
        return Err(bad("too short"));
    }
    let end = tail.len();
    let size = i32::from_le_bytes(tail[end - 12..end - 8].try_into().expect("4 bytes"));
    let size = u64::try_from(size).map_err(|_| bad("negative footer size"))?;
    Ok(size + 4 + FOOTER_TRAILER as u64)
}

/// The footer from the last bytes of a file of `file_len` bytes (`tail`, holding at least
/// [`footer_bytes_needed`]), every blob checked to lie between the header and the footer.
pub fn read_footer_tail(tail: &[u8], file_len: u64) -> Result<FileMetadata> {
    let bad = |what: &str| Error::corrupt(format!("not a valid Puffin file: {what}"));
    if file_len < (4 + 4 + FOOTER_TRAILER) as u64 || (tail.len() as u64) > file_len {
        return Err(bad("too short"));
    }
    let end = tail.len();
    if end < FOOTER_TRAILER || &tail[end - 4..] != MAGIC {
        return Err(bad("no magic at the end (truncated?)"));
    }
    let flags = &tail[end - 8..end - 4];
    if flags[0] & 1 != 0 {
        return Err(Error::unsupported("a compressed Puffin footer"));
    }
    let needed = footer_bytes_needed(tail, file_len)?;
    // The footer, and the magic of the file's start before it.
    if needed > file_len - 4 {
        return Err(bad("footer size beyond the file"));
    }
    let footer_len = usize::try_from(needed).map_err(|_| bad("footer size beyond the file"))?;
    let footer_start_in_tail = end
        .checked_sub(footer_len)
        .ok_or_else(|| bad("footer larger than the bytes given"))?;
    let footer_start = file_len - needed;
    let payload = &tail[footer_start_in_tail..end - FOOTER_TRAILER];
    if &payload[..4] != MAGIC {
        return Err(bad("no magic before the footer"));
    }
    let meta: FileMetadata =
        serde_json::from_slice(&payload[4..]).map_err(|e| bad(&format!("footer JSON: {e}")))?;
    for b in &meta.blobs {
        let inside = b.offset >= 4
            && b.offset
                .checked_add(b.length)
                .is_some_and(|e| e <= footer_start);
        if !inside {
            return Err(bad(&format!(
                "blob '{}' at {}+{} lies outside the blob area",
                b.r#type, b.offset, b.length
            )));
        }
        if b.compression_codec.is_some() {
            return Err(Error::unsupported(format!(
                "compressed Puffin blob '{}'",
                b.r#type
            )));
        }
    }
    Ok(meta)
}

/// The bytes of `blob` (checked by [`read_footer`]).
pub fn blob<'a>(bytes: &'a [u8], blob: &BlobMetadata) -> &'a [u8] {
    &bytes[blob.offset as usize..(blob.offset + blob.length) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_layout() {
        let mut w = PuffinWriter::default();
        let props = BTreeMap::from([("k".to_string(), "v".to_string())]);
        w.add("t1", vec![3], props.clone(), b"hello");
        w.add("t2", vec![], BTreeMap::new(), b"");
        let bytes = w.finish(props.clone()).unwrap();
        assert_eq!(&bytes[..4], MAGIC);
        assert_eq!(&bytes[4..9], b"hello");
        let meta = read_footer(&bytes).unwrap();
        assert_eq!(meta.properties, props);
        assert_eq!(meta.blobs.len(), 2);
        assert_eq!(blob(&bytes, &meta.blobs[0]), b"hello");
        assert_eq!((meta.blobs[0].offset, meta.blobs[0].length), (4, 5));
        assert_eq!(meta.blobs[0].fields, vec![3]);
        assert_eq!(meta.blobs[0].snapshot_id, -1);
        // The spec's field names.
        let json = std::str::from_utf8(&bytes[13..bytes.len() - 12]).unwrap();
        assert!(json.contains("\"snapshot-id\":-1"), "{json}");
        assert!(json.contains("\"sequence-number\":-1"), "{json}");
    }

    #[test]
    fn every_truncation_and_flip_is_an_error_or_a_valid_footer() {
        let mut w = PuffinWriter::default();
        w.add("t", vec![1], BTreeMap::new(), &[7; 40]);
        let bytes = w.finish(BTreeMap::new()).unwrap();
        for n in 0..bytes.len() {
            assert!(read_footer(&bytes[..n]).is_err(), "truncated to {n}");
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x5a;
            if let Ok(meta) = read_footer(&b) {
                for m in &meta.blobs {
                    let _ = blob(&b, m);
                }
            }
        }
    }
}
