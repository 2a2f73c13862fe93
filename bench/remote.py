"""Suite `remote`: the same scans against an S3-compatible object store on loopback.

TPC-H lineitem at ``--sf`` (one file, as `tamis gen` writes it) and the same rows as a 20-file
dataset partitioned hive-style by ship year (``l_shipyear=1992/part-0.parquet`` …) are served by
bench/s3serve.py in its own process, with a first-byte latency of 0, 10 and 50 ms per request
(``--latencies``). Every engine reads them through its own S3 client; for every query the table
gives the median wall time and the requests and response bytes the server saw during that run
(counters reset before each run), plus the sequential round trips: the longest chain of requests
each issued after the previous one finished, i.e. the latencies paid one after another.

Every run is cold: no engine keeps metadata from one run to the next (fresh DataFusion session,
DuckDB connection and pyarrow dataset; Polars and tamis.scan keep none), except
``tamis-dataset``, which opens one `tamis.Dataset` and repeats the point lookups through it
(warm). CPU threads are the worker's thread count; I/O concurrency is each engine's own default
(pyarrow: its 8-thread I/O pool). tamis runs through ``tamis.scan(url, storage_options=…)``;
a build without object-store support is reported as skipped.
"""

from __future__ import annotations

import http.client
import json
import os

# Peers decompress every page of every query: tamis's page cache (on by default in a process
# that can hit it) is off here unless TAMIS_PAGE_CACHE asks for it (bench/page_cache.py and
# bench/disk_cache.py measure the cache).
os.environ.setdefault("TAMIS_PAGE_CACHE", "0")
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Callable, Dict, List, Optional

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from engines import EngineSkip, Outcome, Query, select_list
from pred import col_cmp

HERE = os.path.dirname(os.path.abspath(__file__))
BUCKET = "bench"
KEY = "lineitem.parquet"
DATASET = "lineitem-by-shipyear"
PARTITION = "l_shipyear"
FILES = 20
PAGE_ROWS = 20_000  # as `tamis gen` writes lineitem
LATENCIES = "0,10,50"
# Credentials are required by the clients and ignored by the server.
REGION, ACCESS_KEY, SECRET_KEY = "us-east-1", "x", "y"


@dataclass
class RemoteQuery(Query):
    hive: bool = False  # `path` is the partitioned dataset's prefix, not one object
    lookup: bool = False  # a point lookup: tamis-dataset repeats it through a warm Dataset


# ---- data ----------------------------------------------------------------------------------------


