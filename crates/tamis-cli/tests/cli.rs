//! End-to-end tests of the `tamis` binary: generate a tiny TPC-H lineitem, then query it.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TAMIS: &str = env!("CARGO_BIN_EXE_tamis");

fn tamis(args: &[&str]) -> Output {
    Command::new(TAMIS)
        .args(args)
        .output()
        .expect("failed to run the tamis binary")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[track_caller]
fn ok(o: Output) -> Output {
    assert!(
        o.status.success(),
        "tamis failed: {:?}\nstderr: {}",
        o.status,
        stderr(&o)
    );
    o
}

/// A tempdir holding `lineitem.parquet` at SF 0.001 (~6 000 rows).
fn lineitem_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().to_str().expect("utf-8 path");
    ok(tamis(&[
        "gen",
        "tpch",
        "--scale-factor",
        "0.001",
        "--output",
        out,
        "--tables",
        "lineitem",
    ]));
    let file = dir.path().join("lineitem.parquet");
    assert!(file.exists());
    assert!(!dir.path().join("lineitem.parquet.tmp").exists());
    (dir, file)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn parquet_rows(path: &Path) -> usize {
    let file = File::open(path).expect("open parquet");
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("parquet metadata")
        .build()
        .expect("parquet reader");
    reader.map(|b| b.expect("batch").num_rows()).sum()
}

fn csv_rows(out: &str) -> usize {
    out.lines().count().saturating_sub(1)
}

fn explain_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["explain", "--json"];
    all.extend_from_slice(args);
    let o = ok(tamis(&all));
    serde_json::from_str(&stdout(&o)).expect("explain --json prints JSON")
}

const FILTER: &str = "l_quantity < 24 AND l_shipmode = 'AIR'";

#[test]
fn query_every_format() {
    let (dir, file) = lineitem_dir();
    let file = s(&file);
    let select = "l_orderkey,l_quantity,l_shipmode,l_shipdate";

    let csv = ok(tamis(&[
        "query", file, "--where", FILTER, "--select", select, "--format", "csv",
    ]));
    let csv = stdout(&csv);
    assert_eq!(
        csv.lines().next(),
        Some("l_orderkey,l_quantity,l_shipmode,l_shipdate")
    );
    let n = csv_rows(&csv);
    assert!(n > 0, "the filter selects some rows");
    assert!(csv.lines().skip(1).all(|l| l.contains(",AIR,")));

    let json = ok(tamis(&[
        "query", file, "--where", FILTER, "--select", select, "--format", "json",
    ]));
    let json = stdout(&json);
    assert_eq!(json.lines().count(), n);
    for line in json.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("one JSON object per line");
        assert_eq!(v["l_shipmode"], "AIR");
    }

    let table = ok(tamis(&[
        "query", file, "--where", FILTER, "--select", select, "--limit", "5",
    ]));
    let table = stdout(&table);
    assert!(
        table.contains("l_orderkey") && table.contains("AIR"),
        "{table}"
    );

    let pq = dir.path().join("out.parquet");
    ok(tamis(&[
        "query",
        file,
        "--where",
        FILTER,
        "--select",
        select,
        "--format",
        "parquet",
        "--output",
        s(&pq),
    ]));
    assert_eq!(parquet_rows(&pq), n);

    let ipc = dir.path().join("out.arrow");
    ok(tamis(&[
        "query",
        file,
        "--where",
        FILTER,
        "--select",
        select,
        "--format",
        "arrow",
        "--output",
        s(&ipc),
    ]));
    let reader = arrow::ipc::reader::FileReader::try_new(File::open(&ipc).expect("open"), None)
        .expect("arrow IPC file");
    assert_eq!(reader.schema().fields().len(), 4);
    let rows: usize = reader.map(|b| b.expect("batch").num_rows()).sum();
    assert_eq!(rows, n);

    let limited = ok(tamis(&[
        "query",
        file,
        "--select",
        "l_orderkey",
        "--format",
        "csv",
        "--limit",
        "7",
    ]));
    assert_eq!(csv_rows(&stdout(&limited)), 7);

    // --stats prints the funnel on stderr; --stats-json writes the metrics.
    let stats_json = dir.path().join("stats.json");
    let o = ok(tamis(&[
        "query",
        file,
        "--where",
        FILTER,
        "--select",
        select,
        "--format",
        "csv",
        "--stats",
        "--stats-json",
        s(&stats_json),
    ]));
    assert_eq!(csv_rows(&stdout(&o)), n);
    assert!(stderr(&o).contains("row groups"), "{}", stderr(&o));
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats_json).expect("stats json"))
            .expect("json");
    assert_eq!(m["rows_selected"].as_u64(), Some(n as u64));
}

