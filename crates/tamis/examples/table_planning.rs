//! The planning time of a table scan: open the table, apply a filter, drain the scan; the
//! median of N runs, split into its phases. With a filter no file holds (`l_orderkey = -1`)
//! this is the log or manifests, the pruning and whatever is read before the scan knows.
//!
//! ```text
//! cargo run --release -p tamis --example table_planning -- TABLE "l_orderkey = -1" 21
//! ```
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, path, filter, runs] = &args[..] else {
        eprintln!("usage: table_planning TABLE FILTER RUNS");
        std::process::exit(2);
    };
    let runs: usize = runs.parse().expect("RUNS is a number");
    let mut times: Vec<(Duration, Duration, Duration, Duration, usize)> = Vec::new();
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let scan = tamis::Scan::open(path).expect("the table opens");
        let open = start.elapsed();
        let scan = scan.filter(filter).expect("the filter binds");
        let filtered = start.elapsed();
        let rows: usize = (scan.batches().expect("the scan starts"))
            .map(|b| b.expect("a batch").num_rows())
            .sum();
        let total = start.elapsed();
        times.push((total, open, filtered - open, total - filtered, rows));
    }
    times.sort();
    let (total, open, filter, drain, rows) = times[times.len() / 2];
    println!("median of {runs}: {total:?} (open {open:?}, filter {filter:?}, scan {drain:?}), {rows} rows");
}
