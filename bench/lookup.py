"""Suite `lookup`: paper 002's page-index + SBBF experiments, scaled, and TPC-H point lookups.

Three parts:

* ``tpch_queries`` (run by the normal harness, every engine): ``l_partkey = 100000`` on SF1
  lineitem as generated, after ``tamis optimize --bloom-filter l_partkey``, after
  ``tamis optimize --sort-by l_partkey --bloom-filter l_partkey``, and with the page-bloom and
  rows sidecar indexes (issue 17).
* ``sidecar_report`` (in the harness's main process, 1 thread, warm cache): issue 17's lookup
  benchmark — many present and absent keys and IN lists on l_partkey and l_suppkey, tamis with
  no index, row-group Bloom filters, each sidecar and the sorted rewrite, against DuckDB, Polars
  and DataFusion; index sizes and build times, the page filters' measured false-positive rate,
  and the issue's targets, met or not.
* ``paper_report`` (tamis only, single thread, warm cache, in the harness's main process): a
  file of ``--rows`` rows (default 1M) with int32, int64, float, double and 124-character string
  columns, sorted and unsorted, written by ``tamis optimize`` with 128 KiB PLAIN uncompressed pages
  in one row group and a Bloom filter on every column (fpp 0.001). Equality lookups (``SELECT *``)
  of present values, absent values outside the column's range and absent values in gaps (the data
  holds even numbers; gaps are odd), in four modes chosen with ``disable_pruning``: no index or
  filter, page index only, Bloom filter only, both. Row-group statistics are off in every mode (a
  one-row-group file's min/max would otherwise answer out-of-range lookups in every mode). Then the
  file size per structure and the measured false-positive rate for fpp 0.001 … 0.5.
"""

from __future__ import annotations

import datetime
import glob
import json
import os

# Peers decompress every page of every query: tamis's page cache (on by default in a process
# that can hit it) is off here unless TAMIS_PAGE_CACHE asks for it (bench/page_cache.py and
# bench/disk_cache.py measure the cache).
os.environ.setdefault("TAMIS_PAGE_CACHE", "0")
import random
import statistics
import subprocess
import time
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from engines import Query
from pred import col_cmp, isin

SEED = 20260002
TYPES = ["int32", "int64", "float", "double", "string"]
MODES = {
    "none": ["statistics", "bloom_filters", "page_index"],
    "page index": ["statistics", "bloom_filters"],
    "bloom": ["statistics", "page_index"],
    "both": ["statistics"],
}
FPPS = [0.001, 0.01, 0.1, 0.2, 0.5]
PAGE_BYTES = 128 * 1024


# ---- TPC-H ---------------------------------------------------------------------------------------

# lineitem's rewrites by `tamis optimize`, beside the file: key -> (label, file name, flags).
REWRITES = {
    "bloom": ("--bloom-filter l_partkey", "lineitem-bloom-partkey.parquet",
              ["--bloom-filter", "l_partkey"]),
    "sorted": ("--sort-by l_partkey --bloom-filter l_partkey", "lineitem-sorted-partkey.parquet",
               ["--sort-by", "l_partkey", "--bloom-filter", "l_partkey"]),
}
# Bumped when `tamis optimize`'s default layout changes (2: sorted rewrites laid out for
# lookups), so that rewrites made by an older build are made again.
REWRITE_LAYOUT = 2
# Sidecar indexes of the original file (issue 17): columns, kinds, page filters' target fpp.
INDEX_COLUMNS = ("l_partkey", "l_suppkey")
INDEX_KINDS = ("page-bloom", "rows")
INDEX_FPP = 0.01


def rewrite(original: str, key: str, cli: str) -> Tuple[str, dict]:
    """The rewrite `key` of REWRITES beside `original`, made once, and its build record
    ({"seconds", "flags", "built"}), kept in `<rewrite>.build.json` so that later runs can set
    index builds against it; a rewrite without that record, or older than the original, is made
    again."""
    _, name, flags = REWRITES[key]
    path = os.path.join(os.path.dirname(original), name)
    record = path + ".build.json"
    info = None
    if os.path.exists(path) and os.path.exists(record) \
            and os.path.getmtime(path) >= os.path.getmtime(original):
        with open(record) as f:
            info = json.load(f)
    if info is None or info.get("flags") != flags or info.get("layout") != REWRITE_LAYOUT:
        start = time.perf_counter()
        subprocess.run([cli, "optimize", original, "--output", path, *flags], check=True)
        info = {"seconds": time.perf_counter() - start, "flags": flags, "layout": REWRITE_LAYOUT,
                "built": datetime.date.today().isoformat()}
        with open(record, "w") as f:
            json.dump(info, f)
    return path, info


def sidecar_in(idx: str, original: str) -> Optional[str]:
    """The sidecar of `original` in the index directory `idx` (`tamis index --output` names it
    `.<name>.<hash of the file's path>.tamis.puffin`), if there is one."""
    found = glob.glob(os.path.join(idx, f".{os.path.basename(original)}.*.tamis.puffin"))
    return found[0] if len(found) == 1 else None


