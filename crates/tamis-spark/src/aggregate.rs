//! `count(*)`, `count(c)`, `min(c)` and `max(c)` answered from the footers, for Spark's
//! aggregate pushdown: only where every row group's statistics make the answer exact.

use arrow::datatypes::DataType;
use parquet::basic::Type as PhysicalType;
use parquet::file::statistics::Statistics;
use serde::Deserialize;
use tamis::{Dataset, Result};

/// One aggregate Spark asks for.
#[derive(Debug, Clone, Deserialize)]
pub struct Aggregate {
    /// `count_star`, `count`, `min` or `max`.
    pub function: String,
    /// The column (not for `count_star`).
    pub column: Option<String>,
}

/// The aggregates' values (integers: counts, and for `min`/`max` the value as Spark holds it —
/// an integer, a date's days, a short decimal's unscaled value; `None` where every value is
/// NULL), or `None` when the footers cannot answer one of them exactly.
pub fn from_footers(
    dataset: &Dataset,
    aggregates: &[Aggregate],
) -> Result<Option<Vec<Option<i64>>>> {
    // A table's footers count the rows its deletes removed.
    if dataset.is_table() {
        return Ok(None);
    }
    let plan = dataset.plan();
    let mut out = Vec::with_capacity(aggregates.len());
    for a in aggregates {
        let value = match (a.function.as_str(), &a.column) {
            ("count_star", _) => Some(Some(
                (plan.files.iter())
                    .flat_map(|f| f.metadata.row_groups())
                    .map(|g| g.num_rows().max(0))
                    .sum(),
            )),
            ("count" | "min" | "max", Some(column)) => {
                column_aggregate(dataset, &a.function, column)
            }
            _ => None,
        };
        match value {
            Some(v) => out.push(v),
            None => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// One column's aggregate over every row group, or `None` when a statistic is missing or
/// inexact, the column is nested, a partition column, or typed differently in some file.
fn column_aggregate(dataset: &Dataset, function: &str, column: &str) -> Option<Option<i64>> {
    let plan = dataset.plan();
    if plan
        .partitions
        .fields
        .iter()
        .any(|(name, _)| name == column)
    {
        return None; // in no file's footer
    }
    let wanted = plan
        .schema
        .field_with_name(column)
        .ok()?
        .data_type()
        .clone();
    let integral = matches!(
        wanted,
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 | DataType::Date32
    ) || matches!(wanted, DataType::Decimal128(p, _) if p <= 18);
    if function != "count" && !integral {
        return None; // floats (NaN), strings (truncated statistics), timestamps (INT96)
    }
    let (mut count, mut best): (i64, Option<i64>) = (0, None);
    for file in &plan.files {
        let Ok(field) = file.schema.field_with_name(column) else {
            // A file without the column: NULL in all its rows.
            continue;
        };
        if field.data_type() != &wanted {
            return None;
        }
        let descr = file.metadata.file_metadata().schema_descr();
        let leaves: Vec<usize> = (0..descr.num_columns())
            .filter(|&i| descr.get_column_root(i).name() == column)
            .collect();
        let [leaf] = leaves[..] else {
            return None; // nested
        };
        if descr.column(leaf).path().parts().len() != 1 {
            return None;
        }
        for group in file.metadata.row_groups() {
            let stats = group.column(leaf).statistics()?;
            let nulls = stats.null_count_opt()? as i64;
            count += group.num_rows() - nulls;
            if function == "count" || nulls == group.num_rows() {
                continue;
            }
            let value = match (stats, group.column(leaf).column_type()) {
                (Statistics::Int32(s), PhysicalType::INT32) => {
                    if function == "min" {
                        s.min_is_exact().then_some(*s.min_opt()? as i64)
                    } else {
                        s.max_is_exact().then_some(*s.max_opt()? as i64)
                    }
                }
                (Statistics::Int64(s), PhysicalType::INT64) => {
                    if function == "min" {
                        s.min_is_exact().then_some(*s.min_opt()?)
                    } else {
                        s.max_is_exact().then_some(*s.max_opt()?)
                    }
                }
                _ => None,
            }?;
            best = Some(match (best, function) {
                (None, _) => value,
                (Some(b), "min") => b.min(value),
                (Some(b), _) => b.max(value),
            });
        }
    }
    Some(if function == "count" {
        Some(count)
    } else {
        best
    })
}
