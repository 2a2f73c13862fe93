//! `Bitmap`: the selection of rows within a row group that every filter refines.
//!
//! Bit `i` of word `i / 64` is row `i` (least significant bit first), the layout the bit-parallel
//! kernels work on. Bits past `len` are always zero, so popcounts and word-wise operations need no
//! masking.

use std::ops::Range;

#[derive(Clone, PartialEq, Eq)]
pub struct Bitmap {
    words: Vec<u64>,
    len: usize,
}

impl std::fmt::Debug for Bitmap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bitmap(len={}, ones={})", self.len, self.count_ones())
    }
}

impl Bitmap {
    pub fn new_zeroed(len: usize) -> Self {
        Bitmap {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }

    pub fn new_set(len: usize) -> Self {
        let mut b = Bitmap {
            words: vec![u64::MAX; len.div_ceil(64)],
            len,
        };
        b.clear_tail();
        b
    }

    /// A bitmap with the given row ranges set.
    pub fn from_ranges(len: usize, ranges: &[Range<usize>]) -> Self {
        let mut b = Self::new_zeroed(len);
        for r in ranges {
            b.set_range(r.start, r.end.min(len));
        }
        b
    }

    /// A bitmap over `len` rows from its words (bit `i` of word `i / 64` is row `i`); bits past
    /// `len` are cleared.
    pub fn from_words(words: Vec<u64>, len: usize) -> Self {
        assert_eq!(
            words.len(),
            len.div_ceil(64),
            "Bitmap::from_words: {len} rows"
        );
        let mut b = Bitmap { words, len };
        b.clear_tail();
        b
    }

    pub fn from_bools(bools: &[bool]) -> Self {
        let mut b = Self::new_zeroed(bools.len());
        for (i, &v) in bools.iter().enumerate() {
            if v {
                b.set(i);
            }
        }
        b
    }

    fn clear_tail(&mut self) {
        let rem = self.len % 64;
        if rem != 0 {
            if let Some(last) = self.words.last_mut() {
                *last &= (1u64 << rem) - 1;
            }
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    #[inline]
    pub fn get(&self, i: usize) -> bool {
        debug_assert!(i < self.len);
        self.words[i >> 6] >> (i & 63) & 1 == 1
    }
    #[inline]
    pub fn set(&mut self, i: usize) {
        debug_assert!(i < self.len);
        self.words[i >> 6] |= 1 << (i & 63);
    }
    #[inline]
    pub fn unset(&mut self, i: usize) {
        debug_assert!(i < self.len);
        self.words[i >> 6] &= !(1 << (i & 63));
    }

    /// Sets bits `start..end`.
    pub fn set_range(&mut self, start: usize, end: usize) {
        self.fill_range(start, end, true);
    }

    /// Clears bits `start..end`.
    pub fn clear_range(&mut self, start: usize, end: usize) {
        self.fill_range(start, end, false);
    }

    /// Sets or clears bits `start..end` (`end` capped at `len`): masked first and last words,
    /// whole words between.
    fn fill_range(&mut self, start: usize, end: usize, set: bool) {
        let end = end.min(self.len);
        if start >= end {
            return;
        }
        let (first, last) = (start / 64, (end - 1) / 64);
        let lo = u64::MAX << (start % 64);
        let hi = u64::MAX >> (63 - (end - 1) % 64);
        let apply = |w: &mut u64, mask: u64| {
            if set {
                *w |= mask
            } else {
                *w &= !mask
            }
        };
        if first == last {
            apply(&mut self.words[first], lo & hi);
            return;
        }
        apply(&mut self.words[first], lo);
        self.words[first + 1..last].fill(if set { u64::MAX } else { 0 });
        apply(&mut self.words[last], hi);
    }

    /// ORs the bits of `word` into `self` at bits `offset..offset + 64` (bits that would land
    /// past `len` must be zero in `word`).
    #[inline]
    pub fn or_word_at(&mut self, offset: usize, word: u64) {
        if word == 0 {
            return;
        }
        let (base, shift) = (offset / 64, offset % 64);
        self.words[base] |= word << shift;
        if shift > 0 {
            if let Some(next) = self.words.get_mut(base + 1) {
                *next |= word >> (64 - shift);
            }
        }
    }

    /// ORs bits `offset..offset + self.len()` of `src` into `self` (a window of a larger bitmap).
    pub fn or_range_from(&mut self, src: &Bitmap, offset: usize) {
        assert!(offset + self.len <= src.len, "or_range_from out of range");
        let (base, shift) = (offset / 64, offset % 64);
        let n = self.words.len();
        for i in 0..n {
            let lo = src.words[base + i] >> shift;
            let hi = if shift > 0 {
                src.words.get(base + i + 1).map_or(0, |w| w << (64 - shift))
            } else {
                0
            };
            self.words[i] |= lo | hi;
        }
        self.clear_tail();
    }

    /// ORs `src` into `self` starting at bit `offset`, a word at a time.
    pub fn or_at(&mut self, src: &Bitmap, offset: usize) {
        assert!(offset + src.len <= self.len, "or_at out of range");
        let shift = offset % 64;
        let base = offset / 64;
        for (i, &w) in src.words.iter().enumerate() {
            if w == 0 {
                continue;
            }
            self.words[base + i] |= w << shift;
            if shift > 0 {
                if let Some(next) = self.words.get_mut(base + i + 1) {
                    *next |= w >> (64 - shift);
                }
            }
        }
    }

    pub fn count_ones(&self) -> usize {
        crate::kernels::popcount::count(&self.words)
    }

    /// The words holding bits `start..end` (the end clamped to the bitmap): the first and last
    /// word's indexes and the masks of their bits in the range; `None` for an empty range.
    fn word_span(&self, start: usize, end: usize) -> Option<(usize, usize, u64, u64)> {
        let end = end.min(self.len);
        if start >= end {
            return None;
        }
        let lo = u64::MAX << (start % 64);
        let hi = u64::MAX >> (63 - (end - 1) % 64);
        Some((start / 64, (end - 1) / 64, lo, hi))
    }

    /// Number of set bits in `start..end`, a word at a time.
    pub fn count_range(&self, start: usize, end: usize) -> usize {
        let Some((first, last, lo, hi)) = self.word_span(start, end) else {
            return 0;
        };
        if first == last {
            return (self.words[first] & lo & hi).count_ones() as usize;
        }
        let middle = crate::kernels::popcount::count(&self.words[first + 1..last]);
        (self.words[first] & lo).count_ones() as usize
            + middle
            + (self.words[last] & hi).count_ones() as usize
    }

    /// Flips every bit.
    pub fn not_inplace(&mut self) {
        self.words.iter_mut().for_each(|w| *w = !*w);
        self.clear_tail();
    }

    /// Whether every bit is set.
    pub fn all_set(&self) -> bool {
        self.count_ones() == self.len
    }

    /// Bits `start..start + len` as a bitmap of their own.
    pub fn window(&self, start: usize, len: usize) -> Bitmap {
        let mut b = Bitmap::new_zeroed(len);
        b.or_range_from(self, start);
        b
    }

    /// Bits `start..start + len` as words (bit 0 of the first word is bit `start`), written to
    /// the reused buffer `out`; the kernels take selections in this form.
    pub fn window_words(&self, start: usize, len: usize, out: &mut Vec<u64>) {
        assert!(start + len <= self.len, "window_words out of range");
        out.clear();
        let (base, shift) = (start / 64, start % 64);
        let n = len.div_ceil(64);
        out.extend((0..n).map(|i| {
            let lo = self.words[base + i] >> shift;
            let hi = if shift > 0 {
                self.words
                    .get(base + i + 1)
                    .map_or(0, |w| w << (64 - shift))
            } else {
                0
            };
            lo | hi
        }));
        let rem = len % 64;
        if rem != 0 {
            if let Some(last) = out.last_mut() {
                *last &= (1u64 << rem) - 1;
            }
        }
    }

    /// The bits of `self` at the set positions of `mask` (same length), packed contiguously:
    /// PEXT (paper §5.4.2). Turns a row selection into a selection over a page's non-null
    /// values when `mask` is the page's validity.
    pub fn compress(&self, mask: &Bitmap) -> Bitmap {
        debug_assert_eq!(self.len, mask.len);
        let mut out = Vec::with_capacity(mask.count_ones().div_ceil(64));
        let n = (crate::kernels::kernels().compress)(&self.words, &mask.words, self.len, &mut out);
        out.resize(n.div_ceil(64), 0);
        Bitmap::from_words(out, n)
    }

    /// `self` (one bit per set bit of `select`) deposited onto the set positions of `select`:
    /// PDEP (paper §4.3, transform). The inverse of [`Bitmap::compress`].
    pub fn transform(&self, select: &Bitmap) -> Bitmap {
        debug_assert!(self.len >= select.count_ones());
        let mut out = vec![0u64; select.words.len()];
        (crate::kernels::kernels().transform)(&self.words, &select.words, &mut out);
        Bitmap::from_words(out, select.len)
    }
}

/// Builds a bitmap by appending bits, a word or a run at a time (results over selected values).
#[derive(Debug, Default)]
pub struct BitBuilder {
    words: Vec<u64>,
    len: usize,
}

impl BitBuilder {
    pub fn with_capacity(bits: usize) -> Self {
        BitBuilder {
            words: Vec::with_capacity(bits.div_ceil(64)),
            len: 0,
        }
    }

    /// Appends the low `n` (≤ 64) bits of `word` (higher bits must be zero).
    #[inline]
    pub fn push_bits(&mut self, word: u64, n: usize) {
        debug_assert!(n <= 64 && (n == 64 || word >> n == 0));
        if n == 0 {
            return;
        }
        let shift = self.len % 64;
        if shift == 0 {
            self.words.push(word);
        } else {
            *self.words.last_mut().expect("partial word") |= word << shift;
            if shift + n > 64 {
                self.words.push(word >> (64 - shift));
            }
        }
        self.len += n;
    }

    /// Appends `n` copies of `bit`.
    pub fn push_run(&mut self, bit: bool, mut n: usize) {
        let fill = if bit { u64::MAX } else { 0 };
        while n > 0 {
            let take = n.min(64);
            let word = if take == 64 {
                fill
            } else {
                fill & ((1u64 << take) - 1)
            };
            self.push_bits(word, take);
            n -= take;
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn finish(self) -> Bitmap {
        Bitmap::from_words(self.words, self.len)
    }
}

impl Bitmap {
    /// Whether a bit in `start..end` is set: a word at a time, the two end words masked (a
    /// dense page's unselected rows used to be walked one bit at a time).
    pub fn any_in(&self, start: usize, end: usize) -> bool {
        let Some((first, last, lo, hi)) = self.word_span(start, end) else {
            return false;
        };
        if first == last {
            return self.words[first] & lo & hi != 0;
        }
        self.words[first] & lo != 0
            || self.words[first + 1..last].iter().any(|&w| w != 0)
            || self.words[last] & hi != 0
    }

    pub fn and_inplace(&mut self, other: &Bitmap) {
        debug_assert_eq!(self.len, other.len);
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= b;
        }
    }
    pub fn or_inplace(&mut self, other: &Bitmap) {
        debug_assert_eq!(self.len, other.len);
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }
    /// `self &= !other`
    pub fn and_not_inplace(&mut self, other: &Bitmap) {
        debug_assert_eq!(self.len, other.len);
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= !b;
        }
    }

    /// Indices of set bits, ascending.
    pub fn iter_ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    None
                } else {
                    let t = w.trailing_zeros() as usize;
                    w &= w - 1;
                    Some(wi * 64 + t)
                }
            })
        })
    }

    /// Maximal runs of set bits as ranges, ascending: each run's start and end found by
    /// skipping whole words (a tight loop over the empty words of a sparse bitmap, and over
    /// the full words of a dense one).
    pub fn ranges(&self) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        let mut from = 0;
        while let Some(start) = self.next_with(from, false) {
            let end = self.next_with(start, true).unwrap_or(self.len);
            out.push(start..end);
            from = end;
        }
        out
    }

    /// The first bit at or after `from` that is set (`clear` false) or clear (`clear` true),
    /// below `len`.
    fn next_with(&self, from: usize, clear: bool) -> Option<usize> {
        if from >= self.len {
            return None;
        }
        let flip = if clear { u64::MAX } else { 0 };
        let mut wi = from / 64;
        let mut w = (self.words[wi] ^ flip) & (u64::MAX << (from % 64));
        while w == 0 {
            wi += 1;
            w = self.words.get(wi)? ^ flip;
        }
        let at = wi * 64 + w.trailing_zeros() as usize;
        (at < self.len).then_some(at)
    }

    /// Number of maximal runs of set bits (rising edges), a popcount per word.
    pub fn run_count(&self) -> usize {
        let mut carry = 0u64;
        let mut runs = 0usize;
        for &w in &self.words {
            runs += (w & !((w << 1) | carry)).count_ones() as usize;
            carry = w >> 63;
        }
        runs
    }
}

