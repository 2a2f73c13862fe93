//! Building a sidecar: each indexed column is read row group by row group with the `parquet`
//! crate's column reader (physical values, so they hash as the writer's own filters would).
//! One pass gives every value's row ids; from them come the page filters (each page's distinct
//! values), the rows index (the row ids themselves), and `auto`'s choice between the two.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use parquet::basic::Type as PhysicalType;
use parquet::bloom_filter::Sbbf;
use parquet::column::reader::{get_column_reader, ColumnReader};
use parquet::data_type::AsBytes;
use parquet::file::serialized_reader::SerializedPageReader;

use super::page_bloom::PageBlooms;
use super::{DataFileIdentity, IndexBlob, Sidecar};
use crate::error::{Error, Result};
use crate::expr::Scalar;
use crate::file::OpenedFile;

/// What to build for a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IndexKind {
    /// Per column, whichever the data favours (see `choose`).
    Auto,
    /// One split-block Bloom filter per data page.
    PageBloom,
    /// Per row group, the sorted distinct values with their row ids.
    Rows,
}

impl std::str::FromStr for IndexKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(IndexKind::Auto),
            "page-bloom" => Ok(IndexKind::PageBloom),
            "rows" => Ok(IndexKind::Rows),
            other => Err(Error::invalid(format!(
                "unknown index kind '{other}' (auto, page-bloom or rows)"
            ))),
        }
    }
}

/// What to build: the kind and the page filters' false-positive rate.
#[derive(Debug, Clone, Copy)]
pub struct IndexOptions {
    /// What to build (default [`IndexKind::Auto`]).
    pub kind: IndexKind,
    /// Target false-positive probability of each page filter, in (0, 1) (default 0.01).
    pub fpp: f64,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            kind: IndexKind::Auto,
            fpp: 0.01,
        }
    }
}

/// What was built for one column, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ColumnReport {
    /// The leaf column's dotted path.
    pub column: String,
    /// What was built: page filters or a rows index (`Auto` only for a file without row
    /// groups, where nothing was).
    pub kind: IndexKind,
    /// Why: `asked for`, or `auto`'s reason.
    pub why: String,
    /// Bytes of its blobs in the sidecar.
    pub bytes: u64,
}

/// What `tamis index` built for one file.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct IndexReport {
    /// The data file's path or URL.
    pub file: String,
    /// Where its sidecar was written.
    pub sidecar: String,
    /// Time to read the file and write the sidecar, in milliseconds.
    pub time_ms: f64,
    /// Size of the sidecar, in bytes.
    pub sidecar_bytes: u64,
    /// Size of the data file, in bytes.
    pub data_bytes: u64,
    /// Data pages given a Bloom filter.
    pub pages: u64,
    /// Non-null values read from the indexed columns.
    pub values: u64,
    /// One per indexed column, in the order asked.
    pub columns: Vec<ColumnReport>,
}

