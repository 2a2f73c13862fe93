"""Object storage against a real S3-API server (moto, in server mode on 127.0.0.1).

The server is started by a fixture for this module and stopped after it. Rows read from the
store must equal rows read from the local copy; request and byte counts are bounded by what
the query needs; bad endpoints, missing and truncated objects and objects replaced mid-scan give
one clear error naming the URL, quickly.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tamis

moto_server = pytest.importorskip("moto.server", reason="moto[server] is not installed")
boto3 = pytest.importorskip("boto3")

BUCKET = "tamis-test"
CREDENTIALS = {"access_key_id": "testing", "secret_access_key": "testing", "region": "us-east-1"}

Q6 = ("l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' "
      "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24")
PREDICATES = [
    Q6,
    "l_orderkey = 3",
    "l_partkey = 100",
    "l_shipmode = 'AIR' AND l_quantity < 5",
    "l_returnflag IN ('A', 'N') AND l_linenumber >= 6",
    "l_comment LIKE '%special%'",
    "l_shipinstruct <> 'NONE' OR l_tax IS NULL",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    srv = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    srv.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def lineitem(tmp_path_factory):
    cli = os.environ.get("TAMIS_CLI")
    if not cli:
        pytest.skip("TAMIS_CLI (the tamis binary) is needed to generate TPC-H data")
    out = tmp_path_factory.mktemp("tpch")
    subprocess.run([cli, "gen", "tpch", "--scale-factor", "0.01", "--output", str(out),
                    "--tables", "lineitem", "--page-rows", "2000",
                    "--row-group-rows", "20000"], check=True, timeout=300)
    return str(out / "lineitem.parquet")


@pytest.fixture(scope="module")
def store(server, lineitem):
    s3 = boto3.client("s3", endpoint_url=server, aws_access_key_id="testing",
                      aws_secret_access_key="testing", region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    with open(lineitem, "rb") as f:
        data = f.read()
    s3.put_object(Bucket=BUCKET, Key="tpch/lineitem.parquet", Body=data)
    s3.put_object(Bucket=BUCKET, Key="truncated/lineitem.parquet", Body=data[: len(data) // 2])
    options = dict(CREDENTIALS, endpoint=server, allow_http="true")
    return s3, options, f"s3://{BUCKET}/tpch/lineitem.parquet"


def _sorted(table):
    return table.sort_by([(name, "ascending") for name in table.column_names])


@pytest.mark.parametrize("where", PREDICATES)
def test_rows_from_the_store_equal_rows_from_the_local_copy(store, lineitem, where):
    _, options, url = store
    remote = tamis.scan(url, where=where, storage_options=options, threads=2)
    local = tamis.scan(lineitem, where=where, threads=2)
    assert remote.num_rows == local.num_rows
    assert _sorted(remote).equals(_sorted(local))


def test_prefix_and_glob_list_the_objects(store, lineitem):
    _, options, _ = store
    where = "l_quantity < 3"
    local = tamis.scan(lineitem, where=where)
    by_prefix = tamis.scan(f"s3://{BUCKET}/tpch/", where=where, storage_options=options)
    by_glob = tamis.scan(f"s3://{BUCKET}/tpch/*.parquet", where=where, storage_options=options)
    assert _sorted(by_prefix).equals(_sorted(local))
    assert _sorted(by_glob).equals(_sorted(local))


def _chunk_bytes(path, columns):
    """Compressed bytes of the named columns' chunks, over all row groups."""
    md = pq.ParquetFile(path).metadata
    total = 0
    for rg in range(md.num_row_groups):
        for c in range(md.num_columns):
            col = md.row_group(rg).column(c)
            if col.path_in_schema in columns:
                total += col.total_compressed_size
    return total, md.num_row_groups


def test_default_cost_model_reads_about_the_needed_bytes(store, lineitem):
    _, options, url = store
    # At the default cost model (20 ms to the first byte, 100 MB/s, 16 requests in flight) the
    # footer read is 1 MiB (the size is unknown without a listing) and ranges closer than
    # 125 KB merge: a selective query still reads less than the file, in few requests.
    m = tamis.explain(url, where=Q6, columns=["l_extendedprice", "l_discount"],
                      storage_options=options, threads=1)
    _, row_groups = _chunk_bytes(lineitem, set())
    assert m["requests"] <= 1 + 3 * row_groups, m
    assert m["bytes_read"] < os.path.getsize(lineitem), m


