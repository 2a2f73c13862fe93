"""``tamis.sql``: DataFusion over tamis scans, checked against DuckDB and pyarrow.

The TPC-H test generates all 8 tables with the ``tamis`` CLI (``TAMIS_CLI``) at a small scale
factor and runs the 22 standard queries (``bench/tpch/queries``) through ``tamis.sql`` and
DuckDB: the same rows, numbers within a relative tolerance, in the same order where the query
orders.
"""

from __future__ import annotations

import datetime
import decimal
import math
import os
import pathlib
import shutil
import subprocess

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

import tamis
from tamis.errors import InvalidArgumentError, SqlError, TamisError

QUERIES = pathlib.Path(__file__).resolve().parents[3] / "bench" / "tpch" / "queries"
TABLES = ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"]


def _cli() -> str | None:
    return os.environ.get("TAMIS_CLI") or shutil.which("tamis")


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    d = tmp_path_factory.mktemp("sql")
    t = pa.table({
        "id": pa.array(range(1000), pa.int64()),
        "grp": pa.array([f"g{i % 7}" for i in range(1000)]),
        "x": pa.array([None if i % 13 == 0 else i * 0.5 for i in range(1000)], pa.float64()),
    })
    pq.write_table(t, d / "t.parquet", row_group_size=100)
    u = pa.table({"grp": [f"g{i}" for i in range(7)], "label": [f"L{i}" for i in range(7)]})
    pq.write_table(u, d / "u.parquet")
    return d, t


def test_sql_returns_a_pyarrow_table(small):
    d, t = small
    got = tamis.sql("SELECT id, grp FROM t WHERE id BETWEEN 10 AND 19 ORDER BY id",
                    tables={"t": d / "t.parquet"})
    assert isinstance(got, pa.Table)
    assert got.column("id").to_pylist() == list(range(10, 20))
    assert got.column("grp").to_pylist() == [f"g{i % 7}" for i in range(10, 20)]


def test_sql_joins_and_aggregates(small):
    d, t = small
    got = tamis.sql(
        "SELECT label, count(*) AS n, sum(x) AS s FROM t JOIN u USING (grp) "
        "WHERE id < 500 GROUP BY label ORDER BY label",
        tables={"t": str(d / "t.parquet"), "u": str(d / "u.parquet")}, threads=2)
    rows = [r for r in t.to_pylist() if r["id"] < 500]
    expected = {}
    for r in rows:
        n, s = expected.get("L" + r["grp"][1:], (0, 0.0))
        expected["L" + r["grp"][1:]] = (n + 1, s + (r["x"] or 0.0))
    assert got.column("label").to_pylist() == sorted(expected)
    assert got.column("n").to_pylist() == [expected[k][0] for k in sorted(expected)]
    for s, k in zip(got.column("s").to_pylist(), sorted(expected)):
        assert math.isclose(s, expected[k][1], rel_tol=1e-12)


def _group_counts(d, low, high, threads):
    got = tamis.sql(
        f"SELECT grp, count(*) AS n FROM t WHERE id >= {low} AND id < {high} GROUP BY grp ORDER BY grp",
        tables={"t": str(d / "t.parquet")}, threads=threads)
    return list(zip(got.column("grp").to_pylist(), got.column("n").to_pylist()))


def _expected_counts(low, high):
    counts = {}
    for i in range(low, high):
        counts[f"g{i % 7}"] = counts.get(f"g{i % 7}", 0) + 1
    return sorted(counts.items())


def test_sql_queries_at_once_share_a_width_and_keep_their_rows(small):
    """Queries from several Python threads run on the runtime kept for their width: each
    returns its own rows."""
    from concurrent.futures import ThreadPoolExecutor
    d, _ = small
    bounds = [(i * 37, i * 37 + 400) for i in range(16)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda b: _group_counts(d, *b, threads=3), bounds))
    for (low, high), got in zip(bounds, results):
        assert got == _expected_counts(low, high)


def _child_counts(d, out):
    out.put(_group_counts(d, 5, 505, threads=3))


def test_sql_in_a_forked_child_after_the_parent_ran_queries(small):
    """A child made by fork inherits the kept runtimes and scan pools but not their threads:
    its queries start their own instead of waiting forever."""
    import multiprocessing
    d, _ = small
    assert _group_counts(d, 0, 1000, threads=3) == _expected_counts(0, 1000)
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_child_counts, args=(d, out))
    child.start()
    try:
        got = out.get(timeout=120)
    finally:
        child.join(timeout=120)
        if child.is_alive():
            child.kill()
    assert got == _expected_counts(5, 505)
    assert child.exitcode == 0


def test_sql_errors_are_one_line(small):
    d, _ = small
    with pytest.raises(SqlError) as e:
        tamis.sql("SELEKT 1", tables={"t": d / "t.parquet"})
    assert "\n" not in str(e.value)
    with pytest.raises(SqlError) as e:
        tamis.sql("SELECT nope FROM t", tables={"t": d / "t.parquet"})
    assert "nope" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises((TamisError, OSError)) as e:
        tamis.sql("SELECT 1", tables={"t": d / "missing.parquet"})
    assert "missing.parquet" in str(e.value)
    with pytest.raises(InvalidArgumentError):
        tamis.sql("SELECT 1", tables={"": d / "t.parquet"})


