"""tamis in Spark.

**The connector (a jar).** A Java DataSource V2 connector calls the Rust core in-process
through JNI and receives Arrow batches through the Arrow C Data Interface: column pruning,
filter pushdown, planning from footers on the driver, columnar batches on the executors, no
Python process involved. The wheel ships the jar::

    import tamis.spark
    spark = (SparkSession.builder.config(map=tamis.spark.spark_conf()).getOrCreate())
    df = spark.read.format("tamis").load("s3://bucket/lineitem/")   # file, directory, glob, prefix

Scala and Java users add the jar (``jar_path()``, or built by
``crates/tamis-spark/build-jar.sh``) with ``--jars`` / ``spark.jars``. Its options are
documented in ``crates/tamis-spark/java/io/tamis/spark/Options.java`` and the README.

**The Python data source (fallback).** Where the jar cannot be added (a Spark Connect client
whose server lacks it), ``register(spark)`` registers the source below, PySpark's Python Data
Source API, under the same name; where the connector is on the classpath ``register`` does
nothing, since ``format("tamis")`` already is the connector. What follows describes the
fallback::

    tamis.spark.register(spark)
    df = spark.read.format("tamis").load("s3://bucket/lineitem/")   # file, directory, glob, prefix
    df.where("l_shipmode = 'AIR' AND l_quantity < 5").count()

The driver reads the footers once and plans input partitions as files × row-group ranges of
about ``maxPartitionBytes`` compressed bytes, so work spreads over the executors and each
executor opens only the files of its partitions. Executors scan with tamis (pruning, filters
on encoded values, late materialization) and hand Arrow record batches to Spark.

Filters Spark offers through ``pushFilters`` (Spark ≥ 4.1 with
``spark.sql.python.filterPushdown.enabled``) are taken when tamis evaluates them exactly with
Spark's semantics and returned to Spark otherwise. Without pushdown the source still works:
Spark filters above it.

**SPARK_REUSE — one DataFrame per filtered query when pushdown is on.** Spark 4.3 keeps the
planned reader of a ``load()`` (its ``PythonDataSourceV2``) and reuses it for a later query
on the same DataFrame or temporary view when that query offers no filter to push (no
``WHERE``, or only ``OR``s): the later query then runs with the earlier query's filters and
returns too few rows. ``register`` therefore follows Spark's default (pushdown off) unless
asked; with pushdown on, call ``spark.read.format("tamis").load(path)`` for each query (or
re-create the view). Without pushdown every query is correct, Spark filtering above the scan.

Spark's Python data sources receive no column pruning: Spark asks for every column of the
schema. Name the columns to read with ``.option("columns", "a,b")`` or a user schema
(``.schema("a BIGINT, b STRING")``, by name, a subset of the dataset's columns).

Options (``.option(key, value)``):

- ``columns``: comma-separated columns to read (default: all).
- ``maxPartitionBytes``: compressed bytes per input partition (default 128 MiB, as Spark's
  ``spark.sql.files.maxPartitionBytes``); a row group is never split.
- ``minPartitions``: at least this many partitions when there are enough row groups (default:
  the planning machine's cores).
- ``threads``: tamis scan threads per Spark task (default 1: a task is one core).
- ``storage.<key>``: object-store options, as ``tamis.scan``'s ``storage_options``
  (``storage.endpoint``, ``storage.region``, ``storage.access_key_id``, …). The executors use
  the same options.
"""

from __future__ import annotations

import datetime
import decimal
import math
import os
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from . import Dataset, InvalidArgumentError, ScanOptions, UnsupportedError, _reader, _tamis

#: The name of the format: ``spark.read.format("tamis")``.
FORMAT = "tamis"

_KNOWN_OPTIONS = {"path", "paths", "columns", "maxpartitionbytes", "minpartitions", "threads",
                  "batchsize", "versionasof", "timestampasof", "tableformat"}
_DEFAULT_PARTITION_BYTES = 128 << 20
#: Rows per batch handed to Spark: each batch crosses to the JVM as one Arrow IPC message
#: (65 536 rows cross 6 Mi rows about 15 % faster than 8 192; BENCHMARKS.md).
_DEFAULT_BATCH_ROWS = 65536


