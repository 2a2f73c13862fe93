//! The fuzz targets. Each takes a seeded RNG, builds one input, runs tamis on it and returns
//! the input (for the crash directory) with the verdict: `Err` for a panic, an internal error,
//! an unclean error or more than the budget live at the peak.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use parquet::basic::{Encoding, Type as PhysicalType};
use parquet::data_type::{
    BoolType, ByteArray, ByteArrayType, DataType, DoubleType, FixedLenByteArray,
    FixedLenByteArrayType, FloatType, Int32Type, Int64Type,
};
use parquet::encodings::encoding::get_encoder;
use parquet::encodings::rle::RleEncoder;
use parquet::schema::types::{ColumnDescriptor, ColumnPath, Type as SchemaType};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::Rng;
use tamis::budget::Budget;
use tamis::encoding::{bitpack, decode_values, dictionary, rle};
use tamis::index::page_bloom::PageBlooms;
use tamis::index::{puffin, Sidecar};
use tamis::selection::Bitmap;

use crate::corpus::{self, Sample};
use crate::mutate::{self, interesting};
use crate::predicate;
use crate::{alloc, check_scan, judge_error, panic_message, Request, Stage};

/// The targets by name, in the order `--target all` runs them.
pub const NAMES: [&str; 5] = ["file", "footer", "decoders", "sidecar", "predicate"];

/// Memory limit given to scans and decoders, and the peak allowed above it (decoded pages,
/// Arrow arrays, metadata, the allocator's own slack).
pub const MEMORY_LIMIT: usize = 16 << 20;
pub const BUDGET: usize = 64 << 20;

/// Where each input is written just before it runs (`current-<target>`), so that an abort
/// (stack overflow, an allocation over the cap) leaves it behind; unset, nothing is written.
static KEEP_CURRENT: OnceLock<PathBuf> = OnceLock::new();

pub fn keep_current_in(dir: &Path) {
    let _ = KEEP_CURRENT.set(dir.to_path_buf());
}

fn publish(target: &str, input: &[u8]) {
    if let Some(dir) = KEEP_CURRENT.get() {
        let _ = std::fs::write(dir.join(format!("current-{target}")), input);
    }
}

/// One input and what became of it.
pub struct Run {
    pub input: Vec<u8>,
    /// What else the input needs to reproduce (predicate, projection, decoder arguments).
    pub note: String,
    pub verdict: Result<(), String>,
}

/// Shared state: the corpus, a scratch directory, and the sidecar of one corpus file.
pub struct Fuzz {
    pub samples: Vec<Sample>,
    pub dir: tempfile::TempDir,
    sidecar: SidecarSeed,
}

struct SidecarSeed {
    data: PathBuf,
    bytes: Vec<u8>,
    rows: Vec<u64>,
    columns: usize,
    blobs: Vec<Vec<u8>>,
}

impl Fuzz {
    pub fn new() -> Fuzz {
        let samples = corpus::generate();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let sidecar = sidecar_seed(dir.path(), &samples[0]);
        Fuzz {
            samples,
            dir,
            sidecar,
        }
    }

    /// Runs target `name` once.
    pub fn run(&self, name: &str, rng: &mut StdRng) -> Run {
        match name {
            "file" => self.file(rng, false),
            "footer" => self.file(rng, true),
            "decoders" => decoders(rng),
            "sidecar" => self.sidecar(rng),
            "predicate" => self.predicate(rng),
            other => panic!("unknown target {other}"),
        }
    }

    /// A mutated corpus file scanned with a random predicate and projection; with `metadata`,
    /// the mutations land in the footer, page indexes and Bloom filters only, and the predicate
    /// is one those prune with.
    fn file(&self, rng: &mut StdRng, metadata: bool) -> Run {
        let s = self.samples.choose(rng).unwrap();
        let input = if metadata {
            let mut focused = s.clone();
            focused.headers.clear();
            mutate::mutate(rng, &focused, &self.samples)
        } else {
            mutate::mutate(rng, s, &self.samples)
        };
        let filter = if metadata {
            Some(
                [
                    "i64 = 200",
                    "i64 IN (5, 500)",
                    "s = 'apple3'",
                    "i32 > 40",
                    "i64 < -50",
                ]
                .choose(rng)
                .unwrap()
                .to_string(),
            )
        } else {
            rng.random_bool(0.7).then(|| predicate::predicate(rng, 2))
        };
        let req = Request {
            filter,
            select: predicate::projection(rng),
            memory_limit: Some(MEMORY_LIMIT),
            index_dir: None,
        };
        publish(if metadata { "footer" } else { "file" }, &input);
        let path = self.dir.path().join(format!("{}.parquet", s.name));
        std::fs::write(&path, &input).expect("write the mutated file");
        let verdict = check_scan(&path, &req, BUDGET).map(drop);
        Run {
            input,
            note: format!("{} {req:?}", s.name),
            verdict,
        }
    }

