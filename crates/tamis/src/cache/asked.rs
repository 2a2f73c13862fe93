//! Which local pages the disk tier has seen missed, remembered in its directory across
//! processes, so that a local page is written on its second miss, not its first.
//!
//! Writing a page costs its first run dearly: the writer allocates a file for each page, and a
//! scan that decompresses 200 MiB of pages then runs 1.75x as long as with no disk tier
//! (BENCHMARKS.md, issue 40, seventh step). A page read once is never worth it. Most misses of
//! a repeated query come from a new process (the next query of a dashboard, a notebook
//! restarted), so the first miss must be remembered where the next process finds it: a log of
//! 64-bit key hashes in the cache directory, in two generations (`asked` and `asked.old`),
//! each at most [`GENERATION`] hashes. A remote page is still written on its first miss: its
//! next read would cost a round trip.
//!
//! The log decides only *when* a page is written, never what a read returns, so it needs no
//! checksums: a hash collision, a torn append or a log lost writes a page early or late.
//! Appends are whole multiples of 8 bytes to a file opened for appending (`O_APPEND`), so
//! processes sharing the directory interleave whole hashes.

use std::collections::HashSet;
use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The newer generation's file name.
pub(crate) const LOG: &str = "asked";
/// The older generation's file name.
pub(crate) const OLD_LOG: &str = "asked.old";
/// Hashes a generation holds (1 MiB of log) before it becomes the older one: at the 20 000
/// values of a typical page, 2^17 pages are about 2.6 billion values of one column.
const GENERATION: u64 = 1 << 17;

/// Asks waiting to be appended beyond which the asking scan appends them itself (4 KiB).
const WRITE_AT: usize = 512;

/// The asks of a cache directory: those its logs held when opened and this process's.
pub(crate) struct AskLog {
    dir: PathBuf,
    seen: Mutex<HashSet<u64>>,
    /// This process's first asks, not yet appended to the log.
    unwritten: Mutex<Vec<u64>>,
}

impl AskLog {
    /// The asks remembered in `dir` (none when it holds no readable log).
    pub(crate) fn open(dir: &Path) -> AskLog {
        let mut seen = HashSet::new();
        for name in [OLD_LOG, LOG] {
            seen.extend(read_log(&dir.join(name)));
        }
        AskLog {
            dir: dir.to_path_buf(),
            seen: Mutex::new(seen),
            unwritten: Mutex::new(Vec::new()),
        }
    }

    /// Counts a miss of the page whose key hashes to `hash`; whether it was missed before,
    /// by this process or by one whose log this one read.
    pub(crate) fn ask(&self, hash: u64) -> bool {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.contains(&hash) {
            return true;
        }
        // A long-lived process forgets, as the logs do, rather than grow without bound.
        if seen.len() as u64 >= 2 * GENERATION {
            seen.clear();
        }
        seen.insert(hash);
        drop(seen);
        let mut unwritten = self.unwritten.lock().unwrap_or_else(|e| e.into_inner());
        unwritten.push(hash);
        let many = unwritten.len() >= WRITE_AT;
        drop(unwritten);
        if many {
            // One append of 4 KiB to the OS page cache: a process without a writer thread
            // (it has written no entry) still leaves its asks.
            self.write();
        }
        false
    }

    /// Appends the asks not yet in the log (the disk tier's writer thread, and a flush); a log
    /// full, or torn by a crash mid-append, first becomes the older generation.
    pub(crate) fn write(&self) {
        let hashes = std::mem::take(&mut *self.unwritten.lock().unwrap_or_else(|e| e.into_inner()));
        if hashes.is_empty() {
            return;
        }
        let path = self.dir.join(LOG);
        let len = fs::metadata(&path).map_or(0, |m| m.len());
        if !len.is_multiple_of(8) || len / 8 + hashes.len() as u64 > GENERATION {
            let _ = fs::rename(&path, self.dir.join(OLD_LOG));
        }
        let bytes: Vec<u8> = hashes.iter().flat_map(|h| h.to_le_bytes()).collect();
        // A log that cannot be written only delays pages' writes: not an error of any scan.
        let _ = fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)
            .and_then(|mut f| f.write_all(&bytes));
    }
}

/// The hashes of a log: its last [`GENERATION`] whole ones (none when it cannot be read).
fn read_log(path: &Path) -> Vec<u64> {
    let Ok(mut f) = fs::File::open(path) else {
        return Vec::new();
    };
    let len = f.metadata().map_or(0, |m| m.len()) / 8 * 8;
    let keep = len.min(GENERATION * 8);
    let mut bytes = Vec::with_capacity(keep as usize);
    if f.seek(SeekFrom::Start(len - keep)).is_err() || f.take(keep).read_to_end(&mut bytes).is_err()
    {
        return Vec::new();
    }
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("chunks of 8")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_ask_is_known_in_this_process_and_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let log = AskLog::open(dir.path());
        assert!(!log.ask(7));
        assert!(log.ask(7));
        assert!(!log.ask(8));
        // Not yet in the directory: a new process does not know it.
        assert!(!AskLog::open(dir.path()).ask(8));
        log.write();
        let next = AskLog::open(dir.path());
        assert!(next.ask(7) && next.ask(8));
        assert!(!next.ask(9));
    }

    #[test]
    fn many_asks_are_appended_by_the_asking_scan_itself() {
        let dir = tempfile::tempdir().unwrap();
        let log = AskLog::open(dir.path());
        for h in 0..WRITE_AT as u64 - 1 {
            log.ask(h);
        }
        assert!(!dir.path().join(LOG).exists());
        log.ask(1000);
        let len = fs::metadata(dir.path().join(LOG)).unwrap().len();
        assert_eq!(len, 8 * WRITE_AT as u64);
        assert!(AskLog::open(dir.path()).ask(1000));
    }

    #[test]
    fn a_torn_log_keeps_its_whole_hashes_and_is_rotated_before_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = 5u64.to_le_bytes().to_vec();
        bytes.extend_from_slice(&[1, 2, 3]); // a crash mid-append
        fs::write(dir.path().join(LOG), &bytes).unwrap();
        let log = AskLog::open(dir.path());
        assert!(log.ask(5));
        assert!(!log.ask(6));
        log.write();
        // The torn log became the older generation; the new one holds whole hashes only.
        assert_eq!(fs::read(dir.path().join(OLD_LOG)).unwrap(), bytes);
        assert_eq!(read_log(&dir.path().join(LOG)), vec![6]);
        let next = AskLog::open(dir.path());
        assert!(next.ask(5) && next.ask(6));
    }

    #[test]
    fn a_full_generation_becomes_the_older_and_the_one_before_is_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let log = AskLog::open(dir.path());
        for h in 0..GENERATION {
            log.ask(h);
        }
        log.write();
        assert_eq!(
            fs::metadata(dir.path().join(LOG)).unwrap().len(),
            GENERATION * 8
        );
        log.ask(u64::MAX);
        log.write();
        assert_eq!(read_log(&dir.path().join(LOG)), vec![u64::MAX]);
        let next = AskLog::open(dir.path());
        assert!(next.ask(0) && next.ask(u64::MAX));
        // A third generation: the first (0..GENERATION) is gone.
        for h in 0..GENERATION {
            next.ask(h + (1 << 40));
        }
        next.write();
        next.ask(u64::MAX - 1);
        next.write();
        let last = AskLog::open(dir.path());
        assert!(!last.ask(0));
        assert!(last.ask(1 << 40));
    }
}
