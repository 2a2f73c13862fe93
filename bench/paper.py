"""Suites reproducing the experiments of the selection-pushdown paper (Li, Lu, Chandramouli,
SIGMOD 2023; issue 4): ``m2`` (Fig. 13), ``q6`` (Fig. 14), ``order`` (Fig. 15), ``rle`` (Fig. 17).

Every file is generated here with numpy and pyarrow (or derived from ``tamis gen tpch``), written
uncompressed and dictionary-encoded as in the paper (default writer settings: 1 MiB pages, 1 MiB
dictionary limit; row groups of 1 Mi rows as in the other suites, the paper's were 64 MB), with a
page index. Generators are deterministic (seeded) and stream in row groups, so SF10 and 8 M-row
files need little memory. The pure generators (``filter_codes``, ``with_nulls``, ``list_column``,
``run_codes``) are tested in ``bench/tests/test_paper.py``.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
from decimal import Decimal
from typing import Callable, Iterator, List, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engines import Query
from pred import Pred, between, col_cmp

SEED = 20261122
ROW_GROUP = 1 << 20


def _writer(path: str, schema: pa.Schema) -> pq.ParquetWriter:
    return pq.ParquetWriter(
        path,
        schema,
        use_dictionary=True,
        compression="none",
        write_page_index=True,
        store_decimal_as_integer=True,  # INT32/INT64 decimals, as `tamis gen tpch` writes them
    )


def _write_chunks(path: str, chunks: Iterator[pa.Table]) -> None:
    """Writes the tables as row groups of ``path`` (atomically: a crash leaves no partial file)."""
    tmp = path + ".tmp"
    writer = None
    try:
        for table in chunks:
            if writer is None:
                writer = _writer(tmp, table.schema)
            writer.write_table(table, row_group_size=ROW_GROUP)
    finally:
        if writer is not None:
            writer.close()
    os.replace(tmp, path)


def _chunk_sizes(rows: int) -> Iterator[int]:
    for start in range(0, rows, ROW_GROUP):
        yield min(ROW_GROUP, rows - start)


# ---- m2: scan micro-benchmark (Fig. 13) -------------------------------------------------------

M2_COLUMNS = 20
M2_FILTERS = ("a1", "a2")  # a1 < C1 AND a2 < C2, 25 % each
M2_PROJECTIONS = ("a10", "a11", "a12")
M2_SELECTIVITY = 0.25
M2_BIT_WIDTHS = range(1, 17)
M2_DEFAULT_K = 5
M2_TYPES = ("int64", "int32", "float", "double", "byte array")


def domain(kind: str, k: int, rng: np.random.Generator) -> pa.Array:
    """2^k distinct values of a type, sorted ascending (so ``value < domain[c]`` iff ``code < c``).
    Floats are integers + 0.5, exactly representable, so a literal is the same in every engine."""
    size = 1 << k
    if kind == "byte array":
        from suites import _random_strings

        return pa.array(_random_strings(rng, size, 12), pa.string())
    bits = {"int32": 30, "int64": 40, "float": 22, "double": 40}[kind]
    values = np.unique(rng.integers(0, 1 << bits, size * 2))
    while len(values) < size:  # practically never: 2^(k+1) draws from >= 2^22
        values = np.unique(np.concatenate([values, rng.integers(0, 1 << bits, size)]))
    values = np.sort(rng.choice(values, size, replace=False))
    if kind == "int32":
        return pa.array(values.astype(np.int32))
    if kind == "int64":
        return pa.array(values.astype(np.int64))
    return pa.array(values + 0.5, pa.float32() if kind == "float" else pa.float64())


def filter_codes(rng: np.random.Generator, k: int, n: int, selectivity: float) -> tuple:
    """Codes in [0, 2^k) with P(code < cut) = ``selectivity``; returns (codes, cut). Uniform over
    all 2^k codes whenever 2^k * selectivity is a whole number (k >= 2 at 25 %); at k = 1 the
    two codes get 25 % / 75 %."""
    size = 1 << k
    cut = max(1, round(size * selectivity))
    low = rng.random(n) < selectivity
    codes = np.where(low, rng.integers(0, cut, n), rng.integers(cut, size, n))
    return codes.astype(np.int32), cut


def _m2_chunks(kind: str, k: int, rows: int, rng: np.random.Generator, values: pa.Array) -> Iterator[pa.Table]:
    for n in _chunk_sizes(rows):
        columns = {}
        for i in range(1, M2_COLUMNS + 1):
            name = f"a{i}"
            if name in M2_FILTERS:
                codes, _ = filter_codes(rng, k, n, M2_SELECTIVITY)
            else:
                codes = rng.integers(0, 1 << k, n).astype(np.int32)
            columns[name] = pa.DictionaryArray.from_arrays(pa.array(codes), values).dictionary_decode()
        yield pa.table(columns)


def m2(data_dir: str, args) -> List[Query]:
    rows = args.rows or 8_000_000
    cases = [("int64", k) for k in M2_BIT_WIDTHS] + [(t, M2_DEFAULT_K) for t in M2_TYPES if t != "int64"]
    out = []
    for kind, k in cases:
        slug = kind.replace(" ", "")
        path = os.path.join(data_dir, f"m2-{slug}-k{k}-{rows}.parquet")
        rng = np.random.default_rng(SEED + 100 * k + M2_TYPES.index(kind))
        values = domain(kind, k, rng)
        if not os.path.exists(path):
            _write_chunks(path, _m2_chunks(kind, k, rows, rng, values))
        cut = max(1, round((1 << k) * M2_SELECTIVITY))
        literal = values[cut].as_py() if cut < len(values) else None
        where = col_cmp(M2_FILTERS[0], "<", literal) & col_cmp(M2_FILTERS[1], "<", literal)
        if kind == "int64":
            out.append(Query(f"int64, k = {k}", path, where, list(M2_PROJECTIONS),
                             group="bit width k (int64)", x=k))
        else:
            out.append(Query(f"{kind}, k = {k}", path, where, list(M2_PROJECTIONS)))
    return out


# ---- q6: TPC-H Q6 on lineitem variants (Fig. 14) -----------------------------------------------

NULL_FRACTION = 0.125
LIST_MAX = 8  # per-record list length uniform in [0, 8], mean 4
LIST_COLUMNS = ("l_ilist", "l_dlist")

Q6_FILTERS = {
    "l_shipdate": col_cmp("l_shipdate", ">=", dt.date(1994, 1, 1)) & col_cmp("l_shipdate", "<", dt.date(1995, 1, 1)),
    "l_discount": between("l_discount", Decimal("0.05"), Decimal("0.07")),
    "l_quantity": col_cmp("l_quantity", "<", Decimal("24")),
}
Q6_PROJECTIONS = ["l_extendedprice", "l_discount"]


def q6_where(order) -> Pred:
    """Q6's conjunction with its three column filters in the given order."""
    parts = [Q6_FILTERS[c] for c in order]
    where = parts[0]
    for p in parts[1:]:
        where = where & p
    return where