def partitioned(lineitem: str) -> str:
    """The lineitem rows as FILES files under ``lineitem-by-shipyear/l_shipyear=Y/``, each year
    split into parts in proportion to its rows (rows in file order), with the original's
    row-group size and codec, page indexes and 20k-row pages. Written once, atomically."""
    folder = os.path.join(os.path.dirname(lineitem), DATASET)
    if os.path.isdir(folder):
        return folder
    meta = pq.ParquetFile(lineitem).metadata
    row_group_rows = max(meta.row_group(i).num_rows for i in range(meta.num_row_groups))
    codec = meta.row_group(0).column(0).compression.lower()
    table = pq.read_table(lineitem)
    years = pc.year(table["l_shipdate"])
    counts = {y["values"]: y["counts"] for y in pc.value_counts(years).to_pylist()}
    parts = allocate(counts, FILES)
    tmp = folder + ".tmp"
    for year, n in sorted(parts.items()):
        rows = table.filter(pc.equal(years, year))
        directory = os.path.join(tmp, f"{PARTITION}={year}")
        os.makedirs(directory, exist_ok=True)
        step = -(-rows.num_rows // n)
        for i in range(n):
            pq.write_table(rows.slice(i * step, step), os.path.join(directory, f"part-{i}.parquet"),
                           row_group_size=row_group_rows, compression=codec, write_page_index=True,
                           max_rows_per_page=PAGE_ROWS)
    os.replace(tmp, folder)
    return folder


def allocate(counts: Dict[int, int], files: int) -> Dict[int, int]:
    """Files per key in proportion to its count (largest remainder), at least one each: `files`
    in all unless there are more keys than that."""
    total = sum(counts.values())
    share = {k: max(1, files * c // total) for k, c in counts.items()}
    by_remainder = sorted(counts, key=lambda k: (files * counts[k] % total) / total, reverse=True)
    i = 0
    while sum(share.values()) < files:
        share[by_remainder[i % len(by_remainder)]] += 1
        i += 1
    return share


def queries(data_dir: str, args) -> List[RemoteQuery]:
    from suites import tpch, tpch_lineitem

    partitioned(tpch_lineitem(data_dir, args))
    local = {q.name: q for q in tpch(data_dir, args)}
    q6 = local["Q6 filter"]
    air = local["l_shipmode = 'AIR' AND l_quantity < 5"]
    return [
        RemoteQuery("Q6", KEY, q6.where, q6.columns),
        RemoteQuery("l_orderkey = 3000000, all columns", KEY, col_cmp("l_orderkey", "=", 3000000), None,
                    lookup=True),
        RemoteQuery("l_partkey = 100000, all columns", KEY, col_cmp("l_partkey", "=", 100000), None,
                    lookup=True),
        RemoteQuery("l_shipmode = 'AIR' AND l_quantity < 5", KEY, air.where, air.columns),
        RemoteQuery(f"{PARTITION} = 1995 AND l_discount = 0.05 (partitioned)", DATASET,
                    col_cmp(PARTITION, "=", 1995) & col_cmp("l_discount", "=", Decimal("0.05")),
                    ["l_orderkey", "l_extendedprice"], hive=True),
    ]


# ---- the server, in its own process --------------------------------------------------------------


class Server:
    """bench/s3serve.py as a child process (so its Python threads do not share a GIL with the
    engines under test), driven through its control paths."""

    def __init__(self, folder: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "s3serve.py"), "--root", folder,
             "--bucket", f"{BUCKET}={folder}"], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("s3serve: listening on "):
            self.close()
            raise SystemExit(f"remote: s3serve did not start: {line!r}")
        self.endpoint = line.split()[-1]
        self.port = int(self.endpoint.rsplit(":", 1)[1])

    def _call(self, method: str, path: str) -> bytes:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path)
            return conn.getresponse().read()
        finally:
            conn.close()

    def latency(self, ms: float) -> None:
        self._call("POST", f"/__latency?ms={ms:g}")

    def reset(self) -> None:
        self._call("POST", "/__stats/reset")

    def stats(self) -> dict:
        return json.loads(self._call("GET", "/__stats"))

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


# ---- engines -----------------------------------------------------------------------------------


def url(q: RemoteQuery) -> str:
    return f"s3://{BUCKET}/{q.path}" + ("/" if q.hive else "")


class PyArrowS3:
    name = "pyarrow"

    def __init__(self, threads: int, endpoint: str):
        from pyarrow import fs

        pa.set_cpu_count(threads)
        pa.set_io_thread_count(8)  # pyarrow's default; the local suites set it to the thread count
        self.use_threads = threads > 1
        self.fs = fs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION,
                                  endpoint_override=endpoint.split("://", 1)[1], scheme="http")

    def run(self, q: RemoteQuery) -> Outcome:
        dataset = ds.dataset(f"{BUCKET}/{q.path}", filesystem=self.fs, format="parquet",
                             partitioning="hive" if q.hive else None)
        filt = q.where.pyarrow(dataset.schema)
        t = dataset.to_table(columns=q.columns, filter=filt, use_threads=self.use_threads)
        return Outcome(t, t.num_rows)


