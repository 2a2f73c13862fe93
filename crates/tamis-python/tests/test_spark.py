"""The Spark data source (``tamis.spark``) against Spark's own Parquet reader, in ``local[2]``.

Run twice: as is, these test the Python data source; with ``TAMIS_SPARK_JAR`` set to the
connector's jar (``crates/tamis-spark/build-jar.sh``; CI runs this module again so, in its own
process, since a JVM's classpath is fixed when it starts) they test the JVM connector, which
``format("tamis")`` then resolves to.

Every Spark process binds to 127.0.0.1. The session is started once for this module and stopped
after it; the two-worker cluster test runs in a child process with its own session
(``spark_cluster_job.py``), bounded in time. Without ``pyspark`` these tests are skipped,
unless ``TAMIS_REQUIRE_SPARK=1`` (CI sets it) makes that a failure.
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
import os
import random
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

if os.environ.get("TAMIS_REQUIRE_SPARK") == "1":
    import pyspark  # noqa: F401  (fail, do not skip)
pytest.importorskip("pyspark")

from pyspark.sql import SparkSession  # noqa: E402

import tamis  # noqa: E402
import tamis.spark  # noqa: E402

HERE = Path(__file__).resolve().parent
#: The JVM connector's jar, when these tests run against it.
JAR = os.environ.get("TAMIS_SPARK_JAR")
QUERIES = HERE.parents[2] / "bench" / "tpch" / "queries"


def loopback_env() -> None:
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    os.environ["SPARK_LOCAL_HOSTNAME"] = "localhost"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable


@pytest.fixture(scope="module")
def spark():
    loopback_env()
    builder = SparkSession.builder
    if JAR:
        builder = builder.config(map=tamis.spark.spark_conf())
    session = (builder.master("local[2]").appName("tamis-test")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.python.filterPushdown.enabled", "true")
               # The reference reader without its Parquet filter pushdown: with it, Spark 4.3
               # returns no row for `x = NaN` (row-group statistics leave NaN out).
               .config("spark.sql.parquet.filterPushdown", "false")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    tamis.spark.register(session)
    if JAR:
        assert tamis.spark._connector_loaded(session)
    try:
        yield session
    finally:
        session.stop()


def rows(df) -> list:
    """Rows as sortable tuples (None and NaN ordered, so two results compare exactly)."""
    def key(v):
        if v is None:
            return (0, "")
        if isinstance(v, float) and v != v:
            return (2, "")
        return (1, repr(v) if isinstance(v, (list, dict, bytes, bytearray)) else v)
    out = [tuple(r) for r in df.collect()]
    return sorted(out, key=lambda r: [key(v) for v in r])


def same(a: list, b: list) -> bool:
    def norm(v):
        if isinstance(v, float) and v != v:
            return "NaN"
        return v
    return [tuple(norm(v) for v in r) for r in a] == [tuple(norm(v) for v in r) for r in b]


# --------------------------------------------------------------------------------------------
# A dataset with every type the source maps, nulls, NaN, -0.0 and empty strings, written as
# several files of several row groups, and a hive-partitioned copy.


def typed_table(n: int, seed: int) -> pa.Table:
    rng = random.Random(seed)

    def maybe(v):
        return None if rng.random() < 0.1 else v

    floats = [0.0, -0.0, 1.5, -2.25, float("nan"), float("inf"), 1e300, 3.0]
    words = ["", "AIR", "MAIL", "SHIP", "a_b", "50%", "Ünïcode", "TRUCK"]
    base = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "b": pa.array([maybe(rng.random() < 0.5) for _ in range(n)], pa.bool_()),
        "i8": pa.array([maybe(rng.randint(-128, 127)) for _ in range(n)], pa.int8()),
        "i16": pa.array([maybe(rng.randint(-300, 300)) for _ in range(n)], pa.int16()),
        "i32": pa.array([maybe(rng.randint(-50, 50)) for _ in range(n)], pa.int32()),
        "u32": pa.array([maybe(rng.randint(0, 2**32 - 1)) for _ in range(n)], pa.uint32()),
        "f32": pa.array([maybe(rng.choice(floats[:5] + [0.5])) for _ in range(n)], pa.float32()),
        "f64": pa.array([maybe(rng.choice(floats)) for _ in range(n)], pa.float64()),
        "dec": pa.array([maybe(decimal.Decimal(rng.randint(-9999, 9999)) / 100) for _ in range(n)],
                        pa.decimal128(9, 2)),
        "dec38": pa.array([maybe(decimal.Decimal(rng.randint(-10**20, 10**20)) / 10**6)
                           for _ in range(n)], pa.decimal128(38, 6)),
        "s": pa.array([maybe(rng.choice(words)) for _ in range(n)], pa.string()),
        "bin": pa.array([maybe(rng.choice(words).encode()) for _ in range(n)], pa.binary()),
        "d": pa.array([maybe(datetime.date(2020, 1, 1) + datetime.timedelta(days=rng.randint(0, 60)))
                       for _ in range(n)], pa.date32()),
        "ts": pa.array([maybe(base + datetime.timedelta(minutes=rng.randint(0, 5000)))
                        for _ in range(n)], pa.timestamp("us", tz="UTC")),
        "ntz": pa.array([maybe(datetime.datetime(2021, 6, 1) + datetime.timedelta(seconds=rng.randint(0, 10**6)))
                         for _ in range(n)], pa.timestamp("ms")),
        "li": pa.array([maybe([rng.randint(0, 9) for _ in range(rng.randint(0, 3))]) for _ in range(n)],
                       pa.list_(pa.int32())),
    })


@pytest.fixture(scope="module")
def typed(tmp_path_factory):
    root = tmp_path_factory.mktemp("typed")
    for i in range(3):
        pq.write_table(typed_table(700, i), root / f"part-{i}.parquet", row_group_size=200,
                       data_page_size=512, write_statistics=True)
    return str(root)


@pytest.fixture(scope="module")
def hive(tmp_path_factory):
    root = tmp_path_factory.mktemp("hive")
    t = typed_table(1500, 7).select(["id", "i32", "s", "d"])
    for year in (2020, 2021):
        for region in ("EU", "US"):
            d = root / f"year={year}" / f"region={region}"
            d.mkdir(parents=True)
            pq.write_table(t.slice((year - 2020) * 700 + (region == "US") * 300, 350),
                           d / "data.parquet", row_group_size=100)
    return str(root)


def test_schema_is_spark_readers(spark, typed):
    ours = spark.read.format("tamis").load(typed)
    theirs = spark.read.parquet(typed)
    assert [(f.name, f.dataType) for f in ours.schema.fields] == \
        [(f.name, f.dataType) for f in theirs.schema.fields]
    assert same(rows(ours), rows(theirs))


def test_plain_encoded_columns_read_as_sparks_reader(spark, tmp_path):
    # Every column PLAIN (strings as offsets and bytes, not dictionary codes), nulls in each:
    # the connector's column vectors read both layouts from the buffers' addresses.
    path = tmp_path / "plain.parquet"
    pq.write_table(typed_table(900, 11), path, use_dictionary=False, row_group_size=300,
                   data_page_size=512)
    # A DataFrame per query: see SPARK_REUSE in tamis/spark.py (the Python source).
    def ours():
        return spark.read.format("tamis").load(str(path))

    theirs = spark.read.parquet(str(path))
    assert same(rows(ours()), rows(theirs))
    where = "i32 > 10 OR s = 'AIR'"
    assert same(rows(ours().where(where)), rows(theirs.where(where)))
    # Whole-stage code reads the vectors through the typed getters.
    summed = ["sum(i8)", "sum(i16)", "sum(i32)", "sum(u32)", "sum(dec)", "max(s)", "min(bin)",
              "max(d)", "min(ts)", "count(ntz)", "sum(f32)", "sum(f64)"]
    assert same(rows(ours().selectExpr(*summed)), rows(theirs.selectExpr(*summed)))


def test_dictionary_strings_with_more_entries_than_their_batch(spark, tmp_path):
    # A batch of fewer rows than its dictionary has entries reads them in place; one with more
    # makes each entry's string once. Both, with nulls, against Spark's reader.
    path = tmp_path / "dict.parquet"
    n = 2000
    pq.write_table(pa.table({"id": pa.array(range(n), pa.int64()),
                             "u": pa.array([f"value-{i:05d}" if i % 9 else None
                                            for i in range(n)])}),
                   path, row_group_size=n)
    # A DataFrame per query: see SPARK_REUSE in tamis/spark.py (the Python source).
    def ours():
        return spark.read.format("tamis").load(str(path))

    theirs = spark.read.parquet(str(path))
    for where in ("id < 50", "id >= 0", "u > 'value-01500'"):
        assert same(rows(ours().where(where)), rows(theirs.where(where))), where
    assert same(rows(ours().groupBy("u").count()), rows(theirs.groupBy("u").count()))


def test_unsigned_64_bit_is_a_decimal_as_in_spark(spark, tmp_path):
    path = tmp_path / "u64.parquet"
    pq.write_table(pa.table({"u": pa.array([0, 2**64 - 1, None, 5], pa.uint64())}), path)
    ours = spark.read.format("tamis").load(str(path))
    theirs = spark.read.parquet(str(path))
    assert ours.schema == theirs.schema
    assert rows(ours) == rows(theirs)


def test_nanosecond_timestamps_truncate_to_microseconds(spark, tmp_path):
    path = tmp_path / "ns.parquet"
    values = [1_600_000_000_123_456_789, None, -1_999]
    pq.write_table(pa.table({"t": pa.array(values, pa.timestamp("ns", tz="UTC"))}), path)
    got = [r.t for r in spark.read.format("tamis").load(str(path)).collect()]
    # Spark hands back naive datetimes in the session time zone (UTC here).
    expected = pa.array(values, pa.timestamp("ns")).cast(
        pa.timestamp("us"), safe=False).to_pylist()
    assert got == expected


PREDICATES = [
    "i32 < 0", "i32 = 7 OR i32 IS NULL", "i8 >= 100", "i16 BETWEEN -10 AND 10",
    "u32 > 2000000000", "b", "NOT b", "b IS NULL",
    "f64 > 1.0", "f64 = 0.0", "f64 = -0.0", "f64 < 0", "f64 = double('NaN')",
    "f64 <> double('NaN')", "f64 >= double('inf')", "f32 = 0.5", "f32 < 0", "isnan(f32)",
    "dec > 12.5", "dec = -1.5", "dec IN (1.00, 2.5, -3.25)", "dec38 < 0",
    "s = ''", "s = 'AIR'", "s IN ('MAIL', 'SHIP', '')", "s NOT IN ('MAIL', 'SHIP')",
    "s LIKE 'a\\\\_%'", "s LIKE '50%%'", "s LIKE '%IL'", "s LIKE '%ni%'", "s > 'M'",
    "s <=> NULL", "NOT (s <=> 'AIR')", "s IN ('AIR', NULL)", "NOT (s IN ('AIR', NULL))",
    "d >= DATE '2020-02-01'", "d = DATE '2020-01-15'",
    "ts < TIMESTAMP '2020-01-02 12:00:00'", "ts >= TIMESTAMP '2020-01-03 00:00:00+00:00'",
    "ntz > TIMESTAMP_NTZ '2021-06-05 00:00:00'",
    "bin = X'414952'", "size(li) > 1", "i32 = i16", "id % 7 = 3",
]


@pytest.mark.parametrize("pushdown", [True, False])
def test_predicates_match_spark_reader(spark, typed, pushdown):
    tamis.spark.register(spark, pushdown=pushdown)
    try:
        theirs = spark.read.parquet(typed)
        rng = random.Random(42)
        combos = [[p] for p in PREDICATES]
        combos += [rng.sample(PREDICATES, 2) for _ in range(12)]
        for combo in combos:
            where = " AND ".join(f"({p})" for p in combo)
            # A DataFrame per query: see SPARK_REUSE in tamis/spark.py.
            ours = spark.read.format("tamis").option("pushdown", str(pushdown).lower()).load(typed) \
                if JAR else spark.read.format("tamis").load(typed)
            a, b = rows(ours.where(where)), rows(theirs.where(where))
            assert same(a, b), f"{where}: {len(a)} rows, Spark's reader {len(b)}"
    finally:
        tamis.spark.register(spark)


def test_supported_filters_are_taken_and_the_rest_returned(spark, typed):
    def plan(where):
        df = spark.read.format("tamis").load(typed)
        return df.where(where)._jdf.queryExecution().executedPlan().toString()

    taken = plan("i32 < 5 AND s LIKE 'AI%' AND d IN (DATE '2020-01-02') AND dec > 1.5")
    if JAR:
        # All four taken; the two Spark's dynamic pruning counts as selective are also left
        # above the scan (it looks for them there), the ranges are not.
        assert "i32 < 5, s LIKE 'AI%' ESCAPE '\\', d = 18263, dec > 1.50]" in taken, taken
        spark_filters = "\n".join(line for line in taken.splitlines() if "Filter (" in line)
        assert "i32" not in spark_filters and "dec" not in spark_filters, taken
    else:
        assert "Filter (" not in taken, taken
    returned = plan("i32 < i16 AND s = 'AIR'")
    spark_filters = "\n".join(line for line in returned.splitlines() if "Filter (" in line)
    assert "(i32" in spark_filters, returned
    if not JAR:
        assert "AIR" not in spark_filters, returned
    else:
        # EXPLAIN names what the connector took and what it left to Spark.
        assert "PushedFilters: [" in returned and "s = 'AIR'" in returned, returned
        assert "LeftToSpark: [i32 < CAST(i16 AS integer)]" in returned, returned


def test_filters_reduce_what_is_read(spark, typed, tmp_path):
    """A pushed filter prunes row groups: only the first file's first row group holds id < 10."""
    df = spark.read.format("tamis").load(typed)
    # Three files, each with ids 0..699.
    assert sorted(r.id for r in df.where("id < 10").select("id").collect()) == \
        sorted(list(range(10)) * 3)
    funnel = tamis.explain(typed, where="id < 10", columns=["id"])
    assert funnel["row_groups_pruned_statistics"] > 0


