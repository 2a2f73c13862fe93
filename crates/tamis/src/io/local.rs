//! Local files: positioned reads (`pread`), with the kernel's readahead turned off.
//!
//! tamis reads a file in planned ranges (footer, indexes, the pages it needs), so readahead
//! only inflates what the disk delivers: before `POSIX_FADV_RANDOM`, a cold Q6 made the kernel
//! read 85.7 MiB for tamis's 35.5 MiB. Ranges closer than [`super::LOCAL_COALESCE_GAP`] are
//! already merged by the reader, which is the readahead worth having.

use std::fs::File;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::UNIX_EPOCH;

use bytes::Bytes;

use super::{ByteSource, Identity, IoProfile};
use crate::error::{Error, Result};

/// Merged reads at least this large, when several, are issued in parallel on the scan's pool.
const PARALLEL_READ_BYTES: u64 = 1 << 20;

/// Bytes per `POSIX_FADV_WILLNEED`: the kernel loads at most its readahead window (or the
/// device's largest request) per advice and ignores the rest of a longer range, so a range is
/// advised in pieces no window is smaller than (512 KiB requests are the least of common SSDs
/// and virtio disks; 128 KiB windows read a quarter of each, still ahead of the reads).
#[cfg(target_os = "linux")]
const WILL_NEED_PIECE: u64 = 512 << 10;

/// The identity of the file at `path` now, without opening it (a `stat`): what a kept file is
/// checked against before a scan uses it again.
pub(crate) fn current_identity(path: &Path) -> Result<Identity> {
    let meta = std::fs::metadata(path).map_err(|e| Error::from(e).in_file(path.display()))?;
    Ok(identity_of(&meta))
}

fn identity_of(meta: &std::fs::Metadata) -> Identity {
    let modified_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i64);
    #[cfg(unix)]
    let stamp = {
        use std::os::unix::fs::MetadataExt;
        Some(super::FileStamp {
            device: meta.dev(),
            inode: meta.ino(),
            changed_ns: meta.ctime() * 1_000_000_000 + meta.ctime_nsec(),
        })
    };
    #[cfg(not(unix))]
    let stamp = None;
    Identity {
        len: meta.len(),
        etag: None,
        modified_ns,
        stamp,
    }
}

/// A local file shared by all row-group workers of every scan that reads it.
#[derive(Debug)]
pub(crate) struct LocalFile {
    file: File,
    location: String,
    identity: Identity,
}

impl LocalFile {
    pub(crate) fn open(path: &Path) -> Result<Self> {
        let ctx = |e: std::io::Error| Error::from(e).in_file(path.display());
        let file = File::open(path).map_err(ctx)?;
        let meta = file.metadata().map_err(ctx)?;
        if meta.is_dir() {
            return Err(
                Error::invalid("is a directory, not a Parquet file").in_file(path.display())
            );
        }
        // Advice only: a file system that ignores it reads as before.
        let _ = rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::Random);
        Ok(LocalFile {
            file,
            location: path.display().to_string(),
            identity: identity_of(&meta),
        })
    }

    /// Reads `r` into fresh, uninitialised memory: zero-filling a buffer the read overwrites
    /// would cost a pass over every byte read (Q6 on SF1: 35 MiB).
    fn read_one(&self, r: &Range<u64>) -> Result<Bytes> {
        let len = (r.end - r.start) as usize;
        // A dropped read's or page's buffer when one fits: memory already mapped, so no page
        // faults (see `recycle`).
        if let Some(mut buf) = super::recycle::take(len) {
            // A recycled buffer: read over the bytes written before (only a part it grows by
            // is zeroed first).
            buf.resize(len, 0);
            let mut done = 0;
            while done < len {
                let read = rustix::io::pread(&self.file, &mut buf[done..], r.start + done as u64);
                done += self.count(read, r)?;
            }
            return Ok(super::recycle::bytes(buf, len));
        }
        // A new buffer: read into its unused capacity (exactly `len`), never written first.
        let mut buf = Vec::with_capacity(len);
        while buf.len() < len {
            let at = r.start + buf.len() as u64;
            let read = rustix::io::pread(&self.file, rustix::buffer::spare_capacity(&mut buf), at);
            self.count(read, r)?;
        }
        Ok(super::recycle::bytes(buf, len))
    }

    /// The bytes one `pread` of `r` read (0 when interrupted, to retry); the file ending before
    /// `r` does is an error.
    fn count(&self, read: rustix::io::Result<usize>, r: &Range<u64>) -> Result<usize> {
        match read {
            Ok(0) => {
                let e = std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("the file ends before byte {}", r.end),
                );
                Err(Error::from(e).in_file(&self.location))
            }
            Ok(n) => Ok(n),
            Err(rustix::io::Errno::INTR) => Ok(0),
            Err(e) => Err(Error::from(std::io::Error::from(e)).in_file(&self.location)),
        }
    }
}

