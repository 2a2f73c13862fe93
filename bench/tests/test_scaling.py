"""bench/scaling.py: scaling factors, ratios against DuckDB and runtime filters on over off are
computed from both harnesses' JSON, and failed or cold runs are left out."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import scaling  # noqa: E402


def test_report_from_both_harnesses(tmp_path):
    sql = [
        dict(suite="tpch-sql", query="q17", engine=e, threads=t, median_s=s, ok=True)
        for e, t, s in [("tamis", 1, 4.0), ("tamis", 16, 0.5), ("duckdb", 1, 2.0), ("duckdb", 16, 0.25),
                        ("tamis-no-rf", 1, 8.0), ("tamis-no-rf", 16, 1.0)]
    ] + [dict(suite="tpch-sql", query="q01", engine="tamis", threads=16, median_s=9.9, ok=False)]
    scans = {"machine": "x", "results": [
        dict(suite="tpch", query="q6", engine="tamis", threads=1, cache="warm", median_ms=100.0),
        dict(suite="tpch", query="q6", engine="tamis", threads=16, cache="warm", median_ms=10.0),
        dict(suite="tpch", query="q6", engine="tamis", threads=16, cache="cold", median_ms=99.0),
        dict(suite="tpch", query="q6", engine="floor", threads=1, median_ms=1.0),
    ]}
    (tmp_path / "a.json").write_text(json.dumps(sql))
    (tmp_path / "b.json").write_text(json.dumps(scans))
    rows = scaling.load(str(tmp_path / "a.json")) + scaling.load(str(tmp_path / "b.json"))
    assert len(rows) == 8  # the failed q01 run, the cold run and the floor are left out
    text = scaling.report(rows)
    assert "| q17 | tamis | 4.000 | 0.500 | 8.0x | 2.00x | 2.00x |" in text
    assert "| q17 | 0.50x | 0.50x |" in text  # runtime filters on over off
    assert "| q6 | tamis | 0.100 | 0.010 | 10.0x |" in text
    assert "q01" not in text


def test_no_results_is_an_error(tmp_path, capsys):
    (tmp_path / "empty.json").write_text("[]")
    assert scaling.main([str(tmp_path / "empty.json")]) == 1
    assert scaling.main([]) == 2
