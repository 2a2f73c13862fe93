//! The RLE/bit-packed hybrid (Parquet `RLE` encoding), used for levels, dictionary codes and
//! RLE booleans.
//!
//! A stream is a sequence of runs, each introduced by a ULEB128 header: an odd header is a
//! bit-packed run of `(header >> 1) * 8` values, an even header is `header >> 1` repetitions of one
//! value stored in `ceil(bit_width / 8)` little-endian bytes. Exposing whole runs lets callers
//! handle a repeated run once instead of once per value.

use super::bitpack;
use crate::error::{Error, Result};

/// One run of the hybrid encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run<'a> {
    /// `count` repetitions of `value`.
    Repeated { value: u32, count: usize },
    /// `count` values packed LSB-first in `data` (a multiple of 8 unless the data ended early, in
    /// which case it is the number of whole values the remaining bytes hold).
    BitPacked { data: &'a [u8], count: usize },
}

/// Iterates over the runs of a hybrid stream.
#[derive(Debug, Clone)]
pub struct RleDecoder<'a> {
    data: &'a [u8],
    pos: usize,
    bit_width: u8,
}

/// Reads a ULEB128 integer at `*pos`, advancing it; errors on truncation or more than 64 bits.
pub(crate) fn read_uleb128(data: &[u8], pos: &mut usize) -> Result<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *data
            .get(*pos)
            .ok_or_else(|| Error::corrupt("ULEB128 integer runs past the end of the data"))?;
        *pos += 1;
        let bits = (byte & 0x7f) as u64;
        if shift == 63 && bits > 1 {
            return Err(Error::corrupt("ULEB128 integer overflows 64 bits"));
        }
        value |= bits << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(Error::corrupt("ULEB128 integer is longer than 10 bytes"))
}

impl<'a> RleDecoder<'a> {
    /// A decoder over `data` for values of `bit_width` bits (must be at most 32, checked by
    /// `next_run`).
    pub fn new(data: &'a [u8], bit_width: u8) -> Self {
        RleDecoder {
            data,
            pos: 0,
            bit_width,
        }
    }

    /// Bytes read so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The next run, or `None` at the end of the data.
    pub fn next_run(&mut self) -> Result<Option<Run<'a>>> {
        if self.bit_width > 32 {
            return Err(Error::corrupt(format!(
                "RLE bit width {} is above 32",
                self.bit_width
            )));
        }
        if self.pos >= self.data.len() {
            return Ok(None);
        }
        let header = read_uleb128(self.data, &mut self.pos)?;
        let bw = self.bit_width as usize;
        let rest = self.data.get(self.pos..).unwrap_or_default();
        if header & 1 == 1 {
            let groups = usize::try_from(header >> 1)
                .map_err(|_| Error::corrupt("RLE bit-packed run length overflows"))?;
            let count = groups
                .checked_mul(8)
                .ok_or_else(|| Error::corrupt("RLE bit-packed run length overflows"))?;
            // Eight values of `bw` bits are exactly `bw` bytes.
            let bytes = groups
                .checked_mul(bw)
                .ok_or_else(|| Error::corrupt("RLE bit-packed run length overflows"))?;
            if bytes <= rest.len() {
                self.pos += bytes;
                return Ok(Some(Run::BitPacked {
                    data: &rest[..bytes],
                    count,
                }));
            }
            // Some writers stop a final run at the last byte they need; keep the whole values.
            let whole = rest.len() * 8 / bw;
            if whole == 0 {
                return Err(Error::corrupt(format!(
                    "RLE bit-packed run of {count} values needs {bytes} bytes, {} left",
                    rest.len()
                )));
            }
            self.pos = self.data.len();
            Ok(Some(Run::BitPacked {
                data: rest,
                count: whole,
            }))
        } else {
            let count = usize::try_from(header >> 1)
                .map_err(|_| Error::corrupt("RLE repeated run length overflows"))?;
            let width = bw.div_ceil(8);
            let bytes = rest.get(..width).ok_or_else(|| {
                Error::corrupt(format!(
                    "RLE repeated run value needs {width} bytes, {} left",
                    rest.len()
                ))
            })?;
            let value = bytes
                .iter()
                .rev()
                .fold(0u32, |acc, &b| (acc << 8) | b as u32);
            if bw < 32 && value >> bw != 0 {
                return Err(Error::corrupt(format!(
                    "RLE repeated value {value} does not fit in {bw} bits"
                )));
            }
            self.pos += width;
            Ok(Some(Run::Repeated { value, count }))
        }
    }
}

