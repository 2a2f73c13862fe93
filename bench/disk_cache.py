#!/usr/bin/env python3
"""The page cache's disk tier (issue 40): a scan over the source file against the same scan
served from a warm cache directory (memory tier off), each in a new `tamis` process, with the
operating system's page cache dropped before every timed run when this process may (root:
`/proc/sys/vm/drop_caches`; otherwise says so and runs warm; `--keep-os-cache` runs warm on
purpose).

    python bench/disk_cache.py --tamis target/release/tamis --data-dir data/tpch-sf1 --runs 5

Queries on TPC-H `lineitem`: Q6, the needle `l_partkey = 100000` projecting two payload
columns, and `l_orderkey < K` at about 0.1 % of the rows projecting four. Times are the scan's
own (`explain`'s `time_total_ns`, medians of --runs); bytes read and cache hits from the same
runs. The cache directory is filled once per query by `tamis cache warm` with the same filter
and columns.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

Q6 = ("l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' "
      "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24")
QUERIES = {
    "q6": (Q6, "l_extendedprice,l_discount"),
    "l_partkey = 100000": ("l_partkey = 100000", "l_orderkey,l_extendedprice"),
    "l_orderkey < 6000 (0.1%)": ("l_orderkey < 6000",
                                 "l_orderkey,l_extendedprice,l_shipdate,l_comment"),
}


def drop_os_cache() -> bool:
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1\n")
        return True
    except OSError:
        return False


def explain(cli, path, where, select, threads, cache_dir=None):
    cmd = [cli, "explain", path, "--where", where, "--select", select, "--threads", str(threads),
           "--json"]
    if cache_dir:
        cmd += ["--cache-dir", cache_dir]
    env = dict(os.environ, TAMIS_PAGE_CACHE="0")
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tamis", required=True, help="the tamis CLI (release build)")
    ap.add_argument("--data-dir", default="data/tpch-sf1")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--keep-os-cache", action="store_true",
                    help="do not drop the OS page cache (both sides read from memory)")
    args = ap.parse_args()
    global drop_os_cache
    if args.keep_os_cache:
        drop_os_cache = lambda: False  # noqa: E731
    path = os.path.join(args.data_dir, "lineitem.parquet")
    cold = drop_os_cache()
    kept = "kept (--keep-os-cache)" if args.keep_os_cache else "NOT dropped (not root)"
    print(f"OS page cache {'dropped before each timed run' if cold else kept}; "
          f"{args.threads} thread(s); medians of {args.runs}")
    rows = []
    for name, (where, select) in QUERIES.items():
        cache = tempfile.mkdtemp(prefix="tamis-disk-cache-")
        try:
            subprocess.run([args.tamis, "cache", "warm", path, "--where", where, "--select", select,
                            "--cache-dir", cache], check=True, capture_output=True)
            held = sum(e.stat().st_size for e in os.scandir(cache) if e.name.endswith(".page"))
            result = {}
            for mode in ("source", "disk"):
                runs = []
                for _ in range(args.runs):
                    drop_os_cache()
                    runs.append(explain(args.tamis, path, where, select, args.threads,
                                        cache if mode == "disk" else None))
                t = statistics.median(r["time_total_ns"] for r in runs) / 1e9
                result[mode] = (t, runs[-1])
                assert runs[-1]["rows_selected"] == runs[0]["rows_selected"]
            (ts, s), (td, d) = result["source"], result["disk"]
            assert s["rows_selected"] == d["rows_selected"], name
            rows.append((name, ts, td, s["bytes_read"], d["bytes_read"], held,
                         d["pages_cache_hits"], d["pages_cache_misses"],
                         s["time_decompress_ns"] / 1e9))
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    print()
    print("| query | source file s | warm disk tier s | ratio | MiB read from the file, no cache "
          "| MiB read from the file, disk tier | MiB of cache entries | cache hits / misses "
          "| decompression s (no cache) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, ts, td, bs, bd, held, hits, misses, dec in rows:
        print(f"| {name} | {ts:.3f} | {td:.3f} | {td / ts:.2f}x | {bs / 2**20:.1f} | "
              f"{bd / 2**20:.2f} | {held / 2**20:.1f} | {hits} / {misses} | {dec:.3f} |")


if __name__ == "__main__":
    main()
