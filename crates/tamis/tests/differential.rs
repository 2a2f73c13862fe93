//! Differential tests: tamis against the `parquet` crate's reader plus Arrow compute kernels,
//! over seeded random files (every flat type, nullability, cardinality and writer option) and
//! thousands of random predicates.
//!
//! Set `TAMIS_SEED` to change the base seed, `TAMIS_DIFF_FILES` / `TAMIS_DIFF_PREDICATES` for
//! a longer run.

mod common;

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::*;
use arrow::compute::kernels::cmp::{eq, gt, gt_eq, lt, lt_eq, neq};
use arrow::compute::kernels::comparison::{like, nlike};
use arrow::compute::{and_kleene, filter_record_batch, is_not_null, is_null, not, or_kleene};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use chrono::{DateTime, NaiveDate};
use parquet::arrow::ArrowWriter;
use parquet::basic::{BrotliLevel, Compression, Encoding, GzipLevel, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::schema::types::ColumnPath;
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};

use common::{diff_batches, norm64, normalize, oracle_read, project, tamis_scan, Req};
use tamis::{Evaluation, FilterOrder};

// ---------------------------------------------------------------------------------------------
// Column kinds and values

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
    Dec(u8, i8),
    Date,
    Ts(TimeUnit, bool),
    Str,
    Bin,
    Bool,
    Fsb(i32),
}

const KINDS: &[Kind] = &[
    Kind::I8,
    Kind::I16,
    Kind::I32,
    Kind::I64,
    Kind::U8,
    Kind::U16,
    Kind::U32,
    Kind::U64,
    Kind::F32,
    Kind::F64,
    Kind::Dec(7, 2),
    Kind::Dec(15, 3),
    Kind::Dec(25, 4),
    Kind::Date,
    Kind::Ts(TimeUnit::Millisecond, false),
    Kind::Ts(TimeUnit::Millisecond, true),
    Kind::Ts(TimeUnit::Microsecond, false),
    Kind::Ts(TimeUnit::Microsecond, true),
    Kind::Ts(TimeUnit::Nanosecond, false),
    Kind::Ts(TimeUnit::Nanosecond, true),
    Kind::Str,
    Kind::Bin,
    Kind::Bool,
    Kind::Fsb(4),
];

impl Kind {
    fn data_type(self) -> DataType {
        match self {
            Kind::I8 => DataType::Int8,
            Kind::I16 => DataType::Int16,
            Kind::I32 => DataType::Int32,
            Kind::I64 => DataType::Int64,
            Kind::U8 => DataType::UInt8,
            Kind::U16 => DataType::UInt16,
            Kind::U32 => DataType::UInt32,
            Kind::U64 => DataType::UInt64,
            Kind::F32 => DataType::Float32,
            Kind::F64 => DataType::Float64,
            Kind::Dec(p, s) => DataType::Decimal128(p, s),
            Kind::Date => DataType::Date32,
            Kind::Ts(u, tz) => DataType::Timestamp(u, tz.then(|| "UTC".into())),
            Kind::Str => DataType::Utf8,
            Kind::Bin => DataType::Binary,
            Kind::Bool => DataType::Boolean,
            Kind::Fsb(n) => DataType::FixedSizeBinary(n),
        }
    }

    fn short(self) -> String {
        match self {
            Kind::Dec(p, s) => format!("dec{p}_{s}"),
            Kind::Ts(u, tz) => format!(
                "ts_{}{}",
                match u {
                    TimeUnit::Second => "s",
                    TimeUnit::Millisecond => "ms",
                    TimeUnit::Microsecond => "us",
                    TimeUnit::Nanosecond => "ns",
                },
                if tz { "_utc" } else { "" }
            ),
            Kind::Fsb(n) => format!("fsb{n}"),
            other => format!("{other:?}").to_lowercase(),
        }
    }

    /// Inclusive range of the signed-integer-like kinds.
    fn int_range(self) -> (i128, i128) {
        match self {
            Kind::I8 => (i8::MIN as i128, i8::MAX as i128),
            Kind::I16 => (i16::MIN as i128, i16::MAX as i128),
            Kind::I32 | Kind::Date => (i32::MIN as i128, i32::MAX as i128),
            Kind::I64 | Kind::Ts(..) => (i64::MIN as i128, i64::MAX as i128),
            Kind::Dec(p, _) => {
                let m = 10i128.pow(p as u32) - 1;
                (-m, m)
            }
            _ => unreachable!(),
        }
    }

    fn uint_max(self) -> u64 {
        match self {
            Kind::U8 => u8::MAX as u64,
            Kind::U16 => u16::MAX as u64,
            Kind::U32 => u32::MAX as u64,
            _ => u64::MAX,
        }
    }

    fn is_float(self) -> bool {
        matches!(self, Kind::F32 | Kind::F64)
    }
}

#[derive(Clone, Debug, PartialEq)]
enum V {
    I(i128),
    U(u64),
    F(f64),
    B(bool),
    S(String),
    Y(Vec<u8>),
}

impl V {
    fn i(&self) -> i128 {
        match self {
            V::I(x) => *x,
            _ => panic!("not an int: {self:?}"),
        }
    }
    fn u(&self) -> u64 {
        match self {
            V::U(x) => *x,
            _ => panic!("not a uint: {self:?}"),
        }
    }
    fn f(&self) -> f64 {
        match self {
            V::F(x) => *x,
            _ => panic!("not a float: {self:?}"),
        }
    }
    fn b(&self) -> bool {
        match self {
            V::B(x) => *x,
            _ => panic!("not a bool: {self:?}"),
        }
    }
    fn s(&self) -> &str {
        match self {
            V::S(x) => x,
            _ => panic!("not a string: {self:?}"),
        }
    }
    fn y(&self) -> &[u8] {
        match self {
            V::Y(x) => x,
            _ => panic!("not bytes: {self:?}"),
        }
    }
}

const ALPHABET: &[&str] = &["a", "b", "c", "z", "A", "é", "'", "_", "%", " ", "😀", "0"];
const NEG_NAN: u64 = 0xfff8_0000_0000_0001;

fn unit_per_sec(u: TimeUnit) -> i128 {
    match u {
        TimeUnit::Second => 1,
        TimeUnit::Millisecond => 1_000,
        TimeUnit::Microsecond => 1_000_000,
        TimeUnit::Nanosecond => 1_000_000_000,
    }
}

fn random_string(rng: &mut StdRng, max_len: usize) -> String {
    if rng.random_bool(0.1) {
        return String::new();
    }
    let n = rng.random_range(0..=max_len);
    (0..n).map(|_| *ALPHABET.choose(rng).unwrap()).collect()
}

