//! `Dataset`: files listed and opened once, their metadata kept for every scan.
//!
//! Each open file keeps the tail read at open (footer and, usually, page index), the page
//! indexes decoded so far, and the Bloom filters and dictionary pages scans have read; a scan
//! built from the dataset reuses them, so a repeated point lookup reads only its data pages.
//! What the open files hold is bounded by a byte budget: past it, the least recently scanned
//! files are closed, and a scan that reaches one opens it again (and keeps it). The decoded
//! footers stay for planning (statistics pruning needs them without I/O).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use crate::error::Result;
use crate::file::OpenedFile;
use crate::io::location::{locate, Located};
use crate::io::StorageOptions;
use crate::table::{AsOf, TableSnapshot};

use super::plan::DatasetPlan;

/// Metadata kept by default: footers, tails and page indexes of a few hundred large files.
pub(super) const DEFAULT_METADATA_BUDGET: u64 = 256 << 20;

/// Files kept open at most (file handles are the other bounded resource).
const MAX_OPEN: usize = 1024;

/// A dataset opened once for many scans: footers are read when it opens, and each scan
/// reuses them (a file's page indexes and Bloom filters too, within a metadata budget).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use arrow::array::{Int64Array, RecordBatch};
/// use arrow::datatypes::{DataType, Field, Schema};
///
/// // A hive-partitioned directory: year=2024/ and year=2025/, keys 0..100 in each.
/// let dir = tempfile::tempdir()?;
/// let schema = Arc::new(Schema::new(vec![Field::new("key", DataType::Int64, false)]));
/// for year in [2024, 2025] {
///     let part = dir.path().join(format!("year={year}"));
///     std::fs::create_dir(&part)?;
///     let keys = Arc::new(Int64Array::from_iter_values(0..100));
///     let batch = RecordBatch::try_new(schema.clone(), vec![keys])?;
///     let file = std::fs::File::create(part.join("part-0.parquet"))?;
///     let mut writer = parquet::arrow::ArrowWriter::try_new(file, schema.clone(), None)?;
///     writer.write(&batch)?;
///     writer.close()?;
/// }
///
/// let ds = tamis::Dataset::open(dir.path().to_str().unwrap())?;
/// for key in [1, 3, 5] {
///     let mut stream = ds.scan().filter(&format!("key = {key} AND year = 2025"))?.batches()?;
///     let rows: usize = (&mut stream)
///         .map(|b| b.map(|b| b.num_rows()))
///         .sum::<tamis::Result<usize>>()?;
///     assert_eq!(rows, 1);
///     // The partition value pruned the other file before any of its pages was read.
///     assert_eq!(stream.metrics().files_pruned_partition, 1);
/// }
/// # Ok(()) }
/// ```
pub struct Dataset {
    plan: DatasetPlan,
    open: Arc<OpenFiles>,
    /// The listing's root (directory, prefix or glob base), if the path named more than a file.
    root: Option<String>,
    /// A table's location, format and version, if this is one.
    table: Option<(String, crate::table::TableFormat, u64)>,
}

/// What a path names, found by [`Dataset::locate`], its footers not read yet.
#[derive(Debug, Clone)]
pub struct DatasetLocation {
    located: Located,
    options: StorageOptions,
}

impl DatasetLocation {
    /// Reads the footers ([`Dataset::open_with`]).
    pub fn open(&self, metadata_budget: Option<u64>) -> Result<Dataset> {
        match &self.located {
            Located::Files(listing) => {
                let plan = DatasetPlan::open_keeping(listing, MAX_OPEN)?;
                Ok(Dataset::of(
                    plan,
                    listing.root.clone(),
                    None,
                    metadata_budget,
                ))
            }
            Located::Table(location, format) => Dataset::open_table(
                &crate::table::open(location, Some(*format), AsOf::Latest, &self.options)?,
                metadata_budget,
            ),
        }
    }
}

impl Dataset {
    /// Opens a file, a directory (hive partitions discovered), a glob or an object-store URL,
    /// reading every footer once.
    pub fn open(path: impl AsRef<str>) -> Result<Dataset> {
        Self::open_with(path, &StorageOptions::default(), None)
    }

    /// Opens with object-store options and a metadata budget in bytes (default
    /// `DEFAULT_METADATA_BUDGET`).
    pub fn open_with(
        path: impl AsRef<str>,
        options: &StorageOptions,
        metadata_budget: Option<u64>,
    ) -> Result<Dataset> {
        Self::locate(path, options)?.open(metadata_budget)
    }

