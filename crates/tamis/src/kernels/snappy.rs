//! Snappy pages decompressed by Google's C++ Snappy (the `cpp-snappy` feature): the one call
//! into C code, so it lives with the other `unsafe` code.
//!
//! Why: on Parquet pages of integers Google's Snappy 1.3.1 built by clang decompresses at
//! 2.4–2.6 GB/s where `snap` (the `parquet` crate's codec) reaches 1.4 GB/s (`BENCHMARKS.md`,
//! suite `selectivity`). Built by GCC the same code runs at 1.1–1.2 GB/s, so the feature is
//! meant for clang builds (`CXX=clang++`).
//!
//! Corrupt input is safe: the C++ decoder checks every literal and copy against its input and
//! output bounds (it is fuzzed for that upstream) and reports failure, which becomes an error.

/// Decompresses the raw Snappy block `input` into all of `out`; `None` when `input` is not a
/// valid block or does not decompress to exactly `out.len()` bytes.
pub fn decompress_exact(input: &[u8], out: &mut [u8]) -> Option<()> {
    use snappy_src::{snappy_status_SNAPPY_OK as OK, snappy_uncompress};
    let mut written = out.len();
    // SAFETY: `out` is a live, exclusive slice of `written` bytes, and `input` a live slice of
    // `input.len()`. The decoder reads `input` only within its length, whatever the block
    // holds, and refuses (before writing) a block announcing more than `written` bytes; it
    // then sets `written` to the bytes it wrote.
    let status = unsafe {
        snappy_uncompress(
            input.as_ptr().cast(),
            input.len(),
            out.as_mut_ptr().cast(),
            &mut written,
        )
    };
    // A block announcing fewer bytes than `out` holds decompresses, but is not this page.
    (status == OK && written == out.len()).then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `snap`'s answer: the reference.
    fn reference(input: &[u8], len: usize) -> Option<Vec<u8>> {
        let mut out = vec![0u8; len];
        match snap::raw::Decoder::new().decompress(input, &mut out) {
            Ok(n) if n == len => Some(out),
            _ => None,
        }
    }

    fn ours(input: &[u8], len: usize) -> Option<Vec<u8>> {
        let mut out = vec![0xA5u8; len];
        decompress_exact(input, &mut out).map(|()| out)
    }

    /// Bytes from a few values repeated (long copies), or random ones (literals), or both.
    fn data() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..3000),
            proptest::collection::vec(0u8..3, 0..70_000),
            (proptest::collection::vec(any::<u16>(), 0..9000)).prop_map(|v| v
                .iter()
                .flat_map(|x| (*x as u64 % 10_000).to_le_bytes())
                .collect()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Valid blocks decompress to the bytes compressed, as with `snap`.
        #[test]
        fn valid_blocks_match_snap(raw in data()) {
            let block = snap::raw::Encoder::new().compress_vec(&raw).unwrap();
            prop_assert_eq!(ours(&block, raw.len()), Some(raw.clone()));
            prop_assert_eq!(reference(&block, raw.len()), Some(raw));
        }

        /// A block cut short, with a byte changed, or expected at another length is refused or
        /// decompressed exactly as `snap` does: never read or written out of bounds.
        #[test]
        fn damaged_blocks_are_refused_like_snap(
            raw in data(),
            cut in 0usize..64,
            flip in any::<(usize, u8)>(),
            delta in -2i64..3,
        ) {
            let mut block = snap::raw::Encoder::new().compress_vec(&raw).unwrap();
            block.truncate(block.len().saturating_sub(cut));
            if !block.is_empty() {
                let at = flip.0 % block.len();
                block[at] ^= flip.1;
            }
            let len = (raw.len() as i64 + delta).max(0) as usize;
            prop_assert_eq!(ours(&block, len), reference(&block, len));
        }

        /// Arbitrary bytes: whatever `snap` accepts, with its output; nothing else.
        #[test]
        fn arbitrary_bytes_match_snap(block in proptest::collection::vec(any::<u8>(), 0..200), len in 0usize..400) {
            prop_assert_eq!(ours(&block, len), reference(&block, len));
        }
    }

    #[test]
    fn empty_input_and_empty_output() {
        assert_eq!(ours(&[], 0), None);
        let block = snap::raw::Encoder::new().compress_vec(&[]).unwrap();
        assert_eq!(ours(&block, 0), Some(Vec::new()));
        assert_eq!(ours(&block, 1), None);
    }
}
