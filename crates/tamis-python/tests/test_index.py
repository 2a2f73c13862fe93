"""Sidecar indexes from Python: ``tamis.index`` builds them, scans use them (the rows equal
pyarrow's filter with and without the index), ``index_dir=`` finds them elsewhere."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pathlib import Path

import pytest

import tamis

ROWS = 40_000


def _write(path, seed=3) -> pa.Table:
    rng = random.Random(seed)
    table = pa.table({
        "id": pa.array(range(ROWS), pa.int64()),
        "key": pa.array([rng.randrange(5_000) for _ in range(ROWS)], pa.int64()),
        "tag": pa.array([None if rng.random() < 0.1 else f"t{rng.randrange(900)}"
                         for _ in range(ROWS)]),
    })
    pq.write_table(table, path, row_group_size=10_000, data_page_size=8 << 10,
                   write_page_index=True, use_dictionary=False)
    return table


def _ids(table: pa.Table) -> list:
    return sorted(table.column("id").to_pylist())


@pytest.mark.parametrize("kind", ["page-bloom", "rows", "auto"])
def test_index_prunes_and_never_changes_rows(tmp_path, kind):
    path = tmp_path / "t.parquet"
    table = _write(path)
    reports = tamis.index(path, ["key", "tag"], kind=kind)
    assert len(reports) == 1 and reports[0]["sidecar"].endswith("/.t.parquet.tamis.puffin")
    assert (tmp_path / ".t.parquet.tamis.puffin").exists()
    assert 0 < reports[0]["sidecar_bytes"] < reports[0]["data_bytes"]
    chosen = {c["column"]: c["kind"] for c in reports[0]["columns"]}
    # Both columns are unsorted with many distinct values: auto takes the rows index.
    assert chosen == ({"key": kind, "tag": kind} if kind != "auto"
                      else {"key": "rows", "tag": "rows"}), reports[0]["columns"]
    used = 0
    cases = [
        ("key = 1234", pc.equal(table["key"], 1234)),
        ("key IN (7, 4999, 123456)", pc.is_in(table["key"], pa.array([7, 4999, 123456]))),
        ("tag = 't17' OR key = 3", pc.or_kleene(pc.equal(table["tag"], "t17"),
                                               pc.equal(table["key"], 3))),
        ("key BETWEEN 100 AND 110 AND tag > 't5'",
         pc.and_kleene(pc.and_kleene(pc.greater_equal(table["key"], 100),
                                     pc.less_equal(table["key"], 110)),
                       pc.greater(table["tag"], "t5"))),
    ]
    counter = "pages_pruned_index" if kind == "page-bloom" else "conjuncts_decided_index"
    for where, mask in cases:
        want = _ids(table.filter(pc.fill_null(mask, False)))
        got = tamis.scan(path, where=where, columns=["id"])
        assert _ids(got) == want, where
        off = tamis.scan(path, where=where, columns=["id"], disable_pruning=["sidecar_index"])
        assert _ids(off) == want, where
        used += tamis.explain(path, where=where)[counter]
        assert tamis.explain(path, where=where,
                             disable_pruning=["sidecar_index"])[counter] == 0
    assert used > 0


def test_index_dir_finds_sidecars_written_elsewhere(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    index_dir = tmp_path / "idx"
    index_dir.mkdir()
    path = data / "t.parquet"
    table = _write(path)
    reports = tamis.index(data, ["key"], output=index_dir, kind="page-bloom")
    assert list(data.iterdir()) == [path]
    assert [p.name for p in index_dir.iterdir()] == [Path(reports[0]["sidecar"]).name]
    want = _ids(table.filter(pc.equal(table["key"], 42)))
    assert _ids(tamis.scan(path, where="key = 42", columns=["id"], index_dir=str(index_dir))) == want
    assert tamis.explain(path, where="key = 42", index_dir=str(index_dir))["pages_pruned_index"] > 0
    assert tamis.explain(path, where="key = 42")["pages_pruned_index"] == 0


def test_scan_batches_readers_raise_tamis_exceptions(tmp_path):
    path = tmp_path / "t.parquet"
    _write(path)
    reader = tamis.scan_batches(path, where="key < 100", memory_limit=1000)
    try:
        for _ in reader:
            pass
    except tamis.ResourceLimitError as e:
        assert "t.parquet" in str(e) and str(e).startswith("resource limit:")
    else:
        raise AssertionError("no error")
    # Without an error, the same rows as scan().
    got = tamis.scan_batches(path, where="key < 100", columns=["id"]).read_all()
    assert _ids(got) == _ids(tamis.scan(path, where="key < 100", columns=["id"]))


def test_a_broken_sidecar_fails_or_is_ignored_by_option(tmp_path):
    path = tmp_path / "t.parquet"
    table = _write(path)
    tamis.index(path, ["key"], kind="rows")
    sidecar = tmp_path / ".t.parquet.tamis.puffin"
    sidecar.write_bytes(sidecar.read_bytes()[:-5])
    with pytest.raises(tamis.CorruptFileError, match="t.parquet.tamis.puffin"):
        tamis.scan(path, where="key = 42", columns=["id"])
    want = _ids(table.filter(pc.equal(table["key"], 42)))
    got = tamis.scan(path, where="key = 42", columns=["id"], broken_index="ignore")
    assert _ids(got) == want
    m = tamis.explain(path, where="key = 42", broken_index="ignore")
    assert m["row_groups_index_broken"] > 0
    assert len(m["warnings"]) == 1 and "t.parquet.tamis.puffin" in m["warnings"][0]


def test_sidecars_read_through_a_second_puffin_reader(tmp_path):
    """pyiceberg's Puffin reader (an independent implementation of the container) lists the
    blobs tamis wrote, with the spec's fields, and returns their bytes."""
    puffin = pytest.importorskip("pyiceberg.table.puffin")
    path = tmp_path / "t.parquet"
    _write(path)
    both = tmp_path / "both"
    both.mkdir()
    report = tamis.index(path, ["id", "key"], kind="auto", output=both)[0]
    assert Path(report["sidecar"]).parent == both
    kinds = {c["column"]: c["kind"] for c in report["columns"]}
    assert kinds == {"id": "page-bloom", "key": "rows"}, report["columns"]
    meta = pq.ParquetFile(path).metadata
    f = puffin.PuffinFile(Path(report["sidecar"]).read_bytes())
    assert f.footer.properties["tamis.format-version"] == "1"
    assert f.footer.properties["tamis.data-file.length"] == str(path.stat().st_size)
    blobs = {(b.type, b.properties["row-group"], b.properties["column"]): b
             for b in f.footer.blobs}
    assert len(blobs) == 2 * meta.num_row_groups
    for rg in range(meta.num_row_groups):
        bloom = blobs[("tamis-page-bloom-v1", str(rg), "id")]
        rows = blobs[("tamis-rows-v1", str(rg), "key")]
        assert bloom.fields == [0] and rows.fields == [1]
        assert bloom.snapshot_id == -1 and bloom.sequence_number == -1
        # A page-filter blob: u32 pages, then 12 bytes per page, then whole 32-byte blocks.
        payload = f.get_blob_payload(bloom)
        pages = int.from_bytes(payload[:4], "little")
        assert pages >= 1 and (len(payload) - 4 - 12 * pages) % 32 == 0
        # A rows blob starts with its fence: blocks, distinct values, rows with a value.
        payload = f.get_blob_payload(rows)
        fence = int(rows.properties["tamis.fence-bytes"])
        assert 20 <= fence <= len(payload)
        assert int.from_bytes(payload[12:20], "little") == meta.row_group(rg).num_rows


