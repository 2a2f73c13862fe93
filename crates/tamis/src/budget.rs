//! Memory budgets: no buffer is sized by a header field the limits have not checked.
//!
//! A page header, a dictionary header or an encoded run can announce far more values than its
//! bytes hold (a bit width of 0, an RLE run, a DELTA_BYTE_ARRAY prefix copied over and over).
//! Counts are first bounded by what the page may hold (its rows, its bytes); the bytes a decoder
//! is about to produce are then reserved here before the buffer is allocated. A reservation
//! beyond the limit is a [`ErrorKind::ResourceLimit`](crate::ErrorKind::ResourceLimit) error
//! (the caller adds file, row group, column and page), never an attempt to allocate.
//!
//! One [`Budget`] belongs to one row-group task and counts everything that task decodes and keeps
//! (decoded pages, dictionaries, codes, selection bitmaps). A payload column's pages are freed
//! once its Arrow array is built, so the sum is an upper bound of what the task holds. The
//! limit is the scan's [`memory_limit`](crate::Scan::memory_limit) (default
//! [`DEFAULT_MEMORY_LIMIT`]); a scan runs at
//! most its worker count of row groups at once.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use crate::error::{Error, Result};

/// The default [`crate::Scan::memory_limit`]: 4 GiB. Fixed rather than a fraction of RAM so that
/// whether a file is refused does not depend on the machine; a row group of TPC-H lineitem
/// (1 048 576 rows, all 16 columns decoded) takes about 200 MiB.
pub const DEFAULT_MEMORY_LIMIT: usize = 4 << 30;

/// A size in bytes as users write one: a number with an optional binary suffix (K, M, G, T;
/// "KiB", "KB" and "K" are the same), e.g. `512MiB`, `4 GB`. Zero is out of range. (The CLI's
/// `--memory-limit` and `--page-cache`, and `TAMIS_PAGE_CACHE`.)
pub fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(format!("'{s}' is not a size (e.g. 512MiB, 4GiB)")),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (e.g. 512MiB, 4GiB)"))?;
    n.checked_mul(1u64 << shift)
        .filter(|&v| v > 0)
        .ok_or_else(|| format!("'{s}' is out of range"))
}

/// Bytes reserved by one row-group task, against a limit.
#[derive(Debug)]
pub struct Budget {
    limit: usize,
    used: AtomicUsize,
}

impl Budget {
    pub fn new(limit: usize) -> Budget {
        Budget {
            limit,
            used: AtomicUsize::new(0),
        }
    }

    /// The limit in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes reserved so far.
    pub fn used(&self) -> usize {
        self.used.load(Relaxed)
    }

    /// Reserves `bytes` for a buffer about to be built (`what` names it for the error).
    pub fn reserve(&self, bytes: usize, what: impl FnOnce() -> String) -> Result<()> {
        let mut used = self.used.load(Relaxed);
        loop {
            let total = used.checked_add(bytes).filter(|&t| t <= self.limit);
            let Some(total) = total else {
                return Err(Error::resource(format!(
                    "{} needs {} bytes, over the memory limit of {} bytes ({} already in use; \
                     raise it with Scan::memory_limit, --memory-limit or memory_limit=)",
                    what(),
                    bytes,
                    self.limit,
                    used
                )));
            };
            match self
                .used
                .compare_exchange_weak(used, total, Relaxed, Relaxed)
            {
                Ok(_) => return Ok(()),
                Err(now) => used = now,
            }
        }
    }

    /// Reserves `count` items of `size` bytes each.
    pub fn reserve_items(
        &self,
        count: usize,
        size: usize,
        what: impl FnOnce() -> String,
    ) -> Result<()> {
        self.reserve(count.saturating_mul(size), what)
    }
}

impl Default for Budget {
    /// A budget at [`DEFAULT_MEMORY_LIMIT`].
    fn default() -> Self {
        Budget::new(DEFAULT_MEMORY_LIMIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn reservations_add_up_to_the_limit() {
        let b = Budget::new(100);
        b.reserve(60, || "a".into()).unwrap();
        b.reserve(40, || "b".into()).unwrap();
        assert_eq!(b.used(), 100);
        let e = b.reserve(1, || "the third buffer".into()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::ResourceLimit);
        assert!(
            e.message
                .starts_with("the third buffer needs 1 bytes, over the memory limit of 100 bytes"),
            "{}",
            e.message
        );
        // A refused reservation takes nothing.
        assert_eq!(b.used(), 100);
        let e = b
            .reserve_items(usize::MAX, 8, || "huge".into())
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::ResourceLimit);
    }
}
