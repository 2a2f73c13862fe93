#!/usr/bin/env python3
"""Benchmark suite ``spark``: the tamis data source against Spark's built-in Parquet reader
(vectorized, Parquet filter pushdown on, runtime Bloom filter joins on), in Spark
``local[2]`` over TPC-H SF1 lineitem — the file, and the dataset partitioned by ship year.

    python bench/spark_bench.py --data-dir data/tpch-sf1 --runs 5
    python bench/spark_bench.py --smoke --data-dir /tmp/sf001 --datasets file   # CI

Per query and reader: wall time of the query (median of ``--runs`` after one warm-up, with
min–max), the answers checked equal; and bytes read. Spark's bytes are Hadoop's file-system
counters in one more run with Parquet's vectored reads off (they bypass the counters: Spark's
own input metrics show 2.6 MB for Q6's 40 MB); tamis's are its own counters for the same scans
(``tamis.explain``: the Python data source path reports no input metrics to Spark). Spark
gives Python data sources no column pruning, so the tamis tables name their columns
(``.option("columns", …)``); Spark's reader prunes by itself. Filter pushdown into tamis is
on, with a DataFrame per query (see SPARK_REUSE in ``tamis/spark.py``). ``tamis.scan alone``
is the same scans outside Spark (same thread count), so the Python data source path — Arrow
batches crossing to the JVM — is measured by difference. Results: ``spark.json`` in
``--results-dir`` and a Markdown table on stdout.

``--jar PATH`` measures the JVM connector (``crates/tamis-spark``) instead of the Python
source: the session starts with the jar, ``format("tamis")`` is the connector, Spark prunes
columns by itself (no ``columns`` option) and pushes filters and runtime filters through the
V2 interfaces. The two sources cannot share one JVM (one short name), so each is its own run
against Spark's reader in that run; results go to ``spark-jar.json``.
"""

from __future__ import annotations

import argparse
import json
import os

# Peers decompress every page of every query: tamis's page cache (on by default in a process
# that can hit it) is off here unless TAMIS_PAGE_CACHE asks for it (bench/page_cache.py and
# bench/disk_cache.py measure the cache).
os.environ.setdefault("TAMIS_PAGE_CACHE", "0")
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

Q6 = ("l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' "
      "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24")

#: name → (SQL over the views `lineitem` and `part`, and per table what tamis reads of it:
#: (columns given to the source or None for all, the predicate Spark pushes, scans)). The
#: last two count tamis's bytes (`tamis.explain` of the same scan).
QUERIES = {
    "q6": (f"SELECT sum(l_extendedprice * l_discount) AS revenue FROM lineitem WHERE {Q6}",
           {"lineitem": (["l_shipdate", "l_discount", "l_quantity", "l_extendedprice"], Q6, 1)}),
    "q1": ((HERE / "tpch" / "queries" / "q01.sql").read_text(),
           {"lineitem": (["l_returnflag", "l_linestatus", "l_quantity", "l_extendedprice",
                          "l_discount", "l_tax", "l_shipdate"],
                         "l_shipdate <= DATE '1998-09-02'", 1)}),
    "lookup_orderkey": ("SELECT * FROM lineitem WHERE l_orderkey = {orderkey}",
                        {"lineitem": (None, "l_orderkey = {orderkey}", 1)}),
    "lookup_partkey": ("SELECT * FROM lineitem WHERE l_partkey = {partkey}",
                       {"lineitem": (None, "l_partkey = {partkey}", 1)}),
    "shipmode": ("SELECT * FROM lineitem WHERE l_shipmode = 'AIR' AND l_quantity < 5",
                 {"lineitem": (None, "l_shipmode = 'AIR' AND l_quantity < 5", 1)}),
    "q17": ((HERE / "tpch" / "queries" / "q17.sql").read_text(),
            {"lineitem": (["l_partkey", "l_quantity", "l_extendedprice"], None, 2),
             "part": (["p_partkey", "p_brand", "p_container"],
                      "p_brand = 'Brand#23' AND p_container = 'MED BOX'", 1)}),
}


#: The connector's jar (``--jar``), or None for the Python data source.
JAR = None


