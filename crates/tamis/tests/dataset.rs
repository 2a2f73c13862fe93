//! Multi-file datasets: hive partitions in predicates and projections, file pruning by partition
//! values, schema evolution across files, and predicates bound per file.
//!
//! The oracle is the generated data itself (rows with their partition values), filtered by an
//! independent three-valued evaluator of the same predicates.

mod common;

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow::array::*;
use arrow::datatypes::{DataType, Field, Schema};
use chrono::NaiveDate;
use common::batch;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};

fn write(path: &Path, batch: &RecordBatch, row_group_rows: usize) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(row_group_rows))
        .build();
    let mut w =
        ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), Some(props)).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

fn scan(
    path: &Path,
    filter: Option<&str>,
    select: Option<&[&str]>,
) -> (RecordBatch, tamis::ScanMetrics) {
    scan_with(
        tamis::Scan::open(path.to_str().unwrap()).unwrap(),
        filter,
        select,
    )
}

fn scan_with(
    mut scan: tamis::Scan,
    filter: Option<&str>,
    select: Option<&[&str]>,
) -> (RecordBatch, tamis::ScanMetrics) {
    if let Some(f) = filter {
        scan = scan.filter(f).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    if let Some(s) = select {
        scan = scan.select(s).unwrap();
    }
    let mut stream = scan.threads(2).batch_size(37).batches().unwrap();
    let schema = stream.schema();
    let batches: Vec<RecordBatch> = (&mut stream)
        .map(|b| b.unwrap_or_else(|e| panic!("{filter:?}: {e}")))
        .collect();
    let m = stream.metrics();
    (
        arrow::compute::concat_batches(&schema, &batches).unwrap(),
        m,
    )
}

fn day(s: &str) -> i32 {
    let d = NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
    (d - NaiveDate::from_ymd_opt(1970, 1, 1).unwrap()).num_days() as i32
}

// ── a tiny predicate language with an independent evaluator ────────────────────────────────

#[derive(Clone, Debug, PartialEq, PartialOrd)]
enum Lit {
    I(i64),
    S(String),
    D(i32),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Col {
    Id,
    V,
    S,
    Year,
    Day,
    Region,
}

const COLS: [Col; 6] = [Col::Id, Col::V, Col::S, Col::Year, Col::Day, Col::Region];

impl Col {
    fn name(self) -> &'static str {
        match self {
            Col::Id => "id",
            Col::V => "v",
            Col::S => "s",
            Col::Year => "year",
            Col::Day => "day",
            Col::Region => "region",
        }
    }
    fn is_partition(self) -> bool {
        matches!(self, Col::Year | Col::Day | Col::Region)
    }
    /// Literals worth comparing with (some absent from the data).
    fn literals(self) -> Vec<Lit> {
        match self {
            Col::Id => [0, 7, 150, 333, 9999].map(Lit::I).to_vec(),
            Col::V => [-21, -5, 0, 3, 19, 40].map(Lit::I).to_vec(),
            Col::S => ["a", "b", "c", "dd", "zz", ""]
                .map(|s| Lit::S(s.into()))
                .to_vec(),
            Col::Year => [2021, 2022, 2023, 2024].map(Lit::I).to_vec(),
            Col::Day => ["2023-12-31", "2024-01-01", "2024-01-02", "2024-01-03"]
                .map(|d| Lit::D(day(d)))
                .to_vec(),
            Col::Region => ["eu", "us", "x/y", "e", "zz"]
                .map(|s| Lit::S(s.into()))
                .to_vec(),
        }
    }
}

#[derive(Clone, Debug)]
enum P {
    Cmp(Col, &'static str, Lit),
    /// Two columns compared (either may be a partition key).
    Cols(Col, &'static str, Col),
    IsNull(Col, bool),
    In(Col, Vec<Lit>),
    And(Box<P>, Box<P>),
    Or(Box<P>, Box<P>),
    Not(Box<P>),
}

fn render_lit(l: &Lit) -> String {
    match l {
        Lit::I(i) => i.to_string(),
        Lit::S(s) => format!("'{}'", s.replace('\'', "''")),
        Lit::D(d) => {
            let date = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap()
                + chrono::Duration::days(i64::from(*d));
            format!("DATE '{}'", date.format("%Y-%m-%d"))
        }
    }
}

fn render(p: &P) -> String {
    match p {
        P::Cmp(c, op, l) => format!("{} {op} {}", c.name(), render_lit(l)),
        P::Cols(a, op, b) => format!("{} {op} {}", a.name(), b.name()),
        P::IsNull(c, true) => format!("{} IS NULL", c.name()),
        P::IsNull(c, false) => format!("{} IS NOT NULL", c.name()),
        P::In(c, ls) => format!(
            "{} IN ({})",
            c.name(),
            ls.iter().map(render_lit).collect::<Vec<_>>().join(", ")
        ),
        P::And(a, b) => format!("({} AND {})", render(a), render(b)),
        P::Or(a, b) => format!("({} OR {})", render(a), render(b)),
        P::Not(a) => format!("NOT ({})", render(a)),
    }
}

#[derive(Clone, Debug, PartialEq)]
struct Row {
    id: i64,
    v: Option<i32>,
    s: Option<String>,
    year: Option<i64>,
    day: Option<i32>,
    region: Option<String>,
}

impl Row {
    fn get(&self, c: Col) -> Option<Lit> {
        match c {
            Col::Id => Some(Lit::I(self.id)),
            Col::V => self.v.map(|v| Lit::I(v.into())),
            Col::S => self.s.clone().map(Lit::S),
            Col::Year => self.year.map(Lit::I),
            Col::Day => self.day.map(Lit::D),
            Col::Region => self.region.clone().map(Lit::S),
        }
    }
}

/// SQL three-valued logic: `None` is UNKNOWN.
fn eval(p: &P, r: &Row) -> Option<bool> {
    match p {
        P::Cmp(..) | P::Cols(..) => {
            let (x, op, y) = match p {
                P::Cmp(c, op, l) => (r.get(*c)?, op, l.clone()),
                P::Cols(a, op, b) => (r.get(*a)?, op, r.get(*b)?),
                _ => unreachable!(),
            };
            let o = x.partial_cmp(&y)?;
            Some(match *op {
                "=" => o.is_eq(),
                "<>" => o.is_ne(),
                "<" => o.is_lt(),
                "<=" => o.is_le(),
                ">" => o.is_gt(),
                ">=" => o.is_ge(),
                _ => unreachable!(),
            })
        }
        P::IsNull(c, is) => Some(r.get(*c).is_none() == *is),
        P::In(c, ls) => {
            let x = r.get(*c)?;
            Some(ls.contains(&x))
        }
        P::And(a, b) => match (eval(a, r), eval(b, r)) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        },
        P::Or(a, b) => match (eval(a, r), eval(b, r)) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        },
        P::Not(a) => eval(a, r).map(|b| !b),
    }
}

fn columns_of(p: &P, out: &mut Vec<Col>) {
    match p {
        P::Cmp(c, ..) | P::IsNull(c, _) | P::In(c, _) => out.push(*c),
        P::Cols(a, _, b) => out.extend([*a, *b]),
        P::And(a, b) | P::Or(a, b) => {
            columns_of(a, out);
            columns_of(b, out);
        }
        P::Not(a) => columns_of(a, out),
    }
}

fn gen_leaf(rng: &mut StdRng, cols: &[Col]) -> P {
    let c = *cols.choose(rng).unwrap();
    let lits = c.literals();
    // Columns of one type: integers (v is int32, year an int64 partition key), strings, dates.
    let group = |c: Col| match c {
        Col::Id | Col::V | Col::Year => 0,
        Col::S | Col::Region => 1,
        Col::Day => 2,
    };
    match rng.random_range(0..12) {
        0 => P::IsNull(c, rng.random()),
        10 | 11 => {
            let same: Vec<Col> = cols
                .iter()
                .copied()
                .filter(|&d| group(d) == group(c))
                .collect();
            P::Cols(
                c,
                ["=", "<>", "<", "<=", ">", ">="].choose(rng).unwrap(),
                *same.choose(rng).unwrap(),
            )
        }
        1 => P::In(
            c,
            (0..rng.random_range(1..4))
                .map(|_| lits.choose(rng).unwrap().clone())
                .collect(),
        ),
        _ => P::Cmp(
            c,
            ["=", "<>", "<", "<=", ">", ">="].choose(rng).unwrap(),
            lits.choose(rng).unwrap().clone(),
        ),
    }
}

fn gen_pred(rng: &mut StdRng, cols: &[Col], depth: usize) -> P {
    if depth == 0 || rng.random_range(0..3) == 0 {
        return gen_leaf(rng, cols);
    }
    let a = Box::new(gen_pred(rng, cols, depth - 1));
    match rng.random_range(0..5) {
        0 => P::Not(a),
        1 | 2 => P::And(a, Box::new(gen_pred(rng, cols, depth - 1))),
        _ => P::Or(a, Box::new(gen_pred(rng, cols, depth - 1))),
    }
}

// ── (a) hive partitions ──────────────────────────────────────────────────────────────────────

struct Hive {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    rows: Vec<Row>,
    /// Partition values of each file, in listing (path) order.
    files: Vec<(Option<i64>, Option<i32>, Option<String>)>,
}

/// `year=<int or NULL>/day=<date>/region=<string>/part-N.parquet`, columns id, v, s.
fn hive() -> Hive {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("hive");
    let mut rng = StdRng::seed_from_u64(7);
    let mut rows = Vec::new();
    let mut files = Vec::new();
    let mut id = 0i64;
    let mut k = 0;
    for year in [Some(2022), Some(2023), None] {
        for d in ["2024-01-01", "2024-01-02"] {
            for region in ["eu", "us", "x/y"] {
                k += 1;
                if k % 5 == 0 {
                    continue; // not every combination exists
                }
                let parts = if k % 3 == 0 { 2 } else { 1 };
                for part in 0..parts {
                    let n = rng.random_range(10..60);
                    let mut file_rows = Vec::new();
                    for _ in 0..n {
                        file_rows.push(Row {
                            id,
                            v: rng.random_bool(0.85).then(|| rng.random_range(-20..20)),
                            s: rng.random_bool(0.8).then(|| {
                                ["a", "b", "c", "dd"].choose(&mut rng).unwrap().to_string()
                            }),
                            year,
                            day: Some(day(d)),
                            region: Some(region.to_string()),
                        });
                        id += 1;
                    }
                    let b = batch(vec![
                        (
                            "id",
                            Arc::new(Int64Array::from_iter_values(file_rows.iter().map(|r| r.id))),
                            false,
                        ),
                        (
                            "v",
                            Arc::new(Int32Array::from_iter(file_rows.iter().map(|r| r.v))),
                            true,
                        ),
                        (
                            "s",
                            Arc::new(StringArray::from_iter(
                                file_rows.iter().map(|r| r.s.clone()),
                            )),
                            true,
                        ),
                    ]);
                    let y =
                        year.map_or("__HIVE_DEFAULT_PARTITION__".to_string(), |y| y.to_string());
                    let r = region.replace('/', "%2F");
                    let path = root
                        .join(format!("year={y}"))
                        .join(format!("day={d}"))
                        .join(format!("region={r}"))
                        .join(format!("part-{part}.parquet"));
                    write(&path, &b, 16);
                    rows.extend(file_rows);
                    files.push((path, (year, Some(day(d)), Some(region.to_string()))));
                }
            }
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Hive {
        _dir: dir,
        root,
        rows,
        files: files.into_iter().map(|(_, v)| v).collect(),
    }
}

/// The rows of a batch with columns id, v, s, year, day, region (any order, others ignored).
fn rows_of(b: &RecordBatch) -> Vec<Row> {
    let col = |n: &str| b.column(b.schema().index_of(n).unwrap()).clone();
    let id = col("id");
    let id = id.as_primitive::<arrow::datatypes::Int64Type>();
    let v = col("v");
    let v = v.as_primitive::<arrow::datatypes::Int32Type>();
    let s = col("s");
    let s = s.as_string::<i32>();
    let year = col("year");
    let year = year.as_primitive::<arrow::datatypes::Int64Type>();
    let d = col("day");
    let d = d.as_primitive::<arrow::datatypes::Date32Type>();
    let region = col("region");
    let region = region.as_string::<i32>();
    let mut rows: Vec<Row> = (0..b.num_rows())
        .map(|i| Row {
            id: id.value(i),
            v: v.is_valid(i).then(|| v.value(i)),
            s: s.is_valid(i).then(|| s.value(i).to_string()),
            year: year.is_valid(i).then(|| year.value(i)),
            day: d.is_valid(i).then(|| d.value(i)),
            region: region.is_valid(i).then(|| region.value(i).to_string()),
        })
        .collect();
    rows.sort_by_key(|r| r.id);
    rows
}

fn check(h: &Hive, p: &P) -> tamis::ScanMetrics {
    let sql = render(p);
    let (got, m) = scan(&h.root, Some(&sql), None);
    let want: Vec<Row> = h
        .rows
        .iter()
        .filter(|r| eval(p, r) == Some(true))
        .cloned()
        .collect();
    let got = rows_of(&got);
    if got != want {
        let first = got.iter().zip(&want).position(|(a, b)| a != b);
        panic!(
            "{sql}: got {} rows, want {}; first difference at {first:?}: got {:?} want {:?}",
            got.len(),
            want.len(),
            first.and_then(|i| got.get(i)),
            first.and_then(|i| want.get(i)),
        );
    }
    assert_eq!(m.rows_selected as usize, want.len(), "{sql}");
    // A predicate on partition columns only prunes exactly the files it rejects.
    let mut cols = Vec::new();
    columns_of(p, &mut cols);
    if cols.iter().all(|c| c.is_partition()) {
        let rejected = h
            .files
            .iter()
            .filter(|(year, day, region)| {
                let r = Row {
                    id: 0,
                    v: None,
                    s: None,
                    year: *year,
                    day: *day,
                    region: region.clone(),
                };
                eval(p, &r) != Some(true)
            })
            .count();
        assert_eq!(m.files_pruned_partition as usize, rejected, "{sql}");
    }
    assert_eq!(
        (m.files + m.files_pruned_partition) as usize,
        h.files.len(),
        "{sql}"
    );
    m
}

/// The schema of a plain scan of the hive dataset.
fn plain_schema(h: &Hive) -> arrow::datatypes::SchemaRef {
    let mut scan = tamis::Scan::open(h.root.to_str().unwrap()).unwrap();
    scan.schema().unwrap()
}

#[test]
fn hive_schema_and_full_scan() {
    let h = hive();
    let mut scan = tamis::Scan::open(h.root.to_str().unwrap()).unwrap();
    let fields: Vec<(String, DataType)> = scan
        .schema()
        .unwrap()
        .fields()
        .iter()
        .map(|f| (f.name().clone(), f.data_type().clone()))
        .collect();
    assert_eq!(
        fields,
        vec![
            ("id".into(), DataType::Int64),
            ("v".into(), DataType::Int32),
            ("s".into(), DataType::Utf8),
            ("year".into(), DataType::Int64),
            ("day".into(), DataType::Date32),
            ("region".into(), DataType::Utf8),
        ]
    );
    assert_eq!(scan.files().len(), h.files.len());
    let (got, m) = scan_with(scan, None, None);
    assert_eq!(rows_of(&got), h.rows);
    // With string views: the file column `s` a view, the partition columns as they were.
    let mut views = tamis::Scan::open(h.root.to_str().unwrap())
        .unwrap()
        .string_views(true);
    let types: Vec<DataType> = (views.schema().unwrap().fields().iter())
        .map(|f| f.data_type().clone())
        .collect();
    use DataType::*;
    assert_eq!(types, [Int64, Int32, Utf8View, Int64, Date32, Utf8]);
    let (got, _) = scan_with(views, None, None);
    let mut columns = got.columns().to_vec();
    columns[2] = arrow::compute::cast(&columns[2], &Utf8).unwrap();
    let got = RecordBatch::try_new(plain_schema(&h), columns).unwrap();
    assert_eq!(rows_of(&got), h.rows);
    assert_eq!(m.files as usize, h.files.len());
    assert_eq!(m.files_pruned_partition, 0);
}

#[test]
fn hand_written_predicates() {
    let h = hive();
    let lit_s = |s: &str| Lit::S(s.into());
    let cases = vec![
        P::Cmp(Col::Year, "=", Lit::I(2023)),
        P::IsNull(Col::Year, true),
        P::IsNull(Col::Year, false),
        P::And(
            Box::new(P::Cmp(Col::Region, "=", lit_s("x/y"))),
            Box::new(P::Cmp(Col::Day, "=", Lit::D(day("2024-01-02")))),
        ),
        P::Or(
            Box::new(P::Cmp(Col::Year, "=", Lit::I(2022))),
            Box::new(P::Cmp(Col::V, ">", Lit::I(10))),
        ),
        P::And(
            Box::new(P::Cmp(Col::Year, ">=", Lit::I(2023))),
            Box::new(P::Cmp(Col::S, "=", lit_s("dd"))),
        ),
        P::Not(Box::new(P::In(Col::Region, vec![lit_s("eu"), lit_s("us")]))),
        P::Cmp(Col::Year, "<>", Lit::I(2022)),
        // A file column compared with a partition key takes the file's value of the key (NULL
        // under __HIVE_DEFAULT_PARTITION__); two keys compare per file.
        P::Cols(Col::Id, "<", Col::Year),
        P::Cols(Col::V, "<>", Col::Year),
        P::Not(Box::new(P::Cols(Col::Year, ">", Col::Id))),
        P::Cols(Col::S, "<=", Col::Region),
        P::Cols(Col::Day, "=", Col::Day),
        P::Or(
            Box::new(P::Cols(Col::Year, "=", Col::Year)),
            Box::new(P::Cols(Col::S, "<", Col::Region)),
        ),
    ];
    for p in &cases {
        check(&h, p);
    }
    // Partition-only predicates skip files before reading any row group.
    let m = check(&h, &cases[0]);
    assert!(m.files_pruned_partition > 0 && m.files > 0);
    let m = check(&h, &P::Cmp(Col::Year, "=", Lit::I(1999)));
    assert_eq!(m.files, 0);
    assert_eq!(m.row_groups_total, 0);
}

#[test]
fn random_predicates_mixing_partition_and_file_columns() {
    let h = hive();
    let mut rng = StdRng::seed_from_u64(11);
    for i in 0..150 {
        let p = if i % 3 == 0 {
            let parts: Vec<Col> = COLS.iter().copied().filter(|c| c.is_partition()).collect();
            gen_pred(&mut rng, &parts, 2)
        } else {
            gen_pred(&mut rng, &COLS, 3)
        };
        check(&h, &p);
    }
}

#[test]
fn projections_of_partition_columns() {
    let h = hive();
    let want: Vec<&Row> = h
        .rows
        .iter()
        .filter(|r| r.v.is_some_and(|v| v > 5))
        .collect();
    let (got, _) = scan(&h.root, Some("v > 5"), Some(&["region", "id", "year"]));
    let schema = got.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["region", "id", "year"]);
    assert_eq!(got.num_rows(), want.len());
    let ids = got.column(1).as_primitive::<arrow::datatypes::Int64Type>();
    let region = got.column(0).as_string::<i32>();
    let year = got.column(2).as_primitive::<arrow::datatypes::Int64Type>();
    for i in 0..got.num_rows() {
        let r = h.rows.iter().find(|r| r.id == ids.value(i)).unwrap();
        assert_eq!(Some(region.value(i).to_string()), r.region);
        assert_eq!(year.is_valid(i).then(|| year.value(i)), r.year);
    }
    // Only partition columns: nothing to read from the files but the row count.
    let (got, m) = scan(&h.root, Some("region = 'us' AND s = 'a'"), Some(&["year"]));
    let want = h
        .rows
        .iter()
        .filter(|r| r.region.as_deref() == Some("us") && r.s.as_deref() == Some("a"))
        .count();
    assert_eq!(got.num_rows(), want);
    assert_eq!(got.num_columns(), 1);
    assert!(m.files_pruned_partition > 0);
}

#[test]
fn explicit_partition_types() {
    let h = hive();
    let mut scan = tamis::Scan::open(h.root.to_str().unwrap())
        .unwrap()
        .filter("year = 2023 AND region = 'eu'")
        .unwrap()
        .partition_types(&[("year", DataType::Int16), ("region", DataType::Utf8)])
        .unwrap();
    let schema = scan.schema().unwrap();
    assert_eq!(
        schema.field_with_name("year").unwrap().data_type(),
        &DataType::Int16
    );
    assert_eq!(
        schema.field_with_name("day").unwrap().data_type(),
        &DataType::Date32
    );
    let (got, _) = scan_with(scan, None, Some(&["id", "year"]));
    let want = h
        .rows
        .iter()
        .filter(|r| r.year == Some(2023) && r.region.as_deref() == Some("eu"))
        .count();
    assert_eq!(got.num_rows(), want);
    let e = tamis::Scan::open(h.root.to_str().unwrap())
        .unwrap()
        .partition_types(&[("region", DataType::Int64)])
        .err()
        .expect("an error");
    assert!(e.message.contains("is not a valid Int64"), "{e}");
    // Unknown columns are reported against the dataset's columns, partitions included.
    let e = tamis::Scan::open(h.root.to_str().unwrap())
        .unwrap()
        .filter("nope = 1")
        .err()
        .expect("an error");
    assert!(e.message.contains("region"), "{e}");
}

#[test]
fn partition_filters_prune_files_before_their_footers_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    let ids = Int64Array::from((0..100).collect::<Vec<i64>>());
    let x = Int32Array::from((0..100).map(|i| i % 7).collect::<Vec<i32>>());
    write(
        &root.join("k=1/a.parquet"),
        &batch(vec![
            ("id", Arc::new(ids), false),
            ("x", Arc::new(x), false),
        ]),
        30,
    );
    // Not Parquet: any read of its footer fails, naming it.
    let bad = root.join("k=2/b.parquet");
    std::fs::create_dir_all(bad.parent().unwrap()).unwrap();
    std::fs::write(&bad, b"not a parquet file at all").unwrap();
    let path = root.to_str().unwrap();
    let oracle = common::oracle_read(&root.join("k=1/a.parquet")).unwrap();
    let want = |min_x: i32| -> Vec<i64> {
        let id = oracle
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        let x = oracle
            .column(1)
            .as_any()
            .downcast_ref::<Int32Array>()
            .unwrap();
        (0..oracle.num_rows())
            .filter(|&i| x.value(i) > min_x)
            .map(|i| id.value(i))
            .collect()
    };
    let ids_of = |b: &RecordBatch| -> Vec<i64> {
        let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        a.values().to_vec()
    };
    for sql in [
        "k = 1 AND x > 3",
        "x > 3 AND NOT k <> 1",
        "(k = 1 OR k = 3) AND x > 3",
    ] {
        let scan = tamis::Scan::open(path).unwrap();
        assert_eq!(scan.files().len(), 2);
        let (got, m) = scan_with(scan, Some(sql), Some(&["id", "k"]));
        assert_eq!(ids_of(&got), want(3), "{sql}");
        assert_eq!(m.files_pruned_partition, 1, "{sql}");
        assert_eq!(m.files, 1, "{sql}");
    }
    // Every file pruned: one footer is still read for the schema, no row.
    let (got, m) = scan(&root, Some("k = 9"), None);
    assert_eq!(
        (got.num_rows(), m.files_pruned_partition, m.files),
        (0, 2, 0)
    );
    // A predicate that cannot rule the file out by its path reads its footer: a clean error.
    for sql in ["k = 1 OR x > 3", "x > 3"] {
        let e = tamis::Scan::open(path)
            .unwrap()
            .filter(sql)
            .err()
            .expect(sql);
        assert!(e.to_string().contains("b.parquet"), "{sql}: {e}");
    }
    // So does a projection chosen before the filter, and a scan without one.
    let e = tamis::Scan::open(path)
        .unwrap()
        .select(&["id"])
        .err()
        .expect("select");
    assert!(e.to_string().contains("b.parquet"), "{e}");
    // A second filter chooses the files again.
    let scan = tamis::Scan::open(path).unwrap().filter("k = 9").unwrap();
    let (got, _) = scan_with(scan, Some("k = 1 AND x > 3"), Some(&["id"]));
    assert_eq!(ids_of(&got), want(3));
}

// ── (b) evolved schemas ──────────────────────────────────────────────────────────────────────

#[test]
fn evolved_schemas_fill_missing_columns_with_null() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("evolved");
    // f1: id, a (required); f2: id, a (nullable), b; f3: b, id.
    write(
        &root.join("f1.parquet"),
        &batch(vec![
            ("id", Arc::new(Int64Array::from(vec![1, 2, 3])), false),
            ("a", Arc::new(Int64Array::from(vec![10, 20, 30])), false),
        ]),
        2,
    );
    write(
        &root.join("f2.parquet"),
        &batch(vec![
            ("id", Arc::new(Int64Array::from(vec![4, 5, 6])), false),
            (
                "a",
                Arc::new(Int64Array::from(vec![Some(40), None, Some(5)])),
                true,
            ),
            (
                "b",
                Arc::new(StringArray::from(vec![Some("x"), Some("y"), None])),
                true,
            ),
        ]),
        2,
    );
    write(
        &root.join("f3.parquet"),
        &batch(vec![
            (
                "b",
                Arc::new(StringArray::from(vec![Some("x"), None])),
                true,
            ),
            ("id", Arc::new(Int64Array::from(vec![7, 8])), false),
        ]),
        2,
    );
    type R = (i64, Option<i64>, Option<&'static str>);
    let all: Vec<R> = vec![
        (1, Some(10), None),
        (2, Some(20), None),
        (3, Some(30), None),
        (4, Some(40), Some("x")),
        (5, None, Some("y")),
        (6, Some(5), None),
        (7, None, Some("x")),
        (8, None, None),
    ];
    let mut opened = tamis::Scan::open(root.to_str().unwrap()).unwrap();
    assert_eq!(
        opened.schema().unwrap().as_ref(),
        &Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Utf8, true),
        ])
    );
    let rows = |b: &RecordBatch| -> Vec<R> {
        let id = b.column(0).as_primitive::<arrow::datatypes::Int64Type>();
        let a = b.column(1).as_primitive::<arrow::datatypes::Int64Type>();
        let s = b.column(2).as_string::<i32>();
        let mut out: Vec<R> = (0..b.num_rows())
            .map(|i| {
                let b = s.is_valid(i).then(|| {
                    let v: &'static str = Box::leak(s.value(i).to_string().into_boxed_str());
                    v
                });
                (id.value(i), a.is_valid(i).then(|| a.value(i)), b)
            })
            .collect();
        out.sort();
        out
    };
    type Case = (&'static str, fn(&R) -> bool, u64);
    let cases: Vec<Case> = vec![
        ("TRUE", |_| true, 0),
        ("b IS NULL", |r| r.2.is_none(), 0),
        ("b = 'x'", |r| r.2 == Some("x"), 1),
        (
            "a > 15 OR b = 'x'",
            |r| r.1.is_some_and(|a| a > 15) || r.2 == Some("x"),
            0,
        ),
        ("NOT (b = 'x')", |r| r.2.is_some_and(|b| b != "x"), 1),
        (
            "a IS NULL AND b IS NOT NULL",
            |r| r.1.is_none() && r.2.is_some(),
            1,
        ),
        ("a < 35", |r| r.1.is_some_and(|a| a < 35), 1),
        // A column a file lacks is NULL in comparisons between columns too: f3 holds no row.
        ("a > id", |r| r.1.is_some_and(|a| a > r.0), 1),
        ("NOT (a <= id)", |r| r.1.is_some_and(|a| a > r.0), 1),
        (
            "a - id > 30 OR b = 'x'",
            |r| r.1.is_some_and(|a| a - r.0 > 30) || r.2 == Some("x"),
            0,
        ),
        ("b = b AND id = id", |r| r.2.is_some(), 1),
    ];
    for (sql, keep, pruned) in cases {
        let (got, m) = scan(&root, Some(sql), None);
        let want: Vec<R> = all.iter().filter(|r| keep(r)).cloned().collect();
        assert_eq!(rows(&got), want, "{sql}");
        // Files lacking a column the predicate needs non-NULL are skipped like partitions.
        assert_eq!(m.files_pruned_partition, pruned, "{sql}");
        // With string views: `b` a view in every file, NULL where a file lacks it.
        let views = tamis::Scan::open(root.to_str().unwrap()).unwrap();
        let (got, _) = scan_with(views.string_views(true), Some(sql), None);
        assert_eq!(got.column(2).data_type(), &DataType::Utf8View, "{sql}");
        let plain = arrow::compute::cast(got.column(2), &DataType::Utf8).unwrap();
        let mut columns = got.columns().to_vec();
        columns[2] = plain;
        let got = RecordBatch::try_new(opened.schema().unwrap(), columns).unwrap();
        assert_eq!(rows(&got), want, "{sql} with string views");
    }
    // A missing column in a projection is NULL too.
    let (got, _) = scan(&root, Some("id >= 3"), Some(&["b", "id"]));
    assert_eq!(got.num_rows(), 6);
    assert_eq!(got.column(0).null_count(), 3);
}

