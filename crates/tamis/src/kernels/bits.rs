//! Portable helpers shared by the kernels: bounded reads of packed codes and selection words.

/// Low `n` bits set (`n <= 64`).
#[inline(always)]
pub(crate) fn low_bits(n: usize) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// Selection word `g` restricted to the items `< n` (missing words read as 0).
#[inline(always)]
pub(crate) fn sel_word(sel: &[u64], g: usize, n: usize) -> u64 {
    let w = sel.get(g).copied().unwrap_or(0);
    w & low_bits(n.saturating_sub(g * 64))
}

/// Little-endian u64 from exactly 8 bytes.
#[inline(always)]
pub(crate) fn le64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}

/// The bytes of group `g` (64 codes of width `k`, `8k` bytes), zero-padded to `8k + 8` bytes so
/// any code can be read with one unaligned 8-byte load. Borrowed from `packed` when the slice is
/// long enough, copied into `pad` at the tail.
#[inline(always)]
pub(crate) fn group_bytes<'a>(
    packed: &'a [u8],
    k: usize,
    g: usize,
    pad: &'a mut [u8; 264],
) -> &'a [u8] {
    padded(packed, g * 8 * k, 8 * k + 8, pad)
}

/// `len` bytes of `packed` from `start`: borrowed when the slice is long enough, else copied
/// into `pad` (at least `len` bytes) and zero-padded.
#[inline(always)]
pub(crate) fn padded<'a>(
    packed: &'a [u8],
    start: usize,
    len: usize,
    pad: &'a mut [u8],
) -> &'a [u8] {
    if start + len <= packed.len() {
        &packed[start..start + len]
    } else {
        pad.fill(0);
        let avail = packed.len().saturating_sub(start).min(len);
        pad[..avail].copy_from_slice(&packed[start..start + avail]);
        &pad[..len]
    }
}
