//! iceberg's file I/O over tamis's own object-store clients: an Iceberg table in a bucket has
//! its metadata, manifests and delete files read with the same credentials, options and
//! request limits as its data files. Read-only: tamis does not write tables.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use iceberg::io::{
    FileMetadata, FileRead, FileWrite, InputFile, OutputFile, Storage, StorageConfig,
    StorageFactory,
};
use iceberg::{Error as IcebergError, ErrorKind, Result};
use object_store::{ObjectStore, ObjectStoreExt};
use serde::{Deserialize, Serialize};

use crate::io::location::{store_for, StorageOptions};

/// Builds an [`ObjectStorage`] with the options the table was opened with.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ObjectStorageFactory {
    pub(crate) options: BTreeMap<String, String>,
}

#[typetag::serde]
impl StorageFactory for ObjectStorageFactory {
    fn build(&self, _config: &StorageConfig) -> Result<Arc<dyn Storage>> {
        Ok(Arc::new(ObjectStorage {
            options: self.options.clone(),
        }))
    }
}

/// Reads `s3://`, `gs://`, `az://` and `http(s)://` paths through tamis's store for each
/// bucket (cached per process, as every scan's are).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ObjectStorage {
    options: BTreeMap<String, String>,
}

impl ObjectStorage {
    /// The client of the store holding `path`, and the object's key.
    fn locate(&self, path: &str) -> Result<(Arc<dyn ObjectStore>, object_store::path::Path)> {
        let options = StorageOptions(self.options.clone());
        let (store, key) = store_for(path, &options).map_err(|e| tamis_error(e, path))?;
        let client = store.client().map_err(|e| tamis_error(e, path))?;
        Ok((client.inner.clone(), key))
    }

    fn read_only(&self, path: &str) -> IcebergError {
        IcebergError::new(
            ErrorKind::FeatureUnsupported,
            format!("tamis reads Iceberg tables and does not write them ({path})"),
        )
    }
}

#[async_trait]
#[typetag::serde]
impl Storage for ObjectStorage {
    async fn exists(&self, path: &str) -> Result<bool> {
        let (store, key) = self.locate(path)?;
        match store.head(&key).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(store_error(e, path)),
        }
    }

    async fn metadata(&self, path: &str) -> Result<FileMetadata> {
        let (store, key) = self.locate(path)?;
        let meta = store.head(&key).await.map_err(|e| store_error(e, path))?;
        Ok(FileMetadata { size: meta.size })
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        let (store, key) = self.locate(path)?;
        let got = store.get(&key).await.map_err(|e| store_error(e, path))?;
        got.bytes().await.map_err(|e| store_error(e, path))
    }

    async fn reader(&self, path: &str) -> Result<Box<dyn FileRead>> {
        let (store, key) = self.locate(path)?;
        Ok(Box::new(ObjectRead {
            store,
            key,
            path: path.to_string(),
        }))
    }

    async fn write(&self, path: &str, _bs: Bytes) -> Result<()> {
        Err(self.read_only(path))
    }

    async fn writer(&self, path: &str) -> Result<Box<dyn FileWrite>> {
        Err(self.read_only(path))
    }

    async fn delete(&self, path: &str) -> Result<()> {
        Err(self.read_only(path))
    }

    async fn delete_prefix(&self, path: &str) -> Result<()> {
        Err(self.read_only(path))
    }

    async fn delete_stream(&self, _paths: BoxStream<'static, String>) -> Result<()> {
        Err(self.read_only("a stream of paths"))
    }

    fn new_input(&self, path: &str) -> Result<InputFile> {
        Ok(InputFile::new(Arc::new(self.clone()), path.to_string()))
    }

    fn new_output(&self, path: &str) -> Result<OutputFile> {
        Err(self.read_only(path))
    }
}

/// Ranged reads of one object.
struct ObjectRead {
    store: Arc<dyn ObjectStore>,
    key: object_store::path::Path,
    path: String,
}

#[async_trait]
impl FileRead for ObjectRead {
    async fn read(&self, range: Range<u64>) -> Result<Bytes> {
        (self.store.get_range(&self.key, range).await).map_err(|e| store_error(e, &self.path))
    }
}

fn store_error(e: object_store::Error, path: &str) -> IcebergError {
    let kind = match e {
        object_store::Error::NotFound { .. } => ErrorKind::DataInvalid,
        _ => ErrorKind::Unexpected,
    };
    IcebergError::new(kind, format!("reading {path}: {e}"))
}

fn tamis_error(e: crate::error::Error, path: &str) -> IcebergError {
    IcebergError::new(ErrorKind::Unexpected, format!("reading {path}: {e}"))
}
