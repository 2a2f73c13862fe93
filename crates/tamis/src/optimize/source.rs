//! The input files of `optimize`: opened and checked up front (readable Parquet, one schema),
//! then read as one stream of record batches, file after file.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{Schema, SchemaRef};
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReaderBuilder};
use parquet::file::metadata::{KeyValue, ParquetMetaData};

use crate::error::{Error, Result};

/// Rows per batch read from the inputs.
const BATCH_ROWS: usize = 8192;

/// An opened input file.
pub(crate) struct Input {
    pub path: PathBuf,
    pub metadata: Arc<ParquetMetaData>,
    pub schema: SchemaRef,
    /// File size in bytes.
    pub bytes: u64,
}

impl Input {
    fn name(&self) -> String {
        self.path.display().to_string()
    }

    /// Parquet key-value metadata other than the embedded Arrow schema (which the writer
    /// re-derives from the schema).
    pub(crate) fn key_value_metadata(&self) -> Vec<KeyValue> {
        self.metadata
            .file_metadata()
            .key_value_metadata()
            .map(|kv| {
                kv.iter()
                    .filter(|kv| kv.key != parquet::arrow::ARROW_SCHEMA_META_KEY)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Compressed bytes of each top-level column (all its leaves, all row groups).
    pub(crate) fn column_bytes(&self) -> Vec<u64> {
        let descr = self.metadata.file_metadata().schema_descr();
        let mut out = vec![0u64; self.schema.fields().len()];
        for rg in self.metadata.row_groups() {
            for (leaf, cc) in rg.columns().iter().enumerate() {
                let root = descr.get_column_root_idx(leaf);
                if let Some(slot) = out.get_mut(root) {
                    *slot += cc.compressed_size().max(0) as u64;
                }
            }
        }
        out
    }
}

/// Opens every input; fails naming the file if one cannot be read or its schema differs from
/// the first one's (names, types and nullability; metadata may differ).
pub(crate) fn open_inputs(paths: &[PathBuf]) -> Result<Vec<Input>> {
    if paths.is_empty() {
        return Err(Error::invalid("no input files"));
    }
    let mut inputs: Vec<Input> = Vec::with_capacity(paths.len());
    for path in paths {
        let input = open(path)?;
        if let Some(first) = inputs.first() {
            check_same_schema(first, &input)?;
        }
        inputs.push(input);
    }
    Ok(inputs)
}

fn open(path: &Path) -> Result<Input> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| Error::from(e).in_file(&name))?;
    let bytes = file
        .metadata()
        .map_err(|e| Error::from(e).in_file(&name))?
        .len();
    crate::file::thrift_guard::check_file_footer(&file).map_err(|e| e.in_file(&name))?;
    let meta = ArrowReaderMetadata::load(&file, Default::default())
        .map_err(|e| Error::from(e).in_file(&name))?;
    Ok(Input {
        path: path.to_path_buf(),
        metadata: meta.metadata().clone(),
        schema: meta.schema().clone(),
        bytes,
    })
}

fn check_same_schema(first: &Input, other: &Input) -> Result<()> {
    let strip = |s: &Schema| {
        s.fields()
            .iter()
            .map(|f| (f.name().clone(), f.data_type().clone(), f.is_nullable()))
            .collect::<Vec<_>>()
    };
    let (a, b) = (strip(&first.schema), strip(&other.schema));
    if a == b {
        return Ok(());
    }
    let diff = a
        .iter()
        .zip(&b)
        .find(|(x, y)| x != y)
        .map(|(x, y)| {
            let show = |(n, t, null): &(String, arrow::datatypes::DataType, bool)| {
                format!("'{n}' {t}{}", if *null { "" } else { " NOT NULL" })
            };
            format!("column {} there, {} here", show(x), show(y))
        })
        .unwrap_or_else(|| format!("{} columns there, {} here", a.len(), b.len()));
    Err(
        Error::invalid(format!("schema differs from {}: {diff}", first.name()))
            .in_file(other.name()),
    )
}

/// All rows of the inputs in file order, as batches of `schema` (the first file's schema, so
/// that every batch carries the same metadata).
pub(crate) fn read_all<'a>(
    inputs: &'a [Input],
    schema: &'a SchemaRef,
) -> impl Iterator<Item = Result<RecordBatch>> + 'a {
    inputs.iter().flat_map(move |input| {
        let name = input.name();
        let reader = File::open(&input.path)
            .map_err(Error::from)
            .and_then(|f| {
                Ok(ParquetRecordBatchReaderBuilder::try_new(f)?
                    .with_batch_size(BATCH_ROWS)
                    .build()?)
            })
            .map_err(|e| e.in_file(&name));
        let batches: Box<dyn Iterator<Item = Result<RecordBatch>>> = match reader {
            Err(e) => Box::new(std::iter::once(Err(e))),
            Ok(r) => {
                let schema = schema.clone();
                let name = name.clone();
                Box::new(r.map(move |b| {
                    let b = b.map_err(|e| Error::from(e).in_file(&name))?;
                    Ok(RecordBatch::try_new(schema.clone(), b.columns().to_vec())?)
                }))
            }
        };
        batches
    })
}
