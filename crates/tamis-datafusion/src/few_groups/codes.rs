//! Small codes for key values: a key column's values, as the bits they have in memory, numbered
//! in order of first appearance.

use arrow::array::{Array, AsArray};
use arrow::buffer::NullBuffer;
use arrow::datatypes::DataType;
use datafusion::common::HashMap;

use tamis::kernels::groups::{code_equal, split};

use super::{codable_type, MAX_GROUPS};

/// Distinct values compared one by one before a hash map takes over.
const SHORT_LIST: usize = 8;

/// A batch's values as the bits they have in memory, zero-extended to 128 (a null's are
/// whatever they are): the low and, when some value is wider than 64 bits, the high halves.
/// Two halves and not one `u128`: the passes over them compile to vector compares.
#[derive(Default)]
pub(super) struct Words {
    pub(super) lo: Vec<u64>,
    pub(super) hi: Vec<u64>,
    pub(super) wide: bool,
}

impl Words {
    fn word(&self, r: usize) -> (u64, u64) {
        (self.lo[r], if self.wide { self.hi[r] } else { 0 })
    }
}

/// Small codes for values, numbered in order of first appearance (a null is a value too).
/// Up to [`SHORT_LIST`] values are found by a pass over the batch for each, comparing and
/// selecting with no branch to mispredict (a key that changes from row to row at random, as
/// Q1's do, costs a search row by row a misprediction a row); a hash map finds more.
#[derive(Default)]
pub(super) struct Codes {
    short: Vec<((u64, u64), u32)>,
    map: HashMap<(u64, u64), u32>,
    null: Option<u32>,
    count: u32,
}

impl Codes {
    /// Values coded so far.
    pub(super) fn len(&self) -> usize {
        self.count as usize
    }

    /// `out[r]` = the code of row `r`'s value (or of null, where `nulls` says so); false once
    /// more than [`MAX_GROUPS`] values are coded.
    pub(super) fn code_all(
        &mut self,
        words: &Words,
        nulls: Option<&NullBuffer>,
        out: &mut Vec<u32>,
    ) -> bool {
        const UNCODED: u32 = u32::MAX;
        let rows = words.lo.len();
        out.clear();
        out.resize(rows, UNCODED);
        if self.map.is_empty() {
            // A pass over the batch for each listed value: compares and selects (all ones
            // where the row holds the value), no branch.
            let hi = words.wide.then_some(words.hi.as_slice());
            for &(value, code) in &self.short {
                code_equal(&words.lo, hi, value, code, out);
            }
        }
        if let Some(nulls) = nulls.filter(|n| n.null_count() > 0) {
            let code = self.null_code();
            for r in (0..rows).filter(|&r| nulls.is_null(r)) {
                out[r] = code;
            }
        }
        if out.contains(&UNCODED) {
            for (r, o) in out.iter_mut().enumerate() {
                if *o == UNCODED {
                    *o = self.code(words.word(r));
                }
            }
        }
        self.len() <= MAX_GROUPS
    }

    /// The code of one value, a new one if it has none.
    fn code(&mut self, word: (u64, u64)) -> u32 {
        if !self.map.is_empty() {
            if let Some(&code) = self.map.get(&word) {
                return code;
            }
            let code = self.next_code();
            self.map.insert(word, code);
            return code;
        }
        if let Some(&(_, code)) = self.short.iter().find(|(w, _)| *w == word) {
            return code;
        }
        let code = self.next_code();
        self.short.push((word, code));
        if self.short.len() > SHORT_LIST {
            self.map.extend(self.short.drain(..));
        }
        code
    }

    fn null_code(&mut self) -> u32 {
        match self.null {
            Some(code) => code,
            None => {
                let code = self.next_code();
                self.null = Some(code);
                code
            }
        }
    }

    fn next_code(&mut self) -> u32 {
        self.count += 1;
        self.count - 1
    }
}

