#!/usr/bin/env python3
"""Side-by-side benchmark harness: tamis against DuckDB, Polars, pyarrow, DataFusion and the
parquet crate's RowFilter reader, on the same files, with the same thread counts.

    python bench/run.py --suite tpch                 # SF1, 1 and all cores, warm and cold cache
    python bench/run.py --suite all --update-benchmarks
    python bench/run.py --suite selectivity --rows 20000000 --runs 9
    python bench/run.py --suite m2,q6,order,rle      # the paper's experiments (issue 4), 1 thread, warm
    python bench/run.py --suite remote               # over S3 on loopback (bench/s3serve.py), 0/10/50 ms

Each thread count runs in its own worker process (Polars fixes its pool size at import). Inside
a worker, every repetition runs each engine once, in turn (interleaved), the first repetition
being a warm-up; the reported time is the median of the others, with their range (min–max).
Each repetition starts with another engine (the order rotates), the previous result is freed
before the timer starts, and no engine keeps metadata between runs (DataFusion's table is
registered per run). Cold-cache runs drop the files
from the page cache (posix_fadvise DONTNEED) before every run and record read_bytes from
/proc/self/io. Every engine's row count must agree, and for small results the rows themselves
(for larger ones the whole tables, sorted, with types unified); otherwise the run fails. An
engine that cannot run a query as asked (a missing tamis option; a peer that cannot read a list
column) is reported as skipped, with the reason, under the table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os

# Peers decompress every page of every query: tamis's page cache (on by default in a process
# that can hit it) is off here unless TAMIS_PAGE_CACHE asks for it (bench/page_cache.py and
# bench/disk_cache.py measure the cache).
os.environ.setdefault("TAMIS_PAGE_CACHE", "0")
# numpy (loaded with pyarrow) starts an OpenBLAS thread per other core, which spins in
# `blas_thread_server` beside the engines it times (0.7 % of a 2-thread profile); no
# engine here uses BLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import platform
import re
import statistics
import subprocess
import sys
import time
from decimal import Decimal
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

SMALL_RESULT = 2_000  # rows up to which the rows themselves are compared across engines
MARK = "<!-- bench:{suite}:{edge} -->"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--suite", default="tpch",
                   help="comma-separated: tpch, selectivity, strings, dictsize, payload, m2, q6, order, rle, lookup, "
                        "remote; or all")
    p.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (tpch, q6, order, lookup, remote suites)")
    p.add_argument("--rows", type=int, default=None, help="rows per generated file (other suites)")
    p.add_argument("--threads", default=None,
                   help="comma-separated thread counts (default per suite: 1,all cores; paper suites 1)")
    p.add_argument("--cache", default=None,
                   help="warm, cold or warm,cold (default per suite: warm,cold; paper suites warm)")
    p.add_argument("--runs", type=int, default=5, help="timed runs per engine (after one warm-up)")
    p.add_argument("--latencies", default=None,
                   help="remote suite: comma-separated first-byte latencies in ms (default 0,10,50; smoke 0,10)")
    p.add_argument("--engines", default="tamis,duckdb,polars,pyarrow,datafusion,datafusion-pushdown,parquet-rowfilter")
    p.add_argument("--data-dir", default=os.path.join(ROOT, "data", "bench"))
    p.add_argument("--results-dir", default=os.path.join(HERE, "results"))
    p.add_argument("--rowfilter", default=None, help="rowfilter-scan binary (default: cargo build --release)")
    p.add_argument("--tamis-cli", default=None, help="tamis CLI binary for TPC-H generation (default: cargo build --release)")
    p.add_argument("--update-benchmarks", action="store_true", help="write the tables into BENCHMARKS.md")
    p.add_argument("--smoke", action="store_true", help="tiny data, one run: checks the harness, not speed")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--worker-threads", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--worker-out", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


# ---- worker ------------------------------------------------------------------------------------


def read_bytes() -> Optional[int]:
    try:
        with open("/proc/self/io") as f:
            for line in f:
                if line.startswith("read_bytes:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def drop_cache(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def canonical_rows(table) -> List[tuple]:
    def norm(v):
        if isinstance(v, float) and v != v:
            return "NaN"
        if isinstance(v, Decimal):
            return str(v)
        if isinstance(v, (dt.date, dt.datetime)):
            return v.isoformat()
        return v

    rows = [tuple(norm(v) for v in r.values()) for r in table.to_pylist()]
    return sorted(rows, key=repr)


def column_fingerprint(column) -> tuple:
    """(nulls, non-null values, sum) of a column, order-independent; lists add their element
    count and recurse into the elements; strings and binaries sum their lengths, dates their
    day numbers, decimals and floats their float value."""
    import pyarrow as pa
    import pyarrow.compute as pc

    typ = column.type
    if pa.types.is_dictionary(typ):
        column, typ = column.cast(typ.value_type), typ.value_type
    nulls = column.null_count
    if pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ) \
            or pa.types.is_list_view(typ) or pa.types.is_large_list_view(typ):
        elements = pc.sum(pc.list_value_length(column)).as_py() or 0
        return (nulls, elements) + column_fingerprint(pc.list_flatten(column))
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_string_view(typ) \
            or pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or pa.types.is_binary_view(typ):
        numbers = pc.binary_length(column.cast(pa.large_binary()))
    elif pa.types.is_date(typ):
        numbers = column.cast(pa.date32()).cast(pa.int32())
    elif pa.types.is_boolean(typ):
        numbers = column.cast(pa.int8())
    else:
        numbers = column
    total = pc.sum(numbers.cast(pa.float64())).as_py()
    return (nulls, len(column) - nulls, 0.0 if total is None else total)


def fingerprints_agree(a: List[tuple], b: List[tuple]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if len(x) != len(y):
            return False
        for u, v in zip(x, y):
            if isinstance(u, float) or isinstance(v, float):
                if u != u and v != v:
                    continue  # both NaN
                if abs(u - v) > 1e-9 * max(1.0, abs(u), abs(v)):  # summation order differs
                    return False
            elif u != v:
                return False
    return True


def normalized(table):
    """`table` with engine-specific types unified (dictionaries decoded; strings and binaries as
    large_binary; dates as days, timestamps as ns; decimals and floats as float64; integers and
    booleans as int64), its rows sorted by every column: equal results compare equal."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = []
    for c in table.columns:
        c = c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c
        t = c.type
        if pa.types.is_dictionary(t):
            c, t = c.cast(t.value_type), t.value_type
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t) \
                or pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
            c = c.cast(pa.large_binary())
        elif pa.types.is_date(t):
            c = c.cast(pa.date32()).cast(pa.int32()).cast(pa.int64())
        elif pa.types.is_timestamp(t):
            c = c.cast(pa.timestamp("ns", tz=t.tz)).cast(pa.int64())
        elif pa.types.is_decimal(t) or pa.types.is_floating(t):
            c = c.cast(pa.float64())
        elif pa.types.is_integer(t) or pa.types.is_boolean(t):
            c = c.cast(pa.int64())
        columns.append(c)
    names = [f"c{i}" for i in range(len(columns))]
    t = pa.table(columns, names=names)
    if not names:
        return t
    order = pc.sort_indices(t, sort_keys=[(n, "ascending", "at_end") for n in names])
    return t.take(order)


