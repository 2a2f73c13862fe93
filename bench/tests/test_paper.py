"""The paper suites' data generators produce what BENCHMARKS.md says they do (checked on the data
and on the written Parquet files), and the harness's result fingerprint tells tables apart."""

import os
import sys
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import paper  # noqa: E402
from run import column_fingerprint, fingerprints_agree, normalized, tables_agree  # noqa: E402


@pytest.mark.parametrize("k", [1, 2, 5, 12])
def test_filter_codes_selectivity_and_width(k):
    rng = np.random.default_rng(1)
    codes, cut = paper.filter_codes(rng, k, 200_000, 0.25)
    assert codes.min() >= 0 and codes.max() < (1 << k)
    assert abs((codes < cut).mean() - 0.25) < 0.01
    if k <= 12:
        assert len(np.unique(codes)) == 1 << k  # every code present: the dictionary has 2^k values


@pytest.mark.parametrize("kind", paper.M2_TYPES)
def test_domain_sorted_distinct(kind):
    values = paper.domain(kind, 6, np.random.default_rng(2))
    assert len(values) == 64
    py = values.to_pylist()
    assert py == sorted(py) and len(set(py)) == 64


def test_m2_file_selectivity_and_bit_width(tmp_path):
    args = SimpleNamespace(rows=50_000)
    queries = paper.m2(str(tmp_path), args)
    q = next(q for q in queries if q.name == "int64, k = 5")
    table = pq.read_table(q.path)
    assert table.num_columns == paper.M2_COLUMNS
    sel = pc.and_(pc.less(table["a1"], q.where.args[0].args[1]), pc.less(table["a2"], q.where.args[1].args[1]))
    assert abs(pc.sum(sel).as_py() / table.num_rows - 0.0625) < 0.005
    meta = pq.ParquetFile(q.path).metadata
    col = meta.row_group(0).column(0)
    assert col.compression == "UNCOMPRESSED"
    assert "RLE_DICTIONARY" in col.encodings
    assert pc.count_distinct(table["a1"]).as_py() == 32


def test_with_nulls_fraction_per_column():
    rng = np.random.default_rng(3)
    table = pa.table({"a": pa.array(range(100_000)), "s": pa.array(["x"] * 100_000)})
    out = paper.with_nulls(table, 0.125, rng)
    for name in ("a", "s"):
        assert abs(out[name].null_count / out.num_rows - 0.125) < 0.005
        assert out.schema.field(name).nullable
    kept = pc.drop_null(out["a"])
    assert pc.all(pc.equal(kept, pc.filter(table["a"], pc.is_valid(out["a"])))).as_py()
    # Nulls are placed independently per column.
    both = pc.sum(pc.and_(pc.is_null(out["a"]), pc.is_null(out["s"]))).as_py() / out.num_rows
    assert abs(both - 0.125 ** 2) < 0.003


def test_list_column_lengths():
    rng = np.random.default_rng(4)
    values = np.arange(10, dtype=np.int64)
    lists = paper.list_column(rng, 100_000, values)
    lengths = pc.list_value_length(lists).to_numpy()
    assert lengths.min() == 0 and lengths.max() == paper.LIST_MAX
    assert abs(lengths.mean() - 4.0) < 0.05
    counts = np.bincount(lengths, minlength=9) / len(lengths)
    assert np.all(np.abs(counts - 1 / 9) < 0.01)  # uniform over 0..8
    assert lists.null_count == 0
    assert set(pc.unique(pc.list_flatten(lists)).to_pylist()) <= set(values.tolist())


@pytest.mark.parametrize("fraction", [0.0, 0.25, 0.5, 1.0])
def test_run_codes_rle_fraction(fraction):
    rng = np.random.default_rng(5)
    codes = paper.run_codes(rng, 400_000, fraction)
    assert codes.min() >= 0 and codes.max() < paper.RLE_DISTINCT
    # Runs of >= 8 equal codes (what the writer turns into RLE runs) hold ~fraction of the values.
    assert abs(paper.rle_fraction_of(codes) - fraction) < 0.03


def test_rle_fraction_of():
    assert paper.rle_fraction_of(np.array([1] * 8 + [2, 3] + [4] * 7)) == pytest.approx(8 / 17)
    assert paper.rle_fraction_of(np.array([], dtype=np.int32)) == 0.0


