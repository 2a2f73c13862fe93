//! Kernel micro-benchmarks (paper Table 1 and Fig. 12). Run one at a time on a quiet machine:
//!
//! ```text
//! cargo bench -p tamis --bench kernels            # everything (a few minutes)
//! cargo bench -p tamis --bench kernels -- m1/k3/  # one slice
//! python3 crates/tamis/benches/kernels_table.py   # tables from target/criterion
//! ```
//!
//! * `m0/{pext,pdep,blsi}/{hw,sw}`: 4096 random operand pairs per iteration; hardware
//!   instruction vs a naive bit-at-a-time software version (BLSI in software is `x & -x`).
//! * `m1/k{k}/s{s}/{method}`: 2^20 codes of width k, a dictionary of 2^k int64, a uniform random
//!   selection of 1 in s. `decode_all` = unpack every code, gather every value, keep the
//!   selected ones; `{scalar,bmi2,avx512}` = the kernel path's select_unpack, then gather only
//!   the selected codes.
//! * `select/k{k}/s{s}/{isa}`: select_unpack alone (codes in, selected u32 codes out), k <= 8.
//! * `equal/k{k}/{isa}`: codes equal to one literal → bitmap, 2^20 codes in calls of 1 024 (as
//!   the scan calls it, one per bit-packed run): a single matching dictionary entry.
//! * `keys/span{span}/n{keys}/{bloom,bitmap}/{isa}`: join-key probes, a Bloom filter against an
//!   exact bitmap over the keys' span.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::time::Duration;
use tamis::budget::Budget;
use tamis::encoding::{bitpack, dictionary};
use tamis::kernels::{for_isa, supported};
use tamis::values::Values;

const N: usize = 1 << 20;
const SELECTIVITIES: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];

fn pack(codes: &[u32], k: u8) -> Vec<u8> {
    let k = k as usize;
    let mut out = vec![0u8; (codes.len() * k).div_ceil(8)];
    for (i, &c) in codes.iter().enumerate() {
        let bit = i * k;
        let wide = (c as u64) << (bit % 8);
        for (b, byte) in out[bit / 8..]
            .iter_mut()
            .take((bit % 8 + k).div_ceil(8))
            .enumerate()
        {
            *byte |= (wide >> (8 * b)) as u8;
        }
    }
    out
}

/// Uniform random selection of about `n / s` of `n` items.
fn selection(n: usize, s: u32, rng: &mut StdRng) -> Vec<u64> {
    let mut w = vec![0u64; n.div_ceil(64)];
    for i in 0..n {
        if rng.random_range(0..s) == 0 {
            w[i / 64] |= 1 << (i % 64);
        }
    }
    w
}

fn naive_pext(src: u64, mask: u64) -> u64 {
    let (mut out, mut j) = (0u64, 0);
    for b in 0..64 {
        if mask >> b & 1 == 1 {
            out |= (src >> b & 1) << j;
            j += 1;
        }
    }
    out
}

fn naive_pdep(src: u64, mask: u64) -> u64 {
    let (mut out, mut j) = (0u64, 0);
    for b in 0..64 {
        if mask >> b & 1 == 1 {
            out |= (src >> j & 1) << b;
            j += 1;
        }
    }
    out
}

fn configure(c: &mut Criterion) -> Criterion {
    std::mem::take(c)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_millis(300))
        .sample_size(10)
}

