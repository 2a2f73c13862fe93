//! Dictionary-encoded data pages (RLE_DICTIONARY / PLAIN_DICTIONARY): one bit-width byte, then
//! dictionary codes in the RLE/bit-packed hybrid.
//!
//! Predicates on dictionary columns are evaluated once per dictionary entry; [`filter_codes`]
//! then maps codes to a row bitmap run by run, so a repeated run costs one lookup however long.

use super::bitpack;
use super::rle::{Runs, Span, SPAN};
use super::{EncodedPage, PageEncoding};
use crate::budget::Budget;
use crate::error::{Error, Result};
use crate::expr::eval::Conjunction;
use crate::selection::{BitBuilder, Bitmap};
use crate::values::Values;

/// Dictionary-encoded pages of a column chunk whose dictionary is `entries`.
pub struct Dictionary<'d> {
    pub entries: &'d Values,
}

impl Dictionary<'_> {
    /// Every code of the page, checked.
    fn codes(&self, page: &EncodedPage<'_>) -> Result<Vec<u32>> {
        let n = page.num_values;
        page.budget
            .reserve_items(n, 4, || format!("{n} dictionary codes"))?;
        let mut codes = Vec::with_capacity(n);
        decode_codes(page.data, n, self.entries.len(), &mut codes)?;
        Ok(codes)
    }
}

impl PageEncoding for Dictionary<'_> {
    fn decode(&self, page: &EncodedPage<'_>) -> Result<Values> {
        gather(self.entries, &self.codes(page)?, page.budget)
    }

    fn selects(&self) -> bool {
        true
    }

    /// The codes against the conjunction's result over the entries. No entry or every entry
    /// matching needs no code, but the codes are still checked against the dictionary (a
    /// corrupt page is an error on every path); one matching entry is the `equal` kernel.
    fn evaluate(&self, page: &EncodedPage<'_>, conj: &Conjunction<'_>) -> Option<Result<Bitmap>> {
        let (data, n, entries) = (page.data, page.num_values, self.entries.len());
        let matches = match conj.on_dictionary(self.entries) {
            Ok(m) => m,
            Err(e) => return Some(Err(e)),
        };
        Some(match matches.count_ones() {
            0 => check_codes(data, n, entries).map(|()| Bitmap::new_zeroed(n)),
            m if m == entries => check_codes(data, n, entries).map(|()| Bitmap::new_set(n)),
            1 => {
                let needle = matches.iter_ones().next().expect("one match") as u32;
                filter_single_code(data, n, entries, needle)
            }
            _ => filter_codes(data, n, entries, matches),
        })
    }

    fn evaluate_selected(
        &self,
        page: &EncodedPage<'_>,
        conj: &Conjunction<'_>,
        selected: &Bitmap,
    ) -> Option<Result<Bitmap>> {
        Some(conj.on_dictionary(self.entries).and_then(|matches| {
            let entries = self.entries.len();
            filter_selected_codes(page.data, page.num_values, entries, matches, selected)
        }))
    }

    fn select(&self, page: &EncodedPage<'_>, selected: &Bitmap) -> Option<Result<Values>> {
        let mut out = self.entries.empty_like();
        Some(self.select_into(page, selected, &mut out)?.map(|()| out))
    }

    fn select_into(
        &self,
        page: &EncodedPage<'_>,
        selected: &Bitmap,
        out: &mut Values,
    ) -> Option<Result<()>> {
        let codes = if selected.all_set() {
            self.codes(page)
        } else {
            let n = selected.count_ones();
            page.budget
                .reserve_items(n, 4, || format!("{n} dictionary codes"))
                .and_then(|()| {
                    let mut codes = Vec::with_capacity(n);
                    let entries = self.entries.len();
                    select_codes(page.data, page.num_values, entries, selected, &mut codes)
                        .map(|()| codes)
                })
        };
        Some(codes.and_then(|codes| gather_into(self.entries, &codes, page.budget, out)))
    }

    fn select_codes_into(
        &self,
        page: &EncodedPage<'_>,
        selected: &Bitmap,
        codes: &mut Vec<u32>,
    ) -> Option<Result<()>> {
        let entries = self.entries.len();
        let before = codes.len();
        let appended = if selected.all_set() {
            decode_codes(page.data, page.num_values, entries, codes)
        } else {
            select_codes(page.data, page.num_values, entries, selected, codes)
        };
        Some(
            appended.and_then(|()| {
                reserve_gather(self.entries, &codes[before..], page.budget).map(drop)
            }),
        )
    }
}

