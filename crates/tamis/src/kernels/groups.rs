//! The passes of an aggregate over few groups: key values to codes, and counts and sums of
//! values by group (row `r` belongs to group `codes[r]`; codes at or past the number of
//! groups, a null's, are left out).
//!
//! A key column's values are coded by a pass per known value ([`code_equal`]), on the bits
//! of each value as two `u64` halves ([`split`]).
//!
//! Up to [`FEW`] groups take a pass over the rows each, comparing the code and adding the
//! value where it matches: no store a row waits on (adding into the group's slot row by row
//! waits on the previous row's store whenever two rows in a row share a group, as most of
//! TPC-H Q1's do) and no branch. Those passes are compiled twice, portable and with AVX-512
//! (eight codes compared and eight `i64`s added under a mask an instruction, against two at a
//! time on SSE2's baseline, which has no 64-bit compare). More groups add row by row.
//!
//! Every pass here is compiled both ways. The `unsafe` here: calling the AVX-512 build, which
//! runs only where the CPU has AVX-512 F and VL and `TAMIS_FORCE_ISA=scalar` is not set
//! ([`wide`]); [`split`] reads 128-bit values as `u64` halves ([`super::narrow`]).

/// Groups counted or summed by a pass each.
pub const FEW: usize = 8;

/// Whether this process runs the AVX-512 build. Read once.
pub fn wide() -> bool {
    super::avx512_builds()
}

/// `out[g]` = the rows in group `g`, for `g` below `groups` (codes at or past it are not
/// counted).
pub fn count_by_group(codes: &[u32], groups: usize, out: &mut Vec<u64>) {
    count_with(wide(), codes, groups, out)
}

/// `out[g]` = the sum of group `g`'s `values`, wrapped in 64 bits, for `g` below `groups`
/// (codes at or past it are not summed).
pub fn sum_by_group(codes: &[u32], values: &[i64], groups: usize, out: &mut Vec<i64>) {
    sum_with(wide(), codes, values, groups, out)
}

/// [`count_by_group`], with the AVX-512 build when `wide` (and the CPU has it: checked here
/// too).
pub fn count_with(wide: bool, codes: &[u32], groups: usize, out: &mut Vec<u64>) {
    out.clear();
    if groups > FEW {
        out.resize(groups + 1, 0);
        for &c in codes {
            out[(c as usize).min(groups)] += 1;
        }
        out.truncate(groups);
        return;
    }
    for g in 0..groups as u32 {
        #[cfg(target_arch = "x86_64")]
        if wide && crate::kernels::avx512_vl_detected() {
            // SAFETY: `count_avx512` only enables AVX-512 code generation; detected just above.
            out.push(unsafe { count_avx512(codes, g) });
            continue;
        }
        let _ = wide;
        out.push(count_body(codes, g));
    }
}

/// [`sum_by_group`], with the AVX-512 build when `wide` (and the CPU has it).
pub fn sum_with(wide: bool, codes: &[u32], values: &[i64], groups: usize, out: &mut Vec<i64>) {
    out.clear();
    let values = &values[..codes.len()];
    if groups > FEW {
        out.resize(groups + 1, 0);
        for (&c, &v) in codes.iter().zip(values) {
            let slot = &mut out[(c as usize).min(groups)];
            *slot = slot.wrapping_add(v);
        }
        out.truncate(groups);
        return;
    }
    for g in 0..groups as u32 {
        #[cfg(target_arch = "x86_64")]
        if wide && crate::kernels::avx512_vl_detected() {
            // SAFETY: `sum_avx512` only enables AVX-512 code generation; detected just above.
            out.push(unsafe { sum_avx512(codes, values, g) });
            continue;
        }
        let _ = wide;
        out.push(sum_body(codes, values, g));
    }
}

