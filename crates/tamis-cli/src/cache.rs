//! `tamis cache`: fill, show and empty a cache directory of decompressed pages (the disk tier
//! of `tamis::cache`).

use std::path::Path;

use crate::scan::{build_scan, drive};
use crate::{CliError, CliResult, ScanArgs};

/// Scans `args` with the disk tier on and waiting for its writer, so that every page read
/// lands in the directory; prints what was written.
pub fn warm(args: &ScanArgs) -> CliResult<()> {
    let Some(dir) = &args.cache_dir else {
        return Err(CliError::msg("tamis cache warm needs --cache-dir DIR"));
    };
    let scan = build_scan(args, None)?; // turns the disk tier on
    tamis::cache::disk_cache_waits(true);
    let before = tamis::cache::page_cache_stats();
    let metrics = drive(scan.batches()?, |_batch| Ok(()))?;
    tamis::cache::flush_disk_cache(std::time::Duration::from_secs(600));
    let after = tamis::cache::page_cache_stats();
    let (entries, bytes) = tamis::cache::disk_cache_contents(dir);
    println!(
        "{}: {} pages written, {} already cached ({} pages read); the directory holds {} pages, {}",
        dir.display(),
        after.disk_written - before.disk_written,
        after.hits - before.hits,
        metrics.pages_read,
        entries,
        size(bytes)
    );
    Ok(())
}

pub fn stats(dir: &Path) -> CliResult<()> {
    existing(dir)?;
    let (entries, bytes) = tamis::cache::disk_cache_contents(dir);
    println!("{}: {entries} pages, {}", dir.display(), size(bytes));
    Ok(())
}

pub fn clear(dir: &Path) -> CliResult<()> {
    existing(dir)?;
    let removed = tamis::cache::clear_disk_cache(dir);
    println!("{}: {removed} pages removed", dir.display());
    Ok(())
}

/// `dir`, if it is a directory (`stats` and `clear` never create one).
fn existing(dir: &Path) -> CliResult<()> {
    if dir.is_dir() {
        Ok(())
    } else {
        Err(CliError::msg(format!(
            "{}: no such directory",
            dir.display()
        )))
    }
}

fn size(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}
