//! Where files live: local paths, or URLs of object stores (`s3://`, `gs://`, `az://`,
//! `abfs(s)://`, `http(s)://`), and how a dataset's files are found (a file, a directory or
//! prefix, a glob).
//!
//! Credentials, endpoint and region come from the standard environment variables
//! (`AWS_ACCESS_KEY_ID`, `AWS_ENDPOINT_URL`, `GOOGLE_SERVICE_ACCOUNT`, `AZURE_STORAGE_…`) and
//! from explicit [`StorageOptions`], which win. Option keys are the `object_store` crate's
//! (`endpoint`, `region`, `access_key_id`, `secret_access_key`, `allow_http`, `timeout`, …)
//! plus tamis's own: `latency_ms` and `bandwidth_mb_per_s` (fix the source's cost model instead
//! of measuring it) and `max_requests` (requests in flight per store), and an Iceberg REST
//! catalog's properties as `iceberg.<property>` (`iceberg.token`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{BackoffConfig, ObjectStore, ObjectStoreScheme, RetryConfig};
use url::Url;

use super::local::LocalFile;
use super::object::{runtime, store_cache, store_error, ObjectSource, Store};
use super::{ByteSource, Identity, IoProfile, LOCAL_TAIL_READ};
use crate::error::{Error, ErrorKind, Result};

/// Options for object stores (see the module docs for the keys).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct StorageOptions(pub BTreeMap<String, String>);

impl StorageOptions {
    /// No options: the environment's settings apply.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets option `key` to `value` (see the module docs for the keys).
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.0.insert(key.into(), value.into());
        self
    }

    fn tamis_number(&self, key: &str) -> Result<Option<f64>> {
        match self.0.get(key) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .map(Some)
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "storage option {key}: expected a non-negative number, got '{v}'"
                    ))
                }),
        }
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for StorageOptions {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        StorageOptions(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

/// tamis's own keys, never passed to the store builders.
const TAMIS_KEYS: [&str; 3] = ["latency_ms", "bandwidth_mb_per_s", "max_requests"];

/// One file of a dataset, before it is opened.
#[derive(Debug, Clone)]
pub enum FileRef {
    /// A file on a local file system.
    Local(PathBuf),
    /// An object in a store.
    Object {
        /// The bucket (or HTTP host): its client, request limit and measured costs, shared by
        /// its objects.
        store: Arc<Store>,
        /// The object's path inside the store.
        path: ObjectPath,
        /// From the listing, when there was one (sizes the speculative footer read).
        size: Option<u64>,
    },
}

impl FileRef {
    /// Whether reads cross a network (an object store) rather than a local disk.
    pub fn is_remote(&self) -> bool {
        matches!(self, FileRef::Object { .. })
    }

    /// The path or URL.
    pub fn location(&self) -> String {
        match self {
            FileRef::Local(p) => p.display().to_string(),
            FileRef::Object { store, path, .. } => store.url(path),
        }
    }

    /// Opens the file again without reading it, for a file whose footer was read before:
    /// `identity` is what that open saw (a local file that changed since is an error here;
    /// an object is checked by every read's `If-Match`).
    pub fn reopen(&self, identity: &Identity) -> Result<Arc<dyn ByteSource>> {
        match self {
            FileRef::Local(p) => {
                let f = LocalFile::open(p)?;
                if f.identity() != identity {
                    return Err(
                        Error::invalid("the file changed while the scan was running")
                            .in_file(p.display()),
                    );
                }
                Ok(Arc::new(f))
            }
            FileRef::Object { store, path, .. } => Ok(Arc::new(ObjectSource::known(
                store.clone(),
                path.clone(),
                identity.clone(),
            ))),
        }
    }

    /// Opens the file with one read of its last bytes (the footer and, usually, the page
    /// index): returns the source and that tail, at the end of the file.
    pub fn open(&self) -> Result<(Arc<dyn ByteSource>, Bytes)> {
        match self {
            FileRef::Local(p) => {
                let f = LocalFile::open(p)?;
                let len = f.identity().len;
                let tail = LOCAL_TAIL_READ.min(len);
                let source: Arc<dyn ByteSource> = Arc::new(f);
                let never = std::sync::atomic::AtomicBool::new(false);
                let bytes = if tail == 0 {
                    Bytes::new()
                } else {
                    source
                        .read_ranges(std::slice::from_ref(&(len - tail..len)), &never)?
                        .pop()
                        .unwrap_or_default()
                };
                Ok((source, bytes))
            }
            FileRef::Object { store, path, size } => {
                let tail = store.profile().tail_read(*size);
                let (source, bytes) = ObjectSource::open(store.clone(), path.clone(), tail)?;
                Ok((Arc::new(source), bytes))
            }
        }
    }
}

/// What a path names.
#[derive(Debug, Clone)]
pub struct Listing {
    /// The files, sorted by location.
    pub files: Vec<FileRef>,
    /// For a directory, prefix or glob: the root that partition paths are relative to.
    pub root: Option<String>,
}

impl Listing {
    /// A file's path below the root (for hive partitions), if the listing has a root.
    pub fn relative(&self, file: &FileRef) -> Option<String> {
        let root = self.root.as_ref()?;
        let loc = file.location();
        loc.strip_prefix(root.as_str())
            .map(|r| r.trim_start_matches('/').to_string())
    }
}

/// A listing of files named one by one, without listing anything: an engine that planned a
/// dataset elsewhere (a Spark driver) hands each worker the files of its part. `root` is the
/// dataset's root as `list` returned it, so hive partition values are read as they were
/// there; `sizes` are the files' lengths when known (they size the first footer read).
pub fn named(
    root: Option<&str>,
    files: &[(String, Option<u64>)],
    options: &StorageOptions,
) -> Result<Listing> {
    if files.is_empty() {
        return Err(Error::invalid("no files named"));
    }
    // A file named twice would be scanned twice.
    let mut seen = std::collections::HashSet::new();
    let files = files
        .iter()
        .filter(|(location, _)| seen.insert(location.as_str()))
        .map(|(location, size)| {
            if is_url(location) && !location.starts_with("file://") {
                let (store, path) = store_for(location, options)?;
                Ok(FileRef::Object {
                    store,
                    path,
                    size: *size,
                })
            } else {
                let path = match location.strip_prefix("file://") {
                    Some(_) => Url::parse(location)
                        .ok()
                        .and_then(|u| u.to_file_path().ok())
                        .ok_or_else(|| Error::invalid(format!("bad file URL {location}")))?,
                    None => PathBuf::from(location),
                };
                Ok(FileRef::Local(path))
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Listing {
        files,
        root: root.map(|r| r.trim_end_matches('/').to_string()),
    })
}

fn is_url(location: &str) -> bool {
    location.contains("://")
}

/// Whether a file name is data: `*.parquet`, not hidden (`.x`) or a marker (`_SUCCESS`,
/// `_metadata`), as Spark and pyarrow lay datasets out.
fn is_data_file(name: &str) -> bool {
    name.ends_with(".parquet") && !name.starts_with('.') && !name.starts_with('_')
}

/// A table format tamis reads (the table layer reads them; a location is recognized here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableFormat {
    /// Delta Lake: a root holding `_delta_log/`.
    Delta,
    /// Apache Iceberg: a `*.metadata.json` file, or a root holding `metadata/`.
    Iceberg,
}

impl std::fmt::Display for TableFormat {
    /// `delta` or `iceberg`, as [`std::str::FromStr`] reads it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Delta => "delta",
            Self::Iceberg => "iceberg",
        })
    }
}