fn random_value(kind: Kind, rng: &mut StdRng) -> V {
    let small = rng.random_bool(0.5);
    match kind {
        Kind::I8 | Kind::I16 | Kind::I32 | Kind::I64 | Kind::Dec(..) => {
            let (lo, hi) = kind.int_range();
            if small {
                V::I(rng.random_range(lo.max(-1000)..=hi.min(1000)))
            } else {
                V::I(rng.random_range(lo..=hi))
            }
        }
        Kind::U8 | Kind::U16 | Kind::U32 | Kind::U64 => {
            let hi = kind.uint_max();
            if small {
                V::U(rng.random_range(0..=hi.min(1000)))
            } else {
                V::U(rng.random_range(0..=hi))
            }
        }
        Kind::F32 | Kind::F64 => {
            let f = match rng.random_range(0..20) {
                0 => f64::NAN,
                1 => f64::from_bits(NEG_NAN),
                2 => 0.0,
                3 => -0.0,
                4 => f64::INFINITY,
                5 => f64::NEG_INFINITY,
                6..=12 => rng.random_range(-2000..2000) as f64 / 8.0,
                _ => rng.random_range(-1e6..1e6),
            };
            if kind == Kind::F32 {
                // Keep the NaN payload sign when narrowing.
                V::F(f as f32 as f64)
            } else {
                V::F(f)
            }
        }
        Kind::Date => V::I(rng.random_range(-25_000..40_000)),
        Kind::Ts(u, _) => {
            let secs: i128 = rng.random_range(-2_000_000_000..4_000_000_000);
            let per = unit_per_sec(u);
            let sub = if per > 1 && rng.random_bool(0.7) {
                rng.random_range(0..per)
            } else {
                0
            };
            V::I(secs * per + sub)
        }
        Kind::Str => V::S(random_string(rng, if small { 3 } else { 10 })),
        Kind::Bin => {
            let n = rng.random_range(0..6);
            V::Y((0..n).map(|_| rng.random()).collect())
        }
        Kind::Bool => V::B(rng.random()),
        Kind::Fsb(n) => V::Y(
            (0..n)
                .map(|_| {
                    *[0u8, 1, 0x7f, 0x80, 0xff, rng.random()]
                        .choose(rng)
                        .unwrap()
                })
                .collect(),
        ),
    }
}

/// Builds an Arrow array of `kind` from values.
fn build_array(kind: Kind, vals: &[Option<V>]) -> ArrayRef {
    macro_rules! prim {
        ($arr:ty, $conv:expr) => {
            Arc::new(<$arr>::from_iter(
                vals.iter().map(|v| v.as_ref().map($conv)),
            )) as ArrayRef
        };
    }
    match kind {
        Kind::I8 => prim!(Int8Array, |v| v.i() as i8),
        Kind::I16 => prim!(Int16Array, |v| v.i() as i16),
        Kind::I32 => prim!(Int32Array, |v| v.i() as i32),
        Kind::I64 => prim!(Int64Array, |v| v.i() as i64),
        Kind::U8 => prim!(UInt8Array, |v| v.u() as u8),
        Kind::U16 => prim!(UInt16Array, |v| v.u() as u16),
        Kind::U32 => prim!(UInt32Array, |v| v.u() as u32),
        Kind::U64 => prim!(UInt64Array, |v| v.u()),
        Kind::F32 => prim!(Float32Array, |v| v.f() as f32),
        Kind::F64 => prim!(Float64Array, |v| v.f()),
        Kind::Date => prim!(Date32Array, |v| v.i() as i32),
        Kind::Dec(p, s) => Arc::new(
            Decimal128Array::from_iter(vals.iter().map(|v| v.as_ref().map(|v| v.i())))
                .with_precision_and_scale(p, s)
                .unwrap(),
        ),
        Kind::Ts(u, tz) => {
            let tz: Option<&str> = tz.then_some("UTC");
            let it = vals.iter().map(|v| v.as_ref().map(|v| v.i() as i64));
            match u {
                TimeUnit::Second => {
                    Arc::new(TimestampSecondArray::from_iter(it).with_timezone_opt(tz))
                }
                TimeUnit::Millisecond => {
                    Arc::new(TimestampMillisecondArray::from_iter(it).with_timezone_opt(tz))
                }
                TimeUnit::Microsecond => {
                    Arc::new(TimestampMicrosecondArray::from_iter(it).with_timezone_opt(tz))
                }
                TimeUnit::Nanosecond => {
                    Arc::new(TimestampNanosecondArray::from_iter(it).with_timezone_opt(tz))
                }
            }
        }
        Kind::Str => Arc::new(StringArray::from_iter(
            vals.iter().map(|v| v.as_ref().map(|v| v.s())),
        )),
        Kind::Bin => Arc::new(BinaryArray::from_iter(
            vals.iter().map(|v| v.as_ref().map(|v| v.y())),
        )),
        Kind::Bool => prim!(BooleanArray, |v| v.b()),
        Kind::Fsb(n) => Arc::new(
            FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                vals.iter().map(|v| v.as_ref().map(|v| v.y().to_vec())),
                n,
            )
            .unwrap(),
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// Files

#[derive(Clone, Debug)]
struct ColSpec {
    name: String,
    kind: Kind,
    nullable: bool,
    null_frac: f64,
    low_card: bool,
}

#[derive(Clone, Debug)]
struct Cfg {
    rows: usize,
    dictionary: bool,
    dict_page_limit: Option<usize>,
    tiny_pages: bool,
    row_group_rows: Option<usize>,
    v2: bool,
    codec: Compression,
    statistics: EnabledStatistics,
    bloom: bool,
    encodings: bool,
}

struct GenFile {
    seed: u64,
    cfg: Cfg,
    cols: Vec<ColSpec>,
    /// Column encodings chosen (when `cfg.encodings`).
    encodings: Vec<(String, Encoding)>,
    path: PathBuf,
    /// The oracle's reading of the file.
    data: RecordBatch,
    /// `data` with float columns normalised, for predicate evaluation.
    norm: RecordBatch,
    /// Per column, its non-null values (for literals).
    values: Vec<Vec<V>>,
}

impl fmt::Display for GenFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "file seed {} ({}), {:?}",
            self.seed,
            self.path.display(),
            self.cfg
        )?;
        if !self.encodings.is_empty() {
            writeln!(f, "  column encodings: {:?}", self.encodings)?;
        }
        let cols: Vec<String> = self
            .cols
            .iter()
            .map(|c| {
                format!(
                    "{}:{}{}{}",
                    c.name,
                    if c.nullable { "opt" } else { "req" },
                    if c.nullable {
                        format!("/{:.0}%null", c.null_frac * 100.0)
                    } else {
                        String::new()
                    },
                    if c.low_card { "/lowcard" } else { "/highcard" }
                )
            })
            .collect();
        write!(f, "  columns: {}", cols.join(" "))
    }
}

