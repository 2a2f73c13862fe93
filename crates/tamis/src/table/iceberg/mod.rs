//! Apache Iceberg tables, planned by `iceberg` (iceberg-rust): table metadata, snapshots,
//! manifest lists and manifests, pruning by partition values (every transform) and column
//! metrics, and which delete files apply to which data file.
//!
//! tamis takes from it each data file's path and the delete files that apply to it, and the
//! snapshot's schema with each column's field id; it reads every data file and every delete
//! file itself (positional deletes here, equality deletes in `equality`). What tamis does not
//! read yet is refused by name: format version 3 (deletion vectors in Puffin files, default
//! values, new types).

mod catalog;
mod equality;
mod storage;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType as ArrowType, Field, Fields, Int64Type, TimeUnit};
use futures::TryStreamExt;
use iceberg::expr::{Predicate, Reference};
use iceberg::io::{FileIO, FileIOBuilder};
use iceberg::spec::{
    DataContentType, DataFileFormat, Datum, FormatVersion, NameMapping, PrimitiveType, SchemaRef,
    TableMetadataRef, Type, DEFAULT_SCHEMA_NAME_MAPPING,
};
use iceberg::table::{StaticTable, Table};
use iceberg::TableIdent;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::{AsOf, Deletes, PredicateBuilder, TableColumn, TableFile, TableSnapshot};
use crate::error::{Error, ErrorKind, Result};
use crate::expr::{CmpOp, Expr, Literal};
use crate::io::location::{store_for, FileRef, StorageOptions};

