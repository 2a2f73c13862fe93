//! The core crate's modules form layers: each top-level module of `src/` may use only the
//! modules listed below it in [`LAYERS`], so the folder layout is the data's path and no two
//! modules import each other. This test reads the sources (`crate::…` paths outside comments and
//! test modules) and fails on any use of a module at the same height or above, naming the file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Bottom to top. A new top-level module must be placed here.
const LAYERS: &[&str] = &[
    "error",     // errors, and panics caught as errors
    "kernels",   // CPU kernels: bit-parallel select, gathers, SIMD dispatch
    "selection", // row selections as bitmaps
    "values",    // decoded values
    "budget",    // the memory budget
    "metrics",   // what a scan did
    "io",        // byte sources: local files, object stores, listings
    "cache",     // decompressed pages kept across scans
    "schema",    // leaf columns and their value domains
    "file",      // an opened Parquet file: footer, page indexes, page headers, Thrift guard
    "expr",      // predicates: SQL text → bound, simplified predicates
    "encoding",  // one module per Parquet encoding
    "levels",    // definition and repetition levels
    "prune",     // row groups and pages pruned by statistics, Bloom filters, page indexes
    "column",    // a column chunk's pages: fetch, filter, project, Arrow arrays
    "index",     // sidecar indexes beside files
    "table",     // table formats: a Delta log's files, deletes, columns and file statistics
    "dataset",   // many files: listing, partitions, schema unification, the open-file cache
    "scan",      // the sequencer
    "optimize",  // rewriting files for pushdown
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a source file without comments and without its `#[cfg(test)]` modules (which
/// may use anything).
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod ") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules a piece of code names through `crate::` paths, including those inside
/// `use crate::{a::b, c}` groups.
fn uses(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    for (at, _) in code.match_indices("crate::") {
        // `tamis_datafusion::crate::` cannot occur; skip `$crate::` in macros.
        if code[..at].ends_with('$') || code[..at].ends_with(|c: char| c.is_alphanumeric()) {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let (mut depth, mut start) = (0, 0);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        found.insert(ident(&group[start..i]));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.insert(ident(&group[start..i]));
                        start = i + 1;
                    }
                    _ => {}
                }
            }
        } else {
            found.insert(ident(rest));
        }
    }
    found.retain(|m| !m.is_empty());
    found
}

#[test]
fn parser_finds_grouped_and_plain_paths() {
    let sample =
        "use crate::{error::Error, io::{Reader, IoStats}, kernels};\nlet x = crate::file::open();";
    let found: Vec<String> = uses(sample).into_iter().collect();
    assert_eq!(found, ["error", "file", "io", "kernels"]);
    assert!(uses(&code("// see crate::scan::Scan\nfn f() {}")).is_empty());
    assert!(uses(&code(
        "fn f() {}\n#[cfg(test)]\nmod tests { use crate::scan::Scan; }"
    ))
    .is_empty());
}

#[test]
fn modules_use_only_the_layers_below_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let height = |m: &str| LAYERS.iter().position(|l| *l == m);
    let mut problems = Vec::new();
    for path in &files {
        let relative = path.strip_prefix(&src).unwrap();
        let first = relative.components().next().unwrap().as_os_str();
        let module = first.to_string_lossy().trim_end_matches(".rs").to_string();
        if module == "lib" {
            continue;
        }
        let Some(own) = height(&module) else {
            problems.push(format!(
                "{}: module '{module}' is not placed in LAYERS (tests/layers.rs)",
                relative.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(path).unwrap();
        for used in uses(&code(&text)) {
            if used == module || used == "self" || used == "super" {
                continue;
            }
            match height(&used) {
                Some(h) if h < own => {}
                Some(_) => problems.push(format!(
                    "{}: '{module}' uses '{used}', which is not below it",
                    relative.display()
                )),
                // Items of the crate root (re-exports such as `crate::Error`) sit above all.
                None => problems.push(format!(
                    "{}: '{module}' uses 'crate::{used}' (the crate root); use the defining module",
                    relative.display()
                )),
            }
        }
    }
    assert!(
        problems.is_empty(),
        "layering broken:\n{}",
        problems.join("\n")
    );
}