fn m0(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(0);
    let pairs: Vec<(u64, u64)> = (0..4096).map(|_| (rng.random(), rng.random())).collect();
    let mut g = c.benchmark_group("m0");
    g.throughput(Throughput::Elements(pairs.len() as u64));
    #[cfg(all(target_arch = "x86_64", feature = "bmi-select"))]
    {
        type Op = fn(&[(u64, u64)]) -> Option<u64>;
        let hw: [(&str, Op); 3] = [
            ("pext", tamis::kernels::bmi2::pext_xor),
            ("pdep", tamis::kernels::bmi2::pdep_xor),
            ("blsi", tamis::kernels::bmi2::blsi_xor),
        ];
        for (name, f) in hw {
            if f(&pairs).is_some() {
                g.bench_function(format!("{name}/hw"), |b| b.iter(|| f(black_box(&pairs))));
            }
        }
    }
    type SoftOp = fn(u64, u64) -> u64;
    let sw: [(&str, SoftOp); 3] = [
        ("pext", naive_pext),
        ("pdep", naive_pdep),
        ("blsi", |s, _| s & s.wrapping_neg()),
    ];
    for (name, f) in sw {
        g.bench_function(format!("{name}/sw"), |b| {
            b.iter(|| {
                black_box(&pairs)
                    .iter()
                    .fold(0, |acc, &(s, m)| acc ^ f(s, m))
            })
        });
    }
    g.finish();
}

fn m1(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(1);
    let mut g = c.benchmark_group("m1");
    g.throughput(Throughput::Elements(N as u64));
    for k in 1..=16u8 {
        let dict = Values::I64((0..1i64 << k).map(|v| v * 1_000_003).collect());
        let codes: Vec<u32> = (0..N).map(|_| rng.random_range(0..1u32 << k)).collect();
        let packed = pack(&codes, k);
        for s in SELECTIVITIES {
            let sel = selection(N, s, &mut rng);
            let id = |m: &str| BenchmarkId::from_parameter(format!("k{k}/s{s}/{m}"));
            g.bench_function(id("decode_all"), |b| {
                let mut all = Vec::with_capacity(N);
                let mut kept = Vec::with_capacity(N);
                b.iter(|| {
                    all.clear();
                    bitpack::unpack(&packed, k, N, &mut all).unwrap();
                    let Values::I64(values) =
                        dictionary::gather(&dict, &all, &Budget::default()).unwrap()
                    else {
                        unreachable!()
                    };
                    kept.clear();
                    for (w, &bits) in sel.iter().enumerate() {
                        let mut rest = bits;
                        while rest != 0 {
                            kept.push(values[w * 64 + rest.trailing_zeros() as usize]);
                            rest &= rest - 1;
                        }
                    }
                    kept.len()
                })
            });
            for isa in supported() {
                let t = for_isa(isa).unwrap();
                g.bench_function(id(isa.name()), |b| {
                    let mut selected = Vec::with_capacity(N);
                    b.iter(|| {
                        selected.clear();
                        (t.select_unpack)(&packed, k, N, &sel, &mut selected);
                        dictionary::gather(&dict, &selected, &Budget::default()).unwrap()
                    })
                });
            }
        }
    }
    g.finish();
}

fn select_only(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(2);
    let mut g = c.benchmark_group("select");
    g.throughput(Throughput::Elements(N as u64));
    for k in 1..=8u8 {
        let codes: Vec<u32> = (0..N).map(|_| rng.random_range(0..1u32 << k)).collect();
        let packed = pack(&codes, k);
        for s in SELECTIVITIES {
            let sel = selection(N, s, &mut rng);
            for isa in supported() {
                let t = for_isa(isa).unwrap();
                let id = BenchmarkId::from_parameter(format!("k{k}/s{s}/{}", isa.name()));
                g.bench_function(id, |b| {
                    let mut selected = Vec::with_capacity(N);
                    b.iter(|| {
                        selected.clear();
                        (t.select_unpack)(&packed, k, N, &sel, &mut selected);
                        selected.len()
                    })
                });
            }
            if let Some(t) = for_isa(tamis::kernels::Isa::Bmi2) {
                let id = BenchmarkId::from_parameter(format!("k{k}/s{s}/bmi2_packed"));
                g.bench_function(id, |b| {
                    let mut out = Vec::with_capacity(N * k as usize / 64 + 1);
                    b.iter(|| {
                        out.clear();
                        (t.select_packed)(&packed, k, N, &sel, &mut out)
                    })
                });
            }
        }
    }
    g.finish();
}