/// Builds and writes the sidecars of every file `path` names (file, directory, glob, object
/// store prefix) for `columns`, beside each file or into `output` (local files).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use arrow::array::{Int64Array, RecordBatch};
/// use arrow::datatypes::{DataType, Field, Schema};
/// use tamis::index::{index_files, IndexKind, IndexOptions};
///
/// // Orders whose customer ids are scattered over the file: min/max prune nothing.
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("orders.parquet");
/// let schema = Arc::new(Schema::new(vec![
///     Field::new("id", DataType::Int64, false),
///     Field::new("customer", DataType::Int64, false),
/// ]));
/// let customer = |id: i64| id * 7919 % 1000;
/// let ids = Int64Array::from_iter_values(0..10_000);
/// let customers = Int64Array::from_iter_values((0..10_000).map(customer));
/// let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(ids), Arc::new(customers)])?;
/// let mut writer = parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&path)?, schema, None)?;
/// writer.write(&batch)?;
/// writer.close()?;
///
/// // A rows index on customer, in a sidecar beside the file.
/// let path = path.to_str().unwrap();
/// let options = IndexOptions { kind: IndexKind::Rows, ..Default::default() };
/// let reports = index_files(path, &Default::default(), &["customer".into()], options, None)?;
/// assert_eq!(reports.len(), 1);
/// assert_eq!(reports[0].columns[0].kind, IndexKind::Rows);
/// assert!(reports[0].sidecar.ends_with(".orders.parquet.tamis.puffin"));
///
/// // A scan finds the sidecar: the index answers `customer = 42` without reading the column.
/// let mut stream = tamis::Scan::open(path)?.filter("customer = 42")?.select(&["id"])?.batches()?;
/// let mut ids = Vec::new();
/// for batch in &mut stream {
///     let batch = batch?;
///     let column = batch.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
///     ids.extend(column.values().iter().copied());
/// }
/// let want: Vec<i64> = (0..10_000).filter(|&id| customer(id) == 42).collect();
/// assert_eq!(ids, want);
/// assert_eq!(stream.metrics().conjuncts_decided_index, 1);
/// # Ok(()) }
/// ```
pub fn index_files(
    path: &str,
    options: &crate::io::StorageOptions,
    columns: &[String],
    index: IndexOptions,
    output: Option<&std::path::Path>,
) -> Result<Vec<IndexReport>> {
    let listing = crate::io::location::list(path, options)?;
    let mut reports = Vec::with_capacity(listing.files.len());
    for f in &listing.files {
        let start = std::time::Instant::now();
        let opened = OpenedFile::open_ref(f)?;
        let (bytes, mut report) = build_index(&opened, columns, index)?;
        report.sidecar = super::write_sidecar(f, bytes, output)?;
        report.file = opened.location.clone();
        report.time_ms = start.elapsed().as_secs_f64() * 1e3;
        reports.push(report);
    }
    Ok(reports)
}

/// What `tamis index --verify` found for one data file.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct VerifyReport {
    /// The data file's path or URL.
    pub file: String,
    /// Where the sidecar was found (`None`: none found).
    pub sidecar: Option<String>,
    /// Column chunks checked against their content hash.
    pub chunks: usize,
    /// What is wrong; empty when the sidecar is usable and every chunk matches.
    pub problems: Vec<String>,
}

/// Checks the sidecars of every file `path` names (beside each file, or in `dir`): each must
/// exist, match its file's identity (length, footer, mtime or ETag), hold readable blobs, and
/// every column chunk it indexes must still hash to what it recorded.
pub fn verify_files(
    path: &str,
    options: &crate::io::StorageOptions,
    dir: Option<&std::path::Path>,
) -> Result<Vec<VerifyReport>> {
    let listing = crate::io::location::list(path, options)?;
    listing.files.iter().map(|f| verify_file(f, dir)).collect()
}

fn verify_file(
    f: &crate::io::location::FileRef,
    dir: Option<&std::path::Path>,
) -> Result<VerifyReport> {
    let opened = OpenedFile::open_ref(f)?;
    let mut report = VerifyReport {
        file: opened.location.clone(),
        ..VerifyReport::default()
    };
    let rows: Vec<u64> = (opened.metadata.row_groups().iter())
        .map(|rg| rg.num_rows().max(0) as u64)
        .collect();
    let sidecar = match super::open_sidecar(f, dir, &rows, opened.leaves.len()) {
        Ok(super::Lookup::Found(s)) => s,
        Ok(super::Lookup::Absent) => {
            report.problems.push("no sidecar index".into());
            return Ok(report);
        }
        Ok(super::Lookup::Denied(why)) => {
            report
                .problems
                .push(format!("sidecar lookup refused: {why}"));
            return Ok(report);
        }
        Err(e) => {
            report.problems.push(e.to_string());
            return Ok(report);
        }
    };
    report.sidecar = Some(sidecar.location.clone());
    let reader = opened.reader();
    let id = opened.source.identity();
    let own = DataFileIdentity::of(&reader, id.etag.clone(), id.modified_ns)?;
    match &sidecar.identity {
        Some(recorded) => report.problems.extend(recorded.mismatch(&own)),
        None => report.problems.push("no data file identity".into()),
    }
    if let Err(e) = sidecar.check_blobs(&reader) {
        report.problems.push(e.to_string());
    }
    for (rg, c) in sidecar.indexed_chunks() {
        let name = &opened.leaves[c].path;
        report.chunks += 1;
        let Some(want) = sidecar.recorded_chunk_hash(rg, c) else {
            report.problems.push(format!(
                "row group {rg}, column {name}: no content hash recorded (built by an older \
                 tamis; rebuild it)"
            ));
            continue;
        };
        let range = super::chunk_range(&opened.metadata, opened.len(), rg, c)?;
        if super::chunk_hash(&reader.read_range(range)?) != want {
            report.problems.push(format!(
                "row group {rg}, column {name}: the column chunk changed since the index was built"
            ));
        }
    }
    Ok(report)
}

