//! Bit-parallel kernels on encoded values: the only CPU-specific (and `unsafe`) code of tamis.
//!
//! The operators of selection pushdown (Li, Lu, Chandramouli, SIGMOD 2023):
//!
//! | kernel          | what it does                                                    | paper |
//! |-----------------|-----------------------------------------------------------------|-------|
//! | `select_unpack` | the selected k-bit codes of a bit-packed run, as `u32`          | §3    |
//! | `select_packed` | the selected codes, still packed (the paper's select)          | §3    |
//! | `transform`     | a result over selected items back onto all items (PDEP)         | §4.3  |
//! | `equal`         | packed levels or codes equal to a literal → bitmap              | §5.3  |
//! | `extend`        | one bit per record → one bit per level of the record            | §5.4  |
//! | `compress`      | keep the bits at the set positions of a mask (PEXT)             | §5.4  |
//! | `lookup`        | packed dictionary codes → bitmap of `table[code]` (AVX-512 only)| T5    |
//! | `lookup_bits`   | the same for 9–16-bit codes against a bitset (AVX-512 gather)   | T5    |
//! | `equal_any_max` | 1–16-bit codes equal to any of a few literals, and the largest  | T5a   |
//! | `take_short`    | short dictionary strings by code → Arrow array ([`gather`])     | —     |
//! | [`pack`]        | a comparison per value → bitmap, compiled for AVX2 too          | —     |
//! | [`popcount`]    | set bits of bitmap words, compiled for `popcnt` too             | —     |
//! | [`key_probe`]   | join keys against a blocked Bloom filter (AVX-512 gather)       | T13   |
//! | [`groups`]      | codes, counts and sums of few groups, compiled for AVX-512 too  | —     |
//! | [`narrow`]      | `Decimal128` values that fit 64-bit lanes, AVX-512 build too    | —     |
//!
//! One more module holds `unsafe` code without being CPU-specific: `snappy` (the `cpp-snappy`
//! feature), the call into Google's C++ Snappy for Snappy pages.
//!
//! Paths, chosen once per process from the CPU (and `TAMIS_FORCE_ISA=scalar|bmi2|avx512`); see
//! [`kernels`] and [`describe`]:
//!
//! * [`scalar`]: the reference implementations, one bit or code at a time: the tests' oracle.
//! * `scalar` path ([`SCALAR`]): [`portable`] word-at-a-time kernels, every CPU and arch.
//! * `bmi2`: the paper's PDEP/PEXT kernels. Offered only where PDEP/PEXT are fast (Intel since
//!   Haswell, AMD since Zen 3; not Zen 1/2 or Hygon, which microcode them).
//! * `avx512`: a fused VBMI/VBMI2 unpack + compress `select_unpack` for `k <= 16`, an unpack +
//!   table `lookup` for `k <= 8` and an unpack + compare `equal` for `k <= 16` (none in the
//!   paper); the other kernels come from `bmi2` where it is offered, else from `scalar`.
//!
//! # The `bmi-select` cargo feature (on by default)
//!
//! A published patent application covers BMI-based selection pushdown (US 2024/0411756 A1).
//! Building without `bmi-select` compiles no PDEP/PEXT code at all: the `bmi2` module and table
//! are gone, and with them the PDEP/PEXT transform, equal, extend and compress. What remains is
//! `scalar` and the AVX-512 fused `select_unpack`. We keep the latter because it does not use the
//! technique the application describes: it neither extends a bitmap with PDEP nor extracts
//! packed codes with PEXT; it unpacks every code of a 64-code block inside vector registers and
//! filters the unpacked lanes with a byte/word compress, i.e. the long-known unpack-then-filter
//! done in SIMD registers. This is an engineering judgement, not legal advice: a distributor who
//! wants to be conservative can also avoid forcing `avx512`
//! (`TAMIS_FORCE_ISA=scalar`).

/// Whether the CPU has the x86-64 feature named by the literal `$f` (cached by std); false on
/// other architectures. For the modules compiled twice (`pack`, `popcount`).
macro_rules! x86_feature {
    ($f:tt) => {{
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!($f)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }};
}
pub(crate) use x86_feature;