fn base_seed() -> u64 {
    std::env::var("TAMIS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x7a31_5eed)
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn config_for(i: usize, rng: &mut StdRng) -> Cfg {
    let codecs = [
        Compression::UNCOMPRESSED,
        Compression::SNAPPY,
        Compression::GZIP(GzipLevel::default()),
        Compression::LZ4,
        Compression::ZSTD(ZstdLevel::default()),
        Compression::BROTLI(BrotliLevel::default()),
        Compression::LZ4_RAW,
    ];
    let encodings = i % 4 == 3;
    Cfg {
        rows: rng.random_range(700..1600),
        dictionary: !encodings && i % 5 != 1,
        dict_page_limit: i.is_multiple_of(3).then_some(256),
        tiny_pages: i.is_multiple_of(2),
        row_group_rows: match i % 3 {
            0 => Some(300),
            1 => None,
            _ => Some(rng.random_range(100..700)),
        },
        v2: (i / 2) % 2 == 1,
        codec: codecs[i % codecs.len()],
        statistics: [
            EnabledStatistics::Page,
            EnabledStatistics::Chunk,
            EnabledStatistics::None,
        ][(i / 3) % 3],
        bloom: i % 5 < 2,
        encodings,
    }
}

fn encoding_for(kind: Kind, j: usize) -> Option<Encoding> {
    Some(match kind {
        Kind::Bool => return None,
        Kind::F32 | Kind::F64 => Encoding::BYTE_STREAM_SPLIT,
        Kind::Str | Kind::Bin => {
            if j.is_multiple_of(2) {
                Encoding::DELTA_LENGTH_BYTE_ARRAY
            } else {
                Encoding::DELTA_BYTE_ARRAY
            }
        }
        Kind::Fsb(_) | Kind::Dec(25, _) => {
            if j.is_multiple_of(2) {
                Encoding::DELTA_BYTE_ARRAY
            } else {
                Encoding::BYTE_STREAM_SPLIT
            }
        }
        _ => {
            if j % 3 == 2 {
                Encoding::BYTE_STREAM_SPLIT
            } else {
                Encoding::DELTA_BINARY_PACKED
            }
        }
    })
}

fn make_file(dir: &Path, i: usize) -> GenFile {
    let seed = base_seed().wrapping_add(i as u64 * 7919);
    let mut rng = StdRng::seed_from_u64(seed);
    let cfg = config_for(i, &mut rng);

    let mut cols = vec![ColSpec {
        name: "id".into(),
        kind: Kind::I64,
        nullable: false,
        null_frac: 0.0,
        low_card: false,
    }];
    for (k, &kind) in KINDS.iter().enumerate() {
        for variant in 0..2 {
            let nullable = rng.random_bool(0.75);
            let null_frac = if nullable {
                *[0.0, 0.3, 0.3, 1.0].choose(&mut rng).unwrap()
            } else {
                0.0
            };
            cols.push(ColSpec {
                name: format!("c{}{}_{}", k, ["a", "b"][variant], kind.short()),
                kind,
                nullable,
                null_frac,
                // One of each pair is low-cardinality, so dictionaries exist.
                low_card: (variant == 0) != rng.random_bool(0.2),
            });
        }
    }

    let mut fields = Vec::new();
    let mut arrays = Vec::new();
    let mut values = Vec::new();
    for (j, c) in cols.iter().enumerate() {
        let vals: Vec<Option<V>> = if j == 0 {
            (0..cfg.rows).map(|r| Some(V::I(r as i128))).collect()
        } else {
            let pool: Vec<V> = (0..rng.random_range(1..8))
                .map(|_| random_value(c.kind, &mut rng))
                .collect();
            (0..cfg.rows)
                .map(|_| {
                    if c.null_frac > 0.0 && rng.random_bool(c.null_frac) {
                        None
                    } else if c.low_card {
                        Some(pool.choose(&mut rng).unwrap().clone())
                    } else {
                        Some(random_value(c.kind, &mut rng))
                    }
                })
                .collect()
        };
        values.push(vals.iter().flatten().cloned().collect::<Vec<V>>());
        fields.push(Field::new(&c.name, c.kind.data_type(), c.nullable));
        arrays.push(build_array(c.kind, &vals));
    }
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), arrays).unwrap();

    let mut props = WriterProperties::builder()
        .set_dictionary_enabled(cfg.dictionary)
        .set_compression(cfg.codec)
        .set_statistics_enabled(cfg.statistics)
        .set_bloom_filter_enabled(cfg.bloom)
        .set_max_row_group_row_count(cfg.row_group_rows)
        .set_writer_version(if cfg.v2 {
            WriterVersion::PARQUET_2_0
        } else {
            WriterVersion::PARQUET_1_0
        });
    if let Some(l) = cfg.dict_page_limit {
        props = props.set_dictionary_page_size_limit(l);
    }
    if cfg.tiny_pages {
        props = props
            .set_data_page_row_count_limit(37)
            .set_write_batch_size(17);
    }
    let mut encodings = Vec::new();
    if cfg.encodings {
        for (j, c) in cols.iter().enumerate() {
            if let Some(e) = encoding_for(c.kind, j) {
                props = props.set_column_encoding(ColumnPath::from(c.name.as_str()), e);
                encodings.push((c.name.clone(), e));
            }
        }
    }
    let path = dir.join(format!("gen_{i}.parquet"));
    let mut w =
        ArrowWriter::try_new(File::create(&path).unwrap(), schema, Some(props.build())).unwrap();
    // Write in uneven slices so row groups and pages get odd boundaries.
    let mut off = 0;
    while off < batch.num_rows() {
        let n = rng.random_range(1..400).min(batch.num_rows() - off);
        w.write(&batch.slice(off, n)).unwrap();
        off += n;
    }
    w.close().unwrap();

    let data = oracle_read(&path).expect("oracle reads the generated file");
    assert_eq!(data.num_rows(), cfg.rows);
    let norm = RecordBatch::try_new(
        data.schema(),
        data.columns().iter().map(normalize).collect(),
    )
    .unwrap();
    GenFile {
        seed,
        cfg,
        cols,
        encodings,
        path,
        data,
        norm,
        values,
    }
}

// ---------------------------------------------------------------------------------------------
// Predicates

#[derive(Clone, Copy, Debug)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Clone, Debug)]
enum P {
    Cmp(usize, Op, V),
    Between(usize, V, V, bool),
    In(usize, Vec<V>, bool),
    IsNull(usize, bool),
    Like(usize, String, bool),
    /// A comparison between columns, with arithmetic on either side.
    Cols(Term, Op, Term),
    And(Box<P>, Box<P>),
    Or(Box<P>, Box<P>),
    Not(Box<P>),
}

/// One side of a comparison between columns.
#[derive(Clone, Debug)]
enum Term {
    Col(usize),
    Lit(i64),
    Bin(Box<Term>, AOp, Box<Term>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum AOp {
    Add,
    Sub,
    Mul,
}

/// Exact numeric kinds (integers and decimals): compared and added with each other exactly.
fn is_exact(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::I8
            | Kind::I16
            | Kind::I32
            | Kind::I64
            | Kind::U8
            | Kind::U16
            | Kind::U32
            | Kind::U64
            | Kind::Dec(..)
    )
}

/// Kinds small enough that a product of two stays within 38 digits.
fn multipliable(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::I8 | Kind::I16 | Kind::I32 | Kind::U8 | Kind::U16 | Kind::U32 | Kind::Dec(7, _)
    ) || kind.is_float()
}

