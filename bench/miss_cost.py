"""What a miss of the page cache costs a first scan (issue 40: at most 3 %).

Each run is a new `tamis explain --json` process, so every page is a miss: the memory tier off
(`TAMIS_PAGE_CACHE=0`) against on and empty (`2GiB`), the runs interleaved, one thread;
the time is the open and the scan (`time_metadata_ns + time_total_ns`); medians.

`--tier disk`: the memory tier off, no cache directory against a new empty one (`--cache-dir`)
per run; the process's wall time too (it waits at exit for the pages queued for the disk).
Then, over one directory, the second and third processes: a local page is written on its
second miss and read from the directory on its third.

    python bench/miss_cost.py --tamis target/release/tamis --data-dir data/tpch-sf1 --runs 7
    python bench/miss_cost.py --tamis target/release/tamis --data-dir data/tpch-sf1 --runs 7 --tier disk
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

QUERIES = {
    "Q6": ("l_shipdate >= date '1994-01-01' AND l_shipdate < date '1995-01-01' "
           "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24",
           "l_extendedprice,l_discount"),
    "l_partkey = 100000": ("l_partkey = 100000", "l_orderkey,l_extendedprice"),
    "Q1's filter and columns": ("l_shipdate <= date '1998-09-02'",
                                "l_returnflag,l_linestatus,l_quantity,l_extendedprice,"
                                "l_discount,l_tax"),
}


def run(cli: str, path: str, where: str, select: str, cache: str,
        cache_dir: str | None = None) -> tuple[float, float]:
    """One scan in a new process: its open and scan, and the process's wall time, in ms."""
    cmd = [cli, "explain", path, "--where", where, "--select", select, "--threads", "1", "--json"]
    if cache_dir:
        cmd += ["--cache-dir", cache_dir]
    start = time.perf_counter()
    out = subprocess.run(cmd, env=dict(os.environ, TAMIS_PAGE_CACHE=cache),
                         capture_output=True, text=True, check=True).stdout
    wall = (time.perf_counter() - start) * 1e3
    m = json.loads(out)
    return (m["time_total_ns"] + m["time_metadata_ns"]) / 1e6, wall


def memory(args, path: str) -> None:
    print("| query | tier off ms | on, empty ms | on / off |")
    print("|---|---|---|---|")
    for name, (where, select) in QUERIES.items():
        off, on = [], []
        for _ in range(args.runs):
            off.append(run(args.tamis, path, where, select, "0")[0])
            on.append(run(args.tamis, path, where, select, "2GiB")[0])
        a, b = statistics.median(off), statistics.median(on)
        print(f"| {name} | {a:.1f} | {b:.1f} | {b / a:.2f}x |", flush=True)


def disk(args, path: str) -> None:
    print("| query | no directory: scan ms, process ms | empty directory: scan, process | "
          "ratio (scan, process) | 2nd process: scan, process | 3rd process: scan, process |")
    print("|---|---|---|---|---|---|")
    med = statistics.median
    for name, (where, select) in QUERIES.items():
        off, on, second, third = [], [], [], []
        for _ in range(args.runs):
            off.append(run(args.tamis, path, where, select, "0"))
            d = tempfile.mkdtemp(prefix="tamis-miss-", dir=args.tmp)
            try:
                on.append(run(args.tamis, path, where, select, "0", d))
                second.append(run(args.tamis, path, where, select, "0", d))
                third.append(run(args.tamis, path, where, select, "0", d))
            finally:
                shutil.rmtree(d)
        cell = lambda xs: (med(x[0] for x in xs), med(x[1] for x in xs))  # noqa: E731
        (a, aw), (b, bw), (c, cw), (e, ew) = cell(off), cell(on), cell(second), cell(third)
        print(f"| {name} | {a:.1f}, {aw:.1f} | {b:.1f}, {bw:.1f} | {b / a:.2f}x, {bw / aw:.2f}x "
              f"| {c:.1f}, {cw:.1f} | {e:.1f}, {ew:.1f} |", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tamis", required=True, help="the release tamis CLI")
    p.add_argument("--data-dir", required=True, help="holds lineitem.parquet (TPC-H)")
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--tier", choices=["memory", "disk"], default="memory")
    p.add_argument("--tmp", default=None, help="where cache directories go (default: $TMPDIR)")
    args = p.parse_args()
    path = os.path.join(args.data_dir, "lineitem.parquet")
    (disk if args.tier == "disk" else memory)(args, path)


if __name__ == "__main__":
    main()
