//! The files of a scan: listed, their footers read once for the dataset schema, then per file the
//! predicate and the projection bound to that file's own columns.
//!
//! ```text
//! DatasetPlan::open     listing → footers (at most KEEP_OPEN files kept open) → unified schema
//!                       + hive partitions → dataset leaves (what `filter` and `select` see)
//! DatasetPlan::bind     per file: partition values ⇒ skip; predicate bound to the file's leaves,
//!                       its missing columns (NULL) and partition values folded away; row groups
//!                       pruned by footer statistics; how its batches are assembled
//! ```
//!
//! A scan over a hive-partitioned listing calls `open` only for the files its filter's partition
//! conjuncts leave (see `Scan::filter`): files ruled out by their paths are never opened, and the
//! schema is that of the files left. `open` reads those footers in waves of concurrent opens and
//! keeps the decoded metadata but not the files: only the first [`KEEP_OPEN`] stay open (for
//! their row groups); the others are reopened from their decoded footers when the scan reaches
//! them (no footer read again: an object store is not asked at all, a local file is `stat`ed;
//! both checked against the identity the first open saw), so a dataset of any size holds a
//! bounded number of file handles and footer tails.
//! Files pruned by partition values or statistics are never opened again.

use std::ops::Range;
use std::sync::Arc;

use arrow::array::{new_null_array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowSchemaConverter;
use parquet::basic::{Encoding, PageType};
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData};

use super::cache::OpenFiles;
use super::partition::{
    constant_array, discover_partitions, partition_leaves, partition_verdict, table_partitions,
    PartitionSchema, PartitionValue, Partitions,
};
use super::schema::{
    conform, dictionary_of, short_decimal_of, unify, view_of, with_dictionaries, with_views,
    UnifiedSchema,
};
use crate::column::arrays::is_widened;
use crate::error::{Error, Result};
use crate::expr::{bind, Expr, Predicate};
use crate::file::OpenedFile;
use crate::io::location::{FileRef, Listing};
use crate::io::Identity;
use crate::metrics::{add, MetricsCollector};
use crate::prune::statistics::{statistics_verdicts, LeafVerdicts};
use crate::schema::{leaf_columns, LeafColumn};
use crate::table::TableSnapshot;

/// Files kept open after reading their footers at [`DatasetPlan::open`] (the first ones, which
/// the scan reaches first). The others are reopened when scanned.
pub const KEEP_OPEN: usize = 64;

/// Files opened concurrently while reading footers.
const OPEN_AT_ONCE: usize = 16;

/// One file, as its footer describes it.
#[derive(Clone)]
pub struct DatasetFile {
    pub file: FileRef,
    pub location: String,
    pub len: u64,
    /// What the footer read saw (size, ETag or mtime): reopening checks it.
    pub identity: Identity,
    pub metadata: Arc<ParquetMetaData>,
    pub leaves: Vec<LeafColumn>,
    pub schema: SchemaRef,
    /// Path below the listing's root (empty for a single file), for hive partitions.
    relative: String,
    /// One value per partition column.
    pub partition: Vec<PartitionValue>,
    /// Still open from reading the footer (first [`KEEP_OPEN`] files only).
    pub opened: Option<Arc<OpenedFile>>,
    /// Rows a table's metadata deleted (read when a scan reaches the file): never read.
    pub deleted: Option<crate::table::Deletes>,
}

impl DatasetFile {
    /// For a plan kept between scans (a [`super::Dataset`]): fails when the local file is not
    /// the one whose footer the plan holds (another size, mtime, inode or ctime). Its
    /// statistics would prune, and its kept dictionaries and Bloom filters decode, another
    /// file's pages; a `stat` per file and scan keeps that from ever happening. Objects are
    /// checked by every read (`If-Match` with the ETag the plan saw).
    pub fn check_unchanged(&self) -> Result<()> {
        let FileRef::Local(path) = &self.file else {
            return Ok(());
        };
        let now = crate::io::local::current_identity(path)?;
        if now != self.identity {
            return Err(Error::invalid(
                "the file changed since the dataset was opened (size, modification time or \
                 inode differ); open the dataset again to read the new version",
            )
            .in_file(&self.location));
        }
        Ok(())
    }
}

