//! `tamis explain`: run the scan, discard the rows, print the pruning funnel.

use std::fmt::Write as _;
use std::io::Write as _;

use tamis::ScanMetrics;

use crate::scan::{build_scan, drive};
use crate::{CliError, CliResult, ExplainArgs};

pub fn run(args: &ExplainArgs) -> CliResult<()> {
    let scan = build_scan(&args.scan, None)?;
    let stream = scan.batches()?;
    let metrics = drive(stream, |_batch| Ok(()))?;
    let text = if args.json {
        metrics_json(&metrics, args.scan.filter.as_deref())? + "\n"
    } else {
        funnel_text(&metrics, args.scan.filter.as_deref())
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// The metrics as one JSON object, plus `predicate` (the WHERE text, or null).
pub fn metrics_json(metrics: &ScanMetrics, predicate: Option<&str>) -> CliResult<String> {
    let mut value = serde_json::to_value(metrics)
        .map_err(|e| CliError::msg(format!("cannot serialize metrics: {e}")))?;
    if let Some(object) = value.as_object_mut() {
        object.insert("predicate".to_string(), predicate.into());
    }
    serde_json::to_string_pretty(&value)
        .map_err(|e| CliError::msg(format!("cannot serialize metrics: {e}")))
}

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_string()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

fn ms(ns: u64) -> String {
    format!("{:.1} ms", ns as f64 / 1e6)
}

fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// The pruning funnel, one level per line.
pub fn funnel_text(m: &ScanMetrics, predicate: Option<&str>) -> String {
    let mut s = String::new();
    let rg = m.row_groups_total;
    let _ = writeln!(s, "predicate: {}", predicate.unwrap_or("(none)"));
    let _ = writeln!(
        s,
        "files: {} scanned, {} pruned by partition values, {} by the table's file statistics",
        m.files, m.files_pruned_partition, m.files_pruned_table_stats
    );
    let _ = writeln!(s, "row groups: {rg} total");
    let _ = writeln!(
        s,
        "  pruned by statistics: {:>8} ({})",
        m.row_groups_pruned_statistics,
        pct(m.row_groups_pruned_statistics, rg)
    );
    let _ = writeln!(
        s,
        "  pruned by Bloom:      {:>8} ({})",
        m.row_groups_pruned_bloom,
        pct(m.row_groups_pruned_bloom, rg)
    );
    let _ = writeln!(
        s,
        "  pruned by dictionary: {:>8} ({})",
        m.row_groups_pruned_dictionary,
        pct(m.row_groups_pruned_dictionary, rg)
    );
    let _ = writeln!(
        s,
        "  fully matched:        {:>8} ({})",
        m.row_groups_fully_matched,
        pct(m.row_groups_fully_matched, rg)
    );
    if m.row_groups_pruned_index > 0 {
        let _ = writeln!(
            s,
            "  pruned by rows index: {:>8} ({})",
            m.row_groups_pruned_index,
            pct(m.row_groups_pruned_index, rg)
        );
    }
    let _ = writeln!(
        s,
        "conjuncts skipped by dictionary: {}",
        m.conjuncts_skipped_dictionary
    );
    if m.conjuncts_decided_index > 0 {
        let _ = writeln!(
            s,
            "conjuncts answered by the sidecar's rows index (column not read): {}",
            m.conjuncts_decided_index
        );
    }
    if !m.filter_order.is_empty() {
        let _ = writeln!(
            s,
            "filter order (first row group; k = bits per value, s = fraction of rows satisfying it;\n  [negated] = an OR's child, applied as NOT):"
        );
        for (i, f) in m.filter_order.iter().enumerate() {
            let measured = f
                .measured_selectivity
                .map_or("-".to_string(), |x| format!("{x:.3}"));
            let _ = writeln!(
                s,
                "  {}. {}{}  k={} s est {:.3} measured {measured}",
                i + 1,
                f.filter,
                if f.negated { "  [negated]" } else { "" },
                f.bit_width,
                f.estimated_selectivity,
            );
        }
    }
    let p = m.pages_total;
    let _ = writeln!(s, "pages: {p} total");
    let _ = writeln!(
        s,
        "  pruned by page index:  {:>8} ({})",
        m.pages_pruned,
        pct(m.pages_pruned, p)
    );
    if m.pages_pruned_index > 0 {
        let _ = writeln!(
            s,
            "  pruned by sidecar index: {:>6} ({})",
            m.pages_pruned_index,
            pct(m.pages_pruned_index, p)
        );
    }
    if m.row_groups_index_stale > 0 {
        let _ = writeln!(
            s,
            "  sidecar index ignored (built for another version of the file) in {} row groups",
            m.row_groups_index_stale
        );
    }
    let _ = writeln!(
        s,
        "  payload pages skipped: {:>8} ({})",
        m.pages_skipped_payload,
        pct(m.pages_skipped_payload, p)
    );
    let _ = writeln!(
        s,
        "  read:                  {:>8} ({})",
        m.pages_read,
        pct(m.pages_read, p)
    );
    if m.pages_read_partially > 0 {
        let _ = writeln!(
            s,
            "  read by 4 KiB blocks:  {:>8} ({})",
            m.pages_read_partially,
            pct(m.pages_read_partially, p)
        );
    }
    if m.pages_cache_hits + m.pages_cache_misses > 0 {
        let _ = writeln!(
            s,
            "  from the page cache:   {:>8} (decompressed already; {} of them from its \
             directory; {} missed, read and kept)",
            m.pages_cache_hits, m.pages_cache_hits_disk, m.pages_cache_misses
        );
    }
    let r = m.rows_total;
    let _ = writeln!(s, "rows: {r} total");
    let _ = writeln!(
        s,
        "  candidate: {:>12} ({})",
        m.rows_candidate,
        pct(m.rows_candidate, r)
    );
    let _ = writeln!(
        s,
        "  selected:  {:>12} ({})",
        m.rows_selected,
        pct(m.rows_selected, r)
    );
    let _ = writeln!(
        s,
        "values decoded: {}, evaluated in place: {}",
        m.values_decoded, m.values_in_place
    );
    let _ = writeln!(
        s,
        "partly alive filter pages evaluated whole (never-slower policy): {}",
        m.pages_evaluated_whole
    );
    let _ = writeln!(
        s,
        "bytes: {} in files, {} read ({}) in {} requests",
        bytes(m.bytes_file),
        bytes(m.bytes_read),
        pct(m.bytes_read, m.bytes_file),
        m.requests
    );
    if m.pages_cache_hits > 0 {
        let _ = writeln!(
            s,
            "  and {} touched in the page cache (decompressed pages; of pages read by blocks, \
             the blocks), saving {} of decompression",
            bytes(m.bytes_cache),
            ms(m.time_decompress_saved_ns)
        );
    }
    let _ = writeln!(
        s,
        "time: metadata {}, prune {}, filter {}, payload {} (summed over threads); total {} wall",
        ms(m.time_metadata_ns),
        ms(m.time_prune_ns),
        ms(m.time_filter_ns),
        ms(m.time_payload_ns),
        ms(m.time_total_ns)
    );
    let _ = writeln!(
        s,
        "  of which waiting for reads {}, decompressing pages {}; the rest decodes, evaluates, \
         builds arrays",
        ms(m.time_read_ns),
        ms(m.time_decompress_ns)
    );
    s
}
