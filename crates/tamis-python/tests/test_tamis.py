"""The Python package against an independent oracle: pyarrow's own Parquet reader and compute."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import textwrap
import threading
import time
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import tamis

ROWS = 50_000


def _table(rows: int = ROWS) -> pa.Table:
    idx = pa.array(range(rows), pa.int64())
    mod = lambda n: pc.cast(pc.divide(idx, 1), pa.int64()).to_numpy() % n  # noqa: E731
    status = pa.array([["new", "open", "closed", "", "late"][i % 5] for i in range(rows)])
    names = pa.array(
        [None if i % 7 == 0 else f"item-{i % 997:04d}-{'special' if i % 13 == 0 else 'plain'}"
         for i in range(rows)]
    )
    price = pa.array(
        [None if i % 11 == 0 else (float("nan") if i % 101 == 0 else (i % 1000) / 10 - 25.0)
         for i in range(rows)],
        pa.float64(),
    )
    day = pa.array(
        [dt.date(2020, 1, 1) + dt.timedelta(days=int(i % 400)) for i in range(rows)], pa.date32()
    )
    amount = pa.array([Decimal(int(i % 5000)) / 100 for i in range(rows)], pa.decimal128(12, 2))
    return pa.table(
        {
            "id": idx,
            "bucket": pa.array(mod(100), pa.int32()),
            "status": status,
            "name": names,
            "price": price,
            "day": day,
            "amount": amount,
        }
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> tuple[str, pa.Table]:
    path = tmp_path_factory.mktemp("data") / "t.parquet"
    table = _table()
    pq.write_table(
        table,
        path,
        row_group_size=8_000,
        data_page_size=4096,
        write_page_index=True,
        use_dictionary=["status", "bucket", "name"],
    )
    return str(path), pq.read_table(path)


CASES = [
    ("id = 12345", lambda t: pc.equal(t["id"], 12345)),
    ("id >= 49000 OR id < 10", lambda t: pc.or_(pc.greater_equal(t["id"], 49000), pc.less(t["id"], 10))),
    ("bucket IN (3, 50, 99)", lambda t: pc.is_in(t["bucket"], pa.array([3, 50, 99], pa.int32()))),
    ("status = ''", lambda t: pc.equal(t["status"], "")),
    ("status <> 'open' AND bucket < 5", lambda t: pc.and_(pc.not_equal(t["status"], "open"), pc.less(t["bucket"], 5))),
    ("name LIKE '%special'", lambda t: pc.match_like(t["name"], "%special")),
    ("name IS NULL", lambda t: pc.is_null(t["name"])),
    ("NOT (name LIKE 'item-00%')", lambda t: pc.invert(pc.match_like(t["name"], "item-00%"))),
    # NaN sorts above every number (DuckDB's rule), so it matches `>`.
    ("price > 10.5", lambda t: pc.or_(pc.greater(t["price"], 10.5), pc.is_nan(t["price"]))),
    ("price = 0.0", lambda t: pc.equal(t["price"], 0.0)),
    ("day BETWEEN DATE '2020-03-01' AND DATE '2020-03-31'",
     lambda t: pc.and_(pc.greater_equal(t["day"], pa.scalar(dt.date(2020, 3, 1))),
                       pc.less_equal(t["day"], pa.scalar(dt.date(2020, 3, 31))))),
    ("amount < 1.50", lambda t: pc.less(t["amount"], pa.scalar(Decimal("1.50"), pa.decimal128(12, 2)))),
    ("id < 0", lambda t: pc.less(t["id"], 0)),
]


def _rows(table: pa.Table) -> list:
    """Rows as Python values, NaN made comparable (a NaN is not equal to itself)."""
    fix = lambda v: "NaN" if isinstance(v, float) and v != v else v  # noqa: E731
    return [tuple(fix(v) for v in row.values()) for row in table.to_pylist()]


def assert_same(got: pa.Table, want: pa.Table) -> None:
    assert got.schema.names == want.schema.names
    assert got.schema.types == want.schema.types
    assert got.num_rows == want.num_rows
    assert _rows(got) == _rows(want)


def _expected(table: pa.Table, mask, columns=None) -> pa.Table:
    out = table.filter(pc.fill_null(mask(table), False))
    return out.select(columns) if columns else out


@pytest.mark.parametrize("where,mask", CASES, ids=[c[0] for c in CASES])
def test_scan_matches_pyarrow(data, where, mask):
    path, table = data
    got = tamis.scan(path, where=where)
    want = _expected(table, mask)
    assert_same(got, want)


COLUMN_COMPARISONS = [
    "bucket < id",
    "amount * (1 - amount) > -10",
    "amount + bucket * 2 >= price",
    "price - amount < bucket",
    "status < name",
    "status = status",
    "NOT (bucket * 3 - 7 <= amount)",
    "bucket = id OR amount > bucket",
    "id - 1 * bucket <> id AND status <> 'late'",
]


@pytest.mark.parametrize("where", COLUMN_COMPARISONS)
def test_comparisons_between_columns_match_duckdb(data, where):
    """Columns compared with each other, with arithmetic: the rows DuckDB selects (NaN is above
    every number and NULL never matches in both)."""
    duckdb = pytest.importorskip("duckdb")
    path, _ = data
    want = sorted(r[0] for r in duckdb.sql(f"SELECT id FROM '{path}' WHERE {where}").fetchall())
    got = tamis.scan(path, where=where, columns=["id"])
    assert sorted(got.column("id").to_pylist()) == want
    assert 0 < len(want) < ROWS or where == "status = status"


def test_full_scan_and_column_order(data):
    path, table = data
    assert_same(tamis.scan(path), table)
    got = tamis.scan(path, where="bucket = 7", columns=["price", "id"])
    assert got.column_names == ["price", "id"]
    assert_same(got, _expected(table, lambda t: pc.equal(t["bucket"], 7), ["price", "id"]))


def test_threads_and_limit(data):
    path, table = data
    one = tamis.scan(path, where="status = 'late'", threads=1)
    two = tamis.scan(path, where="status = 'late'", threads=2)
    assert_same(one, two)
    limited = tamis.scan(path, where="status = 'late'", limit=777, threads=2)
    assert_same(limited, one.slice(0, 777))
    assert tamis.scan(path, limit=0).num_rows == 0


def _late_rows(path: str, threads: int) -> int:
    return tamis.scan(path, where="status = 'late'", threads=threads).num_rows


def test_scans_in_a_forked_child(data):
    """A child made by fork inherits the parent's idle worker pools but not their threads; its
    scans must start threads of their own, not wait on the parent's."""
    import multiprocessing

    path, table = data
    want = _expected(table, lambda t: pc.equal(t["status"], "late")).num_rows
    for threads in (1, 2):
        assert _late_rows(path, threads) == want  # leaves an idle pool of this size
    with multiprocessing.get_context("fork").Pool(1) as pool:
        for threads in (1, 2):
            assert pool.apply_async(_late_rows, (path, threads)).get(timeout=60) == want