    /// Finds what `path` names (lists a directory, prefix or glob; tells a table's root
    /// apart) without reading a footer: a missing path fails here, the footers are read by
    /// [`DatasetLocation::open`]. A SQL session locates every table it is given and opens only
    /// those its query names.
    pub fn locate(path: impl AsRef<str>, options: &StorageOptions) -> Result<DatasetLocation> {
        Ok(DatasetLocation {
            located: locate(path.as_ref(), options)?,
            options: options.clone(),
        })
    }

    /// [`Dataset::open_with`], with the table at `path` read at `at` and, given `format`, as
    /// that format (see [`crate::Scan::open_as_of`]).
    pub fn open_as_of(
        path: impl AsRef<str>,
        format: Option<crate::table::TableFormat>,
        at: AsOf,
        options: &StorageOptions,
        metadata_budget: Option<u64>,
    ) -> Result<Dataset> {
        match (format, at) {
            (None, AsOf::Latest) => Self::open_with(path, options, metadata_budget),
            (format, at) => Self::open_table(
                &crate::table::open(path.as_ref(), format, at, options)?,
                metadata_budget,
            ),
        }
    }

    /// Every file of a table's snapshot, their footers read once.
    pub fn open_table(table: &TableSnapshot, metadata_budget: Option<u64>) -> Result<Dataset> {
        let all: Vec<usize> = (0..table.files.len()).collect();
        let plan = DatasetPlan::open_table(table, &all, MAX_OPEN)?;
        let identity = (table.location.clone(), table.format, table.version);
        Ok(Self::of(plan, None, Some(identity), metadata_budget))
    }

    fn of(
        mut plan: DatasetPlan,
        root: Option<String>,
        table: Option<(String, crate::table::TableFormat, u64)>,
        metadata_budget: Option<u64>,
    ) -> Dataset {
        let open = Arc::new(OpenFiles::new(
            plan.files.len(),
            metadata_budget.unwrap_or(DEFAULT_METADATA_BUDGET),
            MAX_OPEN,
        ));
        for (i, f) in plan.files.iter_mut().enumerate() {
            if let Some(opened) = f.opened.take() {
                open.put(i, opened);
            }
        }
        plan.open_files = Some(open.clone());
        Dataset {
            plan,
            open,
            root,
            table,
        }
    }

    /// The plan a new scan starts from (`Dataset::scan`, defined with the scan that sits above
    /// this layer): scans since the last one may have grown what the files hold, so the cache is
    /// trimmed to its budget first.
    pub(crate) fn plan_for_scan(&self) -> DatasetPlan {
        self.open.evict(None);
        self.plan.clone()
    }

    /// Whether this is a table's version (a Delta table), not a listing of files: its files
    /// alone are not its rows (deleted rows, renamed columns, partition values from the log),
    /// so a planner that hands files to workers must not split it.
    pub fn is_table(&self) -> bool {
        self.plan.order.is_some()
    }

    /// A table's location, format and version: what opens the same snapshot elsewhere
    /// ([`crate::table::open`] at [`AsOf::Version`]); `None` for files.
    pub fn table(&self) -> Option<(&str, crate::table::TableFormat, u64)> {
        (self.table.as_ref())
            .map(|(location, format, version)| (location.as_str(), *format, *version))
    }

    /// The files, their footers, schema and leaves (for statistics and planning).
    pub fn plan(&self) -> &DatasetPlan {
        &self.plan
    }

    /// The root hive partition paths are relative to (`None` for a single file); with
    /// [`crate::io::location::named`] a worker opens some of the files as this dataset does.
    pub fn root(&self) -> Option<String> {
        self.root.clone()
    }

    /// The files' paths or URLs.
    pub fn files(&self) -> Vec<String> {
        self.plan.files.iter().map(|f| f.location.clone()).collect()
    }

    /// Bytes of metadata the open files hold.
    pub fn metadata_bytes(&self) -> u64 {
        self.open.held_bytes()
    }

    /// Files open now.
    pub fn open_files(&self) -> usize {
        self.open.open_count()
    }
}

/// The open files of a dataset, by file index; the least recently used are closed when what
/// they hold exceeds the budget or there are too many.
pub struct OpenFiles {
    slots: Vec<Mutex<Option<Arc<OpenedFile>>>>,
    /// Per file, the clock at its last use (0: never).
    last_used: Vec<AtomicU64>,
    clock: AtomicU64,
    budget: u64,
    max_open: usize,
    /// Serializes eviction (a scan may put files from several threads).
    evicting: Mutex<()>,
}

impl OpenFiles {
    fn new(files: usize, budget: u64, max_open: usize) -> OpenFiles {
        OpenFiles {
            slots: (0..files).map(|_| Mutex::new(None)).collect(),
            last_used: (0..files).map(|_| AtomicU64::new(0)).collect(),
            clock: AtomicU64::new(0),
            budget,
            max_open,
            evicting: Mutex::new(()),
        }
    }

