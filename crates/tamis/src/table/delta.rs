//! Delta Lake tables, planned by `delta_kernel` (log replay, checkpoints, deletion vectors,
//! column mapping, reader features) with its default engine on tamis's own object stores.
//!
//! tamis takes from the kernel only what its scan needs: each file's path, partition values
//! and deleted rows, and the table's schema with each column's physical name and field id. It
//! never asks the kernel to read a data file or to transform batches.

use std::sync::Arc;

use arrow::datatypes::{DataType as ArrowType, Field, Fields, TimeUnit};
use delta_kernel::arrow::record_batch::RecordBatch as LogBatch;
use delta_kernel::engine::arrow_data::{ArrowEngineData, EngineDataArrowExt};
use delta_kernel::expressions::Predicate as KernelPredicate;
use delta_kernel::scan::state::ScanFile;
use delta_kernel::scan::StatsOptions;
use delta_kernel::schema::{
    ColumnMetadataKey, DataType, MetadataValue, PrimitiveType, StructField, StructType,
};
use delta_kernel::{EngineData, KernelError, Snapshot};
use delta_kernel_default_engine::executor::tokio::TokioBackgroundExecutor;
use delta_kernel_default_engine::DefaultEngine;
use url::Url;

use super::{AsOf, Deletes, PredicateBuilder, TableColumn, TableFile, TableSnapshot};
use crate::error::{Error, ErrorKind, Result};
use crate::expr::{CmpOp, Expr, Literal};
use crate::io::location::{store_for, FileRef, StorageOptions};

/// The kernel's default engine: its own Tokio thread for the log's reads.
type Engine = DefaultEngine<TokioBackgroundExecutor>;