class PolarsS3:
    name = "polars"

    def __init__(self, threads: int, endpoint: str):
        import polars as pl

        self.pl = pl
        if pl.thread_pool_size() != threads:
            raise RuntimeError(f"polars has {pl.thread_pool_size()} threads, wanted {threads}")
        self.options = {"aws_endpoint_url": endpoint, "aws_allow_http": "true", "aws_region": REGION,
                        "aws_access_key_id": ACCESS_KEY, "aws_secret_access_key": SECRET_KEY}

    def run(self, q: RemoteQuery) -> Outcome:
        source = url(q) + ("**/*.parquet" if q.hive else "")
        lf = self.pl.scan_parquet(source, storage_options=self.options, hive_partitioning=q.hive)
        lf = lf.filter(q.where.polars())
        if q.columns:
            lf = lf.select(q.columns)
        t = lf.collect().to_arrow()
        return Outcome(t, t.num_rows)


class DataFusionS3:
    name = "datafusion"
    pushdown = False

    def __init__(self, threads: int, endpoint: str):
        from datafusion.object_store import AmazonS3

        self.threads = threads
        self.store = AmazonS3(BUCKET, region=REGION, access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY,
                              endpoint=endpoint, allow_http=True)

    def run(self, q: RemoteQuery) -> Outcome:
        from datafusion import SessionConfig, SessionContext

        config = SessionConfig().with_target_partitions(self.threads)
        if self.pushdown:
            config = config.set("datafusion.execution.parquet.pushdown_filters", "true").set(
                "datafusion.execution.parquet.reorder_filters", "true")
        ctx = SessionContext(config)  # per run: a session caches file metadata
        ctx.register_object_store("s3://", self.store, BUCKET)
        ctx.register_parquet("t", url(q), table_partition_cols=[(PARTITION, pa.int32())] if q.hive else None)
        t = ctx.sql(f"SELECT {select_list(q)} FROM t WHERE {q.where.sql()}").to_arrow_table()
        return Outcome(t, t.num_rows)


class DataFusionPushdownS3(DataFusionS3):
    name = "datafusion-pushdown"
    pushdown = True


class DuckDBS3:
    """DuckDB needs its httpfs extension, which it downloads on INSTALL; offline it can come only
    from an already installed copy or from PyPI's duckdb-extension-httpfs, which is built for one
    DuckDB version."""

    name = "duckdb"

    def __init__(self, threads: int, endpoint: str):
        import duckdb

        self.duckdb = duckdb
        self.threads = threads
        self.endpoint = endpoint.split("://", 1)[1]
        self.load = self._find_httpfs()

    def _find_httpfs(self) -> str:
        version = self.duckdb.__version__
        con = self.duckdb.connect()
        try:
            con.execute("LOAD httpfs")
            return "LOAD httpfs"
        except self.duckdb.Error:
            pass
        finally:
            con.close()
        try:
            import duckdb_extension_httpfs
        except ImportError:
            raise EngineSkip(f"duckdb {version} has no httpfs extension installed (INSTALL downloads it, "
                             "offline here), and PyPI's duckdb-extension-httpfs, built for one DuckDB "
                             "version, is not installed") from None
        folder = os.path.join(os.path.dirname(duckdb_extension_httpfs.__file__), "extensions")
        path = os.path.join(folder, f"v{version}", "httpfs.duckdb_extension")
        if not os.path.exists(path):
            raise EngineSkip(f"httpfs cannot be downloaded offline, and duckdb-extension-httpfs carries "
                             f"{', '.join(sorted(os.listdir(folder)))} only, not duckdb v{version}")
        return f"LOAD '{path}'"

    def run(self, q: RemoteQuery) -> Outcome:
        con = self.duckdb.connect()  # per run: a database caches remote files and metadata
        try:
            con.execute(self.load)
            con.execute(f"SET threads = {self.threads}")
            con.execute(f"CREATE SECRET (TYPE s3, KEY_ID '{ACCESS_KEY}', SECRET '{SECRET_KEY}', "
                        f"REGION '{REGION}', ENDPOINT '{self.endpoint}', URL_STYLE 'path', USE_SSL false)")
            source = f"read_parquet('{url(q)}*/*.parquet', hive_partitioning = true)" if q.hive \
                else f"read_parquet('{url(q)}')"
            t = con.sql(f"SELECT {select_list(q)} FROM {source} WHERE {q.where.sql()}").to_arrow_table()
        finally:
            con.close()
        return Outcome(t, t.num_rows)