/// The files of the Iceberg table whose metadata file is `location` (or whose root holds
/// `metadata/`: its newest metadata file; or that a catalog location names:
/// `iceberg+sqlite:///path/catalog.db?table=namespace.table[&catalog=name]`, or a REST
/// catalog's `iceberg+http(s)://host/path?table=namespace.table`: see `catalog`), at `at`.
pub fn snapshot(location: &str, at: AsOf, options: &StorageOptions) -> Result<TableSnapshot> {
    let name = format!(
        "Apache Iceberg table {}",
        catalog::redacted(location.trim_end_matches('/'))
    );
    let in_table = |e: Error| e.in_file(&name);
    let table = load(location, options).map_err(in_table)?;
    // The data files are read with the storage credentials the catalog vended, if any.
    let options = &storage::with_vended(options, table.file_io().config().props());
    let metadata = table.metadata_ref();
    if metadata.format_version() > FormatVersion::V2 {
        return Err(in_table(Error::unsupported(format!(
            "the table is in Iceberg format {}; tamis reads formats v1 and v2 (v3's deletion \
             vectors, default values and new types are not read yet)",
            metadata.format_version()
        ))));
    }
    let snapshot_id = snapshot_at(&metadata, at).map_err(in_table)?;
    let schema: SchemaRef = match snapshot_id {
        Some(id) => match metadata.snapshot_by_id(id) {
            Some(snapshot) => {
                (snapshot.schema(&metadata)).map_err(|e| iceberg_error(e).in_file(&name))?
            }
            // The snapshot log may name a snapshot expired since.
            None => {
                return Err(in_table(Error::invalid(format!(
                    "snapshot {id} (the one current at that time) has been expired"
                ))))
            }
        },
        None => metadata.current_schema().clone(),
    };
    let mapping = name_mapping(&metadata).map_err(in_table)?;
    let mut columns = Vec::new();
    for field in schema.as_struct().fields() {
        let t = arrow_type(&field.field_type, &field.name).map_err(in_table)?;
        columns.push(TableColumn {
            field: Field::new(&field.name, t, !field.required),
            physical: field.name.clone(),
            field_id: Some(field.id),
            file_names: (mapping.as_ref()).map(|m| m.get(&field.id).cloned().unwrap_or_default()),
        });
    }
    let order = (columns.iter()).map(|c| c.field.name().clone()).collect();
    // The columns whose filters the manifests may decide: not one whose type was promoted
    // (int → long, float → double, decimal precision), since older manifests hold its bounds
    // in the old type's bytes, which iceberg 0.10.1 reads as the new type's (a filter on a
    // widened `long` pruned every file written as `int`). tamis's own pruning by footers
    // reads each file's statistics in its own type.
    let typed: Vec<(String, ArrowType)> = (columns.iter())
        .filter(|c| {
            let Some(id) = c.field_id else { return false };
            let now = schema.field_by_id(id).map(|f| &f.field_type);
            (metadata.schemas_iter())
                .all(|s| s.field_by_id(id).is_none_or(|f| Some(&f.field_type) == now))
        })
        .map(|c| (c.field.name().clone(), c.field.data_type().clone()))
        .collect();

    let mut files = Vec::new();
    let mut paths = HashMap::new();
    if let Some(id) = snapshot_id {
        let tasks = plan(&table, id, None).map_err(|e| e.in_file(&name))?;
        let delete_files = Arc::new(DeleteFiles {
            table: table.clone(),
            read: Mutex::default(),
        });
        let equality_files = Arc::new(equality::EqualityDeletes::default());
        for task in tasks {
            if paths.contains_key(&task.data_file_path) {
                continue;
            }
            if task.data_file_format != DataFileFormat::Parquet {
                return Err(in_table(Error::unsupported(format!(
                    "the data file {} is {:?}; tamis reads Parquet data files only",
                    task.data_file_path, task.data_file_format
                ))));
            }
            let file = file_ref(&task.data_file_path, task.file_size_in_bytes, options)
                .map_err(in_table)?;
            let mut positional = Vec::new();
            let mut by_equality = Vec::new();
            for d in &task.deletes {
                match d.file_type {
                    DataContentType::PositionDeletes => positional.push(d.file_path.clone()),
                    DataContentType::EqualityDeletes => {
                        by_equality.push(equality::EqualityDeleteFile {
                            file: file_ref(&d.file_path, d.file_size_in_bytes, options)
                                .map_err(in_table)?,
                            keys: key_columns(
                                &metadata,
                                &schema,
                                &mapping,
                                d.equality_ids.as_deref(),
                            )
                            .map_err(|e| in_table(e.in_file(&d.file_path)))?,
                        })
                    }
                    DataContentType::Data => {}
                }
            }
            // Read when a scan reaches the file (never for a pruned one).
            let deleted = (!positional.is_empty() || !by_equality.is_empty()).then(|| {
                let (shared, data_file) = (delete_files.clone(), task.data_file_path.clone());
                let (equality_files, data_ref) = (equality_files.clone(), file.clone());
                Deletes::lazy(move || {
                    let mut rows = shared.rows_of(&data_file, &positional)?;
                    if !by_equality.is_empty() {
                        rows.extend(equality_files.rows_of(&data_ref, &by_equality)?);
                    }
                    Ok(rows)
                })
            });
            paths.insert(task.data_file_path.clone(), files.len());
            files.push(TableFile {
                file,
                partition: Vec::new(),
                deleted,
            });
        }
    }
    let pruner = snapshot_id.map(|id| {
        Arc::new(IcebergPruner {
            table,
            snapshot_id: id,
            columns: typed,
            files: paths,
            name: name.clone(),
        }) as Arc<dyn super::FilePruner>
    });
    Ok(TableSnapshot {
        version: snapshot_id.map_or(0, |id| id as u64),
        name,
        location: location.to_string(),
        format: super::TableFormat::Iceberg,
        columns,
        partitions: Vec::new(),
        order,
        files,
        pruner,
    })
}

/// The table's name mapping (`schema.name-mapping.default`), for data files written without
/// field ids (files added from another system): the names each top-level field id may have
/// in them.
fn name_mapping(metadata: &TableMetadataRef) -> Result<Option<HashMap<i32, Vec<String>>>> {
    let Some(text) = metadata.properties().get(DEFAULT_SCHEMA_NAME_MAPPING) else {
        return Ok(None);
    };
    let mapping: NameMapping = serde_json::from_str(text).map_err(|e| {
        Error::corrupt(format!(
            "its property {DEFAULT_SCHEMA_NAME_MAPPING} is not a name mapping: {e}"
        ))
    })?;
    let mut names: HashMap<i32, Vec<String>> = HashMap::new();
    for field in mapping.fields() {
        if let Some(id) = field.field_id() {
            names
                .entry(id)
                .or_default()
                .extend(field.names().iter().cloned());
        }
    }
    Ok(Some(names))
}