/// The files of the Delta table at `location` at `at`.
pub fn snapshot(location: &str, at: AsOf, options: &StorageOptions) -> Result<TableSnapshot> {
    let name = format!("Delta Lake table {}", location.trim_end_matches('/'));
    let in_table = |e: Error| e.in_file(&name);
    let (root, engine) = engine_for(location, options).map_err(in_table)?;
    let builder = Snapshot::builder_for(root.as_str());
    let snapshot = match at {
        AsOf::Latest => builder.build(&*engine),
        AsOf::Version(v) => builder.at_version(v).build(&*engine),
        // The latest commit at or before the time: found from the latest snapshot's log.
        AsOf::Timestamp(ms) => builder.build(&*engine).and_then(|latest| {
            let commit = delta_kernel::history_manager::latest_version_as_of(
                &latest,
                &*engine,
                ms,
                delta_kernel::history_manager::HistoryCommitType::Recreatable,
            )?;
            match commit.version == latest.version() {
                true => Ok(latest),
                false => (Snapshot::builder_for(root.as_str()))
                    .at_version(commit.version)
                    .build(&*engine),
            }
        }),
    }
    .map_err(|e| kernel(e).in_file(&name))?;
    let version = snapshot.version();
    let config = snapshot.table_configuration();
    let partition_names: Vec<String> = config.logical_partition_columns().to_vec();
    let scan = (snapshot.clone().scan_builder())
        // Each file's statistics as the log's JSON, kept for the pruner's data skipping.
        .with_stats(StatsOptions::json_only())
        .build()
        .map_err(|e| kernel(e).in_file(&name))?;
    let logical = scan.logical_schema().clone();
    let physical = scan.physical_schema().clone();

    // The data columns pair with the physical schema's fields in order (the kernel builds one
    // from the other field by field).
    let data: Vec<&StructField> = (logical.fields())
        .filter(|f| !partition_names.contains(f.name()))
        .collect();
    if data.len() != physical.fields().len() {
        // Partition columns written into the files too (Iceberg compatibility): not yet.
        return Err(in_table(Error::unsupported(format!(
            "the table's files hold {} columns for its {} data columns (partition columns \
             materialized in the files?); tamis does not read such tables yet",
            physical.fields().len(),
            data.len()
        ))));
    }
    let mut columns = Vec::with_capacity(data.len());
    for (field, physical) in data.into_iter().zip(physical.fields()) {
        let arrow_field = arrow_field(field).map_err(in_table)?;
        if has_renamed_child(field, physical) {
            return Err(in_table(Error::unsupported(format!(
                "column '{}' is a struct, list or map whose nested fields are renamed by column \
                 mapping; tamis maps top-level columns only so far",
                field.name()
            ))));
        }
        let field_id = match physical.get_config_value(&ColumnMetadataKey::ParquetFieldId) {
            Some(MetadataValue::Number(id)) => i32::try_from(*id).ok(),
            _ => None,
        };
        columns.push(TableColumn {
            field: arrow_field,
            physical: physical.name().clone(),
            field_id,
            file_names: None,
        });
    }
    // Partition columns: their logical types, and the key their values have in the log
    // (the physical name under column mapping).
    let mut partition_fields = Vec::new();
    let mut partition_keys = Vec::new();
    for name in &partition_names {
        let field = logical.field(name).ok_or_else(|| {
            in_table(Error::corrupt(format!(
                "partition column '{name}' is not in the table's schema"
            )))
        })?;
        let t = arrow_field(field).map_err(in_table)?.data_type().clone();
        let key = match field.get_config_value(&ColumnMetadataKey::ColumnMappingPhysicalName) {
            Some(MetadataValue::String(p)) => p.clone(),
            _ => name.clone(),
        };
        partition_fields.push((name.clone(), t));
        partition_keys.push(key);
    }

    let mut scan_files: Vec<ScanFile> = Vec::new();
    // The replayed log's rows of live files, kept: the pruner skips files from them with a
    // filter's predicate instead of replaying the log again.
    let mut replayed: Vec<LogBatch> = Vec::new();
    let metadata = scan
        .scan_metadata(&*engine)
        .map_err(|e| kernel(e).in_file(&name))?;
    for batch in metadata {
        let batch = batch.map_err(|e| kernel(e).in_file(&name))?;
        scan_files = batch
            .visit_scan_files(scan_files, |files: &mut Vec<ScanFile>, f| files.push(f))
            .map_err(|e| kernel(e).in_file(&name))?;
        let live = (batch.scan_files.apply_selection_vector()).try_into_record_batch();
        replayed.push(live.map_err(|e| kernel(e).in_file(&name))?);
    }
    let table_root = snapshot.table_root().clone();
    let mut files = Vec::with_capacity(scan_files.len());
    let paths = (scan_files.iter().enumerate())
        .map(|(i, f)| (f.path.clone(), i))
        .collect();
    for f in scan_files {
        let url = table_root.join(&f.path).map_err(|e| {
            in_table(Error::corrupt(format!(
                "the log names a file '{}' that is not a path: {e}",
                f.path
            )))
        })?;
        let file = file_ref(&url, f.size, options).map_err(in_table)?;
        let location = file.location();
        let partition = (partition_keys.iter())
            .map(|key| {
                f.partition_values
                    .get(key)
                    .filter(|v| !v.is_empty())
                    .cloned()
            })
            .collect();
        // The deletion vector is read when a scan reaches the file (never for a pruned one).
        // Its cardinality, from the log, keeps DataFusion's row counts exact without it.
        let cardinality = (f.dv_info.cardinality()).map_err(|e| kernel(e).in_file(&location))?;
        let deleted = f.dv_info.has_vector().then(|| {
            let (dv, engine, root) = (f.dv_info.clone(), engine.clone(), table_root.clone());
            let deletes = Deletes::lazy(move || {
                let rows = dv.get_row_indexes(&*engine, &root);
                let rows = (rows.map_err(|e| kernel(e).in_file(&location))?).unwrap_or_default();
                match cardinality {
                    // Counts answered from the log must agree with the rows a scan drops.
                    Some(n) if n != rows.len() as u64 => Err(Error::corrupt(format!(
                        "its deletion vector holds {} rows, the log says {n}",
                        rows.len()
                    ))
                    .in_file(&location)),
                    _ => Ok(rows),
                }
            });
            match cardinality {
                Some(n) => deletes.counted(n),
                None => deletes,
            }
        });
        files.push(TableFile {
            file,
            partition,
            deleted,
        });
    }
    let mut typed: Vec<(String, ArrowType)> = (columns.iter())
        .map(|c| (c.field.name().clone(), c.field.data_type().clone()))
        .collect();
    typed.extend(partition_fields.iter().cloned());
    let pruner = DeltaPruner {
        engine,
        snapshot,
        replayed,
        columns: typed,
        files: paths,
        name: name.clone(),
    };
    Ok(TableSnapshot {
        pruner: Some(Arc::new(pruner)),
        name,
        location: location.to_string(),
        format: super::TableFormat::Delta,
        version,
        columns,
        partitions: partition_fields,
        order: logical.fields().map(|f| f.name().clone()).collect(),
        files,
    })
}

