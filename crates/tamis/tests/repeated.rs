//! List columns projected under a selection (the paper's Algorithm 4), against the `parquet`
//! crate's `ParquetRecordBatchReader` with a `RowSelection` of the same rows as the oracle.
//!
//! Files are generated from a seed: lists of every primitive kind tamis decodes, empty lists, null
//! lists, null elements, lists longer than a 64-level word and than a page, dictionary and PLAIN,
//! data page v1 and v2, with and without the page index, written by the Arrow writer (standard
//! 3-level lists) and by the low-level writer (the legacy 2-level forms and bare repeated
//! fields). Selections come from a filter on a column `k` whose matching rows the test knows:
//! empty, full, sparse, dense and clustered. Set `TAMIS_SEED` to change the seed,
//! `TAMIS_REPEATED_FILES` for a longer run.

mod common;

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow::array::*;
use arrow::datatypes::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReaderBuilder, RowSelection, RowSelector};
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::{Compression, Encoding};
use parquet::data_type::{Int32Type, Int64Type};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::{diff_batches, tamis_scan, Req};

fn base_seed() -> u64 {
    std::env::var("TAMIS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_1157)
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Writer settings of one generated file.
#[derive(Debug, Clone)]
struct Cfg {
    rows: usize,
    v2: bool,
    dictionary: bool,
    page_index: bool,
    page_rows: usize,
    batch: usize,
    page_bytes: usize,
    row_group_rows: usize,
    compression: Compression,
}

fn random_cfg(rng: &mut StdRng) -> Cfg {
    Cfg {
        rows: rng.random_range(0..1500),
        v2: rng.random_bool(0.5),
        dictionary: rng.random_bool(0.5),
        page_index: rng.random_bool(0.6),
        page_rows: [3, 17, 64, 200, 20_000][rng.random_range(0..5)],
        batch: [1, 7, 64, 1024][rng.random_range(0..4)],
        page_bytes: [256, 4096, 1 << 20][rng.random_range(0..3)],
        row_group_rows: [100, 700, 1 << 20][rng.random_range(0..3)],
        compression: [Compression::UNCOMPRESSED, Compression::SNAPPY][rng.random_range(0..2)],
    }
}

fn props(cfg: &Cfg) -> WriterProperties {
    WriterProperties::builder()
        .set_writer_version(if cfg.v2 {
            WriterVersion::PARQUET_2_0
        } else {
            WriterVersion::PARQUET_1_0
        })
        .set_dictionary_enabled(cfg.dictionary)
        .set_data_page_row_count_limit(cfg.page_rows)
        .set_write_batch_size(cfg.batch)
        .set_data_page_size_limit(cfg.page_bytes)
        .set_max_row_group_row_count(Some(cfg.row_group_rows))
        .set_compression(cfg.compression)
        .set_offset_index_disabled(!cfg.page_index)
        .set_statistics_enabled(if cfg.page_index {
            EnabledStatistics::Page
        } else {
            EnabledStatistics::Chunk
        })
        .build()
}

/// Length of a random list: mostly short, sometimes empty, sometimes longer than a 64-level word
/// or a whole page.
fn list_len(rng: &mut StdRng) -> usize {
    match rng.random_range(0..20) {
        0..=3 => 0,
        4..=15 => rng.random_range(1..5),
        16..=18 => rng.random_range(5..80),
        _ => rng.random_range(60..400),
    }
}

/// The values of `k`, one per row, in runs so that filters select clustered rows and pages
/// without a selected row exist.
fn k_column(rng: &mut StdRng, rows: usize) -> Vec<i32> {
    let mut k = Vec::with_capacity(rows);
    while k.len() < rows {
        let v = rng.random_range(0..8);
        let run = if rng.random_bool(0.5) {
            1
        } else {
            rng.random_range(1..120)
        };
        k.extend(std::iter::repeat_n(v, run.min(rows - k.len())));
    }
    k
}

/// A filter on `k` and the rows it selects.
fn random_filter(rng: &mut StdRng, k: &[i32]) -> (String, Vec<bool>) {
    let (text, pick): (String, Box<dyn Fn(i32) -> bool>) = match rng.random_range(0..6) {
        0 => ("k < 0".into(), Box::new(|_| false)),
        1 => ("k >= 0".into(), Box::new(|_| true)),
        2 => {
            let v = rng.random_range(0..8);
            (format!("k = {v}"), Box::new(move |x| x == v))
        }
        3 => {
            let v = rng.random_range(0..8);
            (format!("k <> {v}"), Box::new(move |x| x != v))
        }
        4 => {
            let v = rng.random_range(0..8);
            (format!("k < {v}"), Box::new(move |x| x < v))
        }
        _ => {
            let (a, b) = (rng.random_range(0..8), rng.random_range(0..8));
            (
                format!("k IN ({a}, {b})"),
                Box::new(move |x| x == a || x == b),
            )
        }
    };
    let rows = k.iter().map(|&x| pick(x)).collect();
    (text, rows)
}

/// The oracle: the `parquet` crate's reader, these top-level columns, these rows.
fn oracle(path: &Path, columns: &[&str], rows: &[bool]) -> RecordBatch {
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
    let schema = builder.parquet_schema();
    let roots: Vec<usize> = columns
        .iter()
        .map(|c| {
            schema
                .root_schema()
                .get_fields()
                .iter()
                .position(|f| f.name() == *c)
                .unwrap()
        })
        .collect();
    let mask = ProjectionMask::roots(schema, roots.iter().copied());
    let mut selectors: Vec<RowSelector> = Vec::new();
    for &r in rows {
        match selectors.last_mut() {
            Some(s) if s.skip != r => s.row_count += 1,
            _ => selectors.push(if r {
                RowSelector::select(1)
            } else {
                RowSelector::skip(1)
            }),
        }
    }
    let reader = builder
        .with_projection(mask)
        .with_row_selection(RowSelection::from(selectors))
        .with_batch_size(997)
        .build()
        .unwrap();
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    let batch = arrow::compute::concat_batches(&schema, &batches).unwrap();
    // Projection follows the file's column order; put the columns in the requested order.
    let idx: Vec<usize> = columns
        .iter()
        .map(|c| batch.schema().index_of(c).unwrap())
        .collect();
    batch.project(&idx).unwrap()
}

/// Scans `path` with `filter`, projecting `columns`, and compares with the oracle.
fn check(path: &Path, what: &str, filter: Option<&str>, rows: &[bool], columns: &[&str]) {
    let req = Req {
        filter,
        select: Some(columns.iter().map(|c| c.to_string()).collect()),
        ..Req::default()
    };
    let (got, metrics) = tamis_scan(path.to_str().unwrap(), &req)
        .unwrap_or_else(|e| panic!("{what}: tamis failed on {filter:?}: {e}"));
    let want = oracle(path, columns, rows);
    if let Some(d) = diff_batches(&got, &want) {
        panic!("{what}: filter {filter:?}, columns {columns:?}: {d}\nmetrics {metrics:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Files from the Arrow writer: standard 3-level lists of every native kind

fn list_of<T: Clone>(
    rng: &mut StdRng,
    rows: usize,
    null_list: bool,
    null_elem: bool,
    mut value: impl FnMut(&mut StdRng) -> T,
) -> Vec<Option<Vec<Option<T>>>> {
    (0..rows)
        .map(|_| {
            if null_list && rng.random_bool(0.15) {
                return None;
            }
            let n = list_len(rng);
            Some(
                (0..n)
                    .map(|_| {
                        if null_elem && rng.random_bool(0.2) {
                            None
                        } else {
                            Some(value(rng))
                        }
                    })
                    .collect(),
            )
        })
        .collect()
}

/// A list array of `item` from nested options (a null list where `None`).
fn list_array<B: ArrayBuilder, T>(
    builder: B,
    item: Field,
    data: Vec<Option<Vec<Option<T>>>>,
    mut append: impl FnMut(&mut B, Option<T>),
) -> ArrayRef {
    let mut b = ListBuilder::new(builder).with_field(Arc::new(item));
    for list in data {
        match list {
            None => b.append(false),
            Some(v) => {
                for e in v {
                    append(b.values(), e);
                }
                b.append(true);
            }
        }
    }
    Arc::new(b.finish())
}

const ARROW_LISTS: [&str; 7] = [
    "l_i32", "l_i64", "l_str", "l_f64", "l_bool", "l_large", "l_dec",
];

fn arrow_file(dir: &Path, i: usize) -> (std::path::PathBuf, Vec<i32>, Cfg) {
    let mut rng = StdRng::seed_from_u64(base_seed().wrapping_add(i as u64 * 104_729));
    let cfg = random_cfg(&mut rng);
    let rows = cfg.rows;
    let k = k_column(&mut rng, rows);
    // Low-cardinality pools so dictionaries are used where enabled.
    let small = |rng: &mut StdRng| rng.random_range(-5i32..5);
    let l_i32 = list_of(&mut rng, rows, true, true, small);
    let l_i64 = list_of(&mut rng, rows, false, false, |r| r.random::<i64>());
    let l_str = list_of(&mut rng, rows, true, true, |r| {
        ["", "a", "bb", "ccc", "a longer string"][r.random_range(0..5)].to_string()
    });
    let l_f64 = list_of(&mut rng, rows, false, true, |r| {
        [0.0, -0.0, 1.5, f64::NAN, -3.25][r.random_range(0..5)]
    });
    let l_bool = list_of(&mut rng, rows, true, false, |r| r.random_bool(0.3));
    let l_large = list_of(&mut rng, rows, true, true, small);
    let l_dec = list_of(&mut rng, rows, true, true, |r| {
        r.random_range(-99_999i128..99_999)
    });

    let f = |name: &str, t: DataType, nullable: bool| Field::new(name, t, nullable);
    let item = |t: DataType, nullable: bool| Field::new("item", t, nullable);
    let large_item = Arc::new(item(DataType::Int32, true));
    let mut large = LargeListBuilder::new(Int32Builder::new()).with_field(large_item.clone());
    for list in &l_large {
        match list {
            None => large.append(false),
            Some(v) => {
                for e in v {
                    large.values().append_option(*e);
                }
                large.append(true);
            }
        }
    }
    let columns: Vec<(Field, ArrayRef)> = vec![
        (
            f("id", DataType::Int64, false),
            Arc::new(Int64Array::from_iter_values(0..rows as i64)),
        ),
        (
            f("k", DataType::Int32, false),
            Arc::new(Int32Array::from(k.clone())),
        ),
        {
            let a = list_array(
                Int32Builder::new(),
                item(DataType::Int32, true),
                l_i32,
                |b, v| b.append_option(v),
            );
            (f("l_i32", a.data_type().clone(), true), a)
        },
        {
            let a = list_array(
                Int64Builder::new(),
                item(DataType::Int64, false),
                l_i64,
                |b, v| b.append_option(v),
            );
            (f("l_i64", a.data_type().clone(), false), a)
        },
        {
            let a = list_array(
                StringBuilder::new(),
                item(DataType::Utf8, true),
                l_str,
                |b, v| b.append_option(v),
            );
            (f("l_str", a.data_type().clone(), true), a)
        },
        {
            let a = list_array(
                Float64Builder::new(),
                item(DataType::Float64, true),
                l_f64,
                |b, v| b.append_option(v),
            );
            (f("l_f64", a.data_type().clone(), false), a)
        },
        {
            let a = list_array(
                BooleanBuilder::new(),
                item(DataType::Boolean, false),
                l_bool,
                |b, v| b.append_option(v),
            );
            (f("l_bool", a.data_type().clone(), true), a)
        },
        {
            let a: ArrayRef = Arc::new(large.finish());
            (f("l_large", a.data_type().clone(), true), a)
        },
        {
            let a = list_array(
                Decimal128Builder::new()
                    .with_precision_and_scale(9, 2)
                    .unwrap(),
                item(DataType::Decimal128(9, 2), true),
                l_dec,
                |b, v| b.append_option(v),
            );
            (f("l_dec", a.data_type().clone(), true), a)
        },
    ];
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = columns.into_iter().unzip();
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), arrays).unwrap();
    let path = dir.join(format!("lists_{i}.parquet"));
    let mut w =
        ArrowWriter::try_new(File::create(&path).unwrap(), schema, Some(props(&cfg))).unwrap();
    let mut off = 0;
    while off < rows {
        let n = rng.random_range(1..500).min(rows - off);
        w.write(&batch.slice(off, n)).unwrap();
        off += n;
    }
    w.close().unwrap();
    (path, k, cfg)
}

#[test]
fn arrow_lists_match_the_parquet_reader_under_selections() {
    let dir = tempfile::tempdir().unwrap();
    let files = env_usize("TAMIS_REPEATED_FILES", 24);
    for i in 0..files {
        let (path, k, cfg) = arrow_file(dir.path(), i);
        let mut rng = StdRng::seed_from_u64(base_seed() ^ (i as u64) << 20);
        // No filter: every row.
        let all = vec![true; k.len()];
        let mut columns: Vec<&str> = ARROW_LISTS.to_vec();
        columns.push("id");
        check(&path, &format!("file {i} {cfg:?}"), None, &all, &columns);
        for _ in 0..6 {
            let (filter, rows) = random_filter(&mut rng, &k);
            let pick = rng.random_range(0..ARROW_LISTS.len());
            let columns = ["id", ARROW_LISTS[pick], ARROW_LISTS[(pick + 3) % 7]];
            check(
                &path,
                &format!("file {i} {cfg:?}"),
                Some(&filter),
                &rows,
                &columns,
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Files from the low-level writer: 2-level lists and bare repeated fields

/// The list shapes with one repeated level (beyond the Arrow writer's 3-level lists), their max
/// definition level, and whether the list / the element can be null.
const LEGACY: [(&str, i16, bool, bool); 4] = [
    (
        "optional group l (LIST) { repeated int32 element; }",
        2,
        true,
        false,
    ),
    (
        "required group l (LIST) { repeated int32 element; }",
        1,
        false,
        false,
    ),
    ("repeated int32 l;", 1, false, false),
    (
        "required group l (LIST) { repeated group bag { optional int32 element; } }",
        2,
        false,
        true,
    ),
];

fn legacy_file(dir: &Path, shape: usize, i: usize) -> (std::path::PathBuf, Vec<i32>) {
    let mut rng = StdRng::seed_from_u64(base_seed().wrapping_add((shape * 1000 + i) as u64));
    let mut cfg = random_cfg(&mut rng);
    cfg.row_group_rows = 1 << 20; // the low-level writer writes one row group per call
    let (schema, max_def, null_list, null_elem) = LEGACY[shape];
    let message = format!(
        "message m {{ required int64 id; required int32 k; {schema} required int32 tail; }}"
    );
    let schema = Arc::new(parse_message_type(&message).unwrap());
    let rows = cfg.rows;
    let k = k_column(&mut rng, rows);
    let (mut reps, mut defs, mut values) = (Vec::new(), Vec::new(), Vec::new());
    let list_def = null_list as i16;
    for _ in 0..rows {
        if null_list && rng.random_bool(0.15) {
            reps.push(0);
            defs.push(0);
            continue;
        }
        let n = list_len(&mut rng);
        if n == 0 {
            reps.push(0);
            defs.push(list_def);
        }
        for j in 0..n {
            reps.push((j > 0) as i16);
            if null_elem && rng.random_bool(0.2) {
                defs.push(max_def - 1);
            } else {
                defs.push(max_def);
                values.push(rng.random_range(-3i32..3) * 1000 + j as i32);
            }
        }
    }
    let path = dir.join(format!("legacy_{shape}_{i}.parquet"));
    let mut w =
        SerializedFileWriter::new(File::create(&path).unwrap(), schema, Arc::new(props(&cfg)))
            .unwrap();
    let mut rg = w.next_row_group().unwrap();
    let ids: Vec<i64> = (0..rows as i64).collect();
    let mut c = rg.next_column().unwrap().unwrap();
    c.typed::<Int64Type>()
        .write_batch(&ids, None, None)
        .unwrap();
    c.close().unwrap();
    let mut c = rg.next_column().unwrap().unwrap();
    c.typed::<Int32Type>().write_batch(&k, None, None).unwrap();
    c.close().unwrap();
    let mut c = rg.next_column().unwrap().unwrap();
    c.typed::<Int32Type>()
        .write_batch(&values, Some(&defs), Some(&reps))
        .unwrap();
    c.close().unwrap();
    let mut c = rg.next_column().unwrap().unwrap();
    c.typed::<Int32Type>().write_batch(&k, None, None).unwrap();
    c.close().unwrap();
    rg.close().unwrap();
    w.close().unwrap();
    (path, k)
}

#[test]
fn legacy_list_forms_match_the_parquet_reader() {
    let dir = tempfile::tempdir().unwrap();
    let files = env_usize("TAMIS_REPEATED_FILES", 24) / 4;
    for (shape, legacy) in LEGACY.iter().enumerate() {
        for i in 0..files.max(2) {
            let (path, k) = legacy_file(dir.path(), shape, i);
            let what = format!("shape {} file {i}", legacy.0);
            let all = vec![true; k.len()];
            check(&path, &what, None, &all, &["l", "id"]);
            let mut rng = StdRng::seed_from_u64(base_seed() ^ (shape * 100 + i) as u64);
            for _ in 0..4 {
                let (filter, rows) = random_filter(&mut rng, &k);
                check(&path, &what, Some(&filter), &rows, &["id", "l"]);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Our path is the one taken, and it skips pages

#[test]
fn lists_are_read_by_tamis_and_skip_pages() {
    let dir = tempfile::tempdir().unwrap();
    let rows = 5000;
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int32, false),
        Field::new(
            "l",
            DataType::List(Arc::new(Field::new("item", DataType::Int64, true))),
            true,
        ),
    ]));
    let k: Vec<i32> = (0..rows as i32).map(|r| r / 100).collect();
    let mut b = ListBuilder::new(Int64Builder::new());
    for r in 0..rows {
        for j in 0..(r % 7) {
            b.values().append_option((j != 3).then_some((r * j) as i64));
        }
        b.append(r % 11 != 0);
    }
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(Int32Array::from(k.clone())), Arc::new(b.finish())],
    )
    .unwrap();
    for (page_index, v2) in [(true, false), (true, true), (false, false), (false, true)] {
        let cfg = Cfg {
            rows,
            v2,
            dictionary: false,
            page_index,
            page_rows: 100,
            batch: 50,
            page_bytes: 1 << 20,
            row_group_rows: 1 << 20,
            compression: Compression::UNCOMPRESSED,
        };
        let path = dir.path().join(format!("skip_{page_index}_{v2}.parquet"));
        let mut w = ArrowWriter::try_new(
            File::create(&path).unwrap(),
            schema.clone(),
            Some(props(&cfg)),
        )
        .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let rows_sel: Vec<bool> = k.iter().map(|&x| x == 7).collect();
        let req = Req {
            filter: Some("k = 7"),
            select: Some(vec!["l".into()]),
            ..Req::default()
        };
        let (got, m) = tamis_scan(path.to_str().unwrap(), &req).unwrap();
        let want = oracle(&path, &["l"], &rows_sel);
        assert!(
            diff_batches(&got, &want).is_none(),
            "{:?}",
            diff_batches(&got, &want)
        );
        // The list pages went through tamis (the fallback counts no pages) and, where the page
        // layout is known without reading (offset index, v2 headers), most were skipped.
        let expected_skip = page_index || v2;
        assert!(m.pages_read >= 2, "page_index {page_index} v2 {v2}: {m:?}");
        assert!(m.values_decoded > 0, "{m:?}");
        if expected_skip {
            assert!(
                m.pages_skipped_payload >= 40,
                "page_index {page_index} v2 {v2}: {m:?}"
            );
        }
    }
}

#[test]
fn dictionary_and_plain_pages_in_one_chunk() {
    // A dictionary that overflows falls back to PLAIN in the same column chunk.
    let dir = tempfile::tempdir().unwrap();
    let rows: i32 = 3000;
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int32, false),
        Field::new(
            "l",
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            false,
        ),
    ]));
    let k: Vec<i32> = (0..rows).map(|r| (r / 37) % 8).collect();
    let mut b = ListBuilder::new(StringBuilder::new());
    for r in 0..rows {
        for j in 0..(r % 5) {
            b.values()
                .append_option((j != 2).then(|| format!("value {}", r * 7 + j)));
        }
        b.append(true);
    }
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(Int32Array::from(k.clone())), Arc::new(b.finish())],
    )
    .unwrap();
    let props = WriterProperties::builder()
        .set_dictionary_page_size_limit(512)
        .set_data_page_row_count_limit(50)
        .set_write_batch_size(25)
        .set_column_encoding("k".into(), Encoding::PLAIN)
        .build();
    let path = dir.path().join("dict_fallback.parquet");
    let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    for (filter, pick) in [
        (
            "k = 3",
            Box::new(|x: i32| x == 3) as Box<dyn Fn(i32) -> bool>,
        ),
        ("k <> 3", Box::new(|x: i32| x != 3)),
    ] {
        let rows_sel: Vec<bool> = k.iter().map(|&x| pick(x)).collect();
        check(
            &path,
            "dictionary fallback",
            Some(filter),
            &rows_sel,
            &["l", "k"],
        );
    }
}