/// The sidecar bytes for `columns` (leaf paths or top-level names of flat columns) of `file`.
pub fn build_index(
    file: &OpenedFile,
    columns: &[String],
    options: IndexOptions,
) -> Result<(Vec<u8>, IndexReport)> {
    let fpp = options.fpp;
    if !(fpp > 0.0 && fpp < 1.0) {
        return Err(Error::invalid(format!(
            "false-positive rate {fpp} not in (0, 1)"
        )));
    }
    let leaves: Vec<usize> = columns
        .iter()
        .map(|name| {
            let leaf = file
                .leaves
                .iter()
                .find(|l| l.path == *name || l.path.eq_ignore_ascii_case(name))
                .ok_or_else(|| Error::invalid(format!("unknown column '{name}' to index")))?;
            let indexable = !leaf.nested
                && !matches!(leaf.physical, PhysicalType::BOOLEAN | PhysicalType::INT96)
                && leaf.domain() != crate::schema::Domain::None;
            if !indexable {
                return Err(Error::unsupported(format!(
                    "column '{name}': only flat, non-boolean, non-INT96 columns can be indexed"
                )));
            }
            Ok(leaf.index)
        })
        .collect::<Result<_>>()
        .map_err(|e| e.in_file(&file.location))?;
    let reader = file.reader();
    let (etag, modified) = {
        let id = file.source.identity();
        (id.etag.clone(), id.modified_ns)
    };
    let identity = DataFileIdentity::of(&reader, etag, modified)?;
    let mut blobs = Vec::new();
    let mut report = IndexReport {
        data_bytes: file.len(),
        ..IndexReport::default()
    };
    let mut kinds: HashMap<usize, (IndexKind, String)> = HashMap::new();
    let mut bytes_per_column: HashMap<usize, u64> = HashMap::new();
    for rg in 0..file.metadata.num_row_groups() {
        file.prefetch(rg, &leaves, &[], &[], &reader)?;
        let rows = file.metadata.row_group(rg).num_rows() as u64;
        if u32::try_from(rows).is_err() {
            return Err(Error::unsupported(format!(
                "row group {rg} has {rows} rows; indexes address at most 2^32"
            ))
            .in_file(&file.location));
        }
        for &c in &leaves {
            let ctx = |e: Error| e.in_column(&file.leaves[c].path).in_file(&file.location);
            let first_rows = page_first_rows(file, rg, c);
            let values = column_values(file, &reader, rg, c, rows).map_err(ctx)?;
            // Page value sets only where page filters are built or `auto` is still to choose.
            let wants_pages = match kinds.get(&c) {
                Some((kind, _)) => *kind == IndexKind::PageBloom,
                None => options.kind != IndexKind::Rows,
            };
            let pages = first_rows
                .as_ref()
                .filter(|_| wants_pages)
                .map(|f| pages_per_value(&values, f));
            let (kind, _) = kinds
                .entry(c)
                .or_insert_with(|| match options.kind {
                    IndexKind::Auto => choose(&file.leaves[c], &values, rows, pages.as_ref()),
                    k => (k, "asked for".to_string()),
                })
                .clone();
            report.values += values.values().map(|r| r.len() as u64).sum::<u64>();
            let chunk = super::chunk_range(&file.metadata, file.len(), rg, c).map_err(ctx)?;
            let chunk_hash = super::chunk_hash(&reader.read_range(chunk).map_err(ctx)?);
            let blob = match kind {
                IndexKind::PageBloom | IndexKind::Auto => {
                    let first_rows = first_rows.ok_or_else(|| {
                        ctx(Error::unsupported(
                            "page filters need an offset index (write one with `tamis optimize`, \
                             or use --kind rows)",
                        ))
                    })?;
                    let (_, per_page) = pages.expect("with first rows");
                    let mut bitsets = Vec::with_capacity(per_page.len());
                    for page_values in per_page {
                        report.pages += 1;
                        if page_values.is_empty() {
                            bitsets.push(Vec::new());
                            continue;
                        }
                        let mut f = sized_filter(page_values.len() as u64, fpp);
                        for v in page_values {
                            f.insert(v);
                        }
                        let mut bits = Vec::new();
                        f.write_bitset(&mut bits).map_err(|e| ctx(Error::from(e)))?;
                        bitsets.push(bits);
                    }
                    IndexBlob::PageBloom {
                        row_group: rg,
                        column: c,
                        blob: PageBlooms::encode(&first_rows, &bitsets),
                        chunk_hash,
                    }
                }
                IndexKind::Rows => {
                    let (blob, fence_len) =
                        super::rows::encode(&file.leaves[c], values.into_iter().collect())
                            .map_err(ctx)?;
                    IndexBlob::Rows {
                        row_group: rg,
                        column: c,
                        blob,
                        fence_len,
                        chunk_hash,
                    }
                }
            };
            let len = match &blob {
                IndexBlob::PageBloom { blob, .. } | IndexBlob::Rows { blob, .. } => blob.len(),
            };
            *bytes_per_column.entry(c).or_default() += len as u64;
            blobs.push(blob);
        }
    }
    let bytes = Sidecar::write(&identity, &blobs, &|c| file.leaves[c].path.clone())?;
    report.sidecar_bytes = bytes.len() as u64;
    for &c in &leaves {
        let (kind, why) = kinds
            .remove(&c)
            .unwrap_or((options.kind, "no row groups".into()));
        report.columns.push(ColumnReport {
            column: file.leaves[c].path.clone(),
            kind,
            why,
            bytes: bytes_per_column.get(&c).copied().unwrap_or(0),
        });
    }
    Ok((bytes, report))
}