/// The key columns of an equality delete file from its field ids: their names and types in
/// the snapshot's schema (or, for a column dropped since, in the newest schema that has it).
fn key_columns(
    metadata: &TableMetadataRef,
    schema: &SchemaRef,
    mapping: &Option<HashMap<i32, Vec<String>>>,
    ids: Option<&[i32]>,
) -> Result<equality::KeyColumns> {
    let ids = match ids {
        Some(ids) if !ids.is_empty() => ids,
        _ => {
            return Err(Error::corrupt(
                "an equality delete file without equality field ids",
            ))
        }
    };
    let mut keys = equality::KeyColumns {
        ids: ids.to_vec(),
        names: Vec::with_capacity(ids.len()),
        types: Vec::with_capacity(ids.len()),
        file_names: Vec::with_capacity(ids.len()),
    };
    for &id in ids {
        // Top-level columns only: the key columns are read from the files' top level.
        let top = |s: &iceberg::spec::Schema| s.as_struct().field_by_id(id).cloned();
        let field = top(schema)
            .or_else(|| {
                let mut older: Vec<_> = metadata.schemas_iter().collect();
                older.sort_by_key(|s| std::cmp::Reverse(s.schema_id()));
                older.into_iter().find_map(|s| top(s))
            })
            .ok_or_else(|| match schema.field_by_id(id) {
                Some(nested) => Error::unsupported(format!(
                    "equality deletes keyed by the nested field '{}'; tamis applies them on \
                     top-level columns only",
                    nested.name
                )),
                None => Error::corrupt(format!(
                    "equality deletes keyed by field id {id}, which no schema of the table has"
                )),
            })?;
        if !field.field_type.is_primitive() {
            return Err(Error::unsupported(format!(
                "equality deletes keyed by column '{}', which is not a primitive column",
                field.name
            )));
        }
        keys.types.push(arrow_type(&field.field_type, &field.name)?);
        keys.file_names.push(match mapping {
            Some(m) => m.get(&id).cloned().unwrap_or_default(),
            None => vec![field.name.clone()],
        });
        keys.names.push(field.name.clone());
    }
    Ok(keys)
}

/// The table a location names: through its catalog, or from its metadata file (the one named,
/// or the newest below a root).
fn load(location: &str, options: &StorageOptions) -> Result<Table> {
    let metadata_file = match catalog::catalog_of(location) {
        Some(catalog::Catalog::Rest) => return catalog::rest_table(location, options),
        Some(catalog::Catalog::Sqlite) => catalog::metadata_location(location)?,
        None => metadata_file(location, options)?,
    };
    let file_io = file_io(&metadata_file, options);
    let table = on_io_runtime(async {
        let ident = TableIdent::from_strs(["tamis", "table"])?;
        StaticTable::from_metadata_file(&metadata_file, ident, file_io).await
    });
    Ok(table.map_err(iceberg_error)?.into_table())
}

/// The metadata file a location names: itself when it is one (`*.metadata.json`), else the
/// newest in the `metadata/` directory below it: the version `version-hint.text` names
/// (tables written without a catalog), or the highest numbered `*.metadata.json`.
fn metadata_file(location: &str, options: &StorageOptions) -> Result<String> {
    let trimmed = location.trim_end_matches('/');
    if trimmed.ends_with(".metadata.json") {
        return Ok(trimmed.to_string());
    }
    let dir = format!("{trimmed}/metadata");
    let (names, hint) = if trimmed.contains("://") && !trimmed.starts_with("file://") {
        listed_object(&dir, options)?
    } else {
        listed_local(dir.strip_prefix("file://").unwrap_or(&dir))?
    };
    if let Some(hint) = hint {
        let file = format!("v{}.metadata.json", hint.trim());
        if names.contains(&file) {
            return Ok(format!("{dir}/{file}"));
        }
    }
    let mut newest: Option<(u64, &str)> = None;
    let mut tie = false;
    for file in &names {
        let Some(stem) = file.strip_suffix(".metadata.json") else {
            continue;
        };
        // `00003-<uuid>` (catalogs) or `v3` (tables without one).
        let digits: String = (stem.trim_start_matches('v').chars())
            .take_while(char::is_ascii_digit)
            .collect();
        let Ok(n) = digits.parse::<u64>() else {
            continue;
        };
        match newest {
            Some((m, _)) if m > n => {}
            Some((m, _)) if m == n => tie = true,
            _ => {
                tie = false;
                newest = Some((n, file));
            }
        }
    }
    match newest {
        Some(_) if tie => Err(Error::invalid(format!(
            "{dir} holds two metadata files of the newest version; name the one to read"
        ))),
        Some((_, file)) => Ok(format!("{dir}/{file}")),
        None => Err(Error::invalid(format!("no *.metadata.json in {dir}"))),
    }
}

