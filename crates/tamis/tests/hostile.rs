//! Hostile files: small files written byte by byte whose headers announce far more than they
//! hold. Each must end in a clean error (never a panic, never an internal error) and, measured by
//! this binary's counting global allocator, without allocating more than 64 MiB on the way.
//!
//! The files are built here from raw page bytes (page headers in Thrift compact encoding,
//! written by hand) and a footer the `parquet` crate serialises from metadata we construct, so
//! every count and offset is whatever the test says.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

use parquet::basic::{Compression, Encoding};
use parquet::file::metadata::{
    ColumnChunkMetaData, FileMetaData, ParquetMetaData, ParquetMetaDataWriter, RowGroupMetaData,
};
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::SchemaDescriptor;
use tamis::ErrorKind;

/// Counts live bytes and the peak since the last reset.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to `System` with the caller's arguments unchanged, so this
// allocator upholds `GlobalAlloc`'s contract exactly as `System` does; it only counts bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as received; the caller upholds `alloc`'s contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), SeqCst) + layout.size();
            PEAK.fetch_max(now, SeqCst);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through this allocator, with this `layout`.
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), SeqCst);
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as received; the caller upholds `alloc_zeroed`'s contract.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), SeqCst) + layout.size();
            PEAK.fetch_max(now, SeqCst);
        }
        p
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from `System` through this allocator with `layout`; the caller
        // upholds `realloc`'s contract for `new_size`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let now =
                    CURRENT.fetch_add(new_size - layout.size(), SeqCst) + new_size - layout.size();
                PEAK.fetch_max(now, SeqCst);
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, SeqCst);
            }
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Tests in this binary measure one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const MIB: usize = 1 << 20;

// ── Thrift compact encoding of page headers ─────────────────────────────────────────────────

fn varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// A Thrift struct of i32 fields and nested structs, fields in increasing id order.
enum Field {
    I32(i16, i32),
    Struct(i16, Vec<Field>),
}

fn thrift_struct(out: &mut Vec<u8>, fields: &[Field]) {
    let mut last = 0i16;
    for f in fields {
        let (id, ty) = match f {
            Field::I32(id, _) => (*id, 5u8),
            Field::Struct(id, _) => (*id, 12u8),
        };
        out.push((((id - last) as u8) << 4) | ty);
        last = id;
        match f {
            Field::I32(_, v) => varint(out, zigzag(*v as i64)),
            Field::Struct(_, inner) => thrift_struct(out, inner),
        }
    }
    out.push(0);
}

/// A data page v1 (uncompressed): header, then `body` (levels and values).
fn data_page(num_values: i32, encoding: Encoding, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    thrift_struct(
        &mut out,
        &[
            Field::I32(1, 0), // DATA_PAGE
            Field::I32(2, body.len() as i32),
            Field::I32(3, body.len() as i32),
            Field::Struct(
                5,
                vec![
                    Field::I32(1, num_values),
                    Field::I32(2, encoding_id(encoding)),
                    Field::I32(3, 3), // RLE definition levels
                    Field::I32(4, 3), // RLE repetition levels
                ],
            ),
        ],
    );
    out.extend_from_slice(body);
    out
}

/// A dictionary page (uncompressed).
fn dictionary_page(num_values: i32, encoding: Encoding, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    thrift_struct(
        &mut out,
        &[
            Field::I32(1, 2), // DICTIONARY_PAGE
            Field::I32(2, body.len() as i32),
            Field::I32(3, body.len() as i32),
            Field::Struct(
                7,
                vec![
                    Field::I32(1, num_values),
                    Field::I32(2, encoding_id(encoding)),
                ],
            ),
        ],
    );
    out.extend_from_slice(body);
    out
}

fn encoding_id(e: Encoding) -> i32 {
    match e {
        Encoding::PLAIN => 0,
        Encoding::PLAIN_DICTIONARY => 2,
        Encoding::RLE => 3,
        Encoding::DELTA_BINARY_PACKED => 5,
        Encoding::DELTA_BYTE_ARRAY => 7,
        Encoding::RLE_DICTIONARY => 8,
        other => panic!("no id for {other}"),
    }
}

