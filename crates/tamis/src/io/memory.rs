//! Bytes already in memory as a [`ByteSource`]: a sidecar or file a tool holds whole (the
//! fuzzer, tests), read through the same checked paths as files.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use bytes::Bytes;

use super::{ByteSource, Identity, IoProfile};
use crate::error::{Error, Result};

#[derive(Debug)]
pub(crate) struct MemorySource {
    location: String,
    bytes: Bytes,
    identity: Identity,
}

impl MemorySource {
    pub(crate) fn new(location: &str, bytes: Bytes) -> Self {
        MemorySource {
            location: location.to_string(),
            identity: Identity {
                len: bytes.len() as u64,
                etag: None,
                modified_ns: None,
                stamp: None,
            },
            bytes,
        }
    }
}

impl ByteSource for MemorySource {
    fn location(&self) -> &str {
        &self.location
    }

    fn identity(&self) -> &Identity {
        &self.identity
    }

    fn read_ranges(&self, ranges: &[Range<u64>], cancel: &AtomicBool) -> Result<Vec<Bytes>> {
        ranges
            .iter()
            .map(|r| {
                if cancel.load(Relaxed) {
                    return Err(super::cancelled());
                }
                let end = usize::try_from(r.end)
                    .ok()
                    .filter(|&e| e <= self.bytes.len());
                match end {
                    Some(end) if r.start <= r.end => Ok(self.bytes.slice(r.start as usize..end)),
                    _ => Err(Error::corrupt(format!(
                        "byte range {}..{} beyond the end ({} bytes)",
                        r.start,
                        r.end,
                        self.bytes.len()
                    ))
                    .in_file(&self.location)),
                }
            })
            .collect()
    }

    fn profile(&self) -> IoProfile {
        IoProfile {
            first_byte_ns: 0,
            bytes_per_sec: u64::MAX,
            concurrency: 1,
        }
    }

    fn is_remote(&self) -> bool {
        false
    }
}
