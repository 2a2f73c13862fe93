//! Packs: the files of a cache directory, each holding the entries one write of the writer
//! thread took from its queue, behind an index of where each lies.
//!
//! One file a page cost the process that wrote a directory's pages 2–3x its scan: each new
//! file is an inode for the file system to allocate (on ext4, 0.5 ms an `openat` with
//! `O_CREAT` in a directory that had just evicted others: BENCHMARKS.md, issue 40, ninth
//! step), and Q6 alone writes 1 216 pages. A pack takes what the writer found queued — up to
//! [`MAX_ENTRIES`] entries or [`MAX_BYTES`] — so a scan writes tens of files, not thousands.
//! Paper 000's IO cache keeps whole column chunks a file for the same reason; a pack is
//! whatever arrived together, which for a scan is its pages in the order it read them.
//!
//! ```text
//! block 0:  magic, count, reserved, count × (entry name u128, at u64, len u64), checksum, zeros
//! at_1:     entry 1 (disk.rs's layout: head, key, block checksums, payload from a block boundary)
//! at_2:     entry 2 …  (every `at` a multiple of BLOCK, so an entry's blocks are the file's)
//! ```
//!
//! The index is checked by its checksum and every spot against the file's length, so a torn
//! or flipped index is not a pack; each entry still carries its whole key and its own
//! checksums, so a spot that points at the wrong bytes reads as a miss.

use std::fs;
use std::hash::Hasher;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use twox_hash::XxHash64;

use super::disk::{align_up, checksum, BLOCK};
use super::names::Name;

/// The first bytes of every pack (the last is the layout's version).
const MAGIC: &[u8; 8] = b"TAMISPK\x01";
/// Magic, u32 count, u32 reserved.
const FIXED: usize = 16;
/// An index row: the entry's name (u128), where it starts, its length (u64 each).
const ROW: usize = 32;
const CHECKSUM: usize = 8;
/// The most entries a pack holds: its index then fits its first block, read with one call.
pub(crate) const MAX_ENTRIES: usize = (BLOCK as usize - FIXED - CHECKSUM) / ROW;
/// The most bytes of entries the writer puts in one pack (a page over it gets one alone):
/// eviction removes a pack at a time, so it stays a small part of any budget worth having.
pub(crate) const MAX_BYTES: u64 = 8 << 20;

/// The bytes the writer gathers in a pack before it writes one, when entries keep coming
/// (it waits a few milliseconds for them): a scan's 66 MiB then takes tens of files.
pub(crate) const MIN_BYTES: u64 = 2 << 20;

/// Where an entry lies: its pack and its bytes there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Spot {
    pub(crate) pack: Name,
    /// Where the entry starts in the pack (a multiple of [`BLOCK`]).
    pub(crate) at: u64,
    pub(crate) len: u64,
}

/// A name for a new pack, unique across the processes (and hosts) sharing the directory.
pub(crate) fn new_name() -> Name {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = format!(
        "{}-{nanos}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Relaxed)
    );
    let hash = |s: u64| {
        let mut h = XxHash64::with_seed(s);
        h.write(seed.as_bytes());
        h.finish()
    };
    (u128::from(hash(0)) << 64) | u128::from(hash(1))
}

