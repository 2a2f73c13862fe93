#!/usr/bin/env python3
"""A minimal S3-compatible server over a local directory, for benchmarks on loopback.

    python bench/s3serve.py --root data/bench --bucket bench=data/bench/tpch-sf1 --latency-ms 10

Why not moto: moto copies the whole object on every ranged GET, so a 4 KiB range of a 231 MB
object costs about 125 ms there and a benchmark would measure moto. Here a ranged GET seeks and
reads only the requested bytes, so a request costs what it reads, plus a fixed first-byte
latency (``--latency-ms``, changeable at run time) that stands in for a real object store.

Bucket ``b`` is the directory ``ROOT/b`` unless ``--bucket b=DIR`` maps it elsewhere. Supported:
GetObject (with ``Range: bytes=a-b``, ``bytes=a-``, ``bytes=-n``, and ``If-Match``), HeadObject, ListObjectsV2
and V1, HeadBucket and GetBucketLocation, enough for pyarrow, Polars, DataFusion (object_store)
and boto3. Signatures are not checked. The server binds 127.0.0.1 only.

Control paths (no latency, not counted): ``GET /__stats`` (JSON: requests by method and by
operation, response body bytes, sequential round trips; it waits up to 1 s for requests still
being answered, so a client that has read its responses sees them counted),
``POST /__stats/reset`` and
``POST /__latency?ms=N``. In-process use: ``S3Server(root).start()`` … ``.stop()``.
"""

from __future__ import annotations

import argparse
import base64
import email.utils
import hashlib
import json
import os
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Optional, Tuple
from urllib.parse import parse_qs, quote, unquote, urlsplit
from xml.sax.saxutils import escape

HOST = "127.0.0.1"
CHUNK = 1 << 20  # bytes read from disk and written to the socket at a time
MAX_KEYS = 1000  # S3's own page size for listings
XMLNS = "http://s3.amazonaws.com/doc/2006-03-01/"