/// Most values in one bit-packed [`Span`]: a caller unpacks or tests a span in a fixed buffer.
pub const SPAN: usize = 1024;

/// A piece of a hybrid stream handed out by [`Runs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span<'a> {
    /// `count` (at least 1) repetitions of `value`, a value that fits the bit width.
    Repeated { value: u32, count: usize },
    /// `count` (1..=[`SPAN`]) values packed LSB-first; `data` holds at least
    /// `ceil(count * bit_width / 8)` bytes.
    Packed { data: &'a [u8], count: usize },
}

/// Exactly `num_values` values of a hybrid stream, in order, as [`Span`]s: the one walk over
/// runs that every reader of the encoding uses (levels, dictionary codes, RLE booleans), so
/// lengths are validated in one place.
///
/// A repeated run is clipped to the values still wanted; empty runs are skipped. A bit-packed
/// run is cut into spans of at most [`SPAN`] values, each starting on a byte of the run (eight
/// values of `w` bits are `w` bytes) and each checked to hold its values. Padding after the last
/// wanted value is ignored; data that ends before `num_values` values is an error.
#[derive(Debug, Clone)]
pub struct Runs<'a> {
    decoder: RleDecoder<'a>,
    num_values: usize,
    /// Values handed out so far.
    pos: usize,
    /// The rest of the current bit-packed run: its bytes and values.
    packed: (&'a [u8], usize),
}

impl<'a> Runs<'a> {
    pub fn new(data: &'a [u8], bit_width: u8, num_values: usize) -> Self {
        Runs {
            decoder: RleDecoder::new(data, bit_width),
            num_values,
            pos: 0,
            packed: (&[], 0),
        }
    }

    pub fn bit_width(&self) -> u8 {
        self.decoder.bit_width
    }

    /// The next span and the index of its first value, or `None` after `num_values` values.
    #[allow(clippy::should_implement_trait)] // fallible: `Result<Option<_>>`, not an Iterator
    pub fn next(&mut self) -> Result<Option<(usize, Span<'a>)>> {
        loop {
            let wanted = self.num_values - self.pos;
            if wanted == 0 {
                return Ok(None);
            }
            let (bytes, left) = self.packed;
            if left > 0 {
                let bw = self.decoder.bit_width as usize;
                let count = left.min(SPAN).min(wanted);
                let need = (count * bw).div_ceil(8);
                let data = bytes.get(..need).ok_or_else(|| {
                    Error::corrupt(format!(
                        "RLE bit-packed run holds {} bytes for {count} values of {bw} bits",
                        bytes.len()
                    ))
                })?;
                // A whole span of SPAN values ends on a byte; a shorter one is the last taken.
                let used = (count / 8 * bw).min(bytes.len());
                self.packed = (&bytes[used..], left - count);
                let first = self.pos;
                self.pos += count;
                return Ok(Some((first, Span::Packed { data, count })));
            }
            match self.decoder.next_run()? {
                None => {
                    return Err(Error::corrupt(format!(
                        "RLE data ends after {} of {} values",
                        self.pos, self.num_values
                    )))
                }
                Some(Run::Repeated { value, count }) => {
                    let count = count.min(wanted);
                    if count > 0 {
                        let first = self.pos;
                        self.pos += count;
                        return Ok(Some((first, Span::Repeated { value, count })));
                    }
                }
                Some(Run::BitPacked { data, count }) => self.packed = (data, count),
            }
        }
    }
}