/// A dataset: its files, schema and the leaves predicates bind to.
#[derive(Clone)]
pub struct DatasetPlan {
    /// The files, in listing order, each with its footer.
    pub files: Vec<DatasetFile>,
    /// The files' columns unified into one schema, and where each column is in each file.
    pub unified: UnifiedSchema,
    /// The hive partition columns (`key=value` directories); empty when there are none.
    pub partitions: PartitionSchema,
    /// The unified file columns, then the partition columns.
    pub schema: SchemaRef,
    /// Leaves of the unified columns (from the first file having each, renumbered; `root` is
    /// the dataset column), then one per partition column. `filter` binds to these.
    pub leaves: Vec<LeafColumn>,
    /// Index in `leaves` of the first partition leaf.
    pub first_partition_leaf: usize,
    /// Footer reads at open: bytes, requests, nanoseconds.
    pub open_cost: (u64, u64, u64),
    /// The open files of a [`super::Dataset`], shared by its scans (they reopen and put back
    /// files it closed); `None` for a one-off scan.
    pub open_files: Option<Arc<OpenFiles>>,
    /// A table's columns in its own order (partition columns among the others), which a scan
    /// outputs unless told otherwise; `None`: [`DatasetPlan::schema`]'s order.
    pub order: Option<Vec<String>>,
}

impl DatasetPlan {
    /// Reads every footer of `listing` and unifies the schemas; hive partitions are discovered
    /// (types inferred) when the listing has a root and the paths hold `key=value` directories.
    pub fn open(listing: &Listing) -> Result<DatasetPlan> {
        Self::open_keeping(listing, KEEP_OPEN)
    }

    /// [`DatasetPlan::open`], keeping the first `keep_open` files open.
    pub fn open_keeping(listing: &Listing, keep_open: usize) -> Result<DatasetPlan> {
        Self::open_typed(listing, keep_open, &[])
    }

    /// The dataset's columns file `fi` holds, by their dataset names (a table's names, not
    /// the file's physical ones), in the dataset's order; partition columns not included.
    pub fn file_columns(&self, fi: usize) -> Vec<String> {
        let has = self.unified.columns.get(fi);
        (self.unified.schema.fields().iter().enumerate())
            .filter(|(o, _)| has.and_then(|c| c.get(*o)).is_some_and(|i| i.is_some()))
            .map(|(_, f)| f.name().clone())
            .collect()
    }

