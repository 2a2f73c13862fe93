"""bench/s3serve.py: ranged reads, HEAD, listings, latency and counters, over raw HTTP and boto3."""

import http.client
import json
import os
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, HERE)

from s3serve import S3Server, round_trips  # noqa: E402

DATA = bytes(range(256)) * 40  # 10 240 bytes


@pytest.fixture
def root(tmp_path):
    bucket = tmp_path / "bk"
    (bucket / "d" / "e").mkdir(parents=True)
    (bucket / "a.bin").write_bytes(DATA)
    (bucket / "empty").write_bytes(b"")
    (bucket / "d" / "x=1").write_bytes(b"hello")
    (bucket / "d" / "e" / "y").write_bytes(b"world")
    (bucket / "z").write_bytes(b"z")
    return tmp_path


@pytest.fixture
def server(root):
    s = S3Server(str(root)).start()
    try:
        yield s
    finally:
        s.stop()


def request(server, method, path, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def get_range(server, spec, key="a.bin"):
    return request(server, "GET", f"/bk/{key}", {"Range": spec})


@pytest.mark.parametrize("spec, first, last", [
    ("bytes=10-19", 10, 19),
    ("bytes=10240-", None, None),
    ("bytes=10000-", 10000, 10239),
    ("bytes=10200-99999", 10200, 10239),  # past the end: clipped
    ("bytes=-16", 10224, 10239),
    ("bytes=-99999", 0, 10239),  # suffix longer than the object: all of it
    ("bytes=0-0", 0, 0),
])
def test_ranges(server, spec, first, last):
    status, headers, body = get_range(server, spec)
    if first is None:
        assert status == 416
        return
    assert status == 206
    assert headers["Content-Range"] == f"bytes {first}-{last}/{len(DATA)}"
    assert body == DATA[first:last + 1]


@pytest.mark.parametrize("spec", ["bytes=0-", "bytes=-1", "bytes=0-10"])
def test_empty_object_ranges_are_unsatisfiable(server, spec):
    assert get_range(server, spec, "empty")[0] == 416


def test_get_without_or_with_ignorable_range(server):
    for headers in ({}, {"Range": "bytes=5-2"}, {"Range": "bytes=0-1,4-5"}, {"Range": "items=0-1"}):
        status, got, body = request(server, "GET", "/bk/a.bin", headers)
        assert (status, body) == (200, DATA)
        assert "Content-Range" not in got
    assert request(server, "GET", "/bk/empty")[::2] == (200, b"")


def test_head_and_missing(server, root):
    status, headers, body = request(server, "HEAD", "/bk/a.bin")
    assert status == 200 and body == b""
    assert headers["Content-Length"] == str(len(DATA))
    assert headers["ETag"].startswith('"') and "GMT" in headers["Last-Modified"]
    assert request(server, "HEAD", "/bk/a.bin")[1]["ETag"] == headers["ETag"]  # stable
    pinned = {"If-Match": headers["ETag"], "Range": "bytes=0-1"}
    assert request(server, "GET", "/bk/a.bin", pinned)[0] == 206
    os.utime(root / "bk" / "a.bin", ns=(1, 1))  # "replaced": a new version
    assert request(server, "HEAD", "/bk/a.bin")[1]["ETag"] != headers["ETag"]
    assert request(server, "GET", "/bk/a.bin", pinned)[0] == 412
    assert request(server, "GET", "/bk/nope")[0] == 404
    assert request(server, "GET", "/bk/d")[0] == 404  # a directory is not an object
    (root / "secret").write_bytes(b"outside the bucket")
    assert request(server, "GET", "/bk/..%2Fsecret")[0] == 404
    assert request(server, "HEAD", "/nobucket")[0] == 404
    assert request(server, "HEAD", "/bk")[0] == 200


def test_list_v2_prefix_delimiter_pagination(server):
    boto3 = pytest.importorskip("boto3")
    from botocore.config import Config

    client = boto3.client("s3", endpoint_url=server.endpoint, aws_access_key_id="x",
                          aws_secret_access_key="y", region_name="us-east-1",
                          config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    every = ["a.bin", "d/e/y", "d/x=1", "empty", "z"]
    assert [o["Key"] for o in client.list_objects_v2(Bucket="bk")["Contents"]] == every
    top = client.list_objects_v2(Bucket="bk", Delimiter="/")
    assert [p["Prefix"] for p in top["CommonPrefixes"]] == ["d/"]
    assert [o["Key"] for o in top["Contents"]] == ["a.bin", "empty", "z"]
    inner = client.list_objects_v2(Bucket="bk", Prefix="d/", Delimiter="/")
    assert [p["Prefix"] for p in inner["CommonPrefixes"]] == ["d/e/"]
    assert [(o["Key"], o["Size"]) for o in inner["Contents"]] == [("d/x=1", 5)]
    pages = client.get_paginator("list_objects_v2").paginate(Bucket="bk", PaginationConfig={"PageSize": 2})
    assert [[o["Key"] for o in p["Contents"]] for p in pages] == [every[:2], every[2:4], every[4:]]
    # A page boundary on a common prefix: the prefix is one entry and is not repeated.
    pages = client.get_paginator("list_objects_v2").paginate(
        Bucket="bk", Delimiter="/", PaginationConfig={"PageSize": 1})
    seen = [(o.get("Key") or o.get("Prefix")) for p in pages
            for o in p.get("Contents", []) + p.get("CommonPrefixes", [])]
    assert seen == ["a.bin", "d/", "empty", "z"]
    v1 = client.get_paginator("list_objects").paginate(Bucket="bk", PaginationConfig={"PageSize": 3})
    assert [o["Key"] for p in v1 for o in p["Contents"]] == every
    assert client.list_objects_v2(Bucket="bk", Prefix="nothing")["KeyCount"] == 0
    assert client.get_object(Bucket="bk", Key="d/x=1", Range="bytes=1-")["Body"].read() == b"ello"
    assert client.head_object(Bucket="bk", Key="a.bin")["ContentLength"] == len(DATA)
    client.head_bucket(Bucket="bk")


def test_list_xml_fields(server):
    status, _, body = request(server, "GET", "/bk?list-type=2&prefix=d%2F&max-keys=1")
    text = body.decode()
    assert status == 200
    for field in ("<KeyCount>1</KeyCount>", "<IsTruncated>true</IsTruncated>", "<NextContinuationToken>",
                  "<Key>d/e/y</Key>", "<Size>5</Size>", "<ETag>\"", "<LastModified>"):
        assert field in text
    status, _, body = request(server, "GET", "/bk?location")
    assert status == 200 and b"LocationConstraint" in body
    assert b"<Key>d/x%3D1</Key>" in request(server, "GET", "/bk?list-type=2&encoding-type=url")[2]


def test_latency_applies_to_every_request(server):
    server.latency_ms = 60
    for method, path in (("GET", "/bk/a.bin"), ("HEAD", "/bk/a.bin"), ("GET", "/bk?list-type=2"),
                         ("GET", "/bk/nope")):
        start = time.perf_counter()
        request(server, method, path)
        assert time.perf_counter() - start >= 0.06
    start = time.perf_counter()
    request(server, "GET", "/__stats")  # control requests are not delayed
    assert time.perf_counter() - start < 0.06
    request(server, "POST", "/__latency?ms=0")
    assert server.latency_ms == 0


def test_stats_counted_and_reset(server):
    get_range(server, "bytes=0-99")
    get_range(server, "bytes=-10")
    request(server, "HEAD", "/bk/a.bin")
    stats = json.loads(request(server, "GET", "/__stats")[2])
    assert stats["requests"] == 3
    assert stats["methods"] == {"GET": 2, "HEAD": 1}
    assert stats["operations"] == {"GetObject": 2, "HeadObject": 1}
    assert stats["body_bytes"] == 110
    assert stats["round_trips"] == 3
    assert request(server, "POST", "/__stats/reset")[0] == 204
    assert server.stats.snapshot()["requests"] == 0


def test_round_trips_counts_the_longest_sequential_chain():
    assert round_trips([]) == 0
    assert round_trips([(0, 1), (0.1, 1), (0.2, 1.1)]) == 1  # all in flight together
    assert round_trips([(0, 1), (1, 2), (1.5, 3), (3, 4)]) == 3
    assert round_trips([(0, 10), (1, 2), (3, 4)]) == 2


def test_binds_loopback_only(server):
    assert server._httpd.server_address[0] == "127.0.0.1"


def test_command_line(root):
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "s3serve.py"), "--root", str(root),
                             "--bucket", f"other={root / 'bk' / 'd'}", "--latency-ms", "0"],
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("s3serve: listening on http://127.0.0.1:")
        port = int(line.rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/other/x=1")
        assert conn.getresponse().read() == b"hello"
        conn.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