/// Each value's rows, and each page's distinct values: (total of the pages' distinct counts,
/// the values of each page).
type PageValues<'a> = (u64, Vec<Vec<&'a [u8]>>);

fn pages_per_value<'a>(
    values: &'a HashMap<Vec<u8>, Vec<u32>>,
    first_rows: &[u64],
) -> PageValues<'a> {
    let mut per_page: Vec<Vec<&[u8]>> = vec![Vec::new(); first_rows.len()];
    let mut total = 0u64;
    for (v, rows) in values {
        let mut last_page = usize::MAX;
        for &r in rows {
            let page = first_rows
                .partition_point(|&f| f <= r as u64)
                .saturating_sub(1);
            if page != last_page {
                per_page[page].push(v);
                total += 1;
                last_page = page;
            }
        }
    }
    (total, per_page)
}

/// `auto`, from sortedness and cardinality. A sorted (or clustered) column keeps each value in
/// few pages whose min/max the page index already narrows: page filters add the pruning of
/// absent values, small. A column with so few distinct values that each is on most pages is
/// answered by its dictionary; page filters stay the small option there. Otherwise values are
/// scattered over many pages: page filters would still read a page per occurrence, while the
/// rows index selects the rows without reading the column at all.
pub(crate) fn choose(
    column: &crate::schema::LeafColumn,
    values: &HashMap<Vec<u8>, Vec<u32>>,
    rows: u64,
    pages: Option<&PageValues<'_>>,
) -> (IndexKind, String) {
    let ndv = values.len() as u64;
    let Some((_, per_page)) = pages else {
        return (
            IndexKind::Rows,
            "no offset index, which page filters need".to_string(),
        );
    };
    if ndv == 0 {
        return (IndexKind::PageBloom, "no values".to_string());
    }
    // Sortedness: the share of neighbouring pages whose value ranges do not overlap.
    let bounds: Vec<(Scalar, Scalar)> = per_page
        .iter()
        .filter_map(|vals| {
            let mut it = vals
                .iter()
                .filter_map(|v| super::rows::value_scalar(column, v));
            let first = it.next()?;
            Some(it.fold((first.clone(), first), |(lo, hi), v| {
                let lo = if v.compare(&lo) == Some(Ordering::Less) {
                    v.clone()
                } else {
                    lo
                };
                let hi = if v.compare(&hi) == Some(Ordering::Greater) {
                    v
                } else {
                    hi
                };
                (lo, hi)
            }))
        })
        .collect();
    let pairs = bounds.len().saturating_sub(1);
    let ordered = bounds
        .windows(2)
        .filter(|w| w[0].1.compare(&w[1].0) != Some(Ordering::Greater))
        .count();
    let rows_per_value = rows as f64 / ndv as f64;
    if pairs == 0 || ordered * 10 >= pairs * 9 {
        (
            IndexKind::PageBloom,
            format!("sorted: {ordered} of {pairs} neighbouring pages do not overlap"),
        )
    } else if rows_per_value > 1024.0 {
        (
            IndexKind::PageBloom,
            format!("low cardinality: {ndv} distinct values, each on most pages"),
        )
    } else {
        (
            IndexKind::Rows,
            format!(
                "unsorted, {ndv} distinct values in {rows} rows: a value's rows lie on many of {} pages",
                per_page.len()
            ),
        )
    }
}

