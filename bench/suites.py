"""Benchmark suites: the files each one needs (generated, never downloaded) and its queries.

Generated files are written once into the data directory and reused; their names carry their
size so a different ``--rows`` never reuses a stale file.
"""

from __future__ import annotations

import datetime as dt
import os
import string
import subprocess
from decimal import Decimal
from typing import Callable, Dict, List

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import lookup
import paper
from engines import Query
from pred import between, col_cmp, cols, isin, like

SEED = 20261122


def _write(table: pa.Table, path: str, dictionary) -> None:
    tmp = path + ".tmp"
    pq.write_table(
        table,
        tmp,
        use_dictionary=dictionary,
        write_page_index=True,
        row_group_size=1 << 20,
        compression="snappy",
    )
    os.replace(tmp, path)


def _random_strings(rng: np.random.Generator, count: int, length: int) -> np.ndarray:
    """`count` distinct lowercase strings of `length` characters, sorted."""
    letters = np.frombuffer(string.ascii_lowercase.encode(), dtype=np.uint8)
    out: set = set()
    while len(out) < count:
        codes = letters[rng.integers(0, 26, size=(count - len(out)) * 2 * length)]
        raw = codes.reshape(-1, length).tobytes()
        out.update(raw[i * length : (i + 1) * length].decode() for i in range(len(raw) // length))
    return np.array(sorted(out)[:count], dtype=object)


# ---- tpch --------------------------------------------------------------------------------------


def tpch_lineitem(data_dir: str, args) -> str:
    """lineitem.parquet at ``--sf``, generated once by `tamis gen tpch`."""
    sf = args.sf
    folder = os.path.join(data_dir, f"tpch-sf{sf:g}")
    path = os.path.join(folder, "lineitem.parquet")
    if not os.path.exists(path):
        subprocess.run(
            [args.tamis_cli, "gen", "tpch", "--scale-factor", str(sf), "--output", folder,
             "--tables", "lineitem"],
            check=True,
        )
    return path


def tpch(data_dir: str, args) -> List[Query]:
    path = tpch_lineitem(data_dir, args)
    q6 = (
        col_cmp("l_shipdate", ">=", dt.date(1994, 1, 1))
        & col_cmp("l_shipdate", "<", dt.date(1995, 1, 1))
        & between("l_discount", Decimal("0.05"), Decimal("0.07"))
        & col_cmp("l_quantity", "<", Decimal("24"))
    )
    return [
        Query("Q6 filter", path, q6, ["l_extendedprice", "l_discount"]),
        Query("Q1 filter (98.6%)", path, col_cmp("l_shipdate", "<=", dt.date(1998, 9, 2)),
              ["l_returnflag", "l_linestatus", "l_quantity", "l_extendedprice"]),
        Query("l_orderkey = 3000000 (sorted), all columns", path,
              col_cmp("l_orderkey", "=", 3000000), None),
        Query("l_partkey = 100000 (unsorted)", path, col_cmp("l_partkey", "=", 100000),
              ["l_orderkey", "l_partkey", "l_quantity"]),
        Query("l_shipmode = 'AIR' AND l_quantity < 5", path,
              col_cmp("l_shipmode", "=", "AIR") & col_cmp("l_quantity", "<", Decimal("5")),
              ["l_orderkey", "l_extendedprice"]),
        Query("l_comment LIKE '%special%requests%'", path,
              like("l_comment", "%special%requests%"), ["l_orderkey"]),
        Query("l_suppkey IN (5 values)", path,
              isin("l_suppkey", [17, 1234, 4321, 7777, 9999]), ["l_orderkey", "l_suppkey"]),
        # The lineitem scans of Q12, Q14 and Q19 (their filters on lineitem, the columns the
        # rest of the query needs).
        Query("Q12 scan (l_commitdate < l_receiptdate …)", path,
              isin("l_shipmode", ["MAIL", "SHIP"])
              & cols("l_commitdate", "<", "l_receiptdate")
              & cols("l_shipdate", "<", "l_commitdate")
              & col_cmp("l_receiptdate", ">=", dt.date(1994, 1, 1))
              & col_cmp("l_receiptdate", "<", dt.date(1995, 1, 1)),
              ["l_orderkey", "l_shipmode"]),
        Query("Q14 scan", path,
              col_cmp("l_shipdate", ">=", dt.date(1995, 9, 1))
              & col_cmp("l_shipdate", "<", dt.date(1995, 10, 1)),
              ["l_partkey", "l_extendedprice", "l_discount"]),
        Query("Q19 scan", path,
              isin("l_shipmode", ["AIR", "AIR REG"])
              & col_cmp("l_shipinstruct", "=", "DELIVER IN PERSON")
              & (between("l_quantity", Decimal("1"), Decimal("11"))
                 | between("l_quantity", Decimal("10"), Decimal("20"))
                 | between("l_quantity", Decimal("20"), Decimal("30"))),
              ["l_partkey", "l_quantity", "l_extendedprice", "l_discount"]),
    ]


# ---- selectivity -------------------------------------------------------------------------------

SELECTIVITIES = [0.0001, 0.001, 0.01, 0.1, 0.5, 1.0]
SEL_DOMAIN = 10_000


def selectivity(data_dir: str, args) -> List[Query]:
    rows = args.rows or 4_000_000
    paths = {}
    for layout in ("dict", "plain"):
        path = os.path.join(data_dir, f"selectivity-{layout}-{rows}.parquet")
        paths[layout] = path
        if not os.path.exists(path):
            rng = np.random.default_rng(SEED)
            table = pa.table({
                "k": pa.array(rng.integers(0, SEL_DOMAIN, rows), pa.int64()),
                "p1": pa.array(rng.integers(0, 1 << 40, rows), pa.int64()),
                "p2": pa.array(rng.random(rows), pa.float64()),
            })
            _write(table, path, ["k"] if layout == "dict" else False)
    out = []
    for layout, path in paths.items():
        for s in SELECTIVITIES:
            bound = max(1, round(s * SEL_DOMAIN))
            out.append(Query(f"{layout} k < {bound} ({s * 100:g}%)", path,
                             col_cmp("k", "<", bound), ["p1", "p2"]))
    return out


# ---- strings (Kudu, paper 003) -----------------------------------------------------------------

CARDINALITIES = [10, 1_000, 100_000, 1_000_000]


def strings(data_dir: str, args) -> List[Query]:
    rows = args.rows or 2_000_000
    out = []
    for card in CARDINALITIES:
        if card > rows:
            continue
        path = os.path.join(data_dir, f"strings-{card}-{rows}.parquet")
        rng = np.random.default_rng(SEED + card)
        domain = _random_strings(rng, card, 10)
        if not os.path.exists(path):
            picks = rng.integers(0, card, rows)
            table = pa.table({
                "id": pa.array(np.arange(rows), pa.int64()),
                "s": pa.array(domain[picks], pa.string()),
            })
            _write(table, path, True)  # pyarrow falls back to PLAIN past a 1 MiB dictionary
        present = domain[card // 3]
        median = domain[card // 2]
        out += [
            Query(f"card {card}: Empty", path, col_cmp("s", "=", "ZZZZZZZZZZ"), ["id"]),
            Query(f"card {card}: Equal", path, col_cmp("s", "=", str(present)), ["id"]),
            Query(f"card {card}: Half", path, col_cmp("s", "<", str(median)), ["id"]),
            Query(f"card {card}: All", path, col_cmp("s", ">=", "a"), ["id"]),
        ]
    return out


# ---- dictsize (paper 000, E-series) ------------------------------------------------------------

DICT_SIZES = [512, 2_048, 8_192, 32_768]


def dictsize(data_dir: str, args) -> List[Query]:
    rows = args.rows or 4_000_000
    out = []
    for size in DICT_SIZES:
        for kind in ("int", "string"):
            path = os.path.join(data_dir, f"dictsize-{kind}-{size}-{rows}.parquet")
            rng = np.random.default_rng(SEED + size)
            if kind == "int":
                domain = np.unique(rng.integers(0, 1 << 50, size * 2))[:size]
                rng.shuffle(domain)
            else:
                domain = _random_strings(rng, size, 12)
            if not os.path.exists(path):
                picks = rng.integers(0, size, rows)
                values = domain[picks]
                table = pa.table({
                    "id": pa.array(np.arange(rows), pa.int64()),
                    "v": pa.array(values, pa.int64() if kind == "int" else pa.string()),
                })
                _write(table, path, ["v"])
            needle = domain[size // 3]
            needle = int(needle) if kind == "int" else str(needle)
            out.append(Query(f"{kind}, dictionary {size}: v = one value", path,
                             col_cmp("v", "=", needle), ["id"]))
    return out


# ---- payload skipping (paper 000, E11/E12) -----------------------------------------------------

PAYLOAD_COLUMNS = 12
PAYLOAD_SELECTIVITIES = [0.00001, 0.0001, 0.001, 0.01, 0.1]
PAYLOAD_DOMAIN = 10_000_000


def payload(data_dir: str, args) -> List[Query]:
    """A filter column `k` and 12 int64 payload columns, all PLAIN and uncompressed (the paper's
    setting: skipping saves reading and copying, not decompressing), 1 MiB pages with the page
    index; `k < bound` at 0.001 % … 10 %, every payload column projected. `uniform`: k is random,
    so survivors spread over every page; `sorted`: k ascends, so they cluster in a few pages."""
    rows = args.rows or 1_000_000
    out = []
    for layout in ("uniform", "sorted"):
        path = os.path.join(data_dir, f"payload-{layout}-{rows}.parquet")
        if not os.path.exists(path):
            rng = np.random.default_rng(SEED + 7)
            k = rng.integers(0, PAYLOAD_DOMAIN, rows)
            if layout == "sorted":
                k = np.sort(k)
            cols = {"k": pa.array(k, pa.int64())}
            for c in range(PAYLOAD_COLUMNS):
                cols[f"p{c}"] = pa.array(rng.integers(0, 1 << 40, rows), pa.int64())
            tmp = path + ".tmp"
            pq.write_table(pa.table(cols), tmp, use_dictionary=False, compression="none",
                           write_page_index=True, row_group_size=1 << 20)
            os.replace(tmp, path)
        names = [f"p{c}" for c in range(PAYLOAD_COLUMNS)]
        for s in PAYLOAD_SELECTIVITIES:
            bound = max(1, round(s * PAYLOAD_DOMAIN))
            out.append(Query(f"{layout} k < {bound} ({s * 100:g}%)", path,
                             col_cmp("k", "<", bound), names))
    return out


SUITES: Dict[str, Callable[[str, object], List[Query]]] = {
    "tpch": tpch,
    "selectivity": selectivity,
    "strings": strings,
    "dictsize": dictsize,
    "payload": payload,
    # The selection-pushdown paper's experiments (issue 4), in bench/paper.py.
    "m2": paper.m2,
    "q6": paper.q6,
    "order": paper.order,
    "rle": paper.rle,
    # Paper 002 (issue 6): TPC-H point lookups here; the page-index / Bloom experiment is
    # lookup.paper_report, run by run.py's main process.
    "lookup": lookup.tpch_queries,
}
