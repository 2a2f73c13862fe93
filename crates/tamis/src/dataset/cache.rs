//! `Dataset`: files listed and opened once, their metadata kept for every scan.
//!
//! Each opened file keeps its footer, the tail read at open (which usually holds the page
//! index) and the page indexes decoded so far; a scan built from the dataset reuses them, so a
//! repeated point lookup reads only its data pages. What the files hold is bounded by a byte
//! budget: past it, files are closed (their metadata dropped) from the last, and a scan that
//! reaches them opens them again.

use std::sync::Mutex;

use crate::error::Result;
use crate::io::location::list;
use crate::io::StorageOptions;
use crate::scan::Scan;

use super::plan::DatasetPlan;

/// Metadata kept by default: footers, tails and page indexes of a few hundred large files.
pub const DEFAULT_METADATA_BUDGET: u64 = 256 << 20;

/// Files kept open at most (file handles are the other bounded resource).
const MAX_OPEN: usize = 1024;

/// A dataset opened once for many scans.
///
/// ```no_run
/// # fn main() -> tamis::Result<()> {
/// let ds = tamis::Dataset::open("data/tpch-sf1/lineitem.parquet")?;
/// for key in [1, 3, 5] {
///     let rows: usize = ds.scan().filter(&format!("l_orderkey = {key}"))?.batches()?
///         .map(|b| b.map(|b| b.num_rows()))
///         .sum::<tamis::Result<usize>>()?;
///     println!("{key}: {rows}");
/// }
/// # Ok(()) }
/// ```
pub struct Dataset {
    plan: Mutex<DatasetPlan>,
    budget: u64,
}

impl Dataset {
    pub fn open(path: impl AsRef<str>) -> Result<Dataset> {
        Self::open_with(path, &StorageOptions::default(), None)
    }

    /// Opens with object-store options and a metadata budget in bytes (default
    /// [`DEFAULT_METADATA_BUDGET`]).
    pub fn open_with(
        path: impl AsRef<str>,
        options: &StorageOptions,
        metadata_budget: Option<u64>,
    ) -> Result<Dataset> {
        let listing = list(path.as_ref(), options)?;
        let plan = DatasetPlan::open_keeping(&listing, MAX_OPEN)?;
        let dataset = Dataset {
            plan: Mutex::new(plan),
            budget: metadata_budget.unwrap_or(DEFAULT_METADATA_BUDGET),
        };
        dataset.enforce_budget();
        Ok(dataset)
    }

    /// A scan over the dataset (the same builder as [`Scan::open`] returns), reading no footer.
    pub fn scan(&self) -> Scan {
        self.enforce_budget();
        Scan::over(self.lock().clone())
    }

    /// The files' paths or URLs.
    pub fn files(&self) -> Vec<String> {
        self.lock()
            .files
            .iter()
            .map(|f| f.location.clone())
            .collect()
    }

    /// Bytes of metadata the open files hold.
    pub fn metadata_bytes(&self) -> u64 {
        self.lock()
            .files
            .iter()
            .filter_map(|f| f.opened.as_ref())
            .map(|f| f.held_bytes())
            .sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, DatasetPlan> {
        self.plan.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Closes files from the last until what the open ones hold fits the budget.
    fn enforce_budget(&self) {
        let mut plan = self.lock();
        let mut held: u64 = 0;
        for f in plan.files.iter_mut() {
            if let Some(opened) = &f.opened {
                held += opened.held_bytes();
                if held > self.budget {
                    f.opened = None;
                }
            }
        }
    }
}
