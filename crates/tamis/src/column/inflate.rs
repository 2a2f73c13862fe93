//! Page decompression with one codec per thread and codec kind, reused for every page.
//!
//! The `parquet` crate's page reader creates its codec when it is created, and tamis creates a
//! reader per chunk walk (dictionary, filter, each payload range): a Zstandard codec allocates
//! a compression and a decompression context each time (about 35 µs, 7% of TPC-H Q1 and 15%
//! of a lookup on a file of small pages). So the readers are given the chunk's metadata marked
//! uncompressed — they then hand pages on as stored — and the pages are decompressed here, with
//! the sizes from their headers, which the fetch path has already checked against the codec
//! and the memory budget (`pages::check_page_header`).
//!
//! The decompressed bytes go into buffers of earlier pages ([`crate::io::recycle`]), and the
//! `parquet` crate's Snappy codec zero-fills its output before writing it, so Snappy is
//! decompressed with `snap` directly, into the reused bytes (with the fresh-buffer page faults,
//! 15% of a scan of Snappy pages).
//!
//! With the `cpp-snappy` feature a chunk's Snappy pages may go to Google's C++ Snappy instead;
//! neither decoder wins on every page, so each chunk times both and keeps the faster
//! ([`SnappyChoice`]).

use std::cell::RefCell;

use parquet::basic::Compression;
use parquet::column::page::Page;
use parquet::compression::{create_codec, Codec, CodecOptions};

use crate::error::{Error, Result};
use crate::file::thrift_guard::PageSizes;
use crate::io::recycle;

thread_local! {
    static CODECS: RefCell<Vec<(Compression, Box<dyn Codec>)>> = const { RefCell::new(Vec::new()) };
}

/// `page`, read as stored from a chunk compressed with `codec`, decompressed to the
/// `uncompressed` bytes its header announces (`sizes`; `None` when the header could not be
/// read, which is then an error here rather than a guess). The checks are the `parquet`
/// crate's: a v2 page's level bytes stay as they are and its `is_compressed` flag is honoured;
/// the output must have exactly the announced size.
///
/// `snappy_choice` carries the chunk's choice of Snappy decoder from page to page.
///
/// With `exact`, a compressed page is decompressed into a buffer of its own, of
/// exactly its size, not a pooled one: the page cache keeps such a page without copying it
/// (the copy was a pass over every byte a cache miss keeps). The flag returned says whether
/// the page's buffer is such a one (an uncompressed page is handed on as it was read).
pub(super) fn inflate(
    mut page: Page,
    codec: Compression,
    sizes: Option<&PageSizes>,
    snappy_choice: &mut SnappyChoice,
    exact: bool,
) -> Result<(Page, bool)> {
    if codec == Compression::UNCOMPRESSED {
        return Ok((page, false));
    }
    let (buf, levels, compressed) = match &mut page {
        Page::DataPageV2 {
            buf,
            def_levels_byte_len,
            rep_levels_byte_len,
            is_compressed,
            ..
        } => {
            let levels =
                (*def_levels_byte_len as usize).saturating_add(*rep_levels_byte_len as usize);
            let compressed = std::mem::replace(is_compressed, false);
            (buf, levels, compressed)
        }
        Page::DataPage { buf, .. } | Page::DictionaryPage { buf, .. } => (buf, 0, true),
    };
    if !compressed {
        return Ok((page, false));
    }
    let sizes = sizes.ok_or_else(|| Error::corrupt("a page header that cannot be read"))?;
    let stored = usize::try_from(sizes.compressed).ok();
    let Ok(uncompressed) = usize::try_from(sizes.uncompressed) else {
        return Err(Error::corrupt("a negative uncompressed page size"));
    };
    if stored != Some(buf.len()) {
        return Err(Error::corrupt(format!(
            "the page holds {} bytes where its header announces {}",
            buf.len(),
            sizes.compressed
        )));
    }
    if levels > buf.len() || levels > uncompressed {
        return Err(Error::corrupt("a v2 page's levels run past the page"));
    }
    let mut out = match exact {
        true => Vec::with_capacity(uncompressed),
        false => recycle::take(uncompressed).unwrap_or_else(|| Vec::with_capacity(uncompressed)),
    };
    let written = if codec == Compression::SNAPPY {
        // Into bytes already written (no zero-filling but for a buffer that grows); only
        // `..uncompressed` is the page's.
        if out.len() < uncompressed {
            out.resize(uncompressed, 0);
        }
        out[..levels].copy_from_slice(&buf[..levels]);
        let values = &mut out[levels..uncompressed];
        // A page of only NULLs may have no values to decompress.
        let n = if values.is_empty() {
            0
        } else {
            snappy(&buf[levels..], values, snappy_choice)?
        };
        levels + n
    } else {
        out.clear();
        out.extend_from_slice(&buf[..levels]);
        if uncompressed > levels {
            with_codec(codec, |c| {
                c.decompress(&buf[levels..], &mut out, Some(uncompressed - levels))
            })??;
        }
        out.len()
    };
    if written != uncompressed {
        return Err(Error::corrupt(format!(
            "the page decompresses to {written} bytes where its header announces {uncompressed}"
        )));
    }
    // The page as stored, its bytes (and a v2 page's flag, above) now decompressed.
    *buf = match exact {
        // Exactly its size whatever the codec reserved (the cache weighs a page by its
        // length): a no-op for the codecs that write into the capacity given.
        true => {
            out.shrink_to_fit();
            bytes::Bytes::from(out)
        }
        false => recycle::bytes(out, uncompressed),
    };
    Ok((page, exact))
}

