#!/usr/bin/env python3
"""Benchmark suite ``spark``: the tamis data source against Spark's built-in Parquet reader
(vectorized, Parquet filter pushdown on), in Spark ``local[2]`` over TPC-H lineitem.

    python bench/spark_bench.py --data-dir data/tpch-sf1 --runs 5
    python bench/spark_bench.py --smoke --data-dir /tmp/sf001      # a few seconds, for CI

Per query and reader: wall time (median of ``--runs`` after one warm-up, with min–max) and
bytes read — Spark's reader from its stage input metrics (the status REST API on 127.0.0.1),
tamis from its own counters (``tamis.explain`` of the same scan: the Python data source path
reports no input metrics to Spark). Spark's Python data sources get no column pruning, so the
tamis tables name their columns (``.option("columns", …)``); Spark's reader prunes by itself.
Filter pushdown into tamis is on, with a DataFrame per query (see SPARK_REUSE in
``tamis/spark.py``). ``overhead`` rows time the same tamis scans outside Spark
(``tamis.scan``, one thread per partition's worth of work is not modelled: 2 threads), so
the Python data source path (Arrow batches crossing to the JVM) is measured by difference.
Results: ``bench/results/spark.json`` and a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent

Q6 = ("l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' "
      "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24")

#: name → (SQL over the view `lineitem` (and `part`), lineitem columns tamis reads,
#:         the scan's predicate for tamis's bytes-read count)
QUERIES = {
    "q6": (f"SELECT sum(l_extendedprice * l_discount) AS revenue FROM lineitem WHERE {Q6}",
           ["l_shipdate", "l_discount", "l_quantity", "l_extendedprice"], Q6),
    "q1": ((HERE / "tpch" / "queries" / "q01.sql").read_text(),
           ["l_returnflag", "l_linestatus", "l_quantity", "l_extendedprice", "l_discount",
            "l_tax", "l_shipdate"], "l_shipdate <= DATE '1998-09-02'"),
    "lookup_orderkey": ("SELECT * FROM lineitem WHERE l_orderkey = {orderkey}", None,
                        "l_orderkey = {orderkey}"),
    "lookup_partkey": ("SELECT * FROM lineitem WHERE l_partkey = {partkey}", None,
                       "l_partkey = {partkey}"),
    "shipmode": ("SELECT * FROM lineitem WHERE l_shipmode = 'AIR' AND l_quantity < 5", None,
                 "l_shipmode = 'AIR' AND l_quantity < 5"),
    "q17": ((HERE / "tpch" / "queries" / "q17.sql").read_text(),
            ["l_partkey", "l_quantity", "l_extendedprice"], None),
}


def session(threads: int):
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(f"local[{threads}]").appName("tamis-spark-bench")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.ui.port", "0")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "4g")
             .config("spark.sql.shuffle.partitions", str(threads))
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.parquet.filterPushdown", "true")
             .config("spark.sql.parquet.enableVectorizedReader", "true")
             .config("spark.sql.optimizer.runtime.bloomFilter.enabled", "true")
             .config("spark.sql.python.filterPushdown.enabled", "true")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    import tamis.spark

    tamis.spark.register(spark)
    return spark


def stage_input_bytes(spark) -> int:
    """Input bytes of all stages so far, from the status REST API (loopback)."""
    url = spark.sparkContext.uiWebUrl
    app = spark.sparkContext.applicationId
    with urllib.request.urlopen(f"{url}/api/v1/applications/{app}/stages", timeout=30) as r:
        stages = json.load(r)
    return sum(s.get("inputBytes", 0) for s in stages)


def views(spark, data: Path, reader: str, columns) -> None:
    for table in ("lineitem", "part"):
        path = str(data / f"{table}.parquet")
        if reader == "spark":
            df = spark.read.parquet(path)
        else:
            r = spark.read.format("tamis")
            if table == "lineitem" and columns:
                r = r.option("columns", ",".join(columns))
            df = r.load(path)
        df.createOrReplaceTempView(table)


def run_query(spark, data: Path, reader: str, sql: str, columns) -> tuple:
    views(spark, data, reader, columns)
    before = stage_input_bytes(spark) if reader == "spark" else 0
    t = time.perf_counter()
    result = spark.sql(sql).collect()
    elapsed = time.perf_counter() - t
    read = stage_input_bytes(spark) - before if reader == "spark" else None
    return elapsed, read, sorted(tuple(r) for r in result)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default="data/tpch-sf1")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--smoke", action="store_true", help="one run of each query, no warm-up")
    ap.add_argument("--results-dir", default=str(HERE / "results"))
    args = ap.parse_args()
    data = Path(args.data_dir)
    import pyarrow.parquet as pq
    import tamis

    keys = pq.read_table(data / "lineitem.parquet", columns=["l_orderkey", "l_partkey"])
    middle = keys.num_rows // 2
    params = {"orderkey": keys["l_orderkey"][middle].as_py(),
              "partkey": keys["l_partkey"][middle].as_py()}
    runs = 1 if args.smoke else args.runs
    spark = session(args.threads)
    rows = []
    try:
        for name, (sql, columns, predicate) in QUERIES.items():
            sql = sql.format(**params)
            results = {}
            for reader in ("spark", "tamis"):
                times, read, answer = [], None, None
                for i in range(runs + (0 if args.smoke else 1)):
                    elapsed, read_now, answer = run_query(spark, data, reader, sql, columns)
                    if i > 0 or args.smoke:
                        times.append(elapsed)
                        read = read_now if read_now is not None else read
                if reader == "tamis":
                    where = predicate.format(**params) if predicate else None
                    cols = columns if columns else None
                    funnel = tamis.explain(str(data / "lineitem.parquet"), where=where,
                                           columns=cols, threads=args.threads)
                    read = funnel["bytes_read"]
                    if name == "q17":
                        read *= 2  # two lineitem scans
                    t = time.perf_counter()
                    for _ in range(runs):
                        tamis.scan(str(data / "lineitem.parquet"), where=where, columns=cols,
                                   threads=args.threads)
                    alone = (time.perf_counter() - t) / runs
                results[reader] = (statistics.median(times), min(times), max(times), read, answer)
            if results["spark"][4] != results["tamis"][4]:
                raise SystemExit(f"{name}: tamis's answer differs from Spark's reader's")
            s, t = results["spark"], results["tamis"]
            rows.append({"query": name, "spark_s": s[0], "spark_range": [s[1], s[2]],
                         "spark_bytes": s[3], "tamis_s": t[0], "tamis_range": [t[1], t[2]],
                         "tamis_bytes": t[3], "ratio": t[0] / s[0], "tamis_alone_s": alone,
                         "threads": args.threads, "runs": runs})
            print(f"{name}: spark {s[0]:.3f}s tamis {t[0]:.3f}s ({t[0] / s[0]:.2f}x) "
                  f"bytes {s[3]} vs {t[3]}; tamis alone {alone:.3f}s", flush=True)
    finally:
        spark.stop()
    out = Path(args.results_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "spark.json").write_text(json.dumps(rows, indent=1))
    print()
    print("| query | Spark reader s (min–max) | tamis source s (min–max) | ratio | bytes Spark | "
          "bytes tamis | tamis.scan alone s |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['query']} | {r['spark_s']:.3f} ({r['spark_range'][0]:.3f}–{r['spark_range'][1]:.3f}) "
              f"| {r['tamis_s']:.3f} ({r['tamis_range'][0]:.3f}–{r['tamis_range'][1]:.3f}) "
              f"| {r['ratio']:.2f}x | {r['spark_bytes'] / 2**20:.1f} MiB "
              f"| {r['tamis_bytes'] / 2**20:.1f} MiB | {r['tamis_alone_s']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