fn out_of_range(code: u32, dict_len: usize) -> Error {
    Error::corrupt(format!(
        "dictionary code {code} out of range for dictionary of {dict_len} entries"
    ))
}

/// The codes of a dictionary-encoded page as spans of the hybrid walk ([`Runs`]), checked
/// against the dictionary's size: the one place a code is compared with it. A repeated run's
/// code is checked when handed out; bit-packed codes are checked as they are unpacked
/// ([`Codes::unpack`], [`Codes::check`]) or, when tested in place, by [`Codes::check_packed`].
struct Codes<'a> {
    runs: Runs<'a>,
    dict_len: usize,
    /// Codes of this bit width cannot reach past the dictionary: nothing to check.
    in_range_by_width: bool,
}

impl<'a> Codes<'a> {
    /// The codes of a page of `num_values` values: a bit-width byte, then the hybrid stream.
    fn new(data: &'a [u8], num_values: usize, dict_len: usize) -> Result<Self> {
        let (bit_width, rest) = match data.split_first() {
            _ if num_values == 0 => (0, &[][..]),
            Some((&bw, rest)) if bw <= 32 => (bw, rest),
            Some((&bw, _)) => {
                return Err(Error::corrupt(format!(
                    "dictionary code bit width {bw} is above 32"
                )))
            }
            None => {
                return Err(Error::corrupt(format!(
                    "dictionary-encoded page for {num_values} values is empty"
                )))
            }
        };
        Ok(Codes {
            runs: Runs::new(rest, bit_width, num_values),
            dict_len,
            in_range_by_width: bit_width < 32 && (1usize << bit_width) <= dict_len,
        })
    }

    fn bit_width(&self) -> u8 {
        self.runs.bit_width()
    }

    /// The next span and its first value's index; a repeated run's code is checked.
    fn next(&mut self) -> Result<Option<(usize, Span<'a>)>> {
        let next = self.runs.next()?;
        if let Some((_, Span::Repeated { value, .. })) = next {
            self.check(&[value])?;
        }
        Ok(next)
    }

    /// Every code below the dictionary's size.
    #[inline]
    fn check(&self, codes: &[u32]) -> Result<()> {
        if self.in_range_by_width {
            return Ok(());
        }
        // One branch-free max, then a precise message only on failure.
        match codes.iter().copied().max() {
            Some(max) if max as usize >= self.dict_len => Err(out_of_range(max, self.dict_len)),
            _ => Ok(()),
        }
    }

    /// Appends a packed span's codes to `out`, checked.
    fn unpack(&self, data: &[u8], count: usize, out: &mut Vec<u32>) -> Result<()> {
        let start = out.len();
        bitpack::unpack(data, self.bit_width(), count, out)?;
        self.check(&out[start..])
    }

    /// Checks a packed span's codes without keeping them (`scratch` is a buffer to unpack into,
    /// used only when the bit width can reach past the dictionary).
    fn check_packed(&self, data: &[u8], count: usize, scratch: &mut Vec<u32>) -> Result<()> {
        if self.in_range_by_width {
            return Ok(());
        }
        scratch.clear();
        self.unpack(data, count, scratch)
    }
}

/// Appends the `num_values` codes of a dictionary-encoded page to `out`, checking each is below
/// `dict_len`.
pub fn decode_codes(
    data: &[u8],
    num_values: usize,
    dict_len: usize,
    out: &mut Vec<u32>,
) -> Result<()> {
    let mut codes = Codes::new(data, num_values, dict_len)?;
    while let Some((_, span)) = codes.next()? {
        match span {
            Span::Repeated { value, count } => out.resize(out.len() + count, value),
            Span::Packed { data, count } => codes.unpack(data, count, out)?,
        }
    }
    Ok(())
}

/// The match bitmap must have a bit per dictionary entry.
fn check_matches(matches: &Bitmap, dict_len: usize) -> Result<()> {
    if matches.len() < dict_len {
        return Err(Error::internal(format!(
            "dictionary match bitmap has {} bits for {dict_len} entries",
            matches.len()
        )));
    }
    Ok(())
}

