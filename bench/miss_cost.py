"""What a miss of the page cache's memory tier costs a first scan (issue 40: at most 3 %).

Each run is a new `tamis explain --json` process, so every page is a miss: the tier off
(`TAMIS_PAGE_CACHE=0`) against on and empty (`2GiB`), the runs interleaved, one thread;
the time is the open and the scan (`time_metadata_ns + time_total_ns`); medians.

    python bench/miss_cost.py --tamis target/release/tamis --data-dir data/tpch-sf1 --runs 7
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess

QUERIES = {
    "Q6": ("l_shipdate >= date '1994-01-01' AND l_shipdate < date '1995-01-01' "
           "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24",
           "l_extendedprice,l_discount"),
    "l_partkey = 100000": ("l_partkey = 100000", "l_orderkey,l_extendedprice"),
    "Q1's filter and columns": ("l_shipdate <= date '1998-09-02'",
                                "l_returnflag,l_linestatus,l_quantity,l_extendedprice,"
                                "l_discount,l_tax"),
}


def run(cli: str, path: str, where: str, select: str, cache: str) -> float:
    """One scan in a new process; its open and scan in milliseconds."""
    out = subprocess.run(
        [cli, "explain", path, "--where", where, "--select", select, "--threads", "1", "--json"],
        env=dict(os.environ, TAMIS_PAGE_CACHE=cache), capture_output=True, text=True, check=True,
    ).stdout
    m = json.loads(out)
    return (m["time_total_ns"] + m["time_metadata_ns"]) / 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tamis", required=True, help="the release tamis CLI")
    p.add_argument("--data-dir", required=True, help="holds lineitem.parquet (TPC-H)")
    p.add_argument("--runs", type=int, default=7)
    args = p.parse_args()
    path = os.path.join(args.data_dir, "lineitem.parquet")
    print("| query | tier off ms | on, empty ms | on / off |")
    print("|---|---|---|---|")
    for name, (where, select) in QUERIES.items():
        off, on = [], []
        for _ in range(args.runs):
            off.append(run(args.tamis, path, where, select, "0"))
            on.append(run(args.tamis, path, where, select, "2GiB"))
        a, b = statistics.median(off), statistics.median(on)
        print(f"| {name} | {a:.1f} | {b:.1f} | {b / a:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