    /// The top-level columns stored as INT96 in any file (Spark's timestamps), sorted.
    pub fn int96_columns(&self) -> Vec<String> {
        let mut names: Vec<String> = (self.files.iter())
            .flat_map(|f| {
                (f.leaves.iter())
                    .filter(|l| l.physical == parquet::basic::Type::INT96)
                    .map(|l| f.schema.field(l.root).name().clone())
            })
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// [`DatasetPlan::schema`] with its dictionary-encoded string and binary file columns as
    /// views (`with_views`; see [`crate::Scan::string_views`]).
    pub fn schema_with_views(&self) -> SchemaRef {
        Arc::new(with_views(&self.schema, &self.dictionary_columns()))
    }

    /// [`DatasetPlan::schema`] with its dictionary-encoded string and binary file columns as
    /// Arrow dictionaries (`with_dictionaries`; see [`crate::Scan::string_dictionaries`]).
    pub fn schema_with_dictionaries(&self) -> SchemaRef {
        Arc::new(with_dictionaries(&self.schema, &self.dictionary_columns()))
    }

    /// For each column of [`DatasetPlan::schema`], whether it is a file column whose every
    /// data page is dictionary-encoded.
    fn dictionary_columns(&self) -> Vec<bool> {
        let file_columns = self.unified.schema.fields().len();
        (self.schema.fields().iter().enumerate())
            .map(|(i, f)| i < file_columns && self.dictionary_encoded(f.name()))
            .collect()
    }

    /// Whether every data page of top-level column `name` is dictionary-encoded, in every row
    /// group of every file that has it (as the footers' page encoding statistics say; without
    /// them, a chunk with a dictionary page and no PLAIN encoding listed).
    fn dictionary_encoded(&self, name: &str) -> bool {
        self.files.iter().all(|f| {
            let Ok(root) = f.schema.index_of(name) else {
                return true;
            };
            let mut leaves = f.leaves.iter().filter(|l| l.root == root);
            let (Some(leaf), None) = (leaves.next(), leaves.next()) else {
                return false;
            };
            (f.metadata.row_groups().iter()).all(|rg| all_dictionary(rg.column(leaf.index)))
        })
    }

    /// [`DatasetPlan::open_keeping`] with the types of some partition keys given (the others
    /// inferred).
    pub fn open_typed(
        listing: &Listing,
        keep_open: usize,
        partition_types: &[(String, DataType)],
    ) -> Result<DatasetPlan> {
        let (files, cost) = open_footers(listing, keep_open)?;
        let schemas: Vec<(String, arrow::datatypes::Schema)> = files
            .iter()
            .map(|f| (f.location.clone(), f.schema.as_ref().clone()))
            .collect();
        let unified = unify(&schemas)?;
        let mut plan = Self::unpartitioned(files, unified, cost, None);
        plan.partition_types(partition_types)?;
        Ok(plan)
    }

    /// Opened files and their unified schema, before the partitions are set (which builds the
    /// dataset schema and leaves).
    fn unpartitioned(
        files: Vec<DatasetFile>,
        unified: UnifiedSchema,
        open_cost: (u64, u64, u64),
        order: Option<Vec<String>>,
    ) -> DatasetPlan {
        DatasetPlan {
            files,
            unified,
            partitions: PartitionSchema::default(),
            schema: Arc::new(arrow::datatypes::Schema::empty()),
            leaves: Vec::new(),
            first_partition_leaf: 0,
            open_cost,
            open_files: None,
            order,
        }
    }

    /// Opens the files of a table's snapshot (those at `chosen`, in order): the table's schema
    /// is the dataset's, each file's columns are found by field id or physical name and renamed
    /// to the table's names, partition values and deleted rows come from the table.
    pub fn open_table(
        table: &TableSnapshot,
        chosen: &[usize],
        keep_open: usize,
    ) -> Result<DatasetPlan> {
        let listing = Listing {
            files: chosen
                .iter()
                .map(|&i| table.files[i].file.clone())
                .collect(),
            root: None,
        };
        let (mut files, cost) = open_footers(&listing, keep_open)?;
        let schema = Arc::new(arrow::datatypes::Schema::new(
            (table.columns.iter())
                .map(|c| c.field.clone())
                .collect::<Vec<_>>(),
        ));
        let mut columns = Vec::with_capacity(files.len());
        for (f, &i) in files.iter_mut().zip(chosen) {
            columns.push(map_table_columns(table, f).map_err(|e| e.in_file(&f.location))?);
            f.deleted = table.files[i].deleted.clone();
        }
        let partitions = table_partitions(table)?;
        let values = chosen
            .iter()
            .map(|&i| partitions.values[i].clone())
            .collect();
        let unified = UnifiedSchema { schema, columns };
        let mut plan = Self::unpartitioned(files, unified, cost, Some(table.order.clone()));
        plan.set_partitions(Partitions {
            schema: partitions.schema,
            values,
        })?;
        Ok(plan)
    }

    /// (Re)discovers the partitions with the given types for some keys (the others inferred)
    /// and rebuilds the dataset schema and leaves.
    pub fn partition_types(&mut self, explicit: &[(String, DataType)]) -> Result<()> {
        let relative: Vec<&str> = self.files.iter().map(|f| f.relative.as_str()).collect();
        let partitions = discover_partitions(&relative, explicit)?;
        self.set_partitions(partitions)
    }

    /// Takes these partitions (schema and one value per file and column) and rebuilds the
    /// dataset schema and leaves.
    fn set_partitions(&mut self, partitions: Partitions) -> Result<()> {
        let schema = self.unified.with_partitions(&partitions.schema)?;
        let mut leaves = Vec::new();
        for (o, field) in self.unified.schema.fields().iter().enumerate() {
            let mut having = (self.unified.columns.iter().enumerate())
                .filter_map(|(f, cols)| cols[o].map(|i| (f, i)));
            // A widened column binds to a file's leaves of the dataset's type, so that a
            // literal only the wider type holds is not folded away; when no file has that type
            // (`int32` with `uint32` → `int64`), or no file has the column (a table's column
            // added after the files read were written), to the leaf the type is written as.
            let own = |(f, i): (usize, usize)| {
                same_leaf(self.files[f].schema.field(i).data_type(), field.data_type())
            };
            let source = having.find(|&fi| own(fi));
            let column: Vec<LeafColumn> = match source {
                Some((f, i)) => (self.files[f].leaves.iter())
                    .filter(|l| l.root == i)
                    .cloned()
                    .collect(),
                None => written_as(field)?,
            };
            for mut l in column {
                l.index = leaves.len();
                l.root = o;
                leaves.push(l);
            }
        }
        let first = leaves.len();
        leaves.extend(partition_leaves(
            &partitions.schema,
            first,
            self.unified.schema.fields().len(),
        )?);
        for (f, values) in self.files.iter_mut().zip(partitions.values) {
            f.partition = values;
        }
        self.partitions = partitions.schema;
        self.schema = schema;
        self.leaves = leaves;
        self.first_partition_leaf = first;
        Ok(())
    }

    /// Plans the scan: which files and row groups to read and how. `predicate` is the dataset
    /// predicate (bound to [`DatasetPlan::leaves`]) and its tree; `only` restricts the scan to
    /// some row groups of some files (by location); `projection` indexes
    /// [`DatasetPlan::schema`]. Counts files, files pruned by partition and row groups pruned by
    /// statistics here, before any file is reopened.
    pub fn bind(
        self,
        predicate: Option<(&Predicate, &Expr)>,
        only: Option<&[ScanPart]>,
        projection: &[usize],
        statistics: bool,
        metrics: &MetricsCollector,
    ) -> Result<Vec<ScanFile>> {
        let start = std::time::Instant::now();
        let mut out = Vec::new();
        // Consecutive files usually share a schema: bind the tree again only when it changes.
        let mut last: Option<(usize, Predicate)> = None;
        for fi in 0..self.files.len() {
            let f = &self.files[fi];
            if self.open_files.is_some() {
                f.check_unchanged()?;
            }
            let parts: Option<Vec<&ScanPart>> =
                only.map(|o| o.iter().filter(|p| p.file == f.location).collect());
            if parts.as_ref().is_some_and(|p| p.is_empty()) {
                continue;
            }
            let predicate = match predicate {
                None => None,
                Some((p, expr)) => {
                    let first = self.first_partition_leaf;
                    let by_partition =
                        partition_verdict(p, first, &self.leaves[first..], &f.partition)
                            .map_err(|e| e.in_file(&f.location))?;
                    let residual = if by_partition == Predicate::False {
                        Predicate::False
                    } else {
                        let same = last.as_ref().is_some_and(|(l, _)| self.same_layout(*l, fi));
                        if !same {
                            let unfolded = self.bind_file_unfolded(fi, expr)?;
                            last = Some((fi, unfolded));
                        }
                        let (_, unfolded) = last.as_ref().expect("set above");
                        self.fold(fi, unfolded)
                            .map_err(|e| e.in_file(&f.location))?
                    };
                    if residual == Predicate::False {
                        add(&metrics.files_pruned_partition, 1);
                        continue;
                    }
                    Some(residual)
                }
            };
            add(&metrics.files, 1);
            add(&metrics.bytes_file, f.len);
            let column_orders = f
                .metadata
                .file_metadata()
                .column_orders()
                .map(|o| o.as_slice());
            let mut row_groups = Vec::new();
            let mut verdicts = Vec::new();
            let mut partial = Vec::new();
            for (rg, meta) in f.metadata.row_groups().iter().enumerate() {
                let rows = match &parts {
                    None => RowsRead::All,
                    Some(parts) => rows_read(parts, rg, meta.num_rows().max(0) as usize)
                        .map_err(|e| e.in_row_group(rg).in_file(&f.location))?,
                };
                let rows = match rows {
                    RowsRead::None => continue,
                    RowsRead::All => None,
                    RowsRead::Some(ranges) => Some(ranges),
                };
                let decided = (predicate.as_ref())
                    .filter(|_| statistics)
                    .map(|p| statistics_verdicts(p, &f.leaves, meta, column_orders));
                match decided {
                    Some((Predicate::False, _)) => {
                        let read = rows.as_deref().map_or(meta.num_rows() as u64, rows_in);
                        if counts_row_group(rows.as_deref()) {
                            add(&metrics.row_groups_total, 1);
                            add(&metrics.row_groups_pruned_statistics, 1);
                        }
                        add(&metrics.rows_total, read);
                    }
                    _ => {
                        row_groups.push(rg);
                        verdicts.push(decided.map(|(_, v)| v));
                        partial.push(rows);
                    }
                }
            }
            let output = self.output(fi, projection);
            let needed_leaves = f
                .leaves
                .iter()
                .filter(|l| output.read.contains(&l.root))
                .map(|l| l.index)
                .collect();
            out.push(ScanFile {
                file: f.file.clone(),
                location: f.location.clone(),
                metadata: f.metadata.clone(),
                len: f.len,
                identity: f.identity.clone(),
                opened: f.opened.clone(),
                cached: self.open_files.clone().map(|c| (c, fi)),
                predicate,
                output,
                needed_leaves,
                row_groups,
                statistics: verdicts,
                partial,
                deleted: f.deleted.clone(),
            });
        }
        add(&metrics.time_prune_ns, start.elapsed().as_nanos() as u64);
        Ok(out)
    }

    /// `expr` bound to file `fi`'s leaves, then its missing columns' and partition leaves
    /// (see [`DatasetPlan::file_leaves`]); depends only on the file's layout.
    fn bind_file_unfolded(&self, fi: usize, expr: &Expr) -> Result<Predicate> {
        let (leaves, _) = self.file_leaves(fi)?;
        bind::bind(expr, &leaves).map_err(|e| e.in_file(&self.files[fi].location))
    }

    /// Folds file `fi`'s constants (missing columns are NULL, partition values) into `p`: the
    /// result names the file's own leaves only (`False`: no row of the file can match).
    fn fold(&self, fi: usize, p: &Predicate) -> Result<Predicate> {
        let (leaves, mut values) = self.file_leaves(fi)?;
        let own = self.files[fi].leaves.len();
        values.extend(self.files[fi].partition.iter().cloned());
        partition_verdict(p, own, &leaves[own..], &values)
    }

    /// Whether files `a` and `b` have the same Parquet schema and the same missing columns, so
    /// a predicate bound to one is bound to the other.
    fn same_layout(&self, a: usize, b: usize) -> bool {
        let descr = |f: usize| {
            self.files[f]
                .metadata
                .file_metadata()
                .schema_descr()
                .root_schema()
        };
        self.unified.columns[a] == self.unified.columns[b] && descr(a) == descr(b)
    }

    /// File `fi`'s leaves, then its missing columns' leaves, then the partition leaves; and
    /// NULL for each missing-column leaf (the partition values are the file's).
    fn file_leaves(&self, fi: usize) -> Result<(Vec<LeafColumn>, Vec<PartitionValue>)> {
        let f = &self.files[fi];
        let roots = f.schema.fields().len();
        let mut leaves = f.leaves.clone();
        let mut values = Vec::new();
        for (o, index) in self.unified.columns[fi].iter().enumerate() {
            if index.is_some() {
                continue;
            }
            for l in self.leaves[..self.first_partition_leaf]
                .iter()
                .filter(|l| l.root == o)
            {
                let mut l = l.clone();
                l.index = leaves.len();
                l.root = roots + o;
                leaves.push(l);
                values.push(PartitionValue::Null);
            }
        }
        leaves.extend(partition_leaves(
            &self.partitions,
            leaves.len(),
            roots + self.unified.schema.fields().len(),
        )?);
        Ok((leaves, values))
    }

    /// How file `fi` produces the dataset columns `projection`.
    fn output(&self, fi: usize, projection: &[usize]) -> FileOutput {
        let file_columns = self.unified.schema.fields().len();
        let mut read = Vec::new();
        let columns = projection
            .iter()
            .map(|&o| {
                if o >= file_columns {
                    Output::Constant(self.files[fi].partition[o - file_columns].clone())
                } else if let Some(i) = self.unified.columns[fi][o] {
                    read.push(i);
                    Output::Read(read.len() - 1)
                } else {
                    Output::Null
                }
            })
            .collect();
        FileOutput { read, columns }
    }
}

/// Reads the footers of `listing`'s files, in waves of concurrent opens (on an object store
/// each is a round trip, and a dataset's are independent); the first `keep_open` stay open.
/// Returns the files and what the reads cost (bytes, requests, nanoseconds).
fn open_footers(
    listing: &Listing,
    keep_open: usize,
) -> Result<(Vec<DatasetFile>, (u64, u64, u64))> {
    let mut files = Vec::with_capacity(listing.files.len());
    let mut cost = (0, 0, 0);
    let mut waves = (listing.files.chunks(OPEN_AT_ONCE).enumerate()).flat_map(|(w, wave)| {
        let keep_open = keep_open.saturating_sub(w * OPEN_AT_ONCE);
        std::thread::scope(|s| {
            let handles: Vec<_> = (wave.iter().enumerate())
                .map(|(i, f)| s.spawn(move || open_kept(f, i < keep_open)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::internal("opening a file panicked")))
                })
                .collect::<Vec<_>>()
        })
    });
    for (i, f) in listing.files.iter().enumerate() {
        let opened = waves
            .next()
            .ok_or_else(|| Error::internal("a file was not opened"))??;
        cost.0 += opened.open_bytes;
        cost.1 += opened.open_requests;
        cost.2 += opened.open_ns;
        files.push(DatasetFile {
            file: f.clone(),
            location: opened.location.clone(),
            len: opened.len(),
            identity: opened.source.identity().clone(),
            metadata: opened.metadata.clone(),
            leaves: opened.leaves.clone(),
            schema: opened.schema().clone(),
            relative: listing.relative(f).unwrap_or_default(),
            partition: Vec::new(),
            opened: (i < keep_open).then(|| Arc::new(opened)),
            deleted: None,
        });
    }
    Ok((files, cost))
}

