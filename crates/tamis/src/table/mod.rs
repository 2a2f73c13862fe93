//! Table formats: a table's metadata (a Delta log) says which Parquet files hold its rows at a
//! version, the partition values of each, which of their rows were deleted, and how the table's
//! columns are named in the files. tamis reads the files; the metadata is read by the format's
//! own project (`delta_kernel`, `iceberg`), never by hand.
//!
//! ```text
//! delta.rs     a Delta Lake table → TableSnapshot, through delta_kernel's log replay
//! iceberg.rs   an Apache Iceberg table → TableSnapshot, through iceberg's scan planning
//! mod.rs       TableSnapshot: what `DatasetPlan::open_table` opens instead of a listing;
//!              finding a table's format; a filter as a format's pruning predicate
//! ```
//!
//! A snapshot's deleted rows become each file's row selection before any filter runs
//! (`dataset::plan::DatasetFile::deleted`), so a deleted row is never decoded as payload.

pub mod delta;
pub mod iceberg;

use std::sync::{Arc, Mutex};

use arrow::datatypes::{DataType, Field};

use crate::error::Result;
use crate::expr::{CmpOp, Expr, Literal};
use crate::io::location::{FileRef, StorageOptions};

pub use crate::io::location::TableFormat;

/// Which version of a table to read (time travel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AsOf {
    /// The latest version (Delta) or the current snapshot (Iceberg).
    #[default]
    Latest,
    /// A Delta version, or an Iceberg snapshot id.
    Version(u64),
    /// The version that was current at this time (milliseconds since the Unix epoch).
    Timestamp(i64),
}

impl AsOf {
    /// The version a caller asked for: a version, a time (see [`AsOf::timestamp`]), or
    /// neither (the latest); both is an error.
    pub fn given(version: Option<u64>, timestamp: Option<&str>) -> Result<AsOf> {
        match (version, timestamp) {
            (Some(_), Some(_)) => Err(crate::error::Error::invalid(
                "give table_version or table_timestamp, not both",
            )),
            (Some(v), None) => Ok(AsOf::Version(v)),
            (None, Some(t)) => AsOf::timestamp(t),
            (None, None) => Ok(AsOf::Latest),
        }
    }

    /// A time given as `YYYY-MM-DD`, `YYYY-MM-DD HH:MM:SS[.fff]` (UTC) or RFC 3339 with its
    /// offset, as [`AsOf::Timestamp`].
    pub fn timestamp(text: &str) -> Result<AsOf> {
        let t = text.trim();
        let utc = |d: chrono::NaiveDateTime| d.and_utc().timestamp_millis();
        let ms = if let Ok(d) = chrono::DateTime::parse_from_rfc3339(t) {
            d.timestamp_millis()
        } else if let Ok(d) = chrono::NaiveDateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%.f") {
            utc(d)
        } else if let Ok(d) = chrono::NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f") {
            utc(d)
        } else if let Ok(d) = chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d") {
            utc(d.and_time(chrono::NaiveTime::MIN))
        } else {
            return Err(crate::error::Error::invalid(format!(
                "'{text}' is not a time (expected YYYY-MM-DD, YYYY-MM-DD HH:MM:SS in UTC, or \
                 RFC 3339 with an offset)"
            )));
        };
        Ok(AsOf::Timestamp(ms))
    }
}

/// The format of the table at `location`: an error when it is not a table, or is both a Delta
/// and an Iceberg table (Delta UniForm: the caller says which to read).
pub fn detect(location: &str, options: &StorageOptions) -> Result<TableFormat> {
    match crate::io::location::locate(location, options)? {
        crate::io::location::Located::Table(_, format) => Ok(format),
        crate::io::location::Located::Files(_) => Err(crate::error::Error::invalid(format!(
            "{location} is not a table (no _delta_log/, no metadata/*.metadata.json)"
        ))),
    }
}

/// The snapshot of the table at `location` in `format` (found by [`detect`] when `None`), at
/// `at`.
pub fn open(
    location: &str,
    format: Option<TableFormat>,
    at: AsOf,
    options: &StorageOptions,
) -> Result<TableSnapshot> {
    let format = match format {
        Some(f) => f,
        None => detect(location, options)?,
    };
    match format {
        TableFormat::Delta => delta::snapshot(location, at, options),
        TableFormat::Iceberg => iceberg::snapshot(location, at, options),
    }
}

