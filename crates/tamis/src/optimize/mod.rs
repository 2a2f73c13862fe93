//! `optimize`: rewrite Parquet files so that pushdown works — a page index (ColumnIndex and
//! OffsetIndex) on every column, split-block Bloom filters sized from measured distinct counts,
//! an optional sort order, chosen page and row-group sizes.
//!
//! ```text
//! source.rs  open and check the inputs; read them as one stream
//! sort.rs    external merge sort (sorted runs spilled to Parquet, k-way merge on row keys)
//! bloom.rs   which columns get a filter, and how large: measured ndv, sizing, expected fpp
//! write.rs   writer properties; write to a temporary file, rename when complete
//! ```
//!
//! The rows are read twice in output order when Bloom filters are requested: once to measure
//! distinct values per output row group (and, for `auto`, cardinality and clustering), once to
//! write. With a sort, the sorted runs are merged twice rather than stored a third time.

pub(crate) mod bloom;
pub(crate) mod sort;
pub(crate) mod source;
pub(crate) mod write;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use parquet::arrow::arrow_reader::ArrowReaderMetadata;
use parquet::basic::Compression;
use parquet::bloom_filter::Sbbf;
use serde::Serialize;

use crate::error::{Error, Result};
pub use bloom::{theoretical_bytes, BloomChoice, BloomRequest};
pub use sort::SortStats;
use sort::{SortKey, Sorted};
use source::Input;
use write::{FilterSpec, Layout};

/// What `optimize` should do. [`Default`] gives 20 000-row / 1 MiB pages, 1 Mi-row row groups,
/// dictionary encoding (1 MiB dictionaries), the inputs' compression, a 1 GiB sort budget, no
/// sort, no filters; [`OptimizeOptions::sorted`] the layout for lookups on a sort key.
#[derive(Debug, Clone)]
pub struct OptimizeOptions {
    /// Sort (ascending, nulls last, stable) by these top-level columns.
    pub sort_by: Vec<String>,
    /// Which columns get Bloom filters, and at what false-positive probability: named
    /// columns, or `auto` to let the data decide (see [`BloomRequest`]).
    pub bloom_filters: Vec<BloomRequest>,
    /// Maximum rows per data page.
    pub page_rows: usize,
    /// Maximum bytes per data page (before compression).
    pub page_bytes: usize,
    /// Maximum bytes of a dictionary page (before compression); a column whose dictionary
    /// outgrows it continues in PLAIN pages.
    pub dictionary_page_bytes: usize,
    /// Maximum rows per row group.
    pub row_group_rows: usize,
    /// `None`: the codec of the first input's first column chunk.
    pub compression: Option<Compression>,
    /// Dictionary-encode every column (up to `dictionary_page_bytes`); `false`: PLAIN.
    pub dictionary: bool,
    /// Arrow bytes held in memory per sorted run.
    pub memory_limit: usize,
    /// Where sorted runs are spilled (default: the output's directory).
    pub temp_dir: Option<PathBuf>,
}

impl Default for OptimizeOptions {
    fn default() -> Self {
        OptimizeOptions {
            sort_by: Vec::new(),
            bloom_filters: Vec::new(),
            page_rows: 20_000,
            page_bytes: 1 << 20,
            dictionary_page_bytes: 1 << 20,
            row_group_rows: 1 << 20,
            compression: None,
            dictionary: true,
            memory_limit: 1 << 30,
            temp_dir: None,
        }
    }
}

impl OptimizeOptions {
    /// A rewrite sorted by `sort_by`, laid out for lookups on its first column: a key's rows
    /// are then together, and a lookup reads one page of each projected column. Row groups
    /// of 256 Ki rows, so that statistics leave one small row group (whose page index is all
    /// that is read of the rest); pages of 4 Ki rows, so that the page read for a key holds
    /// few other rows; dictionaries of at most 128 KiB, so that a column of near-unique values
    /// (a comment, an order key) turns PLAIN early instead of making each lookup read and
    /// decode a 1 MiB dictionary for one value. Smaller row groups and dictionaries made
    /// lookups little faster and full scans slower (BENCHMARKS.md, suite `lookup`).
    pub fn sorted(sort_by: Vec<String>) -> Self {
        OptimizeOptions {
            sort_by,
            page_rows: 4096,
            row_group_rows: 256 * 1024,
            dictionary_page_bytes: 128 * 1024,
            ..Default::default()
        }
    }
}