#[test]
fn type_conflicts_name_both_files_and_the_column() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("conflict");
    write(
        &root.join("x.parquet"),
        &batch(vec![("c", Arc::new(Int64Array::from(vec![1])), true)]),
        8,
    );
    write(
        &root.join("y.parquet"),
        &batch(vec![("c", Arc::new(StringArray::from(vec!["1"])), true)]),
        8,
    );
    let e = tamis::Scan::open(root.to_str().unwrap())
        .err()
        .expect("an error");
    assert_eq!(e.kind, tamis::ErrorKind::InvalidArgument);
    let x = root.join("x.parquet").display().to_string();
    let y = root.join("y.parquet").display().to_string();
    assert_eq!(
        e.message,
        format!("column 'c' is Int64 in {x} but Utf8 in {y}")
    );
}

// ── (c) predicates bound per file ────────────────────────────────────────────────────────────

/// The same Decimal128(7, 2) column stored as INT32 in one file and FIXED_LEN_BYTE_ARRAY in the
/// other: literals must be converted for each file's physical type.
#[test]
fn predicates_bind_to_each_files_physical_type() {
    use parquet::data_type::{ByteArray, FixedLenByteArray};
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("decimals");
    std::fs::create_dir_all(&root).unwrap();
    let a: Vec<(i64, i32)> = vec![(1, 100), (2, 150), (3, 151), (4, 200), (5, -5)];
    let b: Vec<(i64, i32)> = vec![(6, 149), (7, 150), (8, 250), (9, -300)];
    let decimals = Decimal128Array::from_iter_values(a.iter().map(|x| i128::from(x.1)))
        .with_precision_and_scale(7, 2)
        .unwrap();
    write(
        &root.join("a.parquet"),
        &batch(vec![
            (
                "id",
                Arc::new(Int64Array::from_iter_values(a.iter().map(|x| x.0))),
                false,
            ),
            ("d", Arc::new(decimals), false),
        ]),
        8,
    );
    let schema = parse_message_type(
        "message m { required int64 id; required fixed_len_byte_array(4) d (DECIMAL(7,2)); }",
    )
    .unwrap();
    let file = File::create(root.join("b.parquet")).unwrap();
    let mut w = SerializedFileWriter::new(file, Arc::new(schema), Default::default()).unwrap();
    let mut rg = w.next_row_group().unwrap();
    let mut col = rg.next_column().unwrap().unwrap();
    col.typed::<parquet::data_type::Int64Type>()
        .write_batch(&b.iter().map(|x| x.0).collect::<Vec<_>>(), None, None)
        .unwrap();
    col.close().unwrap();
    let mut col = rg.next_column().unwrap().unwrap();
    let values: Vec<FixedLenByteArray> = b
        .iter()
        .map(|x| FixedLenByteArray::from(ByteArray::from(x.1.to_be_bytes().to_vec())))
        .collect();
    col.typed::<parquet::data_type::FixedLenByteArrayType>()
        .write_batch(&values, None, None)
        .unwrap();
    col.close().unwrap();
    rg.close().unwrap();
    w.close().unwrap();

    let mut opened = tamis::Scan::open(root.to_str().unwrap()).unwrap();
    assert_eq!(
        opened.schema().unwrap().field(1).data_type(),
        &DataType::Decimal128(7, 2)
    );
    let all: Vec<(i64, i32)> = a.iter().chain(&b).cloned().collect();
    type Case = (&'static str, fn(i32) -> bool);
    let cases: Vec<Case> = vec![
        ("d > 1.5", |d| d > 150),
        ("d = 1.50", |d| d == 150),
        ("d BETWEEN -1 AND 1.5", |d| (-100..=150).contains(&d)),
        ("d IN (2, -3)", |d| d == 200 || d == -300),
        ("d < 0 OR d >= 2.5", |d| !(0..250).contains(&d)),
    ];
    for (sql, keep) in cases {
        let (got, _) = scan_with(
            tamis::Scan::open(root.to_str().unwrap()).unwrap(),
            Some(sql),
            None,
        );
        let id = got.column(0).as_primitive::<arrow::datatypes::Int64Type>();
        let d = got
            .column(1)
            .as_primitive::<arrow::datatypes::Decimal128Type>();
        let mut rows: Vec<(i64, i32)> = (0..got.num_rows())
            .map(|i| (id.value(i), d.value(i) as i32))
            .collect();
        rows.sort();
        let want: Vec<(i64, i32)> = all.iter().filter(|x| keep(x.1)).cloned().collect();
        assert_eq!(rows, want, "{sql}");
    }
}

// ── (d) many files ───────────────────────────────────────────────────────────────────────────

#[test]
fn hundreds_of_tiny_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("many");
    let mut id = 0i64;
    for k in 0..10 {
        for part in 0..30 {
            let ids: Vec<i64> = (id..id + 3).collect();
            id += 3;
            write(
                &root.join(format!("k={k}/part-{part:03}.parquet")),
                &batch(vec![("id", Arc::new(Int64Array::from(ids)), false)]),
                8,
            );
        }
    }
    let (got, m) = scan(&root, None, None);
    assert_eq!(got.num_rows(), 900);
    assert_eq!(m.files, 300);
    let ids = got.column(0).as_primitive::<arrow::datatypes::Int64Type>();
    assert!(ids.values().iter().copied().eq(0..900), "file order kept");
    let (got, m) = scan(&root, Some("k = 3 OR k = 4 AND id < 370"), None);
    let ids = got.column(0).as_primitive::<arrow::datatypes::Int64Type>();
    assert!(ids.values().iter().copied().eq(270..370));
    assert_eq!((m.files, m.files_pruned_partition), (60, 240));
    // Of k=4's files only the four holding an id below 370 are read: the others' row groups
    // are pruned by their footer statistics without reopening the files.
    assert_eq!(m.row_groups_pruned_statistics, 26);
    assert_eq!(m.row_groups_total, 60);
}