def test_q6_orders_are_the_same_predicate():
    import itertools

    wheres = [paper.q6_where(p) for p in itertools.permutations(paper.Q6_FILTERS)]
    assert len({w.sql() for w in wheres}) == 6
    table = pa.table({
        "l_shipdate": pa.array([paper.dt.date(1994, 3, 1), paper.dt.date(1995, 3, 1)] * 3),
        "l_discount": pa.array([paper.Decimal("0.06")] * 3 + [paper.Decimal("0.02")] * 3, pa.decimal128(15, 2)),
        "l_quantity": pa.array([paper.Decimal(q) for q in ("1", "30", "2", "5", "23", "24")], pa.decimal128(15, 2)),
    })
    import pyarrow.dataset as ds

    results = {tuple(ds.dataset(table).to_table(filter=w.pyarrow(table.schema))["l_quantity"].to_pylist())
               for w in wheres}
    assert len(results) == 1


def test_fingerprint_catches_differences():
    a = pa.table({"x": pa.array([1.5, None, 2.0]), "l": pa.array([[1, 2], [], None], pa.list_(pa.int64())),
                  "s": pa.array(["ab", "c", None])})
    same = pa.table({"x": pa.array([2.0, 1.5, None]), "l": pa.array([[], None, [2, 1]], pa.large_list(pa.int64())),
                     "s": pa.array([None, "c", "ab"], pa.large_string())})
    fa = [column_fingerprint(c) for c in a.columns]
    assert fingerprints_agree(fa, [column_fingerprint(c) for c in same.columns])
    for other in (
        a.set_column(0, "x", pa.array([1.5, 0.0, 2.0])),  # a null became a value
        a.set_column(1, "l", pa.array([[1, 2], [3], None], pa.list_(pa.int64()))),  # an element more
        a.set_column(1, "l", pa.array([[1, 3], [], None], pa.list_(pa.int64()))),  # an element changed
        a.set_column(2, "s", pa.array(["ab", "cd", None])),
    ):
        assert not fingerprints_agree(fa, [column_fingerprint(c) for c in other.columns])


def test_skips_and_filter_order_notes():
    from run import notes_md, table_md

    def row(q, e, ms, **extra):
        return dict(suite="order", query=q, engine=e, threads=1, cache="warm", rows=10, median_ms=ms,
                    tamis_bytes_read=None, read_bytes=None, **extra)

    order = [{"filter": "l_shipdate >= ...", "bit_width": 12, "measured_selectivity": 0.152},
             {"filter": "l_quantity < 24", "bit_width": 6, "estimated_selectivity": 0.46}]
    results = [row("a", "tamis", None, skipped="no filter_order"), row("a", "duckdb", 2.0),
               row("b", "tamis", 1.0, tamis_explain={"filter_order": order}), row("b", "duckdb", 4.0)]
    table = table_md(results, "order", 1, "warm", ["tamis", "duckdb"])
    assert "| a | 10 | skipped | **2.00** |" in table
    assert "0.25x" in table  # tamis / best peer and tamis / duckdb on b
    notes = notes_md(results, "order")
    assert notes[0] == "- tamis skipped on `a`: no filter_order"
    assert "`l_shipdate >= ...` (k=12, s=0.152) → `l_quantity < 24` (k=6, s=0.460)" in notes[1]


def test_whole_results_compare_across_engine_types_and_orders():
    """Large results are compared whole: the same rows in another order and with other types
    (dictionary, large strings, decimals, int32) agree; one changed value does not."""
    import decimal

    a = pa.table({
        "k": pa.array([3, 1, 2, 2], pa.int64()),
        "s": pa.array(["x", "", None, "y"]),
        "f": pa.array([0.1, float("nan"), None, 2.5]),
        "d": pa.array([decimal.Decimal("1.10"), decimal.Decimal("2.00"), None,
                       decimal.Decimal("0.01")], pa.decimal128(10, 2)),
    })
    b = pa.table({
        "k": pa.array([2, 2, 1, 3], pa.int32()),
        "s": pa.array(["y", None, "", "x"], pa.large_string()).dictionary_encode(),
        "f": pa.array([2.5, None, float("nan"), 0.1 + 1e-12]),
        "d": pa.array([0.01, None, 2.0, 1.1]),
    })
    assert tables_agree(normalized(a), normalized(b))
    c = b.set_column(0, "k", pa.array([2, 2, 1, 4], pa.int32()))
    assert not tables_agree(normalized(a), normalized(c))
    d = b.set_column(2, "f", pa.array([2.5, None, float("nan"), 0.2]))
    assert not tables_agree(normalized(a), normalized(d))
