"""tamis: a Parquet scan engine that evaluates predicates where the data is still encoded.

Four functions cover the API::

    import tamis
    table = tamis.scan("lineitem.parquet", where="l_quantity < 5", columns=["l_orderkey"])
    reader = tamis.scan_batches("data/", where="l_shipmode = 'AIR'")   # pyarrow.RecordBatchReader
    funnel = tamis.explain("lineitem.parquet", where="l_orderkey = 3000000")  # dict
    report = tamis.optimize(["lineitem.parquet"], "opt.parquet", bloom_filters=["l_partkey"])

``path`` is a file, a directory (every ``*.parquet`` below it) or a glob. ``where`` is a SQL
boolean expression over the file's columns. Scans release the GIL and stop on Ctrl-C.
"""

from __future__ import annotations

import atexit
import dataclasses
import datetime
import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import pyarrow as pa

from . import _tamis
from .errors import (
    CancelledError,
    CorruptFileError,
    InternalError,
    InvalidArgumentError,
    ResourceLimitError,
    SqlError,
    TamisError,
    UnsupportedError,
)

__version__: str = _tamis.__version__

PathLike = Union[str, "os.PathLike[str]"]


_SIZE_SHIFTS = {"": 0, "B": 0, "K": 10, "KB": 10, "KIB": 10, "M": 20, "MB": 20, "MIB": 20,
                "G": 30, "GB": 30, "GIB": 30, "T": 40, "TB": 40, "TIB": 40}