/// An empty filter for `ndv` values at false-positive rate `fpp`: the bits Parquet's own
/// sizing asks for (`-8·ndv / ln(1 - fpp^(1/8))`) at half the rate, rounded up to whole
/// 32-byte blocks only — not to a power of two as column filters are, which would double a
/// page filter's size in the worst case (block lookup is multiply-shift, any block count
/// works).
///
/// Why half: a column's page filters are not independent. A value recurs in many pages (a
/// TPC-H part key in about 30), always beside the same values that share its block, so a
/// probe that collides in one page collides in others: on SF1 `l_partkey`, sized for 1% the
/// measured rate was 1.9% over eight keys (up to 6.8% for one); sized for 0.5%, 1.1%.
pub(crate) fn sized_filter(ndv: u64, fpp: f64) -> Sbbf {
    let fpp = fpp / 2.0;
    let bits = -8.0 * ndv as f64 / (1.0 - fpp.powf(1.0 / 8.0)).ln();
    let blocks = (bits / 256.0).ceil().max(1.0) as usize;
    Sbbf::new(&vec![0u8; blocks * 32])
}

/// First row of each page of a chunk, from its offset index.
fn page_first_rows(file: &OpenedFile, rg: usize, column: usize) -> Option<Vec<u64>> {
    let oi = file.chunk_index(rg, column)?.offset.as_ref()?;
    let rows: Vec<u64> = oi
        .page_locations()
        .iter()
        .map(|p| u64::try_from(p.first_row_index).ok())
        .collect::<Option<_>>()?;
    let ordered = rows.first() == Some(&0) && rows.windows(2).all(|w| w[0] < w[1]);
    ordered.then_some(rows)
}