def sidecar_dir(original: str, kind: str, cli: str, rebuild: bool = False) -> Tuple[str, Optional[float]]:
    """The directory holding `original`'s sidecar index of `kind` over INDEX_COLUMNS, kept apart
    with --output so that other queries read the file as generated (tamis finds it through
    index_dir; peers read the same file without it). Built when missing, stale or `rebuild`;
    then also the build's wall time in seconds."""
    idx = os.path.join(os.path.dirname(original), f"sidecar-{kind}")
    sidecar = sidecar_in(idx, original)
    if not rebuild and sidecar is not None \
            and os.path.getmtime(sidecar) >= os.path.getmtime(original):
        return idx, None
    os.makedirs(idx, exist_ok=True)
    fpp = ["--fpp", str(INDEX_FPP)] if kind == "page-bloom" else []
    start = time.perf_counter()
    subprocess.run([cli, "index", original, "--columns", ",".join(INDEX_COLUMNS), "--kind", kind,
                    *fpp, "--output", idx], check=True, stdout=subprocess.DEVNULL)
    return idx, time.perf_counter() - start


def tpch_queries(data_dir: str, args) -> List[Query]:
    from suites import tpch_lineitem

    original = tpch_lineitem(data_dir, args)
    out = [Query("l_partkey = 100000, original", original, col_cmp("l_partkey", "=", 100000), None)]
    for key, (label, _, _) in REWRITES.items():
        path, _ = rewrite(original, key, args.tamis_cli)
        out.append(Query(f"l_partkey = 100000, {label}", path, col_cmp("l_partkey", "=", 100000),
                         None))
    keys = [100000, 1, 77777, 150001, 199999]
    for kind in INDEX_KINDS:
        idx, _ = sidecar_dir(original, kind, args.tamis_cli)
        opts = {"index_dir": idx}
        out.append(Query(f"l_partkey = 100000, original + {kind} sidecar", original,
                         col_cmp("l_partkey", "=", 100000), None, tamis_options=opts))
        out.append(Query(f"l_partkey IN (5 keys), original + {kind} sidecar", original,
                         isin("l_partkey", keys), None, tamis_options=opts))
    out.append(Query("l_partkey IN (5 keys), original", original, isin("l_partkey", keys), None))
    return out


# ---- paper 002 -------------------------------------------------------------------------------------


def _columns(values: np.ndarray) -> Dict[str, pa.Array]:
    """The five columns for the (even) integers `values`; strings keep numeric order."""
    filler = "x" * 114
    return {
        "int32": pa.array(values.astype(np.int32)),
        "int64": pa.array(values.astype(np.int64) * 1_000_003),
        "float": pa.array(values.astype(np.float32)),
        "double": pa.array(values.astype(np.float64) * 0.5),
        "string": pa.array([f"{v:010d}{filler}" for v in values.tolist()]),
    }


def _literal(col: str, v: int) -> str:
    """SQL literal for the logical value `v` (an integer before the column's mapping)."""
    if col == "int32":
        return str(v)
    if col == "int64":
        return str(v * 1_000_003)
    if col == "float":
        return repr(float(np.float32(v)))
    if col == "double":
        return repr(v * 0.5)
    return "'" + f"{v:010d}" + "x" * 114 + "'"


def _files(data_dir: str, rows: int, fpp: float, tamis, orders=("sorted", "unsorted")) -> Dict[str, dict]:
    """{'sorted'|'unsorted': {'path', 'report', 'raw'}}: the raw file is written once (its name
    carries the row count), the optimized one each time (its report is part of the results)."""
    out = {}
    values = np.arange(rows, dtype=np.int64) * 2
    for order in orders:
        raw = os.path.join(data_dir, f"lookup-{order}-{rows}-raw.parquet")
        if not os.path.exists(raw):
            v = values.copy()
            if order == "unsorted":
                np.random.default_rng(SEED).shuffle(v)
            tmp = raw + ".tmp"
            pq.write_table(pa.table(_columns(v)), tmp, use_dictionary=False, compression="none",
                           row_group_size=rows)
            os.replace(tmp, raw)
        path = os.path.join(data_dir, f"lookup-{order}-{rows}-fpp{fpp:g}.parquet")
        report = tamis.optimize(
            [raw], path, bloom_filters=[f"{c}:{fpp}" for c in TYPES], page_bytes=PAGE_BYTES,
            page_rows=rows, row_group_rows=rows, compression="uncompressed", dictionary=False,
        )
        out[order] = {"path": path, "report": report, "raw": raw}
    return out


def _probes(rows: int, n: int, rnd: random.Random) -> Dict[str, List[int]]:
    top = 2 * (rows - 1)
    return {
        "present": [2 * rnd.randrange(rows) for _ in range(n)],
        "absent, out of range": [top + 2 + 2 * rnd.randrange(rows) if i % 2 else -2 - 2 * rnd.randrange(rows)
                                 for i in range(n)],
        "absent, in a gap": [2 * rnd.randrange(rows - 1) + 1 for _ in range(n)],
    }


def _time(tamis, path: str, where: str, disabled: List[str]) -> float:
    start = time.perf_counter()
    t = tamis.scan(path, where=where, threads=1, disable_pruning=disabled)
    ms = (time.perf_counter() - start) * 1e3
    return ms, t.num_rows


def _stats(ms: List[float]) -> Dict[str, float]:
    s = sorted(ms)
    return {"mean": statistics.fmean(s), "median": statistics.median(s),
            "p95": s[min(len(s) - 1, int(round(0.95 * (len(s) - 1))))]}


