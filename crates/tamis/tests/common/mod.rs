//! Helpers shared by the integration tests: the oracle (the `parquet` crate's reader plus Arrow
//! kernels), running tamis, and comparing record batches.
#![allow(dead_code)]

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Float32Array, Float64Array, RecordBatch};
use arrow::compute::concat_batches;
use arrow::datatypes::{DataType, Schema, SchemaRef};
use arrow::util::display::{ArrayFormatter, FormatOptions};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// A record batch of `(name, values, nullable)` columns.
pub fn batch(cols: Vec<(&str, ArrayRef, bool)>) -> RecordBatch {
    let fields: Vec<arrow::datatypes::Field> = cols
        .iter()
        .map(|(n, a, nullable)| arrow::datatypes::Field::new(*n, a.data_type().clone(), *nullable))
        .collect();
    RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        cols.into_iter().map(|(_, a, _)| a).collect(),
    )
    .unwrap()
}

/// Reads a whole file with the `parquet` crate, all columns, concatenated. Top-level INT96
/// columns are read in microseconds, the unit tamis gives INT96 (the crate's default,
/// nanoseconds, wraps around beyond 2262); the crate converts them itself.
pub fn oracle_read(path: &Path) -> Result<RecordBatch, String> {
    use arrow::datatypes::{Field, TimeUnit};
    use parquet::arrow::arrow_reader::ArrowReaderOptions;
    let f = File::open(path).map_err(|e| e.to_string())?;
    let mut b = ParquetRecordBatchReaderBuilder::try_new(f.try_clone().map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let int96: Vec<String> = (b.parquet_schema().columns().iter())
        .filter(|c| c.physical_type() == parquet::basic::Type::INT96 && c.path().parts().len() == 1)
        .map(|c| c.path().parts()[0].clone())
        .collect();
    if !int96.is_empty() {
        let fields: Vec<Field> = (b.schema().fields().iter())
            .map(|f| match f.data_type() {
                DataType::Timestamp(_, tz) if int96.contains(f.name()) => f
                    .as_ref()
                    .clone()
                    .with_data_type(DataType::Timestamp(TimeUnit::Microsecond, tz.clone())),
                _ => f.as_ref().clone(),
            })
            .collect();
        let schema = Schema::new_with_metadata(fields, b.schema().metadata().clone());
        let options = ArrowReaderOptions::new().with_schema(Arc::new(schema));
        b = ParquetRecordBatchReaderBuilder::try_new_with_options(f, options)
            .map_err(|e| e.to_string())?;
    }
    let schema = b.schema().clone();
    let reader = b.with_batch_size(4096).build().map_err(|e| e.to_string())?;
    let mut batches = Vec::new();
    for r in reader {
        batches.push(r.map_err(|e| e.to_string())?);
    }
    concat_batches(&schema, &batches).map_err(|e| e.to_string())
}

/// What a tamis scan is asked to do.
#[derive(Clone, Debug, Default)]
pub struct Req<'a> {
    pub filter: Option<&'a str>,
    pub select: Option<Vec<String>>,
    pub threads: Option<usize>,
    pub limit: Option<usize>,
    pub batch_size: Option<usize>,
    /// Rows a row group hands on at a time (`None`: the default).
    pub range_rows: Option<usize>,
    /// `None`: the default (`Auto`).
    pub filter_order: Option<tamis::FilterOrder>,
    /// `None`: the default (`Auto`).
    pub evaluation: Option<tamis::Evaluation>,
    /// Run the scan on the calling thread (`ScanStream::drive`) rather than iterate it.
    pub drive: bool,
    /// Dictionary-encoded strings and binaries as views (`Scan::string_views`); the batch
    /// returned is cast back to the plain scan's types after checking that only those columns
    /// may have changed type.
    pub string_views: bool,
    /// Decimals of at most 18 digits as `Decimal64` (`Scan::short_decimals`); cast back like
    /// views.
    pub short_decimals: bool,
    /// Dictionary-encoded strings and binaries as Arrow dictionaries
    /// (`Scan::string_dictionaries`); cast back like views.
    pub string_dictionaries: bool,
    /// `None`: every structure (`Pruning::default`).
    pub pruning: Option<tamis::Pruning>,
    /// Every column's pages kept in the page cache on their first read
    /// (`Scan::keep_pages_on_first_read`).
    pub keep_first_reads: bool,
}