impl std::str::FromStr for TableFormat {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "delta" => Ok(Self::Delta),
            "iceberg" => Ok(Self::Iceberg),
            _ => Err(Error::invalid(format!(
                "unknown table format '{s}' (expected delta or iceberg)"
            ))),
        }
    }
}

/// What a location names: files, or a table whose log or metadata says which files hold its
/// rows.
#[derive(Debug, Clone)]
pub(crate) enum Located {
    Files(Listing),
    /// A table: the location, as given (a Delta root holding `_delta_log/`; an Iceberg
    /// metadata file, or a root holding `metadata/*.metadata.json`), and its format.
    Table(String, TableFormat),
}

/// Expands a location into files: a file, a directory or prefix (every `*.parquet` below it),
/// or a glob. A table's root is refused (see [`locate`], which tells it apart).
pub(crate) fn list(location: &str, options: &StorageOptions) -> Result<Listing> {
    match locate(location, options)? {
        Located::Files(listing) => Ok(listing),
        Located::Table(_, format) => Err(Error::unsupported(format!(
            "{location} is {}: open it as a table (a scan or a dataset reads it); this command \
             reads Parquet files only",
            match format {
                TableFormat::Delta => "a Delta Lake table (it has _delta_log/)",
                TableFormat::Iceberg => "an Apache Iceberg table",
            }
        ))),
    }
}

/// [`list`], or the table a location is the root of.
pub(crate) fn locate(location: &str, options: &StorageOptions) -> Result<Located> {
    // A table in an Iceberg catalog (`iceberg+sqlite:///catalog.db?table=ns.t`).
    if location.starts_with("iceberg+") {
        return Ok(Located::Table(location.to_string(), TableFormat::Iceberg));
    }
    if location.starts_with("file://") {
        let url =
            Url::parse(location).map_err(|e| Error::invalid(format!("bad URL {location}: {e}")))?;
        let path = url
            .to_file_path()
            .map_err(|_| Error::invalid(format!("bad file URL {location}")))?;
        return list_local(&path.display().to_string());
    }
    if is_url(location) {
        list_object(location, options)
    } else {
        list_local(location)
    }
}

fn list_local(path: &str) -> Result<Located> {
    let p = Path::new(path);
    if p.is_file() && path.ends_with(".metadata.json") {
        return Ok(Located::Table(path.to_string(), TableFormat::Iceberg));
    }
    if p.is_file() {
        return Ok(Located::Files(Listing {
            files: vec![FileRef::Local(p.to_path_buf())],
            root: None,
        }));
    }
    if p.is_dir() {
        let delta = p.join("_delta_log").is_dir();
        let iceberg = has_iceberg_metadata(&p.join("metadata"));
        if let Some(table) = table_root(path, delta, iceberg)? {
            return Ok(table);
        }
        refuse_table(p, path)?;
        let mut out = Vec::new();
        collect_dir(p, &mut out, &mut Vec::new(), &mut 0)?;
        out.sort();
        if out.is_empty() {
            return Err(Error::invalid(format!(
                "no *.parquet files below directory {path}"
            )));
        }
        return Ok(Located::Files(Listing {
            files: out.into_iter().map(FileRef::Local).collect(),
            root: Some(path.trim_end_matches('/').to_string()),
        }));
    }
    if path.contains(['*', '?', '[']) {
        let root = glob_root(path);
        refuse_table(Path::new(if root.is_empty() { "." } else { &root }), path)?;
        let paths =
            glob::glob(path).map_err(|e| Error::invalid(format!("bad glob {path}: {e}")))?;
        let mut out: Vec<PathBuf> = paths
            .filter_map(|r| r.ok())
            .filter(|p| p.is_file())
            .collect();
        out.sort();
        if out.is_empty() {
            return Err(Error::invalid(format!("no files match {path}")));
        }
        return Ok(Located::Files(Listing {
            files: out.into_iter().map(FileRef::Local).collect(),
            root: Some(glob_root(path)),
        }));
    }
    let mut err = Error::new(ErrorKind::Io, "no such file or directory");
    err.io_kind = Some(std::io::ErrorKind::NotFound);
    Err(err.in_file(path))
}