/// `out[r] = code` wherever row `r`'s value (`lo[r]`, and `hi[r]` or zero) is `value`; the
/// other rows keep theirs.
pub fn code_equal(lo: &[u64], hi: Option<&[u64]>, value: (u64, u64), code: u32, out: &mut [u32]) {
    code_equal_with(wide(), lo, hi, value, code, out)
}

/// [`code_equal`], with the AVX-512 build when `wide` (and the CPU has it).
pub fn code_equal_with(
    wide: bool,
    lo: &[u64],
    hi: Option<&[u64]>,
    value: (u64, u64),
    code: u32,
    out: &mut [u32],
) {
    #[cfg(target_arch = "x86_64")]
    if wide && crate::kernels::avx512_vl_detected() {
        // SAFETY: `code_equal_avx512` only enables AVX-512 code generation; detected just
        // above.
        return unsafe { code_equal_avx512(lo, hi, value, code, out) };
    }
    let _ = wide;
    code_equal_body(lo, hi, value, code, out)
}

/// `values`' low halves into `lo`; returns the largest of their low 32 bits and the OR of
/// their high halves (a view's length, and whether any value needs its high half).
pub fn split(values: &[u128], lo: &mut Vec<u64>) -> (u32, u64) {
    split_with(wide(), values, lo)
}