/// Runs tamis; returns the concatenated batches and the metrics.
pub fn tamis_scan(path: &str, req: &Req) -> tamis::Result<(RecordBatch, tamis::ScanMetrics)> {
    let mut scan = tamis::Scan::open(path)?;
    if let Some(f) = req.filter {
        scan = scan.filter(f)?;
    }
    if let Some(s) = &req.select {
        scan = scan.select(s)?;
    }
    if let Some(t) = req.threads {
        scan = scan.threads(t);
    }
    if let Some(b) = req.batch_size {
        scan = scan.batch_size(b);
    }
    if let Some(r) = req.range_rows {
        scan = scan.range_rows(r);
    }
    if let Some(o) = req.filter_order {
        scan = scan.filter_order(o);
    }
    if let Some(e) = req.evaluation {
        scan = scan.evaluation(e);
    }
    if let Some(p) = req.pruning {
        scan = scan.pruning(p);
    }
    let kept: Vec<String> = match req.keep_first_reads {
        true => (scan.schema()?.fields().iter().map(|f| f.name().clone())).collect(),
        false => Vec::new(),
    };
    scan = (scan.limit(req.limit))
        .string_views(req.string_views)
        .short_decimals(req.short_decimals)
        .string_dictionaries(req.string_dictionaries)
        .keep_pages_on_first_read(kept);
    let mut stream = scan.batches()?;
    let schema = stream.schema();
    let mut batches = Vec::new();
    if req.drive {
        stream.drive(|b| {
            batches.push(b);
            true
        })?;
    } else {
        for b in &mut stream {
            batches.push(b?);
        }
    }
    let m = stream.metrics();
    let batch = concat_batches(&schema, &batches).expect("tamis batches concatenate");
    if !req.string_views && !req.short_decimals && !req.string_dictionaries {
        return Ok((batch, m));
    }
    // The plain scan's schema: every column keeps its type but for strings and binaries (as
    // views) and short decimals (as `Decimal64`).
    let mut plain = tamis::Scan::open(path)?;
    if let Some(s) = &req.select {
        plain = plain.select(s)?;
    }
    let plain = plain.schema()?;
    let columns = (batch.columns().iter().zip(plain.fields()))
        .map(|(c, f)| {
            let view = match f.data_type() {
                t @ (DataType::Utf8 | DataType::Binary) if req.string_dictionaries => {
                    DataType::Dictionary(Box::new(DataType::Int32), Box::new(t.clone()))
                }
                DataType::Utf8 | DataType::LargeUtf8 if req.string_views => DataType::Utf8View,
                DataType::Binary | DataType::LargeBinary if req.string_views => {
                    DataType::BinaryView
                }
                DataType::Decimal128(p, s) if req.short_decimals && *p <= 18 => {
                    DataType::Decimal64(*p, *s)
                }
                other => other.clone(),
            };
            let typed = c.data_type() == &view || c.data_type() == f.data_type();
            assert!(typed, "column {} is {} ({req:?})", f.name(), c.data_type());
            arrow::compute::cast(c, f.data_type()).unwrap()
        })
        .collect();
    Ok((RecordBatch::try_new(plain, columns).unwrap(), m))
}

/// Float columns with -0.0 → 0.0 and every NaN → positive `NAN`, so Arrow's total order equals
/// SQL (DuckDB) semantics. Other columns are returned unchanged.
pub fn normalize(a: &ArrayRef) -> ArrayRef {
    match a.data_type() {
        DataType::Float64 => {
            let x = a.as_any().downcast_ref::<Float64Array>().unwrap();
            Arc::new(x.unary::<_, arrow::datatypes::Float64Type>(norm64))
        }
        DataType::Float32 => {
            let x = a.as_any().downcast_ref::<Float32Array>().unwrap();
            Arc::new(x.unary::<_, arrow::datatypes::Float32Type>(|v| norm64(v as f64) as f32))
        }
        _ => a.clone(),
    }
}