/// The snapshot [`open`] gives for `location` in `format` at `version`, opened once per
/// process for each storage options: the tasks a worker runs for one scan (Spark's) read the
/// same snapshot, its deletes read once per file. The last few opened are kept.
pub fn open_version(
    location: &str,
    format: TableFormat,
    version: u64,
    options: &StorageOptions,
) -> Result<Arc<TableSnapshot>> {
    type Opened = Vec<(String, Arc<TableSnapshot>)>;
    static OPENED: Mutex<Opened> = Mutex::new(Vec::new());
    const KEEP: usize = 8;
    let key = format!("{location}|{format}|{version}|{:?}", options.0);
    let found = (OPENED.lock().unwrap_or_else(|e| e.into_inner()).iter())
        .find(|(k, _)| *k == key)
        .map(|(_, s)| s.clone());
    if let Some(snapshot) = found {
        return Ok(snapshot);
    }
    let snapshot = Arc::new(open(
        location,
        Some(format),
        AsOf::Version(version),
        options,
    )?);
    let mut opened = OPENED.lock().unwrap_or_else(|e| e.into_inner());
    if opened.len() >= KEEP {
        opened.remove(0);
    }
    opened.push((key, snapshot.clone()));
    Ok(snapshot)
}

/// The files of one version of a table and how its columns map onto them.
#[derive(Debug, Clone)]
pub struct TableSnapshot {
    /// The format and location, for errors and `explain` ("Delta Lake table s3://b/t").
    pub name: String,
    /// The location it was opened from, as given: with `format` and `version`, what opens
    /// the same snapshot again elsewhere (a Spark executor, [`open_version`]).
    pub location: String,
    /// The table's format.
    pub format: TableFormat,
    /// The version read: a Delta version, or an Iceberg snapshot id.
    pub version: u64,
    /// The data columns (not partition columns), in the table's order.
    pub columns: Vec<TableColumn>,
    /// The partition columns and their types (their values come from the metadata, not the
    /// files).
    pub partitions: Vec<(String, DataType)>,
    /// Every column's name in the table's order (data and partition columns interleaved as
    /// the table declares them): the default projection.
    pub order: Vec<String>,
    /// The files of this version.
    pub files: Vec<TableFile>,
    /// Prunes files by the statistics the table's metadata holds for each (`None`: none).
    pub pruner: Option<Arc<dyn FilePruner>>,
}

impl TableSnapshot {
    /// This snapshot with only the files at `locations` (a worker's share of a scan that was
    /// pruned where it was planned), and no pruner.
    pub fn with_files(&self, locations: &[String]) -> TableSnapshot {
        let mut out = self.clone();
        (out.files).retain(|f| locations.contains(&f.file.location()));
        out.pruner = None;
        out
    }
}

/// Prunes a table's files before their footers are read, by what its metadata records per
/// file (min, max and null counts, partition values).
pub trait FilePruner: Send + Sync + std::fmt::Debug {
    /// Per file of [`TableSnapshot::files`], whether `filter` may hold for a row of it;
    /// `None` when the metadata cannot tell (every file may).
    fn files_for(&self, filter: &crate::expr::Expr) -> crate::error::Result<Option<Vec<bool>>>;
}

/// A data column of a table.
#[derive(Debug, Clone)]
pub struct TableColumn {
    /// Its name and type as the table's current schema says.
    pub field: Field,
    /// Its name in the files (column mapping), the same as the field's name without mapping.
    pub physical: String,
    /// Its Parquet field id (column mapping in `id` mode): files are matched by it first.
    pub field_id: Option<i32>,
    /// The names a file written without field ids may give it (Iceberg's name mapping,
    /// `schema.name-mapping.default`); `None`: its physical name. A mapping that leaves a
    /// column out is `Some` of no names: no file without ids holds it.
    pub file_names: Option<Vec<String>>,
}

/// One data file of a table version.
#[derive(Debug, Clone)]
pub struct TableFile {
    /// Where the file is, resolved against the table root.
    pub file: FileRef,
    /// One value per partition column of [`TableSnapshot::partitions`], as the metadata
    /// writes it (`None`: NULL); the dataset layer types them.
    pub partition: Vec<Option<String>>,
    /// The file's deleted rows, if the metadata says it has some: read when a scan first
    /// needs them.
    pub deleted: Option<Deletes>,
}

/// A data file's deleted rows (positions in the file, ascending, no repeats), read from the
/// table's deletion vector or delete files the first time a scan asks, so that the files a
/// filter prunes never have theirs read. Clones share the rows once read.
#[derive(Clone)]
pub struct Deletes {
    state: Arc<Mutex<DeletesState>>,
    /// How many rows are deleted, where the table's metadata says so without reading them
    /// (a Delta deletion vector's cardinality).
    count: Option<u64>,
}

