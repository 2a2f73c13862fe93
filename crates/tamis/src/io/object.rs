//! Objects in S3, GCS, Azure Blob Storage or behind HTTP(S), through the `object_store` crate.
//!
//! Requests are planned for latency: opening a file is one suffix request (size, ETag and the
//! footer — usually the page index too — in one round trip); every later read carries the ETag
//! seen then (`If-Match`), so an object replaced mid-scan is an error, never mixed rows. The
//! source measures its own first-byte latency and bandwidth; their product is the coalescing
//! gap. Requests in flight are bounded per store, retried with backoff on throttling, 5xx and
//! timeouts (the crate's retry policy, with bounded totals), and none is issued after the scan
//! is cancelled.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::stream::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};

use super::{ByteSource, Identity, IoProfile};
use crate::error::{Error, ErrorKind, Result};

/// Before any request is measured: a typical object store's first byte and one stream's rate.
const DEFAULT_PROFILE: IoProfile = IoProfile {
    first_byte_ns: 20_000_000,
    bytes_per_sec: 100_000_000,
    concurrency: DEFAULT_MAX_REQUESTS as u64,
};

/// Requests in flight per store unless `max_requests` says otherwise.
const DEFAULT_MAX_REQUESTS: usize = 16;

/// The runtime object_store's HTTP client runs on; scans block on it from their own threads.
///
/// One per process: a child made by `fork` (Python's `multiprocessing`) inherits the parent's
/// runtime but not its threads, and a request on it would wait forever. The child starts its
/// own; the parent's is left alone (shutting it down would wait for threads that are not
/// there).
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: Mutex<Option<(u32, &'static tokio::runtime::Runtime)>> = Mutex::new(None);
    let mut slot = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    let here = std::process::id();
    match *slot {
        Some((pid, runtime)) if pid == here => runtime,
        _ => {
            let runtime = Box::leak(Box::new(
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("tamis-io")
                    .enable_all()
                    .build()
                    .expect("cannot start the I/O runtime"),
            ));
            *slot = Some((here, runtime));
            runtime
        }
    }
}

/// Builds a store's client (from its URL and settings, fixed when the store was made).
pub(crate) type Connect = Box<dyn Fn() -> Result<Arc<dyn ObjectStore>> + Send + Sync>;

/// One bucket (or HTTP host) with its client, request limit and measured costs; shared by every
/// object read from it.
pub struct Store {
    connect: Connect,
    /// The client and request limit of the process that built them.
    client: Mutex<Client>,
    /// `scheme://bucket`, to name objects in errors.
    pub(crate) base: String,
    max_requests: usize,
    configured: Option<IoProfile>,
    measured: Mutex<Measured>,
}

/// What a store holds that does not survive `fork`: the HTTP client's pooled connections are
/// driven by the parent's runtime (and share its sockets), and permits held by the parent's
/// requests would never come back.
#[derive(Clone)]
pub(crate) struct Client {
    pid: u32,
    pub(crate) inner: Arc<dyn ObjectStore>,
    limit: Arc<tokio::sync::Semaphore>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("base", &self.base)
            .field("max_requests", &self.max_requests)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct Measured {
    first_byte_ns: Option<f64>,
    bytes_per_sec: Option<f64>,
}

impl Store {
    /// Builds the client now, so that bad settings are an error here rather than at the first
    /// read.
    pub(crate) fn new(
        connect: Connect,
        base: String,
        max_requests: Option<usize>,
        configured: Option<IoProfile>,
    ) -> Result<Self> {
        let max_requests = max_requests.unwrap_or(DEFAULT_MAX_REQUESTS).max(1);
        let client = Client {
            pid: std::process::id(),
            inner: connect()?,
            limit: Arc::new(tokio::sync::Semaphore::new(max_requests)),
        };
        Ok(Store {
            connect,
            client: Mutex::new(client),
            base,
            max_requests,
            configured: configured.map(|p| IoProfile {
                concurrency: max_requests as u64,
                ..p
            }),
            measured: Mutex::new(Measured::default()),
        })
    }