/// The table at `location`, a root holding a Delta log (`delta`) or Iceberg metadata
/// (`iceberg`); an error when it holds both (Delta UniForm: the caller says which to read).
fn table_root(location: &str, delta: bool, iceberg: bool) -> Result<Option<Located>> {
    let format = match (delta, iceberg) {
        (true, true) => {
            return Err(Error::invalid(format!(
                "{location} is both a Delta Lake table (it has _delta_log/) and an Apache \
                 Iceberg table (it has metadata/*.metadata.json): say which to read \
                 (--table-format delta or iceberg; table_format= in Python)"
            )))
        }
        (true, false) => TableFormat::Delta,
        (false, true) => TableFormat::Iceberg,
        (false, false) => return Ok(None),
    };
    Ok(Some(Located::Table(location.to_string(), format)))
}

/// A table format's files are not a dataset: a Delta Lake or Apache Iceberg table's directory
/// holds Parquet files the table has removed (deleted or rewritten rows), which only its log or
/// manifests tell apart. A listing inside a Delta table (a partition directory: a Delta root
/// itself is opened as a table, see [`locate`]) or at or below an Iceberg table's root is
/// refused with an error naming the format: an ancestor of `dir` holding `_delta_log/`, or holding `metadata/*.metadata.json` with
/// `dir` being that table or inside its `data/` (Iceberg).
fn refuse_table(dir: &Path, location: &str) -> Result<()> {
    let Ok(dir) = std::path::absolute(dir) else {
        return Ok(());
    };
    for table in dir.ancestors() {
        let format = if table.join("_delta_log").is_dir() {
            Some("a Delta Lake table (it has _delta_log/)")
        } else if (table == dir || dir.starts_with(table.join("data")))
            && has_iceberg_metadata(&table.join("metadata"))
        {
            Some("an Apache Iceberg table (it has metadata/*.metadata.json)")
        } else {
            None
        };
        if let Some(format) = format {
            let at = if table == dir {
                String::new()
            } else {
                format!(" inside {}", table.display())
            };
            let hint = format!("open the table at {} instead", table.display());
            return Err(Error::unsupported(format!(
                "{location} is{at} {format}: its Parquet files read as a plain directory would \
                 include rows the table has deleted or replaced; {hint}"
            )));
        }
    }
    Ok(())
}

fn has_iceberg_metadata(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.ends_with(".metadata.json"))
        })
    })
}

/// A directory met while listing below the root that is a table's root: refused, naming it
/// (read as plain files, a table's directory returns the rows it deleted or replaced).
fn refuse_nested_table(dir: &Path) -> Result<()> {
    let format = if dir.join("_delta_log").is_dir() {
        "a Delta Lake table (it has _delta_log/)"
    } else if has_iceberg_metadata(&dir.join("metadata")) {
        "an Apache Iceberg table (it has metadata/*.metadata.json)"
    } else {
        return Ok(());
    };
    Err(Error::unsupported(format!(
        "the listing holds {format} at {}: its Parquet files read as plain files would include \
         rows the table has deleted or replaced; open the table there instead",
        dir.display()
    )))
}

/// The object-store form of [`refuse_table`] and [`refuse_nested_table`], from the keys a
/// listing returned: a Delta log or Iceberg metadata at or below the listed prefix.
fn refuse_object_table(relative_keys: &[&str], location: &str) -> Result<()> {
    let found = relative_keys.iter().find_map(|k| {
        let parts: Vec<&str> = k.split('/').filter(|s| !s.is_empty()).collect();
        (0..parts.len().saturating_sub(1)).find_map(|i| {
            let format = match (parts[i], parts[i + 1]) {
                ("_delta_log", _) => "a Delta Lake table (it has _delta_log/)",
                ("metadata", n) if n.ends_with(".metadata.json") => {
                    "an Apache Iceberg table (it has metadata/*.metadata.json)"
                }
                _ => return None,
            };
            Some((format, parts[..i].join("/")))
        })
    });
    match found {
        Some((format, at)) => {
            let at = match at.is_empty() {
                true => String::new(),
                false => format!(" at {}/{at}", location.trim_end_matches('/')),
            };
            Err(Error::unsupported(format!(
                "{location} holds {format}{at}: its Parquet files read as plain objects would \
                 include rows the table has deleted or replaced; open the table's root \
                 (Delta) or its metadata file (Iceberg)"
            )))
        }
        None => Ok(()),
    }
}

/// Directories nested deeper than this are refused (not a dataset).
const MAX_DEPTH: usize = 64;

/// Directories visited at most in one listing: links that fan out to one directory again
/// and again (each a path of its own) would otherwise be walked exponentially often.
const MAX_DIRECTORIES: usize = 100_000;

