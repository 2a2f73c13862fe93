#!/usr/bin/env python3
"""Suite `tpch-sql`: the 22 TPC-H queries end to end, tamis against DataFusion and DuckDB on the
same Parquet tables; and `join-sweep`, one join whose build side keeps 0.1 % … 50 % of the keys,
with tamis's runtime join filters on and off (paper 000's J3 in miniature).

    python bench/tpch_sql.py --data-dir data/tpch-sf1                 # SF1, threads 1 and 2
    python bench/tpch_sql.py --data-dir data/tpch-sf1 --queries q01,q17 --engines tamis,duckdb
    python bench/tpch_sql.py --data-dir data/tpch-sf1 --experiments sweep
    python bench/tpch_sql.py --data-dir /tmp/tpch --smoke            # SF 0.01, 1 run: the harness

``--data-dir`` holds one NAME.parquet per TPC-H table; missing tables are generated there by
`tamis gen tpch` at ``--sf`` (``--smoke`` uses SF 0.01 in DIR/_smoke-sf0.01). The sweep's files
go to DIR/_join-sweep-ROWS-KEYS/: a leading underscore, so `tamis sql --tables DIR` skips them.

Engines: ``tamis`` runs `tamis.sql` in process when the Python package has it, else the
`tamis sql` CLI (``--tamis-cli``), timed as the whole process; ``tamis-no-rf`` is the same
without runtime filters; ``datafusion`` and ``datafusion-pushdown`` are the PyPI package (the
latter with Parquet filter pushdown and reordering, as in bench/engines.py); ``duckdb``. A
thread count is tamis's threads, DataFusion's target partitions, DuckDB's threads. An engine
whose package or binary is missing is skipped, with the reason. Each thread count N runs in
a process of its own confined to N CPUs from its start (``sched_setaffinity``), as on an N-core
machine: no engine gets more cores than the count says (a tamis scan decodes on threads of its
own beside DataFusion's workers, and the `datafusion` package starts a worker per core whatever
its target partitions), and engines that size their pools by the CPUs they see size them for N
(``--no-pin`` runs every count in this process, on every CPU). Every run registers the
tables anew (a fresh DataFusion session, fresh DuckDB views; tamis opens them per call), so no
engine keeps footers or listings that another must read again.

Warm cache: each query runs once per engine (the warm-up, whose answer is checked against
DuckDB's; tamis in process twice, as its memory tier keeps a page on its second read), then ``--runs`` timed runs with the engines interleaved (the order rotates); the
median is reported. A wrong answer or an error is printed loudly, recorded (``ok: false``) and
makes the exit status 1.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import glob
import json
import math
import os

# Peers decompress every page of every query: tamis's page cache (on by default in a process
# that can hit it) is off here unless TAMIS_PAGE_CACHE asks for it (bench/page_cache.py and
# bench/disk_cache.py measure the cache).
os.environ.setdefault("TAMIS_PAGE_CACHE", "0")
# numpy (loaded with pyarrow) starts an OpenBLAS thread per other core, which spins in
# `blas_thread_server` beside the engines it times (0.7 % of a 2-thread profile); no
# engine here uses BLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Dict, List, Optional, Sequence, Tuple

import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
QUERY_DIR = os.path.join(HERE, "tpch", "queries")
TABLES = ("lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region")
ENGINES = ("tamis", "tamis-no-rf", "datafusion", "datafusion-pushdown", "duckdb")
TPCH, SWEEP = "tpch-sql", "join-sweep"
# Numbers match within a relative 1e-6 (summation order, float vs decimal arithmetic); money
# (a decimal column on either side) also within one cent, as engines round decimal sums and
# products at different scales. Strings and dates match exactly.
REL_TOL, ABS_TOL_MONEY, ABS_TOL = 1e-6, 1e-2, 1e-9
SWEEP_SELECTIVITIES = (0.001, 0.01, 0.05, 0.2, 0.5)
SWEEP_SQL = "SELECT sum(f.v1) FROM fact f JOIN dim d ON f.k = d.k WHERE d.sel < {s}"
SEED = 20261125


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", required=True, help="directory of the TPC-H tables (NAME.parquet)")
    p.add_argument("--sf", type=float, default=1.0, help="scale factor of tables generated when missing")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--runs", type=int, default=5, help="timed runs per engine and query, after one warm-up")
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--queries", default=None, help="comma-separated, e.g. q01,q17 (default: all)")
    p.add_argument("--experiments", default="tpch,sweep", help="tpch, sweep or both")
    p.add_argument("--sweep-rows", type=int, default=None, help="fact rows of the sweep (default 4M; smoke 50k)")
    p.add_argument("--keys", type=int, default=None, help="distinct join keys of the sweep (default 100k; smoke 5k)")
    p.add_argument("--results-dir", default=os.path.join(HERE, "results"))
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    p.add_argument("--tamis-cli", default=os.path.join(target, "release", "tamis"),
                   help="tamis binary: generates missing tables; runs SQL without the Python package")
    p.add_argument("--tamis-process", action="store_true",
                   help="run tamis as its CLI, a new process per run (every run a first run: an empty "
                        "page cache), even where the Python package is installed")
    p.add_argument("--smoke", action="store_true", help="SF 0.01, 1 run, 1 thread, small sweep: checks the harness")
    p.add_argument("--no-pin", dest="pin", action="store_false",
                   help="run every thread count in this process, on every CPU")
    p.add_argument("--child-json", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.smoke:
        args.sf, args.runs, args.threads = 0.01, 1, "1"
        args.data_dir = os.path.join(args.data_dir, "_smoke-sf0.01")
        args.sweep_rows = args.sweep_rows or 50_000
        args.keys = args.keys or 5_000
    args.sweep_rows = args.sweep_rows or 4_000_000
    args.keys = args.keys or 100_000
    for option, known in (("engines", ENGINES), ("experiments", ("tpch", "sweep"))):
        unknown = set(getattr(args, option).split(",")) - set(known)
        if unknown:
            p.error(f"unknown {option} {sorted(unknown)}; known: {', '.join(known)}")
    return args


# ---- answers -------------------------------------------------------------------------------------


@dataclass
class Answer:
    """A result as sorted Python rows (engines order ties and unordered queries differently),
    and which columns hold money (decimals), for the tolerance."""

    rows: List[tuple]
    money: Tuple[bool, ...]


def _value(v):
    """Numbers as int or float, dates and times as ISO text: engines disagree on decimal scales,
    on float vs decimal and on date vs timestamp types, not on the values."""
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, (dt.date, dt.datetime, dt.time)):
        return v.isoformat()
    return v


def _sort_key(row: tuple) -> tuple:
    """None first, then numbers at 6 significant digits (so last-bit differences between engines
    do not reorder rows), then text."""
    key = []
    for v in row:
        if v is None:
            key.append((0, 0))
        elif isinstance(v, (int, float)):
            key.append((1, float(f"{v:.6g}")))
        else:
            key.append((2, v))
    return tuple(key)


def canonical(table: pa.Table) -> Answer:
    rows = [tuple(_value(v) for v in r.values()) for r in table.to_pylist()]
    return Answer(sorted(rows, key=_sort_key), tuple(pa.types.is_decimal(f.type) for f in table.schema))


def _same(x, y, money: bool) -> bool:
    if x is None or y is None:
        return x is None and y is None
    numbers = (int, float)
    if isinstance(x, numbers) and isinstance(y, numbers):
        if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
            return True
        return math.isclose(x, y, rel_tol=REL_TOL, abs_tol=ABS_TOL_MONEY if money else ABS_TOL)
    return type(x) is type(y) and x == y


def compare(got: Answer, want: Answer) -> Optional[str]:
    """None when the answers match (see REL_TOL), else what differs first."""
    if len(got.money) != len(want.money):
        return f"{len(got.money)} columns, expected {len(want.money)}"
    if len(got.rows) != len(want.rows):
        return f"{len(got.rows)} rows, expected {len(want.rows)}"
    money = tuple(a or b for a, b in zip(got.money, want.money))
    for i, (g, w) in enumerate(zip(got.rows, want.rows)):
        for j, (x, y) in enumerate(zip(g, w)):
            if not _same(x, y, money[j]):
                return f"sorted row {i}, column {j}: {x!r}, expected {y!r} (row {g!r}, expected {w!r})"
    return None


# ---- engines -------------------------------------------------------------------------------------


class EngineMissing(Exception):
    """The engine's package or binary is not there: the engine is skipped, with this reason."""


