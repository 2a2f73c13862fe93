//! Byte sources: positioned reads from local files, counted, and in-memory sets of fetched
//! ranges that the `parquet` crate's page reader can walk.
//!
//! Every byte tamis reads from a file goes through [`FileSource`], so `ScanMetrics::bytes_read`
//! is what was actually read: footers, page indexes, Bloom filters and the pages themselves.

use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use bytes::{Buf, Bytes};
use parquet::errors::ParquetError;
use parquet::file::reader::{ChunkReader, Length};

use crate::error::{Error, Result};

/// Wanted byte ranges closer than this are fetched with one read that includes the gap.
///
/// Measured by `bench/io_crossover.py` (64 KiB pages, local virtio disk, see BENCHMARKS.md "I/O
/// policy"): one read over the gap wins up to a 16 KiB gap and loses from 32 KiB on, both warm
/// (a system call ≈ copying 16–32 KiB) and cold (the kernel's readahead already covers small
/// gaps). Dense survivors make neighbouring pages adjacent, so they merge into large reads;
/// sparse survivors keep their pages apart and only those are read.
pub const COALESCE_GAP: u64 = 16 << 10;

/// Merged reads at least this large, when several, are issued in parallel on the scan's pool.
const PARALLEL_READ_BYTES: u64 = 1 << 20;

/// A local file read with positioned reads (`pread`), shared by all row-group workers.
#[derive(Debug, Clone)]
pub struct FileSource {
    file: Arc<File>,
    path: PathBuf,
    len: u64,
    bytes_read: Arc<AtomicU64>,
}

impl FileSource {
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| Error::from(e).in_file(path.display()))?;
        let len = file
            .metadata()
            .map_err(|e| Error::from(e).in_file(path.display()))?
            .len();
        Ok(FileSource {
            file: Arc::new(file),
            path: path.to_path_buf(),
            len,
            bytes_read: Arc::new(AtomicU64::new(0)),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes read from this file so far (by every clone).
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.load(Relaxed)
    }

    /// Reads `range`, which must lie within the file (checked before allocating).
    pub fn read_range(&self, range: Range<u64>) -> Result<Bytes> {
        Ok(self.get_bytes(
            range.start,
            (range.end.saturating_sub(range.start)) as usize,
        )?)
    }

    /// Reads several ranges, merging ranges closer than `gap` bytes into one read.
    pub fn read_ranges(&self, ranges: &[Range<u64>], gap: u64) -> Result<FetchedRanges> {
        let mut sorted: Vec<Range<u64>> =
            ranges.iter().filter(|r| r.end > r.start).cloned().collect();
        sorted.sort_by_key(|r| r.start);
        let mut merged: Vec<Range<u64>> = Vec::new();
        for r in sorted {
            match merged.last_mut() {
                Some(last) if r.start <= last.end.saturating_add(gap) => {
                    last.end = last.end.max(r.end)
                }
                _ => merged.push(r),
            }
        }
        // Independent ranges in parallel when the scan has threads to spare (a cold cache or a
        // slow device overlaps their latencies); the calling thread's pool sets the limit.
        let total: u64 = merged.iter().map(|r| r.end - r.start).sum();
        let read = |r: &Range<u64>| Ok((r.start, self.read_range(r.clone())?));
        let pieces =
            if merged.len() > 1 && total >= PARALLEL_READ_BYTES && rayon::current_num_threads() > 1
            {
                use rayon::prelude::*;
                merged.par_iter().map(read).collect::<Result<Vec<_>>>()?
            } else {
                merged.iter().map(read).collect::<Result<Vec<_>>>()?
            };
        Ok(FetchedRanges {
            pieces,
            len: self.len,
        })
    }
}

impl Length for FileSource {
    fn len(&self) -> u64 {
        self.len
    }
}

/// A `Read` at a position of a [`FileSource`], counting what it reads.
pub struct PositionedReader {
    source: FileSource,
    pos: u64,
}

impl Read for PositionedReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.source.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        self.source.bytes_read.fetch_add(n as u64, Relaxed);
        Ok(n)
    }
}

