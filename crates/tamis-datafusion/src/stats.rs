//! Table and partition statistics from the footers: rows, and per column min, max and nulls,
//! so DataFusion's optimizer picks join orders and build sides from real numbers.

use arrow::array::{Array, ArrayRef};
use arrow::datatypes::Schema;
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, ScalarValue, Statistics};
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use tamis::dataset::DatasetPlan;
use tamis_arrow::array::Array as _;
use tamis_arrow::datatypes::DataType;

use crate::cross::array_to_datafusion;

/// One column's statistics in one row group.
#[derive(Clone, Default)]
struct ColumnStat {
    min: Option<ScalarValue>,
    max: Option<ScalarValue>,
    nulls: Option<usize>,
    /// Bytes the column takes once read: rows × width for fixed-width types, the chunk's
    /// uncompressed size otherwise.
    bytes: Option<usize>,
}

/// One row group's statistics.
struct RowGroupStat {
    /// Rows, less those a table deleted (a deletion vector) if they were read already;
    /// otherwise the footer's count (see [`FileStat::deleted`]).
    rows: usize,
    /// Rows by the footer, deleted ones included.
    footer_rows: usize,
    /// Whether a table deleted some of its rows: the footer's null counts may count them.
    deletions: bool,
    bytes: usize,
    /// By dataset column.
    columns: Vec<ColumnStat>,
}

/// One file's statistics.
struct FileStat {
    location: String,
    row_groups: Vec<RowGroupStat>,
    deleted: Deleted,
}

/// A file's deleted rows as its statistics know them. A table's deletes are read when a scan
/// reaches the file, not when the table is registered.
#[derive(Clone, Copy)]
enum Deleted {
    /// None, or read already: each row group's rows are exact.
    Subtracted,
    /// Not read yet, but counted by the table's metadata (a Delta deletion vector's
    /// cardinality): the row groups' rows are the footer's, the whole file's less this exact.
    Unread(u64),
    /// Not read yet nor counted: the row groups' rows are upper bounds.
    Unknown,
}

/// Statistics of every row group of every file, by file location.
pub struct TableStats {
    files: Vec<FileStat>,
}

impl TableStats {
    /// Reads the footers' statistics (tamis's arrow) into DataFusion's scalars.
    pub fn new(plan: &DatasetPlan) -> datafusion::common::Result<TableStats> {
        let schema = &plan.schema;
        let files = plan
            .files
            .iter()
            .map(|f| -> datafusion::common::Result<_> {
                let meta = &f.metadata;
                let rgs = meta.row_groups();
                let mut first_row = 0u64;
                // A table's deleted rows, where a scan read them already.
                let deleted = f.deleted.as_ref().and_then(|d| d.read());
                let counted = match (&f.deleted, &deleted) {
                    (None, _) | (Some(_), Some(_)) => Deleted::Subtracted,
                    (Some(d), None) => d.count().map_or(Deleted::Unknown, Deleted::Unread),
                };
                let mut out: Vec<RowGroupStat> = rgs
                    .iter()
                    .map(|rg| {
                        let rows = rg.num_rows().max(0) as u64;
                        let deleted = deleted.as_deref().map_or(0, |d| {
                            let from = d.partition_point(|&r| r < first_row);
                            d[from..].partition_point(|&r| r < first_row + rows)
                        });
                        first_row += rows;
                        RowGroupStat {
                            rows: rows as usize - deleted,
                            footer_rows: rows as usize,
                            deletions: deleted > 0 || !matches!(counted, Deleted::Subtracted),
                            bytes: rg.total_byte_size().max(0) as usize,
                            columns: vec![ColumnStat::default(); schema.fields().len()],
                        }
                    })
                    .collect();
                for (ci, field) in schema.fields().iter().enumerate() {
                    let Ok(own) = f.schema.field_with_name(field.name()) else {
                        continue;
                    };
                    for (rg, out) in rgs.iter().zip(out.iter_mut()) {
                        out.columns[ci].bytes = column_bytes(rg, field.name(), own.data_type());
                    }
                    if own.data_type() != field.data_type() || !summarisable(field.data_type()) {
                        continue;
                    }
                    let Ok(conv) = StatisticsConverter::try_new(
                        field.name(),
                        f.schema.as_ref(),
                        meta.file_metadata().schema_descr(),
                    ) else {
                        continue;
                    };
                    // Older writers leave the null count out; the converter would read that
                    // as 0, an exact count DataFusion answers `count(x)` with (rows − nulls).
                    let conv = conv.with_missing_null_counts_as_zero(false);
                    let crossed = |a: Option<tamis_arrow::array::ArrayRef>| {
                        a.map(|a| array_to_datafusion(&a)).transpose()
                    };
                    let mins = crossed(conv.row_group_mins(rgs.iter()).ok())?;
                    let maxes = crossed(conv.row_group_maxes(rgs.iter()).ok())?;
                    let nulls = conv.row_group_null_counts(rgs.iter()).ok();
                    for (ri, rg) in out.iter_mut().enumerate() {
                        let at = |a: &Option<ArrayRef>| {
                            a.as_ref()
                                .filter(|a| a.is_valid(ri))
                                .and_then(|a| ScalarValue::try_from_array(a, ri).ok())
                        };
                        let c = &mut rg.columns[ci];
                        c.min = at(&mins);
                        c.max = at(&maxes);
                        c.nulls = nulls
                            .as_ref()
                            .filter(|n| n.is_valid(ri))
                            .map(|n| n.value(ri) as usize);
                    }
                }
                Ok(FileStat {
                    location: f.location.clone(),
                    row_groups: out,
                    deleted: counted,
                })
            })
            .collect::<datafusion::common::Result<_>>()?;
        Ok(TableStats { files })
    }

