"""Exceptions raised by tamis.

Each keeps the category of the Rust error and its one-line message (the same text the ``tamis``
command prints), which names the file, row group, column and what was wrong. I/O failures are
plain :class:`OSError` subclasses (:class:`FileNotFoundError`, :class:`PermissionError`).
"""


class TamisError(Exception):
    """Base class of every tamis-specific error."""


class InvalidArgumentError(TamisError, ValueError):
    """The request is wrong: unknown column, bad predicate, type mismatch, bad option."""


class UnsupportedError(TamisError, NotImplementedError):
    """Valid Parquet or SQL that tamis does not handle (e.g. encrypted files)."""


class CorruptFileError(TamisError, OSError):
    """The file is not valid Parquet (bad footer, page header, levels, lengths, codes...)."""


class ResourceLimitError(TamisError, RuntimeError):
    """A file asked for more memory than tamis allows (a hostile or broken header)."""


class InternalError(TamisError, RuntimeError):
    """A bug in tamis; please report it with the message."""


class SqlError(TamisError, ValueError):
    """A SQL query (``tamis.sql``) does not parse, plan or run; the message is one line."""


class CancelledError(TamisError, RuntimeError):
    """The scan was stopped before it ended (its reader was closed, or Ctrl-C)."""


__all__ = [
    "TamisError",
    "InvalidArgumentError",
    "UnsupportedError",
    "CorruptFileError",
    "ResourceLimitError",
    "InternalError",
    "CancelledError",
    "SqlError",
]
