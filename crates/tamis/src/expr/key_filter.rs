//! Join keys as a filter the scan can probe: a register-blocked Bloom filter (paper 000, T13).
//!
//! A hash join builds its table from one side; the other side's scan only needs the rows
//! whose key may be in that table. The keys are folded into a filter of 64-bit blocks: one
//! hash picks a block, and [`BITS_PER_KEY`]-sized blocks hold the key's [`HASHES`](crate::kernels::key_probe::HASHES) bits, so a
//! probe is one multiply-mix, one load and one compare (`block & mask == mask`) — one cache
//! miss at most, however large the key set. The join above still checks every row, so false
//! positives cost time, never rows.
//!
//! Integer keys that lie close together (within [`SPAN_BITS`] of each other, or 64 values a key)
//! are kept exactly instead, as a bitmap over their span: a probe is a subtraction, a compare
//! and one bit test, with no false positives (TPC-H Q17's 204 part keys spread over 197 000
//! values: the Bloom filter let through 4x the matching rows).
//!
//! The filter also decides at run time whether probing pays (paper 000, FW8): scans report
//! how many values they probed and how many passed, and once a filter has seen enough values
//! and keeps most of them, it switches itself off ([`KeyFilter::active`]); a switched-off
//! filter passes everything without probing. One `Arc<KeyFilter>` can serve every scan that
//! joins on the same key (both `lineitem` scans of TPC-H Q17, T16), so its counts and its
//! decision are shared.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Bits of filter per key: about 1% false positives for a 64-bit-block filter with
/// [`HASHES`](crate::kernels::key_probe::HASHES) bits per key (measured in the tests below).
pub(crate) const BITS_PER_KEY: usize = 16;

/// Bits set per key inside its block (the paper's k = 5; 6 gives fewer false positives at
/// 16 bits per key and still fits the 36 low bits of one 64-bit hash).
use crate::kernels::key_probe::{self, mix};

/// Integer keys whose span (largest − smallest + 1) is at most this many values, or at most 64
/// values a key, are kept as an exact bitmap over the span. 256 KiB stays in L2 (`cargo bench
/// -p tamis --bench kernels -- keys/`, AVX-512: random probes over 2 M values 0.65 ns each
/// against the Bloom filter's 1.43; over 20 M values, 2.4 MiB of bits, 1.25 against 1.44).
pub(crate) const SPAN_BITS: u64 = 1 << 21;

/// The most values a span bitmap covers however many keys there are (2 MiB of bits).
const SPAN_BITS_MAX: u64 = 1 << 24;

/// A filter keeps probing until it has seen this many values…
pub(crate) const ADAPT_MIN_PROBES: u64 = 1 << 16;

/// …and switches off if more than this share of them passed (paper 000 J3: with plain keys,
/// probing stops paying above about 20% selected; with dictionary keys later).
pub(crate) const ADAPT_MAX_PASS: f64 = 0.8;

/// What kind of value the keys are: integers (any width, signed or not, dates) or byte
/// strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyKind {
    Int,
    Bytes,
}

/// A set of integer keys as a bitmap over their span: bit `i` of `bits` is set iff `lo + i` is
/// a key, `len` values in all.
#[derive(Debug)]
struct Span {
    lo: i64,
    len: u64,
    bits: Vec<u64>,
}

impl Span {
    /// The keys (the smallest `lo`, the largest `hi`) as a span bitmap, if they lie within
    /// `max_len` values of each other.
    fn of(keys: &[i64], (lo, hi): (i64, i64), max_len: u64) -> Option<Span> {
        let len = u64::try_from(hi as i128 - lo as i128 + 1).ok()?;
        if len > max_len {
            return None;
        }
        let mut bits = vec![0u64; len.div_ceil(64) as usize];
        for &k in keys {
            let off = k.wrapping_sub(lo) as u64;
            bits[(off >> 6) as usize] |= 1 << (off & 63);
        }
        Some(Span { lo, len, bits })
    }

    #[inline]
    fn contains(&self, k: i64) -> bool {
        let off = k.wrapping_sub(self.lo) as u64;
        off < self.len && (self.bits[(off >> 6) as usize] >> (off & 63)) & 1 == 1
    }
}