// ── Files ───────────────────────────────────────────────────────────────────────────────────

/// How the footer describes the one column chunk.
struct Chunk {
    rows: i64,
    /// Dictionary page bytes (if any), then data page bytes.
    dictionary: Option<Vec<u8>>,
    pages: Vec<u8>,
    /// Overrides for the footer's offsets and size.
    data_page_offset: Option<i64>,
    compressed_size: Option<i64>,
}

/// A file of one row group and one column `x` of the given schema line.
fn build(column: &str, chunk: Chunk) -> Vec<u8> {
    let schema = Arc::new(SchemaDescriptor::new(Arc::new(
        parse_message_type(&format!("message m {{ {column} }}")).unwrap(),
    )));
    let mut file = b"PAR1".to_vec();
    let dict_offset = chunk.dictionary.as_ref().map(|_| file.len() as i64);
    if let Some(d) = &chunk.dictionary {
        file.extend_from_slice(d);
    }
    let data_offset = file.len() as i64;
    file.extend_from_slice(&chunk.pages);
    let size = file.len() as i64 - dict_offset.unwrap_or(data_offset);
    let cc = ColumnChunkMetaData::builder(schema.column(0))
        .set_encodings(vec![
            Encoding::PLAIN,
            Encoding::RLE,
            Encoding::RLE_DICTIONARY,
            Encoding::DELTA_BINARY_PACKED,
            Encoding::DELTA_BYTE_ARRAY,
        ])
        .set_compression(Compression::UNCOMPRESSED)
        .set_num_values(chunk.rows)
        .set_total_compressed_size(chunk.compressed_size.unwrap_or(size))
        .set_total_uncompressed_size(size)
        .set_data_page_offset(chunk.data_page_offset.unwrap_or(data_offset))
        .set_dictionary_page_offset(dict_offset)
        .build()
        .unwrap();
    let rg = RowGroupMetaData::builder(schema.clone())
        .set_num_rows(chunk.rows)
        .set_total_byte_size(size)
        .set_column_metadata(vec![cc])
        .build()
        .unwrap();
    let meta = ParquetMetaData::new(
        FileMetaData::new(1, chunk.rows, None, None, schema, None),
        vec![rg],
    );
    ParquetMetaDataWriter::new(&mut file, &meta)
        .finish()
        .unwrap();
    file
}

fn chunk(rows: i64, dictionary: Option<Vec<u8>>, pages: Vec<u8>) -> Chunk {
    Chunk {
        rows,
        dictionary,
        pages,
        data_page_offset: None,
        compressed_size: None,
    }
}

/// A DELTA_BINARY_PACKED stream of `n` values: `first`, then `first + d1`, then unchanged —
/// a first block of 21-bit deltas, then `block`-sized blocks of bit width 0 (two bytes each).
fn delta_stream(n: usize, block: usize, first: i64, d1: i64) -> Vec<u8> {
    let mut out = Vec::new();
    varint(&mut out, block as u64);
    varint(&mut out, 1);
    varint(&mut out, n as u64);
    varint(&mut out, zigzag(first));
    if n <= 1 {
        return out;
    }
    if d1 == 0 {
        for _ in 0..(n - 1).div_ceil(block) {
            varint(&mut out, 0);
            out.push(0);
        }
        return out;
    }
    // First block: deltas d1, 0, 0, … at 21 bits each (min delta min(d1, 0)).
    let min = d1.min(0);
    varint(&mut out, zigzag(min));
    out.push(21);
    let mut bits = Vec::with_capacity(block);
    bits.push((d1 - min) as u64);
    bits.resize(block, (-min) as u64);
    let mut acc = 0u128;
    let mut held = 0;
    for v in bits {
        acc |= (v as u128) << held;
        held += 21;
        while held >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            held -= 8;
        }
    }
    if held > 0 {
        out.push(acc as u8);
    }
    for _ in 1..(n - 1).div_ceil(block) {
        varint(&mut out, 0);
        out.push(0);
    }
    out
}