impl ByteSource for LocalFile {
    fn location(&self) -> &str {
        &self.location
    }

    fn identity(&self) -> &Identity {
        &self.identity
    }

    fn read_ranges(&self, ranges: &[Range<u64>], cancel: &AtomicBool) -> Result<Vec<Bytes>> {
        let read = |r: &Range<u64>| {
            if cancel.load(Relaxed) {
                return Err(super::cancelled());
            }
            self.read_one(r)
        };
        // Independent ranges in parallel when the scan has threads to spare (a cold cache or a
        // slow device overlaps their latencies); the calling thread's pool sets the limit.
        let total: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        if ranges.len() > 1 && total >= PARALLEL_READ_BYTES && rayon::current_num_threads() > 1 {
            use rayon::prelude::*;
            ranges.par_iter().map(read).collect()
        } else {
            ranges.iter().map(read).collect()
        }
    }

    fn profile(&self) -> IoProfile {
        // A rough SSD figure; not used for coalescing or the footer read (both measured
        // constants: `LOCAL_COALESCE_GAP`, `LOCAL_TAIL_READ`).
        IoProfile {
            first_byte_ns: 100_000,
            bytes_per_sec: 1_000_000_000,
            concurrency: 1,
        }
    }

    fn is_remote(&self) -> bool {
        false
    }

    /// A one-byte read the kernel serves only from the page cache (`RWF_NOWAIT`): `EAGAIN`
    /// means the byte would come from the device.
    #[cfg(target_os = "linux")]
    fn resident(&self, offset: u64) -> Option<bool> {
        let mut byte = [0u8; 1];
        let mut bufs = [std::io::IoSliceMut::new(&mut byte)];
        match rustix::io::preadv2(
            &self.file,
            &mut bufs,
            offset,
            rustix::io::ReadWriteFlags::NOWAIT,
        ) {
            Ok(_) => Some(true),
            Err(rustix::io::Errno::AGAIN) => Some(false),
            Err(_) => None,
        }
    }

    /// The ranges are handed to the kernel to load asynchronously (`POSIX_FADV_WILLNEED`),
    /// piece by piece (see [`WILL_NEED_PIECE`]), unless the longest is in the page cache. With
    /// readahead off (`POSIX_FADV_RANDOM`, see the module docs), a cold scan otherwise waits
    /// for each read in turn and decodes nothing meanwhile. One probe stands for all ranges:
    /// a scan's pages are mostly cold or warm together, and a warm scan of many small ranges
    /// (sub-page blocks) would pay a system call per range.
    #[cfg(target_os = "linux")]
    fn will_need(&self, ranges: &[Range<u64>]) {
        // (The middle of the longest range: a short range, or the ends of one, may share a page
        // with bytes just read.)
        let longest = ranges.iter().max_by_key(|r| r.end - r.start);
        let middle = |r: &Range<u64>| r.start + (r.end - r.start) / 2;
        if longest.is_none_or(|r| self.resident(middle(r)) != Some(false)) {
            return;
        }
        self.advise(ranges);
    }