/// A join's build-side keys as a blocked Bloom filter, with its run-time probe counts.
pub struct KeyFilter {
    kind: KeyKind,
    blocks: Vec<u64>,
    keys: usize,
    label: String,
    /// The smallest and largest integer key (none for byte strings or no keys).
    int_span: Option<(i64, i64)>,
    /// Integer keys close together, exactly (then `blocks` is empty and unused).
    exact: Option<Span>,
    probed: AtomicU64,
    passed: AtomicU64,
    off: AtomicBool,
    adaptive: bool,
}

impl fmt::Debug for KeyFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyFilter")
            .field("label", &self.label)
            .field("kind", &self.kind)
            .field("keys", &self.keys)
            .field("blocks", &self.blocks.len())
            .finish()
    }
}

/// Filters are compared by identity: two filters with the same keys are still two filters
/// (their run-time counts differ).
impl PartialEq for KeyFilter {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

#[inline(always)]
fn hash_bytes(b: &[u8]) -> u64 {
    twox_hash::XxHash64::oneshot(0, b)
}

impl KeyFilter {
    fn sized(kind: KeyKind, keys: usize, label: String) -> KeyFilter {
        // At most u32::MAX blocks: the probe's range reduction works on 32 bits.
        let blocks = (keys.saturating_mul(BITS_PER_KEY))
            .div_ceil(64)
            .clamp(1, u32::MAX as usize);
        KeyFilter {
            kind,
            blocks: vec![0; blocks],
            keys: 0,
            label,
            int_span: None,
            exact: None,
            probed: AtomicU64::new(0),
            passed: AtomicU64::new(0),
            off: AtomicBool::new(false),
            adaptive: true,
        }
    }

    /// A filter over integer keys (`i64` values; unsigned and narrower keys as the column's
    /// values widen: `u32 as u64`, `i32 as i64`), in any order and with repeats (a join's
    /// build rows): [`KeyFilter::keys`] counts each key once. `label` names it in `explain`
    /// output.
    pub fn from_ints(keys: &[i64], label: impl Into<String>) -> KeyFilter {
        let int_span = keys
            .iter()
            .min()
            .zip(keys.iter().max())
            .map(|(&a, &b)| (a, b));
        let max_len = SPAN_BITS.max(64 * keys.len() as u64).min(SPAN_BITS_MAX);
        // A span bitmap needs no sorting: a repeated key sets its bit again, and the bits set
        // are the distinct keys (a build side of 2 M rows is one pass, not a sort).
        let mut f = match int_span.and_then(|span| Span::of(keys, span, max_len)) {
            Some(span) => {
                let mut f = KeyFilter::sized(KeyKind::Int, 0, label.into());
                f.blocks = Vec::new();
                f.keys = span.bits.iter().map(|w| w.count_ones() as usize).sum();
                f.exact = Some(span);
                f
            }
            None => {
                let mut distinct = keys.to_vec();
                distinct.sort_unstable();
                distinct.dedup();
                let mut f = KeyFilter::sized(KeyKind::Int, distinct.len(), label.into());
                for &k in &distinct {
                    f.insert_hash(mix(k as u64));
                }
                f.keys = distinct.len();
                f
            }
        };
        f.int_span = int_span;
        f
    }

    /// Whether the filter is exact: it passes only the keys themselves (integer keys close
    /// together), never a false positive.
    pub fn is_exact(&self) -> bool {
        self.exact.is_some()
    }

    /// A filter over byte-string keys (UTF-8 or binary).
    pub fn from_bytes<'a>(
        keys: impl ExactSizeIterator<Item = &'a [u8]>,
        label: impl Into<String>,
    ) -> KeyFilter {
        let n = keys.len();
        let mut f = KeyFilter::sized(KeyKind::Bytes, n, label.into());
        for k in keys {
            f.insert_hash(mix(hash_bytes(k)));
        }
        f.keys = n;
        f
    }

    /// Never switches off (tests, and callers that measured already).
    pub fn without_adapting(mut self) -> KeyFilter {
        self.adaptive = false;
        self
    }

    fn insert_hash(&mut self, h: u64) {
        let (block, mask) = key_probe::place(h, self.blocks.len());
        self.blocks[block] |= mask;
    }

    #[inline(always)]
    fn test_hash(&self, h: u64) -> bool {
        key_probe::test(&self.blocks, h)
    }

    /// Whether integer key `k` may be among the keys (always for a byte-string filter).
    #[inline]
    pub fn may_contain_int(&self, k: i64) -> bool {
        if self.kind != KeyKind::Int {
            return true;
        }
        match &self.exact {
            Some(span) => span.contains(k),
            None => self.test_hash(mix(k as u64)),
        }
    }

