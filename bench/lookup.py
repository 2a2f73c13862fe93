"""Suite `lookup`: paper 002's page-index + SBBF experiments, scaled, and a TPC-H point lookup.

Two parts:

* ``tpch_queries`` (run by the normal harness, every engine): ``l_partkey = 100000`` on SF1
  lineitem as generated, after ``tamis optimize --bloom-filter l_partkey``, and after
  ``tamis optimize --sort-by l_partkey --bloom-filter l_partkey``.
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

import os
import random
import statistics
import subprocess
import time
from typing import Dict, List

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


def tpch_queries(data_dir: str, args) -> List[Query]:
    from suites import tpch_lineitem

    original = tpch_lineitem(data_dir, args)
    folder = os.path.dirname(original)
    variants = [
        ("original", original, None),
        ("--bloom-filter l_partkey", os.path.join(folder, "lineitem-bloom-partkey.parquet"),
         ["--bloom-filter", "l_partkey"]),
        ("--sort-by l_partkey --bloom-filter l_partkey",
         os.path.join(folder, "lineitem-sorted-partkey.parquet"),
         ["--sort-by", "l_partkey", "--bloom-filter", "l_partkey"]),
    ]
    out = []
    for label, path, flags in variants:
        if flags and not os.path.exists(path):
            subprocess.run([args.tamis_cli, "optimize", original, "--output", path, *flags],
                           check=True)
        out.append(Query(f"l_partkey = 100000, {label}", path, col_cmp("l_partkey", "=", 100000),
                         None))
    # Sidecar indexes of the original file (issue 17), kept apart with --output so the other
    # queries read the file as generated; tamis finds them through index_dir, peers read the
    # same file without them.
    keys = [100000, 1, 77777, 150001, 199999]
    for kind in ("page-bloom", "rows"):
        idx = os.path.join(folder, f"sidecar-{kind}")
        sidecar = os.path.join(idx, os.path.basename(original) + ".tamis.puffin")
        if not os.path.exists(sidecar) or os.path.getmtime(sidecar) < os.path.getmtime(original):
            os.makedirs(idx, exist_ok=True)
            subprocess.run([args.tamis_cli, "index", original, "--columns", "l_partkey,l_suppkey",
                            "--kind", kind, "--output", idx], check=True, stdout=subprocess.DEVNULL)
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
