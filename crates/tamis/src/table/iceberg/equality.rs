//! Iceberg equality deletes, applied as an anti-join that ends in row positions: a delete
//! file's rows are keys (the values of some columns, named by field id), and a data file's row
//! whose values of those columns equal a key's is deleted, NULL matching NULL (the spec's
//! null-safe equality). Which delete files apply to which data file (sequence numbers,
//! partitions, global deletes) is iceberg's planning; this module turns each data file's
//! share into deleted positions, so they reach the scan as the same row selection as
//! positional deletes and deletion vectors: the key columns of the data file are read (those
//! column chunks only), encoded in the table's current types as Arrow rows and looked up in
//! the delete file's keys.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::{Arc, Mutex};

use arrow::array::{new_null_array, ArrayRef};
use arrow::datatypes::DataType as ArrowType;
use arrow::row::{RowConverter, SortField};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use crate::error::{Error, Result};
use crate::file::OpenedFile;
use crate::io::location::FileRef;

/// The key columns of one equality delete file: field ids, their names and types in the
/// table's schema.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct KeyColumns {
    pub(super) ids: Vec<i32>,
    pub(super) names: Vec<String>,
    pub(super) types: Vec<ArrowType>,
    /// The names each may have in a file written without field ids (the table's name
    /// mapping, else its name).
    pub(super) file_names: Vec<Vec<String>>,
}

/// An equality delete file as a data file's loader needs it.
#[derive(Clone, Debug)]
pub(super) struct EqualityDeleteFile {
    pub(super) file: FileRef,
    pub(super) keys: KeyColumns,
}

/// The keys of an equality delete file: its rows' key values in the Arrow row format.
struct KeySet {
    rows: HashSet<Box<[u8]>>,
}

/// The equality delete files of one snapshot, each read once however many data files it
/// applies to (an unpartitioned delete applies to every file).
#[derive(Default)]
pub(super) struct EqualityDeletes {
    read: Mutex<HashMap<String, KeySlot>>,
}

/// One delete file's keys once read; locked while they are read.
type KeySlot = Arc<Mutex<Option<Arc<KeySet>>>>;

impl EqualityDeletes {
    /// The positions of `data_file`'s rows whose keys one of `deletes` holds.
    pub(super) fn rows_of(
        &self,
        data_file: &FileRef,
        deletes: &[EqualityDeleteFile],
    ) -> Result<Vec<u64>> {
        let mut deleted = Vec::new();
        // Delete files keyed by the same columns are probed with one read of those columns.
        let mut by_keys: Vec<(&KeyColumns, Vec<Arc<KeySet>>)> = Vec::new();
        for d in deletes {
            let set = self.keys_of(d)?;
            match by_keys.iter_mut().find(|(k, _)| **k == d.keys) {
                Some((_, sets)) => sets.push(set),
                None => by_keys.push((&d.keys, vec![set])),
            }
        }
        for (keys, sets) in by_keys {
            if sets.iter().all(|s| s.rows.is_empty()) {
                continue;
            }
            let converter = converter(keys)?;
            let mut position = 0u64;
            for columns in read_columns(data_file, keys, Holds::DataRows)? {
                let rows = (converter.convert_columns(&columns))
                    .map_err(|e| Error::invalid(format!("its key columns: {e}")))?;
                for (i, row) in rows.iter().enumerate() {
                    if sets.iter().any(|s| s.rows.contains(row.as_ref())) {
                        deleted.push(position + i as u64);
                    }
                }
                position += rows.num_rows() as u64;
            }
        }
        Ok(deleted)
    }

    fn keys_of(&self, d: &EqualityDeleteFile) -> Result<Arc<KeySet>> {
        let location = d.file.location();
        let slot = (self.read.lock().unwrap_or_else(|e| e.into_inner()))
            .entry(location.clone())
            .or_default()
            .clone();
        // Held while reading: a second data file of the same delete file waits for it.
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(set) = &*slot {
            return Ok(set.clone());
        }
        let converter = converter(&d.keys)?;
        let mut rows = HashSet::new();
        for columns in
            (read_columns(&d.file, &d.keys, Holds::Keys)).map_err(|e| e.in_file(&location))?
        {
            let encoded = (converter.convert_columns(&columns))
                .map_err(|e| Error::invalid(format!("its key columns: {e}")).in_file(&location))?;
            rows.extend(encoded.iter().map(|r| Box::<[u8]>::from(r.as_ref())));
        }
        Ok(slot.insert(Arc::new(KeySet { rows })).clone())
    }
}