/// [`split`], with the AVX-512 build when `wide` (and the CPU has it).
pub fn split_with(wide: bool, values: &[u128], lo: &mut Vec<u64>) -> (u32, u64) {
    #[cfg(target_arch = "x86_64")]
    if wide && crate::kernels::avx512_vl_detected() {
        // SAFETY: `split_avx512` only enables AVX-512 code generation; detected just above.
        return unsafe { split_avx512(values, lo) };
    }
    let _ = wide;
    split_body(values, lo)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn code_equal_avx512(
    lo: &[u64],
    hi: Option<&[u64]>,
    value: (u64, u64),
    code: u32,
    out: &mut [u32],
) {
    code_equal_body(lo, hi, value, code, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn split_avx512(values: &[u128], lo: &mut Vec<u64>) -> (u32, u64) {
    split_body(values, lo)
}

#[inline(always)]
fn code_equal_body(lo: &[u64], hi: Option<&[u64]>, value: (u64, u64), code: u32, out: &mut [u32]) {
    let (v_lo, v_hi) = value;
    match hi {
        Some(hi) => {
            for (o, (l, h)) in out.iter_mut().zip(lo.iter().zip(hi)) {
                let hit = u32::from((*l == v_lo) & (*h == v_hi)).wrapping_neg();
                *o = (*o & !hit) | (code & hit);
            }
        }
        None if v_hi == 0 => {
            for (o, l) in out.iter_mut().zip(lo) {
                let hit = u32::from(*l == v_lo).wrapping_neg();
                *o = (*o & !hit) | (code & hit);
            }
        }
        // A value with a high half matches no row that has none.
        None => {}
    }
}

#[inline(always)]
fn split_body(values: &[u128], lo: &mut Vec<u64>) -> (u32, u64) {
    let (mut longest, mut high) = (0u32, 0u64);
    // Sized first and written in place: `extend` is not inlined into the AVX-512 build.
    // What the last batch left is overwritten, not zeroed first.
    lo.truncate(values.len());
    lo.resize(values.len(), 0);
    for (out, (l, h)) in lo.iter_mut().zip(super::narrow::halves(values)) {
        longest = longest.max(l as u32);
        high |= h;
        *out = l;
    }
    (longest, high)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn count_avx512(codes: &[u32], g: u32) -> u64 {
    count_body(codes, g)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn sum_avx512(codes: &[u32], values: &[i64], g: u32) -> i64 {
    sum_body(codes, values, g)
}

#[inline(always)]
fn count_body(codes: &[u32], g: u32) -> u64 {
    codes.iter().map(|&c| u64::from(c == g)).sum()
}

#[inline(always)]
fn sum_body(codes: &[u32], values: &[i64], g: u32) -> i64 {
    (codes.iter().zip(values)).fold(0i64, |s, (&c, &v)| {
        s.wrapping_add(if c == g { v } else { 0 })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use crate::kernels::avx512_paths as paths;

    /// The reference: a row at a time into its group's slot.
    fn reference(codes: &[u32], values: &[i64], groups: usize) -> (Vec<u64>, Vec<i64>) {
        let (mut counts, mut sums) = (vec![0u64; groups], vec![0i64; groups]);
        for (&c, &v) in codes.iter().zip(values) {
            if let Some(s) = sums.get_mut(c as usize) {
                *s = s.wrapping_add(v);
                counts[c as usize] += 1;
            }
        }
        (counts, sums)
    }

    fn check(codes: &[u32], values: &[i64], groups: usize) {
        let want = reference(codes, values, groups);
        for wide in paths() {
            let (mut counts, mut sums) = (Vec::new(), Vec::new());
            count_with(wide, codes, groups, &mut counts);
            sum_with(wide, codes, values, groups, &mut sums);
            assert_eq!((counts, sums), want, "wide {wide}, {groups} groups");
        }
    }

    proptest! {
        /// Few groups and many, codes past them (nulls), every length across vector widths,
        /// values that wrap.
        #[test]
        fn equals_a_row_at_a_time(
            groups in 0usize..12,
            rows in prop::collection::vec((0u32..14, any::<i64>()), 0..300),
            small in any::<bool>(),
        ) {
            let codes: Vec<u32> = rows.iter().map(|r| r.0).collect();
            let values: Vec<i64> = rows.iter().map(|r| if small { r.1 % 100 } else { r.1 }).collect();
            check(&codes, &values, groups);
        }
    }

    proptest! {
        /// The coding pass and the split against a row at a time, narrow and wide.
        #[test]
        fn codes_and_halves_equal_a_row_at_a_time(
            rows in prop::collection::vec((0u64..4, 0u64..3), 0..200),
            value in (0u64..4, 0u64..3),
            with_hi in any::<bool>(),
        ) {
            let lo: Vec<u64> = rows.iter().map(|r| r.0).collect();
            let hi: Vec<u64> = rows.iter().map(|r| r.1).collect();
            let hi = with_hi.then_some(hi.as_slice());
            let before: Vec<u32> = (0..rows.len() as u32).collect();
            let want: Vec<u32> = (0..rows.len())
                .map(|r| {
                    let h = hi.map_or(0, |h| h[r]);
                    if (lo[r], h) == value { 99 } else { before[r] }
                })
                .collect();
            let values: Vec<u128> = rows.iter().map(|&(l, h)| (u128::from(h) << 64) | u128::from(l << 40 | l)).collect();
            let longest = values.iter().map(|&v| v as u32).max().unwrap_or(0);
            let high = values.iter().fold(0, |o, &v| o | (v >> 64) as u64);
            for wide in paths() {
                let mut out = before.clone();
                code_equal_with(wide, &lo, hi, value, 99, &mut out);
                prop_assert_eq!(&out, &want);
                let mut halves = vec![7];
                prop_assert_eq!(split_with(wide, &values, &mut halves), (longest, high));
                prop_assert_eq!(halves, values.iter().map(|&v| v as u64).collect::<Vec<_>>());
            }
        }

    }

    #[test]
    fn edges() {
        check(&[], &[], 0);
        check(&[], &[], 3);
        check(&[0; 64], &[i64::MAX; 64], 1);
        check(&[u32::MAX, 0, 8, 9], &[1, 2, 3, 4], 9);
        let codes: Vec<u32> = (0..1000).map(|i| (i % 8) as u32).collect();
        let values: Vec<i64> = (0..1000).map(|i| i64::MIN + i).collect();
        check(&codes, &values, 8);
        // All rows one group, none in the others.
        check(&[3; 129], &[-1; 129], 8);
    }
}