/// A dataset split by files, each part opened alone by name with the dataset's root and
/// partition types (as a Spark executor opens its part): the parts' rows together are the
/// whole dataset's, partition values included, and each part reads only its own footers.
#[test]
fn named_files_of_a_dataset_read_as_the_dataset_does() {
    let h = hive();
    let root = h.root.to_str().unwrap();
    let whole = tamis::Dataset::open(root).unwrap();
    assert_eq!(whole.root().as_deref(), Some(root));
    let types: Vec<(String, DataType)> = whole.plan().partitions.fields.clone();
    let typed: Vec<(&str, DataType)> = types.iter().map(|(n, t)| (n.as_str(), t.clone())).collect();
    let files = whole.files();
    let mut rows = Vec::new();
    for chunk in files.chunks(3) {
        let named: Vec<(String, Option<u64>)> = chunk.iter().map(|f| (f.clone(), None)).collect();
        let listing = tamis::io::named(Some(root), &named, &Default::default()).unwrap();
        let scan = tamis::Scan::open_listing(listing)
            .unwrap()
            .partition_types(&typed)
            .unwrap()
            .select(&["id", "v", "s", "year", "day", "region"])
            .unwrap();
        let (got, m) = scan_with(scan, Some("v IS NULL OR v > -15"), None);
        assert_eq!(m.files as usize, chunk.len());
        rows.extend(rows_of(&got));
    }
    rows.sort_by_key(|r| r.id);
    let want: Vec<Row> = (h.rows.iter())
        .filter(|r| r.v.is_none_or(|v| v > -15))
        .cloned()
        .collect();
    assert_eq!(rows, want);
    // A row-group range of one named file (row groups of 16 rows).
    let file = (files.iter())
        .find(|f| rows_in_file(f) > 16)
        .unwrap()
        .clone();
    let named = [(file.clone(), None)];
    let listing = tamis::io::named(Some(root), &named, &Default::default()).unwrap();
    let scan = tamis::Scan::open_listing(listing)
        .unwrap()
        .partition_types(&typed)
        .unwrap()
        .row_groups(vec![(file.clone(), 1..2)]);
    let (got, _) = scan_with(scan, None, None);
    assert_eq!(got.num_rows(), 16.min(rows_in_file(&file) - 16));
    assert!(tamis::io::named(Some(root), &[], &Default::default()).is_err());
    // A file named twice is read once.
    let twice = [(file.clone(), None), (file.clone(), None)];
    let listing = tamis::io::named(Some(root), &twice, &Default::default()).unwrap();
    assert_eq!(listing.files.len(), 1);
    let (got, _) = scan_with(tamis::Scan::open_listing(listing).unwrap(), None, None);
    assert_eq!(got.num_rows(), rows_in_file(&file));
}