/// Whether this process runs the AVX-512 builds of [`groups`] and [`narrow`]: the CPU has
/// AVX-512 F and VL and the kernels were not forced to the portable path. Read once.
pub fn avx512_builds() -> bool {
    static WIDE: OnceLock<bool> = OnceLock::new();
    *WIDE.get_or_init(|| !forced_scalar() && avx512_vl_detected())
}

/// Whether the CPU has AVX-512 F and VL (false on other architectures).
fn avx512_vl_detected() -> bool {
    x86_feature!("avx512f") && x86_feature!("avx512vl")
}

/// For the tests of [`groups`] and [`narrow`]: every build this CPU runs, portable (`false`)
/// and AVX-512 (`true`) where present.
#[cfg(test)]
fn avx512_paths() -> Vec<bool> {
    if avx512_vl_detected() {
        vec![false, true]
    } else {
        vec![false]
    }
}

#[cfg(target_arch = "x86_64")]
pub mod avx512;
mod bits;
#[cfg(all(target_arch = "x86_64", feature = "bmi-select"))]
pub mod bmi2;
pub mod gather;
pub mod groups;
pub mod key_probe;
pub mod narrow;
pub mod pack;
pub mod popcount;
pub mod portable;
pub mod scalar;
#[cfg(feature = "cpp-snappy")]
pub mod snappy;
#[cfg(test)]
mod tests;
pub mod views;

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

/// `select_packed`'s signature.
pub type SelectPackedFn = fn(&[u8], u8, usize, &[u64], &mut Vec<u64>) -> usize;

/// `lookup`'s signature (see [`Kernels::lookup`]).
pub type LookupFn = fn(&[u8], u8, usize, &[u8; 256], &mut [u64]) -> u32;

/// `lookup_bits`'s signature (see [`Kernels::lookup_bits`]).
pub type LookupBitsFn = fn(&[u8], u8, usize, &[u32], &mut [u64]) -> u32;

/// Most literals [`Kernels::equal_any_max`] compares with: past a few, a bitset lookup costs
/// less than a compare per literal.
pub const MAX_LITERALS: usize = 8;

/// `equal_any_max`'s signature (see [`Kernels::equal_any_max`]).
pub type EqualAnyMaxFn = fn(&[u8], u8, usize, &[u32], &mut [u64]) -> u32;

/// One implementation of every kernel. All bitmaps are `u64` words, LSB first.
#[derive(Debug, Clone, Copy)]
pub struct Kernels {
    pub isa: Isa,
    /// `(packed, k, n, sel, out)`: append code `i < n` to `out` iff bit `i` of `sel` is set.
    /// `packed` holds at least `ceil(n * k / 8)` bytes, `sel` at least `ceil(n / 64)` words.
    pub select_unpack: fn(&[u8], u8, usize, &[u64], &mut Vec<u32>),
    /// `(packed, k, n, sel, out) -> count`: the selected codes, packed contiguously at width
    /// `k` into the empty `out`.
    pub select_packed: SelectPackedFn,
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
    /// `(packed, k, n, table, out) -> max code`: bit `i` of `out` set iff `table[code_i] != 0`,
    /// for `k <= 8` (the first filter's test of dictionary codes, paper 000 T5); `out` has at
    /// least `ceil(n / 64)` words. `None` where unpacking to `u32` and testing a bitset is as
    /// fast (the portable and BMI2 paths).
    pub lookup: Option<LookupFn>,
    /// `(packed, k, n, bits, out) -> max code`: bit `i` of `out` set iff bit `code_i` of the
    /// bitset `bits` is, for `9 <= k <= 16` with `bits` holding at least `2^k` bits (other
    /// calls take the scalar reference); `out` as for `lookup`. `None` as for `lookup`.
    pub lookup_bits: Option<LookupBitsFn>,
    /// `(packed, k, n, literals, out) -> max code`: bit `i` of `out` set iff code `i` is one of
    /// 1 to [`MAX_LITERALS`] literals, each below `2^k`, for `1 <= k <= 16`; returns the
    /// largest of the `n` codes. For a few matching dictionary entries: compared directly, and
    /// the codes checked against the dictionary in the same pass. `out` as for `lookup`. `None`
    /// where the compare does not unpack the codes (the portable and BMI2 paths).
    pub equal_any_max: Option<EqualAnyMaxFn>,
}

