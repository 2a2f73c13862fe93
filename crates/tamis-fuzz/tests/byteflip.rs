//! Byte flipping over whole generated files: every encoding tamis decodes, every codec, data
//! pages v1 and v2, page indexes, Bloom filters, nullable and list columns (see
//! `tamis_fuzz::corpus`). Bytes are flipped or overwritten at seeded random positions —
//! anywhere, in the footer, in the page index / Bloom filter area and at page headers — and each
//! mutated file is scanned with a random predicate and projection under a 16 MiB memory limit.
//!
//! Asserted for every scan: no panic, no internal error, every error one line naming the file
//! (only a request that no longer binds to a corrupted schema may be an unnamed invalid
//! argument), and at most 64 MiB live at the peak, measured by the counting global allocator.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tamis_fuzz::{alloc::Counting, check_scan, corpus, mutate, predicate, Request};

#[global_allocator]
static GLOBAL: Counting = Counting;

const MIB: usize = 1 << 20;

#[test]
fn flipped_bytes_fail_cleanly_within_budget() {
    let samples = corpus::generate();
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(16);
    let (mut read, mut refused) = (0, 0);
    let mut failures = Vec::new();
    // The unmutated files are read in full.
    for s in &samples {
        let path = dir.path().join(format!("{}.parquet", s.name));
        std::fs::write(&path, &s.bytes).unwrap();
        let rows = tamis_fuzz::scan(path.to_str().unwrap(), &Request::default())
            .unwrap_or_else(|(_, e)| panic!("{}: {e}", s.name));
        assert_eq!(rows, corpus::ROWS, "{}", s.name);
    }
    let per_file = 40;
    for s in &samples {
        for i in 0..per_file {
            let bytes = mutate::mutate(&mut rng, s, &samples);
            let path = dir.path().join(format!("{}_m{i}.parquet", s.name));
            std::fs::write(&path, &bytes).unwrap();
            let req = Request {
                filter: rng
                    .random_bool(0.7)
                    .then(|| predicate::predicate(&mut rng, 2)),
                select: predicate::projection(&mut rng),
                memory_limit: Some(16 * MIB),
                index_dir: None,
            };
            match check_scan(&path, &req, 64 * MIB) {
                Ok(r) if r.ends_with(" rows") => read += 1,
                Ok(_) => refused += 1,
                Err(why) => failures.push(format!("{}_m{i} {req:?}: {why}", s.name)),
            }
            std::fs::remove_file(&path).unwrap();
        }
    }
    eprintln!(
        "{} files x {per_file} mutations: {read} read, {refused} refused cleanly, {} failures",
        samples.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The mutations reach the decoders: a good share of files is refused, not all.
    assert!(refused > 0 && read > 0, "{read} read, {refused} refused");
}
