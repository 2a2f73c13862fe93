//! A scan's partitions: contiguous runs of a table's rows, of about equal compressed bytes,
//! cut at row-group boundaries where one is near and inside row groups where none is. A
//! dimension table stored as one row group (TPC-H `part`, `supplier` at SF 1) is then read by
//! every partition, not by one while the others wait for its hash table.

use tamis::ScanPart;

/// The parts of the files one partition reads, in file order.
pub type Part = Vec<ScanPart>;

/// One file as the splitter sees it: its location, and per row group (compressed bytes,
/// rows).
pub type FileGroups = (String, Vec<(u64, usize)>);

/// Cuts inside a row group fall at multiples of this many rows: a smaller slice costs more in
/// per-part work (the row group's pruning, dictionaries and page index read again) than its
/// rows save, and a row group of fewer rows is never cut. 20 000 is the `parquet` crate's
/// default row limit of a page (`tamis gen`, `tpchgen-cli`, DataFusion and arrow-rs write
/// it): where pages reach it, cuts fall between pages and no page is decompressed by two
/// partitions.
pub const SLICE_ROWS: usize = 20_000;

/// A cut this close to a row-group boundary, as a fraction of a partition's bytes, moves to
/// the boundary: partitions stay within about twice this of an equal share, and tables of many
/// row groups are split between row groups, as before.
const SNAP: f64 = 0.125;

/// A position in the table: row `row` of row group `group` (by index over all files); row 0
/// is the boundary before the group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Cut {
    group: usize,
    row: usize,
}

/// Splits the files' rows into at most `target` partitions of about equal compressed bytes,
/// each a contiguous run in file order, every row in exactly one. Fewer partitions when the
/// table has too few rows to cut (see [`SLICE_ROWS`]); one, possibly empty, at least. Without
/// `slices`, every cut is at the nearest row-group boundary (partitions of whole row groups,
/// at most one a row group).
pub fn split(files: &[FileGroups], target: usize, slices: bool) -> Vec<Part> {
    // (file, row group in the file, bytes, rows), over all files.
    let groups: Vec<(usize, usize, u64, usize)> = (files.iter().enumerate())
        .flat_map(|(fi, (_, gs))| {
            (gs.iter().enumerate()).map(move |(rg, &(b, rows))| (fi, rg, b.max(1), rows))
        })
        .collect();
    if groups.is_empty() {
        return vec![Vec::new()];
    }
    // starts[g]: the bytes before group g.
    let starts: Vec<u64> = std::iter::once(0)
        .chain(groups.iter().scan(0u64, |sum, g| {
            *sum += g.2;
            Some(*sum)
        }))
        .collect();
    let total = starts[groups.len()] as f64;
    let n = target.max(1);
    let share = total / n as f64;
    let end = Cut {
        group: groups.len(),
        row: 0,
    };
    let mut cuts = vec![Cut { group: 0, row: 0 }];
    for k in 1..n {
        let goal = share * k as f64;
        // The group the goal falls in: the last starting at or before it.
        let g = starts.partition_point(|&s| (s as f64) <= goal) - 1;
        let cut = if g >= groups.len() {
            end
        } else {
            let (lo, hi) = (starts[g] as f64, starts[g + 1] as f64);
            let rows = groups[g].3;
            let at = |group| Cut { group, row: 0 };
            if !slices || (goal - lo).min(hi - goal) <= SNAP * share {
                at(if goal - lo <= hi - goal { g } else { g + 1 })
            } else {
                let exact = (goal - lo) / (hi - lo) * rows as f64;
                let row = (exact / SLICE_ROWS as f64).round() as usize * SLICE_ROWS;
                match row {
                    0 => at(g),
                    r if r >= rows => at(g + 1),
                    row => Cut { group: g, row },
                }
            }
        };
        let last = *cuts.last().expect("starts with the table's start");
        if cut > last && cut < end {
            cuts.push(cut);
        }
    }
    cuts.push(end);
    cuts.windows(2)
        .map(|w| part(files, &groups, w[0], w[1]))
        .collect()
}