def test_scan_batches_is_a_streaming_reader(data):
    path, table = data
    reader = tamis.scan_batches(path, where="bucket < 10", columns=["id", "name"], batch_size=1000)
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema.names == ["id", "name"]
    batches = list(reader)
    assert len(batches) > 1 and all(b.num_rows <= 1000 for b in batches)
    got = pa.Table.from_batches(batches, reader.schema)
    assert_same(got, _expected(table, lambda t: pc.less(t["bucket"], 10), ["id", "name"]))


def test_pycapsule_stream_is_exported_once(data):
    path, _ = data
    stream = tamis._tamis.scan_stream(path, tamis.ScanOptions(where="id < 5")._native())
    capsule = stream.__arrow_c_stream__()
    assert type(capsule).__name__ == "PyCapsule"
    assert pa.RecordBatchReader._import_from_c_capsule(capsule).read_all().num_rows == 5
    with pytest.raises(ValueError, match="already consumed"):
        stream.__arrow_c_stream__()


def test_consumers_take_the_stream(data):
    path, table = data
    want = _expected(table, lambda t: pc.equal(t["status"], "open"), ["id", "status"])
    polars = pytest.importorskip("polars")
    df = polars.from_arrow(tamis.scan_batches(path, where="status = 'open'", columns=["id", "status"]))
    assert df.height == want.num_rows and df["id"].to_list() == want["id"].to_pylist()
    duckdb = pytest.importorskip("duckdb")
    reader = tamis.scan_batches(path, where="status = 'open'", columns=["id", "status"])
    total = duckdb.sql("SELECT count(*), sum(id) FROM reader").fetchall()[0]
    assert total == (want.num_rows, pc.sum(want["id"]).as_py())
    pytest.importorskip("pandas")
    assert tamis.scan_batches(path, where="id < 3").read_pandas()["id"].tolist() == [0, 1, 2]


