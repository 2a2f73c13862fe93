//! `tamis::optimize`: rows, schema and metadata survive (oracle: the `parquet` crate's reader and
//! Arrow's lexsort); every chunk has a page index; Bloom filters have no false negatives for any
//! type (checked with the parquet crate's `Sbbf::check` on independently plain-encoded values and
//! end to end with tamis scans), agree with tamis's Bloom pruning, and are sized from the measured
//! distinct counts; bad input fails cleanly without leaving files behind.

mod common;

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BooleanArray, Date32Array, Decimal128Array, DictionaryArray, Float32Array,
    Float64Array, Int32Array, Int64Array, Int8Array, ListArray, RecordBatch, StringArray,
    TimestampMicrosecondArray, UInt32Array,
};
use arrow::compute::{
    concat_batches, lexsort_to_indices, take_record_batch, SortColumn, SortOptions,
};
use arrow::datatypes::{DataType, Field, Int32Type, Schema, SchemaRef, TimeUnit};
use parquet::arrow::arrow_reader::ArrowReaderMetadata;
use parquet::arrow::ArrowWriter;
use parquet::bloom_filter::Sbbf;
use parquet::file::metadata::{KeyValue, ParquetMetaData};
use parquet::file::properties::WriterProperties;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use tamis::optimize::{optimize, OptimizeOptions, OptimizeReport};
use tamis::optimize::{theoretical_bytes, BloomRequest};
use tamis::{ErrorKind, Pruning, Scan};

fn schema() -> SchemaRef {
    let mut md = HashMap::new();
    md.insert("origin".to_string(), "tests/optimize.rs".to_string());
    Arc::new(Schema::new_with_metadata(
        vec![
            Field::new("i32", DataType::Int32, true),
            Field::new("i64", DataType::Int64, false),
            Field::new("f32", DataType::Float32, true),
            Field::new("f64", DataType::Float64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("i8", DataType::Int8, true),
            Field::new("u32", DataType::UInt32, true),
            Field::new("day", DataType::Date32, true),
            Field::new(
                "ts",
                DataType::Timestamp(TimeUnit::Microsecond, Some("+02:00".into())),
                true,
            ),
            Field::new("dec", DataType::Decimal128(10, 2), true),
            Field::new("big", DataType::Decimal128(30, 5), true),
            Field::new("flag", DataType::Boolean, true),
            Field::new(
                "dict",
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                true,
            ),
            Field::new(
                "list",
                DataType::List(Arc::new(Field::new("item", DataType::Int32, true))),
                true,
            ),
        ],
        md,
    ))
}

/// Floats drawn so that -0.0, 0.0, NaN and repeats all occur.
fn float(rng: &mut StdRng) -> f64 {
    match rng.random_range(0..10) {
        0 => 0.0,
        1 => -0.0,
        2 => f64::NAN,
        _ => rng.random_range(-500..500) as f64 / 4.0,
    }
}

fn batch(rng: &mut StdRng, rows: usize, base: i64) -> RecordBatch {
    let null = |rng: &mut StdRng| rng.random_range(0..17) == 0;
    let i32s: Vec<Option<i32>> = (0..rows)
        .map(|_| (!null(rng)).then(|| rng.random_range(-3000..3000) * 2)) // even: odd is absent
        .collect();
    let i64s: Vec<i64> = (0..rows).map(|r| (base + r as i64) * 3).collect();
    let f32s: Vec<Option<f32>> = (0..rows)
        .map(|_| (!null(rng)).then(|| float(rng) as f32))
        .collect();
    let f64s: Vec<Option<f64>> = (0..rows)
        .map(|_| (!null(rng)).then(|| float(rng)))
        .collect();
    let strs: Vec<Option<String>> = (0..rows)
        .map(|_| {
            (!null(rng)).then(|| match rng.random_range(0..20) {
                0 => String::new(),
                _ => format!("v{:05}", rng.random_range(0..4000) * 2),
            })
        })
        .collect();
    let list = ListArray::from_iter_primitive::<Int32Type, _, _>((0..rows).map(|r| {
        (r % 5 != 0).then(|| {
            (0..r % 4)
                .map(|k| Some(k as i32 + r as i32))
                .collect::<Vec<_>>()
        })
    }));
    let dict: DictionaryArray<Int32Type> = (0..rows)
        .map(|r| (r % 9 != 0).then(|| ["a", "b", "c"][r % 3]))
        .collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from(i32s)),
        Arc::new(Int64Array::from(i64s)),
        Arc::new(Float32Array::from(f32s)),
        Arc::new(Float64Array::from(f64s)),
        Arc::new(StringArray::from(strs)),
        Arc::new(Int8Array::from_iter((0..rows).map(|_| {
            (!null(rng)).then(|| rng.random_range(-128..=127i32) as i8)
        }))),
        Arc::new(UInt32Array::from_iter(
            (0..rows).map(|_| (!null(rng)).then(|| rng.random_range(0..u32::MAX))),
        )),
        Arc::new(Date32Array::from_iter(
            (0..rows).map(|_| (!null(rng)).then(|| rng.random_range(0..20_000))),
        )),
        Arc::new(
            TimestampMicrosecondArray::from_iter(
                (0..rows).map(|_| (!null(rng)).then(|| rng.random_range(0..1i64 << 50))),
            )
            .with_timezone("+02:00"),
        ),
        Arc::new(
            Decimal128Array::from_iter(
                (0..rows).map(|_| (!null(rng)).then(|| rng.random_range(-99_999i128..99_999))),
            )
            .with_precision_and_scale(10, 2)
            .unwrap(),
        ),
        Arc::new(
            Decimal128Array::from_iter(
                (0..rows)
                    .map(|_| (!null(rng)).then(|| rng.random_range(-(1i128 << 90)..(1i128 << 90)))),
            )
            .with_precision_and_scale(30, 5)
            .unwrap(),
        ),
        Arc::new(BooleanArray::from_iter(
            (0..rows).map(|_| (!null(rng)).then(|| rng.random_bool(0.5))),
        )),
        Arc::new(dict),
        Arc::new(list),
    ];
    RecordBatch::try_new(schema(), columns).unwrap()
}

