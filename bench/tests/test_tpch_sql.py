"""bench/tpch_sql.py: answers compare within the tolerance and no further (equal rows pass in any
order and type, different ones fail), the sweep's files are laid out as described, and small runs
of both experiments on DataFusion and DuckDB (and tamis, with TAMIS_CLI) agree."""

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tpch_sql  # noqa: E402
from tpch_sql import canonical, compare  # noqa: E402

MONEY = pa.decimal128(38, 2)
WANT = pa.table({
    "flag": ["A", "N", "R"],
    "sum_price": pa.array([Decimal("5658655.44"), Decimal("0.05"), Decimal("123.45")], MONEY),
    "avg_disc": [0.05, 0.0499, 0.0501],
    "ship": pa.array([dt.date(1995, 3, 15), dt.date(1996, 1, 1), None], pa.date32()),
    "count": pa.array([1478493, 38854, 1478870], pa.int64()),
})


def test_equal_answers_match_in_any_order_and_type():
    """Rows reversed; text as string views; money rounded elsewhere (within a cent) and as
    float; averages off by summation order; dates as date64; counts as floats."""
    got = pa.table({
        "flag": pa.array(["R", "N", "A"], pa.string_view()),
        "sum_price": [123.4549, 0.05, 5658655.4412],
        "avg_disc": [0.0501 * (1 + 1e-9), 0.0499, 0.05],
        "ship": pa.array([None, dt.date(1996, 1, 1), dt.date(1995, 3, 15)], pa.date64()),
        "count": [1478870.0, 38854.0, 1478493.0],
    })
    assert compare(canonical(got), canonical(WANT)) is None
    assert compare(canonical(WANT), canonical(WANT)) is None


def _changed(column: str, row: int, value) -> pa.Table:
    values = WANT[column].to_pylist()
    values[row] = value
    return WANT.set_column(WANT.schema.get_field_index(column), column,
                           pa.array(values, WANT.schema.field(column).type))


DIFFERENT = [
    (_changed("sum_price", 0, Decimal("5658675.44")), "a large sum off by 3.5e-6 relative"),
    (_changed("sum_price", 1, Decimal("0.07")), "a small money value off by two cents"),
    (_changed("avg_disc", 0, 0.0500001), "a ratio off by 2e-6 relative (no cent tolerance)"),
    (_changed("flag", 2, "r"), "text differs in case"),
    (_changed("ship", 0, dt.date(1995, 3, 16)), "a date a day later"),
    (_changed("ship", 2, dt.date(1995, 3, 16)), "a date where NULL was"),
    (_changed("count", 1, 38855), "a count off by one"),
    (WANT.slice(0, 2), "a row missing"),
    (WANT.drop_columns(["count"]), "a column missing"),
]


@pytest.mark.parametrize("got, why", DIFFERENT, ids=[why for _, why in DIFFERENT])
def test_different_answers_fail(got, why):
    assert compare(canonical(got), canonical(WANT)) is not None, why


def test_queries_are_the_22():
    queries = tpch_sql.load_queries(None)
    assert list(queries) == [f"q{i:02d}" for i in range(1, 23)]
    assert not any(q.rstrip().endswith(";") for q in queries.values())
    assert list(tpch_sql.load_queries("q17,q01")) == ["q17", "q01"]


def test_sweep_files(tmp_path):
    layouts = tpch_sql.sweep_tables(str(tmp_path), 20_000, 1_000)
    for layout, tables in layouts.items():
        key = pq.ParquetFile(tables["fact"]).metadata.row_group(0).column(0)
        assert key.path_in_schema == "k"
        assert ("RLE_DICTIONARY" in key.encodings) == (layout == "dict")
        assert key.has_offset_index  # page index written
    fact = pq.read_table(layouts["dict"]["fact"])
    assert fact.equals(pq.read_table(layouts["plain"]["fact"]))
    assert fact.num_rows == 20_000 and fact.column_names == ["k", "v1", "v2", "v3", "v4"]
    dim = pq.read_table(layouts["dict"]["dim"])
    assert dim["k"].to_pylist() == list(range(1_000))
    kept = sum(s < 0.2 for s in dim["sel"].to_pylist()) / 1_000
    assert 0.15 < kept < 0.25
    assert os.path.basename(os.path.dirname(layouts["dict"]["fact"])).startswith("_")  # not a table


def _peers() -> str:
    pytest.importorskip("duckdb")
    pytest.importorskip("datafusion")
    cli = os.environ.get("TAMIS_CLI")
    return "datafusion,duckdb" + (",tamis,tamis-no-rf" if cli else "")


@pytest.fixture(scope="module")
def tpch_dir(tmp_path_factory):
    """SF 0.01 tables from `tamis gen tpch` (TAMIS_CLI), else from tpchgen-cli if installed."""
    out = str(tmp_path_factory.mktemp("tpch-sf0.01"))
    cli = os.environ.get("TAMIS_CLI")
    if cli:
        subprocess.run([cli, "gen", "tpch", "--scale-factor", "0.01", "--output", out], check=True)
    elif shutil.which("tpchgen-cli"):
        subprocess.run(["tpchgen-cli", "parquet", "-s", "0.01", "--output-dir", out], check=True)
    else:
        pytest.skip("set TAMIS_CLI (or install tpchgen-cli) to generate TPC-H tables")
    return out


def _run(argv, results_dir) -> None:
    cli = os.environ.get("TAMIS_CLI")
    argv = argv + ["--threads", "1", "--runs", "1", "--results-dir", str(results_dir)]
    assert tpch_sql.main(argv + (["--tamis-cli", cli] if cli else [])) == 0


def test_tpch_smoke(tpch_dir, tmp_path):
    engines = _peers()
    _run(["--data-dir", tpch_dir, "--queries", "q01,q06", "--engines", engines, "--experiments", "tpch"],
         tmp_path)
    with open(tmp_path / "tpch-sql.json") as f:
        rows = json.load(f)
    assert {(r["query"], r["engine"]) for r in rows} == {
        (q, e) for q in ("q01", "q06") for e in engines.split(",")}
    assert all(r["ok"] is True and r["median_s"] > 0 and len(r["runs"]) == 1 for r in rows)
    # One thread: measured in a process confined to one CPU (where the platform can).
    if hasattr(os, "sched_setaffinity"):
        assert {r["cpus"] for r in rows} == {1}
    assert {r["rows"] for r in rows if r["query"] == "q01"} == {4}
    markdown = (tmp_path / "tpch-sql.md").read_text()
    assert "| q06 | 1 |" in markdown and "geomean (2)" in markdown
    assert (tmp_path / "tpch-sql-1t.png").exists()


def test_sweep_smoke(tmp_path):
    engines = _peers()
    _run(["--data-dir", str(tmp_path / "data"), "--engines", engines, "--experiments", "sweep",
          "--sweep-rows", "20000", "--keys", "1000"], tmp_path)
    with open(tmp_path / "join-sweep.json") as f:
        rows = json.load(f)
    assert len(rows) == 2 * len(tpch_sql.SWEEP_SELECTIVITIES) * len(engines.split(","))
    assert all(r["ok"] is True and r["rows"] == 1 for r in rows)
    assert (tmp_path / "join-sweep-1t.png").exists()

