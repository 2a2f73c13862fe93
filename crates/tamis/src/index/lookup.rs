//! Where a data file's sidecar lives (beside it, or in an index directory), looking it up, and
//! writing it atomically.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, ErrorKind, Result};
use crate::file::OpenedFile;
use crate::io::location::FileRef;
use crate::io::Reader;

use object_store::path::Path as ObjectPath;

use super::{DataFileIdentity, Sidecar, SIDECAR_SUFFIX};

/// What a scan found beside a data file.
#[derive(Debug, Clone)]
pub(crate) enum SidecarState {
    /// No sidecar, or not looked for.
    Absent,
    /// A sidecar built for another version of the file: not used.
    Stale,
    /// The store refused the lookup: read as absent (see [`Lookup::Denied`]).
    Denied,
    Usable(Arc<Sidecar>),
}

/// The sidecar index of an opened file, looked for once per file and directory: usable only if
/// built for this very file (length, footer hash, and mtime or ETag), else `Stale`. A sidecar
/// that cannot be parsed is an error naming it — never a silent fallback that would hide a
/// broken deployment.
pub(crate) fn sidecar_of(
    file: &OpenedFile,
    reader: &Reader,
    dir: Option<&Path>,
) -> Result<SidecarState> {
    /// What the file keeps: the directory looked in (`None`: beside the file) and the finding
    /// (a sidecar that cannot be read is kept as its error: every row group reports it, none
    /// reads it again).
    type Found = (Option<std::path::PathBuf>, Result<SidecarState>);
    let kept = || file.sidecar.get().and_then(|k| k.downcast_ref::<Found>());
    if let Some((d, s)) = kept() {
        if d.as_deref() == dir {
            return s.clone();
        }
    }
    // One lookup at a time; a row group that waited finds the first one's answer (or, when
    // the scan was cancelled meanwhile, sends nothing). Only the first directory's answer is
    // kept: scans of one opened file with another `index_dir` look each time.
    let _one = file
        .sidecar_lookup
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some((d, s)) = kept() {
        if d.as_deref() == dir {
            return s.clone();
        }
    }
    reader.check_cancelled()?;
    let keep = |state: Result<SidecarState>| {
        // The first directory asked for is kept; another one (a second scan of a cached file
        // with another `index_dir`) is read each time.
        let found: Found = (dir.map(|d| d.to_path_buf()), state.clone());
        let _ = file.sidecar.set(Box::new(found));
        state
    };
    let rows: Vec<u64> = (file.metadata.row_groups().iter())
        .map(|rg| rg.num_rows().max(0) as u64)
        .collect();
    // Opens sent with the file's own (beside it: an index directory is looked in now).
    let sent = (file.sidecar_opens.lock())
        .map(|mut o| o.take())
        .unwrap_or_else(|e| e.into_inner().take())
        .and_then(|b| b.downcast::<SidecarOpens>().ok())
        .filter(|_| dir.is_none());
    let lookup = open_sidecar_with(&file.file, dir, &rows, file.leaves.len(), sent.map(|b| *b));
    if file.file.is_remote() && dir.is_none() {
        // Both names beside the object were asked for at once (an index directory is local).
        crate::metrics::add(&reader.stats().requests, 2);
    }
    let lookup = match lookup {
        Ok(lookup) => lookup,
        Err(e) if matches!(e.kind, ErrorKind::CorruptFile | ErrorKind::Unsupported) => {
            return keep(Err(e));
        }
        Err(e) => return Err(e), // an I/O error may pass: looked for again
    };
    let state = match lookup {
        Lookup::Absent => SidecarState::Absent,
        Lookup::Denied(_) => SidecarState::Denied,
        Lookup::Found(sidecar) => {
            let (bytes, requests) = sidecar.open_cost;
            crate::metrics::add(&reader.stats().bytes, bytes);
            crate::metrics::add(&reader.stats().requests, requests);
            let id = file.source.identity();
            let own = DataFileIdentity::of(reader, id.etag.clone(), id.modified_ns)?;
            if sidecar.identity.as_ref().is_some_and(|i| i.matches(&own)) {
                SidecarState::Usable(Arc::from(sidecar))
            } else {
                SidecarState::Stale
            }
        }
    };
    keep(Ok(state))
}

