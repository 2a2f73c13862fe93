#!/usr/bin/env python3
"""Memory under load (issue 16, item 6): a soak benchmark, not a timed test.

    python bench/soak.py --data-dir data/tpch-sf10              # SF 10 lineitem, 2 threads
    python bench/soak.py --data-dir /tmp/soak --sf 0.1 --minutes 1 --smoke

1. Peak RSS of one scan: Q6 (filter and projection), Q1 (filter and projection) and a full
   projection of every column, each in a fresh Python process scanning with ``--threads``
   threads and dropping every batch as it arrives; the peak is the process's ``ru_maxrss``.
2. Flat RSS under concurrency: ``--concurrent`` Python threads in one process, each looping
   the three scans for ``--minutes`` minutes. RSS (``/proc/self/status`` VmRSS) is sampled
   every ``--sample`` seconds; the report gives the samples of the first and last minute and
   every error.

``--data-dir`` holds ``lineitem.parquet``, generated there by `tamis gen tpch` at ``--sf`` when
missing (``--tamis-cli``).
"""

from __future__ import annotations

import argparse
import json
import os

# Peers decompress every page of every query: tamis's page cache (on by default in a process
# that can hit it) is off here unless TAMIS_PAGE_CACHE asks for it (bench/page_cache.py and
# bench/disk_cache.py measure the cache).
os.environ.setdefault("TAMIS_PAGE_CACHE", "0")
import resource
import statistics
import subprocess
import sys
import threading
import time

QUERIES = {
    "Q6": dict(
        where="l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' "
              "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24",
        columns=["l_extendedprice", "l_discount"],
    ),
    "Q1": dict(
        where="l_shipdate <= DATE '1998-09-02'",
        columns=["l_returnflag", "l_linestatus", "l_quantity", "l_extendedprice",
                 "l_discount", "l_tax"],
    ),
    "full projection": dict(where=None, columns=None),
}
MIB = 1 << 20


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--sf", type=float, default=10.0, help="scale factor when lineitem is generated")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--concurrent", type=int, default=8, help="Python threads scanning at once")
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--sample", type=float, default=10.0, help="seconds between RSS samples")
    p.add_argument("--tamis-cli", default="tamis")
    p.add_argument("--smoke", action="store_true", help="small data, short loop: checks the harness")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def scan(path: str, query: str, threads: int) -> int:
    import tamis

    q = QUERIES[query]
    rows = 0
    reader = tamis.scan_batches(path, where=q["where"], columns=q["columns"], threads=threads)
    for batch in reader:
        rows += batch.num_rows
    return rows


def one(path: str, query: str, threads: int) -> None:
    """Child process: one scan, then its rows, seconds and peak RSS as JSON."""
    t = time.perf_counter()
    rows = scan(path, query, threads)
    seconds = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(json.dumps(dict(query=query, rows=rows, seconds=seconds, peak_mib=peak)))


def ensure_data(args) -> str:
    path = os.path.join(args.data_dir, "lineitem.parquet")
    if not os.path.exists(path):
        os.makedirs(args.data_dir, exist_ok=True)
        subprocess.run([args.tamis_cli, "gen", "tpch", "--scale-factor", str(args.sf),
                        "--output", args.data_dir, "--tables", "lineitem"], check=True)
    return path


def peaks(path: str, args) -> list:
    out = []
    for query in QUERIES:
        r = subprocess.run([sys.executable, __file__, "--data-dir", args.data_dir, "--one", query,
                            "--threads", str(args.threads)],
                           check=True, capture_output=True, text=True)
        out.append(json.loads(r.stdout.strip().splitlines()[-1]))
        print(f"  peak {query}: {out[-1]['peak_mib']:.0f} MiB, {out[-1]['rows']} rows, "
              f"{out[-1]['seconds']:.2f} s", file=sys.stderr)
    return out


def loop(path: str, args) -> dict:
    import tamis  # noqa: F401  (loaded before the first sample, so samples compare scans only)

    stop = time.monotonic() + args.minutes * 60
    errors, scans = [], [0] * args.concurrent
    names = list(QUERIES)

    def worker(i: int) -> None:
        k = i
        while time.monotonic() < stop:
            try:
                scan(path, names[k % len(names)], args.threads)
                scans[i] += 1
            except Exception as e:  # every error is reported, none hidden
                errors.append(f"{type(e).__name__}: {e}")
            k += 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.concurrent)]
    start = time.monotonic()
    for t in threads:
        t.start()
    samples = []
    while any(t.is_alive() for t in threads):
        samples.append((time.monotonic() - start, rss_mib()))
        time.sleep(args.sample)
    for t in threads:
        t.join()
    first = [r for s, r in samples if s < 60]
    last = [r for s, r in samples if s >= samples[-1][0] - 60]
    return dict(scans=sum(scans), errors=errors, samples=samples,
                first_minute=(min(first), max(first)) if first else None,
                last_minute=(min(last), max(last)) if last else None,
                max_mib=max(r for _, r in samples))


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.one:
        one(os.path.join(args.data_dir, "lineitem.parquet"), args.one, args.threads)
        return 0
    if args.smoke:
        args.sf, args.minutes, args.sample, args.concurrent = 0.01, 0.05, 0.5, 2
        args.data_dir = os.path.join(args.data_dir, "_smoke-sf0.01")
    path = ensure_data(args)
    size = os.path.getsize(path) / MIB
    print(f"soak: {path} ({size:.0f} MiB), {args.threads} scan threads", file=sys.stderr)
    single = peaks(path, args)
    looped = loop(path, args)
    print("| scan | rows | seconds | peak RSS |")
    print("|---|---|---|---|")
    for r in single:
        print(f"| {r['query']} | {r['rows']} | {r['seconds']:.2f} | {r['peak_mib']:.0f} MiB |")
    print()
    fm, lm = looped["first_minute"], looped["last_minute"]
    print(f"{args.concurrent} concurrent Python scans x {args.threads} threads for "
          f"{args.minutes:g} min: {looped['scans']} scans, {len(looped['errors'])} errors; RSS "
          f"first minute {fm[0]:.0f}–{fm[1]:.0f} MiB, last minute {lm[0]:.0f}–{lm[1]:.0f} MiB, "
          f"max {looped['max_mib']:.0f} MiB "
          f"(median of all samples {statistics.median(r for _, r in looped['samples']):.0f} MiB).")
    for e in looped["errors"][:10]:
        print(f"error: {e}")
    return 1 if looped["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