def jar_path() -> str:
    """The path of the connector's jar: ``TAMIS_SPARK_JAR`` when set, else the jar the wheel
    ships. ``FileNotFoundError`` says how to build one when neither exists."""
    explicit = os.environ.get("TAMIS_SPARK_JAR")
    if explicit:
        return explicit
    shipped = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jars", "tamis-spark.jar")
    if os.path.exists(shipped):
        return shipped
    raise FileNotFoundError(
        "this tamis package ships no Spark connector jar; build it with "
        "`bash crates/tamis-spark/build-jar.sh` and set TAMIS_SPARK_JAR to its path")


def spark_conf() -> Dict[str, str]:
    """The ``SparkSession.builder`` configuration that puts the connector on the driver's and
    the executors' classpath and adds its session extension (runtime join filters Spark's own
    dynamic pruning leaves out): ``SparkSession.builder.config(map=spark_conf())``. A session
    with other extensions lists ``io.tamis.spark.TamisExtensions`` beside them."""
    return {"spark.jars": jar_path(), "spark.sql.extensions": "io.tamis.spark.TamisExtensions"}


def _connector_loaded(spark: Any) -> bool:
    """Whether the JVM connector is on the session's classpath (classic sessions only)."""
    try:
        jvm = spark._jvm
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName("io.tamis.spark.TamisDataSource", False, loader)
        return True
    except Exception:
        return False


def register(spark: Any, pushdown: Optional[bool] = None) -> None:
    """Registers the Python ``tamis`` format with ``spark``, unless the JVM connector is on
    its classpath (then ``format("tamis")`` is the connector and this does nothing).

    ``pushdown``: ``None`` (default) pushes filters when the Spark version has Python filter
    pushdown and ``spark.sql.python.filterPushdown.enabled`` is true; ``True`` also sets that
    configuration; ``False`` never pushes (Spark filters above the scan). Call it again after
    changing the configuration: Spark refuses a source that pushes while the option is off.
    """
    if _connector_loaded(spark):
        return
    supported = _pushdown_supported()
    if pushdown is None:
        conf = spark.conf.get("spark.sql.python.filterPushdown.enabled", "false")
        pushdown = supported and str(conf).lower() == "true"
    elif pushdown:
        if not supported:
            raise UnsupportedError(
                "unsupported: this pyspark has no Python data source filter pushdown "
                "(Spark 4.1 or later)")
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(PushdownDataSource if pushdown else TamisDataSource)


def _pushdown_supported() -> bool:
    try:
        from pyspark.sql import datasource
    except ImportError:  # pragma: no cover - pyspark < 4
        return False
    return hasattr(datasource, "EqualTo")


# ---------------------------------------------------------------------------------------------
# Types: Arrow (what tamis returns) → Spark, as Spark's own Parquet reader maps them.


def spark_type(t: pa.DataType, column: str, int96: bool = False) -> DataType:
    """The Spark type of an Arrow type tamis returns (``int96``: the column is stored as
    INT96, Spark's own timestamps, which it reads as ``timestamp``); ``UnsupportedError``
    names the column."""
    if pa.types.is_boolean(t):
        return BooleanType()
    if pa.types.is_int8(t):
        return ByteType()
    if pa.types.is_int16(t) or pa.types.is_uint8(t):
        return ShortType()
    if pa.types.is_int32(t) or pa.types.is_uint16(t):
        return IntegerType()
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return LongType()
    if pa.types.is_uint64(t):
        return DecimalType(20, 0)
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return FloatType()
    if pa.types.is_float64(t):
        return DoubleType()
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise UnsupportedError(
                f"unsupported: column '{column}': {t} has more digits than Spark's decimals (38)")
        return DecimalType(t.precision, t.scale)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return StringType()
    if (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)
            or pa.types.is_fixed_size_binary(t)):
        return BinaryType()
    if pa.types.is_date(t):
        return DateType()
    if pa.types.is_timestamp(t):
        return TimestampType() if t.tz is not None or int96 else TimestampNTZType()
    if pa.types.is_null(t):
        return NullType()
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t) \
            or pa.types.is_fixed_size_list(t):
        return ArrayType(spark_type(t.value_type, column), True)
    if pa.types.is_map(t):
        return MapType(spark_type(t.key_type, column), spark_type(t.item_type, column), True)
    if pa.types.is_struct(t):
        return StructType([StructField(t.field(i).name, spark_type(t.field(i).type, column), True)
                           for i in range(t.num_fields)])
    raise UnsupportedError(f"unsupported: column '{column}': Arrow type {t} has no Spark type")