/// The portable path (any CPU): word-at-a-time [`portable`] kernels where they exist, the
/// [`scalar`] reference for the rest (`select_packed`, `equal`, `extend`, which the scan uses
/// only on levels).
pub const SCALAR: Kernels = Kernels {
    isa: Isa::Scalar,
    select_unpack: portable::select_unpack,
    select_packed: scalar::select_packed,
    transform: portable::transform,
    equal: scalar::equal,
    extend: scalar::extend,
    compress: portable::compress,
    lookup: None,
    lookup_bits: None,
    equal_any_max: None,
};

/// The BMI2 table: the paper's PDEP/PEXT kernels for everything.
#[cfg(all(target_arch = "x86_64", feature = "bmi-select"))]
pub const BMI2: Kernels = Kernels {
    isa: Isa::Bmi2,
    select_unpack: bmi2::select_unpack,
    select_packed: bmi2::select_packed,
    transform: bmi2::transform,
    equal: bmi2::equal,
    extend: bmi2::extend,
    compress: bmi2::compress,
    lookup: None,
    lookup_bits: None,
    equal_any_max: None,
};

/// The AVX-512 table on a CPU with fast BMI2: fused select_unpack and equal for `k <= 16`, BMI2
/// for the rest.
#[cfg(all(target_arch = "x86_64", feature = "bmi-select"))]
pub const AVX512_BMI2: Kernels = Kernels {
    isa: Isa::Avx512,
    select_unpack: |p, k, n, s, o| avx512::select_unpack_with(bmi2::select_unpack, p, k, n, s, o),
    equal: |p, k, n, l, o| avx512::equal_with(bmi2::equal, 2, p, k, n, l, o),
    lookup: Some(avx512::lookup),
    lookup_bits: Some(avx512::lookup_bits),
    equal_any_max: Some(avx512::equal_any_max),
    ..BMI2
};

/// The AVX-512 table without BMI2 select (slow PDEP/PEXT, or built without `bmi-select`): fused
/// select_unpack and equal for `k <= 16`, the portable path for the rest.
#[cfg(target_arch = "x86_64")]
pub const AVX512_ALONE: Kernels = Kernels {
    isa: Isa::Avx512,
    select_unpack: |p, k, n, s, o| {
        avx512::select_unpack_with(portable::select_unpack, p, k, n, s, o)
    },
    equal: |p, k, n, l, o| avx512::equal_with(scalar::equal, 1, p, k, n, l, o),
    lookup: Some(avx512::lookup),
    lookup_bits: Some(avx512::lookup_bits),
    equal_any_max: Some(avx512::equal_any_max),
    ..SCALAR
};

/// What this CPU offers, read once.
#[derive(Debug, Clone)]
struct Cpu {
    /// CPUID vendor string and family (base + extended), e.g. `GenuineIntel` 6.
    vendor: String,
    family: u32,
    bmi2: bool,
    avx512: bool,
}

impl Cpu {
    fn detect() -> Cpu {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::__cpuid;
            let leaf0 = __cpuid(0);
            let mut vendor = Vec::with_capacity(12);
            for r in [leaf0.ebx, leaf0.edx, leaf0.ecx] {
                vendor.extend_from_slice(&r.to_le_bytes());
            }
            let eax = __cpuid(1).eax;
            let base = (eax >> 8) & 0xf;
            let family = if base == 0xf {
                base + ((eax >> 20) & 0xff)
            } else {
                base
            };
            Cpu {
                vendor: String::from_utf8_lossy(&vendor).into_owned(),
                family,
                bmi2: std::arch::is_x86_feature_detected!("bmi2")
                    && std::arch::is_x86_feature_detected!("bmi1")
                    && std::arch::is_x86_feature_detected!("popcnt"),
                avx512: avx512::detected(),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        Cpu {
            vendor: std::env::consts::ARCH.to_string(),
            family: 0,
            bmi2: false,
            avx512: false,
        }
    }

    fn get() -> &'static Cpu {
        static CPU: OnceLock<Cpu> = OnceLock::new();
        CPU.get_or_init(Cpu::detect)
    }