/// Data files below `dir`. A directory reached through a symbolic link is listed under each
/// path that reaches it (`k=1` and `k=2` linked to one directory are two partitions), except
/// where it is one of its own ancestors (`ancestors`: canonical paths from the root down), a
/// loop that would never end.
fn collect_dir(
    dir: &Path,
    out: &mut Vec<PathBuf>,
    ancestors: &mut Vec<PathBuf>,
    visited: &mut usize,
) -> Result<()> {
    let canonical =
        std::fs::canonicalize(dir).map_err(|e| Error::from(e).in_file(dir.display()))?;
    if ancestors.contains(&canonical) {
        return Ok(());
    }
    *visited += 1;
    if ancestors.len() > MAX_DEPTH || *visited > MAX_DIRECTORIES {
        return Err(Error::invalid(format!(
            "more than {MAX_DEPTH} directories deep or {MAX_DIRECTORIES} in all below the root \
             (symbolic links that reach one directory many times?)"
        ))
        .in_file(dir.display()));
    }
    // A table below the listed root (a warehouse holding tables): its files are not rows.
    if !ancestors.is_empty() {
        refuse_nested_table(dir)?;
    }
    let entries = std::fs::read_dir(dir).map_err(|e| Error::from(e).in_file(dir.display()))?;
    ancestors.push(canonical);
    for entry in entries {
        let path = entry
            .map_err(|e| Error::from(e).in_file(dir.display()))?
            .path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !name.starts_with('.') && !name.starts_with('_') {
                collect_dir(&path, out, ancestors, visited)?;
            }
        } else if is_data_file(name) {
            out.push(path);
        }
    }
    ancestors.pop();
    Ok(())
}

/// The directory part of a glob before its first wildcard.
fn glob_root(pattern: &str) -> String {
    let first = pattern.find(['*', '?', '[']).unwrap_or(pattern.len());
    let dir_end = pattern[..first].rfind('/').unwrap_or(0);
    pattern[..dir_end].to_string()
}

/// The object key of a `scheme://bucket/key` URL, literally: the text after the bucket, not
/// percent-decoded (Spark escapes `:` in partition directories as the three characters `%3A`,
/// which are the key) and not cut at `#` or `?`. A key is a key, as Spark, pyarrow and the AWS
/// CLI take it; [`Store::url`] writes it back the same way, so a location listed here and
/// handed to an executor names the same object there. `None` when there is no `://`.
fn literal_key(location: &str) -> Option<&str> {
    let rest = &location[location.find("://")? + 3..];
    Some(rest.find('/').map_or("", |i| &rest[i + 1..]))
}

/// The store for a URL (built once per bucket and settings) and the object path it names.
pub(crate) fn store_for(
    location: &str,
    options: &StorageOptions,
) -> Result<(Arc<Store>, ObjectPath)> {
    let url =
        Url::parse(location).map_err(|e| Error::invalid(format!("bad URL {location}: {e}")))?;
    let (scheme, path) = ObjectStoreScheme::parse(&url)
        .map_err(|_| Error::invalid(format!("unsupported URL scheme in {location}")))?;
    let path = match (url.scheme(), literal_key(location)) {
        ("http" | "https", _) | (_, None) => path,
        (_, Some(key)) => ObjectPath::parse(key)
            .map_err(|e| Error::invalid(format!("bad object key in {location}: {e}")))?,
    };
    let base = match url.port() {
        Some(p) => format!("{}://{}:{p}", url.scheme(), url.host_str().unwrap_or("")),
        None => format!("{}://{}", url.scheme(), url.host_str().unwrap_or("")),
    };
    if matches!(scheme, ObjectStoreScheme::Local | ObjectStoreScheme::Memory) {
        return Err(Error::invalid(format!(
            "unsupported URL scheme '{}' (expected s3, gs, az, abfs, http or https)",
            url.scheme()
        )));
    }
    // Read on every call: a variable set since the last scan builds another store. (Variables
    // that are not Unicode are skipped, as `from_env` skips them.)
    let env = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
    let config = store_config(&scheme, &url, env, options)?;
    let tamis_options: Vec<_> = (options.0.iter())
        .filter(|(k, _)| TAMIS_KEYS.contains(&k.as_str()))
        .collect();
    let key = format!("{base}|{config:?}|{tamis_options:?}");
    if let Some(s) = store_cache()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&key)
    {
        return Ok((s.clone(), path));
    }
    let latency = options.tamis_number("latency_ms")?;
    let bandwidth = options.tamis_number("bandwidth_mb_per_s")?;
    let configured = (latency.is_some() || bandwidth.is_some()).then(|| IoProfile {
        first_byte_ns: latency.map_or(20_000_000, |ms| (ms * 1e6) as u64),
        bytes_per_sec: bandwidth.map_or(100_000_000, |mb| (mb * 1e6) as u64),
        concurrency: 1, // set by the store from its request limit
    });
    let max_requests = options
        .tamis_number("max_requests")?
        .map(|n| (n as usize).max(1));
    let connect = {
        let base = base.clone();
        move || build_store(&scheme, &url, &base, &config)
    };
    let store = Arc::new(Store::new(
        Box::new(connect),
        base,
        max_requests,
        configured,
    )?);
    store_cache()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, store.clone());
    Ok((store, path))
}

/// Parses a setting's key as `scheme`'s builder does; returns its one name (`endpoint`,
/// `aws_endpoint_url` and `aws_endpoint` are one setting, `aws_endpoint`), or `None` for a
/// key that builder does not know.
fn setting(scheme: &ObjectStoreScheme, key: &str) -> Option<String> {
    use object_store::{aws, azure, gcp, ClientConfigKey};
    fn name<K: std::str::FromStr + AsRef<str>>(key: &str) -> Option<String> {
        key.parse::<K>().ok().map(|k| k.as_ref().to_string())
    }
    match scheme {
        ObjectStoreScheme::AmazonS3 => name::<aws::AmazonS3ConfigKey>(key),
        ObjectStoreScheme::GoogleCloudStorage => name::<gcp::GoogleConfigKey>(key),
        ObjectStoreScheme::MicrosoftAzure => name::<azure::AzureConfigKey>(key),
        _ => name::<ClientConfigKey>(key),
    }
}