pub fn norm64(v: f64) -> f64 {
    if v.is_nan() {
        f64::NAN
    } else if v == 0.0 {
        0.0
    } else {
        v
    }
}

/// Projects a batch by column names.
pub fn project(b: &RecordBatch, names: &[String]) -> RecordBatch {
    let idx: Vec<usize> = names
        .iter()
        .map(|n| b.schema().index_of(n).unwrap())
        .collect();
    b.project(&idx).unwrap()
}

fn strip(s: &SchemaRef) -> Schema {
    Schema::new(s.fields().clone())
}

pub fn fmt_cell(a: &dyn Array, i: usize) -> String {
    let opts = FormatOptions::default().with_null("NULL");
    match ArrayFormatter::try_new(a, &opts) {
        Ok(f) => {
            let mut s = f.value(i).to_string();
            if let Some(x) = a.as_any().downcast_ref::<Float64Array>() {
                if a.is_valid(i) {
                    s = format!("{:?} (bits {:#x})", x.value(i), x.value(i).to_bits());
                }
            }
            s
        }
        Err(_) => "?".into(),
    }
}

pub fn fmt_row(b: &RecordBatch, i: usize) -> String {
    let schema = b.schema();
    let cells: Vec<String> = (0..b.num_columns())
        .map(|c| {
            format!(
                "{}={}",
                schema.field(c).name(),
                fmt_cell(b.column(c).as_ref(), i)
            )
        })
        .collect();
    cells.join(", ")
}

/// `None` if the batches are equal (same field names and types, same rows); else a description
/// of the first difference.
pub fn diff_batches(got: &RecordBatch, want: &RecordBatch) -> Option<String> {
    let (gs, ws) = (strip(&got.schema()), strip(&want.schema()));
    if gs.fields().len() != ws.fields().len()
        || gs
            .fields()
            .iter()
            .zip(ws.fields().iter())
            .any(|(a, b)| a.name() != b.name() || a.data_type() != b.data_type())
    {
        return Some(format!("schema differs:\n  got  {gs:?}\n  want {ws:?}"));
    }
    if got.num_rows() != want.num_rows() {
        let n = got.num_rows().min(want.num_rows());
        let first = (0..n).find(|&i| row_differs(got, want, i)).unwrap_or(n);
        let mut s = format!(
            "row count differs: got {} rows, want {}; first differing row {first}",
            got.num_rows(),
            want.num_rows()
        );
        if first < got.num_rows() {
            s += &format!("\n  got  [{}]", fmt_row(got, first));
        }
        if first < want.num_rows() {
            s += &format!("\n  want [{}]", fmt_row(want, first));
        }
        return Some(s);
    }
    for c in 0..got.num_columns() {
        if got.column(c).as_ref() != want.column(c).as_ref() {
            let (g, w) = (got.column(c), want.column(c));
            let i = (0..got.num_rows())
                .find(|&i| g.slice(i, 1).as_ref() != w.slice(i, 1).as_ref())
                .unwrap_or(0);
            return Some(format!(
                "column '{}' differs at row {i}: got {}, want {}\n  got  [{}]\n  want [{}]",
                gs.field(c).name(),
                fmt_cell(g.as_ref(), i),
                fmt_cell(w.as_ref(), i),
                fmt_row(got, i),
                fmt_row(want, i)
            ));
        }
    }
    None
}

fn row_differs(a: &RecordBatch, b: &RecordBatch, i: usize) -> bool {
    (0..a.num_columns())
        .any(|c| a.column(c).slice(i, 1).as_ref() != b.column(c).slice(i, 1).as_ref())
}