/// Selected rows of a row group in the representation their density calls for: a bitmap (one
/// bit per row) when dense, sorted disjoint row ranges (16 bytes each) when sparse — a point
/// lookup on a sorted column is one range however large the row group. Page planning and page
/// windows read either form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    Bitmap(Bitmap),
    Ranges {
        len: usize,
        ranges: Vec<Range<usize>>,
    },
    /// Only rows `start..start + rows.len()` may be selected, as the bits of `rows`: one range
    /// of a row group ([`Selection::within`]), whose pages outside it cost nothing to skip.
    Window {
        len: usize,
        start: usize,
        rows: Bitmap,
    },
}

impl Selection {
    /// Ranges when they take less memory than the bitmap (16 bytes a run vs `len` / 8 bytes).
    pub fn from_bitmap(bitmap: Bitmap) -> Selection {
        if bitmap.run_count() * 128 < bitmap.len() {
            Selection::Ranges {
                len: bitmap.len(),
                ranges: bitmap.ranges(),
            }
        } else {
            Selection::Bitmap(bitmap)
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Selection::Bitmap(b) => b.len(),
            Selection::Ranges { len, .. } | Selection::Window { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn count_ones(&self) -> usize {
        match self {
            Selection::Bitmap(b) => b.count_ones(),
            Selection::Ranges { ranges, .. } => ranges.iter().map(|r| r.len()).sum(),
            Selection::Window { rows, .. } => rows.count_ones(),
        }
    }

    pub fn to_bitmap(&self) -> Bitmap {
        match self {
            Selection::Bitmap(b) => b.clone(),
            Selection::Ranges { len, ranges } => Bitmap::from_ranges(*len, ranges),
            Selection::Window { len, start, rows } => {
                let mut out = Bitmap::new_zeroed(*len);
                out.or_at(rows, *start);
                out
            }
        }
    }

    /// Whether any row in `start..end` is selected (ranges: a binary search).
    pub fn any_in(&self, start: usize, end: usize) -> bool {
        match self {
            Selection::Bitmap(b) => b.any_in(start, end),
            Selection::Ranges { ranges, .. } => {
                let i = ranges.partition_point(|r| r.end <= start);
                start < end && ranges.get(i).is_some_and(|r| r.start < end)
            }
            Selection::Window {
                start: at, rows, ..
            } => {
                let (s, e) = (start.max(*at), end.min(at + rows.len()));
                s < e && rows.any_in(s - at, e - at)
            }
        }
    }

    /// The selected rows in `start..end` only (the same length, nothing selected outside).
    pub fn within(&self, start: usize, end: usize) -> Selection {
        let (len, end) = (self.len(), end.min(self.len()));
        let start = start.min(end);
        match self {
            Selection::Bitmap(_) | Selection::Window { .. } => Selection::Window {
                len,
                start,
                rows: self.window(start, end - start),
            },
            Selection::Ranges { ranges, .. } => {
                let first = ranges.partition_point(|r| r.end <= start);
                let ranges = ranges[first..]
                    .iter()
                    .take_while(|r| r.start < end)
                    .map(|r| r.start.max(start)..r.end.min(end))
                    .filter(|r| !r.is_empty())
                    .collect();
                Selection::Ranges { len, ranges }
            }
        }
    }

    /// Rows `start..start + len` as a bitmap of `len` bits (a page's selected rows).
    pub fn window(&self, start: usize, len: usize) -> Bitmap {
        match self {
            Selection::Bitmap(b) => b.window(start, len),
            Selection::Ranges { ranges, .. } => {
                let end = start + len;
                let mut out = Bitmap::new_zeroed(len);
                let first = ranges.partition_point(|r| r.end <= start);
                for r in ranges[first..].iter().take_while(|r| r.start < end) {
                    out.set_range(r.start.max(start) - start, r.end.min(end) - start);
                }
                out
            }
            Selection::Window {
                start: at, rows, ..
            } => {
                let mut out = Bitmap::new_zeroed(len);
                let (s, e) = (start.max(*at), (start + len).min(at + rows.len()));
                if s < e {
                    out.or_at(&rows.window(s - at, e - s), s - start);
                }
                out
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;

    #[test]
    fn within_keeps_only_the_rows_of_a_range() {
        for len in [0usize, 1, 63, 64, 65, 130, 1000] {
            let ranges: Vec<Range<usize>> = vec![0..len.min(3), len / 2..len / 2 + len / 4];
            let bitmap = Bitmap::from_ranges(len, &ranges);
            for sel in [
                Selection::Bitmap(bitmap.clone()),
                Selection::Ranges {
                    len,
                    ranges: bitmap.ranges(),
                },
            ] {
                for (s, e) in [
                    (0, len),
                    (1, len / 2 + 1),
                    (len / 3, len / 3),
                    (len, len + 5),
                ] {
                    let got = sel.within(s, e);
                    let want: Vec<bool> =
                        (0..len).map(|i| bitmap.get(i) && s <= i && i < e).collect();
                    assert_eq!(got.len(), len);
                    assert_eq!(got.to_bitmap(), Bitmap::from_bools(&want), "{len} {s}..{e}");
                    assert_eq!(got.count_ones(), want.iter().filter(|&&v| v).count());
                    // Windows and probes inside, across and outside the range.
                    for (a, b) in [(0, len), (0, s), (s.saturating_sub(3), e + 2), (e, len)] {
                        let b = b.min(len);
                        let a = a.min(b);
                        assert_eq!(got.any_in(a, b), (a..b).any(|i| want[i]), "{a}..{b}");
                        let w = got.window(a, b - a);
                        assert_eq!(w, Bitmap::from_bools(&want[a..b]), "window {a}..{b}");
                    }
                    // A range of a range.
                    let inner = got.within(s + 1, e);
                    let want: Vec<bool> = (0..len).map(|i| want[i] && i > s).collect();
                    assert_eq!(inner.to_bitmap(), Bitmap::from_bools(&want));
                }
            }
        }
    }

    #[test]
    fn ranges_roundtrip_and_counts() {
        for len in [0usize, 1, 63, 64, 65, 130, 1000] {
            let ranges: Vec<Range<usize>> = vec![0..len.min(3), len / 2..len / 2 + len / 4];
            let b = Bitmap::from_ranges(len, &ranges);
            let expect: Vec<bool> = (0..len)
                .map(|i| ranges.iter().any(|r| r.contains(&i)))
                .collect();
            let got: Vec<bool> = (0..len).map(|i| b.get(i)).collect();
            assert_eq!(got, expect, "len {len}");
            assert_eq!(b.count_ones(), expect.iter().filter(|&&v| v).count());
            assert_eq!(Bitmap::from_ranges(len, &b.ranges()), b);
            assert_eq!(Bitmap::new_set(len).count_ones(), len);
            let ones: Vec<usize> = b.iter_ones().collect();
            let exp_ones: Vec<usize> = (0..len).filter(|&i| expect[i]).collect();
            assert_eq!(ones, exp_ones);
            for s in [0, len / 3, len.saturating_sub(1)] {
                for e in [s, len / 2, len] {
                    if e >= s {
                        assert_eq!(b.any_in(s, e), (s..e).any(|i| expect[i]));
                        assert_eq!(b.count_range(s, e), (s..e).filter(|&i| expect[i]).count());
                    }
                }
            }
        }
    }

    proptest::proptest! {
        /// `any_in` and `count_range` against a bit-by-bit walk, for every start and end in
        /// bitmaps across word boundaries (empty, sparse, dense, all-set).
        #[test]
        fn any_in_and_count_range_match_a_walk(
            bits in proptest::collection::vec(proptest::bool::weighted(0.5), 0..200),
            density in 0usize..4,
        ) {
            let bits: Vec<bool> = bits
                .iter()
                .enumerate()
                .map(|(i, &b)| match density {
                    0 => false,
                    1 => b && i % 17 == 0,
                    2 => b,
                    _ => true,
                })
                .collect();
            let b = Bitmap::from_bools(&bits);
            for s in 0..=bits.len() {
                for e in s..=bits.len() + 1 {
                    let walk = &bits[s..e.min(bits.len())];
                    proptest::prop_assert_eq!(b.any_in(s, e), walk.iter().any(|&v| v));
                    proptest::prop_assert_eq!(b.count_range(s, e), walk.iter().filter(|&&v| v).count());
                }
            }
        }
    }

    /// Maximal runs, one bit at a time: the oracle for `ranges` and `run_count`.
    fn runs_reference(bits: &[bool]) -> Vec<Range<usize>> {
        let mut out: Vec<Range<usize>> = Vec::new();
        for (i, &b) in bits.iter().enumerate() {
            match out.last_mut() {
                Some(r) if b && r.end == i => r.end = i + 1,
                _ if b => out.push(i..i + 1),
                _ => {}
            }
        }
        out
    }

    proptest::proptest! {
        /// Runs of random lengths (so some start, end or fill whole words), as ranges.
        #[test]
        fn ranges_are_the_maximal_runs(
            runs in proptest::collection::vec((0usize..200, proptest::bool::ANY), 0..20),
            pad in 0usize..130,
        ) {
            let mut bits = Vec::new();
            for (n, b) in runs {
                bits.extend(std::iter::repeat_n(b, n));
            }
            bits.extend(std::iter::repeat_n(false, pad % 2 * (pad / 2)));
            let b = Bitmap::from_bools(&bits);
            let want = runs_reference(&bits);
            proptest::prop_assert_eq!(b.run_count(), want.len());
            proptest::prop_assert_eq!(b.ranges(), want);
        }
    }

    proptest::proptest! {
        /// `set_range` and `clear_range` against one bit at a time, ranges inside, across and
        /// past word edges and the end.
        #[test]
        fn set_and_clear_ranges_match_bits(
            len in 0usize..300,
            ops in proptest::collection::vec((0usize..320, 0usize..320, proptest::bool::ANY), 0..8),
        ) {
            let mut b = Bitmap::new_zeroed(len);
            let mut want = vec![false; len];
            for (s, e, set) in ops {
                if set { b.set_range(s, e) } else { b.clear_range(s, e) }
                for bit in want.iter_mut().take(e.min(len)).skip(s) {
                    *bit = set;
                }
            }
            proptest::prop_assert_eq!(b, Bitmap::from_bools(&want));
        }
    }

    #[test]
    fn ranges_at_word_edges() {
        for len in [1usize, 63, 64, 65, 128, 129] {
            for (s, e) in [(0, len), (0, 1), (len - 1, len), (len / 2, len)] {
                let b = Bitmap::from_ranges(len, &[s..e]);
                assert_eq!(b.ranges(), vec![s..e], "len {len} {s}..{e}");
            }
            assert!(Bitmap::new_zeroed(len).ranges().is_empty());
        }
    }

    #[test]
    fn or_at_matches_bitwise_reference() {
        for len in [0usize, 1, 63, 64, 65, 200] {
            for offset in [0usize, 1, 31, 63, 64, 65, 130] {
                let src = Bitmap::from_bools(&(0..len).map(|i| i % 3 != 1).collect::<Vec<_>>());
                let mut dst = Bitmap::from_ranges(offset + len + 70, &[0..2]);
                let mut expect = dst.clone();
                for i in src.iter_ones() {
                    expect.set(offset + i);
                }
                dst.or_at(&src, offset);
                assert_eq!(dst, expect, "len {len} offset {offset}");
            }
        }
    }

    #[test]
    fn or_range_from_matches_reference() {
        let src = Bitmap::from_bools(&(0..300).map(|i| i % 7 < 3).collect::<Vec<_>>());
        for offset in [0usize, 1, 63, 64, 100, 236] {
            for len in [0usize, 1, 64, 300 - offset] {
                if offset + len > 300 {
                    continue;
                }
                let mut w = Bitmap::new_zeroed(len);
                w.or_range_from(&src, offset);
                let expect: Vec<bool> = (0..len).map(|i| src.get(offset + i)).collect();
                assert_eq!(w, Bitmap::from_bools(&expect), "offset {offset} len {len}");
            }
        }
    }

    #[test]
    fn window_compress_transform_builder_match_references() {
        for len in [0usize, 1, 63, 64, 65, 200, 700] {
            let a = Bitmap::from_bools(
                &(0..len)
                    .map(|i| i % 5 < 2 || i % 64 == 63)
                    .collect::<Vec<_>>(),
            );
            let m =
                Bitmap::from_bools(&(0..len).map(|i| i % 3 != 0 || i == 64).collect::<Vec<_>>());
            // compress: a's bits where m is set
            let expect: Vec<bool> = (0..len).filter(|&i| m.get(i)).map(|i| a.get(i)).collect();
            let c = a.compress(&m);
            assert_eq!(c, Bitmap::from_bools(&expect), "len {len}");
            // transform is compress's inverse on the selected positions
            let mut back = a.clone();
            back.and_inplace(&m);
            assert_eq!(c.transform(&m), back, "len {len}");
            assert!(a.all_set() == (a.count_ones() == len));
            for start in [0usize, 1, 63, 64, len / 2] {
                for n in [0usize, 1, 64, 65, len.saturating_sub(start)] {
                    if start + n > len {
                        continue;
                    }
                    let expect: Vec<bool> = (start..start + n).map(|i| a.get(i)).collect();
                    assert_eq!(a.window(start, n), Bitmap::from_bools(&expect));
                    let mut words = Vec::new();
                    a.window_words(start, n, &mut words);
                    assert_eq!(Bitmap::from_words(words, n), Bitmap::from_bools(&expect));
                }
            }
            let mut b = BitBuilder::default();
            let mut expect = Vec::new();
            for (i, n) in [3usize, 64, 0, 1, 70, 5, 129].iter().enumerate() {
                if i % 2 == 0 {
                    b.push_run(i % 4 == 0, *n);
                    expect.extend(std::iter::repeat_n(i % 4 == 0, *n));
                } else {
                    let n = (*n).min(64);
                    let w = if n == 64 {
                        0xdead_beef_0123_4567
                    } else {
                        0x5555_5555_5555_5555 & ((1u64 << n) - 1)
                    };
                    b.push_bits(w, n);
                    expect.extend((0..n).map(|j| w >> j & 1 == 1));
                }
            }
            assert_eq!(b.len(), expect.len());
            assert_eq!(b.finish(), Bitmap::from_bools(&expect));
        }
    }

    #[test]
    fn boolean_ops() {
        let a = Bitmap::from_ranges(200, &[10..150]);
        let b = Bitmap::from_ranges(200, &[100..190]);
        let mut x = a.clone();
        x.and_inplace(&b);
        assert_eq!(x.ranges(), vec![100..150]);
        let mut y = a.clone();
        y.or_inplace(&b);
        assert_eq!(y.ranges(), vec![10..190]);
        let mut z = a.clone();
        z.and_not_inplace(&b);
        assert_eq!(z.ranges(), vec![10..100]);
        let mut c = Bitmap::new_set(200);
        c.clear_range(5, 195);
        assert_eq!(c.ranges(), vec![0..5, 195..200]);
    }

    /// Ranges, run counts and both selection forms against the bit-at-a-time reference, across
    /// word edges, empty, full and alternating patterns.
    #[test]
    fn selection_forms_agree() {
        let patterns: Vec<Box<dyn Fn(usize) -> bool>> = vec![
            Box::new(|_| false),
            Box::new(|_| true),
            Box::new(|i| i % 2 == 0),
            Box::new(|i| (60..200).contains(&i) || i == 300),
            Box::new(|i| i % 64 == 63 || i % 64 == 0),
            Box::new(|i| i % 1000 < 3),
            Box::new(|i| (i * 2654435761) % 97 < 5),
        ];
        for len in [0usize, 1, 63, 64, 65, 127, 128, 129, 1000, 5000] {
            for p in &patterns {
                let bools: Vec<bool> = (0..len).map(p).collect();
                let b = Bitmap::from_bools(&bools);
                let mut want: Vec<Range<usize>> = Vec::new();
                for (i, &v) in bools.iter().enumerate() {
                    if v {
                        match want.last_mut() {
                            Some(r) if r.end == i => r.end = i + 1,
                            _ => want.push(i..i + 1),
                        }
                    }
                }
                assert_eq!(b.ranges(), want, "len {len}");
                assert_eq!(b.run_count(), want.len(), "len {len}");
                let sel = Selection::from_bitmap(b.clone());
                let sparse = want.len() * 128 < len;
                assert_eq!(matches!(sel, Selection::Ranges { .. }), sparse);
                assert_eq!(sel.to_bitmap(), b);
                assert_eq!(sel.count_ones(), b.count_ones());
                for forced in [
                    Selection::Bitmap(b.clone()),
                    Selection::Ranges {
                        len,
                        ranges: want.clone(),
                    },
                ] {
                    for (s, n) in [
                        (0, len),
                        (0, len / 3),
                        (len / 3, len - len / 3),
                        (len / 2, 0),
                    ] {
                        assert_eq!(
                            forced.window(s, n),
                            b.window(s, n),
                            "len {len} window {s}+{n}"
                        );
                        assert_eq!(forced.any_in(s, s + n), b.any_in(s, s + n));
                    }
                }
            }
        }
    }
}