def session(threads: int):
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    if JAR:
        builder = (builder.config("spark.jars", JAR)
                   .config("spark.sql.extensions", "io.tamis.spark.TamisExtensions"))
    spark = (builder.master(f"local[{threads}]").appName("tamis-spark-bench")
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


def hadoop_bytes_read(spark) -> int:
    """Bytes read through Hadoop file systems in this JVM (local mode: the executors too)."""
    stats = spark.sparkContext._jvm.org.apache.hadoop.fs.FileSystem.getAllStatistics()
    return sum(stats.get(i).getBytesRead() for i in range(stats.size()))


def vectored_io(spark, on: bool) -> None:
    # Parquet's vectored reads bypass Hadoop's byte counters (Spark's input metrics show
    # 2.6 MB for Q6's 40 MB with them): bytes are counted in a run without them.
    spark.sparkContext._jsc.hadoopConfiguration().set(
        "parquet.hadoop.vectored.io.enabled", "true" if on else "false")


def connector_bytes_read(spark, paths: dict, sql: str, tables: dict) -> int:
    """Bytes the connector's tasks read in one run of `sql` (their `bytesRead` metrics, runtime
    filters applied; AQE off so that the plan holds every scan)."""
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        views(spark, paths, "tamis", tables)
        df = spark.sql(sql)
        df.collect()
        plan = df._jdf.queryExecution().executedPlan()
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")

    def walk(node) -> int:
        total = 0
        if node.nodeName().startswith("BatchScan"):
            metric = node.metrics().get("bytesRead")
            total += metric.get().value() if metric.isDefined() else 0
        for children in (node.children(), node.subqueries()):
            for i in range(children.size()):
                total += walk(children.apply(i))
        return total

    return walk(plan)


def views(spark, paths: dict, reader: str, tables: dict) -> None:
    for table, path in paths.items():
        if reader == "spark":
            df = spark.read.parquet(path)
        else:
            r = spark.read.format("tamis")
            columns = tables.get(table, (None,))[0]
            if columns and not JAR:
                r = r.option("columns", ",".join(columns))
            df = r.load(path)
        df.createOrReplaceTempView(table)


def run_query(spark, paths: dict, reader: str, sql: str, tables: dict) -> tuple:
    views(spark, paths, reader, tables)
    t = time.perf_counter()
    result = spark.sql(sql).collect()
    return time.perf_counter() - t, sorted(tuple(r) for r in result)


#: The crossing: whole columns of lineitem through each reader into a trivial aggregate, by
#: type — what the Python data source path costs per value beside Spark's own reader.
CROSSING = {
    "4 decimal(15,2)": (["l_quantity", "l_extendedprice", "l_discount", "l_tax"],
                        "sum(l_quantity), sum(l_extendedprice), sum(l_discount), sum(l_tax)"),
    "4 bigint/int": (["l_orderkey", "l_partkey", "l_suppkey", "l_linenumber"],
                     "sum(l_orderkey), sum(l_partkey), sum(l_suppkey), sum(l_linenumber)"),
    "2 string": (["l_returnflag", "l_linestatus"],
                 "count(DISTINCT l_returnflag, l_linestatus)"),
    "1 bigint, count only": (["l_orderkey"], "count(*)"),
}


def crossing(spark, lineitem: str, runs: int) -> list:
    out = []
    for name, (columns, aggregate) in CROSSING.items():
        sql = f"SELECT {aggregate} FROM lineitem"
        tables = {"lineitem": (columns, None, 1)}
        times = {}
        for reader in ("spark", "tamis"):
            samples = [run_query(spark, {"lineitem": lineitem}, reader, sql, tables)[0]
                       for _ in range(runs + 1)][1:]
            times[reader] = statistics.median(samples)
        out.append({"columns": name, "spark_s": times["spark"], "tamis_s": times["tamis"]})
        print(f"crossing {name}: spark {times['spark']:.3f}s tamis {times['tamis']:.3f}s",
              flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default="data/tpch-sf1")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2, help="Spark local[N] (default 2)")
    ap.add_argument("--datasets", default="file,partitioned",
                    help="file: lineitem.parquet; partitioned: lineitem by ship year (hive)")
    ap.add_argument("--smoke", action="store_true", help="one run of each query, no warm-up")
    ap.add_argument("--crossing", action="store_true",
                    help="only the crossing: whole columns by type into a trivial aggregate")
    ap.add_argument("--results-dir", default=str(HERE / "results"))
    ap.add_argument("--jar", help="the JVM connector's jar: measure it instead of the Python source")
    ap.add_argument("--queries", help="comma-separated subset of the queries")
    args = ap.parse_args()
    global JAR
    JAR = args.jar
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
    if args.crossing:
        try:
            result = crossing(spark, str(data / "lineitem.parquet"), runs)
        finally:
            spark.stop()
        print()
        print("| columns (6 Mi rows at SF1) | Spark reader s | tamis source s | ratio |")
        print("|---|---|---|---|")
        for r in result:
            print(f"| {r['columns']} | {r['spark_s']:.3f} | {r['tamis_s']:.3f} "
                  f"| {r['tamis_s'] / r['spark_s']:.2f}x |")
        return 0
    try:
        for dataset in args.datasets.split(","):
            if dataset == "partitioned":
                sys.path.insert(0, str(HERE))
                from remote import partitioned

                lineitem = partitioned(str(data / "lineitem.parquet"))
            else:
                lineitem = str(data / "lineitem.parquet")
            paths = {"lineitem": lineitem, "part": str(data / "part.parquet")}
            for name, (sql, tables) in QUERIES.items():
                if args.queries and name not in args.queries.split(","):
                    continue
                sql = sql.format(**params)
                results = {}
                for reader in ("spark", "tamis"):
                    times, answer = [], None
                    for i in range(runs + (0 if args.smoke else 1)):
                        elapsed, answer = run_query(spark, paths, reader, sql, tables)
                        if i > 0 or args.smoke:
                            times.append(elapsed)
                    if reader == "spark":
                        vectored_io(spark, False)
                        before = hadoop_bytes_read(spark)
                        run_query(spark, paths, reader, sql, tables)
                        read = hadoop_bytes_read(spark) - before
                        vectored_io(spark, True)
                    else:
                        read, alone = 0, 0.0
                        if JAR:
                            read = connector_bytes_read(spark, paths, sql, tables)
                        for table, (columns, predicate, scans) in tables.items():
                            where = predicate.format(**params) if predicate else None
                            funnel = tamis.explain(paths[table], where=where, columns=columns,
                                                   threads=args.threads)
                            if not JAR:
                                read += funnel["bytes_read"] * scans
                            t = time.perf_counter()
                            for _ in range(runs):
                                tamis.scan(paths[table], where=where, columns=columns,
                                           threads=args.threads)
                            alone += scans * (time.perf_counter() - t) / runs
                    results[reader] = (statistics.median(times), min(times), max(times), read,
                                       answer)
                off = None
                if JAR and name == "q17":
                    # The connector with runtime filters off (Spark's and tamis's rule).
                    key = "spark.sql.optimizer.dynamicPartitionPruning.enabled"
                    spark.conf.set(key, "false")
                    try:
                        samples = [run_query(spark, paths, "tamis", sql, tables)
                                   for _ in range(runs + (0 if args.smoke else 1))]
                    finally:
                        spark.conf.unset(key)
                    if samples[-1][1] != results["tamis"][4]:
                        raise SystemExit(f"{dataset} {name}: runtime filters change the answer")
                    off = statistics.median(
                        [e for e, _ in (samples if args.smoke else samples[1:])])
                if results["spark"][4] != results["tamis"][4]:
                    raise SystemExit(f"{dataset} {name}: tamis's answer differs from Spark's")
                s, t = results["spark"], results["tamis"]
                rows.append({"dataset": dataset, "query": name, "spark_s": s[0],
                             "spark_range": [s[1], s[2]], "spark_bytes": s[3], "tamis_s": t[0],
                             "tamis_range": [t[1], t[2]], "tamis_bytes": t[3],
                             "ratio": t[0] / s[0], "tamis_alone_s": alone,
                             "tamis_runtime_filters_off_s": off,
                             "threads": args.threads, "runs": runs})
                print(f"{dataset} {name}: spark {s[0]:.3f}s tamis {t[0]:.3f}s "
                      f"({t[0] / s[0]:.2f}x) bytes {s[3]} vs {t[3]}; tamis alone {alone:.3f}s"
                      + (f"; runtime filters off {off:.3f}s ({off / t[0]:.2f}x slower)"
                         if off else ""), flush=True)
    finally:
        spark.stop()
    out = Path(args.results_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / ("spark-jar.json" if JAR else "spark.json")).write_text(json.dumps(rows, indent=1))
    print()
    print("| dataset | query | Spark reader s (min–max) | tamis source s (min–max) | ratio | "
          "MiB read, Spark | MiB read, tamis | tamis.scan alone s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['dataset']} | {r['query']} "
              f"| {r['spark_s']:.3f} ({r['spark_range'][0]:.3f}–{r['spark_range'][1]:.3f}) "
              f"| {r['tamis_s']:.3f} ({r['tamis_range'][0]:.3f}–{r['tamis_range'][1]:.3f}) "
              f"| {r['ratio']:.2f}x | {r['spark_bytes'] / 2**20:.1f} "
              f"| {r['tamis_bytes'] / 2**20:.1f} | {r['tamis_alone_s']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