    /// A mutated sidecar: parsed directly, or scanned beside its data file.
    fn sidecar(&self, rng: &mut StdRng) -> Run {
        let seed = &self.sidecar;
        if rng.random_bool(0.3) && !seed.blobs.is_empty() {
            // A page Bloom blob past its checksum: decoded directly.
            let blob = seed.blobs.choose(rng).unwrap();
            let sample = Sample {
                name: "blob".into(),
                bytes: blob.clone(),
                headers: vec![0],
                footer: 0..0,
                metadata: 0..0,
            };
            let input = mutate::mutate(rng, &sample, std::slice::from_ref(&sample));
            let rows = if rng.random_bool(0.8) {
                seed.rows[0]
            } else {
                interesting(rng) as u64
            };
            publish("sidecar", &input);
            let verdict = guarded(|| {
                PageBlooms::decode(&input, rows)
                    .map(drop)
                    .or_else(|e| judge_error(Stage::Read, &e, "page Bloom filter blob"))
            });
            return Run {
                input,
                note: format!("PageBlooms::decode(rows {rows})"),
                verdict,
            };
        }
        let len = seed.bytes.len();
        let json_start = len.saturating_sub(8 + footer_len(&seed.bytes));
        let sample = Sample {
            name: "sidecar".into(),
            bytes: seed.bytes.clone(),
            headers: vec![4],
            footer: json_start..len.saturating_sub(8),
            metadata: 4..json_start,
        };
        let input = mutate::mutate(rng, &sample, std::slice::from_ref(&sample));
        publish("sidecar", &input);
        let verdict = if rng.random_bool(0.5) {
            guarded(|| {
                Sidecar::parse("fuzz.tamis.puffin", &input, &seed.rows, seed.columns)
                    .map(drop)
                    .or_else(|e| judge_error(Stage::Read, &e, "fuzz.tamis.puffin"))
            })
        } else {
            let side = self.dir.path().join("sidecars");
            std::fs::create_dir_all(&side).expect("sidecar directory");
            // Under the name tamis writes in an index directory, or the name older tamis wrote
            // (still read); a stale one under the other name is removed first.
            let data = tamis::io::FileRef::Local(seed.data.clone());
            let names = tamis::index::sidecar_refs(&data, Some(&side)).expect("sidecar names");
            let path = |r: &tamis::io::FileRef| match r {
                tamis::io::FileRef::Local(p) => p.clone(),
                _ => unreachable!("a local data file has local sidecars"),
            };
            let pick = rng.random_range(0..2);
            let _ = std::fs::remove_file(path(&names[1 - pick]));
            std::fs::write(path(&names[pick]), &input).expect("write the sidecar");
            let req = Request {
                filter: Some(
                    ["i64 = 200", "i64 IN (5, 7, 500)", "s = 'apple3'"]
                        .choose(rng)
                        .unwrap()
                        .to_string(),
                ),
                select: None,
                memory_limit: Some(MEMORY_LIMIT),
                index_dir: Some(side),
            };
            check_scan(&seed.data, &req, BUDGET).map(drop)
        };
        Run {
            input,
            note: "sidecar".into(),
            verdict,
        }
    }

    /// Predicate text through `Scan::filter`, then the scan if it binds.
    fn predicate(&self, rng: &mut StdRng) -> Run {
        let text = predicate::fragment(rng);
        publish("predicate", text.as_bytes());
        let req = Request {
            filter: Some(text.clone()),
            select: predicate::projection(rng),
            memory_limit: Some(MEMORY_LIMIT),
            index_dir: None,
        };
        let verdict = check_scan(&self.sidecar.data, &req, BUDGET).map(drop);
        Run {
            input: text.into_bytes(),
            note: format!("select {:?}", req.select),
            verdict,
        }
    }
}