/// The settings a store is built with, by their one name: tamis's bounded timeouts, then the
/// standard environment, then the options; a later source wins for the same setting.
///
/// The environment is read as the builders' `from_env` reads it (every `AWS_*`, `GOOGLE_*` or
/// `AZURE_*` variable that names a setting, GCS's `SERVICE_ACCOUNT`, Azure's
/// `IDENTITY_ENDPOINT`), but here, so that it is merged with the rest: `from_env` followed by
/// our client options lost its client settings (`AWS_ALLOW_HTTP` among them), and a test can
/// pass the environment as a list instead of changing the process's. A plain-HTTP endpoint
/// (a local MinIO, a test server), from either source, allows HTTP unless `allow_http` is set.
fn store_config(
    scheme: &ObjectStoreScheme,
    url: &Url,
    env: impl IntoIterator<Item = (String, String)>,
    options: &StorageOptions,
) -> Result<BTreeMap<String, String>> {
    let mut config = BTreeMap::new();
    // Bounded: a dead endpoint fails in seconds.
    config.insert("connect_timeout".to_string(), "5s".to_string());
    config.insert("timeout".to_string(), "30s".to_string());
    let prefix = match scheme {
        ObjectStoreScheme::AmazonS3 => "AWS_",
        ObjectStoreScheme::GoogleCloudStorage => "GOOGLE_",
        ObjectStoreScheme::MicrosoftAzure => "AZURE_",
        _ => "",
    };
    // In `from_env`'s order: `SERVICE_ACCOUNT` before the prefixed variables,
    // `IDENTITY_ENDPOINT` after them.
    let (mut first, mut from_env, mut last) = (None, Vec::new(), None);
    for (var, value) in env {
        match (scheme, var.as_str()) {
            (ObjectStoreScheme::GoogleCloudStorage, "SERVICE_ACCOUNT") => {
                first = Some(("service_account".to_string(), value))
            }
            (ObjectStoreScheme::MicrosoftAzure, "IDENTITY_ENDPOINT") => {
                last = Some(("msi_endpoint".to_string(), value))
            }
            _ if !prefix.is_empty() && var.starts_with(prefix) => {
                from_env.push((var.to_ascii_lowercase(), value))
            }
            _ => {}
        }
    }
    for (key, value) in first.into_iter().chain(from_env).chain(last) {
        if let Some(name) = setting(scheme, &key) {
            config.insert(name, value);
        }
    }
    for (key, value) in &options.0 {
        // tamis's own settings, and an Iceberg catalog's properties (`iceberg.token`).
        if TAMIS_KEYS.contains(&key.as_str()) || key.starts_with("iceberg.") {
            continue;
        }
        let name = setting(scheme, &key.to_ascii_lowercase()).ok_or_else(|| {
            Error::invalid(format!(
                "unknown storage option '{key}' for {}",
                url.scheme()
            ))
        })?;
        config.insert(name, value.clone());
    }
    let endpoints: &[&str] = match scheme {
        ObjectStoreScheme::AmazonS3 => &["aws_endpoint", "aws_endpoint_url_s3"],
        ObjectStoreScheme::GoogleCloudStorage => &["google_base_url"],
        ObjectStoreScheme::MicrosoftAzure => &["azure_storage_endpoint"],
        _ => &[],
    };
    let endpoint_is_http = endpoints.iter().any(|k| {
        config
            .get(*k)
            .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("http://"))
    });
    if endpoint_is_http || url.scheme() == "http" {
        config
            .entry("allow_http".to_string())
            .or_insert_with(|| "true".to_string());
    }
    Ok(config)
}

/// A client for the store (`base` names it in errors) with the settings of [`store_config`].
fn build_store(
    scheme: &ObjectStoreScheme,
    url: &Url,
    base: &str,
    config: &BTreeMap<String, String>,
) -> Result<Arc<dyn ObjectStore>> {
    // Throttling and 5xx are retried a few times, within bounds.
    let retry = RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            base: 2.0,
        },
        max_retries: 3,
        retry_timeout: Duration::from_secs(20),
    };
    let bad_key = |k: &str| Error::invalid(format!("unknown storage option '{k}' for {base}"));
    macro_rules! build {
        ($builder:expr, $url:expr) => {{
            let mut b = $builder.with_url($url).with_retry(retry);
            for (k, v) in config {
                b = b.with_config(k.parse().map_err(|_| bad_key(k))?, v);
            }
            Arc::new(b.build().map_err(|e| store_error(e, base))?)
        }};
    }
    let store: Arc<dyn ObjectStore> = match scheme {
        ObjectStoreScheme::AmazonS3 => {
            build!(object_store::aws::AmazonS3Builder::new(), url.as_str())
        }
        ObjectStoreScheme::GoogleCloudStorage => build!(
            object_store::gcp::GoogleCloudStorageBuilder::new(),
            url.as_str()
        ),
        ObjectStoreScheme::MicrosoftAzure => build!(
            object_store::azure::MicrosoftAzureBuilder::new(),
            url.as_str()
        ),
        ObjectStoreScheme::Http => build!(object_store::http::HttpBuilder::new(), base),
        _ => {
            return Err(Error::invalid(format!(
                "unsupported URL scheme '{}' (expected s3, gs, az, abfs, http or https)",
                url.scheme()
            )))
        }
    };
    Ok(store)
}