/// A loader of a file's deleted rows (unsorted, repeats allowed).
type DeletesLoader = Box<dyn Fn() -> Result<Vec<u64>> + Send + Sync>;

enum DeletesState {
    /// Not read yet (or the last read failed: the next caller tries again).
    Pending(DeletesLoader),
    Read(Arc<[u64]>),
}

impl Deletes {
    /// Rows already known.
    pub fn known(rows: Vec<u64>) -> Deletes {
        let rows = sorted(rows);
        Deletes {
            count: Some(rows.len() as u64),
            state: Arc::new(Mutex::new(DeletesState::Read(rows))),
        }
    }

    /// Rows `load` reads when first asked for; its errors name the file.
    pub fn lazy(load: impl Fn() -> Result<Vec<u64>> + Send + Sync + 'static) -> Deletes {
        Deletes {
            state: Arc::new(Mutex::new(DeletesState::Pending(Box::new(load)))),
            count: None,
        }
    }

    /// The same rows, known by the table's metadata to be `count` before they are read.
    pub fn counted(self, count: u64) -> Deletes {
        Deletes {
            count: Some(count),
            ..self
        }
    }

    /// How many rows are deleted, if known without reading them (or read already).
    pub fn count(&self) -> Option<u64> {
        self.count
            .or_else(|| self.read().map(|rows| rows.len() as u64))
    }

    /// The deleted rows if a scan has read them already; `None` rather than reading them.
    pub fn read(&self) -> Option<Arc<[u64]>> {
        match &*self.state.lock().unwrap_or_else(|e| e.into_inner()) {
            DeletesState::Read(rows) => Some(rows.clone()),
            DeletesState::Pending(_) => None,
        }
    }

    /// The deleted rows, read now if not yet (callers of the same file wait for one read).
    pub fn rows(&self) -> Result<Arc<[u64]>> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let rows = match &*state {
            DeletesState::Read(rows) => return Ok(rows.clone()),
            DeletesState::Pending(load) => sorted(load()?),
        };
        *state = DeletesState::Read(rows.clone());
        Ok(rows)
    }
}

impl std::fmt::Debug for Deletes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &*self.state.lock().unwrap_or_else(|e| e.into_inner()) {
            DeletesState::Pending(_) => f.write_str("Deletes(not read)"),
            DeletesState::Read(rows) => write!(f, "Deletes({} rows)", rows.len()),
        }
    }
}

/// Positions ascending, without repeats.
fn sorted(mut rows: Vec<u64>) -> Arc<[u64]> {
    rows.sort_unstable();
    rows.dedup();
    Arc::from(rows)
}

/// A table format's pruning predicate, built from a tamis filter by [`translate`].
pub(crate) trait PredicateBuilder {
    /// A predicate.
    type Predicate;
    /// A column reference.
    type Column: Clone;
    /// A literal of a column's type.
    type Value;
    fn column(&self, name: &str) -> Self::Column;
    /// `l` exactly as a value of a column of type `t`; `None` when the type is not one whose
    /// statistics the format compares here, or `l` is not exactly a value of it.
    fn literal(&self, l: &Literal, t: &DataType) -> Option<Self::Value>;
    fn compare(&self, c: Self::Column, op: CmpOp, v: Self::Value) -> Self::Predicate;
    fn is_null(&self, c: Self::Column, negated: bool) -> Self::Predicate;
    fn and(&self, a: Self::Predicate, b: Self::Predicate) -> Self::Predicate;
    fn or(&self, a: Self::Predicate, b: Self::Predicate) -> Self::Predicate;
}

