//! The names of a cache directory's entries, held in memory, so that looking up a page that
//! has no entry costs a hash lookup, not failed `open`s and `stat`s.
//!
//! A first scan through an empty directory looked each page up on disk two to three times (the
//! I/O plan's `contains`, the read's `open`, the block reads' `open`): 4 000 failed path
//! lookups on Q6, 10–15 % of the scan (BENCHMARKS.md, issue 40, eighth step). The names come
//! from the listing the tier makes when it opens, and this process's writes and evictions
//! keep them; entries other processes write later are found when the directory is listed
//! again, at most once every [`RELIST`] and only when its modification time moved. A name
//! held for an entry that is gone reads as a miss when its `open` fails, as before: the index
//! only decides whether to look, never what a read returns.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

/// How long a listing stands before a lookup that misses may list the directory again.
const RELIST: Duration = Duration::from_secs(1);

/// An entry's name: the 128-bit hash its file is named by.
pub(crate) type Name = u128;

pub(crate) struct Names {
    dir: PathBuf,
    state: Mutex<State>,
}

struct State {
    names: HashSet<Name>,
    listed: Instant,
    /// The directory's modification time when it was listed.
    modified: Option<SystemTime>,
}

impl Names {
    /// The names of `entries` (paths of `dir`'s entries, as the tier's listing found them).
    pub(crate) fn new(dir: &Path, entries: impl IntoIterator<Item = PathBuf>) -> Names {
        let modified = modified(dir);
        Names {
            dir: dir.to_path_buf(),
            state: Mutex::new(State {
                names: entries.into_iter().filter_map(|p| name_of(&p)).collect(),
                listed: Instant::now(),
                modified,
            }),
        }
    }

    /// Whether the directory may hold the entry `name`: held, or found by a new listing when
    /// the last is [`RELIST`] old and the directory changed since.
    pub(crate) fn has(&self, name: Name) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.names.contains(&name) {
            return true;
        }
        if state.listed.elapsed() < RELIST {
            return false;
        }
        state.listed = Instant::now();
        let now = modified(&self.dir);
        if now.is_some() && now == state.modified {
            return false;
        }
        state.modified = now;
        state.names = list(&self.dir);
        state.names.contains(&name)
    }

    /// Holds the entry at `path` (just written).
    pub(crate) fn insert(&self, path: &Path) {
        if let Some(name) = name_of(path) {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.names.insert(name);
        }
    }

    /// Forgets the entry at `path` (removed).
    pub(crate) fn remove(&self, path: &Path) {
        if let Some(name) = name_of(path) {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.names.remove(&name);
        }
    }
}

/// The file name of the entry `name`, with its extension.
pub(crate) fn file_name(name: Name, extension: &str) -> String {
    format!("{name:032x}.{extension}")
}

/// The name of the entry at `path` (`None` for a file not named as entries are).
fn name_of(path: &Path) -> Option<Name> {
    let stem = path.file_stem()?.to_str()?;
    if stem.len() != 32 {
        return None;
    }
    Name::from_str_radix(stem, 16).ok()
}

fn modified(dir: &Path) -> Option<SystemTime> {
    fs::metadata(dir).and_then(|m| m.modified()).ok()
}

/// The names of the entries in `dir` (the names alone: no `stat` of each).
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
    fn names_round_trip_and_other_files_are_not_entries() {
        let n: Name = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210;
        let path = Path::new("/d").join(file_name(n, "page"));
        assert_eq!(name_of(&path), Some(n));
        assert_eq!(name_of(Path::new("/d/asked")), None);
        assert_eq!(name_of(Path::new("/d/.tmp-1-2-3")), None);
        assert_eq!(
            name_of(Path::new("/d/zz23456789abcdef0123456789abcdef.page")),
            None
        );
    }

    #[test]
    fn entries_written_by_another_process_are_found_after_a_relisting() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(file_name(1, "page")), b"x").unwrap();
        let names = Names::new(dir.path(), [dir.path().join(file_name(1, "page"))]);
        assert!(names.has(1));
        assert!(!names.has(2));
        names.insert(&dir.path().join(file_name(3, "page")));
        assert!(names.has(3));
        // Another process writes entry 2: found once the listing is old enough.
        fs::write(dir.path().join(file_name(2, "page")), b"x").unwrap();
        assert!(!names.has(2));
        names.state.lock().unwrap().listed -= RELIST;
        names.state.lock().unwrap().modified = None;
        assert!(names.has(2));
        // The relisting replaced what was held: 3 was never on disk.
        assert!(!names.has(3));
        names.remove(&dir.path().join(file_name(2, "page")));
        assert!(!names.has(2));
    }
}