/// Writes `entries` (at most [`MAX_ENTRIES`]: name and bytes) as the pack `pack` of `dir`,
/// through a temporary file and a rename, so readers in any process see the whole pack or
/// none; returns each entry's spot and the pack's length.
pub(crate) fn write(
    dir: &Path,
    pack: Name,
    entries: &[(Name, Vec<u8>)],
) -> std::io::Result<(Vec<(Name, Spot)>, u64)> {
    assert!(
        entries.len() <= MAX_ENTRIES,
        "a pack's index fits one block"
    );
    let mut spots = Vec::with_capacity(entries.len());
    let mut at = BLOCK;
    for (name, bytes) in entries {
        let len = bytes.len() as u64;
        spots.push((*name, Spot { pack, at, len }));
        at = align_up(at + len);
    }
    let mut index = Vec::with_capacity(BLOCK as usize);
    index.extend_from_slice(MAGIC);
    index.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    index.extend_from_slice(&[0; 4]);
    for (name, spot) in &spots {
        index.extend_from_slice(&name.to_le_bytes());
        index.extend_from_slice(&spot.at.to_le_bytes());
        index.extend_from_slice(&spot.len.to_le_bytes());
    }
    index.extend_from_slice(&checksum(&index).to_le_bytes());
    index.resize(BLOCK as usize, 0);
    let tmp = dir.join(format!(".tmp-{pack:032x}"));
    let written = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(&index)?;
            let zeros = [0u8; BLOCK as usize];
            let mut end = BLOCK;
            for ((_, bytes), (_, spot)) in entries.iter().zip(&spots) {
                f.write_all(&zeros[..(spot.at - end) as usize])?;
                f.write_all(bytes)?;
                end = spot.at + spot.len;
            }
            Ok(end)
        });
    let path = dir.join(super::names::file_name(pack, super::disk::EXTENSION));
    match written.and_then(|end| fs::rename(&tmp, &path).map(|()| end)) {
        Ok(end) => Ok((spots, end)),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// The entries of the pack at `path` (named `pack`), from its index; `None` when it cannot be
/// read or its index is not whole (checksum, magic, a spot past the file's end).
pub(crate) fn read_index(path: &Path, pack: Name) -> Option<Vec<(Name, Spot)>> {
    let f = fs::File::open(path).ok()?;
    let file_len = f.metadata().ok()?.len();
    let mut block = vec![0u8; BLOCK.min(file_len) as usize];
    read_exact_at(&f, &mut block, 0).ok()?;
    parse_index(&block, pack, file_len)
}

/// The entries an index block names, each checked to lie inside a file of `file_len` bytes.
fn parse_index(block: &[u8], pack: Name, file_len: u64) -> Option<Vec<(Name, Spot)>> {
    if block.len() < FIXED + CHECKSUM || &block[..8] != MAGIC {
        return None;
    }
    let count = u32::from_le_bytes(block[8..12].try_into().ok()?) as usize;
    if count > MAX_ENTRIES {
        return None;
    }
    let end = FIXED + ROW * count;
    let sum = u64::from_le_bytes(block.get(end..end + CHECKSUM)?.try_into().ok()?);
    if checksum(&block[..end]) != sum {
        return None;
    }
    let u64_at = |i: usize| u64::from_le_bytes(block[i..i + 8].try_into().expect("8 bytes"));
    (0..count)
        .map(|i| {
            let row = FIXED + ROW * i;
            let name = u128::from_le_bytes(block[row..row + 16].try_into().ok()?);
            let (at, len) = (u64_at(row + 16), u64_at(row + 24));
            let inside = at >= BLOCK && at % BLOCK == 0 && at.checked_add(len)? <= file_len;
            inside.then_some((name, Spot { pack, at, len }))
        })
        .collect()
}

#[cfg(unix)]
pub(crate) fn read_exact_at(file: &fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(not(unix))]
pub(crate) fn read_exact_at(file: &fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::io::{Read, Seek};
    let mut f = file;
    f.seek(std::io::SeekFrom::Start(offset))?;
    f.read_exact(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pack_holds_its_entries_where_its_index_says() {
        let dir = tempfile::tempdir().unwrap();
        let entries: Vec<(Name, Vec<u8>)> = [0usize, 1, 4095, 4096, 4097, 10_000]
            .iter()
            .enumerate()
            .map(|(i, &n)| (i as Name * 77, (0..n).map(|b| (b * 3 + i) as u8).collect()))
            .collect();
        let pack = new_name();
        let (spots, len) = write(dir.path(), pack, &entries).unwrap();
        let path = dir
            .path()
            .join(super::super::names::file_name(pack, "pack"));
        assert_eq!(fs::metadata(&path).unwrap().len(), len);
        assert_eq!(read_index(&path, pack).unwrap(), spots);
        let bytes = fs::read(&path).unwrap();
        for ((name, want), (got_name, spot)) in entries.iter().zip(&spots) {
            assert_eq!(name, got_name);
            assert_eq!(spot.at % BLOCK, 0);
            assert_eq!(
                &bytes[spot.at as usize..(spot.at + spot.len) as usize],
                &want[..]
            );
        }
        // No temporary file is left; two packs never share a name.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        assert_ne!(new_name(), new_name());
    }

    #[test]
    fn a_damaged_or_short_index_is_no_pack() {
        let dir = tempfile::tempdir().unwrap();
        let pack = new_name();
        let entries = vec![(1, vec![7u8; 5000]), (2, vec![8u8; 10])];
        write(dir.path(), pack, &entries).unwrap();
        let path = dir
            .path()
            .join(super::super::names::file_name(pack, "pack"));
        let good = fs::read(&path).unwrap();
        let index_len = FIXED + 2 * ROW + CHECKSUM;
        for at in 0..index_len {
            let mut bytes = good.clone();
            bytes[at] ^= 0x08;
            fs::write(&path, &bytes).unwrap();
            assert!(read_index(&path, pack).is_none(), "flipped at {at}");
        }
        // Cut short: the last entry would lie past the end.
        fs::write(&path, &good[..good.len() - 1]).unwrap();
        assert!(read_index(&path, pack).is_none());
        fs::write(&path, &good[..100]).unwrap();
        assert!(read_index(&path, pack).is_none());
        // A count over what one block holds is refused before it sizes anything.
        let mut bytes = good.clone();
        bytes[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        fs::write(&path, &bytes).unwrap();
        assert!(read_index(&path, pack).is_none());
    }
}