/// Opens `f`; a file that stays open (`kept`) on an object store has its sidecar looked for
/// at the same time ([`crate::index::prefetch_sidecar`]): a scan then waits one round trip
/// before its first read, not two. A file not kept is opened again when scanned.
fn open_kept(f: &FileRef, kept: bool) -> Result<OpenedFile> {
    if !(kept && f.is_remote()) {
        return OpenedFile::open_ref(f);
    }
    std::thread::scope(|s| {
        let sidecar = s.spawn(|| crate::index::prefetch_sidecar(f));
        let opened = OpenedFile::open_ref(f);
        let sidecar = sidecar.join().ok().flatten();
        let opened = opened?;
        if let Some(opens) = sidecar {
            crate::index::seed_sidecar(&opened, opens);
        }
        Ok(opened)
    })
}

/// Where each of `table`'s data columns is in file `f` (by Parquet field id when the column
/// has one and the file's column too, else by the table's name mapping, else by physical
/// name), renaming the file's columns and
/// leaves to the table's names so that predicates bind to them. A file column the table no
/// longer has gets a name no column has. A file column of a type the table's does not widen
/// from is an error naming both.
fn map_table_columns(table: &TableSnapshot, f: &mut DatasetFile) -> Result<Vec<Option<usize>>> {
    let root = f.metadata.file_metadata().schema_descr().root_schema();
    let ids: Vec<Option<i32>> = (root.get_fields().iter())
        .map(|t| {
            let info = t.get_basic_info();
            info.has_id().then(|| info.id())
        })
        .collect();
    // A file written with field ids is matched by them alone: a column whose id it lacks is
    // not in it, even if a column of that name is (a name reused after a drop).
    let file_has_ids = ids.iter().any(Option::is_some);
    let mut map = Vec::with_capacity(table.columns.len());
    let mut names: Vec<Option<String>> = vec![None; f.schema.fields().len()];
    for c in &table.columns {
        let found = match (c.field_id, &c.file_names) {
            (Some(id), _) if file_has_ids => ids.iter().position(|&i| i == Some(id)),
            // A file without ids: by the table's name mapping where it has one.
            (_, Some(names)) => (f.schema.fields().iter()).position(|x| names.contains(x.name())),
            _ => (f.schema.fields().iter()).position(|x| *x.name() == c.physical),
        };
        if let Some(i) = found {
            if names[i].is_some() {
                return Err(Error::corrupt(format!(
                    "file column '{}' matches two table columns",
                    f.schema.field(i).name()
                )));
            }
            let file_type = f.schema.field(i).data_type();
            if !same_leaf(file_type, c.field.data_type())
                && !is_table_widening(file_type, c.field.data_type())
            {
                return Err(Error::invalid(format!(
                    "column '{}' is {} in the file but {} in the table",
                    c.field.name(),
                    file_type,
                    c.field.data_type()
                )));
            }
            names[i] = Some(c.field.name().clone());
        }
        map.push(found);
    }
    let fields: Vec<Field> = (f.schema.fields().iter().zip(&names))
        .enumerate()
        .map(|(i, (field, name))| {
            let name = name.clone().unwrap_or_else(|| format!("\u{0}unmapped {i}"));
            field.as_ref().clone().with_name(name)
        })
        .collect();
    for leaf in &mut f.leaves {
        let new = fields[leaf.root].name();
        let rest = leaf.path.find('.').map_or("", |d| &leaf.path[d..]);
        leaf.path = format!("{new}{rest}");
    }
    f.schema = Arc::new(Schema::new_with_metadata(
        fields,
        f.schema.metadata().clone(),
    ));
    Ok(map)
}