    /// Whether byte-string key `k` may be among the keys (always for an integer filter).
    #[inline]
    pub fn may_contain_bytes(&self, k: &[u8]) -> bool {
        self.kind != KeyKind::Bytes || self.test_hash(mix(hash_bytes(k)))
    }

    /// Up to 64 integer keys at once: bit `j` set iff `keys[j]` may be among the keys (all set
    /// for a byte-string filter). Eight keys per step where the CPU has AVX-512
    /// ([`key_probe`]).
    #[inline]
    pub fn may_contain_ints(&self, keys: &[i64]) -> u64 {
        if self.kind != KeyKind::Int {
            return u64::MAX.checked_shr(64 - keys.len() as u32).unwrap_or(0);
        }
        match &self.exact {
            Some(s) => key_probe::probe_span(key_probe::wide(), s.lo, s.len, &s.bits, keys),
            None => key_probe::probe(key_probe::wide(), &self.blocks, keys),
        }
    }

    pub(crate) fn kind(&self) -> KeyKind {
        self.kind
    }

    /// How many keys were inserted.
    pub fn keys(&self) -> usize {
        self.keys
    }

    /// The smallest and largest key of an integer filter (`None` for byte strings or no
    /// keys): with the key count, how densely the keys fill their range.
    pub fn int_span(&self) -> Option<(i64, i64)> {
        self.int_span
    }

    /// The filter's size in bytes.
    pub fn size_bytes(&self) -> usize {
        (self.blocks.len() + self.exact.as_ref().map_or(0, |s| s.bits.len())) * 8
    }

    /// What `explain` calls it (e.g. the join's build-side column).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Whether scans should still probe it (false once it was switched off).
    #[inline]
    pub fn active(&self) -> bool {
        !self.off.load(Ordering::Relaxed)
    }

    /// Records that a scan probed `probed` values and `passed` of them passed; switches the
    /// filter off once it has seen `ADAPT_MIN_PROBES` values and passed more than
    /// `ADAPT_MAX_PASS` of them.
    pub fn observe(&self, probed: u64, passed: u64) {
        let p = self.probed.fetch_add(probed, Ordering::Relaxed) + probed;
        let k = self.passed.fetch_add(passed, Ordering::Relaxed) + passed;
        if self.adaptive && p >= ADAPT_MIN_PROBES && k as f64 > ADAPT_MAX_PASS * p as f64 {
            self.off.store(true, Ordering::Relaxed);
        }
    }

    /// Values probed and passed so far, over every scan using this filter.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.probed.load(Ordering::Relaxed),
            self.passed.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_filters_know_their_keys_span() {
        assert_eq!(
            KeyFilter::from_ints(&[7, -3, 12], "k").int_span(),
            Some((-3, 12))
        );
        assert_eq!(KeyFilter::from_ints(&[], "k").int_span(), None);
        let strings = KeyFilter::from_bytes([&b"a"[..]].into_iter(), "s");
        assert_eq!(strings.int_span(), None);
    }

    #[test]
    fn inserted_keys_always_pass() {
        for n in [0usize, 1, 2, 63, 64, 65, 1000, 100_000] {
            let keys: Vec<i64> = (0..n as i64).map(|i| i * 7919 - 50_000).collect();
            let f = KeyFilter::from_ints(&keys, "k");
            assert!(keys.iter().all(|&k| f.may_contain_int(k)), "n={n}");
            let strings: Vec<String> = keys.iter().map(|k| format!("key-{k}")).collect();
            let g = KeyFilter::from_bytes(strings.iter().map(|s| s.as_bytes()), "s");
            assert!(strings.iter().all(|s| g.may_contain_bytes(s.as_bytes())));
        }
        // Edge keys and the empty string.
        let f = KeyFilter::from_ints(&[i64::MIN, -1, 0, i64::MAX], "k");
        assert!([i64::MIN, -1, 0, i64::MAX]
            .iter()
            .all(|&k| f.may_contain_int(k)));
        let g = KeyFilter::from_bytes([&b""[..]].into_iter(), "s");
        assert!(g.may_contain_bytes(b""));
    }