def test_other_engines_read_an_indexed_directory(tmp_path):
    """Sidecars are hidden files: pyarrow's dataset discovery, DuckDB's directory read and the
    `**/*.parquet` globs of Polars and DuckDB see the data alone (Spark: test_spark.py). Polars'
    bare-directory form refuses any file of another extension, Spark's own `_SUCCESS` and
    `.crc` files included, so no name inside the directory can satisfy it: keep such a
    directory pristine with `output=` (an index directory)."""
    pl = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    data = tmp_path / "data"
    (data / "k=1").mkdir(parents=True)
    (data / "k=2").mkdir(parents=True)
    one = _write(data / "k=1" / "a.parquet")
    two = _write(data / "k=2" / "b.parquet", seed=4)
    reports = tamis.index(data, ["key"], kind="rows")
    assert len(reports) == 2 and all(Path(r["sidecar"]).name.startswith(".") for r in reports)
    want = sorted(one.column("id").to_pylist() + two.column("id").to_pylist())
    assert sorted(pq.read_table(data).column("id").to_pylist()) == want
    assert sorted(pl.scan_parquet(f"{data}/**/*.parquet").collect()["id"].to_list()) == want
    for source in [f"{data}", f"{data}/**/*.parquet"]:
        got = duckdb.sql(f"SELECT id FROM read_parquet('{source}') ORDER BY id").fetchall()
        assert [r[0] for r in got] == want, source
    # And tamis uses them.
    assert tamis.explain(data, where="key = 42")["conjuncts_decided_index"] > 0


def test_index_verify_reports_changed_chunks(tmp_path):
    path = tmp_path / "t.parquet"
    _write(path)
    tamis.index(path, ["key"], kind="rows")
    reports = tamis.verify_index(path)
    assert len(reports) == 1 and reports[0]["problems"] == [], reports
    assert reports[0]["chunks"] > 0
    # Another file of the same name: the sidecar is stale and says why.
    _write(path, seed=99)
    problems = tamis.verify_index(path)[0]["problems"]
    assert problems and "built for" in problems[0], problems