def tamis_options(endpoint: str) -> Dict[str, str]:
    return {"endpoint": endpoint, "region": REGION, "access_key_id": ACCESS_KEY,
            "secret_access_key": SECRET_KEY, "allow_http": "true"}


def _tamis():
    try:
        import tamis
    except ImportError:
        raise EngineSkip("tamis is not installed") from None
    return tamis


def _tamis_call(fn: Callable, *args, **kwargs):
    """A build that lacks object-store support (or an option) raises one of these: a skip, not a
    failure, so the suite runs before the core lands."""
    try:
        return fn(*args, **kwargs)
    except (TypeError, ValueError, NotImplementedError) as err:
        raise EngineSkip(first_line(err)) from None


class TamisS3:
    name = "tamis"

    def __init__(self, threads: int, endpoint: str):
        self.tamis = _tamis()
        options = getattr(self.tamis, "ScanOptions", None)
        if options is None or "storage_options" not in getattr(options, "__dataclass_fields__", {}):
            raise EngineSkip("this tamis build has no tamis.scan(storage_options=…) (no object-store support)")
        self.threads = threads
        self.options = tamis_options(endpoint)

    def run(self, q: RemoteQuery) -> Outcome:
        t = _tamis_call(self.tamis.scan, url(q), where=q.where.sql(), columns=q.columns,
                        threads=self.threads, storage_options=self.options)
        return Outcome(t, t.num_rows)


class TamisDatasetS3:
    """One `tamis.Dataset` per URL, opened on first use and kept: its metadata stays cached, so
    after the warm-up every lookup should cost only its data requests."""

    name = "tamis-dataset"

    def __init__(self, threads: int, endpoint: str):
        self.tamis = _tamis()
        if not hasattr(self.tamis, "Dataset"):
            raise EngineSkip("this tamis build has no tamis.Dataset")
        self.threads = threads
        self.options = tamis_options(endpoint)
        self.datasets: Dict[str, object] = {}

    @staticmethod
    def applies(q: RemoteQuery) -> bool:
        return q.lookup

    def run(self, q: RemoteQuery) -> Outcome:
        dataset = self.datasets.get(url(q))
        if dataset is None:
            dataset = _tamis_call(self.tamis.Dataset, url(q), storage_options=self.options)
            self.datasets[url(q)] = dataset
        t = _tamis_call(dataset.scan, where=q.where.sql(), columns=q.columns,
                        threads=self.threads)
        return Outcome(t, t.num_rows)


ENGINES = {e.name: e for e in (TamisS3, TamisDatasetS3, PyArrowS3, PolarsS3, DataFusionS3,
                               DataFusionPushdownS3, DuckDBS3)}


def engine_names(selected: List[str]) -> List[str]:
    """The remote engines among --engines (tamis brings tamis-dataset), in ENGINES order."""
    return [n for n in ENGINES if n in selected or (n == "tamis-dataset" and "tamis" in selected)]


# ---- the suite -----------------------------------------------------------------------------------


def latencies(args) -> List[float]:
    return [float(v) for v in (args.latencies or LATENCIES).split(",")]


def first_line(err: Exception) -> str:
    return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"