def spark_schema(schema: pa.Schema, path: str = "", int96: Sequence[str] = ()) -> StructType:
    """The Spark schema of a dataset schema (every field nullable: files may lack a column);
    ``int96`` names the columns stored as INT96. ``UnsupportedError`` names ``path`` and the
    column."""
    try:
        return StructType([StructField(f.name, spark_type(f.type, f.name, f.name in int96), True)
                           for f in schema])
    except UnsupportedError as e:
        if not path:
            raise
        raise UnsupportedError(str(e).replace("unsupported: ", f"unsupported: {path}: ", 1)) \
            from None


# ---------------------------------------------------------------------------------------------
# Filters: Spark's pushed filters → tamis SQL, only where the result is exactly Spark's.


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _string(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _literal(value: Any, t: DataType) -> Optional[str]:
    """SQL text of a literal compared with a column of Spark type ``t``, or None when tamis
    could not compare them exactly as Spark does."""
    if value is None:
        return None
    if isinstance(t, BooleanType):
        return ("TRUE" if value else "FALSE") if isinstance(value, bool) else None
    if isinstance(t, (ByteType, ShortType, IntegerType, LongType)):
        return str(int(value)) if isinstance(value, int) and not isinstance(value, bool) else None
    if isinstance(t, DecimalType):
        if isinstance(value, decimal.Decimal) and value.is_finite():
            # pyspark builds the value in Python's 28-digit context: one that long may have
            # been rounded from Spark's literal.
            if len(value.as_tuple().digits) >= 28:
                return None
            return format(value, "f")
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return None
    if isinstance(t, (FloatType, DoubleType)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        v = float(value)
        if math.isnan(v):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(v):
            return f"CAST('{'Infinity' if v > 0 else '-Infinity'}' AS DOUBLE)"
        if isinstance(t, FloatType) and float(pa.scalar(v, pa.float32()).as_py()) != v:
            return None  # Spark compares as FLOAT: a literal it rounds would differ
        return repr(v)
    if isinstance(t, StringType):
        return _string(value) if isinstance(value, str) else None
    if isinstance(t, DateType):
        if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
            return f"DATE '{value.isoformat()}'"
        return None
    if isinstance(t, TimestampNTZType):
        if isinstance(value, datetime.datetime) and value.tzinfo is None:
            return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
        return None
    if isinstance(t, TimestampType):
        if isinstance(value, datetime.datetime) and value.tzinfo is not None:
            utc = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
            return f"TIMESTAMP '{utc.isoformat(sep=' ')}+00:00'"
        return None
    return None


_CMP = {"EqualTo": "=", "GreaterThan": ">", "GreaterThanOrEqual": ">=", "LessThan": "<",
        "LessThanOrEqual": "<="}


def to_sql(f: Any, types: Dict[str, DataType], nanosecond: frozenset = frozenset()
           ) -> Optional[str]:
    """tamis SQL evaluating the pushed filter ``f`` exactly as Spark would, or None.
    ``nanosecond`` names timestamp columns finer than Spark's microseconds: only their null
    tests are taken."""
    kind = type(f).__name__
    if kind == "Not":
        inner = to_sql(f.child, types, nanosecond)
        return None if inner is None else f"NOT ({inner})"
    attribute = getattr(f, "attribute", None)
    if not isinstance(attribute, tuple) or len(attribute) != 1 or attribute[0] not in types:
        return None  # nested fields and unknown names stay with Spark
    name = attribute[0]
    t = types[name]
    if isinstance(t, (ArrayType, MapType, StructType, NullType)):
        return None  # tamis filters on atomic columns
    if name in nanosecond and kind not in ("IsNull", "IsNotNull"):
        return None
    column = _ident(name)
    if kind == "IsNull":
        return f"{column} IS NULL"
    if kind == "IsNotNull":
        return f"{column} IS NOT NULL"
    if kind in _CMP:
        lit = _literal(f.value, t)
        return None if lit is None else f"{column} {_CMP[kind]} {lit}"
    if kind == "EqualNullSafe":
        if f.value is None:
            return f"{column} IS NULL"
        lit = _literal(f.value, t)
        # Never NULL, as <=> is: false where the column is NULL.
        return None if lit is None else f"({column} IS NOT NULL AND {column} = {lit})"
    if kind == "In":
        values = list(f.value)
        lits = [_literal(v, t) for v in values if v is not None]
        if not lits or any(x is None for x in lits):
            return None
        text = f"{column} IN ({', '.join(lits)})"
        # `x IN (1, NULL)` is NULL, not FALSE, where x is not 1: it matters under NOT.
        return f"({text} OR NULL)" if any(v is None for v in values) else text
    if kind in ("StringStartsWith", "StringEndsWith", "StringContains"):
        if not isinstance(t, StringType) or not isinstance(f.value, str):
            return None
        escaped = f.value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        pattern = {"StringStartsWith": f"{escaped}%", "StringEndsWith": f"%{escaped}",
                   "StringContains": f"%{escaped}%"}[kind]
        return f"{column} LIKE {_string(pattern)} ESCAPE '\\'"
    return None


def _conjunction(sqls: Sequence[str]) -> Optional[str]:
    return " AND ".join(f"({sql})" for sql in sqls) or None


def _columns_of(f: Any) -> List[str]:
    if type(f).__name__ == "Not":
        return _columns_of(f.child)
    return [f.attribute[0]]


def _on_null(f: Any) -> Optional[bool]:
    """The value of filter ``f`` where its column is NULL (None: SQL NULL)."""
    kind = type(f).__name__
    if kind == "Not":
        inner = _on_null(f.child)
        return None if inner is None else not inner
    if kind == "IsNull":
        return True
    if kind == "IsNotNull":
        return False
    if kind == "EqualNullSafe":
        return f.value is None
    return None


# ---------------------------------------------------------------------------------------------
# The source.


class TamisPartition(InputPartition):
    """Row groups of some files: ``(location, size, first, end)``, and the dataset columns
    those files have (a column none of them has is NULL in their rows)."""

    def __init__(self, parts: Sequence[Tuple[str, int, int, int]], columns: frozenset) -> None:
        super().__init__(None)
        self.parts = tuple(parts)
        self.columns = frozenset(columns)

    def __repr__(self) -> str:
        return f"TamisPartition({list(self.parts)})"


def _options(options: Dict[str, str]) -> Tuple[str, Dict[str, str], Dict[str, str]]:
    """The path, storage options and tamis options of a source's options (case-insensitive
    keys, as Spark passes them)."""
    lowered = {str(k).lower(): str(v) for k, v in options.items()}
    path = lowered.get("path")
    if not path:
        raise InvalidArgumentError(
            "invalid argument: the tamis source needs a path: spark.read.format('tamis').load(path)")
    storage = {k[len("storage."):]: v for k, v in options.items()
               if str(k).lower().startswith("storage.")}
    rest = {k: v for k, v in lowered.items() if not k.startswith("storage.")}
    unknown = sorted(set(rest) - _KNOWN_OPTIONS)
    if unknown:
        raise InvalidArgumentError(
            f"invalid argument: unknown tamis source option(s) {', '.join(unknown)} (columns, "
            "maxPartitionBytes, minPartitions, threads, versionAsOf, timestampAsOf, tableFormat, "
            "storage.<key>)")
    return path, storage, rest


def _positive(rest: Dict[str, str], key: str, default: int) -> int:
    text = rest.get(key.lower())
    if text is None:
        return default
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n <= 0:
        raise InvalidArgumentError(f"invalid argument: option {key} must be a positive integer, "
                                   f"not '{text}'")
    return n


class TamisDataSource(DataSource):
    """``spark.read.format("tamis")``: Parquet through tamis, Spark filtering above it."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def _dataset(self) -> Tuple[str, Dict[str, str], Dict[str, str], Dataset]:
        path, storage, rest = _options(dict(self.options))
        version = rest.get("versionasof")
        if version is not None and not version.strip().isdigit():
            raise InvalidArgumentError(
                f"invalid argument: versionAsOf must be a version number, not '{version}'")
        return path, storage, rest, Dataset(
            path, storage_options=storage or None,
            table_version=None if version is None else int(version),
            table_timestamp=rest.get("timestampasof"), table_format=rest.get("tableformat"))

    def schema(self) -> StructType:
        path, _, rest, ds = self._dataset()
        schema = spark_schema(ds.schema, path, ds._native.layout()[3])
        columns = rest.get("columns")
        if columns is None:
            return schema
        by_name = {f.name: f for f in schema.fields}
        names = [c.strip() for c in columns.split(",") if c.strip()]
        missing = [c for c in names if c not in by_name]
        if missing or not names:
            raise InvalidArgumentError(
                f"invalid argument: {path}: option columns names no column of the dataset: "
                f"{', '.join(missing) or columns!r}")
        return StructType([by_name[c] for c in names])

    def reader(self, schema: StructType) -> "TamisReader":
        return TamisReader(self, schema)


class PushdownDataSource(TamisDataSource):
    """``spark.read.format("tamis")`` taking Spark's filters into the scan."""

    def reader(self, schema: StructType) -> "TamisReader":
        return PushdownReader(self, schema)


class TamisReader(DataSourceReader):
    """Plans partitions on the driver (from footers read once) and scans them on executors."""

    def __init__(self, source: TamisDataSource, schema: StructType) -> None:
        path, storage, rest, ds = source._dataset()
        self.path = path
        self.storage = storage
        self.threads = _positive(rest, "threads", 1)
        self.batch_size = _positive(rest, "batchSize", _DEFAULT_BATCH_ROWS)
        self.partition_bytes = _positive(rest, "maxPartitionBytes", _DEFAULT_PARTITION_BYTES)
        self.min_partitions = _positive(rest, "minPartitions", os.cpu_count() or 1)
        self.root, self.partition_types, self._files, int96 = ds._native.layout()
        # A table's tasks open its snapshot again: its deletes, column names, partition values.
        self.table = ds._native.table()
        arrow = ds.schema
        dataset_types = {f.name: f.dataType for f in spark_schema(arrow, path, int96).fields}
        # Columns finer than Spark's microseconds: tamis would compare the nanoseconds that
        # the batches handed to Spark no longer hold.
        self.nanosecond = {f.name for f in arrow
                           if pa.types.is_timestamp(f.type) and f.type.unit == "ns"}
        unknown = [f.name for f in schema.fields if f.name not in dataset_types]
        if unknown:
            raise InvalidArgumentError(
                f"invalid argument: {path}: the schema names columns the dataset does not "
                f"have: {', '.join(unknown)}")
        for f in schema.fields:
            if f.dataType != dataset_types[f.name]:
                raise InvalidArgumentError(
                    f"invalid argument: {path}: the schema gives column '{f.name}' type "
                    f"{f.dataType.simpleString()}; the dataset has "
                    f"{dataset_types[f.name].simpleString()}")
        self.schema = schema
        self.types = dataset_types
        self._dataset = ds
        self.conjuncts: List[Tuple[str, Any]] = []

    def __getstate__(self) -> Dict[str, Any]:
        # Executors get their files from their partitions, not the whole layout.
        state = dict(self.__dict__)
        state["_files"] = None
        state["_dataset"] = None
        return state

    def _where(self) -> Optional[str]:
        return _conjunction([sql for sql, _ in self.conjuncts])

    def partitions(self) -> List[TamisPartition]:
        """Contiguous row-group ranges of about equal compressed bytes: as many as
        ``maxPartitionBytes`` needs, at least ``minPartitions``, at most one per row group."""
        # Row groups the pushed filters rule out by partition values or footer statistics
        # get no task.
        where = self._where()
        left = None
        if where is not None and self._dataset is not None:
            left = {(loc, i) for loc, groups in self._dataset._native.row_groups_left(where)
                    for i in groups}
        groups = [(location, size, names, i, nbytes)
                  for location, size, names, sizes in (self._files or [])
                  for i, (_, nbytes) in enumerate(sizes)
                  if left is None or (location, i) in left]
        if not groups:
            return []
        total = sum(g[4] for g in groups)
        wanted = max(-(-total // self.partition_bytes), self.min_partitions)
        count = max(1, min(wanted, len(groups)))
        chunks: List[list] = []
        start = 0
        for k in range(count, 0, -1):
            # The rest split evenly over the k partitions left; each keeps at least one group.
            target = sum(g[4] for g in groups[start:]) / k
            end, filled = start, 0
            while end < len(groups) - (k - 1) and (
                    end == start or k == 1 or filled + groups[end][4] / 2 <= target):
                filled += groups[end][4]
                end += 1
            chunks.append(groups[start:end])
            start = end
        out = []
        for chunk in chunks:
            parts: List[Tuple[str, int, int, int]] = []
            columns: set = set()
            for location, size, names, i, _ in chunk:
                if parts and parts[-1][0] == location and parts[-1][3] == i:
                    parts[-1] = (location, size, parts[-1][2], i + 1)
                else:
                    parts.append((location, size, i, i + 1))
                    columns.update(names)
            out.append(TamisPartition(parts, frozenset(columns)))
        return out

    def read(self, partition: TamisPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, TamisPartition):
            return  # Spark's one empty partition, when every row group was pruned
        target = _arrow_schema(self.schema)
        present = set(partition.columns) | {name for name, _ in self.partition_types}
        where = []
        for sql, f in self.conjuncts:
            if all(c in present for c in _columns_of(f)):
                where.append(sql)
            elif _on_null(f) is not True:
                return  # the column is NULL in all these files: no row passes
        wanted = [f.name for f in self.schema.fields if f.name in present]
        columns = wanted or sorted(present)[:1]
        options = ScanOptions(where=_conjunction(where), columns=columns, threads=self.threads,
                              batch_size=self.batch_size,
                              storage_options=self.storage or None)._native()
        options["row_groups"] = [(loc, first, end) for loc, _, first, end in partition.parts]
        if self.table is None:
            options["partition_types"] = list(self.partition_types) or None
        # A file with two ranges here is named twice; `scan_files` opens it once.
        files = [(loc, size) for loc, size, _, _ in partition.parts]
        stream = _tamis.scan_files(self.root, files, options, self.table)
        for batch in _reader(stream):
            yield _conform(batch, target)


class PushdownReader(TamisReader):
    def pushFilters(self, filters: List[Any]) -> Iterator[Any]:
        for f in filters:
            sql = to_sql(f, self.types, frozenset(self.nanosecond))
            if sql is not None and not self._binds(sql):
                sql = None
            if sql is None:
                yield f
            else:
                self.conjuncts.append((sql, f))

    def _binds(self, sql: str) -> bool:
        """Whether tamis takes the filter on this dataset (an INT96 column, say, it refuses):
        planning it reads no data."""
        try:
            self._dataset._native.row_groups_left(sql)
        except (InvalidArgumentError, UnsupportedError):
            return False
        return True


def _arrow_schema(schema: StructType) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def _conform(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """The batch with the columns and exact Arrow types Spark expects (columns the files lack
    are NULL; nanosecond timestamps are truncated to Spark's microseconds, as Spark does)."""
    n = batch.num_rows
    arrays = []
    for field in target:
        i = batch.schema.get_field_index(field.name)
        if i < 0:
            arrays.append(pa.nulls(n, field.type))
            continue
        column = batch.column(i)
        if column.type != field.type:
            lossy = pa.types.is_timestamp(field.type) or pa.types.is_list(field.type)
            column = pc.cast(column, field.type, safe=not lossy)
        arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, schema=target)


__all__ = ["jar_path", "spark_conf", "register", "TamisDataSource", "PushdownDataSource", "spark_schema", "spark_type",
           "to_sql", "FORMAT"]