class Stats:
    """What clients asked for since the last reset. Each request's (start, end) is kept so that
    `round_trips` can tell how many requests had to wait for one another."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        # Requests begun and not yet recorded. A request is recorded after its last write, so a
        # client that has its response may ask for the stats before the handler records it.
        self.in_flight = 0
        self.idle = threading.Condition(self.lock)
        self.reset()

    def begin(self) -> None:
        with self.lock:
            self.in_flight += 1

    def reset(self) -> None:
        with self.lock:
            self.methods: Dict[str, int] = {}
            self.operations: Dict[str, int] = {}
            self.body_bytes = 0
            self.spans: List[Tuple[float, float]] = []

    def record(self, method: str, operation: str, body_bytes: int, start: float, end: float) -> None:
        with self.lock:
            self.methods[method] = self.methods.get(method, 0) + 1
            self.operations[operation] = self.operations.get(operation, 0) + 1
            self.body_bytes += body_bytes
            self.spans.append((start, end))
            self.in_flight -= 1
            self.idle.notify_all()

    def snapshot(self, wait: float = 0.0) -> dict:
        """The counts; with `wait`, first up to that many seconds for the requests in flight to be
        recorded (so that a client sees the requests whose responses it has read)."""
        with self.lock:
            self.idle.wait_for(lambda: self.in_flight == 0, timeout=wait)
            return {
                "requests": len(self.spans),
                "methods": dict(self.methods),
                "operations": dict(self.operations),
                "body_bytes": self.body_bytes,
                "round_trips": round_trips(self.spans),
            }


def round_trips(spans: List[Tuple[float, float]]) -> int:
    """The longest chain of requests each starting after the previous one ended: the number of
    latencies a client paid one after another (1 when everything was in flight at once). Greedy
    by end time gives the largest set of pairwise disjoint intervals, which is that chain."""
    chain, last_end = 0, float("-inf")
    for start, end in sorted(spans, key=lambda s: s[1]):
        if start >= last_end:
            chain, last_end = chain + 1, end
    return chain


def etag(st: os.stat_result) -> str:
    """Stable across requests and restarts while the file is unchanged, without reading it."""
    return '"' + hashlib.md5(f"{st.st_size}-{st.st_mtime_ns}".encode()).hexdigest() + '"'


def iso8601(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def parse_range(header: Optional[str], size: int) -> Optional[Tuple[int, int]]:
    """(first, last) inclusive for a single `bytes=` range; None to serve the whole object (no
    header, or one that is malformed or asks for several ranges, which S3 ignores too). Raises
    `Unsatisfiable` when the range starts past the end or the suffix is empty."""
    if not header or not header.startswith("bytes=") or "," in header:
        return None
    first, sep, last = header[len("bytes="):].strip().partition("-")
    if not sep:
        return None
    try:
        if first == "":
            n = int(last)
            if n <= 0 or size == 0:
                raise Unsatisfiable
            return max(0, size - n), size - 1
        a = int(first)
        b = int(last) if last else None
    except ValueError:
        return None
    if a < 0 or (b is not None and b < a):
        return None
    if a >= size:
        raise Unsatisfiable
    return a, size - 1 if b is None else min(b, size - 1)


class Unsatisfiable(Exception):
    pass


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: clients reuse connections as with a real store
    # Headers and body go out in separate writes; with Nagle's algorithm the body would wait for
    # the client's delayed ACK (40 ms on Linux) and every request would look slow.
    disable_nagle_algorithm = True
    server: "_HTTPServer"

    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass  # one line per request would cost more than the requests

    # ---- plumbing ----------------------------------------------------------------------------

    def _begin(self) -> None:
        self._start = time.perf_counter()
        self._end = self._start
        self._body_bytes = 0
        self._first_byte = False
        self._operation = "Unknown"
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)  # drain, so the connection stays usable

    def _wait_first_byte(self) -> None:
        if not self._first_byte:
            self._first_byte = True
            latency = self.server.owner.latency_ms
            if latency > 0:
                time.sleep(latency / 1000)

    def _send(self, status: int, headers: Dict[str, str], body: bytes = b"") -> None:
        self._wait_first_byte()
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        if "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        self._end = time.perf_counter()  # see _finish
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)
            self._body_bytes += len(body)

    def _xml(self, status: int, body: str) -> None:
        self._send(status, {"Content-Type": "application/xml"},
                   ('<?xml version="1.0" encoding="UTF-8"?>\n' + body).encode())

    def _error(self, status: int, code: str, message: str, resource: str = "") -> None:
        self._xml(status, f"<Error><Code>{code}</Code><Message>{escape(message)}</Message>"
                          f"<Resource>{escape(resource)}</Resource><RequestId>0</RequestId></Error>")

    def _finish(self) -> None:
        # A request ends when its last write starts, not here: once that write is out, the client
        # may send its next request, which another thread can take before this one runs again,
        # and that request must not look concurrent with this one.
        self.server.owner.stats.record(self.command, self._operation, self._body_bytes,
                                       self._start, self._end)

    def _dispatch(self) -> None:
        self._begin()
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        if url.path.startswith("/__"):
            self._control(url.path, query)
            return
        self.server.owner.stats.begin()
        try:
            self._s3(unquote(url.path), query)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up on the body; still counted
        finally:
            self._finish()

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = _dispatch

    # ---- control -----------------------------------------------------------------------------

    def _control(self, path: str, query: Dict[str, str]) -> None:
        owner = self.server.owner
        self._first_byte = True  # control requests are not delayed
        if path == "/__stats" and self.command == "GET":
            body = json.dumps(owner.stats.snapshot(wait=1.0)).encode()
            self._send(200, {"Content-Type": "application/json"}, body)
        elif path == "/__stats/reset" and self.command == "POST":
            owner.stats.reset()
            self._send(204, {})
        elif path == "/__latency" and self.command == "POST" and "ms" in query:
            owner.latency_ms = float(query["ms"])
            self._send(204, {})
        else:
            self._send(404, {})

    # ---- S3 ----------------------------------------------------------------------------------

    def _s3(self, path: str, query: Dict[str, str]) -> None:
        bucket, _, key = path.lstrip("/").partition("/")
        directory = self.server.owner.bucket_dir(bucket) if bucket else None
        if directory is None or not os.path.isdir(directory):
            self._operation = "NoSuchBucket"
            self._error(404, "NoSuchBucket", "The specified bucket does not exist", bucket)
            return
        if self.command not in ("GET", "HEAD"):
            self._operation = f"Unsupported{self.command}"
            self._error(501, "NotImplemented", "Only reads are supported", path)
            return
        if not key:
            if self.command == "HEAD":
                self._operation = "HeadBucket"
                self._send(200, {"x-amz-bucket-region": "us-east-1"})
            elif "location" in query:
                self._operation = "GetBucketLocation"
                self._xml(200, f'<LocationConstraint xmlns="{XMLNS}"/>')
            else:
                self._list(bucket, directory, query)
            return
        self._object(directory, key)

    def _object(self, directory: str, key: str) -> None:
        self._operation = "HeadObject" if self.command == "HEAD" else "GetObject"
        path = os.path.realpath(os.path.join(directory, key))
        if not path.startswith(os.path.realpath(directory) + os.sep) or not os.path.isfile(path):
            self._error(404, "NoSuchKey", "The specified key does not exist.", key)
            return
        st = os.stat(path)
        headers = {
            "ETag": etag(st),
            "Last-Modified": email.utils.formatdate(st.st_mtime, usegmt=True),
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        size = st.st_size
        wanted_etag = self.headers.get("If-Match")
        if wanted_etag is not None and wanted_etag.strip() not in ("*", headers["ETag"]):
            # Readers pin the version they saw first; a replaced object must fail their request.
            self._operation += "PreconditionFailed"
            self._error(412, "PreconditionFailed", "At least one of the preconditions you specified did not hold.",
                        key)
            return
        if self.command == "HEAD":
            self._send(200, dict(headers, **{"Content-Length": str(size)}))
            return
        try:
            wanted = parse_range(self.headers.get("Range"), size)
        except Unsatisfiable:
            self._operation = "GetObjectInvalidRange"
            self._xml(416, "<Error><Code>InvalidRange</Code><Message>The requested range is not "
                           f"satisfiable</Message><ActualObjectSize>{size}</ActualObjectSize></Error>")
            return
        if wanted is None:
            first, last, status = 0, size - 1, 200
        else:
            (first, last), status = wanted, 206
            headers["Content-Range"] = f"bytes {first}-{last}/{size}"
        length = last - first + 1
        headers["Content-Length"] = str(length)
        with open(path, "rb") as f:
            f.seek(first)
            chunk = f.read(min(CHUNK, length))  # before the headers: an I/O error is still a 500
            self._send(status, headers)
            while chunk:
                self._end = time.perf_counter()
                self.wfile.write(chunk)
                self._body_bytes += len(chunk)
                length -= len(chunk)
                chunk = f.read(min(CHUNK, length)) if length else b""

    def _list(self, bucket: str, directory: str, query: Dict[str, str]) -> None:
        v2 = query.get("list-type") == "2"
        self._operation = "ListObjectsV2" if v2 else "ListObjects"
        prefix = query.get("prefix", "")
        delimiter = query.get("delimiter", "")
        max_keys = min(int(query.get("max-keys") or MAX_KEYS), MAX_KEYS)
        url_encode = query.get("encoding-type") == "url"
        if v2:
            token = query.get("continuation-token")
            after = base64.urlsafe_b64decode(token).decode() if token else query.get("start-after", "")
        else:
            after = query.get("marker", "")

        entries = list_entries(directory, prefix, delimiter)
        page = [e for e in entries if e[0] > after][:max_keys] if max_keys else []
        truncated = bool(page) and entries.index(page[-1]) < len(entries) - 1

        def enc(s: str) -> str:
            return escape(quote(s, safe="/") if url_encode else s)

        parts = [f'<ListBucketResult xmlns="{XMLNS}">', f"<Name>{escape(bucket)}</Name>",
                 f"<Prefix>{enc(prefix)}</Prefix>", f"<MaxKeys>{max_keys}</MaxKeys>",
                 f"<IsTruncated>{'true' if truncated else 'false'}</IsTruncated>"]
        if delimiter:
            parts.append(f"<Delimiter>{enc(delimiter)}</Delimiter>")
        if url_encode:
            parts.append("<EncodingType>url</EncodingType>")
        if v2:
            parts.append(f"<KeyCount>{len(page)}</KeyCount>")
            if "continuation-token" in query:
                parts.append(f"<ContinuationToken>{escape(query['continuation-token'])}</ContinuationToken>")
            if "start-after" in query:
                parts.append(f"<StartAfter>{enc(query['start-after'])}</StartAfter>")
            if truncated:
                token = base64.urlsafe_b64encode(page[-1][0].encode()).decode()
                parts.append(f"<NextContinuationToken>{token}</NextContinuationToken>")
        else:
            parts.append(f"<Marker>{enc(after)}</Marker>")
            if truncated and delimiter:  # without a delimiter, V1 clients use the last key
                parts.append(f"<NextMarker>{enc(page[-1][0])}</NextMarker>")
        for name, st in page:
            if st is None:
                parts.append(f"<CommonPrefixes><Prefix>{enc(name)}</Prefix></CommonPrefixes>")
            else:
                parts.append(f"<Contents><Key>{enc(name)}</Key><LastModified>{iso8601(st.st_mtime)}"
                             f"</LastModified><ETag>{escape(etag(st))}</ETag><Size>{st.st_size}</Size>"
                             "<StorageClass>STANDARD</StorageClass></Contents>")
        parts.append("</ListBucketResult>")
        self._xml(200, "".join(parts))


def list_entries(directory: str, prefix: str, delimiter: str) -> List[Tuple[str, Optional[os.stat_result]]]:
    """Every key under `prefix` (with its stat) or common prefix (stat None), sorted as S3 sorts:
    by UTF-8 bytes. Keys are file paths relative to the bucket directory, with '/'."""
    keys = []
    for dirpath, _, files in os.walk(directory):
        rel = os.path.relpath(dirpath, directory)
        base = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        if not (base.startswith(prefix) or prefix.startswith(base)):
            continue
        for name in files:
            key = base + name
            if key.startswith(prefix) and not name.endswith(".tmp"):
                keys.append(key)
    out: Dict[str, Optional[os.stat_result]] = {}
    for key in keys:
        cut = key.find(delimiter, len(prefix)) if delimiter else -1
        if cut >= 0:
            out[key[: cut + len(delimiter)]] = None
        else:
            out[key] = os.stat(os.path.join(directory, key))
    return sorted(out.items(), key=lambda e: e[0].encode())


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True  # a client that keeps a connection open never blocks stop()
    owner: "S3Server"


class S3Server:
    """The server, in-process: `start()` binds 127.0.0.1 (port 0 = any free one) and serves on a
    daemon thread; `latency_ms` may be changed while it runs; `stats.snapshot()` / `stats.reset()`."""

    def __init__(self, root: str, port: int = 0, latency_ms: float = 0.0,
                 buckets: Optional[Dict[str, str]] = None) -> None:
        self.root = root
        self.port = port
        self.latency_ms = latency_ms
        self.buckets = dict(buckets or {})
        self.stats = Stats()
        self._httpd: Optional[_HTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    def bucket_dir(self, bucket: str) -> Optional[str]:
        if bucket in self.buckets:
            return self.buckets[bucket]
        if "/" in bucket or bucket in (".", ".."):
            return None
        return os.path.join(self.root, bucket)

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self) -> "S3Server":
        self._httpd = _HTTPServer((HOST, self.port), Handler)
        self._httpd.owner = self
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="s3serve", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join(timeout=5)
            self._httpd = self._thread = None

    def __enter__(self) -> "S3Server":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", required=True, help="bucket b is ROOT/b unless --bucket maps it")
    p.add_argument("--bucket", action="append", default=[], metavar="NAME=DIR",
                   help="serve DIR as bucket NAME (repeatable)")
    p.add_argument("--port", type=int, default=0, help="0: any free port (printed on stdout)")
    p.add_argument("--latency-ms", type=float, default=0.0, help="delay before every response's first byte")
    args = p.parse_args(argv)
    buckets = dict(b.split("=", 1) for b in args.bucket)
    server = S3Server(args.root, args.port, args.latency_ms, buckets).start()
    print(f"s3serve: listening on {server.endpoint}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
