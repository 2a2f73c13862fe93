#!/usr/bin/env python3
"""A point lookup on an unsorted key through the rows index, projecting payload columns, with
the page cache's memory tier warm (issue 40's target: >= 20x the unindexed, uncached scan).

    python bench/lookup_cache.py --tamis-cli target/release/tamis --data-dir data/tpch-sf1 --runs 7

`l_partkey = k` for --keys random keys of TPC-H `lineitem` (about 30 rows each, every one in
another page of each payload column) projecting `l_orderkey, l_extendedprice`, one thread, in
this process, through one `tamis.Dataset` (footer and page indexes kept, as repeated lookups
run), OS page cache warm. Modes, each timed over the same keys:

* unindexed, uncached: no sidecar, page cache off — the scan of the whole `l_partkey` column;
* rows index, uncached: the sidecar's row ids, each payload page read and decompressed;
* rows index, warm memory tier: the same, after two untimed passes over the keys filled the
  cache (a page is kept on its second read);
* DuckDB, for reference.

Rows are checked against DuckDB's for every key. The ratio is the medians' (per key, over
--runs rounds, then the median over keys).
"""
import argparse
import os
import random
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TAMIS_PAGE_CACHE", "0")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tamis-cli", required=True)
    ap.add_argument("--data-dir", default="data/tpch-sf1")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--keys", type=int, default=20)
    ap.add_argument("--cache", default="2GiB")
    args = ap.parse_args()
    import duckdb
    import tamis

    path = os.path.abspath(os.path.join(args.data_dir, "lineitem.parquet"))
    idx = os.path.join(os.path.dirname(path), "sidecar-rows-partkey")
    if not os.path.isdir(idx):
        os.makedirs(idx)
        subprocess.run([args.tamis_cli, "index", path, "--columns", "l_partkey", "--kind", "rows",
                        "--output", idx], check=True, stdout=subprocess.DEVNULL)
    rnd = random.Random(40)
    keys = [rnd.randrange(1, 200_001) for _ in range(args.keys)]
    cols = ["l_orderkey", "l_extendedprice"]
    con = duckdb.connect()
    con.execute("SET threads = 1")

    def duck(k):
        return con.sql(f"SELECT l_orderkey, l_extendedprice FROM read_parquet('{path}') "
                       f"WHERE l_partkey = {k}").to_arrow_table()

    want = {k: sorted(zip(*[c.to_pylist() for c in duck(k).columns])) for k in keys}
    ds = tamis.Dataset(path)

    def run(k, indexed):
        kw = {"index_dir": idx} if indexed else {"disable_pruning": ["sidecar_index"]}
        t = ds.scan(where=f"l_partkey = {k}", columns=cols, threads=1, **kw)
        got = sorted(zip(*[t.column(c).to_pylist() for c in cols]))
        assert [(o, float(p)) for o, p in got] == [(o, float(p)) for o, p in want[k]], k
        return t

    modes = {
        "unindexed, uncached": (False, 0),
        "rows index, uncached": (True, 0),
        "rows index, warm memory tier": (True, args.cache),
    }
    times = {m: {k: [] for k in keys} for m in list(modes) + ["DuckDB"]}
    for rnd_i in range(args.runs + 1):
        for m, (indexed, cache) in modes.items():
            tamis.set_page_cache(cache)
            if cache:
                for _ in range(2):  # fill (untimed): a page is kept on its second read
                    for k in keys:
                        run(k, indexed)
            for k in keys:
                t = time.perf_counter()
                run(k, indexed)
                if rnd_i:
                    times[m][k].append(time.perf_counter() - t)
        for k in keys:
            t = time.perf_counter()
            duck(k)
            if rnd_i:
                times["DuckDB"][k].append(time.perf_counter() - t)
    med = {m: statistics.median(statistics.median(v) for v in per.values())
           for m, per in times.items()}
    base = med["unindexed, uncached"]
    print(f"{len(keys)} keys, 1 thread, medians of {args.runs} rounds; "
          f"tamis {tamis.__version__ if hasattr(tamis, '__version__') else ''}")
    print()
    print("| mode | ms per lookup | speed-up over unindexed, uncached |")
    print("|---|---|---|")
    for m, v in med.items():
        print(f"| {m} | {v * 1e3:.2f} | {base / v:.1f}x |")


if __name__ == "__main__":
    sys.exit(main())