    /// BMI2 present and PDEP/PEXT implemented in hardware.
    fn fast_bmi2(&self) -> bool {
        self.bmi2 && pdep_is_fast(&self.vendor, self.family)
    }
}

/// Whether PDEP/PEXT run in hardware on a CPU of this vendor and family: AMD before Zen 3
/// (family 0x19) and Hygon (Zen 1 derived) microcode them at ~18 cycles per 1-bit of mask
/// population, slower than the scalar code.
fn pdep_is_fast(vendor: &str, family: u32) -> bool {
    match vendor {
        "AuthenticAMD" => family >= 0x19,
        "HygonGenuine" => false,
        _ => true,
    }
}

/// The kernels for `isa`, if this CPU (and this build) supports it.
pub fn for_isa(isa: Isa) -> Option<&'static Kernels> {
    let cpu = Cpu::get();
    match isa {
        Isa::Scalar => Some(&SCALAR),
        #[cfg(all(target_arch = "x86_64", feature = "bmi-select"))]
        Isa::Bmi2 if cpu.fast_bmi2() => Some(&BMI2),
        #[cfg(all(target_arch = "x86_64", feature = "bmi-select"))]
        Isa::Avx512 if cpu.avx512 && cpu.fast_bmi2() => Some(&AVX512_BMI2),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 if cpu.avx512 => Some(&AVX512_ALONE),
        _ => {
            let _ = cpu;
            None
        }
    }
}

/// Every path this CPU supports, fastest last.
pub fn supported() -> Vec<Isa> {
    [Isa::Scalar, Isa::Bmi2, Isa::Avx512]
        .into_iter()
        .filter(|&i| for_isa(i).is_some())
        .collect()
}

/// Parses `TAMIS_FORCE_ISA` (case and surrounding blanks ignored).
fn parse_isa(value: &str) -> Option<Isa> {
    match value.trim().to_ascii_lowercase().as_str() {
        "scalar" => Some(Isa::Scalar),
        "bmi2" => Some(Isa::Bmi2),
        "avx512" => Some(Isa::Avx512),
        _ => None,
    }
}

/// The path to use given `TAMIS_FORCE_ISA` (if set) and the supported paths (fastest last), with
/// the reason; an unknown or unsupported forced value falls back to the fastest, saying so.
fn choose(forced: Option<&str>, supported: &[Isa]) -> (Isa, String) {
    let best = *supported.last().unwrap_or(&Isa::Scalar);
    let names = supported
        .iter()
        .map(|i| i.name())
        .collect::<Vec<_>>()
        .join(", ");
    match forced.map(|f| (f, parse_isa(f))) {
        None => (best, format!("fastest of the supported paths ({names})")),
        Some((_, Some(isa))) if supported.contains(&isa) => (
            isa,
            format!("forced by TAMIS_FORCE_ISA (supported: {names})"),
        ),
        Some((f, _)) => (
            best,
            format!("TAMIS_FORCE_ISA={f} is unknown or not supported here; fastest of {names}"),
        ),
    }
}

/// Whether `TAMIS_FORCE_ISA` forced the portable kernels: the paths outside the table
/// ([`pack`], [`key_probe`]) then stay portable too.
pub fn forced_scalar() -> bool {
    kernels().isa == Isa::Scalar && std::env::var_os("TAMIS_FORCE_ISA").is_some()
}