fn converter(keys: &KeyColumns) -> Result<RowConverter> {
    let fields = keys
        .types
        .iter()
        .map(|t| SortField::new(t.clone()))
        .collect();
    RowConverter::new(fields)
        .map_err(|e| Error::unsupported(format!("equality deletes keyed by {:?}: {e}", keys.names)))
}

/// What a file read by [`read_columns`] is.
#[derive(Clone, Copy, PartialEq)]
enum Holds {
    /// A data file: a key column it lacks (added to the table later) is NULL in its rows.
    DataRows,
    /// An equality delete file: it must hold every key column.
    Keys,
}

/// The key columns of a Parquet file, batch by batch, cast to the table's types: each found by
/// its field id (by [`KeyColumns::file_names`] in a file written without field ids). Only the
/// key columns' chunks are read.
fn read_columns(file: &FileRef, keys: &KeyColumns, holds: Holds) -> Result<Vec<Vec<ArrayRef>>> {
    let location = file.location();
    let opened = OpenedFile::open_ref(file)?;
    let descr = opened.metadata.file_metadata().schema_descr_ptr();
    let roots = descr.root_schema().get_fields();
    let with_ids = roots.iter().any(|f| f.get_basic_info().has_id());
    // The file's top-level column of each key, if it has one.
    let mut found: Vec<Option<usize>> = Vec::with_capacity(keys.ids.len());
    for ((id, name), file_names) in keys.ids.iter().zip(&keys.names).zip(&keys.file_names) {
        let at = roots.iter().position(|f| match with_ids {
            true => f.get_basic_info().has_id() && f.get_basic_info().id() == *id,
            false => file_names.iter().any(|n| n == f.name()),
        });
        if at.is_some_and(|at| !roots[at].is_primitive()) {
            return Err(Error::unsupported(format!(
                "equality deletes keyed by column '{name}', which this file holds as a group, \
                 not a primitive column"
            ))
            .in_file(&location));
        }
        if at.is_none() && holds == Holds::Keys {
            return Err(Error::corrupt(format!(
                "an equality delete file without its key column '{name}' (field id {id})"
            ))
            .in_file(&location));
        }
        found.push(at);
    }
    let mut wanted: Vec<usize> = found.iter().flatten().copied().collect();
    wanted.sort_unstable();
    wanted.dedup();
    let metadata = &opened.metadata;
    // A file holding none of the key columns: all its rows have NULL keys.
    if wanted.is_empty() {
        let mut left = metadata.file_metadata().num_rows().max(0) as usize;
        let mut batches = Vec::new();
        while left > 0 {
            let n = left.min(64 * 1024);
            batches.push((keys.types.iter()).map(|t| new_null_array(t, n)).collect());
            left -= n;
        }
        return Ok(batches);
    }
    let leaves: Vec<usize> = (0..descr.num_columns())
        .filter(|&leaf| wanted.contains(&descr.get_column_root_idx(leaf)))
        .collect();
    let ranges: Vec<Range<u64>> = (metadata.row_groups().iter())
        .flat_map(|rg| leaves.iter().map(move |&leaf| rg.column(leaf).byte_range()))
        .map(|(start, len)| start..start.saturating_add(len))
        .collect();
    let fetched = opened.reader().read_ranges(&ranges)?;
    let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(fetched, opened.arrow.clone())
        .with_projection(ProjectionMask::roots(&descr, wanted.iter().copied()))
        .with_batch_size(64 * 1024)
        .build()
        .map_err(|e| Error::from(e).in_file(&location))?;
    let mut batches = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| Error::from(e).in_file(&location))?;
        let mut columns = Vec::with_capacity(found.len());
        for ((at, t), name) in found.iter().zip(&keys.types).zip(&keys.names) {
            let column = match at {
                // The batch holds the projected roots in file order.
                Some(at) => {
                    let i = wanted.partition_point(|w| w < at);
                    arrow::compute::cast(batch.column(i), t).map_err(|e| {
                        Error::invalid(format!("key column '{name}' is not a {t}: {e}"))
                            .in_file(&location)
                    })?
                }
                None => new_null_array(t, batch.num_rows()),
            };
            columns.push(column);
        }
        batches.push(columns);
    }
    Ok(batches)
}