/// Returns a bitmap of `num_values` bits where bit `i` is `matches[code_i]`.
///
/// `matches` has one bit per dictionary entry (at least `dict_len` bits). Codes are checked
/// against `dict_len`.
pub fn filter_codes(
    data: &[u8],
    num_values: usize,
    dict_len: usize,
    matches: &Bitmap,
) -> Result<Bitmap> {
    check_matches(matches, dict_len)?;
    let mut result = Bitmap::new_zeroed(num_values);
    let mut codes = Codes::new(data, num_values, dict_len)?;
    let mut buf: Vec<u32> = Vec::with_capacity(SPAN.min(num_values));
    let lookup = matches.words();
    // Codes of at most 8 bits are tested packed, 64 at a time, where a kernel does it (AVX-512):
    // against the matches as a byte per entry.
    let bytes = crate::kernels::kernels()
        .lookup
        .filter(|_| (1..=8).contains(&codes.bit_width()))
        .map(|kernel| {
            let mut table = [0u8; 256];
            for (entry, t) in table.iter_mut().enumerate().take(dict_len) {
                *t = u8::from(matches.get(entry));
            }
            (kernel, table)
        });
    // Codes of 9 to 16 bits matching a few entries: compared with each (AVX-512), cheaper than
    // fetching their bits from a bitset.
    let few = few_matches(matches, codes.bit_width());
    // Codes of 9 to 16 bits likewise, against the matches as a bitset over every code of the
    // width (AVX-512 gathers).
    let bits = crate::kernels::kernels()
        .lookup_bits
        .filter(|_| (9..=16).contains(&codes.bit_width()) && bytes.is_none() && few.is_none())
        .map(|kernel| (kernel, wide_bitset(lookup, codes.bit_width())));
    let mut words = [0u64; SPAN / 64];
    while let Some((pos, span)) = codes.next()? {
        match span {
            Span::Repeated { value, count } => {
                if matches.get(value as usize) {
                    result.set_range(pos, pos + count);
                }
            }
            Span::Packed { data, count } => {
                // A kernel tests the packed codes and returns the largest, or none applies.
                let (n, k) = (count.div_ceil(64), codes.bit_width());
                let max = match (&bytes, &few, &bits) {
                    (Some((kernel, table)), _, _) => {
                        Some(kernel(data, k, count, table, &mut words[..n]))
                    }
                    (None, Some((kernel, literals)), _) => {
                        Some(kernel(data, k, count, literals, &mut words[..n]))
                    }
                    (None, None, Some((kernel, bitset))) => {
                        Some(kernel(data, k, count, bitset, &mut words[..n]))
                    }
                    (None, None, None) => None,
                };
                match max {
                    Some(max) => {
                        codes.check(&[max])?;
                        for (g, &word) in words[..n].iter().enumerate() {
                            result.or_word_at(pos + g * 64, word);
                        }
                    }
                    None => {
                        buf.clear();
                        codes.unpack(data, count, &mut buf)?;
                        for (g, group) in buf.chunks(64).enumerate() {
                            result.or_word_at(pos + g * 64, lookup_word(lookup, group));
                        }
                    }
                }
            }
        }
    }
    Ok(result)
}

/// For codes of 9 to 16 bits whose matching entries are 1 to
/// [`crate::kernels::MAX_LITERALS`], where a kernel compares codes with a few literals:
/// the kernel and the entries (those a code of width `k` can hold).
fn few_matches(matches: &Bitmap, k: u8) -> Option<(crate::kernels::EqualAnyMaxFn, Vec<u32>)> {
    let kernel = crate::kernels::kernels()
        .equal_any_max
        .filter(|_| (9..=16).contains(&k))?;
    let max = crate::kernels::MAX_LITERALS;
    let entries: Vec<u32> = (matches.iter_ones())
        .take_while(|&e| e >> k == 0)
        .take(max + 1)
        .map(|e| e as u32)
        .collect();
    (1..=max)
        .contains(&entries.len())
        .then_some((kernel, entries))
}

