"""One predicate, three dialects: SQL text (tamis, DuckDB, DataFusion, the RowFilter binary),
a Polars expression and a pyarrow dataset expression.

Writing each benchmark predicate once keeps the engines honest: they all answer the same
question, and the harness checks that they agree.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Sequence, Tuple


@dataclass(frozen=True)
class Pred:
    op: str
    args: Tuple[Any, ...]

    def __and__(self, other: "Pred") -> "Pred":
        return Pred("and", (self, other))

    def __or__(self, other: "Pred") -> "Pred":
        return Pred("or", (self, other))

    def __invert__(self) -> "Pred":
        return Pred("not", (self,))

    def columns(self) -> list:
        """The columns the predicate reads, in order of first mention."""
        op, a = self.op, self.args
        if op in ("and", "or", "not"):
            out = []
            for p in a:
                out += [c for c in p.columns() if c not in out]
            return out
        if op == "cols":  # either side may be arithmetic: its identifiers are the columns
            found = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", f"{a[0]} {a[2]}")
            return list(dict.fromkeys(found))
        return [a[0]]

    # ---- SQL ---------------------------------------------------------------------------------
    def sql(self) -> str:
        op, a = self.op, self.args
        if op in ("and", "or"):
            return f"({a[0].sql()} {op.upper()} {a[1].sql()})"
        if op == "not":
            return f"NOT ({a[0].sql()})"
        if op == "between":
            return f"{a[0]} BETWEEN {sql_lit(a[1])} AND {sql_lit(a[2])}"
        if op == "in":
            return f"{a[0]} IN ({', '.join(sql_lit(v) for v in a[1])})"
        if op == "like":
            return f"{a[0]} LIKE {sql_lit(a[1])}"
        if op == "cols":
            return f"{a[0]} {a[1]} {a[2]}"
        return f"{a[0]} {op} {sql_lit(a[1])}"

    # ---- Polars ------------------------------------------------------------------------------
    def polars(self):
        import polars as pl

        op, a = self.op, self.args
        if op == "and":
            return a[0].polars() & a[1].polars()
        if op == "or":
            return a[0].polars() | a[1].polars()
        if op == "not":
            return ~a[0].polars()
        col = pl.col(a[0])
        if op == "cols":
            return _cmp(a[1], col, pl.col(a[2]))
        if op == "between":
            return col.is_between(pl.lit(a[1]), pl.lit(a[2]), closed="both")
        if op == "in":
            return col.is_in(list(a[1]))
        if op == "like":
            return col.str.contains(like_regex(a[1]))
        return _cmp(op, col, pl.lit(a[1]))

    # ---- pyarrow -----------------------------------------------------------------------------
    def pyarrow(self, schema):
        import pyarrow as pa
        import pyarrow.compute as pc

        op, a = self.op, self.args
        if op == "and":
            return a[0].pyarrow(schema) & a[1].pyarrow(schema)
        if op == "or":
            return a[0].pyarrow(schema) | a[1].pyarrow(schema)
        if op == "not":
            return ~a[0].pyarrow(schema)
        field = pc.field(a[0])
        if op == "cols":
            return _cmp(a[1], field, pc.field(a[2]))
        typ = schema.field(a[0]).type

        def lit(v):
            return pa.scalar(v, type=typ)

        if op == "between":
            return (field >= lit(a[1])) & (field <= lit(a[2]))
        if op == "in":
            return field.isin(pa.array(list(a[1]), type=typ))
        if op == "like":
            return pc.match_like(field, a[1])
        return _cmp(op, field, lit(a[1]))


def _cmp(op: str, left, right):
    if op == "=":
        return left == right
    if op == "<>":
        return left != right
    if op == "<":
        return left < right
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    if op == ">=":
        return left >= right
    raise ValueError(f"unknown comparison {op}")


def sql_lit(v: Any) -> str:
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, dt.date):
        return f"DATE '{v.isoformat()}'"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, (int, float, Decimal)):
        return str(v)
    raise TypeError(f"no SQL literal for {v!r}")


def like_regex(pattern: str) -> str:
    """SQL LIKE (``%``, ``_``, no escape) as an anchored regular expression."""
    out = []
    for ch in pattern:
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
    return "^(?s:" + "".join(out) + ")$"


def col_cmp(column: str, op: str, value: Any) -> Pred:
    return Pred(op, (column, value))


def cols(left: str, op: str, right: str) -> Pred:
    """Two columns of one type compared: ``left op right``."""
    return Pred("cols", (left, op, right))


def between(column: str, low: Any, high: Any) -> Pred:
    return Pred("between", (column, low, high))


def isin(column: str, values: Sequence[Any]) -> Pred:
    return Pred("in", (column, tuple(values)))


def like(column: str, pattern: str) -> Pred:
    return Pred("like", (column, pattern))