    /// The ranges piece by piece to `POSIX_FADV_WILLNEED`, without a probe.
    #[cfg(target_os = "linux")]
    fn advise(&self, ranges: &[Range<u64>]) {
        for r in ranges {
            let mut at = r.start;
            while at < r.end {
                let len = (r.end - at).min(WILL_NEED_PIECE);
                let advice = rustix::fs::Advice::WillNeed;
                // Advice only: a file system that ignores it reads when asked, as before.
                let _ = rustix::fs::fadvise(&self.file, at, std::num::NonZeroU64::new(len), advice);
                at += len;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::Arc;

    /// Large independent ranges are read in parallel inside a multi-threaded pool, sequentially
    /// outside one; both serve the same bytes.
    #[test]
    fn parallel_reads_serve_the_same_bytes() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let data: Vec<u8> = (0..6u32 << 20).map(|i| (i * 31 % 251) as u8).collect();
        f.write_all(&data).unwrap();
        let src = Arc::new(LocalFile::open(f.path()).unwrap());
        let ranges = [0..(1 << 20), (2 << 20)..(3 << 20) + 7, (5 << 20)..(6 << 20)];
        let no = AtomicBool::new(false);
        let check = |pieces: Vec<Bytes>| {
            for (r, p) in ranges.iter().zip(pieces) {
                assert_eq!(p.as_ref(), &data[r.start as usize..r.end as usize]);
            }
        };
        check(src.read_ranges(&ranges, &no).unwrap());
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.install(|| check(src.read_ranges(&ranges, &no).unwrap()));
        assert_eq!(src.identity().len, 6 << 20);
        assert!(src.identity().modified_ns.is_some());
    }

    #[test]
    fn a_file_just_written_is_resident() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 1 << 16]).unwrap();
        let f = LocalFile::open(&path).unwrap();
        // Just written, so in the page cache (or a system that cannot tell).
        assert_ne!(f.resident(0), Some(false));
        assert_ne!(f.resident(40_000), Some(false));
    }

    /// Evicted ranges come back into the page cache after `will_need`, every piece of them
    /// (not only the first readahead window), without a read. Where eviction cannot be seen
    /// (tmpfs, other systems), there is nothing to check. A probe of a missing byte starts
    /// loading its page, so each page is probed once per try, after a wait far longer than
    /// the device needs for 3 MiB; a machine too busy to load them in that time gets two more
    /// tries, each evicting again and waiting twice as long (2 s once failed in CI while
    /// other tests ran).
    #[cfg(target_os = "linux")]
    #[test]
    fn will_need_loads_evicted_ranges_in_the_background() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let len = 6 * WILL_NEED_PIECE as usize + 12_345;
        std::fs::write(&path, vec![7u8; len]).unwrap();
        let f = LocalFile::open(&path).unwrap();
        f.file.sync_all().unwrap();
        let _ = rustix::fs::fadvise(&f.file, 0, None, rustix::fs::Advice::DontNeed);
        if f.resident(len as u64 - 1) != Some(false) {
            return;
        }
        let probes = [1, 3 * WILL_NEED_PIECE + 1, 5 * WILL_NEED_PIECE + 4096];
        let mut missing = Vec::new();
        for wait_s in [2, 4, 8] {
            if !missing.is_empty() {
                // The last try's failed probes are loading their pages: let them land, so
                // that the eviction takes them too and this try sees only `will_need`'s.
                std::thread::sleep(std::time::Duration::from_secs(1));
                let _ = rustix::fs::fadvise(&f.file, 0, None, rustix::fs::Advice::DontNeed);
            }
            f.will_need(std::slice::from_ref(&(0..len as u64)));
            std::thread::sleep(std::time::Duration::from_secs(wait_s));
            missing = (probes.iter().copied())
                .filter(|&p| f.resident(p) != Some(true))
                .collect();
            if missing.is_empty() {
                return;
            }
        }
        panic!("bytes {missing:?} not loaded after three tries");
    }

    /// `advise` takes the caller's word that the ranges are not loaded: a range whose middle
    /// is cached (where `will_need` would probe and stop) is loaded all the same.
    #[cfg(target_os = "linux")]
    #[test]
    fn advise_loads_without_a_probe() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let len = 8 * WILL_NEED_PIECE as usize;
        std::fs::write(&path, vec![7u8; len]).unwrap();
        let f = LocalFile::open(&path).unwrap();
        f.file.sync_all().unwrap();
        let _ = rustix::fs::fadvise(&f.file, 0, None, rustix::fs::Advice::DontNeed);
        // (A probe of a missing byte loads its page: each page is probed once.)
        if f.resident(1) != Some(false) {
            return; // eviction cannot be seen here
        }
        let middle = len as u64 / 2;
        let mut byte = [0u8];
        rustix::io::pread(&f.file, &mut byte, middle).unwrap();
        f.advise(std::slice::from_ref(&(0..len as u64)));
        std::thread::sleep(std::time::Duration::from_secs(2));
        let probe = 5 * WILL_NEED_PIECE + 1;
        assert_eq!(f.resident(probe), Some(true), "the range was not loaded");
    }

    #[test]
    fn missing_files_and_directories_are_clear_errors() {
        let e = LocalFile::open(Path::new("/no/such/file.parquet")).unwrap_err();
        assert_eq!(e.io_kind, Some(std::io::ErrorKind::NotFound));
        assert!(e.to_string().contains("/no/such/file.parquet"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        assert!(LocalFile::open(dir.path()).is_err());
    }
}