def worker(args, threads: int, check: Callable) -> List[dict]:
    """Runs the suite for one thread count; rows for the harness's results (with `latency_ms`,
    `requests`, `bytes` and `round_trips` in place of a cache mode). `check` compares the
    engines' answers, as for the local suites."""
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")  # no client may probe for credentials
    qs = queries(args.data_dir, args)
    from suites import tpch_lineitem

    server = Server(os.path.dirname(tpch_lineitem(args.data_dir, args)))
    results: List[dict] = []
    try:
        engines, broken = {}, {}
        for n in engine_names(args.engines.split(",")):
            try:
                engines[n] = ENGINES[n](threads, server.endpoint)
            except EngineSkip as err:
                broken[n] = str(err)
            except Exception as err:  # noqa: BLE001 - a client that cannot start here is skipped
                broken[n] = first_line(err)
        for n, reason in broken.items():
            print(f"  remote: {n} skipped: {reason}", flush=True)
        for q in qs:
            results += _query(args, threads, server, q, engines, broken, check)
    finally:
        server.close()
    return results


def _query(args, threads, server, q, engines, broken, check) -> List[dict]:
    here = {n: e for n, e in engines.items() if getattr(e, "applies", lambda _: True)(q)}
    skipped = dict(broken)
    # Correctness first, without latency: one run of each engine, answers compared. Any error is
    # a skip here (a client that cannot talk to this server), never a crash; wrong rows still fail.
    server.latency(0)
    outcomes = {}
    for n, e in here.items():
        try:
            outcomes[n] = e.run(q)
        except EngineSkip as err:
            skipped[n] = str(err)
        except Exception as err:  # noqa: BLE001
            skipped[n] = first_line(err)
        if n in skipped:
            print(f"  remote: {q.name}: {n} skipped: {skipped[n]}", flush=True)
    if not outcomes:
        raise SystemExit(f"bench: no engine could run {q.name!r} remotely: {skipped}")
    check(q, outcomes)
    rows = next(iter(outcomes.values())).rows
    running = {n: e for n, e in here.items() if n in outcomes}
    out = []
    for latency in latencies(args):
        server.latency(latency)
        samples: Dict[str, Dict[str, list]] = {n: {"ms": [], "requests": [], "bytes": [], "rt": []}
                                               for n in running}
        for rep in range(args.runs + 1):
            for n, e in running.items():
                server.reset()
                start = time.perf_counter_ns()
                got = e.run(q)
                elapsed = (time.perf_counter_ns() - start) / 1e6
                stats = server.stats()
                if got.rows != rows:
                    raise SystemExit(f"bench: {n} changed its row count on {q.name!r}")
                if rep == 0:
                    continue  # warm-up
                s = samples[n]
                s["ms"].append(elapsed)
                s["requests"].append(stats["requests"])
                s["bytes"].append(stats["body_bytes"])
                s["rt"].append(stats["round_trips"])
        common = {"suite": "remote", "query": q.name, "threads": threads, "latency_ms": latency, "rows": rows,
                  "load": os.getloadavg()[0]}  # the machine may be shared: say how busy it was
        first = len(out)
        for n in list(here) + [n for n in broken if n not in here]:
            if n in skipped:
                out.append(dict(common, engine=n, times_ms=[], median_ms=None, skipped=skipped[n]))
                continue
            s = samples[n]
            out.append(dict(common, engine=n, times_ms=s["ms"], median_ms=statistics.median(s["ms"]),
                            requests=int(statistics.median(s["requests"])),
                            bytes=int(statistics.median(s["bytes"])),
                            round_trips=int(statistics.median(s["rt"]))))
        print(f"  [{threads}t {latency:g} ms] remote: {q.name}: " + ", ".join(
            f"{r['engine']} " + ("skipped" if r["median_ms"] is None else
                                 f"{r['median_ms']:.1f} ms {r['requests']} req {r['bytes'] / 2**20:.2f} MiB")
            for r in out[first:]), flush=True)
    return out


# ---- report --------------------------------------------------------------------------------------


def _cell(r: Optional[dict]) -> str:
    if r is None:
        return "–"
    if r["median_ms"] is None:
        return "skipped"
    ms = f"{r['median_ms']:.1f}" if r["median_ms"] >= 10 else f"{r['median_ms']:.2f}"
    return f"{ms} / {r['requests']} ({r['round_trips']}) / {r['bytes'] / 2**20:.2f}"


