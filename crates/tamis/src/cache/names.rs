//! The names of a cache directory's entries and where each lies ([`Spot`]: its pack), held in
//! memory, so that looking up a page that has no entry costs a hash lookup, not failed `open`s
//! and `stat`s, and one that has costs no search.
//!
//! A first scan through an empty directory looked each page up on disk two to three times (the
//! I/O plan's `contains`, the read's `open`, the block reads' `open`): 4 000 failed path
//! lookups on Q6, 10–15 % of the scan (BENCHMARKS.md, issue 40, eighth step). The names come
//! from the indexes of the packs the tier finds when it opens (one read each), and this
//! process's writes and evictions keep them; packs other processes write or remove later are
//! found when the directory is listed again, at most once every [`RELIST`] and only when its
//! modification time moved. Both a lookup that misses and the open of a pack may list it
//! again, so a process that only hits still lets go of packs another process removed (held
//! open, their space would stay taken). A name held for an entry that is gone reads as a miss
//! when its pack's `open` fails: the index only decides where to look, never what a read
//! returns (each entry repeats its whole key and carries its checksums).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::pack::{self, Spot};

/// How long a listing stands before a lookup that misses may list the directory again.
const RELIST: Duration = Duration::from_secs(1);
/// Packs held open at most (all closed when more are wanted): a scan's pages lie in tens of
/// packs, each opened once instead of once a page.
const OPEN_PACKS: usize = 128;

/// An entry's or a pack's name: a 128-bit hash (a pack's file is named by its own).
pub(crate) type Name = u128;

pub(crate) struct Names {
    dir: PathBuf,
    state: Mutex<State>,
}

struct State {
    /// Every entry of the packs held, and where it lies.
    entries: HashMap<Name, Spot>,
    /// The packs whose entries are held.
    packs: HashSet<Name>,
    /// Packs opened by lookups, kept open until forgotten (or too many are).
    open: HashMap<Name, Arc<fs::File>>,
    listed: Instant,
    /// The directory's modification time when it was listed.
    modified: Option<SystemTime>,
}

impl Names {
    /// The entries of `packs` (paths of `dir`'s packs, as the tier's listing found them),
    /// from their indexes.
    pub(crate) fn new(dir: &Path, packs: impl IntoIterator<Item = PathBuf>) -> Names {
        let mut state = State {
            entries: HashMap::new(),
            packs: HashSet::new(),
            open: HashMap::new(),
            listed: Instant::now(),
            modified: modified(dir),
        };
        for path in packs {
            if let Some(name) = name_of(&path) {
                state.add(&path, name);
            }
        }
        Names {
            dir: dir.to_path_buf(),
            state: Mutex::new(state),
        }
    }

    /// Where the directory may hold the entry `name`: held, or found by a new listing when
    /// the last is [`RELIST`] old and the directory changed since.
    pub(crate) fn spot(&self, name: Name) -> Option<Spot> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(spot) = state.entries.get(&name) {
            return Some(*spot);
        }
        state.relist_when_due(&self.dir);
        state.entries.get(&name).copied()
    }

    /// The pack `pack` of the directory, opened (or held open since an earlier call); `None`
    /// when it cannot be opened (gone: its entries read as misses until forgotten).
    pub(crate) fn open(&self, pack: Name) -> Option<Arc<fs::File>> {
        let mut held = self.state.lock().unwrap_or_else(|e| e.into_inner());
        held.relist_when_due(&self.dir);
        if let Some(f) = held.open.get(&pack) {
            return Some(f.clone());
        }
        drop(held);
        let path = self.dir.join(file_name(pack, super::disk::EXTENSION));
        let f = Arc::new(fs::File::open(path).ok()?);
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        // A pack forgotten meanwhile (removed) is not held open: its file's space is freed.
        if state.packs.contains(&pack) {
            if state.open.len() >= OPEN_PACKS {
                state.open.clear();
            }
            state.open.insert(pack, f.clone());
        }
        Some(f)
    }

    /// Holds the entries of a pack just written.
    pub(crate) fn insert(&self, pack: Name, entries: &[(Name, Spot)]) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.packs.insert(pack);
        state.entries.extend(entries.iter().copied());
    }

    /// Forgets the entries of `packs` (removed); returns how many were held.
    pub(crate) fn remove(&self, packs: &HashSet<Name>) -> u64 {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.forget(packs)
    }
}

impl State {
    /// Lists `dir` again when the last listing is [`RELIST`] old and the directory changed
    /// since. Packs are written whole and never changed: only new ones are read, and gone
    /// ones are forgotten (closed, when held open).
    fn relist_when_due(&mut self, dir: &Path) {
        if self.listed.elapsed() < RELIST {
            return;
        }
        self.listed = Instant::now();
        let now = modified(dir);
        if now.is_some() && now == self.modified {
            return;
        }
        self.modified = now;
        let listed = list(dir);
        let gone: HashSet<Name> = self.packs.difference(&listed).copied().collect();
        self.forget(&gone);
        let new: Vec<Name> = listed.difference(&self.packs).copied().collect();
        for pack in new {
            self.add(&dir.join(file_name(pack, super::disk::EXTENSION)), pack);
        }
    }

    /// Holds the entries of the pack at `path`, when its index is whole.
    fn add(&mut self, path: &Path, pack: Name) {
        if let Some(entries) = pack::read_index(path, pack) {
            self.packs.insert(pack);
            self.entries.extend(entries);
        }
    }