def test_row_groups_pruned_on_the_driver_get_no_task(spark, typed):
    """Each file's ids are 0..699 in row groups of 200: `id < 150` leaves the first group of
    each file, `id < 0` none (Spark then runs one empty partition)."""
    def load():
        return (spark.read.format("tamis").option("maxPartitionBytes", "1")
                .option("minPartitions", "1").load(typed))

    some = load().where("id < 150")
    assert some.rdd.getNumPartitions() == 3
    assert sorted(r.id for r in some.select("id").collect()) == sorted(list(range(150)) * 3)
    none = load().where("id < 0")
    # Spark gives a Python source one empty partition; a V2 scan may have none.
    assert none.rdd.getNumPartitions() == (0 if JAR else 1)
    assert none.collect() == []


def test_partitions_are_files_by_row_group_ranges(spark, typed):
    small = (spark.read.format("tamis").option("maxPartitionBytes", "1")
             .option("minPartitions", "1").load(typed))
    # 3 files of 4 row groups (200 rows each; 700 rows per file): one partition per row group.
    groups = sum(pq.ParquetFile(p).metadata.num_row_groups
                 for p in sorted(Path(typed).glob("*.parquet")))
    assert small.rdd.getNumPartitions() == groups
    assert same(rows(small), rows(spark.read.format("tamis").load(typed)))
    one = (spark.read.format("tamis").option("maxPartitionBytes", str(1 << 30))
           .option("minPartitions", "1").load(typed))
    assert one.rdd.getNumPartitions() == 1
    two = spark.read.format("tamis").option("minPartitions", "2").load(typed)
    assert two.rdd.getNumPartitions() == 2