#[test]
fn explain_text_and_json() {
    let (_dir, file) = lineitem_dir();
    let file = s(&file);
    let total = parquet_rows(Path::new(file)) as u64;

    let v = explain_json(&[file, "--where", FILTER]);
    let selected = v["rows_selected"].as_u64().expect("rows_selected");
    assert!(selected > 0 && selected < total);
    assert_eq!(v["rows_total"].as_u64(), Some(total));
    assert_eq!(v["files"].as_u64(), Some(1));
    assert_eq!(v["predicate"], FILTER);

    let csv = ok(tamis(&[
        "query",
        file,
        "--where",
        FILTER,
        "--select",
        "l_orderkey",
        "--format",
        "csv",
    ]));
    assert_eq!(csv_rows(&stdout(&csv)) as u64, selected);

    let text = stdout(&ok(tamis(&["explain", file, "--where", FILTER])));
    for word in ["files", "row groups", "pages", "rows", "bytes", "time"] {
        assert!(text.contains(word), "explain output lacks {word}: {text}");
    }
}

/// `--filter-order` changes the evaluation order, never the rows; explain reports the order.
#[test]
fn filter_order_switch() {
    let (_dir, file) = lineitem_dir();
    let file = s(&file);
    let written = explain_json(&[file, "--where", FILTER, "--filter-order", "written"]);
    let auto = explain_json(&[file, "--where", FILTER, "--filter-order", "auto"]);
    assert_eq!(written["rows_selected"], auto["rows_selected"]);
    let steps = written["filter_order"].as_array().expect("filter_order");
    assert_eq!(steps.len(), 2, "{written}");
    assert!(
        steps[0]["filter"]
            .as_str()
            .unwrap()
            .starts_with("l_quantity"),
        "written order starts with the first conjunct: {written}"
    );
    for step in steps {
        let est = step["estimated_selectivity"].as_f64().unwrap();
        let measured = step["measured_selectivity"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&est) && (0.0..=1.0).contains(&measured));
        assert!(step["bit_width"].as_u64().is_some());
    }
    let text = stdout(&ok(tamis(&["explain", file, "--where", FILTER])));
    assert!(text.contains("filter order"), "{text}");
    let bad = tamis(&["explain", file, "--filter-order", "fastest"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn inspect_prints_the_columns() {
    let (_dir, file) = lineitem_dir();
    let out = stdout(&ok(tamis(&["inspect", s(&file)])));
    for column in ["l_orderkey", "l_shipdate", "l_comment"] {
        assert!(out.contains(column), "inspect lacks {column}: {out}");
    }
    assert!(
        out.contains("offset index: yes"),
        "gen writes page indexes: {out}"
    );
}

#[test]
fn errors_are_one_line_with_exit_code_1() {
    let (dir, file) = lineitem_dir();
    let file = s(&file);

    for args in [
        vec!["query", file, "--where", "no_such_column > 3"],
        vec!["query", file, "--select", "l_orderkey,no_such_column"],
        vec!["explain", file, "--where", "no_such_column = 'x'"],
    ] {
        let o = tamis(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(err.starts_with("error: "), "{err}");
        assert!(err.contains("no_such_column"), "names the column: {err}");
    }

    let missing = dir.path().join("missing.parquet");
    let o = tamis(&["query", s(&missing)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("error: "));
    let o = tamis(&["inspect", s(&missing)]);
    assert_eq!(o.status.code(), Some(1));

    let o = tamis(&["query", file, "--format", "parquet"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("--output"));

    let o = tamis(&["query", file, "--no-such-flag"]);
    assert_eq!(o.status.code(), Some(2));
    let o = tamis(&["query", file, "--format", "xml"]);
    assert_eq!(o.status.code(), Some(2));
    let o = tamis(&["query"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn directory_and_glob_paths() {
    let (gen_dir, file) = lineitem_dir();
    let one = parquet_rows(&file) as u64;
    let dir = gen_dir.path().join("two");
    std::fs::create_dir(&dir).expect("mkdir");
    std::fs::copy(&file, dir.join("part-1.parquet")).expect("copy");
    std::fs::copy(&file, dir.join("part-2.parquet")).expect("copy");

    let v = explain_json(&[s(&dir)]);
    assert_eq!(v["files"].as_u64(), Some(2));
    assert_eq!(v["rows_selected"].as_u64(), Some(2 * one));

    let glob = format!("{}/part-*.parquet", s(&dir));
    let v = explain_json(&[&glob, "--where", "l_linenumber = 1"]);
    assert_eq!(v["files"].as_u64(), Some(2));
    let selected = v["rows_selected"].as_u64().expect("rows_selected");
    assert!(selected > 0 && selected.is_multiple_of(2));

    let csv = ok(tamis(&[
        "query",
        &glob,
        "--select",
        "l_orderkey",
        "--format",
        "csv",
    ]));
    assert_eq!(csv_rows(&stdout(&csv)) as u64, 2 * one);
}

/// Files with different columns form one dataset (missing columns are NULL); a column whose type
/// differs between files is a one-line error naming the column and both files.
#[test]
fn schemas_are_unified_and_type_conflicts_are_errors() {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};

    let dir = tempfile::tempdir().expect("tempdir");
    ok(tamis(&[
        "gen",
        "tpch",
        "--scale-factor",
        "0.001",
        "--output",
        s(dir.path()),
        "--tables",
        "nation,region",
    ]));
    let o = ok(tamis(&[
        "query",
        s(dir.path()),
        "--where",
        "r_name IS NULL",
        "--select",
        "n_name,r_name",
        "--format",
        "csv",
    ]));
    assert_eq!(csv_rows(&stdout(&o)), 25, "the nation rows: {}", stdout(&o));

    let conflict = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, column: ArrayRef| {
        let batch = RecordBatch::try_from_iter([("c", column)]).expect("batch");
        let file = File::create(conflict.path().join(name)).expect("create");
        let mut w =
            parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).expect("writer");
        w.write(&batch).expect("write");
        w.close().expect("close");
    };
    write("x.parquet", Arc::new(Int64Array::from(vec![1])));
    write("y.parquet", Arc::new(StringArray::from(vec!["1"])));
    let o = tamis(&["query", s(conflict.path())]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    for word in ["'c'", "Int64", "Utf8", "x.parquet", "y.parquet"] {
        assert!(err.contains(word), "{err} lacks {word}");
    }
}

#[test]
fn gen_writes_all_tables_by_default() {
    let dir = tempfile::tempdir().expect("tempdir");
    ok(tamis(&[
        "gen",
        "tpch",
        "--scale-factor",
        "0.001",
        "--output",
        s(dir.path()),
    ]));
    for table in [
        "lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region",
    ] {
        let path = dir.path().join(format!("{table}.parquet"));
        assert!(parquet_rows(&path) > 0, "{table}");
    }
    assert_eq!(parquet_rows(&dir.path().join("nation.parquet")), 25);
    let o = tamis(&[
        "gen",
        "tpch",
        "--scale-factor",
        "0",
        "--output",
        s(dir.path()),
    ]);
    assert_eq!(o.status.code(), Some(1));
}

/// All rows of a file, each formatted as one line, sorted: a multiset to compare files by.
fn row_multiset(path: &Path) -> Vec<String> {
    let file = File::open(path).expect("open parquet");
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("parquet metadata")
        .build()
        .expect("parquet reader");
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.expect("batch");
        let columns: Vec<_> = batch
            .columns()
            .iter()
            .map(|c| {
                arrow::util::display::ArrayFormatter::try_new(c.as_ref(), &Default::default())
                    .unwrap()
            })
            .collect();
        for i in 0..batch.num_rows() {
            let cells: Vec<String> = columns.iter().map(|f| f.value(i).to_string()).collect();
            rows.push(cells.join("|"));
        }
    }
    rows.sort();
    rows
}

#[test]
fn a_sorted_rewrite_is_laid_out_for_lookups_unless_told_otherwise() {
    // 6 000 rows: one 20 000-row page per column by default, 4 096-row pages when sorted.
    let (dir, file) = lineitem_dir();
    let pages = |args: &[&str]| -> Vec<u32> {
        let out = dir.path().join("laid.parquet");
        let mut all = vec!["optimize", s(&file), "-o", s(&out)];
        all.extend_from_slice(args);
        ok(tamis(&all));
        let text = stdout(&ok(tamis(&["inspect", s(&out)])));
        text.lines()
            .filter_map(|l| l.trim().strip_prefix("data pages: "))
            .map(|l| l.split(',').next().unwrap().parse().unwrap())
            .collect()
    };
    let unsorted = pages(&[]);
    assert!(
        !unsorted.is_empty() && unsorted.iter().all(|&n| n == 1),
        "{unsorted:?}"
    );
    // (l_comment outgrows the 128 KiB dictionary: one more page where it turns PLAIN.)
    let sorted = pages(&["--sort-by", "l_partkey"]);
    assert!(sorted.iter().all(|&n| n >= 2), "{sorted:?}");
    let told = pages(&[
        "--sort-by",
        "l_partkey",
        "--page-rows",
        "20000",
        "--dictionary-page-bytes",
        "1M",
    ]);
    assert!(told.iter().all(|&n| n == 1), "{told:?}");
}

#[test]
fn optimize_sorts_adds_filters_and_reports() {
    let (dir, file) = lineitem_dir();
    let out = dir.path().join("opt.parquet");
    let o = ok(tamis(&[
        "optimize",
        s(&file),
        "--output",
        s(&out),
        "--sort-by",
        "l_suppkey,l_partkey",
        "--bloom-filter",
        "l_partkey:0.001",
        "--bloom-filter",
        "auto",
        "--page-rows",
        "500",
        "--row-group-rows",
        "2500",
        "--compression",
        "zstd",
        "--memory-limit",
        "64K",
    ]));
    let text = stdout(&o);
    assert!(text.contains("sorted by l_suppkey, l_partkey"), "{text}");
    assert!(
        text.contains("l_partkey") && text.contains("requested"),
        "{text}"
    );
    // auto explains every other column, e.g. the boolean-free comment column and the dates.
    assert!(text.contains("l_shipdate"), "{text}");
    assert!(text.contains("ZSTD"), "{text}");
    assert_eq!(row_multiset(&out), row_multiset(&file));
    // Sorted: l_suppkey is non-decreasing.
    let csv = stdout(&ok(tamis(&[
        "query",
        s(&out),
        "--select",
        "l_suppkey",
        "--format",
        "csv",
    ])));
    let keys: Vec<i64> = csv.lines().skip(1).map(|l| l.parse().unwrap()).collect();
    assert!(keys.windows(2).all(|w| w[0] <= w[1]));
    // The JSON report, and the filter pruning an absent key.
    let out2 = dir.path().join("opt2.parquet");
    let o = ok(tamis(&[
        "optimize",
        s(&file),
        "-o",
        s(&out2),
        "--bloom-filter",
        "l_partkey:0.01",
        "--json",
    ]));
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON report");
    let col = report["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "l_partkey")
        .unwrap();
    assert!(col["bloom"]["bytes"].as_u64().unwrap() > 0, "{col}");
    assert!(col["page_index_bytes"].as_u64().unwrap() > 0, "{col}");
    let m = explain_json(&[s(&out2), "--where", "l_partkey = -5"]);
    assert_eq!(m["rows_selected"].as_u64(), Some(0), "{m}");
}

#[test]
fn optimize_errors_leave_no_output() {
    let (dir, file) = lineitem_dir();
    let out = dir.path().join("never.parquet");
    let junk = dir.path().join("junk.parquet");
    std::fs::write(&junk, b"not parquet").unwrap();
    for (args, needle) in [
        (vec!["--sort-by", "nope"], "nope"),
        (vec!["--bloom-filter", "l_partkey:0"], "l_partkey:0"),
        (vec!["--bloom-filter", "l_partkey:1"], "l_partkey:1"),
        (vec!["--bloom-filter", "ghost:0.1"], "ghost"),
        (vec![s(&junk)], "junk.parquet"),
    ] {
        let mut all = vec!["optimize", s(&file), "--output", s(&out)];
        all.extend(args);
        let o = tamis(&all);
        assert_eq!(o.status.code(), Some(1), "{all:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.starts_with("error: ") && err.contains(needle), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(!out.exists());
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "left behind: {names:?}");
    }
}

/// `tamis index` writes a sidecar the scans then use (small pages so a key misses most);
/// `optimize --index` writes one for its output; results never change.
#[test]
fn index_builds_sidecars_that_scans_use() {
    let (dir, file) = lineitem_dir();
    let small = dir.path().join("small-pages.parquet");
    ok(tamis(&[
        "optimize",
        s(&file),
        "-o",
        s(&small),
        "--page-rows",
        "200",
        "--index",
        "l_partkey",
        "--index-kind",
        "page-bloom",
    ]));
    assert!(dir
        .path()
        .join(".small-pages.parquet.tamis.puffin")
        .exists());
    let where_ = "l_partkey = 77";
    let with = explain_json(&[s(&small), "--where", where_]);
    assert!(with["pages_pruned_index"].as_u64().unwrap() > 0, "{with}");
    let rows = |path: &Path| {
        csv_rows(&stdout(&ok(tamis(&[
            "query",
            s(path),
            "--where",
            where_,
            "--format",
            "csv",
        ]))))
    };
    assert_eq!(rows(&small), rows(&file));
    // Rebuilt apart from the data: found only with --index-dir.
    std::fs::remove_file(dir.path().join(".small-pages.parquet.tamis.puffin")).unwrap();
    let idx = dir.path().join("idx");
    std::fs::create_dir(&idx).unwrap();
    let o = ok(tamis(&[
        "index",
        s(&small),
        "--columns",
        "l_partkey,l_suppkey",
        "-o",
        s(&idx),
    ]));
    let printed = stdout(&o);
    assert!(
        printed.contains("/.small-pages.parquet.") && printed.contains(".tamis.puffin"),
        "{printed}"
    );
    // --verify: the index directory's sidecar matches its file; none beside the data fails.
    let verified = stdout(&ok(tamis(&["index", s(&small), "--verify", "-o", s(&idx)])));
    assert!(verified.starts_with("ok: "), "{verified}");
    let missing = tamis(&["index", s(&small), "--verify"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(stdout(&missing).contains("no sidecar index"));
    // `auto` (the default) says what it chose per column and why: both keys are unsorted.
    assert!(
        printed.contains("l_partkey: rows") && printed.contains("unsorted"),
        "{printed}"
    );
    let without = explain_json(&[s(&small), "--where", where_]);
    assert_eq!(without["pages_pruned_index"].as_u64(), Some(0));
    assert_eq!(without["conjuncts_decided_index"].as_u64(), Some(0));
    let found = explain_json(&[s(&small), "--where", where_, "--index-dir", s(&idx)]);
    assert!(
        found["conjuncts_decided_index"].as_u64().unwrap() > 0,
        "{found}"
    );
    assert_eq!(found["rows_candidate"], found["rows_selected"], "{found}");
    let text = stdout(&ok(tamis(&[
        "explain",
        s(&small),
        "--where",
        where_,
        "--index-dir",
        s(&idx),
    ])));
    assert!(
        text.contains("answered by the sidecar's rows index"),
        "{text}"
    );
    let sorted = |out: String| {
        let mut lines: Vec<String> = out.lines().map(str::to_string).collect();
        lines.sort();
        lines
    };
    let rows_dir = |path: &Path, idx: &Path| {
        sorted(stdout(&ok(tamis(&[
            "query",
            s(path),
            "--where",
            "l_partkey BETWEEN 70 AND 90 OR l_suppkey = 5",
            "--index-dir",
            s(idx),
            "--format",
            "csv",
        ]))))
    };
    let plain = sorted(stdout(&ok(tamis(&[
        "query",
        s(&file),
        "--where",
        "l_partkey BETWEEN 70 AND 90 OR l_suppkey = 5",
        "--format",
        "csv",
    ]))));
    assert!(plain.len() > 20, "{}", plain.len());
    assert_eq!(rows_dir(&small, &idx), plain);
    // A column that cannot be indexed: one clear line.
    let o = tamis(&["index", s(&small), "--columns", "no_such"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no_such"), "{}", stderr(&o));
}

/// `tamis kernels --list` names the paths the kernels can take here, scalar first, and the
/// default run uses the last (fastest) one; the CI instruction-set loop depends on this.
#[test]
fn kernels_lists_the_supported_paths() {
    let o = ok(tamis(&["kernels", "--list"]));
    let paths: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(
        paths.first().map(String::as_str),
        Some("scalar"),
        "{paths:?}"
    );
    for p in &paths {
        assert!(
            ["scalar", "bmi2", "avx512"].contains(&p.as_str()),
            "{paths:?}"
        );
    }
    let all = stdout(&ok(tamis(&["kernels"])));
    assert!(all.contains("in use: "), "{all}");
    // Forcing each listed path is honoured, not reported as unsupported.
    for p in &paths {
        let o = ok(Command::new(TAMIS)
            .args(["kernels"])
            .env("TAMIS_FORCE_ISA", p)
            .output()
            .unwrap());
        assert!(
            stdout(&o).contains("forced by TAMIS_FORCE_ISA"),
            "{p}: {}",
            stdout(&o)
        );
        assert!(stderr(&o).is_empty(), "{p}: {}", stderr(&o));
    }
}

/// Columns `names` of every row of a file, as display strings (the parquet crate's reader).
fn column_strings(path: &Path, names: &[&str]) -> Vec<Vec<String>> {
    let file = File::open(path).expect("open parquet");
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("parquet metadata")
        .build()
        .expect("parquet reader");
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.expect("batch");
        let columns: Vec<_> = names
            .iter()
            .map(|n| {
                let c = batch.column_by_name(n).expect("column");
                arrow::util::display::ArrayFormatter::try_new(c.as_ref(), &Default::default())
                    .unwrap()
            })
            .collect();
        for i in 0..batch.num_rows() {
            rows.push(columns.iter().map(|f| f.value(i).to_string()).collect());
        }
    }
    rows
}

#[test]
fn sql_joins_tables_of_a_directory_with_and_without_runtime_filters() {
    let dir = tempfile::tempdir().expect("tempdir");
    // SF 0.01: `lineitem`'s one row group of 60 000 rows is cut into slices at 7 threads.
    ok(tamis(&[
        "gen",
        "tpch",
        "--scale-factor",
        "0.01",
        "--output",
        s(dir.path()),
    ]));
    // The oracle: the join and count computed here from the parquet crate's rows.
    let priority: std::collections::HashMap<String, String> = column_strings(
        &dir.path().join("orders.parquet"),
        &["o_orderkey", "o_orderpriority"],
    )
    .into_iter()
    .map(|r| (r[0].clone(), r[1].clone()))
    .collect();
    let mut expected: std::collections::BTreeMap<String, usize> = Default::default();
    for r in column_strings(
        &dir.path().join("lineitem.parquet"),
        &["l_orderkey", "l_shipmode"],
    ) {
        if r[1] == "AIR" {
            *expected.entry(priority[&r[0]].clone()).or_default() += 1;
        }
    }
    let expected: Vec<String> = std::iter::once("o_orderpriority,n".to_string())
        .chain(expected.iter().map(|(p, n)| format!("{p},{n}")))
        .collect();
    let query = "SELECT o_orderpriority, count(*) AS n FROM orders JOIN lineitem \
                 ON l_orderkey = o_orderkey WHERE l_shipmode = 'AIR' GROUP BY 1 ORDER BY 1";
    for extra in [
        &[][..],
        &["--no-runtime-filters"][..],
        &["--page-cache", "64MiB"][..],
        // Row groups cut into slices (4 partitions of `lineitem`'s one row group), same rows.
        &["--row-group-slices", "--threads", "7"][..],
    ] {
        let mut args = vec!["sql", query, "--tables", s(dir.path()), "--format", "csv"];
        if !extra.contains(&"--threads") {
            args.extend(["--threads", "2"]);
        }
        args.extend_from_slice(extra);
        let out = stdout(&ok(tamis(&args)));
        assert_eq!(out.lines().collect::<Vec<_>>(), expected, "{extra:?}");
    }
    // --table overrides a directory's table of the same name.
    let out = stdout(&ok(tamis(&[
        "sql",
        "SELECT count(*) AS n FROM lineitem",
        "--tables",
        s(dir.path()),
        "--table",
        &format!("lineitem={}", s(&dir.path().join("orders.parquet"))),
        "--format",
        "csv",
    ])));
    let orders = parquet_rows(&dir.path().join("orders.parquet"));
    assert_eq!(out.lines().nth(1), Some(orders.to_string().as_str()));
    // A Parquet result holds plain strings (DataFusion's views are not written to files), and
    // the same rows as the CSV.
    let written = dir.path().join("result.parquet");
    ok(tamis(&[
        "sql",
        query,
        "--tables",
        s(dir.path()),
        "--format",
        "parquet",
        "--output",
        s(&written),
    ]));
    let file = File::open(&written).expect("open result");
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("result metadata");
    let field = builder.schema().field(0).clone();
    assert_eq!(field.data_type(), &arrow::datatypes::DataType::Utf8);
    let rows: Vec<String> = column_strings(&written, &["o_orderpriority", "n"])
        .into_iter()
        .map(|r| r.join(","))
        .collect();
    assert_eq!(rows, expected[1..]);
    // A query that does not plan: one line, exit code 1.
    let o = tamis(&["sql", "SELECT nope FROM orders", "--tables", s(dir.path())]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).starts_with("error: ") && stderr(&o).contains("nope"));
}

/// `tamis sql` runs queries only: statements that create tables or views, write files or set
/// options print one `error:` line naming the opt-in and exit with 1, having done nothing;
/// `--allow-statements` runs them.
#[test]
fn sql_refuses_statements_unless_allowed() {
    let (dir, file) = lineitem_dir();
    let table = format!("lineitem={}", s(&file));
    let out = dir.path().join("copied.csv");
    let refused = [
        format!(
            "CREATE EXTERNAL TABLE e STORED AS CSV LOCATION '{}'",
            s(&file)
        ),
        "CREATE TABLE c AS SELECT * FROM lineitem".to_string(),
        format!(
            "COPY (SELECT l_orderkey FROM lineitem) TO '{}' STORED AS CSV",
            s(&out)
        ),
        "INSERT INTO lineitem SELECT * FROM lineitem".to_string(),
        "SET datafusion.execution.batch_size = 1".to_string(),
        "DROP TABLE lineitem".to_string(),
        "CREATE VIEW v AS SELECT l_orderkey FROM lineitem".to_string(),
    ];
    for sql in &refused {
        let o = tamis(&["sql", sql, "--table", &table]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{sql}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{sql}: one line: {err}");
        assert!(err.starts_with("error: "), "{sql}: {err}");
        assert!(err.contains("--allow-statements"), "{sql}: {err}");
        assert!(stdout(&o).is_empty(), "{sql}: {}", stdout(&o));
        assert!(!out.exists(), "{sql} wrote {}", s(&out));
    }

    // Queries: SELECT, WITH, EXPLAIN.
    let rows = parquet_rows(&file);
    let o = ok(tamis(&[
        "sql",
        "WITH w AS (SELECT l_orderkey FROM lineitem) SELECT count(*) AS n FROM w",
        "--table",
        &table,
        "--format",
        "csv",
    ]));
    assert_eq!(stdout(&o).lines().nth(1), Some(rows.to_string().as_str()));
    let o = ok(tamis(&[
        "sql",
        "EXPLAIN SELECT l_orderkey FROM lineitem WHERE l_quantity < 5",
        "--table",
        &table,
    ]));
    assert!(stdout(&o).contains("TamisExec"), "{}", stdout(&o));

    // Allowed: the COPY writes every row.
    let copy = format!(
        "COPY (SELECT l_orderkey FROM lineitem) TO '{}' STORED AS CSV",
        s(&out)
    );
    ok(tamis(&[
        "sql",
        &copy,
        "--table",
        &table,
        "--allow-statements",
    ]));
    let copied = std::fs::read_to_string(&out).expect("the COPY's file");
    assert_eq!(csv_rows(&copied), rows);
}
