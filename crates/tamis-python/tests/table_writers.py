"""Writers for what the table formats' Python writers leave out, shared by the tests
(test_delta.py, test_iceberg.py) and the benchmark (bench/lakehouse.py): a Delta deletion
vector (delta-rs writes none) and Iceberg delete files committed as merge-on-read writers
(Spark) commit them (pyiceberg reads them but writes copy-on-write deletes only); an Iceberg
REST catalog serving a SQL catalog's tables; and the row comparison both test modules check
tamis with."""

from __future__ import annotations

import contextlib
import json
import os
import struct
import threading
import time
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.parquet as pq

# ── Delta Lake: deletion vectors ─────────────────────────────────────────────────────────────
# As the protocol describes (PROTOCOL.md, "Deletion Vector Format"): a file of version 1
# holding the size (big-endian), the portable RoaringBitmapArray's magic (little-endian) and
# bitmaps, and a CRC-32 (big-endian), named by the `add` action that replaces the file's
# previous one.

PORTABLE_MAGIC = 1681511377


def treemap_bytes(rows: list[int]) -> bytes:
    """A RoaringTreemap in the portable format: the count of 32-bit bitmaps (u64), then per
    bitmap its high 32 bits (u32) and the bitmap, all little-endian."""
    import pyroaring

    by_high: dict[int, list[int]] = {}
    for r in rows:
        by_high.setdefault(r >> 32, []).append(r & 0xFFFFFFFF)
    out = struct.pack("<Q", len(by_high))
    for high in sorted(by_high):
        out += struct.pack("<I", high) + pyroaring.BitMap(by_high[high]).serialize()
    return out