    #[test]
    fn false_positive_rate_is_about_one_percent() {
        // Dense keys (the thesis's setting), strided keys (structure in the low bits) and
        // strings.
        for stride in [1i64, 2, 1024] {
            let keys: Vec<i64> = (0..20_000).map(|i| i * stride).collect();
            let f = KeyFilter::from_ints(&keys, "k");
            let absent = (0..200_000i64).map(|i| -1 - i * stride);
            let fp = absent.filter(|&k| f.may_contain_int(k)).count();
            let rate = fp as f64 / 200_000.0;
            assert!(rate < 0.02, "stride {stride}: {rate}");
        }
        let keys: Vec<String> = (0..20_000).map(|i| format!("Brand#{i}")).collect();
        let f = KeyFilter::from_bytes(keys.iter().map(|s| s.as_bytes()), "s");
        let fp = (0..200_000)
            .filter(|i| f.may_contain_bytes(format!("Other#{i}").as_bytes()))
            .count();
        assert!((fp as f64 / 200_000.0) < 0.02);
    }

    #[test]
    fn keys_close_together_are_kept_exactly() {
        // TPC-H Q17's shape: a few hundred keys over 200 000 values.
        let keys: Vec<i64> = (0..204).map(|i| 2_409 + i * 967).collect();
        let f = KeyFilter::from_ints(&keys, "k");
        assert!(f.is_exact());
        let all: Vec<i64> = (-1_000..200_000).collect();
        for chunk in all.chunks(64) {
            let want = chunk
                .iter()
                .enumerate()
                .fold(0u64, |w, (j, k)| w | ((keys.contains(k) as u64) << j));
            assert_eq!(f.may_contain_ints(chunk), want);
            for (j, &k) in chunk.iter().enumerate() {
                assert_eq!(f.may_contain_int(k), want >> j & 1 == 1, "{k}");
            }
        }
        // At the ends of i64, and a span just over the limit (a Bloom filter then).
        let ends = KeyFilter::from_ints(&[i64::MAX, i64::MAX - 70], "k");
        assert!(ends.is_exact());
        assert!(ends.may_contain_int(i64::MAX) && !ends.may_contain_int(i64::MAX - 1));
        assert!(!ends.may_contain_int(i64::MIN));
        let far = KeyFilter::from_ints(&[0, SPAN_BITS as i64], "k");
        assert!(!far.is_exact());
        assert!(far.may_contain_int(0) && far.may_contain_int(SPAN_BITS as i64));
        // Many keys may span 64 values each, past `SPAN_BITS`.
        let many: Vec<i64> = (0..40_000).map(|i| i * 64).collect();
        assert!(KeyFilter::from_ints(&many, "k").is_exact());
        let sparse: Vec<i64> = (0..40_000).map(|i| i * 65).collect();
        assert!(!KeyFilter::from_ints(&sparse, "k").is_exact());
        assert!(!KeyFilter::from_ints(&[i64::MIN, i64::MAX], "k").is_exact());
    }

    #[test]
    fn repeated_keys_count_once() {
        // Close together (a bitmap) and far apart (a Bloom filter), shuffled, each key thrice.
        for stride in [3i64, 1 << 30] {
            let keys: Vec<i64> = (0..1000i64)
                .map(|i| ((i * 7919) % 1000) * stride)
                .flat_map(|k| [k, k, k])
                .collect();
            let f = KeyFilter::from_ints(&keys, "k");
            assert_eq!(f.keys(), 1000, "stride {stride}");
            assert_eq!(f.is_exact(), stride == 3);
            assert!(keys.iter().all(|&k| f.may_contain_int(k)));
            assert_eq!(f.int_span(), Some((0, 999 * stride)));
        }
    }

    #[test]
    fn empty_filter_passes_nothing_and_wrong_kind_passes_everything() {
        let f = KeyFilter::from_ints(&[], "k");
        assert!((0..1000).all(|k| !f.may_contain_int(k)));
        assert!(f.may_contain_bytes(b"x"));
    }

    #[test]
    fn switches_off_when_most_values_pass() {
        let f = KeyFilter::from_ints(&[1, 2, 3], "k");
        f.observe(ADAPT_MIN_PROBES - 1, ADAPT_MIN_PROBES - 1);
        assert!(f.active(), "too few probes to decide");
        f.observe(1, 1);
        assert!(!f.active());
        let g = KeyFilter::from_ints(&[1, 2, 3], "k");
        g.observe(10 * ADAPT_MIN_PROBES, ADAPT_MIN_PROBES);
        assert!(g.active(), "keeps 10%: worth probing");
        let h = KeyFilter::from_ints(&[1], "k").without_adapting();
        h.observe(10 * ADAPT_MIN_PROBES, 10 * ADAPT_MIN_PROBES);
        assert!(h.active());
    }
}