/// The type changes a table may make to a column while its old files keep the old type
/// (Delta's type widening): wider integers, float to double, integers and wider decimals to
/// decimal, date to timestamp without zone, and a timestamp written in another unit.
fn is_table_widening(file: &DataType, table: &DataType) -> bool {
    use DataType as D;
    let int_width = |t: &DataType| match t {
        D::Int8 => Some(1),
        D::Int16 => Some(2),
        D::Int32 => Some(4),
        D::Int64 => Some(8),
        _ => None,
    };
    match (file, table) {
        (f, t) if int_width(f).is_some() && int_width(t).is_some() => int_width(f) < int_width(t),
        (D::Float32, D::Float64) => true,
        (D::Decimal128(p1, s1), D::Decimal128(p2, s2)) => {
            s2 >= s1 && (*p2 as i16 - *s2 as i16) >= (*p1 as i16 - *s1 as i16)
        }
        (f, D::Decimal128(p, s)) if int_width(f).is_some() => {
            let digits = match int_width(f) {
                Some(1) => 3,
                Some(2) => 5,
                Some(4) => 10,
                _ => 20,
            };
            (*p as i16 - *s as i16) >= digits
        }
        (D::Date32, D::Timestamp(_, None)) => true,
        (D::Timestamp(_, a), D::Timestamp(_, b)) => a.is_some() == b.is_some(),
        _ => false,
    }
}