def test_explain_is_the_cli_funnel(data, page_cache_off):
    path, table = data
    funnel = tamis.explain(path, where="id = 12345", columns=["name"])
    assert funnel["predicate"] == "id = 12345"
    assert funnel["rows_selected"] == 1
    assert funnel["rows_total"] == table.num_rows
    assert funnel["row_groups_total"] == 7
    assert funnel["row_groups_pruned_statistics"] == 6
    cli = _cli()
    if cli is None:
        pytest.skip("tamis CLI not found (set TAMIS_CLI)")
    out = subprocess.run(
        [cli, "explain", path, "--where", "id = 12345", "--select", "name", "--json"],
        check=True, capture_output=True, text=True,
    ).stdout
    from_cli = json.loads(out)
    assert set(from_cli) == set(funnel)
    timing = {k for k in funnel if k.startswith("time_")}
    assert {k: v for k, v in from_cli.items() if k not in timing} == {
        k: v for k, v in funnel.items() if k not in timing
    }


def _cli() -> str | None:
    return os.environ.get("TAMIS_CLI") or shutil.which("tamis")


def test_errors_keep_their_category_and_message(data, tmp_path):
    path, _ = data
    with pytest.raises(tamis.InvalidArgumentError, match="unknown column 'nope'") as bad_col:
        tamis.scan(path, where="nope = 1")
    assert isinstance(bad_col.value, ValueError)
    with pytest.raises(ValueError, match="cannot parse predicate"):
        tamis.scan(path, where="id = ")
    with pytest.raises(ValueError, match="unknown column 'x' in select"):
        tamis.scan(path, columns=["x"])
    with pytest.raises(TypeError):
        tamis.scan(path, columns="id")
    with pytest.raises(TypeError, match="no_such_option"):
        tamis.scan(path, no_such_option=1)
    with pytest.raises(FileNotFoundError, match="no such file"):
        tamis.scan(tmp_path / "missing.parquet")
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"PAR1" + b"\x00" * 64 + b"\x10\x00\x00\x00PAR1")
    with pytest.raises(tamis.CorruptFileError) as err:
        tamis.scan(corrupt)
    assert isinstance(err.value, OSError) and str(corrupt) in str(err.value)
    with pytest.raises(tamis.UnsupportedError) as unsupported:
        tamis.scan(path, where="id / 2 = bucket")
    assert isinstance(unsupported.value, NotImplementedError)
    cli = _cli()
    if cli is not None:
        res = subprocess.run([cli, "query", path, "--where", "nope = 1"], capture_output=True, text=True)
        assert str(bad_col.value) in res.stderr


def test_memory_limit(data):
    path, table = data
    # 8 000-row row groups: their selection bitmaps alone are 4 KB, more than 1 KiB.
    with pytest.raises(tamis.ResourceLimitError, match="over the memory limit of 1024 bytes") as err:
        tamis.scan(path, memory_limit="1KiB")
    assert isinstance(err.value, RuntimeError) and "row group 0" in str(err.value)
    opts = tamis.ScanOptions(memory_limit=64 << 20)
    assert_same(tamis.scan(path, options=opts), table)
    assert_same(tamis.scan(path, memory_limit="512MiB"), table)
    with pytest.raises(tamis.InvalidArgumentError, match="not a size"):
        tamis.scan(path, memory_limit="lots")
    with pytest.raises(tamis.InvalidArgumentError, match="out of range"):
        tamis.scan(path, memory_limit=0)