def with_nulls(table: pa.Table, fraction: float, rng: np.random.Generator) -> pa.Table:
    """Every column with a random ``fraction`` of its values set to null (independently per
    column), fields made nullable."""
    columns, fields = [], []
    for field, column in zip(table.schema, table.columns):
        mask = pa.array(rng.random(table.num_rows) < fraction)
        columns.append(pc.if_else(mask, pa.scalar(None, field.type), column))
        fields.append(field.with_nullable(True))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def list_column(rng: np.random.Generator, n: int, values: np.ndarray, max_len: int = LIST_MAX) -> pa.Array:
    """A list column of ``n`` records, lengths uniform in [0, max_len], elements drawn from
    ``values`` (a small domain, so the elements are dictionary-encoded)."""
    lengths = rng.integers(0, max_len + 1, n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    elements = values[rng.integers(0, len(values), int(offsets[-1]))]
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(elements))


def with_lists(table: pa.Table, rng: np.random.Generator) -> pa.Table:
    ints = np.arange(1000, dtype=np.int64) * 7919
    doubles = np.round(np.arange(1000) * 0.37 + 0.5, 2)
    n = table.num_rows
    return (table.append_column(pa.field(LIST_COLUMNS[0], pa.list_(pa.int64()), nullable=False),
                                list_column(rng, n, ints))
                 .append_column(pa.field(LIST_COLUMNS[1], pa.list_(pa.float64()), nullable=False),
                                list_column(rng, n, doubles)))


def _derive(source: str, path: str, transform: Optional[Callable[[pa.Table, np.random.Generator], pa.Table]],
            seed: int) -> None:
    """Rewrites ``source`` row group by row group, uncompressed, through ``transform``."""
    if os.path.exists(path):
        return
    rng = np.random.default_rng(seed)
    src = pq.ParquetFile(source)

    def chunks():
        for batch in src.iter_batches(batch_size=ROW_GROUP):
            table = pa.Table.from_batches([batch])
            yield transform(table, rng) if transform else table

    _write_chunks(path, chunks())


def lineitem_variants(data_dir: str, args) -> dict:
    """The generated lineitem (ZSTD, as `tamis gen tpch` writes it) and three uncompressed
    variants: as is, 12.5 % nulls in every column, and two extra list columns."""
    from suites import tpch_lineitem

    generated = tpch_lineitem(data_dir, args)
    folder = os.path.dirname(generated)
    variants = {"generated": generated}
    for name, transform, seed in (
        ("uncompressed", None, SEED),
        ("nulls", lambda t, rng: with_nulls(t, NULL_FRACTION, rng), SEED + 1),
        ("lists", with_lists, SEED + 2),
    ):
        path = os.path.join(folder, f"lineitem-{name}.parquet")
        _derive(generated, path, transform, seed)
        variants[name] = path
    return variants


def q6(data_dir: str, args) -> List[Query]:
    files = lineitem_variants(data_dir, args)
    where = q6_where(["l_shipdate", "l_discount", "l_quantity"])
    return [
        Query("Q6, as generated (ZSTD, 20k-row pages)", files["generated"], where, Q6_PROJECTIONS),
        Query("Q6 (M3, Fig. 14a): uncompressed", files["uncompressed"], where, Q6_PROJECTIONS),
        Query("Q6 (M4, Fig. 14b): 12.5% nulls", files["nulls"], where, Q6_PROJECTIONS),
        Query("Q6 (M5, Fig. 14c): two list columns", files["lists"], where, list(LIST_COLUMNS),
              skip_on_error=True),
    ]


