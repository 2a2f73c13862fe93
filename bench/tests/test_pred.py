"""The three renderings of a benchmark predicate select the same rows (pyarrow vs Polars vs DuckDB)."""

import datetime as dt
import os
import sys
from decimal import Decimal

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pred import between, col_cmp, cols, isin, like, like_regex  # noqa: E402

TABLE = pa.table({
    "i": pa.array([1, 5, None, 24, 30, 7], pa.int64()),
    "d": pa.array([dt.date(1994, 1, 1), dt.date(1993, 12, 31), dt.date(1995, 1, 1), None,
                   dt.date(1994, 6, 1), dt.date(1994, 12, 31)]),
    "m": pa.array([Decimal("0.05"), Decimal("0.04"), Decimal("0.07"), Decimal("0.08"), None,
                   Decimal("0.06")], pa.decimal128(15, 2)),
    "s": pa.array(["special requests", "AIR", "", None, "a_b%c", "specially few requests"]),
})

PREDICATES = [
    col_cmp("i", "<", 24),
    col_cmp("d", ">=", dt.date(1994, 1, 1)) & col_cmp("d", "<", dt.date(1995, 1, 1)),
    between("m", Decimal("0.05"), Decimal("0.07")),
    isin("i", [5, 30]) | col_cmp("s", "=", "AIR"),
    ~col_cmp("s", "=", ""),
    like("s", "%special%requests%"),
    like("s", "a_b%"),
]


def ids(rows):
    return sorted(rows)


@pytest.mark.parametrize("p", PREDICATES, ids=[p.sql() for p in PREDICATES])
def test_renderings_agree(p):
    t = TABLE.append_column("row", pa.array(range(TABLE.num_rows)))
    table = t
    want = ids(ds.dataset(table).to_table(filter=p.pyarrow(table.schema))["row"].to_pylist())
    polars = pytest.importorskip("polars")
    got = polars.from_arrow(table).filter(p.polars())["row"].to_list()
    assert ids(got) == want
    duckdb = pytest.importorskip("duckdb")
    got = [r[0] for r in duckdb.sql(f"SELECT row FROM t WHERE {p.sql()}").fetchall()]
    assert ids(got) == want


def test_like_regex_escapes():
    assert like_regex("a.b%") == r"^(?s:a\.b.*)$"
    assert like_regex("_") == "^(?s:.)$"


def test_columns_lists_each_column_once_in_order():
    p = (col_cmp("a", "<", 1) & ~isin("b", [1, 2])) | (between("a", 0, 5) & cols("c", "<", "d * (1 - a)"))
    assert p.columns() == ["a", "b", "c", "d"]
    assert like("s", "%x%").columns() == ["s"]
