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

import json
import os
from typing import Any, Dict, Optional, Sequence, Union

import pyarrow as pa

from . import _tamis
from .errors import (
    CorruptFileError,
    InternalError,
    InvalidArgumentError,
    ResourceLimitError,
    TamisError,
    UnsupportedError,
)

__version__: str = _tamis.__version__

PathLike = Union[str, "os.PathLike[str]"]


def _columns(columns: Optional[Sequence[str]]) -> Optional[list]:
    if columns is None:
        return None
    if isinstance(columns, str):
        raise TypeError("columns must be a sequence of column names, not a string")
    return list(columns)


def _names(names: Optional[Sequence[str]]) -> Optional[list]:
    if names is None:
        return None
    if isinstance(names, str):
        raise TypeError("expected a sequence of names, not a string")
    return list(names)


def scan(
    path: PathLike,
    where: Optional[str] = None,
    columns: Optional[Sequence[str]] = None,
    threads: Optional[int] = None,
    limit: Optional[int] = None,
    filter_order: str = "auto",
    disable_pruning: Optional[Sequence[str]] = None,
    evaluation: str = "auto",
) -> pa.Table:
    """Scan Parquet data and return the matching rows as a :class:`pyarrow.Table`.

    Args:
        path: a file, a directory of ``*.parquet`` files, or a glob.
        where: SQL predicate, e.g. ``"l_shipdate >= DATE '1994-01-01' AND l_quantity < 24"``.
        columns: columns to return, in this order (default: all).
        threads: worker threads (default: all cores).
        limit: stop after this many rows (the first rows in file order).
        filter_order: ``"auto"`` (the cost model's order, from estimated and measured
            selectivities) or ``"written"`` (the order of ``where``). The rows are the same.
        disable_pruning: structures not to prune with, as if the files lacked them: any of
            ``"statistics"``, ``"bloom_filters"``, ``"page_index"`` (for experiments; the rows
            are the same).
        evaluation: how filters evaluate pages whose rows are partly alive: ``"auto"`` (the
            cheaper by measured cost), ``"selected"`` (always selection pushdown) or
            ``"whole"`` (always the whole page, in place or decode-then-filter). Same rows.

    Raises:
        InvalidArgumentError: unknown column or bad predicate (a ``ValueError``).
        UnsupportedError: valid input tamis does not handle (a ``NotImplementedError``).
        CorruptFileError: the file is not valid Parquet.
        OSError: the file cannot be read (``FileNotFoundError``, ``PermissionError``...).
        KeyboardInterrupt: Ctrl-C while scanning; the scan is cancelled.
    """
    stream = _tamis.scan_all(
        os.fspath(path), where, _columns(columns), threads, limit, None, filter_order,
        _names(disable_pruning), evaluation,
    )
    return pa.RecordBatchReader.from_stream(stream).read_all()


def scan_batches(
    path: PathLike,
    where: Optional[str] = None,
    columns: Optional[Sequence[str]] = None,
    threads: Optional[int] = None,
    limit: Optional[int] = None,
    batch_size: Optional[int] = None,
    filter_order: str = "auto",
    disable_pruning: Optional[Sequence[str]] = None,
    evaluation: str = "auto",
) -> pa.RecordBatchReader:
    """Start a scan and return its batches as a :class:`pyarrow.RecordBatchReader`.

    Batches are produced as the reader is consumed, in file order, at most ``batch_size`` rows
    each (default 8192). The reader implements the Arrow PyCapsule stream interface, so
    ``polars.from_arrow(reader)``, ``duckdb.sql("select ... from reader")`` and
    ``reader.read_pandas()`` take the data without copies.

    Errors in the request (path, predicate, columns) raise at once, as in :func:`scan`; errors
    found while reading raise from the reader (as ``pyarrow`` exceptions carrying tamis's message).
    """
    stream = _tamis.scan_stream(
        os.fspath(path), where, _columns(columns), threads, limit, batch_size, filter_order,
        _names(disable_pruning), evaluation,
    )
    return pa.RecordBatchReader.from_stream(stream)


def explain(
    path: PathLike,
    where: Optional[str] = None,
    columns: Optional[Sequence[str]] = None,
    threads: Optional[int] = None,
    limit: Optional[int] = None,
    filter_order: str = "auto",
    disable_pruning: Optional[Sequence[str]] = None,
    evaluation: str = "auto",
) -> Dict[str, Any]:
    """Run the scan, discard the rows, and return the pruning funnel and costs.

    The dict is the object ``tamis explain --json`` prints: row groups pruned by statistics,
    Bloom filters and dictionaries, pages pruned by the page index and skipped as payload, rows
    and values decoded, bytes read, time per phase, ``filter_order`` (the order chosen for the
    first row group: each filter's SQL, bit width, estimated and measured selectivity) and
    ``predicate`` (the ``where`` text).
    """
    text = _tamis.explain_json(
        os.fspath(path), where, _columns(columns), threads, limit, filter_order,
        _names(disable_pruning), evaluation,
    )
    return json.loads(text)


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
) -> Dict[str, Any]:
    """Rewrite Parquet files into one pushdown-friendly file, like ``tamis optimize``.

    Page statistics (ColumnIndex + OffsetIndex) are always written. ``bloom_filters`` holds
    ``"col"``, ``"col:fpp"`` or ``"auto[:fpp]"`` entries; filters are sized from the distinct
    values measured per row group. ``sort_by`` sorts (ascending, nulls last) with an external
    merge sort holding about ``memory_limit`` bytes in memory. The output is written to a
    temporary file and renamed, so a failure leaves nothing behind. Returns the report (sizes
    per column before and after, filters and their expected false-positive rates, and the reason
    for each ``auto`` decision) as a dict.
    """
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    text = _tamis.optimize_json(
        [os.fspath(p) for p in inputs], os.fspath(output), _names(sort_by),
        _names(bloom_filters), page_rows, page_bytes, row_group_rows, compression, dictionary,
        memory_limit, os.fspath(temp_dir) if temp_dir is not None else None,
    )
    return json.loads(text)


__all__ = [
    "scan",
    "scan_batches",
    "explain",
    "optimize",
    "TamisError",
    "InvalidArgumentError",
    "UnsupportedError",
    "CorruptFileError",
    "ResourceLimitError",
    "InternalError",
    "__version__",
]