/// Parses a codec name, with an optional level: `zstd`, `zstd(9)`, `snappy`, `uncompressed`, …
/// (`gzip`, `brotli` and `zstd` without a level get their default one).
pub fn parse_compression(text: &str) -> Result<Compression> {
    let t = text.trim().to_ascii_lowercase();
    let with_level = match t.as_str() {
        "zstd" => "zstd(3)".to_string(),
        "gzip" => "gzip(6)".to_string(),
        "brotli" => "brotli(1)".to_string(),
        "none" => "uncompressed".to_string(),
        _ => t,
    };
    Compression::from_str(&with_level)
        .map_err(|e| Error::invalid(format!("compression '{text}': {e}")))
}

/// The phase a progress report is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Reading the inputs into sorted runs.
    Sorting,
    /// Counting distinct values per row group for the Bloom filters.
    Measuring,
    /// Writing the output file.
    Writing,
}

/// What changed for one top-level column.
#[derive(Debug, Clone, Serialize)]
pub struct ColumnReport {
    /// The column's name in the schema.
    pub name: String,
    /// Compressed bytes of its chunks in the inputs.
    pub bytes_before: u64,
    /// Compressed bytes of its chunks in the output.
    pub bytes_after: u64,
    /// ColumnIndex + OffsetIndex bytes in the output.
    pub page_index_bytes: u64,
    /// Its Bloom filters; `None`: none written.
    pub bloom: Option<BloomReport>,
}

/// The Bloom filters written for one column.
#[derive(Debug, Clone, Serialize)]
pub struct BloomReport {
    /// The target false-positive probability.
    pub fpp: f64,
    /// Largest measured distinct count over row groups (what the filter is sized for).
    pub max_ndv: u64,
    /// Filters written (one per row group).
    pub filters: usize,
    /// Bytes in the file (headers + bitsets).
    pub bytes: u64,
    /// Sum over row groups of the formula's size for the row group's distinct count.
    pub theoretical_bytes: f64,
    /// Largest expected fpp over row groups for the bitsets written.
    pub expected_fpp: f64,
}

/// The outcome of [`optimize`].
#[derive(Debug, Clone, Serialize)]
pub struct OptimizeReport {
    /// The input files, in the order they were read.
    pub inputs: Vec<PathBuf>,
    /// The file written.
    pub output: PathBuf,
    /// Rows written (all the inputs' rows).
    pub rows: u64,
    /// Row groups of all inputs together.
    pub row_groups_before: usize,
    /// Row groups of the output.
    pub row_groups_after: usize,
    /// Size of all inputs together, in bytes.
    pub bytes_before: u64,
    /// Size of the output, in bytes.
    pub bytes_after: u64,
    /// The codec written, as the `parquet` crate prints it (`SNAPPY`, `ZSTD(ZstdLevel(3))`).
    pub compression: String,
    /// The sort key ([`OptimizeOptions::sort_by`]); empty: the input order was kept.
    pub sorted_by: Vec<String>,
    /// What the sort took; `None` without a sort.
    pub sort: Option<SortStats>,
    /// One per top-level column, in schema order.
    pub columns: Vec<ColumnReport>,
    /// Every column considered for a Bloom filter, with the decision and the reason.
    pub bloom_choices: Vec<BloomChoice>,
}