/// The table root as a URL with a trailing `/` and an engine whose object store reaches it:
/// the local file system, or tamis's own store for the bucket (its credentials and options).
fn engine_for(location: &str, options: &StorageOptions) -> Result<(Url, Arc<Engine>)> {
    let with_slash = |mut u: Url| {
        if !u.path().ends_with('/') {
            let p = format!("{}/", u.path());
            u.set_path(&p);
        }
        u
    };
    if location.contains("://") && !location.starts_with("file://") {
        let (store, _) = store_for(location, options)?;
        let url =
            Url::parse(location).map_err(|e| Error::invalid(format!("bad URL {location}: {e}")))?;
        let client = store.client()?;
        return Ok((with_slash(url), engine_of(client.inner.clone())));
    }
    let path = match location.strip_prefix("file://") {
        Some(_) => Url::parse(location)
            .ok()
            .and_then(|u| u.to_file_path().ok())
            .ok_or_else(|| Error::invalid(format!("bad file URL {location}")))?,
        None => std::path::absolute(location).map_err(Error::from)?,
    };
    let url = Url::from_directory_path(&path)
        .map_err(|_| Error::invalid(format!("{location} is not an absolute directory path")))?;
    static LOCAL: std::sync::OnceLock<Arc<dyn object_store::ObjectStore>> =
        std::sync::OnceLock::new();
    let local = LOCAL.get_or_init(|| Arc::new(object_store::local::LocalFileSystem::new()));
    Ok((url, engine_of(local.clone())))
}

/// The engine over `store`, built once per store and kept (each engine runs a Tokio thread
/// of its own: building one per table opened took a good part of the planning time). Stores
/// are themselves kept per bucket and options (`store_for`), so the same store is the same
/// `Arc`; an engine holds its store, so a kept engine's store address is never reused. Keyed
/// by process too: a forked child (a Spark Python worker) has none of its parent's threads.
fn engine_of(store: Arc<dyn object_store::ObjectStore>) -> Arc<Engine> {
    type Engines = Vec<((u32, usize), Arc<Engine>)>;
    static ENGINES: std::sync::Mutex<Engines> = std::sync::Mutex::new(Vec::new());
    const KEEP: usize = 16;
    let key = (
        std::process::id(),
        Arc::as_ptr(&store) as *const () as usize,
    );
    let mut engines = ENGINES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, engine)) = engines.iter().find(|(k, _)| *k == key) {
        return engine.clone();
    }
    let engine = Arc::new(DefaultEngine::builder(store).build());
    if engines.len() >= KEEP {
        engines.remove(0);
    }
    engines.push((key, engine.clone()));
    engine
}

/// The file a log entry names, as tamis opens it.
fn file_ref(url: &Url, size: i64, options: &StorageOptions) -> Result<FileRef> {
    if url.scheme() == "file" {
        let path = url
            .to_file_path()
            .map_err(|_| Error::corrupt(format!("the log names a file at {url}")))?;
        return Ok(FileRef::Local(path));
    }
    let (store, path) = store_for(url.as_str(), options)?;
    Ok(FileRef::Object {
        store,
        path,
        size: u64::try_from(size).ok(),
    })
}

/// A kernel error as tamis's: what the table uses that tamis (through the kernel) does not
/// support is `Unsupported`, storage failures are I/O errors, the rest is a table that does not
/// read as Delta.
fn kernel(e: KernelError) -> Error {
    use KernelError as K;
    // A backtrace, when the kernel captured one, is for its developers, not in a message.
    let mut e = e;
    while let K::Backtraced { source, .. } = e {
        e = *source;
    }
    let kind = match &e {
        K::Unsupported(_)
        | K::ChangeDataFeedUnsupported(_)
        | K::InvalidProtocol(_)
        | K::InvalidColumnMappingMode(_) => ErrorKind::Unsupported,
        K::IOError(_) | K::ObjectStore(_) | K::FileNotFound(_) | K::Reqwest(_) => ErrorKind::Io,
        K::MissingVersion(_) | K::InvalidTableLocation(_) | K::EmptyLog | K::LogHistory(_) => {
            ErrorKind::InvalidArgument
        }
        _ => ErrorKind::CorruptFile,
    };
    let message = e
        .to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    Error::new(kind, format!("reading the Delta log: {message}"))
}