fn list_object(location: &str, options: &StorageOptions) -> Result<Located> {
    let wildcard = location.find(['*', '?', '[']);
    // The part of the URL that names a store and a literal prefix.
    let literal = match wildcard {
        Some(i) => &location[..location[..i].rfind('/').unwrap_or(i)],
        None => location,
    };
    let (store, path) = store_for(literal, options)?;
    let name = path.filename().unwrap_or("");
    if wildcard.is_none() && name.ends_with(".metadata.json") {
        return Ok(Located::Table(location.to_string(), TableFormat::Iceberg));
    }
    // One object named outright: no listing request.
    if wildcard.is_none() && !location.ends_with('/') && name.ends_with(".parquet") {
        return Ok(Located::Files(Listing {
            files: vec![FileRef::Object {
                store,
                path,
                size: None,
            }],
            root: None,
        }));
    }
    let prefix = (!path.as_ref().is_empty()).then_some(&path);
    let client = store.client()?;
    let metas: Vec<object_store::ObjectMeta> = runtime()
        .block_on(client.inner.list(prefix).try_collect())
        .map_err(|e| store_error(e, location))?;
    let pattern = match wildcard {
        Some(_) => {
            let pat = location
                .strip_prefix(&format!("{}/", store.base))
                .unwrap_or(location);
            Some(
                glob::Pattern::new(pat)
                    .map_err(|e| Error::invalid(format!("bad glob {location}: {e}")))?,
            )
        }
        None => None,
    };
    let relative: Vec<&str> = metas
        .iter()
        .map(|m| {
            let p = m.location.as_ref();
            p.strip_prefix(path.as_ref()).unwrap_or(p)
        })
        .collect();
    if wildcard.is_none() {
        let delta = (relative.iter()).any(|k| k.trim_start_matches('/').starts_with("_delta_log/"));
        let iceberg = relative.iter().any(|k| {
            let mut parts = k.split('/').filter(|s| !s.is_empty());
            matches!((parts.next(), parts.next(), parts.next()),
                (Some("metadata"), Some(n), None) if n.ends_with(".metadata.json"))
        });
        if let Some(table) = table_root(location, delta, iceberg)? {
            return Ok(table);
        }
    }
    refuse_object_table(&relative, location)?;
    let mut files: Vec<(ObjectPath, u64)> = metas
        .into_iter()
        .map(|m| (m.location, m.size))
        .filter(|(p, _)| {
            let rel = p.as_ref().strip_prefix(path.as_ref()).unwrap_or(p.as_ref());
            let hidden = rel
                .split('/')
                .filter(|s| !s.is_empty())
                .any(|s| s.starts_with('.') || s.starts_with('_'));
            !hidden && p.filename().is_some_and(is_data_file)
        })
        .filter(|(p, _)| pattern.as_ref().is_none_or(|g| g.matches(p.as_ref())))
        .collect();
    files.sort();
    if files.is_empty() {
        let mut err = Error::new(
            ErrorKind::Io,
            if wildcard.is_some() {
                "no objects match"
            } else {
                "no such object, and no *.parquet objects below this prefix"
            },
        );
        err.io_kind = Some(std::io::ErrorKind::NotFound);
        return Err(err.in_file(location));
    }
    Ok(Located::Files(Listing {
        files: files
            .into_iter()
            .map(|(path, size)| FileRef::Object {
                store: store.clone(),
                path,
                size: Some(size),
            })
            .collect(),
        root: Some(store.url(&path).trim_end_matches('/').to_string()),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::ObjectStoreExt;

    #[test]
    fn glob_roots() {
        assert_eq!(glob_root("data/*.parquet"), "data");
        assert_eq!(glob_root("data/year=*/x.parquet"), "data");
        assert_eq!(glob_root("*.parquet"), "");
    }

    #[test]
    fn data_files() {
        assert!(is_data_file("part-0.parquet"));
        assert!(!is_data_file("_SUCCESS"));
        assert!(!is_data_file("_metadata.parquet"));
        assert!(!is_data_file(".part-0.parquet.crc"));
        assert!(!is_data_file("notes.txt"));
    }

    #[test]
    fn options_are_checked() {
        let bad = StorageOptions::new().with("no_such_option", "1");
        let e = store_for("s3://bucket/x.parquet", &bad).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e.to_string().contains("no_such_option"), "{e}");
        let bad = StorageOptions::new().with("latency_ms", "soon");
        assert!(store_for("s3://bucket/x.parquet", &bad).is_err());
        let e = list("ftp://host/x.parquet", &StorageOptions::new()).unwrap_err();
        assert!(e.to_string().contains("ftp"), "{e}");
    }

    fn config_of(
        location: &str,
        env: &[(&str, &str)],
        options: &[(&str, &str)],
    ) -> Result<BTreeMap<String, String>> {
        let url = Url::parse(location).unwrap();
        let (scheme, _) = ObjectStoreScheme::parse(&url).unwrap();
        let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        store_config(&scheme, &url, env, &options.iter().copied().collect())
    }

    /// The standard environment configures every store, as each builder's `from_env` reads it;
    /// the options win; tamis's timeouts give way to either.
    #[test]
    fn environment_and_options_merge() {
        let env = [
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:9000"),
            ("AWS_ALLOW_HTTP", "true"),
            ("AWS_REGION", "eu-west-3"),
            ("AWS_TIMEOUT", "90s"),
            ("AWS_PROFILE", "not a setting"),
            ("GOOGLE_BUCKET", "elsewhere"),
            ("PATH", "/bin"),
        ];
        let c = config_of("s3://b/x.parquet", &env, &[]).unwrap();
        let want: BTreeMap<String, String> = [
            ("allow_http", "true"),
            ("aws_endpoint", "http://127.0.0.1:9000"),
            ("aws_region", "eu-west-3"),
            ("connect_timeout", "5s"),
            ("timeout", "90s"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(c, want);
        // The options win, under any of a setting's names.
        let c = config_of(
            "s3://b/x.parquet",
            &env,
            &[("endpoint", "https://minio:9000"), ("Region", "us-east-1")],
        )
        .unwrap();
        assert_eq!(c["aws_endpoint"], "https://minio:9000");
        assert_eq!(c["aws_region"], "us-east-1");
        // Each scheme reads its own variables, and its builder's extra ones.
        let env = [
            ("SERVICE_ACCOUNT", "/a.json"),
            ("GOOGLE_SERVICE_ACCOUNT", "/b.json"),
            ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
            ("AZURE_MSI_ENDPOINT", "http://a"),
            ("IDENTITY_ENDPOINT", "http://b"),
            ("AWS_REGION", "eu-west-3"),
        ];
        let gs = config_of("gs://b/x.parquet", &env, &[]).unwrap();
        assert_eq!(gs["google_service_account"], "/b.json");
        assert!(!gs.contains_key("aws_region") && !gs.contains_key("allow_http"));
        let az = config_of("az://c/x.parquet", &env, &[]).unwrap();
        assert_eq!(az["azure_storage_account_name"], "acct");
        assert_eq!(az["azure_msi_endpoint"], "http://b");
        // A metadata endpoint on plain HTTP (as they are) does not allow HTTP for the store.
        assert!(!az.contains_key("allow_http"), "{az:?}");
        let gs = config_of("gs://b/x.parquet", &[("SERVICE_ACCOUNT", "/a.json")], &[]).unwrap();
        assert_eq!(gs["google_service_account"], "/a.json");
    }

    /// A plain-HTTP endpoint, from the environment or the options, allows HTTP unless
    /// `allow_http` says otherwise.
    #[test]
    fn http_endpoints_allow_http() {
        let http = [("AWS_ENDPOINT_URL", "http://127.0.0.1:9000")];
        let c = config_of("s3://b/x.parquet", &http, &[]).unwrap();
        assert_eq!(c["allow_http"], "true");
        let c = config_of("s3://b/x.parquet", &http, &[("allow_http", "false")]).unwrap();
        assert_eq!(c["allow_http"], "false");
        let option = [("endpoint", "http://127.0.0.1:9000")];
        let c = config_of("s3://b/x.parquet", &[("AWS_ALLOW_HTTP", "false")], &option).unwrap();
        assert_eq!(c["allow_http"], "false");
        let c = config_of("s3://b/x.parquet", &[], &option).unwrap();
        assert_eq!(c["allow_http"], "true");
        let https = [("AWS_ENDPOINT_URL", "https://s3.example")];
        let c = config_of("s3://b/x.parquet", &https, &[]).unwrap();
        assert!(!c.contains_key("allow_http"));
        let c = config_of(
            "s3://b/x.parquet",
            &[("AWS_METADATA_ENDPOINT", "http://x")],
            &[],
        );
        assert!(!c.unwrap().contains_key("allow_http"));
        let c = config_of(
            "gs://b/x.parquet",
            &[("GOOGLE_BASE_URL", "http://gcs:4443")],
            &[],
        );
        assert_eq!(c.unwrap()["allow_http"], "true");
        let c = config_of(
            "http://host:8000/x.parquet",
            &[("AWS_ALLOW_HTTP", "false")],
            &[],
        );
        assert_eq!(c.unwrap()["allow_http"], "true");
    }

    /// Built from the environment alone, a store sends its requests to the plain-HTTP endpoint
    /// (a dead port here: a connection error), not refusing it as "URL scheme is not allowed".
    #[test]
    fn a_store_configured_by_the_environment_reaches_its_endpoint() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let env = [
            ("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}")),
            ("AWS_ALLOW_HTTP", "true".to_string()),
            ("AWS_ACCESS_KEY_ID", "k".to_string()),
            ("AWS_SECRET_ACCESS_KEY", "s".to_string()),
            ("AWS_REGION", "us-east-1".to_string()),
        ];
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let url = Url::parse("s3://b/x.parquet").unwrap();
        let config = config_of(url.as_str(), &env, &[]).unwrap();
        let store = build_store(&ObjectStoreScheme::AmazonS3, &url, "s3://b", &config).unwrap();
        let e = runtime()
            .block_on(store.head(&ObjectPath::from("x.parquet")))
            .unwrap_err();
        let e = store_error(e, "s3://b/x.parquet").to_string();
        assert!(!e.contains("not allowed"), "{e}");
        assert!(e.contains("s3://b/x.parquet"), "{e}");
    }

    #[test]
    fn local_directories_skip_hidden_and_marker_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("k=1")).unwrap();
        std::fs::create_dir_all(root.join("_tmp")).unwrap();
        for f in [
            "k=1/a.parquet",
            "b.parquet",
            "_SUCCESS",
            "_tmp/c.parquet",
            ".d.parquet",
        ] {
            std::fs::write(root.join(f), b"x").unwrap();
        }
        let listing = list(root.to_str().unwrap(), &StorageOptions::new()).unwrap();
        let rel: Vec<String> = listing
            .files
            .iter()
            .map(|f| listing.relative(f).unwrap())
            .collect();
        assert_eq!(rel, ["b.parquet", "k=1/a.parquet"]);
    }

    /// Two links back to the root at every level: without the visited set, 2^64 walks.
    #[test]
    fn symbolic_link_loops_end_and_links_are_paths() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("k=1")).unwrap();
        std::fs::write(root.join("k=1/a.parquet"), b"x").unwrap();
        std::os::unix::fs::symlink(root, root.join("k=1/loop")).unwrap();
        std::os::unix::fs::symlink(root, root.join("k=1/loop2")).unwrap();
        // A second partition linked to the same directory is a partition of its own.
        std::os::unix::fs::symlink(root.join("k=1"), root.join("k=2")).unwrap();
        let start = std::time::Instant::now();
        let listing = list(root.to_str().unwrap(), &StorageOptions::default()).unwrap();
        assert!(start.elapsed().as_secs() < 5);
        let found: Vec<String> = (listing.files.iter())
            .map(|f| listing.relative(f).unwrap())
            .collect();
        assert_eq!(found, ["k=1/a.parquet", "k=2/a.parquet"]);
    }

    #[test]
    fn links_fanning_out_are_bounded() {
        // Two links per level to the next level: 2^30 paths, refused instead of walked.
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for i in 0..30 {
            std::fs::create_dir(root.join(format!("d{i}"))).unwrap();
        }
        std::fs::write(root.join("d29/a.parquet"), b"x").unwrap();
        for i in 0..29 {
            for link in ["x", "y"] {
                let next = root.join(format!("d{}", i + 1));
                std::os::unix::fs::symlink(next, root.join(format!("d{i}/{link}"))).unwrap();
            }
        }
        let start = std::time::Instant::now();
        let e = list(
            root.join("d0").to_str().unwrap(),
            &StorageOptions::default(),
        )
        .unwrap_err();
        assert!(start.elapsed().as_secs() < 30);
        assert!(e.to_string().contains("symbolic links"), "{e}");
    }

    #[test]
    fn object_keys_are_taken_literally() {
        let opts = StorageOptions::new().with("region", "us-east-1");
        for key in [
            "ts=2024-01-01 00%3A00%3A00/part-0.parquet",
            "a#b/c?d=e/f.parquet",
            "k=ü 1/%25/x:y=z.parquet",
        ] {
            let url = format!("s3://bucket/{key}");
            let (store, path) = store_for(&url, &opts).unwrap();
            assert_eq!(path.as_ref(), key);
            // Written back and read again: the same object.
            assert_eq!(store.url(&path), url);
            assert_eq!(store_for(&store.url(&path), &opts).unwrap().1, path);
        }
    }

    #[test]
    fn table_directories_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let delta = dir.path().join("delta");
        std::fs::create_dir_all(delta.join("_delta_log")).unwrap();
        std::fs::create_dir_all(delta.join("p=1")).unwrap();
        std::fs::write(delta.join("p=1/part-0.parquet"), b"x").unwrap();
        std::fs::write(delta.join("part-1.parquet"), b"x").unwrap();
        let iceberg = dir.path().join("ice");
        std::fs::create_dir_all(iceberg.join("metadata")).unwrap();
        std::fs::create_dir_all(iceberg.join("data")).unwrap();
        std::fs::write(iceberg.join("metadata/v1.metadata.json"), b"{}").unwrap();
        std::fs::write(iceberg.join("data/part-0.parquet"), b"x").unwrap();
        let opts = StorageOptions::default();
        for (path, format) in [
            (delta.clone(), "Delta Lake"),
            (delta.join("p=1"), "Delta Lake"),
            (delta.join("*.parquet"), "Delta Lake"),
            (iceberg.clone(), "Iceberg"),
            (iceberg.join("data"), "Iceberg"),
        ] {
            let e = list(path.to_str().unwrap(), &opts).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
            assert!(e.to_string().contains(format), "{e}");
        }
        // A table's root (or an Iceberg metadata file) is a table (what is inside it is not a
        // dataset).
        for (path, format) in [
            (delta.clone(), TableFormat::Delta),
            (iceberg.clone(), TableFormat::Iceberg),
            (
                iceberg.join("metadata/v1.metadata.json"),
                TableFormat::Iceberg,
            ),
        ] {
            match locate(path.to_str().unwrap(), &opts).unwrap() {
                Located::Table(_, f) => assert_eq!(f, format),
                Located::Files(_) => panic!("{} listed as files", path.display()),
            }
        }
        assert!(locate(delta.join("p=1").to_str().unwrap(), &opts).is_err());
        assert!(locate(iceberg.join("data").to_str().unwrap(), &opts).is_err());
        // Both formats' metadata (Delta UniForm): the user says which.
        std::fs::create_dir_all(delta.join("metadata")).unwrap();
        std::fs::write(delta.join("metadata/v1.metadata.json"), b"{}").unwrap();
        let e = locate(delta.to_str().unwrap(), &opts).err().unwrap();
        assert!(e.to_string().contains("--table-format"), "{e}");
        // A file named outright is the user's choice; a plain directory is a dataset.
        assert!(list(delta.join("part-1.parquet").to_str().unwrap(), &opts).is_ok());
        std::fs::create_dir_all(dir.path().join("plain/metadata")).unwrap();
        std::fs::write(dir.path().join("plain/a.parquet"), b"x").unwrap();
        assert!(list(dir.path().join("plain").to_str().unwrap(), &opts).is_ok());
    }
}
