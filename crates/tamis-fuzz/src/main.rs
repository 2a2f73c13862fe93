//! `tamis-fuzz`: coverage-free mutation fuzzing of tamis on stable Rust.
//!
//! ```text
//! cargo run --release -p tamis-fuzz -- --target all --seconds 1800 [--seed N] [--out DIR]
//! ```
//!
//! Targets: `file` (mutated generated files, random predicates and projections), `footer`
//! (mutations in the footer, page indexes and Bloom filters), `decoders` (page bytes into each
//! decoder entry point), `sidecar` (the sidecar index reader and page Bloom blobs), `predicate`
//! (SQL fragments through `Scan::filter`); `all` splits the time between them. A panic, an
//! internal error, an error that is not one line naming the file, or a peak allocation over
//! 64 MiB (scans run under a 16 MiB memory limit) is a failure: its input goes to `--out`
//! (default `fuzz-failures/`). A single allocation over 1 GiB is not attempted: the input is
//! saved and the process aborts. The exit status is 1 if anything failed.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::SeedableRng;
use tamis_fuzz::alloc::{self, Counting};
use tamis_fuzz::targets::{self, Fuzz, NAMES};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Largest single allocation attempted: far above anything a 16 MiB-limited scan may need.
const CAP: usize = 1 << 30;

fn on_over_cap(size: usize) {
    eprintln!(
        "tamis-fuzz: an allocation of {size} bytes: over the 1 GiB cap, aborting (the input is \
         the current-<target> file in the failure directory)"
    );
}

struct Args {
    targets: Vec<String>,
    seconds: f64,
    /// Inputs per target instead of a time: the same inputs on any machine (CI).
    iterations: Option<u64>,
    seed: u64,
    out: PathBuf,
}

fn usage() -> ! {
    eprintln!(
        "usage: tamis-fuzz [--target all|{}] [--seconds N | --iterations N] [--seed N] [--out DIR]",
        NAMES.join("|")
    );
    std::process::exit(2)
}

fn args() -> Args {
    let mut a = Args {
        targets: NAMES.iter().map(|s| s.to_string()).collect(),
        seconds: 60.0,
        iterations: None,
        seed: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
        out: PathBuf::from("fuzz-failures"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| usage());
        match flag.as_str() {
            "--target" if value == "all" => {}
            "--target" => {
                a.targets = value.split(',').map(str::to_string).collect();
                if a.targets.iter().any(|t| !NAMES.contains(&t.as_str())) {
                    usage()
                }
            }
            "--seconds" => a.seconds = value.parse().unwrap_or_else(|_| usage()),
            "--iterations" => a.iterations = Some(value.parse().unwrap_or_else(|_| usage())),
            "--seed" => a.seed = value.parse().unwrap_or_else(|_| usage()),
            "--out" => a.out = value.into(),
            _ => usage(),
        }
    }
    a
}

#[derive(Default)]
struct Totals {
    iterations: u64,
    panics: u64,
    internal: u64,
    unclean: u64,
    over_budget: u64,
}

fn main() {
    let args = args();
    std::fs::create_dir_all(&args.out).expect("create the failure directory");
    targets::keep_current_in(&args.out);
    alloc::set_on_over_cap(on_over_cap);
    // Panics are caught and counted; their location is kept for the report.
    static LAST_PANIC: Mutex<String> = Mutex::new(String::new());
    std::panic::set_hook(Box::new(|info| {
        if let Ok(mut last) = LAST_PANIC.try_lock() {
            *last = info.to_string();
        }
    }));
    let started = Instant::now();
    let fuzz = Fuzz::new();
    eprintln!(
        "tamis-fuzz: seed {}, {} corpus files, {:.1}s setup",
        args.seed,
        fuzz.samples.len(),
        started.elapsed().as_secs_f64()
    );
    alloc::set_cap(CAP);
    let per_target = Duration::from_secs_f64(args.seconds / args.targets.len() as f64);
    let mut failed = false;
    println!("target     seconds  iterations  panics  internal  unclean  over-budget");
    for (t, target) in args.targets.iter().enumerate() {
        let mut rng = StdRng::seed_from_u64(args.seed.wrapping_add(t as u64));
        let mut totals = Totals::default();
        let start = Instant::now();
        while match args.iterations {
            Some(n) => totals.iterations < n,
            None => start.elapsed() < per_target,
        } {
            let run = fuzz.run(target, &mut rng);
            totals.iterations += 1;
            if let Err(why) = &run.verdict {
                failed = true;
                if why.starts_with("panic") {
                    totals.panics += 1;
                } else if why.starts_with("internal") {
                    totals.internal += 1;
                } else if why.starts_with("peak") {
                    totals.over_budget += 1;
                } else {
                    totals.unclean += 1;
                }
                let n = totals.panics + totals.internal + totals.unclean + totals.over_budget;
                let base = args.out.join(format!("{target}-{}-{n}", args.seed));
                let _ = std::fs::write(base.with_extension("bin"), &run.input);
                let panic = std::mem::take(&mut *LAST_PANIC.lock().unwrap());
                let _ = std::fs::write(
                    base.with_extension("txt"),
                    format!("{why}\n{}\n{panic}\n", run.note),
                );
                eprintln!("tamis-fuzz: {target}: {why} ({})", base.display());
            }
        }
        println!(
            "{target:<10} {:>7.0}  {:>10}  {:>6}  {:>8}  {:>7}  {:>11}",
            start.elapsed().as_secs_f64(),
            totals.iterations,
            totals.panics,
            totals.internal,
            totals.unclean,
            totals.over_budget
        );
        let _ = std::io::stdout().flush();
        let _ = std::fs::remove_file(args.out.join(format!("current-{target}")));
    }
    std::process::exit(i32::from(failed));
}