fn rows_in_file(path: &str) -> usize {
    let reader =
        parquet::file::reader::SerializedFileReader::new(File::open(path).unwrap()).unwrap();
    parquet::file::reader::FileReader::metadata(&reader)
        .file_metadata()
        .num_rows() as usize
}

// ── (e) types widened across files ───────────────────────────────────────────────────────────

/// A predicate's oracle: which values of the widened column it selects.
type Oracle = Box<dyn Fn(&ArrayRef) -> BooleanArray>;

/// `kernel(x, literal)` with the literal a one-value array of the widened type.
fn kernel(
    f: fn(
        &dyn arrow::array::Datum,
        &dyn arrow::array::Datum,
    ) -> Result<BooleanArray, arrow::error::ArrowError>,
    literal: ArrayRef,
) -> Oracle {
    Box::new(move |x| f(x, &Scalar::new(literal.clone())).unwrap())
}

/// Files whose column `x` has a different type in each, read as one dataset: the column takes
/// the wider type, every file's values are cast to it, and predicates on it select what the
/// `parquet` crate's reader, Arrow's `cast` to the wider type and Arrow's comparison kernels
/// select.
#[test]
fn safe_widenings_unify_and_predicates_bind_per_file() {
    use arrow::compute::kernels::cmp::{eq, gt, lt};
    use arrow::datatypes::TimeUnit::{Microsecond, Nanosecond};
    let i64s = |v: i64| -> ArrayRef { Arc::new(Int64Array::from(vec![v])) };
    let utc = |unit, tz: Option<&str>| DataType::Timestamp(unit, tz.map(Into::into));
    // 2024-01-01T00:00:00Z in milliseconds.
    const T0: i64 = 1_704_067_200_000;
    type Case = (
        &'static str,
        Vec<ArrayRef>,
        DataType,
        Vec<(&'static str, Oracle)>,
    );
    let cases: Vec<Case> = vec![
        (
            "int32 and int64",
            vec![
                Arc::new(Int32Array::from(vec![
                    Some(1),
                    Some(-5),
                    Some(i32::MAX),
                    None,
                ])),
                Arc::new(Int64Array::from(vec![
                    Some(3_000_000_000),
                    Some(2),
                    Some(-7),
                    None,
                ])),
            ],
            DataType::Int64,
            vec![
                ("x > 1", kernel(gt, i64s(1))),
                // Out of int32's range: no row of the first file, not an error there.
                ("x = 3000000000", kernel(eq, i64s(3_000_000_000))),
                ("x < 0", kernel(lt, i64s(0))),
            ],
        ),
        (
            "uint32 and int32 (int64 in no file)",
            vec![
                Arc::new(UInt32Array::from(vec![
                    Some(4_000_000_000),
                    Some(1),
                    Some(0),
                    None,
                ])),
                Arc::new(Int32Array::from(vec![-1, 5, 2_000_000_000])),
            ],
            DataType::Int64,
            vec![
                ("x > 3000000000", kernel(gt, i64s(3_000_000_000))),
                ("x < 1", kernel(lt, i64s(1))),
                ("x = 5", kernel(eq, i64s(5))),
            ],
        ),
        (
            "float and double",
            vec![
                Arc::new(Float32Array::from(vec![
                    Some(0.1),
                    Some(1.5),
                    Some(-2.0),
                    None,
                ])),
                Arc::new(Float64Array::from(vec![0.1, 2.5, -3.0])),
            ],
            DataType::Float64,
            vec![
                // The float 0.1 is not the double 0.1: only the second file's row.
                (
                    "x = 0.1",
                    kernel(eq, Arc::new(Float64Array::from(vec![0.1]))),
                ),
                ("x > 1", kernel(gt, Arc::new(Float64Array::from(vec![1.0])))),
            ],
        ),
        (
            "decimal(10,2) and decimal(12,4)",
            vec![
                Arc::new(
                    Decimal128Array::from(vec![Some(150), Some(-5), Some(100_000), None])
                        .with_precision_and_scale(10, 2)
                        .unwrap(),
                ),
                Arc::new(
                    Decimal128Array::from(vec![15_000, 10_050, -1])
                        .with_precision_and_scale(12, 4)
                        .unwrap(),
                ),
            ],
            DataType::Decimal128(12, 4),
            vec![
                (
                    "x > 1.005",
                    kernel(
                        gt,
                        Arc::new(
                            Decimal128Array::from(vec![10_050])
                                .with_precision_and_scale(12, 4)
                                .unwrap(),
                        ),
                    ),
                ),
                (
                    "x = 1.5",
                    kernel(
                        eq,
                        Arc::new(
                            Decimal128Array::from(vec![15_000])
                                .with_precision_and_scale(12, 4)
                                .unwrap(),
                        ),
                    ),
                ),
            ],
        ),
        (
            "timestamp(ms) and timestamp(ns)",
            vec![
                Arc::new(TimestampMillisecondArray::from(vec![
                    Some(T0 + 1),
                    Some(0),
                    None,
                ])),
                Arc::new(TimestampNanosecondArray::from(vec![
                    T0 * 1_000_000 + 500_000,
                    T0 * 1_000_000 + 2_000_000,
                ])),
            ],
            utc(Nanosecond, None),
            vec![
                (
                    "x > TIMESTAMP '2024-01-01 00:00:00.0009'",
                    kernel(
                        gt,
                        Arc::new(TimestampNanosecondArray::from(vec![
                            T0 * 1_000_000 + 900_000,
                        ])),
                    ),
                ),
                (
                    "x = TIMESTAMP '2024-01-01 00:00:00.001'",
                    kernel(
                        eq,
                        Arc::new(TimestampNanosecondArray::from(vec![
                            T0 * 1_000_000 + 1_000_000,
                        ])),
                    ),
                ),
            ],
        ),
        (
            "timestamps in two zones",
            vec![
                Arc::new(
                    TimestampMicrosecondArray::from(vec![T0 * 1000, T0 * 1000 + 7])
                        .with_timezone("+01:00"),
                ),
                Arc::new(
                    TimestampMillisecondArray::from(vec![T0, T0 + 3_600_000])
                        .with_timezone("America/New_York"),
                ),
            ],
            utc(Microsecond, Some("UTC")),
            vec![
                (
                    "x = TIMESTAMP '2024-01-01 01:00:00+01:00'",
                    kernel(
                        eq,
                        Arc::new(
                            TimestampMicrosecondArray::from(vec![T0 * 1000]).with_timezone("UTC"),
                        ),
                    ),
                ),
                (
                    "x > TIMESTAMP '2024-01-01 00:00:00.000001+00:00'",
                    kernel(
                        gt,
                        Arc::new(
                            TimestampMicrosecondArray::from(vec![T0 * 1000 + 1])
                                .with_timezone("UTC"),
                        ),
                    ),
                ),
            ],
        ),
        (
            "string, large_string and string_view",
            vec![
                Arc::new(StringViewArray::from(vec![Some("a"), Some("b"), None])),
                Arc::new(LargeStringArray::from(vec!["b", "ab"])),
                Arc::new(StringArray::from(vec!["c", "abc"])),
            ],
            DataType::Utf8,
            vec![
                (
                    "x = 'b'",
                    kernel(eq, Arc::new(StringArray::from(vec!["b"]))),
                ),
                (
                    "x > 'ab'",
                    kernel(gt, Arc::new(StringArray::from(vec!["ab"]))),
                ),
                (
                    "x LIKE 'a%'",
                    Box::new(|x: &ArrayRef| {
                        x.as_string::<i32>()
                            .iter()
                            .map(|v| v.map(|s| s.starts_with('a')))
                            .collect()
                    }),
                ),
            ],
        ),
    ];
    for (name, arrays, want, predicates) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut id = 0i64;
        let mut expected: Vec<(i64, ArrayRef)> = Vec::new();
        for (k, x) in arrays.iter().enumerate() {
            let ids = Int64Array::from_iter_values(id..id + x.len() as i64);
            id += x.len() as i64;
            let path = dir.path().join(format!("f{k}.parquet"));
            write(
                &path,
                &batch(vec![("id", Arc::new(ids), false), ("x", x.clone(), true)]),
                2,
            );
            // The oracle: the file as the `parquet` crate reads it, `x` cast to the wider type.
            let read = common::oracle_read(&path).unwrap();
            assert_eq!(read.column(1).data_type(), x.data_type(), "{name}");
            let cast = arrow::compute::cast(read.column(1), &want).unwrap();
            let ids = read.column(0).as_primitive::<arrow::datatypes::Int64Type>();
            for i in 0..read.num_rows() {
                expected.push((ids.value(i), cast.slice(i, 1)));
            }
        }
        let mut opened = tamis::Scan::open(dir.path().to_str().unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            opened.schema().unwrap().field(1).data_type(),
            &want,
            "{name}"
        );
        let everything: Oracle = Box::new(|x: &ArrayRef| BooleanArray::from(vec![true; x.len()]));
        let mut all: Vec<(&str, Oracle)> = vec![("TRUE", everything)];
        all.extend(predicates);
        for (sql, oracle) in all {
            let (got, _) = scan(dir.path(), Some(sql), None);
            assert_eq!(got.column(1).data_type(), &want, "{name}: {sql}");
            let got_ids = got.column(0).as_primitive::<arrow::datatypes::Int64Type>();
            let mut rows: Vec<(i64, ArrayRef)> = (0..got.num_rows())
                .map(|i| (got_ids.value(i), got.column(1).slice(i, 1)))
                .collect();
            rows.sort_by_key(|r| r.0);
            let want_rows: Vec<&(i64, ArrayRef)> = expected
                .iter()
                .filter(|(_, x)| {
                    let keep = oracle(x);
                    keep.is_valid(0) && keep.value(0)
                })
                .collect();
            assert_eq!(
                rows.iter().map(|r| r.0).collect::<Vec<_>>(),
                want_rows.iter().map(|r| r.0).collect::<Vec<_>>(),
                "{name}: {sql}"
            );
            for ((_, g), (_, w)) in rows.iter().zip(want_rows) {
                assert_eq!(g.as_ref(), w.as_ref(), "{name}: {sql}");
            }
        }
    }
}

/// A millisecond timestamp beyond the years nanoseconds reach, in a dataset widened to
/// nanoseconds: an error naming the file and the column, never a NULL.
#[test]
fn a_value_the_wider_type_cannot_hold_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let ms = TimestampMillisecondArray::from(vec![32_503_680_000_000i64]); // 3000-01-01
    let ns = TimestampNanosecondArray::from(vec![0i64]);
    write(
        &dir.path().join("a.parquet"),
        &batch(vec![("x", Arc::new(ms), true)]),
        8,
    );
    write(
        &dir.path().join("b.parquet"),
        &batch(vec![("x", Arc::new(ns), true)]),
        8,
    );
    let e = tamis::Scan::open(dir.path().to_str().unwrap())
        .unwrap()
        .batches()
        .unwrap()
        .find_map(|b| b.err())
        .expect("an error for the value out of range");
    let text = e.to_string();
    assert!(text.contains("a.parquet") && text.contains("'x'"), "{text}");
}