impl ChunkReader for FileSource {
    type T = PositionedReader;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(PositionedReader {
            source: self.clone(),
            pos: start,
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let end = start
            .checked_add(length as u64)
            .filter(|&e| e <= self.len)
            .ok_or_else(|| {
                ParquetError::General(format!(
                    "byte range {start}+{length} lies beyond the end of the file ({} bytes)",
                    self.len
                ))
            })?;
        let mut buf = vec![0u8; (end - start) as usize];
        self.file
            .read_exact_at(&mut buf, start)
            .map_err(|e| ParquetError::External(Box::new(e)))?;
        self.bytes_read.fetch_add(length as u64, Relaxed);
        Ok(Bytes::from(buf))
    }
}

/// Byte ranges of a file already fetched into memory; serves the page reader without I/O.
/// Asking for bytes that were not fetched is an error (it would be a bug in the I/O plan).
#[derive(Debug, Clone)]
pub struct FetchedRanges {
    pieces: Vec<(u64, Bytes)>,
    len: u64,
}

impl FetchedRanges {
    fn piece(&self, start: u64) -> parquet::errors::Result<(u64, &Bytes)> {
        let i = self.pieces.partition_point(|(s, _)| *s <= start);
        if i > 0 {
            let (s, data) = &self.pieces[i - 1];
            // A zero-length read may start at the very end of a piece (an empty page body).
            if start <= s + data.len() as u64 {
                return Ok((*s, data));
            }
        }
        Err(ParquetError::General(format!(
            "offset {start} lies outside the column chunk"
        )))
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
        let (s, data) = self.piece(start)?;
        Ok(data.slice((start - s) as usize..).reader())
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let (s, data) = self.piece(start)?;
        let from = (start - s) as usize;
        let to = from
            .checked_add(length)
            .filter(|&t| t <= data.len())
            .ok_or_else(|| {
                ParquetError::General(format!(
                    "page at offset {start} of {length} bytes runs past the column chunk"
                ))
            })?;
        Ok(data.slice(from..to))
    }
}

impl FetchedRanges {
    pub fn from_pieces(mut pieces: Vec<(u64, Bytes)>, len: u64) -> Self {
        pieces.sort_by_key(|(s, _)| *s);
        FetchedRanges { pieces, len }
    }
    pub fn into_pieces(self) -> Vec<(u64, Bytes)> {
        self.pieces
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn counts_and_checks_bounds() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&(0u8..100).collect::<Vec<_>>()).unwrap();
        let src = FileSource::open(f.path()).unwrap();
        assert_eq!(
            src.get_bytes(10, 5).unwrap().as_ref(),
            &[10, 11, 12, 13, 14]
        );
        assert_eq!(src.bytes_read(), 5);
        assert!(src.get_bytes(98, 5).is_err());
        assert!(src.get_bytes(u64::MAX - 1, 5).is_err());
        let fetched = src.read_ranges(&[20..30, 32..40, 80..90], 4).unwrap();
        assert_eq!(src.bytes_read(), 5 + 20 + 10);
        assert_eq!(fetched.get_bytes(33, 2).unwrap().as_ref(), &[33, 34]);
        assert!(fetched.get_bytes(50, 1).is_err());
        assert!(fetched.get_bytes(88, 5).is_err());
    }

    /// Large independent ranges are read in parallel inside a multi-threaded pool, sequentially
    /// outside one; both serve the same bytes.
    #[test]
    fn parallel_reads_serve_the_same_bytes() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let data: Vec<u8> = (0..6u32 << 20).map(|i| (i * 31 % 251) as u8).collect();
        f.write_all(&data).unwrap();
        let src = FileSource::open(f.path()).unwrap();
        let ranges = [0..(1 << 20), (2 << 20)..(3 << 20) + 7, (5 << 20)..(6 << 20)];
        let check = |fetched: &FetchedRanges| {
            for r in &ranges {
                let got = fetched
                    .get_bytes(r.start, (r.end - r.start) as usize)
                    .unwrap();
                assert_eq!(got.as_ref(), &data[r.start as usize..r.end as usize]);
            }
        };
        check(&src.read_ranges(&ranges, COALESCE_GAP).unwrap());
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.install(|| check(&src.read_ranges(&ranges, COALESCE_GAP).unwrap()));
        assert_eq!(src.bytes_read(), 2 * ((3 << 20) + 7));
    }
}