/// The crafted files: (name, file, filter, whether it is refused under the default limit too —
/// the others are well-formed files that merely need more than 32 MiB).
type Crafted = (&'static str, Vec<u8>, Option<&'static str>, bool);

fn crafted() -> Vec<Crafted> {
    let mut files = Vec::new();
    let required_i64 = "required int64 x;";
    let required_str = "required binary x (STRING);";

    // DELTA_BYTE_ARRAY: a 64 KiB value, then a million values each copying it as their prefix
    // (64 GB of output from 80 KB of page).
    {
        let n = 1_000_000usize;
        let big = 64 << 10;
        let mut body = delta_stream(n, 128, 0, big as i64);
        body.extend(delta_stream(n, 128, big as i64, -(big as i64)));
        body.extend(std::iter::repeat_n(b'x', big));
        let page = data_page(n as i32, Encoding::DELTA_BYTE_ARRAY, &body);
        files.push((
            "delta_byte_array_prefixes",
            build(required_str, chunk(n as i64, None, page)),
            None,
            true,
        ));
    }
    // A dictionary of one 64 KiB string and a million codes of bit width 0 (one RLE run of two
    // bytes): the gather would be 64 GB.
    {
        let n = 1_000_000i32;
        let big = 64 << 10;
        let mut dict = (big as u32).to_le_bytes().to_vec();
        dict.extend(std::iter::repeat_n(b'y', big));
        let mut codes = vec![0u8]; // bit width 0
        varint(&mut codes, (n as u64) << 1);
        files.push((
            "dictionary_string_gather",
            build(
                required_str,
                chunk(
                    n as i64,
                    Some(dictionary_page(1, Encoding::PLAIN, &dict)),
                    data_page(n, Encoding::RLE_DICTIONARY, &codes),
                ),
            ),
            None,
            true,
        ));
    }
    // A dictionary page announcing 2^30 entries, DELTA_BINARY_PACKED with bit width 0 (8 GiB
    // of INT64 from a dozen bytes); dictionary pages must be PLAIN.
    {
        let dict = delta_stream(1 << 30, 1 << 27, 7, 0);
        let mut codes = vec![1u8];
        varint(&mut codes, 8 << 1);
        codes.push(0);
        files.push((
            "dictionary_page_delta_width_0",
            build(
                required_i64,
                chunk(
                    8,
                    Some(dictionary_page(
                        1 << 30,
                        Encoding::DELTA_BINARY_PACKED,
                        &dict,
                    )),
                    data_page(8, Encoding::RLE_DICTIONARY, &codes),
                ),
            ),
            None,
            true,
        ));
    }
    // A PLAIN dictionary page announcing 2^30 INT64 entries in 8 bytes.
    {
        let mut codes = vec![1u8];
        varint(&mut codes, 8 << 1);
        codes.push(0);
        files.push((
            "dictionary_page_count",
            build(
                required_i64,
                chunk(
                    8,
                    Some(dictionary_page(
                        1 << 30,
                        Encoding::PLAIN,
                        &7i64.to_le_bytes(),
                    )),
                    data_page(8, Encoding::RLE_DICTIONARY, &codes),
                ),
            ),
            None,
            true,
        ));
    }
    // DELTA_BINARY_PACKED data page, bit width 0, 2^24 values in 2^27-value blocks: 128 MiB of
    // INT64 (plus scratch) from 30 bytes.
    {
        let n = 1usize << 24;
        let page = data_page(
            n as i32,
            Encoding::DELTA_BINARY_PACKED,
            &delta_stream(n, 1 << 27, 1, 0),
        );
        files.push((
            "delta_binary_packed_width_0",
            build(required_i64, chunk(n as i64, None, page)),
            None,
            false,
        ));
    }
    // RLE dictionary codes, bit width 0, one run of 2^24: 64 MiB of codes, 128 MiB of values.
    {
        let n = 1i32 << 24;
        let mut codes = vec![0u8];
        varint(&mut codes, (n as u64) << 1);
        files.push((
            "rle_run_width_0",
            build(
                required_i64,
                chunk(
                    n as i64,
                    Some(dictionary_page(1, Encoding::PLAIN, &7i64.to_le_bytes())),
                    data_page(n, Encoding::RLE_DICTIONARY, &codes),
                ),
            ),
            None,
            false,
        ));
    }
    // Negative offsets and sizes in the footer (the parquet crate asserts on them).
    for (name, offset, size) in [
        ("negative_data_page_offset", Some(-4), None),
        ("negative_compressed_size", None, Some(-100)),
    ] {
        let mut c = chunk(1, None, data_page(1, Encoding::PLAIN, &5i64.to_le_bytes()));
        c.data_page_offset = offset;
        c.compressed_size = size;
        files.push((name, build(required_i64, c), None, true));
    }
    files
}