/// The sidecar name of a data file named `name`: hidden, so readers of the directory skip it.
pub fn sidecar_name(name: &str) -> String {
    format!(".{name}{SIDECAR_SUFFIX}")
}

/// Where the sidecar of `file` is looked for, first to last: beside it (or, with `dir`, in that
/// index directory) under [`sidecar_name`], then under the name tamis wrote before
/// (`<name>.tamis.puffin`). Sidecars are written to the first.
pub fn sidecar_refs(file: &FileRef, dir: Option<&Path>) -> Result<[FileRef; 2]> {
    let name = match file {
        FileRef::Local(p) => p.file_name().and_then(|n| n.to_str()).map(str::to_string),
        FileRef::Object { path, .. } => path.filename().map(str::to_string),
    };
    let name = name.ok_or_else(|| {
        Error::invalid("a data file without a (UTF-8) name has no sidecar").in_file(file.location())
    })?;
    let legacy = format!("{name}{SIDECAR_SUFFIX}");
    if let Some(dir) = dir {
        // The data file's full location in the name: files of one name in two directories
        // keep two sidecars. Local paths are made absolute (not resolved through links), so
        // that `data/x.parquet` and `/abs/data/x.parquet` find the same one.
        let location = match file {
            FileRef::Local(p) => std::path::absolute(p)
                .unwrap_or_else(|_| p.clone())
                .display()
                .to_string(),
            FileRef::Object { .. } => file.location(),
        };
        let hash = twox_hash::XxHash64::oneshot(0, location.as_bytes());
        let named = format!(".{name}.{hash:016x}{SIDECAR_SUFFIX}");
        return Ok([
            FileRef::Local(dir.join(named)),
            FileRef::Local(dir.join(legacy)),
        ]);
    }
    Ok(match file {
        FileRef::Local(p) => [
            FileRef::Local(p.with_file_name(sidecar_name(&name))),
            FileRef::Local(p.with_file_name(legacy)),
        ],
        FileRef::Object { store, path, .. } => {
            let sibling = |n: &str| {
                let parts: Vec<_> = path.parts().collect();
                let mut parts = parts[..parts.len().saturating_sub(1)].to_vec();
                parts.push(n.into());
                FileRef::Object {
                    store: store.clone(),
                    path: ObjectPath::from_iter(parts),
                    size: None,
                }
            };
            [sibling(&sidecar_name(&name)), sibling(&legacy)]
        }
    })
}

/// Writes `bytes` as the sidecar of `file`: beside it, or (local files) into the index directory
/// `dir`, where a scan finds it with [`crate::Scan::index_dir`]. Returns where.
pub fn write_sidecar(file: &FileRef, bytes: Vec<u8>, dir: Option<&Path>) -> Result<String> {
    if dir.is_some() && file.is_remote() {
        return Err(Error::invalid(
            "--output applies to local files; object-store sidecars are written beside the data",
        ));
    }
    let [target, _] = sidecar_refs(file, dir)?;
    match &target {
        FileRef::Local(path) => {
            write_atomically(path, |f| f.write_all(&bytes))
                .map_err(|e| Error::from(e).in_file(path.display()))?;
            Ok(path.display().to_string())
        }
        FileRef::Object { store, path, .. } => {
            // A PUT is atomic: readers see the old object or the new one.
            let url = store.url(path);
            crate::io::object::put(store, path, bytes).map_err(|e| e.in_file(&url))?;
            Ok(url)
        }
    }
}

/// Writes a file through `write` into a new temporary file in `path`'s directory (created
/// exclusively, so never through a planted link), syncs it, and renames it over `path`: a
/// reader, or a crash mid-way, sees the old file or the new one, never a part. A symbolic link
/// at `path` is replaced by the file, not followed.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".tamis-tmp-")
        .tempfile_in(dir)?;
    write(tmp.as_file_mut())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// What a sidecar lookup found.
#[derive(Debug)]
pub(crate) enum Lookup {
    Found(Box<Sidecar>),
    Absent,
    /// The store refused the lookup (S3 answers 403 for a missing key to a reader without
    /// `s3:ListBucket`): read as absent, and said once.
    Denied(String),
}

