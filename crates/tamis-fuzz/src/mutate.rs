//! Byte-level mutations of whole files: bit flips, byte overwrites, interesting integers (raw
//! little-endian or as Thrift compact varints), truncation, cut-outs and splices from other files.

use std::ops::Range;

use rand::rngs::StdRng;
use rand::Rng;

use crate::corpus::Sample;

/// Values at the edges of the ranges parsers check: counts, lengths, offsets, bit widths.
pub const INTERESTING: [i64; 24] = [
    0,
    1,
    -1,
    2,
    7,
    8,
    16,
    31,
    32,
    33,
    64,
    65,
    127,
    128,
    255,
    256,
    0x7fff,
    0xffff,
    0x7fff_ffff,
    -0x8000_0000,
    0xffff_ffff,
    1 << 40,
    i64::MAX,
    i64::MIN,
];

pub fn interesting(rng: &mut StdRng) -> i64 {
    let v = INTERESTING[rng.random_range(0..INTERESTING.len())];
    match rng.random_range(0..4) {
        0 => v.wrapping_add(1),
        1 => v.wrapping_sub(1),
        _ => v,
    }
}

fn zigzag_varint(v: i64) -> Vec<u8> {
    let mut u = ((v << 1) ^ (v >> 63)) as u64;
    let mut out = Vec::new();
    loop {
        let b = (u & 0x7f) as u8;
        u >>= 7;
        if u == 0 {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
    }
}

/// Where a mutation lands: anywhere, in the footer, in the page index / Bloom filter area, or at
/// a page header.
fn position(rng: &mut StdRng, s: &Sample, len: usize) -> usize {
    let pick = |rng: &mut StdRng, r: &Range<usize>| {
        if r.is_empty() {
            rng.random_range(0..len)
        } else {
            rng.random_range(r.clone())
        }
    };
    let p = match rng.random_range(0..4) {
        0 => rng.random_range(0..len),
        1 => pick(rng, &s.footer),
        2 => pick(rng, &s.metadata),
        _ if s.headers.is_empty() => rng.random_range(0..len),
        _ => s.headers[rng.random_range(0..s.headers.len())] + rng.random_range(0..24),
    };
    p.min(len - 1)
}

/// Replaces `at..at + old` with `new`; when that range lies inside the footer, the footer's
/// length field is adjusted, so that the change reaches the Thrift parser instead of only
/// breaking the length.
fn splice_fixed(bytes: &mut Vec<u8>, s: &Sample, at: usize, old: usize, new: &[u8]) {
    let old = old.min(bytes.len() - at);
    bytes.splice(at..at + old, new.iter().copied());
    if s.footer.contains(&at) && bytes.len() >= 8 && bytes.len() == s.bytes.len() - old + new.len()
    {
        let len = (s.footer.len() + new.len()) as i64 - old as i64;
        let n = bytes.len();
        bytes[n - 8..n - 4].copy_from_slice(&(len as u32).to_le_bytes());
    }
}

/// One to a few mutations of `s`; `donors` are other files to splice from.
pub fn mutate(rng: &mut StdRng, s: &Sample, donors: &[Sample]) -> Vec<u8> {
    let mut bytes = s.bytes.clone();
    let rounds = if rng.random_bool(0.7) {
        1
    } else {
        rng.random_range(2..6)
    };
    for _ in 0..rounds {
        if bytes.len() < 2 {
            break;
        }
        let len = bytes.len();
        let at = position(rng, s, len);
        match rng.random_range(0..10) {
            0..=2 => bytes[at] ^= 1 << rng.random_range(0..8),
            3 => {
                for b in bytes.iter_mut().skip(at).take(rng.random_range(1..5)) {
                    *b = rng.random();
                }
            }
            4 => {
                let v = interesting(rng).to_le_bytes();
                let w = [1, 2, 4, 8][rng.random_range(0..4)];
                for (i, b) in v.iter().take(w).enumerate() {
                    if let Some(x) = bytes.get_mut(at + i) {
                        *x = *b;
                    }
                }
            }
            5 | 6 => {
                // A Thrift compact varint (field value) replaced by an interesting one.
                let mut end = at;
                while end < len && bytes[end] & 0x80 != 0 && end - at < 10 {
                    end += 1;
                }
                let old = (end + 1).min(len) - at;
                splice_fixed(&mut bytes, s, at, old, &zigzag_varint(interesting(rng)));
            }
            7 => bytes.truncate(rng.random_range(0..len)),
            8 => {
                let cut = rng.random_range(1..64).min(len - at);
                bytes.drain(at..at + cut);
            }
            _ => {
                let d = &donors[rng.random_range(0..donors.len())].bytes;
                let from = rng.random_range(0..d.len());
                let n = rng.random_range(1..256).min(d.len() - from).min(len - at);
                bytes[at..at + n].copy_from_slice(&d[from..from + n]);
            }
        }
    }
    bytes
}