def add_deletion_vector(table: Path, deleted: dict[str, list[int]]) -> None:
    """Commits a new version in which each file named in `deleted` (a path relative to the
    table) has those row positions deleted by a deletion vector stored beside it."""
    import deltalake

    version = deltalake.DeltaTable(str(table)).version()
    # Each file's live `add` action as the log wrote it (its statistics included: readers
    # such as delta-rs need a deletion-vector file's numRecords).
    adds = {}
    for commit in sorted((table / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                adds[action["add"]["path"]] = action["add"]
            elif "remove" in action:
                adds.pop(action["remove"]["path"], None)
    now = int(time.time() * 1000)
    actions = [
        {
            "protocol": {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": ["deletionVectors"],
                "writerFeatures": ["deletionVectors"],
            }
        }
    ]
    for rel, rows in deleted.items():
        add = adds[rel]
        bitmap = struct.pack("<I", PORTABLE_MAGIC) + treemap_bytes(rows)
        dv_path = table / f"deletion_vector_{uuid.uuid4()}.bin"
        dv_path.write_bytes(
            b"\x01"
            + struct.pack(">I", len(bitmap))
            + bitmap
            + struct.pack(">I", zlib.crc32(bitmap) & 0xFFFFFFFF)
        )
        descriptor = {
            "storageType": "p",
            "pathOrInlineDv": dv_path.as_uri(),
            "offset": 1,
            "sizeInBytes": len(bitmap),
            "cardinality": len(set(rows)),
        }
        actions.append(
            {
                "remove": {
                    "path": rel,
                    "deletionTimestamp": now,
                    "dataChange": True,
                    "partitionValues": add["partitionValues"],
                    "size": add["size"],
                }
            }
        )
        actions.append(
            {"add": {**add, "modificationTime": now, "dataChange": True,
                     "deletionVector": descriptor}}
        )
    log = table / "_delta_log" / f"{version + 1:020d}.json"
    log.write_text("".join(json.dumps(a) + "\n" for a in actions))



# ── Apache Iceberg: delete files ─────────────────────────────────────────────────────────────


def add_delete_files(table, files: list) -> None:
    """Commits delete files (positional or equality) as a snapshot of their own: pyiceberg
    reads them but writes copy-on-write deletes only, so its snapshot producer is given one
    manifest of delete files beside the existing ones, as a merge-on-read writer (Spark) does."""
    from pyiceberg.manifest import (
        ManifestContent,
        ManifestEntry,
        ManifestEntryStatus,
        ManifestWriterV2,
    )
    from pyiceberg.table.snapshots import Operation
    from pyiceberg.table.update.snapshot import _FastAppendFiles

    class DeleteManifestWriter(ManifestWriterV2):
        def content(self) -> ManifestContent:
            return ManifestContent.DELETES

        @property
        def _meta(self) -> dict:
            return {**super()._meta, "content": "deletes"}

    class AddDeletes(_FastAppendFiles):
        def _manifests(self):
            manifests = super()._manifests()
            specs = self._transaction.table_metadata.specs()
            # A manifest holds the files of one partition spec: one per spec the files have.
            for spec_id in sorted({f.spec_id for f in files}):
                writer = DeleteManifestWriter(
                    spec=specs[spec_id],
                    schema=self.schema(),
                    output_file=self.new_manifest_output(),
                    snapshot_id=self._snapshot_id,
                    avro_compression=self._compression,
                )
                with writer:
                    for f in files:
                        if f.spec_id != spec_id:
                            continue
                        writer.add(
                            ManifestEntry.from_args(
                                status=ManifestEntryStatus.ADDED,
                                snapshot_id=self._snapshot_id,
                                sequence_number=None,
                                file_sequence_number=None,
                                data_file=f,
                            )
                        )
                manifests.append(writer.to_manifest_file())
            return manifests

    with table.transaction() as tx:
        update = tx.update_snapshot()
        producer = AddDeletes(
            operation=Operation.DELETE,
            transaction=tx,
            io=update._io,
        )
        producer.commit()


def positional_delete_file(table, data_file, positions: list[int]):
    """A positional delete file (pyiceberg's `DataFile`) deleting `positions` of `data_file`
    (in its partition), written beside the table's data."""
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat

    path = f"{table.location()}/data/delete-{uuid.uuid4()}.parquet"
    local = path.removeprefix("file://")
    schema = pa.schema(
        [
            pa.field("file_path", pa.string(), nullable=False,
                     metadata={b"PARQUET:field_id": b"2147483546"}),
            pa.field("pos", pa.int64(), nullable=False,
                     metadata={b"PARQUET:field_id": b"2147483545"}),
        ]
    )
    rows = pa.table(
        {"file_path": [data_file.file_path] * len(positions), "pos": sorted(positions)},
        schema=schema,
    )
    pq.write_table(rows, local)
    f = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=data_file.partition,
        record_count=len(positions),
        file_size_in_bytes=os.path.getsize(local),
    )
    f.spec_id = data_file.spec_id
    return f


# ── Iceberg: a REST catalog ──────────────────────────────────────────────────────────────────
# The two calls of the REST catalog's protocol (its OpenAPI spec) that a reader makes:
# `GET /v1/config` and `GET /v1/namespaces/{namespace}/tables/{table}` (LoadTable), answered
# from a pyiceberg SQL catalog; errors as the spec's ErrorModel. pyiceberg has a REST client
# but no server.


@contextlib.contextmanager
def rest_catalog(sql_catalog, token: str | None = None, vended: dict | None = None):
    """Serves `sql_catalog`'s tables on 127.0.0.1 for the block; yields the base URL and the
    paths asked for. With `token`, a request without `Authorization: Bearer <token>` is
    refused (401); `vended` is the storage configuration returned with every table."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def answer(self, code: int, body: dict):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def error(self, code: int, kind: str, message: str):
            self.answer(code, {"error": {"message": message, "type": kind, "code": code}})

        def do_GET(self):
            path = urlparse(self.path).path
            asked.append(path)
            if token is not None and self.headers.get("Authorization") != f"Bearer {token}":
                return self.error(401, "NotAuthorizedException", "no valid token")
            if path == "/v1/config":
                return self.answer(200, {"defaults": {}, "overrides": {}})
            parts = path.split("/")
            if len(parts) == 6 and parts[:3] == ["", "v1", "namespaces"] and parts[4] == "tables":
                namespace = tuple(unquote(parts[3]).split("\x1f"))
                try:
                    table = sql_catalog.load_table((*namespace, unquote(parts[5])))
                except Exception as e:  # pyiceberg's NoSuchTableError, NoSuchNamespaceError
                    return self.error(404, "NoSuchTableException", str(e))
                return self.answer(200, {
                    "metadata-location": table.metadata_location,
                    "metadata": json.loads(table.io.new_input(table.metadata_location).open().read()),
                    "config": vended or {},
                })
            return self.error(404, "NotFoundException", f"no route {path}")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# ── comparing a table's rows with the writer's ───────────────────────────────────────────────


def sorted_rows(table: pa.Table) -> list:
    """The rows as dicts, columns and rows in a fixed order (a scan's order is not the
    writer's)."""
    names = sorted(table.column_names)
    rows = table.select(names).to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def oracle(expected: pa.Table, where: str | None) -> pa.Table:
    """The rows of `expected` that `where` keeps, by DuckDB."""
    if where is None:
        return expected
    import duckdb

    con = duckdb.connect()
    con.register("t", expected)
    return con.sql(f"SELECT * FROM t WHERE {where}").to_arrow_table()


def random_wheres(seed: int, n: int, columns: dict[str, str]) -> list[str]:
    """`n` WHERE texts that tamis and DuckDB both parse, drawn from a seed over `columns` (a
    name → one of "int", "float", "str", "date", or a list of the strings it holds): comparisons, ranges, IN lists, NULL tests and
    NOT, joined by AND and OR, so a test compares rows under predicates nobody picked."""
    import random

    rng = random.Random(seed)

    def literal(kind) -> str:
        if isinstance(kind, list):
            return f"'{rng.choice(kind)}'"
        if kind == "int":
            return str(rng.randrange(-5, 9100))
        if kind == "float":
            return f"{rng.uniform(-1, 101):.3f}"
        if kind == "date":
            return f"DATE '{rng.randrange(2019, 2025)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}'"
        return f"'v{rng.randrange(35)}'" if rng.random() < 0.9 else "''"

    def small(kind) -> str:
        # Values the columns hold often, so equality and IN keep rows.
        if kind == "int":
            return str(rng.randrange(50))
        return literal(kind)

    def atom() -> str:
        name, kind = rng.choice(list(columns.items()))
        form = rng.randrange(6)
        if form == 0:
            return f"{name} {rng.choice(['<', '<=', '>', '>=', '<>'])} {literal(kind)}"
        if form == 1:
            return f"{name} = {small(kind)}"
        if form == 2:
            a, b = literal(kind), literal(kind)
            if kind in ("int", "float"):
                a, b = sorted([a, b], key=float)
            elif kind == "date":
                a, b = sorted([a, b])
            return f"{name} BETWEEN {a} AND {b}"
        if form == 3:
            return f"{name} IN ({', '.join(small(kind) for _ in range(rng.randrange(1, 4)))})"
        if form == 4:
            return f"{name} IS {rng.choice(['', 'NOT '])}NULL"
        return f"NOT ({name} = {small(kind)})"

    def expr(depth: int) -> str:
        if depth == 0 or rng.random() < 0.4:
            return atom()
        return f"({expr(depth - 1)} {rng.choice(['AND', 'OR'])} {expr(depth - 1)})"

    return [expr(2) for _ in range(n)]