/// One file the scan reads, bound to its own columns.
pub struct ScanFile {
    pub file: FileRef,
    pub location: String,
    /// The footer read at open (a reopened file must still match it).
    pub metadata: Arc<ParquetMetaData>,
    pub len: u64,
    pub identity: Identity,
    /// Still open from the footer reads (see [`KEEP_OPEN`]).
    pub opened: Option<Arc<OpenedFile>>,
    /// The dataset's open files and this file's index there (a [`super::Dataset`]'s scans).
    pub cached: Option<(Arc<OpenFiles>, usize)>,
    /// The residual predicate over this file's leaves (`None`: no filter).
    pub predicate: Option<Predicate>,
    pub output: FileOutput,
    /// Leaves the projection reads (their offset indexes skip payload pages).
    pub needed_leaves: Vec<usize>,
    /// Row groups not pruned by footer statistics.
    pub row_groups: Vec<usize>,
    /// Per row group of `row_groups`, the statistics' verdicts on `predicate` (`None`: not
    /// evaluated, statistics off or no predicate): the row group's scan replays them.
    pub(crate) statistics: Vec<Option<LeafVerdicts>>,
    /// Per row group of `row_groups`, the rows read when not all are ([`crate::ScanPart`]):
    /// ascending, disjoint ranges within the row group.
    pub(crate) partial: Vec<Option<Vec<Range<usize>>>>,
    /// Rows the table deleted (read when the first of its row groups is scanned): never
    /// selected.
    pub deleted: Option<crate::table::Deletes>,
}