# ---- order: the six filter orders of Q6 (Fig. 15) -------------------------------------------------

SHORT = {"l_shipdate": "shipdate", "l_discount": "discount", "l_quantity": "quantity"}


def order(data_dir: str, args) -> List[Query]:
    path = lineitem_variants(data_dir, args)["uncompressed"]
    out = []
    for perm in itertools.permutations(["l_shipdate", "l_discount", "l_quantity"]):
        out.append(Query(f"written: {', '.join(SHORT[c] for c in perm)}", path, q6_where(perm),
                         Q6_PROJECTIONS, tamis_options={"filter_order": "written"}))
    worst = ["l_quantity", "l_discount", "l_shipdate"]  # Eq. (1)'s costliest order
    out.append(Query(f"auto (written: {', '.join(SHORT[c] for c in worst)})", path, q6_where(worst),
                     Q6_PROJECTIONS, tamis_options={"filter_order": "auto"}))
    return out


# ---- rle: RLE runs and mixed runs (Fig. 17) ---------------------------------------------------

RLE_RUN = (50, 150)  # run lengths uniform in this range, mean 100 (both kinds, Fig. 17b)
RLE_DISTINCT = 256  # 8-bit codes in the bit-packed runs
RLE_FILTER_DOMAIN = 64
RLE_SELECTIONS = (1, 2, 4, 8, 16, 32, 64)  # 1/1 ... 1/64 of the rows selected
RLE_MIXES = (0, 25, 50, 75, 100)  # % of values in RLE runs
RLE_MIX_SELECTION = 8  # Fig. 17b at 1/8 selected


def run_codes(rng: np.random.Generator, n: int, rle_fraction: float, distinct: int = RLE_DISTINCT,
              run: tuple = RLE_RUN) -> np.ndarray:
    """``n`` codes in segments of uniform length ``run``; each segment is, with probability
    ``rle_fraction``, one code repeated (an RLE run once written), otherwise independent random
    codes (bit-packed runs; a repeat of 8 happens with probability distinct^-7)."""
    lengths = rng.integers(run[0], run[1] + 1, n // run[0] + 2)
    segment = np.repeat(np.arange(len(lengths)), lengths)[:n]
    repeated = rng.random(len(lengths)) < rle_fraction
    seg_code = rng.integers(0, distinct, len(lengths))
    return np.where(repeated[segment], seg_code[segment], rng.integers(0, distinct, n)).astype(np.int32)


def rle_fraction_of(codes: np.ndarray, min_run: int = 8) -> float:
    """Fraction of values in runs of at least ``min_run`` equal consecutive codes (what a
    Parquet writer can emit as RLE runs)."""
    if len(codes) == 0:
        return 0.0
    starts = np.flatnonzero(np.concatenate([[True], codes[1:] != codes[:-1]]))
    lengths = np.diff(np.append(starts, len(codes)))
    return float(lengths[lengths >= min_run].sum()) / len(codes)


def _rle_chunks(rows: int, mix: int) -> Iterator[pa.Table]:
    rng_f = np.random.default_rng(SEED + 7)  # the filter column is the same in every file
    rng_r = np.random.default_rng(SEED + 1000 + mix)
    values = pa.array(np.sort(np.random.default_rng(SEED + 8).choice(1 << 40, RLE_DISTINCT, replace=False)),
                      pa.int64())
    for n in _chunk_sizes(rows):
        f = rng_f.integers(0, RLE_FILTER_DOMAIN, n)
        r = pa.DictionaryArray.from_arrays(pa.array(run_codes(rng_r, n, mix / 100)), values).dictionary_decode()
        yield pa.table({"f": pa.array(f, pa.int64()), "r": r})


def rle(data_dir: str, args) -> List[Query]:
    rows = args.rows or 8_000_000
    paths = {}
    for mix in RLE_MIXES:
        paths[mix] = os.path.join(data_dir, f"rle-mix{mix}-{rows}.parquet")
        if not os.path.exists(paths[mix]):
            _write_chunks(paths[mix], _rle_chunks(rows, mix))
    out = []
    for s in RLE_SELECTIONS:
        out.append(Query(f"RLE runs (Fig. 17a), 1/{s} selected", paths[100],
                         col_cmp("f", "<", RLE_FILTER_DOMAIN // s), ["r"],
                         group="selected: 1/x of the rows (RLE runs)", x=s))
    for mix in RLE_MIXES:
        out.append(Query(f"{mix}% of values in RLE runs (Fig. 17b), 1/{RLE_MIX_SELECTION} selected", paths[mix],
                         col_cmp("f", "<", RLE_FILTER_DOMAIN // RLE_MIX_SELECTION), ["r"],
                         group=f"% of values in RLE runs (1/{RLE_MIX_SELECTION} selected)", x=mix))
    return out