/// Whether a nested field of `logical` has another name in `physical` (column mapping of a
/// struct's fields, which tamis does not map yet).
fn has_renamed_child(logical: &StructField, physical: &StructField) -> bool {
    fn differs(l: &DataType, p: &DataType) -> bool {
        match (l, p) {
            (DataType::Struct(l), DataType::Struct(p)) => structs_differ(l, p),
            (DataType::Array(l), DataType::Array(p)) => differs(&l.element_type, &p.element_type),
            (DataType::Map(l), DataType::Map(p)) => {
                differs(&l.key_type, &p.key_type) || differs(&l.value_type, &p.value_type)
            }
            _ => false,
        }
    }
    fn structs_differ(l: &StructType, p: &StructType) -> bool {
        l.fields().count() != p.fields().count()
            || (l.fields().zip(p.fields()))
                .any(|(l, p)| l.name() != p.name() || differs(l.data_type(), p.data_type()))
    }
    differs(logical.data_type(), physical.data_type())
}

/// A Delta column as the Arrow field tamis reads it into.
fn arrow_field(field: &StructField) -> Result<Field> {
    Ok(Field::new(
        field.name(),
        arrow_type(field.data_type(), field.name())?,
        field.is_nullable(),
    ))
}

fn arrow_type(t: &DataType, column: &str) -> Result<ArrowType> {
    use PrimitiveType as P;
    Ok(match t {
        DataType::Primitive(p) => match p {
            P::String => ArrowType::Utf8,
            P::Long => ArrowType::Int64,
            P::Integer => ArrowType::Int32,
            P::Short => ArrowType::Int16,
            P::Byte => ArrowType::Int8,
            P::Float => ArrowType::Float32,
            P::Double => ArrowType::Float64,
            P::Boolean => ArrowType::Boolean,
            P::Binary => ArrowType::Binary,
            P::Date => ArrowType::Date32,
            P::Timestamp => ArrowType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            P::TimestampNtz => ArrowType::Timestamp(TimeUnit::Microsecond, None),
            P::Decimal(d) => ArrowType::Decimal128(d.precision(), d.scale() as i8),
            other => {
                return Err(Error::unsupported(format!(
                    "column '{column}' has the Delta type {other:?}, which tamis does not read"
                )))
            }
        },
        DataType::Struct(s) => ArrowType::Struct(Fields::from(
            s.fields().map(arrow_field).collect::<Result<Vec<_>>>()?,
        )),
        DataType::Array(a) => ArrowType::List(Arc::new(Field::new(
            "element",
            arrow_type(&a.element_type, column)?,
            a.contains_null,
        ))),
        DataType::Map(m) => ArrowType::Map(
            Arc::new(Field::new(
                "key_value",
                ArrowType::Struct(Fields::from(vec![
                    Field::new("key", arrow_type(&m.key_type, column)?, false),
                    Field::new(
                        "value",
                        arrow_type(&m.value_type, column)?,
                        m.value_contains_null,
                    ),
                ])),
                false,
            )),
            false,
        ),
        other => {
            return Err(Error::unsupported(format!(
                "column '{column}' has the Delta type {other:?}, which tamis does not read"
            )))
        }
    })
}

/// Prunes a Delta table's files by the per-file statistics (and partition values) of its log:
/// a filter is translated into the kernel's predicate where it can be (see
/// [`super::translate`]) and the kernel's data skipping runs it over the log's rows of the
/// live files, kept from the snapshot's one replay (`Scan::scan_metadata_from`: no log file is
/// read again).
pub(crate) struct DeltaPruner {
    engine: Arc<Engine>,
    snapshot: delta_kernel::snapshot::SnapshotRef,
    /// The scan metadata of the live files (selection applied), at the snapshot's version.
    replayed: Vec<LogBatch>,
    /// Data and partition columns: their names and Arrow types, for literals.
    columns: Vec<(String, ArrowType)>,
    /// The index in [`TableSnapshot::files`] of each file, by its path in the log.
    files: std::collections::HashMap<String, usize>,
    name: String,
}

impl std::fmt::Debug for DeltaPruner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeltaPruner")
            .field("table", &self.name)
            .finish()
    }
}