/// Opens the sidecar of `file` (see [`sidecar_refs`]): one read of its end, which holds the
/// footer. `rows` are the data file's row counts per row group and `columns` its leaf count,
/// which every blob is checked against.
pub(crate) fn open_sidecar(
    file: &FileRef,
    dir: Option<&Path>,
    rows: &[u64],
    columns: usize,
) -> Result<Lookup> {
    open_sidecar_with(file, dir, rows, columns, None)
}

/// What opening a sidecar candidate answered: its bytes' source and tail, or why not.
type Opened = Result<(Arc<dyn crate::io::ByteSource>, bytes::Bytes)>;

/// The opens of an object's two sidecar names ([`sidecar_refs`] beside it), sent while the
/// object itself is opened.
pub(crate) struct SidecarOpens([Opened; 2]);

/// Sends the opens of `file`'s sidecar names beside it at once, when `file` is an object (a
/// local lookup costs no round trip); the file's open runs meanwhile, so that a scan that looks
/// for the sidecar does not wait for a second round trip ([`seed_sidecar`] hands them over).
pub(crate) fn prefetch_sidecar(file: &FileRef) -> Option<SidecarOpens> {
    if !file.is_remote() {
        return None;
    }
    let [a, b] = sidecar_refs(file, None).ok()?;
    let (a, b) = std::thread::scope(|s| {
        let first = s.spawn(|| a.open());
        let second = b.open();
        let first = first
            .join()
            .unwrap_or_else(|_| Err(Error::internal("a sidecar lookup panicked")));
        (first, second)
    });
    Some(SidecarOpens([a, b]))
}

/// Gives `opened` the sidecar opens sent with it, for its first lookup.
pub(crate) fn seed_sidecar(opened: &OpenedFile, opens: SidecarOpens) {
    let mut slot = (opened.sidecar_opens.lock()).unwrap_or_else(|e| e.into_inner());
    *slot = Some(Box::new(opens));
}

/// [`open_sidecar`], taking the candidates' opens from `sent` where they were sent already.
fn open_sidecar_with(
    file: &FileRef,
    dir: Option<&Path>,
    rows: &[u64],
    columns: usize,
    sent: Option<SidecarOpens>,
) -> Result<Lookup> {
    let candidates = sidecar_refs(file, dir)?;
    // Each candidate's open, where it was sent already: handed to its own attempt.
    let [first_sent, second_sent] = match sent {
        Some(SidecarOpens([a, b])) => [Some(a), Some(b)],
        None => [None, None],
    };
    let attempt = |earlier: Option<Opened>, sidecar: &FileRef| -> Result<Lookup> {
        if let (None, FileRef::Local(p)) = (&earlier, sidecar) {
            if !p.exists() {
                return Ok(Lookup::Absent);
            }
        }
        match earlier.unwrap_or_else(|| sidecar.open()) {
            Ok((source, tail)) => {
                Sidecar::open(source, tail, rows, columns).map(|s| Lookup::Found(Box::new(s)))
            }
            Err(e) if e.io_kind == Some(std::io::ErrorKind::NotFound) => Ok(Lookup::Absent),
            Err(e)
                if sidecar.is_remote()
                    && e.io_kind == Some(std::io::ErrorKind::PermissionDenied) =>
            {
                Ok(Lookup::Denied(e.to_string()))
            }
            Err(e) => Err(e),
        }
    };
    // Objects: both names at once, so a file without a sidecar costs one round trip, not two.
    let results: Vec<Result<Lookup>> = if file.is_remote() {
        std::thread::scope(|s| {
            let handles: Vec<_> = (candidates.iter().zip([first_sent, second_sent]))
                .map(|(c, earlier)| s.spawn(move || attempt(earlier, c)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::internal("a sidecar lookup panicked")))
                })
                .collect()
        })
    } else {
        let first = attempt(first_sent, &candidates[0])?;
        if !matches!(first, Lookup::Absent) {
            return Ok(first);
        }
        vec![attempt(second_sent, &candidates[1])]
    };
    let mut denied = None;
    for r in results {
        match r? {
            Lookup::Found(s) => return Ok(Lookup::Found(s)),
            Lookup::Denied(why) => denied = denied.or(Some(why)),
            Lookup::Absent => {}
        }
    }
    Ok(denied.map_or(Lookup::Absent, Lookup::Denied))
}