impl Default for Fuzz {
    fn default() -> Self {
        Self::new()
    }
}

fn footer_len(bytes: &[u8]) -> usize {
    let n = bytes.len();
    bytes
        .get(n.saturating_sub(8)..n.saturating_sub(4))
        .map_or(0, |b| u32::from_le_bytes(b.try_into().unwrap()) as usize)
        .min(n.saturating_sub(8))
}

/// Writes `sample` into `dir` and builds its sidecar (`auto` indexes of `i64` and `s`).
fn sidecar_seed(dir: &Path, sample: &Sample) -> SidecarSeed {
    let data = dir.join("indexed.parquet");
    std::fs::write(&data, &sample.bytes).expect("write the indexed file");
    let out = dir.join("built");
    std::fs::create_dir_all(&out).unwrap();
    let reports = tamis::index::index_files(
        data.to_str().unwrap(),
        &Default::default(),
        &["i64".to_string(), "s".to_string()],
        // Auto: each column gets the kind its data favours, so the corpus holds both blob
        // kinds when the columns differ in sortedness.
        tamis::index::IndexOptions {
            kind: tamis::index::IndexKind::Auto,
            fpp: 0.05,
        },
        Some(&out),
    )
    .expect("index the corpus file");
    let bytes = std::fs::read(&reports[0].sidecar).expect("read the sidecar");
    let meta = puffin::read_footer(&bytes).expect("the sidecar's footer");
    let blobs = meta
        .blobs
        .iter()
        .map(|b| puffin::blob(&bytes, b).to_vec())
        .collect();
    let file = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&bytes::Bytes::from(sample.bytes.clone()))
        .unwrap();
    SidecarSeed {
        data,
        bytes,
        rows: file
            .row_groups()
            .iter()
            .map(|g| g.num_rows() as u64)
            .collect(),
        columns: file.file_metadata().schema_descr().num_columns(),
        blobs,
    }
}

/// Runs `f`, turning a panic into a failure and a peak over [`BUDGET`] into one too.
fn guarded(f: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    let base = alloc::reset_peak();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|p| Err(format!("panic: {}", panic_message(&*p))));
    let peak = alloc::peak_since(base);
    if r.is_ok() && peak > BUDGET {
        return Err(format!("peak allocation {} KiB over budget", peak >> 10));
    }
    r
}

// ── Decoders ────────────────────────────────────────────────────────────────────────────────

fn descr(physical: PhysicalType, type_length: usize) -> Arc<ColumnDescriptor> {
    let mut b = SchemaType::primitive_type_builder("c", physical);
    if physical == PhysicalType::FIXED_LEN_BYTE_ARRAY {
        b = b.with_length(type_length as i32);
    }
    Arc::new(ColumnDescriptor::new(
        Arc::new(b.build().unwrap()),
        0,
        0,
        ColumnPath::from("c"),
    ))
}

fn encode<T: DataType>(encoding: Encoding, d: &Arc<ColumnDescriptor>, v: &[T::T]) -> Vec<u8> {
    match get_encoder::<T>(encoding, d) {
        Ok(mut e) => {
            if e.put(v).is_err() {
                return Vec::new();
            }
            e.flush_buffer().map(|b| b.to_vec()).unwrap_or_default()
        }
        Err(_) => Vec::new(),
    }
}