/// The file names in a local metadata directory, and `version-hint.text`'s content.
fn listed_local(dir: &str) -> Result<(Vec<String>, Option<String>)> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::from(e).in_file(dir))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::from(e).in_file(dir))?;
        if let Some(name) = entry.file_name().to_str() {
            names.push(name.to_string());
        }
    }
    let hint = std::fs::read_to_string(format!("{dir}/version-hint.text")).ok();
    Ok((names, hint))
}

/// [`listed_local`] for a metadata prefix in an object store.
fn listed_object(dir: &str, options: &StorageOptions) -> Result<(Vec<String>, Option<String>)> {
    let (store, prefix) = store_for(dir, options)?;
    let client = store.client()?;
    let listed: std::result::Result<Vec<object_store::ObjectMeta>, _> =
        on_io_runtime(client.inner.list(Some(&prefix)).try_collect());
    let listed = listed.map_err(|e| Error::new(ErrorKind::Io, e.to_string()).in_file(dir))?;
    // Only the objects directly below the prefix.
    let names: Vec<String> = (listed.iter())
        .filter_map(|m| {
            let key = m.location.as_ref().strip_prefix(prefix.as_ref())?;
            let name = key.trim_start_matches('/');
            (!name.is_empty() && !name.contains('/')).then(|| name.to_string())
        })
        .collect();
    let hint = match names.iter().any(|n| n == "version-hint.text") {
        true => {
            let key = prefix.clone().join("version-hint.text");
            let got = on_io_runtime(async {
                object_store::ObjectStoreExt::get(&client.inner, &key)
                    .await?
                    .bytes()
                    .await
            });
            let bytes = got.map_err(|e| Error::new(ErrorKind::Io, e.to_string()).in_file(dir))?;
            Some(String::from_utf8_lossy(&bytes).into_owned())
        }
        false => None,
    };
    Ok((names, hint))
}

/// The snapshot to read: `None` for a table without one (no rows).
fn snapshot_at(metadata: &TableMetadataRef, at: AsOf) -> Result<Option<i64>> {
    match at {
        AsOf::Latest => Ok(metadata.current_snapshot().map(|s| s.snapshot_id())),
        AsOf::Version(id) => {
            let found = i64::try_from(id)
                .ok()
                .filter(|&id| metadata.snapshot_by_id(id).is_some());
            match found {
                Some(id) => Ok(Some(id)),
                None => Err(Error::invalid(format!("the table has no snapshot {id}"))),
            }
        }
        // The snapshot log says which snapshot was current when (a rollback makes an older
        // one current again, so it is not the newest snapshot by its own time).
        AsOf::Timestamp(ms) => (metadata.history().iter())
            .filter(|log| log.timestamp_ms <= ms)
            .max_by_key(|log| log.timestamp_ms)
            .map(|log| Some(log.snapshot_id))
            .ok_or_else(|| {
                Error::invalid(format!(
                    "the table has no snapshot at or before {ms} ms since the epoch"
                ))
            }),
    }
}

/// The scan tasks of a snapshot (one per data file, with the delete files that apply to it),
/// of the files that may hold rows for `filter`.
fn plan(
    table: &Table,
    snapshot_id: i64,
    filter: Option<Predicate>,
) -> Result<Vec<iceberg::scan::FileScanTask>> {
    let mut builder = table.scan().snapshot_id(snapshot_id).select_empty();
    if let Some(filter) = filter {
        builder = builder.with_filter(filter);
    }
    let scan = builder.build().map_err(iceberg_error)?;
    on_io_runtime(async { scan.plan_files().await?.try_collect().await }).map_err(iceberg_error)
}