fn equal_only(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(3);
    let mut g = c.benchmark_group("equal");
    g.throughput(Throughput::Elements(N as u64));
    const CALL: usize = 1024;
    for k in [1u8, 2, 3, 4, 6, 8, 9, 12, 15, 16] {
        let codes: Vec<u32> = (0..N).map(|_| rng.random_range(0..1u32 << k)).collect();
        let packed = pack(&codes, k);
        let literal = codes[N / 2];
        // Each call's codes start on a byte: CALL * k bits is a whole number of bytes.
        let bytes_per_call = CALL * k as usize / 8;
        for isa in supported() {
            let t = for_isa(isa).unwrap();
            let id = BenchmarkId::from_parameter(format!("k{k}/{}", isa.name()));
            g.bench_function(id, |b| {
                let mut out = [0u64; CALL / 64];
                b.iter(|| {
                    let mut hits = 0u32;
                    for call in packed.chunks(bytes_per_call) {
                        (t.equal)(call, k, CALL, literal, &mut out);
                        hits += out.iter().map(|w| w.count_ones()).sum::<u32>();
                    }
                    hits
                })
            });
        }
    }
    g.finish();
}

/// `keys/span{span}/n{keys}/{bloom,bitmap}/{isa}`: 2^20 random probes in the keys' span against
/// a join's keys as a blocked Bloom filter and as an exact bitmap over the span (the choice
/// `tamis::expr::KeyFilter::from_ints` makes by span), in calls of 64 as the scan probes.
fn key_probes(c: &mut Criterion) {
    use tamis::kernels::key_probe::{mix, place, probe, probe_span, wide};
    let mut rng = StdRng::seed_from_u64(4);
    let mut g = c.benchmark_group("keys");
    g.throughput(Throughput::Elements(N as u64));
    let paths: Vec<(bool, &str)> = match wide() {
        true => vec![(false, "scalar"), (true, "avx512")],
        false => vec![(false, "scalar")],
    };
    for (span, keys) in [
        (200_000i64, 204usize),
        (2_000_000, 2_044),
        (20_000_000, 20_000),
    ] {
        let ks: Vec<i64> = (0..keys).map(|_| rng.random_range(0..span)).collect();
        let probes: Vec<i64> = (0..N).map(|_| rng.random_range(0..span)).collect();
        // 16 bits a key, as `KeyFilter` sizes its Bloom filter.
        let mut blocks = vec![0u64; (keys * 16).div_ceil(64)];
        for &k in &ks {
            let (b, m) = place(mix(k as u64), blocks.len());
            blocks[b] |= m;
        }
        let mut bits = vec![0u64; (span as usize).div_ceil(64)];
        for &k in &ks {
            bits[(k / 64) as usize] |= 1 << (k % 64);
        }
        for &(isa, name) in &paths {
            let id = format!("span{span}/n{keys}/bloom/{name}");
            g.bench_function(BenchmarkId::from_parameter(id), |b| {
                b.iter(|| {
                    let chunks = probes.chunks(64);
                    chunks
                        .map(|c| probe(isa, &blocks, c).count_ones())
                        .sum::<u32>()
                })
            });
            let id = format!("span{span}/n{keys}/bitmap/{name}");
            g.bench_function(BenchmarkId::from_parameter(id), |b| {
                b.iter(|| {
                    let chunks = probes.chunks(64);
                    let hits = chunks.map(|c| probe_span(isa, 0, span as u64, &bits, c));
                    hits.map(u64::count_ones).sum::<u32>()
                })
            });
        }
    }
    g.finish();
}

fn benches(c: &mut Criterion) {
    let mut c = configure(c);
    m0(&mut c);
    select_only(&mut c);
    equal_only(&mut c);
    key_probes(&mut c);
    m1(&mut c);
}

criterion_group!(all, benches);
criterion_main!(all);
