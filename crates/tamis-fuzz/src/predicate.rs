//! Random predicates and projections over the generated files' columns: well-formed ones (for
//! scans of mutated files) and broken SQL fragments (for the predicate-text target).

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::Rng;

use crate::corpus::{Kind, COLUMNS};
use crate::mutate::interesting;

fn literal(rng: &mut StdRng, kind: Kind) -> String {
    match kind {
        Kind::I32 | Kind::I64 | Kind::List => match rng.random_range(0..4) {
            0 => interesting(rng).to_string(),
            _ => rng.random_range(-120..600).to_string(),
        },
        Kind::F32 | Kind::F64 => ["'NaN'", "0.0", "-0.0", "1e308", "-1e-300", "'inf'", "2.5"]
            .choose(rng)
            .unwrap()
            .to_string(),
        Kind::Bool => ["true", "false"].choose(rng).unwrap().to_string(),
        Kind::Str | Kind::Fixed => ["'apple3'", "''", "'it''s1'", "'zz'", "'naïve0'", "'b'"]
            .choose(rng)
            .unwrap()
            .to_string(),
    }
}

fn leaf(rng: &mut StdRng) -> String {
    // Lists cannot be filtered on: keep them for projections.
    let (name, kind) = *COLUMNS[..7].choose(rng).unwrap();
    match rng.random_range(0..10) {
        0 => format!("{name} IS NULL"),
        1 => format!("{name} IS NOT NULL"),
        2 => format!(
            "{name} IN ({}, {}, {})",
            literal(rng, kind),
            literal(rng, kind),
            literal(rng, kind)
        ),
        3 if kind != Kind::Bool => format!(
            "{name} BETWEEN {} AND {}",
            literal(rng, kind),
            literal(rng, kind)
        ),
        4 if kind == Kind::Str => {
            format!(
                "{name} LIKE '{}'",
                ["a%", "%a%", "_pple%", "%", "b_n%"].choose(rng).unwrap()
            )
        }
        _ => {
            let op = ["=", "<>", "<", "<=", ">", ">="].choose(rng).unwrap();
            format!("{name} {op} {}", literal(rng, kind))
        }
    }
}

/// A well-formed predicate over the generated columns, up to `depth` levels of AND/OR/NOT.
pub fn predicate(rng: &mut StdRng, depth: usize) -> String {
    if depth == 0 || rng.random_bool(0.4) {
        return leaf(rng);
    }
    match rng.random_range(0..5) {
        0 => format!("NOT ({})", predicate(rng, depth - 1)),
        1 | 2 => format!(
            "({}) AND ({})",
            predicate(rng, depth - 1),
            predicate(rng, depth - 1)
        ),
        _ => format!(
            "({}) OR ({})",
            predicate(rng, depth - 1),
            predicate(rng, depth - 1)
        ),
    }
}

/// A random non-empty subset of the columns, or `None` (every column).
pub fn projection(rng: &mut StdRng) -> Option<Vec<String>> {
    if rng.random_bool(0.3) {
        return None;
    }
    let mut cols: Vec<String> = COLUMNS
        .iter()
        .filter(|_| rng.random_bool(0.4))
        .map(|c| c.0.to_string())
        .collect();
    if cols.is_empty() {
        cols.push(COLUMNS.choose(rng).unwrap().0.to_string());
    }
    Some(cols)
}

const TOKENS: [&str; 40] = [
    "(",
    ")",
    "AND",
    "OR",
    "NOT",
    "=",
    "<",
    ">=",
    "<>",
    "!=",
    "IN",
    "BETWEEN",
    "LIKE",
    "ILIKE",
    "IS",
    "NULL",
    "TRUE",
    "CAST(",
    "AS",
    "DATE",
    "TIMESTAMP",
    "'2024-02-30'",
    "'",
    "\"",
    ",",
    "-",
    "+",
    "*",
    "1e400",
    "-9223372036854775809",
    "18446744073709551616",
    "0x1F",
    "'\\'",
    "ESCAPE",
    "i32",
    "s",
    "l",
    "\"f64\"",
    "fx",
    "l.list.item",
];

/// Predicate text for the parser and binder: a well-formed predicate cut, spliced or sprinkled
/// with tokens, a random token soup, or a very long or deeply nested chain.
pub fn fragment(rng: &mut StdRng) -> String {
    match rng.random_range(0..6) {
        0 => {
            let mut p = predicate(rng, 3);
            let cut = rng.random_range(0..=p.len());
            while !p.is_char_boundary(cut.min(p.len())) {
                p.pop();
            }
            p.truncate(cut.min(p.len()));
            p
        }
        1 | 2 => {
            let mut words: Vec<String> = predicate(rng, 3).split(' ').map(str::to_string).collect();
            for _ in 0..rng.random_range(1..4) {
                let at = rng.random_range(0..=words.len());
                let t = TOKENS.choose(rng).unwrap().to_string();
                if rng.random_bool(0.5) && at < words.len() {
                    words[at] = t;
                } else {
                    words.insert(at, t);
                }
            }
            words.join(" ")
        }
        3 => (0..rng.random_range(1..20))
            .map(|_| *TOKENS.choose(rng).unwrap())
            .collect::<Vec<_>>()
            .join(" "),
        4 => {
            // Long flat chains: left-deep trees as deep as the chain is long.
            let n = [10, 1_000, 20_000, 100_000][rng.random_range(0..4)];
            let op = [" AND ", " OR "].choose(rng).unwrap();
            vec![leaf(rng); n].join(op)
        }
        _ => {
            let n = [10, 60, 300, 5_000][rng.random_range(0..4)];
            let open = ["(", "NOT (", "NOT "].choose(rng).unwrap();
            let close = if open.ends_with('(') { ")" } else { "" };
            format!("{}{}{}", open.repeat(n), leaf(rng), close.repeat(n))
        }
    }
}