# A fast store (1 ms to the first byte): the tail read and the coalescing gap shrink to 64 KiB
# and 100 KB, so the page plan shows.
FAST = {"latency_ms": "1", "bandwidth_mb_per_s": "100"}


def test_q6_requests_and_bytes(store, lineitem, page_cache_off):
    _, options, url = store
    m = tamis.explain(url, where=Q6, columns=["l_extendedprice", "l_discount"],
                      storage_options=dict(options, **FAST), threads=1)
    needed, row_groups = _chunk_bytes(
        lineitem, {"l_shipdate", "l_discount", "l_quantity", "l_extendedprice"})
    size = os.path.getsize(lineitem)
    # The tail read (footer); per row group one read of page indexes and dictionaries, then
    # one round of concurrent requests for the filter columns' pages and one for the payload's:
    # at most one request per page read besides those.
    assert m["requests"] <= m["pages_read"] + 1 + 2 * row_groups, m
    # The four columns' chunks, the tail and page indexes, and the gaps under 100 KB that
    # coalescing reads through to save requests: never the whole file.
    assert m["bytes_read"] <= 1.5 * needed + (128 << 10), (m["bytes_read"], needed)
    assert m["bytes_read"] < size / 2


def test_point_lookup_requests_and_bytes(store, lineitem, page_cache_off):
    _, options, url = store
    m = tamis.explain(url, where="l_orderkey = 3", storage_options=dict(options, **FAST),
                      threads=1)
    assert m["rows_selected"] == 6
    # l_orderkey is sorted: statistics leave one row group, the page index one page per
    # column. Tail read, index read, then that row group's pages: at most a request per page.
    assert m["pages_read"] <= 16
    assert m["requests"] <= m["pages_read"] + 2, m
    # The payload pages of the one row group coalesce (gaps under 100 KB): about a quarter of
    # the file, plus the tail and the index reads.
    assert m["bytes_read"] <= os.path.getsize(lineitem) / 4 + 300_000, m


def test_missing_object_names_the_url(store):
    _, options, _ = store
    url = f"s3://{BUCKET}/no/such.parquet"
    with pytest.raises(FileNotFoundError, match="no/such.parquet"):
        tamis.scan(url, storage_options=options)
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        tamis.scan(f"s3://{BUCKET}/nothing-here/", storage_options=options)


def test_truncated_object_is_a_clear_error(store):
    _, options, _ = store
    url = f"s3://{BUCKET}/truncated/lineitem.parquet"
    with pytest.raises((tamis.CorruptFileError, OSError), match="truncated/lineitem.parquet"):
        tamis.scan(url, storage_options=options)


def test_bad_endpoint_fails_fast_naming_the_url():
    options = dict(CREDENTIALS, endpoint=f"http://127.0.0.1:{_free_port()}", allow_http="true")
    start = time.monotonic()
    with pytest.raises(OSError, match="s3://nowhere/x.parquet"):
        tamis.scan("s3://nowhere/x.parquet", storage_options=options)
    assert time.monotonic() - start < 30


def test_unknown_storage_option_is_invalid(store):
    _, options, url = store
    with pytest.raises(tamis.InvalidArgumentError, match="no_such_key"):
        tamis.scan(url, storage_options=dict(options, no_such_key="1"))


def test_object_replaced_during_a_scan_is_an_error(store, lineitem, page_cache_off):
    s3, options, _ = store
    key = "changing/lineitem.parquet"
    with open(lineitem, "rb") as f:
        data = f.read()
    s3.put_object(Bucket=BUCKET, Key=key, Body=data)
    # A dataset pins each object to the ETag seen when its footer was read, and reads its
    # pages later with If-Match. (A streaming scan would race: its producer may have fetched
    # every page before the object is replaced.)
    ds = tamis.Dataset(f"s3://{BUCKET}/{key}", storage_options=dict(options, **FAST))
    assert ds.explain(where="l_quantity < 10", threads=1)["rows_selected"] > 0
    s3.put_object(Bucket=BUCKET, Key=key, Body=data[:-8] + b"\x00\x00\x00\x00PAR1")
    with pytest.raises(Exception, match="changed during the scan"):
        ds.scan(where="l_quantity < 10", threads=1)