/// Which Snappy decoder a column chunk's pages go to. With the `cpp-snappy` feature, the
/// chunk's first two pages of at least [`TRIAL_BYTES`] are timed, the first with Google's C++
/// Snappy ([`crate::kernels::snappy`]), the second with `snap`, and its other pages go to the
/// faster per byte: neither wins everywhere (C++ Snappy built by clang decompressed the
/// `selectivity` suite's random int64 pages 17 % faster, `snap` the `dictsize` suite's
/// sequential ids 13 % faster). `TAMIS_SNAPPY=snap` or `=cpp` fixes the decoder (read once),
/// for comparisons. Without the feature, always `snap`.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(super) struct SnappyChoice(#[cfg(feature = "cpp-snappy")] Trial);

/// Pages smaller than this are not timed (a timer's resolution and one cache miss would
/// decide); they go to C++ Snappy until the chunk has chosen.
#[cfg(feature = "cpp-snappy")]
const TRIAL_BYTES: usize = 16 << 10;

#[cfg(feature = "cpp-snappy")]
#[derive(Debug, Default, Clone, Copy, PartialEq)]
enum Trial {
    /// No page timed yet: the next goes to C++ Snappy.
    #[default]
    Untimed,
    /// C++ Snappy took this many nanoseconds per output byte; the next page goes to `snap`.
    CppTimed(f64),
    Decided {
        cpp: bool,
    },
}

/// Decompresses the Snappy block `input` into `out`, returning the bytes written (the caller
/// checks they fill `out`), with the decoder `choice` names (see [`SnappyChoice`]).
#[cfg(feature = "cpp-snappy")]
fn snappy(input: &[u8], out: &mut [u8], choice: &mut SnappyChoice) -> Result<usize> {
    let forced = forced_snappy();
    let cpp = match (forced, choice.0) {
        (Some(cpp), _) | (None, Trial::Decided { cpp }) => cpp,
        (None, Trial::Untimed) => true,
        (None, Trial::CppTimed(_)) => false,
    };
    let timed =
        forced.is_none() && out.len() >= TRIAL_BYTES && !matches!(choice.0, Trial::Decided { .. });
    let start = timed.then(std::time::Instant::now);
    let written = if cpp {
        crate::kernels::snappy::decompress_exact(input, out)
            .map(|()| out.len())
            .ok_or_else(|| Error::corrupt("a Snappy page that cannot be read"))?
    } else {
        snap_decompress(input, out)?
    };
    if let Some(start) = start {
        let per_byte = start.elapsed().as_nanos() as f64 / out.len() as f64;
        choice.0 = match choice.0 {
            Trial::Untimed => Trial::CppTimed(per_byte),
            Trial::CppTimed(cpp_per_byte) => Trial::Decided {
                cpp: cpp_per_byte <= per_byte,
            },
            decided => decided,
        };
    }
    Ok(written)
}

/// Decompresses the Snappy block `input` into `out` with `snap` (the feature is off).
#[cfg(not(feature = "cpp-snappy"))]
fn snappy(input: &[u8], out: &mut [u8], _choice: &mut SnappyChoice) -> Result<usize> {
    snap_decompress(input, out)
}

fn snap_decompress(input: &[u8], out: &mut [u8]) -> Result<usize> {
    snap::raw::Decoder::new()
        .decompress(input, out)
        .map_err(|e| Error::corrupt(format!("a Snappy page that cannot be read: {e}")))
}

/// The decoder `TAMIS_SNAPPY` fixes: `snap` (false), `cpp` (true), else none (read once).
#[cfg(feature = "cpp-snappy")]
fn forced_snappy() -> Option<bool> {
    static FORCED: std::sync::OnceLock<Option<bool>> = std::sync::OnceLock::new();
    *FORCED.get_or_init(|| match std::env::var("TAMIS_SNAPPY").as_deref() {
        Ok("snap") => Some(false),
        Ok("cpp") => Some(true),
        _ => None,
    })
}