impl super::FilePruner for DeltaPruner {
    fn files_for(&self, filter: &Expr) -> Result<Option<Vec<bool>>> {
        let Some(predicate) = super::translate(&KernelPredicates, filter, &self.columns) else {
            return Ok(None);
        };
        let scan = (self.snapshot.clone().scan_builder())
            .with_predicate(Arc::new(predicate))
            .build()
            .map_err(|e| kernel(e).in_file(&self.name))?;
        let mut paths: Vec<String> = Vec::new();
        let replayed: Vec<Box<dyn EngineData>> = (self.replayed.iter())
            .map(|b| Box::new(ArrowEngineData::new(b.clone())) as Box<dyn EngineData>)
            .collect();
        // The kept rows were replayed with no predicate: any predicate is narrower, as the
        // kernel requires of them.
        let metadata = scan
            .scan_metadata_from(&*self.engine, self.snapshot.version(), replayed, None)
            .map_err(|e| kernel(e).in_file(&self.name))?;
        for batch in metadata {
            let batch = batch.map_err(|e| kernel(e).in_file(&self.name))?;
            paths = batch
                .visit_scan_files(paths, |paths: &mut Vec<String>, f| paths.push(f.path))
                .map_err(|e| kernel(e).in_file(&self.name))?;
        }
        let mut keep = vec![false; self.files.len()];
        for p in paths {
            match self.files.get(&p) {
                Some(&i) => keep[i] = true,
                // A file the first replay did not list: the log changed; read every file.
                None => return Ok(None),
            }
        }
        Ok(Some(keep))
    }
}

/// Builds the kernel's predicates over the table's logical columns (see
/// [`super::translate`]), on integer, string, date and boolean columns.
struct KernelPredicates;

impl PredicateBuilder for KernelPredicates {
    type Predicate = KernelPredicate;
    type Column = delta_kernel::expressions::Expression;
    type Value = delta_kernel::expressions::Expression;

    fn column(&self, name: &str) -> Self::Column {
        Self::Column::column([name])
    }
    fn literal(&self, l: &Literal, t: &ArrowType) -> Option<Self::Value> {
        Some(Self::Value::literal(scalar(l, t)?))
    }
    fn compare(&self, c: Self::Column, op: CmpOp, v: Self::Value) -> KernelPredicate {
        match op {
            CmpOp::Eq => KernelPredicate::eq(c, v),
            CmpOp::NotEq => KernelPredicate::ne(c, v),
            CmpOp::Lt => KernelPredicate::lt(c, v),
            CmpOp::LtEq => KernelPredicate::le(c, v),
            CmpOp::Gt => KernelPredicate::gt(c, v),
            CmpOp::GtEq => KernelPredicate::ge(c, v),
        }
    }
    fn is_null(&self, c: Self::Column, negated: bool) -> KernelPredicate {
        match negated {
            false => KernelPredicate::is_null(c),
            true => KernelPredicate::is_not_null(c),
        }
    }
    fn and(&self, a: KernelPredicate, b: KernelPredicate) -> KernelPredicate {
        KernelPredicate::and(a, b)
    }
    fn or(&self, a: KernelPredicate, b: KernelPredicate) -> KernelPredicate {
        KernelPredicate::or(a, b)
    }
}

/// A literal as the kernel's scalar of a column's type; `None` when the column's type is not
/// one statistics are compared in here, or the literal is not exactly a value of it.
fn scalar(l: &Literal, t: &ArrowType) -> Option<delta_kernel::expressions::Scalar> {
    use delta_kernel::expressions::Scalar as S;
    Some(match (l, t) {
        (Literal::Number(n), ArrowType::Int64) => S::Long(n.parse().ok()?),
        (Literal::Number(n), ArrowType::Int32) => S::Integer(n.parse().ok()?),
        (Literal::Number(n), ArrowType::Int16) => S::Short(n.parse().ok()?),
        (Literal::Number(n), ArrowType::Int8) => S::Byte(n.parse().ok()?),
        (Literal::String(s), ArrowType::Utf8) => S::String(s.clone()),
        (Literal::Bool(b), ArrowType::Boolean) => S::Boolean(*b),
        (Literal::Date(d), ArrowType::Date32) => S::Date(super::epoch_days(d)?),
        (Literal::Timestamp(..), ArrowType::Timestamp(_, Some(_))) => {
            S::Timestamp(super::epoch_micros(l, t)?)
        }
        (Literal::Timestamp(..), ArrowType::Timestamp(_, None)) => {
            S::TimestampNtz(super::epoch_micros(l, t)?)
        }
        _ => return None,
    })
}