    /// The whole table's statistics.
    pub fn table(&self, schema: &Schema) -> Statistics {
        self.merge(schema, None)
    }

    /// Statistics of some rows (a partition's parts). A part of a row group counts its share
    /// of the rows and bytes; its values' bounds are the row group's, its nulls inexact.
    pub fn parts(&self, schema: &Schema, parts: &[tamis::ScanPart]) -> Statistics {
        self.merge(schema, Some(parts))
    }

    fn merge(&self, schema: &Schema, only: Option<&[tamis::ScanPart]>) -> Statistics {
        let n = schema.fields().len();
        let mut rows = 0usize;
        let mut bytes = 0usize;
        let mut cols: Vec<Option<ColumnStat>> = vec![None; n];
        let mut first = true;
        let mut deletions = false;
        let mut exact = true;
        for file in &self.files {
            let mut selected = 0;
            for (ri, rg) in file.row_groups.iter().enumerate() {
                let Some(read) = rows_read(only, &file.location, ri, rg.footer_rows) else {
                    continue;
                };
                let whole = read == rg.footer_rows;
                // A part's share of the row group, by rows.
                let share = |x: usize| match whole {
                    true => x,
                    false => (x as u128 * read as u128 / rg.footer_rows.max(1) as u128) as usize,
                };
                if whole {
                    selected += 1;
                    rows += rg.rows;
                } else {
                    rows += read.min(rg.rows);
                    // Which of its rows a table deleted is not known here.
                    exact &= !rg.deletions;
                }
                bytes += share(rg.bytes);
                deletions |= rg.deletions || !whole;
                for (ci, c) in rg.columns.iter().enumerate() {
                    let c = ColumnStat {
                        bytes: c.bytes.map(share),
                        ..c.clone()
                    };
                    cols[ci] = Some(match (&cols[ci], first) {
                        (_, true) => c,
                        (None, false) => ColumnStat::default(),
                        (Some(acc), false) => ColumnStat {
                            min: pick(&acc.min, &c.min, true),
                            max: pick(&acc.max, &c.max, false),
                            nulls: acc.nulls.zip(c.nulls).map(|(a, b)| a + b),
                            bytes: acc.bytes.zip(c.bytes).map(|(a, b)| a + b),
                        },
                    });
                }
                first = false;
            }
            // Unread deletes: a whole file's count less the metadata's is exact; any part of
            // it, or a file whose deletes nobody counted, is an upper bound.
            match file.deleted {
                Deleted::Subtracted => {}
                _ if selected == 0 => {}
                Deleted::Unread(n) if selected == file.row_groups.len() => {
                    rows = rows.saturating_sub(n as usize)
                }
                Deleted::Unread(_) | Deleted::Unknown => exact = false,
            }
        }
        let column_statistics = (0..n)
            .map(|ci| {
                let c = cols[ci].clone().unwrap_or_default();
                let dt = schema.field(ci).data_type();
                // A string bound in a table declaring views is cast to the view type.
                let typed = |v: Option<ScalarValue>| match v {
                    Some(v) if v.data_type() == *dt => Precision::Inexact(v),
                    Some(v @ ScalarValue::Utf8(_)) if dt.is_string() => {
                        v.cast_to(dt).map_or(Precision::Absent, Precision::Inexact)
                    }
                    _ => Precision::Absent,
                };
                ColumnStatistics {
                    null_count: match (c.nulls, first) {
                        (_, true) => Precision::Exact(0),
                        (Some(x), false) if deletions => Precision::Inexact(x),
                        (Some(x), false) => Precision::Exact(x),
                        (None, false) => Precision::Absent,
                    },
                    max_value: typed(c.max),
                    min_value: typed(c.min),
                    byte_size: match (c.bytes, first) {
                        (_, true) => Precision::Exact(0),
                        (Some(b), false) => Precision::Inexact(b),
                        (None, false) => Precision::Absent,
                    },
                    ..ColumnStatistics::new_unknown()
                }
            })
            .collect();
        Statistics {
            num_rows: match exact {
                true => Precision::Exact(rows),
                false => Precision::Inexact(rows),
            },
            total_byte_size: Precision::Inexact(bytes),
            column_statistics,
        }
    }
}