def _latency(tamis, files, rows: int, lookups: int) -> List[str]:
    rnd = random.Random(SEED)
    lines = [f"Lookups: `SELECT * WHERE col = v`, {lookups} per kind, column and mode; "
             "ms per lookup; speed-up = mean(none) / mean(mode).", ""]
    head = ["file", "type", "lookup", "rows/lookup"]
    for m in MODES:
        head += [f"{m} mean", f"{m} median", f"{m} p95"]
    head += [f"speed-up {m}" for m in list(MODES)[1:]]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    summary: Dict[tuple, List[float]] = {}
    for order, f in files.items():
        for col in TYPES:
            for kind, values in _probes(rows, lookups, rnd).items():
                times = {m: [] for m in MODES}
                matched = set()
                for v in values:
                    where = f"{col} = {_literal(col, v)}"
                    for m, disabled in MODES.items():  # modes interleaved
                        ms, n = _time(tamis, f["path"], where, disabled)
                        times[m].append(ms)
                        matched.add(n)
                if kind != "present" and matched != {0}:
                    raise SystemExit(f"lookup: absent values matched rows on {col}: {matched}")
                if kind == "present" and matched != {1}:
                    raise SystemExit(f"lookup: present values matched {matched} rows on {col}")
                st = {m: _stats(t) for m, t in times.items()}
                cells = [order, col, kind, str(min(matched))]
                for m in MODES:
                    cells += [f"{st[m]['mean']:.2f}", f"{st[m]['median']:.2f}", f"{st[m]['p95']:.2f}"]
                for m in list(MODES)[1:]:
                    ratio = st["none"]["mean"] / st[m]["mean"]
                    cells.append(f"{ratio:.1f}x")
                    summary.setdefault((order, kind, m), []).append(ratio)
                lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Mean of the per-type speed-ups over \"none\" (paper 002, Table 10's method):", ""]
    lines += ["| file | lookup | " + " | ".join(list(MODES)[1:]) + " |", "|---|---|---|---|---|"]
    for order in files:
        for kind in ("present", "absent, out of range", "absent, in a gap"):
            cells = [order, kind] + [f"{statistics.fmean(summary[(order, kind, m)]):.1f}x"
                                     for m in list(MODES)[1:]]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def _sizes(files, rows: int) -> List[str]:
    lines = ["File size per structure (fpp 0.001, "
             f"{rows} distinct values per column): page index = ColumnIndex + OffsetIndex; "
             "Bloom \"theory\" = -8·ndv / ln(1 - fpp^(1/8)) bits, \"written\" includes the "
             "header; bitsets are powers of two.", "",
             "| file | column | data | page index | page index % | Bloom written | Bloom theory | "
             "written / theory | bits per value | expected fpp |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for order, f in files.items():
        r = f["report"]
        total = r["bytes_after"]
        for c in r["columns"]:
            b = c["bloom"]
            lines.append("| " + " | ".join([
                order, c["name"], f"{c['bytes_after'] / 2**20:.2f} MiB",
                f"{c['page_index_bytes'] / 1024:.1f} KiB",
                f"{100 * c['page_index_bytes'] / total:.3f}%",
                f"{b['bytes'] / 2**20:.3f} MiB", f"{b['theoretical_bytes'] / 2**20:.3f} MiB",
                f"{b['bytes'] / b['theoretical_bytes']:.2f}",
                f"{8 * b['bytes'] / max(1, b['max_ndv']):.1f}", f"{b['expected_fpp']:.5f}",
            ]) + " |")
        blooms = sum(c["bloom"]["bytes"] for c in r["columns"])
        index = sum(c["page_index_bytes"] for c in r["columns"])
        lines.append(f"| {order} | **file** | {total / 2**20:.1f} MiB total | {index / 1024:.1f} KiB | "
                     f"{100 * index / total:.3f}% | {blooms / 2**20:.2f} MiB "
                     f"({100 * blooms / total:.1f}% of the file) | | | | |")
    return lines


def _fpr(tamis, data_dir: str, rows: int, probes: int) -> List[str]:
    """Measured false-positive rate: absent in-gap values a Bloom filter does not reject, with the
    filter as the only pruning structure (explain's row_groups_pruned_bloom: 1 = rejected)."""
    rnd = random.Random(SEED + 1)
    lines = ["Measured false-positive rate (unsorted file, absent in-gap values, "
             f"{probes} per column and fpp; Bloom filter the only pruning structure):", "",
             "| fpp | Bloom bytes per column | bits per value | expected fpp | " +
             " | ".join(f"measured {c}" for c in TYPES) + " | measured mean |",
             "|---|---|---|---|" + "---|" * (len(TYPES) + 1)]
    for fpp in FPPS:
        f = _files(data_dir, rows, fpp, tamis, orders=("unsorted",))["unsorted"]
        cols = {c["name"]: c["bloom"] for c in f["report"]["columns"]}
        rates = []
        for col in TYPES:
            false_pos = 0
            for _ in range(probes):
                v = 2 * rnd.randrange(rows - 1) + 1
                m = tamis.explain(f["path"], where=f"{col} = {_literal(col, v)}", columns=[col],
                                  threads=1, disable_pruning=["statistics", "page_index"])
                if m["rows_selected"]:
                    raise SystemExit(f"lookup: absent value {v} found in {col}")
                false_pos += m["row_groups_pruned_bloom"] == 0
            rates.append(false_pos / probes)
        b = cols["int32"]
        lines.append("| " + " | ".join([
            f"{fpp:g}", f"{b['bytes'] / 2**20:.3f} MiB", f"{8 * b['bytes'] / max(1, b['max_ndv']):.1f}",
            f"{b['expected_fpp']:.4f}"] + [f"{r:.4f}" for r in rates] + [f"{statistics.fmean(rates):.4f}"]) + " |")
        if fpp != 0.001:
            os.remove(f["path"])
    return lines


def paper_report(data_dir: str, args) -> str:
    import tamis

    rows = args.rows or 1_000_000
    lookups = 20 if args.smoke else 200
    probes = 50 if args.smoke else 2000
    files = _files(data_dir, rows, 0.001, tamis)
    parts = [f"**Paper 002 reproduction**: {rows} rows, one row group, PLAIN, uncompressed, "
             f"{PAGE_BYTES // 1024} KiB pages, Bloom filters at fpp 0.001 on every column; "
             "tamis, 1 thread, warm cache, modes interleaved. Command: "
             f"`python bench/run.py --suite lookup{' --rows ' + str(args.rows) if args.rows else ''}"
             " --update-benchmarks`.", ""]
    parts += _latency(tamis, files, rows, lookups) + [""]
    parts += _sizes(files, rows) + [""]
    parts += _fpr(tamis, data_dir, rows, probes) + [""]
    return "\n".join(parts)


# ---- TPC-H sidecar indexes (issue 17) --------------------------------------------------------------

# tamis modes: name -> (file key, sidecar kind or None). Each reads through its own Dataset.
TAMIS_MODES = {
    "none": ("original", None),
    "rg-bloom": ("bloom", None),
    "page-bloom": ("original", "page-bloom"),
    "rows": ("original", "rows"),
    "sorted": ("sorted", None),
}
PEERS = ("duckdb", "polars", "datafusion-pushdown")
PEER_FILES = ("original", "bloom", "sorted")
FORMS = ("*", "count")
# Per (column, lookup kind, form), a runner does every key (tamis; at most PEER_KEYS for a peer)
# unless it has spent its budget on this cell, and then at least MIN_KEYS: full-scan modes take
# 0.1-2 s per lookup here, the indexed ones milliseconds.
PEER_KEYS = 20
MIN_KEYS = 3
BUDGET_S = {"tamis": 2.5, "peer": 1.5}
EXPLAIN_KEYS = 5  # the first keys a tamis mode timed in a cell, run again through explain (bytes)
NO_PRUNING_BUT_SIDECAR = ["statistics", "page_index", "bloom_filters"]


def puffin_footer(path: str) -> dict:
    """The JSON footer of a Puffin file (docs/SIDECAR.md): ... footer, i32 size, flags, "PFA1"."""
    with open(path, "rb") as f:
        f.seek(-12, os.SEEK_END)
        tail = f.read(12)
        if tail[8:] != b"PFA1":
            raise ValueError(f"{path}: not a Puffin file")
        size = int.from_bytes(tail[:4], "little", signed=True)
        f.seek(-12 - size, os.SEEK_END)
        return json.loads(f.read(size))


def page_first_rows(path: str, column: str) -> Dict[int, np.ndarray]:
    """{row group: first row of each data page of `column`} from the page table at the head of
    each `tamis-page-bloom-v1` blob (the data file's OffsetIndex, as the index saw it)."""
    out = {}
    with open(path, "rb") as f:
        for blob in puffin_footer(path)["blobs"]:
            props = blob["properties"]
            if blob["type"] != "tamis-page-bloom-v1" or props["column"] != column:
                continue
            f.seek(blob["offset"])
            pages = int.from_bytes(f.read(4), "little")
            table = np.frombuffer(f.read(12 * pages), dtype=[("first", "<u8"), ("bytes", "<u4")])
            out[int(props["row-group"])] = table["first"].astype(np.int64)
    return out


class ColumnTruth:
    """One column of the original file in memory: the rows of each key, and the data page (the
    page filters' page, numbered across row groups) each row lies in — what a lookup must return
    and which pages a perfect filter would keep."""

    def __init__(self, path: str, column: str, firsts: Dict[int, np.ndarray]):
        meta = pq.ParquetFile(path).metadata
        self.values = pq.read_table(path, columns=[column]).column(column).to_numpy()
        self.keys, self.counts = np.unique(self.values, return_counts=True)
        rg_rows = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        page = np.empty(len(self.values), dtype=np.int32)
        self.page_rg: List[int] = []
        start = 0
        for rg, rows in enumerate(rg_rows):
            bounds = list(firsts[rg]) + [rows]
            for first, end in zip(bounds, bounds[1:]):
                page[start + first:start + end] = len(self.page_rg)
                self.page_rg.append(rg)
            start += rows
        self.page = page
        self.rg_pages = [self.page_rg.count(rg) for rg in range(len(rg_rows))]

    def count(self, keys) -> int:
        i = np.searchsorted(self.keys, keys)
        i = np.minimum(i, len(self.keys) - 1)
        return int(np.where(self.keys[i] == keys, self.counts[i], 0).sum())

    def pages_of(self, key: int) -> np.ndarray:
        return np.unique(self.page[self.values == key])


def _tamis_runner(tamis, path: str, index_dir: Optional[str]) -> Tuple[Callable, Callable]:
    """(run, explain) for lookups through one Dataset kept open (footers, page indexes, Bloom
    filters and the sidecar cached, as repeated lookups are meant to run); the count form
    projects no column, so a rows index answers it without reading the data."""
    ds = tamis.Dataset(path)

    def run(p, count: bool) -> int:
        return ds.scan(where=p.sql(), columns=[] if count else None, threads=1,
                       index_dir=index_dir).num_rows

    def explain(p, count: bool, **options) -> dict:
        return ds.explain(where=p.sql(), columns=[] if count else None, threads=1,
                          index_dir=index_dir, **options)

    return run, explain


def _peer_runners(files: Dict[str, str]) -> Dict[str, Tuple[str, Callable]]:
    """{"engine (file)": (file key, run)}: each engine set up once, 1 thread, kept open across
    lookups (DuckDB with its Parquet metadata cache, DataFusion with the tables registered once
    and filter pushdown, Polars with one lazy frame per file)."""
    from engines import DataFusionPushdown, DuckDB, Polars

    duck = DuckDB(1).con
    duck.execute("SET parquet_metadata_cache = true")
    pl = Polars(1).pl  # raises unless Polars runs one thread (POLARS_MAX_THREADS, see run.py)
    ctx = DataFusionPushdown(1).ctx
    out = {}
    for key in PEER_FILES:
        path = files[key]
        table = f"lineitem_{key}"
        ctx.register_parquet(table, path)
        frame = pl.scan_parquet(path)

        def duckdb_run(p, count, path=path):
            sql = f"SELECT {'count(*)' if count else '*'} FROM read_parquet('{path}') WHERE {p.sql()}"
            return duck.sql(sql).fetchall()[0][0] if count else duck.sql(sql).to_arrow_table().num_rows

        def polars_run(p, count, frame=frame):
            lf = frame.filter(p.polars())
            return lf.select(pl.len()).collect().item() if count else lf.collect().to_arrow().num_rows

        def datafusion_run(p, count, table=table):
            sql = f"SELECT {'count(*)' if count else '*'} FROM {table} WHERE {p.sql()}"
            t = ctx.sql(sql).to_arrow_table()
            return t.column(0)[0].as_py() if count else t.num_rows

        out[f"duckdb ({key})"] = (key, duckdb_run)
        out[f"polars ({key})"] = (key, polars_run)
        out[f"datafusion-pushdown ({key})"] = (key, datafusion_run)
    return out


def _lookups(truth: Dict[str, ColumnTruth], n: int, lists: int) -> List[tuple]:
    """[(column, kind, predicates, expected rows)]: `n` present keys drawn from the column's
    values, `n` absent ones outside its range (half above, half below), and `lists` IN lists of
    5 and of 50 present keys."""
    rnd = random.Random(SEED + 17)
    out = []
    for col, t in truth.items():
        keys = t.keys.tolist()
        lo, hi = keys[0], keys[-1]
        present = [rnd.choice(keys) for _ in range(n)]
        absent = [hi + 1 + rnd.randrange(hi) if i % 2 else lo - 1 - rnd.randrange(hi) for i in range(n)]
        out.append((col, "present", [col_cmp(col, "=", v) for v in present], [t.count([v]) for v in present]))
        out.append((col, "absent", [col_cmp(col, "=", v) for v in absent], [0] * n))
        for size in (5, 50):
            ins = [rnd.sample(keys, size) for _ in range(lists)]
            out.append((col, f"IN ({size})", [isin(col, v) for v in ins], [t.count(v) for v in ins]))
    return out


def _measure(runners: Dict[str, Callable], preds, want: List[int], count: bool,
             caps: Dict[str, int], budgets: Dict[str, float], what: str,
             warm_up: bool) -> Dict[str, List[float]]:
    """ms per lookup per runner, runners interleaved per key (the order rotating), after one
    untimed lookup each if `warm_up` (a column's first cell: metadata and page cache); every row
    count checked against `want`."""
    names = list(runners)

    def check(name, got, i):
        if got != want[i]:
            raise SystemExit(f"lookup: {name} returned {got} rows for {preds[i].sql()} ({what}); "
                             f"the data holds {want[i]}")

    for name in names if warm_up else []:
        check(name, runners[name](preds[0], count), 0)
    times = {name: [] for name in names}
    spent = dict.fromkeys(names, 0.0)
    for i, p in enumerate(preds):
        for name in names[i % len(names):] + names[:i % len(names)]:
            done = len(times[name])
            if done >= caps[name] or (done >= MIN_KEYS and spent[name] >= budgets[name]):
                continue
            start = time.perf_counter()
            got = runners[name](p, count)
            ms = (time.perf_counter() - start) * 1e3
            check(name, got, i)
            times[name].append(ms)
            spent[name] += ms / 1e3
    return times


def _page_fpr(explain: Callable, t: ColumnTruth, preds, col: str) -> dict:
    """Page filters' false positives over present keys: with the sidecar the only pruning
    structure, a page the filters keep (pages_total - pages_pruned_index of the row groups they
    were probed in) that holds no row of the key. Row groups without the key may be pruned by
    their dictionary first (it cannot be turned off); a key whose probed row groups cannot be
    told from the counts is left out."""
    fp = negatives = kept = holding = skipped = 0
    for p in preds:
        key = p.args[1]
        pages = t.pages_of(key)
        rgs = {t.page_rg[i] for i in pages}
        e = explain(p, True, disable_pruning=NO_PRUNING_BUT_SIDECAR)
        if e["row_groups_index_stale"] or e["rows_selected"] != t.count([key]):
            raise SystemExit(f"lookup: page-bloom sidecar stale or wrong rows for {col} = {key}")
        dropped = e["row_groups_pruned_dictionary"]
        if dropped == 0:
            probed = range(len(t.rg_pages))
        elif dropped == len(t.rg_pages) - len(rgs):
            probed = rgs
        else:
            skipped += 1
            continue
        total = sum(t.rg_pages[rg] for rg in probed)
        k = total - e["pages_pruned_index"]
        if k < len(pages):
            raise SystemExit(f"lookup: page filters of {col} dropped a page holding {key}")
        fp += k - len(pages)
        negatives += total - len(pages)
        kept += k
        holding += len(pages)
    n = len(preds) - skipped
    return {"keys": n, "skipped": skipped, "fp": fp, "negatives": negatives,
            "rate": fp / negatives if negatives else None,
            "kept": kept / max(1, n), "holding": holding / max(1, n)}


def _row(cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _x(ratio: Optional[float]) -> str:
    return "" if ratio is None else f"{ratio:.1f}x"


def sidecar_report(data_dir: str, args) -> str:
    """Point lookups on TPC-H lineitem as generated (unsorted l_partkey, l_suppkey): no index,
    row-group Bloom filters, the page-bloom and rows sidecars, the sorted rewrite, and the peers,
    in the harness's main process (1 thread, warm cache), against issue 17's targets."""
    import tamis

    from suites import tpch_lineitem

    cli = args.tamis_cli
    original = tpch_lineitem(data_dir, args)
    files = {"original": original}
    records = {}
    for key in REWRITES:
        files[key], records[key] = rewrite(original, key, cli)
    sidecars, build_s = {}, {}
    for kind in INDEX_KINDS:
        sidecars[kind], build_s[kind] = sidecar_dir(original, kind, cli, rebuild=True)
    puffin = {k: sidecar_in(d, original) for k, d in sidecars.items()}
    truth = {c: ColumnTruth(original, c, page_first_rows(puffin["page-bloom"], c)) for c in INDEX_COLUMNS}

    n, lists = (20, 5) if args.smoke else (200, 20)
    tamis_runs, explains = {}, {}
    for mode, (key, kind) in TAMIS_MODES.items():
        tamis_runs[f"tamis {mode}"], explains[mode] = _tamis_runner(
            tamis, files[key], sidecars[kind] if kind else None)
    peers = _peer_runners(files)
    runners = dict(tamis_runs, **{name: run for name, (_, run) in peers.items()})
    caps = {name: (n if name in tamis_runs else PEER_KEYS) for name in runners}
    budgets = {name: BUDGET_S["tamis" if name in tamis_runs else "peer"] for name in runners}

    stats: Dict[tuple, dict] = {}
    fpr = {}
    for col, kind, preds, want in _lookups(truth, n, lists):
        for form in FORMS:
            count = form == "count"
            times = _measure(runners, preds, want, count, caps, budgets, f"{col} {kind}, {form}",
                             warm_up=kind == "present" and form == FORMS[0])
            for name, ms in times.items():
                stats[(col, kind, form, name)] = dict(_stats(ms), n=len(ms), rows=statistics.fmean(want))
            for mode, explain in explains.items():
                done = stats[(col, kind, form, f"tamis {mode}")]["n"]
                got = [explain(p, count) for p in preds[:min(done, EXPLAIN_KEYS)]]
                if mode == "none" and any(e["pages_pruned_index"] or e["conjuncts_decided_index"]
                                          or e["row_groups_pruned_index"] for e in got):
                    raise SystemExit(f"lookup: a sidecar beside {original} is used without index_dir")
                if any(e["row_groups_index_stale"] or e["row_groups_index_broken"] for e in got):
                    raise SystemExit(f"lookup: the {mode} sidecar of {original} is stale or broken")
                stats[(col, kind, form, f"tamis {mode}")]["bytes"] = statistics.fmean(
                    e["bytes_read"] for e in got)
        if kind == "present":
            fpr[col] = _page_fpr(explains["page-bloom"], truth[col], preds, col)

    data_bytes = os.path.getsize(original)
    all_present = all(len(t.keys) == t.keys[-1] - t.keys[0] + 1 for t in truth.values())
    lines = [f"**Sidecar indexes (issue 17)**: TPC-H SF{args.sf:g} lineitem as generated "
             f"({data_bytes / 2**20:.1f} MiB; l_partkey, l_suppkey unsorted), 1 thread, warm cache, "
             "in the harness's main process. Command: "
             f"`python bench/run.py --suite lookup --sf {args.sf:g} --update-benchmarks`.", ""]
    lines += _builds_md(files, records, puffin, build_s, data_bytes) + [""]
    lines += _latency_md(stats, runners, peers, n, lists, all_present) + [""]
    lines += _peers_md(stats, peers) + [""]
    lines += _page_fpr_md(fpr) + [""]
    lines += _targets_md(stats, fpr, puffin, build_s, records, data_bytes) + [""]
    if getattr(args, "results_dir", None):
        with open(os.path.join(args.results_dir, "lookup-sidecar.json"), "w") as f:
            json.dump({"stats": [dict(zip(("column", "kind", "form", "runner"), k), **v)
                                 for k, v in stats.items()],
                       "fpr": fpr, "index_build_s": build_s, "rewrites": records}, f, indent=1)
    return "\n".join(lines)


def _blob_bytes(path: str) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for blob in puffin_footer(path)["blobs"]:
        col = blob["properties"]["column"]
        out[col] = out.get(col, 0) + blob["length"]
    return out


def _builds_md(files, records, puffin, build_s, data_bytes) -> List[str]:
    lines = ["Builds and sizes. Index builds are timed in this run (`tamis index --columns "
             f"{','.join(INDEX_COLUMNS)} --kind KIND --output DIR`, one run each, wall time of the "
             "CLI); the rewrites' times are those recorded when the file was last made "
             "(`<file>.build.json` beside it; a file without the record is made again). "
             f"Page filters at fpp {INDEX_FPP:g}. % = of the original data file.", "",
             "| structure | build s | bytes | % of data | per column |", "|---|---|---|---|---|"]
    for kind in INDEX_KINDS:
        size = os.path.getsize(puffin[kind])
        cols = ", ".join(f"{c} {b / 2**20:.2f} MiB ({100 * b / data_bytes:.2f}%)"
                         for c, b in _blob_bytes(puffin[kind]).items())
        lines.append(_row([f"sidecar {kind}", f"{build_s[kind]:.2f}", f"{size / 2**20:.2f} MiB",
                           f"{100 * size / data_bytes:.2f}%", cols]))
    for key, (label, _, _) in REWRITES.items():
        size = os.path.getsize(files[key])
        lines.append(_row([f"optimize {label} (made {records[key]['built']})",
                           f"{records[key]['seconds']:.2f}", f"{size / 2**20:.2f} MiB",
                           f"{100 * size / data_bytes:.1f}% (the whole file)", ""]))
    return lines


def _best_peer(stats, col, kind, form, file_key, peers) -> Optional[Tuple[str, float]]:
    found = [(stats[(col, kind, form, name)]["mean"], name) for name, (key, _) in peers.items()
             if key == file_key and (col, kind, form, name) in stats]
    return min(found)[::-1] if found else None


def _latency_md(stats, runners, peers, n, lists, all_present) -> List[str]:
    absent = ("every value in the column's range is present, so absent keys lie outside it, "
              "where row-group statistics answer them in every mode" if all_present else
              "absent keys lie outside the column's range")
    lines = [f"tamis lookups: {n} present and {n} absent keys per column ({absent}), {lists} IN "
             "lists of 5 and of 50 present keys; `SELECT *` and `SELECT count(*)` (tamis: no column "
             "projected). Modes: none = original file; rg-bloom = `optimize --bloom-filter "
             "l_partkey`; page-bloom / rows = original file + sidecar (index_dir); sorted = "
             "`optimize --sort-by l_partkey --bloom-filter l_partkey`. Each mode reads through one "
             "`tamis.Dataset` kept open; modes and peers interleaved per key. A runner stops after "
             f"{BUDGET_S['tamis']:g} s on a row of this table (peers {BUDGET_S['peer']:g} s, at "
             f"most {PEER_KEYS} keys) once it has {MIN_KEYS} keys: n says how many it ran (the first n "
             "of the row's keys); one untimed lookup each before a column's first row. MiB read: "
             f"explain's bytes_read, mean over the first {EXPLAIN_KEYS} (at most n) keys. vs none = "
             "mean(none) / mean(mode); vs best peer = mean(best peer on the mode's file: original "
             "for none and the sidecars, the rewrite for rg-bloom and sorted) / mean(mode); "
             "bytes vs none = bytes(mode) / bytes(none); speed-ups > 1 mean the mode is faster. Row "
             "counts of every lookup checked against the data.", "",
             _row(["column", "lookup", "select", "rows/lookup", "mode", "n", "mean ms", "median ms",
                   "p95 ms", "MiB read", "vs none", "best peer", "vs best peer", "bytes vs none"]),
             "|" + "---|" * 14]
    keys = dict.fromkeys(k[:3] for k in stats)
    for col, kind, form in keys:
        none = stats[(col, kind, form, "tamis none")]
        for mode, (file_key, _) in TAMIS_MODES.items():
            s = stats[(col, kind, form, f"tamis {mode}")]
            best = _best_peer(stats, col, kind, form, file_key, peers)
            bytes_ratio = (f"1/{none['bytes'] / s['bytes']:.1f}" if s["bytes"] and mode != "none"
                           else "")
            lines.append(_row([
                col, kind, form, f"{s['rows']:.0f}", mode, s["n"], f"{s['mean']:.2f}",
                f"{s['median']:.2f}", f"{s['p95']:.2f}", f"{s['bytes'] / 2**20:.2f}",
                _x(none["mean"] / s["mean"]) if mode != "none" else "",
                best[0] if best else "", _x(best[1] / s["mean"]) if best else "", bytes_ratio]))
    return lines


def _peers_md(stats, peers) -> List[str]:
    lines = [f"Peers on the same lookups (at most {PEER_KEYS} keys each, 1 thread, kept open: DuckDB "
             "with parquet_metadata_cache, Polars one lazy frame per file, DataFusion with "
             "pushdown_filters and reorder_filters, tables registered once); peers read the "
             "original, bloom and sorted files and ignore tamis sidecars. ms per lookup.", ""]
    head = ["column", "lookup", "select", "file"]
    for e in PEERS:
        head += [f"{e} n", f"{e} mean", f"{e} median", f"{e} p95"]
    lines += [_row(head), "|" + "---|" * len(head)]
    for col, kind, form in dict.fromkeys(k[:3] for k in stats):
        for file_key in PEER_FILES:
            cells = [col, kind, form, file_key]
            for e in PEERS:
                s = stats[(col, kind, form, f"{e} ({file_key})")]
                cells += [s["n"], f"{s['mean']:.2f}", f"{s['median']:.2f}", f"{s['p95']:.2f}"]
            lines.append(_row(cells))
    return lines


def _page_fpr_md(fpr) -> List[str]:
    lines = [f"Measured false-positive rate of the page filters (target fpp {INDEX_FPP:g}), over the "
             "present keys: `SELECT count(*) WHERE col = key` with only the sidecar pruning "
             "(statistics, page index and row-group Bloom filters off); a page kept that holds no "
             "row of the key is a false positive; rate = false positives / pages not holding the "
             "key. True pages from the column's values and the page boundaries in the sidecar's "
             "page table (the file's OffsetIndex).", "",
             "| column | keys | pages kept / lookup | pages holding the key / lookup | negatives probed "
             "| false positives | measured rate | measured / target |", "|---|---|---|---|---|---|---|---|"]
    for col, f in fpr.items():
        rate = f["rate"]
        lines.append(_row([col, str(f["keys"]) + (f" ({f['skipped']} left out)" if f["skipped"] else ""),
                           f"{f['kept']:.1f}", f"{f['holding']:.1f}", f["negatives"], f["fp"],
                           "n/a" if rate is None else f"{rate:.4f}",
                           "n/a" if rate is None else _x(rate / INDEX_FPP)]))
    return lines


def _targets_md(stats, fpr, puffin, build_s, records, data_bytes) -> List[str]:
    """Issue 17's targets on unsorted lineitem, each met or not, for both query forms: `SELECT *`
    (every projected column's pages holding a match are read: bounded by the file's layout, not
    by the index) and `count(*)` (the key lookup itself)."""
    def mean(kind, name, form, col="l_partkey"):
        return stats[(col, kind, form, name)]["mean"]

    def best(kind, file_key, form, col="l_partkey"):
        return min(s["mean"] for (c, k, f, name), s in stats.items()
                   if (c, k, f) == (col, kind, form) and name.endswith(f"({file_key})"))

    def speedup(name, value, bound):
        return (name, f"≥ {bound:g}x", f"{value:.1f}x", value >= bound)

    rows = []
    for form in FORMS:
        none = stats[("l_partkey", "present", form, "tamis none")]
        for mode in ("page-bloom", "rows"):
            s = stats[("l_partkey", "present", form, f"tamis {mode}")]
            what = f"`{form}`, {mode}"
            rows.append(speedup(f"l_partkey = present, {what}: vs no index",
                                none["mean"] / s["mean"], 30))
            rows.append(speedup(f"l_partkey = present, {what}: vs best peer (original file)",
                                best("present", "original", form) / s["mean"], 10))
            ratio = s["bytes"] / none["bytes"]
            rows.append((f"l_partkey = present, {what}: bytes read vs no index", "≤ 1/30",
                         f"1/{1 / ratio:.1f}" if ratio else "0", ratio <= 1 / 30))
            rows.append(speedup(f"l_partkey IN (5), {what}: vs no index",
                                mean("IN (5)", "tamis none", form) / mean("IN (5)", f"tamis {mode}", form),
                                10))
            for col in INDEX_COLUMNS:
                ms = mean("absent", f"tamis {mode}", form, col)
                rows.append((f"{col} = absent, {what}: mean", "≤ 1 ms", f"{ms:.2f} ms", ms <= 1))
    none = stats[("l_partkey", "present", "*", "tamis none")]
    sorted_ = mean("present", "tamis sorted", "*")
    rows.append(speedup("l_partkey = present, `*`, sorted rewrite: vs original",
                        none["mean"] / sorted_, 30))
    ratio = best("present", "sorted", "*") / sorted_
    rows.append(("l_partkey = present, `*`, sorted rewrite: vs best peer on the sorted file", "> 1x",
                 f"{ratio:.2f}x", ratio > 1))
    blobs = _blob_bytes(puffin["page-bloom"])
    sizes = [("l_partkey", blobs["l_partkey"]),
             (" + ".join(INDEX_COLUMNS), os.path.getsize(puffin["page-bloom"]))]
    for what, size in sizes:
        pct = 100 * size / data_bytes
        rows.append((f"page-bloom sidecar size at fpp {INDEX_FPP:g}, {what}", "≤ 5% of the data file",
                     f"{pct:.2f}%", pct <= 5))
    for kind in INDEX_KINDS:
        ratio = build_s[kind] / records["bloom"]["seconds"]
        rows.append((f"{kind} index build / `optimize --bloom-filter l_partkey`", "≤ 1",
                     f"{ratio:.2f} ({build_s[kind]:.2f} s / {records['bloom']['seconds']:.2f} s)",
                     ratio <= 1))
    for col, f in fpr.items():
        if f["rate"] is not None:
            rows.append((f"page filters' false-positive rate, {col}", f"≤ 1.5 × {INDEX_FPP:g}",
                         f"{f['rate']:.4f}", f["rate"] <= 1.5 * INDEX_FPP))
    lines = ["Targets (issue 17) on unsorted lineitem (means of the tables above). `SELECT *` cannot "
             "meet the lookup targets on this file with any index: the matches of one key lie in "
             "about 30 different pages of every column, and a compressed page is read whole.",
             "", "| target | bound | measured | met |", "|---|---|---|---|"]
    lines += [_row([name, bound, value, "yes" if met else "**no**"]) for name, bound, value, met in rows]
    return lines