def test_column_option_and_user_schema_read_fewer_columns(spark, typed):
    df = spark.read.format("tamis").option("columns", "s, id").load(typed)
    assert df.columns == ["s", "id"]
    assert rows(df.where("s = 'AIR'")) == rows(
        spark.read.parquet(typed).where("s = 'AIR'").select("s", "id"))
    user = spark.read.format("tamis").schema("id BIGINT, d DATE").load(typed)
    assert rows(user.where("d > DATE '2020-02-20'")) == rows(
        spark.read.parquet(typed).where("d > DATE '2020-02-20'").select("id", "d"))
    with pytest.raises(Exception, match="nope"):
        spark.read.format("tamis").option("columns", "id,nope").load(typed).collect()
    with pytest.raises(Exception, match="type string; the dataset has bigint"):
        spark.read.format("tamis").schema("id STRING").load(typed).collect()


def test_hive_partitions(spark, hive):
    theirs = spark.read.parquet(hive)
    cols = theirs.columns
    for where in ["year = 2021", "region = 'EU' AND i32 > 10", "year = 2020 OR s = 'AIR'",
                  "region IN ('US') AND d < DATE '2020-01-20'", "region IS NULL"]:
        ours = spark.read.format("tamis").option("maxPartitionBytes", "1").load(hive)
        assert sorted(ours.columns) == sorted(cols)
        assert rows(ours.where(where).select(*cols)) == rows(theirs.where(where)), where


def test_an_indexed_directory_reads_in_spark(spark, tmp_path):
    """Sidecars are hidden files: Spark's own reader reads an indexed hive directory as the data
    alone, and the tamis source reads it through the sidecars."""
    root = tmp_path / "indexed"
    t = typed_table(600, 3).select(["id", "i32", "s"])
    for k in (1, 2):
        (root / f"k={k}").mkdir(parents=True)
        pq.write_table(t.slice((k - 1) * 300, 300), root / f"k={k}" / "part-0.parquet",
                       row_group_size=100)
    reports = tamis.index(root, ["id"], kind="rows")
    assert all(Path(r["sidecar"]).name.startswith(".") for r in reports)
    theirs = spark.read.parquet(str(root))
    assert theirs.count() == 600
    ours = spark.read.format("tamis").load(str(root))
    for where in ["id = 17", "id IN (3, 400) AND k = 2"]:
        assert rows(ours.where(where).select("id", "i32", "s", "k")) == \
            rows(theirs.where(where).select("id", "i32", "s", "k")), where


def test_files_lacking_a_column_read_it_as_null(spark, tmp_path):
    root = tmp_path / "evolved"
    root.mkdir()
    pq.write_table(pa.table({"k": pa.array([1, 2, 3], pa.int64())}), root / "a.parquet")
    pq.write_table(pa.table({"k": pa.array([4, 5], pa.int64()), "c": pa.array([10, None], pa.int32())}),
                   root / "b.parquet")
    theirs = spark.read.option("mergeSchema", "true").parquet(str(root))
    for where in [None, "c = 10", "c IS NULL", "NOT (c <=> 10)", "c IS NOT NULL OR k = 1", "c < 0"]:
        ours = spark.read.format("tamis").option("maxPartitionBytes", "1").load(str(root))
        a = ours if where is None else ours.where(where)
        b = theirs if where is None else theirs.where(where)
        assert rows(a.select("k", "c")) == rows(b.select("k", "c")), where


def test_executor_errors_name_the_file(spark, tmp_path):
    good = typed_table(50, 1)
    root = tmp_path / "broken"
    root.mkdir()
    pq.write_table(good, root / "a.parquet")
    pq.write_table(good, root / "b.parquet")
    df = spark.read.format("tamis").option("maxPartitionBytes", "1").load(str(root))
    # Corrupt a data page of b after planning: the executor reading it fails, naming it.
    data = bytearray((root / "b.parquet").read_bytes())
    data[4:200] = b"\xff" * 196
    (root / "b.parquet").write_bytes(bytes(data))
    with pytest.raises(Exception) as e:
        df.collect()
    assert "b.parquet" in str(e.value) and "corrupt file" in str(e.value)
    # A file deleted after planning.
    df = spark.read.format("tamis").option("maxPartitionBytes", "1").load(str(root / "a.parquet"))
    (root / "a.parquet").unlink()
    with pytest.raises(Exception) as e:
        df.collect()
    assert "a.parquet" in str(e.value)