def test_object_replaced_after_its_pages_were_cached_gives_the_pinned_version(store, lineitem):
    """With the page cache on, a dataset's scan after its object was replaced is served the
    pages of the version the dataset pinned (keyed by its ETag): that version's rows, never a
    mix — the same answer as a scan that had read every page before the replacement."""
    s3, options, _ = store
    key = "changing-cached/lineitem.parquet"
    with open(lineitem, "rb") as f:
        data = f.read()
    s3.put_object(Bucket=BUCKET, Key=key, Body=data)
    tamis.set_page_cache("64MiB")  # empty
    ds = tamis.Dataset(f"s3://{BUCKET}/{key}", storage_options=dict(options, **FAST))
    first = ds.scan(where="l_quantity < 10", threads=1)
    ds.scan(where="l_quantity < 10", threads=1)  # a page is kept on its second read
    s3.put_object(Bucket=BUCKET, Key=key, Body=data[:-8] + b"\x00\x00\x00\x00PAR1")
    m = ds.explain(where="l_quantity < 10", threads=1)
    assert m["pages_cache_misses"] == 0 and m["pages_read"] == 0, m
    again = ds.scan(where="l_quantity < 10", threads=1)
    assert _sorted(again).equals(_sorted(first))
    assert _sorted(first).equals(_sorted(tamis.scan(lineitem, where="l_quantity < 10")))


def test_dataset_keeps_metadata_across_scans(store, lineitem):
    _, options, url = store
    ds = tamis.Dataset(url, storage_options=dict(options, **FAST))
    assert ds.files == [url]
    cold = tamis.explain(url, where="l_orderkey = 3", storage_options=dict(options, **FAST),
                         threads=1)
    first = ds.explain(where="l_orderkey = 3", threads=1)
    warm = ds.explain(where="l_orderkey = 3", threads=1)
    assert warm["rows_selected"] == first["rows_selected"] == cold["rows_selected"] == 6
    # No footer, no page index again: only data pages, in fewer requests than a cold scan.
    assert warm["requests"] < cold["requests"], (warm, cold)
    assert warm["time_metadata_ns"] == 0
    rows = ds.scan(where="l_orderkey = 3", columns=["l_linenumber"])
    local = tamis.scan(lineitem, where="l_orderkey = 3", columns=["l_linenumber"])
    assert rows.equals(local)


