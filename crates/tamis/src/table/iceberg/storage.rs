//! iceberg's file I/O over tamis's own object-store clients: an Iceberg table in a bucket has
//! its metadata, manifests and delete files read with the same credentials, options and
//! request limits as its data files. Read-only: tamis does not write tables. Local paths (a
//! REST catalog's table on this machine) are read by iceberg's own local storage.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use iceberg::io::{
    FileMetadata, FileRead, FileWrite, InputFile, LocalFsStorage, OutputFile, Storage,
    StorageConfig, StorageFactory,
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
    /// `config` holds what a REST catalog returned with the table: vended credentials among it.
    fn build(&self, config: &StorageConfig) -> Result<Arc<dyn Storage>> {
        let options = with_vended(&StorageOptions(self.options.clone()), config.props());
        Ok(Arc::new(ObjectStorage { options: options.0 }))
    }
}

/// `options` over the storage credentials and settings a catalog vended in Iceberg's property
/// names (S3's: `s3.access-key-id`, `s3.secret-access-key`, `s3.session-token`, `s3.endpoint`,
/// `s3.region`, `s3.path-style-access`); an option given explicitly wins.
pub(crate) fn with_vended(
    options: &StorageOptions,
    props: &std::collections::HashMap<String, String>,
) -> StorageOptions {
    let mut out = BTreeMap::new();
    for (property, value) in props {
        let (key, value) = match property.as_str() {
            "s3.access-key-id" => ("aws_access_key_id", value.clone()),
            "s3.secret-access-key" => ("aws_secret_access_key", value.clone()),
            "s3.session-token" => ("aws_session_token", value.clone()),
            "s3.endpoint" => ("aws_endpoint", value.clone()),
            "s3.region" | "client.region" => ("aws_region", value.clone()),
            "s3.path-style-access" => (
                "aws_virtual_hosted_style_request",
                (!value.eq_ignore_ascii_case("true")).to_string(),
            ),
            _ => continue,
        };
        // Given under any of its names (`access_key_id`, `aws_access_key_id`), it wins.
        let given = (options.0.keys())
            .any(|k| k.to_ascii_lowercase().trim_start_matches("aws_") == &key[4..]);
        if !given {
            out.insert(key.to_string(), value);
        }
    }
    out.extend(options.0.iter().map(|(k, v)| (k.clone(), v.clone())));
    StorageOptions(out)
}

/// Whether iceberg's local storage reads `path` (`file:` or no scheme).
fn is_local(path: &str) -> bool {
    path.starts_with("file:") || !path.contains("://")
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
        if is_local(path) {
            return LocalFsStorage.exists(path).await;
        }
        let (store, key) = self.locate(path)?;
        match store.head(&key).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(store_error(e, path)),
        }
    }

    async fn metadata(&self, path: &str) -> Result<FileMetadata> {
        if is_local(path) {
            return LocalFsStorage.metadata(path).await;
        }
        let (store, key) = self.locate(path)?;
        let meta = store.head(&key).await.map_err(|e| store_error(e, path))?;
        Ok(FileMetadata { size: meta.size })
    }

    async fn read(&self, path: &str) -> Result<Bytes> {
        if is_local(path) {
            return LocalFsStorage.read(path).await;
        }
        let (store, key) = self.locate(path)?;
        let got = store.get(&key).await.map_err(|e| store_error(e, path))?;
        got.bytes().await.map_err(|e| store_error(e, path))
    }

    async fn reader(&self, path: &str) -> Result<Box<dyn FileRead>> {
        if is_local(path) {
            return LocalFsStorage.reader(path).await;
        }
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