/// Appends exactly `num_values` values of the hybrid stream `data` to `out`.
///
/// Padding values at the end of the last bit-packed run are ignored; running out of data before
/// `num_values` is an error.
pub fn decode_rle(data: &[u8], bit_width: u8, num_values: usize, out: &mut Vec<u32>) -> Result<()> {
    let mut runs = Runs::new(data, bit_width, num_values);
    while let Some((_, span)) = runs.next()? {
        match span {
            Span::Repeated { value, count } => out.resize(out.len() + count, value),
            Span::Packed { data, count } => bitpack::unpack(data, bit_width, count, out)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::encodings::rle::RleEncoder;
    use proptest::prelude::*;

    pub(crate) fn encode(values: &[u32], bit_width: u8) -> Vec<u8> {
        let mut enc = RleEncoder::new(bit_width, 64);
        for &v in values {
            enc.put(v as u64);
        }
        enc.consume()
    }

    fn mask(bit_width: u8) -> u32 {
        if bit_width == 32 {
            u32::MAX
        } else {
            (1u32 << bit_width) - 1
        }
    }

    /// Values with long runs as well as noise, so both run kinds appear.
    fn runs_strategy() -> impl Strategy<Value = (u8, Vec<u32>)> {
        (0u8..=32).prop_flat_map(|bw| {
            let runs = prop::collection::vec((any::<u32>(), 1usize..40, any::<bool>()), 0..20);
            (Just(bw), runs).prop_map(|(bw, runs)| {
                let m = mask(bw);
                let mut values = Vec::new();
                for (v, n, repeat) in runs {
                    for i in 0..n {
                        let x = if repeat {
                            v
                        } else {
                            v.wrapping_mul(i as u32 + 7)
                        };
                        values.push(x & m);
                    }
                }
                (bw, values)
            })
        })
    }

    proptest! {
        #[test]
        fn roundtrip_against_parquet_encoder((bw, values) in runs_strategy()) {
            let data = encode(&values, bw);
            let mut out = vec![1];
            decode_rle(&data, bw, values.len(), &mut out).unwrap();
            prop_assert_eq!(&out[1..], &values[..]);
            // Runs cover at least all values; their sum matches after truncation.
            let mut dec = RleDecoder::new(&data, bw);
            let mut total = 0;
            while let Some(run) = dec.next_run().unwrap() {
                total += match run { Run::Repeated { count, .. } | Run::BitPacked { count, .. } => count };
            }
            prop_assert!(total >= values.len());
            // Asking for more values than encoded fails (unless padding covers them).
            let mut out = Vec::new();
            if decode_rle(&data, bw, total + 1, &mut out).is_ok() {
                prop_assert!(false, "decoded past the end");
            }
        }

        /// The spans of `Runs` tile the wanted values in order, each packed span holds its bytes,
        /// starts on a byte of its run and is at most SPAN long, and together they are the values.
        #[test]
        fn spans_tile_the_values((bw, values) in runs_strategy(), cut in 0usize..5000) {
            let data = encode(&values, bw);
            let wanted = cut.min(values.len());
            let mut runs = Runs::new(&data, bw, wanted);
            let (mut next, mut got) = (0, Vec::new());
            while let Some((first, span)) = runs.next().unwrap() {
                prop_assert_eq!(first, next);
                match span {
                    Span::Repeated { value, count } => {
                        prop_assert!(count > 0);
                        got.extend(std::iter::repeat_n(value, count));
                        next += count;
                    }
                    Span::Packed { data, count } => {
                        prop_assert!((1..=SPAN).contains(&count));
                        prop_assert!(data.len() >= (count * bw as usize).div_ceil(8));
                        bitpack::unpack(data, bw, count, &mut got).unwrap();
                        next += count;
                    }
                }
            }
            prop_assert_eq!(next, wanted);
            prop_assert_eq!(&got[..], &values[..wanted]);
        }

        #[test]
        fn garbage_never_panics(bw in 0u8..=40, data in prop::collection::vec(any::<u8>(), 0..64), n in 0usize..1000) {
            let mut out = Vec::new();
            let _ = decode_rle(&data, bw, n, &mut out);
            let mut dec = RleDecoder::new(&data, bw);
            for _ in 0..100 {
                match dec.next_run() { Ok(Some(_)) => {}, _ => break }
            }
            let mut runs = Runs::new(&data, bw, n);
            for _ in 0..100 {
                match runs.next() { Ok(Some(_)) => {}, _ => break }
            }
        }
    }

    #[test]
    fn hand_built_runs() {
        // Repeated run of 5 x 3 (bw 2), then one bit-packed group of 0,1,2,3,0,1,2,3.
        let data = [10u8, 3, 3, 0b1110_0100, 0b1110_0100];
        let mut out = Vec::new();
        decode_rle(&data, 2, 13, &mut out).unwrap();
        assert_eq!(out, vec![3, 3, 3, 3, 3, 0, 1, 2, 3, 0, 1, 2, 3]);
        let mut out = Vec::new();
        decode_rle(&data, 2, 7, &mut out).unwrap();
        assert_eq!(out.len(), 7);
        let mut dec = RleDecoder::new(&data, 2);
        assert_eq!(
            dec.next_run().unwrap(),
            Some(Run::Repeated { value: 3, count: 5 })
        );
        assert_eq!(
            dec.next_run().unwrap(),
            Some(Run::BitPacked {
                data: &data[3..],
                count: 8
            })
        );
        assert_eq!(dec.next_run().unwrap(), None);
    }

    /// A bit-packed run longer than a span is cut into spans of SPAN values, each starting on
    /// the run's byte for its first value; a short final run ends the walk early.
    #[test]
    fn long_packed_runs_are_cut_into_spans() {
        let values: Vec<u32> = (0..5000u32)
            .map(|i| i.wrapping_mul(2654435761) & 0x7f)
            .collect();
        let data = encode(&values, 7);
        let mut runs = Runs::new(&data, 7, 3000);
        let mut counts = Vec::new();
        let mut got = Vec::new();
        while let Some((first, span)) = runs.next().unwrap() {
            let Span::Packed { data, count } = span else {
                panic!("noise encodes as bit-packed runs")
            };
            assert_eq!(first, got.len());
            counts.push(count);
            bitpack::unpack(data, 7, count, &mut got).unwrap();
        }
        assert_eq!(got, values[..3000]);
        assert!(
            counts.iter().all(|&c| c <= SPAN) && counts.len() >= 3,
            "{counts:?}"
        );
        // Data cut short: the walk errors where the values run out, naming the count.
        let mut runs = Runs::new(&data[..data.len() / 2], 7, 5000);
        let e = loop {
            match runs.next() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("half the data cannot hold every value"),
                Err(e) => break e,
            }
        };
        assert!(
            e.message.contains("of 5000 values") || e.message.contains("bytes for"),
            "{}",
            e.message
        );
    }

    #[test]
    fn bad_input() {
        let mut out = Vec::new();
        // Empty data, values wanted.
        assert!(decode_rle(&[], 3, 1, &mut out).is_err());
        // Zero values from empty data is fine.
        decode_rle(&[], 3, 0, &mut out).unwrap();
        // Repeated value too wide for its bit width.
        assert!(decode_rle(&[2, 8], 3, 1, &mut out).is_err());
        // Repeated run with missing value byte.
        assert!(decode_rle(&[2], 3, 1, &mut out).is_err());
        // Bit-packed run with no bytes at all.
        assert!(decode_rle(&[3], 3, 1, &mut out).is_err());
        // Truncated bit-packed run keeps whole values only.
        let mut dec = RleDecoder::new(&[5, 0xff, 0xff], 8);
        assert_eq!(
            dec.next_run().unwrap(),
            Some(Run::BitPacked {
                data: &[0xff, 0xff],
                count: 2
            })
        );
        assert!(decode_rle(&[5, 0xff, 0xff], 8, 3, &mut out).is_err());
        // Unterminated and overlong ULEB128 headers.
        assert!(decode_rle(&[0x80], 1, 1, &mut out).is_err());
        assert!(decode_rle(&[0xff; 11], 1, 1, &mut out).is_err());
        // Huge header with tiny data.
        assert!(decode_rle(&[0xff, 0xff, 0xff, 0xff, 0x0f], 32, usize::MAX, &mut out).is_err());
        // Bit width above 32.
        assert!(decode_rle(&[2, 0], 33, 1, &mut out).is_err());
    }
}
