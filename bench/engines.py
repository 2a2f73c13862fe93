"""The engines under test, each behind the same call: run(query) -> pyarrow.Table.

Every engine materializes its result as Arrow in memory, so each time covers reading, filtering
and building the output, nothing more. Thread counts are fixed per worker process (Polars reads
its pool size from the environment at import), see run.py.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os

# Peers decompress every page of every query: tamis's page cache (on by default in a process
# that can hit it) is off here unless TAMIS_PAGE_CACHE asks for it (bench/page_cache.py and
# bench/disk_cache.py measure the cache).
os.environ.setdefault("TAMIS_PAGE_CACHE", "0")
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.ipc as ipc

from pred import Pred


@dataclass
class Query:
    name: str
    path: str
    where: Optional[Pred]
    columns: Optional[List[str]]
    # Keyword arguments for tamis.scan / tamis.explain only (e.g. filter_order); peers ignore them.
    tamis_options: Dict[str, Any] = field(default_factory=dict)
    # An engine that raises on this query is reported as skipped (with its error) instead of
    # failing the run: for inputs some peers cannot read (lists). Wrong rows still fail the run.
    skip_on_error: bool = False
    # For line plots: queries of one group share an x axis (bit width, selectivity, % RLE).
    group: Optional[str] = None
    x: Optional[float] = None


class EngineSkip(Exception):
    """The engine cannot run this query as asked (a missing option, not a wrong answer)."""


@dataclass
class Outcome:
    table: Optional[pa.Table]  # None when only the count is known (RowFilter binary)
    rows: int
    read_bytes: Optional[int] = None  # measured by the engine's own process, when out of process
    ns: Optional[int] = None  # the engine's own timing, when out of process (no pipe overhead)


def select_list(q: Query) -> str:
    return ", ".join(f'"{c}"' for c in q.columns) if q.columns else "*"


class Tamis:
    name = "tamis"

    def __init__(self, threads: int):
        import tamis

        self.tamis = tamis
        self.threads = threads
        # Options are ScanOptions' fields (scan takes them as keywords); older builds named
        # them in scan's signature.
        options = getattr(tamis, "ScanOptions", None)
        self.scan_options = set(inspect.signature(tamis.scan).parameters)
        if options is not None and dataclasses.is_dataclass(options):
            self.scan_options |= {f.name for f in dataclasses.fields(options)}

    def run(self, q: Query) -> Outcome:
        missing = sorted(set(q.tamis_options) - self.scan_options)
        if missing:
            raise EngineSkip(f"this tamis build has no tamis.scan option {', '.join(missing)}")
        t = self.tamis.scan(
            q.path, where=q.where.sql() if q.where else None, columns=q.columns, threads=self.threads,
            **q.tamis_options,
        )
        return Outcome(t, t.num_rows)


class DuckDB:
    name = "duckdb"

    def __init__(self, threads: int):
        import duckdb

        self.con = duckdb.connect()
        self.con.execute(f"SET threads = {threads}")

    def run(self, q: Query) -> Outcome:
        where = f" WHERE {q.where.sql()}" if q.where else ""
        sql = f"SELECT {select_list(q)} FROM read_parquet('{q.path}'){where}"
        t = self.con.sql(sql).to_arrow_table()
        return Outcome(t, t.num_rows)


class Polars:
    name = "polars"

    def __init__(self, threads: int):
        import polars as pl

        self.pl = pl
        if pl.thread_pool_size() != threads:
            raise RuntimeError(f"polars has {pl.thread_pool_size()} threads, wanted {threads}")

    def run(self, q: Query) -> Outcome:
        lf = self.pl.scan_parquet(q.path)
        if q.where is not None:
            lf = lf.filter(q.where.polars())
        if q.columns:
            lf = lf.select(q.columns)
        t = lf.collect().to_arrow()
        return Outcome(t, t.num_rows)


class PyArrow:
    name = "pyarrow"

    def __init__(self, threads: int):
        pa.set_cpu_count(threads)
        pa.set_io_thread_count(threads)
        self.use_threads = threads > 1

    def run(self, q: Query) -> Outcome:
        dataset = ds.dataset(q.path, format="parquet")
        filt = q.where.pyarrow(dataset.schema) if q.where is not None else None
        t = dataset.to_table(columns=q.columns, filter=filt, use_threads=self.use_threads)
        return Outcome(t, t.num_rows)


class DataFusion:
    name = "datafusion"
    pushdown = False

    def __init__(self, threads: int):
        from datafusion import SessionConfig, SessionContext

        config = SessionConfig().with_target_partitions(threads)
        if self.pushdown:
            config = config.set("datafusion.execution.parquet.pushdown_filters", "true").set(
                "datafusion.execution.parquet.reorder_filters", "true"
            )
        self.ctx = SessionContext(config)

    def run(self, q: Query) -> Outcome:
        # Registered anew for every run, like every other engine opens its files per query: a
        # table kept registered would let DataFusion reuse listings and footers no peer keeps.
        self.ctx.register_parquet("t", q.path)
        try:
            where = f" WHERE {q.where.sql()}" if q.where else ""
            t = self.ctx.sql(f"SELECT {select_list(q)} FROM t{where}").to_arrow_table()
        finally:
            self.ctx.deregister_table("t")
        return Outcome(t, t.num_rows)


class DataFusionPushdown(DataFusion):
    name = "datafusion-pushdown"
    pushdown = True


class RowFilter:
    """The parquet crate's RowFilter reader with page index (crates/tamis-bench), as a server."""

    name = "parquet-rowfilter"

    def __init__(self, threads: int, binary: str):
        self.threads = threads
        self.proc = subprocess.Popen(
            [binary, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.dump_dir = tempfile.mkdtemp(prefix="rowfilter-")

    def run(self, q: Query, dump: bool = False) -> Outcome:
        path = os.path.join(self.dump_dir, "out.arrow") if dump else None
        request = {
            "file": q.path,
            "where": q.where.sql() if q.where else None,
            "columns": q.columns,
            "threads": self.threads,
            "dump": path,
            # Every other engine returns the whole result as a table: hold the batches too.
            "keep": True,
        }
        reply = self.ask(request)
        table = None
        if path:
            with ipc.open_file(path) as f:
                table = f.read_all()
        return Outcome(table, reply["rows"], reply.get("read_bytes"), reply["ns"])

    def ask(self, request: dict) -> dict:
        """One request line to the server, its reply; an error reply raises."""
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        if "error" in reply:
            raise RuntimeError(f"rowfilter-scan: {reply['error']}")
        return reply

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


class Floor(RowFilter):
    """Not a peer: the time merely to read and decompress every page of the columns a query
    references (no decoding, one thread; `floor` in crates/tamis-bench) — the physical floor of a
    scan that does not skip pages."""

    name = "floor"

    def __init__(self, binary: str):
        super().__init__(1, binary)

    def run(self, q: Query, dump: bool = False) -> Outcome:
        columns = list(q.where.columns()) if q.where else []
        columns += [c for c in (q.columns or []) if c not in columns]
        reply = self.ask({"file": q.path, "columns": columns, "floor": True})
        return Outcome(None, 0, None, reply["ns"])


ENGINES: Dict[str, Callable[..., object]] = {
    "tamis": Tamis,
    "duckdb": DuckDB,
    "polars": Polars,
    "pyarrow": PyArrow,
    "datafusion": DataFusion,
    "datafusion-pushdown": DataFusionPushdown,
    "parquet-rowfilter": RowFilter,
}