@pytest.fixture
def auth_server(tmp_path):
    """A second moto server that checks credentials (moto's INITIAL_NO_AUTH_ACTION_COUNT=0)."""
    port = _free_port()
    env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="0")
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("moto server did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_wrong_credentials_are_a_clear_error(auth_server):
    options = dict(CREDENTIALS, endpoint=auth_server, access_key_id="wrong",
                   secret_access_key="wrong")
    start = time.monotonic()
    with pytest.raises(PermissionError, match="s3://secured/x.parquet: access denied"):
        tamis.scan("s3://secured/x.parquet", storage_options=options)
    assert time.monotonic() - start < 30


def test_sub_page_reads_fetch_blocks_not_pages(server, tmp_path):
    """Uncompressed PLAIN pages of 1 MiB: a handful of selected rows reads the 4 KiB blocks
    holding them, over the network too (the first round rides on the payload's one read)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = 400_000
    rng = np.random.default_rng(18)
    table = pa.table({
        "k": rng.permutation(rows).astype("int64"),
        "a": np.arange(rows, dtype="int64") * 3,
        "b": pa.array([None if i % 5 == 0 else i / 7 for i in range(rows)], pa.float64()),
        "c": pa.array(np.arange(rows, dtype="int32")),
    })
    path = tmp_path / "plain.parquet"
    pq.write_table(table, path, compression="none", use_dictionary=False,
                   write_page_index=True, data_page_size=1 << 20, row_group_size=rows)
    s3 = boto3.client("s3", endpoint_url=server, aws_access_key_id="testing",
                      aws_secret_access_key="testing", region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    s3.upload_file(str(path), BUCKET, "plain/plain.parquet")
    url = f"s3://{BUCKET}/plain/plain.parquet"
    options = dict(CREDENTIALS, endpoint=server, allow_http="true", **FAST)
    keys = [5, 77_777, 150_000, 399_999]
    where = f"k IN ({', '.join(map(str, keys))})"
    want = table.filter(pc.is_in(table["k"], pa.array(keys, pa.int64())))
    for source, opts in ((url, options), (str(path), None)):
        got = tamis.scan(source, where=where, storage_options=opts, threads=1)
        assert _sorted(got).equals(_sorted(want)), source
        on = tamis.explain(source, where=where, storage_options=opts, threads=1)
        off = tamis.explain(source, where=where, storage_options=opts, threads=1,
                            disable_pruning=["sub_page_reads"])
        assert on["pages_read_partially"] > 0, on
        assert off["pages_read_partially"] == 0, off
        # k's pages are read whole (it is filtered); the payload's 3 columns by blocks.
        k_bytes = rows * 8
        assert on["bytes_read"] - k_bytes < (off["bytes_read"] - k_bytes) / 4, (on, off)


@pytest.mark.parametrize("kind", ["page-bloom", "rows"])
def test_sidecar_index_of_an_object_is_written_beside_it_and_used(store, lineitem, kind):
    """`tamis index` on an object-store file writes `.<name>.tamis.puffin` beside the object;
    remote scans find it there, decode fewer pages and return the rows they return without it."""
    s3, options, _ = store
    key = f"indexed-{kind}/lineitem.parquet"
    with open(lineitem, "rb") as f:
        s3.put_object(Bucket=BUCKET, Key=key, Body=f.read())
    url = f"s3://{BUCKET}/{key}"
    where = "l_partkey = 100"
    before = tamis.explain(url, where=where, storage_options=options, threads=1)
    reports = tamis.index(url, ["l_partkey"], kind=kind, storage_options=options)
    sidecar = f"indexed-{kind}/.lineitem.parquet.tamis.puffin"
    assert [r["sidecar"] for r in reports] == [f"s3://{BUCKET}/{sidecar}"]
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"indexed-{kind}/")["Contents"]
    assert sorted(o["Key"] for o in listed) == [sidecar, key]
    got = tamis.scan(url, where=where, storage_options=options, threads=1)
    want = tamis.scan(lineitem, where=where, threads=1)
    assert got.num_rows > 0 and _sorted(got).equals(_sorted(want))
    m = tamis.explain(url, where=where, storage_options=options, threads=1)
    if kind == "rows":
        assert m["conjuncts_decided_index"] > 0, m
    else:
        assert m["pages_pruned_index"] > 0, m
    assert m["row_groups_index_stale"] == 0 and m["row_groups_index_broken"] == 0, m
    # (A file this small is fetched in one read either way: the index saves pages decoded.)
    assert m["pages_read"] < before["pages_read"], (m["pages_read"], before["pages_read"])


ODD_KEYS = [
    "odd/k=2024-01-01 00%3A00%3A00/part-0.parquet",  # Spark's escaped partition directory
    "odd/k=a#b/part-1.parquet",
    "odd/k=a?b=c/part-2.parquet",
    "odd/k=ünï cødé/part-3.parquet",
    "odd/k=100%/part-4.parquet",
]


def test_object_keys_are_keys_everywhere(store, lineitem, tmp_path):
    """Keys with `%`, `:`, `=`, space, `#`, `?` and non-ASCII name their objects through the
    Python API, a dataset, SQL and the CLI: a key is never percent-decoded or cut."""
    s3, options, _ = store
    small = tmp_path / "small.parquet"
    table = pq.read_table(lineitem).slice(0, 500).select(["l_orderkey", "l_quantity"])
    pq.write_table(table, small)
    data = small.read_bytes()
    for key in ODD_KEYS:
        s3.put_object(Bucket=BUCKET, Key=key, Body=data)
    where = "l_quantity < 10"
    want = table.filter(pq.read_table(small).column("l_quantity").to_numpy() < 10)
    for key in ODD_KEYS:
        url = f"s3://{BUCKET}/{key}"
        got = tamis.scan(url, where=where, columns=["l_orderkey", "l_quantity"],
                         storage_options=options)
        assert _sorted(got).equals(_sorted(want)), key
    # Listed, then each file reopened by the location the listing gave (as executors do).
    ds = tamis.Dataset(f"s3://{BUCKET}/odd/", storage_options=options)
    assert sorted(ds.files) == sorted(f"s3://{BUCKET}/{k}" for k in ODD_KEYS)
    got = ds.scan(where=where, columns=["l_orderkey"])
    assert got.num_rows == want.num_rows * len(ODD_KEYS)
    for f in ds.files:
        assert tamis.scan(f, where=where, storage_options=options).num_rows == want.num_rows, f
    n = tamis.sql("SELECT count(*) AS n FROM t WHERE l_quantity < 10",
                  {"t": f"s3://{BUCKET}/{ODD_KEYS[0]}"}, storage_options=options)
    assert n.column("n").to_pylist() == [want.num_rows]
    cli = os.environ.get("TAMIS_CLI")
    if cli:
        args = [a for k, v in options.items() for a in ("--storage-option", f"{k}={v}")]
        for key in ODD_KEYS:
            out = subprocess.run([cli, "query", f"s3://{BUCKET}/{key}", "--where", where,
                                  "--format", "csv", *args],
                                 capture_output=True, text=True, timeout=120)
            assert out.returncode == 0, out.stderr
            assert len(out.stdout.strip().splitlines()) - 1 == want.num_rows, key


@pytest.fixture(scope="module")
def small(server, tmp_path_factory):
    """A small file (written by pyarrow, so no TAMIS_CLI needed) in the bucket, under two keys."""
    rows = 20_000
    table = pa.table({
        "id": pa.array(range(rows), pa.int64()),
        "tag": pa.array([f"t{i % 13}" for i in range(rows)]),
    })
    path = tmp_path_factory.mktemp("small") / "small.parquet"
    pq.write_table(table, path, row_group_size=5_000, write_page_index=True)
    s3 = boto3.client("s3", endpoint_url=server, aws_access_key_id="testing",
                      aws_secret_access_key="testing", region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    for key in ("small/a.parquet", "small/b.parquet"):
        s3.upload_file(str(path), BUCKET, key)
    return str(path), pq.read_table(path)


_ENV_SCRIPT = """
import sys, pyarrow.parquet as pq, tamis
pq.write_table(tamis.scan(sys.argv[1], where="tag IN ('t3', 't5') AND id >= 100"), sys.argv[2])
"""


@pytest.mark.parametrize("allow_http", [True, False], ids=["allow_http", "endpoint_only"])
def test_standard_environment_configures_the_store(server, small, tmp_path, allow_http):
    """AWS_ENDPOINT_URL=http://… (and AWS_ALLOW_HTTP, as pyarrow, Polars and DataFusion take
    them) with no storage options: reads went to the endpoint only when it came as an option."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ENDPOINT_URL=server, AWS_ACCESS_KEY_ID="testing",
               AWS_SECRET_ACCESS_KEY="testing", AWS_REGION="us-east-1")
    if allow_http:
        env["AWS_ALLOW_HTTP"] = "true"
    local, table = small
    ids, tags = table["id"].to_pylist(), table["tag"].to_pylist()
    want = table.filter(pa.array([t in ("t3", "t5") and i >= 100 for i, t in zip(ids, tags)]))
    for url, copies in ((f"s3://{BUCKET}/small/a.parquet", 1), (f"s3://{BUCKET}/small/", 2)):
        out = tmp_path / "out.parquet"
        run = subprocess.run([sys.executable, "-c", _ENV_SCRIPT, url, str(out)], env=env,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        got = pq.read_table(out)
        assert got.num_rows == copies * want.num_rows > 0
        assert _sorted(got).equals(_sorted(pa.concat_tables([want] * copies))), url


_PARENT_DATASET = None


def _scan_in_child(url, options):
    return tamis.scan(url, where="id < 100", storage_options=options, threads=1).num_rows


def _scan_parent_dataset_in_child():
    return _PARENT_DATASET.scan(where="id < 100", threads=1).num_rows


def test_object_store_scans_in_a_forked_child(server, small):
    """A child made by fork inherits the parent's I/O runtime and stores (their connection
    pools) but not their threads; its scans must build their own, not wait on the parent's."""
    import multiprocessing

    global _PARENT_DATASET
    url = f"s3://{BUCKET}/small/a.parquet"
    options = dict(CREDENTIALS, endpoint=server, allow_http="true")
    # The parent's runtime, store and pooled connections exist before the fork.
    assert _scan_in_child(url, options) == 100
    _PARENT_DATASET = tamis.Dataset(url, storage_options=options)
    assert _scan_parent_dataset_in_child() == 100
    try:
        with multiprocessing.get_context("fork").Pool(1) as pool:
            assert pool.apply_async(_scan_in_child, (url, options)).get(timeout=30) == 100
            assert pool.apply_async(_scan_parent_dataset_in_child).get(timeout=30) == 100
    finally:
        _PARENT_DATASET = None
    # The parent's own store still works after its child used (and dropped) copies of it.
    assert _scan_in_child(url, options) == 100


def test_disk_cache_serves_a_repeated_remote_query_from_the_directory(store, lineitem, tmp_path):
    """With a cache directory, the next process's query of an object sends only the open's
    request (which also tells a changed object by its ETag): pages, page indexes and the rest of
    the metadata come from the directory, and the rows are the local copy's. An object replaced
    with other content is read anew, never served from the old version's entries."""
    import json

    s3, options, _ = store
    key = "disk-cached/lineitem.parquet"
    with open(lineitem, "rb") as f:
        s3.put_object(Bucket=BUCKET, Key=key, Body=f.read())
    url = f"s3://{BUCKET}/{key}"
    cache = tmp_path / "cache"
    columns = ["l_orderkey", "l_extendedprice", "l_discount"]
    script = (
        "import json, sys, tamis, pyarrow.parquet as pq\n"
        "url, cache, where, out = sys.argv[1:5]\n"
        "options = json.loads(sys.argv[5])\n"
        "tamis.set_page_cache(0)\n"  # every page from the directory, none from memory
        "tamis.set_disk_cache(cache, '256MiB')\n"
        "cols = ['l_orderkey', 'l_extendedprice', 'l_discount']\n"
        "e = tamis.explain(url, where=where, columns=cols, storage_options=options, threads=1)\n"
        "pq.write_table(tamis.scan(url, where=where, columns=cols, storage_options=options,\n"
        "                          threads=1), out)\n"
        "tamis.flush_disk_cache()\n"
        "s = tamis.page_cache_stats()\n"
        "print(json.dumps({'requests': e['requests'], 'read': e['pages_read'],\n"
        "                  'hits': e['pages_cache_hits'], 'misses': e['pages_cache_misses'],\n"
        "                  'metadata_hits': s['disk_metadata_hits']}))\n"
    )

    def child(where, name):
        out = tmp_path / f"{name}.parquet"
        run = subprocess.run([sys.executable, "-c", script, url, str(cache), where, str(out),
                              json.dumps(options)], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        return json.loads(run.stdout), pq.read_table(out)

    time.sleep(1.1)
    first, got = child(Q6, "first")
    want = tamis.scan(lineitem, where=Q6, columns=columns, threads=1)
    assert _sorted(got).equals(_sorted(want))
    assert first["misses"] > 0 and first["requests"] > 2, first
    second, got = child(Q6, "second")
    assert _sorted(got).equals(_sorted(want))
    assert second["read"] == 0 and second["misses"] == 0 and second["hits"] > 0, second
    assert second["metadata_hits"] > 0, second
    # The open (the object's tail, its size and ETag), then the look for a sidecar index
    # beside it (its two names at once: an index built since must be found).
    assert second["requests"] == 3, second

    # Replaced: other row groups and pages, another ETag; the old entries are never served.
    other = tmp_path / "other.parquet"
    pq.write_table(pq.read_table(lineitem).slice(0, 30_000), other, row_group_size=7_000,
                   compression="zstd", write_page_index=True)
    with open(other, "rb") as f:
        s3.put_object(Bucket=BUCKET, Key=key, Body=f.read())
    third, got = child(Q6, "third")
    want = tamis.scan(str(other), where=Q6, columns=columns, threads=1)
    assert _sorted(got).equals(_sorted(want))
    assert third["hits"] == 0 and third["misses"] > 0, third


def test_a_delta_table_in_the_store_reads_as_the_local_one(store, tmp_path):
    """A Delta table (issue 41) written locally by deltalake, with a delete that left a
    replaced file beside the live ones, copied key by key into the bucket: tamis finds the log
    below the prefix, replays it through its own S3 client and reads what the local table
    holds."""
    deltalake = pytest.importorskip("deltalake")
    s3, options, _ = store
    local = tmp_path / "delta"
    for i in range(2):
        part = pa.table({"id": pa.array(range(i * 500, (i + 1) * 500), pa.int64()),
                         "p": pa.array([f"p{j % 2}" for j in range(500)])})
        deltalake.write_deltalake(str(local), part, mode="append", partition_by=["p"])
    deltalake.DeltaTable(str(local)).delete("id % 10 = 3")
    for path in local.rglob("*"):
        if path.is_file():
            key = "delta/" + path.relative_to(local).as_posix()
            s3.put_object(Bucket=BUCKET, Key=key, Body=path.read_bytes())
    url = f"s3://{BUCKET}/delta/"
    for where in [None, "id IN (3, 13, 23, 24)", "p = 'p1' AND id < 700"]:
        remote = tamis.scan(url, where=where, storage_options=options)
        want = tamis.scan(str(local), where=where)
        assert remote.column_names == ["id", "p"]
        assert _sorted(remote).equals(_sorted(want)), where
    assert tamis.scan(url, where="id IN (3, 13, 503)", storage_options=options).num_rows == 0


def test_an_iceberg_table_in_the_store_reads_as_pyiceberg_reads_it(server, store, tmp_path):
    """An Iceberg table (issue 41) written into the bucket by pyiceberg (SQL catalog on SQLite,
    S3 file I/O), with a copy-on-write delete: tamis reads its metadata, manifests and data
    through its own S3 client, from the metadata file's URL and from the table's prefix."""
    pytest.importorskip("pyiceberg")
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    catalog = SqlCatalog(
        "s3", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=f"s3://{BUCKET}/iceberg",
        **{"s3.endpoint": server, "s3.access-key-id": "testing",
           "s3.secret-access-key": "testing", "s3.region": "us-east-1"},
    )
    catalog.create_namespace("ns")
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "p", StringType(), required=False))
    table = catalog.create_table(
        "ns.t", schema=schema,
        partition_spec=PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "p")))
    for i in range(2):
        table.append(pa.table({"id": pa.array(range(i * 500, (i + 1) * 500), pa.int64()),
                               "p": pa.array([f"p{j % 2}" for j in range(500)])}))
    table.delete("id < 100")
    table = catalog.load_table("ns.t")
    assert table.metadata_location.startswith(f"s3://{BUCKET}/")
    expected = table.scan().to_arrow()
    assert expected.num_rows == 900
    _, options, _ = store
    for location in [table.metadata_location, table.location()]:
        for where, keep in [(None, lambda r: True),
                            ("id IN (3, 113, 523)", lambda r: r["id"] in (3, 113, 523)),
                            ("p = 'p1' AND id < 700", lambda r: r["p"] == "p1" and r["id"] < 700)]:
            got = tamis.scan(location, where=where, storage_options=options)
            want = sorted((r["id"], r["p"]) for r in expected.to_pylist() if keep(r))
            assert sorted(zip(got.column("id").to_pylist(), got.column("p").to_pylist())) == want
    # Through a REST catalog that vends the bucket's endpoint and keys with the table: tamis
    # reads the metadata, manifests and data with them, given no storage option of its own.
    from table_writers import rest_catalog

    vended = {"s3.endpoint": server, "s3.access-key-id": "testing",
              "s3.secret-access-key": "testing", "s3.region": "us-east-1"}
    with rest_catalog(catalog, vended=vended) as (uri, asked):
        got = tamis.scan(f"iceberg+{uri}?table=ns.t", where="p = 'p1' AND id < 700")
        want = sorted((r["id"], r["p"]) for r in expected.to_pylist()
                      if r["p"] == "p1" and r["id"] < 700)
        assert sorted(zip(got.column("id").to_pylist(), got.column("p").to_pylist())) == want
        assert "/v1/namespaces/ns/tables/t" in asked