@pytest.mark.parametrize("statement", [
    "CREATE EXTERNAL TABLE e STORED AS CSV LOCATION '{t}'",
    "CREATE TABLE c AS SELECT * FROM t",
    "COPY (SELECT id FROM t) TO '{out}' STORED AS CSV",
    "INSERT INTO t SELECT * FROM t",
    "SET datafusion.execution.batch_size = 1",
    "DROP TABLE t",
    "CREATE VIEW v AS SELECT id FROM t",
])
def test_sql_refuses_statements_unless_allowed(small, tmp_path, statement):
    d, _ = small
    out = tmp_path / "out.csv"
    query = statement.format(t=d / "t.parquet", out=out)
    with pytest.raises(SqlError) as e:
        tamis.sql(query, tables={"t": d / "t.parquet"})
    message = str(e.value)
    assert "\n" not in message and "allow_statements=True" in message, message
    assert not out.exists()


def test_sql_runs_queries_and_allowed_statements(small, tmp_path):
    d, t = small
    tables = {"t": d / "t.parquet"}
    got = tamis.sql("WITH w AS (SELECT id FROM t WHERE id < 3) SELECT id FROM w ORDER BY id",
                    tables=tables)
    assert got.column("id").to_pylist() == [0, 1, 2]
    plan = tamis.sql("EXPLAIN SELECT id FROM t WHERE id < 3", tables=tables)
    assert any("TamisExec" in p for p in plan.column("plan").to_pylist())
    out = tmp_path / "out.csv"
    tamis.sql(f"COPY (SELECT id FROM t WHERE id < 10) TO '{out}' STORED AS CSV",
              tables=tables, allow_statements=True)
    assert sorted(pa_csv.read_csv(out).column("id").to_pylist()) == list(range(10))


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, (float, decimal.Decimal)) or isinstance(b, (float, decimal.Decimal)):
        return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-6)
    if isinstance(a, datetime.datetime) and isinstance(b, datetime.date):
        a = a.date()
    return a == b


def _key(row):
    return tuple((v is None, str(v) if not isinstance(v, (int, float, decimal.Decimal))
                  else round(float(v), 4)) for v in row)


@pytest.fixture(scope="module")
def tpch(tmp_path_factory):
    cli = _cli()
    if cli is None:
        pytest.skip("TAMIS_CLI (the tamis binary) is needed to generate TPC-H data")
    out = tmp_path_factory.mktemp("tpch")
    subprocess.run([cli, "gen", "tpch", "--scale-factor", "0.01", "--output", str(out)],
                   check=True, timeout=600)
    return out


@pytest.mark.parametrize("runtime_filters", [True, False], ids=["runtime-filters", "no-runtime-filters"])
@pytest.mark.parametrize("q", range(1, 23))
def test_tpch_query_matches_duckdb(tpch, q, runtime_filters):
    """Each query's rows equal DuckDB's, with join keys pushed into the scans and without."""
    duckdb = pytest.importorskip("duckdb")
    text = (QUERIES / f"q{q:02d}.sql").read_text()
    tables = {t: tpch / f"{t}.parquet" for t in TABLES}
    ours = tamis.sql(text, tables=tables, threads=2, runtime_filters=runtime_filters)
    con = duckdb.connect()
    for t in TABLES:
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{tpch / (t + '.parquet')}')")
    theirs = con.execute(text).fetchall()
    mine = [tuple(r.values()) for r in ours.to_pylist()]
    assert len(mine) == len(theirs), f"Q{q}: {len(mine)} rows, DuckDB {len(theirs)}"
    ordered = "order by" in text.lower()
    if not ordered:
        mine, theirs = sorted(mine, key=_key), sorted(theirs, key=_key)
    for i, (a, b) in enumerate(zip(mine, theirs)):
        assert len(a) == len(b), f"Q{q} row {i}: {a} vs {b}"
        assert all(_close(x, y) for x, y in zip(a, b)), f"Q{q} row {i}: {a} vs DuckDB {b}"


def test_dataset_registers_into_the_datafusion_package(small):
    """A tamis.Dataset is a table of datafusion's own SessionContext (its foreign table
    protocol): filters, a join and an aggregate return the rows pyarrow computes."""
    datafusion = pytest.importorskip("datafusion")
    d, t = small
    ctx = datafusion.SessionContext()
    ctx.register_table("t", tamis.Dataset(d / "t.parquet"))
    ctx.register_table("u", tamis.Dataset(d / "u.parquet"))
    got = ctx.sql("SELECT id, grp, x FROM t WHERE id >= 120 AND id < 260 AND grp <> 'g3' "
                  "AND x > 70.0 ORDER BY id").to_arrow_table()
    rows = [r for r in t.to_pylist()
            if 120 <= r["id"] < 260 and r["grp"] != "g3" and r["x"] is not None and r["x"] > 70.0]
    assert got.to_pylist() == rows
    joined = ctx.sql("SELECT label, count(*) AS n FROM t JOIN u USING (grp) "
                     "WHERE id % 2 = 0 GROUP BY label ORDER BY label").to_arrow_table()
    counts = {}
    for r in t.to_pylist():
        if r["id"] % 2 == 0:
            label = "L" + r["grp"][1:]
            counts[label] = counts.get(label, 0) + 1
    assert joined.column("label").to_pylist() == sorted(counts)
    assert joined.column("n").to_pylist() == [counts[k] for k in sorted(counts)]


def test_datafusion_of_another_major_version_is_refused(small, monkeypatch):
    d, _ = small
    monkeypatch.setattr(tamis._tamis, "DATAFUSION_FFI_MAJOR", 1)
    with pytest.raises(TypeError, match="datafusion 1.x"):
        tamis.Dataset(d / "t.parquet").__datafusion_table_provider__(None)
