"""Issue 41's benchmark: TPC-H lineitem as a Delta table and as an Iceberg table, partitioned
by ship year, with 5% of the rows deleted (deletion vectors / positional delete files), read by
tamis and by the peers that read each format.

    python bench/lakehouse.py --lineitem /path/to/tpch-sf1/lineitem.parquet --out DIR

Tables are written once into DIR (``delta/``, ``iceberg/`` with its SQLite catalog) by
``deltalake`` and ``pyiceberg``; the deletes are added by the writers the tests use
(``crates/tamis-python/tests/table_writers.py``): one deletion vector / positional delete file
per data file, the same 5% of positions (seeded) in both formats.

Queries: Q6 (the filter and ``sum(l_extendedprice * l_discount)``), ``l_orderkey = K`` and
``l_partkey = K`` (every column of the matching rows), Q1 (the aggregate), and ``planning``:
``l_orderkey = -1``, which no file holds, so that its time is reading the log or the manifests,
pruning and the footers it cannot avoid (the issue's "log or manifest to first byte").

Engines: tamis (``tamis.scan`` / ``tamis.sql`` for Q1), delta-rs's own DataFusion
(``QueryBuilder``),
Polars ``scan_delta`` / ``scan_iceberg``, pyiceberg ``scan().to_arrow()`` (+ pyarrow for the
aggregates), DuckDB's ``delta`` / ``iceberg`` extensions where they load (they are downloaded
on first use: offline they are reported as unavailable). Each engine's answer is checked
against tamis's; a differing one is reported as wrong, not timed. Each cell: the median of
``--runs`` runs after one warm-up, in one process, with ``--threads`` threads where the engine
takes a count.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import statistics
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Callable, Dict, List, Optional

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "crates/tamis-python/tests"))
from table_writers import (  # noqa: E402
    add_delete_files,
    add_deletion_vector,
    positional_delete_file,
)

SEED = 41
DELETED = 0.05
ORDERKEY = 3_000_001
PARTKEY = 100_000

Q6_SQL = ("l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' "
          "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24")
Q1_SQL = """SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty,
  sum(l_extendedprice) AS sum_base_price,
  sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
  sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
  avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, avg(l_discount) AS avg_disc,
  count(*) AS count_order
