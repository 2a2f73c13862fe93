//! Set bits in a run of bitmap words, compiled twice: portable, and with the `popcnt`
//! instruction where the CPU has it.
//!
//! x86-64's baseline has no `popcnt`, so `u64::count_ones` in the portable build is a
//! shift-and-add sequence (vectorised with `psadbw`). Counting the survivors of a 1 M-row row
//! group after each filter, and per page, took 8–10 % of a point query on dictionary codes
//! (`dictsize`, filter only); one instruction per word takes that to about 1 %.
//!
//! Nothing here is `unsafe` beyond calling the `popcnt` build, which runs only where the CPU has
//! `popcnt` and `TAMIS_FORCE_ISA=scalar` is not set ([`fast`]).

/// Whether this process counts with `popcnt`: the CPU has it and the kernels were not forced to
/// the portable path. Read once.
pub fn fast() -> bool {
    use std::sync::OnceLock;
    static FAST: OnceLock<bool> = OnceLock::new();
    *FAST.get_or_init(|| !super::forced_scalar() && popcnt_detected())
}

fn popcnt_detected() -> bool {
    super::x86_feature!("popcnt")
}

/// The set bits of `words`.
#[inline]
pub fn count(words: &[u64]) -> usize {
    count_with(fast(), words)
}

/// [`count`], with the `popcnt` build when `fast` (and the CPU has it: checked here too).
#[inline]
pub fn count_with(fast: bool, words: &[u64]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if fast && popcnt_detected() {
        // SAFETY: `count_popcnt` only enables `popcnt` code generation; detected just above.
        return unsafe { count_popcnt(words) };
    }
    let _ = fast;
    count_body(words)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn count_popcnt(words: &[u64]) -> usize {
    count_body(words)
}

#[inline(always)]
fn count_body(words: &[u64]) -> usize {
    words.iter().map(|w| w.count_ones() as usize).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One bit at a time: the oracle.
    fn reference(words: &[u64]) -> usize {
        words
            .iter()
            .map(|w| (0..64).filter(|b| w >> b & 1 == 1).count())
            .sum()
    }

    #[test]
    fn edges_both_builds() {
        for words in [
            vec![],
            vec![0],
            vec![u64::MAX],
            vec![1, 1 << 63],
            vec![u64::MAX; 1000],
            vec![0x5555_5555_5555_5555; 7],
        ] {
            for fast in [false, true] {
                assert_eq!(count_with(fast, &words), reference(&words), "fast {fast}");
            }
        }
    }

    proptest! {
        #[test]
        fn both_builds_match_the_reference(words in proptest::collection::vec(any::<u64>(), 0..300)) {
            let want = reference(&words);
            prop_assert_eq!(count_with(false, &words), want);
            prop_assert_eq!(count_with(true, &words), want);
        }
    }
}