/// The chosen table and why.
fn chosen() -> &'static (&'static Kernels, String) {
    static CHOSEN: OnceLock<(&'static Kernels, String)> = OnceLock::new();
    CHOSEN.get_or_init(|| {
        let forced = std::env::var("TAMIS_FORCE_ISA").ok();
        let (isa, why) = choose(forced.as_deref(), &supported());
        if forced.is_some() && !why.starts_with("forced") {
            eprintln!("tamis: {why}");
        }
        (for_isa(isa).unwrap_or(&SCALAR), why)
    })
}

/// The kernels of this process: `TAMIS_FORCE_ISA` if set (an unsupported or unknown value is
/// reported on stderr once and ignored), else the fastest path the CPU supports.
pub fn kernels() -> &'static Kernels {
    chosen().0
}

/// The kernel path of this process and why it was chosen, for `tamis explain`.
pub fn describe() -> String {
    let (k, why) = chosen();
    let cpu = Cpu::get();
    let mut notes = vec![format!("{} family {:#x}", cpu.vendor, cpu.family)];
    if cpu.bmi2 && !cpu.fast_bmi2() {
        notes.push("PDEP/PEXT are microcoded here, BMI2 path off".into());
    }
    if !cfg!(feature = "bmi-select") {
        notes.push("built without the bmi-select feature".into());
    }
    let detail = match k.isa {
        Isa::Scalar => "portable reference kernels",
        Isa::Bmi2 => "BMI2 PDEP/PEXT kernels",
        Isa::Avx512 if cfg!(feature = "bmi-select") && cpu.fast_bmi2() => {
            "AVX-512 VBMI2 fused select_unpack for k <= 16, BMI2 PDEP/PEXT for the rest"
        }
        Isa::Avx512 => "AVX-512 VBMI2 fused select_unpack for k <= 16, portable for the rest",
    };
    format!(
        "kernels: {} ({detail}); {why}; CPU {}",
        k.isa.name(),
        notes.join(", ")
    )
}

#[cfg(test)]
mod dispatch_tests {
    use super::*;

    #[test]
    fn parse_and_choose() {
        assert_eq!(parse_isa(" AVX512 "), Some(Isa::Avx512));
        assert_eq!(parse_isa("bmi2"), Some(Isa::Bmi2));
        assert_eq!(parse_isa("Scalar"), Some(Isa::Scalar));
        assert_eq!(parse_isa("sse2"), None);
        let all = [Isa::Scalar, Isa::Bmi2, Isa::Avx512];
        assert_eq!(choose(None, &all).0, Isa::Avx512);
        assert_eq!(choose(Some("scalar"), &all).0, Isa::Scalar);
        assert!(choose(Some("scalar"), &all).1.starts_with("forced"));
        assert_eq!(choose(Some("bmi2"), &[Isa::Scalar]).0, Isa::Scalar);
        assert!(choose(Some("bmi2"), &[Isa::Scalar])
            .1
            .contains("not supported"));
        assert_eq!(choose(Some("nonsense"), &all[..2]).0, Isa::Bmi2);
        assert_eq!(choose(None, &[]).0, Isa::Scalar);
    }

    #[test]
    fn microcoded_pdep_is_refused() {
        assert!(!pdep_is_fast("AuthenticAMD", 0x17)); // Zen 1, Zen 2
        assert!(!pdep_is_fast("AuthenticAMD", 0x15)); // Excavator
        assert!(!pdep_is_fast("HygonGenuine", 0x18));
        assert!(pdep_is_fast("AuthenticAMD", 0x19)); // Zen 3, Zen 4
        assert!(pdep_is_fast("AuthenticAMD", 0x1a)); // Zen 5
        assert!(pdep_is_fast("GenuineIntel", 6));
    }

    #[test]
    fn tables_and_description() {
        let s = supported();
        assert_eq!(s[0], Isa::Scalar);
        for isa in s {
            assert_eq!(for_isa(isa).unwrap().isa, isa);
        }
        assert!(describe().starts_with("kernels: "));
        assert_eq!(kernels().isa, chosen().0.isa);
    }
}