fn write_input(path: &Path, batches: &[RecordBatch], kv: Vec<KeyValue>) {
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(1500))
        .set_key_value_metadata(Some(kv))
        .build();
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), schema(), Some(props)).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
}

fn metadata(path: &Path) -> (SchemaRef, Arc<ParquetMetaData>) {
    let m = ArrowReaderMetadata::load(&File::open(path).unwrap(), Default::default()).unwrap();
    (m.schema().clone(), m.metadata().clone())
}

fn kv(md: &ParquetMetaData) -> Vec<KeyValue> {
    md.file_metadata()
        .key_value_metadata()
        .into_iter()
        .flatten()
        .filter(|k| k.key != "ARROW:schema")
        .cloned()
        .collect()
}

/// Same columns and bit-identical rows (NaN payloads and the sign of zero included).
fn assert_same(got: &RecordBatch, want: &RecordBatch, what: &str) {
    if let Some(d) = common::diff_batches(got, want) {
        panic!("{what}: {d}");
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

struct Fixture {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    inputs: Vec<PathBuf>,
    all: RecordBatch,
}

fn fixture(rows_per_file: [usize; 2]) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(42);
    let mut inputs = Vec::new();
    let mut all = Vec::new();
    let mut base = 0;
    for (i, rows) in rows_per_file.into_iter().enumerate() {
        let batches: Vec<RecordBatch> = (0..rows)
            .step_by(1000)
            .map(|s| {
                let b = batch(&mut rng, 1000.min(rows - s), base);
                base += b.num_rows() as i64;
                b
            })
            .collect();
        let path = dir.path().join(format!("in{i}.parquet"));
        write_input(
            &path,
            &batches,
            vec![KeyValue::new("writer.note".into(), format!("file {i}"))],
        );
        inputs.push(path);
        all.extend(batches);
    }
    Fixture {
        dir: dir.path().to_path_buf(),
        _dir: dir,
        inputs,
        all: concat_batches(&schema(), &all).unwrap(),
    }
}

fn run(f: &Fixture, name: &str, options: &OptimizeOptions) -> (PathBuf, OptimizeReport) {
    let out = f.dir.join(name);
    let report = optimize(&f.inputs, &out, options, &mut |_, _, _| {}).unwrap();
    (out, report)
}

/// The oracle's sort: lexsort by the keys (ascending, nulls last), then input position (stable).
fn oracle_sorted(all: &RecordBatch, keys: &[&str]) -> RecordBatch {
    let opts = Some(SortOptions {
        descending: false,
        nulls_first: false,
    });
    let mut cols: Vec<SortColumn> = keys
        .iter()
        .map(|k| SortColumn {
            values: all.column_by_name(k).unwrap().clone(),
            options: opts,
        })
        .collect();
    cols.push(SortColumn {
        values: Arc::new(UInt32Array::from_iter_values(0..all.num_rows() as u32)),
        options: opts,
    });
    take_record_batch(all, &lexsort_to_indices(&cols, None).unwrap()).unwrap()
}

fn bloom_options() -> Vec<BloomRequest> {
    [
        "i32:0.01", "i64:0.05", "f32:0.01", "f64:0.01", "s:0.001", "u32", "day", "ts", "dec", "big",
    ]
    .iter()
    .map(|t| BloomRequest::parse(t).unwrap())
    .collect()
}

#[test]
fn rows_schema_metadata_and_page_index_survive_a_spilled_sort() {
    let f = fixture([4000, 3500]);
    let options = OptimizeOptions {
        sort_by: vec!["s".into(), "i32".into()],
        bloom_filters: bloom_options(),
        page_rows: 300,
        row_group_rows: 2000,
        memory_limit: 64 * 1024, // forces several spilled runs
        ..Default::default()
    };
    let (out, report) = run(&f, "sorted.parquet", &options);
    let sort = report.sort.as_ref().unwrap();
    assert!(sort.runs >= 2, "{sort:?}");
    // No spill directories or temporary files left.
    let names: Vec<String> = std::fs::read_dir(&f.dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");

    let got = common::oracle_read(&out).unwrap();
    let expect = oracle_sorted(&f.all, &["s", "i32"]);
    assert_same(&got, &expect, "sorted output");

    let (in_schema, in_md) = metadata(&f.inputs[0]);
    let (out_schema, out_md) = metadata(&out);
    assert_eq!(out_schema, in_schema, "arrow schema with metadata");
    assert_eq!(kv(&out_md), kv(&in_md), "parquet key-value metadata");
    let (a, b) = (
        in_md.file_metadata().schema_descr(),
        out_md.file_metadata().schema_descr(),
    );
    assert_eq!(a.num_columns(), b.num_columns());
    for i in 0..a.num_columns() {
        let (x, y) = (a.column(i), b.column(i));
        assert_eq!(x.path(), y.path());
        assert_eq!(x.physical_type(), y.physical_type(), "{}", x.path());
        assert_eq!(x.logical_type_ref(), y.logical_type_ref(), "{}", x.path());
        assert_eq!(x.converted_type(), y.converted_type(), "{}", x.path());
    }
    assert_eq!(out_md.num_row_groups(), 4); // 7500 rows / 2000
    assert_eq!(report.row_groups_after, 4);
    for rg in out_md.row_groups() {
        for cc in rg.columns() {
            assert!(cc.column_index_offset().is_some(), "{}", cc.column_path());
            assert!(cc.offset_index_offset().is_some(), "{}", cc.column_path());
        }
    }
    check_filters(&out, &got, &report);
}

#[test]
fn unsorted_output_keeps_the_input_order() {
    let f = fixture([2500, 1200]);
    let options = OptimizeOptions {
        bloom_filters: bloom_options(),
        row_group_rows: 1000,
        page_rows: 250,
        compression: Some(tamis::optimize::parse_compression("zstd").unwrap()),
        dictionary: false,
        ..Default::default()
    };
    let (out, report) = run(&f, "out.parquet", &options);
    assert!(report.sort.is_none());
    let got = common::oracle_read(&out).unwrap();
    assert_same(&got, &f.all, "same order");
    assert_eq!(report.row_groups_after, 4);
    assert_eq!(report.compression, "ZSTD(ZstdLevel(3))");
    check_filters(&out, &got, &report);
}

/// The plain encoding the Bloom filter hashes, computed here independently of both writers and
/// tamis: little-endian integers (INT32 for i32/date, INT64 for i64/decimal(10,2)), IEEE bits.
fn plain(col: &str, a: &ArrayRef, i: usize) -> Vec<u8> {
    let any = a.as_any();
    match col {
        "i32" => any
            .downcast_ref::<Int32Array>()
            .unwrap()
            .value(i)
            .to_le_bytes()
            .to_vec(),
        "i64" => any
            .downcast_ref::<Int64Array>()
            .unwrap()
            .value(i)
            .to_le_bytes()
            .to_vec(),
        "f32" => any
            .downcast_ref::<Float32Array>()
            .unwrap()
            .value(i)
            .to_le_bytes()
            .to_vec(),
        "f64" => any
            .downcast_ref::<Float64Array>()
            .unwrap()
            .value(i)
            .to_le_bytes()
            .to_vec(),
        "s" => any
            .downcast_ref::<StringArray>()
            .unwrap()
            .value(i)
            .as_bytes()
            .to_vec(),
        "u32" => any
            .downcast_ref::<UInt32Array>()
            .unwrap()
            .value(i)
            .to_le_bytes()
            .to_vec(),
        "day" => any
            .downcast_ref::<Date32Array>()
            .unwrap()
            .value(i)
            .to_le_bytes()
            .to_vec(),
        "ts" => any
            .downcast_ref::<TimestampMicrosecondArray>()
            .unwrap()
            .value(i)
            .to_le_bytes()
            .to_vec(),
        "dec" => (any.downcast_ref::<Decimal128Array>().unwrap().value(i) as i64)
            .to_le_bytes()
            .to_vec(),
        // decimal(30, 5): FIXED_LEN_BYTE_ARRAY(13), big-endian two's complement.
        "big" => any
            .downcast_ref::<Decimal128Array>()
            .unwrap()
            .value(i)
            .to_be_bytes()[3..]
            .to_vec(),
        _ => unreachable!("{col}"),
    }
}

/// A SQL literal for row `i` of `col` (what a user would type).
fn literal(col: &str, a: &ArrayRef, i: usize) -> String {
    let any = a.as_any();
    match col {
        "f32" | "f64" => {
            let v = match col {
                "f32" => any.downcast_ref::<Float32Array>().unwrap().value(i) as f64,
                _ => any.downcast_ref::<Float64Array>().unwrap().value(i),
            };
            if v.is_nan() {
                "CAST('NaN' AS DOUBLE)".into()
            } else {
                format!("{v:?}")
            }
        }
        "s" => format!("'{}'", any.downcast_ref::<StringArray>().unwrap().value(i)),
        "day" => format!(
            "DATE '{}'",
            any.downcast_ref::<Date32Array>()
                .unwrap()
                .value_as_date(i)
                .unwrap()
        ),
        "ts" => format!(
            "TIMESTAMP '{}'",
            arrow::util::display::array_value_to_string(a, i).unwrap()
        ),
        "dec" | "big" => arrow::util::display::array_value_to_string(a, i).unwrap(),
        _ => arrow::util::display::array_value_to_string(a, i).unwrap(),
    }
}

/// Every Bloom filter: no false negatives on any value of its row group (parquet's reader), sizes
/// from the measured distinct count, tamis's pruning agreeing with `Sbbf::check`, and tamis scans
/// for present values returning exactly the oracle's rows.
fn check_filters(out: &Path, data: &RecordBatch, report: &OptimizeReport) {
    let (_, md) = metadata(out);
    let file = File::open(out).unwrap();
    let descr = md.file_metadata().schema_descr();
    let mut rng = StdRng::seed_from_u64(7);
    let mut pruned_total = 0;
    for col_report in report.columns.iter().filter(|c| c.bloom.is_some()) {
        let name = col_report.name.as_str();
        let bloom = col_report.bloom.as_ref().unwrap();
        let leaf = (0..descr.num_columns())
            .find(|&l| descr.column(l).path().string() == name)
            .unwrap();
        let array = data.column_by_name(name).unwrap().clone();
        let mut start = 0;
        let mut filters = Vec::new();
        for rg in md.row_groups() {
            let rows = rg.num_rows() as usize;
            let cc = rg.column(leaf);
            let sbbf = Sbbf::read_from_column_chunk(cc, &file)
                .unwrap()
                .unwrap_or_else(|| panic!("{name}: no filter"));
            let mut distinct = HashSet::new();
            for i in start..start + rows {
                if array.is_valid(i) {
                    let bytes = plain(name, &array, i);
                    assert!(
                        sbbf.check(bytes.as_slice()),
                        "{name}: false negative at row {i}"
                    );
                    distinct.insert(bytes);
                }
            }
            // Sized from the measured distinct count: a power of two at least the formula's size
            // (the writer folds to the smallest one meeting the fpp), never 8x (bits as bytes).
            let bytes = sbbf.num_blocks() * 32;
            let theory = theoretical_bytes(distinct.len() as u64, bloom.fpp);
            assert!(bytes.is_power_of_two(), "{name}: {bytes}");
            assert!(
                bytes as f64 >= theory * 0.75 && (bytes as f64) < (2.0 * theory).max(64.0),
                "{name}: {bytes} bytes for {} distinct at fpp {} (formula: {theory:.0})",
                distinct.len(),
                bloom.fpp
            );
            filters.push((start..start + rows, sbbf));
            start += rows;
        }
        assert_eq!(bloom.filters, md.num_row_groups());
        assert!(bloom.max_ndv > 0);

        // Probes: present values (some rows at random, including ±0 and NaN for floats) and
        // absent ones (odd integers, odd-suffixed strings).
        let mut probes: Vec<(String, Option<Vec<u8>>)> = (0..15)
            .map(|_| rng.random_range(0..data.num_rows()))
            .filter(|&i| array.is_valid(i))
            .map(|i| (literal(name, &array, i), Some(plain(name, &array, i))))
            .collect();
        match name {
            "i32" => probes.extend((0..10).map(|k| (format!("{}", 2 * k * 97 + 1), None))),
            "s" => probes.extend((0..10).map(|k| (format!("'v{:05}'", 2 * k * 97 + 1), None))),
            "f32" | "f64" => {
                for lit in ["0.0", "-0.0", "CAST('NaN' AS DOUBLE)", "0.3", "1e30"] {
                    probes.push((lit.to_string(), None));
                }
            }
            _ => {}
        }
        for (lit, _) in &probes {
            let sql = format!("{name} = {lit}");
            // End to end, all pruning on: exactly the oracle's rows.
            let (got, _) = scan(out, &sql, Pruning::default());
            let expect = oracle_filter(data, name, lit);
            assert_eq!(got, expect, "{sql}: rows");
            // Bloom pruning alone: tamis prunes a row group exactly when parquet's
            // `Sbbf::check` says absent (probing both zeros for floats; never NaN).
            let only_bloom = Pruning {
                statistics: false,
                page_index: false,
                bloom_filters: true,
                sidecar_index: false,
                sub_page_reads: false,
            };
            let (got2, metrics) = scan(out, &sql, only_bloom);
            assert_eq!(got2, expect, "{sql}: rows, Bloom only");
            let is_nan = lit.contains("NaN");
            let probe_bytes: Vec<Vec<u8>> = match (name, lit.parse::<f64>()) {
                ("f32", Ok(v)) if v.abs() == 0.0 => {
                    vec![0f32.to_le_bytes().to_vec(), (-0f32).to_le_bytes().to_vec()]
                }
                ("f64", Ok(v)) if v.abs() == 0.0 => {
                    vec![0f64.to_le_bytes().to_vec(), (-0f64).to_le_bytes().to_vec()]
                }
                ("f32", Ok(v)) if (v as f32) as f64 == v => vec![(v as f32).to_le_bytes().to_vec()],
                ("f32", Ok(_)) => vec![], // no f32 equals it: tamis leaves it to evaluation
                ("f64", Ok(v)) => vec![v.to_le_bytes().to_vec()],
                _ => probes
                    .iter()
                    .find(|(l, _)| l == lit)
                    .and_then(|(_, b)| b.clone())
                    .map(|b| vec![b])
                    .unwrap_or_else(|| absent_bytes(name, lit)),
            };
            let expected_pruned = if is_nan || probe_bytes.is_empty() {
                0
            } else {
                filters
                    .iter()
                    .filter(|(_, f)| !probe_bytes.iter().any(|b| f.check(b.as_slice())))
                    .count() as u64
            };
            assert_eq!(
                metrics.row_groups_pruned_bloom, expected_pruned,
                "{sql}: row groups pruned by Bloom filters"
            );
            pruned_total += expected_pruned;
        }
    }
    assert!(
        pruned_total > 10,
        "absent probes must be pruned: {pruned_total}"
    );
}

fn absent_bytes(name: &str, lit: &str) -> Vec<Vec<u8>> {
    match name {
        "i32" => vec![lit.parse::<i32>().unwrap().to_le_bytes().to_vec()],
        "s" => vec![lit.trim_matches('\'').as_bytes().to_vec()],
        _ => vec![],
    }
}

fn scan(path: &Path, sql: &str, pruning: Pruning) -> (usize, tamis::ScanMetrics) {
    let mut stream = Scan::open(s(path))
        .unwrap()
        .filter(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .pruning(pruning)
        .threads(1)
        .batches()
        .unwrap();
    let rows = stream.by_ref().map(|b| b.unwrap().num_rows()).sum();
    (rows, stream.metrics())
}

/// The oracle's count of rows where `col = lit`, with tamis's documented float semantics
/// (IEEE equality, except NaN = NaN), from Arrow arrays.
fn oracle_filter(data: &RecordBatch, col: &str, lit: &str) -> usize {
    let a = data.column_by_name(col).unwrap();
    (0..data.num_rows())
        .filter(|&i| a.is_valid(i))
        .filter(|&i| match col {
            "f32" | "f64" => {
                let v = match col {
                    "f32" => a.as_any().downcast_ref::<Float32Array>().unwrap().value(i) as f64,
                    _ => a.as_any().downcast_ref::<Float64Array>().unwrap().value(i),
                };
                if lit.contains("NaN") {
                    v.is_nan()
                } else {
                    v == lit.parse::<f64>().unwrap()
                }
            }
            _ => literal(col, a, i) == lit,
        })
        .count()
}

#[test]
fn auto_picks_unclustered_high_cardinality_columns_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let n = 50_000usize;
    let mut rng = StdRng::seed_from_u64(3);
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("key", DataType::Int64, false),
        Field::new("mode", DataType::Utf8, false),
        Field::new("price", DataType::Float64, false),
        Field::new("comment", DataType::Utf8, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from_iter_values(0..n as i64)),
            Arc::new(Int64Array::from_iter_values(
                (0..n).map(|_| rng.random_range(0..200_000)),
            )),
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| ["AIR", "RAIL", "SHIP"][i % 3]),
            )),
            Arc::new(Float64Array::from_iter_values(
                (0..n).map(|_| rng.random_range(0.0..1e6)),
            )),
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|_| format!("c{}", rng.random_range(0..1_000_000))),
            )),
        ],
    )
    .unwrap();
    let input = dir.path().join("in.parquet");
    let mut w = ArrowWriter::try_new(File::create(&input).unwrap(), schema, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let out = dir.path().join("out.parquet");
    let options = OptimizeOptions {
        bloom_filters: vec![BloomRequest::parse("auto:0.02").unwrap()],
        row_group_rows: 25_000,
        page_rows: 2_000,
        ..Default::default()
    };
    let report = optimize(&[input], &out, &options, &mut |_, _, _| {}).unwrap();
    let choice = |c: &str| {
        report
            .bloom_choices
            .iter()
            .find(|x| x.column == c)
            .unwrap()
            .clone()
    };
    assert_eq!(choice("key").fpp, Some(0.02), "{:?}", choice("key"));
    assert_eq!(choice("comment").fpp, Some(0.02), "{:?}", choice("comment"));
    assert!(
        choice("id").reason.contains("clustered"),
        "{:?}",
        choice("id")
    );
    assert!(
        choice("mode").reason.contains("dictionary"),
        "{:?}",
        choice("mode")
    );
    assert!(
        choice("price").reason.contains("Float64"),
        "{:?}",
        choice("price")
    );
    for c in &report.bloom_choices {
        assert!(!c.reason.is_empty());
    }
    let (_, md) = metadata(&out);
    for rg in md.row_groups() {
        assert!(rg.column(1).bloom_filter_offset().is_some());
        assert!(rg.column(0).bloom_filter_offset().is_none());
    }
    // Measured false-positive rate of the key filters on absent keys: near the target.
    let file = File::open(&out).unwrap();
    let keys = batch
        .column(1)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    let present: HashSet<i64> = keys.values().iter().copied().collect();
    let filter = Sbbf::read_from_column_chunk(md.row_group(0).column(1), &file)
        .unwrap()
        .unwrap();
    let first_group: HashSet<i64> = keys.values()[..25_000].iter().copied().collect();
    let absent: Vec<i64> = (200_000..400_000)
        .filter(|k| !present.contains(k))
        .collect();
    let fp = absent.iter().filter(|k| filter.check(*k)).count() as f64 / absent.len() as f64;
    assert!(fp < 0.02 * 1.5, "measured fpp {fp}");
    assert!(first_group.iter().all(|k| filter.check(k)));
}

