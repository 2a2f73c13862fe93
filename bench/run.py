#!/usr/bin/env python3
"""Side-by-side benchmark harness: tamis against DuckDB, Polars, pyarrow, DataFusion and the
parquet crate's RowFilter reader, on the same files, with the same thread counts.

    python bench/run.py --suite tpch                 # SF1, 1 and all cores, warm and cold cache
    python bench/run.py --suite all --update-benchmarks
    python bench/run.py --suite selectivity --rows 20000000 --runs 9

Each thread count runs in its own worker process (Polars fixes its pool size at import). Inside
a worker, every repetition runs each engine once, in turn (interleaved), the first repetition
being a warm-up; the reported time is the median of the others. Cold-cache runs drop the files
from the page cache (posix_fadvise DONTNEED) before every run and record read_bytes from
/proc/self/io. Every engine's row count must agree, and for small results the rows themselves;
otherwise the run fails.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
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
    p.add_argument("--suite", default="tpch", help="tpch, selectivity, strings, dictsize or all")
    p.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (tpch suite)")
    p.add_argument("--rows", type=int, default=None, help="rows per generated file (other suites)")
    p.add_argument("--threads", default=None, help="comma-separated thread counts (default: 1,all cores)")
    p.add_argument("--cache", default="warm,cold", help="warm, cold or warm,cold")
    p.add_argument("--runs", type=int, default=5, help="timed runs per engine (after one warm-up)")
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


def check_agreement(query, outcomes: Dict[str, object]) -> None:
    counts = {name: o.rows for name, o in outcomes.items()}
    if len(set(counts.values())) != 1:
        raise SystemExit(f"bench: engines disagree on the row count of {query.name!r}: {counts}")
    rows = next(iter(counts.values()))
    if rows > SMALL_RESULT:
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
    from engines import ENGINES, RowFilter
    from suites import SUITES

    threads = args.worker_threads
    names = args.engines.split(",")
    engines = {}
    for n in names:
        if n == "parquet-rowfilter":
            engines[n] = RowFilter(threads, args.rowfilter)
        else:
            engines[n] = ENGINES[n](threads)
    import tamis

    results = []
    for suite in args.suite.split(","):
        queries = SUITES[suite](args.data_dir, args)
        for q in queries:
            # Correctness first: one run of each engine, results compared.
            outcomes = {}
            for n, e in engines.items():
                outcomes[n] = e.run(q, dump=True) if n == "parquet-rowfilter" else e.run(q)
            check_agreement(q, outcomes)
            rows = outcomes["tamis"].rows if "tamis" in outcomes else next(iter(outcomes.values())).rows
            metrics = tamis.explain(q.path, where=q.where.sql() if q.where else None,
                                    columns=q.columns, threads=threads)
            for cache in args.cache.split(","):
                times: Dict[str, List[float]] = {n: [] for n in engines}
                io: Dict[str, List[int]] = {n: [] for n in engines}
                for rep in range(args.runs + 1):
                    for n, e in engines.items():
                        if cache == "cold":
                            drop_cache(q.path)
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
                for n in engines:
                    results.append({
                        "suite": suite, "query": q.name, "engine": n, "threads": threads,
                        "cache": cache, "rows": rows, "times_ms": times[n],
                        "median_ms": statistics.median(times[n]),
                        "read_bytes": statistics.median(io[n]) if io[n] else None,
                        "tamis_bytes_read": metrics["bytes_read"] if n == "tamis" else None,
                    })
                print(f"  [{threads}t {cache}] {suite}: {q.name}: " + ", ".join(
                    f"{r['engine']} {r['median_ms']:.1f}" for r in results[-len(engines):]), flush=True)
    for e in engines.values():
        if hasattr(e, "close"):
            e.close()
    with open(args.worker_out, "w") as f:
        json.dump(results, f)


# ---- orchestration and report --------------------------------------------------------------------


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
    import tamis
    return (f"{cpu}, {os.cpu_count()} cores, Linux {platform.release()}; Python {platform.python_version()}; "
            f"tamis {tamis.__version__}, duckdb {duckdb.__version__}, polars {polars.__version__}, "
            f"pyarrow {pyarrow.__version__}, datafusion {datafusion.__version__}, parquet crate 60.1")


def fmt_ms(v: float) -> str:
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def fmt_bytes(v) -> str:
    if v is None:
        return "–"
    return f"{v / 2**20:.1f} MiB"


def table_md(results: List[dict], suite: str, threads: int, cache: str, engines: List[str]) -> str:
    rows = [r for r in results if r["suite"] == suite and r["threads"] == threads and r["cache"] == cache]
    queries = list(dict.fromkeys(r["query"] for r in rows))
    head = ["query", "rows"] + [f"{e} ms" for e in engines] + ["tamis / best peer", "best peer", "tamis read"]
    if cache == "cold":
        head.append("read_bytes (tamis / best peer)")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for q in queries:
        by = {r["engine"]: r for r in rows if r["query"] == q}
        peers = {e: by[e]["median_ms"] for e in engines if e != "tamis" and e in by}
        best = min(peers, key=peers.get) if peers else None
        ratio = by["tamis"]["median_ms"] / peers[best] if best and "tamis" in by else float("nan")
        cells = [q, str(next(iter(by.values()))["rows"])]
        for e in engines:
            cell = fmt_ms(by[e]["median_ms"]) if e in by else "–"
            cells.append(f"**{cell}**" if e == best else cell)
        verdict = f"{ratio:.2f}x" + (" (slower)" if ratio > 1.0 else "")
        cells += [verdict, best or "–", fmt_bytes(by.get("tamis", {}).get("tamis_bytes_read"))]
        if cache == "cold":
            cells.append(f"{fmt_bytes(by['tamis']['read_bytes'])} / {fmt_bytes(by[best]['read_bytes'])}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(results: List[dict], suite: str, engines: List[str], out_dir: str) -> List[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
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
    return files


def report(results: List[dict], suites: List[str], engines: List[str], args, desc: str) -> Dict[str, str]:
    sections = {}
    for suite in suites:
        parts = [f"Command: `python bench/run.py --suite {suite}"
                 + (f" --sf {args.sf:g}" if suite == "tpch" else "")
                 + (f" --rows {args.rows}" if args.rows and suite != "tpch" else "")
                 + f" --runs {args.runs} --update-benchmarks`  ",
                 f"Machine: {desc}  ",
                 f"Median of {args.runs} runs after one warm-up, engines interleaved; bold = best peer; "
                 "ratio < 1 means tamis is faster. Run on "
                 f"{dt.date.today().isoformat()}.", ""]
        for threads in sorted({r["threads"] for r in results if r["suite"] == suite}):
            for cache in [c for c in ("warm", "cold") if c in args.cache.split(",")]:
                parts.append(f"**{threads} thread(s), {cache} cache**")
                parts.append("")
                parts.append(table_md(results, suite, threads, cache, engines))
                parts.append("")
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
        args.data_dir = os.path.join(args.results_dir, "smoke-data")
    release = not args.smoke
    if args.rowfilter is None and "parquet-rowfilter" in args.engines:
        args.rowfilter = cargo_binary("tamis-bench", "rowfilter-scan", release)
    if args.tamis_cli is None and "tpch" in suites:
        args.tamis_cli = cargo_binary("tamis-cli", "tamis", release)
    os.makedirs(args.data_dir, exist_ok=True)
    os.makedirs(args.results_dir, exist_ok=True)
    thread_counts = [int(t) for t in args.threads.split(",")] if args.threads else sorted({1, os.cpu_count() or 1})
    results: List[dict] = []
    for threads in thread_counts:
        out = os.path.join(args.results_dir, f"raw-{threads}t.json.tmp")
        env = dict(os.environ, POLARS_MAX_THREADS=str(threads))
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--worker-threads", str(threads),
               "--worker-out", out, "--suite", ",".join(suites), "--sf", str(args.sf),
               "--cache", args.cache, "--runs", str(args.runs), "--engines", args.engines,
               "--data-dir", args.data_dir, "--rowfilter", str(args.rowfilter),
               "--tamis-cli", str(args.tamis_cli)]
        if args.rows:
            cmd += ["--rows", str(args.rows)]
        print(f"bench: {threads} thread(s): {', '.join(suites)}", flush=True)
        subprocess.run(cmd, env=env, check=True)
        with open(out) as f:
            results += json.load(f)
        os.remove(out)
    engines = args.engines.split(",")
    desc = machine()
    sections = report(results, suites, engines, args, desc)
    tag = "smoke" if args.smoke else "-".join(suites)
    with open(os.path.join(args.results_dir, f"{tag}.json"), "w") as f:
        json.dump({"machine": desc, "results": results}, f, indent=1)
    with open(os.path.join(args.results_dir, f"{tag}.md"), "w") as f:
        f.write("\n\n".join(f"## {s}\n\n{body}" for s, body in sections.items()) + "\n")
    if not args.smoke:
        for suite in suites:
            plot(results, suite, engines, args.results_dir)
    if args.update_benchmarks and not args.smoke:
        update_benchmarks(sections)
    print("\n\n".join(sections.values()))


SUITES_ORDER = ("tpch", "selectivity", "strings", "dictsize")

if __name__ == "__main__":
    main()