def _versus(by: Dict[str, dict], key: str, best_of: Callable) -> str:
    peers = [r[key] for e, r in by.items() if not e.startswith("tamis")]
    if "tamis" not in by or not peers:
        return "–"
    best = best_of(peers)
    return f"{by['tamis'][key] / best:.2f}x" if best else "–"


def table_md(results: List[dict], threads: int, latency: float, engines: List[str]) -> str:
    rows = [r for r in results if r["suite"] == "remote" and r["threads"] == threads
            and r["latency_ms"] == latency]
    head = ["query", "rows"] + engines + ["fewest requests, MiB (peer)", "tamis / best peer: ms, requests, bytes"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for q in dict.fromkeys(r["query"] for r in rows):
        everyone = {r["engine"]: r for r in rows if r["query"] == q}
        by = {e: r for e, r in everyone.items() if r["median_ms"] is not None}
        fastest = min((e for e in by if not e.startswith("tamis")), key=lambda e: by[e]["median_ms"], default=None)
        cells = [q, str(next(iter(everyone.values()))["rows"])]
        cells += [f"**{_cell(everyone.get(e))}**" if e == fastest else _cell(everyone.get(e)) for e in engines]
        peers = [e for e in by if not e.startswith("tamis")]
        fewest_requests = min(peers, key=lambda e: by[e]["requests"], default=None)
        fewest_bytes = min(peers, key=lambda e: by[e]["bytes"], default=None)
        cells.append(f"{by[fewest_requests]['requests']} ({fewest_requests}), "
                     f"{by[fewest_bytes]['bytes'] / 2**20:.2f} ({fewest_bytes})" if peers else "–")
        cells.append(", ".join(_versus(by, k, min) for k in ("median_ms", "requests", "bytes")))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report(results: List[dict], args, desc: str, selected: List[str]) -> str:
    engines = engine_names(selected)
    mine = [r for r in results if r["suite"] == "remote"]
    loads = [r["load"] for r in mine] or [float("nan")]
    parts = [f"Command: `python bench/run.py --suite remote --sf {args.sf:g}"
             + (f" --threads {args.threads}" if args.threads else "")
             + (f" --latencies {args.latencies}" if args.latencies else "")
             + f" --runs {args.runs} --update-benchmarks`  ",
             f"Machine: {desc}  ",
             f"Served by bench/s3serve.py on 127.0.0.1 with a fixed first-byte latency per request. "
             f"Each cell: median ms of {args.runs} runs after one warm-up (engines interleaved, every "
             "run cold except tamis-dataset) / requests (sequential round trips) / MiB of response "
             "bodies as the server counted them, each the median over the runs. Bold = "
             f"fastest peer; ratios < 1 mean tamis is better. Run on {time.strftime('%Y-%m-%d')}; 1-minute "
             f"load average during the run {min(loads):.1f}–{max(loads):.1f} on {os.cpu_count()} cores.", ""]
    for threads in sorted({r["threads"] for r in mine}):
        for latency in sorted({r["latency_ms"] for r in mine}):
            parts += [f"**{threads} thread(s), {latency:g} ms first-byte latency**", "",
                      table_md(results, threads, latency, engines), ""]
    skips: Dict[tuple, List[str]] = {}
    for r in mine:
        if r.get("skipped"):
            qs = skips.setdefault((r["engine"], r["skipped"]), [])
            if r["query"] not in qs:
                qs.append(r["query"])
    every = list(dict.fromkeys(r["query"] for r in mine))
    for (engine, reason), qs in skips.items():
        which = "every query" if qs == every else ", ".join(f"`{q}`" for q in qs)
        parts.append(f"- {engine} skipped on {which}: {reason}")
    return "\n".join(parts) + "\n"