fn render_term(t: &Term, cols: &[ColSpec]) -> String {
    match t {
        Term::Col(c) => cols[*c].name.clone(),
        Term::Lit(v) if *v < 0 => format!("({v})"),
        Term::Lit(v) => v.to_string(),
        Term::Bin(a, op, b) => format!(
            "({} {} {})",
            render_term(a, cols),
            match op {
                AOp::Add => "+",
                AOp::Sub => "-",
                AOp::Mul => "*",
            },
            render_term(b, cols)
        ),
    }
}

/// A comparison between two columns of comparable kinds; numbers sometimes with arithmetic.
fn gen_cols(f: &GenFile, rng: &mut StdRng) -> P {
    let kinds: Vec<Kind> = f.cols.iter().map(|c| c.kind).collect();
    let numeric = |k: Kind| is_exact(k) || k.is_float();
    let a = rng.random_range(0..kinds.len());
    let pick = |rng: &mut StdRng, ok: &dyn Fn(Kind) -> bool| {
        let all: Vec<usize> = (0..kinds.len()).filter(|&c| ok(kinds[c])).collect();
        *all.choose(rng).unwrap()
    };
    let ka = kinds[a];
    let op = *[Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge]
        .choose(rng)
        .unwrap();
    if !numeric(ka) {
        // Same kind only (the pair of columns of each kind).
        let b = pick(rng, &|k| k == ka);
        return P::Cols(Term::Col(a), op, Term::Col(b));
    }
    let b = pick(rng, &|k| numeric(k));
    let mut left = Term::Col(a);
    let mut right = Term::Col(b);
    if rng.random_bool(0.5) {
        let aop = *[AOp::Add, AOp::Sub, AOp::Mul].choose(rng).unwrap();
        let other = if rng.random_bool(0.5) {
            Term::Lit(rng.random_range(-3..20))
        } else if aop == AOp::Mul {
            Term::Col(pick(rng, &|k| multipliable(k)))
        } else {
            Term::Col(pick(rng, &|k| numeric(k)))
        };
        let fits = |t: &Term| match t {
            Term::Col(c) => multipliable(kinds[*c]),
            _ => true,
        };
        if aop != AOp::Mul || (fits(&left) && fits(&other)) {
            left = Term::Bin(Box::new(left), aop, Box::new(other));
        }
    }
    if rng.random_bool(0.2) {
        right = Term::Bin(Box::new(Term::Lit(1)), AOp::Sub, Box::new(right));
    }
    P::Cols(left, op, right)
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn hex(b: &[u8]) -> String {
    format!(
        "X'{}'",
        b.iter().map(|x| format!("{x:02x}")).collect::<String>()
    )
}

fn render_lit(kind: Kind, v: &V) -> String {
    match kind {
        Kind::F32 | Kind::F64 => {
            let f = v.f();
            if f.is_nan() {
                "'NaN'::DOUBLE".into()
            } else if f == f64::INFINITY {
                "CAST('inf' AS DOUBLE)".into()
            } else if f == f64::NEG_INFINITY {
                "'-inf'::DOUBLE".into()
            } else {
                format!("{f:?}")
            }
        }
        Kind::Dec(_, s) => {
            let x = v.i();
            let digits = x.unsigned_abs().to_string();
            let s = s as usize;
            let digits = format!("{digits:0>width$}", width = s + 1);
            let (int, frac) = digits.split_at(digits.len() - s);
            format!("{}{int}.{frac}", if x < 0 { "-" } else { "" })
        }
        Kind::Date => {
            let d =
                NaiveDate::from_ymd_opt(1970, 1, 1).unwrap() + chrono::Duration::days(v.i() as i64);
            format!("DATE '{}'", d.format("%Y-%m-%d"))
        }
        Kind::Ts(u, _) => {
            let per = unit_per_sec(u);
            let x = v.i();
            let secs = x.div_euclid(per) as i64;
            let nanos = (x.rem_euclid(per) * (1_000_000_000 / per)) as u32;
            let t = DateTime::from_timestamp(secs, nanos).unwrap().naive_utc();
            let frac = match u {
                TimeUnit::Second => "",
                TimeUnit::Millisecond => "%.3f",
                TimeUnit::Microsecond => "%.6f",
                TimeUnit::Nanosecond => "%.9f",
            };
            format!(
                "TIMESTAMP '{}'",
                t.format(&format!("%Y-%m-%d %H:%M:%S{frac}"))
            )
        }
        Kind::Str => quote(v.s()),
        Kind::Bin | Kind::Fsb(_) => hex(v.y()),
        Kind::Bool => if v.b() { "TRUE" } else { "FALSE" }.into(),
        _ => match v {
            V::I(x) => x.to_string(),
            V::U(x) => x.to_string(),
            _ => unreachable!(),
        },
    }
}

fn render(p: &P, cols: &[ColSpec]) -> String {
    match p {
        P::Cmp(c, op, v) => {
            let op = match op {
                Op::Eq => "=",
                Op::Ne => ["<>", "!="][v.clone().hash_pick()],
                Op::Lt => "<",
                Op::Le => "<=",
                Op::Gt => ">",
                Op::Ge => ">=",
            };
            format!("{} {op} {}", cols[*c].name, render_lit(cols[*c].kind, v))
        }
        P::Between(c, lo, hi, neg) => format!(
            "{} {}BETWEEN {} AND {}",
            cols[*c].name,
            if *neg { "NOT " } else { "" },
            render_lit(cols[*c].kind, lo),
            render_lit(cols[*c].kind, hi)
        ),
        P::In(c, list, neg) => format!(
            "{} {}IN ({})",
            cols[*c].name,
            if *neg { "NOT " } else { "" },
            list.iter()
                .map(|v| render_lit(cols[*c].kind, v))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        P::IsNull(c, neg) => format!(
            "{} IS {}NULL",
            cols[*c].name,
            if *neg { "NOT " } else { "" }
        ),
        P::Like(c, pat, neg) => {
            format!(
                "{} {}LIKE {}",
                cols[*c].name,
                if *neg { "NOT " } else { "" },
                quote(pat)
            )
        }
        P::Cols(l, op, r) => format!(
            "{} {} {}",
            render_term(l, cols),
            match op {
                Op::Eq => "=",
                Op::Ne => "<>",
                Op::Lt => "<",
                Op::Le => "<=",
                Op::Gt => ">",
                Op::Ge => ">=",
            },
            render_term(r, cols)
        ),
        P::And(a, b) => format!("({} AND {})", render(a, cols), render(b, cols)),
        P::Or(a, b) => format!("({} OR {})", render(a, cols), render(b, cols)),
        P::Not(a) => format!("NOT ({})", render(a, cols)),
    }
}

impl V {
    /// A deterministic 0/1 choice from the value (to alternate `<>` and `!=`).
    fn hash_pick(self) -> usize {
        (format!("{self:?}").len()) % 2
    }
}

/// A value near `v`, inside the kind's domain (just outside the column's values, often).
fn perturb(kind: Kind, v: &V, rng: &mut StdRng) -> V {
    match (kind, v) {
        (Kind::F32 | Kind::F64, V::F(f)) => {
            let g = match rng.random_range(0..5) {
                0 => f + 0.5,
                1 => f - 0.125,
                2 => *[f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0]
                    .choose(rng)
                    .unwrap(),
                3 => {
                    if kind == Kind::F32 {
                        f32::from_bits((*f as f32).to_bits().wrapping_add(1)) as f64
                    } else {
                        f64::from_bits(f.to_bits().wrapping_add(1))
                    }
                }
                _ => -f,
            };
            V::F(if kind == Kind::F32 {
                g as f32 as f64
            } else {
                g
            })
        }
        (Kind::U8 | Kind::U16 | Kind::U32 | Kind::U64, V::U(x)) => {
            let d = rng.random_range(1..3u64);
            V::U(if rng.random() {
                x.saturating_add(d).min(kind.uint_max())
            } else {
                x.saturating_sub(d)
            })
        }
        (_, V::I(x)) => {
            let (lo, hi) = kind.int_range();
            let (lo, hi) = if kind == Kind::Date {
                (-700_000, 2_900_000)
            } else {
                (lo, hi)
            };
            let d = rng.random_range(1..3i128);
            V::I(if rng.random() {
                (x + d).min(hi)
            } else {
                (x - d).max(lo)
            })
        }
        (_, V::B(b)) => V::B(!b),
        (Kind::Str, V::S(s)) => V::S(match rng.random_range(0..4) {
            0 => format!("{s}a"),
            1 => {
                let mut t = s.clone();
                t.pop();
                t
            }
            2 => String::new(),
            _ => format!("{s}\u{10ffff}"),
        }),
        (Kind::Fsb(_), V::Y(y)) => {
            let mut y = y.clone();
            let last = y.len() - 1;
            y[last] = if rng.random() {
                y[last].wrapping_add(1)
            } else {
                y[last].wrapping_sub(1)
            };
            V::Y(y)
        }
        (_, V::Y(y)) => {
            let mut y = y.clone();
            if rng.random() || y.is_empty() {
                y.push(rng.random());
            } else {
                y.pop();
            }
            V::Y(y)
        }
        _ => unreachable!("{kind:?} {v:?}"),
    }
}

fn literal(f: &GenFile, c: usize, rng: &mut StdRng) -> V {
    let kind = f.cols[c].kind;
    let vals = &f.values[c];
    let base = if vals.is_empty() || rng.random_bool(0.1) {
        random_value(kind, rng)
    } else {
        vals.choose(rng).unwrap().clone()
    };
    if rng.random_bool(0.3) {
        perturb(kind, &base, rng)
    } else {
        base
    }
}

fn like_pattern(f: &GenFile, c: usize, rng: &mut StdRng) -> String {
    let s = match literal(f, c, rng) {
        V::S(s) => s,
        _ => unreachable!(),
    };
    let ch: Vec<char> = s.chars().collect();
    let n = ch.len();
    let cut = |a: usize, b: usize| ch[a..b].iter().collect::<String>();
    let i = rng.random_range(0..=n);
    let j = rng.random_range(i..=n);
    match rng.random_range(0..8) {
        0 => format!("{}%", cut(0, i)),
        1 => format!("%{}", cut(i, n)),
        2 => format!("%{}%", cut(i, j)),
        3 => ch
            .iter()
            .map(|&x| if rng.random_bool(0.4) { '_' } else { x })
            .collect(),
        4 => s,
        5 => ["%", "", "_", "%%", "_%", "%_"]
            .choose(rng)
            .unwrap()
            .to_string(),
        6 => format!("{}%{}", cut(0, i), cut(j, n)),
        _ => format!("{}_%", cut(0, i)),
    }
}

fn gen_leaf(f: &GenFile, rng: &mut StdRng) -> P {
    let c = rng.random_range(0..f.cols.len());
    let kind = f.cols[c].kind;
    let r = rng.random_range(0..100);
    if rng.random_bool(0.12) {
        return gen_cols(f, rng);
    }
    if r < 8 {
        return P::IsNull(c, rng.random());
    }
    if kind == Kind::Str && r < 35 {
        return P::Like(c, like_pattern(f, c, rng), rng.random_bool(0.3));
    }
    if r < 50 {
        let (a, b) = (literal(f, c, rng), literal(f, c, rng));
        return P::Between(c, a, b, rng.random_bool(0.3));
    }
    if r < 62 {
        let n = rng.random_range(1..6);
        return P::In(
            c,
            (0..n).map(|_| literal(f, c, rng)).collect(),
            rng.random_bool(0.3),
        );
    }
    let op = *[Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge]
        .choose(rng)
        .unwrap();
    P::Cmp(c, op, literal(f, c, rng))
}

fn gen_pred(f: &GenFile, rng: &mut StdRng, depth: usize) -> P {
    if depth == 0 || rng.random_bool(0.4) {
        return gen_leaf(f, rng);
    }
    match rng.random_range(0..5) {
        0 | 1 => P::And(
            Box::new(gen_pred(f, rng, depth - 1)),
            Box::new(gen_pred(f, rng, depth - 1)),
        ),
        2 | 3 => P::Or(
            Box::new(gen_pred(f, rng, depth - 1)),
            Box::new(gen_pred(f, rng, depth - 1)),
        ),
        _ => P::Not(Box::new(gen_pred(f, rng, depth - 1))),
    }
}

/// The oracle: three-valued evaluation with Arrow kernels over the normalised columns.
fn eval(p: &P, f: &GenFile) -> BooleanArray {
    let col = |c: usize| f.norm.column(c).clone();
    let scalar = |c: usize, v: &V| {
        let kind = f.cols[c].kind;
        let v = if kind.is_float() {
            V::F(norm64(v.f()))
        } else {
            v.clone()
        };
        Scalar::new(build_array(kind, &[Some(v)]))
    };
    let cmp = |c: usize, op: Op, v: &V| -> BooleanArray {
        let (a, s) = (col(c), scalar(c, v));
        match op {
            Op::Eq => eq(&a, &s),
            Op::Ne => neq(&a, &s),
            Op::Lt => lt(&a, &s),
            Op::Le => lt_eq(&a, &s),
            Op::Gt => gt(&a, &s),
            Op::Ge => gt_eq(&a, &s),
        }
        .unwrap()
    };
    match p {
        P::Cmp(c, op, v) => cmp(*c, *op, v),
        P::Between(c, lo, hi, neg) => {
            if *neg {
                or_kleene(&cmp(*c, Op::Lt, lo), &cmp(*c, Op::Gt, hi)).unwrap()
            } else {
                and_kleene(&cmp(*c, Op::Ge, lo), &cmp(*c, Op::Le, hi)).unwrap()
            }
        }
        P::In(c, list, neg) => {
            let mut acc = cmp(*c, Op::Eq, &list[0]);
            for v in &list[1..] {
                acc = or_kleene(&acc, &cmp(*c, Op::Eq, v)).unwrap();
            }
            if *neg {
                not(&acc).unwrap()
            } else {
                acc
            }
        }
        P::IsNull(c, neg) => {
            if *neg {
                is_not_null(col(*c).as_ref()).unwrap()
            } else {
                is_null(col(*c).as_ref()).unwrap()
            }
        }
        P::Like(c, pat, neg) => {
            let s = Scalar::new(StringArray::from(vec![pat.as_str()]));
            let a = col(*c);
            if *neg {
                nlike(&a, &s).unwrap()
            } else {
                like(&a, &s).unwrap()
            }
        }
        P::Cols(l, op, r) => {
            let (l, r) = common_type(eval_term(l, f), eval_term(r, f));
            match op {
                Op::Eq => eq(&l, &r),
                Op::Ne => neq(&l, &r),
                Op::Lt => lt(&l, &r),
                Op::Le => lt_eq(&l, &r),
                Op::Gt => gt(&l, &r),
                Op::Ge => gt_eq(&l, &r),
            }
            .unwrap()
        }
        P::And(a, b) => and_kleene(&eval(a, f), &eval(b, f)).unwrap(),
        P::Or(a, b) => or_kleene(&eval(a, f), &eval(b, f)).unwrap(),
        P::Not(a) => not(&eval(a, f)).unwrap(),
    }
}

/// A term's values with Arrow kernels: exact numbers as Decimal128(38, scale), floats as
/// Float64 (normalised: one NaN, no -0.0, as tamis orders them), other kinds as they are.
fn eval_term(t: &Term, f: &GenFile) -> ArrayRef {
    use arrow::compute::cast;
    use arrow::compute::kernels::numeric::{add, mul, sub};
    let n = f.norm.num_rows();
    match t {
        Term::Col(c) => {
            let a = f.norm.column(*c).clone();
            match f.cols[*c].kind {
                Kind::F32 | Kind::F64 => cast(&a, &DataType::Float64).unwrap(),
                Kind::Dec(_, s) => cast(&a, &DataType::Decimal128(38, s)).unwrap(),
                k if is_exact(k) => cast(&a, &DataType::Decimal128(38, 0)).unwrap(),
                _ => a,
            }
        }
        Term::Lit(v) => Arc::new(
            Decimal128Array::from(vec![*v as i128; n])
                .with_precision_and_scale(38, 0)
                .unwrap(),
        ),
        Term::Bin(a, op, b) => {
            let (a, b) = (eval_term(a, f), eval_term(b, f));
            let scale = |x: &ArrayRef| match x.data_type() {
                DataType::Decimal128(_, s) => Some(*s),
                _ => None,
            };
            match (scale(&a), scale(&b)) {
                (Some(sa), Some(sb)) => {
                    let out = match op {
                        AOp::Mul => mul(&a, &b).unwrap(),
                        _ => {
                            let s = sa.max(sb);
                            let t = DataType::Decimal128(38, s);
                            let (a, b) = (cast(&a, &t).unwrap(), cast(&b, &t).unwrap());
                            if *op == AOp::Add {
                                add(&a, &b).unwrap()
                            } else {
                                sub(&a, &b).unwrap()
                            }
                        }
                    };
                    let s = if *op == AOp::Mul { sa + sb } else { sa.max(sb) };
                    cast(&out, &DataType::Decimal128(38, s)).unwrap()
                }
                _ => {
                    let (a, b) = (
                        cast(&a, &DataType::Float64).unwrap(),
                        cast(&b, &DataType::Float64).unwrap(),
                    );
                    norm_doubles(
                        &match op {
                            AOp::Add => add(&a, &b),
                            AOp::Sub => sub(&a, &b),
                            AOp::Mul => mul(&a, &b),
                        }
                        .unwrap(),
                    )
                }
            }
        }
    }
}

/// A Float64 array with one NaN and no -0.0, ordered by Arrow as tamis orders floats.
fn norm_doubles(a: &ArrayRef) -> ArrayRef {
    let out: Float64Array = a
        .as_any()
        .downcast_ref::<Float64Array>()
        .unwrap()
        .iter()
        .map(|v| v.map(norm64))
        .collect();
    Arc::new(out)
}

/// Both sides in one type Arrow can compare: doubles if either is, else decimals at the larger
/// scale, else unchanged (same kind).
fn common_type(l: ArrayRef, r: ArrayRef) -> (ArrayRef, ArrayRef) {
    use arrow::compute::cast;
    let to = match (l.data_type(), r.data_type()) {
        (DataType::Float64, _) | (_, DataType::Float64) => DataType::Float64,
        (DataType::Decimal128(_, a), DataType::Decimal128(_, b)) => {
            DataType::Decimal128(38, *a.max(b))
        }
        _ => return (l, r),
    };
    let norm = |a: ArrayRef| -> ArrayRef {
        let a = cast(&a, &to).unwrap();
        if to != DataType::Float64 {
            return a;
        }
        norm_doubles(&a)
    };
    (norm(l), norm(r))
}

fn random_projection(f: &GenFile, rng: &mut StdRng) -> Option<Vec<String>> {
    if rng.random_bool(0.3) {
        return None;
    }
    let mut names: Vec<String> = f.cols.iter().skip(1).map(|c| c.name.clone()).collect();
    names.shuffle(rng);
    names.truncate(rng.random_range(0..8));
    let at = rng.random_range(0..=names.len());
    names.insert(at, "id".into());
    Some(names)
}

/// Checks one predicate; returns a failure report.
#[allow(clippy::too_many_arguments)]
fn check(
    f: &GenFile,
    sql: &str,
    p: &P,
    proj: Option<Vec<String>>,
    threads: usize,
    batch: usize,
    limit: Option<usize>,
    order: FilterOrder,
    evaluation: Evaluation,
) -> Option<String> {
    let mask = eval(p, f);
    let mut want = filter_record_batch(&f.data, &mask).unwrap();
    if let Some(n) = limit {
        want = want.slice(0, n.min(want.num_rows()));
    }
    let names: Vec<String> = proj
        .clone()
        .unwrap_or_else(|| f.cols.iter().map(|c| c.name.clone()).collect());
    let want = project(&want, &names);
    // Row groups handed on whole, or in ranges that cut pages and bitmap words; iterated, or
    // driven on this thread (as the DataFusion provider does for local files).
    let range_rows = [None, Some(64), Some(129), Some(1000)][sql.len() % 4];
    let drive = sql.len() % 3 == 1;
    let string_views = sql.len() % 5 == 2;
    let short_decimals = sql.len() % 7 == 3;
    let string_dictionaries = sql.len() % 3 == 2;
    let req = Req {
        filter: Some(sql),
        select: proj.clone(),
        threads: Some(threads),
        limit,
        batch_size: Some(batch),
        range_rows,
        filter_order: Some(order),
        evaluation: Some(evaluation),
        drive,
        string_views,
        short_decimals,
        string_dictionaries,
        pruning: None,
        keep_first_reads: false,
    };
    let report = |what: String| {
        Some(format!(
            "  SQL: {sql}\n  select: {proj:?}, threads {threads}, batch_size {batch}, range_rows {range_rows:?}, drive {drive}, views {string_views}, short decimals {short_decimals}, dictionaries {string_dictionaries}, limit {limit:?}, filter order {order:?}, evaluation {evaluation:?}\n  {what}"
        ))
    };
    match tamis_scan(f.path.to_str().unwrap(), &req) {
        Err(e) => report(format!("tamis error: {e} (kind {:?})", e.kind)),
        Ok((got, m)) => {
            if let Some(d) = diff_batches(&got, &want) {
                // Which rows (by id) are missing or extra, when id is projected.
                let ids = |b: &RecordBatch| -> Vec<i64> {
                    b.column_by_name("id")
                        .map(|a| {
                            a.as_any()
                                .downcast_ref::<Int64Array>()
                                .unwrap()
                                .values()
                                .to_vec()
                        })
                        .unwrap_or_default()
                };
                let (g, w) = (ids(&got), ids(&want));
                let missing: Vec<i64> = w
                    .iter()
                    .filter(|x| !g.contains(x))
                    .take(10)
                    .copied()
                    .collect();
                let extra: Vec<i64> = g
                    .iter()
                    .filter(|x| !w.contains(x))
                    .take(10)
                    .copied()
                    .collect();
                let mut s = format!("{d}\n  missing ids {missing:?}, extra ids {extra:?}");
                if let Some(&id) = missing.first().or(extra.first()) {
                    s += &format!(
                        "\n  full row id {id}: [{}]",
                        common::fmt_row(&f.data, id as usize)
                    );
                }
                return report(s);
            }
            if limit.is_none() && m.rows_selected != want.num_rows() as u64 {
                return report(format!(
                    "metrics.rows_selected = {} but {} rows returned",
                    m.rows_selected,
                    want.num_rows()
                ));
            }
            None
        }
    }
}

fn run_files(files: std::ops::Range<usize>, preds_per_file: usize, depth: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let (mut total, mut failed) = (0, 0);
    // Predicates selecting no row, some rows, every row.
    let mut shape = [0usize; 3];
    for i in files {
        let f = make_file(dir.path(), i);
        let mut rng = StdRng::seed_from_u64(f.seed ^ 0x5eed_0f9e_0d00);
        let mut here = Vec::new();
        for _ in 0..preds_per_file {
            let p = gen_pred(&f, &mut rng, depth);
            let sql = render(&p, &f.cols);
            let proj = random_projection(&f, &mut rng);
            let threads = *[1, 2, 4].choose(&mut rng).unwrap();
            let batch = *[8192, 8192, 100, 7].choose(&mut rng).unwrap();
            let limit = rng.random_bool(0.05).then(|| rng.random_range(0..60));
            // Every page strategy: the adaptive policy and each forced one.
            let evaluation = *[Evaluation::Auto, Evaluation::Selected, Evaluation::Whole]
                .choose(&mut rng)
                .unwrap();
            total += 1;
            let selected = eval(&p, &f).true_count();
            shape[if selected == 0 {
                0
            } else if selected == f.cfg.rows {
                2
            } else {
                1
            }] += 1;
            if let Some(r) = check(
                &f,
                &sql,
                &p,
                proj,
                threads,
                batch,
                limit,
                FilterOrder::Auto,
                evaluation,
            ) {
                failed += 1;
                here.push(r);
            }
        }
        if !here.is_empty() {
            let n = here.len();
            here.truncate(5);
            failures.push(format!(
                "{f}\n{n} mismatches in this file, first {}:\n{}",
                here.len(),
                here.join("\n")
            ));
        }
    }
    eprintln!("predicates selecting none / some / all rows: {shape:?}");
    if !failures.is_empty() {
        for r in &failures {
            eprintln!("---- MISMATCHES\n{r}\n");
        }
        panic!(
            "{failed} of {total} predicates in {} files disagree with the oracle (printed above)",
            failures.len()
        );
    }
    eprintln!(
        "{total} predicates agree with the oracle (selecting none / some / all rows: {shape:?})"
    );
    assert!(
        shape[1] * 4 > total,
        "too few predicates select only part of the rows: {shape:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Tests

/// Reading without a filter returns exactly what the parquet crate returns, for every file
/// variant.
#[test]
fn full_scan_matches_oracle() {
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for i in 0..env_usize("TAMIS_DIFF_FILES", 30) {
        let f = make_file(dir.path(), i);
        match tamis_scan(f.path.to_str().unwrap(), &Req::default()) {
            Err(e) => failures.push(format!("{f}\n  tamis error: {e}")),
            Ok((got, _)) => {
                if let Some(d) = diff_batches(&got, &f.data) {
                    failures.push(format!("{f}\n  {d}"));
                }
            }
        }
    }
    for r in &failures {
        eprintln!("---- MISMATCH\n{r}\n");
    }
    assert!(
        failures.is_empty(),
        "{} files read differently",
        failures.len()
    );
}

/// Single comparisons (depth 0), many of them: the bulk of leaf semantics.
#[test]
fn random_leaf_predicates() {
    let files = env_usize("TAMIS_DIFF_FILES", 30);
    run_files(0..files, env_usize("TAMIS_DIFF_PREDICATES", 400), 0);
}

/// Boolean combinations up to depth 3.
#[test]
fn random_compound_predicates() {
    let files = env_usize("TAMIS_DIFF_FILES", 30);
    run_files(100..100 + files, env_usize("TAMIS_DIFF_PREDICATES", 400), 3);
}

/// `threads(1)` and `threads(4)` (and any batch size) give identical batches.
#[test]
fn threads_do_not_change_results() {
    let dir = tempfile::tempdir().unwrap();
    for i in [0usize, 3, 6] {
        let f = make_file(dir.path(), i);
        let mut rng = StdRng::seed_from_u64(f.seed ^ 77);
        for _ in 0..15 {
            let sql = render(&gen_pred(&f, &mut rng, 2), &f.cols);
            let run = |threads, batch| {
                let req = Req {
                    filter: Some(&sql),
                    threads: Some(threads),
                    batch_size: Some(batch),
                    ..Req::default()
                };
                tamis_scan(f.path.to_str().unwrap(), &req)
                    .map(|(b, _)| b)
                    .map_err(|e| e.to_string())
            };
            let one = run(1, 8192).unwrap_or_else(|e| panic!("{f}\n{sql}: {e}"));
            for (t, b) in [(4, 8192), (4, 13), (2, 1)] {
                let other = run(t, b).unwrap_or_else(|e| panic!("{f}\n{sql}: {e}"));
                if let Some(d) = diff_batches(&other, &one) {
                    panic!("{f}\n  SQL: {sql}\n  threads({t}) batch_size({b}) vs threads(1): {d}");
                }
            }
        }
    }
}

/// `limit(n)` returns the first n rows of the full result, in file order.
#[test]
fn limit_returns_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let f = make_file(dir.path(), 0); // several row groups
    let path = f.path.to_str().unwrap();
    let (all, _) = tamis_scan(
        path,
        &Req {
            filter: Some("c2a_i32 IS NOT NULL OR id >= 0"),
            ..Req::default()
        },
    )
    .unwrap();
    for n in [0, 1, 5, 299, 300, 301, 1000, 100_000] {
        for t in [1, 4] {
            let req = Req {
                filter: Some("c2a_i32 IS NOT NULL OR id >= 0"),
                limit: Some(n),
                threads: Some(t),
                batch_size: Some(64),
                range_rows: (t > 1).then_some(97),
                ..Req::default()
            };
            let (got, _) = tamis_scan(path, &req).unwrap();
            let want = all.slice(0, n.min(all.num_rows()));
            assert!(
                diff_batches(&got, &want).is_none(),
                "limit {n} threads {t}: {:?}",
                diff_batches(&got, &want)
            );
        }
        let (got, _) = tamis_scan(
            path,
            &Req {
                limit: Some(n),
                ..Req::default()
            },
        )
        .unwrap();
        let want = f.data.slice(0, n.min(f.data.num_rows()));
        assert!(
            diff_batches(&got, &want).is_none(),
            "limit {n} no filter: {:?}",
            diff_batches(&got, &want)
        );
    }
}

/// `select` returns columns in the requested order, including reversed and repeated-free
/// subsets, and columns used only by the filter are not returned.
#[test]
fn projection_order() {
    let dir = tempfile::tempdir().unwrap();
    let f = make_file(dir.path(), 1);
    let path = f.path.to_str().unwrap();
    let mut names: Vec<String> = f.cols.iter().map(|c| c.name.clone()).collect();
    names.reverse();
    for sel in [
        names.clone(),
        names[3..7].to_vec(),
        vec![names[10].clone(), "id".into(), names[0].clone()],
    ] {
        for filter in [None, Some("id % 2 = 0"), Some("id >= 100 AND id < 500")] {
            let filter = filter.filter(|s| !s.contains('%'));
            let req = Req {
                filter,
                select: Some(sel.clone()),
                ..Req::default()
            };
            let (got, _) = tamis_scan(path, &req).unwrap();
            let base = match filter {
                Some(_) => {
                    let ids = f.data.column_by_name("id").unwrap();
                    let ids = ids.as_any().downcast_ref::<Int64Array>().unwrap();
                    let mask: BooleanArray = ids
                        .iter()
                        .map(|x| x.map(|x| (100..500).contains(&x)))
                        .collect();
                    filter_record_batch(&f.data, &mask).unwrap()
                }
                None => f.data.clone(),
            };
            let want = project(&base, &sel);
            let got_names: Vec<String> = got
                .schema()
                .fields()
                .iter()
                .map(|x| x.name().clone())
                .collect();
            assert_eq!(got_names, sel);
            assert!(
                diff_batches(&got, &want).is_none(),
                "{:?}",
                diff_batches(&got, &want)
            );
        }
    }
}

/// Regression: a predicate on an all-NULL optional column, dictionary enabled, no statistics
/// (so nothing prunes the chunk), UNCOMPRESSED (the default; SNAPPY/ZSTD are fine), must not fail
/// with "offset … lies outside the column chunk".
#[test]
fn filter_on_all_null_column_without_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("all_null.parquet");
    let n = 757;
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Int32, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from_iter_values(0..n as i64)),
            Arc::new(Int32Array::from(vec![None::<i32>; n])),
        ],
    )
    .unwrap();
    let props = WriterProperties::builder()
        .set_dictionary_enabled(true)
        .set_statistics_enabled(EnabledStatistics::None)
        .build();
    let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let p = path.to_str().unwrap();
    for (sql, want) in [
        ("x IS NULL", n),
        ("x IS NOT NULL", 0),
        ("x = 1", 0),
        ("id = 5 OR x = 1", 1),
    ] {
        let req = Req {
            filter: Some(sql),
            ..Req::default()
        };
        match tamis_scan(p, &req) {
            Ok((b, _)) => assert_eq!(b.num_rows(), want, "{sql}"),
            Err(e) => panic!("{sql}: {e}"),
        }
    }
}

