"""A Spark standalone cluster on 127.0.0.1 — one master, two workers of one core each, started
from the ``pyspark`` package's own ``spark-class`` — runs a tamis scan whose partitions spread
over both workers, and compares its rows with Spark's built-in Parquet reader. Every process is
stopped at the end, whatever happens. Run by ``test_spark.py::test_two_worker_cluster``:

    python spark_cluster_job.py DATASET WORKDIR

Prints ``workers used: N`` (the distinct worker directories the tasks ran in).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, log: Path, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"exited early:\n{log.read_text()[-3000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise RuntimeError(f"port {port} not open after {seconds} s:\n{log.read_text()[-3000:]}")


def main() -> int:
    dataset, workdir = sys.argv[1], Path(sys.argv[2])
    home = Path(pyspark.__file__).parent
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1",
               SPARK_LOCAL_HOSTNAME="localhost", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_NO_DAEMONIZE="1")
    spark_class = str(home / "bin" / "spark-class")
    master_port = free_port()
    procs: list = []

    def start(name: str, args: list, port: int) -> None:
        log = workdir / f"{name}.log"
        proc = subprocess.Popen([spark_class, *args], env=env, stdout=log.open("w"),
                                stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(proc)
        wait_for_port(port, proc, log)

    try:
        start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                         "--port", str(master_port), "--webui-port", str(free_port())],
              master_port)
        url = f"spark://127.0.0.1:{master_port}"
        for i in (1, 2):
            port = free_port()
            wdir = workdir / f"worker{i}"
            wdir.mkdir()
            start(f"worker{i}", ["org.apache.spark.deploy.worker.Worker", url, "--host",
                                 "127.0.0.1", "--port", str(port), "--webui-port",
                                 str(free_port()), "--cores", "1", "--memory", "1g",
                                 "--work-dir", str(wdir)], port)

        from pyspark.sql import SparkSession

        import tamis.spark

        os.environ.update(SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
        builder = SparkSession.builder
        if os.environ.get("TAMIS_SPARK_JAR"):
            # The JVM connector: the executors fetch the jar from the driver.
            builder = builder.config(map=tamis.spark.spark_conf())
        spark = (builder.master(url).appName("tamis-cluster-test")
                 .config("spark.driver.host", "127.0.0.1")
                 .config("spark.driver.bindAddress", "127.0.0.1")
                 .config("spark.ui.enabled", "false")
                 .config("spark.executor.memory", "768m")
                 .config("spark.cores.max", "2")
                 .config("spark.sql.shuffle.partitions", "2")
                 .config("spark.sql.session.timeZone", "UTC")
                 .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
                 .config("spark.executorEnv.SPARK_LOCAL_IP", "127.0.0.1")
                 .getOrCreate())
        try:
            # Both executors registered before the job, so its tasks can go to both.
            deadline = time.monotonic() + 120
            while spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() < 3:
                if time.monotonic() > deadline:
                    raise RuntimeError("the two executors did not register in 120 s")
                time.sleep(0.5)
            tamis.spark.register(spark, pushdown=True)
            df = (spark.read.format("tamis").option("maxPartitionBytes", "1")
                  .load(dataset).where("i32 < 10 AND s <> 'AIR'"))
            parts = df.rdd.getNumPartitions()
            # Each task reports the worker directory its executor runs in, beside its rows.
            seen = df.rdd.mapPartitions(
                lambda it: [(os.getcwd().split("/worker")[1].split("/")[0], sum(1 for _ in it))]
            ).collect()
            workers = {w for w, _ in seen}
            ours = sorted(tuple(r) for r in df.select("id", "i32", "s").collect())
            theirs = sorted(tuple(r) for r in spark.read.parquet(dataset)
                            .where("i32 < 10 AND s <> 'AIR'").select("id", "i32", "s").collect())
            assert ours == theirs, f"{len(ours)} rows, Spark's reader {len(theirs)}"
            assert sum(n for _, n in seen) == len(ours)
            print(f"partitions: {parts}; rows: {len(ours)}; per task: {seen}")
            print(f"workers used: {len(workers)}")
        finally:
            spark.stop()
        return 0
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


if __name__ == "__main__":
    sys.exit(main())