    /// Forgets the entries of `packs`; returns how many.
    fn forget(&mut self, packs: &HashSet<Name>) -> u64 {
        if packs.is_empty() {
            return 0;
        }
        self.packs.retain(|p| !packs.contains(p));
        self.open.retain(|p, _| !packs.contains(p));
        let held = self.entries.len();
        self.entries.retain(|_, spot| !packs.contains(&spot.pack));
        (held - self.entries.len()) as u64
    }
}

/// The file name of the pack `name`, with its extension.
pub(crate) fn file_name(name: Name, extension: &str) -> String {
    format!("{name:032x}.{extension}")
}

/// The name of the pack at `path` (`None` for a file not named as packs are).
pub(crate) fn name_of(path: &Path) -> Option<Name> {
    let stem = path.file_stem()?.to_str()?;
    if stem.len() != 32 {
        return None;
    }
    Name::from_str_radix(stem, 16).ok()
}

fn modified(dir: &Path) -> Option<SystemTime> {
    fs::metadata(dir).and_then(|m| m.modified()).ok()
}

/// The names of the packs in `dir` (the names alone: no `stat` of each).
fn list(dir: &Path) -> HashSet<Name> {
    let Ok(entries) = fs::read_dir(dir) else {
        return HashSet::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == super::disk::EXTENSION))
        .filter_map(|p| name_of(&p))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_other_files_are_not_packs() {
        let n: Name = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210;
        let path = Path::new("/d").join(file_name(n, "pack"));
        assert_eq!(name_of(&path), Some(n));
        assert_eq!(name_of(Path::new("/d/asked")), None);
        assert_eq!(name_of(Path::new("/d/.tmp-1-2-3")), None);
        assert_eq!(
            name_of(Path::new("/d/zz23456789abcdef0123456789abcdef.pack")),
            None
        );
    }

    /// A new pack of `entries` in `dir`: its name and where each entry lies.
    fn write_pack(dir: &Path, entries: &[(Name, Vec<u8>)]) -> (Name, Vec<(Name, Spot)>) {
        let pack = pack::new_name();
        (pack, pack::write(dir, pack, entries).unwrap().0)
    }

    #[test]
    fn packs_written_by_another_process_are_found_after_a_relisting() {
        let dir = tempfile::tempdir().unwrap();
        let write = |entries: &[(Name, Vec<u8>)]| write_pack(dir.path(), entries);
        let (first, spots) = write(&[(1, vec![1; 10]), (2, vec![2; 10])]);
        let path = |p| dir.path().join(file_name(p, "pack"));
        let names = Names::new(dir.path(), [path(first)]);
        assert_eq!(names.spot(1), Some(spots[0].1));
        assert_eq!(names.spot(2).map(|s| s.pack), Some(first));
        assert_eq!(names.spot(3), None);
        // This process's own pack is held as it is written.
        let (mine, spots) = write(&[(3, vec![3; 5000])]);
        names.insert(mine, &spots);
        assert_eq!(names.spot(3), Some(spots[0].1));
        // Another process writes entry 4 and removes the first pack: found and forgotten
        // once the listing is old enough.
        let (_, spots) = write(&[(4, vec![4; 10])]);
        fs::remove_file(path(first)).unwrap();
        assert_eq!(names.spot(4), None);
        assert_eq!(names.spot(1).map(|s| s.pack), Some(first));
        names.state.lock().unwrap().listed -= RELIST;
        names.state.lock().unwrap().modified = None;
        assert_eq!(names.spot(4), Some(spots[0].1));
        assert_eq!(names.spot(1), None);
        assert_eq!(names.spot(3).map(|s| s.pack), Some(mine));
        // A pack is opened once and held open until it is forgotten.
        let f = names.open(mine).expect("the pack opens");
        assert!(Arc::ptr_eq(&f, &names.open(mine).unwrap()));
        names.remove(&HashSet::from([mine]));
        assert_eq!(names.spot(3), None);
        assert!(names.state.lock().unwrap().open.is_empty());
        // A pack gone opens as nothing.
        assert!(names.open(first).is_none());
    }

    /// A process that only hits still closes a pack another process removed, once the
    /// listing is old enough: held open, the removed file's space would stay taken.
    #[test]
    fn a_pack_removed_by_another_process_is_closed_by_a_later_open() {
        let dir = tempfile::tempdir().unwrap();
        let write = |entries: &[(Name, Vec<u8>)]| write_pack(dir.path(), entries);
        let (a, _) = write(&[(1, vec![1; 10])]);
        let (b, _) = write(&[(2, vec![2; 10])]);
        let path = |p| dir.path().join(file_name(p, "pack"));
        let names = Names::new(dir.path(), [path(a), path(b)]);
        let held = names.open(a).expect("a opens");
        assert!(names.open(b).is_some());
        fs::remove_file(path(a)).unwrap();
        // Within the listing's time, both stay held (no listing per open).
        assert!(Arc::ptr_eq(&held, &names.open(a).unwrap()));
        {
            let mut state = names.state.lock().unwrap();
            state.listed -= RELIST;
            state.modified = None;
        }
        // Opening the other pack lists the directory again: `a` is forgotten and closed.
        assert!(names.open(b).is_some());
        let state = names.state.lock().unwrap();
        assert!(!state.open.contains_key(&a) && state.open.contains_key(&b));
        assert!(!state.packs.contains(&a) && !state.entries.contains_key(&1));
        drop(state);
        assert_eq!(
            Arc::strong_count(&held),
            1,
            "only the test holds the removed pack"
        );
        assert!(names.open(a).is_none());
        assert_eq!(names.spot(1), None);
    }
}