def test_unsupported_type_is_one_clear_error(spark, tmp_path):
    path = tmp_path / "duration.parquet"
    pq.write_table(pa.table({"t": pa.array([1, 2], pa.time64("us"))}), path)
    with pytest.raises(Exception) as e:
        spark.read.format("tamis").load(str(path)).collect()
    assert f"{path}: column 't'" in str(e.value) and "no Spark type" in str(e.value)


def test_session_settings_configure_the_executors_page_cache(spark, tmp_path):
    """`spark.tamis.cacheDir`, `spark.tamis.pageCache` and `spark.tamis.cacheDirBytes` reach the
    executors' native page cache: a filtered query run twice fills the directory (a local
    page is written on its second miss) and returns Spark's reader's rows; a size that is not
    one is an error naming the setting."""
    if not JAR:
        pytest.skip("settings of the JVM connector")
    path = tmp_path / "t.parquet"
    n = 200_000
    table = pa.table({"k": pa.array(range(n), pa.int64()),
                      "v": pa.array([i % 1000 for i in range(n)], pa.int64())})
    pq.write_table(table, path, compression="zstd", row_group_size=50_000,
                   data_page_size=16 << 10, write_page_index=True)
    time.sleep(1.1)  # a file changed less than a second ago is not cached
    cache = tmp_path / "cache"

    def query(reader):
        return reader.load(str(path)).where("v < 10").select("k")

    spark.conf.set("spark.tamis.cacheDir", str(cache))
    spark.conf.set("spark.tamis.cacheDirBytes", "64MiB")
    spark.conf.set("spark.tamis.pageCache", "0")
    try:
        ours = rows(query(spark.read.format("tamis")))
        assert len(ours) == 2000 and same(ours, rows(query(spark.read.format("parquet"))))
        assert same(rows(query(spark.read.format("tamis"))), ours)
        deadline = time.monotonic() + 30
        while not list(cache.glob("*.pack")) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list(cache.glob("*.pack")), "the executor wrote no page to the directory"
        spark.conf.set("spark.tamis.pageCache", "lots")
        with pytest.raises(Exception, match="spark.tamis.pageCache"):
            query(spark.read.format("tamis")).collect()
    finally:
        # The directory off again and a memory tier back, applied by one more scan.
        spark.conf.set("spark.tamis.cacheDir", "")
        spark.conf.set("spark.tamis.pageCache", "256MiB")
        spark.conf.unset("spark.tamis.cacheDirBytes")
        assert len(rows(query(spark.read.format("tamis")))) == 2000
        spark.conf.unset("spark.tamis.cacheDir")
        spark.conf.unset("spark.tamis.pageCache")


def test_unknown_option_and_missing_path(spark, typed):
    with pytest.raises(Exception, match="unknown tamis source option"):
        spark.read.format("tamis").option("colums", "id").load(typed).collect()
    with pytest.raises(Exception, match="No such file|no such file"):
        spark.read.format("tamis").load(typed + "/nope.parquet").collect()


# --------------------------------------------------------------------------------------------
# TPC-H queries in Spark SQL over tamis tables, against Spark's reader over the same files.


@pytest.fixture(scope="module")
def tpch(tmp_path_factory):
    cli = os.environ.get("TAMIS_CLI")
    if not cli:
        pytest.skip("TAMIS_CLI (the tamis binary) is needed to generate TPC-H data")
    out = tmp_path_factory.mktemp("tpch")
    subprocess.run([cli, "gen", "tpch", "--scale-factor", "0.01", "--output", str(out),
                    "--tables", "lineitem,orders,part,customer", "--row-group-rows", "20000"],
                   check=True, timeout=300, stdout=subprocess.DEVNULL)
    return out


def _tpch_answer(spark, tpch, query, reader):
    for table in ("lineitem", "orders", "part", "customer"):
        path = str(tpch / f"{table}.parquet")
        df = (spark.read.format("tamis").load(path) if reader == "tamis"
              else spark.read.parquet(path))
        df.createOrReplaceTempView(table)
    text = (QUERIES / f"{query}.sql").read_text()
    # At SF 0.01 no MED BOX of Brand#23 has lineitems: Q17 with the most common pair.
    text = text.replace("'Brand#23'", "'Brand#45'").replace("'MED BOX'", "'MED JAR'")
    return [tuple(r) for r in spark.sql(text).collect()]


@pytest.mark.parametrize("query", ["q01", "q03", "q06", "q12", "q14", "q17", "q19"])
def test_tpch_queries_match_spark_reader(spark, tpch, query):
    ours = _tpch_answer(spark, tpch, query, "tamis")
    theirs = _tpch_answer(spark, tpch, query, "parquet")
    assert ours == theirs
    assert ours and any(v is not None for v in ours[0])


def _scans(node) -> list:
    """(description, metrics) of every tamis scan in an executed plan (AQE off)."""
    out = []
    if node.nodeName().startswith("BatchScan"):
        m = node.metrics()
        out.append((node.simpleString(1000), {k: m.get(k).get().value()
                                              for k in ("numOutputRows", "rowsDropped")}))
    children = node.children()
    for i in range(children.size()):
        out += _scans(children.apply(i))
    subqueries = node.subqueries()
    for i in range(subqueries.size()):
        out += _scans(subqueries.apply(i))
    return out


def _q17(spark, tpch, runtime: bool, metrics: bool = False, conf: dict = None):
    conf = {"spark.sql.optimizer.dynamicPartitionPruning.enabled": str(runtime).lower(),
            **(conf or {})}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        for table in ("lineitem", "part"):
            spark.read.format("tamis").load(str(tpch / f"{table}.parquet")) \
                .createOrReplaceTempView(table)
        text = (QUERIES / "q17.sql").read_text()
        text = text.replace("'Brand#23'", "'Brand#45'").replace("'MED BOX'", "'MED JAR'")
        df = spark.sql(text)
        answer = [tuple(r) for r in df.collect()]
        plan = df._jdf.queryExecution().executedPlan()
        if metrics:
            return answer, plan.toString(), _scans(plan)
        return answer, plan.toString()
    finally:
        for k in conf:
            spark.conf.unset(k)