/// Valid page bytes of `n` values (so that mutations start from something the decoder
/// accepts), or empty when the parquet crate has no encoder for the pair.
fn valid_page(
    rng: &mut StdRng,
    encoding: Encoding,
    physical: PhysicalType,
    tl: usize,
    n: usize,
) -> Vec<u8> {
    let d = descr(physical, tl.max(1));
    let small = |rng: &mut StdRng| rng.random_range(-1000i64..1000);
    match physical {
        PhysicalType::BOOLEAN => {
            let v: Vec<bool> = (0..n).map(|_| rng.random()).collect();
            if encoding == Encoding::RLE {
                let mut e = RleEncoder::new(1, 64);
                for &b in &v {
                    e.put(b as u64);
                }
                let body = e.consume();
                let mut out = (body.len() as u32).to_le_bytes().to_vec();
                out.extend(body);
                out
            } else {
                encode::<BoolType>(encoding, &d, &v)
            }
        }
        PhysicalType::INT32 => {
            let v: Vec<i32> = (0..n)
                .map(|_| {
                    if rng.random_bool(0.1) {
                        interesting(rng) as i32
                    } else {
                        small(rng) as i32
                    }
                })
                .collect();
            encode::<Int32Type>(encoding, &d, &v)
        }
        PhysicalType::INT64 => {
            let v: Vec<i64> = (0..n)
                .map(|_| {
                    if rng.random_bool(0.1) {
                        interesting(rng)
                    } else {
                        small(rng)
                    }
                })
                .collect();
            encode::<Int64Type>(encoding, &d, &v)
        }
        PhysicalType::FLOAT => {
            let v: Vec<f32> = (0..n).map(|_| rng.random()).collect();
            encode::<FloatType>(encoding, &d, &v)
        }
        PhysicalType::DOUBLE => {
            let v: Vec<f64> = (0..n).map(|_| rng.random()).collect();
            encode::<DoubleType>(encoding, &d, &v)
        }
        PhysicalType::BYTE_ARRAY => {
            let v: Vec<ByteArray> = (0..n)
                .map(|i| {
                    let len = rng.random_range(0..12);
                    let mut s = format!("v{}", i % 5).into_bytes();
                    s.extend((0..len).map(|_| rng.random::<u8>()));
                    ByteArray::from(s)
                })
                .collect();
            encode::<ByteArrayType>(encoding, &d, &v)
        }
        PhysicalType::FIXED_LEN_BYTE_ARRAY => {
            let v: Vec<FixedLenByteArray> = (0..n)
                .map(|_| {
                    FixedLenByteArray::from(ByteArray::from(
                        (0..tl.max(1))
                            .map(|_| rng.random::<u8>())
                            .collect::<Vec<u8>>(),
                    ))
                })
                .collect();
            encode::<FixedLenByteArrayType>(encoding, &d, &v)
        }
        PhysicalType::INT96 => (0..n * 12).map(|_| rng.random()).collect(),
    }
}

/// RLE/bit-packed hybrid codes (with the dictionary page's bit-width byte in front).
fn valid_codes(rng: &mut StdRng, n: usize, dict_len: usize) -> Vec<u8> {
    let width = (usize::BITS - dict_len.saturating_sub(1).leading_zeros()) as u8;
    let mut e = RleEncoder::new(width, 64);
    let mut c = 0u64;
    for _ in 0..n {
        if rng.random_bool(0.3) {
            c = rng.random_range(0..dict_len.max(1) as u64);
        }
        e.put(c);
    }
    let mut out = vec![width];
    out.extend(e.consume());
    out
}

fn random_bytes(rng: &mut StdRng) -> Vec<u8> {
    let n = [0, 1, 3, 8, 17, 64, 300, 4096][rng.random_range(0..8)];
    let mut v: Vec<u8> = (0..n).map(|_| rng.random()).collect();
    // Varint-rich prefixes reach past the first header checks.
    if rng.random_bool(0.5) {
        let mut head = Vec::new();
        for _ in 0..rng.random_range(1..5) {
            let mut u = interesting(rng) as u64;
            loop {
                let b = (u & 0x7f) as u8;
                u >>= 7;
                if u == 0 {
                    head.push(b);
                    break;
                }
                head.push(b | 0x80);
            }
        }
        head.extend(v);
        v = head;
    }
    v
}