/// Runs `f` with this thread's codec for `codec`, made on first use.
fn with_codec<T>(codec: Compression, f: impl FnOnce(&mut dyn Codec) -> T) -> Result<T> {
    CODECS.with(|codecs| {
        let mut codecs = codecs.borrow_mut();
        let at = match codecs.iter().position(|(c, _)| *c == codec) {
            Some(at) => at,
            None => {
                let made = create_codec(codec, &CodecOptions::default())?
                    .ok_or_else(|| Error::internal(format!("no codec for {codec:?}")))?;
                codecs.push((codec, made));
                codecs.len() - 1
            }
        };
        Ok(f(codecs[at].1.as_mut()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use parquet::basic::{Encoding, GzipLevel, ZstdLevel};

    /// A page of a chunk of its own.
    fn inflate(page: Page, codec: Compression, sizes: Option<&PageSizes>) -> Result<Page> {
        super::inflate(page, codec, sizes, &mut SnappyChoice::default(), false).map(|(p, _)| p)
    }

    fn compress(codec: Compression, data: &[u8]) -> Vec<u8> {
        let mut c = create_codec(codec, &CodecOptions::default())
            .unwrap()
            .unwrap();
        let mut out = Vec::new();
        c.compress(data, &mut out).unwrap();
        out
    }

    fn sizes(compressed: usize, uncompressed: usize) -> PageSizes {
        PageSizes {
            header: 0,
            compressed: compressed as i64,
            uncompressed: uncompressed as i64,
        }
    }

    fn v1(buf: Vec<u8>) -> Page {
        Page::DataPage {
            buf: Bytes::from(buf),
            num_values: 3,
            encoding: Encoding::PLAIN,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        }
    }

    #[test]
    fn pages_of_every_codec_decompress_as_the_parquet_crate_would() {
        let data: Vec<u8> = (0..5000u32).flat_map(|i| (i % 97).to_le_bytes()).collect();
        for codec in [
            Compression::SNAPPY,
            Compression::GZIP(GzipLevel::default()),
            Compression::LZ4_RAW,
            Compression::ZSTD(ZstdLevel::default()),
            Compression::BROTLI(Default::default()),
        ] {
            // Twice: the second page reuses the thread's codec.
            for _ in 0..2 {
                let stored = compress(codec, &data);
                let s = sizes(stored.len(), data.len());
                let page = inflate(v1(stored.clone()), codec, Some(&s)).unwrap();
                assert_eq!(page.buffer().as_ref(), &data[..], "{codec:?}");
                // A v2 page: its level bytes are stored as they are, before the values.
                let mut v2 = b"LEVELS".to_vec();
                v2.extend_from_slice(&stored);
                let page = Page::DataPageV2 {
                    buf: Bytes::from(v2.clone()),
                    num_values: 3,
                    encoding: Encoding::PLAIN,
                    num_nulls: 0,
                    num_rows: 3,
                    def_levels_byte_len: 4,
                    rep_levels_byte_len: 2,
                    is_compressed: true,
                    statistics: None,
                };
                let page = inflate(page, codec, Some(&sizes(v2.len(), data.len() + 6))).unwrap();
                assert_eq!(&page.buffer()[..6], b"LEVELS");
                assert_eq!(&page.buffer()[6..], &data[..], "{codec:?}");
                // Sizes that disagree with the page are errors, never a guess.
                let short = sizes(stored.len(), data.len() - 1);
                assert!(inflate(v1(stored.clone()), codec, Some(&short)).is_err());
                let wrong = sizes(stored.len() + 1, data.len());
                assert!(inflate(v1(stored.clone()), codec, Some(&wrong)).is_err());
                assert!(inflate(v1(stored), codec, None).is_err());
            }
        }
    }

    /// A chunk's first two large Snappy pages go one to each decoder, timed; the rest to the
    /// one chosen. Every page decompresses exactly, whichever decoder has it; small pages are
    /// not timed.
    #[cfg(feature = "cpp-snappy")]
    #[test]
    fn a_chunk_times_both_snappy_decoders_then_keeps_one() {
        let data: Vec<u8> = (0..40_000u32).flat_map(|i| (i / 3).to_le_bytes()).collect();
        let stored = compress(Compression::SNAPPY, &data);
        let s = sizes(stored.len(), data.len());
        let mut choice = SnappyChoice::default();
        let mut seen = Vec::new();
        for _ in 0..4 {
            let page = super::inflate(
                v1(stored.clone()),
                Compression::SNAPPY,
                Some(&s),
                &mut choice,
                false,
            );
            assert_eq!(page.unwrap().0.buffer().as_ref(), &data[..]);
            seen.push(choice.0);
        }
        let small = &data[..1000];
        let stored_small = compress(Compression::SNAPPY, small);
        let s_small = sizes(stored_small.len(), small.len());
        let mut untouched = SnappyChoice::default();
        let page = super::inflate(
            v1(stored_small),
            Compression::SNAPPY,
            Some(&s_small),
            &mut untouched,
            false,
        );
        assert_eq!(page.unwrap().0.buffer().as_ref(), small);
        if forced_snappy().is_none() {
            assert!(
                matches!(seen[0], Trial::CppTimed(t) if t >= 0.0),
                "{seen:?}"
            );
            assert!(matches!(seen[1], Trial::Decided { .. }), "{seen:?}");
            assert_eq!(seen[1], seen[3]);
            assert_eq!(untouched, SnappyChoice::default());
        }
    }

    #[test]
    fn reused_buffers_hold_only_the_new_page() {
        // A large page of 0xFF bytes, dropped, then smaller and larger pages in its buffer: each
        // must read back exactly, with none of the old bytes past its end.
        for codec in [Compression::SNAPPY, Compression::ZSTD(ZstdLevel::default())] {
            for len in [40_000usize, 30_000, 20_001, 39_999, 41_000, 0, 7] {
                let big = vec![0xFFu8; 40_000];
                let stored = compress(codec, &big);
                drop(inflate(
                    v1(stored.clone()),
                    codec,
                    Some(&sizes(stored.len(), 40_000)),
                ));
                let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
                let stored = compress(codec, &data);
                let page = inflate(v1(stored.clone()), codec, Some(&sizes(stored.len(), len)));
                let page = page.unwrap();
                assert_eq!(page.buffer().as_ref(), &data[..], "{codec:?} {len}");
                // A stream shorter than announced is an error in a dirty buffer too.
                let more = sizes(stored.len(), len + 1);
                assert!(inflate(v1(stored), codec, Some(&more)).is_err());
            }
        }
    }

    #[test]
    fn a_dropped_page_lends_its_buffer_to_the_next() {
        let data = vec![7u8; 1_234_567];
        let stored = compress(Compression::SNAPPY, &data);
        let s = sizes(stored.len(), data.len());
        let first = inflate(v1(stored.clone()), Compression::SNAPPY, Some(&s)).unwrap();
        let at = first.buffer().as_ptr();
        drop(first);
        // Other tests share the pool, so look for the buffer among a few pages.
        let pages: Vec<Page> = (0..8)
            .map(|_| inflate(v1(stored.clone()), Compression::SNAPPY, Some(&s)).unwrap())
            .collect();
        assert!(pages.iter().any(|p| p.buffer().as_ptr() == at));
        assert!(pages.iter().all(|p| p.buffer().as_ref() == &data[..]));
    }

    #[test]
    fn an_exact_page_has_a_buffer_of_its_own_and_the_same_bytes() {
        let data: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for codec in [Compression::SNAPPY, Compression::ZSTD(Default::default())] {
            let stored = compress(codec, &data);
            let s = sizes(stored.len(), data.len());
            let mut choice = SnappyChoice::default();
            let (page, own) =
                super::inflate(v1(stored.clone()), codec, Some(&s), &mut choice, true).unwrap();
            assert!(own);
            assert_eq!(page.buffer(), &data[..]);
            let (pooled, own) =
                super::inflate(v1(stored), codec, Some(&s), &mut choice, false).unwrap();
            assert!(!own);
            assert_eq!(pooled.buffer(), &data[..]);
        }
        // Nothing to decompress: handed on as read, never called its own.
        let (page, own) = super::inflate(
            v1(data.clone()),
            Compression::UNCOMPRESSED,
            None,
            &mut SnappyChoice::default(),
            true,
        )
        .unwrap();
        assert!(!own);
        assert_eq!(page.buffer(), &data[..]);
    }

    #[test]
    fn uncompressed_v2_pages_and_empty_pages_pass_through() {
        let codec = Compression::SNAPPY;
        let page = Page::DataPageV2 {
            buf: Bytes::from_static(b"as stored"),
            num_values: 1,
            encoding: Encoding::PLAIN,
            num_nulls: 0,
            num_rows: 1,
            def_levels_byte_len: 0,
            rep_levels_byte_len: 0,
            is_compressed: false,
            statistics: None,
        };
        let out = inflate(page, codec, None).unwrap();
        assert_eq!(out.buffer().as_ref(), b"as stored");
        // A page of only NULLs: nothing to decompress.
        let empty = inflate(v1(Vec::new()), codec, Some(&sizes(0, 0))).unwrap();
        assert!(empty.buffer().is_empty());
    }
}
