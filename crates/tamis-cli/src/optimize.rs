//! `tamis optimize`: rewrite Parquet files for pushdown (see `tamis::optimize`), with a progress
//! bar and a summary of what changed.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use tamis::optimize::{self, BloomRequest, OptimizeOptions, OptimizeReport, Phase};

use crate::progress;
use crate::CliResult;

#[derive(Args, Debug)]
pub struct OptimizeArgs {
    /// Input Parquet files (all with the same schema).
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// The file to write (written to a temporary file first, renamed when complete).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,
    /// Sort by these columns (ascending, nulls last), e.g. --sort-by a,b.
    #[arg(long, value_name = "COLS", value_delimiter = ',')]
    pub sort_by: Vec<String>,
    /// A Bloom filter on COL with false-positive probability FPP (default 0.01); repeatable.
    /// `auto[:FPP]` picks the columns where one pays and prints why.
    #[arg(long = "bloom-filter", value_name = "COL[:FPP]|auto[:FPP]")]
    pub bloom_filter: Vec<String>,
    /// Maximum rows per data page [default: 20000; 4096 with --sort-by].
    #[arg(long, value_name = "N")]
    pub page_rows: Option<usize>,
    /// Maximum bytes per data page (uncompressed, e.g. 64K) [default: 1 MiB].
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub page_bytes: Option<usize>,
    /// Maximum bytes per dictionary page (uncompressed); a column whose dictionary outgrows
    /// it continues PLAIN [default: 1 MiB; 128 KiB with --sort-by].
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub dictionary_page_bytes: Option<usize>,
    /// Rows per row group [default: 1048576; 262144 with --sort-by, laid out for lookups].
    #[arg(long, value_name = "N")]
    pub row_group_rows: Option<usize>,
    /// Codec: uncompressed, snappy, lz4_raw, zstd[(LEVEL)], gzip[(LEVEL)], brotli[(LEVEL)]
    /// (default: the input's).
    #[arg(long, value_name = "CODEC")]
    pub compression: Option<String>,
    /// Do not dictionary-encode (PLAIN pages only).
    #[arg(long)]
    pub no_dictionary: bool,
    /// Arrow bytes held in memory per sorted run before it is spilled (e.g. 512M, 4G).
    #[arg(long, value_name = "BYTES", default_value = "1G", value_parser = parse_bytes)]
    pub memory_limit: usize,
    /// Directory for sorted runs (default: the output's directory).
    #[arg(long, value_name = "DIR")]
    pub temp_dir: Option<PathBuf>,
    /// Print the report as JSON on stdout instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Also build a sidecar index (as `tamis index`) on these columns of the output, beside it.
    #[arg(long, value_name = "COLS", value_delimiter = ',')]
    pub index: Vec<String>,
    /// What the sidecar holds (as `tamis index --kind`).
    #[arg(long, value_enum, default_value_t = crate::index::IndexKind::Auto)]
    pub index_kind: crate::index::IndexKind,
    /// False-positive rate of the sidecar's page filters.
    #[arg(long, default_value_t = 0.01)]
    pub index_fpp: f64,
}

fn parse_bytes(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 1usize << 10),
        Some('M') => (&t[..t.len() - 1], 1 << 20),
        Some('G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let n: usize = num
        .parse()
        .map_err(|_| format!("'{s}' is not a size (e.g. 512M)"))?;
    n.checked_mul(mult)
        .filter(|&v| v > 0)
        .ok_or_else(|| format!("'{s}' is out of range"))
}

