//! `Decimal128` values and 64-bit lanes: whether every value of a batch fits in an `i64`
//! (decimal arithmetic then multiplies and adds `i64`s, [`fits_i64`]), whether no sum of
//! them can overflow one (an aggregate then sums their low halves, [`lows_if_sums_fit`]),
//! and 64-bit values widened to `i128` (a scan's INT64 decimals, [`widen_into`]).
//!
//! Each is one pass of shifts, XORs and ORs, no branch. SSE2, x86-64's baseline, has no
//! 64-bit arithmetic shift, so the passes are compiled twice: portable, and with AVX-512
//! (TPC-H Q1's fit checks went from about 5 % of the query to 3 %). An `i128` is read as two
//! `u64`s (`halves`), which the compiler loads whole vectors of. The `unsafe` here: that
//! reinterpretation, writing widened values into a vector's spare room, and calling the
//! AVX-512 build, which runs only where the CPU has AVX-512 F and VL and
//! `TAMIS_FORCE_ISA=scalar` is not set ([`wide`]).

use super::avx512_builds as wide;

/// Whether every value (null slots too) fits in an `i64`.
pub fn fits_i64(values: &[i128]) -> bool {
    fits_i64_with(wide(), values)
}

/// [`fits_i64`], with the AVX-512 build when `wide` (and the CPU has it).
pub fn fits_i64_with(wide: bool, values: &[i128]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if wide && crate::kernels::avx512_vl_detected() {
        // SAFETY: `fits_avx512` only enables AVX-512 code generation; detected just above.
        return unsafe { fits_avx512(values) } == 0;
    }
    let _ = wide;
    fits_body(values) == 0
}

/// The values' low 64 bits into `lows`, when every value fits in an `i64` and no sum of
/// `values.len()` of them can overflow one; false (and `lows` unusable) otherwise. A bound,
/// not the exact test: the OR of the values' magnitudes, plus one a value.
pub fn lows_if_sums_fit(values: &[i128], lows: &mut Vec<i64>) -> bool {
    lows_if_sums_fit_with(wide(), values, lows)
}