impl ScanFile {
    /// The rows of row group `rg` the scan reads when not all (see [`ScanFile::partial`]).
    pub(crate) fn rows_read(&self, rg: usize) -> Option<&[Range<usize>]> {
        let at = self.row_groups.binary_search(&rg).ok()?;
        self.partial.get(at)?.as_deref()
    }

    /// The statistics' verdicts recorded for row group `rg` when the scan was bound.
    pub(crate) fn verdicts(&self, rg: usize) -> Option<&LeafVerdicts> {
        let at = self.row_groups.binary_search(&rg).ok()?;
        self.statistics.get(at)?.as_ref()
    }

    /// Opens the file again with the footer the plan was made from (no footer read; a file
    /// that changed since is an error when opened or read).
    pub fn reopen(&self) -> Result<Arc<OpenedFile>> {
        OpenedFile::reopen(&self.file, &self.identity, self.metadata.clone()).map(Arc::new)
    }
}

/// Where an output column of a file's batches comes from.
#[derive(Debug, Clone)]
enum Output {
    /// The k-th array read from the file.
    Read(usize),
    /// A column the file lacks.
    Null,
    /// A partition column.
    Constant(PartitionValue),
}

/// What a file's row groups read and how their batches are assembled in the dataset schema.
#[derive(Debug, Clone)]
pub struct FileOutput {
    /// Top-level file columns to read, in order.
    pub read: Vec<usize>,
    columns: Vec<Output>,
}

impl FileOutput {
    /// Reads these file columns and outputs them unchanged (a single file without a dataset).
    pub fn read(read: Vec<usize>) -> FileOutput {
        let columns = (0..read.len()).map(Output::Read).collect();
        FileOutput { read, columns }
    }

    /// The type file column `root` (of type `file_type` in its file) is decoded to: its own,
    /// or the view form that `schema`, the output schema, asks for, so that no batch is cast
    /// afterwards.
    pub fn read_type<'a>(
        &self,
        root: usize,
        file_type: &'a DataType,
        schema: &'a Schema,
    ) -> &'a DataType {
        let k = self.read.iter().position(|&r| r == root);
        let out = (self.columns.iter()).position(|c| matches!(c, Output::Read(j) if Some(*j) == k));
        match out.map(|i| schema.field(i).data_type()) {
            Some(t)
                if k.is_some()
                    && (view_of(file_type).as_ref() == Some(t)
                        || dictionary_of(file_type).as_ref() == Some(t)
                        || short_decimal_of(file_type).as_ref() == Some(t)) =>
            {
                t
            }
            _ => file_type,
        }
    }

    /// The output batch of `rows` rows from the arrays of `read`. A string or binary column
    /// holding more than 2 GiB stays in its 64-bit-offset form, and so does its field in the
    /// batch's schema: the scan stream cuts such a batch into pieces that fit `schema`.
    pub fn assemble(
        &self,
        schema: &SchemaRef,
        arrays: Vec<ArrayRef>,
        rows: usize,
    ) -> Result<RecordBatch> {
        let mut widened = false;
        let mut fields = Vec::with_capacity(schema.fields().len());
        let mut columns = Vec::with_capacity(schema.fields().len());
        for (c, field) in self.columns.iter().zip(schema.fields()) {
            let column = match c {
                Output::Read(k) if is_widened(arrays[*k].data_type(), field.data_type()) => {
                    widened = true;
                    fields.push(Arc::new(
                        field
                            .as_ref()
                            .clone()
                            .with_data_type(arrays[*k].data_type().clone()),
                    ));
                    columns.push(arrays[*k].clone());
                    continue;
                }
                Output::Read(k) => {
                    conform(&arrays[*k], field.data_type()).map_err(|e| e.in_column(field.name()))
                }
                Output::Null => Ok(new_null_array(field.data_type(), rows)),
                Output::Constant(v) => constant_array(v, field.data_type(), rows),
            }?;
            fields.push(field.clone());
            columns.push(column);
        }
        let schema = if widened {
            Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
        } else {
            schema.clone()
        };
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        RecordBatch::try_new_with_options(schema, columns, &options)
            .map_err(|e| Error::internal(format!("building the result batch: {e}")))
    }
}