def _aggregated_lineitem_scan(spark, tpch, conf: dict) -> tuple:
    """(rows it hands Spark, whether it has a runtime filter) of Q17's lineitem scan under the
    aggregate (the one without ``l_extendedprice``; AQE off, to read the metrics)."""
    _, _, scans = _q17(spark, tpch, True, metrics=True,
                       conf={"spark.sql.adaptive.enabled": "false", **conf})
    found = [(m["numOutputRows"], " IN dynamicpruning" in text) for text, m in scans
             if "lineitem" in text and "l_extendedprice" not in text]
    assert len(found) == 1, scans
    return found[0]


@pytest.mark.skipif(not JAR, reason="runtime filters are the JVM connector's")
def test_runtime_filters_reach_both_of_q17s_lineitem_scans(spark, tpch):
    """Both lineitem scans of Q17 receive the selected part keys, and hand Spark a fraction of
    lineitem's rows: the one joined with part through Spark's dynamic pruning, the one under the
    aggregate through the connector's session extension (`TamisRuntimeFilters`), whose other
    side is the join `lineitem ⨝ part` that Spark will not run twice. The answer is the same
    with runtime filters off."""
    with_filters, plan = _q17(spark, tpch, True)
    without, plain = _q17(spark, tpch, False)
    assert with_filters == without and with_filters[0][0] is not None
    assert "dynamicpruningexpression" not in plain
    # A scan by its output attributes (AQE prints each plan more than once).
    scans = {line.split("BatchScan ")[1].split("]")[0]: line for line in plan.splitlines()
             if "BatchScan tamis" in line and "lineitem" in line}
    assert len(scans) == 2, plan
    assert all("RuntimeFilters: [dynamicpruningexpression(l_partkey" in line
               for line in scans.values()), plan
    lineitem_rows = pq.ParquetFile(tpch / "lineitem.parquet").metadata.num_rows
    # No broadcast at all: Spark's own dynamic pruning has no broadcast to reuse, so only what
    # the extension adds is left on the scan under the aggregate.
    no_broadcast = {"spark.sql.autoBroadcastJoinThreshold": "-1"}
    rows, filtered = _aggregated_lineitem_scan(spark, tpch, no_broadcast)
    assert filtered and 0 < rows < lineitem_rows / 20
    rows, filtered = _aggregated_lineitem_scan(
        spark, tpch, {**no_broadcast, "spark.tamis.runtimeFilters.enabled": "false"})
    assert not filtered and rows == lineitem_rows
    answer, _ = _q17(spark, tpch, True, conf=no_broadcast)
    assert answer == without


@pytest.mark.skipif(not JAR, reason="LIMIT pushdown is the JVM connector's")
def test_a_limit_stops_each_task_early(spark, typed):
    df = spark.read.format("tamis").option("minPartitions", "3").load(typed)
    plan = df.limit(7)._jdf.queryExecution().executedPlan().toString()
    assert "Limit: 7" in plan, plan
    got = df.limit(7).collect()
    assert len(got) == 7
    ids = {r.id for r in spark.read.parquet(typed).collect()}
    assert {r.id for r in got} <= ids
    # With a filter left to Spark, nothing is pushed and the answer is still right.
    assert len(df.where("i32 < i16").limit(5).collect()) == 5


def test_counts_read_no_column(spark, typed, tmp_path):
    """count(*) with no filter is the footers' row counts (the connector reads no column);
    with a filter, or over files lacking the selected column, the rows are still right."""
    df = spark.read.format("tamis").option("maxPartitionBytes", "1").load(typed)
    assert df.count() == 2100
    assert df.where("i32 < 0").count() == spark.read.parquet(typed).where("i32 < 0").count()
    root = tmp_path / "lacking"
    root.mkdir()
    pq.write_table(pa.table({"k": pa.array([1, 2, 3], pa.int64())}), root / "a.parquet")
    pq.write_table(pa.table({"k": pa.array([4, 5], pa.int64()), "c": pa.array([10, None], pa.int32())}),
                   root / "b.parquet")
    ev = spark.read.format("tamis").option("maxPartitionBytes", "1").load(str(root))
    assert sorted(r.c for r in ev.select("c").collect() if r.c is not None) == [10]
    assert ev.select("c").count() == 5


def test_aggregates_from_footers_equal_spark_readers(spark, typed, tmp_path):
    """count, min and max with no filter: the connector answers those the footers give exactly
    (EXPLAIN says so) and scans for the rest; every answer is Spark's reader's."""
    queries = ["count(*)", "count(i32), min(i32), max(i32)", "min(id), max(d), count(dec)",
               "min(dec), max(dec)", "max(f64), min(s)", "min(ts), count(*)"]
    for q in queries:
        ours = spark.read.format("tamis").load(typed).selectExpr(*q.split(", "))
        theirs = spark.read.parquet(typed).selectExpr(*q.split(", "))
        assert same(rows(ours), rows(theirs)), q
    if JAR:
        plan = (spark.read.format("tamis").load(typed).selectExpr("min(i32)", "max(d)")
                ._jdf.queryExecution().executedPlan().toString())
        assert "PushedAggregates (from footers)" in plan, plan
        plan = (spark.read.format("tamis").load(typed).selectExpr("max(f64)")
                ._jdf.queryExecution().executedPlan().toString())
        assert "PushedAggregates" not in plan, plan
    # A file without the column, and one whose values are all NULL.
    root = tmp_path / "agg"
    root.mkdir()
    pq.write_table(pa.table({"k": pa.array([3, 1], pa.int64())}), root / "a.parquet")
    pq.write_table(pa.table({"k": pa.array([None, 9], pa.int64()),
                             "c": pa.array([None, None], pa.int32())}), root / "b.parquet")
    for q in ["count(c)", "min(c), max(c)", "min(k), max(k), count(k), count(*)"]:
        ours = spark.read.format("tamis").load(str(root)).selectExpr(*q.split(", "))
        theirs = spark.read.option("mergeSchema", "true").parquet(str(root)).selectExpr(*q.split(", "))
        assert rows(ours) == rows(theirs), q


def test_aggregates_over_partition_columns(spark, hive):
    for q in ["count(year), max(year), min(year)", "count(region), count(*)"]:
        ours = spark.read.format("tamis").load(hive).selectExpr(*q.split(", "))
        theirs = spark.read.parquet(hive).selectExpr(*q.split(", "))
        assert rows(ours) == rows(theirs), q