    fn slot(&self, i: usize) -> std::sync::MutexGuard<'_, Option<Arc<OpenedFile>>> {
        self.slots[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    fn touch(&self, i: usize) {
        let now = self.clock.fetch_add(1, Relaxed) + 1;
        self.last_used[i].store(now, Relaxed);
    }

    /// File `i` if open, marked as just used.
    pub fn get(&self, i: usize) -> Option<Arc<OpenedFile>> {
        let f = self.slots.get(i).and_then(|_| self.slot(i).clone())?;
        self.touch(i);
        Some(f)
    }

    /// Keeps file `i` open (and its Bloom filters and dictionaries from now on), then closes
    /// the least recently used others while over budget.
    pub fn put(&self, i: usize, file: Arc<OpenedFile>) {
        if i >= self.slots.len() {
            return;
        }
        file.keep_metadata();
        *self.slot(i) = Some(file);
        self.touch(i);
        self.evict(Some(i));
    }

    /// Closes least recently used files (`keep` last) until the rest fit the budget.
    fn evict(&self, keep: Option<usize>) {
        let _one = self.evicting.lock().unwrap_or_else(|e| e.into_inner());
        let mut open: Vec<(u64, usize, u64)> = (0..self.slots.len())
            .filter_map(|i| {
                let held = self.slot(i).as_ref()?.held_bytes();
                Some((self.last_used[i].load(Relaxed), i, held))
            })
            .collect();
        let mut held: u64 = open.iter().map(|o| o.2).sum();
        let mut count = open.len();
        open.sort_unstable();
        for (_, i, bytes) in open {
            if held <= self.budget && count <= self.max_open {
                break;
            }
            if Some(i) != keep {
                *self.slot(i) = None;
                held -= bytes;
                count -= 1;
            }
        }
        // A single file over the budget is not kept either.
        if let Some(keep) = keep.filter(|_| held > self.budget) {
            *self.slot(keep) = None;
        }
    }

    /// Bytes of metadata the open files hold.
    pub fn held_bytes(&self) -> u64 {
        (0..self.slots.len())
            .filter_map(|i| self.slot(i).as_ref().map(|f| f.held_bytes()))
            .sum()
    }

    fn open_count(&self) -> usize {
        (0..self.slots.len())
            .filter(|&i| self.slot(i).is_some())
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opened(dir: &std::path::Path) -> Arc<OpenedFile> {
        let path = dir.join("f.parquet");
        if !path.exists() {
            let batch = arrow::array::RecordBatch::try_from_iter([(
                "x",
                Arc::new(arrow::array::Int32Array::from(
                    (0..1000).collect::<Vec<_>>(),
                )) as _,
            )])
            .unwrap();
            let file = std::fs::File::create(&path).unwrap();
            let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
            w.write(&batch).unwrap();
            w.close().unwrap();
        }
        Arc::new(OpenedFile::open(&path).unwrap())
    }

    fn open_slots(files: &OpenFiles) -> Vec<usize> {
        (0..files.slots.len())
            .filter(|&i| files.slot(i).is_some())
            .collect()
    }

    #[test]
    fn least_recently_used_files_close_first() {
        let dir = tempfile::tempdir().unwrap();
        let h = opened(dir.path()).held_bytes();
        assert!(h > 0);
        let files = OpenFiles::new(4, 2 * h + h / 2, 100);
        files.put(0, opened(dir.path()));
        files.put(1, opened(dir.path()));
        assert_eq!(open_slots(&files), [0, 1]);
        files.put(2, opened(dir.path()));
        assert_eq!(open_slots(&files), [1, 2]);
        assert!(files.get(1).is_some());
        assert!(files.get(0).is_none());
        files.put(0, opened(dir.path()));
        assert_eq!(open_slots(&files), [0, 1]);
        assert_eq!(files.held_bytes(), 2 * h);
        // Out of range is ignored, not a panic.
        files.put(9, opened(dir.path()));
        assert!(files.get(9).is_none());
    }

    #[test]
    fn the_count_is_bounded_and_a_file_over_budget_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let h = opened(dir.path()).held_bytes();
        let files = OpenFiles::new(3, u64::MAX, 2);
        for i in [0, 1, 0, 2] {
            files.put(i, opened(dir.path()));
        }
        assert_eq!(open_slots(&files), [0, 2]);
        let tiny = OpenFiles::new(2, h - 1, 10);
        tiny.put(0, opened(dir.path()));
        assert_eq!(open_slots(&tiny), Vec::<usize>::new());
        assert_eq!(tiny.held_bytes(), 0);
    }
}