/// The positional delete files of a snapshot, each read once, when the first data file it
/// applies to is scanned; one delete file may apply to many data files.
struct DeleteFiles {
    table: Table,
    /// Per delete file read or being read: its rows by data file.
    read: Mutex<HashMap<String, Arc<Mutex<Option<DeletedRows>>>>>,
}

/// A positional delete file's rows, by the data file they delete from.
type DeletedRows = Arc<HashMap<String, Vec<u64>>>;

impl DeleteFiles {
    /// The rows of `data_file` that the delete files at `paths` delete.
    fn rows_of(&self, data_file: &str, paths: &[String]) -> Result<Vec<u64>> {
        let mut rows = Vec::new();
        for path in paths {
            let slot = (self.read.lock().unwrap_or_else(|e| e.into_inner()))
                .entry(path.clone())
                .or_default()
                .clone();
            // Held while reading: a second data file of the same delete file waits for it.
            let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
            let by_file = match &*slot {
                Some(by_file) => by_file.clone(),
                None => slot
                    .insert(Arc::new(positional_deletes(&self.table, path)?))
                    .clone(),
            };
            rows.extend(by_file.get(data_file).into_iter().flatten());
        }
        Ok(rows)
    }
}

/// A positional delete file's deleted rows, by the data file they are in.
fn positional_deletes(table: &Table, path: &str) -> Result<HashMap<String, Vec<u64>>> {
    let in_file = |e: Error| e.in_file(path);
    let bytes = on_io_runtime(async { table.file_io().new_input(path)?.read().await })
        .map_err(|e| iceberg_error(e).in_file(path))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .map_err(|e| in_file(Error::corrupt(format!("a positional delete file: {e}"))))?
        .build()
        .map_err(|e| in_file(Error::corrupt(format!("a positional delete file: {e}"))))?;
    let mut rows: HashMap<String, Vec<u64>> = HashMap::new();
    for batch in reader {
        let batch =
            batch.map_err(|e| in_file(Error::corrupt(format!("a positional delete file: {e}"))))?;
        let column = |name: &str| {
            batch.column_by_name(name).ok_or_else(|| {
                in_file(Error::corrupt(format!(
                    "a positional delete file without a '{name}' column"
                )))
            })
        };
        let files = arrow::compute::cast(column("file_path")?, &ArrowType::Utf8)
            .map_err(|e| in_file(Error::corrupt(format!("its file_path column: {e}"))))?;
        let files = files.as_string::<i32>();
        let positions = column("pos")?;
        let Some(positions) = positions.as_primitive_opt::<Int64Type>() else {
            return Err(in_file(Error::corrupt(format!(
                "its pos column is {}, not long",
                positions.data_type()
            ))));
        };
        if files.null_count() > 0 || positions.null_count() > 0 {
            return Err(in_file(Error::corrupt(
                "a positional delete file with a NULL file_path or pos",
            )));
        }
        // Delete files are sorted by file_path (the spec asks writers to): each run of one
        // path is looked up once.
        let mut at = 0;
        while at < files.len() {
            let file = files.value(at);
            let run = (at..files.len())
                .find(|&i| files.value(i) != file)
                .unwrap_or(files.len());
            let into = rows.entry(file.to_string()).or_default();
            for &pos in &positions.values()[at..run] {
                into.push(
                    u64::try_from(pos).map_err(|_| {
                        in_file(Error::corrupt(format!("a negative position {pos}")))
                    })?,
                );
            }
            at = run;
        }
    }
    Ok(rows)
}