/// The rows from `from` up to `to` as scan parts (row groups merged into ranges per file).
fn part(files: &[FileGroups], groups: &[(usize, usize, u64, usize)], from: Cut, to: Cut) -> Part {
    let mut out: Part = Vec::new();
    let mut push = |g: usize, rows: Option<std::ops::Range<usize>>| {
        let (fi, rg, _, n) = groups[g];
        let file = &files[fi].0;
        match (rows, out.last_mut()) {
            (Some(r), _) if r == (0..n) => out.push(ScanPart::row_groups(file, rg..rg + 1)),
            (Some(r), _) => out.push(ScanPart::rows(file, rg, r)),
            (None, Some(last))
                if last.file == *file && last.rows.is_none() && last.row_groups.end == rg =>
            {
                last.row_groups.end += 1
            }
            (None, _) => out.push(ScanPart::row_groups(file, rg..rg + 1)),
        }
    };
    if from.group == to.group {
        push(from.group, Some(from.row..to.row));
        return out;
    }
    let mut g = from.group;
    if from.row > 0 {
        push(g, Some(from.row..groups[g].3));
        g += 1;
    }
    for whole in g..to.group {
        push(whole, None);
    }
    if to.row > 0 {
        push(to.group, Some(0..to.row));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row as (file, row group, row), in partition order, and each partition's bytes
    /// (a slice's share of its row group's bytes by rows).
    fn layout(parts: &[Part], files: &[FileGroups]) -> (Vec<(String, usize, usize)>, Vec<f64>) {
        let group = |l: &str, rg: usize| files.iter().find(|f| f.0 == l).unwrap().1[rg];
        let mut rows = Vec::new();
        let mut bytes = Vec::new();
        for p in parts {
            let mut b = 0.0;
            for s in p {
                for rg in s.row_groups.clone() {
                    let (size, n) = group(&s.file, rg);
                    let r = s.rows.clone().unwrap_or(0..n);
                    b += match n {
                        0 => size.max(1) as f64,
                        n => size.max(1) as f64 * r.len() as f64 / n as f64,
                    };
                    rows.extend(r.map(|i| (s.file.clone(), rg, i)));
                }
            }
            bytes.push(b);
        }
        (rows, bytes)
    }

    fn all_rows(files: &[FileGroups]) -> Vec<(String, usize, usize)> {
        let mut out = Vec::new();
        for (l, gs) in files {
            for (rg, &(_, n)) in gs.iter().enumerate() {
                out.extend((0..n).map(|i| (l.clone(), rg, i)));
            }
        }
        out
    }

    fn file(name: &str, groups: &[(u64, usize)]) -> FileGroups {
        (name.to_string(), groups.to_vec())
    }

    #[test]
    fn many_row_groups_split_between_them_by_bytes() {
        let files = vec![
            file("a", &[(10, 100); 3]),
            file("b", &[]),
            file("c", &[(10, 100); 5]),
        ];
        let parts = split(&files, 4, true);
        let (rows, bytes) = layout(&parts, &files);
        assert_eq!(rows, all_rows(&files), "every row once, in order");
        assert_eq!(bytes, vec![20.0, 20.0, 20.0, 20.0]);
        assert!(parts.iter().flatten().all(|p| p.rows.is_none()));
        assert_eq!(
            parts[1],
            vec![
                ScanPart::row_groups("a", 2..3),
                ScanPart::row_groups("c", 0..1)
            ]
        );
        assert_eq!(split(&files, 1, true).len(), 1);
        assert_eq!(split(&[], 4, true), vec![Vec::new()]);
    }

    #[test]
    fn one_large_row_group_is_cut_into_slices() {
        let rows = 200_000;
        let files = vec![file("part", &[(8 << 20, rows)])];
        let parts = split(&files, 16, true);
        let (got, bytes) = layout(&parts, &files);
        assert_eq!(got, all_rows(&files));
        assert_eq!(
            parts.len(),
            10,
            "200 000 rows hold 10 slices of 20 000 rows"
        );
        for p in &parts {
            let r = p[0].rows.clone().unwrap();
            assert_eq!(r.start % SLICE_ROWS, 0);
        }
        let share = bytes.iter().sum::<f64>() / 16.0;
        assert!(bytes.iter().all(|&b| b <= 2.0 * share), "{bytes:?}");
    }

    #[test]
    fn without_slices_partitions_are_whole_row_groups() {
        let files = vec![file("part", &[(8 << 20, 200_000)])];
        let parts = split(&files, 16, false);
        assert_eq!(parts, vec![vec![ScanPart::row_groups("part", 0..1)]]);
        let files = vec![file("a", &[(100, 100_000); 6]), file("b", &[(50, 50_000)])];
        let parts = split(&files, 16, false);
        let (rows, _) = layout(&parts, &files);
        assert_eq!(rows, all_rows(&files));
        assert_eq!(parts.len(), 7);
        assert!(parts.iter().flatten().all(|p| p.rows.is_none()));
        assert_eq!(split(&files, 2, false).len(), 2);
    }

    #[test]
    fn small_row_groups_are_never_cut() {
        let files = vec![file("nation", &[(2_000, 25)])];
        let parts = split(&files, 16, true);
        assert_eq!(parts, vec![vec![ScanPart::row_groups("nation", 0..1)]]);
        let files = vec![file("t", &[(100, 1_000); 3])];
        assert_eq!(split(&files, 16, true).len(), 3);
    }

    #[test]
    fn cuts_keep_every_row_once_and_partitions_balanced() {
        // Row groups of mixed sizes and rows, some empty, over several files.
        let mut seed = 7u64;
        let mut next = |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        for _ in 0..60 {
            let files: Vec<FileGroups> = (0..1 + next(4))
                .map(|f| {
                    let groups = (0..next(5))
                        .map(|_| {
                            let rows = [0, 10, SLICE_ROWS, 70_000, 300_000][next(5) as usize];
                            (rows as u64 * (1 + next(8)), rows)
                        })
                        .collect();
                    (format!("f{f}"), groups)
                })
                .collect();
            let target = 1 + next(20) as usize;
            let slices = next(4) != 0;
            let parts = split(&files, target, slices);
            assert!(!parts.is_empty() && parts.len() <= target);
            let (rows, bytes) = layout(&parts, &files);
            assert_eq!(rows, all_rows(&files), "{files:?} into {target}");
            if parts.len() > 1 {
                assert!(bytes.iter().all(|&b| b > 0.0), "no empty partition");
            }
            for p in parts.iter().flatten() {
                let n = files.iter().find(|f| f.0 == p.file).unwrap().1[p.row_groups.start].1;
                assert!(slices || p.rows.is_none());
                if let Some(r) = &p.rows {
                    assert!(p.row_groups.len() == 1 && r.start < r.end && r.end <= n);
                    assert!(r.start % SLICE_ROWS == 0 && (r.end % SLICE_ROWS == 0 || r.end == n));
                    assert!(*r != (0..n), "a whole row group is named as one");
                }
            }
        }
    }
}