/// [`filter_codes`] when exactly one dictionary entry matches (paper 000, T5a): bit `i` is
/// `code_i == needle`, tested on the packed codes, one test per RLE run. Codes are still
/// checked against `dict_len`: by the `equal_any_max` kernel in the same pass (AVX-512), else by
/// unpacking them when the bit width can reach past the dictionary (or, where a lookup kernel
/// tests and checks them in one pass, through [`filter_codes`]).
pub fn filter_single_code(
    data: &[u8],
    num_values: usize,
    dict_len: usize,
    needle: u32,
) -> Result<Bitmap> {
    let mut codes = Codes::new(data, num_values, dict_len)?;
    let k = codes.bit_width();
    let kernels = crate::kernels::kernels();
    let equal_any = (kernels.equal_any_max).filter(|_| (1..=16).contains(&k) && needle >> k == 0);
    let lookup = match k {
        1..=8 => kernels.lookup.is_some(),
        9..=16 => kernels.lookup_bits.is_some(),
        _ => false,
    };
    if equal_any.is_none() && lookup && !codes.in_range_by_width && (needle as usize) < dict_len {
        let mut one = Bitmap::new_zeroed(dict_len);
        one.set(needle as usize);
        return filter_codes(data, num_values, dict_len, &one);
    }
    let mut result = Bitmap::new_zeroed(num_values);
    let equal = kernels.equal;
    let mut scratch = [0u64; SPAN / 64];
    let mut unpacked = Vec::new();
    while let Some((pos, span)) = codes.next()? {
        match span {
            Span::Repeated { value, count } => {
                if value == needle {
                    result.set_range(pos, pos + count);
                }
            }
            Span::Packed { data, count } => {
                let words = count.div_ceil(64);
                match equal_any {
                    Some(kernel) => {
                        let max = kernel(data, k, count, &[needle], &mut scratch[..words]);
                        codes.check(&[max])?;
                    }
                    None => {
                        codes.check_packed(data, count, &mut unpacked)?;
                        equal(data, k, count, needle, &mut scratch[..words]);
                    }
                }
                if count % 64 != 0 {
                    scratch[words - 1] &= (1u64 << (count % 64)) - 1;
                }
                for (g, &w) in scratch[..words].iter().enumerate() {
                    result.or_word_at(pos + g * 64, w);
                }
            }
        }
    }
    Ok(result)
}

/// Bit `i` is the match bit of `codes[i]` (at most 64 checked codes): 64 branch-free lookups
/// packed into one word, written at once.
#[inline]
/// The bitset `lookup` (one bit per dictionary entry) as 32-bit words covering every code of
/// width `k`, zero past the dictionary, for [`crate::kernels::Kernels::lookup_bits`].
fn wide_bitset(lookup: &[u64], k: u8) -> Vec<u32> {
    let mut bits = vec![0u32; (1usize << k).div_ceil(32)];
    for (pair, &w) in bits.chunks_mut(2).zip(lookup) {
        pair[0] = w as u32;
        if let Some(high) = pair.get_mut(1) {
            *high = (w >> 32) as u32;
        }
    }
    bits
}

fn lookup_word(lookup: &[u64], codes: &[u32]) -> u64 {
    let mut word = 0u64;
    for (i, &code) in codes.iter().enumerate() {
        let c = code as usize;
        word |= ((lookup[c >> 6] >> (c & 63)) & 1) << i;
    }
    word
}

/// Appends to `out` the codes of the values whose bit is set in `selected` (one bit per value of
/// the page, `num_values` bits): selection pushdown (paper §3). Bit-packed runs go through the
/// select kernel, so unselected codes are never unpacked; a repeated run contributes its value
/// once per selected position (a popcount). Codes are checked against `dict_len`.
pub fn select_codes(
    data: &[u8],
    num_values: usize,
    dict_len: usize,
    selected: &Bitmap,
    out: &mut Vec<u32>,
) -> Result<()> {
    for_selected_runs(data, num_values, dict_len, selected, |piece| match piece {
        Piece::Repeated { value, count } => out.resize(out.len() + count, value),
        Piece::Codes(codes) => out.extend_from_slice(codes),
    })
}

/// The predicate result over the selected values only: bit `j` is `matches[code]` of the `j`-th
/// value set in `selected`. Callers map it back onto the page with [`Bitmap::transform`].
pub fn filter_selected_codes(
    data: &[u8],
    num_values: usize,
    dict_len: usize,
    matches: &Bitmap,
    selected: &Bitmap,
) -> Result<Bitmap> {
    check_matches(matches, dict_len)?;
    let lookup = matches.words();
    let mut result = BitBuilder::with_capacity(selected.count_ones());
    for_selected_runs(data, num_values, dict_len, selected, |piece| match piece {
        Piece::Repeated { value, count } => result.push_run(matches.get(value as usize), count),
        Piece::Codes(codes) => {
            for group in codes.chunks(64) {
                result.push_bits(lookup_word(lookup, group), group.len());
            }
        }
    })?;
    Ok(result.finish())
}

