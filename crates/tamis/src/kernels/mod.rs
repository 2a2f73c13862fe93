//! Bit-parallel kernels on encoded values: the only CPU-specific (and `unsafe`) code of tamis.
//!
//! The operators of selection pushdown (Li, Lu, Chandramouli, SIGMOD 2023):
//!
//! | kernel          | what it does                                                    | paper |
//! |-----------------|-----------------------------------------------------------------|-------|
//! | `select_unpack` | the selected k-bit codes of a bit-packed run, as `u32`          | §3    |
//! | `select_packed` | the selected codes, still packed (the paper's select)          | §3    |
//! | `transform`     | a result over selected items back onto all items (PDEP)         | §4.3  |
//! | `equal`         | packed levels equal to a literal → bitmap                       | §5.3  |
//! | `extend`        | one bit per record → one bit per level of the record            | §5.4  |
//! | `compress`      | keep the bits at the set positions of a mask (PEXT)             | §5.4  |
//!
//! [`scalar`] holds the reference implementations. The implementation is chosen once per
//! process from the CPU (and `TAMIS_FORCE_ISA=scalar|bmi2|avx512`); see [`kernels`].

pub mod scalar;

use std::sync::OnceLock;

/// An instruction-set path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// Portable code, any CPU.
    Scalar,
    /// BMI2 PEXT/PDEP (Intel since Haswell, AMD since Zen 3 in hardware).
    Bmi2,
    /// AVX-512 VBMI/VBMI2 fused unpack + compress (with BMI2 where it is faster).
    Avx512,
}

impl Isa {
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Bmi2 => "bmi2",
            Isa::Avx512 => "avx512",
        }
    }
}

/// One implementation of every kernel. All bitmaps are `u64` words, LSB first.
#[derive(Debug, Clone, Copy)]
pub struct Kernels {
    pub isa: Isa,
    /// `(packed, k, n, sel, out)`: append code `i < n` to `out` iff bit `i` of `sel` is set.
    /// `packed` holds at least `ceil(n * k / 8)` bytes, `sel` at least `ceil(n / 64)` words.
    pub select_unpack: fn(&[u8], u8, usize, &[u64], &mut Vec<u32>),
    /// `(packed, k, n, sel, out) -> count`: the selected codes, packed contiguously at width
    /// `k` into the empty `out`.
    pub select_packed: fn(&[u8], u8, usize, &[u64], &mut Vec<u64>) -> usize,
    /// `(filtered, select, out)`: PDEP of `filtered`'s bits into the set bits of `select`;
    /// `out.len() == select.len()`.
    pub transform: fn(&[u64], &[u64], &mut [u64]),
    /// `(packed, k, n, literal, out)`: bit `i` set iff level `i` equals `literal`;
    /// `out.len() >= ceil(n / 64)`.
    pub equal: fn(&[u8], u8, usize, u32, &mut [u64]),
    /// `(bits, mask, n, out)`: record bits extended to the levels of each record (`mask` marks
    /// record starts, bit 0 set).
    pub extend: fn(&[u64], &[u64], usize, &mut [u64]),
    /// `(bits, mask, n, out) -> count`: PEXT of `bits` by `mask` over `n` bits.
    pub compress: fn(&[u64], &[u64], usize, &mut Vec<u64>) -> usize,
}

/// The portable reference kernels.
pub const SCALAR: Kernels = Kernels {
    isa: Isa::Scalar,
    select_unpack: scalar::select_unpack,
    select_packed: scalar::select_packed,
    transform: scalar::transform,
    equal: scalar::equal,
    extend: scalar::extend,
    compress: scalar::compress,
};

/// The kernels for `isa`, if this CPU (and this build) supports it.
pub fn for_isa(isa: Isa) -> Option<&'static Kernels> {
    match isa {
        Isa::Scalar => Some(&SCALAR),
        _ => None,
    }
}

/// Every path this CPU supports, fastest last.
pub fn supported() -> Vec<Isa> {
    [Isa::Scalar, Isa::Bmi2, Isa::Avx512]
        .into_iter()
        .filter(|&i| for_isa(i).is_some())
        .collect()
}

/// The kernels of this process: `TAMIS_FORCE_ISA` if set (an unsupported or unknown value is
/// reported on stderr once and ignored), else the fastest path the CPU supports.
pub fn kernels() -> &'static Kernels {
    static CHOSEN: OnceLock<&'static Kernels> = OnceLock::new();
    CHOSEN.get_or_init(|| {
        if let Ok(forced) = std::env::var("TAMIS_FORCE_ISA") {
            let isa = match forced.trim().to_ascii_lowercase().as_str() {
                "scalar" => Some(Isa::Scalar),
                "bmi2" => Some(Isa::Bmi2),
                "avx512" => Some(Isa::Avx512),
                _ => None,
            };
            match isa.and_then(for_isa) {
                Some(k) => return k,
                None => eprintln!(
                    "tamis: TAMIS_FORCE_ISA={forced} is not supported here (supported: {}); \
                     using the default",
                    supported().iter().map(|i| i.name()).collect::<Vec<_>>().join(", ")
                ),
            }
        }
        let best = *supported().last().expect("scalar is always supported");
        for_isa(best).expect("supported")
    })
}