/// Rewrites `inputs` (same schema) into one file at `output`. See the module docs.
///
/// `progress` is called with the phase, the rows done in it and the rows in all.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use arrow::array::{Int64Array, RecordBatch, StringArray};
/// use arrow::datatypes::{DataType, Field, Schema};
/// use tamis::optimize::{optimize, BloomRequest, OptimizeOptions};
///
/// // A file in no useful order: ids 0..10000 shuffled, a SKU per row.
/// let dir = tempfile::tempdir()?;
/// let input = dir.path().join("orders.parquet");
/// let schema = Arc::new(Schema::new(vec![
///     Field::new("id", DataType::Int64, false),
///     Field::new("sku", DataType::Utf8, false),
/// ]));
/// let ids = Int64Array::from_iter_values((0..10_000).map(|i| i * 7919 % 10_000));
/// let skus = StringArray::from_iter_values((0..10_000).map(|i| format!("SKU-{:05}", i * 31 % 5000)));
/// let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(ids), Arc::new(skus)])?;
/// let mut writer = parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&input)?, schema, None)?;
/// writer.write(&batch)?;
/// writer.close()?;
///
/// // Sorted by id in pages of 4096 rows, with a Bloom filter on sku.
/// let output = dir.path().join("orders-optimized.parquet");
/// let options = OptimizeOptions {
///     bloom_filters: vec![BloomRequest::Column { name: "sku".into(), fpp: 0.01 }],
///     ..OptimizeOptions::sorted(vec!["id".into()])
/// };
/// let report = optimize(&[input], &output, &options, &mut |_phase, _done, _total| {})?;
/// assert_eq!(report.rows, 10_000);
/// assert_eq!(report.sorted_by, ["id"]);
/// assert!(report.columns[0].page_index_bytes > 0);
/// let bloom = report.columns[1].bloom.as_ref().expect("a filter on sku");
/// assert_eq!(bloom.filters, 1); // one per row group
///
/// // A lookup on the sort key reads one page of id; the page index skips the other two.
/// let mut stream = tamis::Scan::open(output.to_str().unwrap())?.filter("id = 4321")?.batches()?;
/// let rows: usize = (&mut stream).map(|b| b.map(|b| b.num_rows())).sum::<tamis::Result<usize>>()?;
/// assert_eq!(rows, 1);
/// assert_eq!(stream.metrics().pages_pruned, 2);
/// # Ok(()) }
/// ```
pub fn optimize(
    inputs: &[PathBuf],
    output: &Path,
    options: &OptimizeOptions,
    progress: &mut dyn FnMut(Phase, u64, u64),
) -> Result<OptimizeReport> {
    for (what, v) in [
        ("page rows", options.page_rows),
        ("page bytes", options.page_bytes),
        ("dictionary page bytes", options.dictionary_page_bytes),
        ("row group rows", options.row_group_rows),
        ("memory limit", options.memory_limit),
    ] {
        if v == 0 {
            return Err(Error::invalid(format!("{what} must be at least 1")));
        }
    }
    let inputs = source::open_inputs(inputs)?;
    let schema: SchemaRef = inputs[0].schema.clone();
    let total_rows: u64 = inputs
        .iter()
        .map(|i| i.metadata.file_metadata().num_rows().max(0) as u64)
        .sum();

    // ── resolve columns ──────────────────────────────────────────────────────────────────
    let sort_columns = options
        .sort_by
        .iter()
        .map(|name| column_index(&schema, name, "--sort-by"))
        .collect::<Result<Vec<_>>>()?;
    let mut explicit: Vec<(usize, f64)> = Vec::new();
    let mut auto_fpp = None;
    for request in &options.bloom_filters {
        match request {
            BloomRequest::Column { name, fpp } => {
                bloom::check_fpp(*fpp).map_err(|e| e.in_column(name))?;
                let c = column_index(&schema, name, "--bloom-filter")?;
                bloom::filterable(schema.field(c)).map_err(|why| {
                    Error::invalid(format!("cannot write a Bloom filter: {why}")).in_column(name)
                })?;
                explicit.retain(|(e, _)| *e != c);
                explicit.push((c, *fpp));
            }
            BloomRequest::Auto { fpp } => {
                bloom::check_fpp(*fpp)?;
                auto_fpp = Some(*fpp);
            }
        }
    }
    let auto_columns: Vec<usize> = match auto_fpp {
        Some(_) => (0..schema.fields().len())
            .filter(|c| !explicit.iter().any(|(e, _)| e == c))
            .collect(),
        None => Vec::new(),
    };
    let out_dir = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !out_dir.is_dir() {
        return Err(Error::invalid("the output directory does not exist").in_file(output.display()));
    }
    let compression = match options.compression {
        Some(c) => c,
        None => inputs
            .iter()
            .flat_map(|i| {
                i.metadata
                    .row_groups()
                    .first()
                    .map(|rg| rg.columns().to_vec())
            })
            .flatten()
            .next()
            .map_or(Compression::SNAPPY, |cc| cc.compression()),
    };

    // ── order ────────────────────────────────────────────────────────────────────────────
    let sorted: Option<(SortKey, Sorted, SortStats)> = if sort_columns.is_empty() {
        None
    } else {
        let key = SortKey::new(&schema, sort_columns.clone())?;
        let spill = options.temp_dir.clone().unwrap_or_else(|| out_dir.clone());
        let mut done = 0;
        let (s, stats) = sort::sort(
            schema.clone(),
            source::read_all(&inputs, &schema),
            &key,
            options.memory_limit,
            &spill,
            |n| {
                done += n;
                progress(Phase::Sorting, done, total_rows);
            },
        )?;
        Some((key, s, stats))
    };
    let rows_in_order = || -> Result<Box<dyn Iterator<Item = Result<RecordBatch>> + '_>> {
        match &sorted {
            Some((key, s, _)) => s.batches(key),
            None => Ok(Box::new(source::read_all(&inputs, &schema))),
        }
    };

    // ── measure ──────────────────────────────────────────────────────────────────────────
    let measured: Vec<usize> = explicit
        .iter()
        .map(|(c, _)| *c)
        .chain(auto_columns.iter().copied())
        .collect();
    let profiles = if measured.is_empty() {
        Vec::new()
    } else {
        let fields: Vec<_> = measured.iter().map(|&c| schema.field(c)).collect();
        let mut profiler = bloom::Profiler::new(
            &fields,
            &measured,
            options.row_group_rows,
            options.page_rows,
        )?;
        let mut done = 0;
        for batch in rows_in_order()? {
            let batch = batch?;
            profiler.push(batch.columns())?;
            done += batch.num_rows() as u64;
            progress(Phase::Measuring, done, total_rows);
        }
        profiler.finish()
    };
    let mut choices: Vec<BloomChoice> = Vec::new();
    let mut filters: Vec<(usize, FilterSpec, bloom::ColumnProfile)> = Vec::new();
    for (i, &c) in measured.iter().enumerate() {
        let field = schema.field(c);
        let profile = &profiles[i];
        let choice = match explicit.iter().find(|(e, _)| *e == c) {
            Some(&(_, fpp)) => BloomChoice {
                column: field.name().clone(),
                fpp: Some(fpp),
                reason: "requested".into(),
            },
            None => bloom::auto_choice(
                field,
                profile,
                sort_columns.first() == Some(&c),
                auto_fpp.unwrap_or(bloom::DEFAULT_FPP),
            ),
        };
        if let Some(fpp) = choice.fpp {
            filters.push((
                c,
                FilterSpec {
                    column: field.name().clone(),
                    fpp,
                    ndv: profile.max_ndv(),
                },
                profile.clone(),
            ));
        }
        choices.push(choice);
    }

    // ── write ────────────────────────────────────────────────────────────────────────────
    let layout = Layout {
        page_rows: options.page_rows,
        page_bytes: options.page_bytes,
        dictionary_page_bytes: options.dictionary_page_bytes,
        row_group_rows: options.row_group_rows,
        compression,
        dictionary: options.dictionary,
    };
    let specs: Vec<FilterSpec> = filters.iter().map(|(_, s, _)| s.clone()).collect();
    let props = write::writer_properties(&layout, &specs, inputs[0].key_value_metadata());
    let mut done = 0;
    write::write_atomically(output, &schema, props, rows_in_order()?, |n| {
        done += n;
        progress(Phase::Writing, done, total_rows);
    })?;

    report(
        &inputs,
        output,
        &schema,
        compression,
        options,
        sorted.map(|s| s.2),
        &filters,
        choices,
    )
}