#[test]
fn bad_input_is_a_clear_error_and_leaves_no_file() {
    let f = fixture([500, 0]);
    let out = f.dir.join("out.parquet");
    let expect_error =
        |inputs: &[PathBuf], options: OptimizeOptions, needle: &str, kind: ErrorKind| {
            let e = optimize(inputs, &out, &options, &mut |_, _, _| {}).unwrap_err();
            assert_eq!(e.kind, kind, "{e}");
            assert!(
                e.to_string().contains(needle),
                "'{e}' should name '{needle}'"
            );
            let names: Vec<String> = std::fs::read_dir(&f.dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            assert_eq!(names.len(), 2, "left behind: {names:?}");
        };
    let with = |o: OptimizeOptions| o;
    expect_error(
        &f.inputs,
        with(OptimizeOptions {
            sort_by: vec!["nope".into()],
            ..Default::default()
        }),
        "nope",
        ErrorKind::InvalidArgument,
    );
    expect_error(
        &f.inputs,
        with(OptimizeOptions {
            bloom_filters: vec![BloomRequest::parse("missing:0.1").unwrap()],
            ..Default::default()
        }),
        "missing",
        ErrorKind::InvalidArgument,
    );
    for fpp in [0.0, 1.0, -0.5, 2.0, f64::NAN] {
        expect_error(
            &f.inputs,
            with(OptimizeOptions {
                bloom_filters: vec![BloomRequest::Column {
                    name: "i32".into(),
                    fpp,
                }],
                ..Default::default()
            }),
            "i32",
            ErrorKind::InvalidArgument,
        );
    }
    expect_error(
        &f.inputs,
        with(OptimizeOptions {
            bloom_filters: vec![BloomRequest::parse("flag").unwrap()],
            ..Default::default()
        }),
        "flag",
        ErrorKind::InvalidArgument,
    );
    // Unreadable, missing and mismatched inputs.
    let junk = f.dir.join("junk.parquet");
    std::fs::write(&junk, b"PAR1 not really").unwrap();
    let mut inputs = f.inputs.clone();
    inputs.push(junk.clone());
    let e = optimize(&inputs, &out, &Default::default(), &mut |_, _, _| {}).unwrap_err();
    assert!(e.to_string().contains("junk.parquet"), "{e}");
    std::fs::remove_file(&junk).unwrap();
    expect_error(
        &[f.inputs[0].clone(), f.dir.join("absent.parquet")],
        Default::default(),
        "absent.parquet",
        ErrorKind::Io,
    );
    let other = tempfile::tempdir().unwrap();
    let odd = other.path().join("odd.parquet");
    let odd_schema = Arc::new(Schema::new(vec![Field::new("i32", DataType::Int64, true)]));
    let w = ArrowWriter::try_new(File::create(&odd).unwrap(), odd_schema, None).unwrap();
    w.close().unwrap();
    expect_error(
        &[f.inputs[0].clone(), odd.clone()],
        Default::default(),
        "odd.parquet",
        ErrorKind::InvalidArgument,
    );
    // An existing output is replaced only on success.
    std::fs::write(&out, b"keep me").unwrap();
    let e = optimize(
        &[f.inputs[0].clone(), odd],
        &out,
        &Default::default(),
        &mut |_, _, _| {},
    )
    .unwrap_err();
    assert!(e.to_string().contains("'i32'"), "{e}");
    assert_eq!(std::fs::read(&out).unwrap(), b"keep me");
    // An empty input file is fine: zero rows out.
    std::fs::remove_file(&out).unwrap();
    let r = optimize(&f.inputs[1..], &out, &Default::default(), &mut |_, _, _| {}).unwrap();
    assert_eq!(r.rows, 0);
}
