"""The sidecar part of the lookup suite measures what it says: its page truth (the page table read
from the Puffin sidecar) matches the pages a scan counts, its expected row counts are the data's,
and a wrong row count stops the run."""

import os
import random
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import lookup  # noqa: E402
from pred import col_cmp  # noqa: E402

tamis = pytest.importorskip("tamis")

ROWS = 30_000


@pytest.fixture
def indexed(tmp_path):
    rng = random.Random(5)
    table = pa.table({"id": pa.array(range(ROWS), pa.int64()),
                      "key": pa.array([rng.randrange(1, 2_001) for _ in range(ROWS)], pa.int64())})
    path = str(tmp_path / "t.parquet")
    pq.write_table(table, path, row_group_size=10_000, data_page_size=8 << 10,
                   write_page_index=True, use_dictionary=False)
    idx = tmp_path / "idx"
    idx.mkdir()
    tamis.index(path, ["key"], kind="page-bloom", output=str(idx))
    firsts = lookup.page_first_rows(lookup.sidecar_in(str(idx), path), "key")
    return table, path, str(idx), lookup.ColumnTruth(path, "key", firsts)


def test_page_truth_matches_the_scan_and_filters_keep_every_true_page(indexed):
    table, path, idx, truth = indexed
    assert len(truth.rg_pages) == 3 and min(truth.rg_pages) > 1
    run, explain = lookup._tamis_runner(tamis, path, idx)
    off = explain(col_cmp("key", "=", 7), True, disable_pruning=lookup.NO_PRUNING_BUT_SIDECAR +
                  ["sidecar_index"])
    assert off["pages_total"] == sum(truth.rg_pages) == len(truth.page_rg)
    keys = [int(k) for k in truth.keys[::97]]
    preds = [col_cmp("key", "=", k) for k in keys]
    f = lookup._page_fpr(explain, truth, preds, "key")  # raises if a true page was dropped
    assert f["keys"] + f["skipped"] == len(keys) and f["kept"] >= f["holding"] > 0
    assert f["negatives"] > 0 and 0 <= f["rate"] < 0.2
    for k in keys[:5]:
        want = pc.sum(pc.equal(table["key"], k)).as_py()
        assert truth.count([k]) == want == run(col_cmp("key", "=", k), True)


def test_lookups_expect_the_data_counts_and_absent_keys_lie_outside(indexed):
    table, _, _, truth = indexed
    cells = lookup._lookups({"key": truth}, 10, 3)
    assert [c[1] for c in cells] == ["present", "absent", "IN (5)", "IN (50)"]
    for col, kind, preds, want in cells:
        for p, w in zip(preds, want):
            values = list(p.args[1]) if p.op == "in" else [p.args[1]]
            assert pc.sum(pc.is_in(table[col], pa.array(values, pa.int64()))).as_py() == w
            if kind == "absent":
                assert w == 0 and not truth.keys[0] <= values[0] <= truth.keys[-1]
            else:
                assert w > 0


def test_a_wrong_row_count_stops_the_run():
    preds = [col_cmp("k", "=", v) for v in (1, 2, 3)]
    runners = {"right": lambda p, count: p.args[1], "wrong": lambda p, count: 1}
    caps = dict.fromkeys(runners, 3)
    budgets = dict.fromkeys(runners, 10.0)
    times = lookup._measure({"right": runners["right"]}, preds, [1, 2, 3], False, caps, budgets,
                            "t", warm_up=True)
    assert len(times["right"]) == 3
    with pytest.raises(SystemExit, match="wrong returned 1 rows for k = 2"):
        lookup._measure(runners, preds, [1, 2, 3], False, caps, budgets, "t", warm_up=False)
