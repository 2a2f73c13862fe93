"""TPC-H Q17 on cold first runs: each run a new `tamis sql` process (issue 40's "≥ 3.5x with
runtime filters than without on a cold first run").

Beside Q17 with runtime filters on and off, the floors a new process cannot go under: `SELECT
1` (start and plan) and one scan of the three `lineitem` columns Q17 reads (`l_partkey`,
`l_quantity`, `l_extendedprice`: every page read and decompressed once, summed). Then the
same Q17 runs with a cache directory the runs before filled (`--cache-dir`, the disk tier:
a new process, no decompression), which is the design that lowers that floor. Runs
interleaved, medians, 2 threads by default, OS page cache warm.

    python bench/q17_cold.py --tamis target/release/tamis --data-dir data/tpch-sf1 --runs 9
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
Q17 = open(os.path.join(HERE, "tpch", "queries", "q17.sql")).read()
FLOOR = "SELECT sum(l_partkey), sum(l_quantity), sum(l_extendedprice) FROM lineitem"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tamis", required=True, help="the release tamis CLI")
    p.add_argument("--data-dir", required=True, help="TPC-H tables (tamis gen tpch)")
    p.add_argument("--runs", type=int, default=9)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--tmp", default=None, help="where the cache directory goes")
    args = p.parse_args()
    cache = tempfile.mkdtemp(prefix="tamis-q17-", dir=args.tmp)
    cases = {
        "SELECT 1": ("SELECT 1", []),
        "the three columns read once": (FLOOR, []),
        "Q17, runtime filters on": (Q17, []),
        "Q17, runtime filters off": (Q17, ["--no-runtime-filters"]),
        "Q17 on, cache directory warm": (Q17, ["--cache-dir", cache]),
        "Q17 off, cache directory warm": (Q17, ["--cache-dir", cache, "--no-runtime-filters"]),
    }

    def run(sql: str, extra: list[str]) -> float:
        cmd = [args.tamis, "sql", "--tables", args.data_dir, "--threads", str(args.threads),
               sql, "--format", "csv", *extra]
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        return time.perf_counter() - start

    try:
        # A local page is written on its second miss: two untimed runs of each fill it.
        for _ in range(2):
            for name, (sql, extra) in cases.items():
                if "warm" in name:
                    run(sql, extra)
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, (sql, extra) in cases.items():
                times[name].append(run(sql, extra))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    med = {name: statistics.median(t) for name, t in times.items()}
    off = med["Q17, runtime filters off"]
    print(f"{args.threads} thread(s), a new process per run, medians of {args.runs}")
    print("| run | s | Q17 off (no directory) / this |")
    print("|---|---|---|")
    for name, t in med.items():
        print(f"| {name} | {t:.4f} | {off / t:.2f}x |")


if __name__ == "__main__":
    main()
