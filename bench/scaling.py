#!/usr/bin/env python3
"""Scaling report: how each engine's time on each query falls from 1 thread to many, from the
results that `bench/tpch_sql.py` (the 22 TPC-H queries) and `bench/run.py --suite tpch` (the
`lineitem` scans) write.

    python bench/tpch_sql.py --data-dir DIR/tpch-sf10 --threads 1,2,4,8,16 --engines tamis,tamis-no-rf,duckdb
    python bench/run.py --suite tpch --data-dir DIR --sf 10 --threads 1,2,4,8,16 --engines tamis,duckdb --cache warm
    python bench/scaling.py bench/results/tpch-sql.json bench/results/tpch.json

For every query and engine: the median time at each thread count, the scaling factor (time at
the fewest threads over time at the most), and tamis against DuckDB at each count (same run).
Also `tamis-no-rf` against `tamis` (runtime filters off over on) where both ran. Geometric
means close each table.
"""

from __future__ import annotations

import json
import math
import sys
from collections import defaultdict
from typing import Dict, List, Tuple


def load(path: str) -> List[dict]:
    """Rows of (suite, query, engine, threads, seconds) from either harness's JSON."""
    with open(path) as f:
        data = json.load(f)
    rows = data["results"] if isinstance(data, dict) else data
    out = []
    for r in rows:
        if r.get("engine") == "floor" or r.get("cache", "warm") != "warm":
            continue
        if "median_s" in r:
            t = r["median_s"]
        elif r.get("median_ms") is not None:
            t = r["median_ms"] / 1000
        else:
            t = None
        if t is not None and r.get("ok", True) is not False:
            out.append(dict(suite=r["suite"], query=r["query"], engine=r["engine"], threads=r["threads"], s=t))
    return out


def geomean(xs: List[float]) -> float:
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def report(rows: List[dict]) -> str:
    by: Dict[Tuple[str, str, str], Dict[int, float]] = defaultdict(dict)
    for r in rows:
        by[(r["suite"], r["query"], r["engine"])][r["threads"]] = r["s"]
    out = []
    for suite in sorted({k[0] for k in by}):
        engines = sorted({k[2] for k in by if k[0] == suite}, key=lambda e: (e != "tamis", e))
        queries = sorted({k[1] for k in by if k[0] == suite})
        counts = sorted({t for k, v in by.items() if k[0] == suite for t in v})
        head = ["query", "engine"] + [f"{t} t" for t in counts] + [f"scaling {counts[0]}→{counts[-1]}"]
        if "duckdb" in engines:
            head += [f"vs DuckDB {t} t" for t in counts]
        lines = [f"### `{suite}`", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        scaling: Dict[str, List[float]] = defaultdict(list)
        vs_duck: Dict[Tuple[str, int], List[float]] = defaultdict(list)
        for q in queries:
            for e in engines:
                times = by.get((suite, q, e))
                if not times:
                    continue
                cells = [q, e] + [f"{times[t]:.3f}" if t in times else "–" for t in counts]
                lo, hi = counts[0], counts[-1]
                if lo in times and hi in times:
                    cells.append(f"{times[lo] / times[hi]:.1f}x")
                    scaling[e].append(times[lo] / times[hi])
                else:
                    cells.append("–")
                duck = by.get((suite, q, "duckdb"), {})
                if "duckdb" in engines:
                    for t in counts:
                        if e != "duckdb" and t in times and t in duck:
                            ratio = times[t] / duck[t]
                            vs_duck[(e, t)].append(ratio)
                            cells.append(f"{ratio:.2f}x")
                        else:
                            cells.append("–")
                lines.append("| " + " | ".join(cells) + " |")
        for e in engines:
            cells = ["geo. mean", e] + [""] * len(counts) + [f"{geomean(scaling[e]):.1f}x"]
            if "duckdb" in engines:
                cells += [f"{geomean(vs_duck[(e, t)]):.2f}x" if vs_duck[(e, t)] else "–" for t in counts]
            lines.append("| " + " | ".join(cells) + " |")
        if "tamis" in engines and "tamis-no-rf" in engines:
            lines += ["", "Runtime filters on over off (`tamis` / `tamis-no-rf`; ≤ 1.00x: on never costs):", "",
                      "| query | " + " | ".join(f"{t} t" for t in counts) + " |", "|---|" + "---|" * len(counts)]
            for q in queries:
                on, off = by.get((suite, q, "tamis"), {}), by.get((suite, q, "tamis-no-rf"), {})
                lines.append(f"| {q} | " + " | ".join(
                    f"{on[t] / off[t]:.2f}x" if t in on and t in off else "–" for t in counts) + " |")
        out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"


def main(argv: List[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    rows = [r for path in argv for r in load(path)]
    if not rows:
        print("scaling: no timed results in " + ", ".join(argv), file=sys.stderr)
        return 1
    print(report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