def tables_agree(a, b) -> bool:
    """Equal normalized tables; floats may differ by summation order (relative 1e-9), NaN = NaN."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if a.num_columns != b.num_columns or a.num_rows != b.num_rows:
        return False
    for x, y in zip(a.columns, b.columns):
        x, y = x.combine_chunks(), y.combine_chunks()
        if x.type != y.type:
            return False
        if not pa.types.is_floating(x.type):
            if not x.equals(y):
                return False
            continue
        both_nan = pc.and_(pc.is_nan(x), pc.is_nan(y))
        close = pc.less_equal(
            pc.abs(pc.subtract(x, y)),
            pc.multiply(pc.max_element_wise(pc.max_element_wise(pc.abs(x), pc.abs(y)), 1.0), 1e-9),
        )
        ok = pc.fill_null(pc.or_(both_nan, close), True)
        nulls_match = pc.equal(pc.is_null(x), pc.is_null(y))
        if not pc.all(ok).as_py() or not pc.all(nulls_match).as_py():
            return False
    return True


def check_agreement(query, outcomes: Dict[str, object]) -> None:
    counts = {name: o.rows for name, o in outcomes.items()}
    if len(set(counts.values())) != 1:
        raise SystemExit(f"bench: engines disagree on the row count of {query.name!r}: {counts}")
    rows = next(iter(counts.values()))
    if rows > SMALL_RESULT:
        # Whole results, sorted and with types unified (rows beyond SMALL_RESULT are too many
        # to compare as Python tuples).
        # Nested columns cannot be sorted: those results compare by per-column fingerprints.
        import pyarrow as pa

        reference_name, reference = None, None
        for name, o in outcomes.items():
            if o.table is None:
                continue
            nested = any(pa.types.is_nested(c.type) for c in o.table.columns)
            got = ([column_fingerprint(c) for c in o.table.columns] if nested
                   else normalized(o.table))
            if reference is None:
                reference_name, reference = name, got
            elif not (fingerprints_agree(got, reference) if nested
                      else tables_agree(got, reference)):
                raise SystemExit(f"bench: {name} and {reference_name} return different rows for "
                                 f"{query.name!r}")
        return
    reference_name, reference = None, None
    for name, o in outcomes.items():
        if o.table is None:
            continue
        got = canonical_rows(o.table)
        if reference is None:
            reference_name, reference = name, got
        elif got != reference:
            raise SystemExit(
                f"bench: {name} and {reference_name} return different rows for {query.name!r}"
            )


def worker(args) -> None:
    from engines import ENGINES, EngineSkip, Floor, RowFilter
    from suites import SUITES

    threads = args.worker_threads
    names = args.engines.split(",")
    suites = args.suite.split(",")
    engines = {}
    for n in names if any(s != "remote" for s in suites) else []:
        if n == "parquet-rowfilter":
            engines[n] = RowFilter(threads, args.rowfilter)
        else:
            engines[n] = ENGINES[n](threads)

    # The floor of the tpch and selectivity suites (see engines.Floor): one thread, warm cache,
    # beside the engines.
    FLOOR_SUITES = ("tpch", "selectivity")
    floor = (Floor(args.rowfilter)
             if args.rowfilter and threads == 1 and any(s in FLOOR_SUITES for s in suites)
             else None)
    results = []
    for suite in suites:
        if suite == "remote":  # its own engines (S3 clients), server and measures
            import remote

            results += remote.worker(args, threads, check_agreement)
            continue
        queries = SUITES[suite](args.data_dir, args)
        caches = (args.cache or suite_default(suite, "cache")).split(",")
        for q in queries:
            # Correctness first: one run of each engine, results compared.
            outcomes, skipped = {}, {}
            for n, e in engines.items():
                try:
                    outcomes[n] = e.run(q, dump=True) if n == "parquet-rowfilter" else e.run(q)
                except EngineSkip as err:
                    skipped[n] = str(err)
                except Exception as err:  # noqa: BLE001 - reported, and only where the query allows it
                    if not q.skip_on_error:
                        raise
                    skipped[n] = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
                if n in skipped:
                    print(f"  {suite}: {q.name}: {n} skipped: {skipped[n]}", flush=True)
            if not outcomes:
                raise SystemExit(f"bench: no engine could run {q.name!r}: {skipped}")
            check_agreement(q, outcomes)
            running = {n: e for n, e in engines.items() if n in outcomes}
            rows = next(iter(outcomes.values())).rows
            metrics: Dict[str, object] = {}
            if "tamis" in outcomes:
                import tamis

                explain_options = {k: v for k, v in q.tamis_options.items() if k in explain_params(tamis)}
                metrics = tamis.explain(q.path, where=q.where.sql() if q.where else None,
                                        columns=q.columns, threads=threads, **explain_options)
            for cache in caches:
                times: Dict[str, List[float]] = {n: [] for n in running}
                io: Dict[str, List[int]] = {n: [] for n in running}
                order = list(running.items())
                out = None
                for rep in range(args.runs + 1):
                    # Each repetition starts with another engine, so none always runs first
                    # (cooler caches) or right after a given peer.
                    shift = rep % len(order)
                    for n, e in order[shift:] + order[:shift]:
                        if cache == "cold":
                            drop_cache(q.path)
                        # The previous result is freed before the timer starts: otherwise each
                        # engine pays for freeing the one before it.
                        out = None
                        gc.collect()
                        before = read_bytes()
                        start = time.perf_counter_ns()
                        out = e.run(q)
                        elapsed = time.perf_counter_ns() - start
                        after = read_bytes()
                        if out.rows != rows:
                            raise SystemExit(f"bench: {n} changed its row count on {q.name!r}")
                        if rep == 0:
                            continue  # warm-up
                        times[n].append((out.ns if out.ns is not None else elapsed) / 1e6)
                        if out.read_bytes is not None:
                            io[n].append(out.read_bytes)
                        elif before is not None and after is not None:
                            io[n].append(after - before)
                if floor is not None and suite in FLOOR_SUITES and cache == "warm":
                    floor.run(q)  # warm-up
                    floor_ms = [floor.run(q).ns / 1e6 for _ in range(args.runs)]
                    results.append({"suite": suite, "query": q.name, "engine": "floor",
                                    "threads": threads, "cache": cache, "rows": rows,
                                    "group": q.group, "x": q.x, "times_ms": floor_ms,
                                    "median_ms": statistics.median(floor_ms),
                                    "min_ms": min(floor_ms), "max_ms": max(floor_ms),
                                    "read_bytes": None, "tamis_bytes_read": None})
                for n in engines:
                    common = {"suite": suite, "query": q.name, "engine": n, "threads": threads,
                              "cache": cache, "rows": rows, "group": q.group, "x": q.x}
                    if n in skipped:
                        results.append(dict(common, times_ms=[], median_ms=None, read_bytes=None,
                                            tamis_bytes_read=None, skipped=skipped[n]))
                        continue
                    results.append(dict(
                        common, times_ms=times[n], median_ms=statistics.median(times[n]),
                        min_ms=min(times[n]), max_ms=max(times[n]),
                        read_bytes=statistics.median(io[n]) if io[n] else None,
                        tamis_bytes_read=metrics.get("bytes_read") if n == "tamis" else None,
                        tamis_explain={k: v for k, v in metrics.items() if "order" in k}
                        if n == "tamis" and "filter_order" in q.tamis_options else None,
                    ))
                print(f"  [{threads}t {cache}] {suite}: {q.name}: " + ", ".join(
                    f"{r['engine']} {'skipped' if r['median_ms'] is None else format(r['median_ms'], '.1f')}"
                    for r in results[-len(engines):]), flush=True)
    for e in list(engines.values()) + ([floor] if floor else []):
        if hasattr(e, "close"):
            e.close()
    with open(args.worker_out, "w") as f:
        json.dump(results, f)


def explain_params(tamis) -> set:
    import inspect

    return set(inspect.signature(tamis.explain).parameters)


# ---- orchestration and report --------------------------------------------------------------------

# Suites reproducing the paper (issue 4): single thread and warm cache unless asked otherwise, as
# in the paper (single thread, data preloaded); their tables also give tamis / DuckDB.
PAPER_SUITES = ("m2", "q6", "order", "rle")
SF_SUITES = ("tpch", "q6", "order", "lookup", "remote")  # sized by --sf (TPC-H), the others by --rows


def suite_default(suite: str, what: str) -> str:
    if what == "threads":
        return "1" if suite in PAPER_SUITES else ",".join(str(t) for t in sorted({1, os.cpu_count() or 1}))
    return "warm" if suite in PAPER_SUITES else "warm,cold"


def suite_threads(suite: str, args) -> List[int]:
    return [int(t) for t in (args.threads or suite_default(suite, "threads")).split(",")]


def cargo_binary(package: str, binary: str, release: bool) -> str:
    profile = ["--release"] if release else []
    subprocess.run(["cargo", "build", "-q", *profile, "-p", package, "--bin", binary], cwd=ROOT, check=True)
    meta = json.loads(subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"],
                                     cwd=ROOT, check=True, capture_output=True, text=True).stdout)
    return os.path.join(meta["target_directory"], "release" if release else "debug", binary)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import duckdb, polars, pyarrow, datafusion  # noqa: E401
    try:
        import tamis

        version = tamis.__version__
    except ImportError:
        version = "not installed"
    return (f"{cpu}, {os.cpu_count()} cores, Linux {platform.release()}; Python {platform.python_version()}; "
            f"tamis {version}, duckdb {duckdb.__version__}, polars {polars.__version__}, "
            f"pyarrow {pyarrow.__version__}, datafusion {datafusion.__version__}, parquet crate 60.1")


def fmt_ms(v: float) -> str:
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def fmt_bytes(v) -> str:
    if v is None:
        return "–"
    return f"{v / 2**20:.1f} MiB"


def spread(r: dict) -> str:
    """The median with the runs' range, `12.3 (11.9–13.0)`; results of older runs have no range."""
    if r.get("min_ms") is None:
        return fmt_ms(r["median_ms"])
    return f"{fmt_ms(r['median_ms'])} ({fmt_ms(r['min_ms'])}–{fmt_ms(r['max_ms'])})"