/// What [`for_selected_runs`] hands out, in value order; every code is checked.
enum Piece<'a> {
    /// `count` selected values of one repeated run.
    Repeated { value: u32, count: usize },
    /// Selected codes of a bit-packed run.
    Codes(&'a [u32]),
}

/// Walks the runs of a dictionary-encoded page and yields only the selected codes.
fn for_selected_runs(
    data: &[u8],
    num_values: usize,
    dict_len: usize,
    selected: &Bitmap,
    mut f: impl FnMut(Piece<'_>),
) -> Result<()> {
    if selected.len() != num_values {
        return Err(Error::internal(format!(
            "selection of {} bits for a page of {num_values} values",
            selected.len()
        )));
    }
    let select_unpack = crate::kernels::kernels().select_unpack;
    let mut codes = Codes::new(data, num_values, dict_len)?;
    let mut buf: Vec<u32> = Vec::with_capacity(SPAN);
    let mut sel: Vec<u64> = Vec::with_capacity(SPAN / 64);
    while let Some((pos, span)) = codes.next()? {
        match span {
            Span::Repeated { value, count } => {
                let count = selected.count_range(pos, pos + count);
                if count > 0 {
                    f(Piece::Repeated { value, count });
                }
            }
            Span::Packed { data, count } => {
                if selected.any_in(pos, pos + count) {
                    selected.window_words(pos, count, &mut sel);
                    buf.clear();
                    select_unpack(data, codes.bit_width(), count, &sel, &mut buf);
                    codes.check(&buf)?;
                    f(Piece::Codes(&buf));
                }
            }
        }
    }
    Ok(())
}

/// Dense values for `codes` from the dictionary `dict`. Codes must already be validated (by
/// [`decode_codes`]); an out-of-range code yields a default value rather than a panic.
///
/// The output is reserved in `budget` first: for byte arrays its size is the sum of the entries'
/// lengths over the codes, which a small page can make enormous (a 1 MiB entry and a million
/// codes of bit width 0).
pub fn gather(dict: &Values, codes: &[u32], budget: &Budget) -> Result<Values> {
    let mut out = dict.empty_like();
    gather_into(dict, codes, budget, &mut out)?;
    Ok(out)
}

/// [`gather`] appending to `out` (the values of the column's earlier pages, so a dense
/// projection writes each value once, into the buffer that becomes the Arrow array's).
pub fn gather_into(dict: &Values, codes: &[u32], budget: &Budget, out: &mut Values) -> Result<()> {
    fn pick<T: Copy + Default>(dict: &[T], codes: &[u32], out: &mut Vec<T>) {
        out.extend(
            codes
                .iter()
                .map(|&c| dict.get(c as usize).copied().unwrap_or_default()),
        );
    }
    let total = reserve_gather(dict, codes, budget)?;
    match (dict, out) {
        (Values::Bool(d), Values::Bool(o)) => pick(d, codes, o),
        (Values::I32(d), Values::I32(o)) => pick(d, codes, o),
        (Values::I64(d), Values::I64(o)) => pick(d, codes, o),
        (Values::I96(d), Values::I96(o)) => pick(d, codes, o),
        (Values::F32(d), Values::F32(o)) => pick(d, codes, o),
        (Values::F64(d), Values::F64(o)) => pick(d, codes, o),
        (Values::Bytes(d), Values::Bytes(o)) => {
            // Every decoder builds `d` with offsets ascending within its data, so a code below
            // `d.len()` is a valid span: one comparison per code, no offsets re-checked.
            let at = |c: u32| {
                if (c as usize) < d.len() {
                    d.get(c as usize)
                } else {
                    &[]
                }
            };
            o.offsets.reserve(codes.len());
            o.data.reserve(total);
            for &c in codes {
                o.data.extend_from_slice(at(c));
                o.offsets.push(o.data.len());
            }
        }
        _ => {
            return Err(Error::corrupt(
                "pages of one column decode to different types",
            ))
        }
    }
    Ok(())
}

/// Reserves in `budget` what looking `codes` up in `dict` builds: a value per code, and for byte
/// arrays the bytes of every entry looked up (returned; 0 for other types).
pub fn reserve_gather(dict: &Values, codes: &[u32], budget: &Budget) -> Result<usize> {
    let what = || {
        format!(
            "{} values looked up in a dictionary of {}",
            codes.len(),
            dict.len()
        )
    };
    let width = match dict {
        Values::Bool(_) => 1,
        Values::I32(_) | Values::F32(_) => 4,
        Values::I64(_) | Values::F64(_) => 8,
        Values::I96(_) => 12,
        Values::Bytes(_) => std::mem::size_of::<usize>(),
    };
    budget.reserve_items(codes.len(), width, what)?;
    let Values::Bytes(d) = dict else {
        return Ok(0);
    };
    // Entries of one length (flags, statuses, fixed-width keys): that length per code, without
    // a walk over the codes (which a dense read of such a column paid on every page).
    let one_length = (d.len() <= codes.len())
        .then(|| d.offsets.windows(2).map(|w| w[1] - w[0]))
        .and_then(|mut lens| {
            let first = lens.next()?;
            lens.all(|l| l == first).then_some(first)
        });
    let total = match one_length {
        Some(len) => len.saturating_mul(codes.len()),
        None => codes.iter().fold(0usize, |t, &c| {
            let len = match d.offsets.get(c as usize..c as usize + 2) {
                Some(&[start, end]) => end - start,
                _ => 0,
            };
            t.saturating_add(len)
        }),
    };
    budget.reserve(total, what)?;
    Ok(total)
}

/// Checks that every one of the `num_values` codes of a dictionary-encoded page is below
/// `dict_len`, without keeping them: the fast paths that need no code (no entry or every entry
/// matches) still refuse a page whose codes point outside the dictionary.
pub fn check_codes(data: &[u8], num_values: usize, dict_len: usize) -> Result<()> {
    let mut codes = Codes::new(data, num_values, dict_len)?;
    let mut scratch = Vec::new();
    while let Some((_, span)) = codes.next()? {
        if let Span::Packed { data, count } = span {
            codes.check_packed(data, count, &mut scratch)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::ByteArrays;
    use parquet::encodings::rle::RleEncoder;
    use proptest::prelude::*;

    fn encode(codes: &[u32], bit_width: u8) -> Vec<u8> {
        let mut enc = RleEncoder::new(bit_width, 64);
        for &c in codes {
            enc.put(c as u64);
        }
        let mut data = vec![bit_width];
        data.extend(enc.consume());
        data
    }

    fn bits_for(dict_len: usize) -> u8 {
        (usize::BITS - dict_len.saturating_sub(1).leading_zeros()) as u8
    }

    fn arb_codes() -> impl Strategy<Value = (usize, Vec<u32>)> {
        (1usize..3000).prop_flat_map(|dict_len| {
            let code = 0..dict_len as u32;
            let runs = prop::collection::vec((code, 1usize..300, any::<bool>()), 0..12);
            (Just(dict_len), runs).prop_map(move |(dl, runs)| {
                let mut codes = Vec::new();
                for (c, n, repeat) in runs {
                    for i in 0..n {
                        let x = if repeat {
                            c
                        } else {
                            (c + i as u32 * 7) % dl as u32
                        };
                        codes.push(x);
                    }
                }
                (dl, codes)
            })
        })
    }

    proptest! {
        #[test]
        fn codes_filter_and_gather((dict_len, codes) in arb_codes(), seed in any::<u64>(), extra_bits in 0u8..3) {
            let bw = (bits_for(dict_len) + extra_bits).min(32);
            let data = encode(&codes, bw);
            let mut out = vec![9];
            decode_codes(&data, codes.len(), dict_len, &mut out).unwrap();
            check_codes(&data, codes.len(), dict_len).unwrap();
            prop_assert_eq!(&out[1..], &codes[..]);

            let matches = Bitmap::from_bools(
                &(0..dict_len).map(|i| (seed >> (i % 64)) & 1 == 1).collect::<Vec<_>>());
            let got = filter_codes(&data, codes.len(), dict_len, &matches).unwrap();
            let want = Bitmap::from_bools(&codes.iter().map(|&c| matches.get(c as usize)).collect::<Vec<_>>());
            prop_assert_eq!(&got, &want);

            // One matching entry: the needle kernel agrees with the lookup (every code width,
            // runs and bit-packed groups, the needle present or absent).
            let needle = (seed % dict_len as u64) as u32;
            let one = Bitmap::from_bools(&(0..dict_len).map(|i| i as u32 == needle).collect::<Vec<_>>());
            prop_assert_eq!(
                filter_single_code(&data, codes.len(), dict_len, needle).unwrap(),
                filter_codes(&data, codes.len(), dict_len, &one).unwrap()
            );

            // Selection pushdown: only the selected codes, and the result over them.
            for shape in 0..4u64 {
                let sel = Bitmap::from_bools(&(0..codes.len()).map(|i| match shape {
                    0 => false,
                    1 => true,
                    2 => i % 3 == 1,
                    _ => (seed.rotate_left(i as u32 % 64) ^ (i as u64 * 0x9e37)) & 3 == 0,
                }).collect::<Vec<_>>());
                let mut picked = Vec::new();
                select_codes(&data, codes.len(), dict_len, &sel, &mut picked).unwrap();
                let expect: Vec<u32> = sel.iter_ones().map(|i| codes[i]).collect();
                prop_assert_eq!(&picked, &expect);
                let compact = filter_selected_codes(&data, codes.len(), dict_len, &matches, &sel).unwrap();
                let expect_bits: Vec<bool> = expect.iter().map(|&c| matches.get(c as usize)).collect();
                prop_assert_eq!(&compact, &Bitmap::from_bools(&expect_bits));
                let mut want_rows = want.clone();
                want_rows.and_inplace(&sel);
                prop_assert_eq!(compact.transform(&sel), want_rows);
            }

            let dict = Values::I64((0..dict_len as i64).map(|i| i * 3).collect());
            prop_assert_eq!(gather(&dict, &codes, &Budget::default()).unwrap(), Values::I64(codes.iter().map(|&c| c as i64 * 3).collect()));

            if let Some(&max) = codes.iter().max() {
                let mut out = Vec::new();
                prop_assert!(decode_codes(&data, codes.len(), max as usize, &mut out).is_err());
                let small = Bitmap::new_set(max as usize);
                prop_assert!(filter_codes(&data, codes.len(), max as usize, &small).is_err());
                prop_assert!(check_codes(&data, codes.len(), max as usize).is_err());
                prop_assert!(filter_single_code(&data, codes.len(), max as usize, 0).is_err());
                prop_assert!(decode_codes(&data, codes.len() + 10_000, dict_len, &mut out).is_err());
                prop_assert!(filter_codes(&data, codes.len() + 10_000, dict_len, &matches).is_err());
            }
        }

        #[test]
        fn garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..64), n in 0usize..2000, dict_len in 0usize..40) {
            let mut out = Vec::new();
            let _ = decode_codes(&data, n, dict_len, &mut out);
            let _ = filter_codes(&data, n, dict_len, &Bitmap::new_set(dict_len));
            let sel = Bitmap::from_bools(&(0..n).map(|i| i % 3 == 0).collect::<Vec<_>>());
            let _ = select_codes(&data, n, dict_len, &sel, &mut out);
            let _ = filter_selected_codes(&data, n, dict_len, &Bitmap::new_set(dict_len), &sel);
            let _ = check_codes(&data, n, dict_len);
            let _ = filter_single_code(&data, n, dict_len, 0);
        }
    }

    #[test]
    fn edge_cases() {
        let mut out = Vec::new();
        decode_codes(&[], 0, 0, &mut out).unwrap();
        assert!(decode_codes(&[], 1, 5, &mut out).is_err());
        assert!(decode_codes(&[33, 2, 0], 1, 5, &mut out).is_err());
        // Repeated run of code 7 with 5 entries.
        let e = decode_codes(&[3, 2, 7], 1, 5, &mut out).unwrap_err();
        assert_eq!(
            e.message,
            "dictionary code 7 out of range for dictionary of 5 entries"
        );
        let e = filter_codes(&[3, 2, 7], 1, 5, &Bitmap::new_set(5)).unwrap_err();
        assert_eq!(
            e.message,
            "dictionary code 7 out of range for dictionary of 5 entries"
        );
        assert!(filter_codes(&[3, 2, 1], 1, 5, &Bitmap::new_set(4)).is_err());
        assert_eq!(
            filter_codes(&[], 0, 5, &Bitmap::new_set(5)).unwrap().len(),
            0
        );
        // Bit width 0: every code is 0.
        let got = filter_codes(&[0, 200, 1], 100, 1, &Bitmap::new_set(1)).unwrap();
        assert_eq!(got, Bitmap::new_set(100));
        // A huge run with few values wanted is fine.
        let got = filter_codes(
            &[1, 0xfe, 0xff, 0xff, 0xff, 0x07, 1],
            70,
            2,
            &Bitmap::from_bools(&[false, true]),
        )
        .unwrap();
        assert_eq!(got, Bitmap::new_set(70));
        let dict = Values::Bytes({
            let mut b = ByteArrays::new();
            b.push(b"x");
            b.push(b"yz");
            b
        });
        let Values::Bytes(g) = gather(&dict, &[1, 0, 1, 5], &Budget::default()).unwrap() else {
            panic!()
        };
        assert_eq!(
            g.iter().collect::<Vec<_>>(),
            vec![&b"yz"[..], b"x", b"yz", b""]
        );
    }

    /// The fast paths (no entry, one entry or every entry matches) used to skip the range check:
    /// a page whose codes point past the dictionary must be an error on every path.
    #[test]
    fn out_of_range_codes_fail_on_every_path() {
        // Bit width 3, a bit-packed group of eight codes 0..8 against a dictionary of 5 entries.
        let data = encode(&[0, 1, 2, 3, 4, 5, 6, 7], 3);
        assert!(data.len() > 2);
        let e = check_codes(&data, 8, 5).unwrap_err();
        assert_eq!(
            e.message,
            "dictionary code 7 out of range for dictionary of 5 entries"
        );
        assert!(filter_single_code(&data, 8, 5, 2).is_err());
        check_codes(&data, 8, 8).unwrap();
        // A repeated run of code 6.
        let data = [3u8, 2 << 1, 6];
        assert!(check_codes(&data, 2, 5).is_err());
        assert!(filter_single_code(&data, 2, 5, 0).is_err());
        check_codes(&data, 2, 7).unwrap();
        // Width 2 against 4 entries: in range by width, only the length is checked.
        check_codes(&[2, 3, 0b1110_0100, 0b1110_0100], 8, 4).unwrap();
        assert!(check_codes(&[2, 3, 0b1110_0100], 8, 4).is_err());
    }

    proptest! {
        /// The bytes reserved for a string gather are the entries' lengths summed over the codes,
        /// whether the entries share one length (counted without a walk) or not, including
        /// empty entries and empty code lists.
        #[test]
        fn string_gather_reserves_the_summed_lengths(
            lens in proptest::collection::vec(0usize..4, 1..6),
            one_length in proptest::bool::ANY,
            picks in proptest::collection::vec(0usize..64, 0..40),
        ) {
            let mut b = ByteArrays::new();
            for (i, &len) in lens.iter().enumerate() {
                b.push(&vec![b'a' + i as u8; if one_length { lens[0] } else { len }]);
            }
            let codes: Vec<u32> = picks.iter().map(|&p| (p % lens.len()) as u32).collect();
            let want: usize = codes.iter().map(|&c| b.get(c as usize).len()).sum();
            let dict = Values::Bytes(b);
            let budget = Budget::new(usize::MAX);
            prop_assert_eq!(reserve_gather(&dict, &codes, &budget).unwrap(), want);
            prop_assert_eq!(budget.used(), want + codes.len() * std::mem::size_of::<usize>());
            let Values::Bytes(got) = gather(&dict, &codes, &Budget::new(usize::MAX)).unwrap() else {
                panic!("bytes")
            };
            prop_assert_eq!(got.data.len(), want);
        }
    }

    /// Gathering strings reserves the summed entry lengths first: a 1 MiB entry behind a million
    /// codes (a repeated run of two bytes) is a resource-limit error, not a 1 TiB allocation.
    #[test]
    fn string_gather_is_budgeted() {
        let mut b = ByteArrays::new();
        b.push(&vec![b'x'; 1 << 20]);
        let dict = Values::Bytes(b);
        let codes = vec![0u32; 1_000_000];
        let budget = Budget::new(1 << 30);
        let e = gather(&dict, &codes, &budget).unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::ResourceLimit);
        assert!(
            e.message.contains("needs 1048576000000 bytes"),
            "{}",
            e.message
        );
        // The offsets (8 MB) were reserved, the strings not.
        assert_eq!(budget.used(), 8_000_000);
        let Values::Bytes(got) = gather(&dict, &codes[..3], &Budget::new(4 << 20)).unwrap() else {
            panic!("bytes")
        };
        assert_eq!(got.data.len(), 3 << 20);
    }
}