/// What one scan of a crafted file did.
struct Outcome {
    result: tamis::Result<usize>,
    peak: usize,
}

fn scan(path: &str, filter: Option<&str>, limit: Option<usize>) -> Outcome {
    let base = CURRENT.load(SeqCst);
    PEAK.store(base, SeqCst);
    let run = || -> tamis::Result<usize> {
        let mut scan = tamis::Scan::open(path)?.threads(1);
        if let Some(f) = filter {
            scan = scan.filter(f)?;
        }
        if let Some(l) = limit {
            scan = scan.memory_limit(l);
        }
        let mut rows = 0;
        for b in scan.batches()? {
            rows += b?.num_rows();
        }
        Ok(rows)
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
        .unwrap_or_else(|_| panic!("{path}: tamis panicked"));
    Outcome {
        result,
        peak: PEAK.load(SeqCst).saturating_sub(base),
    }
}

/// Every crafted file is a clean error under a 32 MiB memory limit, peaking under 64 MiB; the
/// ones that announce more than the default limit (4 GiB) are refused under the default too.
#[test]
fn crafted_files_fail_cleanly_within_64_mib() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut report = Vec::new();
    for (name, bytes, filter, beyond_default) in crafted() {
        assert!(bytes.len() < 200 << 10, "{name} is {} bytes", bytes.len());
        let path = dir.path().join(format!("{name}.parquet"));
        std::fs::write(&path, &bytes).unwrap();
        let p = path.to_str().unwrap();
        let limits = if beyond_default {
            vec![Some(32 * MIB), None]
        } else {
            vec![Some(32 * MIB)]
        };
        for limit in limits {
            let out = scan(p, filter, limit);
            let e = match out.result {
                Ok(rows) => panic!("{name} (limit {limit:?}): read {rows} rows, expected an error"),
                Err(e) => e,
            };
            assert!(
                matches!(e.kind, ErrorKind::ResourceLimit | ErrorKind::CorruptFile),
                "{name} (limit {limit:?}): {:?} {e}",
                e.kind
            );
            let line = e.to_string();
            assert!(!line.contains('\n'), "{line}");
            assert!(line.contains(name), "the error names the file: {line}");
            if e.kind == ErrorKind::ResourceLimit {
                // Named down to the page (or the row group, for its bitmaps).
                assert!(line.contains("row group 0"), "{line}");
                assert!(
                    line.contains("column 'x'") || line.contains("bitmaps"),
                    "{line}"
                );
            }
            assert!(
                out.peak < 64 * MIB,
                "{name} (limit {limit:?}): peak allocation {} MiB: {line}",
                out.peak / MIB
            );
            report.push(format!(
                "{name:<32} limit {:<8} peak {:>6} KiB  {line}",
                limit.map_or("default".into(), |l| format!("{}MiB", l / MIB)),
                out.peak >> 10
            ));
        }
    }
    eprintln!("{}", report.join("\n"));
}

