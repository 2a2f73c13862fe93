//! Times one tamis scan, for A/B comparisons of two builds on the same machine.
//!
//! ```text
//! cargo run --release -p tamis --example scan_time -- FILE WHERE COLUMNS [runs] [threads]
//! ```
//! `COLUMNS` is comma-separated (`-` for every column). Prints rows, the median and spread of
//! `runs` (default 7) after one warm-up, warm cache, and the scan's value counters.
//! `SCAN_TIME_RANGE_ROWS` sets the rows a row group hands on at a time.

use std::time::Instant;

/// As in the CLI and the Python module: page-sized buffers are reused, not re-faulted.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, filter, columns, rest @ ..] = &args[..] else {
        eprintln!("usage: scan_time FILE WHERE COLUMNS [runs] [threads]");
        std::process::exit(2);
    };
    let runs: usize = rest.first().map_or(7, |r| r.parse().expect("runs"));
    let threads: usize = rest.get(1).map_or(1, |t| t.parse().expect("threads"));
    let columns: Vec<&str> = if columns == "-" {
        Vec::new()
    } else {
        columns.split(',').collect()
    };
    // Rows a row group hands on at a time, for tuning (`Scan::range_rows`).
    let range_rows: Option<usize> = std::env::var("SCAN_TIME_RANGE_ROWS")
        .ok()
        .map(|r| r.parse().expect("SCAN_TIME_RANGE_ROWS"));
    let mut times = Vec::new();
    let mut phases = Vec::new();
    let mut last = None;
    for _ in 0..=runs {
        let start = Instant::now();
        let mut scan = tamis::Scan::open(path)
            .and_then(|s| s.filter(filter))
            .unwrap_or_else(|e| panic!("{e}"));
        if !columns.is_empty() {
            scan = scan.select(&columns).unwrap_or_else(|e| panic!("{e}"));
        }
        if let Some(rows) = range_rows {
            scan = scan.range_rows(rows);
        }
        let mut stream = scan
            .threads(threads)
            .batches()
            .unwrap_or_else(|e| panic!("{e}"));
        let mut rows = 0;
        for b in &mut stream {
            rows += b.unwrap_or_else(|e| panic!("{e}")).num_rows();
        }
        times.push(start.elapsed().as_secs_f64() * 1e3);
        let m = stream.metrics();
        let ms = |ns: u64| ns as f64 / 1e6;
        phases.push([
            ms(m.time_metadata_ns),
            ms(m.time_prune_ns),
            ms(m.time_filter_ns),
            ms(m.time_payload_ns),
        ]);
        last = Some((rows, m));
    }
    times.remove(0);
    phases.remove(0);
    times.sort_by(|a, b| a.total_cmp(b));
    // Each phase's median on its own (summed over threads).
    let phase = |i: usize| {
        let mut p: Vec<f64> = phases.iter().map(|p| p[i]).collect();
        p.sort_by(|a, b| a.total_cmp(b));
        p[p.len() / 2]
    };
    let (rows, m) = last.expect("at least one run");
    println!(
        "rows {rows}  median {:.1} ms ({:.1}–{:.1})  in place {}  decoded {}  read {} B",
        times[times.len() / 2],
        times[0],
        times[times.len() - 1],
        m.values_in_place,
        m.values_decoded,
        m.bytes_read
    );
    println!(
        "phases (medians): metadata {:.2} ms  prune {:.2} ms  filter {:.2} ms  payload {:.2} ms",
        phase(0),
        phase(1),
        phase(2),
        phase(3)
    );
}