def test_a_column_widened_across_files_reads_as_the_dataset_types_it(spark, tmp_path):
    """A task whose files hold a narrower type than the dataset (decimal(9,2) where another
    file has decimal(12,3); int32 where another has int64) hands Spark the dataset's type:
    the same values, never misread."""
    root = tmp_path / "widened"
    root.mkdir()
    pq.write_table(pa.table({"d": pa.array([decimal.Decimal("1.50"), None], pa.decimal128(9, 2)),
                             "i": pa.array([-7, 8], pa.int32())}), root / "a.parquet")
    pq.write_table(pa.table({"d": pa.array([decimal.Decimal("2.125")], pa.decimal128(12, 3)),
                             "i": pa.array([2**40], pa.int64())}), root / "b.parquet")
    df = spark.read.format("tamis").option("maxPartitionBytes", "1").load(str(root))
    assert df.rdd.getNumPartitions() == 2
    got = sorted(((r.d, r.i) for r in df.collect()), key=lambda r: r[1])
    assert got == [(decimal.Decimal("1.500"), -7), (None, 8), (decimal.Decimal("2.125"), 2**40)]
    assert df.where("d > 1.6").count() == 1


@pytest.mark.skipif(not JAR, reason="custom metrics are the JVM connector's")
def test_scan_metrics_show_the_funnel(spark, typed):
    """The scan node's metrics in Spark's UI: each file's ids are 0..699 in row groups of 200,
    so `id < 150` prunes 3 of each file's 4 row groups and drops the rest of the first's rows."""
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        df = spark.read.format("tamis").load(typed).where("id < 150").select("id", "s")
        assert df.count() == 450 and len(df.collect()) == 450
        node = df._jdf.queryExecution().executedPlan()
        while not node.nodeName().startswith("BatchScan"):
            node = node.children().apply(0)
        metrics = node.metrics()

        def value(name):
            return metrics.get(name).get().value()

        # Row groups pruned on the driver get no task; the tasks drop the rest of the rows.
        assert value("rowGroupsPrunedPlanning") == 9
        assert value("rowsDropped") == 3 * (200 - 150)
        assert value("bytesRead") > 0
        assert value("valuesInPlace") + value("valuesDecoded") > 0
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")


@pytest.mark.skipif(not JAR, reason="the JVM connector's native buffers")
def test_many_scans_leave_memory_flat(spark, typed):
    """Every batch's native buffers are released when Spark is done with them: after many
    scans the connector's Arrow allocator holds nothing and the native library holds what it
    held after the first scans. (The JVM's resident memory grows with Spark's own bookkeeping
    of each query, with Spark's reader as much; datasets loaded anew each time hold their
    footers until the JVM collects them: BENCHMARKS.md, issue 39.)"""
    jvm = spark._jvm
    source = jvm.io.tamis.spark.TamisDataSource

    def native() -> int:
        jvm.System.gc()  # datasets free their native footers when collected (a Cleaner)
        time.sleep(0.3)
        return source.nativeBytes()

    df = spark.read.format("tamis").load(typed)

    def scans(n):
        for i in range(n):
            assert df.where(f"i32 < {i % 50}").select("id", "s", "dec", "li").count() >= 0

    scans(30)
    warm = native()
    scans(150)
    after = native()
    assert source.allocatedBytes() == 0
    print(f"native bytes after 30 and 180 scans: {warm}, {after}")
    assert after - warm < 2**20, f"native memory grew {(after - warm) >> 10} KiB"


# --------------------------------------------------------------------------------------------
# Object storage (moto's S3 server on 127.0.0.1) read on the executors.


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _s3_reader(spark, bucket):
    """moto's S3 server on 127.0.0.1 with `bucket`, for the test's life: the boto3 client and a
    tamis reader configured for it."""
    moto_server = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    port = _free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{port}"
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
        s3.create_bucket(Bucket=bucket)
        reader = spark.read.format("tamis").option("maxPartitionBytes", "1")
        for k, v in {"endpoint": endpoint, "region": "us-east-1", "access_key_id": "testing",
                     "secret_access_key": "testing"}.items():
            reader = reader.option(f"storage.{k}", v)
        yield s3, reader
    finally:
        server.stop()


def test_object_store_paths_read_on_executors(spark, typed):
    with _s3_reader(spark, "spark") as (s3, reader):
        for p in sorted(Path(typed).glob("*.parquet")):
            s3.put_object(Bucket="spark", Key=f"typed/{p.name}", Body=p.read_bytes())
        remote = reader.load("s3://spark/typed/")
        assert remote.rdd.getNumPartitions() > 3
        local = spark.read.parquet(typed)
        for where in ["i32 < 0", "s = 'AIR' AND d > DATE '2020-01-10'"]:
            assert same(rows(remote.where(where)), rows(local.where(where))), where


def test_odd_object_keys_read_on_executors(spark, typed, tmp_path):
    """Keys with `%`, `:`, space, `#`, `?` and non-ASCII reach the executors as the same keys
    (Spark escapes `:` in partition directories as `%3A`, three characters of the key)."""
    with _s3_reader(spark, "odd") as (s3, reader):
        dirs = ["k=2024-01-01 00%3A00%3A00", "k=a#b", "k=a?b", "k=ünï cødé", "k=100%"]
        parts = sorted(Path(typed).glob("*.parquet"))
        copies = tmp_path / "copies"
        copies.mkdir()
        for i, (d, p) in enumerate(zip(dirs, parts * 2)):
            s3.put_object(Bucket="odd", Key=f"t/{d}/{p.name}", Body=p.read_bytes())
            (copies / f"{i}.parquet").write_bytes(p.read_bytes())
        remote = reader.load("s3://odd/t/")
        local = spark.read.parquet(str(copies))
        cols = local.columns
        where = "i32 < 0"
        assert same(rows(remote.where(where).select(*cols)), rows(local.where(where))), where


# --------------------------------------------------------------------------------------------
# A standalone cluster: a master and two workers on 127.0.0.1, started and stopped by the job.