FROM lineitem WHERE l_shipdate <= DATE '1998-09-02'
GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus"""


def deleted_positions(rows: int, name: str) -> List[int]:
    rnd = random.Random(f"{SEED}-{name}")
    return sorted(rnd.sample(range(rows), int(rows * DELETED)))


def build_delta(lineitem: pa.Table, root: Path) -> Path:
    import deltalake

    path = root / "delta"
    if (path / "_delta_log").is_dir():
        return path
    years = pc.year(lineitem.column("l_shipdate")).cast(pa.int32())
    deltalake.write_deltalake(str(path), lineitem.append_column("l_shipyear", years),
                              partition_by=["l_shipyear"])
    dt_ = deltalake.DeltaTable(str(path))
    adds = pa.table(dt_.get_add_actions(flatten=True)).to_pylist()
    add_deletion_vector(path, {a["path"]: deleted_positions(a["num_records"], a["path"])
                               for a in adds})
    return path


def build_iceberg(lineitem: pa.Table, root: Path) -> str:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import YearTransform

    (root / "iceberg").mkdir(parents=True, exist_ok=True)
    catalog = SqlCatalog("bench", uri=f"sqlite:///{root / 'iceberg' / 'catalog.db'}",
                         warehouse=f"file://{root / 'iceberg'}")
    catalog.create_namespace_if_not_exists("tpch")
    if catalog.table_exists("tpch.lineitem"):
        return catalog.load_table("tpch.lineitem").metadata_location
    table = catalog.create_table("tpch.lineitem", schema=lineitem.schema)
    with table.update_spec() as spec:
        spec.add_field("l_shipdate", YearTransform(), "l_shipyear")
    table = catalog.load_table("tpch.lineitem")
    table.append(lineitem)
    files = [task.file for task in table.scan().plan_files()]
    add_delete_files(table, [positional_delete_file(
        table, f, deleted_positions(f.record_count, os.path.basename(f.file_path)))
        for f in files])
    return catalog.load_table("tpch.lineitem").metadata_location


# ── the engines ──────────────────────────────────────────────────────────────────────────────
# Each returns, per query name, a function computing the answer as a pyarrow Table (sorted
# where order is not part of the query), or None when the engine cannot read the table.

def q6_of(t: pa.Table) -> pa.Table:
    revenue = pc.sum(pc.multiply(t.column("l_extendedprice").cast(pa.float64()),
                                 t.column("l_discount").cast(pa.float64())))
    return pa.table({"revenue": [revenue.as_py() or 0.0]})


def q1_of(t: pa.Table) -> pa.Table:
    """Q1 computed by pyarrow from the filtered rows (for engines without SQL)."""
    f = lambda c: t.column(c).cast(pa.float64())  # noqa: E731
    disc_price = pc.multiply(f("l_extendedprice"), pc.subtract(1.0, f("l_discount")))
    charge = pc.multiply(disc_price, pc.add(1.0, f("l_tax")))
    t = pa.table({"l_returnflag": t.column("l_returnflag"),
                  "l_linestatus": t.column("l_linestatus"), "qty": f("l_quantity"),
                  "price": f("l_extendedprice"), "disc": f("l_discount"),
                  "disc_price": disc_price, "charge": charge})
    g = t.group_by(["l_returnflag", "l_linestatus"]).aggregate(
        [("qty", "sum"), ("price", "sum"), ("disc_price", "sum"), ("charge", "sum"),
         ("qty", "mean"), ("price", "mean"), ("disc", "mean"), ("qty", "count")])
    g = g.select(["l_returnflag", "l_linestatus", "qty_sum", "price_sum", "disc_price_sum",
                  "charge_sum", "qty_mean", "price_mean", "disc_mean", "qty_count"])
    return normalized(g.sort_by([("l_returnflag", "ascending"), ("l_linestatus", "ascending")]))


def normalized(t: pa.Table) -> pa.Table:
    """Column names dropped and numbers as float64, int64 and string, so that answers of
    several engines compare (see `same`)."""
    cols = []
    for c in t.columns:
        if pa.types.is_decimal(c.type) or pa.types.is_floating(c.type):
            c = c.cast(pa.float64())
        elif pa.types.is_integer(c.type):
            c = c.cast(pa.int64())
        elif pa.types.is_string(c.type) or pa.types.is_large_string(c.type) \
                or pa.types.is_string_view(c.type):
            c = c.cast(pa.string())
        elif pa.types.is_binary_view(c.type) or pa.types.is_large_binary(c.type):
            c = c.cast(pa.binary())
        cols.append(c)
    return pa.table(cols, names=[f"c{i}" for i in range(len(cols))])


def same(a: pa.Table, b: pa.Table) -> bool:
    """Equal answers: the same rows, floating-point sums and means within 1e-6 (relative,
    absolute below 1) of each other: engines sum in different orders, and SQL's decimal
    averages keep 6 digits."""
    if a.shape != b.shape:
        return False
    for x, y in zip(a.columns, b.columns):
        if pa.types.is_floating(x.type) and pa.types.is_floating(y.type):
            for u, v in zip(x.to_pylist(), y.to_pylist()):
                if (u is None) != (v is None) or (u is not None and abs(u - v) > 1e-6 * max(1.0, abs(u))):
                    return False
        elif not x.equals(y):
            return False
    return True


def rows_of(t: pa.Table) -> pa.Table:
    names = sorted(n for n in t.column_names if n != "l_shipyear")
    t = normalized(t.select(names))
    return t.sort_by([(n, "ascending") for n in t.column_names])


def tamis_engine(location: str, threads: int) -> Dict[str, Callable[[], pa.Table]]:
    import tamis

    scan = lambda where, columns=None: tamis.scan(  # noqa: E731
        location, where=where, columns=columns, threads=threads)
    opened = tamis.Dataset(location)
    return {
        "Q6": lambda: q6_of(scan(Q6_SQL, ["l_extendedprice", "l_discount"])),
        "l_orderkey = K": lambda: rows_of(scan(f"l_orderkey = {ORDERKEY}")),
        "l_partkey = K": lambda: rows_of(scan(f"l_partkey = {PARTKEY}")),
        "Q1": lambda: normalized(tamis.sql(Q1_SQL, tables={"lineitem": location},
                                           threads=threads)),
        "planning": lambda: rows_of(scan("l_orderkey = -1")),
        # The table opened once (a `Dataset`), as delta-rs's registered table is.
        "planning, opened before": lambda: rows_of(opened.scan(where="l_orderkey = -1",
                                                              threads=threads)),
    }


def polars_engine(scan) -> Dict[str, Callable[[], pa.Table]]:
    import polars as pl

    q6 = ((pl.col("l_shipdate") >= dt.date(1994, 1, 1)) & (pl.col("l_shipdate") < dt.date(1995, 1, 1))
          & pl.col("l_discount").is_between(Decimal("0.05"), Decimal("0.07"))
          & (pl.col("l_quantity") < Decimal("24")))
    q1_filter = pl.col("l_shipdate") <= dt.date(1998, 9, 2)
    return {
        "Q6": lambda: q6_of(scan().filter(q6).select("l_extendedprice", "l_discount")
                            .collect().to_arrow()),
        "l_orderkey = K": lambda: rows_of(scan().filter(pl.col("l_orderkey") == ORDERKEY)
                                          .collect().to_arrow()),
        "l_partkey = K": lambda: rows_of(scan().filter(pl.col("l_partkey") == PARTKEY)
                                         .collect().to_arrow()),
        "Q1": lambda: q1_of(scan().filter(q1_filter).select(
            "l_returnflag", "l_linestatus", "l_quantity", "l_extendedprice", "l_discount",
            "l_tax").collect().to_arrow()),
        "planning": lambda: rows_of(scan().filter(pl.col("l_orderkey") == -1)
                                    .collect().to_arrow()),
    }


def sql_queries(sql: Callable[[str], pa.Table]) -> Dict[str, Callable[[], pa.Table]]:
    """The queries for an engine that runs SQL over a table named `lineitem`."""
    return {
        "Q6": lambda: q6_of(sql(f"SELECT l_extendedprice, l_discount FROM lineitem WHERE {Q6_SQL}")),
        "l_orderkey = K": lambda: rows_of(sql(f"SELECT * FROM lineitem WHERE l_orderkey = {ORDERKEY}")),
        "l_partkey = K": lambda: rows_of(sql(f"SELECT * FROM lineitem WHERE l_partkey = {PARTKEY}")),
        "Q1": lambda: normalized(sql(Q1_SQL)),
        "planning": lambda: rows_of(sql("SELECT * FROM lineitem WHERE l_orderkey = -1")),
    }


def delta_rs_engine(path: Path) -> Dict[str, Callable[[], pa.Table]]:
    """delta-rs's own DataFusion (`QueryBuilder`): the table provider of the Rust crate, with
    its log replay, file skipping and deletion vectors."""
    import deltalake

    builder = deltalake.QueryBuilder().register("lineitem", deltalake.DeltaTable(str(path)))
    sql = lambda q: pa.table(builder.execute(q).read_all())  # noqa: E731
    queries = sql_queries(sql)
    # `planning` is from the log to the answer, as for every engine here (tamis, Polars and
    # pyiceberg open the table in each call), so the table is loaded in the timed call; the
    # other queries, and `planning, opened before`, run on the table registered once.
    queries["planning, opened before"] = queries["planning"]
    opened = lambda q: pa.table(deltalake.QueryBuilder().register(  # noqa: E731
        "lineitem", deltalake.DeltaTable(str(path))).execute(q).read_all())
    queries["planning"] = lambda: rows_of(opened("SELECT * FROM lineitem WHERE l_orderkey = -1"))
    return queries


def pyiceberg_engine(metadata: str) -> Dict[str, Callable[[], pa.Table]]:
    from pyiceberg.table import StaticTable

    def scan(row_filter: str, fields=("*",)) -> pa.Table:
        table = StaticTable.from_metadata(metadata)
        return table.scan(row_filter=row_filter, selected_fields=fields).to_arrow()

    q6 = ("l_shipdate >= '1994-01-01' AND l_shipdate < '1995-01-01' AND l_discount >= 0.05 "
          "AND l_discount <= 0.07 AND l_quantity < 24")
    return {
        "Q6": lambda: q6_of(scan(q6, ("l_extendedprice", "l_discount"))),
        "l_orderkey = K": lambda: rows_of(scan(f"l_orderkey = {ORDERKEY}")),
        "l_partkey = K": lambda: rows_of(scan(f"l_partkey = {PARTKEY}")),
        "Q1": lambda: q1_of(scan("l_shipdate <= '1998-09-02'", (
            "l_returnflag", "l_linestatus", "l_quantity", "l_extendedprice", "l_discount",
            "l_tax"))),
        "planning": lambda: rows_of(scan("l_orderkey = -1")),
    }


def duckdb_engine(function: str, location: str, threads: int) -> Dict[str, Callable[[], pa.Table]]:
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    extension = function.split("_")[0]
    con.execute(f"LOAD {extension}")  # raises when it is not installed (offline)
    source = f"{function}('{location}')"
    sql = lambda q: con.sql(q.replace("FROM lineitem", f"FROM {source}")).to_arrow_table()  # noqa: E731
    return sql_queries(sql)


# ── the run ──────────────────────────────────────────────────────────────────────────────────

def measure(run: Callable[[], pa.Table], runs: int) -> tuple:
    answer = run()  # the warm-up, and the answer checked
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lineitem", required=True)
    parser.add_argument("--out", required=True, help="directory for the tables")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()
    root = Path(args.out)
    root.mkdir(parents=True, exist_ok=True)
    lineitem = pq.read_table(args.lineitem)
    delta = build_delta(lineitem, root)
    iceberg = build_iceberg(lineitem, root)
    del lineitem

    import polars as pl

    engines: Dict[str, Dict[str, Callable[[], Optional[Dict]]]] = {
        "Delta": {
            "tamis": lambda: tamis_engine(str(delta), args.threads),
            "delta-rs (DataFusion)": lambda: delta_rs_engine(delta),
            "Polars scan_delta": lambda: polars_engine(lambda: pl.scan_delta(str(delta))),
            "DuckDB delta_scan": lambda: duckdb_engine("delta_scan", str(delta), args.threads),
        },
        "Iceberg": {
            "tamis": lambda: tamis_engine(iceberg, args.threads),
            "pyiceberg": lambda: pyiceberg_engine(iceberg),
            "Polars scan_iceberg": lambda: polars_engine(lambda: pl.scan_iceberg(iceberg)),
            "DuckDB iceberg_scan": lambda: duckdb_engine("iceberg_scan", iceberg, args.threads),
        },
    }
    results = {"date": dt.date.today().isoformat(), "threads": args.threads, "runs": args.runs,
               "lineitem": args.lineitem, "formats": {}}
    for fmt, by_engine in engines.items():
        out = results["formats"].setdefault(fmt, {})
        truth: Dict[str, pa.Table] = {}
        for engine, make in by_engine.items():
            try:
                queries = make()
            except Exception as e:  # noqa: BLE001 - an engine that cannot start is reported
                out[engine] = {"unavailable": f"{type(e).__name__}: {e}".splitlines()[0][:200]}
                print(f"{fmt:8} {engine:24} unavailable: {out[engine]['unavailable']}", flush=True)
                continue
            for query, run in queries.items():
                try:
                    # Planning takes milliseconds: 21 runs at least, for a steadier median.
                    runs = max(args.runs, 21) if query.startswith("planning") else args.runs
                    ms, answer = measure(run, runs)
                except Exception as e:  # noqa: BLE001
                    cell = {"failed": f"{type(e).__name__}: {e}".splitlines()[0][:200]}
                else:
                    if engine == "tamis":
                        truth[query] = answer
                    wrong = query in truth and not same(answer, truth[query])
                    cell = {"wrong": True} if wrong else {"ms": round(ms, 2)}
                out.setdefault(engine, {})[query] = cell
                print(f"{fmt:8} {engine:24} {query:16} {cell}", flush=True)
    print()
    for fmt, by_engine in results["formats"].items():
        queries = list(next(iter(by_engine.values())).keys())
        print(f"### {fmt} (median ms of {args.runs} runs, of 21 or more for planning; "
              f"{args.threads} threads)\n")
        print("| engine | " + " | ".join(queries) + " |")
        print("|---|" + "---|" * len(queries))
        for engine, cells in by_engine.items():
            if "unavailable" in cells:
                print(f"| {engine} | unavailable: {cells['unavailable']} |")
                continue
            row = []
            for q in queries:
                c = cells.get(q)
                if c is None:  # a query this engine does not have
                    row.append("—")
                    continue
                row.append(f"{c['ms']:.1f}" if "ms" in c else ("wrong rows" if c.get("wrong")
                                                               else "failed"))
            print(f"| {engine} | " + " | ".join(row) + " |")
        print()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
