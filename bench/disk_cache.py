#!/usr/bin/env python3
"""The page cache's disk tier (issue 40): a scan over the source file against the same scan
served from a warm cache directory (memory tier off), each in a new `tamis` process, with the
operating system's page cache dropped before every timed run when this process may (root:
`/proc/sys/vm/drop_caches`; otherwise says so and runs warm; `--keep-os-cache` runs warm on
purpose).

    python bench/disk_cache.py --tamis target/release/tamis --data-dir data/tpch-sf1 --runs 5

With ``--remote 10,50`` it measures the object-store case instead: the same file served by
bench/s3serve.py (in this process, loopback, that first-byte latency in ms per request), a new
`tamis explain s3://…` process per run with no cache and then through a cache directory
`tamis cache warm` filled (pages and the file's metadata), against the local file's scan with
the OS page cache warm; requests and bytes as the server counted them. Times there are the
open's and the scan's (the open is the object's validation request: one round trip at least).

Queries (`--suite tpch`) on TPC-H `lineitem`: Q6, the needle `l_partkey = 100000`
projecting two payload columns, and `l_orderkey < K` at about 0.1 % of the rows projecting
four. `--suite payload`: paper 000's payload experiment on Zstandard pages — a file of
`--rows` rows (default 1M, written here once) with a random filter column `k` and 12 random
int64 payload columns, PLAIN, 1 MiB pages, the page index; `k < bound` at 0.001 %, 0.01 % and
0.1 %, every payload column projected: the source scan reads and decompresses each payload
page holding a survivor whole, the warm disk tier reads the 4 KiB blocks of its entries that
hold the selected values. `--suite strings`: the same with 12 string payload columns (random
letters, 8 to 56 bytes, 32 on average; TPC-H `l_comment` averages 27), read from the
cache by their entries' offset tables. Times are the scan's own (`explain`'s `time_total_ns`, medians of
--runs); bytes read, bytes of the cache touched and cache hits from the same runs. The cache
directory is filled once per query by `tamis cache warm` with the same filter and columns.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

Q6 = ("l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' "
      "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24")
QUERIES = {
    "q6": (Q6, "l_extendedprice,l_discount"),
    "l_partkey = 100000": ("l_partkey = 100000", "l_orderkey,l_extendedprice"),
    "l_orderkey < 6000 (0.1%)": ("l_orderkey < 6000",
                                 "l_orderkey,l_extendedprice,l_shipdate,l_comment"),
}


PAYLOAD_COLUMNS = 12
PAYLOAD_DOMAIN = 10_000_000


def random_strings(rng, rows: int):
    """`rows` strings of random lowercase letters, 8 to 56 bytes each."""
    import numpy as np
    import pyarrow as pa
    lengths = rng.integers(8, 57, rows)
    offsets = np.zeros(rows + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = rng.integers(ord("a"), ord("z") + 1, int(offsets[-1]), dtype=np.uint8)
    return pa.LargeStringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(data)) \
        .cast(pa.string())


def payload_queries(data_dir: str, rows: int, strings: bool = False):
    """The `payload` (or `strings`) suite's file (Zstandard) and queries (see the module's
    doc)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    kind = "strings-" if strings else ""
    path = os.path.join(data_dir, f"payload-{kind}zstd-uniform-{rows}.parquet")
    if not os.path.exists(path):
        rng = np.random.default_rng(20260040)
        cols = {"k": pa.array(rng.integers(0, PAYLOAD_DOMAIN, rows), pa.int64())}
        for c in range(PAYLOAD_COLUMNS):
            cols[f"p{c}"] = (random_strings(rng, rows) if strings
                             else pa.array(rng.integers(0, 1 << 40, rows), pa.int64()))
        tmp = path + ".tmp"
        pq.write_table(pa.table(cols), tmp, use_dictionary=False, compression="zstd",
                       write_page_index=True, row_group_size=1 << 20, data_page_size=1 << 20,
                       max_rows_per_page=1 << 17)
        os.replace(tmp, path)
        time.sleep(1.1)  # a file changed less than a second ago is not cached (tamis::cache)
    select = ",".join(f"p{c}" for c in range(PAYLOAD_COLUMNS))
    out = {}
    for s in (0.00001, 0.0001, 0.001):
        bound = max(1, round(s * PAYLOAD_DOMAIN))
        out[f"payload k < {bound} ({s * 100:g}%)"] = (path, f"k < {bound}", select)
    return out


