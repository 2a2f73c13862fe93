"""Interoperability of `tamis.optimize` output: pyarrow and DuckDB read it with identical rows
(and DuckDB, which reads Parquet Bloom filters, answers equality lookups exactly), tamis scans
agree with pyarrow for every pruning mode, and bad input leaves no file behind."""

from __future__ import annotations

import datetime as dt
import math
import random
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import tamis

duckdb = pytest.importorskip("duckdb")

ROWS = 6_000


def _table(seed: int, rows: int = ROWS, base: int = 0) -> pa.Table:
    rnd = random.Random(seed)

    def maybe(v):
        return None if rnd.random() < 0.05 else v

    def flt():
        r = rnd.random()
        if r < 0.1:
            return 0.0
        if r < 0.2:
            return -0.0
        if r < 0.25:
            return float("nan")
        return rnd.randrange(-400, 400) / 8

    schema = pa.schema(
        [
            ("i32", pa.int32()),
            ("i64", pa.int64()),
            ("f32", pa.float32()),
            ("f64", pa.float64()),
            ("s", pa.string()),
            ("day", pa.date32()),
            ("ts", pa.timestamp("us", tz="UTC")),
            ("dec", pa.decimal128(12, 3)),
            ("flag", pa.bool_()),
        ],
        metadata={"origin": "test_optimize"},
    )
    return pa.table(
        {
            "i32": pa.array([maybe(rnd.randrange(-5000, 5000) * 2) for _ in range(rows)], pa.int32()),
            "i64": pa.array([(base + i) * 3 for i in range(rows)], pa.int64()),
            "f32": pa.array([maybe(flt()) for _ in range(rows)], pa.float32()),
            "f64": pa.array([maybe(flt()) for _ in range(rows)], pa.float64()),
            # 124-character strings, as in paper 002, with a sortable prefix.
            "s": pa.array(
                [maybe(f"k{rnd.randrange(0, 3000) * 2:06d}".ljust(124, "x")) for _ in range(rows)]
            ),
            "day": pa.array(
                [maybe(dt.date(2000, 1, 1) + dt.timedelta(days=rnd.randrange(0, 9000)))
                 for _ in range(rows)], pa.date32()),
            "ts": pa.array([maybe(rnd.randrange(0, 1 << 50)) for _ in range(rows)],
                           pa.timestamp("us", tz="UTC")),
            "dec": pa.array([maybe(Decimal(rnd.randrange(-10**8, 10**8)) / 1000)
                             for _ in range(rows)], pa.decimal128(12, 3)),
            "flag": pa.array([maybe(rnd.random() < 0.5) for _ in range(rows)], pa.bool_()),
        },
        schema=schema,
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("optimize")
    a, b = _table(1), _table(2, 4_000, ROWS)
    pa_, pb = d / "a.parquet", d / "b.parquet"
    pq.write_table(a, pa_, row_group_size=2_500)
    pq.write_table(b, pb, row_group_size=2_500)
    out = d / "opt.parquet"
    report = tamis.optimize(
        [pa_, pb], out, sort_by=["s", "i64"],
        bloom_filters=["i32:0.01", "i64", "f32", "f64", "s:0.001", "day", "ts", "dec"],
        page_rows=500, row_group_rows=3_000, memory_limit=200_000,
    )
    return d, pa.concat_tables([a, b]), out, report


def _key(v):
    if isinstance(v, float):
        return ("float", "nan" if math.isnan(v) else repr(v))  # keeps the sign of zero
    return (type(v).__name__, repr(v))


def _rows(table: pa.Table):
    return [tuple(_key(v) for v in row.values()) for row in table.to_pylist()]


def _expected_sorted(table: pa.Table) -> pa.Table:
    idx = pc.sort_indices(table, sort_keys=[("s", "ascending", "at_end"),
                                            ("i64", "ascending", "at_end")])
    return table.take(idx)


def test_pyarrow_reads_identical_rows_schema_and_metadata(files):
    _, source, out, report = files
    got = pq.read_table(out)
    assert got.schema.equals(source.schema, check_metadata=True)
    assert _rows(got) == _rows(_expected_sorted(source))
    assert report["rows"] == source.num_rows
    assert report["row_groups_after"] == math.ceil(source.num_rows / 3_000)
    meta = pq.ParquetFile(out).metadata
    for rg in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            col = meta.row_group(rg).column(c)
            assert col.has_column_index and col.has_offset_index, (rg, c)
    blooms = {c["name"]: c["bloom"] for c in report["columns"] if c["bloom"]}
    assert set(blooms) == {"i32", "i64", "f32", "f64", "s", "day", "ts", "dec"}
    for name, b in blooms.items():
        assert b["filters"] == meta.num_row_groups and b["bytes"] > 0, name


def test_duckdb_reads_identical_rows(files):
    _, source, out, _ = files
    con = duckdb.connect()
    con.execute("SET threads = 1")
    # Timestamps as epoch microseconds: no time-zone conversion on either side.
    got = con.execute(
        "SELECT i32, i64, f32, f64, s, day, epoch_us(ts), dec, flag "
        f"FROM read_parquet('{out}')"
    ).fetchall()
    expect = _expected_sorted(source)
    expect = expect.set_column(6, "ts", pc.cast(expect.column("ts"), pa.int64()))
    assert [tuple(_key(v) for v in row) for row in got] == _rows(expect)


def _sql_literal(col: str, v) -> str:
    if v is None:
        return "NULL"
    if col == "s":
        return f"'{v}'"
    if col == "day":
        return f"DATE '{v.isoformat()}'"
    if col == "ts":
        return f"TIMESTAMP '{v.strftime('%Y-%m-%d %H:%M:%S.%f')}'"
    if isinstance(v, float):
        return "CAST('NaN' AS DOUBLE)" if math.isnan(v) else repr(v)
    return str(v)


def _probes(source: pa.Table, col: str, rnd: random.Random):
    values = [v for v in source.column(col).to_pylist() if v is not None]
    present = rnd.sample(values, 12)
    absent = {
        "i32": [1, 3, 10_001, -99_999],  # odd: in gaps, and outside the range
        "i64": [1, 2, 10**12],
        "f32": [0.3, 1e30],
        "f64": [0.3, -1e300],
        "s": ["k000001".ljust(124, "x"), "zzz", ""],
        "day": [dt.date(1990, 1, 1)],
        "ts": [],
        "dec": [Decimal("0.0005") * 2 + Decimal("12345678.001")],
    }[col]
    extra = [0.0, -0.0, float("nan")] if col in ("f32", "f64") else []
    return present + absent + extra


@pytest.mark.parametrize("col", ["i32", "i64", "f32", "f64", "s", "day", "ts", "dec"])
def test_lookups_agree_across_engines_and_pruning_modes(files, col):
    """Equality lookups on the optimized file: tamis (every pruning mode) and DuckDB (which uses
    the Bloom filters) return the oracle's rows — no false negatives, floats included (tamis
    semantics: -0.0 = 0.0, NaN = NaN)."""
    _, source, out, _ = files
    rnd = random.Random(col)
    column = source.column(col).to_pylist()
    con = duckdb.connect()
    modes = [[], ["page_index"], ["bloom_filters"], ["statistics", "page_index"],
             ["statistics", "bloom_filters", "page_index"]]
    for v in _probes(source, col, rnd):
        if col == "f32" and isinstance(v, float) and not math.isnan(v) and v != 0:
            v = float(pa.scalar(v, pa.float32()).as_py())  # an exactly representable literal
        if isinstance(v, float) and math.isnan(v):
            expect = sum(1 for x in column if x is not None and math.isnan(x))
        else:
            expect = sum(1 for x in column if x is not None and x == v)
        where = f"{col} = {_sql_literal(col, v)}"
        for disabled in modes:
            got = tamis.scan(out, where=where, columns=["i64"], disable_pruning=disabled, threads=1)
            assert got.num_rows == expect, (where, disabled)
        if not (isinstance(v, float) and (math.isnan(v) or v == 0)):
            # DuckDB compares floats in total order (-0.0 < 0.0 there): only unambiguous values.
            n = con.execute(f"SELECT count(*) FROM read_parquet('{out}') WHERE {where}").fetchone()[0]
            assert n == expect, ("duckdb", where)


def test_unknown_disable_pruning_name_is_an_error(files):
    _, _, out, _ = files
    with pytest.raises(tamis.InvalidArgumentError, match="nope"):
        tamis.scan(out, where="i32 = 2", disable_pruning=["nope"])


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        (dict(sort_by=["nope"]), "nope"),
        (dict(bloom_filters=["ghost"]), "ghost"),
        (dict(bloom_filters=["i32:0"]), "i32:0"),
        (dict(bloom_filters=["i32:1.0"]), "i32:1.0"),
        (dict(bloom_filters=["flag"]), "flag"),
    ],
)
def test_bad_arguments_raise_and_leave_nothing(files, tmp_path, kwargs, needle):
    d, _, _, _ = files
    out = tmp_path / "never.parquet"
    with pytest.raises(tamis.InvalidArgumentError, match=needle):
        tamis.optimize([d / "a.parquet"], out, **kwargs)
    assert list(tmp_path.iterdir()) == []


def test_mismatched_and_unreadable_inputs(files, tmp_path):
    d, _, _, _ = files
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"i32": pa.array([1], pa.int64())}), other)
    out = tmp_path / "never.parquet"
    with pytest.raises(tamis.InvalidArgumentError, match="other.parquet"):
        tamis.optimize([d / "a.parquet", other], out)
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"PAR1 nothing")
    with pytest.raises(tamis.CorruptFileError, match="junk.parquet"):
        tamis.optimize([junk], out)
    with pytest.raises(FileNotFoundError):
        tamis.optimize([tmp_path / "missing.parquet"], out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junk.parquet", "other.parquet"]
