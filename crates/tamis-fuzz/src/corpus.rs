//! Small valid files written by the `parquet` crate, together covering every encoding tamis
//! decodes, every codec, data pages v1 and v2, the page index, Bloom filters, nullable and list
//! columns: the seeds that the byte-flipping test and the fuzzer mutate.

use std::ops::Range;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BooleanArray, FixedSizeBinaryArray, Float32Array, Float64Array, Int32Array,
    Int64Array, ListArray, RecordBatch, StringArray,
};
use arrow::datatypes::{DataType, Field, Int32Type, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{BrotliLevel, Compression, Encoding, GzipLevel, ZstdLevel};
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaDataReader};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::schema::types::ColumnPath;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// How a file's columns are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// PLAIN everywhere, no dictionary.
    Plain,
    /// Dictionary pages, RLE_DICTIONARY (v2) or PLAIN_DICTIONARY (v1) data pages.
    Dictionary,
    /// DELTA_BINARY_PACKED integers, DELTA_LENGTH_BYTE_ARRAY strings, DELTA_BYTE_ARRAY
    /// fixed-length binary, RLE booleans, BYTE_STREAM_SPLIT floats.
    Delta,
    /// BYTE_STREAM_SPLIT for every type that has it, DELTA_BYTE_ARRAY strings, RLE booleans.
    Split,
}

pub const SCHEMES: [Scheme; 4] = [
    Scheme::Plain,
    Scheme::Dictionary,
    Scheme::Delta,
    Scheme::Split,
];

/// Every codec the `parquet` crate writes (LZ4 is the Hadoop framing, LZ4_RAW the raw one).
pub fn codecs() -> Vec<Compression> {
    vec![
        Compression::UNCOMPRESSED,
        Compression::SNAPPY,
        Compression::ZSTD(ZstdLevel::try_new(1).unwrap()),
        Compression::GZIP(GzipLevel::default()),
        Compression::LZ4,
        Compression::LZ4_RAW,
        Compression::BROTLI(BrotliLevel::try_new(1).unwrap()),
    ]
}

/// A column of the generated files, for predicates and projections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    I32,
    I64,
    F32,
    F64,
    Bool,
    Str,
    Fixed,
    List,
}

/// The generated files' columns.
pub const COLUMNS: [(&str, Kind); 8] = [
    ("i32", Kind::I32),
    ("i64", Kind::I64),
    ("f32", Kind::F32),
    ("f64", Kind::F64),
    ("b", Kind::Bool),
    ("s", Kind::Str),
    ("fx", Kind::Fixed),
    ("l", Kind::List),
];

/// One generated file and where its structures are, for targeted mutations.
#[derive(Debug, Clone)]
pub struct Sample {
    pub name: String,
    pub bytes: Vec<u8>,
    /// Offsets of page headers (dictionary and data pages, from the offset index).
    pub headers: Vec<usize>,
    /// The Thrift footer (without its length and magic).
    pub footer: Range<usize>,
    /// Column indexes, offset indexes and Bloom filters: from the first of them to the footer.
    pub metadata: Range<usize>,
}

pub const ROWS: usize = 240;