class Tamis:
    """tamis SQL (DataFusion planning over tamis scans), with runtime join filters or not."""

    def __init__(self, threads: int, cli: str, runtime_filters: bool = True, in_process: bool = True):
        self.name = "tamis" if runtime_filters else "tamis-no-rf"
        self.threads, self.cli, self.runtime_filters = threads, cli, runtime_filters
        try:
            import tamis
        except ImportError:
            tamis = None
        if not in_process:
            tamis = None  # --tamis-process: the CLI, a new process (a cold page cache) per run
        self.sql = getattr(tamis, "sql", None)
        # In process, the memory tier keeps a page on its second read (`tamis::cache`).
        self.extra_warmups = 1 if self.sql is not None else 0
        if self.sql is not None:
            self.version = f"tamis {tamis.__version__} (in process)"
            return
        if not os.access(cli, os.X_OK):
            raise EngineMissing(f"no tamis Python package with sql() and no CLI at {cli}")
        self.version = f"tamis CLI {cli}"
        self.out_dir = tempfile.mkdtemp(prefix="tamis-sql-")
        self.out = os.path.join(self.out_dir, "out.arrow")

    def run(self, query: str, tables: Dict[str, str]) -> Tuple[pa.Table, float]:
        if self.sql is not None:
            start = time.perf_counter()
            t = self.sql(query, tables=tables, threads=self.threads, runtime_filters=self.runtime_filters)
            return t, time.perf_counter() - start
        # Arrow IPC, not CSV: the answer keeps its types (decimals, dates, text like '13').
        cmd = [self.cli, "sql", "--threads", str(self.threads), "--format", "arrow", "--output", self.out]
        cmd += [f"--table={name}={path}" for name, path in tables.items()]
        if not self.runtime_filters:
            cmd.append("--no-runtime-filters")
        start = time.perf_counter()
        done = subprocess.run(cmd + ["--", query], capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(f"tamis sql exited with {done.returncode}: {done.stderr.strip()[-500:]}")
        with pa.ipc.open_file(self.out) as f:
            return f.read_all(), elapsed

    def close(self) -> None:
        if self.sql is None:
            shutil.rmtree(self.out_dir, ignore_errors=True)


class DataFusion:
    """The PyPI datafusion package; ``pushdown`` adds Parquet filter pushdown and reordering."""

    def __init__(self, threads: int, pushdown: bool = False):
        try:
            import datafusion
        except ImportError as e:
            raise EngineMissing(f"no datafusion package ({e})") from None
        self.name = "datafusion-pushdown" if pushdown else "datafusion"
        self.version = f"datafusion {datafusion.__version__}"
        config = datafusion.SessionConfig().with_target_partitions(threads)
        if pushdown:
            config = config.set("datafusion.execution.parquet.pushdown_filters", "true").set(
                "datafusion.execution.parquet.reorder_filters", "true")
        self.config, self.context = config, datafusion.SessionContext

    def run(self, query: str, tables: Dict[str, str]) -> Tuple[pa.Table, float]:
        start = time.perf_counter()
        ctx = self.context(self.config)  # a new session: no metadata cached from the last run
        for name, path in tables.items():
            ctx.register_parquet(name, path)
        t = ctx.sql(query).to_arrow_table()
        return t, time.perf_counter() - start


class DuckDB:
    """DuckDB over views on read_parquet; also the reference answer for every other engine."""

    name = "duckdb"

    def __init__(self, threads: int):
        try:
            import duckdb
        except ImportError as e:
            raise EngineMissing(f"no duckdb package ({e})") from None
        self.version = f"duckdb {duckdb.__version__}"
        self.con = duckdb.connect()
        self.con.execute(f"SET threads = {threads}")

    def run(self, query: str, tables: Dict[str, str]) -> Tuple[pa.Table, float]:
        start = time.perf_counter()
        for name, path in tables.items():
            quoted = path.replace("'", "''")
            self.con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet('{quoted}')")
        t = self.con.sql(query).to_arrow_table()
        return t, time.perf_counter() - start

    def close(self) -> None:
        self.con.close()


def open_engine(name: str, threads: int, cli: str, tamis_process: bool = False):
    if name in ("tamis", "tamis-no-rf"):
        return Tamis(threads, cli, runtime_filters=name == "tamis", in_process=not tamis_process)
    if name in ("datafusion", "datafusion-pushdown"):
        return DataFusion(threads, pushdown=name == "datafusion-pushdown")
    return DuckDB(threads)


class Bench:
    """Runs queries on the engines at one thread count, checks answers against DuckDB's (kept
    across thread counts) and makes the result rows."""

    def __init__(self, names: Sequence[str], threads: int, args, references: Dict[tuple, Answer],
                 skipped: Dict[str, str]):
        self.threads, self.runs, self.references = threads, args.runs, references
        self.engines = {}
        for name in names:
            try:
                self.engines[name] = open_engine(name, threads, args.tamis_cli, args.tamis_process)
            except EngineMissing as e:
                if name not in skipped:
                    print(f"bench: {name} skipped: {e}", flush=True)
                skipped[name] = str(e)
        self.reference = self.engines.get("duckdb")
        if self.reference is None and "duckdb" not in skipped:
            self.reference = DuckDB(threads)  # answers only, untimed
        elif self.reference is None:
            print("bench: no DuckDB: answers are NOT checked", flush=True)

    def versions(self) -> List[str]:
        return list(dict.fromkeys(e.version for e in self.engines.values()))

    def measure(self, suite: str, query: str, sql: str, tables: Dict[str, str], **extra) -> List[dict]:
        """One warm-up run per engine (answers checked), then the timed runs, interleaved."""
        answers, errors = {}, {}
        for name, engine in self.engines.items():
            try:
                answers[name] = canonical(engine.run(sql, tables)[0])
            except Exception as e:  # noqa: BLE001 - an engine failing a query is a result, reported
                errors[name] = f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
                loud(f"{suite} {query} {self.threads}t: {name} FAILED: {errors[name]}")
        key = (suite, query)
        if key not in self.references:
            if "duckdb" in answers:
                self.references[key] = answers["duckdb"]
            elif self.reference is not None and "duckdb" not in self.engines:
                self.references[key] = canonical(self.reference.run(sql, tables)[0])
        want = self.references.get(key)
        if want is None and self.reference is not None:
            loud(f"{suite} {query} {self.threads}t: DuckDB failed: the others are NOT checked")
        verdicts = {}
        for name, got in answers.items():
            verdicts[name] = None if want is None else compare(got, want)
            if verdicts[name]:
                loud(f"{suite} {query} {self.threads}t: {name} WRONG ANSWER vs duckdb: {verdicts[name]}")
        # tamis's memory tier keeps a page on its second read: one more untimed run fills it.
        for name in answers:
            for _ in range(getattr(self.engines[name], "extra_warmups", 0)):
                self.engines[name].run(sql, tables)
        times: Dict[str, List[float]] = {n: [] for n in answers}
        order = list(answers)
        for rep in range(self.runs):
            shift = rep % len(order) if order else 0
            for name in order[shift:] + order[:shift]:
                gc.collect()  # no collection pending from the last run falls into this one
                times[name].append(self.engines[name].run(sql, tables)[1])
        rows = []
        for name in self.engines:
            row = dict(suite=suite, query=query, engine=name, threads=self.threads, cpus=usable_cpus(),
                       **extra)
            if name in errors:
                rows.append(dict(row, median_s=None, runs=[], rows=None, ok=False, error=errors[name]))
                continue
            ok = None if want is None else verdicts[name] is None
            rows.append(dict(row, median_s=statistics.median(times[name]) if times[name] else None,
                             runs=times[name], rows=len(answers[name].rows), ok=ok,
                             **({"mismatch": verdicts[name]} if verdicts[name] else {})))
        print(f"  [{self.threads}t] {suite} {query}: " + ", ".join(
            f"{r['engine']} {cell(r)}" for r in rows), flush=True)
        return rows

    def close(self) -> None:
        engines = list(self.engines.values())
        for e in engines + ([self.reference] if self.reference not in engines else []):
            if hasattr(e, "close"):
                e.close()


def loud(message: str) -> None:
    bar = "!" * 78
    print(f"{bar}\n!!! {message}\n{bar}", flush=True)


def cell(r: dict) -> str:
    if r.get("error"):
        return "error"
    text = "–" if r["median_s"] is None else f"{r['median_s']:.4g}"
    return text + (" WRONG" if r["ok"] is False else "")


# ---- data ----------------------------------------------------------------------------------------


def tpch_tables(data_dir: str, sf: float, cli: str) -> Dict[str, str]:
    """The tables' paths; those missing are generated by `tamis gen tpch` first."""
    paths = {t: os.path.join(data_dir, f"{t}.parquet") for t in TABLES}
    missing = [t for t, p in paths.items() if not os.path.exists(p)]
    if missing:
        if not os.access(cli, os.X_OK):
            raise SystemExit(f"bench: {data_dir} lacks {', '.join(missing)} and there is no tamis CLI at "
                             f"{cli} to generate them (cargo build --release -p tamis-cli, or --tamis-cli)")
        print(f"bench: generating {', '.join(missing)} at SF {sf:g} into {data_dir}", flush=True)
        subprocess.run([cli, "gen", "tpch", "--scale-factor", f"{sf:g}", "--output", data_dir,
                        "--tables", ",".join(missing)], check=True)
    return paths


def scale_factor(tables: Dict[str, str]) -> float:
    """The tables' scale factor, from supplier's rows (10,000 per unit): the data may predate
    this run's --sf."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(tables["supplier"]).metadata.num_rows / 10_000


def load_queries(names: Optional[str]) -> Dict[str, str]:
    """{"q01": sql, …}, without the trailing semicolon (one statement, for every engine)."""
    files = sorted(glob.glob(os.path.join(QUERY_DIR, "q*.sql")))
    queries = {os.path.basename(f)[:-4]: open(f).read().strip().rstrip(";") for f in files}
    if names:
        wanted = names.split(",")
        unknown = [q for q in wanted if q not in queries]
        if unknown:
            raise SystemExit(f"bench: no such queries {unknown}; there are {', '.join(queries)}")
        queries = {q: queries[q] for q in wanted}
    return queries


def sweep_tables(data_dir: str, rows: int, keys: int) -> Dict[str, Dict[str, str]]:
    """The sweep's fact table twice, its key dictionary-encoded and PLAIN (payload PLAIN in both),
    and its dimension: one row per key with `sel` uniform in [0, 1), so `sel < S` keeps a
    fraction S of the keys, hence about S of the fact rows (keys are uniform and unsorted:
    min/max pruning cannot help, only the key filter). Written once, atomically."""
    import numpy as np
    import pyarrow.parquet as pq

    folder = os.path.join(data_dir, f"_join-sweep-{rows}-{keys}")
    paths = {layout: {"fact": os.path.join(folder, f"fact-{layout}.parquet"),
                      "dim": os.path.join(folder, "dim.parquet")} for layout in ("dict", "plain")}
    if os.path.isdir(folder):
        return paths
    rng = np.random.default_rng(SEED)
    fact = pa.table({
        "k": pa.array(rng.integers(0, keys, rows), pa.int64()),
        "v1": pa.array(rng.integers(0, 1 << 20, rows), pa.int64()),
        "v2": pa.array(rng.integers(0, 1 << 40, rows), pa.int64()),
        "v3": pa.array(rng.random(rows), pa.float64()),
        "v4": pa.array(rng.random(rows), pa.float64()),
    })
    dim = pa.table({"k": pa.array(np.arange(keys), pa.int64()), "sel": pa.array(rng.random(keys), pa.float64())})
    tmp = folder + ".tmp"
    os.makedirs(tmp, exist_ok=True)
    common = dict(write_page_index=True, row_group_size=1 << 20, compression="snappy")
    # The dictionary page may hold every key (pyarrow falls back to PLAIN past its limit).
    pq.write_table(fact, os.path.join(tmp, "fact-dict.parquet"), use_dictionary=["k"],
                   dictionary_pagesize_limit=max(1 << 20, 16 * keys), **common)
    pq.write_table(fact, os.path.join(tmp, "fact-plain.parquet"), use_dictionary=False, **common)
    pq.write_table(dim, os.path.join(tmp, "dim.parquet"), use_dictionary=False, **common)
    os.replace(tmp, folder)
    return paths


# ---- experiments ---------------------------------------------------------------------------------


def run_tpch(args, names: List[str], thread_counts: List[int], skipped: Dict[str, str]):
    """The TPC-H queries at every thread count: (result rows, engine versions, scale factor)."""
    tables = tpch_tables(args.data_dir, args.sf, args.tamis_cli)
    queries = load_queries(args.queries)
    sf = scale_factor(tables)
    if abs(sf - args.sf) > 1e-9:
        print(f"bench: the tables in {args.data_dir} are at SF {sf:g}, not --sf {args.sf:g}: using them", flush=True)
    results, references, versions = [], {}, []
    for threads in thread_counts:
        bench = Bench(names, threads, args, references, skipped)
        versions = bench.versions()
        for q, sql in queries.items():
            results += bench.measure(TPCH, q, sql, tables)
        bench.close()
    return results, versions, sf


def run_sweep(args, names: List[str], thread_counts: List[int], skipped: Dict[str, str]):
    """The join at every selectivity, key layout and thread count: (result rows, engine versions)."""
    layouts = sweep_tables(args.data_dir, args.sweep_rows, args.keys)
    results, references, versions = [], {}, []
    for threads in thread_counts:
        bench = Bench(names, threads, args, references, skipped)
        versions = bench.versions()
        for layout, tables in layouts.items():
            for s in SWEEP_SELECTIVITIES:
                results += bench.measure(SWEEP, f"{layout}, sel < {s:g}", SWEEP_SQL.format(s=s), tables,
                                         layout=layout, selectivity=s)
        bench.close()
    return results, versions


# ---- report --------------------------------------------------------------------------------------


def geomean(values: List[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def table_md(results: List[dict], threads: int, engines: List[str], baselines: Sequence[str]) -> str:
    """Queries × engines at one thread count: each cell the median seconds and its ratios to the
    baselines, then the geometric means over the queries every engine answered."""
    rows = [r for r in results if r["threads"] == threads]
    engines = [e for e in engines if any(r["engine"] == e for r in rows)]
    baselines = [b for b in baselines if b in engines]
    by = {(r["query"], r["engine"]): r for r in rows}
    queries = list(dict.fromkeys(r["query"] for r in rows))

    def cell_md(times: Dict[str, float], e: str) -> str:
        if e not in times:
            return "–"
        ratios = [f"{times[e] / times[b]:.2f}" if b != e and b in times else "–" for b in baselines]
        return f"{times[e]:.4g}" + (f" ({' / '.join(ratios)})" if ratios else "")

    head = ["query", "rows"] + engines
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    common = []
    for q in queries:
        times = {e: by[(q, e)]["median_s"] for e in engines if by.get((q, e), {}).get("median_s") is not None}
        if len(times) == len(engines):
            common.append(times)
        cells = []
        for e in engines:
            r = by.get((q, e))
            if r is None:
                cells.append("–")
            elif r.get("error"):
                cells.append("error")
            else:
                cells.append(cell_md(times, e) + (" **WRONG**" if r["ok"] is False else ""))
        answered = next((r["rows"] for e in engines if (r := by.get((q, e))) and r["rows"] is not None), "–")
        lines.append("| " + " | ".join([q, str(answered)] + cells) + " |")
    if common:
        means = {e: geomean([t[e] for t in common]) for e in engines}
        lines.append("| " + " | ".join([f"geomean ({len(common)})", ""] + [cell_md(means, e) for e in engines]) + " |")
    return "\n".join(lines)


def problems_md(results: List[dict]) -> List[str]:
    out = []
    for r in results:
        if r.get("error"):
            out.append(f"- {r['query']}, {r['engine']}, {r['threads']} thread(s): error: {r['error']}")
        elif r.get("mismatch"):
            out.append(f"- {r['query']}, {r['engine']}, {r['threads']} thread(s): WRONG ANSWER: {r['mismatch']}")
    return out


def report(results: List[dict], title: str, engines: List[str], baselines: Sequence[str], notes: List[str]) -> str:
    baselines = [b for b in baselines if any(r["engine"] == b for r in results)]
    ratios = f" ({' / '.join(f'ratio to {b}' for b in baselines)}; < 1 is faster)" if baselines else ""
    parts = [f"## {title}", ""] + notes + [
        f"Each cell: median seconds over the timed runs{ratios}. Geometric means over the queries "
        "every engine answered. "
        f"Run on {dt.date.today().isoformat()}, {os.cpu_count()} cores.", ""]
    for threads in sorted({r["threads"] for r in results}):
        parts += [f"**{threads} thread(s)**", "", table_md(results, threads, engines, baselines), ""]
    problems = problems_md(results)
    if problems:
        parts += ["**Errors and wrong answers**", ""] + problems + [""]
    return "\n".join(parts)


def plot_tpch(results: List[dict], engines: List[str], out_dir: str, stem: str) -> List[str]:
    """A bar per engine and query, log scale, one file per thread count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    for threads in sorted({r["threads"] for r in results}):
        rows = [r for r in results if r["threads"] == threads and r["median_s"] is not None]
        queries = list(dict.fromkeys(r["query"] for r in rows))
        shown = [e for e in engines if any(r["engine"] == e for r in rows)]
        if not shown:
            continue
        fig, ax = plt.subplots(figsize=(max(8, len(queries) * 0.8), 5))
        width = 0.8 / len(shown)
        for i, e in enumerate(shown):
            ys = [next((r["median_s"] for r in rows if r["query"] == q and r["engine"] == e), 0) for q in queries]
            ax.bar([x + i * width for x in range(len(queries))], ys, width, label=e)
        ax.set_yscale("log")
        ax.set_ylabel("median seconds (log)")
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(queries))])
        ax.set_xticklabels(queries, fontsize=8)
        ax.set_title(f"TPC-H SQL, {threads} thread(s), warm cache")
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(out_dir, f"{stem}-{threads}t.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path)
    return files


def plot_sweep(results: List[dict], engines: List[str], out_dir: str, stem: str) -> List[str]:
    """Seconds against the build side's selectivity, a line per engine and key layout."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    for threads in sorted({r["threads"] for r in results}):
        rows = [r for r in results if r["threads"] == threads and r["median_s"] is not None]
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(8, 5))
        for i, e in enumerate(engines):  # an engine's color, a layout's line style
            for layout, style in (("dict", "-"), ("plain", "--")):
                points = sorted((r["selectivity"], r["median_s"]) for r in rows
                                if r["engine"] == e and r["layout"] == layout)
                if points:
                    ax.plot(*zip(*points), style, color=f"C{i}", marker="o", label=f"{e}, {layout} keys")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("fraction of keys kept by the build side")
        ax.set_ylabel("median seconds (log)")
        ax.set_title(f"join sweep, {threads} thread(s), warm cache")
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(out_dir, f"{stem}-{threads}t.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path)
    return files


def save(results: List[dict], markdown: str, out_dir: str, stem: str) -> None:
    with open(os.path.join(out_dir, f"{stem}.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(out_dir, f"{stem}.md"), "w") as f:
        f.write(markdown)
    print("\n" + markdown, flush=True)


def measure(args, names: List[str], thread_counts: List[int], experiments: List[str],
            skipped: Dict[str, str]) -> dict:
    """Runs the experiments in this process: {experiment: (results, versions[, sf])}."""
    out = {}
    if "tpch" in experiments:
        out["tpch"] = run_tpch(args, names, thread_counts, skipped)
    if "sweep" in experiments:
        out["sweep"] = run_sweep(args, names, thread_counts, skipped)
    out["skipped"] = dict(skipped)
    return out


def usable_cpus() -> Optional[int]:
    """How many CPUs this process may run on (recorded with each result)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def pinned_cpus(count: int) -> List[int]:
    """The first ``count`` CPUs this process may use."""
    return sorted(os.sched_getaffinity(0))[:max(count, 1)]


def measure_pinned(argv, thread_counts: List[int], skipped: Dict[str, str]) -> dict:
    """Runs each thread count N in a child process confined to N CPUs from its start, and
    joins their results as `measure` returns them."""
    base = list(sys.argv[1:] if argv is None else argv)
    out: dict = {}
    for threads in thread_counts:
        cpus = pinned_cpus(threads)
        print(f"bench: {threads} thread(s) in a process on CPUs {cpus}", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "results.json")
            cmd = [sys.executable, os.path.abspath(__file__), *base, "--threads", str(threads),
                   "--child-json", path]
            subprocess.run(cmd, check=True, preexec_fn=lambda: os.sched_setaffinity(0, cpus))
            with open(path) as f:
                child = json.load(f)
        skipped.update(child.pop("skipped"))
        for experiment, (results, versions, *rest) in child.items():
            if experiment in out:
                out[experiment][0].extend(results)
            else:
                out[experiment] = [results, versions, *rest]
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    names = args.engines.split(",")
    thread_counts = [int(t) for t in args.threads.split(",")]
    experiments = args.experiments.split(",")
    os.makedirs(args.results_dir, exist_ok=True)
    os.makedirs(args.data_dir, exist_ok=True)
    prefix = "smoke-" if args.smoke else ""  # bench/results/smoke* is not committed
    skipped: Dict[str, str] = {}
    command = "python bench/tpch_sql.py " + " ".join(sys.argv[1:] if argv is None else argv)

    def notes(versions: List[str], what: str) -> List[str]:
        return ([f"Command: `{command}`  ", f"{what}; {', '.join(versions)}; "
                 f"{args.runs} timed run(s) after one warm-up"
                 + ("; at N threads the process is confined to N CPUs.  " if args.pin else
                    "; not confined to N CPUs (--no-pin).  ")]
                + [f"{e} skipped: {why}  " for e, why in skipped.items()] + [""])

    started = time.perf_counter()
    if args.child_json:
        with open(args.child_json, "w") as f:
            json.dump(measure(args, names, thread_counts, experiments, skipped), f)
        return 0
    if args.pin and hasattr(os, "sched_setaffinity"):
        measured = measure_pinned(argv, thread_counts, skipped)
    else:
        measured = measure(args, names, thread_counts, experiments, skipped)
    everything = []
    if "tpch" in experiments:
        results, versions, sf = measured["tpch"]
        markdown = report(results, "TPC-H SQL (`tpch-sql`)", names, ("datafusion", "duckdb"),
                          notes(versions, f"TPC-H SF {sf:g} ({args.data_dir})"))
        save(results, markdown, args.results_dir, prefix + TPCH)
        plot_tpch(results, names, args.results_dir, prefix + TPCH)
        everything += results
    if "sweep" in experiments:
        results, versions = measured["sweep"]
        what = (f"`{SWEEP_SQL.format(s='S')}`: fact {args.sweep_rows} rows, {args.keys} keys (uniform, "
                "unsorted), the key column dictionary-encoded (`dict`) or PLAIN (`plain`)")
        markdown = report(results, "Join sweep (`join-sweep`)", names, ("tamis-no-rf", "duckdb"),
                          notes(versions, what))
        save(results, markdown, args.results_dir, prefix + SWEEP)
        plot_sweep(results, names, args.results_dir, prefix + SWEEP)
        everything += results
    print(f"bench: done in {time.perf_counter() - started:.1f} s", flush=True)
    bad = [r for r in everything if r["ok"] is False]
    if bad:
        loud(f"{len(bad)} result(s) wrong or failed: see above")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
