//! Input partitions, planned on the Spark driver from footers read once: contiguous runs of
//! the row groups left after pruning, of about equal compressed bytes.

use std::collections::{BTreeSet, HashSet};

use serde::Serialize;
use tamis::{Dataset, Result};

/// One Spark input partition: row groups of some files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Split {
    /// `(file location, file size, first row group, end row group)`.
    pub parts: Vec<(String, u64, usize, usize)>,
    /// The dataset columns these files have (a column none of them has is NULL in their rows).
    pub columns: Vec<String>,
    /// Rows in these row groups (a scan of no column and no filter, `count(*)`, is only this).
    pub rows: u64,
}

/// One row group as the planner sees it.
#[derive(Debug, Clone)]
pub struct Group {
    pub location: String,
    pub size: u64,
    pub index: usize,
    pub bytes: u64,
    pub rows: u64,
    /// The columns of the group's file.
    pub columns: std::sync::Arc<Vec<String>>,
}

/// The row groups of `dataset` left after pruning by partition values and footer statistics
/// under `filter` (all of them without one), in file order.
pub fn groups_left(dataset: &Dataset, filter: Option<&str>) -> Result<Vec<Group>> {
    let left: Option<HashSet<(String, usize)>> = match filter {
        None => None,
        Some(sql) => Some(
            (dataset.scan().filter(sql)?.row_groups_left()?.into_iter())
                .flat_map(|(location, groups)| {
                    groups.into_iter().map(move |i| (location.clone(), i))
                })
                .collect(),
        ),
    };
    let mut out = Vec::new();
    let plan = dataset.plan();
    for (fi, file) in plan.files.iter().enumerate() {
        let columns = std::sync::Arc::new(plan.file_columns(fi));
        for (index, group) in file.metadata.row_groups().iter().enumerate() {
            if left
                .as_ref()
                .is_some_and(|l| !l.contains(&(file.location.clone(), index)))
            {
                continue;
            }
            out.push(Group {
                location: file.location.clone(),
                size: file.len,
                index,
                bytes: group.compressed_size().max(0) as u64,
                rows: group.num_rows().max(0) as u64,
                columns: columns.clone(),
            });
        }
    }
    Ok(out)
}

/// The rows and the uncompressed bytes of `columns` (top-level names; all when empty) in the
/// row groups left under `filter`: Spark's size estimate of the scan, which decides whether a
/// join broadcasts it (and so whether its keys can prune the other side at run time).
pub fn estimate(dataset: &Dataset, filter: Option<&str>, columns: &[String]) -> Result<(u64, u64)> {
    let left: HashSet<(String, usize)> = groups_left(dataset, filter)?
        .into_iter()
        .map(|g| (g.location, g.index))
        .collect();
    let (mut rows, mut bytes) = (0u64, 0u64);
    for file in &dataset.plan().files {
        let roots = file.metadata.file_metadata().schema_descr();
        for (index, group) in file.metadata.row_groups().iter().enumerate() {
            if !left.contains(&(file.location.clone(), index)) {
                continue;
            }
            rows += group.num_rows().max(0) as u64;
            for (leaf, chunk) in group.columns().iter().enumerate() {
                let name = roots.get_column_root(leaf).name();
                if columns.is_empty() || columns.iter().any(|c| c == name) {
                    bytes += chunk.uncompressed_size().max(0) as u64;
                }
            }
        }
    }
    Ok((rows, bytes))
}

/// Splits `groups` into contiguous runs of about equal compressed bytes: as many as
/// `max_bytes` per split needs, at least `min_splits`, at most one per row group. A row group
/// is never split.
pub fn split(groups: &[Group], max_bytes: u64, min_splits: usize) -> Vec<Split> {
    if groups.is_empty() {
        return Vec::new();
    }
    let total: u64 = groups.iter().map(|g| g.bytes).sum();
    let wanted = total.div_ceil(max_bytes.max(1)) as usize;
    let count = wanted.max(min_splits).clamp(1, groups.len());
    // suffix[i]: the bytes of groups[i..].
    let mut suffix = vec![0u64; groups.len() + 1];
    for i in (0..groups.len()).rev() {
        suffix[i] = suffix[i + 1] + groups[i].bytes;
    }
    let mut out = Vec::with_capacity(count);
    let mut start = 0;
    for k in (1..=count).rev() {
        // The rest split evenly over the k splits left; each keeps at least one group.
        let target = suffix[start] as f64 / k as f64;
        let (mut end, mut filled) = (start, 0u64);
        while end < groups.len() - (k - 1)
            && (end == start
                || k == 1
                || (filled as f64) + groups[end].bytes as f64 / 2.0 <= target)
        {
            filled += groups[end].bytes;
            end += 1;
        }
        out.push(to_split(&groups[start..end]));
        start = end;
    }
    out
}

fn to_split(groups: &[Group]) -> Split {
    let mut parts: Vec<(String, u64, usize, usize)> = Vec::new();
    let mut columns = BTreeSet::new();
    let mut rows = 0;
    for g in groups {
        rows += g.rows;
        match parts.last_mut() {
            Some(last) if last.0 == g.location && last.3 == g.index => last.3 = g.index + 1,
            _ => {
                parts.push((g.location.clone(), g.size, g.index, g.index + 1));
                columns.extend(g.columns.iter().cloned());
            }
        }
    }
    Split {
        parts,
        columns: columns.into_iter().collect(),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(bytes: &[(&str, u64)]) -> Vec<Group> {
        let mut index = 0;
        let mut last = "";
        (bytes.iter())
            .map(|&(file, b)| {
                index = if file == last { index + 1 } else { 0 };
                last = file;
                Group {
                    location: file.to_string(),
                    size: 1000,
                    index,
                    bytes: b,
                    rows: 10,
                    columns: std::sync::Arc::new(vec![format!("{file}_col")]),
                }
            })
            .collect()
    }

    #[test]
    fn splits_are_contiguous_balanced_and_cover_every_group_once() {
        let g = groups(&[
            ("a", 10),
            ("a", 10),
            ("a", 10),
            ("b", 10),
            ("b", 10),
            ("c", 50),
        ]);
        let splits = split(&g, 1 << 30, 3);
        assert_eq!(splits.len(), 3);
        let covered: Vec<(String, usize)> = (splits.iter())
            .flat_map(|s| s.parts.iter())
            .flat_map(|(l, _, first, end)| (*first..*end).map(move |i| (l.clone(), i)))
            .collect();
        let expected: Vec<(String, usize)> =
            g.iter().map(|g| (g.location.clone(), g.index)).collect();
        assert_eq!(covered, expected);
        // The large group stands alone; the five small ones share the other two splits.
        assert_eq!(splits[2].parts, vec![("c".to_string(), 1000, 0, 1)]);
        assert_eq!(splits[2].columns, vec!["c_col".to_string()]);
        assert_eq!(splits[0].parts, vec![("a".to_string(), 1000, 0, 3)]);
        assert_eq!(splits[0].rows, 30);
    }

    #[test]
    fn byte_limit_sets_the_count_and_one_group_is_never_split() {
        let g = groups(&[("a", 100), ("a", 100), ("a", 100), ("a", 100)]);
        assert_eq!(split(&g, 200, 1).len(), 2);
        assert_eq!(split(&g, 1, 1).len(), 4);
        assert_eq!(split(&g, 1 << 30, 16).len(), 4);
        assert_eq!(split(&g, 1 << 30, 1).len(), 1);
        assert!(split(&[], 1, 4).is_empty());
        let zero = groups(&[("a", 0), ("a", 0)]);
        assert_eq!(split(&zero, 0, 2).len(), 2);
    }
}