fn batch(seed: u64) -> RecordBatch {
    let mut rng = StdRng::seed_from_u64(seed);
    let n = ROWS;
    let words = [
        "apple", "apricot", "banana", "", "cherry", "it's", "naïve", "zz",
    ];
    let maybe = |rng: &mut StdRng, p: f64| !rng.random_bool(p);
    let i32s: Int32Array = (0..n)
        .map(|_| maybe(&mut rng, 0.1).then(|| rng.random_range(-50..50)))
        .collect();
    let i64s: Int64Array = (0..n as i64).map(|i| Some(i * 3 - 100)).collect();
    let f32s: Float32Array = (0..n)
        .map(|_| maybe(&mut rng, 0.1).then(|| rng.random_range(-10.0..10.0f32)))
        .collect();
    let f64s: Float64Array = (0..n)
        .map(|i| {
            Some(match i % 17 {
                0 => f64::NAN,
                1 => -0.0,
                _ => rng.random_range(-1e6..1e6),
            })
        })
        .collect();
    let bools: BooleanArray = (0..n)
        .map(|_| maybe(&mut rng, 0.2).then(|| rng.random_bool(0.3)))
        .collect();
    let strs: StringArray = (0..n)
        .map(|i| {
            maybe(&mut rng, 0.15)
                .then(|| format!("{}{}", words[rng.random_range(0..words.len())], i % 7))
        })
        .collect();
    let fixed = FixedSizeBinaryArray::try_from_iter(
        (0..n).map(|i| [(i % 5) as u8, (i / 7) as u8, rng.random::<u8>()]),
    )
    .unwrap();
    let lists = ListArray::from_iter_primitive::<Int32Type, _, _>((0..n).map(|i| {
        maybe(&mut rng, 0.1).then(|| {
            (0..i % 4)
                .map(|j| (j != 2).then_some((i * j) as i32))
                .collect::<Vec<_>>()
        })
    }));
    let schema = Arc::new(Schema::new(vec![
        Field::new("i32", DataType::Int32, true),
        Field::new("i64", DataType::Int64, false),
        Field::new("f32", DataType::Float32, true),
        Field::new("f64", DataType::Float64, false),
        Field::new("b", DataType::Boolean, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("fx", DataType::FixedSizeBinary(3), false),
        Field::new("l", lists.data_type().clone(), true),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(i32s),
        Arc::new(i64s),
        Arc::new(f32s),
        Arc::new(f64s),
        Arc::new(bools),
        Arc::new(strs),
        Arc::new(fixed),
        Arc::new(lists),
    ];
    RecordBatch::try_new(schema, columns).unwrap()
}

fn path(parts: &[&str]) -> ColumnPath {
    ColumnPath::new(parts.iter().map(|p| p.to_string()).collect())
}

/// Writes one file: `scheme`, `codec`, page version 2 if `v2`.
pub fn write(scheme: Scheme, codec: Compression, v2: bool, seed: u64) -> Sample {
    let batch = batch(seed);
    let mut props = WriterProperties::builder()
        .set_compression(codec)
        .set_writer_version(if v2 {
            WriterVersion::PARQUET_2_0
        } else {
            WriterVersion::PARQUET_1_0
        })
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_bloom_filter_enabled(true)
        .set_bloom_filter_max_ndv(64)
        .set_max_row_group_row_count(Some(ROWS / 2))
        .set_data_page_row_count_limit(40)
        .set_write_batch_size(16)
        .set_dictionary_enabled(scheme == Scheme::Dictionary);
    let item = path(&["l", "list", "item"]);
    let encodings: Vec<(ColumnPath, Encoding)> = match scheme {
        Scheme::Dictionary => vec![],
        Scheme::Plain => ["i32", "i64", "f32", "f64", "b", "s", "fx"]
            .iter()
            .map(|c| (path(&[c]), Encoding::PLAIN))
            .chain([(item, Encoding::PLAIN)])
            .collect(),
        Scheme::Delta => vec![
            (path(&["i32"]), Encoding::DELTA_BINARY_PACKED),
            (path(&["i64"]), Encoding::DELTA_BINARY_PACKED),
            (path(&["f32"]), Encoding::BYTE_STREAM_SPLIT),
            (path(&["f64"]), Encoding::BYTE_STREAM_SPLIT),
            (path(&["b"]), Encoding::RLE),
            (path(&["s"]), Encoding::DELTA_LENGTH_BYTE_ARRAY),
            (path(&["fx"]), Encoding::DELTA_BYTE_ARRAY),
            (item, Encoding::DELTA_BINARY_PACKED),
        ],
        Scheme::Split => vec![
            (path(&["i32"]), Encoding::BYTE_STREAM_SPLIT),
            (path(&["i64"]), Encoding::BYTE_STREAM_SPLIT),
            (path(&["f32"]), Encoding::BYTE_STREAM_SPLIT),
            (path(&["f64"]), Encoding::BYTE_STREAM_SPLIT),
            (path(&["b"]), Encoding::RLE),
            (path(&["s"]), Encoding::DELTA_BYTE_ARRAY),
            (path(&["fx"]), Encoding::BYTE_STREAM_SPLIT),
            (item, Encoding::BYTE_STREAM_SPLIT),
        ],
    };
    for (p, e) in encodings {
        props = props.set_column_encoding(p, e);
    }
    let mut bytes = Vec::new();
    let mut w = ArrowWriter::try_new(&mut bytes, batch.schema(), Some(props.build())).unwrap();
    // Uneven slices: pages and row groups end at odd places.
    let mut off = 0;
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
    while off < batch.num_rows() {
        let n = rng.random_range(1..70).min(batch.num_rows() - off);
        w.write(&batch.slice(off, n)).unwrap();
        off += n;
    }
    w.close().unwrap();
    let name = format!(
        "{}_{}_{}",
        format!("{scheme:?}").to_lowercase(),
        codec_name(codec),
        if v2 { "v2" } else { "v1" }
    );
    locate(name, bytes)
}

fn codec_name(c: Compression) -> &'static str {
    match c {
        Compression::UNCOMPRESSED => "uncompressed",
        Compression::SNAPPY => "snappy",
        Compression::ZSTD(_) => "zstd",
        Compression::GZIP(_) => "gzip",
        Compression::LZ4 => "lz4",
        Compression::LZ4_RAW => "lz4raw",
        Compression::BROTLI(_) => "brotli",
        _ => "other",
    }
}

/// Finds the page headers, footer and index structures of a valid file.
fn locate(name: String, bytes: Vec<u8>) -> Sample {
    let data = bytes::Bytes::from(bytes.clone());
    let meta = ParquetMetaDataReader::new()
        .with_page_index_policy(PageIndexPolicy::Required)
        .parse_and_finish(&data)
        .unwrap();
    let len = bytes.len();
    let footer_len = u32::from_le_bytes(bytes[len - 8..len - 4].try_into().unwrap()) as usize;
    let footer = len - 8 - footer_len..len - 8;
    let mut headers = Vec::new();
    let mut first_meta = footer.start;
    for (rg, g) in meta.row_groups().iter().enumerate() {
        for (c, col) in g.columns().iter().enumerate() {
            if let Some(d) = col.dictionary_page_offset() {
                headers.push(d as usize);
            }
            headers.push(col.data_page_offset() as usize);
            for o in [
                col.column_index_offset(),
                col.offset_index_offset(),
                col.bloom_filter_offset(),
            ]
            .into_iter()
            .flatten()
            {
                first_meta = first_meta.min(o as usize);
            }
            if let Some(oi) = meta.page_index().and_then(|p| p.offset_index(rg, c)) {
                headers.extend(oi.page_locations().iter().map(|p| p.offset as usize));
            }
        }
    }
    headers.sort_unstable();
    headers.dedup();
    Sample {
        name,
        bytes,
        headers,
        metadata: first_meta..footer.start,
        footer,
    }
}

/// The whole corpus: every scheme with every codec, page versions alternating so that each
/// scheme and each codec has both.
pub fn generate() -> Vec<Sample> {
    let mut out = Vec::new();
    for (i, &scheme) in SCHEMES.iter().enumerate() {
        for (j, codec) in codecs().into_iter().enumerate() {
            out.push(write(scheme, codec, (i + j) % 2 == 0, (i * 31 + j) as u64));
        }
    }
    out
}