def _size(value: Optional[Union[int, str]], what: str = "memory_limit") -> Optional[int]:
    """Bytes from an int or a size string such as ``"512MiB"`` (binary multiples)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError(f"{what} must be a number of bytes or a size string")
    if isinstance(value, int):
        n = value
    elif isinstance(value, str):
        text = value.strip()
        digits = len(text) - len(text.lstrip("0123456789"))
        unit = text[digits:].strip().upper()
        if digits == 0 or unit not in _SIZE_SHIFTS:
            raise InvalidArgumentError(
                f"invalid argument: {what} '{value}' is not a size (e.g. 512MiB, 4GiB)")
        n = int(text[:digits]) << _SIZE_SHIFTS[unit]
    else:
        raise TypeError(f"{what} must be a number of bytes or a size string")
    if n <= 0 or n >= 1 << 63:
        raise InvalidArgumentError(f"invalid argument: {what} {value!r} is out of range")
    return n


def _names(names: Optional[Sequence[str]], what: str = "names") -> Optional[list]:
    if names is None:
        return None
    if isinstance(names, str):
        raise TypeError(f"{what} must be a sequence of names, not a string")
    return list(names)


@dataclass(frozen=True)
class ScanOptions:
    """How to scan: shared by :func:`scan`, :func:`scan_batches`, :func:`explain` and
    :meth:`Dataset.scan`, which also take these fields as keyword arguments.

    Attributes:
        where: SQL predicate, e.g. ``"l_shipdate >= DATE '1994-01-01' AND l_quantity < 24"``.
        columns: columns to return, in this order (default: all).
        threads: worker threads (default: all cores).
        limit: stop after this many rows (the first rows in file order).
        batch_size: rows per batch at most (default 8192).
        filter_order: ``"auto"`` (the cost model's order, from estimated and measured
            selectivities) or ``"written"`` (the order of ``where``). The rows are the same.
        disable_pruning: structures not to prune with, as if the files lacked them: any of
            ``"statistics"``, ``"bloom_filters"``, ``"page_index"``, ``"sidecar_index"``,
            ``"sub_page_reads"`` (reading uncompressed PLAIN payload pages by the 4 KiB blocks
            holding selected rows) — for experiments; the rows are the same.
        evaluation: how filters evaluate pages whose rows are partly alive: ``"auto"`` (the
            cheaper by measured cost), ``"selected"`` (always selection pushdown) or
            ``"whole"`` (always the whole page, in place or decode-then-filter). Same rows.
        memory_limit: the most memory one row group's decoding may take, in bytes or as a
            string such as ``"512MiB"`` (K, M, G, T binary multiples); default 4 GiB. A file
            whose headers ask for more raises :class:`ResourceLimitError`.
        index_dir: directory holding the files' sidecar indexes (:func:`index` with
            ``output=``), when they are not beside the data.
        broken_index: what a sidecar index that cannot be read (truncated, corrupt) does:
            ``"fail"`` (raise :class:`CorruptFileError` naming it) or ``"ignore"`` (read as if
            there were none; ``explain`` counts it and lists a warning). Same rows.
        verify_index: before a sidecar index answers for a column chunk, read the chunk and
            check it against the content hash recorded when the index was built (a sidecar
            must always match its file's length, footer and mtime or ETag; this also catches
            a rewrite of data pages that kept all three). Costs the read the index saves.
        storage_options: object-store options for ``s3://``, ``gs://``, ``az://`` and
            ``http(s)://`` paths: ``endpoint``, ``region``, ``access_key_id``,
            ``secret_access_key``, ``allow_http``, … (the ``object_store`` crate's keys), and
            tamis's ``latency_ms``, ``bandwidth_mb_per_s``, ``max_requests``. The standard
            environment variables (``AWS_*``, ``GOOGLE_*``, ``AZURE_*``) apply too.
        table_version: the version of the table at ``path`` to read (time travel): a Delta
            version or an Iceberg snapshot id (default the latest). Only where a path is opened
            (:func:`scan`, :func:`explain`, :class:`Dataset`), as are the next two.
        table_timestamp: read the table at ``path`` as it was at this time: a
            ``datetime.datetime`` (naive: UTC) or a string (``YYYY-MM-DD``,
            ``YYYY-MM-DD HH:MM:SS`` in UTC, or ISO 8601 with an offset).
        table_format: ``"delta"`` or ``"iceberg"``: read ``path`` as a table of this format,
            needed only where it is both (Delta UniForm).
    """

    where: Optional[str] = None
    columns: Optional[Sequence[str]] = None
    threads: Optional[int] = None
    limit: Optional[int] = None
    batch_size: Optional[int] = None
    filter_order: str = "auto"
    disable_pruning: Optional[Sequence[str]] = None
    evaluation: str = "auto"
    memory_limit: Optional[Union[int, str]] = None
    index_dir: Optional[str] = None
    broken_index: str = "fail"
    verify_index: bool = False
    storage_options: Optional[Mapping[str, Any]] = None
    table_version: Optional[int] = None
    table_timestamp: Optional[Union[str, "datetime.datetime"]] = None
    table_format: Optional[str] = None

    def replace(self, **changes: Any) -> "ScanOptions":
        """A copy with some fields changed (unknown names raise ``TypeError``)."""
        return dataclasses.replace(self, **changes)

    def _native(self) -> Dict[str, Any]:
        """The fields as the native scan functions take them: a dict with every field, by name
        (the native side refuses a missing or unknown one, so this class is their one list)."""
        return {f.name: _TO_NATIVE.get(f.name, _same)(getattr(self, f.name))
                for f in dataclasses.fields(self)}


def _same(value: Any) -> Any:
    return value


def _keywords(arguments: Dict[str, Any], positional: Sequence[str],
              **converted: Any) -> Dict[str, Any]:
    """The keywords a native function takes as one dict, from a wrapper's ``locals()`` taken
    first thing (a copy, where the wrapper binds other names before calling this), so that its
    signature is the one list of their names and defaults (the native side refuses a missing
    or unknown one): every argument but the ``positional`` ones, with the ``converted`` values
    in place of the arguments of those names."""
    keywords = {name: value for name, value in arguments.items() if name not in positional}
    unknown = set(converted) - set(keywords)
    if unknown:
        raise AssertionError(f"tamis: conversions for keywords the wrapper lacks: {unknown}")
    keywords.update(converted)
    return keywords


def _storage(options: Optional[Mapping[str, Any]]) -> Optional[Dict[str, str]]:
    """Object-store options as strings (booleans as ``true``/``false``, as the crate reads them)."""
    if options is None:
        return None
    return {str(k): (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in options.items()}


#: How a :class:`ScanOptions` field crosses to the native side, where not as it is.
_TO_NATIVE = {
    "columns": lambda v: _names(v, "columns"),
    "disable_pruning": lambda v: _names(v, "disable_pruning"),
    "memory_limit": _size,
    "index_dir": lambda v: None if v is None else str(v),
    "table_timestamp": lambda v: v.isoformat() if isinstance(v, datetime.datetime) else v,
    "verify_index": bool,
    "storage_options": _storage,
}


def _options(options: Optional[ScanOptions], where: Optional[str],
             columns: Optional[Sequence[str]], fields: Dict[str, Any]) -> ScanOptions:
    base = options if options is not None else ScanOptions()
    if where is not None:
        fields["where"] = where
    if columns is not None:
        fields["columns"] = columns
    return base.replace(**fields) if fields else base


def scan(path: PathLike, where: Optional[str] = None, columns: Optional[Sequence[str]] = None,
         *, options: Optional[ScanOptions] = None, **fields: Any) -> pa.Table:
    """Scan Parquet data and return the matching rows as a :class:`pyarrow.Table`.

    ``path`` is a file, a directory of ``*.parquet`` files or a glob, local or in an object
    store (``s3://bucket/prefix/``). The other keywords are the fields of :class:`ScanOptions`
    (or pass ``options=``; keywords override it).

    Raises:
        InvalidArgumentError: unknown column or bad predicate (a ``ValueError``).
        UnsupportedError: valid input tamis does not handle (a ``NotImplementedError``).
        CorruptFileError: the file is not valid Parquet.
        OSError: the file cannot be read (``FileNotFoundError``, ``PermissionError``...).
        KeyboardInterrupt: Ctrl-C while scanning; the scan is cancelled.
    """
    opts = _options(options, where, columns, fields)
    stream = _tamis.scan_all(os.fspath(path), opts._native())
    return pa.RecordBatchReader.from_stream(stream).read_all()


def scan_batches(path: PathLike, where: Optional[str] = None,
                 columns: Optional[Sequence[str]] = None, *,
                 options: Optional[ScanOptions] = None, **fields: Any) -> pa.RecordBatchReader:
    """Start a scan and return its batches as a :class:`pyarrow.RecordBatchReader`.

    Takes the arguments of :func:`scan`. Batches are produced as the reader is consumed, in
    file order, at most ``batch_size`` rows each (default 8192). The reader implements the Arrow
    PyCapsule stream interface, so ``polars.from_arrow(reader)``, ``duckdb.sql("select ... from
    reader")`` and ``reader.read_pandas()`` take the data without copies.

    Errors in the request (path, predicate, columns) raise at once, as in :func:`scan`; errors
    found while reading raise from the reader, as the same tamis exception classes. Closing the
    reader (or Ctrl-C while it is read) stops the scan.
    """
    opts = _options(options, where, columns, fields)
    return _reader(_tamis.scan_stream(os.fspath(path), opts._native()))


#: The labels that start tamis's error messages (Rust `ErrorKind`), and their classes.
_ERROR_CLASSES = {
    "corrupt file": CorruptFileError,
    "unsupported": UnsupportedError,
    "invalid argument": InvalidArgumentError,
    "resource limit": ResourceLimitError,
    "internal error": InternalError,
    "cancelled": CancelledError,
    "I/O error": OSError,
}


def _reader(stream: Any) -> pa.RecordBatchReader:
    """A reader over a native stream that re-raises its errors as tamis's classes: through the
    Arrow C stream they arrive as ``pyarrow`` exceptions whose text is tamis's one-line message
    behind an ``External error:`` prefix."""
    inner = pa.RecordBatchReader.from_stream(stream)

    def batches() -> Any:
        with inner:
            while True:
                try:
                    batch = inner.read_next_batch()
                except StopIteration:
                    return
                except pa.ArrowException as e:
                    # Ctrl-C (or another signal handler's exception) while the native side
                    # waited: it cancelled the scan and kept the exception for us.
                    stream.raise_interrupt()
                    message = str(e)
                    message = message.split("External error: ", 1)[-1]
                    cls = _ERROR_CLASSES.get(message.split(":", 1)[0])
                    if cls is None:
                        raise
                    raise cls(message) from None
                yield batch

    return pa.RecordBatchReader.from_batches(inner.schema, batches())


def explain(path: PathLike, where: Optional[str] = None,
            columns: Optional[Sequence[str]] = None, *,
            options: Optional[ScanOptions] = None, **fields: Any) -> Dict[str, Any]:
    """Run the scan, discard the rows, and return the pruning funnel and costs.

    Takes the arguments of :func:`scan`. The dict is the object ``tamis explain --json``
    prints: row groups pruned by statistics, Bloom filters and dictionaries, pages pruned by the
    page index and skipped as payload, rows and values decoded, bytes read and read requests,
    time per phase, ``filter_order`` (the order chosen for the first row group: each filter's
    SQL, bit width, estimated and measured selectivity) and ``predicate`` (the ``where`` text).
    """
    opts = _options(options, where, columns, fields)
    return json.loads(_tamis.explain_json(os.fspath(path), opts._native()))


class Dataset:
    """Parquet files opened once, for many scans: footers, page indexes and Bloom filters stay
    cached (up to ``metadata_budget`` bytes), so repeated queries — point lookups especially —
    do not read metadata again.

    ``path`` is what :func:`scan` takes (a file, directory, glob or object-store prefix, with
    hive partitions, or a table); ``storage_options``, ``table_version``, ``table_timestamp``
    and ``table_format`` as in :class:`ScanOptions`. The methods take the arguments of
    :func:`scan` (``storage_options`` and the table's version are the dataset's)::

        ds = tamis.Dataset("s3://bucket/lineitem/", storage_options={...})
        ds.scan(where="l_orderkey = 3000000", columns=["l_partkey"])
    """

    def __init__(self, path: PathLike, storage_options: Optional[Mapping[str, Any]] = None,
                 metadata_budget: Optional[int] = None, table_version: Optional[int] = None,
                 table_timestamp: Optional[Union[str, "datetime.datetime"]] = None,
                 table_format: Optional[str] = None) -> None:
        self._native = _tamis.Dataset(os.fspath(path), _keywords(
            locals(), ("self", "path"), storage_options=_storage(storage_options),
            table_timestamp=_TO_NATIVE["table_timestamp"](table_timestamp)))

    @property
    def files(self) -> list:
        """The dataset's files (paths or URLs)."""
        return self._native.files()

    @property
    def schema(self) -> pa.Schema:
        """The dataset schema: the files' unified columns, then partition columns."""
        return self.scan_batches(limit=0).schema

    def scan(self, where: Optional[str] = None, columns: Optional[Sequence[str]] = None, *,
             options: Optional[ScanOptions] = None, **fields: Any) -> pa.Table:
        """Like :func:`scan`, over this dataset's cached metadata."""
        opts = _options(options, where, columns, fields)
        return pa.RecordBatchReader.from_stream(self._native.scan_all(opts._native())).read_all()

    def scan_batches(self, where: Optional[str] = None,
                     columns: Optional[Sequence[str]] = None, *,
                     options: Optional[ScanOptions] = None, **fields: Any) -> pa.RecordBatchReader:
        """Like :func:`scan_batches`, over this dataset's cached metadata."""
        opts = _options(options, where, columns, fields)
        return _reader(self._native.scan_stream(opts._native()))

    def explain(self, where: Optional[str] = None, columns: Optional[Sequence[str]] = None, *,
                options: Optional[ScanOptions] = None, **fields: Any) -> Dict[str, Any]:
        """Like :func:`explain`; ``time_metadata_ns`` and the requests show what the cache saved."""
        opts = _options(options, where, columns, fields)
        return json.loads(self._native.explain_json(opts._native()))

    def __datafusion_table_provider__(self, session: Any) -> object:
        """DataFusion's foreign table protocol: ``ctx.register_table("t", tamis.Dataset(path))``
        in the ``datafusion`` package queries this dataset through tamis's provider (filters,
        projection and limit pushed into the scan, as :func:`sql` does).

        Raises:
            TypeError: the installed ``datafusion`` is of another major version than the one
                tamis was built against (the FFI layout is stable only within one).
        """
        _check_datafusion_major()
        return self._native.datafusion_table_provider(session, True)


def _check_datafusion_major() -> None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("datafusion")
    except PackageNotFoundError:
        installed = "none"
    if installed.split(".")[0] != str(_tamis.DATAFUSION_FFI_MAJOR):
        raise TypeError(
            f"tamis tables register into datafusion {_tamis.DATAFUSION_FFI_MAJOR}.x; "
            f"the installed datafusion is {installed}"
        )


def optimize(
    inputs: Union[PathLike, Sequence[PathLike]],
    output: PathLike,
    sort_by: Optional[Sequence[str]] = None,
    bloom_filters: Optional[Sequence[str]] = None,
    page_rows: Optional[int] = None,
    page_bytes: Optional[int] = None,
    row_group_rows: Optional[int] = None,
    compression: Optional[str] = None,
    dictionary: bool = True,
    memory_limit: Optional[int] = None,
    temp_dir: Optional[PathLike] = None,
    dictionary_page_bytes: Optional[int] = None,
) -> Dict[str, Any]:
    """Rewrite Parquet files into one pushdown-friendly file, like ``tamis optimize``.

    Page statistics (ColumnIndex + OffsetIndex) are always written. ``bloom_filters`` holds
    ``"col"``, ``"col:fpp"`` or ``"auto[:fpp]"`` entries; filters are sized from the distinct
    values measured per row group. ``sort_by`` sorts (ascending, nulls last) with an external
    merge sort holding about ``memory_limit`` bytes in memory; a sorted output is laid out for
    lookups on its key unless the sizes are given (256 Ki-row row groups, 4 Ki-row pages,
    dictionaries of at most 128 KiB). The output is written to a
    temporary file and renamed, so a failure leaves nothing behind. Returns the report (sizes
    per column before and after, filters and their expected false-positive rates, and the reason
    for each ``auto`` decision) as a dict.
    """
    options = _keywords(
        locals(), ("inputs", "output"), sort_by=_names(sort_by),
        bloom_filters=_names(bloom_filters),
        temp_dir=os.fspath(temp_dir) if temp_dir is not None else None,
    )
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    text = _tamis.optimize_json([os.fspath(p) for p in inputs], os.fspath(output), options)
    return json.loads(text)


def index(
    path: PathLike,
    columns: Sequence[str],
    fpp: float = 0.01,
    output: Optional[PathLike] = None,
    storage_options: Optional[Mapping[str, Any]] = None,
    kind: str = "auto",
) -> List[Dict[str, Any]]:
    """Build sidecar indexes for existing Parquet files, like ``tamis index``.

    For each file ``path`` names (file, directory, glob, object-store prefix), an index of each
    of ``columns``, written to ``.<file name>.tamis.puffin`` beside it (hidden: other engines
    reading the directory skip it), or into the directory ``output`` (local files only; scans
    then need ``index_dir=``). ``kind`` is ``"page-bloom"``
    (one split-block Bloom filter per data page at false-positive rate ``fpp``: ``=`` and
    ``IN`` skip pages), ``"rows"`` (per row group, the sorted distinct values with their row
    ids: ``=``, ``IN`` and ranges select rows without reading the column) or ``"auto"`` (per
    column, from the data; each report's ``columns`` says what was chosen and why). Scans
    ignore a sidecar built for another version of the file. Returns one report per file.
    """
    arguments = dict(locals())
    storage = _storage(storage_options)
    text = _tamis.index_json(os.fspath(path), _names(columns, "columns"), _keywords(
        arguments, ("path", "columns"), fpp=float(fpp),
        output=os.fspath(output) if output is not None else None, storage_options=storage,
        kind=str(kind),
    ))
    return json.loads(text)


def verify_index(
    path: PathLike,
    output: Optional[PathLike] = None,
    storage_options: Optional[Mapping[str, Any]] = None,
) -> List[Dict[str, Any]]:
    """Check existing sidecar indexes, like ``tamis index --verify``: for each file ``path``
    names, whether its sidecar (beside it, or in ``output``) exists, matches the file (length,
    footer, mtime or ETag), holds readable blobs, and whether every column chunk it indexes
    still hashes to what was recorded. One report per file: ``file``, ``sidecar``,
    ``chunks`` (checked) and ``problems`` (empty when the sidecar is good)."""
    arguments = dict(locals())
    storage = _storage(storage_options)
    text = _tamis.verify_index_json(os.fspath(path), _keywords(
        arguments, ("path",), output=os.fspath(output) if output is not None else None,
        storage_options=storage,
    ))
    return json.loads(text)


def sql(query: str, tables: Mapping[str, PathLike], *,
        storage_options: Optional[Mapping[str, Any]] = None,
        threads: Optional[int] = None, runtime_filters: bool = True,
        allow_statements: bool = False) -> pa.Table:
    """Run a SQL query (joins, aggregates, subqueries) over Parquet tables and return the result
    as a :class:`pyarrow.Table`.

    ``tables`` maps each table name to a path as :func:`scan` takes it (a file, a directory or
    glob of ``*.parquet`` files, a hive-partitioned prefix, an object-store URL). Every path
    is located when the call starts (one that names nothing raises), but only the tables the
    query names have their footers read, so passing every table of a schema costs little.
    DataFusion plans and executes the query; tamis scans the tables, with the query's filters, projection
    and limit pushed into the scan. ``threads`` is the number of partitions and workers
    (default: all cores). With ``runtime_filters`` (the default), a hash join's build-side
    keys are pushed into the other side's scan before it reads (min/max, key lists, Bloom
    filters); the result is the same without them.

    Only queries run (``SELECT``, ``WITH``, ``VALUES``, ``EXPLAIN``): statements such as
    ``CREATE EXTERNAL TABLE``, ``CREATE VIEW``, ``COPY … TO``, ``INSERT``, ``DROP`` or ``SET``
    raise :class:`SqlError` unless ``allow_statements=True``, since they can read and write
    files the tables do not name.

    Raises:
        SqlError: the query does not parse, plan or run, or is a statement not allowed (a
            ``ValueError``); the message is one line. Errors reading a table (missing or
            corrupt file…) raise tamis's class for them, as :func:`scan` does.
    """
    arguments = dict(locals())
    if not tables:
        raise InvalidArgumentError("invalid argument: tables must name at least one table")
    named = []
    for name, path in tables.items():
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(f"invalid argument: bad table name {name!r}")
        named.append((name, os.fspath(path)))
    storage = _storage(storage_options)
    try:
        stream = _tamis.sql(query, named, _keywords(
            arguments, ("query", "tables"), storage_options=storage or None))
    except SqlError as e:
        message = str(e)
        # A table that cannot be read: tamis's own class, as for `scan`.
        after_table = message.split("': ", 1)[-1] if message.startswith("table '") else message
        cls = _ERROR_CLASSES.get(after_table.split(":", 1)[0])
        if cls is not None:
            raise cls(message) from None
        raise
    return pa.RecordBatchReader.from_stream(stream).read_all()


def set_page_cache(size: Union[int, str, None], keep_first_reads: Optional[bool] = None) -> None:
    """Keeps up to ``size`` (bytes, or a string such as ``"2GiB"``) of decompressed pages in
    memory for every later scan of this process — ``scan``, ``Dataset``, ``sql`` — so that scans
    of the same pages (repeated queries, a table scanned twice in one query) decompress each page
    once. ``0`` (or ``"0"``, as in ``TAMIS_PAGE_CACHE``) or ``None`` turns it off; each call
    empties it. Without a call the budget is
    ``TAMIS_PAGE_CACHE``, else a sixteenth of the machine's memory (at most 4 GiB). A changed file is
    never served from it: pages are keyed by the file's identity (size, mtime, inode, ctime; an
    object's ETag).

    A page is kept when it is read a second time (a page read once, as most of a one-off scan's
    are, costs no memory), or on its first read by a ``sql`` query that scans its table twice.
    ``keep_first_reads=True`` keeps every page on its first read; ``None`` leaves the setting
    as it is (``TAMIS_PAGE_CACHE_ADMIT=first`` sets it for the process)."""
    n = 0 if size in (None, 0, "0") else _size(size, "page cache size")
    _tamis.set_page_cache_bytes(n)
    if keep_first_reads is not None:
        _tamis.set_page_cache_keeps_first_reads(bool(keep_first_reads))


def set_disk_cache(directory, size: Union[int, str, None] = None) -> None:
    """Keeps decompressed pages (still encoded) in files of ``directory`` as well, for every
    later scan of this process and of any other process given the same directory: a page found
    there is neither read from its source nor decompressed. ``size`` bounds the directory
    (bytes, or a string such as ``"20GiB"``; ``None``: a quarter of the free space there); the
    oldest entries go first. ``directory=None`` turns it off. Entries are checksummed and keyed
    by the file's identity: a changed file or a damaged entry is a miss, never a wrong page."""
    n = None if size is None else _size(size, "disk cache size")
    _tamis.set_disk_cache(None if directory is None else str(directory), n)


def flush_disk_cache(seconds: float = 60.0) -> None:
    """Waits (at most ``seconds``) until the pages queued for the cache directory are written:
    a process about to exit calls it so that what it decompressed is there for the next one."""
    _tamis.flush_disk_cache(seconds)


# At exit, the cache directory's log of first misses gets this process's last ones (no wait for
# queued pages: call flush_disk_cache for that), so the next process writes those pages.
atexit.register(_tamis.flush_disk_cache, 0.0)


def page_cache_stats() -> Dict[str, int]:
    """The page cache's budget and bytes held (``budget_bytes``, ``bytes``), pages held
    (``pages``), and lookups since the process started (``hits``, ``misses``); for the disk
    tier ``disk_dir``, ``disk_budget_bytes``, ``disk_bytes``, ``disk_hits``,
    ``disk_metadata_hits`` (remote files' footers, page indexes, Bloom filters and sidecars
    read from the directory), ``disk_written``, ``disk_first_misses`` (local pages not
    written: a local page is written on its second miss), ``disk_dropped``, ``disk_corrupt``
    and ``disk_evicted``."""
    return json.loads(_tamis.page_cache_stats_json())


__all__ = [
    "ScanOptions",
    "set_page_cache",
    "page_cache_stats",
    "set_disk_cache",
    "flush_disk_cache",
    "Dataset",
    "scan",
    "scan_batches",
    "explain",
    "optimize",
    "index",
    "verify_index",
    "sql",
    "TamisError",
    "InvalidArgumentError",
    "UnsupportedError",
    "CorruptFileError",
    "ResourceLimitError",
    "InternalError",
    "CancelledError",
    "SqlError",
    "__version__",
]