/// Page bytes straight into one decoder entry point: the value decoders of every encoding and
/// type, dictionary codes (decode, check, filter, select), RLE and bit unpacking, with random
/// counts and bit widths.
fn decoders(rng: &mut StdRng) -> Run {
    use PhysicalType as T;
    let types = [
        T::BOOLEAN,
        T::INT32,
        T::INT64,
        T::INT96,
        T::FLOAT,
        T::DOUBLE,
        T::BYTE_ARRAY,
        T::FIXED_LEN_BYTE_ARRAY,
    ];
    let encodings = [
        Encoding::PLAIN,
        Encoding::RLE,
        Encoding::DELTA_BINARY_PACKED,
        Encoding::DELTA_LENGTH_BYTE_ARRAY,
        Encoding::DELTA_BYTE_ARRAY,
        Encoding::BYTE_STREAM_SPLIT,
        Encoding::RLE_DICTIONARY,
    ];
    let n = match rng.random_range(0..4) {
        0 => rng.random_range(0..4),
        1 | 2 => rng.random_range(0..300),
        _ => [1 << 16, 1 << 20, 1 << 24, 1 << 31][rng.random_range(0..4)],
    };
    let base_n = n.min(300);
    let physical = *types.choose(rng).unwrap();
    let encoding = *encodings.choose(rng).unwrap();
    let tl = [0usize, 1, 3, 4, 16, 1 << 20][rng.random_range(0..6)];
    let dict_len = [0usize, 1, 2, 5, 200, 1 << 16][rng.random_range(0..6)];
    let valid = if encoding == Encoding::RLE_DICTIONARY {
        valid_codes(rng, base_n, dict_len)
    } else {
        valid_page(rng, encoding, physical, tl, base_n)
    };
    let mut input = if valid.is_empty() || rng.random_bool(0.2) {
        random_bytes(rng)
    } else {
        let sample = Sample {
            name: "page".into(),
            bytes: valid,
            headers: vec![0],
            footer: 0..0,
            metadata: 0..0,
        };
        if rng.random_bool(0.2) {
            sample.bytes
        } else {
            mutate::mutate(rng, &sample, std::slice::from_ref(&sample))
        }
    };
    if input.is_empty() && rng.random_bool(0.5) {
        input.push(rng.random());
    }
    publish("decoders", &input);
    let limit = Budget::new(MEMORY_LIMIT);
    let what = rng.random_range(0..8);
    let note = format!(
        "call {what}, {encoding} {physical} type_length {tl}, {n} values, dictionary of {dict_len}"
    );
    // The code decoders take counts their callers have bounded and reserved (see
    // `tamis::budget`); the value decoders reserve their output themselves.
    let codes_n = n.min(1 << 20);
    let verdict = guarded(|| {
        let n_values = n;
        let n = codes_n;
        let result = match (encoding, what) {
            (Encoding::RLE_DICTIONARY, 0..=1) => {
                let mut out = Vec::new();
                dictionary::decode_codes(&input, n, dict_len, &mut out)
            }
            (Encoding::RLE_DICTIONARY, 2) => dictionary::check_codes(&input, n, dict_len),
            (Encoding::RLE_DICTIONARY, 3) => {
                let matches = Bitmap::from_bools(
                    &(0..dict_len)
                        .map(|_| rng.random_bool(0.5))
                        .collect::<Vec<_>>(),
                );
                dictionary::filter_codes(&input, n, dict_len, &matches).map(drop)
            }
            (Encoding::RLE_DICTIONARY, 4) => {
                dictionary::filter_single_code(&input, n, dict_len, rng.random_range(0..4))
                    .map(drop)
            }
            (Encoding::RLE_DICTIONARY, 5 | 6) => {
                let selected =
                    Bitmap::from_bools(&(0..n).map(|_| rng.random_bool(0.3)).collect::<Vec<_>>());
                if what == 5 {
                    let mut out = Vec::new();
                    dictionary::select_codes(&input, n, dict_len, &selected, &mut out)
                } else {
                    let matches = Bitmap::from_bools(
                        &(0..dict_len)
                            .map(|_| rng.random_bool(0.5))
                            .collect::<Vec<_>>(),
                    );
                    dictionary::filter_selected_codes(&input, n, dict_len, &matches, &selected)
                        .map(drop)
                }
            }
            (Encoding::RLE_DICTIONARY, _) => {
                let width = [0u8, 1, 7, 8, 13, 31, 32, 33, 64, 255][rng.random_range(0..10)];
                let mut out = Vec::new();
                if rng.random_bool(0.5) {
                    rle::decode_rle(&input, width, n, &mut out)
                } else {
                    bitpack::unpack(&input, width, n, &mut out)
                }
            }
            _ => decode_values(encoding, physical, tl, &input, n_values, &limit).map(drop),
        };
        result.or_else(|e| {
            // Decoders leave the place (file, column, page) to their callers: only the kind
            // and the one line are checked here.
            judge_error(Stage::Bind, &e, "").or_else(|why| {
                if why.starts_with("error does not name") {
                    Ok(())
                } else {
                    Err(why)
                }
            })
        })
    });
    Run {
        input,
        note,
        verdict,
    }
}