def drop_os_cache() -> bool:
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1\n")
        return True
    except OSError:
        return False


def explain(cli, path, where, select, threads, cache_dir=None, storage=None):
    cmd = [cli, "explain", path, "--where", where, "--select", select, "--threads", str(threads),
           "--json"]
    if cache_dir:
        cmd += ["--cache-dir", cache_dir]
    for k, v in (storage or {}).items():
        cmd += ["--storage-option", f"{k}={v}"]
    env = dict(os.environ, TAMIS_PAGE_CACHE="0")
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tamis", required=True, help="the tamis CLI (release build)")
    ap.add_argument("--data-dir", default="data/tpch-sf1")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--suite", choices=("tpch", "payload", "strings"), default="tpch")
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows of the payload file")
    ap.add_argument("--keep-os-cache", action="store_true",
                    help="do not drop the OS page cache (both sides read from memory)")
    ap.add_argument("--remote", default=None,
                    help="comma-separated first-byte latencies in ms: the object-store case")
    args = ap.parse_args()
    if args.remote:
        return remote(args, [float(x) for x in args.remote.split(",")])
    global drop_os_cache
    if args.keep_os_cache:
        drop_os_cache = lambda: False  # noqa: E731
    if args.suite in ("payload", "strings"):
        queries = payload_queries(args.data_dir, args.rows, args.suite == "strings")
    else:
        lineitem = os.path.join(args.data_dir, "lineitem.parquet")
        queries = {name: (lineitem, where, select) for name, (where, select) in QUERIES.items()}
    cold = drop_os_cache()
    kept = "kept (--keep-os-cache)" if args.keep_os_cache else "NOT dropped (not root)"
    print(f"OS page cache {'dropped before each timed run' if cold else kept}; "
          f"{args.threads} thread(s); medians of {args.runs}")
    rows = []
    for name, (path, where, select) in queries.items():
        cache = tempfile.mkdtemp(prefix="tamis-disk-cache-")
        try:
            subprocess.run([args.tamis, "cache", "warm", path, "--where", where, "--select", select,
                            "--cache-dir", cache], check=True, capture_output=True)
            held = sum(e.stat().st_size for e in os.scandir(cache) if e.name.endswith(".pack"))
            result = {}
            for mode in ("source", "disk"):
                runs = []
                for _ in range(args.runs):
                    drop_os_cache()
                    runs.append(explain(args.tamis, path, where, select, args.threads,
                                        cache if mode == "disk" else None))
                t = statistics.median(r["time_total_ns"] for r in runs) / 1e9
                result[mode] = (t, runs[-1], runs)
                assert runs[-1]["rows_selected"] == runs[0]["rows_selected"]
            (ts, s, _), (td, d, _) = result["source"], result["disk"]
            assert s["rows_selected"] == d["rows_selected"], name
            ps = statistics.median(r["time_payload_ns"] for r in result["source"][2]) / 1e9
            pd = statistics.median(r["time_payload_ns"] for r in result["disk"][2]) / 1e9
            rows.append((name, ts, td, ps, pd, s["bytes_read"], d["bytes_read"], held,
                         d["bytes_cache"], d["pages_read_partially"],
                         d["pages_cache_hits"], d["pages_cache_misses"],
                         s["time_decompress_ns"] / 1e9))
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    print()
    print("| query | source file s | warm disk tier s | ratio | payload stage s (source → disk "
          "tier) | payload ratio | MiB read from the file, no cache "
          "| MiB read from the file, disk tier | MiB of cache entries | MiB of entries touched "
          "| pages read by blocks | cache hits / misses | decompression s (no cache) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, ts, td, ps, pd, bs, bd, held, touched, partial, hits, misses, dec in rows:
        print(f"| {name} | {ts:.3f} | {td:.3f} | {td / ts:.2f}x | {ps:.3f} → {pd:.3f} | "
              f"{pd / ps:.2f}x | {bs / 2**20:.1f} | "
              f"{bd / 2**20:.2f} | {held / 2**20:.1f} | {touched / 2**20:.2f} | {partial} | "
              f"{hits} / {misses} | {dec:.3f} |")


def open_and_scan(r) -> float:
    """Seconds from opening the file (its footer: on an object store the validation request,
    one round trip at least) to the scan's end."""
    return (r["time_metadata_ns"] + r["time_total_ns"]) / 1e9


def remote(args, latencies):
    """The object-store case (see the module's doc): times are the open's and the scan's."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from s3serve import S3Server

    data = os.path.abspath(args.data_dir)
    path = os.path.join(data, "lineitem.parquet")
    url = "s3://bench/lineitem.parquet"
    print(f"OS page cache warm; {args.threads} thread(s); medians of {args.runs}")
    rows = []
    with S3Server(data, buckets={"bench": data}) as server:
        storage = {"endpoint": server.endpoint, "allow_http": "true", "region": "us-east-1",
                   "access_key_id": "x", "secret_access_key": "y"}
        for name, (where, select) in QUERIES.items():
            local = [explain(args.tamis, path, where, select, args.threads)
                     for _ in range(args.runs + 1)][1:]
            tl = statistics.median(open_and_scan(r) for r in local)
            for latency in latencies:
                server.latency_ms = latency
                cache = tempfile.mkdtemp(prefix="tamis-disk-cache-")
                try:
                    result = {}
                    # The uncached runs fill nothing; `tamis cache warm` fills the directory
                    # (a scan's own writes are dropped when the writer falls behind, so a
                    # first scan may leave part of it to the next: the timed runs would mix
                    # both).
                    warm = [args.tamis, "cache", "warm", url, "--where", where, "--select",
                            select, "--cache-dir", cache]
                    for k, v in storage.items():
                        warm += ["--storage-option", f"{k}={v}"]
                    subprocess.run(warm, check=True, capture_output=True)
                    for mode in ("none", "disk"):
                        n = args.runs
                        runs = []
                        for _ in range(n):
                            server.stats.reset()
                            r = explain(args.tamis, url, where, select, args.threads,
                                        cache if mode != "none" else None, storage)
                            snap = server.stats.snapshot()
                            runs.append((open_and_scan(r), snap["requests"],
                                         snap["body_bytes"], r))
                        result[mode] = runs
                    assert all(r[3]["rows_selected"] == local[0]["rows_selected"]
                               for m in result.values() for r in m), name
                    t = {m: statistics.median(r[0] for r in v) for m, v in result.items()}
                    last = {m: v[-1] for m, v in result.items()}
                    rows.append((name, latency, tl, t["none"], t["disk"], last["none"][1],
                                 last["disk"][1], last["none"][2], last["disk"][2],
                                 last["disk"][3]["pages_cache_hits"],
                                 last["disk"][3]["pages_cache_misses"]))
                finally:
                    shutil.rmtree(cache, ignore_errors=True)
    print()
    print("| query | latency ms | local file s | remote, no cache s | remote, warm disk tier s "
          "| disk tier / local | requests (no cache → disk tier) | MiB served (no cache → disk "
          "tier) | cache hits / misses |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, lat, tl, tn, td, rn, rd, bn, bd, hits, misses in rows:
        print(f"| {name} | {lat:g} | {tl:.3f} | {tn:.3f} | {td:.3f} | {td / tl:.2f}x | {rn} → {rd} "
              f"| {bn / 2**20:.1f} → {bd / 2**20:.2f} | {hits} / {misses} |")


if __name__ == "__main__":
    main()