    /// This process's client: in a child made by `fork`, a new one. The parent's is forgotten,
    /// not dropped: dropping its connections would take their sockets out of the parent's
    /// runtime's epoll set, which the child shares.
    pub(crate) fn client(&self) -> Result<Client> {
        let mut client = self.client.lock().unwrap_or_else(|e| e.into_inner());
        let here = std::process::id();
        if client.pid != here {
            let fresh = Client {
                pid: here,
                inner: (self.connect)()?,
                limit: Arc::new(tokio::sync::Semaphore::new(self.max_requests)),
            };
            std::mem::forget(std::mem::replace(&mut *client, fresh));
        }
        Ok(client.clone())
    }

    pub fn url(&self, path: &ObjectPath) -> String {
        format!("{}/{}", self.base, path)
    }

    /// Configured costs, else measured ones, else the defaults.
    pub fn profile(&self) -> IoProfile {
        if let Some(p) = self.configured {
            return p;
        }
        let m = self.measured.lock().unwrap_or_else(|e| e.into_inner());
        IoProfile {
            first_byte_ns: m
                .first_byte_ns
                .map_or(DEFAULT_PROFILE.first_byte_ns, |v| v as u64),
            bytes_per_sec: m
                .bytes_per_sec
                .map_or(DEFAULT_PROFILE.bytes_per_sec, |v| v as u64),
            concurrency: self.max_requests as u64,
        }
    }

    fn record(&self, first_byte: Duration, total: Duration, bytes: usize) {
        let mut m = self.measured.lock().unwrap_or_else(|e| e.into_inner());
        let ewma = |old: Option<f64>, new: f64| Some(old.map_or(new, |o| 0.8 * o + 0.2 * new));
        m.first_byte_ns = ewma(m.first_byte_ns, first_byte.as_nanos() as f64);
        // Only large responses say anything about bandwidth.
        let body = total.saturating_sub(first_byte);
        if bytes >= 256 << 10 && !body.is_zero() {
            m.bytes_per_sec = ewma(m.bytes_per_sec, bytes as f64 / body.as_secs_f64());
        }
    }

    /// One GET (of `range`, or a suffix), bounded by the store's request limit.
    async fn get(
        &self,
        path: &ObjectPath,
        range: GetRange,
        etag: Option<&str>,
        cancel: &AtomicBool,
    ) -> Result<(object_store::ObjectMeta, Bytes)> {
        let client = self.client()?;
        let _permit = client
            .limit
            .acquire()
            .await
            .map_err(|_| Error::internal("request limiter closed"))?;
        if cancel.load(Relaxed) {
            return Err(super::cancelled());
        }
        let started = Instant::now();
        let options = GetOptions {
            range: Some(range),
            if_match: etag.map(str::to_string),
            ..GetOptions::default()
        };
        let result = client
            .inner
            .get_opts(path, options)
            .await
            .map_err(|e| store_error(e, &self.url(path)))?;
        let first_byte = started.elapsed();
        let meta = result.meta.clone();
        let bytes = result
            .bytes()
            .await
            .map_err(|e| store_error(e, &self.url(path)))?;
        self.record(first_byte, started.elapsed(), bytes.len());
        Ok((meta, bytes))
    }
}

/// Writes a whole object (a sidecar index: small, one PUT).
pub(crate) fn put(store: &Store, path: &ObjectPath, bytes: Vec<u8>) -> Result<()> {
    let client = store.client()?;
    runtime()
        .block_on(client.inner.put(path, bytes.into()))
        .map(|_| ())
        .map_err(|e| store_error(e, &store.url(path)))
}

/// Maps an object_store error to a tamis error naming the URL.
pub(crate) fn store_error(e: object_store::Error, url: &str) -> Error {
    use object_store::Error as E;
    let (kind, io_kind, message) = match &e {
        E::NotFound { .. } => (
            ErrorKind::Io,
            Some(std::io::ErrorKind::NotFound),
            "no such object".to_string(),
        ),
        E::Precondition { .. } => (
            ErrorKind::Io,
            None,
            "the object changed during the scan (its ETag differs from when it was opened)"
                .to_string(),
        ),
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => (
            ErrorKind::Io,
            Some(std::io::ErrorKind::PermissionDenied),
            format!("access denied: {}", one_line(&e)),
        ),
        E::UnknownConfigurationKey { key, .. } => (
            ErrorKind::InvalidArgument,
            None,
            format!("unknown storage option '{key}'"),
        ),
        _ => (ErrorKind::Io, None, one_line(&e)),
    };
    let mut err = Error::new(kind, message);
    err.io_kind = io_kind;
    err.in_file(url)
}

/// An error and its sources on one line.
fn one_line(e: &object_store::Error) -> String {
    let mut out = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out.replace('\n', " ")
}

/// An object, pinned to the version (ETag) seen when it was opened.
#[derive(Debug)]
pub(crate) struct ObjectSource {
    store: Arc<Store>,
    path: ObjectPath,
    location: String,
    identity: Identity,
}

impl ObjectSource {
    /// `path` as opened before (its identity known): no request. Every read still carries
    /// `If-Match` with the ETag, so a changed object is an error.
    pub(crate) fn known(store: Arc<Store>, path: ObjectPath, identity: Identity) -> Self {
        ObjectSource {
            location: store.url(&path),
            store,
            path,
            identity,
        }
    }