/// Rows of row group `rg` (of `rows` rows) of file `location` that `only` reads: `None` none,
/// all of them with no `only`. Parts of one partition do not overlap; where a caller's do, the
/// sum is capped at the row group's rows.
fn rows_read(
    only: Option<&[tamis::ScanPart]>,
    location: &str,
    rg: usize,
    rows: usize,
) -> Option<usize> {
    let Some(parts) = only else {
        return Some(rows);
    };
    let mut read = None;
    for p in parts
        .iter()
        .filter(|p| p.file == location && p.row_groups.contains(&rg))
    {
        let n = p
            .rows
            .as_ref()
            .map_or(rows, |r| r.end.min(rows).saturating_sub(r.start));
        read = Some(read.unwrap_or(0usize).saturating_add(n).min(rows));
    }
    read
}

/// A column's bytes in one row group (see [`ColumnStat::bytes`]); `None` when its chunks
/// are not found.
fn column_bytes(
    rg: &parquet::file::metadata::RowGroupMetaData,
    name: &str,
    dt: &DataType,
) -> Option<usize> {
    let rows = rg.num_rows().max(0) as usize;
    if let Some(width) = dt.primitive_width() {
        return Some(rows.saturating_mul(width));
    }
    let mut chunks = rg
        .columns()
        .iter()
        .filter(|c| c.column_path().parts().first().map(String::as_str) == Some(name))
        .peekable();
    chunks.peek()?;
    Some(chunks.fold(0usize, |bytes, c| {
        bytes.saturating_add(c.uncompressed_size().max(0) as usize)
    }))
}

/// Types whose min/max DataFusion can use and whose order is unambiguous (not floats: NaN).
fn summarisable(dt: &DataType) -> bool {
    dt.is_integer()
        || matches!(
            dt,
            DataType::Utf8
                | DataType::LargeUtf8
                | DataType::Utf8View
                | DataType::Date32
                | DataType::Decimal128(..)
                | DataType::Timestamp(..)
                | DataType::Boolean
        )
}

/// The smaller (`min`) or larger of two optional bounds; unknown if either is.
fn pick(a: &Option<ScalarValue>, b: &Option<ScalarValue>, min: bool) -> Option<ScalarValue> {
    let (a, b) = (a.as_ref()?, b.as_ref()?);
    let ord = a.partial_cmp(b)?;
    Some(if (ord.is_le()) == min { a } else { b }.clone())
}