def table_md(results: List[dict], suite: str, threads: int, cache: str, engines: List[str]) -> str:
    rows = [r for r in results if r["suite"] == suite and r["threads"] == threads and r["cache"] == cache]
    queries = list(dict.fromkeys(r["query"] for r in rows))
    versus_duckdb = suite in PAPER_SUITES and "duckdb" in engines and "tamis" in engines
    floors = {r["query"]: r for r in rows if r["engine"] == "floor"}
    rows = [r for r in rows if r["engine"] != "floor"]
    head = ["query", "rows"] + [f"{e} ms" for e in engines] + ["tamis / best peer", "best peer"]
    if floors:
        head += ["floor ms", "tamis / floor"]
    if versus_duckdb:
        head.append("tamis / duckdb")
    head.append("tamis read")
    if cache == "cold":
        head.append("read_bytes (tamis / best peer)")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for q in queries:
        everyone = {r["engine"]: r for r in rows if r["query"] == q}
        by = {e: r for e, r in everyone.items() if r["median_ms"] is not None}
        peers = {e: by[e]["median_ms"] for e in engines if e != "tamis" and e in by}
        best = min(peers, key=peers.get) if peers else None
        ratio = by["tamis"]["median_ms"] / peers[best] if best and "tamis" in by else float("nan")
        cells = [q, str(next(iter(everyone.values()))["rows"])]
        for e in engines:
            cell = spread(by[e]) if e in by else ("skipped" if e in everyone else "–")
            cells.append(f"**{cell}**" if e == best else cell)
        verdict = f"{ratio:.2f}x" + (" (slower)" if ratio > 1.0 else "") if ratio == ratio else "–"
        cells += [verdict, best or "–"]
        if floors:
            f = floors.get(q)
            cells += [spread(f) if f else "–",
                      f"{by['tamis']['median_ms'] / f['median_ms']:.2f}x" if f and "tamis" in by else "–"]
        if versus_duckdb:
            cells.append(f"{by['tamis']['median_ms'] / by['duckdb']['median_ms']:.2f}x"
                         if "tamis" in by and "duckdb" in by else "–")
        cells.append(fmt_bytes(by.get("tamis", {}).get("tamis_bytes_read")))
        if cache == "cold":
            cells.append(f"{fmt_bytes(by['tamis']['read_bytes'])} / {fmt_bytes(by[best]['read_bytes'])}"
                         if "tamis" in by and best else "–")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def notes_md(results: List[dict], suite: str) -> List[str]:
    """Skipped engines (with the reason, once per engine and reason) and what tamis's explain
    said about filter order, under a suite's tables."""
    rows = [r for r in results if r["suite"] == suite]
    skips: Dict[tuple, List[str]] = {}
    for r in rows:
        if r.get("skipped"):
            queries = skips.setdefault((r["engine"], r["skipped"]), [])
            if r["query"] not in queries:
                queries.append(r["query"])
    all_queries = list(dict.fromkeys(r["query"] for r in rows))
    notes = []
    for (engine, reason), queries in skips.items():
        which = "every query" if queries == all_queries else ", ".join(f"`{q}`" for q in queries)
        notes.append(f"- {engine} skipped on {which}: {reason}")
    seen = set()
    for r in rows:
        extra = r.get("tamis_explain")
        if extra and r["query"] not in seen:
            seen.add(r["query"])
            notes.append(f"- tamis explain, `{r['query']}`: "
                         + "; ".join(f"{k}: {explain_value(v)}" for k, v in extra.items()))
    return notes