/// Every filter order gives exactly the oracle's rows: the cost model's (`Auto`), the written
/// one, and pseudo-random permutations of every AND's filters and OR's children, on random
/// AND/OR/NOT trees (with nulls and NaN) up to depth 4.
#[test]
fn filter_orders_agree_with_oracle() {
    let dir = tempfile::tempdir().unwrap();
    let files = env_usize("TAMIS_DIFF_FILES", 30).min(12);
    let (mut total, mut failures) = (0, Vec::new());
    for i in 200..200 + files {
        let f = make_file(dir.path(), i);
        let mut rng = StdRng::seed_from_u64(f.seed ^ 0x0dde_4f11);
        for _ in 0..env_usize("TAMIS_DIFF_PREDICATES", 400) / 8 {
            // Conjunctions and disjunctions of several subtrees, so sequences have many filters.
            let mut p = gen_pred(&f, &mut rng, 2);
            for _ in 0..rng.random_range(1..5) {
                let q = Box::new(gen_pred(&f, &mut rng, 2));
                p = if rng.random_bool(0.6) {
                    P::And(Box::new(p), q)
                } else {
                    P::Or(Box::new(p), q)
                };
            }
            if rng.random_bool(0.2) {
                p = P::Not(Box::new(p));
            }
            let sql = render(&p, &f.cols);
            let threads = *[1, 2].choose(&mut rng).unwrap();
            let seed = rng.random();
            for (order, evaluation) in [
                (FilterOrder::Auto, Evaluation::Auto),
                (FilterOrder::AsWritten, Evaluation::Selected),
                (FilterOrder::Seeded(seed), Evaluation::Whole),
                (FilterOrder::Seeded(seed ^ 1), Evaluation::Auto),
            ] {
                total += 1;
                let proj = Some(vec!["id".to_string()]);
                if let Some(r) = check(&f, &sql, &p, proj, threads, 8192, None, order, evaluation) {
                    failures.push(format!("{f}\n{r}"));
                }
            }
        }
    }
    for r in failures.iter().take(10) {
        eprintln!("---- MISMATCH\n{r}\n");
    }
    assert!(
        failures.is_empty(),
        "{} of {total} (predicate, order) pairs disagree with the oracle",
        failures.len()
    );
}