/// Runs `f` on tamis's I/O runtime, from a thread of its own so that a caller already on a
/// runtime (DataFusion) does not block one of its workers inside another.
fn on_io_runtime<T: Send>(f: impl std::future::Future<Output = T> + Send) -> T {
    std::thread::scope(|s| {
        let planning = s.spawn(|| crate::io::object::runtime().block_on(f));
        planning
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// The file I/O that reads the table's metadata, manifests and delete files: the local file
/// system, or tamis's own store for the bucket (its credentials and options).
fn file_io(metadata_file: &str, options: &StorageOptions) -> FileIO {
    if metadata_file.contains("://") && !metadata_file.starts_with("file://") {
        let factory = storage::ObjectStorageFactory {
            options: options.0.clone(),
        };
        return FileIOBuilder::new(Arc::new(factory)).build();
    }
    FileIO::new_with_fs()
}

/// The data file a manifest names, as tamis opens it.
fn file_ref(path: &str, size: u64, options: &StorageOptions) -> Result<FileRef> {
    if let Some(local) = path.strip_prefix("file://") {
        let url = url::Url::parse(path)
            .ok()
            .and_then(|u| u.to_file_path().ok());
        return Ok(FileRef::Local(url.unwrap_or_else(|| local.into())));
    }
    if !path.contains("://") {
        return Ok(FileRef::Local(path.into()));
    }
    let (store, object) = store_for(path, options)?;
    Ok(FileRef::Object {
        store,
        path: object,
        size: Some(size),
    })
}

/// An iceberg error as tamis's.
fn iceberg_error(e: iceberg::Error) -> Error {
    use iceberg::ErrorKind as K;
    let kind = match e.kind() {
        K::FeatureUnsupported => ErrorKind::Unsupported,
        K::DataInvalid => ErrorKind::CorruptFile,
        _ => ErrorKind::Io,
    };
    let message = (e.to_string().split_whitespace())
        .collect::<Vec<_>>()
        .join(" ");
    Error::new(kind, format!("reading the Iceberg metadata: {message}"))
}

/// An Iceberg type as the Arrow type tamis reads it into.
fn arrow_type(t: &Type, column: &str) -> Result<ArrowType> {
    use PrimitiveType as P;
    let field = |f: &iceberg::spec::NestedField| -> Result<Field> {
        Ok(Field::new(
            &f.name,
            arrow_type(&f.field_type, column)?,
            !f.required,
        ))
    };
    Ok(match t {
        Type::Primitive(p) => match p {
            P::Boolean => ArrowType::Boolean,
            P::Int => ArrowType::Int32,
            P::Long => ArrowType::Int64,
            P::Float => ArrowType::Float32,
            P::Double => ArrowType::Float64,
            P::Decimal { precision, scale } => ArrowType::Decimal128(
                u8::try_from(*precision).map_err(|_| {
                    Error::unsupported(format!("column '{column}': decimal({precision})"))
                })?,
                i8::try_from(*scale).map_err(|_| {
                    Error::unsupported(format!("column '{column}': decimal scale {scale}"))
                })?,
            ),
            P::Date => ArrowType::Date32,
            P::Time => ArrowType::Time64(TimeUnit::Microsecond),
            P::Timestamp => ArrowType::Timestamp(TimeUnit::Microsecond, None),
            P::Timestamptz => ArrowType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            P::TimestampNs => ArrowType::Timestamp(TimeUnit::Nanosecond, None),
            P::TimestamptzNs => ArrowType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            P::String => ArrowType::Utf8,
            P::Uuid => ArrowType::FixedSizeBinary(16),
            P::Fixed(n) => ArrowType::FixedSizeBinary(
                i32::try_from(*n)
                    .map_err(|_| Error::unsupported(format!("column '{column}': fixed({n})")))?,
            ),
            P::Binary => ArrowType::Binary,
        },
        Type::Struct(s) => ArrowType::Struct(Fields::from(
            s.fields()
                .iter()
                .map(|f| field(f))
                .collect::<Result<Vec<_>>>()?,
        )),
        Type::List(l) => ArrowType::List(Arc::new(field(&l.element_field)?)),
        Type::Map(m) => ArrowType::Map(
            Arc::new(Field::new(
                "key_value",
                ArrowType::Struct(Fields::from(vec![
                    field(&m.key_field)?,
                    field(&m.value_field)?,
                ])),
                false,
            )),
            false,
        ),
    })
}

/// Prunes an Iceberg table's files by its manifests: partition values (every transform) and
/// per-file column metrics, through iceberg's own planning with the filter translated (see
/// [`IcebergPredicates`]).
pub(crate) struct IcebergPruner {
    table: Table,
    snapshot_id: i64,
    /// The snapshot's columns: their names and Arrow types, for literals.
    columns: Vec<(String, ArrowType)>,
    /// The index in [`TableSnapshot::files`] of each file, by its path in the manifests.
    files: HashMap<String, usize>,
    name: String,
}

impl std::fmt::Debug for IcebergPruner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IcebergPruner")
            .field("table", &self.name)
            .finish()
    }
}

impl super::FilePruner for IcebergPruner {
    fn files_for(&self, filter: &Expr) -> Result<Option<Vec<bool>>> {
        let Some(predicate) = super::translate(&IcebergPredicates, filter, &self.columns) else {
            return Ok(None);
        };
        let tasks = plan(&self.table, self.snapshot_id, Some(predicate))
            .map_err(|e| e.in_file(&self.name))?;
        let mut keep = vec![false; self.files.len()];
        for task in tasks {
            match self.files.get(&task.data_file_path) {
                Some(&i) => keep[i] = true,
                None => return Ok(None),
            }
        }
        Ok(Some(keep))
    }
}

/// Builds iceberg's predicates over the snapshot's columns (see [`super::translate`]), on
/// integer, string, date and boolean columns.
struct IcebergPredicates;

impl PredicateBuilder for IcebergPredicates {
    type Predicate = Predicate;
    type Column = Reference;
    type Value = Datum;

    fn column(&self, name: &str) -> Reference {
        Reference::new(name)
    }
    fn literal(&self, l: &Literal, t: &ArrowType) -> Option<Datum> {
        Some(match (l, t) {
            (Literal::Number(n), ArrowType::Int64) => Datum::long(n.parse::<i64>().ok()?),
            (Literal::Number(n), ArrowType::Int32) => Datum::int(n.parse::<i32>().ok()?),
            (Literal::String(s), ArrowType::Utf8) => Datum::string(s),
            (Literal::Bool(b), ArrowType::Boolean) => Datum::bool(*b),
            (Literal::Date(d), ArrowType::Date32) => Datum::date(super::epoch_days(d)?),
            (Literal::Timestamp(..), ArrowType::Timestamp(_, Some(_))) => {
                Datum::timestamptz_micros(super::epoch_micros(l, t)?)
            }
            (Literal::Timestamp(..), ArrowType::Timestamp(_, None)) => {
                Datum::timestamp_micros(super::epoch_micros(l, t)?)
            }
            _ => return None,
        })
    }
    fn compare(&self, c: Reference, op: CmpOp, v: Datum) -> Predicate {
        match op {
            CmpOp::Eq => c.equal_to(v),
            CmpOp::NotEq => c.not_equal_to(v),
            CmpOp::Lt => c.less_than(v),
            CmpOp::LtEq => c.less_than_or_equal_to(v),
            CmpOp::Gt => c.greater_than(v),
            CmpOp::GtEq => c.greater_than_or_equal_to(v),
        }
    }
    fn is_null(&self, c: Reference, negated: bool) -> Predicate {
        match negated {
            false => c.is_null(),
            true => c.is_not_null(),
        }
    }
    fn and(&self, a: Predicate, b: Predicate) -> Predicate {
        a.and(b)
    }
    fn or(&self, a: Predicate, b: Predicate) -> Predicate {
        a.or(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_metadata_file_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_str().unwrap().to_string();
        let metadata = dir.path().join("metadata");
        std::fs::create_dir_all(&metadata).unwrap();
        let none = StorageOptions::default();
        assert!(metadata_file(&root, &none).is_err(), "no metadata file");
        for name in [
            "00001-a.metadata.json",
            "00010-b.metadata.json",
            "00002-c.metadata.json",
        ] {
            std::fs::write(metadata.join(name), b"{}").unwrap();
        }
        std::fs::write(metadata.join("snap-1.avro"), b"").unwrap();
        let newest = metadata_file(&root, &none).unwrap();
        assert!(newest.ends_with("00010-b.metadata.json"), "{newest}");
        // Named outright: that one, whichever it is.
        let named = metadata.join("00001-a.metadata.json");
        let got = metadata_file(named.to_str().unwrap(), &none).unwrap();
        assert_eq!(got, named.to_str().unwrap());
        // Two of the newest number: the caller names one.
        std::fs::write(metadata.join("00010-d.metadata.json"), b"{}").unwrap();
        assert!(metadata_file(&root, &none).is_err());
        // A table written without a catalog: version-hint.text names the version.
        std::fs::write(metadata.join("v3.metadata.json"), b"{}").unwrap();
        std::fs::write(metadata.join("version-hint.text"), b"3\n").unwrap();
        assert!(metadata_file(&format!("file://{root}/"), &none)
            .unwrap()
            .ends_with("v3.metadata.json"));
    }
}