/// [`lows_if_sums_fit`], with the AVX-512 build when `wide` (and the CPU has it).
pub fn lows_if_sums_fit_with(wide: bool, values: &[i128], lows: &mut Vec<i64>) -> bool {
    #[cfg(target_arch = "x86_64")]
    let (bad, magnitudes) = if wide && crate::kernels::avx512_vl_detected() {
        // SAFETY: `lows_avx512` only enables AVX-512 code generation; detected just above.
        unsafe { lows_avx512(values, lows) }
    } else {
        lows_body(values, lows)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (bad, magnitudes) = {
        let _ = wide;
        lows_body(values, lows)
    };
    let bound = u128::from(magnitudes) + 1;
    bad == 0 && bound * values.len() as u128 <= i64::MAX as u128
}

/// Appends `values`, each widened to an `i128`.
pub fn widen_into(values: &[i64], out: &mut Vec<i128>) {
    widen_into_with(wide(), values, out)
}

/// [`widen_into`], with the AVX-512 build when `wide` (and the CPU has it).
pub fn widen_into_with(wide: bool, values: &[i64], out: &mut Vec<i128>) {
    out.reserve(values.len());
    let start = out.len();
    let spare = &mut out.spare_capacity_mut()[..values.len()];
    #[cfg(target_arch = "x86_64")]
    if wide && crate::kernels::avx512_vl_detected() {
        // SAFETY: `widen_avx512` only enables AVX-512 code generation; detected just above.
        unsafe { widen_avx512(values, spare) };
    } else {
        widen_body(values, spare);
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = wide;
        widen_body(values, spare);
    }
    // SAFETY: the `values.len()` slots past `start` were reserved above and every one of
    // them was written by `widen_body` (`spare` is exactly that long, and as long as `values`).
    unsafe { out.set_len(start + values.len()) };
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn widen_avx512(values: &[i64], out: &mut [std::mem::MaybeUninit<i128>]) {
    widen_body(values, out)
}

/// Writes every slot of `out` (as long as `values`).
#[inline(always)]
fn widen_body(values: &[i64], out: &mut [std::mem::MaybeUninit<i128>]) {
    for (o, &v) in out.iter_mut().zip(values) {
        o.write(i128::from(v));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn fits_avx512(values: &[i128]) -> u64 {
    fits_body(values)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn lows_avx512(values: &[i128], lows: &mut Vec<i64>) -> (u64, u64) {
    lows_body(values, lows)
}

/// 128-bit integers, read here as two `u64`s.
///
/// # Safety
///
/// An implementor is 16 bytes with no padding, aligned at least as a `u64` is.
pub(super) unsafe trait Wide: Copy {}
// SAFETY: 16-byte integers, no padding, aligned to 16 (8 on older compilers): the trait's terms.
unsafe impl Wide for i128 {}
// SAFETY: as for `i128`.
unsafe impl Wide for u128 {}

/// Each value's halves, low then high: a slice of `u64`s the compiler loads whole vectors
/// of (over 128-bit integers it loads 64 bits at a time).
#[inline(always)]
pub(super) fn halves<T: Wide>(values: &[T]) -> impl Iterator<Item = (u64, u64)> + '_ {
    const {
        assert!(std::mem::size_of::<T>() == 16);
        assert!(std::mem::align_of::<T>() >= std::mem::align_of::<u64>());
    };
    // SAFETY: a `Wide` is 16 bytes with no padding, aligned at least as a `u64` is (checked
    // above too), and any bits are a valid `u64`: the slice covers exactly `values`' memory,
    // borrowed for as long.
    let words =
        unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u64>(), values.len() * 2) };
    let (lo, hi) = if cfg!(target_endian = "little") {
        (0, 1)
    } else {
        (1, 0)
    };
    words.chunks_exact(2).map(move |w| (w[lo], w[hi]))
}

/// The OR of each high half XOR its low half's sign: zero where all fit.
#[inline(always)]
fn fits_body(values: &[i128]) -> u64 {
    halves(values).fold(0u64, |bad, (lo, hi)| bad | (hi ^ (lo >> 63).wrapping_neg()))
}

/// `lows` = the values' low halves; returns the OR of each high half XOR its low half's sign
/// (zero where all fit) and the OR of the magnitudes (one's complement for a negative).
#[inline(always)]
fn lows_body(values: &[i128], lows: &mut Vec<i64>) -> (u64, u64) {
    let (mut bad, mut magnitudes) = (0u64, 0u64);
    // Sized first and written in place: `extend` is not inlined into the AVX-512 build.
    // What the last batch left is overwritten, not zeroed first.
    lows.truncate(values.len());
    lows.resize(values.len(), 0);
    for (out, (lo, hi)) in lows.iter_mut().zip(halves(values)) {
        let sign = (lo >> 63).wrapping_neg();
        bad |= hi ^ sign;
        magnitudes |= lo ^ sign;
        *out = lo as i64;
    }
    (bad, magnitudes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use crate::kernels::avx512_paths as paths;

    proptest! {
        /// `fits_i64` against `i64::try_from`, value by value.
        #[test]
        fn fits_equals_try_from(
            values in prop::collection::vec(prop_oneof![
                any::<i64>().prop_map(i128::from),
                any::<i128>(),
                (0i128..3).prop_map(|d| i128::from(i64::MAX) + d - 1),
                (0i128..3).prop_map(|d| i128::from(i64::MIN) - d + 1),
            ], 0..100),
        ) {
            let want = values.iter().all(|&v| i64::try_from(v).is_ok());
            for wide in paths() {
                prop_assert_eq!(fits_i64_with(wide, &values), want);
            }
        }

        /// The narrowing check: true only where the exact sums of the values fit in an
        /// `i64`, and then the values' lows; small batches of small values always pass.
        #[test]
        fn lows_only_where_sums_fit(
            values in prop::collection::vec(prop_oneof![
                -1000i128..1000,
                any::<i64>().prop_map(i128::from),
                any::<i128>(),
            ], 0..100),
        ) {
            let small = values.iter().all(|v| v.abs() < 1000);
            for wide in paths() {
                let mut lows = Vec::new();
                let fits = lows_if_sums_fit_with(wide, &values, &mut lows);
                if small {
                    prop_assert!(fits);
                }
                if fits {
                    let total: i128 = values.iter().map(|v| v.abs()).sum();
                    prop_assert!(total <= i128::from(i64::MAX));
                    prop_assert_eq!(&lows, &values.iter().map(|&v| v as i64).collect::<Vec<_>>());
                }
            }
        }
    }

    proptest! {
        /// Widening appends each value as `i128::from` does, after what was there.
        #[test]
        fn widen_equals_from(
            before in prop::collection::vec(any::<i128>(), 0..5),
            values in prop::collection::vec(any::<i64>(), 0..100),
        ) {
            let mut want = before.clone();
            want.extend(values.iter().map(|&v| i128::from(v)));
            for wide in paths() {
                let mut out = before.clone();
                widen_into_with(wide, &values, &mut out);
                prop_assert_eq!(&out, &want);
            }
        }
    }

    #[test]
    fn narrowing_edges() {
        let mut lows = Vec::new();
        let fits = |v: &[i128], lows: &mut Vec<i64>| {
            let got: Vec<bool> = paths()
                .into_iter()
                .map(|w| lows_if_sums_fit_with(w, v, lows))
                .collect();
            assert!(got.iter().all(|&g| g == got[0]), "paths disagree on {v:?}");
            got[0]
        };
        assert!(fits(&[], &mut lows));
        assert!(fits(&[-5, 7, 0], &mut lows));
        assert_eq!(lows, vec![-5, 7, 0]);
        let max = i64::MAX as i128;
        // The bound is |v| + 1 a value, so one `i64::MAX` is refused already.
        assert!(fits(&[max - 1], &mut lows));
        assert!(fits(&[-max], &mut lows));
        assert!(!fits(&[max], &mut lows));
        assert!(!fits(&[max - 1, 1], &mut lows), "two can overflow");
        assert!(!fits(&[max + 1], &mut lows), "past an i64");
        assert!(!fits(&[-max - 2], &mut lows), "past an i64");
        assert!(!fits(&[1 << 64], &mut lows));
        let quarter = (1i128 << 61) - 1;
        assert!(fits(&[quarter, -quarter], &mut lows));
        assert!(!fits(&[(quarter + 1) << 1, 0], &mut lows));
    }
}