pub fn run(args: &OptimizeArgs) -> CliResult<()> {
    let sort_by: Vec<String> = args.sort_by.iter().map(|s| s.trim().to_string()).collect();
    // A sorted rewrite is laid out for lookups on its key unless told otherwise.
    let base = if sort_by.is_empty() {
        OptimizeOptions::default()
    } else {
        OptimizeOptions::sorted(sort_by.clone())
    };
    let options = OptimizeOptions {
        sort_by,
        bloom_filters: args
            .bloom_filter
            .iter()
            .map(|b| BloomRequest::parse(b))
            .collect::<tamis::Result<_>>()?,
        page_rows: args.page_rows.unwrap_or(base.page_rows),
        page_bytes: args.page_bytes.unwrap_or(base.page_bytes),
        dictionary_page_bytes: args
            .dictionary_page_bytes
            .unwrap_or(base.dictionary_page_bytes),
        row_group_rows: args.row_group_rows.unwrap_or(base.row_group_rows),
        compression: args
            .compression
            .as_deref()
            .map(optimize::parse_compression)
            .transpose()?,
        dictionary: !args.no_dictionary,
        memory_limit: args.memory_limit,
        temp_dir: args.temp_dir.clone(),
    };
    let mut bar: Option<(Phase, indicatif::ProgressBar)> = None;
    let mut on_progress = |phase: Phase, done: u64, total: u64| {
        if bar.as_ref().is_none_or(|(p, _)| *p != phase) {
            if let Some((_, b)) = bar.take() {
                b.finish_and_clear();
            }
            let label = match phase {
                Phase::Sorting => "sorting",
                Phase::Measuring => "measuring",
                Phase::Writing => "writing",
            };
            bar = Some((phase, progress::bar(total, "rows", label)));
        }
        if let Some((_, b)) = &bar {
            b.set_position(done);
        }
    };
    let result = optimize::optimize(&args.inputs, &args.output, &options, &mut on_progress);
    if let Some((_, b)) = bar.take() {
        b.finish_and_clear();
    }
    let report = result?;
    let index = if args.index.is_empty() {
        None
    } else {
        let output = args.output.to_string_lossy();
        let reports = tamis::index::index_files(
            &output,
            &Default::default(),
            &args.index,
            tamis::index::IndexOptions {
                kind: args.index_kind.into(),
                fpp: args.index_fpp,
            },
            None,
        )?;
        reports.into_iter().next()
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if args.json {
        let json = serde_json::to_string_pretty(&report)
            .map_err(|e| crate::CliError::msg(format!("cannot serialize the report: {e}")))?;
        writeln!(out, "{json}")?;
    } else {
        summary(&mut out, &report)?;
        if let Some(r) = &index {
            writeln!(
                out,
                "sidecar index {}: {} ({:.2}% of the output)",
                r.sidecar,
                mib(r.sidecar_bytes as f64),
                100.0 * r.sidecar_bytes as f64 / r.data_bytes.max(1) as f64
            )?;
            for c in &r.columns {
                writeln!(
                    out,
                    "  {}: {:?}, {} ({})",
                    c.column,
                    c.kind,
                    mib(c.bytes as f64),
                    c.why
                )?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

fn mib(b: f64) -> String {
    if b >= (1u64 << 20) as f64 {
        format!("{:.2} MiB", b / (1u64 << 20) as f64)
    } else {
        format!("{:.1} KiB", b / 1024.0)
    }
}

fn summary(out: &mut impl Write, r: &OptimizeReport) -> std::io::Result<()> {
    writeln!(
        out,
        "wrote {} ({} rows): {} → {} ({:+.1}%), {} → {} row groups, {}",
        r.output.display(),
        r.rows,
        mib(r.bytes_before as f64),
        mib(r.bytes_after as f64),
        (r.bytes_after as f64 / r.bytes_before.max(1) as f64 - 1.0) * 100.0,
        r.row_groups_before,
        r.row_groups_after,
        r.compression,
    )?;
    match &r.sort {
        Some(s) => writeln!(
            out,
            "sorted by {} ({} run{}{})",
            r.sorted_by.join(", "),
            s.runs,
            if s.runs == 1 { "" } else { "s" },
            if s.runs > 1 {
                format!(", {} spilled", mib(s.spilled_bytes as f64))
            } else {
                ", in memory".to_string()
            }
        )?,
        None => writeln!(out, "order kept (no --sort-by)")?,
    }
    if !r.bloom_choices.is_empty() {
        writeln!(out, "Bloom filters:")?;
        for c in &r.bloom_choices {
            let decision = match c.fpp {
                Some(fpp) => format!("yes (fpp {fpp})"),
                None => "no".to_string(),
            };
            writeln!(out, "  {:<24} {decision}: {}", c.column, c.reason)?;
        }
    }
    writeln!(
        out,
        "{:<24} {:>12} {:>12} {:>11} {:>12} {:>9} {:>9} {:>10}",
        "column", "before", "after", "page index", "bloom", "max ndv", "fpp", "expected"
    )?;
    for c in &r.columns {
        let (bloom, ndv, fpp, expected) = match &c.bloom {
            Some(b) => (
                format!("{} ({}x)", mib(b.bytes as f64), fmt_ratio(b)),
                b.max_ndv.to_string(),
                format!("{}", b.fpp),
                format!("{:.4}", b.expected_fpp),
            ),
            None => ("-".into(), "-".into(), "-".into(), "-".into()),
        };
        writeln!(
            out,
            "{:<24} {:>12} {:>12} {:>11} {:>12} {:>9} {:>9} {:>10}",
            c.name,
            mib(c.bytes_before as f64),
            mib(c.bytes_after as f64),
            mib(c.page_index_bytes as f64),
            bloom,
            ndv,
            fpp,
            expected
        )?;
    }
    if r.columns.iter().any(|c| c.bloom.is_some()) {
        writeln!(
            out,
            "bloom: bytes written (× the formula's size for the measured distinct values; \
             bitsets are powers of two)\nexpected: worst row group's fpp predicted for the \
             bitsets written (Poisson block loads)"
        )?;
    }
    Ok(())
}

fn fmt_ratio(b: &tamis::optimize::BloomReport) -> String {
    format!("{:.2}", b.bytes as f64 / b.theoretical_bytes.max(1.0))
}
