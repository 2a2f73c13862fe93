"""The floor under the Spark benchmark's shipmode query (`spark_bench.py`): what Spark spends
collecting its rows into Python, beside the query through each reader with a sink that takes
the rows without Python (`noop`).

Usage: python bench/spark_floor.py TAMIS_SPARK_JAR LINEITEM_PARQUET [--runs N]

Each reader is timed before the rows are cached (Spark would otherwise serve the same plan from
its cache), then `collect()` of the cached rows: the floor no scan can go below.
"""

import argparse
import os
import statistics
import time

WHERE = "l_shipmode = 'AIR' AND l_quantity < 5"


def median_s(run, runs: int) -> float:
    run()  # warm-up
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        run()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("jar")
    ap.add_argument("lineitem")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("tamis-spark-floor")
             .config("spark.driver.memory", "4g").config("spark.driver.host", "127.0.0.1")
             .config("spark.ui.enabled", "false").config("spark.jars", args.jar)
             .config("spark.sql.extensions", "io.tamis.spark.TamisExtensions")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        readers = {"spark": lambda: spark.read.parquet(args.lineitem),
                   "tamis": lambda: spark.read.format("tamis").load(args.lineitem)}
        for name, load in readers.items():
            collect = median_s(lambda: load().where(WHERE).collect(), args.runs)
            noop = median_s(lambda: load().where(WHERE).write.format("noop")
                            .mode("overwrite").save(), args.runs)
            print(f"{name}: collect {collect:.3f} s, noop sink {noop:.3f} s", flush=True)
        cached = spark.read.parquet(args.lineitem).where(WHERE).cache()
        rows = cached.count()
        floor = median_s(lambda: cached.collect(), args.runs)
        print(f"collect of the {rows} cached rows: {floor:.3f} s", flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