fn column_index(schema: &SchemaRef, name: &str, option: &str) -> Result<usize> {
    schema.index_of(name).map_err(|_| {
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        Error::invalid(format!(
            "{option}: unknown column '{name}' (columns: {})",
            names.join(", ")
        ))
        .in_column(name)
    })
}

#[allow(clippy::too_many_arguments)]
fn report(
    inputs: &[Input],
    output: &Path,
    schema: &SchemaRef,
    compression: Compression,
    options: &OptimizeOptions,
    sort: Option<SortStats>,
    filters: &[(usize, FilterSpec, bloom::ColumnProfile)],
    bloom_choices: Vec<BloomChoice>,
) -> Result<OptimizeReport> {
    let name = output.display().to_string();
    let file = File::open(output).map_err(|e| Error::from(e).in_file(&name))?;
    let bytes_after = file.metadata()?.len();
    let meta = ArrowReaderMetadata::load(&file, Default::default())
        .map_err(|e| Error::from(e).in_file(&name))?;
    let md = meta.metadata();
    let descr = md.file_metadata().schema_descr();
    let mut columns: Vec<ColumnReport> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(c, f)| ColumnReport {
            name: f.name().clone(),
            bytes_before: inputs.iter().map(|i| i.column_bytes()[c]).sum(),
            bytes_after: 0,
            page_index_bytes: 0,
            bloom: None,
        })
        .collect();
    for rg in md.row_groups() {
        for (leaf, cc) in rg.columns().iter().enumerate() {
            let col = &mut columns[descr.get_column_root_idx(leaf)];
            col.bytes_after += cc.compressed_size().max(0) as u64;
            col.page_index_bytes += cc.column_index_length().unwrap_or(0).max(0) as u64
                + cc.offset_index_length().unwrap_or(0).max(0) as u64;
        }
    }
    for (c, spec, profile) in filters {
        let leaf = (0..descr.num_columns())
            .find(|&l| descr.get_column_root_idx(l) == *c)
            .ok_or_else(|| Error::internal("a filtered column has no leaf"))?;
        let mut r = BloomReport {
            fpp: spec.fpp,
            max_ndv: spec.ndv,
            filters: 0,
            bytes: 0,
            theoretical_bytes: 0.0,
            expected_fpp: 0.0,
        };
        for (g, rg) in md.row_groups().iter().enumerate() {
            let cc = rg.column(leaf);
            let ndv = profile.ndv.get(g).copied().unwrap_or(spec.ndv);
            r.theoretical_bytes += bloom::theoretical_bytes(ndv, spec.fpp);
            if let Some(f) = Sbbf::read_from_column_chunk(cc, &file)
                .map_err(|e| Error::from(e).in_file(&name).in_column(&spec.column))?
            {
                r.filters += 1;
                r.bytes += cc.bloom_filter_length().unwrap_or(0).max(0) as u64;
                r.expected_fpp = r
                    .expected_fpp
                    .max(bloom::expected_fpp(ndv, f.num_blocks() * 32));
            }
        }
        columns[*c].bloom = Some(r);
    }
    Ok(OptimizeReport {
        inputs: inputs.iter().map(|i| i.path.clone()).collect(),
        output: output.to_path_buf(),
        rows: md.file_metadata().num_rows().max(0) as u64,
        row_groups_before: inputs.iter().map(|i| i.metadata.num_row_groups()).sum(),
        row_groups_after: md.num_row_groups(),
        bytes_before: inputs.iter().map(|i| i.bytes).sum(),
        bytes_after,
        compression: compression.to_string(),
        sorted_by: options.sort_by.clone(),
        sort,
        columns,
        bloom_choices,
    })
}