def explain_value(v) -> str:
    """A filter order as `filter (k bits, s = measured selectivity) → …`, anything else as is."""
    if isinstance(v, list) and v and all(isinstance(step, dict) and "filter" in step for step in v):
        parts = []
        for step in v:
            s = step.get("measured_selectivity", step.get("estimated_selectivity"))
            detail = [f"k={step['bit_width']}"] if step.get("bit_width") is not None else []
            if isinstance(s, (int, float)):
                detail.append(f"s={s:.3f}")
            parts.append(f"`{step['filter']}`" + (f" ({', '.join(detail)})" if detail else ""))
        return " → ".join(parts)
    return str(v)


def plot(results: List[dict], suite: str, engines: List[str], out_dir: str) -> List[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    results = [r for r in results if r["median_ms"] is not None]
    for threads in sorted({r["threads"] for r in results if r["suite"] == suite}):
        for cache in sorted({r["cache"] for r in results if r["suite"] == suite}):
            rows = [r for r in results if r["suite"] == suite and r["threads"] == threads and r["cache"] == cache]
            queries = list(dict.fromkeys(r["query"] for r in rows))
            fig, ax = plt.subplots(figsize=(max(8, len(queries) * 1.2), 5))
            width = 0.8 / len(engines)
            for i, e in enumerate(engines):
                ys = [next((r["median_ms"] for r in rows if r["query"] == q and r["engine"] == e), 0) for q in queries]
                ax.bar([x + i * width for x in range(len(queries))], ys, width, label=e)
            ax.set_yscale("log")
            ax.set_ylabel("median ms (log)")
            ax.set_xticks([x + 0.4 - width / 2 for x in range(len(queries))])
            ax.set_xticklabels(queries, rotation=35, ha="right", fontsize=7)
            ax.set_title(f"{suite}: {threads} thread(s), {cache} cache")
            ax.legend(fontsize=7)
            fig.tight_layout()
            path = os.path.join(out_dir, f"{suite}-{threads}t-{cache}.png")
            fig.savefig(path, dpi=110)
            plt.close(fig)
            files.append(path)
            files += plot_lines(rows, suite, threads, cache, engines, out_dir)
    return files


def plot_lines(rows: List[dict], suite: str, threads: int, cache: str, engines: List[str], out_dir: str) -> List[str]:
    """One line plot per query group with an x value (bit width, selectivity, % RLE): the shape
    of the paper's figures."""
    import matplotlib.pyplot as plt

    files = []
    for group in dict.fromkeys(r["group"] for r in rows if r.get("group") and r.get("x") is not None):
        fig, ax = plt.subplots(figsize=(8, 5))
        for e in engines:
            points = sorted((r["x"], r["median_ms"]) for r in rows if r.get("group") == group and r["engine"] == e)
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=e)
        xs = sorted({r["x"] for r in rows if r.get("group") == group})
        if xs and min(xs) > 0 and max(xs) / min(xs) >= 32:
            ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(group)
        ax.set_ylabel("median ms (log)")
        ax.set_title(f"{suite}: {group}, {threads} thread(s), {cache} cache")
        ax.legend(fontsize=7)
        fig.tight_layout()
        slug = re.sub(r"[^a-z0-9]+", "-", group.lower()).strip("-")
        path = os.path.join(out_dir, f"{suite}-{slug}-{threads}t-{cache}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path)
    return files


def report(results: List[dict], suites: List[str], engines: List[str], args, desc: str) -> Dict[str, str]:
    sections = {}
    for suite in suites:
        if suite == "remote":
            import remote

            sections[suite] = remote.report(results, args, desc, engines)
            continue
        parts = [f"Command: `python bench/run.py --suite {suite}"
                 + (f" --sf {args.sf:g}" if suite in SF_SUITES else "")
                 + (f" --rows {args.rows}" if args.rows and suite not in SF_SUITES else "")
                 + (f" --threads {args.threads}" if args.threads else "")
                 + (f" --cache {args.cache}" if args.cache else "")
                 + f" --runs {args.runs} --update-benchmarks`  ",
                 f"Machine: {desc}  ",
                 f"Median of {args.runs} runs after one warm-up, engines interleaved; bold = best peer; "
                 "ratio < 1 means tamis is faster. Run on "
                 f"{dt.date.today().isoformat()}.", ""]
        for threads in sorted({r["threads"] for r in results if r["suite"] == suite}):
            for cache in [c for c in ("warm", "cold") if any(
                    r["cache"] == c for r in results if r["suite"] == suite and r["threads"] == threads)]:
                parts.append(f"**{threads} thread(s), {cache} cache**")
                parts.append("")
                parts.append(table_md(results, suite, threads, cache, engines))
                parts.append("")
        notes = notes_md(results, suite)
        if notes:
            parts += notes + [""]
        sections[suite] = "\n".join(parts)
    return sections


def update_benchmarks(sections: Dict[str, str]) -> None:
    path = os.path.join(ROOT, "BENCHMARKS.md")
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    for suite, body in sections.items():
        start, end = MARK.format(suite=suite, edge="start"), MARK.format(suite=suite, edge="end")
        block = f"{start}\n{body}\n{end}"
        if start in text and end in text:
            before, rest = text.split(start, 1)
            _, after = rest.split(end, 1)
            text = before + block + after
        else:
            text = text.rstrip("\n") + f"\n\n### Suite `{suite}`\n\n{block}\n"
    with open(path, "w") as f:
        f.write(text)


def main() -> None:
    args = parse_args()
    if args.worker:
        worker(args)
        return
    suites = list(SUITES_ORDER) if args.suite == "all" else args.suite.split(",")
    if args.smoke:
        args.sf, args.rows, args.runs = 0.01, args.rows or 20_000, 1
        args.latencies = args.latencies or "0,10"
        args.data_dir = os.path.join(args.results_dir, "smoke-data")
    release = not args.smoke
    if args.rowfilter is None and "parquet-rowfilter" in args.engines and any(s != "remote" for s in suites):
        args.rowfilter = cargo_binary("tamis-bench", "rowfilter-scan", release)
    if args.tamis_cli is None and any(s in SF_SUITES for s in suites):
        args.tamis_cli = cargo_binary("tamis-cli", "tamis", release)
    os.makedirs(args.data_dir, exist_ok=True)
    os.makedirs(args.results_dir, exist_ok=True)
    thread_counts = sorted({t for s in suites for t in suite_threads(s, args)})
    results: List[dict] = []
    for threads in thread_counts:
        here = [s for s in suites if threads in suite_threads(s, args)]
        out = os.path.join(args.results_dir, f"raw-{threads}t.json.tmp")
        env = dict(os.environ, POLARS_MAX_THREADS=str(threads))
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--worker-threads", str(threads),
               "--worker-out", out, "--suite", ",".join(here), "--sf", str(args.sf),
               "--runs", str(args.runs), "--engines", args.engines,
               "--data-dir", args.data_dir, "--tamis-cli", str(args.tamis_cli)]
        if args.rowfilter:  # without it (no parquet-rowfilter engine), no floor either
            cmd += ["--rowfilter", str(args.rowfilter)]
        if args.rows:
            cmd += ["--rows", str(args.rows)]
        if args.cache:
            cmd += ["--cache", args.cache]
        if args.latencies:
            cmd += ["--latencies", args.latencies]
        print(f"bench: {threads} thread(s): {', '.join(here)}", flush=True)
        subprocess.run(cmd, env=env, check=True)
        with open(out) as f:
            results += json.load(f)
        os.remove(out)
    engines = args.engines.split(",")
    if "lookup" in suites:
        # lookup.sidecar_report drives Polars in this process, one thread like every engine
        # there; Polars fixes its pool size at import (machine() imports it).
        os.environ["POLARS_MAX_THREADS"] = "1"
    desc = machine()
    sections = report(results, suites, engines, args, desc)
    if "lookup" in suites:
        import lookup

        sections["lookup"] += "\n" + lookup.paper_report(args.data_dir, args)
        sections["lookup"] += "\n" + lookup.sidecar_report(args.data_dir, args)
    tag = "smoke" if args.smoke else "-".join(suites)
    with open(os.path.join(args.results_dir, f"{tag}.json"), "w") as f:
        json.dump({"machine": desc, "results": results}, f, indent=1)
    with open(os.path.join(args.results_dir, f"{tag}.md"), "w") as f:
        f.write("\n\n".join(f"## {s}\n\n{body}" for s, body in sections.items()) + "\n")
    if not args.smoke:
        for suite in suites:
            if suite != "remote":  # its numbers are tables of three measures
                plot(results, suite, engines, args.results_dir)
    if args.update_benchmarks and not args.smoke:
        update_benchmarks(sections)
    print("\n\n".join(sections.values()))


SUITES_ORDER = ("tpch", "selectivity", "strings", "dictsize", "payload", "m2", "q6", "order", "rle", "lookup",
                "remote")

if __name__ == "__main__":
    main()