def test_two_worker_cluster(typed, tmp_path):
    job = HERE / "spark_cluster_job.py"
    env = dict(os.environ)
    result = subprocess.run([sys.executable, str(job), typed, str(tmp_path)], env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    assert "workers used: 2" in result.stdout, result.stdout


# --------------------------------------------------------------------------------------------
# Found in review: each with the rows Spark's own reader (or Spark's semantics) gives.


def test_a_partition_with_two_ranges_of_one_file_reads_each_once(spark, tmp_path):
    path = tmp_path / "gaps.parquet"
    x = list(range(10)) + list(range(100, 110)) + list(range(10))
    pq.write_table(pa.table({"x": pa.array(x, pa.int64())}), path, row_group_size=10)
    df = (spark.read.format("tamis").option("minPartitions", "1").load(str(path))
          .where("x < 50"))  # the middle row group is pruned on the driver
    assert df.rdd.getNumPartitions() == 1
    assert sorted(r.x for r in df.collect()) == sorted(list(range(10)) * 2)


def test_decimals_beyond_28_digits_are_left_to_spark(spark, tmp_path):
    path = tmp_path / "d38.parquet"
    big = decimal.Decimal("1234567890123456789012345678.9012345678")
    pq.write_table(pa.table({"d": pa.array([big, decimal.Decimal(1)], pa.decimal128(38, 10))}),
                   path)
    for where, n in [(f"d = {big}", 1), (f"d < {big}", 1), (f"d >= {big}", 1)]:
        got = spark.read.format("tamis").load(str(path)).where(where).count()
        assert got == n == spark.read.parquet(str(path)).where(where).count(), where


def test_nanosecond_columns_compare_as_spark_sees_them(spark, tmp_path):
    path = tmp_path / "ns.parquet"
    pq.write_table(pa.table({"t": pa.array([1500, -1500, None], pa.timestamp("ns"))}), path)
    for where, n in [("t > TIMESTAMP_NTZ '1970-01-01 00:00:00.000001'", 0),
                     ("t = TIMESTAMP_NTZ '1970-01-01 00:00:00.000001'", 1),
                     ("t = TIMESTAMP_NTZ '1969-12-31 23:59:59.999999'", 1),
                     ("t < TIMESTAMP_NTZ '1969-12-31 23:59:59.999999'", 0),
                     ("t IS NULL", 1)]:
        assert spark.read.format("tamis").load(str(path)).where(where).count() == n, where


def test_filters_tamis_cannot_bind_go_back_to_spark(spark, typed, tmp_path):
    for where in ["li IS NOT NULL", "li IS NULL", "NOT (li IS NULL) AND i32 > 0"]:
        ours = spark.read.format("tamis").load(typed).where(where)
        assert same(rows(ours), rows(spark.read.parquet(typed).where(where))), where
    path = tmp_path / "int96.parquet"
    stamps = pa.array([0, 86_400 * 10**9, None], pa.timestamp("ns"))
    pq.write_table(pa.table({"t": stamps}), path, use_deprecated_int96_timestamps=True)
    ours = spark.read.format("tamis").load(str(path))
    theirs = spark.read.parquet(str(path))
    assert ours.schema == theirs.schema  # INT96 is Spark's `timestamp`
    for where in ["t > TIMESTAMP '1970-01-01 12:00:00+00:00'", "t IS NULL", "t IS NOT NULL"]:
        ours = spark.read.format("tamis").load(str(path)).where(where)
        assert rows(ours) == rows(theirs.where(where)), where


# --------------------------------------------------------------------------------------------
# Cancellation: a killed task's native scan stops, though its thread is inside a batch read.


@contextlib.contextmanager
def _slow_http(path: Path, delay: float):
    """An HTTP server on 127.0.0.1 serving `path` (range reads), each answer `delay` seconds
    late; yields (its URL, the times of the requests so far)."""
    import http.server
    import threading

    data = path.read_bytes()
    requests: list = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _answer(self, body: bool):
            requests.append(time.monotonic())
            time.sleep(delay)
            start, end = 0, len(data) - 1
            spec = self.headers.get("Range")
            if spec:
                first, _, last = spec.split("=")[1].partition("-")
                if first:
                    start, end = int(first), min(int(last) if last else end, end)
                else:
                    start = max(0, len(data) - int(last))
            self.send_response(206 if spec else 200)
            self.send_header("Content-Length", str(end - start + 1))
            if spec:
                self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            if body:
                self.wfile.write(data[start:end + 1])

        def do_GET(self):
            self._answer(True)

        def do_HEAD(self):
            self._answer(False)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/{path.name}", requests
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.skipif(not JAR, reason="the JVM connector's native scans")
def test_a_killed_task_stops_its_native_scan(spark, tmp_path):
    """A scan whose filter matches nothing reads row group after row group inside one batch
    read (40 of them, each a request answered 0.2 s late); cancelling the job stops the
    requests at once, not when the scan ends, and the session goes on working."""
    import threading

    path = tmp_path / "slow.parquet"
    rng = random.Random(7)
    x = pa.array([rng.randrange(-10**12, 10**12) for _ in range(400_000)], pa.int64())
    pq.write_table(pa.table({"x": x}), path, row_group_size=10_000, compression="none")
    with _slow_http(path, 0.2) as (url, requests):
        df = (spark.read.format("tamis").option("minPartitions", "1").option("threads", "1")
              .load(url).where("x = 5"))
        failure: list = []

        def run():
            spark.sparkContext.setJobGroup("slow-scan", "slow scan", interruptOnCancel=True)
            try:
                df.collect()
            except Exception as e:  # the cancellation
                failure.append(e)

        job = threading.Thread(target=run)
        started = len(requests)
        job.start()
        deadline = time.monotonic() + 60
        # The driver's planning and the task's opening take a few requests; a kill sent
        # before the task runs is lost by Spark (the executor knows no such task yet), so
        # wait until the task reads row groups.
        while len(requests) < started + 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        cancelled_at = time.monotonic()
        spark.sparkContext.cancelJobGroup("slow-scan")
        job.join(60)
        assert not job.is_alive() and failure, "the job was not cancelled"
        time.sleep(1.0)  # the watcher's period and the request in flight
        settled = len(requests)
        time.sleep(2.0)  # the whole scan takes 40 requests of 0.2 s
        assert len(requests) == settled, ("the native scan went on reading", started,
                                          [round(t - cancelled_at, 2) for t in requests])
        assert settled - started < 25
    # The executor lives on.
    assert spark.range(3).count() == 3


@pytest.fixture(scope="module")
def many_keys(tmp_path_factory):
    """A fact table of 300 000 rows keyed at random in [0, 1 000 000), and a dimension of
    100 000 keys of which a filter keeps 30 000: more than an `IN` list holds. Keys as bigint,
    int, string and date."""
    out = tmp_path_factory.mktemp("many_keys")
    rng = random.Random(11)
    epoch = datetime.date(1970, 1, 1)

    def keyed(keys):
        return {"k": pa.array(keys, pa.int64()), "ki": pa.array(keys, pa.int32()),
                "ks": pa.array([f"key-{k}" for k in keys]),
                "kd": pa.array([epoch + datetime.timedelta(days=k) for k in keys])}

    fact_keys = [rng.randrange(1_000_000) for _ in range(300_000)]
    fact = pa.table({**keyed(fact_keys), "x": pa.array(range(300_000), pa.int64())})
    pq.write_table(fact, out / "fact.parquet", row_group_size=50_000)
    dim_keys = list(range(100_000))
    dim = pa.table({**keyed(dim_keys), "v": pa.array([rng.randrange(100) for _ in dim_keys])})
    pq.write_table(dim, out / "dim.parquet")
    return out


@pytest.mark.skipif(not JAR, reason="runtime filters are the JVM connector's")
@pytest.mark.parametrize("key", ["k", "ki", "ks", "kd"])
def test_long_key_lists_are_probed_as_bloom_filters(spark, many_keys, key):
    """30 000 join keys reach the fact scan (more than `IN` text takes): it probes them as a
    Bloom filter and hands Spark a few percent of its rows; the answer is Spark's own
    reader's, with runtime filters on and off."""
    sql = (f"SELECT count(*), sum(f.x) FROM fact f JOIN dim d ON f.{key} = d.{key} "
           "WHERE d.v < 30")

    def answer(reader, conf=None):
        conf = {"spark.sql.adaptive.enabled": "false", **(conf or {})}
        for k, v in conf.items():
            spark.conf.set(k, v)
        try:
            for t in ("fact", "dim"):
                path = str(many_keys / f"{t}.parquet")
                df = (spark.read.format("tamis").load(path) if reader == "tamis"
                      else spark.read.parquet(path))
                df.createOrReplaceTempView(t)
            df = spark.sql(sql)
            return [tuple(r) for r in df.collect()], df._jdf.queryExecution().executedPlan()
        finally:
            for k in conf:
                spark.conf.unset(k)

    ours, plan = answer("tamis")
    fact = [(text, m) for text, m in _scans(plan) if "fact.parquet" in text]
    assert len(fact) == 1 and " IN dynamicpruning" in fact[0][0], fact
    assert fact[0][1]["numOutputRows"] < 300_000 // 10, fact
    off, _ = answer("tamis", {"spark.sql.optimizer.dynamicPartitionPruning.enabled": "false"})
    theirs, _ = answer("parquet")
    assert ours == off == theirs and ours[0][0] > 0


# --------------------------------------------------------------------------------------------
# Lakehouse tables (issue 41): each task opens the table's snapshot again, so its deletes,
# column names and partition values are the table's, never the bare files'.


def _lakehouse_batch(start: int, n: int) -> pa.Table:
    rng = random.Random(start)
    return pa.table({
        "id": pa.array(range(start, start + n), pa.int64()),
        "k": pa.array([rng.randrange(50) for _ in range(n)], pa.int32()),
        "s": pa.array([None if i % 11 == 0 else f"v{rng.randrange(30)}" for i in range(n)]),
        "x": pa.array([rng.random() * 100 for _ in range(n)], pa.float64()),
        "p": pa.array([f"part{i % 3}" for i in range(n)]),
    })


LAKEHOUSE_WHERES = [None, "k < 10", "p = 'part1' AND x > 50", "s IS NULL OR id >= 5000"]


def test_delta_tables_read_in_spark(spark, tmp_path):
    """A partitioned Delta table with a deletion vector, read at its latest version and at an
    older one (`versionAsOf`), equals the writer's rows minus the deleted ones."""
    deltalake = pytest.importorskip("deltalake")
    pytest.importorskip("pyroaring")
    from table_writers import add_deletion_vector, oracle, sorted_rows

    path = tmp_path / "delta"
    first, second = _lakehouse_batch(0, 4000), _lakehouse_batch(4000, 3000)
    deltalake.write_deltalake(str(path), first, partition_by=["p"], mode="append")
    deltalake.write_deltalake(str(path), second, partition_by=["p"], mode="append")
    files = sorted(str(Path(f).relative_to(path)) for f in deltalake.DeltaTable(str(path)).file_uris())
    victim = files[0]
    positions = list(range(0, pq.read_metadata(path / victim).num_rows, 3))
    gone = set(pq.read_table(path / victim, columns=["id"]).column("id").take(positions).to_pylist())
    add_deletion_vector(path, {victim: positions})
    latest = pa.concat_tables([first, second]).filter(
        pa.array([i not in gone for i in range(7000)]))
    columns = ["id", "k", "s", "x", "p"]
    for where in LAKEHOUSE_WHERES:
        df = spark.read.format("tamis").load(str(path))
        if where is not None:
            df = df.where(where)
        got = df.select(*columns).toArrow()
        assert sorted_rows(got) == sorted_rows(oracle(latest, where).select(columns)), where
    # A count reads a column: the footers' row counts include the deleted rows.
    assert spark.read.format("tamis").load(str(path)).count() == latest.num_rows
    old = spark.read.format("tamis").option("versionAsOf", "0").load(str(path))
    assert sorted_rows(old.select(*columns).toArrow()) == sorted_rows(first.select(columns))


def test_iceberg_tables_read_in_spark(spark, tmp_path):
    """An Iceberg table with positional deletes, read as pyiceberg reads it, at its current
    snapshot and at its first (`versionAsOf`: a snapshot id)."""
    pytest.importorskip("pyiceberg")
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import DoubleType, IntegerType, LongType, NestedField, StringType
    from table_writers import add_delete_files, oracle, positional_delete_file, sorted_rows

    (tmp_path / "warehouse").mkdir()
    catalog = SqlCatalog("spark", uri=f"sqlite:///{tmp_path / 'catalog.db'}",
                         warehouse=f"file://{tmp_path / 'warehouse'}")
    catalog.create_namespace("ns")
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "k", IntegerType(), required=False),
                    NestedField(3, "s", StringType(), required=False),
                    NestedField(4, "x", DoubleType(), required=False),
                    NestedField(5, "p", StringType(), required=False))
    table = catalog.create_table(
        "ns.t", schema=schema,
        partition_spec=PartitionSpec(PartitionField(5, 1000, IdentityTransform(), "p")))
    table.append(_lakehouse_batch(0, 4000))
    table.append(_lakehouse_batch(4000, 3000))
    table = catalog.load_table("ns.t")
    add_delete_files(table, [
        positional_delete_file(table, task.file, list(range(0, task.file.record_count, 4)))
        for task in table.scan().plan_files()])
    table = catalog.load_table("ns.t")
    latest = table.scan().to_arrow()
    assert latest.num_rows < 7000
    columns = ["id", "k", "s", "x", "p"]
    for where in LAKEHOUSE_WHERES:
        df = spark.read.format("tamis").load(table.metadata_location)
        if where is not None:
            df = df.where(where)
        got = df.select(*columns).toArrow()
        assert sorted_rows(got) == sorted_rows(oracle(latest, where).select(columns)), where
    assert spark.read.format("tamis").load(table.metadata_location).count() == latest.num_rows
    first = table.metadata.snapshots[0].snapshot_id
    old = (spark.read.format("tamis").option("versionAsOf", str(first))
           .load(table.metadata_location))
    want = table.scan(snapshot_id=first).to_arrow()
    assert sorted_rows(old.select(*columns).toArrow()) == sorted_rows(want.select(columns))
