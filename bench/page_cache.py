#!/usr/bin/env python3
"""The page cache's memory tier (issue 40) on needle and filter scans: tamis with the cache
off, tamis with a warm cache, DuckDB — in one process, one thread each, warm OS page cache.

    python bench/page_cache.py --data-dir data/bench --runs 7
    python bench/page_cache.py --data-dir data/bench --runs 7 --threads 2

Queries: the `selectivity` suite's 0.01 % and 0.1 % points (`k < 1`, `k < 10` on the
dictionary and PLAIN files, Snappy) and, with ``--sf``, the `tpch` suite's Q6 and
`l_partkey = 100000` on TPC-H `lineitem` (Zstandard). Each round runs DuckDB, tamis with the
cache off, then tamis with the cache on (turned on, two untimed scans to fill it — a page is
kept on its second read — one timed), in
that order; the cache is emptied whenever it is turned off, so "off" never sees a cached page.
Medians of ``--runs`` rounds after one warm-up round; each run's rows are checked against
DuckDB's count.
"""
import argparse
import os
import statistics
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=os.path.join(HERE, "..", "data", "bench"))
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--sf", type=float, default=None, help="also the tpch suite's Q6 and l_partkey = 100000")
    ap.add_argument("--tamis-cli", default=None, help="tamis CLI (generates TPC-H lineitem when missing)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cache", default="1GiB")
    args = ap.parse_args()

    import duckdb
    import tamis
    import suites

    ns = types.SimpleNamespace(rows=args.rows, sf=args.sf or 1.0, tamis_cli=args.tamis_cli)
    queries = [q for q in suites.selectivity(args.data_dir, ns)
               if q.name.split("(")[1].startswith(("0.01%", "0.1%"))]
    if args.sf:
        queries += [q for q in suites.tpch(args.data_dir, ns)
                    if q.name.startswith(("Q6", "l_partkey = 100000"))]

    con = duckdb.connect()
    con.execute(f"SET threads = {args.threads}")

    def run_duckdb(q):
        cols = ", ".join(f'"{c}"' for c in q.columns) if q.columns else "*"
        where = f" WHERE {q.where.sql()}" if q.where is not None else ""
        return con.sql(f"SELECT {cols} FROM read_parquet('{q.path}'){where}").to_arrow_table().num_rows

    def run_tamis(q):
        where = q.where.sql() if q.where is not None else None
        return tamis.scan(q.path, where=where, columns=q.columns, threads=args.threads).num_rows

    def timed(fn, q):
        start = time.perf_counter()
        rows = fn(q)
        return (time.perf_counter() - start) * 1e3, rows

    print(f"{args.threads} thread(s), warm OS page cache, medians of {args.runs} rounds "
          f"(cache budget {args.cache})\n")
    print("| query | DuckDB ms | tamis, cache off ms | tamis, warm cache ms | warm / off | warm / DuckDB |")
    print("|---|---|---|---|---|---|")
    for q in queries:
        times = {"duckdb": [], "off": [], "warm": []}
        for i in range(args.runs + 1):
            t, expected = timed(run_duckdb, q)
            times["duckdb"].append(t)
            tamis.set_page_cache(0)
            t, rows = timed(run_tamis, q)
            assert rows == expected, (q.name, "off", rows, expected)
            times["off"].append(t)
            tamis.set_page_cache(args.cache)
            run_tamis(q)  # fills the cache: a page is kept on its second read
            run_tamis(q)
            t, rows = timed(run_tamis, q)
            assert rows == expected, (q.name, "warm", rows, expected)
            times["warm"].append(t)
        med = {k: statistics.median(v[1:]) for k, v in times.items()}
        print(f"| {q.name} | {med['duckdb']:.1f} | {med['off']:.1f} | {med['warm']:.1f} | "
              f"{med['warm'] / med['off']:.2f}x | {med['warm'] / med['duckdb']:.2f}x |", flush=True)
    tamis.set_page_cache(0)


if __name__ == "__main__":
    main()