@pytest.fixture(scope="module")
def big_dir(tmp_path_factory) -> str:
    """Many hard links to one file: a scan that takes seconds without writing gigabytes."""
    root = tmp_path_factory.mktemp("big")
    src = root / "src.parquet"
    n = 400_000
    pq.write_table(
        pa.table({"s": pa.array([f"row {i} with some words to search" for i in range(n)]),
                  "k": pa.array(range(n), pa.int64())}),
        src, row_group_size=50_000, use_dictionary=False,
    )
    links = root / "links"
    links.mkdir()
    for i in range(400):
        os.link(src, links / f"part-{i:04d}.parquet")
    return str(links)


def test_gil_is_released_while_scanning(big_dir):
    ticks = 0
    done = threading.Event()

    def scan():
        tamis.scan(big_dir, where="s LIKE '%words%nothing%'", threads=1, limit=None)
        done.set()

    worker = threading.Thread(target=scan)
    start = time.perf_counter()
    worker.start()
    while not done.is_set() and time.perf_counter() - start < 0.5:
        ticks += 1
    elapsed = time.perf_counter() - start
    done.wait(timeout=120)
    worker.join()
    # With the GIL held by the scan, this loop would run only at switch intervals.
    assert ticks > 10_000, (ticks, elapsed)


def test_ctrl_c_interrupts_a_long_scan(big_dir):
    script = textwrap.dedent(
        f"""
        import sys, time, tamis
        print("start", flush=True)
        t = time.perf_counter()
        try:
            tamis.scan({big_dir!r}, where="s LIKE '%words%nothing%'", threads=1)
            print("finished", time.perf_counter() - t, flush=True)
        except KeyboardInterrupt:
            print("interrupted", time.perf_counter() - t, flush=True)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "start"
    time.sleep(1.0)
    sent = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    line = proc.stdout.readline().split()
    latency = time.perf_counter() - sent
    proc.wait(timeout=60)
    assert line and line[0] == "interrupted", line
    assert latency < 2.0, latency


def test_ctrl_c_interrupts_a_scan_batches_reader(big_dir):
    """Ctrl-C while a reader waits for a batch that a selective filter keeps from coming: the
    reader raises KeyboardInterrupt promptly, not after the scan."""
    script = textwrap.dedent(
        f"""
        import sys, time, tamis
        reader = tamis.scan_batches({big_dir!r}, where="s LIKE '%words%nothing%'", threads=1)
        print("start", flush=True)
        t = time.perf_counter()
        try:
            rows = sum(b.num_rows for b in reader)
            print("finished", time.perf_counter() - t, rows, flush=True)
        except KeyboardInterrupt:
            print("interrupted", time.perf_counter() - t, flush=True)
        except BaseException as e:
            print("raised", type(e).__name__, e, flush=True)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "start"
        time.sleep(1.0)
        sent = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        line = proc.stdout.readline().split()
        latency = time.perf_counter() - sent
        proc.wait(timeout=60)
    finally:
        proc.kill()
    assert line and line[0] == "interrupted", line
    assert latency < 2.0, latency


def mixed_filter(table):
    """Three filters on three columns, one an OR; the SQL and the rows pyarrow keeps for it."""
    where = "bucket < 50 AND status <> 'open' AND (amount > 40 OR name IS NULL)"
    want = pc.and_kleene(
        pc.and_kleene(pc.less(table["bucket"], 50), pc.not_equal(table["status"], "open")),
        pc.or_kleene(pc.greater(table["amount"], Decimal(40)), pc.is_null(table["name"])),
    )
    return where, table.filter(want)


def test_filter_order_changes_nothing_but_the_order(data):
    path, table = data
    where, expected = mixed_filter(table)
    for order in ("auto", "written"):
        # assert_same, not Table.equals: `price` holds NaN, and NaN != NaN.
        assert_same(tamis.scan(path, where=where, filter_order=order), expected)
        reader = tamis.scan_batches(path, where=where, filter_order=order, batch_size=1000)
        assert_same(reader.read_all(), expected)
    written = tamis.explain(path, where=where, filter_order="written")
    steps = written["filter_order"]
    assert [s["filter"].split()[0] for s in steps] == ["bucket", "status", "amount"]
    for s in steps:
        assert 0.0 <= s["estimated_selectivity"] <= 1.0
        assert s["bit_width"] >= 0
    with pytest.raises(ValueError, match="auto or written"):
        tamis.scan(path, where=where, filter_order="fastest")


def test_evaluation_changes_nothing_but_the_work(data):
    path, table = data
    where, expected = mixed_filter(table)
    for evaluation in ("auto", "selected", "whole"):
        assert_same(tamis.scan(path, where=where, evaluation=evaluation), expected)
    whole = tamis.explain(path, where=where, evaluation="whole")
    selected = tamis.explain(path, where=where, evaluation="selected")
    # Whole pages are tested in place; selection pushdown decodes only the alive values.
    assert whole["values_in_place"] > selected["values_in_place"]
    assert selected["pages_evaluated_whole"] == 0
    with pytest.raises(ValueError, match="auto, selected or whole"):
        tamis.scan(path, where=where, evaluation="fastest")


def test_options_object_and_keywords_agree(data):
    path, _ = data
    opts = tamis.ScanOptions(where="id < 50", columns=["id"], threads=1)
    by_object = tamis.scan(path, options=opts)
    by_keywords = tamis.scan(path, where="id < 50", columns=["id"], threads=1)
    assert by_object.equals(by_keywords)
    # Keywords override the object's fields.
    narrower = tamis.scan(path, where="id < 10", options=opts)
    assert narrower.column("id").to_pylist() == list(range(10))
    assert tamis.explain(path, options=opts)["rows_selected"] == 50
    assert tamis.scan_batches(path, options=opts).read_all().equals(by_object)


def test_dataset_scans_like_scan(data):
    path, _ = data
    ds = tamis.Dataset(path)
    assert ds.files == [path]
    assert ds.schema == tamis.scan(path, limit=0).schema
    for where in ["id < 50", "id = 7", None]:
        # pandas' equals takes NaN as equal to NaN (price holds NaNs); Table.equals does not.
        assert ds.scan(where=where).to_pandas().equals(tamis.scan(path, where=where).to_pandas())
    assert ds.scan_batches(where="id < 5").read_all().num_rows == 5
    assert ds.explain(where="id < 5")["rows_selected"] == 5
    with pytest.raises(FileNotFoundError):
        tamis.Dataset(path + ".missing")


def test_page_cache_serves_the_same_rows_without_reading_pages_again(tmp_path):
    """tamis.set_page_cache: a page is kept on its second read (or its first, when asked); a
    warm scan returns pyarrow's rows and reads no page again; a file rewritten with other
    values is read anew; 0 turns the cache off."""
    path = tmp_path / "t.parquet"
    n = 50_000
    table = pa.table({"k": pa.array(range(n), pa.int64()),
                      "g": pa.array([i % 97 for i in range(n)], pa.int64())})
    pq.write_table(table, path, compression="snappy", row_group_size=20_000,
                   data_page_size=16 << 10, write_page_index=True)
    want = table.filter(pc.less(table["g"], 3))
    time.sleep(1.1)  # a file changed less than a second ago is not cached
    try:
        tamis.set_page_cache("64MiB")
        assert tamis.page_cache_stats()["budget_bytes"] == 64 << 20
        first = tamis.explain(str(path), where="g < 3")
        assert first["pages_cache_misses"] > 0 and tamis.page_cache_stats()["pages"] == 0
        second = tamis.explain(str(path), where="g < 3")
        assert second["pages_cache_hits"] == 0 and tamis.page_cache_stats()["pages"] > 0
        warm = tamis.explain(str(path), where="g < 3")
        assert warm["pages_cache_misses"] == 0 and warm["pages_cache_hits"] > 0
        assert warm["pages_read"] == 0 and warm["bytes_read"] < first["bytes_read"]
        assert tamis.scan(str(path), where="g < 3").equals(want)
        # Another version of the file: its pages are not the cached ones, just written or
        # settled.
        other = table.set_column(1, "g", pa.array([(i + 1) % 97 for i in range(n)], pa.int64()))
        pq.write_table(other, path, compression="snappy", row_group_size=20_000,
                       data_page_size=16 << 10, write_page_index=True)
        want_other = other.filter(pc.less(other["g"], 3))
        assert tamis.scan(str(path), where="g < 3").equals(want_other)
        time.sleep(1.1)
        settled = tamis.explain(str(path), where="g < 3")
        assert settled["pages_cache_hits"] == 0 and settled["pages_cache_misses"] > 0
        assert tamis.scan(str(path), where="g < 3").equals(want_other)
        # Kept on the first read when asked.
        tamis.set_page_cache("64MiB", keep_first_reads=True)
        first = tamis.explain(str(path), where="g < 3")
        warm = tamis.explain(str(path), where="g < 3")
        assert first["pages_cache_misses"] > 0 and warm["pages_cache_hits"] == first["pages_cache_misses"]
    finally:
        tamis.set_page_cache("0", keep_first_reads=False)  # as TAMIS_PAGE_CACHE says it
    assert tamis.page_cache_stats()["budget_bytes"] == 0
    off = tamis.explain(str(path), where="g < 3")
    assert off["pages_cache_hits"] == 0 and off["pages_cache_misses"] == 0


def test_disk_cache_serves_the_next_process_never_a_changed_file_or_a_damaged_entry(tmp_path):
    """tamis.set_disk_cache: a second process reads every page from the cache directory (no
    page read or decompressed) and gets pyarrow's rows; a byte flipped in every entry, or the
    file rewritten in place with the same size and mtime, changes no row."""
    import random

    path, cache = tmp_path / "t.parquet", tmp_path / "cache"
    n = 50_000
    rng = random.Random(5)
    # Random 62-bit values, PLAIN: Snappy keeps them as literals, so a value's bytes are in
    # the file as they are.
    v = [rng.getrandbits(62) - (1 << 61) for _ in range(n)]
    table = pa.table({"k": pa.array(range(n), pa.int64()), "v": pa.array(v, pa.int64())})
    pq.write_table(table, path, compression="snappy", row_group_size=20_000,
                   data_page_size=16 << 10, write_page_index=True, use_dictionary=False)

    script = (
        "import json, sys, tamis\n"
        "tamis.set_disk_cache(sys.argv[2], '64MiB')\n"
        "e = tamis.explain(sys.argv[1], where=sys.argv[3])\n"
        "rows = tamis.scan(sys.argv[1], where=sys.argv[3]).column('k').to_pylist()\n"
        "tamis.flush_disk_cache()\n"
        "s = tamis.page_cache_stats()\n"
        "print(json.dumps({'hits': e['pages_cache_hits'], 'misses': e['pages_cache_misses'],\n"
        "                  'read': e['pages_read'], 'rows': rows, 'corrupt': s['disk_corrupt']}))\n"
    )

    def child(where):
        out = subprocess.run([sys.executable, "-c", script, str(path), str(cache), where],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    negative = [k for k, x in enumerate(v) if x < 0]
    time.sleep(1.1)  # a file changed less than a second ago is not cached
    first = child("v < 0")
    assert first["misses"] > 0 and first["hits"] == 0 and first["rows"] == negative
    packs = sorted(cache.glob("*.pack"))
    assert packs
    second = child("v < 0")
    assert second["misses"] == 0 and second["hits"] > 0 and second["read"] == 0
    assert second["rows"] == negative

    # Every entry damaged (a byte flipped in every block past a pack's index, the first; each
    # entry starts on a block boundary): all misses, counted, the rows unchanged.
    for pack in packs:
        data = bytearray(pack.read_bytes())
        for at in range(4096 + 100, len(data), 4096):
            data[at] ^= 0x01
        pack.write_bytes(bytes(data))
    damaged = child("v < 0")
    assert damaged["hits"] == 0 and damaged["corrupt"] > 0 and damaged["rows"] == negative

    # The file rewritten in place: row r takes row r + 1's value (same page, so statistics and
    # page index still hold); same inode, same size, mtime set back.
    r = 30_017
    new = v[r + 1]
    where = f"v = {new}"
    assert child(where)["rows"] == [r + 1]
    assert child(where)["hits"] > 0
    before = os.stat(path)
    data = path.read_bytes()
    pair = struct.pack("<qq", v[r], new)
    at = data.index(pair)
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(struct.pack("<q", new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == \
        (before.st_size, before.st_mtime_ns, before.st_ino)
    assert child(where)["rows"] == [r, r + 1]
    time.sleep(1.1)
    settled = child(where)
    assert settled["hits"] == 0 and settled["rows"] == [r, r + 1]
    assert child(where)["hits"] > 0