/// `array`'s values into `out` ([`Words`]); false for a type not coded here or a string
/// longer than the 12 bytes a view holds inline.
pub(super) fn words_of(array: &dyn Array, out: &mut Words) -> bool {
    out.hi.clear();
    out.wide = false;
    let views = match array.data_type() {
        DataType::Utf8View => Some(array.as_string_view().views()),
        DataType::BinaryView => Some(array.as_binary_view().views()),
        _ => None,
    };
    if let Some(views) = views {
        // A view of at most 12 bytes holds them inline, zero-padded (arrow checks it when it
        // builds the array): the view is the value. Strings of at most 4 bytes are all in
        // the low half. (`split` overwrites `lo`, not zeroing it first.)
        let (longest, high) = split(views, &mut out.lo);
        if longest > 12 {
            return false;
        }
        if high != 0 {
            out.hi.extend(views.iter().map(|&v| (v >> 64) as u64));
            out.wide = true;
        }
        return true;
    }
    out.lo.clear();
    if let DataType::Boolean = array.data_type() {
        out.lo
            .extend(array.as_boolean().values().iter().map(u64::from));
        return true;
    }
    if !codable_type(array.data_type()) {
        return false;
    }
    let data = array.to_data();
    match array.data_type().primitive_width() {
        Some(1) => out
            .lo
            .extend(data.buffer::<u8>(0).iter().map(|&v| u64::from(v))),
        Some(2) => out
            .lo
            .extend(data.buffer::<u16>(0).iter().map(|&v| u64::from(v))),
        Some(4) => out
            .lo
            .extend(data.buffer::<u32>(0).iter().map(|&v| u64::from(v))),
        Some(8) => out.lo.extend_from_slice(data.buffer::<u64>(0)),
        Some(16) => {
            let values = data.buffer::<i128>(0);
            out.lo.extend(values.iter().map(|&v| v as u64));
            out.hi
                .extend(values.iter().map(|&v| ((v as u128) >> 64) as u64));
            out.wide = true;
        }
        _ => return false,
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Decimal128Array, Int64Array, StringViewArray};

    /// Codes in order of first appearance, nulls one code, through the short list, the map
    /// and the limit, narrow and wide, against a plain map.
    #[test]
    fn codes_number_values_in_order_of_first_appearance() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for wide in [false, true] {
            for distinct in [1u64, 2, 7, 8, 9, 40, 1000, 1030] {
                let mut codes = Codes::default();
                let mut reference: std::collections::HashMap<Option<(u64, u64)>, u32> =
                    Default::default();
                let mut seen: std::collections::HashMap<u32, Option<(u64, u64)>> =
                    Default::default();
                let mut out = Vec::new();
                for batch in 0..4 {
                    let rows = 700 - batch * 100;
                    let lo: Vec<u64> = (0..rows)
                        .map(|i| if i % 5 == 0 { i as u64 } else { next() } % distinct)
                        .collect();
                    // Wide values that differ in their high half only, too.
                    let hi: Vec<u64> = lo.iter().map(|&l| (l + batch as u64) % 3).collect();
                    let words = Words {
                        lo,
                        hi: if wide { hi } else { Vec::new() },
                        wide,
                    };
                    let nulls = NullBuffer::from_iter((0..rows).map(|i| i % 11 != 3));
                    // Nulls in the odd batches only: without them, codes follow first
                    // appearance exactly (groups rely on it); with them, the null's code
                    // may come first.
                    let nulls = (batch % 2 == 1).then_some(&nulls);
                    let fits = codes.code_all(&words, nulls, &mut out);
                    let mut want = Vec::new();
                    for (r, &code) in out.iter().enumerate() {
                        let key = nulls.is_none_or(|n| n.is_valid(r)).then(|| words.word(r));
                        let n = reference.len() as u32;
                        let expected = *reference.entry(key).or_insert(n);
                        match nulls {
                            None => want.push(expected),
                            Some(_) => want.push(code),
                        }
                        let same = seen.entry(code).or_insert(key);
                        assert_eq!(*same, key, "code {code} names two values");
                    }
                    assert_eq!(out, want, "{distinct} values, wide {wide}, batch {batch}");
                    assert_eq!(codes.len(), reference.len());
                    assert_eq!(fits, reference.len() <= MAX_GROUPS);
                }
            }
        }
    }

    #[test]
    fn a_view_of_at_most_12_bytes_is_the_value() {
        let strings = ["", "A", "ab", "abc", "twelve bytes", "\0", "A"];
        let mut words = Words::default();
        assert!(words_of(
            &StringViewArray::from(strings.to_vec()),
            &mut words
        ));
        for (i, a) in strings.iter().enumerate() {
            for (j, b) in strings.iter().enumerate() {
                assert_eq!(words.word(i) == words.word(j), a == b, "{a:?} and {b:?}");
            }
        }
        let long = StringViewArray::from(vec!["twelve bytes", "thirteen byte"]);
        assert!(
            !words_of(&long, &mut words),
            "a 13-byte string is not inline"
        );
    }

    #[test]
    fn integers_are_their_bits() {
        let mut out = Words::default();
        let array = Int64Array::from(vec![-1, 0, 1, i64::MIN]).slice(1, 3);
        assert!(words_of(&array, &mut out));
        assert_eq!(out.lo, vec![0, 1, i64::MIN as u64]);
        assert!(!out.wide);
        let decimals = Decimal128Array::from(vec![-1i128, 1 << 64, 5]);
        assert!(words_of(&decimals, &mut out));
        let want = [(u64::MAX, u64::MAX), (0, 1), (5, 0)];
        assert_eq!((0..3).map(|r| out.word(r)).collect::<Vec<_>>(), want);
    }
}