/// Whether a file column of Arrow type `file` binds predicates as one of the dataset's type
/// `dataset` would: the same type, or forms that differ only in Arrow's hints (string forms, a
/// dictionary, a timestamp's zone).
fn same_leaf(file: &DataType, dataset: &DataType) -> bool {
    use DataType as D;
    let plain = |t: &DataType| match t {
        D::Dictionary(_, v) => v.as_ref().clone(),
        D::LargeUtf8 | D::Utf8View => D::Utf8,
        D::LargeBinary | D::BinaryView => D::Binary,
        D::Timestamp(u, _) => D::Timestamp(*u, None),
        t => t.clone(),
    };
    file == dataset || plain(&plain(file)) == plain(&plain(dataset))
}

/// The leaves of a flat column of Arrow type `field` as a Parquet writer stores it (the type a
/// widened column has in no file).
fn written_as(field: &Field) -> Result<Vec<LeafColumn>> {
    let descr = ArrowSchemaConverter::new()
        .convert(&Schema::new(vec![field.clone()]))
        .map_err(|e| {
            Error::internal(format!("column '{}' as a Parquet leaf: {e}", field.name()))
        })?;
    Ok(leaf_columns(&descr))
}

/// Whether every data page of a chunk is dictionary-encoded (see
/// [`DatasetPlan::schema_with_views`]).
fn all_dictionary(chunk: &ColumnChunkMetaData) -> bool {
    let dictionary =
        |e: &Encoding| matches!(e, Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY);
    if chunk.dictionary_page_offset().is_none() {
        return false;
    }
    if let Some(mask) = chunk.page_encoding_stats_mask() {
        return mask.is_only(Encoding::PLAIN_DICTIONARY) || mask.is_only(Encoding::RLE_DICTIONARY);
    }
    if let Some(stats) = chunk.page_encoding_stats() {
        return (stats.iter())
            .filter(|s| matches!(s.page_type, PageType::DATA_PAGE | PageType::DATA_PAGE_V2))
            .all(|s| dictionary(&s.encoding));
    }
    !chunk.encodings().any(|e| e == Encoding::PLAIN)
}

/// Rows of one file a scan reads (see [`crate::Scan::parts`]): some row groups, whole or in part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanPart {
    /// The file, as [`crate::Scan::files`] names it.
    pub file: String,
    /// Row groups, by index in the file.
    pub row_groups: Range<usize>,
    /// Only these rows of each of those row groups (positions within the row group); `None`:
    /// all of them.
    pub rows: Option<Range<usize>>,
}

impl ScanPart {
    /// Row groups `row_groups` of `file`, whole.
    pub fn row_groups(file: impl Into<String>, row_groups: Range<usize>) -> ScanPart {
        ScanPart {
            file: file.into(),
            row_groups,
            rows: None,
        }
    }

    /// Rows `rows` of row group `row_group` of `file`.
    pub fn rows(file: impl Into<String>, row_group: usize, rows: Range<usize>) -> ScanPart {
        ScanPart {
            file: file.into(),
            row_groups: row_group..row_group + 1,
            rows: Some(rows),
        }
    }
}

/// Which rows of a row group a scan's parts read.
#[derive(Debug, PartialEq)]
enum RowsRead {
    None,
    All,
    /// Ascending, disjoint, non-empty ranges, not the whole row group.
    Some(Vec<Range<usize>>),
}

/// The rows of row group `rg` (of `rows` rows) that `parts` (one file's) read: their union.
/// A range past the row group's end is an error, not a silent clip: the caller planned
/// against another file.
fn rows_read(parts: &[&ScanPart], rg: usize, rows: usize) -> Result<RowsRead> {
    let mut ranges = Vec::new();
    for part in parts.iter().filter(|p| p.row_groups.contains(&rg)) {
        match &part.rows {
            None => return Ok(RowsRead::All),
            Some(r) if r.end > rows => {
                return Err(Error::invalid(format!(
                    "rows {}..{} asked for, but the row group has {rows} rows",
                    r.start, r.end
                )))
            }
            Some(r) => ranges.push(r.clone()),
        }
    }
    let merged = crate::prune::page_index::ranges_normalize(ranges);
    Ok(match merged.as_slice() {
        [] => RowsRead::None,
        [only] if *only == (0..rows) => RowsRead::All,
        _ => RowsRead::Some(merged),
    })
}

/// Rows in `ranges`.
pub(crate) fn rows_in(ranges: &[Range<usize>]) -> u64 {
    ranges.iter().map(|r| r.len() as u64).sum()
}

/// Whether a scan reading `rows` of a row group counts the row group itself in its metrics:
/// when it reads all of it, or the part holding its first row. Partitions that split a row
/// group between them then count it once, summed.
pub(crate) fn counts_row_group(rows: Option<&[Range<usize>]>) -> bool {
    rows.is_none_or(|r| r.first().is_some_and(|r| r.start == 0))
}