/// Each distinct value's plain encoding with the ids of its rows, ascending (NULLs have none).
fn column_values(
    file: &OpenedFile,
    reader: &crate::io::Reader,
    rg: usize,
    column: usize,
    rows: u64,
) -> Result<HashMap<Vec<u8>, Vec<u32>>> {
    let cc = file.metadata.row_group(rg).column(column);
    let (start, len) = cc.byte_range();
    let chunk = reader.read_ranges(std::slice::from_ref(&(start..start + len)))?;
    if let Some(bytes) = chunk.slice(start..start + len) {
        let limit = crate::budget::DEFAULT_MEMORY_LIMIT;
        crate::column::pages::check_chunk_headers(&bytes, cc.compression(), limit)?;
    }
    let locations = file
        .chunk_index(rg, column)
        .and_then(|i| i.offset.as_ref())
        .map(|oi| oi.page_locations().to_vec());
    let pages = SerializedPageReader::new(Arc::new(chunk), cc, rows as usize, locations)?;
    let descr = file.metadata.file_metadata().schema_descr().column(column);
    let max_def = descr.max_def_level();
    let mut out: HashMap<Vec<u8>, Vec<u32>> = HashMap::new();
    let mut row: u64 = 0;
    let mut add = |defs: &[i16], values: &mut dyn Iterator<Item = Vec<u8>>| -> Result<()> {
        for &d in defs {
            if row >= rows {
                return Err(Error::corrupt("more values than the row group's rows"));
            }
            if d == max_def {
                let v = values
                    .next()
                    .ok_or_else(|| Error::corrupt("fewer values than definition levels"))?;
                out.entry(v).or_default().push(row as u32);
            }
            row += 1;
        }
        Ok(())
    };
    const BATCH: usize = 8192;
    macro_rules! read_all {
        ($reader:expr, $to_bytes:expr) => {{
            let mut r = $reader;
            loop {
                let mut defs = Vec::with_capacity(BATCH);
                let mut values = Vec::with_capacity(BATCH);
                let (records, _, levels) =
                    r.read_records(BATCH, Some(&mut defs), None, &mut values)?;
                if records == 0 {
                    break;
                }
                let defs = if max_def == 0 {
                    vec![0; levels.max(records)]
                } else {
                    defs
                };
                add(&defs, &mut values.iter().map($to_bytes))?;
            }
        }};
    }
    match get_column_reader(descr, Box::new(pages)) {
        ColumnReader::Int32ColumnReader(r) => read_all!(r, |v: &i32| v.as_bytes().to_vec()),
        ColumnReader::Int64ColumnReader(r) => read_all!(r, |v: &i64| v.as_bytes().to_vec()),
        ColumnReader::FloatColumnReader(r) => read_all!(r, |v: &f32| v.as_bytes().to_vec()),
        ColumnReader::DoubleColumnReader(r) => read_all!(r, |v: &f64| v.as_bytes().to_vec()),
        ColumnReader::ByteArrayColumnReader(r) => {
            read_all!(r, |v: &parquet::data_type::ByteArray| v.as_bytes().to_vec())
        }
        ColumnReader::FixedLenByteArrayColumnReader(r) => {
            read_all!(r, |v: &parquet::data_type::FixedLenByteArray| v
                .as_bytes()
                .to_vec())
        }
        _ => return Err(Error::unsupported("this column type cannot be indexed")),
    }
    if row != rows {
        return Err(Error::corrupt(format!(
            "the column chunk holds {row} rows, the row group {rows}"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The measured false-positive rate of a page filter stays within 1.5x of its target.
    #[test]
    fn sized_filters_meet_their_false_positive_rate() {
        for (ndv, fpp) in [(20_000u64, 0.01), (1_000, 0.01), (8_600, 0.05), (50, 0.001)] {
            let mut f = sized_filter(ndv, fpp);
            for v in 0..ndv as i64 {
                f.insert(&(v * 7919).to_le_bytes()[..]);
            }
            let probes = 200_000i64;
            let hits = (0..probes)
                .filter(|v| f.check(&((ndv as i64 + v) * 7919).to_le_bytes()[..]))
                .count();
            let rate = hits as f64 / probes as f64;
            assert!(rate <= 1.5 * fpp, "ndv {ndv}, fpp {fpp}: measured {rate}");
            for v in 0..ndv as i64 {
                assert!(f.check(&(v * 7919).to_le_bytes()[..]));
            }
        }
    }
}
