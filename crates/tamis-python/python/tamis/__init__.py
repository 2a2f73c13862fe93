"""tamis: a Parquet scan engine that evaluates predicates where the data is still encoded.

Three functions cover the API::

    import tamis
    table = tamis.scan("lineitem.parquet", where="l_quantity < 5", columns=["l_orderkey"])
    reader = tamis.scan_batches("data/", where="l_shipmode = 'AIR'")   # pyarrow.RecordBatchReader
    funnel = tamis.explain("lineitem.parquet", where="l_orderkey = 3000000")  # dict

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


def scan(
    path: PathLike,
    where: Optional[str] = None,
    columns: Optional[Sequence[str]] = None,
    threads: Optional[int] = None,
    limit: Optional[int] = None,
    filter_order: str = "auto",
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

    Raises:
        InvalidArgumentError: unknown column or bad predicate (a ``ValueError``).
        UnsupportedError: valid input tamis does not handle (a ``NotImplementedError``).
        CorruptFileError: the file is not valid Parquet.
        OSError: the file cannot be read (``FileNotFoundError``, ``PermissionError``...).
        KeyboardInterrupt: Ctrl-C while scanning; the scan is cancelled.
    """
    stream = _tamis.scan_all(
        os.fspath(path), where, _columns(columns), threads, limit, None, filter_order
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
        os.fspath(path), where, _columns(columns), threads, limit, batch_size, filter_order
    )
    return pa.RecordBatchReader.from_stream(stream)


def explain(
    path: PathLike,
    where: Optional[str] = None,
    columns: Optional[Sequence[str]] = None,
    threads: Optional[int] = None,
    limit: Optional[int] = None,
    filter_order: str = "auto",
) -> Dict[str, Any]:
    """Run the scan, discard the rows, and return the pruning funnel and costs.

    The dict is the object ``tamis explain --json`` prints: row groups pruned by statistics,
    Bloom filters and dictionaries, pages pruned by the page index and skipped as payload, rows
    and values decoded, bytes read, time per phase, ``filter_order`` (the order chosen for the
    first row group: each filter's SQL, bit width, estimated and measured selectivity) and
    ``predicate`` (the ``where`` text).
    """
    text = _tamis.explain_json(
        os.fspath(path), where, _columns(columns), threads, limit, filter_order
    )
    return json.loads(text)


__all__ = [
    "scan",
    "scan_batches",
    "explain",
    "TamisError",
    "InvalidArgumentError",
    "UnsupportedError",
    "CorruptFileError",
    "ResourceLimitError",
    "InternalError",
    "__version__",
]