    /// Opens `path` with one request: its last `tail` bytes, which also give its size and ETag.
    /// Returns the source and the tail (the whole object when it is smaller).
    pub(crate) fn open(store: Arc<Store>, path: ObjectPath, tail: u64) -> Result<(Self, Bytes)> {
        let location = store.url(&path);
        let never = AtomicBool::new(false);
        let (meta, bytes) =
            runtime().block_on(store.get(&path, GetRange::Suffix(tail.max(1)), None, &never))?;
        if bytes.len() as u64 > meta.size {
            return Err(Error::corrupt(format!(
                "the store returned {} bytes of a {}-byte object",
                bytes.len(),
                meta.size
            ))
            .in_file(&location));
        }
        let identity = Identity {
            len: meta.size,
            etag: meta.e_tag.clone(),
            modified_ns: meta.last_modified.timestamp_nanos_opt(),
            stamp: None,
        };
        Ok((
            ObjectSource {
                store,
                path,
                location,
                identity,
            },
            bytes,
        ))
    }
}

impl ByteSource for ObjectSource {
    fn location(&self) -> &str {
        &self.location
    }

    fn identity(&self) -> &Identity {
        &self.identity
    }

    fn read_ranges(&self, ranges: &[Range<u64>], cancel: &AtomicBool) -> Result<Vec<Bytes>> {
        let etag = self.identity.etag.as_deref();
        let store = &self.store;
        let path = &self.path;
        let requests = ranges.iter().map(|r| async move {
            let (meta, bytes) = store
                .get(path, GetRange::Bounded(r.clone()), etag, cancel)
                .await?;
            // Stores that ignore If-Match still report the version they served.
            if meta.e_tag.is_some() && meta.e_tag.as_deref() != etag {
                return Err(Error::new(
                    ErrorKind::Io,
                    "the object changed during the scan (its ETag differs from when it was opened)",
                )
                .in_file(store.url(path)));
            }
            Ok::<Bytes, Error>(bytes)
        });
        runtime().block_on(
            futures::stream::iter(requests)
                .buffered(ranges.len().max(1))
                .try_collect(),
        )
    }

    fn profile(&self) -> IoProfile {
        self.store.profile()
    }

    fn is_remote(&self) -> bool {
        true
    }
}

/// Stores already built, by URL base and options: scans of one bucket share a connection pool
/// and the measured costs.
pub(crate) fn store_cache() -> &'static Mutex<HashMap<String, Arc<Store>>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Store>>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}