/// `e` as a format's predicate over the table's columns (`columns`: names and Arrow types),
/// keeping what per-file statistics can decide: a conjunct that does not translate is left
/// out (the result then holds for more files, never fewer); a disjunction only when both sides
/// translate. Comparisons of a column with a literal, `IS [NOT] NULL`, `BETWEEN` and `IN`.
pub(crate) fn translate<B: PredicateBuilder>(
    b: &B,
    e: &Expr,
    columns: &[(String, DataType)],
) -> Option<B::Predicate> {
    let column = |e: &Expr| -> Option<(B::Column, &DataType)> {
        let Expr::Column(c) = e else { return None };
        let found = match columns.iter().find(|(n, _)| *n == c.path) {
            Some(x) => x,
            None if !c.exact => {
                let mut ci = (columns.iter()).filter(|(n, _)| n.eq_ignore_ascii_case(&c.path));
                match (ci.next(), ci.next()) {
                    (Some(x), None) => x,
                    _ => return None,
                }
            }
            None => return None,
        };
        Some((b.column(&found.0), &found.1))
    };
    let literal = |e: &Expr, t: &DataType| -> Option<B::Value> {
        let Expr::Literal(l) = e else { return None };
        b.literal(l, t)
    };
    match e {
        Expr::And(l, r) => match (translate(b, l, columns), translate(b, r, columns)) {
            (Some(l), Some(r)) => Some(b.and(l, r)),
            (Some(x), None) | (None, Some(x)) => Some(x),
            (None, None) => None,
        },
        Expr::Or(l, r) => Some(b.or(translate(b, l, columns)?, translate(b, r, columns)?)),
        Expr::Compare(l, op, r) => match (column(l), column(r)) {
            (Some((c, t)), None) => Some(b.compare(c, *op, literal(r, t)?)),
            (None, Some((c, t))) => Some(b.compare(c, op.flip(), literal(l, t)?)),
            _ => None,
        },
        Expr::IsNull { expr, negated } => Some(b.is_null(column(expr)?.0, *negated)),
        Expr::Between {
            expr,
            low,
            high,
            negated: false,
        } => {
            let (c, t) = column(expr)?;
            let low = b.compare(c.clone(), CmpOp::GtEq, literal(low, t)?);
            Some(b.and(low, b.compare(c, CmpOp::LtEq, literal(high, t)?)))
        }
        Expr::InList {
            expr,
            list,
            negated: false,
        } if !list.is_empty() && list.len() <= 64 => {
            let (c, t) = column(expr)?;
            let mut each = list.iter().map(|v| {
                let v = literal(v, t)?;
                Some(b.compare(c.clone(), CmpOp::Eq, v))
            });
            let first = each.next()??;
            each.try_fold(first, |acc, p| Some(b.or(acc, p?)))
        }
        _ => None,
    }
}

/// Days since the Unix epoch of a date literal (date statistics are kept as such).
pub(crate) fn epoch_days(d: &chrono::NaiveDate) -> Option<i32> {
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?;
    i32::try_from((*d - epoch).num_days()).ok()
}

/// A timestamp literal as microseconds since the epoch on a microsecond column, as the scan
/// compares them: on a UTC-adjusted column (`Some` time zone) a literal without an offset is
/// UTC; on a wall-clock column only a literal without an offset is taken (`None`: not
/// translated, so the table's metadata prunes nothing by it).
pub(crate) fn epoch_micros(l: &Literal, t: &DataType) -> Option<i64> {
    let Literal::Timestamp(at, offset) = l else {
        return None;
    };
    let DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, zone) = t else {
        return None;
    };
    crate::expr::instant_micros(at, *offset, zone.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_translate_as_the_scan_compares_them() {
        use arrow::datatypes::TimeUnit::{Microsecond, Millisecond};
        let at = chrono::NaiveDate::from_ymd_opt(2024, 3, 1)
            .and_then(|d| d.and_hms_opt(10, 0, 0))
            .unwrap();
        let utc = at.and_utc().timestamp_micros();
        let zoned = DataType::Timestamp(Microsecond, Some("UTC".into()));
        let local = DataType::Timestamp(Microsecond, None);
        let plain = Literal::Timestamp(at, None);
        let plus_two = Literal::Timestamp(at, Some(7200));
        assert_eq!(epoch_micros(&plain, &zoned), Some(utc));
        assert_eq!(epoch_micros(&plain, &local), Some(utc));
        assert_eq!(epoch_micros(&plus_two, &zoned), Some(utc - 7_200_000_000));
        // A wall-clock column and a literal at an offset: no instant to compare, not translated.
        assert_eq!(epoch_micros(&plus_two, &local), None);
        assert_eq!(
            epoch_micros(&plain, &DataType::Timestamp(Millisecond, None)),
            None
        );
        assert_eq!(epoch_micros(&Literal::Number("1".into()), &zoned), None);
    }

    #[test]
    fn times_parse_as_utc_milliseconds() {
        let ms = |t: &str| match AsOf::timestamp(t).unwrap() {
            AsOf::Timestamp(ms) => ms,
            other => panic!("{other:?}"),
        };
        assert_eq!(ms("1970-01-02"), 86_400_000);
        assert_eq!(ms("1970-01-01 00:00:01.5"), 1_500);
        assert_eq!(ms("1970-01-01T00:00:01"), 1_000);
        assert_eq!(ms("1970-01-01T01:00:00+01:00"), 0);
        assert!(AsOf::timestamp("yesterday").is_err());
    }
}