/// The specific errors, so a regression to a different path is visible.
#[test]
fn crafted_files_fail_for_the_right_reason() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let expect: &[(&str, Option<usize>, ErrorKind, &str)] = &[
        (
            "delta_byte_array_prefixes",
            None,
            ErrorKind::ResourceLimit,
            "DELTA_BYTE_ARRAY page",
        ),
        (
            "dictionary_string_gather",
            None,
            ErrorKind::ResourceLimit,
            "1000000 values looked up in a dictionary of 1 needs 65536000000 bytes",
        ),
        (
            "dictionary_page_delta_width_0",
            None,
            ErrorKind::CorruptFile,
            "dictionary pages are PLAIN",
        ),
        (
            "dictionary_page_count",
            None,
            ErrorKind::CorruptFile,
            "announces 1073741824 entries but its 8 bytes hold at most 1",
        ),
        (
            "delta_binary_packed_width_0",
            Some(32 * MIB),
            ErrorKind::ResourceLimit,
            "page 0: decoding 16777216 DELTA_BINARY_PACKED values",
        ),
        (
            "rle_run_width_0",
            Some(32 * MIB),
            ErrorKind::ResourceLimit,
            "16777216 dictionary codes",
        ),
        (
            "negative_data_page_offset",
            None,
            ErrorKind::CorruptFile,
            "negative data page offset -4",
        ),
        (
            "negative_compressed_size",
            None,
            ErrorKind::CorruptFile,
            "negative compressed size -100",
        ),
    ];
    let files = crafted();
    for &(name, limit, kind, text) in expect {
        let (_, bytes, filter, _) = files.iter().find(|f| f.0 == name).unwrap();
        let path = dir.path().join(format!("{name}.parquet"));
        std::fs::write(&path, bytes).unwrap();
        let e = scan(path.to_str().unwrap(), *filter, limit)
            .result
            .unwrap_err();
        assert_eq!(e.kind, kind, "{name}: {e}");
        assert!(e.to_string().contains(text), "{name}: {e}");
    }
    // A legitimately large (but well-formed) page is read under a limit that fits it.
    let (_, bytes, _, _) = files
        .iter()
        .find(|f| f.0 == "delta_binary_packed_width_0")
        .unwrap();
    let path = dir.path().join("fits.parquet");
    std::fs::write(&path, bytes).unwrap();
    let out = scan(path.to_str().unwrap(), Some("x = 1"), Some(1 << 30));
    assert_eq!(out.result.unwrap(), 1 << 24);
}

/// Codes past the dictionary are an error on every evaluation path, including those that need no
/// code (no entry matches, every entry matches) — before, those returned rows.
#[test]
fn out_of_range_codes_are_an_error_on_every_path() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    // Two entries (5, 6); eight codes 0..8 bit-packed at width 3.
    let mut dict = 5i64.to_le_bytes().to_vec();
    dict.extend(6i64.to_le_bytes());
    let mut codes = vec![3u8, 3]; // width 3, one bit-packed group of 8
    codes.extend([0b1000_1000, 0b1100_0110, 0b1111_1010]);
    let file = build(
        "required int64 x;",
        chunk(
            8,
            Some(dictionary_page(2, Encoding::PLAIN, &dict)),
            data_page(8, Encoding::RLE_DICTIONARY, &codes),
        ),
    );
    let path = dir.path().join("codes.parquet");
    std::fs::write(&path, file).unwrap();
    let p = path.to_str().unwrap();
    for filter in [
        None,
        Some("x = 99"),
        Some("x > 0"),
        Some("x = 5"),
        Some("x IN (5, 6)"),
    ] {
        let e = scan(p, filter, None).result.unwrap_err();
        assert_eq!(e.kind, ErrorKind::CorruptFile, "{filter:?}: {e}");
        assert!(
            e.to_string()
                .contains("dictionary code 7 out of range for dictionary of 2 entries"),
            "{filter:?}: {e}"
        );
    }
}
